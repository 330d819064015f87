"""The CUDA 13.1-13.3 graph APIs on a GPU, on every runtime scripts/gpu-test runs.

Where the runtime *and* the driver have an API (``rt.capabilities()``), it is used and
checked against what it should report; where not, pygraphrt must refuse it before
anything reaches the runtime, naming the function, the version it needs and the
version loaded (runtime 13.0 under the 13.5-generated binding; a 13.5 runtime on an
older driver; CUDA 12.9, whose binding has none of them).

``test_raw_calls_behind_the_gate`` calls the runtime's entry points directly, below
pygraphrt's gate, and writes what they really return to
``$PYGRAPHRT_GPU_REPORT_DIR/cuda13x-<runtime>-driver<driver>.txt`` (and prints it): on a
13.5 runtime with a 13.0 driver it says whether refusing at load matches the runtime
(a call the gate refuses must not succeed there).
"""

from __future__ import annotations

import os
from typing import Any, Callable

import pytest

import pygraphrt as rt
from pygraphrt import errors, lowlevel
from pygraphrt.enums import NodeType, UpdateResult
from pygraphrt.graph import RecaptureStatus
from pygraphrt.graph._readback import generic_params, typed_params

pytestmark = pytest.mark.gpu

N = 4096
# capability -> (the runtime functions it stands for, the release that added them)
FEATURES = {
    "graph_ids": (("cudaGraphGetId", "cudaGraphExecGetId", "cudaGraphNodeGetLocalId",
                   "cudaGraphNodeGetToolsId"), "13.1"),
    "containing_graph": (("cudaGraphNodeGetContainingGraph",), "13.1"),
    "node_get_params": (("cudaGraphNodeGetParams",), "13.2"),
    "host_func_spin_wait": (("cudaLaunchHostFunc_v2",), "13.2"),
    "recapture_to_graph": (("cudaStreamBeginRecaptureToGraph",), "13.3"),
}


def _versions() -> tuple[str, str]:
    info = rt.backend()
    v = lambda x: f"{x // 1000}.{x % 1000 // 10}" if x else "none"  # noqa: E731
    return v(info.runtime_version), v(info.driver_version)


def assert_refused(exc: errors.NotSupported, api: str, since: str) -> None:
    """The refusal names the API, the version it needs and the version loaded."""
    runtime, driver = _versions()
    assert exc.api == api, (exc.api, api)
    if rt.backend().binding == "cuda13":
        if tuple(map(int, runtime.split("."))) < tuple(map(int, since.split("."))):
            assert f"{api} needs CUDA runtime {since} or newer; the loaded runtime is {runtime}" in exc.detail, \
                exc.detail
        else:
            assert (f"{api} needs a CUDA driver of {since} or newer; the driver supports {driver} "
                    f"(runtime {runtime}, binding cuda13)") == exc.detail, exc.detail
    else:  # cuda12: the binding does not have it at all
        assert f"{api} is not exported by this runtime (CUDA {runtime}, binding cuda12)" == exc.detail, exc.detail


def refused(call: Callable[[], Any], api: str, since: str) -> None:
    with pytest.raises(errors.NotSupported) as ei:
        call()
    assert_refused(ei.value, api, since)


@pytest.fixture
def bufs():
    out = [rt.malloc(N) for _ in range(2)]
    yield out
    for b in out:
        b.close()


def test_capabilities_follow_runtime_and_driver():
    caps = rt.capabilities()
    ops = lowlevel.backend_object().ops
    for name, (apis, since) in FEATURES.items():
        usable = all(ops.has(a) for a in apis)
        assert getattr(caps, name) == usable, name
        for api in apis:
            if not ops.has(api) and rt.backend().binding == "cuda13":
                assert api in lowlevel.unavailable() and "needs" in lowlevel.unavailable()[api]
    info = rt.backend()
    if info.binding == "cuda13" and info.runtime_version >= 13030 and info.driver_version >= 13030:
        assert all(getattr(caps, name) for name in FEATURES)


def test_ids_and_containing_graph(stream):
    g, sub = rt.Graph(), rt.Graph()
    a = g.add_empty()
    b = a.empty()
    sub.add_empty()
    c = b.child_graph(sub)
    caps = rt.capabilities()
    if not caps.graph_ids:
        refused(lambda: g.id, "cudaGraphGetId", "13.1")
        refused(lambda: a.local_id, "cudaGraphNodeGetLocalId", "13.1")
        refused(lambda: a.tools_id, "cudaGraphNodeGetToolsId", "13.1")
        refused(lambda: g.instantiate().id, "cudaGraphExecGetId", "13.1")
    else:
        # an id names its graph: distinct graphs (one made after the others, a clone) have
        # distinct ids, and each read of one graph's id returns the same value
        later, copy = rt.Graph(), g.clone()
        graph_ids = [g.id, sub.id, later.id, copy.id]
        assert all(isinstance(i, int) for i in graph_ids) and len(set(graph_ids)) == 4, graph_ids
        assert [x.id for x in (g, sub, later, copy)] == graph_ids
        ids = [n.local_id for n in (a, b, c)]
        assert len(set(ids)) == 3
        tools = [n.tools_id for n in (a, b, c)]
        assert len(set(tools)) == 3 and all(isinstance(t, int) for t in tools)
        e1, e2 = g.instantiate(), g.instantiate()
        assert isinstance(e1.id, int) and e1.id != e2.id
        dot = g.debug_dot()
        assert str(g.id) in dot  # the ids debug_dot prints (per the header's documentation)
    if not caps.containing_graph:
        refused(lambda: a.containing_graph, "cudaGraphNodeGetContainingGraph", "13.1")
    else:
        assert a.containing_graph is g and c.containing_graph is g
        child = c.child  # the child node's own copy of ``sub``
        inner = child.nodes()[0]
        assert inner.containing_graph is child and child.handle != sub.handle


def _graph_of_every_readable_type(bufs: list[Any]) -> tuple[rt.Graph, list[Any]]:
    a, b = bufs
    g = rt.Graph()
    ev = rt.Event()
    sub = rt.Graph()
    sub.add_memset(a, 3, 16)
    alloc = g.add_mem_alloc(1 << 20)
    nodes = [alloc,
             alloc.memset(a, 1, N, element_size=1),
             g.add_memcpy(b, a, N),
             g.add_host(lambda: None),
             g.add_child_graph(sub),
             g.add_event_record(ev),
             g.add_event_wait(ev),
             g.add_empty()]
    nodes.append(nodes[1].mem_free(alloc))
    return g, nodes


def test_generic_params_readback_matches_the_typed_getters(bufs):
    g, nodes = _graph_of_every_readable_type(bufs)
    caps = rt.capabilities()
    for node in nodes:
        typed = typed_params(node)
        generic = generic_params(node)
        if not caps.node_get_params:
            assert generic is None and node.params == typed
            continue
        assert generic is not None, node
        if node.type is NodeType.HOST:
            assert generic == {**typed, "spin_wait": False}
        else:
            assert generic == typed, (node.type, generic, typed)
        assert node.params == generic
    if not caps.node_get_params:
        refused(lambda: lowlevel.backend_object().ops.fn("GraphNodeGetParams"), "cudaGraphNodeGetParams", "13.2")


def test_spin_wait_host_functions(stream):
    calls: list[str] = []
    caps = rt.capabilities()
    if not caps.host_func_spin_wait:
        refused(lambda: stream.launch_host_func(lambda: calls.append("s"), spin_wait=True),
                "cudaLaunchHostFunc_v2", "13.2")
        with pytest.raises(errors.NotSupported, match="spin_wait host nodes: cudaLaunchHostFunc_v2"):
            rt.Graph().add_node(NodeType.HOST, fn=lambda: None, spin_wait=True)
        stream.synchronize()
        assert calls == []
        return
    stream.launch_host_func(lambda: calls.append("stream"), spin_wait=True)
    stream.synchronize()
    with stream.capture() as cap:
        stream.launch_host_func(lambda: calls.append("captured"), spin_wait=True)
    g = rt.Graph()
    h = g.add_node(NodeType.HOST, fn=lambda: calls.append("node"), spin_wait=True)
    for graph in (cap.graph, g):
        graph.instantiate().launch(stream)
    stream.synchronize()
    assert calls == ["stream", "captured", "node"]
    if caps.node_get_params:
        assert h.params["spin_wait"] is True and cap.graph.nodes()[0].params["spin_wait"] is True


def _capture_pair(stream: Any, a: Any, b: Any, value: int) -> None:
    stream.memset(a, value, N)
    stream.memcpy(b, a, N)


def test_recapture_into_an_existing_graph(stream, bufs):
    a, b = bufs
    with stream.capture() as cap:
        _capture_pair(stream, a, b, 1)
    g = cap.graph
    before = g.nodes()
    if not rt.capabilities().recapture_to_graph:
        with pytest.raises(errors.NotSupported) as ei:
            with stream.recapture(g):
                pytest.fail("the block must not run")
        assert_refused(ei.value, "cudaStreamBeginRecaptureToGraph", "13.3")
        assert g.is_valid and g.nodes() == before and not stream.is_capturing
        return
    exe = g.instantiate()
    seen = []
    with stream.recapture(g, on_mismatch=seen.append) as rc:
        _capture_pair(stream, a, b, 2)  # the same nodes, in the same order; memset's value changed
    assert rc.graph is g and g.nodes() == before  # the same node objects (handles kept)
    memset = next(n for n in before if n.type is NodeType.MEMSET)
    assert seen == rc.mismatches and [m.node for m in rc.mismatches] == [memset]
    m = rc.mismatches[0]
    assert m.original["value"] == 1 and m.recaptured["value"] == 2 and m.original["type"] is NodeType.MEMSET
    assert m.status is RecaptureStatus.ELIGIBLE_FOR_UPDATE and rc.update_eligible
    assert exe.update(g) is UpdateResult.SUCCESS
    exe.launch(stream)
    stream.synchronize()
    assert b.to_bytes(16) == b"\x02" * 16
    # Unchanged work: nothing to report.
    with stream.recapture(g) as rc2:
        _capture_pair(stream, a, b, 2)
    assert rc2.mismatches == [] and rc2.update_eligible


def test_recapture_into_a_graph_add_nodes_built(stream, bufs):
    """Recapture into a graph made by add_nodes: the NodeList's entries follow what the runtime
    kept (Graph._keep_only): each entry is valid exactly when it is one of the graph's nodes
    afterwards, one read before the recapture stays the same object, and the graph runs the
    recaptured work."""
    if not rt.capabilities().recapture_to_graph:
        pytest.skip("needs cudaStreamBeginRecaptureToGraph (refusal checked in test_recapture_into_an_existing_graph)")
    a, b = bufs
    g = rt.Graph()
    made = g.add_nodes([("memset", {"dst": a, "value": 1, "count": N}),
                        ("memcpy", {"dst": b, "src": a, "count": N}, [0])])
    copy = made[1]  # read before; made[0] is still a handle
    seen: list = []
    with stream.recapture(g, on_mismatch=seen.append):
        _capture_pair(stream, a, b, 2)
    live = g.nodes()
    assert [x.is_valid for x in made] == [any(x is y for y in live) for x in made]
    assert made[1] is copy and len(live) == 2
    exe = g.instantiate()
    exe.launch(stream)
    stream.synchronize()
    assert b.to_bytes(16) == b"\x02" * 16
    exe.close()
    g.close()


def test_failed_recapture_closes_the_graph(stream, bufs):
    if not rt.capabilities().recapture_to_graph:
        pytest.skip("needs cudaStreamBeginRecaptureToGraph (refusal checked in test_recapture_into_an_existing_graph)")
    a, b = bufs

    def fresh() -> rt.Graph:
        with stream.capture() as cap:
            _capture_pair(stream, a, b, 1)
        return cap.graph

    g = fresh()  # a topology mismatch: one node fewer
    with pytest.raises(errors.GraphRTError):
        with stream.recapture(g):
            stream.memset(a, 1, N)
    assert not g.is_valid and not stream.is_capturing
    g = fresh()  # the callback says no
    with pytest.raises(errors.GraphRTError):
        with stream.recapture(g, on_mismatch=lambda m: False):
            _capture_pair(stream, a, b, 5)
    assert not g.is_valid and not stream.is_capturing
    g = fresh()  # the callback raises: chained to the error that follows
    with pytest.raises(errors.GraphRTError) as ei:
        with stream.recapture(g, on_mismatch=lambda m: 1 / 0):
            _capture_pair(stream, a, b, 6)
    assert isinstance(ei.value.__cause__, ZeroDivisionError)
    assert not g.is_valid and not stream.is_capturing
    g = fresh()  # an exception in the block: the graph is undefined, so closed
    with pytest.raises(KeyError):
        with stream.recapture(g):
            raise KeyError("inside")
    assert not g.is_valid and not stream.is_capturing


def test_raw_calls_behind_the_gate(stream, bufs):
    """Call each 13.1-13.3 graph entry point directly (below pygraphrt's gate) and report what the
    runtime returns; where pygraphrt refuses one that the runtime exports, the runtime must fail too."""
    b = lowlevel.backend_object()
    if b.binding != "cuda13":
        pytest.skip("the CUDA 12 binding declares none of these functions")
    ffi, lib, ops = b.ffi, b.lib, b.ops
    g = rt.Graph()
    node = g.add_memset(bufs[0], 1, N)
    exe = g.instantiate()
    from pygraphrt._handles import ErrorSink, HostPayload, trampoline

    payload = HostPayload(b, lambda: None, ErrorSink())
    probes: dict[str, Callable[[Any], int]] = {
        "cudaGraphGetId": lambda f: f(g.handle, ffi.new("unsigned int *")),
        "cudaGraphExecGetId": lambda f: f(exe.handle, ffi.new("unsigned int *")),
        "cudaGraphNodeGetLocalId": lambda f: f(node.handle, ffi.new("unsigned int *")),
        "cudaGraphNodeGetToolsId": lambda f: f(node.handle, ffi.new("unsigned long long *")),
        "cudaGraphNodeGetContainingGraph": lambda f: f(node.handle, ffi.new("cudaGraph_t *")),
        "cudaGraphNodeGetParams": lambda f: f(node.handle, ffi.new("struct cudaGraphNodeParams *")),
        "cudaLaunchHostFunc_v2": lambda f: f(stream.handle, trampoline(b), payload.c_handle, 0),
        "cudaStreamBeginRecaptureToGraph": lambda f: f(stream.handle, 0, g.handle, ffi.NULL),
    }
    runtime, driver = _versions()
    lines = [f"CUDA runtime {runtime} ({b.path}), driver {driver}, binding {b.binding}"]
    too_strict = []
    for api, probe in probes.items():
        try:
            f = getattr(lib, api)
        except (AttributeError, ffi.error):
            lines.append(f"{api}: not exported; pygraphrt: {ops.unavailable.get(api, 'allowed')}")
            continue
        rc = probe(f)
        name = ops.error(rc, api).name if rc else "cudaSuccess"
        if api == "cudaStreamBeginRecaptureToGraph" and rc == 0:
            out = ffi.new("cudaGraph_t *")
            lib.cudaStreamEndCapture(stream.handle, out)  # leave the stream as it was
        gate = ops.unavailable.get(api)
        lines.append(f"{api}: {name}; pygraphrt: {gate or 'allowed'}")
        if gate is not None and rc == 0:
            too_strict.append(api)
    stream.synchronize()
    report = "\n".join(lines)
    print(report)
    folder = os.environ.get("PYGRAPHRT_GPU_REPORT_DIR")
    if folder:
        with open(os.path.join(folder, f"cuda13x-runtime{runtime}-driver{driver}.txt"), "w") as fh:
            fh.write(report + "\n")
    assert not too_strict, (f"the runtime ran {too_strict} although pygraphrt refuses them at load "
                            f"(gate_by_driver is too strict for them):\n{report}")
