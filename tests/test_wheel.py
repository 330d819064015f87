"""The installed wheel, outside the checkout: what a user who runs ``pip install pygraphrt`` gets.

One platform wheel for the running interpreter is built the way ``scripts/wheels`` builds them
all (its ``build_wheels``: the sdist, then the wheel from it with zig cc for glibc 2.28, checked by
auditwheel) and installed into a fresh virtual environment in a temp dir whose PATH holds no C
compiler (only the venv's bin/ and an empty folder; CC unset), from local files only
(``--no-index``: its dependencies come from ``find_links_for``, downloaded once).  There:

* ``pygraphrt`` is the installed one (under the venv's site-packages, not the checkout);
* ``python -m pygraphrt info`` reports the compiled call path and the installed extension;
* a set of the CPU tests passes against it, from a copy of tests/ (and of bindgen/, whose
  constants some compare with the installed package's) in the temp dir, with its own minimal
  pytest.ini -- the project's configuration puts the checkout on sys.path -- and
  ``PYGRAPHRT_FAST=1 PYGRAPHRT_REQUIRE_FAST=1``.  The fake libcudart those tests drive is
  compiled beforehand here (PYGRAPHRT_TEST_PREBUILT), as the venv has no compiler.  The set
  (INSTALLED_TESTS): test_fast_mode.py (the compiled path against the fake: selection, refusals,
  same behaviour as ABI mode; less two tests that read the checkout or compile), test_launch_hot.py
  (the C kernel launch), test_hot_methods.py (the C hot methods: same results as ABI mode, which
  path took each call, no leaks) and test_build_paths.py (the sim's inlined paths).

And the sdist installed by pip where a C compiler is (build isolation, offline) gets the compiled
path.  Marked ``headers`` (the fakes are compiled against the pinned CUDA headers) and ``wheels``.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from .test_cuda13x import build_fake_cudart, fake_variant

pytestmark = [pytest.mark.headers, pytest.mark.wheels]

REPO = Path(__file__).resolve().parent.parent
VERSION = f"{sys.version_info[0]}.{sys.version_info[1]}"
INSTALLED_TESTS = ["tests/test_fast_mode.py", "tests/test_launch_hot.py", "tests/test_hot_methods.py",
                   "tests/test_build_paths.py",
                   # these two read the checkout (its committed fast sources) or compile a library
                   "--deselect", "tests/test_fast_mode.py::test_the_committed_fast_source_is_what_the_package_expects",
                   "--deselect", "tests/test_fast_mode.py::test_add_nodes_helper_passes_dependencies"]


def _scripts_wheels():
    loader = importlib.machinery.SourceFileLoader("pygraphrt_scripts_wheels", str(REPO / "scripts" / "wheels"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


wheels = _scripts_wheels()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """scripts/wheels' result for this interpreter: the sdist and one platform wheel."""
    if sys.platform != "linux" or sysconfig.get_platform() != "linux-x86_64":
        pytest.skip("the platform wheels are x86_64 Linux ones")
    return wheels.build_wheels(tmp_path_factory.mktemp("wheelhouse"), [VERSION], pure=False)


@pytest.fixture(scope="module")
def prebuilt(tmp_path_factory):
    """The fakes the installed-package tests drive, compiled here (the test venv has no compiler)."""
    from benchmarks.breakdown import build_stub

    root = tmp_path_factory.mktemp("prebuilt")
    for direct in (False, True):
        (root / fake_variant(driver_direct=direct)).mkdir()
        build_fake_cudart(root / fake_variant(driver_direct=direct) / "libcudart.so.13", driver_direct=direct)
    (root / "stub_cudart").mkdir()
    build_stub(root / "stub_cudart")
    return root


def bare_env(venv: Path, empty: Path, **extra: str) -> dict[str, str]:
    """The environment of a user's shell in ``venv``: its bin/ and an empty folder on PATH (no
    compiler), none of the checkout's or this run's Python or pygraphrt settings."""
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith(("PYGRAPHRT_", "PYTHON", "PYTEST", "VIRTUAL_ENV", "CC", "CFLAGS", "LDSHARED", "LDFLAGS"))}
    return {**keep, "PATH": f"{venv / 'bin'}{os.pathsep}{empty}", "VIRTUAL_ENV": str(venv), **extra}


def make_venv(where: Path) -> Path:
    python = wheels.interpreter(VERSION)
    subprocess.run([str(python), "-m", "venv", str(where)], check=True, timeout=300)
    return where


def site_packages(venv: Path) -> Path:
    out = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('platlib'))"],
                         capture_output=True, text=True, check=True, cwd=str(venv), env=bare_env(venv, venv))
    return Path(out.stdout.strip()).resolve()


def in_venv(venv: Path, args: list[str], cwd: Path, env: dict[str, str], timeout: int = 300) -> str:
    r = subprocess.run([str(venv / "bin" / "python"), *args], capture_output=True, text=True, cwd=str(cwd),
                       env=env, timeout=timeout)
    assert r.returncode == 0, f"{args}: rc {r.returncode}\n{r.stdout[-6000:]}\n{r.stderr[-4000:]}"
    return r.stdout


def info_of(venv: Path, cwd: Path, env: dict[str, str], fake: Path) -> str:
    """``python -m pygraphrt info`` in ``venv`` against the fake libcudart ``fake``."""
    return in_venv(venv, ["-m", "pygraphrt", "info", "--verbose"], cwd, dict(env, PYGRAPHRT_BACKEND="cuda", PYGRAPHRT_CUDART=str(fake)))


def test_scripts_wheels_builds_every_fast_binding():
    from bindgen import fast

    assert wheels.FAST_BINDINGS == fast.FAST_BINDINGS


def test_the_wheel_fits_manylinux_2_28(built):
    path, tag = built["wheels"][VERSION]
    tag_ = f"cp{VERSION.replace('.', '')}"
    import pygraphrt

    assert path.name == f"pygraphrt-{pygraphrt.__version__}-{tag_}-{tag_}-{wheels.PLATFORM_TAG}.whl"
    assert wheels.glibc_of(tag) <= (2, 28), tag
    assert set(wheels.extensions_in(path)) == set(wheels.FAST_BINDINGS)


def test_the_sdist_carries_what_the_fast_path_build_needs(built):
    import tarfile

    names = {n.split("/", 1)[1] for n in tarfile.open(built["sdist"]).getnames() if "/" in n}
    for binding in wheels.FAST_BINDINGS:
        assert f"pygraphrt/_bindings/{binding}/fast_source.json" in names
    for need in ("setup.py", "bindgen/__init__.py", "bindgen/fast.py", "bindgen/emit.py", "bindgen/ir.py",
                 "bindgen/hot_methods.c"):
        assert need in names, need


def test_the_installed_wheel_takes_the_compiled_path_without_a_compiler(built, prebuilt, tmp_path):
    wheel, _ = built["wheels"][VERSION]
    empty = tmp_path / "no-compiler-bin"
    empty.mkdir()
    venv = make_venv(tmp_path / "venv")
    env = bare_env(venv, empty)
    assert all(shutil.which(cc, path=env["PATH"]) is None for cc in ("cc", "gcc", "clang", "c99")), env["PATH"]
    in_venv(venv, ["-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-index", "--find-links",
                   str(wheels.find_links_for(VERSION)), str(wheel), "pytest"], tmp_path, env)
    site = site_packages(venv)
    # the tests run from a copy in the temp dir, with their own ini: nothing of the checkout on the path
    run_dir = tmp_path / "run"
    shutil.copytree(REPO / "tests", run_dir / "tests", ignore=shutil.ignore_patterns("__pycache__", "test_wheel.py"))
    shutil.copytree(REPO / "bindgen", run_dir / "bindgen", ignore=shutil.ignore_patterns("__pycache__", "fake_libc"))
    (run_dir / "pytest.ini").write_text("[pytest]\ntestpaths = tests\naddopts = -ra\n")
    env = dict(env, PYTHONPATH=str(run_dir))  # as the copied tests' subprocesses have it (run_py)
    where = in_venv(venv, ["-c", "import pygraphrt, shutil; print(pygraphrt.__file__); print(shutil.which('cc'))"],
                    run_dir, env).split()
    assert Path(where[0]).resolve().is_relative_to(site) and where[1] == "None", where
    fake = prebuilt / fake_variant() / "libcudart.so.13"
    info = info_of(venv, run_dir, env, fake)
    assert "call path: api (compiled: _cuda13." in info and "hot methods in C" in info, info
    assert f"compiled extension: {site / 'pygraphrt' / '_fastlib' / '_cuda13'}" in info, info
    # the short report names the call path too (pip hid the build), and a runtime without the
    # device-properties call (the fake) still gets its one line, not a traceback
    short = in_venv(venv, ["-m", "pygraphrt", "info"], run_dir,
                    dict(env, PYGRAPHRT_BACKEND="cuda", PYGRAPHRT_CUDART=str(fake)))
    assert "call path: api (compiled: _cuda13." in short and "[0] (name unknown:" in short, short
    r = subprocess.run([str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c",
                        str(run_dir / "pytest.ini"), "--rootdir", str(run_dir), *INSTALLED_TESTS],
                       capture_output=True, text=True, cwd=str(run_dir), timeout=600,
                       env=dict(env, PYGRAPHRT_FAST="1", PYGRAPHRT_REQUIRE_FAST="1",
                                PYGRAPHRT_TEST_PREBUILT=str(prebuilt)))
    summary = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    assert r.returncode == 0 and " passed" in summary and "skipped" not in summary, r.stdout[-8000:] + r.stderr[-3000:]
    print(f"installed wheel: {summary}")


def test_the_sdist_installed_where_a_compiler_is_takes_the_compiled_path(built, prebuilt, tmp_path):
    """pip builds the sdist (build isolation, offline) with the compiler on PATH: the install
    carries the four extensions, says so in its build record, and runs them."""
    if shutil.which("cc") is None:
        pytest.skip("no C compiler here")
    venv = make_venv(tmp_path / "venv")
    env = dict(bare_env(venv, Path(shutil.which("cc")).parent))  # the system's bin: cc is there
    # (--no-cache-dir: pip would otherwise reuse the wheel it built from the same sdist)
    in_venv(venv, ["-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-cache-dir", "--no-index",
                   "--find-links", str(wheels.find_links_for(VERSION)), str(built["sdist"])], tmp_path, env, timeout=900)
    site = site_packages(venv)
    record = json.loads((site / "pygraphrt" / "_fastlib" / "build.json").read_text())
    assert record["built"] == list(wheels.FAST_BINDINGS) and record["why_not"] is None, record
    info = info_of(venv, tmp_path, env, prebuilt / fake_variant() / "libcudart.so.13")
    assert "call path: api (compiled: _cuda13." in info, info
    assert f"compiled extension: {site / 'pygraphrt' / '_fastlib' / '_cuda13'}" in info, info
    # and where the compiler is gone, the same sdist installs in ABI mode and info says why
    empty = tmp_path / "no-compiler-bin"
    empty.mkdir()
    bare = bare_env(venv, empty)
    in_venv(venv, ["-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-cache-dir", "--no-index", "--force-reinstall",
                   "--no-deps", "--find-links", str(wheels.find_links_for(VERSION)), str(built["sdist"])], tmp_path, bare,
            timeout=900)
    info = info_of(venv, tmp_path, bare, prebuilt / fake_variant() / "libcudart.so.13")
    assert ("call path: abi (no compiled extension for binding cuda13 in this install: built without a C "
            "compiler: none of cc, gcc, clang on PATH and CC unset)") in info, info
