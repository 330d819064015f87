"""The README's "Several GPUs" example (its ```python multi-gpu block) runs as written: on the
simulator with two devices (Python twins of its kernels in tests/sim_kernels.py), and on a
machine with two GPUs (marked gpu; it skips, saying why, with fewer)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def example() -> str:
    blocks = re.findall(r"```python multi-gpu\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    assert len(blocks) == 1, "the README has one multi-GPU example"
    return blocks[0]


def run(code: str, **env: str) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if not k.startswith("PYGRAPHRT_")}
    path = os.pathsep.join([str(REPO)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))
    e.update(PYTHONPATH=path, **env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, cwd=str(REPO),
                          timeout=600)


def test_readme_multi_gpu_example_on_a_two_device_simulator():
    r = run("import tests.sim_kernels\n" + example(), PYGRAPHRT_BACKEND="sim", PYGRAPHRT_SIM_DEVICES="2",
            PYGRAPHRT_FAST=os.environ.get("PYGRAPHRT_FAST", "1"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "True 4"


def test_readme_multi_gpu_example_needs_two_devices_on_the_simulator():
    """With one device the example fails at its first use of device 1, naming it."""
    r = run("import tests.sim_kernels\n" + example(), PYGRAPHRT_BACKEND="sim", PYGRAPHRT_SIM_DEVICES="1")
    assert r.returncode != 0 and "InvalidDevice" in r.stderr and "device 1 does not exist" in r.stderr


@pytest.mark.gpu
@pytest.mark.devices(2)
def test_readme_multi_gpu_example_on_two_gpus():
    from .conftest import require_devices

    require_devices(2)
    r = run(example())
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "True 4"
