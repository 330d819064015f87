"""Conformance cases, area ``edges``: dependencies and edge data.

Adding and removing dependencies (``GraphAddDependencies`` / ``GraphRemoveDependencies``),
duplicates, missing edges, self edges, cycles, nodes of other graphs, the edge listing
(``graph.edges()`` with :class:`~pygraphrt.enums.EdgeData`), ``node.dependencies`` /
``dependents``, edges given when a node is made, and edge data (CUDA >= 12.3, capability
``edge_data``): programmatic and launch-completion edges between kernel nodes, the rules
for ports, types and node types, lossy queries without room for edge data, and
``NotSupported`` for non-default edge data where a runtime has none.

Conventions: see :mod:`.graph`.
"""

from __future__ import annotations

from typing import Any

from pygraphrt import errors
from pygraphrt.enums import PORT_LAUNCH_ORDER, PORT_PROGRAMMATIC, DependencyType, EdgeData, NodeType

from .._case import CaseContext, case
from .graph import NULL_ARG, edge_labels, labels, raw_count

N = 4096

_RT = "CUDA Runtime API 13.0, Graph Management"
ADD = f"{_RT}, cudaGraphAddDependencies: "
REMOVE = f"{_RT}, cudaGraphRemoveDependencies: "
GET_EDGES = f"{_RT}, cudaGraphGetEdges: "
NODE_DEPS = f"{_RT}, cudaGraphNodeGetDependencies: "
NODE_DEPENDENTS = f"{_RT}, cudaGraphNodeGetDependentNodes: "
ROOTS = f"{_RT}, cudaGraphGetRootNodes: "
INSTANTIATE = f"{_RT}, cudaGraphInstantiateWithFlags: "
INSTANTIATE_RESULT = "CUDA Runtime API 13.0, Data types, cudaGraphInstantiateResult: "
ADD_NODE = f"{_RT}, cudaGraphAddNode: "
UPDATE = f"{_RT}, cudaGraphExecUpdate: "
EDGE_DATA = "CUDA Runtime API 13.0, Data types, cudaGraphEdgeData: "
DEP_TYPE = "CUDA Runtime API 13.0, Data types, cudaGraphDependencyType: "
PORTS = "CUDA Runtime API 13.0, Data types, cudaGraphKernelNodePort: "
CAPTURE_INFO = "CUDA Runtime API 13.0, Stream Management, cudaStreamGetCaptureInfo: "
PG_GRAPHS = "CUDA Programming Guide, CUDA Graphs, Graph Structure: "
PYGRAPHRT = "pygraphrt edges API: "
PYCHECK = PYGRAPHRT + "checked before any runtime call, InvalidValue"

PROGRAMMATIC = EdgeData(PORT_PROGRAMMATIC, 0, DependencyType.PROGRAMMATIC)
EDGE_KERNELS = ("edge_data", "kernels")


# ---------------------------------------------------------------------------- helpers
def _zeroed(t: CaseContext, size: int = N) -> Any:
    buf = t.malloc(size)
    buf.copy_from(bytes(size))
    return buf


def _two_kernels(t: CaseContext, n: int = 64) -> tuple[Any, Any, Any, Any, Any]:
    """(graph, k1, k2, x, y): two independent fill_u32 kernel nodes writing x := 1 and y := 2."""
    fill = t.kernel("fill_u32")
    x, y = _zeroed(t, 4 * n), _zeroed(t, 4 * n)
    g = t.graph()
    k1 = g.add_kernel(fill, 1, n, [x, 1, n])
    k2 = g.add_kernel(fill, 1, n, [y, 2, n])
    return g, k1, k2, x, y


def _u32(buf: Any, n: int) -> list[int]:
    data = buf.to_bytes(4 * n)
    return [int.from_bytes(data[i:i + 4], "little") for i in range(0, 4 * n, 4)]


def _launch(t: CaseContext, g: Any) -> None:
    s = t.stream()
    t.instantiate(g).launch(s)
    s.synchronize()


# Documentation passages several cases quote (each case adds its own gloss after them).
DOC_GRAPH_DEPENDENCY_TYPE_ONLY_USED = ("CUDA Runtime API 13.5, Data types, cudaGraphDependencyType: \"It may "
                                       "only be used between kernel nodes, and must be used with either the "
                                       "cudaGraphKernelNodePortProgrammatic or "
                                       "cudaGraphKernelNodePortLaunchCompletion outgoing port\"")
DOC_GRAPH_GET_EDGES_EDGES_RETURNED = ("CUDA Runtime API 13.5, Graph Management, cudaGraphGetEdges: \"Edges are "
                                      "returned via corresponding indices in from, to and edgeData; that is, "
                                      "the node in to[i] has a dependency on the node in from[i] with data "
                                      "edgeData[i]. from and to may both be NULL, in which case this function "
                                      "only returns the number of edges in numEdges\"")
DOC_GRAPH_INSTANTIATE_WITH_FLAGS_GRAPH_VALIDATED = ("CUDA Runtime API 13.5, Graph Management, "
                                                    "cudaGraphInstantiateWithFlags: \"The graph is validated "
                                                    "for any structural constraints or intra-node constraints "
                                                    "which were not previously validated\"")
DOC_GRAPH_REMOVE_DEPENDENCIES_MISSING_EDGE = ("CUDA Runtime API 13.5, Graph Management, "
                                              "cudaGraphRemoveDependencies: \"Specifying an edge that does not "
                                              "exist in the graph, with data matching edgeData, results in an "
                                              "error\"")
DOC_GRAPH_REMOVE_DEPENDENCIES_MISSING_EDGE_NULLABLE_DATA = ("CUDA Runtime API 13.5, Graph Management, "
                                                            "cudaGraphRemoveDependencies: \"Specifying an edge "
                                                            "that does not exist in the graph, with data "
                                                            "matching edgeData, results in an error. edgeData "
                                                            "is nullable, which is equivalent to passing "
                                                            "default (zeroed) data for each edge\"")


# ============================================================================ add
@case("edges.add.one", cite=ADD + "elements in pFrom and pTo at corresponding indices define a dependency",
      apis=("GraphAddDependencies", "GraphGetEdges"), expect=([("a", "b")], [EdgeData()]))
def _(t: CaseContext) -> Any:
    """One added dependency is listed as one default edge."""
    g = t.graph()
    a, b = g.add_empty(), g.add_empty()
    g.add_dependencies([a], [b])
    edges = g.edges()
    return edge_labels({"a": a, "b": b}, edges), [e for _, _, e in edges]


@case("edges.add.several_in_one_call", cite=ADD + "the number of dependencies to be added is defined by "
      "numDependencies", apis=("GraphAddDependencies", "GraphGetEdges"),
      expect=([("a", "b"), ("a", "c"), ("b", "d")], [EdgeData()] * 3))
def _(t: CaseContext) -> Any:
    """Three dependencies added by one call are all listed, with default edge data."""
    g = t.graph()
    a, b, c, d = g.add_empty(), g.add_empty(), g.add_empty(), g.add_empty()
    g.add_dependencies([a, a, b], [b, c, d])
    edges = g.edges()
    return edge_labels({"a": a, "b": b, "c": c, "d": d}, edges), [e for _, _, e in edges]


@case("edges.add.fan_in",
      cite="CUDA Runtime API 13.5, Graph Management, cudaGraphAddDependencies: \"The number of dependencies "
           "to be added is defined by numDependencies ... Elements in pFrom and pTo at corresponding indices"
           " define a dependency\" -- one call may give a node any number of dependencies; CUDA Runtime API "
           "13.5, Graph Management, cudaGraphNodeGetDependencies: \"Returns a node's dependencies\" -- "
           "returns every dependency of node", apis=("GraphAddDependencies", "GraphNodeGetDependencies"),
      expect=sorted(f"r{i}" for i in range(16)))
def _(t: CaseContext) -> Any:
    """A node depending on sixteen nodes lists all sixteen."""
    g = t.graph()
    roots = [g.add_empty() for _ in range(16)]
    join = g.add_empty()
    g.add_dependencies(roots, [join] * 16)
    named = {f"r{i}": r for i, r in enumerate(roots)}
    named["join"] = join
    return labels(named, [n for n, _ in join.dependencies])


@case("edges.add.transitive_redundant",
      cite="Observed, cudaGraphAddDependencies: an edge a->c already implied by a->b->c is accepted; the graph "
           "then has the three edges (deviations.OBSERVATIONS); CUDA Runtime API 13.5, Graph Management, "
           "cudaGraphAddDependencies: \"Specifying an existing dependency will return an error\" -- only an "
           "existing dependency is refused; no documentation sentence states that an edge already implied "
           "through other nodes may be added, the case records that it is (three edges)", apis=("GraphAddDependencies",),
      expect=[("a", "b"), ("a", "c"), ("b", "c")])
def _(t: CaseContext) -> Any:
    """a->b, b->c and the redundant a->c are three edges."""
    g = t.graph()
    a = g.add_empty()
    b = a.empty()
    c = b.empty()
    g.add_dependencies([a], [c])
    return edge_labels({"a": a, "b": b, "c": c}, g.edges())


@case("edges.add.empty_lists", kind="binding", cite=ADD + "if numDependencies is 0, elements in pFrom and pTo "
      "will be ignored; " + PYGRAPHRT + "add_dependencies([], []) changes nothing (it need not call the runtime: "
      "edges.add.raw_zero_count asks the runtime)", apis=("GraphAddDependencies",), expect=0)
def _(t: CaseContext) -> Any:
    """Adding no dependencies changes nothing."""
    g = t.graph()
    g.add_empty()
    g.add_empty()
    g.add_dependencies([], [])
    return len(g.edges())


@case("edges.add.raw_zero_count", cite=ADD + "if numDependencies is 0, elements in pFrom and pTo "
      "will be ignored", apis=("GraphAddDependencies", "GraphGetEdges"), expect=0)
def _(t: CaseContext) -> Any:
    """The runtime accepts a call adding zero dependencies, and no edge appears (the runtime's count)."""
    g = t.graph()
    g.add_empty()
    t.backend.ops.add_dependencies(g.handle, [], [], None)
    return raw_count(t, "GraphGetEdges", g.handle)


@case("edges.add.node_builder", kind="binding", cite=ADD + "adds dependency edges; " + PYGRAPHRT
      + "node.add_dependent(other) adds node -> other", apis=("GraphAddDependencies", "GraphNodeGetDependentNodes"),
      expect=([(True, EdgeData())], [(True, EdgeData())]))
def _(t: CaseContext) -> Any:
    """node.add_dependent adds the edge from the node to the other."""
    g = t.graph()
    a, b = g.add_empty(), g.add_empty()
    a.add_dependent(b)
    return [(n is b, e) for n, e in a.dependents], [(n is a, e) for n, e in b.dependencies]


@case("edges.add.duplicate", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphAddDependencies: \"Specifying an existing "
                                  "dependency will return an error\" -- specifying an existing dependency will return an error "
                                  "(cudaErrorInvalidValue)", apis=("GraphAddDependencies",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Adding an edge that exists is refused."""
    g = t.graph()
    a = g.add_empty()
    b = a.empty()
    before = t.snapshot(graph=g)
    try:
        t.call_under_test(g.add_dependencies, [a], [b])
    finally:
        t.check_equal(t.snapshot(graph=g), before, "the graph after the refused duplicate")


@case("edges.add.duplicate_in_one_call", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphAddDependencies: \"Specifying an existing "
                                              "dependency will return an error\" -- specifying an existing dependency will return an error "
                                              "(cudaErrorInvalidValue)", apis=("GraphAddDependencies",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """The same edge twice in one call is refused."""
    # unsure: the runtime may add the first and refuse the second, or refuse the call up front.
    g = t.graph()
    a, b = g.add_empty(), g.add_empty()
    t.call_under_test(g.add_dependencies, [a, a], [b, b])


@case("edges.add.duplicate_leaves_graph", cite=ADD + "specifying an existing dependency will return an error",
      apis=("GraphAddDependencies", "GraphGetEdges"), expect=("InvalidValue", 1))
def _(t: CaseContext) -> Any:
    """A refused duplicate leaves the one edge there was (the runtime's count)."""
    g = t.graph()
    a = g.add_empty()
    b = a.empty()
    err = t.raises(errors.InvalidValue, g.add_dependencies, [a], [b])
    return type(err).__name__, raw_count(t, "GraphGetEdges", g.handle)


@case("edges.add.self_edge", cite=DOC_GRAPH_INSTANTIATE_WITH_FLAGS_GRAPH_VALIDATED + " -- the graph is validated "
                                  "for any structural constraints or intra-node constraints which were not "
                                  "previously validated; returns cudaSuccess, cudaErrorInvalidValue; CUDA "
                                  "Runtime API 13.5, Data types, cudaGraphInstantiateResult: \"Instantiation "
                                  "failed due to invalid structure, such as cycles\" -- "
                                  "cudaGraphInstantiateInvalidStructure: instantiation failed due to invalid "
                                  "structure, such as cycles; CUDA Runtime API 13.5, Graph Management, "
                                  "cudaGraphAddDependencies: \"cudaSuccess, cudaErrorInvalidValue\" -- returns "
                                  "cudaSuccess, cudaErrorInvalidValue",
      apis=("GraphAddDependencies",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A graph with an edge from a node to itself (a one-node cycle) never becomes executable: InvalidValue,
    from the edge's add or from instantiation (the documentation lets a constraint be validated at either)."""
    # The documentation does not say which call refuses a self edge, only that a cycle is invalid
    # structure, validated at instantiation if not before; CUDA 12.9, 13.0 and 13.5 (H100, driver
    # 580) refuse it at cudaGraphAddDependencies.  The note records which call it was.
    g = t.graph()
    a = g.add_empty()
    with t.under_test():
        try:
            g.add_dependencies([a], [a])
        except errors.InvalidValue:
            t.note("refused by GraphAddDependencies")
            raise
        t.note("accepted by GraphAddDependencies; instantiating")
        t.instantiate(g)


@case("edges.add.other_graph_node", kind="binding",
      cite=ADD + "each node in pFrom and pTo must belong to graph; " + PYCHECK,
      apis=("GraphAddDependencies",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """An edge to a node of another graph is refused by pygraphrt."""
    g1, g2 = t.graph(), t.graph()
    a = g1.add_empty()
    b = g2.add_empty()
    g1.add_dependencies([a], [b])


@case("edges.add.length_mismatch", kind="binding",
      cite=ADD + "elements in pFrom and pTo at corresponding indices define a "
      "dependency (both hold numDependencies nodes); " + PYCHECK, apis=("GraphAddDependencies",),
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Lists of different lengths are refused."""
    g = t.graph()
    a, b, c = g.add_empty(), g.add_empty(), g.add_empty()
    g.add_dependencies([a, b], [c])


@case("edges.add.not_a_node", kind="binding",
      cite=ADD + "pFrom - array of nodes that provide the dependencies; " + PYCHECK,
      apis=("GraphAddDependencies",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Something that is not a node is refused."""
    g = t.graph()
    a = g.add_empty()
    g.add_dependencies(["node"], [a])


@case("edges.add.destroyed_node", kind="binding", cite=f"{_RT}, cudaGraphDestroyNode: removes the node from the graph; "
      + PYGRAPHRT + "a destroyed node raises InvalidResourceHandle", apis=("GraphDestroyNode", "GraphAddDependencies"),
      raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """An edge to a destroyed node is refused."""
    g = t.graph()
    a, b = g.add_empty(), g.add_empty()
    b.destroy()
    g.add_dependencies([a], [b])


@case("edges.add.closed_graph", kind="binding",
      cite=f"{_RT}, cudaGraphDestroy: destroys the graph and its nodes; " + PYGRAPHRT
      + "nodes of a closed graph raise InvalidResourceHandle", apis=("GraphDestroy", "GraphAddDependencies"),
      raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """Edges cannot be added to a closed graph."""
    g = t.graph()
    a, b = g.add_empty(), g.add_empty()
    g.close()
    g.add_dependencies([a], [b])


@case("edges.add.null_graph_raw", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphAddDependencies: \"graph - Graph to which "
                                       "dependencies are added\" -- graph - graph to which dependencies are added; returns "
                                       "cudaErrorInvalidValue" + NULL_ARG, apis=("GraphAddDependencies",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """The runtime refuses to add edges to a NULL graph."""
    g = t.graph()
    a, b = g.add_empty(), g.add_empty()
    before = t.snapshot(graph=g)
    try:
        t.call_under_test(t.backend.ops.add_dependencies, t.NULL, [a.handle], [b.handle], None)
    finally:
        t.check_equal(t.snapshot(graph=g), before, "the nodes' graph after the refused add")


# ============================================================================ cycles and order
@case("edges.cycle.instantiate_refused", cite=DOC_GRAPH_INSTANTIATE_WITH_FLAGS_GRAPH_VALIDATED + " -- the graph is validated "
                                              "for any structural constraints or intra-node constraints which "
                                              "were not previously validated; returns cudaSuccess, "
                                              "cudaErrorInvalidValue; CUDA Runtime API 13.5, Data types, "
                                              "cudaGraphInstantiateResult: \"Instantiation failed due to invalid "
                                              "structure, such as cycles\" -- "
                                              "cudaGraphInstantiateInvalidStructure: instantiation failed due to "
                                              "invalid structure, such as cycles",
      apis=("GraphAddDependencies", "GraphInstantiateWithFlags"), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A two-node cycle does not instantiate: InvalidValue from instantiation, the graph left as it was."""
    # The closing edge is set-up: its add must succeed (it does on CUDA 12.9, 13.0 and 13.5; a runtime
    # that refused it there fails this case, since the refusal would not come from instantiation).
    g = t.graph()
    a = g.add_empty()
    b = a.empty()
    g.add_dependencies([b], [a])
    before = t.snapshot(graph=g)
    t.check_equal((before.nodes, before.edges), (2, 2), "the cycle's nodes and edges before instantiation")
    try:
        with t.under_test():
            t.instantiate(g)
    finally:
        t.check_equal(t.snapshot(graph=g), before, "the graph after the refused instantiation")


@case("edges.cycle.no_roots", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphGetRootNodes: \"Returns a list of graph's "
                                   "root nodes. pRootNodes may be NULL, in which case this function will return the number of "
                                   "root nodes in pNumRootNodes\" -- returns the root nodes (nodes without dependencies); a graph "
                                   "whose every node lies on a cycle has none", apis=("GraphAddDependencies", "GraphGetRootNodes"),
      expect=(1, 0))
def _(t: CaseContext) -> Any:
    """A graph that is one three-node cycle has no root node (the runtime's count before and after closing it)."""
    # The closing edge's add is accepted on CUDA 12.9, 13.0 and 13.5 (see edges.cycle.instantiate_refused).
    g = t.graph()
    a = g.add_empty()
    b = a.empty()
    c = b.empty()
    open_chain = raw_count(t, "GraphGetRootNodes", g.handle)
    g.add_dependencies([c], [a])
    return open_chain, raw_count(t, "GraphGetRootNodes", g.handle)


@case("edges.order.chain_enforced", cite=PG_GRAPHS + "an operation forms a node in a graph, and the dependencies "
      "between the operations are the edges; these dependencies constrain the execution sequence of the "
      "operations; " + ADD + "elements in pFrom and pTo at corresponding indices define a dependency",
      apis=("GraphAddDependencies", "GraphLaunch"), expect=(b"\x07" * 8, b"\x07" * 8, b"\x07" * 8, b"\x07" * 8))
def _(t: CaseContext) -> Any:
    """A value handed along a chain of copies ordered only by added edges reaches the end.

    set a := 7, then b <- a, c <- b, d <- c: d holds 7 only if every copy ran after the one before
    it.  The nodes are made in the reverse order, with no dependencies, so that creation order (or
    any order but the edges') leaves zeros in d; one launch, so nothing is left from an earlier one.
    """
    a, b, c, d = (_zeroed(t) for _ in range(4))
    g = t.graph()
    to_d = g.add_memcpy(d, c, N)
    to_c = g.add_memcpy(c, b, N)
    to_b = g.add_memcpy(b, a, N)
    set_a = g.add_memset(a, 7, N)
    g.add_dependencies([set_a, to_b, to_c], [to_b, to_c, to_d])
    s = t.stream()
    t.instantiate(g).launch(s)
    s.synchronize()
    return a.to_bytes(8), b.to_bytes(8), c.to_bytes(8), d.to_bytes(8)


# ============================================================================ remove
@case("edges.remove.one", cite=REMOVE + "removes dependency edges from a graph", apis=("GraphRemoveDependencies",
                                                                                      "GraphGetEdges",
                                                                                      "GraphGetRootNodes"),
      expect=((1, 1), (0, 2), ["a", "b"]))
def _(t: CaseContext) -> Any:
    """After removing its only incoming edge a node is a root (edge and root counts from the runtime)."""
    g = t.graph()
    a = g.add_empty()
    b = a.empty()
    h = g.handle
    before = raw_count(t, "GraphGetEdges", h), raw_count(t, "GraphGetRootNodes", h)
    g.remove_dependencies([a], [b])
    after = raw_count(t, "GraphGetEdges", h), raw_count(t, "GraphGetRootNodes", h)
    return before, after, labels({"a": a, "b": b}, g.root_nodes())


@case("edges.remove.one_of_several", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphRemoveDependencies: \"numDependencies - "
                                          "Number of dependencies to be removed\" -- the number of dependencies to be removed is defined "
                                          "by numDependencies", apis=("GraphRemoveDependencies", "GraphNodeGetDependencies"),
      expect=(["b"], [EdgeData()]))
def _(t: CaseContext) -> Any:
    """Removing one of two incoming edges leaves the other."""
    g = t.graph()
    a, b = g.add_empty(), g.add_empty()
    c = g.add_empty(dependencies=[a, b])
    g.remove_dependencies([a], [c])
    deps = c.dependencies
    return labels({"a": a, "b": b, "c": c}, [n for n, _ in deps]), [e for _, e in deps]


@case("edges.remove.node_builder", kind="binding", cite=REMOVE + "removes dependency edges; " + PYGRAPHRT
      + "node.remove_dependent(other) removes node -> other", apis=("GraphRemoveDependencies",), expect=([], []))
def _(t: CaseContext) -> Any:
    """node.remove_dependent removes the edge from the node to the other."""
    g = t.graph()
    a = g.add_empty()
    b = a.empty()
    a.remove_dependent(b)
    return a.dependents, b.dependencies


@case("edges.remove.then_add_again",
      cite="CUDA Runtime API 13.5, Graph Management, cudaGraphRemoveDependencies: \"Removes dependency edges "
           "from a graph\"; CUDA Runtime API 13.5, Graph Management, cudaGraphAddDependencies: \"Adds "
           "dependency edges to a graph\" ... \"Specifying an existing dependency will return an error\" -- "
           "once removed, the edge is not an existing dependency, so adding it is the call's plain case: the "
           "graph has the one edge again", apis=("GraphRemoveDependencies", "GraphAddDependencies"), expect=1)
def _(t: CaseContext) -> Any:
    """A removed edge can be added again."""
    g = t.graph()
    a = g.add_empty()
    b = a.empty()
    g.remove_dependencies([a], [b])
    g.add_dependencies([a], [b])
    return len(g.edges())


@case("edges.remove.missing", cite=DOC_GRAPH_REMOVE_DEPENDENCIES_MISSING_EDGE + " -- specifying a non-existing "
                                   "dependency will return an error (cudaErrorInvalidValue)", apis=("GraphRemoveDependencies",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Removing an edge that does not exist is refused."""
    g = t.graph()
    a, b = g.add_empty(), g.add_empty()
    before = t.snapshot(graph=g)
    try:
        t.call_under_test(g.remove_dependencies, [a], [b])
    finally:
        t.check_equal(t.snapshot(graph=g), before, "the graph after the refused remove")


@case("edges.remove.reverse_direction", cite=DOC_GRAPH_REMOVE_DEPENDENCIES_MISSING_EDGE + " -- specifying a non-existing "
                                             "dependency will return an error (edges are directed)", apis=("GraphRemoveDependencies",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Removing b -> a when only a -> b exists is refused."""
    g = t.graph()
    a = g.add_empty()
    b = a.empty()
    before = t.snapshot(graph=g)
    try:
        t.call_under_test(g.remove_dependencies, [b], [a])
    finally:
        t.check_equal(t.snapshot(graph=g), before, "the graph after the refused remove (a -> b stays)")


@case("edges.remove.twice", cite=DOC_GRAPH_REMOVE_DEPENDENCIES_MISSING_EDGE + " -- specifying a non-existing "
                                 "dependency will return an error",
      apis=("GraphRemoveDependencies",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Removing the same edge a second time is refused."""
    g = t.graph()
    a = g.add_empty()
    b = a.empty()
    g.remove_dependencies([a], [b])
    before = t.snapshot(graph=g)
    try:
        t.call_under_test(g.remove_dependencies, [a], [b])
    finally:
        t.check_equal(t.snapshot(graph=g), before, "the graph after the refused second remove")


@case("edges.remove.length_mismatch", kind="binding",
      cite=REMOVE + "elements in pFrom and pTo at corresponding indices "
      "define a dependency; " + PYCHECK, apis=("GraphRemoveDependencies",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Lists of different lengths are refused."""
    g = t.graph()
    a = g.add_empty()
    b = a.empty()
    g.remove_dependencies([a], [b, a])


@case("edges.remove.other_graph_node", kind="binding", cite=REMOVE + "each node in pFrom and pTo must belong to graph; "
      + PYCHECK, apis=("GraphRemoveDependencies",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Removing an edge named by a node of another graph is refused."""
    g1, g2 = t.graph(), t.graph()
    a = g1.add_empty()
    a.empty()
    g1.remove_dependencies([a], [g2.add_empty()])


# ============================================================================ listing
@case("edges.list.diamond_dependencies_dependents", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphNodeGetDependencies: \"Returns a node's "
                                                         "dependencies\" -- returns the dependencies of node; CUDA Runtime API 13.5, Graph Management, "
                                                         "cudaGraphNodeGetDependentNodes: \"Returns a node's dependent nodes\" -- returns the dependent "
                                                         "nodes of node", apis=("GraphNodeGetDependencies",
                                                                        "GraphNodeGetDependentNodes"),
      expect=(["b", "c"], ["b", "c"], [], []))
def _(t: CaseContext) -> Any:
    """In a diamond, the join depends on both branches and the fork has both as dependents."""
    g = t.graph()
    a = g.add_empty()
    b, c = a.empty(), a.empty()
    d = g.add_empty(dependencies=[b, c])
    named = {"a": a, "b": b, "c": c, "d": d}
    return (labels(named, [n for n, _ in d.dependencies]), labels(named, [n for n, _ in a.dependents]),
            labels(named, [n for n, _ in a.dependencies]), labels(named, [n for n, _ in d.dependents]))


@case("edges.list.default_edge_data",
      cite="CUDA Runtime API 13.5, Graph Management, cudaGraphGetEdges: \"edgeData - Optional location to "
           "return edge data\" -- edgeData: optional location to store edge data; CUDA Runtime API 13.5, "
           "Data types, cudaGraphEdgeData: \"all edges implicitly have annotations and default to a "
           "zero-initialized value if not specified. A zero-initialized struct indicates a standard full "
           "serialization of two nodes with memory visibility\" -- an edge made without edge data reads back"
           " all zero", apis=("GraphGetEdges",),
      expect=([EdgeData()] * 4, [True] * 4))
def _(t: CaseContext) -> Any:
    """Edges made without edge data read back with default edge data."""
    g = t.graph()
    a = g.add_empty()
    b, c = a.empty(), a.empty()
    g.add_empty(dependencies=[b, c])
    edges = g.edges()
    return [e for _, _, e in edges], [e.is_default for _, _, e in edges]


@case("edges.list.after_remove",
      cite="CUDA Runtime API 13.5, Graph Management, cudaGraphRemoveDependencies: \"Removes dependency edges"
           " from a graph\"; CUDA Runtime API 13.5, Graph Management, cudaGraphGetEdges: \"Returns a list of"
           " graph's dependency edges\" -- the list holds the edges left after the removal", apis=("GraphGetEdges", "GraphRemoveDependencies"),
      expect=[("a", "b"), ("a", "c"), ("b", "d")])
def _(t: CaseContext) -> Any:
    """After removing one edge of a diamond the other three are listed."""
    g = t.graph()
    a = g.add_empty()
    b, c = a.empty(), a.empty()
    d = g.add_empty(dependencies=[b, c])
    g.remove_dependencies([c], [d])
    return edge_labels({"a": a, "b": b, "c": c, "d": d}, g.edges())


@case("edges.list.consistent_views",
      cite="CUDA Runtime API 13.5, Graph Management, cudaGraphGetEdges: \"Returns a graph's dependency edges\" -- "
           "from[i] -> to[i] are the graph's edges; CUDA Runtime API 13.5, Graph Management, "
           "cudaGraphNodeGetDependencies: \"Returns a node's dependencies\"; CUDA Runtime API 13.5, Graph Management, "
           "cudaGraphNodeGetDependentNodes: \"Returns a node's dependent nodes\" -- the three give the same edges",
      apis=("GraphGetEdges", "GraphNodeGetDependencies",
                                                                          "GraphNodeGetDependentNodes"),
      expect=([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"), ("d", "e")],) * 3)
def _(t: CaseContext) -> Any:
    """The graph's edge list equals the union of every node's dependencies and of its dependents."""
    g = t.graph()
    a = g.add_empty()
    b, c = a.empty(), a.empty()
    d = g.add_empty(dependencies=[b, c])
    e = d.empty()
    named = {"a": a, "b": b, "c": c, "d": d, "e": e}
    by_deps = [(src, n, data) for n in g.nodes() for src, data in n.dependencies]
    by_dependents = [(n, dst, data) for n in g.nodes() for dst, data in n.dependents]
    return edge_labels(named, g.edges()), edge_labels(named, by_deps), edge_labels(named, by_dependents)


@case("edges.list.raw_count_query", cite=DOC_GRAPH_GET_EDGES_EDGES_RETURNED + " -- if from and to are both NULL, "
                                         "numEdges returns the number of edges", apis=("GraphGetEdges",), expect=2)
def _(t: CaseContext) -> Any:
    """The runtime counts the edges when given no arrays."""
    g = t.graph()
    a = g.add_empty()
    a.empty()
    a.empty()
    fn = t.backend.ops.fn("GraphGetEdges")
    n = t.ffi.new("size_t *")
    nargs = len(t.ffi.typeof(fn).args)
    args = (g.handle, t.NULL, t.NULL) + ((t.NULL,) if nargs == 5 else ()) + (n,)
    rc = fn(*args)
    if rc:
        raise t.backend.ops.error(rc, "GraphGetEdges")
    return int(n[0])


# ============================================================================ edges at node creation
@case("edges.creation.default_edge_data",
      cite="CUDA Runtime API 13.5, Graph Management, cudaGraphAddNode: \"dependencyData - Optional edge data"
           " for the dependencies. If NULL, the data is assumed to be default (zeroed) for all "
           "dependencies\"; CUDA Runtime API 13.5, Data types, cudaGraphEdgeData: \"A zero-initialized "
           "struct indicates a standard full serialization of two nodes with memory visibility\" -- explicit"
           " all-zero edge data is the default: an ordinary edge", apis=("GraphAddMemsetNode", "GraphNodeGetDependencies"),
      expect=[EdgeData()])
def _(t: CaseContext) -> Any:
    """A node made with explicit default edge data has an ordinary edge."""
    buf = _zeroed(t)
    g = t.graph()
    a = g.add_empty()
    m = g.add_memset(buf, 1, N, dependencies=[a], edges=[EdgeData()])
    return [e for _, e in m.dependencies]


@case("edges.creation.generic_default_edge_data", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphAddNode: \"dependencyData - Optional edge "
                                                       "data for the dependencies\" -- creates a node with dependencies and, where given, their edge "
                                                       "data", apis=("GraphAddNode", "GraphNodeGetDependencies", "GraphNodeGetType"),
      requires=("generic_add_node",), expect=(NodeType.EMPTY, [("a", EdgeData())]))
def _(t: CaseContext) -> Any:
    """The generic add-node form takes default edge data for its dependencies (type and edge from the runtime)."""
    g = t.graph()
    a = g.add_empty()
    n = g.add_node(NodeType.EMPTY, dependencies=[a], edges=[EdgeData()])
    return t.runtime_type(n), [("a" if d is a else "?", e) for d, e in n.dependencies]


@case("edges.creation.length_mismatch", kind="binding", cite=ADD_NODE + "dependencyData has numDependencies entries; "
      + PYCHECK, apis=("GraphAddEmptyNode",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Two edge data for one dependency are refused."""
    g = t.graph()
    a = g.add_empty()
    g.add_empty(dependencies=[a], edges=[EdgeData(), EdgeData()])


@case("edges.creation.not_edge_data", kind="binding", cite=ADD_NODE + "dependencyData entries are cudaGraphEdgeData; "
      + PYCHECK, apis=("GraphAddEmptyNode",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """An edge-data entry that is not an EdgeData is refused."""
    g = t.graph()
    a = g.add_empty()
    g.add_empty(dependencies=[a], edges=[(1, 0, 1)])


@case("edges.creation.refusal_adds_nothing", kind="binding", cite=ADD_NODE + "on failure no node is added; " + PYCHECK,
      apis=("GraphAddEmptyNode", "GraphGetNodes"), expect=1)
def _(t: CaseContext) -> Any:
    """A node refused for its edge data leaves the graph as it was."""
    g = t.graph()
    a = g.add_empty()
    t.raises(errors.InvalidValue, g.add_empty, dependencies=[a], edges=[])
    return len(g)


# ============================================================================ edge data
@case("edges.data.programmatic_between_kernels", cite=DOC_GRAPH_DEPENDENCY_TYPE_ONLY_USED + " -- "
                                                      "cudaGraphDependencyTypeProgrammatic may only be used between "
                                                      "kernel nodes, with the cudaGraphKernelNodePortProgrammatic or "
                                                      "LaunchCompletion port",
      apis=("GraphAddDependencies", "GraphGetEdges", "GraphNodeGetDependencies", "GraphNodeGetDependentNodes"),
      requires=EDGE_KERNELS,
      expect=([("k1", "k2", PROGRAMMATIC)], [("k1", PROGRAMMATIC)], [("k2", PROGRAMMATIC)]))
def _(t: CaseContext) -> Any:
    """A programmatic edge between kernel nodes reads back from the graph and from both nodes."""
    g, k1, k2, _x, _y = _two_kernels(t)
    g.add_dependencies([k1], [k2], [PROGRAMMATIC])
    name = {int(k1): "k1", int(k2): "k2"}
    return ([(name.get(int(a), "?"), name.get(int(b), "?"), e) for a, b, e in g.edges()],
            [(name.get(int(n), "?"), e) for n, e in k2.dependencies],
            [(name.get(int(n), "?"), e) for n, e in k1.dependents])


@case("edges.data.programmatic_launches", cite="CUDA Runtime API 13.5, Data types, cudaGraphDependencyType: \"This dependency type allows the "
                                               "downstream node to use cudaGridDependencySynchronize()\" -- a programmatic dependency lets "
                                               "the downstream kernel launch early (cudaGridDependencySynchronize waits); both kernels run", apis=("GraphAddDependencies",
                                                                                   "GraphGetEdges", "GraphLaunch"),
      requires=EDGE_KERNELS, expect=([("k1", "k2")], [PROGRAMMATIC], [1] * 64, [2] * 64))
def _(t: CaseContext) -> Any:
    """A graph of two kernels joined by a programmatic edge (read back from the runtime) runs both."""
    g, k1, k2, x, y = _two_kernels(t)
    g.add_dependencies([k1], [k2], [PROGRAMMATIC])
    edges = g.edges()
    _launch(t, g)
    return edge_labels({"k1": k1, "k2": k2}, edges), [e for _, _, e in edges], _u32(x, 64), _u32(y, 64)


@case("edges.data.launch_completion_programmatic", cite="CUDA Runtime API 13.5, Data types, cudaGraphKernelNodePort: \"This port activates when all "
                                                        "blocks of the kernel have begun execution\" -- cudaGraphKernelNodePortLaunchCompletion: "
                                                        "activates when all blocks of the kernel have begun execution; usable with programmatic edges",
      apis=("GraphAddDependencies", "GraphGetEdges", "GraphLaunch"), requires=EDGE_KERNELS,
      expect=([("k1", "k2")], [EdgeData(PORT_LAUNCH_ORDER, 0, DependencyType.PROGRAMMATIC)], [1] * 64, [2] * 64))
def _(t: CaseContext) -> Any:
    """A programmatic edge from the launch-completion port is accepted, read back and runs."""
    g, k1, k2, x, y = _two_kernels(t)
    edge = EdgeData(PORT_LAUNCH_ORDER, 0, DependencyType.PROGRAMMATIC)
    g.add_dependencies([k1], [k2], [edge])
    edges = g.edges()
    _launch(t, g)
    return edge_labels({"k1": k1, "k2": k2}, edges), [e for _, _, e in edges], _u32(x, 64), _u32(y, 64)


@case("edges.data.launch_completion_default_type", cite="CUDA Runtime API 13.5, Data types, cudaGraphKernelNodePort: \"This port activates when all "
                                                        "blocks of the kernel have begun execution\" -- cudaGraphKernelNodePortLaunchCompletion: "
                                                        "activates when all blocks of the kernel have begun execution (an ordinary dependency on "
                                                        "launch completion)", apis=("GraphAddDependencies", "GraphGetEdges"), requires=EDGE_KERNELS,
      expect=([("k1", "k2")], [EdgeData(PORT_LAUNCH_ORDER, 0, DependencyType.DEFAULT)]))
def _(t: CaseContext) -> Any:
    """A default-type edge from the launch-completion port is accepted and read back."""
    # unsure: the documentation pairs this port with programmatic edges; a default type may be refused.
    g, k1, k2, _x, _y = _two_kernels(t)
    edge = EdgeData(PORT_LAUNCH_ORDER, 0, DependencyType.DEFAULT)
    g.add_dependencies([k1], [k2], [edge])
    edges = g.edges()
    return edge_labels({"k1": k1, "k2": k2}, edges), [e for _, _, e in edges]


@case("edges.data.at_creation",
      cite="CUDA Runtime API 13.5, Graph Management, cudaGraphAddNode: \"dependencyData - Optional edge data"
           " for the dependencies\" -- the edge data of each dependency is given at creation; the node's "
           "dependency then carries it",
      apis=("GraphAddKernelNode", "GraphAddDependencies", "GraphNodeGetDependencies"), requires=EDGE_KERNELS,
      expect=[PROGRAMMATIC])
def _(t: CaseContext) -> Any:
    """A kernel node made with a programmatic edge to its dependency has that edge."""
    fill = t.kernel("fill_u32")
    x, y = _zeroed(t, 256), _zeroed(t, 256)
    g = t.graph()
    k1 = g.add_kernel(fill, 1, 64, [x, 1, 64])
    k2 = g.add_kernel(fill, 1, 64, [y, 2, 64], dependencies=[k1], edges=[PROGRAMMATIC])
    return [e for _, e in k2.dependencies]


@case("edges.data.builder_edge",
      cite="CUDA Runtime API 13.5, Graph Management, cudaGraphAddKernelNode: \"Creates a new kernel "
           "execution node and adds it to graph with numDependencies dependencies specified via "
           "pDependencies and arguments specified in pNodeParams\"; CUDA Runtime API 13.5, Graph Management,"
           " cudaGraphAddDependencies: \"edgeData - Optional array of edge data\" -- pygraphrt's "
           "node.kernel(..., edge=) adds a node depending on this one over that edge; the edge reads back "
           "with that data", apis=("GraphAddKernelNode", "GraphAddDependencies"),
      requires=EDGE_KERNELS, expect=[PROGRAMMATIC])
def _(t: CaseContext) -> Any:
    """The builder form takes the edge data of its one dependency."""
    fill = t.kernel("fill_u32")
    x, y = _zeroed(t, 256), _zeroed(t, 256)
    g = t.graph()
    k1 = g.add_kernel(fill, 1, 64, [x, 1, 64])
    k2 = k1.kernel(fill, 1, 64, [y, 2, 64], edge=PROGRAMMATIC)
    return [e for n, e in k1.dependents if n is k2]


@case("edges.data.remove_matching", cite=DOC_GRAPH_REMOVE_DEPENDENCIES_MISSING_EDGE_NULLABLE_DATA + " -- specifying an edge that "
                                         "does not exist in the graph, with data matching edgeData, results in "
                                         "an error (matching data removes it)", apis=("GraphRemoveDependencies",),
      requires=EDGE_KERNELS, expect=[])
def _(t: CaseContext) -> Any:
    """A programmatic edge is removed by naming it with its edge data."""
    g, k1, k2, _x, _y = _two_kernels(t)
    g.add_dependencies([k1], [k2], [PROGRAMMATIC])
    g.remove_dependencies([k1], [k2], [PROGRAMMATIC])
    return g.edges()


@case("edges.data.remove_with_other_data", cite=DOC_GRAPH_REMOVE_DEPENDENCIES_MISSING_EDGE_NULLABLE_DATA + " -- specifying an edge that "
                                                "does not exist in the graph, with data matching edgeData, "
                                                "results in an error; a NULL edgeData means default data",
      apis=("GraphRemoveDependencies",), requires=EDGE_KERNELS, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A programmatic edge cannot be removed as a default edge."""
    g, k1, k2, _x, _y = _two_kernels(t)
    g.add_dependencies([k1], [k2], [PROGRAMMATIC])
    t.call_under_test(g.remove_dependencies, [k1], [k2], [EdgeData()])
    # what the runtime did instead of refusing (a deviation, if it did not refuse): the edges left
    return raw_count(t, "GraphGetEdges", g.handle)


@case("edges.data.programmatic_to_memset", cite=DOC_GRAPH_DEPENDENCY_TYPE_ONLY_USED + " -- "
                                                "cudaGraphDependencyTypeProgrammatic may only be used between "
                                                "kernel nodes; returns cudaErrorInvalidValue", apis=("GraphAddDependencies",),
      requires=EDGE_KERNELS, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A programmatic edge from a kernel node to a memset node is refused."""
    g, k1, _k2, _x, _y = _two_kernels(t)
    m = g.add_memset(_zeroed(t), 1, N)
    before = t.snapshot(graph=g)
    try:
        t.call_under_test(g.add_dependencies, [k1], [m], [PROGRAMMATIC])
    finally:
        t.check_equal(t.snapshot(graph=g), before, "the graph after the refused edge")


@case("edges.data.programmatic_from_memset",
      cite="CUDA Runtime API 13.5, Data types, cudaGraphEdgeData: \"Only kernel nodes define non-zero "
           "ports\" -- from_port: non-zero outgoing ports are defined for kernel nodes only; CUDA Runtime "
           "API 13.5, Data types, cudaGraphDependencyType: \"It may only be used between kernel nodes\" -- a"
           " programmatic edge from a memset node is not between kernel nodes", apis=("GraphAddDependencies",),
      requires=EDGE_KERNELS, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A programmatic edge from a memset node to a kernel node is refused."""
    g, _k1, k2, _x, _y = _two_kernels(t)
    m = g.add_memset(_zeroed(t), 1, N)
    before = t.snapshot(graph=g)
    try:
        t.call_under_test(g.add_dependencies, [m], [k2], [PROGRAMMATIC])
    finally:
        t.check_equal(t.snapshot(graph=g), before, "the graph after the refused edge")


@case("edges.data.programmatic_between_empty", cite=DOC_GRAPH_DEPENDENCY_TYPE_ONLY_USED + " -- "
                                                    "cudaGraphDependencyTypeProgrammatic may only be used between "
                                                    "kernel nodes; returns cudaErrorInvalidValue", apis=("GraphAddDependencies",),
      requires=("edge_data",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A programmatic edge between empty nodes is refused."""
    g = t.graph()
    a, b = g.add_empty(), g.add_empty()
    before = t.snapshot(graph=g)
    try:
        t.call_under_test(g.add_dependencies, [a], [b], [PROGRAMMATIC])
    finally:
        t.check_equal(t.snapshot(graph=g), before, "the graph after the refused edge")


@case("edges.data.generic_creation_on_empty", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphAddNode: \"dependencyData - Optional edge "
                                                   "data for the dependencies\" -- dependencyData is checked like cudaGraphAddDependencies' "
                                                   "(programmatic edges join kernel nodes); returns cudaErrorInvalidValue",
      apis=("GraphAddNode",), requires=("edge_data", "generic_add_node"), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """The generic add-node form refuses a programmatic edge to a new empty node."""
    g = t.graph()
    a = g.add_empty()
    before = t.snapshot(graph=g)
    try:
        t.call_under_test(g.add_node, NodeType.EMPTY, dependencies=[a], edges=[PROGRAMMATIC])
    finally:
        t.check_equal(t.snapshot(graph=g), before, "the graph after the refused add")


@case("edges.data.programmatic_port_default_type", cite="CUDA Runtime API 13.5, Data types, cudaGraphKernelNodePort: \"It must be used with edge type "
                                                        "cudaGraphDependencyTypeProgrammatic\" -- cudaGraphKernelNodePortProgrammatic must be used "
                                                        "with edge type cudaGraphDependencyTypeProgrammatic; returns cudaErrorInvalidValue",
      apis=("GraphAddDependencies",), requires=EDGE_KERNELS, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """The programmatic port with a default-type edge is refused."""
    g, k1, k2, _x, _y = _two_kernels(t)
    before = t.snapshot(graph=g)
    try:
        t.call_under_test(g.add_dependencies, [k1], [k2], [EdgeData(PORT_PROGRAMMATIC, 0, DependencyType.DEFAULT)])
    finally:
        t.check_equal(t.snapshot(graph=g), before, "the graph after the refused edge")


@case("edges.data.programmatic_default_port", cite=DOC_GRAPH_DEPENDENCY_TYPE_ONLY_USED + " -- "
                                                   "cudaGraphDependencyTypeProgrammatic must be used with the "
                                                   "cudaGraphKernelNodePortProgrammatic or "
                                                   "cudaGraphKernelNodePortLaunchCompletion outgoing port; returns "
                                                   "cudaErrorInvalidValue", apis=("GraphAddDependencies",), requires=EDGE_KERNELS,
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A programmatic edge from the default port is refused."""
    g, k1, k2, _x, _y = _two_kernels(t)
    before = t.snapshot(graph=g)
    try:
        t.call_under_test(g.add_dependencies, [k1], [k2], [EdgeData(0, 0, DependencyType.PROGRAMMATIC)])
    finally:
        t.check_equal(t.snapshot(graph=g), before, "the graph after the refused edge")


@case("edges.data.to_port_nonzero", cite="CUDA Runtime API 13.5, Data types, cudaGraphEdgeData: \"Currently no node types define "
                                         "non-zero ports\" -- to_port: currently no node types define non-zero ports; accordingly, this "
                                         "field must be set to zero", apis=("GraphAddDependencies",), requires=EDGE_KERNELS,
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """An edge into a non-zero port is refused."""
    g, k1, k2, _x, _y = _two_kernels(t)
    before = t.snapshot(graph=g)
    try:
        t.call_under_test(g.add_dependencies, [k1], [k2], [EdgeData(PORT_PROGRAMMATIC, 1, DependencyType.PROGRAMMATIC)])
    finally:
        t.check_equal(t.snapshot(graph=g), before, "the graph after the refused edge")


@case("edges.data.unknown_type", cite="CUDA Runtime API 13.5, Data types, cudaGraphEdgeData: \"This should be populated with a value "
                                      "from cudaGraphDependencyType\" -- type is a cudaGraphDependencyType (Default = 0, "
                                      "Programmatic = 1); returns cudaErrorInvalidValue", apis=("GraphAddDependencies",), requires=EDGE_KERNELS,
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """An edge of an unknown dependency type is refused."""
    g, k1, k2, _x, _y = _two_kernels(t)
    before = t.snapshot(graph=g)
    try:
        t.call_under_test(g.add_dependencies, [k1], [k2], [EdgeData(PORT_PROGRAMMATIC, 0, 7)])  # type: ignore[arg-type]
    finally:
        t.check_equal(t.snapshot(graph=g), before, "the graph after the refused edge")


@case("edges.data.unknown_from_port", cite="CUDA Runtime API 13.5, Data types, cudaGraphKernelNodePort: \"A kernel node can use the "
                                           "following output port types: cudaGraphKernelNodePortDefault, "
                                           "cudaGraphKernelNodePortProgrammatic, or cudaGraphKernelNodePortLaunchCompletion\" -- the "
                                           "kernel node ports are Default (0), Programmatic (1) and LaunchCompletion (2); returns "
                                           "cudaErrorInvalidValue", apis=("GraphAddDependencies",), requires=EDGE_KERNELS,
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """An edge from an undefined kernel port is refused."""
    g, k1, k2, _x, _y = _two_kernels(t)
    before = t.snapshot(graph=g)
    try:
        t.call_under_test(g.add_dependencies, [k1], [k2], [EdgeData(9, 0, DependencyType.PROGRAMMATIC)])
    finally:
        t.check_equal(t.snapshot(graph=g), before, "the graph after the refused edge")


@case("edges.data.refusal_adds_nothing",
      cite="Observed, cudaGraphAddDependencies: a refused programmatic edge (cudaErrorInvalidValue) leaves no "
           "edge in the graph (cudaGraphGetEdges counts 0) (deviations.OBSERVATIONS); CUDA Runtime API 13.5, "
           "Graph Management, cudaGraphAddDependencies: \"Specifying an existing dependency will return an "
           "error\" -- the call returns an error; no documentation sentence states that a refused call adds no "
           "edge, the case records that it adds none", apis=("GraphAddDependencies",
                                                                                             "GraphGetEdges"),
      requires=("edge_data",), expect=("InvalidValue", 0))
def _(t: CaseContext) -> Any:
    """A refused programmatic edge leaves no edge behind (the runtime's count)."""
    g = t.graph()
    a, b = g.add_empty(), g.add_empty()
    err = t.raises(errors.InvalidValue, g.add_dependencies, [a], [b], [PROGRAMMATIC])
    return type(err).__name__, raw_count(t, "GraphGetEdges", g.handle)


@case("edges.data.lossy_edge_query", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphGetEdges: \"Attempting a losst query via "
                                          "NULL edgeData will result in cudaErrorLossyQuery\" -- if edgeData is NULL and the graph has "
                                          "edges with non-default data, returns cudaErrorLossyQuery (the arrays are still filled)", apis=("GraphGetEdges",),
      requires=EDGE_KERNELS, raises=errors.LossyQuery)
def _(t: CaseContext) -> Any:
    """Listing the edges without room for edge data of a graph with a programmatic edge is lossy."""
    # unsure: on CUDA 12.x the call is the pre-12.3 form (no edgeData argument); seen lossy only on 13.0.
    g, k1, k2, _x, _y = _two_kernels(t)
    g.add_dependencies([k1], [k2], [PROGRAMMATIC])
    fn = t.backend.ops.fn("GraphGetEdges")
    nargs = len(t.ffi.typeof(fn).args)
    prefix = t.backend.ops.prefix
    n = t.ffi.new("size_t *", 1)
    frm, to = t.ffi.new(f"{prefix}GraphNode_t[1]"), t.ffi.new(f"{prefix}GraphNode_t[1]")
    args = (g.handle, frm, to) + ((t.NULL,) if nargs == 5 else ()) + (n,)
    with t.under_test():
        rc = fn(*args)
        if rc:
            raise t.backend.ops.error(rc, f"{prefix}GraphGetEdges")


@case("edges.data.lossy_dependencies_query", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphNodeGetDependencies: \"Note that if an edge "
                                                  "has non-zero (non-default) edge data and edgeData is NULL, this API will return "
                                                  "cudaErrorLossyQuery\" -- if edgeData is NULL and the node has dependencies with non-default "
                                                  "data, returns cudaErrorLossyQuery", apis=("GraphNodeGetDependencies",),
      requires=EDGE_KERNELS, raises=errors.LossyQuery)
def _(t: CaseContext) -> Any:
    """Listing a node's dependencies without room for edge data, over a programmatic edge, is lossy."""
    # unsure: on CUDA 12.x the call is the pre-12.3 form (no edgeData argument).
    g, k1, k2, _x, _y = _two_kernels(t)
    g.add_dependencies([k1], [k2], [PROGRAMMATIC])
    fn = t.backend.ops.fn("GraphNodeGetDependencies")
    nargs = len(t.ffi.typeof(fn).args)
    prefix = t.backend.ops.prefix
    n = t.ffi.new("size_t *", 1)
    deps = t.ffi.new(f"{prefix}GraphNode_t[1]")
    args = (k2.handle, deps) + ((t.NULL,) if nargs == 4 else ()) + (n,)
    with t.under_test():
        rc = fn(*args)
        if rc:
            raise t.backend.ops.error(rc, f"{prefix}GraphNodeGetDependencies")


@case("edges.data.count_query_not_lossy", cite=DOC_GRAPH_GET_EDGES_EDGES_RETURNED + " -- with from, to and "
                                               "edgeData NULL only the number of edges is returned (nothing is "
                                               "lost)", apis=("GraphGetEdges",), requires=EDGE_KERNELS, expect=1)
def _(t: CaseContext) -> Any:
    """Counting the edges of a graph with a programmatic edge is not lossy."""
    g, k1, k2, _x, _y = _two_kernels(t)
    g.add_dependencies([k1], [k2], [PROGRAMMATIC])
    fn = t.backend.ops.fn("GraphGetEdges")
    nargs = len(t.ffi.typeof(fn).args)
    n = t.ffi.new("size_t *")
    rc = fn(*((g.handle, t.NULL, t.NULL) + ((t.NULL,) if nargs == 5 else ()) + (n,)))
    if rc:
        raise t.backend.ops.error(rc, "GraphGetEdges")
    return int(n[0])


@case("edges.data.clone_keeps", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphClone: \"All parameters are copied into the "
                                     "cloned graph\" -- the clone has the same nodes and edges (with their edge data)", apis=("GraphClone", "GraphGetEdges"), requires=EDGE_KERNELS, expect=[PROGRAMMATIC])
def _(t: CaseContext) -> Any:
    """A clone keeps a programmatic edge's data."""
    g, k1, k2, _x, _y = _two_kernels(t)
    g.add_dependencies([k1], [k2], [PROGRAMMATIC])
    c = t.track(g.clone())
    return [e for _, _, e in c.edges()]


@case("edges.data.update_edge_data_changed", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphExecUpdate: \"The dependencies are paired "
                                                  "based on edge order and a dependency does not match when the nodes are already paired based "
                                                  "on other edges examined in the graph\" -- cudaGraphExecUpdateErrorTopologyChanged when a node "
                                                  "has a dependency that does not match the paired node's (edge data is part of the dependency)",
      apis=("GraphExecUpdate",), requires=EDGE_KERNELS, raises=errors.GraphExecUpdateError)
def _(t: CaseContext) -> Any:
    """Updating a default edge into a programmatic edge is refused as a topology change."""
    # unsure: whether edge data counts as topology (TOPOLOGY_CHANGED expected; the result is in the note).
    g1, a1, b1, _x, _y = _two_kernels(t)
    g1.add_dependencies([a1], [b1])
    g2, a2, b2, _x2, _y2 = _two_kernels(t)
    g2.add_dependencies([a2], [b2], [PROGRAMMATIC])
    exe = t.instantiate(g1)
    try:
        t.call_under_test(exe.update, g2)
    except errors.GraphExecUpdateError as e:
        t.note(f"result {e.result}, error node {e.error_node!r}")
        raise


@case("edges.data.not_supported_without_edge_data", kind="binding",
      cite=PYGRAPHRT + "where a runtime has no edge data (HIP, "
      "CUDA < 12.3) default edges work and non-default ones raise NotSupported before any call",
      apis=("GraphAddDependencies",), requires=("hip",), raises=errors.NotSupported)
def _(t: CaseContext) -> Any:
    """On a runtime without edge data a programmatic edge raises NotSupported."""
    g = t.graph()
    a, b = g.add_empty(), g.add_empty()
    g.add_dependencies([a], [b], [PROGRAMMATIC])


@case("edges.data.default_works_without_edge_data", kind="binding",
      cite=PYGRAPHRT + "where a runtime has no edge data, "
      "default edge data is accepted (an ordinary edge)", apis=("GraphAddDependencies", "GraphGetEdges"),
      requires=("hip",), expect=1)
def _(t: CaseContext) -> Any:
    """On a runtime without edge data, explicit default edge data makes an ordinary edge."""
    g = t.graph()
    a, b = g.add_empty(), g.add_empty()
    g.add_dependencies([a], [b], [EdgeData()])
    return len(g.edges())


@case("edges.data.creation_not_supported_without_edge_data", kind="binding",
      cite=PYGRAPHRT + "non-default edge data at node "
      "creation raises NotSupported where the runtime has no edge data", apis=("GraphAddEmptyNode",),
      requires=("hip",), raises=errors.NotSupported)
def _(t: CaseContext) -> Any:
    """On a runtime without edge data, a node made with a programmatic edge raises NotSupported."""
    g = t.graph()
    a = g.add_empty()
    g.add_empty(dependencies=[a], edges=[PROGRAMMATIC])


# ============================================================================ capture
@case("edges.capture.info_default_edge_data", cite="CUDA Runtime API 13.5, Stream Management, cudaStreamGetCaptureInfo: \"If dependencies_out is "
                                                   "non-NULL and edgeData_out is NULL, but there is non-zero edge data for one or more of the "
                                                   "current stream dependencies, the call will return cudaErrorLossyQuery\" -- edgeData_out: the "
                                                   "edge data of the capture's current dependencies (default for ordinary stream work)", apis=("StreamGetCaptureInfo",),
      expect=(1, EdgeData()))
def _(t: CaseContext) -> Any:
    """During a capture, the dependency left by a memset carries default edge data."""
    buf = _zeroed(t)
    s = t.stream()
    with s.capture() as cap:
        s.memset(buf, 1, N)
        deps = cap.info().dependencies
    t.track(cap.graph)
    return len(deps), deps[0][1] if deps else None


@case("edges.capture.chain_edges", cite="CUDA Runtime API 13.5, Stream Management, cudaStreamGetCaptureInfo: \"The next node to be "
                                        "captured in the stream will depend on this set of nodes\" -- work captured in stream order "
                                        "becomes a chain of dependencies with default edge data", apis=("StreamBeginCapture", "StreamEndCapture", "GraphGetEdges"),
      expect=(3, 2, True))
def _(t: CaseContext) -> Any:
    """Three operations captured on one stream form a chain of two default edges."""
    a, b = _zeroed(t), _zeroed(t)
    s = t.stream()
    with s.capture() as cap:
        s.memset(a, 1, N)
        s.memcpy(b, a, N)
        s.memset(a, 2, N)
    g = t.track(cap.graph)
    edges = g.edges()
    return len(g), len(edges), all(e == EdgeData() for _, _, e in edges)
