"""Python implementations of the conformance suite's own kernels, for the ``sim`` backend.

The suite compiles a few small kernels (``_case._KERNEL_SOURCE`` and the control area's);
on the simulator a kernel runs through a Python function registered for its name
(:func:`pygraphrt.sim.register_kernel`).  :func:`register` adds these when the suite runs on
``sim`` -- so ``python -m pygraphrt.conformance --backend sim`` runs every kernel case --
without replacing a function the user registered for the same name.  Pure Python (no
numpy): each function does, for the whole launch at once, what its CUDA source does.
"""

from __future__ import annotations

from typing import Any, Callable

_MASK = 0xFFFFFFFF


def _covered(ctx: Any, n: int) -> int:
    """How many of ``n`` elements a 1-D launch reaches (``i < n`` for every thread index i)."""
    return max(0, min(int(n), ctx.grid[0] * ctx.block[0]))


def _u32(ctx: Any, address: int, count: int) -> memoryview:
    """``count`` unsigned 32-bit ints of device memory at ``address``, writable."""
    return ctx.memory(address, 4 * count).cast("I")


def noop(ctx: Any) -> None:
    """``noop()``: nothing."""


def fill_u32(ctx: Any, p: int, v: int, n: int) -> None:
    """``p[i] = v`` for the covered ``i < n``."""
    m = _covered(ctx, n)
    if m:
        ctx.write(p, (v & _MASK).to_bytes(4, "little") * m)


def add_u32(ctx: Any, p: int, v: int, n: int) -> None:
    """``p[i] += v`` (mod 2**32) for the covered ``i < n``."""
    m = _covered(ctx, n)
    if m:
        a = _u32(ctx, p, m)
        for i in range(m):
            a[i] = (a[i] + v) & _MASK


def copy_u32(ctx: Any, dst: int, src: int, n: int) -> None:
    """``dst[i] = src[i]`` for the covered ``i < n``."""
    m = _covered(ctx, n)
    if m:
        ctx.write(dst, ctx.read(src, 4 * m))


def sig3(ctx: Any, p: int, v: int, n: int) -> None:
    """``sig3(p, v, n)``: an empty body (the case checks the signature, not the work)."""


def set_value(ctx: Any, h: int, v: int) -> None:
    """``cudaGraphSetConditional(h, v)``."""
    ctx.set_conditional(h, v)


def count_down(ctx: Any, h: int, left: int, runs: int) -> None:
    """``*runs += 1; l = --*left; cudaGraphSetConditional(h, l > 0)``."""
    r, cell = _u32(ctx, runs, 1), _u32(ctx, left, 1)
    r[0] = (r[0] + 1) & _MASK
    cell[0] = (cell[0] - 1) & _MASK
    ctx.set_conditional(h, int(cell[0] > 0))


def arm(ctx: Any, h: int, left: int, runs: int, n: int) -> None:
    """``*left = n; *runs = 0; cudaGraphSetConditional(h, n > 0)``."""
    _u32(ctx, left, 1)[0] = n & _MASK
    _u32(ctx, runs, 1)[0] = 0
    ctx.set_conditional(h, int(n > 0))


KERNELS: dict[str, Callable[..., None]] = {
    "noop": noop, "fill_u32": fill_u32, "add_u32": add_u32, "copy_u32": copy_u32, "sig3": sig3,
    "set_value": set_value, "count_down": count_down, "arm": arm,
}


def register() -> None:
    """Register :data:`KERNELS` on the simulator, leaving names already registered alone."""
    from pygraphrt import sim

    have = sim.registered_kernels()
    for name, fn in KERNELS.items():
        if name not in have:
            sim.register_kernel(name, fn)
