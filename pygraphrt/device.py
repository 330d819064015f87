"""Devices, streams, events and device memory."""

from __future__ import annotations

import operator
import weakref
from typing import TYPE_CHECKING, Any, Callable, Sequence

from . import _fast, _runtime, errors
from ._handles import ErrorSink, HostPayload, Owned, trampoline
from ._handles import hold as _hold
from ._handles import unhold as _unhold
from ._operands import DeviceMemory
from ._operands import as_address as _as_address
from ._operands import byte as _byte
from ._operands import check_fits as _check_fits
from ._operands import count as _count
from ._operands import keep as _keep_alive
from ._operands import ordinal as _ordinal
from ._operands import ptr as _ptr

# pygraphrt.enums is imported where it is used, not here: a program's first stream then loads it
# with the backend, while the driver initialises on another thread (_runtime.load), rather than
# before (cold start).
if TYPE_CHECKING:
    from ._records import DeviceInfo
    from .enums import CaptureMode, CaptureStatus, EdgeData, GraphMemAttr
    from .mempool import AsyncBuffer, MemPool
    from .graph import Capture, Graph, Node, Recapture
    from .kernels import Kernel
    from .multidevice import DeviceProperties, P2PAttributes

__all__ = ["Device", "Stream", "Event", "DeviceBuffer", "malloc", "current_device",
           "exchange_capture_mode"]


# Modules above this one, and enums, imported by the first call that needs them and kept here:
# an import statement costs about a microsecond even once its module is loaded, and the calls
# below run per copy, per allocation, per capture.
_CaptureStatus: Any = None  # pygraphrt.enums.CaptureStatus (_capture_status)
_mempool: Any = None  # pygraphrt.mempool (Stream.malloc_async / free_async)
_graph: Any = None  # pygraphrt.graph (Stream.capture / recapture)


def _load_mempool() -> Any:
    global _mempool
    from . import mempool

    _mempool = mempool
    return mempool


def _load_graph() -> Any:
    global _graph
    from . import graph

    _graph = graph
    return graph


def _capture_status() -> type[CaptureStatus]:
    """pygraphrt.enums.CaptureStatus (the module is loaded with the backend: see the imports)."""
    global _CaptureStatus
    if _CaptureStatus is None:
        from .enums import CaptureStatus

        _CaptureStatus = CaptureStatus
    return _CaptureStatus  # type: ignore[no-any-return]


def __getattr__(name: str) -> Any:  # DeviceInfo: a dataclass, defined on first use (._records)
    if name in ("DeviceInfo",):  # checked first: importers probe names such as __path__
        from . import _records

        return _records.lazy(globals(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _python_buffer(backend: Any, operand: Any, pointer: Any) -> bool:
    """Whether ``pointer`` is the char[] pygraphrt made of a Python buffer ``operand`` (host
    memory; from_buffer), not a cffi object the caller passed (whose memory is the caller's)."""
    return pointer is not operand and backend.ffi.typeof(pointer).kind == "array"


def _range_unknown(backend: Any, operand: Any, pointer: Any) -> int | None:
    """The address of an eager copy's operand whose range the runtime must be asked about
    (``check_copy_range``), or None where it is known to fit: a pygraphrt buffer (check_fits held
    the count to its size, and it spans its own allocation) or a Python buffer's host memory
    -- two driver queries a copy need not make."""
    if isinstance(operand, DeviceMemory) or _python_buffer(backend, operand, pointer):
        return None
    return int(backend.ffi.cast("uintptr_t", pointer))


class Device:
    """A GPU by ordinal.  ``Device(0).set_current()`` selects it for this thread.

    ``with Device(1): ...`` makes device 1 current for the block and the previous device
    current again when it ends, also when it raises (per thread, as the runtime's current
    device).  Several devices: see :mod:`pygraphrt.multidevice`.
    """

    def __init__(self, ordinal: int = 0) -> None:
        self.ordinal = _ordinal(ordinal, "Device")
        self._backend = _runtime.active()

    def __repr__(self) -> str:
        return f"Device({self.ordinal})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and other.ordinal == self.ordinal

    def __hash__(self) -> int:
        return hash(("Device", self.ordinal))

    def __enter__(self) -> "Device":
        from . import multidevice

        multidevice.scope_enter(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        from . import multidevice

        multidevice.scope_exit(self)

    def properties(self) -> "DeviceProperties":
        """Name, architecture, compute capability, memory, multiprocessors, UUID, PCI bus id."""
        from . import multidevice

        return multidevice.properties(self)

    def can_access_peer(self, other: "Device | int") -> bool:
        """Whether this device can access ``other``'s memory once peer access is enabled."""
        from . import multidevice

        return multidevice.can_access_peer(self, other)

    def enable_peer_access(self, other: "Device | int") -> None:
        """Let kernels on this device access ``other``'s memory (enabling it twice is no error)."""
        from . import multidevice

        multidevice.enable_peer_access(self, other)

    def disable_peer_access(self, other: "Device | int") -> None:
        """Withdraw this device's access to ``other``'s memory."""
        from . import multidevice

        multidevice.disable_peer_access(self, other)

    def peer_access_enabled(self, other: "Device | int") -> bool:
        """Whether pygraphrt enabled this device's access to ``other`` -- pygraphrt's own record
        (the runtime has no such query): blind to access that PyTorch or CuPy enabled."""
        from . import multidevice

        return multidevice.peer_access_enabled(self, other)

    def p2p_attributes(self, other: "Device | int") -> "P2PAttributes":
        """Performance rank, access, native atomics and array access from this device to ``other``."""
        from . import multidevice

        return multidevice.p2p_attributes(self, other)

    def set_current(self) -> "Device":
        """Make this device the calling thread's current device.

        Returns
        -------
        Device
            This device.
        """
        b = self._backend
        if self.ordinal and not b.several:  # a second device in use (pygraphrt.multidevice)
            from .multidevice import current, switch

            switch(b, self.ordinal, current(b))
        else:
            b.ops.call("SetDevice", self.ordinal)
        return self

    def synchronize(self) -> None:
        """Wait until all work on the device has completed."""
        ops = self._backend.ops
        cur = self._backend.ffi.new("int *")
        ops.call("GetDevice", cur)
        ops.call("SetDevice", self.ordinal)
        try:
            _checked(self._backend, "Device.synchronize", "DeviceSynchronize")
        finally:
            ops.call("SetDevice", cur[0])

    def info(self) -> DeviceInfo:
        """Name, architecture and total memory of the device.

        Returns
        -------
        DeviceInfo
        """
        from ._records import DeviceInfo

        name, arch, mem = self._backend.ops.device_name_and_arch(self.ordinal)
        return DeviceInfo(self.ordinal, name, arch, mem)

    # -- graph memory -------------------------------------------------------
    def graph_mem_attribute(self, attr: GraphMemAttr) -> int:
        """Graph memory used/reserved on this device (current or high watermark), in bytes."""
        ops = self._backend.ops
        value = self._backend.ffi.new("unsigned long long *")
        ops.call("DeviceGetGraphMemAttribute", self.ordinal,
                 ops.value(ops.graph_mem_attrs, attr, f"{ops.prefix}DeviceGetGraphMemAttribute"), value)
        return int(value[0])

    def graph_mem_attributes(self) -> dict[GraphMemAttr, int]:
        """Every graph-memory attribute of the device (:class:`GraphMemAttr` -> bytes)."""
        from .enums import GraphMemAttr

        return {a: self.graph_mem_attribute(a) for a in GraphMemAttr}

    def reset_graph_mem_high_watermarks(self) -> None:
        """Reset USED_MEM_HIGH and RESERVED_MEM_HIGH (the runtime accepts only 0)."""
        from .enums import GraphMemAttr

        ops = self._backend.ops
        zero = self._backend.ffi.new("unsigned long long *", 0)
        for attr in (GraphMemAttr.USED_MEM_HIGH, GraphMemAttr.RESERVED_MEM_HIGH):
            ops.call("DeviceSetGraphMemAttribute", self.ordinal,
                     ops.value(ops.graph_mem_attrs, attr, f"{ops.prefix}DeviceSetGraphMemAttribute"), zero)

    def graph_mem_trim(self) -> None:
        """Return unused graph memory reserved on this device to the OS."""
        self._backend.ops.call("DeviceGraphMemTrim", self.ordinal)


def _deprecated(old: str, new: str) -> None:
    """Warn that ``old`` is a deprecated spelling of the property ``new`` (docs/design.md:
    cheap state reads are properties)."""
    import warnings

    warnings.warn(f"{old} is deprecated: read the property {new} (no call)", DeprecationWarning, stacklevel=3)


def _current_ordinal(backend: Any) -> int | None:
    """The current device, recorded by the objects made on it; None where the runtime has no
    ``GetDevice`` (the stand-in runtimes of the CPU tests: tests/fakecuda)."""
    try:
        fn = backend.ops.fn("GetDevice")
    except errors.NotSupported:
        return None
    cur = backend.ffi.new("int *")
    rc = fn(cur)
    if rc:
        raise backend.ops.error(rc, backend.ops.prefix + "GetDevice")
    d = int(cur[0])
    if d and not backend.several:  # an object of a device other than 0: several in use
        from .multidevice import now_several

        now_several(backend)
    return d


def current_device() -> Device:
    """The calling thread's current device.

    Returns
    -------
    Device
    """
    b = _runtime.active()
    cur = b.ffi.new("int *")
    b.ops.call("GetDevice", cur)
    return Device(cur[0])


def _stream_int(obj: Any) -> int:
    """The stream handle of a foreign stream object, as an int."""
    if isinstance(obj, bool):
        raise errors.InvalidValue("Stream.wrap", detail="a bool is not a stream")
    if isinstance(obj, Stream):  # (its handle is cffi's, which int() refuses: say what to do)
        raise errors.InvalidValue("Stream.wrap", detail=f"{obj!r} is a pygraphrt Stream already: use it as it is")
    if isinstance(obj, int):
        value: Any = obj
    else:
        proto = getattr(obj, "__cuda_stream__", None)
        if proto is not None:  # cuda.core protocol: (version, handle)
            value = proto() if callable(proto) else proto
            value = value[1] if isinstance(value, tuple) and len(value) == 2 else None
        else:
            value = None
            for attr in ("cuda_stream", "ptr", "handle"):  # torch.cuda.Stream, cupy.cuda.Stream
                if hasattr(obj, attr):
                    value = getattr(obj, attr)
                    break
        try:
            value = None if value is None or isinstance(value, bool) else int(value)
        except (TypeError, ValueError):
            value = None
        if value is None:
            raise errors.InvalidValue("Stream.wrap", detail=f"cannot find a stream handle in {obj!r}")
    return _as_address(value, "Stream.wrap", "the stream handle")  # type: ignore[arg-type]


class Launchable:
    """What :meth:`Stream.launch` launches: :class:`pygraphrt.kernels.Kernel` derives from it, so
    that a stream recognises a kernel without importing the kernels layer above it (see
    ARCHITECTURE.md).  No state (its empty ``__slots__`` leave a Kernel's layout as it was)."""

    __slots__ = ()


class _KeepAlive:
    """A stream host function that does nothing but hold its operands until it runs."""

    __slots__ = ("operands",)

    def __init__(self, operands: list[Any]) -> None:
        self.operands = operands

    def __call__(self) -> None:
        self.operands = []


class Stream(Owned):
    """A stream.  ``Stream()`` creates one; ``Stream.wrap(obj)`` borrows a foreign one."""

    _destroy_api = "StreamDestroy"
    _kind = "stream"
    # The handle every launch, copy and query reads: a slot, whose reads CPython specializes (an
    # instance attribute that shadows Owned's class default is looked up the slow way, on
    # 3.12 some 170 instructions a read).  It exists once Owned.__init__ has run.
    __slots__ = ("_handle",)

    def __init__(self, *, non_blocking: bool = True, priority: int = 0) -> None:
        """Create a stream on the current device.

        Parameters
        ----------
        non_blocking : bool
            True (default): the stream does not synchronize with the legacy default stream.
        priority : int
            The stream's priority (lower numbers run first where the device has priorities).
        """
        self._init(non_blocking, priority, None, True)

    @classmethod
    def _adopt(cls, handle: Any, owned: bool) -> "Stream":
        """The Stream of a runtime stream handle (``owned``: destroyed with the object)."""
        self = cls.__new__(cls)
        self._init(True, 0, handle, owned)
        return self

    def _init(self, non_blocking: bool, priority: int, _handle: Any, _owned: bool) -> None:
        backend = _runtime.active()
        if _handle is None:
            try:  # (an int, or what stands for one: numpy's integers)
                level = None if isinstance(priority, bool) else operator.index(priority)
            except TypeError:
                level = None
            if level is None or not -(1 << 31) <= level < 1 << 31:
                raise errors.InvalidValue("Stream", detail=f"priority must be an int, got {priority!r}")
            ops = backend.ops
            out = backend.ffi.new(f"{ops.prefix}Stream_t *")
            flags = ops.const("StreamNonBlocking") if non_blocking else 0
            ops.call("StreamCreateWithPriority", out, flags, level)
            _handle = out[0]
            # A stream belongs to the device current at its creation (the runtime's rule).
            try:
                device: int | None = _current_ordinal(backend)
            except BaseException:  # (nothing owns the new stream yet: destroyed here)
                ops.fn("StreamDestroy")(_handle)
                raise
        else:
            device = None  # a borrowed stream: asked of the runtime when first wanted
        super().__init__(backend, _handle, _owned)
        self._device = device
        ops = backend.ops
        # Pre-bound for the cheap, frequent queries (is_capturing).
        self._status_cell = backend.ffi.new(f"enum {ops.prefix}StreamCaptureStatus *")
        # (chosen at the first is_capturing: _capturing_fn)
        self._is_capturing_fn: Any = None
        self._active_status = ops.value(ops.capture_statuses, _capture_status().ACTIVE, "")
        # The compiled fast path's one-argument form (status, or minus the error code).
        self._capture_status_fn = _fast.compiled_helper(backend, "_pgr_capture_status")
        self._sinks: set[ErrorSink] = set()
        self._own_sink = ErrorSink()
        # The pygraphrt capture this stream takes part in (began it, or joined it
        # by waiting on an event recorded inside it): its operands go to the graph.
        self._capture: Capture | None = None
        self._capture_failure: str | None = None
        if "_stream_launch" not in backend.memo:
            # Compiled mode: Stream.launch in C from the backend's first stream on (it runs the
            # Python method until a kernel's first launch binds the launches: kernels._hot).
            backend.memo["_stream_launch"] = _fast.install_method(backend, Stream, "launch", "stream_launch")

    @classmethod
    def wrap(cls, obj: Any) -> "Stream":
        """Borrow a stream (int handle, ``__cuda_stream__``, torch or CuPy stream); never destroys it."""
        b = _runtime.active()
        return cls._adopt(b.ffi.cast(f"{b.ops.prefix}Stream_t", _stream_int(obj)), False)

    @classmethod
    def legacy_default(cls) -> "Stream":
        """The legacy default stream (handle 0); it cannot be captured."""
        b = _runtime.active()
        return cls._adopt(b.ffi.cast(f"{b.ops.prefix}Stream_t", 0), False)

    def __repr__(self) -> str:
        state = "closed" if self._handle is None else hex(int(self))
        return f"<Stream {state}{'' if self._owned else ' (borrowed)'}>"

    def close(self) -> None:
        """Destroy the stream now (idempotent).  Refused while it is capturing: destroying it
        would leave the capture running, and a global-mode capture refuses every thread's
        cudaMalloc and synchronizations until it ends.  End or abort the capture first."""
        if self._handle is not None and self._owned:
            try:
                capturing = self.capture_status is not _capture_status().NONE
            except errors.GraphRTError:  # (a stream the runtime no longer knows: destroy what is left)
                capturing = False
            if capturing:
                raise errors.IllegalState("Stream.close", detail="the stream is capturing: end or abort the "
                                                                 "capture first")
        super().close()

    @property
    def is_legacy_default(self) -> bool:
        """Whether this is the legacy default stream (handle 0 or 1)."""
        return int(self) in (0, 1)

    @property
    def device(self) -> int:
        """The ordinal of the device this stream belongs to (the legacy default stream: the
        current device's)."""
        d = self._device
        if d is None:
            from . import multidevice

            d = multidevice.stream_device(self._backend, self.handle)
            if not self.is_legacy_default:  # (the legacy stream is each device's own)
                self._device = d
        return d

    # -- work --------------------------------------------------------------
    def memset(self, ptr: Any, value: int, count: int) -> None:
        """Set ``count`` bytes at ``ptr`` to ``value``, in stream order.

        Parameters
        ----------
        ptr : DeviceBuffer, int or device array
            The device memory to set (a pygraphrt buffer, an address, or an array with
            ``__cuda_array_interface__`` / DLPack).
        value : int
            The byte value, 0 to 255.
        count : int
            How many bytes.
        """
        n = _count(count)
        _check_fits(self._backend, ptr, n, f"{self._backend.ops.prefix}MemsetAsync", "destination")
        self._work("MemsetAsync", _ptr(self._backend, ptr, "Stream.memset", "ptr", True), _byte(value), n,
                   self.handle)
        self._retain(ptr)

    def memcpy(self, dst: Any, src: Any, count: int) -> None:
        """Copy ``count`` bytes from ``src`` to ``dst``, in stream order (unified addressing: the
        runtime tells host from device memory).

        Parameters
        ----------
        dst, src : DeviceBuffer, int, device array or host buffer
            A pygraphrt buffer, an int address, a cffi pointer, a device array
            (``__cuda_array_interface__``, DLPack, torch/CuPy), or host memory: any C-contiguous
            buffer (``bytes``, ``bytearray``, ``memoryview``, a numpy array).  A read-only buffer
            may be the source; the destination must be writable.
        count : int
            How many bytes; at most the size of an operand that knows its size.

        Notes
        -----
        A host buffer given to an eager copy is kept alive until the copy has run (a host
        function queued after it lets it go); captured, the graph keeps it.  Read a
        destination on the host only after ``synchronize()``.

        Examples
        --------
        >>> s.memcpy(buf, np.ones(4, np.float32), 16)      # doctest: +SKIP
        >>> out = np.empty(4, np.float32); s.memcpy(out, buf, 16); s.synchronize()  # doctest: +SKIP
        """
        b = self._backend
        kind = b.ops.const("MemcpyDefault")
        d = _ptr(b, dst, "Stream.memcpy", "dst", True)
        s = _ptr(b, src, "Stream.memcpy", "src")
        n = _count(count)
        eager = False
        if n:
            api = f"{b.ops.prefix}MemcpyAsync"
            _check_fits(b, dst, n, api, "destination")
            _check_fits(b, src, n, api, "source")
            # Asked once, before the copy: a capture pygraphrt did not begin (torch's) must be
            # seen, and a copy that succeeds leaves the answer as it was.
            eager = self.capture_status is _capture_status().NONE
            # Eager copies only: a captured copy is checked by the runtime (and refused
            # without a crash), and an invalidated capture must answer as the runtime does.
            if eager:
                b.ops.check_copy_range(_range_unknown(b, dst, d), _range_unknown(b, src, s), n, api)
        self._work("MemcpyAsync", d, s, n, kind, self.handle)
        if eager:
            # a Python buffer's host memory, which the runtime may read or write after we return
            # (not while capturing: a capture would take the host function as a node)
            host = [x for x, c in ((dst, d), (src, s)) if _python_buffer(b, x, c)]
            if host:
                self._keep_until_run(host)
        elif self._capture is not None:
            self._retain(dst)
            self._retain(src)

    def _keep_until_run(self, operands: list[Any]) -> None:
        """Keep ``operands`` alive until the stream's work so far has run: a host function
        queued after it holds them (a pinned host buffer is read or written asynchronously;
        the caller may have passed a temporary such as ``np.ones(4)``)."""
        try:
            self._backend.ops.fn("LaunchHostFunc")
        except errors.NotSupported:  # a runtime without host functions: wait for the copy instead
            self._work("StreamSynchronize", self.handle)
            return
        self.launch_host_func(_KeepAlive(operands))

    def _retain(self, operand: Any) -> None:
        """During a capture, the graph being built keeps buffers given as objects alive (one
        entry for a run of captured work on the same objects, as the C launch keeps them)."""
        cap = self._capture
        if cap is not None and not isinstance(operand, int):
            kept = cap._keep
            if not kept or kept[-1] is not operand:
                _keep_alive(kept, operand)

    def record(self, event: "Event") -> None:
        """Record ``event`` on this stream: it completes when the work issued before it has.

        Parameters
        ----------
        event : Event
            An event of the stream's device.  Inside a capture this adds an event-record node, and a
            stream that waits on the event joins the capture.
        """
        self._same_backend(event, "Stream.record", Event)
        if event._device is not None and self._device is not None and event._device != self._device:
            # The runtime answers only "invalid resource handle": say which devices.
            raise errors.InvalidResourceHandle(
                f"{self._backend.ops.prefix}EventRecord",
                detail=f"the event belongs to device {event._device} and the stream to device {self._device}: "
                       f"an event is recorded only on streams of its own device (create it with device "
                       f"{self._device} current; a stream may wait on another device's event)")
        self._work("EventRecord", event.handle, self.handle)
        # A waiter on this event joins that capture.  Weak: an event must not keep
        # a finished capture (and so its graph and operands) alive.
        cap = self._capture
        event._capture = weakref.ref(cap) if cap is not None else None

    def wait(self, event: "Event") -> None:
        """Make later work on this stream wait until ``event`` has completed.

        Parameters
        ----------
        event : Event
            The event to wait on (of any device).  Waiting on an event recorded inside a capture joins
            this stream to that capture (the fork of a fork/join).
        """
        self._same_backend(event, "Stream.wait", Event)
        self._work("StreamWaitEvent", self.handle, event.handle, 0)
        ref = event._capture
        cap = ref() if ref is not None else None
        if cap is not None and cap._state == "active" and self._capture is None:
            cap._join(self)

    def launch_host_func(self, fn: Callable[[], Any], *, spin_wait: bool = False) -> None:
        """Run ``fn()`` on a runtime thread once preceding work is done.

        Captured, it becomes a host node; an exception it raises is kept and
        raised by the next ``synchronize()`` of this stream (or of the
        executable graph that ran it).  ``spin_wait=True`` asks the runtime to
        spin rather than block while the function waits its turn
        (``cudaLaunchHostFunc_v2`` with ``cudaHostTaskSpinWait``, CUDA >= 13.2): less
        latency for short host steps, a busy CPU core meanwhile.
        """
        if type(spin_wait) is not bool:  # (before any runtime is asked whether it has the _v2 call)
            raise errors.InvalidValue("Stream.launch_host_func", detail=f"spin_wait must be True or False, "
                                                                        f"got {spin_wait!r}")
        b = self._backend
        payload = HostPayload(b, fn, self._own_sink)
        # Held until it has run, whatever becomes of this stream (closed, collected) meanwhile;
        # captured, the graph keeps it instead (the capture hands it to the graph, whose sink it
        # then reports to, and each launch of an executable graph holds it again).
        eager = self._capture is None
        if eager:
            _hold((payload,))
        try:
            if spin_wait:
                b.ops.fn("LaunchHostFunc_v2")  # NotSupported, naming the versions, where the runtime lacks it
                self._work("LaunchHostFunc_v2", self.handle, trampoline(b), payload.c_handle,
                           b.ops.const("HostTaskSpinWait"))
            else:
                self._work("LaunchHostFunc", self.handle, trampoline(b), payload.c_handle)
        except BaseException:
            if eager:
                _unhold((payload,))
            raise
        if not eager:
            self._capture._keep.append(payload)  # type: ignore[union-attr]

    def signal_external_semaphores(self, signals: "Sequence[Any]") -> None:
        """Signal external semaphores in stream order (:class:`pygraphrt.SemaphoreSignal` items)."""
        from .extsem import stream_op

        stream_op(self, signals, wait=False)

    def wait_external_semaphores(self, waits: "Sequence[Any]") -> None:
        """Make later work on this stream wait for external semaphores (:class:`pygraphrt.SemaphoreWait`)."""
        from .extsem import stream_op

        stream_op(self, waits, wait=True)

    def malloc_async(self, size: int, pool: "MemPool | None" = None) -> "AsyncBuffer":
        """Allocate ``size`` bytes in stream order (see :mod:`pygraphrt.mempool`).

        From ``pool``, else the capture's pool, else the device's current pool.
        Inside a capture this adds a memory-allocation node.
        """
        return (_mempool or _load_mempool()).malloc_async(self, size, pool)  # type: ignore[no-any-return]

    def free_async(self, buf: "AsyncBuffer | int") -> None:
        """Free stream-ordered memory in stream order (a free node inside a capture)."""
        (_mempool or _load_mempool()).free_async(self, buf)

    def launch(self, kernel: "Kernel", grid: Any, block: Any, *args: Any, shared_mem: int = 0,
               **attributes: Any) -> None:
        """Launch ``kernel`` here: ``stream.launch(k, grid, block, *args, shared_mem=0, **attributes)``.

        Same as :meth:`pygraphrt.kernels.Kernel.launch`; captured, it becomes a kernel node.
        """
        hot = getattr(kernel, "_hot", None)  # the kernel's specialised plain launch (kernels._hot)
        if hot and not attributes:
            return hot(kernel, self, grid, block, args, shared_mem)
        # (Not any object's ``launch``: another Stream's would call this one back, without end.
        # A pygraphrt Kernel derives from Launchable: the kernels layer sits above this module.)
        if not isinstance(kernel, Launchable):
            raise errors.InvalidValue("Stream.launch", detail=f"{kernel!r} is not a pygraphrt Kernel")
        kernel.launch(self, grid, block, *args, shared_mem=shared_mem, **attributes)

    def _work(self, api: str, *args: Any) -> None:
        ops = self._backend.ops
        rc = ops.fn(api)(*args)
        if rc:
            err = ops.error(rc, ops.prefix + api)
            self._note_failure(f"Stream.{api}", err)
            _note_capture_failures(self._backend, f"Stream.{api}", err)
            raise err

    def _note_failure(self, what: str, err: errors.GraphRTError) -> None:
        """Remember the call that broke a capture on this stream (named by Capture.end)."""
        if self._capturing_hint():
            self._capture_failure = f"{what} ({err.name})"

    def _capturing_hint(self) -> bool:
        try:
            return self.capture_status is not _capture_status().NONE
        except errors.GraphRTError:
            return False

    def synchronize(self) -> None:
        """Wait for all work; then raise any exception a host callable raised."""
        self._work("StreamSynchronize", self.handle)
        self._own_sink.raise_pending("Stream.synchronize")
        sinks, self._sinks = self._sinks, set()
        for sink in sinks:
            sink.raise_pending("Stream.synchronize")

    @property
    def is_done(self) -> bool:
        """Whether all work issued to the stream has completed (``StreamQuery``; does not wait).

        Raises
        ------
        GraphRTError
            The runtime refused the query (for one, while a global-mode capture runs).
        """
        ops = self._backend.ops
        rc = ops.fn("StreamQuery")(self.handle)
        if rc == 0:
            return True
        err = ops.error(rc, ops.prefix + "StreamQuery")
        if isinstance(err, errors.NotReady):
            return False
        _note_capture_failures(self._backend, "Stream.is_done", err)
        raise err

    def query(self) -> bool:
        """Deprecated spelling of :attr:`is_done` (a property: cheap state reads are properties,
        docs/design.md)."""
        _deprecated("Stream.query()", "Stream.is_done")
        return self.is_done

    # -- capture -----------------------------------------------------------
    @property
    def capture_status(self) -> CaptureStatus:
        """The stream's capture status: NONE, ACTIVE or INVALIDATED (a capture the runtime gave
        up on, not yet ended).  ``is_capturing`` is the cheaper test for ACTIVE.

        (A property, as every cheap state read is: docs/design.md.  The old call
        ``capture_status()`` still works, with a DeprecationWarning.)"""
        ops = self._backend.ops
        st = self._backend.ffi.new(f"enum {ops.prefix}StreamCaptureStatus *")
        ops.call("StreamIsCapturing", self.handle, st)
        return ops.capture_status_of[st[0]]

    @property
    def is_capturing(self) -> bool:
        """Whether a capture is active on this stream (the cheap form of ``capture_status``)."""
        f = self._capture_status_fn
        if f is not None:
            try:
                r = f(self._handle)
            except TypeError:
                self.handle  # closed: raises InvalidResourceHandle
                raise
            if r >= 0:
                return r == self._active_status
            if r != _fast.NO_FUNCTION:
                raise self._backend.ops.error(-r, self._backend.ops.prefix + "StreamIsCapturing")
        cell = self._status_cell
        fn = self._is_capturing_fn or self._capturing_fn()
        try:
            rc = fn(self._handle, cell)
        except TypeError:
            self.handle  # closed: raises InvalidResourceHandle
            raise
        if rc:
            ops = self._backend.ops
            rc = ops.refused("StreamIsCapturing", fn, rc, self._handle, cell)
            if rc:
                raise ops.error(rc, ops.prefix + "StreamIsCapturing")
        return cell[0] == self._active_status

    def _capturing_fn(self) -> Any:
        """is_capturing's function, chosen at its first call rather than with the stream (the
        first stream is a program's first device call, and looking the driver's function up
        there would lengthen its start): in ABI mode the driver's cuStreamIsCapturing where the
        runtime hands it out (Vendor.direct_fn), else the runtime's."""
        fn = self._is_capturing_fn = self._backend.ops.hot_fn("StreamIsCapturing")
        return fn

    def capture(self, mode: str | CaptureMode = "global", *, graph: "Graph | None" = None,
                dependencies: "list[Node] | None" = None,
                edges: list[EdgeData] | None = None, pool: "MemPool | str | None" = None) -> "Capture":
        """Capture the work issued on this stream into a graph (a context manager).

        With ``graph``, capture into that existing graph after ``dependencies``
        (each with its ``edges`` entry of edge data where the runtime has it).
        ``pool``: the MemPool that ``malloc_async`` without a pool uses during
        the capture, or ``"private"`` for a new pool of this capture's own.
        """
        return (_graph or _load_graph()).Capture(self, mode, graph, dependencies, edges,  # type: ignore[no-any-return]
                                                 pool=pool)

    def recapture(self, graph: "Graph", mode: str | CaptureMode = "global", *,
                  on_mismatch: Any = None) -> "Recapture":
        """Capture the same work again into ``graph``, node for node (CUDA >= 13.3).

        The work must create the graph's nodes again in the same order; changed
        parameters are reported in ``cap.mismatches`` (and to ``on_mismatch``,
        which may return False to fail the recapture), and ``cap.update_eligible``
        says whether executable graphs of ``graph`` can take them with ``update``.
        A failed recapture leaves the graph undefined: pygraphrt closes it.  See
        :mod:`pygraphrt.graph._recapture`.
        """
        return (_graph or _load_graph()).Recapture(self, graph, mode, on_mismatch)  # type: ignore[no-any-return]

    def begin_capture(self, mode: str | CaptureMode = "global", **kw: Any) -> "Capture":
        """Explicit form: ``cap = s.begin_capture(); ...; graph = cap.end()``."""
        cap = self.capture(mode, **kw)
        cap.begin()
        return cap


class Event(Owned):
    """An event; ``timing=False`` (default) makes record/wait cheapest."""

    _destroy_api = "EventDestroy"
    _kind = "event"

    def __init__(self, *, timing: bool = False) -> None:
        """Create an event.

        Parameters
        ----------
        timing : bool
            Record timestamps, for :meth:`elapsed_ms` (False, the default, is cheaper).
        """
        self._init(timing, None, True)

    @classmethod
    def _adopt(cls, handle: Any, owned: bool) -> "Event":
        """The Event of a runtime event handle (``owned``: destroyed with the object)."""
        self = cls.__new__(cls)
        self._init(False, handle, owned)
        return self

    def _init(self, timing: bool, _handle: Any, _owned: bool) -> None:
        backend = _runtime.active()
        made_here = _handle is None
        if _handle is None:
            ops = backend.ops
            out = backend.ffi.new(f"{ops.prefix}Event_t *")
            flags = 0 if timing else ops.const("EventDisableTiming")
            ops.call("EventCreateWithFlags", out, flags)
            _handle = out[0]
        super().__init__(backend, _handle, _owned)
        # The device current at creation, which the event belongs to (None: borrowed, unknown;
        # the runtime has no query of an event's device).
        self._device: int | None = _current_ordinal(backend) if made_here else None
        self._capture: weakref.ref[Capture] | None = None  # the capture it was last recorded in

    @property
    def device(self) -> int | None:
        """The device current when pygraphrt created the event (None for a borrowed one)."""
        return self._device

    def synchronize(self) -> None:
        """Wait until the work before the event's last record has completed."""
        _checked(self._backend, "Event.synchronize", "EventSynchronize", self.handle)

    @property
    def is_done(self) -> bool:
        """Whether the work before the event's last record has completed (``EventQuery``;
        does not wait).  True for an event never recorded."""
        ops = self._backend.ops
        rc = ops.fn("EventQuery")(self.handle)
        if rc == 0:
            return True
        err = ops.error(rc, ops.prefix + "EventQuery")
        if isinstance(err, errors.NotReady):
            return False
        _note_capture_failures(self._backend, "Event.is_done", err)
        raise err

    def query(self) -> bool:
        """Deprecated spelling of :attr:`is_done` (docs/design.md)."""
        _deprecated("Event.query()", "Event.is_done")
        return self.is_done

    def elapsed_ms(self, start: "Event") -> float:
        """Milliseconds from ``start`` to this event (both recorded, with timing)."""
        self._same_backend(start, "Event.elapsed_ms", Event)
        out = self._backend.ffi.new("float *")
        self._backend.ops.call("EventElapsedTime", out, start.handle, self.handle)
        return float(out[0])


class DeviceBuffer(DeviceMemory, Owned):
    """Device memory from ``cudaMalloc``/``hipMalloc``; ``ptr`` is its address as an int."""

    _destroy_api = "Free"
    _kind = "device buffer"
    # What the compiled hot methods read at fixed offsets (a buffer given as a memset's or a
    # kernel argument's address: graph/_hot.py); the rest of the state is in the __dict__.
    __slots__ = ("_backend", "_handle")

    def __init__(self, size: int) -> None:
        backend = _runtime.active()
        size = _count(size)
        out = backend.ffi.new("void **")
        _checked(backend, "malloc", "Malloc", out, size)
        super().__init__(backend, out[0], True)
        self.size = size
        # the device whose memory it is (the current one; None where the runtime cannot tell)
        self.device: int | None = _current_ordinal(backend)
        self._address = int(backend.ffi.cast("uintptr_t", out[0]))  # while _handle is not None

    def copy_from(self, data: Any, stream: Stream | None = None) -> None:
        """Copy a bytes-like object into the buffer (synchronously when no stream)."""
        b = self._backend
        try:
            buf = b.ffi.from_buffer(data)
        except TypeError:
            raise errors.InvalidValue("DeviceBuffer.copy_from",
                                      detail=f"expected a bytes-like object, got {type(data).__name__}") from None
        if len(buf) > self.size:
            raise errors.InvalidValue("DeviceBuffer.copy_from",
                                      detail=f"{len(buf)} bytes do not fit in {self.size}")
        self._copy(self.handle, buf, len(buf), stream, "DeviceBuffer.copy_from")
        if stream is None:
            # cudaMemcpy/hipMemcpy from pageable host memory returns once the data is staged, not
            # once it reached the device ("the DMA to final destination may not have completed"),
            # and non-blocking streams do not wait for the legacy stream: without this, work a
            # non-blocking stream runs next could race the copy (seen on an H100: a conformance
            # case's memset graph most likely ran before the zeroing copy_from landed).
            b.ops.call("StreamSynchronize", b.ffi.NULL)

    def to_bytes(self, count: int | None = None, stream: Stream | None = None) -> bytes:
        """The buffer's first ``count`` bytes (all of them by default), copied to the host
        (in order on ``stream`` where given, which is then synchronized)."""
        n = self.size if count is None else _count(count)
        if n > self.size:
            raise errors.InvalidValue("DeviceBuffer.to_bytes", detail=f"{n} bytes: the buffer has {self.size}")
        out = bytearray(n)
        self._copy(self._backend.ffi.from_buffer(out), self.handle, n, stream, "DeviceBuffer.to_bytes")
        return bytes(out)

    def _copy(self, dst: Any, src: Any, n: int, stream: Stream | None, what: str) -> None:
        b = self._backend
        kind = b.ops.const("MemcpyDefault")
        if stream is None:
            b.ops.call("Memcpy", dst, src, n, kind)
        else:
            self._same_backend(stream, what, Stream)
            stream.memcpy(dst, src, n)
            stream.synchronize()


def _note_capture_failures(backend: Any, what: str, err: errors.GraphRTError) -> None:
    """A call failed: every capture it invalidated remembers it (named when the capture ends)."""
    if not isinstance(err, errors.StreamCaptureError):
        return
    for obj in list(backend.live):
        if isinstance(obj, Stream) and obj._capture is not None and obj._capture_failure is None:
            obj._note_failure(what, err)


def _checked(backend: Any, what: str, api: str, *args: Any) -> None:
    """Call ``api``; on failure note the captures it broke, then raise."""
    ops = backend.ops
    rc = ops.fn(api)(*args)
    if rc:
        err = ops.error(rc, ops.prefix + api)
        _note_capture_failures(backend, what, err)
        raise err


def malloc(size: int) -> DeviceBuffer:
    """Allocate ``size`` bytes of device memory on the current device.

    Parameters
    ----------
    size : int
        Bytes to allocate.

    Returns
    -------
    DeviceBuffer
        The buffer; freed when closed or collected.

    Examples
    --------
    >>> buf = pygraphrt.malloc(1 << 20)   # doctest: +SKIP
    """
    return DeviceBuffer(size)


def exchange_capture_mode(mode: str | CaptureMode) -> CaptureMode:
    """Set this thread's capture-interaction mode; return the previous one."""
    from .enums import capture_mode

    b = _runtime.active()
    ops = b.ops
    m = capture_mode(mode, "exchange_capture_mode")
    cell = b.ffi.new(f"enum {ops.prefix}StreamCaptureMode *",
                     ops.value(ops.capture_modes, m, f"{ops.prefix}ThreadExchangeStreamCaptureMode"))
    ops.call("ThreadExchangeStreamCaptureMode", cell)
    back = {int(getattr(b.lib, v)): k for k, v in ops.capture_modes.items()}
    return back[cell[0]]
