"""Conformance cases, area ``memory``: graph memory and stream-ordered memory.

Graph memory beyond the node basics of :mod:`.nodes` (``graph.mem_alloc.*``): the
device's graph-memory attributes (used / reserved, current / high watermark) after
launch, after the executable graph is destroyed and after trim, resetting the
watermarks; the documented rules of graph allocations (an executable graph that leaves
memory allocated cannot be relaunched until it is freed, unless instantiated with
auto-free-on-launch; memory may be freed outside the graph, by another graph, or after
the executable graph is gone; one executable graph at a time for a graph with memory
nodes; memory nodes refused by clone, child graphs and the exec setters); and memory
pools with stream-ordered allocation (``MemPool``, ``malloc_async`` / ``free_async``,
pool attributes and trim).

Graph allocations a case leaves allocated are freed in ``finally`` blocks, so a failing
case does not keep device memory.  Conventions: see :mod:`.graph`.
"""

from __future__ import annotations

from typing import Any

from pygraphrt import errors
from pygraphrt.enums import GraphMemAttr, MemPoolAttr, NodeType

from .._case import CaseContext, case

N = 4096
BIG = 8 << 20  # graph allocations whose effect on the device attributes is measured

_RT = "CUDA Runtime API 13.0"
_GM = f"{_RT}, Graph Management"
ALLOC = f"{_GM}, cudaGraphAddMemAllocNode: "
FREE = f"{_GM}, cudaGraphAddMemFreeNode: "
INSTANTIATE = f"{_GM}, cudaGraphInstantiateWithFlags: "
LAUNCH = f"{_GM}, cudaGraphLaunch: "
CLONE = f"{_GM}, cudaGraphClone: "
ADD_CHILD = f"{_GM}, cudaGraphAddChildGraphNode: "
SET_NODE = f"{_GM}, cudaGraphExecNodeSetParams: "
ENABLE = f"{_GM}, cudaGraphNodeSetEnabled: "
UPDATE = f"{_GM}, cudaGraphExecUpdate: "
GET_ATTR = f"{_GM}, cudaDeviceGetGraphMemAttribute: "
SET_ATTR = f"{_GM}, cudaDeviceSetGraphMemAttribute: "
TRIM = f"{_GM}, cudaDeviceGraphMemTrim: "
PG = "CUDA Programming Guide, CUDA Graphs, Graph Memory Nodes: "
_SOMA = f"{_RT}, Stream Ordered Memory Allocator"
POOL_CREATE = f"{_SOMA}, cudaMemPoolCreate: "
POOL_GET = f"{_SOMA}, cudaMemPoolGetAttribute: "
POOL_SET = f"{_SOMA}, cudaMemPoolSetAttribute: "
POOL_TRIM = f"{_SOMA}, cudaMemPoolTrimTo: "
FROM_POOL = f"{_SOMA}, cudaMallocFromPoolAsync: "
FREE_ASYNC = f"{_SOMA}, cudaFreeAsync: "
DEFAULT_POOL = f"{_RT}, Device Management, cudaDeviceGetDefaultMemPool / cudaDeviceGetMemPool: "
PYGRAPHRT = "pygraphrt memory API: "
PYCHECK = PYGRAPHRT + "checked before any runtime call"


# ---------------------------------------------------------------------------- helpers
def _zeroed(t: CaseContext, size: int = N) -> Any:
    buf = t.malloc(size)
    buf.copy_from(bytes(size))
    return buf


def _alloc_graph(t: CaseContext, size: int, *, free: bool, value: int = 1) -> tuple[Any, Any]:
    """A graph: allocate ``size`` bytes, memset them to ``value``, and (``free``) free them."""
    g = t.graph()
    a = g.add_mem_alloc(size)
    m = a.memset(a.dptr, value, size)
    if free:
        m.mem_free(a)
    return g, a


def _attr(t: CaseContext, attr: GraphMemAttr) -> int:
    return int(t.rt.current_device().graph_mem_attribute(attr))


def _release(t: CaseContext, *execs: Any) -> None:
    """Close executable graphs, wait for the device and trim its graph memory."""
    for e in execs:
        e.close()
    dev = t.rt.current_device()
    dev.synchronize()
    dev.graph_mem_trim()


# ============================================================================ graph memory attributes
@case("memory.attributes.all_four", cite=GET_ATTR + "queries cudaGraphMemAttrUsedMemCurrent, UsedMemHigh, "
      "ReservedMemCurrent and ReservedMemHigh (bytes)", apis=("DeviceGetGraphMemAttribute",),
      requires=("graph_memory_nodes",), expect=(4, True))
def _(t: CaseContext) -> Any:
    """All four graph-memory attributes read as non-negative byte counts."""
    attrs = t.rt.current_device().graph_mem_attributes()
    return len(attrs), all(isinstance(v, int) and v >= 0 for v in attrs.values())


@case("memory.attributes.high_not_below_current", cite=GET_ATTR + "UsedMemHigh / ReservedMemHigh are the high "
      "watermarks of UsedMemCurrent / ReservedMemCurrent since the last reset", apis=("DeviceGetGraphMemAttribute",
                                                                                      "GraphLaunch"),
      requires=("graph_memory_nodes",), expect=(True, True))
def _(t: CaseContext) -> Any:
    """After a launch with graph memory, each high watermark is at least its current value."""
    g, _a = _alloc_graph(t, BIG, free=True)
    exe = t.instantiate(g)
    s = t.stream()
    exe.launch(s)
    s.synchronize()
    a = t.rt.current_device().graph_mem_attributes()
    return (a[GraphMemAttr.USED_MEM_HIGH] >= a[GraphMemAttr.USED_MEM_CURRENT],
            a[GraphMemAttr.RESERVED_MEM_HIGH] >= a[GraphMemAttr.RESERVED_MEM_CURRENT])


@case("memory.attributes.used_after_launch", cite=GET_ATTR + "cudaGraphMemAttrUsedMemCurrent: amount of memory "
      "currently associated with graphs; " + PG + "the executable graph keeps the physical memory of its "
      "allocations for its next launch", apis=("DeviceGetGraphMemAttribute", "GraphLaunch"),
      requires=("graph_memory_nodes",), expect=(True, True))
def _(t: CaseContext) -> Any:
    """A launched graph's allocation counts as used and reserved graph memory."""
    dev = t.rt.current_device()
    dev.synchronize()
    dev.graph_mem_trim()  # release what earlier cases' graphs left cached, so used0 is this case's start
    used0 = dev.graph_mem_attribute(GraphMemAttr.USED_MEM_CURRENT)
    g, _a = _alloc_graph(t, BIG, free=True)
    exe = t.instantiate(g)
    s = t.stream()
    exe.launch(s)
    s.synchronize()
    used = dev.graph_mem_attribute(GraphMemAttr.USED_MEM_CURRENT)
    reserved = dev.graph_mem_attribute(GraphMemAttr.RESERVED_MEM_CURRENT)
    t.note(f"used {used0} -> {used}, reserved {reserved}")
    # not used - used0 >= BIG: the runtime keeps (and reuses) graph memory earlier graphs had
    # until it is trimmed, so memory already counted can serve this graph (seen on CUDA 13.0)
    return used >= BIG, reserved >= BIG


@case("memory.attributes.destroy_and_trim_release", cite=TRIM + "frees unused memory that was cached on the "
      "device for use with graphs back to the OS (blocks not in use by a graph that is executing or scheduled "
      "to execute)", apis=("GraphExecDestroy", "DeviceGraphMemTrim", "DeviceGetGraphMemAttribute"),
      requires=("graph_memory_nodes",), expect=(True, True))
def _(t: CaseContext) -> Any:
    """Destroying the executable graph and trimming releases its used and reserved graph memory."""
    g, _a = _alloc_graph(t, BIG, free=True)
    exe = t.instantiate(g)
    s = t.stream()
    exe.launch(s)
    s.synchronize()
    used, reserved = _attr(t, GraphMemAttr.USED_MEM_CURRENT), _attr(t, GraphMemAttr.RESERVED_MEM_CURRENT)
    _release(t, exe)
    used2, reserved2 = _attr(t, GraphMemAttr.USED_MEM_CURRENT), _attr(t, GraphMemAttr.RESERVED_MEM_CURRENT)
    t.note(f"used {used} -> {used2}, reserved {reserved} -> {reserved2}")
    return used - used2 >= BIG, reserved - reserved2 >= BIG


@case("memory.attributes.reset_high_watermarks", cite=SET_ATTR + "cudaGraphMemAttrUsedMemHigh and "
      "ReservedMemHigh: high watermarks since the last time they were reset; they can only be reset to zero",
      apis=("DeviceSetGraphMemAttribute", "DeviceGetGraphMemAttribute"), requires=("graph_memory_nodes",),
      expect=(True, True))
def _(t: CaseContext) -> Any:
    """After the memory is released, a reset brings both watermarks down by the released amount."""
    dev = t.rt.current_device()
    g, _a = _alloc_graph(t, BIG, free=True)
    exe = t.instantiate(g)
    s = t.stream()
    exe.launch(s)
    s.synchronize()
    used_peak = dev.graph_mem_attribute(GraphMemAttr.USED_MEM_HIGH)
    reserved_peak = dev.graph_mem_attribute(GraphMemAttr.RESERVED_MEM_HIGH)
    _release(t, exe)
    dev.reset_graph_mem_high_watermarks()
    used_high = dev.graph_mem_attribute(GraphMemAttr.USED_MEM_HIGH)
    reserved_high = dev.graph_mem_attribute(GraphMemAttr.RESERVED_MEM_HIGH)
    t.note(f"used high {used_peak} -> {used_high}, reserved high {reserved_peak} -> {reserved_high}")
    return used_peak - used_high >= BIG, reserved_peak - reserved_high >= BIG


@case("memory.attributes.trim_without_graphs", cite=TRIM + "frees unused graph memory cached on the device "
      "(nothing to free is not an error)", apis=("DeviceGraphMemTrim",), requires=("graph_memory_nodes",),
      expect=None)
def _(t: CaseContext) -> Any:
    """Trimming when no graph holds memory succeeds."""
    return t.rt.current_device().graph_mem_trim()


@case("memory.attributes.set_current_refused", cite=SET_ATTR + "only cudaGraphMemAttrUsedMemHigh and "
      "cudaGraphMemAttrReservedMemHigh can be set; returns cudaErrorInvalidValue",
      apis=("DeviceSetGraphMemAttribute",), requires=("graph_memory_nodes",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Setting the current used amount is refused."""
    ops = t.backend.ops
    attr = ops.value(ops.graph_mem_attrs, GraphMemAttr.USED_MEM_CURRENT, "attr")
    zero = t.ffi.new("unsigned long long *", 0)
    t.call("DeviceSetGraphMemAttribute", t.rt.current_device().ordinal, attr, zero)


@case("memory.attributes.reset_to_nonzero_refused", cite=SET_ATTR + "high watermarks can only be reset to "
      "zero; returns cudaErrorInvalidValue", apis=("DeviceSetGraphMemAttribute",),
      requires=("graph_memory_nodes",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Setting a high watermark to a non-zero value is refused."""
    ops = t.backend.ops
    attr = ops.value(ops.graph_mem_attrs, GraphMemAttr.USED_MEM_HIGH, "attr")
    value = t.ffi.new("unsigned long long *", 1 << 20)
    t.call("DeviceSetGraphMemAttribute", t.rt.current_device().ordinal, attr, value)


@case("memory.attributes.unknown_attribute", cite=GET_ATTR + "attr - the attribute to get (a "
      "cudaGraphMemAttributeType); returns cudaErrorInvalidValue", apis=("DeviceGetGraphMemAttribute",),
      requires=("graph_memory_nodes",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """An attribute number that is no graph-memory attribute is refused."""
    out = t.ffi.new("unsigned long long *")
    t.call("DeviceGetGraphMemAttribute", t.rt.current_device().ordinal, 0x7777, out)


@case("memory.attributes.invalid_device", cite=GET_ATTR + "returns cudaErrorInvalidDevice",
      apis=("DeviceGetGraphMemAttribute",), requires=("graph_memory_nodes",), raises=errors.InvalidDevice)
def _(t: CaseContext) -> Any:
    """Graph-memory attributes of a device that does not exist are refused."""
    t.rt.Device(4096).graph_mem_attribute(GraphMemAttr.USED_MEM_CURRENT)


@case("memory.trim.invalid_device", cite=TRIM + "returns cudaErrorInvalidDevice", apis=("DeviceGraphMemTrim",),
      requires=("graph_memory_nodes",), raises=errors.InvalidDevice)
def _(t: CaseContext) -> Any:
    """Trimming a device that does not exist is refused."""
    t.rt.Device(4096).graph_mem_trim()


# ============================================================================ graph allocations: launch rules
@case("memory.relaunch.with_free_node", cite=FREE + "a free node frees the allocation (the executable graph "
      "leaves nothing allocated and can launch again)", apis=("GraphAddMemAllocNode", "GraphAddMemFreeNode",
                                                               "GraphLaunch"),
      requires=("graph_memory_nodes",), expect=3)
def _(t: CaseContext) -> Any:
    """A graph that frees what it allocates relaunches."""
    g, _a = _alloc_graph(t, N, free=True)
    exe = t.instantiate(g)
    s = t.stream()
    for _ in range(3):
        exe.launch(s)
    s.synchronize()
    return 3


@case("memory.relaunch.unfreed_refused", cite=LAUNCH + "if any allocations created by graphExec remain unfreed "
      "(from a previous launch) and graphExec was not instantiated with cudaGraphInstantiateFlagAutoFreeOnLaunch, "
      "the launch will fail with cudaErrorInvalidValue", apis=("GraphLaunch", "FreeAsync"),
      requires=("graph_memory_nodes",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A second launch while the first launch's allocation is unfreed is refused."""
    g, a = _alloc_graph(t, N, free=False)
    exe = t.instantiate(g)
    s = t.stream()
    exe.launch(s)
    s.synchronize()
    try:
        exe.launch(s)
    finally:
        s.free_async(a.dptr)
        s.synchronize()


@case("memory.relaunch.auto_free_on_launch", cite=INSTANTIATE + "cudaGraphInstantiateFlagAutoFreeOnLaunch "
      "configures a graph containing memory allocation nodes to automatically free any unfreed memory "
      "allocations before the graph is relaunched", apis=("GraphInstantiateWithFlags", "GraphLaunch"),
      requires=("graph_memory_nodes",), expect=b"\x17" * 8)
def _(t: CaseContext) -> Any:
    """With auto-free-on-launch, a graph leaving memory allocated relaunches."""
    out = _zeroed(t)
    g = t.graph()
    a = g.add_mem_alloc(N)
    m = a.memset(a.dptr, 0x17, N)
    m.memcpy(out, a.dptr, N)
    exe = t.instantiate(g, auto_free_on_launch=True)
    s = t.stream()
    try:
        for _ in range(3):
            exe.launch(s)
        s.synchronize()
    finally:
        s.free_async(a.dptr)
        s.synchronize()
    return out.to_bytes(8)


@case("memory.relaunch.after_free_async", cite=PG + "graph allocations may be freed outside the graph with "
      "cudaFreeAsync in stream order; " + LAUNCH + "the launch fails only while allocations remain unfreed",
      apis=("GraphLaunch", "FreeAsync"), requires=("graph_memory_nodes",), expect=2)
def _(t: CaseContext) -> Any:
    """Freeing the allocation in stream order between launches lets the graph relaunch."""
    g, a = _alloc_graph(t, N, free=False)
    exe = t.instantiate(g)
    s = t.stream()
    launches = 0
    for _ in range(2):
        exe.launch(s)
        launches += 1
        s.free_async(a.dptr)
    s.synchronize()
    return launches


@case("memory.free_outside.data_survives_launch", cite=PG + "an allocation not freed in the graph outlives "
      "the launch: it is accessible to later work ordered after the graph", apis=("GraphLaunch", "MemcpyAsync",
                                                                                 "FreeAsync"),
      requires=("graph_memory_nodes",), expect=b"\x5a" * 8)
def _(t: CaseContext) -> Any:
    """Memory a graph allocated and left allocated keeps its contents for stream work after the launch."""
    out = _zeroed(t)
    g, a = _alloc_graph(t, N, free=False, value=0x5A)
    exe = t.instantiate(g)
    s = t.stream()
    exe.launch(s)
    try:
        s.memcpy(out, a.dptr, N)
    finally:
        s.free_async(a.dptr)
        s.synchronize()
    return out.to_bytes(8)


@case("memory.free_outside.synchronous_free", cite=PG + "graph allocations may be freed with cudaFree as "
      "well as cudaFreeAsync", apis=("GraphLaunch", "Free"), requires=("graph_memory_nodes",), expect=2)
def _(t: CaseContext) -> Any:
    """A graph allocation freed with the synchronous free lets the graph relaunch."""
    g, a = _alloc_graph(t, N, free=False)
    exe = t.instantiate(g)
    s = t.stream()
    for _ in range(2):
        exe.launch(s)
        s.synchronize()
        t.call("Free", t.ffi.cast("void *", a.dptr))
    return 2


@case("memory.free_outside.after_exec_destroyed", cite=PG + "destroying a graph or executable graph does not "
      "free allocations it left allocated; they must be freed in another graph or with cudaFreeAsync/cudaFree",
      apis=("GraphExecDestroy", "FreeAsync"), requires=("graph_memory_nodes",), expect=b"\x5b" * 8)
def _(t: CaseContext) -> Any:
    """An unfreed graph allocation is still usable, and freeable, after its executable graph is gone."""
    out = _zeroed(t)
    g, a = _alloc_graph(t, N, free=False, value=0x5B)
    dptr = a.dptr
    exe = t.instantiate(g)
    s = t.stream()
    exe.launch(s)
    s.synchronize()
    exe.close()
    try:
        s.memcpy(out, dptr, N)
    finally:
        s.free_async(dptr)
        s.synchronize()
    return out.to_bytes(8)


@case("memory.free_in_other_graph", cite=FREE + "returns cudaErrorInvalidValue only for an address not "
      "returned by an allocation node, a double free or an invalid address; " + PG + "an allocation may be "
      "freed by a free node of another graph", apis=("GraphAddMemFreeNode", "GraphLaunch"),
      requires=("graph_memory_nodes",), expect=(NodeType.MEM_FREE, 2))
def _(t: CaseContext) -> Any:
    """A second graph's free node frees the first graph's allocation, so the first relaunches."""
    ga, a = _alloc_graph(t, N, free=False)
    gb = t.graph()
    f = gb.add_mem_free(a.dptr)
    ea = t.instantiate(ga)
    eb = t.instantiate(gb)
    s = t.stream()
    for _ in range(2):
        ea.launch(s)
        try:
            eb.launch(s)
        except BaseException:
            s.free_async(a.dptr)
            s.synchronize()
            raise
    s.synchronize()
    return f.type, 2


@case("memory.instantiate.second_exec_refused", cite=f"{_GM}, cudaGraphInstantiate: if graph contains any "
      "allocation or free nodes, there can be at most one executable graph in existence for that graph at a "
      "time; an attempt to instantiate a second one results in an error", apis=("GraphInstantiateWithFlags",),
      requires=("graph_memory_nodes",), raises=errors.GraphRTError)
def _(t: CaseContext) -> Any:
    """A second executable graph of a graph with memory nodes is refused while the first exists."""
    # unsure: which error class (the documentation says "an error"); HIP documents NotSupported.
    g, _a = _alloc_graph(t, N, free=True)
    t.instantiate(g)
    t.instantiate(g)


@case("memory.instantiate.after_first_destroyed", cite=f"{_GM}, cudaGraphInstantiate: at most one executable "
      "graph of a graph with memory nodes at a time (a new one once the first is destroyed)",
      apis=("GraphInstantiateWithFlags", "GraphExecDestroy", "GraphLaunch"), requires=("graph_memory_nodes",),
      expect=b"\x18" * 8)
def _(t: CaseContext) -> Any:
    """Once the first executable graph is destroyed, the graph instantiates again and runs."""
    # unsure: HIP documents that graphs with memory nodes refuse re-instantiation.
    out = _zeroed(t)
    g = t.graph()
    a = g.add_mem_alloc(N)
    m = a.memset(a.dptr, 0x18, N)
    c = m.memcpy(out, a.dptr, N)
    c.mem_free(a)
    t.instantiate(g).close()
    exe = t.instantiate(g)
    s = t.stream()
    exe.launch(s)
    s.synchronize()
    return out.to_bytes(8)


@case("memory.instantiate.device_launch_refused", cite=INSTANTIATE + "a graph instantiated for device launch "
      "may contain only kernel, memcpy, memset and child graph nodes (no memory allocation nodes)",
      apis=("GraphInstantiateWithFlags",), requires=("graph_memory_nodes", "device_launch"),
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A graph with memory nodes cannot be instantiated for device launch."""
    g, _a = _alloc_graph(t, N, free=True)
    t.instantiate(g, device_launch=True)


@case("memory.update.same_graph", cite=UPDATE + "updates the node parameters from a topologically identical "
      "graph (here the graph itself, its memory nodes unchanged)", apis=("GraphExecUpdate",
                                                                       "GraphMemcpyNodeSetParams1D"),
      requires=("graph_memory_nodes",), expect=(b"\x00" * 8, b"\x19" * 8))
def _(t: CaseContext) -> Any:
    """An executable graph with memory nodes updates from its own graph after a copy's destination changed."""
    # unsure: whether an update is accepted at all for graphs with memory nodes.
    out1, out2 = _zeroed(t), _zeroed(t)
    g = t.graph()
    a = g.add_mem_alloc(N)
    m = a.memset(a.dptr, 0x19, N)
    c = m.memcpy(out1, a.dptr, N)
    c.mem_free(a)
    exe = t.instantiate(g)
    c.set_params(dst=out2, src=a.dptr, count=N)
    exe.update(g)
    s = t.stream()
    exe.launch(s)
    s.synchronize()
    return out1.to_bytes(8), out2.to_bytes(8)


# ============================================================================ memory nodes: refusals
@case("memory.clone.free_only_refused", cite=CLONE + "cloning is not supported for graphs which contain memory "
      "allocation nodes, memory free nodes, or conditional nodes", apis=("GraphClone", "GraphAddMemFreeNode"),
      requires=("graph_memory_nodes",), raises=errors.GraphRTError)
def _(t: CaseContext) -> Any:
    """A graph with only a free node (of another graph's allocation) cannot be cloned."""
    _ga, a = _alloc_graph(t, N, free=False)
    gb = t.graph()
    gb.add_mem_free(a.dptr)
    t.track(gb.clone())


@case("memory.child.free_only_refused", cite=ADD_CHILD + "if childGraph contains allocation nodes, free nodes, "
      "or conditional nodes, this call will return an error", apis=("GraphAddChildGraphNode", "GraphAddMemFreeNode"),
      requires=("graph_memory_nodes",), raises=errors.GraphRTError)
def _(t: CaseContext) -> Any:
    """A child graph holding only a free node is refused."""
    _ga, a = _alloc_graph(t, N, free=False)
    child = t.graph()
    child.add_mem_free(a.dptr)
    t.graph().add_child_graph(child)


@case("memory.child.alloc_only_refused", cite=ADD_CHILD + "if childGraph contains allocation nodes, free nodes, "
      "or conditional nodes, this call will return an error", apis=("GraphAddChildGraphNode",
                                                                     "GraphAddMemAllocNode"),
      requires=("graph_memory_nodes",), raises=errors.GraphRTError)
def _(t: CaseContext) -> Any:
    """A child graph holding an allocation it does not free is refused."""
    child = t.graph()
    child.add_mem_alloc(N)
    t.graph().add_child_graph(child)


@case("memory.exec_set_node_params.alloc_refused", cite=SET_NODE + "memory allocation nodes: API unsupported",
      apis=("GraphExecNodeSetParams",), requires=("graph_memory_nodes", "node_set_params"),
      raises=errors.NotSupported)
def _(t: CaseContext) -> Any:
    """An allocation node cannot be changed in an executable graph."""
    # unsure: NotSupported or InvalidValue.
    g, a = _alloc_graph(t, N, free=True)
    t.instantiate(g).set_node_params(a, size=2 * N)


@case("memory.exec_set_node_params.free_refused", cite=SET_NODE + "memory free nodes: API unsupported",
      apis=("GraphExecNodeSetParams",), requires=("graph_memory_nodes", "node_set_params"),
      raises=errors.NotSupported)
def _(t: CaseContext) -> Any:
    """A free node cannot be changed in an executable graph."""
    # unsure: NotSupported or InvalidValue.
    g = t.graph()
    a = g.add_mem_alloc(N)
    f = a.mem_free(a)
    t.instantiate(g).set_node_params(f, dptr=a)


@case("memory.enable.alloc_node_refused", cite=ENABLE + "currently only kernel, memset and memcpy nodes are "
      "supported; returns cudaErrorInvalidValue", apis=("GraphNodeSetEnabled",),
      requires=("graph_memory_nodes", "per_node_enable"), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """An allocation node cannot be disabled."""
    g, a = _alloc_graph(t, N, free=True)
    t.instantiate(g).set_enabled(a, False)


@case("memory.alloc.device_explicit", cite=ALLOC + "poolProps.location names the device the memory is "
      "allocated on", apis=("GraphAddMemAllocNode", "GraphMemAllocNodeGetParams"), requires=("graph_memory_nodes",),
      expect=(True, N))
def _(t: CaseContext) -> Any:
    """An allocation node made for the current device by ordinal reads it back."""
    dev = t.rt.current_device().ordinal
    a = t.graph().add_mem_alloc(N, device=dev)
    p = a.params
    return p["device"] == dev, p["bytesize"]


@case("memory.alloc.free_by_node_object", cite=FREE + "dptr - address of memory to free (the address the "
      "allocation node returned)", apis=("GraphAddMemFreeNode", "GraphMemFreeNodeGetParams"),
      requires=("graph_memory_nodes",), expect=True)
def _(t: CaseContext) -> Any:
    """A free node given the allocation node frees its address."""
    g = t.graph()
    a = g.add_mem_alloc(N)
    f = g.add_mem_free(a, dependencies=[a])
    return f.params["dptr"] == a.dptr


@case("memory.alloc.used_by_two_graphs_sequentially", cite=PG + "an allocation's lifetime begins at its "
      "allocation node and ends when it is freed, possibly in another graph or stream",
      apis=("GraphAddMemAllocNode", "GraphAddMemFreeNode", "GraphLaunch"), requires=("graph_memory_nodes",),
      expect=b"\x26" * 8)
def _(t: CaseContext) -> Any:
    """A graph that writes and frees another graph's allocation sees the memory."""
    out = _zeroed(t)
    ga, a = _alloc_graph(t, N, free=False, value=0x26)
    gb = t.graph()
    c = gb.add_memcpy(out, a.dptr, N)
    c.mem_free(a.dptr)
    ea = t.instantiate(ga)
    s = t.stream()
    ea.launch(s)
    try:
        eb = t.instantiate(gb)
        eb.launch(s)
        s.synchronize()
    except BaseException:
        s.free_async(a.dptr)
        s.synchronize()
        raise
    return out.to_bytes(8)


# ============================================================================ memory pools
@case("memory.pool.default_is_current", cite=DEFAULT_POOL + "the current pool of a device is its default pool "
      "unless cudaDeviceSetMemPool was called", apis=("DeviceGetDefaultMemPool", "DeviceGetMemPool"),
      expect=True)
def _(t: CaseContext) -> Any:
    """The device's current memory pool is its default pool."""
    return t.rt.MemPool.default() == t.rt.MemPool.current()


@case("memory.pool.create_defaults", cite=POOL_GET + "reuse policies are enabled by default; "
      "cudaMemPoolAttrReleaseThreshold defaults to 0", apis=("MemPoolCreate", "MemPoolGetAttribute"),
      expect=(1, 1, 1, 0, 0))
def _(t: CaseContext) -> Any:
    """A new pool has its reuse policies on, no release threshold and nothing used."""
    pool = t.track(t.rt.MemPool())
    return (pool.attribute(MemPoolAttr.REUSE_FOLLOW_EVENT_DEPENDENCIES),
            pool.attribute(MemPoolAttr.REUSE_ALLOW_OPPORTUNISTIC),
            pool.attribute(MemPoolAttr.REUSE_ALLOW_INTERNAL_DEPENDENCIES),
            pool.attribute(MemPoolAttr.RELEASE_THRESHOLD), pool.attribute(MemPoolAttr.USED_MEM_CURRENT))


@case("memory.pool.attributes_all", cite=POOL_GET + "gets the value of each cudaMemPoolAttr",
      apis=("MemPoolGetAttribute",), expect=(8, True))
def _(t: CaseContext) -> Any:
    """All eight pool attributes read as non-negative integers."""
    attrs = t.track(t.rt.MemPool()).attributes()
    return len(attrs), all(isinstance(v, int) and v >= 0 for v in attrs.values())


@case("memory.pool.release_threshold", cite=POOL_SET + "cudaMemPoolAttrReleaseThreshold: amount of reserved "
      "memory in bytes to hold onto before trying to release memory back to the OS",
      apis=("MemPoolSetAttribute", "MemPoolGetAttribute"), expect=(1 << 20, 1 << 24))
def _(t: CaseContext) -> Any:
    """The release threshold reads back what was set (at creation, then later)."""
    pool = t.track(t.rt.MemPool(release_threshold=1 << 20))
    first = pool.release_threshold
    pool.release_threshold = 1 << 24
    return first, pool.release_threshold


@case("memory.pool.set_reuse_policy", cite=POOL_SET + "the reuse policies (cudaMemPoolReuse*) are int "
      "values: enable or disable", apis=("MemPoolSetAttribute", "MemPoolGetAttribute"), expect=(0, 1))
def _(t: CaseContext) -> Any:
    """A reuse policy can be switched off and on."""
    pool = t.track(t.rt.MemPool())
    pool.set_attribute(MemPoolAttr.REUSE_ALLOW_OPPORTUNISTIC, False)
    off = pool.attribute(MemPoolAttr.REUSE_ALLOW_OPPORTUNISTIC)
    pool.set_attribute(MemPoolAttr.REUSE_ALLOW_OPPORTUNISTIC, True)
    return off, pool.attribute(MemPoolAttr.REUSE_ALLOW_OPPORTUNISTIC)


@case("memory.pool.malloc_from_pool", cite=FROM_POOL + "allocates memory from the pool with stream ordered "
      "semantics; the allocation is usable by work ordered after it", apis=("MallocFromPoolAsync", "MemsetAsync",
                                                                          "FreeAsync"),
      expect=(b"\x27" * 8, True))
def _(t: CaseContext) -> Any:
    """Memory from a pool is usable in stream order and counted as used while allocated."""
    pool = t.track(t.rt.MemPool())
    out = _zeroed(t)
    s = t.stream()
    buf = s.malloc_async(N, pool=pool)
    try:
        s.memset(buf, 0x27, N)
        s.memcpy(out, buf, N)
        s.synchronize()
        used = pool.attribute(MemPoolAttr.USED_MEM_CURRENT)
    finally:
        s.free_async(buf)
        s.synchronize()
    return out.to_bytes(8), used >= N


@case("memory.pool.used_after_free", cite=POOL_GET + "cudaMemPoolAttrUsedMemCurrent: amount of memory from the "
      "pool that is currently in use by the application", apis=("MallocFromPoolAsync", "FreeAsync",
                                                               "MemPoolGetAttribute"), expect=0)
def _(t: CaseContext) -> Any:
    """After the allocation is freed and the stream synchronized, nothing of the pool is used."""
    pool = t.track(t.rt.MemPool())
    s = t.stream()
    buf = s.malloc_async(1 << 20, pool=pool)
    s.free_async(buf)
    s.synchronize()
    return pool.attribute(MemPoolAttr.USED_MEM_CURRENT)


@case("memory.pool.threshold_keeps_reserved", cite=POOL_SET + "when more than the release threshold bytes of "
      "memory are held by the pool, the allocator releases memory at the next synchronize (less is kept)",
      apis=("MallocFromPoolAsync", "FreeAsync", "MemPoolGetAttribute"), expect=True)
def _(t: CaseContext) -> Any:
    """Below the release threshold, freed memory stays reserved across a synchronize."""
    pool = t.track(t.rt.MemPool(release_threshold=1 << 30))
    s = t.stream()
    buf = s.malloc_async(4 << 20, pool=pool)
    s.free_async(buf)
    s.synchronize()
    return pool.attribute(MemPoolAttr.RESERVED_MEM_CURRENT) >= 4 << 20


@case("memory.pool.zero_threshold_releases", cite=POOL_SET + "cudaMemPoolAttrReleaseThreshold (default 0): "
      "memory above the threshold is released back to the OS on the next stream, event or context synchronize",
      apis=("MallocFromPoolAsync", "FreeAsync", "StreamSynchronize", "MemPoolGetAttribute"), expect=0)
def _(t: CaseContext) -> Any:
    """With a zero threshold, a synchronize after the free releases the pool's memory."""
    # unsure: "tries to release": the allocator may keep a granule.
    pool = t.track(t.rt.MemPool())
    s = t.stream()
    buf = s.malloc_async(4 << 20, pool=pool)
    s.free_async(buf)
    s.synchronize()
    return pool.attribute(MemPoolAttr.RESERVED_MEM_CURRENT)


@case("memory.pool.trim_releases", cite=POOL_TRIM + "releases memory back to the OS until the pool contains "
      "fewer than minBytesToKeep reserved bytes", apis=("MemPoolTrimTo", "MemPoolGetAttribute"),
      expect=(True, 0))
def _(t: CaseContext) -> Any:
    """trim(0) releases what the release threshold kept."""
    pool = t.track(t.rt.MemPool(release_threshold=1 << 30))
    s = t.stream()
    buf = s.malloc_async(4 << 20, pool=pool)
    s.free_async(buf)
    s.synchronize()
    kept = pool.attribute(MemPoolAttr.RESERVED_MEM_CURRENT) >= 4 << 20
    pool.trim(0)
    return kept, pool.attribute(MemPoolAttr.RESERVED_MEM_CURRENT)


@case("memory.pool.trim_keeps_outstanding", cite=POOL_TRIM + "the allocator cannot release OS allocations that "
      "back outstanding asynchronous allocations", apis=("MemPoolTrimTo", "MemPoolGetAttribute"), expect=True)
def _(t: CaseContext) -> Any:
    """trim(0) keeps the memory of an allocation still in use."""
    pool = t.track(t.rt.MemPool())
    s = t.stream()
    buf = s.malloc_async(4 << 20, pool=pool)
    s.synchronize()
    try:
        pool.trim(0)
        kept = pool.attribute(MemPoolAttr.RESERVED_MEM_CURRENT) >= 4 << 20
    finally:
        s.free_async(buf)
        s.synchronize()
    return kept


@case("memory.pool.reset_used_high", cite=POOL_SET + "cudaMemPoolAttrUsedMemHigh: high watermark of the used "
      "memory since the last reset; it can only be reset to zero", apis=("MemPoolSetAttribute",
                                                                         "MemPoolGetAttribute"),
      expect=(True, 0))
def _(t: CaseContext) -> Any:
    """The used high watermark records an allocation and resets to zero once nothing is used."""
    pool = t.track(t.rt.MemPool())
    s = t.stream()
    buf = s.malloc_async(1 << 20, pool=pool)
    s.free_async(buf)
    s.synchronize()
    high = pool.attribute(MemPoolAttr.USED_MEM_HIGH) >= 1 << 20
    pool.set_attribute(MemPoolAttr.USED_MEM_HIGH, 0)
    return high, pool.attribute(MemPoolAttr.USED_MEM_HIGH)


@case("memory.pool.set_used_current_refused", cite=POOL_SET + "cudaMemPoolAttrUsedMemCurrent is read-only "
      "(only the high watermarks, the reuse policies and the release threshold can be set); returns "
      "cudaErrorInvalidValue", apis=("MemPoolSetAttribute",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Setting the current used amount of a pool is refused."""
    t.track(t.rt.MemPool()).set_attribute(MemPoolAttr.USED_MEM_CURRENT, 0)


@case("memory.pool.reset_high_to_nonzero_refused", cite=POOL_SET + "cudaMemPoolAttrReservedMemHigh can only be "
      "reset to zero; returns cudaErrorInvalidValue", apis=("MemPoolSetAttribute",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Setting a pool's high watermark to a non-zero value is refused."""
    t.track(t.rt.MemPool()).set_attribute(MemPoolAttr.RESERVED_MEM_HIGH, 4096)


@case("memory.pool.max_size_exceeded", cite=POOL_CREATE + "cudaMemPoolProps.maxSize: maximum pool size; "
      + FROM_POOL + "returns cudaErrorMemoryAllocation when the pool cannot satisfy the request",
      apis=("MemPoolCreate", "MallocFromPoolAsync"), raises=errors.OutOfMemory)
def _(t: CaseContext) -> Any:
    """An allocation larger than the pool's maximum size is refused."""
    # unsure: maxSize is honoured from CUDA 12.2; older runtimes (and HIP) may ignore it.
    pool = t.track(t.rt.MemPool(max_size=2 << 20))
    s = t.stream()
    buf = s.malloc_async(64 << 20, pool=pool)
    s.free_async(buf)  # reached only when the allocation was (wrongly) made
    s.synchronize()


@case("memory.pool.invalid_device", cite=POOL_CREATE + "poolProps.location must name a valid device; returns "
      "cudaErrorInvalidValue", apis=("MemPoolCreate",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A pool on a device that does not exist is refused."""
    # unsure: InvalidValue (documented) or InvalidDevice.
    t.track(t.rt.MemPool(device=4096))


@case("memory.pool.free_twice", kind="binding",
      cite=FREE_ASYNC + "frees memory with stream ordered semantics; " + PYGRAPHRT
      + "a freed AsyncBuffer raises InvalidResourceHandle", apis=("FreeAsync",), raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """Freeing a stream-ordered allocation twice is refused."""
    pool = t.track(t.rt.MemPool())
    s = t.stream()
    buf = s.malloc_async(N, pool=pool)
    s.free_async(buf)
    s.synchronize()
    s.free_async(buf)


@case("memory.pool.free_not_a_buffer", kind="binding", cite=FREE_ASYNC + "devPtr - memory to free; " + PYCHECK
      + " (InvalidValue)", apis=("FreeAsync",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """free_async of something that is neither an AsyncBuffer nor an address is refused."""
    t.stream().free_async("pointer")


@case("memory.pool.closed_pool", kind="binding",
      cite=f"{_SOMA}, cudaMemPoolDestroy: destroys the memory pool; " + PYGRAPHRT
      + "a closed pool raises InvalidResourceHandle", apis=("MemPoolDestroy", "MallocFromPoolAsync"),
      raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """Allocating from a closed pool is refused."""
    pool = t.track(t.rt.MemPool())
    pool.close()
    t.stream().malloc_async(N, pool=pool)


@case("memory.pool.attribute_not_an_attribute", kind="binding",
      cite=POOL_GET + "attr - the attribute to get (a cudaMemPoolAttr); "
      + PYCHECK + " (InvalidValue)", apis=("MemPoolGetAttribute",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A pool attribute given by name instead of a MemPoolAttr is refused."""
    t.track(t.rt.MemPool()).attribute("release_threshold")


@case("memory.pool.negative_size", kind="binding",
      cite=FROM_POOL + "size - number of bytes to allocate (a size_t); " + PYCHECK
      + " (InvalidValue)", apis=("MallocFromPoolAsync",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A negative allocation size is refused."""
    pool = t.track(t.rt.MemPool())
    t.stream().malloc_async(-1, pool=pool)


@case("memory.pool.malloc_async_current_pool", cite=f"{_SOMA}, cudaMallocAsync: allocates from the memory pool "
      "current to the stream's device", apis=("MallocAsync", "FreeAsync"), expect=(b"\x28" * 8, True))
def _(t: CaseContext) -> Any:
    """malloc_async without a pool allocates from the device's current pool, usable in stream order."""
    out = _zeroed(t)
    s = t.stream()
    buf = s.malloc_async(N)
    try:
        s.memset(buf, 0x28, N)
        s.memcpy(out, buf, N)
        s.synchronize()
        pool_is_none = buf.pool is None
    finally:
        s.free_async(buf)
        s.synchronize()
    return out.to_bytes(8), pool_is_none


@case("memory.pool.captured_alloc_from_pool", cite=FROM_POOL + "during stream capture, this function results in "
      "the creation of an allocation node; the allocation comes from the given pool",
      apis=("StreamBeginCapture", "MallocFromPoolAsync", "FreeAsync", "GraphLaunch"),
      requires=("graph_memory_nodes",), expect=(["mem_alloc", "mem_free", "memcpy", "memset"], b"\x29" * 8))
def _(t: CaseContext) -> Any:
    """A capture allocating from an explicit pool records memory nodes that run."""
    pool = t.track(t.rt.MemPool())
    out = _zeroed(t)
    s = t.stream()
    with s.capture() as cap:
        buf = s.malloc_async(N, pool=pool)
        s.memset(buf, 0x29, N)
        s.memcpy(out, buf, N)
        s.free_async(buf)
    g = t.track(cap.graph)
    exe = t.instantiate(g)
    exe.launch(s)
    s.synchronize()
    return sorted(n.type.value for n in g.nodes()), out.to_bytes(8)
