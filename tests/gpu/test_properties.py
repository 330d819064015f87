"""Hypothesis on the GPU: explicit DAGs read back identically; capture matches the model."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import pygraphrt as rt
from pygraphrt.enums import CaptureStatus, EdgeData, NodeType

from ..capture_model import run_model, valid_program

pytestmark = pytest.mark.gpu

SETTINGS = settings(max_examples=int(__import__("os").environ.get("PYGRAPHRT_HYPOTHESIS_EXAMPLES", "200")),
                    deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

KINDS = ["empty", "memset", "memcpy", "host"]


@st.composite
def dags(draw):
    n = draw(st.integers(1, 40))
    kinds = [draw(st.sampled_from(KINDS)) for _ in range(n)]
    deps = [sorted(draw(st.sets(st.integers(0, i - 1), max_size=4))) if i else [] for i in range(n)]
    return kinds, deps


@pytest.fixture(scope="module")
def scratch():
    a, b = rt.malloc(256), rt.malloc(256)
    yield a, b
    a.close(), b.close()


@SETTINGS
@given(dags())
def test_random_dag_reads_back_identically(scratch, dag):
    kinds, deps = dag
    a, b = scratch
    g = rt.Graph()
    made = []
    for kind, d in zip(kinds, deps):
        parents = [made[i] for i in d]
        if kind == "empty":
            node = g.add_empty(dependencies=parents)
        elif kind == "memset":
            node = g.add_memset(a, 1, 64, dependencies=parents)
        elif kind == "memcpy":
            node = g.add_memcpy(b, a, 64, dependencies=parents)
        else:
            node = g.add_host(lambda: None, dependencies=parents)
        made.append(node)
    expected_types = {"empty": NodeType.EMPTY, "memset": NodeType.MEMSET,
                      "memcpy": NodeType.MEMCPY, "host": NodeType.HOST}
    assert sorted(n.type.value for n in g.nodes()) == sorted(expected_types[k].value for k in kinds)
    for node, kind in zip(made, kinds):
        assert node.type is expected_types[kind]
    want = {(made[p], made[i], EdgeData()) for i, d in enumerate(deps) for p in d}
    got = set(g.edges())
    assert got == want
    for i, node in enumerate(made):
        assert {x for x, _ in node.dependencies} == {made[p] for p in deps[i]}
    assert g.clone().same_structure(g)
    g.close()


programs = st.lists(st.one_of(st.tuples(st.just("op"), st.integers(0, 2)),
                              st.tuples(st.just("fork"), st.integers(0, 2), st.integers(0, 2))),
                    min_size=1, max_size=25)


@pytest.fixture(scope="module")
def streams():
    ss = [rt.Stream() for _ in range(3)]
    yield ss
    for s in ss:
        assert s.capture_status is CaptureStatus.NONE
        s.close()


@SETTINGS
@given(programs)
def test_random_capture_matches_model(streams, scratch, program):
    program = valid_program(3, program)
    model = run_model(3, program)
    a, _ = scratch
    events = []
    joined = {0}
    with streams[0].capture(mode="relaxed") as cap:
        for step in program:
            if step[0] == "op":
                streams[step[1]].memset(a, 2, 16)
            else:
                ev = rt.Event()
                events.append(ev)
                streams[step[1]].record(ev)
                streams[step[2]].wait(ev)
                joined.add(step[2])
        for t in sorted(joined - {0}):
            ev = rt.Event()
            events.append(ev)
            streams[t].record(ev)
            streams[0].wait(ev)
    expected = rt.Graph()
    nodes = [expected.add_memset(a, 2, 16) for _ in range(model.nodes)]
    if model.edges:
        expected.add_dependencies([nodes[x] for x, _ in sorted(model.edges)],
                                  [nodes[y] for _, y in sorted(model.edges)])
    graph = cap.graph
    assert len(graph.nodes()) == model.nodes
    assert graph.same_structure(expected), (program, sorted(model.edges),
                                            [(graph.nodes().index(x), graph.nodes().index(y))
                                             for x, y, _ in graph.edges()])
    graph.close()
    expected.close()
    for ev in events:
        ev.close()
