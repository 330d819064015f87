"""The suite's self-test: can each runtime case fail when the runtime gets its API wrong?

For each runtime API that runtime cases claim (``apis=``), the self-test falsifies that API
on the simulator -- :class:`~pygraphrt.conformance._calls.CallRecorder` with a ``fault``,
around the ``sim`` backend's library -- and runs the runtime cases claiming it:

``wrong-result``
    the call runs; where it succeeded, every value it wrote through a pointer argument is
    perturbed (numbers +1, handles moved, each field of a struct); where it refused,
    another error code comes back;
``no-effect``
    the call is not made and reports success (a refusal turned into success; a success
    whose effect never happened).

A case that still passes under both (its status ``passed`` or ``deviation``) *cannot fail*
where that API is concerned: its outcome does not depend on what the runtime did.  Only
cases that pass unfaulted are judged (a case failing already says nothing here), and the
faults apply to the case's own code, never to the runner's clean-up.

:data:`MAP_FILE` is the mapping checked (API -> runtime cases claiming it), committed so
that a change of it is made on purpose; :data:`KNOWN_FILE` lists the runtime cases known to
survive, each with why -- it may only shrink (tests/test_conformance_selftest.py).

    python -m pygraphrt.conformance.selftest            # the report (sim; about a minute)
    python -m pygraphrt.conformance.selftest --write-map
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence, TextIO

from ._calls import FAULT_MODES
from ._case import Case

__all__ = ["MAP_FILE", "KNOWN_FILE", "Survivor", "SelfTestReport", "claimed_map", "run_selftest",
           "load_map", "load_known"]

HERE = Path(__file__).resolve().parent
MAP_FILE = HERE / "selftest_map.json"
KNOWN_FILE = HERE / "selftest_known.json"
_PASSING = ("passed", "deviation")


def claimed_map(cases: Iterable[Case]) -> dict[str, list[str]]:
    """API -> the runtime cases that claim it (sorted; binding cases claim nothing here)."""
    out: dict[str, list[str]] = {}
    for c in cases:
        if c.kind != "runtime":
            continue
        for api in dict.fromkeys(c.apis):
            out.setdefault(api, []).append(c.id)
    return {api: sorted(ids) for api, ids in sorted(out.items())}


def load_map() -> dict[str, list[str]]:
    data: dict[str, list[str]] = json.loads(MAP_FILE.read_text(encoding="utf-8"))["map"]
    return data


def load_known() -> dict[str, dict[str, Any]]:
    """case id -> {"apis": the claimed APIs it survives, "why": why} (the committed known-list)."""
    data: dict[str, dict[str, Any]] = json.loads(KNOWN_FILE.read_text(encoding="utf-8"))["known"]
    return data


@dataclass
class Survivor:
    """A runtime case that passed with one of its claimed APIs falsified, every way."""

    case: str
    api: str
    reached: bool  # whether the faulted API was called at all while the case ran faulted


@dataclass
class SelfTestReport:
    baseline_failing: list[str] = field(default_factory=list)  # not judged: they fail unfaulted
    runs: int = 0  # faulted case runs
    caught: int = 0  # (api, case) pairs where a fault failed the case
    survivors: list[Survivor] = field(default_factory=list)
    duration_s: float = 0.0

    def cannot_fail(self) -> dict[str, list[str]]:
        """case id -> the claimed APIs it survives (every fault of them)."""
        out: dict[str, list[str]] = {}
        for s in self.survivors:
            out.setdefault(s.case, []).append(s.api)
        return dict(sorted(out.items()))

    def text(self) -> str:
        cf = self.cannot_fail()
        lines = [f"self-test: {self.runs} faulted runs, {self.caught} (API, case) pairs caught, "
                 f"{len(self.survivors)} survived ({len(cf)} runtime cases cannot fail for at least one API "
                 f"they claim); {len(self.baseline_failing)} cases not judged (they fail unfaulted); "
                 f"{self.duration_s:.1f} s"]
        for cid, apis in cf.items():
            lines.append(f"  CANNOT FAIL {cid}: passes with {', '.join(apis)} falsified ({' / '.join(FAULT_MODES)})")
        return "\n".join(lines)


def run_selftest(cases: Sequence[Case], apis: Iterable[str] | None = None, *,
                 modes: Sequence[str] = FAULT_MODES, out: TextIO | None = None) -> SelfTestReport:
    """Falsify each API (default: every API the runtime cases claim) in turn on the active
    backend (the simulator: the faults corrupt its library) and run the runtime cases
    claiming it; see the module docstring."""
    from ._runner import Environment, RunAborted, Runner

    env = Environment.active()
    if env.vendor != "sim":
        raise RuntimeError(f"the self-test corrupts the simulator's library; the active backend is {env.vendor}")
    rec = env.recorder
    if rec is None:
        raise RuntimeError(f"the runtime calls cannot be recorded here: {env.record_off}")
    runtime = [c for c in cases if c.kind == "runtime"]
    by_id = {c.id: c for c in runtime}
    # Judged by the case's outcome (and the runtime-case rules), not by the isolation checks:
    # a fault that leaks an object or leaves a capture running is not a fault the *case*
    # noticed.  Without the leak check (gc.collect() per case) the runs are also 2x faster.
    env = dataclasses.replace(env, live=None)
    runner = Runner(env, runtime, progress=False)
    report = SelfTestReport()
    t0 = time.perf_counter()

    def run(c: Case) -> str:
        try:
            return runner.run_case(c).outcome_status
        except RunAborted:
            return "aborted"

    passing = set()
    for c in runtime:
        rec.fault = None
        if run(c) in _PASSING:
            passing.add(c.id)
        elif runner.unmet(c) is None:
            report.baseline_failing.append(c.id)
    mapping = claimed_map(runtime)
    chosen = list(mapping) if apis is None else list(apis)
    try:
        for api in chosen:
            for cid in mapping.get(api, []):
                if cid not in passing:
                    continue
                c = by_id[cid]
                reached = False
                caught = False
                for mode in modes:
                    rec.fault = (api, mode)
                    rec.faulted = 0
                    status = run(c)
                    report.runs += 1
                    reached = reached or rec.faulted > 0
                    if status not in _PASSING:
                        caught = True
                        break
                if caught:
                    report.caught += 1
                else:
                    report.survivors.append(Survivor(cid, api, reached))
                    if out is not None:
                        print(f"  survives {api}: {cid}", file=out, flush=True)
    finally:
        rec.fault = None
    report.duration_s = time.perf_counter() - t0
    return report


def main(argv: Sequence[str] | None = None) -> int:
    import argparse
    import sys

    ap = argparse.ArgumentParser(prog="python -m pygraphrt.conformance.selftest",
                                 description="Falsify each runtime API on the simulator in turn; list the "
                                             "runtime cases that still pass.")
    ap.add_argument("--write-map", action="store_true", help=f"write {MAP_FILE.name} from the registry and exit")
    ap.add_argument("--api", action="append", default=None, help="only this API (repeatable)")
    ap.add_argument("--json", dest="json_out", default=None,
                    help="write the result here: runs, caught, cannot_fail (case -> APIs), baseline_failing")
    args = ap.parse_args(argv)
    import pygraphrt

    from . import load_cases

    cases = list(load_cases().values())
    if args.write_map:
        MAP_FILE.write_text(json.dumps({"about": "API -> the runtime cases claiming it: what the self-test "
                                                 "falsifies (pygraphrt/conformance/_selftest.py); regenerate with "
                                                 "python -m pygraphrt.conformance.selftest --write-map",
                                        "map": claimed_map(cases)}, indent=1) + "\n", encoding="utf-8")
        return 0
    pygraphrt.use("sim")
    report = run_selftest(cases, args.api, out=sys.stdout)
    print(report.text())
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({
            "runs": report.runs, "caught": report.caught, "cannot_fail": report.cannot_fail(),
            "unreached": sorted({s.case for s in report.survivors if not s.reached}),
            "baseline_failing": report.baseline_failing, "duration_s": round(report.duration_s, 3)},
            indent=1) + "\n", encoding="utf-8")
    known = load_known()
    new = sorted(set(report.cannot_fail()) - set(known))
    print(f"{len(new)} not on the known-list" + (": " + ", ".join(new) if new else ""))
    return 1 if new else 0
