"""Kernel signatures on the CPU: parsing, packing against ctypes/struct layouts, errors."""

from __future__ import annotations

import ctypes
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pygraphrt import errors
from pygraphrt.kernels import ArgType, Signature, infer_signature, parse_signature


def addr(v):
    """A stand-in for the backend's pointer coercion: ints and objects with .ptr."""
    if isinstance(v, (bool, float)):
        raise errors.InvalidValue("pointer", detail=f"a {type(v).__name__} where a pointer is declared")
    if isinstance(v, int):
        return v
    if hasattr(v, "ptr"):
        return v.ptr
    raise errors.InvalidValue("pointer", detail=f"{type(v).__name__} is not a pointer")


class Buf:
    def __init__(self, ptr):
        self.ptr = ptr


# C spelling -> (ctypes type, values strategy)
C_TYPES = {
    "signed char": (ctypes.c_int8, st.integers(-128, 127)),
    "unsigned char": (ctypes.c_uint8, st.integers(0, 255)),
    "int8_t": (ctypes.c_int8, st.integers(-128, 127)),
    "short": (ctypes.c_int16, st.integers(-2**15, 2**15 - 1)),
    "unsigned short int": (ctypes.c_uint16, st.integers(0, 2**16 - 1)),
    "int": (ctypes.c_int32, st.integers(-2**31, 2**31 - 1)),
    "unsigned": (ctypes.c_uint32, st.integers(0, 2**32 - 1)),
    "uint32_t": (ctypes.c_uint32, st.integers(0, 2**32 - 1)),
    "long": (ctypes.c_int64, st.integers(-2**63, 2**63 - 1)),
    "long long int": (ctypes.c_int64, st.integers(-2**63, 2**63 - 1)),
    "unsigned long long": (ctypes.c_uint64, st.integers(0, 2**64 - 1)),
    "size_t": (ctypes.c_uint64, st.integers(0, 2**64 - 1)),
    "float": (ctypes.c_float, st.floats(width=32, allow_nan=False)),
    "double": (ctypes.c_double, st.floats(allow_nan=False)),
    "bool": (ctypes.c_bool, st.booleans()),
    "const float * __restrict__": (ctypes.c_uint64, st.integers(0, 2**64 - 1)),
    "void*": (ctypes.c_uint64, st.integers(0, 2**64 - 1)),
}


@settings(max_examples=200)
@given(st.lists(st.sampled_from(sorted(C_TYPES)), max_size=10).flatmap(
    lambda names: st.tuples(st.just(names), st.tuples(*(C_TYPES[n][1] for n in names)))))
def test_pack_matches_ctypes_struct_layout(case):
    names, values = case
    sig = parse_signature(", ".join(names))
    fields = [(f"f{i}", C_TYPES[n][0]) for i, n in enumerate(names)]
    Layout = type("Layout", (ctypes.Structure,), {"_fields_": fields})
    expect = Layout(*values)
    assert sig.offsets == tuple(getattr(Layout, f).offset for f, _ in fields)
    packed = sig.pack(values, addr)
    assert bytes(packed.buffer) == bytes(expect)[:sig.size]
    assert packed.sizes == tuple(ctypes.sizeof(t) for _, t in fields)
    back = sig.unpack_buffer(packed.buffer)
    blobs = [bytes(packed.buffer[o:o + s]) for o, s in zip(packed.offsets, packed.sizes)]
    assert sig.unpack(blobs) == back
    for n, v, b in zip(names, values, back):
        assert b == (ctypes.c_float(v).value if n == "float" else v)


def test_parse_names_qualifiers_and_forms():
    sig = parse_signature("float *y, const float* __restrict__ x, float a, unsigned int n, __grid_constant__ const int m")
    assert sig.names == ("y", "x", "a", "n", "m")
    assert [p.kind for p in sig.params] == ["pointer", "pointer", "float", "uint", "int"]
    assert sig.params[1].pointee == "const float"
    assert str(sig) == "float* y, const float* x, float a, unsigned int n, int m"
    assert parse_signature("(float*, int)") == parse_signature([ctypes.POINTER(ctypes.c_float), np.int32])
    assert parse_signature("void") == parse_signature("") == Signature(())
    assert parse_signature(["float **p", ctypes.c_void_p, np.dtype("float64"), ctypes.c_long]).offsets == (0, 8, 16, 24)
    assert parse_signature("unsigned long long").params[0].size == 8
    assert parse_signature("long").params[0].kind == "int" and parse_signature("unsigned").params[0].size == 4
    sig = parse_signature("float2 a, char b, float4 c, double2 d, int4 e")
    assert sig.offsets == (0, 8, 16, 32, 48) and sig.size == 64
    assert parse_signature(sig) is sig


def test_vector_half_bfloat16_values():
    sig = parse_signature("float2, __half, __nv_bfloat16, int4")
    p = sig.pack([(1.5, -2.0), 0.5, 1.0, [1, 2, 3, 4]], addr)
    assert bytes(p.buffer[:8]) == struct.pack("<ff", 1.5, -2.0)
    assert bytes(p.buffer[8:10]) == struct.pack("<e", 0.5)
    assert bytes(p.buffer[10:12]) == b"\x80\x3f"  # bfloat16 1.0
    assert sig.unpack_buffer(p.buffer) == [(1.5, -2.0), 0.5, 1.0, (1, 2, 3, 4)]
    with pytest.raises(errors.InvalidValue, match="2 components"):
        sig.pack([(1.0,), 0.5, 1.0, [1, 2, 3, 4]], addr)
    with pytest.raises(errors.InvalidValue, match="overflows"):
        sig.pack([(1.0, 1.0), 1e6, 1.0, [1, 2, 3, 4]], addr)


class Params(ctypes.Structure):
    _fields_ = [("n", ctypes.c_int), ("scale", ctypes.c_double), ("flag", ctypes.c_char)]


def test_structs_ctypes_and_numpy():
    sig = parse_signature("char c, Params p, float* y", types={"Params": Params})
    assert sig.offsets == (0, 8, 32) and sig.params[1].size == ctypes.sizeof(Params) == 24
    for value in (Params(3, 2.5, b"x"), (3, 2.5, b"x"), {"n": 3, "scale": 2.5, "flag": b"x"}):
        p = sig.pack([1, value, Buf(0x1000)], addr)
        assert bytes(p.buffer[8:32]) == bytes(Params(3, 2.5, b"x"))
        out = sig.unpack_buffer(p.buffer)[1]
        assert isinstance(out, Params) and (out.n, out.scale, out.flag) == (3, 2.5, b"x")
        assert len(p.keep) == 1 and p.keep[0].ptr == 0x1000
    with pytest.raises(errors.InvalidValue, match="argument 1 .*Params"):
        sig.pack([1, (1, 2, 3, 4), 0], addr)
    dt = np.dtype([("n", np.int32), ("scale", np.float64)], align=True)
    nsig = parse_signature([np.float32, dt])
    p = nsig.pack([1.0, (7, 0.25)], addr)
    assert nsig.offsets == (0, 8) and bytes(p.buffer[8:]) == np.array((7, 0.25), dt).tobytes()
    back = nsig.unpack_buffer(p.buffer)[1]
    assert back["n"] == 7 and back["scale"] == 0.25
    with pytest.raises(errors.InvalidValue, match="aligned"):
        parse_signature([np.dtype([("a", np.int8), ("b", np.int32)])])


@pytest.mark.parametrize("spec, match", [
    ("float, Mystery", "unknown type 'Mystery'"),
    ("float &x", "cannot read"),
    ("int a[4]", "cannot read"),
    ("float,,int", "empty parameter"),
    ("long double", "not a C type|cannot read"),
    ("* p", "no type"),
])
def test_bad_signatures(spec, match):
    with pytest.raises(errors.InvalidValue, match=match):
        parse_signature(spec)


def test_bad_signature_objects():
    with pytest.raises(errors.InvalidValue):
        parse_signature(42)
    with pytest.raises(errors.InvalidValue):
        parse_signature([object()])
    with pytest.raises(errors.InvalidValue):
        parse_signature([ctypes.c_longdouble])


def test_values_checked_with_the_parameter_named():
    sig = parse_signature("float *y, float a, int n, unsigned char c, bool b")
    good = [Buf(16), 2.0, 3, 4, True]
    sig.pack(good, addr)
    cases = [
        ([Buf(16), 2.0, 3, 4], "takes 5 arguments"),
        ([1.5, 2.0, 3, 4, True], r"argument 0 \(float\* y\): a float where a pointer"),
        ([Buf(16), "2", 3, 4, True], r"argument 1 \(float a\): expected a number"),
        ([Buf(16), 2.0, 3.5, 4, True], r"argument 2 \(int n\): expected an int"),
        ([Buf(16), 2.0, 2**31, 4, True], "does not fit in int"),
        ([Buf(16), 2.0, 3, -1, True], "does not fit in unsigned char"),
        ([Buf(16), 2.0, 3, 4, 2], "expected a bool"),
        ([Buf(16), 1e39, 3, 4, True], "overflows float"),
        ([object(), 2.0, 3, 4, True], "argument 0"),
    ]
    for args, match in cases:
        with pytest.raises(errors.InvalidValue, match=match):
            sig.pack(args, addr, "kernel axpy")
    # numpy and ctypes scalars are values too
    p = sig.pack([Buf(16), np.float32(2.0), np.int64(3), ctypes.c_uint8(4), np.bool_(True)], addr)
    assert sig.unpack_buffer(p.buffer)[1:] == [2.0, 3, 4, True]
    with pytest.raises(errors.InvalidValue, match="does not fit"):
        sig.pack([Buf(16), 2.0, np.int64(2**40), 4, True], addr)


def test_check_param_info():
    sig = parse_signature("float *y, float a, int n")
    sig.check_param_info([(0, 8), (8, 4), (12, 4)], "k")
    with pytest.raises(errors.InvalidValue, match="compiled kernel has 2 parameters"):
        sig.check_param_info([(0, 8), (8, 4)], "k")
    with pytest.raises(errors.InvalidValue, match=r"argument 1 \(float a\) is 4 bytes.*8 bytes"):
        sig.check_param_info([(0, 8), (8, 8), (16, 4)], "k")
    with pytest.raises(errors.InvalidValue, match="offset"):
        sig.check_param_info([(0, 8), (12, 4), (16, 4)], "k")


def test_infer_signature_typed_values_only():
    class Dev:
        __cuda_array_interface__ = {"data": (0x2000, False), "shape": (4,), "typestr": "<f4", "version": 3}

    sig = infer_signature([Dev(), np.float32(1), ctypes.c_int16(2), Params(), ctypes.c_void_p(8), None,
                           np.uint64(5)])
    assert [p.name for p in sig.params] == ["void*", "float", "c_short", "Params", "void*", "void*", "uint64_t"]
    for bad in (3, 2.0, True, "s", object()):
        with pytest.raises(errors.InvalidValue, match="argument 0"):
            infer_signature([bad])


def test_argtype_is_public_and_described():
    t = parse_signature("const double *p").params[0]
    assert isinstance(t, ArgType) and t.is_pointer and t.size == 8 and t.pointee == "const double"
    assert repr(parse_signature("int n")) == "Signature('int n')"
    assert hash(parse_signature("int")) == hash(parse_signature([ctypes.c_int]))
