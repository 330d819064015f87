"""The public API is typed (py.typed ships): mypy passes over pygraphrt and bindgen."""

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.devtools  # needs the dev extras (mypy); runs in CI
REPO = Path(__file__).resolve().parent.parent


def test_mypy_clean():
    r = subprocess.run([sys.executable, "-m", "mypy"], cwd=str(REPO), capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (REPO / "pygraphrt" / "py.typed").exists()
