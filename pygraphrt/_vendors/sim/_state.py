"""Streams, events, captures and executable graphs of the simulator, and the capture rules.

Work executes when it is submitted (the simulator is single-threaded): a stream's work
therefore runs in stream order, an event is complete as soon as it is recorded outside a
capture, and synchronizing only checks the rules and applies the memory pools' release
thresholds.  What a capture records, and what it refuses, follows the CUDA runtime's rules
(see ``SimRuntime`` in :mod:`._api`):

* a stream in a capture adds nodes after its current dependencies (with their edge data);
  recording an event there marks that point, and a stream waiting on it joins the capture
  with the event's dependencies (no transitive reduction: dependency sets are unions);
* the capture's mode and each thread's interaction mode (``cudaThreadExchangeStreamCaptureMode``)
  decide which threads may make potentially unsafe calls (synchronous allocation and copies,
  synchronizing or querying streams, events and the device); a refused call returns
  ``cudaErrorStreamCaptureUnsupported`` and invalidates the captures that forbade it;
* calls that necessarily conflict with a capture fail whatever the mode: synchronizing or
  querying a capturing stream, querying or synchronizing an event recorded in a capture
  (``cudaErrorCapturedEvent``), synchronizing the device during any capture, and using the
  legacy stream while a blocking stream of its device captures (``cudaErrorStreamCaptureImplicit``);
* at the end, a stream whose last captured work was never joined back into the origin stream
  (through an event the origin waited on, directly or through other streams) makes the
  capture fail with ``cudaErrorStreamCaptureUnjoined``.
"""

from __future__ import annotations

import threading
from typing import Any

from ._core import DEFAULT_EDGE, EdgeData, SimError, enum, new_handle
from ._graph import MEM_ALLOC, Graph, Node, Snapshot

MODES = enum("enum cudaStreamCaptureMode")
GLOBAL = MODES["cudaStreamCaptureModeGlobal"]
THREAD_LOCAL = MODES["cudaStreamCaptureModeThreadLocal"]
RELAXED = MODES["cudaStreamCaptureModeRelaxed"]
MODE_NAMES = {GLOBAL: "global", THREAD_LOCAL: "thread_local", RELAXED: "relaxed"}

STATUS = enum("enum cudaStreamCaptureStatus")
STATUS_NONE = STATUS["cudaStreamCaptureStatusNone"]
STATUS_ACTIVE = STATUS["cudaStreamCaptureStatusActive"]
STATUS_INVALIDATED = STATUS["cudaStreamCaptureStatusInvalidated"]


class Stream:
    __slots__ = ("handle", "device", "blocking", "priority", "legacy", "capture", "deps", "tokens",
                 "work", "info_keep", "destroyed")

    def __init__(self, device: int, blocking: bool, priority: int = 0, legacy: bool = False,
                 handle: int | None = None) -> None:
        self.handle = new_handle() if handle is None else handle
        self.device = device
        self.blocking = blocking
        self.priority = priority
        self.legacy = legacy
        self.capture: Capture | None = None
        # During a capture: the nodes (with edge data) the next captured node depends on; the
        # tokens of the streams' latest work it carries (joins); its own captured work count.
        self.deps: list[tuple[Node, EdgeData]] = []
        self.tokens: set[tuple[int, int]] = set()
        self.work = 0
        self.info_keep: Any = None  # arrays cudaStreamGetCaptureInfo handed out (valid until the next call)
        self.destroyed = False

    def __repr__(self) -> str:
        return f"<sim stream {self.handle:#x}{' legacy' if self.legacy else ''}>"


class Event:
    __slots__ = ("handle", "device", "flags", "recorded", "time", "capture", "cap_deps", "cap_tokens",
                 "destroyed")

    def __init__(self, device: int, flags: int) -> None:
        self.handle = new_handle()
        self.device = device
        self.flags = flags
        self.recorded = False  # recorded outside a capture (its work is done: the simulator is synchronous)
        self.time: float | None = None  # when, in ms (perf_counter)
        self.capture: Capture | None = None  # the capture it was last recorded in
        self.cap_deps: list[tuple[Node, EdgeData]] = []
        self.cap_tokens: set[tuple[int, int]] = set()
        self.destroyed = False

    def captured(self) -> "Capture | None":
        """The ongoing capture this event was last recorded in, if any."""
        c = self.capture
        return c if c is not None and not c.ended else None


_capture_ids = iter(range(1, 1 << 62))


class Capture:
    """One capture sequence (from begin to end on its origin stream)."""

    def __init__(self, origin: Stream, mode: int, graph: Graph, target: bool) -> None:
        self.id = next(_capture_ids)
        self.origin = origin
        self.mode = mode
        self.thread = threading.get_ident()
        self.graph = graph
        self.target = target  # capturing into a graph the caller owns
        self.status = STATUS_ACTIVE
        self.streams: list[Stream] = []
        self.ended = False
        self.reason = ""

    @property
    def active(self) -> bool:
        return self.status == STATUS_ACTIVE and not self.ended

    def invalidate(self, why: str) -> None:
        if self.status == STATUS_ACTIVE:
            self.status = STATUS_INVALIDATED
            self.reason = why

    def join(self, stream: Stream, deps: list[tuple[Node, EdgeData]], tokens: set[tuple[int, int]]) -> None:
        stream.capture = self
        stream.deps = list(deps)
        stream.tokens = set(tokens)
        stream.work = 0
        self.streams.append(stream)

    def describe(self) -> str:
        return f"capture {self.id} ({MODE_NAMES[self.mode]} mode, begun on stream {self.origin.handle:#x})"


def merge_deps(into: list[tuple[Node, EdgeData]], more: list[tuple[Node, EdgeData]]) -> list[tuple[Node, EdgeData]]:
    """The union of two dependency sets (a node already present keeps its edge data)."""
    out = list(into)
    have = {id(n) for n, _ in out}
    for n, e in more:
        if id(n) not in have:
            out.append((n, e))
            have.add(id(n))
    return out


def captured_work(stream: Stream, node: Node) -> None:
    """``node`` was captured on ``stream``: it is the stream's new dependency set."""
    stream.work += 1
    stream.deps = [(node, DEFAULT_EDGE)]
    stream.tokens = {t for t in stream.tokens if t[0] != stream.handle} | {(stream.handle, stream.work)}


def unjoined(capture: Capture) -> list[Stream]:
    """Streams whose last captured work the origin stream never joined."""
    carried = capture.origin.tokens
    return [s for s in capture.streams
            if s is not capture.origin and s.work and (s.handle, s.work) not in carried]


class Exec:
    """An executable graph: a snapshot of the graph at instantiation, changed by update and setters."""

    _ids = iter(range(1, 1 << 31))

    def __init__(self, graph: Graph, flags: int) -> None:
        self.handle = new_handle()
        self.id = next(Exec._ids)
        self.flags = flags
        self.snapshot = Snapshot(graph)
        self.source = graph  # for the one-executable rule of graphs with memory nodes
        self.counts_against_source = False
        self.by_orig = {n.orig: n for n in self.snapshot.nodes}
        self.alloc_blocks = [n.params.block for n in self.snapshot.nodes if n.type == MEM_ALLOC]
        self.phys_blocks: list[Any] = []
        self.cond_values: dict[int, int] = {}
        self.destroyed = False

    def handles(self) -> list[Any]:
        out = []
        for s in self.snapshot.walk():
            out.extend(s.handles)
        return out

    def node(self, handle: int, what: str) -> Any:
        n = self.by_orig.get(handle)
        if n is None:
            raise SimError("InvalidValue", f"{what}: node {handle:#x} is not a node of the graph this "
                                           "executable graph was instantiated from")
        return n
