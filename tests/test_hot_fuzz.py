"""pygraphrt's fast paths against the paths they shortcut, on generated calls (tests/hot_fuzz.py).

In the compiled-mode pass of the suite the compiled hot methods are held to the Python methods
they replaced; in the ABI-mode pass the Python methods' fast paths (inlined adds, kernels'
generated adders and launches, ``add_nodes``' loop) to their general paths.  Each run draws
``PYGRAPHRT_FUZZ_EXAMPLES`` programs (default 1500, the same ones each run: derandomized)
against the fake libcudart, without and with the driver's stand-ins -- with them, the kernel
launches too (the fake records them).  A run that finds a difference fails with the smallest
program hypothesis reduced it to.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pygraphrt import _fast

from .test_cuda13x import REPO, build_fake_cudart

pytestmark = pytest.mark.headers

EXAMPLES = int(os.environ.get("PYGRAPHRT_FUZZ_EXAMPLES", "1500"))
#: The mode of the pass: ABI mode where PYGRAPHRT_FAST says 0, else compiled mode where it is built.
MODE = "0" if os.environ.get("PYGRAPHRT_FAST") == "0" or _fast.extension_path("cuda13") is None else "1"


@pytest.mark.parametrize("fake", ["runtime", "driver"])
def test_fast_paths_agree_with_the_paths_they_shortcut(fake, tmp_path):
    lib = build_fake_cudart(tmp_path / "libcudart.so.13", driver_direct=fake == "driver")
    env = dict(os.environ, PYTHONPATH=str(REPO), PYGRAPHRT_BACKEND="cuda", PYGRAPHRT_CUDART=str(lib),
               PYGRAPHRT_FAST=MODE)
    r = subprocess.run([sys.executable, "-m", "tests.hot_fuzz", str(EXAMPLES)], capture_output=True, text=True,
                       env=env, cwd=str(REPO), timeout=1200)
    assert r.returncode == 0, (r.stdout + r.stderr)[-6000:]
    ok, examples, calls, fast = r.stdout.split()
    assert ok == "ok" and int(examples) == EXAMPLES
    # the programs must reach the fast paths: about a third of the calls are plain enough for
    # the C; ABI mode's inlined paths take fewer (one dependency at most, for example)
    assert int(fast) > int(calls) // (5 if MODE == "1" else 20), r.stdout
