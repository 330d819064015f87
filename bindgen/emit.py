"""Stage 4: emit a binding from the IR.

Three outputs per header set, written into ``pygraphrt/_bindings/<name>/``:

* ``_ffi.py``: a cffi *out-of-line ABI* module (``set_source(name, None)``), so
  importing it parses no C and needs no compiler; ``ffi.dlopen`` binds symbols.
* ``enums.py``: every enum as an ``IntEnum``, the constants, and the api-name ->
  symbol table.
* ``manifest.json``: the sorted, machine-readable description (schema in the README).

Layouts in the manifest are what cffi computes from the cdef; the layout test
checks each against the C compiler.
"""

from __future__ import annotations

import contextlib
import io
import json
import keyword
from dataclasses import dataclass

import cffi

from .ir import Constant, Field, Function, Module, Named, Record, declare, spell

# cffi's ABI mode has no way to say "aligned(N)"; over-alignment up to 16 is
# reproduced with an anonymous union that holds an alignment carrier of the
# right builtin type.  Larger alignments cannot be expressed: such records stay
# opaque and are listed in the manifest's "omitted" table.
_ALIGN_CARRIERS = {2: "short", 4: "int", 8: "long long", 16: "long double"}
ALIGN_CARRIER_FIELD = "_pygraphrt_align"


@dataclass
class Binding:
    name: str
    module: Module
    functions: dict[str, Function]
    cdef: str
    cdef_packed: str
    omitted: dict[str, str]


def _field_lines(fields: tuple[Field, ...], indent: str) -> list[str]:
    lines: list[str] = []
    for f in fields:
        if f.anonymous is not None:
            body = _field_lines(f.anonymous.fields or (), indent + "    ")
            tail = f" {f.name};" if f.name else ";"
            lines.append(f"{indent}{f.anonymous.kind} {{")
            lines.extend(body)
            lines.append(f"{indent}}}{tail}")
            continue
        decl = declare(f.type, f.name)
        if f.bit_width is not None:
            decl += f" : {f.bit_width}"
        lines.append(f"{indent}{decl};")
    return lines


def record_cdef(rec: Record) -> tuple[str, str | None]:
    """The cdef text of a record, and the reason it was made opaque (or None)."""
    keyword_, _, tag = rec.name.partition(" ")
    is_tagged = keyword_ in ("struct", "union") and tag
    head = rec.name if is_tagged else f"typedef {rec.kind}"
    tail = ";" if is_tagged else f" {rec.name};"
    reason = None
    if rec.fields is None:
        return (f"{rec.name};" if is_tagged else f"typedef {rec.kind} {rec.name} {rec.name};"), None
    if rec.unsupported:
        reason = rec.unsupported
    elif rec.packed not in (None, 1):
        reason = f"#pragma pack({rec.packed}) cannot be expressed in cffi's ABI mode"
    elif rec.align is not None and rec.align not in _ALIGN_CARRIERS:
        reason = f"aligned({rec.align}) cannot be expressed in cffi's ABI mode"
    if reason is not None:
        opaque = f"{rec.name};" if is_tagged else f"typedef {rec.kind} {rec.name} {rec.name};"
        return opaque, reason
    body = _field_lines(rec.fields, "    ")
    if rec.align is not None:
        carrier = _ALIGN_CARRIERS[rec.align]
        inner = ["    union {", f"        {rec.kind} {{"] + ["    " + l for l in _field_lines(rec.fields, "        ")] + [
            "        };", f"        {carrier} {ALIGN_CARRIER_FIELD};", "    };"]
        # The record's own members, wrapped so the union carries the alignment.
        body = inner
    return "\n".join([f"{head} {{"] + body + ["}" + tail]), None


def _enum_cdef(name: str, members: tuple[tuple[str, int], ...]) -> str:
    items = ",\n".join(f"    {m} = {v}" for m, v in members)
    if name.startswith("enum "):
        return f"{name} {{\n{items}\n}};"
    if name.startswith("__anon_enum"):
        return f"enum {{\n{items}\n}};"
    return f"typedef enum {{\n{items}\n}} {name};"


def build_cdef(module: Module, functions: dict[str, Function]) -> tuple[str, str, dict[str, str]]:
    """Return (cdef, packed cdef, omitted) for a module and its selected functions."""
    types, decls, packed, omitted = build_cdef_parts(module, functions)
    return "\n".join(types + decls) + "\n", packed, omitted


def function_decl(fn: Function) -> str:
    """The cdef prototype of one function (its exported symbol's name)."""
    params = [declare(p.type, p.name) for p in fn.params]
    if fn.variadic:
        params.append("...")
    return f"{declare(fn.result, fn.symbol)}({', '.join(params) or 'void'});"


def build_cdef_parts(module: Module, functions: dict[str, Function]
                     ) -> tuple[list[str], list[str], str, dict[str, str]]:
    """(type declarations, function prototypes, packed cdef, omitted): the pieces of
    :func:`build_cdef`, kept apart for the API-mode emitter (:mod:`bindgen.fast`)."""
    # cffi wants an enum's body where the enum is first mentioned, and headers
    # may name an enum in a typedef before defining it: enums go first (their
    # values are plain numbers, so they depend on nothing).
    out: list[str] = [_enum_cdef(name, module.enums[name].members)
                      for kind, name in module.order if kind == "enum"]
    packed: list[str] = []
    omitted: dict[str, str] = {}
    bound_symbols = {f.symbol for f in functions.values()}
    for kind, name in module.order:
        if kind == "record":
            rec = module.records[name]
            text, reason = record_cdef(rec)
            if reason:
                omitted[name] = reason
            (packed if rec.packed == 1 and reason is None and rec.fields is not None else out).append(text)
        elif kind == "typedef":
            td = module.typedefs[name]
            out.append(f"typedef {declare(td.type, name)};")
    decls = [function_decl(fn) for fn in functions.values() if fn.symbol in bound_symbols]
    return out, decls, "\n".join(packed) + ("\n" if packed else ""), omitted


def make_ffi(cdef: str, cdef_packed: str) -> cffi.FFI:
    ffi = cffi.FFI()
    ffi.cdef(cdef)
    if cdef_packed:
        ffi.cdef(cdef_packed, packed=True)
    return ffi


def ffi_module_source(module_name: str, cdef: str, cdef_packed: str) -> str:
    """The text of the out-of-line ABI module cffi generates for ``cdef``."""
    ffi = make_ffi(cdef, cdef_packed)
    ffi.set_source(module_name, None)
    buf = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()):  # cffi prints "generating ..."
        ffi.emit_python_code(buf)
    return buf.getvalue()


def _flat_fields(ffi: cffi.FFI, ctype: str, fields: tuple[Field, ...], prefix: tuple[str, ...],
                 base: int) -> list[list[object]]:
    rows: list[list[object]] = []
    for f in fields:
        if f.anonymous is not None:
            path = prefix + ((f.name,) if f.name else ())
            sub_base = base
            if f.name:
                sub_base = ffi.offsetof(ctype, *path)
                rows.append([".".join(path), f"{f.anonymous.kind} {{...}}", sub_base])
            rows.extend(_flat_fields(ffi, ctype, f.anonymous.fields or (), path, sub_base))
            continue
        path = prefix + (f.name,)
        if f.bit_width is not None:
            rows.append([".".join(path), f"{spell(f.type)} : {f.bit_width}", None])
        else:
            rows.append([".".join(path), spell(f.type), ffi.offsetof(ctype, *path)])
    return rows


def manifest(hs_source: dict[str, object], module: Module, functions: dict[str, Function],
             constants: dict[str, Constant], ffi: cffi.FFI, omitted: dict[str, str],
             since: dict[str, str] | None = None) -> dict[str, object]:
    records: dict[str, object] = {}
    for name, rec in module.records.items():
        if rec.fields is None or name in omitted:
            continue
        records[name] = {
            "kind": rec.kind,
            "size": ffi.sizeof(name),
            "align": ffi.alignof(name),
            "fields": _flat_fields(ffi, name, rec.fields, (), 0),
        }
    data: dict[str, object] = {
        "source": hs_source,
        "functions": {
            api: {"symbol": fn.symbol, "result": spell(fn.result),
                  "params": [[spell(p.type), p.name] for p in fn.params]
                  + ([["...", ""]] if fn.variadic else [])}
            for api, fn in functions.items()},
        "enums": {name: dict(e.members) for name, e in module.enums.items()
                  if not name.startswith("__anon")},
        "records": records,
        "typedefs": {name: spell(td.type) for name, td in module.typedefs.items()},
        "constants": {c.name: c.value for c in constants.values()},
        "constant_types": {c.name: c.c_type for c in constants.values()},
        "omitted": omitted,
    }
    if since:  # only header sets with a history: api name -> the version that added it
        data["since"] = since
    return data


def manifest_json(data: dict[str, object]) -> str:
    return json.dumps(data, sort_keys=True, indent=1, ensure_ascii=True) + "\n"


def _py_name(name: str) -> str:
    name = name.split(" ", 1)[-1]
    return name + "_" if keyword.iskeyword(name) else name


def enums_module_source(binding_name: str, module: Module) -> str:
    """A Python module: IntEnums and enum typedef aliases (re-exporting the symbols module)."""
    lines = [
        f'"""Enums, constants and symbol table of the {binding_name} binding.',
        "",
        "Generated by ``python -m bindgen`` from the vendor headers; do not edit.",
        '"""',
        "",
        "from enum import IntEnum",
        "",
        "__all__ = []",
        "",
    ]
    for name, e in module.enums.items():
        if name.startswith("__anon") or not e.members:
            continue
        cls = _py_name(name)
        lines.append(f"class {cls}(IntEnum):")
        for member, value in e.members:
            lines.append(f"    {member} = {value}")
        lines.append("")
        lines.append(f"__all__.append({cls!r})")
        lines.append("")
    enum_classes = {n for n in module.enums if not n.startswith("__anon") and module.enums[n].members}
    for name, td in module.typedefs.items():
        if isinstance(td.type, Named) and td.type.name in enum_classes and name != _py_name(td.type.name):
            lines.append(f"{name} = {_py_name(td.type.name)}")
    lines.append("")
    lines.append("from .symbols import API_SYMBOLS, CONSTANTS  # noqa: E402,F401  (re-exported)")
    lines.append("")
    return "\n".join(lines)


def symbols_module_source(binding_name: str, functions: dict[str, Function],
                          constants: dict[str, Constant], since: dict[str, str] | None = None) -> str:
    """A small module (plain dicts, quick to import): constants and the api -> symbol table."""
    lines = [
        f'"""Constants and symbol table of the {binding_name} binding.',
        "",
        "Generated by ``python -m bindgen`` from the vendor headers; do not edit.",
        '"""',
        "",
        "# Object-like macros with a constant value: name -> value.",
        "CONSTANTS: dict[str, int | float | str] = {",
    ]
    for c in sorted(constants.values(), key=lambda c: c.name):
        lines.append(f"    {c.name!r}: {c.value!r},")
    lines.append("}")
    lines.append("")
    lines.append("# Documented API name -> the symbol the library exports.")
    lines.append("API_SYMBOLS: dict[str, str] = {")
    for api, fn in sorted(functions.items()):
        lines.append(f"    {api!r}: {fn.symbol!r},")
    lines.append("}")
    lines.append("")
    if since:
        lines.append("# Symbols newer than the oldest release of this major that bindgen knows:")
        lines.append("# symbol -> (major, minor) of the first release whose headers declare it.")
        lines.append("SINCE: dict[str, tuple[int, int]] = {")
        for api, version in sorted(since.items(), key=lambda kv: functions[kv[0]].symbol):
            major, minor = (int(x) for x in version.split(".")[:2])
            lines.append(f"    {functions[api].symbol!r}: ({major}, {minor}),")
        lines.append("}")
        lines.append("")
    return "\n".join(lines)


def package_init_source(binding_name: str, source: dict[str, object], abi_sha256: str,
                        fast_sha256: str | None = None) -> str:
    """The binding package's ``__init__``; ``abi_sha256`` is the sha256 of its ``_ffi.py``,
    ``fast_sha256`` (a binding with a compiled fast path) that of the extension's source."""
    vendor = source.get("vendor")
    version = source.get("version")
    fast_doc, fast_line, fast_all = "", "", ""
    if fast_sha256 is not None:
        fast_doc = ("\n``FAST_SHA256`` is the sha256 of the extension's source (``fast_source.json``): one built\n"
                    "from another (an older ``hot_methods.c``) returns another from ``_pgr_source_hash()``.")
        fast_line = f"\nFAST_SHA256 = {fast_sha256!r}"
        fast_all = ', "FAST_SHA256"'
    return f'''"""The {binding_name} binding ({vendor} {version}): generated by ``python -m bindgen``; do not edit.

``ffi`` (from ``_ffi``, imported on first use) is a cffi out-of-line ABI FFI:
``ffi.dlopen(path)`` gives the library.  ``enums`` holds the IntEnums; ``symbols`` holds
``CONSTANTS`` and ``API_SYMBOLS`` (plain dicts, quick to import); ``manifest()`` loads
``manifest.json``.  ``ABI_SHA256`` is the sha256 of ``_ffi.py``: a compiled fast-path
extension built from this binding returns the same from ``_pgr_abi_hash()``.{fast_doc}
"""

NAME = {binding_name!r}
VENDOR = {vendor!r}
VERSION = {version!r}
ABI_SHA256 = {abi_sha256!r}{fast_line}


def __getattr__(name):
    # The ABI module is imported when first asked for: the compiled fast path never needs it.
    if name == "ffi":
        from ._ffi import ffi

        globals()["ffi"] = ffi
        return ffi
    raise AttributeError(f"module {{__name__!r}} has no attribute {{name!r}}")


def manifest():
    """The binding's manifest (functions, enums, records, typedefs, constants)."""
    import json  # here, not at import: loading a binding must stay quick
    from pathlib import Path

    return json.loads(Path(__file__).with_name("manifest.json").read_text())


__all__ = ["ffi", "manifest", "NAME", "VENDOR", "VERSION", "ABI_SHA256"{fast_all}]
'''

