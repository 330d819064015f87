"""``python -m pygraphrt.conformance``: run (or list) the conformance suite.

    python -m pygraphrt.conformance --list                 # no GPU or runtime needed
    python -m pygraphrt.conformance                        # run everything on the active backend
    python -m pygraphrt.conformance --backend hip -k clone --json out.json --junit out.xml
    python -m pygraphrt.conformance --area graph --results-dir pygraphrt/conformance/results
    python -m pygraphrt.conformance --backend sim --audit   # what the case menders have to do

Runtime calls are recorded per case with ``PYGRAPHRT_FAST=0`` (and always on ``sim``): the
compiled fast path calls the runtime from C, and the runner then says it records nothing.

Exit status: 0 when nothing failed, 1 when a case failed (or its code broke),
2 when the suite could not run (no backend or device) or a sticky error stopped it.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, Sequence, TextIO

if TYPE_CHECKING:
    from ._case import Case


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m pygraphrt.conformance",
                                 description="Vendor-neutral conformance suite of the CUDA/HIP graph API.")
    ap.add_argument("--backend", choices=["cuda", "hip", "sim", "auto"], default=None,
                    help="runtime to test (default: PYGRAPHRT_BACKEND, else auto; sim: the CPU simulator, "
                         "judged as CUDA)")
    ap.add_argument("-k", dest="pattern", default=None,
                    help="only case ids containing this text (or matching this glob; several: comma-separated)")
    ap.add_argument("--area", action="append", default=None,
                    help="only this area (repeatable, or comma-separated)")
    ap.add_argument("--list", action="store_true", help="list the cases and exit (loads no runtime)")
    ap.add_argument("--json", dest="json_out", default=None, help="write the results as JSON here")
    ap.add_argument("--junit", dest="junit_out", default=None, help="write JUnit XML here")
    ap.add_argument("--results-dir", default=None,
                    help="also write the JSON as <vendor>-<runtime>-<gpu>.json in this folder")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress lines, only the final table")
    ap.add_argument("--audit", action="store_true",
                    help="run the selection and list, for the case menders, the runtime cases that fail the "
                         "runtime-case rules (claimed API never called, refusal not the runtime's, raised outside "
                         "t.under_test()) and the cases whose expectation is a bare True; exit 0")
    ap.add_argument("--audit-json", default=None,
                    help="with --audit: also write the lists as JSON here (pygraphrt/conformance/audit_sim.json is "
                         "the committed one, of a sim run)")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="print each case's id before it runs (to find a case that crashes the process)")
    return ap


def _areas(values: Sequence[str] | None) -> list[str]:
    out: list[str] = []
    for v in values or ():
        out += [a.strip() for a in v.split(",") if a.strip()]
    return out


def list_cases(cases: Sequence["Case"], out: TextIO) -> None:
    """One line per case: id, negative/positive, kind, area, requirements, expected outcome; then the counts."""
    width = max([len(c.id) for c in cases] + [10])
    for c in cases:
        req = ",".join(c.requires) or "-"
        flag = "negative" if c.negative else "positive"
        print(f"{c.id:<{width}}  {flag}  {c.kind:<7}  {c.area:<8}  requires={req:<24}  {c.expected_text()}",
              file=out)
    neg = sum(1 for c in cases if c.negative)
    runtime = sum(1 for c in cases if c.kind == "runtime")
    print(f"{len(cases)} cases, {neg} negative; {runtime} runtime, {len(cases) - runtime} binding", file=out)


_RULES = (("claimed API(s) never called", "claimed API never called"),
          ("the refusal came from pygraphrt", "refusal not the runtime's (no vendor error name)"),
          ("no runtime call", "vendor error not returned by a recorded call"),
          ("raised outside t.under_test()", "raised outside t.under_test()"))


def bare_true_cases(cases: Sequence["Case"]) -> list["Case"]:
    """Cases whose expectation is a bare ``True``: a failure says only that False came back."""
    return [c for c in cases if c.raises is None and c.expect is True]


def audit(report: Any, cases: Sequence["Case"]) -> dict[str, Any]:
    """The --audit lists: runtime cases breaking a runtime-case rule (id -> reason), other
    failures of runtime cases, and the cases expecting a bare True."""
    runtime = [r for r in report.results if r.kind == "runtime" and r.status in ("failed", "error")]
    broken = {r.id: r.reason for r in runtime if any(key in r.reason for key, _ in _RULES)}
    return {"backend": f"{report.env.vendor} {report.env.version_str}",
            "calls_recorded": report.env.recorder is not None,
            "runtime_rule_breaks": broken,
            "other_runtime_failures": {r.id: r.reason for r in runtime if r.id not in broken},
            "bare_true": [c.id for c in bare_true_cases(cases)]}


def audit_text(report: Any, cases: Sequence["Case"]) -> str:
    """The --audit listing: runtime cases failing the runtime-case rules, by rule, then the
    other failures, then the bare-True cases."""
    lines = [f"# conformance audit: {report.env.vendor} {report.env.version_str}; "
             f"runtime calls {report.record_line()}"]
    runtime = [r for r in report.results if r.kind == "runtime"]
    broken: dict[str, list[Any]] = {label: [] for _, label in _RULES}
    other = []
    for r in runtime:
        if r.status not in ("failed", "error"):
            continue
        hit = [label for key, label in _RULES if key in r.reason]
        for label in hit:
            broken[label].append(r)
        if not hit:
            other.append(r)
    total = sum(1 for r in runtime if r.status in ("failed", "error"))
    n_broken = len({r.id for rs in broken.values() for r in rs})
    lines.append(f"runtime cases failing: {total} of {len(runtime)} ({n_broken} breaking a runtime-case rule, "
                 f"{len(other)} failing otherwise)")
    for label, rs in broken.items():
        lines.append("")
        lines.append(f"## {label}: {len(rs)}")
        lines += [f"{r.id}  -- {r.reason}" for r in rs]
    lines.append("")
    lines.append(f"## other failures of runtime cases: {len(other)}")
    lines += [f"{r.id}  -- {r.reason}" for r in other]
    bare = bare_true_cases(cases)
    lines.append("")
    lines.append(f"## expect=True (a failure says only 'got False'; return what was observed instead): {len(bare)}")
    lines += [f"{c.id}  [{c.kind}]" for c in bare]
    return "\n".join(lines)


def _runner_fake_env() -> str:
    from ._runner import FAKE_ENV

    return FAKE_ENV


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    args = _parser().parse_args(argv)
    from . import cases as _cases  # noqa: F401 - registers every case
    from ._case import AREAS, REGISTRY
    from ._runner import (Environment, Runner, SetupError, result_filename, select, unknown_areas,
                          write_json)

    areas = _areas(args.area)
    bad = unknown_areas(areas)
    if bad:
        print(f"unknown area(s) {', '.join(bad)}; the areas are {', '.join(AREAS)}", file=sys.stderr)
        return 2
    chosen = select(REGISTRY.values(), args.pattern, areas)
    if args.list:
        list_cases(chosen, out)
        return 0
    if not chosen:
        print("no case matches the selection", file=sys.stderr)
        return 2

    import os

    import pygraphrt
    from pygraphrt import errors

    try:
        pygraphrt.use(args.backend or os.environ.get("PYGRAPHRT_BACKEND", "auto"))
        env = Environment.active()
    except (errors.BackendError, SetupError) as exc:
        print(f"cannot run the conformance suite: {exc}", file=sys.stderr)
        return 2
    if env.fake and args.results_dir:
        print("--results-dir is for runs on real GPUs; a run against the fake HIP library "
              f"({_runner_fake_env()}=1) is not a result to publish (use --json)", file=sys.stderr)
        return 2
    info = env.info
    gpu = info.get("gpu") or {}
    print(f"pygraphrt {pygraphrt.__version__} conformance: {info.get('vendor')} runtime "
          f"{info.get('runtime_version_str')} (binding {info.get('binding')}, driver "
          f"{info.get('driver_version_str')}), {gpu.get('name', '?')}; {len(chosen)} cases"
          + ("  [FAKE HIP LIBRARY]" if env.fake else ""), file=out, flush=True)
    print("runtime calls: " + ("recorded per case" if env.recorder is not None else
                               f"NOT recorded ({env.record_off})"), file=out, flush=True)
    report = Runner(env, chosen, out=None if (args.quiet or args.audit) else out, verbose=args.verbose).run()
    if args.audit:
        print(audit_text(report, chosen), file=out)
        if args.audit_json:
            import json

            with open(args.audit_json, "w", encoding="utf-8") as f:
                json.dump(audit(report, chosen), f, indent=1)
                f.write("\n")
        return 0
    print("", file=out)
    print(report.table(), file=out)
    doc = report.to_json({"pattern": args.pattern, "areas": areas})
    if args.json_out:
        write_json(args.json_out, doc)
    if args.results_dir:
        write_json(os.path.join(args.results_dir, result_filename(doc)), doc)
    if args.junit_out:
        d = os.path.dirname(os.path.abspath(args.junit_out))
        os.makedirs(d, exist_ok=True)
        with open(args.junit_out, "w", encoding="utf-8") as f:
            f.write(report.to_junit())
            f.write("\n")
    return report.exit_code


if __name__ == "__main__":
    sys.exit(main())
