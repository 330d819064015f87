"""Switching the active backend inside a test process (one place for the tests that need it)."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator


@contextlib.contextmanager
def selected(vendor: str) -> Iterator[Any]:
    """Make ``vendor`` (``"sim"``, ``"cuda"``, ...) the active backend for the block and restore
    the previous one after -- directly, as ``pygraphrt.use`` would refuse while the other
    backend has live objects (the tests keep theirs)."""
    from pygraphrt import _runtime

    with _runtime._state.lock:
        saved = _runtime._state.active
        backend = _runtime.load(vendor)
        _runtime._state.active = backend
    try:
        yield backend
    finally:
        with _runtime._state.lock:
            _runtime._state.active = saved


@contextlib.contextmanager
def collecting_after(api: str) -> Iterator[None]:
    """Run the garbage collector right after each call of the runtime function ``api`` (its
    name without the vendor prefix) through the active backend: where a collection may happen in
    real code, as soon as the call has returned, before pygraphrt's method does."""
    import gc

    from pygraphrt import _runtime

    ops = _runtime.active().ops
    real_call = ops.__dict__.get("call")

    def call_then_collect(name: str, *args: Any) -> Any:
        rc = type(ops).call(ops, name, *args)
        if name == api:
            gc.collect()
        return rc

    ops.call = call_then_collect
    try:
        yield
    finally:
        if real_call is None:
            del ops.call
        else:
            ops.call = real_call


_sims: dict[int, Any] = {}


@contextlib.contextmanager
def simulator(devices: int) -> Iterator[Any]:
    """A simulator with ``devices`` devices (one per count for the process, as
    ``PYGRAPHRT_SIM_DEVICES`` would make it) as the active backend for the block, the previous
    one restored after -- as :func:`selected`."""
    import os

    from pygraphrt import _runtime

    with _runtime._state.lock:
        backend = _sims.get(devices)
        if backend is None:
            from pygraphrt._vendors.sim import SimBackend

            saved_env = os.environ.get("PYGRAPHRT_SIM_DEVICES")
            os.environ["PYGRAPHRT_SIM_DEVICES"] = str(devices)
            try:
                backend = _sims[devices] = SimBackend()
            finally:
                if saved_env is None:
                    del os.environ["PYGRAPHRT_SIM_DEVICES"]
                else:
                    os.environ["PYGRAPHRT_SIM_DEVICES"] = saved_env
        saved = _runtime._state.active
        _runtime._state.active = backend
    try:
        yield backend
    finally:
        with _runtime._state.lock:
            _runtime._state.active = saved
