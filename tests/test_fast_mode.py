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
    # nvrtc13 never has a fast path: what a binding without a built extension does.
    monkeypatch.setenv("PYGRAPHRT_FAST", "1")
    with pytest.raises(errors.BackendError, match="PYGRAPHRT_FAST=1 but .*build-fast"):
        _fast.open_binding("nvrtc13", str(fake_cudart))
    monkeypatch.setenv("PYGRAPHRT_FAST", "auto")
    ffi, lib, mode = _fast.open_binding("nvrtc13", str(fake_cudart))
    assert mode.startswith("abi (no compiled extension for binding nvrtc13")


@needs_fast
def test_a_stale_extension_is_not_used(monkeypatch, fake_cudart):
    monkeypatch.setattr(_fast, "_abi_hash", lambda binding: "0" * 64)
    monkeypatch.setenv("PYGRAPHRT_FAST", "auto")
    _ffi, _lib, mode = _fast.open_binding("cuda13", str(fake_cudart))
    assert mode.startswith("abi (") and "stale" in mode
    monkeypatch.setenv("PYGRAPHRT_FAST", "1")
    with pytest.raises(errors.BackendError, match="stale"):
        _fast.open_binding("cuda13", str(fake_cudart))


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
    legacy = rt.Stream(_handle=lowlevel.ffi.NULL, _owned=False)  # the fake refuses a NULL stream
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
