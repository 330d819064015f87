"""pygraphrt's fast paths against the paths they shortcut, on generated calls (tests/hot_fuzz.py).

In the compiled-mode pass of the suite the compiled hot methods are held to the Python methods
they replaced; in the ABI-mode pass the Python methods' fast paths (inlined adds, kernels'
generated adders and launches, ``add_nodes``' loop) to their general paths.  Each run draws
``PYGRAPHRT_FUZZ_EXAMPLES`` programs (default 1500 on CUDA, 1000 on HIP; the same ones each
run: derandomized) against a fake runtime: the fake libcudart without and with the driver's
stand-ins (with them, kernel launches, which it records), and the fake libamdhip64 on each
pinned HIP header set (its kernels run at launch, on the host).  A run that finds a difference
fails with the smallest program hypothesis reduced it to.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pygraphrt import _fast

from .test_cuda13x import REPO, build_fake_cudart
from .test_hip_fake import HIP_SETS, build_fake

pytestmark = pytest.mark.headers

EXAMPLES = os.environ.get("PYGRAPHRT_FUZZ_EXAMPLES")


def _mode(binding: str) -> str:
    """The pass's mode: ABI where PYGRAPHRT_FAST says 0 or the binding's extension is not built."""
    return "0" if os.environ.get("PYGRAPHRT_FAST") == "0" or _fast.extension_path(binding) is None else "1"


@pytest.mark.parametrize("fake", ["cuda13", "cuda13 with the driver's functions", *HIP_SETS])
def test_fast_paths_agree_with_the_paths_they_shortcut(fake, tmp_path):
    if fake in HIP_SETS:
        lib = build_fake(tmp_path / "libamdhip64.so", fake)
        env = {"PYGRAPHRT_BACKEND": "hip", "PYGRAPHRT_HIP_LIB": str(lib)}
        binding, examples = fake, EXAMPLES or "1000"  # (a HIP header set is named as its binding)
    else:
        lib = build_fake_cudart(tmp_path / "libcudart.so.13", driver_direct="driver" in fake)
        env = {"PYGRAPHRT_BACKEND": "cuda", "PYGRAPHRT_CUDART": str(lib)}
        binding, examples = "cuda13", EXAMPLES or "1500"
    mode = _mode(binding)
    r = subprocess.run([sys.executable, "-m", "tests.hot_fuzz", examples], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])), PYGRAPHRT_FAST=mode, **env), cwd=str(REPO),
                       timeout=1200)
    assert r.returncode == 0, (r.stdout + r.stderr)[-6000:]
    ok, made, calls, fast = r.stdout.split()
    assert ok == "ok" and made == examples
    # the programs must reach the fast paths: in compiled mode a fifth to a third of the calls
    # succeed in C; ABI mode's inlined paths take fewer (at most one dependency, for instance),
    # a tenth to a seventh.  (The bounds leave room for another hypothesis to draw otherwise.)
    assert int(fast) > int(calls) // (8 if mode == "1" else 20), r.stdout
