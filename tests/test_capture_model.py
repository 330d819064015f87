"""The pure-Python capture model on its own (no GPU)."""

from hypothesis import given, strategies as st

from .capture_model import run_model, valid_program


def test_diamond():
    # A; fork 0->1; B on 0; C on 1; join; D
    m = run_model(2, [("op", 0), ("fork", 0, 1), ("op", 0), ("op", 1), ("fork", 1, 0), ("op", 0)])
    assert m.nodes == 4
    assert m.edges == {(0, 1), (0, 2), (1, 3), (2, 3)}


def test_fork_without_work_adds_no_edges():
    m = run_model(3, [("op", 0), ("fork", 0, 1), ("fork", 1, 2), ("op", 0)])
    assert m.edges == {(0, 1)}


def test_invalid_steps_are_dropped():
    assert valid_program(2, [("op", 1), ("fork", 1, 0), ("op", 0)]) == [("op", 0)]


programs = st.lists(st.one_of(st.tuples(st.just("op"), st.integers(0, 3)),
                              st.tuples(st.just("fork"), st.integers(0, 3), st.integers(0, 3))),
                    max_size=30)


@given(programs)
def test_model_is_a_dag_with_edges_forward(program):
    m = run_model(4, valid_program(4, program))
    assert all(a < b for a, b in m.edges)  # nodes only depend on earlier ones
    assert len({b for _, b in m.edges}) <= m.nodes
