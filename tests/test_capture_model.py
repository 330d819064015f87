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


def _ancestors(nodes: int, edges: set[tuple[int, int]]) -> list[set[int]]:
    preds: list[set[int]] = [set() for _ in range(nodes)]
    for a, b in edges:
        preds[b].add(a)
    out: list[set[int]] = []
    for n in range(nodes):  # edges point forward (checked), so predecessors are done first
        out.append(set().union(*(out[p] | {p} for p in preds[n])) if preds[n] else set())
    return out


def _happens_before(program: list) -> list[set[int]]:
    """What each op must wait for, by another formulation of the same rule: every stream carries
    the set of all ops it has seen (its own and, through each event it waited on, the recording
    stream's).  Returns each op's set of earlier ops it must follow."""
    seen: dict[int, set[int]] = {0: set()}
    before: list[set[int]] = []
    for step in program:
        if step[0] == "op":
            before.append(set(seen[step[1]]))
            seen[step[1]].add(len(before) - 1)
        else:
            seen[step[2]] = seen.get(step[2], set()) | seen[step[1]]
    return before


@given(programs)
def test_model_orders_exactly_what_the_program_orders(program):
    """The model's DAG orders two ops exactly when the program orders them (one reaches the other
    through stream order and events), and its edges point forward; every op ends in the capture."""
    program = valid_program(4, program)
    m = run_model(4, program)
    assert m.nodes == sum(step[0] == "op" for step in program)
    assert all(0 <= a < b < m.nodes for a, b in m.edges), m.edges
    ancestors = _ancestors(m.nodes, m.edges)
    assert ancestors == _happens_before(program), (program, sorted(m.edges))
    # after the final join every op is in stream 0's dependency set or an ancestor of one in it
    joined = set(m.current[0]).union(*(ancestors[n] for n in m.current[0]))
    assert joined == set(range(m.nodes)), (program, m.current[0])
