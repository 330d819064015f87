"""The API-mode emitter (bindgen.fast) alone, on the golden sample header.

The emitted C is checked against ``golden/sample.fast.c``; then it is compiled
(no vendor header: the declarations come from the cdef) and run against a small
stand-in library that exports some of the sample's functions: calls go through
pointers bound with dlsym, a function the library lacks fails the lookup like
ABI mode (ffi.error, never a call through NULL), and every record's layout
equals the ABI module's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bindgen import emit, fast

from .test_golden import GOLDEN, _check_golden, _pipeline

needs_cc = pytest.mark.skipif(fast.have_compiler() is None, reason="no C compiler")

# The stand-in library: smpOld and smpLaunch_ptsz are deliberately absent.
SAMPLE_LIB = r"""
#include <stdarg.h>
#include <stddef.h>
typedef struct smpHandle_st *smpHandle_t;
typedef void (*smpCallback_t)(void *user, int status);
int smpOpen(smpHandle_t *out, const char *name, size_t len) { *out = (smpHandle_t)(size_t)(len + 7); return name[0]; }
int smpOpen_v2(smpHandle_t *out, const char *name, size_t len, unsigned flags) {
    *out = (smpHandle_t)(size_t)(len + flags); return name[0]; }
int smpLaunch(smpHandle_t h, const void *records, int count, ...) {
    va_list ap; int s = count; va_start(ap, count);
    for (int i = 0; i < count; i++) s += va_arg(ap, int);
    va_end(ap); (void)h; (void)records; return s; }
int smpSetCallback(smpHandle_t h, smpCallback_t cb, void *user) { cb(user, (int)(size_t)h); return 0; }
int smpFill(int values[4]) { for (int i = 0; i < 4; i++) values[i] = 10 * i; return 4; }
"""


def _source() -> fast.FastSource:
    p = _pipeline()
    abi = emit.ffi_module_source("golden_ffi", p.cdef, p.cdef_packed)
    return fast.fast_source("sample", p.module, p.functions, fast.abi_hash(abi))


def test_fast_c_source_golden():
    src = _source()
    _check_golden("sample.fast.c", src.c_source)
    assert src.name == "pygraphrt._fastlib._sample"
    # One pointer and one redirecting macro per exported symbol, variadics included.
    for sym in ("smpOpen", "smpOpen_v2", "smpOld", "smpLaunch", "smpLaunch_ptsz", "smpFill"):
        assert f"#define {sym} (*_pgr_p_{sym})" in src.c_source
    assert "static int (*_pgr_p_smpLaunch)(smpHandle_t, const smpRecord_t *, int, ...);" in src.c_source
    assert "#pragma pack(push, 1)\nstruct smpPacked {" in src.c_source
    # The API cdef is the ABI cdef plus the binding helpers.
    p = _pipeline()
    assert src.cdef == p.cdef + fast.HELPERS_CDEF and src.cdef_packed == p.cdef_packed


def test_build_cdef_parts_join_to_the_abi_cdef():
    p = _pipeline()
    types, decls, packed, omitted = emit.build_cdef_parts(p.module, p.functions)
    assert "\n".join(types + decls) + "\n" == p.cdef and packed == p.cdef_packed
    assert decls and all(d.endswith(");") for d in decls) and omitted == p.omitted


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    if fast.have_compiler() is None:
        pytest.skip("no C compiler")
    tmp = tmp_path_factory.mktemp("fastsample")
    src = _source()
    src.name = "fast_sample"  # a top-level module for this test
    ext = fast.compile_source(src, tmp / "ext")
    lib = tmp / "libsample.so"
    (tmp / "sample_lib.c").write_text(SAMPLE_LIB)
    subprocess.run([shutil.which("cc") or "cc", "-shared", "-fPIC", "-o", str(lib), str(tmp / "sample_lib.c")],
                   check=True)
    return ext, lib


def _run(compiled, code: str) -> str:
    ext, lib = compiled
    repo = Path(__file__).resolve().parents[2]
    prog = textwrap.dedent(f"""
        import sys; sys.path[:0] = [{str(ext.parent)!r}, {str(repo)!r}]
        import ctypes, fast_sample
        from pygraphrt._fast import FastLib
        ffi, ext = fast_sample.ffi, fast_sample.lib
        handle = ctypes.CDLL({str(lib)!r})._handle
        bound = ext._pgr_bind(ffi.cast("void *", handle))
        missing = frozenset(ffi.string(ext._pgr_name(i)).decode() for i in range(ext._pgr_count())
                            if not ext._pgr_bound(i))
        lib = FastLib(ext, {str(lib)!r}, missing)
    """) + textwrap.dedent(code)
    r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


@needs_cc
def test_compiled_calls_go_through_the_bound_pointers(compiled):
    out = _run(compiled, """
        print(bound, ext._pgr_count(), sorted(missing))
        h = ffi.new("smpHandle_t *")
        print(lib.smpOpen(h, b"A", 5), int(ffi.cast("uintptr_t", h[0])))
        print(lib.smpOpen_v2(h, b"B", 5, 3), int(ffi.cast("uintptr_t", h[0])))
        vals = ffi.new("int[4]")
        print(lib.smpFill(vals), list(vals))
        print(lib.smpLaunch(ffi.NULL, ffi.NULL, 3, ffi.cast("int", 1), ffi.cast("int", 2), ffi.cast("int", 3)))
        seen = []
        cb = ffi.callback("smpCallback_t", lambda user, status: seen.append(status))
        lib.smpSetCallback(ffi.cast("smpHandle_t", 42), cb, ffi.NULL)
        print(seen, lib.smpKindD, lib.smpModeX, len(ffi.typeof(lib.smpOpen_v2).args))
    """)
    assert out.splitlines() == ["5 7 ['smpLaunch_ptsz', 'smpOld']", "65 12", "66 8", "4 [0, 10, 20, 30]",
                                "9", "[42] 24 -1 4"]


@needs_cc
def test_open_gives_the_loaded_librarys_handle_and_next_unbound_walks_the_missing(compiled):
    """What pygraphrt._fast binds with: ``_pgr_open(path)`` is dlopen's handle of the library
    (the one ctypes has), NULL for no library; ``_pgr_next_unbound`` lists what _pgr_bound says."""
    _ext, path = compiled
    out = _run(compiled, f"""
        print(ext._pgr_open({str(path).encode()!r}) == ffi.cast("void *", handle),
              ext._pgr_open(b"/nonexistent/lib.so") == ffi.NULL)
        walk, i = [], ext._pgr_next_unbound(0)
        while i >= 0:
            walk.append(i)
            i = ext._pgr_next_unbound(i + 1)
        print(walk == [i for i in range(ext._pgr_count()) if not ext._pgr_bound(i)], len(walk),
              ext._pgr_next_unbound(-1), ext._pgr_next_unbound(ext._pgr_count()))
        ext._pgr_bind(ffi.NULL)
        print(ext._pgr_next_unbound(0), ext._pgr_next_unbound(ext._pgr_count() - 1))
    """)
    assert out.splitlines() == ["True True", "True 2 -1 -1", f"0 {7 - 1}"]


@needs_cc
def test_a_missing_symbol_fails_the_lookup_not_the_process(compiled):
    out = _run(compiled, """
        for name in ("smpOld", "smpLaunch_ptsz"):
            try:
                getattr(lib, name)
            except ffi.error as e:
                print("ffi.error", name in str(e))
        try:
            hasattr(lib, "smpOld")
        except ffi.error:
            print(True, hasattr(lib, "smpOpen"), "smpOld" in dir(lib))
        try:
            lib.smpOpen = None
        except AttributeError:
            print("read-only")
    """)
    assert out.splitlines() == ["ffi.error True", "ffi.error True", "True True False", "read-only"]


@needs_cc
def test_layouts_equal_the_abi_module(compiled):
    p = _pipeline()
    abi = emit.make_ffi(p.cdef, p.cdef_packed)
    manifest = emit.manifest({}, p.module, p.functions, p.constants, abi, p.omitted)
    rows = []
    for rname, rec in manifest["records"].items():
        rows.append((rname, None, rec["size"], rec["align"]))
        for fname, _t, offset in rec["fields"]:
            if offset is not None and "{" not in _t:
                rows.append((rname, fname, offset, None))
    out = _run(compiled, f"""
        rows = {rows!r}
        bad = []
        for rname, fname, a, b in rows:
            if fname is None:
                got = (ffi.sizeof(rname), ffi.alignof(rname))
                if got != (a, b): bad.append((rname, got, (a, b)))
            elif ffi.offsetof(rname, *fname.split(".")) != a:
                bad.append((rname, fname))
        print(len(rows), bad)
    """)
    assert out.split(" ", 1)[1].strip() == "[]" and int(out.split()[0]) > 20


def test_committed_fast_sources_build_without_headers(tmp_path, monkeypatch):
    """The fast path's sources are committed (``fast_source.json``, under ``bindgen --check``):
    building needs a C compiler, not the vendor headers.  With an empty header cache, each
    source still loads, is tied to its committed ABI module, and ``build-fast`` does not give
    up for want of headers."""
    from bindgen.generate import BINDINGS_DIR, fast_source_of
    from bindgen.headersets import HEADER_SETS

    monkeypatch.setenv("PYGRAPHRT_HEADER_CACHE", str(tmp_path / "no-headers"))
    for name in fast.FAST_BINDINGS:
        src = fast_source_of(HEADER_SETS[name])
        abi = (BINDINGS_DIR / name / "_ffi.py").read_bytes()
        assert src.name == fast.module_name(name)
        assert fast.abi_hash(abi) in src.c_source, f"{name}: the source is not tied to the committed _ffi.py"
        assert "_pgr_bind" in src.cdef and src.c_source.count("dlsym") >= 1
    if fast.have_compiler() is not None:  # up to date after scripts/test's build, else it compiles
        r = subprocess.run([sys.executable, "-m", "bindgen", "build-fast", "cuda13"], capture_output=True,
                           text=True, timeout=600, env={**os.environ, "PYGRAPHRT_HEADER_CACHE": str(tmp_path / "none")})
        assert r.returncode == 0 and "skipped" not in r.stderr, r.stdout + r.stderr
        assert "cuda13: " in r.stdout and ("up to date" in r.stdout or "built" in r.stdout), r.stdout


def test_hot_methods_module_where_the_binding_has_their_functions():
    """The runtime bindings' sources carry the hot methods' module (bindgen/hot_methods.c, after
    the calls generated from the IR, each cast to the function's prototype); the sample, which
    has none of their functions, does not."""
    from bindgen.generate import fast_source_of
    from bindgen.headersets import HEADER_SETS

    assert "_PGR_HOT_INIT" not in _source().c_source
    body = fast.HOT_METHODS_C.read_text().rstrip("\n")
    for name, prefix, memset_struct, kernel_struct in (
            ("cuda13", "cuda", "struct cudaMemsetParams", "struct cudaKernelNodeParams"),
            ("hip7", "hip", "hipMemsetParams", "hipKernelNodeParams")):
        c = fast_source_of(HEADER_SETS[name]).c_source
        assert f"#define _PGR_HOT_INIT PyInit__{name}_hot" in c and c.endswith(body)
        assert f"return (int){prefix}GraphLaunch(({prefix}GraphExec_t)exec, ({prefix}Stream_t)stream);" in c
        assert f"    {memset_struct} params;\n" in c and f"    {kernel_struct} params;\n" in c
        assert "    params.kernelParams = argv;\n" in c and "    params.blockDim.z = dims[5];\n" in c
        assert (f'static const char *const _pgr_hot_symbols[5] = {{"{prefix}GraphLaunch", '
                f'"{prefix}GraphAddEmptyNode", "{prefix}GraphAddMemsetNode", "{prefix}GraphAddKernelNode", '
                f'"{prefix}GraphAddMemcpyNode1D"}};') in c
        # the copy kind is MemcpyDefault's value in the binding's enum (4 in both vendors' headers)
        assert f"(size_t)count, ({'enum ' if prefix == 'cuda' else ''}{prefix}MemcpyKind)4);" in c


def test_hot_calls_leave_out_what_the_binding_lacks():
    """A method whose function the binding lacks, or whose parameter struct is opaque there, gets
    no symbol (pygraphrt then keeps its Python method) and a call that is never made."""
    from bindgen.ir import Function, Module, Named, Param, Pointer, Record

    def fn(api, *types):
        return Function(api, api, Named("int"), tuple(Param(f"p{i}", t) for i, t in enumerate(types)))

    node, graph = Named("cudaGraphNode_t"), Named("cudaGraph_t")
    functions = {
        "cudaGraphLaunch": fn("cudaGraphLaunch", Named("cudaGraphExec_t"), Named("cudaStream_t")),
        "cudaGraphAddMemsetNode": fn("cudaGraphAddMemsetNode", Pointer(node), graph, Pointer(node, const=False),
                                     Named("size_t"), Pointer(Named("struct cudaMemsetParams", const=True))),
    }
    functions["cudaGraphAddKernelNode"] = fn("cudaGraphAddKernelNode", Pointer(node), graph,
                                             Pointer(node, const=False), Named("size_t"),
                                             Pointer(Named("struct cudaKernelNodeParams", const=True)))
    module = Module(records={"struct cudaMemsetParams": Record("struct cudaMemsetParams", "struct", None),
                             "struct cudaKernelNodeParams": Record("struct cudaKernelNodeParams", "struct", None)})
    c = "\n".join(fast._hot_calls("cuda13", functions, module))
    assert 'static const char *const _pgr_hot_symbols[5] = {"cudaGraphLaunch", NULL, NULL, NULL, NULL};' in c
    assert "case 0: return _pgr_p_cudaGraphLaunch != NULL;" in c and "case 1" not in c and "case 2" not in c
    assert "case 3" not in c and "case 4" not in c
    assert c.count("return -1;") == 5 and "params" not in c


def test_build_refuses_hot_methods_edited_since_generation(tmp_path, monkeypatch):
    """``build-fast`` compiles the committed source, which embeds ``bindgen/hot_methods.c`` as
    ``bindgen generate`` last saw it: an edit made since would silently not be built, so the
    build refuses, naming the command that brings the source up to date."""
    from bindgen import __main__ as cli
    from bindgen.generate import fast_source_of
    from bindgen.headersets import HEADER_SETS

    src = fast_source_of(HEADER_SETS["cuda13"])
    assert not fast.stale_hot_methods(src)  # the committed source embeds this checkout's file
    edited = tmp_path / "hot_methods.c"
    edited.write_text(fast.HOT_METHODS_C.read_text().replace("_pgr_add_made", "_pgr_add_made_v2"))
    monkeypatch.setattr(fast, "HOT_METHODS_C", edited)
    assert fast.stale_hot_methods(src)
    assert not fast.stale_hot_methods(_source())  # the sample carries no hot methods
    with pytest.raises(RuntimeError, match="hot_methods.c has changed since cuda13's fast_source.json.*"
                                           "python -m bindgen generate"):
        cli._build_one("cuda13", None)
    monkeypatch.setattr(fast, "HOT_METHODS_C", tmp_path / "absent.c")  # an installed tree without bindgen's C
    assert not fast.stale_hot_methods(src)


def test_driver_struct_flattens_what_the_driver_ir_lays_out():
    """``driver_struct``: the struct a driver function takes by pointer, through its typedefs,
    each field a scalar (as spelled after typedefs) or ``void *``; None for what it cannot
    flatten -- an array or nested record field, a bit field, an opaque or packed struct, a
    parameter that is not a pointer."""
    from bindgen.ir import Array, Field, Function, Module, Named, Param, Pointer, Record, Typedef

    def fn(param_type):
        return Function("drvAdd", "drvAdd_v2", Named("int"), (Param("out", Pointer(Named("void"))),
                                                              Param("p", param_type)))

    def module(*fields, packed=None):
        return Module(records={"struct P_st": Record("struct P_st", "struct", tuple(fields), packed=packed)},
                      typedefs={"P": Typedef("P", Named("struct P_st")), "dptr": Typedef("dptr", Named("u64")),
                                "u64": Typedef("u64", Named("unsigned long long")),
                                "handle": Typedef("handle", Pointer(Named("struct H_st")))})

    good = module(Field("dst", Named("dptr")), Field("n", Named("size_t")), Field("h", Named("handle")),
                  Field("argv", Pointer(Pointer(Named("void")))))
    st = fast.driver_struct(fn(Pointer(Named("P", const=True))), 1, good)
    assert st is not None and st.c_name == "_pgr_drv_drvAdd_v2"
    assert st.declaration() == ["struct _pgr_drv_drvAdd_v2 {", "    unsigned long long dst;", "    size_t n;",
                                "    void *h;", "    void *argv;", "};"]
    assert fast.driver_struct(fn(Named("P")), 1, good) is None  # by value
    assert fast.driver_struct(fn(Pointer(Named("P"))), 2, good) is None  # no such parameter
    for bad in (module(Field("a", Array(Named("int"), 4))), module(Field("r", Named("struct Q_st"))),
                module(Field("b", Named("unsigned int"), bit_width=3)), module(Field("x", Named("int")), packed=1)):
        assert fast.driver_struct(fn(Pointer(Named("P"))), 1, bad) is None


def test_direct_adds_take_the_driver_bindings_layout():
    """The CUDA extensions' driver structs (the memset and kernel adds straight to the driver)
    have the layout of the driver ABI binding's own types -- each field at its offset, the same
    size -- and the adds fill them by the header's field names; HIP has none."""
    import importlib
    import re

    import cffi

    from bindgen.generate import fast_source_of
    from bindgen.headersets import HEADER_SETS

    for name, drv in fast.DRIVER_BINDINGS.items():
        c = fast_source_of(HEADER_SETS[name]).c_source
        dffi = importlib.import_module(f"pygraphrt._bindings.{drv}._ffi").ffi
        for c_name, typename in (("_pgr_drv_cuGraphAddMemsetNode", "CUDA_MEMSET_NODE_PARAMS"),
                                 ("_pgr_drv_cuGraphAddKernelNode_v2", "CUDA_KERNEL_NODE_PARAMS")):
            decl = re.search(r"struct %s \{.*?\};" % c_name, c, re.S)
            assert decl is not None, (name, c_name)
            f = cffi.FFI()
            f.cdef(decl.group(0))
            fields = [n for n, _ in f.typeof(f"struct {c_name}").fields]
            assert fields == [n for n, _ in dffi.typeof(typename).fields], (name, typename)
            assert f.sizeof(f"struct {c_name}") == dffi.sizeof(typename)
            assert [f.offsetof(f"struct {c_name}", n) for n in fields] == [dffi.offsetof(typename, n) for n in fields]
            assert f"        struct {c_name} dp;\n" in c
        assert "        dp.kern = func;\n" in c and "        dp.ctx = NULL;\n" in c and "        dp.dst = (uintptr_t)dst;\n" in c
    for name in ("hip6", "hip7"):
        assert "_pgr_drv_" not in fast_source_of(HEADER_SETS[name]).c_source


def test_source_hash_covers_the_whole_source_but_itself():
    """``_pgr_source_hash()`` returns the sha256 of the cdefs and the C with its own value left
    out: what generate writes as the package's FAST_SHA256, and it changes with any line of C."""
    import hashlib

    src = _source()
    digest = fast.source_hash(src)
    unstamped = src.c_source.replace(digest, fast._SOURCE_HASH_SLOT, 1)
    assert hashlib.sha256("\0".join([src.cdef, src.cdef_packed, unstamped]).encode()).hexdigest() == digest
    assert fast.source_hash(_source()) == digest  # (the same IR: the same source, the same hash)
    other = fast.FastSource(src.name, src.cdef, src.cdef_packed, unstamped.replace("return -1;", "return -2;", 1))
    assert hashlib.sha256("\0".join([other.cdef, other.cdef_packed, other.c_source]).encode()).hexdigest() != digest
    with pytest.raises(ValueError, match="no _pgr_source_hash"):
        fast.source_hash(fast.FastSource(src.name, src.cdef, src.cdef_packed, "int x;"))


def test_build_fast_takes_binding_names_after_its_options(monkeypatch):
    """``python -m bindgen build-fast -j 6 cuda13`` builds cuda13 with six jobs: binding names may
    follow the options (a GPU run script once failed with 'unrecognized arguments: cuda13')."""
    import bindgen.__main__ as cli

    seen = []
    monkeypatch.setattr(cli, "_build_fast", lambda names, jobs, if_possible, keep: seen.append((names, jobs)) or 0)
    for argv in (["build-fast", "-j", "6", "cuda13"], ["build-fast", "cuda13", "-j", "6"]):
        assert cli.main(argv) == 0
    assert seen == [(["cuda13"], 6), (["cuda13"], 6)]
