"""The compiled hot methods against their own Python methods, on generated calls (tests/hot_fuzz.py).

Each run draws ``PYGRAPHRT_FUZZ_EXAMPLES`` programs (default 1500, the same ones each run:
derandomized) against the fake libcudart, without and with the driver's stand-ins -- with them,
the kernel launches too (the fake records them).  A run that finds a difference fails with the
smallest program hypothesis reduced it to.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .test_cuda13x import REPO, build_fake_cudart
from .test_fast_mode import needs_fast

pytestmark = pytest.mark.headers

EXAMPLES = int(os.environ.get("PYGRAPHRT_FUZZ_EXAMPLES", "1500"))


@needs_fast
@pytest.mark.skipif(os.environ.get("PYGRAPHRT_FAST") == "0",
                    reason="the C methods it tests are compiled mode's: it runs in the compiled-mode pass")
@pytest.mark.parametrize("fake", ["runtime", "driver"])
def test_c_and_python_methods_agree_on_generated_calls(fake, tmp_path):
    lib = build_fake_cudart(tmp_path / "libcudart.so.13", driver_direct=fake == "driver")
    env = dict(os.environ, PYTHONPATH=str(REPO), PYGRAPHRT_BACKEND="cuda", PYGRAPHRT_CUDART=str(lib),
               PYGRAPHRT_FAST="1")
    r = subprocess.run([sys.executable, "-m", "tests.hot_fuzz", str(EXAMPLES)], capture_output=True, text=True,
                       env=env, cwd=str(REPO), timeout=1200)
    assert r.returncode == 0, (r.stdout + r.stderr)[-6000:]
    ok, examples, calls, in_c = r.stdout.split()
    assert ok == "ok" and int(examples) == EXAMPLES
    # the programs must mostly reach the C: about a third of the calls are plain enough for it
    assert int(in_c) > int(calls) // 5, r.stdout
