"""Per-call cost breakdown: what pygraphrt's Python layer adds on top of the raw call, per mode.

    python -m benchmarks.breakdown                 # no GPU needed: a do-nothing libcudart stub
    python -m benchmarks.breakdown --backend gpu   # the machine's runtime and GPU
    options: --modes abi,api  --quick  --profile  --json OUT.json

For each call path (``abi``: cffi ABI mode through libffi, ``PYGRAPHRT_FAST=0``; ``api``:
the compiled fast path, ``PYGRAPHRT_FAST=1``) a fresh interpreter times, per call:
exec.launch, stream.is_capturing, graph.add_empty (chain and fan-out), graph.add_memset (also with
``device=`` naming the current device), graph.add_kernel,
graph.add_nodes (bulk, per node), each next to the raw ``lib.<symbol>`` call of the same
mode with prepared arguments, and stream.launch of a tiny typed kernel next to the driver's
``cuLaunchKernel`` with prepared arguments (through libffi in ABI mode, through the compiled
``_pgr_launch_packed`` in API mode); "layer" is the difference.  The chain adds are timed
once more with the cyclic collector paused: each node the layer keeps is an object the
collector tracks, and the difference is the collector's share.  Cold start: import, backend
selection (the runtime's modules, then ``Backend.load_ms``: library search, dlopen and
runtime version, binding, driver version, vendor tables), the first device call -- each in
fresh interpreters, byte-compiled first as pip installs it -- and, apart, the library
search a user without ``PYGRAPHRT_CUDART`` gets (whether cuda-pathfinder was imported).
With the stub (``benchmarks/stub_cudart.c``, built against the pinned
headers) the raw call costs only the call mechanism, so the figures isolate Python
overhead; on a GPU they are the whole thing.  ``--profile`` adds cProfile's top entries.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MODES = {"abi": "0", "api": "1"}


def build_stub(out_dir: Path) -> Path:
    """Compile benchmarks/stub_cudart.c against the pinned CUDA 13 headers."""
    sys.path.insert(0, str(REPO))
    from bindgen.fast import have_compiler
    from bindgen.headersets import HEADER_SETS, fetch, include_roots

    cc = have_compiler()
    if cc is None:
        raise RuntimeError("no C compiler found (cc, gcc, clang or $CC) to build benchmarks/stub_cudart.c")
    hs = HEADER_SETS["cuda13"]
    fetch(list(hs.fetch_keys))
    incs = [a for root in include_roots(hs) for a in ("-I", str(root))]
    lib = out_dir / "libcudart.so.13"
    subprocess.run([cc, "-O2", "-shared", "-fPIC", *incs, "-o", str(lib), str(HERE / "stub_cudart.c")],
                   check=True)
    return lib


# ------------------------------------------------------------------ child: one mode
def _median_us(fn, n: int, trials: int) -> float:
    import time

    fn(max(n // 10, 1))  # warm-up
    out = []
    for _ in range(trials):
        t0 = time.perf_counter_ns()
        fn(n)
        out.append((time.perf_counter_ns() - t0) / 1e3 / n)
    return statistics.median(out)


def child(quick: bool, profile: bool) -> dict:
    import gc

    import pygraphrt as rt
    from pygraphrt import lowlevel

    b = lowlevel.backend_object()
    ffi, lib, P = b.ffi, b.lib, b.ops.prefix
    n, trials = (2000, 5) if quick else (20000, 11)
    nodes = 2000 if quick else 10000
    res: dict[str, dict[str, float]] = {}
    py_fns = {}

    s = rt.Stream()
    g = rt.Graph()
    g.add_empty()
    exe = g.instantiate()
    h, sh = exe.handle, s.handle
    raw_launch = getattr(lib, f"{P}GraphLaunch")

    def raw_l(k):
        for _ in range(k):
            raw_launch(h, sh)

    def py_l(k):
        launch = exe.launch
        for _ in range(k):
            launch(s)

    res["exec.launch"] = {"raw": _median_us(raw_l, n, trials), "py": _median_us(py_l, n, trials)}
    s.synchronize()
    py_fns["exec.launch"] = py_l

    st = ffi.new(f"enum {P}StreamCaptureStatus *")
    is_cap = getattr(lib, f"{P}StreamIsCapturing")

    def raw_c(k):
        for _ in range(k):
            is_cap(sh, st)

    def py_c(k):
        for _ in range(k):
            s.is_capturing

    res["stream.is_capturing"] = {"raw": _median_us(raw_c, n, trials), "py": _median_us(py_c, n, trials)}
    py_fns["stream.is_capturing"] = py_c

    add_empty = getattr(lib, f"{P}GraphAddEmptyNode")
    add_memset = getattr(lib, f"{P}GraphAddMemsetNode")
    buf = None if os.environ.get("PYGRAPHRT_BREAKDOWN_STUB") == "1" else rt.malloc(1 << 12)
    dst = buf.ptr if buf is not None else 0x10000
    mp = ffi.new(f"{b.ops.memset_params_type} *")
    mp.dst, mp.value, mp.elementSize, mp.width, mp.height, mp.pitch = ffi.cast("void *", dst), 0, 1, 256, 1, 0

    def timed_build(shape: str, which: str, kind: str) -> float:
        import time

        gg = rt.Graph()
        root = gg.add_empty()
        per = []
        for _ in range(3 if quick else 5):
            if which == "raw":
                out = ffi.new(f"{P}GraphNode_t *")
                deps = ffi.new(f"{P}GraphNode_t[1]", [root.handle])
                gh = gg.handle
                t0 = time.perf_counter_ns()
                if kind == "empty":
                    for _ in range(nodes):
                        if add_empty(out, gh, deps, 1):
                            raise RuntimeError("add failed")
                        if shape == "chain":
                            deps[0] = out[0]
                else:
                    for _ in range(nodes):
                        if add_memset(out, gh, deps, 1, mp):
                            raise RuntimeError("add failed")
                        if shape == "chain":
                            deps[0] = out[0]
                per.append((time.perf_counter_ns() - t0) / 1e3 / nodes)
            elif which in ("py", "py-nogc", "py-device"):
                prev = root
                paused = which == "py-nogc" and gc.isenabled()
                if paused:  # the same loop without the cyclic collector's share
                    gc.disable()
                t0 = time.perf_counter_ns()
                if which == "py-device":  # device= naming the current device (no switch)
                    add = gg.add_memset
                    for _ in range(nodes):
                        prev = add(dst, 0, 256, dependencies=[root if shape == "fanout" else prev], device=0)
                elif kind == "empty":
                    add = gg.add_empty
                    for _ in range(nodes):
                        prev = add(dependencies=[root if shape == "fanout" else prev])
                else:
                    add = gg.add_memset
                    for _ in range(nodes):
                        prev = add(dst, 0, 256, dependencies=[root if shape == "fanout" else prev])
                per.append((time.perf_counter_ns() - t0) / 1e3 / nodes)
                if paused:
                    gc.enable()
            else:  # bulk
                if not hasattr(gg, "add_nodes"):
                    return float("nan")
                specs: list[tuple[str, dict[str, Any], list[int | str]]]
                if kind == "empty":
                    specs = [("empty", {}, [i - 1 if shape == "chain" and i else "root"])
                             for i in range(nodes)]
                else:
                    specs = [("memset", {"dst": dst, "value": 0, "count": 256},
                              [i - 1 if shape == "chain" and i else "root"]) for i in range(nodes)]
                t0 = time.perf_counter_ns()
                gg.add_nodes(specs, names={"root": root})
                per.append((time.perf_counter_ns() - t0) / 1e3 / nodes)
        gg.close()
        return statistics.median(per)

    for kind in ("empty", "memset"):
        for shape in ("chain", "fanout"):
            op = f"graph.add_{kind} ({shape})"
            res[op] = {"raw": timed_build(shape, "raw", kind), "py": timed_build(shape, "py", kind)}
            if shape == "chain":  # every node the layer keeps is an object the collector tracks
                res[f"{op}, collector paused"] = {"raw": res[op]["raw"], "py": timed_build(shape, "py-nogc", kind)}
            if kind == "memset" and shape == "chain":  # what device= costs a one-device build
                res[f"{op}, device=<current>"] = {"raw": res[op]["raw"], "py": timed_build(shape, "py-device", kind)}
            bulk = timed_build(shape, "bulk", kind)
            if bulk == bulk:  # not NaN
                res[f"graph.add_nodes [{kind}] ({shape})"] = {"raw": res[op]["raw"], "py": bulk}

    res["graph.add_kernel (chain)"] = _kernel_node_row(rt, b, dst, nodes, 3 if quick else 5)
    res["stream.launch (tiny kernel)"], py_fns["stream.launch (tiny kernel)"] = \
        _launch_row(rt, b, s, n, trials)

    if profile:
        import cProfile
        import io
        import pstats

        gg = rt.Graph()
        root = gg.add_empty()
        py_fns["graph.add_empty (fanout)"] = lambda k: [gg.add_empty(dependencies=[root]) for _ in range(k)]
        py_fns["graph.add_memset (fanout)"] = lambda k: [gg.add_memset(dst, 0, 256, dependencies=[root])
                                                         for _ in range(k)]
        for op, fn in py_fns.items():
            pr = cProfile.Profile()
            pr.enable()
            fn(min(n, 5000))
            pr.disable()
            text = io.StringIO()
            pstats.Stats(pr, stream=text).sort_stats("tottime").print_stats(8)
            print(f"---- cProfile: {op} ({b.ffi_mode.split()[0]})", file=sys.stderr)
            print("\n".join(l for l in text.getvalue().splitlines()[4:] if l.strip()), file=sys.stderr)
    if buf is not None:
        buf.close()
    exe.close()
    g.close()
    s.close()
    return {"mode": b.ffi_mode, "library": b.path, "ops": res}


def _tiny_kernel(rt):
    """The benchmarks' tiny kernel: on the stub a fake ``cudaKernel_t`` wrapped with its
    signature, on a GPU compiled with NVRTC."""
    if os.environ.get("PYGRAPHRT_BREAKDOWN_STUB") == "1":
        return rt.Kernel.wrap(0x5000, signature="float *x", kind="kernel", name="tiny")
    return rt.Program('extern "C" __global__ void tiny(float *x) { if (threadIdx.x == 0) x[0] += 1.0f; }'
                      ).kernel("tiny", signature="float *x")


def _kernel_node_row(rt, b, dst: int, nodes: int, trials: int) -> dict:
    """A chain of kernel nodes: ``graph.add_kernel(k, 1, 32, (dst,))`` against the raw
    ``GraphAddKernelNode`` given one parameter struct made once."""
    import time

    ffi, P, ops = b.ffi, b.ops.prefix, b.ops
    k = _tiny_kernel(rt)
    cell = ffi.new("void *[1]", [ffi.cast("void *", dst)])
    argv = ffi.new("void *[1]", [cell])
    params = ops.kernel_node_struct(k.handle, (1, 1, 1), (32, 1, 1), 0, argv)
    add = getattr(b.lib, f"{P}GraphAddKernelNode")
    raw, py = [], []
    for _ in range(trials):
        gg = rt.Graph()
        prev = root = gg.add_empty()
        out = ffi.new(f"{P}GraphNode_t *")
        deps = ffi.new(f"{P}GraphNode_t[1]", [root.handle])
        gh = gg.handle
        t0 = time.perf_counter_ns()
        for _ in range(nodes):
            if add(out, gh, deps, 1, params):
                raise RuntimeError("GraphAddKernelNode failed")
            deps[0] = out[0]
        raw.append((time.perf_counter_ns() - t0) / 1e3 / nodes)
        t0 = time.perf_counter_ns()
        for _ in range(nodes):
            prev = gg.add_kernel(k, 1, 32, (dst,), dependencies=[prev])
        py.append((time.perf_counter_ns() - t0) / 1e3 / nodes)
        gg.close()
    return {"raw": statistics.median(raw), "py": statistics.median(py)}


def _launch_row(rt, b, s, n: int, trials: int):
    """pygraphrt's checked, typed ``stream.launch(k, 1, 32, buf)`` of a library kernel (as
    ``rt.Program(...).kernel("tiny", signature="float *x")`` gives) against the raw driver call:
    ``cuLaunchKernel`` on the kernel's CUfunction with prepared arguments, called the cheapest way
    the mode has: through libffi (ABI mode), or by the compiled ``_pgr_launch_packed`` with a
    prepared buffer (API mode).  On the stub the kernel is a fake ``cudaKernel_t``
    wrapped with its signature; on a GPU it is compiled with NVRTC."""
    ffi = b.ffi
    k = _tiny_kernel(rt)
    buf = rt.malloc(4)
    launch = s.launch
    launch(k, 1, 32, buf)  # resolves the kernel's function and checks the signature once
    ops = b.ops
    c_launch = ops._driver_fn("cuLaunchKernel", "int (*)(void *, unsigned int, unsigned int, unsigned int, "
                              "unsigned int, unsigned int, unsigned int, unsigned int, void *, "
                              "void **, void **)")
    out = ffi.new("void **")
    rc = ops._driver_fn("cuKernelGetFunction", "int (*)(void **, void *)")(out, k.handle)
    if rc:
        raise RuntimeError(f"cuKernelGetFunction: {rc}")
    func, sh, null = out[0], s.handle, ffi.NULL
    cell = ffi.new("void *[1]", [ffi.cast("void *", buf.ptr)])
    argv = ffi.new("void *[1]", [cell])
    try:  # the compiled mode's one-call launch (bindgen.fast), on the same function
        packed_launch = b.lib._pgr_launch_packed
    except (AttributeError, ffi.error):
        packed_launch = None
    if packed_launch is not None:
        import struct

        state = ffi.new("uintptr_t[]", [int(ffi.cast("uintptr_t", c_launch)), int(ffi.cast("uintptr_t", func)),
                                        1, 0])
        packed = struct.pack("<7I4xQ", 1, 1, 1, 32, 1, 1, 0, buf.ptr)

        def raw(m):
            for _ in range(m):
                packed_launch(state, sh, packed)
    else:
        def raw(m):
            for _ in range(m):
                c_launch(func, 1, 1, 1, 32, 1, 1, 0, sh, argv, null)

    def py(m):
        for _ in range(m):
            launch(k, 1, 32, buf)

    row = {"raw": _median_us(raw, n, trials), "py": _median_us(py, n, trials)}
    s.synchronize()
    return row, py


COLD = ("import time; t0 = time.perf_counter(); import pygraphrt; t1 = time.perf_counter(); "
        "from pygraphrt import _runtime; t1b = time.perf_counter(); b = _runtime.active(); "
        "t2 = time.perf_counter(); pygraphrt.Stream(); t3 = time.perf_counter(); import json; "
        "print(json.dumps({'import pygraphrt': (t1 - t0) * 1e3, 'backend load': (t2 - t1) * 1e3, "
        "'  runtime modules': (t1b - t1) * 1e3, **{'  ' + k: v for k, v in getattr(b, 'load_ms', {}).items()}, "
        "'first device call': (t3 - t2) * 1e3}))")
# The library search as a user without PYGRAPHRT_CUDART has it (this machine's libcudart, if any):
# cuda-pathfinder's answer, found without importing it where that is certain.
SEARCH = ("import time, sys; t0 = time.perf_counter(); from pygraphrt import _runtime; t1 = time.perf_counter(); "
          "c = _runtime._cuda_candidates(); t2 = time.perf_counter(); import json; "
          "print(json.dumps({'library search, no override': (t2 - t1) * 1e3, "
          "'  found by': c[0][1], '  cuda-pathfinder imported': 'cuda.pathfinder' in sys.modules}))")


def cold(env: dict[str, str], runs: int) -> dict[str, float]:
    rows: list[dict] = []
    search_env = {k: v for k, v in env.items() if k != "PYGRAPHRT_CUDART"}
    for _ in range(runs):
        for prog, e in ((COLD, env), (SEARCH, search_env)):
            r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, env=e, cwd=str(REPO))
            if r.returncode != 0:
                return {"error": r.stderr[-300:]}  # type: ignore[dict-item]
            rows.append(json.loads(r.stdout.strip().splitlines()[-1]))
    keys = list(dict.fromkeys(k for r in rows for k in r))
    out: dict = {}
    for k in keys:
        vals = [r[k] for r in rows if k in r]
        out[k] = statistics.median(vals) if isinstance(vals[0], float) else vals[-1]
    return out


# ------------------------------------------------------------------ parent
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.breakdown", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", choices=["stub", "gpu"], default="stub")
    ap.add_argument("--modes", default="abi,api")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(child(a.quick, a.profile)))
        return 0
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO)] + sys.path))
    # Cold start as installed: pip byte-compiles; without it every fresh interpreter would
    # recompile the generated binding (tens of ms) where PYTHONDONTWRITEBYTECODE is set.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "pygraphrt")],
                   stdout=subprocess.DEVNULL, check=False)
    with tempfile.TemporaryDirectory() as tmp:
        if a.backend == "stub":
            env.update(PYGRAPHRT_BACKEND="cuda", PYGRAPHRT_CUDART=str(build_stub(Path(tmp))),
                       PYGRAPHRT_BREAKDOWN_STUB="1")
        results = {}
        for mode in a.modes.split(","):
            menv = dict(env, PYGRAPHRT_FAST=MODES[mode])
            r = subprocess.run([sys.executable, "-m", "benchmarks.breakdown", "--child"]
                               + (["--quick"] if a.quick else []) + (["--profile"] if a.profile else []),
                               capture_output=True, text=True, env=menv, cwd=str(REPO))
            if a.profile:
                print(r.stderr, file=sys.stderr)
            if r.returncode != 0:
                print(f"{mode}: failed\n{r.stderr[-3000:]}", file=sys.stderr)
                continue
            results[mode] = json.loads(r.stdout.strip().splitlines()[-1])
            results[mode]["cold_ms"] = cold(menv, 3 if a.quick else 7)
    print(report(results, a.backend))
    if a.json:
        a.json.write_text(json.dumps({"backend": a.backend, "results": results}, indent=1))
    return 0 if results else 1


def report(results: dict, backend: str) -> str:
    modes = list(results)
    lines = [f"per-call cost breakdown ({'do-nothing stub libcudart: Python overhead only' if backend == 'stub' else 'GPU'}), "
             "microseconds per call (median)"]
    for m in modes:
        lines.append(f"  {m}: {results[m]['mode']}")
    head = f"{'operation':44s}" + "".join(f" {m + ' raw':>9s} {m + ' py':>9s} {m + ' layer':>9s}" for m in modes)
    lines += ["", head, "-" * len(head)]
    ops = list(results[modes[0]]["ops"]) if modes else []
    for op in ops:
        row = f"{op:44s}"
        for m in modes:
            v = results[m]["ops"].get(op)
            row += (f" {v['raw']:9.3f} {v['py']:9.3f} {v['py'] - v['raw']:9.3f}" if v else " " * 30)
        lines.append(row)
    lines += ["", f"{'cold start (ms, median)':44s}" + "".join(f" {m:>9s}" for m in modes)]
    keys = list(dict.fromkeys(k for m in modes for k in results[m]["cold_ms"]))
    for k in keys:
        vals = [results[m]["cold_ms"].get(k, float("nan")) for m in modes]
        if all(isinstance(v, float) for v in vals):
            lines.append(f"{k:44s}" + "".join(f" {v:9.2f}" for v in vals))
        else:
            lines.append(f"{k}: {vals[0]}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
