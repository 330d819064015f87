"""Every code example in the documentation (``docs/**/*.md`` and the README) runs, each alone.

The mechanism is Sybil's MyST code-block parser (``sybil.parsers.myst.CodeBlockParser``), with an
evaluator that runs each block as a script in a fresh interpreter: a fresh namespace and a fresh
pygraphrt (backend, simulator settings, registered kernels), so an example that leans on a name
from an earlier one fails here.  The convention (docs/guide/index.md says it to writers):

- a ```` ```python ```` block runs on the simulator (``PYGRAPHRT_BACKEND=sim``, two simulated
  devices); in a GPU run (``scripts/gpu-test``) it runs on the GPU as well;
- a block whose first line is ``# requires: gpu`` runs only on a real GPU; ``# requires: 2 gpus``
  needs two; ``# requires: torch`` needs torch importable; they combine (``# requires: gpu,
  torch``).  Elsewhere such a block skips, saying what it needs;
- ```` ```text ````, ```` ```console ````, ```` ```bash ```` (and any other language) are not run.

Examples check their own results with ``assert``; the checks of the old README tests that are
not an example's own (the drawing the compute-graph page shows, the one-device failure of the
several-GPU example) are below.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"

# CI installs the docs extra, and a GPU run (PYGRAPHRT_REQUIRE_GPU=1, scripts/gpu-test: Sybil's wheel
# in .whl/) must run the GPU examples: there a missing Sybil is a failure, elsewhere a skip saying why
if os.environ.get("CI") or os.environ.get("PYGRAPHRT_REQUIRE_GPU") == "1":
    import sybil  # noqa: F401
else:
    pytest.importorskip("sybil", reason="the docs extra is not installed (pip install -e '.[docs]'; its "
                                        "releases need Python >= 3.11)")
from sybil import Sybil  # noqa: E402
from sybil.parsers.myst import CodeBlockParser  # noqa: E402

KNOWN_REQUIREMENTS = {"gpu", "2 gpus", "torch"}
# Plain examples run on the GPU too in a GPU run; these pages' are run there otherwise
GPU_RUN_ELSEWHERE = {"docs/guide/collectives.md": "tests/gpu/test_nccl.py runs it on two GPUs under torchrun, as the page says"}
REQUIRES = re.compile(r"#\s*requires:\s*(.*)")


def requirements(source: str) -> set[str]:
    """What an example's first line says it needs (``# requires: gpu, torch``), else nothing."""
    first = source.lstrip("\n").split("\n", 1)[0]
    m = REQUIRES.fullmatch(first.strip())
    if not m:
        return set()
    wanted = {w.strip() for w in m.group(1).split(",") if w.strip()}
    unknown = wanted - KNOWN_REQUIREMENTS
    if unknown:
        raise ValueError(f"unknown requirement {sorted(unknown)}: known are {sorted(KNOWN_REQUIREMENTS)}")
    if "2 gpus" in wanted:
        wanted.add("gpu")
    return wanted


def run_source(source: str, where: str, backend: str, cwd: Path, extra_env: dict[str, str] | None = None,
               timeout: int = 600) -> subprocess.CompletedProcess:
    """``source`` as a script in a fresh interpreter, from ``cwd``, pygraphrt from this checkout."""
    # the caller's runtime choices (PYGRAPHRT_CUDART, _NVRTC, _FAST, ... as scripts/gpu-test sets them)
    # pass; the backend and the simulator's settings are the example's own
    env = {k: v for k, v in os.environ.items() if k != "PYGRAPHRT_BACKEND" and not k.startswith("PYGRAPHRT_SIM_")}
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        env.pop(k, None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    if backend == "sim":
        env.update(PYGRAPHRT_BACKEND="sim", PYGRAPHRT_SIM_DEVICES="2")
    env.update(extra_env or {})
    script = cwd / "example.py"
    # blank lines up to the block's first line: a traceback names the line of the docs page
    line = int(where.rsplit(":", 1)[1])
    script.write_text("\n" * line + source)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=str(cwd),
                          timeout=timeout)


def evaluate(example) -> None:  # Sybil's evaluator: the backend and folder come with the example
    where = f"{Path(example.path).relative_to(REPO)}:{example.line}"
    r = run_source(example.parsed, where, example.namespace["backend"], example.namespace["cwd"])
    if r.returncode != 0:
        raise AssertionError(f"{where} (on {example.namespace['backend']}) exited {r.returncode}:\n"
                             f"{r.stdout[-4000:]}\n{r.stderr[-6000:]}")


SYBIL = Sybil(parsers=[CodeBlockParser(language="python", evaluator=evaluate)], patterns=["*.md"], path=str(REPO))


def pages() -> list[Path]:
    return [REPO / "README.md"] + sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts)


def examples() -> list:
    found = []
    for page in pages():
        for example in SYBIL.parse(page):
            found.append(example)
    return found


def cases() -> list:
    out = []
    for example in examples():
        name = f"{Path(example.path).relative_to(REPO)}:{example.line}"
        if "gpu" not in requirements(example.parsed):
            out.append(pytest.param(example, "sim", id=f"{name}-sim"))
        out.append(pytest.param(example, "gpu", id=f"{name}-gpu", marks=[pytest.mark.gpu]))
    return out


@pytest.mark.parametrize("example, backend", cases())
def test_docs_example(example, backend, tmp_path):
    needs = requirements(example.parsed)
    if "torch" in needs:
        pytest.importorskip("torch", reason="torch is not importable here; the example says '# requires: torch'")
    if backend == "gpu":
        from .conftest import require_devices

        if os.environ.get("PYGRAPHRT_BACKEND") == "sim":
            pytest.skip("a GPU run of a docs example; PYGRAPHRT_BACKEND=sim here")
        page = Path(example.path).relative_to(REPO).as_posix()
        if page in GPU_RUN_ELSEWHERE and "gpu" not in needs:
            pytest.skip(GPU_RUN_ELSEWHERE[page])
        # a plain example that uses a second device (the simulator has two) needs two GPUs
        require_devices(2 if "2 gpus" in needs or "rt.Device(1)" in example.parsed else 1)
    example.namespace.clear()
    example.namespace.update(backend=backend, cwd=tmp_path)
    example.evaluate()


def test_the_docs_have_examples_on_each_guide_page():
    """The collector sees the examples (a page whose fences it misses would pass by running none)."""
    found = examples()
    assert len(found) >= 12, len(found)
    per_page = {Path(e.path).name for e in found}
    for page in ("README.md", "getting-started.md", "capture.md", "explicit-graphs.md", "kernels.md", "memory.md",
                 "control-flow.md", "compute-graph.md", "multidevice.md", "collectives.md", "simulator.md"):
        assert page in per_page, f"docs/**/{page} has no ```python example the docs test runs"


def test_python_fences_are_plain():
    """```` ```python ```` alone opens a run example: ```` ```python foo ```` or ```` ```py ```` would
    silently not run, so they are refused; every ``# requires:`` line names known requirements."""
    bad = []
    for page in pages():
        fence = None
        for n, line in enumerate(page.read_text().splitlines(), 1):
            if line.startswith("```"):
                if fence is None:
                    fence = line[3:].strip()
                    if fence != "python" and (fence.startswith("py") or fence.startswith("{code")):
                        bad.append(f"{page.relative_to(REPO)}:{n}: ```{fence}")
                else:
                    fence = None
    assert not bad, "fences the docs test would not run (write ```python):\n" + "\n".join(bad)
    for example in examples():
        requirements(example.parsed)  # raises on an unknown one


def _block_after(page: str, marker: str, lang: str = "python") -> str:
    text = (DOCS / page).read_text()
    start = text.index(marker)
    (block,) = re.findall(rf"```{lang}\n(.*?)```", text[start:], re.S)[:1]
    return block


def test_the_compute_graph_drawing_is_what_the_example_draws(tmp_path):
    """The ```dot drawing on the compute-graph page is what its example's ``graph.to_dot()`` returns."""
    page = (DOCS / "guide" / "compute-graph.md").read_text()
    (drawn,) = re.findall(r"```dot\n(.*?)```", page, re.S)
    (source,) = [e.parsed for e in SYBIL.parse(DOCS / "guide" / "compute-graph.md") if "graph.to_dot()" in e.parsed]
    out = tmp_path / "dot.txt"
    r = run_source(source + f"\nopen({str(out)!r}, 'w').write(dot)\n", "compute-graph.md:0", "sim", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert out.read_text() == drawn


def _multi_gpu_example() -> str:
    (source,) = [e.parsed for e in SYBIL.parse(DOCS / "guide" / "multidevice.md") if "partial_matvec" in e.parsed]
    return source


def test_the_several_gpus_example_needs_two_devices_on_the_simulator(tmp_path):
    """With one simulated device the example fails at its first use of device 1, naming it."""
    r = run_source(_multi_gpu_example(), "multidevice.md:0", "sim", tmp_path, {"PYGRAPHRT_SIM_DEVICES": "1"})
    assert r.returncode != 0 and "InvalidDevice" in r.stderr and "device 1 does not exist" in r.stderr


def collectives_example() -> str:
    """The collectives page's tensor-parallel step (``tp_step.py``)."""
    (source,) = [e.parsed for e in SYBIL.parse(DOCS / "guide" / "collectives.md") if "rank_main" in e.parsed]
    return source


def collectives_torchrun_command() -> str:
    """The collectives page's command that runs ``tp_step.py`` under torchrun (its indented
    line), as written there: tests/gpu/test_nccl.py runs exactly it."""
    (line,) = re.findall(r"^ {4}((?:\w+=\S+ )*torchrun .*tp_step\.py)$",
                         (DOCS / "guide" / "collectives.md").read_text(), re.M)
    return line


def test_the_collectives_example_runs_as_the_page_says(tmp_path):
    """``PYGRAPHRT_BACKEND=sim PYGRAPHRT_SIM_DEVICES=2 python tp_step.py``, as the page says: both
    ranks in one process, a thread each; each says its result equals numpy's.  (On two GPUs,
    tests/gpu/test_nccl.py runs the page's torchrun command.)"""
    page = (DOCS / "guide" / "collectives.md").read_text()
    assert collectives_torchrun_command() == "NCCL_NVLS_ENABLE=0 torchrun --standalone --nproc-per-node 2 tp_step.py"
    assert "PYGRAPHRT_BACKEND=sim PYGRAPHRT_SIM_DEVICES=2 python tp_step.py" in page
    r = run_source(collectives_example(), "collectives.md:0", "sim", tmp_path, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(r.stdout.splitlines()) == [f"rank {i}: y == W @ X + bias after 10 replays: True" for i in (0, 1)]
