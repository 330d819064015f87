"""Conditional nodes: handles, IF / IF-ELSE / WHILE / SWITCH, explicit and inside a capture.

A conditional handle is a value of one graph that a kernel sets on the device
(``cudaGraphSetConditional(handle, value)``); a conditional node reads it when it runs:
IF runs its body if the value is non-zero (IF-ELSE runs body 1 otherwise), WHILE runs its
body as long as the value is non-zero (checked before each iteration), SWITCH runs body
``value`` (none if out of range).  With ``reset_each_launch`` the handle takes its
``default`` at the start of every launch.  CUDA >= 12.4 (IF, WHILE), >= 12.8 (IF-ELSE,
SWITCH); HIP has no conditional nodes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Sequence

from .. import errors
from ..enums import EdgeData, NodeType
from ._node import ConditionalNode, Node
from ._node import check_edges as _check_edges

if TYPE_CHECKING:
    from ._graph import Graph

#: Device code declaring ``cudaGraphConditionalHandle`` and ``cudaGraphSetConditional`` for
#: NVRTC programs: ``rt.Program(SET_CONDITIONAL_SOURCE + source)``.  A kernel takes the handle
#: as an ``unsigned long long`` (signature type ``cudaGraphConditionalHandle``) and calls
#: ``cudaGraphSetConditional(handle, value)``.
SET_CONDITIONAL_SOURCE = r"""
typedef __device_builtin__ unsigned long long cudaGraphConditionalHandle;
extern "C" __device__ __cudart_builtin__ void cudaGraphSetConditional(cudaGraphConditionalHandle handle,
                                                                      unsigned int value);
"""


class ConditionalHandle:
    """A conditional value of one graph; pass it (``int(h)``, or ``h`` itself) to the kernel that sets it."""

    __slots__ = ("graph", "value", "default", "reset_each_launch", "__weakref__")

    def __init__(self, graph: "Graph", value: int, default: int, reset_each_launch: bool) -> None:
        self.graph = graph
        self.value = value
        self.default = default
        self.reset_each_launch = reset_each_launch

    def __index__(self) -> int:
        return self.value

    __int__ = __index__

    def __repr__(self) -> str:
        reset = f", reset to {self.default} each launch" if self.reset_each_launch else ""
        return f"<ConditionalHandle {self.value:#x}{reset}>"


def _require(graph: "Graph", what: str, kind: str | None = None) -> None:
    b = graph._backend
    ops = b.ops
    from .._versions import version_str as _version_str

    version = f"{b.vendor} {_version_str(b.vendor, b.runtime_version)}"
    if not ops.conditional_kinds or not ops.has(f"{ops.prefix}GraphConditionalHandleCreate"):
        raise errors.NotSupported(what, vendor=ops.name, detail=f"conditional nodes need CUDA >= 12.4; "
                                                                f"this runtime is {version}")
    if kind is not None:
        member, needs = ops.conditional_kinds[kind]
        if b.runtime_version < needs or not ops.has(member):
            raise errors.NotSupported(what, vendor=ops.name, detail=f"{kind} nodes need CUDA >= "
                                      f"{needs // 1000}.{needs % 1000 // 10}; this runtime is {version}")


def create_handle(graph: "Graph", default: int, reset_each_launch: bool) -> ConditionalHandle:
    _require(graph, "Graph.conditional_handle")
    if not isinstance(default, int) or isinstance(default, bool) or not 0 <= default < 1 << 32:
        raise errors.InvalidValue("Graph.conditional_handle", detail=f"default must be an unsigned "
                                                                     f"32-bit int, got {default!r}")
    if default and not reset_each_launch:
        raise errors.InvalidValue("Graph.conditional_handle", detail="the runtime applies default only "
                                  "with reset_each_launch=True (at the start of each launch)")
    b = graph._backend
    ops = b.ops
    out = b.ffi.new(f"{ops.prefix}GraphConditionalHandle *")
    flags = int(getattr(b.lib, ops.conditional_assign_default)) if reset_each_launch else 0
    ops.call("GraphConditionalHandleCreate", out, graph.handle, default, flags)
    return ConditionalHandle(graph, int(out[0]), default, bool(reset_each_launch))


def add(graph: "Graph", kind: str, handle: Any, size: int, dependencies: Iterable[Node] | None,
        edges: Sequence[EdgeData] | None) -> ConditionalNode:
    what = f"Graph.add_{kind}"
    _require(graph, what, kind)
    if not isinstance(handle, ConditionalHandle):
        raise errors.InvalidValue(what, detail=f"{handle!r} is not a ConditionalHandle "
                                               "(Graph.conditional_handle / Capture.conditional_handle)")
    if handle.graph is not graph:
        raise errors.InvalidValue(what, detail="the handle belongs to another graph: a conditional node "
                                               "uses a handle created on its own graph")
    if not isinstance(size, int) or isinstance(size, bool) or not 1 <= size < 1 << 32:
        raise errors.InvalidValue(what, detail=f"a {kind} node needs at least one body, got {size!r}")
    deps = graph._own_all(dependencies)
    edge_list = _check_edges(deps, edges)
    b = graph._backend
    ops = b.ops
    p = b.ffi.new(f"{ops.node_params_type} *")
    p.type = ops.value(ops.node_types, NodeType.CONDITIONAL, f"{ops.prefix}GraphAddNode")
    p.conditional.handle = handle.value
    p.conditional.type = int(getattr(b.lib, ops.conditional_kinds[kind][0]))
    p.conditional.size = size
    h = ops.add_node_generic(graph.handle, [d.handle for d in deps], edge_list, p)
    node = graph._wrap(h, ConditionalNode)
    assert isinstance(node, ConditionalNode)
    from ..multidevice import record_conditional_device

    record_conditional_device(graph, node)  # (its bodies' kernels run there: checked by add_kernel(device=))
    bodies = []
    for i in range(size):
        body = graph._borrow(p.conditional.phGraph_out[i], owner=node)
        body._sink = graph._sink      # host nodes in a body report where the parent's do
        graph._keep.append(body._keep)  # what the bodies' nodes use lives as long as the parent
        bodies.append(body)
    node._cond = (kind, handle, bodies)
    return node


__all__ = ["ConditionalHandle", "SET_CONDITIONAL_SOURCE"]
