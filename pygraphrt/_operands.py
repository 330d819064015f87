"""Operands: turning what users pass (buffers, arrays, addresses) into what runtime calls take.

One module serves stream work, graph nodes and kernel arguments alike:

* :func:`ptr` -- the ``void *`` of a copy/memset operand: a pygraphrt buffer, an
  int address, a cffi pointer, a device array (``__cuda_array_interface__``,
  DLPack, PyTorch/CuPy), or host memory (any buffer-protocol object);
* :func:`device_address` -- the integer device address of a kernel's pointer
  argument (device arrays only: host memory given to a kernel is refused);
* :func:`count` / :func:`byte` -- validated sizes and memset values.

pygraphrt's own buffers expose ``__pygraphrt_pointer__`` (the address; raises
``InvalidResourceHandle`` once freed) and ``_backend``, so a buffer of another
backend is refused instead of reaching its runtime.
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Mapping
from typing import Any, NamedTuple

from . import errors

# DLPack device types whose memory a kernel (or a copy) can address as device memory:
# kDLCUDA, kDLCUDAHost (pinned), kDLROCM, kDLROCMHost, kDLCUDAManaged.
_DLPACK_GPU_DEVICES = {2, 3, 10, 11, 13}


def dlpack_device(obj: Any, api: str = "pointer") -> tuple[int, int]:
    """``obj.__dlpack_device__()`` checked: (DLPack device type, device id), ints."""
    dev = obj.__dlpack_device__()
    try:
        device_type, device_id = dev
        return operator.index(device_type), operator.index(device_id)
    except (TypeError, ValueError):
        raise errors.InvalidValue(api, detail=f"{type(obj).__name__}.__dlpack_device__() must return "
                                              f"(device type, device id), got {dev!r}") from None


def _dltensor(capsule: Any, api: str = "pointer", owner: Any = None) -> Any:
    """The DLTensor a DLPack capsule ("dltensor", not consumed) points to, as a ctypes struct:
    valid while the capsule lives.  Anything else ``owner.__dlpack__()`` returned is refused
    (InvalidValue naming ``api``)."""
    tensor, pointer = _dlpack_ctypes or _load_dlpack_ctypes()
    try:
        return tensor.from_address(pointer(capsule, b"dltensor"))
    except ValueError:  # (not a capsule, or one of another name: PyCapsule_GetPointer says so)
        raise errors.InvalidValue(api, detail=f"{type(owner).__name__}.__dlpack__() returned a "
                                              f"{type(capsule).__name__}, not a DLPack capsule "
                                              "('dltensor', unconsumed)") from None


# (DLTensor as a ctypes struct, PyCapsule_GetPointer): made by the first DLPack operand, not
# with the module (the cold start would pay for ctypes), and kept (an import statement per
# operand costs about a microsecond).  The function is pygraphrt's own object, not
# ctypes.pythonapi's, whose argtypes other code may set.
_dlpack_ctypes: tuple[Any, Any] | None = None


def _load_dlpack_ctypes() -> tuple[Any, Any]:
    global _dlpack_ctypes
    import ctypes

    class DLDevice(ctypes.Structure):
        _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]

    class DLDataType(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]

    class DLTensor(ctypes.Structure):
        # DLManagedTensor (the unversioned capsule "dltensor") begins with this.
        _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int),
                    ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                    ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]

    prototype = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)
    _dlpack_ctypes = (DLTensor, prototype(("PyCapsule_GetPointer", ctypes.pythonapi)))
    return _dlpack_ctypes


def _gpu_dltensor(obj: Any) -> tuple[Any, Any, int]:
    """(capsule, tensor, data address) of a DLPack producer on a GPU (the capsule is not
    consumed).  The capsule keeps its name, so its destructor returns the tensor to the
    producer: the caller holds it while it reads the tensor."""
    device_type, _ = dlpack_device(obj)
    if device_type not in _DLPACK_GPU_DEVICES:
        raise errors.InvalidValue("pointer", detail=f"{type(obj).__name__} lives on DLPack device "
                                                    f"type {device_type}, not on a GPU")
    capsule = obj.__dlpack__()
    tensor = _dltensor(capsule, "pointer", obj)
    return capsule, tensor, int(tensor.data or 0) + int(tensor.byte_offset)


def _dlpack_address(obj: Any) -> int:
    """The data address of a DLPack producer on a GPU."""
    return _gpu_dltensor(obj)[2]


def array_address(obj: Any) -> int | None:
    """The device address behind a GPU array object, or None if ``obj`` is not one."""
    own = getattr(obj, "__pygraphrt_pointer__", None)
    if own is not None:
        return int(own)
    cai = _interface_dict(obj, "__cuda_array_interface__", "pointer")
    if cai is not None:  # (only its address is read here: the caller gives the byte count)
        return _interface_address(obj, cai, "__cuda_array_interface__", "pointer")[0]
    data_ptr = getattr(obj, "data_ptr", None)  # torch.Tensor (CPU tensors too: checked below)
    if callable(data_ptr) and hasattr(obj, "is_cuda"):
        if not obj.is_cuda:
            raise errors.InvalidValue("pointer", detail="a CPU torch.Tensor is not device memory")
        return int(data_ptr())
    if hasattr(obj, "__dlpack_device__") and hasattr(obj, "__dlpack__"):
        return _dlpack_address(obj)
    return None


class Address(int):
    """A device or host address read back from the runtime (a kernel node's pointer argument):
    an int, shown in hex."""

    __slots__ = ()

    def __repr__(self) -> str:
        return hex(self)

    __str__ = __repr__


def _check_backend(backend: Any, obj: Any) -> None:
    other = getattr(obj, "_backend", None)
    if other is not None and other is not backend:
        raise errors.InvalidValue("operand", detail=f"{type(obj).__name__} belongs to the "
                                                    f"{other.vendor} backend, not {backend.vendor}")


def as_address(value: int, api: str, what: str = "address") -> int:
    """``value`` (an int) as an address: 0 to 2**64 - 1, else InvalidValue for ``api`` (a cast
    would wrap a negative or larger one round to another address)."""
    if not 0 <= value < 1 << 64:
        raise errors.InvalidValue(api, detail=f"{what} {value} is out of range (an address is 0 to 2**64 - 1)")
    return value


#: What a copy or memset operand may be (named by the messages that refuse one).
ACCEPTED_OPERANDS = ("a pygraphrt buffer, an int address, a cffi pointer, a device array "
                     "(__cuda_array_interface__, DLPack, torch/CuPy) or host memory (a C-contiguous "
                     "buffer: bytes, bytearray, memoryview, numpy array)")

# DLPack's kDLCPU: an array in (pageable or pinned) host memory.
_DLPACK_CPU = 1


def _in_host_memory(p: Any) -> bool:
    """Whether ``p`` is an array that says it lives in host memory (numpy: DLPack device kDLCPU,
    or an ``__array_interface__`` with no device interface): it is copied through the buffer
    protocol, not refused as "not on a GPU"."""
    if hasattr(p, "__pygraphrt_pointer__") or hasattr(p, "__cuda_array_interface__"):
        return False
    dev = getattr(p, "__dlpack_device__", None)
    if dev is not None:
        try:
            return int(dev()[0]) == _DLPACK_CPU
        except Exception:  # a producer that cannot say: the device path reports it
            return False
    return hasattr(p, "__array_interface__")


def ptr(backend: Any, p: Any, api: str = "pointer", role: str = "", writable: bool = False) -> Any:
    """A ``void *`` for a copy/memset operand (device or host memory).

    ``api`` and ``role`` (``"dst"``, ``"src"``) name the call and argument in a refusal;
    ``writable``: the operand is written (a host buffer must then be writable)."""
    ffi = backend.ffi
    if isinstance(p, DeviceMemory) and p._handle is not None and p._backend is backend:  # type: ignore[attr-defined]
        return ffi.cast("void *", p._address)  # an open buffer of this backend, the common case
    which = f"{role}: " if role else ""
    if isinstance(p, bool):
        raise errors.InvalidValue(api, detail=f"{which}a bool is not a pointer")
    if isinstance(p, int):
        return ffi.cast("void *", as_address(p, api, f"{role or 'address'}"))
    if isinstance(p, ffi.CData):
        return p
    _check_backend(backend, p)
    if not _in_host_memory(p):
        try:
            address = array_address(p)
        except errors.InvalidValue as exc:
            raise errors.InvalidValue(api, detail=f"{which}{exc.detail}; pass {ACCEPTED_OPERANDS}") from None
        if address is not None:
            return ffi.cast("void *", address)
    try:
        # host memory: bytearray, numpy array, memoryview (read-only ones as sources)
        return ffi.from_buffer(p, require_writable=writable)
    except (TypeError, BufferError, ValueError):
        pass
    try:  # refused: say why
        ffi.from_buffer(p)
    except TypeError:
        raise errors.InvalidValue(api, detail=f"{which}{type(p).__name__} is not a pointer or buffer; "
                                              f"pass {ACCEPTED_OPERANDS}") from None
    except (BufferError, ValueError) as exc:  # a strided view
        raise errors.InvalidValue(api, detail=f"{which}{type(p).__name__} is not one contiguous block "
                                              f"({exc}): pass a C-contiguous copy "
                                              "(numpy.ascontiguousarray)") from None
    raise errors.InvalidValue(api, detail=f"{which}{type(p).__name__} is read-only: a destination "
                                          "must be writable memory")


def device_address(backend: Any, p: Any) -> int:
    """The address a kernel's pointer argument gets: ints, cffi/ctypes pointers, GPU arrays."""
    if isinstance(p, DeviceMemory) and p._handle is not None and p._backend is backend:  # type: ignore[attr-defined]
        return p._address  # an open buffer of this backend, the common case: its address as made
    own = getattr(p, "__pygraphrt_pointer__", None)  # (a closed one raises here)
    if own is not None:
        _check_backend(backend, p)
        return int(own)
    if isinstance(p, bool) or isinstance(p, float):
        raise errors.InvalidValue("pointer", detail=f"a {type(p).__name__} where a pointer is declared")
    if isinstance(p, int):
        return as_address(p, "pointer")
    if p is None:
        return 0
    ctypes = sys.modules.get("ctypes")  # a ctypes pointer exists only where ctypes is imported
    if ctypes is not None and isinstance(p, ctypes.c_void_p):
        return int(p.value or 0)
    ffi = backend.ffi
    if isinstance(p, ffi.CData):
        if ffi.typeof(p).kind != "pointer":
            raise errors.InvalidValue("pointer", detail=f"cffi {ffi.typeof(p).cname} is not a pointer")
        return int(ffi.cast("uintptr_t", p))
    _check_backend(backend, p)
    address = array_address(p)
    if address is None:
        raise errors.InvalidValue("pointer", detail=f"{type(p).__name__} is neither an address nor a "
                                                    "device array (__cuda_array_interface__, DLPack, "
                                                    "torch/CuPy arrays, pygraphrt buffers)")
    return address


class DeviceMemory:
    """Mixin of pygraphrt's buffers: a range of ``size`` bytes at ``int(self)``.

    Gives them the address (``ptr``; ``__pygraphrt_pointer__``, which raises
    ``InvalidResourceHandle`` once the memory is freed) and the CUDA array
    interface (a 1-D byte array, version 3) for CuPy, PyTorch and numba.
    """

    size: int
    _address: int  # int(self), set once by the subclass; meaningful while ``_handle`` is not None

    @property
    def ptr(self) -> int:
        """The address of the memory, as an int."""
        return int(self)  # type: ignore[call-overload]

    @property
    def __pygraphrt_pointer__(self) -> int:
        return int(self)  # type: ignore[call-overload]

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {"shape": (self.size,), "typestr": "|u1", "data": (self.__pygraphrt_pointer__, False),
                "version": 3, "strides": None, "stream": None}


def known_size(backend: Any, p: Any) -> int | None:
    """The bytes an operand object spans, where the object says (pygraphrt buffers, host
    buffers, arrays); None for raw addresses (ints, cffi pointers) and unknown objects."""
    if isinstance(p, (int, backend.ffi.CData)):
        return None
    if isinstance(p, DeviceMemory):
        return p.size
    n = getattr(p, "nbytes", None)  # numpy, CuPy, memoryview
    if isinstance(n, int):
        return n
    try:
        with memoryview(p) as m:  # bytes, bytearray, array.array, ...
            return m.nbytes
    except TypeError:
        return None


def check_fits(backend: Any, operand: Any, n: int, what: str, role: str) -> None:
    """Refuse ``n`` bytes at an operand object that spans fewer (the runtime would run past it)."""
    size = known_size(backend, operand)
    if size is not None and n > size:
        raise errors.InvalidValue(what, detail=f"{n} bytes do not fit the {role} ({type(operand).__name__} "
                                               f"of {size} bytes)")


#: How many of a keep list's last entries :func:`keep` looks through (the C hot methods'
#: _PGR_KEEP_WINDOW, bindgen/hot_methods.c: both modes keep the same entries).
KEEP_WINDOW = 8


def keep(kept: list[Any], obj: Any) -> None:
    """Keep ``obj`` alive as long as the graph whose keep list is ``kept``: an entry, unless one
    of the list's last :data:`KEEP_WINDOW` entries is ``obj`` already.

    Nodes built in a loop keep the same buffers and kernel, so one entry serves them all: the
    list stays short, and so does the cyclic collector's walk of it while the graph is young.
    (Callers on hot paths test ``kept[-1] is obj`` first, the common repeat, to skip the call.)
    """
    i = len(kept) - 1
    stop = i - KEEP_WINDOW
    while i > stop and i >= 0:
        if kept[i] is obj:
            return
        i -= 1
    kept.append(obj)


def listed(v: Any, what: str, of: str) -> list[Any]:
    """The items of ``v`` (None: none) as a list; InvalidValue naming ``what`` for anything that
    is not an iterable, or is a str or bytes (which iterate as characters)."""
    if v is None:
        return []
    if isinstance(v, (str, bytes)):
        raise errors.InvalidValue(what, detail=f"expected an iterable of {of}, got {v!r}")
    try:
        items = iter(v)
    except TypeError:
        raise errors.InvalidValue(what, detail=f"expected an iterable of {of}, got {v!r}") from None
    return list(items)  # (outside the try: a TypeError a generator raises is its own)


def count(n: Any) -> int:
    """A size or count: an int in 0 .. 2**64-1 (the runtimes' size_t)."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise errors.InvalidValue("size", detail=f"expected a non-negative int, got {n!r}")
    if n >= 1 << 64:
        raise errors.InvalidValue("size", detail=f"{n} does not fit a 64-bit size")
    return n


def ordinal(device: Any, what: str) -> int:
    """A device ordinal: a :class:`~pygraphrt.Device` (its ordinal) or an int in 0 .. 2**31-1
    (the runtimes' ``int`` device)."""
    value = getattr(device, "ordinal", device)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << 31:
        raise errors.InvalidValue(what, detail=f"expected a Device or a device ordinal (an int from 0), "
                                               f"got {device!r}")
    return value


def byte(v: Any) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= 255:
        raise errors.InvalidValue("value", detail=f"expected an int in 0..255, got {v!r}")
    return v


class ArrayInterface(NamedTuple):
    """An array interface (``__cuda_array_interface__`` / ``__array_interface__``), checked."""

    address: int
    readonly: bool
    typestr: str  # e.g. '<f4': byte order, kind, item size
    itemsize: int
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None  # bytes; None: C order
    masked: bool


def _interface_dict(obj: Any, attr: str, api: str) -> Any:
    """``obj``'s ``attr`` (None: it has none), refused unless it is a mapping."""
    iface = getattr(obj, attr, None)
    if iface is not None and not isinstance(iface, Mapping):
        raise errors.InvalidValue(api, detail=f"{type(obj).__name__}.{attr} is a {type(iface).__name__}, "
                                              "not a dict")
    return iface


def _interface_address(obj: Any, iface: Any, attr: str, api: str) -> tuple[int, bool]:
    """An interface's ``data``: (address, read-only); an address of None is 0 (an empty array)."""
    data = iface.get("data")
    try:
        address, readonly = data
        address = 0 if address is None else operator.index(address)
    except (TypeError, ValueError):
        raise errors.InvalidValue(api, detail=f"{type(obj).__name__}.{attr}['data'] must be "
                                              f"(address, read-only), got {data!r}") from None
    if address < 0:
        raise errors.InvalidValue(api, detail=f"{type(obj).__name__}.{attr}['data']: negative address {address}")
    return address, bool(readonly)


def array_interface(obj: Any, api: str, attr: str = "__cuda_array_interface__") -> ArrayInterface | None:
    """``obj``'s array interface ``attr`` checked whole (None: ``obj`` has none): what an array
    of another library hands over is refused as InvalidValue naming ``api``, saying which field is
    wrong, never a KeyError or TypeError from reading it."""
    iface = _interface_dict(obj, attr, api)
    if iface is None:
        return None
    where = f"{type(obj).__name__}.{attr}"
    address, readonly = _interface_address(obj, iface, attr, api)
    typestr = iface.get("typestr")
    if (not isinstance(typestr, str) or len(typestr) < 3 or typestr[0] not in "<>|="
            or not typestr[2:].isdigit() or int(typestr[2:]) < 1):
        raise errors.InvalidValue(api, detail=f"{where}['typestr'] {typestr!r} is not an array-interface "
                                              "type string (such as '<f4')")
    shape, strides = iface.get("shape"), iface.get("strides")
    try:
        shape = tuple(operator.index(n) for n in shape)
        strides = None if strides is None else tuple(operator.index(n) for n in strides)
    except TypeError:
        raise errors.InvalidValue(api, detail=f"{where}: shape {shape!r} and strides {strides!r} must be "
                                              "sequences of ints (strides: or None)") from None
    if any(n < 0 for n in shape) or (strides is not None and len(strides) != len(shape)):
        raise errors.InvalidValue(api, detail=f"{where}: shape {shape} (sizes >= 0) and strides {strides} "
                                              "(one per dimension) do not describe an array")
    return ArrayInterface(address, readonly, typestr, int(typestr[2:]), shape, strides,
                          iface.get("mask") is not None)


def _strided_extent(shape: Any, strides: Any, itemsize: int) -> tuple[int, int]:
    """(lowest byte offset, bytes spanned) of a strided array; strides in bytes (None: C order)."""
    shape = [int(n) for n in shape]
    if any(n == 0 for n in shape):
        return 0, 0
    if strides is None:
        total = itemsize
        for n in shape:
            total *= n
        return 0, total
    low = high = 0
    for n, st in zip(shape, strides):
        span = (n - 1) * int(st)
        if span < 0:
            low += span
        else:
            high += span
    return low, high - low + itemsize


def extent(obj: Any, nbytes: int | None = None) -> tuple[int, int]:
    """The byte range ``(address, size)`` an operand covers, for overlap checks.

    pygraphrt buffers (``size``), ``__cuda_array_interface__`` and ``__array_interface__``
    objects (strided arrays: the span from the lowest to the highest byte), torch tensors,
    DLPack producers on a GPU; an int address needs ``nbytes``.  ``nbytes`` given with an
    array overrides its size (a prefix of it).  No runtime call is made.
    """
    address: int | None = None
    size: int | None = None
    if isinstance(obj, bool) or obj is None:
        raise errors.InvalidValue("extent", detail=f"{obj!r} is not memory")
    if isinstance(obj, int):
        if obj < 0:
            raise errors.InvalidValue("extent", detail=f"negative address {obj}")
        if nbytes is None:
            raise errors.InvalidValue("extent", detail="an int address needs nbytes=")
        return obj, count(nbytes)
    own = getattr(obj, "__pygraphrt_pointer__", None)
    if own is not None:
        address, size = int(own), int(obj.size)
    else:
        iface = array_interface(obj, "extent")
        if iface is None:
            iface = array_interface(obj, "extent", "__array_interface__")
        if iface is not None:
            low, size = _strided_extent(iface.shape, iface.strides, iface.itemsize)
            address = iface.address + low
        elif callable(getattr(obj, "data_ptr", None)) and hasattr(obj, "element_size"):  # torch
            itemsize = int(obj.element_size())
            strides = [int(s) * itemsize for s in obj.stride()]
            low, size = _strided_extent(obj.shape, strides, itemsize)
            address = int(obj.data_ptr()) + low
        elif hasattr(obj, "__dlpack_device__") and hasattr(obj, "__dlpack__"):
            address, size = _dlpack_extent(obj)
    if address is None or size is None:
        raise errors.InvalidValue("extent", detail=f"{type(obj).__name__} has no address and size "
                                                   "(a pygraphrt buffer, an array with "
                                                   "__cuda_array_interface__/__array_interface__, a "
                                                   "torch tensor, a DLPack array, or an int with nbytes=)")
    if nbytes is not None:
        if count(nbytes) > size:
            raise errors.InvalidValue("extent", detail=f"nbytes={nbytes} exceeds the {size} bytes of "
                                                       f"the {type(obj).__name__}")
        size = nbytes
    return address, size


def _dlpack_extent(obj: Any) -> tuple[int, int]:
    capsule, t, address = _gpu_dltensor(obj)  # one export; the capsule lives while t is read
    itemsize = (t.dtype.bits * t.dtype.lanes + 7) // 8
    shape = [t.shape[i] for i in range(t.ndim)]
    strides = [t.strides[i] * itemsize for i in range(t.ndim)] if t.strides else None
    low, size = _strided_extent(shape, strides, itemsize)
    return address + low, size
