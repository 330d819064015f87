"""The runtime's event section: events (creation, destruction), recording on a stream or into a
capture, query and synchronization, elapsed time.
"""

from __future__ import annotations

from typing import Any

from ._core import SimError, handle
from ._graph import EVENT_RECORD, EventP
from ._rt_base import EVENT_EXTERNAL, RuntimeBase, _now_ms
from ._state import STATUS_ACTIVE, Event

EVENT_DISABLE_TIMING = 2


class EventSection(RuntimeBase):
    """Events: create, record, query, synchronize, elapsed time."""

    # =========================================================================== events
    def cudaEventCreate(self, out: Any) -> None:
        self.cudaEventCreateWithFlags(out, 0)

    def cudaEventCreateWithFlags(self, out: Any, flags: int) -> None:
        self._out(out, "cudaEventCreate")
        if flags & ~0x7:
            raise SimError("InvalidValue", f"event flags {flags:#x}")
        e = Event(self.cur_device, flags)
        self.events[e.handle] = e
        out[0] = handle("cudaEvent_t", e.handle)

    def cudaEventDestroy(self, event: Any) -> None:
        e = self._event(event)
        e.destroyed = True
        del self.events[e.handle]

    def cudaEventRecord(self, event: Any, stream: Any) -> None:
        self._record(event, stream, 0, "cudaEventRecord")

    def cudaEventRecordWithFlags(self, event: Any, stream: Any, flags: int) -> None:
        if flags not in (0, EVENT_EXTERNAL):
            raise SimError("InvalidValue", f"cudaEventRecordWithFlags flags {flags:#x}")
        self._record(event, stream, flags, "cudaEventRecordWithFlags")

    def _record(self, event: Any, stream: Any, flags: int, what: str) -> None:
        ev = self._event(event)
        st = self._stream(stream)
        if ev.device != st.device:
            # CUDA Runtime API, cudaEventRecord: "event and stream must be on the same device"; the
            # driver's cuEventRecord: "hEvent and hStream must be from the same context otherwise
            # CUDA_ERROR_INVALID_HANDLE is returned" (seen on 2 H200s: cudaErrorInvalidResourceHandle).
            # A wait (cudaStreamWaitEvent) may use another device's event.
            raise SimError("InvalidResourceHandle", f"{what}: the event belongs to device {ev.device} and the "
                                                    f"stream to device {st.device}")
        cap = st.capture
        if cap is not None:
            if cap.status != STATUS_ACTIVE:
                raise SimError("StreamCaptureInvalidated", f"{cap.describe()} was invalidated ({cap.reason})")
            if flags == EVENT_EXTERNAL:  # an event-record node
                self._submit(st, what, lambda: (EVENT_RECORD, EventP(ev.handle)), lambda: None)
            ev.capture, ev.cap_deps, ev.cap_tokens = cap, list(st.deps), set(st.tokens)
            ev.recorded = False
            return
        self._legacy_check(st, what)
        ev.capture = None
        ev.recorded = True
        ev.time = _now_ms()

    def _event_check(self, ev: Event, what: str) -> None:
        cap = ev.captured()
        if cap is not None and cap.status != STATUS_ACTIVE:
            # recorded in a capture that is invalidated (not yet ended): CUDA 13.0/13.5 answer
            # InvalidValue, as for an ended one (differential test, regression
            # gpu-query-event-of-invalidated-capture)
            raise SimError("InvalidValue", f"{what}: the event was last recorded in {cap.describe()}, "
                                           f"which was invalidated ({cap.reason})")
        if cap is not None:
            cap.invalidate(f"{what} of an event recorded in the capture")
            raise SimError("CapturedEvent", f"{what}: the event was last recorded in {cap.describe()}; the "
                                            "capture is invalidated")
        self._unsafe(what)

    def cudaEventQuery(self, event: Any) -> None:
        ev = self._event(event)
        if ev.capture is not None and ev.capture.ended:
            # answered before the capture rules (CUDA 12.9 during an invalidated capture:
            # differential test, regression gpu-query-event-of-ended-capture-first)
            raise SimError("InvalidValue", f"cudaEventQuery: the event was last recorded in "
                                           f"{ev.capture.describe()}, which has ended")
        self._event_check(ev, "cudaEventQuery")
        if ev.capture is not None:
            # last recorded in a capture that has ended: CUDA 13.0/13.5 answer InvalidValue
            # (found by the cuda-vs-sim differential test, regression seed-capture-fork-join)
            raise SimError("InvalidValue", f"cudaEventQuery: the event was last recorded in "
                                           f"{ev.capture.describe()}, which has ended")

    def cudaEventSynchronize(self, event: Any) -> None:
        ev = self._event(event)
        self._event_check(ev, "cudaEventSynchronize")
        self._after_sync(ev.device)

    def cudaEventElapsedTime(self, ms: Any, start: Any, end: Any) -> None:
        a, b = self._event(start), self._event(end)
        for e in (a, b):
            if e.captured() is not None:
                raise SimError("CapturedEvent", "cudaEventElapsedTime: an event was last recorded in a capture")
        if (a.flags | b.flags) & EVENT_DISABLE_TIMING:
            raise SimError("InvalidResourceHandle", "an event was created with cudaEventDisableTiming")
        if a.time is None or b.time is None:
            raise SimError("InvalidResourceHandle", "an event has not been recorded")
        ms[0] = b.time - a.time
