"""Executable graphs on the simulator (pygraphrt/graph/_exec.py): a launch the runtime refuses,
the per-node setters (what they change, what they refuse: the node's type and graph, the
argument's type, the value's range), update's refusal and its fields, and host callables'
errors reaching the stream and the executable graph.

Written from the mutation check's survivors (scripts/mutation, issue 38 item 11).
"""

from __future__ import annotations

import pytest

import pygraphrt as rt
from pygraphrt import errors
from pygraphrt.enums import UpdateResult

from .backends import selected

N = 64


@pytest.fixture(scope="module", autouse=True)
def sim_backend():
    with selected("sim") as backend:
        yield backend


@pytest.fixture
def stream():
    s = rt.Stream()
    yield s
    s.close()


@pytest.fixture
def bufs():
    out = [rt.malloc(N) for _ in range(3)]
    for b in out:
        b.copy_from(bytes(N))
    yield out
    for b in out:
        b.close()


def refusal(call, cls):
    """The exception ``call()`` raises, checked to be exactly ``cls`` (not a subclass or a parent)."""
    with pytest.raises(errors.GraphRTError) as info:
        call()
    assert type(info.value) is cls, f"expected {cls.__name__}, got {type(info.value).__name__}: {info.value}"
    return info.value


def run(exe, stream):
    exe.launch(stream)
    stream.synchronize()


# -- launch --------------------------------------------------------------------------------------

def test_a_launch_the_runtime_refuses_raises_its_error(stream):
    """The runtime's refusal (the simulator's, as CUDA's: a graph allocation still allocated from
    the previous launch) is raised with the runtime's call and code, and the launch after it
    (once freed) works."""
    g = rt.Graph()
    alloc = g.add_mem_alloc(N)
    exe = g.instantiate()
    exe.launch(stream)
    stream.synchronize()
    e = refusal(lambda: exe.launch(stream), errors.InvalidValue)
    assert (e.api, e.name, e.code) == ("cudaGraphLaunch", "cudaErrorInvalidValue", 1)
    assert "is still allocated" in e.message + e.detail or "still allocated" in str(e)
    stream.free_async(alloc.dptr)
    stream.synchronize()
    run(exe, stream)


def test_a_refused_launch_of_a_graph_with_host_nodes(stream):
    """The refusal is raised as it is (the host callables held for the launch are let go)."""
    calls = []
    g = rt.Graph()
    alloc = g.add_mem_alloc(N)
    g.add_host(lambda: calls.append(1), dependencies=[alloc])
    exe = g.instantiate()
    run(exe, stream)
    e = refusal(lambda: exe.launch(stream), errors.InvalidValue)
    assert e.api == "cudaGraphLaunch" and calls == [1]
    stream.free_async(alloc.dptr)
    run(exe, stream)
    assert calls == [1, 1]


def test_a_launch_into_a_capture_is_refused_by_the_runtime(stream, bufs):
    g = rt.Graph()
    g.add_memset(bufs[0], 7, N)
    exe = g.instantiate()
    cap = stream.begin_capture()
    try:
        e = refusal(lambda: exe.launch(stream), errors.StreamCaptureUnsupported)
        assert (e.api, e.name) == ("cudaGraphLaunch", "cudaErrorStreamCaptureUnsupported")
    finally:
        refusal(cap.end, errors.StreamCaptureInvalidated)
    assert bufs[0].to_bytes(N) == bytes(N)  # nothing ran
    run(exe, stream)
    assert bufs[0].to_bytes(N) == b"\x07" * N


def test_launch_and_upload_name_the_call_when_closed(stream, bufs):
    g = rt.Graph()
    g.add_memset(bufs[0], 1, N)
    exe = g.instantiate()
    exe.synchronize()  # before any launch: nothing to wait for
    closed = rt.Stream()
    closed.close()
    e = refusal(lambda: exe.launch(closed), errors.InvalidResourceHandle)
    assert e.api == "GraphExec.launch"
    e = refusal(lambda: exe.upload(closed), errors.InvalidResourceHandle)
    assert e.api == "GraphExec.upload"
    for call, api in ((lambda: exe.launch(bufs[0]), "GraphExec.launch"),
                      (lambda: exe.upload(bufs[0]), "GraphExec.upload")):
        e = refusal(call, errors.InvalidValue)
        assert (e.api, e.detail) == (api, f"{bufs[0]!r} is not a Stream")
    exe.close()
    for call, api in ((lambda: exe.launch(stream), "GraphExec.launch"),
                      (lambda: exe.upload(stream), "GraphExec.upload")):
        assert refusal(call, errors.InvalidResourceHandle).api == api


# -- host callables' errors ----------------------------------------------------------------------

def raise_value_error():
    raise ValueError("from the host node")


def test_a_host_nodes_error_reaches_the_launching_stream_and_the_exec(stream):
    g = rt.Graph()
    g.add_host(raise_value_error)
    exe = g.instantiate()
    exe.launch(stream)
    e = refusal(stream.synchronize, errors.HostCallbackError)
    assert e.api == "Stream.synchronize" and isinstance(e.__cause__, ValueError)
    exe.launch(stream)
    # GraphExec.synchronize waits for the stream it was launched on last, which reports it
    e = refusal(exe.synchronize, errors.HostCallbackError)
    assert e.api == "Stream.synchronize" and str(e.__cause__) == "from the host node"
    stream.synchronize()  # (reported once)


def test_set_host_and_set_node_params_route_the_new_callables_errors(stream):
    calls = []
    g = rt.Graph()
    node = g.add_host(lambda: calls.append("old"))
    exe = g.instantiate()
    run(exe, stream)
    exe.set_host(node, raise_value_error)
    exe.launch(stream)
    assert isinstance(refusal(stream.synchronize, errors.HostCallbackError).__cause__, ValueError)
    exe.set_node_params(node, fn=lambda: calls.append("new"))
    run(exe, stream)
    exe.set_node_params(node, fn=raise_value_error)
    exe.launch(stream)
    assert isinstance(refusal(stream.synchronize, errors.HostCallbackError).__cause__, ValueError)
    assert calls == ["old", "new"]


def test_set_child_graph_routes_the_new_childs_host_errors(stream):
    g = rt.Graph()
    node = g.add_child_graph(rt.Graph())
    exe = g.instantiate()
    child = rt.Graph()
    child.add_host(raise_value_error)
    old_child = rt.Graph()
    old_child.add_host(print)  # (the same topology: one host node)
    e = refusal(lambda: exe.set_child_graph(node, object()), errors.InvalidValue)
    assert e.api == "set_child_graph" and e.detail.endswith("is not a Graph")
    g2 = rt.Graph()
    node2 = g2.add_child_graph(old_child)
    exe2 = g2.instantiate()
    exe2.set_child_graph(node2, child)
    exe2.launch(stream)
    assert isinstance(refusal(stream.synchronize, errors.HostCallbackError).__cause__, ValueError)


def test_host_callables_found_only_in_nested_graphs_route_their_errors(stream):
    """A graph whose only host nodes are in a child graph and a conditional body (its keep list
    holds theirs, nested): the executable finds both callables, so their errors reach the stream."""
    child = rt.Graph()
    child.add_host(raise_value_error)
    g = rt.Graph()
    g.add_child_graph(child)
    exe = g.instantiate()
    exe.launch(stream)
    assert isinstance(refusal(stream.synchronize, errors.HostCallbackError).__cause__, ValueError)
    g2 = rt.Graph()
    g2.add_if(g2.conditional_handle(default=1)).bodies[0].add_host(raise_value_error)
    exe2 = g2.instantiate()
    exe2.launch(stream)
    assert isinstance(refusal(stream.synchronize, errors.HostCallbackError).__cause__, ValueError)


# -- per-node setters ----------------------------------------------------------------------------

def test_set_memset_changes_only_what_is_given(stream, bufs):
    a, b, _ = bufs
    g = rt.Graph()
    m = g.add_memset(a, 1, N)
    exe = g.instantiate()
    exe.set_memset(m, dst=b)  # the value and count stay
    run(exe, stream)
    assert a.to_bytes(N) == bytes(N) and b.to_bytes(N) == b"\x01" * N
    b.copy_from(bytes(N))
    exe.set_memset(m, dst=b, value=2, count=8)
    run(exe, stream)
    assert a.to_bytes(N) == bytes(N) and b.to_bytes(N) == b"\x02" * 8 + bytes(N - 8)
    # what is not given stays as the executable graph has it: b, 8 bytes -- not the source
    # graph's node, which is unchanged
    b.copy_from(bytes(N))
    exe.set_memset(m, value=3)
    run(exe, stream)
    assert a.to_bytes(N) == bytes(N) and b.to_bytes(N) == b"\x03" * 8 + bytes(N - 8)
    assert (m.params["dst"], m.params["value"], m.params["width"]) == (int(a), 1, N)
    e = refusal(lambda: exe.set_memset(m, value=256), errors.InvalidValue)
    assert (e.api, e.detail) == ("set_memset", "value 256 does not fit 1 byte(s)")
    exe.set_memset(m, value=4)  # a refused call changed nothing the next one builds on
    run(exe, stream)
    assert a.to_bytes(N) == bytes(N) and b.to_bytes(N) == b"\x04" * 8 + bytes(N - 8)
    # update() from a graph puts that graph's parameters in: the source graph's node fills in again
    g2 = rt.Graph()
    g2.add_memset(a, 5, N)
    exe.update(g2)
    exe.set_memset(m, count=4)
    run(exe, stream)
    assert a.to_bytes(N) == b"\x01" * 4 + bytes(N - 4)


def test_set_memset_keeps_a_two_dimensional_nodes_pitch(stream, bufs):
    a = bufs[0]
    g = rt.Graph()
    m = g.add_memset(a, 1, 4, height=4, pitch=16)  # 4 rows of 4 bytes, 16 apart
    exe = g.instantiate()
    exe.set_memset(m, value=9)
    run(exe, stream)
    assert a.to_bytes(N) == (b"\x09" * 4 + bytes(12)) * 4


def test_setters_refuse_a_node_of_another_type_or_graph(bufs):
    g = rt.Graph()
    ev = rt.Event()
    memset = g.add_memset(bufs[0], 1, N)
    empty = g.add_empty()
    exe = g.instantiate()
    other = rt.Graph().add_memset(bufs[0], 1, N)
    calls = {
        "MemsetNode": lambda n: exe.set_memset(n, value=2),
        "MemcpyNode": lambda n: exe.set_memcpy(n, bufs[1], bufs[0], N),
        "HostNode": lambda n: exe.set_host(n, print),
        "ChildGraphNode": lambda n: exe.set_child_graph(n, rt.Graph()),
        "KernelNode": lambda n: exe.set_kernel_launch_dims(n, grid=1),
    }
    for cls, call in calls.items():
        node = empty if cls == "MemsetNode" else memset
        e = refusal(lambda: call(node), errors.InvalidValue)
        assert (e.api, e.detail) == ("GraphExec node", f"expected a {cls}"), cls
    e = refusal(lambda: exe.set_kernel_params(memset, grid=1), errors.InvalidValue)
    assert (e.api, e.detail) == ("GraphExec node", "expected a KernelNode")
    for call in (lambda: exe.set_memset(other, value=2), lambda: exe.set_enabled(other, False),
                 lambda: exe.is_enabled("memset")):
        e = refusal(call, errors.InvalidValue)
        assert (e.api, e.detail) == ("GraphExec node", "the node must belong to the graph this executable "
                                                       "was made from")
    e = refusal(lambda: exe.set_event(memset, ev), errors.InvalidValue)
    assert (e.api, e.detail) == ("set_event", "expected an EventRecordNode or EventWaitNode")


def test_set_enabled_both_ways(stream, bufs):
    a = bufs[0]
    g = rt.Graph()
    m = g.add_memset(a, 5, N)
    exe = g.instantiate()
    assert exe.is_enabled(m) is True
    exe.set_enabled(m, False)
    assert exe.is_enabled(m) is False
    run(exe, stream)
    assert a.to_bytes(N) == bytes(N)
    exe.set_enabled(m, True)
    assert exe.is_enabled(m) is True
    run(exe, stream)
    assert a.to_bytes(N) == b"\x05" * N


def test_set_event_on_record_and_wait_nodes(stream):
    g = rt.Graph()
    e1, e2 = rt.Event(), rt.Event()
    rec = g.add_event_record(e1)
    wait = g.add_event_wait(e1, dependencies=[rec])
    exe = g.instantiate()
    exe.set_event(rec, e2)
    exe.set_event(wait, e2)
    e = refusal(lambda: exe.set_event(wait, "event"), errors.InvalidValue)
    assert e.api == "set_event" and e.detail.endswith("is not an Event")
    del e2  # the executable graph keeps it
    run(exe, stream)


def test_set_kernel_launch_dims_and_params_keep_what_is_not_given(stream):
    from pygraphrt import sim

    seen = []
    sim.register_kernel("exec_refusals_k", lambda ctx, y: seen.append((ctx.grid, ctx.block, ctx.shared_mem)),
                        signature="float *y")
    buf = rt.malloc(N)
    try:
        kernel = rt.Program('extern "C" __global__ void exec_refusals_k(float *y) {}').kernel(
            "exec_refusals_k", signature="float *y")
        g = rt.Graph()
        k = g.add_kernel(kernel, 2, 32, [buf], shared_mem=16)
        exe = g.instantiate()
        run(exe, stream)
        exe.set_kernel_launch_dims(k, grid=3)
        run(exe, stream)
        exe.set_kernel_launch_dims(k, block=64)
        run(exe, stream)
        exe.set_kernel_launch_dims(k, shared_mem_bytes=8)
        run(exe, stream)
        exe.set_kernel_params(k, grid=4)
        run(exe, stream)
        exe.set_kernel_params(k, block=16, shared_mem=0)
        run(exe, stream)
        exe.synchronize()
        # each call changes what it is given; the rest stays as the earlier calls set it in the
        # executable graph (the source graph's node is unchanged)
        assert seen == [((2, 1, 1), (32, 1, 1), 16), ((3, 1, 1), (32, 1, 1), 16), ((3, 1, 1), (64, 1, 1), 16),
                        ((3, 1, 1), (64, 1, 1), 8), ((4, 1, 1), (64, 1, 1), 8), ((4, 1, 1), (16, 1, 1), 0)]
    finally:
        buf.close()
        sim.unregister_kernel("exec_refusals_k")


# -- update --------------------------------------------------------------------------------------

def test_update_refused_carries_the_runtimes_code_result_and_node(sim_backend, bufs):
    g = rt.Graph()
    g.add_memset(bufs[0], 1, N)
    exe = g.instantiate()
    changed = rt.Graph()
    node = changed.add_host(print)  # another node type
    e = refusal(lambda: exe.update(changed), errors.GraphExecUpdateError)
    assert e.api == "cudaGraphExecUpdate" and e.vendor == sim_backend.ops.name
    assert (e.name, e.code) == ("cudaErrorGraphExecUpdateFailure", 910)
    assert e.message == sim_backend.ops.error(910, "x").message != ""  # the runtime's description
    assert e.result is UpdateResult.NODE_TYPE_CHANGED and e.error_node is node
    bigger = rt.Graph()
    bigger.add_memset(bufs[0], 1, N)
    bigger.add_memset(bufs[1], 1, N)
    e = refusal(lambda: exe.update(bigger), errors.GraphExecUpdateError)
    assert e.result is UpdateResult.TOPOLOGY_CHANGED and e.name == "cudaErrorGraphExecUpdateFailure"
    assert e.error_node is None  # (the runtime names no node for a topology change)
    e = refusal(lambda: exe.update("graph"), errors.InvalidValue)
    assert e.api == "GraphExec.update"


# -- what the executable graph keeps alive ---------------------------------------------------------

def test_operands_given_to_the_setters_live_as_long_as_the_executable_graph(stream, bufs):
    """set_memset's dst, set_memcpy's dst and src, set_event's event: given as objects and then
    dropped by the caller, they stay alive (a freed buffer would be written by the next launch:
    on a GPU an illegal address, a sticky error)."""
    import gc
    import weakref

    a = bufs[0]
    g = rt.Graph()
    m = g.add_memset(a, 1, N)
    cp = g.add_memcpy(bufs[1], a, N, dependencies=[m])
    rec = g.add_event_record(rt.Event(), dependencies=[cp])
    exe = g.instantiate()
    new_dst, copy_dst, copy_src, event = rt.malloc(N), rt.malloc(N), rt.malloc(N), rt.Event()
    copy_src.copy_from(b"\x05" * N)
    refs = [weakref.ref(o) for o in (new_dst, copy_dst, copy_src, event)]
    exe.set_memset(m, dst=new_dst)
    exe.set_memcpy(cp, copy_dst, copy_src, N)
    exe.set_event(rec, event)
    del new_dst, copy_dst, copy_src, event
    gc.collect()
    assert all(r() is not None for r in refs), "the executable graph let an operand go"
    run(exe, stream)
    exe.synchronize()  # (the setters leave its error sinks usable)
    assert refs[0]().to_bytes(N) == b"\x01" * N and refs[1]().to_bytes(N) == b"\x05" * N


def test_exec_synchronize_synchronizes_the_stream_it_was_launched_on(stream, bufs):
    """GraphExec.synchronize waits for its last launch's stream: an error pending there (a host
    function the stream ran) is raised by it."""
    g = rt.Graph()
    g.add_memset(bufs[0], 1, N)
    exe = g.instantiate()
    stream.launch_host_func(raise_value_error)
    exe.launch(stream)
    e = refusal(exe.synchronize, errors.HostCallbackError)
    assert e.api == "Stream.synchronize" and isinstance(e.__cause__, ValueError)


def test_set_kernel_params_changes_the_kernel_and_keeps_the_new_arguments(stream):
    import gc
    import weakref

    from pygraphrt import sim

    ran = []
    sim.register_kernel("exec_refusals_a", lambda ctx, y: ran.append(("a", y)), signature="float *y")
    sim.register_kernel("exec_refusals_b", lambda ctx, y: ran.append(("b", y)), signature="float *y")
    try:
        program = rt.Program('extern "C" __global__ void exec_refusals_a(float *y) {}\n'
                             'extern "C" __global__ void exec_refusals_b(float *y) {}')
        ka = program.kernel("exec_refusals_a", signature="float *y")
        kb = program.kernel("exec_refusals_b", signature="float *y")
        first = rt.malloc(N)
        g = rt.Graph()
        node = g.add_kernel(ka, 1, 1, [first])
        exe = g.instantiate()
        exe.set_kernel_params(node, kernel=kb, args=[first])
        run(exe, stream)
        new = rt.malloc(N)
        address, ref = int(new), weakref.ref(new)
        exe.set_kernel_params(node, args=[new])
        del new
        gc.collect()
        assert ref() is not None, "the executable graph let the new argument's buffer go"
        run(exe, stream)
        exe.synchronize()
        # the kernel stays kb (set before, not given now): what is not given stays as it is
        assert [(name, int(y)) for name, y in ran] == [("b", int(first)), ("b", address)]
        first.close()
    finally:
        sim.unregister_kernel("exec_refusals_a")
        sim.unregister_kernel("exec_refusals_b")


def test_update_keeps_the_new_graphs_operands_and_routes_its_host_errors(stream):
    import gc
    import weakref

    calls = []
    g1 = rt.Graph()
    m1 = g1.add_memset(rt.malloc(N), 1, N)
    g1.add_host(lambda: calls.append(1), dependencies=[m1])
    exe = g1.instantiate()
    run(exe, stream)
    g2 = rt.Graph()
    target = rt.malloc(N)
    ref = weakref.ref(target)
    m2 = g2.add_memset(target, 2, N)
    g2.add_host(raise_value_error, dependencies=[m2])
    assert exe.update(g2) is UpdateResult.SUCCESS
    del g2, m2, target
    gc.collect()
    assert ref() is not None, "the executable graph let the updated graph's operand go"
    exe.launch(stream)
    e = refusal(stream.synchronize, errors.HostCallbackError)  # the new host callable's error
    assert isinstance(e.__cause__, ValueError)
    exe.synchronize()
    assert ref().to_bytes(N) == b"\x02" * N and calls == [1]
