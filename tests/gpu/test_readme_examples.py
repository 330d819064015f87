"""The README's Python examples run as written (in order, sharing names) on a real GPU."""

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu


def test_readme_examples_run(capsys):
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 4
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)
    out = capsys.readouterr().out
    assert "4 4" in out and "UpdateResult.TOPOLOGY_CHANGED" in out
    assert "argument 0 (float* y): a float where a pointer is declared" in out
    # the pool kept its memory by the release threshold: that print is the only bare boolean line
    assert [line for line in out.splitlines() if line in ("True", "False")] == ["True"], out
    d = namespace["d"]  # the kernel diamond's result: 1 * (10 + 3), then the private-pool graph's fill
    import struct
    assert struct.unpack("<f", d.to_bytes(4))[0] == 1.0
    # The conditional-node example: ten WHILE iterations; the captured loop has the same shape.
    assert struct.unpack("<f", namespace["acc"].to_bytes(4))[0] == 10.0
    assert "True while {'kind': 'while', 'handle': " in out
    # The compute-graph example: its drawing in the README is what it draws; rebinding x
    # updated exactly the two nodes using x, and the data is right.
    (drawn,) = re.findall(r"```dot\n(.*?)```", text, re.S)
    assert namespace["dot"] == drawn
    assert "[Hazard('x_0', RAW)]" in out
    report = namespace["graph"].last_update
    assert report.nodes == ("copy_to_x", "print_x_y") and report.setter_calls == 2 and not report.rebuilt
    import numpy as np
    x_new = np.frombuffer(namespace["x"].value.to_bytes(), np.float32)
    y = np.frombuffer(namespace["y"].value.to_bytes(), np.float32)
    assert np.array_equal(x_new, 1.0 + np.arange(1024, dtype=np.float32)) and np.array_equal(x_new, y)


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
