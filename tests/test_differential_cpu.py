"""The differential interpreter (tests/differential.py) on the simulator alone, in CI.

The same random programs the GPU test runs against ``cuda`` and ``sim`` run here twice on
``sim`` (each in a fresh state, the second with a random valid node order at every launch),
through the same :func:`differential.compare` the GPU test uses.  Equal traces prove the
interpreter deterministic and its masks of undetermined bytes sound for every order the
graph allows; the figures prove the programs reach far enough to matter (launches with data
compared, exceptions raised, captures ended).

The regression programs (counterexamples the GPU found) are held to the GPU's recorded outcomes:
each runs on ``sim`` and its trace must equal the trace every committed record
(tests/expected/regressions-<vendor>-<runtime>.json, written on the GPU machine by
tests/gpu/test_sim_differential.py::test_record_regression_outcomes) holds for it.
"""

from __future__ import annotations

import zlib

import pytest
from hypothesis import HealthCheck, given, settings

from . import differential as D
from . import regression_record as R

EXAMPLES = 100


def _order(program: tuple) -> str:
    return f"random:{zlib.crc32(repr(program).encode())}"


def _check(program: tuple, stats: dict[str, int] | None = None) -> list:
    a, b = D.compare(program, "sim", "sim", order_b=_order(program), stats=stats)
    diff = D.first_difference(a, b)
    assert diff is None, f"sim vs sim (random order) differ for {program!r}\n{diff}"
    py = R.internal_errors(a)
    assert not py, f"a non-pygraphrt exception ({py[0].split(chr(39))[0]}) in {program!r}:\n{a!r}"
    return a


def test_random_programs_sim_vs_sim():
    figures = {"programs": 0, "launched": 0, "data_masked": 0, "raised": 0, "captured": 0,
               "capture_failed": 0, "steps": 0}

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(D.programs())
    def run(program):
        stats: dict[str, int] = {}
        trace = _check(program, stats)
        text = repr(trace)
        figures["programs"] += 1
        figures["steps"] += len(program)
        figures["launched"] += stats.get("launched", 0) > 0
        figures["data_masked"] += ".." in text
        figures["raised"] += stats.get("errors", 0) > 0
        caps = [t for t in trace if t[0] == "capture" and len(t) == 4]
        figures["captured"] += any(t[2][0] == "ok" for t in caps)
        figures["capture_failed"] += any(t[2][0] == "err" for t in caps)

    run()
    print("differential figures:", figures)
    n = figures["programs"]
    assert n >= EXAMPLES
    # Lower bounds about two thirds of what was measured with these settings (derandomized, so
    # the same 100 programs each run): launched 88, raised 50, captured 9, capture_failed 17,
    # data_masked 11.
    assert figures["launched"] >= 0.6 * n, figures        # reached a launch, data compared after it
    assert figures["raised"] >= 0.35 * n, figures         # at least one call raised
    assert figures["captured"] >= 0.05 * n, figures       # a capture ended with a graph
    assert figures["capture_failed"] >= 0.1 * n, figures  # a capture ended with an exception
    assert figures["data_masked"] >= 0.06 * n, figures    # undetermined bytes were masked


def test_random_programs_over_two_devices_sim_vs_sim():
    """Programs over 2 devices (streams, events and buffers of both, nodes placed on either,
    peer access on and off) on a 2-device simulator, twice: deterministic, masks sound, and they
    reach both devices' work."""
    figures = {"programs": 0, "launched": 0, "on_device_1": 0, "peer": 0, "raised": 0}

    @settings(max_examples=40, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(D.programs(devices=2))
    def run(program):
        assert program[0] == ("devices", 2)
        stats: dict[str, int] = {}
        trace = _check(program, stats)
        assert trace[0] == ("devices", ("ok", 2)), trace[0]
        figures["programs"] += 1
        figures["launched"] += stats.get("launched", 0) > 0
        figures["raised"] += stats.get("errors", 0) > 0
        # a step made with device 1 current that succeeded
        figures["on_device_1"] += any(t[0] == "on" and t[1] == 1 and "'ok'" in repr(t[2]) for t in trace)
        figures["peer"] += any(t[0] == "peer" for t in trace)

    run()
    print("differential figures (2 devices):", figures)
    n = figures["programs"]
    assert n >= 40
    assert figures["launched"] >= 0.5 * n, figures
    assert figures["on_device_1"] >= 0.9 * n, figures  # the prologue's buffer at least
    assert figures["raised"] >= 0.2 * n, figures
    assert figures["peer"] >= 0.05 * n, figures


RECORDS_2DEV = R.load_records(prefix=R.PREFIX_2DEV)


@pytest.mark.parametrize("name,program", D.REGRESSIONS_2DEV, ids=[name for name, _ in D.REGRESSIONS_2DEV])
def test_two_device_regression_programs_on_sim_match_the_gpu_record(name, program):
    """Each runs on a 2-device simulator (sim against sim in a random order), reaches device 1,
    raises nothing of Python's own, and gives the outcomes two GPUs gave (the committed
    regressions2dev-<vendor>-<runtime>.json records, written on a 2-GPU machine)."""
    trace = _check(program)
    assert trace[0] == ("devices", ("ok", 2))
    assert any(t[0] == "on" for t in trace)
    assert RECORDS_2DEV, f"no 2-GPU record of the two-device regression programs in {R.EXPECTED_DIR}"
    problems = [p for file, record in RECORDS_2DEV.items()
                if (p := R.compare_with_record(name, program, trace, record, file)) is not None]
    assert not problems, "\n\n".join(problems)


def test_two_device_programs_need_two_devices():
    """On a one-device backend the devices step fails, saying so in the trace."""
    from .backends import selected

    interp = D.Interpreter()
    with selected("sim"):
        try:
            interp.setup()
            assert interp.do_devices(2) == (("err", "py:RuntimeError"),)
        finally:
            interp.close()


RECORDS = R.load_records()


def test_gpu_records_of_the_regressions_exist():
    """At least one runtime's record is committed (none would make the comparison below vacuous),
    and no record keeps a program REGRESSIONS no longer has (renamed: record it again)."""
    assert RECORDS, (f"no GPU record of the regression programs in {R.EXPECTED_DIR} "
                     f"({R.PREFIX}<vendor>-<runtime>.json): run "
                     f"tests/gpu/test_sim_differential.py::test_record_regression_outcomes on the GPU")
    names = {name for name, _ in D.REGRESSIONS}
    for file, record in RECORDS.items():
        stale = sorted(set(record["programs"]) - names)
        assert not stale, f"{file} records programs REGRESSIONS does not have: {stale}"


@pytest.mark.parametrize("name,program", D.REGRESSIONS, ids=[name for name, _ in D.REGRESSIONS])
def test_regression_programs_on_sim_match_the_gpu_record(name, program):
    trace = _check(program)  # sim against sim in a random order, no internal error
    assert RECORDS, f"no GPU record of the regression programs in {R.EXPECTED_DIR}"
    problems = [p for file, record in RECORDS.items()
                if (p := R.compare_with_record(name, program, trace, record, file)) is not None]
    assert not problems, "\n\n".join(problems)


def test_compare_with_record_names_the_program_and_the_step(tmp_path):
    """The comparator, on a small record written by hand into a temporary folder: equal traces
    pass; a changed step, a missing program and an edited program each fail, saying which."""
    name, program = D.REGRESSIONS[0]
    trace = D.run_program(program, "sim")
    traces = {name: (program, trace)}
    R.write_record(tmp_path, R.make_record("cuda", "99.1", 99010, 99010, "a hand-made record", traces))
    records = R.load_records(tmp_path)
    assert list(records) == ["regressions-cuda-99.1.json"]
    record = records["regressions-cuda-99.1.json"]
    assert R.compare_with_record(name, program, trace, record, "r.json") is None
    moved = list(trace)
    moved[4] = ("memset", 0, ("err", "InvalidValue"))
    why = R.compare_with_record(name, program, moved, record, "r.json")
    assert why is not None and f"{name!r}" in why and "step 4:" in why and "InvalidValue" in why, why
    shorter = trace[:-1]
    why = R.compare_with_record(name, program, shorter, record, "r.json")
    assert why is not None and "differ in length" in why, why
    why = R.compare_with_record("not-recorded", program, trace, record, "r.json")
    assert why is not None and "'not-recorded' has no recorded outcome in r.json" in why, why
    edited = program + (("graph",),)
    why = R.compare_with_record(name, edited, trace, record, "r.json")
    assert why is not None and "differs from the program recorded" in why, why
    assert R.load_records(tmp_path / "empty") == {}


def test_compare_reports_a_difference():
    """first_difference names the step where two traces part."""
    a = D.run_program(D.REGRESSIONS[0][1], "sim")
    b = list(a)
    b[3] = ("memset", "changed")
    assert D.first_difference(a, a) is None
    assert D.first_difference(a, b).startswith("step 3:")
