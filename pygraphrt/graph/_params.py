"""The generic node-params form (``GraphAddNode``, ``GraphNodeSetParams``, ``GraphExecNodeSetParams``).

One function fills the vendor's node-params union from keyword arguments; the
union's member names are the same on CUDA and HIP (``memset``, ``host``,
``graph``, ``eventRecord``, ``eventWait``, ``alloc``, ``free``).
"""

from __future__ import annotations

from typing import Any, Callable

from .. import errors
from .._handles import HostPayload, trampoline
from ..enums import NodeType

# node type -> (the keyword arguments it takes, the required ones)
PARAMS: dict[NodeType, tuple[set[str], set[str]]] = {
    NodeType.EMPTY: (set(), set()),
    NodeType.MEMSET: ({"dst", "value", "count", "element_size", "height", "pitch"}, {"dst", "value", "count"}),
    NodeType.HOST: ({"fn"}, {"fn"}),
    NodeType.GRAPH: ({"child"}, {"child"}),
    NodeType.EVENT_RECORD: ({"event"}, {"event"}),
    NodeType.WAIT_EVENT: ({"event"}, {"event"}),
    NodeType.MEM_ALLOC: ({"size", "device"}, {"size"}),
    NodeType.MEM_FREE: ({"dptr"}, {"dptr"}),
}


def fill(graph: Any, node_type: NodeType, kw: dict[str, Any], sink: Any,
         keep: Callable[[Any], None]) -> Any:
    """A filled node-params union for ``node_type``; operands go to ``keep``."""
    from ..device import DeviceBuffer, Event, _count, _ptr
    from ._graph import Graph
    from ._node import MemAllocNode

    b = graph._backend
    ops, ffi = b.ops, b.ffi
    if node_type not in PARAMS:
        raise errors.NotSupported("add_node", detail=f"{node_type} nodes are not available in the "
                                                     "generic form here (kernel nodes come later)")
    allowed, required = PARAMS[node_type]
    unknown = set(kw) - allowed
    missing = required - set(kw)
    if unknown or missing:
        raise errors.InvalidValue("add_node", detail=f"{node_type.value} takes {sorted(allowed)}; "
                                  f"unknown {sorted(unknown)}, missing {sorted(missing)}")
    p = ffi.new(f"{ops.node_params_type} *")
    p.type = ops.value(ops.node_types, node_type, f"{ops.prefix}GraphAddNode")
    if node_type is NodeType.MEMSET:
        size = kw.get("element_size", 1)
        value = kw["value"]
        if size not in (1, 2, 4):
            raise errors.InvalidValue("add_node", detail="element_size must be 1, 2 or 4")
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << (8 * size):
            raise errors.InvalidValue("add_node", detail=f"value {value!r} does not fit {size} byte(s)")
        m = p.memset
        m.dst = _ptr(b, kw["dst"])
        m.value = value
        m.elementSize = size
        m.width = _count(kw["count"])
        m.height = _count(kw.get("height", 1))
        m.pitch = _count(kw.get("pitch", 0))
        if not isinstance(kw["dst"], int):
            keep(kw["dst"])
    elif node_type is NodeType.HOST:
        payload = HostPayload(b, kw["fn"], sink)
        p.host.fn = trampoline(b)
        p.host.userData = payload.c_handle
        keep(payload)
    elif node_type is NodeType.GRAPH:
        child = kw["child"]
        if not isinstance(child, Graph) or child is graph:
            raise errors.InvalidValue("add_node", detail="child must be another Graph")
        p.graph.graph = child.handle
        keep(child._keep)
    elif node_type in (NodeType.EVENT_RECORD, NodeType.WAIT_EVENT):
        event = kw["event"]
        if not isinstance(event, Event):
            raise errors.InvalidValue("add_node", detail=f"{event!r} is not an Event")
        (p.eventRecord if node_type is NodeType.EVENT_RECORD else p.eventWait).event = event.handle
        keep(event)
    elif node_type is NodeType.MEM_ALLOC:
        device = kw.get("device")
        if device is None:
            cur = ffi.new("int *")
            ops.call("GetDevice", cur)
            device = cur[0]
        a = p.alloc
        a.poolProps.allocType = ops.const("MemAllocationTypePinned")
        a.poolProps.location.type = ops.const("MemLocationTypeDevice")
        a.poolProps.location.id = device
        a.bytesize = _count(kw["size"])
    elif node_type is NodeType.MEM_FREE:
        dptr = kw["dptr"]
        p.free.dptr = _ptr(b, dptr.dptr if isinstance(dptr, MemAllocNode) else dptr)
    if isinstance(kw.get("dst"), DeviceBuffer):
        graph._same_backend(kw["dst"], "add_node")
    return p
