"""Recording (and, for the suite's self-test, falsifying) the runtime calls a case makes.

A runtime case's ``apis=`` is a claim -- "this case exercises these runtime functions" --
and the runner checks it against what was called.  :class:`CallRecorder` sees every call
at the level of the library's function pointers: it replaces the active backend's ``lib``
(``Backend.lib`` and ``Vendor.lib``) with a proxy whose functions are C callbacks of the
very same prototypes, each of which notes the call and its result, then calls the real
function.  Every route pygraphrt takes to the library goes through that proxy:

* ``Vendor.fn`` (``ops.call``, ``ops.fn``) and its cache ``Vendor._fns``, emptied at install;
* direct ``getattr(ops.lib, symbol)`` calls (edge-data forms, generic add-node);
* the graph module's per-backend function table (``graph._graph._Calls``), emptied at install;
* function references cached on objects (``GraphExec._launch_fn``, ``Stream._is_capturing_fn``)
  -- for objects made after the install, i.e. everything a case makes;
* what pygraphrt asks of the CUDA driver itself (``CudaVendor._driver_call``: kernel-node
  parameters of library kernels, linking), recorded under the runtime function's name
  (``cuGraphKernelNodeSetParams`` as ``GraphKernelNodeSetParams``) through the vendor's
  ``driver_call_observer``;
* ABI mode's calls straight to the CUDA driver (``Vendor.direct_fn``) and kernel launches
  through the driver's ``cuLaunchKernel`` (``Vendor.runtime_launches``): turned off while
  recording, so that those calls go through the runtime's function and are seen (the suite's
  standard kernels, made once per process, have their cached launch paths reset).

**Not** seen: the compiled fast path (``PYGRAPHRT_FAST=1`` with the extension built: its C
calls the library directly, past any Python proxy).  :meth:`CallRecorder.install` refuses
there with :class:`RecordingUnavailable`, and the runner says so in its header, table and JSON
(``call_record``) rather than silently recording nothing: take the record with
``PYGRAPHRT_FAST=0``.  On the simulator (``sim``) ``PYGRAPHRT_FAST`` does not apply, so the
record is always taken there.

Names are recorded without the vendor prefix and without a version suffix
(``cudaGraphAddDependencies_v2`` -> ``GraphAddDependencies``), as cases name them.

**Faults.**  The suite's self-test (:mod:`._selftest`) gives the recorder a ``fault``: for one
runtime function it replaces the call by a falsified one (:func:`falsify`) -- the call's
outputs perturbed, its effect skipped while reporting success, or its refusal turned into
success or into another error -- and checks that the cases claiming that function fail.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

__all__ = ["Call", "CallRecorder", "RecordingUnavailable", "api_name", "FAULT_MODES", "falsify"]

_SUFFIX = re.compile(r"_(v\d+|ptsz|ptds|spt)$")


class RecordingUnavailable(Exception):
    """The runtime calls cannot be recorded on this backend (the compiled fast path)."""


def api_name(symbol: str, prefix: str) -> str:
    """``cudaGraphAddDependencies_v2`` -> ``GraphAddDependencies`` (as cases name APIs)."""
    name = symbol[len(prefix):] if symbol.startswith(prefix) else symbol
    while True:
        stripped = _SUFFIX.sub("", name)
        if stripped == name:
            return name
        name = stripped


@dataclass(frozen=True)
class Call:
    """One recorded runtime call: the API (prefix-less) and the code it returned (0: success)."""

    api: str
    rc: int


#: What a fault does to a call of the falsified function (see :func:`falsify`).
FAULT_MODES = ("wrong-result", "no-effect")


class _RecordingLib:
    """The proxy ``lib``: functions become recording callbacks, everything else passes through."""

    def __init__(self, inner: Any, recorder: "CallRecorder") -> None:
        d = self.__dict__
        d["_rec_inner"] = inner
        d["_rec_recorder"] = recorder
        d["_rec_wrapped"] = {}

    def __getattr__(self, name: str) -> Any:
        inner = self.__dict__["_rec_inner"]
        value = getattr(inner, name)
        wrapped = self.__dict__["_rec_wrapped"]
        if name in wrapped:
            return wrapped[name]
        rec = self.__dict__["_rec_recorder"]
        ffi = rec.ffi
        if not name.startswith(rec.prefix) or not isinstance(value, ffi.CData):
            return value
        ctype = ffi.typeof(value)
        if ctype.kind != "function" or ctype.ellipsis:
            return value
        wrapped[name] = w = rec._wrap(name, value, ctype)
        return w

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.__dict__["_rec_inner"], name, value)

    def __dir__(self) -> list[str]:
        return dir(self.__dict__["_rec_inner"])

    def __repr__(self) -> str:
        return f"<recording proxy of {self.__dict__['_rec_inner']!r}>"


class CallRecorder:
    """Records every runtime call made through ``backend``'s library (see the module docstring).

    ``install()`` / ``uninstall()`` put the proxy in place and take it away; while installed,
    calls are appended to :attr:`calls` only when :attr:`active` (the runner turns it on for
    the case's own code, not for its clean-up).  :attr:`fault` -- ``(api, mode)`` or None --
    falsifies one function's calls (the self-test), also only while active.
    """

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.ffi = backend.ffi
        self.prefix: str = backend.ops.prefix
        self.calls: list[Call] = []
        self.active = False
        self.fault: tuple[str, str] | None = None
        self.faulted = 0  # calls the fault changed (the self-test checks the fault was reached)
        self._lock = threading.Lock()
        self._inner: Any = None
        self._saved: dict[str, Any] = {}
        self._callbacks: list[Any] = []  # kept alive as long as the proxy is
        self._error_code = self._unknown_code()

    # -- install -------------------------------------------------------------------------
    @staticmethod
    def unavailable(backend: Any) -> str | None:
        """Why the calls of ``backend`` cannot be recorded, or None."""
        mode = str(getattr(backend, "ffi_mode", ""))
        if mode.startswith("api"):
            return ("the compiled fast path (PYGRAPHRT_FAST=1) calls the runtime from C, past any "
                    "recording; run with PYGRAPHRT_FAST=0 to record the runtime calls")
        return None

    @property
    def installed(self) -> bool:
        return self._inner is not None

    def install(self) -> "CallRecorder":
        why = self.unavailable(self.backend)
        if why is not None:
            raise RecordingUnavailable(why)
        if self._inner is not None:
            return self
        b, ops = self.backend, self.backend.ops
        self._inner = b.lib
        proxy = _RecordingLib(b.lib, self)
        self._saved = {"direct": ops._direct_fns}
        b.lib = proxy
        ops.lib = proxy
        ops._direct_fns = _NoDirect()
        ops.runtime_launches = True  # kernel launches through the runtime's function, not the driver's
        if hasattr(type(ops), "driver_call_observer"):  # (CUDA: what pygraphrt asks of the driver itself)
            ops.driver_call_observer = self._note_driver_call
        self._reset_caches()
        return self

    def uninstall(self) -> None:
        if self._inner is None:
            return
        b, ops = self.backend, self.backend.ops
        b.lib = self._inner
        ops.lib = self._inner
        ops._direct_fns = self._saved.get("direct", {})
        ops.runtime_launches = False
        if hasattr(type(ops), "driver_call_observer"):
            ops.driver_call_observer = None
        self._inner = None
        self._reset_caches()

    def _reset_caches(self) -> None:
        """Forget the function references pygraphrt cached from the library before."""
        ops = self.backend.ops
        ops._fns.clear()
        calls = self.backend.memo.get("_graph_calls")
        if calls is not None:
            for k in [k for k in calls.__dict__ if k != "_ops"]:
                del calls.__dict__[k]
        # the suite's standard kernels outlive a case: their cached launch paths (the driver's
        # launch on CUDA) are made again, through the runtime's launch while recording
        from ._case import _compiled

        for kernels in _compiled.values():
            for k in kernels.values():
                k._launcher = None
                k._hot = None

    def _unknown_code(self) -> int:
        try:
            return int(getattr(self.backend.lib, self.prefix + "ErrorUnknown"))
        except Exception:  # noqa: BLE001 - a binding without it: the C convention's "not success"
            return 999

    # -- calls ---------------------------------------------------------------------------
    def take(self) -> list[Call]:
        """The calls recorded since the last ``take()`` (and forget them)."""
        with self._lock:
            out, self.calls = self.calls, []
        return out

    def mark(self) -> int:
        """The number of calls recorded so far (a position in :attr:`calls`)."""
        return len(self.calls)

    def _note_driver_call(self, symbol: str, rc: int) -> None:
        """A call pygraphrt made through the driver (``cuGraphKernelNodeSetParams``): recorded
        under the runtime function's name (``GraphKernelNodeSetParams``), whose driver form it
        is -- the runtime cannot describe library kernels, so pygraphrt sets them there."""
        if self.active:
            with self._lock:
                self.calls.append(Call(api_name(symbol, "cu"), rc))

    def _wrap(self, symbol: str, fn: Any, ctype: Any) -> Any:
        api = api_name(symbol, self.prefix)
        rec = self
        ffi = self.ffi

        def call(*args: Any) -> Any:
            if not rec.active:
                return fn(*args)
            fault = rec.fault
            if fault is not None and fault[0] == api:
                rc = falsify(ffi, fn, ctype, args, fault[1], rec)
            else:
                rc = fn(*args)
            if ctype.result.kind in ("primitive", "enum"):
                with rec._lock:
                    rec.calls.append(Call(api, int(rc)))
            return rc

        result = ctype.result
        error: Any = self._error_code if result.kind in ("primitive", "enum") else None
        cb = ffi.callback(ctype, call, error=error) if error is not None else ffi.callback(ctype, call)
        self._callbacks.append(cb)
        return cb


class _NoDirect(dict):  # type: ignore[type-arg]
    """``Vendor._direct_fns`` while recording: every call goes through the runtime's function."""

    def __missing__(self, key: Any) -> None:
        return None


# ---------------------------------------------------------------------------- faults
def _pointees(ffi: Any, ctype: Any, args: tuple[Any, ...]) -> list[tuple[int, Any, int]]:
    """(argument index, pointer, size) of the pointer arguments whose target has a known size."""
    out = []
    for i, (t, a) in enumerate(zip(ctype.args, args)):
        if t.kind != "pointer" or a == ffi.NULL:
            continue
        item = t.item
        if item.kind in ("void", "function", "opaque"):
            continue
        try:
            size = ffi.sizeof(item)
        except (ffi.error, TypeError):
            continue
        if size <= 0:
            continue
        out.append((i, a, size))
    return out


def _is_handle(ffi: Any, ptype: Any) -> bool:
    """Whether pointer type ``ptype`` is an opaque handle (a pointer to an incomplete struct:
    the runtime resolves it; nobody dereferences it on this side)."""
    target = ptype.item
    if target.kind not in ("struct", "union"):
        return False
    try:
        ffi.sizeof(target)
    except (ffi.error, TypeError):
        return True
    return False


def _perturb(ffi: Any, ptr: Any, item: Any) -> None:
    """Change the leaf value ``ptr`` points at: numbers +1, handles moved (other pointers stay)."""
    kind = item.kind
    if kind in ("primitive", "enum"):
        v = ptr[0]
        if isinstance(v, float):
            ptr[0] = v + 1.0
        elif isinstance(v, bool):
            ptr[0] = not v
        elif isinstance(v, int):
            try:
                ptr[0] = v + 1
            except OverflowError:
                ptr[0] = v - 1
        else:  # char
            ptr[0] = bytes([(ord(v) + 1) % 256])
    elif kind == "pointer":
        if not _is_handle(ffi, item):
            # a pointer the caller dereferences (an array the runtime allocated, an address):
            # moving it would crash the process, not fail a case -- left as it is
            return
        addr = int(ffi.cast("uintptr_t", ptr[0]))
        ptr[0] = ffi.cast(item, addr + 0x10 if addr else 0x10)


_SEPARATE: dict[Any, list[Any]] = {}


def _separate_fields(ffi: Any, item: Any) -> list[Any]:
    """The fields of struct ``item`` that share no byte with another field (cffi lists an
    anonymous union's members as fields of the struct, at overlapping offsets: perturbing a
    number in one would move another's pointer), leaving out arrays and bit fields."""
    out = _SEPARATE.get(item)
    if out is None:
        fields = [f for _n, f in item.fields or () if f.bitsize < 0]
        spans = [(f.offset, f.offset + ffi.sizeof(f.type)) for f in fields]
        out = [f for i, f in enumerate(fields) if f.type.kind != "array"
               and not any(j != i and a < spans[i][1] and spans[i][0] < b for j, (a, b) in enumerate(spans))]
        _SEPARATE[item] = out
    return out


def _perturb_changed(ffi: Any, base: Any, item: Any, old: bytes, offset: int = 0) -> None:
    """Perturb, in the value of type ``item`` at ``base + offset``, each leaf the call changed
    (its bytes differ from ``old``); a leaf it left alone stays (an input, not an output)."""
    size = ffi.sizeof(item)
    now = bytes(ffi.buffer(ffi.cast("char *", base) + offset, size))
    before = old[offset:offset + size]
    if now == before:
        return
    if item.kind == "union":
        return  # its members overlap: a number perturbed in one would move another's pointer
    if item.kind == "struct":
        for f in _separate_fields(ffi, item):
            _perturb_changed(ffi, base, f.type, old, offset + f.offset)
        return
    _perturb(ffi, ffi.cast(ffi.getctype(item, "*"), ffi.cast("char *", base) + offset), item)


def _fills_pointer(ffi: Any, item: Any, ptr: Any, offset: int = 0, depth: int = 0) -> bool:
    """Whether the struct at ``ptr`` has a NULL pointer field (not a handle) the runtime may
    fill for the caller to read (``phGraph_out``): skipping the call would leave the caller
    dereferencing NULL -- a crash of the process, not a failed case."""
    if item.kind not in ("struct", "union") or depth > 4:
        return False
    for _name, f in item.fields or ():
        t = f.type
        if f.bitsize >= 0 or t.kind == "array":
            continue
        if t.kind == "pointer":
            if t.item.kind in ("void", "function") or _is_handle(ffi, t):
                continue
            value = ffi.cast(ffi.getctype(t, "*"), ffi.cast("char *", ptr) + offset + f.offset)[0]
            if value == ffi.NULL:
                return True
        elif _fills_pointer(ffi, t, ptr, offset + f.offset, depth + 1):
            return True
    return False


def falsify(ffi: Any, fn: Any, ctype: Any, args: tuple[Any, ...], mode: str, rec: CallRecorder) -> int:
    """A falsified call of ``fn``.

    ``wrong-result``: the call is made; where it succeeded, every value it wrote through a
    pointer argument is perturbed (numbers +1, handles moved; in a struct, each field the
    call wrote); where it refused, another error is returned (``InvalidValue`` for a call
    refused with something else, ``InvalidResourceHandle`` for one refused with
    ``InvalidValue``).  Pointers the caller dereferences (not handles) are never moved.
    ``no-effect``: the call is not made; it reports success.  Where the call would fill a
    pointer in a struct that the caller then reads (a NULL non-handle pointer field), the
    call is made unchanged instead (not counted in ``rec.faulted``) -- except for a setter
    (``...Set...``: ``GraphNodeSetParams``, ``GraphExecKernelNodeSetParams``,
    ``MemPoolSetAccess``), whose struct arguments are inputs only, NULL fields included.
    """
    if mode not in FAULT_MODES:
        raise ValueError(f"unknown fault mode {mode!r}; one of {FAULT_MODES}")
    slots = _pointees(ffi, ctype, args)
    if mode == "no-effect":
        setter = rec.fault is not None and "Set" in rec.fault[0]
        if not setter and any(_fills_pointer(ffi, ctype.args[i].item, p) for i, p, _n in slots):
            return int(fn(*args))
        rec.faulted += 1
        return 0
    rec.faulted += 1
    before = [bytes(ffi.buffer(p, n)) for _, p, n in slots]
    rc = fn(*args)
    if rc:
        lib = rec._inner
        iv = int(getattr(lib, rec.prefix + "ErrorInvalidValue"))
        other = int(getattr(lib, rec.prefix + "ErrorInvalidResourceHandle"))
        return other if int(rc) == iv else iv
    for (i, p, _n), old in zip(slots, before):
        _perturb_changed(ffi, p, ctype.args[i].item, old)
    return int(rc)


def calls_text(calls: list[Call], limit: int = 40) -> str:
    """``GraphCreate, GraphAddEmptyNode x3, ...`` (distinct APIs in order of first call)."""
    counts: dict[str, int] = {}
    for c in calls:
        counts[c.api] = counts.get(c.api, 0) + 1
    items = [f"{a} x{n}" if n > 1 else a for a, n in counts.items()]
    text = ", ".join(items[:limit])
    if len(items) > limit:
        text += f", ... ({len(items) - limit} more)"
    return text or "none"

