"""Graph API conformance on a real GPU (run by scripts/gpu-test on each CUDA runtime)."""

from __future__ import annotations

import threading

import pytest

import pygraphrt as rt
from pygraphrt import errors
from pygraphrt.enums import (CaptureStatus, DependencyType, EdgeData, GraphMemAttr,
                             InstantiateFlags, NodeType, UpdateResult)

pytestmark = pytest.mark.gpu

N = 4096


@pytest.fixture
def bufs():
    out = [rt.malloc(N) for _ in range(4)]
    yield out
    for b in out:
        b.close()


def test_backend_reports_binding_matching_runtime():
    import os

    info = rt.backend()
    expected = os.environ.get("PYGRAPHRT_EXPECT_BINDING")
    if expected:  # scripts/gpu-test says which runtime each run must be on
        assert info.binding == expected, (info.binding, info.library_path)
    assert info.vendor == "cuda" and info.device_count >= 1
    major = info.runtime_version // 1000
    assert info.binding == f"cuda{major}"
    runtime = os.environ.get("PYGRAPHRT_EXPECT_RUNTIME")
    if runtime:  # e.g. 13.5: the runtime wheel scripts/gpu-test loads, not the machine's
        assert info.runtime_version_str == runtime, (info.runtime_version_str, info.library_path)
    # Minor-version compatibility: a 13.x runtime runs on any 13.x driver (a 13.5 runtime on 13.0).
    assert info.driver_version and info.driver_version // 1000 >= major
    d = rt.Device(0).info()
    assert d.total_memory > 1 << 30 and d.arch.startswith("sm_")


def test_raw_layer_null_graph_raises_invalid_value():
    from pygraphrt import lowlevel

    out = lowlevel.ffi.new("cudaGraphNode_t *")
    rc = lowlevel.lib.cudaGraphAddEmptyNode(out, lowlevel.ffi.NULL, lowlevel.ffi.NULL, 0)
    with pytest.raises(errors.InvalidValue) as ei:
        lowlevel.check(rc, "cudaGraphAddEmptyNode")
    assert ei.value.api == "cudaGraphAddEmptyNode"
    assert ei.value.name == "cudaErrorInvalidValue" and ei.value.vendor == "cuda"
    g = rt.Graph()
    assert lowlevel.int_to_handle(lowlevel.handle_to_int(g.handle), "cudaGraph_t") == g.handle
    g.close()


def _seed_capture(stream, bufs):
    a, b, c, d = bufs
    s2 = rt.Stream()
    fork, join = rt.Event(), rt.Event()
    with stream.capture() as cap:
        stream.memset(a, 1, N)                      # A
        stream.record(fork)
        s2.wait(fork)                                # fork to the second stream
        stream.memcpy(b, a, N)                       # B on stream 1
        s2.memset(c, 3, N)                           # C on stream 2
        info = cap.info()
        s2.record(join)
        stream.wait(join)                            # join
        stream.memcpy(d, c, N)                       # D
    s2.close()
    return cap.graph, info


def test_seed_workflow_capture_gives_the_diamond(stream, bufs):
    graph, info = _seed_capture(stream, bufs)
    assert info.status is CaptureStatus.ACTIVE and info.id != 0
    assert [n.type for n, _ in info.dependencies] == [NodeType.MEMCPY]  # B is stream 1's tip
    nodes = graph.nodes()
    assert sorted(n.type.value for n in nodes) == ["memcpy", "memcpy", "memset", "memset"]
    edges = graph.edges()
    assert len(edges) == 4
    roots = graph.root_nodes()
    assert len(roots) == 1 and roots[0].type is NodeType.MEMSET
    leaves = graph.leaf_nodes()
    assert len(leaves) == 1 and leaves[0].type is NodeType.MEMCPY
    a = roots[0]
    assert {n.type for n, _ in a.dependents} == {NodeType.MEMCPY, NodeType.MEMSET}
    assert {x for x, _ in leaves[0].dependencies} == {n for n, _ in a.dependents}

    explicit = rt.Graph()
    A = explicit.add_memset(bufs[0], 1, N)
    B = A.memcpy(bufs[1], bufs[0], N)
    C = A.memset(bufs[2], 3, N)
    explicit.add_memcpy(bufs[3], bufs[2], N, dependencies=[B, C])
    assert graph.same_structure(explicit)
    assert not graph.same_structure(rt.Graph())

    exe = graph.instantiate()
    exe.launch(stream)
    stream.synchronize()
    assert bufs[1].to_bytes() == b"\x01" * N and bufs[3].to_bytes() == b"\x03" * N


def test_node_identity_and_params(stream, bufs):
    g = rt.Graph()
    m = g.add_memset(bufs[0], 9, 100)
    assert g.nodes()[0] is m and m.graph is g
    assert m.params["value"] == 9 and m.params["width"] == 100
    c = m.memcpy(bufs[1], bufs[0], 100)
    assert c.params["width"] == 100 and c.dependencies == [(m, EdgeData())]
    assert m.dependents[0][0] is c


def test_host_node_sees_predecessor_data_and_runs_each_launch(stream, bufs):
    host = bytearray(N)
    seen = []
    g = rt.Graph()
    ms = g.add_memset(bufs[0], 0x5A, N)
    cp = ms.memcpy(host, bufs[0], N)
    cp.host(lambda: seen.append(bytes(host[:4])))
    exe = g.instantiate()
    for _ in range(1000):
        exe.launch(stream)
    stream.synchronize()
    assert len(seen) == 1000 and seen[0] == b"\x5a" * 4


SPIN = r'''extern "C" __global__ void spin(long long cycles) {
    long long t0 = clock64(); while (clock64() - t0 < cycles) {} }'''


@pytest.mark.parametrize("dropped", ["stream", "graph and executable graph"])
def test_host_callables_outlive_what_launched_them(dropped):
    """A host function queued behind a long kernel still runs after its stream, or its graph and
    executable graph, were closed and collected: the runtime runs it later, and it used to find
    its payload freed (cffi aborted the process: "ffi.from_handle() detected that the address
    passed points to garbage"; found by tests/api_fuzz.py on this machine)."""
    import gc

    from pygraphrt import _handles

    spin = rt.Program(SPIN).kernel("spin", signature="long long cycles")
    ran = []
    lost = _handles.lost_runs[0]
    if dropped == "stream":
        s = rt.Stream()
        s.launch(spin, 1, 1, 200_000_000)  # some 0.1 s
        s.launch_host_func(lambda: ran.append(dropped))
        s.close()
        del s
    else:
        s = rt.Stream()
        g = rt.Graph()
        k = g.add_kernel(spin, 1, 1, [200_000_000])
        g.add_host(lambda: ran.append(dropped), dependencies=[k])
        exe = g.instantiate()
        exe.launch(s)
        exe.close()
        g.close()
        del exe, g
    gc.collect()
    junk = [bytearray(64) for _ in range(10000)]  # (reuses what was freed)
    rt.current_device().synchronize()
    del junk
    assert ran == [dropped] and _handles.lost_runs[0] == lost
    if dropped != "stream":
        s.close()


def test_host_callable_error_raised_at_synchronize(stream):
    g = rt.Graph()
    g.add_host(lambda: 1 / 0)
    exe = g.instantiate()
    exe.launch(stream)
    with pytest.raises(errors.HostCallbackError) as ei:
        stream.synchronize()
    assert isinstance(ei.value.__cause__, ZeroDivisionError)
    stream.synchronize()  # reported once


def test_captured_host_function_becomes_host_node(stream):
    calls = []
    with stream.capture() as cap:
        stream.launch_host_func(lambda: calls.append(1))
    assert [n.type for n in cap.graph.nodes()] == [NodeType.HOST]
    exe = cap.graph.instantiate()
    exe.launch(stream)
    exe.launch(stream)
    exe.synchronize()
    assert calls == [1, 1]


def test_default_edge_data_roundtrip():
    g = rt.Graph()
    a = g.add_empty()
    b = g.add_empty()
    g.add_dependencies([a], [b], [EdgeData()])
    assert g.edges() == [(a, b, EdgeData())]
    assert b.dependencies == [(a, EdgeData())]
    # Non-default edge data is only valid between kernel nodes: the runtime says so.
    with pytest.raises(errors.InvalidValue):
        g.add_dependencies([b], [g.add_empty()], [EdgeData(1, 0, DependencyType.PROGRAMMATIC)])


def _floats(buf, n):
    import struct

    return struct.unpack(f"{n}f", buf.to_bytes(4 * n))


def _two_kernels():
    """Two independent kernel nodes: x += 1 (256 floats, grid 2), y += 2 (384 floats, grid 3)."""
    from .kernels import add_kernel

    k = add_kernel()
    x, y = rt.malloc(1024), rt.malloc(1536)
    x.copy_from(bytes(1024)), y.copy_from(bytes(1536))
    a, b = rt.Stream(), rt.Stream()
    fork, join = rt.Event(), rt.Event()
    with a.capture() as cap:
        a.record(fork)
        b.wait(fork)
        k.launch(a, x.ptr, 1.0, 256)
        k.launch(b, y.ptr, 2.0, 384)
        b.record(join)
        a.wait(join)
    kernels = [n for n in cap.graph.nodes() if n.type is NodeType.KERNEL]
    assert len(kernels) == 2 and cap.graph.edges() == []
    # nodes() lists nodes in creation order: x's kernel first.
    return cap.graph, kernels, a, x, y


def test_programmatic_edge_data_between_kernel_nodes():
    if not rt.capabilities().edge_data:
        pytest.skip("runtime without edge data")  # never on CUDA >= 12.3
    g, (k1, k2), s, x, y = _two_kernels()
    prog = EdgeData(from_port=rt.enums.PORT_PROGRAMMATIC, to_port=0, type=DependencyType.PROGRAMMATIC)
    g.add_dependencies([k1], [k2], [prog])
    assert g.edges() == [(k1, k2, prog)]
    assert k2.dependencies == [(k1, prog)] and k1.dependents == [(k2, prog)]
    js = __import__("json").loads(g.to_json())
    assert js["edges"] == [{"from": js["edges"][0]["from"], "to": js["edges"][0]["to"],
                            "from_port": 1, "to_port": 0, "type": 1}]
    exe = g.instantiate()
    exe.launch(s)
    s.synchronize()
    assert sum(_floats(x, 256)) == 256.0 and sum(_floats(y, 384)) == 768.0
    # The raw query without room for edge data is lossy on such a graph.
    from pygraphrt import lowlevel

    if rt.backend().binding == "cuda13":
        n = lowlevel.ffi.new("size_t *")
        rc = lowlevel.lib.cudaGraphGetEdges(g.handle, lowlevel.ffi.NULL, lowlevel.ffi.NULL,
                                            lowlevel.ffi.NULL, n)
        assert rc == 0 and n[0] == 1
        frm = lowlevel.ffi.new("cudaGraphNode_t[1]")
        to = lowlevel.ffi.new("cudaGraphNode_t[1]")
        rc = lowlevel.lib.cudaGraphGetEdges(g.handle, frm, to, lowlevel.ffi.NULL, n)
        with pytest.raises(errors.LossyQuery):
            lowlevel.check(rc, "cudaGraphGetEdges")


def test_library_kernel_params_and_launch_dims_through_the_driver_api():
    # NVRTC kernels loaded with cudaLibraryLoadData are not runtime host stubs:
    # pygraphrt reads and writes them through the driver API.
    g, (k1, k2), s, x, y = _two_kernels()
    p1, p2 = k1.params, k2.params
    assert p1["grid"] == rt.graph.Dim3(2, 1, 1) and p1["block"] == rt.graph.Dim3(128, 1, 1)
    assert p2["grid"] == rt.graph.Dim3(3, 1, 1) and p1["shared_mem_bytes"] == 0 and p1["func"] != 0
    exe = g.instantiate()
    exe.set_kernel_launch_dims(k1, grid=1)  # the exec only: x's first 128 elements
    exe.launch(s)
    s.synchronize()
    assert sum(_floats(x, 256)) == 128.0 and sum(_floats(y, 384)) == 768.0
    k2.set_launch_dims(grid=(1, 1, 1))     # the graph: re-instantiate to see it
    assert k2.params["grid"] == rt.graph.Dim3(1, 1, 1)
    g.instantiate().launch(s)
    s.synchronize()
    assert sum(_floats(x, 256)) == 384.0 and sum(_floats(y, 384)) == 768.0 + 256.0
    with pytest.raises(errors.InvalidValue):
        k1.set_launch_dims(block=(0,))


def test_exec_update_new_values_and_topology_change(stream, bufs):
    g1 = rt.Graph()
    g1.add_memset(bufs[0], 1, N)
    exe = g1.instantiate()
    g2 = rt.Graph()
    g2.add_memset(bufs[0], 2, N)
    assert exe.update(g2) is UpdateResult.SUCCESS
    exe.launch(stream)
    stream.synchronize()
    assert bufs[0].to_bytes(8) == b"\x02" * 8
    # Per-node setters still take the nodes of the graph it was instantiated from.
    exe.set_memset(g1.nodes()[0], value=5)
    exe.launch(stream)
    stream.synchronize()
    assert bufs[0].to_bytes(8) == b"\x05" * 8

    g3 = rt.Graph()
    x = g3.add_memset(bufs[0], 3, N)
    x.memset(bufs[1], 3, N)
    with pytest.raises(errors.GraphExecUpdateError) as ei:
        exe.update(g3)
    assert ei.value.result is UpdateResult.TOPOLOGY_CHANGED


def test_per_node_memset_update_and_enable(stream, bufs):
    g = rt.Graph()
    m = g.add_memset(bufs[0], 1, N)
    exe = g.instantiate()
    exe.set_memset(m, value=7)
    exe.launch(stream)
    stream.synchronize()
    assert bufs[0].to_bytes(4) == b"\x07" * 4
    exe.set_enabled(m, False)
    assert not exe.is_enabled(m)
    bufs[0].copy_from(b"\x00" * N)
    exe.launch(stream)
    stream.synchronize()
    assert bufs[0].to_bytes(4) == b"\x00" * 4


def test_clone_and_find_clone(bufs):
    g = rt.Graph()
    a = g.add_memset(bufs[0], 1, N)
    a.empty()
    c = g.clone()
    a2 = g.find_clone(a, c)
    assert a2.graph is c and a2.type is NodeType.MEMSET and a2.params["value"] == 1
    assert c.same_structure(g)


def test_graph_memory_nodes_attributes_and_trim(stream):
    dev = rt.Device(0)
    dev.graph_mem_trim()
    dev.reset_graph_mem_high_watermarks()
    g = rt.Graph()
    alloc = g.add_mem_alloc(64 << 20)
    assert alloc.dptr != 0 and alloc.params["bytesize"] == 64 << 20
    ms = alloc.memset(alloc.dptr, 1, 64 << 20)
    ms.mem_free(alloc)
    exe = g.instantiate()
    exe.launch(stream)
    stream.synchronize()
    attrs = dev.graph_mem_attributes()
    # The physical memory stays associated with the executable graph (for
    # its next launch) even though the free node ran: "used" until it is destroyed.
    assert attrs[GraphMemAttr.USED_MEM_CURRENT] >= 64 << 20
    assert attrs[GraphMemAttr.USED_MEM_HIGH] >= 64 << 20
    assert attrs[GraphMemAttr.RESERVED_MEM_CURRENT] >= 64 << 20
    exe.close()
    g.close()
    dev.synchronize()
    dev.graph_mem_trim()
    after = dev.graph_mem_attributes()
    assert after[GraphMemAttr.RESERVED_MEM_CURRENT] < attrs[GraphMemAttr.RESERVED_MEM_CURRENT]
    assert after[GraphMemAttr.USED_MEM_CURRENT] < attrs[GraphMemAttr.USED_MEM_CURRENT]
    dev.reset_graph_mem_high_watermarks()
    assert dev.graph_mem_attribute(GraphMemAttr.USED_MEM_HIGH) == 0


def test_instantiate_flags_and_upload(stream, bufs):
    g = rt.Graph()
    g.add_memset(bufs[0], 4, N)
    exe = g.instantiate(upload_stream=stream, auto_free_on_launch=True)
    assert InstantiateFlags.AUTO_FREE_ON_LAUNCH in exe.flags
    exe.launch(stream)
    stream.synchronize()
    assert bufs[0].to_bytes(2) == b"\x04\x04"


def test_child_graph_event_nodes_and_dot(stream, bufs):
    child = rt.Graph()
    child.add_memset(bufs[0], 6, N)
    g = rt.Graph()
    ev = rt.Event()
    node = g.add_child_graph(child)
    rec = node.event_record(ev)
    rec.event_wait(ev)
    assert node.type is NodeType.GRAPH and len(node.child.nodes()) == 1
    dot = g.debug_dot()
    assert dot.startswith("digraph") and "MEMSET" in dot.upper()
    exe = g.instantiate()
    exe.launch(stream)
    stream.synchronize()
    assert bufs[0].to_bytes(1) == b"\x06"
    nxg = g.to_networkx()
    assert nxg.number_of_nodes() == 3 and nxg.number_of_edges() == 2


def test_capture_into_existing_graph_and_update_dependencies(stream, bufs):
    g = rt.Graph()
    root = g.add_memset(bufs[0], 1, N)
    with stream.capture(graph=g, dependencies=[root]) as cap:
        stream.memset(bufs[1], 2, N)
        info = cap.info()
        assert info.graph is g
        cap.update_dependencies([root], replace=True)
        stream.memset(bufs[2], 3, N)
    assert cap.graph is g
    assert len(g.nodes()) == 3 and len(root.dependents) == 2


def test_kernel_node_from_torch_capture_params_and_launch_dims():
    # Also on the CUDA 12.9 run, where torch's kernels belong to its own CUDA 13
    # runtime: those are read through the driver API.
    torch = pytest.importorskip("torch")
    ts = torch.cuda.Stream()
    s = rt.Stream.wrap(ts)
    x = torch.zeros(1 << 16, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(ts):
        with s.capture(mode="relaxed") as cap:
            x.add_(1)
    kernels = [n for n in cap.graph.nodes() if n.type is NodeType.KERNEL]
    assert len(kernels) == 1
    k = kernels[0]
    p = k.params
    assert p["grid"].x >= 1 and p["block"].x >= 1 and p["func"] != 0
    exe = cap.graph.instantiate()
    exe.launch(s)
    s.synchronize()
    assert float(x.sum()) == float(1 << 16)
    # The same dims written back through the exec and the graph: accepted, same result.
    exe.set_kernel_launch_dims(k, grid=p["grid"], block=p["block"])
    k.set_launch_dims(grid=p["grid"], block=p["block"], shared_mem_bytes=p["shared_mem_bytes"])
    assert k.params["grid"] == p["grid"]
    exe.launch(s)
    s.synchronize()
    assert float(x.sum()) == float(2 << 16)
    with pytest.raises(errors.InvalidValue):
        k.set_launch_dims(block=(0,))


def test_capture_legacy_stream_refused():
    s = rt.Stream.legacy_default()
    with pytest.raises(errors.StreamCaptureUnsupported):
        with s.capture():
            pass


def test_begin_twice_end_when_not_capturing(stream):
    cap = stream.begin_capture()
    with pytest.raises(errors.IllegalState, match="already capturing"):
        stream.begin_capture()
    assert stream.is_capturing  # the first capture is untouched
    cap.end()
    with pytest.raises(errors.IllegalState):
        cap.end()
    assert not stream.is_capturing


def test_error_inside_capture_block_cleans_up(stream, bufs):
    with pytest.raises(ZeroDivisionError):
        with stream.capture():
            stream.memset(bufs[0], 1, N)
            1 / 0
    assert stream.capture_status is CaptureStatus.NONE


def test_invalidated_capture_names_the_failed_call(stream, bufs):
    with pytest.raises(errors.StreamCaptureInvalidated, match="Stream.StreamSynchronize") as ei:
        with stream.capture():
            stream.memset(bufs[0], 1, N)
            # Synchronizing a capturing stream is illegal and invalidates the capture.
            with pytest.raises(errors.StreamCaptureUnsupported):
                stream.synchronize()
    assert ei.value.api == "cudaStreamEndCapture"
    assert stream.capture_status is CaptureStatus.NONE


def test_runtime_error_inside_capture_block_propagates_and_cleans_up(stream, bufs):
    with pytest.raises(errors.StreamCaptureUnsupported) as ei:
        with stream.capture():
            stream.memset(bufs[0], 1, N)
            stream.synchronize()  # illegal while capturing: the runtime refuses
    assert ei.value.api == "cudaStreamSynchronize"
    assert stream.capture_status is CaptureStatus.NONE


def test_node_from_another_graph_and_duplicate_edge(bufs):
    g1, g2 = rt.Graph(), rt.Graph()
    a = g1.add_empty()
    with pytest.raises(errors.InvalidValue, match="another graph"):
        g2.add_empty(dependencies=[a])
    b = g1.add_empty(dependencies=[a])
    with pytest.raises(errors.InvalidValue):
        g1.add_dependencies([a], [b])  # duplicate edge: the runtime refuses


def test_destroyed_handles_raise(stream):
    g = rt.Graph()
    n = g.add_empty()
    exe = g.instantiate()
    exe.close()
    with pytest.raises(errors.InvalidResourceHandle):
        exe.launch(stream)
    g.close()
    with pytest.raises(errors.InvalidResourceHandle):
        n.dependents
    with pytest.raises(errors.InvalidResourceHandle):
        g.add_empty()
    g.close()  # idempotent


def test_wrong_types_raise_clearly(stream):
    g = rt.Graph()
    with pytest.raises(errors.InvalidValue):
        g.add_memset("not a pointer", 1, 4)
    with pytest.raises(errors.InvalidValue):
        g.add_memset(0, 300, 4)
    with pytest.raises(errors.InvalidValue):
        g.add_empty(dependencies=[object()])
    with pytest.raises(errors.InvalidValue):
        g.add_kernel(object(), 1, 1, [])
    with pytest.raises(errors.InvalidValue):
        g.instantiate().launch("stream")


def test_thread_capture_mode_exchange():
    prev = rt.exchange_capture_mode("relaxed")
    try:
        assert rt.exchange_capture_mode(prev) is rt.CaptureMode.RELAXED
    finally:
        pass
    result = []
    t = threading.Thread(target=lambda: result.append(rt.exchange_capture_mode("global")))
    t.start()
    t.join()
    assert result == [rt.CaptureMode.GLOBAL]


def test_bulk_nodes_run_and_are_made_when_read(stream, bufs):
    """add_nodes on the GPU: a chain of memsets (a slice of one buffer each; an address or a
    buffer), in one call.  The graph sets every byte; the NodeList's entries are the nodes the
    runtime lists (types, parameters, dependencies), the graph's one object of each, made only
    when read (on the GPU: the loops of both modes); a destroyed node reads as destroyed, also
    once the runtime made another node."""
    from pygraphrt import lowlevel
    from pygraphrt.graph import NodeList, _hot

    n, step = 64, N // 64
    specs: list = [("empty", None)]
    for i in range(n):
        specs.append(("memset", {"dst": bufs[0].ptr + i * step, "value": i + 1, "count": step}, [i]))
    specs.append(("memset", {"dst": bufs[1], "value": 0xEE, "count": N}, [0]))
    specs.append(("empty", None, [n, n + 1]))
    g = rt.Graph()
    made = g.add_nodes(specs)
    backend = lowlevel.backend_object()
    looped = not backend.ffi_mode.startswith("sim")  # the C loop (compiled) or the Python loop (ABI)
    assert looped == (_hot.bulk_adder(backend) is not None or backend.ffi_mode.startswith("abi"))
    assert isinstance(made, NodeList) and len(made) == n + 3
    assert len(g._table()) == (0 if looped else n + 3)  # no node object until read
    listed = g.nodes()
    assert sorted(map(id, listed)) == sorted(map(id, made)) and made[7] is made[7]
    assert [x.type for x in made] == [NodeType.EMPTY] + [NodeType.MEMSET] * (n + 1) + [NodeType.EMPTY]
    assert made[5].params["value"] == 5 and made[5].params["dst"] == bufs[0].ptr + 4 * step
    assert [d for d, _ in made[5].dependencies] == [made[4]]
    assert sorted(made.index(d) for d, _ in made[-1].dependencies) == [n, n + 1]
    exe = g.instantiate()
    exe.launch(stream)
    stream.synchronize()
    assert bufs[0].to_bytes(N) == b"".join(bytes([i + 1]) * step for i in range(n))
    assert bufs[1].to_bytes(N) == b"\xee" * N

    h = rt.Graph()
    m = h.add_nodes([("empty", None), ("empty", None, [0]), ("empty", None, [1])])
    leaf = h.leaf_nodes()[0]
    leaf.destroy()
    again = h.add_empty(dependencies=[m[1]])
    assert m[2] is leaf and not m[2].is_valid and again.is_valid and m[2] is not again
    more = h.add_nodes([("empty", None, [m[0], again])])
    assert sorted(id(d) for d, _ in more[0].dependencies) == sorted([id(m[0]), id(again)])
    h.instantiate().close()
    # more entries than one chunk of iteration (NodeList makes the objects 1024 at a time)
    big = rt.Graph()
    chain = big.add_nodes([("empty", None, [i - 1] if i else []) for i in range(3000)])
    objs = list(chain)
    assert len({id(x) for x in objs}) == 3000 and all(x is chain[i] for i, x in enumerate(objs))
    assert [d for d, _ in chain[2500].dependencies] == [chain[2499]]
    assert big.root_nodes() == [chain[0]] and big.leaf_nodes() == [chain[-1]]
    for x in (g, h, exe, big):
        x.close()
    assert not made[0].is_valid and not m[0].is_valid and not objs[1000].is_valid


def test_node_adds_with_host_functions_waiting_for_the_gil(stream, bufs):
    """Compiled mode's node adds make their runtime call with the GIL held (bindgen/hot_methods.c,
    "Adding nodes"; the bulk loop holds it for 1024 nodes at a time).  Meanwhile Python host
    functions -- stream host functions and a graph's host nodes, launched again and again -- wait
    for the GIL on the driver's callback thread.  Neither side may block the other for good:
    every add is made and every host function runs (a watchdog turns a hang into a failure)."""
    import faulthandler

    k = rt.Program('extern "C" __global__ void fill_u32(unsigned int *p, unsigned int v, int n) {'
                   ' int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) p[i] = v; }'
                   ).kernel("fill_u32", signature="unsigned int *p, unsigned int v, int n")
    ran: list = []
    hg = rt.Graph()
    hg.add_host(lambda: ran.append("node"), dependencies=[hg.add_empty()])
    host_exe = hg.instantiate()
    rounds, funcs, adds = 12, 100, 1500
    faulthandler.dump_traceback_later(240, exit=True)
    try:
        for r in range(rounds):
            for i in range(funcs):
                stream.launch_host_func(lambda: ran.append("func"))
                if i % 10 == 0:
                    host_exe.launch(stream)
            g = rt.Graph()
            prev = g.add_empty()
            for i in range(adds):
                prev = g.add_memset(bufs[0], r, N, dependencies=[prev])
                prev = g.add_kernel(k, 1, 32, (bufs[1], i, 8), dependencies=[prev])
                prev = g.add_empty(dependencies=[prev])
            made = g.add_nodes([("empty", None)] + [("memset", {"dst": bufs[2], "value": r, "count": 64}, [j])
                                                     for j in range(adds)])
            assert len(g.nodes()) == 1 + 3 * adds + len(made)
            g.close()
        stream.synchronize()
    finally:
        faulthandler.cancel_dump_traceback_later()
    assert (ran.count("func"), ran.count("node")) == (rounds * funcs, rounds * funcs // 10)


def test_calls_go_straight_to_the_driver_from_any_thread(stream, bufs):
    """Compiled mode calls the driver's cuGraphLaunch, cuGraphAddEmptyNode, cuStreamIsCapturing,
    cuGraphAddMemsetNode, cuGraphAddKernelNode and cuCtxGetDevice in place of the runtime's
    (pygraphrt._fast.set_direct), ABI mode the first three and the last (Vendor.direct_fn).  On a thread the runtime has never run on, each call, made
    first there, does what the runtime's would (where the driver refuses one, or finds no
    current context for a memset or a library kernel, the runtime makes it, setting its
    context current), and so does the next, which the driver makes."""
    import os

    from pygraphrt import lowlevel, multidevice
    from pygraphrt.graph import _hot

    backend = lowlevel.backend_object()
    g = rt.Graph()
    status = _hot.direct_status(backend)
    direct = os.environ.get("PYGRAPHRT_DIRECT", "1") != "0"
    if backend.ffi_mode.startswith("api") and direct:
        assert status == ("cuGraphLaunch, cuGraphAddEmptyNode, cuStreamIsCapturing, cuGraphAddMemsetNode, "
                          "cuGraphAddKernelNode, cuCtxGetCurrent, cuCtxGetDevice"), status
    elif backend.ffi_mode.startswith("abi") and direct:  # the calls whose arguments are the runtime's
        assert status == "cuGraphLaunch, cuGraphAddEmptyNode, cuStreamIsCapturing, cuCtxGetDevice", status
    else:
        assert status.startswith("off ("), status
    root = g.add_empty()
    root.memset(bufs[0], 6, N)
    exe = g.instantiate()
    k = rt.Program('extern "C" __global__ void fill_u32(unsigned int *p, unsigned int v, int n) {'
                   ' int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) p[i] = v; }'
                   ).kernel("fill_u32", signature="unsigned int *p, unsigned int v, int n")
    kg = rt.Graph()
    kg.add_kernel(k, 1, 32, (bufs[3], 1, 8))  # the kernel's first node: its signature is checked (Python)
    mg = rt.Graph()
    seen: list = []

    def on_a_new_thread(first) -> None:
        t = threading.Thread(target=lambda: _record(seen, first))
        t.start()
        t.join()

    def launch_first() -> None:
        exe.launch(stream)  # the new thread's first runtime-or-driver call
        stream.synchronize()
        seen.append(bufs[0].to_bytes(N) == b"\x06" * N)
        seen.append(len(g.add_empty(dependencies=[root]).dependencies))
        seen.append(stream.is_capturing)

    def memset_first() -> None:
        a = mg.add_memset(bufs[1], 5, N // 2)
        seen.append(len(mg.add_memset(bufs[1].ptr + N // 2, 9, N // 2, dependencies=[a]).dependencies))

    def kernel_first() -> None:
        a = kg.add_kernel(k, 1, 32, (bufs[2], 3, 8))
        seen.append(len(kg.add_kernel(k, 1, 16, (bufs[2].ptr + 32, 4, 4), dependencies=[a]).dependencies))

    def device_first() -> None:  # no context current: the driver's query refuses, the runtime answers
        seen.append(multidevice.current(backend))
        cell = backend.ffi.new("int *")
        seen.append((backend.ops.fn("GetDevice")(cell), cell[0]))  # the runtime's own answer

    for first in (launch_first, memset_first, kernel_first, device_first):
        on_a_new_thread(first)
    assert seen == [True, 1, False, 1, 1, 0, (0, 0)]
    for graph in (mg, kg):
        graph.instantiate().launch(stream)
    stream.synchronize()
    assert bufs[1].to_bytes(N) == b"\x05" * (N // 2) + b"\x09" * (N // 2)
    u32 = lambda v, n: v.to_bytes(4, "little") * n  # noqa: E731
    assert bufs[2].to_bytes(48) == u32(3, 8) + u32(4, 4)
    assert bufs[3].to_bytes(32) == u32(1, 8)  # kg's first node, made on this thread
    with stream.capture():  # (errors of these calls: the conformance suite's capture cases)
        assert stream.is_capturing
        stream.memset(bufs[1], 1, N)


def _record(seen: list, fn) -> None:
    try:
        fn()
    except BaseException as exc:  # reported by the caller's comparison
        seen.append(exc)


def test_generic_add_node_set_params_and_exec_set_node_params(stream, bufs):
    g = rt.Graph()
    e = g.add_node(NodeType.EMPTY)
    m = g.add_node(NodeType.MEMSET, dependencies=[e], edges=[EdgeData()], dst=bufs[0], value=8, count=N)
    seen = []
    h = g.add_node(NodeType.HOST, dependencies=[m], fn=lambda: seen.append(1))
    assert [n.type for n in (e, m, h)] == [NodeType.EMPTY, NodeType.MEMSET, NodeType.HOST]
    assert m.params["value"] == 8 and g.edges() == [(e, m, EdgeData()), (m, h, EdgeData())]
    m.set_params(dst=bufs[0], value=9, count=N)
    assert m.params["value"] == 9
    exe = g.instantiate()
    exe.launch(stream)
    exe.synchronize()
    assert bufs[0].to_bytes(4) == b"\x09" * 4 and seen == [1]
    exe.set_node_params(m, dst=bufs[0], value=10, count=N)
    exe.launch(stream)
    stream.synchronize()
    assert bufs[0].to_bytes(4) == b"\x0a" * 4
    if rt.capabilities().edge_data:  # edge data at creation reaches the runtime, which checks it
        with pytest.raises(errors.InvalidValue):
            g.add_node(NodeType.EMPTY, dependencies=[e],
                       edges=[EdgeData(rt.enums.PORT_PROGRAMMATIC, 0, DependencyType.PROGRAMMATIC)])
    with pytest.raises(errors.InvalidValue, match="missing"):
        g.add_node(NodeType.MEMSET, dst=bufs[0])
    with pytest.raises(errors.NotSupported):
        g.add_node(NodeType.KERNEL)


def test_generic_alloc_free_and_child_graph(stream):
    g = rt.Graph()
    a = g.add_node(NodeType.MEM_ALLOC, size=1 << 20)
    assert a.dptr != 0
    child = rt.Graph()
    child.add_memset(a.dptr, 1, 1 << 20)
    c = g.add_node(NodeType.GRAPH, dependencies=[a], child=child)
    g.add_node(NodeType.MEM_FREE, dependencies=[c], dptr=a)
    assert [n.type for n in g.nodes()] == [NodeType.MEM_ALLOC, NodeType.GRAPH, NodeType.MEM_FREE]
    exe = g.instantiate()
    exe.launch(stream)
    stream.synchronize()


def test_remove_edges_and_destroy_nodes():
    g = rt.Graph()
    a = g.add_empty()
    b = a.empty()
    c = g.add_empty()
    a.add_dependent(c)
    assert {n for n, _ in a.dependents} == {b, c}
    a.remove_dependent(c)
    assert a.dependents == [(b, EdgeData())]
    b.destroy()
    assert not b.is_valid and g.nodes() == [a, c] and g.edges() == []
    with pytest.raises(errors.InvalidResourceHandle):
        b.dependencies


def test_device_launch_and_priority_flags(stream, bufs):
    g = rt.Graph()
    g.add_memset(bufs[0], 3, N)
    exe = g.instantiate(device_launch=True, upload_stream=stream)
    assert InstantiateFlags.DEVICE_LAUNCH in exe.flags
    exe.launch(stream)  # a device graph may also be launched from the host
    stream.synchronize()
    assert bufs[0].to_bytes(1) == b"\x03"
    exe2 = g.instantiate(use_node_priority=True)
    # Observed (CUDA 12.9 and 13.0 runtimes, driver 580): the instantiation is
    # accepted, but cudaGraphExecGetFlags does not report the priority flag.
    assert InstantiateFlags.DEVICE_LAUNCH not in exe2.flags
    exe2.launch(stream)
    stream.synchronize()


def test_garbage_collected_buffer_during_capture_is_freed_after_it(stream, bufs):
    """cudaFree in a global-mode capture invalidates it: a buffer the garbage collector frees
    mid-capture must wait for the capture's end (pygraphrt defers finalizers' destroys)."""
    import gc

    class Cycle:
        pass

    gc.disable()
    try:
        c = Cycle()
        c.me, c.buf = c, rt.malloc(64 << 20)  # freed only by the collector
        del c
        with stream.capture() as cap:
            stream.memset(bufs[0], 1, N)
            gc.collect()  # the finalizer runs here: cudaFree would invalidate the capture
            stream.memset(bufs[1], 2, N)
    finally:
        gc.enable()
    assert [n.type for n in cap.graph.nodes()] == [NodeType.MEMSET, NodeType.MEMSET]
    cap.graph.instantiate().launch(stream)
    stream.synchronize()
    assert bufs[1].to_bytes(4) == b"\x02" * 4


def test_closing_a_capturing_stream_is_refused(bufs):
    """Refused until the capture ends (destroying the stream would leave it running)."""
    s = rt.Stream()
    cap = s.begin_capture()
    s.memset(bufs[0], 1, N)
    with pytest.raises(errors.IllegalState, match="capturing: end or abort the capture first"):
        s.close()
    assert s.is_valid and s.is_capturing
    graph = cap.end()
    s.close()
    assert not s.is_valid and [n.type for n in graph.nodes()] == [NodeType.MEMSET]
    rt.malloc(64).close()


def test_a_buffer_given_as_the_stream_is_refused(stream, bufs):
    """A buffer's handle is a ``void *``, which cffi passes as any pointer: ``exe.launch(buf)``
    gave the runtime a device address as the stream, and the process died (found by
    tests/api_fuzz.py on this machine).  Refused now, and the graph still launches."""
    g = rt.Graph()
    g.add_memset(bufs[0], 7, N)
    exe = g.instantiate()
    pool_buf = stream.malloc_async(64)
    for wrong in (bufs[0], pool_buf, g, exe):
        with pytest.raises(errors.InvalidValue, match="GraphExec.launch"):
            exe.launch(wrong)
        with pytest.raises(errors.InvalidValue, match="GraphExec.upload"):
            exe.upload(wrong)
    exe.launch(stream)
    pool_buf.free(stream)
    stream.synchronize()
    assert bufs[0].to_bytes(N) == bytes([7]) * N


def test_a_collection_right_after_the_capture_began_is_deferred(stream, bufs):
    """The collector may run as soon as cudaStreamBeginCapture has returned, before
    ``Capture.begin`` does: its destroys must already wait (the capture was counted only after
    the call, so such a cudaFree invalidated the new capture; found on the simulator)."""
    import gc

    from ..backends import collecting_after

    class Cycle:
        pass

    gc.disable()
    try:
        c = Cycle()
        c.me, c.buf = c, rt.malloc(64 << 20)
        del c
        with collecting_after("StreamBeginCapture"):
            with stream.capture() as cap:
                stream.memset(bufs[0], 3, N)
    finally:
        gc.enable()
    assert [n.type for n in cap.graph.nodes()] == [NodeType.MEMSET]
    cap.graph.instantiate().launch(stream)
    stream.synchronize()
    assert bufs[0].to_bytes(4) == b"\x03" * 4


def test_failed_capture_into_a_graph_leaves_the_graph_destroyed_and_safe(stream, bufs):
    """CUDA 12.9 and 13.0 destroy the target graph of a capture into an existing graph when the
    capture was invalidated (seen on an H100: every later call on it returns InvalidValue).
    pygraphrt then forgets the handle -- never destroys it again -- and says why on use."""
    g = rt.Graph()
    first = g.add_empty()
    with pytest.raises(errors.StreamCaptureInvalidated):
        with stream.capture(graph=g):
            stream.memset(bufs[0], 1, N)
            with pytest.raises(errors.StreamCaptureUnsupported):
                rt.current_device().synchronize()  # prohibited in a global capture: invalidates it
    assert not stream.is_capturing
    assert not g.is_valid and not first.is_valid
    with pytest.raises(errors.InvalidResourceHandle, match="destroyed this graph when the capture into it failed"):
        g.nodes()
    g.close()  # nothing left to destroy: no error, no second destroy
    h = rt.Graph()  # the runtime is fine: a new graph (perhaps with the old handle's value) works
    h.add_memset(bufs[0], 3, N)
    h.instantiate().launch(stream)
    stream.synchronize()
    assert bufs[0].to_bytes(2) == b"\x03\x03"


def test_a_capture_dropped_while_active_is_ended_in_the_runtime():
    """A Capture object dropped mid-capture (with its stream) ends the capture in the runtime:
    a global-mode capture left running would refuse every thread's cudaMalloc for ever."""
    import gc

    s = rt.Stream()
    buf = rt.malloc(64)
    cap = s.capture("global")
    cap.begin()
    s.memset(buf, 1, 64)
    del cap, s
    gc.collect()
    # cudaMalloc is refused (StreamCaptureUnsupported) while a global-mode capture runs
    try:
        big = rt.malloc(1 << 20)
    except errors.StreamCaptureUnsupported as e:
        pytest.fail(f"the dropped capture is still running in the runtime: {e}")
    other = rt.Stream()
    assert other.capture_status is CaptureStatus.NONE
    other.memset(big, 5, 1 << 20)
    other.synchronize()
    rt.current_device().synchronize()
    assert big.to_bytes(4) == b"\x05" * 4
    big.close()
    buf.close()


def test_stream_copy_past_the_end_of_an_allocation_is_refused(stream):
    """A D2D cudaMemcpyAsync running a few bytes past its allocation kills the process inside
    CUDA 12.9/13.0/13.5 (seen on an H100 by the differential test); pygraphrt refuses it first
    (cuMemGetAddressRange per device operand) and the stream stays usable."""
    a, b = rt.malloc(100), rt.malloc(100)
    for dst, src, n in ((a.ptr + 90, b.ptr, 16), (a.ptr, b.ptr + 4, 100)):
        with pytest.raises(errors.InvalidValue, match="past the end"):
            stream.memcpy(dst, src, n)
    stream.memset(b, 7, 100)
    stream.memcpy(a.ptr + 50, b.ptr, 50)
    stream.synchronize()
    assert a.to_bytes()[50:] == b"\x07" * 50
    a.close()
    b.close()
