"""Generated calls of every public method (tests/api_fuzz.py): what returns is of its annotated
type; bad input is refused with pygraphrt's exceptions of the class the value calls for, never
an AttributeError, TypeError, OverflowError or crash from inside, a refused call leaves no
capture begun and no node added, and the runtime is never given a handle that is not a live one
of its kind.  On the simulator, which records such handles (a GPU's
runtime may crash on them), and on a GPU (marked ``gpu``), where the runtime itself sees every
call pygraphrt lets through: ``exe.launch(buf)`` crashed it.

First a sweep (each parameter of each method given each of some 35 odd values, about 34 000
calls), then ``PYGRAPHRT_API_FUZZ_EXAMPLES`` programs (default 1500; the same ones each run:
derandomized) of one to four calls each; about 40 s in all.  The run is a subprocess, so that a
crash fails this test with the call that caused it rather than ending the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .test_cuda13x import REPO

EXAMPLES = os.environ.get("PYGRAPHRT_API_FUZZ_EXAMPLES", "1500")


@pytest.mark.parametrize("backend", ["sim", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_every_public_call_refuses_bad_input_cleanly(tmp_path, backend):
    current = tmp_path / "current-call.txt"
    # (the repository first; what PYTHONPATH held stays: on the GPU machine, where cffi comes from)
    path = os.pathsep.join([str(REPO)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))
    env = {**os.environ, "PYGRAPHRT_BACKEND": backend, "PYGRAPHRT_FUZZ_BACKEND": backend, "PYTHONPATH": path,
           "PYGRAPHRT_FUZZ_CURRENT": str(current)}
    for exploring in ("PYGRAPHRT_FUZZ_COLLECT", "PYGRAPHRT_FUZZ_SEED", "PYGRAPHRT_FUZZ_PROGRESS", "PYGRAPHRT_FUZZ_LOG",
                      "PYGRAPHRT_FUZZ_SYNC"):
        env.pop(exploring, None)
    # (in tmp_path: Graph.debug_dot and Library.from_file are given relative paths)
    r = subprocess.run([sys.executable, "-m", "tests.api_fuzz", EXAMPLES], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=900)
    last = current.read_text().strip() if current.exists() else "(none)"
    assert r.returncode == 0, (f"exit {r.returncode}; the last call made: {last}\n"
                               f"{r.stdout[-6000:]}\n{r.stderr[-6000:]}")
    words = r.stdout.split()
    assert words[:2] == ["ok", EXAMPLES], r.stdout
    calls, returned, refused, targets, swept, typed, checked = map(int, words[2:9])
    assert calls == returned + refused and targets > 300 and swept > 10 * targets, r.stdout
    # Most targets declare what they return, and those returns were checked (on sim, 783 of 913
    # targets -- the others are property setters, protocols, or annotated Any -- and about a third
    # of the returns: the rest are setters' and protocols')
    assert typed > 0.8 * targets and checked > returned // 5, r.stdout
    # Both outcomes are common (a run whose calls all fail early checks little past them; the
    # sweep's odd values are mostly refused).
    assert returned > calls // 10 and refused > calls // 2, r.stdout
