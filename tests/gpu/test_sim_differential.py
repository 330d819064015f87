"""Differential test: random API-call programs on ``cuda`` and on ``sim``, identical outcomes.

Each program (tests/differential.py: building, capturing, updating, launching; valid and
invalid calls) runs on the CUDA runtime and on the simulator, each in a fresh state, and the
canonical traces -- graph structures, parameters, buffer contents after launches, host-call
counts, exception classes -- must be equal.  No example database (the GPU machine is
ephemeral): a shrunk counterexample is printed as a Python literal; add it to
``differential.REGRESSIONS``, which the parametrized test replays.  The last test records the
runtime's outcomes of those programs (tests/regression_record.py), which CI holds ``sim`` to:
after adding a regression, record it on every runtime and commit the files under tests/expected/.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from .. import differential as D
from ..regression_record import PREFIX, PREFIX_2DEV, internal_errors, make_record, write_record

pytestmark = pytest.mark.gpu


def _report_path(what: str) -> str | None:
    report_dir = os.environ.get("PYGRAPHRT_GPU_REPORT_DIR")
    if not report_dir:
        return None
    runtime = os.environ.get("PYGRAPHRT_EXPECT_BINDING", "cuda") + "-" + os.environ.get("PYGRAPHRT_EXPECT_RUNTIME", "")
    return os.path.join(report_dir, f"differential-{what}-{runtime.rstrip('-')}.txt")


def _record(program: tuple, diff: str) -> None:
    # Hypothesis reports the shrunk program only when the test ends; a device call that runs
    # out of time would lose it.  So each failing program is written as soon as it is seen:
    # the file's last entry is the smallest counterexample found so far.
    path = _report_path("failures")
    if path:
        with open(path, "a") as f:
            f.write(f"{program!r}\n# {diff}\n\n")


def _announce(program: tuple) -> None:
    # The program about to run, written before it runs: if the runtime crashes the process
    # (a segmentation fault in the vendor library), this file names the program that did it.
    path = _report_path("current")
    if path:
        with open(path, "w") as f:
            f.write(f"{program!r}\n")


def _check(program: tuple) -> None:
    _announce(program)
    a, b = D.compare(program, "cuda", "sim")
    diff = D.first_difference(a, b)
    if diff is not None:
        _record(program, diff)
    assert diff is None, f"cuda (A) and sim (B) differ for\n{program!r}\n{diff}"
    # the same internal error on both sides is a shared bug, not agreement (as on the CPU)
    for side, trace in (("cuda (A)", a), ("sim (B)", b)):
        py = internal_errors(trace)
        assert not py, f"a non-pygraphrt exception ({py[0].split(chr(39))[0]}) on {side} in {program!r}:\n{trace!r}"


# No explain phase: on a GPU it re-ran the failing program hundreds of times (5 minutes) to
# say which lines only failing runs reach; the shrunk program and the first differing step
# say more.
# 1000 examples take about 6 minutes on an H100 when they all agree (fresh backends each side);
# PYGRAPHRT_DIFFERENTIAL_EXAMPLES changes the number (never below 1000 for a result to report).
@settings(max_examples=int(os.environ.get("PYGRAPHRT_DIFFERENTIAL_EXAMPLES", "1000")), deadline=None,
          database=None, print_blob=True,
          suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink])
@given(D.programs())
def test_cuda_and_sim_agree_on_random_programs(program):
    _check(program)


@pytest.mark.parametrize("program", [p for _, p in D.REGRESSIONS], ids=[name for name, _ in D.REGRESSIONS])
def test_cuda_and_sim_agree_on_regressions(program):
    _check(program)


# Programs over 2 devices (D.programs(devices=2)): on a 2-GPU machine; each side fresh, the
# simulator with 2 devices.  Fewer examples by default than the one-device test (each runs on
# two devices with their synchronizations): PYGRAPHRT_DIFFERENTIAL_EXAMPLES_2DEV changes it.
@settings(max_examples=int(os.environ.get("PYGRAPHRT_DIFFERENTIAL_EXAMPLES_2DEV", "300")), deadline=None,
          database=None, print_blob=True,
          suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink])
@given(D.programs(devices=2))
def _random_programs_on_two_devices(program):
    _check(program)


def test_cuda_and_sim_agree_on_random_programs_over_two_devices():
    from ..conftest import require_devices

    require_devices(2)
    _random_programs_on_two_devices()


@pytest.mark.parametrize("program", [p for _, p in D.REGRESSIONS_2DEV], ids=[name for name, _ in D.REGRESSIONS_2DEV])
def test_cuda_and_sim_agree_on_two_device_regressions(program):
    from ..conftest import require_devices

    require_devices(2)
    _check(program)


def _record_outcomes(tmp_path, programs, device_label, prefix, what: str) -> None:
    """Run ``programs`` (name, program) on the runtime and write their outcomes as a regression
    record of ``prefix``'s kind to ``$PYGRAPHRT_REGRESSION_RECORD_DIR`` (else
    ``$PYGRAPHRT_GPU_REPORT_DIR``, scripts/gpu-test's $OUT; else a temporary folder).
    ``device_label()``: the record's device name."""
    import pygraphrt

    info = pygraphrt.backend()
    assert info.vendor != "sim", "the record is the real runtime's"
    traces = {}
    for name, program in programs:
        _announce(program)
        trace = D.run_program(program, info.vendor)
        py = internal_errors(trace)
        assert not py, f"a non-pygraphrt exception ({py[0].split(chr(39))[0]}) in {name}:\n{trace!r}"
        traces[name] = (program, trace)
    record = make_record(info.vendor, info.runtime_version_str, info.runtime_version, info.driver_version,
                         device_label(), traces)
    directory = os.environ.get("PYGRAPHRT_REGRESSION_RECORD_DIR") or os.environ.get("PYGRAPHRT_GPU_REPORT_DIR") \
        or str(tmp_path)
    os.makedirs(directory, exist_ok=True)
    path = write_record(Path(directory), record, prefix)
    print(f"recorded {len(traces)} {what} to {path}")


def test_record_regression_outcomes(tmp_path):
    """Run every regression program on the runtime and write its outcomes to
    ``regressions-<vendor>-<runtime>.json`` (:func:`_record_outcomes`), for tests/expected/ --
    what tests/test_differential_cpu.py compares ``sim`` with."""
    import pygraphrt

    def device_label() -> str:
        try:
            return pygraphrt.current_device().info().name
        except Exception as e:  # the record stays useful without the name
            return f"unknown ({type(e).__name__})"

    _record_outcomes(tmp_path, D.REGRESSIONS, device_label, PREFIX, "regression programs")


def test_record_two_device_regression_outcomes(tmp_path):
    """As test_record_regression_outcomes, for the programs over two devices (REGRESSIONS_2DEV),
    on a 2-GPU machine: ``regressions2dev-<vendor>-<runtime>.json``, which
    tests/test_differential_cpu.py holds the 2-device simulator to."""
    import pygraphrt
    from ..conftest import require_devices

    require_devices(2)
    _record_outcomes(tmp_path, D.REGRESSIONS_2DEV, lambda: f"2 x {pygraphrt.current_device().info().name}",
                     PREFIX_2DEV, "two-device regression programs")
