"""The ``sim`` backend: the CUDA vendor table over the simulator's library.

:class:`SimVendor` is :class:`CudaVendor` (the simulator speaks CUDA 13's call forms and
enum values, through the ``cuda13`` binding) with the few answers that must differ:

* no driver API (``cudaGetDriverEntryPointByVersion`` finds nothing): kernels are the
  simulator's library kernels (``cudaKernel_t``) and always go through the runtime API
  (``cudaLaunchKernel``, ``cudaGraphKernelNodeGetParams``); foreign ``CUfunction``\\ s and
  ``rt.link`` are NotSupported;
* kernels whose parameter list the simulator does not know report no parameter info
  (``None``, as a runtime without ``cudaFuncGetParamInfo``) instead of failing;
* a function the simulator does not implement is "not simulated" (not "needs a newer
  runtime");
* errors carry the simulator's explanation (``detail``) and, for a failing simulated
  kernel, its Python exception as ``__cause__``; none is sticky (no context to corrupt);
* ``compiler()`` is the NVRTC stand-in that ``rt.Program`` uses on this backend.
"""

from __future__ import annotations

import os
import weakref
from typing import Any

from ... import errors
from ..._runtime import Backend
from ..cuda import CudaVendor
from ._api import SimRuntime
from ._lib import SimLib
from ._races import RacesFound, check_mode

LIBRARY_PATH = "<pygraphrt simulator (pure Python, no GPU)>"

NOT_SIMULATED = "is not simulated: the pygraphrt simulator (sim backend) does not implement it"


class SimVendor(CudaVendor):
    name = "sim"

    def allocation_range(self, address: int) -> tuple[int, int] | None:
        return None  # the simulator checks every range itself (InvalidValue), as CUDA should
    gate_by_driver = False
    sticky_errors = frozenset()

    # -- what is there ---------------------------------------------------------------------
    def _find_unavailable(self) -> dict[str, str]:
        since: dict[str, Any] = getattr(self.symbols, "SINCE", {})
        return {symbol: f"{symbol} {NOT_SIMULATED}" for symbol in since if not self._exported(symbol)}

    def fn(self, api: str) -> Any:
        try:
            return super().fn(api)
        except errors.NotSupported as exc:
            symbol = self.symbols.API_SYMBOLS.get(self.prefix + api, self.prefix + api)
            raise errors.NotSupported(self.prefix + api, vendor=self.name,
                                      detail=f"{symbol} {NOT_SIMULATED}") from exc.__cause__

    # -- errors ----------------------------------------------------------------------------
    def error(self, code: int, api: str, detail: str = "") -> errors.GraphRTError:
        failure = self.lib.take_failure(code)
        cause = failure[3] if failure is not None else None
        if cause is not None and not isinstance(cause, Exception):
            raise cause  # KeyboardInterrupt / SystemExit inside a host function or kernel
        if failure is not None and not detail:
            detail = failure[2]
        err = super().error(code, api, detail)
        if isinstance(cause, RacesFound):  # the race check refused a launch: its own error class
            return errors.RaceDetected(api, err.code, err.name, err.vendor, err.message, detail=err.detail,
                                       races=list(cause.races))
        if isinstance(cause, errors.RaceWarning):  # the race check's warning, made an error by the filters
            raise cause
        if cause is not None:
            err.__cause__ = cause
        return err

    # -- kernels: the runtime API only ---------------------------------------------------------
    def _entry_point(self, api: str) -> Any:
        raise errors.NotSupported(api, vendor=self.name,
                                  detail="the pygraphrt simulator has no CUDA driver API: kernels come from "
                                         "rt.Program / rt.Library on the sim backend (cudaKernel_t)")

    def launch_entry(self, func: Any, form: str) -> None:
        return None  # no C launch function: launches go through kernel_launcher

    def kernel_launcher(self, func: Any, form: str) -> Any:
        if form != "kernel":
            return super().kernel_launcher(func, form)  # NotSupported: no driver

        def launch(grid: tuple[int, int, int], block: tuple[int, int, int], smem: int, stream: Any,
                   argv: Any) -> None:
            self.launch_kernel(func, form, grid, block, smem, stream, argv, {})

        return launch

    def kernel_param_info(self, func: Any, form: str) -> list[tuple[int, int]] | None:
        try:
            return super().kernel_param_info(func, form)
        except errors.NotSupported:
            return None  # the simulator does not know this kernel's parameters

    def node_type_fallback(self, node: Any) -> Any:
        return None

    def link(self, inputs: list[tuple[str, Any, str]]) -> tuple[bytes, str]:
        raise errors.NotSupported("link", vendor=self.name,
                                  detail="the pygraphrt simulator has no device code to link")

    def compiler(self) -> Any:
        """The NVRTC stand-in ``rt.Program`` uses on the simulator."""
        c = self.__dict__.get("_compiler")
        if c is None:
            from ._nvrtc import SimCompiler

            c = self.__dict__["_compiler"] = SimCompiler()
        return c


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    scale = units.get(raw[-1].lower(), 1)
    digits = raw[:-1] if scale != 1 else raw
    try:
        value = int(digits) * scale
    except ValueError:
        raise errors.BackendError(f"{name}={raw!r} is not a number") from None
    if value < 1:
        raise errors.BackendError(f"{name}={raw!r} must be positive")
    return value


def settings() -> dict[str, Any]:
    """The simulator's configuration from the environment.

    ``PYGRAPHRT_SIM_DEVICES`` (default 1), ``PYGRAPHRT_SIM_MEMORY`` (bytes per device, with an
    optional k/m/g/t suffix; default 16g), ``PYGRAPHRT_SIM_ORDER`` (``creation``, ``random`` or
    ``random:SEED``: the order among nodes ready at the same time), ``PYGRAPHRT_SIM_RACES``
    (``off`` -- the default --, ``warn`` or ``raise``: check each graph launch for data races,
    see :func:`pygraphrt.sim.set_race_check`), ``PYGRAPHRT_SIM_PEER_ACCESS`` (``1`` -- the
    default: the devices reach each other's memory, as on an NVLink machine -- or ``0``: a machine
    without peer access, where ``cudaDeviceCanAccessPeer`` answers 0).
    """
    order = os.environ.get("PYGRAPHRT_SIM_ORDER", "creation").strip() or "creation"
    seed = None
    if order.startswith("random:"):
        order, raw_seed = order.split(":", 1)
        try:
            seed = int(raw_seed)
        except ValueError:
            raise errors.BackendError(f"PYGRAPHRT_SIM_ORDER=random:{raw_seed!r}: the seed is an int") from None
    if order not in ("creation", "random"):
        raise errors.BackendError(f"PYGRAPHRT_SIM_ORDER={order!r}: use creation, random or random:SEED")
    devices = _env_int("PYGRAPHRT_SIM_DEVICES", 1)
    if devices > 16:
        raise errors.BackendError(f"PYGRAPHRT_SIM_DEVICES={devices}: the simulator has at most 16 devices")
    raw_races = os.environ.get("PYGRAPHRT_SIM_RACES", "").strip() or "off"
    try:
        races = check_mode(raw_races, "PYGRAPHRT_SIM_RACES")
    except errors.InvalidValue:
        raise errors.BackendError(f"PYGRAPHRT_SIM_RACES={raw_races!r}: use off, warn or raise") from None
    raw_peer = os.environ.get("PYGRAPHRT_SIM_PEER_ACCESS", "").strip() or "1"
    if raw_peer not in ("0", "1"):
        raise errors.BackendError(f"PYGRAPHRT_SIM_PEER_ACCESS={raw_peer!r}: use 1 (peer access) or 0 (none)")
    return {"devices": devices, "total_memory": _env_int("PYGRAPHRT_SIM_MEMORY", 16 << 30),
            "order": order, "seed": seed, "races": races, "peer_access": raw_peer == "1"}


class SimBackend(Backend):
    """The ``sim`` backend: a :class:`Backend` whose runtime is the simulator (nothing is dlopened)."""

    def __init__(self) -> None:  # noqa: D107 - see Backend.__init__ for a real runtime
        from ..._bindings import cuda13
        from ..._bindings.cuda13 import symbols

        cfg = settings()
        self.vendor = "sim"
        self.binding = "cuda13"
        self.path = LIBRARY_PATH
        self.runtime_version = SimRuntime.VERSION
        self.ffi = cuda13.ffi
        self.runtime = SimRuntime(cfg["devices"], cfg["total_memory"], cfg["order"], cfg["seed"],
                                  peer_access=cfg["peer_access"])
        self.runtime.race_check = cfg["races"]
        self.lib = SimLib(self.runtime)
        self.ffi_mode = "sim (the simulator's lib; PYGRAPHRT_FAST does not apply)"
        self.driver_version = SimRuntime.VERSION
        version = (SimRuntime.VERSION // 1000, SimRuntime.VERSION % 1000 // 10)
        self.ops = SimVendor(self.ffi, self.lib, self.binding, symbols, runtime_version=version,
                             driver_version=version)
        self.library = None  # nothing dlopened
        self.live: weakref.WeakSet[Any] = weakref.WeakSet()
        self.current_pools: dict[int, Any] = {}
        self._info = None
        self.load_ms: dict[str, float] = {}  # nothing found or dlopened: no loading stages
        self.several = False  # (see Backend.__init__)
        self.memo: dict[str, Any] = {}  # (see Backend.__init__)

    def nccl_library(self) -> Any:
        """The simulator's stand-in for libnccl (:mod:`._nccl`): what ``pygraphrt.nccl`` calls
        on this backend, unless ``PYGRAPHRT_NCCL`` names a library."""
        lib = self.memo.get("_nccl")
        if lib is None:
            from ._nccl import SimNccl

            lib = self.memo["_nccl"] = SimNccl(self)
        return lib
