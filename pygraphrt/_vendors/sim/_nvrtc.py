"""The simulator's NVRTC stand-in: ``rt.Program`` on ``sim`` records the source, compiles nothing.

It has the ``nvrtc13`` binding's prototypes (C function pointers, like :mod:`._lib`), so
:class:`pygraphrt.kernels.Program` runs its usual path: create, add name expressions,
"compile", read the log, lowered names and the "CUBIN".  The CUBIN is a simulator image
(:func:`._kernels.make_image`) naming the program's ``extern "C"`` kernels with their
parameter lists, plus the name expressions (the simulator does not mangle: a name
expression is its own lowered name, and a kernel of that name runs the function registered
under it).  There is no compiler: the source is not checked, so nothing fails to compile.
"""

from __future__ import annotations

import importlib
from typing import Any

from ...kernels._program import _Compiler
from . import _kernels

SIM_ARCH = 90  # the simulated device is "sm_90"


class _NvrtcFail(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


class _Programs:
    """The stand-in's functions (named like NVRTC's) and its programs."""

    def __init__(self, ffi: Any) -> None:
        self.ffi = ffi
        self.programs: dict[int, dict[str, Any]] = {}
        self.next = 0x5B00_0000_0000
        self.keep: dict[int, Any] = {}
        self.codes = dict(ffi.typeof("nvrtcResult").relements)

    def _prog(self, p: Any) -> dict[str, Any]:
        v = int(self.ffi.cast("uintptr_t", p))
        if v not in self.programs:
            raise _NvrtcFail(self.codes["NVRTC_ERROR_INVALID_PROGRAM"])
        return self.programs[v]

    def nvrtcVersion(self, major: Any, minor: Any) -> None:
        major[0], minor[0] = 13, 5

    def nvrtcGetNumSupportedArchs(self, n: Any) -> None:
        n[0] = 1

    def nvrtcGetSupportedArchs(self, archs: Any) -> None:
        archs[0] = SIM_ARCH

    def nvrtcCreateProgram(self, out: Any, src: Any, name: Any, n: int, headers: Any, names: Any) -> None:
        if src == self.ffi.NULL:
            raise _NvrtcFail(self.codes["NVRTC_ERROR_INVALID_INPUT"])
        self.next += 0x10
        self.programs[self.next] = {
            "source": self.ffi.string(src).decode(errors="replace"),
            "name": self.ffi.string(name).decode(errors="replace") if name != self.ffi.NULL else "program.cu",
            "expressions": [], "log": "", "image": None, "lowered": {}}
        out[0] = self.ffi.cast("nvrtcProgram", self.next)

    def nvrtcDestroyProgram(self, p: Any) -> None:
        v = int(self.ffi.cast("uintptr_t", p[0]))
        if self.programs.pop(v, None) is None:
            raise _NvrtcFail(self.codes["NVRTC_ERROR_INVALID_PROGRAM"])
        self.keep.pop(v, None)
        p[0] = self.ffi.NULL

    def nvrtcAddNameExpression(self, p: Any, expr: Any) -> None:
        prog = self._prog(p)
        if prog["image"] is not None:
            raise _NvrtcFail(self.codes["NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION"])
        prog["expressions"].append(self.ffi.string(expr).decode())

    def nvrtcCompileProgram(self, p: Any, n: int, options: Any) -> None:
        prog = self._prog(p)
        kernels: dict[str, str | None] = dict(_kernels.find_kernels(prog["source"]))
        for e in prog["expressions"]:
            kernels.setdefault(e, None)
            prog["lowered"][e] = self.ffi.new("char[]", e.encode())
        found = ", ".join(sorted(kernels)) or "none"
        prog["log"] = (f"pygraphrt simulator: {prog['name']} recorded, not compiled (no device code runs here); "
                       f"kernels: {found}\n")
        prog["image"] = _kernels.make_image(prog["name"], prog["source"], kernels, prog["expressions"])

    def _blob(self, p: Any, what: str) -> bytes:
        prog = self._prog(p)
        if what == "log":
            return prog["log"].encode() + b"\0"
        if prog["image"] is None:
            raise _NvrtcFail(self.codes["NVRTC_ERROR_INVALID_PROGRAM"])
        return bytes(prog["image"])

    def nvrtcGetProgramLogSize(self, p: Any, size: Any) -> None:
        size[0] = len(self._blob(p, "log"))

    def nvrtcGetProgramLog(self, p: Any, out: Any) -> None:
        b = self._blob(p, "log")
        self.ffi.memmove(out, b, len(b))

    def nvrtcGetCUBINSize(self, p: Any, size: Any) -> None:
        size[0] = len(self._blob(p, "image"))

    def nvrtcGetCUBIN(self, p: Any, out: Any) -> None:
        b = self._blob(p, "image")
        self.ffi.memmove(out, b, len(b))

    nvrtcGetPTXSize = nvrtcGetCUBINSize
    nvrtcGetPTX = nvrtcGetCUBIN

    def nvrtcGetLoweredName(self, p: Any, expr: Any, out: Any) -> None:
        prog = self._prog(p)
        e = self.ffi.string(expr).decode()
        if prog["image"] is None:
            raise _NvrtcFail(self.codes["NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION"])
        if e not in prog["lowered"]:
            raise _NvrtcFail(self.codes["NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID"])
        out[0] = prog["lowered"][e]


class _Lib:
    """C function pointers with the nvrtc13 prototypes."""

    def __init__(self, ffi: Any, programs: _Programs) -> None:
        manifest = importlib.import_module("pygraphrt._bindings.nvrtc13").manifest()["functions"]
        self._fns: dict[str, Any] = {}
        strings: dict[int, Any] = {}
        names = dict(ffi.typeof("nvrtcResult").elements)

        def error_string(code: int) -> Any:
            s = strings.get(code)
            if s is None:
                s = strings[code] = ffi.new("char[]", names.get(code, "NVRTC_ERROR_UNKNOWN").encode())
            return s

        internal = programs.codes["NVRTC_ERROR_INTERNAL_ERROR"]
        for proto in manifest.values():
            sym = proto["symbol"]
            params = ", ".join(t for t, _ in proto["params"]) or "void"
            cdecl = f"{proto['result']}(*)({params})"
            if sym == "nvrtcGetErrorString":
                self._fns[sym] = ffi.callback(cdecl, error_string)
                continue
            impl = getattr(programs, sym, None)
            if impl is None:
                continue

            def call(*args: Any, _impl: Any = impl) -> int:
                try:
                    _impl(*args)
                    return 0
                except _NvrtcFail as e:
                    return e.code
                except Exception:  # noqa: BLE001 - must not unwind into C
                    return internal

            self._fns[sym] = ffi.callback(cdecl, call, error=internal)

    def __getattr__(self, name: str) -> Any:
        fns = self.__dict__.get("_fns", {})
        if name in fns:
            return fns[name]
        raise AttributeError(f"{name} is not provided by the pygraphrt simulator's NVRTC stand-in")


class SimCompiler(_Compiler):
    """What ``pygraphrt.kernels._program.compiler`` returns on the simulator."""

    def __init__(self) -> None:  # nothing to dlopen: see _Compiler.__init__ for a real NVRTC
        pkg = importlib.import_module("pygraphrt._bindings.nvrtc13")
        self.kind = "nvrtc"
        self.binding = "nvrtc13"
        self.path = "<pygraphrt simulator: records the source, compiles nothing>"
        self.ffi = pkg.ffi
        self.lib = _Lib(self.ffi, _Programs(self.ffi))
        self.version = (13, 5)
        self.unavailable: dict[str, str] = {}

    def __repr__(self) -> str:
        return "the pygraphrt simulator's NVRTC stand-in (no compiler)"
