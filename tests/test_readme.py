"""The README's commands match what the scripts and CI run."""

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    assert "bash scripts/test    # the test command" in readme
    assert "bash scripts/test" in (REPO / ".ci" / "run").read_text()
    assert "pytest -q tests" in (REPO / "scripts" / "test").read_text()
