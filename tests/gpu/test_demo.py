"""The main job's demo on a real GPU.  (The documentation's examples run on the GPU through
tests/test_docs_examples.py, each alone.)"""

from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu


def test_main_job_demo_runs_on_the_gpu():
    """scripts/main's last step, ``python -m pygraphrt demo``, runs the seed workflow on the GPU
    where there is one (on the simulator only where there is none)."""
    import os
    import subprocess
    import sys

    import pygraphrt as rt

    if rt.backend().vendor == "sim":
        pytest.skip("runs on a GPU: on the simulator, tests/test_sim.py checks the demo")
    repo = Path(__file__).resolve().parents[2]
    path = os.pathsep.join([str(repo)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))
    r = subprocess.run([sys.executable, "-m", "pygraphrt", "demo"], capture_output=True, text=True,
                       cwd=str(repo), env=dict(os.environ, PYTHONPATH=path), timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "running on the GPU: " in r.stdout and "SIMULATOR" not in r.stdout
    assert "captured graph: 4 nodes, 4 edges" in r.stdout and "(correct)" in r.stdout
