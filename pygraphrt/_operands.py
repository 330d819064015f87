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

import ctypes
from typing import Any

from . import errors

# DLPack device types whose memory a kernel (or a copy) can address as device memory:
# kDLCUDA, kDLCUDAHost (pinned), kDLROCM, kDLROCMHost, kDLCUDAManaged.
_DLPACK_GPU_DEVICES = {2, 3, 10, 11, 13}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    # DLManagedTensor (the unversioned capsule "dltensor") begins with this.
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


def _dlpack_address(obj: Any) -> int:
    """The data address of a DLPack producer on a GPU (the capsule is not consumed)."""
    device_type, _ = obj.__dlpack_device__()
    if int(device_type) not in _DLPACK_GPU_DEVICES:
        raise errors.InvalidValue("pointer", detail=f"{type(obj).__name__} lives on DLPack device "
                                                    f"type {int(device_type)}, not on a GPU")
    capsule = obj.__dlpack__()
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    address = get(capsule, b"dltensor")
    tensor = _DLTensor.from_address(address)
    # The capsule keeps its name, so its destructor returns the tensor to the producer.
    return int(tensor.data or 0) + int(tensor.byte_offset)


def array_address(obj: Any) -> int | None:
    """The device address behind a GPU array object, or None if ``obj`` is not one."""
    own = getattr(obj, "__pygraphrt_pointer__", None)
    if own is not None:
        return int(own)
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        return int(cai["data"][0] or 0)
    data_ptr = getattr(obj, "data_ptr", None)  # torch.Tensor (CPU tensors too: checked below)
    if callable(data_ptr) and hasattr(obj, "is_cuda"):
        if not obj.is_cuda:
            raise errors.InvalidValue("pointer", detail="a CPU torch.Tensor is not device memory")
        return int(data_ptr())
    if hasattr(obj, "__dlpack_device__") and hasattr(obj, "__dlpack__"):
        return _dlpack_address(obj)
    return None


def _check_backend(backend: Any, obj: Any) -> None:
    other = getattr(obj, "_backend", None)
    if other is not None and other is not backend:
        raise errors.InvalidValue("operand", detail=f"{type(obj).__name__} belongs to the "
                                                    f"{other.vendor} backend, not {backend.vendor}")


def ptr(backend: Any, p: Any) -> Any:
    """A ``void *`` for a copy/memset operand (device or host memory)."""
    ffi = backend.ffi
    if isinstance(p, bool):
        raise errors.InvalidValue("pointer", detail="a bool is not a pointer")
    if isinstance(p, int):
        if p < 0:
            raise errors.InvalidValue("pointer", detail=f"negative address {p}")
        return ffi.cast("void *", p)
    if isinstance(p, ffi.CData):
        return p
    _check_backend(backend, p)
    address = array_address(p)
    if address is not None:
        return ffi.cast("void *", address)
    try:
        return ffi.from_buffer(p)  # host memory: bytearray, numpy array, memoryview
    except TypeError:
        raise errors.InvalidValue("pointer", detail=f"{type(p).__name__} is not a pointer or buffer") from None


def device_address(backend: Any, p: Any) -> int:
    """The address a kernel's pointer argument gets: ints, cffi/ctypes pointers, GPU arrays."""
    own = getattr(p, "__pygraphrt_pointer__", None)  # pygraphrt's buffers: the common case first
    if own is not None:
        _check_backend(backend, p)
        return int(own)
    if isinstance(p, bool) or isinstance(p, float):
        raise errors.InvalidValue("pointer", detail=f"a {type(p).__name__} where a pointer is declared")
    if isinstance(p, int):
        if not 0 <= p < 1 << 64:
            raise errors.InvalidValue("pointer", detail=f"address {p} is out of range")
        return p
    if p is None:
        return 0
    if isinstance(p, ctypes.c_void_p):
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

    @property
    def ptr(self) -> int:
        return int(self)  # type: ignore[call-overload]

    @property
    def __pygraphrt_pointer__(self) -> int:
        return int(self)  # type: ignore[call-overload]

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {"shape": (self.size,), "typestr": "|u1", "data": (self.__pygraphrt_pointer__, False),
                "version": 3, "strides": None, "stream": None}


def count(n: Any) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise errors.InvalidValue("size", detail=f"expected a non-negative int, got {n!r}")
    return n


def byte(v: Any) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= 255:
        raise errors.InvalidValue("value", detail=f"expected an int in 0..255, got {v!r}")
    return v
