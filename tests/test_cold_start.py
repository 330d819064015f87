"""Cold start without a GPU: what loading a backend defers, and that deferring changes no answer.

pygraphrt finds libcudart the way cuda-pathfinder does without importing it where that is
certain (``pygraphrt._pathfinder``); these tests compare the two on the installed
cuda-pathfinder and check that overrides, errors and fallbacks are unchanged.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pygraphrt import _pathfinder

REPO = Path(__file__).resolve().parent.parent


def run_py(code: str, **env: str) -> subprocess.CompletedProcess:
    # this checkout first, then what the environment had (the GPU machine's wheels, e.g. cffi,
    # come through PYTHONPATH)
    path = os.pathsep.join([str(REPO)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))
    e = dict(os.environ, PYTHONPATH=path, **env)
    for k in ("PYGRAPHRT_CUDART", "PYGRAPHRT_BACKEND"):
        if k not in env:
            e.pop(k, None)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=e, cwd=str(REPO), timeout=120)


def _pathfinder_internals():
    pf = pytest.importorskip("cuda.pathfinder")
    try:
        from cuda.pathfinder._dynamic_libs.lib_descriptor import LIB_DESCRIPTORS
        from cuda.pathfinder._dynamic_libs.search_steps import SearchContext, find_in_site_packages
        from cuda.pathfinder._utils.find_sub_dirs import find_sub_dirs_cached
    except ImportError as exc:  # another layout: the quick search is off for it (VERIFIED)
        pytest.skip(f"cuda-pathfinder {pf.__version__} has another internal layout: {exc}")
    return pf, LIB_DESCRIPTORS["cudart"], SearchContext, find_in_site_packages, find_sub_dirs_cached


def test_descriptor_and_version_match_the_installed_pathfinder():
    pf, desc, *_ = _pathfinder_internals()
    assert tuple(desc.linux_sonames) == _pathfinder.SONAMES
    assert tuple(tuple(d.split("/")) for d in desc.site_packages_linux) == _pathfinder.SITE_DIRS
    assert not desc.dependencies and not getattr(desc, "requires_rtld_deepbind", False)
    major, minor = (int(x) for x in pf.__version__.split(".")[:2])
    assert _pathfinder.installed_version() == (major, minor)


LAYOUTS = {  # site dir -> files under it; "user" is the user site
    "cu13 wheel": {"venv": ["nvidia/cu13/lib/libcudart.so.13"]},
    "cu12 wheel": {"venv": ["nvidia/cuda_runtime/lib/libcudart.so.12"]},
    "both wheels": {"venv": ["nvidia/cuda_runtime/lib/libcudart.so.12"],
                    "system": ["nvidia/cu13/lib/libcudart.so.13"]},
    "cu12 soname in the cu13 dir": {"venv": ["nvidia/cu13/lib/libcudart.so.12"]},
    "user site first in a venv": {"user": ["nvidia/cu13/lib/libcudart.so.13"],
                                  "system": ["nvidia/cu13/lib/libcudart.so.13"]},
    "dir without the library": {"venv": ["nvidia/cu13/lib/libother.so"],
                                "system": ["nvidia/cuda_runtime/lib/libcudart.so.12"]},
    "nothing": {"venv": ["unrelated/file"]},
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("in_venv", [True, False])
def test_site_packages_search_gives_pathfinders_answer(tmp_path, monkeypatch, layout, in_venv):
    import site

    _, desc, SearchContext, find_in_site_packages, find_sub_dirs_cached = _pathfinder_internals()
    dirs = {k: tmp_path / k for k in ("venv", "user", "system")}
    for where, files in LAYOUTS[layout].items():
        for f in files:
            p = dirs[where] / f
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(b"")
    monkeypatch.setattr(site, "getsitepackages", lambda: [str(dirs["venv"]), str(dirs["system"])])
    monkeypatch.setattr(site, "getusersitepackages", lambda: str(dirs["user"]))
    monkeypatch.setattr(site, "ENABLE_USER_SITE", True)
    monkeypatch.setattr(sys, "base_prefix", sys.prefix + ("-base" if in_venv else ""))
    find_sub_dirs_cached.cache_clear()
    try:
        theirs = find_in_site_packages(SearchContext(desc))
    finally:
        find_sub_dirs_cached.cache_clear()
    ours = _pathfinder.find_in_site_packages()
    assert ours == (theirs.abs_path if theirs is not None else None)


def _wheel_cudart() -> str:
    path = _pathfinder.find_in_site_packages()
    if path is None:
        pytest.skip("no NVIDIA runtime wheel in site-packages")
    return path


PROBE = """
    import json, sys, pygraphrt
    from pygraphrt import _runtime
    b = _runtime.load("cuda")
    print(json.dumps({"path": b.path, "pathfinder_imported": "cuda.pathfinder" in sys.modules,
                      "ctypes_imported": "ctypes" in sys.modules,
                      "how": [a.how for a in _runtime.attempts()]}))
"""


def _probe(prelude: str = "", **env: str) -> dict:
    r = run_py(prelude + textwrap.dedent(PROBE), **env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_backend_load_finds_pathfinders_library_without_importing_it():
    _wheel_cudart()
    if _pathfinder.installed_version() not in _pathfinder.VERIFIED:
        pytest.skip("the installed cuda-pathfinder is not a verified version: it is imported as before")
    r = run_py("""
        from cuda.pathfinder import load_nvidia_dynamic_lib
        print(load_nvidia_dynamic_lib("cudart").abs_path)
    """)
    assert r.returncode == 0, r.stderr
    theirs = r.stdout.strip().splitlines()[-1]
    out = _probe()
    assert out["path"] == theirs
    assert not out["pathfinder_imported"]
    assert not out["ctypes_imported"]  # the search and the load go without it
    assert out["how"][-1] == _pathfinder.HOW


def test_already_loaded_or_unverified_pathfinder_falls_back_to_it():
    path = _wheel_cudart()
    out = _probe(f"import ctypes, os; ctypes.CDLL({path!r}, os.RTLD_NOW | os.RTLD_GLOBAL)\n")
    assert out["pathfinder_imported"] and out["path"] == path
    assert out["how"][-1] == "cuda-pathfinder (was-already-loaded-from-elsewhere)"
    out = _probe("from pygraphrt import _pathfinder; _pathfinder.VERIFIED = frozenset()\n")
    assert out["pathfinder_imported"] and out["path"] == path
    assert out["how"][-1] == "cuda-pathfinder (site-packages)"


def test_override_still_wins_and_errors_name_it():
    r = run_py("""
        import sys, pygraphrt
        from pygraphrt import errors
        try:
            pygraphrt.use("cuda")
        except errors.BackendError as e:
            print("ERR", e)
        print("PF", "cuda.pathfinder" in sys.modules)
    """, PYGRAPHRT_CUDART="/nonexistent/libcudart.so.13")
    assert "ERR no cuda runtime library could be loaded" in r.stdout, r.stderr
    assert "/nonexistent/libcudart.so.13 (PYGRAPHRT_CUDART): no such file" in r.stdout
    assert "PF False" in r.stdout


def test_loading_a_backend_defers_dataclasses_and_the_records_keep_their_names():
    _wheel_cudart()
    r = run_py("""
        import pickle, sys, pygraphrt
        from pygraphrt import _runtime
        before = "dataclasses" in sys.modules
        b = _runtime.load("cuda")
        assert set(b.load_ms) >= {"library search", "dlopen + runtime version", "vendor tables"}, b.load_ms
        # what pygraphrt imports, not what a library it falls back to imports: cuda-pathfinder
        # (taken where the quick search does not apply, e.g. another version of it) imports
        # dataclasses itself
        print("DEFERRED", before or "dataclasses" not in sys.modules or "cuda.pathfinder" in sys.modules)
        from pygraphrt.enums import DEFAULT_EDGE, EdgeData
        from pygraphrt.device import DeviceInfo
        from pygraphrt._runtime import BackendInfo
        import dataclasses
        e = EdgeData(1, 2)
        assert pickle.loads(pickle.dumps(e)) == e and DEFAULT_EDGE == EdgeData()
        assert dataclasses.replace(e, to_port=3).to_port == 3
        print("NAMES", EdgeData.__module__, DeviceInfo.__module__, BackendInfo.__module__)
        try:
            pygraphrt.enums.NoSuchThing
        except AttributeError as exc:
            print("MISSING", exc)
    """)
    assert r.returncode == 0, r.stderr
    assert "DEFERRED True" in r.stdout
    assert "NAMES pygraphrt.enums pygraphrt.device pygraphrt._runtime" in r.stdout
    assert "MISSING module 'pygraphrt.enums' has no attribute 'NoSuchThing'" in r.stdout


def test_auto_without_a_device_still_says_so_with_the_sim_hint():
    _wheel_cudart()
    r = run_py("""
        import pygraphrt
        from pygraphrt import errors
        try:
            pygraphrt.Stream()
        except errors.GraphRTError as e:
            print("ERR", type(e).__name__, e)
    """, CUDA_VISIBLE_DEVICES="", PYGRAPHRT_HIP_LIB="/nonexistent/libamdhip64.so")
    assert "ERR" in r.stdout, r.stderr
    assert "PYGRAPHRT_BACKEND=sim" in r.stdout and "cudaStreamCreateWithPriority" in r.stdout


# A runtime library of two functions, without vendor headers: the version queries.  The driver's
# records which thread asked first and how often it was asked.
TINY_RUNTIME = r"""
#include <pthread.h>
static pthread_t first_caller;
static int calls;
int cudaRuntimeGetVersion(int *v) { *v = 13000; return 0; }
int cudaDriverGetVersion(int *v) {
    if (calls++ == 0) first_caller = pthread_self();
    *v = 13000;
    return 0;
}
int tiny_calls(void) { return calls; }
int tiny_first_caller_is_this_thread(void) { return pthread_equal(first_caller, pthread_self()); }
"""


@pytest.fixture(scope="module")
def tiny_runtime(tmp_path_factory) -> Path:
    from bindgen.fast import have_compiler

    cc = have_compiler()
    if cc is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("tiny")
    (d / "tiny.c").write_text(TINY_RUNTIME)
    lib = d / "libcudart.so.13"
    subprocess.run([cc, "-shared", "-fPIC", "-pthread", "-o", str(lib), str(d / "tiny.c")], check=True)
    return lib


@pytest.mark.parametrize("mode", ["0", "auto"])
def test_loading_starts_the_driver_on_a_thread_and_imports_nothing_it_does_not_need(tiny_runtime, mode):
    """The runtime's driver initialisation (cudaDriverGetVersion) is begun on a thread at dlopen and
    joined before the backend's own query; the cold path imports neither ctypes nor the HIP
    vendor tables, nor, in compiled mode, the ABI module."""
    r = run_py(f"""
        import json, sys, threading, pygraphrt
        from pygraphrt import _runtime
        b = _runtime.load("cuda")
        import pygraphrt.device
        mods = [m for m in ("ctypes", "pygraphrt._vendors.hip", "pygraphrt._bindings.cuda13._ffi")
                if m in sys.modules]
        threads = [t.name for t in threading.enumerate() if t.name.startswith("pygraphrt")]
        import ctypes
        tiny = ctypes.CDLL({str(tiny_runtime)!r})
        print(json.dumps({{"mode": b.ffi_mode.split()[0], "mods": mods, "threads": threads,
                          "calls": tiny.tiny_calls(), "main_first": tiny.tiny_first_caller_is_this_thread(),
                          "driver": b.driver_version, "held": b.library is not None}}))
    """, PYGRAPHRT_CUDART=str(tiny_runtime), PYGRAPHRT_FAST=mode)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["calls"] == 2 and out["main_first"] == 0  # the thread asked first, then the backend
    assert out["threads"] == [] and out["driver"] == 13000 and out["held"]
    abi_module = ["pygraphrt._bindings.cuda13._ffi"] if out["mode"] == "abi" else []
    assert out["mods"] == abi_module
    if mode == "0":
        assert out["mode"] == "abi"


@pytest.mark.parametrize("mode", ["0", "auto"])
def test_the_vendor_tables_load_while_the_driver_initialises(tiny_runtime, mode):
    """``import pygraphrt`` and the device classes (what ``rt.Stream()`` needs before it calls
    the runtime) load neither the vendor tables nor pygraphrt.enums: those load with the
    backend, after the driver's initialisation has begun on its thread (the cold start's
    longest wait), and the backend times them ("vendor modules")."""
    r = run_py(f"""
        import json, sys, pygraphrt
        pygraphrt.Stream, pygraphrt.Event, pygraphrt.malloc
        from pygraphrt import _runtime
        early = [m for m in ("pygraphrt.enums", "pygraphrt._vendors") if m in sys.modules]
        seen = []
        start = _runtime._Library.start_driver_init
        def spy(self, vendor):
            seen.append([m for m in ("pygraphrt.enums", "pygraphrt._vendors") if m in sys.modules])
            return start(self, vendor)
        _runtime._Library.start_driver_init = spy
        b = _runtime.load("cuda")
        print(json.dumps({{"early": early, "at_driver_init": seen, "stages": list(b.load_ms),
                          "enums": "pygraphrt.enums" in sys.modules}}))
    """, PYGRAPHRT_CUDART=str(tiny_runtime), PYGRAPHRT_FAST=mode)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["early"] == [] and out["at_driver_init"] == [[]] and out["enums"]
    assert out["stages"][:4] == ["library search", "dlopen + runtime version", "vendor modules",
                                 "binding (ffi, lib, symbols)"]


def test_an_unsupported_runtime_starts_no_driver_initialisation(tmp_path, tiny_runtime):
    from bindgen.fast import have_compiler

    src = TINY_RUNTIME.replace("*v = 13000; return 0; }", "*v = 11080; return 0; }", 1)
    (tmp_path / "old.c").write_text(src)
    lib = tmp_path / "libcudart.so.11"
    subprocess.run([have_compiler(), "-shared", "-fPIC", "-pthread", "-o", str(lib), str(tmp_path / "old.c")],
                   check=True)
    r = run_py(f"""
        import ctypes, pygraphrt
        from pygraphrt import _runtime, errors
        try:
            _runtime.load("cuda")
        except errors.BackendError as exc:
            print("ERR", exc)
        print("CALLS", ctypes.CDLL({str(lib)!r}).tiny_calls())
    """, PYGRAPHRT_CUDART=str(lib))
    assert r.returncode == 0, r.stderr
    assert "is cuda runtime 11.8; pygraphrt supports cuda 12.x, cuda 13.x" in r.stdout
    assert "CALLS 0" in r.stdout


@pytest.mark.parametrize("binding", ["cuda12", "cuda13", "hip6", "hip7", "cudadrv13", "nvrtc13"])
def test_a_binding_package_carries_its_abi_modules_hash_and_imports_it_lazily(binding):
    import hashlib

    pkg_dir = REPO / "pygraphrt" / "_bindings" / binding
    digest = hashlib.sha256((pkg_dir / "_ffi.py").read_bytes()).hexdigest()
    r = run_py(f"""
        import sys, pygraphrt._bindings.{binding} as pkg
        print(pkg.ABI_SHA256, "pygraphrt._bindings.{binding}._ffi" in sys.modules)
        ffi = pkg.ffi
        print(type(ffi).__name__, pkg.ffi is sys.modules["pygraphrt._bindings.{binding}._ffi"].ffi)
        try:
            pkg.nothing
        except AttributeError as exc:
            print(exc)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [f"{digest} False", "FFI True",
                                     f"module 'pygraphrt._bindings.{binding}' has no attribute 'nothing'"]


EXPECTED_MODULES = REPO / "tests" / "cold_start_modules.txt"


def _expected_modules() -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current = None
    for line in EXPECTED_MODULES.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), [])
        else:
            current.append(line)
    return sections


def _collapse(modules: list[str], expected: list[str]) -> set[str]:
    """``modules`` with those under an expected ``package.*`` line counted as that line."""
    wild = [e[:-1] for e in expected if e.endswith(".*")]
    return {next((w + "*" for w in wild if m.startswith(w)), m) for m in modules}


@pytest.mark.parametrize("mode", ["0", "1"])
def test_cold_start_loads_no_more_pygraphrt_modules_than_the_committed_list(mode):
    """``import pygraphrt`` and the first ``rt.Stream()`` on sim load exactly the pygraphrt
    modules of tests/cold_start_modules.txt: a module that starts loading there (an eager
    import, a lazy one made eager) fails here, and so does one that stops (keep the list true)."""
    r = run_py("""
        import json, sys
        def ours():
            return sorted(m for m in sys.modules if m == "pygraphrt" or m.startswith("pygraphrt."))
        import pygraphrt as rt
        at_import = ours()
        s = rt.Stream()
        print(json.dumps({"import pygraphrt": at_import, "first rt.Stream() on sim": ours(),
                          "vendor": rt.backend().vendor}))
    """, PYGRAPHRT_BACKEND="sim", PYGRAPHRT_FAST=mode)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["vendor"] == "sim"
    expected = _expected_modules()
    assert set(expected) == {"import pygraphrt", "first rt.Stream() on sim"}
    for stage, want in expected.items():
        got = _collapse(out[stage], want)
        grew, shrank = sorted(got - set(want)), sorted(set(want) - got)
        assert not grew, f"{stage} now also loads {grew} (cold start grew; see {EXPECTED_MODULES.name})"
        assert not shrank, f"{stage} no longer loads {shrank}: remove them from {EXPECTED_MODULES.name}"
