"""The simulator's C-call surface: a ``lib`` object that behaves like the cffi library.

Each runtime function the simulator implements is a real C function pointer
(``ffi.callback``) of the exact prototype the ``cuda13`` binding declares, so calls from
the layer go through cffi's own argument conversion (a wrong argument type raises
``TypeError`` as it would with libcudart) and ``ffi.typeof(lib.cudaGraphAddNode)`` tells the
prototype.  Enum members resolve as they do on a cffi library; a function the simulator
does not implement is missing (``AttributeError``), like a symbol the library does not
export.

A failing call returns its ``cudaError_t``; its explanation (and the Python exception
behind it, e.g. a kernel's) is kept per thread for :meth:`SimVendor.error`
(:meth:`SimLib.take_failure`).  ``cudaGetLastError`` / ``cudaPeekAtLastError`` report the
thread's last error as the runtime does.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

from ._core import ERROR_NAMES, SimError, code

_UNKNOWN = code("Unknown")
_INVALID = code("InvalidValue")

# Short descriptions of the codes the simulator returns (cudaGetErrorString).
_MESSAGES = {
    "cudaSuccess": "no error",
    "cudaErrorInvalidValue": "invalid argument",
    "cudaErrorMemoryAllocation": "out of memory (simulated device)",
    "cudaErrorInvalidDevice": "invalid device ordinal",
    "cudaErrorInvalidResourceHandle": "invalid resource handle",
    "cudaErrorNotSupported": "operation not supported (by the pygraphrt simulator)",
    "cudaErrorIllegalState": "the operation is not valid in the current state",
    "cudaErrorStreamCaptureUnsupported": "operation not permitted when stream is capturing",
    "cudaErrorStreamCaptureInvalidated": "operation failed due to a previous error during capture",
    "cudaErrorStreamCaptureMerge": "operation would result in a merge of separate capture sequences",
    "cudaErrorStreamCaptureUnmatched": "capture was not ended in the same stream as it began",
    "cudaErrorStreamCaptureUnjoined": "capturing stream has unjoined work",
    "cudaErrorStreamCaptureIsolation": "dependency created on uncaptured work in another stream",
    "cudaErrorStreamCaptureImplicit": "operation would make the legacy stream depend on a capturing "
                                      "blocking stream",
    "cudaErrorStreamCaptureWrongThread": "attempt to terminate a thread-local capture sequence from "
                                         "another thread",
    "cudaErrorCapturedEvent": "operation not permitted on an event last recorded in a capturing stream",
    "cudaErrorGraphExecUpdateFailure": "the graph update was not performed because it included changes "
                                       "which violated constraints specific to instantiated graph update",
    "cudaErrorLossyQuery": "the query would lose edge data: ask for it",
    "cudaErrorInvalidDeviceFunction": "invalid device function",
    "cudaErrorInvalidConfiguration": "invalid configuration argument",
    "cudaErrorInvalidKernelImage": "device kernel image is invalid",
    "cudaErrorSymbolNotFound": "named symbol not found",
    "cudaErrorIllegalAddress": "an illegal memory access was encountered",
    "cudaErrorLaunchFailure": "unspecified launch failure",
    "cudaErrorInvalidPitchValue": "invalid pitch argument",
    "cudaErrorInvalidMemcpyDirection": "invalid copy direction for memcpy",
    "cudaErrorUnknown": "unknown error",
}


def _prototype(proto: dict[str, Any]) -> str:
    params = ", ".join(t for t, _ in proto["params"]) or "void"
    return f"{proto['result']}(*)({params})"


class SimLib:
    """The ``lib`` of the ``sim`` backend: C function pointers into a :class:`SimRuntime`."""

    def __init__(self, runtime: Any, binding: str = "cuda13") -> None:
        pkg = importlib.import_module(f"pygraphrt._bindings.{binding}")
        self._ffi = ffi = pkg.ffi
        self._runtime = runtime
        # Enum members are part of the binding, not of any library: the process itself serves.
        self._constants = ffi.dlopen(None)
        functions = pkg.manifest()["functions"]
        self._symbols = {proto["symbol"] for proto in functions.values()}
        self._fns: dict[str, Any] = {}
        self._strings: dict[tuple[str, int], Any] = {}
        special: dict[str, Callable[..., Any]] = {
            "cudaGetLastError": self._get_last_error, "cudaPeekAtLastError": self._peek_last_error,
            "cudaGetErrorName": self._error_name, "cudaGetErrorString": self._error_string,
        }
        for proto in functions.values():
            symbol = proto["symbol"]
            if symbol in special:
                self._fns[symbol] = ffi.callback(_prototype(proto), special[symbol])
                continue
            impl = getattr(runtime, symbol, None)
            if impl is None:
                continue
            self._fns[symbol] = ffi.callback(_prototype(proto), self._entry(symbol, impl),
                                             error=_UNKNOWN, onerror=self._lost(symbol))

    # -- calls ---------------------------------------------------------------------------------
    def _entry(self, symbol: str, impl: Callable[..., Any]) -> Callable[..., int]:
        rt = self._runtime
        lock = rt.lock

        def call(*args: Any) -> int:
            t = rt.thread
            t.failure = None
            try:
                with lock:
                    fail = rt.fail_call
                    if fail is not None and (name := fail(symbol)) is not None:
                        raise SimError(name, f"{symbol} failed as pygraphrt.sim.failing_calls asked")
                    impl(*args)
                return 0
            except SimError as e:
                if e.undefined:
                    rt.undefined.append((symbol, e.detail))
                t.failure = (symbol, e.code, e.detail, e.cause)
                t.last_error = e.code
                return e.code
            except BaseException as e:  # noqa: BLE001 - must not unwind into C; reported by SimVendor.error
                if isinstance(e, RuntimeError) and "null pointer" in str(e):
                    # cffi refused to go through a NULL pointer the caller gave: the runtime's answer
                    t.failure = (symbol, _INVALID, f"{symbol}: NULL pointer argument ({e})", None)
                    t.last_error = _INVALID
                    return _INVALID
                t.failure = (symbol, _UNKNOWN, f"internal error of the pygraphrt simulator in {symbol}: "
                                               f"{type(e).__name__}: {e}", e)
                t.last_error = _UNKNOWN
                return _UNKNOWN

        call.__name__ = symbol
        return call

    def _lost(self, symbol: str) -> Callable[..., None]:
        rt = self._runtime

        def onerror(exc_type: Any, exc: Any, tb: Any) -> None:  # an exception converting the result
            rt.thread.failure = (symbol, _UNKNOWN, f"internal error of the pygraphrt simulator in {symbol}: "
                                                   f"{exc!r}", exc)

        return onerror

    def take_failure(self, code_: int) -> tuple[str, int, str, BaseException | None] | None:
        """The explanation of this thread's last failed call, if it failed with ``code_`` (once)."""
        t = self._runtime.thread
        f = t.failure
        if f is None or f[1] != code_:
            return None
        t.failure = None
        return f

    def _get_last_error(self) -> int:
        t = self._runtime.thread
        e, t.last_error = t.last_error, 0
        return e

    def _peek_last_error(self) -> int:
        return int(self._runtime.thread.last_error)

    def _cstring(self, kind: str, value: int, text: str) -> Any:
        key = (kind, value)
        s = self._strings.get(key)
        if s is None:
            s = self._strings[key] = self._ffi.new("char[]", text.encode())
        return s

    def _error_name(self, value: int) -> Any:
        return self._cstring("name", value, ERROR_NAMES.get(value, "cudaErrorUnknown"))

    def _error_string(self, value: int) -> Any:
        name = ERROR_NAMES.get(value)
        text = _MESSAGES.get(name or "", name or "unrecognized error code")
        return self._cstring("string", value, text)

    # -- the library's attributes ---------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        fns = self.__dict__.get("_fns")
        if fns is not None and name in fns:
            return fns[name]
        if name.startswith("_") or fns is None:
            raise AttributeError(name)
        if name in self._symbols:
            raise AttributeError(f"{name} is not implemented by the pygraphrt simulator")
        try:
            return getattr(self._constants, name)
        except (AttributeError, self._ffi.error):
            raise AttributeError(f"the cuda13 binding has no constant {name}") from None

    def __dir__(self) -> list[str]:
        return sorted(self._fns)

    def __repr__(self) -> str:
        return f"<pygraphrt simulator library: {len(self._fns)} CUDA runtime functions>"
