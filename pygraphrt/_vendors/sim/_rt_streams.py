"""The runtime's stream section: streams (creation, flags and priority, destruction,
synchronization and query), waits on events, host functions on a stream, and stream capture
(``cudaStreamBeginCapture`` / ``ToGraph``, ``cudaStreamEndCapture``, capture status and
information, ``cudaStreamUpdateCaptureDependencies``, ``cudaThreadExchangeStreamCaptureMode``).

Streams and captures themselves are :mod:`._state`'s.
"""

from __future__ import annotations

import threading
from typing import Any

from ..._bindings.cuda13 import ffi
from ._core import DEFAULT_EDGE, EdgeData, SimError, addr, handle, read_edges, write_edge
from ._graph import HOST, WAIT_EVENT, EventP, Graph, HostP, Node
from ._rt_base import EVENT_EXTERNAL, GREATEST_PRIORITY, RuntimeBase
from ._state import (MODE_NAMES, RELAXED, STATUS_ACTIVE, STATUS_INVALIDATED, STATUS_NONE, Capture, Stream, merge_deps,
                     unjoined)

STREAM_NON_BLOCKING = 1


class StreamSection(RuntimeBase):
    """Streams, event waits, host functions, stream capture."""

    # =========================================================================== streams
    def cudaStreamCreate(self, out: Any) -> None:
        self.cudaStreamCreateWithPriority(out, 0, 0)

    def cudaStreamCreateWithFlags(self, out: Any, flags: int) -> None:
        self.cudaStreamCreateWithPriority(out, flags, 0)

    def cudaStreamCreateWithPriority(self, out: Any, flags: int, priority: int) -> None:
        self._out(out, "cudaStreamCreate")
        if flags not in (0, STREAM_NON_BLOCKING):
            raise SimError("InvalidValue", f"stream flags {flags:#x}")
        prio = min(0, max(GREATEST_PRIORITY, priority))
        s = Stream(self.cur_device, blocking=not flags, priority=prio)
        self.streams[s.handle] = s
        out[0] = handle("cudaStream_t", s.handle)

    def cudaStreamGetFlags(self, stream: Any, out: Any) -> None:
        out[0] = 0 if self._stream(stream).blocking else STREAM_NON_BLOCKING

    def cudaStreamGetPriority(self, stream: Any, out: Any) -> None:
        out[0] = self._stream(stream).priority

    def cudaStreamDestroy(self, stream: Any) -> None:
        st = self._stream(stream)
        if st.legacy or addr(stream) == 2:
            raise SimError("InvalidResourceHandle", "the default streams cannot be destroyed")
        cap = st.capture
        if cap is not None:
            cap.invalidate("a stream of the capture was destroyed")
            cap.streams = [s for s in cap.streams if s is not st]
            st.capture = None
        st.destroyed = True
        del self.streams[st.handle]

    def cudaStreamSynchronize(self, stream: Any) -> None:
        st = self._stream(stream)
        self._sync_stream_check(st, "cudaStreamSynchronize")
        self._after_sync(st.device)

    def cudaStreamQuery(self, stream: Any) -> None:
        self._sync_stream_check(self._stream(stream), "cudaStreamQuery")

    def cudaStreamWaitEvent(self, stream: Any, event: Any, flags: int) -> None:
        st = self._stream(stream)
        ev = self._event(event)
        if flags not in (0, EVENT_EXTERNAL):
            raise SimError("InvalidValue", f"cudaStreamWaitEvent flags {flags:#x}")
        cap, ecap = st.capture, ev.captured()
        if cap is not None and cap.status != STATUS_ACTIVE:
            raise SimError("StreamCaptureInvalidated", f"{cap.describe()} was invalidated ({cap.reason})")
        if ev.capture is not None and ev.capture.ended and flags != EVENT_EXTERNAL:
            # last recorded in a capture that has ended: CUDA refuses (InvalidValue) -- in a
            # capture (13.0, which invalidates it) and outside one (12.9): differential test,
            # regressions gpu-wait-on-event-of-ended-capture, gpu-eager-wait-on-event-of-ended-capture
            if cap is not None:
                cap.invalidate("cudaStreamWaitEvent on an event recorded in an ended capture")
            raise SimError("InvalidValue", f"the event was last recorded in {ev.capture.describe()}, which "
                                           "has ended" + ("; the capture is invalidated" if cap is not None else ""))
        if cap is not None and flags == EVENT_EXTERNAL:  # an event-wait node
            self._submit(st, "cudaStreamWaitEvent", lambda: (WAIT_EVENT, EventP(ev.handle)), lambda: None)
            return
        if ecap is None:
            if cap is not None and ev.recorded:
                cap.invalidate("cudaStreamWaitEvent on an event recorded outside the capture")
                raise SimError("StreamCaptureIsolation", f"the stream takes part in {cap.describe()}; the event "
                                                         "was recorded outside it (a dependency would cross the "
                                                         "capture's boundary); the capture is invalidated")
            if cap is None:
                self._legacy_check(st, "cudaStreamWaitEvent")
            return  # outside a capture: the event's work is done (synchronous simulation)
        if ecap.status != STATUS_ACTIVE:
            if cap is None:
                # a stream outside any capture cannot join an invalidated one: CUDA 13.0 answers
                # InvalidValue (differential test, regression gpu-wait-on-event-of-invalidated-capture)
                raise SimError("InvalidValue", f"the event was recorded in {ecap.describe()}, which was "
                                               f"invalidated ({ecap.reason}); no stream can join it")
            raise SimError("StreamCaptureInvalidated", f"the event belongs to {ecap.describe()}, which was "
                                                       f"invalidated ({ecap.reason})")
        if cap is None:
            if st.legacy:
                ecap.invalidate("the legacy stream waited on an event of the capture")
                raise SimError("StreamCaptureUnsupported", "the legacy stream cannot join a capture; the "
                                                           "capture is invalidated")
            ecap.join(st, ev.cap_deps, ev.cap_tokens)  # the stream joins the capture
            return
        if cap is not ecap:
            cap.invalidate("a wait merging two captures")
            ecap.invalidate("a wait merging two captures")
            raise SimError("StreamCaptureMerge", f"the stream takes part in {cap.describe()}; the event was "
                                                 f"recorded in {ecap.describe()}: waiting would merge two "
                                                 "capture sequences; both are invalidated")
        st.deps = merge_deps(st.deps, ev.cap_deps)
        st.tokens |= ev.cap_tokens

    def cudaLaunchHostFunc(self, stream: Any, fn: Any, user: Any) -> None:
        self._host_func(stream, fn, user, 0, "cudaLaunchHostFunc")

    def cudaLaunchHostFunc_v2(self, stream: Any, fn: Any, user: Any, sync_mode: int) -> None:
        if sync_mode not in (0, 1):
            raise SimError("InvalidValue", f"host task sync mode {sync_mode}")
        self._host_func(stream, fn, user, sync_mode, "cudaLaunchHostFunc_v2")

    def _host_func(self, stream: Any, fn: Any, user: Any, mode: int, what: str) -> None:
        st = self._stream(stream)
        if fn == ffi.NULL:
            raise SimError("InvalidValue", f"{what}: NULL function")
        p = HostP(fn, user, mode)
        self._submit(st, what, lambda: (HOST, p), lambda: p.fn(p.user))

    # -- capture ---------------------------------------------------------------------------
    def _begin(self, st: Stream, mode: int, graph: Graph | None, deps: list[Node], edges: list[EdgeData]) -> None:
        if st.legacy:
            raise SimError("StreamCaptureUnsupported", "the legacy stream cannot be captured")
        if mode not in MODE_NAMES:
            raise SimError("InvalidValue", f"capture mode {mode}")
        if st.capture is not None:
            raise SimError("IllegalState", f"the stream already takes part in {st.capture.describe()}")
        if graph is not None and graph.capture is not None:
            raise SimError("IllegalState", f"the graph is being captured into by {graph.capture.describe()}")
        target = graph is not None
        if graph is None:
            graph = self._register_graph(Graph())
        else:
            for d in deps:
                if d.graph is not graph:
                    raise SimError("InvalidValue", f"dependency {d.handle:#x} is not a node of the graph "
                                                   "captured into")
        cap = Capture(st, mode, graph, target)
        graph.capture = cap
        self.captures.append(cap)
        # a node named twice is one dependency (CUDA 13.0/13.5 capture into a graph given the
        # same node twice and draw one edge: differential test, regression
        # gpu-capture-to-graph-duplicate-dependency)
        cap.join(st, merge_deps([], list(zip(deps, edges))), set())

    def cudaStreamBeginCapture(self, stream: Any, mode: int) -> None:
        self._begin(self._stream(stream), mode, None, [], [])

    def cudaStreamBeginCaptureToGraph(self, stream: Any, graph: Any, deps: Any, edata: Any, n: int,
                                      mode: int) -> None:
        st = self._stream(stream)
        g = self._graph(graph)
        nodes = self._nodes_in(deps, n, "cudaStreamBeginCaptureToGraph")
        self._begin(st, mode, g, nodes, read_edges(edata, n))

    def _end(self, cap: Capture) -> None:
        cap.ended = True
        for s in cap.streams:
            s.capture = None
            s.deps, s.tokens, s.work = [], set(), 0
        if cap in self.captures:
            self.captures.remove(cap)
        if cap.graph.capture is cap:
            cap.graph.capture = None

    def cudaStreamEndCapture(self, stream: Any, out: Any) -> None:
        out[0] = ffi.NULL
        st = self._stream(stream)
        cap = st.capture
        if cap is None:
            raise SimError("IllegalState", "the stream is not capturing")
        if cap.origin is not st:
            cap.invalidate("cudaStreamEndCapture on a stream that joined the capture")
            raise SimError("StreamCaptureUnmatched", f"{cap.describe()} was not begun on this stream; it is "
                                                     "invalidated")
        if cap.mode != RELAXED and cap.thread != threading.get_ident():
            # As seen on CUDA 12.9 and 13.0 (undocumented): refused, and the sequence is ended anyway.
            self._end(cap)
            if not cap.target:
                self._destroy_graph(cap.graph)
            raise SimError("StreamCaptureWrongThread", f"{cap.describe()} must be ended by the thread that "
                                                       "began it (it is not relaxed); it is ended, without a graph")
        loose = unjoined(cap)
        self._end(cap)
        if cap.status == STATUS_INVALIDATED:
            # CUDA 12.9 and 13.0 destroy the graph of an invalidated capture -- also the user's
            # graph of a capture into an existing graph (seen on an H100: every later call on it
            # returns InvalidValue); so does the simulator
            self._destroy_graph(cap.graph)
            raise SimError("StreamCaptureInvalidated", f"{cap.describe()} was invalidated: {cap.reason}")
        if loose:
            if not cap.target:
                self._destroy_graph(cap.graph)
            raise SimError("StreamCaptureUnjoined", f"{cap.describe()}: the work of stream(s) "
                                                    f"{', '.join(hex(s.handle) for s in loose)} was not joined "
                                                    "back into the origin stream")
        out[0] = handle("cudaGraph_t", cap.graph.handle)

    def cudaStreamIsCapturing(self, stream: Any, status: Any) -> None:
        st = self._stream(stream)
        self._legacy_check(st, "cudaStreamIsCapturing", invalidate=False)
        cap = st.capture
        status[0] = STATUS_NONE if cap is None else cap.status

    def cudaStreamGetCaptureInfo(self, stream: Any, status: Any, ident: Any, graph: Any, deps: Any,
                                 edata: Any, n: Any) -> None:
        st = self._stream(stream)
        self._legacy_check(st, "cudaStreamGetCaptureInfo", invalidate=False)
        cap = st.capture
        if status != ffi.NULL:
            status[0] = STATUS_NONE if cap is None else cap.status
        if ident != ffi.NULL:
            ident[0] = 0 if cap is None else cap.id
        if cap is None or cap.status != STATUS_ACTIVE:
            return
        count = len(st.deps)
        if edata == ffi.NULL and any(e != DEFAULT_EDGE for _, e in st.deps):
            raise SimError("LossyQuery", "the capture's dependencies carry edge data: ask for it")
        if graph != ffi.NULL:
            graph[0] = handle("cudaGraph_t", cap.graph.handle)
        arr = ffi.new("cudaGraphNode_t[]", [handle("cudaGraphNode_t", d.handle) for d, _ in st.deps] or 1)
        earr = ffi.new("cudaGraphEdgeData[]", max(count, 1))
        for i, (_, e) in enumerate(st.deps):
            write_edge(earr[i], e)
        st.info_keep = (arr, earr)  # valid until the next call on the stream (kept until then)
        if deps != ffi.NULL:
            deps[0] = arr
        if edata != ffi.NULL:
            edata[0] = earr
        if n != ffi.NULL:
            n[0] = count

    def cudaStreamUpdateCaptureDependencies(self, stream: Any, deps: Any, edata: Any, n: int, flags: int) -> None:
        st = self._stream(stream)
        cap = st.capture
        if cap is None:
            raise SimError("IllegalState", "the stream is not capturing")
        if cap.status != STATUS_ACTIVE:
            raise SimError("StreamCaptureInvalidated", f"{cap.describe()} was invalidated ({cap.reason})")
        if flags not in (0, 1):
            raise SimError("InvalidValue", f"cudaStreamUpdateCaptureDependencies flags {flags:#x}")
        nodes = self._nodes_in(deps, n, "cudaStreamUpdateCaptureDependencies")
        edges = read_edges(edata, n)
        for x in nodes:
            if x.graph is not cap.graph:
                raise SimError("InvalidValue", f"node {x.handle:#x} is not in the graph being captured")
        if len({id(x) for x in nodes}) != len(nodes):
            raise SimError("InvalidValue", "the same node is given twice")
        given = list(zip(nodes, edges))
        st.deps = given if flags == 1 else merge_deps(st.deps, given)

    def cudaThreadExchangeStreamCaptureMode(self, mode: Any) -> None:
        m = int(mode[0])
        if m not in MODE_NAMES:
            raise SimError("InvalidValue", f"capture mode {m}")
        mode[0], self.thread.mode = self.thread.mode, m
