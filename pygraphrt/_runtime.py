"""Loading a vendor runtime and the one backend switch.

Only one backend is active at a time.  Both vendors' libraries may be loaded in
one process (each through its own binding), but objects created under one
backend belong to it: switching with live objects refuses with BackendError
rather than letting a CUDA handle reach HIP.
"""

from __future__ import annotations

import importlib
import os
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any, Callable

from . import errors
from ._versions import version_str as _version_str
from ._versions import version_tuple
from .errors import SIM_HINT

if TYPE_CHECKING:
    from ._vendors import Vendor

SUPPORTED = {"cuda": {12: "cuda12", 13: "cuda13"}, "hip": {6: "hip6", 7: "hip7"}}


if TYPE_CHECKING:
    from ._records import BackendInfo


def __getattr__(name: str) -> Any:  # BackendInfo: a dataclass, defined on first use (._records)
    if name in ("BackendInfo",):  # checked first: importers probe names such as __path__
        from . import _records

        return _records.lazy(globals(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _binding_of(vendor: str, version: int) -> str | None:
    """The binding that serves ``vendor``'s runtime of ``version`` (as the runtime reports it), or None."""
    major = version // 1000 if vendor == "cuda" else version // 10_000_000
    return SUPPORTED[vendor].get(major)


class Backend:
    """A loaded runtime: its binding's ``ffi``/``lib`` and the vendor table."""

    def __init__(self, vendor: str, path: str, version: int,
                 driver_init: threading.Thread | None = None) -> None:
        binding = _binding_of(vendor, version)
        if binding is None:
            supported = ", ".join(f"{vendor} {m}.x" for m in SUPPORTED[vendor])
            raise errors.BackendError(
                f"{path} is {vendor} runtime {_version_str(vendor, version)}; "
                f"pygraphrt supports {supported}")
        from . import _fast

        t_modules = time.perf_counter()
        # The vendor tables' modules (and pygraphrt.enums with them) load here, while the
        # driver initialises on another thread (load: start_driver_init), not with this module.
        from ._vendors import vendor_class

        t0 = time.perf_counter()
        # Milliseconds each stage of loading took (library search, dlopen and version,
        # binding, driver version, vendor tables): what benchmarks/breakdown.py reports.
        self.load_ms: dict[str, float] = {}
        #: True once pygraphrt saw a device other than 0 in use with this backend (made current,
        #: or holding an object made through it): the launch paths then check kernel arguments'
        #: devices and graphs record the device of each node (pygraphrt.multidevice.now_several).
        #: An instance attribute, not a class default: the hot paths read it for every node and
        #: launch, and CPython specializes that read only where no class attribute has the name.
        self.several = False
        self.vendor = vendor
        self.binding = binding
        self.path = path
        self.runtime_version = version
        # The compiled API-mode extension (PYGRAPHRT_FAST) or the ABI module: the same
        # ffi / lib interface either way.  ``ffi_mode`` says which, and why.
        self.ffi, self.lib, self.ffi_mode = _fast.open_binding(binding, path)
        symbols = importlib.import_module(f"pygraphrt._bindings.{binding}.symbols")
        t1 = time.perf_counter()
        if driver_init is not None:  # the runtime's driver initialisation, begun at dlopen
            driver_init.join()
        # The driver's version decides, with the runtime's, which of the binding's
        # newer functions this runtime can run (Vendor.unavailable, found now).
        drv = self.ffi.new("int *")
        try:
            rc = getattr(self.lib, f"{'cuda' if vendor == 'cuda' else 'hip'}DriverGetVersion")(drv)
        except (AttributeError, self.ffi.error):
            rc = 1
        self.driver_version = drv[0] if rc == 0 and drv[0] > 0 else None
        t2 = time.perf_counter()
        self.ops: Vendor = vendor_class(vendor)(
            self.ffi, self.lib, binding, symbols, runtime_version=version_tuple(vendor, version),
            driver_version=version_tuple(vendor, self.driver_version) if self.driver_version else None)
        self.load_ms.update({"vendor modules": (t0 - t_modules) * 1e3,
                             "binding (ffi, lib, symbols)": (t1 - t0) * 1e3,
                             "driver version (its initialisation's rest)": (t2 - t1) * 1e3,
                             "vendor tables": (time.perf_counter() - t2) * 1e3})
        # The library as _runtime_version opened it (cffi's backend; load sets it): holding it
        # keeps the library loaded whatever the binding does with its own handle.
        self.library: Any = None
        self.live: weakref.WeakSet[Any] = weakref.WeakSet()
        self.current_pools: dict[int, Any] = {}  # device -> owned MemPool set as its current pool (kept alive)
        self._info: BackendInfo | None = None
        #: What the modules above work out once per backend and keep, each under its own name
        #: (``"_device_count"``: pygraphrt.multidevice's, ``"_hot_methods"``: graph/_hot's ...).
        #: A dict of its own, not the instance's ``__dict__``: reading an instance's ``__dict__``
        #: turns its attributes into a dict that CPython 3.11 and 3.12 no longer specialize
        #: reads of, and every later ``backend.several`` (read per node and launch) would cost
        #: about 300 machine instructions instead of 20 (tests/test_python_adds.py checks that none is read).
        self.memo: dict[str, Any] = {}

    @property
    def enums(self) -> Any:
        """The binding's IntEnums (imported on first use: creating them takes a while)."""
        return importlib.import_module(f"pygraphrt._bindings.{self.binding}.enums")

    def check(self, rc: int, api: str) -> None:
        if rc:
            raise self.ops.error(rc, api)

    def device_count(self) -> int:
        """The number of devices the runtime reports (0 where it reports an error)."""
        count = self.ffi.new("int *")
        return count[0] if self.ops.fn("GetDeviceCount")(count) == 0 else 0

    def info(self) -> BackendInfo:
        from ._records import BackendInfo

        ffi, ops = self.ffi, self.ops
        driver = ffi.new("int *")
        rc = ops.fn("DriverGetVersion")(driver)
        count = ffi.new("int *")
        rc2 = ops.fn("GetDeviceCount")(count)
        err = None if rc2 == 0 else str(ops.error(rc2, ops.prefix + "GetDeviceCount"))
        return BackendInfo(self.vendor, self.binding, self.path, self.runtime_version,
                           driver[0] if rc == 0 and driver[0] else None,
                           count[0] if rc2 == 0 else 0, err, self.ffi_mode)


# ---------------------------------------------------------------- finding libraries
# dlopen mode of a candidate: pygraphrt's own, or cuda-pathfinder's (it loads RTLD_GLOBAL).
LOCAL = os.RTLD_NOW | getattr(os, "RTLD_LOCAL", 0)


def _cuda_candidates() -> list[tuple[str, str, int]]:
    """(path or soname, how it was found, dlopen mode)."""
    env = os.environ.get("PYGRAPHRT_CUDART")
    if env:
        return [(env, "PYGRAPHRT_CUDART", LOCAL)]
    from . import _pathfinder

    found: list[tuple[str, str, int]] = []
    quick = _pathfinder.site_packages_cudart()  # cuda-pathfinder's answer when it is certain
    if quick is not None:
        found.append((quick, _pathfinder.HOW, _pathfinder.LOAD_MODE))
    else:
        try:
            from cuda.pathfinder import load_nvidia_dynamic_lib

            dl = load_nvidia_dynamic_lib("cudart")
            if dl.abs_path:
                found.append((dl.abs_path, f"cuda-pathfinder ({getattr(dl, 'found_via', 'found')})", LOCAL))
        except Exception as exc:  # not installed, or found nothing
            found.append(("", f"cuda-pathfinder: {type(exc).__name__}: {exc}", LOCAL))
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home:
        for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
            p = os.path.join(home, "lib64", name)
            if os.path.exists(p):
                found.append((p, "CUDA_HOME", LOCAL))
                break
    found += [("libcudart.so.13", "system loader", LOCAL), ("libcudart.so.12", "system loader", LOCAL)]
    return found


def _hip_candidates() -> list[tuple[str, str, int]]:
    env = os.environ.get("PYGRAPHRT_HIP_LIB")
    if env:
        return [(env, "PYGRAPHRT_HIP_LIB", LOCAL)]
    found = []
    for var in ("ROCM_PATH", "HIP_PATH"):
        if os.environ.get(var):
            found.append((os.path.join(os.environ[var], "lib", "libamdhip64.so"), var, LOCAL))
    found.append(("/opt/rocm/lib/libamdhip64.so", "/opt/rocm", LOCAL))
    found += [("libamdhip64.so.7", "system loader", LOCAL), ("libamdhip64.so.6", "system loader", LOCAL),
              ("libamdhip64.so", "system loader", LOCAL)]
    return found


class Attempt:
    """One library pygraphrt tried: where, how it was found, what happened."""

    __slots__ = ("vendor", "candidate", "how", "outcome")

    def __init__(self, vendor: str, candidate: str, how: str, outcome: str) -> None:
        self.vendor, self.candidate, self.how, self.outcome = vendor, candidate, how, outcome

    def __repr__(self) -> str:
        return (f"Attempt(vendor={self.vendor!r}, candidate={self.candidate!r}, how={self.how!r}, "
                f"outcome={self.outcome!r})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Attempt):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass it was


class _State:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.requested: str | None = None
        self.active: Backend | None = None
        self.loaded: dict[str, Backend] = {}
        self.attempts: list[Attempt] = []


_state = _State()


class _Library:
    """A runtime library as ``dlopen(path, mode)`` gives it, through cffi's backend (importing
    ctypes for it would cost a couple of milliseconds of every cold start).  The library stays
    loaded while this object lives (dropping it is ``dlclose``)."""

    def __init__(self, path: str, mode: int) -> None:
        import _cffi_backend

        self._cb = _cffi_backend
        self.lib = _cffi_backend.load_library(path, mode)  # OSError where it cannot be loaded

    def int_query(self, name: str) -> Callable[[], tuple[int, int]] | None:
        """``name`` as a call of the form ``int f(int *)`` giving (return code, value), or None
        where the library does not export it."""
        cb = self._cb
        c_int = cb.new_primitive_type("int")
        int_p = cb.new_pointer_type(c_int)
        try:
            fn = self.lib.load_function(cb.new_function_type((int_p,), c_int, 0), name)
        except AttributeError:
            return None

        def query() -> tuple[int, int]:
            out = cb.newp(int_p, 0)
            return fn(out), out[0]

        return query

    def start_driver_init(self, vendor: str) -> threading.Thread | None:
        """Start the runtime's initialisation of the driver (cuInit: some 100 ms on an H100) on a
        thread, by the same driver-version query the backend makes next, so that it runs while
        the binding and its tables load; :class:`Backend` joins it before its own query.  The
        runtime initialises once, whichever thread asks first (cffi calls release the GIL)."""
        query = self.int_query(f"{'cuda' if vendor == 'cuda' else 'hip'}DriverGetVersion")
        if query is None:
            return None
        t = threading.Thread(target=query, name="pygraphrt-driver-init", daemon=True)
        t.start()
        return t


def _runtime_version(vendor: str, path: str, mode: int = LOCAL) -> tuple[int, str, _Library]:
    """(the runtime's version, its absolute path, the loaded library: keep it, or the library
    is closed again before the binding opens it)."""
    lib = _Library(path, mode)
    query = lib.int_query("cudaRuntimeGetVersion" if vendor == "cuda" else "hipRuntimeGetVersion")
    if query is None:  # not this vendor's runtime
        raise OSError(f"{path} exports no {vendor} runtime version query")
    rc, version = query()
    if rc != 0:
        raise errors.BackendError(f"{path}: runtime version query returned error {rc}")
    real = path
    if "/" in path:
        return version, path, lib
    try:  # the absolute path, when found through the system loader
        import re

        with open("/proc/self/maps") as maps:
            base = os.path.basename(path)
            for line in maps:
                m = re.search(r"(/\S*" + re.escape(base.split(".so")[0]) + r"\.so\S*)", line)
                if m:
                    real = m.group(1)
                    break
    except OSError:
        pass
    return version, real, lib


def load(vendor: str) -> Backend:
    """Load ``vendor``'s runtime (once) and return its backend."""
    with _state.lock:
        if vendor in _state.loaded:
            return _state.loaded[vendor]
        if vendor not in SUPPORTED:
            from . import _backends  # (not on a GPU runtime's cold start)

            if vendor not in _backends.PLUGINS:
                raise errors.BackendError(f"unknown backend {vendor!r}; use {_known_names()}")
            # a plug-in, e.g. the CPU simulator: nothing to find or dlopen
            plugin, outcome = _backends.create(vendor)
            _state.attempts.append(Attempt(vendor, plugin.path, "requested", outcome))
            _state.loaded[vendor] = plugin
            return plugin
        reasons = []
        t0 = time.perf_counter()
        candidates = _cuda_candidates() if vendor == "cuda" else _hip_candidates()
        t1 = time.perf_counter()
        for cand, how, mode in candidates:
            if not cand:
                reasons.append(how)
                _state.attempts.append(Attempt(vendor, "", how, "not found"))
                continue
            if "/" in cand and not os.path.exists(cand):
                _state.attempts.append(Attempt(vendor, cand, how, "no such file"))
                reasons.append(f"{cand} ({how}): no such file")
                continue
            try:
                t2 = time.perf_counter()
                version, real, library = _runtime_version(vendor, cand, mode)
                t3 = time.perf_counter()
            except OSError as exc:
                _state.attempts.append(Attempt(vendor, cand, how, f"cannot load: {exc}"))
                reasons.append(f"{cand} ({how}): {exc}")
                continue
            driver_init = library.start_driver_init(vendor) if _binding_of(vendor, version) else None
            try:
                backend = Backend(vendor, real, version, driver_init)  # BackendError on unsupported version
            finally:
                if driver_init is not None:  # joined by Backend already, unless it failed first
                    driver_init.join()
            backend.library = library  # loaded for the life of the backend, as the binding's own
            backend.load_ms = {"library search": (t1 - t0) * 1e3, "dlopen + runtime version": (t3 - t2) * 1e3,
                               **backend.load_ms}
            _state.attempts.append(Attempt(vendor, real, how,
                                           f"loaded {vendor} {_version_str(vendor, version)} "
                                           f"as {backend.binding}"))
            _state.loaded[vendor] = backend
            return backend
        raise errors.BackendError(f"no {vendor} runtime library could be loaded; tried: "
                                  + "; ".join(reasons))


def _plugins() -> dict[str, Any]:
    from . import _backends

    return _backends.PLUGINS


def _known_names() -> str:
    """The names :func:`use` takes, for its error: "'cuda', 'hip', 'sim' or 'auto'"."""
    return ", ".join(repr(name) for name in (*SUPPORTED, *_plugins())) + " or 'auto'"


def use(vendor: str = "auto") -> Backend:
    """Select the active backend: ``"cuda"``, ``"hip"``, ``"sim"`` or ``"auto"``.

    ``auto`` takes the first of CUDA, HIP that loads and has a device; if
    neither has a device, the first that loads (never ``sim``, the CPU
    simulator, which is only used when asked for).  Switching away from a backend
    that still has live objects (streams, graphs, ...) raises BackendError.
    """
    with _state.lock:
        if vendor != "auto" and vendor not in SUPPORTED and vendor not in _plugins():
            raise errors.BackendError(f"unknown backend {vendor!r}; use {_known_names()}")
        current = _state.active
        if current is not None and current.vendor == vendor:
            return current
        if current is not None and vendor != "auto" and len(current.live):
            # Refuse before loading anything: the reason is the live objects.
            raise errors.BackendError(
                f"cannot switch from {current.vendor} to {vendor}: {len(current.live)} "
                f"{current.vendor} object(s) are still alive; close them first")
        if vendor == "auto":
            chosen = None
            first = None
            failures = []
            for v in ("cuda", "hip"):
                try:
                    b = load(v)
                except errors.BackendError as exc:
                    failures.append(str(exc))
                    continue
                first = first or b
                if b.device_count() > 0:
                    chosen = b
                    break
            chosen = chosen or first
            if chosen is None:
                raise errors.BackendError("no GPU runtime could be loaded: " + " | ".join(failures)
                                          + f" ({SIM_HINT})")
        else:
            chosen = load(vendor)
        if current is not None and current is not chosen and len(current.live):
            raise errors.BackendError(
                f"cannot switch from {current.vendor} to {chosen.vendor}: {len(current.live)} "
                f"{current.vendor} object(s) are still alive; close them first")
        _state.active = chosen
        return chosen


def active() -> Backend:
    """The active backend, selecting one (``PYGRAPHRT_BACKEND`` or auto) on first use."""
    b = _state.active
    if b is None:
        b = use(os.environ.get("PYGRAPHRT_BACKEND", "auto"))
    return b


def active_or_none() -> Backend | None:
    """The active backend, or None where none was selected yet (selects none)."""
    return _state.active


def attempts() -> list[Attempt]:
    return list(_state.attempts)


def _reset_for_tests() -> None:
    with _state.lock:
        _state.active = None
        _state.loaded.clear()
        _state.attempts.clear()
