"""The compute graph without a GPU: inference, pictures, binding rules, phase checks.

Nothing here calls a runtime: the topology phase records accesses and work only, and
variables bind to host memory (numpy arrays) or int addresses.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pygraphrt import compute, errors
from pygraphrt.compute import ComputeGraph, HazardKind, VarManager


class FakeKernel:
    """Stands in for a Kernel in the topology phase (only ``launch`` is looked for)."""

    name = "k"

    def launch(self, *a, **k):  # pragma: no cover - never called without a runtime
        raise AssertionError("the topology phase must not launch")


K = FakeKernel()


def muda_example():
    vars = VarManager()
    n = 64
    x_0 = vars.buffer("x_0", np.zeros(n, np.float32))
    x = vars.buffer("x", np.zeros(n, np.float32))
    y = vars.buffer("y", np.zeros(n, np.float32))
    N = vars.value("N", n)
    g = ComputeGraph(vars, "muda")

    @g.node("cal_x_0")
    def _(ctx):
        ctx.launch(K, 1, 64, x_0.write(), N.read())

    @g.node("copy_to_x")
    def _(ctx):
        ctx.memcpy(x.write(), x_0.read())

    @g.node("copy_to_y")
    def _(ctx):
        ctx.memcpy(y.write(), x_0.read())

    @g.node("print_x_y")
    def _(ctx):
        ctx.launch(K, 1, 64, x.read(), y.read(), N.read())

    return g, vars


def test_muda_example_edges_and_why():
    g, _ = muda_example()
    edges = [(a.name, b.name, [str(h) for h in hz]) for a, b, hz in g.topology()]
    assert edges == [("cal_x_0", "copy_to_x", ["x_0 RAW"]), ("cal_x_0", "copy_to_y", ["x_0 RAW"]),
                     ("copy_to_x", "print_x_y", ["x RAW"]), ("copy_to_y", "print_x_y", ["y RAW"])]
    assert g.why("copy_to_x", "copy_to_y") == [] and g.why("copy_to_y", "copy_to_x") == []
    (h,) = g.why(g["cal_x_0"], "copy_to_y")
    assert h.variable == "x_0" and h.kind is HazardKind.READ_AFTER_WRITE
    assert [n.name for n in g["print_x_y"].dependencies] == ["copy_to_x", "copy_to_y"]
    assert [n.name for n in g["cal_x_0"].dependents] == ["copy_to_x", "copy_to_y"]
    assert g["cal_x_0"].work == ["kernel"] and g["copy_to_x"].work == ["memcpy"]
    with pytest.raises(errors.InvalidValue, match="no node 'nope'"):
        g.why("nope", "cal_x_0")
    # Iterating gives the nodes in program order (it called __getitem__(0): KeyError).
    assert list(g) == g.nodes() and [n.name for n in g][0] == "cal_x_0"


def test_dot_draws_nodes_edges_reads_and_writes():
    g, _ = muda_example()
    dot = g.to_dot()
    assert dot.startswith('digraph "muda" {') and dot.rstrip().endswith("}")
    assert '"node:cal_x_0" -> "node:copy_to_x" [label="x_0 RAW", penwidth=2];' in dot
    assert '"node:copy_to_x" -> "node:copy_to_y"' not in dot and '"node:copy_to_y" -> "node:copy_to_x"' not in dot
    assert '"node:cal_x_0" -> "var:x_0" [color=blue' in dot          # a write
    assert '"var:x_0" -> "node:copy_to_y" [color=red' in dot          # a read
    assert '"var:N" [label="N", shape=note' in dot                    # a value variable
    assert '"node:copy_to_x" [label="copy_to_x\\nmemcpy 256 B"];' in dot
    plain = g.to_dot(variables=False)
    assert "var:" not in plain and plain.count("penwidth=2") == 4


def test_to_networkx():
    nx = pytest.importorskip("networkx")
    g, _ = muda_example()
    d = g.to_networkx()
    assert isinstance(d, nx.DiGraph)
    assert list(d.edges) == [("cal_x_0", "copy_to_x"), ("cal_x_0", "copy_to_y"),
                             ("copy_to_x", "print_x_y"), ("copy_to_y", "print_x_y")]
    assert d.nodes["print_x_y"]["reads"] == ["x", "y", "N"] and d.nodes["cal_x_0"]["writes"] == ["x_0"]
    assert d.edges["copy_to_y", "print_x_y"]["hazards"] == [("y", "RAW")]


def test_war_and_waw_and_in_place():
    vars = VarManager()
    a, b = vars.buffer("a", np.zeros(4)), vars.buffer("b", np.zeros(4))
    g = ComputeGraph(vars)
    g.node("w_a", lambda ctx: ctx.memset(a.write(), 0))
    g.node("r_a1", lambda ctx: ctx.memcpy(b.write(), a.read()))
    g.node("r_a2", lambda ctx: ctx.host(lambda: a.value))  # declares a read only
    g.node("rw_a", lambda ctx: ctx.memset(a.read_write(), 1))
    g.node("w_a2", lambda ctx: ctx.memset(a.write(), 2))
    g.node("r_a2_twice", lambda ctx: (a.read(), ctx.host(print)))
    got = {(x.name, y.name): sorted(str(h) for h in hz) for x, y, hz in g.topology()}
    assert got == {
        ("w_a", "r_a1"): ["a RAW"],
        ("w_a", "rw_a"): ["a RAW", "a WAW"],
        ("r_a1", "rw_a"): ["a WAR"],
        ("rw_a", "w_a2"): ["a WAW"],
        ("w_a2", "r_a2_twice"): ["a RAW"],
    }, got  # r_a2 declares no access: it stays independent


def test_empty_closure_and_no_accesses_are_independent():
    vars = VarManager()
    g = ComputeGraph(vars)
    g.node("a", lambda ctx: None)
    g.node("b", lambda ctx: ctx.host(print))
    assert g.topology() == [] and g["a"].work == [] and g["b"].work == ["host"]


# ------------------------------------------------------------------ the reference model
def reference_hazards(program):
    """The hazard graph by its pairwise definition (not the incremental algorithm)."""
    out = {}
    for j, (rj, wj) in enumerate(program):
        for i in range(j):
            ri, wi = program[i]
            for v in sorted(set(ri) | set(wi) | set(rj) | set(wj)):
                if any(v in program[k][1] for k in range(i + 1, j)):
                    continue  # a writer in between: the hazard is with that one
                kinds = set()
                if v in wi and v in rj:
                    kinds.add("RAW")
                if v in wi and v in wj:
                    kinds.add("WAW")
                if v in ri and v not in wi and v in wj:
                    kinds.add("WAR")
                for k in kinds:
                    out.setdefault((i, j), set()).add((f"v{v}", k))
    return out


programs = st.lists(st.tuples(st.sets(st.integers(0, 4), max_size=3), st.sets(st.integers(0, 4), max_size=2)),
                    min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(programs)
def test_inferred_graph_is_the_hazard_graph(program):
    vars = VarManager()
    vs = [vars.buffer(f"v{i}", np.zeros(2)) for i in range(5)]
    g = ComputeGraph(vars)
    for idx, (reads, writes) in enumerate(program):
        def fn(ctx, reads=reads, writes=writes):
            for r in sorted(reads):
                vs[r].read()
            for w in sorted(writes):
                vs[w].write()
            ctx.host(print)
        g.node(f"n{idx}", fn)
    got = {(a.index, b.index): {(h.variable, h.kind.value) for h in hz} for a, b, hz in g.topology()}
    assert got == reference_hazards(program)
    # The build's edges (index_accesses: no hazards) are these, each once, grouped by target in
    # order; the variable index an update reads holds each variable's nodes, in order, once each.
    sources, targets = g._pairs_now()
    pairs = list(zip(sources, targets))
    assert len(set(pairs)) == len(pairs) and set(pairs) == set(got) and targets == sorted(targets)
    assert g._users == {vs[v]: [j for j, (r, w) in enumerate(program) if v in r | w]
                        for v in range(5) if any(v in r | w for r, w in program)}
    # Independent nodes stay independent: no edge between nodes sharing no written variable.
    for (i, j) in got:
        ri, wi = program[i]
        rj, wj = program[j]
        assert (set(wi) & (set(rj) | set(wj))) or (set(ri) & set(wj))


def test_infer_pure_function():
    edges = compute.infer([((), ("a",)), (("a",), ()), (("a",), ()), ((), ("a",))])
    assert {k: [str(h) for h in v] for k, v in edges.items()} == {
        (0, 1): ["a RAW"], (0, 2): ["a RAW"], (0, 3): ["a WAW"], (1, 3): ["a WAR"], (2, 3): ["a WAR"]}


# ------------------------------------------------------------------ binding rules
def test_overlapping_bindings_are_refused():
    vars = VarManager()
    base = np.zeros(64, np.uint8)
    a = vars.buffer("a", base[:32])
    b = vars.buffer("b", base[32:])             # adjacent: fine
    with pytest.raises(errors.VariableOverlap, match="overlaps variable 'a'"):
        vars.buffer("c", base[16:48])
    assert "c" not in [v.name for v in vars]     # a refused variable is not created
    with pytest.raises(errors.VariableOverlap, match="overlaps variable 'b'"):
        a.update(base[31:40])
    assert a.value is not None and a.range == (base[:32].__array_interface__["data"][0], 32)
    a.update(base[:32])                          # rebinding to its own memory is fine
    addr = base.__array_interface__["data"][0]
    with pytest.raises(errors.VariableOverlap):
        vars.buffer("d", addr + 40, nbytes=4)    # an int address with its size
    vars.buffer("e", addr + 64, nbytes=0)        # empty ranges never overlap
    strided = base[::16]                         # spans bytes 0..48 of base
    with pytest.raises(errors.VariableOverlap):
        b.update(strided)
    with pytest.raises(errors.InvalidValue, match="needs nbytes"):
        vars.buffer("f", addr)
    with pytest.raises(errors.InvalidValue, match="already exists"):
        vars.buffer("a")
    assert b.nbytes == 32


def test_variable_rules():
    vars, other = VarManager(), VarManager()
    x = vars.buffer("x")
    n = vars.value("n", 3)
    alien = other.value("alien", 1)
    with pytest.raises(errors.IllegalState, match=r"x.value|not bound"):
        x.value
    with pytest.raises(errors.IllegalState, match="inside a compute-graph node"):
        n.read()
    assert n.value == 3
    g = ComputeGraph(vars, "rules")
    g.node("uses_unbound", lambda ctx: ctx.memset(x.write(), 0))
    with pytest.raises(errors.IllegalState, match="node 'uses_unbound' of graph 'rules' uses variable 'x'"):
        g.topology()
    x.update(np.zeros(8))
    assert len(g.topology()) == 0
    g2 = ComputeGraph(vars)
    g2.node("writes_value", lambda ctx: n.write())
    with pytest.raises(errors.InvalidValue, match="value variable"):
        g2.topology()
    g3 = ComputeGraph(vars)
    g3.node("alien", lambda ctx: alien.read())
    with pytest.raises(errors.InvalidValue, match="another VarManager"):
        g3.topology()
    with pytest.raises(errors.InvalidValue, match="already has a node"):
        g.node("uses_unbound", lambda ctx: None)
    with pytest.raises(errors.InvalidValue, match="not a pygraphrt Kernel"):
        g4 = ComputeGraph(vars)
        g4.node("bad", lambda ctx: ctx.launch(object(), 1, 1))
        g4.topology()


def test_bad_work_is_refused_when_recorded():
    vars = VarManager()
    x = vars.buffer("x", np.zeros(8, np.uint8))
    cases = {
        "launch": lambda ctx: ctx.launch(object(), 1, 1),
        "host": lambda ctx: ctx.host(3),
        "child": lambda ctx: ctx.child_graph("g"),
        "record": lambda ctx: ctx.record(None),
        "capture": lambda ctx: ctx.capture(None),
        "memcpy_size": lambda ctx: ctx.memcpy(x.write(), 12345),
        "memcpy_short_dst": lambda ctx: ctx.memcpy(np.zeros(2, np.uint8), x.read()),
    }
    for name, fn in cases.items():
        g = ComputeGraph(vars, name)
        g.node(name, fn)
        with pytest.raises(errors.InvalidValue, match=f"node '{name}'"):
            g.topology()


def test_a_kernel_is_told_by_its_class_only_where_the_class_has_launch():
    """NodeContext.launch remembers classes whose ``launch`` is callable; an object whose
    ``launch`` is its own (a namespace) is looked at each time, so one without it is refused
    after one with it was accepted."""
    from types import SimpleNamespace

    vars = VarManager()
    x = vars.buffer("x", np.zeros(8, np.uint8))
    kernels = {"good": SimpleNamespace(launch=lambda *a: None, name="ns"), "bad": SimpleNamespace(name="ns")}
    g = ComputeGraph(vars)
    g.node("k", lambda ctx: (x.read(), ctx.launch(K, 1, 1)))
    g.node("good", lambda ctx: ctx.launch(kernels["good"], 1, 1, x.write()))
    g.topology()
    assert [n.work for n in g] == [["kernel"], ["kernel"]]
    g.node("bad", lambda ctx: ctx.launch(kernels["bad"], 1, 1, x.write()))
    with pytest.raises(errors.InvalidValue, match="node 'bad'.*not a pygraphrt Kernel"):
        g.topology()


def test_kernel_classes_made_at_run_time_are_not_kept_alive(monkeypatch):
    """The classes NodeContext.launch remembers are held strongly, so at most
    _KERNEL_CLASSES_MAX: a class made for each kernel is not kept alive once more than that
    were seen."""
    import gc
    import weakref

    from pygraphrt.compute import _work

    monkeypatch.setattr(_work, "_KERNEL_CLASSES", set())
    vars = VarManager()
    x = vars.buffer("x", np.zeros(8, np.uint8))
    made = []
    for i in range(_work._KERNEL_CLASSES_MAX + 8):
        kernel = type(f"Kernel{i}", (FakeKernel,), {})()
        made.append(weakref.ref(type(kernel)))
        g = ComputeGraph(vars)
        g.node("k", lambda ctx, kernel=kernel: ctx.launch(kernel, 1, 1, x.write()))
        g.topology()
        del g, kernel
    gc.collect()
    assert len(_work._KERNEL_CLASSES) == _work._KERNEL_CLASSES_MAX
    assert all(r() is None for r in made[_work._KERNEL_CLASSES_MAX:])


def test_closure_that_changes_between_phases_is_detected():
    vars = VarManager()
    x, y = vars.buffer("x", np.zeros(4)), vars.buffer("y", np.zeros(4))
    calls = itertools.count()

    def flaky_work(ctx):
        if next(calls) % 2:
            ctx.memset(x.write(), 0)
        else:
            ctx.host(print)
            x.write()

    g = ComputeGraph(vars, "flaky")
    g.node("flaky", flaky_work)
    with pytest.raises(errors.PhaseMismatch, match=r"node 'flaky' issued \['host print'\] in the topology "
                                                   r"phase but \['memset 32 B'\] in the check phase"):
        g.check()

    flips = itertools.count()

    def flaky_access(ctx):
        (x if next(flips) % 2 == 0 else y).read()

    g2 = ComputeGraph(vars, "flaky2")
    g2.node("flaky_access", flaky_access)
    with pytest.raises(errors.PhaseMismatch, match=r"read \['x'\] and wrote \[\] in the topology phase but "
                                                   r"read \['y'\]"):
        g2.check()
    g3, _ = muda_example()
    g3.check()  # a deterministic graph passes


@pytest.mark.parametrize("items", [1, 2])
def test_launch_attributes_that_change_between_phases_are_detected(items):
    """A kernel launch's attributes are part of its shape (an in-place update cannot change
    them): the same attributes pass, different ones are a mismatch, for a node's one item and
    for a node of several."""
    vars = VarManager()
    x = vars.buffer("x", np.zeros(4))
    evaluations = itertools.count()

    def launches(ctx, changing):
        attributes = {"priority": next(evaluations) % 2} if changing else {"priority": 1}
        for _ in range(items):
            ctx.launch(K, 1, 1, x.write(), **attributes)

    g = ComputeGraph(vars)
    g.node("steady", lambda ctx: launches(ctx, False))
    g.check()
    g.node("changing", lambda ctx: launches(ctx, True))
    with pytest.raises(errors.PhaseMismatch, match="node 'changing' issued"):
        g.check()


def test_nested_evaluation_is_refused():
    vars = VarManager()
    g = ComputeGraph(vars)
    inner = ComputeGraph(vars)
    inner.node("i", lambda ctx: None)
    g.node("outer", lambda ctx: inner.topology())
    with pytest.raises(errors.IllegalState, match="nested"):
        g.topology()
    g2 = ComputeGraph(vars)
    g2.node("after", lambda ctx: None)
    assert g2.topology() == []  # the failed evaluation left no recorder behind


def test_a_context_a_closure_keeps_is_never_handed_to_another_evaluation():
    # Evaluations reuse a context no closure kept (compute._graph._evaluate); a kept one stays
    # the keeper's: its node, phase and work unchanged by the evaluations after it.
    vars = VarManager()
    x = vars.buffer("x", np.zeros(4))
    g = ComputeGraph(vars)
    kept, seen = [], []

    def keeper(ctx):
        kept.append(ctx)
        ctx.memset(x.write(), 0)

    def other(ctx):
        seen.append((id(ctx), ctx.node, ctx.phase))
        x.read()
        ctx.host(print)

    g.node("keeper", keeper)
    for i in range(3):
        g.node(f"other{i}", other)
    g.check()  # two phases: topology, check
    assert [c.node for c in kept] == ["keeper", "keeper"] and kept[0] is not kept[1]
    assert [c.phase for c in kept] == ["topology", "check"]
    assert all([w[0].describe(w) for w in c.items] == ["memset 32 B"] for c in kept)
    # (a kept context lives on, so no other object takes its id)
    assert all(i != id(kept[0]) for i, _, _ in seen)
    assert all(i != id(kept[1]) for i, _, p in seen if p == "check")
    assert [(n, p) for _, n, p in seen] == [(f"other{i}", p) for p in ("topology", "check") for i in range(3)]
    assert [n.name for n in g["other0"].dependencies] == ["keeper"]


def test_closures_evaluated_in_two_threads_at_once_record_their_own_accesses():
    # Each thread has its own active recorder: a closure running in one thread while another
    # thread evaluates records into its own node, and a read outside any closure is refused
    # even while another thread is inside one.  Every wait is bounded.
    import threading

    vars = VarManager()
    a, b = vars.buffer("a", np.zeros(4)), vars.buffer("b", np.zeros(4))
    inside, release = threading.Event(), threading.Event()
    g1, g2 = ComputeGraph(vars, "g1"), ComputeGraph(vars, "g2")

    def slow_writer(ctx):
        a.write()
        inside.set()
        assert release.wait(30)
        ctx.host(print)

    g1.node("w", slow_writer)
    g1.node("r", lambda ctx: (a.read(), ctx.host(print)))
    g2.node("w", lambda ctx: (b.write(), ctx.host(print)))
    g2.node("r", lambda ctx: (b.read(), ctx.host(print)))
    out: dict[str, object] = {}

    def run_g1():
        try:
            out["g1"] = [(x.name, y.name) for x, y, _ in g1.topology()]
        except BaseException as e:  # (reported below)
            out["g1"] = e

    t = threading.Thread(target=run_g1)
    t.start()
    try:
        assert inside.wait(30)
        # g1's closure is running in t: this thread evaluates g2 and reads outside any closure
        assert [(x.name, y.name) for x, y, _ in g2.topology()] == [("w", "r")]
        with pytest.raises(errors.IllegalState, match="inside a compute-graph node"):
            a.read()
    finally:
        release.set()
        t.join(30)
    assert not t.is_alive()
    assert out["g1"] == [("w", "r")]
    assert (g1["w"].reads, g1["w"].writes) == ((), (a,)) and (g2["w"].reads, g2["w"].writes) == ((), (b,))


def test_a_variable_accessed_twice_is_recorded_once_in_the_order_first_accessed():
    vars = VarManager()
    x, y, z = (vars.buffer(n, np.zeros(4)) for n in "xyz")
    g = ComputeGraph(vars)

    def twice(ctx):
        y.read(), x.read(), y.read(), z.read_write(), z.write(), x.write()
        ctx.host(print)

    g.node("twice", twice)
    g.node("one", lambda ctx: (y.read(), y.read(), ctx.host(print)))
    g.check()  # (the two phases' records compare equal)
    assert g["twice"].reads == (y, x, z) and g["twice"].writes == (z, x)
    assert g["one"].reads == (y,) and g["one"].writes == ()
    assert g._users == {y: [0, 1], x: [0], z: [0]}


def test_an_evaluated_graph_is_freed_when_its_last_reference_goes():
    # The context an evaluation leaves for the thread's next one holds nothing of the graph.
    import gc
    import weakref

    vars = VarManager()
    x = vars.buffer("x", np.zeros(4))
    g = ComputeGraph(vars)

    def last_work() -> None:  # (the work of the last node evaluated: what a kept list would hold)
        pass

    g.node("a", lambda ctx: (x.write(), ctx.host(print)))
    g.node("b", lambda ctx: (x.read(), ctx.host(last_work)))
    g.check()
    work, dead = weakref.ref(last_work), weakref.ref(g)
    del g, last_work
    gc.collect()
    assert dead() is None and work() is None


def test_evaluations_reuse_a_context_no_closure_kept(monkeypatch):
    # Where the reference count can tell (CPython 3.10-3.13 with the GIL), an evaluation hands
    # its context to the thread's next one: one made for a whole check of many nodes.
    from pygraphrt.compute import _graph, _work

    if _graph._refcount is None:
        pytest.skip("this interpreter's reference counts are not trusted: a context per evaluation")
    made = []
    real = _work.NodeContext.__init__

    def counting(self, *a, **k):
        made.append(1)
        real(self, *a, **k)

    monkeypatch.setattr(_work.NodeContext, "__init__", counting)
    vars = VarManager()
    x = vars.buffer("x", np.zeros(4))
    g = ComputeGraph(vars)
    for i in range(50):
        g.node(f"n{i}", lambda ctx: (x.read(), ctx.host(print)))
    g.check()  # 100 evaluations
    assert len(made) <= 1
