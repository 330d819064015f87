"""Stream capture with capture info, dependency updates and guaranteed clean-up."""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from .. import errors
from .._handles import HostPayload, captures
from .._operands import listed as _listed
from ..enums import CaptureMode, CaptureStatus, EdgeData, capture_mode
from ..mempool import MemPool
from ._graph import Graph
from ._node import Node
from ._node import check_edges as _check_edges

if TYPE_CHECKING:
    from ..device import Stream


@dataclass(frozen=True)
class CaptureInfo:
    """What the runtime says about a capture in progress."""

    status: CaptureStatus
    id: int
    graph: Graph | None
    dependencies: list[tuple["Node", EdgeData]]

    def __hash__(self) -> int:
        # (the generated one hashed the list of dependencies, and raised; equal infos have
        # equal status and id)
        return hash((self.status, self.id))


class Capture:
    """``with stream.capture() as cap: ...`` then ``cap.graph``.

    On any exception inside the block the capture is ended and its graph
    discarded (the stream is left not capturing) and the original exception
    propagates.  A capture the runtime invalidated raises
    StreamCaptureInvalidated naming the pygraphrt call that failed, if any.
    """

    def __init__(self, stream: "Stream", mode: str | CaptureMode, graph: Graph | None,
                 dependencies: Sequence["Node"] | None, edges: Sequence[EdgeData] | None,
                 pool: Any = None) -> None:
        self.stream = stream
        self._active_token: weakref.finalize | None = None  # see begin()
        self.mode = capture_mode(mode, "Stream.capture")
        if graph is not None:
            stream._same_backend(graph, "Stream.capture", Graph)
        self._target = graph
        self._deps = _listed(dependencies, "Stream.capture", "Nodes")
        if graph is None and self._deps:
            raise errors.InvalidValue("Stream.capture", detail="dependencies need a target graph")
        if graph is not None:
            for d in self._deps:
                graph._own(d)
        self._edges = _check_edges(self._deps, edges)
        self._graph: Graph | None = None
        self._live_graph: Graph | None = None
        self._state = "new"
        # Operands of the captured work (buffers given as objects, host callables):
        # they become the graph's, kept alive as long as it is.
        self._keep: list[Any] = []
        self._streams: set["Stream"] = set()
        # The pool malloc_async uses on the capturing stream (None: the device's).
        if pool == "private":
            pool = MemPool()
        elif pool is not None and not isinstance(pool, MemPool):
            raise errors.InvalidValue("Stream.capture", detail=f"pool must be a MemPool or 'private', got {pool!r}")
        self.pool: MemPool | None = pool
        if pool is not None:
            self._keep.append(pool)

    @property
    def graph(self) -> Graph | None:
        """The captured graph, once the capture has ended (after the ``with`` block, or once
        :meth:`end` returned); None after :meth:`abort` or a capture that failed.

        Raises
        ------
        IllegalState
            The capture has not begun (``s.capture()`` without ``with``) or is still running.
        """
        state = self._state
        if state == "new":
            raise errors.IllegalState(
                "Capture.graph", detail="this capture has not begun: capture in a block, `with "
                                        "stream.capture() as cap: ...` (cap.graph is the graph after it), or "
                                        "explicitly, `cap = stream.begin_capture(); ...; graph = cap.end()`")
        if state == "active":
            raise errors.IllegalState(
                "Capture.graph", detail="the capture is still running: cap.graph is the graph once it "
                                        "ends (the with block's end, or cap.end()); cap.info().graph is the "
                                        "graph being built")
        return self._graph

    def _join(self, stream: "Stream") -> None:
        stream._capture = self
        self._streams.add(stream)

    def _leave(self) -> None:
        token, self._active_token = self._active_token, None
        if token is not None and token.detach() is not None:  # leave once, after begin() made it active
            captures.ended()
        for st in self._streams:
            if st._capture is self:
                st._capture = None
        self._streams.clear()

    def __enter__(self) -> "Capture":
        self.begin()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc is None:
            self.end()
            return
        self.abort()

    def begin(self) -> None:
        """Begin capturing on the stream (``with`` and :meth:`Stream.begin_capture` call this).

        Raises
        ------
        IllegalState
            The capture object was already used, or the stream is already capturing.
        StreamCaptureUnsupported
            The stream is the legacy default stream.
        """
        s = self.stream
        b = s.backend
        ops = b.ops
        if self._state != "new":
            raise errors.IllegalState("Capture.begin", detail="this capture object was already used")
        if s.is_legacy_default:
            raise errors.StreamCaptureUnsupported(
                "Capture.begin",
                detail=f"the legacy default stream cannot be captured; use a created stream (refused by "
                       f"pygraphrt: {ops.prefix}StreamBeginCapture was not called)")
        mode = ops.value(ops.capture_modes, self.mode, f"{ops.prefix}StreamBeginCapture")
        if s.capture_status is not CaptureStatus.NONE:
            # Refuse before touching the runtime: a failed begin must not end
            # (or invalidate) the capture that is already running there.
            # The error names pygraphrt's call, not the runtime's: the runtime was not asked.
            raise errors.IllegalState("Capture.begin", detail=f"the stream is already capturing (refused by "
                                                              f"pygraphrt: {ops.prefix}StreamBeginCapture "
                                                              f"was not called)")
        s._capture_failure = None
        # Counted before the runtime begins: from the moment the capture runs, a finalizer's
        # destroy (the collector can run at any allocation, even before this method returns)
        # must be deferred, or its cudaFree would invalidate a global-mode capture just begun.
        captures.began()
        try:
            if self._target is not None:
                self._begin_into_target(mode)
            else:
                ops.call("StreamBeginCapture", s.handle, mode)
        except BaseException:
            try:
                self._ensure_not_capturing()
            finally:
                captures.ended()
            raise
        self._state = "active"
        # This capture's share of ``captures`` ends exactly once: at end()/abort() (``_leave``),
        # or, when this object is dropped while still active, in this finalizer, which also
        # ends the capture in the runtime.  Left running, a global-mode capture would refuse
        # every thread's cudaMalloc and synchronizations for ever.  It holds raw handles only:
        # the stream's destroy is deferred until the share ends, so the handle is still good.
        target = weakref.ref(self._target) if self._target is not None else None
        self._active_token = weakref.finalize(self, _end_dropped_capture, s.backend, s.handle, target,
                                              repr(s))
        self._join(s)

    def _begin_into_target(self, mode: int) -> None:
        """Begin capturing into the existing target graph (overridden by Recapture)."""
        assert self._target is not None
        self.stream.backend.ops.begin_capture_to_graph(
            self.stream.handle, self._target.handle, [d.handle for d in self._deps], self._edges, mode)

    def _ensure_not_capturing(self) -> None:
        """After a failure: leave the stream not capturing and free what was captured."""
        s = self.stream
        if s._handle is not None:
            _end_leftover(s.backend, s.handle, self._target)

    def info(self) -> CaptureInfo:
        """Status, capture id, the graph being built and the current dependencies (with edge data)."""
        ops = self.stream.backend.ops
        status, ident, graph_h, deps = ops.capture_info(self.stream.handle)
        if status is not CaptureStatus.ACTIVE:
            return CaptureInfo(status, ident, None, [])
        graph = self._graph_for(graph_h)
        return CaptureInfo(status, ident, graph, [(graph._wrap(h), e) for h, e in deps])

    def _graph_for(self, handle: Any) -> Graph:
        if self._target is not None:
            return self._target
        if self._live_graph is None:
            # The runtime owns the graph until the capture ends; it becomes ours then.
            self._live_graph = Graph._borrow(handle, owner=self)
        return self._live_graph

    def update_dependencies(self, nodes: Sequence["Node"], edges: Sequence[EdgeData] | None = None,
                            *, replace: bool = False) -> None:
        """Add to (or with ``replace``, set) the capture's current dependencies."""
        if self._state != "active":
            raise errors.IllegalState("Capture.update_dependencies", detail="capture is not active")
        nodes = _listed(nodes, "Capture.update_dependencies", "Nodes")
        edges = _check_edges(nodes, edges)
        info = self.info()
        for n in nodes:
            if info.graph is not None:
                info.graph._own(n)
            elif not isinstance(n, Node):
                raise errors.InvalidValue("Capture.update_dependencies", detail=f"{n!r} is not a Node")
        self.stream.backend.ops.update_capture_dependencies(
            self.stream.handle, [n.handle for n in nodes], edges, replace)

    # -- conditional nodes at the capture's current point ---------------------
    def conditional_handle(self, default: int = 0, *, reset_each_launch: bool = True) -> Any:
        """A conditional handle on the graph being captured (see :meth:`Graph.conditional_handle`)."""
        graph = self._active_graph("Capture.conditional_handle")
        from . import _conditional

        return _conditional.create_handle(graph, default, reset_each_launch)

    def add_conditional(self, kind: str, handle: Any, size: int | None = None) -> Any:
        """Insert a conditional node after the work captured so far; later work depends on it.

        Fill its bodies with ``node.capture(other_stream, body=i)``.
        """
        graph = self._active_graph(f"Capture.add_{kind}")
        info = self.info()
        deps = [n for n, _ in info.dependencies]
        edges = [e for _, e in info.dependencies]
        node = graph.add_conditional(kind, handle, size, dependencies=deps,
                                     edges=edges if any(not e.is_default for e in edges) else None)
        self.update_dependencies([node], replace=True)
        return node

    def add_if(self, handle: Any) -> Any:
        """Insert an ``if`` conditional node after the work captured so far.

        Parameters
        ----------
        handle : ConditionalHandle
            The condition (from :meth:`conditional_handle`).

        Returns
        -------
        ConditionalNode
            Fill its body with ``node.capture(other_stream)``.
        """
        return self.add_conditional("if", handle)

    def add_if_else(self, handle: Any) -> Any:
        """Insert an ``if``/``else`` conditional node (two bodies) after the work captured so far.

        Parameters
        ----------
        handle : ConditionalHandle
            The condition.

        Returns
        -------
        ConditionalNode
        """
        return self.add_conditional("if_else", handle)

    def add_while(self, handle: Any) -> Any:
        """Insert a ``while`` conditional node after the work captured so far: its body runs while
        the condition is non-zero.

        Parameters
        ----------
        handle : ConditionalHandle
            The condition.

        Returns
        -------
        ConditionalNode
        """
        return self.add_conditional("while", handle)

    def add_switch(self, handle: Any, n: int) -> Any:
        """Insert a ``switch`` conditional node with ``n`` bodies after the work captured so far.

        Parameters
        ----------
        handle : ConditionalHandle
            The body to run (0 to n - 1; any other value runs none).
        n : int
            The number of bodies.

        Returns
        -------
        ConditionalNode
        """
        return self.add_conditional("switch", handle, n)

    def _active_graph(self, what: str) -> Graph:
        if self._state != "active":
            raise errors.IllegalState(what, detail=f"capture is {self._state}, not active")
        info = self.info()
        if info.graph is None:
            raise errors.StreamCaptureInvalidated(what, detail=f"capture status is {info.status}")
        return info.graph

    def end(self) -> Graph:
        """End the capture and return the graph."""
        s = self.stream
        b = s.backend
        ops = b.ops
        if self._state != "active":
            raise errors.IllegalState("Capture.end", detail=f"capture is {self._state}, not active")
        out = b.ffi.new(f"{ops.prefix}Graph_t *")
        rc = ops.fn("StreamEndCapture")(s.handle, out)
        if rc:
            if out[0] != b.ffi.NULL and self._target is None:
                ops.fn("GraphDestroy")(out[0])
            err = ops.error(rc, f"{ops.prefix}StreamEndCapture")
            if isinstance(err, errors.StreamCaptureWrongThread) and s._capturing_hint():
                # The runtime keeps the capture: only its own thread can end it. It stays
                # active here too, so end() or abort() from that thread still work.
                raise ops.error(rc, f"{ops.prefix}StreamEndCapture",
                                detail="the capture is still active: end or abort it from the thread "
                                       "that began it")
        self._state = "ended"
        self._leave()
        if rc:
            self._ensure_not_capturing()
            if self._target is not None:
                _check_target_survived(self._target)
            failed = s._capture_failure
            raise ops.error(rc, f"{ops.prefix}StreamEndCapture",
                            detail=f"the capture was invalidated by {failed}" if failed else "")
        if self._target is not None:
            graph = self._target
        elif self._live_graph is not None:
            # The graph info() showed during the capture is the one returned:
            # its node objects stay the same objects.
            graph = self._live_graph
            graph._owner = None
            graph._take_ownership(out[0])
        else:
            graph = Graph._adopt(out[0])
        graph._keep.extend(self._keep)
        for p in self._keep:  # host functions captured now report to the graph
            if isinstance(p, HostPayload):
                p.sink = graph._sink
        self._keep = []
        self._graph = graph
        return graph

    def abort(self) -> None:
        """End the capture and discard what was captured."""
        if self._state != "active":
            return
        self._state = "aborted"
        # the runtime's capture ends first: leaving the count and dropping what the capture
        # kept may run deferred frees (cudaFree), which a capture still running would take
        # as a prohibited call and be invalidated by -- this one, or another thread's
        self._ensure_not_capturing()
        self._leave()
        self._keep = []
        if self._live_graph is not None:
            self._live_graph._handle = None


def _end_leftover(backend: Any, stream_handle: Any, target: Graph | None) -> None:
    """Leave the stream not capturing; free what was captured unless it went into ``target``."""
    ops = backend.ops
    ffi = backend.ffi
    status = ffi.new(f"enum {ops.prefix}StreamCaptureStatus *")
    # the status 0 is "none" in every vendor's table (cudaStreamCaptureStatusNone, hipStreamCaptureStatusNone)
    if ops.fn("StreamIsCapturing")(stream_handle, status) or status[0] == 0:
        return
    out = ffi.new(f"{ops.prefix}Graph_t *")
    rc = ops.fn("StreamEndCapture")(stream_handle, out)
    if out[0] != ffi.NULL and target is None:
        ops.fn("GraphDestroy")(out[0])
    if rc and target is not None:
        _check_target_survived(target)


def _check_target_survived(target: Graph) -> None:
    """After a capture into an existing graph ended in failure: CUDA 12.9 and 13.0 destroy
    that graph (every later call on it, GraphDestroy included, returns InvalidValue).  Then
    the Graph object forgets its handle instead of destroying it again (a reused handle
    would be someone else's graph)."""
    if target._handle is None:
        return
    b = target._backend
    n = b.ffi.new("size_t *")
    if b.ops.fn("GraphGetNodes")(target._handle, b.ffi.NULL, n):
        target._runtime_destroyed("the runtime destroyed this graph when the capture into it failed "
                                  f"({b.ops.prefix}StreamEndCapture of an invalidated capture)")


def _end_dropped_capture(backend: Any, stream_handle: Any, target: "weakref.ref[Graph] | None",
                         stream: str = "a stream") -> None:
    """Finalizer of a Capture dropped while active (see ``Capture.begin``): a ResourceWarning
    (the capture was begun and never ended: a leak, as an unclosed file is), then the capture
    is ended in the runtime and what it captured discarded."""
    import warnings

    try:
        warnings.warn(f"a capture on {stream} was begun and never ended (dropped while capturing): "
                      "ended now, its graph discarded -- end it with cap.end() or cap.abort(), or "
                      "capture in a `with stream.capture() as cap:` block", ResourceWarning, stacklevel=2)
    except Exception:  # (warnings turned into errors: a finalizer must not raise)
        pass
    try:
        # a finalizer must not raise; a failure here leaves what the runtime left
        _end_leftover(backend, stream_handle, target() if target is not None else None)
    except Exception:
        pass
    finally:
        captures.ended()
