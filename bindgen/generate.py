"""Run the whole pipeline for one header set: preprocess -> parse -> select -> emit."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import emit, preprocess, select
from .headersets import HEADER_SETS, WHEELS, HeaderSet, history_roots, include_roots
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


def declared_symbols(hs: HeaderSet, roots: list[Path]) -> set[str]:
    """The function symbols the set's API headers declare under ``roots`` (one parse, no macros)."""
    module = parse(preprocess.preprocess(list(hs.headers), roots, hs.defines), roots)
    return {f.symbol for f in module.functions.values() if f.header in hs.api_headers}


def since_table(hs: HeaderSet, functions: dict[str, Function]) -> dict[str, str]:
    """api name -> the first version of ``hs.history`` (else ``hs.version``) declaring its symbol.

    Only functions newer than the oldest history version are listed: those are
    the ones a runtime of that major may lack.  A per-thread-stream variant
    (``X_ptsz``) is as old as ``X``.
    """
    if not hs.history:
        return {}
    declared = [(version, declared_symbols(hs, history_roots(hs, key))) for version, key in hs.history]
    since: dict[str, str] = {}
    for api, fn in functions.items():
        symbol = fn.symbol
        for suffix in hs.per_thread_suffixes:
            if api == symbol and symbol.endswith(suffix):
                symbol = symbol[: -len(suffix)]
        first = next((v for v, names in declared if symbol in names), hs.version)
        if first != hs.history[0][0]:
            since[api] = first
    return dict(sorted(since.items()))


_driver_irs: dict[str, tuple[Module, dict[str, Function]]] = {}


def driver_ir(runtime: str) -> tuple[Module, dict[str, Function]] | None:
    """The IR (module, functions) of the driver binding beside runtime binding ``runtime``
    (bindgen.fast.DRIVER_BINDINGS; None for HIP), from its pinned headers, parsed once per
    process: the compiled extension's calls straight to the driver take its structs."""
    from . import fast

    name = fast.DRIVER_BINDINGS.get(runtime)
    if name is None:
        return None
    if name not in _driver_irs:
        hs = HEADER_SETS[name]
        p = run_pipeline(list(hs.headers), include_roots(hs), hs.defines, hs.api_headers, hs.constant_prefixes,
                         hs.per_thread_define, hs.per_thread_suffixes)
        _driver_irs[name] = (p.module, p.functions)
    return _driver_irs[name]


def generate(hs: HeaderSet, override_include: Path | None = None,
             history_version: str | None = None) -> Generated:
    """Generate the binding of ``hs``; with ``history_version``, from that release of its
    history instead (in memory, for ``python -m bindgen diff cuda13@13.0 cuda13``)."""
    if history_version is not None:
        key = dict(hs.history).get(history_version)
        if key is None:
            raise ValueError(f"{hs.name} has no history version {history_version}; "
                             f"known: {[v for v, _ in hs.history]}")
        roots = history_roots(hs, key)
    else:
        roots = include_roots(hs, override_include)
    p = run_pipeline(list(hs.headers), roots, hs.defines, hs.api_headers, hs.constant_prefixes,
                     hs.per_thread_define, hs.per_thread_suffixes)
    module_name = f"pygraphrt._bindings.{hs.name}._ffi"
    ffi = emit.make_ffi(p.cdef, p.cdef_packed)
    since: dict[str, str] = {}
    if override_include is not None:
        packages = {"toolkit": str(override_include)}
    else:
        keys = ((dict(hs.history)[history_version],) + hs.packages[1:] if history_version
                else hs.packages)
        packages = {WHEELS[k].project: WHEELS[k].version for k in keys}
        if history_version is None:
            since = since_table(hs, p.functions)
    source: dict[str, object] = {"vendor": hs.vendor, "version": history_version or hs.version,
              "packages": packages, "headers": list(hs.headers), "library": hs.library,
              "defines": dict(sorted(hs.defines.items()))}
    if hs.history and override_include is None and history_version is None:
        source["history"] = {v: f"{WHEELS[k].project} {WHEELS[k].version}" for v, k in hs.history}
    data = emit.manifest(source, p.module, p.functions, p.constants, ffi, p.omitted, since)
    from . import fast

    ffi_text = emit.ffi_module_source(module_name, p.cdef, p.cdef_packed)
    abi = fast.abi_hash(ffi_text)
    src = None
    if hs.name in fast.FAST_BINDINGS and history_version is None and override_include is None:
        # The compiled fast path's source, committed like the rest, so that building it
        # (python -m bindgen build-fast, pip install) needs a C compiler but no headers.
        src = fast.fast_source(hs.name, p.module, p.functions, abi, driver_ir(hs.name))
    files = {
        "__init__.py": emit.package_init_source(hs.name, source, abi,
                                                fast.source_hash(src) if src is not None else None),
        "_ffi.py": ffi_text,
        "enums.py": emit.enums_module_source(hs.name, p.module),
        "symbols.py": emit.symbols_module_source(hs.name, p.functions, p.constants, since),
        "manifest.json": emit.manifest_json(data),
    }
    if src is not None:
        files[fast.SOURCE_FILE] = fast.source_json(src)
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


def fast_source_of(hs: HeaderSet):
    """The API-mode extension source of ``hs`` (:mod:`bindgen.fast`), tied by hash to the
    ABI module the same pipeline emits: the committed one (``bindgen --check`` proves it is
    what the pinned headers give), so no headers are needed."""
    from . import fast

    return fast.load_source(BINDINGS_DIR / hs.name / fast.SOURCE_FILE)
