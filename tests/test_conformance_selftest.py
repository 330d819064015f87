"""The conformance suite's self-test (pygraphrt/conformance/_selftest.py), in CI on ``sim``.

For each runtime API the runtime cases claim, the simulator's library is corrupted for that
API (its outputs perturbed or its refusal swapped; its call skipped reporting success) and the
runtime cases claiming it are run: one that still passes cannot fail.  CI fails on such a case
unless the committed known-list (pygraphrt/conformance/selftest_known.json) names it with why
-- and on a known-list entry that no longer survives, so the list only shrinks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pygraphrt.conformance import REGISTRY, load_cases
from pygraphrt.conformance._selftest import KNOWN_FILE, MAP_FILE, claimed_map, load_known, load_map

REPO = Path(__file__).resolve().parent.parent
load_cases()


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])), PYGRAPHRT_BACKEND="sim")


def test_committed_map_is_the_registry_s():
    """The mapping the self-test checks (API -> runtime cases) is committed: a case that claims
    another API, or a case that changes kind, changes it on purpose."""
    committed = load_map()
    now = claimed_map(REGISTRY.values())
    assert committed == now, ("pygraphrt/conformance/selftest_map.json is stale; regenerate it with "
                              "`python -m pygraphrt.conformance.selftest --write-map` and review the diff")


def test_known_list_is_explained():
    known = load_known()
    for cid, entry in known.items():
        assert cid in REGISTRY, f"{KNOWN_FILE.name}: {cid} is not a registered case"
        assert REGISTRY[cid].kind == "runtime", f"{KNOWN_FILE.name}: {cid} is a binding case (not self-tested)"
        assert entry["apis"] and set(entry["apis"]) <= set(REGISTRY[cid].apis), cid
        assert len(entry["why"]) > 40, f"{cid}: say why it survives"


@pytest.fixture(scope="module")
def selftest(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("selftest") / "selftest.json"
    r = subprocess.run([sys.executable, "-m", "pygraphrt.conformance.selftest", "--json", str(out)],
                       capture_output=True, text=True, env=_env(), cwd=str(REPO), timeout=600)
    assert out.exists(), r.stdout[-3000:] + r.stderr[-3000:]
    doc = json.loads(out.read_text())
    doc["_stdout"] = r.stdout
    doc["_rc"] = r.returncode
    return doc


def test_selftest_no_new_case_that_cannot_fail(selftest):
    known = load_known()
    new = {cid: apis for cid, apis in selftest["cannot_fail"].items() if cid not in known}
    assert not new, ("runtime cases that pass with an API they claim falsified (they cannot fail; mend the "
                     "case, or -- only with a reason -- add it to selftest_known.json):\n"
                     + "\n".join(f"  {cid}: {', '.join(apis)}" for cid, apis in sorted(new.items())))
    assert selftest["_rc"] == 0, selftest["_stdout"][-3000:]


def test_selftest_known_list_only_shrinks(selftest):
    known = load_known()
    mended = sorted(cid for cid in known if cid not in selftest["cannot_fail"])
    assert not mended, ("these known-list cases fail now when their API is falsified: remove them from "
                        f"{KNOWN_FILE.name}: {mended}")
    widened = {cid: sorted(set(apis) - set(known[cid]["apis"])) for cid, apis in selftest["cannot_fail"].items()
               if cid in known and not set(apis) <= set(known[cid]["apis"])}
    assert not widened, f"known cases now survive more APIs than listed: {widened}"


def test_selftest_runs_and_catches(selftest):
    """The self-test did its work: many faulted runs, most of them caught."""
    assert selftest["runs"] >= 1000 and selftest["caught"] >= 500, selftest


_SYNTHETIC = r'''
import json, sys
import pygraphrt
from pygraphrt.conformance._case import case
from pygraphrt.conformance._selftest import run_selftest
pygraphrt.use("sim")
reg = {}

@case("graph.synthetic.constant", cite="synthetic: a citation", apis=("GraphGetNodes",), expect=0, registry=reg)
def _(t):
    """Calls GraphGetNodes but returns a constant: cannot fail."""
    g = t.graph()
    n = t.ffi.new("size_t *")
    t.call("GraphGetNodes", g.handle, t.NULL, n)
    return 0

@case("graph.synthetic.reads_count", cite="synthetic: a citation", apis=("GraphGetNodes",), expect=2, registry=reg)
def _(t):
    """Returns the node count GraphGetNodes reports: caught when it is falsified."""
    g = t.graph(); g.add_empty(); g.add_empty()
    n = t.ffi.new("size_t *")
    t.call("GraphGetNodes", g.handle, t.NULL, n)
    return int(n[0])

@case("graph.synthetic.refusal", cite="synthetic: a citation", apis=("GraphDestroy",),
      raises=pygraphrt.errors.InvalidValue, registry=reg)
def _(t):
    """The runtime's refusal of GraphDestroy(NULL): caught when the refusal is falsified."""
    t.call("GraphDestroy", t.NULL)

@case("graph.synthetic.binding", kind="binding", cite="synthetic: a citation", apis=("GraphGetNodes",),
      expect=1, registry=reg)
def _(t):
    """A binding case: not self-tested."""
    return 1

r = run_selftest(list(reg.values()))
print(json.dumps({"cannot_fail": r.cannot_fail(), "caught": r.caught, "runs": r.runs}))
'''


def test_selftest_finds_a_planted_case_that_cannot_fail():
    """Synthetic runtime cases: one returning a constant survives (named), one returning the
    runtime's count and one expecting the runtime's refusal are caught; a binding case is not run."""
    r = subprocess.run([sys.executable, "-c", _SYNTHETIC], capture_output=True, text=True, env=_env(),
                       cwd=str(REPO), timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    doc = json.loads(r.stdout.strip().splitlines()[-1])
    assert doc["cannot_fail"] == {"graph.synthetic.constant": ["GraphGetNodes"]}
    assert doc["caught"] == 2


def test_map_file_names_itself():
    assert "--write-map" in json.loads(MAP_FILE.read_text())["about"]
