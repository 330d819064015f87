"""Stream capture's refusals and failure paths on the simulator (pygraphrt/graph/_capture.py): each
refusal's error class, the call it names and its message, and the state it leaves -- the stream
not capturing, ``cap.graph``, a target graph kept or (as the runtime destroyed it) forgotten.

Written from the mutation check's survivors (scripts/mutation, issue 38 item 11): the capture's
argument checks (mode, target graph, dependencies, pool), Capture.end's failure paths (an
invalidated capture, into a target graph too; an unjoined one; a wrong-thread end, both as the
simulator does it -- ended anyway, as CUDA 12.9/13.0 -- and as a runtime that keeps the capture),
and a capture dropped while running.
"""

from __future__ import annotations

import gc
import threading
import warnings

import pytest

import pygraphrt as rt
from pygraphrt import errors
from pygraphrt.enums import CaptureStatus

from .backends import selected

N = 256


@pytest.fixture(scope="module", autouse=True)
def sim_backend():
    with selected("sim") as backend:
        yield backend


@pytest.fixture
def stream():
    s = rt.Stream()
    yield s
    assert s.capture_status is CaptureStatus.NONE, "a test left the stream capturing"
    s.close()


@pytest.fixture
def buf():
    b = rt.malloc(N)
    yield b
    b.close()


def refusal(call, cls):
    """The exception ``call()`` raises, checked to be exactly ``cls`` (not a subclass or a parent)."""
    with pytest.raises(errors.GraphRTError) as info:
        call()
    assert type(info.value) is cls, f"expected {cls.__name__}, got {type(info.value).__name__}: {info.value}"
    return info.value


# -- Stream.capture's arguments --------------------------------------------------------------------

def test_capture_arguments_are_checked_before_the_runtime(stream):
    g = rt.Graph()
    root = g.add_empty()
    cases = [
        (lambda: stream.capture("bogus"),
         "unknown capture mode 'bogus'; one of ['global', 'thread_local', 'relaxed']"),
        (lambda: stream.capture(graph=root), f"{root!r} is not a Graph"),
        (lambda: stream.capture(graph=g, dependencies="ab"), "expected an iterable of Nodes, got 'ab'"),
        (lambda: stream.capture(dependencies=[root]), "dependencies need a target graph"),
        (lambda: stream.capture(graph=rt.Graph(), dependencies=[root]), f"{root!r} belongs to another graph"),
        (lambda: stream.capture(pool=5), "pool must be a MemPool or 'private', got 5"),
        (lambda: stream.capture(pool="Private"), "pool must be a MemPool or 'private', got 'Private'"),
    ]
    for call, detail in cases:
        e = refusal(call, errors.InvalidValue)
        assert (e.api, e.detail) == ("dependency" if "another graph" in detail else "Stream.capture", detail)
        assert stream.capture_status is CaptureStatus.NONE
    assert len(g.nodes()) == 1


def test_capture_pool(stream, buf):
    assert stream.capture().pool is None
    private = stream.capture(pool="private")
    assert isinstance(private.pool, rt.MemPool) and private.pool != rt.MemPool.default()
    assert stream.capture(pool="private").pool != private.pool  # a new pool for each
    mine = rt.MemPool()
    with stream.capture(pool=mine) as cap:
        assert cap.pool is mine
        tmp = stream.malloc_async(64)  # no pool given: the capture's
        assert tmp.pool is mine
        stream.free_async(tmp)
    assert len(cap.graph.nodes()) == 2


# -- begin -----------------------------------------------------------------------------------------

def test_begin_refusals(stream, buf):
    cap = stream.capture()
    with cap:
        stream.memset(buf, 1, N)
        e = refusal(cap.begin, errors.IllegalState)
        assert (e.api, e.detail) == ("Capture.begin", "this capture object was already used")
        e = refusal(stream.begin_capture, errors.IllegalState)
        assert (e.api, e.detail) == ("Capture.begin", "the stream is already capturing (refused by pygraphrt: "
                                                       "cudaStreamBeginCapture was not called)")
        assert stream.capture_status is CaptureStatus.ACTIVE  # the running capture is untouched
    assert len(cap.graph.nodes()) == 1
    e = refusal(cap.begin, errors.IllegalState)  # (after its end too)
    assert e.detail == "this capture object was already used"
    e = refusal(rt.Stream.legacy_default().begin_capture, errors.StreamCaptureUnsupported)
    assert (e.api, e.detail) == ("Capture.begin", "the legacy default stream cannot be captured; use a created "
                                                  "stream (refused by pygraphrt: cudaStreamBeginCapture was "
                                                  "not called)")


def test_calls_on_a_capture_that_is_not_running(stream, buf):
    cap = stream.capture()
    e = refusal(cap.end, errors.IllegalState)
    assert (e.api, e.detail) == ("Capture.end", "capture is new, not active")
    e = refusal(lambda: cap.update_dependencies([]), errors.IllegalState)
    assert (e.api, e.detail) == ("Capture.update_dependencies", "capture is not active")
    e = refusal(cap.conditional_handle, errors.IllegalState)
    assert (e.api, e.detail) == ("Capture.conditional_handle", "capture is new, not active")
    with cap:
        stream.memset(buf, 1, N)
    e = refusal(cap.end, errors.IllegalState)
    assert (e.api, e.detail) == ("Capture.end", "capture is ended, not active")
    cap = stream.begin_capture()
    cap.abort()
    e = refusal(cap.end, errors.IllegalState)
    assert (e.api, e.detail) == ("Capture.end", "capture is aborted, not active")
    e = refusal(lambda: cap.add_if(None), errors.IllegalState)
    assert (e.api, e.detail) == ("Capture.add_if", "capture is aborted, not active")
    assert cap.graph is None


def test_update_dependencies_refusals(stream):
    g = rt.Graph()
    with stream.capture(graph=g) as cap:
        e = refusal(lambda: cap.update_dependencies("ab"), errors.InvalidValue)
        assert (e.api, e.detail) == ("Capture.update_dependencies", "expected an iterable of Nodes, got 'ab'")
    cap = stream.begin_capture()
    try:
        e = refusal(lambda: cap.update_dependencies([5]), errors.InvalidValue)
        assert (e.api, e.detail) == ("dependency", "5 is not a Node")  # (the graph being built says so)
        refusal(stream.synchronize, errors.StreamCaptureUnsupported)  # invalidated: no graph to ask
        e = refusal(lambda: cap.update_dependencies([5]), errors.InvalidValue)
        assert (e.api, e.detail) == ("Capture.update_dependencies", "5 is not a Node")
        e = refusal(cap.conditional_handle, errors.StreamCaptureInvalidated)
        assert (e.api, e.detail) == ("Capture.conditional_handle", f"capture status is {CaptureStatus.INVALIDATED}")
    finally:
        cap.abort()


# -- end's failure paths ---------------------------------------------------------------------------

def test_end_of_an_invalidated_capture(stream, buf):
    cap = stream.begin_capture()
    stream.memset(buf, 1, N)
    refusal(stream.synchronize, errors.StreamCaptureUnsupported)  # invalidates the capture
    e = refusal(cap.end, errors.StreamCaptureInvalidated)
    assert e.api == "cudaStreamEndCapture" and e.name == "cudaErrorStreamCaptureInvalidated"
    assert e.detail == ("the capture was invalidated by Stream.StreamSynchronize "
                        "(cudaErrorStreamCaptureUnsupported)")
    assert stream.capture_status is CaptureStatus.NONE and stream._capture is None
    assert cap.graph is None
    e = refusal(cap.end, errors.IllegalState)
    assert e.detail == "capture is ended, not active"
    cap.abort()  # (a no-op now)
    assert cap.graph is None
    with stream.capture() as again:  # the stream captures again
        stream.memset(buf, 2, N)
    assert len(again.graph.nodes()) == 1


def test_end_of_an_unjoined_capture_names_no_failure(stream, buf):
    other, fork = rt.Stream(), rt.Event()
    cap = stream.begin_capture()
    stream.record(fork)
    other.wait(fork)
    other.memset(buf, 1, N)
    e = refusal(cap.end, errors.StreamCaptureUnjoined)
    assert e.api == "cudaStreamEndCapture" and e.detail == ""
    assert stream.capture_status is CaptureStatus.NONE and other.capture_status is CaptureStatus.NONE
    assert cap.graph is None


def test_end_of_an_invalidated_capture_into_a_graph(stream, buf):
    """The runtime destroys the target graph (CUDA 12.9/13.0, and the simulator): the Graph
    forgets its handle and says why when used."""
    g = rt.Graph()
    first = g.add_memset(buf, 1, N)
    g.add_memset(buf, 1, N, dependencies=[first])  # (add_memset keeps the graph's handle with these objects)
    cap = stream.begin_capture(graph=g)
    stream.memset(buf, 2, N)
    refusal(stream.synchronize, errors.StreamCaptureUnsupported)
    e = refusal(cap.end, errors.StreamCaptureInvalidated)
    assert e.api == "cudaStreamEndCapture" and "invalidated by Stream.StreamSynchronize" in e.detail
    assert not g.is_valid
    why = ("the runtime destroyed this graph when the capture into it failed "
           "(cudaStreamEndCapture of an invalidated capture)")
    e = refusal(g.nodes, errors.InvalidResourceHandle)
    assert e.detail == why
    # the same objects again: refused by pygraphrt, saying why, not passed to the runtime with
    # the handle it destroyed
    e = refusal(lambda: g.add_memset(buf, 1, N, dependencies=[first]), errors.InvalidResourceHandle)
    assert why in e.detail


def test_a_target_graph_survives_abort_and_a_dropped_capture(buf):
    """Ending a capture into the user's graph (abort, or the finalizer of a capture dropped while
    running) must not destroy that graph: only a graph the capture made is discarded."""
    g = rt.Graph()
    g.add_memset(buf, 1, N)
    s = rt.Stream()
    cap = s.begin_capture(graph=g)
    s.memset(buf, 2, N)
    cap.abort()
    assert s.capture_status is CaptureStatus.NONE
    assert g.is_valid and len(g.nodes()) == 2  # the runtime keeps what was captured into it
    cap = s.begin_capture(graph=g)
    s.memset(buf, 3, N)
    name = repr(s)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del cap, s
        gc.collect()
    assert [str(w.message) for w in caught] == [
        f"a capture on {name} was begun and never ended (dropped while capturing): ended now, its graph "
        "discarded -- end it with cap.end() or cap.abort(), or capture in a `with stream.capture() as cap:` "
        "block"]
    assert caught[0].category is ResourceWarning
    assert g.is_valid and len(g.nodes()) == 3
    exe = g.instantiate()
    s = rt.Stream()
    exe.launch(s)
    s.synchronize()
    assert buf.to_bytes(4) == b"\x03" * 4


def test_end_from_another_thread_when_the_runtime_ends_it(stream, buf):
    """The simulator (as CUDA 12.9/13.0) refuses the end and ends the capture all the same: the
    Capture is ended too, without a graph, and does not claim the capture still runs."""
    cap = stream.begin_capture("global")
    stream.memset(buf, 1, N)
    box: list = []
    t = threading.Thread(target=lambda: box.append(refusal(cap.end, errors.StreamCaptureWrongThread)))
    t.start()
    t.join()
    (e,) = box
    assert e.api == "cudaStreamEndCapture" and "still active" not in e.detail
    assert stream.capture_status is CaptureStatus.NONE
    assert cap.graph is None
    assert refusal(cap.end, errors.IllegalState).detail == "capture is ended, not active"


def test_end_from_another_thread_when_the_runtime_keeps_it(sim_backend, stream, buf, monkeypatch):
    """A runtime that keeps the capture after a wrong-thread end (the documented behaviour: only
    the thread that began it can end it): modelled by an end that returns
    cudaErrorStreamCaptureWrongThread and leaves the capture running.  The Capture stays active,
    the error says so, and a later end() works."""
    ops = sim_backend.ops
    real_end = ops.fn("StreamEndCapture")
    wrong_thread = int(sim_backend.lib.cudaErrorStreamCaptureWrongThread)
    cap = stream.begin_capture("global")
    stream.memset(buf, 1, N)
    monkeypatch.setitem(ops._fns, "StreamEndCapture", lambda handle, out: wrong_thread)
    try:
        e = refusal(cap.end, errors.StreamCaptureWrongThread)
        assert e.api == "cudaStreamEndCapture" and e.name == "cudaErrorStreamCaptureWrongThread"
        assert e.detail == "the capture is still active: end or abort it from the thread that began it"
        assert stream.capture_status is CaptureStatus.ACTIVE
        assert refusal(lambda: cap.graph, errors.IllegalState).detail.startswith("the capture is still running")
    finally:
        monkeypatch.setitem(ops._fns, "StreamEndCapture", real_end)
        if stream.capture_status is not CaptureStatus.NONE and cap._state != "active":
            cap.abort()  # (only where a check above failed: the stream fixture's check then passes)
    graph = cap.end()
    assert cap.graph is graph and len(graph.nodes()) == 1


# -- the rest of the capture's surface: info, conditional nodes, what end and abort hand over ------

def test_info_while_active_and_after_invalidation(stream, buf):
    cap = stream.begin_capture()
    try:
        stream.memset(buf, 1, N)
        info = cap.info()
        assert info.status is CaptureStatus.ACTIVE and isinstance(info.id, int) and info.id > 0
        assert info.graph is not None and [n for n, _ in info.dependencies] == info.graph.nodes()
        refusal(stream.synchronize, errors.StreamCaptureUnsupported)
        after = cap.info()
        assert (after.status, after.id, after.graph, after.dependencies) == (CaptureStatus.INVALIDATED, info.id,
                                                                             None, [])
    finally:
        cap.abort()


def test_the_graph_being_built_is_unusable_after_abort(stream, buf):
    cap = stream.begin_capture()
    stream.memset(buf, 1, N)
    live = cap.info().graph
    assert len(live.nodes()) == 1
    cap.abort()
    refusal(live.nodes, errors.InvalidResourceHandle)


def test_abort_of_an_invalidated_capture_into_a_graph_forgets_the_graph(stream, buf):
    g = rt.Graph()
    g.add_memset(buf, 1, N)
    cap = stream.begin_capture(graph=g)
    stream.memset(buf, 2, N)
    refusal(stream.synchronize, errors.StreamCaptureUnsupported)
    cap.abort()  # no exception: the runtime's refused end is abort's to absorb
    assert stream.capture_status is CaptureStatus.NONE
    assert not g.is_valid  # the runtime destroyed it (as CUDA 12.9/13.0)


def test_the_capture_pool_is_the_captures_only(stream):
    mine = rt.MemPool()
    with stream.capture(pool=mine):
        stream.free_async(stream.malloc_async(64))
    after = stream.malloc_async(64)  # not capturing: the device's pool again
    try:
        assert after.pool is None
    finally:
        stream.free_async(after)
        stream.synchronize()


def test_a_captured_host_functions_error_reaches_the_launching_stream(stream):
    def fail():
        raise ValueError("captured host function")

    with stream.capture() as cap:
        stream.launch_host_func(fail)
    exe = cap.graph.instantiate()
    exe.launch(stream)
    e = refusal(stream.synchronize, errors.HostCallbackError)
    assert str(e.__cause__) == "captured host function"


def test_conditional_nodes_at_the_captures_point(stream, buf):
    with stream.capture(graph=rt.Graph()) as cap:
        stream.memset(buf, 1, N)
        h = cap.conditional_handle()
        assert (h.default, h.reset_each_launch) == (0, True)
        h2 = cap.conditional_handle(5)
        assert (h2.default, h2.reset_each_launch) == (5, True)
        h3 = cap.conditional_handle(reset_each_launch=False)
        assert h3.reset_each_launch is False
        sw = cap.add_switch(h, 3)
        assert len(sw.bodies) == 3
        assert [n for n, _ in cap.info().dependencies] == [sw]  # later work depends on it alone
        node = cap.add_if(h2)
        assert [n for n, _ in cap.info().dependencies] == [node]
    assert {(a, b) for a, b, _ in cap.graph.edges()} == {(cap.graph.nodes()[0], sw), (sw, node)}


def test_capture_into_a_graph_with_edge_data(stream, buf):
    from pygraphrt.enums import EdgeData

    g = rt.Graph()
    root = g.add_empty()
    e = refusal(lambda: stream.capture(graph=g, dependencies=[root], edges=[EdgeData(), EdgeData()]),
                errors.InvalidValue)
    assert (e.api, e.detail) == ("edges", "2 edge data for 1 dependencies")
    e = refusal(lambda: stream.capture(graph=g, dependencies=[root], edges=["x"]), errors.InvalidValue)
    assert (e.api, e.detail) == ("edges", "'x' is not an EdgeData")
    assert stream.capture_status is CaptureStatus.NONE


def test_a_captured_graph_seen_during_the_capture_is_an_ordinary_graph_after(stream, buf):
    """The graph cap.info() showed while capturing is the one end() returns, no longer borrowed:
    event nodes (refused only in conditional bodies) can be added to it."""
    with stream.capture() as cap:
        stream.memset(buf, 1, N)
        live = cap.info().graph
    assert cap.graph is live
    cap.graph.add_event_record(rt.Event())
    assert len(cap.graph.nodes()) == 2


@pytest.fixture
def kernel():
    from pygraphrt import sim

    sim.register_kernel("capture_refusals_k", lambda ctx, y: None, signature="float *y")
    try:
        yield rt.Program('extern "C" __global__ void capture_refusals_k(float *y) {}').kernel(
            "capture_refusals_k", signature="float *y")
    finally:
        sim.unregister_kernel("capture_refusals_k")


def test_edge_data_reaches_the_runtime(stream, buf, kernel):
    """A capture into a graph after a dependency with programmatic edge data: the captured kernel's
    edge has it; a conditional node added at that point is given it too (and the runtime refuses
    it there: programmatic edges join kernel nodes only)."""
    from pygraphrt.enums import PORT_PROGRAMMATIC, DependencyType, EdgeData

    prog = EdgeData(PORT_PROGRAMMATIC, 0, DependencyType.PROGRAMMATIC)
    g = rt.Graph()
    k1 = g.add_kernel(kernel, 1, 32, [buf])
    with stream.capture(graph=g, dependencies=[k1], edges=[prog]):
        stream.launch(kernel, 1, 32, buf)
    ((a, b, data),) = g.edges()
    assert a is k1 and b.type is k1.type and data.type is DependencyType.PROGRAMMATIC
    g2 = rt.Graph()
    k2 = g2.add_kernel(kernel, 1, 32, [buf])
    with stream.capture(graph=g2, dependencies=[k2], edges=[prog]) as cap:
        h = cap.conditional_handle()
        e = refusal(lambda: cap.add_if(h), errors.InvalidValue)
        assert e.api == "cudaGraphAddNode" and "programmatic" in e.detail
    assert g2.nodes() == [k2]


def graph_handle_is_live(backend, handle) -> bool:
    """Whether the runtime still knows graph ``handle`` (GraphGetNodes accepts it)."""
    n = backend.ffi.new("size_t *")
    return backend.ops.fn("GraphGetNodes")(handle, backend.ffi.NULL, n) == 0


def test_abort_destroys_the_graph_the_capture_made(sim_backend, stream, buf):
    cap = stream.begin_capture()
    stream.memset(buf, 1, N)
    handle = cap.info().graph.handle
    assert graph_handle_is_live(sim_backend, handle)
    cap.abort()
    assert not graph_handle_is_live(sim_backend, handle), "the aborted capture's graph was leaked"


def test_a_failed_end_that_returns_a_graph_destroys_it(sim_backend, stream, buf, monkeypatch):
    """An end that fails yet hands back a graph (modelled: the real end, then an error code) --
    the graph is destroyed, not leaked, and the error raised."""
    ops = sim_backend.ops
    real_end = ops.fn("StreamEndCapture")
    unjoined = int(sim_backend.lib.cudaErrorStreamCaptureUnjoined)
    made = []

    def end_then_fail(handle, out):
        assert real_end(handle, out) == 0
        made.append(out[0])
        return unjoined

    cap = stream.begin_capture()
    stream.memset(buf, 1, N)
    monkeypatch.setitem(ops._fns, "StreamEndCapture", end_then_fail)
    e = refusal(cap.end, errors.StreamCaptureUnjoined)
    monkeypatch.setitem(ops._fns, "StreamEndCapture", real_end)
    assert e.api == "cudaStreamEndCapture" and cap.graph is None
    assert made and not graph_handle_is_live(sim_backend, made[0]), "the failed end's graph was leaked"
