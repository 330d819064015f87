"""The conformance suite (pygraphrt.conformance): registry, runner, reports, and running it.

* CPU: the registry's size and completeness, ``--list`` without any runtime, the JSON
  schema, and the runner's judgement (pass / fail / error / deviation / skip, leaks, left
  captures, changed capture modes, sticky errors, the fake mode) on synthetic cases in a
  private registry and a synthetic environment -- no GPU.
* GPU (``gpu`` marker): every registered case through the runner, one test each; failed
  and error statuses fail, deviations and skips pass.
* fake HIP (``headers`` marker): the whole suite against tests/fakehip/fake_hip.c built on
  each pinned HIP header set (``PYGRAPHRT_CONFORMANCE_FAKE=1``): the cases execute, the
  call-form cases pass, the JSON validates.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import weakref
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pygraphrt import errors
from pygraphrt.conformance import (AREAS, FAKE_CALL_FORMS, NOTHING, REGISTRY, CaseFailure, Environment,
                                   Runner, load_cases)
from pygraphrt.conformance import _runner
from pygraphrt.conformance._case import case
from pygraphrt.conformance.deviations import DEVIATIONS, Deviation, check_table, parse_range

REPO = Path(__file__).resolve().parent.parent
load_cases()
ALL_IDS = list(REGISTRY)


# ============================================================================ the registry
def test_registry_size_and_negatives():
    negative = [c for c in REGISTRY.values() if c.negative]
    assert len(REGISTRY) >= 300, f"{len(REGISTRY)} cases registered; the suite needs at least 300"
    assert len(negative) >= 100, f"{len(negative)} negative cases; the suite needs at least 100"


def test_every_case_is_complete():
    problems = []
    for cid, c in REGISTRY.items():
        if c.id != cid:
            problems.append(f"{cid}: registered under another id ({c.id})")
        if c.area not in AREAS:
            problems.append(f"{cid}: area {c.area!r} is not one of {sorted(AREAS)}")
        if len(c.cite.strip()) < 20 or ":" not in c.cite:
            problems.append(f"{cid}: the citation must name the documentation and what it says: {c.cite!r}")
        if not c.apis or not all(isinstance(a, str) and a and not a.startswith(("cuda", "hip")) for a in c.apis):
            problems.append(f"{cid}: apis must name runtime functions without a vendor prefix: {c.apis!r}")
        if (c.raises is None) == (c.expect is NOTHING):
            problems.append(f"{cid}: exactly one expected outcome")
        for r in c.requires:
            if not _runner.known_requirement(r):
                problems.append(f"{cid}: the runner does not know requirement {r!r}")
        if not c.title or c.title == c.id:
            problems.append(f"{cid}: the case function needs a one-line docstring (its title)")
    assert not problems, "\n".join(problems)


def test_ids_are_unique_and_duplicates_refused():
    assert len(set(ALL_IDS)) == len(ALL_IDS)
    reg: dict[str, Any] = {}

    def fn(t):
        """Synthetic."""

    case("graph.synthetic.one", cite="synthetic: a citation", apis=("X",), expect=1, registry=reg)(fn)
    with pytest.raises(ValueError, match="registered twice"):
        case("graph.synthetic.one", cite="synthetic: a citation", apis=("X",), expect=1, registry=reg)(fn)
    assert "graph.synthetic.one" not in REGISTRY  # a private registry stays private


def test_every_area_has_cases_of_both_kinds():
    for area in {c.area for c in REGISTRY.values()}:
        cases = [c for c in REGISTRY.values() if c.area == area]
        assert any(c.negative for c in cases) and any(not c.negative for c in cases), area


def test_fake_call_forms_are_registered_cases():
    missing = sorted(i for i in FAKE_CALL_FORMS if i not in REGISTRY)
    assert not missing, f"FAKE_CALL_FORMS names cases that do not exist: {missing}"


def test_deviation_table_is_consistent():
    assert check_table(DEVIATIONS, REGISTRY) == []
    bad = [Deviation("graph.no.such_case", "cuda", ">=13.0", "InvalidValue", "cudaErrorInvalidValue", "r"),
           Deviation(ALL_IDS[0], "opencl", "*", "InvalidValue", None, "r"),
           Deviation(ALL_IDS[0], "cuda", "thirteen", "InvalidValue", None, "r"),
           Deviation(ALL_IDS[0], "hip", "*", "InvalidValue", "cudaErrorInvalidValue", " ")]
    problems = check_table(bad, REGISTRY)
    assert any("no such case" in p for p in problems)
    assert any("vendor must be" in p for p in problems)
    assert any("cannot read" in p for p in problems)
    assert any("a reason is required" in p for p in problems)
    assert any("not a hip error name" in p for p in problems)


@pytest.mark.parametrize("text,yes,no", [
    ("*", [(12, 0), (13, 5)], []),
    ("13.x", [(13, 0), (13, 9)], [(12, 9), (14, 0)]),
    ("12.9", [(12, 9)], [(12, 8), (13, 0)]),
    (">=13.0", [(13, 0), (14, 1)], [(12, 9)]),
    ("<12.4", [(12, 3), (11, 8)], [(12, 4)]),
    (">=12.3,<13.0", [(12, 3), (12, 9)], [(12, 2), (13, 0)]),
    ("<=7.1", [(7, 1), (6, 2)], [(7, 2)]),
])
def test_version_ranges(text, yes, no):
    pred = parse_range(text)
    assert all(pred(v) for v in yes) and not any(pred(v) for v in no)


@pytest.mark.parametrize("text", ["13", ">=13.x", "~13.0", "13.0-13.2"])
def test_version_range_errors(text):
    with pytest.raises(ValueError):
        parse_range(text)


# ============================================================================ --list, no runtime
def _no_runtime_env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    env.update(PYGRAPHRT_CUDART="/nonexistent/libcudart.so", PYGRAPHRT_HIP_LIB="/nonexistent/libamdhip64.so",
               PYGRAPHRT_NVRTC="/nonexistent/libnvrtc.so", PYGRAPHRT_HIPRTC="/nonexistent/libhiprtc.so")
    return env


def test_list_runs_without_gpu_or_runtime():
    r = subprocess.run([sys.executable, "-m", "pygraphrt.conformance", "--list"], capture_output=True, text=True,
                       env=_no_runtime_env(), cwd=str(REPO), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.strip().splitlines()
    negative = sum(1 for c in REGISTRY.values() if c.negative)
    runtime = sum(1 for c in REGISTRY.values() if c.kind == "runtime")
    assert lines[-1] == f"{len(REGISTRY)} cases, {negative} negative; {runtime} runtime, {len(REGISTRY) - runtime} binding"
    assert len(lines) == len(REGISTRY) + 1
    first = next(c for c in REGISTRY.values())
    row = next(line for line in lines if line.startswith(first.id + " "))
    assert ("negative" if first.negative else "positive") in row and first.area in row and first.kind in row
    assert first.expected_text() in row


def test_list_loads_no_library():
    code = ("import io, pygraphrt._runtime as r\n"
            "from pygraphrt.conformance.__main__ import main\n"
            "out = io.StringIO()\n"
            "assert main(['--list', '--area', 'graph', '-k', 'clone'], out=out) == 0\n"
            "print(out.getvalue().strip().splitlines()[-1])\n"
            "print(r._state.active, r._state.loaded, len(r._state.attempts))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_no_runtime_env(),
                       cwd=str(REPO), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    count_line, state = r.stdout.strip().splitlines()[-2:]
    n = sum(1 for c in REGISTRY.values() if c.area == "graph" and "clone" in c.id)
    assert count_line.startswith(f"{n} cases, ") and n > 0
    assert state == "None {} 0"  # nothing selected, loaded or even tried


def test_run_without_a_runtime_says_why():
    r = subprocess.run([sys.executable, "-m", "pygraphrt.conformance", "--backend", "hip", "-k", "graph.create"],
                       capture_output=True, text=True, env=_no_runtime_env(), cwd=str(REPO), timeout=120)
    assert r.returncode == 2
    assert "cannot run the conformance suite" in r.stderr and "hip" in r.stderr


def test_unknown_area_refused():
    out = io.StringIO()
    from pygraphrt.conformance.__main__ import main

    assert main(["--list", "--area", "nonsense"], out=out) == 2


# ============================================================================ schema
_TYPES: dict[str, Any] = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None),
                          "number": (int, float), "integer": int}


def _type_ok(value: Any, name: str) -> bool:
    if name in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _TYPES[name])


def validate(doc: Any, schema: dict[str, Any], root: dict[str, Any] | None = None, path: str = "$") -> list[str]:
    """A small JSON Schema (2020-12) validator for the keywords schema.json uses."""
    root = root or schema
    errs: list[str] = []
    if "$ref" in schema:
        ref = schema["$ref"]
        assert ref.startswith("#/$defs/"), ref
        return validate(doc, root["$defs"][ref.split("/")[-1]], root, path)
    if "oneOf" in schema:
        ok = [s for s in schema["oneOf"] if not validate(doc, s, root, path)]
        if len(ok) != 1:
            errs.append(f"{path}: matches {len(ok)} of oneOf")
        return errs
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_type_ok(doc, n) for n in names):
            return [f"{path}: {doc!r} is not {names}"]
    if "const" in schema and doc != schema["const"]:
        errs.append(f"{path}: {doc!r} != {schema['const']!r}")
    if "enum" in schema and doc not in schema["enum"]:
        errs.append(f"{path}: {doc!r} not in {schema['enum']}")
    if isinstance(doc, str):
        if len(doc) < schema.get("minLength", 0):
            errs.append(f"{path}: shorter than {schema['minLength']}")
        if "pattern" in schema and not re.search(schema["pattern"], doc):
            errs.append(f"{path}: {doc!r} does not match {schema['pattern']}")
    if isinstance(doc, (int, float)) and not isinstance(doc, bool) and "minimum" in schema:
        if doc < schema["minimum"]:
            errs.append(f"{path}: {doc} < {schema['minimum']}")
    if isinstance(doc, list):
        if len(doc) < schema.get("minItems", 0):
            errs.append(f"{path}: fewer than {schema['minItems']} items")
        if "items" in schema:
            for i, item in enumerate(doc):
                errs += validate(item, schema["items"], root, f"{path}[{i}]")
    if isinstance(doc, dict):
        for key in schema.get("required", ()):
            if key not in doc:
                errs.append(f"{path}: missing {key!r}")
        props = schema.get("properties", {})
        for key, value in doc.items():
            if key in props:
                errs += validate(value, props[key], root, f"{path}.{key}")
            elif "additionalProperties" in schema:
                extra = schema["additionalProperties"]
                if extra is False:
                    errs.append(f"{path}: unexpected {key!r}")
                elif isinstance(extra, dict):
                    errs += validate(value, extra, root, f"{path}.{key}")
    return errs


def check_schema(doc: dict[str, Any]) -> None:
    schema = _runner.load_schema()
    try:
        import jsonschema  # type: ignore[import-untyped]
    except ImportError:
        problems = validate(doc, schema)
        assert not problems, "\n".join(problems[:20])
    else:
        jsonschema.Draft202012Validator.check_schema(schema)
        jsonschema.Draft202012Validator(schema).validate(doc)


def test_schema_file_is_json_schema():
    schema = _runner.load_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["properties"]["schema"]["const"] == _runner.SCHEMA_ID
    assert set(schema["$defs"]["status"]["enum"]) == set(_runner.STATUSES)
    text = (REPO / "pygraphrt" / "conformance" / "schema.json").read_text()
    assert json.loads(text) == schema


# ============================================================================ the runner, synthetically
class FakeOwned:
    """Stands in for a pygraphrt object owning a runtime handle (what Backend.live holds)."""

    def __init__(self, live: Any, owned: bool = True) -> None:
        self._owned = owned
        self.is_valid = True
        self._live = live
        live.add(self)

    def close(self) -> None:
        self.is_valid = False
        self._live.discard(self)


class FakeStream(FakeOwned):
    def __init__(self, live: Any, status: str = "none") -> None:
        super().__init__(live)
        self.status = status

    @property
    def capture_status(self) -> Any:  # (a property, as Stream's: docs/design.md)
        from pygraphrt.enums import CaptureStatus

        return CaptureStatus(self.status)


KEEP: list[Any] = []  # where a synthetic case "leaks" to


def _env(**kw: Any) -> Environment:
    live: Any = weakref.WeakSet()
    base = dict(vendor="cuda", runtime_version=13000,
                capabilities={"edge_data": True, "graph_memory_nodes": False}, live=live,
                synchronize=lambda: None, kernels=lambda: None, end_capture=lambda s: setattr(s, "status", "none"))
    base.update(kw)
    return Environment(**base)  # type: ignore[arg-type]


def _run(env: Environment, *defs: tuple[str, dict[str, Any], Any]) -> Any:
    """Register synthetic cases in a private registry and run them; returns the report."""
    reg: dict[str, Any] = {}
    for cid, kw, fn in defs:
        kw = dict(kw)
        kw.setdefault("cite", "synthetic: documented behaviour")
        kw.setdefault("apis", ("GraphCreate",))
        case(cid, registry=reg, **kw)(fn)
    out = io.StringIO()
    report = Runner(env, reg.values(), out=out).run()
    report.printed = out.getvalue()  # type: ignore[attr-defined]
    return report


def _status(report: Any) -> dict[str, tuple[str, str]]:
    return {r.id: (r.status, r.reason) for r in report.results}


def _doc(fn):
    fn.__doc__ = "A synthetic case."
    return fn


def test_runner_judges_outcomes():
    iv = errors.InvalidValue("cudaGraphCreate", 1, "cudaErrorInvalidValue", "cuda", "invalid argument")

    def boom(exc: BaseException):
        def fn(t):
            raise exc
        return _doc(fn)

    report = _run(_env(),
                  ("graph.s.value_ok", {"expect": (1, "a")}, _doc(lambda t: (1, "a"))),
                  ("graph.s.value_wrong", {"expect": 2}, _doc(lambda t: 3)),
                  ("graph.s.raises_ok", {"raises": errors.InvalidValue}, boom(iv)),
                  ("graph.s.raises_base_ok", {"raises": errors.GraphRTError}, boom(iv)),
                  ("graph.s.raises_other", {"raises": errors.NotSupported}, boom(iv)),
                  ("graph.s.raises_returned", {"raises": errors.InvalidValue}, _doc(lambda t: None)),
                  ("graph.s.unexpected_error", {"expect": 1}, boom(iv)),
                  ("graph.s.check_failed", {"expect": 1}, boom(CaseFailure("step 2 differs"))),
                  ("graph.s.case_code_broke", {"expect": 1}, boom(TypeError("bad call"))),
                  ("graph.s.none_expected", {"expect": None}, _doc(lambda t: None)))
    st = _status(report)
    assert st["graph.s.value_ok"] == ("passed", "")
    assert st["graph.s.value_wrong"] == ("failed", "expected 2, got 3")
    assert st["graph.s.raises_ok"][0] == st["graph.s.raises_base_ok"][0] == "passed"
    assert st["graph.s.raises_other"][0] == "failed" and "raised InvalidValue" in st["graph.s.raises_other"][1]
    assert st["graph.s.raises_returned"][0] == "failed" and "returned None" in st["graph.s.raises_returned"][1]
    assert st["graph.s.unexpected_error"][0] == "failed"
    assert st["graph.s.check_failed"] == ("failed", "check failed: step 2 differs")
    assert st["graph.s.case_code_broke"][0] == "error" and "TypeError" in st["graph.s.case_code_broke"][1]
    assert st["graph.s.none_expected"][0] == "passed"
    r = next(r for r in report.results if r.id == "graph.s.raises_other")
    assert (r.error_name, r.error_code) == ("cudaErrorInvalidValue", 1)
    assert r.observed.startswith("raised InvalidValue: ")
    assert report.exit_code == 1
    assert "graph: 10 cases (10 runtime, 0 binding)  4 passed  5 failed  1 errors" in report.printed
    assert "FAILED graph.s.value_wrong" in report.printed and "ERROR graph.s.case_code_broke" in report.printed
    table = report.table()
    assert re.search(r"^graph\s+10\s+4\s+6\s+0\s+0\s+0$", table, re.M), table
    assert re.search(r"^runtime cases\s+10\s+4\s+6\s+0\s+0\s+0$", table, re.M), table
    assert re.search(r"^binding cases\s+0\s+0\s+0\s+0\s+0\s+0$", table, re.M), table


def test_runner_passes_clean_run_exit_zero():
    report = _run(_env(), ("graph.s.ok", {"expect": 1}, _doc(lambda t: 1)))
    assert report.exit_code == 0 and report.counts()["passed"] == 1


def test_runner_requirements():
    calls = []

    def kernels():
        calls.append(1)
        return "NotSupported: no NVRTC"

    env = _env(kernels=kernels, runtime_version=12040)
    ok = _doc(lambda t: 1)
    report = _run(env,
                  ("graph.s.cap_ok", {"expect": 1, "requires": ("edge_data",)}, ok),
                  ("graph.s.cap_missing", {"expect": 1, "requires": ("graph_memory_nodes",)}, ok),
                  ("graph.s.vendor", {"expect": 1, "requires": ("hip",)}, ok),
                  ("graph.s.version_ok", {"expect": 1, "requires": ("cuda>=12.4",)}, ok),
                  ("graph.s.version_low", {"expect": 1, "requires": ("cuda>=12.8",)}, ok),
                  ("graph.s.version_vendor", {"expect": 1, "requires": ("hip>=6.0",)}, ok),
                  ("graph.s.kernels1", {"expect": 1, "requires": ("kernels",)}, ok),
                  ("graph.s.kernels2", {"expect": 1, "requires": ("edge_data", "kernels")}, ok),
                  ("graph.s.unknown", {"expect": 1, "requires": ("teleportation",)}, ok))
    st = _status(report)
    assert st["graph.s.cap_ok"][0] == "passed" and st["graph.s.version_ok"][0] == "passed"
    assert st["graph.s.cap_missing"] == ("skipped", "needs capability graph_memory_nodes (not on cuda 12.4)")
    assert st["graph.s.vendor"] == ("skipped", "needs the hip backend (this run is cuda 12.4)")
    assert st["graph.s.version_low"] == ("skipped", "needs cuda>=12.8 (the runtime is cuda 12.4)")
    assert st["graph.s.version_vendor"][0] == "skipped"
    assert st["graph.s.kernels1"] == ("skipped", "needs a kernel compiler: NotSupported: no NVRTC")
    assert st["graph.s.kernels2"][0] == "skipped"
    assert calls == [1]  # the compiler is probed once per run
    assert st["graph.s.unknown"][0] == "error" and "unknown requirement 'teleportation'" in st["graph.s.unknown"][1]


def test_runner_architecture_requirement():
    """``sm>=90`` runs on compute capability 9.0 and later, and skips (saying why) on an older
    NVIDIA device, on HIP and where the architecture is unknown."""
    ok = _doc(lambda t: 1)
    defs = (("graph.s.sm90", {"expect": 1, "requires": ("sm>=90",)}, ok),
            ("graph.s.sm100", {"expect": 1, "requires": ("sm>=100",)}, ok))
    seen = {}
    for arch, vendor in (("sm_90", "cuda"), ("sm_80", "cuda"), ("sm_120", "sim"), ("gfx942", "hip"), ("", "cuda")):
        env = _env(vendor=vendor, runtime_version=60200000 if vendor == "hip" else 13000,
                   info={"gpu": {"arch": arch}})
        seen[arch] = tuple(_status(_run(env, *defs)).values())
    assert seen["sm_90"] == (("passed", ""), ("skipped", "needs sm>=100 (device 0 is sm_90, compute capability 9.0)"))
    assert seen["sm_80"][0] == ("skipped", "needs sm>=90 (device 0 is sm_80, compute capability 8.0)")
    assert [s for s, _ in seen["sm_120"]] == ["passed", "passed"]
    assert seen["gfx942"][0] == ("skipped", "needs an NVIDIA device of compute capability 9.0 or later (sm>=90); "
                                            "device 0 is gfx942")
    assert seen[""][0][0] == "skipped" and "unknown architecture" in seen[""][0][1]
    assert _runner.known_requirement("sm>=90") and not _runner.known_requirement("sm>=9")


def test_runner_hip_versions():
    env = _env(vendor="hip", runtime_version=70125424, capabilities={})  # 7.1.25424
    assert env.version == (7, 1)
    report = _run(env, ("graph.s.h71", {"expect": 1, "requires": ("hip>=7.1",)}, _doc(lambda t: 1)),
                  ("graph.s.h72", {"expect": 1, "requires": ("hip>=7.2",)}, _doc(lambda t: 1)))
    assert [r.status for r in report.results] == ["passed", "skipped"]


def test_runner_deviations():
    iv = errors.InvalidValue("cudaGraphClone", 1, "cudaErrorInvalidValue", "cuda")

    def raise_iv(t):
        raise iv

    table = [Deviation("graph.s.dev", "cuda", ">=13.0", "InvalidValue", "cudaErrorInvalidValue",
                       "the 13.x runtime checks this earlier"),
             Deviation("graph.s.dev_value", "cuda", "13.x", "3", None, "counts differently")]
    cases = (("graph.s.dev", {"raises": errors.NotSupported}, _doc(raise_iv)),
             ("graph.s.dev_value", {"expect": 2}, _doc(lambda t: 3)))
    report = _run(_env(deviations=table), *cases)
    st = _status(report)
    assert st["graph.s.dev"] == ("deviation", "the 13.x runtime checks this earlier")
    assert st["graph.s.dev_value"] == ("deviation", "counts differently")
    assert report.exit_code == 0
    r = report.results[0]
    assert r.deviation == {"vendor": "cuda", "runtime": ">=13.0", "driver": "*", "observed": "InvalidValue",
                           "code": "cudaErrorInvalidValue", "reason": "the 13.x runtime checks this earlier"}
    # another runtime version: the same difference, not seen there -- unverified, not exempt
    assert [r.status for r in _run(_env(deviations=table, runtime_version=12090), *cases).results] == \
        ["unverified-deviation", "unverified-deviation"]
    other = [Deviation("graph.s.dev", "cuda", ">=13.0", "InvalidValue", "cudaErrorNotSupported", "x")]
    assert _run(_env(deviations=other), cases[0]).results[0].status == "failed"
    # a deviation never excuses a case that passes: it is only looked up for failures
    assert _run(_env(deviations=table), ("graph.s.dev", {"raises": errors.InvalidValue}, _doc(raise_iv))
                ).results[0].status == "passed"
    # a CaseFailure can be a known deviation, by the vendor code of the error behind it
    def step(t):
        try:
            raise iv
        except errors.GraphRTError as e:
            raise CaseFailure("the intermediate step raised") from e

    cf = [Deviation("graph.s.cf", "cuda", "*", "CaseFailure", "cudaErrorInvalidValue", "known", detail="intermediate")]
    assert _run(_env(deviations=cf), ("graph.s.cf", {"expect": 1}, _doc(step))).results[0].status == "deviation"


def test_runner_detects_leaks():
    env = _env()
    live = env.live

    def leaks(t):
        KEEP.append(FakeOwned(live))
        return 1

    def cleans_up(t):
        FakeOwned(live)  # dropped: the finalizer of a real object destroys it, nothing is left
        return 1

    def tracked(t):
        t.track(FakeOwned(live))
        return 1

    def borrowed(t):
        KEEP.append(FakeOwned(live, owned=False))  # a borrowed handle owns nothing
        return 1

    def leaks_and_fails(t):
        KEEP.append(FakeOwned(live))
        raise CaseFailure("first problem")

    before = FakeOwned(live)  # alive before the cases: never a leak
    try:
        report = _run(env, ("graph.s.leaks", {"expect": 1}, _doc(leaks)),
                      ("graph.s.cleans_up", {"expect": 1}, _doc(cleans_up)),
                      ("graph.s.tracked", {"expect": 1}, _doc(tracked)),
                      ("graph.s.borrowed", {"expect": 1}, _doc(borrowed)),
                      ("graph.s.leaks_and_fails", {"expect": 1}, _doc(leaks_and_fails)))
        st = _status(report)
        assert st["graph.s.leaks"] == ("failed", "leak: still alive after the case: 1 FakeOwned")
        assert st["graph.s.cleans_up"][0] == st["graph.s.tracked"][0] == st["graph.s.borrowed"][0] == "passed"
        assert st["graph.s.leaks_and_fails"] == ("failed", "check failed: first problem; leak: still alive "
                                                           "after the case: 1 FakeOwned")
        assert not KEEP[0].is_valid  # the runner closed the leaked object, isolating the next case
        assert before.is_valid
    finally:
        KEEP.clear()


def test_runner_checks_keep_nothing_alive():
    """Objects in reference cycles (a Graph and its nodes) live until gc.collect(); the isolation
    checks look at each of them before the leak check and must not keep one alive."""
    env = _env()

    def many_dropped(t):
        made = [FakeStream(env.live) for _ in range(5)]  # streams: the capture check looks at each
        for m in made:
            m.cycle = m
        return len(made) // 5

    report = _run(env, ("graph.s.many_dropped", {"expect": 1}, _doc(many_dropped)))
    assert _status(report)["graph.s.many_dropped"] == ("passed", "")


def test_runner_detects_left_captures():
    env = _env()
    live = env.live
    ended = []

    def end_capture(s):
        ended.append(s)
        s.status = "none"

    env.end_capture = end_capture

    def tracked_left(t):
        t.track(FakeStream(live, "active"))
        return 1

    def untracked_left(t):
        KEEP.append(FakeStream(live, "invalidated"))
        return 1

    def ended_properly(t):
        s = t.track(FakeStream(live, "active"))
        s.status = "none"
        return 1

    try:
        report = _run(env, ("graph.s.tracked_left", {"expect": 1}, _doc(tracked_left)),
                      ("graph.s.untracked_left", {"expect": 1}, _doc(untracked_left)),
                      ("graph.s.ended_properly", {"expect": 1}, _doc(ended_properly)))
        st = _status(report)
        assert st["graph.s.tracked_left"] == ("failed", "left a FakeStream capturing (active)")
        assert st["graph.s.untracked_left"][0] == "failed"
        assert "left a FakeStream capturing (invalidated)" in st["graph.s.untracked_left"][1]
        assert "leak" in st["graph.s.untracked_left"][1]  # and it was never closed
        assert st["graph.s.ended_properly"][0] == "passed"
        assert len(ended) == 2
    finally:
        KEEP.clear()


def test_runner_detects_changed_capture_mode_and_close_errors():
    mode = ["global"]
    env = _env(capture_mode=lambda: mode[0], set_capture_mode=lambda m: mode.__setitem__(0, m))

    def changes_mode(t):
        mode[0] = "relaxed"
        return 1

    class Stubborn(FakeOwned):
        def close(self) -> None:
            super().close()
            raise errors.InvalidResourceHandle("destroy", detail="already gone")

    def close_fails(t):
        t.track(Stubborn(env.live))
        return 1

    report = _run(env, ("graph.s.mode", {"expect": 1}, _doc(changes_mode)),
                  ("graph.s.close", {"expect": 1}, _doc(close_fails)))
    st = _status(report)
    assert st["graph.s.mode"] == ("failed", "left this thread's capture mode relaxed (was global)")
    assert mode[0] == "global"  # restored for the next case
    assert st["graph.s.close"][0] == "failed" and "closing a tracked resource raised InvalidResourceHandle" \
        in st["graph.s.close"][1]


def test_runner_sync_errors_and_sticky_abort():
    pending: list[BaseException] = []

    def synchronize():
        if pending:
            raise pending.pop()

    env = _env(synchronize=synchronize)
    launch_failure = errors.LaunchFailure("cudaDeviceSynchronize", 719, "cudaErrorLaunchFailure", "cuda",
                                          sticky=True)

    def async_error(t):
        pending.append(errors.InvalidValue("cudaDeviceSynchronize", 1, "cudaErrorInvalidValue", "cuda"))
        return 1

    def sticky(t):
        pending.append(launch_failure)
        return 1

    report = _run(env, ("graph.s.async", {"expect": 1}, _doc(async_error)),
                  ("graph.s.sticky", {"expect": 1}, _doc(sticky)),
                  ("graph.s.never", {"expect": 1}, _doc(lambda t: 1)))
    assert _status(report)["graph.s.async"][0] == "failed"
    assert "device synchronize after the case raised InvalidValue" in _status(report)["graph.s.async"][1]
    assert [r.id for r in report.results] == ["graph.s.async"]  # the sticky case aborted the run
    assert report.aborted and "sticky" in report.aborted and report.exit_code == 2
    assert "ABORTED" in report.printed

    def raises_sticky(t):
        raise launch_failure

    report = _run(_env(), ("graph.s.sticky_raise", {"raises": errors.LaunchFailure}, _doc(raises_sticky)),
                  ("graph.s.after", {"expect": 1}, _doc(lambda t: 1)))
    assert report.aborted and "graph.s.sticky_raise" in report.aborted and report.results == []


def test_runner_fake_mode():
    strict = frozenset({"graph.s.strict_wrong", "graph.s.strict_ok"})
    env = _env(fake=True, strict=strict, vendor="hip", runtime_version=70125424)
    report = _run(env, ("graph.s.loose_wrong", {"expect": 1}, _doc(lambda t: 2)),
                  ("graph.s.loose_ok", {"expect": 1}, _doc(lambda t: 1)),
                  ("graph.s.strict_wrong", {"expect": 1}, _doc(lambda t: 2)),
                  ("graph.s.strict_ok", {"expect": 1}, _doc(lambda t: 1)))
    assert [r.status for r in report.results] == ["fake-mismatch", "passed", "failed", "passed"]
    assert report.results[0].reason.startswith("[failed on the fake: informational] expected 1, got 2")
    assert report.exit_code == 1
    assert "FAKE RUN" in report.table() and "fake-mismatch" in report.table()
    doc = report.to_json()
    assert doc["fake"] is True and doc["summary"]["fake-mismatch"] == 1


def test_fake_mode_refused_on_cuda(monkeypatch):
    class B:
        def info(self):
            from pygraphrt._runtime import BackendInfo

            return BackendInfo("cuda", "cuda13", "/x/libcudart.so.13", 13000, 13000, 1)

    from pygraphrt import _runtime

    monkeypatch.setattr(_runtime, "active", lambda: B())
    with pytest.raises(_runner.SetupError, match="fake HIP library only"):
        Environment.active(fake=True)


def test_runner_report_documents():
    report = _run(_env(info={}), ("graph.s.a", {"expect": 1}, _doc(lambda t: 1)),
                  ("graph.s.b", {"expect": 1}, _doc(lambda t: 2)),
                  ("capture.s.c", {"expect": 1, "requires": ("hip",)}, _doc(lambda t: 1)),
                  ("capture.s.d", {"raises": errors.InvalidValue}, _doc(lambda t: 1 / 0)))
    doc = report.to_json({"pattern": None, "areas": []})
    check_schema(doc)
    json.dumps(doc)
    assert doc["summary"]["by_area"]["capture"]["skipped"] == 1 and doc["summary"]["error"] == 1
    assert {c["id"] for c in doc["cases"]} == {"graph.s.a", "graph.s.b", "capture.s.c", "capture.s.d"}
    broken = json.loads(json.dumps(doc))
    broken["cases"][0]["status"] = "sort of"
    del broken["cases"][1]["cite"]
    broken["summary"]["passed"] = -1
    problems = validate(broken, _runner.load_schema())
    assert len(problems) >= 3, problems  # the small validator is not vacuous
    root = ET.fromstring(report.to_junit())
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"graph", "capture"}
    assert suites["graph"].get("tests") == "2" and suites["graph"].get("failures") == "1"
    assert suites["capture"].get("skipped") == "1" and suites["capture"].get("errors") == "1"
    assert root.get("tests") == "4"
    names = [tc.get("name") for tc in root.iter("testcase")]
    assert names == ["graph.s.a", "graph.s.b", "capture.s.c", "capture.s.d"]


def test_select_and_filenames():
    cases = list(REGISTRY.values())
    by_glob = _runner.select(cases, "graph.clone.*")
    assert by_glob and all(c.id.startswith("graph.clone.") for c in by_glob)
    by_text = _runner.select(cases, "find_clone,debug_dot")
    assert by_text and all("find_clone" in c.id or "debug_dot" in c.id for c in by_text)
    assert all(c.area == "graph" for c in _runner.select(cases, None, ["graph"]))
    areas = [c.area for c in _runner.select(cases)]
    assert areas == sorted(areas, key=lambda a: areas.index(a))  # grouped by area
    doc = {"backend": {"vendor": "cuda", "runtime_version_str": "13.0",
                       "gpu": {"name": "NVIDIA H100 80GB HBM3"}}, "fake": False}
    assert _runner.result_filename(doc) == "cuda-13.0-nvidia-h100-80gb-hbm3.json"
    doc = {"backend": {"vendor": "hip", "runtime_version_str": "7.1.25424", "gpu": {"name": "Fake HIP device"}},
           "fake": True}
    assert _runner.result_filename(doc) == "hip-7.1-fake-hip-device-fake.json"


# ============================================================================ GPU: every case
@pytest.mark.gpu
@pytest.mark.parametrize("case_id", ALL_IDS)
def test_case_on_gpu(case_id):
    try:
        result = _runner.run_one(REGISTRY[case_id])
    except _runner.RunAborted as exc:
        pytest.fail(str(exc), pytrace=False)
    # an unverified deviation (a known difference on a runtime or driver it was not seen on) is
    # not a pass: check it on this version and extend its versions in deviations.py
    if result.status in ("failed", "error", "unverified-deviation"):
        pytest.fail(f"{result.status}: {result.reason}\nexpected: {result.expected}\nobserved: {result.observed}\n"
                    f"cite: {result.cite}", pytrace=False)


# ============================================================================ the fake HIP library
@pytest.mark.headers
@pytest.mark.parametrize("header_set", ["hip6", "hip7"])
def test_suite_against_fake_hip(header_set, tmp_path):
    from tests.test_hip_fake import build_fake

    lib = build_fake(tmp_path / "libamdhip64.so", header_set)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])), PYGRAPHRT_HIP_LIB=str(lib), PYGRAPHRT_CONFORMANCE_FAKE="1",
               PYGRAPHRT_HIPRTC="/nonexistent/libhiprtc.so")
    out, junit = tmp_path / "out.json", tmp_path / "out.xml"
    r = subprocess.run([sys.executable, "-m", "pygraphrt.conformance", "--backend", "hip", "--json", str(out),
                        "--junit", str(junit)], capture_output=True, text=True, env=env, cwd=str(REPO), timeout=600)
    assert r.returncode in (0, 1), r.stdout[-4000:] + r.stderr[-4000:]
    assert "[FAKE HIP LIBRARY]" in r.stdout and "FAKE RUN" in r.stdout
    doc = json.loads(out.read_text())
    check_schema(doc)
    assert doc["fake"] is True and doc["backend"]["binding"] == header_set and doc["aborted"] is None
    results = {c["id"]: c for c in doc["cases"]}
    assert set(results) == set(REGISTRY)
    executed = [c for c in doc["cases"] if c["status"] != "skipped"]
    assert len(executed) >= 200 and len(executed) >= 0.6 * len(results), (len(executed), len(results))
    # the call-form cases pass (where the binding has what they need: HIP 6.2 lacks some)
    # -- or, where the calls are recorded (PYGRAPHRT_FAST=0), break only a runtime-case rule the
    # committed sim audit lists for the case menders (pygraphrt/conformance/audit_sim.json)
    audited = json.loads((REPO / "pygraphrt" / "conformance" / "audit_sim.json").read_text())["runtime_rule_breaks"]
    caps = doc["backend"]["capabilities"]
    audited_failures = []
    for cid in sorted(FAKE_CALL_FORMS):
        c = results[cid]
        needs = [r for r in c["requires"] if r in caps and not caps[r]]
        expected = "skipped" if needs else "passed"
        if c["status"] == "failed" and cid in audited and doc["call_record"]["recorded"] \
                and audited[cid].split(";")[0] in c["reason"]:
            audited_failures.append(cid)
            continue
        assert c["status"] == expected, f"{cid}: {c['status']}: {c['reason']}"
    assert not [c for c in doc["cases"] if c["status"] in ("failed", "error") and c["id"] not in audited_failures]
    # the graph area runs nearly whole on the fake: its call forms and translations are modelled
    graph = [c for c in doc["cases"] if c["area"] == "graph"]
    passed = [c for c in graph if c["status"] == "passed"]
    assert len(passed) >= 0.8 * len([c for c in graph if c["status"] != "skipped"])
    root = ET.fromstring(junit.read_text())
    assert int(root.get("tests")) == len(results)
    # a fake run is never written where published results go
    r = subprocess.run([sys.executable, "-m", "pygraphrt.conformance", "--backend", "hip", "-k", "graph.create",
                        "--results-dir", str(tmp_path / "results")], capture_output=True, text=True, env=env,
                       cwd=str(REPO), timeout=120)
    assert r.returncode == 2 and "not a result to publish" in r.stderr
    assert not (tmp_path / "results").exists()


# ============================================================================ published results
#: Deviation entries dropped from the table since published results were taken (those results
#: still show them until the GPU runs are redone), each with why.
RETIRED_DEVIATIONS = {
    "exec.set_memset.two_dimensional": "stale: the 12.9-13.5 headers say that for 2d memsets all dimension "
                                       "changes are rejected -- a new value is allowed (issue 38)",
}


def _schema_for(doc: dict[str, Any]) -> dict[str, Any]:
    """The schema a published document was written under: the package's (version 2), or version 1
    (tests/conformance_data/schema_v1.json: results taken before kinds and call records)."""
    if doc.get("schema") == "pygraphrt-conformance/1":
        return json.loads((REPO / "tests" / "conformance_data" / "schema_v1.json").read_text())
    return _runner.load_schema()


def test_published_gpu_results_are_complete_and_explained():
    """pygraphrt/conformance/results/*.json (real GPU runs, the README's table): each validates
    against the schema it was written under, covers every registered case, has no failure, and
    every deviation in it is one the current table explains on the runtime AND driver it ran on
    (or one retired on purpose, RETIRED_DEVIATIONS)."""
    from pygraphrt.conformance.deviations import DEVIATIONS, find

    files = sorted((REPO / "pygraphrt" / "conformance" / "results").glob("*.json"))
    runtimes = set()
    for f in files:
        doc = json.loads(f.read_text())
        schema = _schema_for(doc)
        problems = validate(doc, schema)
        assert not problems, (f.name, problems[:10])
        b = doc["backend"]
        assert doc["fake"] is False and b["vendor"] == "cuda" and f.name == _runner.result_filename(doc)
        assert {c["id"] for c in doc["cases"]} == set(REGISTRY), f"{f.name}: not the registered cases"
        assert doc["summary"]["failed"] == 0 and doc["summary"]["error"] == 0, f.name
        version = tuple(int(x) for x in b["runtime_version_str"].split(".")[:2])
        driver = tuple(int(x) for x in b["driver_version_str"].split(".")[:2])
        for c in doc["cases"]:
            if c["status"] == "deviation":
                if c["id"] in RETIRED_DEVIATIONS and doc["schema"] == "pygraphrt-conformance/1":
                    assert not any(d.case == c["id"] for d in DEVIATIONS), c["id"]
                    continue
                d = c["deviation"]
                entry = find(c["id"], "cuda", None, d["observed"], d["code"], c["observed"])
                assert entry is not None, (f.name, c["id"])
                assert entry.covers(version, driver), (f.name, c["id"], entry.seen)  # type: ignore[arg-type]
        runtimes.add(b["runtime_version_str"])
    assert {"12.9", "13.0", "13.5"} <= runtimes, runtimes


# ============================================================================ runtime and binding cases, on sim
def test_case_kinds_registered():
    reg: dict[str, Any] = {}
    a = case("graph.k.default", cite="synthetic: a citation", apis=("X",), expect=1, registry=reg)(_doc(lambda t: 1))
    b = case("graph.k.binding", kind="binding", cite="synthetic: a citation", apis=("X",), expect=1,
             registry=reg)(_doc(lambda t: 1))
    assert (a.kind, b.kind) == ("runtime", "binding")
    with pytest.raises(ValueError, match="kind must be one of"):
        case("graph.k.bad", kind="python", cite="synthetic: a citation", apis=("X",), expect=1, registry=reg)
    kinds = {c.kind for c in REGISTRY.values()}
    assert kinds == {"runtime", "binding"}
    # a binding case's refusal is pygraphrt's own: the results of real runs show no vendor error
    # name for the negatives classified binding by their sim run (issue 38, item 1)
    assert sum(1 for c in REGISTRY.values() if c.kind == "binding") >= 150


@pytest.fixture
def sim_env():
    from tests.backends import selected

    with selected("sim"):
        yield Environment.active()


def _run_sim(env: Environment, *defs: tuple[str, dict[str, Any], Any]) -> Any:
    report = _run(env, *defs)
    return report, {r.id: r for r in report.results}


def _graph_destroy_null(t):
    t.call("GraphDestroy", t.NULL)


def test_runtime_case_claims_are_checked_against_the_calls(sim_env):
    from pygraphrt.enums import NodeType

    def create_only(t):
        t.graph()
        return 1

    def own_refusal(t):
        t.graph()
        raise errors.InvalidValue("Graph.something", detail="pygraphrt's own check")

    def forged(t):
        t.graph()
        raise errors.InvalidValue("cudaGraphCreate", 1, "cudaErrorInvalidValue", "cuda", "invalid argument")

    def launch(t):
        g = t.graph()
        g.add_empty()
        s = t.stream()
        t.instantiate(g).launch(s)
        s.synchronize()
        return s.is_capturing

    def node_type(t):
        return t.runtime_type(t.graph().add_empty())

    import pygraphrt

    primed = pygraphrt.Graph()  # pygraphrt caches the library's functions it used (ops.fn, the graph
    primed.add_empty()          # module's table): the recorder must replace those too
    primed.close()
    report, r = _run_sim(
        sim_env,
        ("graph.s.claims_uncalled", {"apis": ("GraphCreate", "GraphClone"), "expect": 1}, _doc(create_only)),
        ("graph.s.claims_uncalled_binding", {"apis": ("GraphCreate", "GraphClone"), "expect": 1,
                                             "kind": "binding"}, _doc(create_only)),
        ("graph.s.own_refusal", {"raises": errors.InvalidValue}, _doc(own_refusal)),
        ("graph.s.own_refusal_binding", {"raises": errors.InvalidValue, "kind": "binding"}, _doc(own_refusal)),
        ("graph.s.runtime_refusal", {"apis": ("GraphDestroy",), "raises": errors.InvalidValue},
         _doc(_graph_destroy_null)),
        ("graph.s.forged", {"raises": errors.InvalidValue}, _doc(forged)),
        ("graph.s.cached_fns", {"apis": ("GraphLaunch", "StreamIsCapturing", "GraphInstantiateWithFlags"),
                                "expect": False}, _doc(launch)),
        ("graph.s.node_type", {"apis": ("GraphNodeGetType",), "expect": NodeType.EMPTY}, _doc(node_type)))
    st = {k: (v.status, v.reason) for k, v in r.items()}
    assert st["graph.s.claims_uncalled"][0] == "failed"
    assert "claimed API(s) never called: GraphClone; the case called GraphCreate" in st["graph.s.claims_uncalled"][1]
    assert st["graph.s.claims_uncalled_binding"] == ("passed", "")
    assert st["graph.s.own_refusal"][0] == "failed"
    assert "the refusal came from pygraphrt" in st["graph.s.own_refusal"][1]
    assert st["graph.s.own_refusal_binding"] == ("passed", "")
    assert st["graph.s.runtime_refusal"] == ("passed", "")
    assert r["graph.s.runtime_refusal"].error_name == "cudaErrorInvalidValue"
    assert r["graph.s.runtime_refusal"].calls[0] == "GraphDestroy"
    assert st["graph.s.forged"][0] == "failed"
    assert "names cudaErrorInvalidValue (1), but no runtime call by the case returned it" in st["graph.s.forged"][1]
    # calls through references cached on objects (GraphExec._launch_fn, Stream._is_capturing_fn) are seen
    assert st["graph.s.cached_fns"] == ("passed", ""), st["graph.s.cached_fns"]
    assert st["graph.s.node_type"] == ("passed", "") and "GraphNodeGetType" in r["graph.s.node_type"].calls
    # counted apart, in the summary, the table and the JSON (which validates)
    doc = report.to_json()
    check_schema(doc)
    assert doc["call_record"] == {"recorded": True, "why_not": None}
    assert doc["summary"]["by_kind"]["binding"]["passed"] == 2
    assert doc["summary"]["by_kind"]["runtime"]["failed"] == 3
    cases = {c["id"]: c for c in doc["cases"]}
    assert cases["graph.s.runtime_refusal"]["error_name"] == "cudaErrorInvalidValue"
    assert cases["graph.s.runtime_refusal"]["kind"] == "runtime"
    assert cases["graph.s.own_refusal_binding"]["kind"] == "binding"
    assert "GraphLaunch" in cases["graph.s.cached_fns"]["calls"]
    table = report.table()
    assert re.search(r"^binding cases\s+2\s+2\s+0\s+0\s+0\s+0$", table, re.M), table
    assert "runtime calls: recorded per case" in table
    # the recorder is gone after each case: the backend's library is its own again
    from pygraphrt import _runtime

    assert type(_runtime.active().lib).__name__ == "SimLib"


def test_raises_scoped_to_the_call_under_test(sim_env):
    def scoped_ok(t):
        t.graph()
        with t.under_test():
            t.call("GraphDestroy", t.NULL)

    def raised_before(t):
        t.call("GraphDestroy", t.NULL)  # set-up that fails: not the call under test
        with t.under_test():
            t.graph()

    def raised_after(t):
        with t.under_test():
            t.graph()
        t.call("GraphDestroy", t.NULL)

    def call_form(t):
        t.call_under_test(t.call, "GraphDestroy", t.NULL)

    _, r = _run_sim(sim_env,
                    ("graph.s.scoped_ok", {"apis": ("GraphDestroy",), "raises": errors.InvalidValue}, _doc(scoped_ok)),
                    ("graph.s.raised_before", {"apis": ("GraphDestroy",), "raises": errors.InvalidValue},
                     _doc(raised_before)),
                    ("graph.s.raised_after", {"apis": ("GraphDestroy",), "raises": errors.InvalidValue,
                                              "kind": "binding"}, _doc(raised_after)),
                    ("graph.s.call_form", {"apis": ("GraphDestroy",), "raises": errors.InvalidValue}, _doc(call_form)))
    assert (r["graph.s.scoped_ok"].status, r["graph.s.call_form"].status) == ("passed", "passed")
    assert r["graph.s.raised_before"].status == "failed"
    assert "raised outside t.under_test()" in r["graph.s.raised_before"].reason
    assert r["graph.s.raised_after"].status == "failed"  # binding cases too
    assert "raised outside t.under_test()" in r["graph.s.raised_after"].reason


def test_snapshot_reads_the_runtime(sim_env):
    from pygraphrt.conformance._case import Snapshot
    from pygraphrt.enums import CaptureStatus

    seen: dict[str, Any] = {}

    def snap(t):
        g = t.graph()
        a, b, c = g.add_empty(), g.add_empty(), g.add_empty()
        g.add_dependencies([a], [b])
        seen["graph"] = t.snapshot(graph=g)
        s = t.stream()
        seen["idle"] = t.snapshot(stream=s)
        buf = t.malloc(64)
        with s.capture():
            s.memset(buf, 1, 64)
            seen["capturing"] = t.snapshot(stream=s)
        seen["exe"] = t.snapshot(exe=t.instantiate(g))
        return True

    _, r = _run_sim(sim_env, ("graph.s.snap", {"apis": ("GraphGetNodes",), "expect": True}, _doc(snap)))
    assert r["graph.s.snap"].status == "passed", r["graph.s.snap"].reason
    assert seen["graph"] == Snapshot(nodes=3, edges=1)
    assert seen["idle"] == Snapshot(capture_status=CaptureStatus.NONE)
    assert seen["capturing"].capture_status == CaptureStatus.ACTIVE and seen["capturing"].capture_nodes == 1
    assert seen["exe"].exec_flags == 0
    assert {"GraphGetNodes", "GraphGetEdges", "StreamIsCapturing", "GraphExecGetFlags"} <= set(r["graph.s.snap"].calls)


def test_recording_refused_in_the_compiled_fast_path():
    from pygraphrt.conformance._calls import CallRecorder, RecordingUnavailable, api_name

    class Ops:
        prefix = "cuda"

    class CompiledBackend:
        ffi = None
        ops = Ops()
        ffi_mode = "api (compiled extension pygraphrt._fastlib._cuda13)"

    why = CallRecorder.unavailable(CompiledBackend())
    assert why is not None and "PYGRAPHRT_FAST=0" in why
    with pytest.raises(RecordingUnavailable, match="PYGRAPHRT_FAST=0"):
        CallRecorder(CompiledBackend()).install()
    report = _run(_env(record_off=why), ("graph.s.x", {"expect": 1}, _doc(lambda t: 1)))
    assert report.results[0].calls is None and report.results[0].status == "passed"
    assert "runtime calls: NOT recorded: the compiled fast path" in report.table()
    doc = report.to_json()
    check_schema(doc)
    assert doc["call_record"]["recorded"] is False and "PYGRAPHRT_FAST=0" in doc["call_record"]["why_not"]
    assert api_name("cudaGraphAddDependencies_v2", "cuda") == "GraphAddDependencies"
    assert api_name("cudaMemcpyAsync_ptsz", "cuda") == "MemcpyAsync"


def test_deviations_bounded_by_runtime_and_driver():
    iv = errors.InvalidValue("cudaGraphClone", 1, "cudaErrorInvalidValue", "cuda")

    def raise_iv(t):
        raise iv

    table = [Deviation("graph.s.dev", "cuda", "12.9|13.0", "InvalidValue", "cudaErrorInvalidValue", "seen there",
                       driver="13.0")]
    cases = (("graph.s.dev", {"raises": errors.NotSupported}, _doc(raise_iv)),)
    seen = _run(_env(deviations=table, runtime_version=13000, driver_version=13000), *cases)
    assert seen.results[0].status == "deviation"
    assert seen.results[0].deviation["driver"] == "13.0"
    for rt, drv in ((13000, 13050), (13050, 13000), (12080, 13000), (13000, None)):
        report = _run(_env(deviations=table, runtime_version=rt, driver_version=drv), *cases)
        r = report.results[0]
        assert r.status == "unverified-deviation", (rt, drv)
        assert "runtime 12.9|13.0, driver 13.0" in r.reason and "seen there" in r.reason
        assert report.counts()["unverified-deviation"] == 1 and report.exit_code == 0
        assert "unverified deviations (1;" in report.table() and "graph.s.dev" in report.table()
        check_schema(report.to_json())
    # the simulator models the observed behaviour on purpose: versions are not compared there
    assert _run(_env(deviations=table, vendor="sim", runtime_version=13050, driver_version=13050),
                *cases).results[0].status == "deviation"
    assert parse_range("12.9|13.0|13.5")((13, 5)) and not parse_range("12.9|13.0|13.5")((13, 1))
    with pytest.raises(ValueError):
        parse_range("12.9||13.0")


def test_deviation_table_holds_only_what_was_seen():
    """Each entry names exactly the runtimes and drivers on which the published GPU results saw
    the difference (as a known deviation, or as an unverified one: the run that found it), and
    nothing else -- no open-ended range."""
    assert not [d for d in DEVIATIONS if d.case == "exec.set_memset.two_dimensional"]
    seen: dict[str, set[tuple[str, str]]] = {}
    for f in sorted((REPO / "pygraphrt" / "conformance" / "results").glob("*.json")):
        doc = json.loads(f.read_text())
        point = (doc["backend"]["runtime_version_str"], doc["backend"]["driver_version_str"])
        for c in doc["cases"]:
            if c["status"] in ("deviation", "unverified-deviation"):
                seen.setdefault(c["id"], set()).add(point)
    for d in DEVIATIONS:
        points = seen.get(d.case, set())
        assert points, f"{d.case}: no published GPU result shows it"
        assert set(d.runtime.split("|")) == {r for r, _ in points}, (d.case, d.runtime, sorted(points))
        assert set(d.driver.split("|")) == {v for _, v in points}, (d.case, d.driver, sorted(points))


def test_failure_text_shows_expected_and_got():
    from pygraphrt.conformance._runner import expected_vs_got

    assert expected_vs_got({"a": 1, "b": 2}, {"a": 1, "b": 3}) == \
        "expected {'a': 1, 'b': 2}, got {'a': 1, 'b': 3}; ['b']: expected 2, got 3"
    assert expected_vs_got((1, 2), (1, 5, 6)) == \
        "expected (1, 2), got (1, 5, 6); length: expected 2, got 3; [1]: expected 2, got 5"
    assert "bare True" in expected_vs_got(True, False)
    report = _run(_env(), ("graph.s.dict", {"expect": {"n": 2}}, _doc(lambda t: {"n": 3})))
    assert report.results[0].reason == "expected {'n': 2}, got {'n': 3}; ['n']: expected 2, got 3"


def test_audit_lists_rule_breaks_and_bare_true(sim_env):
    from pygraphrt.conformance.__main__ import audit_text, bare_true_cases

    bare = bare_true_cases(list(REGISTRY.values()))
    # the suite's own cases return what they observed (issue 38): none expects a bare True
    assert [c.id for c in bare] == [] == [c.id for c in REGISTRY.values() if c.raises is None and c.expect is True]
    report, _ = _run_sim(sim_env,
                         ("graph.s.uncalled", {"apis": ("GraphClone",), "expect": True}, _doc(lambda t: True)),
                         ("graph.s.fine", {"apis": ("GraphDestroy",), "raises": errors.InvalidValue},
                          _doc(_graph_destroy_null)))
    reg: dict[str, Any] = {}
    cases = [case("graph.s.uncalled", cite="synthetic: a citation", apis=("GraphClone",), expect=True,
                  registry=reg)(_doc(lambda t: True))]
    assert [c.id for c in bare_true_cases(cases)] == ["graph.s.uncalled"]
    text = audit_text(report, cases)
    assert "## claimed API never called: 1\ngraph.s.uncalled  -- claimed API(s) never called: GraphClone" in text
    assert "## expect=True (a failure says only 'got False'; return what was observed instead): 1\n" \
           "graph.s.uncalled  [runtime]" in text
    assert "graph.s.fine" not in text
