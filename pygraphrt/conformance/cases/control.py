"""Conformance cases, area ``control``: conditional nodes, external-semaphore nodes, device launch.

Conditional nodes (CUDA >= 12.4; IF-ELSE and SWITCH >= 12.8): a kernel sets the node's
conditional handle with ``cudaGraphSetConditional``; the node runs its body graphs accordingly.
"""

from __future__ import annotations

from typing import Any

from pygraphrt import errors
from pygraphrt.enums import InstantiateFlags, NodeType, UpdateResult

from .._case import CaseContext, case

_GM = "CUDA Runtime API 13.0, Graph Management"
HANDLE = f"{_GM}, cudaGraphConditionalHandleCreate: "
ADD_NODE = f"{_GM}, cudaGraphAddNode (cudaConditionalNodeParams): "
PG_COND = "CUDA Programming Guide, CUDA Graphs, Conditional Graph Nodes: "
CLONE = f"{_GM}, cudaGraphClone: "
INSTANTIATE = f"{_GM}, cudaGraphInstantiateWithFlags: "
UPDATE = f"{_GM}, cudaGraphExecUpdate: "
EXT_SEM = "CUDA Runtime API 13.0, External Resource Interoperability, cudaImportExternalSemaphore: "
EXT_NODE = f"{_GM}, cudaGraphAddExternalSemaphoresSignalNode: "
PYGRAPHRT = "pygraphrt README, Conditional nodes: "
POLICY = "pygraphrt policy (graph/_conditional.py create_handle), not runtime behaviour: "
CLONE_NOTE = (f"{_GM}, cudaGraphClone (12.9-13.5 headers): \"Cloning is not supported for graphs which contain "
              "memory allocation nodes, memory free nodes, or conditional nodes\" (the error class is the one "
              "the GPU runs returned: cudaErrorNotSupported on 12.9, 13.0 and 13.5, driver 580)")
SIZES = (f"{_GM}, cudaConditionalNodeParams::size: \"Allowed values are 1 for cudaGraphCondTypeWhile, 1 or 2 "
         "for cudaGraphCondTypeIf, or any value greater than zero for cudaGraphCondTypeSwitch\"; phGraph_out: "
         "\"CUDA-owned array populated with conditional node child graphs during creation of the node\"")

COND = ("conditional_nodes",)
COND2 = ("conditional_if_else_switch",)
ADD_APIS = ("GraphConditionalHandleCreate", "GraphAddNode")

_SOURCE = r"""
extern "C" __global__ void set_value(cudaGraphConditionalHandle h, unsigned int v) {
    cudaGraphSetConditional(h, v); }
extern "C" __global__ void count_down(cudaGraphConditionalHandle h, unsigned int *left, unsigned int *runs) {
    *runs += 1;  unsigned int l = --(*left);  cudaGraphSetConditional(h, l > 0); }
extern "C" __global__ void arm(cudaGraphConditionalHandle h, unsigned int *left, unsigned int *runs,
                               unsigned int n) {
    *left = n;  *runs = 0;  cudaGraphSetConditional(h, n > 0); }
"""
def _kernels(t: CaseContext) -> dict[str, Any]:
    """This area's kernels, compiled once per backend and kept with the standard kernels
    (so the runner's leak check knows them as the suite's own)."""
    from pygraphrt import _runtime
    from pygraphrt.graph import SET_CONDITIONAL_SOURCE

    from .._case import _compiled

    key: Any = ("control", id(_runtime.active()))
    if key not in _compiled:
        prog = t.rt.Program(SET_CONDITIONAL_SOURCE + _SOURCE, name="pygraphrt_conformance_control.cu")
        _compiled[key] = {
            "set_value": prog.kernel("set_value", signature="cudaGraphConditionalHandle h, unsigned int v"),
            "count_down": prog.kernel("count_down", signature="cudaGraphConditionalHandle h, "
                                                              "unsigned int *left, unsigned int *runs"),
            "arm": prog.kernel("arm", signature="cudaGraphConditionalHandle h, unsigned int *left, "
                                                "unsigned int *runs, unsigned int n"),
        }
    return _compiled[key]


def _u32s(buf: Any, n: int) -> list[int]:
    import struct

    return list(struct.unpack(f"<{n}I", buf.to_bytes(4 * n)))


def _launch(t: CaseContext, g: Any) -> None:
    s = t.stream()
    exe = t.instantiate(g)
    exe.launch(s)
    s.synchronize()


def _run_switch(t: CaseContext, kind: str, size: int, value: int) -> list[int]:
    """Which bodies of a ``kind`` node ran for ``value`` (1 = ran)."""
    k = _kernels(t)
    marks = t.malloc(4 * max(size, 2))
    marks.copy_from(bytes(4 * max(size, 2)))
    g = t.graph()
    h = g.conditional_handle()
    setter = g.add_kernel(k["set_value"], 1, 1, [h, value])
    node = g.add_conditional(kind, h, size if kind == "switch" else None, dependencies=[setter])
    _check_conditional(t, node)
    for i, body in enumerate(node.bodies):
        body.add_memset(marks.ptr + 4 * i, 1, 1)
    _launch(t, g)
    return [v & 0xFF for v in _u32s(marks, node.size)]


def _check_conditional(t: CaseContext, node: Any) -> None:
    """The runtime lists ``node`` as a conditional node (read through GraphNodeGetType): a node handle
    the runtime did not make (or moved) fails here, not silently later."""
    t.check_equal(t.runtime_type(node), NodeType.CONDITIONAL, "the added node's type as the runtime reports it")


def _rt_count(t: CaseContext, graph: Any) -> int:
    """The graph's node count as GraphGetNodes writes it, the output pre-filled with a value no small
    graph has (a call that writes nothing must not read as an empty body)."""
    unwritten = 0x5EED
    n = t.ffi.new("size_t *", unwritten)
    t.call("GraphGetNodes", graph.handle, t.NULL, n)
    t.check(int(n[0]) != unwritten, "GraphGetNodes reported success but wrote no count")
    return int(n[0])


# Documentation passages several cases quote (each case adds its own gloss after them).
DOC_GRAPH_CONDITIONAL_HANDLE_CREATE_APPLIED_AT = ("CUDA Runtime API 13.5, Graph Management, "
                                                  "cudaGraphConditionalHandleCreate: \"Applied at the beginning "
                                                  "of each graph execution if cudaGraphCondAssignDefault is "
                                                  "set in flags\"")


# ------------------------------------------------------------------ handles and nodes
@case("control.handle.other_graph_refused", kind="binding",
      cite=ADD_NODE + "the handle must belong to the graph the node is "
      "added to (pygraphrt checks before the call)", apis=ADD_APIS, requires=COND, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A conditional node cannot use another graph's handle."""
    g, other = t.graph(), t.graph()
    g.add_if(other.conditional_handle())


@case("control.handle.default_needs_reset", kind="binding",
      cite=POLICY + "a non-zero default without reset_each_launch is refused before "
      "cudaGraphConditionalHandleCreate is called, because the runtime would never apply it (" + HANDLE +
      "defaultLaunchValue is \"Applied at the beginning of each graph execution if cudaGraphCondAssignDefault "
      "is set in flags\"; the runtime documents no refusal of the combination)",
      apis=("GraphConditionalHandleCreate",), requires=COND, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """pygraphrt refuses a default value without reset-each-launch (the runtime would never apply it)."""
    g = t.graph()
    t.call_under_test(g.conditional_handle, 5, reset_each_launch=False)


@case("control.handle.default_out_of_range", kind="binding", cite=HANDLE + "defaultLaunchValue is an unsigned int",
      apis=("GraphConditionalHandleCreate",), requires=COND, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A default value beyond 32 bits is refused."""
    t.graph().conditional_handle(1 << 32)


@case("control.switch.size_zero", kind="binding", cite=ADD_NODE + "size is the number of body graphs, at least 1",
      apis=ADD_APIS, requires=COND2, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A SWITCH node with no bodies is refused."""
    g = t.graph()
    g.add_switch(g.conditional_handle(), 0)


@case("control.node.unknown_kind", kind="binding", cite=ADD_NODE + "type is cudaGraphCondTypeIf, While or Switch",
      apis=ADD_APIS, requires=COND, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """An unknown conditional kind is refused."""
    g = t.graph()
    g.add_conditional("until", g.conditional_handle())


@case("control.node.not_a_handle", kind="binding", cite=ADD_NODE + "handle is a cudaGraphConditionalHandle",
      apis=ADD_APIS, requires=COND, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A plain integer is not accepted as a handle."""
    t.graph().add_while(12345)


@case("control.node.body_index_out_of_range", kind="binding",
      cite=PYGRAPHRT + "node.capture(stream, body=i) needs 0 <= i < size",
      apis=ADD_APIS, requires=COND, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Capturing into a body the node does not have is refused."""
    g = t.graph()
    node = g.add_if(g.conditional_handle())
    node.capture(t.stream(), body=1)


@case("control.node.refusals_leave_nothing", kind="binding",
      cite=PYGRAPHRT + "a switch of size 0, another graph's handle and an unknown kind are refused by "
      "pygraphrt before cudaGraphAddNode; the graph is left as it was", apis=ADD_APIS, requires=COND2,
      expect=[(0, 0)] * 4)
def _(t: CaseContext) -> Any:
    """pygraphrt's refusals of conditional adds leave the graph empty (node and edge counts read from the
    runtime before and after each refusal)."""
    g, other = t.graph(), t.graph()
    h = g.conditional_handle()
    counts = [(t.snapshot(graph=g).nodes, t.snapshot(graph=g).edges)]
    for bad in (lambda: g.add_switch(h, 0), lambda: g.add_if(other.conditional_handle()),
                lambda: g.add_conditional("until", h)):
        t.raises(errors.InvalidValue, bad)
        snap = t.snapshot(graph=g)
        counts.append((snap.nodes, snap.edges))
    return counts


@case("control.node.shapes", cite=SIZES,
      apis=ADD_APIS + ("GraphNodeGetType", "GraphGetNodes"), requires=COND2,
      expect=[("if", NodeType.CONDITIONAL, [0]), ("if_else", NodeType.CONDITIONAL, [0, 0]),
              ("while", NodeType.CONDITIONAL, [0]), ("switch", NodeType.CONDITIONAL, [0, 0, 0, 0])])
def _(t: CaseContext) -> Any:
    """Each kind of node is added with its allowed size; the runtime fills phGraph_out with that many
    distinct body graphs, each empty (node counts read from the runtime), and lists the node as
    conditional.  Where the runtime has the generic readback (cudaGraphNodeGetParams, CUDA >= 13.2),
    the size it reports is checked too."""
    from pygraphrt.capabilities import capabilities
    from pygraphrt.graph._readback import generic_params

    g = t.graph()
    out = []
    for kind, size in (("if", None), ("if_else", None), ("while", None), ("switch", 4)):
        n = g.add_conditional(kind, g.conditional_handle(), size)
        handles = [int(t.ffi.cast("uintptr_t", b.handle)) for b in n.bodies]
        t.check(0 not in handles and len(set(handles)) == len(handles),
                f"{kind}: the runtime's body graphs are distinct, non-NULL handles: {handles}")
        if capabilities().node_get_params:
            read = generic_params(n)
            t.check(read is not None, f"{kind}: cudaGraphNodeGetParams read the conditional node")
            t.check_equal((read or {}).get("size"), len(handles), f"{kind}: size read back by the runtime")
        out.append((kind, t.runtime_type(n), [_rt_count(t, b) for b in n.bodies]))
    return out


@case("control.node.runtime_type",
      cite="CUDA Runtime API 13.5, Graph Management, cudaGraphNodeGetType / cudaGraphNodeType: \"Returns the node "
           "type of node in pType\" ... cudaGraphNodeTypeConditional: \"May be used to implement a conditional "
           "execution path or loop inside of a graph\" -- conditional nodes report cudaGraphNodeTypeConditional",
      apis=ADD_APIS + ("GraphNodeGetType", "GraphGetNodes"), requires=COND,
      expect=(NodeType.CONDITIONAL, [NodeType.CONDITIONAL], True))
def _(t: CaseContext) -> Any:
    """The runtime reports the type of the node cudaGraphAddNode returned, and lists that node (by handle)."""
    g = t.graph()
    node = g.add_while(g.conditional_handle())
    listed = g.nodes()
    address = (lambda n: int(t.ffi.cast("uintptr_t", n.handle)))
    return t.runtime_type(node), [t.runtime_type(n) for n in listed], [address(n) for n in listed] == [address(node)]


@case("control.clone.refused", cite=CLONE_NOTE, apis=ADD_APIS + ("GraphClone", "GraphNodeGetType"),
      requires=COND, raises=errors.NotSupported)
def _(t: CaseContext) -> Any:
    """Cloning a graph that holds a conditional node is refused by the runtime; the graph is unchanged."""
    g = t.graph()
    _check_conditional(t, g.add_if(g.conditional_handle()))
    before = t.snapshot(graph=g)
    try:
        with t.under_test():
            t.track(g.clone())
    finally:
        t.check_equal(t.snapshot(graph=g), before, "the graph after the refused clone")


# ------------------------------------------------------------------ what runs
@case("control.if.runs_when_set", cite=PG_COND + "an IF node runs its body when the value is non-zero",
      apis=ADD_APIS + ("GraphLaunch",), requires=COND + ("kernels",), expect=([0], [1], [1]))
def _(t: CaseContext) -> Any:
    """IF: value 0 skips the body, 1 and 9 run it."""
    return tuple(_run_switch(t, "if", 1, v) for v in (0, 1, 9))


@case("control.if_else.picks_a_branch", cite=PG_COND + "IF with two bodies runs the second when the value is 0",
      apis=ADD_APIS + ("GraphLaunch",), requires=COND2 + ("kernels",), expect=([0, 1], [1, 0]))
def _(t: CaseContext) -> Any:
    """IF-ELSE: 0 runs body 1, non-zero runs body 0."""
    return tuple(_run_switch(t, "if_else", 2, v) for v in (0, 3))


@case("control.switch.each_value", cite=PG_COND + "a SWITCH node runs body n for value n, none when out of range",
      apis=ADD_APIS + ("GraphLaunch",), requires=COND2 + ("kernels",),
      expect=([1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]))
def _(t: CaseContext) -> Any:
    """SWITCH(3): values 0..2 pick their body; 3 and 100 run nothing."""
    return tuple(_run_switch(t, "switch", 3, v) for v in (0, 1, 2, 3, 100))


@case("control.while.iterations", cite=PG_COND + "a WHILE node repeats its body while the value is non-zero, "
      "checked before each iteration", apis=ADD_APIS + ("GraphLaunch", "GraphExecKernelNodeSetParams"),
      requires=COND + ("kernels",), expect=[0, 1, 7, 300])
def _(t: CaseContext) -> Any:
    """WHILE armed with n runs exactly n iterations (n set per launch on the executable graph)."""
    k = _kernels(t)
    state = t.malloc(8)
    g = t.graph()
    h = g.conditional_handle()
    arm = g.add_kernel(k["arm"], 1, 1, [h, state, state.ptr + 4, 0])
    loop = g.add_while(h, dependencies=[arm])
    _check_conditional(t, loop)
    loop.bodies[0].add_kernel(k["count_down"], 1, 1, [h, state, state.ptr + 4])
    s = t.stream()
    exe = t.instantiate(g)
    runs = []
    for n in (0, 1, 7, 300):
        exe.set_kernel_params(arm, args=[h, state, state.ptr + 4, n])
        exe.launch(s)
        s.synchronize()
        runs.append(_u32s(state, 2)[1])
    return runs


@case("control.handle.default_each_launch", cite=DOC_GRAPH_CONDITIONAL_HANDLE_CREATE_APPLIED_AT + " -- with "
                                                 "cudaGraphCondAssignDefault the value is reset to "
                                                 "defaultLaunchValue at the start of each launch", apis=ADD_APIS + ("GraphLaunch",), requires=COND,
      expect=[7, 7, 7])
def _(t: CaseContext) -> Any:
    """An IF whose handle defaults to 1 at every launch runs its body at every launch."""
    mark = t.malloc(4)
    g = t.graph()
    node = g.add_if(g.conditional_handle(1, reset_each_launch=True))
    _check_conditional(t, node)
    node.bodies[0].add_memset(mark, 7, 4)
    s = t.stream()
    exe = t.instantiate(g)
    seen = []
    for _ in range(3):
        mark.copy_from(bytes(4))
        exe.launch(s)
        s.synchronize()
        seen.append(mark.to_bytes()[0])
    return seen


@case("control.handle.default_zero_skips", cite=DOC_GRAPH_CONDITIONAL_HANDLE_CREATE_APPLIED_AT + " -- a handle reset to 0 at "
                                                "each launch leaves an IF body unrun unless a kernel sets it", apis=ADD_APIS + ("GraphLaunch",), requires=COND, expect=(9, 0))
def _(t: CaseContext) -> Any:
    """An IF whose handle resets to 0 and that no kernel sets does not run its body, while a memset beside
    it in the same graph runs (the launch happened)."""
    mark, witness = t.malloc(4), t.malloc(4)
    mark.copy_from(bytes(4))
    witness.copy_from(bytes(4))
    g = t.graph()
    node = g.add_if(g.conditional_handle(0, reset_each_launch=True))
    _check_conditional(t, node)
    node.bodies[0].add_memset(mark, 7, 4)
    g.add_memset(witness, 9, 4)
    _launch(t, g)
    return witness.to_bytes()[0], mark.to_bytes()[0]


@case("control.nested.while_in_if", cite=PG_COND + "conditional nodes nest; a body's node uses a handle of "
      "the body graph", apis=ADD_APIS + ("GraphLaunch",), requires=COND + ("kernels",), expect=(4, 0))
def _(t: CaseContext) -> Any:
    """A WHILE inside an IF runs when the IF is true, and not at all when it is false."""
    k = _kernels(t)
    state = t.malloc(8)
    g = t.graph()
    outer = g.conditional_handle()
    setter = g.add_kernel(k["set_value"], 1, 1, [outer, 1])
    branch = g.add_if(outer, dependencies=[setter])
    _check_conditional(t, branch)
    inner = branch.bodies[0].conditional_handle()
    arm = branch.bodies[0].add_kernel(k["arm"], 1, 1, [inner, state, state.ptr + 4, 4])
    loop = branch.bodies[0].add_while(inner, dependencies=[arm])
    _check_conditional(t, loop)
    loop.bodies[0].add_kernel(k["count_down"], 1, 1, [inner, state, state.ptr + 4])
    s = t.stream()
    exe = t.instantiate(g)
    exe.launch(s)
    s.synchronize()
    first = _u32s(state, 2)[1]
    state.copy_from(bytes(8))
    exe.set_kernel_params(setter, args=[outer, 0])
    exe.launch(s)
    s.synchronize()
    return first, _u32s(state, 2)[1]


@case("control.capture.equals_explicit", cite=PG_COND + "conditional nodes may be created during stream "
      "capture and their bodies captured", apis=ADD_APIS + ("StreamGetCaptureInfo",
      "StreamUpdateCaptureDependencies", "StreamBeginCaptureToGraph", "GraphNodeGetType"),
      requires=COND + ("kernels", "capture_to_graph"),
      expect=([NodeType.KERNEL, NodeType.CONDITIONAL, NodeType.MEMSET],
              [(NodeType.KERNEL, NodeType.CONDITIONAL), (NodeType.CONDITIONAL, NodeType.MEMSET)], 5))
def _(t: CaseContext) -> Any:
    """A WHILE inserted at a capture's current point sits between the captured work before and after it."""
    k = _kernels(t)
    state, tail = t.malloc(8), t.malloc(4)
    s, s2 = t.stream(), t.stream()
    with s.capture() as cap:
        h = cap.conditional_handle()
        s.launch(k["arm"], 1, 1, h, state, state.ptr + 4, 5)
        loop = cap.add_while(h)
        with loop.capture(s2):
            s2.launch(k["count_down"], 1, 1, h, state, state.ptr + 4)
        s.memset(tail, 1, 4)
    g = t.track(cap.graph)
    order = [NodeType.KERNEL, NodeType.CONDITIONAL, NodeType.MEMSET]
    rank = (lambda x: order.index(x) if x in order else len(order))
    types = sorted((t.runtime_type(n) for n in g.nodes()), key=rank)
    # the edges as the runtime lists them, by the runtime's node types: the memset must follow the
    # WHILE (the capture's dependencies were moved onto it), not the kernel before it
    edges = sorted(((t.runtime_type(a), t.runtime_type(b)) for a, b, *_ in g.edges()),
                   key=lambda e: (rank(e[0]), rank(e[1])))
    _launch(t, g)
    return types, edges, _u32s(state, 2)[1]


@case("control.update.body_memset_value",
      cite="CUDA Runtime API 13.5, Graph Management, cudaGraphExecUpdate: \"For 2d memsets, only address "
           "and assigned value may be updated ... For 1d memsets, updating dimensions is also allowed ... "
           "Changing parameters of nodes within the conditional body graph is subject to the rules above\" "
           "-- a memset inside an IF body is updated under the memset rules: its assigned value may change",
      apis=ADD_APIS + ("GraphExecUpdate",), requires=COND,
      expect=(UpdateResult.SUCCESS, 5))
def _(t: CaseContext) -> Any:
    """Exec update changes a memset value inside an IF body."""
    buf = t.malloc(4)

    def build(value: int) -> Any:
        g = t.graph()
        node = g.add_if(g.conditional_handle(1, reset_each_launch=True))
        _check_conditional(t, node)
        node.bodies[0].add_memset(buf, value, 4)
        return g

    s = t.stream()
    exe = t.instantiate(build(3))
    result = exe.update(build(5))
    exe.launch(s)
    s.synchronize()
    return result, buf.to_bytes()[0]


@case("control.device_launch.host_node_refused", cite=INSTANTIATE + "graphs instantiated for launch on the "
      "device: \"The graph can only contain kernel nodes, memcpy nodes, memset nodes, and child graph nodes\" "
      "(the error class is the one the GPU runs returned: cudaErrorInvalidValue on 12.9, 13.0 and 13.5)",
      apis=("GraphInstantiateWithFlags",), requires=("device_launch",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """DEVICE_LAUNCH instantiation of a graph with a host node is refused by the instantiation itself."""
    g = t.graph()
    g.add_host(lambda: None)
    t.call_under_test(t.instantiate, g, InstantiateFlags.DEVICE_LAUNCH)


@case("control.device_launch.memset_graph", cite=INSTANTIATE + "graphs instantiated for launch on the "
      "device \"can only contain kernel nodes, memcpy nodes, memset nodes, and child graph nodes\" and \"must "
      "contain at least one kernel, memcpy, or memset node\"",
      apis=("GraphInstantiateWithFlags", "GraphUpload", "GraphExecGetFlags"), requires=("device_launch",),
      expect=(True, True))
def _(t: CaseContext) -> Any:
    """A memset graph instantiates for device launch and uploads."""
    g = t.graph()
    g.add_memset(t.malloc(64), 1, 64)
    exe = t.instantiate(g, InstantiateFlags.DEVICE_LAUNCH)
    s = t.stream()
    exe.upload(s)
    s.synchronize()
    # exe.flags reads cudaGraphExecGetFlags; and the upload completed on the stream
    return InstantiateFlags.DEVICE_LAUNCH in exe.flags, s.is_done


# ------------------------------------------------------------------ external semaphores
@case("control.ext_sem.unknown_type", kind="binding", cite=EXT_SEM + "type is a cudaExternalSemaphoreHandleType",
      apis=("ImportExternalSemaphore",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """An unknown semaphore type is refused."""
    t.track(t.rt.ExternalSemaphore("semaphore", fd=3))


@case("control.ext_sem.fd_required", kind="binding",
      cite=EXT_SEM + "the fd types take handle.fd", apis=("ImportExternalSemaphore",),
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """An fd semaphore without an fd is refused."""
    t.track(t.rt.ExternalSemaphore("timeline_fd"))


@case("control.ext_sem.import_not_a_semaphore",
      cite=EXT_SEM + "returns \"cudaSuccess, cudaErrorInvalidResourceHandle, cudaErrorOperatingSystem\": an fd "
      "that is not a semaphore of the given type is not a valid handle to import (the GPU runs return "
      "cudaErrorUnknown instead: a deviation, deviations.py)", apis=("ImportExternalSemaphore",),
      requires=("external_semaphore_nodes",), raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """Importing /dev/null as a timeline semaphore is refused by the runtime (and leaves the fd to the caller).

    Requires external-semaphore nodes as the nearest capability: the simulator has neither those nor
    cudaImportExternalSemaphore, every CUDA runtime here has both."""
    import os

    fd = os.open("/dev/null", os.O_RDONLY)
    try:
        with t.under_test():
            t.track(t.rt.ExternalSemaphore("timeline_fd", fd=fd))
    finally:
        os.close(fd)


@case("control.ext_sem.node_needs_semaphores", kind="binding", cite=EXT_NODE + "numExtSems semaphores, at least one",
      apis=("GraphAddExternalSemaphoresSignalNode",), requires=("external_semaphore_nodes",),
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A signal node with no semaphores is refused."""
    t.graph().add_external_semaphore_signal([])


@case("control.ext_sem.node_wrong_item", kind="binding",
      cite=EXT_NODE + "each entry pairs a semaphore with its parameters",
      apis=("GraphAddExternalSemaphoresWaitNode",), requires=("external_semaphore_nodes",),
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A wait node given something other than SemaphoreWait entries is refused."""
    t.graph().add_external_semaphore_wait([42])
