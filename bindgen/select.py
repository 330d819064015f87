"""Stage 3: choose what a binding exposes.

* Functions: those declared in the set's API headers (the library's exports;
  inline helpers were already dropped by the parser).  Each records its
  documented ``api_name`` and the ``symbol`` the header's macros map it to
  (CUDA 12.9: ``cudaStreamGetCaptureInfo`` -> ``cudaStreamGetCaptureInfo_v2``;
  HIP: ``hipGetDeviceProperties`` -> ``hipGetDevicePropertiesR0600``).
* Per-thread-default-stream variants (``_ptsz``/``_ptds``/``_spt``) come from a
  second pass with the vendor's switch defined; they are added under their own
  names and never replace the default entry.
* Constants: object-like macros with the vendor's prefixes whose expansion is a
  constant expression, evaluated with C's typing rules.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from pycparser import c_ast, c_parser

from . import constexpr, preprocess
from .constexpr import NotConstant, Value
from .ir import Constant, Function, Module


def functions(module: Module, api_headers: tuple[str, ...], renames: dict[str, str]) -> dict[str, Function]:
    """The bound functions, keyed by api name, in declaration order."""
    result: dict[str, Function] = {}
    for fn in module.functions.values():
        if fn.header not in api_headers:
            continue
        api = renames.get(fn.symbol, fn.symbol)
        if api in result:
            raise ValueError(f"two symbols claim api name {api}: {result[api].symbol}, {fn.symbol}")
        result[api] = replace(fn, api_name=api)
    return result


def renames(macro_names: list[str], expansions: dict[str, str], symbols: set[str]) -> dict[str, str]:
    """Map symbol -> api name for macros that rename a declared function.

    A rename keeps the documented name as the symbol's stem (``X`` -> ``X_v2``,
    ``X`` -> ``XR0600``); other macros that merely alias a function are not
    renames.  The longest matching stem wins.
    """
    out: dict[str, str] = {}
    for name in sorted(macro_names, key=lambda n: (-len(n), n)):
        target = expansions.get(name, "")
        if (target != name and target.startswith(name) and target in symbols
                and name not in symbols):
            out.setdefault(target, name)
    return out


def per_thread_variants(base: dict[str, Function], variant_module: Module,
                        api_headers: tuple[str, ...], suffixes: tuple[str, ...]) -> dict[str, Function]:
    """Functions only the per-thread pass declares, named by their own symbol."""
    extra: dict[str, Function] = {}
    symbols = {f.symbol for f in base.values()}
    for fn in variant_module.functions.values():
        if fn.header in api_headers and fn.symbol.endswith(suffixes) and fn.symbol not in symbols:
            extra[fn.symbol] = replace(fn, api_name=fn.symbol)
    return extra


_ARITH_WORDS = {"unsigned", "signed", "int", "long", "short", "char", "float", "double", "_Bool"}


def constants(macro_defs: dict[str, str], expansions: dict[str, str], prefixes: tuple[str, ...],
              typedef_names: set[str], module: Module) -> dict[str, Constant]:
    """Evaluate the constant-valued macros whose names carry one of ``prefixes``."""
    enumerators = {name: Value(v, "int") for e in module.enums.values() for name, v in e.members}
    parser = c_parser.CParser()
    preamble = "".join(f"typedef int {t};\n" for t in sorted(typedef_names))
    result: dict[str, Constant] = {}
    for name in sorted(macro_defs):
        if not name.startswith(prefixes) or name not in expansions:
            continue
        text = expansions[name]
        if not text or text == name:
            continue
        # Pure identifiers are renames or enum aliases, not constants.
        if re.fullmatch(r"[A-Za-z_]\w*", text):
            if text in enumerators:
                result[name] = Constant(name, enumerators[text].value, "int")
            continue
        try:
            ast = parser.parse(preamble + f"void __pygraphrt_probe(void) {{ __pygraphrt_v = ({text}); }}\n")
        except Exception:
            continue
        expr = ast.ext[-1].body.block_items[0].rvalue
        const = _constant(name, expr, enumerators, typedef_names)
        if const is not None:
            result[name] = const
    return result


def _constant(name: str, expr: c_ast.Node, enumerators: dict[str, Value],
              typedef_names: set[str]) -> Constant | None:
    if isinstance(expr, c_ast.Constant) and expr.type == "string":
        return Constant(name, _c_string(expr.value), "const char *")
    c_type = None
    if isinstance(expr, c_ast.Cast):
        target = expr.to_type.type
        if isinstance(target, c_ast.TypeDecl) and isinstance(target.type, c_ast.IdentifierType):
            words = target.type.names
            if len(words) == 1 and words[0] in typedef_names:
                c_type, expr = words[0], expr.expr  # e.g. ((cudaStream_t)0x1)

    def lookup(ident: str) -> Value:
        if ident in enumerators:
            return enumerators[ident]
        raise NotConstant(ident)

    try:
        value = constexpr.evaluate(expr, lookup)
    except (NotConstant, KeyError, ZeroDivisionError):
        return None
    if isinstance(value.value, float):
        return Constant(name, value.value, c_type or value.ctype)
    return Constant(name, int(value.value), c_type or value.ctype)


def _c_string(literal: str) -> str:
    # pycparser keeps the quotes (and joins adjacent literals into one token).
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"', literal)
    raw = "".join(parts)
    return bytes(raw, "utf-8").decode("unicode_escape")


def collect(pre_args: tuple[list[str], list[Path], dict[str, str]], prefixes: tuple[str, ...]) -> tuple[dict[str, str], dict[str, str]]:
    """Macro definitions with the given prefixes and their full expansions."""
    headers, roots, defines = pre_args
    defs = {k: v for k, v in preprocess.macros(headers, roots, defines).items()
            if k.startswith(prefixes) and v}
    return defs, preprocess.expand(sorted(defs), headers, roots, defines)

