"""Loaded code (libraries / modules), their kernels, argument packing and launch."""

from __future__ import annotations

import operator
import os
import struct
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from .. import _fast, _runtime, errors, multidevice
from .._handles import Owned, kept_by_live_graphs
from .._operands import as_address as _as_address
from .._operands import count, device_address
from ..device import Launchable, Stream
from ..multidevice import checked_ordinal
from ._signature import PackedArgs, Signature, infer_signature, parse_signature

if TYPE_CHECKING:
    from ._signature import ArgType  # noqa: F401

__all__ = ["Library", "Kernel", "KernelAttributes", "Dims", "as_dims", "lookup"]

Dims = tuple[int, int, int]

# Kernels by (backend, handle): kernel nodes read back from a graph find the
# Kernel (and so the signature that decodes their arguments) here.
_registry: "weakref.WeakValueDictionary[tuple[int, int], Kernel]" = weakref.WeakValueDictionary()


def lookup(backend: Any, handle: int) -> "Kernel | None":
    """The live Kernel object registered for a kernel handle, if any."""
    return _registry.get((id(backend), handle))


def as_dims(v: Any, what: str) -> Dims:
    """Launch dimensions from an int or 1-3 positive ints (or an object with x, y, z)."""
    if type(v) is int and 0 < v < 1 << 32:  # the common case first: one plain int
        return (v, 1, 1)
    if hasattr(v, "x") and hasattr(v, "y") and hasattr(v, "z"):
        v = (v.x, v.y, v.z)
    t = (v,) if isinstance(v, int) else tuple(v) if isinstance(v, (tuple, list)) else None
    if not t or len(t) > 3 or not all(isinstance(i, int) and not isinstance(i, bool) and 0 < i < 1 << 32
                                      for i in t):
        raise errors.InvalidValue(what, detail=f"expected 1-3 positive ints, got {v!r}")
    return (t + (1, 1))[:3]  # type: ignore[return-value]


def as_shared_mem(v: Any) -> int:
    """Dynamic shared memory bytes: an int in 0 .. 2**32-1 (the runtimes' unsigned int)."""
    if type(v) is int and 0 <= v < 1 << 32:  # the common case first
        return v
    n = count(v)
    if n >= 1 << 32:
        raise errors.InvalidValue("shared_mem", detail=f"{n} bytes do not fit the runtime's unsigned int")
    return n


@dataclass(frozen=True)
class KernelAttributes:
    """What the runtime reports about a compiled kernel."""

    max_threads_per_block: int
    num_regs: int
    shared_size_bytes: int  # static shared memory
    const_size_bytes: int
    local_size_bytes: int
    max_dynamic_shared_size_bytes: int
    ptx_version: int
    binary_version: int


class Library(Owned):
    """Compiled code loaded into the active runtime.

    CUDA: ``cudaLibraryLoadData`` / ``cudaLibraryLoadFromFile`` (CUBIN, fatbin or
    PTX); HIP: ``hipModuleLoadData`` / ``hipModuleLoad`` (code objects).

    Parameters
    ----------
    image : bytes-like, str or os.PathLike
        The code itself, or a path to a file holding it.
    """

    _kind = "library"
    # Read at its offset by the compiled add_kernel (is the kernel's library still loaded?).
    __slots__ = ("_handle",)

    def __init__(self, image: Any) -> None:
        backend = _runtime.active()
        ops = backend.ops
        self._destroy_api = ops.library_unload_api
        data = None
        if isinstance(image, (str, os.PathLike)):
            path = os.fsencode(image)
            if not os.path.exists(path):
                raise errors.InvalidValue("Library", detail=f"no such file: {os.fsdecode(path)}")
            handle = ops.load_library(None, path)
        else:
            try:
                raw = bytes(memoryview(image))
            except TypeError:
                raise errors.InvalidValue("Library", detail=f"expected bytes or a path, got "
                                                            f"{type(image).__name__}") from None
            if not raw:
                raise errors.InvalidValue("Library", detail="the image is empty")
            if raw.lstrip().startswith((b".version", b"//")) and not raw.endswith(b"\0"):
                raw += b"\0"  # PTX is text the loader reads up to its terminator
            data = backend.ffi.from_buffer(raw)
            handle = ops.load_library(data, None)
        super().__init__(backend, handle, True, keep=(data,))
        self._kernels: dict[str, Kernel] = {}
        self.link_log = ""  # the linker's info log, for libraries made by pygraphrt.link
        from ..device import _current_ordinal

        # The device current at the load (HIP loads into its context; CUDA's libraries are
        # context-independent); None where the runtime cannot tell.
        self.device: int | None = _current_ordinal(backend)
        # (architecture, image kind) where pygraphrt compiled the code (Program.load); None for
        # an image given as it is, whose architecture is left to the runtime to check.
        self._code: tuple[str, str] | None = None
        self._image = (data, path if data is None else None)  # to load it on another device (HIP)
        self._copies: dict[int, Library] = {}  # device -> this code loaded there (HIP)
        self._runs_on: dict[int, str | None] = {}  # device -> why it cannot run there (None: it can)

    # -- several devices ------------------------------------------------------------
    def check_device(self, device: int, what: str) -> None:
        """Refuse (NotSupported) to run this library's code on ``device`` where pygraphrt knows
        the code's architecture (a :class:`Program`'s) and the device cannot run it; the runtime
        checks any other image itself (``cudaErrorNoKernelImageForDevice`` at the launch)."""
        if self._code is None:
            return
        why = self._runs_on.get(device, False)
        if why is False:
            backend = self._backend
            arch = backend.ops.device_name_and_arch(device)[1]
            why = self._runs_on[device] = backend.ops.code_runs_on(self._code[0], self._code[1], arch)
        if why:
            raise errors.NotSupported(what, vendor=self._backend.ops.name,
                                      detail=f"device {device}: {why} (compile it for that device: "
                                             f"Program(..., device={device}))")

    def on_device(self, device: int) -> "Library":
        """This code as the runtime runs it on ``device``: the library itself where its kernels
        run on every device (CUDA's context-independent libraries) or it was loaded there; else
        (HIP) a copy loaded with ``device`` current, once, kept while this library is open."""
        device = checked_ordinal(self._backend, device, "Library.on_device")
        if not self._backend.ops.library_per_device or device == self.device or self.device is None:
            return self
        copy = self._copies.get(device)
        if copy is None or not copy.is_valid:
            data, path = self._image
            copy = multidevice.on_device(self._backend, device,
                                         lambda: Library(path if data is None else bytes(self._backend.ffi.buffer(data))))
            copy._code = self._code
            self._copies[device] = copy
        return copy

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> "Library":
        """Load the cubin, fatbin or PTX (code object on HIP) in the file at ``path``."""
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, (str, os.PathLike)):
            raise errors.InvalidValue("Library.from_file", detail=f"expected a path, got {path!r}")
        return cls(path)

    @classmethod
    def from_data(cls, image: bytes) -> "Library":
        """Load an image held in memory (anything bytes-like)."""
        if isinstance(image, (str, os.PathLike)):
            raise errors.InvalidValue("Library.from_data", detail=f"expected bytes, got {image!r} "
                                                                 "(a path: Library.from_file)")
        return cls(image)

    def kernel(self, name: str, signature: Any = None) -> "Kernel":
        """The kernel ``name`` (its lowered name for C++ kernels), typed by ``signature``.

        ``signature`` is a C parameter list (``"float*, float, int"``) or a
        sequence of types (strings, ctypes or numpy types, ctypes Structures).
        """
        if not isinstance(name, str) or not name:
            raise errors.InvalidValue("Library.kernel", detail=f"kernel name must be a non-empty str, got {name!r}")
        sig = None if signature is None else parse_signature(signature)
        k = self._kernels.get(name)
        if k is None or not k.is_valid:
            func, form = self._backend.ops.library_kernel(self.handle, name.encode())
            k = Kernel(self._backend, func, form, name, None, owner=self)
            self._kernels[name] = k
        return k if sig is None else k.with_signature(sig)

    def close(self) -> None:
        """Close the library: it and its kernels become invalid at once.

        The runtime unloads it now, unless a live graph, executable graph or capture in progress
        has work that runs one of its kernels: then it stays loaded until this object and they
        are gone (their nodes still run, read back and update).  The runtimes follow a kernel
        node's function when its parameters are read or the graph runs, and CUDA 12.9 and 13.0
        crashed reading back a node whose library had been unloaded.
        """
        if self._handle is None:
            return
        for k in self._kernels.values():
            k._func = None
        self._kernels.clear()
        for copy in self._copies.values():
            copy.close()
        self._copies.clear()
        if not self._in_use():
            super().close()
            return
        # Closed for the caller; the finalizer, which unloads, runs once the users let go of
        # this object (their keep lists hold it, or a kernel whose _owner it is).
        self._handle = None
        self._backend.live.discard(self)

    def _in_use(self) -> bool:
        """Whether a live graph, executable graph or capture keeps this library or one of its
        kernels."""
        return kept_by_live_graphs(self._backend,
                                   lambda o: o is self or (o.__class__ is Kernel and o._owner is self))


class Kernel(Launchable):
    """A kernel of a :class:`Library`, or a foreign kernel wrapped by handle (not owned).

    With a signature, launch arguments are packed and checked by it (and, where
    the runtime reports parameter offsets and sizes, the signature is checked
    against the compiled kernel once).  Without one only explicitly typed
    values (numpy / ctypes scalars, ctypes Structures) and device arrays are
    accepted.
    """

    __slots__ = ("_backend", "_func", "form", "name", "_signature", "_owner", "_checked",
                 "_param_info", "_launcher", "_scratch", "_scratch_keep", "_hot", "_launch_layout",
                 "_node_layout", "_node_hot", "_node_scratch", "_on_devices", "__weakref__")

    def __init__(self, backend: Any, func: Any, form: str, name: str, signature: Signature | None,
                 owner: Any) -> None:
        self._backend = backend
        self._func = func
        self.form = form
        self.name = name
        self._signature = signature
        self._owner = owner  # keeps the library loaded
        self._checked = False
        self._param_info: list[tuple[int, int]] | None | bool = False  # False: not asked yet
        self._launcher: Any = None
        self._scratch: list[tuple[Any, Any]] = []
        self._scratch_keep: list[Any] = []
        # The specialised plain launch (kernels._hot), made after the first launch has checked
        # the signature: None until then, False where there is none.
        self._hot: Any = None
        # (signature, packed layout, launch function's address, failure handler) for the C
        # Stream.launch / Kernel.launch (kernels._hot.install_launch), made with _hot in compiled mode.
        self._launch_layout: Any = None
        # (signature, packed layout) for the C Graph.add_kernel (pygraphrt.graph._hot), made after
        # the first kernel node has checked the signature: None until then, False where there is none.
        self._node_layout: Any = None
        # Graph.add_kernel's generated Python path (graph._kernel.build_adder), where the C one does
        # not make the kernel's nodes: None until the first node has checked the signature, False
        # where there is none.
        self._node_hot: Any = None
        # Reusable (argument buffer, kernel-node parameter struct)s of Graph.add_kernel's Python path.
        self._node_scratch: list[list[Any]] = []
        # device -> the kernel that runs there (for_device: itself, or its library's copy's on HIP)
        self._on_devices: dict[int, Kernel | None] = {}  # device -> its copy (None: this kernel)
        key = (id(backend), int(backend.ffi.cast("uintptr_t", func)))
        if key not in _registry or signature is not None:
            _registry[key] = self
        if "_kernel_launch" not in backend.memo:
            # Compiled mode: Kernel.launch in C from the backend's first kernel on (kernels._hot).
            backend.memo["_kernel_launch"] = _fast.install_method(backend, Kernel, "launch", "kernel_launch")

    @classmethod
    def wrap(cls, obj: Any, signature: Any = None, *, kind: str | None = None,
             name: str = "") -> "Kernel":
        """Borrow a kernel made elsewhere; it is never unloaded by pygraphrt.

        ``obj``: an int handle, a CuPy ``RawKernel`` / ``Function``, or a
        cuda.core ``Kernel``.  ``kind``: ``"function"`` (a CUfunction /
        hipFunction_t, the default for ints) or ``"kernel"`` (a CUDA library
        kernel, CUkernel).  The object is kept alive by the Kernel.
        """
        backend = _runtime.active()
        handle, guessed = _foreign_handle(obj)
        kind = kind or guessed
        if kind not in ("function", "kernel") or (kind == "kernel" and backend.vendor != "cuda"):
            raise errors.InvalidValue("Kernel.wrap", detail=f"kind must be 'function' or (CUDA) 'kernel', "
                                                            f"got {kind!r}")
        if handle == 0:
            raise errors.InvalidValue("Kernel.wrap", detail="a NULL kernel handle")
        sig = None if signature is None else parse_signature(signature)
        return cls(backend, backend.ffi.cast("void *", handle), kind, name or hex(handle), sig, owner=obj)

    @property
    def signature(self) -> Signature | None:
        """The kernel's parameter types; None: each launch's values say them (see
        ``infer_signature``).  Read-only: the first launch or node checks it against the
        compiled kernel once, and the fast paths are made for it -- :meth:`with_signature`
        gives the same kernel with another."""
        return self._signature

    def with_signature(self, signature: Any) -> "Kernel":
        """The same kernel, typed by ``signature``."""
        return Kernel(self._backend, self.handle, self.form, self.name, parse_signature(signature),
                      self._owner)

    # -- identity ---------------------------------------------------------------
    @property
    def handle(self) -> Any:
        """The kernel's handle as ``void *`` (a cudaKernel_t, CUfunction or hipFunction_t)."""
        f = self._func
        if f is None or (isinstance(self._owner, Library) and not self._owner.is_valid):
            raise errors.InvalidResourceHandle("Kernel.handle", detail="the kernel's library was unloaded")
        return f

    @property
    def is_valid(self) -> bool:
        """Whether the kernel can still be launched (its library is loaded)."""
        return self._func is not None and (not isinstance(self._owner, Library) or self._owner.is_valid)

    @property
    def library(self) -> Library | None:
        """The library the kernel comes from (None for a kernel not loaded by pygraphrt)."""
        return self._owner if isinstance(self._owner, Library) else None

    def __int__(self) -> int:
        return int(self._backend.ffi.cast("uintptr_t", self.handle))

    def __repr__(self) -> str:
        sig = f"({self.signature})" if self.signature is not None else "(untyped)"
        return f"<Kernel {self.name}{sig} {self.form}>"

    def for_device(self, device: int) -> "Kernel":
        """This kernel as it runs on ``device``: itself where its code runs on every device
        (CUDA), else the same kernel of its library loaded on ``device`` (HIP; loaded once).
        NotSupported where pygraphrt compiled the code for an architecture ``device`` cannot
        run (see :meth:`Library.check_device`); InvalidDevice for a device that does not exist."""
        return self._for_device(device, "Kernel.for_device")

    def _for_device(self, device: int, _what: str) -> "Kernel":
        """:meth:`for_device`, naming ``_what`` (the call made) in its errors."""
        device = checked_ordinal(self._backend, device, _what)
        on = self._on_devices
        if device in on:  # None: this kernel itself (kept so, not as a reference to itself)
            k = on[device]
            if k is None:
                return self
            if k.is_valid:
                return k
        lib = self._owner if isinstance(self._owner, Library) else None
        if lib is None:  # a foreign kernel: the runtime says whether it runs there
            on[device] = None  # (what the compiled launches and adds read: this kernel, as it is)
            return self
        lib.check_device(device, _what)
        copy = lib.on_device(device)
        if copy is lib:
            on[device] = None
            return self
        k = on[device] = copy.kernel(self.name, self._signature)
        return k

    # -- what the runtime says ------------------------------------------------------
    def attributes(self) -> KernelAttributes:
        """Registers, shared/const/local memory, max threads per block, versions."""
        ops, h = self._backend.ops, self.handle
        return KernelAttributes(**{name: ops.kernel_attribute(h, self.form, name)
                                   for name in KernelAttributes.__dataclass_fields__})

    def set_max_dynamic_shared_memory(self, nbytes: int) -> None:
        """Allow launches with up to ``nbytes`` of dynamic shared memory."""
        n = count(nbytes)
        if n >= 1 << 31:  # (the runtimes take the attribute's value as an int)
            raise errors.InvalidValue("Kernel.set_max_dynamic_shared_memory",
                                      detail=f"{n} bytes do not fit the runtime's int attribute")
        self._backend.ops.set_max_dynamic_shared_memory(self.handle, self.form, n)

    def max_active_blocks_per_multiprocessor(self, block_size: int, dynamic_shared_mem: int = 0) -> int:
        """Occupancy: how many blocks of ``block_size`` threads fit on one multiprocessor."""
        if not isinstance(block_size, int) or isinstance(block_size, bool) or not 0 < block_size < 1 << 31:
            raise errors.InvalidValue("occupancy", detail=f"block_size must be a positive int, got {block_size!r}")
        return self._backend.ops.occupancy(self.handle, self.form, block_size, count(dynamic_shared_mem))

    occupancy = max_active_blocks_per_multiprocessor

    @property
    def param_info(self) -> list[tuple[int, int]] | None:
        """(offset, size) of each parameter as the runtime reports it; None where it cannot."""
        if self._param_info is False:
            self._param_info = self._backend.ops.kernel_param_info(self.handle, self.form)
        return self._param_info  # type: ignore[return-value]

    # -- arguments ------------------------------------------------------------------
    def pack(self, args: Sequence[Any]) -> PackedArgs:
        """Pack ``args`` (a list or tuple) by the signature (checked against the kernel once) or
        by their types."""
        if not isinstance(args, (list, tuple)):
            raise errors.InvalidValue("Kernel.pack", detail=f"args must be a list or tuple, got {type(args).__name__}")
        sig = self.signature
        if sig is None:
            sig = infer_signature(args, f"kernel {self.name}")
            self._check(sig)
        elif not self._checked:
            self._check(sig)
            self._checked = True
        return sig.pack(args, self._pointer_of, f"kernel {self.name}")

    def _pointer_of(self, v: Any) -> int:
        return device_address(self._backend, v)

    def _check(self, sig: Signature) -> None:
        info = self.param_info
        if info is not None:
            sig.check_param_info(info, self.name)

    def argv(self, packed: PackedArgs) -> tuple[Any, Any]:
        """(``void *[]`` of argument addresses, the cffi buffer it points into): keep both."""
        if not isinstance(packed, PackedArgs):
            raise errors.InvalidValue("Kernel.argv", detail=f"{packed!r} is not PackedArgs (what Kernel.pack returns)")
        ffi = self._backend.ffi
        offsets = packed.offsets
        if not offsets:
            return ffi.NULL, None
        base = ffi.from_buffer(packed.buffer)
        return ffi.new("void *[]", [base + off for off in offsets]), base

    def decode(self, argv_address: int) -> list[Any] | None:
        """Argument values from a ``kernelParams`` array (None without a signature).

        ``argv_address`` is the array's address as an int, as a runtime reports it (a kernel
        node's parameters).  It is read as it is: like ``ctypes.string_at``, nothing can check
        that it points to such an array.
        """
        try:  # (an int, or what stands for one; never an object that only converts with int())
            address = None if isinstance(argv_address, bool) else operator.index(argv_address)
        except TypeError:
            address = None
        if address is None:
            raise errors.InvalidValue("Kernel.decode", detail=f"expected an address (an int), got {argv_address!r}")
        argv_address = _as_address(address, "Kernel.decode")
        sig = self.signature
        if sig is None:
            return None
        if not sig.params:
            return []
        if not argv_address:
            return None
        ffi = self._backend.ffi
        argv = ffi.cast("void **", argv_address)
        return sig.unpack([ffi.buffer(ffi.cast("char *", argv[i]), size)
                           for i, size in enumerate(sig._sizes)])

    # -- launch -----------------------------------------------------------------------
    def launch(self, stream: Stream, grid: Any, block: Any, *args: Any, shared_mem: int = 0,
               **attributes: Any) -> None:
        """Launch on ``stream``: ``grid`` and ``block`` dimensions, then the kernel's arguments.

        ``attributes``: launch attributes by name -- ``cooperative``, ``priority``,
        ``cluster_dim``, ``preferred_cluster_dim``, ``programmatic_stream_serialization``,
        ``programmatic_event`` (an Event, or (Event, trigger_at_block_start)),
        ``mem_sync_domain``, ``preferred_shared_memory_carveout`` (those the
        runtime has).  Inside a capture this adds a kernel node.
        """
        if not isinstance(stream, Stream):
            raise errors.InvalidValue("Kernel.launch", detail=f"{stream!r} is not a Stream")
        hot = self._hot
        if hot and not attributes:
            return hot(self, stream, grid, block, args, shared_mem)
        self._launch(stream, grid, block, args, shared_mem, attributes)

    def _launch(self, stream: Stream, grid: Any, block: Any, args: tuple[Any, ...], shared_mem: Any,
                attributes: dict[str, Any]) -> None:
        """The general launch path: every check, any argument kind, launch attributes."""
        backend = self._backend
        if stream._backend is not backend:
            raise errors.InvalidValue("Kernel.launch", detail="the stream belongs to another backend")
        if backend.several or self._hot is None:
            # The stream's device may not reach an argument's memory or run the code (checked at
            # a kernel's first launches, and at every launch once several devices are in use).
            if backend.several:
                runs = multidevice.check_launch(backend, self, stream.device, args, "Kernel.launch")
                if runs is not self:
                    return runs._launch(stream, grid, block, args, shared_mem, attributes)
            else:  # one device in use: device 0 (a borrowed stream's is not asked for)
                d = stream._device
                self._for_device(0 if d is None else d, "Kernel.launch")
        g = (grid, 1, 1) if type(grid) is int and 0 < grid < 1 << 32 else as_dims(grid, "grid")
        b = (block, 1, 1) if type(block) is int and 0 < block < 1 << 32 else as_dims(block, "block")
        smem = as_shared_mem(shared_mem)
        sig = self.signature
        scratch = None
        fast = sig.fast_values(args, self._pointer_of) if sig is not None and self._checked else None
        if fast is not None and sig._struct is not None:  # type: ignore[union-attr]
            # The runtime copies argument values at the launch call, so a launch may pack
            # into a reusable buffer: one per concurrent launcher (list pop/append are atomic).
            values, keep = fast
            scratch = self._scratch.pop() if self._scratch else self._new_scratch(sig)  # type: ignore[arg-type]
            try:
                sig._struct.pack_into(scratch[0], 0, *values)  # type: ignore[union-attr]
                argv = scratch[1]
            except (struct.error, OverflowError):
                self._scratch.append(scratch)
                scratch = None
        if scratch is None:
            packed = self.pack(args)
            argv, base = self.argv(packed)
            keep = list(packed.keep)
        try:
            if attributes:
                backend.ops.launch_kernel(self.handle, self.form, g, b, smem, stream.handle, argv,
                                          attributes)
            else:
                launcher = self._launcher
                if launcher is None or not self.is_valid:
                    launcher = self._launcher = backend.ops.kernel_launcher(self.handle, self.form)
                launcher(g, b, smem, stream.handle, argv)
        except errors.GraphRTError as err:
            stream._note_failure(f"Kernel.launch {self.name}", err)
            raise
        finally:
            if scratch is not None:
                self._scratch.append(scratch)
        # The runtime copied the argument values; during a capture the objects the
        # pointers came from (and the kernel's library) must live as long as the graph.
        if stream._capture is not None:
            events = [v[0] if isinstance(v, tuple) else v for k, v in attributes.items()
                      if k == "programmatic_event"]
            for obj in (*keep, *events, self._owner):
                if obj is not None:
                    stream._retain(obj)
        if self._hot is None and not attributes and self._checked:
            from . import _hot

            self._hot = _hot.build(self) or False

    def _new_scratch(self, sig: Signature) -> tuple[Any, Any]:
        """(writable view of a launch buffer, ``void *[]`` pointing into it)."""
        ffi = self._backend.ffi
        if not sig.params:
            return memoryview(bytearray(0)), ffi.NULL
        cbuf = ffi.new("char[]", sig.size)
        argv = ffi.new("void *[]", [cbuf + off for off in sig.offsets])
        self._scratch_keep.append(cbuf)  # argv points into cbuf
        return ffi.buffer(cbuf), argv


def _foreign_handle(obj: Any) -> tuple[int, str]:
    """(handle, kind) of a foreign kernel object."""
    if isinstance(obj, bool):
        raise errors.InvalidValue("Kernel.wrap", detail="a bool is not a kernel")
    if isinstance(obj, int):
        return obj, "function"
    inner = getattr(obj, "kernel", None)  # cupy.RawKernel -> cupy.cuda.function.Function
    if inner is not None and hasattr(inner, "ptr"):
        return int(inner.ptr), "function"
    if hasattr(obj, "ptr") and isinstance(getattr(obj, "ptr"), int):  # cupy Function
        return int(obj.ptr), "function"
    if type(obj).__module__.startswith("cuda.core") and hasattr(obj, "handle"):
        return int(obj.handle), "kernel"  # cuda.core Kernel: a CUkernel
    raise errors.InvalidValue("Kernel.wrap", detail=f"cannot find a kernel handle in {obj!r}; "
                                                    "pass the handle as an int")
