"""Parser-independent intermediate representation of a C header set.

The parser (:mod:`bindgen.parse`) produces these objects; the emitters
(:mod:`bindgen.emit`) consume them.  Nothing here knows about pycparser, so a
different front end (libclang, say) could feed the same emitters.

C types are small immutable trees (:class:`Named`, :class:`Pointer`,
:class:`Array`, :class:`FuncPtr`) that print themselves as C declarators, which
is what both cffi's ``cdef`` and the JSON manifest need.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

__all__ = [
    "Named", "Pointer", "Array", "FuncPtr", "CType", "declare", "spell",
    "Param", "Function", "Enum", "Field", "Record", "Typedef", "Constant", "Module",
]


@dataclass(frozen=True)
class Named:
    """A named type: a builtin (``unsigned int``), a typedef, or ``struct X`` / ``enum E``."""

    name: str
    const: bool = False


@dataclass(frozen=True)
class Pointer:
    target: "CType"
    const: bool = False


@dataclass(frozen=True)
class Array:
    element: "CType"
    length: int | None  # None: ``[]``


@dataclass(frozen=True)
class FuncPtr:
    """A function type; it only appears behind a :class:`Pointer` or in a typedef."""

    result: "CType"
    params: tuple["CType", ...]
    variadic: bool = False


CType = Union[Named, Pointer, Array, FuncPtr]


def declare(ctype: CType, name: str = "") -> str:
    """Return the C declaration of ``name`` with type ``ctype`` (abstract if ``name`` is empty)."""
    inner = name
    while True:
        if isinstance(ctype, Named):
            base = ("const " if ctype.const else "") + ctype.name
            return f"{base} {inner}".rstrip() if inner else base
        if isinstance(ctype, Pointer):
            star = "*" + (" const" if ctype.const else "")
            if inner and ctype.const:
                inner = f"{star} {inner}"
            else:
                inner = star + inner
            target = ctype.target
            if isinstance(target, (Array, FuncPtr)):
                inner = f"({inner})"
            ctype = target
            continue
        if isinstance(ctype, Array):
            inner = f"{inner}[{'' if ctype.length is None else ctype.length}]"
            ctype = ctype.element
            continue
        if isinstance(ctype, FuncPtr):
            params = [declare(p) for p in ctype.params]
            if ctype.variadic:
                params.append("...")
            inner = f"{inner}({', '.join(params) if params else 'void'})"
            ctype = ctype.result
            continue
        raise TypeError(f"not a C type: {ctype!r}")


def spell(ctype: CType) -> str:
    """The abstract spelling of a type, as used in the manifest (``const char *``)."""
    return declare(ctype)


@dataclass(frozen=True)
class Param:
    name: str
    type: CType


@dataclass(frozen=True)
class Function:
    """A function the runtime library exports.

    ``api_name`` is the documented name (what a C programmer writes); ``symbol``
    is what the header's macros turn it into and what the library exports.
    """

    api_name: str
    symbol: str
    result: CType
    params: tuple[Param, ...]
    variadic: bool = False
    header: str = ""
    deprecated: bool = False


@dataclass(frozen=True)
class Enum:
    name: str  # the C spelling: ``enum cudaError`` or a typedef name for an anonymous enum
    members: tuple[tuple[str, int], ...]
    header: str = ""


@dataclass(frozen=True)
class Field:
    name: str  # "" for an anonymous struct/union member
    type: CType
    bit_width: int | None = None
    # Members of an anonymous struct/union member, which C lets you name directly.
    anonymous: "Record | None" = None


@dataclass(frozen=True)
class Record:
    name: str  # ``struct X`` / ``union X`` or a typedef name for an anonymous one
    kind: str  # "struct" | "union"
    fields: tuple[Field, ...] | None  # None: declared but opaque
    align: int | None = None  # explicit ``__attribute__((aligned(N)))``
    packed: int | None = None  # ``#pragma pack(N)`` in force at the definition
    header: str = ""
    # Why the layout cannot be reproduced (the record then stays opaque), if so.
    unsupported: str | None = None


@dataclass(frozen=True)
class Typedef:
    name: str
    type: CType
    header: str = ""


@dataclass(frozen=True)
class Constant:
    name: str
    value: int | float | str
    c_type: str


@dataclass
class Module:
    """Everything one header set declares, in declaration order."""

    functions: dict[str, Function] = field(default_factory=dict)
    enums: dict[str, Enum] = field(default_factory=dict)
    records: dict[str, Record] = field(default_factory=dict)
    typedefs: dict[str, Typedef] = field(default_factory=dict)
    constants: dict[str, Constant] = field(default_factory=dict)
    # Order matters for the cdef: a typedef may name a record declared before it.
    order: list[tuple[str, str]] = field(default_factory=list)
    # Records or typedefs left out of the binding, with the reason.
    omitted: dict[str, str] = field(default_factory=dict)
