"""The ``sim`` backend: CUDA graphs and stream capture on the CPU, without a GPU.

Select it explicitly -- ``pygraphrt.use("sim")`` or ``PYGRAPHRT_BACKEND=sim`` (``auto`` never
chooses it) -- and graph-building code runs as written: streams, events, memory at
simulated device addresses, explicit graphs with every node type, edges with edge data,
capture with its rules, instantiate / launch / update, graph memory.  Work executes when it
is submitted, in stream order, on the calling thread.

Kernels are Python functions registered for kernel names; ``rt.Program(source)`` finds the
``extern "C" __global__`` kernels of the source (and their parameter lists) without
compiling it::

    import pygraphrt as rt
    from pygraphrt import sim

    @sim.register_kernel("scale")
    def scale(ctx, out, inp, s, n):          # ctx: a KernelContext; pointers are int addresses
        x = ctx.array(inp, "f4", n)           # numpy views of simulated device memory
        ctx.array(out, "f4", n)[:] = s * x

    rt.use("sim")
    prog = rt.Program('extern "C" __global__ void scale(float *out, const float *in, float s, int n) {}')
    k = prog.kernel("scale", signature="float *out, const float *in, float s, int n")

A kernel launched (or a kernel node run) without a registered function fails with
``NotSupported`` naming it; building, reading and updating its nodes works regardless.

Configuration (environment, read when the backend starts): ``PYGRAPHRT_SIM_DEVICES`` (number
of devices, default 1), ``PYGRAPHRT_SIM_MEMORY`` (bytes per device, k/m/g suffix; default
16g), ``PYGRAPHRT_SIM_ORDER`` (``creation`` -- nodes ready together run in creation order --,
``random`` or ``random:SEED`` -- a random valid order at each launch, to flush out missing
dependencies); :func:`set_order` changes the order later.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from ._vendors.sim._api import SimRuntime
    from ._vendors.sim._kernels import KernelContext

__all__ = ["register_kernel", "unregister_kernel", "registered_kernels", "KernelContext", "set_order",
           "runtime", "is_active", "read", "write", "memory"]


def register_kernel(name: str, fn: Callable[..., Any] | None = None, *, signature: Any = None) -> Any:
    """Run ``fn(ctx, *args)`` for each launch of the kernel called ``name``.

    ``ctx`` is a :class:`KernelContext` (launch dimensions, device memory access,
    ``set_conditional``); ``args`` are the launch's arguments decoded by the kernel's
    parameter list (pointers as int device addresses).  ``signature`` (a C parameter list
    or a sequence of types, as for ``Program.kernel``) gives the parameters of a kernel
    whose declaration the simulator cannot read (templates through name expressions,
    struct parameters).  Without ``fn``, a decorator.  Registering a name again replaces
    the function; kernels look their function up at each launch.
    """
    from ._vendors.sim import _kernels

    if fn is None:
        def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
            _kernels.register(name, f, signature)
            return f

        return decorate
    _kernels.register(name, fn, signature)
    return fn


def unregister_kernel(name: str) -> None:
    """Forget the function registered for ``name`` (its launches fail with NotSupported again)."""
    from ._vendors.sim import _kernels

    _kernels.unregister(name)


def registered_kernels() -> dict[str, Callable[..., Any]]:
    """Kernel name -> registered function."""
    from ._vendors.sim import _kernels

    return {name: reg.fn for name, reg in _kernels.registered().items()}


def is_active() -> bool:
    """Whether the active backend is the simulator (selects a backend if none is yet)."""
    from . import _runtime

    return _runtime.active().vendor == "sim"


def runtime() -> "SimRuntime":
    """The active simulator's state (BackendError when the active backend is not ``sim``)."""
    from . import _runtime, errors

    b = _runtime.active()
    if b.vendor != "sim":
        raise errors.BackendError(f"the active backend is {b.vendor}, not the simulator: pygraphrt.use('sim')")
    return b.runtime  # type: ignore[attr-defined, no-any-return]


def set_order(mode: str = "creation", seed: int | None = None) -> None:
    """How the simulator orders graph nodes that are ready at the same time.

    ``"creation"`` (the default): creation order.  ``"random"``: a random valid order at
    every launch (``seed`` makes it repeatable) -- every edge is still respected, so a
    result that changes between orders reveals a missing dependency.
    """
    runtime().set_order(mode, seed)


def memory(address: int, nbytes: int) -> memoryview:
    """A writable view of ``nbytes`` of simulated device memory at ``address``."""
    rt = runtime()
    with rt.lock:
        try:
            return rt.memory.view(int(address), int(nbytes), "pygraphrt.sim.memory")
        except Exception as exc:
            from ._vendors.sim._core import SimError

            if isinstance(exc, SimError):
                from . import errors

                raise errors.InvalidValue("pygraphrt.sim.memory", detail=exc.detail) from None
            raise


def read(address: int, nbytes: int) -> bytes:
    """``nbytes`` of simulated device memory at ``address``."""
    return bytes(memory(address, nbytes))


def write(address: int, data: Any) -> None:
    """Write a bytes-like object to simulated device memory at ``address``."""
    mv = memoryview(data).cast("B")
    memory(address, len(mv))[:] = mv


def __getattr__(name: str) -> Any:
    if name == "KernelContext":
        from ._vendors.sim._kernels import KernelContext

        return KernelContext
    raise AttributeError(f"module 'pygraphrt.sim' has no attribute {name!r}")
