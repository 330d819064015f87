"""Race checking of simulated graphs: unordered nodes that touch the same memory.

A GPU runs two nodes of a graph concurrently unless a *path* of edges orders them; when
such nodes touch overlapping memory and at least one writes, the result depends on timing
-- a missing dependency that the simulator (which runs one node at a time) would otherwise
hide.  :func:`check` finds these pairs in a graph or an executable graph; the launch hook
(:func:`on_launch`, behind ``pygraphrt.sim.set_race_check`` / ``PYGRAPHRT_SIM_RACES``) runs
it at every launch of an executable graph, caching the analysis per executable graph.

What counts as a path
    Any chain of edges, whatever their edge data (programmatic edges included: the
    dependent kernel is expected to call ``cudaGridDependencySynchronize`` before it
    touches what the primary wrote, which the checker cannot see).  Event record / wait
    nodes inside one graph do not order anything here.  A disabled node of an executable
    graph touches nothing but still passes its dependencies on (as an empty node does).

Child graphs and conditional bodies
    Both ways: in its parent graph a child-graph or conditional node stands for *every*
    access of the graphs it owns (recursively: all bodies, since any may run), so a race
    between it and a sibling names the parent-level node and the inner node that makes the
    access; and the nodes of each owned graph are checked against each other by that
    graph's own edges.  Bodies of one conditional node are never compared with each other:
    IF/ELSE and SWITCH run one of them, and WHILE runs its iterations one after another.

Which bytes a node touches
    * memset: writes its destination rows -- precisely, row by row for a 2-D memset
      (contiguous rows merged), or, beyond :data:`ROW_LIMIT` rows, conservatively the whole
      span from the first row's start to the last row's end;
    * memcpy: reads its source rows and writes its destination rows, with the same
      precision rule (2-D / 3-D copies row by row); host memory counts too (a copy to or
      from a host buffer races with another copy of that buffer);
    * kernel: for each pointer parameter holding a device address, the *whole allocation*
      containing it (the simulator's memory knows its allocations; the extent a kernel
      actually touches is unknown).  A pointer declared ``const T *`` (``T const *``: const
      data at the first level) is read-only; any other pointer is conservatively read and
      written.  Host pointers, pointers inside struct parameters, addresses passed as
      integers and kernels whose parameter list the simulator does not know touch nothing
      known (no races reported for them);
    * memory allocation node: "allocates" its whole reservation; memory free node: "frees"
      the whole allocation containing its address.  An access that is not ordered after
      the allocation or before the free races with it, as does an unordered alloc / free
      pair of one allocation;
    * host, empty, event and external-semaphore nodes: nothing known.

Two accesses conflict when their ranges overlap, they come from different nodes of one
graph with no path between them, and at least one of them is not a read.  One
:class:`Race` is reported per pair of nodes: the lowest overlapping range.  The cost grows with
the number of unordered pairs sharing memory (quadratic when every node writes one arena).
"""

from __future__ import annotations

import os
import sys
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from ... import errors
from ._core import SimError
from ._graph import (CONDITIONAL, GRAPH, KERNEL, MEM_ALLOC, MEM_FREE, MEMCPY, MEMSET, TYPE_NAMES, Graph,
                     MemcpyP, MemsetP, Pitched, Snapshot, order, owned_graphs)
from ._memory import Block, Memory, is_device_address

MODES = ("off", "warn", "raise")

#: Rows of a 2-D / 3-D memset or copy tracked one by one; beyond, the whole span (conservative).
ROW_LIMIT = 4096

#: Access kinds that conflict with every other access (reads conflict only with these).
WRITES = frozenset({"write", "read/write", "alloc", "free"})

_VERBS = {"read": "reads", "write": "writes", "read/write": "may read and write", "alloc": "allocates",
          "free": "frees"}

#: How many races a launch-time warning or error spells out (the rest are counted).
_SHOWN = 5


# -- what is reported ---------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class RaceNode:
    """One node of a race, as the simulator knows it.

    Attributes
    ----------
    type : str
        The node type (``"KERNEL"``, ``"MEMSET"``, ...).
    local_id : int
        The node's local id in its graph (``cudaGraphNodeGetLocalId``: creation order).
    handle : int
        The node's handle as an int (``int(node)`` of the pygraphrt node).  For an
        executable graph: the handle of the node of the graph it was instantiated from.
    label : str
        A readable name: type, local id, kernel name, handle.
    graph : str
        Where the node is: ``"the graph"``, or the path to the child graph / conditional
        body that holds it.
    inner : RaceNode | None
        For a child-graph or conditional node: the node inside it whose access races.
    """

    type: str
    local_id: int
    handle: int
    label: str
    graph: str
    inner: "RaceNode | None" = None
    _lookup: Callable[[int], Any] | None = field(default=None, repr=False)

    @property
    def node(self) -> Any:
        """The pygraphrt node object (a :class:`pygraphrt.graph.Node`), or None.

        None when the node cannot be reached from Python any more: its graph (or the
        graph an executable graph was made from) was destroyed, or no pygraphrt object
        wraps the graph.
        """
        if self._lookup is None:
            return None
        try:
            return self._lookup(self.handle)
        except errors.GraphRTError:
            return None

    def __str__(self) -> str:
        where = "" if self.graph == "the graph" else f" in {self.graph}"
        via = "" if self.inner is None else f" (through its {self.inner.label})"
        return f"{self.label}{where}{via}"


@dataclass(frozen=True, eq=False)
class Race:
    """Two nodes with no path between them that touch overlapping memory, one writing.

    Attributes
    ----------
    first, second : RaceNode
        The two nodes (``first`` was created first), in the same graph.
    start, end : int
        The lowest overlapping address range, ``[start, end)``.
    first_access, second_access : str
        What each does there: ``"read"``, ``"write"``, ``"read/write"`` (a non-const
        kernel pointer: conservatively both), ``"alloc"`` or ``"free"``.
    first_detail, second_detail : str
        How each node comes to touch the range (``"destination of the copy"``,
        ``"pointer parameter 1 'in' (const float*): its whole 4096-byte allocation"``).
    """

    first: RaceNode
    second: RaceNode
    start: int
    end: int
    first_access: str
    second_access: str
    first_detail: str = ""
    second_detail: str = ""

    @property
    def nbytes(self) -> int:
        """Bytes in the reported overlapping range."""
        return self.end - self.start

    @property
    def graph(self) -> str:
        """Which graph holds both nodes (see :attr:`RaceNode.graph`)."""
        return self.first.graph

    def __str__(self) -> str:
        def side(n: RaceNode, access: str, detail: str) -> str:
            return f"{n.label}{'' if n.inner is None else f' (through its {n.inner.label})'} " \
                   f"{_VERBS.get(access, access)}{f' ({detail})' if detail else ''}"

        return (f"{side(self.first, self.first_access, self.first_detail)} and "
                f"{side(self.second, self.second_access, self.second_detail)} "
                f"[{self.start:#x}, {self.end:#x}) ({self.nbytes} bytes), with no path between them in "
                f"{self.graph}: they may run concurrently (add a dependency)")


class RacesFound(Exception):
    """Carries the races of a refused launch from the runtime to ``SimVendor.error``, which
    raises :class:`pygraphrt.errors.RaceDetected` (an error code alone would lose them)."""

    def __init__(self, races: list[Race]) -> None:
        super().__init__(f"{len(races)} race(s)")
        self.races = races


# -- a graph level, from a graph or a snapshot ----------------------------------------------------
class _Item:
    """One node of one graph level: what the analysis needs of a Node or an SNode."""

    __slots__ = ("type", "params", "deps", "local_id", "handle", "enabled", "nested")

    def __init__(self, type_: int, params: Any, deps: list[int], local_id: int, handle: int, enabled: bool,
                 nested: list[list["_Item"]]) -> None:
        self.type = type_
        self.params = params
        self.deps = deps
        self.local_id = local_id
        self.handle = handle
        self.enabled = enabled
        self.nested = nested  # the levels of a child graph (one) or of a conditional node's bodies


def _from_graph(g: Graph) -> list[_Item]:
    index = {id(n): i for i, n in enumerate(g.nodes)}
    return [_Item(n.type, n.params, [index[id(d)] for d, _ in n.deps], n.local_id, n.handle, True,
                  [_from_graph(c) for c in owned_graphs(n)]) for n in g.nodes]


def _from_snapshot(s: Snapshot) -> list[_Item]:
    out = []
    for n in s.nodes:
        nested = ([_from_snapshot(n.child)] if n.child is not None else []) + [_from_snapshot(b) for b in n.bodies]
        out.append(_Item(n.type, n.params, [i for i, _ in n.deps], n.local_id, n.orig, n.enabled, nested))
    return out


# -- accesses ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Access:
    start: int
    end: int
    kind: str
    detail: str
    inner: RaceNode | None = None  # the node inside a child graph / body that makes it


def _merge(rows: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, coalesced ``[start, end)`` ranges (contiguous pitched rows become one)."""
    out: list[tuple[int, int]] = []
    for s, e in sorted(rows):
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def memset_ranges(p: MemsetP) -> list[tuple[int, int]]:
    """The ``[start, end)`` ranges a memset writes (see the module's precision rule)."""
    row = p.width * p.element_size
    if not row or not p.height:
        return []
    if p.height == 1:
        return [(p.dst, p.dst + row)]
    if p.height > ROW_LIMIT:
        return [(p.dst, p.dst + p.span)]
    return _merge((p.dst + r * p.pitch, p.dst + r * p.pitch + row) for r in range(p.height))


def memcpy_ranges(m: MemcpyP) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The ranges a copy reads (source) and writes (destination), rows as ``SimRuntime._memcpy``
    walks them."""
    w, h, d = m.extent
    if not (w and h and d):
        return [], []
    if m.is_1d:
        return [(m.src.ptr, m.src.ptr + w)], [(m.dst.ptr, m.dst.ptr + w)]
    out = []
    for ptr, pos in ((m.src, m.src_pos), (m.dst, m.dst_pos)):
        if h * d > ROW_LIMIT:
            out.append([(_row(ptr, pos, 0, 0), _row(ptr, pos, d - 1, h - 1) + w)])
        else:
            out.append(_merge((r, r + w) for r in (_row(ptr, pos, z, y) for z in range(d) for y in range(h))))
    return out[0], out[1]


def _row(ptr: Pitched, pos: tuple[int, int, int], z: int, y: int) -> int:
    """Where row ``y`` of slice ``z`` of a pitched copy starts (as ``SimRuntime._memcpy`` computes it)."""
    return ptr.ptr + (pos[2] + z) * ptr.pitch * ptr.ysize + (pos[1] + y) * ptr.pitch + pos[0]


def const_pointee(type_name: str) -> bool:
    """Whether a pointer type, as spelled (``"const float*"``, ``"float* const*"``), points at
    const data: ``const`` in the part before its last ``*`` (after any earlier ``*``)."""
    parts = type_name.split("*")
    return len(parts) >= 2 and "const" in parts[-2].split()


class _Analyzer:
    """One analysis: accesses of nodes, races of graph levels, and the allocations looked up
    (an executable graph's cached result stays valid while they do)."""

    def __init__(self, memory: Memory, lookup: Callable[[int], Any] | None) -> None:
        self.memory = memory
        self.lookup = lookup
        self.blocks: list[tuple[int, Block | None]] = []

    def _block(self, address: int) -> Block | None:
        b = self.memory.find(address)
        self.blocks.append((address, b))
        return b

    def ref(self, it: _Item, where: str, inner: RaceNode | None = None) -> RaceNode:
        t = TYPE_NAMES.get(it.type, str(it.type))
        name = ""
        if it.type == KERNEL:
            name = f" '{getattr(it.params.kernel, 'name', '?')}'"
        return RaceNode(t, it.local_id, it.handle, f"{t} node {it.local_id}{name} ({it.handle:#x})", where, inner,
                        self.lookup)

    # -- what one node touches ---------------------------------------------------------------
    def accesses(self, it: _Item, where: str) -> list[_Access]:
        """The accesses of ``it`` (a node of the level ``where``), nested graphs' included."""
        if not it.enabled:
            return []  # a disabled node runs as an empty node
        t, p = it.type, it.params
        if t == MEMSET:
            shape = "" if p.height == 1 else f" ({p.height} rows, pitch {p.pitch})"
            return [_Access(s, e, "write", f"memset destination{shape}") for s, e in memset_ranges(p)]
        if t == MEMCPY:
            src, dst = memcpy_ranges(p)
            return [_Access(s, e, "read", "source of the copy") for s, e in src] + \
                   [_Access(s, e, "write", "destination of the copy") for s, e in dst]
        if t == KERNEL:
            return self._kernel(p)
        if t == MEM_ALLOC:
            return [_Access(p.block.base, p.block.base + max(p.block.size, 1), "alloc",
                            f"graph allocation of {p.bytesize} bytes")]
        if t == MEM_FREE:
            b = self._block(p.dptr)
            if b is None:
                return []
            return [_Access(b.base, b.base + max(b.size, 1), "free", f"the {b.size}-byte allocation at {b.base:#x}")]
        if t in (GRAPH, CONDITIONAL):
            out = []
            for k, level in enumerate(it.nested):
                inside = self._nested_where(it, k, where)
                for child in level:
                    for a in self.accesses(child, inside):
                        inner = a.inner if a.inner is not None else self.ref(child, inside)
                        out.append(_Access(a.start, a.end, a.kind, a.detail, inner))
            return out
        return []  # host, empty, event, external semaphore nodes: nothing known

    def _kernel(self, p: Any) -> list[_Access]:
        try:
            layout = p.kernel.layout()
            if layout is None or not len(layout):
                return []
            values = layout.unpack(list(p.args))
        except Exception:  # noqa: BLE001 - arguments the layout cannot decode: nothing known
            return []
        out = []
        for i, (t, v) in enumerate(zip(layout.params, values)):
            if not t.is_pointer or not isinstance(v, int) or not v or not is_device_address(v):
                continue  # host pointers: the extent a kernel touches there is unknown
            b = self._block(v)
            if b is None:
                continue  # no allocation: the kernel would fault; nothing to compare with
            kind = "read" if const_pointee(t.name) else "read/write"
            name = layout.names[i] if i < len(layout.names) else None
            label = f"pointer parameter {i}{'' if name is None else f' {name!r}'} ({t.name})"
            out.append(_Access(b.base, b.base + max(b.size, 1), kind,
                               f"{label}: its whole {b.size}-byte allocation"))
        return out

    @staticmethod
    def _nested_where(it: _Item, k: int, where: str) -> str:
        t = TYPE_NAMES.get(it.type, str(it.type))
        own = f"the child graph of {t} node {it.local_id}" if it.type == GRAPH else \
            f"body {k} of {t} node {it.local_id}"
        return own if where == "the graph" else f"{own} (in {where})"

    # -- races of one graph level (and, recursively, of the graphs its nodes own) ---------------
    def level(self, items: list[_Item], where: str) -> list[Race]:
        races: list[Race] = []
        n = len(items)
        if n:
            pos = {id(it): i for i, it in enumerate(items)}
            topo = order(items, lambda it: [items[d] for d in it.deps])
            # ancestors[i]: bit j set when a path leads from node j to node i
            ancestors = [0] * n
            for i in (pos[id(it)] for it in topo):
                m = 0
                for d in items[i].deps:
                    m |= ancestors[d] | (1 << d)
                ancestors[i] = m
            intervals = []
            for i, it in enumerate(items):
                for a in self.accesses(it, where):
                    if a.end > a.start:
                        intervals.append((a.start, a.end, i, a))
            intervals.sort(key=lambda x: (x[0], x[1], x[2]))
            found: dict[tuple[int, int], Race] = {}
            writers: list[tuple[int, int, _Access]] = []  # (end, node, access) still open
            readers: list[tuple[int, int, _Access]] = []
            for s, e, i, a in intervals:
                writers = [x for x in writers if x[0] > s]
                readers = [x for x in readers if x[0] > s]
                # read/read pairs never conflict: a read is compared with open writes only
                for e2, j, b in (writers + readers if a.kind in WRITES else writers):
                    if j == i:
                        continue
                    key = (min(i, j), max(i, j))
                    if key in found or (ancestors[i] >> j) & 1 or (ancestors[j] >> i) & 1:
                        continue
                    (fi, fa), (si, sa) = sorted(((i, a), (j, b)), key=lambda x: x[0])
                    found[key] = Race(self._side(items[fi], fa, where), self._side(items[si], sa, where),
                                      s, min(e, e2), fa.kind, sa.kind, fa.detail, sa.detail)
                (writers if a.kind in WRITES else readers).append((e, i, a))
            races.extend(found[k] for k in sorted(found))
        for it in items:
            for k, level in enumerate(it.nested):
                races.extend(self.level(level, self._nested_where(it, k, where)))
        return races

    def _side(self, it: _Item, a: _Access, where: str) -> RaceNode:
        return self.ref(it, where, a.inner)


# -- mapping to pygraphrt's node objects ---------------------------------------------------------------
class _Resolver:
    """Finds the pygraphrt Node object of a simulator node handle, lazily (when a report's
    ``node`` is read: never inside a runtime call)."""

    def __init__(self, runtime: Any, root: Graph, public_root: Any = None) -> None:
        self._rt = weakref.ref(runtime)
        self._root = weakref.ref(root)
        # weak: a cached report must not keep the user's graph alive (found again when needed)
        self._public = None if public_root is None else weakref.ref(public_root)
        self._children: dict[int, Any] = {}

    def __call__(self, handle: int) -> Any:
        rt = self._rt()
        sn = None if rt is None else rt.nodes.get(handle)
        if sn is None:
            return None
        pg = self._graph(sn.graph)
        if pg is None or not pg.is_valid:
            return None
        b = pg._backend
        return pg._wrap(b.ffi.cast(f"{b.ops.prefix}GraphNode_t", handle))

    def _graph(self, g: Graph) -> Any:
        if g is self._root():
            public = None if self._public is None else self._public()
            if public is None or not public.is_valid:
                public = _find_public_graph(g.handle)
                self._public = None if public is None else weakref.ref(public)
            return public
        owner = g.owner
        if owner is None:
            return None
        parent = self(owner.handle)
        if parent is None:
            return None
        from ...graph._node import ChildGraphNode, ConditionalNode

        if isinstance(parent, ConditionalNode) and parent._cond is not None:
            return next((b for b in parent._cond[2] if b.is_valid and int(b) == g.handle), None)
        if isinstance(parent, ChildGraphNode):
            if g.handle not in self._children:
                self._children[g.handle] = parent.child  # a borrowed Graph: keep one per child graph
            return self._children[g.handle]
        return None


def _find_public_graph(handle: int) -> Any:
    """A live pygraphrt Graph of the active backend wrapping ``handle`` (an owning one first)."""
    from ... import _runtime
    from ...graph._graph import Graph as PublicGraph

    try:
        backend = _runtime.active()
    except errors.GraphRTError:
        return None
    found = [g for g in list(backend.live) if isinstance(g, PublicGraph) and g.is_valid and int(g) == handle]
    found.sort(key=lambda g: not g._owned)
    return found[0] if found else None


# -- entry points --------------------------------------------------------------------------------------
def check_graph(runtime: Any, g: Graph, public: Any = None) -> list[Race]:
    """The races of a graph (not cached: graphs change freely).  Raises SimError on a cycle."""
    an = _Analyzer(runtime.memory, _Resolver(runtime, g, public))
    return an.level(_from_graph(g), "the graph")


# executable graph -> (fingerprint, allocations looked up, races)
_cache: "weakref.WeakKeyDictionary[Any, tuple[list[Any], list[tuple[int, Block | None]], list[Race]]]" = \
    weakref.WeakKeyDictionary()


def _fingerprint(snap: Snapshot) -> list[Any]:
    """What the analysis of an executable graph depends on, by identity: parameters are
    immutable and replaced by update / the setters (see _graph), child snapshots replaced;
    kernel layouts may come from a registration made later."""
    out: list[Any] = []
    for s in snap.walk():
        for n in s.nodes:
            out.extend((n, n.params, n.enabled, n.child, *n.bodies))
            if n.type == KERNEL:
                out.append(n.params.kernel.layout())
    return out


def check_exec(runtime: Any, ex: Any) -> list[Race]:
    """The races of an executable graph, from the cache while nothing they depend on changed."""
    key = _fingerprint(ex.snapshot)
    hit = _cache.get(ex)
    if hit is not None and len(hit[0]) == len(key) and all(a is b for a, b in zip(hit[0], key)) \
            and all(runtime.memory.find(addr) is b for addr, b in hit[1]):
        return hit[2]
    an = _Analyzer(runtime.memory, _Resolver(runtime, ex.source))
    races = an.level(_from_snapshot(ex.snapshot), "the graph")
    _cache[ex] = (key, an.blocks, races)
    return races


def summary(races: Sequence[Race]) -> str:
    """The message of a launch-time warning or error."""
    lines = [str(r) for r in races[:_SHOWN]]
    more = f"; and {len(races) - _SHOWN} more" if len(races) > _SHOWN else ""
    return (f"{len(races)} data race{'s' if len(races) != 1 else ''} in the launched graph "
            f"(pygraphrt.sim race check): " + "; ".join(lines) + more)


def on_launch(runtime: Any, ex: Any) -> None:
    """The launch hook: check ``ex`` before it runs; warn, or refuse the launch (SimError whose
    cause carries the races, raised by SimVendor.error as RaceDetected)."""
    races = check_exec(runtime, ex)
    if not races:
        return
    msg = summary(races)
    if runtime.race_check == "raise":
        raise SimError("InvalidValue", msg, cause=RacesFound(list(races)))
    warnings.warn(errors.RaceWarning(msg, list(races)), stacklevel=_caller_level())


_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside pygraphrt (the code that launched)."""
    level, f = 1, sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_PACKAGE + os.sep):
        f = f.f_back  # type: ignore[assignment]
        level += 1
    return level


def check_mode(mode: str, what: str) -> str:
    """``mode`` if it names a race-check mode, else InvalidValue."""
    m = str(mode).strip().lower()
    if m not in MODES:
        raise errors.InvalidValue(what, detail=f"race check mode {mode!r}: use 'off', 'warn' or 'raise'")
    return m
