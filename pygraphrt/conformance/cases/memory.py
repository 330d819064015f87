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
from .exec import (DOC_GRAPH_EXEC_NODE_SET_PARAMS_ALLOWED_CHANGES,
                   DOC_GRAPH_EXEC_UPDATE_UPDATES_NODE)

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


#: What a read of a counter is pre-set to: no counter reads this, so a runtime that wrote nothing shows it.
UNWRITTEN = (1 << 63) - 7


def _attr(t: CaseContext, attr: GraphMemAttr) -> int:
    """``DeviceGetGraphMemAttribute`` of the current device through the raw layer (pre-set to UNWRITTEN:
    a value left so fails the case)."""
    ops = t.backend.ops
    out = t.ffi.new("unsigned long long *", UNWRITTEN)
    t.call("DeviceGetGraphMemAttribute", t.rt.current_device().ordinal,
           ops.value(ops.graph_mem_attrs, attr, "graph memory attribute"), out)
    return _written(t, int(out[0]), UNWRITTEN, f"DeviceGetGraphMemAttribute({attr.name})")


def _written(t: CaseContext, value: int, marker: int, what: str) -> int:
    t.check(value != marker, f"{what} returned success but did not write its result")
    return value


def _attrs(t: CaseContext) -> dict[GraphMemAttr, int]:
    return {a: _attr(t, a) for a in GraphMemAttr}


def _settle(t: CaseContext) -> None:
    """Wait for the device and trim its graph memory: what earlier cases' executable graphs left cached
    is released, so the device-wide counters read next are this case's baseline (compared as differences)."""
    dev = t.rt.current_device()
    dev.synchronize()
    dev.graph_mem_trim()


def _pool_attr(t: CaseContext, pool: Any, attr: MemPoolAttr) -> int:
    """``MemPoolGetAttribute`` through the raw layer, into a value pre-set to what the attribute never is
    (reuse policies: 7, sizes: UNWRITTEN); a value left so fails the case."""
    from pygraphrt._vendors.base import MEM_POOL_ATTRIBUTES

    member, ctype = MEM_POOL_ATTRIBUTES[attr]
    marker = 7 if ctype == "int" else UNWRITTEN
    out = t.ffi.new(f"{ctype} *", marker)
    t.call("MemPoolGetAttribute", pool.handle, t.backend.ops.const(member), out)
    return _written(t, int(out[0]), marker, f"MemPoolGetAttribute({attr.name})")


def _typed(node: Any) -> dict[str, Any]:
    """The node's parameters from the runtime's type-specific getter (``GraphMemAllocNodeGetParams``,
    ``GraphMemFreeNodeGetParams``) on every runtime (``node.params`` asks the generic
    ``GraphNodeGetParams`` first where the runtime has it)."""
    from pygraphrt.graph._readback import typed_params

    return typed_params(node)


def _staged_graph(t: CaseContext, src: Any, out: Any, *, free: bool) -> tuple[Any, Any]:
    """A graph: allocate N bytes, copy ``src`` into them, copy them to ``out``, and (``free``) free them:
    what ``out`` holds after a launch is what ``src`` held when that launch ran."""
    g = t.graph()
    a = g.add_mem_alloc(N)
    c = a.memcpy(a.dptr, src, N)
    c = c.memcpy(out, a.dptr, N)
    if free:
        c.mem_free(a)
    return g, a


def _launches(t: CaseContext, s: Any, src: Any, out: Any, launch: Any, values: tuple[int, ...],
              between: Any = None) -> list[int]:
    """For each value: put it in ``src``, ``launch()``, wait, read ``out``'s first byte (then ``between()``)."""
    seen = []
    for v in values:
        src.copy_from(bytes([v]) * N)
        launch()
        s.synchronize()
        seen.append(out.to_bytes(1)[0])
        if between is not None:
            between()
    return seen


def _release(t: CaseContext, *execs: Any) -> None:
    """Close executable graphs, wait for the device and trim its graph memory."""
    for e in execs:
        e.close()
    dev = t.rt.current_device()
    dev.synchronize()
    dev.graph_mem_trim()


# Documentation passages several cases quote (each case adds its own gloss after them).
DOC_DEVICE_GET_GRAPH_MEM_ATTRIBUTE_AMOUNT_MEMORY = ("CUDA Runtime API 13.5, Graph Management, "
                                                    "cudaDeviceGetGraphMemAttribute: \"- "
                                                    "cudaGraphMemAttrUsedMemCurrent: Amount of memory, in "
                                                    "bytes, currently associated with graphs - "
                                                    "cudaGraphMemAttrUsedMemHigh: High watermark of memory, in "
                                                    "bytes, associated with graphs since the last time it was "
                                                    "reset\"")
DOC_DEVICE_GRAPH_MEM_TRIM_FREE_UNUSED = ("CUDA Runtime API 13.5, Graph Management, cudaDeviceGraphMemTrim: "
                                         "\"Free unused memory that was cached on the specified device for use "
                                         "with graphs back to the OS\"")
DOC_GRAPH_ADD_MEM_ALLOC_NODE_ALLOCATION_FREED = ("CUDA Runtime API 13.5, Graph Management, "
                                                 "cudaGraphAddMemAllocNode: \"If the allocation is not freed in "
                                                 "the same graph, then it can be accessed not only by nodes in "
                                                 "the graph which are ordered after the allocation node, but "
                                                 "also by stream operations ordered after the graph's "
                                                 "execution but before the allocation is freed\"")
DOC_GRAPH_INSTANTIATE_GRAPH_CONTAINS = ("CUDA Runtime API 13.5, Graph Management, cudaGraphInstantiate: \"If "
                                        "graph contains any allocation or free nodes, there can be at most one "
                                        "executable graph in existence for that graph at a time\"")
DOC_MEM_POOL_SET_ATTRIBUTE_ILLEGAL_SET = ("CUDA Runtime API 13.5, Stream Ordered Memory Allocator, "
                                          "cudaMemPoolSetAttribute: \"It is illegal to set this attribute to a "
                                          "non-zero value. - cudaMemPoolAttrUsedMemHigh: (value type = "
                                          "cuuint64_t) Reset the high watermark that tracks the amount of used "
                                          "memory that was allocated for the memory pool\"")
DOC_MEM_POOL_SET_ATTRIBUTE_WHEN_MORE = ("CUDA Runtime API 13.5, Stream Ordered Memory Allocator, "
                                        "cudaMemPoolSetAttribute: \"When more than the release threshold bytes "
                                        "of memory are held by the memory pool, the allocator will try to "
                                        "release memory back to the OS on the next call to stream, event or "
                                        "context synchronize\"")


# ============================================================================ graph memory attributes
@case("memory.attributes.all_four", cite="CUDA Runtime API 13.5, Graph Management, cudaDeviceGetGraphMemAttribute: \"High watermark can "
                                         "only be reset to zero. - cudaGraphMemAttrReservedMemCurrent: Amount of memory, in bytes, "
                                         "currently allocated for use by the CUDA graphs asynchronous allocator. - "
                                         "cudaGraphMemAttrReservedMemHigh: High watermark of memory, in bytes, currently allocated for "
                                         "use by the CUDA graphs asynchronous allocator\" -- cudaGraphMemAttrUsedMemCurrent: amount of "
                                         "memory, in bytes, currently associated with graphs; cudaGraphMemAttrUsedMemHigh: high "
                                         "watermark of memory, in bytes, associated with graphs since the last time it was reset; "
                                         "cudaGraphMemAttrReservedMemCurrent: amount of memory, in bytes, currently allocated for use "
                                         "by the CUDA graphs asynchronous allocator; cudaGraphMemAttrReservedMemHigh: high watermark "
                                         "of memory, in bytes, currently allocated for use by the CUDA graphs asynchronous allocator", apis=("DeviceGetGraphMemAttribute", "GraphLaunch"),
      requires=("graph_memory_nodes",), expect={"used current": True, "used high": True, "reserved current": True,
                                                "reserved high": True})
def _(t: CaseContext) -> Any:
    """Each of the four graph-memory attributes grows by at least the allocation of a launched graph."""
    _settle(t)
    before = _attrs(t)
    g, _a = _alloc_graph(t, BIG, free=True)
    exe = t.instantiate(g)
    s = t.stream()
    exe.launch(s)
    s.synchronize()
    after = _attrs(t)
    t.note(f"before {before}, after {after}")
    used0, reserved0 = before[GraphMemAttr.USED_MEM_CURRENT], before[GraphMemAttr.RESERVED_MEM_CURRENT]
    # The high watermarks are compared with the current values before the launch: a reset
    # elsewhere cannot make them smaller than what this case's graph holds.
    return {"used current": after[GraphMemAttr.USED_MEM_CURRENT] - used0 >= BIG,
            "used high": after[GraphMemAttr.USED_MEM_HIGH] - used0 >= BIG,
            "reserved current": after[GraphMemAttr.RESERVED_MEM_CURRENT] - reserved0 >= BIG,
            "reserved high": after[GraphMemAttr.RESERVED_MEM_HIGH] - reserved0 >= BIG}


@case("memory.attributes.high_not_below_current", cite=DOC_DEVICE_GET_GRAPH_MEM_ATTRIBUTE_AMOUNT_MEMORY + " -- UsedMemHigh / "
                                                       "ReservedMemHigh are the high watermarks of UsedMemCurrent / "
                                                       "ReservedMemCurrent since the last reset", apis=("DeviceGetGraphMemAttribute",
                                                                                      "GraphLaunch"),
      requires=("graph_memory_nodes",), expect=(True, True, True))
def _(t: CaseContext) -> Any:
    """After a launch with graph memory, each high watermark is at least its current value, which grew."""
    _settle(t)
    used0 = _attr(t, GraphMemAttr.USED_MEM_CURRENT)
    g, _a = _alloc_graph(t, BIG, free=True)
    exe = t.instantiate(g)
    s = t.stream()
    exe.launch(s)
    s.synchronize()
    a = _attrs(t)
    return (a[GraphMemAttr.USED_MEM_CURRENT] - used0 >= BIG,
            a[GraphMemAttr.USED_MEM_HIGH] >= a[GraphMemAttr.USED_MEM_CURRENT],
            a[GraphMemAttr.RESERVED_MEM_HIGH] >= a[GraphMemAttr.RESERVED_MEM_CURRENT])


@case("memory.attributes.used_after_launch", cite=DOC_DEVICE_GET_GRAPH_MEM_ATTRIBUTE_AMOUNT_MEMORY + " -- "
                                                  "cudaGraphMemAttrUsedMemCurrent: amount of memory currently "
                                                  "associated with graphs; CUDA Programming Guide, CUDA Graphs, "
                                                  "Graph Memory Nodes: the executable graph keeps the physical "
                                                  "memory of its allocations for its next launch", apis=("DeviceGetGraphMemAttribute", "GraphLaunch"),
      requires=("graph_memory_nodes",), expect=(True, True))
def _(t: CaseContext) -> Any:
    """A launched graph's allocation counts as used and reserved graph memory (growth within the case)."""
    _settle(t)  # release what earlier cases' graphs left cached, so the baseline is this case's start
    used0 = _attr(t, GraphMemAttr.USED_MEM_CURRENT)
    reserved0 = _attr(t, GraphMemAttr.RESERVED_MEM_CURRENT)
    g, _a = _alloc_graph(t, BIG, free=True)
    exe = t.instantiate(g)
    s = t.stream()
    exe.launch(s)
    s.synchronize()
    used = _attr(t, GraphMemAttr.USED_MEM_CURRENT)
    reserved = _attr(t, GraphMemAttr.RESERVED_MEM_CURRENT)
    t.note(f"used {used0} -> {used}, reserved {reserved0} -> {reserved}")
    return used - used0 >= BIG, reserved - reserved0 >= BIG


@case("memory.attributes.destroy_and_trim_release", cite=DOC_DEVICE_GRAPH_MEM_TRIM_FREE_UNUSED + " -- frees unused memory that "
                                                         "was cached on the device for use with graphs back to the OS "
                                                         "(blocks not in use by a graph that is executing or scheduled to "
                                                         "execute)", apis=("GraphExecDestroy", "DeviceGraphMemTrim", "DeviceGetGraphMemAttribute"),
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


@case("memory.attributes.reset_high_watermarks", cite="CUDA Runtime API 13.5, Graph Management, cudaDeviceSetGraphMemAttribute: \"- "
                                                      "cudaGraphMemAttrUsedMemHigh: High watermark of memory, in bytes, associated with graphs "
                                                      "since the last time it was reset\" -- cudaGraphMemAttrUsedMemHigh and ReservedMemHigh: high "
                                                      "watermarks since the last time they were reset; they can only be reset to zero",
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


@case("memory.attributes.trim_without_graphs", cite=DOC_DEVICE_GRAPH_MEM_TRIM_FREE_UNUSED + " -- frees unused graph memory "
                                                    "cached on the device (nothing to free is not an error)", apis=("DeviceGraphMemTrim",), requires=("graph_memory_nodes",),
      expect=None)
def _(t: CaseContext) -> Any:
    """Trimming when no graph holds memory succeeds."""
    return t.rt.current_device().graph_mem_trim()


@case("memory.attributes.set_current_refused", cite=(
          "Observed, cudaDeviceSetGraphMemAttribute: the error code (deviations.OBSERVATIONS); CUDA Runtime "
          "API 13.5, Graph Management, cudaDeviceSetGraphMemAttribute: \"Valid attributes are: - "
          "cudaGraphMemAttrUsedMemHigh: High watermark of memory, in bytes, associated with graphs since the "
          "last time it was reset\" -- only the two high watermarks are listed as settable "
          "(cudaGraphMemAttrUsedMemCurrent is not); no sentence states that setting another attribute is "
          "refused"),
      apis=("DeviceSetGraphMemAttribute",), requires=("graph_memory_nodes",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Setting the current used amount is refused."""
    ops = t.backend.ops
    attr = ops.value(ops.graph_mem_attrs, GraphMemAttr.USED_MEM_CURRENT, "attr")
    zero = t.ffi.new("unsigned long long *", 0)
    with t.under_test():
        t.call("DeviceSetGraphMemAttribute", t.rt.current_device().ordinal, attr, zero)


@case("memory.attributes.reset_to_nonzero_refused", cite=
          "Observed, cudaDeviceSetGraphMemAttribute: the error code (deviations.OBSERVATIONS); CUDA Runtime "
          "API 13.5, Graph Management, cudaDeviceSetGraphMemAttribute: \"High watermark can only be reset to "
          "zero. - cudaGraphMemAttrReservedMemHigh: High watermark of memory, in bytes, currently allocated "
          "for use by the CUDA graphs asynchronous allocator\" -- high watermarks can only be reset to zero; "
          "the code of the refusal, cudaErrorInvalidValue, is the observation", apis=("DeviceSetGraphMemAttribute",),
      requires=("graph_memory_nodes",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Setting a high watermark to a non-zero value is refused."""
    ops = t.backend.ops
    attr = ops.value(ops.graph_mem_attrs, GraphMemAttr.USED_MEM_HIGH, "attr")
    value = t.ffi.new("unsigned long long *", 1 << 20)
    with t.under_test():
        t.call("DeviceSetGraphMemAttribute", t.rt.current_device().ordinal, attr, value)


@case("memory.attributes.unknown_attribute", cite=(
          "Observed, cudaDeviceGetGraphMemAttribute: the error code (deviations.OBSERVATIONS); CUDA Runtime "
          "API 13.5, Graph Management, cudaDeviceGetGraphMemAttribute: \"Valid attributes are: - "
          "cudaGraphMemAttrUsedMemCurrent: Amount of memory, in bytes, currently associated with graphs\" -- "
          "the four cudaGraphMemAttributeType values are listed; no sentence states that another number is "
          "refused"), apis=("DeviceGetGraphMemAttribute",),
      requires=("graph_memory_nodes",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """An attribute number that is no graph-memory attribute is refused."""
    out = t.ffi.new("unsigned long long *")
    with t.under_test():
        t.call("DeviceGetGraphMemAttribute", t.rt.current_device().ordinal, 0x7777, out)


@case("memory.attributes.invalid_device", cite="CUDA Runtime API 13.5, Graph Management, cudaDeviceGetGraphMemAttribute: \"cudaSuccess, "
                                               "cudaErrorInvalidDevice\" -- returns cudaErrorInvalidDevice",
      apis=("DeviceGetGraphMemAttribute",), requires=("graph_memory_nodes",), raises=errors.InvalidDevice)
def _(t: CaseContext) -> Any:
    """Graph-memory attributes of a device that does not exist are refused."""
    with t.under_test():
        t.rt.Device(4096).graph_mem_attribute(GraphMemAttr.USED_MEM_CURRENT)


@case("memory.trim.invalid_device",
      cite="Observed, cudaDeviceGraphMemTrim: returns cudaErrorInvalidDevice for a device that does not exist (not "
           "documented: deviations.OBSERVATIONS)", apis=("DeviceGraphMemTrim",),
      requires=("graph_memory_nodes",), raises=errors.InvalidDevice)
def _(t: CaseContext) -> Any:
    """Trimming a device that does not exist is refused."""
    with t.under_test():
        t.rt.Device(4096).graph_mem_trim()


# ============================================================================ graph allocations: launch rules
@case("memory.relaunch.with_free_node", cite="CUDA Runtime API 13.0, Graph Management, cudaGraphLaunch: if any allocations created by "
                                             "graphExec remain unfreed (from a previous launch) and graphExec was not instantiated with "
                                             "cudaGraphInstantiateFlagAutoFreeOnLaunch, the launch will fail; CUDA Runtime API 13.5, Graph "
                                             "Management, cudaGraphAddMemFreeNode: \"Creates a memory free node and adds it to a graph\" -- "
                                             "adds a memory free node (the allocation is freed by the graph)",
      apis=("GraphAddMemAllocNode", "GraphAddMemFreeNode", "GraphLaunch"),
      requires=("graph_memory_nodes",), expect=[1, 2, 3])
def _(t: CaseContext) -> Any:
    """A graph that frees what it allocates relaunches: each of three launches copies that launch's data."""
    src, out = _zeroed(t), _zeroed(t)
    g, _a = _staged_graph(t, src, out, free=True)
    exe = t.instantiate(g)
    s = t.stream()
    return _launches(t, s, src, out, lambda: exe.launch(s), (1, 2, 3))


@case("memory.relaunch.unfreed_refused", cite=LAUNCH + "if any allocations created by graphExec remain unfreed "
      "(from a previous launch) and graphExec was not instantiated with cudaGraphInstantiateFlagAutoFreeOnLaunch, "
      "the launch will fail with cudaErrorInvalidValue", apis=("GraphLaunch",),
      requires=("graph_memory_nodes",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A second launch while the first launch's allocation is unfreed is refused."""
    g, a = _alloc_graph(t, N, free=False)
    exe = t.instantiate(g)
    s = t.stream()
    exe.launch(s)
    s.synchronize()
    try:
        with t.under_test():
            exe.launch(s)
    finally:  # clean-up: the allocation the first launch left
        s.free_async(a.dptr)
        s.synchronize()


@case("memory.relaunch.auto_free_on_launch", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphInstantiateWithFlags: \"- "
                                                  "cudaGraphInstantiateFlagAutoFreeOnLaunch, which configures a graph containing memory "
                                                  "allocation nodes to automatically free any unfreed memory allocations before the graph is "
                                                  "relaunched\" -- cudaGraphInstantiateFlagAutoFreeOnLaunch configures a graph containing memory "
                                                  "allocation nodes to automatically free any unfreed memory allocations before the graph is "
                                                  "relaunched", apis=("GraphInstantiateWithFlags", "GraphLaunch"),
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


@case("memory.relaunch.after_free_async", cite=("CUDA Runtime API 13.5, Graph Management, cudaGraphAddMemAllocNode: \"Allocations which are not freed "
      "in the same graph can be freed by: - passing the allocation to cudaMemFreeAsync\" -- freed outside "
      "the graph in stream order; CUDA Runtime API 13.5, Graph Management, cudaGraphLaunch: \"If any "
      "allocations created by graphExec remain unfreed (from a previous launch) and graphExec was not "
      "instantiated with cudaGraphInstantiateFlagAutoFreeOnLaunch, the launch will fail with "
      "cudaErrorInvalidValue\" -- the launch fails only while allocations remain unfreed"),
      apis=("GraphLaunch", "FreeAsync"), requires=("graph_memory_nodes",), expect=[1, 2])
def _(t: CaseContext) -> Any:
    """Freeing the allocation in stream order between launches lets the graph relaunch (each launch copies)."""
    src, out = _zeroed(t), _zeroed(t)
    g, a = _staged_graph(t, src, out, free=False)
    exe = t.instantiate(g)
    s = t.stream()
    return _launches(t, s, src, out, lambda: exe.launch(s), (1, 2), between=lambda: s.free_async(a.dptr))


@case("memory.free_outside.data_survives_launch", cite=(DOC_GRAPH_ADD_MEM_ALLOC_NODE_ALLOCATION_FREED + " -- the unfreed allocation "
                                                        "keeps its contents for later stream work"), apis=("GraphLaunch", "MemcpyAsync"),
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


@case("memory.free_outside.synchronous_free", cite=("CUDA Runtime API 13.5, Graph Management, cudaGraphAddMemAllocNode: \"passing the allocation to "
      "cudaMemFreeAsync or cudaMemFree\" -- the synchronous free frees a graph allocation too; CUDA Runtime "
      "API 13.5, Graph Management, cudaGraphLaunch: \"If any allocations created by graphExec remain unfreed"
      " (from a previous launch) and graphExec was not instantiated with "
      "cudaGraphInstantiateFlagAutoFreeOnLaunch, the launch will fail with cudaErrorInvalidValue\" -- the "
      "launch fails only while allocations of a previous launch remain unfreed"),
      apis=("GraphLaunch", "Free"), requires=("graph_memory_nodes",), expect=[1, 2])
def _(t: CaseContext) -> Any:
    """A graph allocation freed with the synchronous free lets the graph relaunch (each launch copies)."""
    src, out = _zeroed(t), _zeroed(t)
    g, a = _staged_graph(t, src, out, free=False)
    exe = t.instantiate(g)
    s = t.stream()
    return _launches(t, s, src, out, lambda: exe.launch(s), (1, 2),
                     between=lambda: t.call("Free", t.ffi.cast("void *", a.dptr)))


@case("memory.free_outside.after_exec_destroyed", cite=PG + "destroying a graph or executable graph does not "
      "free allocations it left allocated; they must be freed in another graph or with cudaFreeAsync/cudaFree",
      apis=("GraphLaunch", "MemcpyAsync"), requires=("graph_memory_nodes",), expect=b"\x5b" * 8)
def _(t: CaseContext) -> Any:
    """An unfreed graph allocation is still usable, and freeable, after its executable graph is gone."""
    # GraphExecDestroy and the FreeAsync are steps, not claims: that the executable graph is gone
    # cannot be observed without using its destroyed handle, nor the free without a relaunch.
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


@case("memory.free_in_other_graph", cite=("CUDA Runtime API 13.5, Graph Management, cudaGraphAddMemAllocNode: \"Allocations which are not freed "
      "in the same graph can be freed by: - passing the allocation to cudaMemFreeAsync or cudaMemFree; - "
      "launching a graph with a free node for that allocation\" -- a free node of another graph frees the "
      "allocation, so the owning graph relaunches"), apis=("GraphAddMemFreeNode", "GraphNodeGetType", "GraphLaunch"),
      requires=("graph_memory_nodes",), expect=(NodeType.MEM_FREE, [1, 2]))
def _(t: CaseContext) -> Any:
    """A second graph's free node frees the first graph's allocation, so the first relaunches."""
    src, out = _zeroed(t), _zeroed(t)
    ga, a = _staged_graph(t, src, out, free=False)
    gb = t.graph()
    f = gb.add_mem_free(a.dptr)
    ea = t.instantiate(ga)
    eb = t.instantiate(gb)
    s = t.stream()
    try:
        seen = _launches(t, s, src, out, lambda: ea.launch(s), (1, 2), between=lambda: eb.launch(s))
    except BaseException:
        s.free_async(a.dptr)  # best effort: the allocation a failed free left
        s.synchronize()
        raise
    return t.runtime_type(f), seen


@case("memory.instantiate.second_exec_refused", cite=DOC_GRAPH_INSTANTIATE_GRAPH_CONTAINS + " -- if graph contains any "
                                                     "allocation or free nodes, there can be at most one executable "
                                                     "graph in existence for that graph at a time; an attempt to "
                                                     "instantiate a second one results in an error", apis=("GraphInstantiateWithFlags",),
      requires=("graph_memory_nodes",), raises=errors.NotSupported)
def _(t: CaseContext) -> Any:
    """A second executable graph of a graph with memory nodes is refused while the first exists."""
    # The documentation says "an error"; CUDA 12.9-13.5 return cudaErrorNotSupported (HIP documents it too).
    g, _a = _alloc_graph(t, N, free=True)
    t.instantiate(g)
    with t.under_test():
        t.instantiate(g)


@case("memory.instantiate.after_first_destroyed", cite=DOC_GRAPH_INSTANTIATE_GRAPH_CONTAINS + " -- at most one executable "
                                                       "graph of a graph with memory nodes at a time (a new one once "
                                                       "the first is destroyed)",
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


@case("memory.instantiate.device_launch_refused", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphInstantiateWithFlags: \"- The graph's nodes "
                                                       "must reside on a single device. - The graph can only contain kernel nodes, memcpy nodes, "
                                                       "memset nodes, and child graph nodes. - The graph cannot be empty and must contain at least "
                                                       "one kernel, memcpy, or memset node\" -- a graph instantiated for device launch may contain "
                                                       "only kernel, memcpy, memset and child graph nodes (no memory allocation nodes)",
      apis=("GraphInstantiateWithFlags",), requires=("graph_memory_nodes", "device_launch"),
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A graph with memory nodes cannot be instantiated for device launch."""
    g, _a = _alloc_graph(t, N, free=True)
    with t.under_test():
        t.instantiate(g, device_launch=True)


@case("memory.update.same_graph", cite=DOC_GRAPH_EXEC_UPDATE_UPDATES_NODE + " -- updates the node parameters "
                                       "from a topologically identical graph (here the graph itself, its memory "
                                       "nodes unchanged)", apis=("GraphExecUpdate",
                                                                       "GraphMemcpyNodeSetParams1D"),
      requires=("graph_memory_nodes",), expect=(b"\x00" * 8, b"\x19" * 8))
def _(t: CaseContext) -> Any:
    """An executable graph with memory nodes updates from its own graph after a copy's destination changed."""
    # CUDA 12.9-13.5 accept it.
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
      requires=("graph_memory_nodes",), raises=errors.NotSupported)
def _(t: CaseContext) -> Any:
    """A graph with only a free node (of another graph's allocation) cannot be cloned."""
    _ga, a = _alloc_graph(t, N, free=False)
    gb = t.graph()
    gb.add_mem_free(a.dptr)
    with t.under_test():
        t.track(gb.clone())


@case("memory.child.free_only_refused", cite=ADD_CHILD + "if childGraph contains allocation nodes, free nodes, "
      "or conditional nodes, this call will return an error", apis=("GraphAddChildGraphNode", "GraphAddMemFreeNode"),
      requires=("graph_memory_nodes",), raises=errors.NotSupported)
def _(t: CaseContext) -> Any:
    """A child graph holding only a free node is refused; the parent is unchanged."""
    _ga, a = _alloc_graph(t, N, free=False)
    child = t.graph()
    child.add_mem_free(a.dptr)
    parent = t.graph()
    before = t.snapshot(graph=parent)
    try:
        with t.under_test():
            parent.add_child_graph(child)
    finally:
        t.check_equal(t.snapshot(graph=parent), before, "the parent graph after the refused child")


@case("memory.child.alloc_only_refused", cite=ADD_CHILD + "if childGraph contains allocation nodes, free nodes, "
      "or conditional nodes, this call will return an error", apis=("GraphAddChildGraphNode",
                                                                     "GraphAddMemAllocNode"),
      requires=("graph_memory_nodes",), raises=errors.NotSupported)
def _(t: CaseContext) -> Any:
    """A child graph holding an allocation it does not free is refused; the parent is unchanged."""
    child = t.graph()
    alloc = child.add_mem_alloc(N)
    t.check_equal(t.runtime_type(alloc), NodeType.MEM_ALLOC, "the child's node (the handle the add returned)")
    parent = t.graph()
    before = t.snapshot(graph=parent)
    try:
        with t.under_test():
            parent.add_child_graph(child)
    finally:
        t.check_equal(t.snapshot(graph=parent), before, "the parent graph after the refused child")


@case("memory.exec_set_node_params.alloc_refused", cite=DOC_GRAPH_EXEC_NODE_SET_PARAMS_ALLOWED_CHANGES + " -- memory allocation nodes: "
                                                        "API unsupported",
      apis=("GraphExecNodeSetParams",), requires=("graph_memory_nodes", "node_set_params"),
      raises=errors.NotSupported)
def _(t: CaseContext) -> Any:
    """An allocation node cannot be changed in an executable graph."""
    g, a = _alloc_graph(t, N, free=True)
    exe = t.instantiate(g)
    t.call_under_test(exe.set_node_params, a, size=2 * N)


@case("memory.exec_set_node_params.free_refused", cite=DOC_GRAPH_EXEC_NODE_SET_PARAMS_ALLOWED_CHANGES + " -- memory free nodes: API "
                                                       "unsupported",
      apis=("GraphExecNodeSetParams",), requires=("graph_memory_nodes", "node_set_params"),
      raises=errors.NotSupported)
def _(t: CaseContext) -> Any:
    """A free node cannot be changed in an executable graph."""
    g = t.graph()
    a = g.add_mem_alloc(N)
    f = a.mem_free(a)
    exe = t.instantiate(g)
    t.call_under_test(exe.set_node_params, f, dptr=a)


@case("memory.enable.alloc_node_refused", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphNodeSetEnabled: \"Currently only kernel, "
                                               "memset and memcpy nodes are supported\" -- currently only kernel, memset and memcpy nodes are "
                                               "supported; returns cudaErrorInvalidValue", apis=("GraphNodeSetEnabled",),
      requires=("graph_memory_nodes", "per_node_enable"), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """An allocation node cannot be disabled."""
    g, a = _alloc_graph(t, N, free=True)
    exe = t.instantiate(g)
    t.call_under_test(exe.set_enabled, a, False)


@case("memory.alloc.device_explicit", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphAddMemAllocNode: \"Returns the parameters "
                                           "of a memory alloc node hNode in params_out\" -- poolProps.location names the device the "
                                           "memory is allocated on", apis=("GraphAddMemAllocNode", "GraphMemAllocNodeGetParams"), requires=("graph_memory_nodes",),
      expect=(True, N))
def _(t: CaseContext) -> Any:
    """An allocation node made for the current device by ordinal reads it back."""
    dev = t.rt.current_device().ordinal
    a = t.graph().add_mem_alloc(N, device=dev)
    p = _typed(a)
    return p["device"] == dev, p["bytesize"]


@case("memory.alloc.free_by_node_object", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphAddMemFreeNode: \"Returns the address of a "
                                               "memory free node hNode in dptr_out\" -- dptr - address of memory to free (the address the "
                                               "allocation node returned)", apis=("GraphAddMemAllocNode", "GraphAddMemFreeNode", "GraphMemFreeNodeGetParams"),
      requires=("graph_memory_nodes",), expect=0)
def _(t: CaseContext) -> Any:
    """A free node given the allocation node frees its address: the free node's address, read back, minus
    the address the allocation node's add returned."""
    g = t.graph()
    a = g.add_mem_alloc(N)  # a.dptr: the dptr GraphAddMemAllocNode wrote into its parameters
    f = g.add_mem_free(a, dependencies=[a])
    return _typed(f)["dptr"] - a.dptr


@case("memory.alloc.used_by_two_graphs_sequentially", cite=(DOC_GRAPH_ADD_MEM_ALLOC_NODE_ALLOCATION_FREED + " -- a second graph launched "
                                                            "after the first reads the allocation; \"launching a graph with a "
                                                            "free node for that allocation\" -- and frees it"),
      apis=("GraphAddMemAllocNode", "GraphAddMemFreeNode", "GraphLaunch"), requires=("graph_memory_nodes",),
      expect=[b"\x01" * 8, b"\x02" * 8])
def _(t: CaseContext) -> Any:
    """A graph that reads and frees another graph's allocation sees its memory, and frees it (the first graph
    relaunches)."""
    src, out = _zeroed(t), _zeroed(t)
    ga = t.graph()
    a = ga.add_mem_alloc(N)
    a.memcpy(a.dptr, src, N)
    gb = t.graph()
    c = gb.add_memcpy(out, a.dptr, N)
    c.mem_free(a.dptr)
    ea, eb = t.instantiate(ga), t.instantiate(gb)
    s = t.stream()
    seen = []
    try:
        for v in (1, 2):
            src.copy_from(bytes([v]) * N)
            ea.launch(s)
            eb.launch(s)
            s.synchronize()
            seen.append(out.to_bytes(8))
    except BaseException:
        s.free_async(a.dptr)  # best effort: the allocation a failed free left
        s.synchronize()
        raise
    return seen


@case("memory.pool.default_is_current", cite="CUDA Runtime API 13.5, Device Management, cudaDeviceGetDefaultMemPool / "
                                             "cudaDeviceGetMemPool: \"Returns the last pool provided to cudaDeviceSetMemPool for this "
                                             "device or the device's default memory pool if cudaDeviceSetMemPool has never been called\" -- "
                                             "the current pool of a device is its default pool unless cudaDeviceSetMemPool was called", apis=("DeviceGetDefaultMemPool", "DeviceGetMemPool"),
      expect=(True, 0))
def _(t: CaseContext) -> Any:
    """The device's current memory pool is its default pool (the two handles the runtime returns)."""
    dev = t.rt.current_device().ordinal
    handles = []
    for api, marker in (("DeviceGetDefaultMemPool", 0x1000), ("DeviceGetMemPool", 0x2000)):
        out = t.new("MemPool_t *", t.ffi.cast(f"{t.backend.ops.prefix}MemPool_t", marker))
        t.call(api, out, dev)  # pre-set to distinct non-pools: a runtime that wrote nothing shows them apart
        handles.append(int(t.ffi.cast("uintptr_t", out[0])))
    return handles[0] not in (0, 0x1000), handles[0] - handles[1]


@case("memory.pool.create_defaults", cite=(
          "CUDA Runtime API 13.5, Stream Ordered Memory Allocator, cudaMemPoolGetAttribute: \"stream ordered "
          "dependencies. (default enabled)\" -- cudaMemPoolReuseFollowEventDependencies; \"between the free "
          "and allocation. (default enabled)\" -- cudaMemPoolReuseAllowOpportunistic; \"a piece of memory "
          "released by cudaFreeAsync (default enabled)\" -- cudaMemPoolReuseAllowInternalDependencies; \"on "
          "the next call to stream, event or context synchronize. (default 0)\" -- "
          "cudaMemPoolAttrReleaseThreshold; \"cudaMemPoolAttrUsedMemCurrent: (value type = cuuint64_t) Amount "
          "of memory from the pool that is currently in use by the application\" -- nothing was allocated from "
          "the new pool, so none is in use (0)"), apis=("MemPoolCreate", "MemPoolGetAttribute"),
      expect=(1, 1, 1, 0, 0))
def _(t: CaseContext) -> Any:
    """A new pool has its reuse policies on, no release threshold and nothing used."""
    pool = t.track(t.rt.MemPool())
    return (_pool_attr(t, pool, MemPoolAttr.REUSE_FOLLOW_EVENT_DEPENDENCIES),
            _pool_attr(t, pool, MemPoolAttr.REUSE_ALLOW_OPPORTUNISTIC),
            _pool_attr(t, pool, MemPoolAttr.REUSE_ALLOW_INTERNAL_DEPENDENCIES),
            _pool_attr(t, pool, MemPoolAttr.RELEASE_THRESHOLD), _pool_attr(t, pool, MemPoolAttr.USED_MEM_CURRENT))


@case("memory.pool.attributes_all", cite="CUDA Runtime API 13.5, Stream Ordered Memory Allocator, cudaMemPoolGetAttribute: \"(default "
                                         "enabled) - cudaMemPoolReuseAllowInternalDependencies: (value type = int) Allow "
                                         "cudaMallocAsync to insert new stream dependencies in order to establish the stream ordering "
                                         "required to reuse a piece of memory released by cudaFreeAsync (default enabled). - "
                                         "cudaMemPoolAttrReservedMemCurrent: (value type = cuuint64_t) Amount of backing memory "
                                         "currently allocated for the mempool. - cudaMemPoolAttrReservedMemHigh: (value type = "
                                         "cuuint64_t) High watermark of backing memory allocated for the mempool since the last time "
                                         "it was reset. - cudaMemPoolAttrUsedMemCurrent: (value type = cuuint64_t) Amount of memory "
                                         "from the pool that is currently in use by the application. - cudaMemPoolAttrUsedMemHigh: "
                                         "(value type = cuuint64_t) High watermark of the amount of memory from the pool that was in "
                                         "use by the application since the last time it was reset\" -- "
                                         "cudaMemPoolReuseFollowEventDependencies, cudaMemPoolReuseAllowOpportunistic, "
                                         "cudaMemPoolReuseAllowInternalDependencies (int, default enabled); "
                                         "cudaMemPoolAttrReleaseThreshold (default 0); cudaMemPoolAttrReservedMemCurrent: amount of "
                                         "backing memory currently allocated for the mempool; cudaMemPoolAttrReservedMemHigh: high "
                                         "watermark of backing memory allocated for the mempool since the last reset; "
                                         "cudaMemPoolAttrUsedMemCurrent: amount of memory from the pool that is currently in use by "
                                         "the application; cudaMemPoolAttrUsedMemHigh: high watermark of the amount of memory from the "
                                         "pool that was in use by the application",
      apis=("MemPoolCreate", "MemPoolGetAttribute", "MallocFromPoolAsync"),
      expect={MemPoolAttr.REUSE_FOLLOW_EVENT_DEPENDENCIES: 1, MemPoolAttr.REUSE_ALLOW_OPPORTUNISTIC: 1,
              MemPoolAttr.REUSE_ALLOW_INTERNAL_DEPENDENCIES: 1, MemPoolAttr.RELEASE_THRESHOLD: 0,
              MemPoolAttr.RESERVED_MEM_CURRENT: True, MemPoolAttr.RESERVED_MEM_HIGH: True,
              MemPoolAttr.USED_MEM_CURRENT: True, MemPoolAttr.USED_MEM_HIGH: True})
def _(t: CaseContext) -> Any:
    """All eight attributes of a new pool: the reuse policies on, no threshold, and each of the four
    counters grown by at least an allocation of 1 MiB made from it."""
    pool = t.track(t.rt.MemPool())
    before = {a: _pool_attr(t, pool, a) for a in MemPoolAttr}
    s = t.stream()
    buf = s.malloc_async(1 << 20, pool=pool)
    try:
        s.synchronize()
        during = {a: _pool_attr(t, pool, a) for a in MemPoolAttr}
    finally:
        s.free_async(buf)
        s.synchronize()
    t.note(f"before {before}, with 1 MiB allocated {during}")
    counters = (MemPoolAttr.RESERVED_MEM_CURRENT, MemPoolAttr.RESERVED_MEM_HIGH, MemPoolAttr.USED_MEM_CURRENT,
                MemPoolAttr.USED_MEM_HIGH)
    return {a: (during[a] - before[a] >= 1 << 20 if a in counters else before[a]) for a in MemPoolAttr}


@case("memory.pool.release_threshold", cite="CUDA Runtime API 13.5, Stream Ordered Memory Allocator, cudaMemPoolSetAttribute: \"Supported "
                                            "attributes are: - cudaMemPoolAttrReleaseThreshold: (value type = cuuint64_t) Amount of "
                                            "reserved memory in bytes to hold onto before trying to release memory back to the OS\" -- "
                                            "cudaMemPoolAttrReleaseThreshold: amount of reserved memory in bytes to hold onto before "
                                            "trying to release memory back to the OS",
      apis=("MemPoolSetAttribute", "MemPoolGetAttribute"), expect=(1 << 20, 1 << 24))
def _(t: CaseContext) -> Any:
    """The release threshold reads back what was set (at creation, then later)."""
    pool = t.track(t.rt.MemPool(release_threshold=1 << 20))
    first = _pool_attr(t, pool, MemPoolAttr.RELEASE_THRESHOLD)
    pool.release_threshold = 1 << 24
    return first, _pool_attr(t, pool, MemPoolAttr.RELEASE_THRESHOLD)


@case("memory.pool.set_reuse_policy", cite=("CUDA Runtime API 13.5, Stream Ordered Memory Allocator, cudaMemPoolSetAttribute: "
      "\"cudaMemPoolReuseAllowOpportunistic: (value type = int) Allow reuse of already completed frees when "
      "there is no dependency between the free and allocation\" -- a reuse policy is a settable int: enable "
      "or disable"), apis=("MemPoolSetAttribute", "MemPoolGetAttribute"), expect=(0, 1))
def _(t: CaseContext) -> Any:
    """A reuse policy can be switched off and on."""
    pool = t.track(t.rt.MemPool())
    pool.set_attribute(MemPoolAttr.REUSE_ALLOW_OPPORTUNISTIC, False)
    off = _pool_attr(t, pool, MemPoolAttr.REUSE_ALLOW_OPPORTUNISTIC)
    pool.set_attribute(MemPoolAttr.REUSE_ALLOW_OPPORTUNISTIC, True)
    return off, _pool_attr(t, pool, MemPoolAttr.REUSE_ALLOW_OPPORTUNISTIC)


@case("memory.pool.malloc_from_pool", cite="CUDA Runtime API 13.5, Stream Ordered Memory Allocator, cudaMallocFromPoolAsync: \"Allocates "
                                           "memory from a specified pool with stream ordered semantics\" -- allocates memory from the "
                                           "pool with stream ordered semantics; the allocation is usable by work ordered after it", apis=("MallocFromPoolAsync", "MemsetAsync",
                                                                          "FreeAsync", "MemPoolGetAttribute"),
      expect=(b"\x27" * 8, True, 0))
def _(t: CaseContext) -> Any:
    """Memory from a pool is usable in stream order, counted as used while allocated and not once freed."""
    pool = t.track(t.rt.MemPool())
    out = _zeroed(t)
    s = t.stream()
    buf = s.malloc_async(N, pool=pool)
    try:
        s.memset(buf, 0x27, N)
        s.memcpy(out, buf, N)
        s.synchronize()
        used = _pool_attr(t, pool, MemPoolAttr.USED_MEM_CURRENT)
    finally:
        s.free_async(buf)
        s.synchronize()
    return out.to_bytes(8), used >= N, _pool_attr(t, pool, MemPoolAttr.USED_MEM_CURRENT)


@case("memory.pool.used_after_free", cite=(
          "CUDA Runtime API 13.5, Stream Ordered Memory Allocator, cudaMemPoolGetAttribute: "
          "\"cudaMemPoolAttrUsedMemCurrent: (value type = cuuint64_t) Amount of memory from the pool that is "
          "currently in use by the application\" -- an allocation is in use until freed; CUDA Runtime API "
          "13.5, Stream Ordered Memory Allocator, cudaFreeAsync: \"Inserts a free operation into hStream. The "
          "allocation must not be accessed after stream execution reaches the free\" -- once the stream is "
          "synchronized its execution has passed the free, so the allocation is no longer in use (0)"), apis=("MallocFromPoolAsync", "FreeAsync",
                                                               "MemPoolGetAttribute"), expect=(True, 0))
def _(t: CaseContext) -> Any:
    """An allocation counts as used; after it is freed and the stream synchronized, nothing of the pool is."""
    pool = t.track(t.rt.MemPool())
    s = t.stream()
    buf = s.malloc_async(1 << 20, pool=pool)
    s.synchronize()
    used = _pool_attr(t, pool, MemPoolAttr.USED_MEM_CURRENT)
    s.free_async(buf)
    s.synchronize()
    return used >= 1 << 20, _pool_attr(t, pool, MemPoolAttr.USED_MEM_CURRENT)


@case("memory.pool.threshold_keeps_reserved", cite=DOC_MEM_POOL_SET_ATTRIBUTE_WHEN_MORE + " -- when more than the "
                                                   "release threshold bytes of memory are held by the pool, the "
                                                   "allocator releases memory at the next synchronize (less is kept)",
      apis=("MallocFromPoolAsync", "FreeAsync", "MemPoolGetAttribute"), expect=(0, 4 << 20))
def _(t: CaseContext) -> Any:
    """Below the release threshold, freed memory (no longer used) stays reserved across a synchronize."""
    pool = t.track(t.rt.MemPool(release_threshold=1 << 30))
    s = t.stream()
    buf = s.malloc_async(4 << 20, pool=pool)
    s.free_async(buf)
    s.synchronize()
    # used: none (the free happened); reserved: at least the 4 MiB (min() shows a smaller amount as it is)
    return (_pool_attr(t, pool, MemPoolAttr.USED_MEM_CURRENT),
            min(_pool_attr(t, pool, MemPoolAttr.RESERVED_MEM_CURRENT), 4 << 20))


@case("memory.pool.zero_threshold_releases", cite=DOC_MEM_POOL_SET_ATTRIBUTE_WHEN_MORE + " -- "
                                                  "cudaMemPoolAttrReleaseThreshold (default 0): memory above the "
                                                  "threshold is released back to the OS on the next stream, event "
                                                  "or context synchronize",
      apis=("MallocFromPoolAsync", "FreeAsync", "StreamSynchronize", "MemPoolGetAttribute"), expect=0)
def _(t: CaseContext) -> Any:
    """With a zero threshold, a synchronize after the free releases the pool's memory."""
    # "tries to release": an allocator may keep a granule; CUDA 12.9-13.5 release all of it.
    pool = t.track(t.rt.MemPool())
    s = t.stream()
    buf = s.malloc_async(4 << 20, pool=pool)
    s.free_async(buf)
    s.synchronize()
    return _pool_attr(t, pool, MemPoolAttr.RESERVED_MEM_CURRENT)


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
    kept = _pool_attr(t, pool, MemPoolAttr.RESERVED_MEM_CURRENT) >= 4 << 20
    pool.trim(0)
    return kept, _pool_attr(t, pool, MemPoolAttr.RESERVED_MEM_CURRENT)


@case("memory.pool.trim_keeps_outstanding", cite=POOL_TRIM + "the allocator cannot release OS allocations that "
      "back outstanding asynchronous allocations", apis=("MemPoolTrimTo", "MemPoolGetAttribute"),
      expect=4 << 20)
def _(t: CaseContext) -> Any:
    """trim(0) keeps the memory of an allocation still in use."""
    pool = t.track(t.rt.MemPool())
    s = t.stream()
    buf = s.malloc_async(4 << 20, pool=pool)
    s.synchronize()
    try:
        pool.trim(0)
        kept = min(_pool_attr(t, pool, MemPoolAttr.RESERVED_MEM_CURRENT), 4 << 20)  # less shows as it is
    finally:
        s.free_async(buf)
        s.synchronize()
    return kept


@case("memory.pool.reset_used_high", cite=DOC_MEM_POOL_SET_ATTRIBUTE_ILLEGAL_SET + " -- "
                                          "cudaMemPoolAttrUsedMemHigh: high watermark of the used memory since "
                                          "the last reset; it can only be reset to zero", apis=("MemPoolSetAttribute",
                                                                         "MemPoolGetAttribute"),
      expect=(True, 0))
def _(t: CaseContext) -> Any:
    """The used high watermark records an allocation and resets to zero once nothing is used."""
    pool = t.track(t.rt.MemPool())
    s = t.stream()
    buf = s.malloc_async(1 << 20, pool=pool)
    s.free_async(buf)
    s.synchronize()
    high = _pool_attr(t, pool, MemPoolAttr.USED_MEM_HIGH) >= 1 << 20
    pool.set_attribute(MemPoolAttr.USED_MEM_HIGH, 0)
    return high, _pool_attr(t, pool, MemPoolAttr.USED_MEM_HIGH)


@case("memory.pool.set_used_current_refused", cite=(
          "CUDA Runtime API 13.5, Stream Ordered Memory Allocator, cudaMemPoolSetAttribute: \"Supported "
          "attributes are\" ... \"cudaSuccess, cudaErrorInvalidValue\" -- the list (release threshold, the "
          "three reuse policies, the two high watermarks) omits cudaMemPoolAttrUsedMemCurrent, and the return "
          "list names cudaErrorInvalidValue; CUDA Runtime API 13.5, Data types, enum cudaError: "
          "\"cudaErrorInvalidValue: This indicates that one or more of the parameters passed to the API call "
          "is not within an acceptable range of values\" -- an attribute the setter does not support is such a "
          "value"), apis=("MemPoolSetAttribute",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Setting the current used amount of a pool is refused."""
    with t.under_test():
        t.track(t.rt.MemPool()).set_attribute(MemPoolAttr.USED_MEM_CURRENT, 0)


@case("memory.pool.reset_high_to_nonzero_refused", cite=DOC_MEM_POOL_SET_ATTRIBUTE_ILLEGAL_SET + " -- "
                                                        "cudaMemPoolAttrReservedMemHigh can only be reset to zero; "
                                                        "returns cudaErrorInvalidValue", apis=("MemPoolSetAttribute",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Setting a pool's high watermark to a non-zero value is refused."""
    with t.under_test():
        t.track(t.rt.MemPool()).set_attribute(MemPoolAttr.RESERVED_MEM_HIGH, 4096)


@case("memory.pool.max_size_exceeded", cite=(
          "Observed, cudaMallocFromPoolAsync: the error code (deviations.OBSERVATIONS); CUDA Runtime API 13.5, "
          "Stream Ordered Memory Allocator, cudaMemPoolCreate: \"Applications can control the maximum size of "
          "the pool by specifying a non-zero value for cudaMemPoolProps::maxSize\" -- an allocation beyond it "
          "cannot come from the pool; CUDA Runtime API 13.5, Stream Ordered Memory Allocator, "
          "cudaMallocFromPoolAsync: \"cudaSuccess, cudaErrorInvalidValue, cudaErrorNotSupported, "
          "cudaErrorOutOfMemory\" -- the return list; no sentence states which code an allocation beyond "
          "maxSize gets"),
      apis=("MemPoolCreate", "MallocFromPoolAsync"), raises=errors.OutOfMemory)
def _(t: CaseContext) -> Any:
    """An allocation larger than the pool's maximum size is refused."""
    # maxSize is honoured from CUDA 12.2 (12.9-13.5: cudaErrorMemoryAllocation); HIP may ignore it.
    pool = t.track(t.rt.MemPool(max_size=2 << 20))
    s = t.stream()
    with t.under_test():
        buf = s.malloc_async(64 << 20, pool=pool)
    s.free_async(buf)  # reached only when the allocation was (wrongly) made
    s.synchronize()


@case("memory.pool.invalid_device", cite=(
          "Observed, cudaMemPoolCreate: a pool located on device 4096 (no such device) is refused with "
          "cudaErrorInvalidValue (deviations.OBSERVATIONS); CUDA Runtime API 13.5, Stream Ordered Memory "
          "Allocator, cudaMemPoolCreate: \"The poolProps determines the properties of the pool such as the "
          "backing device and IPC capabilities\" -- no documentation sentence states that a device ordinal "
          "that does not exist is refused (cudaErrorInvalidValue is only in the return list)"), apis=("MemPoolCreate",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A pool on a device that does not exist is refused."""
    # CUDA 12.9-13.5: cudaErrorInvalidValue, a code the return list names (the refusal is an observation).
    with t.under_test():
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


@case("memory.pool.malloc_async_current_pool", cite="CUDA Runtime API 13.5, Stream Ordered Memory Allocator, cudaMallocAsync: \"The allocation "
                                                    "comes from the memory pool associated with the stream's device\" -- allocates from the memory "
                                                    "pool current to the stream's device", apis=("MallocAsync", "FreeAsync", "DeviceGetMemPool", "MemPoolGetAttribute"),
      expect=(b"\x28" * 8, True, 0))
def _(t: CaseContext) -> Any:
    """malloc_async without a pool allocates from the device's current pool (its used memory grows, then
    returns to where it was once freed), usable in stream order."""
    pool = t.rt.MemPool.current()
    out = _zeroed(t)
    s = t.stream()
    s.synchronize()
    used0 = _pool_attr(t, pool, MemPoolAttr.USED_MEM_CURRENT)  # device-wide: compared as differences
    buf = s.malloc_async(N)
    try:
        s.memset(buf, 0x28, N)
        s.memcpy(out, buf, N)
        s.synchronize()
        grew = _pool_attr(t, pool, MemPoolAttr.USED_MEM_CURRENT) - used0 >= N
    finally:
        s.free_async(buf)
        s.synchronize()
    return out.to_bytes(8), grew, _pool_attr(t, pool, MemPoolAttr.USED_MEM_CURRENT) - used0


@case("memory.pool.captured_alloc_from_pool", cite="CUDA Runtime API 13.5, Stream Ordered Memory Allocator, cudaMallocFromPoolAsync: \"During "
                                                   "stream capture, this function results in the creation of an allocation node\" -- during "
                                                   "stream capture, this function results in the creation of an allocation node; the allocation "
                                                   "comes from the given pool",
      apis=("StreamBeginCapture", "MallocFromPoolAsync", "FreeAsync", "GraphLaunch", "GraphNodeGetType"),
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
    return sorted(getattr(t.runtime_type(n), "value", str(t.runtime_type(n))) for n in g.nodes()), out.to_bytes(8)
