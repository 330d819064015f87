"""Conformance cases, area ``graph``: every node type's add / read back / set, and node destroy.

Empty, memset (element sizes, 2-D), memcpy (1-D, 2-D), host, event record / wait and
graph-memory alloc / free nodes through their own APIs, the generic ``add_node``
form (``GraphAddNode``) and ``set_params`` (``GraphNodeSetParams``), and removing
nodes.  Kernel nodes are in the ``kernels`` area, edge data in ``edges``, graph-memory
rules beyond the basics in ``memory``.  Conventions and helpers: see :mod:`.graph`.
"""

from __future__ import annotations

from typing import Any

from pygraphrt import errors
from pygraphrt.enums import EdgeData, NodeType

from .._case import CaseContext, case
from .graph import NULL_ARG, N, counts, edge_labels, labels, launch, raw_count, raw_list, shape, typed

_RT = "CUDA Runtime API 13.0, Graph Management"
EMPTY = f"{_RT}, cudaGraphAddEmptyNode: "
DEPS_RULE = "pDependencies may not have any duplicate entries"
MEMSET = f"{_RT}, cudaGraphAddMemsetNode: "
MEMSET_GET = f"{_RT}, cudaGraphMemsetNodeGetParams: "
MEMSET_DOC = f"{_RT}, cudaGraphAddMemsetNode / cudaMemset2D: "
MEMCPY = f"{_RT}, cudaGraphAddMemcpyNode: "
MEMCPY_1D = f"{_RT}, cudaGraphAddMemcpyNode1D: "
MEMCPY_GET = f"{_RT}, cudaGraphMemcpyNodeGetParams: "
MEMCPY_SET_1D = f"{_RT}, cudaGraphMemcpyNodeSetParams1D: "
HOST = f"{_RT}, cudaGraphAddHostNode: "
HOST_GET = f"{_RT}, cudaGraphHostNodeGetParams: "
REC = f"{_RT}, cudaGraphAddEventRecordNode: "
REC_GET = f"{_RT}, cudaGraphEventRecordNodeGetEvent: "
REC_SET = f"{_RT}, cudaGraphEventRecordNodeSetEvent: "
WAIT = f"{_RT}, cudaGraphAddEventWaitNode: "
WAIT_GET = f"{_RT}, cudaGraphEventWaitNodeGetEvent: "
WAIT_SET = f"{_RT}, cudaGraphEventWaitNodeSetEvent: "
ALLOC = f"{_RT}, cudaGraphAddMemAllocNode: "
ALLOC_GET = f"{_RT}, cudaGraphMemAllocNodeGetParams: "
FREE = f"{_RT}, cudaGraphAddMemFreeNode: "
FREE_GET = f"{_RT}, cudaGraphMemFreeNodeGetParams: "
ADD_NODE = f"{_RT}, cudaGraphAddNode: "
SET_PARAMS = f"{_RT}, cudaGraphNodeSetParams: "
DESTROY_NODE = f"{_RT}, cudaGraphDestroyNode: "
DRV_DESTROY_NODE = "CUDA Driver API 13.0, Graph Management, cuGraphDestroyNode: "
PG_MEMNODES = "CUDA Programming Guide, CUDA Graphs, Graph Memory Nodes: "
PYGRAPHRT = "pygraphrt graph API: "
PYCHECK = PYGRAPHRT + "checked before any runtime call, InvalidValue"


def _alloc_node(t: CaseContext, g: Any, size: int) -> tuple[Any, int]:
    """An allocation node added through the raw ``GraphAddMemAllocNode``, and the address that
    call returned in ``nodeParams.dptr`` -- kept here, where ``add_mem_alloc`` forgets it, so that
    what ``GraphMemAllocNodeGetParams`` reports later is compared with the runtime's first answer."""
    from pygraphrt.graph import _params
    from pygraphrt.graph._node import MemAllocNode

    b = t.backend
    p = t.ffi.new(f"{b.ops.mem_alloc_params_type} *")
    _params.alloc_fields(b, p, size, None)
    out = t.new("GraphNode_t *")
    t.call("GraphAddMemAllocNode", out, g.handle, t.NULL, 0, p)
    return g._wrap(out[0], MemAllocNode), int(t.ffi.cast("uintptr_t", p.dptr))


def _zeroed(t: CaseContext, size: int = N) -> Any:
    buf = t.malloc(size)
    buf.copy_from(bytes(size))
    return buf


# Documentation passages several cases quote (each case adds its own gloss after them).
DOC_GRAPH_ADD_MEMCPY_NODE_WHEN_GRAPH = ("CUDA Runtime API 13.5, Graph Management, cudaGraphAddMemcpyNode: "
                                        "\"When the graph is launched, the node will perform the memcpy "
                                        "described by pCopyParams\"")
DOC_GRAPH_ADD_MEMSET_NODE_SETS_SPECIFIED = ("CUDA Runtime API 13.5, Graph Management, cudaGraphAddMemsetNode / "
                                            "cudaMemset2D: \"Sets to the specified value value a matrix (height "
                                            "rows of width bytes each) pointed to by dstPtr. pitch is the "
                                            "width in bytes of the 2D array pointed to by dstPtr, including "
                                            "any padding added to the end of each row\"")
DOC_GRAPH_ADD_MEM_FREE_NODE_RETURN_USER = ("CUDA Runtime API 13.5, Graph Management, cudaGraphAddMemFreeNode: "
                                           "\"cudaGraphAddMemFreeNode will return cudaErrorInvalidValue if the "
                                           "user attempts to free: - an allocation twice in the same graph. - "
                                           "an address that was not returned by an allocation node. - an "
                                           "invalid address\"")
DOC_GRAPH_ADD_NODE_CREATES_NEW = ("CUDA Runtime API 13.5, Graph Management, cudaGraphAddNode: \"Creates a new "
                                  "node in graph described by nodeParams with numDependencies dependencies "
                                  "specified via pDependencies. numDependencies may be 0. pDependencies may be "
                                  "null if numDependencies is 0. pDependencies may not have any duplicate "
                                  "entries\"")
DOC_GRAPH_ADD_NODE_NODE_TYPE = ("CUDA Runtime API 13.5, Graph Management, cudaGraphAddNode: \"The node type "
                                "should be specified in the type field, and type-specific parameters in the "
                                "corresponding union member\"")


# ============================================================================ empty
@case("graph.empty.type_and_params", cite=EMPTY + "creates a new node which performs no operation, and adds "
      "it to graph; " + f"{_RT}, cudaGraphNodeGetType: returns the node type of node in pType",
      apis=("GraphAddEmptyNode", "GraphNodeGetType", "GraphGetNodes"), expect=(NodeType.EMPTY, 1, True))
def _(t: CaseContext) -> Any:
    """An empty node is in its graph, and the runtime reports its type as EMPTY."""
    # The id keeps its old name; an empty node has no parameters to read back (EmptyNode.params
    # is pygraphrt's literal {}), so the type and the listing are what the runtime says of it.
    g = t.graph()
    n = g.add_empty()
    count, listed = raw_list(t, "GraphGetNodes", g.handle, 1)
    return t.runtime_type(n), count, listed == [int(n)]


@case("graph.empty.dependencies", cite=EMPTY + "adds it to graph with numDependencies dependencies "
      "specified via pDependencies", apis=("GraphAddEmptyNode", "GraphNodeGetDependencies"),
      expect=["a", "b"])
def _(t: CaseContext) -> Any:
    """A node added after two others depends on both."""
    g = t.graph()
    a, b = g.add_empty(), g.add_empty()
    j = g.add_empty(dependencies=[a, b])
    return labels({"a": a, "b": b, "j": j}, [n for n, _ in j.dependencies])


@case("graph.empty.builder_method", kind="binding", cite=EMPTY + "adds the node with the given dependencies; "
      + PYGRAPHRT + "node.empty() adds a node that depends on node", apis=("GraphAddEmptyNode",),
      expect=(True, ["a"]))
def _(t: CaseContext) -> Any:
    """node.empty() makes a node of the same graph that depends on node."""
    g = t.graph()
    a = g.add_empty()
    b = a.empty()
    return b.graph is g, labels({"a": a, "b": b}, [n for n, _ in b.dependencies])


@case("graph.empty.duplicate_dependency", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphAddEmptyNode: \"It is possible for "
                                               "numDependencies to be 0, in which case the node will be placed at the root of the graph. "
                                               "pDependencies may not have any duplicate entries\" -- pDependencies may not have any "
                                               "duplicate entries; returns cudaErrorInvalidValue",
      apis=("GraphAddEmptyNode",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """The same node twice in the dependency list is refused."""
    g = t.graph()
    a = g.add_empty()
    before = t.snapshot(graph=g)
    try:
        t.call_under_test(g.add_empty, dependencies=[a, a])
    finally:
        t.check_equal(t.snapshot(graph=g), before, "the graph after the refused add")


@case("graph.empty.foreign_dependency", kind="binding",
      cite=EMPTY + "pDependencies - dependencies of the node (nodes of "
      "graph); " + PYCHECK, apis=("GraphAddEmptyNode",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A node of another graph cannot be a dependency."""
    g1, g2 = t.graph(), t.graph()
    a = g1.add_empty()
    g2.add_empty(dependencies=[a])


@case("graph.empty.dependency_not_a_node", kind="binding", cite=EMPTY + "pDependencies - dependencies of the node; "
      + PYCHECK, apis=("GraphAddEmptyNode",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Something that is not a node cannot be a dependency."""
    t.graph().add_empty(dependencies=[object()])  # type: ignore[list-item]


@case("graph.empty.destroyed_dependency", kind="binding",
      cite=DESTROY_NODE + "removes node from its graph; " + PYGRAPHRT
      + "a destroyed node raises InvalidResourceHandle", apis=("GraphAddEmptyNode", "GraphDestroyNode"),
      raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """A destroyed node cannot be a dependency."""
    g = t.graph()
    a = g.add_empty()
    a.destroy()
    g.add_empty(dependencies=[a])


# ============================================================================ memset
@case("graph.memset.params", cite=MEMSET_GET + "returns the parameters of memset node node",
      apis=("GraphAddMemsetNode", "GraphMemsetNodeGetParams", "GraphNodeGetType"),
      expect=(NodeType.MEMSET, True, 7, 1, 100, 1))
def _(t: CaseContext) -> Any:
    """A 1-D memset node reads back its destination, value, element size, width and height."""
    buf = t.malloc(N)
    m = t.graph().add_memset(buf, 7, 100)
    p = typed(m)
    return t.runtime_type(m), p["dst"] == buf.ptr, p["value"], p["element_size"], p["width"], p["height"]


@case("graph.memset.element_size_2", cite=MEMSET + "the element size must be 1, 2, or 4 bytes",
      apis=("GraphAddMemsetNode", "GraphMemsetNodeGetParams"), expect=(2, 0xABCD, 50))
def _(t: CaseContext) -> Any:
    """A memset of 2-byte elements keeps its 16-bit value."""
    buf = t.malloc(N)
    p = typed(t.graph().add_memset(buf, 0xABCD, 50, element_size=2))
    return p["element_size"], p["value"], p["width"]


@case("graph.memset.element_size_4", cite=MEMSET + "the element size must be 1, 2, or 4 bytes",
      apis=("GraphAddMemsetNode", "GraphMemsetNodeGetParams"), expect=(4, 0xDEADBEEF, 25))
def _(t: CaseContext) -> Any:
    """A memset of 4-byte elements keeps its 32-bit value."""
    buf = t.malloc(N)
    p = typed(t.graph().add_memset(buf, 0xDEADBEEF, 25, element_size=4))
    return p["element_size"], p["value"], p["width"]


@case("graph.memset.params_2d", cite=DOC_GRAPH_ADD_MEMSET_NODE_SETS_SPECIFIED + " -- a memset of width elements "
                                     "in height rows pitch bytes apart (cudaMemsetParams width, height, pitch)", apis=("GraphAddMemsetNode", "GraphMemsetNodeGetParams"),
      expect=(100, 4, 256, 1))
def _(t: CaseContext) -> Any:
    """A 2-D memset node reads back width, height and pitch."""
    buf = t.malloc(N)
    p = typed(t.graph().add_memset(buf, 3, 100, height=4, pitch=256))
    return p["width"], p["height"], p["pitch"], p["element_size"]


@case("graph.memset.runs_element_size_4", cite=MEMSET + "when the graph is launched, the node will perform "
      "the memset described by pMemsetParams", apis=("GraphAddMemsetNode", "GraphLaunch"),
      expect=b"\xef\xbe\xad\xde" * 2 + b"\x00" * 4)
def _(t: CaseContext) -> Any:
    """Launched, a 4-byte memset writes its value (little-endian) to count elements only."""
    buf = _zeroed(t)
    g = t.graph()
    g.add_memset(buf, 0xDEADBEEF, 2, element_size=4)
    launch(t, g)
    return buf.to_bytes(12)


@case("graph.memset.runs_element_size_2", cite=MEMSET + "when the graph is launched, the node will perform "
      "the memset described by pMemsetParams", apis=("GraphAddMemsetNode", "GraphLaunch"),
      expect=b"\x34\x12" * 3 + b"\x00" * 2)
def _(t: CaseContext) -> Any:
    """Launched, a 2-byte memset writes its value to count elements only."""
    buf = _zeroed(t)
    g = t.graph()
    g.add_memset(buf, 0x1234, 3, element_size=2)
    launch(t, g)
    return buf.to_bytes(8)


@case("graph.memset.runs_2d", cite=DOC_GRAPH_ADD_MEMSET_NODE_SETS_SPECIFIED + " -- sets width elements in each "
                                   "of height rows, pitch bytes apart", apis=("GraphAddMemsetNode", "GraphLaunch"), expect=(b"\x09" * 16 + b"\x00" * 16) * 3)
def _(t: CaseContext) -> Any:
    """Launched, a 2-D memset writes each row and leaves the pitch padding alone."""
    buf = _zeroed(t)
    g = t.graph()
    g.add_memset(buf, 9, 16, height=3, pitch=32)
    launch(t, g)
    return buf.to_bytes(96)


@case("graph.memset.element_size_3", kind="binding",
      cite=MEMSET + "the element size must be 1, 2, or 4 bytes; " + PYCHECK,
      apis=("GraphAddMemsetNode",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """An element size of 3 is refused."""
    buf = t.malloc(N)
    t.graph().add_memset(buf, 1, 16, element_size=3)


@case("graph.memset.element_size_8", kind="binding",
      cite=MEMSET + "the element size must be 1, 2, or 4 bytes; " + PYCHECK,
      apis=("GraphAddMemsetNode",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """An element size of 8 is refused."""
    buf = t.malloc(N)
    t.graph().add_memset(buf, 1, 16, element_size=8)


@case("graph.memset.value_too_wide", kind="binding", cite=MEMSET + "value is set in elements of elementSize bytes; "
      + PYCHECK + " for a value that does not fit", apis=("GraphAddMemsetNode",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A value of 256 does not fit a 1-byte element."""
    buf = t.malloc(N)
    t.graph().add_memset(buf, 256, 16)


@case("graph.memset.negative_value", kind="binding", cite=MEMSET + "value is an unsigned value; " + PYCHECK,
      apis=("GraphAddMemsetNode",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A negative value is refused."""
    buf = t.malloc(N)
    t.graph().add_memset(buf, -1, 16)


@case("graph.memset.negative_count", kind="binding", cite=MEMSET + "width is a size (size_t); " + PYCHECK,
      apis=("GraphAddMemsetNode",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A negative element count is refused."""
    buf = t.malloc(N)
    t.graph().add_memset(buf, 1, -16)


@case("graph.memset.not_a_pointer", kind="binding", cite=MEMSET + "dst is a device pointer; " + PYCHECK,
      apis=("GraphAddMemsetNode",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A destination that is not memory is refused."""
    t.graph().add_memset("not a pointer", 1, 16)


@case("graph.memset.null_dst", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphAddMemsetNode: \"cudaSuccess, "
                                    "cudaErrorInvalidValue, cudaErrorInvalidDevice\" -- dst is the destination device pointer; "
                                    "returns cudaErrorInvalidValue" + NULL_ARG, apis=("GraphAddMemsetNode",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A NULL destination is refused by the runtime."""
    # The function's text does not name a NULL dst; the error code's does (NULL_ARG). CUDA 12.9-13.5: InvalidValue.
    t.call_under_test(t.graph().add_memset, 0, 1, 16)


@case("graph.memset.pitch_below_width", cite=(
          "Observed, cudaGraphAddMemsetNode: a 2-D memset of 4 rows of 100 bytes with pitch 50 is refused with "
          "cudaErrorInvalidValue when the node is added (deviations.OBSERVATIONS); CUDA Runtime API 13.5, "
          "Graph Management, cudaGraphAddMemsetNode / cudaMemset2D: \"Sets to the specified value value a "
          "matrix (height rows of width bytes each) pointed to by dstPtr. pitch is the width in bytes of the "
          "2D array pointed to by dstPtr, including any padding added to the end of each row\" -- rows are "
          "pitch bytes apart (pitch >= width * elementSize for more than one row); no sentence states that a "
          "smaller pitch is refused (cudaErrorInvalidValue is only in the return list)"), apis=("GraphAddMemsetNode",),
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A 2-D memset whose rows would overlap is refused by the runtime."""
    # CUDA 12.9-13.5 refuse it when the node is added, with cudaErrorInvalidValue (an observation).
    buf = t.malloc(N)
    t.call_under_test(t.graph().add_memset, buf, 1, 100, height=4, pitch=50)


@case("graph.memset.set_params", cite=SET_PARAMS + "sets the parameters of graph node node to nodeParams",
      apis=("GraphNodeSetParams", "GraphMemsetNodeGetParams"), requires=("node_set_params",),
      expect=(9, 32, True))
def _(t: CaseContext) -> Any:
    """The generic setter replaces a memset node's parameters in its graph."""
    buf = t.malloc(N)
    m = t.graph().add_memset(buf, 1, 64)
    m.set_params(dst=buf.ptr + 128, value=9, count=32)
    p = typed(m)
    return p["value"], p["width"], p["dst"] == buf.ptr + 128


@case("graph.memset.set_params_runs", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphNodeSetParams: \"Sets the parameters of "
                                           "graph node node to nodeParams\" -- sets the parameters of graph node node (used by executable "
                                           "graphs instantiated afterwards)", apis=("GraphNodeSetParams", "GraphLaunch"),
      requires=("node_set_params",), expect=b"\x0b" * 8)
def _(t: CaseContext) -> Any:
    """An executable graph made after set_params does the new work."""
    buf = _zeroed(t)
    g = t.graph()
    m = g.add_memset(buf, 1, 64)
    m.set_params(dst=buf, value=11, count=64)
    launch(t, g)
    return buf.to_bytes(8)


@case("graph.memset.set_params_missing", kind="binding", cite=SET_PARAMS + "nodeParams must be fully initialized; "
      + PYCHECK + " naming what is missing", apis=("GraphNodeSetParams",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """set_params of a memset without its count is refused."""
    buf = t.malloc(N)
    m = t.graph().add_memset(buf, 1, 64)
    m.set_params(dst=buf, value=2)


@case("graph.memset.set_params_unknown_keyword", kind="binding", cite=SET_PARAMS + "the node type specified by "
      "nodeParams->type must match the type of node; " + PYCHECK + " for parameters of another type",
      apis=("GraphNodeSetParams",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """set_params of a memset with a host-node parameter is refused."""
    buf = t.malloc(N)
    m = t.graph().add_memset(buf, 1, 64)
    m.set_params(dst=buf, value=2, count=64, fn=lambda: None)


@case("graph.memset.get_params_wrong_type", cite=(
          "Observed, cudaGraphMemsetNodeGetParams: an empty node is refused with cudaErrorInvalidValue "
          "(deviations.OBSERVATIONS); CUDA Runtime API 13.5, Graph Management, cudaGraphMemsetNodeGetParams: "
          "\"Returns the parameters of memset node node in pNodeParams\" -- node must be a memset node; no "
          "sentence states that a node of another type is refused (cudaErrorInvalidValue is only in the return "
          "list)"), apis=("GraphMemsetNodeGetParams",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Reading memset parameters of an empty node is refused."""
    n = t.graph().add_empty()
    p = t.ffi.new(f"{t.backend.ops.memset_params_type} *")
    t.call_under_test(t.call, "GraphMemsetNodeGetParams", n.handle, p)


# ============================================================================ memcpy
@case("graph.memcpy.params_1d", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphMemcpyNodeGetParams: \"When the graph is "
                                     "launched, the node will copy count bytes from the memory area pointed to by src to the "
                                     "memory area pointed to by dst, where kind specifies the direction of the copy, and must be "
                                     "one of cudaMemcpyHostToHost, cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, "
                                     "cudaMemcpyDeviceToDevice, or cudaMemcpyDefault\" -- returns the parameters of memcpy node "
                                     "node (a 1-D copy of count bytes: extent count x 1 x 1)", apis=("GraphAddMemcpyNode1D", "GraphMemcpyNodeGetParams",
                                                   "GraphNodeGetType"),
      expect=(NodeType.MEMCPY, 64, 1, 1, True, True))
def _(t: CaseContext) -> Any:
    """A 1-D memcpy node reads back as a copy of count bytes, one row, one slice."""
    # unsure: the 1-D node is read back through the 3-D parameters; height and depth 1 assumed.
    buf = t.malloc(N)
    m = t.graph().add_memcpy(buf.ptr + 1024, buf, 64)
    p = typed(m)
    return t.runtime_type(m), p["width"], p["height"], p["depth"], p["dst"] == buf.ptr + 1024, p["src"] == buf.ptr


@case("graph.memcpy.params_2d", cite=DOC_GRAPH_ADD_MEMCPY_NODE_WHEN_GRAPH + " -- the node will perform the "
                                     "memcpy described by pCopyParams (see cudaMemcpy3D)", apis=("GraphAddMemcpyNode", "GraphMemcpyNodeGetParams"), expect=(64, 4, 1, 128, 96))
def _(t: CaseContext) -> Any:
    """A pitched 2-D memcpy node reads back extent and pitches."""
    buf = t.malloc(N)
    p = typed(t.graph().add_memcpy_2d(buf.ptr + 2048, 128, buf, 96, 64, 4))
    return p["width"], p["height"], p["depth"], p["dst_pitch"], p["src_pitch"]


@case("graph.memcpy.set_params_1d", cite=MEMCPY_SET_1D + "sets the parameters of memcpy node node to the "
      "copy described by the provided parameters", apis=("GraphMemcpyNodeSetParams1D", "GraphMemcpyNodeGetParams"),
      expect=(32, True, True))
def _(t: CaseContext) -> Any:
    """The 1-D setter replaces count, destination and source."""
    buf = t.malloc(N)
    m = t.graph().add_memcpy(buf.ptr + 1024, buf, 64)
    m.set_params(dst=buf.ptr + 3072, src=buf.ptr + 512, count=32)
    p = typed(m)
    return p["width"], p["dst"] == buf.ptr + 3072, p["src"] == buf.ptr + 512


@case("graph.memcpy.runs_1d", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphAddMemcpyNode1D: \"When the graph is "
                                   "launched, the node will copy count bytes from the memory area pointed to by src to the "
                                   "memory area pointed to by dst, where kind specifies the direction of the copy, and must be "
                                   "one of cudaMemcpyHostToHost, cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, "
                                   "cudaMemcpyDeviceToDevice, or cudaMemcpyDefault\" -- when the graph is launched, the node will "
                                   "copy count bytes from src to dst", apis=("GraphAddMemcpyNode1D", "GraphLaunch"), expect=(b"\x44" * 64, b"\x00" * 8))
def _(t: CaseContext) -> Any:
    """Launched, the copy moves exactly count bytes, after the memset it depends on."""
    buf = _zeroed(t)
    g = t.graph()
    m = g.add_memset(buf, 0x44, 128)
    m.memcpy(buf.ptr + 1024, buf, 64)
    launch(t, g)
    out = buf.to_bytes(1024 + 72)
    return out[1024:1088], out[1088:1096]


@case("graph.memcpy.runs_2d", cite=DOC_GRAPH_ADD_MEMCPY_NODE_WHEN_GRAPH + " -- the node will perform the memcpy "
                                   "described by pCopyParams: width bytes of height rows, each at its pitch", apis=("GraphAddMemcpyNode", "GraphLaunch"),
      expect=(b"\x07" * 16 + b"\x00" * 16) * 3)
def _(t: CaseContext) -> Any:
    """Launched, a pitched copy writes each row's width and leaves the rest of the pitch."""
    src, dst = t.malloc(N), _zeroed(t)
    src.copy_from(b"\x07" * N)
    g = t.graph()
    g.add_memcpy_2d(dst, 32, src, 64, 16, 3)
    launch(t, g)
    return dst.to_bytes(96)


@case("graph.memcpy.negative_count", kind="binding",
      cite=MEMCPY_1D + "count - size in bytes to copy (size_t); " + PYCHECK,
      apis=("GraphAddMemcpyNode1D",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A negative byte count is refused."""
    buf = t.malloc(N)
    t.graph().add_memcpy(buf.ptr + 1024, buf, -1)


@case("graph.memcpy.not_a_pointer", kind="binding", cite=MEMCPY_1D + "src - source memory address; " + PYCHECK,
      apis=("GraphAddMemcpyNode1D",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A source that is not memory is refused."""
    buf = t.malloc(N)
    t.graph().add_memcpy(buf, 3.5, 16)


@case("graph.memcpy.null_src", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphAddMemcpyNode1D: \"src - Source memory "
                                    "address\" -- src - source memory address; returns cudaErrorInvalidValue" + NULL_ARG, apis=("GraphAddMemcpyNode1D",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A NULL source is refused by the runtime."""
    # The function's text does not name a NULL src; the error code's does (NULL_ARG). CUDA 12.9-13.5: InvalidValue.
    buf = t.malloc(N)
    t.call_under_test(t.graph().add_memcpy, buf, 0, 64)


@case("graph.memcpy.pitch_below_width", cite=(
          "CUDA Runtime API 13.5, Graph Management, cudaGraphAddMemcpyNode / cudaMemcpy3D: \"See "
          "cudaMemcpy3D() for a description of the structure and its restrictions\" -- the node's copy is held "
          "to cudaMemcpy3D's restrictions: \"The destination object must entirely contain the region defined "
          "by dstPos and extent\" ... \"cudaSuccess, cudaErrorInvalidValue, cudaErrorInvalidPitchValue\" -- "
          "rows wider than the destination pitch do not fit in the destination's rows, and cudaMemcpy3D's "
          "return list names the codes (the case accepts either; the GPUs return cudaErrorInvalidPitchValue)"),
      apis=("GraphAddMemcpyNode",), raises=errors.GraphRTError)
def _(t: CaseContext) -> Any:
    """A pitched copy whose rows are wider than the destination pitch is refused (the error is recorded)."""
    # unsure: whether the runtime checks this when the node is added (not at launch).
    buf = t.malloc(N)
    # GraphRTError: the GPU's cudaErrorInvalidPitchValue (12.9, 13.0, 13.5) has no class of its own.
    t.call_under_test(t.graph().add_memcpy_2d, buf.ptr + 2048, 16, buf, 64, 64, 4)


@case("graph.memcpy.set_params_wrong_type", cite=(
          "Observed, cudaGraphMemcpyNodeSetParams1D: a memset node is refused with cudaErrorInvalidValue "
          "(deviations.OBSERVATIONS); CUDA Runtime API 13.5, Graph Management, cudaGraphMemcpyNodeSetParams1D: "
          "\"Sets the parameters of memcpy node node to the copy described by the provided parameters\" -- "
          "node must be a memcpy node; no sentence states that a node of another type is refused "
          "(cudaErrorInvalidValue is only in the return list)"), apis=("GraphMemcpyNodeSetParams1D",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """The memcpy setter refuses a memset node."""
    buf = t.malloc(N)
    m = t.graph().add_memset(buf, 1, 64)
    ops = t.backend.ops
    t.call_under_test(t.call, "GraphMemcpyNodeSetParams1D", m.handle, t.ffi.cast("void *", buf.ptr + 1024),
                      t.ffi.cast("void *", buf.ptr), 64, ops.const("MemcpyDefault"))


# ============================================================================ host
@case("graph.host.params_fn", cite=HOST_GET + "returns the parameters of host node node",
      apis=("GraphAddHostNode", "GraphHostNodeGetParams", "GraphNodeGetType"), expect=(NodeType.HOST, True))
def _(t: CaseContext) -> Any:
    """A host node reads back the callable it runs."""
    def fn() -> None:
        pass

    h = t.graph().add_host(fn)
    return t.runtime_type(h), typed(h)["fn"] is fn


@case("graph.host.runs_each_launch", cite=HOST + "when the graph is launched, the node will invoke the "
      "specified CPU function", apis=("GraphAddHostNode", "GraphLaunch"), expect=3)
def _(t: CaseContext) -> Any:
    """Each launch runs the host function once."""
    calls: list[int] = []
    g = t.graph()
    g.add_host(lambda: calls.append(1))
    s = t.stream()
    exe = t.instantiate(g)
    for _ in range(3):
        exe.launch(s)
    s.synchronize()
    return len(calls)


@case("graph.host.sees_predecessor_work", cite=("CUDA Runtime API 13.5, Graph Management, cudaGraphAddHostNode: \"Creates a new CPU execution node and"
      " adds it to graph with numDependencies dependencies specified via pDependencies and arguments "
      "specified in pNodeParams\" -- the node invokes the CPU function after its dependencies; the runtime "
      "header says that work occurs after all of a node's dependencies have completed only for external "
      "semaphore nodes, not for host nodes"), apis=("GraphAddHostNode", "GraphAddMemcpyNode1D",
                                                         "GraphLaunch"), expect=b"\x31" * 4)
def _(t: CaseContext) -> Any:
    """A host node runs after the copies it depends on are complete."""
    buf = t.malloc(N)
    host = bytearray(16)
    seen: list[bytes] = []
    g = t.graph()
    m = g.add_memset(buf, 0x31, 16)
    c = m.memcpy(host, buf, 16)
    c.host(lambda: seen.append(bytes(host[:4])))
    launch(t, g)
    return seen[0] if seen else None


@case("graph.host.set_params", cite=SET_PARAMS + "sets the parameters of graph node node to nodeParams",
      apis=("GraphNodeSetParams", "GraphHostNodeGetParams"), requires=("node_set_params",), expect="second")
def _(t: CaseContext) -> Any:
    """The generic setter replaces a host node's function."""
    def first() -> None:
        pass

    def second() -> None:
        pass

    h = t.graph().add_host(first)
    h.set_params(fn=second)
    return getattr(typed(h)["fn"], "__name__", None)


@case("graph.host.not_callable", kind="binding", cite=HOST + "pNodeParams.fn is the CPU function; " + PYCHECK,
      apis=("GraphAddHostNode",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A host node needs a callable."""
    t.graph().add_host(42)  # type: ignore[arg-type]


@case("graph.host.error_at_synchronize", kind="binding", cite=HOST + "the node invokes the CPU function; " + PYGRAPHRT
      + "an exception it raises is raised by the next synchronize() (HostCallbackError)",
      apis=("GraphAddHostNode", "GraphLaunch"), raises=errors.HostCallbackError)
def _(t: CaseContext) -> Any:
    """A host function's exception comes back at synchronize."""
    g = t.graph()
    g.add_host(lambda: 1 / 0)
    s = t.stream()
    exe = t.instantiate(g)
    exe.launch(s)
    s.synchronize()


@case("graph.host.get_params_wrong_type", cite=(
          "Observed, cudaGraphHostNodeGetParams: an empty node is refused with cudaErrorInvalidValue "
          "(deviations.OBSERVATIONS); CUDA Runtime API 13.5, Graph Management, cudaGraphHostNodeGetParams: "
          "\"Returns the parameters of host node node in pNodeParams\" -- node must be a host node; no "
          "sentence states that a node of another type is refused (cudaErrorInvalidValue is only in the return "
          "list)"), apis=("GraphHostNodeGetParams",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Reading host parameters of an empty node is refused."""
    n = t.graph().add_empty()
    p = t.ffi.new(f"{t.backend.ops.host_params_type} *")
    t.call_under_test(t.call, "GraphHostNodeGetParams", n.handle, p)


# ============================================================================ events
@case("graph.event_record.params_event", cite=REC_GET + "returns the event of event record node hNode",
      apis=("GraphAddEventRecordNode", "GraphEventRecordNodeGetEvent", "GraphNodeGetType"),
      expect=(NodeType.EVENT_RECORD, True))
def _(t: CaseContext) -> Any:
    """An event record node reads back its event."""
    ev = t.event()
    n = t.graph().add_event_record(ev)
    return t.runtime_type(n), typed(n)["event"] == int(ev)


@case("graph.event_wait.params_event", cite=WAIT_GET + "returns the event of event wait node hNode",
      apis=("GraphAddEventWaitNode", "GraphEventWaitNodeGetEvent", "GraphNodeGetType"),
      expect=(NodeType.WAIT_EVENT, True))
def _(t: CaseContext) -> Any:
    """An event wait node reads back its event."""
    ev = t.event()
    n = t.graph().add_event_wait(ev)
    return t.runtime_type(n), typed(n)["event"] == int(ev)


@case("graph.event_record.set_event", cite=REC_SET + "sets the event of event record node hNode to event",
      apis=("GraphEventRecordNodeSetEvent", "GraphEventRecordNodeGetEvent"), expect=(True, "e2"))
def _(t: CaseContext) -> Any:
    """The record node's event can be replaced."""
    e1, e2 = t.event(), t.event()
    n = t.graph().add_event_record(e1)
    before = typed(n)["event"] == int(e1)
    n.set_event(e2)
    return before, {int(e1): "e1", int(e2): "e2"}.get(typed(n)["event"], "?")


@case("graph.event_wait.set_event", cite=WAIT_SET + "sets the event of event wait node hNode to event",
      apis=("GraphEventWaitNodeSetEvent", "GraphEventWaitNodeGetEvent"), expect=(True, "e2"))
def _(t: CaseContext) -> Any:
    """The wait node's event can be replaced."""
    e1, e2 = t.event(), t.event()
    n = t.graph().add_event_wait(e1)
    before = typed(n)["event"] == int(e1)
    n.set_event(e2)
    return before, {int(e1): "e1", int(e2): "e2"}.get(typed(n)["event"], "?")


@case("graph.event_record.runs", cite=REC + "each launch of the graph will record event to capture "
      "execution of the node's dependencies", apis=("GraphAddEventRecordNode", "GraphNodeGetType", "GraphLaunch",
                                                     "EventSynchronize"), expect=(NodeType.EVENT_RECORD, b"\x11" * 8))
def _(t: CaseContext) -> Any:
    """Waiting for the recorded event waits for the work before the record node."""
    # unsure: that EventSynchronize right after the launch waits for the record the launch enqueued.
    buf = _zeroed(t)
    ev = t.event()
    g = t.graph()
    rec = g.add_memset(buf, 0x11, N).event_record(ev)
    s = t.stream()
    exe = t.instantiate(g)
    exe.launch(s)
    ev.synchronize()
    out = buf.to_bytes(8)
    s.synchronize()
    return t.runtime_type(rec), out


@case("graph.event_record.not_an_event", kind="binding", cite=REC + "event - event for the node; " + PYCHECK,
      apis=("GraphAddEventRecordNode",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """An event record node needs an Event."""
    t.graph().add_event_record("event")  # type: ignore[arg-type]


@case("graph.event_wait.closed_event", kind="binding", cite=WAIT + "event - event for the node; " + PYGRAPHRT
      + "a destroyed event raises InvalidResourceHandle", apis=("GraphAddEventWaitNode",),
      raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """A destroyed event cannot be waited on."""
    ev = t.event()
    ev.close()
    t.graph().add_event_wait(ev)


@case("graph.event_record.set_event_not_an_event", kind="binding", cite=REC_SET + "event - event to use; " + PYCHECK,
      apis=("GraphEventRecordNodeSetEvent",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """set_event needs an Event."""
    n = t.graph().add_event_record(t.event())
    n.set_event(7)


@case("graph.event_wait.set_event_closed", kind="binding", cite=WAIT_SET + "event - event to use; " + PYGRAPHRT
      + "a destroyed event raises InvalidResourceHandle", apis=("GraphEventWaitNodeSetEvent",),
      raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """set_event with a destroyed event is refused."""
    n = t.graph().add_event_wait(t.event())
    other = t.event()
    other.close()
    n.set_event(other)


@case("graph.event_record.get_event_on_wait_node", cite=(
          "Observed, cudaGraphEventRecordNodeGetEvent: an event wait node is refused with "
          "cudaErrorInvalidValue (deviations.OBSERVATIONS); CUDA Runtime API 13.5, Graph Management, "
          "cudaGraphEventRecordNodeGetEvent: \"Returns the event of event record node hNode in event_out\" -- "
          "hNode must be an event record node; no sentence states that a node of another type is refused "
          "(cudaErrorInvalidValue is only in the return list)"), apis=("GraphEventRecordNodeGetEvent",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """The record-node getter refuses a wait node."""
    n = t.graph().add_event_wait(t.event())
    out = t.new("Event_t *")
    t.call_under_test(t.call, "GraphEventRecordNodeGetEvent", n.handle, out)


@case("graph.event_record.generic", cite=(DOC_GRAPH_ADD_NODE_NODE_TYPE + " -- nodeParams.type "
                                          "cudaGraphNodeTypeEventRecord makes that node type"), apis=("GraphAddNode", "GraphEventRecordNodeGetEvent", "GraphNodeGetType"),
      requires=("generic_add_node",), expect=(NodeType.EVENT_RECORD, True))
def _(t: CaseContext) -> Any:
    """The generic form makes an event record node."""
    ev = t.event()
    n = t.graph().add_node(NodeType.EVENT_RECORD, event=ev)
    return t.runtime_type(n), typed(n)["event"] == int(ev)


@case("graph.event_wait.generic", cite=(DOC_GRAPH_ADD_NODE_NODE_TYPE + " -- nodeParams.type "
                                        "cudaGraphNodeTypeWaitEvent makes that node type"), apis=("GraphAddNode", "GraphEventWaitNodeGetEvent", "GraphNodeGetType"),
      requires=("generic_add_node",), expect=(NodeType.WAIT_EVENT, True))
def _(t: CaseContext) -> Any:
    """The generic form makes an event wait node."""
    ev = t.event()
    n = t.graph().add_node(NodeType.WAIT_EVENT, event=ev)
    return t.runtime_type(n), typed(n)["event"] == int(ev)


# ============================================================================ graph memory: basics
@case("graph.mem_alloc.params", cite=ALLOC_GET + "returns the parameters of a memory alloc node; "
      + ALLOC + "returns the address of the allocation in nodeParams.dptr",
      apis=("GraphAddMemAllocNode", "GraphMemAllocNodeGetParams", "GraphNodeGetType"),
      requires=("graph_memory_nodes",), expect=(NodeType.MEM_ALLOC, 1 << 20, True, True))
def _(t: CaseContext) -> Any:
    """An allocation node reads back its size, its address and the current device."""
    g = t.graph()
    a = g.add_mem_alloc(1 << 20)
    p = typed(a)
    return t.runtime_type(a), p["bytesize"], p["dptr"] != 0, p["device"] == t.rt.current_device().ordinal


@case("graph.mem_free.params", cite=FREE_GET + "returns the address of a memory free node",
      apis=("GraphAddMemFreeNode", "GraphMemFreeNodeGetParams", "GraphNodeGetType"),
      requires=("graph_memory_nodes",), expect=(NodeType.MEM_FREE, True))
def _(t: CaseContext) -> Any:
    """A free node reads back the address it frees."""
    g = t.graph()
    a = g.add_mem_alloc(1 << 16)
    f = a.mem_free(a)
    return t.runtime_type(f), typed(f)["dptr"] == typed(a)["dptr"]


@case("graph.mem_alloc.runtime_types", cite=f"{_RT}, cudaGraphNodeGetType: returns the node type of node",
      apis=("GraphNodeGetType", "GraphAddMemAllocNode", "GraphAddMemFreeNode"), requires=("graph_memory_nodes",),
      expect=[NodeType.MEM_ALLOC, NodeType.MEM_FREE])
def _(t: CaseContext) -> Any:
    """The runtime reports allocation and free nodes' types."""
    from .graph import runtime_type

    g = t.graph()
    a = g.add_mem_alloc(1 << 16)
    f = a.mem_free(a)
    return [runtime_type(t, a), runtime_type(t, f)]


@case("graph.mem_alloc.address_fixed", cite=ALLOC + "the allocation's address remains fixed across "
      "instantiations and launches", apis=("GraphAddMemAllocNode", "GraphMemAllocNodeGetParams",
                                     "GraphInstantiateWithFlags", "GraphLaunch"),
      requires=("graph_memory_nodes",), expect=(True, True, True, True, 1 << 16, b"\x5a" * 8))
def _(t: CaseContext) -> Any:
    """The address the add returned is the one read back before, after instantiation and after a
    launch that used it (the launch's work is read back too)."""
    out = _zeroed(t)
    g = t.graph()
    a, added = _alloc_node(t, g, 1 << 16)
    read_at_creation = typed(a)["dptr"]
    m = a.memset(added, 0x5A, 1 << 16)
    c = m.memcpy(out, added, N)
    c.mem_free(a)
    s = t.stream()
    exe = t.instantiate(g)
    after_instantiate = typed(a)["dptr"]
    exe.launch(s)
    s.synchronize()
    after_launch = typed(a)
    return (added != 0, read_at_creation == added, after_instantiate == added, after_launch["dptr"] == added,
            after_launch["bytesize"], out.to_bytes(8))


@case("graph.mem_alloc.concurrent_distinct", cite=PG_MEMNODES + "allocations whose lifetimes may overlap "
      "are given distinct addresses (addresses are reused only between allocations that cannot be live "
      "at the same time)", apis=("GraphAddMemAllocNode", "GraphMemAllocNodeGetParams"),
      requires=("graph_memory_nodes",), expect=(1 << 16, True, [1 << 16, 1 << 16]))
def _(t: CaseContext) -> Any:
    """Two unordered allocations of one graph do not overlap (their distance, capped at the size; the
    addresses the adds returned, and read back the same)."""
    size = 1 << 16
    g = t.graph()
    (a, at_a), (b, at_b) = _alloc_node(t, g, size), _alloc_node(t, g, size)
    j = g.add_empty(dependencies=[a, b])
    f = j.mem_free(a)
    f.mem_free(b)
    pa, pb = typed(a), typed(b)
    return min(abs(at_a - at_b), size), (pa["dptr"], pb["dptr"]) == (at_a, at_b), [pa["bytesize"], pb["bytesize"]]


@case("graph.mem_alloc.runs", cite=ALLOC + "the allocation can be accessed by nodes ordered after the "
      "allocation node but before the free node", apis=("GraphAddMemAllocNode", "GraphLaunch"),
      requires=("graph_memory_nodes",),
      expect=b"\x66" * 8)
def _(t: CaseContext) -> Any:
    """Graph memory is usable between its allocation and free nodes."""
    out = t.malloc(N)
    g = t.graph()
    a = g.add_mem_alloc(N)
    m = a.memset(a.dptr, 0x66, N)
    c = m.memcpy(out, a.dptr, N)
    c.mem_free(a)
    launch(t, g)
    return out.to_bytes(8)


@case("graph.mem_alloc.generic", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphAddNode: \"Note that for some node types, "
                                      "nodeParams may contain \"out parameters\" which are modified during the call, such as "
                                      "nodeParams->alloc.dptr\" -- for some node types, nodeParams may contain out parameters which "
                                      "are modified during the call, such as nodeParams->alloc.dptr",
      apis=("GraphAddNode", "GraphMemAllocNodeGetParams", "GraphNodeGetType"),
      requires=("generic_add_node", "graph_memory_nodes"),
      expect=(NodeType.MEM_ALLOC, 1 << 18, True))
def _(t: CaseContext) -> Any:
    """The generic form makes an allocation node with an address."""
    g = t.graph()
    a = g.add_node(NodeType.MEM_ALLOC, size=1 << 18)
    p = typed(a)
    return t.runtime_type(a), p["bytesize"], p["dptr"] != 0


@case("graph.mem_free.generic", cite=(DOC_GRAPH_ADD_NODE_NODE_TYPE + " -- nodeParams.type "
                                      "cudaGraphNodeTypeMemFree makes that node type"), apis=("GraphAddNode", "GraphMemFreeNodeGetParams", "GraphNodeGetType"),
      requires=("generic_add_node", "graph_memory_nodes"), expect=(NodeType.MEM_FREE, True))
def _(t: CaseContext) -> Any:
    """The generic form makes a free node for an allocation of the graph."""
    g = t.graph()
    a = g.add_node(NodeType.MEM_ALLOC, size=1 << 16)
    f = g.add_node(NodeType.MEM_FREE, dependencies=[a], dptr=a)
    return t.runtime_type(f), typed(f)["dptr"] == typed(a)["dptr"]


@case("graph.mem_free.not_allocated_address", cite=DOC_GRAPH_ADD_MEM_FREE_NODE_RETURN_USER + " -- returns "
                                                   "cudaErrorInvalidValue if the user attempts to free an address "
                                                   "that was not returned by an allocation node",
      apis=("GraphAddMemFreeNode",), requires=("graph_memory_nodes",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Memory from malloc cannot be freed by a free node."""
    buf = t.malloc(N)
    g = t.graph()
    before = t.snapshot(graph=g)
    try:
        t.call_under_test(g.add_mem_free, buf)
    finally:
        t.check_equal(t.snapshot(graph=g), before, "the graph after the refused add")


@case("graph.mem_free.twice", cite=DOC_GRAPH_ADD_MEM_FREE_NODE_RETURN_USER + " -- returns cudaErrorInvalidValue "
                                   "if the user attempts to free an allocation twice in the same graph", apis=("GraphAddMemFreeNode",), requires=("graph_memory_nodes",),
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """An allocation cannot be freed twice in one graph."""
    g = t.graph()
    a = g.add_mem_alloc(1 << 16)
    f = a.mem_free(a)
    before = t.snapshot(graph=g)
    try:
        t.call_under_test(f.mem_free, a)
    finally:
        t.check_equal(t.snapshot(graph=g), before, "the graph after the refused second free")


@case("graph.mem_free.invalid_address", cite=DOC_GRAPH_ADD_MEM_FREE_NODE_RETURN_USER + " -- returns "
                                             "cudaErrorInvalidValue if the user attempts to free an invalid "
                                             "address", apis=("GraphAddMemFreeNode",), requires=("graph_memory_nodes",),
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """An address inside no allocation cannot be freed."""
    g = t.graph()
    g.add_mem_alloc(1 << 16)
    t.call_under_test(g.add_mem_free, 0x1000)


@case("graph.mem_free.null", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphAddMemFreeNode: \"cudaGraphAddMemFreeNode "
                                  "will return cudaErrorInvalidValue if the user attempts to free: - an allocation twice in the "
                                  "same graph. - an address that was not returned by an allocation node. - an invalid address\" "
                                  "-- returns cudaErrorInvalidValue if the user attempts to free an invalid address" + NULL_ARG, apis=("GraphAddMemFreeNode",), requires=("graph_memory_nodes",),
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """NULL cannot be freed by a free node."""
    t.call_under_test(t.graph().add_mem_free, 0)


@case("graph.mem_alloc.negative_size", kind="binding",
      cite=ALLOC + "nodeParams.bytesize is a size (size_t); " + PYCHECK,
      apis=("GraphAddMemAllocNode",), requires=("graph_memory_nodes",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A negative allocation size is refused."""
    t.graph().add_mem_alloc(-1)


@case("graph.mem_alloc.zero_size", cite=(
          "Observed, cudaGraphAddMemAllocNode: a bytesize of 0 is refused with cudaErrorInvalidValue "
          "(deviations.OBSERVATIONS); CUDA Runtime API 13.5, Graph Management, cudaGraphAddMemAllocNode: "
          "\"Creates a new allocation node and adds it to graph with numDependencies dependencies specified "
          "via pDependencies and arguments specified in nodeParams\" -- nodeParams.bytesize is the size of the "
          "requested allocation; no sentence states that a zero size is refused (cudaErrorInvalidValue is only "
          "in the return list)"), apis=("GraphAddMemAllocNode",),
      requires=("graph_memory_nodes",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A zero-byte allocation node is refused."""
    # unsure: a zero size is not named by the documentation (cudaMallocAsync accepts 0).
    t.call_under_test(t.graph().add_mem_alloc, 0)


@case("graph.mem_alloc.invalid_device", cite=(
          "Observed, cudaGraphAddMemAllocNode: an allocation located on device 1048576 (no such device) is "
          "refused with cudaErrorInvalidValue (deviations.OBSERVATIONS); CUDA Runtime API 13.5, Graph "
          "Management, cudaGraphAddMemAllocNode: \"cudaSuccess, cudaErrorCudartUnloading, "
          "cudaErrorInitializationError, cudaErrorNotSupported, cudaErrorInvalidValue, cudaErrorOutOfMemory\" "
          "-- nodeParams.poolProps.location names the device; the return list names cudaErrorInvalidValue; no "
          "sentence states that a device that does not exist is refused"), apis=("GraphAddMemAllocNode",), requires=("graph_memory_nodes",),
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """An allocation on a device that does not exist is refused."""
    # CUDA 12.9-13.5: cudaErrorInvalidValue (an observation), not cudaErrorInvalidDevice.
    t.call_under_test(t.graph().add_mem_alloc, 1 << 16, device=1 << 20)


@case("graph.mem_alloc.set_params_refused", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphNodeSetParams: \"Modifying parameters is "
                                                 "not supported for node types cudaGraphNodeTypeMemAlloc and cudaGraphNodeTypeMemFree\" -- "
                                                 "modifying parameters is not supported for node types cudaGraphNodeTypeMemAlloc and "
                                                 "cudaGraphNodeTypeMemFree; returns cudaErrorNotSupported",
      apis=("GraphNodeSetParams",), requires=("node_set_params", "graph_memory_nodes"),
      raises=errors.NotSupported)
def _(t: CaseContext) -> Any:
    """An allocation node's parameters cannot be changed."""
    g = t.graph()
    a = g.add_mem_alloc(1 << 16)
    t.call_under_test(a.set_params, size=1 << 17)


@case("graph.mem_alloc.destroy_node_refused", cite="CUDA Driver API 13.5, Graph Management, cuGraphDestroyNode: \"Nodes which belong to a graph "
                                                   "which contains allocation or free nodes cannot be destroyed\" -- nodes which belong to a "
                                                   "graph which contains allocation or free nodes cannot be destroyed; any attempt to do so will "
                                                   "return an error",
      apis=("GraphDestroyNode",), requires=("graph_memory_nodes",), raises=errors.NotSupported)
def _(t: CaseContext) -> Any:
    """No node of a graph with graph memory can be destroyed: NotSupported, from the destroy; the node stays."""
    # The documentation says "an error"; cudaErrorNotSupported is what CUDA 12.9, 13.0 and 13.5
    # return (H100, driver 580).
    g = t.graph()
    g.add_mem_alloc(1 << 16)
    e = g.add_empty()
    before = t.snapshot(graph=g)
    try:
        t.call_under_test(e.destroy)
    finally:
        t.check_equal(t.snapshot(graph=g), before, "the graph after the refused destroy")


@case("graph.mem_alloc.remove_dependency_refused", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphDestroyNode: \"Dependencies cannot be "
                                                        "removed from graphs which contain allocation or free nodes\" -- dependencies cannot be "
                                                        "removed from graphs which contain allocation or free nodes; any attempt to do so will return "
                                                        "an error",
      apis=("GraphRemoveDependencies",), requires=("graph_memory_nodes",), raises=errors.NotSupported)
def _(t: CaseContext) -> Any:
    """Edges of a graph with graph memory cannot be removed: NotSupported, from the remove; the edge stays."""
    # The documentation says "an error"; cudaErrorNotSupported is what CUDA 12.9, 13.0 and 13.5
    # return (H100, driver 580).
    g = t.graph()
    a = g.add_mem_alloc(1 << 16)
    b = a.empty()
    before = t.snapshot(graph=g)
    try:
        t.call_under_test(g.remove_dependencies, [a], [b])
    finally:
        t.check_equal(t.snapshot(graph=g), before, "the graph after the refused remove")


# ============================================================================ the generic form
@case("graph.add_node.empty", cite=ADD_NODE + "creates a new node in graph described by nodeParams",
      apis=("GraphAddNode", "GraphNodeGetType", "GraphGetNodes"), requires=("generic_add_node",),
      expect=(NodeType.EMPTY, 1, True))
def _(t: CaseContext) -> Any:
    """The generic form makes an empty node in the graph (type and listing from the runtime)."""
    g = t.graph()
    n = g.add_node(NodeType.EMPTY)
    count, listed = raw_list(t, "GraphGetNodes", g.handle, 1)
    return t.runtime_type(n), count, listed == [int(n)]


@case("graph.add_node.memset_params", cite=DOC_GRAPH_ADD_NODE_NODE_TYPE + " -- nodeParams is a tagged union: the "
                                           "node type in the type field, type-specific parameters in the "
                                           "corresponding union member",
      apis=("GraphAddNode", "GraphMemsetNodeGetParams", "GraphNodeGetType"), requires=("generic_add_node",),
      expect=(NodeType.MEMSET, 5, 64, 2))
def _(t: CaseContext) -> Any:
    """The generic form makes a memset node that reads back its parameters."""
    buf = t.malloc(N)
    n = t.graph().add_node(NodeType.MEMSET, dst=buf, value=5, count=64, element_size=2)
    p = typed(n)
    return t.runtime_type(n), p["value"], p["width"], p["element_size"]


@case("graph.add_node.host_params", cite=DOC_GRAPH_ADD_NODE_CREATES_NEW + " -- creates a new node described by "
                                         "nodeParams (cudaGraphNodeTypeHost)", apis=("GraphAddNode", "GraphHostNodeGetParams", "GraphNodeGetType"),
      requires=("generic_add_node",), expect=(NodeType.HOST, True))
def _(t: CaseContext) -> Any:
    """The generic form makes a host node that reads back its function."""
    def fn() -> None:
        pass

    n = t.graph().add_node(NodeType.HOST, fn=fn)
    return t.runtime_type(n), typed(n)["fn"] is fn


@case("graph.add_node.with_dependencies", cite=DOC_GRAPH_ADD_NODE_CREATES_NEW + " -- creates a new node with "
                                               "numDependencies dependencies specified via pDependencies (edge "
                                               "data NULL: default)", apis=("GraphAddNode", "GraphGetEdges"),
      requires=("generic_add_node",), expect=([("e", "m")], [EdgeData()]))
def _(t: CaseContext) -> Any:
    """The generic form adds the node after its dependencies with default edges."""
    g = t.graph()
    e = g.add_node(NodeType.EMPTY)
    m = g.add_node(NodeType.EMPTY, dependencies=[e])
    edges = g.edges()
    return edge_labels({"e": e, "m": m}, edges), [d for _, _, d in edges]


@case("graph.add_node.runs", cite=DOC_GRAPH_ADD_NODE_CREATES_NEW + " -- creates a new node described by "
                                  "nodeParams (which does its work when the graph is launched)", apis=("GraphAddNode", "GraphNodeGetType", "GraphLaunch"),
      requires=("generic_add_node",), expect=(NodeType.MEMSET, b"\x3c" * 8))
def _(t: CaseContext) -> Any:
    """A memset node made by the generic form is a memset node of the graph and does its work."""
    buf = _zeroed(t)
    g = t.graph()
    n = g.add_node(NodeType.MEMSET, dst=buf, value=0x3C, count=N)
    launch(t, g)
    return t.runtime_type(n), buf.to_bytes(8)


@case("graph.add_node.same_shape_as_typed", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphAddNode: \"Adds a node of arbitrary type to "
                                                 "a graph\" -- adds a node of arbitrary type (the same nodes the type-specific functions add)", apis=("GraphAddNode", "GraphNodeGetType"),
      requires=("generic_add_node",),
      expect=((["empty", "event_record", "memset"], [("empty", "memset"), ("memset", "event_record")]),) * 2)
def _(t: CaseContext) -> Any:
    """Generic and type-specific construction give graphs of the same shape (runtime types)."""
    buf = t.malloc(N)
    ev = t.event()
    typed_graph = t.graph()
    a = typed_graph.add_empty()
    a.memset(buf, 1, 16).event_record(ev)
    generic = t.graph()
    b = generic.add_node(NodeType.EMPTY)
    c = generic.add_node(NodeType.MEMSET, dependencies=[b], dst=buf, value=1, count=16)
    generic.add_node(NodeType.EVENT_RECORD, dependencies=[c], event=ev)
    return shape(t, typed_graph), shape(t, generic)


@case("graph.add_node.kernel_refused", kind="binding", cite=PYGRAPHRT + "add_node takes EMPTY, MEMSET, HOST, GRAPH, "
      "EVENT_RECORD, WAIT_EVENT, MEM_ALLOC, MEM_FREE; other types raise NotSupported",
      apis=("GraphAddNode",), raises=errors.NotSupported)
def _(t: CaseContext) -> Any:
    """Kernel nodes are not made through pygraphrt's generic form."""
    t.graph().add_node(NodeType.KERNEL)


@case("graph.add_node.missing_parameter", kind="binding", cite=ADD_NODE + "the type-specific parameters in the union "
      "member; " + PYCHECK + " naming what is missing", apis=("GraphAddNode",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A memset without value and count is refused."""
    buf = t.malloc(N)
    t.graph().add_node(NodeType.MEMSET, dst=buf)


@case("graph.add_node.unknown_parameter", kind="binding", cite=ADD_NODE + "the type-specific parameters in the union "
      "member; " + PYCHECK + " naming what it does not take", apis=("GraphAddNode",),
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """An empty node takes no parameters."""
    t.graph().add_node(NodeType.EMPTY, value=3)


@case("graph.add_node.event_not_an_event", kind="binding", cite=ADD_NODE + "nodeParams.eventRecord.event is an event; "
      + PYCHECK, apis=("GraphAddNode",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """The generic event record node needs an Event."""
    t.graph().add_node(NodeType.EVENT_RECORD, event=1234)


@case("graph.add_node.host_not_callable", kind="binding", cite=ADD_NODE + "nodeParams.host.fn is the CPU function; "
      + PYCHECK, apis=("GraphAddNode",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """The generic host node needs a callable."""
    t.graph().add_node(NodeType.HOST, fn=None)


@case("graph.add_node.foreign_dependency", kind="binding",
      cite=ADD_NODE + "pDependencies are nodes of graph; " + PYCHECK,
      apis=("GraphAddNode",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """The generic form refuses a dependency of another graph."""
    g1, g2 = t.graph(), t.graph()
    a = g1.add_empty()
    g2.add_node(NodeType.EMPTY, dependencies=[a])


@case("graph.add_node.duplicate_dependency", cite=DOC_GRAPH_ADD_NODE_CREATES_NEW + " -- pDependencies may not "
                                                  "have any duplicate entries; returns cudaErrorInvalidValue",
      apis=("GraphAddNode",), requires=("generic_add_node",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """The generic form refuses the same dependency twice."""
    g = t.graph()
    a = g.add_empty()
    before = t.snapshot(graph=g)
    try:
        t.call_under_test(g.add_node, NodeType.EMPTY, dependencies=[a, a])
    finally:
        t.check_equal(t.snapshot(graph=g), before, "the graph after the refused add")


# ============================================================================ destroying nodes
@case("graph.destroy_node.severs_edges", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphDestroyNode: \"This operation also severs "
                                              "any dependencies of other nodes on node and vice versa\" -- removes node from its graph; this "
                                              "operation also severs any dependencies of other nodes on node and vice versa",
      apis=("GraphDestroyNode", "GraphGetNodes", "GraphGetEdges", "GraphGetRootNodes"),
      expect=((3, 2, 1), (2, 0, 2)))
def _(t: CaseContext) -> Any:
    """Destroying the middle of a -> b -> c leaves a and c unconnected (nodes, edges, roots counted by the runtime)."""
    g = t.graph()
    a = g.add_empty()
    b = a.empty()
    b.empty()
    before = counts(t, g)
    b.destroy()
    return before, counts(t, g)


@case("graph.destroy_node.is_valid_false", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphDestroyNode: \"Removes node from its graph\" "
                                                "-- removes node from its graph; pygraphrt graph API: the node object is no longer valid", apis=("GraphDestroyNode", "GraphGetNodes"), expect=(0, False, True))
def _(t: CaseContext) -> Any:
    """A destroyed node is gone from its graph (the runtime's count) and no longer valid; its graph still is."""
    g = t.graph()
    a = g.add_empty()
    a.destroy()
    return raw_count(t, "GraphGetNodes", g.handle), a.is_valid, g.is_valid


@case("graph.destroy_node.twice", kind="binding", cite=DESTROY_NODE + "removes node from its graph; " + PYGRAPHRT
      + "a destroyed node raises InvalidResourceHandle", apis=("GraphDestroyNode",),
      raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """A node cannot be destroyed twice."""
    a = t.graph().add_empty()
    a.destroy()
    a.destroy()


@case("graph.destroy_node.params_after", kind="binding", cite=DESTROY_NODE + "removes node from its graph; " + PYGRAPHRT
      + "a destroyed node raises InvalidResourceHandle", apis=("GraphDestroyNode", "GraphMemsetNodeGetParams"),
      raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """A destroyed node has no parameters to read."""
    buf = t.malloc(N)
    m = t.graph().add_memset(buf, 1, 16)
    m.destroy()
    return m.params


@case("graph.destroy_node.dependent_becomes_root", cite="CUDA Runtime API 13.0, Graph Management, cudaGraphDestroyNode: severs any dependencies of "
                                                        "other nodes on node; CUDA Runtime API 13.5, Graph Management, cudaGraphGetRootNodes: "
                                                        "\"Returns a graph's root nodes\" -- returns the graph's root nodes",
      apis=("GraphDestroyNode", "GraphGetRootNodes"), expect=(1, True))
def _(t: CaseContext) -> Any:
    """Once its only dependency is destroyed, a node is a root."""
    g = t.graph()
    a = g.add_empty()
    b = a.empty()
    a.destroy()
    n, entries = raw_list(t, "GraphGetRootNodes", g.handle, 1)
    return n, entries == [int(b)]


@case("graph.destroy_node.then_runs", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphDestroyNode: \"Removes node from its graph\" "
                                           "-- removes node from its graph (its work is no longer done)", apis=("GraphDestroyNode", "GraphLaunch"), expect=b"\x01" * 8)
def _(t: CaseContext) -> Any:
    """A destroyed node's work does not run."""
    buf = _zeroed(t)
    g = t.graph()
    first = g.add_memset(buf, 1, N)
    second = first.memset(buf, 2, N)
    second.destroy()
    launch(t, g)
    return buf.to_bytes(8)


@case("graph.destroy_node.null", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphDestroyNode: \"node - Node to remove\" -- "
                                      "node - node to remove; returns cudaErrorInvalidValue" + NULL_ARG, apis=("GraphDestroyNode",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """GraphDestroyNode(NULL) is refused."""
    t.call_under_test(t.call, "GraphDestroyNode", t.NULL)
