"""External semaphores: import one from another API (Vulkan, D3D12, NvSciSync), then signal
and wait for it on streams and in graphs.

::

    sem = rt.ExternalSemaphore(rt.ExternalSemaphoreType.TIMELINE_FD, fd=fd)   # e.g. from Vulkan
    stream.wait_external_semaphores([rt.SemaphoreWait(sem, value=1)])        # work waits for 1
    node = graph.add_external_semaphore_signal([rt.SemaphoreSignal(sem, value=2)])
    exe.set_external_semaphore_signal(node, [rt.SemaphoreSignal(sem, value=3)])

An imported fd belongs to the runtime once the import succeeded (do not close it);
on failure it stays the caller's.  ``value`` is the fence value of timeline semaphores,
D3D12/D3D11 fences and NvSciSync objects; ``key`` (and ``timeout_ms`` for waits) the keyed
mutex's.  The same code runs on HIP (``hipImportExternalSemaphore`` ...).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from . import _runtime, errors
from ._handles import Owned
from ._operands import listed
from .enums import ExternalSemaphoreType

if TYPE_CHECKING:
    from .device import Stream


class ExternalSemaphore(Owned):
    """A semaphore imported from another API (``cudaImportExternalSemaphore``).

    Parameters
    ----------
    type : ExternalSemaphoreType or str
        What the handle is (``"timeline_fd"``, ``"opaque_fd"``, ``"d3d12_fence"``, ...).
    fd : int, optional
        A file descriptor (the ``*_fd`` types); owned by the runtime once imported.
    win32_handle, win32_name : optional
        A Windows handle or name (the ``*_win32*`` and D3D types).
    nvscisync : int, optional
        The address of an NvSciSync object.
    flags : int
        The import flags (e.g. the D3D12 fence's shared flag).
    """

    _destroy_api = "DestroyExternalSemaphore"
    _kind = "external semaphore"

    def __init__(self, type: ExternalSemaphoreType | str, *, fd: int | None = None,
                 win32_handle: int | None = None, win32_name: str | None = None,
                 nvscisync: int | None = None, flags: int = 0) -> None:
        b = _runtime.active()
        ops, ffi = b.ops, b.ffi
        try:
            kind = ExternalSemaphoreType(type)
        except ValueError:
            raise errors.InvalidValue("ExternalSemaphore", detail=f"unknown type {type!r}; one of "
                                      f"{[t.value for t in ExternalSemaphoreType]}") from None
        desc = ffi.new(f"{ops.ext_sem_desc_type} *")
        desc.type = ops.value(ops.ext_sem_types, kind, f"{ops.prefix}ImportExternalSemaphore")
        keep: list[Any] = []
        given = [n for n, v in (("fd", fd), ("win32_handle", win32_handle), ("win32_name", win32_name),
                                ("nvscisync", nvscisync)) if v is not None]
        if kind.value.endswith("_fd"):
            if given != ["fd"] or not isinstance(fd, int) or isinstance(fd, bool) or fd < 0:
                raise errors.InvalidValue("ExternalSemaphore", detail=f"a {kind.value} semaphore takes "
                                          f"fd= (a non-negative int) alone, got {given or 'nothing'}")
            desc.handle.fd = fd
        elif kind is ExternalSemaphoreType.NVSCISYNC:
            if given != ["nvscisync"]:
                raise errors.InvalidValue("ExternalSemaphore", detail="an nvscisync semaphore takes nvscisync=")
            setattr(desc.handle, _nvsci_field(ffi, ops.ext_sem_desc_type), ffi.cast("void *", nvscisync))
        else:
            if not given or set(given) - {"win32_handle", "win32_name"}:
                raise errors.InvalidValue("ExternalSemaphore", detail=f"a {kind.value} semaphore takes "
                                          "win32_handle= and/or win32_name=")
            if win32_handle is not None:
                desc.handle.win32.handle = ffi.cast("void *", win32_handle)
            if win32_name is not None:
                name = ffi.new("wchar_t[]", win32_name)
                keep.append(name)
                desc.handle.win32.name = name
        desc.flags = flags
        out = ffi.new(f"{ops.prefix}ExternalSemaphore_t *")
        ops.call("ImportExternalSemaphore", out, desc)
        super().__init__(b, out[0], True)
        self.type = kind
        _known[int(ffi.cast("uintptr_t", out[0]))] = weakref.ref(self)

    def __repr__(self) -> str:
        state = "destroyed" if self._handle is None else hex(int(self))
        return f"<ExternalSemaphore {self.type.value} {state}>"


def _nvsci_field(ffi: Any, desc_type: str) -> str:
    # CUDA spells it nvSciSyncObj, HIP NvSciSyncObj.
    fields = dict(ffi.typeof(desc_type).fields)["handle"].type.fields
    return next(name for name, _ in fields if name.lower() == "nvscisyncobj")


# The runtime hands back raw handles on readback: map them to the objects that own them.
_known: dict[int, "weakref.ref[ExternalSemaphore]"] = {}


@dataclass(frozen=True)
class SemaphoreSignal:
    """Signal ``semaphore``: to ``value`` (fences, timelines) or release ``key`` (keyed mutex)."""

    semaphore: Any
    value: int = 0
    key: int = 0
    flags: int = 0


@dataclass(frozen=True)
class SemaphoreWait:
    """Wait until ``semaphore`` reaches ``value`` (or acquire keyed mutex ``key``, ``timeout_ms``)."""

    semaphore: Any
    value: int = 0
    key: int = 0
    timeout_ms: int = 0
    flags: int = 0


def _u(v: Any, bits: int, what: str) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 1 << bits:
        raise errors.InvalidValue(what, detail=f"expected an unsigned {bits}-bit int, got {v!r}")
    return v


def pack(backend: Any, items: Iterable[Any], wait: bool, what: str) -> tuple[Any, Any, int, list[Any]]:
    """(semaphore array, params array, count, objects to keep) for the runtime."""
    cls = SemaphoreWait if wait else SemaphoreSignal
    entries = [cls(x) if isinstance(x, ExternalSemaphore) else x for x in listed(items, what, cls.__name__ + "s")]
    if not entries:
        raise errors.InvalidValue(what, detail="give at least one semaphore")
    for e in entries:
        if not isinstance(e, cls):
            raise errors.InvalidValue(what, detail=f"{e!r} is not a {cls.__name__} (or an ExternalSemaphore)")
        if not isinstance(e.semaphore, ExternalSemaphore):
            raise errors.InvalidValue(what, detail=f"{e.semaphore!r} is not an ExternalSemaphore")
        if e.semaphore._backend is not backend:
            raise errors.InvalidValue(what, detail="the semaphore belongs to another backend")
        e.semaphore.handle  # raises once destroyed
    ops, ffi = backend.ops, backend.ffi
    sems = ffi.new(f"{ops.prefix}ExternalSemaphore_t[]", [e.semaphore.handle for e in entries])
    ptype = ops.ext_sem_wait_params_type if wait else ops.ext_sem_signal_params_type
    params = ffi.new(f"{ptype}[]", len(entries))
    for p, e in zip(params, entries):
        p.params.fence.value = _u(e.value, 64, what)
        p.params.keyedMutex.key = _u(e.key, 64, what)
        if wait:
            p.params.keyedMutex.timeoutMs = _u(e.timeout_ms, 32, what)  # type: ignore[union-attr]
        p.flags = _u(e.flags, 32, what)
    return sems, params, len(entries), [e.semaphore for e in entries]


def unpack(backend: Any, node_params: Any, wait: bool) -> list[Any]:
    """The signals/waits a node's parameter struct describes."""
    ffi = backend.ffi
    out: list[Any] = []
    for i in range(node_params.numExtSems):
        h = int(ffi.cast("uintptr_t", node_params.extSemArray[i]))
        ref = _known.get(h)
        sem = ref() if ref is not None else None
        p = node_params.paramsArray[i]
        semaphore = sem if sem is not None else h
        if wait:
            out.append(SemaphoreWait(semaphore, p.params.fence.value, p.params.keyedMutex.key,
                                     p.params.keyedMutex.timeoutMs, p.flags))
        else:
            out.append(SemaphoreSignal(semaphore, p.params.fence.value, p.params.keyedMutex.key, p.flags))
    return out


def node_params(backend: Any, items: Iterable[Any], wait: bool, what: str) -> tuple[Any, list[Any]]:
    """A filled signal/wait node-params struct and what must stay alive with it."""
    sems, params, n, keep = pack(backend, items, wait, what)
    ops = backend.ops
    p = backend.ffi.new(f"{ops.ext_sem_wait_node_type if wait else ops.ext_sem_signal_node_type} *")
    p.extSemArray = sems
    p.paramsArray = params
    p.numExtSems = n
    return p, [sems, params, *keep]


def stream_op(stream: "Stream", items: Sequence[Any], wait: bool) -> None:
    what = "Stream.wait_external_semaphores" if wait else "Stream.signal_external_semaphores"
    b = stream._backend
    sems, params, n, keep = pack(b, items, wait, what)
    stream._work("WaitExternalSemaphoresAsync" if wait else "SignalExternalSemaphoresAsync",
                 sems, params, n, stream.handle)
    for k in keep:
        stream._retain(k)


__all__ = ["ExternalSemaphore", "SemaphoreSignal", "SemaphoreWait"]
