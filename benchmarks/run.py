"""pygraphrt benchmarks on a GPU machine: ``python -m benchmarks.run OUTDIR [--quick]``.

All measurements in one process where the language allows (the import figures
need fresh interpreters; the C baseline is its own program).  Each figure is the
median of repeated trials with min/max; ratios are taken pair by pair in this run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

from .stats import Figure, chart, interleaved, ratio, table, time_per_item, to_json

HERE = Path(__file__).resolve().parent


def bench_pygraphrt(figs: dict[str, Figure], q: bool) -> None:
    import pygraphrt as rt
    from pygraphrt import lowlevel

    ffi, lib = lowlevel.ffi, lowlevel.lib
    s = rt.Stream()
    trials = 5 if q else 21
    calls = 100 if q else 256  # few enough launches that the launch queue never fills

    g = rt.Graph()
    g.add_empty()
    exe = g.instantiate()
    h, sh = exe.handle, s.handle
    raw_launch = lib.cudaGraphLaunch

    def py_launch(k: int) -> None:
        launch = exe.launch
        for _ in range(k):
            launch(s)

    def raw(k: int) -> None:
        for _ in range(k):
            raw_launch(h, sh)

    sync = s.synchronize
    add = lambda name, group, vals, note="": figs.__setitem__(name, Figure(group, name, vals, note=note))  # noqa: E731
    empty = {"pygraphrt launch (empty)": py_launch, "raw cffi lib.cudaGraphLaunch (empty)": raw}

    try:
        from cuda.bindings import runtime as cbr

        ce = cbr.cudaGraphExec_t(int(exe))
        cs = cbr.cudaStream_t(int(s))
        cb_launch = cbr.cudaGraphLaunch
        cb_is_capturing = cbr.cudaStreamIsCapturing

        def cb(k: int) -> None:
            for _ in range(k):
                cb_launch(ce, cs)

        def cb_cap(k: int) -> None:
            for _ in range(k):
                cb_is_capturing(cs)

        empty["cuda.bindings cudaGraphLaunch (empty)"] = cb
    except ImportError:
        cbr = None
        print("cuda.bindings not installed: its figures are skipped")
    for name, vals in interleaved(empty, calls, trials, between=sync).items():
        add(name, "launch overhead", vals)

    # one small kernel, captured from PyTorch (the runtime is shared with torch on CUDA 13)
    try:
        import torch

        ts = torch.cuda.Stream()
        ws = rt.Stream.wrap(ts)
        x = torch.zeros(32, device="cuda")
        torch.cuda.synchronize()
        with torch.cuda.stream(ts):
            with ws.capture(mode="relaxed") as cap:
                x.add_(1)
        kexe = cap.graph.instantiate()

        def py_klaunch(k: int) -> None:
            launch = kexe.launch
            for _ in range(k):
                launch(ws)

        kh, ksh = kexe.handle, ws.handle

        def raw_k(k: int) -> None:
            for _ in range(k):
                raw_launch(kh, ksh)

        kern = {"pygraphrt launch (kernel)": py_klaunch, "raw cffi lib.cudaGraphLaunch (kernel)": raw_k}
        if cbr is not None:
            cke, cks = cbr.cudaGraphExec_t(int(kexe)), cbr.cudaStream_t(int(ws))

            def cb_k(k: int) -> None:
                for _ in range(k):
                    cb_launch(cke, cks)

            kern["cuda.bindings cudaGraphLaunch (kernel)"] = cb_k
        for name, vals in interleaved(kern, calls, trials, between=ws.synchronize).items():
            add(name, "launch overhead", vals)

        # graph vs stream: 1000 tiny kernels
        n_k = 200 if q else 1000

        def eager(k: int) -> None:
            with torch.cuda.stream(ts):
                for _ in range(k):
                    x.add_(1)
            ts.synchronize()

        with torch.cuda.stream(ts):
            with ws.capture(mode="relaxed") as cap1000:
                for _ in range(n_k):
                    x.add_(1)
        exe1000 = cap1000.graph.instantiate()

        def replay(k: int) -> None:
            exe1000.launch(ws)
            ws.synchronize()

        add("torch eager, per kernel", "graph vs stream", time_per_item(eager, n_k, 3 if q else 5))
        add("pygraphrt graph replay, per kernel", "graph vs stream", time_per_item(replay, n_k, 3 if q else 5))
    except ImportError:
        print("torch not installed: kernel launch and graph-vs-stream figures are skipped")

    # trivial call
    st = ffi.new("enum cudaStreamCaptureStatus *")
    is_cap = lib.cudaStreamIsCapturing
    n_triv = 2000 if q else 20000

    def py_cap(k: int) -> None:
        for _ in range(k):
            s.is_capturing

    def raw_cap(k: int) -> None:
        for _ in range(k):
            is_cap(sh, st)

    triv = {"pygraphrt stream.is_capturing": py_cap, "raw cffi lib.cudaStreamIsCapturing": raw_cap}
    if cbr is not None:
        triv["cuda.bindings cudaStreamIsCapturing"] = cb_cap
    for name, vals in interleaved(triv, n_triv, trials).items():
        add(name, "trivial call", vals)

    # build throughput and instantiate
    nodes = 1000 if q else 10000
    for shape in ("chain", "fanout"):
        build_py, inst_py, build_raw, build_cb = [], [], [], []
        for _ in range(3 if q else 5):
            gg = rt.Graph()
            root = gg.add_empty()
            prev = root
            t0 = _now()
            for _ in range(nodes):
                prev = gg.add_empty(dependencies=[root if shape == "fanout" else prev])
            t1 = _now()
            ge = gg.instantiate()
            t2 = _now()
            build_py.append((t1 - t0) / nodes)
            inst_py.append((t2 - t1) / nodes)
            ge.close(), gg.close()

            graph = ffi.new("cudaGraph_t *")
            lib.cudaGraphCreate(graph, 0)
            out = ffi.new("cudaGraphNode_t *")
            lib.cudaGraphAddEmptyNode(out, graph[0], ffi.NULL, 0)
            deps = ffi.new("cudaGraphNode_t[1]", [out[0]])
            add_empty = lib.cudaGraphAddEmptyNode
            gh = graph[0]
            t0 = _now()
            for _ in range(nodes):
                if add_empty(out, gh, deps, 1):
                    raise RuntimeError("cudaGraphAddEmptyNode failed")
                if shape == "chain":
                    deps[0] = out[0]
            build_raw.append((_now() - t0) / nodes)
            lib.cudaGraphDestroy(gh)

            if cbr is not None:
                err, cg = cbr.cudaGraphCreate(0)
                err, croot = cbr.cudaGraphAddEmptyNode(cg, None, 0)
                cprev = croot
                t0 = _now()
                for _ in range(nodes):
                    err, nn = cbr.cudaGraphAddEmptyNode(cg, [croot if shape == "fanout" else cprev], 1)
                    cprev = nn
                build_cb.append((_now() - t0) / nodes)
                cbr.cudaGraphDestroy(cg)
        add(f"pygraphrt add_empty ({shape})", "build per node", build_py)
        add(f"raw cffi cudaGraphAddEmptyNode ({shape})", "build per node", build_raw)
        if build_cb:
            add(f"cuda.bindings cudaGraphAddEmptyNode ({shape})", "build per node", build_cb)
        add(f"pygraphrt instantiate ({shape})", "instantiate per node", inst_py)
    s.close()


TINY_SOURCE = 'extern "C" __global__ void tiny(float *x) { if (threadIdx.x == 0) x[0] += 1.0f; }'


def bench_kernel_launch(figs: dict[str, Figure], q: bool) -> None:
    """Launch one tiny kernel on a stream: pygraphrt's checked, typed launch against
    cuda.bindings' cuLaunchKernel (arguments given as values + ctypes types, packed per call)."""
    import pygraphrt as rt

    trials, calls = (5, 100) if q else (21, 256)
    s = rt.Stream()
    buf = rt.malloc(4)
    k = rt.Program(TINY_SOURCE).kernel("tiny", signature="float *x")
    launch = s.launch

    def py(n: int) -> None:
        for _ in range(n):
            launch(k, 1, 32, buf)

    cases = {"pygraphrt stream.launch (tiny kernel)": py}
    try:
        import ctypes

        from cuda.bindings import driver as cbd

        err, func = cbd.cuKernelGetFunction(cbd.CUkernel(int(k)))
        if err != cbd.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"cuKernelGetFunction: {err}")
        cs, ptr = cbd.CUstream(int(s)), buf.ptr
        cu_launch = cbd.cuLaunchKernel

        def cb(n: int) -> None:
            for _ in range(n):
                cu_launch(func, 1, 1, 1, 32, 1, 1, 0, cs, ((ptr,), (ctypes.c_void_p,)), 0)

        cases["cuda.bindings cuLaunchKernel (tiny kernel)"] = cb
    except (ImportError, RuntimeError) as exc:
        print(f"cuda.bindings kernel launch skipped: {exc}")
    for name, vals in interleaved(cases, calls, trials, between=s.synchronize).items():
        figs[name] = Figure("kernel launch on a stream", name, vals)
    s.synchronize()
    # Every launch ran: the kernel counts them (warm-up round included).
    got = struct.unpack("<f", buf.to_bytes())[0]
    expected = float(calls * (trials + 1) * len(cases))
    if got != expected:
        raise RuntimeError(f"tiny kernel ran {got} times, expected {expected}")
    s.close()


def _now() -> float:
    import time

    return time.perf_counter_ns() / 1e3


def bench_c(figs: dict[str, Figure], workdir: Path) -> None:
    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None)
    if nvcc is None:
        print("nvcc not found: the C++ baseline is skipped")
        return
    exe = workdir / "launch_bench"
    r = subprocess.run([nvcc, "-O2", "-o", str(exe), str(HERE / "launch_bench.cu")], capture_output=True, text=True)
    if r.returncode != 0:
        print("nvcc failed; the C++ baseline is skipped:\n" + r.stderr[-2000:])
        return
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        print("C++ baseline failed:\n" + out.stderr[-2000:])
        return
    names = {"launch_empty": ("C cudaGraphLaunch (empty)", "launch overhead"),
             "launch_kernel": ("C cudaGraphLaunch (kernel)", "launch overhead"),
             "is_capturing": ("C cudaStreamIsCapturing", "trivial call"),
             "build_chain": ("C cudaGraphAddEmptyNode (chain)", "build per node"),
             "build_fanout": ("C cudaGraphAddEmptyNode (fanout)", "build per node"),
             "instantiate_chain": ("C instantiate (chain)", "instantiate per node"),
             "instantiate_fanout": ("C instantiate (fanout)", "instantiate per node"),
             "kernels_stream": ("C stream launch, per kernel", "graph vs stream"),
             "kernels_graph": ("C graph replay, per kernel", "graph vs stream"),
             "stream_launch_tiny": ("C stream launch (tiny kernel)", "kernel launch on a stream")}
    for line in out.stdout.splitlines():
        key, med, lo, hi = line.split()
        name, group = names[key]
        figs[name] = Figure(group, name, [float(lo), float(med), float(hi)], note="median/min/max of the C run")


IMPORT_PROG = {  # label: (import statement, backend selection + first device call)
    "pygraphrt": ("import pygraphrt", "pygraphrt.Stream()"),
    "cuda.bindings": ("import cuda.bindings.runtime", "cuda.bindings.runtime.cudaStreamCreate()"),
}


def bench_import(figs: dict[str, Figure], runs: int) -> None:
    """Each run in a fresh interpreter: import time, then the first device call."""
    for label, (imp, first) in IMPORT_PROG.items():
        prog = (f"import time; t0 = time.perf_counter(); {imp}; t1 = time.perf_counter(); "
                f"{first}; t2 = time.perf_counter(); print((t1 - t0) * 1e3, (t2 - t1) * 1e3)")
        imports, firsts = [], []
        for _ in range(runs):
            r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True,
                               env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
            if r.returncode != 0:
                print(f"{label} import run failed: {r.stderr[-500:]}")
                break
            a, b = map(float, r.stdout.split())
            imports.append(a)
            firsts.append(b)
        if imports:
            name = f"import {imp.split()[-1]}"
            figs[name] = Figure("import and first call", name, imports, unit="ms")
            name = f"{label}: backend + first device call"
            figs[name] = Figure("import and first call", name, firsts, unit="ms")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="scripts/bench")
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--quick", action="store_true", help="small sizes (for a smoke run)")
    a = ap.parse_args(argv)
    a.outdir.mkdir(parents=True, exist_ok=True)
    figs: dict[str, Figure] = {}
    bench_pygraphrt(figs, a.quick)
    bench_kernel_launch(figs, a.quick)
    with tempfile.TemporaryDirectory() as tmp:
        bench_c(figs, Path(tmp))
    bench_import(figs, 3 if a.quick else 7)
    R = [ratio(figs, "P1", "pygraphrt launch (empty)", "cuda.bindings cudaGraphLaunch (empty)", "<= 1.0", limit=1.0),
         ratio(figs, "P1c", "pygraphrt launch (empty)", "C cudaGraphLaunch (empty)", "<= 2.5", limit=2.5),
         ratio(figs, "P1k", "pygraphrt launch (kernel)", "cuda.bindings cudaGraphLaunch (kernel)", "<= 1.0", limit=1.0),
         ratio(figs, "P5", "pygraphrt stream.launch (tiny kernel)", "cuda.bindings cuLaunchKernel (tiny kernel)", "<= 1.2", limit=1.2),
         ratio(figs, "P5c", "pygraphrt stream.launch (tiny kernel)", "C stream launch (tiny kernel)", "report", limit=None),
         ratio(figs, "P2", "pygraphrt add_empty (chain)", "cuda.bindings cudaGraphAddEmptyNode (chain)", "<= 1.2", limit=1.2),
         ratio(figs, "P2f", "pygraphrt add_empty (fanout)", "cuda.bindings cudaGraphAddEmptyNode (fanout)", "<= 1.2", limit=1.2),
         ratio(figs, "P3", "torch eager, per kernel", "pygraphrt graph replay, per kernel", ">= 10", at_least=10.0),
         ratio(figs, "P4", "import pygraphrt", "import cuda.bindings.runtime", "<= 0.5", limit=0.5),
         ratio(figs, "P4b", "pygraphrt: backend + first device call", "cuda.bindings: backend + first device call", "<= 1.1", limit=1.1)]
    ratios = [r for r in R if r is not None]
    ordered = sorted(figs.values(), key=lambda f: (f.group, f.name))
    meta = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "python": platform.python_version(), "quick": a.quick}
    try:
        import pygraphrt as rt

        info = rt.backend()
        meta.update(gpu=rt.Device(0).info().name, runtime=info.runtime_version_str,
                    driver=info.driver_version, binding=info.binding, library=info.library_path)
    except Exception as exc:  # pragma: no cover
        meta["gpu"] = f"unknown ({exc})"
    text = table(ordered, ratios)
    print(text)
    stem = f"{meta['date'][:10]}-{str(meta.get('gpu', 'gpu')).replace(' ', '-')}"
    (a.outdir / f"{stem}.json").write_text(to_json(meta, ordered, ratios))
    (a.outdir / f"{stem}.txt").write_text(text + "\n")
    if chart(ordered, str(a.outdir / f"{stem}.png")):
        print(f"chart: {a.outdir / (stem + '.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

