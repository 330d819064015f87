"""Graph.add_nodes / add_networkx (bulk construction) on the sim backend."""

from __future__ import annotations

import sys

import pytest

import pygraphrt as rt
from pygraphrt.enums import NodeType

from .backends import selected


@pytest.fixture(scope="module", autouse=True)
def sim_backend():
    with selected("sim"):
        yield


def test_specs_indices_names_and_kinds():
    buf = rt.malloc(64)
    g = rt.Graph()
    root = g.add_empty()
    made = g.add_nodes([("empty", {}, ["root"]), ("empty", None, [0]),
                        ("memset", {"dst": buf, "value": 1, "count": 16}, [0, 1]),
                        ("empty", {}), ("empty", {}, [root, 3])], names={"root": root})
    assert [n.type for n in made] == [NodeType.EMPTY, NodeType.EMPTY, NodeType.MEMSET, NodeType.EMPTY,
                                      NodeType.EMPTY]
    assert len(g.nodes()) == 6 and len(g.edges()) == 6
    ref = rt.Graph()
    r = ref.add_empty()
    a = r.empty()
    b = a.empty()
    ref.add_memset(buf, 1, 16, dependencies=[a, b])
    c = ref.add_empty()
    ref.add_empty(dependencies=[r, c])
    assert g.same_structure(ref)
    assert all(g._wrap(n.handle) is n for n in made)  # the graph's one object per node


def test_bad_specs_say_which_and_keep_what_was_made():
    g = rt.Graph()
    with pytest.raises(rt.errors.InvalidValue, match="index 5 is not an earlier spec") as exc:
        g.add_nodes([("empty", {}), ("empty", {}, [5])])
    assert exc.value.__notes__ == ["(Graph.add_nodes: spec 1; 1 node(s) added before it stay)"]
    if sys.version_info < (3, 11):  # no notes in 3.10's tracebacks: the message carries it
        assert str(exc.value).endswith("\n(Graph.add_nodes: spec 1; 1 node(s) added before it stay)")
    assert len(g.nodes()) == 1
    with pytest.raises(rt.errors.InvalidValue, match="unknown node kind 'bogus'"):
        g.add_nodes([("bogus", {})])
    with pytest.raises(rt.errors.InvalidValue, match="neither a Node nor a key"):
        g.add_nodes([("empty", {}, ["nope"])])
    other = rt.Graph().add_empty()
    with pytest.raises(rt.errors.InvalidValue, match="another graph"):
        g.add_nodes([("empty", {}, [other])])
    with pytest.raises(rt.errors.InvalidValue, match="a spec is"):
        g.add_nodes([("empty",)])


def test_add_networkx():
    nx = pytest.importorskip("networkx")
    buf = rt.malloc(64)
    d = nx.DiGraph([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
    d.nodes["c"]["kind"] = "memset"
    d.nodes["c"]["params"] = {"dst": buf, "value": 2, "count": 8}
    g = rt.Graph()
    m = g.add_networkx(d)
    assert m["c"].type is NodeType.MEMSET and m["a"].type is NodeType.EMPTY
    assert set(m) == {"a", "b", "c", "d"} and len(g.nodes()) == 4
    # the graph's edges are the DiGraph's, node for node (by the key each node was made for)
    key_of = {m[k].handle: k for k in m}
    assert sorted((key_of[s.handle], key_of[t.handle]) for s, t, _ in g.edges()) == sorted(d.edges())
    assert {k: m["c"].params[k] for k in ("dst", "value", "width")} == {"dst": buf.ptr, "value": 2, "width": 8}
    exe = g.instantiate()
    s = rt.Stream()
    exe.launch(s)
    s.synchronize()
    with pytest.raises(nx.NetworkXUnfeasible):
        g.add_networkx(nx.DiGraph([(1, 2), (2, 1)]))
