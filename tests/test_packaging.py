"""Packaging: a wheel that carries the compiled fast path is a platform wheel.

setup.py compiles the cffi API-mode extensions into the wheel where a C compiler, cffi and
pycparser are present; those are built for one interpreter and platform, so the wheel must be
tagged for them (``cp3XX-cp3XX-<platform>``), not ``py3-none-any`` -- and stays pure Python
where nothing can be compiled.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# setup.py's distribution class, asked whether the wheel is binary, without building anything.
PROBE = textwrap.dedent("""
    import runpy, setuptools
    captured = {}
    setuptools.setup = lambda **kw: captured.update(kw)
    runpy.run_path("setup.py")
    print(captured["distclass"]().has_ext_modules())
""")


def _probe(cc: str) -> str:
    r = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=str(REPO),
                       env=dict(os.environ, CC=cc), timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_the_wheel_is_binary_only_where_the_fast_path_can_be_built():
    pytest.importorskip("setuptools")
    pytest.importorskip("cffi")
    pytest.importorskip("pycparser")
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler here")
    assert _probe(shutil.which("cc") or shutil.which("gcc")) == "True"
    assert _probe("/nonexistent/cc") == "False"


def test_a_built_wheel_is_tagged_for_this_interpreter_and_carries_the_extensions(tmp_path):
    pytest.importorskip("cffi")
    pytest.importorskip("setuptools")
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler here")
    src = tmp_path / "src"
    # A copy without build outputs (a source checkout as pip sees it).
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(".git", ".venv", ".cache", "build", "*.egg-info",
                                                             "__pycache__", "_fastlib", ".whl", ".fastsrc"))
    shutil.copytree(REPO / "pygraphrt" / "_fastlib", src / "pygraphrt" / "_fastlib",
                    ignore=shutil.ignore_patterns("*.so", "*.stamp", "__pycache__"))
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                        "-w", str(tmp_path / "out"), str(src)], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    (wheel,) = (tmp_path / "out").glob("*.whl")
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    assert f"-{tag}-{tag}-" in wheel.name and "none-any" not in wheel.name, wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    for binding in ("cuda12", "cuda13", "hip6", "hip7"):
        assert f"pygraphrt/_fastlib/_{binding}{suffix}" in names, names
    assert "pygraphrt/_bindings/cuda13/_ffi.py" in names and "pygraphrt/py.typed" in names
