"""The compute graph's lazy paths (issue 45) on the simulator, in this process: hazards made only
when asked for, updates that look up the rebound variable's nodes, the template graph given
the executable's parameters when it is next used, a build that reuses a current topology phase.

Counters, not timings: what the runtime was asked to do is counted at the backend's call.
"""

from __future__ import annotations

import contextlib
import itertools
from collections import Counter
from typing import Any, Iterator

import numpy as np
import pytest

import pygraphrt as rt
from pygraphrt import compute, errors, sim
from pygraphrt.compute import ComputeGraph, VarManager

from .backends import simulator

VARS = 6
NBYTES = 16


@pytest.fixture
def sim1() -> Iterator[Any]:
    with simulator(1) as backend:
        yield backend


@contextlib.contextmanager
def counted_calls(backend: Any) -> Iterator[Counter]:
    """Count the runtime functions called through the backend (their names without the prefix)."""
    ops = backend.ops
    real = ops.__dict__.get("call")
    seen: Counter = Counter()

    def call(name: str, *args: Any) -> Any:
        seen[name] += 1
        return type(ops).call(ops, name, *args)

    ops.call = call
    try:
        yield seen
    finally:
        if real is None:
            del ops.call
        else:
            ops.call = real


def kernel() -> Any:
    if "cg_lazy_add" not in sim.registered_kernels():
        @sim.register_kernel("cg_lazy_add")
        def _(ctx: Any, x: int) -> None:
            a = ctx.array(x, "u1", NBYTES)
            a += 1
    src = 'extern "C" __global__ void cg_lazy_add(unsigned char *x) { x[threadIdx.x] += 1; }'
    return rt.Program(src).kernel("cg_lazy_add", signature="unsigned char *x")


def program(nodes: int, k: Any) -> tuple[ComputeGraph, list[Any], list[Any], list[Any]]:
    """Copies and kernels over VARS buffer variables: node i copies variable i % VARS into
    (3 i + 1) % VARS (even i) or adds one to (3 i + 1) % VARS after reading i % VARS (odd i)."""
    bufs = [rt.malloc(NBYTES) for _ in range(VARS)]
    others = [rt.malloc(NBYTES) for _ in range(VARS)]
    for i, b in enumerate(bufs + others):
        b.copy_from(bytes([i]) * NBYTES)
    vm = VarManager()
    vs = [vm.buffer(f"v{i}", b) for i, b in enumerate(bufs)]
    g = ComputeGraph(vm, "lazy")
    for i in range(nodes):
        src, dst = vs[i % VARS], vs[(3 * i + 1) % VARS]
        if i % 2 == 0:
            g.node(f"n{i}", lambda ctx, src=src, dst=dst: ctx.memcpy(dst.write(), src.read()))
        else:
            def add(ctx: Any, src: Any = src, dst: Any = dst) -> None:
                src.read()
                ctx.launch(k, 1, NBYTES, dst.read_write())
            g.node(f"n{i}", add)
    return g, vs, bufs, others


def explicit_edges(g: ComputeGraph) -> set[tuple[str, str]]:
    """The explicit graph's edges, by compute-node name (each compute node made one graph node)."""
    name_of = {int(cn.graph_nodes[0]): cn.name for cn in g.nodes()}
    return {(name_of[int(a)], name_of[int(b)]) for a, b, _ in g.graph.edges()}


def assert_hazards_are_infers(g: ComputeGraph) -> list[Any]:
    """g.edges() is compute.infer over the nodes' recorded accesses (buffer variables)."""
    edges = g.edges()
    accesses = [(list(n.reads), list(n.writes)) for n in g.nodes()]
    want = compute.infer(accesses, name=lambda v: v.name)
    assert [(a.index, b.index, [str(h) for h in hz]) for a, b, hz in edges] == \
        [(i, j, [str(h) for h in hz]) for (i, j), hz in want.items()]
    return edges


def test_hazards_are_made_only_when_asked_for_and_agree_with_the_build(sim1):
    g, vs, _, _ = program(40, kernel())
    s = rt.Stream()
    g.launch(s)
    s.synchronize()
    assert g._edges is None  # the build needed the edges only, not why
    edges = assert_hazards_are_infers(g)
    assert g._edges is not None
    # the built graph has exactly the edges whose hazards were made afterwards
    assert explicit_edges(g) == {(a.name, b.name) for a, b, _ in edges}
    assert {h.kind for _, _, hz in edges for h in hz} == set(compute.HazardKind)
    # why() by name, and a node added after the hazards were made is in the next answer
    assert [str(h) for h in g.why("n0", "n1")] == ["v1 RAW"]  # n0 writes v1, n1 reads it
    assert g.why("n1", "n0") == []
    g.node("last", lambda ctx: ctx.memset(vs[1].write(), 0))
    assert g._edges is None
    edges = assert_hazards_are_infers(g)
    last = g["last"]
    into_last = [a.name for a, b, _ in edges if b is last]
    assert into_last and [n.name for n in last.dependencies] == into_last
    assert all(g.why(name, last) for name in into_last)


def test_an_update_runs_and_sets_only_the_rebound_variables_nodes(sim1):
    g, vs, bufs, others = program(60, kernel())
    s = rt.Stream()
    g.launch(s)
    s.synchronize()
    users = {i for i, n in enumerate(g.nodes()) if vs[2] in n.reads or vs[2] in n.writes}
    assert g._users[vs[2]] == sorted(users)
    evaluated: list[str] = []
    real = g._evaluate
    g._evaluate = lambda n, *rest: (evaluated.append(n.name), real(n, *rest))[1]  # type: ignore[method-assign]
    with counted_calls(sim1) as calls:
        vs[2].update(others[2])
        report = g.update()
    assert not report.rebuilt
    assert sorted(evaluated) == sorted(report.nodes) == sorted(f"n{i}" for i in users)
    copies = sum(1 for i in users if i % 2 == 0)
    assert calls["GraphExecMemcpyNodeSetParams1D"] == copies
    assert calls["GraphExecKernelNodeSetParams"] == len(users) - copies == report.setter_calls - copies
    # the template graph is left as it was until it is next used
    assert calls["GraphMemcpyNodeSetParams1D"] == calls["GraphKernelNodeSetParams"] == 0
    # two variables: the union of their nodes, each once
    evaluated.clear()
    vs[2].update(bufs[2])
    vs[3].update(others[3])
    both = users | {i for i, n in enumerate(g.nodes()) if vs[3] in n.reads or vs[3] in n.writes}
    assert sorted(g.update().nodes, key=lambda n: g[n].index) == [f"n{i}" for i in sorted(both)]
    assert sorted(evaluated) == sorted(f"n{i}" for i in both)


def test_the_template_takes_the_updated_parameters_when_next_used(sim1):
    vm = VarManager()
    a, b, out = rt.malloc(NBYTES), rt.malloc(NBYTES), rt.malloc(NBYTES)
    a.copy_from(bytes([1]) * NBYTES)
    b.copy_from(bytes([2]) * NBYTES)
    x, y = vm.buffer("x", a), vm.buffer("y", out)
    g = ComputeGraph(vm, "template")
    g.node("copy", lambda ctx: ctx.memcpy(y.write(), x.read()))
    s = rt.Stream()
    g.launch(s)
    s.synchronize()
    (node,) = g["copy"]._gnodes
    x.update(b)
    with counted_calls(sim1) as calls:
        g.update()
        assert calls["GraphMemcpyNodeSetParams1D"] == 0
        assert node.params["src"] == a.ptr  # not yet
        # A capture adds the template as a child graph: it must copy from b now.
        with s.capture() as cap:
            g.launch(s)
        assert calls["GraphMemcpyNodeSetParams1D"] == 1
    out.copy_from(bytes(NBYTES))
    cap.graph.instantiate().launch(s)
    s.synchronize()
    assert out.to_bytes() == bytes([2]) * NBYTES
    assert g["copy"].graph_nodes[0].params["src"] == b.ptr
    # the executable was kept: nothing was rebuilt for the template's sake
    x.update(a)
    g.update()
    exe = g._exec
    assert g.graph.nodes()[0].params["src"] == a.ptr
    assert g._exec is exe
    g.launch(s)
    s.synchronize()
    assert out.to_bytes() == bytes([1]) * NBYTES


def test_a_build_after_the_topology_phase_evaluates_each_closure_once_more_and_still_compares(sim1):
    vm = VarManager()
    x = vm.buffer("x", rt.malloc(NBYTES))
    runs: Counter = Counter()
    g = ComputeGraph(vm, "once")
    for i in range(5):
        g.node(f"n{i}", lambda ctx, i=i: (runs.update([i]), ctx.memset(x.write(), i)))
    g.edges()
    assert sum(runs.values()) == 5
    g.launch(rt.Stream())
    assert runs == Counter({i: 2 for i in range(5)})  # topology (once, before), build
    # bindings changed since the topology phase: the build runs it again
    x.update(rt.malloc(NBYTES))
    g.close()
    runs.clear()
    g.launch(rt.Stream())
    assert runs == Counter({i: 2 for i in range(5)})
    flips = itertools.count()
    h = ComputeGraph(vm, "flaky")
    h.node("flaky", lambda ctx: ctx.memset(x.write(), 0) if next(flips) % 2 == 0 else ctx.host(print))
    h.edges()
    with pytest.raises(errors.PhaseMismatch, match="in the topology phase but .* in the build phase"):
        h.launch(rt.Stream())


def test_an_updated_kernel_node_launches_with_its_new_grid_and_arguments(sim1):
    """The exec setter of a kernel node given every parameter (no read-back of the node's)."""
    seen: list[tuple[Any, ...]] = []
    sim.register_kernel("cg_lazy_dims", lambda ctx, x: seen.append((tuple(ctx.grid), tuple(ctx.block), x)))
    k = rt.Program('extern "C" __global__ void cg_lazy_dims(float *x) {}').kernel("cg_lazy_dims",
                                                                                   signature="float *x")
    a, b = rt.malloc(NBYTES), rt.malloc(NBYTES)
    vm = VarManager()
    x, blocks = vm.buffer("x", a), vm.value("blocks", 2)
    g = ComputeGraph(vm, "dims")
    g.node("k", lambda ctx: ctx.launch(k, blocks.read(), 4, x.write()))
    s = rt.Stream()
    g.launch(s)
    s.synchronize()
    assert seen == [((2, 1, 1), (4, 1, 1), a.ptr)]
    blocks.update(3)
    x.update(b)
    g.launch(s)
    s.synchronize()
    assert not g.last_update.rebuilt and g.last_update.setter_calls == 1
    assert seen[-1] == ((3, 1, 1), (4, 1, 1), b.ptr)


def _kept_leaves(exe: Any) -> int:
    """How many objects an executable graph's keep lists hold (lists and tuples walked)."""
    stack, seen, leaves = [exe._keep], set(), 0
    while stack:
        item = stack.pop()
        if item.__class__ in (list, tuple):
            if id(item) not in seen:
                seen.add(id(item))
                stack.extend(item)
        else:
            leaves += 1
    return leaves


def test_an_executable_keeps_only_what_the_current_kernel_parameters_use(sim1):
    """A kernel node set again and again on the executable (a compute graph rebound every frame)
    keeps one set of packed arguments, not one per update; the node launches with the last."""
    seen: list[int] = []
    sim.register_kernel("cg_lazy_keep", lambda ctx, x: seen.append(x))
    k = rt.Program('extern "C" __global__ void cg_lazy_keep(float *x) {}').kernel("cg_lazy_keep",
                                                                                   signature="float *x")
    a, b = rt.malloc(NBYTES), rt.malloc(NBYTES)
    g = rt.Graph()
    n = g.add_kernel(k, 1, 1, (a,))
    exe = g.instantiate()
    # the general path (only the arguments given: the rest read back from the node) packs afresh
    exe.set_kernel_params(n, args=(b,))
    once = _kept_leaves(exe)
    packed = exe._params_kept[0]
    for i in range(40):
        exe.set_kernel_params(n, args=(a if i % 2 else b,))
    assert _kept_leaves(exe) == once
    assert not any(x is packed for x in exe._params_kept)  # the first update's arguments were let go
    s = rt.Stream()
    exe.launch(s)
    s.synchronize()
    assert seen == [a.ptr]
    # every parameter given (the compute graph's updates): the kernel's reused buffer, nothing kept
    for i in range(40):
        exe.set_kernel_params(n, kernel=k, grid=1, block=1, args=(b if i % 2 else a,), shared_mem=0)
    assert _kept_leaves(exe) <= once and exe._params_kept == [None]
    exe.launch(s)
    s.synchronize()
    assert seen == [a.ptr, b.ptr]
    # the same through a compute graph whose variable is rebound every frame
    vm = VarManager()
    x = vm.buffer("x", a)
    cg = ComputeGraph(vm, "frames")
    cg.node("k", lambda ctx: ctx.launch(k, 1, 1, x.write()))
    cg.launch(s)
    x.update(b)
    cg.launch(s)
    once = _kept_leaves(cg.exec)
    for i in range(40):
        x.update(a if i % 2 else b)
        cg.launch(s)
    s.synchronize()
    assert _kept_leaves(cg.exec) == once
    assert seen[-1] == a.ptr  # (the last frame, i = 39, bound a)


def test_the_explicit_graph_chains_a_nodes_work_and_joins_nodes_at_their_first_and_last(sim1):
    """A node issuing several items is a chain of graph nodes in issue order; one issuing none is an
    empty node; an inferred edge runs from the earlier node's last graph node to the later one's first."""
    vm = VarManager()
    x, y = vm.buffer("x", rt.malloc(NBYTES)), vm.buffer("y", rt.malloc(NBYTES))
    g = ComputeGraph(vm, "chains")
    g.node("a", lambda ctx: ctx.memset(x.write(), 1))
    g.node("b", lambda ctx: (ctx.memcpy(y.write(), x.read(), NBYTES), ctx.memset(y.write(), 2),
                             ctx.memset(y.write(), 3)))
    g.node("none", lambda ctx: (x.read(), None)[1])
    g.node("c", lambda ctx: ctx.memcpy(x.write(), y.read(), NBYTES))
    s = rt.Stream()
    g.launch(s)
    s.synchronize()
    chains = {n.name: n.graph_nodes for n in g}
    assert [len(chains[k]) for k in ("a", "b", "none", "c")] == [1, 3, 1, 1]
    assert chains["none"][0].type.name == "EMPTY"
    want = {(chains["b"][0], chains["b"][1]), (chains["b"][1], chains["b"][2])}
    want |= {(chains[a.name][-1], chains[b.name][0]) for a, b, _ in g.edges()}
    assert {(a, b) for a, b, _ in g.graph.edges()} == want
    assert ("b", "c") in {(a.name, b.name) for a, b, _ in g.edges()}  # (so a chain's last node is used)
    assert x.value.to_bytes() == bytes([3]) * NBYTES


def test_a_kernel_node_set_on_an_executable_leaves_the_kernels_next_node_its_own_arguments(sim1):
    """The exec setter packs into the kernel's reused argument buffer, which the kernel's node
    adder also packs into (skipping values it packed last): a node added after a set has the
    arguments it was given."""
    sim.register_kernel("cg_lazy_scratch", lambda ctx, x: None)
    k = rt.Program('extern "C" __global__ void cg_lazy_scratch(float *x) {}').kernel("cg_lazy_scratch",
                                                                                     signature="float *x")
    a, b = rt.malloc(NBYTES), rt.malloc(NBYTES)
    g = rt.Graph()
    g.add_kernel(k, 1, 1, (a,))
    n = g.add_kernel(k, 1, 1, (a,))  # (the kernel's adder: packed a last)
    exe = g.instantiate()
    exe.set_kernel_params(n, kernel=k, grid=1, block=1, args=(b,), shared_mem=0)  # packs b into the buffer
    assert exe._params_kept == []  # (the reused-buffer path: nothing packed kept)
    m = g.add_kernel(k, 1, 1, (a,))
    assert m.params["args"][0] == a.ptr and n.params["args"][0] == a.ptr


def fragile_program() -> tuple[ComputeGraph, Any, list[str | None], Any]:
    """Two nodes: ``first`` copies into z from x or from y, as the value variable ``mode`` says
    (rebinding it changes the topology: from y, first must read y before ``second`` writes it);
    ``second`` raises in the phase ``fail[0]`` names (None: never, "any": every phase)."""
    vm = VarManager()
    x, y, z = (vm.buffer(name, rt.malloc(NBYTES)) for name in "xyz")
    mode = vm.value("mode", "x")
    fail: list[str | None] = [None]
    g = ComputeGraph(vm, "fragile")

    @g.node("first")
    def _(ctx: Any) -> None:
        ctx.memcpy(z.write(), (x if mode.read() == "x" else y).read(), NBYTES)

    @g.node("second")
    def _(ctx: Any) -> None:
        if fail[0] in (ctx.phase, "any"):
            raise ValueError(f"second refuses in the {ctx.phase} phase")
        ctx.memset(y.write(), 7, NBYTES)

    return g, mode, fail, vm


@pytest.mark.parametrize("phase", ["topology", "build"])
def test_an_update_whose_rebuild_fails_leaves_nothing_the_next_update_trusts(sim1, phase):
    """An update that must rebuild (the topology changed) and whose rebuild fails -- a closure
    raising in the topology phase, or in the build phase after the C or Python loop added nodes --
    raises the closure's error and leaves no graph built from half a phase: the next update
    builds anew, with the edge the new topology has (before: it trusted the previous executable,
    missing the edge, or failed on the half-built nodes with an IndexError)."""
    g, mode, fail, _ = fragile_program()
    s = rt.Stream()
    g.launch(s)
    s.synchronize()
    assert g.edges() == []
    mode.update("y")
    fail[0] = phase
    with pytest.raises(ValueError, match=f"second refuses in the {phase} phase"):
        g.update()
    fail[0] = None
    if phase == "topology":  # (the records are the built graph's: the update finds the change)
        with pytest.warns(compute.RebuildWarning, match=r"node 'first' read \['mode', 'x'\]"):
            report = g.update()
    else:  # (the built graph went with the failed build: the update is a first build)
        report = g.update()
        assert report.reason == "first build"
    assert report.rebuilt and sorted(report.nodes) == ["first", "second"]
    assert [(a.name, b.name) for a, b, _ in g.edges()] == [("first", "second")]
    first, second = g["first"].graph_nodes, g["second"].graph_nodes
    assert [(a, b) for a, b, _ in g.graph.edges()] == [(first[0], second[0])]
    g.launch(s)
    s.synchronize()
    g.close()


def test_a_failed_topology_phase_keeps_the_record_the_built_graph_was_made_from(sim1):
    """A topology phase that fails part-way (here asked for by topology(), with the graph built)
    changes no node's record: an update after it compares against what the executable holds."""
    g, mode, fail, _ = fragile_program()
    s = rt.Stream()
    g.launch(s)
    s.synchronize()
    before = [(n.reads, n.writes, n.items) for n in g]
    mode.update("y")
    fail[0] = "topology"
    with pytest.raises(ValueError, match="topology phase"):
        g.topology()
    assert [(n.reads, n.writes, n.items) for n in g] == before
    fail[0] = None
    with pytest.warns(compute.RebuildWarning, match="first"):
        report = g.update()
    assert report.rebuilt
    assert [(a.name, b.name) for a, b, _ in g.edges()] == [("first", "second")]
    g.close()
