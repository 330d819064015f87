"""The nodes ``Graph.add_nodes`` made: a sequence whose node objects are made when first read.

The bulk loops (the hot module's ``add_nodes``, the generated ``_pgr_add_nodes``, ABI mode's
``_bulk._abi_loop``) have each node's runtime handle, as an address, and its class written into
arrays here instead of making a :class:`~pygraphrt.graph.Node` per spec: a graph of many thousands of nodes built
for instantiation never needs most of them as objects, and three objects a node (handle,
node, node-table entry) were most of the bulk loop's time and memory.  Reading an entry
makes its node through the graph's node table, so it is the graph's one object of that node
(the same the graph's ``nodes()``, a dependency list or any other reader gives); the list
keeps it from then on.

A handle stays meaningful only while its node exists, so the graph tells the lists with
unread entries when nodes go (:meth:`NodeList._gone`, from ``Node.destroy``, a failed
edge-data add and recapture): a gone entry reads as a destroyed node, never as whatever
node the runtime later made at the same address.  Entries of a closed graph read as nodes
of a closed graph (``is_valid`` False).
"""

from __future__ import annotations

import operator
import struct
from array import array
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Callable, Iterator, overload

from ._node import EmptyNode, MemsetNode, Node, new_node

if TYPE_CHECKING:
    from ._graph import Graph

# The class of an entry the bulk loops wrote, by the code they wrote (_pgr_bulk_add,
# _Batch.flush and _abi_loop: 0 an empty node, 1 a memset node).
KIND_CLASSES: tuple[type[Node], ...] = (EmptyNode, MemsetNode)
# Entries an iteration makes the objects of at once (one C call where the entries were made in C).
_CHUNK = 1024
# Array type code of a pointer-sized unsigned int (a node handle as an address).
ADDRESS_CODE = next(c for c in ("Q", "L", "I") if array(c).itemsize == struct.calcsize("P"))


class NodeList(Sequence[Node]):
    """The nodes of one :meth:`Graph.add_nodes` call, in the order of its specs.

    A read-only sequence (``len``, indexing, slices as lists, iteration, ``==`` with lists
    and tuples of nodes).  Node objects are made when an entry is first read, then kept.
    """

    __slots__ = ("_graph", "_handles", "_kinds", "_cache", "_n", "_maker", "__weakref__")

    def __init__(self, graph: "Graph", capacity: int) -> None:
        self._graph = graph
        # Entry i: the node object once made (_cache[i]); until then its address (_handles[i],
        # 0 for none) and class code (_kinds[i]), written by the bulk loops.
        self._handles = array(ADDRESS_CODE, [0]) * capacity
        self._kinds = bytearray(capacity)
        self._cache: list[Node | None] = [None] * capacity
        self._n = 0  # entries made so far
        # The hot module's make_nodes, where the entries were written in C: it makes the objects
        # of a chunk of entries at once (graph/_hot.node_maker).
        self._maker: Any = None

    # -- building (Graph.add_nodes) ------------------------------------------
    def _append(self, node: Node) -> None:
        """Entry ``len(self)``: a node object a one-node method made."""
        self._cache[self._n] = node
        self._n += 1

    def _made_count(self) -> int:
        """How many entries are made, counted from ``len(self)`` (after a bulk loop stopped
        on an error: it writes entries in order)."""
        n, handles, cache, cap = self._n, self._handles, self._cache, len(self._cache)
        while n < cap and (handles[n] or cache[n] is not None):
            n += 1
        return n

    def _entry_handles(self) -> list[Any]:
        """The runtime's handles of the entries made, without making their node objects (as
        the graph's table keys them: cffi pointers, which compare by address)."""
        ffi = self._graph._backend.ffi
        ctype = ffi.typeof(f"{self._graph._backend.ops.prefix}GraphNode_t")
        cast, handles = ffi.cast, self._handles
        out = []
        for i, node in enumerate(self._cache[:self._n]):
            if node is not None:
                if node._handle is not None:
                    out.append(node._handle)
            elif handles[i]:
                out.append(cast(ctype, handles[i]))
        return out

    # -- nodes that went (called by the graph) -------------------------------
    def _gone(self, is_gone: Callable[[int], bool], objects: dict[int, Node]) -> None:
        """Entries whose address ``is_gone`` says no longer names a node of the graph
        (``objects``: the graph's objects of such nodes, by address)."""
        handles = self._handles
        for i in range(len(handles)):
            a = handles[i]
            if a and is_gone(a):
                self._mark_gone(i, objects.get(a))

    def _gone_address(self, address: int, node: Node | None) -> None:
        """The entry of ``address``, whose node was destroyed (``node``: the graph's object of
        it, if any); addresses of live nodes are unique, and a gone entry's is zeroed."""
        try:
            i = self._handles.index(address)
        except ValueError:
            return
        self._mark_gone(i, node)

    def _mark_gone(self, i: int, node: Node | None) -> None:
        self._handles[i] = 0
        if self._cache[i] is None:  # a made object is the graph's, which its destroyer invalidates
            if node is None:
                node = new_node(KIND_CLASSES[self._kinds[i]], self._graph, None)
            self._cache[i] = node

    # -- the sequence ---------------------------------------------------------
    def _node(self, i: int) -> Node:
        node = self._cache[i]
        if node is None:
            node = self._cache[i] = self._graph._made_node(self._handles[i], KIND_CLASSES[self._kinds[i]])
        return node

    def _make(self, start: int, stop: int) -> None:
        """The objects of entries ``start`` to ``stop``, made in one C call where there is one
        (it leaves what it cannot make to _node)."""
        if self._maker is not None:
            self._maker(self._graph, self._handles, self._kinds, self._cache, start, stop)

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> Node: ...

    @overload
    def __getitem__(self, i: slice) -> list[Node]: ...

    def __getitem__(self, i: int | slice) -> Node | list[Node]:
        if isinstance(i, slice):
            r = range(*i.indices(self._n))
            if r:
                self._make(min(r), max(r) + 1)
            return [self._node(j) for j in r]
        try:
            j = operator.index(i)
        except TypeError:  # (as list says it)
            raise TypeError(f"NodeList indices must be integers or slices, not {type(i).__name__}") from None
        if j < 0:
            j += self._n
        if not 0 <= j < self._n:
            raise IndexError("NodeList index out of range")
        return self._node(j)

    def __iter__(self) -> Iterator[Node]:
        cache = self._cache
        for start in range(0, self._n, _CHUNK):
            stop = min(start + _CHUNK, self._n)
            self._make(start, stop)
            for i in range(start, stop):
                node = cache[i]
                yield node if node is not None else self._node(i)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (NodeList, list, tuple)):
            return NotImplemented
        return len(self) == len(other) and all(a is b or a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<NodeList of {self._n} node(s)>"

