"""The compiled fast path: a binding's cffi API-mode extension in place of its ABI module.

``PYGRAPHRT_FAST``: ``auto`` (default) uses the extension of the loaded
runtime's binding when it is built and matches the committed ABI module;
``1`` requires it (BackendError saying how to build it otherwise); ``0`` keeps
the pure-Python ABI mode.  ``python -m bindgen build-fast`` builds the
extensions (a C compiler is needed, no CUDA toolkit).

The extension presents the same ``ffi`` / ``lib`` as the ABI module (types,
``ffi.new``, ``lib.<symbol>``, enum members), so the layer runs unchanged.  Its
functions call through pointers resolved with ``dlsym`` on the library pygraphrt
chose; :class:`FastLib` makes a function the library does not export fail the
lookup with ``ffi.error``, exactly like ``ffi.dlopen``'s lib, so the layer
raises NotSupported naming the API instead of calling a NULL pointer.

The extension's file also holds a second module, ``<extension>_hot``: the layer's
hottest methods in C (see bindgen/hot_methods.c).  :func:`open_fast` loads it beside
the extension (:func:`hot_module` hands it out); :mod:`pygraphrt.graph._hot` installs
its graph methods when the backend's first graph is made, :mod:`pygraphrt.kernels._hot` the
plain kernel launch with a kernel's first launch.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

from . import errors

MODES = ("0", "1", "auto")
# The compiled launch (``_pgr_launch_packed``, see bindgen.fast): bytes before the parameters
# in its buffer (grid, block, shared memory: seven unsigned ints, then padding) and the most
# parameters it takes.  bindgen.fast emits the C with the same numbers (a test checks).
LAUNCH_HEADER = 32
LAUNCH_MAX_PARAMS = 64
# What the compiled helpers return when the runtime lacks the function they call
# (bindgen.fast.NO_FUNCTION; a test checks they agree).
NO_FUNCTION = -0x7FFFFFFF
BUILD_HINT = "build it with `python -m bindgen build-fast` (needs a C compiler)"
# The compiled runtime calls that may go straight to the driver, in the order of the extension's
# ``_pgr_set_direct`` slots (bindgen.fast.DIRECT_SLOTS; a test checks they agree).
DIRECT_SLOTS = ("launch", "add_empty", "capture_status", "add_memset", "add_kernel", "current_context",
                "current_device")


def requested() -> str:
    """The ``PYGRAPHRT_FAST`` setting: "0", "1" or "auto" (unset or empty: auto)."""
    v = os.environ.get("PYGRAPHRT_FAST", "auto").strip().lower() or "auto"
    if v not in MODES:
        raise errors.BackendError(f"PYGRAPHRT_FAST={v!r}: use 0, 1 or auto")
    return v


def _ffi_error(text: str) -> Exception:
    import _cffi_backend

    return _cffi_backend.FFI.error(text)  # ``ffi.error``: one class for every FFI


class FastLib:
    """``lib`` of an API-mode extension bound to one library handle.

    Attribute lookups go to the extension's lib once, then live in this object's
    ``__dict__`` (a plain dict lookup afterwards, like cffi's ABI lib).  Names of
    functions the library does not export raise ``ffi.error``, as ABI mode's lib does.
    """

    def __init__(self, ext_lib: Any, path: str, missing: frozenset[str], hot: Any = None) -> None:
        d = self.__dict__
        d["_pgr_lib"] = ext_lib
        d["_pgr_path"] = path
        d["_pgr_missing"] = missing
        d["_pgr_hot"] = hot  # the hot methods' module of the same extension, or None

    def __getattr__(self, name: str) -> Any:
        if name in self._pgr_missing:  # what ffi.dlopen's lib raises, word for word
            raise _ffi_error(f"symbol {name!r} not found in library {self._pgr_path!r}: "
                             f"{self._pgr_path}: undefined symbol: {name}")
        value = getattr(self._pgr_lib, name)
        if not name.startswith("__"):
            self.__dict__[name] = value
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot set {name!r} on a compiled runtime library")

    def __dir__(self) -> list[str]:
        return sorted(n for n in dir(self._pgr_lib) if n not in self._pgr_missing)

    def __repr__(self) -> str:
        return f"<pygraphrt fast lib {self._pgr_path!r}>"


def compiled_helper(backend: Any, name: str) -> Any:
    """The compiled fast path's helper ``name`` (``_pgr_capture_status``, ``_pgr_add_nodes``,
    ``_pgr_launch_packed``: see bindgen.fast), or None -- ABI mode, the sim, or an extension
    built before the helper existed.  Looked up once per backend."""
    cache = backend.memo.setdefault("_compiled_helpers", {})
    if name not in cache:
        f = None
        if backend.ffi_mode.startswith("api"):
            try:
                f = getattr(backend.lib, name)
            except (AttributeError, NotImplementedError, backend.ffi.error):
                f = None
        cache[name] = f
    return cache[name]


def direct_off() -> bool:
    """Whether ``PYGRAPHRT_DIRECT=0`` keeps every call in the runtime, in either mode (a
    profiler's runtime-API view then shows them all)."""
    return os.environ.get("PYGRAPHRT_DIRECT", "1").strip() == "0"


def set_direct(backend: Any) -> str:
    """Hand ``backend``'s driver functions to its compiled extension, so that the calls of
    :data:`DIRECT_SLOTS` go straight to the driver (see bindgen.fast.DIRECT_TABLE: a call the
    driver refuses is made again through the runtime, whose errors the caller gets); what is
    done, for ``pygraphrt info``.  ``PYGRAPHRT_DIRECT=0`` keeps every call in the runtime (a
    profiler's runtime-API view then shows them).  The vendor table says which driver
    function makes which call (``Vendor.direct_calls``; none for HIP)."""
    lib = getattr(backend, "lib", None)
    if not isinstance(lib, FastLib):
        return "off (compiled mode only)"
    ext = lib.__dict__["_pgr_lib"]
    try:
        set_slot = ext._pgr_set_direct
    except AttributeError:
        return f"off (the extension was built without it; {BUILD_HINT})"
    off = direct_off()
    done = _write_direct_slots(set_slot, backend.ffi, {} if off else backend.ops.direct_entry_points())
    if off:
        return "off (PYGRAPHRT_DIRECT=0)"
    return ", ".join(done) if done else f"off (the {backend.ops.name} driver offers none of them)"


def _write_direct_slots(set_slot: Any, ffi: Any, entries: dict[str, tuple[str, int]]) -> list[str]:
    """Write every one of the extension's direct slots (``set_slot``: its ``_pgr_set_direct``)
    from ``entries`` (slot name -> (driver API, address), as ``Vendor.direct_entry_points``
    gives them); a slot without an entry is emptied, so its call stays in the runtime.  Returns
    the APIs the extension took."""
    done = []
    for slot, name in enumerate(DIRECT_SLOTS):
        api, address = entries.get(name, (None, None))
        taken = set_slot(slot, ffi.NULL if address is None else ffi.cast("void *", address)) == 0
        if address is not None and taken:
            done.append(api)
    return done


def method_doc(fn: Any) -> str:
    """``fn``'s docstring behind a text signature (annotations dropped), the ``__doc__`` of the
    hot module's method in its place, so that ``help()`` and ``inspect.signature`` of the C
    method say what the Python one says.  Read from the code object, not with ``inspect``, which a
    program's first stream would otherwise import (cold start); the hot methods' defaults are
    literals, whose ``repr`` a text signature takes."""
    fn = getattr(fn, "__wrapped__", fn)  # the signature a method documents (pygraphrt._keywords)
    code = getattr(fn, "__code__", None)
    if code is None:  # a C method already (another binding's, or this one's): its own text signature
        return f"{fn.__name__}{fn.__text_signature__ or '($self, /, *args, **kwargs)'}\n--\n\n{fn.__doc__ or ''}"
    names, npos, nkw = code.co_varnames, code.co_argcount, code.co_kwonlyargcount
    defaults, kwdefaults = fn.__defaults__ or (), fn.__kwdefaults__ or {}
    first_default = npos - len(defaults)
    params = [f"{n}={defaults[i - first_default]!r}" if i >= first_default else n
              for i, n in enumerate(names[:npos])]
    rest = npos + nkw
    if code.co_flags & 0x04:  # CO_VARARGS: its name follows the keyword-only ones
        params.append("*" + names[rest])
        rest += 1
    elif nkw:
        params.append("*")
    params += [f"{n}={kwdefaults[n]!r}" if n in kwdefaults else n for n in names[npos:npos + nkw]]
    if code.co_flags & 0x08:  # CO_VARKEYWORDS
        params.append("**" + names[rest])
    if params:
        params[0] = "$" + params[0]  # self: the descriptor's own
    return f"{fn.__name__}({', '.join(params)})\n--\n\n{_clean_doc(fn.__doc__)}"


def _clean_doc(doc: str | None) -> str:
    """A docstring as ``inspect.cleandoc`` gives it: the first line stripped, the rest dedented."""
    lines = (doc or "").expandtabs().split("\n")
    indents = [len(line) - len(line.lstrip()) for line in lines[1:] if line.strip()]
    cut = min(indents, default=0)
    lines = [lines[0].strip()] + [line[cut:].rstrip() for line in lines[1:]]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return "\n".join(lines)


def put_method(hot: Any, cls: type, name: str, key: str) -> None:
    """Put the C method ``key`` of hot module ``hot`` (bindgen/hot_methods.c) on ``cls`` as
    ``name``.  Made once per binding; the method already there (Python, or another binding's C
    method) is its fallback, so one binding's C method hands the others' objects on, and a second
    call changes nothing.  Raises what the module raises where it refuses (TypeError, ValueError,
    RuntimeError)."""
    current = cls.__dict__[name]
    descr = hot.method(key, cls, current, method_doc(current))
    if current is not descr:
        setattr(cls, name, descr)


def install_method(backend: Any, cls: type, name: str, key: str) -> bool:
    """:func:`put_method` where ``backend`` has a hot module (True); False, the Python method
    staying, where it has none or the module refuses the class.  (The plain kernel launches: a C
    method hands every call to its fallback until the backend's launches are bound,
    kernels._hot.install_launch.)"""
    hot = hot_module(backend)
    if hot is None:
        return False
    try:
        put_method(hot, cls, name, key)
    except (TypeError, ValueError, RuntimeError, AttributeError):
        return False
    return True


def no_hot_methods(backend: Any) -> str | None:
    """Why ``backend`` has no hot methods' module (``pygraphrt info``), or None where it has one."""
    if hot_module(backend) is not None:
        return None
    return ("compiled mode only" if not backend.ffi_mode.startswith("api")
            else f"the extension was built without them; {BUILD_HINT}")


def hot_module(backend: Any) -> Any:
    """The hot methods' module of ``backend``'s compiled extension (bindgen/hot_methods.c), or
    None: ABI mode, the simulator, or an extension built without it."""
    lib = getattr(backend, "lib", None)
    return lib.__dict__["_pgr_hot"] if isinstance(lib, FastLib) else None


def _open_hot(mod: Any) -> tuple[Any, str]:
    """(the hot methods' module in the file of the imported extension ``mod``, or None; how
    the call path describes it).  It is a second module of the same shared library
    (``PyInit_<name>_hot``), so it shares the extension's bound pointers and cffi's table."""
    import importlib.machinery
    import importlib.util

    name = f"{mod.__name__}_hot"
    try:
        loader = importlib.machinery.ExtensionFileLoader(name, mod.__file__)
        spec = importlib.util.spec_from_loader(name, loader)
        hot = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        loader.exec_module(hot)
    except ImportError as exc:  # built before the hot methods existed
        return None, f"hot methods in Python: {exc}; {BUILD_HINT}"
    return hot, "hot methods in C"


def function_address(ffi: Any, lib: Any, name: str) -> int:
    """The address of the C function ``name`` of a binding's ``lib`` (ABI or compiled)."""
    inner = lib
    if isinstance(lib, FastLib):
        getattr(lib, name)  # a function the library does not export: ffi.error, as in ABI mode
        inner = lib.__dict__["_pgr_lib"]
    return int(ffi.cast("uintptr_t", ffi.addressof(inner, name)))


def extension_path(binding: str) -> Path | None:
    """The built extension file of ``binding`` in this installation, or None."""
    import importlib.util
    from pathlib import Path

    try:
        spec = importlib.util.find_spec(f"pygraphrt._fastlib._{binding}")
    except (ImportError, ValueError):
        return None
    return Path(spec.origin) if spec is not None and spec.origin else None


#: What setup.py writes beside the extensions it built into an installed package (its build hook,
#: ``BUILD_RECORD`` there): {"built": [binding, ...], "compiler": file name, "why_not": text or null}.
BUILD_RECORD = "build.json"


def not_built_reason(binding: str) -> str:
    """Why ``binding`` has no compiled extension here, for the call path's ``abi (...)``: in an
    installed package, what its install-time build recorded (pip hides the build's output); in a
    checkout (no record), how to build it."""
    import json
    from pathlib import Path

    head = f"no compiled extension for binding {binding}"
    try:
        record = json.loads((Path(__file__).resolve().parent / "_fastlib" / BUILD_RECORD).read_text())
    except (OSError, ValueError):
        return f"{head}; {BUILD_HINT}"
    if record.get("why_not"):
        return f"{head} in this install: {record['why_not']}"
    if binding in record.get("built", ()):
        return f"{head} in this install: it was built ({record.get('compiler')}) but its file is gone"
    return f"{head} in this install (its build made none for it)"


def open_fast(binding: str, path: str) -> tuple[Any, FastLib, str]:
    """(ffi, lib, description) of the extension of ``binding`` bound to ``path``.

    Raises ImportError when it is not built, RuntimeError when it does not match
    the committed ABI module or cannot bind.
    """
    mod = importlib.import_module(f"pygraphrt._fastlib._{binding}")
    ffi, ext = mod.ffi, mod.lib
    built = ffi.string(ext._pgr_abi_hash()).decode()
    # The binding's package carries its ABI module's sha256 (generated with it), so the
    # check neither reads nor imports the ABI module.
    package = importlib.import_module(f"pygraphrt._bindings.{binding}")
    if built != package.ABI_SHA256:
        raise RuntimeError(f"{mod.__file__} was built from another version of binding {binding} "
                           f"(stale); rebuild it with `python -m bindgen build-fast`")
    lacks = next((n for n in ("_pgr_open", "_pgr_next_unbound", "_pgr_source_hash") if not hasattr(ext, n)), None)
    if lacks is not None:
        raise RuntimeError(f"{mod.__file__} was built by an older pygraphrt (no {lacks}) "
                           f"(stale); rebuild it with `python -m bindgen build-fast`")
    open_library, next_unbound = ext._pgr_open, ext._pgr_next_unbound
    source = ffi.string(ext._pgr_source_hash()).decode()
    # ... and its fast source's (the same ABI module, another hot_methods.c: other C methods)
    if source != package.FAST_SHA256:
        raise RuntimeError(f"{mod.__file__} was built from another version of its source (the hot "
                           f"methods' C, bindgen's generator) (stale); rebuild it with `python -m bindgen "
                           f"build-fast`")
    # The handle of the library pygraphrt chose (already loaded: same handle, refcount + 1,
    # kept for the life of the process like ffi.dlopen's).
    handle = open_library(os.fsencode(path))
    if handle == ffi.NULL:
        raise OSError(f"cannot open {path} for the compiled fast path")
    ext._pgr_bind(handle)
    # Driver functions handed over for a library bound before are not this library's: the calls
    # go through the runtime until set_direct hands over this backend's.
    set_slot = getattr(ext, "_pgr_set_direct", None)
    if set_slot is not None:
        _write_direct_slots(set_slot, ffi, {})
    names, i = [], next_unbound(0)
    while i >= 0:
        names.append(ffi.string(ext._pgr_name(i)).decode())
        i = next_unbound(i + 1)
    missing = frozenset(names)
    hot, hot_says = _open_hot(mod)
    return (ffi, FastLib(ext, path, missing, hot),
            f"api (compiled: {os.path.basename(mod.__file__ or '?')}; {hot_says})")


def open_binding(binding: str, path: str) -> tuple[Any, Any, str]:
    """(ffi, lib, mode description) for ``binding`` loaded from ``path``, as PYGRAPHRT_FAST says.

    The description starts with ``api`` (the compiled fast path) or ``abi``
    (pure-Python cffi ABI mode) and says why where the fast path was not taken.
    """
    want = requested()
    why = "PYGRAPHRT_FAST=0"
    if want != "0":
        try:
            return open_fast(binding, path)
        except ImportError:
            why = not_built_reason(binding)
        except (RuntimeError, OSError, AttributeError) as exc:
            why = str(exc)
        if want == "1":
            raise errors.BackendError(f"PYGRAPHRT_FAST=1 but the compiled fast path cannot be used: {why}")
    pkg = importlib.import_module(f"pygraphrt._bindings.{binding}")
    return pkg.ffi, pkg.ffi.dlopen(path), f"abi ({why})"
