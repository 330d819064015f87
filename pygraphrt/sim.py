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
dependencies); :func:`set_order` changes the order later.  ``PYGRAPHRT_SIM_RACES`` (``off``,
``warn`` or ``raise``): check every graph launch for data races (:func:`set_race_check`).
``PYGRAPHRT_SIM_PEER_ACCESS`` (``1``, the default, or ``0``: devices without peer access).

Several devices (``PYGRAPHRT_SIM_DEVICES=2``): streams, events, pools and graph memory belong
to a device, and the runtime's per-device rules hold (an event recorded on another device's
stream is ``cudaErrorInvalidResourceHandle``; a wait may use any device's event).  Copies
between devices always work; a kernel touching another device's memory without access (peer
access, pool access, a graph allocation's access descriptors) would fault on a GPU: the
launch fails with ``cudaErrorIllegalAddress`` and is recorded in :func:`undefined_calls`.

Handles: a handle that is not a live one of its kind (destroyed, or another kind's: a buffer's
address given as a stream) is refused with the runtime's error code -- and recorded, since a GPU's
runtime follows it and may crash: :func:`undefined_calls` lists such calls, so that code tested
here can be held to what a GPU needs.

Race checking: :func:`check_races` reports pairs of nodes with no path between them that touch
overlapping memory, one of them writing -- a missing dependency that runs fine here (one node at
a time) and bites on a GPU.  Memset / memcpy nodes touch the bytes their parameters name (2-D
rows precisely); kernel nodes the whole allocation each pointer argument points into (read-only
through ``const T *``, else read and write); see :mod:`pygraphrt._vendors.sim._races`.

Refusals: :func:`failing_calls` makes chosen runtime calls fail with a chosen error, to test what
code does when the runtime refuses.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Callable, Iterator

if TYPE_CHECKING:
    from ._vendors.sim._api import SimRuntime
    from ._vendors.sim._kernels import KernelContext
    from ._vendors.sim._races import Race, RaceNode

__all__ = ["register_kernel", "unregister_kernel", "registered_kernels", "KernelContext", "set_order",
           "runtime", "is_active", "read", "write", "memory", "check_races", "set_race_check", "set_peer_access", "undefined_calls", "Race",
           "RaceNode", "RaceDetected", "RaceWarning"]


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


def check_races(graph_or_exec: Any) -> "list[Race]":
    """Data races of a graph or an executable graph: unordered nodes touching the same memory.

    Parameters
    ----------
    graph_or_exec : pygraphrt.graph.Graph | pygraphrt.graph.GraphExec
        What to check.  An executable graph is checked as it runs now (after updates and
        parameter changes; disabled nodes touch nothing); its analysis is cached until one
        of those, or an allocation its kernels point into, changes.

    Returns
    -------
    list[Race]
        One :class:`Race` per pair of nodes of one graph with no path between them (in
        either direction) that touch overlapping memory where at least one writes; empty
        when there is none.  Each names both nodes (``race.first.node`` /
        ``race.second.node``: the pygraphrt Node objects when still reachable), the lowest
        overlapping ``[start, end)`` range and what each node does there.

    Notes
    -----
    A child-graph or conditional node counts, in its parent graph, as every access of the
    graphs it owns; each owned graph is also checked on its own edges (bodies of one
    conditional node never run concurrently: they are not compared).  Memset and memcpy
    nodes touch exactly the bytes (2-D / 3-D: the pitched rows) their parameters name;
    kernel nodes, for each pointer argument into device memory, the whole allocation holding
    it -- read-only when the parameter is declared ``const T *``, else read and written
    (conservatively); memory allocation / free nodes their whole allocation; host and other
    nodes nothing known.  Details: :mod:`pygraphrt._vendors.sim._races`.
    """
    from . import errors
    from .graph import Graph, GraphExec
    from ._vendors.sim import _races
    from ._vendors.sim._core import SimError

    rt = runtime()
    if isinstance(graph_or_exec, GraphExec):
        what = "executable graph"
    elif isinstance(graph_or_exec, Graph):
        what = "graph"
    else:
        raise errors.InvalidValue("pygraphrt.sim.check_races",
                                  detail=f"{graph_or_exec!r} is not a pygraphrt Graph or GraphExec")
    h = int(graph_or_exec)  # raises InvalidResourceHandle once closed
    with rt.lock:
        try:
            if isinstance(graph_or_exec, GraphExec):
                ex = rt.execs.get(h)
                if ex is None:
                    raise SimError("InvalidResourceHandle", f"{h:#x} is not a live {what} of the simulator")
                return list(_races.check_exec(rt, ex))
            g = rt.graphs.get(h)
            if g is None:
                raise SimError("InvalidResourceHandle", f"{h:#x} is not a live {what} of the simulator")
            return _races.check_graph(rt, g, graph_or_exec)
        except SimError as exc:
            cls = errors.InvalidResourceHandle if exc.name == "InvalidResourceHandle" else errors.InvalidValue
            raise cls("pygraphrt.sim.check_races", detail=exc.detail) from None


def set_race_check(mode: str = "off") -> str:
    """Check every graph launch for data races (see :func:`check_races`); returns the previous mode.

    ``"off"`` (the default, or ``PYGRAPHRT_SIM_RACES`` when the backend started): no check.
    ``"warn"``: a launch of a graph with races issues a :class:`pygraphrt.errors.RaceWarning`
    (its ``races`` attribute lists them) and runs.  ``"raise"``: it raises
    :class:`pygraphrt.errors.RaceDetected` (an InvalidValue naming both nodes of each race;
    ``races`` lists them) and nothing of the graph runs.  The analysis is cached per
    executable graph (a launch into a stream capture is refused, as by CUDA, and so checks nothing).
    """
    from ._vendors.sim._races import check_mode

    m = check_mode(mode, "pygraphrt.sim.set_race_check")
    rt = runtime()
    with rt.lock:
        previous, rt.race_check = rt.race_check, m
    return str(previous)


def set_peer_access(enabled: bool) -> bool:
    """Whether the simulated devices can reach each other's memory (``PYGRAPHRT_SIM_PEER_ACCESS``
    when the backend started; default True, an NVLink machine); returns the previous setting.

    With False the simulator is a machine without peer access: ``cudaDeviceCanAccessPeer``
    answers 0, enabling peer access is ``cudaErrorInvalidDevice``, and no kernel reaches another
    device's memory (whatever was enabled before); copies between devices still work.
    """
    if not isinstance(enabled, bool):
        from .errors import InvalidValue

        raise InvalidValue("pygraphrt.sim.set_peer_access", detail=f"enabled is a bool, not {enabled!r}")
    rt = runtime()
    with rt.lock:
        previous, rt.peer_capable = rt.peer_capable, enabled
    return bool(previous)


def undefined_calls(clear: bool = False) -> list[tuple[str, str]]:
    """Calls the simulator was given that a real runtime has undefined behaviour for.

    A handle that is not a live one of its kind -- a destroyed stream, event, graph, node,
    executable graph, library, kernel or pool, or a handle of another kind (a buffer's address
    as a stream) -- is refused here with the runtime's error code; a GPU's runtime follows it
    as a pointer and may crash.  pygraphrt never passes one on from its own objects (the
    generated API test, ``tests/api_fuzz.py``, checks this after every call), so an entry here
    means a raw call or a handle wrapped from outside.  Each entry is ``(api, why)``, oldest
    first (the latest 1000); ``clear`` empties the record.
    """
    rt = runtime()
    with rt.lock:
        out = list(rt.undefined)
        if clear:
            rt.undefined.clear()
    return out


@contextlib.contextmanager
def failing_calls(choose: Callable[[str], "str | None"]) -> Iterator[None]:
    """Make calls into the simulated runtime fail, as a refusing runtime would.

    Inside the block, ``choose(name)`` is asked before each C function the simulator serves
    runs (``name``: its symbol, such as ``"cudaGraphInstantiateWithFlags"``), from any thread --
    pygraphrt's own calls included (queries, destroys, a finalizer's).  Returning an error name
    without its prefix (``"MemoryAllocation"``, ``"InvalidValue"``) makes that call return
    ``cudaError<name>`` without doing anything; None lets it run.  The simulator's NCCL calls
    (``"ncclAllReduce"``, ...) are asked too: for them, an ``ncclResult_t`` name without its
    prefix (``"InvalidUsage"``, ``"SystemError"``, ``"RemoteError"``, ...).

    Parameters
    ----------
    choose : callable
        ``choose(name) -> str | None``.  It runs with the simulator's lock held: it must not
        call into pygraphrt.

    Raises
    ------
    pygraphrt.errors.IllegalState
        Another ``failing_calls`` block is active.
    pygraphrt.errors.InvalidValue
        ``choose`` is not callable.  (Where it returns what is not an error name, the call it
        was asked for fails saying so: ``cudaErrorUnknown``, or ``ncclInvalidArgument``.)

    Examples
    --------
    >>> with sim.failing_calls(lambda name: "MemoryAllocation" if name == "cudaMalloc" else None):
    ...     rt.malloc(16)                                         # doctest: +SKIP
    Traceback (most recent call last):
    pygraphrt.errors.OutOfMemory: cudaMalloc failed: cudaErrorMemoryAllocation (2): ...
    """
    from . import errors
    from ._vendors.sim._core import SimError, code
    from ._vendors.sim._nccl import failure_results

    if not callable(choose):
        raise errors.InvalidValue("pygraphrt.sim.failing_calls", detail=f"{choose!r} is not callable")
    rt = runtime()

    def fail(name: str) -> str | None:
        chosen = choose(name)
        if chosen is None:
            return None
        if name.startswith("nccl"):
            results = failure_results()
            if chosen not in results:
                raise SimError("Unknown", f"pygraphrt.sim.failing_calls: {chosen!r}, which choose() gave for "
                               f"{name}, is not an ncclResult_t name ({', '.join(results)})")
            return str(chosen)
        try:
            code(chosen)
        except (KeyError, AttributeError, TypeError):
            raise SimError("Unknown", f"pygraphrt.sim.failing_calls: {chosen!r}, which choose() gave for "
                           f"{name}, is not a cudaError name") from None
        return str(chosen)

    with rt.lock:
        if rt.fail_call is not None:
            raise errors.IllegalState("pygraphrt.sim.failing_calls", detail="another failing_calls block is active")
        rt.fail_call = fail
    try:
        yield
    finally:
        with rt.lock:
            rt.fail_call = None


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
    if name in ("Race", "RaceNode"):
        from ._vendors.sim import _races

        return getattr(_races, name)
    if name in ("RaceDetected", "RaceWarning"):
        from . import errors

        return getattr(errors, name)
    raise AttributeError(f"module 'pygraphrt.sim' has no attribute {name!r}")
