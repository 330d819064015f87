"""The compute graph on a real GPU: inferred edges, data, minimal updates, single-stream launch.

Run by scripts/gpu-test on both CUDA runtimes.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pygraphrt as rt
from pygraphrt import compute, errors
from pygraphrt.compute import ComputeGraph, RebuildWarning, VarManager
from pygraphrt.enums import CaptureStatus, NodeType
from pygraphrt.graph import GraphExec

pytestmark = pytest.mark.gpu

SOURCE = r"""
extern "C" __global__ void cal_x_0(float *x_0, float base, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;  if (i < n) x_0[i] = base + i; }
extern "C" __global__ void sum_x_y(float *out, const float *x, const float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;  if (i < n) out[i] = x[i] + 2.0f * y[i]; }
extern "C" __global__ void mix(float *w, const float *a, const float *b, const float *c, int na,
                               float k, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = k;
    for (int r = 0; r < 64; ++r) {              // long enough for concurrent nodes to overlap
        float t = s;
        if (na > 0) t += a[i];
        if (na > 1) t += 0.5f * b[i];
        if (na > 2) t += 0.25f * c[i];
        s = 0.5f * s + 0.001f * t;
    }
    w[i] = 0.75f * w[i] + s;
}
"""
N = 1 << 16
_prog: list = []


def kernels():
    if not _prog:
        p = rt.Program(SOURCE, name="compute_test.cu")
        _prog.append({
            "cal_x_0": p.kernel("cal_x_0", signature="float *x_0, float base, int n"),
            "sum_x_y": p.kernel("sum_x_y", signature="float *out, const float *x, const float *y, int n"),
            "mix": p.kernel("mix", signature="float *w, const float *a, const float *b, const float *c, "
                                             "int na, float k, int n"),
        })
    return _prog[0]


def floats(buf, n=N):
    return np.frombuffer(buf.to_bytes(4 * n), np.float32)


def muda(base=1.0):
    k = kernels()
    vars = VarManager()
    n = vars.value("n", N)
    b = vars.value("base", base)
    x_0, x, y, z = (vars.buffer(name, rt.malloc(4 * N)) for name in ("x_0", "x", "y", "z"))
    g = ComputeGraph(vars, "muda")

    @g.node("cal_x_0")
    def _(ctx):
        ctx.launch(k["cal_x_0"], (n.read() + 255) // 256, 256, x_0.write(), b.read(), n.read())

    @g.node("copy_to_x")
    def _(ctx):
        ctx.memcpy(x.write(), x_0.read())

    @g.node("copy_to_y")
    def _(ctx):
        ctx.memcpy(y.write(), x_0.read())

    @g.node("print_x_y")
    def _(ctx):
        ctx.launch(k["sum_x_y"], (n.read() + 255) // 256, 256, z.write(), x.read(), y.read(), n.read())

    return g, vars


def expected(base=1.0):
    x0 = base + np.arange(N, dtype=np.float32)
    return x0, x0 + 2.0 * x0


def test_muda_example_edges_data_and_three_ways_agree(stream):
    g, vars = muda()
    g.launch(stream)
    stream.synchronize()
    # The explicit graph: exactly the inferred edges, no edge between the copies.
    eg = g.graph
    types = {n: n.type for n in eg.nodes()}
    assert sorted(t.name for t in types.values()) == ["KERNEL", "KERNEL", "MEMCPY", "MEMCPY"]
    name_of = {cn.graph_nodes[0]: cn.name for cn in g.nodes()}
    assert sorted((name_of[a], name_of[b]) for a, b, _ in eg.edges()) == [
        ("cal_x_0", "copy_to_x"), ("cal_x_0", "copy_to_y"), ("copy_to_x", "print_x_y"),
        ("copy_to_y", "print_x_y")]
    x0, z = expected()
    graph_result = {v: floats(vars[v].value) for v in ("x_0", "x", "y", "z")}
    assert np.array_equal(graph_result["x"], x0) and np.array_equal(graph_result["y"], x0)
    assert np.array_equal(graph_result["z"], z)

    for v in ("x_0", "x", "y", "z"):
        vars[v].value.copy_from(bytes(4 * N))
    g.launch(stream, single_stream=True)
    stream.synchronize()
    for v in ("x_0", "x", "y", "z"):
        assert np.array_equal(floats(vars[v].value), graph_result[v]), v

    # An equivalent graph built by hand gives the same data.
    k = kernels()
    bufs = {v: rt.malloc(4 * N) for v in ("x_0", "x", "y", "z")}
    h = rt.Graph()
    a = h.add_kernel(k["cal_x_0"], N // 256, 256, [bufs["x_0"], 1.0, N])
    c1 = a.memcpy(bufs["x"], bufs["x_0"], 4 * N)
    c2 = a.memcpy(bufs["y"], bufs["x_0"], 4 * N)
    h.add_kernel(k["sum_x_y"], N // 256, 256, [bufs["z"], bufs["x"], bufs["y"], N], dependencies=[c1, c2])
    assert h.same_structure(eg)
    exe = h.instantiate()
    exe.launch(stream)
    stream.synchronize()
    for v in ("x_0", "x", "y", "z"):
        assert np.array_equal(floats(bufs[v]), graph_result[v]), v
    exe.close()
    h.close()
    g.close()


def test_rebinding_updates_only_the_nodes_that_use_it(stream, monkeypatch):
    g, vars = muda()
    g.launch(stream)
    stream.synchronize()
    exe_before = g.exec
    calls: list[str] = []
    # (the compute graph's copy and kernel updates call the setters' checked-node halves,
    # _set_memcpy and _set_kernel, which set_memcpy and set_kernel_params call too)
    for name in ("_set_memcpy", "set_memset", "_set_kernel", "set_host", "set_child_graph", "set_event"):
        original = getattr(GraphExec, name)

        def counted(self, *a, _name=name, _orig=original, **k):
            calls.append(_name)
            return _orig(self, *a, **k)

        monkeypatch.setattr(GraphExec, name, counted)
    old_x = vars["x"].value
    new_x = rt.malloc(4 * N)
    old_x.copy_from(bytes(4 * N))
    vars["x"].update(new_x)
    report = g.update()
    assert report.nodes == ("copy_to_x", "print_x_y") and report.setter_calls == 2 and not report.rebuilt
    assert sorted(calls) == ["_set_kernel", "_set_memcpy"]
    assert g.exec is exe_before                      # no re-instantiation
    g.launch(stream)
    stream.synchronize()
    x0, z = expected()
    assert np.array_equal(floats(new_x), x0)
    assert not floats(old_x).any()                   # the old buffer is no longer written
    assert np.array_equal(floats(vars["z"].value), z)

    # A value variable: only the node reading it changes, its kernel argument set in place.
    calls.clear()
    vars["base"].update(5.0)
    g.launch(stream)                                 # applies the pending update first
    stream.synchronize()
    assert g.last_update.nodes == ("cal_x_0",) and g.last_update.setter_calls == 1
    assert calls == ["_set_kernel"]
    x0, z = expected(5.0)
    assert np.array_equal(floats(new_x), x0) and np.array_equal(floats(vars["z"].value), z)
    g.close()


def test_changed_topology_rebuilds_and_says_so(stream):
    g, vars = muda()
    g.launch(stream)
    exe_before = g.exec
    n = vars["n"]
    k = kernels()

    @g.node("late")
    def _(ctx):
        ctx.memset(vars["x"].write(), 0)

    with pytest.warns(RebuildWarning, match="nodes were added"):
        g.launch(stream)
    assert g.exec is not exe_before and g.last_update.rebuilt
    assert g.why("print_x_y", "late")[0].kind.value == "WAR"
    stream.synchronize()
    assert not floats(vars["x"].value).any()
    # Work that depends on a value: a different kind of work is a rebuild, not a setter.
    vars2 = VarManager()
    mode = vars2.value("mode", "kernel")
    buf = vars2.buffer("buf", rt.malloc(4 * N))
    g2 = ComputeGraph(vars2, "modal")

    @g2.node("fill")
    def _(ctx):
        if mode.read() == "kernel":
            ctx.launch(k["cal_x_0"], N // 256, 256, buf.write(), 3.0, N)
        else:
            ctx.memset(buf.write(), 0)

    g2.launch(stream)
    stream.synchronize()
    assert floats(buf.value)[1] == 4.0
    mode.update("memset")
    with pytest.warns(RebuildWarning, match=r"issued \['kernel cal_x_0'\] in the previous phase but "
                                            r"\['memset 262144 B'\]"):
        g2.launch(stream)
    stream.synchronize()
    assert not floats(buf.value).any()
    del n
    g.close()
    g2.close()


def test_closure_differing_between_phases_fails_the_build(stream):
    vars = VarManager()
    buf = vars.buffer("buf", rt.malloc(64))
    count = [0]

    def flaky(ctx):
        count[0] += 1
        if count[0] == 1:
            ctx.memset(buf.write(), 1)
        else:
            ctx.memset(buf.write(), 1)
            ctx.memset(buf.write(), 2)

    g = ComputeGraph(vars, "flaky")
    g.node("flaky", flaky)
    with pytest.raises(errors.PhaseMismatch, match="node 'flaky' issued"):
        g.launch(stream)
    assert g._graph is None and g._exec is None  # nothing half-built is kept


def test_launch_inside_a_capture_adds_a_child_graph(stream):
    g, vars = muda()
    before = rt.malloc(16)
    with stream.capture() as cap:
        stream.memset(before, 7, 16)
        g.launch(stream)
        stream.memset(before, 9, 16)
    kinds = sorted(n.type.name for n in cap.graph.nodes())
    assert kinds == ["GRAPH", "MEMSET", "MEMSET"]
    child = next(n for n in cap.graph.nodes() if n.type is NodeType.GRAPH)
    assert len(child.dependencies) == 1 and len(child.dependents) == 1   # in stream order
    assert len(child.child.nodes()) == 4
    exe = cap.graph.instantiate()
    exe.launch(stream)
    stream.synchronize()
    x0, z = expected()
    assert np.array_equal(floats(vars["z"].value), z) and before.to_bytes() == bytes([9] * 16)
    assert stream.capture_status is CaptureStatus.NONE
    exe.close()
    g.close()


def test_every_work_kind_builds_updates_and_runs_directly(stream):
    vars = VarManager()
    src = vars.buffer("src", rt.malloc(256))
    dst = vars.buffer("dst", rt.malloc(256))
    value = vars.value("value", 3)
    hits: list[int] = []
    ev = rt.Event()
    child = rt.Graph()
    child_buf = rt.malloc(16)
    child.add_memset(child_buf, 5, 16)
    g = ComputeGraph(vars, "kinds")

    @g.node("init")
    def _(ctx):
        ctx.memset(src.write(), value.read())

    @g.node("copy_and_mark")
    def _(ctx):
        v = value.read()
        ctx.memcpy(dst.write(), src.read())
        ctx.record(ev)
        ctx.wait(ev)
        ctx.host(lambda: hits.append(v))
        ctx.child_graph(child)
        ctx.capture(lambda s: s.memset(child_buf, 6, 8))

    g.launch(stream)
    g.synchronize()
    assert dst.value.to_bytes() == bytes([3] * 256) and hits == [3]
    assert child_buf.to_bytes() == bytes([6] * 8 + [5] * 8)
    assert g["copy_and_mark"].work == ["memcpy", "event_record", "event_wait", "host", "graph", "capture"]
    value.update(4)
    report = g.update()
    assert not report.rebuilt and report.setter_calls == 7, report
    g.launch(stream)
    g.synchronize()
    assert dst.value.to_bytes() == bytes([4] * 256) and hits == [3, 4]
    dst.value.copy_from(bytes(256))
    g.launch(stream, single_stream=True)
    stream.synchronize()
    assert dst.value.to_bytes() == bytes([4] * 256) and hits == [3, 4, 4]
    g.close()


# ------------------------------------------------------------------ random programs
programs = st.lists(st.tuples(st.sets(st.integers(0, 3), max_size=3), st.sets(st.integers(0, 3), max_size=2)),
                    min_size=2, max_size=8)


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs)
def test_random_programs_graph_equals_single_stream(program):
    k = kernels()["mix"]
    s = rt.Stream()
    vars = VarManager()
    vs = [vars.buffer(f"v{i}", rt.malloc(4 * N)) for i in range(4)]
    scratch = [rt.malloc(4 * N) for _ in program]   # each node's private output
    g = ComputeGraph(vars, "random")
    for idx, (reads, writes) in enumerate(program):
        def fn(ctx, idx=idx, reads=sorted(reads), writes=sorted(writes)):
            rs = [vs[r].read() for r in reads]
            ws = [vs[w].write() for w in writes]
            for out in ws or [scratch[idx]]:
                ins = (rs + [0, 0, 0])[:3]
                ctx.launch(k, N // 256, 256, out, *ins, len(rs), float(idx + 1), N)
        g.node(f"n{idx}", fn)

    def reset():
        for i, v in enumerate(vs):
            v.value.copy_from(np.full(N, i, np.float32).tobytes())
        for sc in scratch:
            sc.copy_from(bytes(4 * N))

    reset()
    g.launch(s)
    s.synchronize()
    graph_out = [floats(v.value) for v in vs] + [floats(sc) for sc in scratch]
    reset()
    g.launch(s, single_stream=True)
    s.synchronize()
    direct_out = [floats(v.value) for v in vs] + [floats(sc) for sc in scratch]
    for a, b in zip(graph_out, direct_out):
        assert np.array_equal(a, b)
    # The explicit graph has exactly the inferred hazard edges between the nodes' work.
    gn = {cn.graph_nodes[0]: cn.index for cn in g.nodes()}
    last = {cn.graph_nodes[-1]: cn.index for cn in g.nodes()}
    between = {(last[a], gn[b]) for a, b, _ in g.graph.edges() if a in last and b in gn and last[a] != gn[b]}
    assert between == {(a.index, b.index) for a, b, _ in g.edges()}
    g.close()
    s.close()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for x in scratch:
            x.close()


def test_default_stream_torch_cupy_and_a_foreign_capture():
    torch = pytest.importorskip("torch")
    k = kernels()
    vars = VarManager()
    t = torch.zeros(2 * N, dtype=torch.float32, device="cuda")
    a = vars.buffer("a", t[:N])                      # torch views
    with pytest.raises(errors.VariableOverlap):
        vars.buffer("bad", t[N - 1:N + 4])
    b = vars.buffer("b", t[N:])
    cp = pytest.importorskip("cupy")
    c_arr = cp.zeros(N, dtype=cp.float32)
    c = vars.buffer("c", c_arr)                      # a CuPy array
    assert c.nbytes == 4 * N and a.nbytes == 4 * N and b.address == t.data_ptr() + 4 * N

    class OnlyDLPack:                                # a producer known by DLPack alone
        def __init__(self, arr):
            self.arr = arr

        def __dlpack__(self, **kw):
            return self.arr.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.arr.__dlpack_device__()

    spare = cp.zeros((4, 8), dtype=cp.float64)
    d = vars.buffer("d", OnlyDLPack(spare[1:3]))      # rows 1-2: 128 bytes at row 1
    assert (d.address, d.nbytes) == (spare.data.ptr + 64, 128)
    with pytest.raises(errors.VariableOverlap, match="variable 'd'"):
        vars.buffer("e", OnlyDLPack(spare[2:]))
    g = ComputeGraph(vars, "interop")

    @g.node("init")
    def _(ctx):
        ctx.launch(k["cal_x_0"], N // 256, 256, a.write(), 0.0, N)

    @g.node("copy")
    def _(ctx):
        ctx.memcpy(b.write(), a.read())

    @g.node("sum")
    def _(ctx):
        ctx.launch(k["sum_x_y"], N // 256, 256, c.write(), a.read(), b.read(), N)

    g.launch()                                       # the legacy default stream
    rt.Device(0).synchronize()
    ref = torch.arange(N, dtype=torch.float32, device="cuda")
    assert torch.equal(t[N:], ref) and torch.equal(torch.as_tensor(c_arr, device="cuda"), 3 * ref)

    # A capture pygraphrt did not begin (PyTorch's): the graph becomes one child-graph node.
    t.zero_()
    c_arr.fill(0)
    tg = torch.cuda.CUDAGraph()
    ts = torch.cuda.Stream()
    with torch.cuda.graph(tg, stream=ts):
        g.launch(rt.Stream.wrap(ts))
    tg.replay()
    torch.cuda.synchronize()
    assert torch.equal(t[N:], ref) and torch.equal(torch.as_tensor(c_arr, device="cuda"), 3 * ref)
    g.close()


def test_random_sequences_of_rebinds_changes_and_additions_launch_what_one_stream_runs(stream):
    """tests/test_compute_sequences.py's random sequences (variables rebound, value variables
    changed, nodes added, updates, close, a launch into a capture) on the GPU -- compiled mode:
    the C evaluation and build loop; ABI mode: the Python methods: after every launch, the
    graph's results are the single-stream run's."""
    from ..test_compute_sequences import SEQUENCES, run_sequences

    launched, rebuilt = run_sequences(SEQUENCES // 2)
    assert launched > SEQUENCES and rebuilt > SEQUENCES // 8, (launched, rebuilt)
