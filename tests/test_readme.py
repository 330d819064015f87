"""The README's commands match what the scripts and CI run; its collectives example runs on sim."""

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    assert "bash scripts/test    # the test command" in readme
    assert "bash scripts/test" in (REPO / ".ci" / "run").read_text()
    assert "pytest -q tests" in (REPO / "scripts" / "test").read_text()


def collectives_example() -> str:
    """The README's ```python collectives block (the tensor-parallel step, ``tp_step.py``)."""
    (block,) = re.findall(r"```python collectives\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    return block


def test_the_collectives_example_runs_on_the_simulator(tmp_path):
    """``PYGRAPHRT_BACKEND=sim PYGRAPHRT_SIM_DEVICES=2 python tp_step.py`` as the README says:
    both ranks in one process, a thread each, the captured step replayed; each prints that its
    result equals numpy's."""
    script = tmp_path / "tp_step.py"
    script.write_text(collectives_example())
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "PYGRAPHRT_NCCL")}
    env.update(PYGRAPHRT_BACKEND="sim", PYGRAPHRT_SIM_DEVICES="2", PYTHONPATH=str(REPO))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=str(tmp_path),
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(r.stdout.splitlines()) == [f"rank {i}: y == W @ X + bias after 10 replays: True" for i in (0, 1)]
    readme = (REPO / "README.md").read_text()
    assert "NCCL_NVLS_ENABLE=0 torchrun --standalone --nproc-per-node 2 tp_step.py" in readme
    assert "PYGRAPHRT_BACKEND=sim PYGRAPHRT_SIM_DEVICES=2 python tp_step.py" in readme
