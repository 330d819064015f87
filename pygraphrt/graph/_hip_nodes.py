"""HIP's own node types: batch memory operations and copies to / from a symbol.

HIP adds node types CUDA's runtime API does not have: ``hipGraphNodeTypeBatchMemOp``
(wait-value / write-value / flush / barrier operations, the stream form being
``hipStreamBatchMemOp``) and memcpy nodes that address a ``__device__`` variable by its
*symbol* (``hipGraphAddMemcpyNodeToSymbol`` / ``FromSymbol``).  Symbols are the host-side
addresses hipcc registers for device variables; HIP offers no readback of symbol nodes.
On CUDA these raise ``NotSupported``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from .. import errors
from .._operands import count as _count
from .._operands import ptr as _ptr
from ..enums import EdgeData, NodeType
from ._node import NODE_CLASSES, Node

if TYPE_CHECKING:
    from ._graph import Graph

# MemOp.kind -> HIP's hipStreamBatchMemOpType member (the union member it fills)
_OPS = {
    ("wait", 32): ("hipStreamMemOpWaitValue32", "waitValue"),
    ("wait", 64): ("hipStreamMemOpWaitValue64", "waitValue"),
    ("write", 32): ("hipStreamMemOpWriteValue32", "writeValue"),
    ("write", 64): ("hipStreamMemOpWriteValue64", "writeValue"),
    ("flush", 0): ("hipStreamMemOpFlushRemoteWrites", "flushRemoteWrites"),
    ("barrier", 0): ("hipStreamMemOpBarrier", "memoryBarrier"),
}


@dataclass(frozen=True)
class MemOp:
    """One operation of a batch-mem-op node: build with the class methods."""

    kind: str            # "wait", "write", "flush" or "barrier"
    address: int = 0
    value: int = 0
    bits: int = 0        # 32 or 64 for wait / write
    flags: int = 0

    @classmethod
    def wait_value(cls, address: Any, value: int, *, bits: int = 32, flags: int = 0) -> "MemOp":
        """Wait until the value at ``address`` satisfies ``flags`` (HIP's wait-value flags) against ``value``."""
        return cls("wait", _addr(address), value, bits, flags)

    @classmethod
    def write_value(cls, address: Any, value: int, *, bits: int = 32, flags: int = 0) -> "MemOp":
        """Write ``value`` to ``address``."""
        return cls("write", _addr(address), value, bits, flags)

    @classmethod
    def flush_remote_writes(cls, flags: int = 0) -> "MemOp":
        return cls("flush", flags=flags)

    @classmethod
    def barrier(cls, flags: int = 0) -> "MemOp":
        return cls("barrier", flags=flags)


def _addr(a: Any) -> int:
    own = getattr(a, "__pygraphrt_pointer__", None)
    if own is not None:
        return int(own)
    if not isinstance(a, int) or isinstance(a, bool) or a < 0:
        raise errors.InvalidValue("MemOp", detail=f"{a!r} is not an address")
    return a


def _require_hip(graph: "Graph", what: str) -> None:
    if graph._backend.vendor != "hip":
        raise errors.NotSupported(what, vendor=graph._backend.vendor,
                                  detail="batch-mem-op and memcpy-symbol nodes are HIP node types")


def _batch_params(graph: "Graph", ops: Sequence[MemOp], flags: int, what: str) -> tuple[Any, list[Any]]:
    b = graph._backend
    ffi, lib = b.ffi, b.lib
    ops = list(ops)
    if not ops or not all(isinstance(o, MemOp) for o in ops):
        raise errors.InvalidValue(what, detail="give one or more MemOp operations")
    arr = ffi.new("hipStreamBatchMemOpParams[]", len(ops))
    for slot, op in zip(arr, ops):
        key = (op.kind, op.bits)
        if key not in _OPS:
            raise errors.InvalidValue(what, detail=f"{op!r}: wait/write take bits=32 or 64")
        member, field = _OPS[key]
        target = getattr(slot, field)
        target.operation = int(getattr(lib, member))
        target.flags = op.flags
        if op.kind in ("wait", "write"):
            target.address = ffi.cast("hipDeviceptr_t", op.address)
            if op.bits == 32:
                target.value = op.value
            else:
                target.value64 = op.value
    p = ffi.new("hipBatchMemOpNodeParams *")
    p.ctx = ffi.NULL
    p.count = len(ops)
    p.paramArray = arr
    p.flags = flags
    return p, [arr]


def _unpack(graph: "Graph", p: Any) -> dict[str, Any]:
    b = graph._backend
    by_value = {int(getattr(b.lib, member)): key for key, (member, _) in _OPS.items()}
    ops = []
    for i in range(p.count):
        u = p.paramArray[i]
        kind, bits = by_value[int(u.operation)]
        if kind in ("wait", "write"):
            v = u.waitValue if kind == "wait" else u.writeValue
            ops.append(MemOp(kind, int(b.ffi.cast("uintptr_t", v.address)),
                             int(v.value if bits == 32 else v.value64), bits, int(v.flags)))
        else:
            v = u.flushRemoteWrites if kind == "flush" else u.memoryBarrier
            ops.append(MemOp(kind, flags=int(v.flags)))
    return {"ops": ops, "flags": int(p.flags)}


class BatchMemOpNode(Node):
    """HIP: a node of wait-value / write-value / flush / barrier operations."""

    __slots__ = ()
    node_type = NodeType.BATCH_MEM_OP

    @property
    def params(self) -> dict[str, Any]:
        return _unpack(self._graph, self._query("hipBatchMemOpNodeParams", "GraphBatchMemOpNodeGetParams"))

    def set_params(self, ops: Sequence[MemOp], flags: int = 0) -> None:  # type: ignore[override]
        g = self._graph
        p, keep = _batch_params(g, ops, flags, "BatchMemOpNode.set_params")
        g._backend.ops.call("GraphBatchMemOpNodeSetParams", self.handle, p)
        g._keep.append(keep)


class _MemcpySymbolNode(Node):
    __slots__ = ()
    _to = True

    @property
    def params(self) -> dict[str, Any]:
        raise errors.NotSupported(f"{type(self).__name__}.params", vendor="hip",
                                  detail="HIP has no readback of memcpy-symbol nodes")

    def set_params(self, symbol: int, buffer: Any, count: int, offset: int = 0) -> None:  # type: ignore[override]
        """``buffer`` is the source (to-symbol) or the destination (from-symbol)."""
        g = self._graph
        args = _symbol_args(g, symbol, buffer, count, offset, self._to)
        g._backend.ops.call("GraphMemcpyNodeSetParams" + ("ToSymbol" if self._to else "FromSymbol"),
                            self.handle, *args)
        g._keep_operand(buffer)


class MemcpyToSymbolNode(_MemcpySymbolNode):
    __slots__ = ()
    node_type = NodeType.MEMCPY_TO_SYMBOL


class MemcpyFromSymbolNode(_MemcpySymbolNode):
    __slots__ = ()
    node_type = NodeType.MEMCPY_FROM_SYMBOL
    _to = False


def _symbol_args(graph: "Graph", symbol: Any, buffer: Any, count: int, offset: int, to: bool) -> tuple[Any, ...]:
    b = graph._backend
    sym = b.ffi.cast("void *", _addr(symbol))
    buf = _ptr(b, buffer)
    kind = b.ops.const("MemcpyDefault")
    if to:
        return (sym, buf, _count(count), _count(offset), kind)
    return (buf, sym, _count(count), _count(offset), kind)


def add_batch_mem_op(graph: "Graph", ops: Sequence[MemOp], flags: int, dependencies: Iterable[Node] | None,
                     edges: Sequence[EdgeData] | None) -> BatchMemOpNode:
    _require_hip(graph, "Graph.add_batch_mem_op")
    p, keep = _batch_params(graph, ops, flags, "Graph.add_batch_mem_op")
    node = graph._add("GraphAddBatchMemOpNode", dependencies, edges, p, cls=BatchMemOpNode)
    graph._keep.append(keep)
    return node  # type: ignore[return-value]


def add_memcpy_symbol(graph: "Graph", to: bool, symbol: Any, buffer: Any, count: int, offset: int,
                      dependencies: Iterable[Node] | None, edges: Sequence[EdgeData] | None) -> Node:
    what = "Graph.add_memcpy_to_symbol" if to else "Graph.add_memcpy_from_symbol"
    _require_hip(graph, what)
    args = _symbol_args(graph, symbol, buffer, count, offset, to)
    node = graph._add("GraphAddMemcpyNode" + ("ToSymbol" if to else "FromSymbol"), dependencies, edges, *args,
                      cls=MemcpyToSymbolNode if to else MemcpyFromSymbolNode)
    graph._keep_operand(buffer)
    return node


NODE_CLASSES.update({c.node_type: c for c in (BatchMemOpNode, MemcpyToSymbolNode, MemcpyFromSymbolNode)})

__all__ = ["BatchMemOpNode", "MemOp", "MemcpyFromSymbolNode", "MemcpyToSymbolNode"]
