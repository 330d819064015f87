"""Runtime compilation: NVRTC on CUDA, HIPRTC on HIP.

The compiler library is found like the runtime: an environment variable
(``PYGRAPHRT_NVRTC`` / ``PYGRAPHRT_HIPRTC``), then cuda-pathfinder, the pip
wheels, the toolkit (``CUDA_HOME`` / ``ROCM_PATH``) and the system loader.  On
CUDA the NVRTC of the loaded runtime's major version is preferred; another major
is used only when none of the same major is found (``Program.compiler`` says
which was used).
"""

from __future__ import annotations

import importlib
import os
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from .. import _runtime, errors
from .._operands import listed

if TYPE_CHECKING:
    from ..device import Device
    from ._library import Kernel, Library


class _Compiler:
    """One loaded compiler library with its binding."""

    def __init__(self, kind: str, binding: str, path: str) -> None:
        pkg = importlib.import_module(f"pygraphrt._bindings.{binding}")
        self.kind = kind  # "nvrtc" | "hiprtc"
        self.binding = binding
        self.path = path
        self.ffi = pkg.ffi
        self.lib = self.ffi.dlopen(path)
        major, minor = self.ffi.new("int *"), self.ffi.new("int *")
        self.check(getattr(self.lib, f"{kind}Version")(major, minor), f"{kind}Version")
        self.version = (major[0], minor[0])
        # Functions of the binding newer than this library (its SINCE table), found now.
        since = getattr(importlib.import_module(f"pygraphrt._bindings.{binding}.symbols"), "SINCE", {})
        self.unavailable: dict[str, str] = {}
        for symbol, need in since.items():
            if self.version < need or not self._exported(symbol):
                self.unavailable[symbol] = (f"{symbol} needs {kind.upper()} {need[0]}.{need[1]} or newer; "
                                            f"the loaded {kind.upper()} is {major[0]}.{minor[0]} ({path})")

    def _exported(self, symbol: str) -> bool:
        try:
            getattr(self.lib, symbol)
            return True
        except (AttributeError, NotImplementedError, self.ffi.error):
            return False

    def fn(self, name: str) -> Any:
        why = self.unavailable.get(self.kind + name)
        if why is not None:
            raise errors.NotSupported(self.kind + name, vendor=self.kind, detail=why)
        return getattr(self.lib, self.kind + name)

    def check(self, rc: int, api: str) -> None:
        if rc:
            name = self.ffi.string(self.fn("GetErrorString")(rc)).decode(errors="replace")
            invalid = any(w in name.upper() for w in ("INVALID", "OPTION", "INPUT"))
            raise (errors.InvalidValue if invalid else errors.GraphRTError)(api, rc, name, self.kind, "")

    def __repr__(self) -> str:
        return f"{self.kind} {self.version[0]}.{self.version[1]} ({self.path})"


_compilers: dict[tuple[str, int], _Compiler] = {}
_lock = threading.Lock()


def _nvrtc_candidates(major: int) -> list[str]:
    env = os.environ.get("PYGRAPHRT_NVRTC")
    if env:
        return [env]
    found: list[str] = []
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib

        path = load_nvidia_dynamic_lib("nvrtc").abs_path
        if path:
            found.append(path)
    except Exception:  # not installed, or found nothing: other places follow
        pass
    for pkg, rel in (("nvidia.cu13", "lib/libnvrtc.so.13"), ("nvidia.cuda_nvrtc", "lib/libnvrtc.so.12")):
        try:
            mod = importlib.import_module(pkg)
        except ImportError:
            continue
        for base in getattr(mod, "__path__", []):
            if (Path(base) / rel).exists():
                found.append(str(Path(base) / rel))
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    for m in (major, 13, 12):
        if home and (Path(home) / "lib64" / f"libnvrtc.so.{m}").exists():
            found.append(str(Path(home) / "lib64" / f"libnvrtc.so.{m}"))
        found.append(f"libnvrtc.so.{m}")
    # The runtime's own major first; the order found is kept otherwise.
    return sorted(dict.fromkeys(found), key=lambda p: f".so.{major}" not in p)


def _hiprtc_candidates() -> list[str]:
    env = os.environ.get("PYGRAPHRT_HIPRTC")
    if env:
        return [env]
    found = [str(Path(os.environ[v]) / "lib" / "libhiprtc.so")
             for v in ("ROCM_PATH", "HIP_PATH") if os.environ.get(v)]
    return found + ["/opt/rocm/lib/libhiprtc.so", "libhiprtc.so.7", "libhiprtc.so.6", "libhiprtc.so"]


def compiler(backend: Any) -> _Compiler:
    """The runtime compiler for ``backend`` (loaded once per process)."""
    key = (backend.vendor, backend.runtime_version)
    with _lock:
        c = _compilers.get(key)
        if c is not None:
            return c
        if backend.vendor == "sim":  # the simulator's NVRTC stand-in: records the source, compiles nothing
            c = _compilers[key] = backend.ops.compiler()
            return c
        tried = []
        if backend.vendor == "cuda":
            major = backend.runtime_version // 1000
            candidates = [(p, "nvrtc", f"nvrtc{13 if '.so.13' in p else 12}")
                          for p in _nvrtc_candidates(major)]
        else:
            try:
                importlib.import_module("pygraphrt._bindings.hiprtc")
            except ImportError:
                raise errors.NotSupported("Program", vendor="hip",
                                          detail="no HIPRTC binding is available in this build") from None
            candidates = [(p, "hiprtc", "hiprtc") for p in _hiprtc_candidates()]
        for path, kind, binding in candidates:
            if "/" in path and not Path(path).exists():
                continue
            try:
                c = _Compiler(kind, binding, path)
            except OSError as exc:
                tried.append(f"{path}: {exc}")
                continue
            _compilers[key] = c
            return c
        what = "NVRTC (PYGRAPHRT_NVRTC, nvidia-cuda-nvrtc wheels, CUDA_HOME)" if backend.vendor == "cuda" \
            else "HIPRTC (PYGRAPHRT_HIPRTC, ROCM_PATH, /opt/rocm)"
        raise errors.NotSupported("Program", vendor=backend.vendor,
                                  detail=f"no runtime compiler found: install {what}; tried "
                                         + ("; ".join(tried) or ", ".join(p for p, _, _ in candidates)))


_ARCH_OPTION = re.compile(r"^(--gpu-architecture|-arch|--offload-arch)(=|$)")


class Program:
    """Source compiled for the current device with NVRTC (CUDA) or HIPRTC (HIP).

    Parameters
    ----------
    source : str or bytes
        CUDA C++ / HIP source.  Kernels meant to be found by name are declared
        ``extern "C"``; C++ (templated, overloaded, namespaced) kernels are
        reached through ``name_expressions``.
    name : str
        The program's file name, used in compiler messages.
    options : sequence of str
        Compiler options.  Without an architecture option the device's
        is used (``--gpu-architecture=sm_XY`` on CUDA, giving CUBIN; PTX for the
        newest architecture the compiler knows if it predates the device;
        ``--offload-arch=gfx...`` on HIP).
    device : Device or int, optional
        The device whose architecture the code is compiled for (default: the
        current device).  Its kernels launch on any device that can run that
        code (on HIP the library is loaded once more on each other device it is
        launched on); one that cannot is refused before the launch.
    headers : mapping of str to str
        Extra headers by include name.
    name_expressions : sequence of str
        C++ expressions naming kernels (``"scale<float>"``); their lowered
        (mangled) names are in :attr:`lowered_names`.

    Raises
    ------
    pygraphrt.errors.CompileError
        With the compiler's whole log and the options used.

    Attributes
    ----------
    image : bytes
        The compiled code (CUBIN, PTX or an AMD code object).
    image_kind : str
        ``"cubin"``, ``"ptx"`` or ``"code_object"``.
    log : str
        The compiler's log (warnings of a successful compile).
    warnings : list of str
        The log's warning lines.
    options : tuple of str
        The options the compiler was given.
    lowered_names : dict
        Name expression -> lowered kernel name.
    compiler : str
        Which compiler library compiled it, with its version.
    device : int or None
        The device it was compiled for (the current one when ``device`` was not given; None
        where the runtime cannot tell which is current).
    """

    def __init__(self, source: str | bytes, name: str = "program.cu", *,
                 options: Sequence[str] = (), headers: Mapping[str, str] | None = None,
                 name_expressions: Sequence[str] = (), device: "Device | int | None" = None) -> None:
        if isinstance(source, str):
            source = source.encode()
        if not isinstance(source, (bytes, bytearray)):
            raise errors.InvalidValue("Program", detail=f"source must be str or bytes, got {type(source).__name__}")
        if not isinstance(name, str):
            raise errors.InvalidValue("Program", detail=f"name must be a str, got {name!r}")
        options = listed(options, "Program", "str options")
        if not all(isinstance(o, str) for o in options):
            raise errors.InvalidValue("Program", detail="options must be a sequence of str")
        if headers is None:
            headers = {}
        elif not isinstance(headers, Mapping) or not all(isinstance(k, str) and isinstance(v, str)
                                                         for k, v in headers.items()):
            raise errors.InvalidValue("Program", detail=f"headers must map include names to source text "
                                                        f"(str to str), got {headers!r}")
        name_expressions = listed(name_expressions, "Program", "str name expressions")
        if not all(isinstance(e, str) for e in name_expressions):
            raise errors.InvalidValue("Program", detail="name_expressions must be a sequence of str")
        backend = _runtime.active()
        self._backend = backend
        from .. import multidevice

        if device is None:
            from ..device import _current_ordinal

            self.device: int | None = _current_ordinal(backend)
        else:
            self.device = multidevice.checked_ordinal(backend, device, "Program")
            multidevice.note_device(backend, self.device)  # (code for another device: several in use)
        c = compiler(backend)
        self.compiler = repr(c)
        self.name = name
        self.options = tuple(options) + self._arch_options(c, options)
        self.arch = next((o.split("=", 1)[1] for o in self.options if "=" in o and _ARCH_OPTION.match(o)), "")
        self.log, self.image, self.image_kind, self.lowered_names = self._compile(
            c, bytes(source), dict(headers), name_expressions)
        self.warnings = [ln for ln in self.log.splitlines() if "warning" in ln.lower()]
        self._library: Library | None = None

    def _arch_options(self, c: _Compiler, options: Sequence[str]) -> tuple[str, ...]:
        if any(_ARCH_OPTION.match(o) for o in options):
            return ()
        from ..device import Device

        arch = Device(self.device or 0).info().arch
        if c.kind == "hiprtc":
            return (f"--offload-arch={arch}",)
        wanted = int(arch.removeprefix("sm_"))
        n = c.ffi.new("int *")
        c.check(c.fn("GetNumSupportedArchs")(n), "nvrtcGetNumSupportedArchs")
        archs = c.ffi.new("int[]", n[0])
        c.check(c.fn("GetSupportedArchs")(archs), "nvrtcGetSupportedArchs")
        supported = sorted(archs[i] for i in range(n[0]))
        if supported and wanted > supported[-1]:  # the compiler predates the GPU: PTX, JIT-ed by the driver
            return (f"--gpu-architecture=compute_{supported[-1]}",)
        return (f"--gpu-architecture=sm_{wanted}",)

    def _compile(self, c: _Compiler, source: bytes, headers: dict[str, str],
                 exprs: list[str]) -> tuple[str, bytes, str, dict[str, str]]:
        ffi, k = c.ffi, c.kind
        prog = ffi.new(f"{k}Program *")
        names = [ffi.new("char[]", n.encode()) for n in headers]
        texts = [ffi.new("char[]", t.encode()) for t in headers.values()]
        c.check(c.fn("CreateProgram")(prog, source, self.name.encode(), len(headers),
                                      ffi.new("char *[]", texts) if texts else ffi.NULL,
                                      ffi.new("char *[]", names) if names else ffi.NULL),
                f"{k}CreateProgram")
        try:
            for e in exprs:
                c.check(c.fn("AddNameExpression")(prog[0], e.encode()), f"{k}AddNameExpression")
            opts = [ffi.new("char[]", o.encode()) for o in self.options]
            rc = c.fn("CompileProgram")(prog[0], len(opts), ffi.new("char *[]", opts) if opts else ffi.NULL)
            log = self._read(c, prog[0], "ProgramLog").rstrip(b"\0").decode(errors="replace")
            if rc:
                name = ffi.string(c.fn("GetErrorString")(rc)).decode(errors="replace")
                raise errors.CompileError(f"{k}CompileProgram", rc, name, k, log, self.options, self.name)
            lowered = {}
            for e in exprs:
                out = ffi.new("const char **")
                c.check(c.fn("GetLoweredName")(prog[0], e.encode(), out), f"{k}GetLoweredName")
                lowered[e] = ffi.string(out[0]).decode()
            if k == "hiprtc":
                return log, self._read(c, prog[0], "Code"), "code_object", lowered
            if self.arch.startswith("sm_"):
                return log, self._read(c, prog[0], "CUBIN"), "cubin", lowered
            return log, self._read(c, prog[0], "PTX"), "ptx", lowered
        finally:
            c.fn("DestroyProgram")(prog)

    @staticmethod
    def _read(c: _Compiler, prog: Any, what: str) -> bytes:
        size = c.ffi.new("size_t *")
        c.check(c.fn(f"Get{what}Size")(prog, size), f"{c.kind}Get{what}Size")
        buf = c.ffi.new("char[]", max(size[0], 1))
        c.check(c.fn(f"Get{what}")(prog, buf), f"{c.kind}Get{what}")
        return bytes(c.ffi.buffer(buf, size[0]))

    def load(self) -> "Library":
        """The compiled image loaded into the active runtime (once)."""
        if self._library is None or not self._library.is_valid:
            from ._library import Library

            self._library = Library(self.image)
            self._library._code = (self.arch, self.image_kind)
        return self._library

    def kernel(self, name: str, signature: Any = None) -> "Kernel":
        """A kernel of this program by name or name expression (``"scale<float>"``)."""
        if not isinstance(name, str):
            raise errors.InvalidValue("Program.kernel", detail=f"a kernel name is a str, got {name!r}")
        return self.load().kernel(self.lowered_names.get(name, name), signature=signature)

    def __repr__(self) -> str:
        return f"<Program {self.name} {self.image_kind} {self.arch} (device {self.device}) by {self.compiler}>"
