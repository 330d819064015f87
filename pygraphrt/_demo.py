"""``python -m pygraphrt demo``: the README's seed workflow, on the GPU if there is one, else on ``sim``.

Captures ``A; fork; B on stream 1 || C on stream 2; join; D`` (A, C: memsets; B, D: copies),
prints the capture info taken during the capture, the captured graph (nodes, edges with
their edge data), launches it, and checks what the buffers hold.  Where no runtime has a
device it says so and runs on the CPU simulator instead -- it never pretends a GPU ran it.
"""

from __future__ import annotations

import os
import sys
from typing import TextIO


def no_gpu_reason() -> str | None:
    """None where a GPU runtime (CUDA, then HIP) has a device; else why not, in a few words
    (``"CUDA 13.0 runtime but no NVIDIA driver; no HIP runtime"``)."""
    from pygraphrt import _runtime, errors

    why = []
    for vendor, label in (("cuda", "CUDA"), ("hip", "HIP")):
        try:
            bi = _runtime.load(vendor).info()
        except errors.BackendError:
            why.append(f"no {label} runtime")
            continue
        if bi.device_count > 0:
            return None
        err = bi.device_error or ""
        if "InsufficientDriver" in err or "NoDriver" in err:
            why.append(f"{label} {bi.runtime_version_str} runtime but no {'NVIDIA' if vendor == 'cuda' else 'AMD'} "
                       "driver")
        else:
            why.append(f"{label} {bi.runtime_version_str} runtime but no device")
    return "; ".join(why)


def choose_backend(out: TextIO) -> str:
    """``cuda``/``hip`` when one has a device (or PYGRAPHRT_BACKEND names one), else ``sim``;
    on ``sim`` its first line says so, and why, in one line."""
    import pygraphrt

    wanted = os.environ.get("PYGRAPHRT_BACKEND", "auto")
    if wanted != "auto":
        pygraphrt.use(wanted)
        return wanted
    why = no_gpu_reason()
    if why is None:
        b = pygraphrt.use("auto")
        if b.info().device_count > 0:
            return b.vendor
        why = f"{b.vendor}: {(b.info().device_error or 'no device').split(' [')[0]}"  # (auto chose another)
    from pygraphrt import _runtime

    with _runtime._state.lock:  # nothing was made on the runtime that has no device: switch freely
        _runtime._state.active = None
    pygraphrt.use("sim")
    print(f"no GPU: running on the simulator ({why})", file=out)
    return "sim"


def run(out: TextIO = sys.stdout, n: int = 1 << 20, launches: int = 100) -> int:
    """Run the seed workflow; 0 when the buffers hold what the graph wrote."""
    import pygraphrt as rt

    vendor = choose_backend(out)
    bi = rt.backend()
    if vendor == "sim":
        print("  (pygraphrt.sim, CPU only: no GPU is used; the results below are the simulator's)", file=out)
    else:
        name = rt.Device(0).info().name
        print(f"running on the GPU: {name} ({bi.vendor} runtime {bi.runtime_version_str})", file=out)
    a, b, c, d = (rt.malloc(n) for _ in range(4))
    s1, s2 = rt.Stream(), rt.Stream()
    fork, join = rt.Event(), rt.Event()
    with s1.capture() as cap:
        s1.memset(a, 1, n)              # A
        s1.record(fork)
        s2.wait(fork)                   # fork
        s1.memcpy(b, a, n)              # B
        s2.memset(c, 3, n)              # C
        info = cap.info()
        s2.record(join)
        s1.wait(join)                   # join
        s1.memcpy(d, c, n)              # D
    print(f"capture info during the capture: status {info.status.name}, id {info.id}, "
          f"current dependencies {[(dep.type.name, str(e)) for dep, e in info.dependencies]}", file=out)
    g = cap.graph
    nodes = g.nodes()
    index = {id(x): i for i, x in enumerate(nodes)}
    print(f"captured graph: {len(nodes)} nodes, {len(g.edges())} edges", file=out)
    for i, x in enumerate(nodes):
        print(f"  node {i}: {x.type.name}", file=out)
    for src, dst, e in g.edges():
        print(f"  edge {index[id(src)]} -> {index[id(dst)]}  ({src.type.name} -> {dst.type.name}), edge data {e}",
              file=out)
    exe = g.instantiate()
    for _ in range(launches):
        exe.launch(s1)
    s1.synchronize()
    ok = b.to_bytes() == b"\x01" * n and d.to_bytes() == b"\x03" * n
    print(f"launched {launches} times: b holds {b.to_bytes(4).hex()}..., d holds {d.to_bytes(4).hex()}... "
          f"({'correct' if ok else 'WRONG'})", file=out)
    if vendor == "sim":
        print("(simulated: to run on a GPU, use a machine with CUDA or ROCm; what pygraphrt found here: "
              "python -m pygraphrt info --verbose)", file=out)
    return 0 if ok else 1
