"""Filling node parameters: the per-type structs and the generic node-params union.

The ``*_fields`` helpers validate and write one kind of parameters into any
struct with the runtime's field names, so the type-specific APIs
(``GraphAddMemsetNode``, ``GraphExecHostNodeSetParams``, ...) and the generic
form (``GraphAddNode``, ``GraphNodeSetParams``, ``GraphExecNodeSetParams``)
share them.  The union's member names are the same on CUDA and HIP (``memset``,
``host``, ``graph``, ``eventRecord``, ``eventWait``, ``alloc``, ``free``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from .. import errors
from .._handles import HostPayload, trampoline
from .._operands import count as _count
from .._operands import ordinal as _ordinal
from .._operands import ptr as _ptr
from ..enums import NodeType

if TYPE_CHECKING:
    from ._graph import Graph


def memset_fields(backend: Any, target: Any, dst: Any, value: int, count: int,
                  element_size: int = 1, height: int = 1, pitch: int = 0, what: str = "memset") -> None:
    """Validate and write memset parameters (dst, value, elementSize, width, height, pitch)."""
    # (an int: 1.0 equals 1, and then 1 << 8.0 raised TypeError)
    if not isinstance(element_size, int) or isinstance(element_size, bool) or element_size not in (1, 2, 4):
        raise errors.InvalidValue(what, detail="element_size must be 1, 2 or 4")
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << (8 * element_size):
        raise errors.InvalidValue(what, detail=f"value {value!r} does not fit {element_size} byte(s)")
    target.dst = _ptr(backend, dst)
    target.value = value
    target.elementSize = element_size
    target.width = _count(count)
    target.height = _count(height)
    target.pitch = _count(pitch)


_MEMSET_FIELDS = ("dst", "value", "elementSize", "width", "height", "pitch")


class Open:
    """What stands for a buffer in ``Graph._memset_last`` where ``dst`` was an address: as a
    buffer's, its ``_handle`` is not None while the memory may be set (always, for an address)."""

    __slots__ = ("_handle",)

    def __init__(self) -> None:
        self._handle = True


OPEN = Open()
#: Graph._memset_last when the struct holds nothing add_memset packed: no argument is its first
#: object (a private one), so the test finds a difference at once.
NO_MEMSET: tuple[Any, ...] = (Open(),) * 13


def memset_packer(ffi: Any, ctype: str) -> tuple[Any, Callable[..., None], Callable[..., None]]:
    """A zeroed memset-params struct of ``ctype``, ``pack(dst, value, element_size, width,
    height, pitch)`` writing already validated values into it (``dst`` an int address) in
    one ``struct.pack_into`` laid out by the binding's field offsets, and ``pack_at(buf,
    offset, dst, ...)`` writing one such struct into a buffer (``Graph.add_nodes``).

    For the hot path of ``Graph.add_memset``: one struct per graph, refilled per node
    (the runtime copies the parameters when it makes the node).
    """
    import struct

    p = ffi.new(f"{ctype} *")
    fields = dict(ffi.typeof(ctype).fields)
    codes = {4: "I", 8: "Q"}
    layout = sorted((fields[n].offset, ffi.sizeof(fields[n].type), n) for n in _MEMSET_FIELDS)
    fmt, at = "=", 0
    for offset, size, _ in layout:
        if offset < at or size not in codes:
            break
        fmt += "x" * (offset - at) + codes[size]
        at = offset + size
    else:
        pack_into = struct.Struct(fmt).pack_into
        buf = ffi.buffer(p)
        args = ", ".join(n for _, _, n in layout)
        # The struct's fields in offset order (they differ between CUDA and HIP).
        pack = eval(f"lambda dst, value, elementSize, width, height, pitch: _pack(_buf, 0, {args})",
                    {"_pack": pack_into, "_buf": buf})
        pack_at = eval(f"lambda buf, at, dst, value, elementSize, width, height, pitch: "
                       f"_pack(buf, at, {args})", {"_pack": pack_into})
        return p, pack, pack_at
    bits = ffi.cast("uintptr_t *", ffi.addressof(p, "dst"))
    size = ffi.sizeof(ctype)

    def pack_fields(dst: int, value: int, element_size: int, width: int, height: int, pitch: int) -> None:
        bits[0] = dst
        p.value, p.elementSize, p.width, p.height, p.pitch = value, element_size, width, height, pitch

    def pack_fields_at(buf: Any, at: int, *values: int) -> None:
        pack_fields(*values)
        buf[at:at + size] = ffi.buffer(p)

    return p, pack_fields, pack_fields_at


def host_fields(backend: Any, target: Any, fn: Callable[[], Any], sink: Any) -> HostPayload:
    """Point a host-node struct at the trampoline with ``fn``; return the payload to keep alive."""
    payload = HostPayload(backend, fn, sink)
    target.fn = trampoline(backend)
    target.userData = payload.c_handle
    return payload


def alloc_fields(backend: Any, target: Any, size: int, device: Any) -> None:
    """Write graph-memory allocation parameters: pinned device memory of ``size`` bytes on
    ``device`` (a Device or an ordinal; None: the current device)."""
    ops = backend.ops
    if device is None:
        cur = backend.ffi.new("int *")
        ops.call("GetDevice", cur)
        device = cur[0]
    else:
        device = _ordinal(device, "mem alloc node")
    target.poolProps.allocType = ops.const("MemAllocationTypePinned")
    target.poolProps.location.type = ops.const("MemLocationTypeDevice")
    target.poolProps.location.id = device
    target.bytesize = _count(size)

# node type -> (the keyword arguments it takes, the required ones)
PARAMS: dict[NodeType, tuple[set[str], set[str]]] = {
    NodeType.EMPTY: (set(), set()),
    NodeType.MEMSET: ({"dst", "value", "count", "element_size", "height", "pitch"}, {"dst", "value", "count"}),
    NodeType.HOST: ({"fn", "spin_wait"}, {"fn"}),
    NodeType.GRAPH: ({"child"}, {"child"}),
    NodeType.EVENT_RECORD: ({"event"}, {"event"}),
    NodeType.WAIT_EVENT: ({"event"}, {"event"}),
    NodeType.MEM_ALLOC: ({"size", "device"}, {"size"}),
    NodeType.MEM_FREE: ({"dptr"}, {"dptr"}),
}


def fill(graph: Any, node_type: NodeType, kw: dict[str, Any], sink: Any,
         keep: Callable[[Any], None], graph_class: "type[Graph]") -> Any:
    """A filled node-params union for ``node_type``; operands go to ``keep``.  ``graph_class``:
    Graph, what a child graph must be (graph/_graph, its caller, sits above this module)."""
    from ..device import DeviceBuffer, Event
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
        memset_fields(b, p.memset, kw["dst"], kw["value"], kw["count"], kw.get("element_size", 1),
                      kw.get("height", 1), kw.get("pitch", 0), what="add_node")
        if not isinstance(kw["dst"], int):
            keep(kw["dst"])
    elif node_type is NodeType.HOST:
        keep(host_fields(b, p.host, kw["fn"], sink))
        if type(kw.get("spin_wait", False)) is not bool:  # (a value, refused before the versions are)
            raise errors.InvalidValue("add_node", detail=f"spin_wait must be True or False, got {kw['spin_wait']!r}")
        if kw.get("spin_wait"):
            # syncMode of the V2 host params came with cudaLaunchHostFunc_v2 (CUDA 13.2); an
            # older runtime would silently ignore it, so it is refused there, with the versions.
            sym = f"{ops.prefix}LaunchHostFunc_v2"
            if not ops.has(sym):
                why = ops.unavailable.get(sym, f"{sym} is not in the {ops.name} runtime bound as {ops.binding}")
                raise errors.NotSupported("add_node", vendor=ops.name, detail=f"spin_wait host nodes: {why}")
            p.host.syncMode = ops.const("HostTaskSpinWait")
    elif node_type is NodeType.GRAPH:
        child = kw["child"]
        if not isinstance(child, graph_class) or child is graph:
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
        alloc_fields(b, p.alloc, kw["size"], kw.get("device"))
    elif node_type is NodeType.MEM_FREE:
        dptr = kw["dptr"]
        p.free.dptr = _ptr(b, dptr.dptr if isinstance(dptr, MemAllocNode) else dptr)
    if isinstance(kw.get("dst"), DeviceBuffer):
        graph._same_backend(kw["dst"], "add_node")
    return p
