"""Conformance cases, area ``capture``: stream capture and what it builds.

This module: begin/end, capture status, nested begins, the legacy stream, capture
info, cross-stream fork/join through events, capture into an existing graph,
updating the capture's dependencies, and the nodes that captured work becomes.
:mod:`.capture_rules` holds the capture-mode, per-thread, prohibited-operation and
invalidation rules; it shares the helpers defined here.

Conventions of these cases:

* every stream, event, buffer and graph comes from the context (``t.stream()``...)
  or is tracked (``_graph(t, cap)``), so a failing case leaves nothing behind;
* a negative case checks the aftermath of the error (no stream left capturing)
  before it re-raises the error it expects (:func:`_fails_then_clean`);
* cases whose documented outcome could not be confirmed without a GPU carry an
  ``# unsure:`` comment saying what to look at first.
"""

from __future__ import annotations

import contextlib
import struct
import threading
from typing import Any, Callable, Iterator

from pygraphrt import errors
from pygraphrt.enums import (PORT_PROGRAMMATIC, CaptureMode, CaptureStatus, DependencyType,
                             EdgeData, NodeType)

from .._case import CaseContext, CaseFailure, case

N = 4096  # bytes per scratch buffer

# ---------------------------------------------------------------------------- citations
_RT = "CUDA Runtime API 13.0"
_SM = f"{_RT}, Stream Management"
BEGIN = f"{_SM}, cudaStreamBeginCapture: "
END = f"{_SM}, cudaStreamEndCapture: "
IS_CAPTURING = f"{_SM}, cudaStreamIsCapturing: "
INFO = f"{_SM}, cudaStreamGetCaptureInfo: "
UPDATE = f"{_SM}, cudaStreamUpdateCaptureDependencies: "
TO_GRAPH = f"{_SM}, cudaStreamBeginCaptureToGraph: "
EXCHANGE = f"{_SM}, cudaThreadExchangeStreamCaptureMode: "
WAIT_EVENT = f"{_SM}, cudaStreamWaitEvent: "
EVENT_RECORD = f"{_RT}, Event Management, cudaEventRecord: "
ERROR_TYPES = f"{_RT}, Data types, enum cudaError: "
ATTRIBUTES = f"{_RT}, Data types, cudaLaunchAttributeProgrammaticStreamSerialization / cudaGraphEdgeData: "
SOMA = f"{_RT}, Stream Ordered Memory Allocator, cudaMallocAsync / cudaFreeAsync: "
_PG = "CUDA Programming Guide, CUDA Graphs, Stream Capture"
PG_CAPTURE = f"{_PG}: "
PG_XSTREAM = f"{_PG}, Cross-stream Dependencies and Events: "
PG_PROHIBITED = f"{_PG}, Prohibited and Unhandled Operations: "
PG_INVALIDATION = f"{_PG}, Invalidation: "
PG_MEMNODES = "CUDA Programming Guide, CUDA Graphs, Graph Memory Nodes, Stream Capture: "
PYGRAPHRT = "pygraphrt README, Stream capture: "
PYGRAPHRT_BEGIN = "pygraphrt policy (graph/_capture.py, Capture.begin), not runtime behaviour: "

BEGIN_END = ("StreamBeginCapture", "StreamEndCapture")


class CaseBoom(Exception):
    """An exception of the case's own, raised inside a ``with stream.capture()`` block."""


# ---------------------------------------------------------------------------- helpers
def _graph(t: CaseContext, cap: Any) -> Any:
    """The graph a finished capture produced, closed after the case."""
    g = cap.graph
    if g is None:
        raise CaseFailure("the capture produced no graph")
    return t.track(g)


#: A value no capture status, node type or small count has.  The raw reads below pre-fill their
#: outputs with it, so that a runtime call that reports success without writing its answer fails
#: the case instead of leaving a zero that reads as "none", "kernel" or "empty".
_UNWRITTEN = 0x5EED


def _rt_type(node: Any) -> Any:
    """The node's type as the runtime reports it (``GraphNodeGetType`` through the raw layer; the
    vendor's integer for a type pygraphrt has no name for) -- not ``node.type``, a class constant
    for nodes pygraphrt made.  The same read as ``t.runtime_type``, for helpers without ``t``."""
    from pygraphrt import _runtime

    b = _runtime.active()
    out = b.ffi.new(f"enum {b.ops.prefix}GraphNodeType *", _UNWRITTEN)  # (kernel is 0: see _UNWRITTEN)
    b.ops.call("GraphNodeGetType", getattr(node, "handle", node), out)
    if int(out[0]) == _UNWRITTEN:
        raise CaseFailure("GraphNodeGetType reported success but wrote no type")
    return b.ops.node_type_of.get(int(out[0]), int(out[0]))


def _rt_count(graph: Any) -> int:
    """The graph's node count as ``GraphGetNodes`` writes it (asked for the count; pre-filled with
    :data:`_UNWRITTEN`, so a call that writes nothing is not read as an empty graph)."""
    b = graph._backend if hasattr(graph, "_backend") else None
    from pygraphrt import _runtime

    b = b or _runtime.active()
    n = b.ffi.new("size_t *", _UNWRITTEN)
    b.ops.call("GraphGetNodes", graph.handle, b.ffi.NULL, n)
    if int(n[0]) == _UNWRITTEN:
        raise CaseFailure("GraphGetNodes reported success but wrote no count")
    return int(n[0])


def _types(graph: Any) -> tuple[NodeType, ...]:
    """Node types of ``graph`` in the runtime's listing order (GraphGetNodes), as the runtime reports
    each (GraphNodeGetType)."""
    return tuple(_rt_type(n) for n in graph.nodes())


def _edge_types(graph: Any) -> list[tuple[NodeType, NodeType]]:
    """The edges the runtime lists, as pairs of the runtime's node types."""
    return [(_rt_type(a), _rt_type(b)) for a, b, _ in graph.edges()]


def _address(handle: Any) -> int:
    """A runtime handle (or an object with ``.handle``) as an integer, for comparing handles."""
    from pygraphrt import _runtime

    return int(_runtime.active().ffi.cast("uintptr_t", getattr(handle, "handle", handle)))


def _rt_status(s: Any) -> CaptureStatus:
    """The stream's capture status as ``StreamIsCapturing`` writes it (never pygraphrt's state)."""
    b = s.backend
    ops = b.ops
    out = b.ffi.new(f"enum {ops.prefix}StreamCaptureStatus *", _UNWRITTEN)
    ops.call("StreamIsCapturing", s.handle, out)
    if int(out[0]) == _UNWRITTEN:
        raise CaseFailure("StreamIsCapturing reported success but wrote no status")
    status: CaptureStatus = ops.capture_status_of.get(int(out[0]), int(out[0]))
    return status


def _rt_info(s: Any) -> tuple[CaptureStatus, int, int, list[int]]:
    """``StreamGetCaptureInfo`` of ``s`` through the raw layer: (status, id, the capture graph's
    handle as an integer, the dependency nodes' handles as integers).  The outputs are pre-filled
    (status :data:`_UNWRITTEN`), and the id, graph and dependencies are read only while ACTIVE."""
    b = s.backend
    ops, ffi = b.ops, b.ffi
    status = ffi.new(f"enum {ops.prefix}StreamCaptureStatus *", _UNWRITTEN)
    ident = ffi.new("unsigned long long *")
    graph = ffi.new(f"{ops.prefix}Graph_t *")
    deps = ffi.new(f"const {ops.prefix}GraphNode_t **")
    n = ffi.new("size_t *")
    sym = ops.edge_forms.get("capture_info")
    if sym is not None:
        edata = ffi.new(f"const {ops.prefix}GraphEdgeData **")
        rc = getattr(ops.lib, sym)(s.handle, status, ident, graph, deps, edata, n)
    else:
        sym = ops.prefix + "StreamGetCaptureInfo"
        rc = ops.fn("StreamGetCaptureInfo")(s.handle, status, ident, graph, deps, n)
    if rc:
        raise ops.error(rc, sym)
    if int(status[0]) == _UNWRITTEN:
        raise CaseFailure(f"{sym} reported success but wrote no status")
    st: CaptureStatus = ops.capture_status_of.get(int(status[0]), int(status[0]))
    if st is not CaptureStatus.ACTIVE:
        return st, int(ident[0]), 0, []
    return st, int(ident[0]), _address(graph[0]), [_address(deps[0][i]) for i in range(int(n[0]))]


def _check_ended(t: CaseContext, s: Any) -> None:
    """After an end: the runtime reports ``s`` not capturing (pygraphrt's end() of a capture into a graph
    returns its target whatever StreamEndCapture did; this is what the runtime did)."""
    t.check_equal(_rt_status(s), CaptureStatus.NONE, "the stream after the end")


def _raw_end_keep(s: Any) -> tuple[int, BaseException | None]:
    """``StreamEndCapture`` on ``s`` through the raw layer: (the returned graph's handle as an
    integer, the error or None).  A graph it returned is destroyed when the call failed; on success
    the caller owns it (a capture into a target graph returns that graph)."""
    b = s.backend
    ops = b.ops
    out = b.ffi.new(f"{ops.prefix}Graph_t *")
    rc = ops.fn("StreamEndCapture")(s.handle, out)
    address = _address(out[0])
    if rc:
        if out[0] != b.ffi.NULL:
            ops.fn("GraphDestroy")(out[0])
        return address, ops.error(rc, ops.prefix + "StreamEndCapture")
    return address, None


def _status(s: Any) -> CaptureStatus:
    """The stream's capture status; NONE where the query itself fails (closed stream)."""
    try:
        status: CaptureStatus = s.capture_status
        return status
    except errors.GraphRTError:
        return CaptureStatus.NONE


def _not_capturing(t: CaseContext, *streams: Any, after: str = "") -> None:
    """Fail the case unless every stream is left not capturing."""
    for i, s in enumerate(streams):
        st = s.capture_status
        t.check(st is CaptureStatus.NONE, f"stream #{i} is left {st.value}{' ' + after if after else ''}")


def _raw_end(s: Any, destroy: bool = True) -> None:
    """``StreamEndCapture`` on ``s`` straight through the vendor layer (what pygraphrt's
    ``Capture`` cannot be asked to do: end on a stream it did not begin on, or from a
    state it has already left); the returned graph is destroyed unless ``destroy`` is false."""
    b = s.backend
    ops = b.ops
    out = b.ffi.new(f"{ops.prefix}Graph_t *")
    rc = ops.fn("StreamEndCapture")(s.handle, out)
    if destroy and out[0] != b.ffi.NULL:
        ops.fn("GraphDestroy")(out[0])
    if rc:
        raise ops.error(rc, ops.prefix + "StreamEndCapture")


def _raw_begin(s: Any, mode: CaptureMode = CaptureMode.GLOBAL) -> None:
    """``StreamBeginCapture`` on ``s`` without pygraphrt's own checks."""
    ops = s.backend.ops
    ops.call("StreamBeginCapture", s.handle,
             ops.value(ops.capture_modes, mode, ops.prefix + "StreamBeginCapture"))


def _force_end(*streams: Any, destroy: bool = True) -> None:
    """Clean-up of last resort: end any capture still running on ``streams``.

    Errors are ignored.  A capture that refuses to end (unjoined work) is retried
    after every capturing stream has been joined into every other one.
    """
    live = [s for s in streams if s is not None and s.is_valid]
    for _ in range(3):
        for s in live:
            if _status(s) is not CaptureStatus.NONE:
                try:
                    _raw_end(s, destroy)
                except errors.GraphRTError:
                    pass
        still = [s for s in live if _status(s) is not CaptureStatus.NONE]
        if not still:
            return
        from pygraphrt import Event

        ev = Event()
        try:
            for a in still:
                for b in still:
                    if a is not b:
                        ops = a.backend.ops
                        ops.fn("EventRecord")(ev.handle, a.handle)
                        ops.fn("StreamWaitEvent")(b.handle, ev.handle, 0)
        finally:
            try:
                ev.close()
            except errors.GraphRTError:
                pass


def _raises_here(t: CaseContext, exc: type[BaseException], fn: Callable[..., Any], *args: Any) -> BaseException:
    """``fn(*args)`` as the call under test (``t.under_test()``): it must raise ``exc``, which is returned
    for the case to re-raise after its checks -- the runner then matches the case's outcome to that
    call alone (and, for a runtime case, to the runtime calls made inside it)."""
    try:
        with t.under_test():
            fn(*args)
    except exc as e:
        return e
    except Exception as e:  # noqa: BLE001 - a different error is this case's failure
        raise CaseFailure(f"{getattr(fn, '__name__', fn)!s} raised {type(e).__name__}: {e}; "
                          f"expected {exc.__name__}") from e
    raise CaseFailure(f"{getattr(fn, '__name__', fn)!s} returned; expected {exc.__name__}")


def _fails_then_clean(t: CaseContext, exc: type[BaseException], fn: Callable[[], Any],
                      *streams: Any, destroy: bool = True) -> None:
    """``fn()`` must raise ``exc``; then no stream may be left capturing; re-raise it."""
    try:
        err = _raises_here(t, exc, fn)
        _not_capturing(t, *streams, after=f"after {type(err).__name__}")
    finally:
        _force_end(*streams, destroy=destroy)
    raise err


def _in_thread(t: CaseContext, fn: Callable[[], Any]) -> Any:
    """Run ``fn()`` on a new thread (same device) and join it; its result, or its exception re-raised."""
    dev = t.rt.current_device()
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            if t.rt.current_device() != dev:
                dev.set_current()
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the case's thread
            box["error"] = e

    th = threading.Thread(target=run, name="conformance-capture", daemon=True)
    th.start()
    th.join(120)
    if th.is_alive():
        raise CaseFailure("the second thread did not finish within 120 s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


@contextlib.contextmanager
def _thread_mode(t: CaseContext, mode: str) -> Iterator[Any]:
    """This thread's capture-interaction mode set to ``mode`` for the block, then restored."""
    prev = t.rt.exchange_capture_mode(mode)
    try:
        yield prev
    finally:
        t.rt.exchange_capture_mode(prev)


def _event_query(ev: Any) -> bool:
    """``EventQuery``: True when complete, False when not ready; other errors raise.

    pygraphrt's Event answers it as the property ``is_done``; anything else through the vendor layer.
    """
    if isinstance(getattr(type(ev), "is_done", None), property):
        return bool(ev.is_done)
    ops = ev.backend.ops
    rc = ops.fn("EventQuery")(ev.handle)
    if rc == 0:
        return True
    err = ops.error(rc, ops.prefix + "EventQuery")
    if isinstance(err, errors.NotReady):
        return False
    raise err


def _capture_id(s: Any) -> tuple[CaptureStatus, int]:
    """(status, capture id) of any stream, e.g. one that joined a capture by an event wait.

    pygraphrt has capture info only on the Capture object (of the stream that began
    it); for a joined stream the vendor layer is asked directly.
    """
    status, ident, _, _ = s.backend.ops.capture_info(s.handle)
    return status, int(ident)


def _malloc(t: CaseContext, size: int = 256) -> Any:
    """A synchronous device allocation (``Malloc``), tracked when it succeeds."""
    return t.malloc(size)


def _launch(t: CaseContext, s: Any, name: str, buf: Any, value: int, n: int) -> None:
    """Launch standard kernel ``name`` (fill_u32 / add_u32) over ``n`` unsigned ints."""
    s.launch(t.kernel(name), (n + 255) // 256, 256, buf, value, n)


def _u32s(buf: Any, n: int) -> list[int]:
    return list(struct.unpack(f"{n}I", buf.to_bytes(4 * n)))


# Documentation passages several cases quote (each case adds its own gloss after them).
DOC_STREAM_BEGIN_CAPTURE_CAPTURE_ENDED = ("CUDA Runtime API 13.5, Stream Management, cudaStreamBeginCapture: "
                                          "\"Capture must be ended on the same stream in which it was "
                                          "initiated, and it may only be initiated if the stream is not "
                                          "already in capture mode\"")
DOC_STREAM_BEGIN_CAPTURE_WHEN_STREAM = ("CUDA Runtime API 13.5, Stream Management, cudaStreamBeginCapture: "
                                        "\"When a stream is in capture mode, all operations pushed into the "
                                        "stream will not be executed, but will instead be captured into a "
                                        "graph, which will be returned via cudaStreamEndCapture\"")
DOC_STREAM_END_CAPTURE_WHEN_STREAM = ("CUDA Runtime API 13.5, Stream Management, cudaStreamEndCapture: \"When a "
                                      "stream is in capture mode, all operations pushed into the stream will "
                                      "not be executed, but will instead be captured into a graph, which will "
                                      "be returned via cudaStreamEndCapture\"")
DOC_STREAM_GET_CAPTURE_INFO_ID_OUT = ("CUDA Runtime API 13.5, Stream Management, cudaStreamGetCaptureInfo: "
                                      "\"id_out - Optional location to return an id for the capture sequence, "
                                      "which is unique over the lifetime of the process\"")
DOC_STREAM_GET_CAPTURE_INFO_NEXT_NODE = ("CUDA Runtime API 13.5, Stream Management, cudaStreamGetCaptureInfo: "
                                         "\"The next node to be captured in the stream will depend on this set "
                                         "of nodes, absent operations such as event wait which modify this set\"")
DOC_STREAM_GET_CAPTURE_INFO_VALID_DATA = ("CUDA Runtime API 13.5, Stream Management, cudaStreamGetCaptureInfo: "
                                          "\"Valid data (other than capture status) is returned only if both of "
                                          "the following are true: - the call returns cudaSuccess - the "
                                          "returned capture status is cudaStreamCaptureStatusActive\"")
DOC_STREAM_IS_CAPTURING_AFTER_SUCCESSFUL = ("CUDA Runtime API 13.5, Stream Management, cudaStreamIsCapturing: "
                                            "\"After a successful call, *pCaptureStatus will contain one of the "
                                            "following: - cudaStreamCaptureStatusNone: The stream is not "
                                            "capturing. - cudaStreamCaptureStatusActive: The stream is "
                                            "capturing. - cudaStreamCaptureStatusInvalidated: The stream was "
                                            "capturing but an error has invalidated the capture sequence\"")
DOC_STREAM_IS_CAPTURING_NOTE_CALLED = ("CUDA Runtime API 13.5, Stream Management, cudaStreamIsCapturing: \"Note "
                                       "that, if this is called on cudaStreamLegacy (the \"null stream\") while "
                                       "a blocking stream on the same device is capturing, it will return "
                                       "cudaErrorStreamCaptureImplicit and *pCaptureStatus is unspecified "
                                       "after the call\"")
DOC_STREAM_UPDATE_CAPTURE_DEPENDENCIES_DEPENDENCYDATA_OPTIONAL = ("CUDA Runtime API 13.5, Stream Management, "
                                                                  "cudaStreamUpdateCaptureDependencies: "
                                                                  "\"dependencyData - Optional array of data "
                                                                  "associated with each dependency\"")
DOC_STREAM_UPDATE_CAPTURE_DEPENDENCIES_DEPENDENCY_SET = ("CUDA Runtime API 13.5, Stream Management, "
                                                         "cudaStreamUpdateCaptureDependencies: \"The dependency "
                                                         "set is the set of nodes that the next captured node "
                                                         "in the stream will depend on ... These control "
                                                         "whether the set passed to the API is added to the "
                                                         "existing set or replaces it\"")


def _register(id: str, doc: str, fn: Callable[[CaseContext], Any], **kw: Any) -> None:
    """Register a generated case (``doc`` becomes its title)."""
    fn.__doc__ = doc
    case(id, **kw)(fn)


# ============================================================================ begin / end
@case("capture.begin_end.empty_capture",
      cite=DOC_STREAM_BEGIN_CAPTURE_WHEN_STREAM + " -- all operations pushed into a capturing stream are "
           "captured into the graph cudaStreamEndCapture returns; with none, that graph has no nodes",
      apis=BEGIN_END + ("GraphGetNodes",), expect=0)
def _(t: CaseContext) -> Any:
    """A capture with no work ends with an empty graph (the count GraphGetNodes writes)."""
    s = t.stream()
    with s.capture() as cap:
        pass
    return _rt_count(_graph(t, cap))


@case("capture.begin_end.memset_then_memcpy",
      cite=PG_CAPTURE + "work issued to a capturing stream becomes nodes, each depending on the "
                        "previous work of the stream",
      apis=BEGIN_END + ("MemsetAsync", "MemcpyAsync", "GraphGetNodes", "GraphGetEdges"),
      expect=((NodeType.MEMSET, NodeType.MEMCPY), [(NodeType.MEMSET, NodeType.MEMCPY)]))
def _(t: CaseContext) -> Any:
    """A memset then a memcpy on one stream: two nodes joined by one edge."""
    s, a, b = t.stream(), t.malloc(N), t.malloc(N)
    with s.capture() as cap:
        s.memset(a, 1, N)
        s.memcpy(b, a, N)
    g = _graph(t, cap)
    return _types(g), _edge_types(g)


@case("capture.begin_end.explicit_form",
      cite="CUDA Runtime API 13.5, Stream Management, cudaStreamEndCapture: \"Ends capture on a stream, "
           "returning the captured graph\" -- ends capture on the stream, returning the captured graph",
      apis=BEGIN_END, expect=(True, (NodeType.MEMSET,)))
def _(t: CaseContext) -> Any:
    """``begin_capture()`` / ``end()``: end returns the graph, also kept as ``cap.graph``."""
    s, a = t.stream(), t.malloc(N)
    cap = s.begin_capture()
    try:
        s.memset(a, 1, N)
        g = cap.end()
    finally:
        cap.abort()
    t.track(g)
    return g is cap.graph, _types(g)


@case("capture.begin_end.work_not_executed",
      cite=BEGIN + "when a stream is in capture mode, all operations pushed into the stream will "
                   "not be executed, but will instead be captured into a graph",
      apis=BEGIN_END + ("MemsetAsync", "Memcpy"), expect=((NodeType.MEMSET,), b"\x11" * 8))
def _(t: CaseContext) -> Any:
    """A captured memset does not touch memory: it became a memset node, and the buffer keeps its earlier
    contents."""
    s, a = t.stream(), t.malloc(N)
    a.copy_from(b"\x11" * N)
    with s.capture() as cap:
        s.memset(a, 0x22, N)
    g = _graph(t, cap)
    return _types(g), a.to_bytes(8)


@case("capture.begin_end.host_function_not_run",
      cite=DOC_STREAM_BEGIN_CAPTURE_WHEN_STREAM + " -- operations pushed into a capturing stream are not executed",
      apis=BEGIN_END + ("LaunchHostFunc",), expect=((NodeType.HOST,), 0))
def _(t: CaseContext) -> Any:
    """A captured host function is not called at capture time; it becomes a host node."""
    s = t.stream()
    calls: list[int] = []
    with s.capture() as cap:
        s.launch_host_func(lambda: calls.append(1))
    return _types(_graph(t, cap)), len(calls)


@case("capture.begin_end.graph_executes_captured_work",
      cite=DOC_STREAM_END_CAPTURE_WHEN_STREAM + " -- the graph returned holds the captured work; CUDA Runtime "
           "API 13.5, Graph Management, cudaGraphLaunch: \"Executes graphExec in stream\" -- launching its "
           "executable graph executes that work",
      apis=BEGIN_END + ("MemsetAsync", "MemcpyAsync", "GraphInstantiateWithFlags", "GraphLaunch"),
      expect=(b"\x22" * 8, b"\x22" * 8))
def _(t: CaseContext) -> Any:
    """Launching the captured graph performs the captured memset and memcpy."""
    s, a, b = t.stream(), t.malloc(N), t.malloc(N)
    a.copy_from(bytes(N))
    b.copy_from(bytes(N))
    with s.capture() as cap:
        s.memset(a, 0x22, N)
        s.memcpy(b, a, N)
    exe = t.instantiate(_graph(t, cap))
    exe.launch(s)
    s.synchronize()
    return a.to_bytes(8), b.to_bytes(8)


@case("capture.begin_end.stream_reusable",
      cite=DOC_STREAM_BEGIN_CAPTURE_CAPTURE_ENDED + " -- capture may be initiated if the stream is not already "
           "in capture mode, e.g. again after cudaStreamEndCapture",
      apis=BEGIN_END, expect=((NodeType.MEMSET,), (NodeType.MEMCPY,)))
def _(t: CaseContext) -> Any:
    """Two captures one after the other on the same stream give two separate graphs."""
    s, a, b = t.stream(), t.malloc(N), t.malloc(N)
    with s.capture() as c1:
        s.memset(a, 1, N)
    with s.capture() as c2:
        s.memcpy(b, a, N)
    return _types(_graph(t, c1)), _types(_graph(t, c2))


@case("capture.begin_end.stream_executes_after_end",
      cite=DOC_STREAM_END_CAPTURE_WHEN_STREAM + " -- that holds only while the stream is in capture mode; CUDA "
           "Runtime API 13.5, Stream Management, cudaStreamEndCapture: \"Ends capture on a stream, returning the "
           "captured graph\" -- after the end the stream is not in capture mode, so later work executes",
      apis=BEGIN_END + ("MemsetAsync",), expect=b"\x33" * 8)
def _(t: CaseContext) -> Any:
    """After the capture ended, work on the stream executes again."""
    s, a = t.stream(), t.malloc(N)
    with s.capture() as cap:
        s.memset(a, 0x44, N)
    _graph(t, cap)
    s.memset(a, 0x33, N)
    s.synchronize()
    return a.to_bytes(8)


@case("capture.begin_end.end_twice", kind="binding",
      cite=END + "capture must have been initiated on the stream; pygraphrt refuses to end a "
                 "capture object twice before calling the runtime",
      apis=("StreamEndCapture",), raises=errors.IllegalState)
def _(t: CaseContext) -> Any:
    """Ending the same capture twice raises IllegalState; the stream stays not capturing."""
    s = t.stream()
    with s.capture() as cap:
        pass
    _graph(t, cap)
    _fails_then_clean(t, errors.IllegalState, cap.end, s)


@case("capture.begin_end.end_after_abort", kind="binding",
      cite=END + "capture must have been initiated (and not yet ended) on the stream",
      apis=("StreamEndCapture",), raises=errors.IllegalState)
def _(t: CaseContext) -> Any:
    """``end()`` after ``abort()`` raises IllegalState."""
    s, a = t.stream(), t.malloc(N)
    cap = s.begin_capture()
    s.memset(a, 1, N)
    cap.abort()
    _fails_then_clean(t, errors.IllegalState, cap.end, s)


# unsure: CUDA's return value for ending a capture that was never begun is not listed in the
# reference (HIP returns hipErrorIllegalState); cudaErrorIllegalState expected.
@case("capture.begin_end.raw_end_without_begin",
      cite="CUDA Runtime API 13.5, Stream Management, cudaStreamEndCapture: \"Capture must have been "
           "initiated on stream via a call to cudaStreamBeginCapture\" -- capture must have been "
           "initiated on the stream via a call to cudaStreamBeginCapture",
      apis=("StreamEndCapture",), raises=errors.IllegalState)
def _(t: CaseContext) -> Any:
    """The runtime refuses ``StreamEndCapture`` on a stream that is not capturing."""
    s = t.stream()
    _fails_then_clean(t, errors.IllegalState, lambda: _raw_end(s), s)


@case("capture.begin_end.capture_object_single_use", kind="binding",
      cite=BEGIN + "one capture sequence per begin/end; pygraphrt refuses to begin a used capture object",
      apis=("StreamBeginCapture",), raises=errors.IllegalState)
def _(t: CaseContext) -> Any:
    """A Capture object cannot be begun a second time."""
    s = t.stream()
    cap = s.capture()
    with cap:
        pass
    _graph(t, cap)
    _fails_then_clean(t, errors.IllegalState, cap.begin, s)


@case("capture.begin_end.abort_discards",
      cite="CUDA Runtime API 13.5, Stream Management, cudaStreamEndCapture: \"Ends capture on a stream, "
           "returning the captured graph\" -- the end takes the stream out of capture mode (the case reads the "
           "stream's capture status from the runtime); abort() is pygraphrt's: cudaStreamEndCapture, then "
           "cudaGraphDestroy of the graph it returned, so the capture leaves no graph object",
      apis=BEGIN_END, expect=(CaptureStatus.NONE, None))
def _(t: CaseContext) -> Any:
    """``abort()`` leaves the stream not capturing and produces no graph."""
    s, a = t.stream(), t.malloc(N)
    cap = s.begin_capture()
    try:
        s.memset(a, 1, N)
    finally:
        cap.abort()
    return s.capture_status, cap.graph


@case("capture.begin_end.abort_idempotent", kind="binding",
      cite=PYGRAPHRT + "abort() ends the capture and discards what was captured; a second abort "
                       "has nothing to do (pygraphrt's policy: a binding case)",
      apis=BEGIN_END, expect=CaptureStatus.NONE)
def _(t: CaseContext) -> Any:
    """Aborting twice is harmless."""
    s = t.stream()
    cap = s.begin_capture()
    cap.abort()
    cap.abort()
    return s.capture_status


@case("capture.begin_end.exception_in_block", kind="binding",
      cite=PYGRAPHRT + "if anything raises inside the with block, the capture is ended and "
                       "discarded, the stream is left not capturing, and the original exception propagates",
      apis=BEGIN_END, raises=CaseBoom)
def _(t: CaseContext) -> Any:
    """An exception inside ``with s.capture()`` propagates; the stream is left not capturing."""
    s, a = t.stream(), t.malloc(N)
    cap = s.capture()

    def body() -> None:
        with cap:
            s.memset(a, 1, N)
            raise CaseBoom("raised inside the capture block")

    try:
        err = _raises_here(t, CaseBoom, body)
        _not_capturing(t, s)
        t.check(cap.graph is None, "a discarded capture must leave no graph")
    finally:
        _force_end(s)
    raise err


# pygraphrt gap: an unknown mode name raises a plain ValueError from CaptureMode("...")
# rather than pygraphrt's InvalidValue (a ValueError subclass) naming Stream.capture.
@case("capture.begin_end.unknown_mode_name", kind="binding",
      cite=BEGIN + "mode is one of cudaStreamCaptureModeGlobal, ThreadLocal, Relaxed; pygraphrt "
                   "reports other values as InvalidValue",
      apis=("StreamBeginCapture",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """``stream.capture("bogus")`` raises InvalidValue and begins nothing."""
    s = t.stream()
    _fails_then_clean(t, errors.InvalidValue, lambda: s.capture("bogus"), s)


@case("capture.begin_end.mode_wrong_type", kind="binding",
      cite=BEGIN + "mode is a cudaStreamCaptureMode; pygraphrt refuses anything else before any call",
      apis=("StreamBeginCapture",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A mode that is neither a CaptureMode nor its name raises InvalidValue."""
    s = t.stream()
    _fails_then_clean(t, errors.InvalidValue, lambda: s.capture(1), s)


@case("capture.begin_end.closed_stream", kind="binding",
      cite=BEGIN + "stream must be a valid stream handle; pygraphrt refuses a closed one",
      apis=("StreamBeginCapture",), raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """Beginning a capture on a closed stream raises InvalidResourceHandle."""
    s = t.stream()
    s.close()
    s.capture().begin()


def _mode_case(mode: str) -> None:
    def fn(t: CaseContext) -> Any:
        s, a, b = t.stream(), t.malloc(N), t.malloc(N)
        with s.capture(mode) as cap:
            s.memset(a, 1, N)
            s.memcpy(b, a, N)
        return _types(_graph(t, cap)), len(cap.graph.edges())

    _register(f"capture.begin_end.mode_{mode}",
              f"A capture begun in {mode} mode captures a memset and a memcpy as a two-node chain.", fn,
              cite=BEGIN + '"mode - Controls the interaction of this capture sequence with other API calls that '
                           'are potentially unsafe" -- the mode is about those calls, not what is captured',
              apis=BEGIN_END + ("MemsetAsync", "MemcpyAsync"),
              expect=((NodeType.MEMSET, NodeType.MEMCPY), 1))


for _m in ("global", "thread_local", "relaxed"):
    _mode_case(_m)


# ============================================================================ status
@case("capture.status.none_before",
      cite=IS_CAPTURING + "cudaStreamCaptureStatusNone: the stream is not capturing",
      apis=("StreamIsCapturing",), expect=CaptureStatus.NONE)
def _(t: CaseContext) -> Any:
    """A new stream is not capturing (the status StreamIsCapturing writes)."""
    return _rt_status(t.stream())


@case("capture.status.active_during",
      cite=IS_CAPTURING + "cudaStreamCaptureStatusActive: the stream is capturing",
      apis=("StreamIsCapturing",) + BEGIN_END, expect=(CaptureStatus.ACTIVE, CaptureStatus.NONE, 0))
def _(t: CaseContext) -> Any:
    """During a capture the stream's status is ACTIVE; after the end it is NONE again and the graph
    the end returned is a valid (empty) graph."""
    s = t.stream()
    with s.capture() as cap:
        status = _rt_status(s)
    g = _graph(t, cap)
    return status, _rt_status(s), t.snapshot(graph=g).nodes


@case("capture.status.none_after_end",
      cite="CUDA Runtime API 13.5, Stream Management, cudaStreamEndCapture: \"Ends capture on a stream, "
           "returning the captured graph\" -- capture on the stream has ended, so its status is "
           "cudaStreamCaptureStatusNone again",
      apis=("StreamIsCapturing",) + BEGIN_END, expect=(CaptureStatus.ACTIVE, CaptureStatus.NONE))
def _(t: CaseContext) -> Any:
    """After the capture ended the stream's status is NONE again (it was ACTIVE before the end)."""
    s = t.stream()
    with s.capture() as cap:
        during = _rt_status(s)
    _graph(t, cap)
    return during, _rt_status(s)


@case("capture.status.is_capturing_values",
      cite="CUDA Runtime API 13.5, Stream Management, cudaStreamIsCapturing: \"cudaStreamCaptureStatusNone: "
           "The stream is not capturing. ... cudaStreamCaptureStatusActive: The stream is capturing\" -- "
           "is_capturing is True exactly when the status is Active",
      apis=("StreamIsCapturing",) + BEGIN_END, expect=(False, True, False))
def _(t: CaseContext) -> Any:
    """``is_capturing`` is False before, True during and False after a capture."""
    s = t.stream()
    before = s.is_capturing
    with s.capture() as cap:
        during = s.is_capturing
    _graph(t, cap)
    return before, during, s.is_capturing


@case("capture.status.other_stream_unaffected",
      cite="CUDA Runtime API 13.5, Stream Management, cudaStreamBeginCapture: \"When a stream is in "
           "capture mode, all operations pushed into the stream will not be executed\" -- capture is a "
           "state of the stream it was begun on; other streams are not capturing unless they join "
           "through an event",
      apis=("StreamIsCapturing",) + BEGIN_END,
      expect=(CaptureStatus.ACTIVE, CaptureStatus.NONE, CaptureStatus.NONE, CaptureStatus.NONE))
def _(t: CaseContext) -> Any:
    """While one stream captures, another stream of the same device is not capturing; after the end
    neither is."""
    s1, s2 = t.stream(), t.stream()
    with s1.capture() as cap:
        statuses = _rt_status(s1), _rt_status(s2)
    _graph(t, cap)
    return statuses + (_rt_status(s1), _rt_status(s2))


@case("capture.status.closed_stream", kind="binding",
      cite=IS_CAPTURING + "stream must be a valid stream; pygraphrt refuses a closed one",
      apis=("StreamIsCapturing",), raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """Asking a closed stream for its capture status raises InvalidResourceHandle."""
    s = t.stream()
    s.close()
    s.capture_status


# ============================================================================ nested begin
@case("capture.nested.begin_on_capturing_stream", kind="binding",
      cite=PYGRAPHRT_BEGIN + "a begin on a stream that is capturing is refused with IllegalState before "
      "cudaStreamBeginCapture is called, so that the refusal cannot end or invalidate the capture running "
      "there (the runtime's own refusal: capture.nested.raw_begin_on_capturing_stream)",
      apis=("StreamBeginCapture", "StreamIsCapturing"), raises=errors.IllegalState)
def _(t: CaseContext) -> Any:
    """pygraphrt refuses a second begin on a capturing stream; the first capture is left as it was (status and
    captured nodes read from the runtime before any clean-up)."""
    s, a = t.stream(), t.malloc(N)
    cap = s.begin_capture()
    try:
        s.memset(a, 1, N)
        before = t.snapshot(stream=s)
        t.check_equal((before.capture_status, before.capture_nodes), (CaptureStatus.ACTIVE, 1), "the capture")
        try:
            with t.under_test():
                s.begin_capture()
        finally:
            t.check_equal(t.snapshot(stream=s), before, "the capture after the refused begin")
    finally:
        cap.abort()
        _force_end(s)


@case("capture.nested.first_capture_intact",
      cite=DOC_STREAM_BEGIN_CAPTURE_CAPTURE_ENDED + " -- capture may only be initiated if the stream is not "
           "already in capture mode; the refused begin does not disturb the capture in progress",
      apis=BEGIN_END + ("MemsetAsync",), expect=(NodeType.MEMSET, NodeType.MEMSET))
def _(t: CaseContext) -> Any:
    """Work before and after a refused nested begin all lands in the first capture's graph."""
    s, a = t.stream(), t.malloc(N)
    with s.capture() as cap:
        s.memset(a, 1, N)
        t.raises(errors.IllegalState, s.begin_capture, "relaxed")
        s.memset(a, 2, N)
    return _types(_graph(t, cap))


@case("capture.nested.begin_on_joined_stream", kind="binding",
      cite=BEGIN + "capture may only be initiated if the stream is not already in capture mode "
                   "(a stream that joined a capture by an event wait is capturing)",
      apis=("StreamBeginCapture", "EventRecord", "StreamWaitEvent"), raises=errors.IllegalState)
def _(t: CaseContext) -> Any:
    """Beginning a capture on a stream that joined another capture raises IllegalState."""
    s1, s2, a = t.stream(), t.stream(), t.malloc(N)
    fork, join = t.event(), t.event()
    cap = s1.begin_capture()
    try:
        s1.memset(a, 1, N)
        s1.record(fork)
        s2.wait(fork)
        err = _raises_here(t, errors.IllegalState, s2.begin_capture)
        t.check_equal(s2.capture_status, CaptureStatus.ACTIVE, "joined stream after the refused begin")
        s2.record(join)
        s1.wait(join)
        t.track(cap.end())
    finally:
        cap.abort()
        _force_end(s1, s2)
    _not_capturing(t, s1, s2)
    raise err


# unsure: the runtime's code for a begin on a capturing stream (IllegalState on HIP; CUDA's
# reference lists none) and whether the refused begin invalidates the capture running there.
@case("capture.nested.raw_begin_on_capturing_stream",
      cite=DOC_STREAM_BEGIN_CAPTURE_CAPTURE_ENDED + " -- capture may only be initiated if the stream is not "
           "already in capture mode",
      apis=("StreamBeginCapture",), raises=errors.IllegalState)
def _(t: CaseContext) -> Any:
    """The runtime itself refuses ``StreamBeginCapture`` on a capturing stream."""
    s, a = t.stream(), t.malloc(N)
    cap = s.begin_capture()
    try:
        s.memset(a, 1, N)
        err = _raises_here(t, errors.IllegalState, _raw_begin, s)
    finally:
        cap.abort()
        _force_end(s)
    _not_capturing(t, s)
    raise err


@case("capture.nested.concurrent_captures",
      cite=DOC_STREAM_GET_CAPTURE_INFO_ID_OUT + " -- id_out: an id for the capture sequence, unique over the "
           "lifetime of the process; two streams capture independently",
      apis=BEGIN_END + ("StreamGetCaptureInfo",), expect=((NodeType.MEMSET,), (NodeType.MEMCPY,), True))
def _(t: CaseContext) -> Any:
    """Two streams capturing at once build two independent graphs with distinct capture ids."""
    s1, s2, a, b = t.stream(), t.stream(), t.malloc(N), t.malloc(N)
    with s1.capture() as c1:
        with s2.capture() as c2:
            s1.memset(a, 1, N)
            s2.memcpy(b, a, N)
            ids = c1.info().id, c2.info().id
    return _types(_graph(t, c1)), _types(_graph(t, c2)), ids[0] != ids[1]


# ============================================================================ legacy stream
def _legacy(t: CaseContext) -> Any:
    return t.track(t.rt.Stream.legacy_default())


@case("capture.legacy.begin_refused", kind="binding",
      cite=PYGRAPHRT_BEGIN + "a capture of the legacy default stream is refused with StreamCaptureUnsupported "
      "before cudaStreamBeginCapture is called (" + BEGIN + "\"Capture may not be initiated if stream is "
      "cudaStreamLegacy\"; the runtime's own refusal: capture.legacy.raw_begin_refused)",
      apis=("StreamBeginCapture",), raises=errors.StreamCaptureUnsupported)
def _(t: CaseContext) -> Any:
    """``Stream.legacy_default().capture()`` raises StreamCaptureUnsupported."""
    legacy = _legacy(t)

    def body() -> None:
        with legacy.capture():
            pass

    body()


# unsure: CUDA's code for a begin on cudaStreamLegacy (HIP: hipErrorStreamCaptureUnsupported).
@case("capture.legacy.raw_begin_refused",
      cite=BEGIN + "capture may not be initiated if stream is cudaStreamLegacy",
      apis=("StreamBeginCapture",), raises=errors.StreamCaptureUnsupported)
def _(t: CaseContext) -> Any:
    """The runtime itself refuses ``StreamBeginCapture`` on the legacy stream."""
    legacy = _legacy(t)
    try:
        err = _raises_here(t, errors.StreamCaptureUnsupported, _raw_begin, legacy)
    except CaseFailure:
        try:  # it began after all: end it before reporting
            _raw_end(legacy)
        except errors.GraphRTError:
            pass
        raise
    raise err


@case("capture.legacy.status_none_when_idle",
      cite=DOC_STREAM_IS_CAPTURING_AFTER_SUCCESSFUL + " -- cudaStreamCaptureStatusNone when no capture involves "
           "the stream",
      apis=("StreamIsCapturing",), expect=CaptureStatus.NONE)
def _(t: CaseContext) -> Any:
    """With nothing capturing, the legacy stream's status is NONE (as StreamIsCapturing writes it)."""
    return _rt_status(_legacy(t))


@case("capture.legacy.status_implicit_during_blocking_capture",
      cite=DOC_STREAM_IS_CAPTURING_NOTE_CALLED + " -- if called on cudaStreamLegacy while a blocking stream on "
           "the same device is capturing, returns cudaErrorStreamCaptureImplicit",
      apis=("StreamIsCapturing", "StreamBeginCapture"), raises=errors.StreamCaptureImplicit)
def _(t: CaseContext) -> Any:
    """Querying the legacy stream while a blocking stream captures raises StreamCaptureImplicit."""
    s, legacy, a = t.stream(non_blocking=False), _legacy(t), t.malloc(N)
    with s.capture() as cap:
        s.memset(a, 1, N)
        err = _raises_here(t, errors.StreamCaptureImplicit, legacy.capture_status)
    _graph(t, cap)
    raise err


@case("capture.legacy.status_query_does_not_invalidate",
      cite="CUDA Runtime API 13.5, Stream Management, cudaStreamIsCapturing: \"The blocking stream "
           "capture is not invalidated\" -- (on cudaStreamLegacy during a blocking stream's capture) the "
           "blocking stream capture is not invalidated",
      apis=("StreamIsCapturing",) + BEGIN_END, expect=(NodeType.MEMSET, NodeType.MEMSET))
def _(t: CaseContext) -> Any:
    """After the refused legacy-stream query the blocking stream's capture still ends with its graph."""
    s, legacy, a = t.stream(non_blocking=False), _legacy(t), t.malloc(N)
    with s.capture() as cap:
        s.memset(a, 1, N)
        t.raises(errors.StreamCaptureImplicit, lambda: legacy.capture_status)
        s.memset(a, 2, N)
    return _types(_graph(t, cap))


@case("capture.legacy.is_capturing_implicit",
      cite=DOC_STREAM_IS_CAPTURING_NOTE_CALLED + " -- on cudaStreamLegacy while a blocking stream is capturing: "
           "cudaErrorStreamCaptureImplicit",
      apis=("StreamIsCapturing",), raises=errors.StreamCaptureImplicit)
def _(t: CaseContext) -> Any:
    """The cheap ``is_capturing`` query of the legacy stream raises the same error."""
    s, legacy = t.stream(non_blocking=False), _legacy(t)
    with s.capture() as cap:
        err = _raises_here(t, errors.StreamCaptureImplicit, lambda: legacy.is_capturing)
    _graph(t, cap)
    raise err


@case("capture.legacy.status_none_during_nonblocking_capture",
      cite=PG_PROHIBITED + "only streams not created with cudaStreamNonBlocking make the legacy stream "
                           "unusable during their capture",
      apis=("StreamIsCapturing",), expect=CaptureStatus.NONE)
def _(t: CaseContext) -> Any:
    """While only a non-blocking stream captures, the legacy stream reports NONE."""
    s, legacy = t.stream(non_blocking=True), _legacy(t)
    with s.capture() as cap:
        status = _rt_status(legacy)
    _graph(t, cap)
    return status


@case("capture.legacy.work_implicit_during_blocking_capture",
      cite=PG_PROHIBITED + "when a stream not created with cudaStreamNonBlocking is being captured, any "
                           "attempted use of the legacy stream is invalid (cudaErrorStreamCaptureImplicit)",
      apis=("MemsetAsync", "StreamBeginCapture"), raises=errors.StreamCaptureImplicit)
def _(t: CaseContext) -> Any:
    """Enqueuing on the legacy stream while a blocking stream captures raises StreamCaptureImplicit."""
    s, legacy, a, b = t.stream(non_blocking=False), _legacy(t), t.malloc(N), t.malloc(N)
    cap = s.begin_capture()
    try:
        s.memset(a, 1, N)
        err = _raises_here(t, errors.StreamCaptureImplicit, legacy.memset, b, 2, N)
    finally:
        cap.abort()
        _force_end(s)
    _not_capturing(t, s)
    raise err


# unsure: that the refused legacy-stream work invalidates the blocking stream's capture
# (Programming Guide: an invalid operation invalidates the associated capture graphs).
@case("capture.legacy.work_invalidates_blocking_capture",
      cite=PG_INVALIDATION + "when an invalid operation is attempted during stream capture, any associated "
                             "capture graphs are invalidated; ending the capture returns an error",
      apis=("MemsetAsync",) + BEGIN_END, raises=errors.StreamCaptureInvalidated)
def _(t: CaseContext) -> Any:
    """After legacy-stream work during a blocking capture, ending it raises StreamCaptureInvalidated."""
    s, legacy, a, b = t.stream(non_blocking=False), _legacy(t), t.malloc(N), t.malloc(N)

    def body() -> None:
        with s.capture():
            s.memset(a, 1, N)
            t.raises(errors.StreamCaptureImplicit, legacy.memset, b, 2, N)

    _fails_then_clean(t, errors.StreamCaptureInvalidated, body, s)


# unsure: that async legacy-stream work is not itself treated as a potentially unsafe call
# during a global-mode capture of a non-blocking stream.
@case("capture.legacy.work_allowed_during_nonblocking_capture",
      cite=PG_PROHIBITED + "the legacy-stream restriction applies only while a stream not created with "
                           "cudaStreamNonBlocking is captured",
      apis=("MemsetAsync",) + BEGIN_END, expect=((NodeType.MEMSET,), b"\x05" * 8))
def _(t: CaseContext) -> Any:
    """Legacy-stream work during a non-blocking stream's capture executes and is not captured."""
    s, legacy, a, b = t.stream(non_blocking=True), _legacy(t), t.malloc(N), t.malloc(N)
    with s.capture() as cap:
        s.memset(a, 1, N)
        legacy.memset(b, 5, N)
    g = _graph(t, cap)
    legacy.synchronize()
    return _types(g), b.to_bytes(8)


# unsure: CUDA may report the synchronization of the legacy stream as StreamCaptureUnsupported
# instead; the capture is relaxed so that only the implicit dependency is at stake.
@case("capture.legacy.sync_implicit_during_blocking_capture",
      cite=PG_PROHIBITED + "synchronizing the legacy stream would synchronize the blocking streams being "
                           "captured: invalid (cudaErrorStreamCaptureImplicit)",
      apis=("StreamSynchronize", "StreamBeginCapture"), raises=errors.StreamCaptureImplicit)
def _(t: CaseContext) -> Any:
    """Synchronizing the legacy stream while a blocking stream captures raises StreamCaptureImplicit."""
    s, legacy = t.stream(non_blocking=False), _legacy(t)
    cap = s.begin_capture("relaxed")
    try:
        err = _raises_here(t, errors.StreamCaptureImplicit, legacy.synchronize)
    finally:
        cap.abort()
        _force_end(s)
    _not_capturing(t, s)
    raise err


# ============================================================================ capture info
@case("capture.info.active_with_id",
      cite=DOC_STREAM_GET_CAPTURE_INFO_ID_OUT + " -- captureStatus_out is Active during a capture; id_out is an "
           "id for the capture sequence, unique over the lifetime of the process",
      apis=("StreamGetCaptureInfo",), expect=(CaptureStatus.ACTIVE, True))
def _(t: CaseContext) -> Any:
    """``cap.info()`` during a capture: status ACTIVE and a non-zero id."""
    s = t.stream()
    with s.capture() as cap:
        info = cap.info()
    _graph(t, cap)
    return info.status, info.id != 0


@case("capture.info.no_dependencies_at_begin",
      cite=DOC_STREAM_GET_CAPTURE_INFO_NEXT_NODE + " -- dependencies_out: the set of nodes the next captured "
           "node will depend on; empty before anything was captured",
      apis=("StreamGetCaptureInfo",), expect=(CaptureStatus.ACTIVE, []))
def _(t: CaseContext) -> Any:
    """Right after begin the capture is ACTIVE with no dependencies (as StreamGetCaptureInfo writes them)."""
    s = t.stream()
    with s.capture() as cap:
        status, _id, _g, deps = _rt_info(s)
    _graph(t, cap)
    return status, deps


@case("capture.info.dependency_is_last_node",
      cite=DOC_STREAM_GET_CAPTURE_INFO_NEXT_NODE + " -- the next node to be captured in the stream will depend "
           "on the dependencies_out set, each with its edge data (default: full dependency)",
      apis=("StreamGetCaptureInfo", "MemsetAsync"), expect=[(NodeType.MEMSET, EdgeData())])
def _(t: CaseContext) -> Any:
    """After one memset the dependency set is that memset node, with default edge data."""
    s, a = t.stream(), t.malloc(N)
    with s.capture() as cap:
        s.memset(a, 1, N)
        deps = [(n.type, e) for n, e in cap.info().dependencies]
    _graph(t, cap)
    return deps


@case("capture.info.graph_same_object",
      cite=INFO + "graph_out: \"Optional location to return the graph being captured into\" (one graph per "
                  "capture sequence, \"transferred or destroyed at cudaStreamEndCapture\"); " + END +
                  "\"End capture on stream, returning the captured graph via pGraph\"",
      apis=("StreamGetCaptureInfo", "StreamEndCapture"), expect=(True, True, True))
def _(t: CaseContext) -> Any:
    """Two StreamGetCaptureInfo calls in one capture, before and after a captured memset, report the same
    graph handle, and it is the handle StreamEndCapture returns (handles compared, not pygraphrt objects)."""
    s, a = t.stream(), t.malloc(N)
    with s.capture() as cap:
        h1 = _rt_info(s)[2]
        s.memset(a, 1, N)
        h2 = _rt_info(s)[2]
    end = _address(_graph(t, cap))
    return h1 != 0, h1 == h2, h2 == end


@case("capture.info.final_graph_is_live_graph",
      cite=INFO + "graph_out: \"This API does not transfer ownership of the graph, which is transferred or "
                  "destroyed at cudaStreamEndCapture\"; " + END + "\"returning the captured graph via pGraph\"",
      apis=("StreamGetCaptureInfo", "StreamEndCapture", "GraphGetNodes"), expect=(True, True, 1))
def _(t: CaseContext) -> Any:
    """The graph StreamEndCapture returns is the graph StreamGetCaptureInfo reported during the capture
    (handles compared), holding the captured memset."""
    s, a = t.stream(), t.malloc(N)
    with s.capture() as cap:
        s.memset(a, 1, N)
        live = _rt_info(s)[2]
    end = _graph(t, cap)
    return live != 0, _address(end) == live, t.snapshot(graph=end).nodes


@case("capture.info.dependency_node_identity",
      cite=INFO + "the node handles may be copied out and are valid until they or the graph is destroyed",
      apis=("StreamGetCaptureInfo", "GraphGetNodes", "GraphNodeGetType"), expect=(1, True, NodeType.MEMSET))
def _(t: CaseContext) -> Any:
    """The dependency node StreamGetCaptureInfo reports during the capture is (by handle) the node the final
    graph lists, a memset as the runtime reports it."""
    s, a = t.stream(), t.malloc(N)
    with s.capture() as cap:
        s.memset(a, 1, N)
        deps = _rt_info(s)[3]
    nodes = _graph(t, cap).nodes()
    return len(deps), deps == [_address(n) for n in nodes], _rt_type(nodes[0])


@case("capture.info.graph_readable_during_capture",
      cite=INFO + "all operations other than destroy and node removal are permitted on the graph while "
                  "the capture sequence is in progress",
      apis=("StreamGetCaptureInfo", "GraphGetNodes"), expect=(NodeType.MEMSET, NodeType.MEMCPY))
def _(t: CaseContext) -> Any:
    """The graph being captured can be read during the capture."""
    s, a, b = t.stream(), t.malloc(N), t.malloc(N)
    with s.capture() as cap:
        s.memset(a, 1, N)
        s.memcpy(b, a, N)
        types = _types(cap.info().graph)
    _graph(t, cap)
    return types


@case("capture.info.ids_distinct_sequential",
      cite=DOC_STREAM_GET_CAPTURE_INFO_ID_OUT + " -- id_out: unique over the lifetime of the process",
      apis=("StreamGetCaptureInfo",) + BEGIN_END,
      expect={"first id non-zero": True, "second id non-zero": True, "ids differ": True})
def _(t: CaseContext) -> Any:
    """Two captures one after the other on the same stream have different ids (StreamGetCaptureInfo's id_out)."""
    s = t.stream()
    with s.capture() as c1:
        i1 = _rt_info(s)[1]
    with s.capture() as c2:
        i2 = _rt_info(s)[1]
    _graph(t, c1)
    _graph(t, c2)
    return {"first id non-zero": i1 != 0, "second id non-zero": i2 != 0, "ids differ": i1 != i2}


@case("capture.info.after_end",
      cite=DOC_STREAM_GET_CAPTURE_INFO_VALID_DATA + " -- valid data (other than capture status) is returned only "
           "if the status is Active; after cudaStreamEndCapture the status is None",
      apis=("StreamGetCaptureInfo",), expect=(CaptureStatus.ACTIVE, CaptureStatus.NONE, (None, [])))
def _(t: CaseContext) -> Any:
    """After the end StreamGetCaptureInfo reports status NONE (ACTIVE before it), and ``cap.info()`` then
    shows no graph and no dependencies."""
    s, a = t.stream(), t.malloc(N)
    with s.capture() as cap:
        s.memset(a, 1, N)
        during = _rt_info(s)[0]
    _graph(t, cap)
    info = cap.info()
    return during, _rt_info(s)[0], (info.graph, info.dependencies)


@case("capture.info.dependencies_after_join",
      cite=PG_XSTREAM + "waiting on an event recorded in another stream of the capture adds that stream's "
                        "work to the waiting stream's dependencies",
      apis=("StreamGetCaptureInfo", "EventRecord", "StreamWaitEvent"), expect=["memcpy", "memset"])
def _(t: CaseContext) -> Any:
    """After joining a forked stream back, the origin depends on both branches' last nodes."""
    s1, s2 = t.stream(), t.stream()
    a, b, c = t.malloc(N), t.malloc(N), t.malloc(N)
    fork, join = t.event(), t.event()
    with s1.capture() as cap:
        s1.memset(a, 1, N)
        s1.record(fork)
        s2.wait(fork)
        s1.memcpy(b, a, N)
        s2.memset(c, 3, N)
        s2.record(join)
        s1.wait(join)
        deps = sorted(n.type.value for n, _ in cap.info().dependencies)
    _graph(t, cap)
    return deps


@case("capture.info.joined_stream_shares_id",
      cite=PG_XSTREAM + "a stream that waits on an event recorded in a capture joins that capture "
                        "sequence (the same capture id)",
      apis=("StreamGetCaptureInfo", "EventRecord", "StreamWaitEvent"), expect=(CaptureStatus.ACTIVE, True))
def _(t: CaseContext) -> Any:
    """A stream that joined by an event wait reports the origin's capture id."""
    s1, s2 = t.stream(), t.stream()
    fork, join = t.event(), t.event()
    with s1.capture() as cap:
        s1.record(fork)
        s2.wait(fork)
        status, ident = _capture_id(s2)
        same = ident == cap.info().id
        s2.record(join)
        s1.wait(join)
    _graph(t, cap)
    return status, same


# ============================================================================ cross-stream fork / join
def _diamond(t: CaseContext) -> tuple[Any, Any, tuple[Any, ...]]:
    """The README's seed capture: A; fork; B on s1 || C on s2; join; D.

    Returns (graph, s1, (a, b, c, d)).
    """
    s1, s2 = t.stream(), t.stream()
    a, b, c, d = (t.malloc(N) for _ in range(4))
    fork, join = t.event(), t.event()
    with s1.capture() as cap:
        s1.memset(a, 1, N)
        s1.record(fork)
        s2.wait(fork)
        s1.memcpy(b, a, N)
        s2.memset(c, 3, N)
        s2.record(join)
        s1.wait(join)
        s1.memcpy(d, c, N)
    return _graph(t, cap), s1, (a, b, c, d)


@case("capture.fork.diamond",
      cite=PG_XSTREAM + "cross-stream dependencies are captured through cudaEventRecord and "
                        "cudaStreamWaitEvent: fork and join give a diamond",
      apis=BEGIN_END + ("EventRecord", "StreamWaitEvent", "GraphGetEdges"),
      expect=(["memcpy", "memcpy", "memset", "memset"], 4, 1, 1))
def _(t: CaseContext) -> Any:
    """Fork/join over two streams: four nodes, four edges, one root, one leaf."""
    g, _s, _bufs = _diamond(t)
    return (sorted(n.type.value for n in g.nodes()), len(g.edges()), len(g.root_nodes()),
            len(g.leaf_nodes()))


@case("capture.fork.diamond_runs",
      cite=PG_XSTREAM + "the captured fork/join graph performs the same work with the same ordering",
      apis=("GraphInstantiateWithFlags", "GraphLaunch"), expect=(b"\x01" * 8, b"\x03" * 8))
def _(t: CaseContext) -> Any:
    """Launching the captured diamond: B copies A's bytes, D copies C's."""
    g, s1, (a, b, c, d) = _diamond(t)
    for buf in (a, b, c, d):
        buf.copy_from(bytes(N))
    t.instantiate(g).launch(s1)
    s1.synchronize()
    return b.to_bytes(8), d.to_bytes(8)


@case("capture.fork.joined_stream_active",
      cite=PG_XSTREAM + "a stream waiting on an event recorded in a capturing stream becomes part of "
                        "the capture (its status is Active)",
      apis=("StreamIsCapturing", "EventRecord", "StreamWaitEvent"),
      expect=(CaptureStatus.NONE, CaptureStatus.ACTIVE, True))
def _(t: CaseContext) -> Any:
    """The waiting stream is not capturing before the wait and ACTIVE after it."""
    s1, s2 = t.stream(), t.stream()
    fork, join = t.event(), t.event()
    with s1.capture() as cap:
        s1.record(fork)
        before = s2.capture_status
        s2.wait(fork)
        after, flag = s2.capture_status, s2.is_capturing
        s2.record(join)
        s1.wait(join)
    _graph(t, cap)
    return before, after, flag


@case("capture.fork.joined_stream_released_by_end",
      cite="Observed, cudaStreamEndCapture: ending the capture on the origin stream ends it on the stream that "
           "joined it too (that stream reports no capture afterwards) (deviations.OBSERVATIONS); CUDA Runtime "
           "API 13.5, Stream Management, cudaStreamEndCapture: \"Ends capture on a stream, returning the "
           "captured graph\" -- no documentation sentence states that ending the capture on the origin stream "
           "also ends it on every stream that joined it; the case records that it does",
      apis=BEGIN_END + ("StreamIsCapturing",),
      expect=(CaptureStatus.ACTIVE, CaptureStatus.NONE, CaptureStatus.NONE, False))
def _(t: CaseContext) -> Any:
    """The forked stream captures while joined; both it and the origin are not capturing after the end."""
    s1, s2, a = t.stream(), t.stream(), t.malloc(N)
    fork, join = t.event(), t.event()
    with s1.capture() as cap:
        s1.record(fork)
        s2.wait(fork)
        joined = _rt_status(s2)
        s2.memset(a, 1, N)
        s2.record(join)
        s1.wait(join)
    _graph(t, cap)
    return joined, _rt_status(s1), _rt_status(s2), s2.is_capturing


@case("capture.fork.forked_work_depends_on_fork_point",
      cite=PG_XSTREAM + "work on the waiting stream depends on the work recorded in the event",
      apis=("EventRecord", "StreamWaitEvent", "GraphGetEdges"),
      expect=((NodeType.MEMSET, NodeType.MEMCPY), [(NodeType.MEMSET, NodeType.MEMCPY)]))
def _(t: CaseContext) -> Any:
    """A on the origin, C on the forked stream: one edge A -> C."""
    s1, s2, a, c = t.stream(), t.stream(), t.malloc(N), t.malloc(N)
    fork, join = t.event(), t.event()
    with s1.capture() as cap:
        s1.memset(a, 1, N)
        s1.record(fork)
        s2.wait(fork)
        s2.memcpy(c, a, N)
        s2.record(join)
        s1.wait(join)
    g = _graph(t, cap)
    return _types(g), _edge_types(g)


@case("capture.fork.fan_out_fan_in",
      cite=PG_XSTREAM + "each event wait adds the recorded work to the waiting stream's dependencies",
      apis=("EventRecord", "StreamWaitEvent", "GraphGetEdges"), expect=(5, 6))
def _(t: CaseContext) -> Any:
    """A; fork to two streams; one node on each of three streams; join both; E: 5 nodes, 6 edges."""
    s1, s2, s3 = t.stream(), t.stream(), t.stream()
    a = t.malloc(N)
    fork, j2, j3 = t.event(), t.event(), t.event()
    with s1.capture() as cap:
        s1.memset(a, 1, N)
        s1.record(fork)
        s2.wait(fork)
        s3.wait(fork)
        s1.memset(a, 2, N)
        s2.memset(a, 3, N)
        s3.memset(a, 4, N)
        s2.record(j2)
        s3.record(j3)
        s1.wait(j2)
        s1.wait(j3)
        s1.memset(a, 5, N)
    g = _graph(t, cap)
    return len(g.nodes()), len(g.edges())


@case("capture.fork.chained_forks",
      cite=PG_XSTREAM + "a joined stream may fork further; the join is the union of every stream's "
                        "dependency set (no transitive reduction)",
      apis=("EventRecord", "StreamWaitEvent", "GraphGetEdges"), expect=(4, 5))
def _(t: CaseContext) -> Any:
    """A on s1; s2 forks from s1 (B); s3 from s2 (C); both join s1; D: 4 nodes, 5 edges."""
    s1, s2, s3 = t.stream(), t.stream(), t.stream()
    a = t.malloc(N)
    e1, e2, j2, j3 = t.event(), t.event(), t.event(), t.event()
    with s1.capture() as cap:
        s1.memset(a, 1, N)
        s1.record(e1)
        s2.wait(e1)
        s2.memset(a, 2, N)
        s2.record(e2)
        s3.wait(e2)
        s3.memset(a, 3, N)
        s2.record(j2)
        s3.record(j3)
        s1.wait(j2)
        s1.wait(j3)
        s1.memset(a, 4, N)
    g = _graph(t, cap)
    return len(g.nodes()), len(g.edges())


@case("capture.fork.fork_without_work",
      cite=PG_XSTREAM + "a fork that is joined back without work on the forked stream adds no nodes",
      apis=("EventRecord", "StreamWaitEvent"), expect=(CaptureStatus.ACTIVE, (NodeType.MEMSET, NodeType.MEMSET), 1))
def _(t: CaseContext) -> Any:
    """Fork and join around no work (the forked stream did join: it reports ACTIVE): the graph is the plain
    chain A -> B."""
    s1, s2, a = t.stream(), t.stream(), t.malloc(N)
    fork, join = t.event(), t.event()
    with s1.capture() as cap:
        s1.memset(a, 1, N)
        s1.record(fork)
        s2.wait(fork)
        joined = _rt_status(s2)
        s2.record(join)
        s1.wait(join)
        s1.memset(a, 2, N)
    g = _graph(t, cap)
    return joined, _types(g), len(g.edges())


@case("capture.fork.record_adds_no_node",
      cite="CUDA Programming Guide, CUDA Graphs, Stream Capture, Cross-stream Dependencies and Events: "
           "during capture, an event record marks a point for cross-stream dependencies and is not "
           "captured as a node (unless recorded as external)",
      apis=("EventRecord", "MemsetAsync", "StreamWaitEvent"),
      expect=(CaptureStatus.ACTIVE, (NodeType.MEMSET, NodeType.MEMSET), 1))
def _(t: CaseContext) -> Any:
    """memset; record; memset on one stream: two nodes, one edge, no event node.  The record did mark a
    capture point: another stream waiting on the event joins the capture (ACTIVE), and is joined back."""
    s, a, ev = t.stream(), t.malloc(N), t.event()
    other, back = t.stream(), t.event()
    with s.capture() as cap:
        s.memset(a, 1, N)
        s.record(ev)
        other.wait(ev)
        joined = _rt_status(other)
        other.record(back)
        s.memset(a, 2, N)
        s.wait(back)
    g = _graph(t, cap)
    return joined, _types(g), len(g.edges())


@case("capture.fork.wait_own_event_adds_nothing",
      cite="CUDA Programming Guide, CUDA Graphs, Stream Capture, Cross-stream Dependencies and Events: "
           "waiting on work already in the stream's dependencies adds no node and no edge",
      apis=("EventRecord", "StreamWaitEvent"),
      expect=((CaptureStatus.ACTIVE, 1), (NodeType.MEMSET, NodeType.MEMSET), 1))
def _(t: CaseContext) -> Any:
    """A stream waiting on an event it recorded itself in the capture changes nothing (its dependencies stay
    the one memset).  The event was recorded into the capture: another stream waiting on it joins."""
    s, a, ev = t.stream(), t.malloc(N), t.event()
    other, back = t.stream(), t.event()
    with s.capture() as cap:
        s.memset(a, 1, N)
        s.record(ev)
        s.wait(ev)
        deps = len(_rt_info(s)[3])
        other.wait(ev)
        joined = _rt_status(other)
        other.record(back)
        s.wait(back)
        s.memset(a, 2, N)
    g = _graph(t, cap)
    return (joined, deps), _types(g), len(g.edges())


# unsure: whether the runtime leaves the forked stream (and the origin) capturing after an
# unjoined end; pygraphrt promises that no stream is left capturing.
@case("capture.fork.unjoined",
      cite="CUDA Runtime API 13.5, Data types, enum cudaError: \"cudaErrorStreamCaptureUnjoined: The "
           "capture sequence contains a fork that was not joined to the primary stream\" -- "
           "cudaErrorStreamCaptureUnjoined: the capture sequence contains a fork that was not joined to "
           "the primary stream",
      apis=("StreamEndCapture", "EventRecord", "StreamWaitEvent"), raises=errors.StreamCaptureUnjoined)
def _(t: CaseContext) -> Any:
    """Ending with work on a forked stream not joined back raises StreamCaptureUnjoined; no stream stays capturing."""
    s1, s2, a, c = t.stream(), t.stream(), t.malloc(N), t.malloc(N)
    fork = t.event()
    cap = s1.begin_capture()
    try:
        s1.memset(a, 1, N)
        s1.record(fork)
        s2.wait(fork)
        s2.memset(c, 2, N)
        err = _raises_here(t, errors.StreamCaptureUnjoined, cap.end)  # the documented place: the end
        _not_capturing(t, s1, s2, after=f"after {type(err).__name__}")
    finally:
        cap.abort()
        _force_end(s1, s2)
    raise err


# unsure: a forked stream that did no work and was never joined back -- CUDA may still count
# it as an unjoined fork (HIP checks leaf nodes only and accepts it).
@case("capture.fork.unjoined_fork_without_work",
      cite="CUDA Runtime API 13.5, Data types, enum cudaError: \"The capture sequence contains a fork "
           "that was not joined to the primary stream\" -- cudaErrorStreamCaptureUnjoined concerns forks "
           "whose work was not joined; a fork without work leaves nothing unjoined",
      apis=("StreamEndCapture", "EventRecord", "StreamWaitEvent"),
      expect=(CaptureStatus.ACTIVE, (NodeType.MEMSET, NodeType.MEMSET), CaptureStatus.NONE))
def _(t: CaseContext) -> Any:
    """A fork with no work on the forked stream (which did join: ACTIVE) need not be joined back."""
    s1, s2, a = t.stream(), t.stream(), t.malloc(N)
    fork = t.event()
    try:
        with s1.capture() as cap:
            s1.memset(a, 1, N)
            s1.record(fork)
            s2.wait(fork)
            joined = _rt_status(s2)
            s1.memset(a, 2, N)
        return joined, _types(_graph(t, cap)), _rt_status(s2)
    finally:
        _force_end(s1, s2)


# unsure: whether the refused end on the joined stream invalidates the capture.
@case("capture.fork.end_on_joined_stream",
      cite=DOC_STREAM_BEGIN_CAPTURE_CAPTURE_ENDED + " -- capture must be ended on the same stream in which it "
           "was initiated (cudaErrorStreamCaptureUnmatched: the capture was not initiated in this stream); CUDA "
           "Runtime API 13.5, Data types, enum cudaError: \"cudaErrorStreamCaptureUnmatched: The capture was not "
           "initiated in this stream\"",
      apis=("StreamEndCapture", "EventRecord", "StreamWaitEvent"), raises=errors.StreamCaptureUnmatched)
def _(t: CaseContext) -> Any:
    """``StreamEndCapture`` on a stream that only joined the capture raises StreamCaptureUnmatched."""
    s1, s2, a = t.stream(), t.stream(), t.malloc(N)
    fork, join = t.event(), t.event()
    cap = s1.begin_capture()
    try:
        s1.memset(a, 1, N)
        s1.record(fork)
        s2.wait(fork)
        err = _raises_here(t, errors.StreamCaptureUnmatched, _raw_end, s2)
        try:  # join back so that the origin may end (the capture may be invalidated by now)
            s2.record(join)
            s1.wait(join)
        except errors.GraphRTError:
            pass
    finally:
        cap.abort()
        _force_end(s1, s2)
    _not_capturing(t, s1, s2)
    raise err


# unsure: the Programming Guide calls this an invalid merge of two capture graphs; the error
# strings say Merge ("would result in a merge of separate capture sequences"), while Isolation
# reads "dependency created on uncaptured work".  HIP accepts the wait silently.
@case("capture.fork.wait_event_of_other_capture",
      cite=PG_PROHIBITED + "it is invalid to merge two separate capture graphs by waiting on a captured "
                           "event from a stream which is being captured and is associated with a "
                           "different capture graph than the event (cudaErrorStreamCaptureMerge)",
      apis=("StreamWaitEvent", "EventRecord", "StreamBeginCapture"), raises=errors.StreamCaptureMerge)
def _(t: CaseContext) -> Any:
    """A stream capturing B waits on an event recorded in capture A: StreamCaptureMerge."""
    s1, s2, a, b = t.stream(), t.stream(), t.malloc(N), t.malloc(N)
    e1 = t.event()
    ca = s1.begin_capture()
    try:
        cb = s2.begin_capture()
        try:
            s1.memset(a, 1, N)
            s1.record(e1)
            s2.memset(b, 2, N)
            err = _raises_here(t, errors.StreamCaptureMerge, s2.wait, e1)
        finally:
            cb.abort()
    finally:
        ca.abort()
        _force_end(s1, s2)
    _not_capturing(t, s1, s2)
    raise err


# unsure: same Merge/Isolation question as capture.fork.wait_event_of_other_capture.
@case("capture.fork.merge_through_third_stream",
      cite="CUDA Runtime API 13.5, Data types, enum cudaError: \"cudaErrorStreamCaptureMerge: The "
           "operation would have resulted in a merge of two independent capture sequences\" -- "
           "cudaErrorStreamCaptureMerge: the operation would have resulted in a merge of two independent "
           "capture sequences",
      apis=("StreamWaitEvent", "EventRecord", "StreamBeginCapture"), raises=errors.StreamCaptureMerge)
def _(t: CaseContext) -> Any:
    """A stream that joined capture A by one wait, then waits on an event of capture B: StreamCaptureMerge."""
    s1, s2, s3, a = t.stream(), t.stream(), t.stream(), t.malloc(N)
    e1, e2 = t.event(), t.event()
    ca = s1.begin_capture()
    try:
        cb = s2.begin_capture()
        try:
            s1.memset(a, 1, N)
            s1.record(e1)
            s2.memset(a, 2, N)
            s2.record(e2)
            s3.wait(e1)
            t.check_equal(s3.capture_status, CaptureStatus.ACTIVE, "s3 after joining capture A")
            err = _raises_here(t, errors.StreamCaptureMerge, s3.wait, e2)
        finally:
            cb.abort()
    finally:
        ca.abort()
        _force_end(s1, s2, s3)
    _not_capturing(t, s1, s2, s3)
    raise err


@case("capture.fork.wait_uncaptured_event",
      cite="CUDA Runtime API 13.5, Data types, enum cudaError: \"cudaErrorStreamCaptureIsolation: A "
           "dependency would have been created which crosses the capture sequence boundary\" -- "
           "cudaErrorStreamCaptureIsolation: a dependency would have been created which crosses the "
           "capture sequence boundary (on uncaptured work in another stream)",
      apis=("StreamWaitEvent", "EventRecord"), raises=errors.StreamCaptureIsolation)
def _(t: CaseContext) -> Any:
    """A capturing stream waiting on an event recorded outside any capture: StreamCaptureIsolation."""
    s1, s2, a, b = t.stream(), t.stream(), t.malloc(N), t.malloc(N)
    ev = t.event()
    s2.memset(b, 1, N)
    s2.record(ev)  # uncaptured work
    cap = s1.begin_capture()
    try:
        s1.memset(a, 1, N)
        err = _raises_here(t, errors.StreamCaptureIsolation, s1.wait, ev)
    finally:
        cap.abort()
        _force_end(s1)
    s2.synchronize()
    _not_capturing(t, s1, s2)
    raise err


# unsure: that the refused wait invalidates the capture (Programming Guide, Invalidation).
@case("capture.fork.wait_uncaptured_event_invalidates",
      cite=PG_INVALIDATION + "when an invalid operation is attempted during stream capture, any associated "
                             "capture graphs are invalidated",
      apis=("StreamWaitEvent", "StreamEndCapture"), raises=errors.StreamCaptureInvalidated)
def _(t: CaseContext) -> Any:
    """After the isolation error, ending the capture raises StreamCaptureInvalidated."""
    s1, s2, a, b = t.stream(), t.stream(), t.malloc(N), t.malloc(N)
    ev = t.event()
    s2.memset(b, 1, N)
    s2.record(ev)

    def body() -> None:
        with s1.capture():
            s1.memset(a, 1, N)
            t.raises(errors.StreamCaptureIsolation, s1.wait, ev)

    try:
        _fails_then_clean(t, errors.StreamCaptureInvalidated, body, s1)
    finally:
        s2.synchronize()


# ============================================================================ capture into a graph
_TG = ("StreamBeginCaptureToGraph", "StreamEndCapture")


@case("capture.to_graph.after_dependency",
      cite="CUDA Runtime API 13.5, Stream Management, cudaStreamBeginCaptureToGraph: \"graph - Graph to "
           "capture into. dependencies - Dependencies of the first node captured in the stream\" -- the "
           "first captured node lands in the given graph, after the given dependency",
      apis=_TG + ("GraphGetEdges",), requires=("capture_to_graph",),
      expect=((NodeType.MEMSET, NodeType.MEMCPY), [(NodeType.MEMSET, NodeType.MEMCPY)], CaptureStatus.NONE))
def _(t: CaseContext) -> Any:
    """Captured work lands in the given graph after the given dependency node; the end left the stream not
    capturing."""
    s, a, b = t.stream(), t.malloc(N), t.malloc(N)
    g = t.graph()
    root = g.add_memset(a, 1, N)
    with s.capture(graph=g, dependencies=[root]):
        s.memcpy(b, a, N)
    return _types(g), _edge_types(g), _rt_status(s)


@case("capture.to_graph.into_empty_graph",
      cite="CUDA Runtime API 13.5, Stream Management, cudaStreamBeginCaptureToGraph: \"dependencies - "
           "Dependencies of the first node captured in the stream\" -- dependencies can be NULL if "
           "numDependencies is 0: the first node is a root",
      apis=_TG, requires=("capture_to_graph",), expect=((NodeType.MEMSET, NodeType.MEMCPY), 1))
def _(t: CaseContext) -> Any:
    """Capturing into an empty graph without dependencies fills it like an ordinary capture."""
    s, a, b = t.stream(), t.malloc(N), t.malloc(N)
    g = t.graph()
    with s.capture(graph=g):
        s.memset(a, 1, N)
        s.memcpy(b, a, N)
    _check_ended(t, s)
    return _types(g), len(g.edges())


@case("capture.to_graph.info_graph_is_target",
      cite=TO_GRAPH + "\"all operations pushed into the stream will not be executed, but will instead be captured "
                      "into graph, which will be returned via cudaStreamEndCapture\"; " + INFO +
                      "graph_out: \"the graph being captured into\"",
      apis=_TG + ("StreamGetCaptureInfo", "StreamIsCapturing"), requires=("capture_to_graph",),
      expect=(CaptureStatus.ACTIVE, True, True, CaptureStatus.NONE, 1))
def _(t: CaseContext) -> Any:
    """During a capture into a graph StreamGetCaptureInfo reports that graph's handle, and StreamEndCapture
    returns that handle (raw end: pygraphrt's end() returns its target object whatever the runtime gives)."""
    s, a = t.stream(), t.malloc(N)
    g = t.graph()
    cap = s.capture(graph=g)
    cap.begin()
    try:
        s.memset(a, 1, N)
        status, _id, info_graph, _deps = _rt_info(s)
        end, err = _raw_end_keep(s)
        if err is not None:
            raise err
        after = _rt_status(s)
    finally:
        cap.abort()  # pygraphrt's Capture forgets the capture (the stream is no longer capturing)
        _force_end(s)
    return status, info_graph == _address(g), end == _address(g), after, t.snapshot(graph=g).nodes


@case("capture.to_graph.twice_accumulates",
      cite="CUDA Runtime API 13.5, Stream Management, cudaStreamBeginCaptureToGraph: \"Begins graph "
           "capture on a stream to an existing graph\" -- each capture places new nodes into the existing "
           "graph",
      apis=_TG, requires=("capture_to_graph",), expect=(3, 2))
def _(t: CaseContext) -> Any:
    """Two captures into one graph, each after the previous leaf: a chain of three nodes."""
    s, a = t.stream(), t.malloc(N)
    g = t.graph()
    root = g.add_memset(a, 1, N)
    with s.capture(graph=g, dependencies=[root]):
        s.memset(a, 2, N)
    leaf = [n for n in g.leaf_nodes()]
    with s.capture(graph=g, dependencies=leaf):
        s.memset(a, 3, N)
    return len(g.nodes()), len(g.edges())


@case("capture.to_graph.unrelated_node_not_unjoined",
      cite=INFO + "nodes that are or become unreachable from the original stream at cudaStreamEndCapture "
                  "due to direct actions on the graph do not trigger cudaErrorStreamCaptureUnjoined",
      apis=_TG, requires=("capture_to_graph",), expect=3)
def _(t: CaseContext) -> Any:
    """A node of the target graph outside the capture's dependencies does not make the end fail."""
    s, a = t.stream(), t.malloc(N)
    g = t.graph()
    root = g.add_memset(a, 1, N)
    g.add_empty()
    with s.capture(graph=g, dependencies=[root]):
        s.memset(a, 2, N)
    _check_ended(t, s)
    return _rt_count(g)


@case("capture.to_graph.abort_keeps_target",
      cite="Observed, cudaStreamEndCapture: a capture into an existing graph (cudaStreamBeginCaptureToGraph) "
           "ended and discarded leaves that graph valid, with the nodes it had before "
           "(deviations.OBSERVATIONS); CUDA Runtime API 13.5, Stream Management, "
           "cudaStreamBeginCaptureToGraph: \"Begins graph capture on a stream to an existing graph\" -- the "
           "graph is the caller's; no documentation sentence states what ending (pygraphrt's abort()) the "
           "capture does to it; the case records that it stays valid with its earlier nodes",
      apis=_TG, requires=("capture_to_graph",), expect=(CaptureStatus.NONE, True, True))
def _(t: CaseContext) -> Any:
    """An aborted capture into a graph leaves that graph valid, with its earlier nodes."""
    s, a = t.stream(), t.malloc(N)
    g = t.graph()
    root = g.add_memset(a, 1, N)
    cap = s.begin_capture(graph=g, dependencies=[root])
    try:
        s.memset(a, 2, N)
    finally:
        cap.abort()
        _force_end(s, destroy=False)
    return s.capture_status, g.is_valid, root in g.nodes()


@case("capture.to_graph.relaxed_mode",
      cite="CUDA Runtime API 13.5, Stream Management, cudaStreamBeginCaptureToGraph: \"mode - Controls "
           "the interaction of this capture sequence with other API calls that are potentially unsafe\" "
           "-- mode controls the interaction of this capture sequence with potentially unsafe API calls "
           "(as cudaStreamBeginCapture)",
      apis=_TG, requires=("capture_to_graph",), expect=((NodeType.MEMSET,), CaptureStatus.NONE))
def _(t: CaseContext) -> Any:
    """A relaxed-mode capture into a graph works like a global one."""
    s, a = t.stream(), t.malloc(N)
    g = t.graph()
    with s.capture("relaxed", graph=g):
        s.memset(a, 1, N)
    return _types(g), s.capture_status


@case("capture.to_graph.default_edge_data",
      cite="CUDA Runtime API 13.5, Stream Management, cudaStreamBeginCaptureToGraph: \"dependencyData - "
           "Optional array of data associated with each dependency\" -- dependencyData: optional array of "
           "data associated with each dependency; all-zero data is a full dependency",
      apis=_TG + ("GraphGetEdges",), requires=("capture_to_graph",),
      expect=[(NodeType.MEMSET, NodeType.MEMSET, EdgeData())])
def _(t: CaseContext) -> Any:
    """Default edge data given for the dependency gives an ordinary edge."""
    s, a = t.stream(), t.malloc(N)
    g = t.graph()
    root = g.add_memset(a, 1, N)
    with s.capture(graph=g, dependencies=[root], edges=[EdgeData()]):
        s.memset(a, 2, N)
    _check_ended(t, s)
    return [(_rt_type(x), _rt_type(y), e) for x, y, e in g.edges()]


# unsure: that a captured kernel launch takes the programmatic edge data given at begin.
@case("capture.to_graph.programmatic_edge",
      cite="CUDA Runtime API 13.5, Stream Management, cudaStreamBeginCaptureToGraph: \"dependencyData - "
           "Optional array of data associated with each dependency\" -- dependencyData: the edge data of "
           "each dependency of the first captured node (programmatic edges are valid between kernel "
           "nodes)",
      apis=_TG + ("GraphGetEdges", "LaunchKernel"),
      requires=("capture_to_graph_edge_data", "edge_data", "kernels"),
      expect=[(NodeType.KERNEL, NodeType.KERNEL, EdgeData(PORT_PROGRAMMATIC, 0, DependencyType.PROGRAMMATIC))])
def _(t: CaseContext) -> Any:
    """Capture into a graph after a kernel node with programmatic edge data: the edge keeps that data."""
    s = t.stream()
    noop = t.kernel("noop")
    g = t.graph()
    k1 = g.add_kernel(noop, 1, 32, [])
    prog = EdgeData(PORT_PROGRAMMATIC, 0, DependencyType.PROGRAMMATIC)
    with s.capture(graph=g, dependencies=[k1], edges=[prog]):
        s.launch(noop, 1, 32)
    _check_ended(t, s)
    return [(_rt_type(x), _rt_type(y), e) for x, y, e in g.edges()]


@case("capture.to_graph.dependencies_without_graph", kind="binding",
      cite=TO_GRAPH + "dependencies belong to the graph captured into; pygraphrt refuses dependencies "
                      "without a target graph before any call",
      apis=("StreamBeginCaptureToGraph",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """``stream.capture(dependencies=[...])`` without ``graph=`` raises InvalidValue."""
    s, g = t.stream(), t.graph()
    n = g.add_empty()
    _fails_then_clean(t, errors.InvalidValue, lambda: s.capture(dependencies=[n]), s)


@case("capture.to_graph.foreign_dependency", kind="binding",
      cite=TO_GRAPH + "dependencies are nodes of the graph captured into; a node of another graph is invalid",
      apis=("StreamBeginCaptureToGraph",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A dependency from another graph raises InvalidValue; nothing starts capturing."""
    s, g, other = t.stream(), t.graph(), t.graph()
    n = other.add_empty()

    def body() -> None:
        with s.capture(graph=g, dependencies=[n]):
            pass

    _fails_then_clean(t, errors.InvalidValue, body, s, destroy=False)


@case("capture.to_graph.closed_target", kind="binding",
      cite=TO_GRAPH + "graph must be a valid graph; pygraphrt refuses a closed one and leaves the stream "
                      "not capturing",
      apis=("StreamBeginCaptureToGraph",), raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """Capturing into a closed graph raises InvalidResourceHandle; the stream is left not capturing."""
    s = t.stream()
    g = t.graph()
    g.close()

    def body() -> None:
        with s.capture(graph=g):
            pass

    _fails_then_clean(t, errors.InvalidResourceHandle, body, s, destroy=False)


@case("capture.to_graph.edges_length_mismatch", kind="binding",
      cite=TO_GRAPH + "dependencyData has one entry per dependency (numDependencies entries)",
      apis=("StreamBeginCaptureToGraph",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Two edge-data entries for one dependency raise InvalidValue."""
    s, g = t.stream(), t.graph()
    n = g.add_empty()
    _fails_then_clean(t, errors.InvalidValue,
                      lambda: s.capture(graph=g, dependencies=[n], edges=[EdgeData(), EdgeData()]), s,
                      destroy=False)


# ============================================================================ update dependencies
_UPD = ("StreamUpdateCaptureDependencies", "StreamGetCaptureInfo")


def _with_manual_node(t: CaseContext, replace: bool | None, nodes: str = "e") -> Any:
    """memset A; add an empty node E to the capture graph; update deps (add/replace) with
    ``nodes`` ('e' or ''); memset B.  Returns (graph, B)."""
    s, a = t.stream(), t.malloc(N)
    with s.capture() as cap:
        s.memset(a, 1, N)
        e = cap.info().graph.add_empty()
        if replace is not None:
            cap.update_dependencies([e] if nodes == "e" else [], replace=replace)
        s.memset(a, 2, N)
    g = _graph(t, cap)
    return g, g.nodes()[-1]


@case("capture.update_dependencies.add",
      cite=DOC_STREAM_UPDATE_CAPTURE_DEPENDENCIES_DEPENDENCY_SET + " -- cudaStreamAddCaptureDependencies: the "
           "nodes passed are added to the set the next captured node depends on",
      apis=_UPD, expect=((NodeType.MEMSET, NodeType.EMPTY, NodeType.MEMSET), ["empty", "memset"]))
def _(t: CaseContext) -> Any:
    """Adding a node made in the capture graph: the next captured node depends on it and on A."""
    g, last = _with_manual_node(t, replace=False)
    return _types(g), sorted(n.type.value for n, _ in last.dependencies)


@case("capture.update_dependencies.replace",
      cite=DOC_STREAM_UPDATE_CAPTURE_DEPENDENCIES_DEPENDENCY_SET + " -- cudaStreamSetCaptureDependencies: the "
           "nodes passed replace the dependency set",
      apis=_UPD, expect=((NodeType.MEMSET, NodeType.EMPTY, NodeType.MEMSET), ["empty"]))
def _(t: CaseContext) -> Any:
    """Replacing the set by one node: the next captured node depends on it alone, and the end succeeds."""
    g, last = _with_manual_node(t, replace=True)
    return _types(g), [n.type.value for n, _ in last.dependencies]


# unsure: that an empty set is accepted with cudaStreamSetCaptureDependencies.
@case("capture.update_dependencies.replace_with_nothing",
      cite="CUDA Runtime API 13.5, Stream Management, cudaStreamUpdateCaptureDependencies: \"Nodes that "
           "are removed from the dependency set via this API do not result in "
           "cudaErrorStreamCaptureUnjoined if they are unreachable from the stream at "
           "cudaStreamEndCapture\" -- cudaStreamSetCaptureDependencies replaces the set; nodes removed "
           "from it do not result in cudaErrorStreamCaptureUnjoined",
      apis=_UPD, expect=0)
def _(t: CaseContext) -> Any:
    """Setting an empty dependency set makes the next captured node a root."""
    g, last = _with_manual_node(t, replace=True, nodes="")
    return len(last.dependencies)


@case("capture.update_dependencies.info_reflects_update",
      cite="CUDA Runtime API 13.5, Stream Management, cudaStreamGetCaptureInfo: \"The dependency set is "
           "the set of nodes that the next captured node in the stream will depend on\" -- "
           "dependencies_out: the set the next captured node will depend on, as modified by "
           "cudaStreamUpdateCaptureDependencies",
      apis=_UPD, expect=(["empty", "memset"], ["empty"]))
def _(t: CaseContext) -> Any:
    """``info().dependencies`` shows the added node, then only the node that replaced the set."""
    s, a = t.stream(), t.malloc(N)
    with s.capture() as cap:
        s.memset(a, 1, N)
        e = cap.info().graph.add_empty()
        cap.update_dependencies([e])
        added = sorted(n.type.value for n, _ in cap.info().dependencies)
        cap.update_dependencies([e], replace=True)
        replaced = [n.type.value for n, _ in cap.info().dependencies]
    _graph(t, cap)
    return added, replaced


@case("capture.update_dependencies.manual_node_not_unjoined",
      cite=INFO + "nodes that are or become unreachable from the original stream at cudaStreamEndCapture "
                  "due to direct actions on the graph do not trigger cudaErrorStreamCaptureUnjoined",
      apis=("StreamGetCaptureInfo", "GraphAddEmptyNode", "StreamEndCapture"),
      expect=(NodeType.MEMSET, NodeType.EMPTY, NodeType.MEMSET))
def _(t: CaseContext) -> Any:
    """A node added to the capture graph but never made a dependency does not make the end fail."""
    g, _last = _with_manual_node(t, replace=None)
    return _types(g)


@case("capture.update_dependencies.after_end", kind="binding",
      cite=UPDATE + "returns cudaErrorIllegalState if the stream is not capturing (pygraphrt checks its "
                    "capture object first)",
      apis=("StreamUpdateCaptureDependencies",), raises=errors.IllegalState)
def _(t: CaseContext) -> Any:
    """Updating the dependencies of an ended capture raises IllegalState."""
    s = t.stream()
    with s.capture() as cap:
        pass
    g = _graph(t, cap)
    n = g.add_empty()
    _fails_then_clean(t, errors.IllegalState, lambda: cap.update_dependencies([n]), s)


@case("capture.update_dependencies.before_begin", kind="binding",
      cite=UPDATE + "returns cudaErrorIllegalState if the stream is not capturing",
      apis=("StreamUpdateCaptureDependencies",), raises=errors.IllegalState)
def _(t: CaseContext) -> Any:
    """Updating the dependencies of a capture not yet begun raises IllegalState."""
    s = t.stream()
    cap = s.capture()
    _fails_then_clean(t, errors.IllegalState, lambda: cap.update_dependencies([]), s)


@case("capture.update_dependencies.raw_not_capturing",
      cite=UPDATE + "returns cudaErrorIllegalState if the stream is not capturing",
      apis=("StreamUpdateCaptureDependencies",), raises=errors.IllegalState)
def _(t: CaseContext) -> Any:
    """The runtime refuses ``StreamUpdateCaptureDependencies`` on a stream that is not capturing."""
    s = t.stream()
    _fails_then_clean(t, errors.IllegalState,
                      lambda: s.backend.ops.update_capture_dependencies(s.handle, [], None, False), s)


@case("capture.update_dependencies.foreign_node", kind="binding",
      cite=UPDATE + "dependencies are nodes of the graph being captured; a node of another graph is invalid",
      apis=("StreamUpdateCaptureDependencies",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A node of another graph raises InvalidValue; the capture stays ACTIVE and still ends."""
    s, a, other = t.stream(), t.malloc(N), t.graph()
    n = other.add_empty()
    cap = s.begin_capture()
    try:
        s.memset(a, 1, N)
        err = _raises_here(t, errors.InvalidValue, cap.update_dependencies, [n])
        t.check_equal(s.capture_status, CaptureStatus.ACTIVE, "status after the refused update")
        t.check_equal(_types(t.track(cap.end())), (NodeType.MEMSET,), "graph after the refused update")
    finally:
        cap.abort()
        _force_end(s)
    raise err


@case("capture.update_dependencies.not_a_node", kind="binding",
      cite=UPDATE + "dependencies is an array of graph nodes",
      apis=("StreamUpdateCaptureDependencies",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Something that is not a node raises InvalidValue."""
    s = t.stream()
    cap = s.begin_capture()
    try:
        err = _raises_here(t, errors.InvalidValue, cap.update_dependencies, [object()])
    finally:
        cap.abort()
        _force_end(s)
    _not_capturing(t, s)
    raise err


@case("capture.update_dependencies.edges_length_mismatch", kind="binding",
      cite=UPDATE + "dependencyData has one entry per dependency (numDependencies entries)",
      apis=("StreamUpdateCaptureDependencies",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Two edge-data entries for one node raise InvalidValue."""
    s = t.stream()
    cap = s.begin_capture()
    try:
        e = cap.info().graph.add_empty()
        err = _raises_here(t, errors.InvalidValue, cap.update_dependencies, [e], [EdgeData(), EdgeData()])
    finally:
        cap.abort()
        _force_end(s)
    _not_capturing(t, s)
    raise err


@case("capture.update_dependencies.default_edge_data",
      cite=DOC_STREAM_UPDATE_CAPTURE_DEPENDENCIES_DEPENDENCYDATA_OPTIONAL + " -- dependencyData: edge data of "
           "each dependency; shown again by cudaStreamGetCaptureInfo edgeData_out",
      apis=_UPD, requires=("edge_data",), expect=[(NodeType.EMPTY, EdgeData())])
def _(t: CaseContext) -> Any:
    """Setting the set with default edge data: info shows the node with default edge data."""
    s = t.stream()
    with s.capture() as cap:
        e = cap.info().graph.add_empty()
        cap.update_dependencies([e], [EdgeData()], replace=True)
        deps = [(n.type, d) for n, d in cap.info().dependencies]
    _graph(t, cap)
    return deps


# unsure: that programmatic edge data set on the capture dependencies reaches the next
# captured kernel's edge (and is reported back by capture info).
@case("capture.update_dependencies.programmatic_edge",
      cite=DOC_STREAM_UPDATE_CAPTURE_DEPENDENCIES_DEPENDENCYDATA_OPTIONAL + " -- the data of the edges to the "
           "next captured node; CUDA Runtime API 13.5, Data types, cudaGraphDependencyType: \"It may only be used "
           "between kernel nodes, and must be used with either the cudaGraphKernelNodePortProgrammatic or "
           "cudaGraphKernelNodePortLaunchCompletion outgoing port\" -- a programmatic edge from kernel k1 to the "
           "next captured kernel k2",
      apis=_UPD + ("LaunchKernel", "GraphGetEdges"), requires=("edge_data", "kernels"),
      expect=([(NodeType.KERNEL, EdgeData(PORT_PROGRAMMATIC, 0, DependencyType.PROGRAMMATIC))],
              [(NodeType.KERNEL, NodeType.KERNEL, EdgeData(PORT_PROGRAMMATIC, 0, DependencyType.PROGRAMMATIC))]))
def _(t: CaseContext) -> Any:
    """Kernel k1; set the dependency to k1 with programmatic data; kernel k2: a programmatic edge."""
    s = t.stream()
    noop = t.kernel("noop")
    prog = EdgeData(PORT_PROGRAMMATIC, 0, DependencyType.PROGRAMMATIC)
    with s.capture() as cap:
        s.launch(noop, 1, 32)
        k1 = cap.info().dependencies[0][0]
        cap.update_dependencies([k1], [prog], replace=True)
        deps = [(n.type, d) for n, d in cap.info().dependencies]
        s.launch(noop, 1, 32)
    g = _graph(t, cap)
    return deps, [(x.type, y.type, e) for x, y, e in g.edges()]


# unsure: whether the runtime refuses the programmatic data at the update or when the memset
# that would take the edge is captured; either way InvalidValue is expected.
@case("capture.update_dependencies.programmatic_edge_to_memset",
      cite="CUDA Runtime API 13.5, Data types, cudaGraphEdgeData: \"Only kernel nodes define non-zero "
           "ports\"; CUDA Runtime API 13.5, Data types, cudaGraphDependencyType: \"It may only be used "
           "between kernel nodes\" -- a programmatic edge from a memset node is refused",
      apis=_UPD + ("MemsetAsync",), requires=("edge_data",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Programmatic edge data from a memset node into the next captured node raises InvalidValue."""
    s, a = t.stream(), t.malloc(N)
    prog = EdgeData(PORT_PROGRAMMATIC, 0, DependencyType.PROGRAMMATIC)
    cap = s.begin_capture()

    def body() -> None:
        s.memset(a, 1, N)
        m = cap.info().dependencies[0][0]
        cap.update_dependencies([m], [prog], replace=True)
        s.memset(a, 2, N)

    try:
        err = _raises_here(t, errors.InvalidValue, body)
    finally:
        cap.abort()
        _force_end(s)
    _not_capturing(t, s)
    raise err


# ============================================================================ what captured work becomes
@case("capture.ops.memset_params",
      cite=PG_CAPTURE + "a captured cudaMemsetAsync becomes a memset node with the same parameters",
      apis=("MemsetAsync", "GraphMemsetNodeGetParams", "GraphNodeGetType"),
      expect=(NodeType.MEMSET, True, 0x5A, N, 1))
def _(t: CaseContext) -> Any:
    """A captured memset: a memset node (type read from the runtime) with its destination, value, width and
    element size (read back by GraphMemsetNodeGetParams, not the generic readback)."""
    from pygraphrt.graph._readback import typed_params

    s, a = t.stream(), t.malloc(N)
    with s.capture() as cap:
        s.memset(a, 0x5A, N)
    node = _graph(t, cap).nodes()[0]
    p = typed_params(node)
    return _rt_type(node), p["dst"] == a.ptr, p["value"], p["width"] * p["height"], p["element_size"]


@case("capture.ops.memcpy_params",
      cite=PG_CAPTURE + "a captured cudaMemcpyAsync becomes a memcpy node with the same source, "
                        "destination and size",
      apis=("MemcpyAsync", "GraphMemcpyNodeGetParams", "GraphNodeGetType"),
      expect=(NodeType.MEMCPY, True, True, N))
def _(t: CaseContext) -> Any:
    """A captured memcpy: a memcpy node (type read from the runtime) with its source, destination and width
    (read back by GraphMemcpyNodeGetParams, not the generic readback)."""
    from pygraphrt.graph._readback import typed_params

    s, a, b = t.stream(), t.malloc(N), t.malloc(N)
    with s.capture() as cap:
        s.memcpy(b, a, N)
    node = _graph(t, cap).nodes()[0]
    p = typed_params(node)
    return _rt_type(node), p["dst"] == b.ptr, p["src"] == a.ptr, p["width"]


@case("capture.ops.host_runs_each_launch",
      cite=PG_CAPTURE + "a captured cudaLaunchHostFunc becomes a host node, run at each graph launch",
      apis=("LaunchHostFunc", "GraphInstantiateWithFlags", "GraphLaunch"), expect=(0, 2))
def _(t: CaseContext) -> Any:
    """The captured host function runs once per launch of the graph, never at capture."""
    s = t.stream()
    calls: list[int] = []
    with s.capture() as cap:
        s.launch_host_func(lambda: calls.append(1))
    at_capture = len(calls)
    exe = t.instantiate(_graph(t, cap))
    exe.launch(s)
    exe.launch(s)
    s.synchronize()
    return at_capture, len(calls)


@case("capture.ops.kernel_node",
      cite=PG_CAPTURE + "a kernel launched into a capturing stream becomes a kernel node with the same "
                        "launch dimensions",
      apis=("LaunchKernel", "GraphKernelNodeGetParams"), requires=("kernels",),
      expect=((NodeType.KERNEL,), (4, 1, 1), (256, 1, 1), 0))
def _(t: CaseContext) -> Any:
    """A captured kernel launch: one kernel node with its grid, block and shared memory."""
    s, a = t.stream(), t.malloc(4 * 1024)
    with s.capture() as cap:
        _launch(t, s, "fill_u32", a, 7, 1024)
    g = _graph(t, cap)
    p = g.nodes()[0].params
    return _types(g), tuple(p["grid"]), tuple(p["block"]), p["shared_mem_bytes"]


@case("capture.ops.kernel_args_read_back",
      cite=PG_CAPTURE + "the kernel node keeps the launch's argument values (copied at the launch)",
      apis=("LaunchKernel", "GraphKernelNodeGetParams"), requires=("kernels",),
      expect=([True, 7, 1024], (4, 1, 1), (256, 1, 1)))
def _(t: CaseContext) -> Any:
    """The captured kernel node's arguments read back as launched, with the launch's grid and block (the
    same GraphKernelNodeGetParams read)."""
    s, a = t.stream(), t.malloc(4 * 1024)
    with s.capture() as cap:
        _launch(t, s, "fill_u32", a, 7, 1024)
    node = _graph(t, cap).nodes()[0]
    args = node.args
    if args is None:
        raise CaseFailure("the captured kernel node's arguments could not be decoded")
    p = node.params
    return [int(args[0]) == a.ptr, args[1], args[2]], tuple(p["grid"]), tuple(p["block"])


@case("capture.ops.kernels_run_in_order",
      cite=PG_CAPTURE + "captured kernels keep the stream order of their launches",
      apis=("LaunchKernel", "GraphInstantiateWithFlags", "GraphLaunch"), requires=("kernels",), expect=[9])
def _(t: CaseContext) -> Any:
    """fill 7 then add 2, captured and launched: every element is 9."""
    n = 1024
    s, a = t.stream(), t.malloc(4 * n)
    with s.capture() as cap:
        _launch(t, s, "fill_u32", a, 7, n)
        _launch(t, s, "add_u32", a, 2, n)
    t.instantiate(_graph(t, cap)).launch(s)
    s.synchronize()
    return sorted(set(_u32s(a, n)))


@case("capture.ops.mixed_chain",
      cite=PG_CAPTURE + "memset, kernel and memcpy on one stream become a chain of nodes",
      apis=("MemsetAsync", "LaunchKernel", "MemcpyAsync", "GraphGetEdges"), requires=("kernels",),
      expect=((NodeType.MEMSET, NodeType.KERNEL, NodeType.MEMCPY),
              [(NodeType.MEMSET, NodeType.KERNEL), (NodeType.KERNEL, NodeType.MEMCPY)]))
def _(t: CaseContext) -> Any:
    """memset; kernel; memcpy: three nodes in a chain."""
    n = 1024
    s, a, b = t.stream(), t.malloc(4 * n), t.malloc(4 * n)
    with s.capture() as cap:
        s.memset(a, 0, 4 * n)
        _launch(t, s, "add_u32", a, 1, n)
        s.memcpy(b, a, 4 * n)
    g = _graph(t, cap)
    return _types(g), sorted(_edge_types(g), key=lambda e: (e[0].value, e[1].value), reverse=True)


# unsure: the port/type the runtime records for a captured programmatic launch (expected
# from_port = cudaGraphKernelNodePortProgrammatic, type Programmatic); needs sm_90+.
@case("capture.ops.programmatic_serialization_edge",
      cite="CUDA Runtime API 13.5, Data types, cudaLaunchAttributeProgrammaticStreamSerialization / "
           "cudaGraphEdgeData: \"to non-0 signals that the kernel will use programmatic means to resolve "
           "its stream dependency\" -- a launch with programmatic stream serialization captured after a "
           "kernel depends on it through a programmatic edge (from port "
           "cudaGraphKernelNodePortProgrammatic)",
      apis=("LaunchKernelExC", "GraphGetEdges", "GraphNodeGetType"), requires=("edge_data", "kernels", "cuda>=12.3"),
      expect=[(NodeType.KERNEL, NodeType.KERNEL, EdgeData(PORT_PROGRAMMATIC, 0, DependencyType.PROGRAMMATIC))])
def _(t: CaseContext) -> Any:
    """kernel; kernel with programmatic stream serialization: one programmatic edge between them."""
    s = t.stream()
    noop = t.kernel("noop")
    with s.capture() as cap:
        s.launch(noop, 1, 32)
        s.launch(noop, 1, 32, programmatic_stream_serialization=True)
    g = _graph(t, cap)
    return [(_rt_type(x), _rt_type(y), e) for x, y, e in g.edges()]


@case("capture.ops.alloc_and_free_nodes",
      cite=PG_MEMNODES + "cudaMallocAsync and cudaFreeAsync in a capturing stream become memory allocation "
                         "and free nodes",
      apis=("MallocAsync", "FreeAsync", "MemsetAsync"), requires=("graph_memory_nodes",),
      expect=((NodeType.MEM_ALLOC, NodeType.MEMSET, NodeType.MEM_FREE), 2))
def _(t: CaseContext) -> Any:
    """malloc_async; memset; free_async captured: alloc, memset and free nodes in a chain."""
    s = t.stream()
    with s.capture() as cap:
        tmp = s.malloc_async(1 << 20)
        s.memset(tmp, 0, 1 << 20)
        s.free_async(tmp)
    g = _graph(t, cap)
    return _types(g), len(g.edges())


@case("capture.ops.malloc_async_is_graph_memory",
      cite=PG_MEMNODES + "an allocation made in a capture is graph memory: its node holds the size and the "
                         "address every launch will use",
      apis=("MallocAsync", "GraphMemAllocNodeGetParams", "GraphNodeGetType"), requires=("graph_memory_nodes",),
      expect=(NodeType.MEM_ALLOC, 1 << 20, True, True))
def _(t: CaseContext) -> Any:
    """The first node of a captured malloc_async / memset / free_async is a memory allocation node (type read
    from the runtime) whose size and address (read back by GraphMemAllocNodeGetParams) are the allocation's:
    the address cudaMallocAsync returned during the capture."""
    from pygraphrt.graph._readback import typed_params

    s = t.stream()
    with s.capture() as cap:
        tmp = s.malloc_async(1 << 20)
        address = tmp.ptr
        s.memset(tmp, 0, 1 << 20)
        s.free_async(tmp)
    node = _graph(t, cap).nodes()[0]
    p = typed_params(node)
    return _rt_type(node), p["bytesize"], p["dptr"] != 0, p["dptr"] == address


@case("capture.ops.alloc_free_graph_relaunches",
      cite=PG_MEMNODES + "an allocation freed in the graph that made it allows the graph to be launched again",
      apis=("MallocAsync", "FreeAsync", "GraphLaunch"), requires=("graph_memory_nodes",), expect=b"\x07" * 8)
def _(t: CaseContext) -> Any:
    """A captured alloc/memset/copy/free graph launches three times and produces the copy."""
    s, out = t.stream(), t.malloc(N)
    with s.capture() as cap:
        tmp = s.malloc_async(N)
        s.memset(tmp, 7, N)
        s.memcpy(out, tmp, N)
        s.free_async(tmp)
    exe = t.instantiate(_graph(t, cap))
    for _ in range(3):
        exe.launch(s)
    s.synchronize()
    return out.to_bytes(8)


@case("capture.ops.unknown_pool_name", kind="binding",
      cite=SOMA + "allocations in a capture come from a memory pool; pygraphrt takes a MemPool or "
                  "'private' and refuses anything else before any call",
      apis=("StreamBeginCapture",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """``stream.capture(pool="shared")`` raises InvalidValue and begins nothing."""
    s = t.stream()
    _fails_then_clean(t, errors.InvalidValue, lambda: s.capture(pool="shared"), s)


@case("capture.ops.other_stream_executes",
      cite="Observed, cudaStreamBeginCapture: work on another stream during a capture executes (its memset "
           "writes the buffer) and is not captured (the graph holds the capturing stream's memset only) "
           "(deviations.OBSERVATIONS); CUDA Runtime API 13.5, Stream Management, cudaStreamBeginCapture: \"When "
           "a stream is in capture mode, all operations pushed into the stream will not be executed\" -- it "
           "speaks of the stream in capture mode only; no documentation sentence states that work on another "
           "stream executes during a capture; the case records that it does",
      apis=("MemsetAsync",) + BEGIN_END, expect=((NodeType.MEMSET,), b"\x44" * 8))
def _(t: CaseContext) -> Any:
    """Work on an unrelated stream during a capture runs normally and is not captured."""
    s1, s2, a, b = t.stream(), t.stream(), t.malloc(N), t.malloc(N)
    with s1.capture() as cap:
        s1.memset(a, 1, N)
        s2.memset(b, 0x44, N)
    g = _graph(t, cap)
    s2.synchronize()
    return _types(g), b.to_bytes(8)
