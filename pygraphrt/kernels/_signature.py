"""Kernel signatures: packing Python values the way the compiler lays out kernel parameters.

A kernel's parameters are passed to the runtime as an array of pointers, one per
parameter, each pointing at the parameter's bytes.  pygraphrt packs all
arguments into one little-endian buffer laid out like a C struct of the
parameters (each at an offset aligned to its type, as NVCC/NVRTC and HIP-Clang
lay out the kernel parameter space) and points the array into it.

A :class:`Signature` is given once per kernel:

* a C parameter list -- ``"float *y, const float *x, float a, int n"`` (names
  optional; ``const``/``volatile``/``__restrict__``/``__grid_constant__`` are
  ignored; any ``T *`` is a pointer);
* or a sequence of types: C spellings, ctypes types (``c_float``,
  ``c_void_p``, ``POINTER(...)``, ``Structure`` subclasses), numpy scalar types
  or dtypes, or :class:`ArgType` objects.

Scalars: ``char``/``short``/``int``/``long``/``long long`` (signed and
unsigned; ``long`` is 64-bit as on Linux), ``intN_t``/``uintN_t``, ``size_t``,
``ptrdiff_t``, ``intptr_t``/``uintptr_t``, ``bool``, ``__half``/``half``,
``__nv_bfloat16``/``bfloat16``, ``float``, ``double``; CUDA/HIP vector types
with 1, 2 or 4 components (``float2``, ``int4``, ``double2``, ...); structs as
ctypes ``Structure`` subclasses (named in a string signature through
``types={"Name": Structure}``) or aligned numpy structured dtypes.
"""

from __future__ import annotations

import ctypes
import math
import re
import struct
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from .. import errors
from .._operands import Address

__all__ = ["ArgType", "Signature", "PackedArgs", "parse_signature", "infer_signature"]

PointerOf = Callable[[Any], int]

# ------------------------------------------------------------------------ scalar table
# struct code (little-endian, standard sizes) -> (kind, size)
_CODES: dict[str, tuple[str, int]] = {
    "b": ("int", 1), "B": ("uint", 1), "h": ("int", 2), "H": ("uint", 2),
    "i": ("int", 4), "I": ("uint", 4), "q": ("int", 8), "Q": ("uint", 8),
    "e": ("float", 2), "f": ("float", 4), "d": ("float", 8), "?": ("bool", 1),
}

_FIXED = {
    "int8_t": "b", "uint8_t": "B", "int16_t": "h", "uint16_t": "H", "int32_t": "i",
    "uint32_t": "I", "int64_t": "q", "uint64_t": "Q", "size_t": "Q", "ssize_t": "q",
    "ptrdiff_t": "q", "intptr_t": "q", "uintptr_t": "Q", "float": "f", "double": "d",
    "bool": "?", "_Bool": "?", "half": "e", "__half": "e", "float16": "e",
    "float32": "f", "float64": "d", "int8": "b", "uint8": "B", "int16": "h", "uint16": "H",
    "int32": "i", "uint32": "I", "int64": "q", "uint64": "Q",
    "cudaGraphConditionalHandle": "Q",  # typedef unsigned long long (pygraphrt.graph.ConditionalHandle)
}
_BFLOAT16 = {"__nv_bfloat16", "bfloat16", "__hip_bfloat16", "hip_bfloat16"}
_INT_WORDS = {"char", "short", "int", "long", "signed", "unsigned"}
_NOT_TYPE = {"__restrict__", "restrict", "__restrict", "__grid_constant__"}
_QUALIFIERS = {"const", "volatile", "__restrict__", "restrict", "__restrict", "__grid_constant__",
               "struct", "__align__"}

# CUDA / HIP vector types: component spelling -> struct code
_VECTOR_BASES = {
    "char": "b", "uchar": "B", "short": "h", "ushort": "H", "int": "i", "uint": "I",
    "long": "q", "ulong": "Q", "longlong": "q", "ulonglong": "Q", "float": "f", "double": "d",
}
_VECTOR_RE = re.compile(r"^(%s)([124])$" % "|".join(sorted(_VECTOR_BASES, key=len, reverse=True)))


def _int_code(words: list[str]) -> str | None:
    """struct code of a C integer spelled with char/short/int/long/signed/unsigned."""
    unsigned = "unsigned" in words
    rest = [w for w in words if w not in ("signed", "unsigned")]
    if rest and rest[-1] == "int" and len(rest) > 1:
        rest = rest[:-1]  # "short int", "long long int"
    key = " ".join(rest) or "int"
    code = {"char": "b", "short": "h", "int": "i", "long": "q", "long long": "q"}.get(key)
    if code is None:
        return None
    return code.upper() if unsigned else code


# ------------------------------------------------------------------------ types
@dataclass(frozen=True)
class ArgType:
    """One kernel parameter type.

    Attributes
    ----------
    name : str
        How the type was spelled (``"const float *"``, ``"int"``, ``"Params"``).
    kind : str
        ``"int"``, ``"uint"``, ``"float"``, ``"bool"``, ``"bfloat16"``,
        ``"pointer"``, ``"vector"`` or ``"struct"``.
    size, align : int
        Bytes the parameter takes and its alignment.
    code : str
        ``struct`` code of a scalar or vector component (``""`` for structs).
    lanes : int
        Components of a vector type (1 otherwise).
    ctype : type | None
        The ctypes Structure of a struct parameter.
    dtype : object | None
        The numpy structured dtype of a struct parameter given as one.
    pointee : str | None
        What a pointer points at, as spelled (``"float"``, ``"void"``).
    """

    # Equal types lay out and pack alike: spellings do not count.
    name: str = field(compare=False)
    kind: str
    size: int
    align: int
    code: str = ""
    lanes: int = 1
    ctype: Any = None
    dtype: Any = None
    pointee: str | None = field(default=None, compare=False)

    def __str__(self) -> str:
        return self.name

    @property
    def is_pointer(self) -> bool:
        """Whether the parameter is a pointer."""
        return self.kind == "pointer"

    # -- values ------------------------------------------------------------------
    def convert(self, value: Any, pointer_of: PointerOf) -> Any:
        """The value as ``struct`` packs it (scalars / pointers), or its bytes (others)."""
        kind = self.kind
        if kind == "pointer":
            return pointer_of(value)
        if kind in ("int", "uint"):
            v = _scalar_value(value)
            if isinstance(v, bool) or not isinstance(v, int):
                if hasattr(v, "__index__") and not isinstance(v, (float, bool)):
                    v = v.__index__()
                else:
                    raise errors.InvalidValue("argument", detail=f"expected an int, got "
                                                                 f"{_describe(value)}")
            bits = self.size * 8
            lo, hi = (0, (1 << bits) - 1) if kind == "uint" else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
            if not lo <= v <= hi:
                raise errors.InvalidValue("argument", detail=f"{v} does not fit in {self.name} "
                                                             f"[{lo}, {hi}]")
            return v
        if kind in ("float", "bfloat16"):
            v = _scalar_value(value)
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                try:
                    if isinstance(v, (str, bytes)) or not hasattr(v, "__float__"):
                        raise TypeError
                    v = float(v)
                except (TypeError, ValueError):
                    raise errors.InvalidValue("argument", detail=f"expected a number, got "
                                                                 f"{_describe(value)}") from None
            v = float(v)
            if kind == "float" and self.size == 4 and math.isfinite(v) and abs(v) > 3.4028234663852886e38:
                raise errors.InvalidValue("argument", detail=f"{v} overflows {self.name}")
            if kind == "float" and self.size == 2 and math.isfinite(v) and abs(v) >= 65520.0:
                raise errors.InvalidValue("argument", detail=f"{v} overflows {self.name}")
            if kind == "bfloat16":
                return _bf16_bits(v)
            return v
        if kind == "bool":
            v = _scalar_value(value)
            if isinstance(v, bool) or (isinstance(v, int) and v in (0, 1)):
                return bool(v)
            if type(v).__name__ == "bool_":  # numpy.bool_
                return bool(v)
            raise errors.InvalidValue("argument", detail=f"expected a bool, got {_describe(value)}")
        if kind == "vector":
            try:
                parts = list(value)
            except TypeError:
                raise errors.InvalidValue("argument", detail=f"expected {self.lanes} components, got "
                                                             f"{_describe(value)}") from None
            if len(parts) != self.lanes:
                raise errors.InvalidValue("argument", detail=f"{self.name} has {self.lanes} components, "
                                                             f"got {len(parts)}")
            comp = _scalar_type(self.code)
            return struct.pack("<" + self.code * self.lanes, *(comp.convert(p, pointer_of) for p in parts))
        return self._struct_bytes(value)

    def _struct_bytes(self, value: Any) -> bytes:
        if self.ctype is not None:
            cls = self.ctype
            if isinstance(value, cls):
                obj = value
            elif isinstance(value, ctypes.Structure):
                raise errors.InvalidValue("argument", detail=f"expected {cls.__name__}, got "
                                                             f"{type(value).__name__}")
            else:
                try:
                    obj = cls(**value) if isinstance(value, Mapping) else cls(*value)
                except (TypeError, ValueError, AttributeError) as e:
                    raise errors.InvalidValue("argument", detail=f"cannot make {cls.__name__} from "
                                                                 f"{_describe(value)}: {e}") from None
            return bytes(memoryview(obj).cast("B"))
        import numpy as np

        try:
            arr = np.array(value if isinstance(value, np.void) else
                           tuple(value.values()) if isinstance(value, Mapping) else value,
                           dtype=self.dtype)
        except (TypeError, ValueError) as e:
            raise errors.InvalidValue("argument", detail=f"cannot make {self.name} from "
                                                         f"{_describe(value)}: {e}") from None
        if arr.shape != ():
            raise errors.InvalidValue("argument", detail=f"expected one {self.name}, got shape {arr.shape}")
        return arr.tobytes()

    def unpack(self, blob: bytes | memoryview) -> Any:
        """The Python value of a parameter's bytes (pointers as int addresses)."""
        data = bytes(blob[:self.size])
        if len(data) != self.size:
            raise errors.InvalidValue("argument", detail=f"{self.name} needs {self.size} bytes, "
                                                         f"got {len(data)}")
        if self.kind == "pointer":
            return Address(struct.unpack("<Q", data)[0])  # an int, shown in hex
        if self.kind == "bfloat16":
            return struct.unpack("<f", struct.pack("<I", struct.unpack("<H", data)[0] << 16))[0]
        if self.kind == "vector":
            return struct.unpack("<" + self.code * self.lanes, data)
        if self.kind == "struct":
            if self.ctype is not None:
                return self.ctype.from_buffer_copy(data)
            import numpy as np

            return np.frombuffer(data, dtype=self.dtype)[0]
        return struct.unpack("<" + self.code, data)[0]


def _bf16_bits(v: float) -> int:
    """Round a float to bfloat16 (nearest even) and return its 16 bits."""
    if math.isnan(v):
        return 0x7FC0
    u = struct.unpack("<I", struct.pack("<f", v))[0]
    u += 0x7FFF + ((u >> 16) & 1)
    return (u >> 16) & 0xFFFF


def _scalar_value(value: Any) -> Any:
    if isinstance(value, ctypes._SimpleCData):  # c_int(3) etc.
        return value.value
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "shape", None) == ():  # numpy scalars and 0-d arrays
        return item()
    return value


def _describe(value: Any) -> str:
    text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{type(value).__name__} {text}"


_SCALARS: dict[str, ArgType] = {}


def _scalar_type(code: str, name: str | None = None) -> ArgType:
    key = f"{code}:{name}"
    t = _SCALARS.get(key)
    if t is None:
        kind, size = _CODES[code]
        t = ArgType(name or _CANONICAL[code], kind, size, size, code)
        _SCALARS[key] = t
    return t


_CANONICAL = {"b": "int8_t", "B": "uint8_t", "h": "int16_t", "H": "uint16_t", "i": "int32_t",
              "I": "uint32_t", "q": "int64_t", "Q": "uint64_t", "e": "__half", "f": "float",
              "d": "double", "?": "bool"}


def _pointer_type(name: str, pointee: str) -> ArgType:
    return ArgType(name, "pointer", 8, 8, "Q", pointee=pointee)


def _struct_type(cls: type) -> ArgType:
    return ArgType(cls.__name__, "struct", ctypes.sizeof(cls), ctypes.alignment(cls), ctype=cls)


# ------------------------------------------------------------------------ parsing
_TOKEN = re.compile(r"\*|&|\[|\]|[A-Za-z_][A-Za-z_0-9:]*|\S")


def _parse_c_type(text: str, types: Mapping[str, Any]) -> tuple[ArgType, str | None]:
    """(type, parameter name or None) of one C parameter declaration."""
    spelled = " ".join(text.split())
    tokens = _TOKEN.findall(spelled)
    bad = [t for t in tokens if t in ("&", "[", "]") or not (t == "*" or t[0].isalpha() or t[0] == "_")]
    if bad or not tokens:
        raise errors.InvalidValue("signature", detail=f"cannot read parameter {spelled!r}"
                                  + (f" (unexpected {bad[0]!r})" if bad else ""))
    stars = tokens.count("*")
    words = [t for t in tokens if t != "*" and t not in _QUALIFIERS]
    name = None
    if stars:
        last_star = max(i for i, t in enumerate(tokens) if t == "*")
        after = [t for t in tokens[last_star + 1:] if t not in _QUALIFIERS]
        if len(after) > 1:
            raise errors.InvalidValue("signature", detail=f"cannot read parameter {spelled!r}")
        name = after[0] if after else None
        base = [t for t in tokens[:last_star] if t != "*" and t not in _QUALIFIERS]
        if not base:
            raise errors.InvalidValue("signature", detail=f"parameter {spelled!r} has no type")
        pointee = " ".join(t for t in tokens[:last_star] if t != "*" and t not in _NOT_TYPE) + \
            "*" * (stars - 1)
        return _pointer_type(_type_spelling(tokens[:last_star + 1]), pointee), name
    if len(words) >= 2 and words[-1] not in _INT_WORDS and words[-1] not in _FIXED \
            and words[-1] not in _BFLOAT16:
        name = words[-1]
        words = words[:-1]
    type_text = " ".join(words)
    if all(w in _INT_WORDS for w in words):
        code = _int_code(words)
        if code is None:
            raise errors.InvalidValue("signature", detail=f"{type_text!r} is not a C type")
        return _scalar_type(code, type_text), name
    if len(words) != 1:
        raise errors.InvalidValue("signature", detail=f"cannot read parameter {spelled!r}")
    word = words[0]
    if word in types:
        return _from_type_object(types[word], word), name
    if word in _FIXED:
        return _scalar_type(_FIXED[word], word), name
    if word in _BFLOAT16:
        return ArgType(word, "bfloat16", 2, 2, "H"), name
    m = _VECTOR_RE.match(word)
    if m:
        code, lanes = _VECTOR_BASES[m.group(1)], int(m.group(2))
        csize = _CODES[code][1]
        align = csize * lanes if lanes < 4 else min(csize * 4, 16)
        return ArgType(word, "vector", csize * lanes, align, code, lanes), name
    raise errors.InvalidValue("signature", detail=f"unknown type {word!r}: name structs with "
                              f"types={{{word!r}: <ctypes.Structure subclass>}}")


def _type_spelling(tokens: Sequence[str]) -> str:
    text = " ".join(t for t in tokens if t not in _NOT_TYPE)
    return text.replace(" *", "*")


def _split_params(text: str) -> list[str]:
    text = text.strip()
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    if text.strip() in ("", "void"):
        return []
    return [p for p in (s.strip() for s in text.split(","))]


_CTYPES_CODES = {"b": "b", "B": "B", "h": "h", "H": "H", "i": "i", "I": "I", "l": "q", "L": "Q",
                 "q": "q", "Q": "Q", "f": "f", "d": "d", "?": "?", "c": "b"}


def _from_type_object(t: Any, label: str | None = None) -> ArgType:
    """An ArgType from a C spelling, ctypes type, numpy type/dtype or ArgType."""
    if isinstance(t, ArgType):
        return t
    if isinstance(t, str):
        arg, _ = _parse_c_type(t, {})
        return arg
    if isinstance(t, type) and issubclass(t, ctypes.Structure):
        return _struct_type(t)
    if isinstance(t, type) and issubclass(t, (ctypes._Pointer, ctypes.c_void_p, ctypes.c_char_p)):
        inner = getattr(t, "_type_", None)
        pointee = inner.__name__ if isinstance(inner, type) else "void"
        return _pointer_type(label or f"{pointee}*", pointee)
    if isinstance(t, type) and issubclass(t, ctypes._SimpleCData):
        code = _CTYPES_CODES.get(getattr(t, "_type_", ""))
        if code is None or ctypes.sizeof(t) != _CODES[code][1]:
            raise errors.InvalidValue("signature", detail=f"ctypes {t.__name__} is not a kernel parameter type")
        return _scalar_type(code, label or t.__name__)
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is optional
        np = None  # type: ignore[assignment]
    if np is not None:
        try:
            dt = np.dtype(t)
        except TypeError:
            dt = None
        if dt is not None:
            if dt.fields is not None:
                if not dt.isalignedstruct:
                    raise errors.InvalidValue("signature", detail="a numpy structured dtype for a kernel "
                                              "parameter must be aligned (np.dtype(..., align=True))")
                return ArgType(label or "struct", "struct", dt.itemsize, dt.alignment, dtype=dt)
            code = {"int8": "b", "uint8": "B", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I",
                    "int64": "q", "uint64": "Q", "float16": "e", "float32": "f", "float64": "d",
                    "bool": "?"}.get(dt.name)
            if code is not None:
                return _scalar_type(code, label or _CANONICAL[code])
    raise errors.InvalidValue("signature", detail=f"{t!r} is not a kernel parameter type")


# ------------------------------------------------------------------------ signatures
class PackedArgs:
    """Arguments packed for one launch or node: the bytes and where each one starts.

    ``keep`` holds the objects pointer arguments came from (arrays, buffers):
    whoever holds the packed arguments keeps the memory they point at alive.
    """

    __slots__ = ("buffer", "offsets", "sizes", "keep")

    def __init__(self, buffer: bytearray, offsets: tuple[int, ...], sizes: tuple[int, ...],
                 keep: Sequence[Any] = ()) -> None:
        self.buffer = buffer
        self.offsets = offsets
        self.sizes = sizes
        self.keep = tuple(keep)

    def __repr__(self) -> str:
        return f"PackedArgs(buffer={bytes(self.buffer)!r}, offsets={self.offsets}, sizes={self.sizes})"


@dataclass(frozen=True, eq=False)
class Signature:
    """The parameter types (and optional names) of a kernel, with their packed layout."""

    params: tuple[ArgType, ...]
    names: tuple[str | None, ...] = ()
    offsets: tuple[int, ...] = field(init=False)
    size: int = field(init=False)
    _struct: struct.Struct | None = field(init=False, repr=False)
    _fast: tuple[int, ...] | None = field(init=False, repr=False)
    _sizes: tuple[int, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        names = tuple(self.names) if self.names else (None,) * len(self.params)
        if len(names) != len(self.params):
            raise errors.InvalidValue("signature", detail="one name per parameter")
        object.__setattr__(self, "names", names)
        offsets, pos, fmt = [], 0, ["<"]
        simple = True
        for p in self.params:
            start = (pos + p.align - 1) // p.align * p.align
            if start > pos:
                fmt.append(f"{start - pos}x")
            offsets.append(start)
            if p.kind in ("int", "uint", "float", "bool", "pointer"):
                fmt.append(p.code)
            else:
                simple = False
            pos = start + p.size
        object.__setattr__(self, "offsets", tuple(offsets))
        object.__setattr__(self, "size", pos)
        object.__setattr__(self, "_struct", struct.Struct("".join(fmt)) if simple else None)
        # The fast path of pack(): 0 pointer, 1 integer, 2 floating (None: some other kind).
        kinds = {"pointer": 0, "int": 1, "uint": 1, "float": 2}
        fast = tuple(kinds.get(p.kind, -1) for p in self.params)
        object.__setattr__(self, "_fast", fast if simple and -1 not in fast else None)
        object.__setattr__(self, "_sizes", tuple(p.size for p in self.params))

    def __len__(self) -> int:
        return len(self.params)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Signature) and self.params == other.params

    def __hash__(self) -> int:
        return hash(self.params)

    def __str__(self) -> str:
        return ", ".join(p.name if n is None else f"{p.name} {n}" for p, n in zip(self.params, self.names))

    def __repr__(self) -> str:
        return f"Signature({str(self)!r})"

    def _label(self, i: int) -> str:
        n = self.names[i]
        return f"argument {i} ({self.params[i].name}{' ' + n if n else ''})"

    def fast_values(self, args: Sequence[Any], pointer_of: PointerOf
                    ) -> tuple[Sequence[Any], Sequence[Any]] | None:
        """(values for ``_struct``, objects to keep) when every argument is a plain int/float
        or a pointer, else None: the caller then takes the checked path (which explains)."""
        fast = self._fast
        if fast is None or len(args) != len(fast):
            return None
        # A plain int fits every kind (an address, an integer, a float): arguments that are all
        # plain ints, the common case, are the values as they are, and keep nothing.
        for v in args:
            if type(v) is not int:
                break
        else:
            return args, ()
        values = list(args)
        keep: list[Any] = []
        try:
            for i, k in enumerate(fast):
                v = values[i]
                t = type(v)
                if t is int:
                    continue
                if k == 0:
                    values[i] = pointer_of(v)
                    if v is not None:
                        keep.append(v)
                elif k != 2 or t is not float:
                    return None
        except Exception:
            return None
        return values, keep

    def pack(self, args: Sequence[Any], pointer_of: PointerOf, what: str = "kernel") -> PackedArgs:
        """Pack ``args`` into one buffer; raise InvalidValue naming the argument that does not fit."""
        r = self.fast_values(args, pointer_of)
        if r is not None:
            buf = bytearray(self.size)
            try:  # struct range-checks ints and floats; an error takes the checked path
                self._struct.pack_into(buf, 0, *r[0])  # type: ignore[union-attr]
                return PackedArgs(buf, self.offsets, self._sizes, r[1])
            except (struct.error, OverflowError):
                pass
        return self._pack_checked(args, pointer_of, what)

    def _pack_checked(self, args: Sequence[Any], pointer_of: PointerOf, what: str) -> PackedArgs:
        params = self.params
        if len(args) != len(params):
            raise errors.InvalidValue(what, detail=f"takes {len(params)} arguments ({self}), "
                                                   f"got {len(args)}")
        buf = bytearray(self.size)
        keep = []
        values = []
        for i, (p, v) in enumerate(zip(params, args)):
            try:
                c = p.convert(v, pointer_of)
            except errors.InvalidValue as e:
                raise errors.InvalidValue(what, detail=f"{self._label(i)}: {e.detail or e}") from None
            if p.kind == "pointer":
                if v is not None and not isinstance(v, int):
                    keep.append(v)
            values.append(c)
        if self._struct is not None:
            self._struct.pack_into(buf, 0, *values)
        else:
            for p, off, c in zip(params, self.offsets, values):
                if isinstance(c, bytes):
                    buf[off:off + p.size] = c
                else:
                    struct.pack_into("<" + p.code, buf, off, c)
        return PackedArgs(buf, self.offsets, self._sizes, keep)

    def unpack(self, blobs: Sequence[bytes | memoryview]) -> list[Any]:
        """Values from one byte blob per parameter (as a kernel node holds them)."""
        if len(blobs) != len(self.params):
            raise errors.InvalidValue("signature", detail=f"{len(blobs)} values for {len(self.params)} parameters")
        return [p.unpack(b) for p, b in zip(self.params, blobs)]

    def unpack_buffer(self, buffer: bytes | bytearray | memoryview) -> list[Any]:
        """Values from a buffer laid out as :meth:`pack` writes it."""
        mv = memoryview(buffer)
        return [p.unpack(mv[off:off + p.size]) for p, off in zip(self.params, self.offsets)]

    def check_param_info(self, info: Sequence[tuple[int, int]], kernel_name: str) -> None:
        """Compare with the (offset, size) the runtime reports for the compiled kernel."""
        what = f"kernel {kernel_name}"
        if len(info) != len(self.params):
            raise errors.InvalidValue(what, detail=f"the compiled kernel has {len(info)} parameters, "
                                                   f"the signature ({self}) has {len(self.params)}")
        for i, ((offset, size), p, mine) in enumerate(zip(info, self.params, self.offsets)):
            if size != p.size:
                raise errors.InvalidValue(what, detail=f"{self._label(i)} is {p.size} bytes in the "
                                                       f"signature, the compiled kernel's is {size} bytes")
            if offset != mine:
                raise errors.InvalidValue(what, detail=f"{self._label(i)} is at offset {mine} in the "
                                                       f"signature, the compiled kernel's is at {offset}")


def parse_signature(spec: Any, types: Mapping[str, Any] | None = None) -> Signature:
    """A :class:`Signature` from a C parameter list or a sequence of types.

    Parameters
    ----------
    spec : str, Signature or sequence
        ``"float *y, float a, int n"``, or ``[ctypes.c_void_p, "float", numpy.int32]``.
    types : mapping, optional
        Struct names used in a string signature -> ctypes Structure subclasses
        (or aligned numpy structured dtypes).
    """
    if isinstance(spec, Signature):
        return spec
    types = dict(types or {})
    if isinstance(spec, str):
        parsed = [_parse_c_type(p, types) if p else _empty(spec) for p in _split_params(spec)]
        return Signature(tuple(t for t, _ in parsed), tuple(n for _, n in parsed))
    if isinstance(spec, (bytes, Mapping)) or not isinstance(spec, Iterable):
        raise errors.InvalidValue("signature", detail=f"expected a C parameter list or a sequence of types, "
                                                      f"got {type(spec).__name__}")
    out, names = [], []
    for t in spec:
        if isinstance(t, str):
            arg, name = _parse_c_type(t, types)
        else:
            arg, name = _from_type_object(t), None
        out.append(arg)
        names.append(name)
    return Signature(tuple(out), tuple(names))


def _empty(spec: str) -> tuple[ArgType, str | None]:
    raise errors.InvalidValue("signature", detail=f"empty parameter in {spec!r}")


def infer_signature(args: Sequence[Any], what: str = "kernel") -> Signature:
    """The signature of explicitly typed values: numpy/ctypes scalars, Structures, pointers.

    Plain Python ints and floats have no C type and are refused: give the
    kernel a signature, or pass ``numpy.int32(n)`` / ``ctypes.c_float(x)``.
    """
    out = []
    for i, v in enumerate(args):
        out.append(_infer_one(i, v, what))
    return Signature(tuple(out))


_VOID_P = _pointer_type("void*", "void")


def _infer_one(i: int, v: Any, what: str) -> ArgType:
    if isinstance(v, (bool, int, float)):
        raise errors.InvalidValue(what, detail=f"argument {i}: a plain {type(v).__name__} has no C type "
                                  f"without a signature; give the kernel a signature "
                                  f"(kernel(..., signature='...')) or pass e.g. numpy.int32({v!r})")
    if isinstance(v, ctypes.Structure):
        return _struct_type(type(v))
    if isinstance(v, (ctypes.c_void_p, ctypes._Pointer)) or v is None:
        return _VOID_P
    if isinstance(v, ctypes._SimpleCData):
        return _from_type_object(type(v))
    dtype = getattr(v, "dtype", None)
    if dtype is not None and getattr(v, "shape", None) == () and not hasattr(v, "__cuda_array_interface__"):
        return _from_type_object(dtype)
    if type(v).__module__ == "_cffi_backend" or hasattr(v, "__pygraphrt_pointer__") or \
            hasattr(v, "__cuda_array_interface__") or hasattr(v, "__dlpack__") or \
            (hasattr(v, "data_ptr") and hasattr(v, "is_cuda")):
        return _VOID_P
    raise errors.InvalidValue(what, detail=f"argument {i}: cannot tell the C type of {_describe(v)} "
                              "without a signature")
