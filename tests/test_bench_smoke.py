"""CPU smoke test of the benchmark harness's pure-Python parts (tiny sizes, no GPU)."""

import json
import sys
from pathlib import Path

import pytest

from benchmarks.stats import Figure, chart, interleaved, ratio, table, time_per_item, to_json

from .test_launch_hot import stub_cudart  # noqa: F401  (a fixture: benchmarks/stub_cudart.c, built)


def test_harness_parts(tmp_path):
    calls = []
    vals = time_per_item(lambda k: calls.append(k), 10, 3, between=lambda: None)
    assert len(vals) == 3 and all(v >= 0 for v in vals) and calls == [10] * 4
    a = Figure("g", "a", [2.0, 1.0, 3.0])
    b = Figure("g", "b", [1.0, 1.0, 1.0])
    assert (a.median, a.min, a.max) == (2.0, 1.0, 3.0)
    r = ratio({"a": a, "b": b}, "P1", "a", "b", "<= 1.0", limit=1.0)
    assert r.value == 2.0 and not r.met
    assert ratio({"a": a}, "P1", "a", "missing", "") is None
    text = table([a, b], [r])
    assert "P1" in text and "NO" in text
    data = json.loads(to_json({"gpu": "none"}, [a, b], [r]))
    assert data["figures"][0]["median"] == 2.0 and data["ratios"][0]["met"] is False
    chart([a, b], str(tmp_path / "c.png"))
    order = []
    res = interleaved({"x": lambda k: order.append("x"), "y": lambda k: order.append("y")}, 5, 4)
    assert len(res["x"]) == len(res["y"]) == 4
    assert order[2:] == ["x", "y", "y", "x", "x", "y", "y", "x"]  # warm-up, then rotating order


def test_run_module_imports_without_gpu():
    import benchmarks.run as run

    assert "pygraphrt" in run.IMPORT_PROG


def test_c_baseline_runs_pool_their_trials(tmp_path):
    """run_c_baseline passes the graph size to the C program and pools each measurement's
    trials over runs; c_figures names them; a failing or unknown output is reported."""
    import pytest

    import benchmarks.run as run

    exe = tmp_path / "launch_bench"
    exe.write_text('#!/bin/sh\necho "$1" >> "$0.args"\n'
                   'echo "build_chain 0.30 0.40 0.50"\necho "launch_empty 1.0 3.0"\n')
    exe.chmod(0o755)
    pooled: dict[str, list[float]] = {}
    assert run.run_c_baseline(exe, 1000, pooled)
    assert run.run_c_baseline(exe, 1000, pooled)
    assert (tmp_path / "launch_bench.args").read_text().split() == ["1000", "1000"]
    assert pooled == {"build_chain": [0.3, 0.4, 0.5] * 2, "launch_empty": [1.0, 3.0] * 2}
    figs = run.c_figures(pooled, 2)
    chain = figs["C cudaGraphAddEmptyNode (chain)"]
    assert (chain.group, chain.median, chain.min, chain.max) == ("build per node", 0.4, 0.3, 0.5)
    assert figs["C cudaGraphLaunch (empty)"].median == 2.0
    assert "2 C runs" in chain.note
    assert run.build_nodes(True) == 1000 and run.build_nodes(False) == 10000

    exe.write_text("#!/bin/sh\necho boom >&2\nexit 3\n")
    assert not run.run_c_baseline(exe, 10, pooled)
    exe.write_text('#!/bin/sh\necho "mystery 1.0"\n')
    with pytest.raises(ValueError, match="unknown line"):
        run.run_c_baseline(exe, 10, pooled)


def test_c_loops_call_the_given_function_as_the_runtime_would(tmp_path):
    """benchmarks/c_loops.c, with ctypes callbacks standing in for the runtime: each loop
    calls its function the given number of times with the given handles, threads a chain's
    dependency from node to node, and stops at (and reports) the first error."""
    import ctypes

    import pytest

    from benchmarks import c_loops

    so = c_loops.build(tmp_path)
    if so is None:
        pytest.skip("no C compiler")
    seen: dict[str, list] = {k: [] for k in c_loops.ENTRY_POINTS}
    fail_at = {"n": -1}

    def status(kind):  # after the call is recorded: 7 for the fail_at-th call
        return 7 if len(seen[kind]) == fail_at["n"] else 0

    vp, i32p = ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)
    launch = ctypes.CFUNCTYPE(ctypes.c_int, vp, vp)(
        lambda e, s: (seen["launch"].append((e, s)), status("launch"))[1])

    def is_cap(s, st):
        st[0] = 0
        seen["is_capturing"].append(s)
        return status("is_capturing")

    is_capturing = ctypes.CFUNCTYPE(ctypes.c_int, vp, i32p)(is_cap)

    def add(out, g, deps, n):
        seen["add_empty"].append((g, deps[0], n))
        out[0] = 0x100 + len(seen["add_empty"])
        return status("add_empty")

    add_empty = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(vp), vp, ctypes.POINTER(vp), ctypes.c_size_t)(add)

    def inst(out, g, flags):
        seen["instantiate"].append((g, flags))
        out[0] = 0xE0
        return 0

    instantiate = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(vp), vp, ctypes.c_ulonglong)(inst)
    exec_destroy = ctypes.CFUNCTYPE(ctypes.c_int, vp)(lambda e: (seen["exec_destroy"].append(e), 0)[1])
    fns = {k: ctypes.cast(f, ctypes.c_void_p).value for k, f in
           (("launch", launch), ("is_capturing", is_capturing), ("add_empty", add_empty),
            ("instantiate", instantiate), ("exec_destroy", exec_destroy))}
    cl = c_loops.CLoops(so, fns)

    cl.launch(0xA0, 0x50, 4)
    assert seen["launch"] == [(0xA0, 0x50)] * 4
    cl.is_capturing(0x50, 3)
    assert seen["is_capturing"] == [0x50] * 3
    cl.add_empty(0x60, 0x10, 3, chain=True)
    assert seen["add_empty"] == [(0x60, 0x10, 1), (0x60, 0x101, 1), (0x60, 0x102, 1)]
    cl.add_empty(0x60, 0x10, 2, chain=False)
    assert seen["add_empty"][3:] == [(0x60, 0x10, 1), (0x60, 0x10, 1)]
    cl.instantiate_and_destroy(0x60)
    assert seen["instantiate"] == [(0x60, 0)] and seen["exec_destroy"] == [0xE0]

    seen["launch"].clear()
    fail_at["n"] = 3  # the third call fails: the loop stops there and says which call
    with pytest.raises(RuntimeError, match="cudaGraphLaunch: the runtime returned 7"):
        cl.launch(0xA0, 0x50, 10)
    assert len(seen["launch"]) == 3
    with pytest.raises(ValueError, match="no address"):
        c_loops.CLoops(so, {"launch": fns["launch"]})


def test_rotated_contenders_take_turns_and_may_give_several_figures():
    from benchmarks.stats import rotated

    order = []

    def contender(name, figs):
        def run():
            order.append(name)
            return figs
        return run

    res = rotated({"a": contender("a", {"a": 1.0, "a inst": 2.0}), "b": contender("b", {"b": 3.0}),
                   "c": contender("c", {"c": 4.0})}, 3)
    assert order[:3] == ["a", "b", "c"]  # the warm-up round, discarded
    assert order[3:] == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]
    assert res == {"a": [1.0] * 3, "a inst": [2.0] * 3, "b": [3.0] * 3, "c": [4.0] * 3}


def test_rotated_collects_before_each_call_when_asked():
    # What one contender leaves for the cyclic collector is collected before the next is timed.
    import gc
    import weakref

    from benchmarks.stats import rotated

    class Cycle:
        pass

    left: list = []

    def leaves_a_cycle():
        c = Cycle()
        c.self = c  # garbage only the cyclic collector frees
        left.append(weakref.ref(c))
        return {"leaves": 1.0}

    def sees():
        return {"alive": float(sum(r() is not None for r in left))}

    was = gc.isenabled()
    gc.disable()  # (no automatic collection in between)
    try:
        assert rotated({"a": leaves_a_cycle, "b": sees}, 2, collect=True)["alive"] == [0.0, 0.0]
        left.clear()
        assert rotated({"a": leaves_a_cycle, "b": sees}, 2)["alive"] == [2.0, 2.0]  # (b first in trial 2)
    finally:
        if was:
            gc.enable()
        gc.collect()


def test_repeated_runs_combine_ratio_by_ratio():
    """--repeat: each run's ratio is taken within the run; the combined value is their
    median, judged against the target, and the table gives the range and how many runs met it."""
    from benchmarks.stats import Figure, combine_ratios, pool_figures, ratio, table

    def run(num, den):
        return {"p": Figure("g", "p", [num]), "c": Figure("g", "c", [den])}

    runs = [run(1.0, 1.0), run(3.0, 1.0), run(1.5, 1.0)]  # ratios 1.0, 3.0, 1.5
    per_run = [[ratio(r, "T", "p", "c", "<= 2.0", limit=2.0)] for r in runs]
    (combined,) = combine_ratios(per_run)
    assert combined.runs == [1.0, 3.0, 1.5] and combined.value == 1.5 and combined.met
    text = table([], [combined])
    assert "min-max over 3 runs" in text and "1.000-3.000" in text and "yes (met in 2/3)" in text
    at_least = combine_ratios([[ratio(r, "U", "c", "p", ">= 0.9", at_least=0.9)] for r in runs])[0]
    assert at_least.value == 1 / 1.5 and not at_least.met
    pooled = pool_figures(runs)
    assert pooled["p"].trials_us == [1.0, 3.0, 1.5] and pooled["p"].median == 1.5
    single = table([], combine_ratios(per_run[:1]))
    assert "runs" not in single and single.rstrip().endswith("yes")


def test_figures_timed_in_the_same_rounds_are_compared_round_by_round(tmp_path):
    """Two figures from one rotated() call carry its round tag, and their ratio is the median of
    the round-by-round ratios: a slow period that catches three of one contender's five trials
    and two of the other's (each round's pair shares it) moves the ratio of the medians, not
    this.  Figures from different calls, or given in only some rounds, are not paired; the tag
    survives the child's JSON (run_mode), and the table says which ratios are paired."""
    from benchmarks.run import run_mode
    from benchmarks.stats import Figure, combine_ratios, pool_figures, ratio, rotated, table

    # Per round: the floor's trial, and pygraphrt's at 1.2x it; rounds 2-4 are slow (x2) for
    # both, but the rotation puts the floor's third trial before the slow period began.
    floor = iter([1.0, 1.0, 1.0, 2.0, 2.0])
    slow = iter([1, 1, 2, 2, 2])
    res = rotated({"py": lambda: {"py": 1.2 * next(slow)}, "floor": lambda: {"floor": next(floor)}}, 4)
    # (the warm-up round took the first value of each)
    assert res["py"] == [1.2, 2.4, 2.4, 2.4] and res["floor"] == [1.0, 1.0, 2.0, 2.0]
    figs = {n: Figure("g", n, v) for n, v in res.items()}
    assert figs["py"].rounds and figs["py"].rounds == figs["floor"].rounds
    r = ratio(figs, "T", "py", "floor", "<= 1.25", limit=1.25)
    # round by round: 1.2, 2.4, 1.2, 1.2; the medians' ratio: 2.4 / 1.5 = 1.6
    assert r.paired and abs(r.value - 1.2) < 1e-12 and r.met
    assert abs(r.of_medians[0] - 1.6) < 1e-12
    assert "[paired; of medians 1.600]" in table([], [r])

    other = rotated({"floor": lambda: {"floor": 1.0}}, 4)["floor"]
    assert other.rounds != figs["py"].rounds
    figs2 = {"py": figs["py"], "floor": Figure("g", "floor", other)}
    unpaired = ratio(figs2, "T", "py", "floor", "<= 1.25", limit=1.25)
    assert not unpaired.paired and unpaired.value == 2.4 and "paired" not in table([], [unpaired])
    # a figure given in only some rounds carries no tag
    n = iter(range(10))
    some = rotated({"a": lambda: {"a": 1.0, **({"b": 2.0} if next(n) % 2 else {})}}, 4)
    assert some["a"].rounds and not some["b"].rounds

    combined = combine_ratios([[r], [r]])[0]
    assert combined.paired and combined.of_medians == r.of_medians * 2
    assert not combine_ratios([[r], [unpaired]])[0].paired
    assert not pool_figures([figs, figs])["py"].rounds  # (each run's rounds are its own)

    # the child's JSON keeps the tag (the child is a stand-in writing figures as run.py's does)
    import dataclasses
    import json as _json
    import subprocess

    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "__init__.py").write_text("")
    (tmp_path / "benchmarks" / "run.py").write_text(
        "import json, sys\nfrom pathlib import Path\n"
        f"figs = {_json.dumps([dataclasses.asdict(f) for f in figs.values()])}\n"
        "Path(sys.argv[1], '.figures-abi.json').write_text(json.dumps({'mode': 'abi', 'figures': figs}))\n")
    real = subprocess.run

    def run_stand_in(cmd, env=None, **kw):
        return real(cmd, env=dict(env, PYTHONPATH=str(tmp_path)), cwd=tmp_path, **kw)

    import benchmarks.run as run

    mp = pytest.MonkeyPatch()
    mp.setattr(run.subprocess, "run", run_stand_in)
    try:
        back = run_mode(tmp_path, "abi", True)
    finally:
        mp.undo()
    assert back["py [abi]"].rounds == figs["py"].rounds
    assert ratio(back, "T", "py [abi]", "floor [abi]", "<= 1.25", limit=1.25).paired


def test_cold_start_is_set_against_the_driver_floor():
    """The driver's own cold start (no binding) is measured beside the two bindings: `S*` is the
    best `S` any binding could reach on the machine, `<mode>:Sf` pygraphrt's over that floor."""
    import benchmarks.run as run

    label = "import + backend + first device call"
    figs = {f"pygraphrt: {label} [abi]": Figure("g", "p", [220.0]),
            f"cuda.bindings: {label}": Figure("g", "c", [300.0]),
            f"driver floor: {label}": Figure("g", "d", [200.0])}
    ratios = {r.name: r for r in run.target_ratios(figs)}
    assert ratios["S*"].value == 200.0 / 300.0 and ratios["abi:Sf"].value == 1.1
    assert abs(ratios["abi:S"].value - 220.0 / 300.0) < 1e-12 and not ratios["abi:S"].met
    imp, first = run.IMPORT_PROG["driver floor"]
    assert imp == "import _cffi_backend" and "cuInit" in first and "cuStreamCreate" in first
    compile(f"{imp}; {first}", "driver-floor", "exec")  # the program bench_import runs


def test_multidevice_group_runs_on_a_two_device_simulator():
    """The several-GPU group (benchmarks/multidevice) end to end on the simulator with 2 devices
    (its figures mean nothing there: the harness is what is checked), and its skip with one."""
    from benchmarks.multidevice import bench_multidevice, ratios
    from tests.backends import simulator

    with simulator(2):
        figs: dict = {}
        assert bench_multidevice(figs, quick=True) is None
    names = set(figs)
    assert {"2-GPU step, graph replay", "2-GPU step, streams", "launch, 8 nodes on 1 device",
            "launch, 8 nodes over 2 devices", "add_memset", "add_memset device=<current>",
            "add_memset, then the current device asked", "captured 1 MiB copy device 1 -> 0, peer access off",
            "captured 1 MiB copy device 1 -> 0, peer access on"} <= names, names
    assert all(f.group == "several GPUs" and f.trials_us for f in figs.values())
    assert figs["captured 1 MiB copy device 1 -> 0, peer access on"].unit == "GB/s"
    assert {r.name for r in ratios(figs)} == {"md:step", "md:launch", "md:device=", "md:device=ask", "md:peer"}
    with simulator(1):
        figs = {}
        why = bench_multidevice(figs, quick=True)
    assert figs == {} and "needs 2 devices" in why and "reports 1" in why


def test_per_call_figures_run_on_a_two_device_simulator():
    """benchmarks/per_call.py end to end on the simulator with 2 devices (the harness, not its
    figures): every figure of both states, each a positive time."""
    from benchmarks.per_call import measure
    from pygraphrt import multidevice
    from tests.backends import simulator

    with simulator(2) as backend:
        multidevice._reset_several(backend)
        try:
            figs = measure(quick=True)
        finally:
            multidevice._reset_several(backend)
    calls = ["stream.memcpy 64 B", "stream.memcpy 64 B from host", "capture of one memcpy", "malloc_async + free", "node.device",
             "add_memset (chain)", "add_kernel (chain)", "stream.launch (kernel)"]
    assert set(figs) == {f"{state}: {c}" for state in ("one", "several") for c in calls}, figs
    assert all(v > 0 for v in figs.values()), figs


def test_collectives_group_runs_its_timing_on_the_simulator(capsys):
    """benchmarks/collectives.py's timing functions, (a) graph replay and (b) eager, on two
    simulated ranks in threads (tiny sizes; no timing asserts): they run the all-reduces they
    say (in-place sums: each doubles 1 + 2), and the group itself skips here, saying why."""
    import threading

    import numpy as np

    import pygraphrt as rt
    from benchmarks import collectives
    from pygraphrt import nccl
    from tests.backends import simulator

    assert collectives.busbw_gbs(1e6, 10**9, 2) == 1.0  # 1 GB in 1 s, algbw * 2(n-1)/n with n=2
    with simulator(2):
        comms = nccl.Communicator.init_all([0, 1])
        streams, bufs = [], []
        for r, c in enumerate(comms):
            with rt.Device(c.device):
                streams.append(rt.Stream())
                bufs.append(rt.malloc(16))
                bufs[r].copy_from(np.full(4, r + 1, np.float32).tobytes())
        meet = threading.Barrier(2, timeout=60)
        figs: dict = {}

        class Typed:  # 4 float32 of simulated device memory, as a typed array shows itself
            def __init__(self, buf):
                self.buf, self.device = buf, type("device", (), {"index": buf.device})()

            @property
            def __cuda_array_interface__(self):
                return {"shape": (4,), "typestr": "<f4", "data": (self.buf.ptr, False), "version": 3}

        def rank(r: int) -> None:
            with rt.Device(r):
                figs[r, "a"] = collectives.per_op_graph(comms[r], streams[r], bufs[r], 4, 3, 2, meet.wait)
                figs[r, "b"] = collectives.per_op_eager(comms[r], streams[r], bufs[r], 4, 3, 2, meet.wait)
                figs[r, "b raw"] = collectives.per_op_raw(comms[r], streams[r], bufs[r], 4, 3, 2, meet.wait)
                # (b) on a typed array: dtype and count read from it (torch's tensor on the GPU)
                figs[r, "b typed"] = collectives.per_op_eager(comms[r], streams[r], Typed(bufs[r]), None, 3, 2,
                                                              meet.wait)

        threads = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not any(t.is_alive() for t in threads)
        assert sorted(figs) == [(r, k) for r in (0, 1) for k in ("a", "b", "b raw", "b typed")]
        assert all(len(v) == 2 and all(x >= 0 for x in v) for v in figs.values())
        # (a): 3 launches (warm-up + 2 trials) of 3 ops; (b), three times: 2 warm-up + 2 trials of 3
        # ops = 33 sums
        want = np.float32(3 * 2 ** 32)  # (the first sum makes 1 + 2 = 3; each later one doubles)
        for b in bufs:
            assert (np.frombuffer(b.to_bytes(), np.float32) == want).all()
        reason = collectives.skip_reason() or ""
        assert "torch is not installed" in reason or "not cuda" in reason, reason
        assert collectives.run(Path("unused"), True) == 0
        assert "collectives group skipped" in capsys.readouterr().out


def _fake_runtime(fail_at: int = -1):
    """A stand-in for the runtime's graph calls, for the floor contender (benchmarks.run): the
    binding's ffi, and functions that record what they are given and hand out node handles."""
    import importlib
    from types import SimpleNamespace

    ffi = importlib.import_module("pygraphrt._bindings.cuda13").ffi
    seen: list = []

    def add(out, graph, deps, n, *params):
        seen.append((int(ffi.cast("uintptr_t", graph)), [int(ffi.cast("uintptr_t", deps[i])) for i in range(n)]
                     if deps != ffi.NULL else [], n, params))
        out[0] = ffi.cast("cudaGraphNode_t", 0x100 + len(seen))
        return 7 if len(seen) == fail_at else 0

    def create(out, flags):
        out[0] = ffi.cast("cudaGraph_t", 0xA0)
        return 0

    lib = SimpleNamespace(cudaGraphAddEmptyNode=add, cudaGraphAddMemsetNode=add, cudaGraphCreate=create,
                          cudaGraphDestroy=lambda g: 0)
    return ffi, lib, seen


def test_the_floor_contender_calls_the_raw_function_checks_it_and_returns_the_handle():
    """benchmarks.run.floor_adder: one raw call per node with the dependency's handle and the
    parameter struct given; a non-zero result raises; the node object holds the new handle.
    _floor_adds threads a chain from node to node and fans a fan-out from the first node."""
    import pytest

    import benchmarks.run as run

    ffi, lib, seen = _fake_runtime(fail_at=3)
    params = ffi.new("struct cudaMemsetParams *")
    add = run.floor_adder(ffi, lib, "cudaGraphAddMemsetNode", params)
    graph = ffi.cast("cudaGraph_t", 0xA0)
    first = add(graph, [run.FloorNode(ffi.cast("cudaGraphNode_t", 0x50))])
    assert type(first) is run.FloorNode and int(ffi.cast("uintptr_t", first.handle)) == 0x101
    second = add(graph, [first])
    assert seen == [(0xA0, [0x50], 1, (params,)), (0xA0, [0x101], 1, (params,))]
    assert int(ffi.cast("uintptr_t", second.handle)) == 0x102
    with pytest.raises(RuntimeError, match="cudaGraphAddMemsetNode returned 7"):
        add(graph, [second])

    for chain, want in ((True, [[0x101], [0x102], [0x103]]), (False, [[0x101]] * 3)):
        ffi, lib, seen = _fake_runtime()
        assert run._floor_adds(ffi, lib, "cudaGraphAddEmptyNode", 3, chain) >= 0
        assert seen[0][1:] == ([], 0, ()) and [s[1] for s in seen[1:]] == want  # (the root, then 3 nodes)
        assert all(s[0] == 0xA0 and s[2] == 1 for s in seen[1:])


def test_abi_adds_are_set_against_the_floor():
    """Issue #45's targets: ABI mode's add_empty / add_memset (chain and fan-out) <= 1.25x and
    add_kernel <= 1.5x the floor contender of the same call; the compiled mode's are reported."""
    import benchmarks.run as run

    figs = {}
    for m, value in (("abi", 2.0), ("api", 1.0)):
        for what, api in (("add_empty", "cudaGraphAddEmptyNode"), ("add_memset", "cudaGraphAddMemsetNode"),
                          ("add_kernel", "cudaGraphAddKernelNode")):
            for shape in ("chain", "fanout"):
                figs[f"pygraphrt {what} ({shape}) [{m}]"] = Figure("g", "p", [value * 1.3])
                figs[f"floor {api} ({shape}) [{m}]"] = Figure("g", "f", [value])
    ratios = {r.name: r for r in run.target_ratios(figs)}
    want = {"abi:Fa": ("add_empty (chain)", 1.25), "abi:Faf": ("add_empty (fanout)", 1.25),
            "abi:Fm": ("add_memset (chain)", 1.25), "abi:Fmf": ("add_memset (fanout)", 1.25),
            "abi:Fk": ("add_kernel (chain)", 1.5)}
    for name, (what, limit) in want.items():
        r = ratios[name]
        assert r.numerator == f"pygraphrt {what} [abi]" and r.limit == limit and abs(r.value - 1.3) < 1e-12
        assert r.met == (limit == 1.5)
        api = ratios[name.replace("abi:", "api:")]
        assert api.limit is None and api.target == "report"
    assert not any(n.startswith(("abi:F", "api:F")) and n not in want and n.replace("api:", "abi:") not in want
                   for n in ratios)


def test_compute_group_runs_on_the_simulator(tmp_path):
    """scripts/bench --group compute --quick end to end on the simulator (its figures describe the
    simulator, not a GPU: the harness is what is checked): the figures of both quick sizes, the
    nodes each update touched, the runtime's calls subtracted trial by trial, the target rows and
    the garbage-collection setting stated."""
    import os
    import subprocess
    import sys

    from benchmarks import compute

    env = dict(os.environ, PYGRAPHRT_BACKEND="sim")
    r = subprocess.run([sys.executable, "-m", "benchmarks.run", str(tmp_path), "--group", "compute", "--quick",
                        "--modes", "api"], env=env, capture_output=True, text=True, timeout=600,
                       cwd=str(Path(__file__).resolve().parent.parent))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    text = (tmp_path / "compute.txt").read_text()
    assert "backend sim" in text and "garbage collection as users run it (enabled=True" in text
    data = json.loads((tmp_path / "compute.json").read_text())
    figs = {f["name"]: f for f in data["figures"]}
    for n in compute.QUICK_SIZES:
        tag = f", {n} nodes [api]"
        v0_users = sum(1 for i in range(n) if i % compute.VARIABLES == 0 or (7 * i + 3) % compute.VARIABLES == 0)
        assert figs[f"update, one variable rebound: nodes updated{tag}"]["median"] == v0_users
        assert figs[f"update, every variable rebound: nodes updated{tag}"]["median"] == n
        for what in ("first launch", "first launch: infer", "first launch: build", "first launch: instantiate"):
            assert figs[f"{what}, per node{tag}"]["median"] > 0
        for label in ("one variable", "every variable"):
            total, raw, above = (figs[f"update, {label} rebound{part}{tag}"]["trials_us"]
                                 for part in ("", ": runtime setters (raw calls)", ": above runtime setters"))
            assert all(abs(t - r_ - a) < 1e-6 * max(t, 1) for t, r_, a in zip(total, raw, above)) and all(raw)
    ratios = {r["name"]: r for r in data["ratios"]}
    assert set(ratios) == {"cg:F", "cg:U1", "cg:Ua"}
    big = max(compute.QUICK_SIZES)
    assert all(f"{big} nodes" in r["numerator"] for r in ratios.values())
    assert "cg:F" in text and "cg:Ua" in text


def test_torch_group_skips_without_torch_saying_why(tmp_path, capsys, monkeypatch):
    """benchmarks/torch_loop.py (scripts/bench --group torch) needs torch and a GPU: without torch it
    says so and writes nothing."""
    from benchmarks import torch_loop

    monkeypatch.setitem(sys.modules, "torch", None)
    assert torch_loop.run(tmp_path, quick=True) == 0
    assert "torch group skipped" in capsys.readouterr().out and not list(tmp_path.iterdir())


@pytest.mark.headers  # (the stub is built from the pinned headers)
def test_the_launch_group_measures_the_floor_beside_pygraphrt_on_the_stub(stub_cudart, tmp_path):  # noqa: F811
    """The launch group's ABI-mode child (benchmarks.run --child-mode abi --quick) on the
    do-nothing libcudart of benchmarks/: the floor contender's figures come out beside pygraphrt's
    add_empty, add_memset and (a wrapped fake kernel) add_kernel, and the F ratios from them."""
    import os
    import subprocess
    import sys

    import benchmarks.run as run

    repo = Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYGRAPHRT_BACKEND="cuda", PYGRAPHRT_CUDART=str(stub_cudart), PYGRAPHRT_FAST="0",
               PYGRAPHRT_BREAKDOWN_STUB="1", PYTHONPATH=os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-m", "benchmarks.run", str(tmp_path), "--child-mode", "abi", "--quick"],
                       capture_output=True, text=True, env=env, cwd=str(repo), timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads((tmp_path / ".figures-abi.json").read_text())
    assert data["mode"].startswith("abi")
    figs = {f"{f['name']} [abi]": Figure(f["group"], f["name"], f["trials_us"]) for f in data["figures"]}
    for what, api, shapes in (("add_empty", "cudaGraphAddEmptyNode", ("chain", "fanout")),
                              ("add_memset", "cudaGraphAddMemsetNode", ("chain", "fanout")),
                              ("add_kernel", "cudaGraphAddKernelNode", ("chain",))):
        for shape in shapes:
            for name in (f"pygraphrt {what} ({shape}) [abi]", f"floor {api} ({shape}) [abi]",
                         f"raw cffi {api} ({shape}) [abi]"):
                assert len(figs[name].trials_us) == 3 and figs[name].median > 0, name
    names = {r.name for r in run.target_ratios(figs)}
    assert {"abi:Fa", "abi:Faf", "abi:Fm", "abi:Fmf", "abi:Fk"} <= names
