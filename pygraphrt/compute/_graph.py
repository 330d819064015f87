"""The automatic compute graph: nodes in program order, edges from their reads and writes.

Each node is a closure ``fn(ctx)`` that reads and writes variables
(``var.read()`` / ``var.write()``) and issues its work through ``ctx``.  The closure is
called in several phases and must issue the same work each time:

* **topology** -- no runtime call; the accesses give the edges (see ``_topology``);
* **build** -- explicit graph nodes are created, then the inferred edges added, and
  the graph is instantiated;
* **update** -- after ``var.update(new)``, only the nodes that access a changed
  variable are re-run and their parameters set on the executable graph through the
  per-node setters (no re-instantiation); a change that cannot be applied in place
  (different accesses, different kinds of work, a refused setter) rebuilds the graph,
  says why (:class:`RebuildWarning`, :attr:`ComputeGraph.last_update`);
* **direct** -- ``launch(stream, single_stream=True)`` runs the closures in program
  order as plain stream work, for debugging and profiling.
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

from .. import errors
from . import _hot
from ._topology import Hazard, infer
from ._vars import Var, VarManager, _Slot, thread_slot
from ._work import CannotSet, Item, NodeContext, same_shapes

# A NodeContext nothing but the evaluating frame holds has this reference count (its local name,
# and getrefcount's argument) in the CPython versions whose counting this relies on; elsewhere
# (3.14's borrowed references, free-threaded builds, other interpreters) every evaluation makes
# its own context.
_refcount: Callable[[object], int] | None = (
    sys.getrefcount if sys.version_info < (3, 14) and getattr(sys, "_is_gil_enabled", lambda: True)()
    and sys.implementation.name == "cpython" else None)
_UNKEPT = 2

if TYPE_CHECKING:
    from ..device import Device, Stream
    from ..graph import Graph, GraphExec, Node


class RebuildWarning(UserWarning):
    """An update could not be applied in place: the compute graph was rebuilt."""


@dataclass(frozen=True)
class UpdateReport:
    """What :meth:`ComputeGraph.update` did.

    Attributes
    ----------
    nodes : tuple of str
        The nodes whose closures were re-run (those accessing a changed variable).
    setter_calls : int
        Per-node setter calls made on the executable graph.
    rebuilt : bool
        True when the graph was built (again) and re-instantiated instead.
    reason : str or None
        Why it was rebuilt.
    """

    nodes: tuple[str, ...]
    setter_calls: int
    rebuilt: bool
    reason: str | None = None


class ComputeNode:
    """One node of a compute graph: a name, a closure, and what it did when last evaluated."""

    # (slots: the compiled evaluation, compute._hot, reads them at fixed offsets; __dict__ keeps
    # users' own attributes, __weakref__ weak references, as before)
    __slots__ = ("graph", "index", "name", "fn", "device", "reads", "writes", "items", "_gnodes", "__dict__",
                 "__weakref__")

    def __init__(self, graph: "ComputeGraph", index: int, name: str, fn: Callable[[NodeContext], Any],
                 device: int | None = None) -> None:
        self.graph = graph
        self.index = index
        self.name = name
        self.fn = fn
        #: The device the node's work runs on (its closure runs with it current); None: the
        #: device current when the graph is built or launched.
        self.device = device
        self.reads: tuple[Var, ...] = ()
        self.writes: tuple[Var, ...] = ()
        self.items: list[Item] = []  # the work its closure issued (compute._work.Item)
        self._gnodes: list["Node"] = []

    def __repr__(self) -> str:
        where = "" if self.device is None else f" on device {self.device}"
        return f"<ComputeNode {self.name!r} #{self.index}{where}>"

    @property
    def work(self) -> list[str]:
        """The kinds of work the closure issued when last evaluated (``"kernel"``, ``"memcpy"``, ...)."""
        return [w[0].kind for w in self.items]

    @property
    def graph_nodes(self) -> list["Node"]:
        """The explicit graph's nodes made for this node (in order), once built."""
        self.graph._sync_template()
        return list(self._gnodes)

    @property
    def dependencies(self) -> list["ComputeNode"]:
        """The nodes this node runs after: those the compute graph inferred from the variables they share."""
        nodes, me = self.graph._nodes, self.index
        sources, targets = self.graph._pairs_now()
        return [nodes[i] for i in sorted(i for i, j in zip(sources, targets) if j == me)]

    @property
    def dependents(self) -> list["ComputeNode"]:
        """The nodes that run after this one: those the compute graph inferred from the variables
        they share."""
        nodes, me = self.graph._nodes, self.index
        sources, targets = self.graph._pairs_now()
        return [nodes[j] for j in sorted(j for i, j in zip(sources, targets) if i == me)]


def _key(accesses: Iterable[Var]) -> frozenset[Var]:
    return frozenset(accesses)


class ComputeGraph:
    """A graph whose edges are inferred from what its nodes read and write.

    Parameters
    ----------
    manager : VarManager
        Where the variables the nodes use come from.
    name : str
        Shown in DOT output and messages.

    Examples
    --------
    >>> vars = VarManager(); x = vars.buffer("x", buf); y = vars.buffer("y", buf2)
    >>> g = ComputeGraph(vars)
    >>> @g.node("init")
    ... def _(ctx): ctx.memset(x.write(), 0)
    >>> @g.node("copy")
    ... def _(ctx): ctx.memcpy(y.write(), x.read())
    >>> g.launch(stream)          # builds, instantiates, launches: init -> copy
    """

    def __init__(self, manager: VarManager, name: str = "compute_graph") -> None:
        if not isinstance(manager, VarManager):
            raise errors.InvalidValue("ComputeGraph", detail=f"{manager!r} is not a VarManager")
        self.manager = manager
        self.name = name
        self._nodes: list[ComputeNode] = []
        self._by_name: dict[str, ComputeNode] = {}
        # The topology: the edges (_pairs), made with the nodes' recorded accesses; their
        # hazards (_edges) only when asked for (why, edges, the pictures); the variable -> nodes
        # index that updates look up.  _pairs None: not inferred, or out of date; else the
        # edges' sources and targets (_topology.index_accesses).
        self._pairs: tuple[list[int], list[int]] | None = None
        self._edges: dict[tuple[int, int], list[Hazard]] | None = None
        self._users: dict[Var, list[int]] = {}
        self._topology_fresh = False  # the topology phase ran with the bindings as they are
        # Nodes whose parameters were set on the executable graph only: the template graph
        # takes them when it is next used (_sync_template).
        self._template_lag: dict[ComputeNode, None] = {}
        self._graph: "Graph | None" = None
        self._exec: "GraphExec | None" = None
        self._dirty: dict[Var, None] = {}
        self._structure_changed = False
        self._template_stale = False
        self._capture_stream: "Stream | None" = None
        self._child_execs: dict[int, tuple[Any, Any]] = {}
        self._retired: list[tuple[Any, Any]] = []
        self.last_update: UpdateReport | None = None
        self._device_streams: dict[int, tuple[Any, Any]] = {}  # single-stream launch: device -> (stream, event)
        manager._graphs.add(self)

    def __repr__(self) -> str:
        state = "built" if self._exec is not None else "not built"
        return f"<ComputeGraph {self.name!r} {len(self._nodes)} nodes, {state}>"

    def __len__(self) -> int:
        return len(self._nodes)

    # -- nodes --------------------------------------------------------------
    def node(self, name: str, fn: Callable[[NodeContext], Any] | None = None, *,
             device: "Device | int | None" = None) -> Any:
        """Add a node after all existing ones (program order).

        ``g.node("name", fn)`` returns the :class:`ComputeNode`; ``@g.node("name")``
        decorates the closure (and binds the name to the ComputeNode).

        ``device``: the device the node's work runs on.  Its closure runs with that device
        current in every phase (so that what it looks up is the same each time), its graph
        nodes are made there (``node.device``), and a single-stream launch issues its work on
        a stream of that device, ordered with the launch's stream by events.  Edges are
        inferred from the variables as for one device; an edge between nodes of two devices
        is an ordinary dependency of the graph.
        """
        if not isinstance(name, str) or not name:
            raise errors.InvalidValue("ComputeGraph.node", detail=f"a node needs a non-empty name, got {name!r}")
        ordinal: int | None = None
        if device is not None:
            from .. import _runtime, multidevice

            ordinal = multidevice.checked_ordinal(_runtime.active(), device, "ComputeGraph.node")
        if name in self._by_name:
            raise errors.InvalidValue("ComputeGraph.node", detail=f"graph {self.name!r} already has a node {name!r}")

        def add(f: Callable[[NodeContext], Any]) -> ComputeNode:
            if not callable(f):
                raise errors.InvalidValue("ComputeGraph.node", detail=f"node {name!r}: {f!r} is not callable")
            if name in self._by_name:
                raise errors.InvalidValue("ComputeGraph.node",
                                          detail=f"graph {self.name!r} already has a node {name!r}")
            n = ComputeNode(self, len(self._nodes), name, f, ordinal)
            self._nodes.append(n)
            self._by_name[name] = n
            self._pairs = self._edges = None
            self._topology_fresh = False
            self._structure_changed = True
            return n

        return add if fn is None else add(fn)

    def nodes(self) -> list[ComputeNode]:
        """The nodes in program order."""
        return list(self._nodes)

    def __getitem__(self, name: str) -> ComputeNode:
        return self._by_name[name]

    def __iter__(self) -> Iterator[ComputeNode]:
        """The nodes in program order (without it, iterating would call ``__getitem__`` with 0, 1, ...)."""
        return iter(list(self._nodes))

    def _resolve(self, n: "ComputeNode | str") -> ComputeNode:
        if isinstance(n, ComputeNode):
            if n.graph is not self:
                raise errors.InvalidValue("ComputeGraph", detail=f"{n!r} belongs to graph {n.graph.name!r}")
            return n
        try:
            return self._by_name[n]
        except (KeyError, TypeError):
            raise errors.InvalidValue("ComputeGraph", detail=f"graph {self.name!r} has no node {n!r}") from None

    # -- phases ---------------------------------------------------------------
    def _evaluate(self, n: ComputeNode, phase: str,
                  slot: _Slot | None = None) -> tuple[tuple[Var, ...], tuple[Var, ...], list[Item]]:
        """Run ``n``'s closure once, recording its accesses and work.  ``slot``: this thread's
        (:func:`thread_slot`; the phases' loops fetch it once, not once a node)."""
        if slot is None:
            slot = thread_slot()
        if slot.rec is not None:
            raise errors.IllegalState("compute node", detail="a compute-graph node's closure cannot "
                                      "evaluate another node (nested evaluation)")
        # A context of its own for each evaluation (a closure may keep it), made anew only where
        # the previous one was kept: creating one is about a fifth of a plain closure's evaluation.
        ctx = slot.spare
        if ctx is None:
            ctx = NodeContext(n.name, phase, self)
        else:
            slot.spare = None
            ctx.node = n.name
            ctx.phase = phase
            ctx.items = []
            ctx.graph = self
            ctx.manager = self.manager
        slot.rec = ctx
        try:
            if n.device is None:
                n.fn(ctx)
            else:
                from ..device import Device

                with Device(n.device):
                    n.fn(ctx)
        finally:
            slot.rec = None
        # Each variable once, in the order first accessed.  (One variable, the common case: its
        # own 1-tuple, so no tuple per node and phase.)
        r, w = ctx.reads, ctx.writes
        reads = r[0]._solo if len(r) == 1 else tuple(dict.fromkeys(r))
        writes = w[0]._solo if len(w) == 1 else tuple(dict.fromkeys(w))
        items = ctx.items
        if _refcount is not None and _refcount(ctx) == _UNKEPT:  # nothing but this frame holds it
            # (emptied: a spare keeps neither this graph nor its variables nor its work alive)
            r.clear()
            w.clear()
            ctx.items = ctx.graph = ctx.manager = None  # type: ignore[assignment]
            slot.spare = ctx
        return reads, writes, items

    @staticmethod
    def _on_device(n: ComputeNode, call: Callable[[], Any]) -> Any:
        """``call()`` with ``n``'s device current (as it is, for a node without one)."""
        if n.device is None:
            return call()
        from .. import _runtime, multidevice

        return multidevice.on_device(_runtime.active(), n.device, call)

    @staticmethod
    def _mismatch(n: ComputeNode, first: str, second: str, reads: Sequence[Var], writes: Sequence[Var],
                  items: Sequence[Item]) -> str | None:
        """What differs between the node's recorded evaluation and a new one (None: nothing)."""
        def names(vs: Iterable[Var]) -> list[str]:
            return sorted(v.name for v in vs)

        if (not (reads == n.reads and writes == n.writes)  # (the same order: no sets to make)
                and (_key(reads) != _key(n.reads) or _key(writes) != _key(n.writes))):
            return (f"node {n.name!r} read {names(n.reads)} and wrote {names(n.writes)} in the {first} "
                    f"phase but read {names(reads)} and wrote {names(writes)} in the {second} phase")
        if not same_shapes(n.items, items):
            return (f"node {n.name!r} issued {[w[0].describe(w) for w in n.items]} in the {first} phase "
                    f"but {[w[0].describe(w) for w in items]} in the {second} phase")
        return None

    def _infer_topology(self) -> None:
        """The topology phase: every closure evaluated, the edges and the variable index made
        from what they accessed (the hazards wait until asked for: :meth:`_inferred`)."""
        _hot.install(ComputeGraph, ComputeNode)  # (compiled mode: the evaluation in C, from the first topology phase on)
        evaluate, slot = self._evaluate, thread_slot()
        reads_of: list[tuple[Var, ...]] = []
        writes_of: list[tuple[Var, ...]] = []
        items_of: list[list[Item]] = []
        # (the records change only once every closure has run: a phase a closure's error ends
        # part-way leaves them what the built graph was made from, which updates compare with)
        nodes = self._nodes
        for n in nodes:
            reads, writes, items = evaluate(n, "topology", slot)
            reads_of.append(reads)
            writes_of.append(writes)
            items_of.append(items)
        sources, targets, users = _hot.index_function()(reads_of, writes_of)
        for n, reads, writes, items in zip(nodes, reads_of, writes_of, items_of):
            n.reads, n.writes, n.items = reads, writes, items
        self._pairs = sources, targets
        self._edges = None
        self._users = users
        self._topology_fresh = True

    def _ordering(self) -> list[tuple[list[Var], list[Var]]]:
        """Each node's recorded accesses of the variables that order work (buffer variables)."""
        return [([v for v in n.reads if v.orders], [v for v in n.writes if v.orders]) for n in self._nodes]

    def _pairs_now(self) -> tuple[list[int], list[int]]:
        """The inferred edges (the topology phase run first where it is not current)."""
        if self._pairs is None:
            self._infer_topology()
        assert self._pairs is not None
        return self._pairs

    def _inferred(self) -> dict[tuple[int, int], list[Hazard]]:
        """The inferred edges with their hazards, in program order: made from the recorded
        accesses when first asked for after the topology phase."""
        self._pairs_now()
        if self._edges is None:
            self._edges = infer(self._ordering(), name=lambda v: v.name)
        return self._edges

    def topology(self) -> list[tuple[ComputeNode, ComputeNode, list[Hazard]]]:
        """Infer the edges now (topology phase only: no runtime call); see :meth:`edges`."""
        self._infer_topology()
        return self.edges()

    def edges(self) -> list[tuple[ComputeNode, ComputeNode, list[Hazard]]]:
        """``(from, to, hazards)`` for every inferred edge, in program order."""
        nodes = self._nodes
        return [(nodes[i], nodes[j], list(h)) for (i, j), h in self._inferred().items()]

    def why(self, a: "ComputeNode | str", b: "ComputeNode | str") -> list[Hazard]:
        """Why ``b`` depends on ``a``: the variables and hazards (empty: no edge ``a -> b``)."""
        na, nb = self._resolve(a), self._resolve(b)
        return list(self._inferred().get((na.index, nb.index), []))

    def check(self) -> None:
        """Evaluate every closure twice (no runtime call) and compare what they did.

        Raises :class:`pygraphrt.errors.PhaseMismatch` naming the node whose accesses or
        work differ between the two evaluations -- the check :meth:`build`, and a
        single-stream launch, make against the topology phase.
        """
        self._infer_topology()
        slot = thread_slot()
        for n in self._nodes:
            reads, writes, items = self._evaluate(n, "check", slot)
            diff = self._mismatch(n, "topology", "check", reads, writes, items)
            if diff:
                raise errors.PhaseMismatch("ComputeGraph.check", detail=diff)

    def build(self) -> None:
        """Infer the topology, create the explicit graph's nodes and edges, instantiate.

        Raises :class:`pygraphrt.errors.PhaseMismatch` if a closure issues different
        work or accesses in the build phase than in the topology phase.
        """
        self._build_template()
        self._instantiate()

    def _build_template(self) -> None:
        """The explicit graph from the closures (no instantiation, no synchronization:
        this also runs while a stream is capturing)."""
        from ..graph import Graph

        if not self._topology_fresh or self._pairs is None:
            self._infer_topology()
        g = Graph()
        evaluate, mismatch, slot = self._evaluate, self._mismatch, thread_slot()
        # The edges' ends as runtime handles: every node is made here, in g, so the per-node
        # checks of Graph.add_dependencies (a live node of this graph) hold.  first[i] / last[i]:
        # node i's first and last graph node (its own work runs in the order it was issued).
        froms: list[Any] = []
        tos: list[Any] = []
        first: list[Any] = []
        last: list[Any] = []
        nodes = self._nodes
        # (compiled mode: the common nodes -- one kernel launch or copy each, as recorded -- in
        # one C loop, which stops at any other node, evaluated, for this loop to go on with)
        in_c = _hot.build_loop(self)
        i = 0
        try:
            while i < len(nodes):
                if in_c is None:
                    n = nodes[i]
                    reads, writes, items = evaluate(n, "build", slot)
                else:
                    i, got = in_c(self, nodes, i, slot, g, first, last)
                    if got is None:
                        break
                    n = nodes[i]
                    reads, writes, items = got
                i += 1
                if not (reads == n.reads and writes == n.writes and same_shapes(n.items, items)):
                    diff = mismatch(n, "topology", "build", reads, writes, items)
                    if diff:
                        raise errors.PhaseMismatch("ComputeGraph.build", detail=diff)
                n.items = items
                if n.device is None and len(items) == 1:  # (the common case, without a comprehension's frame)
                    w = items[0]
                    made = w[0].add(w, self, g)
                    n._gnodes = [made]
                    h = made._handle
                    first.append(h)
                    last.append(h)
                    continue
                if n.device is None:
                    gnodes = [w[0].add(w, self, g) for w in items] or [g.add_empty()]
                else:
                    from ..multidevice import placed

                    d = n.device
                    gnodes = ([placed(g, d, "add", lambda w=w: w[0].add(w, self, g)) for w in items]  # type: ignore[misc]
                              or [placed(g, d, "add_empty", g.add_empty)])
                n._gnodes = gnodes
                if len(gnodes) > 1:
                    froms.extend(x._handle for x in gnodes[:-1])
                    tos.extend(x._handle for x in gnodes[1:])
                first.append(gnodes[0]._handle)
                last.append(gnodes[-1]._handle)
            sources, targets = self._pairs_now()
            froms += [last[i] for i in sources]
            tos += [first[j] for j in targets]
            if froms:
                g._backend.ops.add_dependencies(g.handle, froms, tos, None)
        except BaseException:
            g.close()
            # The graph built before (an update's rebuild) goes too, as close() lets it go: the
            # nodes' records may be this phase's now, and its nodes are no longer theirs.  The
            # next update or launch builds anew.
            self._retired.append((self._exec, self._graph))
            self._graph = self._exec = None
            for n in self._nodes:
                n._gnodes = []
            self._template_lag.clear()
            raise
        # The previous executable may still be running: it is released at the next
        # instantiation, which never happens during a capture.
        self._retired.append((self._exec, self._graph))
        self._graph, self._exec = g, None
        self._dirty.clear()
        self._template_lag.clear()
        self._structure_changed = False
        self._template_stale = False

    def _instantiate(self) -> None:
        assert self._graph is not None
        self._release_retired()
        self._exec = self._graph.instantiate()

    def _release_retired(self) -> None:
        retired, self._retired = self._retired, []
        for exe, g in retired:
            if exe is not None:
                exe.synchronize()  # a launch may still be running
                exe.close()
            if g is not None:
                g.close()

    def _current(self) -> bool:
        """Whether the explicit graph reflects the nodes and bindings as they are now."""
        return (self._graph is not None and not self._template_stale and not self._structure_changed
                and not self._dirty)

    def _var_changed(self, var: Var) -> None:
        self._dirty[var] = None
        # What the closures access may depend on what is bound: a build evaluates them in the
        # topology phase again (an update compares what they then access with the record).
        self._topology_fresh = False

    def _sync_template(self) -> None:
        """Give the template graph's nodes the parameters updates set on the executable only."""
        lag, self._template_lag = self._template_lag, {}
        for n in lag:
            if n._gnodes:
                self._on_device(n, lambda: self._set_template(n))  # noqa: B023

    @staticmethod
    def _set_template(n: ComputeNode) -> None:
        for w, gnode in zip(n.items, n._gnodes):
            w[0].set_template(w, gnode)

    def update(self) -> UpdateReport:
        """Apply variable changes: re-run the nodes that access them, set their new parameters.

        Builds the graph first if it was never built (or nodes were added).
        """
        report = self._update()
        self.last_update = report
        return report

    def _update(self) -> UpdateReport:
        if self._exec is None:
            if self._current():  # built while a stream was capturing: instantiate only
                self._instantiate()
                return UpdateReport((), 0, False)
            self.build()
            return UpdateReport(tuple(n.name for n in self._nodes), 0, True, "first build")
        if self._structure_changed:
            return self._rebuild("nodes were added since the last build")
        if not self._dirty:
            return UpdateReport((), 0, False)
        users, nodes = self._users, self._nodes
        if len(self._dirty) == 1:
            (var,) = self._dirty
            touched: Iterable[int] = users.get(var, ())
        else:
            touched = sorted({i for var in self._dirty for i in users.get(var, ())})
        affected = [nodes[i] for i in touched]
        # One pass: each node re-run, compared, then set.  A node that differs, or whose change
        # cannot be set in place, rebuilds the graph (the executable is replaced, so the nodes
        # set before it do not matter).
        calls = 0
        exe, lag = self._exec, self._template_lag
        evaluate, mismatch, slot = self._evaluate, self._mismatch, thread_slot()
        for n in affected:
            reads, writes, items = evaluate(n, "update", slot)
            if not (reads == n.reads and writes == n.writes and same_shapes(n.items, items)):
                diff = mismatch(n, "previous", "update", reads, writes, items)
                if diff:
                    return self._rebuild(diff)
            gnodes = n._gnodes
            if n.device is None and len(items) == 1:  # (the common case: one item, no device switch)
                try:
                    w = items[0]
                    calls += w[0].set(w, self, exe, gnodes[0])
                except CannotSet as e:
                    return self._rebuild(f"node {n.name!r}: {e}")
                except errors.GraphRTError as e:
                    return self._rebuild(f"node {n.name!r}: the runtime refused the in-place update ({e})")
                n.items = items
                lag[n] = None
                continue
            for w, gnode in zip(items, gnodes):
                try:
                    if n.device is None:
                        calls += w[0].set(w, self, exe, gnode)
                    else:
                        calls += self._on_device(n, lambda: w[0].set(w, self, exe, gnode))  # noqa: B023
                except CannotSet as e:
                    return self._rebuild(f"node {n.name!r}: {e}")
                except errors.GraphRTError as e:
                    return self._rebuild(f"node {n.name!r}: the runtime refused the in-place update ({e})")
            n.items = items
            lag[n] = None
        self._dirty.clear()
        return UpdateReport(tuple(n.name for n in affected), calls, False)

    def _rebuild(self, reason: str) -> UpdateReport:
        self.build()
        warnings.warn(f"compute graph {self.name!r} was rebuilt and re-instantiated: {reason}",
                      RebuildWarning, stacklevel=4)
        return UpdateReport(tuple(n.name for n in self._nodes), 0, True, reason)

    # -- launch ---------------------------------------------------------------
    def launch(self, stream: "Stream | None" = None, *, single_stream: bool = False) -> None:
        """Run the graph on ``stream`` (default: the legacy default stream).

        Pending variable changes are applied first (:meth:`update`).  On a capturing
        stream the graph is added to the capture as a child-graph node.  With
        ``single_stream=True`` the closures run in program order as plain stream work
        (no graph): the debugging mode, whose results must equal the graph's.
        """
        from ..device import Stream

        s = Stream.legacy_default() if stream is None else stream
        if not isinstance(s, Stream):
            raise errors.InvalidValue("ComputeGraph.launch", detail=f"{s!r} is not a Stream")
        if single_stream:
            self._run_direct(s)
            return
        if s.is_capturing:
            self._add_to_capture(s)
            return
        if self._exec is None or self._dirty or self._structure_changed:
            self.update()
        assert self._exec is not None
        self._exec.launch(s)

    def synchronize(self) -> None:
        """Wait for the last graph launch (and raise what a host node raised)."""
        if self._exec is not None:
            self._exec.synchronize()

    def _run_direct(self, s: "Stream") -> None:
        # With the bindings the graph was last evaluated with, the closures must
        # issue what they issued then.
        compare = self._pairs is not None and not self._dirty and not self._structure_changed
        slot = thread_slot()
        for n in self._nodes:
            reads, writes, items = self._evaluate(n, "direct", slot)
            if compare:
                diff = self._mismatch(n, "topology", "direct", reads, writes, items)
                if diff:
                    raise errors.PhaseMismatch("ComputeGraph.launch(single_stream=True)", detail=diff)
            if n.device is None or n.device == s.device:
                self._on_device(n, lambda: self._run_items(items, s))  # noqa: B023
            else:
                self._run_on_other_device(n, items, s)

    def _run_items(self, items: list[Item], s: "Stream") -> None:
        for w in items:
            w[0].run(w, self, s)

    def _run_on_other_device(self, n: ComputeNode, items: list[Item], s: "Stream") -> None:
        """A single-stream launch's work of node ``n`` on a stream of its device, after what
        ``s`` holds and before what follows on ``s`` (events of each stream's device)."""
        from ..device import Device, Event, Stream

        d = n.device
        assert d is not None
        own = self._device_streams.get(d)
        with Device(d):
            if own is None:
                own = self._device_streams[d] = (Stream(), Event())
            sd, joined = own
            with Device(s.device):
                forked = Event()
            s.record(forked)
            sd.wait(forked)
            for w in items:
                w[0].run(w, self, sd)
            sd.record(joined)
        s.wait(joined)

    def _add_to_capture(self, s: "Stream") -> None:
        from ..graph import Graph

        # Instantiating, synchronizing and the exec setters are not allowed while a
        # stream captures: bring the explicit graph up to date by rebuilding it only.
        if not self._current():
            self._build_template()
        else:
            self._sync_template()
        g = self._graph
        assert g is not None
        cap = s._capture
        if cap is not None and cap._state == "active":
            info = cap.info()
            deps = info.dependencies
            edges = [e for _, e in deps]
            node = info.graph.add_child_graph(g, dependencies=[n for n, _ in deps],  # type: ignore[union-attr]
                                              edges=edges if any(e != type(e)() for e in edges) else None)
            cap._keep.append(g._keep)
            cap.update_dependencies([node], replace=True)
            return
        # A capture begun outside pygraphrt (e.g. by PyTorch): the compute graph keeps
        # the operands alive, so it must outlive the captured graph's launches.
        ops = s.backend.ops
        status, _, graph_h, deps_h = ops.capture_info(s.handle)
        host = Graph._borrow(graph_h, owner=self)
        dep_nodes = [host._wrap(h) for h, _ in deps_h]
        dep_edges = [e for _, e in deps_h]
        node = host.add_child_graph(g, dependencies=dep_nodes,
                                    edges=dep_edges if any(e != type(e)() for e in dep_edges) else None)
        ops.update_capture_dependencies(s.handle, [node.handle], None, True)

    # -- what the runtime holds -------------------------------------------------
    @property
    def graph(self) -> "Graph":
        """The explicit graph (built on first use; rebuilt if updates left it behind the executable)."""
        if self._graph is None or self._template_stale or self._structure_changed:
            self._build_template()
        else:
            self._sync_template()
        assert self._graph is not None
        return self._graph

    @property
    def exec(self) -> "GraphExec":
        """The executable graph (pending variable changes applied first)."""
        if self._exec is None or self._dirty or self._structure_changed:
            self.update()
        assert self._exec is not None
        return self._exec

    def _capture(self, fn: Callable[["Stream"], Any]) -> "Graph":
        from ..device import Stream

        if self._capture_stream is None:
            self._capture_stream = Stream()
        s = self._capture_stream
        with s.capture("thread_local") as cap:
            fn(s)
        assert cap.graph is not None
        return cap.graph

    def _child_exec(self, graph: "Graph") -> "GraphExec":
        cached = self._child_execs.get(id(graph))
        if cached is not None and cached[0] is graph:
            exe = cached[1]
            exe.update(graph)  # the child's current parameters
            return exe
        exe = graph.instantiate()
        self._child_execs[id(graph)] = (graph, exe)
        return exe

    def close(self) -> None:
        """Destroy the explicit and executable graphs (rebuilt on the next launch)."""
        self._retired.append((self._exec, self._graph))
        self._exec = self._graph = None
        for n in self._nodes:
            n._gnodes = []
        self._template_lag.clear()
        self._release_retired()
        for g, exe in self._child_execs.values():
            exe.synchronize()
            exe.close()
        self._child_execs.clear()
        if self._capture_stream is not None:
            self._capture_stream.close()
            self._capture_stream = None
        self._structure_changed = True

    def __enter__(self) -> "ComputeGraph":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- pictures ---------------------------------------------------------------
    def to_dot(self, *, variables: bool = True) -> str:
        """Graphviz DOT: nodes, inferred edges (labelled with their hazards) and, with
        ``variables``, each node's reads (red, variable -> node) and writes (blue, node -> variable)."""
        from ._export import to_dot

        return to_dot(self, variables=variables)

    def to_networkx(self) -> Any:
        """A ``networkx.DiGraph``: nodes by name (``reads``, ``writes``, ``work``, ``index``, ``device``),
        edges with their ``hazards``."""
        from ._export import to_networkx

        return to_networkx(self)


__all__ = ["ComputeGraph", "ComputeNode", "RebuildWarning", "UpdateReport"]
