"""Graphs made by other libraries: adoption (``Graph.wrap`` / ``GraphExec.wrap``), the rule
for graphs that draw random numbers, and the node-type rule for child graphs.

What each library hands out (read from their sources):

* torch: ``torch.cuda.CUDAGraph(keep_graph=True)`` -- ``raw_cuda_graph()`` (the
  ``cudaGraph_t``, an int; torch refuses it for a graph made without ``keep_graph``) and
  ``raw_cuda_graph_exec()`` (after ``instantiate()``).
* cuda.core: ``Graph.handle`` (a ``CUgraphExec``; ``int()`` gives the address) and, where the
  version has it, a graph definition's ``handle`` (a ``CUgraph``).  Its ``GraphBuilder`` keeps
  its graph private.  cuda.bindings' own ``CUgraph`` / ``cudaGraph_t`` objects convert by ``int()``.
* CuPy: ``cupy.cuda.graph.Graph`` keeps ``graph`` and ``graphExec`` as C-level fields that
  Python cannot read, so a CuPy graph cannot be adopted; capture CuPy work with
  ``Stream.wrap(cupy_stream).capture()`` instead.

A raw int is trusted: the runtime cannot tell a live graph handle from a stale one.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from .. import errors
from ..enums import NodeType

if TYPE_CHECKING:
    from ._graph import Graph

#: The node types a conditional node's body may hold (cudaConditionalNodeParams, CUDA Runtime
#: API: "kernel nodes, empty nodes, child graphs, memsets, memcopies, and conditionals. This
#: applies recursively to child graphs and conditional bodies").
BODY_NODE_TYPES = frozenset({NodeType.KERNEL, NodeType.EMPTY, NodeType.GRAPH, NodeType.MEMSET,
                             NodeType.MEMCPY, NodeType.CONDITIONAL})
#: What ``cudaGraphAddChildGraphNode`` refuses in a child graph (its documentation: "If
#: childGraph contains allocation nodes, free nodes, ... this call will return an error").
CHILD_REFUSED_TYPES = frozenset({NodeType.MEM_ALLOC, NodeType.MEM_FREE})

_CUDA_GRAPH_TYPES = ("CUgraph", "cudaGraph_t")
_CUDA_EXEC_TYPES = ("CUgraphExec", "cudaGraphExec_t")


class RandomDraws:
    """What pygraphrt knows of a foreign graph's random numbers.

    ``uses_rng``: True (the generators' offsets moved over a replay), False (they did not),
    None (not known: the graph has not been replayed through ``pygraphrt.torch``).
    ``source`` names the graph in messages; ``how`` says how ``uses_rng`` was learnt.
    """

    __slots__ = ("source", "uses_rng", "how")

    def __init__(self, source: str, uses_rng: bool | None = None, how: str = "") -> None:
        self.source = source
        self.uses_rng = uses_rng
        self.how = how

    def __repr__(self) -> str:
        return f"<RandomDraws {self.source}: uses_rng={self.uses_rng}{' (' + self.how + ')' if self.how else ''}>"


def _is_torch_graph(obj: Any) -> bool:
    return callable(getattr(obj, "raw_cuda_graph", None)) and callable(getattr(obj, "capture_begin", None))


def _is_cupy_graph(obj: Any) -> bool:
    mod = type(obj).__module__ or ""
    return mod.startswith("cupy") and type(obj).__name__ == "Graph"


def _type_name(obj: Any) -> str:
    return type(obj).__name__


def _int_of(value: Any, api: str, what: str) -> int:
    try:
        out = int(value)
    except (TypeError, ValueError) as exc:
        raise errors.InvalidValue(api, detail=f"{what}: {value!r} does not convert to an int handle") from exc
    if not out:
        raise errors.InvalidValue(api, detail=f"{what}: the handle is NULL")
    if not 0 < out < 1 << 64:
        raise errors.InvalidValue(api, detail=f"{what}: {out} is not a 64-bit handle")
    return out


def torch_draws(obj: Any) -> RandomDraws:
    """The record of a torch graph (made by pygraphrt.torch, which measures it; else unknown)."""
    draws = getattr(obj, "_pygraphrt_draws", None)
    if isinstance(draws, RandomDraws):
        return draws
    return RandomDraws("a torch CUDAGraph")


def graph_handle(obj: Any, api: str) -> tuple[int, RandomDraws | None]:
    """The ``cudaGraph_t`` of ``obj`` as an int, and what is known of its random numbers.  (A
    pygraphrt Graph is refused by the caller, ``Graph.wrap``: this module sits below it.)"""
    if isinstance(obj, bool):
        raise errors.InvalidValue(api, detail="a bool is not a graph")
    if isinstance(obj, int):
        return _int_of(obj, api, "the graph handle"), None
    if _is_torch_graph(obj):
        if getattr(obj, "_keep_graph", True) is False:
            raise errors.InvalidValue(api, detail=f"{obj!r} was made without keep_graph=True: torch destroys its "
                                                  "cudaGraph_t at capture_end; make it with "
                                                  "torch.cuda.CUDAGraph(keep_graph=True)")
        try:
            raw = obj.raw_cuda_graph()
        except Exception as exc:  # torch's RuntimeError: not kept, not captured yet, or reset
            raise errors.InvalidValue(api, detail=f"{obj!r} has no graph to adopt (made without "
                                                  f"keep_graph=True, not captured yet, or reset); torch says: "
                                                  f"{exc}") from exc
        return _int_of(raw, api, "torch's raw_cuda_graph()"), torch_draws(obj)
    if _is_cupy_graph(obj):
        raise errors.InvalidValue(api, detail="a CuPy graph keeps its cudaGraph_t in C fields Python cannot "
                                              "read; capture the CuPy work with pygraphrt instead "
                                              "(Stream.wrap(cupy_stream).capture())")
    if _type_name(obj) in _CUDA_GRAPH_TYPES:  # cuda.bindings' handle object
        return _int_of(obj, api, f"the {_type_name(obj)}"), None
    handle = getattr(obj, "handle", None)
    if handle is not None and _type_name(handle) in _CUDA_GRAPH_TYPES:  # cuda.core graph definition
        return _int_of(handle, api, f"{_type_name(obj)}.handle"), None
    if handle is not None and _type_name(handle) in _CUDA_EXEC_TYPES:
        raise errors.InvalidValue(api, detail=f"{obj!r} is an executable graph (its handle is a "
                                              f"{_type_name(handle)}): use GraphExec.wrap")
    if _type_name(obj) == "GraphBuilder":
        raise errors.InvalidValue(api, detail="cuda.core's GraphBuilder keeps its graph private: complete() it "
                                              "and adopt the executable with GraphExec.wrap")
    raise errors.InvalidValue(api, detail=f"cannot find a graph handle in {obj!r}: give a torch "
                                          "CUDAGraph(keep_graph=True), a cuda.core graph definition, a "
                                          "cuda.bindings CUgraph / cudaGraph_t or an int handle")


def exec_handle(obj: Any, api: str, allow_fixed_rng: bool) -> tuple[int, Any]:
    """The ``cudaGraphExec_t`` of ``obj`` as an int and the graph it was made from where known
    (an int ``cudaGraph_t``, or None); the random-number rule checked first (:func:`check_draws`,
    before a torch graph is instantiated).  (A pygraphrt GraphExec is refused by the caller,
    ``GraphExec.wrap``: this module sits below it.)"""
    if isinstance(obj, bool):
        raise errors.InvalidValue(api, detail="a bool is not an executable graph")
    if isinstance(obj, int):
        return _int_of(obj, api, "the executable graph handle"), None
    if _is_torch_graph(obj):
        graph: int | None
        try:
            graph, draws = graph_handle(obj, api)
        except errors.InvalidValue:  # not kept (keep_graph=False): its executable may still be there
            graph, draws = None, torch_draws(obj)
        check_draws(draws, api, "through its pygraphrt executable graph", allow_fixed_rng)
        if graph is not None and getattr(obj, "_has_graph_exec", True) is False:
            obj.instantiate()  # torch's own instantiation (what its first replay() would do)
        try:
            raw = obj.raw_cuda_graph_exec()
        except Exception as exc:
            raise errors.InvalidValue(api, detail=f"{obj!r} has no executable graph; torch says: {exc}") from exc
        return _int_of(raw, api, "torch's raw_cuda_graph_exec()"), graph
    if _is_cupy_graph(obj):
        raise errors.InvalidValue(api, detail="a CuPy graph keeps its cudaGraphExec_t in C fields Python cannot "
                                              "read; launch it with its own launch(), or capture the CuPy work "
                                              "with pygraphrt (Stream.wrap(cupy_stream).capture())")
    if _type_name(obj) in _CUDA_EXEC_TYPES:
        return _int_of(obj, api, f"the {_type_name(obj)}"), None
    handle = getattr(obj, "handle", None)
    if handle is not None and _type_name(handle) in _CUDA_EXEC_TYPES:  # cuda.core Graph
        return _int_of(handle, api, f"{_type_name(obj)}.handle"), None
    raise errors.InvalidValue(api, detail=f"cannot find an executable graph handle in {obj!r}: give a torch "
                                          "CUDAGraph(keep_graph=True), a cuda.core Graph, a cuda.bindings "
                                          "CUgraphExec / cudaGraphExec_t or an int handle")


def draws_of(graph: "Graph") -> RandomDraws | None:
    return graph._draws


def check_draws(draws: RandomDraws | None, api: str, path: str, allow_fixed_rng: bool) -> None:
    """Refuse (or, with ``allow_fixed_rng``, warn about) launching a graph that draws, or may
    draw, torch random numbers other than through torch's ``replay()``.  ``path`` says how
    (``"as a child graph node"``)."""
    if draws is None or draws.uses_rng is False:
        return
    why = ("torch refreshes its generators' seed and offset only in CUDAGraph.replay() (pygraphrt.torch's "
           "cap.replay); pygraphrt knows no supported way to refresh them per launch")
    if draws.uses_rng:
        what = f"{draws.source} draws random numbers ({draws.how})" if draws.how else \
            f"{draws.source} draws random numbers"
        msg = f"{what}; launched {path} it repeats the same draws on every launch: {why}"
    else:
        msg = (f"pygraphrt cannot tell whether {draws.source} draws random numbers (replay it once with "
               f"pygraphrt.torch's cap.replay, which measures the generators' offsets); if it does, launched "
               f"{path} it repeats the same draws on every launch: {why}")
    if allow_fixed_rng:
        warnings.warn(errors.FixedRandomnessWarning(f"{api}: {msg}"), stacklevel=3)
        return
    raise errors.FixedRandomness(api, detail=f"{msg}; pass allow_fixed_rng=True to accept repeated draws")


def check_child_nodes(child: "Graph", api: str, in_body: bool) -> None:
    """Refuse a child graph holding node types its place cannot hold: in a conditional body
    (``in_body``), anything outside :data:`BODY_NODE_TYPES`, through nested child graphs; else
    the allocation and free nodes ``cudaGraphAddChildGraphNode`` refuses."""
    todo: list[tuple[Graph, str]] = [(child, "the child graph")]
    while todo:
        graph, where = todo.pop()
        for node in graph.nodes():
            t = node.type
            if in_body and t not in BODY_NODE_TYPES:
                allowed = ", ".join(sorted(x.name for x in BODY_NODE_TYPES))
                raise errors.InvalidValue(api, detail=f"{where} holds a {t.name} node; a conditional node's body "
                                                      f"holds only {allowed} nodes (through child graphs too)")
            if not in_body and t in CHILD_REFUSED_TYPES:
                raise errors.InvalidValue(api, detail=f"{where} holds a {t.name} node; a child graph holds no "
                                                      "memory allocation or free nodes (a torch graph captured "
                                                      "with the cudaMallocAsync allocator backend has them)")
            if t is NodeType.GRAPH and in_body:
                todo.append((node.child, f"a child graph inside {where}"))  # type: ignore[attr-defined]
