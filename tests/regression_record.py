"""The GPU's recorded outcomes of the differential regression programs (tests/differential.py).

The GPU test ``tests/gpu/test_sim_differential.py::test_record_regression_outcomes`` runs every
program of :data:`differential.REGRESSIONS` on the real runtime and writes the canonical traces
to ``regressions-<vendor>-<runtime version>.json`` (e.g. ``regressions-cuda-13.0.json``); those
files are committed under ``tests/expected/``.  CI (tests/test_differential_cpu.py) replays each
program on ``sim`` and compares its trace with every committed record, so the simulator is held
to what the GPU did -- not to itself.

A record file::

    {"vendor": "cuda", "runtime": "13.0", "runtime_version": 13000, "driver_version": 13000,
     "device": "NVIDIA H100 80GB HBM3",
     "programs": {"<name>": {"program": "<repr of the program>",
                             "trace": ["<repr of step 0's outcome>", ...]}}}

Traces are kept as the ``repr`` of each step (tuples, ints, strings and None only, read back with
:func:`ast.literal_eval`), one string a step, so a diff of the file shows which step moved.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

EXPECTED_DIR = Path(__file__).resolve().parent / "expected"
PREFIX = "regressions-"
PREFIX_2DEV = "regressions2dev-"  # the programs over two devices (differential.REGRESSIONS_2DEV), 2-GPU machines


def internal_errors(trace: list[Any]) -> list[str]:
    """The non-pygraphrt exceptions (``"py:TypeError"``) a trace records: a bug of the library or
    of the interpreter, never an outcome two backends may agree on."""
    return [e for e in repr(trace).split("'err', '")[1:] if e.startswith("py:")]


def record_file_name(vendor: str, runtime: str, prefix: str = PREFIX) -> str:
    return f"{prefix}{vendor}-{runtime}.json"


def make_record(vendor: str, runtime: str, runtime_version: int, driver_version: int | None,
                device: str, traces: dict[str, tuple[tuple, list[Any]]]) -> dict[str, Any]:
    """The record document of ``traces`` (name -> (program, trace))."""
    return {"vendor": vendor, "runtime": runtime, "runtime_version": runtime_version,
            "driver_version": driver_version, "device": device,
            "programs": {name: {"program": repr(program), "trace": [repr(step) for step in trace]}
                         for name, (program, trace) in traces.items()}}


def write_record(directory: Path, record: dict[str, Any], prefix: str = PREFIX) -> Path:
    path = Path(directory) / record_file_name(record["vendor"], record["runtime"], prefix)
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path


def load_records(directory: Path = EXPECTED_DIR, prefix: str = PREFIX) -> dict[str, dict[str, Any]]:
    """Every record file in ``directory`` (of ``prefix``'s kind), by file name."""
    return {p.name: json.loads(p.read_text()) for p in sorted(Path(directory).glob(f"{prefix}*.json"))}


def compare_with_record(name: str, program: tuple, sim_trace: list[Any], record: dict[str, Any],
                        record_name: str) -> str | None:
    """Why ``sim_trace`` (program ``name`` on ``sim``) disagrees with the GPU's record, or None.

    Fails when the record has no outcome for ``name``, when the recorded program is not the
    program replayed (the regression was edited after recording: record it again), and at the
    first step whose outcome differs (naming the step and both outcomes).
    """
    from .differential import first_difference

    entry = record.get("programs", {}).get(name)
    where = f"{record_name} ({record.get('vendor')} {record.get('runtime')}, driver {record.get('driver_version')})"
    if entry is None:
        return f"regression program {name!r} has no recorded outcome in {where}: record it on the GPU"
    if entry["program"] != repr(program):
        return (f"regression program {name!r} differs from the program recorded in {where} "
                f"(edited after recording? record it again on the GPU):\n  recorded: {entry['program']}\n"
                f"  now:      {program!r}")
    recorded = [ast.literal_eval(step) for step in entry["trace"]]
    diff = first_difference(recorded, sim_trace)
    if diff is None:
        return None
    return f"regression program {name!r}: sim (B) departs from the GPU's record (A) in {where} at {diff}"
