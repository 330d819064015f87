"""pygraphrt benchmarks on a GPU machine: ``python -m benchmarks.run OUTDIR [--quick] [--modes abi,api]``
(``--group collectives``: the NCCL group of ``benchmarks/collectives.py``, 2 GPUs; ``--group torch``:
the decode loop of ``benchmarks/torch_loop.py``, torch on one GPU).

Both call modes side by side: the in-process measurements run once per mode, each in
its own interpreter (``abi``: PYGRAPHRT_FAST=0, cffi ABI mode; ``api``: PYGRAPHRT_FAST=1,
the compiled fast path from ``python -m bindgen build-fast``), with cuda.bindings
measured again in each, so every ratio pairs figures taken in one process (the import
figures need fresh interpreters).  The C baseline of the ratios against C is measured in
that process too (``benchmarks/c_loops``); ``benchmarks/launch_bench.cu``, a separate C++
program, is reported beside it.  Each figure is the median of repeated trials with min/max;
ratios are taken pair by pair in this run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import struct
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

from . import c_loops
from .stats import (Figure, chart, combine_ratios, interleaved, pool_figures, ratio, rotated, table,
                    time_per_item, to_json)

HERE = Path(__file__).resolve().parent


C_IN = "C in-process"  # the C loops' figures (benchmarks/c_loops), timed beside pygraphrt's


def c_ref(figs: dict[str, Figure], what: str, tag: str) -> str:
    """The name of the C figure of ``what`` (e.g. ``cudaGraphLaunch (empty)``) a ratio against
    C divides by: the in-process loop of the mode's run (``tag``), else the C++ program's."""
    inproc = f"{C_IN} {what}{tag}"
    return inproc if inproc in figs else f"C {what}"


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
    cl = c_loops.load(rt.backend().library_path)
    if cl is not None:
        empty[f"{C_IN} cudaGraphLaunch (empty)"] = lambda k: cl.launch(int(exe), int(s), k)

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
        if cl is not None:
            kern[f"{C_IN} cudaGraphLaunch (kernel)"] = lambda k: cl.launch(int(kexe), int(ws), k)
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
    if cl is not None:
        triv[f"{C_IN} cudaStreamIsCapturing"] = lambda k: cl.is_capturing(int(s), k)
    if cbr is not None:
        triv["cuda.bindings cudaStreamIsCapturing"] = cb_cap
    for name, vals in interleaved(triv, n_triv, trials).items():
        add(name, "trivial call", vals)

    # build throughput and instantiate: one graph per contender and trial, the order rotating
    nodes = build_nodes(q)
    mbuf = rt.malloc(1 << 12)  # what the memset nodes set (they are never launched)
    for shape in ("chain", "fanout"):
        contenders = {f"pygraphrt add_empty ({shape})": lambda: _py_adds(rt, shape, nodes),
                      f"pygraphrt add_nodes, bulk ({shape})": lambda: _py_bulk(rt, shape, nodes),
                      **_raw_contenders(ffi, lib, cbr, "cudaGraphAddEmptyNode", shape, nodes)}
        if cl is not None:
            contenders[f"{C_IN} cudaGraphAddEmptyNode ({shape})"] = lambda: _c_adds(rt, cl, shape, nodes)
        contenders.update(_memset_contenders(rt, ffi, lib, cbr, mbuf, shape, nodes))
        for name, vals in rotated(contenders, 3 if q else 5, collect=True).items():
            add(name, "instantiate per node" if " instantiate " in name else "build per node", vals)
    s.close()


def build_nodes(quick: bool) -> int:
    """How many nodes each build/instantiate graph has (the C baseline builds the same size)."""
    return 1000 if quick else 10000


def _raw_adds(ffi, lib, api: str, nodes: int, chain: bool, params=None) -> float:
    """Per-node time of ``nodes`` raw cffi calls ``lib.<api>(out, graph, deps, 1[, params])`` into a
    new graph, each node depending on the one before (``chain``) or all on its first, empty node."""
    graph = ffi.new("cudaGraph_t *")
    lib.cudaGraphCreate(graph, 0)
    gh, node = graph[0], ffi.new("cudaGraphNode_t *")
    lib.cudaGraphAddEmptyNode(node, gh, ffi.NULL, 0)
    deps = ffi.new("cudaGraphNode_t[1]", [node[0]])
    add = getattr(lib, api)
    t0 = _now()
    if params is None:  # (two loops: no argument unpacking inside the timed one)
        for _ in range(nodes):
            if add(node, gh, deps, 1):
                raise RuntimeError(f"{api} failed")
            if chain:
                deps[0] = node[0]
    else:
        for _ in range(nodes):
            if add(node, gh, deps, 1, params):
                raise RuntimeError(f"{api} failed")
            if chain:
                deps[0] = node[0]
    per_node = (_now() - t0) / nodes
    lib.cudaGraphDestroy(gh)
    return per_node


class FloorNode:
    """The floor contender's node object: the handle and nothing else (what the least
    wrapper's caller must get back to name the node as a dependency later)."""

    __slots__ = ("handle",)

    def __init__(self, handle) -> None:
        self.handle = handle


def floor_adder(ffi, lib, api: str, params=None):
    """The least a Python wrapper of ``lib.<api>`` must do per node: ``add(graph_handle, deps)``
    (``deps``: a list of one node, as pygraphrt's ``dependencies=`` is given in these loops)
    writes that node's handle into a dependency array made once, calls the raw cffi
    function (``params``: one parameter struct made once, as the raw contender is given), checks
    the result code and returns a :class:`FloorNode` holding the new handle.  No argument
    checks, no node table, nothing kept: the floor pygraphrt's ``add_*`` is set against."""
    fn = getattr(lib, api)
    out = ffi.new("cudaGraphNode_t *")
    deps = ffi.new("cudaGraphNode_t[1]")
    if params is None:
        def add(graph_handle, dependencies):
            deps[0] = dependencies[0].handle
            rc = fn(out, graph_handle, deps, 1)
            if rc:
                raise RuntimeError(f"{api} returned {rc}")
            return FloorNode(out[0])
    else:
        def add(graph_handle, dependencies):
            deps[0] = dependencies[0].handle
            rc = fn(out, graph_handle, deps, 1, params)
            if rc:
                raise RuntimeError(f"{api} returned {rc}")
            return FloorNode(out[0])
    return add


def _floor_adds(ffi, lib, api: str, nodes: int, chain: bool, params=None) -> float:
    """Per-node time of ``nodes`` calls of :func:`floor_adder`'s function into a new graph: the
    graph of :func:`_raw_adds` (a chain, or all on the first, empty node), the loop written as
    pygraphrt's in :func:`_py_adds` (a new one-node list per call)."""
    graph = ffi.new("cudaGraph_t *")
    lib.cudaGraphCreate(graph, 0)
    gh, node = graph[0], ffi.new("cudaGraphNode_t *")
    lib.cudaGraphAddEmptyNode(node, gh, ffi.NULL, 0)
    root = prev = FloorNode(node[0])
    add = floor_adder(ffi, lib, api, params)
    t0 = _now()
    if chain:  # (two loops, as pygraphrt's: no test of the shape inside the timed one)
        for _ in range(nodes):
            prev = add(gh, [prev])
    else:
        for _ in range(nodes):
            prev = add(gh, [root])
    per_node = (_now() - t0) / nodes
    lib.cudaGraphDestroy(gh)
    return per_node


def _raw_contenders(ffi, lib, cbr, api: str, shape: str, nodes: int, raw_params=None, cb_params=None) -> dict:
    """Contenders for :func:`rotated`: one graph of ``nodes`` nodes by ``api`` through raw cffi
    (:func:`_raw_adds`), through the least Python wrapper of that call (:func:`_floor_adds`, the
    ``floor``) and, where installed, through cuda.bindings (:func:`_cuda_bindings_adds`), each
    given its parameter struct."""
    raw, cb = f"raw cffi {api} ({shape})", f"cuda.bindings {api} ({shape})"
    floor = f"floor {api} ({shape})"
    out = {raw: lambda: {raw: _raw_adds(ffi, lib, api, nodes, shape == "chain", raw_params)},
           floor: lambda: {floor: _floor_adds(ffi, lib, api, nodes, shape == "chain", raw_params)}}
    if cbr is not None:
        out[cb] = lambda: {cb: _cuda_bindings_adds(cbr, api, nodes, shape == "chain", cb_params)}
    return out


def _cuda_bindings_adds(cbr, api: str, nodes: int, chain: bool, params=None) -> float:
    """:func:`_raw_adds` through cuda.bindings' runtime module ``cbr``."""
    err, cg = cbr.cudaGraphCreate(0)
    err, root = cbr.cudaGraphAddEmptyNode(cg, None, 0)
    add, prev = getattr(cbr, api), root
    t0 = _now()
    if params is None:
        for _ in range(nodes):
            err, prev = add(cg, [prev if chain else root], 1)
    else:
        for _ in range(nodes):
            err, prev = add(cg, [prev if chain else root], 1, params)
    per_node = (_now() - t0) / nodes
    if err != cbr.cudaError_t.cudaSuccess:
        raise RuntimeError(f"cuda.bindings {api}: {err}")
    cbr.cudaGraphDestroy(cg)
    return per_node


def _py_adds(rt, shape: str, nodes: int) -> dict[str, float]:
    """One graph of ``nodes`` empty nodes from pygraphrt's ``add_empty`` (a chain, or all
    depending on the first node), then instantiated: per-node times of both."""
    gg = rt.Graph()
    root = prev = gg.add_empty()
    add = gg.add_empty
    t0 = _now()
    if shape == "chain":  # (two loops: no test of the shape inside the timed one)
        for _ in range(nodes):
            prev = add(dependencies=[prev])
    else:
        for _ in range(nodes):
            prev = add(dependencies=[root])
    t1 = _now()
    ge = gg.instantiate()
    t2 = _now()
    ge.close(), gg.close()
    return {f"pygraphrt add_empty ({shape})": (t1 - t0) / nodes, f"pygraphrt instantiate ({shape})": (t2 - t1) / nodes}


def _py_bulk(rt, shape: str, nodes: int) -> dict[str, float]:
    """The graph of :func:`_py_adds` in one call (``Graph.add_nodes``); then every node of the
    result read once (a NodeList makes a node's object when its entry is first read: the second
    figure is what a caller who wants all of them pays in all, a report)."""
    gg = rt.Graph()
    root = gg.add_empty()
    specs = [("empty", None, [i - 1 if shape == "chain" and i else "root"]) for i in range(nodes)]
    t0 = _now()
    made = gg.add_nodes(specs, names={"root": root})
    t1 = _now()
    for _ in made:
        pass
    t2 = _now()
    gg.close()
    return {f"pygraphrt add_nodes, bulk ({shape})": (t1 - t0) / nodes,
            f"pygraphrt add_nodes, bulk, every node read ({shape})": (t2 - t0) / nodes}


def _c_adds(rt, cl, shape: str, nodes: int) -> dict[str, float]:
    """The graph of :func:`_py_adds` from the in-process C loops, then instantiated from C."""
    gg = rt.Graph()
    root = gg.add_empty()
    t0 = _now()
    cl.add_empty(int(gg), int(root), nodes, shape == "chain")
    t1 = _now()
    cl.instantiate_and_destroy(int(gg))
    t2 = _now()
    gg.close()
    return {f"{C_IN} cudaGraphAddEmptyNode ({shape})": (t1 - t0) / nodes,
            f"{C_IN} instantiate ({shape})": (t2 - t1) / nodes}


def _memset_contenders(rt, ffi, lib, cbr, mbuf, shape: str, nodes: int) -> dict:
    """One graph of ``nodes`` memset nodes (256 bytes of ``mbuf``) as a chain or a fan-out, per
    contender: pygraphrt's ``add_memset`` (arguments as values, checked per call), the raw cffi
    call and cuda.bindings' ``cudaGraphAddMemsetNode``, both given one parameter struct made
    once (the cheapest way to call them)."""

    def py() -> dict[str, float]:
        gg = rt.Graph()
        root = prev = gg.add_empty()
        add = gg.add_memset
        t0 = _now()
        if shape == "chain":
            for _ in range(nodes):
                prev = add(mbuf, 0, 256, dependencies=[prev])
        else:
            for _ in range(nodes):
                prev = add(mbuf, 0, 256, dependencies=[root])
        per_node = (_now() - t0) / nodes
        gg.close()
        return {f"pygraphrt add_memset ({shape})": per_node}

    p = ffi.new("struct cudaMemsetParams *")
    p.dst, p.value, p.elementSize, p.width, p.height, p.pitch = ffi.cast("void *", mbuf.ptr), 0, 1, 256, 1, 0
    mp = None
    if cbr is not None:
        mp = cbr.cudaMemsetParams()
        mp.dst, mp.value, mp.elementSize, mp.width, mp.height, mp.pitch = mbuf.ptr, 0, 1, 256, 1, 0
    return {f"pygraphrt add_memset ({shape})": py,
            **_raw_contenders(ffi, lib, cbr, "cudaGraphAddMemsetNode", shape, nodes, p, mp)}


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
    func = None  # the kernel as cuda.bindings' CUfunction, where it is installed
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
        func = None
        print(f"cuda.bindings kernel launch skipped: {exc}")
    for name, vals in interleaved(cases, calls, trials, between=s.synchronize).items():
        figs[name] = Figure("kernel launch on a stream", name, vals)
    s.synchronize()
    # Every launch ran: the kernel counts them (warm-up round included).
    got = struct.unpack("<f", buf.to_bytes())[0]
    expected = float(calls * (trials + 1) * len(cases))
    if got != expected:
        raise RuntimeError(f"tiny kernel ran {got} times, expected {expected}")
    for name, vals in rotated(_captured_launch_contenders(rt, s, k, buf, calls, func), trials).items():
        figs[name] = Figure("kernel launch on a stream", name, vals)
    s.close()
    nodes = build_nodes(q)
    for name, vals in _bench_kernel_nodes(rt, k, buf, nodes, 3 if q else 5).items():
        figs[name] = Figure("build per node", name, vals)


def bench_stub_kernel_nodes(figs: dict[str, Figure], q: bool) -> None:
    """The kernel-node figures of :func:`bench_kernel_launch` on the do-nothing stub libcudart
    (``benchmarks/stub_cudart.c``; ``PYGRAPHRT_BREAKDOWN_STUB=1``, as ``benchmarks.breakdown``
    sets it), which compiles nothing: a fake kernel handle wrapped with the tiny kernel's
    signature, as ``benchmarks.breakdown`` adds it.  Python overhead only, for CPU runs."""
    import pygraphrt as rt

    k = rt.Kernel.wrap(0x5000, signature="float *x", kind="kernel", name="tiny")
    buf = rt.malloc(4)
    for name, vals in _bench_kernel_nodes(rt, k, buf, build_nodes(q), 3 if q else 5).items():
        figs[name] = Figure("build per node", name, vals)
    buf.close()


def _captured_launch_contenders(rt, s, k, buf, calls: int, func) -> dict:
    """The launches of :func:`bench_kernel_launch` made into a stream capture (how graphs of
    kernels are usually made), per launch: each trial captures ``calls`` launches into one
    graph (begin and end of the capture, and the graph's destruction, not timed), through
    pygraphrt and, where ``func`` (the kernel as cuda.bindings' CUfunction) is given, through
    cuda.bindings' ``cuLaunchKernel`` between its own begin and end."""
    launch = s.launch
    py_name = "pygraphrt stream.launch into a capture (tiny kernel)"

    def py() -> dict[str, float]:
        cap = s.begin_capture()
        try:
            t0 = _now()
            for _ in range(calls):
                launch(k, 1, 32, buf)
            per_call = (_now() - t0) / calls
        finally:
            graph = cap.end()
        if len(graph.nodes()) != calls:
            raise RuntimeError(f"{len(graph.nodes())} nodes captured, expected {calls}")
        graph.close()
        return {py_name: per_call}

    out = {py_name: py}
    if func is None:
        return out
    import ctypes

    from cuda.bindings import driver as cbd
    from cuda.bindings import runtime as cbr

    cs, rs, ptr, cu_launch = cbd.CUstream(int(s)), cbr.cudaStream_t(int(s)), buf.ptr, cbd.cuLaunchKernel
    cb_name = "cuda.bindings cuLaunchKernel into a capture (tiny kernel)"

    def cb() -> dict[str, float]:
        (err,) = cbr.cudaStreamBeginCapture(rs, cbr.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal)
        if err != cbr.cudaError_t.cudaSuccess:
            raise RuntimeError(f"cudaStreamBeginCapture: {err}")
        try:
            t0 = _now()
            for _ in range(calls):
                cu_launch(func, 1, 1, 1, 32, 1, 1, 0, cs, ((ptr,), (ctypes.c_void_p,)), 0)
            per_call = (_now() - t0) / calls
        finally:
            err, graph = cbr.cudaStreamEndCapture(rs)
        if err != cbr.cudaError_t.cudaSuccess:
            raise RuntimeError(f"cudaStreamEndCapture: {err}")
        err, _, count = cbr.cudaGraphGetNodes(graph, 0)
        cbr.cudaGraphDestroy(graph)
        if count != calls:
            raise RuntimeError(f"cuda.bindings captured {count} nodes, expected {calls}")
        return {cb_name: per_call}

    out[cb_name] = cb
    return out


def _bench_kernel_nodes(rt, k, buf, nodes: int, trials: int) -> dict[str, list[float]]:
    """Per-node time of adding ``nodes`` kernel nodes as a chain: pygraphrt's ``add_kernel``
    (arguments as values, checked and packed per node) against the runtime's
    ``cudaGraphAddKernelNode`` -- the call pygraphrt makes -- raw through cffi and through
    cuda.bindings, and cuda.bindings' driver ``cuGraphAddKernelNode`` (a CUfunction of the
    current context), each given one parameter struct made once (their cheapest use)."""
    from pygraphrt import lowlevel

    ffi, lib = lowlevel.ffi, lowlevel.lib
    cell = ffi.new("void **", ffi.cast("void *", buf.ptr))
    argv = ffi.new("void *[1]", [cell])
    kp = ffi.new("struct cudaKernelNodeParams *")
    kp.func = ffi.cast("void *", int(k))
    kp.gridDim.x, kp.gridDim.y, kp.gridDim.z, kp.blockDim.x, kp.blockDim.y, kp.blockDim.z = 1, 1, 1, 32, 1, 1
    kp.kernelParams = argv
    try:
        from cuda.bindings import runtime as cbr
    except ImportError:
        cbr = None
    rp = None
    if cbr is not None:
        import ctypes

        rcell = ctypes.c_void_p(buf.ptr)
        rargv = (ctypes.c_void_p * 1)(ctypes.addressof(rcell))
        rp = cbr.cudaKernelNodeParams()
        rp.func = int(k)
        rp.gridDim.x, rp.gridDim.y, rp.gridDim.z = 1, 1, 1
        rp.blockDim.x, rp.blockDim.y, rp.blockDim.z = 32, 1, 1
        rp.sharedMemBytes = 0
        rp.kernelParams = ctypes.addressof(rargv)

    def py() -> dict[str, float]:
        g = rt.Graph()
        prev = g.add_empty()
        add = g.add_kernel
        t0 = _now()
        for _ in range(nodes):
            prev = add(k, 1, 32, (buf,), dependencies=[prev])
        per_node = (_now() - t0) / nodes
        g.close()
        return {"pygraphrt add_kernel (chain)": per_node}

    contenders = {"pygraphrt add_kernel (chain)": py,
                  **_raw_contenders(ffi, lib, cbr, "cudaGraphAddKernelNode", "chain", nodes, kp, rp)}
    try:
        contenders["cuda.bindings cuGraphAddKernelNode (chain)"] = _driver_kernel_adds(k, buf, nodes)
    except (ImportError, RuntimeError, TypeError, ValueError, AttributeError) as exc:
        print(f"cuda.bindings kernel node add skipped: {exc!r}")
    return rotated(contenders, trials, collect=True)


def _driver_kernel_adds(k, buf, nodes: int):
    """A contender for :func:`rotated`: one chain of ``nodes`` kernel nodes (kernel ``k``, one
    pointer argument ``buf``) made by cuda.bindings' driver ``cuGraphAddKernelNode`` with a
    CUfunction of the current context and one parameter struct made once."""
    import ctypes

    from cuda.bindings import driver as cbd

    err, func = cbd.cuKernelGetFunction(cbd.CUkernel(int(k)))
    if err != cbd.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuKernelGetFunction: {err}")
    cell = ctypes.c_void_p(buf.ptr)
    argv = (ctypes.c_void_p * 1)(ctypes.addressof(cell))
    p = cbd.CUDA_KERNEL_NODE_PARAMS()
    p.func = func
    p.gridDimX, p.gridDimY, p.gridDimZ, p.blockDimX, p.blockDimY, p.blockDimZ = 1, 1, 1, 32, 1, 1
    p.sharedMemBytes = 0
    p.kernelParams = ctypes.addressof(argv)
    add = cbd.cuGraphAddKernelNode

    def driver() -> dict[str, float]:
        err, cg = cbd.cuGraphCreate(0)
        err, cprev = cbd.cuGraphAddEmptyNode(cg, None, 0)
        t0 = _now()
        for _ in range(nodes):
            err, cprev = add(cg, [cprev], 1, p)
        per_node = (_now() - t0) / nodes
        if err != cbd.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"cuGraphAddKernelNode: {err}")
        cbd.cuGraphDestroy(cg)
        _ = (cell, argv)  # the parameter cells live as long as the contender
        return {"cuda.bindings cuGraphAddKernelNode (chain)": per_node}

    return driver


def _now() -> float:
    import time

    return time.perf_counter_ns() / 1e3


C_NAMES = {"launch_empty": ("C cudaGraphLaunch (empty)", "launch overhead"),
           "launch_kernel": ("C cudaGraphLaunch (kernel)", "launch overhead"),
           "is_capturing": ("C cudaStreamIsCapturing", "trivial call"),
           "build_chain": ("C cudaGraphAddEmptyNode (chain)", "build per node"),
           "build_fanout": ("C cudaGraphAddEmptyNode (fanout)", "build per node"),
           "instantiate_chain": ("C instantiate (chain)", "instantiate per node"),
           "instantiate_fanout": ("C instantiate (fanout)", "instantiate per node"),
           "kernels_stream": ("C stream launch, per kernel", "graph vs stream"),
           "kernels_graph": ("C graph replay, per kernel", "graph vs stream"),
           "stream_launch_tiny": ("C stream launch (tiny kernel)", "kernel launch on a stream")}


def build_c_baseline(workdir: Path) -> Path | None:
    """``benchmarks/launch_bench.cu`` built with nvcc; None (and why, printed) where it cannot be."""
    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None)
    if nvcc is None:
        print("nvcc not found: the C++ baseline is skipped")
        return None
    exe = workdir / "launch_bench"
    r = subprocess.run([nvcc, "-O2", "-o", str(exe), str(HERE / "launch_bench.cu")], capture_output=True, text=True)
    if r.returncode != 0:
        print("nvcc failed; the C++ baseline is skipped:\n" + r.stderr[-2000:])
        return None
    return exe


def run_c_baseline(exe: Path, nodes: int, pooled: dict[str, list[float]]) -> bool:
    """One run of the C baseline, its graphs ``nodes`` nodes big (the size the Python side
    builds); each measurement's trials are appended to ``pooled``.  False if the run failed."""
    out = subprocess.run([str(exe), str(nodes)], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        print("C++ baseline failed:\n" + out.stderr[-2000:])
        return False
    for line in out.stdout.splitlines():
        key, *vals = line.split()
        if key not in C_NAMES or not vals:
            raise ValueError(f"launch_bench printed an unknown line: {line!r}")
        pooled.setdefault(key, []).extend(float(v) for v in vals)
    return True


def c_figures(pooled: dict[str, list[float]], runs: int) -> dict[str, Figure]:
    """The C baseline's figures from the trials of its ``runs`` runs, pooled."""
    figs = {}
    for key, vals in pooled.items():
        name, group = C_NAMES[key]
        figs[name] = Figure(group, name, vals, note=f"trials of {runs} C runs, pooled")
    return figs


# The floor under every binding's cold start: what the driver itself takes to give a stream --
# dlopen libcuda, cuInit, device 0's primary context made current, cuStreamCreate -- called
# through _cffi_backend (no binding, no runtime library, nothing else imported).
DRIVER_FLOOR = (
    "import _cffi_backend as cb; i = cb.new_primitive_type('int'); ip = cb.new_pointer_type(i); "
    "vp = cb.new_pointer_type(cb.new_void_type()); vpp = cb.new_pointer_type(vp); "
    "L = cb.load_library('libcuda.so.1', 2); f = lambda name, *args: L.load_function(cb.new_function_type(args, i, 0), name); "
    "d, c, s = cb.newp(ip, 0), cb.newp(vpp, None), cb.newp(vpp, None); "
    "rc = [f('cuInit', i)(0), f('cuDeviceGet', ip, i)(d, 0), f('cuDevicePrimaryCtxRetain', vpp, i)(c, d[0]), "
    "f('cuCtxSetCurrent', vp)(c[0]), f('cuStreamCreate', vpp, cb.new_primitive_type('unsigned int'))(s, 0)]; "
    "assert rc == [0] * 5, rc")

IMPORT_PROG = {  # label: (import statement, backend selection + first device call)
    "pygraphrt": ("import pygraphrt", "pygraphrt.Stream()"),
    "cuda.bindings": ("import cuda.bindings.runtime", "cuda.bindings.runtime.cudaStreamCreate()"),
    "driver floor": ("import _cffi_backend", DRIVER_FLOOR),
}


def bench_import(figs: dict[str, Figure], runs: int, modes: list[str]) -> None:
    """Each run in a fresh interpreter: import time, then the first device call (pygraphrt:
    once per call mode, with PYGRAPHRT_FAST set as the mode says)."""
    jobs: list[tuple[str, str, str, str | None]] = [
        (label, imp, first, None) for label, (imp, first) in IMPORT_PROG.items() if label != "pygraphrt"]
    imp, first = IMPORT_PROG["pygraphrt"]
    jobs = [("pygraphrt", imp, first, m) for m in modes] + jobs
    for label, imp, first, mode in jobs:
        tag = f" [{mode}]" if mode else ""
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        if mode:
            env["PYGRAPHRT_FAST"] = MODES[mode]
        prog = (f"import time; t0 = time.perf_counter(); {imp}; t1 = time.perf_counter(); "
                f"{first}; t2 = time.perf_counter(); print((t1 - t0) * 1e3, (t2 - t1) * 1e3)")
        imports, firsts = [], []
        for _ in range(runs):
            r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, env=env)
            if r.returncode != 0:
                print(f"{label} import run failed: {r.stderr[-500:]}")
                break
            a, b = map(float, r.stdout.split())
            imports.append(a)
            firsts.append(b)
        if imports:
            name = f"import {imp.split()[-1]}{tag}"
            figs[name] = Figure("import and first call", name, imports, unit="ms")
            name = f"{label}: backend + first device call{tag}"
            figs[name] = Figure("import and first call", name, firsts, unit="ms")
            name = f"{label}: import + backend + first device call{tag}"  # issue #14's cold start
            figs[name] = Figure("import and first call", name, [a + b for a, b in zip(imports, firsts)], unit="ms")


MODES = {"abi": "0", "api": "1"}  # call mode -> PYGRAPHRT_FAST


def run_mode(outdir: Path, mode: str, quick: bool) -> dict[str, Figure]:
    """The in-process benchmarks in a fresh interpreter with PYGRAPHRT_FAST for ``mode``;
    every figure's name gets `` [mode]`` (cuda.bindings is measured again in each run, so
    each ratio pairs figures taken side by side in one process)."""
    out = outdir / f".figures-{mode}.json"
    env = dict(os.environ, PYGRAPHRT_FAST=MODES[mode], PYTHONPATH=os.pathsep.join(sys.path))
    print(f"== {mode} mode (PYGRAPHRT_FAST={MODES[mode]})", flush=True)
    r = subprocess.run([sys.executable, "-m", "benchmarks.run", str(outdir), "--child-mode", mode]
                       + (["--quick"] if quick else []), env=env)
    if r.returncode != 0 or not out.exists():
        print(f"{mode} mode: no figures (exit {r.returncode}); for the api mode build the fast path "
              "first: python -m bindgen build-fast")
        return {}
    data = json.loads(out.read_text())
    out.unlink()
    print(f"   call path: {data['mode']}")
    figs = {}
    for f in data["figures"]:
        name = f"{f['name']} [{mode}]"
        figs[name] = Figure(f["group"], name, f["trials_us"], unit=f["unit"], note=f["note"],
                            rounds=f.get("rounds", ""))
    return figs


def target_ratios(figs: dict[str, Figure]) -> list:
    """Issue #14's targets (api: the compiled fast path; abi: cffi ABI mode) and issue #45's ABI
    adds over the floor contender (``F*``), then the earlier ones per mode."""
    R = []
    cbl, cbb = "cuda.bindings cudaGraphLaunch", "cuda.bindings cudaGraphAddEmptyNode"
    for m, launch, add, cap in (("api", 0.8, 1.0, 0.8), ("abi", 1.0, 1.5, None)):
        t = f" [{m}]"
        R += [ratio(figs, f"{m}:L", f"pygraphrt launch (empty){t}", f"{cbl} (empty){t}", f"<= {launch}", limit=launch),
              ratio(figs, f"{m}:Lk", f"pygraphrt launch (kernel){t}", f"{cbl} (kernel){t}", f"<= {launch}", limit=launch),
              ratio(figs, f"{m}:A", f"pygraphrt add_empty (chain){t}", f"{cbb} (chain){t}", f"<= {add}", limit=add),
              ratio(figs, f"{m}:Af", f"pygraphrt add_empty (fanout){t}", f"{cbb} (fanout){t}", f"<= {add}", limit=add),
              ratio(figs, f"{m}:B", f"pygraphrt add_nodes, bulk (chain){t}", f"{cbb} (chain){t}", f"<= {add}", limit=add),
              ratio(figs, f"{m}:Bc", f"pygraphrt add_nodes, bulk (chain){t}",
                    c_ref(figs, "cudaGraphAddEmptyNode (chain)", t), *(("<= 2.0", 2.0) if m == "api" else ("report", None))),
              ratio(figs, f"{m}:Br", f"pygraphrt add_nodes, bulk, every node read (chain){t}", f"{cbb} (chain){t}",
                    "report", limit=None),
              ratio(figs, f"{m}:M", f"pygraphrt add_memset (chain){t}", f"cuda.bindings cudaGraphAddMemsetNode (chain){t}",
                    f"<= {add}", limit=add),
              ratio(figs, f"{m}:Mf", f"pygraphrt add_memset (fanout){t}",
                    f"cuda.bindings cudaGraphAddMemsetNode (fanout){t}", f"<= {add}", limit=add),
              ratio(figs, f"{m}:K", f"pygraphrt add_kernel (chain){t}",
                    f"cuda.bindings cudaGraphAddKernelNode (chain){t}", f"<= {add}", limit=add),
              ratio(figs, f"{m}:Kd", f"pygraphrt add_kernel (chain){t}", f"cuda.bindings cuGraphAddKernelNode (chain){t}",
                    "report", limit=None),
              ratio(figs, f"{m}:Kr", f"pygraphrt add_kernel (chain){t}", f"raw cffi cudaGraphAddKernelNode (chain){t}",
                    "report", limit=None),
              ratio(figs, f"{m}:C", f"pygraphrt stream.is_capturing{t}", f"cuda.bindings cudaStreamIsCapturing{t}",
                    f"<= {cap}" if cap else "report", limit=cap),
              ratio(figs, f"{m}:I", f"pygraphrt instantiate (chain){t}", c_ref(figs, "instantiate (chain)", t),
                    "<= 1.1", limit=1.1),
              ratio(figs, f"{m}:S", f"pygraphrt: import + backend + first device call{t}",
                    "cuda.bindings: import + backend + first device call", "<= 0.7", limit=0.7),
              # pygraphrt's cold start over the driver's own (what S cannot get under)
              ratio(figs, f"{m}:Sf", f"pygraphrt: import + backend + first device call{t}",
                    "driver floor: import + backend + first device call", "report", limit=None)]
        # issue #45: ABI mode's adds over the least Python wrapper of the same raw call (floor_adder),
        # measured in the same process, taking turns with them; the compiled mode's reported
        fl = {"abi": (1.25, 1.25, 1.5), "api": (None, None, None)}[m]
        for key, what, api, limit in (("Fa", "add_empty (chain)", "cudaGraphAddEmptyNode (chain)", fl[0]),
                                      ("Faf", "add_empty (fanout)", "cudaGraphAddEmptyNode (fanout)", fl[0]),
                                      ("Fm", "add_memset (chain)", "cudaGraphAddMemsetNode (chain)", fl[1]),
                                      ("Fmf", "add_memset (fanout)", "cudaGraphAddMemsetNode (fanout)", fl[1]),
                                      ("Fk", "add_kernel (chain)", "cudaGraphAddKernelNode (chain)", fl[2])):
            R.append(ratio(figs, f"{m}:{key}", f"pygraphrt {what}{t}", f"floor {api}{t}",
                           f"<= {limit}" if limit else "report", limit=limit))
        if m == "api":
            R.append(ratio(figs, "api:Lc", "pygraphrt launch (empty) [api]",
                           c_ref(figs, "cudaGraphLaunch (empty)", t), "<= 2.0", limit=2.0))
    from .multidevice import ratios as multidevice_ratios

    for m in MODES:  # several GPUs (benchmarks/multidevice), where they were measured
        R += multidevice_ratios(figs, f" [{m}]")
    # The best S any binding could reach on this machine: the driver's floor over cuda.bindings.
    R.append(ratio(figs, "S*", "driver floor: import + backend + first device call",
                   "cuda.bindings: import + backend + first device call", "report", limit=None))
    for m in MODES:  # the earlier targets (README, Benchmarks), per mode
        t = f" [{m}]"
        R += [ratio(figs, f"{m}:P1c", f"pygraphrt launch (empty){t}", c_ref(figs, "cudaGraphLaunch (empty)", t),
                    "<= 2.5", limit=2.5),
              ratio(figs, f"{m}:P5", f"pygraphrt stream.launch (tiny kernel){t}",
                    f"cuda.bindings cuLaunchKernel (tiny kernel){t}", "<= 1.2", limit=1.2),
              ratio(figs, f"{m}:P5c", f"pygraphrt stream.launch into a capture (tiny kernel){t}",
                    f"cuda.bindings cuLaunchKernel into a capture (tiny kernel){t}", "report", limit=None),
              ratio(figs, f"{m}:P3", f"torch eager, per kernel{t}", f"pygraphrt graph replay, per kernel{t}",
                    ">= 10", at_least=10.0),
              ratio(figs, f"{m}:P4", f"import pygraphrt{t}", "import cuda.bindings.runtime", "<= 0.5", limit=0.5),
              ratio(figs, f"{m}:P4b", f"pygraphrt: backend + first device call{t}",
                    "cuda.bindings: backend + first device call", "<= 1.1", limit=1.1)]
    return [r for r in R if r is not None]


def side_by_side(figs: dict[str, Figure]) -> str:
    """One row per measure: the median in each mode, and the api/abi speed-up."""
    base = sorted({n.rsplit(" [", 1)[0] for n in figs if n.endswith((" [abi]", " [api]"))})
    lines = [f"{'measure (median)':<52} {'abi':>9} {'api':>9} {'api/abi':>8}", "-" * 81]
    for b in base:
        a, p = figs.get(f"{b} [abi]"), figs.get(f"{b} [api]")
        unit = (a or p).unit
        av = f"{a.median:9.3f}" if a else f"{'-':>9}"
        pv = f"{p.median:9.3f}" if p else f"{'-':>9}"
        r = f"{p.median / a.median:8.2f}" if a and p and a.median else f"{'-':>8}"
        lines.append(f"{b[:52]:<52} {av} {pv} {r} {unit}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="scripts/bench")
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--quick", action="store_true", help="small sizes (for a smoke run)")
    ap.add_argument("--modes", default="abi,api",
                    help="call modes to measure, side by side: abi (PYGRAPHRT_FAST=0), api (=1)")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="whole runs (every mode in fresh interpreters); ratios are taken within "
                         "each run and reported as the median with the range")
    ap.add_argument("--group", choices=["launch", "collectives", "compute", "torch"], default="launch",
                    help="launch: the single-GPU figures (default); collectives: NCCL all-reduce on 2 GPUs "
                         "under torchrun (benchmarks/collectives.py); compute: the compute graph at 100, "
                         "1 000 and 10 000 nodes (benchmarks/compute.py; its targets are the api mode's); "
                         "torch: a decode loop as a WHILE node vs driven from Python (benchmarks/torch_loop.py)")
    ap.add_argument("--child-mode", choices=list(MODES), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.repeat < 1:
        ap.error("--repeat must be at least 1")
    a.outdir.mkdir(parents=True, exist_ok=True)
    if a.group == "collectives":
        from . import collectives

        return collectives.run(a.outdir, a.quick)
    if a.group == "compute":
        from . import compute

        return compute.run(a.outdir, a.quick, a.repeat, [m for m in a.modes.split(",") if m])
    if a.group == "torch":
        from . import torch_loop

        return torch_loop.run(a.outdir, a.quick)
    if a.child_mode:  # one mode, in this interpreter
        figs: dict[str, Figure] = {}
        bench_pygraphrt(figs, a.quick)
        try:
            bench_kernel_launch(figs, a.quick)
        except Exception as exc:  # no NVRTC / no GPU (a stub runtime): the other figures stand
            print(f"kernel launch on a stream skipped: {type(exc).__name__}: {exc}")
            if os.environ.get("PYGRAPHRT_BREAKDOWN_STUB") == "1":
                bench_stub_kernel_nodes(figs, a.quick)
        try:  # several GPUs (benchmarks/multidevice): skips, saying why, with fewer than 2
            from .multidevice import bench_multidevice

            bench_multidevice(figs, a.quick)
        except Exception as exc:
            print(f"several-GPU group skipped: {type(exc).__name__}: {exc}")
        import pygraphrt as rt

        (a.outdir / f".figures-{a.child_mode}.json").write_text(json.dumps(
            {"mode": rt.backend().ffi_mode, "figures": [asdict(f) for f in figs.values()]}))
        return 0
    modes = [m for m in a.modes.split(",") if m]
    runs: list[dict[str, Figure]] = []
    with tempfile.TemporaryDirectory() as tmp:
        # The C++ program runs before and after each mode and its trials are pooled (the
        # ratios against C use the in-process C loops; this is the separate program's figure).
        exe = build_c_baseline(Path(tmp))
        pooled: dict[str, list[float]] = {}
        c_runs = 0
        if exe is not None and run_c_baseline(exe, build_nodes(a.quick), pooled):
            c_runs += 1
        for r in range(a.repeat):  # whole runs: every mode in fresh interpreters, then the imports
            if a.repeat > 1:
                print(f"== run {r + 1} of {a.repeat}", flush=True)
            run: dict[str, Figure] = {}
            for m in modes:
                run.update(run_mode(a.outdir, m, a.quick))
                if exe is not None and c_runs and run_c_baseline(exe, build_nodes(a.quick), pooled):
                    c_runs += 1
            bench_import(run, 3 if a.quick else 7, modes)
            runs.append(run)
        c_figs = c_figures(pooled, c_runs)
    # each run's ratios from that run's figures; the table gives their median and range
    ratios = combine_ratios([target_ratios({**c_figs, **run}) for run in runs])
    figs = {**pool_figures(runs), **c_figs}
    ordered = sorted(figs.values(), key=lambda f: (f.group, f.name))
    meta = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "python": platform.python_version(), "quick": a.quick, "modes": modes, "repeat": a.repeat}
    try:
        import pygraphrt as rt

        info = rt.backend()
        meta.update(gpu=rt.Device(0).info().name, runtime=info.runtime_version_str,
                    driver=info.driver_version, binding=info.binding, library=info.library_path,
                    call_path=info.ffi_mode)
    except Exception as exc:  # pragma: no cover
        meta["gpu"] = f"unknown ({exc})"
    text = table(ordered, ratios) + "\n\nside by side\n" + side_by_side(figs)
    print(text)
    stem = f"{meta['date'][:10]}-{str(meta.get('gpu', 'gpu')).replace(' ', '-')}"
    (a.outdir / f"{stem}.json").write_text(to_json(meta, ordered, ratios))
    (a.outdir / f"{stem}.txt").write_text(text + "\n")
    if chart(ordered, str(a.outdir / f"{stem}.png")):
        print(f"chart: {a.outdir / (stem + '.png')}")
    return 0 if figs else 1


if __name__ == "__main__":
    sys.exit(main())

