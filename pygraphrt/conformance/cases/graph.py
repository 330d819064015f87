"""Conformance cases, area ``graph``: graphs themselves.

This module: create / destroy, listing nodes, roots, leaves and edges, clone and
find-in-clone, child graphs (copy semantics, the embedded graph), debug DOT and JSON
export, and what happens to closed graphs and their nodes.  :mod:`.nodes` holds the
per-node-type cases (add, read back, set) of the same area and uses the helpers here.

Conventions:

* every graph, stream, event and buffer comes from the context (``t.graph()``...) or is
  tracked (``t.track(g.clone())``), so a failing case leaves nothing behind;
* ``t.call(api, ...)`` reaches the runtime without pygraphrt's own checks, for the
  cases about what the *runtime* does with NULL handles and out-pointers;
* where the documentation says only that "an error" is returned, the case expects the
  class the GPU runs returned (CUDA 12.9, 13.0 and 13.5 on an H100, driver 580; the
  comment says so); :class:`pygraphrt.errors.GraphRTError` only where that error has no
  class of its own (``cudaErrorOperatingSystem``, ``cudaErrorInvalidPitchValue``);
* a runtime case reads what it claims from the runtime: node types through
  ``t.runtime_type``, parameters through the type-specific getters (:func:`typed`),
  counts through :func:`raw_count` (an out-parameter the runtime must overwrite), child
  graphs by handle (:func:`embedded_graph`); a negative case wraps the refused call in
  ``t.under_test()`` and, where the graph must stay as it was, compares
  ``t.snapshot(...)`` taken before it;
* cases whose outcome could not be confirmed without a GPU carry an ``# unsure:``
  comment saying what to look at first.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

from pygraphrt import errors
from pygraphrt.enums import DebugDotFlags, EdgeData, NodeType

from .._case import CaseContext, case

N = 4096  # bytes per scratch buffer

# ---------------------------------------------------------------------------- citations
_RT = "CUDA Runtime API 13.0, Graph Management"
CREATE = f"{_RT}, cudaGraphCreate: "
DESTROY = f"{_RT}, cudaGraphDestroy: "
GET_NODES = f"{_RT}, cudaGraphGetNodes: "
GET_ROOTS = f"{_RT}, cudaGraphGetRootNodes: "
GET_EDGES = f"{_RT}, cudaGraphGetEdges: "
NODE_DEPS = f"{_RT}, cudaGraphNodeGetDependencies / cudaGraphNodeGetDependentNodes: "
NODE_TYPE = f"{_RT}, cudaGraphNodeGetType: "
ADD_EMPTY = f"{_RT}, cudaGraphAddEmptyNode: "
CLONE = f"{_RT}, cudaGraphClone: "
FIND_CLONE = f"{_RT}, cudaGraphNodeFindInClone: "
ADD_CHILD = f"{_RT}, cudaGraphAddChildGraphNode: "
CHILD_GET = f"{_RT}, cudaGraphChildGraphNodeGetGraph: "
DOT = f"{_RT}, cudaGraphDebugDotPrint: "
INSTANTIATE = f"{_RT}, cudaGraphInstantiate: "
PG_GRAPHS = "CUDA Programming Guide, CUDA Graphs: "
PYGRAPHRT = "pygraphrt graph API: "

# A NULL handle or pointer where the function needs one: the error codes' own documentation.
NULL_ARG = ("; CUDA Runtime API 13.0, Data types, cudaErrorInvalidValue: this indicates that one or more of the "
            "parameters passed to the API call is not within an acceptable range of values; HIP Runtime API, "
            "hipErrorInvalidValue: one or more of the parameters passed to the API call is NULL or not in an "
            "acceptable range")


# ---------------------------------------------------------------------------- helpers
def launch(t: CaseContext, g: Any) -> None:
    """Instantiate ``g``, launch it once and wait for it."""
    s = t.stream()
    exe = t.instantiate(g)
    exe.launch(s)
    s.synchronize()


def raw_list(t: CaseContext, api: str, graph_handle: Any, capacity: int) -> tuple[int, list[int]]:
    """``api`` (GraphGetNodes / GraphGetRootNodes) with an array of ``capacity`` entries
    pre-filled with a non-NULL marker; returns (count the runtime wrote back, entries as ints)."""
    ffi = t.ffi
    prefix = t.backend.ops.prefix
    n = ffi.new("size_t *", capacity)
    arr = ffi.new(f"{prefix}GraphNode_t[]", max(capacity, 1))
    for i in range(capacity):
        arr[i] = ffi.cast(f"{prefix}GraphNode_t", 8)  # a marker: the runtime must overwrite it
    t.call(api, graph_handle, arr, n)
    return int(n[0]), [int(ffi.cast("uintptr_t", arr[i])) for i in range(capacity)]


def runtime_types(t: CaseContext, g: Any) -> list[NodeType]:
    """The graph's node types as the runtime reports them (``GraphNodeGetType`` on each node
    of ``GraphGetNodes``), sorted by value -- not pygraphrt's record of what it made."""
    ffi = t.ffi
    ops = t.backend.ops
    count = ffi.new("size_t *", 0)
    t.call("GraphGetNodes", g.handle, t.NULL, count)
    _, handles = raw_list(t, "GraphGetNodes", g.handle, int(count[0]))
    out = []
    for h in handles:
        ty = ffi.new(f"enum {ops.prefix}GraphNodeType *")
        t.call("GraphNodeGetType", ffi.cast(f"{ops.prefix}GraphNode_t", h), ty)
        out.append(ops.node_type_of.get(int(ty[0]), int(ty[0])))
    return sorted(out, key=lambda x: getattr(x, "value", str(x)))


def shape(t: CaseContext, g: Any) -> tuple[list[str], list[tuple[str, str]]]:
    """Node types and edges (as pairs of node types), sorted: a graph's shape up to node identity.
    The types are the runtime's (``GraphNodeGetType``), not pygraphrt's class constants."""
    def name(n: Any) -> str:
        ty = t.runtime_type(n)
        return str(getattr(ty, "value", ty))

    types = sorted(name(n) for n in g.nodes())
    edges = sorted((name(a), name(b)) for a, b, _ in g.edges())
    return types, edges


SENTINEL = 0x5EED  # a count no case's graph has: an out-parameter the runtime did not write keeps it


def raw_count(t: CaseContext, api: str, graph_handle: Any) -> int:
    """The count ``api`` (GraphGetNodes / GraphGetRootNodes / GraphGetEdges) reports when asked
    with NULL arrays, read straight from the runtime.  The out-parameter starts at
    :data:`SENTINEL`, so a call that wrote nothing does not pass for a count of 0."""
    ffi, ops = t.ffi, t.backend.ops
    n = ffi.new("size_t *", SENTINEL)
    if api == "GraphGetEdges":
        sym = ops.edge_forms.get("get_edges")
        if sym:  # the edge-data form (the only one in CUDA 13): NULL edge data asks the count
            rc = getattr(ops.lib, sym)(graph_handle, t.NULL, t.NULL, t.NULL, n)
            if rc:
                raise ops.error(rc, sym)
            return int(n[0])
        t.call(api, graph_handle, t.NULL, t.NULL, n)
    else:
        t.call(api, graph_handle, t.NULL, n)
    return int(n[0])


def counts(t: CaseContext, g: Any) -> tuple[int, int, int]:
    """(nodes, edges, roots) of ``g`` as the runtime counts them (:func:`raw_count`)."""
    h = getattr(g, "handle", g)
    return (raw_count(t, "GraphGetNodes", h), raw_count(t, "GraphGetEdges", h),
            raw_count(t, "GraphGetRootNodes", h))


def typed(node: Any) -> dict[str, Any]:
    """The node's parameters through its type-specific getter (``GraphMemsetNodeGetParams``,
    ``GraphHostNodeGetParams``, ...), which every runtime version has -- not the generic
    ``GraphNodeGetParams`` that ``node.params`` prefers where it exists (CUDA >= 13.2)."""
    from pygraphrt.graph._readback import typed_params

    return typed_params(node)


def labels(named: dict[str, Any], nodes: Any) -> list[str]:
    """The names (keys of ``named``) of ``nodes``, sorted; a node not named is ``"?"``, so a
    failure shows which nodes came back."""
    by_handle = {int(n): k for k, n in named.items()}
    return sorted(by_handle.get(int(n), "?") for n in nodes)


def edge_labels(named: dict[str, Any], edges: Any) -> list[tuple[str, str]]:
    """The edges ``(from, to, data)`` of ``graph.edges()`` as sorted pairs of names."""
    by_handle = {int(n): k for k, n in named.items()}
    return sorted((by_handle.get(int(a), "?"), by_handle.get(int(b), "?")) for a, b, _ in edges)


def embedded_graph(t: CaseContext, node: Any) -> Any:
    """The raw handle ``GraphChildGraphNodeGetGraph`` returns for a child graph node (the out-parameter
    starts as a non-NULL marker the runtime must overwrite)."""
    out = t.new("Graph_t *")
    out[0] = t.ffi.cast(f"{t.backend.ops.prefix}Graph_t", 8)
    t.call("GraphChildGraphNodeGetGraph", node.handle, out)
    return out[0]


def first_word(text: str) -> str:
    """The first word of a DOT document (``digraph`` for a directed graph)."""
    words = text.split(None, 1)
    return words[0] if words else ""


def diamond(t: CaseContext, buf: Any = None) -> tuple[Any, list[Any]]:
    """A tracked graph ``A -> {B, C} -> D``: memset, memcpy, memset, empty."""
    buf = buf if buf is not None else t.malloc(N)
    g = t.graph()
    a = g.add_memset(buf, 1, 64)
    b = a.memcpy(buf.ptr + 1024, buf, 64)
    c = a.memset(buf.ptr + 2048, 3, 64)
    d = g.add_empty(dependencies=[b, c])
    return g, [a, b, c, d]


# Documentation passages several cases quote (each case adds its own gloss after them).
DOC_GRAPH_NODE_FIND_IN_CLONE_CLONEDGRAPH_HAVE = ("CUDA Runtime API 13.5, Graph Management, "
                                                 "cudaGraphNodeFindInClone: \"clonedGraph must have been cloned "
                                                 "from originalGraph via cudaGraphClone. originalNode must "
                                                 "have been in originalGraph at the time of the call to "
                                                 "cudaGraphClone, and the corresponding cloned node in "
                                                 "clonedGraph must not have been removed\"")


# ============================================================================ create / destroy
@case("graph.create.empty", cite=CREATE + "creates an empty graph",
      apis=("GraphCreate", "GraphGetNodes", "GraphGetEdges", "GraphGetRootNodes"), expect=(0, 0, 0))
def _(t: CaseContext) -> Any:
    """A new graph has no nodes, edges or roots (the runtime's counts)."""
    return counts(t, t.graph())


@case("graph.create.flags_must_be_zero", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphCreate: \"flags - Graph creation flags, "
                                              "must be 0\" -- flags - graph creation flags, must be 0; returns cudaErrorInvalidValue", apis=("GraphCreate",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """GraphCreate with flags=1 is refused."""
    out = t.new("Graph_t *")
    try:
        t.call_under_test(t.call, "GraphCreate", out, 1)
    finally:
        if out[0] != t.NULL:
            t.call("GraphDestroy", out[0])


@case("graph.create.null_out", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphCreate: \"pGraph - Returns newly created "
                                    "graph\" -- pGraph returns the new graph; returns cudaErrorInvalidValue" + NULL_ARG,
      apis=("GraphCreate",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """GraphCreate with a NULL out-pointer is refused."""
    # The function's text does not name a NULL pGraph; the error code's does (NULL_ARG).
    # CUDA 12.9, 13.0, 13.5: InvalidValue.
    t.call_under_test(t.call, "GraphCreate", t.NULL, 0)


@case("graph.create.len_counts_nodes", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphGetNodes: \"Returns a list of graph's "
                                            "nodes. nodes may be NULL, in which case this function will return the number of nodes in "
                                            "numNodes\" -- returns the number of nodes in numNodes when nodes is NULL", apis=("GraphCreate", "GraphAddEmptyNode", "GraphGetNodes"), expect=3)
def _(t: CaseContext) -> Any:
    """len(graph) is the runtime's node count."""
    g = t.graph()
    a = g.add_empty()
    a.empty()
    g.add_empty()
    return len(g)


@case("graph.create.independent_graphs", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphCreate: \"Creates an empty graph, which is "
                                              "returned via pGraph\" -- creates an empty graph (each call a new one)",
      apis=("GraphCreate", "GraphAddEmptyNode", "GraphGetNodes"), expect=(2, 1))
def _(t: CaseContext) -> Any:
    """Nodes added to one graph do not appear in another."""
    g1, g2 = t.graph(), t.graph()
    g1.add_empty()
    g2.add_empty()
    g1.add_empty()
    return len(g1.nodes()), len(g2.nodes())


@case("graph.destroy.is_valid_false", kind="binding", cite=DESTROY + "destroys the graph and all of its nodes; "
      + PYGRAPHRT + "Graph.close() destroys it now, is_valid turns false", apis=("GraphDestroy",),
      expect=(True, False))
def _(t: CaseContext) -> Any:
    """is_valid is True until close(), False after."""
    g = t.graph()
    before = g.is_valid
    g.close()
    return before, g.is_valid


@case("graph.destroy.close_twice", kind="binding", cite=PYGRAPHRT + "close() is idempotent (the runtime object is "
      "destroyed exactly once)", apis=("GraphDestroy",), expect=False)
def _(t: CaseContext) -> Any:
    """Closing a closed graph does nothing."""
    g = t.graph()
    g.add_empty()
    g.close()
    g.close()
    return g.is_valid


@case("graph.destroy.nodes_invalid", kind="binding", cite=DESTROY + "destroys the graph, as well as all of its nodes",
      apis=("GraphDestroy",), expect=(False, False))
def _(t: CaseContext) -> Any:
    """Nodes of a destroyed graph are no longer valid."""
    g = t.graph()
    a = g.add_empty()
    b = a.empty()
    g.close()
    return a.is_valid, b.is_valid


@case("graph.destroy.add_after_close", kind="binding", cite=DESTROY + "destroys the graph; " + PYGRAPHRT
      + "a closed object raises InvalidResourceHandle", apis=("GraphAddEmptyNode",),
      raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """Adding a node to a closed graph is refused."""
    g = t.graph()
    g.close()
    g.add_empty()


@case("graph.destroy.nodes_after_close", kind="binding", cite=DESTROY + "destroys the graph; " + PYGRAPHRT
      + "a closed object raises InvalidResourceHandle", apis=("GraphGetNodes",),
      raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """Listing the nodes of a closed graph is refused."""
    g = t.graph()
    g.add_empty()
    g.close()
    g.nodes()


@case("graph.destroy.node_type_after_close", kind="binding", cite=DESTROY + "destroys all of the graph's nodes; "
      + PYGRAPHRT + "a node of a closed graph raises InvalidResourceHandle", apis=("GraphNodeGetType",),
      raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """A node of a closed graph has no type to report."""
    g = t.graph()
    n = g.add_empty()
    g.close()
    return n.type


@case("graph.destroy.dependencies_after_close", kind="binding", cite=DESTROY + "destroys all of the graph's nodes; "
      + PYGRAPHRT + "a node of a closed graph raises InvalidResourceHandle",
      apis=("GraphNodeGetDependentNodes",), raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """A node of a closed graph has no dependents to report."""
    g = t.graph()
    n = g.add_empty()
    n.empty()
    g.close()
    return n.dependents


@case("graph.destroy.clone_after_close", kind="binding", cite=DESTROY + "destroys the graph; " + PYGRAPHRT
      + "a closed object raises InvalidResourceHandle", apis=("GraphClone",),
      raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """Cloning a closed graph is refused."""
    g = t.graph()
    g.add_empty()
    g.close()
    t.track(g.clone())


@case("graph.destroy.instantiate_after_close", kind="binding", cite=DESTROY + "destroys the graph; " + PYGRAPHRT
      + "a closed object raises InvalidResourceHandle", apis=("GraphInstantiate",),
      raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """Instantiating a closed graph is refused."""
    g = t.graph()
    g.add_empty()
    g.close()
    t.instantiate(g)


@case("graph.destroy.debug_dot_after_close", kind="binding", cite=DESTROY + "destroys the graph; " + PYGRAPHRT
      + "a closed object raises InvalidResourceHandle", apis=("GraphDebugDotPrint",),
      raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """Printing a closed graph is refused."""
    g = t.graph()
    g.add_empty()
    g.close()
    g.debug_dot()


@case("graph.destroy.node_of_closed_graph_as_dependency", kind="binding", cite=ADD_EMPTY + "pDependencies are nodes "
      "of graph; " + PYGRAPHRT + "a node of another graph is refused with InvalidValue",
      apis=("GraphAddEmptyNode",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A node of a closed graph cannot be a dependency in another graph."""
    g1, g2 = t.graph(), t.graph()
    a = g1.add_empty()
    g1.close()
    g2.add_empty(dependencies=[a])


@case("graph.destroy.exec_survives_graph", cite=(
          "Observed, cudaGraphLaunch: an executable graph launches and runs after the graph it was "
          "instantiated from is destroyed (cudaGraphDestroy) (deviations.OBSERVATIONS); CUDA Runtime API 13.5, "
          "Graph Management, cudaGraphInstantiate: \"Instantiates graph as an executable graph\" -- no "
          "documentation sentence states that the executable graph outlives the destruction of graph; "
          "pygraphrt graph API: Graph.close(): executable graphs made from it stay usable"),
      apis=("GraphInstantiateWithFlags", "GraphLaunch"), expect=b"\x2a" * 8)
def _(t: CaseContext) -> Any:
    """An executable graph launches after its graph was destroyed."""
    # GraphDestroy is set-up here, not claimed: nothing of the destroyed graph can be asked afterwards
    # (a destroy that did nothing would pass), so the case claims the instantiation and launch only.
    buf = t.malloc(N)
    g = t.graph()
    g.add_memset(buf, 0x2A, N)
    exe = t.instantiate(g)
    g.close()
    s = t.stream()
    exe.launch(s)
    s.synchronize()
    return buf.to_bytes(8)


@case("graph.destroy.null", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphDestroy: \"graph - Graph to destroy\" -- "
                                 "graph - graph to destroy; returns cudaErrorInvalidValue" + NULL_ARG,
      apis=("GraphDestroy",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """GraphDestroy(NULL) is refused."""
    # unsure: a NULL graph is not named by the documentation; the runtime checks it for
    # cudaGraphAddEmptyNode (InvalidValue, seen on 12.9 and 13.0).
    t.call_under_test(t.call, "GraphDestroy", t.NULL)


# ============================================================================ listing
@case("graph.nodes.identity", kind="binding", cite=PYGRAPHRT + "the same runtime handle always gives the "
      "same Python node object while the graph lives", apis=("GraphGetNodes",), expect=(3, [True, True, True]))
def _(t: CaseContext) -> Any:
    """nodes() returns the very node objects the add methods returned."""
    g = t.graph()
    made = [g.add_empty() for _ in range(3)]
    listed = g.nodes()
    return len(listed), [any(x is m for m in made) for x in listed]


@case("graph.nodes.count_query", cite=GET_NODES + "nodes may be NULL, in which case this function will "
      "return the number of nodes in numNodes", apis=("GraphGetNodes",), expect=3)
def _(t: CaseContext) -> Any:
    """GraphGetNodes with nodes=NULL reports the count."""
    g = t.graph()
    a = g.add_empty()
    a.empty()
    a.empty()
    ffi = t.ffi
    n = ffi.new("size_t *", 0)
    t.call("GraphGetNodes", g.handle, t.NULL, n)
    return int(n[0])


@case("graph.nodes.larger_array_padded", cite=GET_NODES + "if numNodes is higher than the actual number "
      "of nodes, the remaining entries in nodes will be set to NULL, and the number of nodes actually "
      "obtained will be returned in numNodes", apis=("GraphGetNodes",), expect=(2, True, [0, 0, 0]))
def _(t: CaseContext) -> Any:
    """A larger array gets the nodes, NULLs after them, and the real count."""
    g = t.graph()
    a = g.add_empty()
    b = a.empty()
    n, entries = raw_list(t, "GraphGetNodes", g.handle, 5)
    return n, set(entries[:2]) == {int(a), int(b)}, entries[2:]


@case("graph.nodes.smaller_array_filled", cite=GET_NODES + "otherwise, numNodes entries will be filled in",
      apis=("GraphGetNodes",), expect=(1, True))
def _(t: CaseContext) -> Any:
    """An array smaller than the node count gets that many of the graph's nodes."""
    g = t.graph()
    made = [g.add_empty() for _ in range(3)]
    n, entries = raw_list(t, "GraphGetNodes", g.handle, 1)
    return n, entries[0] in {int(m) for m in made}


@case("graph.nodes.null_count", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphGetNodes: \"numNodes - See description\" -- "
                                     "numNodes - see description; returns cudaErrorInvalidValue" + NULL_ARG, apis=("GraphGetNodes",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """GraphGetNodes without a count pointer is refused."""
    g = t.graph()
    g.add_empty()
    t.call_under_test(t.call, "GraphGetNodes", g.handle, t.NULL, t.NULL)


@case("graph.nodes.null_graph", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphGetNodes: \"graph - Graph to query\" -- "
                                     "graph - graph to query; returns cudaErrorInvalidValue" + NULL_ARG,
      apis=("GraphGetNodes",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """GraphGetNodes of a NULL graph is refused."""
    n = t.ffi.new("size_t *", 0)
    t.call_under_test(t.call, "GraphGetNodes", t.NULL, t.NULL, n)


def runtime_type(t: CaseContext, node: Any) -> Any:
    """``GraphNodeGetType`` of one node, translated to the neutral NodeType (the raw value if unknown)."""
    ops = t.backend.ops
    ty = t.ffi.new(f"enum {ops.prefix}GraphNodeType *")
    t.call("GraphNodeGetType", node.handle, ty)
    return ops.node_type_of.get(int(ty[0]), int(ty[0]))


_ALL_BASIC = [NodeType.EMPTY, NodeType.MEMSET, NodeType.MEMCPY, NodeType.HOST, NodeType.GRAPH,
              NodeType.EVENT_RECORD, NodeType.WAIT_EVENT]


@case("graph.nodes.runtime_types", cite=NODE_TYPE + "returns the node type of node in pType",
      apis=("GraphNodeGetType", "GraphAddEmptyNode", "GraphAddMemsetNode", "GraphAddMemcpyNode1D",
            "GraphAddHostNode", "GraphAddChildGraphNode", "GraphAddEventRecordNode", "GraphAddEventWaitNode"),
      expect=_ALL_BASIC)
def _(t: CaseContext) -> Any:
    """The runtime reports each node's type as the type of the API that made it."""
    buf = t.malloc(N)
    ev = t.event()
    child = t.graph()
    child.add_empty()
    g = t.graph()
    made = [g.add_empty(), g.add_memset(buf, 1, 16), g.add_memcpy(buf.ptr + 64, buf, 16),
            g.add_host(lambda: None), g.add_child_graph(child), g.add_event_record(ev), g.add_event_wait(ev)]
    return [runtime_type(t, n) for n in made]


@case("graph.nodes.runtime_types_listed", cite=NODE_TYPE + "returns the node type of node in pType; "
      + GET_NODES + "returns a list of graph's nodes", apis=("GraphGetNodes", "GraphNodeGetType"),
      expect=sorted(_ALL_BASIC, key=lambda x: x.value))
def _(t: CaseContext) -> Any:
    """The nodes the runtime lists have the types of the nodes that were made."""
    buf = t.malloc(N)
    ev = t.event()
    child = t.graph()
    child.add_empty()
    g = t.graph()
    g.add_empty()
    g.add_memset(buf, 1, 16)
    g.add_memcpy(buf.ptr + 64, buf, 16)
    g.add_host(lambda: None)
    g.add_child_graph(child)
    g.add_event_record(ev)
    g.add_event_wait(ev)
    return runtime_types(t, g)


@case("graph.node_type.null_node", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphNodeGetType: \"node - Node to query\" -- "
                                        "node - node to query; returns cudaErrorInvalidValue" + NULL_ARG,
      apis=("GraphNodeGetType",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """GraphNodeGetType of a NULL node is refused."""
    ty = t.ffi.new(f"enum {t.backend.ops.prefix}GraphNodeType *")
    t.call_under_test(t.call, "GraphNodeGetType", t.NULL, ty)


@case("graph.node_type.null_out", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphNodeGetType: \"pType - Pointer to return "
                                       "the node type\" -- pType - pointer to return the node type; returns cudaErrorInvalidValue" + NULL_ARG, apis=("GraphNodeGetType",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """GraphNodeGetType without an out-pointer is refused."""
    g = t.graph()
    n = g.add_empty()
    t.call_under_test(t.call, "GraphNodeGetType", n.handle, t.NULL)


@case("graph.add_empty.null_graph", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphAddEmptyNode: \"graph - Graph to which to "
                                         "add the node\" -- graph - graph to which to add the node; returns cudaErrorInvalidValue" + NULL_ARG, apis=("GraphAddEmptyNode",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Adding a node to a NULL graph is refused."""
    out = t.new("GraphNode_t *")
    t.call_under_test(t.call, "GraphAddEmptyNode", out, t.NULL, t.NULL, 0)


@case("graph.add_empty.null_out", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphAddEmptyNode: \"pGraphNode - Returns newly "
                                       "created node\" -- pGraphNode returns the newly created node; returns cudaErrorInvalidValue" + NULL_ARG, apis=("GraphAddEmptyNode",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Adding a node without an out-pointer is refused."""
    # The function's text does not name a NULL pGraphNode; the error code's does (NULL_ARG).
    # CUDA 12.9, 13.0, 13.5: InvalidValue.
    g = t.graph()
    before = t.snapshot(graph=g)
    try:
        t.call_under_test(t.call, "GraphAddEmptyNode", t.NULL, g.handle, t.NULL, 0)
    finally:
        t.check_equal(t.snapshot(graph=g), before, "the graph after the refused add")


@case("graph.add_empty.dependencies_without_array", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphAddEmptyNode: \"Creates a new node which "
                                                         "performs no operation, and adds it to graph with numDependencies dependencies specified via "
                                                         "pDependencies\" -- numDependencies dependencies specified via pDependencies; returns "
                                                         "cudaErrorInvalidValue" + NULL_ARG, apis=("GraphAddEmptyNode",),
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A dependency count with a NULL dependency array is refused."""
    g = t.graph()
    out = t.new("GraphNode_t *")
    before = t.snapshot(graph=g)
    try:
        t.call_under_test(t.call, "GraphAddEmptyNode", out, g.handle, t.NULL, 1)
    finally:
        t.check_equal(t.snapshot(graph=g), before, "the graph after the refused add")


@case("graph.root_nodes.excludes_dependents", cite=GET_ROOTS + "returns a list of graph's root nodes",
      apis=("GraphGetRootNodes",), expect=["a", "c"])
def _(t: CaseContext) -> Any:
    """Roots are the nodes without dependencies."""
    g = t.graph()
    a = g.add_empty()
    b = a.empty()
    c = g.add_empty()
    return labels({"a": a, "b": b, "c": c}, g.root_nodes())


@case("graph.root_nodes.larger_array_padded", cite=GET_ROOTS + "if pNumRootNodes is higher than the "
      "actual number of root nodes, the remaining entries in pRootNodes will be set to NULL, and the "
      "number of nodes actually obtained will be returned", apis=("GraphGetRootNodes",),
      expect=(1, True, [0, 0]))
def _(t: CaseContext) -> Any:
    """A larger root array gets the root, NULLs after it, and the real count."""
    g = t.graph()
    a = g.add_empty()
    a.empty()
    n, entries = raw_list(t, "GraphGetRootNodes", g.handle, 3)
    return n, entries[0] == int(a), entries[1:]


@case("graph.root_nodes.empty_graph", cite=GET_ROOTS + "returns a list of graph's root nodes",
      apis=("GraphGetRootNodes",), expect=0)
def _(t: CaseContext) -> Any:
    """An empty graph has no roots (the runtime's count)."""
    return raw_count(t, "GraphGetRootNodes", t.graph().handle)


@case("graph.leaf_nodes.excludes_dependencies", cite=(
          "CUDA Runtime API 13.5, Graph Management, cudaGraphNodeGetDependentNodes: \"Returns a list of node's "
          "dependent nodes. pDependentNodes may be NULL, in which case this function will return the number of "
          "dependent nodes in pNumDependentNodes\" -- pygraphrt's leaf_nodes() are the nodes of "
          "cudaGraphGetNodes whose dependent-node count is 0 (the CUDA runtime has no leaf query): with the "
          "edge a->b, b and c"), apis=("GraphGetNodes", "GraphNodeGetDependentNodes"), expect=["b", "c"])
def _(t: CaseContext) -> Any:
    """Leaves are the nodes nothing depends on."""
    g = t.graph()
    a = g.add_empty()
    b = a.empty()
    c = g.add_empty()
    return labels({"a": a, "b": b, "c": c}, g.leaf_nodes())


@case("graph.edges.diamond", cite=GET_EDGES + "returns a list of graph's dependency edges",
      apis=("GraphGetEdges",), expect=[("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
def _(t: CaseContext) -> Any:
    """The diamond A -> {B, C} -> D has exactly its four edges."""
    g, (a, b, c, d) = diamond(t)
    return edge_labels({"a": a, "b": b, "c": c, "d": d}, g.edges())


@case("graph.edges.empty_graph", cite=GET_EDGES + "returns a list of graph's dependency edges",
      apis=("GraphGetEdges",), expect=0)
def _(t: CaseContext) -> Any:
    """A graph of unconnected nodes has no edges (the runtime's count)."""
    g = t.graph()
    g.add_empty()
    g.add_empty()
    return raw_count(t, "GraphGetEdges", g.handle)


@case("graph.dependencies.chain", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphNodeGetDependencies / "
                                       "cudaGraphNodeGetDependentNodes: \"Returns a node's dependent nodes\" -- return a node's "
                                       "dependencies and its dependent nodes",
      apis=("GraphNodeGetDependencies", "GraphNodeGetDependentNodes"), expect=(["a"], ["c"], [EdgeData()]))
def _(t: CaseContext) -> Any:
    """The middle node of a -> b -> c depends on a and has c as its dependent."""
    g = t.graph()
    a = g.add_empty()
    b = a.empty()
    c = b.empty()
    deps, dependents = b.dependencies, b.dependents
    named = {"a": a, "b": b, "c": c}
    return labels(named, [n for n, _ in deps]), labels(named, [n for n, _ in dependents]), [e for _, e in deps]


# ============================================================================ clone
@case("graph.clone.empty", cite=CLONE + "creates a copy of originalGraph", apis=("GraphClone",), expect=0)
def _(t: CaseContext) -> Any:
    """The clone of an empty graph is empty."""
    return len(t.track(t.graph().clone()).nodes())


@case("graph.clone.copies_types_and_edges", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphClone: \"All parameters are copied into the "
                                                 "cloned graph\" -- creates a copy of originalGraph; all parameters are copied into the cloned "
                                                 "graph", apis=("GraphClone", "GraphGetNodes", "GraphGetEdges",
                                                         "GraphNodeGetType"),
      expect=(["empty", "memcpy", "memset", "memset"],
              [("memcpy", "empty"), ("memset", "empty"), ("memset", "memcpy"), ("memset", "memset")]))
def _(t: CaseContext) -> Any:
    """The clone has the diamond's node types and edges (types read from the runtime)."""
    g, _ = diamond(t)
    c = t.track(g.clone())
    return shape(t, c)


@case("graph.clone.find_clone_maps_every_node", cite=FIND_CLONE + "returns the node in clonedGraph "
      "corresponding to originalNode in the original graph", apis=("GraphClone", "GraphNodeFindInClone"),
      expect=(4, True, [NodeType.MEMSET, NodeType.MEMCPY, NodeType.MEMSET, NodeType.EMPTY]))
def _(t: CaseContext) -> Any:
    """find_clone maps the original's nodes one-to-one onto the clone's, types kept (runtime types)."""
    g, nodes = diamond(t)
    c = t.track(g.clone())
    mapped = [g.find_clone(n, c) for n in nodes]
    ids = {int(m) for m in mapped}
    _, listed = raw_list(t, "GraphGetNodes", c.handle, 4)
    return len(ids), ids == set(listed), [t.runtime_type(m) for m in mapped]


@case("graph.clone.find_clone_params", cite=CLONE + "all parameters are copied into the cloned graph",
      apis=("GraphClone", "GraphNodeFindInClone", "GraphMemsetNodeGetParams"), expect=(7, 100, True))
def _(t: CaseContext) -> Any:
    """A cloned memset node has the original's parameters."""
    buf = t.malloc(N)
    g = t.graph()
    m = g.add_memset(buf, 7, 100)
    c = t.track(g.clone())
    p = typed(g.find_clone(m, c))
    return p["value"], p["width"], p["dst"] == buf.ptr


@case("graph.clone.independent_of_later_nodes", cite=CLONE + "the original graph may be modified after "
      "this call without affecting the clone", apis=("GraphClone", "GraphAddEmptyNode"), expect=(4, 2))
def _(t: CaseContext) -> Any:
    """Nodes added to the original after cloning are not in the clone."""
    g = t.graph()
    a = g.add_empty()
    a.empty()
    c = t.track(g.clone())
    a.empty()
    g.add_empty()
    return len(g.nodes()), len(c.nodes())


@case("graph.clone.independent_of_later_params", cite=CLONE + "the original graph may be modified after "
      "this call without affecting the clone", apis=("GraphClone", "GraphMemcpyNodeSetParams1D",
                                                    "GraphMemcpyNodeGetParams"), expect=(16, 64))
def _(t: CaseContext) -> Any:
    """Changing a node of the original after cloning leaves the clone's copy as it was."""
    buf = t.malloc(N)
    g = t.graph()
    m = g.add_memcpy(buf.ptr + 1024, buf, 64)
    c = t.track(g.clone())
    m.set_params(dst=buf.ptr + 2048, src=buf, count=16)
    return typed(m)["width"], typed(g.find_clone(m, c))["width"]


@case("graph.clone.independent_of_destroyed_nodes", cite=CLONE + "the original graph may be modified "
      "after this call without affecting the clone", apis=("GraphClone", "GraphDestroyNode", "GraphGetNodes"),
      expect=(1, 2))
def _(t: CaseContext) -> Any:
    """Destroying a node of the original leaves the clone's copy (the runtime's counts)."""
    g = t.graph()
    a = g.add_empty()
    b = a.empty()
    c = t.track(g.clone())
    b.destroy()
    return raw_count(t, "GraphGetNodes", g.handle), raw_count(t, "GraphGetNodes", c.handle)


@case("graph.clone.modified_clone_leaves_original", cite=(
          "Observed, cudaGraphClone: nodes and an edge added to the clone do not appear in the original (1 "
          "node in the original, 3 in the clone) (deviations.OBSERVATIONS); CUDA Runtime API 13.5, Graph "
          "Management, cudaGraphClone: \"This function creates a copy of originalGraph and returns it in "
          "pGraphClone\" -- a graph of its own; \"the original graph may be modified after this call without "
          "affecting the clone\" -- the documentation states only this direction; that changes to the clone "
          "leave the original is not stated"), apis=("GraphClone", "GraphAddEmptyNode"), expect=(1, 3))
def _(t: CaseContext) -> Any:
    """Nodes added to the clone are not in the original."""
    g = t.graph()
    g.add_empty()
    c = t.track(g.clone())
    c.add_empty()
    c.nodes()[0].empty()
    return len(g.nodes()), len(c.nodes())


@case("graph.clone.survives_closing_original", cite=(
          "Observed, cudaGraphClone: a clone keeps its nodes and edges (2 and 1) after its original is "
          "destroyed (cudaGraphDestroy) (deviations.OBSERVATIONS); CUDA Runtime API 13.0, Graph Management, "
          "cudaGraphClone: creates a copy of originalGraph; CUDA Runtime API 13.5, Graph Management, "
          "cudaGraphDestroy: \"Destroys the graph specified by graph, as well as all of its nodes\" -- only "
          "the graph specified; no sentence states that a clone outlives its original"),
      apis=("GraphClone", "GraphGetNodes", "GraphGetEdges"), expect=(2, 1))
def _(t: CaseContext) -> Any:
    """A clone stays usable after its original is destroyed (the clone's counts, from the runtime)."""
    # GraphDestroy is set-up here, not claimed: nothing of the destroyed graph can be asked afterwards.
    g = t.graph()
    a = g.add_empty()
    a.empty()
    c = t.track(g.clone())
    g.close()
    return raw_count(t, "GraphGetNodes", c.handle), raw_count(t, "GraphGetEdges", c.handle)


@case("graph.clone.clone_of_clone", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphClone: \"This function creates a copy of "
                                         "originalGraph and returns it in pGraphClone\" -- creates a copy of originalGraph (a clone is "
                                         "a graph like any other)", apis=("GraphClone", "GraphNodeFindInClone", "GraphNodeGetType"),
      expect=((["empty", "memcpy", "memset", "memset"],
               [("memcpy", "empty"), ("memset", "empty"), ("memset", "memcpy"), ("memset", "memset")]),
              NodeType.MEMSET, 3))
def _(t: CaseContext) -> Any:
    """A clone can be cloned again; find_clone maps step by step (types and parameters from the runtime)."""
    buf = t.malloc(N)
    g, nodes = diamond(t, buf)
    c1 = t.track(g.clone())
    c2 = t.track(c1.clone())
    n1 = g.find_clone(nodes[2], c1)  # the memset of value 3
    n2 = c1.find_clone(n1, c2)
    return shape(t, c2), t.runtime_type(n2), typed(n2)["value"]


@case("graph.clone.child_recursively_copied", cite=CLONE + "child graph nodes in the original graph are "
      "recursively copied into the clone", apis=("GraphClone", "GraphChildGraphNodeGetGraph",
                                                 "GraphAddEmptyNode"), expect=(1, 2, 1))
def _(t: CaseContext) -> Any:
    """The clone's child node embeds its own copy: changing the original's leaves it alone."""
    child = t.graph()
    child.add_empty()
    g = t.graph()
    node = g.add_child_graph(child)
    c = t.track(g.clone())
    cnode = g.find_clone(node, c)
    before = len(cnode.child.nodes())
    node.child.add_empty()  # the original's embedded graph (no clone: changes are the node's)
    return before, len(node.child.nodes()), len(cnode.child.nodes())


@case("graph.clone.launches", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphClone: \"This function creates a copy of "
                                   "originalGraph and returns it in pGraphClone\" -- creates a copy of originalGraph with all "
                                   "parameters",
      apis=("GraphClone", "GraphInstantiateWithFlags", "GraphLaunch"), expect=b"\x5a" * 8)
def _(t: CaseContext) -> Any:
    """The clone runs the original's work."""
    buf = t.malloc(N)
    g = t.graph()
    g.add_memset(buf, 0x5A, N)
    c = t.track(g.clone())
    g.close()
    launch(t, c)
    return buf.to_bytes(8)


@case("graph.clone.find_clone_node_added_later", cite=DOC_GRAPH_NODE_FIND_IN_CLONE_CLONEDGRAPH_HAVE + " -- originalNode must have "
                                                      "been in originalGraph at the time of the call to "
                                                      "cudaGraphClone; returns cudaErrorInvalidValue",
      apis=("GraphNodeFindInClone",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A node added after cloning has no counterpart in the clone."""
    g = t.graph()
    g.add_empty()
    c = t.track(g.clone())
    later = g.add_empty()
    t.call_under_test(g.find_clone, later, c)


@case("graph.clone.find_clone_removed_in_clone", cite=DOC_GRAPH_NODE_FIND_IN_CLONE_CLONEDGRAPH_HAVE + " -- the corresponding cloned "
                                                      "node in clonedGraph must not have been removed; returns "
                                                      "cudaErrorInvalidValue",
      apis=("GraphNodeFindInClone", "GraphDestroyNode"), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A node whose counterpart was removed from the clone is not found."""
    g = t.graph()
    a = g.add_empty()
    g.add_empty()
    c = t.track(g.clone())
    g.find_clone(a, c).destroy()
    t.call_under_test(g.find_clone, a, c)


@case("graph.clone.find_clone_not_a_clone", cite=DOC_GRAPH_NODE_FIND_IN_CLONE_CLONEDGRAPH_HAVE + " -- clonedGraph must have "
                                                 "been cloned from originalGraph via cudaGraphClone; returns "
                                                 "cudaErrorInvalidValue", apis=("GraphNodeFindInClone",),
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A graph of the same shape that is not a clone is refused."""
    g = t.graph()
    a = g.add_empty()
    other = t.graph()
    other.add_empty()
    t.call_under_test(g.find_clone, a, other)


@case("graph.clone.find_clone_foreign_node", kind="binding", cite=FIND_CLONE + "originalNode must have been in "
      "originalGraph; " + PYGRAPHRT + "a node of another graph is refused with InvalidValue",
      apis=("GraphNodeFindInClone",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """find_clone with a node of another graph is refused."""
    g, other = t.graph(), t.graph()
    g.add_empty()
    stranger = other.add_empty()
    c = t.track(g.clone())
    g.find_clone(stranger, c)


@case("graph.clone.find_clone_not_a_node", kind="binding",
      cite=FIND_CLONE + "originalNode - handle to the original node; "
      + PYGRAPHRT + "a non-node is refused with InvalidValue", apis=("GraphNodeFindInClone",),
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """find_clone with something that is not a node is refused."""
    g = t.graph()
    g.add_empty()
    c = t.track(g.clone())
    g.find_clone("node", c)  # type: ignore[arg-type]


@case("graph.clone.with_mem_alloc", cite=CLONE + "cloning is not supported for graphs which contain "
      "memory allocation nodes, memory free nodes, or conditional nodes",
      apis=("GraphClone", "GraphAddMemAllocNode"), requires=("graph_memory_nodes",), raises=errors.NotSupported)
def _(t: CaseContext) -> Any:
    """A graph with graph-memory nodes cannot be cloned: NotSupported, from the clone call."""
    # The returns list names only cudaErrorInvalidValue; "not supported" is the documentation's
    # word and cudaErrorNotSupported what CUDA 12.9, 13.0 and 13.5 return (H100, driver 580).
    g = t.graph()
    a = g.add_mem_alloc(1 << 16)
    a.mem_free(a)
    with t.under_test():
        t.track(g.clone())


@case("graph.clone.null_graph", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphClone: \"originalGraph - Graph to clone\" -- "
                                     "originalGraph - graph to clone; returns cudaErrorInvalidValue" + NULL_ARG, apis=("GraphClone",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Cloning a NULL graph is refused."""
    out = t.new("Graph_t *")
    try:
        t.call_under_test(t.call, "GraphClone", out, t.NULL)
    finally:
        if out[0] != t.NULL:
            t.call("GraphDestroy", out[0])


# ============================================================================ child graphs
@case("graph.child.copied_at_add", cite=ADD_CHILD + "the child graph is cloned in this call",
      apis=("GraphAddChildGraphNode", "GraphChildGraphNodeGetGraph"), expect=(3, 1))
def _(t: CaseContext) -> Any:
    """Nodes added to the child graph afterwards are not in the node's copy."""
    child = t.graph()
    child.add_empty()
    g = t.graph()
    node = g.add_child_graph(child)
    child.add_empty()
    child.add_empty()
    return len(child.nodes()), len(node.child.nodes())


@case("graph.child.survives_closing_original", cite=ADD_CHILD + "the child graph is cloned in this call",
      apis=("GraphAddChildGraphNode", "GraphChildGraphNodeGetGraph", "GraphGetNodes", "GraphGetEdges"),
      expect=(2, 1))
def _(t: CaseContext) -> Any:
    """The node keeps its copy after the graph it was made from is destroyed (counts from the runtime)."""
    # GraphDestroy is set-up here, not claimed: nothing of the destroyed graph can be asked afterwards.
    child = t.graph()
    a = child.add_empty()
    a.empty()
    g = t.graph()
    node = g.add_child_graph(child)
    child.close()
    embedded = embedded_graph(t, node)
    return raw_count(t, "GraphGetNodes", embedded), raw_count(t, "GraphGetEdges", embedded)


@case("graph.child.params", cite=CHILD_GET + "gets a handle to the embedded graph in a child graph node",
      apis=("GraphChildGraphNodeGetGraph", "GraphNodeGetType", "GraphGetNodes"), expect=(NodeType.GRAPH, 2))
def _(t: CaseContext) -> Any:
    """A child graph node reports its type and its embedded graph's size (both from the runtime)."""
    child = t.graph()
    child.add_empty()
    child.add_empty()
    node = t.graph().add_child_graph(child)
    return t.runtime_type(node), raw_count(t, "GraphGetNodes", embedded_graph(t, node))


@case("graph.child.same_embedded_handle", cite=CHILD_GET + "this call does not clone the graph",
      apis=("GraphChildGraphNodeGetGraph", "GraphGetNodes"), expect=(True, True, 1))
def _(t: CaseContext) -> Any:
    """Asking twice gives the same embedded graph (not the original, not a new copy), with the child's node."""
    child = t.graph()
    child.add_empty()
    node = t.graph().add_child_graph(child)
    first, second = embedded_graph(t, node), embedded_graph(t, node)
    as_int = [int(t.ffi.cast("uintptr_t", h)) for h in (first, second)]
    return as_int[0] == as_int[1], as_int[0] != int(child), raw_count(t, "GraphGetNodes", first)


@case("graph.child.changes_through_handle", cite=CHILD_GET + "changes to the graph will be reflected in "
      "the node, and the node retains ownership of the graph", apis=("GraphChildGraphNodeGetGraph",
                                                                     "GraphAddEmptyNode"), expect=(2, 1))
def _(t: CaseContext) -> Any:
    """A node added to the embedded graph is seen through the node; the original is untouched."""
    child = t.graph()
    child.add_empty()
    node = t.graph().add_child_graph(child)
    node.child.add_empty()
    return len(node.child.nodes()), len(child.nodes())


@case("graph.child.nested", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphAddChildGraphNode: \"The node executes an "
                                 "embedded child graph\" -- creates a node which executes an embedded graph (which may itself "
                                 "contain child graph nodes)", apis=("GraphAddChildGraphNode", "GraphChildGraphNodeGetGraph"),
      expect=(NodeType.GRAPH, 2))
def _(t: CaseContext) -> Any:
    """A child graph can contain a child graph; the inner copy is reachable (types and counts from the runtime)."""
    inner = t.graph()
    inner.add_empty()
    inner.add_empty()
    middle = t.graph()
    middle.add_child_graph(inner)
    outer = t.graph()
    node = outer.add_child_graph(middle)
    (inner_node,) = node.child.nodes()
    return t.runtime_type(inner_node), raw_count(t, "GraphGetNodes", embedded_graph(t, inner_node))


@case("graph.child.runs_embedded_work", cite=ADD_CHILD + "creates a new node which executes an "
      "embedded graph", apis=("GraphAddChildGraphNode", "GraphInstantiateWithFlags", "GraphLaunch"),
      expect=(b"\x06" * 8, b"\x06" * 8))
def _(t: CaseContext) -> Any:
    """Launching the parent runs the child's nodes, ordered within the parent."""
    buf = t.malloc(N)
    child = t.graph()
    child.add_memset(buf, 6, 1024)
    g = t.graph()
    node = g.add_child_graph(child)
    node.memcpy(buf.ptr + 2048, buf, 1024)
    launch(t, g)
    return buf.to_bytes(8), bytes(buf.to_bytes(2056)[2048:])


@case("graph.child.contains_itself", kind="binding", cite=ADD_CHILD + "childGraph - the graph to clone into this node; "
      + PYGRAPHRT + "a graph cannot contain itself (InvalidValue)", apis=("GraphAddChildGraphNode",),
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A graph cannot be its own child."""
    g = t.graph()
    g.add_empty()
    g.add_child_graph(g)


@case("graph.child.not_a_graph", kind="binding", cite=ADD_CHILD + "childGraph - the graph to clone into this node; "
      + PYGRAPHRT + "anything else is refused with InvalidValue", apis=("GraphAddChildGraphNode",),
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A child that is not a Graph is refused."""
    t.graph().add_child_graph(object())  # type: ignore[arg-type]


@case("graph.child.closed_child", kind="binding", cite=ADD_CHILD + "childGraph - the graph to clone into this node; "
      + PYGRAPHRT + "a closed object raises InvalidResourceHandle", apis=("GraphAddChildGraphNode",),
      raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """A destroyed graph cannot be embedded."""
    child = t.graph()
    child.add_empty()
    child.close()
    t.graph().add_child_graph(child)


@case("graph.child.with_mem_alloc", cite=ADD_CHILD + "if childGraph contains allocation nodes, free nodes, "
      "or conditional nodes, this call will return an error", apis=("GraphAddChildGraphNode",),
      requires=("graph_memory_nodes",), raises=errors.NotSupported)
def _(t: CaseContext) -> Any:
    """A graph with graph-memory nodes cannot be embedded: NotSupported, from the add."""
    # The documentation says "an error"; cudaErrorNotSupported is what CUDA 12.9, 13.0 and 13.5
    # return (H100, driver 580).
    child = t.graph()
    a = child.add_mem_alloc(1 << 16)
    a.mem_free(a)
    g = t.graph()
    before = t.snapshot(graph=g)
    try:
        t.call_under_test(g.add_child_graph, child)
    finally:
        t.check_equal(t.snapshot(graph=g), before, "the parent graph after the refused add")


@case("graph.child.mem_alloc_into_embedded", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphChildGraphNodeGetGraph: \"Allocation and "
                                                  "free nodes cannot be added to the returned graph\" -- allocation and free nodes cannot be "
                                                  "added to the returned graph; attempting to do so will return an error",
      apis=("GraphChildGraphNodeGetGraph", "GraphAddMemAllocNode"), requires=("graph_memory_nodes",),
      raises=errors.NotSupported)
def _(t: CaseContext) -> Any:
    """An allocation node cannot be added to a child node's embedded graph: NotSupported, from the add."""
    # The documentation says "an error"; cudaErrorNotSupported is what CUDA 12.9, 13.0 and 13.5
    # return (H100, driver 580).
    child = t.graph()
    child.add_empty()
    node = t.graph().add_child_graph(child)
    embedded = node.child
    before = t.snapshot(graph=embedded)
    try:
        t.call_under_test(embedded.add_mem_alloc, 1 << 16)
    finally:
        t.check_equal(t.snapshot(graph=embedded), before, "the embedded graph after the refused add")


@case("graph.child.get_graph_wrong_type", cite=(
          "Observed, cudaGraphChildGraphNodeGetGraph: a memset node is refused with cudaErrorInvalidValue "
          "(deviations.OBSERVATIONS); CUDA Runtime API 13.5, Graph Management, "
          "cudaGraphChildGraphNodeGetGraph: \"Gets a handle to the embedded graph in a child graph node\" -- "
          "node must be a child graph node; no sentence states that another node type is refused "
          "(cudaErrorInvalidValue is only in the return list)"), apis=("GraphChildGraphNodeGetGraph",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Asking a memset node for its embedded graph is refused."""
    buf = t.malloc(N)
    m = t.graph().add_memset(buf, 1, 16)
    out = t.new("Graph_t *")
    t.call_under_test(t.call, "GraphChildGraphNodeGetGraph", m.handle, out)


@case("graph.child.generic_add", cite=("CUDA Runtime API 13.5, Data types, struct cudaChildGraphNodeParams: \"The child graph to clone into "
      "the node for node creation\" -- cudaGraphAddNode with cudaGraphNodeTypeGraph embeds a copy of the "
      "child graph"), apis=("GraphAddNode",),
      requires=("generic_add_node",), expect=(NodeType.GRAPH, 1, 2))
def _(t: CaseContext) -> Any:
    """The generic form embeds a copy of the child graph (type and counts from the runtime)."""
    child = t.graph()
    child.add_empty()
    g = t.graph()
    node = g.add_node(NodeType.GRAPH, child=child)
    child.add_empty()
    return (t.runtime_type(node), raw_count(t, "GraphGetNodes", embedded_graph(t, node)),
            raw_count(t, "GraphGetNodes", child.handle))


@case("graph.child.generic_contains_itself", kind="binding", cite=f"{_RT}, cudaGraphAddNode: nodeParams.graph.graph is "
      "the graph to clone into the node; " + PYGRAPHRT + "a graph cannot contain itself (InvalidValue)",
      apis=("GraphAddNode",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """The generic form refuses a graph as its own child."""
    g = t.graph()
    g.add_node(NodeType.GRAPH, child=g)


# ============================================================================ debug dot, export
@case("graph.debug_dot.digraph", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphDebugDotPrint: \"Using the provided graph, "
                                      "write to path a DOT formatted description of the graph\" -- writes a DOT formatted "
                                      "description of the graph",
      apis=("GraphDebugDotPrint",), expect="digraph")
def _(t: CaseContext) -> Any:
    """The output is a DOT digraph."""
    g, _ = diamond(t)
    return first_word(g.debug_dot())


@case("graph.debug_dot.mentions_node_types", cite=DOT + "by default this includes the graph topology, "
      "node types, node id, kernel names and memcpy direction", apis=("GraphDebugDotPrint",),
      expect=(True, True, True))
def _(t: CaseContext) -> Any:
    """The DOT output names the memset, memcpy and host nodes' types."""
    # unsure: the exact spelling of the type names (MEMSET was seen on CUDA 12.9 and 13.0).
    buf = t.malloc(N)
    g = t.graph()
    a = g.add_memset(buf, 1, 16)
    b = a.memcpy(buf.ptr + 64, buf, 16)
    b.host(lambda: None)
    dot = g.debug_dot().upper()
    return "MEMSET" in dot, "MEMCPY" in dot, "HOST" in dot


@case("graph.debug_dot.writes_path", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphDebugDotPrint: \"Using the provided graph, "
                                          "write to path a DOT formatted description of the graph\" -- writes to path a DOT formatted "
                                          "description of the graph",
      apis=("GraphDebugDotPrint",), expect=(True, True))
def _(t: CaseContext) -> Any:
    """The file at the given path holds what debug_dot returned."""
    g, _ = diamond(t)
    fd, path = tempfile.mkstemp(suffix=".dot")
    os.close(fd)
    try:
        text = g.debug_dot(path)
        with open(path, encoding="utf-8", errors="replace") as f:
            on_disk = f.read()
        return text == on_disk, len(on_disk) > 0
    finally:
        os.unlink(path)


@case("graph.debug_dot.flags_none", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphDebugDotPrint: \"flags - Flags from "
                                         "cudaGraphDebugDotFlags for specifying which additional node information to write\" -- flags - "
                                         "flags from cudaGraphDebugDotFlags for additional node information (none: topology and node "
                                         "types only)", apis=("GraphDebugDotPrint",),
      expect="digraph")
def _(t: CaseContext) -> Any:
    """DOT output without extra flags is still a digraph."""
    g, _ = diamond(t)
    return first_word(g.debug_dot(flags=DebugDotFlags.NONE))


@case("graph.debug_dot.all_param_flags", cite=DOT + "flags can be specified to write more detailed "
      "information about each node type such as parameter values, kernel attributes, node and function "
      "handles", apis=("GraphDebugDotPrint",), expect="digraph")
def _(t: CaseContext) -> Any:
    """Every documented flag together is accepted."""
    g, _ = diamond(t)
    flags = DebugDotFlags.NONE
    for f in DebugDotFlags:
        flags |= f
    return first_word(g.debug_dot(flags=flags))


@case("graph.debug_dot.empty_graph", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphDebugDotPrint: \"Using the provided graph, "
                                          "write to path a DOT formatted description of the graph\" -- writes a DOT formatted "
                                          "description of the graph",
      apis=("GraphDebugDotPrint",), expect="digraph")
def _(t: CaseContext) -> Any:
    """An empty graph prints as a digraph."""
    return first_word(t.graph().debug_dot())


@case("graph.debug_dot.unwritable_path", cite=(
          "CUDA Runtime API 13.5, Graph Management, cudaGraphDebugDotPrint: \"path - The path to write the DOT "
          "file to\" ... \"cudaSuccess, cudaErrorInvalidValue, cudaErrorOperatingSystem\" -- the return list "
          "names cudaErrorOperatingSystem; CUDA Runtime API 13.5, Data types, enum cudaError: "
          "\"cudaErrorOperatingSystem: This error indicates that an OS call failed\" -- a file in a directory "
          "that does not exist cannot be opened for writing: the OS call fails (the GPUs return "
          "cudaErrorOperatingSystem)"), apis=("GraphDebugDotPrint",),
      raises=errors.GraphRTError)
def _(t: CaseContext) -> Any:
    """A path in a directory that does not exist is refused (the error is recorded)."""
    g, _ = diamond(t)
    d = tempfile.mkdtemp()
    os.rmdir(d)
    # GraphRTError: the GPU's cudaErrorOperatingSystem (12.9, 13.0, 13.5) has no class of its own.
    t.call_under_test(g.debug_dot, os.path.join(d, "missing", "graph.dot"))


@case("graph.to_json.types_and_edges", kind="binding", cite=PYGRAPHRT + "to_json(): nodes with type and params, edges "
      "with edge data (from cudaGraphGetNodes / cudaGraphGetEdges)", apis=("GraphGetNodes", "GraphGetEdges"),
      expect=(["empty", "memset"], [("empty", "memset", 0, 0, 0)], 9))
def _(t: CaseContext) -> Any:
    """The JSON export lists the nodes, their parameters and the edge."""
    buf = t.malloc(N)
    g = t.graph()
    e = g.add_empty()
    e.memset(buf, 9, 32)
    doc = json.loads(g.to_json())
    types = {n["id"]: n["type"] for n in doc["nodes"]}
    edges = [(types[x["from"]], types[x["to"]], x["from_port"], x["to_port"], x["type"]) for x in doc["edges"]]
    memset = next(n for n in doc["nodes"] if n["type"] == "memset")
    return sorted(types.values()), edges, memset["params"]["value"]
