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


def collectives_torchrun_command() -> str:
    """The README's command that runs ``tp_step.py`` under torchrun (the indented line of the
    Collectives section), as written there: tests/gpu/test_nccl.py runs exactly it."""
    (line,) = re.findall(r"^ {4}((?:\w+=\S+ )*torchrun .*tp_step\.py)$", (REPO / "README.md").read_text(), re.M)
    return line


def test_the_collectives_example_runs_on_the_simulator(tmp_path):
    """``PYGRAPHRT_BACKEND=sim PYGRAPHRT_SIM_DEVICES=2 python tp_step.py`` as the README says:
    both ranks in one process, a thread each, the captured step replayed; each prints that its
    result equals numpy's."""
    script = tmp_path / "tp_step.py"
    script.write_text(collectives_example())
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "PYGRAPHRT_NCCL")}
    env.update(PYGRAPHRT_BACKEND="sim", PYGRAPHRT_SIM_DEVICES="2", PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=str(tmp_path),
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(r.stdout.splitlines()) == [f"rank {i}: y == W @ X + bias after 10 replays: True" for i in (0, 1)]
    readme = (REPO / "README.md").read_text()
    assert collectives_torchrun_command() == "NCCL_NVLS_ENABLE=0 torchrun --standalone --nproc-per-node 2 tp_step.py"
    assert "PYGRAPHRT_BACKEND=sim PYGRAPHRT_SIM_DEVICES=2 python tp_step.py" in readme


def test_main_job_fetches_only_what_it_needs():
    """The main job installs pygraphrt and runs the demo: the pinned headers (bindgen fetch), the
    cuda-bindings wheels and ``bindgen --check`` are the test command's; the README says what
    each downloads."""
    main = (REPO / "scripts" / "main").read_text()
    env = (REPO / "scripts" / "_env").read_text()
    test = (REPO / "scripts" / "test").read_text()
    test_env = (REPO / "scripts" / "_test_env").read_text()
    for text in (main, env):
        code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
        assert "bindgen" not in code and "cuda-bindings" not in code and "dev," not in code, text
    assert "python -m pygraphrt demo" in main
    assert "bindgen fetch" in test_env and "cuda-bindings" in test_env
    assert ". scripts/_test_env" in test and "python -m bindgen --check" in test
    readme = (REPO / "README.md").read_text()
    setup = readme[readme.index("## Set-up on a fresh machine"):readme.index("## Install")]
    assert "main job downloads about 10 MB" in setup and "network access" in setup and "520 MB" in setup


def test_readme_tables_have_one_header_row():
    """Every Markdown table: a header row, the separator right below it and nowhere else, and
    every row as wide as the header."""
    lines = (REPO / "README.md").read_text().splitlines()
    tables, cur = [], []
    for i, line in enumerate(lines + [""]):
        if line.startswith("|"):
            cur.append((i + 1, line))
        elif cur:
            tables.append(cur)
            cur = []
    assert tables
    for table in tables:
        cells = [line.strip().strip("|").count("|") + 1 - line.count("\\|") for _, line in table]
        seps = [n for n, line in table if set(line) <= set("|-: ")]
        where = f"README.md line {table[0][0]}"
        assert seps == [table[1][0]], f"{where}: separator rows at {seps}"
        assert len(set(cells)) == 1, f"{where}: rows of {sorted(set(cells))} cells"
