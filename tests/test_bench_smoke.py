"""CPU smoke test of the benchmark harness's pure-Python parts (tiny sizes, no GPU)."""

import json

from benchmarks.stats import Figure, chart, interleaved, ratio, table, time_per_item, to_json


def test_harness_parts(tmp_path):
    calls = []
    vals = time_per_item(lambda k: calls.append(k), 10, 3, between=lambda: None)
    assert len(vals) == 3 and all(v >= 0 for v in vals) and calls == [10] * 4
    a = Figure("g", "a", [2.0, 1.0, 3.0])
    b = Figure("g", "b", [1.0, 1.0, 1.0])
    assert (a.median, a.min, a.max) == (2.0, 1.0, 3.0)
    r = ratio({"a": a, "b": b}, "P1", "a", "b", "<= 1.0", limit=1.0)
    assert r.value == 2.0 and not r.met
    assert ratio({"a": a}, "P1", "a", "missing", "") is None
    text = table([a, b], [r])
    assert "P1" in text and "NO" in text
    data = json.loads(to_json({"gpu": "none"}, [a, b], [r]))
    assert data["figures"][0]["median"] == 2.0 and data["ratios"][0]["met"] is False
    chart([a, b], str(tmp_path / "c.png"))
    order = []
    res = interleaved({"x": lambda k: order.append("x"), "y": lambda k: order.append("y")}, 5, 4)
    assert len(res["x"]) == len(res["y"]) == 4
    assert order[2:] == ["x", "y", "y", "x", "x", "y", "y", "x"]  # warm-up, then rotating order


def test_run_module_imports_without_gpu():
    import benchmarks.run as run

    assert "pygraphrt" in run.IMPORT_PROG
