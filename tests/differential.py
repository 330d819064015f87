"""Differential testing of backends: random API-call programs, run on two backends, same outcomes.

A *program* is a tuple of *steps*; a step is a plain tuple ``(kind, *ints)`` (so programs print
as Python literals and regression cases are copied verbatim into :data:`REGRESSIONS`).  Steps
build graphs (memset / memcpy / empty / host / child-graph / event nodes), add and remove
dependencies (also invalid ones: cycles, duplicates, self edges, nodes of another graph or
destroyed ones, non-default edge data), destroy nodes and graphs, clone, capture work on two
streams (fork / join through events, unjoined forks, prohibited calls inside a capture,
capture into an existing graph, launching an executable graph into a capture), instantiate,
launch, exec-update from another graph, and change executable graphs node by node (memset /
memcpy / host / child-graph setters, enable / disable).  Arguments are raw small ints that the
interpreter resolves against the program's state (indices modulo the number of objects, byte
offsets and counts relative to the buffer: fitting, zero, the whole rest, or running past the
end), so every generated program is meaningful and shrinks well.

:class:`Interpreter` runs a program on the *active* backend and returns a canonical trace, one
entry per step: the exception *class* name of a failed call (``"InvalidValue"``; ``"py:TypeError"``
for a non-pygraphrt exception), or the normalized result:

* graphs as their nodes (by program-wide registry index: creation order for explicit nodes,
  a canonical order -- Weisfeiler-Lehman colours, then listing order -- for nodes made by
  capture or clone), node types and backend-independent parameters (device addresses become
  ``(buffer index, offset)``, events their index, host callables their id, child graphs a
  canonical form), edges as index pairs with their edge data, and the roots -- after every
  step that touches a graph, failed or not (a failed call must leave the graph unchanged);
* after launches (and at the end) every buffer's bytes as hex, read back after a device
  synchronize, with the bytes whose value is not determined by the API's semantics masked as
  ``..``: writes of nodes the graph does not order, reads of bytes such nodes write, copies
  whose source and destination overlap, and whatever is derived from those.  The mask comes
  from a model of each executable graph built from the backend's own read-back (and kept up
  to date through update, the setters and enable/disable), so it is the same on both sides
  whenever their structures are;
* how often each host callable ran.

:func:`compare` runs one program on two backends, each in a fresh state (every object of the
previous run closed and collected, then the backend switched), and returns both traces.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

import pygraphrt as rt
from pygraphrt import errors
from pygraphrt.enums import CaptureStatus, DependencyType, EdgeData, NodeType

from .backends import selected, simulator

# ------------------------------------------------------------------------------ the language
BUF_SIZES = (100, 600, 1000, 2900)   # not multiples of 256: an end address never starts another buffer
MODES = ("global", "thread_local", "relaxed")
COUNT_MODES = ("fit", "fit", "fit", "all", "zero", "over")
N_STREAMS = 2
N_EVENTS = 2
LOCAL = 224  # node references below this pick a node of the graph at hand; above, any node


def _strategies(devices: int = 1) -> Any:
    """The hypothesis strategy of programs (imported lazily: hypothesis is a test dependency).
    ``devices=2``: programs over two devices (see :func:`programs`)."""
    from hypothesis import strategies as st

    raw = st.integers(0, 255)
    ref = st.integers(0, 255)
    small = st.integers(0, 7)
    refs = st.lists(ref, max_size=3).map(tuple)
    cmode = st.sampled_from(COUNT_MODES)
    stream = st.integers(0, N_STREAMS - 1)
    event = st.integers(0, N_EVENTS - 1)
    value = st.integers(0, 255)

    def t(*parts: Any) -> Any:
        return st.tuples(*[p if hasattr(p, "example") else st.just(p) for p in parts])

    buf = t("buf", st.integers(0, len(BUF_SIZES) - 1))
    graph = t("graph")
    memset = t("memset", small, refs, small, raw, cmode, raw, value, st.sampled_from((1, 1, 1, 2, 4)))
    memcpy = t("memcpy", small, refs, small, raw, small, raw, cmode, raw)
    empty = t("empty", small, refs)
    host = t("host", small, refs)
    child = t("child", small, small, refs)
    event_node = t("event_node", small, refs, st.booleans(), event)
    pairs = st.lists(st.tuples(ref, ref), min_size=1, max_size=3).map(tuple)
    dep = t("dep", small, pairs, st.booleans(), st.sampled_from((0, 0, 0, 1)))
    destroy_node = t("destroy_node", ref)
    destroy_graph = t("destroy_graph", small)
    clone = t("clone", small)
    instantiate = t("instantiate", small)
    launch = t("launch", small, stream)
    update = t("update", small, small)
    exec_memset = t("exec_memset", small, ref, small, raw, cmode, raw, value)
    exec_memcpy = t("exec_memcpy", small, ref, small, raw, small, raw, cmode, raw)
    exec_enable = t("exec_enable", small, ref, st.booleans())
    exec_host = t("exec_host", small, ref)
    exec_child = t("exec_child", small, ref, small)

    op_memset = t("memset", stream, small, raw, cmode, raw, value)
    op_memcpy = t("memcpy", stream, small, raw, small, raw, cmode, raw)
    op_record = t("record", stream, event)
    op_wait = t("wait", stream, event)
    op_host = t("host", stream)
    op_sync = t("sync", stream)
    op_devsync = t("devsync")
    op_query = t("query", event)
    op_info = t("info")
    op_launch = t("launch", stream, small)
    ops = st.lists(st.one_of(op_memset, op_memset, op_memcpy, op_memcpy, op_record, op_record, op_wait,
                             op_wait, op_host, op_sync, op_devsync, op_query, op_info, op_launch),
                   max_size=7).map(tuple)
    target = st.one_of(st.none(), st.none(), st.none(), st.tuples(small, refs))
    capture = t("capture", stream, st.sampled_from(MODES), target, ops)

    # Explicit weights (a uniform draw mapped onto them): one_of's own choice was seen to favour
    # the steps with the fewest arguments (destroying graphs, making buffers).
    weighted = [(memset, 12), (memcpy, 12), (capture, 14), (dep, 9), (instantiate, 6), (launch, 6),
                (empty, 4), (host, 4), (exec_memset, 4), (exec_memcpy, 3), (exec_enable, 4), (update, 5),
                (child, 3), (event_node, 3), (clone, 3), (exec_host, 2), (exec_child, 2),
                (destroy_node, 3), (graph, 2), (buf, 1), (destroy_graph, 1)]
    if devices > 1:
        # Each of these may run with another device current ("on"), which places the nodes it
        # makes, the buffers it allocates and the streams' work; peer access goes on and off.
        dev = st.integers(0, devices - 1)
        placeable = st.one_of(memset, memcpy, capture, instantiate, launch, empty, event_node, child, buf)
        on = t("on", dev, placeable)
        peer = t("peer", st.booleans())
        weighted += [(on, 16), (peer, 12)]
    table = [s for s, w in weighted for _ in range(w)]
    step = st.integers(0, len(table) - 1).flatmap(lambda k: table[k])
    # Most programs end by instantiating and launching something: random step lists alone rarely
    # get there.  Prologue 2-3 steps, body 3-6, epilogue at most 4: at most 13 steps.
    prologue = st.tuples(st.lists(buf, min_size=1, max_size=2), st.just([("graph",)]))
    launch_it = t(t("instantiate", small), t("launch", small, stream))
    change = st.integers(0, 4).flatmap(lambda k: (exec_memset, exec_memcpy, exec_enable, update, exec_host)[k])
    change_it = st.tuples(instantiate, launch, change, launch)
    epilogue = st.sampled_from((0, 0, 0, 1, 1, 2, 3)).flatmap(
        lambda k: (launch_it, change_it, st.just(()), t(t("launch", small, stream)))[k])
    if devices > 1:  # the devices first; a buffer on the last device beside device 0's
        head = (("devices", devices),)
        prologue = st.tuples(st.lists(buf, min_size=1, max_size=2).map(
            lambda bs: [*bs, ("on", devices - 1, ("buf", bs[0][1] + 1))]), st.just([("graph",)]))
    else:
        head = ()
    return st.builds(lambda p, s, e: head + tuple(p[0]) + tuple(p[1]) + tuple(s) + tuple(e), prologue,
                     st.lists(step, min_size=3, max_size=6), epilogue)


def programs(devices: int = 1) -> Any:
    """Hypothesis strategy: random programs of at most 13 steps (14 over several devices).

    ``devices=2``: each program begins with ``("devices", 2)`` -- stream and event ``i`` then
    belong to device ``i % 2`` -- and its steps may run with device 1 current (``("on", 1,
    step)``: buffers allocated there, nodes placed there, captures and launches made from
    there) or turn peer access between the devices on and off (``("peer", bool)``)."""
    return _strategies(devices)


# ------------------------------------------------------------------------------ data model
@dataclass
class Effect:
    """What a node does to device memory: ``kind`` none | memset | memcpy | wild (unknown)."""

    kind: str = "none"
    writes: list[tuple[int, int, int]] = field(default_factory=list)   # (buffer, lo, hi)
    src: tuple[int, int] | None = None                                 # memcpy: (buffer, offset)
    n: int = 0


@dataclass
class ENode:
    effect: Effect
    enabled: bool | None = True   # None: unknown
    child: "Model | None" = None


@dataclass
class Model:
    """An executable graph as far as memory goes: nodes in the runtime's listing order, edges."""

    nodes: list[ENode]
    edges: list[tuple[int, int]]
    index: dict[int, int]          # id(Node) of the source graph's top-level nodes -> position
    broken: bool = False


def _hex(data: bytes, defined: np.ndarray) -> str:
    h = data.hex()
    if defined.all():
        return h
    return "".join(h[2 * i:2 * i + 2] if defined[i] else ".." for i in range(len(data)))


def _digest(x: Any) -> str:
    return hashlib.sha1(repr(x).encode()).hexdigest()[:10]


def _wl(labels: list[Any], edges: list[tuple[int, int, Any]], rounds: int = 3) -> list[str]:
    """Weisfeiler-Lehman colours: a node's label refined by its neighbourhood (order-independent)."""
    col = [_digest(lab) for lab in labels]
    for _ in range(rounds):
        col = [_digest((col[i], sorted((col[a], e) for a, b, e in edges if b == i),
                        sorted((col[b], e) for a, b, e in edges if a == i))) for i in range(len(labels))]
    return col


def _edge(e: EdgeData) -> tuple[int, int, int]:
    return (int(e.from_port), int(e.to_port), int(e.type))


class Interpreter:
    """Runs programs on the active backend; :meth:`run` returns the trace."""

    def __init__(self) -> None:
        self.streams: list[Any] = []
        self.events: list[Any] = []
        self.bufs: list[Any] = []
        self.buf_ranges: list[tuple[int, int]] = []
        self.defined: list[np.ndarray] = []
        self.graphs: list[Any] = []
        self.nodes: list[tuple[int, Any]] = []          # registry: (graph index, Node)
        self.reg: dict[int, int] = {}                     # id(Node) -> registry index
        self.execs: list[tuple[Any, Model]] = []
        self.host_calls: dict[int, int] = {}
        self.host_fns: list[Any] = []
        self.captures: list[Any] = []
        self.stats: dict[str, int] = {"launched": 0, "data": 0, "errors": 0, "ok": 0}
        self.ndev = 1          # ("devices", n): stream and event i belong to device i % n
        self.peer = False      # ("peer", True): peer access enabled both ways by the program

    # -- set-up and tear-down -----------------------------------------------------------------
    def setup(self) -> None:
        self.streams = [rt.Stream() for _ in range(N_STREAMS)]
        self.events = [rt.Event() for _ in range(N_EVENTS)]

    def close(self) -> None:
        """Leave nothing behind: captures ended, work finished, every object closed."""
        for cap in self.captures:
            with contextlib.suppress(Exception):
                cap.abort()
        for s in self.streams:
            self._force_end(s)
        self._sync_all()
        if self.peer:  # peer access outlives the program in the runtime: leave it as found
            with contextlib.suppress(Exception):
                self.do_peer(False)
        if self.ndev > 1:
            with contextlib.suppress(Exception):
                rt.Device(0).set_current()
        for x, _ in self.execs:
            with contextlib.suppress(Exception):
                x.close()
        for g in self.graphs:
            with contextlib.suppress(Exception):
                g.close()
        for obj in self.events + self.streams + self.bufs:
            with contextlib.suppress(Exception):
                obj.close()
        self.__dict__.clear()

    @staticmethod
    def _force_end(s: Any) -> bool:
        """End a capture a stream was left in (a library bug: recorded by the caller)."""
        try:
            if s.capture_status is CaptureStatus.NONE:
                return False
        except Exception:
            return False
        b = s.backend
        out = b.ffi.new(f"{b.ops.prefix}Graph_t *")
        b.ops.fn("StreamEndCapture")(s.handle, out)
        if out[0] != b.ffi.NULL:
            b.ops.fn("GraphDestroy")(out[0])
        return True

    # -- running --------------------------------------------------------------------------------
    def run(self, program: tuple) -> list[Any]:
        self.setup()
        trace: list[Any] = []
        for step in program:
            trace.append(self.step(step))
        trace.append(("final", self._outcome(self._readback)))
        return trace

    def _outcome(self, fn: Any, *args: Any) -> Any:
        try:
            r = fn(*args)
        except errors.GraphRTError as e:
            self.stats["errors"] += 1
            return ("err", type(e).__name__)
        except Exception as e:  # a non-pygraphrt exception: the interpreter's or the library's bug
            self.stats["errors"] += 1
            return ("err", f"py:{type(e).__name__}")
        self.stats["ok"] += 1
        return ("ok", r)

    def step(self, step: tuple) -> Any:
        kind = step[0]
        fn = getattr(self, f"do_{kind}")
        return (kind, *fn(*step[1:]))

    # -- resolving raw arguments ----------------------------------------------------------------
    def _graph(self, gi: int) -> tuple[int, Any] | None:
        if not self.graphs:
            return None
        i = gi % len(self.graphs)
        return i, self.graphs[i]

    def _node(self, ref: int, gi: int | None) -> Any:
        if ref < LOCAL and gi is not None:
            local = [n for g, n in self.nodes if g == gi]
            if local:
                return local[ref % len(local)]
        if not self.nodes:
            return None
        return self.nodes[ref % len(self.nodes)][1]

    def _nodes(self, refs: tuple, gi: int | None) -> list[Any]:
        out = [self._node(r, gi) for r in refs]
        return [n for n in out if n is not None]

    def _span(self, bi: int, raw_off: int, cmode: str, craw: int, unit: int = 1,
              room2: int | None = None) -> tuple[int, int]:
        """(offset, count in units) in buffer ``bi``."""
        size = self.buf_ranges[bi][1]
        # "over" starts inside the buffer (see _copy_args); the others may start at its end
        off = raw_off * 37 % (size if cmode == "over" else size + 1)
        room = (size - off) // unit
        if room2 is not None:
            room = min(room, room2)
        if cmode == "zero":
            return off, 0
        if cmode == "all":
            return off, room
        if cmode == "over":  # at most 16 bytes past the end: inside cudaMalloc's 256-byte padding
            return off, room + 1 + craw % max(1, 16 // unit - 1)
        return off, (1 + craw % room) if room > 0 else 0

    def _buf(self, b: int) -> int | None:
        return b % len(self.bufs) if self.bufs else None

    # -- normalization ----------------------------------------------------------------------------
    def addr(self, a: int) -> Any:
        for i, (base, size) in enumerate(self.buf_ranges):
            if base <= a <= base + size:
                return (i, a - base)
        return "foreign" if a else "null"

    def event_index(self, a: int) -> Any:
        for i, ev in enumerate(self.events):
            with contextlib.suppress(Exception):
                if int(ev) == a:
                    return i
        return "foreign"

    def params(self, node: Any) -> tuple:
        t = node.type
        if t is NodeType.MEMSET:
            p = node.params
            return ("memset", self.addr(p["dst"]), p["value"], p["element_size"], p["width"], p["height"],
                    p["pitch"] if p["height"] > 1 else None)
        if t is NodeType.MEMCPY:
            p = node.params
            return ("memcpy", self.addr(p["dst"]), self.addr(p["src"]), p["width"], p["height"], p["depth"],
                    p["kind"])
        if t is NodeType.HOST:
            fn = node.params["fn"]
            return ("host", getattr(fn, "hid", "foreign"))
        if t is NodeType.GRAPH:
            return ("graph", self.canon(node.child))
        if t in (NodeType.EVENT_RECORD, NodeType.WAIT_EVENT):
            return (t.value, self.event_index(node.params["event"]))
        return (t.value,)

    def canon(self, g: Any) -> tuple:
        """An order-independent description of a graph (for child graphs)."""
        nodes = g.nodes()
        pos = {id(n): i for i, n in enumerate(nodes)}
        labels = [self.params(n) for n in nodes]
        edges = [(pos[id(a)], pos[id(b)], _edge(e)) for a, b, e in g.edges()]
        col = _wl(labels, edges)
        return (tuple(sorted(labels, key=repr)), tuple(sorted((col[a], col[b], e) for a, b, e in edges)))

    def register(self, gi: int) -> None:
        """Register the graph's nodes not registered yet, in a backend-independent order."""
        g = self.graphs[gi]
        nodes = g.nodes()
        if all(id(n) in self.reg for n in nodes):
            return
        pos = {id(n): i for i, n in enumerate(nodes)}
        labels = [self.params(n) for n in nodes]
        edges = [(pos[id(a)], pos[id(b)], _edge(e)) for a, b, e in g.edges()]
        col = _wl(labels, edges)
        new = sorted((i for i, n in enumerate(nodes) if id(n) not in self.reg), key=lambda i: (col[i], i))
        for i in new:
            self._add_reg(gi, nodes[i])

    def _add_reg(self, gi: int, node: Any) -> int:
        self.reg[id(node)] = len(self.nodes)
        self.nodes.append((gi, node))
        return self.reg[id(node)]

    def describe(self, gi: int) -> Any:
        g = self.graphs[gi]
        if not g.is_valid:
            return "closed"

        def body() -> Any:
            self.register(gi)
            nodes = sorted((self.reg[id(n)], self.params(n)) for n in g.nodes())
            edges = sorted((self.reg[id(a)], self.reg[id(b)], _edge(e)) for a, b, e in g.edges())
            roots = sorted(self.reg[id(n)] for n in g.root_nodes())
            return (tuple(nodes), tuple(edges), tuple(roots))

        return self._outcome(body)

    # -- steps: resources and graphs ----------------------------------------------------------
    def do_buf(self, si: int) -> tuple:
        size = BUF_SIZES[si % len(BUF_SIZES)]

        def make() -> int:
            b = rt.malloc(size)
            self.bufs.append(b)
            self.buf_ranges.append((int(b.ptr), size))
            b.copy_from(bytes((len(self.bufs) * 31 + i * 7) & 0xFF for i in range(size)))
            self.defined.append(np.ones(size, dtype=bool))
            return len(self.bufs) - 1

        return (self._outcome(make),)

    def do_devices(self, n: int) -> tuple:
        """Use ``n`` devices: stream and event ``i`` are remade on device ``i % n``."""
        def make() -> int:
            count = rt.device_count()
            if count < n:
                raise RuntimeError(f"the program needs {n} devices, the backend has {count}")
            for obj in self.events + self.streams:
                obj.close()
            self.streams, self.events = [], []
            for i in range(max(N_STREAMS, N_EVENTS)):
                with rt.Device(i % n):
                    if i < N_STREAMS:
                        self.streams.append(rt.Stream())
                    if i < N_EVENTS:
                        self.events.append(rt.Event())
            self.ndev = n
            return n

        return (self._outcome(make),)

    def do_on(self, d: int, step: tuple) -> tuple:
        """``step`` with device ``d`` current (restored after, also when the step raises)."""
        d %= self.ndev
        with rt.Device(d):
            return (d, self.step(step))

    def do_peer(self, on: bool) -> tuple:
        """Peer access between every pair of the program's devices, on or off (an enable that
        is already on succeeds: pygraphrt's rule; disabling what is off is the runtime's
        PeerAccessNotEnabled)."""
        def switch() -> bool:
            for a in range(self.ndev):
                for b in range(self.ndev):
                    if a != b:
                        dev = rt.Device(a)
                        dev.enable_peer_access(b) if on else dev.disable_peer_access(b)
            self.peer = on
            return on

        return (self._outcome(switch),)

    def _sync_all(self) -> None:
        """Every device of the program synchronized (device 0 first; the first failure raises)."""
        for d in range(self.ndev):
            rt.Device(d).synchronize()

    def do_graph(self) -> tuple:
        def make() -> int:
            self.graphs.append(rt.Graph())
            return len(self.graphs) - 1

        return (self._outcome(make),)

    def _add_step(self, gi: int, add: Any) -> tuple:
        r = self._graph(gi)
        if r is None:
            return ("skip",)
        i, g = r

        def run() -> int:
            return self._add_reg(i, add(g, i))

        return (i, self._outcome(run), self.describe(i))

    def _host_fn(self) -> Any:
        hid = len(self.host_fns)
        calls = self.host_calls

        def fn() -> None:
            calls[hid] = calls.get(hid, 0) + 1

        fn.hid = hid  # type: ignore[attr-defined]
        self.host_fns.append(fn)
        return fn

    def do_memset(self, gi: int, deps: tuple, b: int, off: int, cmode: str, craw: int, value: int,
                  es: int) -> tuple:
        bi = self._buf(b)
        if bi is None:
            return ("skip",)

        def add(g: Any, i: int) -> Any:
            o, n = self._span(bi, off, cmode, craw, es)
            v = value if es == 1 else value * (0x0101 if es == 2 else 0x01010101)
            return g.add_memset(self.buf_ranges[bi][0] + o, v, n, element_size=es,
                                dependencies=self._nodes(deps, i))

        return self._add_step(gi, add)

    def _copy_args(self, db: int, doff: int, sb: int, soff: int, cmode: str, craw: int) -> tuple[int, int, int] | None:
        d, s = self._buf(db), self._buf(sb)
        if d is None or s is None:
            return None
        # "over" starts inside both buffers: an eager copy FROM an address in no allocation is
        # taken for host memory by CUDA (cudaMemcpyDefault) and kills the process there (seen
        # on an H100) -- undefined behaviour no wrapper can catch for raw addresses.
        so, _ = self._span(s, soff, "over" if cmode == "over" else "all", 0)
        s_room = self.buf_ranges[s][1] - so
        do, n = self._span(d, doff, cmode, craw, room2=s_room)
        return self.buf_ranges[d][0] + do, self.buf_ranges[s][0] + so, n

    def do_memcpy(self, gi: int, deps: tuple, db: int, doff: int, sb: int, soff: int, cmode: str,
                  craw: int) -> tuple:
        args = self._copy_args(db, doff, sb, soff, cmode, craw)
        if args is None:
            return ("skip",)
        return self._add_step(gi, lambda g, i: g.add_memcpy(*args, dependencies=self._nodes(deps, i)))

    def do_empty(self, gi: int, deps: tuple) -> tuple:
        return self._add_step(gi, lambda g, i: g.add_empty(dependencies=self._nodes(deps, i)))

    def do_host(self, gi: int, deps: tuple) -> tuple:
        return self._add_step(gi, lambda g, i: g.add_host(self._host_fn(), dependencies=self._nodes(deps, i)))

    def do_child(self, gi: int, ci: int, deps: tuple) -> tuple:
        if not self.graphs:
            return ("skip",)
        # ci counts from the graph after the target: 0 is another graph whenever there is one
        return self._add_step(gi, lambda g, i: g.add_child_graph(self.graphs[(i + 1 + ci) % len(self.graphs)],
                                                                  dependencies=self._nodes(deps, i)))

    def do_event_node(self, gi: int, deps: tuple, record: bool, ev: int) -> tuple:
        e = self.events[ev % N_EVENTS]
        if record:
            return self._add_step(gi, lambda g, i: g.add_event_record(e, dependencies=self._nodes(deps, i)))
        return self._add_step(gi, lambda g, i: g.add_event_wait(e, dependencies=self._nodes(deps, i)))

    def do_dep(self, gi: int, pairs: tuple, remove: bool, ed: int) -> tuple:
        r = self._graph(gi)
        if r is None:
            return ("skip",)
        i, g = r
        froms = [self._node(a, i) for a, _ in pairs]
        tos = [self._node(b, i) for _, b in pairs]
        if any(n is None for n in froms + tos):
            return ("skip",)
        edges = None
        if ed:
            edges = [EdgeData(1, 0, DependencyType.PROGRAMMATIC)] * len(froms)
        refs = [(self.reg[id(a)], self.reg[id(b)]) for a, b in zip(froms, tos)]
        op = g.remove_dependencies if remove else g.add_dependencies
        return (i, tuple(refs), self._outcome(op, froms, tos, edges), self.describe(i))

    def do_destroy_node(self, ref: int) -> tuple:
        node = self._node(ref, None)
        if node is None:
            return ("skip",)
        gi = self.nodes[self.reg[id(node)]][0]
        return (self.reg[id(node)], self._outcome(node.destroy), self.describe(gi))

    def do_destroy_graph(self, gi: int) -> tuple:
        r = self._graph(gi)
        if r is None:
            return ("skip",)
        i, g = r
        return (i, self._outcome(g.close))

    def do_clone(self, gi: int) -> tuple:
        r = self._graph(gi)
        if r is None:
            return ("skip",)
        i, g = r

        def run() -> tuple:
            c = g.clone()
            self.graphs.append(c)
            ci = len(self.graphs) - 1
            found = []
            for gj, node in list(self.nodes):
                if gj == i and node.is_valid:
                    found.append(self._outcome(lambda: self._add_reg(ci, g.find_clone(node, c))))
            return ci, tuple(found)

        out = self._outcome(run)
        return (i, out, self.describe(len(self.graphs) - 1) if out[0] == "ok" else None)

    # -- executable graphs --------------------------------------------------------------------
    def model(self, g: Any, top: bool = False) -> Model:
        nodes = g.nodes()
        pos = {id(n): k for k, n in enumerate(nodes)}
        enodes = []
        for n in nodes:
            child = self.model(n.child) if n.type is NodeType.GRAPH else None
            enodes.append(ENode(self.effect(self.params(n)), True, child))
        edges = [(pos[id(a)], pos[id(b)]) for a, b, _ in g.edges()]
        return Model(enodes, edges, pos if top else {})

    def effect(self, p: tuple) -> Effect:
        if p[0] == "memset":
            _, dst, _, es, width, height, pitch = p
            if width == 0 or height == 0:
                return Effect()
            if not isinstance(dst, tuple):
                return Effect("wild")
            bi, off = dst
            size = self.buf_ranges[bi][1]
            row = width * es
            writes = [(bi, off + h * (pitch or 0), off + h * (pitch or 0) + row) for h in range(height)]
            if any(hi > size for _, _, hi in writes):
                return Effect("wild")
            return Effect("memset", writes)
        if p[0] == "memcpy":
            _, dst, src, width, height, depth, _ = p
            if width == 0 or height == 0 or depth == 0:
                return Effect()
            if height != 1 or depth != 1 or not isinstance(dst, tuple) or not isinstance(src, tuple):
                return Effect("wild")
            (db, do), (sb, so) = dst, src
            if do + width > self.buf_ranges[db][1] or so + width > self.buf_ranges[sb][1]:
                return Effect("wild")
            return Effect("memcpy", [(db, do, do + width)], (sb, so), width)
        return Effect()

    def do_instantiate(self, gi: int) -> tuple:
        r = self._graph(gi)
        if r is None:
            return ("skip",)
        i, g = r

        def run() -> int:
            x = g.instantiate()
            try:
                m = self.model(g, top=True)
            except errors.GraphRTError:
                m = Model([], [], {}, broken=True)
            self.execs.append((x, m))
            return len(self.execs) - 1

        return (i, self._outcome(run))

    def _exec(self, xi: int) -> tuple[int, Any, Model] | None:
        if not self.execs:
            return None
        k = xi % len(self.execs)
        return (k, *self.execs[k])

    def _exec_graph_index(self, x: Any) -> int | None:
        for k, g in enumerate(self.graphs):
            if g is x.graph:
                return k
        return None

    def do_launch(self, xi: int, si: int) -> tuple:
        r = self._exec(xi)
        if r is None:
            return ("skip",)
        k, x, m = r
        s = self.streams[si % N_STREAMS]
        out = self._outcome(x.launch, s)
        if out[0] == "ok":
            self.apply(m)
            self.stats["launched"] += 1
        sync = self._outcome(self._sync_all)
        return (k, out, sync, self._outcome(self._readback))

    def _readback(self) -> tuple:
        data = tuple(_hex(b.to_bytes(), d) for b, d in zip(self.bufs, self.defined))
        if data:
            self.stats["data"] += 1
        return data, tuple(sorted(self.host_calls.items()))

    def do_update(self, xi: int, gi: int) -> tuple:
        r, rg = self._exec(xi), self._graph(gi)
        if r is None or rg is None:
            return ("skip",)
        k, x, m = r
        i, g = rg

        def run() -> Any:
            res = x.update(g)
            new = self.model(g)
            if len(new.nodes) != len(m.nodes):
                m.broken = True
            for o, n in zip(m.nodes, new.nodes):
                o.effect, o.child = n.effect, n.child
            return res.value

        return (k, i, self._outcome(run))

    def _exec_node(self, xi: int, ref: int) -> tuple[int, Any, Model, Any] | None:
        r = self._exec(xi)
        if r is None:
            return None
        k, x, m = r
        node = self._node(ref, self._exec_graph_index(x))
        if node is None:
            return None
        return k, x, m, node

    def _mnode(self, m: Model, node: Any) -> ENode | None:
        p = m.index.get(id(node))
        if p is None:
            m.broken = True  # the runtime accepted a node the executable graph does not have
            return None
        return m.nodes[p]

    def do_exec_memset(self, xi: int, ref: int, b: int, off: int, cmode: str, craw: int, value: int) -> tuple:
        r = self._exec_node(xi, ref)
        bi = self._buf(b)
        if r is None or bi is None:
            return ("skip",)
        k, x, m, node = r

        def run() -> None:
            es = 1
            with contextlib.suppress(Exception):
                es = node.params["element_size"]
            o, n = self._span(bi, off, cmode, craw, es)
            dst = self.buf_ranges[bi][0] + o
            v = value if es == 1 else value * (0x0101 if es == 2 else 0x01010101)
            x.set_memset(node, dst=dst, value=v, count=n)
            e = self._mnode(m, node)
            if e is not None:
                p = node.params
                e.effect = self.effect(("memset", self.addr(dst), v, es, n, p["height"], p["pitch"] or None))

        return (k, self.reg.get(id(node)), self._outcome(run))

    def do_exec_memcpy(self, xi: int, ref: int, db: int, doff: int, sb: int, soff: int, cmode: str,
                       craw: int) -> tuple:
        r = self._exec_node(xi, ref)
        args = self._copy_args(db, doff, sb, soff, cmode, craw)
        if r is None or args is None:
            return ("skip",)
        k, x, m, node = r

        def run() -> None:
            x.set_memcpy(node, *args)
            e = self._mnode(m, node)
            if e is not None:
                e.effect = self.effect(("memcpy", self.addr(args[0]), self.addr(args[1]), args[2], 1, 1, 0))

        return (k, self.reg.get(id(node)), self._outcome(run))

    def do_exec_enable(self, xi: int, ref: int, enabled: bool) -> tuple:
        r = self._exec_node(xi, ref)
        if r is None:
            return ("skip",)
        k, x, m, node = r

        def run() -> bool:
            x.set_enabled(node, enabled)
            e = self._mnode(m, node)
            if e is not None:
                e.enabled = enabled
            return x.is_enabled(node)

        return (k, self.reg.get(id(node)), self._outcome(run))

    def do_exec_host(self, xi: int, ref: int) -> tuple:
        r = self._exec_node(xi, ref)
        if r is None:
            return ("skip",)
        k, x, m, node = r
        return (k, self.reg.get(id(node)), self._outcome(x.set_host, node, self._host_fn()))

    def do_exec_child(self, xi: int, ref: int, gi: int) -> tuple:
        r, rg = self._exec_node(xi, ref), self._graph(gi)
        if r is None or rg is None:
            return ("skip",)
        k, x, m, node = r
        i, g = rg

        def run() -> None:
            x.set_child_graph(node, g)
            e = self._mnode(m, node)
            if e is not None:
                e.child = self.model(g)

        return (k, self.reg.get(id(node)), i, self._outcome(run))

    # -- capture ------------------------------------------------------------------------------
    def do_capture(self, si: int, mode: str, target: tuple | None, ops: tuple) -> tuple:
        s = self.streams[si % N_STREAMS]
        tgi = None
        kw: dict[str, Any] = {}
        if target is not None:
            r = self._graph(target[0])
            if r is None:
                return ("skip",)
            tgi, g = r
            kw = {"graph": g, "dependencies": self._nodes(target[1], tgi)}
        results: list[Any] = []
        cap = None
        try:
            made = self._outcome(lambda: s.capture(mode, **kw))
            if made[0] != "ok":
                return (tgi, made)
            cap = made[1]
            self.captures.append(cap)
            begin = self._outcome(cap.begin)
            if begin[0] != "ok":
                return (tgi, begin)
            for op in ops:
                results.append(self._op(cap, op))
            end = self._outcome(cap.end)
            desc = None
            if end[0] == "ok":
                if tgi is None:
                    self.graphs.append(end[1])
                    tgi = len(self.graphs) - 1
                end = ("ok", tgi)
                desc = self.describe(tgi)
            elif tgi is not None:
                desc = self.describe(tgi)
            return (tuple(results), end, desc)
        finally:
            if cap is not None:
                with contextlib.suppress(Exception):
                    cap.abort()
            left = [k for k, st in enumerate(self.streams) if self._force_end(st)]
            if left:  # the library guarantees this never happens: make it visible in the trace
                results.append(("LEFT_CAPTURING", tuple(left)))
            self._outcome(self._sync_all)

    def _eager(self, s: Any) -> bool:
        try:
            return s.capture_status is CaptureStatus.NONE
        except Exception:
            return False

    def _op(self, cap: Any, op: tuple) -> Any:
        kind = op[0]
        if kind in ("memset", "memcpy", "record", "wait", "host", "sync", "launch"):
            s = self.streams[op[1] % N_STREAMS]
        if kind == "memset":
            _, _, b, off, cmode, craw, value = op
            bi = self._buf(b)
            if bi is None:
                return (kind, "skip")
            o, n = self._span(bi, off, cmode, craw)
            eager = self._eager(s)
            out = self._outcome(s.memset, self.buf_ranges[bi][0] + o, value, n)
            if eager and out[0] == "ok":
                self.apply_one(self.effect(("memset", (bi, o), value, 1, n, 1, None)))
            return (kind, eager, out)
        if kind == "memcpy":
            args = self._copy_args(*op[2:])
            if args is None:
                return (kind, "skip")
            eager = self._eager(s)
            out = self._outcome(s.memcpy, *args)
            if eager and out[0] == "ok":
                self.apply_one(self.effect(("memcpy", self.addr(args[0]), self.addr(args[1]), args[2], 1, 1, 0)))
            return (kind, eager, out)
        if kind == "record":
            return (kind, self._outcome(s.record, self.events[op[2] % N_EVENTS]))
        if kind == "wait":
            return (kind, self._outcome(s.wait, self.events[op[2] % N_EVENTS]))
        if kind == "host":
            return (kind, self._outcome(s.launch_host_func, self._host_fn()))
        if kind == "sync":
            return (kind, self._outcome(s.synchronize))
        if kind == "devsync":
            return (kind, self._outcome(rt.Device(0).synchronize))
        if kind == "query":
            # Whether the event has completed is timing, not semantics: the simulator finishes
            # eager work at once, the GPU later (a host function waits for the GIL this thread
            # holds).  So a query is compared by whether it succeeds, or how it fails.
            event = self.events[op[1] % N_EVENTS]
            out = self._outcome(lambda: event.is_done)
            return (kind, ("ok", "answered") if out[0] == "ok" else out)
        if kind == "info":
            def info() -> tuple:
                i = cap.info()
                return (i.status.value, tuple(sorted(self.params(n)[0] for n, _ in i.dependencies)))
            return (kind, self._outcome(info))
        if kind == "launch":
            r = self._exec(op[2])
            if r is None:
                return (kind, "skip")
            k, x, m = r
            eager = self._eager(s)
            out = self._outcome(x.launch, s)
            if eager and out[0] == "ok":
                self.apply(m)
            return (kind, k, eager, out)
        raise ValueError(f"unknown capture op {op!r}")

    # -- the memory model -------------------------------------------------------------------------
    def _all_undefined(self) -> None:
        for d in self.defined:
            d[:] = False

    def apply_one(self, e: Effect) -> None:
        """A single operation in stream order (nothing runs beside it)."""
        self.apply(Model([ENode(e)], [], {}))

    def _flatten(self, m: Model) -> tuple[list[ENode], set[tuple[int, int]]] | None:
        flat: list[ENode] = []
        edges: set[tuple[int, int]] = set()
        ids: list[list[int]] = []
        for n in m.nodes:
            if n.child is not None:
                sub = self._flatten(n.child)
                if sub is None:
                    return None
                sn, se = sub
                base = len(flat)
                flat.extend(sn)
                flat.append(ENode(Effect()))  # keeps ordering through an empty child
                edges |= {(a + base, b + base) for a, b in se}
                ids.append(list(range(base, len(flat))))
            else:
                flat.append(n)
                ids.append([len(flat) - 1])
        for a, b in m.edges:
            edges |= {(x, y) for x in ids[a] for y in ids[b]}
        return flat, edges

    def apply(self, m: Model) -> None:
        """Update the defined-byte masks for one launch of ``m``."""
        if m.broken:
            self._all_undefined()
            return
        r = self._flatten(m)
        if r is None:
            self._all_undefined()
            return
        nodes, edges = r
        n = len(nodes)
        succ: list[set[int]] = [set() for _ in range(n)]
        indeg = [0] * n
        for a, b in edges:
            if b not in succ[a]:
                succ[a].add(b)
                indeg[b] += 1
        order, ready = [], [i for i in range(n) if indeg[i] == 0]
        while ready:
            i = ready.pop()
            order.append(i)
            for j in succ[i]:
                indeg[j] -= 1
                if indeg[j] == 0:
                    ready.append(j)
        if len(order) != n:  # a cycle: nothing is known
            self._all_undefined()
            return
        reach = [set() for _ in range(n)]
        for i in reversed(order):
            for j in succ[i]:
                reach[i] |= {j} | reach[j]
        active = [k for k in range(n) if nodes[k].enabled is not False and nodes[k].effect.kind != "none"]
        if any(nodes[k].effect.kind == "wild" for k in active):
            self._all_undefined()
            return

        def unordered(a: int, b: int) -> bool:
            return a != b and b not in reach[a] and a not in reach[b]

        d = self.defined
        for i in order:
            node = nodes[i]
            if i not in active:
                continue
            e = node.effect
            others = [k for k in active if unordered(i, k)]
            if e.kind == "memcpy":
                (db, lo, hi), (sb, so) = e.writes[0], e.src
                src_def = d[sb][so:so + e.n].copy()
                for k in others:
                    for wb, wlo, whi in nodes[k].effect.writes:
                        if wb == sb:
                            a, b = max(wlo, so), min(whi, so + e.n)
                            if a < b:
                                src_def[a - so:b - so] = False
                if sb == db and so != lo and so < hi and lo < so + e.n:
                    src_def[:] = False  # overlapping source and destination: undefined
                d[db][lo:hi] = src_def
            else:
                for wb, wlo, whi in e.writes:
                    d[wb][wlo:whi] = True
            if node.enabled is None:
                for wb, wlo, whi in e.writes:
                    d[wb][wlo:whi] = False
            for k in others:
                for wb, wlo, whi in e.writes:
                    for ob, olo, ohi in nodes[k].effect.writes:
                        if wb == ob and max(wlo, olo) < min(whi, ohi):
                            d[wb][max(wlo, olo):min(whi, ohi)] = False


# ------------------------------------------------------------------------------ running and comparing
@contextlib.contextmanager
def active_backend(vendor: str, order: str | None = None, devices: int = 1) -> Iterator[Any]:
    """Make ``vendor`` the active backend for the block (restoring the previous one after).

    Every object made in the block must be gone after it (collected, then checked);
    ``order`` sets the simulator's node order (``"random:SEED"``) for the block; ``devices``
    the simulator's device count (a real runtime has the machine's).  The record of several
    devices in use is reset after the block: one program's second device must not turn the
    next program's compiled paths off.
    """
    from pygraphrt import multidevice

    chosen = simulator(devices) if vendor == "sim" and devices > 1 else selected(vendor)
    with chosen as backend:
        before = len(backend.live)
        if order is not None and vendor == "sim":
            mode, _, seed = order.partition(":")
            backend.runtime.set_order(mode, int(seed) if seed else None)
        try:
            yield backend
        finally:
            if order is not None and vendor == "sim":
                backend.runtime.set_order("creation")
            gc.collect()
            multidevice._reset_several(backend)
    leaked = len(backend.live) - before
    assert leaked <= 0, f"{leaked} {vendor} object(s) of the program are still alive"


def run_program(program: tuple, vendor: str, order: str | None = None,
                stats: dict[str, int] | None = None) -> list[Any]:
    """The trace of ``program`` on ``vendor``, run in a fresh state (``sim``: with as many
    devices as the program's ``("devices", n)`` step asks for)."""
    devices = program[0][1] if program and program[0][0] == "devices" else 1
    with active_backend(vendor, order, devices):
        interp = Interpreter()
        try:
            trace = interp.run(program)
            if stats is not None:
                for k, v in interp.stats.items():
                    stats[k] = stats.get(k, 0) + v
        finally:
            interp.close()
            del interp
    return trace


def compare(program: tuple, backend_a: str = "cuda", backend_b: str = "sim", *,
            order_a: str | None = None, order_b: str | None = None,
            stats: dict[str, int] | None = None) -> tuple[list[Any], list[Any]]:
    """Run ``program`` on both backends (fresh state each); return both traces."""
    a = run_program(program, backend_a, order_a, stats)
    b = run_program(program, backend_b, order_b)
    return a, b


def first_difference(a: list[Any], b: list[Any]) -> str | None:
    """A readable account of the first differing step (None when the traces are equal)."""
    if a == b:
        return None
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            rx, ry = repr(x), repr(y)
            if len(rx) + len(ry) > 1600:  # long data: show where the two part
                at = next((k for k, (c, d) in enumerate(zip(rx, ry)) if c != d), min(len(rx), len(ry)))
                lo = max(0, at - 300)
                rx, ry = f"...{rx[lo:at + 300]}... (first difference at char {at})", f"...{ry[lo:at + 300]}..."
            return f"step {i}:\n  A: {rx}\n  B: {ry}"
    return f"the traces differ in length: {len(a)} vs {len(b)}"


# ------------------------------------------------------------------------------ regressions
# Programs over two devices, replayed by the 2-GPU test (cuda against sim) and by the CPU test
# (sim against sim in a random order); hand-written seeds first, then any counterexample the
# 2-GPU run finds (shrunk by hypothesis).
REGRESSIONS_2DEV: list[tuple[str, tuple]] = [
    ("seed-2dev-copy-between-devices", (  # a graph on device 0 copying device 1's buffer, peer off then on
        ("devices", 2), ("buf", 2), ("on", 1, ("buf", 3)), ("graph",),
        ("memset", 0, (), 1, 0, "all", 0, 5, 1),
        ("memcpy", 0, (0,), 0, 0, 1, 0, "fit", 50),
        ("instantiate", 0), ("launch", 0, 0),
        ("peer", True), ("launch", 0, 1), ("peer", False),
    )),
    ("seed-2dev-nodes-on-device-1", (  # nodes placed on device 1, launched from device 0's stream
        ("devices", 2), ("buf", 1), ("on", 1, ("buf", 0)), ("graph",),
        ("on", 1, ("memset", 0, (), 1, 0, "all", 0, 3, 1)),
        ("memset", 0, (0,), 0, 0, "fit", 9, 4, 1),
        ("on", 1, ("empty", 0, (0, 1))),
        ("instantiate", 0), ("launch", 0, 0), ("on", 1, ("launch", 0, 1)),
    )),
    ("seed-2dev-capture-across-devices", (  # fork to device 1's stream and join back; a record refused
        ("devices", 2), ("buf", 2), ("on", 1, ("buf", 1)), ("graph",),
        ("capture", 0, "global", None, (
            ("memset", 0, 0, 0, "all", 0, 1), ("record", 0, 0), ("wait", 1, 0),
            ("memset", 1, 1, 0, "fit", 7, 4), ("record", 1, 1), ("wait", 0, 1))),
        ("capture", 1, "global", None, (("memset", 1, 1, 0, "fit", 1, 2), ("record", 1, 0))),
        ("on", 1, ("capture", 1, "relaxed", None, (("memset", 1, 1, 0, "all", 0, 6),))),
        ("instantiate", 0), ("launch", 0, 1), ("on", 1, ("instantiate", 2)), ("launch", 1, 0),
    )),
    ("seed-2dev-event-node-and-child", (  # an event of device 1 as a node of a device-0 graph, a child graph
        ("devices", 2), ("buf", 0), ("on", 1, ("buf", 0)), ("graph",),
        ("event_node", 0, (), True, 1), ("on", 1, ("event_node", 0, (0,), False, 1)),
        ("graph",), ("on", 1, ("memset", 1, (), 1, 0, "all", 0, 8, 1)),
        ("child", 0, 0, (1,)), ("instantiate", 0), ("launch", 0, 0), ("on", 1, ("launch", 0, 1)),
    )),
    # found on two H200s (CUDA 13.0, driver 580), shrunk by hypothesis; the simulator was fixed
    ("gpu-2dev-device-sync-beside-a-capture", (  # device 0 synchronized while device 1's stream captures: allowed
        ("devices", 2), ("buf", 0), ("on", 1, ("buf", 1)), ("graph",), ("peer", False), ("peer", False),
        ("capture", 1, "global", None, (("devsync",),)), ("instantiate", 0), ("launch", 0, 0),
    )),
    ("gpu-2dev-device-sync-beside-a-thread-local-capture", (
        ("devices", 2), ("buf", 0), ("on", 1, ("buf", 1)), ("graph",), ("peer", True), ("peer", True),
        ("capture", 1, "thread_local", None, (("memset", 0, 6, 255, "all", 40, 25), ("devsync",), ("host", 0))),
        ("instantiate", 0), ("launch", 7, 0), ("exec_memcpy", 6, 255, 1, 189, 2, 160, "fit", 101), ("launch", 7, 1),
    )),
]


# Counterexamples found on the GPU (shrunk by hypothesis), replayed by both the GPU test and the
# CPU test: add each as ``(name, program)``.
REGRESSIONS: list[tuple[str, tuple]] = [
    # hand-written seeds covering each kind of step once (not failures)
    ("seed-diamond-launch", (
        ("buf", 2), ("buf", 1), ("graph",),
        ("memset", 0, (), 0, 0, "all", 0, 7, 1),
        ("memcpy", 0, (0,), 1, 0, 0, 0, "fit", 100),
        ("memset", 0, (0,), 1, 200, "fit", 5, 9, 1),
        ("empty", 0, (1, 2)),
        ("host", 0, (3,)),
        ("instantiate", 0), ("launch", 0, 0),
        ("exec_memset", 0, 0, 0, 0, "all", 0, 3), ("exec_enable", 0, 2, False), ("launch", 0, 1),
    )),
    ("seed-invalid-edges", (
        ("buf", 0), ("graph",), ("empty", 0, ()), ("empty", 0, (0,)),
        ("dep", 0, ((1, 0),), False, 0),             # a cycle
        ("dep", 0, ((0, 1),), False, 0),             # a duplicate
        ("dep", 0, ((0, 0),), False, 0),             # a self edge
        ("dep", 0, ((0, 1),), True, 1),              # removing with the wrong edge data
        ("instantiate", 0), ("graph",), ("dep", 1, ((230, 231),), False, 0),
        ("destroy_node", 0), ("dep", 0, ((0, 1),), False, 0),
    )),
    ("seed-capture-fork-join", (
        ("buf", 3), ("buf", 2),
        ("capture", 0, "global", None, (
            ("memset", 0, 0, 0, "all", 0, 1), ("record", 0, 0), ("wait", 1, 0),
            ("memcpy", 0, 1, 0, 0, 0, "fit", 60), ("memset", 1, 0, 90, "fit", 7, 4),
            ("info",), ("record", 1, 1), ("wait", 0, 1))),
        ("instantiate", 0), ("launch", 0, 1),
        ("capture", 1, "global", None, (("record", 1, 0), ("wait", 0, 0), ("memset", 0, 0, 0, "fit", 1, 2))),
        ("capture", 0, "global", None, (("memset", 0, 0, 0, "fit", 1, 2), ("sync", 0), ("devsync",))),
        ("capture", 0, "relaxed", None, (("memset", 1, 1, 3, "over", 1, 2), ("query", 0), ("launch", 0, 0))),
    )),
    ("seed-update-clone-child", (
        ("buf", 2), ("graph",), ("memset", 0, (), 0, 0, "fit", 9, 1, 1), ("memset", 0, (0,), 0, 9, "fit", 9, 2, 1),
        ("clone", 0), ("graph",), ("child", 2, 0, ()), ("instantiate", 0), ("update", 0, 1),
        ("launch", 0, 0), ("instantiate", 2), ("exec_child", 1, 231, 1), ("update", 0, 2), ("launch", 1, 1),
    )),
    # counterexamples the GPU run found (H100, CUDA 13.0), shrunk by hypothesis; the simulator was fixed
    ("gpu-memset-element-misaligned", (  # a 2-byte memset at an odd address: CUDA refuses (InvalidValue)
        ("buf", 0), ("graph",), ("memset", 0, (), 0, 0, "fit", 0, 0, 1), ("memset", 0, (), 0, 0, "fit", 0, 0, 1),
        ("memset", 0, (), 0, 1, "fit", 0, 0, 2),
    )),
    ("gpu-memset-node-zero-width", (  # a memset node setting nothing: CUDA refuses (InvalidValue)
        ("buf", 0), ("graph",), ("instantiate", 0), ("memset", 0, (), 0, 0, "fit", 0, 0, 1),
        ("memset", 0, (), 0, 0, "zero", 0, 0, 1), ("instantiate", 0), ("launch", 0, 0),
    )),
    ("gpu-captured-zero-memset-adds-no-node", (  # CUDA 13.0: a zero-byte memset in a capture is no node
        ("buf", 0), ("graph",), ("memset", 0, (), 0, 0, "fit", 0, 0, 1), ("memset", 0, (), 0, 0, "fit", 0, 0, 1),
        ("capture", 0, "global", None, ()), ("capture", 0, "global", None, (("memset", 0, 0, 0, "zero", 0, 0),)),
        ("instantiate", 0), ("launch", 0, 0),
    )),
    ("gpu-invalidated-capture-into-graph-destroys-it", (  # CUDA 12.9/13.0 destroy the target graph
        ("buf", 0), ("graph",), ("graph",), ("clone", 0), ("capture", 0, "global", (0, ()), (("devsync",),)),
        ("instantiate", 0), ("launch", 0, 0),
    )),
    ("gpu-sync-after-invalidation", (  # CUDA 12.9: a stream sync in an invalidated capture is "unsupported"
        ("buf", 0), ("graph",), ("capture", 0, "global", None, (("memset", 0, 0, 0, "fit", 0, 0), ("devsync",),
                                                                ("sync", 0))),
        ("instantiate", 0), ("event_node", 0, (), False, 0),
    )),
    ("gpu-memcpy-node-zero-bytes", (  # a memcpy node copying nothing: CUDA refuses (InvalidValue)
        ("buf", 0), ("graph",), ("memset", 0, (), 0, 0, "fit", 0, 0, 1), ("graph",),
        ("memcpy", 0, (), 0, 0, 0, 0, "zero", 0), ("instantiate", 0), ("launch", 0, 0),
    )),
    # found on the H100 on 2026-11-24 (three runtimes side by side)
    ("gpu-captured-memset-unchecked-bounds", (  # CUDA 12.9/13.0/13.5 capture a memset past the end
        ("buf", 0), ("graph",), ("capture", 1, "global", None, (("memset", 1, 0, 0, "over", 0, 0),)),
        ("memset", 0, (), 0, 0, "fit", 0, 0, 1), ("memset", 0, (), 0, 0, "fit", 0, 0, 1),
        ("instantiate", 0), ("launch", 0, 0),
    )),
    ("gpu-unsafe-call-after-invalidation", (  # CUDA 12.9: an event query in an invalidated global capture
        ("buf", 0), ("graph",), ("exec_memset", 0, 0, 0, 0, "fit", 0, 0), ("memset", 0, (), 0, 0, "fit", 0, 0, 1),
        ("capture", 0, "global", None, (("memset", 0, 0, 0, "fit", 0, 0), ("memset", 0, 0, 0, "fit", 0, 0),
                                        ("sync", 0), ("query", 0))),
        ("instantiate", 0), ("launch", 0, 0),
    )),
    ("gpu-wait-on-event-of-invalidated-capture", (  # CUDA 13.0: InvalidValue, the stream cannot join
        ("buf", 0), ("graph",), ("graph",),
        ("capture", 0, "global", None, (("memset", 0, 0, 0, "fit", 0, 0), ("record", 0, 0), ("devsync",),
                                        ("wait", 1, 0))),
        ("memset", 0, (), 0, 0, "fit", 0, 0, 1), ("instantiate", 0), ("launch", 0, 0),
    )),

    ("gpu-invalidated-capture-refuses-first", (  # CUDA 13.0/13.5: StreamCaptureInvalidated, not InvalidValue
        ("buf", 0), ("graph",), ("instantiate", 0), ("dep", 0, ((0, 0),), False, 0),
        ("capture", 0, "global", None, (("devsync",), ("memcpy", 0, 0, 0, 0, 0, "over", 0))),
        ("instantiate", 0), ("launch", 0, 0),
    )),
    ("gpu-zero-copy-in-invalidated-capture", (  # CUDA 12.9: a zero-byte copy there succeeds, adds nothing
        ("buf", 0), ("graph",), ("memset", 0, (), 0, 0, "fit", 0, 0, 1),
        ("capture", 1, "global", None, (("memset", 0, 0, 0, "fit", 0, 0), ("devsync",),
                                        ("memcpy", 1, 0, 0, 0, 0, "zero", 0))),
        ("exec_enable", 0, 0, False), ("instantiate", 0), ("launch", 0, 0),
    )),
    ("gpu-capture-to-graph-duplicate-dependency", (  # CUDA 13.0/13.5: one dependency, one edge
        ("buf", 0), ("graph",), ("memset", 0, (), 0, 0, "fit", 0, 0, 1), ("memset", 0, (), 0, 0, "fit", 0, 0, 1),
        ("memset", 0, (), 0, 0, "fit", 0, 0, 1), ("capture", 0, "global", (0, (0, 0)), (("host", 0),)),
        ("instantiate", 0), ("launch", 0, 0),
    )),
    ("gpu-instantiate-checks-captured-memset", (  # CUDA 12.9: captured past the end, refused at instantiate
        ("buf", 0), ("graph",), ("instantiate", 0), ("memset", 0, (), 0, 0, "fit", 0, 0, 1),
        ("capture", 0, "global", None, (("memset", 0, 0, 0, "over", 0, 0),)), ("instantiate", 1), ("launch", 0, 0),
    )),
    ("gpu-query-event-of-invalidated-capture", (  # CUDA 13.0/13.5: InvalidValue, not CapturedEvent
        ("buf", 0), ("graph",), ("memset", 0, (), 0, 0, "fit", 0, 0, 1), ("memset", 0, (), 0, 0, "fit", 0, 0, 1),
        ("memset", 0, (), 0, 0, "fit", 0, 0, 1),
        ("capture", 0, "global", None, (("record", 0, 0), ("memset", 0, 0, 0, "fit", 0, 0),
                                        ("memset", 0, 0, 0, "fit", 0, 0), ("sync", 0), ("query", 0))),
        ("instantiate", 0), ("launch", 0, 0),
    )),
    ("gpu-remove-dependencies-all-or-none", (  # CUDA 13.0: a self edge refused first, none removed
        ("buf", 0), ("graph",), ("memset", 0, (), 0, 0, "fit", 0, 0, 1), ("empty", 0, (0,)),
        ("dep", 0, ((0, 1), (0, 0)), True, 0), ("instantiate", 0), ("launch", 0, 0),
    )),
    ("gpu-wait-on-event-of-ended-capture", (  # CUDA 13.0: InvalidValue, the capture is invalidated
        ("buf", 0), ("graph",), ("memset", 0, (), 0, 0, "fit", 0, 0, 1),
        ("capture", 0, "global", None, (("memset", 0, 0, 0, "fit", 0, 0), ("record", 0, 0))),
        ("capture", 0, "global", None, (("memset", 0, 0, 0, "fit", 0, 0), ("wait", 0, 0))),
        ("instantiate", 0), ("launch", 0, 0),
    )),
    ("gpu-query-event-of-ended-capture-first", (  # CUDA 12.9: InvalidValue before the capture rules
        ("buf", 2), ("graph",),
        ("capture", 1, "thread_local", None, (("memcpy", 0, 7, 112, 4, 230, "fit", 137), ("host", 0),
                                              ("record", 1, 1))),
        ("capture", 0, "thread_local", None, (("launch", 1, 4), ("record", 0, 0), ("devsync",), ("query", 1),
                                              ("query", 1), ("host", 0), ("launch", 0, 4))),
        ("launch", 5, 1),
    )),
    ("gpu-eager-wait-on-event-of-ended-capture", (  # CUDA 12.9: InvalidValue outside a capture too
        ("buf", 0), ("graph",), ("memset", 0, (), 0, 0, "fit", 0, 0, 1),
        ("capture", 0, "global", None, (("memset", 0, 0, 0, "fit", 0, 0), ("record", 0, 1))),
        ("capture", 0, "global", None, (("wait", 1, 1),)), ("instantiate", 0), ("launch", 0, 0),
    )),
    ("gpu-query-after-eager-host-work", (  # CUDA 12.9: not ready yet (sim: done); compared as answered
        ("buf", 0), ("graph",), ("memset", 0, (), 0, 0, "fit", 0, 0, 1), ("memset", 0, (), 0, 0, "fit", 0, 98, 1),
        ("capture", 1, "relaxed", None, (("memset", 0, 0, 0, "fit", 0, 0), ("host", 0), ("record", 0, 1),
                                         ("query", 1))),
        ("instantiate", 0), ("launch", 0, 0),
    )),
    ("gpu-clone-added-as-child-of-its-original", (  # instantiate hung (CUDA 13.5 run; sim too): the
        # original's retained operands held the clone's, which held the original's
        ("graph",), ("host", 0, ()), ("clone", 0), ("child", 0, 0, ()), ("instantiate", 0), ("launch", 0, 0),
    )),
    ("gpu-add-dependencies-repeat", (  # CUDA 13.0: the edge before the repeat is added, then InvalidValue
        ("buf", 0), ("graph",), ("event_node", 0, (), False, 0), ("memset", 0, (), 0, 0, "fit", 0, 0, 1),
        ("dep", 0, ((1, 0), (1, 0)), False, 0), ("instantiate", 0), ("launch", 0, 0),
    )),
    ("gpu-add-dependencies-exists-after-one", (  # CUDA 13.0: the edge before the existing one is added
        ("buf", 0), ("graph",), ("memset", 0, (), 0, 0, "fit", 0, 0, 1), ("memset", 0, (0,), 0, 0, "fit", 0, 0, 1),
        ("dep", 0, ((1, 0), (0, 1)), False, 0), ("instantiate", 0), ("launch", 0, 0),
    )),
    ("gpu-remove-dependencies-repeat", (  # CUDA 13.0: the edge before the repeat is removed, then InvalidValue
        ("buf", 0), ("graph",), ("empty", 0, ()), ("empty", 0, (0,)),
        ("dep", 0, ((0, 1), (0, 1)), True, 0), ("instantiate", 0), ("launch", 0, 0),
    )),
    ("gpu-remove-dependencies-missing-after-one", (  # CUDA 13.0: the edge before the missing one is removed
        ("buf", 0), ("graph",), ("memset", 0, (), 0, 0, "fit", 0, 0, 1), ("memset", 0, (0,), 0, 0, "fit", 0, 0, 1),
        ("dep", 0, ((0, 1), (1, 0)), True, 0), ("instantiate", 0), ("launch", 0, 0),
    )),
]
