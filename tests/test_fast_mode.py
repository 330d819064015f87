"""The compiled fast path (PYGRAPHRT_FAST) against the fake libcudart: selection, reporting,
refusals, and the same behaviour as ABI mode -- results, errors and missing functions.

The whole CPU suite also runs with PYGRAPHRT_FAST=1 (scripts/test); these tests pin what
differs between the modes.  Where the extension is not built they skip, unless
PYGRAPHRT_REQUIRE_FAST=1 (scripts/test sets it after ``python -m bindgen build-fast``).
"""

from __future__ import annotations

import os

import pytest

from pygraphrt import _fast, errors

from .test_cuda13x import build_fake_cudart, run_fake

# the fake libcudart is compiled against the pinned CUDA 13.5 headers (as in test_cuda13x)
pytestmark = pytest.mark.headers

BUILT = _fast.extension_path("cuda13") is not None
if not BUILT and os.environ.get("PYGRAPHRT_REQUIRE_FAST") == "1":
    raise RuntimeError("PYGRAPHRT_REQUIRE_FAST=1 but the cuda13 fast path is not built "
                       "(python -m bindgen build-fast)")
needs_fast = pytest.mark.skipif(not BUILT, reason="the fast path is not built (python -m bindgen build-fast)")


@pytest.fixture(scope="module")
def fake_cudart(tmp_path_factory):
    return build_fake_cudart(tmp_path_factory.mktemp("fakecudart") / "libcudart.so.13")


def run_mode(lib, mode: str, code: str) -> str:
    old = os.environ.get("PYGRAPHRT_FAST")
    os.environ["PYGRAPHRT_FAST"] = mode
    try:
        return run_fake(lib, code)
    finally:
        if old is None:
            del os.environ["PYGRAPHRT_FAST"]
        else:
            os.environ["PYGRAPHRT_FAST"] = old


SAME_IN_BOTH = """
    import pygraphrt as rt
    from pygraphrt import errors, lowlevel
    s = rt.Stream()
    g = rt.Graph()
    e = g.add_empty()
    m = e.memset(a, 7, 16)
    exe = g.instantiate()
    exe.launch(s); s.synchronize()
    print(buf.raw[:16] == b"\\x07" * 16, s.is_capturing, len(g.nodes()), m.params["value"])
    more = g.add_nodes([("empty", {}, [e]), ("memset", {"dst": a + 32, "value": 5, "count": 8}, [0, m])])
    print([n.type.name for n in more], len(g.nodes()))
    try:
        rt.Device(0).graph_mem_trim()       # the fake does not export cudaDeviceGraphMemTrim
    except errors.NotSupported as exc:
        print(type(exc).__name__, exc.api, "not exported" in str(exc))
    try:
        g.add_memset(a, 1, 16, element_size=3)
    except errors.InvalidValue as exc:
        print(type(exc).__name__)
    try:
        exe.launch(42)
    except errors.InvalidValue as exc:
        print(type(exc).__name__, exc.detail)
    exe.close()
    try:
        exe.launch(s)
    except errors.InvalidResourceHandle as exc:
        print(type(exc).__name__)
    try:
        lowlevel.lib.cudaDeviceGraphMemTrim
    except lowlevel.ffi.error as exc:
        print(type(exc).__name__, str(exc).replace(rt.backend().library_path, "LIB"))
    print(hasattr(lowlevel.lib, "cudaGraphLaunch"))
    print(rt.backend().ffi_mode.split()[0])
"""


@needs_fast
def test_both_modes_behave_the_same(fake_cudart):
    abi = run_mode(fake_cudart, "0", SAME_IN_BOTH).splitlines()
    api = run_mode(fake_cudart, "1", SAME_IN_BOTH).splitlines()
    assert abi[-1] == "abi" and api[-1] == "api"
    assert abi[:-1] == api[:-1]
    assert api[0] == "True False 2 7"
    assert api[1] == "['EMPTY', 'MEMSET'] 4"
    assert api[2] == "NotSupported cudaDeviceGraphMemTrim True"
    assert api[-3] == ("error symbol 'cudaDeviceGraphMemTrim' not found in library 'LIB': LIB: "
                       "undefined symbol: cudaDeviceGraphMemTrim")


@needs_fast
def test_auto_uses_the_extension_and_info_says_so(fake_cudart):
    out = run_mode(fake_cudart, "auto", """
        import io
        from pygraphrt.__main__ import info
        f = io.StringIO(); info(f)
        print([l.strip() for l in f.getvalue().splitlines() if "call path" in l][0])
    """)
    assert out.startswith("call path: api (compiled: _cuda13.")


def test_mode_zero_and_a_bad_value(fake_cudart):
    out = run_mode(fake_cudart, "0", "import pygraphrt as rt; print(rt.backend().ffi_mode)")
    assert out.strip() == "abi (PYGRAPHRT_FAST=0)"
    out = run_mode(fake_cudart, "fast", """
        import pygraphrt as rt
        try:
            rt.Stream()
        except rt.errors.BackendError as exc:
            print(exc)
    """)
    assert "PYGRAPHRT_FAST='fast': use 0, 1 or auto" in out


def test_required_but_not_built_refuses_and_auto_falls_back(monkeypatch, fake_cudart):
    # nvrtc13 never has a fast path: what a binding without a built extension does.  (In a
    # checkout the message says how to build it; in an installed package, what its build did.)
    monkeypatch.setenv("PYGRAPHRT_FAST", "1")
    with pytest.raises(errors.BackendError, match="PYGRAPHRT_FAST=1 but .*(build-fast|in this install)"):
        _fast.open_binding("nvrtc13", str(fake_cudart))
    monkeypatch.setenv("PYGRAPHRT_FAST", "auto")
    ffi, lib, mode = _fast.open_binding("nvrtc13", str(fake_cudart))
    assert mode.startswith("abi (no compiled extension for binding nvrtc13")


def _refused_as_stale(monkeypatch, lib, says: str) -> None:
    """auto falls back to ABI mode saying ``says``; PYGRAPHRT_FAST=1 refuses, naming the rebuild."""
    monkeypatch.setenv("PYGRAPHRT_FAST", "auto")
    _ffi, _lib, mode = _fast.open_binding("cuda13", str(lib))
    assert mode.startswith("abi (") and says in mode, mode
    monkeypatch.setenv("PYGRAPHRT_FAST", "1")
    with pytest.raises(errors.BackendError, match="stale.*build-fast"):
        _fast.open_binding("cuda13", str(lib))


@needs_fast
def test_a_stale_extension_is_not_used(monkeypatch, fake_cudart):
    import importlib

    monkeypatch.setattr(importlib.import_module("pygraphrt._bindings.cuda13"), "ABI_SHA256", "0" * 64)
    _refused_as_stale(monkeypatch, fake_cudart, "built from another version of binding cuda13 (stale)")


@needs_fast
def test_an_extension_built_from_another_source_is_stale(monkeypatch, fake_cudart):
    """The same ABI module but another fast source (an older hot_methods.c: other C methods)."""
    import importlib

    monkeypatch.setattr(importlib.import_module("pygraphrt._bindings.cuda13"), "FAST_SHA256", "0" * 64)
    _refused_as_stale(monkeypatch, fake_cudart, "built from another version of its source")


@needs_fast
def test_the_committed_fast_source_is_what_the_package_expects():
    """FAST_SHA256 in each binding package is the hash of its committed fast_source.json, and
    the built extension returns it."""
    import importlib

    from bindgen import fast
    from bindgen.generate import BINDINGS_DIR

    for binding in fast.FAST_BINDINGS:
        expected = importlib.import_module(f"pygraphrt._bindings.{binding}").FAST_SHA256
        assert fast.source_hash(fast.load_source(BINDINGS_DIR / binding / fast.SOURCE_FILE)) == expected
        ext = importlib.import_module(f"pygraphrt._fastlib._{binding}")
        assert ext.ffi.string(ext.lib._pgr_source_hash()).decode() == expected


@needs_fast
def test_an_extension_built_before_pgr_open_is_stale(monkeypatch, fake_cudart):
    """An extension from an older pygraphrt (same ABI module, no ``_pgr_open``) is refused as
    stale, naming the rebuild, rather than failing with an AttributeError."""
    import importlib
    import types

    real = importlib.import_module("pygraphrt._fastlib._cuda13")
    digest = real.ffi.new("char[]", importlib.import_module("pygraphrt._bindings.cuda13").ABI_SHA256.encode())
    older = types.SimpleNamespace(__name__=real.__name__, __file__=real.__file__, ffi=real.ffi,
                                  lib=types.SimpleNamespace(_pgr_abi_hash=lambda: digest))
    import_module = importlib.import_module
    monkeypatch.setattr(importlib, "import_module",
                        lambda name, *a: older if name == real.__name__ else import_module(name, *a))
    _refused_as_stale(monkeypatch, fake_cudart, "older pygraphrt (no _pgr_open) (stale)")


@needs_fast
def test_fast_lib_binds_to_the_chosen_library(monkeypatch, fake_cudart):
    monkeypatch.setenv("PYGRAPHRT_FAST", "1")
    ffi, lib, mode = _fast.open_binding("cuda13", str(fake_cudart))
    v = ffi.new("int *")
    assert lib.cudaRuntimeGetVersion(v) == 0 and v[0] == 13050
    assert lib.cudaSuccess == 0 and "cudaGraphLaunch" in dir(lib)
    with pytest.raises(ffi.error, match="cudaDeviceGraphMemTrim"):
        lib.cudaDeviceGraphMemTrim
    assert lib.cudaGraphLaunch is lib.cudaGraphLaunch  # cached after the first lookup


IS_CAPTURING = """
    import pygraphrt as rt
    from pygraphrt import errors, lowlevel
    s = rt.Stream()
    print(s.is_capturing)
    with s.capture():
        print(s.is_capturing)
    print(s.is_capturing)
    legacy = rt.Stream._adopt(lowlevel.ffi.NULL, False)  # the fake refuses a NULL stream
    try:
        legacy.is_capturing
    except errors.GraphRTError as exc:
        print(type(exc).__name__, exc.name)
    s.close()
    try:
        s.is_capturing
    except errors.InvalidResourceHandle as exc:
        print(type(exc).__name__)
    print(rt.backend().ffi_mode.split()[0], s._capture_status_fn is not None)
"""


@needs_fast
def test_is_capturing_one_argument_helper(fake_cudart):
    """The compiled ``_pgr_capture_status`` (status or minus the error) answers as ABI mode does."""
    abi = run_mode(fake_cudart, "0", IS_CAPTURING).splitlines()
    api = run_mode(fake_cudart, "1", IS_CAPTURING).splitlines()
    assert abi[:-1] == api[:-1] == ["False", "True", "False",
                                    "StreamCaptureUnsupported cudaErrorStreamCaptureUnsupported",
                                    "InvalidResourceHandle"]
    assert abi[-1] == "abi False" and api[-1] == "api True"


BULK = """
    import pygraphrt as rt
    from pygraphrt import errors
    g = rt.Graph()
    root = g.add_empty()
    from pygraphrt import lowlevel
    from pygraphrt._handles import Owned
    buf = rt.DeviceBuffer.__new__(rt.DeviceBuffer)  # the fake has no cudaMalloc: a borrowed address
    Owned.__init__(buf, lowlevel.backend_object(), lowlevel.ffi.cast("void *", a + 48), False)
    buf.size, buf._address = 16, a + 48
    made = g.add_nodes([("empty", {}, ["root"]), ("memset", {"dst": a, "value": 7, "count": 16}, [0]),
                        ("memset", {"dst": a + 16, "value": 3, "count": 8, "element_size": 1}, [1, root]),
                        ("empty", {}, [0, 1, 2]), ("memset", {"dst": buf, "value": 9, "count": 4}, [3]),
                        ("empty", None, [])], names={"root": root})
    print([n.type.name for n in made], [n.params["value"] for n in made if n.type.name == "MEMSET"])
    print([n.params["dst"] - a for n in made[1:3]], made[4].params["dst"] == buf.ptr, buf in g._keep)
    print(all(g._wrap(n.handle) is n for n in made), len(g.nodes()))
    other = rt.Graph().add_empty()
    try:
        g.add_nodes([("empty", {}), ("empty", {}, [0]), ("empty", {}, [other])])
    except errors.InvalidValue as exc:
        print("another graph" in str(exc), exc.__notes__)
    try:
        g.add_nodes([("empty", {}), ("memset", {"dst": a, "value": 256, "count": 1})])
    except errors.InvalidValue as exc:
        print("does not fit" in str(exc), exc.__notes__)
    print(len(g.nodes()))
    try:  # the fake refuses its 65th node: in the middle of one C call on the fast path
        g.add_nodes([("empty", {}, [i - 1] if i else []) for i in range(100)])
    except errors.GraphRTError as exc:
        print(type(exc).__name__, exc.__notes__)
    print(len(g.nodes()), len(g._table()))
"""


@needs_fast
def test_add_nodes_same_in_both_modes(fake_cudart):
    """add_nodes: one C call per run of empty/memset specs (compiled) or one call per node (ABI)."""
    abi = run_mode(fake_cudart, "0", BULK).splitlines()
    api = run_mode(fake_cudart, "1", BULK).splitlines()
    assert abi == api
    assert api[0] == "['EMPTY', 'MEMSET', 'MEMSET', 'EMPTY', 'MEMSET', 'EMPTY'] [7, 3, 9]"
    assert api[1:] == ["[0, 16] True True", "True 7",
                       "True ['(Graph.add_nodes: spec 2; 2 node(s) added before it stay)']",
                       "True ['(Graph.add_nodes: spec 1; 1 node(s) added before it stay)']", "10",
                       "InvalidValue ['(Graph.add_nodes: spec 54; 54 node(s) added before it stay)']",
                       "64 64"]


RECORDER = r"""
#include <stddef.h>
#include <string.h>
static int kinds[256], values[256], ndeps[256], deps[256][8], n, fail_at = -1;
static int index_of(void *h) { return (int)(((size_t)h - 0x1000) / 16); }
static int rec(void **out, void *const *d, size_t nd, int kind, unsigned value) {
    if (n == fail_at) return 999;
    kinds[n] = kind; values[n] = (int)value; ndeps[n] = (int)nd;
    for (size_t k = 0; k < nd; k++) deps[n][k] = (size_t)d[k] >= 0x1000 ? index_of(d[k]) : -(int)(size_t)d[k];
    *out = (void *)(size_t)(0x1000 + 16 * n++);
    return 0;
}
int cudaGraphAddEmptyNode(void **out, void *g, void *const *d, size_t nd) { (void)g; return rec(out, d, nd, 0, 0); }
int cudaGraphAddMemsetNode(void **out, void *g, void *const *d, size_t nd, const char *p) {
    unsigned v; (void)g; memcpy(&v, p + 16, 4); return rec(out, d, nd, 1, v); }
void set_fail(int k) { fail_at = k; n = 0; }
int get(int i, int what) { return what == 0 ? kinds[i] : what == 1 ? values[i] : what == 2 ? ndeps[i] : deps[i][what - 3]; }
"""


@needs_fast
def test_add_nodes_helper_passes_dependencies(tmp_path):
    """The generated _pgr_add_nodes alone, bound to a library that records each call."""
    import subprocess
    import sys

    from bindgen import fast

    if fast.have_compiler() is None:
        pytest.skip("no C compiler")
    (tmp_path / "rec.c").write_text(RECORDER)
    lib = tmp_path / "librec.so"
    subprocess.run([fast.have_compiler(), "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "rec.c")], check=True)
    code = f"""
import ctypes, importlib
rec = ctypes.CDLL({str(lib)!r})
m = importlib.import_module("pygraphrt._fastlib._cuda13")
ffi, lib = m.ffi, m.lib
lib._pgr_bind(ffi.cast("void *", rec._handle))
size = ffi.sizeof("struct cudaMemsetParams")
params = bytearray(2 * size)
for j, v in enumerate((7, 9)):
    p = ffi.new("struct cudaMemsetParams *", {{"value": v, "width": 1}})
    params[j * size:(j + 1) * size] = ffi.buffer(p)
kinds = [0, 1, 0, 1, 0]
dep_start = [0, 1, 2, 4, 4, 22]                  # node 4 has 18 dependencies (more than 16)
refs = [-1, 0, 1, -2, 1] + [0, 1, 2, 3, -1, -2] * 3  # node 4: refs[4:22]
ext = ffi.new("cudaGraphNode_t[]", [ffi.cast("cudaGraphNode_t", 5), ffi.cast("cudaGraphNode_t", 6)])
for fail in (-1, 3):
    rec.set_fail(fail)
    out = ffi.new("cudaGraphNode_t[]", 5)
    done = ffi.new("int *")
    rc = lib._pgr_add_nodes(ffi.cast("void *", 1), 5, ffi.new("int[]", kinds), ffi.new("int[]", dep_start),
                            ffi.new("int[]", refs), ext, ffi.from_buffer(params), size, out, done)
    print(rc, done[0], [int(ffi.cast("uintptr_t", out[i])) for i in range(done[0])])
    print([[rec.get(i, w) for w in range(3)] + [rec.get(i, 3 + k) for k in range(min(rec.get(i, 2), 8))]
           for i in range(done[0])])
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == [
        "0 5 [4096, 4112, 4128, 4144, 4160]",
        "[[0, 0, 1, -5], [1, 7, 1, 0], [0, 0, 2, 1, -6], [1, 9, 0], [0, 0, 18, 1, 0, 1, 2, 3, -5, -6, 0]]",
        "999 3 [4096, 4112, 4128]",
        "[[0, 0, 1, -5], [1, 7, 1, 0], [0, 0, 2, 1, -6]]",
    ]


DIRECT = """
    import ctypes as C
    import pygraphrt as rt
    from pygraphrt import errors
    from pygraphrt.graph import _hot
    from pygraphrt.kernels import Kernel
    fake = C.CDLL(rt.backend().library_path)
    drv, rtm, refuse, no_context, field = (
        C.c_int.in_dll(fake, n) for n in ("fake_driver_calls", "fake_runtime_calls", "fake_driver_refuses",
                                          "fake_no_context", "fake_kernel_field"))
    C.c_int.in_dll(fake, "fake_device_count").value = 2  # (device=0 is then asked of the library)
    SIG = "float *x, int n, double a, unsigned char c, short h, float f, long long q, unsigned int u"
    ARGS = (a, 7, 2.5, 255, -3, 1.5, -2**63, 2**32 - 1)
    library_kernel = Kernel.wrap(0x5000, signature=SIG, kind="kernel", name="k")
    function = Kernel.wrap(0x6000, signature=SIG, kind="function", name="f")
    s = rt.Stream()
    g = rt.Graph()
    print(_hot.direct_status(rt.lowlevel.backend_object()))
    def calls(what):
        before = drv.value, rtm.value
        what()
        return drv.value - before[0], rtm.value - before[1]
    def node(n):  # what the node holds, read back through the runtime
        p = n.params
        return p["kernel"].name, tuple(p["grid"]), tuple(p["block"]), p["shared_mem_bytes"], list(p["args"])[1:]
    def kernel(k):
        made = []
        field.value = 0  # (a function's Python add takes the driver's call too)
        counts = calls(lambda: made.append(g.add_kernel(k, (2, 3), 64, ARGS, shared_mem=16)))
        return counts, field.value, node(made[0])
    def memset():
        made = []
        counts = calls(lambda: made.append(g.add_memset(a + 32, 9, 4, element_size=2, height=2, pitch=8)))
        p = dict(made[0].params)
        p["dst"] -= a  # where in the probe's buffer
        return counts, p
    from pygraphrt import multidevice
    queries = [C.c_int.in_dll(fake, n) for n in ("fake_driver_device_queries", "fake_runtime_device_queries")]
    def asked(what):  # (the driver's cuCtxGetDevice, the runtime's cudaGetDevice) calls what() made
        before = [q.value for q in queries]
        what()
        return tuple(q.value - b for q, b in zip(queries, before))
    def device():  # an add's device=0 (the hot add asks in C), and the scopes' query (Python)
        return asked(lambda: g.add_memset(a, 1, 1, device=0)), asked(
            lambda: multidevice.current(rt.lowlevel.backend_object()))
    g.add_kernel(library_kernel, 1, 1, ARGS), g.add_kernel(function, 1, 1, ARGS)  # each one's first: Python
    e = g.add_empty()
    m = e.memset(a, 7, 16)
    exe = g.instantiate()
    print("add", calls(lambda: g.add_empty(dependencies=[e])), "launch", calls(lambda: exe.launch(s)),
          "capturing", calls(lambda: s.is_capturing), "bulk", calls(lambda: g.add_nodes(
              [("empty", {}), ("empty", {}, [0]), ("memset", {"dst": a, "value": 1, "count": 4}, [1])])))
    print("memset", *memset())
    print("kernel", *kernel(library_kernel))
    print("function", *kernel(function))
    print(buf.raw[:16] == b"\\x07" * 16)
    print("device", *device())
    buf.raw = bytes(64)
    refuse.value = 1  # the driver refuses: each call is made again through the runtime
    print("device", *device())
    print("add", calls(lambda: g.add_empty()), "launch", calls(lambda: exe.launch(s)),
          "capturing", calls(lambda: s.is_capturing), buf.raw[:16] == b"\\x07" * 16)
    print("memset", memset()[0], "kernel", kernel(library_kernel)[:2])
    refuse.value = 0
    no_context.value = 1  # no current context: the memset and library-kernel adds take the runtime
    print("memset", memset()[0], "kernel", kernel(library_kernel)[:2], "function", kernel(function)[:2])
    print("device", *device())
    no_context.value = 0
    try:  # refused by both: the runtime's error is raised
        rt.Stream.legacy_default().is_capturing
    except errors.GraphRTError as exc:
        print(type(exc).__name__, exc.name)
"""


@pytest.mark.parametrize("mode", [pytest.param("1", marks=needs_fast, id="compiled"), pytest.param("0", id="abi")])
@pytest.mark.parametrize("direct", ["1", "0"])
def test_hot_calls_go_straight_to_the_driver_and_through_the_runtime_when_it_refuses(tmp_path, monkeypatch, direct,
                                                                                      mode):
    """Where the runtime hands out the driver's cuGraphLaunch, cuGraphAddEmptyNode,
    cuStreamIsCapturing, cuGraphAddMemsetNode and cuGraphAddKernelNode, the compiled paths call
    them and not the runtime -- the memset and kernel adds with the driver's structs, which the
    nodes read back through the runtime show filled right (a library kernel in ``kern``); a
    call the driver refuses, or a memset or library-kernel add with no current context, is made
    again through the runtime, whose result (and error) the caller gets.  A foreign CUfunction's
    node is the driver's in both (the Python method makes it).  ABI mode does the same for the
    three calls whose driver function takes the runtime's very arguments (the launch, the
    empty-node add -- also in its bulk loop -- and the capture query: Vendor.direct_fn); its
    memset and kernel adds stay in the runtime.  PYGRAPHRT_DIRECT=0 keeps every call in the
    runtime, in both modes."""
    lib = build_fake_cudart(tmp_path / "libcudart.so.13", driver_direct=True)
    monkeypatch.setenv("PYGRAPHRT_DIRECT", direct)
    out = run_mode(lib, mode, DIRECT).splitlines()
    memset = "{'dst': 32, 'value': 9, 'element_size': 2, 'width': 4, 'height': 2, 'pitch': 8}"
    values = "[7, 2.5, 255, -3, 1.5, -9223372036854775808, 4294967295]"
    on, off = (1, 0), (0, 1)
    d, r = (on, off) if direct == "1" else (off, off)  # a call the driver makes / the runtime makes
    both = (1, 1) if direct == "1" else off  # the driver refuses, the runtime makes it
    # device=0 with two devices: the compiled add asks in C (the driver's cuCtxGetDevice where
    # handed over; refused, or no context current: the runtime's cudaGetDevice); the scopes'
    # query in Python does the same in ABI mode and asks the runtime in compiled mode
    if mode == "1":
        lines = [f"add {d} launch {d} capturing {d} bulk {(3, 0) if direct == '1' else (0, 3)}",
                 f"memset {d} {memset}",
                 f"kernel {d} {1 if direct == '1' else 0} ('k', (2, 3, 1), (64, 1, 1), 16, {values})",
                 f"function {on} 2 ('f', (2, 3, 1), (64, 1, 1), 16, {values})",
                 "True",
                 f"device {d} {off}",
                 f"device {both} {off}",
                 f"add {both} launch {both} capturing {both} True",
                 f"memset {both} kernel ({both}, 0)",
                 f"memset {r} kernel ({both}, 0) function ({on}, 2)",
                 f"device {both} {off}"]
        head = ("cuGraphLaunch, cuGraphAddEmptyNode, cuStreamIsCapturing, cuGraphAddMemsetNode, "
                "cuGraphAddKernelNode, cuCtxGetCurrent, cuCtxGetDevice")
    else:
        lines = [f"add {d} launch {d} capturing {d} bulk {(2, 1) if direct == '1' else (0, 3)}",
                 f"memset {off} {memset}",
                 f"kernel {off} 0 ('k', (2, 3, 1), (64, 1, 1), 16, {values})",
                 f"function {on} 2 ('f', (2, 3, 1), (64, 1, 1), 16, {values})",
                 "True",
                 f"device {d} {d}",
                 f"device {both} {both}",
                 f"add {both} launch {both} capturing {both} True",
                 f"memset {off} kernel ({off}, 0)",
                 f"memset {off} kernel ({off}, 0) function ({on}, 2)",
                 f"device {both} {both}"]
        head = "cuGraphLaunch, cuGraphAddEmptyNode, cuStreamIsCapturing, cuCtxGetDevice"
    lines.append("StreamCaptureUnsupported cudaErrorStreamCaptureUnsupported")
    assert out == [head if direct == "1" else "off (PYGRAPHRT_DIRECT=0)"] + lines


@needs_fast
def test_binding_another_library_drops_the_driver_functions_of_the_last(tmp_path, fake_cudart):
    """The extension's direct slots belong to the library bound when they were set: binding
    another (a new backend of the same binding) empties them, so nothing reaches the old
    library's driver functions with the new library's handles."""
    direct = build_fake_cudart(tmp_path / "libcudart.so.13", driver_direct=True)
    out = run_mode(direct, "1", f"""
        import ctypes as C
        import pygraphrt as rt
        from pygraphrt import _runtime
        fake = C.CDLL({str(direct)!r})
        drv = C.c_int.in_dll(fake, "fake_driver_calls")
        s = rt.Stream()
        rt.Graph()  # installs the hot methods: the slots get this library's driver functions
        s.is_capturing
        print(drv.value)
        s.close()
        _runtime._reset_for_tests()
        import os
        os.environ["PYGRAPHRT_CUDART"] = {str(fake_cudart)!r}
        s2 = rt.Stream()
        print(rt.backend().library_path == {str(fake_cudart)!r}, s2.is_capturing, drv.value)
    """)
    assert out.splitlines() == ["1", "True False 1"]


@pytest.mark.parametrize("mode", ["auto", "0"])
def test_a_runtime_without_driver_entry_points_keeps_every_call(fake_cudart, mode):
    """Without cudaGetDriverEntryPointByVersion's answers, every call stays in the runtime, in
    either mode, and works as before."""
    out = run_mode(fake_cudart, mode, """
        import pygraphrt as rt
        from pygraphrt.graph import _hot
        s = rt.Stream()
        g = rt.Graph()
        print(_hot.direct_status(rt.lowlevel.backend_object()))
        e = g.add_empty()
        g.add_empty(dependencies=[e])
        g.instantiate().launch(s)
        print(len(g.nodes()), s.is_capturing)
    """)
    assert out.splitlines() == ["off (the cuda driver offers none of them)", "2 False"]


INDEX_PROBE = """
    import random, sys
    import pygraphrt as rt
    from pygraphrt.compute import ComputeGraph, VarManager, _hot, _topology as T
    rt.Stream()  # (a backend active: the topology phase may take the compiled index)
    f = _hot.index_function()
    print("c" if f is not T.index_accesses else "py")
    vm = VarManager()
    bufs = [vm.buffer(f"b{i}", a + 8 * i, nbytes=8) for i in range(6)]
    vals = [vm.value(f"v{i}", i + 1) for i in range(3)]
    rnd = random.Random(45)
    same = 0
    for _ in range(2000):
        reads, writes = [], []
        for _ in range(rnd.randint(0, 30)):
            reads.append(tuple(dict.fromkeys(rnd.sample(bufs + vals, rnd.randint(0, 3)))))
            writes.append(tuple(dict.fromkeys(rnd.sample(bufs, rnd.randint(0, 2)))))
        want, got = T.index_accesses(reads, writes), f(reads, writes)
        same += want[:2] == got[:2] and list(want[2].items()) == list(got[2].items())
    print(same)
    for bad in ([[object()]], [None], [(bufs[0],)] * 3):
        outs = []
        for fn in (T.index_accesses, f):
            try:
                outs.append(fn(bad, bad)[:2])
            except Exception as exc:
                outs.append(type(exc).__name__)
        print(outs[0] == outs[1], outs[1])
    before = [sys.getrefcount(v) for v in bufs]
    for _ in range(500):
        f([(bufs[0], vals[0])] * 4, [(bufs[1],), (bufs[0],)] * 2)
    print([sys.getrefcount(v) for v in bufs] == before)
    g = ComputeGraph(vm)
    for i in range(40):
        src, dst = bufs[i % 6], bufs[(5 * i + 1) % 6]
        g.node(f"n{i}", lambda ctx, src=src, dst=dst: (src.read(), dst.write(), vals[0].read()))
    inferred = [(x.name, y.name) for x, y, _ in g.topology()]
    print(len(inferred), sorted(inferred) == sorted((g.nodes()[i].name, g.nodes()[j].name)
                                                   for i, j in zip(*g._pairs)))
"""


@needs_fast
@pytest.mark.parametrize("mode", ["0", "1"])
def test_a_compute_graphs_index_in_c_equals_the_python_function(fake_cudart, mode):
    """The compiled index of a compute graph's accesses (bindgen/hot_methods.c) gives what
    compute._topology.index_accesses gives -- the edges in order, each variable's nodes -- on
    2 000 random programs, raises where it raises, keeps no reference, and is what a compute
    graph's topology phase takes in compiled mode (ABI mode: the Python function)."""
    out = run_mode(fake_cudart, mode, INDEX_PROBE).splitlines()
    assert out == ["c" if mode == "1" else "py", "2000", "True AttributeError", "True TypeError",
                   "True ([0, 1], [1, 2])", "True", out[-1]]
    assert out[-1].endswith(" True") and int(out[-1].split()[0]) > 40


EVALUATION_PROBE = """
    import gc, sys, threading, weakref
    import pygraphrt as rt
    from pygraphrt import errors
    from pygraphrt.compute import BufferVar, ComputeGraph, VarManager, _hot
    from pygraphrt.compute._vars import thread_slot

    s = rt.Stream()  # (a backend active: the first topology phase installs the C evaluation)

    class Tagged(BufferVar):  # a subclass: its accesses take the Python methods
        pass

    vm, other = VarManager(), VarManager()
    x, y, z = (vm.buffer(n, a + 8 * i, nbytes=8) for i, n in enumerate("xyz"))
    t = Tagged(vm, "t")
    vm._vars["t"] = t
    t.update(a + 32, 8)
    n = vm.value("n", 3)
    loose = vm.buffer("loose")             # never bound
    foreign = other.buffer("f", a + 40, nbytes=8)
    g = ComputeGraph(vm, "probe")
    kept = []
    g.node("w", lambda ctx: (x.write(), ctx.memset(x.value, 1, 8)))
    g.node("many", lambda ctx: (y.read(), x.read(), y.read(), z.read_write(), z.write(), n.read(),
                                ctx.memcpy(y.value, x.value, 8)))
    g.node("none", lambda ctx: ctx.memset(z.value, 0, 8))
    g.node("sub", lambda ctx: (t.read(), x.write(), ctx.memset(x.value, 2, 8)))
    g.node("keeper", lambda ctx: (kept.append(ctx), y.write(), ctx.memset(y.value, 3, 8)))
    g.node("dev", lambda ctx: (z.read(), ctx.memset(z.value, 4, 8)), device=0)
    kern = rt.Kernel.wrap(0x5000, signature="float *x", kind="kernel", name="tiny")
    for i in range(3):  # (the first launch of a kernel class checks it: the Python method)
        g.node(f"k{i}", lambda ctx: ctx.launch(kern, 1, 32, x.read()))
    g.node("kw", lambda ctx: ctx.launch(kern, (2, 1), 64, y.write(), shared_mem=16, priority=1))
    g.node("cp", lambda ctx: (ctx.memcpy(y.write(), z.read(), 8), ctx.memcpy(dst=y.value, src=z.value, count=4)))
    print([(x_.name, y_.name, [str(h) for h in hz]) for x_, y_, hz in g.topology()])
    print(_hot.status())
    print([(c.name, [v.name for v in c.reads], [v.name for v in c.writes], c.work) for c in g.nodes()])

    def operand(v):  # (addresses as offsets into the buffer, which moves from process to process)
        if isinstance(v, tuple):
            return tuple(map(operand, v))
        return v - a if isinstance(v, int) and a <= v < a + 64 else getattr(v, "name", v)

    print([[(w[0].kind, *map(operand, w[1:])) for w in c.items] for c in g.nodes()])
    print([(c.node, c.phase, len(c.items)) for c in kept], thread_slot().rec)
    g.check()  # (topology and check phases; the fake runtime has no edges to build a graph with)
    print([(c.node, c.phase, len(c.items)) for c in kept], [c.name for c in g["w"].dependents])

    def refused(fn):
        gr = ComputeGraph(vm, "bad")
        gr.node("only", fn)
        try:
            gr.topology()
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
        finally:
            assert thread_slot().rec is None  # (no recorder left behind)
        return "no error"

    print(refused(lambda ctx: loose.read()))
    print(refused(lambda ctx: foreign.write()))
    print(refused(lambda ctx: n.write()))
    print(refused(lambda ctx: x.read(1)))
    print(refused(lambda ctx: g.topology()))
    print(refused(lambda ctx: 1 / 0))
    print(refused(lambda ctx: ctx.launch("tiny", 1, 1)))
    print(refused(lambda ctx: ctx.memcpy(x.value, y.value)))
    print(refused(lambda ctx: ctx.memcpy(x.value)))
    print(refused(lambda ctx: (x.read(), delattr(ctx, "writes"))))
    print(refused(lambda ctx: (x.read(), delattr(ctx, "items"))))
    try:
        x.read()
    except errors.IllegalState as exc:
        print("outside:", exc)

    # Bad input to the methods themselves: an exception each, the Python code's, nothing left behind.
    from pygraphrt.compute import Var
    from pygraphrt.compute._graph import ComputeNode

    def raised(f):
        try:
            f()
        except Exception as exc:
            return type(exc).__name__
        return "none"

    print([raised(f) for f in (lambda: g._evaluate(object(), "topology"), lambda: g._evaluate(g["w"], "x", 5),
                               lambda: Var.__new__(Var).read(), lambda: g._evaluate(ComputeNode.__new__(ComputeNode), "x"))],
          refused(lambda ctx: setattr(ctx, "reads", ["abc"])), refused(lambda ctx: (setattr(ctx, "writes", None), x.write())),
          thread_slot().rec)

    # Two threads evaluating at once: each records its own accesses.
    inside, release = threading.Event(), threading.Event()
    g1, g2 = ComputeGraph(vm, "g1"), ComputeGraph(vm, "g2")

    def slow(ctx):
        x.write()
        inside.set()
        assert release.wait(30)
        y.read()

    g1.node("slow", slow)
    g2.node("quick", lambda ctx: (z.write(), y.read()))
    th = threading.Thread(target=g1.topology)
    th.start()
    assert inside.wait(30)
    g2.topology()
    release.set()
    th.join(30)
    print(th.is_alive(), [(c.name, [v.name for v in c.reads], [v.name for v in c.writes]) for c in (*g1, *g2)])

    # No reference kept: the variables' counts come back, an evaluated graph is freed.
    h = ComputeGraph(vm, "counted")
    for name in ("w", "many", "none", "sub"):
        h.node(name, g[name].fn)
    h.check()
    before = [sys.getrefcount(v) for v in (x, y, z, t, n)]
    for _ in range(200):
        h.check()
    print([sys.getrefcount(v) for v in (x, y, z, t, n)] == before)
    gw = weakref.ref(g)
    del g, kept[:]
    gc.collect()
    print(gw() is None)
"""


def _missing_context_attribute(name: str) -> str:
    """What this Python raises reading a NodeContext's unset slot ``name`` (3.13 names the class
    with its module, as ``%T`` does; 3.10-3.12 by its bare name), as the probe prints it."""
    from pygraphrt.compute._work import NodeContext

    try:
        getattr(NodeContext.__new__(NodeContext), name)
    except AttributeError as e:
        return f"AttributeError: {e}"
    raise AssertionError(f"a NodeContext made without __init__ has {name}")


@needs_fast
def test_a_compute_graphs_evaluation_in_c_behaves_as_the_python_methods(fake_cudart):
    """ComputeGraph._evaluate, Var.read and Var.write in C (bindgen/hot_methods.c, installed by
    compute._hot in compiled mode) record what the Python methods record -- each variable once, in
    the order first accessed; a subclass, a node with a device and every refusal through the
    Python methods, with their messages; a kept context left alone; two threads at once; no
    reference kept -- and are what compiled mode runs (ABI mode: the Python methods)."""
    abi = run_mode(fake_cudart, "0", EVALUATION_PROBE).splitlines()
    api = run_mode(fake_cudart, "1", EVALUATION_PROBE).splitlines()
    assert abi[1] == "in Python (the active backend has no compiled extension: ABI mode or the simulator)"
    assert api[1] == ("in C: ComputeGraph._evaluate, Var.read, Var.write, NodeContext.launch, "
                      "NodeContext.memcpy")
    assert abi[:1] + abi[2:] == api[:1] + api[2:]
    assert api[2] == ("[('w', [], ['x'], ['memset']), ('many', ['y', 'x', 'z', 'n'], ['z'], ['memcpy']), "
                      "('none', [], [], ['memset']), ('sub', ['t'], ['x'], ['memset']), "
                      "('keeper', [], ['y'], ['memset']), ('dev', ['z'], [], ['memset']), "
                      "('k0', ['x'], [], ['kernel']), ('k1', ['x'], [], ['kernel']), ('k2', ['x'], [], ['kernel']), "
                      "('kw', [], ['y'], ['kernel']), ('cp', ['z'], ['y'], ['memcpy', 'memcpy'])]")
    assert api[3] == ("[[('memset', 0, 1, 8)], [('memcpy', 8, 0, 8)], [('memset', 16, 0, 8)], [('memset', 0, 2, 8)], "
                      "[('memset', 8, 3, 8)], [('memset', 16, 4, 8)], [('kernel', 'tiny', 1, 32, (0,), 0, {})], "
                      "[('kernel', 'tiny', 1, 32, (0,), 0, {})], [('kernel', 'tiny', 1, 32, (0,), 0, {})], "
                      "[('kernel', 'tiny', (2, 1), 64, (8,), 16, {'priority': 1})], "
                      "[('memcpy', 8, 16, 8), ('memcpy', 8, 16, 4)]]")
    assert api[4] == "[('keeper', 'topology', 1)] None"
    assert api[5] == ("[('keeper', 'topology', 1), ('keeper', 'topology', 1), ('keeper', 'check', 1)] "
                      "['many', 'sub']")
    assert api[6].startswith("IllegalState") and "not bound" in api[6]
    assert api[7].startswith("InvalidValue") and "another VarManager" in api[7]
    assert api[8].startswith("InvalidValue") and "value variable" in api[8]
    assert api[9].startswith("TypeError")
    assert api[10].startswith("IllegalState") and "nested" in api[10]
    assert api[11].startswith("ZeroDivisionError")
    assert api[12].startswith("InvalidValue") and "is not a pygraphrt Kernel" in api[12]
    assert api[13].startswith("InvalidValue") and "pass count=" in api[13]
    assert api[14].startswith("TypeError") and "src" in api[14]
    assert api[15] == _missing_context_attribute("writes")
    assert api[16] == _missing_context_attribute("items")
    assert api[17].startswith("outside:")
    assert api[18] == ("['AttributeError', 'AttributeError', 'AttributeError', 'AttributeError'] AttributeError: 'str' "
                       "object has no attribute '_solo' AttributeError: 'NoneType' object has no attribute 'append' None")
    assert api[19] == "False [('slow', ['y'], ['x']), ('quick', ['y'], ['z'])]"
    assert api[20:] == ["True", "True"]


BUILD_PROBE = """
    import warnings
    import pygraphrt as rt
    from pygraphrt import errors
    from pygraphrt.compute import ComputeGraph, VarManager, _hot

    s = rt.Stream()
    # (the fake's kernels take these parameters)
    kern = rt.Kernel.wrap(0x5000, kind="kernel", name="tiny", signature="float *x, int n, double a, "
                          "unsigned char c, short h, float f, long long q, unsigned int u")
    REST = (7, 2.5, 255, -3, 1.5, -2**63, 2**32 - 1)
    vm = VarManager()
    vs = [vm.buffer(f"v{i}", a + 8 * i, nbytes=8) for i in range(6)]

    def operand(v):  # (addresses as offsets into the buffer, which moves from process to process)
        if isinstance(v, list):
            return [operand(x if isinstance(x, (int, float)) else int(x)) for x in v]
        return v - a if isinstance(v, int) and a <= v < a + 64 else v

    def program(g, odd=None):
        for i in range(24):
            src, dst = vs[i % 6], vs[(5 * i + 1) % 6]
            if i == 7:  # two items, then a memset: the Python loop's nodes between the C loop's
                g.node(f"n{i}", lambda ctx, s_=src, d=dst: (ctx.memcpy(d.write(), s_.read(), 4),
                                                             ctx.memset(d.value, 1, 4)))
            elif i == 11:
                g.node(f"n{i}", lambda ctx, d=dst: ctx.memset(d.write(), 2, 8))
            elif i == 13:
                g.node(f"n{i}", lambda ctx, d=dst: ctx.launch(kern, 2, 64, d.write(), *REST, shared_mem=16))
            elif i == 17:
                g.node(f"n{i}", lambda ctx, d=dst: ctx.launch(kern, 1, 32, d.write(), *REST), device=0)
            elif i == odd:  # a different variable in the build phase than in the topology phase
                g.node(f"n{i}", lambda ctx, s_=src, d=dst: ctx.memcpy(d.write(), (vs[0] if ctx.phase == "build"
                                                                                else s_).read(), 8))
            elif i % 2:
                g.node(f"n{i}", lambda ctx, s_=src, d=dst: ctx.memcpy(d.write(), s_.read(), 8))
            else:
                g.node(f"n{i}", lambda ctx, s_=src, d=dst: (s_.read(), ctx.launch(kern, 1, 32, d.write(), *REST)))
        return g

    g = program(ComputeGraph(vm, "built"))
    g.launch(s)
    s.synchronize()
    print(_hot.status().split(" ")[1], _hot.build_loop(g) is not None)
    name_of = {gn.handle: c.name for c in g for gn in c.graph_nodes}
    for c in g:
        print(c.name, [(gn.type.name, sorted(name_of[d.handle] for d, _ in gn.dependencies),
                        {k: operand(v) for k, v in sorted(gn.params.items()) if k in ("dst", "src", "width", "value",
                                                                                      "grid", "block", "shared_mem_bytes",
                                                                                      "args")})
                       for gn in c.graph_nodes])
    bad = program(ComputeGraph(vm, "mismatched"), odd=9)
    bad.topology()
    try:
        bad.build()
    except errors.PhaseMismatch as exc:
        print(type(exc).__name__, exc.detail)
    print([c.graph_nodes for c in bad][:3], bad._graph)
    g._evaluate = g._evaluate  # (replaced on the object: the Python loop calls it)
    print(_hot.build_loop(g))

    # Random programs: each node's accesses (repeats, read_write, a value variable) and work (a
    # kernel, a copy, a memset, two items, keywords) drawn at random, built and read back.
    import random, zlib
    rnd = random.Random(45)
    n_val = vm.value("n", 3)
    digests = []
    for p_ in range(150):
        gr = ComputeGraph(vm, f"random{p_}")
        for i in range(rnd.randint(1, 30)):
            acc = [(rnd.choice(vs), rnd.choice(("read", "write", "read_write"))) for _ in range(rnd.randint(0, 3))]
            if rnd.random() < 0.2:
                acc.append((n_val, "read"))
            work = rnd.choice(("kernel", "kernel", "copy", "copy", "memset", "two", "keyword"))

            def fn(ctx, acc=acc, work=work):
                got = [getattr(v, how)() for v, how in acc]
                d = next((x for x in got if isinstance(x, int) and x >= a), a)
                if work in ("kernel", "two"):
                    ctx.launch(kern, 1, 32, d, *REST)
                if work in ("copy", "two"):
                    ctx.memcpy(d, a + 48, 8)
                if work == "memset":
                    ctx.memset(d, 9, 8)
                if work == "keyword":
                    ctx.launch(kern, 1, 32, d, *REST, shared_mem=8)

            gr.node(f"r{i}", fn)
        gr.build()
        names = {gn.handle: c.name for c in gr for gn in c.graph_nodes}
        text = repr([(c.name, [v.name for v in c.reads], [v.name for v in c.writes],
                      [(gn.type.name, sorted(names[d.handle] for d, _ in gn.dependencies)) for gn in c.graph_nodes])
                     for c in gr])
        digests.append(zlib.crc32(text.encode()))
        gr.close()
    print(len(digests), zlib.crc32(repr(digests).encode()))
"""


@needs_fast
def test_a_compute_graphs_build_loop_in_c_makes_the_graph_the_python_loop_makes(fake_cudart):
    """The build phase's C loop (hot module's build_nodes, compiled mode) makes the graph the
    Python loop makes -- the same nodes in the same order with the same parameters and edges,
    the nodes it does not take (two items, a memset, a device, a keyword) left to the Python
    loop in between -- and a phase mismatch raises the same error and leaves no graph; 150 random
    programs (accesses, value variables, the kinds of work) give the same graphs."""
    abi = run_mode(fake_cudart, "0", BUILD_PROBE).splitlines()
    api = run_mode(fake_cudart, "1", BUILD_PROBE).splitlines()
    assert abi[0] == "Python False" and api[0] == "C: True"
    assert abi[1:] == api[1:]
    assert len(api) == 1 + 24 + 4
    assert api[2] == "n1 [('MEMCPY', ['n0'], {'dst': 0, 'src': 8, 'width': 8})]"  # (the C loop's)
    assert api[8] == ("n7 [('MEMCPY', ['n1', 'n6'], {'dst': 0, 'src': 8, 'width': 4}), ('MEMSET', ['n7'], "
                      "{'dst': 0, 'value': 1, 'width': 4})]")
    assert api[14] == ("n13 [('KERNEL', ['n12', 'n7'], {'args': [0, 7, 2.5, 255, -3, 1.5, -9223372036854775808, "
                       "4294967295], 'block': Dim3(x=64, y=1, z=1), 'grid': Dim3(x=2, y=1, z=1), "
                       "'shared_mem_bytes': 16})]")
    assert api[-4].startswith("PhaseMismatch node 'n9' read ['v3']")
    assert api[-3:-1] == ["[[], [], []] None", "None"]
    assert api[-1].startswith("150 ")  # (the random programs' digest: abi's, above)


# Compute graphs whose closures misbehave at random: one node of each program raises, accesses
# what it may not, issues bad work, tampers with its context or changes between phases -- in
# the topology, build or update phase or in all -- while the other nodes are the C loops'
# common ones.  Each program: a build with the fault, a build without it, an update after a
# variable moved (with, then without the fault), a launch.  The outcomes are printed.
FAULT_PROBE = r"""
    import gc, random, re, warnings, zlib
    import pygraphrt as rt
    from pygraphrt import errors
    from pygraphrt.compute import ComputeGraph, VarManager, _hot
    from pygraphrt.compute._vars import thread_slot

    import ctypes
    big = ctypes.create_string_buffer(256)  # (the variables' memory: the fake runtime never touches it)
    b0 = ctypes.addressof(big)
    warnings.simplefilter("ignore")  # (the fake has no exec setters: updates rebuild, saying so)
    s = rt.Stream()
    kern = rt.Kernel.wrap(0x5000, kind="kernel", name="tiny", signature="float *x, int n, double a, "
                          "unsigned char c, short h, float f, long long q, unsigned int u")
    REST = (2.5, 255, -3, 1.5, -2**63, 2**32 - 1)
    vm, other = VarManager(), VarManager()
    vs = [vm.buffer(f"v{i}", b0 + 8 * i, nbytes=8) for i in range(6)]
    n_val = vm.value("n", 3)
    loose = vm.buffer("loose")                     # never bound
    foreign = other.buffer("f", b0 + 240, nbytes=8)  # another manager's
    armed = [True]
    FAULTS = ("raise", "phase", "loose", "foreign", "value_write", "bad_arg", "no_count", "not_kernel",
              "del_writes", "del_items", "set_reads", "nested", "extra_item", "no_item", "base_exc")


    class Stop(BaseException):
        pass


    def closure(acc, work, fault, when, i, holder):
        def fn(ctx):
            on = armed[0] and fault is not None and (when == "any" or ctx.phase == when)
            if on and fault == "raise":
                raise ValueError(f"boom {i} in the {ctx.phase} phase")
            if on and fault == "base_exc":
                raise Stop(f"stop {i}")
            got = [getattr(v, how)() for v, how in acc]
            if on and fault == "phase":
                vs[(i + 1) % 6].read()
            if on and fault == "loose":
                loose.read()
            if on and fault == "foreign":
                foreign.write()
            if on and fault == "value_write":
                n_val.write()
            if on and fault == "del_writes":
                del ctx.writes
            if on and fault == "del_items":
                del ctx.items
            if on and fault == "set_reads":
                ctx.reads = ("not", "a", "list")
            if on and fault == "nested":
                holder[0]._evaluate(holder[0].nodes()[0], "topology")
            d = next((x for x in got if isinstance(x, int) and x >= b0), b0)
            if on and fault == "bad_arg":
                ctx.launch(kern, 1, 32, d, "three", *REST)
            elif on and fault == "no_count":
                ctx.memcpy(d, b0 + 200)
            elif on and fault == "not_kernel":
                ctx.launch("tiny", 1, 32, d, 3, *REST)
            elif on and fault == "no_item":
                pass
            else:
                if work in ("kernel", "two"):
                    ctx.launch(kern, 1, 32, d, 3, *REST)
                if work in ("copy", "two"):
                    ctx.memcpy(d, b0 + 200, 8)
                if work == "memset":
                    ctx.memset(d, 9, 8)
            if on and fault == "extra_item":
                ctx.memset(d, 1, 8)
        return fn


    def outcome(f):
        try:
            f()
        except (Exception, Stop) as exc:
            text = f"{type(exc).__name__}: {exc}"
        else:
            text = "ok"
        assert thread_slot().rec is None, "a recorder left behind"
        assert not s.is_capturing
        return re.sub(r"0x[0-9a-f]+|\d{6,}", "N", text)


    def digest(gr):
        names = {gn.handle: c.name for c in gr for gn in c.graph_nodes}
        return zlib.crc32(repr([(c.name, [v.name for v in c.reads], [v.name for v in c.writes],
                                 [(gn.type.name, sorted(names[d.handle] for d, _ in gn.dependencies))
                                  for gn in c.graph_nodes]) for c in gr]).encode())


    rnd = random.Random(1128)
    lines = []
    for p_ in range(400):
        holder = [None]
        gr = holder[0] = ComputeGraph(vm, f"p{p_}")
        n_nodes = rnd.randint(1, 25)
        bad = rnd.randrange(n_nodes)
        for i in range(n_nodes):
            acc = [(rnd.choice(vs), rnd.choice(("read", "write", "read_write"))) for _ in range(rnd.randint(0, 3))]
            if rnd.random() < 0.2:
                acc.append((n_val, "read"))
            work = rnd.choice(("kernel", "kernel", "copy", "copy", "memset", "two"))
            fault = rnd.choice(FAULTS) if i == bad else None
            when = rnd.choice(("topology", "build", "build", "update", "any"))
            gr.node(f"r{i}", closure(acc, work, fault, when, i, holder))
        armed[0] = True
        first = outcome(gr.build)
        left = (gr._graph is None, [len(c.graph_nodes) for c in gr].count(0) == n_nodes) if first != "ok" else ""
        armed[0] = False
        again = outcome(gr.build)
        d1 = digest(gr) if again == "ok" else None
        # an update with the fault armed, after one variable moved
        vs[p_ % 6].update(b0 + 64 + 8 * (p_ % 6), 8)
        armed[0] = True
        upd = outcome(gr.update)
        armed[0] = False
        upd2 = outcome(gr.update)
        vs[p_ % 6].update(b0 + 8 * (p_ % 6), 8)
        launched = outcome(lambda: (gr.launch(s), s.synchronize()))
        lines.append(f"{p_} {first} {left} {again} {d1} | {upd} | {upd2} | {launched}")
        gr.close()
    gc.collect()
    print(_hot.status().split(" ")[1])
    for line in lines:
        print(line)
"""


@needs_fast
def test_compute_graphs_with_misbehaving_closures_fail_alike_in_both_modes_and_recover(fake_cudart):
    """400 random compute graphs, one misbehaving closure each (FAULT_PROBE): the C evaluation
    and build loop raise what the Python methods raise, at the same step; a failed build or
    update leaves no recorder, no capture and no half-built graph (the builds and updates after
    it succeed); no error is pygraphrt's own (an IndexError, say) rather than the closure's."""
    abi = run_mode(fake_cudart, "0", FAULT_PROBE).splitlines()
    api = run_mode(fake_cudart, "1", FAULT_PROBE).splitlines()
    assert abi[0] == "Python" and api[0] == "C:"
    assert len(api) == 401 and abi[1:] == api[1:]
    text = "\n".join(api)
    for internal in ("IndexError", "KeyError", "SystemError", "recorder left behind"):
        assert internal not in text
    firsts = [line.split(" ", 1)[1].split(" | ")[0] for line in api[1:]]
    kinds = {f.split(":")[0].split()[0] for f in firsts}
    assert {"ok", "ValueError", "Stop", "PhaseMismatch", "InvalidValue", "IllegalState", "AttributeError"} <= kinds, kinds
    assert any("in the build phase" in f for f in firsts)  # (a closure failing amid the build loop)
    # a failed first build leaves no graph and no node's graph nodes; the build without the fault works
    failed = [f for f in firsts if not f.startswith("ok")]
    assert failed and all(" (True, True) " in f for f in failed)
    assert sum(" (True, True) ok " in f for f in failed) > len(failed) // 2
