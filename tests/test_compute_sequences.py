"""A compute graph through random sequences of what users do between launches: variables
rebound, value variables changed (work and topology that depend on them), nodes added, explicit
updates, close, a launch into a stream capture -- and after each launch the graph's results are
the single-stream run's (the closures in program order, the reference).  Here on the simulator,
which runs ready nodes in a random order and refuses any launch whose executable has a data race
(a missing edge); tests/gpu/test_compute.py runs the same sequences on a GPU, in either mode
(compiled: the C evaluation and build loop).  This is what catches an update that keeps stale
parameters or edges: the graph's own records agree with themselves, the memory does not.
"""

from __future__ import annotations

import random
import warnings
from typing import Any, Iterator

import pytest

import pygraphrt as rt
from pygraphrt import errors, sim
from pygraphrt.compute import ComputeGraph, RebuildWarning, VarManager

from .backends import simulator

NB = 16          # bytes of every buffer
VARS = 4         # buffer variables
SPARES = 3       # buffers not bound, swapped in by rebinding
SEQUENCES = 120  # random sequences (a fixed seed: the same ones every run)
STEPS = 10       # operations per sequence


@pytest.fixture
def sim_random_order() -> Iterator[Any]:
    with simulator(1) as backend:
        previous = sim.set_race_check("raise")
        sim.set_order("random", seed=45)
        try:
            yield backend
        finally:
            sim.set_order("creation")
            sim.set_race_check(previous)


def mix_kernel() -> Any:
    """``mix(w, r)``: w[i] = (w[i] * 3 + r[i] + 1) mod 256 (w read and written, r read); on the
    simulator, its Python twin."""
    if sim.is_active() and "cg_seq_mix" not in sim.registered_kernels():
        @sim.register_kernel("cg_seq_mix")
        def _(ctx: Any, w: int, r: int) -> None:
            out, inp = ctx.array(w, "u1", NB), ctx.array(r, "u1", NB)
            out[:] = (out.astype("u4") * 3 + inp + 1) % 256
    src = ('extern "C" __global__ void cg_seq_mix(unsigned char *w, const unsigned char *r) '
           '{ w[threadIdx.x] = w[threadIdx.x] * 3 + r[threadIdx.x] + 1; }')
    return rt.Program(src).kernel("cg_seq_mix", signature="unsigned char *w, const unsigned char *r")


class Sequence:
    """One compute graph, its variables and buffers, and the operations a sequence draws."""

    def __init__(self, rnd: random.Random, mix: Any) -> None:
        self.rnd, self.mix = rnd, mix
        self.pool = [rt.malloc(NB) for _ in range(VARS + SPARES)]
        for i, b in enumerate(self.pool):
            b.copy_from(bytes((i * 17 + j) % 256 for j in range(NB)))
        self.vm = VarManager()
        self.vs = [self.vm.buffer(f"v{i}", self.pool[i]) for i in range(VARS)]
        self.spares = list(self.pool[VARS:])
        self.fill = self.vm.value("fill", 5)
        self.mode = self.vm.value("mode", "a")
        self.g = ComputeGraph(self.vm, "sequence")
        self.log: list[str] = []
        for _ in range(rnd.randint(1, 8)):
            self.add_node()

    # -- the nodes ------------------------------------------------------------------------------
    def add_node(self) -> None:
        rnd, vs, mix = self.rnd, self.vs, self.mix
        w, r, r2 = rnd.sample(vs, 3)
        kind = rnd.choice(("set", "copy", "mix", "modal", "two"))
        fill, mode = self.fill, self.mode

        def fn(ctx: Any) -> None:
            if kind == "set":
                ctx.memset(w.write(), fill.read() % 256, NB)
            elif kind == "copy":
                ctx.memcpy(w.write(), r.read(), NB)
            elif kind == "mix":
                ctx.launch(mix, 1, NB, w.read_write(), r.read())
            elif kind == "modal":  # what it reads, and so the edges, depend on a value variable
                ctx.memcpy(w.write(), (r if mode.read() == "a" else r2).read(), NB)
            else:
                ctx.memset(w.write(), (fill.read() + 1) % 256, NB // 2)
                ctx.launch(mix, 1, NB, w.read_write(), r.read())

        name = f"n{len(self.g.nodes())}"
        self.g.node(name, fn)
        self.log.append(f"add {name} {kind} w={w.name} r={r.name} r2={r2.name}")

    # -- the operations -------------------------------------------------------------------------
    def rebind(self) -> None:
        v = self.rnd.choice(self.vs)
        i = self.rnd.randrange(len(self.spares))
        old = v.value
        v.update(self.spares[i])
        self.spares[i] = old
        self.log.append(f"rebind {v.name}")

    def set_value(self) -> None:
        if self.rnd.random() < 0.5:
            self.fill.update(self.rnd.randrange(256))
            self.log.append(f"fill {self.fill.value}")
        else:
            self.mode.update("b" if self.mode.value == "a" else "a")
            self.log.append(f"mode {self.mode.value}")

    def memory(self) -> list[bytes]:
        return [b.to_bytes() for b in self.pool]

    def restore(self, contents: list[bytes]) -> None:
        for b, data in zip(self.pool, contents):
            b.copy_from(data)

    def compare(self, how: str, s: Any) -> None:
        """Launch the graph (``how``), then run the closures on one stream from the same memory:
        the two must leave the same bytes everywhere."""
        before = self.memory()
        if how == "launch":
            self.g.launch(s)
        elif how == "update":
            self.g.update()
            self.g.exec.launch(s)
        else:  # a capture: the graph is added to the capture as a child graph
            with s.capture() as cap:
                self.g.launch(s)
            assert cap.graph is not None
            exe = cap.graph.instantiate()
            exe.launch(s)
        s.synchronize()
        got = self.memory()
        if how == "capture":
            exe.close()
            cap.graph.close()
        self.restore(before)
        self.g.launch(s, single_stream=True)
        s.synchronize()
        want = self.memory()
        self.log.append(how)
        assert got == want, "\n".join(self.log)


def run_sequences(sequences: int = SEQUENCES, seed: int = 45) -> tuple[int, int]:
    """``sequences`` random sequences on the active backend; (launches compared, rebuilds)."""
    mix = mix_kernel()
    s = rt.Stream()
    rnd = random.Random(seed)
    rebuilt = launched = 0
    for _ in range(sequences):
        seq = Sequence(rnd, mix)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RebuildWarning)
            seq.compare("launch", s)
            for _ in range(STEPS):
                op = rnd.choice(("rebind", "rebind", "value", "value", "add", "launch", "launch", "update",
                                 "capture", "close"))
                if op == "rebind":
                    seq.rebind()
                elif op == "value":
                    seq.set_value()
                elif op == "add":
                    seq.add_node()
                elif op == "close":
                    seq.g.close()
                    seq.log.append("close")
                else:
                    seq.compare(op, s)
                    launched += 1
            seq.compare("launch", s)
        rebuilt += sum(issubclass(w.category, RebuildWarning) for w in caught)
        seq.g.close()
        for b in seq.pool:
            b.close()
    s.close()
    return launched, rebuilt


def test_random_sequences_of_rebinds_changes_and_additions_launch_what_one_stream_runs(sim_random_order):
    launched, rebuilt = run_sequences()
    # (the sequences took both kinds of update: in place, and rebuilt where the topology changed)
    assert launched > SEQUENCES * 3 and rebuilt > SEQUENCES // 4, (launched, rebuilt)


def test_the_sequences_catch_a_graph_that_keeps_a_stale_parameter(sim_random_order, monkeypatch):
    """The check above fails when an update leaves a node's old parameters in the executable
    (every in-place setter made a no-op here, as if it were skipped)."""
    from pygraphrt.compute import _work

    for cls in (_work.MemcpyWork, _work.MemsetWork, _work.KernelWork):
        monkeypatch.setattr(cls, "set", staticmethod(lambda w, graph, exe, gnode: 0))
    with pytest.raises(AssertionError):
        run_sequences()


def test_the_sequences_catch_a_graph_missing_an_edge(sim_random_order, monkeypatch):
    """... and when the built graph lacks an inferred edge (the last one dropped)."""
    real = ComputeGraph._pairs_now

    def fewer(self: ComputeGraph) -> tuple[list[int], list[int]]:
        sources, targets = real(self)
        return sources[:-1], targets[:-1]

    monkeypatch.setattr(ComputeGraph, "_pairs_now", fewer)
    with pytest.raises((AssertionError, errors.RaceDetected)):
        run_sequences()
