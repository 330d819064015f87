"""Graphs from other libraries on the simulator (issue 44): Graph.wrap / GraphExec.wrap of handles,
the node-type rule for child graphs, the fixed-randomness rule, and pygraphrt.torch without torch.

A torch graph is stood in for by an object with torch's CUDAGraph methods (``raw_cuda_graph``,
``capture_begin``, ``raw_cuda_graph_exec``) over a simulator graph: the rule under test is
pygraphrt's; tests/gpu/test_torch.py runs the same paths with torch's own graphs.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import warnings
import weakref
from pathlib import Path
from types import SimpleNamespace

import pytest

import pygraphrt as rt
from pygraphrt import errors
from pygraphrt.enums import CaptureStatus, NodeType
from pygraphrt.graph._foreign import RandomDraws

from .backends import selected

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module", autouse=True)
def sim_backend():
    with selected("sim") as backend:
        yield backend


def handle_int(obj) -> int:
    return int(rt.lowlevel.ffi.cast("uintptr_t", obj.handle))


def memset_graph(buf, value: int) -> rt.Graph:
    g = rt.Graph()
    first = g.add_empty()
    g.add_memset(buf, value, 64, dependencies=[first])
    return g


class FakeTorchGraph:
    """torch.cuda.CUDAGraph's surface pygraphrt reads, over a simulator graph."""

    def __init__(self, graph: rt.Graph | None, draws: RandomDraws | None = None, keep_graph: bool = True):
        self.graph = graph
        self._keep_graph = keep_graph
        self.exe = None
        if draws is not None:
            self._pygraphrt_draws = draws

    def capture_begin(self, *a, **k):  # (only its presence is read)
        raise AssertionError("not called")

    def raw_cuda_graph(self) -> int:
        if self.graph is None:
            raise RuntimeError("You cannot access the raw cudaGraph_t instance until capture_end() has been called")
        return handle_int(self.graph)

    @property
    def _has_graph_exec(self) -> bool:
        return self.exe is not None

    def instantiate(self) -> None:
        self.exe = self.graph.instantiate()

    def raw_cuda_graph_exec(self) -> int:
        return handle_int(self.exe)


# -- adoption ------------------------------------------------------------------------------------
def test_wrap_an_int_handle_reads_back_runs_and_never_destroys():
    buf, out = rt.malloc(64), rt.malloc(64)
    g = memset_graph(buf, 7)
    w = rt.Graph.wrap(handle_int(g))
    assert [n.type for n in w.nodes()] == [NodeType.EMPTY, NodeType.MEMSET]
    assert len(w.edges()) == 1 and w.same_structure(g)
    s = rt.Stream()
    w.instantiate().launch(s)
    s.synchronize()
    assert buf.to_bytes() == bytes([7]) * 64
    c = w.clone()  # a copy is pygraphrt's own
    assert len(c) == 2 and c._owned
    parent = rt.Graph()
    node = parent.add_child_graph(w)
    parent.add_memcpy(out, buf, 64, dependencies=[node])
    buf.copy_from(bytes(64))
    parent.instantiate().launch(s)
    s.synchronize()
    assert out.to_bytes() == bytes([7]) * 64
    exe = g.instantiate()
    assert exe.update(w) is rt.enums.UpdateResult.SUCCESS  # update into it from the borrowed graph
    w.close()  # forgets, never destroys
    assert len(g.nodes()) == 2


def test_wrap_keeps_its_owner_alive_through_children_and_executables():
    class Owner:
        pass

    g = memset_graph(rt.malloc(64), 1)
    for keeper in ("parent", "exec"):
        owner = Owner()
        gone = weakref.ref(owner)
        w = rt.Graph.wrap(int(g), owner=owner)
        if keeper == "parent":
            held = rt.Graph()
            held.add_child_graph(w)  # a copy of the graph, still addressing what the owner holds
        else:
            held = w.instantiate()
        del owner, w
        gc.collect()
        assert gone() is not None, keeper  # only the parent graph (or the executable) holds it
        del held
        gc.collect()
        assert gone() is None, keeper


def test_exec_wrap_of_an_int_launches_and_says_it_has_no_graph():
    buf = rt.malloc(64)
    g = memset_graph(buf, 9)
    exe = g.instantiate()
    borrowed = rt.GraphExec.wrap(handle_int(exe))
    s = rt.Stream()
    borrowed.launch(s)
    s.synchronize()
    assert buf.to_bytes() == bytes([9]) * 64
    with pytest.raises(errors.InvalidValue, match="without its graph"):
        borrowed.graph
    with_graph = rt.GraphExec.wrap(handle_int(exe), graph=g)
    assert with_graph.graph is g
    borrowed.close()
    exe.launch(s)  # still the owner's, alive
    s.synchronize()


@pytest.mark.parametrize("bad, says", [
    (True, "a bool is not a graph"),
    (0, "NULL"),
    (-5, "not a 64-bit handle"),
    (1 << 64, "not a 64-bit handle"),
    (object(), "cannot find a graph handle"),
    ("0x10", "cannot find a graph handle"),
])
def test_wrap_refuses_what_holds_no_graph(bad, says):
    with pytest.raises(errors.InvalidValue, match=says) as exc:
        rt.Graph.wrap(bad)
    assert exc.value.api == "Graph.wrap"
    with pytest.raises(errors.InvalidValue):
        rt.GraphExec.wrap(bad)


def test_wrap_refuses_typed_objects_naming_what_was_given():
    g = rt.Graph()
    with pytest.raises(errors.InvalidValue, match="pygraphrt Graph already"):
        rt.Graph.wrap(g)
    with pytest.raises(errors.InvalidValue, match="pygraphrt GraphExec already"):
        rt.GraphExec.wrap(g.instantiate())
    with pytest.raises(errors.InvalidValue, match="keep_graph=True"):
        rt.Graph.wrap(FakeTorchGraph(g, keep_graph=False))
    with pytest.raises(errors.InvalidValue, match="until capture_end"):  # torch's own words kept
        rt.Graph.wrap(FakeTorchGraph(None))
    cupy_graph = type("Graph", (), {"__module__": "cupy.cuda.graph"})()
    with pytest.raises(errors.InvalidValue, match="CuPy"):
        rt.Graph.wrap(cupy_graph)
    with pytest.raises(errors.InvalidValue, match="CuPy"):
        rt.GraphExec.wrap(cupy_graph)
    builder = type("GraphBuilder", (), {})()
    with pytest.raises(errors.InvalidValue, match="GraphBuilder keeps its graph private"):
        rt.Graph.wrap(builder)


class CUgraph:
    """Stands in for cuda.bindings' handle objects where cuda-bindings is not installed: pygraphrt
    recognises them by type name and converts them with int(), as cuda.bindings documents."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __int__(self) -> int:
        return self.value


class CUgraphExec(CUgraph):
    pass


def binding_types():
    try:
        from cuda.bindings import runtime
    except ImportError:
        return CUgraph, CUgraphExec
    return runtime.cudaGraph_t, runtime.cudaGraphExec_t


def test_wrap_of_cuda_bindings_handles_and_cuda_core_style_objects():
    graph_t, exec_t = binding_types()
    buf = rt.malloc(64)
    g = memset_graph(buf, 3)
    exe = g.instantiate()
    as_binding = graph_t(handle_int(g))
    assert rt.Graph.wrap(as_binding).same_structure(g)
    core_def = type("GraphDef", (), {"handle": as_binding})()  # cuda.core's definition: .handle is a graph
    assert len(rt.Graph.wrap(core_def)) == 2
    core_exec = type("Graph", (), {"handle": exec_t(handle_int(exe))})()  # cuda.core's executable
    with pytest.raises(errors.InvalidValue, match="use GraphExec.wrap"):
        rt.Graph.wrap(core_exec)
    s = rt.Stream()
    buf.copy_from(bytes(64))
    rt.GraphExec.wrap(core_exec).launch(s)
    s.synchronize()
    assert buf.to_bytes() == bytes([3]) * 64
    with pytest.raises(errors.InvalidValue, match="NULL"):
        rt.Graph.wrap(graph_t(0))


# -- node types ----------------------------------------------------------------------------------
def test_a_conditional_body_refuses_a_child_with_other_node_types():
    parent = rt.Graph()
    loop = parent.add_while(parent.conditional_handle())
    body = loop.bodies[0]
    with_host = rt.Graph()
    with_host.add_empty().host(lambda: None)
    with pytest.raises(errors.InvalidValue, match="HOST node; a conditional node's body holds only"):
        body.add_child_graph(with_host)
    nested = rt.Graph()
    nested.add_child_graph(with_host)  # (fine outside a body)
    with pytest.raises(errors.InvalidValue, match="HOST node"):
        body.add_child_graph(nested)  # found through the child graph inside it
    foreign = rt.Graph.wrap(handle_int(with_host))
    with pytest.raises(errors.InvalidValue, match="HOST node"):
        body.add_child_graph(foreign)
    fine = memset_graph(rt.malloc(64), 1)
    fine.add_child_graph(memset_graph(rt.malloc(64), 2))
    assert body.add_child_graph(fine).type is NodeType.GRAPH
    assert body.add_child_graph(rt.Graph.wrap(handle_int(fine))).type is NodeType.GRAPH


def test_a_foreign_child_with_allocation_nodes_is_refused_naming_them():
    g = rt.Graph()
    alloc = g.add_mem_alloc(256)
    g.add_mem_free(alloc.dptr, dependencies=[alloc])
    w = rt.Graph.wrap(handle_int(g))
    with pytest.raises(errors.InvalidValue, match="MEM_ALLOC node; a child graph holds no memory allocation"):
        rt.Graph().add_child_graph(w)


# -- random numbers ------------------------------------------------------------------------------
def draws(uses_rng):
    return RandomDraws("a torch graph captured by pygraphrt.torch.capture", uses_rng,
                       "its generators' offsets moved over torch's replay()" if uses_rng else "")


@pytest.mark.parametrize("uses_rng, says", [(True, "draws random numbers"), (None, "cannot tell whether")])
def test_a_graph_that_draws_is_refused_on_every_path_but_replay(uses_rng, says):
    buf = rt.malloc(64)
    torch_like = FakeTorchGraph(memset_graph(buf, 5), draws(uses_rng))
    w = rt.Graph.wrap(torch_like)
    parent = rt.Graph()
    with pytest.raises(errors.FixedRandomness, match=says) as exc:
        parent.add_child_graph(w)
    assert "as a child graph node" in str(exc.value) and "allow_fixed_rng=True" in str(exc.value)
    assert len(parent) == 0
    body = parent.add_while(parent.conditional_handle()).bodies[0]
    with pytest.raises(errors.FixedRandomness, match="in a conditional body"):
        body.add_child_graph(w)
    with pytest.raises(errors.FixedRandomness, match="executable graph"):
        w.instantiate()
    with pytest.raises(errors.FixedRandomness, match="executable graph"):
        w.clone().instantiate()  # a copy draws as the original does
    with pytest.raises(errors.FixedRandomness):
        rt.GraphExec.wrap(torch_like)
    with pytest.raises(errors.FixedRandomness):
        torch_like.graph.instantiate().update(w)
    assert torch_like.exe is None  # refused before torch was asked to instantiate


def test_allow_fixed_rng_warns_and_goes_ahead():
    buf = rt.malloc(64)
    torch_like = FakeTorchGraph(memset_graph(buf, 5), draws(True))
    w = rt.Graph.wrap(torch_like)
    with pytest.warns(errors.FixedRandomnessWarning, match="repeats the same draws"):
        node = rt.Graph().add_child_graph(w, allow_fixed_rng=True)
    assert node.type is NodeType.GRAPH
    with pytest.warns(errors.FixedRandomnessWarning):
        exe = w.instantiate(allow_fixed_rng=True)
    with pytest.warns(errors.FixedRandomnessWarning):
        borrowed = rt.GraphExec.wrap(torch_like, allow_fixed_rng=True)
    assert torch_like.exe is not None and borrowed.graph.same_structure(torch_like.graph)
    s = rt.Stream()
    borrowed.launch(s)
    exe.launch(s)
    s.synchronize()
    assert buf.to_bytes() == bytes([5]) * 64


def test_a_graph_measured_rng_free_goes_everywhere_without_a_warning():
    buf = rt.malloc(64)
    torch_like = FakeTorchGraph(memset_graph(buf, 6), draws(False))
    w = rt.Graph.wrap(torch_like)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parent = rt.Graph()
        parent.add_child_graph(w)
        parent.add_while(parent.conditional_handle()).bodies[0].add_child_graph(w)
        w.instantiate()
        s = rt.Stream()
        rt.GraphExec.wrap(torch_like).launch(s)
        s.synchronize()
    assert buf.to_bytes() == bytes([6]) * 64


def test_exec_wrap_of_a_torch_graph_not_kept_borrows_its_executable_alone():
    buf = rt.malloc(64)
    torch_like = FakeTorchGraph(memset_graph(buf, 4), keep_graph=False)
    torch_like.instantiate()  # (torch instantiates at capture_end when the graph is not kept)
    with pytest.raises(errors.FixedRandomness, match="cannot tell"):
        rt.GraphExec.wrap(torch_like)
    with pytest.warns(errors.FixedRandomnessWarning):
        borrowed = rt.GraphExec.wrap(torch_like, allow_fixed_rng=True)
    s = rt.Stream()
    borrowed.launch(s)
    s.synchronize()
    assert buf.to_bytes() == bytes([4]) * 64
    with pytest.raises(errors.InvalidValue, match="without its graph"):
        borrowed.graph


def test_a_plain_torch_graph_is_not_known_rng_free():
    """One wrapped directly (not made by pygraphrt.torch) has had no replay measured."""
    w = rt.Graph.wrap(FakeTorchGraph(memset_graph(rt.malloc(64), 1)))
    with pytest.raises(errors.FixedRandomness, match="cannot tell"):
        rt.Graph().add_child_graph(w)


# -- pygraphrt.torch without torch -------------------------------------------------------------
def run_py(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), *sys.path]), PYGRAPHRT_BACKEND="sim")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env,
                          cwd=str(REPO))


def test_pygraphrt_torch_without_torch_names_the_extra():
    r = run_py("import sys; sys.modules['torch'] = None\n"
               "import pygraphrt as rt, pygraphrt.torch as pt\n"
               "assert 'torch' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
               "for call in (lambda: pt.capture(rt.Stream()), lambda: pt.warmup(lambda: 0, rt.Stream())):\n"
               "    try:\n"
               "        call()\n"
               "    except ImportError as e:\n"
               "        print('IMPORT-ERROR', e)\n")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 2 and all("pip install 'pygraphrt[torch]'" in line for line in lines), r.stdout


def test_import_pygraphrt_torch_does_not_import_torch():
    r = run_py("import sys, pygraphrt, pygraphrt.torch\nprint('torch' in sys.modules)")
    assert r.returncode == 0 and r.stdout.strip() == "False", r.stderr


def test_check_capturable_reads_torch_optimizers():
    torch = pytest.importorskip("torch")
    from pygraphrt.torch import check_capturable

    p = torch.nn.Parameter(torch.zeros(3))
    with pytest.raises(errors.InvalidValue, match="Adam param group 0 has capturable=False"):
        check_capturable([torch.optim.Adam([p])])
    check_capturable([torch.optim.Adam([p], capturable=True), torch.optim.SGD([p], lr=0.1)])
    with pytest.raises(errors.InvalidValue, match="not a torch optimizer"):
        check_capturable([object()])


def test_capture_and_warmup_refuse_bad_arguments_before_touching_the_device():
    """With torch present (its CPU build is enough): the checks that run before any CUDA call."""
    pytest.importorskip("torch")
    import torch

    import pygraphrt.torch as pt

    s = rt.Stream()
    with pytest.raises(errors.InvalidValue, match="mode 'bogus'"):
        pt.capture(s, mode="bogus")
    p = torch.nn.Parameter(torch.zeros(2))
    with pytest.raises(errors.InvalidValue, match="capturable=True"):
        pt.capture(s, optimizers=[torch.optim.AdamW([p], lr=0.1)])
    with pytest.raises(errors.InvalidValue, match="must be a pygraphrt Stream"):
        pt.capture(int(s))
    with pytest.raises(errors.InvalidValue, match="legacy default stream"):
        pt.capture(rt.Stream.legacy_default())
    with pytest.raises(errors.InvalidValue, match="positive int"):
        pt.warmup(lambda: None, s, n=0)


# -- pygraphrt.torch's unwind of a capture torch cannot end, against a stand-in for torch ---------
class StandInGenerator:
    """A CUDA generator's capture mode: CUDAGeneratorState::increase raises "Offset increment
    outside graph capture encountered unexpectedly" for an eager draw while ``capturing_``."""

    def __init__(self) -> None:
        self.capturing = False
        self.offset = 0

    def get_offset(self) -> int:
        return self.offset

    def draw(self) -> None:
        if self.capturing:
            raise RuntimeError("Offset increment outside graph capture encountered unexpectedly.")
        self.offset += 4


class StandInTorch:
    """What pygraphrt.torch drives of torch, modelled on torch 2.11's CUDAGraph.cpp where the
    unwind depends on it: ``capture_begin`` puts the default and the registered generators in
    capture mode (capture_prologue) and routes the allocator to the pool (taking a reference);
    ``capture_end`` raises at a failed ``cudaStreamEndCapture`` (AT_CUDA_CHECK) before it ends the
    routing and the capture mode; ``pool()`` refuses before a capture ended; ``reset()`` releases
    the pool only after one.  Streams are the simulator's, by handle."""

    def __init__(self, backend) -> None:
        self.backend = backend
        self.default = StandInGenerator()
        self.routing: set = set()
        self.pool_refs: dict = {}
        self.current: list[int] = []
        self.graphs: list = []
        self._ids = iter(range(1, 1 << 30))
        torch = self

        class CUDAGraph:
            def __init__(self, keep_graph: bool = False) -> None:
                self.states: list = []
                self.ended = False
                self.pool_id = self.stream = self.graph = None
                torch.graphs.append(self)

            def register_generator_state(self, gen) -> None:
                self.states.append(gen)

            def capture_begin(self, pool=None, capture_error_mode: str = "global") -> None:
                for gen in (torch.default, *self.states):
                    gen.capturing = True
                self.stream = torch.current[-1]
                self.pool_id = pool if pool is not None else (next(torch._ids), 0)
                torch.routing.add(self.pool_id)
                torch.pool_refs[self.pool_id] = torch.pool_refs.get(self.pool_id, 0) + 1
                mode = {"global": "Global", "thread_local": "ThreadLocal", "relaxed": "Relaxed"}[capture_error_mode]
                rc = torch.fn("StreamBeginCapture")(torch.stream(self.stream), torch.const(f"StreamCaptureMode{mode}"))
                assert rc == 0, rc

            def capture_end(self) -> None:
                out = torch.backend.ffi.new(f"{torch.backend.ops.prefix}Graph_t *")
                rc = torch.fn("StreamEndCapture")(torch.stream(self.stream), out)
                if rc:
                    raise RuntimeError(f"CUDA error {rc} (cudaStreamEndCapture)")
                torch.routing.discard(self.pool_id)
                for gen in (torch.default, *self.states):
                    gen.capturing = False
                self.graph, self.ended = out[0], True

            def pool(self):
                if not self.ended:
                    raise RuntimeError("Called CUDAGraph::pool() without a preceding successful capture.")
                return self.pool_id

            def raw_cuda_graph(self) -> int:
                if not self.ended:
                    raise RuntimeError("You cannot access the raw cudaGraph_t instance until capture_end()")
                return int(torch.backend.ffi.cast("uintptr_t", self.graph))

            def reset(self) -> None:
                if self.ended:
                    torch.pool_refs[self.pool_id] -= 1
                    torch.fn("GraphDestroy")(self.graph)
                    self.ended = False

        class StreamContext:
            def __init__(self, handle: int) -> None:
                self.handle = handle

            def __enter__(self) -> None:
                torch.current.append(self.handle)

            def __exit__(self, *exc) -> None:
                torch.current.pop()

        def end_allocate_to_pool(device: int, pool) -> None:
            if pool not in torch.routing:
                raise RuntimeError("endAllocatePool: not currently recording to mempool_id")
            torch.routing.discard(pool)

        def release_pool(device: int, pool) -> None:
            torch.pool_refs[pool] -= 1

        self.cuda = SimpleNamespace(
            default_generators=[self.default], CUDAGraph=CUDAGraph, stream=StreamContext,
            ExternalStream=lambda handle, device=None: int(handle), synchronize=lambda device=None: None,
            empty_cache=lambda: None, graph_pool_handle=lambda: (0, next(self._ids)))
        self._C = SimpleNamespace(_cuda_endAllocateToPool=end_allocate_to_pool, _cuda_releasePool=release_pool)

    def fn(self, name: str):
        return self.backend.ops.fn(name)

    def const(self, name: str):
        return self.backend.ops.const(name)

    def stream(self, handle: int):
        return self.backend.ffi.cast(f"{self.backend.ops.prefix}Stream_t", handle)


def test_a_capture_torch_cannot_end_leaves_generators_allocator_and_stream_as_before(monkeypatch):
    """The GPU failure this holds (H200, torch 2.11): after a capture invalidated by a sync, eager
    torch.randn raised "Offset increment outside graph capture encountered unexpectedly"."""
    import pygraphrt.torch as pt

    s = rt.Stream()
    torch = StandInTorch(s._backend)
    monkeypatch.setattr(pt, "load_torch", lambda what="": torch)
    mine = StandInGenerator()
    with pytest.raises(errors.StreamCaptureUnsupported) as info:
        with pt.capture(s, generators=[mine]):
            s.synchronize()  # (as .item() does on the GPU: the capture is invalidated)
    failed = torch.graphs[0]
    assert s.capture_status is CaptureStatus.NONE
    assert any("capture_end then failed too" in note for note in info.value.__notes__)
    # the generators left capture mode: eager draws work
    assert not torch.default.capturing and not mine.capturing
    torch.default.draw()
    mine.draw()
    # the allocator routes nothing to the pool any more, and its reference was released
    assert torch.routing == set() and torch.pool_refs[failed.pool_id] == 0
    # (the empty capture that ended the generators' capture mode ran on a stream of its own)
    assert len(torch.graphs) == 2 and torch.graphs[1].stream != int(s) and not torch.graphs[1].ended
    # and a capture on the stream works again
    buf = rt.malloc(64)
    with pt.capture(s) as cap:
        s.memset(buf, 3, 64)
    assert [n.type for n in cap.graph.nodes()] == [NodeType.MEMSET] and not torch.default.capturing
