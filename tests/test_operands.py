"""pygraphrt._operands on the simulator: what each operand kind turns into, and each refusal's
error class, the call it names and its message.

Written from the mutation check's survivors (scripts/mutation, issue 38 item 11): the bounds
(a memset value of 256, an address of 2**64, a size of 2**64, a device ordinal of 2**31), the
operand kinds (pygraphrt buffers, ``__cuda_array_interface__``, torch-like tensors, DLPack,
ctypes and cffi pointers, host buffers) and the messages that name the call and the argument.
The objects standing in for CuPy / torch / DLPack arrays here implement only the attributes
pygraphrt reads (no GPU, no torch in this environment).
"""

from __future__ import annotations

import array
import ctypes
from types import SimpleNamespace

import numpy as np
import pytest

import pygraphrt as rt
from pygraphrt import _operands as op
from pygraphrt import errors

from .backends import selected


@pytest.fixture(scope="module")
def backend():
    with selected("sim") as b:
        yield b


def refusal(call, cls=errors.InvalidValue):
    """The exception ``call()`` raises, checked to be exactly ``cls`` (not a subclass)."""
    with pytest.raises(errors.GraphRTError) as info:
        call()
    assert type(info.value) is cls, f"expected {cls.__name__}, got {type(info.value).__name__}: {info.value}"
    return info.value


class CudaArray:
    """An object with only ``__cuda_array_interface__`` (CuPy, numba)."""

    def __init__(self, address: int | None, nbytes: int = 16) -> None:
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (address, False),
                                         "version": 3, "strides": None}


class TorchLike:
    """What pygraphrt reads of a torch.Tensor: ``data_ptr()`` and ``is_cuda``."""

    def __init__(self, address: int, is_cuda: bool) -> None:
        self._address, self.is_cuda = address, is_cuda

    def data_ptr(self) -> int:
        return self._address


class OtherBackendOperand:
    """An object of another pygraphrt backend (its ``_backend`` is not the active one)."""

    _backend = SimpleNamespace(vendor="elsewhere")
    __pygraphrt_pointer__ = 0x1000


# -- byte, count, ordinal, as_address: the bounds -----------------------------------------------

@pytest.mark.parametrize("v", [0, 1, 255])
def test_byte_takes_0_to_255(v):
    assert op.byte(v) == v


@pytest.mark.parametrize("v", [256, -1, True, 1.0, "1", None])
def test_byte_refuses_the_rest(v):
    e = refusal(lambda: op.byte(v))
    assert e.api == "value" and e.detail == f"expected an int in 0..255, got {v!r}"


def test_stream_memset_value_bounds(backend):
    """Stream.memset writes 0 and 255 as given and refuses 256 (which a C cast would make 0)."""
    s = rt.Stream()
    buf = rt.malloc(8)
    try:
        for v in (255, 0, 255):
            s.memset(buf, v, 8)
            s.synchronize()
            assert buf.to_bytes(8) == bytes([v]) * 8
        e = refusal(lambda: s.memset(buf, 256, 8))
        assert e.api == "value" and "0..255" in e.detail and "256" in e.detail
        s.synchronize()
        assert buf.to_bytes(8) == b"\xff" * 8, "a refused memset wrote"
    finally:
        buf.close()
        s.close()


@pytest.mark.parametrize("n", [0, 1, (1 << 64) - 1])
def test_count_takes_a_size_t(n):
    assert op.count(n) == n


@pytest.mark.parametrize("n, detail", [(1 << 64, f"{1 << 64} does not fit a 64-bit size"),
                                       (-1, "expected a non-negative int, got -1"),
                                       (True, "expected a non-negative int, got True"),
                                       (1.0, "expected a non-negative int, got 1.0")])
def test_count_refusals(n, detail):
    e = refusal(lambda: op.count(n))
    assert (e.api, e.detail) == ("size", detail)


def test_ordinal_bounds():
    assert op.ordinal(0, "Device") == 0
    assert op.ordinal((1 << 31) - 1, "Device") == (1 << 31) - 1
    assert op.ordinal(SimpleNamespace(ordinal=3), "Device") == 3  # a Device: its ordinal
    for bad in (1 << 31, 1 << 32, -1, True, 1.0, SimpleNamespace(ordinal=-1)):
        e = refusal(lambda: op.ordinal(bad, "MemPool device"))
        assert e.api == "MemPool device"
        assert e.detail == f"expected a Device or a device ordinal (an int from 0), got {bad!r}"


def test_as_address_bounds():
    assert op.as_address(0, "api") == 0
    assert op.as_address((1 << 64) - 1, "api") == (1 << 64) - 1
    for bad in (-1, 1 << 64):
        e = refusal(lambda: op.as_address(bad, "cudaMemcpyAsync"))
        assert e.api == "cudaMemcpyAsync"
        assert e.detail == f"address {bad} is out of range (an address is 0 to 2**64 - 1)"
    assert refusal(lambda: op.as_address(-1, "x", "src")).detail.startswith("src -1 is out of range")


# -- listed, keep, known_size, check_fits -------------------------------------------------------

def test_listed():
    assert op.listed(None, "w", "Nodes") == []
    assert op.listed((1, 2), "w", "Nodes") == [1, 2]
    assert op.listed((i for i in range(3)), "w", "Nodes") == [0, 1, 2]
    for bad in ("ab", b"ab", 5):
        e = refusal(lambda: op.listed(bad, "Graph.add_empty", "Nodes"))
        assert (e.api, e.detail) == ("Graph.add_empty", f"expected an iterable of Nodes, got {bad!r}")


def test_keep_looks_through_the_last_entries_only():
    a, b = object(), object()
    kept = [a]
    op.keep(kept, a)  # the last entry
    assert kept == [a]
    kept = [a, b]
    op.keep(kept, a)  # the one before it
    assert kept == [a, b]
    op.keep(kept, b)
    assert kept == [a, b]
    fillers = [object() for _ in range(op.KEEP_WINDOW - 1)]
    kept = [a] + fillers
    op.keep(kept, a)  # the first of the window's entries
    assert kept == [a] + fillers
    kept = [a] + fillers + [b]
    op.keep(kept, a)  # one entry before the window: kept again
    assert kept == [a] + fillers + [b, a]
    kept = []
    op.keep(kept, a)
    assert kept == [a]


def test_known_size_and_check_fits(backend):
    assert op.known_size(backend, np.zeros(4, np.float32)) == 16  # nbytes
    assert op.known_size(backend, b"abc") == 3                   # the buffer protocol
    assert op.known_size(backend, array.array("i", [1, 2])) == 8
    assert op.known_size(backend, 0x1000) is None
    assert op.known_size(backend, object()) is None
    op.check_fits(backend, bytearray(8), 8, "api", "destination")
    op.check_fits(backend, 0x1000, 1 << 40, "api", "destination")  # an address: the size is unknown
    e = refusal(lambda: op.check_fits(backend, bytearray(8), 9, "cudaMemsetAsync", "destination"))
    assert (e.api, e.detail) == ("cudaMemsetAsync", "9 bytes do not fit the destination (bytearray of 8 bytes)")


# -- where an operand lives -----------------------------------------------------------------

def test_in_host_memory():
    class CaiAndArrayInterface(CudaArray):
        __array_interface__ = {"data": (0, False)}

    class DlpackOn(SimpleNamespace):
        __array_interface__ = {"data": (0, False)}

        def __dlpack_device__(self):
            return (self.device, 0)

    class DlpackCannotSay(SimpleNamespace):
        def __dlpack_device__(self):
            raise RuntimeError("no device")

    class OwnAndArrayInterface:
        __pygraphrt_pointer__ = 0x10
        __array_interface__ = {"data": (0, False)}

    assert op._in_host_memory(np.zeros(2)) is True
    assert op._in_host_memory(SimpleNamespace(__array_interface__={})) is True
    assert op._in_host_memory(DlpackOn(device=1)) is True
    assert op._in_host_memory(DlpackOn(device=2)) is False  # kDLCUDA, whatever else it has
    assert op._in_host_memory(DlpackCannotSay()) is False
    assert op._in_host_memory(CaiAndArrayInterface(0x10)) is False
    assert op._in_host_memory(OwnAndArrayInterface()) is False
    assert op._in_host_memory(bytearray(2)) is False  # (no array interface: the buffer protocol decides)


def test_array_address():
    assert op.array_address(SimpleNamespace(__pygraphrt_pointer__=0x10)) == 0x10
    assert op.array_address(CudaArray(0x20)) == 0x20
    assert op.array_address(CudaArray(None)) == 0
    assert op.array_address(CudaArray(0)) == 0
    assert op.array_address(TorchLike(0x30, True)) == 0x30
    e = refusal(lambda: op.array_address(TorchLike(0x30, False)))
    assert (e.api, e.detail) == ("pointer", "a CPU torch.Tensor is not device memory")
    # only one of the pair of attributes: not an array
    assert op.array_address(SimpleNamespace(data_ptr=lambda: 0x30)) is None
    assert op.array_address(SimpleNamespace(is_cuda=True)) is None
    assert op.array_address(SimpleNamespace(__dlpack_device__=lambda: (2, 0))) is None
    assert op.array_address(SimpleNamespace(__dlpack__=lambda: None)) is None
    assert op.array_address(object()) is None
    # a DLPack producer in host memory (numpy): refused, naming its device type
    e = refusal(lambda: op.array_address(np.zeros(2)))
    assert (e.api, e.detail) == ("pointer", "ndarray lives on DLPack device type 1, not on a GPU")


# -- ptr: copy and memset operands ------------------------------------------------------------

def address_of(backend, p) -> int:
    return int(backend.ffi.cast("uintptr_t", p))


def test_ptr_operands(backend):
    ffi = backend.ffi
    assert address_of(backend, op.ptr(backend, 0x1234)) == 0x1234
    raw = ffi.cast("void *", 0x40)
    assert op.ptr(backend, raw) is raw
    assert address_of(backend, op.ptr(backend, CudaArray(0x50))) == 0x50
    assert address_of(backend, op.ptr(backend, TorchLike(0x60, True))) == 0x60
    host = bytearray(b"abcd")
    assert ffi.buffer(op.ptr(backend, host, writable=True), 4)[:] == b"abcd"
    assert ffi.buffer(op.ptr(backend, b"wxyz"), 4)[:] == b"wxyz"  # read-only: a source


def test_ptr_refusals_name_the_call_and_the_argument(backend):
    def ptr_refusal(p, **kw):
        return refusal(lambda: op.ptr(backend, p, **kw))

    e = ptr_refusal(True, api="Stream.memcpy", role="dst")
    assert (e.api, e.detail) == ("Stream.memcpy", "dst: a bool is not a pointer")
    e = ptr_refusal(False)  # the defaults: api "pointer", no role
    assert (e.api, e.detail) == ("pointer", "a bool is not a pointer")
    e = ptr_refusal(-1, api="Stream.memcpy", role="src")
    assert (e.api, e.detail) == ("Stream.memcpy", "src -1 is out of range (an address is 0 to 2**64 - 1)")
    e = ptr_refusal(1 << 64)
    assert (e.api, e.detail) == ("pointer", f"address {1 << 64} is out of range (an address is 0 to 2**64 - 1)")
    e = ptr_refusal(OtherBackendOperand(), api="Stream.memcpy", role="dst")
    assert (e.api, e.detail) == ("operand", f"OtherBackendOperand belongs to the elsewhere backend, not "
                                            f"{backend.vendor}")
    e = ptr_refusal(TorchLike(0x60, False), api="Stream.memcpy", role="src")
    assert (e.api, e.detail) == ("Stream.memcpy", "src: a CPU torch.Tensor is not device memory; pass "
                                                  + op.ACCEPTED_OPERANDS)
    e = ptr_refusal(object(), api="Stream.memcpy", role="dst")
    assert (e.api, e.detail) == ("Stream.memcpy", "dst: object is not a pointer or buffer; pass "
                                                  + op.ACCEPTED_OPERANDS)
    e = ptr_refusal(np.zeros((4, 4))[:, ::2], api="Stream.memcpy", role="src")
    assert e.api == "Stream.memcpy"
    assert e.detail.startswith("src: ndarray is not one contiguous block (")
    assert e.detail.endswith("): pass a C-contiguous copy (numpy.ascontiguousarray)")
    e = ptr_refusal(b"abcd", api="Stream.memcpy", role="dst", writable=True)
    assert (e.api, e.detail) == ("Stream.memcpy", "dst: bytes is read-only: a destination must be writable memory")


# -- device_address: kernel pointer arguments -------------------------------------------------

def test_device_address_operands(backend):
    ffi = backend.ffi
    buf = rt.malloc(16)
    try:
        assert op.device_address(backend, buf) == int(buf)
    finally:
        buf.close()
    refusal(lambda: op.device_address(backend, buf), errors.InvalidResourceHandle)  # closed
    assert op.device_address(backend, SimpleNamespace(__pygraphrt_pointer__=0x10)) == 0x10
    assert op.device_address(backend, 0x20) == 0x20
    assert op.device_address(backend, None) == 0
    assert op.device_address(backend, ctypes.c_void_p(0x30)) == 0x30
    assert op.device_address(backend, ctypes.c_void_p(None)) == 0
    assert op.device_address(backend, ffi.cast("void *", 0x40)) == 0x40
    assert op.device_address(backend, ffi.cast("float *", 0x44)) == 0x44
    assert op.device_address(backend, CudaArray(0x50)) == 0x50
    assert op.device_address(backend, TorchLike(0x60, True)) == 0x60


def test_device_address_refusals(backend):
    def refused(p):
        return refusal(lambda: op.device_address(backend, p))

    for p in (True, 1.5):
        e = refused(p)
        assert (e.api, e.detail) == ("pointer", f"a {type(p).__name__} where a pointer is declared")
    e = refused(-1)
    assert (e.api, e.detail) == ("pointer", "address -1 is out of range (an address is 0 to 2**64 - 1)")
    e = refused(backend.ffi.cast("int", 5))
    assert (e.api, e.detail) == ("pointer", "cffi int is not a pointer")
    e = refused(OtherBackendOperand())
    assert (e.api, e.detail) == ("operand", f"OtherBackendOperand belongs to the elsewhere backend, not "
                                            f"{backend.vendor}")
    e = refused(object())
    assert (e.api, e.detail) == ("pointer", "object is neither an address nor a device array "
                                            "(__cuda_array_interface__, DLPack, torch/CuPy arrays, "
                                            "pygraphrt buffers)")
    e = refused(TorchLike(0x60, False))
    assert (e.api, e.detail) == ("pointer", "a CPU torch.Tensor is not device memory")


def test_a_buffer_of_another_backend_is_refused(backend):
    """An open pygraphrt buffer of another backend: its address is not taken as this backend's."""

    class ForeignBuffer(op.DeviceMemory):
        size, _address, _handle = 16, 0x70, object()
        _backend = SimpleNamespace(vendor="elsewhere")

        def __int__(self) -> int:
            return self._address

    for call in (lambda: op.device_address(backend, ForeignBuffer()),
                 lambda: op.ptr(backend, ForeignBuffer(), "Stream.memset", "ptr")):
        e = refusal(call)
        assert (e.api, e.detail) == ("operand", f"ForeignBuffer belongs to the elsewhere backend, not {backend.vendor}")


def test_known_size_of_a_device_array_without_the_buffer_protocol(backend):
    """A CuPy-like array (``nbytes``, no buffer protocol): its size is known, and a count past it
    refused."""
    cupy_like = CudaArray(0x2000, 24)
    cupy_like.nbytes = 24
    assert op.known_size(backend, cupy_like) == 24
    e = refusal(lambda: op.check_fits(backend, cupy_like, 25, "cudaMemsetAsync", "destination"))
    assert e.detail == "25 bytes do not fit the destination (CudaArray of 24 bytes)"


class GpuDlpack:
    """A DLPack producer on a GPU (kDLCUDA): ``__dlpack__`` returns a real "dltensor" capsule over
    a DLManagedTensor made here (float32, 1-D, ``n`` elements at ``data + byte_offset``)."""

    def __init__(self, data: int, byte_offset: int, n: int, bits: int = 32, lanes: int = 1) -> None:
        class DLManagedTensor(ctypes.Structure):
            _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int), ("device_id", ctypes.c_int),
                        ("ndim", ctypes.c_int), ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                        ("lanes", ctypes.c_uint16), ("shape", ctypes.POINTER(ctypes.c_int64)),
                        ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64),
                        ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]

        self._shape = (ctypes.c_int64 * 1)(n)
        self._tensor = DLManagedTensor(data, 2, 0, 1, 2, bits, lanes, self._shape, None, byte_offset, None, None)

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self._tensor), b"dltensor", None)


def test_a_gpu_dlpack_producers_address_and_extent(backend):
    t = GpuDlpack(0x10000, 0x40, 8)
    assert op.array_address(t) == 0x10040  # data + byte_offset
    assert op.device_address(backend, t) == 0x10040
    assert address_of(backend, op.ptr(backend, t)) == 0x10040
    assert op.extent(t) == (0x10040, 32)
    assert op.array_address(GpuDlpack(0, 0x40, 8)) == 0x40  # (a NULL data pointer: the offset alone)



def test_reading_a_dlpack_capsule_leaves_ctypes_pythonapi_alone(backend):
    """pygraphrt reads a capsule through its own PyCapsule_GetPointer function object: the one
    ctypes.pythonapi shares with every other library keeps the types another library set on it
    (and what they set does not break pygraphrt's reads)."""
    get = ctypes.pythonapi.PyCapsule_GetPointer
    saved = get.restype, get.argtypes
    get.restype, get.argtypes = ctypes.c_int, None
    try:
        assert op.array_address(GpuDlpack(0x10000, 0x40, 8)) == 0x10040
        assert (get.restype, get.argtypes) == (ctypes.c_int, None)
    finally:
        get.restype, get.argtypes = saved

# -- extent: the byte range an operand covers (compute's overlap checks) -------------------------

class TorchStrided:
    """What extent reads of a torch.Tensor: data_ptr(), element_size(), stride() (in elements), shape."""

    def __init__(self, address: int, shape: tuple, stride: tuple, itemsize: int) -> None:
        self._address, self.shape, self._stride, self._itemsize = address, shape, stride, itemsize

    def data_ptr(self) -> int:
        return self._address

    def element_size(self) -> int:
        return self._itemsize

    def stride(self) -> tuple:
        return self._stride


def test_extent_of_each_operand_kind():
    buf = SimpleNamespace(__pygraphrt_pointer__=0x1000, size=64)
    assert op.extent(buf) == (0x1000, 64)
    assert op.extent(buf, 16) == (0x1000, 16)  # a prefix
    assert op.extent(buf, 64) == (0x1000, 64)
    assert op.extent(0x2000, 8) == (0x2000, 8)
    assert op.extent(0, 0) == (0, 0)
    cai = SimpleNamespace(__cuda_array_interface__={"shape": (4, 3), "typestr": "<f4", "data": (0x3000, False),
                                                    "strides": None, "version": 3})
    assert op.extent(cai) == (0x3000, 48)
    # a negative stride: the range starts below the data pointer
    rev = SimpleNamespace(__cuda_array_interface__={"shape": (4,), "typestr": "<f8", "data": (0x4000, False),
                                                    "strides": (-8,), "version": 3})
    assert op.extent(rev) == (0x4000 - 24, 32)
    both = SimpleNamespace(__cuda_array_interface__={"shape": (2, 3), "typestr": "<f4", "data": (0x4000, False),
                                                     "strides": (-12, -4), "version": 3})
    assert op.extent(both) == (0x4000 - 20, 24)  # both dimensions backwards
    # columns of a row-major array: strided, the span from the lowest to the highest byte
    col = SimpleNamespace(__cuda_array_interface__={"shape": (3, 2), "typestr": "<i4", "data": (0x5000, False),
                                                    "strides": (40, 4), "version": 3})
    assert op.extent(col) == (0x5000, 2 * 40 + 4 + 4)
    assert op.extent(SimpleNamespace(__cuda_array_interface__={"shape": (0, 5), "typestr": "|u1",
                                                               "data": (0x6000, False)})) == (0x6000, 0)
    assert op.extent(SimpleNamespace(__cuda_array_interface__={"shape": (1,), "typestr": "|u1",
                                                               "data": (None, False)})) == (0, 1)
    host = np.zeros((4, 4), np.float32)[::2, 1:]  # __array_interface__, strided
    address = host.__array_interface__["data"][0]
    assert op.extent(host) == (address, 32 + 2 * 4 + 4)  # rows 32 bytes apart, 3 floats from the second
    assert op.extent(TorchStrided(0x7000, (2, 3), (3, 1), 4)) == (0x7000, 24)
    assert op.extent(TorchStrided(0x7000, (3,), (-2,), 2)) == (0x7000 - 8, 10)


def test_extent_of_a_strided_gpu_dlpack_array():
    assert op.extent(GpuDlpack(0x10000, 0, 8, bits=64)) == (0x10000, 64)  # float64
    assert op.extent(GpuDlpack(0x10000, 0, 8, bits=8, lanes=4)) == (0x10000, 32)  # char4: lanes count
    t = GpuDlpack(0x10000, 0, 8)
    t._strides = (ctypes.c_int64 * 1)(-2)  # every second float32, backwards
    t._tensor.strides = ctypes.cast(t._strides, ctypes.POINTER(ctypes.c_int64))
    assert op.extent(t) == (0x10000 - 7 * 8, 7 * 8 + 4)


def test_extent_refusals():
    unknown = object()
    cases = [(lambda: op.extent(True), "True is not memory"),
             (lambda: op.extent(None), "None is not memory"),
             (lambda: op.extent(-1, 8), "negative address -1"),
             (lambda: op.extent(0x1000), "an int address needs nbytes="),
             (lambda: op.extent(unknown), "object has no address and size (a pygraphrt buffer, an array with "
                                          "__cuda_array_interface__/__array_interface__, a torch tensor, a DLPack "
                                          "array, or an int with nbytes=)"),
             (lambda: op.extent(SimpleNamespace(__dlpack__=lambda: None)), "SimpleNamespace has no address and size "
                                                                          "(a pygraphrt buffer, an array with "
                                                                          "__cuda_array_interface__/__array_interface__"
                                                                          ", a torch tensor, a DLPack array, or an "
                                                                          "int with nbytes=)"),
             (lambda: op.extent(TorchLike(0x30, True)), "TorchLike has no address and size (a pygraphrt buffer, an "
                                                       "array with __cuda_array_interface__/__array_interface__, a "
                                                       "torch tensor, a DLPack array, or an int with nbytes=)"),
             (lambda: op.extent(SimpleNamespace(__pygraphrt_pointer__=0x10, size=8), 9),
              "nbytes=9 exceeds the 8 bytes of the SimpleNamespace")]
    for call, detail in cases:
        e = refusal(call)
        assert (e.api, e.detail) == ("extent", detail)


MALFORMED_INTERFACES = [
    ([1, 2], "is a list, not a dict"),
    ({"shape": (4,), "typestr": "<f4"}, "['data'] must be (address, read-only), got None"),
    ({"shape": (4,), "typestr": "<f4", "data": None}, "['data'] must be (address, read-only), got None"),
    ({"shape": (4,), "typestr": "<f4", "data": ("x", False)}, "['data'] must be (address, read-only), got ('x', False)"),
    ({"shape": (4,), "typestr": "<f4", "data": (0x1000,)}, "['data'] must be (address, read-only), got (4096,)"),
    ({"shape": (4,), "typestr": "<f4", "data": (1.5, False)}, "['data'] must be (address, read-only)"),
    ({"shape": (4,), "typestr": "<f4", "data": (-8, False)}, "['data']: negative address -8"),
]
MALFORMED_LAYOUTS = [
    ({"shape": (4,), "data": (0x1000, False)}, "['typestr'] None is not an array-interface type string"),
    ({"shape": (4,), "typestr": 5, "data": (0x1000, False)}, "['typestr'] 5 is not an array-interface type string"),
    ({"shape": (4,), "typestr": "zz", "data": (0x1000, False)}, "['typestr'] 'zz' is not an array-interface"),
    ({"shape": (4,), "typestr": "<f0", "data": (0x1000, False)}, "['typestr'] '<f0' is not an array-interface"),
    ({"shape": None, "typestr": "<f4", "data": (0x1000, False)}, "shape None and strides None must be sequences of ints"),
    ({"shape": "4", "typestr": "<f4", "data": (0x1000, False)}, "shape '4' and strides None must be sequences of ints"),
    ({"shape": (4,), "typestr": "<f4", "data": (0x1000, False), "strides": "x"}, "must be sequences of ints"),
    ({"shape": (-4,), "typestr": "<f4", "data": (0x1000, False)}, "shape (-4,) (sizes >= 0) and strides None"),
    ({"shape": (4, 4), "typestr": "<f4", "data": (0x1000, False), "strides": (4,)}, "do not describe an array"),
]


def test_malformed_array_interfaces_are_refused_saying_which_field(backend):
    """An array of another library hands over its array interface: a malformed one is
    InvalidValue naming the call and the field (it was a KeyError, TypeError or ValueError from
    reading it). Where only the address is read (a copy's or a kernel's pointer), only ``data``
    is checked; an extent (the compute graph's variables) reads the whole layout."""
    buf = rt.malloc(64)
    s = rt.Stream()
    for iface, detail in MALFORMED_INTERFACES + MALFORMED_LAYOUTS:
        arr = SimpleNamespace(__cuda_array_interface__=iface)
        e = refusal(lambda: op.extent(arr))
        assert e.api == "extent" and detail in e.detail, (iface, e.detail)
        assert e.detail.startswith("SimpleNamespace.__cuda_array_interface__"), e.detail
    for iface, detail in MALFORMED_INTERFACES:
        arr = SimpleNamespace(__cuda_array_interface__=iface)
        for call in (lambda: op.array_address(arr), lambda: s.memcpy(arr, buf, 16),
                     lambda: rt.Graph().add_memset(arr, 0, 4)):
            e = refusal(call)
            assert detail in str(e), (iface, str(e))
    host = SimpleNamespace(__array_interface__={"shape": (4,), "typestr": "<f4", "data": ("x", False)})
    e = refusal(lambda: op.extent(host))
    assert "SimpleNamespace.__array_interface__['data'] must be (address, read-only)" in e.detail
    # (the well-formed ones, in every spelling the interface allows, are read as before)
    ok = {"shape": [4], "typestr": "|u1", "data": [0x1000, True], "strides": None, "mask": None}
    assert op.array_interface(SimpleNamespace(__cuda_array_interface__=ok), "x") == op.ArrayInterface(
        0x1000, True, "|u1", 1, (4,), None, False)
    assert op.array_interface(object(), "x") is None


class OddDlpack(GpuDlpack):
    """A DLPack producer whose device or capsule is not what the protocol says."""

    def __init__(self, device=(2, 0), capsule=None, name=b"dltensor") -> None:
        super().__init__(0x10000, 0, 8)
        self._device, self._capsule, self._name = device, capsule, name

    def __dlpack_device__(self):
        return self._device

    def __dlpack__(self, stream=None):
        if self._capsule is not None:
            return self._capsule
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self._tensor), self._name, None)


MALFORMED_DLPACK = [
    (OddDlpack(device=None), "OddDlpack.__dlpack_device__() must return (device type, device id), got None"),
    (OddDlpack(device="cuda"), "must return (device type, device id), got 'cuda'"),
    (OddDlpack(device=(2,)), "must return (device type, device id), got (2,)"),
    (OddDlpack(device=(2.0, 0)), "must return (device type, device id), got (2.0, 0)"),
    (OddDlpack(capsule=5), "OddDlpack.__dlpack__() returned a int, not a DLPack capsule ('dltensor', unconsumed)"),
    (OddDlpack(name=b"used_dltensor"), "returned a PyCapsule, not a DLPack capsule ('dltensor', unconsumed)"),
]


def test_malformed_dlpack_producers_are_refused_saying_what(backend):
    """A DLPack producer whose ``__dlpack_device__()`` is not a pair of ints, or whose
    ``__dlpack__()`` is not an unconsumed "dltensor" capsule: InvalidValue naming the call (it
    was the ValueError or TypeError of unpacking it, or ctypes' PyCapsule_GetPointer error)."""
    buf = rt.malloc(64)
    s = rt.Stream()
    assert op.array_address(OddDlpack()) == 0x10000  # (the well-formed default)
    for producer, detail in MALFORMED_DLPACK:
        for call in (lambda: op.array_address(producer), lambda: op.extent(producer),
                     lambda: s.memcpy(producer, buf, 16)):
            e = refusal(call)
            assert detail in str(e), (detail, str(e))
