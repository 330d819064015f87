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
