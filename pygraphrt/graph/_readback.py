"""What CUDA 13.1-13.3 added for reading graphs back: generic node parameters and ids.

* ``cudaGraphNodeGetParams`` (CUDA >= 13.2) describes any node in the generic
  node-params union.  ``node.params`` asks it first where the runtime (and
  driver) has it and decodes the union into the same keys as the
  type-specific getters, which remain the fallback (older runtimes, HIP, and
  node types without a decoder here: kernel nodes keep their own readback,
  which reads any kernel through the driver API and decodes arguments).
* ``cudaGraphGetId`` / ``cudaGraphExecGetId`` / ``cudaGraphNodeGetLocalId`` /
  ``cudaGraphNodeGetToolsId`` / ``cudaGraphNodeGetContainingGraph`` (13.1):
  the ids ``cudaGraphDebugDotPrint`` shows, and the graph a node is in.

A runtime without them raises NotSupported naming the function, the version it
needs and the version loaded (see ``Vendor.unavailable``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from .. import errors
from ..enums import NodeType

if TYPE_CHECKING:
    from ._graph import Graph
    from ._node import Node


def _addr(ffi: Any, pointer: Any) -> int:
    return int(ffi.cast("uintptr_t", pointer))


def _memset(graph: "Graph", p: Any) -> dict[str, Any]:
    m = p.memset
    return {"dst": _addr(graph._backend.ffi, m.dst), "value": m.value, "element_size": m.elementSize,
            "width": m.width, "height": m.height, "pitch": m.pitch}


def _memcpy(graph: "Graph", p: Any) -> dict[str, Any]:
    c = p.memcpy.copyParams
    ffi = graph._backend.ffi
    return {"dst": _addr(ffi, c.dstPtr.ptr), "src": _addr(ffi, c.srcPtr.ptr),
            "dst_pitch": c.dstPtr.pitch, "src_pitch": c.srcPtr.pitch,
            "width": c.extent.width, "height": c.extent.height, "depth": c.extent.depth,
            "kind": int(c.kind)}


def _host(graph: "Graph", p: Any) -> dict[str, Any]:
    b = graph._backend
    out: dict[str, Any] = {"fn": host_callable(b, p.host.fn, p.host.userData)}
    if hasattr(p.host, "syncMode"):
        out["spin_wait"] = p.host.syncMode == b.ops.const("HostTaskSpinWait")
    return out


def host_callable(backend: Any, fn: Any, user: Any) -> Any:
    """The Python callable of a host function, where it is pygraphrt's (its trampoline with a
    live payload's token); None for anyone else's (their ``userData`` is never followed)."""
    from .._handles import payload_of, trampoline

    ffi = backend.ffi
    if user == ffi.NULL or _addr(ffi, fn) != _addr(ffi, trampoline(backend)):
        return None
    payload = payload_of(ffi, user)
    return None if payload is None else payload.fn


def _child(graph: "Graph", p: Any, owner: Any) -> dict[str, Any]:
    return {"nodes": len(graph._borrow(p.graph.graph, owner=owner).nodes())}


def _event(field: str) -> Callable[["Graph", Any], dict[str, Any]]:
    def decode(graph: "Graph", p: Any) -> dict[str, Any]:
        return {"event": _addr(graph._backend.ffi, getattr(p, field).event)}

    return decode


def _alloc(graph: "Graph", p: Any) -> dict[str, Any]:
    a = p.alloc
    return {"dptr": _addr(graph._backend.ffi, a.dptr), "bytesize": a.bytesize,
            "device": a.poolProps.location.id}


def _free(graph: "Graph", p: Any) -> dict[str, Any]:
    return {"dptr": _addr(graph._backend.ffi, p.free.dptr)}


def _conditional(graph: "Graph", p: Any, owner: Any) -> dict[str, Any]:
    b = graph._backend
    c = p.conditional
    kinds = {int(getattr(b.lib, member)): kind for kind, (member, _) in b.ops.conditional_kinds.items()
             if kind != "if_else" and b.ops.has(member)}
    kind = kinds.get(int(c.type), str(int(c.type)))
    if kind == "if" and c.size == 2:
        kind = "if_else"
    bodies = [graph._borrow(c.phGraph_out[i], owner=owner) for i in range(c.size)] \
        if c.phGraph_out != b.ffi.NULL else []
    return {"kind": kind, "handle": int(c.handle), "size": int(c.size),
            "bodies": [len(body.nodes()) for body in bodies]}


def _kernel(graph: "Graph", p: Any) -> dict[str, Any]:
    k = p.kernel
    ffi = graph._backend.ffi
    return {"func": _addr(ffi, k.func), "grid": (k.gridDim.x, k.gridDim.y, k.gridDim.z),
            "block": (k.blockDim.x, k.blockDim.y, k.blockDim.z), "shared_mem_bytes": k.sharedMemBytes}


# node type -> decoder of the node-params union (the ``owner`` keeps borrowed graphs' node alive)
_DECODERS: dict[NodeType, Callable[..., dict[str, Any]]] = {
    NodeType.EMPTY: lambda graph, p: {},
    NodeType.MEMSET: _memset,
    NodeType.MEMCPY: _memcpy,
    NodeType.HOST: _host,
    NodeType.WAIT_EVENT: _event("eventWait"),
    NodeType.EVENT_RECORD: _event("eventRecord"),
    NodeType.MEM_ALLOC: _alloc,
    NodeType.MEM_FREE: _free,
}
_DECODERS_OWNED: dict[NodeType, Callable[..., dict[str, Any]]] = {
    NodeType.GRAPH: _child,
    NodeType.CONDITIONAL: _conditional,
}


def decode(graph: "Graph", p: Any, owner: Any = None) -> dict[str, Any]:
    """A node-params union (``cudaGraphNodeParams *``) as a dict: ``type`` and the type's keys.

    Used for what the runtime reports (generic readback, recapture callbacks);
    kernel nodes give ``func``, ``grid``, ``block`` and ``shared_mem_bytes``.
    """
    ops = graph._backend.ops
    t = ops.node_type_of.get(int(p.type))
    out: dict[str, Any] = {"type": t if t is not None else int(p.type)}
    if t is NodeType.KERNEL:
        out.update(_kernel(graph, p))
    elif t in _DECODERS:
        out.update(_DECODERS[t](graph, p))
    elif t in _DECODERS_OWNED:
        out.update(_DECODERS_OWNED[t](graph, p, owner))
    return out


def generic_params(node: "Node") -> dict[str, Any] | None:
    """``node.params`` from ``GraphNodeGetParams``, or None where the runtime lacks it, refuses it
    for this node, or the type keeps its own readback (kernel nodes, external semaphores)."""
    b = node._graph._backend
    ops = b.ops
    t = type(node).node_type
    if t not in _DECODERS and t not in _DECODERS_OWNED:
        return None
    if not ops.has(f"{ops.prefix}GraphNodeGetParams"):
        return None
    p = b.ffi.new(f"{ops.node_params_type} *")
    rc = ops.fn("GraphNodeGetParams")(node.handle, p)
    if rc:
        ops.error(rc, f"{ops.prefix}GraphNodeGetParams")  # clears the runtime's last error
        return None
    if t is NodeType.MEMCPY or t is NodeType.MEM_ALLOC:  # what the typed getters add (several devices)
        from ..multidevice import access_of, with_copy_devices

        out = _DECODERS[t](node._graph, p)
        return with_copy_devices(out, b) if t is NodeType.MEMCPY else {**out, "peers": access_of(b, p.alloc)}
    if t in _DECODERS:
        return _DECODERS[t](node._graph, p)
    return _DECODERS_OWNED[t](node._graph, p, node)


def generic_first(typed: property) -> property:
    """``params``: the generic readback where available, else the type-specific getter."""
    getter = typed.fget
    assert getter is not None

    def params(self: "Node") -> dict[str, Any]:
        out = generic_params(self)
        return out if out is not None else getter(self)

    params.__doc__ = getter.__doc__
    setattr(params, "__wrapped__", getter)  # typed_params() reaches the type-specific getter
    return property(params, doc=getter.__doc__)


def typed_params(node: "Node") -> dict[str, Any]:
    """The type-specific readback alone: what ``node.params`` falls back to (for comparisons)."""
    getter = getattr(type(node), "params").fget
    return getattr(getter, "__wrapped__", getter)(node)


# -- ids and the containing graph -----------------------------------------------------
def _uint(backend: Any, ctype: str, api: str, handle: Any) -> int:
    out = backend.ffi.new(f"{ctype} *")
    backend.ops.call(api, handle, out)
    return int(out[0])


def graph_id(graph: "Graph") -> int:
    return _uint(graph._backend, "unsigned int", "GraphGetId", graph.handle)


def exec_id(exec_: Any) -> int:
    return _uint(exec_._backend, "unsigned int", "GraphExecGetId", exec_.handle)


def local_id(node: "Node") -> int:
    return _uint(node._graph._backend, "unsigned int", "GraphNodeGetLocalId", node.handle)


def tools_id(node: "Node") -> int:
    return _uint(node._graph._backend, "unsigned long long", "GraphNodeGetToolsId", node.handle)


def containing_graph(node: "Node") -> "Graph":
    """The graph the runtime says holds ``node``: ``node.graph`` itself when it is that graph."""
    b = node._graph._backend
    out = b.ffi.new(f"{b.ops.prefix}Graph_t *")
    b.ops.call("GraphNodeGetContainingGraph", node.handle, out)
    if out[0] == node._graph.handle:
        return node._graph
    if out[0] == b.ffi.NULL:
        raise errors.InvalidValue(f"{b.ops.prefix}GraphNodeGetContainingGraph",
                                  detail="the runtime returned no graph")
    return node._graph._borrow(out[0], owner=node)
