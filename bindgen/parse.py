"""Stage 2: parse preprocessed C with pycparser into the IR of :mod:`bindgen.ir`.

Only declarations that come from the header set's own folders are kept (the
line markers left by the preprocessor say where each one came from); bindgen's
libc stand-ins only make the text parseable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from pycparser import c_ast, c_parser

from . import constexpr
from .constexpr import NotConstant, Value, canonical_builtin
from .ir import (Array, CType, Enum, Field, FuncPtr, Function, Module, Named, Param, Pointer,
                 Record, Typedef)
from .preprocess import Preprocessed


class ParseError(RuntimeError):
    pass


@dataclass(frozen=True)
class InlineRecord:
    """A struct/union type written in place (``struct { int a; } member;``)."""

    record: Record


@dataclass
class _State:
    roots: list[Path]
    aligned: dict[str, int]
    module: Module = field(default_factory=Module)
    enumerators: dict[str, Value] = field(default_factory=dict)
    pack_stack: list[int | None] = field(default_factory=list)
    pack: int | None = None
    anon_counter: int = 0


def _header_of(coord: object, roots: list[Path]) -> str | None:
    """The header's path relative to its include root, or None if outside every root."""
    if coord is None or not getattr(coord, "file", None):
        return None
    path = Path(coord.file)  # type: ignore[attr-defined]
    for root in roots:
        try:
            return path.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            continue
    return None


def parse(pre: Preprocessed, roots: list[Path]) -> Module:
    """Parse preprocessed text; keep what is declared in files under ``roots``."""
    # pycparser does not understand the line-marker flags gcc appends; drop them.
    text = re.sub(r'^(# \d+ "[^"]*")(?: \d+)+$', r"\1", pre.text, flags=re.M)
    try:
        ast = c_parser.CParser().parse(text, "<preprocessed>")
    except Exception as exc:  # pycparser raises its own ParseError
        raise ParseError(str(exc)) from exc
    state = _State(roots=roots, aligned=pre.aligned)
    for ext in ast.ext:
        _top_level(ext, state)
    return state.module


def _top_level(node: c_ast.Node, st: _State) -> None:
    if isinstance(node, c_ast.Pragma):
        _pragma(node.string, st)
        return
    header = _header_of(node.coord, st.roots)
    if isinstance(node, c_ast.FuncDef):
        return  # inline helpers have bodies; they are not exported by the library
    if not isinstance(node, (c_ast.Decl, c_ast.Typedef)):
        return
    if header is None:
        # Still learn enumerators from libc stand-ins in case vendor enums use them.
        return
    if isinstance(node, c_ast.Typedef):
        ctype = _type(node.type, st, header)
        if isinstance(ctype, InlineRecord):
            rec = ctype.record
            if rec.name.startswith("__anon"):
                rec = Record(node.name, rec.kind, rec.fields, rec.align, rec.packed, header)
                _add_record(rec, st)
                return
            ctype = Named(rec.name)
        if isinstance(ctype, Named) and ctype.name.startswith("__anon_enum"):
            # ``typedef enum { ... } name;``: the typedef name is the enum's only name.
            enum = st.module.enums.pop(ctype.name)
            st.module.enums[node.name] = Enum(node.name, enum.members, header)
            st.module.order[st.module.order.index(("enum", ctype.name))] = ("enum", node.name)
            return
        if isinstance(ctype, Named) and ctype.name == node.name:
            return
        st.module.typedefs[node.name] = Typedef(node.name, ctype, header)
        st.module.order.append(("typedef", node.name))
        return
    # Decl
    if "static" in (node.storage or []):
        return
    if isinstance(node.type, c_ast.FuncDecl):
        fn = _function(node, st, header)
        if fn.symbol not in st.module.functions:
            st.module.functions[fn.symbol] = fn
            st.module.order.append(("function", fn.symbol))
        return
    if isinstance(node.type, (c_ast.Struct, c_ast.Union, c_ast.Enum)) and node.name is None:
        _type(c_ast.TypeDecl(None, [], None, node.type), st, header)
        return
    # Global variables are not part of the runtime APIs we bind.


def _pragma(text: str, st: _State) -> None:
    m = re.fullmatch(r"\s*pack\s*\((.*)\)\s*", text)
    if not m:
        return
    args = [a.strip() for a in m.group(1).split(",") if a.strip()]
    if not args:
        st.pack = None
    elif args[0] == "push":
        st.pack_stack.append(st.pack)
        if len(args) > 1:
            st.pack = int(args[-1])
    elif args[0] == "pop":
        st.pack = st.pack_stack.pop() if st.pack_stack else None
    else:
        st.pack = int(args[0])


def _function(node: c_ast.Decl, st: _State, header: str) -> Function:
    fdecl = node.type
    result = _type(fdecl.type, st, header)
    params, variadic = _params(fdecl.args, st, header)
    return Function(api_name=node.name, symbol=node.name, result=_as_ctype(result),
                    params=tuple(params), variadic=variadic, header=header)


def _params(args: c_ast.ParamList | None, st: _State, header: str) -> tuple[list[Param], bool]:
    params: list[Param] = []
    variadic = False
    if args is None:
        return params, variadic
    for i, p in enumerate(args.params):
        if isinstance(p, c_ast.EllipsisParam):
            variadic = True
            continue
        ptype = _as_ctype(_type(p.type, st, header))
        if isinstance(ptype, Named) and ptype.name == "void" and len(args.params) == 1:
            return [], False
        # C adjusts array and function parameters to pointers.
        if isinstance(ptype, Array):
            ptype = Pointer(ptype.element)
        elif isinstance(ptype, FuncPtr):
            ptype = Pointer(ptype)
        params.append(Param(p.name or f"arg{i}", ptype))
    return params, variadic


def _as_ctype(t: CType | InlineRecord) -> CType:
    if isinstance(t, InlineRecord):
        return Named(t.record.name)
    return t


def _quals_const(quals: list[str] | None) -> bool:
    return "const" in (quals or [])


def _type(node: c_ast.Node, st: _State, header: str) -> CType | InlineRecord:
    if isinstance(node, c_ast.TypeDecl):
        inner = node.type
        const = _quals_const(node.quals)
        if isinstance(inner, c_ast.IdentifierType):
            return Named(canonical_builtin(inner.names), const)
        if isinstance(inner, (c_ast.Struct, c_ast.Union)):
            t = _record(inner, st, header)
            if isinstance(t, Named) and const:
                return Named(t.name, True)
            return t
        if isinstance(inner, c_ast.Enum):
            return Named(_enum(inner, st, header), const)
        raise ParseError(f"unsupported type node {type(inner).__name__}")
    if isinstance(node, c_ast.PtrDecl):
        return Pointer(_as_ctype(_type(node.type, st, header)), _quals_const(node.quals))
    if isinstance(node, c_ast.ArrayDecl):
        length = None
        if node.dim is not None:
            length = int(_const(node.dim, st).value)
        return Array(_as_ctype(_type(node.type, st, header)), length)
    if isinstance(node, c_ast.FuncDecl):
        params, variadic = _params(node.args, st, header)
        return FuncPtr(_as_ctype(_type(node.type, st, header)),
                       tuple(p.type for p in params), variadic)
    if isinstance(node, c_ast.Typename):
        return _type(node.type, st, header)
    raise ParseError(f"unsupported declarator {type(node).__name__}")


def _const(node: c_ast.Node, st: _State) -> Value:
    def lookup(name: str) -> Value:
        if name in st.enumerators:
            return st.enumerators[name]
        raise NotConstant(f"unknown identifier {name}")

    return constexpr.evaluate(node, lookup, lambda n: _sizeof(n, st))


_SCALAR_SIZES = {"_Bool": 1, "char": 1, "signed char": 1, "unsigned char": 1, "short": 2,
                 "unsigned short": 2, "int": 4, "unsigned int": 4, "long": 8, "unsigned long": 8,
                 "long long": 8, "unsigned long long": 8, "float": 4, "double": 8,
                 "long double": 16, "size_t": 8}


def _sizeof(node: c_ast.Node, st: _State) -> int:
    """``sizeof`` of a scalar type (what vendor headers use in array bounds)."""
    if not isinstance(node, c_ast.Typename):
        raise NotConstant("sizeof of an expression")
    t = _as_ctype(_type(node.type, st, ""))
    while True:
        if isinstance(t, Pointer):
            return 8
        if isinstance(t, Array) and t.length is not None:
            return t.length * _sizeof_ctype(t.element, st)
        if isinstance(t, Named):
            return _sizeof_ctype(t, st)
        raise NotConstant(f"sizeof {t}")


def _sizeof_ctype(t: CType, st: _State) -> int:
    while isinstance(t, Named) and t.name in st.module.typedefs:
        t = st.module.typedefs[t.name].type
    if isinstance(t, Pointer):
        return 8
    if isinstance(t, Named):
        if t.name in _SCALAR_SIZES:
            return _SCALAR_SIZES[t.name]
        if t.name in st.module.enums or t.name.startswith("enum "):
            return 4
    raise NotConstant(f"sizeof {t}")


def _record(node: c_ast.Struct | c_ast.Union, st: _State, header: str) -> CType | InlineRecord:
    kind = "struct" if isinstance(node, c_ast.Struct) else "union"
    if node.name is not None:
        name = f"{kind} {node.name}"
        if node.decls is None:
            if name not in st.module.records:
                _add_record(Record(name, kind, None, header=header), st)
            return Named(name)
        align, unsupported = _member_alignment(node.decls, st, st.aligned.get(name))
        rec = Record(name, kind, _fields(node.decls, st, header), align, st.pack, header,
                     unsupported)
        _add_record(rec, st)
        return Named(name)
    st.anon_counter += 1
    rec = Record(f"__anon{st.anon_counter}", kind, _fields(node.decls or [], st, header),
                 None, st.pack, header)
    return InlineRecord(rec)


def _member_alignment(decls: list[c_ast.Decl], st: _State,
                      align: int | None) -> tuple[int | None, str | None]:
    """Fold C11 ``_Alignas`` on members into the record's alignment.

    On the first member it is the record's alignment (same layout); anywhere
    else it also moves offsets, which cffi's ABI mode cannot express.
    """
    unsupported = None
    for i, d in enumerate(decls):
        for a in getattr(d, "align", None) or []:
            value = int(_const(a.alignment, st).value)
            if i == 0:
                align = max(align or 0, value)
            else:
                unsupported = f"_Alignas({value}) on member {d.name!r} cannot be expressed in cffi's ABI mode"
    return align, unsupported


def _add_record(rec: Record, st: _State) -> None:
    existing = st.module.records.get(rec.name)
    if existing is not None and existing.fields is not None and rec.fields is None:
        return
    if existing is None:
        st.module.order.append(("record", rec.name))
    elif existing.fields is None and rec.fields is not None:
        # Defined after a forward declaration: the definition goes where it is written,
        # after the typedefs its members use (CUDA 13.5's CUDA_FABRIC_COPY_BATCH_OP_st).
        st.module.order.remove(("record", rec.name))
        st.module.order.append(("record", rec.name))
    st.module.records[rec.name] = rec


def _fields(decls: list[c_ast.Decl], st: _State, header: str) -> tuple[Field, ...]:
    fields: list[Field] = []
    for d in decls:
        bit_width = int(_const(d.bitsize, st).value) if d.bitsize is not None else None
        if d.name is None and isinstance(d.type, (c_ast.Struct, c_ast.Union)):
            t = _record(d.type, st, header)
            if isinstance(t, InlineRecord):
                fields.append(Field("", Named(t.record.kind), anonymous=t.record))
                continue
            # A named struct defined inside another one, no member declared.
            continue
        t = _type(d.type, st, header)
        if isinstance(t, InlineRecord):
            fields.append(Field(d.name, Named(t.record.kind), bit_width, anonymous=t.record))
        else:
            fields.append(Field(d.name or "", t, bit_width))
    return tuple(fields)


def _enum(node: c_ast.Enum, st: _State, header: str) -> str:
    if node.values is None:
        return f"enum {node.name}"
    if node.name is None:
        st.anon_counter += 1
        name = f"__anon_enum{st.anon_counter}"
    else:
        name = f"enum {node.name}"
    members: list[tuple[str, int]] = []
    nxt = Value(0, "int")
    for e in node.values.enumerators:
        v = _const(e.value, st) if e.value is not None else nxt
        members.append((e.name, int(v.value)))
        st.enumerators[e.name] = Value(int(v.value), "int")
        nxt = Value(int(v.value) + 1, "int")
    if name not in st.module.enums:  # ``typedef enum E {...} A, B;`` visits E twice
        st.module.order.append(("enum", name))
    st.module.enums[name] = Enum(name, tuple(members), header)
    return name
