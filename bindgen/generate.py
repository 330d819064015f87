"""Run the whole pipeline for one header set: preprocess -> parse -> select -> emit."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import emit, preprocess, select
from .headersets import HEADER_SETS, WHEELS, HeaderSet, include_roots
from .ir import Constant, Function, Module
from .parse import parse

BINDINGS_DIR = Path(__file__).resolve().parent.parent / "pygraphrt" / "_bindings"


@dataclass
class Generated:
    name: str
    files: dict[str, str]  # file name inside the binding package -> text
    manifest: dict[str, object]


@dataclass
class Pipeline:
    """The intermediate results of one run, for tests and tools."""

    module: Module
    functions: dict[str, Function]
    constants: dict[str, Constant]
    cdef: str
    cdef_packed: str
    omitted: dict[str, str]


def run_pipeline(headers: list[str], roots: list[Path], defines: dict[str, str],
                 api_headers: tuple[str, ...], constant_prefixes: tuple[str, ...],
                 per_thread_define: str | None = None,
                 per_thread_suffixes: tuple[str, ...] = ()) -> Pipeline:
    """preprocess -> parse -> select -> cdef, for any header folder."""
    pre = preprocess.preprocess(headers, roots, defines)
    module = parse(pre, roots)
    macro_defs, expansions = select.collect((headers, roots, defines), constant_prefixes)
    symbols = {f.symbol for f in module.functions.values()}
    renames = select.renames(list(macro_defs), expansions, symbols)
    functions = select.functions(module, api_headers, renames)
    if per_thread_define:
        pt_defines = dict(defines, **{per_thread_define: ""})
        pt_module = parse(preprocess.preprocess(headers, roots, pt_defines), roots)
        for api, fn in select.per_thread_variants(functions, pt_module, api_headers,
                                                  per_thread_suffixes).items():
            functions[api] = fn
            module.functions.setdefault(fn.symbol, fn)
    constants = select.constants(macro_defs, expansions, constant_prefixes,
                                 set(module.typedefs), module)
    cdef, cdef_packed, omitted = emit.build_cdef(module, functions)
    return Pipeline(module, functions, constants, cdef, cdef_packed, omitted)


def generate(hs: HeaderSet, override_include: Path | None = None) -> Generated:
    roots = include_roots(hs, override_include)
    p = run_pipeline(list(hs.headers), roots, hs.defines, hs.api_headers, hs.constant_prefixes,
                     hs.per_thread_define, hs.per_thread_suffixes)
    module_name = f"pygraphrt._bindings.{hs.name}._ffi"
    ffi = emit.make_ffi(p.cdef, p.cdef_packed)
    if override_include is None:
        packages = {pkg: WHEELS[pkg].version for pkg in hs.packages}
    else:
        packages = {"toolkit": str(override_include)}
    source: dict[str, object] = {"vendor": hs.vendor, "version": hs.version, "packages": packages,
              "headers": list(hs.headers), "library": hs.library,
              "defines": dict(sorted(hs.defines.items()))}
    data = emit.manifest(source, p.module, p.functions, p.constants, ffi, p.omitted)
    files = {
        "__init__.py": emit.package_init_source(hs.name, source),
        "_ffi.py": emit.ffi_module_source(module_name, p.cdef, p.cdef_packed),
        "enums.py": emit.enums_module_source(hs.name, p.module),
        "symbols.py": emit.symbols_module_source(hs.name, p.functions, p.constants),
        "manifest.json": emit.manifest_json(data),
    }
    return Generated(hs.name, files, data)


def write(gen: Generated, out_dir: Path = BINDINGS_DIR) -> list[Path]:
    target = out_dir / gen.name
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for fname, text in gen.files.items():
        path = target / fname
        path.write_text(text)
        written.append(path)
    return written


def compare(gen: Generated, out_dir: Path = BINDINGS_DIR) -> list[str]:
    """File names whose committed bytes differ from ``gen`` (missing files count)."""
    diffs = []
    for fname, text in gen.files.items():
        path = out_dir / gen.name / fname
        if not path.exists() or path.read_bytes() != text.encode():
            diffs.append(str(path))
    return diffs


def all_sets() -> list[HeaderSet]:
    return list(HEADER_SETS.values())
