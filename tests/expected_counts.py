"""Exact outcome counts that CI requires, kept in ``tests/expected/sim_counts.json``.

A test that runs a whole suite (the GPU tests on ``sim``, the conformance suite on ``sim``)
compares its passed / skipped / failed ... counts with the committed ones, so a test that
turns into a skip, or a case that stops running, fails CI instead of passing unnoticed.
The counts are kept per call mode (``abi``: ``PYGRAPHRT_FAST=0``; ``fast``: ``PYGRAPHRT_FAST=1``),
because scripts/test runs the suite in both.

They change on purpose (cases added, moved or reclassified) with::

    scripts/update-expected

which reruns the counting tests in both modes with ``PYGRAPHRT_UPDATE_EXPECTED=1`` (the tests
then write the counts they saw instead of comparing) -- review the diff of the file, commit it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

EXPECTED_FILE = Path(__file__).resolve().parent / "expected" / "sim_counts.json"
UPDATE_COMMAND = "scripts/update-expected  (or: PYGRAPHRT_UPDATE_EXPECTED=1 PYGRAPHRT_FAST=0|1 " \
                 "python -m pytest tests/test_sim.py -k '{test}')"


def call_mode() -> str:
    """``fast`` when the compiled fast path is asked for, ``abi`` otherwise (scripts/test's two runs)."""
    return "fast" if os.environ.get("PYGRAPHRT_FAST", "").strip() == "1" else "abi"


def counts_moved(expected: dict[str, int], actual: dict[str, int]) -> list[str]:
    """``"skipped: 11 -> 12"`` for each count that differs (a count absent on one side is 0)."""
    return [f"{k}: {expected.get(k, 0)} -> {actual.get(k, 0)}"
            for k in sorted(set(expected) | set(actual)) if expected.get(k, 0) != actual.get(k, 0)]


def check_counts(name: str, actual: dict[str, int], test: str, detail: str = "") -> None:
    """Fail unless ``actual`` equals the committed counts of ``name`` in this call mode.

    With ``PYGRAPHRT_UPDATE_EXPECTED=1`` the counts are written to the file instead (other
    entries kept) and the check passes.
    """
    key = f"{name} [{call_mode()}]"
    actual = {k: v for k, v in sorted(actual.items()) if v}
    doc = json.loads(EXPECTED_FILE.read_text()) if EXPECTED_FILE.exists() else {}
    if os.environ.get("PYGRAPHRT_UPDATE_EXPECTED") == "1":
        doc[key] = actual
        EXPECTED_FILE.parent.mkdir(exist_ok=True)
        EXPECTED_FILE.write_text(json.dumps(dict(sorted(doc.items())), indent=2) + "\n")
        print(f"\n{EXPECTED_FILE.name}: {key} = {actual} (written)")
        return
    how = f"if the change is intended, update the file: {UPDATE_COMMAND.format(test=test)}"
    assert key in doc, f"{EXPECTED_FILE} has no counts for {key!r} (saw {actual}); {how}{detail}"
    moved = counts_moved(doc[key], actual)
    assert not moved, (f"{key}: the counts moved from {EXPECTED_FILE.name}'s: {', '.join(moved)} "
                       f"(expected {doc[key]}, got {actual}); {how}{detail}")
