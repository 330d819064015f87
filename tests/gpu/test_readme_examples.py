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
    assert "True" in out  # the pool kept its memory by the release threshold
    d = namespace["d"]  # the kernel diamond's result: 1 * (10 + 3), then the private-pool graph's fill
    import struct
    assert struct.unpack("<f", d.to_bytes(4))[0] == 1.0
