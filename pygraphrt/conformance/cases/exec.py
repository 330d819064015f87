"""Conformance cases, area ``exec``: executable graphs.

Instantiate (each flag, the documented combinations, ``GraphInstantiateWithParams``),
``exec.flags``, launch and upload on streams, relaunch, closed executables and streams,
``synchronize``; exec update (``exe.update(g2)``) with its result per node type and
rule (SUCCESS for parameter-only changes, TOPOLOGY_CHANGED, NODE_TYPE_CHANGED,
PARAMETERS_CHANGED, and the error node); the per-node exec setters (memset, memcpy,
host, child graph, event, generic) affecting only that executable graph, checked by
reading the memory back; enable / disable.  Kernel-node setters and kernel updates are
in the ``kernels`` area, graph-memory rules of instantiate and launch in ``memory``.

Conventions (as in :mod:`.graph`): resources come from the context, ``t.call`` reaches
the runtime without pygraphrt's checks, ``GraphRTError`` where the documentation only
says "an error", and ``# unsure:`` marks outcomes to look at first after a GPU run.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from pygraphrt import errors
from pygraphrt.enums import InstantiateFlags, UpdateResult

from .._case import CaseContext, Snapshot, case
from .edges import DOC_GRAPH_INSTANTIATE_WITH_FLAGS_GRAPH_VALIDATED

N = 4096  # bytes per scratch buffer

_RT = "CUDA Runtime API 13.0, Graph Management"
INSTANTIATE = f"{_RT}, cudaGraphInstantiateWithFlags: "
WITH_PARAMS = f"{_RT}, cudaGraphInstantiateWithParams: "
GET_FLAGS = f"{_RT}, cudaGraphExecGetFlags: "
LAUNCH = f"{_RT}, cudaGraphLaunch: "
UPLOAD = f"{_RT}, cudaGraphUpload: "
EXEC_DESTROY = f"{_RT}, cudaGraphExecDestroy: "
UPDATE = f"{_RT}, cudaGraphExecUpdate: "
SET_MEMSET = f"{_RT}, cudaGraphExecMemsetNodeSetParams: "
SET_MEMCPY = f"{_RT}, cudaGraphExecMemcpyNodeSetParams1D: "
SET_HOST = f"{_RT}, cudaGraphExecHostNodeSetParams: "
SET_CHILD = f"{_RT}, cudaGraphExecChildGraphNodeSetParams: "
SET_RECORD = f"{_RT}, cudaGraphExecEventRecordNodeSetEvent: "
SET_WAIT = f"{_RT}, cudaGraphExecEventWaitNodeSetEvent: "
SET_NODE = f"{_RT}, cudaGraphExecNodeSetParams: "
ENABLE = f"{_RT}, cudaGraphNodeSetEnabled: "
GET_ENABLED = f"{_RT}, cudaGraphNodeGetEnabled: "
PYGRAPHRT = "pygraphrt exec API: "
PYCHECK = PYGRAPHRT + "checked before any runtime call, InvalidValue"
SAME_GRAPH = ("the node is identified by the corresponding node in the non-executable graph from which "
              "the executable graph was instantiated")
ONLY_THIS = "the modifications only affect future launches of hGraphExec; node is not modified by this call"


# ---------------------------------------------------------------------------- helpers
def _typed(node: Any) -> dict[str, Any]:
    """The node's parameters from the runtime's type-specific getter (``GraphMemsetNodeGetParams``,
    ``GraphMemcpyNodeGetParams``, ``GraphHostNodeGetParams``, ...) on every runtime: ``node.params``
    asks the generic ``GraphNodeGetParams`` first where the runtime has it (CUDA >= 13.2)."""
    from pygraphrt.graph._readback import typed_params

    return typed_params(node)


def _flags(t: CaseContext, exe: Any) -> Any:
    """The executable graph's flags as ``GraphExecGetFlags`` reports them, read through the raw layer
    into a value pre-set to a bit no flag has (a runtime that wrote nothing shows it): the
    :class:`InstantiateFlags` they decode to, or the raw number where bits are left over."""
    ops = t.backend.ops
    out = t.ffi.new("unsigned long long *", 1 << 40)
    t.call("GraphExecGetFlags", exe.handle, out)
    raw = int(out[0])
    flags, left = InstantiateFlags.NONE, raw
    for neutral, member in ops.instantiate_flags.items():
        bit = int(getattr(t.backend.lib, member)) if ops.has(member) else 0
        if raw & bit:
            flags |= neutral
            left &= ~bit
    return flags if left == 0 else raw


def _enabled(t: CaseContext, exe: Any, node: Any) -> Any:
    """``GraphNodeGetEnabled`` through the raw layer, into a value pre-set to 7 (neither answer):
    True / False, or the number the runtime left there."""
    out = t.ffi.new("unsigned int *", 7)
    t.call("GraphNodeGetEnabled", exe.handle, node.handle, out)
    v = int(out[0])
    return bool(v) if v in (0, 1) else v


def _update_raw(t: CaseContext, exe: Any, graph: Any) -> tuple[int, Any, Any]:
    """``GraphExecUpdate`` through the raw layer: (return code, the result the runtime reports, the error
    node's handle or None).  The result field is pre-set to NOT_SUPPORTED, so a runtime that wrote
    nothing shows it (pygraphrt's own update reads a zeroed field: SUCCESS)."""
    ops, ffi = t.backend.ops, t.ffi
    marker = ops.value(ops.update_results, UpdateResult.NOT_SUPPORTED, "update result")
    if ops.prefix == "hip":  # hipGraphExecUpdate(exec, graph, hipGraphNode_t *errorNode, result *)
        node = ffi.new("hipGraphNode_t *")
        result = ffi.new("hipGraphExecUpdateResult *", marker)
        rc = int(ops.fn("GraphExecUpdate")(exe.handle, graph.handle, node, result))
        value, err = int(result[0]), node[0]
    else:  # cudaGraphExecUpdate(exec, graph, cudaGraphExecUpdateResultInfo *)
        info = t.new("GraphExecUpdateResultInfo *")
        info.result = marker
        rc = int(ops.fn("GraphExecUpdate")(exe.handle, graph.handle, info))
        value, err = int(info.result), info.errorNode
    return rc, ops.update_result_of.get(value, value), (None if err == ffi.NULL else err)


def _update(t: CaseContext, exe: Any, graph: Any) -> Any:
    """``GraphExecUpdate`` that must be accepted: the result the runtime reports (:func:`_update_raw`);
    a refusal raises the vendor-neutral error."""
    rc, result, _node = _update_raw(t, exe, graph)
    if rc:
        raise t.backend.ops.error(rc, f"{t.backend.ops.prefix}GraphExecUpdate")
    return result


def _zeroed(t: CaseContext, size: int = N) -> Any:
    buf = t.malloc(size)
    buf.copy_from(bytes(size))
    return buf


def _run(t: CaseContext, exe: Any, stream: Any = None) -> None:
    """Launch ``exe`` once on ``stream`` (a new one if None) and wait for it."""
    s = stream if stream is not None else t.stream()
    exe.launch(s)
    s.synchronize()


def _memset_graph(t: CaseContext, buf: Any, value: int, count: int = N) -> tuple[Any, Any]:
    g = t.graph()
    return g, g.add_memset(buf, value, count)


def _expect_update_error(t: CaseContext, exe: Any, g: Any, result: UpdateResult,
                         error_node: Callable[[Any], bool] | None = None) -> None:
    """``GraphExecUpdate`` of ``exe`` from ``g`` must be refused with ``result`` (raised as the
    GraphExecUpdateError pygraphrt raises, for the runner); ``error_node(node)`` must hold when given.
    The result and error node are read from the runtime (:func:`_update_raw`); an update the runtime
    accepts returns None (with its result checked to be SUCCESS)."""
    ops = t.backend.ops
    rc, got, node = _update_raw(t, exe, g)
    if rc == 0:
        t.check_equal(got, UpdateResult.SUCCESS, "the result of an update the runtime accepted")
        return
    err_node = g._wrap(node) if node is not None else None
    base = ops.error(rc, f"{ops.prefix}GraphExecUpdate")
    e = errors.GraphExecUpdateError(f"{ops.prefix}GraphExecUpdate", rc, base.name, ops.name, base.message, got,
                                    err_node)
    t.note(f"update refused: result {got}, error node {err_node!r}, code {base.name}")
    try:
        raise e
    except errors.GraphExecUpdateError:  # a failed check below carries the refusal (its vendor code)
        t.check_equal(got, result, "the update result")
        if error_node is not None:
            t.check(error_node(err_node), f"error_node {err_node!r} is not the documented node")
        raise


def _instantiate_with_params(t: CaseContext, g: Any, flags: int, upload_stream: Any = None) -> tuple[Any, str]:
    """``GraphInstantiateWithParams``: (the tracked GraphExec or None, result_out without its vendor prefix).

    A runtime error is re-raised after the result is noted (``t.note``)."""
    from pygraphrt.graph import GraphExec

    prefix = t.backend.ops.prefix
    p = t.new("GraphInstantiateParams *")
    p.flags = flags
    p.uploadStream = upload_stream.handle if upload_stream is not None else t.NULL
    out = t.new("GraphExec_t *")
    names = dict(t.ffi.typeof(f"{prefix}GraphInstantiateResult").elements)

    def result() -> str:
        return str(names.get(int(p.result_out), int(p.result_out))).removeprefix(f"{prefix}GraphInstantiate")

    try:
        t.call("GraphInstantiateWithParams", out, g.handle, p)
    except errors.GraphRTError:
        t.note(f"result_out {result()}")
        if out[0] != t.NULL:
            t.call("GraphExecDestroy", out[0])
        raise
    return t.track(GraphExec(g, out[0])), result()


# Documentation passages several cases quote (each case adds its own gloss after them).
DOC_GRAPH_EXEC_CHILD_GRAPH_NODE_SET_PARAMS_TOPOLOGY_CHILDGRAPH = ("CUDA Runtime API 13.5, Graph Management, "
                                                                  "cudaGraphExecChildGraphNodeSetParams: \"The "
                                                                  "topology of childGraph, as well as the node "
                                                                  "insertion order, must match that of the "
                                                                  "graph contained in node\"")
DOC_GRAPH_EXEC_GET_FLAGS_RETURNS_FLAGS = ("CUDA Runtime API 13.5, Graph Management, cudaGraphExecGetFlags: "
                                          "\"Returns the flags that were passed to instantiation for the given "
                                          "executable graph. cudaGraphInstantiateFlagUpload will not be "
                                          "returned by this API as it does not affect the resulting executable "
                                          "graph\"")
DOC_GRAPH_EXEC_NODE_SET_PARAMS_ALLOWED_CHANGES = ("CUDA Runtime API 13.5, Graph Management, "
                                                  "cudaGraphExecNodeSetParams: \"Allowed changes to parameters "
                                                  "on executable graphs are as follows: Node type Allowed "
                                                  "changes kernel See cudaGraphExecKernelNodeSetParams memcpy "
                                                  "Addresses for 1-dimensional copies if allocated in same "
                                                  "context; see cudaGraphExecMemcpyNodeSetParams memset "
                                                  "Addresses for 1-dimensional memsets if allocated in same "
                                                  "context; see cudaGraphExecMemsetNodeSetParams host "
                                                  "Unrestricted child graph Topology must match and "
                                                  "restrictions apply recursively; see cudaGraphExecUpdate "
                                                  "event wait Unrestricted event record Unrestricted external "
                                                  "semaphore signal Number of semaphore operations cannot "
                                                  "change external semaphore wait Number of semaphore "
                                                  "operations cannot change memory allocation API unsupported "
                                                  "memory free API unsupported\"")
DOC_GRAPH_EXEC_UPDATE_PRESENT_AT = ("CUDA Runtime API 13.5, Graph Management, cudaGraphExecUpdate: \"If no such "
                                    "calls were present at instantiation, these updates cannot be performed at "
                                    "all. - Neither hGraph nor hGraphExec may contain device-updatable kernel "
                                    "nodes. - Memset and memcpy nodes: - The CUDA device(s) to which the "
                                    "operand(s) was allocated/mapped cannot change. - The source/destination "
                                    "memory must be allocated from the same contexts as the original "
                                    "source/destination memory. - For 2d memsets, only address and assigned "
                                    "value may be updated. - For 1d memsets, updating dimensions is also "
                                    "allowed, but may fail if the resulting operation doesn't map onto the "
                                    "work resources already allocated for the node. - Additional memcpy node "
                                    "restrictions: - Changing either the source or destination memory type(i.e\"")
DOC_GRAPH_EXEC_UPDATE_RETURNS_GRAPH = ("CUDA Runtime API 13.5, Graph Management, cudaGraphExecUpdate: \"It "
                                       "returns cudaErrorGraphExecUpdateFailure if the graph update was not "
                                       "performed because it included changes which violated constraints "
                                       "specific to instantiated graph update\"")
DOC_GRAPH_EXEC_UPDATE_SETS_RESULT = ("CUDA Runtime API 13.5, Graph Management, cudaGraphExecUpdate: "
                                     "\"cudaGraphExecUpdate sets the result member of resultInfo to "
                                     "cudaGraphExecUpdateErrorTopologyChanged under the following conditions: "
                                     "- The count of nodes directly in hGraphExec and hGraph differ, in which "
                                     "case resultInfo->errorNode is set to NULL. - hGraph has more exit nodes "
                                     "than hGraph, in which case resultInfo->errorNode is set to one of the "
                                     "exit nodes in hGraph. - A node in hGraph has a different number of "
                                     "dependencies than the node from hGraphExec it is paired with, in which "
                                     "case resultInfo->errorNode is set to the node from hGraph. - A node in "
                                     "hGraph has a dependency that does not match with the corresponding "
                                     "dependency of the paired node from hGraphExec. resultInfo->errorNode "
                                     "will be set to the node from hGraph. resultInfo->errorFromNode will be "
                                     "set to the mismatched dependency\"")
DOC_GRAPH_EXEC_UPDATE_UPDATES_NODE = ("CUDA Runtime API 13.5, Graph Management, cudaGraphExecUpdate: \"Updates "
                                      "the node parameters in the instantiated graph specified by hGraphExec "
                                      "with the node parameters in a topologically identical graph specified "
                                      "by hGraph\"")
DOC_GRAPH_LAUNCH_EACH_LAUNCH = ("CUDA Runtime API 13.5, Graph Management, cudaGraphLaunch: \"Each launch is "
                                "ordered behind both any previous work in stream and any previous launches of "
                                "graphExec\"")


# ============================================================================ instantiate: flags
@case("exec.instantiate.flags_none", cite=DOC_GRAPH_EXEC_GET_FLAGS_RETURNS_FLAGS + " -- returns the flags that "
                                          "were passed to instantiate for the given executable graph", apis=("GraphInstantiateWithFlags", "GraphExecGetFlags"),
      expect=InstantiateFlags.NONE)
def _(t: CaseContext) -> Any:
    """An executable graph instantiated without flags reports none."""
    # unsure: HIP 6.2 does not export hipGraphExecGetFlags (NotSupported naming it).
    g = t.graph()
    g.add_empty()
    return _flags(t, t.instantiate(g))


@case("exec.instantiate.auto_free_flag", cite=DOC_GRAPH_EXEC_GET_FLAGS_RETURNS_FLAGS + " -- returns the flags that "
                                              "were passed to instantiate "
                                              "(cudaGraphInstantiateFlagAutoFreeOnLaunch)", apis=("GraphInstantiateWithFlags",
                                                                       "GraphExecGetFlags"),
      expect=InstantiateFlags.AUTO_FREE_ON_LAUNCH)
def _(t: CaseContext) -> Any:
    """AUTO_FREE_ON_LAUNCH is reported back by the executable graph."""
    g = t.graph()
    g.add_empty()
    return _flags(t, t.instantiate(g, auto_free_on_launch=True))


@case("exec.instantiate.use_node_priority_flag", cite=DOC_GRAPH_EXEC_GET_FLAGS_RETURNS_FLAGS + " -- returns the flags that "
                                                      "were passed to instantiate "
                                                      "(cudaGraphInstantiateFlagUseNodePriority)", apis=("GraphInstantiateWithFlags",
                                                                      "GraphExecGetFlags"),
      expect=InstantiateFlags.USE_NODE_PRIORITY)
def _(t: CaseContext) -> Any:
    """USE_NODE_PRIORITY is reported back by the executable graph."""
    # CUDA 12.9-13.5 (driver 580): the flag is accepted but GetFlags returns 0 -- a known deviation
    # (deviations.py).
    g = t.graph()
    g.add_empty()
    return _flags(t, t.instantiate(g, use_node_priority=True))


@case("exec.instantiate.device_launch_flag", cite=DOC_GRAPH_EXEC_GET_FLAGS_RETURNS_FLAGS + " -- returns the flags that "
                                                  "were passed to instantiate "
                                                  "(cudaGraphInstantiateFlagDeviceLaunch)", apis=("GraphInstantiateWithFlags",
                                                                   "GraphExecGetFlags", "GraphUpload"),
      requires=("device_launch",), expect=InstantiateFlags.DEVICE_LAUNCH)
def _(t: CaseContext) -> Any:
    """DEVICE_LAUNCH, and nothing else, is reported for a device-launchable graph."""
    g = t.graph()
    g.add_memset(t.malloc(64), 1, 64)
    exe = t.instantiate(g, device_launch=True, upload_stream=t.stream())
    return _flags(t, exe)


@case("exec.instantiate.upload_flag_not_reported", cite=GET_FLAGS + "cudaGraphInstantiateFlagUpload will "
      "not be returned by this API as it does not affect the resulting executable graph",
      apis=("GraphInstantiateWithFlags", "GraphExecGetFlags"), expect=InstantiateFlags.NONE)
def _(t: CaseContext) -> Any:
    """An executable graph uploaded at instantiation reports no flag."""
    g = t.graph()
    g.add_empty()
    return _flags(t, t.instantiate(g, InstantiateFlags.UPLOAD, upload_stream=t.stream()))


@case("exec.instantiate.upload_needs_stream", kind="binding",
      cite=WITH_PARAMS + "cudaGraphInstantiateFlagUpload performs "
      "an upload into the upload stream once the graph has been instantiated; " + PYCHECK,
      apis=("GraphInstantiateWithFlags",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """UPLOAD without a stream to upload in is refused."""
    g = t.graph()
    g.add_empty()
    t.instantiate(g, InstantiateFlags.UPLOAD)


@case("exec.instantiate.auto_free_with_priority", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphInstantiateWithFlags: \"Valid flags are\" -- "
                                                       "valid flags are cudaGraphInstantiateFlagAutoFreeOnLaunch, ...DeviceLaunch, "
                                                       "...UseNodePriority (combinable bits)",
      apis=("GraphInstantiateWithFlags", "GraphExecGetFlags", "GraphLaunch"),
      requires=("instantiate_flag_combinations",), expect=(True, b"\x05" * 8))
def _(t: CaseContext) -> Any:
    """AUTO_FREE_ON_LAUNCH and USE_NODE_PRIORITY together instantiate and launch."""
    buf = _zeroed(t)
    g, _m = _memset_graph(t, buf, 5)
    exe = t.instantiate(g, auto_free_on_launch=True, use_node_priority=True)
    _run(t, exe)
    flags = _flags(t, exe)
    return isinstance(flags, InstantiateFlags) and InstantiateFlags.AUTO_FREE_ON_LAUNCH in flags, buf.to_bytes(8)


@case("exec.instantiate.auto_free_upload_combined", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphInstantiateWithFlags: \"Valid flags are\" -- "
                                                         "flags combine; CUDA Runtime API 13.5, Graph Management, cudaGraphExecGetFlags: "
                                                         "\"cudaGraphInstantiateFlagUpload will not be returned by this API as it does not affect the "
                                                         "resulting executable graph\" -- the upload flag is not returned", apis=("GraphInstantiateWithFlags", "GraphExecGetFlags"),
      requires=("instantiate_flag_combinations",), expect=InstantiateFlags.AUTO_FREE_ON_LAUNCH)
def _(t: CaseContext) -> Any:
    """AUTO_FREE_ON_LAUNCH with an upload reports AUTO_FREE_ON_LAUNCH only."""
    g = t.graph()
    g.add_empty()
    return _flags(t, t.instantiate(g, InstantiateFlags.UPLOAD | InstantiateFlags.AUTO_FREE_ON_LAUNCH,
                                   upload_stream=t.stream()))


@case("exec.instantiate.device_launch_with_auto_free", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphInstantiateWithFlags: \"This flag cannot be "
                                                            "used in conjunction with cudaGraphInstantiateFlagAutoFreeOnLaunch\" -- "
                                                            "cudaGraphInstantiateFlagDeviceLaunch cannot be used in conjunction with "
                                                            "cudaGraphInstantiateFlagAutoFreeOnLaunch",
      apis=("GraphInstantiateWithFlags",), requires=("device_launch", "instantiate_flag_combinations"),
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """DEVICE_LAUNCH combined with AUTO_FREE_ON_LAUNCH is refused."""
    g = t.graph()
    g.add_memset(t.malloc(64), 1, 64)
    with t.under_test():
        t.instantiate(g, device_launch=True, auto_free_on_launch=True)


@case("exec.instantiate.device_launch_runs_from_host", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphInstantiateWithFlags: \"If this flag is "
                                                            "passed, the executable graph handle returned can be used to launch the graph from both the "
                                                            "host and device\" -- with cudaGraphInstantiateFlagDeviceLaunch the executable graph can be "
                                                            "launched from both the host and device", apis=("GraphInstantiateWithFlags", "GraphUpload", "GraphLaunch"), requires=("device_launch",),
      expect=b"\x2c" * 8)
def _(t: CaseContext) -> Any:
    """A device-launchable graph launched from the host does its work."""
    buf = _zeroed(t)
    g, _m = _memset_graph(t, buf, 0x2C)
    s = t.stream()
    exe = t.instantiate(g, device_launch=True, upload_stream=s)
    _run(t, exe, s)
    return buf.to_bytes(8)


@case("exec.instantiate.unknown_flag_bits", cite=(
          "CUDA Runtime API 13.5, Graph Management, cudaGraphInstantiateWithFlags: \"The flags parameter "
          "controls the behavior of instantiation and subsequent graph launches. Valid flags are\" ... "
          "\"cudaSuccess, cudaErrorInvalidValue\" -- a bit none of the listed cudaGraphInstantiateFlags has is "
          "not a valid flag, and the return list names cudaErrorInvalidValue; CUDA Runtime API 13.5, Data "
          "types, enum cudaError: \"cudaErrorInvalidValue: This indicates that one or more of the parameters "
          "passed to the API call is not within an acceptable range of values\" -- the unknown bit is such a "
          "value"),
      apis=("GraphInstantiateWithFlags",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A flag bit that is no instantiate flag is refused by the runtime."""
    # unsure: HIP documents that hipGraphInstantiateWithFlags ignores its flags.
    g = t.graph()
    g.add_empty()
    out = t.new("GraphExec_t *")
    try:
        with t.under_test():
            t.call("GraphInstantiateWithFlags", out, g.handle, 1 << 20)
    finally:
        if out[0] != t.NULL:
            t.call("GraphExecDestroy", out[0])


@case("exec.instantiate.null_graph", cite=(
          "Observed, cudaGraphInstantiateWithFlags: a NULL graph is refused with cudaErrorInvalidValue "
          "(deviations.OBSERVATIONS); CUDA Runtime API 13.5, Graph Management, cudaGraphInstantiateWithFlags: "
          "\"cudaSuccess, cudaErrorInvalidValue\" -- the return list names cudaErrorInvalidValue; no sentence "
          "states that a NULL graph is refused"),
      apis=("GraphInstantiateWithFlags",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Instantiating a NULL graph is refused."""
    # CUDA 12.9-13.5: cudaErrorInvalidValue, a code the return list names (the refusal is an observation).
    out = t.new("GraphExec_t *")
    try:
        with t.under_test():
            t.call("GraphInstantiateWithFlags", out, t.NULL, 0)
    finally:
        if out[0] != t.NULL:
            t.call("GraphExecDestroy", out[0])


@case("exec.instantiate.null_out", cite=(
          "Observed, cudaGraphInstantiateWithFlags: a NULL pGraphExec is refused with cudaErrorInvalidValue "
          "(deviations.OBSERVATIONS); CUDA Runtime API 13.5, Graph Management, cudaGraphInstantiateWithFlags: "
          "\"cudaSuccess, cudaErrorInvalidValue\" -- the return list names cudaErrorInvalidValue; no sentence "
          "states that a NULL pGraphExec is refused"), apis=("GraphInstantiateWithFlags",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Instantiating without a place for the executable graph is refused."""
    g = t.graph()
    g.add_empty()
    with t.under_test():
        t.call("GraphInstantiateWithFlags", t.NULL, g.handle, 0)


@case("exec.instantiate.empty_graph", cite=INSTANTIATE + "instantiates graph as an executable graph; "
      + LAUNCH + "executes graphExec in stream", apis=("GraphInstantiateWithFlags", "GraphExecGetFlags"),
      expect=(Snapshot(nodes=0, edges=0), InstantiateFlags.NONE))
def _(t: CaseContext) -> Any:
    """A graph with no nodes instantiates (an executable graph the runtime describes) and launches."""
    # The launch of nothing has no effect to observe: it is only required to be accepted.
    g = t.graph()
    exe = t.instantiate(g)
    _run(t, exe)
    return t.snapshot(graph=g), _flags(t, exe)


@case("exec.instantiate.cycle", cite=DOC_GRAPH_INSTANTIATE_WITH_FLAGS_GRAPH_VALIDATED + " -- instantiates graph as an "
                                     "executable graph. The graph is validated for any structural constraints or "
                                     "intra-node constraints which were not previously validated; returns "
                                     "cudaSuccess, cudaErrorInvalidValue",
      apis=("GraphAddDependencies", "GraphInstantiateWithFlags"), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A graph whose edges form a cycle is accepted edge by edge and refused at instantiation."""
    g = t.graph()
    a = g.add_empty()
    b = g.add_empty(dependencies=[a])
    c = g.add_empty(dependencies=[b])
    g.add_dependencies([c], [a])  # set-up: a refusal here fails the case (it is not the call under test)
    t.check_equal(t.snapshot(graph=g), Snapshot(nodes=3, edges=3), "the cyclic graph")
    with t.under_test():
        t.instantiate(g)


@case("exec.instantiate.twice_independent", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphInstantiate: \"To execute a graph "
                                                 "concurrently, it must be instantiated multiple times into multiple executable graphs\" -- "
                                                 "each instantiation is an executable graph of its own; CUDA Runtime API 13.5, Graph "
                                                 "Management, cudaGraphExecMemsetNodeSetParams: \"The modifications only affect future launches "
                                                 "of hGraphExec\" -- the modifications only affect future launches of hGraphExec; node is not "
                                                 "modified by this call", apis=("GraphInstantiateWithFlags", "GraphExecMemsetNodeSetParams",
                                                      "GraphLaunch"), expect=(b"\x09" * 8, b"\x01" * 8))
def _(t: CaseContext) -> Any:
    """Two executable graphs of one graph are independent: a setter on one leaves the other."""
    buf1, buf2 = _zeroed(t), _zeroed(t)
    g = t.graph()
    m = g.add_memset(buf1, 1, N)
    e1, e2 = t.instantiate(g), t.instantiate(g)
    e1.set_memset(m, value=9)
    _run(t, e1)
    first = buf1.to_bytes(8)
    e2.set_memset(m, dst=buf2)
    _run(t, e2)
    return first, buf2.to_bytes(8)


@case("exec.instantiate.snapshot", cite=(
          "Observed, cudaGraphInstantiateWithFlags: a node added to the graph after instantiation is not run "
          "by the executable graph (its buffer stays zero; the instantiated node runs) "
          "(deviations.OBSERVATIONS); CUDA Runtime API 13.5, Graph Management, cudaGraphInstantiateWithFlags: "
          "\"Instantiates graph as an executable graph\" -- no documentation sentence states that later "
          "changes to graph leave the executable graph (a snapshot); CUDA Runtime API 13.5, Graph Management, "
          "cudaGraphExecUpdate: \"Updates the node parameters in the instantiated graph specified by "
          "hGraphExec with the node parameters in a topologically identical graph specified by hGraph\" -- "
          "changes reach an executable graph through an update"), apis=("GraphInstantiateWithFlags", "GraphAddMemsetNode",
                                                                   "GraphLaunch"), expect=(b"\x00" * 8, 1))
def _(t: CaseContext) -> Any:
    """A node added to the graph after instantiation is not run by the executable graph."""
    a, b = _zeroed(t), _zeroed(t)
    g, _m = _memset_graph(t, a, 1)
    exe = t.instantiate(g)
    g.add_memset(b, 2, N)
    _run(t, exe)
    return b.to_bytes(8), a.to_bytes(1)[0]


# ============================================================================ instantiate with params
@case("exec.instantiate_with_params.success", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphInstantiateWithParams: \"If instantiation "
                                                   "is successful, result_out will be set to cudaGraphInstantiateSuccess, and hErrNode_out will "
                                                   "be set to NULL\" -- instantiateParams->result_out is set to cudaGraphInstantiateSuccess when "
                                                   "instantiation succeeded", apis=("GraphInstantiateWithParams", "GraphLaunch"),
      requires=("instantiate_with_params",), expect=("Success", b"\x3a" * 8))
def _(t: CaseContext) -> Any:
    """Instantiation with a params struct reports success and the executable graph runs."""
    buf = _zeroed(t)
    g, _m = _memset_graph(t, buf, 0x3A)
    exe, result = _instantiate_with_params(t, g, 0)
    _run(t, exe)
    return result, buf.to_bytes(8)


@case("exec.instantiate_with_params.upload", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphInstantiateWithParams: \"- "
                                                  "cudaGraphInstantiateFlagUpload, which will perform an upload of the graph into uploadStream "
                                                  "once the graph has been instantiated\" -- cudaGraphInstantiateFlagUpload performs an upload "
                                                  "of the graph into uploadStream once the graph has been instantiated",
      apis=("GraphInstantiateWithParams", "GraphLaunch"), requires=("instantiate_with_params",),
      expect=("Success", b"\x3b" * 8))
def _(t: CaseContext) -> Any:
    """The upload flag with an upload stream instantiates, uploads, and launches."""
    buf = _zeroed(t)
    g, _m = _memset_graph(t, buf, 0x3B)
    s = t.stream()
    flag = t.backend.ops.value(t.backend.ops.instantiate_flags, InstantiateFlags.UPLOAD, "upload flag")
    exe, result = _instantiate_with_params(t, g, flag, upload_stream=s)
    _run(t, exe, s)
    return result, buf.to_bytes(8)


@case("exec.instantiate_with_params.auto_free_flag", cite="CUDA Runtime API 13.0, Graph Management, cudaGraphInstantiateWithParams: the flags field "
                                                          "controls the behavior of instantiation; CUDA Runtime API 13.5, Graph Management, "
                                                          "cudaGraphExecGetFlags: \"Returns the flags that were passed to instantiation for the given "
                                                          "executable graph. cudaGraphInstantiateFlagUpload will not be returned by this API as it does "
                                                          "not affect the resulting executable graph\" -- returns the flags that were passed to "
                                                          "instantiate",
      apis=("GraphInstantiateWithParams", "GraphExecGetFlags"), requires=("instantiate_with_params",),
      expect=("Success", InstantiateFlags.AUTO_FREE_ON_LAUNCH))
def _(t: CaseContext) -> Any:
    """AUTO_FREE_ON_LAUNCH passed in the params struct is reported back."""
    g = t.graph()
    g.add_empty()
    flag = t.backend.ops.value(t.backend.ops.instantiate_flags, InstantiateFlags.AUTO_FREE_ON_LAUNCH, "flag")
    exe, result = _instantiate_with_params(t, g, flag)
    return result, _flags(t, exe)


@case("exec.instantiate_with_params.cycle_invalid_structure", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphInstantiateWithParams: "
                                                                   "\"cudaGraphInstantiateInvalidStructure, if the graph structure is invalid\" -- result_out "
                                                                   "cudaGraphInstantiateInvalidStructure: instantiation failed due to invalid structure, such as "
                                                                   "cycles",
      apis=("GraphInstantiateWithParams",), requires=("instantiate_with_params",), expect="InvalidStructure")
def _(t: CaseContext) -> Any:
    """A cyclic graph fails instantiation with the result InvalidStructure."""
    g = t.graph()
    a = g.add_empty()
    b = g.add_empty(dependencies=[a])
    g.add_dependencies([b], [a])
    p = t.new("GraphInstantiateParams *")
    out = t.new("GraphExec_t *")
    prefix = t.backend.ops.prefix
    try:
        t.raises(errors.GraphRTError, t.call, "GraphInstantiateWithParams", out, g.handle, p)
    finally:
        if out[0] != t.NULL:
            t.call("GraphExecDestroy", out[0])
    names = dict(t.ffi.typeof(f"{prefix}GraphInstantiateResult").elements)
    return str(names.get(int(p.result_out), int(p.result_out))).removeprefix(f"{prefix}GraphInstantiate")


# ============================================================================ launch / upload / synchronize
@case("exec.launch.runs_work", cite=LAUNCH + "executes graphExec in stream", apis=("GraphLaunch",),
      expect=b"\x11" * 8)
def _(t: CaseContext) -> Any:
    """A launched executable graph does its work."""
    buf = _zeroed(t)
    g, _m = _memset_graph(t, buf, 0x11)
    _run(t, t.instantiate(g))
    return buf.to_bytes(8)


@case("exec.launch.relaunch", cite=DOC_GRAPH_LAUNCH_EACH_LAUNCH + " -- each launch is ordered behind any "
                                   "previous launches of graphExec; an executable graph can be launched any "
                                   "number of times", apis=("GraphLaunch", "GraphAddHostNode"),
      expect=5)
def _(t: CaseContext) -> Any:
    """Five launches run the graph five times."""
    calls: list[int] = []
    g = t.graph()
    g.add_host(lambda: calls.append(1))
    exe = t.instantiate(g)
    s = t.stream()
    for _ in range(5):
        exe.launch(s)
    exe.synchronize()
    return len(calls)


@case("exec.launch.ordered_after_stream_work", cite=DOC_GRAPH_LAUNCH_EACH_LAUNCH + " -- each launch is ordered "
                                                    "behind any previous work in stream", apis=("GraphLaunch", "MemsetAsync"), expect=b"\x4d" * 8)
def _(t: CaseContext) -> Any:
    """A launch sees the results of work issued before it on the same stream."""
    src, out = _zeroed(t), _zeroed(t)
    g = t.graph()
    g.add_memcpy(out, src, N)
    exe = t.instantiate(g)
    s = t.stream()
    s.memset(src, 0x4D, N)
    exe.launch(s)
    s.synchronize()
    return out.to_bytes(8)


@case("exec.launch.two_streams_serialized", cite=LAUNCH + "Each launch is ordered behind both any previous work in "
      "stream and any previous launches of graphExec. To execute a graph concurrently, it must be instantiated "
      "multiple times into multiple executable graphs", apis=("GraphLaunch", "GraphAddHostNode"),
      expect=["enter 0", "exit 0", "enter 1", "exit 1"])
def _(t: CaseContext) -> Any:
    """A launch on a second stream starts only after the first launch (on another stream) finished."""
    log: list[str] = []
    gate = threading.Event()
    caller = threading.get_ident()

    def step() -> None:
        k = sum(1 for x in log if x.startswith("enter"))
        log.append(f"enter {k}")
        # Where the runtime runs host nodes on a thread of its own, the first launch is held
        # open until both launches are enqueued: a second launch not ordered behind it would
        # enter here before it exits.  (Where host nodes run in the caller's thread, as on
        # sim, there is nothing to hold: waiting would only block the caller.)
        if k == 0 and threading.get_ident() != caller and not gate.wait(120.0):
            log.append("gate: not opened within 120 s (the case's own enqueue never finished)")
        log.append(f"exit {k}")

    g = t.graph()
    g.add_host(step)
    exe = t.instantiate(g)
    s1, s2 = t.stream(), t.stream()
    try:
        exe.launch(s1)
        exe.launch(s2)
    finally:
        gate.set()
    s1.synchronize()
    s2.synchronize()
    return log


@case("exec.launch.legacy_default_stream", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphLaunch: \"Executes graphExec in stream\" -- "
                                                "executes graphExec in stream (the legacy default stream 0 included)", apis=("GraphLaunch",), expect=b"\x5e" * 8)
def _(t: CaseContext) -> Any:
    """An executable graph launches on the legacy default stream."""
    buf = _zeroed(t)
    g, _m = _memset_graph(t, buf, 0x5E)
    exe = t.instantiate(g)
    s0 = t.rt.Stream.legacy_default()
    exe.launch(s0)
    s0.synchronize()
    return buf.to_bytes(8)


@case("exec.launch.closed_exec", kind="binding", cite=EXEC_DESTROY + "destroys the executable graph; " + PYGRAPHRT
      + "a closed executable graph raises InvalidResourceHandle", apis=("GraphExecDestroy", "GraphLaunch"),
      raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """Launching an executable graph after closing it is refused."""
    g = t.graph()
    g.add_empty()
    exe = t.instantiate(g)
    exe.close()
    exe.launch(t.stream())


@case("exec.launch.closed_stream", kind="binding",
      cite=LAUNCH + "stream - stream in which to launch the graph; " + PYGRAPHRT
      + "a closed stream raises InvalidResourceHandle", apis=("GraphLaunch", "StreamDestroy"),
      raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """Launching on a closed stream is refused."""
    g = t.graph()
    g.add_empty()
    exe = t.instantiate(g)
    s = t.stream()
    s.close()
    exe.launch(s)


@case("exec.launch.not_a_stream", kind="binding",
      cite=LAUNCH + "stream must be a stream; " + PYCHECK, apis=("GraphLaunch",),
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Launching on something that is not a Stream is refused."""
    g = t.graph()
    g.add_empty()
    t.instantiate(g).launch("stream 0")


@case("exec.launch.null_exec", cite=("Observed, cudaGraphLaunch: a NULL graphExec is refused with "
                                     "cudaErrorInvalidValue (deviations.OBSERVATIONS); CUDA Runtime API 13.5, "
                                     "Graph Management, cudaGraphLaunch: \"cudaSuccess, cudaErrorInvalidValue\" "
                                     "-- the return list names cudaErrorInvalidValue; no sentence states that "
                                     "a NULL graphExec is refused"),
      apis=("GraphLaunch",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """The runtime refuses to launch a NULL executable graph."""
    # CUDA 12.9-13.5: cudaErrorInvalidValue, a code the return list names (the refusal is an observation).
    with t.under_test():
        t.call("GraphLaunch", t.NULL, t.stream().handle)


@case("exec.launch.after_graph_closed", cite=(
          "Observed, cudaGraphLaunch: an executable graph launches and writes, twice, after its graph is "
          "destroyed (cudaGraphDestroy) (deviations.OBSERVATIONS); CUDA Runtime API 13.5, Graph Management, "
          "cudaGraphInstantiateWithFlags: \"Instantiates graph as an executable graph\" -- no documentation "
          "sentence states that the executable graph outlives the destruction of graph (cudaGraphDestroy's "
          "documentation does not mention executable graphs); CUDA Runtime API 13.5, Graph Management, "
          "cudaGraphExecDestroy: \"Destroys an executable graph\" -- only cudaGraphExecDestroy is documented "
          "to destroy an executable graph"), apis=("GraphLaunch",),
      expect=(b"\x6f" * 8, b"\x6f" * 8))
def _(t: CaseContext) -> Any:
    """Closing the graph leaves its executable graph relaunchable."""
    # GraphDestroy is set-up: that it destroyed the graph cannot be observed without using the
    # destroyed handle (undefined behaviour), so it is not claimed.
    buf = _zeroed(t)
    g, _m = _memset_graph(t, buf, 0x6F)
    exe = t.instantiate(g)
    g.close()
    _run(t, exe)
    first = buf.to_bytes(8)
    buf.copy_from(bytes(N))
    _run(t, exe)
    return first, buf.to_bytes(8)


@case("exec.upload.then_launch", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphUpload: \"Uploads graphExec to the device "
                                      "in stream without executing it\" -- uploads graphExec to the device in stream without "
                                      "executing it", apis=("GraphUpload", "GraphLaunch"), expect=(b"\x00" * 8, b"\x21" * 8))
def _(t: CaseContext) -> Any:
    """Uploading does not run the work; the following launch does."""
    buf = _zeroed(t)
    g, _m = _memset_graph(t, buf, 0x21)
    exe = t.instantiate(g)
    s = t.stream()
    exe.upload(s)
    s.synchronize()
    before = buf.to_bytes(8)
    _run(t, exe, s)
    return before, buf.to_bytes(8)


@case("exec.upload.other_stream_then_launch", cite=(
          "Observed, cudaGraphLaunch: a graph uploaded on one stream (cudaGraphUpload) launches and runs on "
          "another (deviations.OBSERVATIONS); CUDA Runtime API 13.5, Graph Management, cudaGraphUpload: \"Each "
          "upload is ordered behind both any previous work in stream and any previous launches of graphExec\" "
          "-- no documentation sentence states that a launch on another stream than the upload's uses the "
          "upload"),
      apis=("GraphUpload", "GraphLaunch"), expect=b"\x22" * 8)
def _(t: CaseContext) -> Any:
    """A graph uploaded on one stream launches on another."""
    buf = _zeroed(t)
    g, _m = _memset_graph(t, buf, 0x22)
    exe = t.instantiate(g)
    s1, s2 = t.stream(), t.stream()
    exe.upload(s1)
    s1.synchronize()
    _run(t, exe, s2)
    return buf.to_bytes(8)


@case("exec.upload.twice", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphUpload: \"Uploads of the same graphExec "
                                "will be serialized\" -- uploads of the same graphExec will be serialized",
      apis=("GraphUpload",), expect=b"\x23" * 8)
def _(t: CaseContext) -> Any:
    """Two uploads of one executable graph are accepted; it then runs."""
    buf = _zeroed(t)
    g, _m = _memset_graph(t, buf, 0x23)
    exe = t.instantiate(g)
    s = t.stream()
    exe.upload(s)
    exe.upload(s)
    _run(t, exe, s)
    return buf.to_bytes(8)


@case("exec.upload.closed_exec", kind="binding", cite=EXEC_DESTROY + "destroys the executable graph; " + PYGRAPHRT
      + "a closed executable graph raises InvalidResourceHandle", apis=("GraphUpload",),
      raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """Uploading a closed executable graph is refused."""
    g = t.graph()
    g.add_empty()
    exe = t.instantiate(g)
    exe.close()
    exe.upload(t.stream())


@case("exec.upload.null_exec", cite=("Observed, cudaGraphUpload: a NULL graphExec is refused with "
                                     "cudaErrorInvalidValue (deviations.OBSERVATIONS); CUDA Runtime API 13.5, "
                                     "Graph Management, cudaGraphUpload: \"cudaSuccess, "
                                     "cudaErrorInvalidValue,\" -- the return list names cudaErrorInvalidValue; "
                                     "no sentence states that a NULL graphExec is refused"),
      apis=("GraphUpload",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """The runtime refuses to upload a NULL executable graph."""
    # CUDA 12.9-13.5: cudaErrorInvalidValue, a code the return list names (the refusal is an observation).
    with t.under_test():
        t.call("GraphUpload", t.NULL, t.stream().handle)


@case("exec.synchronize.without_launch", kind="binding", cite=PYGRAPHRT + "GraphExec.synchronize waits for the "
      "stream of the last launch (none: returns at once, calling nothing)", apis=("StreamSynchronize",), expect=None)
def _(t: CaseContext) -> Any:
    """Synchronizing an executable graph that was never launched returns."""
    g = t.graph()
    g.add_empty()
    return t.instantiate(g).synchronize()


@case("exec.synchronize.waits_for_launch", kind="binding", cite=LAUNCH + "executes graphExec in stream; " + PYGRAPHRT
      + "GraphExec.synchronize waits for its last launch (the stream it was launched on)",
      apis=("GraphLaunch", "StreamSynchronize"),
      expect=b"\x24" * 8)
def _(t: CaseContext) -> Any:
    """After exec.synchronize() the launch's results are visible."""
    buf = _zeroed(t)
    g, _m = _memset_graph(t, buf, 0x24)
    exe = t.instantiate(g)
    exe.launch(t.stream())
    exe.synchronize()
    return buf.to_bytes(8)


# ============================================================================ exec update: success
@case("exec.update.memset_value", cite=DOC_GRAPH_EXEC_UPDATE_UPDATES_NODE + " -- updates the node parameters in "
                                       "the instantiated graph with the node parameters in a topologically "
                                       "identical graph", apis=("GraphExecUpdate", "GraphLaunch"),
      expect=(UpdateResult.SUCCESS, b"\x02" * 8))
def _(t: CaseContext) -> Any:
    """A memset whose value changed updates: SUCCESS, and the new value is written."""
    buf = _zeroed(t)
    g1, _a = _memset_graph(t, buf, 1)
    g2, _b = _memset_graph(t, buf, 2)
    exe = t.instantiate(g1)
    r = exe.update(g2)
    _run(t, exe)
    return r, buf.to_bytes(8)


@case("exec.update.memset_destination", cite=DOC_GRAPH_EXEC_UPDATE_PRESENT_AT + " -- memset nodes: the CUDA "
                                             "device(s) to which the operand(s) was allocated/mapped cannot "
                                             "change (another address on the same device may)",
      apis=("GraphExecUpdate", "GraphLaunch"), expect=(UpdateResult.SUCCESS, b"\x00" * 8, b"\x03" * 8))
def _(t: CaseContext) -> Any:
    """A memset moved to another buffer of the same device updates."""
    a, b = _zeroed(t), _zeroed(t)
    g1, _x = _memset_graph(t, a, 3)
    g2, _y = _memset_graph(t, b, 3)
    exe = t.instantiate(g1)
    r = exe.update(g2)
    _run(t, exe)
    return r, a.to_bytes(8), b.to_bytes(8)


@case("exec.update.memcpy_addresses", cite=DOC_GRAPH_EXEC_UPDATE_PRESENT_AT + " -- memcpy nodes: the "
                                           "source/destination memory must be allocated from the same contexts "
                                           "as the original (addresses may change)",
      apis=("GraphExecUpdate", "GraphLaunch"), expect=(UpdateResult.SUCCESS, b"\x00" * 8, b"\x77" * 8))
def _(t: CaseContext) -> Any:
    """A device-to-device copy with new source and destination updates."""
    src1, src2, out1, out2 = _zeroed(t), t.malloc(N), _zeroed(t), _zeroed(t)
    src2.copy_from(b"\x77" * N)
    g1 = t.graph()
    g1.add_memcpy(out1, src1, N)
    g2 = t.graph()
    g2.add_memcpy(out2, src2, N)
    exe = t.instantiate(g1)
    r = exe.update(g2)
    _run(t, exe)
    return r, out1.to_bytes(8), out2.to_bytes(8)


@case("exec.update.host_function", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphExecNodeSetParams: \"host Unrestricted\" -- "
                                        "host nodes: parameters may change (CUDA Runtime API 13.0, Graph Management, "
                                        "cudaGraphExecNodeSetParams: host: unrestricted)", apis=("GraphExecUpdate", "GraphLaunch"), expect=(UpdateResult.SUCCESS, ["second"]))
def _(t: CaseContext) -> Any:
    """A host node with another function updates; the new function runs."""
    calls: list[str] = []
    g1 = t.graph()
    g1.add_host(lambda: calls.append("first"))
    g2 = t.graph()
    g2.add_host(lambda: calls.append("second"))
    exe = t.instantiate(g1)
    r = exe.update(g2)
    exe.launch(t.stream())
    exe.synchronize()
    return r, calls


@case("exec.update.event_record_event", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphExecNodeSetParams: \"event record "
                                             "Unrestricted\" -- event nodes may change their event (CUDA Runtime API 13.0, Graph "
                                             "Management, cudaGraphExecNodeSetParams: event record: unrestricted)", apis=("GraphExecUpdate", "GraphAddEventRecordNode", "EventElapsedTime"),
      expect=(UpdateResult.SUCCESS, True, "never recorded"))
def _(t: CaseContext) -> Any:
    """An event record node recording another event updates: the launch records the new event only."""
    e1, e2, start = t.event(timing=True), t.event(timing=True), t.event(timing=True)
    g1 = t.graph()
    g1.add_event_record(e1)
    g2 = t.graph()
    g2.add_event_record(e2)
    exe = t.instantiate(g1)
    r = _update(t, exe, g2)
    s = t.stream()
    s.record(start)
    _run(t, exe, s)
    try:  # never recorded: no elapsed time (cudaEventElapsedTime: cudaErrorInvalidResourceHandle)
        e1.elapsed_ms(start)
        old = "recorded"
    except errors.InvalidResourceHandle:
        old = "never recorded"
    return r, e2.elapsed_ms(start) >= 0.0, old


@case("exec.update.event_wait_event", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphExecNodeSetParams: \"event wait "
                                           "Unrestricted\" -- event nodes may change their event (CUDA Runtime API 13.0, Graph "
                                           "Management, cudaGraphExecNodeSetParams: event wait: unrestricted)", apis=("GraphExecUpdate", "GraphAddEventWaitNode", "GraphEventWaitNodeGetEvent"),
      expect=(UpdateResult.SUCCESS, True))
def _(t: CaseContext) -> Any:
    """An event wait node waiting for another event updates."""
    # The launch waiting for the new event is not observable where every event is complete
    # (sim runs work as it is issued); the node of the graph updated from is read back.
    e2 = t.event()
    g1 = t.graph()
    g1.add_event_wait(t.event())
    g2 = t.graph()
    w2 = g2.add_event_wait(e2)
    exe = t.instantiate(g1)
    r = _update(t, exe, g2)
    _run(t, exe)
    return r, _typed(w2)["event"] == int(e2)


@case("exec.update.child_graph_params", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphExecNodeSetParams: \"child graph Topology "
                                             "must match and restrictions apply recursively\" -- child graph nodes: topology must match and "
                                             "the restrictions apply recursively (parameters inside may change)", apis=("GraphExecUpdate",
                                                                           "GraphAddChildGraphNode"),
      expect=(UpdateResult.SUCCESS, b"\x0c" * 8))
def _(t: CaseContext) -> Any:
    """A child graph whose memset value changed updates."""
    buf = _zeroed(t)
    c1, _a = _memset_graph(t, buf, 0x0B)
    c2, _b = _memset_graph(t, buf, 0x0C)
    g1 = t.graph()
    g1.add_child_graph(c1)
    g2 = t.graph()
    g2.add_child_graph(c2)
    exe = t.instantiate(g1)
    r = exe.update(g2)
    _run(t, exe)
    return r, buf.to_bytes(8)


@case("exec.update.same_graph", cite=DOC_GRAPH_EXEC_UPDATE_UPDATES_NODE + " -- updates from a topologically "
                                     "identical graph (the graph the executable was instantiated from, after its "
                                     "parameters changed)",
      apis=("GraphExecUpdate", "GraphMemcpyNodeSetParams1D"), expect=(UpdateResult.SUCCESS, b"\x13" * 8))
def _(t: CaseContext) -> Any:
    """Changing the original graph's node, then updating from it, takes the change."""
    src1, src2, out = _zeroed(t), t.malloc(N), _zeroed(t)
    src2.copy_from(b"\x13" * N)
    g = t.graph()
    c = g.add_memcpy(out, src1, N)
    exe = t.instantiate(g)
    c.set_params(dst=out, src=src2, count=N)
    r = exe.update(g)
    _run(t, exe)
    return r, out.to_bytes(8)


@case("exec.update.diamond_all_parameters", cite=DOC_GRAPH_EXEC_UPDATE_UPDATES_NODE + " -- updates the node "
                                                 "parameters of every node paired by topology", apis=("GraphExecUpdate", "GraphLaunch"), expect=(UpdateResult.SUCCESS, b"\x09" * 4 + b"\x0a" * 4))
def _(t: CaseContext) -> Any:
    """A diamond whose every node changed value updates as a whole."""
    buf = _zeroed(t)

    def diamond(v: int) -> Any:
        g = t.graph()
        a = g.add_memset(buf, v, 4)
        b = a.memset(buf.ptr + 4, v + 1, 4)
        c = a.empty()
        g.add_empty(dependencies=[b, c])
        return g

    exe = t.instantiate(diamond(1))
    r = exe.update(diamond(9))
    _run(t, exe)
    return r, buf.to_bytes(8)


@case("exec.update.empty_graphs", cite=DOC_GRAPH_EXEC_UPDATE_UPDATES_NODE + " -- updates from a topologically "
                                       "identical graph (two graphs without nodes are identical)", apis=("GraphExecUpdate",), expect=UpdateResult.SUCCESS)
def _(t: CaseContext) -> Any:
    """An executable graph of an empty graph updates from another empty graph."""
    exe = t.instantiate(t.graph())
    return _update(t, exe, t.graph())


@case("exec.update.setters_take_original_nodes", cite=("CUDA Runtime API 13.5, Graph Management, cudaGraphExecMemsetNodeSetParams: \"node must remain in the "
      "graph which was used to instantiate hGraphExec\" -- the setter takes the node of the graph the "
      "executable graph was instantiated from, which an update from another graph does not change"), apis=("GraphExecUpdate", "GraphExecMemsetNodeSetParams"),
      expect=(UpdateResult.SUCCESS, b"\x05" * 8))
def _(t: CaseContext) -> Any:
    """After an update, the per-node setters still take nodes of the graph it was instantiated from."""
    buf = _zeroed(t)
    g1, m1 = _memset_graph(t, buf, 1)
    g2, _m2 = _memset_graph(t, buf, 2)
    exe = t.instantiate(g1)
    r = _update(t, exe, g2)
    exe.set_memset(m1, value=5)
    _run(t, exe)
    return r, buf.to_bytes(8)


# ============================================================================ exec update: refused
@case("exec.update.node_count_changed", cite=DOC_GRAPH_EXEC_UPDATE_SETS_RESULT + " -- "
                                             "cudaGraphExecUpdateErrorTopologyChanged when the count of nodes "
                                             "directly in hGraphExec and hGraph differ, in which case errorNode "
                                             "is set to NULL",
      apis=("GraphExecUpdate",), raises=errors.GraphExecUpdateError)
def _(t: CaseContext) -> Any:
    """An update from a graph with one node more is refused: TOPOLOGY_CHANGED, no error node."""
    buf = _zeroed(t)
    g1, _a = _memset_graph(t, buf, 1)
    g2, b = _memset_graph(t, buf, 2)
    b.empty()
    exe = t.instantiate(g1)
    with t.under_test():
        _expect_update_error(t, exe, g2, UpdateResult.TOPOLOGY_CHANGED, lambda n: n is None)


@case("exec.update.edge_added", cite=DOC_GRAPH_EXEC_UPDATE_SETS_RESULT + " -- "
                                     "cudaGraphExecUpdateErrorTopologyChanged when a node in hGraph has a "
                                     "different number of dependencies than the node from hGraphExec it is "
                                     "paired with; errorNode is the node from hGraph", apis=("GraphExecUpdate",), raises=errors.GraphExecUpdateError)
def _(t: CaseContext) -> Any:
    """The same nodes with one edge more: TOPOLOGY_CHANGED naming a node of the new graph."""
    g1 = t.graph()
    g1.add_empty()
    g1.add_empty()
    g2 = t.graph()
    a2 = g2.add_empty()
    b2 = g2.add_empty()
    g2.add_dependencies([a2], [b2])
    exe = t.instantiate(g1)
    # CUDA 12.9-13.5 name no error node here: a known deviation (deviations.py).
    with t.under_test():
        _expect_update_error(t, exe, g2, UpdateResult.TOPOLOGY_CHANGED, lambda n: n is not None and n.graph is g2)


@case("exec.update.edge_removed", cite=DOC_GRAPH_EXEC_UPDATE_SETS_RESULT + " -- "
                                       "cudaGraphExecUpdateErrorTopologyChanged when a node in hGraph has a "
                                       "different number of dependencies than the node it is paired with",
      apis=("GraphExecUpdate",), raises=errors.GraphExecUpdateError)
def _(t: CaseContext) -> Any:
    """The same nodes with one edge less: TOPOLOGY_CHANGED."""
    g1 = t.graph()
    a1 = g1.add_empty()
    a1.empty()
    g2 = t.graph()
    g2.add_empty()
    g2.add_empty()
    exe = t.instantiate(g1)
    with t.under_test():
        _expect_update_error(t, exe, g2, UpdateResult.TOPOLOGY_CHANGED)


@case("exec.update.edge_moved", cite=DOC_GRAPH_EXEC_UPDATE_SETS_RESULT + " -- "
                                     "cudaGraphExecUpdateErrorTopologyChanged when a node in hGraph has a "
                                     "dependency that does not match with the corresponding dependency of the "
                                     "paired node",
      apis=("GraphExecUpdate",), raises=errors.GraphExecUpdateError)
def _(t: CaseContext) -> Any:
    """Same nodes and edge count, but the host node depends on the empty node instead of the memset."""
    buf = _zeroed(t)
    g1 = t.graph()
    m1, _e1, h1 = g1.add_memset(buf, 1, N), g1.add_empty(), g1.add_host(lambda: None)
    g1.add_dependencies([m1], [h1])
    g2 = t.graph()
    _m2, e2, h2 = g2.add_memset(buf, 1, N), g2.add_empty(), g2.add_host(lambda: None)
    g2.add_dependencies([e2], [h2])
    exe = t.instantiate(g1)
    with t.under_test():
        _expect_update_error(t, exe, g2, UpdateResult.TOPOLOGY_CHANGED)


@case("exec.update.node_type_changed", cite=DOC_GRAPH_EXEC_UPDATE_SETS_RESULT + " -- "
                                            "cudaGraphExecUpdateErrorNodeTypeChanged when a node in hGraph has a "
                                            "different type than the node from hGraphExec it is paired with; "
                                            "errorNode is the node from hGraph", apis=("GraphExecUpdate",), raises=errors.GraphExecUpdateError)
def _(t: CaseContext) -> Any:
    """A memset paired with a memcpy: NODE_TYPE_CHANGED naming the memcpy node."""
    a, b = _zeroed(t), _zeroed(t)
    g1, _m = _memset_graph(t, a, 1)
    g2 = t.graph()
    c = g2.add_memcpy(a, b, N)
    exe = t.instantiate(g1)
    with t.under_test():
        _expect_update_error(t, exe, g2, UpdateResult.NODE_TYPE_CHANGED, lambda n: n is c)


@case("exec.update.empty_to_host_type_changed", cite=DOC_GRAPH_EXEC_UPDATE_SETS_RESULT + " -- "
                                                     "cudaGraphExecUpdateErrorNodeTypeChanged when a node in hGraph "
                                                     "has a different type than the node it is paired with", apis=("GraphExecUpdate",),
      raises=errors.GraphExecUpdateError)
def _(t: CaseContext) -> Any:
    """An empty node paired with a host node: NODE_TYPE_CHANGED."""
    g1 = t.graph()
    g1.add_empty()
    g2 = t.graph()
    g2.add_host(lambda: None)
    exe = t.instantiate(g1)
    with t.under_test():
        _expect_update_error(t, exe, g2, UpdateResult.NODE_TYPE_CHANGED)


@case("exec.update.memset_1d_to_2d", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphExecUpdate: \"cudaGraphExecUpdate sets the "
                                          "result member of resultInfo to: - cudaGraphExecUpdateError if passed an invalid value. - "
                                          "cudaGraphExecUpdateErrorTopologyChanged if the graph topology changed - "
                                          "cudaGraphExecUpdateErrorNodeTypeChanged if the type of a node changed, in which case "
                                          "hErrorNode_out is set to the node from hGraph. - cudaGraphExecUpdateErrorFunctionChanged if "
                                          "the function of a kernel node changed (CUDA driver < 11.2) - "
                                          "cudaGraphExecUpdateErrorUnsupportedFunctionChange if the func field of a kernel changed in "
                                          "an unsupported way(see note above), in which case hErrorNode_out is set to the node from "
                                          "hGraph - cudaGraphExecUpdateErrorParametersChanged if any parameters to a node changed in a "
                                          "way that is not supported, in which case hErrorNode_out is set to the node from hGraph - "
                                          "cudaGraphExecUpdateErrorAttributesChanged if any attributes of a node changed in a way that "
                                          "is not supported, in which case hErrorNode_out is set to the node from hGraph - "
                                          "cudaGraphExecUpdateErrorNotSupported if something about a node is unsupported, like the "
                                          "node's type or configuration, in which case hErrorNode_out is set to the node from hGraph\" "
                                          "-- memset nodes: only 1D memsets can be changed; cudaGraphExecUpdateErrorParametersChanged "
                                          "if any parameters to a node changed in a way that is not supported", apis=("GraphExecUpdate",), raises=errors.GraphExecUpdateError)
def _(t: CaseContext) -> Any:
    """A 1-D memset paired with a 2-D one: PARAMETERS_CHANGED."""
    buf = _zeroed(t)
    g1, _a = _memset_graph(t, buf, 1, 64)
    g2 = t.graph()
    g2.add_memset(buf, 1, 64, height=4, pitch=128)
    exe = t.instantiate(g1)
    with t.under_test():
        _expect_update_error(t, exe, g2, UpdateResult.PARAMETERS_CHANGED)


@case("exec.update.memcpy_memory_type_changed", cite=DOC_GRAPH_EXEC_UPDATE_PRESENT_AT + " -- additional memcpy node "
                                                     "restrictions: changing either the source or destination memory "
                                                     "type (device, host, array) is not supported "
                                                     "(cudaGraphExecUpdateErrorParametersChanged)", apis=("GraphExecUpdate",), raises=errors.GraphExecUpdateError)
def _(t: CaseContext) -> Any:
    """A device-to-device copy paired with a device-to-host copy: PARAMETERS_CHANGED."""
    # unsure: pageable host memory may count as another context rather than another memory type;
    # the result could be ERROR or NOT_SUPPORTED.
    src, out = _zeroed(t), _zeroed(t)
    host = bytearray(N)
    g1 = t.graph()
    g1.add_memcpy(out, src, N)
    g2 = t.graph()
    g2.add_memcpy(host, src, N)
    exe = t.instantiate(g1)
    with t.under_test():
        _expect_update_error(t, exe, g2, UpdateResult.PARAMETERS_CHANGED)


@case("exec.update.child_topology_changed", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphExecNodeSetParams: \"child graph Topology "
                                                 "must match and restrictions apply recursively\" -- child graph nodes: the topology must match "
                                                 "and the restrictions apply recursively", apis=("GraphExecUpdate",), raises=errors.GraphExecUpdateError)
def _(t: CaseContext) -> Any:
    """A child graph with one node more: refused with TOPOLOGY_CHANGED."""
    # CUDA 12.9-13.5: TOPOLOGY_CHANGED for the nested mismatch.
    c1 = t.graph()
    c1.add_empty()
    c2 = t.graph()
    c2.add_empty().empty()
    g1 = t.graph()
    g1.add_child_graph(c1)
    g2 = t.graph()
    g2.add_child_graph(c2)
    exe = t.instantiate(g1)
    with t.under_test():
        _expect_update_error(t, exe, g2, UpdateResult.TOPOLOGY_CHANGED)


@case("exec.update.refused_leaves_exec", cite=DOC_GRAPH_EXEC_UPDATE_RETURNS_GRAPH + " -- "
                                              "cudaErrorGraphExecUpdateFailure: the graph update was not "
                                              "performed because it included changes which violated constraints",
      apis=("GraphExecUpdate", "GraphLaunch"), expect=(UpdateResult.TOPOLOGY_CHANGED, b"\x01" * 8, b"\x00" * 8))
def _(t: CaseContext) -> Any:
    """After a refused update the executable graph still does its original work."""
    a, b = _zeroed(t), _zeroed(t)
    g1, _m = _memset_graph(t, a, 1)
    g2, x = _memset_graph(t, b, 2)
    x.memset(b, 3, N)
    exe = t.instantiate(g1)
    e = t.raises(errors.GraphExecUpdateError, exe.update, g2)
    _run(t, exe)
    return getattr(e, "result", None), a.to_bytes(8), b.to_bytes(8)


@case("exec.update.result_error_is_update_failure", cite=DOC_GRAPH_EXEC_UPDATE_RETURNS_GRAPH + " -- returns "
                                                         "cudaErrorGraphExecUpdateFailure when the update was not "
                                                         "performed; pygraphrt exec API: GraphExecUpdateError is a "
                                                         "GraphExecUpdateFailure",
      apis=("GraphExecUpdate",), raises=errors.GraphExecUpdateFailure)
def _(t: CaseContext) -> Any:
    """A refused update raises the vendor-neutral update-failure class."""
    g1 = t.graph()
    g1.add_empty()
    g2 = t.graph()
    exe = t.instantiate(g1)
    with t.under_test():
        exe.update(g2)


@case("exec.update.closed_graph", kind="binding", cite=UPDATE + "hGraph - the graph containing the updated parameters; "
      + PYGRAPHRT + "a closed graph raises InvalidResourceHandle", apis=("GraphExecUpdate",),
      raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """Updating from a closed graph is refused."""
    g1 = t.graph()
    g1.add_empty()
    g2 = t.graph()
    g2.add_empty()
    exe = t.instantiate(g1)
    g2.close()
    exe.update(g2)


@case("exec.update.closed_exec", kind="binding", cite=UPDATE + "hGraphExec - the instantiated graph to be updated; "
      + PYGRAPHRT + "a closed executable graph raises InvalidResourceHandle", apis=("GraphExecUpdate",),
      raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """Updating a closed executable graph is refused."""
    g = t.graph()
    g.add_empty()
    exe = t.instantiate(g)
    exe.close()
    exe.update(g)


@case("exec.update.setter_with_new_graph_node", kind="binding", cite=SET_MEMSET + SAME_GRAPH + "; " + PYCHECK,
      apis=("GraphExecUpdate", "GraphExecMemsetNodeSetParams"), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """After an update, a node of the graph updated from is no node of the executable graph."""
    buf = _zeroed(t)
    g1, _m1 = _memset_graph(t, buf, 1)
    g2, m2 = _memset_graph(t, buf, 2)
    exe = t.instantiate(g1)
    exe.update(g2)
    exe.set_memset(m2, value=3)


# ============================================================================ per-node setters: memset
@case("exec.set_memset.value_this_exec_only", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphExecMemsetNodeSetParams: \"The "
                                                   "modifications only affect future launches of hGraphExec\" -- the modifications only affect "
                                                   "future launches of hGraphExec; node is not modified by this call", apis=("GraphExecMemsetNodeSetParams",
                                                                                "GraphMemsetNodeGetParams"),
      expect=(b"\x07" * 8, 1))
def _(t: CaseContext) -> Any:
    """A new memset value reaches the executable graph; the graph's node keeps its value."""
    buf = _zeroed(t)
    g, m = _memset_graph(t, buf, 1)
    exe = t.instantiate(g)
    exe.set_memset(m, value=7)
    _run(t, exe)
    return buf.to_bytes(8), _typed(m)["value"]


@case("exec.set_memset.destination", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphExecMemsetNodeSetParams: \"The new "
                                          "destination pointer in pNodeParams must be to the same kind of allocation as the original "
                                          "destination pointer and have the same context association and device mapping as the original "
                                          "destination pointer\" -- the destination memory must be allocated from the same context as "
                                          "the original destination memory", apis=("GraphExecMemsetNodeSetParams",),
      expect=(b"\x00" * 8, b"\x08" * 8))
def _(t: CaseContext) -> Any:
    """A memset pointed at another buffer writes there instead."""
    a, b = _zeroed(t), _zeroed(t)
    g, m = _memset_graph(t, a, 8)
    exe = t.instantiate(g)
    exe.set_memset(m, dst=b)
    _run(t, exe)
    return a.to_bytes(8), b.to_bytes(8)


@case("exec.set_memset.count", cite=("CUDA Runtime API 13.5, Graph Management, cudaGraphExecMemsetNodeSetParams: \"For 1d memsets, changes "
      "in height are explicitly rejected and other changes are opportunistically allowed if the resulting "
      "work maps onto the work resources already allocated for the node\" -- a shorter 1-D memset fits the "
      "node's resources"),
      apis=("GraphExecMemsetNodeSetParams",), expect=b"\x09" * 4 + b"\x00" * 4)
def _(t: CaseContext) -> Any:
    """A memset shortened to 4 bytes writes 4 bytes."""
    buf = _zeroed(t)
    g, m = _memset_graph(t, buf, 9)
    exe = t.instantiate(g)
    exe.set_memset(m, count=4)
    _run(t, exe)
    return buf.to_bytes(8)


@case("exec.set_memset.zero_count", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphExecMemsetNodeSetParams: \"Zero sized "
                                         "operations are not supported\" -- zero-length operations are not supported; returns "
                                         "cudaErrorInvalidValue", apis=("GraphExecMemsetNodeSetParams",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A zero-byte memset is refused in an executable graph."""
    buf = _zeroed(t)
    g, m = _memset_graph(t, buf, 1)
    exe = t.instantiate(g)
    t.call_under_test(exe.set_memset, m, count=0)


@case("exec.set_memset.two_dimensional", cite=("CUDA Runtime API 13.5, Graph Management, cudaGraphExecMemsetNodeSetParams: \"Both the value and "
      "pointer address may be updated\" -- the value of a 2-D memset changes, its shape is kept (\"for 2d "
      "memsets, all dimension changes are rejected\"); \"The modifications only affect future launches of "
      "hGraphExec\" -- the graph's node keeps its value"), apis=("GraphExecMemsetNodeSetParams", "GraphMemsetNodeGetParams", "GraphLaunch"),
      expect=(b"\x02" * 64, b"\x00" * 64, b"\x02" * 64, b"\x00" * 64, 1))
def _(t: CaseContext) -> Any:
    """A 2-D memset given a new value (its shape kept) writes the new value in its rows only; the graph's
    node keeps the old value."""
    buf = _zeroed(t)
    g = t.graph()
    m = g.add_memset(buf, 1, 64, height=4, pitch=128)
    exe = t.instantiate(g)
    exe.set_memset(m, value=2)
    _run(t, exe)
    rows = buf.to_bytes(512)
    # row 0, the gap after it, row 3 (the last), the bytes after the last row
    return rows[0:64], rows[64:128], rows[384:448], rows[448:512], _typed(m)["value"]


@case("exec.set_memset.other_graph_node", kind="binding",
      cite=SET_MEMSET + "node must remain in the graph which was used to "
      "instantiate hGraphExec; " + PYCHECK, apis=("GraphExecMemsetNodeSetParams",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A memset node of another graph is refused by pygraphrt."""
    buf = _zeroed(t)
    g1, _m1 = _memset_graph(t, buf, 1)
    _g2, m2 = _memset_graph(t, buf, 2)
    t.instantiate(g1).set_memset(m2, value=3)


@case("exec.set_memset.other_graph_node_raw", kind="binding",
      cite=SET_MEMSET + "node must remain in the graph which was used "
      "to instantiate hGraphExec; returns cudaErrorInvalidValue", apis=("GraphExecMemsetNodeSetParams",),
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """The runtime refuses a memset node of another graph."""
    buf = _zeroed(t)
    g1, m1 = _memset_graph(t, buf, 1)
    _g2, m2 = _memset_graph(t, buf, 2)
    exe = t.instantiate(g1)
    ops = t.backend.ops
    p = t.ffi.new(f"{ops.memset_params_type} *")
    t.ffi.memmove(p, m1._query(ops.memset_params_type, "GraphMemsetNodeGetParams"),
                  t.ffi.sizeof(ops.memset_params_type))
    t.call("GraphExecMemsetNodeSetParams", exe.handle, m2.handle, p)


@case("exec.set_memset.destroyed_node", kind="binding",
      cite=SET_MEMSET + "node must remain in the graph which was used to "
      "instantiate hGraphExec; " + PYGRAPHRT + "a destroyed node raises InvalidResourceHandle",
      apis=("GraphDestroyNode", "GraphExecMemsetNodeSetParams"), raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """A node removed from the graph after instantiation cannot be set."""
    buf = _zeroed(t)
    g, m = _memset_graph(t, buf, 1)
    exe = t.instantiate(g)
    m.destroy()
    exe.set_memset(m, value=2)


@case("exec.set_memset.wrong_node_type", kind="binding",
      cite=SET_MEMSET + "node - memset node from the graph; " + PYCHECK,
      apis=("GraphExecMemsetNodeSetParams",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """set_memset on an empty node is refused."""
    g = t.graph()
    e = g.add_empty()
    t.instantiate(g).set_memset(e, value=1)


@case("exec.set_memset.value_too_wide", kind="binding",
      cite=SET_MEMSET + "the value is of elementSize bytes; " + PYCHECK,
      apis=("GraphExecMemsetNodeSetParams",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A value wider than the node's element size is refused."""
    buf = _zeroed(t)
    g, m = _memset_graph(t, buf, 1)
    t.instantiate(g).set_memset(m, value=0x1FF)


# ============================================================================ per-node setters: memcpy
@case("exec.set_memcpy.addresses", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphExecMemcpyNodeSetParams1D: \"The "
                                        "modifications only affect future launches of hGraphExec\" -- the modifications only affect "
                                        "future launches of hGraphExec; node is not modified by this call", apis=("GraphExecMemcpyNodeSetParams1D",
                                                                      "GraphMemcpyNodeGetParams"),
      expect=(b"\x00" * 8, b"\x44" * 8, True))
def _(t: CaseContext) -> Any:
    """A copy pointed at other buffers copies those; the graph's node keeps its addresses."""
    src1, src2, out1, out2 = _zeroed(t), t.malloc(N), _zeroed(t), _zeroed(t)
    src2.copy_from(b"\x44" * N)
    g = t.graph()
    c = g.add_memcpy(out1, src1, N)
    exe = t.instantiate(g)
    exe.set_memcpy(c, out2, src2, N)
    _run(t, exe)
    params = _typed(c)
    return out1.to_bytes(8), out2.to_bytes(8), (params["dst"], params["src"]) == (out1.ptr, src1.ptr)


@case("exec.set_memcpy.count", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphExecMemcpyNodeSetParams1D: \"Updates the "
                                    "work represented by node in hGraphExec as though node had contained the given params at "
                                    "instantiation. node must remain in the graph which was used to instantiate hGraphExec\" -- "
                                    "updates the work represented by node as though it had contained the given copy at "
                                    "instantiation", apis=("GraphExecMemcpyNodeSetParams1D",),
      expect=b"\x45" * 4 + b"\x00" * 4)
def _(t: CaseContext) -> Any:
    """A copy shortened to 4 bytes copies 4 bytes."""
    src, out = t.malloc(N), _zeroed(t)
    src.copy_from(b"\x45" * N)
    g = t.graph()
    c = g.add_memcpy(out, src, N)
    exe = t.instantiate(g)
    exe.set_memcpy(c, out, src, 4)
    _run(t, exe)
    return out.to_bytes(8)


@case("exec.set_memcpy.zero_count", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphExecMemcpyNodeSetParams1D: \"Zero-length "
                                         "operations are not supported\" -- zero-length operations are not supported; returns "
                                         "cudaErrorInvalidValue", apis=("GraphExecMemcpyNodeSetParams1D",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A zero-byte copy is refused in an executable graph."""
    src, out = _zeroed(t), _zeroed(t)
    g = t.graph()
    c = g.add_memcpy(out, src, N)
    exe = t.instantiate(g)
    with t.under_test():
        exe.set_memcpy(c, out, src, 0)


@case("exec.set_memcpy.memory_type_changed", cite=("CUDA Runtime API 13.5, Graph Management, cudaGraphExecMemcpyNodeSetParams1D: \"Returns "
      "cudaErrorInvalidValue if the memory operands' mappings changed\" -- a device-to-host copy changes the"
      " destination's mapping"), apis=("GraphExecMemcpyNodeSetParams1D",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A device-to-device copy cannot become a device-to-host copy in an executable graph."""
    # unsure: whether pageable host memory counts as a changed mapping on every runtime.
    src, out = _zeroed(t), _zeroed(t)
    host = bytearray(N)
    g = t.graph()
    c = g.add_memcpy(out, src, N)
    exe = t.instantiate(g)
    with t.under_test():
        exe.set_memcpy(c, host, src, N)


@case("exec.set_memcpy.other_graph_node", kind="binding",
      cite=SET_MEMCPY + "node must remain in the graph which was used to "
      "instantiate hGraphExec; " + PYCHECK, apis=("GraphExecMemcpyNodeSetParams1D",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A memcpy node of another graph is refused."""
    src, out = _zeroed(t), _zeroed(t)
    g1 = t.graph()
    g1.add_memcpy(out, src, N)
    g2 = t.graph()
    c2 = g2.add_memcpy(out, src, N)
    t.instantiate(g1).set_memcpy(c2, out, src, N)


@case("exec.set_memcpy.wrong_node_type", kind="binding",
      cite=SET_MEMCPY + "node - memcpy node from the graph; " + PYCHECK,
      apis=("GraphExecMemcpyNodeSetParams1D",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """set_memcpy on a memset node is refused."""
    buf = _zeroed(t)
    g, m = _memset_graph(t, buf, 1)
    t.instantiate(g).set_memcpy(m, buf, buf, 4)


# ============================================================================ per-node setters: host, child, events
@case("exec.set_host.new_function", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphExecHostNodeSetParams: \"The modifications "
                                         "only affect future launches of hGraphExec\" -- the modifications only affect future launches "
                                         "of hGraphExec; node is not modified by this call", apis=("GraphExecHostNodeSetParams",
                                                                      "GraphHostNodeGetParams"),
      expect=(["second"], True))
def _(t: CaseContext) -> Any:
    """The executable graph runs the new function; the graph's node keeps the old one."""
    calls: list[str] = []

    def first() -> None:
        calls.append("first")

    g = t.graph()
    h = g.add_host(first)
    exe = t.instantiate(g)
    exe.set_host(h, lambda: calls.append("second"))
    exe.launch(t.stream())
    exe.synchronize()
    return calls, _typed(h)["fn"] is first


@case("exec.set_host.not_callable", kind="binding", cite=SET_HOST + "pNodeParams->fn is the host function; " + PYCHECK,
      apis=("GraphExecHostNodeSetParams",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A host function that is not callable is refused."""
    g = t.graph()
    h = g.add_host(lambda: None)
    t.instantiate(g).set_host(h, 42)


@case("exec.set_host.wrong_node_type", kind="binding", cite=SET_HOST + "node - host node from the graph; " + PYCHECK,
      apis=("GraphExecHostNodeSetParams",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """set_host on an empty node is refused."""
    g = t.graph()
    e = g.add_empty()
    t.instantiate(g).set_host(e, lambda: None)


@case("exec.set_child_graph.same_topology", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphExecChildGraphNodeSetParams: \"Updates the "
                                                 "work represented by node in hGraphExec as though the nodes contained in node's graph had the "
                                                 "parameters contained in childGraph's nodes at instantiation. node must remain in the graph "
                                                 "which was used to instantiate hGraphExec\" -- updates the work represented by node as though "
                                                 "the nodes contained in node's graph had the parameters contained in childGraph's nodes at "
                                                 "instantiation", apis=("GraphExecChildGraphNodeSetParams",), expect=(b"\x33" * 8, 1))
def _(t: CaseContext) -> Any:
    """A child graph of the same shape with a new value changes the executable graph only."""
    buf = _zeroed(t)
    c1, _a = _memset_graph(t, buf, 1)
    c2, _b = _memset_graph(t, buf, 0x33)
    g = t.graph()
    node = g.add_child_graph(c1)
    exe = t.instantiate(g)
    exe.set_child_graph(node, c2)
    _run(t, exe)
    return buf.to_bytes(8), node.child.nodes()[0].params["value"]


@case("exec.set_child_graph.topology_differs", cite=DOC_GRAPH_EXEC_CHILD_GRAPH_NODE_SET_PARAMS_TOPOLOGY_CHILDGRAPH + " -- the topology of "
                                                    "childGraph, as well as the node insertion order, must match "
                                                    "that of the graph contained in node; returns "
                                                    "cudaErrorInvalidValue",
      apis=("GraphExecChildGraphNodeSetParams",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A child graph with another number of nodes is refused."""
    buf = _zeroed(t)
    c1, _a = _memset_graph(t, buf, 1)
    c2, b = _memset_graph(t, buf, 2)
    b.empty()
    g = t.graph()
    node = g.add_child_graph(c1)
    exe = t.instantiate(g)
    with t.under_test():
        exe.set_child_graph(node, c2)


@case("exec.set_child_graph.node_type_differs", cite=DOC_GRAPH_EXEC_CHILD_GRAPH_NODE_SET_PARAMS_TOPOLOGY_CHILDGRAPH + " -- the topology of "
                                                     "childGraph must match that of the graph contained in node (node "
                                                     "types included); returns cudaErrorInvalidValue",
      apis=("GraphExecChildGraphNodeSetParams",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A child graph whose only node has another type is refused."""
    buf = _zeroed(t)
    c1, _a = _memset_graph(t, buf, 1)
    c2 = t.graph()
    c2.add_empty()
    g = t.graph()
    node = g.add_child_graph(c1)
    exe = t.instantiate(g)
    with t.under_test():
        exe.set_child_graph(node, c2)


@case("exec.set_child_graph.not_a_graph", kind="binding",
      cite=SET_CHILD + "childGraph - the graph supplying the updated "
      "parameters; " + PYCHECK, apis=("GraphExecChildGraphNodeSetParams",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A child that is not a Graph is refused."""
    g = t.graph()
    node = g.add_child_graph(t.graph())
    t.instantiate(g).set_child_graph(node, "graph")


@case("exec.set_child_graph.wrong_node_type", kind="binding",
      cite=SET_CHILD + "node - host node from the graph which was used "
      "to instantiate graphExec (a child graph node); " + PYCHECK, apis=("GraphExecChildGraphNodeSetParams",),
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """set_child_graph on an empty node is refused."""
    g = t.graph()
    e = g.add_empty()
    t.instantiate(g).set_child_graph(e, t.graph())


@case("exec.set_event.record_node", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphExecEventRecordNodeSetEvent: \"Sets the "
                                         "event of an event record node in an executable graph hGraphExec\" -- sets the event of an "
                                         "event record node in an executable graph; the node's event in the graph is not modified", apis=("GraphExecEventRecordNodeSetEvent",
                                                                     "EventElapsedTime"),
      expect=(True, True, True))
def _(t: CaseContext) -> Any:
    """After the setter the launch records the new event, not the node's original one."""
    # EventElapsedTime on a never-recorded event: InvalidResourceHandle (documented; CUDA 12.9-13.5 agree).
    e1, e2, start = t.event(timing=True), t.event(timing=True), t.event(timing=True)
    g = t.graph()
    rec = g.add_event_record(e1)
    exe = t.instantiate(g)
    exe.set_event(rec, e2)
    s = t.stream()
    s.record(start)
    exe.launch(s)
    s.synchronize()
    new_recorded = e2.elapsed_ms(start) >= 0.0
    try:
        e1.elapsed_ms(start)
        old_unrecorded = False
    except errors.InvalidResourceHandle:
        old_unrecorded = True
    return new_recorded, old_unrecorded, rec.params["event"] == int(e1)


@case("exec.set_event.wait_node", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphExecEventWaitNodeSetEvent: \"The "
                                       "modifications only affect future launches of hGraphExec\" -- Sets the event of an event wait "
                                       "node in the given graphExec to event; the modifications only affect future launches of "
                                       "hGraphExec",
      apis=("GraphExecEventWaitNodeSetEvent", "StreamQuery"), expect=("finished", b"\x66" * 8))
def _(t: CaseContext) -> Any:
    """After the setter the launch waits for the new (complete) event, not the original (pending) one."""
    buf = _zeroed(t)
    gate = threading.Event()
    caller = threading.get_ident()
    blocker, idle, s = t.stream(), t.stream(), t.stream()
    pending, ready = t.event(), t.event()
    g = t.graph()
    w = g.add_event_wait(pending)
    w.memset(buf, 0x66, N)
    exe = t.instantiate(g)
    exe.set_event(w, ready)
    idle.record(ready)
    idle.synchronize()

    def hold() -> None:
        # Holds `pending` open until the case has seen the launch finish (opened by the case,
        # bounded only against a hang).  Where host functions run in the caller's thread (sim)
        # nothing can be held open: waiting there would block the caller itself.
        if threading.get_ident() != caller:
            gate.wait(600.0)

    blocker.launch_host_func(hold)
    blocker.record(pending)
    try:
        exe.launch(s)
        # A launch still waiting for `pending` never finishes while the blocker is held: the
        # bound (generous, for a busy host) turns that into a clear failure, not a hang.
        deadline = time.monotonic() + 120.0
        while not s.is_done:
            if time.monotonic() > deadline:
                break
            time.sleep(0.002)
        state = "finished" if s.is_done else "still waiting after 120 s (for the original, pending event?)"
    finally:
        gate.set()
        blocker.synchronize()
        s.synchronize()
    return state, buf.to_bytes(8)


@case("exec.set_event.wrong_node_type", kind="binding", cite=SET_RECORD + "hNode - event record node; " + PYCHECK,
      apis=("GraphExecEventRecordNodeSetEvent",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """set_event on an empty node is refused."""
    g = t.graph()
    e = g.add_empty()
    t.instantiate(g).set_event(e, t.event())


@case("exec.set_event.not_an_event", kind="binding", cite=SET_WAIT + "event - the event to wait for; " + PYCHECK,
      apis=("GraphExecEventWaitNodeSetEvent",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """set_event with something that is not an Event is refused."""
    g = t.graph()
    w = g.add_event_wait(t.event())
    t.instantiate(g).set_event(w, 7)


@case("exec.set_event.closed_event", kind="binding", cite=SET_RECORD + "event - the event to record; " + PYGRAPHRT
      + "a closed event raises InvalidResourceHandle", apis=("GraphExecEventRecordNodeSetEvent",),
      raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """set_event with a closed event is refused."""
    g = t.graph()
    rec = g.add_event_record(t.event())
    exe = t.instantiate(g)
    ev = t.event()
    ev.close()
    exe.set_event(rec, ev)


@case("exec.set_event.other_graph_node", kind="binding",
      cite=SET_RECORD + "hNode must remain in the graph which was used to "
      "instantiate hGraphExec; " + PYCHECK, apis=("GraphExecEventRecordNodeSetEvent",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """An event record node of another graph is refused."""
    g1 = t.graph()
    g1.add_event_record(t.event())
    g2 = t.graph()
    rec2 = g2.add_event_record(t.event())
    t.instantiate(g1).set_event(rec2, t.event())


# ============================================================================ generic setter
@case("exec.set_node_params.memset", cite=DOC_GRAPH_EXEC_NODE_SET_PARAMS_ALLOWED_CHANGES + " -- memset: addresses for "
                                          "1-dimensional memsets if allocated in same context; the modifications "
                                          "only affect future launches of hGraphExec; node is not modified by "
                                          "this call", apis=("GraphExecNodeSetParams",), requires=("node_set_params",),
      expect=(b"\x1d" * 8, 1))
def _(t: CaseContext) -> Any:
    """The generic setter changes a memset in the executable graph only."""
    buf = _zeroed(t)
    g, m = _memset_graph(t, buf, 1)
    exe = t.instantiate(g)
    exe.set_node_params(m, dst=buf, value=0x1D, count=N)
    _run(t, exe)
    return buf.to_bytes(8), m.params["value"]


@case("exec.set_node_params.host", cite=DOC_GRAPH_EXEC_NODE_SET_PARAMS_ALLOWED_CHANGES + " -- host: unrestricted", apis=("GraphExecNodeSetParams",),
      requires=("node_set_params",), expect=["second"])
def _(t: CaseContext) -> Any:
    """The generic setter replaces a host node's function in the executable graph."""
    calls: list[str] = []
    g = t.graph()
    h = g.add_host(lambda: calls.append("first"))
    exe = t.instantiate(g)
    exe.set_node_params(h, fn=lambda: calls.append("second"))
    exe.launch(t.stream())
    exe.synchronize()
    return calls


@case("exec.set_node_params.child_graph", cite=DOC_GRAPH_EXEC_NODE_SET_PARAMS_ALLOWED_CHANGES + " -- child graph: topology "
                                               "must match and restrictions apply recursively", apis=("GraphExecNodeSetParams",), requires=("node_set_params",), expect=b"\x1e" * 8)
def _(t: CaseContext) -> Any:
    """The generic setter takes a child graph of the same shape."""
    buf = _zeroed(t)
    c1, _a = _memset_graph(t, buf, 1)
    c2, _b = _memset_graph(t, buf, 0x1E)
    g = t.graph()
    node = g.add_child_graph(c1)
    exe = t.instantiate(g)
    exe.set_node_params(node, child=c2)
    _run(t, exe)
    return buf.to_bytes(8)


@case("exec.set_node_params.missing_parameter", kind="binding",
      cite=SET_NODE + "nodeParams of the node's type; " + PYCHECK,
      apis=("GraphExecNodeSetParams",), requires=("node_set_params",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """The generic setter without a memset's required parameters is refused."""
    buf = _zeroed(t)
    g, m = _memset_graph(t, buf, 1)
    t.instantiate(g).set_node_params(m, value=2)


@case("exec.set_node_params.other_graph_node", kind="binding",
      cite=SET_NODE + "node must not have been removed from the "
      "original graph (a node of the graph the executable was instantiated from); " + PYCHECK,
      apis=("GraphExecNodeSetParams",), requires=("node_set_params",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """The generic setter refuses a node of another graph."""
    buf = _zeroed(t)
    g1, _m1 = _memset_graph(t, buf, 1)
    _g2, m2 = _memset_graph(t, buf, 2)
    t.instantiate(g1).set_node_params(m2, dst=buf, value=3, count=N)


# ============================================================================ enable / disable
@case("exec.enabled.default", cite=("Observed, cudaGraphNodeGetEnabled: the memset and memcpy nodes of a new "
                                    "executable graph read as enabled (isEnabled 1) (deviations.OBSERVATIONS); "
                                    "CUDA Runtime API 13.5, Graph Management, cudaGraphNodeGetEnabled: \"Sets "
                                    "isEnabled to 1 if hNode is enabled, or 0 if hNode is disabled\" -- no "
                                    "documentation sentence states that nodes are enabled at instantiation"), apis=("GraphNodeGetEnabled",), requires=("per_node_enable",), expect=(True, True))
def _(t: CaseContext) -> Any:
    """Memset and memcpy nodes start enabled."""
    buf, out = _zeroed(t), _zeroed(t)
    g, m = _memset_graph(t, buf, 1)
    c = m.memcpy(out, buf, N)
    exe = t.instantiate(g)
    return _enabled(t, exe, m), _enabled(t, exe, c)


@case("exec.enabled.disabled_memset_does_not_write", cite=ENABLE + "disabled nodes are functionally "
      "equivalent to empty nodes until they are reenabled", apis=("GraphNodeSetEnabled", "GraphNodeGetEnabled",
                                                                "GraphLaunch"),
      requires=("per_node_enable",), expect=(False, b"\x00" * 8, b"\x32" * 8))
def _(t: CaseContext) -> Any:
    """A disabled memset writes nothing; the enabled node after it in the same launch writes."""
    buf, other = _zeroed(t), _zeroed(t)
    g, m = _memset_graph(t, buf, 0x31)
    m.memset(other, 0x32, N)  # shows that the launch ran
    exe = t.instantiate(g)
    exe.set_enabled(m, False)
    _run(t, exe)
    return _enabled(t, exe, m), buf.to_bytes(8), other.to_bytes(8)


@case("exec.enabled.reenabled_writes", cite=ENABLE + "disabled nodes are functionally equivalent to empty "
      "nodes until they are reenabled", apis=("GraphNodeSetEnabled", "GraphLaunch"),
      requires=("per_node_enable",), expect=(b"\x00" * 8, b"\x32" * 8))
def _(t: CaseContext) -> Any:
    """Re-enabled, the memset writes again."""
    buf = _zeroed(t)
    g, m = _memset_graph(t, buf, 0x32)
    exe = t.instantiate(g)
    exe.set_enabled(m, False)
    _run(t, exe)
    off = buf.to_bytes(8)
    exe.set_enabled(m, True)
    _run(t, exe)
    return off, buf.to_bytes(8)


@case("exec.enabled.disabled_memcpy", cite=("CUDA Runtime API 13.5, Graph Management, cudaGraphNodeSetEnabled: \"disabled nodes are functionally "
      "equivalent to empty nodes until they are reenabled\" -- the disabled memcpy copies nothing, the "
      "memset before it still runs"), apis=("GraphNodeSetEnabled",
                                                                                    "GraphLaunch"),
      requires=("per_node_enable",), expect=(b"\x34" * 8, b"\x00" * 8))
def _(t: CaseContext) -> Any:
    """Of memset -> memcpy, with the memcpy disabled only the memset runs."""
    buf, out = _zeroed(t), _zeroed(t)
    g, m = _memset_graph(t, buf, 0x34)
    c = m.memcpy(out, buf, N)
    exe = t.instantiate(g)
    exe.set_enabled(c, False)
    _run(t, exe)
    return buf.to_bytes(8), out.to_bytes(8)


@case("exec.enabled.this_exec_only", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphNodeSetEnabled: \"The modifications only "
                                          "affect future launches of hGraphExec\" -- the modifications only affect future launches of "
                                          "hGraphExec; hNode is also not modified by this call", apis=("GraphNodeSetEnabled", "GraphNodeGetEnabled"),
      requires=("per_node_enable",), expect=(False, True, b"\x35" * 8))
def _(t: CaseContext) -> Any:
    """Disabling a node in one executable graph leaves another executable graph of the same graph."""
    buf = _zeroed(t)
    g, m = _memset_graph(t, buf, 0x35)
    e1, e2 = t.instantiate(g), t.instantiate(g)
    e1.set_enabled(m, False)
    _run(t, e2)
    return _enabled(t, e1, m), _enabled(t, e2, m), buf.to_bytes(8)


@case("exec.enabled.setter_while_disabled", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphNodeSetEnabled: \"Existing node parameters "
                                                 "are not affected by disabling/enabling the node\" -- existing node parameters are not "
                                                 "affected by disabling/enabling the node (parameters set meanwhile apply once reenabled)",
      apis=("GraphNodeSetEnabled", "GraphExecMemsetNodeSetParams"), requires=("per_node_enable",),
      expect=(b"\x00" * 8, b"\x36" * 8))
def _(t: CaseContext) -> Any:
    """A value set while the node is disabled is written once it is re-enabled."""
    buf = _zeroed(t)
    g, m = _memset_graph(t, buf, 1)
    exe = t.instantiate(g)
    exe.set_enabled(m, False)
    exe.set_memset(m, value=0x36)
    _run(t, exe)
    off = buf.to_bytes(8)
    exe.set_enabled(m, True)
    _run(t, exe)
    return off, buf.to_bytes(8)


@case("exec.enabled.host_node_refused", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphNodeSetEnabled: \"Currently only kernel, "
                                             "memset and memcpy nodes are supported\" -- currently only kernel, memset and memcpy nodes are "
                                             "supported; returns cudaErrorInvalidValue", apis=("GraphNodeSetEnabled",), requires=("per_node_enable",),
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A host node cannot be disabled."""
    g = t.graph()
    h = g.add_host(lambda: None)
    exe = t.instantiate(g)
    with t.under_test():
        exe.set_enabled(h, False)


@case("exec.enabled.empty_node_refused", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphNodeSetEnabled: \"Currently only kernel, "
                                              "memset and memcpy nodes are supported\" -- currently only kernel, memset and memcpy nodes are "
                                              "supported; returns cudaErrorInvalidValue", apis=("GraphNodeSetEnabled",), requires=("per_node_enable",),
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """An empty node cannot be disabled."""
    g = t.graph()
    e = g.add_empty()
    exe = t.instantiate(g)
    with t.under_test():
        exe.set_enabled(e, False)


@case("exec.enabled.get_on_host_node", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphNodeGetEnabled: \"Currently only kernel, "
                                            "memset and memcpy nodes are supported\" -- currently only kernel, memset and memcpy nodes are "
                                            "supported; returns cudaErrorInvalidValue", apis=("GraphNodeGetEnabled",), requires=("per_node_enable",),
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Asking whether a host node is enabled is refused."""
    g = t.graph()
    h = g.add_host(lambda: None)
    exe = t.instantiate(g)
    with t.under_test():
        exe.is_enabled(h)


@case("exec.enabled.other_graph_node", kind="binding",
      cite=ENABLE + "hNode - node from the graph from which graphExec was "
      "instantiated; " + PYCHECK, apis=("GraphNodeSetEnabled",), requires=("per_node_enable",),
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A node of another graph cannot be disabled."""
    buf = _zeroed(t)
    g1, _m1 = _memset_graph(t, buf, 1)
    _g2, m2 = _memset_graph(t, buf, 2)
    t.instantiate(g1).set_enabled(m2, False)


@case("exec.enabled.other_graph_node_raw", kind="binding",
      cite=ENABLE + "hNode - node from the graph from which graphExec was "
      "instantiated; returns cudaErrorInvalidValue", apis=("GraphNodeSetEnabled",), requires=("per_node_enable",),
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """The runtime refuses to disable a node of another graph."""
    buf = _zeroed(t)
    g1, _m1 = _memset_graph(t, buf, 1)
    _g2, m2 = _memset_graph(t, buf, 2)
    exe = t.instantiate(g1)
    t.call("GraphNodeSetEnabled", exe.handle, m2.handle, 0)
