"""The simulator's race check (pygraphrt.sim.check_races, set_race_check, PYGRAPHRT_SIM_RACES).

Runs on the CPU everywhere: the simulator is the active backend for the module.  Seeded
missing dependencies must be reported with both nodes, the overlapping range and the
accesses; correct graphs, disjoint ranges and read-only sharing must stay quiet; the
launch-time modes must warn (and run) or raise (and run nothing).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import pygraphrt as rt
from pygraphrt import errors, sim
from pygraphrt.enums import NodeType, UpdateResult

from .backends import selected

REPO = Path(__file__).resolve().parent.parent
N = 4096


@pytest.fixture(scope="module", autouse=True)
def sim_backend():
    with selected("sim") as backend:
        yield backend


@pytest.fixture(autouse=True)
def race_check_off():
    """Every test starts and ends with the launch-time check off."""
    import gc

    gc.collect()  # earlier tests' buffers are freed now, not in the middle of a test
    sim.set_race_check("off")
    yield
    sim.set_race_check("off")


@pytest.fixture
def stream():
    s = rt.Stream()
    yield s
    s.close()


@pytest.fixture
def bufs():
    out = [rt.malloc(N) for _ in range(4)]
    for b in out:
        b.copy_from(bytes(N))
    yield out
    for b in out:
        b.close()


SOURCE = r"""
extern "C" __global__ void fill(float *y, float v, int n) {}
extern "C" __global__ void scale(float *out, const float *in, float s, int n) {}
extern "C" __global__ void add2(float *out, const float *a, const float *b, int n) {}
"""
_kernels: dict = {}


def kernels() -> dict:
    if not _kernels:
        import tests.sim_kernels  # noqa: F401 - registers fill, scale, add2

        prog = rt.Program(SOURCE, name="races.cu")
        _kernels.update(fill=prog.kernel("fill", signature="float *y, float v, int n"),
                        scale=prog.kernel("scale", signature="float *out, const float *in, float s, int n"),
                        add2=prog.kernel("add2", signature="float *out, const float *a, const float *b, int n"))
    return _kernels


def seed_diamond(a, b, c, d):
    """The README seed: memset A writes a; B copies a -> b; C memsets c; D copies c -> d."""
    g = rt.Graph()
    A = g.add_memset(a, 1, N)
    B = A.memcpy(b, a, N)
    C = A.memset(c, 3, N)
    D = g.add_memcpy(d, c, N, dependencies=[B, C])
    return g, (A, B, C, D)


def only(races):
    assert len(races) == 1, [str(r) for r in races]
    return races[0]


# ============================================================================ quiet on correct graphs
def test_correct_seed_diamond_is_quiet(bufs, stream):
    g, _ = seed_diamond(*bufs)
    assert sim.check_races(g) == []
    exe = g.instantiate()
    assert sim.check_races(exe) == []
    sim.set_race_check("raise")
    exe.launch(stream)  # no error: nothing races
    stream.synchronize()
    assert bufs[3].to_bytes() == b"\x03" * N


def test_captured_seed_diamond_is_quiet(bufs, stream):
    a, b, c, d = bufs
    s2 = rt.Stream()
    fork, join = rt.Event(), rt.Event()
    with stream.capture() as cap:
        stream.memset(a, 1, N)
        stream.record(fork)
        s2.wait(fork)
        stream.memcpy(b, a, N)
        s2.memset(c, 3, N)
        s2.record(join)
        stream.wait(join)
        stream.memcpy(d, c, N)
    assert len(cap.graph.nodes()) == 4
    assert sim.check_races(cap.graph) == []


def test_unordered_disjoint_ranges_and_shared_reads_are_quiet(bufs):
    a, b, c, d = bufs
    g = rt.Graph()
    g.add_memset(a, 1, 64)
    g.add_memset(a.ptr + 64, 2, 64)  # the next bytes: adjacent, not overlapping
    g.add_memcpy(b, c, N)  # two copies reading c, unordered: reads never conflict
    g.add_memcpy(d, c, N)
    assert sim.check_races(g) == []


def test_unordered_kernels_reading_through_const_pointers_are_quiet(bufs):
    k = kernels()
    a, b, c, d = bufs
    n = N // 4
    g = rt.Graph()
    g.add_kernel(k["scale"], 1, 32, [b, a, 2.0, n])  # reads a (const float *in)
    g.add_kernel(k["add2"], 1, 32, [c, a, d, n])  # reads a and d, writes c
    assert sim.check_races(g) == []


def test_pitched_memset_rows_are_precise(bufs):
    a = bufs[0]
    g = rt.Graph()
    g.add_memset(a, 1, 16, height=4, pitch=64)  # rows [0,16), [64,80), [128,144), [192,208)
    g.add_memset(a.ptr + 32, 2, 16, height=4, pitch=64)  # rows [32,48), ...: interleaved, disjoint
    assert sim.check_races(g) == []
    g.add_memset(a.ptr + 140, 3, 8)  # inside the first memset's third row
    r = only(sim.check_races(g))
    assert (r.start - a.ptr, r.end - a.ptr) == (140, 144)
    assert r.first.local_id == 0 and r.second.local_id == 2


def test_pitched_copy_rows_are_precise(bufs):
    a, b = bufs[0], bufs[1]
    g = rt.Graph()
    g.add_memcpy_2d(b, 64, a, 64, 16, 4)  # writes b rows [0,16), [64,80), ...
    g.add_memset(b.ptr + 16, 7, 48)  # [16, 64): between the rows
    assert sim.check_races(g) == []
    g.add_memset(b.ptr + 70, 7, 2)  # inside row 1
    r = only(sim.check_races(g))
    assert (r.start - b.ptr, r.end - b.ptr) == (70, 72)
    assert (r.first_access, r.second_access) == ("write", "write")


# ============================================================================ seeded missing edges
def test_seed_diamond_without_the_edge_b_to_d(bufs):
    a, b, c, d = bufs
    g = rt.Graph()
    A = g.add_memset(a, 1, N)
    B = A.memcpy(b, a, N)  # writes b
    C = A.memset(c, 3, N)
    D = g.add_memcpy(d, b, N, dependencies=[B, C])  # reads b
    assert sim.check_races(g) == []
    g.remove_dependencies([B], [D])
    r = only(sim.check_races(g))
    assert r.first.node is B and r.second.node is D
    assert (r.first.type, r.second.type) == ("MEMCPY", "MEMCPY")
    assert (r.start, r.end, r.nbytes) == (b.ptr, b.ptr + N, N)
    assert (r.first_access, r.second_access) == ("write", "read")
    text = str(r)
    assert f"MEMCPY node {B.local_id}" in text and f"MEMCPY node {D.local_id}" in text
    assert f"{b.ptr:#x}" in text and "writes" in text and "reads" in text and "no path" in text
    exe = g.instantiate()
    r2 = only(sim.check_races(exe))
    assert r2.first.node is B and r2.second.node is D and (r2.start, r2.end) == (r.start, r.end)


def test_paths_through_other_nodes_order(bufs):
    a = bufs[0]
    g = rt.Graph()
    first = g.add_memset(a, 1, N)
    middle = first.empty().host(lambda: None)  # a path A -> empty -> host -> last
    middle.memset(a, 2, N)
    assert sim.check_races(g) == []


def test_two_unordered_memsets_on_overlapping_ranges(bufs):
    a = bufs[0]
    g = rt.Graph()
    m1 = g.add_memset(a, 1, 100)
    m2 = g.add_memset(a.ptr + 50, 2, 100)
    r = only(sim.check_races(g))
    assert r.first.node is m1 and r.second.node is m2
    assert (r.start - a.ptr, r.end - a.ptr) == (50, 100)
    assert (r.first_access, r.second_access) == ("write", "write")
    g.add_dependencies([m1], [m2])
    assert sim.check_races(g) == []


def test_kernel_writing_what_an_unordered_kernel_reads_through_a_const_pointer(bufs):
    k = kernels()
    a, b, c, _ = bufs
    n = N // 4
    g = rt.Graph()
    w = g.add_kernel(k["fill"], 1, 32, [a, 1.0, n])  # float *y: read/write (conservatively)
    rd = g.add_kernel(k["scale"], 1, 32, [b, a, 2.0, n])  # const float *in: read
    r = only(sim.check_races(g))
    assert r.first.node is w and r.second.node is rd
    assert (r.first_access, r.second_access) == ("read/write", "read")
    assert (r.start, r.end) == (a.ptr, a.ptr + N)  # the whole allocation the pointers point into
    assert "'in'" in r.second_detail and "const float" in r.second_detail
    assert "'fill'" in str(r) and "'scale'" in str(r)
    # a pointer into the middle of the allocation still covers all of it (extent unknown)
    g2 = rt.Graph()
    g2.add_kernel(k["fill"], 1, 32, [c.ptr + 1024, 1.0, 4])
    g2.add_memcpy(b, c, 16)  # reads c[0:16]
    r = only(sim.check_races(g2))
    assert (r.start, r.end) == (c.ptr, c.ptr + 16)


# ============================================================================ nested graphs, memory nodes
def test_child_graph_counts_as_its_node_and_is_checked_on_its_own(bufs):
    a, b = bufs[0], bufs[1]
    child = rt.Graph()
    child.add_memset(a, 1, N)
    g = rt.Graph()
    cn = g.add_child_graph(child)
    sibling = g.add_memset(a.ptr + 8, 2, 8)  # unordered with the child graph node
    r = only(sim.check_races(g))
    assert r.first.node is cn and r.second.node is sibling
    assert r.first.inner is not None and r.first.inner.type == "MEMSET"
    assert "through its MEMSET node 0" in str(r)
    g.add_dependencies([cn], [sibling])
    assert sim.check_races(g) == []
    # inside the child graph: its own edges decide
    child2 = rt.Graph()
    child2.add_memset(b, 1, 16)
    child2.add_memset(b, 2, 16)
    g2 = rt.Graph()
    g2.add_child_graph(child2)
    r = only(sim.check_races(g2))
    assert r.graph == "the child graph of GRAPH node 0"
    assert (r.first.type, r.second.type) == ("MEMSET", "MEMSET")
    assert r.first.node is not None and r.first.node.type is NodeType.MEMSET


def test_conditional_bodies_are_exclusive_but_race_with_siblings(bufs):
    a = bufs[0]
    g = rt.Graph()
    h = g.conditional_handle()
    ie = g.add_if_else(h)
    ie.bodies[0].add_memset(a, 1, 16)
    ie.bodies[1].add_memset(a, 2, 16)  # the other body: never runs with the first
    assert sim.check_races(g) == []
    sibling = g.add_memset(a.ptr + 4, 3, 4)
    r = only(sim.check_races(g))
    assert r.first.node is ie and r.second.node is sibling and r.first.inner is not None
    assert r.first.inner.node is not None and r.first.inner.node.graph is ie.bodies[0]
    body = ie.bodies[0]
    body.add_memset(a.ptr + 8, 4, 4)  # unordered with the body's first memset, overlapping it
    races = sim.check_races(g)
    assert [x.graph for x in races] == ["the graph", "body 0 of CONDITIONAL node 0"]


def test_graph_memory_nodes(stream):
    g = rt.Graph()
    alloc = g.add_mem_alloc(N)
    ms = alloc.memset(alloc.dptr, 1, N)
    ms.mem_free(alloc)
    assert sim.check_races(g) == []
    exe = g.instantiate()
    sim.set_race_check("raise")
    exe.launch(stream)
    stream.synchronize()
    exe.close()
    sim.set_race_check("off")
    # a memset not ordered after the allocation, a free not ordered after a reader
    g2 = rt.Graph()
    alloc2 = g2.add_mem_alloc(N)
    early = g2.add_memset(alloc2.dptr + 16, 1, 16)
    copy = alloc2.memcpy(bytearray(16), alloc2.dptr, 16)
    free = alloc2.mem_free(alloc2)
    races = sim.check_races(g2)
    pairs = {(r.first.node, r.second.node): (r.first_access, r.second_access) for r in races}
    assert pairs == {(alloc2, early): ("alloc", "write"), (early, free): ("write", "free"),
                     (copy, free): ("read", "free")}, [str(r) for r in races]


# ============================================================================ launch-time modes
def racy(bufs):
    a, b, c, d = bufs
    g = rt.Graph()
    A = g.add_memset(a, 1, N)
    B = A.memcpy(b, a, N)
    D = g.add_memcpy(d, b, N, dependencies=[A])  # missing B -> D
    return g, B, D


def test_warn_mode_warns_and_runs(bufs, stream):
    g, B, D = racy(bufs)
    exe = g.instantiate()
    assert sim.set_race_check("warn") == "off"
    with pytest.warns(errors.RaceWarning) as rec:
        exe.launch(stream)
    stream.synchronize()
    assert bufs[1].to_bytes() == b"\x01" * N, "the graph ran"
    w = rec[0]
    assert w.filename == __file__, "the warning points at the launch"
    assert only(w.message.races).first.node is B and "MEMCPY node" in str(w.message)
    # warnings made errors by the filters: the RaceWarning itself
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(errors.RaceWarning):
            exe.launch(stream)
    # a correct graph launches without a warning
    good, _ = seed_diamond(*bufs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        good.instantiate().launch(stream)
    stream.synchronize()


def test_raise_mode_refuses_the_launch(bufs, stream):
    g, B, D = racy(bufs)
    exe = g.instantiate()
    sim.set_race_check("raise")
    with pytest.raises(errors.RaceDetected) as info:
        exe.launch(stream)
    stream.synchronize()
    assert isinstance(info.value, errors.InvalidValue)
    assert bufs[0].to_bytes(4) == bytes(4), "nothing of the graph ran"
    r = only(info.value.races)
    assert r.first.node is B and r.second.node is D
    assert f"MEMCPY node {B.local_id} ({int(B):#x})" in str(info.value)
    assert f"MEMCPY node {D.local_id} ({int(D):#x})" in str(info.value)
    assert sim.set_race_check("off") == "raise"
    exe.launch(stream)  # off: runs
    stream.synchronize()
    assert bufs[0].to_bytes(4) == b"\x01" * 4


def test_launch_check_follows_updates_and_parameter_changes(bufs, stream):
    a, b, c, d = bufs
    g, (A, B, C, D) = seed_diamond(a, b, c, d)
    exe = g.instantiate()
    sim.set_race_check("raise")
    exe.launch(stream)
    stream.synchronize()
    exe.set_memcpy(D, d, b, N)  # D now reads b, written by B: still ordered (B -> D)
    exe.launch(stream)
    stream.synchronize()
    exe.set_memset(C, dst=b)  # C now writes b, which B writes too: no path between B and C
    with pytest.raises(errors.RaceDetected) as info:
        exe.launch(stream)
    assert [(r.first.node, r.second.node) for r in info.value.races] == [(B, C)]
    exe.set_memset(C, dst=c)
    exe.launch(stream)  # the cached analysis was redone: clean again
    stream.synchronize()
    # update from a racy graph of the same topology, then disable the culprit
    bad, _ = seed_diamond(a, b, b, d)  # its C memsets b: races with B
    assert exe.update(bad) is UpdateResult.SUCCESS
    with pytest.raises(errors.RaceDetected):
        exe.launch(stream)
    exe.set_enabled(C, False)  # a disabled node touches nothing
    exe.launch(stream)
    stream.synchronize()
    assert sim.check_races(exe) == [] and len(sim.check_races(bad)) == 1


def test_cached_analysis_follows_the_allocations_kernels_point_into():
    k = kernels()
    big = rt.malloc(512)
    out = rt.malloc(256)
    g = rt.Graph()
    g.add_kernel(k["fill"], 1, 32, [big, 1.0, 4])  # the whole 512-byte allocation, for all we know
    g.add_memcpy(out, big.ptr + 256, 4)  # reads bytes the kernel may write
    exe = g.instantiate()
    races = sim.check_races(exe)
    assert len(races) == 1 and (races[0].start, races[0].end) == (big.ptr + 256, big.ptr + 260)
    assert sim.check_races(exe)[0] is races[0], "cached while nothing changed"
    big.close()  # the kernel's pointer is in no allocation now: nothing known, no race
    assert sim.check_races(exe) == []


# ============================================================================ the API's edges
def test_mode_and_argument_checks(bufs):
    with pytest.raises(errors.InvalidValue, match="race check mode"):
        sim.set_race_check("loud")
    with pytest.raises(errors.InvalidValue, match="not a pygraphrt Graph"):
        sim.check_races(bufs[0])
    g = rt.Graph()
    g.close()
    with pytest.raises(errors.InvalidResourceHandle):
        sim.check_races(g)
    assert sim.Race.__name__ == "Race" and sim.RaceDetected is errors.RaceDetected


def run_py(code: str, **env: str) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if not k.startswith("PYGRAPHRT_")}
    e.update(PYTHONPATH=os.pathsep.join([str(REPO)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH")
                                                       else [])), **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=e, cwd=str(REPO), timeout=600)


def test_environment_variable():
    code = """
        import pygraphrt as rt
        from pygraphrt import errors, sim
        try:
            rt.use("sim")
        except errors.BackendError as e:
            print("ERR", e)
            raise SystemExit
        a, b = rt.malloc(64), rt.malloc(64)
        g = rt.Graph()
        g.add_memset(a, 1, 64)
        g.add_memcpy(b, a, 64)
        try:
            g.instantiate().launch(rt.Stream())
            print("RAN")
        except errors.RaceDetected as e:
            print("RACE", len(e.races))
    """
    r = run_py(code, PYGRAPHRT_SIM_RACES="raise")
    assert r.stdout.split() == ["RACE", "1"], r.stdout + r.stderr
    r = run_py(code)
    assert r.stdout.split() == ["RAN"], r.stdout + r.stderr
    r = run_py(code, PYGRAPHRT_SIM_RACES="sometimes")
    assert "ERR PYGRAPHRT_SIM_RACES='sometimes'" in r.stdout, r.stdout + r.stderr
