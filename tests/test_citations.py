"""Every runtime conformance case's citation is the vendor's documentation text (issue 38, item 3).

``tests/cite_check.py`` finds each runtime case's quote in the doc comments of the pinned headers
(the CUDA 13.5 runtime headers always, and the version the citation names); citations of documents
no header carries (the CUDA Programming Guide) are counted apart; outcomes no document states are
observations (``pygraphrt.conformance.deviations.OBSERVATIONS``) with the versions seen.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pygraphrt.conformance import _case
from pygraphrt.conformance.deviations import OBSERVATIONS, version_in
from tests import cite_check

pytestmark = pytest.mark.headers
REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "pygraphrt" / "conformance" / "results"


@pytest.fixture(scope="module")
def report():
    return cite_check.report()


def test_every_runtime_quote_is_in_the_headers(report):
    unfound = {cid: [(f.status, f.detail, f.missing) for f in fs if f.status in ("not-found", "malformed",
                                                                               "no-headers")]
               for cid, fs in report["cases"].items()}
    unfound = {k: v for k, v in unfound.items() if v}
    assert not unfound, "runtime cases whose cite= quote is not the documentation's words " \
                        "(python -m tests.cite_check):\n" + "\n".join(f"{k}: {v}" for k, v in unfound.items())
    s = report["summary"]
    assert s["found"] + s["offline"] + s["observation"] == s["runtime_cases"]
    # most runtime cases quote the headers; the rest say which document they quote
    assert s["found"] >= 0.8 * s["runtime_cases"], s
    assert set(s["offline_by_document"]) <= set(cite_check.OFFLINE)


def _synthetic(cite: str, apis: tuple[str, ...]) -> _case.Case:
    reg: dict[str, _case.Case] = {}
    return _case.case("graph.synthetic.cite", cite=cite, apis=apis, expect=None, registry=reg)(lambda t: None)


@pytest.mark.parametrize("cite,apis,status", [
    # the header's words, markup and case aside (cudaStreamBeginCapture's doc comment)
    ("CUDA Runtime API 13.5, Stream Management, cudaStreamBeginCapture: \"when a stream is in capture mode, "
     "all operations pushed into the stream will not be executed\" -- gloss", ("StreamBeginCapture",), "found"),
    # one word changed: not the documentation
    ("CUDA Runtime API 13.5, Stream Management, cudaStreamBeginCapture: \"when a stream is in capture mode, "
     "all operations pushed into the stream will not be recorded\"", ("StreamBeginCapture",), "not-found"),
    # true words, but of another function than the one cited and claimed
    ("CUDA Runtime API 13.5, Graph Management, cudaGraphCreate: \"Capture must have been initiated on stream "
     "via a call to cudaStreamBeginCapture\"", ("GraphCreate",), "not-found"),
    # an unquoted text is the quote as a whole
    ("CUDA Runtime API 13.5, Stream Management, cudaStreamEndCapture: capture must have been initiated on the "
     "stream somehow", ("StreamEndCapture",), "not-found"),
    # elided fragments must come in order
    ("CUDA Runtime API 13.5, Stream Management, cudaStreamEndCapture: \"End capture on stream ... via a call "
     "to cudaStreamBeginCapture\"", ("StreamEndCapture",), "found"),
    ("CUDA Runtime API 13.5, Stream Management, cudaStreamEndCapture: \"via a call to cudaStreamBeginCapture "
     "... End capture on stream\"", ("StreamEndCapture",), "not-found"),
    # the 12.9 headers' words that the current (13.5) headers dropped: stale, whatever version is named
    ("CUDA Runtime API 12.9, Graph Management, cudaGraphAddNode: \"Adds a node of arbitrary type to a graph "
     "(12.3+)\"", ("GraphAddNode",), "not-found"),
    ("CUDA Runtime API 13.5, Graph Management, cudaGraphAddNode: \"Adds a node of arbitrary type to a graph\"",
     ("GraphAddNode",), "found"),
    # words both the named (12.9) and the current headers carry
    ("CUDA Runtime API 12.9, Graph Management, cudaGraphExecMemsetNodeSetParams: \"for 2d memsets, all "
     "dimension changes are rejected\"", ("GraphExecMemsetNodeSetParams",), "found"),
    # enum documentation: the whole header set
    ("CUDA Runtime API 13.5, Data types, enum cudaError: \"A dependency would have been created which crosses "
     "the capture sequence boundary\"", ("StreamWaitEvent",), "found"),
    ("HIP Runtime API 7.1, Data types, hipErrorInvalidValue: \"One or more of the parameters passed to the API "
     "call is NULL or not in an acceptable range\"", ("GraphCreate",), "found"),
    ("CUDA Programming Guide, CUDA Graphs: anything", ("GraphCreate",), "offline"),
    ("Observed, cudaGraphCreate: nobody listed this", ("GraphCreate",), "not-found"),
    ("Some blog, cudaGraphCreate: says so", ("GraphCreate",), "malformed"),
    # a citation without its "<where>: " would read its sentence as the location: refused
    ("CUDA Runtime API 13.5, Graph Management, cudaGraphCreate returns a new graph each time it is called, so two "
     "graphs are never the same object and adding nodes to one leaves the other alone: see the text", ("GraphCreate",),
     "malformed"),
])
def test_the_checker_tells_quotes_from_other_words(cite, apis, status):
    findings = cite_check.check_case(_synthetic(cite, apis))
    assert [f.status for f in findings] == [status], [(f.status, f.detail) for f in findings]


def test_observations_name_their_cases_and_the_versions_the_results_show(report):
    """An observation lists the runtime and driver versions it was seen on: those of the committed GPU
    results where the case passed (and it cites ``Observed``)."""
    assert OBSERVATIONS
    observed_cases = {cid for cid, st in report["case_status"].items() if st == "observation"}
    assert {o.case for o in OBSERVATIONS} == observed_cases
    docs = [json.loads(p.read_text()) for p in sorted(RESULTS.glob("cuda-*.json"))]
    assert docs
    for o in OBSERVATIONS:
        passed = [d["backend"] for d in docs if d["backend"]["vendor"] == o.vendor
                  and any(c["id"] == o.case and c["status"] == "passed" for c in d["cases"])]
        assert passed, f"{o.case}: no committed GPU result shows it"
        runtimes = {b["runtime_version_str"] for b in passed}
        drivers = {b["driver_version_str"] for b in passed}
        assert runtimes == set(o.runtime.split("|")), (o.case, runtimes, o.runtime)
        assert all(version_in(tuple(int(x) for x in v.split(".")), o.driver) for v in drivers), (o.case, drivers)


def test_an_error_code_the_cited_documentation_does_not_list_is_refused():
    """The gloss may say how the case reads the quote, but a vendor error code it names must be one the
    cited documentation lists (or a deviation entry of the case accounts for, or an observation)."""
    documented = _synthetic("CUDA Runtime API 13.5, Graph Management, cudaDeviceGetGraphMemAttribute: \"attr - "
                            "attribute to get\" -- returns cudaErrorInvalidDevice", ("DeviceGetGraphMemAttribute",))
    assert [f.status for f in cite_check.check_case(documented)] == ["found"]
    undocumented = _synthetic("CUDA Runtime API 13.5, Graph Management, cudaDeviceGetGraphMemAttribute: \"attr - "
                              "attribute to get\" -- returns cudaErrorInvalidValue", ("DeviceGetGraphMemAttribute",))
    findings = cite_check.check_case(undocumented)
    assert [f.status for f in findings] == ["found", "not-found"]
    assert findings[1].missing == ["cudaErrorInvalidValue"]
    # an enumerator's name labels its documentation in the whole header set: quoted with it, the name is
    # tied to its text
    enum = _synthetic("CUDA Runtime API 13.5, Data types, enum cudaError: \"cudaErrorStreamCaptureUnmatched: The "
                      "capture was not initiated in this stream\"", ("StreamEndCapture",))
    assert [f.status for f in cite_check.check_case(enum)] == ["found"]
    enum_wrong = _synthetic("CUDA Runtime API 13.5, Data types, enum cudaError: \"cudaErrorStreamCaptureMerge: The "
                            "capture was not initiated in this stream\"", ("StreamEndCapture",))
    assert [f.status for f in cite_check.check_case(enum_wrong)] == ["not-found"]
