"""Per-call costs of everyday paths: ``python -m benchmarks.per_call [TREE] [--quick]``.

Microseconds per call (median of repeated trials, one process) of the calls a program makes per
copy, allocation, capture, node and launch, first while one device is in use, then -- where
the runtime has two or more devices -- with several in use (``with rt.Device(1)``: the paths
that check and record devices):

* ``stream.memcpy`` of 64 bytes between two pygraphrt buffers (the stream synchronized after
  the loop), the same from a ``bytearray`` (host memory, kept alive until the copy has run), a
  capture of one copy between buffers, ``malloc_async`` and its ``free``;
* ``node.device`` of a memset node;
* ``add_memset`` and ``add_kernel`` in a chain (each node after the last);
* ``stream.launch`` of a one-block kernel.

It prints one JSON object (figure name -> microseconds).  ``TREE`` puts another checkout of
pygraphrt first on ``sys.path``, so that two trees can be measured in turn on one machine, each
in its own processes (as CHANGELOG's figures for 2026-11-28 were: three processes per tree,
alternating, the medians compared).  On the simulator it runs as well (``tests/test_bench_smoke.py``:
the harness, not its figures).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from typing import Any, Callable

SOURCE = r"""
extern "C" __global__ void per_call_add(unsigned *p, unsigned v, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] += v;
}
"""
SIGNATURE = "unsigned *p, unsigned v, unsigned n"


def _sim_twin() -> None:
    """The kernel's Python twin for the simulator (registered once)."""
    from pygraphrt import sim

    if getattr(_sim_twin, "done", False):
        return

    @sim.register_kernel("per_call_add")
    def _add(ctx: Any, p: int, v: int, n: int) -> None:
        k = max(0, min(int(n), ctx.grid[0] * ctx.block[0]))
        a = ctx.array(p, "u4", k)
        a[:] = (a.astype("u8") + v) & 0xFFFFFFFF

    _sim_twin.done = True  # type: ignore[attr-defined]


def measure(quick: bool = False) -> dict[str, float]:
    """The figures (name -> microseconds per call) on the active backend."""
    import pygraphrt as rt
    from pygraphrt._runtime import active

    if rt.backend().vendor == "sim":
        _sim_twin()
    kernel = rt.Program(SOURCE, name="per_call.cu").kernel("per_call_add", signature=SIGNATURE)
    buf, buf2 = rt.malloc(1 << 12), rt.malloc(1 << 12)
    host = bytearray(64)
    s = rt.Stream()
    node = rt.Graph().add_memset(buf, 1, 64)
    scale = 20 if quick else 1
    trials = 3 if quick else 15
    out: dict[str, float] = {}

    def timed(name: str, fn: Callable[[int], None], n: int) -> None:
        n = max(n // scale, 2)
        fn(max(n // 10, 1))  # warm-up (first uses: loads, compiles, caches)
        vals = []
        for _ in range(trials):
            t0 = time.perf_counter_ns()
            fn(n)
            vals.append((time.perf_counter_ns() - t0) / 1e3 / n)
        out[name] = round(statistics.median(vals), 3)

    def memcpy(n: int) -> None:
        for _ in range(n):
            s.memcpy(buf2, buf, 64)
        s.synchronize()

    def memcpy_host(n: int) -> None:
        for _ in range(n):
            s.memcpy(buf, host, 64)
        s.synchronize()

    def capture(n: int) -> None:
        for _ in range(n):
            with s.capture():
                s.memcpy(buf2, buf, 64)

    def allocate(n: int) -> None:
        for _ in range(n):
            s.malloc_async(64).free(s)
        s.synchronize()

    def node_device(n: int) -> None:
        for _ in range(n):
            node.device

    def add_memset(n: int) -> None:
        g = rt.Graph()
        prev = g.add_empty()
        for _ in range(n):
            prev = g.add_memset(buf, 1, 64, dependencies=[prev])

    def add_kernel(n: int) -> None:
        g = rt.Graph()
        prev = g.add_empty()
        for _ in range(n):
            prev = g.add_kernel(kernel, 1, 32, (buf, 1, 16), dependencies=[prev])

    def launch(n: int) -> None:
        for _ in range(n):
            s.launch(kernel, 1, 32, buf, 1, 16)
        s.synchronize()

    states = ["one"] + (["several"] if rt.device_count() >= 2 else [])
    for state in states:
        if state == "several":
            with rt.Device(1):
                pass
            assert active().several
        timed(f"{state}: stream.memcpy 64 B", memcpy, 2000)
        timed(f"{state}: stream.memcpy 64 B from host", memcpy_host, 1000)
        timed(f"{state}: capture of one memcpy", capture, 300)
        timed(f"{state}: malloc_async + free", allocate, 1000)
        timed(f"{state}: node.device", node_device, 5000)
        timed(f"{state}: add_memset (chain)", add_memset, 2000)
        timed(f"{state}: add_kernel (chain)", add_kernel, 2000)
        timed(f"{state}: stream.launch (kernel)", launch, 2000)
    return out


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    quick = "--quick" in args
    trees = [a for a in args if a != "--quick"]
    if len(trees) > 1:
        print("usage: python -m benchmarks.per_call [TREE] [--quick]", file=sys.stderr)
        return 2
    if trees:
        sys.path.insert(0, trees[0])
    print(json.dumps(measure(quick)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
