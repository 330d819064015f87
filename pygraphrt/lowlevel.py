"""The raw layer, for libraries built on pygraphrt.

``ffi`` and ``lib`` are the active backend's cffi FFI and opened library (the
generated binding, loaded with pygraphrt's rules); ``manifest()`` describes
every function, enum and record.  Handles convert to and from Python ints so
they interoperate with cuda.bindings, CuPy, PyTorch and cuda.core::

    from pygraphrt import lowlevel
    g = lowlevel.ffi.new("cudaGraph_t *")
    lowlevel.check(lowlevel.lib.cudaGraphCreate(g, 0), "cudaGraphCreate")
    as_int = lowlevel.handle_to_int(g[0])
"""

from __future__ import annotations

from typing import Any

from . import _runtime

__all__ = ["ffi", "lib", "manifest", "check", "handle_to_int", "int_to_handle", "backend_object",
           "unavailable"]


def backend_object() -> _runtime.Backend:
    """The active backend object (:class:`pygraphrt._runtime.Backend`): its ``lib``, ``ffi`` and
    vendor table ``ops``."""
    return _runtime.active()


def check(rc: int, api: str) -> None:
    """Raise the vendor-neutral exception for a non-zero return code of ``api``."""
    _runtime.active().check(rc, api)


def handle_to_int(handle: Any) -> int:
    """The address a handle (any cffi pointer) holds, as an int (0 for NULL)."""
    return int(_runtime.active().ffi.cast("uintptr_t", handle))


def int_to_handle(value: int, ctype: str) -> Any:
    """A cffi handle of C type ``ctype`` (``"cudaStream_t"``) from an int."""
    return _runtime.active().ffi.cast(ctype, value)


def unavailable() -> dict[str, str]:
    """Functions of the active binding that the loaded runtime (or its driver) cannot run:
    symbol -> why, naming the version each needs and the version loaded.  Calling one
    through pygraphrt raises NotSupported with that text; ``lib`` itself does not check."""
    return dict(_runtime.active().ops.unavailable)


def manifest() -> dict[str, Any]:
    """The active binding's manifest."""
    import importlib

    return importlib.import_module(f"pygraphrt._bindings.{_runtime.active().binding}").manifest()


def __getattr__(name: str) -> Any:  # ffi / lib resolve against the active backend
    if name == "ffi":
        return _runtime.active().ffi
    if name == "lib":
        return _runtime.active().lib
    raise AttributeError(name)
