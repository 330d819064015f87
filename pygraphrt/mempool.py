"""Stream-ordered memory: memory pools and allocations that follow stream order.

``stream.malloc_async(size)`` / ``stream.free_async(buf)`` (``cudaMallocAsync`` /
``cudaFreeAsync``, the HIP equivalents) are ordered with the rest of the
stream's work.  Inside a capture they become graph memory nodes: an allocation
node and, if freed in the same capture, a free node.  Memory allocated by a
capture belongs to the graph; an executable graph that leaves it unfreed must
be instantiated with ``auto_free_on_launch=True`` to be launched again (or the
memory freed with ``free_async`` between launches).

Pools: :meth:`MemPool.default` / :meth:`MemPool.current` (the device's,
borrowed), ``MemPool(...)`` (created, owned), attributes
(:class:`~pygraphrt.enums.MemPoolAttr`), :meth:`MemPool.trim`,
:meth:`MemPool.set_current` (make it the device's pool for ``malloc_async``).
A capture may be given a pool (``stream.capture(pool=...)``, or
``pool="private"`` for a fresh one per capture): allocations made on the
capturing stream without an explicit pool come from it.
"""

from __future__ import annotations

import functools
import weakref
from typing import TYPE_CHECKING, Any

from . import _runtime, errors
from ._handles import Owned, captures, kept_by_live_graphs
from ._operands import DeviceMemory, count, ordinal
from .device import Stream  # (device sits below this module: Stream.malloc_async calls it)
from .enums import MemPoolAttr

if TYPE_CHECKING:
    from .device import Device

__all__ = ["MemPool", "AsyncBuffer", "malloc_async", "free_async"]


class _PoolLease:
    """An owned pool's runtime object, while anything needs it.

    The pool is destroyed when this goes: the MemPool holds it until closed, each of its live
    allocations holds it in its finalizer (so even a collected cycle frees the memory first),
    and a capture that freed its memory holds it for the graph.  A pool destroyed before the
    memory it gave was freed, or while work on that memory or a stream-ordered free of it was
    still queued, corrupted the process's heap or failed the next launch (sticky
    cudaErrorLaunchFailure) under CUDA 12.9 and 13.0 on an H100 -- where the documentation
    says the runtime releases the pool once its allocations are gone.
    """

    __slots__ = ("__weakref__",)


@functools.lru_cache(maxsize=None)
def _after_device(device: int, api: str) -> Any:
    """A destroy (``api``: ``Free``, ``MemPoolDestroy``) made once the work queued on ``device``
    has run; returns the runtime's code, or ``(code, call, meaning)`` where a call before or
    after the destroy failed (:func:`pygraphrt._handles._destroy`).  ``cudaFree`` does not wait
    for stream-ordered work on memory from a pool: a kernel or memset still queued on it failed,
    and the context with it (sticky cudaErrorLaunchFailure, CUDA 12.9 and 13.0 on an H100).  So
    where the wait cannot be made (the device not made current, its synchronize refused) the
    destroy is not made either: the memory stays allocated rather than freed under queued work,
    and the error says so.  Finalizers run it after the running captures have ended (a device
    synchronization would break them)."""
    what = "pool" if api == "MemPoolDestroy" else "memory"
    kept = f"the {what} was not destroyed ({api} not called): work still queued on device {device} could use it"

    def destroy_after_device(backend: Any, handle: Any) -> Any:
        ops, ffi = backend.ops, backend.ffi
        current = ffi.new("int *")
        rc = ops.fn("GetDevice")(current)
        if rc:
            return int(rc), "GetDevice", kept
        was = current[0]
        if was != device:
            rc = ops.fn("SetDevice")(device)
            if rc:
                return int(rc), "SetDevice", f"device {device} could not be made current to wait for its work: {kept}"
        try:
            rc = ops.fn("DeviceSynchronize")()
        finally:
            back = ops.fn("SetDevice")(was) if was != device else 0
        if rc:
            return int(rc), "DeviceSynchronize", kept + (f"; device {device} stays current" if back else "")
        rc = ops.fn(api)(handle)
        if rc:
            return (int(rc), api, f"device {device} stays current") if back else int(rc)
        if back:
            return int(back), "SetDevice", (f"the {what} was destroyed, but device {was} could not be made "
                                            f"current again: device {device} stays current")
        return 0

    destroy_after_device.__name__ = api
    return destroy_after_device


def _hold_for_capture(lease: "_PoolLease | None", stream: "Stream") -> None:
    """A free node of the pool's memory: the capture's graph keeps the pool until it is gone."""
    if lease is not None and stream._capture is not None:
        stream._retain(lease)


def _ordinal(device: "Device | int | None", backend: Any) -> int:
    if device is None:
        out = backend.ffi.new("int *")
        backend.ops.call("GetDevice", out)
        return int(out[0])
    return ordinal(device, "MemPool")


class MemPool(Owned):
    """A stream-ordered memory pool on one device.

    Parameters
    ----------
    device : Device or int, optional
        Where the pool's memory lives (the current device by default).
    max_size : int
        Upper bound on the pool's reserved memory in bytes (0: no limit), at most the
        device's memory: a larger bound could never be reached (the pool holds pinned
        device memory), and is refused with InvalidValue -- the CUDA 12.9 runtime was seen
        to spin without end in ``cudaMemPoolCreate`` for ``2**63`` in a process that had
        made many pools before (on an H100; in a fresh process it returned
        ``cudaErrorMemoryAllocation``).
    release_threshold : int, optional
        Bytes the pool keeps reserved when streams synchronize
        (:attr:`MemPoolAttr.RELEASE_THRESHOLD`); ``None`` leaves the runtime's 0.
    """

    _destroy_api = "MemPoolDestroy"
    _kind = "memory pool"

    def __init__(self, device: "Device | int | None" = None, *, max_size: int = 0,
                 release_threshold: int | None = None) -> None:
        backend = _runtime.active()
        self.device = _ordinal(device, backend)
        max_size = count(max_size)
        if max_size:
            _, _, total = backend.ops.device_name_and_arch(self.device)  # (name, arch, total memory)
            if max_size > total:
                raise errors.InvalidValue("MemPool", detail=f"max_size {max_size} is more than the device's memory "
                                                            f"({total} bytes); 0 sets no limit")
        handle = backend.ops.create_mem_pool(self.device, max_size)
        super().__init__(backend, handle, True)
        # The destroy waits for the pool's memory: it is the lease's finalizer, not this object's.
        assert self._finalizer is not None
        self._finalizer.detach()
        lease = self._lease = _PoolLease()
        # (what close() raises of a destroy made in it: the finalizer reports into this list)
        self._destroy_report: list[Any] = []
        self._finalizer = weakref.finalize(lease, captures.finalize, backend,
                                           _after_device(self.device, "MemPoolDestroy"), handle,
                                           self._destroy_report, None)
        if release_threshold is not None:
            self.set_attribute(MemPoolAttr.RELEASE_THRESHOLD, release_threshold)

    @classmethod
    def _borrow(cls, backend: Any, handle: Any, device: int) -> "MemPool":
        pool = cls.__new__(cls)
        pool.device = device
        pool._lease = None
        Owned.__init__(pool, backend, handle, False)
        return pool

    def close(self) -> None:
        """Close the pool: it becomes invalid at once.

        The runtime destroys it once nothing needs it: now, or when the last allocation from
        it is freed (and a stream-ordered free has run), or -- while a live graph, executable
        graph or capture refers to it -- when this object and they are gone.  A borrowed pool
        is only forgotten.  A destroy made now first waits for the pool's device; a refusal
        raises, naming the call refused (a refused wait leaves the pool in place, and says so).
        """
        lease = self._lease
        if self._handle is None or lease is None:
            super().close()
            return
        self._handle = None
        fin, self._finalizer = self._finalizer, None
        self._backend.live.discard(self)
        if kept_by_live_graphs(self._backend, lambda o: o is self or o is lease):
            return  # (this object keeps the lease; the graphs keep this object)
        self._lease = None
        report = self._destroy_report
        report.clear()
        del lease  # the last holder: destroyed now (its finalizer), else once its memory is freed
        # A destroy made just now (a capture running defers it) reported a refusal into the
        # list its finalizer was given: this call's error.  A later one reports nowhere.
        if fin is not None and not fin.alive and report:
            raise report.pop()

    @classmethod
    def default(cls, device: "Device | int | None" = None) -> "MemPool":
        """The device's default pool (borrowed: never destroyed by pygraphrt)."""
        backend = _runtime.active()
        d = _ordinal(device, backend)
        return cls._borrow(backend, backend.ops.device_mem_pool(d, True), d)

    @classmethod
    def current(cls, device: "Device | int | None" = None) -> "MemPool":
        """The pool ``malloc_async`` without a pool uses on the device (borrowed)."""
        backend = _runtime.active()
        d = _ordinal(device, backend)
        return cls._borrow(backend, backend.ops.device_mem_pool(d, False), d)

    def set_current(self) -> None:
        """Make this the pool ``malloc_async`` without a pool uses on its device."""
        self._backend.ops.call("DeviceSetMemPool", self.device, self.handle)
        if self._owned:
            # The device refers to the pool now: keep the wrapper alive with the backend.
            self._backend.current_pools[self.device] = self

    @property
    def is_owned(self) -> bool:
        """Whether pygraphrt created the pool (and destroys it), rather than borrowed a device's."""
        return bool(self._owned)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MemPool) and other._backend is self._backend and \
            other.is_valid and self.is_valid and int(other) == int(self)

    def __hash__(self) -> int:
        return hash(("MemPool", int(self) if self.is_valid else id(self)))

    def __repr__(self) -> str:
        state = hex(int(self)) if self.is_valid else "closed"
        return f"<MemPool {state} device={self.device}{' owned' if self._owned else ''}>"

    # -- attributes ---------------------------------------------------------------
    def attribute(self, attr: MemPoolAttr) -> int:
        """One attribute: reuse policies as 0/1, sizes in bytes."""
        if not isinstance(attr, MemPoolAttr):
            raise errors.InvalidValue("MemPool.attribute", detail=f"expected a MemPoolAttr, got {attr!r}")
        return self._backend.ops.mem_pool_attribute(self.handle, attr)

    def attributes(self) -> dict[MemPoolAttr, int]:
        """Every attribute of the pool (:class:`MemPoolAttr` -> value)."""
        return {a: self.attribute(a) for a in MemPoolAttr}

    def set_attribute(self, attr: MemPoolAttr, value: int | bool) -> None:
        """Set a reuse policy (bool), the release threshold, or reset a high watermark (0)."""
        if not isinstance(attr, MemPoolAttr):
            raise errors.InvalidValue("MemPool.set_attribute", detail=f"expected a MemPoolAttr, got {attr!r}")
        if not isinstance(value, int) or value < 0:
            raise errors.InvalidValue("MemPool.set_attribute", detail=f"expected a non-negative int, got {value!r}")
        self._backend.ops.set_mem_pool_attribute(self.handle, attr, int(value))

    @property
    def release_threshold(self) -> int:
        """Bytes the pool keeps reserved at a synchronization instead of releasing them to the system."""
        return self.attribute(MemPoolAttr.RELEASE_THRESHOLD)

    @release_threshold.setter
    def release_threshold(self, nbytes: int) -> None:
        self.set_attribute(MemPoolAttr.RELEASE_THRESHOLD, nbytes)

    def trim(self, min_bytes_to_keep: int = 0) -> None:
        """Release reserved memory the pool is not using, keeping at least ``min_bytes_to_keep``."""
        self._backend.ops.call("MemPoolTrimTo", self.handle, count(min_bytes_to_keep))

    # -- access from other devices ---------------------------------------------------
    _ACCESS = ("none", "read", "read_write")

    def set_access(self, device: "Device | int", access: str = "read_write") -> None:
        """Let ``device`` access this pool's memory (``access``: ``"read_write"``, ``"read"`` or
        ``"none"``; ``MemPoolSetAccess``).  The pool's own device always reads and writes.
        A captured allocation takes the access the pool had when it was captured."""
        from .multidevice import checked_ordinal

        d = checked_ordinal(self._backend, device, "MemPool.set_access")
        if access not in self._ACCESS:
            raise errors.InvalidValue("MemPool.set_access", detail=f"access is one of {self._ACCESS}, got {access!r}")
        self._backend.ops.set_mem_pool_access(self.handle, d, access)

    def access(self, device: "Device | int") -> str:
        """``device``'s access to this pool's memory: ``"none"``, ``"read"`` or ``"read_write"``."""
        from .multidevice import checked_ordinal

        d = checked_ordinal(self._backend, device, "MemPool.access")
        return self._backend.ops.mem_pool_access(self.handle, d)


class AsyncBuffer(DeviceMemory, Owned):
    """Memory from ``malloc_async``: valid in stream order after the allocation.

    Made outside a capture it is owned: :meth:`free` (stream-ordered) or
    ``close()`` / garbage collection (``cudaFree``, which waits for the
    device) releases it.  Made inside a capture it is graph memory: the graph
    owns it, ``ptr`` is its address in every launch, and :meth:`free` adds a
    free node (inside the capture) or frees it in stream order (after a launch).
    """

    _destroy_api = "Free"
    _kind = "stream-ordered allocation"
    # What the compiled add_kernel reads at fixed offsets (a buffer given as a kernel argument:
    # graph/_hot.py); the rest of the state is in the __dict__.
    __slots__ = ("_backend", "_handle")

    def __init__(self, backend: Any, handle: Any, size: int, pool: MemPool | None, captured: bool,
                 device: int = 0) -> None:
        self._destroy_api = _after_device(device, "Free")  # (work queued on it runs first)
        super().__init__(backend, handle, not captured, keep=pool,
                         lease=None if pool is None or captured else pool._lease)
        self.size = size
        self._address = int(backend.ffi.cast("uintptr_t", handle))  # while _handle is not None
        self.pool = pool
        self.captured = captured
        self.device = device  # the device whose memory it is

    def free(self, stream: "Stream") -> None:
        """Free in stream order on ``stream`` (a free node when ``stream`` is capturing)."""
        self._same_backend(stream, "AsyncBuffer.free", Stream)
        free_async(stream, self)

    def __repr__(self) -> str:
        state = hex(int(self)) if self.is_valid else "freed"
        return f"<AsyncBuffer {state} size={self.size}{' captured' if self.captured else ''}>"


def malloc_async(stream: "Stream", size: int, pool: MemPool | None = None) -> AsyncBuffer:
    """Allocate ``size`` bytes in stream order (from ``pool``, else the capture's or device's pool)."""
    backend = stream.backend
    size = count(size)
    cap = stream._capture
    if pool is None and cap is not None:
        pool = cap.pool
    if pool is not None:
        if not isinstance(pool, MemPool):
            raise errors.InvalidValue("Stream.malloc_async", detail=f"pool must be a MemPool, got {pool!r}")
        stream._same_backend(pool, "Stream.malloc_async")
    capturing = stream.is_capturing
    try:
        handle = backend.ops.malloc_async(size, None if pool is None else pool.handle, stream.handle)
    except errors.GraphRTError as err:
        stream._note_failure("Stream.malloc_async", err)
        raise
    buf = AsyncBuffer(backend, handle, size, pool, captured=capturing,
                      device=pool.device if pool is not None else stream.device)
    if capturing and pool is not None:
        stream._retain(pool)
    return buf


def free_async(stream: "Stream", buf: Any) -> None:
    """Free stream-ordered (or graph) memory in stream order on ``stream``."""
    backend = stream.backend
    if isinstance(buf, AsyncBuffer):
        stream._same_backend(buf, "Stream.free_async")
        handle = buf.handle  # raises once freed
    elif isinstance(buf, int) and not isinstance(buf, bool) and buf > 0:
        handle = backend.ffi.cast("void *", buf)
    else:
        raise errors.InvalidValue("Stream.free_async", detail=f"expected an AsyncBuffer or an address, got {buf!r}")
    try:
        backend.ops.call("FreeAsync", handle, stream.handle)
    except errors.GraphRTError as err:
        stream._note_failure("Stream.free_async", err)
        raise
    if isinstance(buf, AsyncBuffer):
        # Freed in stream order: forget the handle without destroying it again.
        _hold_for_capture(buf._disown(), stream)
