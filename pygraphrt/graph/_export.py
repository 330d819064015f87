"""Export to networkx / JSON and structural comparison."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from .. import _optional

if TYPE_CHECKING:
    from ._graph import Graph


def _describe(graph: "Graph") -> tuple[list[Any], dict[int, int], list[tuple[int, int, Any]]]:
    nodes = graph.nodes()
    index = {id(n): i for i, n in enumerate(nodes)}
    edges = [(index[id(a)], index[id(b)], e) for a, b, e in graph.edges()]
    return nodes, index, edges


def _jsonable(v: Any) -> Any:
    if isinstance(v, (int, float, str, bool)) or v is None:
        return v
    if hasattr(v, "__dataclass_fields__"):
        return {k: _jsonable(getattr(v, k)) for k in v.__dataclass_fields__}
    if callable(v):
        return getattr(v, "__qualname__", repr(v))
    return repr(v)


def _params(node: Any) -> dict[str, Any]:
    """A node's params, or why they cannot be read (e.g. kernels of another runtime)."""
    from .. import errors

    try:
        return node.params
    except errors.NotSupported as exc:
        return {"unavailable": exc.detail or str(exc)}


def to_networkx(graph: "Graph") -> Any:
    """A ``networkx.DiGraph``: nodes 0..n-1 with ``type`` and ``params``; edges with ``edge_data``."""
    nx = _optional.networkx("Graph.to_networkx")

    nodes, _, edges = _describe(graph)
    g = nx.DiGraph()
    for i, n in enumerate(nodes):
        g.add_node(i, type=n.type.value, params=_params(n), node=n)
    for a, b, e in edges:
        g.add_edge(a, b, edge_data=e)
    return g


def to_json(graph: "Graph") -> str:
    nodes, _, edges = _describe(graph)
    return json.dumps({
        "nodes": [{"id": i, "type": n.type.value,
                   "params": {k: _jsonable(v) for k, v in _params(n).items()}}
                  for i, n in enumerate(nodes)],
        "edges": [{"from": a, "to": b, "from_port": e.from_port, "to_port": e.to_port,
                   "type": int(e.type)} for a, b, e in edges],
    }, sort_keys=True)


def same_structure(a: "Graph", b: "Graph") -> bool:
    """Exact comparison: isomorphic as directed graphs, matching node types and edge data."""
    nx = _optional.networkx("Graph.same_structure")

    def graph_of(g: "Graph") -> Any:
        nodes, _, edges = _describe(g)
        d = nx.DiGraph()
        for i, n in enumerate(nodes):
            d.add_node(i, type=n.type)
        for x, y, e in edges:
            d.add_edge(x, y, edge_data=e)
        return d

    return nx.is_isomorphic(graph_of(a), graph_of(b),
                            node_match=lambda x, y: x["type"] == y["type"],
                            edge_match=lambda x, y: x["edge_data"] == y["edge_data"])
