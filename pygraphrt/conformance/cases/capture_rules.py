"""Conformance cases, area ``capture``: the rules a capture imposes on other calls.

Capture modes (global / thread_local / relaxed) and the per-thread interaction mode
(``exchange_capture_mode``), potentially unsafe calls (synchronous allocation,
synchronization and queries) from the capturing thread and from another thread,
events recorded in a capture, and invalidation with its aftermath.  Helpers and
conventions are those of :mod:`.capture`.
"""

from __future__ import annotations

from typing import Any, Callable

from pygraphrt import errors
from pygraphrt.enums import CaptureMode, CaptureStatus, NodeType

from .._case import CaseContext, case
from .capture import (BEGIN, BEGIN_END, DOC_STREAM_BEGIN_CAPTURE_WHEN_STREAM, DOC_STREAM_GET_CAPTURE_INFO_VALID_DATA,
                      DOC_STREAM_IS_CAPTURING_AFTER_SUCCESSFUL, END, ERROR_TYPES, EXCHANGE, N,
                      PG_INVALIDATION, PG_PROHIBITED, PYGRAPHRT, PYGRAPHRT_BEGIN, _event_query,
                      _fails_then_clean, _force_end, _graph, _in_thread, _malloc, _not_capturing, _raw_end,
                      _raises_here, _raw_end_keep, _register, _rt_status, _thread_mode, _types)

Op = Callable[[Any], Any]  # an operation attempted during the capture, given the capturing stream

# the header's words (cudaThreadExchangeStreamCaptureMode), quoted; the gloss after "--" says how the
# case reads them
_UNSAFE = EXCHANGE + ('"During stream capture (see cudaStreamBeginCapture), some actions, such as a call to '
                      'cudaMalloc, may be unsafe" ... "A thread\'s mode is one of the following" ... ')
GLOBAL_RULE = _UNSAFE + ('"cudaStreamCaptureModeGlobal: This is the default mode. If the local thread has an '
                         'ongoing capture sequence that was not initiated with cudaStreamCaptureModeRelaxed at '
                         'cuStreamBeginCapture, or if any other thread has a concurrent capture sequence '
                         'initiated with cudaStreamCaptureModeGlobal, this thread is prohibited from '
                         'potentially unsafe API calls"')
THREAD_LOCAL_RULE = _UNSAFE + ('"cudaStreamCaptureModeThreadLocal: If the local thread has an ongoing capture '
                               'sequence not initiated with cudaStreamCaptureModeRelaxed, it is prohibited from '
                               'potentially unsafe API calls. Concurrent capture sequences in other threads are '
                               'ignored"')
RELAXED_RULE = _UNSAFE + ('"cudaStreamCaptureModeRelaxed: The local thread is not prohibited from potentially '
                          'unsafe API calls"')
RELAXED_CONFLICT = _UNSAFE + ('"Note that the thread is still prohibited from API calls which necessarily '
                              'conflict with stream capture, for example, attempting cudaEventQuery on an event '
                              'that was last recorded inside a capture sequence"')
SYNC_RULE = PG_PROHIBITED + ("it is invalid to synchronize or query the execution status of a stream which "
                             "is being captured or a captured event (cudaErrorStreamCaptureUnsupported)")
DEVICE_RULE = PG_PROHIBITED + ("it is also invalid to query the execution status of or synchronize a "
                               "broader handle which encompasses an active stream capture, such as a "
                               "device or context handle")
CAPTURED_EVENT = ERROR_TYPES + ('"cudaErrorCapturedEvent: The operation is not permitted on an event which '
                                'was last recorded in a capturing stream"')
WRONG_THREAD = END + ("if the mode argument to cudaStreamBeginCapture was not Relaxed, this call must be "
                      "from the same thread as cudaStreamBeginCapture (cudaErrorStreamCaptureWrongThread)")
INVALIDATION = PG_INVALIDATION + ("when an invalid operation is attempted during stream capture, any "
                                  "associated capture graphs are invalidated; cudaStreamEndCapture then "
                                  "returns an error and a NULL graph")

_SYNC = ("StreamSynchronize",)
_QUERY = ("StreamQuery",)
_DEVSYNC = ("DeviceSynchronize",)
_MALLOC = ("Malloc",)
_EQUERY = ("EventQuery",)
_ESYNC = ("EventSynchronize",)


# ---------------------------------------------------------------------------- patterns
def _refused(t: CaseContext, exc: type[BaseException], op: Op, mode: str = "global") -> None:
    """During a ``mode`` capture (one memset captured) ``op(stream)`` must raise ``exc``;
    the capture is then aborted and the stream must be left not capturing; ``exc`` is re-raised."""
    s, a = t.stream(), t.malloc(N)
    cap = s.begin_capture(mode)
    try:
        try:
            s.memset(a, 1, N)
            err = _raises_here(t, exc, op, s)
        finally:
            cap.abort()
        _not_capturing(t, s, after=f"aborting after {type(err).__name__}")
    finally:
        _force_end(s)
    raise err


def _invalidates(t: CaseContext, first: type[BaseException], op: Op, mode: str = "global") -> None:
    """``op(stream)`` raises ``first`` inside a ``mode`` capture; ending the capture must then
    raise StreamCaptureInvalidated and leave the stream not capturing."""
    s, a = t.stream(), t.malloc(N)

    def body() -> None:
        with s.capture(mode):
            s.memset(a, 1, N)
            t.raises(first, op, s)

    _fails_then_clean(t, errors.StreamCaptureInvalidated, body, s)


def _allowed(t: CaseContext, op: Op, mode: str = "global") -> Any:
    """``op(stream)`` between two captured memsets succeeds; returns (its result, node types)."""
    s, a = t.stream(), t.malloc(N)
    with s.capture(mode) as cap:
        s.memset(a, 1, N)
        result = op(s)
        s.memset(a, 2, N)
    return result, _types(_graph(t, cap))


_TWO_MEMSETS = (NodeType.MEMSET, NodeType.MEMSET)


def _mode_now(t: CaseContext) -> Any:
    """This thread's capture-interaction mode as ThreadExchangeStreamCaptureMode reports it: another mode
    is exchanged in (the call returns the one it replaced) and the reported one put back.  (Exchanging the
    same mode would not show a runtime that ignores the exchange.)"""
    probe = CaptureMode.RELAXED
    now = t.rt.exchange_capture_mode(probe)
    if now is probe:  # relaxed already: probe with another mode
        now = t.rt.exchange_capture_mode(CaptureMode.GLOBAL)
        t.rt.exchange_capture_mode(now)
        return now
    t.rt.exchange_capture_mode(now)
    return now


def _malloc_ok(t: CaseContext) -> bool:
    return bool(_malloc(t).is_valid)


def _device_sync(t: CaseContext) -> None:
    t.rt.current_device().synchronize()


def _idle_stream(t: CaseContext) -> Any:
    """A stream with completed work on it, outside any capture."""
    s2, b = t.stream(), t.malloc(N)
    s2.memset(b, 1, N)
    s2.synchronize()
    return s2


def _done_event(t: CaseContext) -> Any:
    """An event recorded outside any capture and already complete."""
    s2, b, ev = t.stream(), t.malloc(N), t.event()
    s2.memset(b, 1, N)
    s2.record(ev)
    s2.synchronize()
    ev.synchronize()
    return ev


# Documentation passages several cases quote (each case adds its own gloss after them).
DOC_EXCHANGE_CAPTURE_MODE_GLOBAL = ("CUDA Runtime API 13.5, Stream Management, "
                                    "cudaThreadExchangeStreamCaptureMode: \"During stream capture (see "
                                    "cudaStreamBeginCapture), some actions, such as a call to cudaMalloc, may "
                                    "be unsafe\" ... \"If the local thread has an ongoing capture sequence that "
                                    "was not initiated with cudaStreamCaptureModeRelaxed at "
                                    "cuStreamBeginCapture, or if any other thread has a concurrent capture "
                                    "sequence initiated with cudaStreamCaptureModeGlobal, this thread is "
                                    "prohibited from potentially unsafe API calls\"")
DOC_EXCHANGE_CAPTURE_MODE_RELAXED = ("CUDA Runtime API 13.5, Stream Management, "
                                     "cudaThreadExchangeStreamCaptureMode: \"During stream capture (see "
                                     "cudaStreamBeginCapture), some actions, such as a call to cudaMalloc, may "
                                     "be unsafe\" ... \"The local thread is not prohibited from potentially "
                                     "unsafe API calls\"")
DOC_EXCHANGE_CAPTURE_MODE_THREAD_LOCAL = ("CUDA Runtime API 13.5, Stream Management, "
                                          "cudaThreadExchangeStreamCaptureMode: \"During stream capture (see "
                                          "cudaStreamBeginCapture), some actions, such as a call to "
                                          "cudaMalloc, may be unsafe\" ... \"If the local thread has an ongoing "
                                          "capture sequence not initiated with cudaStreamCaptureModeRelaxed, "
                                          "it is prohibited from potentially unsafe API calls. Concurrent "
                                          "capture sequences in other threads are ignored\"")
DOC_STREAM_BEGIN_CAPTURE_MODE_CALLED = ("CUDA Runtime API 13.5, Stream Management, cudaStreamBeginCapture: \"If "
                                        "mode is not cudaStreamCaptureModeRelaxed, cudaStreamEndCapture must "
                                        "be called on this stream from the same thread\"")
DOC_STREAM_END_CAPTURE_MODE_ARGUMENT = ("CUDA Runtime API 13.5, Stream Management, cudaStreamEndCapture: \"If "
                                        "the mode argument to cudaStreamBeginCapture was not "
                                        "cudaStreamCaptureModeRelaxed, this call must be from the same thread "
                                        "as cudaStreamBeginCapture\"")


# ============================================================================ modes: synchronous allocation
@case("capture.mode.global_sync_malloc",
      cite=DOC_EXCHANGE_CAPTURE_MODE_GLOBAL + " -- during stream capture some actions, such as a call to "
           "cudaMalloc, may be unsafe; the thread's mode decides whether it may make them: "
           "cudaStreamCaptureModeGlobal: if the local thread has an ongoing capture not initiated with Relaxed, "
           "or any other thread has a concurrent capture initiated with Global, this thread is prohibited from "
           "potentially unsafe API calls", apis=BEGIN_END + _MALLOC, raises=errors.StreamCaptureUnsupported)
def _(t: CaseContext) -> Any:
    """A synchronous allocation on the thread of a global-mode capture raises StreamCaptureUnsupported."""
    _refused(t, errors.StreamCaptureUnsupported, lambda s: _malloc(t), "global")


@case("capture.mode.global_sync_malloc_invalidates",
      cite=INVALIDATION, apis=BEGIN_END + _MALLOC, raises=errors.StreamCaptureInvalidated)
def _(t: CaseContext) -> Any:
    """After the refused allocation, ending the global-mode capture raises StreamCaptureInvalidated."""
    _invalidates(t, errors.StreamCaptureUnsupported, lambda s: _malloc(t), "global")


@case("capture.mode.thread_local_sync_malloc",
      cite=DOC_EXCHANGE_CAPTURE_MODE_THREAD_LOCAL + " -- during stream capture some actions, such as a call to "
           "cudaMalloc, may be unsafe; the thread's mode decides whether it may make them: "
           "cudaStreamCaptureModeThreadLocal: if the local thread has an ongoing capture not initiated with "
           "Relaxed, it is prohibited from potentially unsafe API calls; concurrent captures in other threads "
           "are ignored", apis=BEGIN_END + _MALLOC, raises=errors.StreamCaptureUnsupported)
def _(t: CaseContext) -> Any:
    """A synchronous allocation on the thread of a thread-local capture raises StreamCaptureUnsupported."""
    _refused(t, errors.StreamCaptureUnsupported, lambda s: _malloc(t), "thread_local")


@case("capture.mode.thread_local_sync_malloc_invalidates",
      cite=INVALIDATION, apis=BEGIN_END + _MALLOC, raises=errors.StreamCaptureInvalidated)
def _(t: CaseContext) -> Any:
    """After the refused allocation, ending the thread-local capture raises StreamCaptureInvalidated."""
    _invalidates(t, errors.StreamCaptureUnsupported, lambda s: _malloc(t), "thread_local")


@case("capture.mode.relaxed_sync_malloc_allowed",
      cite=DOC_EXCHANGE_CAPTURE_MODE_RELAXED + " -- during stream capture some actions, such as a call to "
           "cudaMalloc, may be unsafe; the thread's mode decides whether it may make them: "
           "cudaStreamCaptureModeRelaxed: the local thread is not prohibited from potentially unsafe API calls; "
           "a capture initiated with Relaxed does not prohibit its own thread",
      apis=BEGIN_END + _MALLOC, expect=(True, _TWO_MEMSETS))
def _(t: CaseContext) -> Any:
    """A synchronous allocation during a relaxed capture succeeds and the capture goes on."""
    return _allowed(t, lambda s: _malloc_ok(t), "relaxed")


@case("capture.mode.thread_relaxed_in_global_capture",
      cite=DOC_EXCHANGE_CAPTURE_MODE_RELAXED + " -- during stream capture some actions, such as a call to "
           "cudaMalloc, may be unsafe; the thread's mode decides whether it may make them: "
           "cudaStreamCaptureModeRelaxed: the local thread is not prohibited from potentially unsafe API calls; "
           "a thread may switch to Relaxed around an unsafe call (push-pop use of the API)",
      apis=BEGIN_END + _MALLOC + ("ThreadExchangeStreamCaptureMode",), expect=(True, _TWO_MEMSETS))
def _(t: CaseContext) -> Any:
    """During a global capture, the capturing thread switched to relaxed mode may allocate."""
    def op(s: Any) -> bool:
        with _thread_mode(t, "relaxed"):
            return _malloc_ok(t)

    return _allowed(t, op, "global")


@case("capture.mode.thread_thread_local_in_global_capture",
      cite=DOC_EXCHANGE_CAPTURE_MODE_THREAD_LOCAL + " -- during stream capture some actions, such as a call to "
           "cudaMalloc, may be unsafe; the thread's mode decides whether it may make them: "
           "cudaStreamCaptureModeThreadLocal: if the local thread has an ongoing capture not initiated with "
           "Relaxed, it is prohibited from potentially unsafe API calls; concurrent captures in other threads "
           "are ignored", apis=BEGIN_END + _MALLOC + ("ThreadExchangeStreamCaptureMode",),
      raises=errors.StreamCaptureUnsupported)
def _(t: CaseContext) -> Any:
    """Switching the capturing thread to thread-local mode (the exchange checked: the runtime reports
    thread-local) does not lift the prohibition of its own capture."""
    def op(s: Any) -> Any:
        with _thread_mode(t, "thread_local"):
            t.check_equal(_mode_now(t), CaptureMode.THREAD_LOCAL, "this thread's mode after the exchange")
            return _malloc(t)

    _refused(t, errors.StreamCaptureUnsupported, op, "global")


@case("capture.mode.thread_thread_local_in_relaxed_capture",
      cite=DOC_EXCHANGE_CAPTURE_MODE_THREAD_LOCAL + " -- during stream capture some actions, such as a call to "
           "cudaMalloc, may be unsafe; the thread's mode decides whether it may make them: "
           "cudaStreamCaptureModeThreadLocal: if the local thread has an ongoing capture not initiated with "
           "Relaxed, it is prohibited from potentially unsafe API calls; concurrent captures in other threads "
           "are ignored (a Relaxed capture of the thread's own does not count)",
      apis=BEGIN_END + _MALLOC + ("ThreadExchangeStreamCaptureMode",),
      expect=((CaptureMode.THREAD_LOCAL, True), _TWO_MEMSETS))
def _(t: CaseContext) -> Any:
    """A thread in thread-local mode (as the runtime reports it) whose own capture is relaxed may allocate."""
    def op(s: Any) -> Any:
        with _thread_mode(t, "thread_local"):
            return _mode_now(t), _malloc_ok(t)

    return _allowed(t, op, "relaxed")


@case("capture.mode.exchange_returns_previous",
      cite="CUDA Runtime API 13.5, Stream Management, cudaThreadExchangeStreamCaptureMode: \"Sets the "
           "calling thread's stream capture interaction mode to the value contained in *mode, and "
           "overwrites *mode with the previous mode for the thread\" ... \"cudaStreamCaptureModeGlobal: This "
           "is the default mode\" -- sets the calling thread's mode to *mode and overwrites *mode with "
           "the previous mode; a new thread starts in cudaStreamCaptureModeGlobal",
      apis=("ThreadExchangeStreamCaptureMode",),
      expect=[CaptureMode.GLOBAL, CaptureMode.THREAD_LOCAL, CaptureMode.RELAXED])
def _(t: CaseContext) -> Any:
    """On a new thread: global (the default), then each mode set is returned by the next exchange."""
    def run() -> list[Any]:
        seen = [t.rt.exchange_capture_mode("thread_local"),
                t.rt.exchange_capture_mode(CaptureMode.RELAXED),
                t.rt.exchange_capture_mode("global")]
        return seen

    return _in_thread(t, run)


@case("capture.mode.exchange_is_per_thread",
      cite="CUDA Runtime API 13.5, Stream Management, cudaThreadExchangeStreamCaptureMode: \"Sets the "
           "calling thread's stream capture interaction mode to the value contained in *mode, and "
           "overwrites *mode with the previous mode for the thread\" -- sets the calling thread's stream "
           "capture interaction mode (other threads keep theirs)",
      apis=("ThreadExchangeStreamCaptureMode",), expect=(CaptureMode.GLOBAL, CaptureMode.RELAXED))
def _(t: CaseContext) -> Any:
    """A mode set on this thread is not seen by another thread; this thread keeps it."""
    with _thread_mode(t, "relaxed"):
        other = _in_thread(t, lambda: t.rt.exchange_capture_mode("global"))
        mine = t.rt.exchange_capture_mode("relaxed")
    return other, mine


# pygraphrt gap: CaptureMode("bogus") raises a plain ValueError, not pygraphrt's InvalidValue.
@case("capture.mode.exchange_unknown_name", kind="binding",
      cite=EXCHANGE + "mode is a cudaStreamCaptureMode; other values are invalid (cudaErrorInvalidValue)",
      apis=("ThreadExchangeStreamCaptureMode",), raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """``exchange_capture_mode("bogus")`` raises InvalidValue and leaves the thread's mode unchanged."""
    before = t.rt.exchange_capture_mode("global")
    try:
        err = _raises_here(t, errors.InvalidValue, t.rt.exchange_capture_mode, "bogus")
        t.check_equal(t.rt.exchange_capture_mode("global"), CaptureMode.GLOBAL, "mode after the refused exchange")
    finally:
        t.rt.exchange_capture_mode(before)
    raise err


# ============================================================================ other threads
def _other_thread(t: CaseContext, fn: Callable[[], Any]) -> Op:
    return lambda s: _in_thread(t, fn)


@case("capture.thread.global_capture_other_thread_malloc",
      cite=DOC_EXCHANGE_CAPTURE_MODE_GLOBAL + " -- during stream capture some actions, such as a call to "
           "cudaMalloc, may be unsafe; the thread's mode decides whether it may make them: "
           "cudaStreamCaptureModeGlobal: if the local thread has an ongoing capture not initiated with Relaxed, "
           "or any other thread has a concurrent capture initiated with Global, this thread is prohibited from "
           "potentially unsafe API calls", apis=BEGIN_END + _MALLOC, raises=errors.StreamCaptureUnsupported)
def _(t: CaseContext) -> Any:
    """While this thread captures in global mode, another (global-mode) thread may not allocate synchronously."""
    _refused(t, errors.StreamCaptureUnsupported, _other_thread(t, lambda: _malloc(t)), "global")


# unsure: that the other thread's refused call invalidates this thread's capture (Warp's docs
# and HIP's implementation say so; the CUDA reference does not spell it out).
@case("capture.thread.global_capture_other_thread_malloc_invalidates",
      cite=INVALIDATION, apis=BEGIN_END + _MALLOC, raises=errors.StreamCaptureInvalidated)
def _(t: CaseContext) -> Any:
    """After another thread's refused allocation, ending the global capture raises StreamCaptureInvalidated."""
    _invalidates(t, errors.StreamCaptureUnsupported, _other_thread(t, lambda: _malloc(t)), "global")


@case("capture.thread.thread_local_capture_other_thread_malloc",
      cite=DOC_EXCHANGE_CAPTURE_MODE_GLOBAL + " -- during stream capture some actions, such as a call to "
           "cudaMalloc, may be unsafe; the thread's mode decides whether it may make them: "
           "cudaStreamCaptureModeGlobal: if the local thread has an ongoing capture not initiated with Relaxed, "
           "or any other thread has a concurrent capture initiated with Global, this thread is prohibited from "
           "potentially unsafe API calls (only captures initiated with Global restrict other threads)",
      apis=BEGIN_END + _MALLOC, expect=(True, _TWO_MEMSETS))
def _(t: CaseContext) -> Any:
    """During a thread-local capture another thread may allocate synchronously."""
    return _allowed(t, _other_thread(t, lambda: _malloc_ok(t)), "thread_local")


@case("capture.thread.relaxed_capture_other_thread_malloc",
      cite=DOC_EXCHANGE_CAPTURE_MODE_GLOBAL + " -- during stream capture some actions, such as a call to "
           "cudaMalloc, may be unsafe; the thread's mode decides whether it may make them: "
           "cudaStreamCaptureModeGlobal: if the local thread has an ongoing capture not initiated with Relaxed, "
           "or any other thread has a concurrent capture initiated with Global, this thread is prohibited from "
           "potentially unsafe API calls (a Relaxed capture restricts no other thread)",
      apis=BEGIN_END + _MALLOC, expect=(True, _TWO_MEMSETS))
def _(t: CaseContext) -> Any:
    """During a relaxed capture another thread may allocate synchronously."""
    return _allowed(t, _other_thread(t, lambda: _malloc_ok(t)), "relaxed")


@case("capture.thread.other_thread_relaxed_mode_malloc",
      cite=DOC_EXCHANGE_CAPTURE_MODE_RELAXED + " -- during stream capture some actions, such as a call to "
           "cudaMalloc, may be unsafe; the thread's mode decides whether it may make them: "
           "cudaStreamCaptureModeRelaxed: the local thread is not prohibited from potentially unsafe API calls", apis=BEGIN_END + _MALLOC + ("ThreadExchangeStreamCaptureMode",),
      expect=(True, _TWO_MEMSETS))
def _(t: CaseContext) -> Any:
    """During a global capture, another thread in relaxed mode may allocate synchronously."""
    def run() -> bool:
        with _thread_mode(t, "relaxed"):
            return _malloc_ok(t)

    return _allowed(t, _other_thread(t, run), "global")


@case("capture.thread.other_thread_thread_local_mode_malloc",
      cite=DOC_EXCHANGE_CAPTURE_MODE_THREAD_LOCAL + " -- during stream capture some actions, such as a call to "
           "cudaMalloc, may be unsafe; the thread's mode decides whether it may make them: "
           "cudaStreamCaptureModeThreadLocal: if the local thread has an ongoing capture not initiated with "
           "Relaxed, it is prohibited from potentially unsafe API calls; concurrent captures in other threads "
           "are ignored", apis=BEGIN_END + _MALLOC + ("ThreadExchangeStreamCaptureMode",),
      expect=(True, _TWO_MEMSETS))
def _(t: CaseContext) -> Any:
    """During a global capture, another thread in thread-local mode (no capture of its own) may allocate."""
    def run() -> bool:
        with _thread_mode(t, "thread_local"):
            return _malloc_ok(t)

    return _allowed(t, _other_thread(t, run), "global")


@case("capture.thread.work_from_other_thread_is_captured",
      cite=DOC_STREAM_BEGIN_CAPTURE_WHEN_STREAM + " -- all operations pushed into a capturing stream are "
           "captured, whichever thread pushes them",
      apis=BEGIN_END + ("MemsetAsync",), expect=(NodeType.MEMSET, NodeType.MEMSET, NodeType.MEMSET))
def _(t: CaseContext) -> Any:
    """Work another thread issues on the capturing stream lands in the capture, in order."""
    s, a = t.stream(), t.malloc(N)
    with s.capture("global") as cap:
        s.memset(a, 1, N)
        _in_thread(t, lambda: s.memset(a, 2, N))
        s.memset(a, 3, N)
    return _types(_graph(t, cap))


@case("capture.thread.captures_on_two_threads",
      cite=DOC_EXCHANGE_CAPTURE_MODE_THREAD_LOCAL + " -- during stream capture some actions, such as a call to "
           "cudaMalloc, may be unsafe; the thread's mode decides whether it may make them: "
           "cudaStreamCaptureModeThreadLocal: if the local thread has an ongoing capture not initiated with "
           "Relaxed, it is prohibited from potentially unsafe API calls; concurrent captures in other threads "
           "are ignored; each thread captures its own stream independently",
      apis=BEGIN_END, expect=((NodeType.MEMSET,), (NodeType.MEMCPY,)))
def _(t: CaseContext) -> Any:
    """Two threads capture two streams at the same time in thread-local mode; both graphs are complete."""
    s1, s2, a, b = t.stream(), t.stream(), t.malloc(N), t.malloc(N)

    def other() -> Any:
        with s2.capture("thread_local") as c2:
            s2.memcpy(b, a, N)
        return c2

    with s1.capture("thread_local") as c1:
        s1.memset(a, 1, N)
        c2 = _in_thread(t, other)
    return _types(_graph(t, c1)), _types(_graph(t, c2))


def _end_elsewhere(t: CaseContext, mode: str) -> None:
    s, a = t.stream(), t.malloc(N)
    cap = s.begin_capture(mode)
    try:
        s.memset(a, 1, N)
        err = _raises_here(t, errors.StreamCaptureWrongThread, _in_thread, t, cap.end)
    finally:
        _force_end(s)  # pygraphrt's Capture counts itself ended: end it from this thread
        cap.abort()
    raise err


@case("capture.thread.end_wrong_thread_global",
      cite=DOC_STREAM_END_CAPTURE_MODE_ARGUMENT + " -- if the mode argument to cudaStreamBeginCapture was not "
           "Relaxed, this call must be from the same thread as cudaStreamBeginCapture "
           "(cudaErrorStreamCaptureWrongThread)", apis=BEGIN_END, raises=errors.StreamCaptureWrongThread)
def _(t: CaseContext) -> Any:
    """Ending a global-mode capture from another thread raises StreamCaptureWrongThread."""
    _end_elsewhere(t, "global")


@case("capture.thread.end_wrong_thread_thread_local",
      cite=DOC_STREAM_END_CAPTURE_MODE_ARGUMENT + " -- if the mode argument to cudaStreamBeginCapture was not "
           "Relaxed, this call must be from the same thread as cudaStreamBeginCapture "
           "(cudaErrorStreamCaptureWrongThread)", apis=BEGIN_END, raises=errors.StreamCaptureWrongThread)
def _(t: CaseContext) -> Any:
    """Ending a thread-local capture from another thread raises StreamCaptureWrongThread."""
    _end_elsewhere(t, "thread_local")


# Observed on CUDA 12.9, 13.0 and 13.5 (H100, driver 580): the refused end still ends the capture
# sequence -- the stream is no longer capturing, and a second end from the beginning thread gets
# cudaErrorIllegalState.  The documentation does not say so: that observation is a deviation entry
# (deviations.py), and the case expects what the documentation says.
@case("capture.thread.wrong_thread_end_ends_the_capture",
      cite=WRONG_THREAD + "; the end \"must be from the same thread as cudaStreamBeginCapture\": the refused end "
      "from another thread leaves the capture (ACTIVE) for the beginning thread to end",
      apis=BEGIN_END + ("StreamIsCapturing",), expect=(CaptureStatus.ACTIVE, "ended"))
def _(t: CaseContext) -> Any:
    """After the refused end from another thread the stream still captures, and the beginning thread ends it."""
    s, a = t.stream(), t.malloc(N)
    cap = s.begin_capture("global")
    try:
        s.memset(a, 1, N)
        t.raises(errors.StreamCaptureWrongThread, _in_thread, t, cap.end)
        status = _rt_status(s)
        try:
            _raw_end(s)  # the beginning thread tries to end it
            second = "ended"
        except errors.GraphRTError as e:
            second = type(e).__name__
    finally:
        _force_end(s)
        cap.abort()
    return status, second


# Once a regression: Capture.end() marked the capture ended before the runtime accepted the
# end; where a runtime keeps the capture after a wrong-thread end (HIP), abort() must end it.
@case("capture.thread.abort_after_wrong_thread_end", kind="binding",
      cite=PYGRAPHRT + "a failed capture leaves no stream capturing; after a wrong-thread end the beginning "
                       "thread's abort() ends it",
      apis=BEGIN_END + ("StreamIsCapturing",), expect=CaptureStatus.NONE)
def _(t: CaseContext) -> Any:
    """``abort()`` on the beginning thread after a refused wrong-thread ``end()`` leaves the stream not capturing."""
    s, a = t.stream(), t.malloc(N)
    cap = s.begin_capture("global")
    try:
        s.memset(a, 1, N)
        t.raises(errors.StreamCaptureWrongThread, _in_thread, t, cap.end)
        cap.abort()
        return _rt_status(s)
    finally:
        _force_end(s)


@case("capture.thread.end_other_thread_relaxed",
      cite=DOC_STREAM_BEGIN_CAPTURE_MODE_CALLED + " -- only captures not initiated with Relaxed must be ended on "
           "the beginning thread; the documentation states the restriction only, that a relaxed capture may be "
           "ended from another thread is read from it",
      apis=BEGIN_END, expect=((NodeType.MEMSET,), CaptureStatus.NONE))
def _(t: CaseContext) -> Any:
    """A relaxed capture may be ended from another thread."""
    s, a = t.stream(), t.malloc(N)
    cap = s.begin_capture("relaxed")
    try:
        s.memset(a, 1, N)
        g = t.track(_in_thread(t, cap.end))
    finally:
        cap.abort()
        _force_end(s)
    return _types(g), s.capture_status


@case("capture.thread.begin_elsewhere_end_here_relaxed",
      cite=DOC_STREAM_BEGIN_CAPTURE_MODE_CALLED + " -- only captures not initiated with Relaxed must be ended on "
           "the beginning thread; the documentation states the restriction only, that a relaxed capture may be "
           "continued and ended on another thread is read from it",
      apis=BEGIN_END, expect=(NodeType.MEMSET, NodeType.MEMSET))
def _(t: CaseContext) -> Any:
    """A relaxed capture begun on another thread is continued and ended on this one."""
    s, a = t.stream(), t.malloc(N)
    made: list[Any] = []

    def begin() -> None:
        made.append(s.begin_capture("relaxed"))
        s.memset(a, 1, N)

    try:
        _in_thread(t, begin)
        s.memset(a, 2, N)
        g = t.track(made[0].end())
    finally:
        for c in made:
            c.abort()
        _force_end(s)
    return _types(g)


# ============================================================================ synchronization and queries
def _sync_case(id: str, doc: str, op: Callable[[CaseContext], Op], mode: str, cite: str,
               apis: tuple[str, ...], exc: type[BaseException] = errors.StreamCaptureUnsupported) -> None:
    def fn(t: CaseContext) -> Any:
        _refused(t, exc, op(t), mode)

    _register(id, doc, fn, cite=cite, apis=BEGIN_END + apis, raises=exc)


_sync_case("capture.sync.stream_sync_global",
           "Synchronizing the stream of a global-mode capture raises StreamCaptureUnsupported.",
           lambda t: lambda s: s.synchronize(), "global", SYNC_RULE, _SYNC)
_sync_case("capture.sync.stream_sync_thread_local",
           "Synchronizing the stream of a thread-local capture raises StreamCaptureUnsupported.",
           lambda t: lambda s: s.synchronize(), "thread_local", SYNC_RULE, _SYNC)
_sync_case("capture.sync.stream_sync_relaxed",
           "Synchronizing the stream of a relaxed capture raises StreamCaptureUnsupported (a necessary conflict).",
           lambda t: lambda s: s.synchronize(), "relaxed", SYNC_RULE + "; " + RELAXED_CONFLICT, _SYNC)
_sync_case("capture.sync.stream_sync_other_thread",
           "Another thread synchronizing the stream of a thread-local capture gets StreamCaptureUnsupported.",
           lambda t: lambda s: _in_thread(t, s.synchronize), "thread_local", SYNC_RULE, _SYNC)
_sync_case("capture.sync.stream_query_global",
           "Querying the stream of a global-mode capture raises StreamCaptureUnsupported (not NotReady).",
           lambda t: lambda s: s.is_done, "global", SYNC_RULE, _QUERY)
_sync_case("capture.sync.stream_query_thread_local",
           "Querying the stream of a thread-local capture raises StreamCaptureUnsupported.",
           lambda t: lambda s: s.is_done, "thread_local", SYNC_RULE, _QUERY)
_sync_case("capture.sync.stream_query_relaxed",
           "Querying the stream of a relaxed capture raises StreamCaptureUnsupported.",
           lambda t: lambda s: s.is_done, "relaxed", SYNC_RULE + "; " + RELAXED_CONFLICT, _QUERY)
_sync_case("capture.sync.stream_query_other_thread",
           "Another thread querying the stream of a thread-local capture gets StreamCaptureUnsupported.",
           lambda t: lambda s: _in_thread(t, lambda: s.is_done), "thread_local", SYNC_RULE, _QUERY)
_sync_case("capture.sync.device_sync_global",
           "Synchronizing the device during a global-mode capture raises StreamCaptureUnsupported.",
           lambda t: lambda s: _device_sync(t), "global", DEVICE_RULE, _DEVSYNC)
# unsure: device synchronization during a relaxed capture (HIP refuses it in every mode).
_sync_case("capture.sync.device_sync_relaxed",
           "Synchronizing the device during a relaxed capture raises StreamCaptureUnsupported.",
           lambda t: lambda s: _device_sync(t), "relaxed", DEVICE_RULE + "; " + RELAXED_CONFLICT, _DEVSYNC)
# unsure: device synchronization from another thread during a thread-local capture.
_sync_case("capture.sync.device_sync_other_thread",
           "Another thread synchronizing the device during a thread-local capture gets StreamCaptureUnsupported.",
           lambda t: lambda s: _in_thread(t, lambda: _device_sync(t)), "thread_local", DEVICE_RULE, _DEVSYNC)
# unsure: whether synchronizing an unrelated, idle stream is a "potentially unsafe" call
# (HIP allows it; CUDA's list of unsafe calls is not published).
_sync_case("capture.sync.unrelated_stream_sync_global",
           "Synchronizing an unrelated stream on the thread of a global capture raises StreamCaptureUnsupported.",
           lambda t: (lambda other: lambda s: other.synchronize())(_idle_stream(t)), "global", GLOBAL_RULE, _SYNC)
_sync_case("capture.sync.unrelated_event_query_other_thread_global",
           "Another thread querying an unrelated event during a global capture gets StreamCaptureUnsupported.",
           lambda t: (lambda ev: lambda s: _in_thread(t, lambda: _event_query(ev)))(_done_event(t)),
           "global", GLOBAL_RULE, _EQUERY)
# unsure: whether querying an unrelated, complete event is a "potentially unsafe" call on the
# capturing thread itself (HIP allows it).
_sync_case("capture.sync.unrelated_event_query_global",
           "Querying an unrelated event on the thread of a global capture raises StreamCaptureUnsupported.",
           lambda t: (lambda ev: lambda s: _event_query(ev))(_done_event(t)), "global", GLOBAL_RULE, _EQUERY)


@case("capture.sync.stream_sync_invalidates",
      cite=INVALIDATION, apis=BEGIN_END + _SYNC, raises=errors.StreamCaptureInvalidated)
def _(t: CaseContext) -> Any:
    """After the refused stream synchronization, ending the capture raises StreamCaptureInvalidated."""
    _invalidates(t, errors.StreamCaptureUnsupported, lambda s: s.synchronize(), "global")


@case("capture.sync.device_sync_invalidates",
      cite=INVALIDATION, apis=BEGIN_END + _DEVSYNC, raises=errors.StreamCaptureInvalidated)
def _(t: CaseContext) -> Any:
    """After the refused device synchronization, ending the capture raises StreamCaptureInvalidated."""
    _invalidates(t, errors.StreamCaptureUnsupported, lambda s: _device_sync(t), "global")


# unsure: invalidation by another thread's refused query (see the malloc case of the same kind).
@case("capture.sync.unrelated_event_query_other_thread_invalidates",
      cite=INVALIDATION, apis=BEGIN_END + _EQUERY, raises=errors.StreamCaptureInvalidated)
def _(t: CaseContext) -> Any:
    """After another thread's refused event query, ending the global capture raises StreamCaptureInvalidated."""
    ev = _done_event(t)
    _invalidates(t, errors.StreamCaptureUnsupported, lambda s: _in_thread(t, lambda: _event_query(ev)), "global")


@case("capture.sync.joined_stream_sync",
      cite=SYNC_RULE + " (a stream that joined a capture is being captured)",
      apis=("StreamSynchronize", "EventRecord", "StreamWaitEvent"), raises=errors.StreamCaptureUnsupported)
def _(t: CaseContext) -> Any:
    """Synchronizing a stream that joined a capture raises StreamCaptureUnsupported."""
    s1, s2, a = t.stream(), t.stream(), t.malloc(N)
    fork = t.event()
    cap = s1.begin_capture("relaxed")
    try:
        s1.memset(a, 1, N)
        s1.record(fork)
        s2.wait(fork)
        err = _raises_here(t, errors.StreamCaptureUnsupported, s2.synchronize)
    finally:
        cap.abort()
        _force_end(s1, s2)
    _not_capturing(t, s1, s2)
    raise err


@case("capture.sync.unrelated_stream_sync_relaxed",
      cite=DOC_EXCHANGE_CAPTURE_MODE_RELAXED + " -- during stream capture some actions, such as a call to "
           "cudaMalloc, may be unsafe; the thread's mode decides whether it may make them: "
           "cudaStreamCaptureModeRelaxed: the local thread is not prohibited from potentially unsafe API calls", apis=BEGIN_END + _SYNC + _QUERY, expect=(True, _TWO_MEMSETS))
def _(t: CaseContext) -> Any:
    """During a relaxed capture, an unrelated stream can be synchronized (then queries complete)."""
    other = _idle_stream(t)

    def op(s: Any) -> bool:
        other.synchronize()
        return bool(other.is_done)

    return _allowed(t, op, "relaxed")


@case("capture.sync.unrelated_stream_query_other_thread",
      cite=DOC_EXCHANGE_CAPTURE_MODE_THREAD_LOCAL + " -- during stream capture some actions, such as a call to "
           "cudaMalloc, may be unsafe; the thread's mode decides whether it may make them: "
           "cudaStreamCaptureModeThreadLocal: if the local thread has an ongoing capture not initiated with "
           "Relaxed, it is prohibited from potentially unsafe API calls; concurrent captures in other threads "
           "are ignored", apis=BEGIN_END + _QUERY, expect=(True, _TWO_MEMSETS))
def _(t: CaseContext) -> Any:
    """During a thread-local capture another thread may query an unrelated idle stream."""
    other = _idle_stream(t)
    return _allowed(t, lambda s: _in_thread(t, lambda: other.is_done), "thread_local")


@case("capture.sync.unrelated_event_query_other_thread_thread_local",
      cite=DOC_EXCHANGE_CAPTURE_MODE_THREAD_LOCAL + " -- during stream capture some actions, such as a call to "
           "cudaMalloc, may be unsafe; the thread's mode decides whether it may make them: "
           "cudaStreamCaptureModeThreadLocal: if the local thread has an ongoing capture not initiated with "
           "Relaxed, it is prohibited from potentially unsafe API calls; concurrent captures in other threads "
           "are ignored", apis=BEGIN_END + _EQUERY, expect=(True, _TWO_MEMSETS))
def _(t: CaseContext) -> Any:
    """During a thread-local capture another thread may query an unrelated complete event."""
    ev = _done_event(t)
    return _allowed(t, lambda s: _in_thread(t, lambda: _event_query(ev)), "thread_local")


@case("capture.sync.unrelated_event_query_other_thread_relaxed_mode",
      cite=DOC_EXCHANGE_CAPTURE_MODE_RELAXED + " -- during stream capture some actions, such as a call to "
           "cudaMalloc, may be unsafe; the thread's mode decides whether it may make them: "
           "cudaStreamCaptureModeRelaxed: the local thread is not prohibited from potentially unsafe API calls", apis=BEGIN_END + _EQUERY + ("ThreadExchangeStreamCaptureMode",),
      expect=(True, _TWO_MEMSETS))
def _(t: CaseContext) -> Any:
    """During a global capture, another thread in relaxed mode may query an unrelated complete event."""
    ev = _done_event(t)

    def run() -> bool:
        with _thread_mode(t, "relaxed"):
            return _event_query(ev)

    return _allowed(t, lambda s: _in_thread(t, run), "global")


@case("capture.sync.unrelated_event_query_relaxed",
      cite=DOC_EXCHANGE_CAPTURE_MODE_RELAXED + " -- during stream capture some actions, such as a call to "
           "cudaMalloc, may be unsafe; the thread's mode decides whether it may make them: "
           "cudaStreamCaptureModeRelaxed: the local thread is not prohibited from potentially unsafe API calls", apis=BEGIN_END + _EQUERY, expect=(True, _TWO_MEMSETS))
def _(t: CaseContext) -> Any:
    """During a relaxed capture, the capturing thread may query an unrelated complete event."""
    ev = _done_event(t)
    return _allowed(t, lambda s: _event_query(ev), "relaxed")


@case("capture.sync.unrelated_event_sync_relaxed",
      cite=DOC_EXCHANGE_CAPTURE_MODE_RELAXED + " -- during stream capture some actions, such as a call to "
           "cudaMalloc, may be unsafe; the thread's mode decides whether it may make them: "
           "cudaStreamCaptureModeRelaxed: the local thread is not prohibited from potentially unsafe API calls", apis=BEGIN_END + _ESYNC, expect=(None, _TWO_MEMSETS))
def _(t: CaseContext) -> Any:
    """During a relaxed capture, the capturing thread may synchronize an unrelated complete event."""
    ev = _done_event(t)
    return _allowed(t, lambda s: ev.synchronize(), "relaxed")


# ============================================================================ events recorded in a capture
def _captured_event_case(id: str, doc: str, op: Callable[[Any], Any], mode: str, cite: str,
                         apis: tuple[str, ...]) -> None:
    """Record an event in a ``mode`` capture, then ``op(event)`` must raise CapturedEvent."""
    def fn(t: CaseContext) -> Any:
        ev = t.event()

        def attempt(s: Any) -> Any:
            s.record(ev)
            return op(ev)

        _refused(t, errors.CapturedEvent, attempt, mode)

    _register(id, doc, fn, cite=cite, apis=BEGIN_END + ("EventRecord",) + apis, raises=errors.CapturedEvent)


def _query_it(ev: Any) -> Any:
    return _event_query(ev)


def _sync_it(ev: Any) -> Any:
    return ev.synchronize()


_captured_event_case("capture.event.query_captured_relaxed",
                     "Querying an event recorded in a relaxed capture raises CapturedEvent.",
                     _query_it, "relaxed", RELAXED_CONFLICT + "; " + CAPTURED_EVENT, _EQUERY)
_captured_event_case("capture.event.sync_captured_relaxed",
                     "Synchronizing an event recorded in a relaxed capture raises CapturedEvent.",
                     _sync_it, "relaxed", SYNC_RULE + "; " + CAPTURED_EVENT, _ESYNC)
# unsure: in global mode the runtime might report the unsafe call (StreamCaptureUnsupported)
# before the captured event (HIP checks the captured event first).
_captured_event_case("capture.event.query_captured_global",
                     "Querying an event recorded in a global capture raises CapturedEvent.",
                     _query_it, "global", CAPTURED_EVENT, _EQUERY)
# unsure: as capture.event.query_captured_global.
_captured_event_case("capture.event.query_captured_thread_local",
                     "Querying an event recorded in a thread-local capture raises CapturedEvent.",
                     _query_it, "thread_local", CAPTURED_EVENT, _EQUERY)
# unsure: as capture.event.query_captured_global.
_captured_event_case("capture.event.sync_captured_global",
                     "Synchronizing an event recorded in a global capture raises CapturedEvent.",
                     _sync_it, "global", CAPTURED_EVENT, _ESYNC)


@case("capture.event.query_captured_other_thread",
      cite="CUDA Runtime API 13.5, Stream Management, cudaThreadExchangeStreamCaptureMode: \"During "
           "stream capture (see cudaStreamBeginCapture), some actions, such as a call to cudaMalloc, may "
           "be unsafe\" ... \"Note that the thread is still prohibited from API calls which necessarily "
           "conflict with stream capture, for example, attempting cudaEventQuery on an event that was "
           "last recorded inside a capture sequence\" -- during stream capture some actions, such as a "
           "call to cudaMalloc, may be unsafe; the thread's mode decides whether it may make them: "
           "(Relaxed) the thread is still prohibited from API calls which necessarily conflict with "
           "stream capture, e.g. cudaEventQuery on an event last recorded inside a capture sequence; "
           "CUDA Runtime API 13.5, Data types, enum cudaError: \"cudaErrorCapturedEvent: The operation is "
           "not permitted on an event which was last recorded in a capturing stream\" -- "
           "cudaErrorCapturedEvent: the operation is not permitted on an event which was last recorded "
           "in a capturing stream", apis=BEGIN_END + ("EventRecord",) + _EQUERY,
      raises=errors.CapturedEvent)
def _(t: CaseContext) -> Any:
    """Another thread querying an event recorded in a relaxed capture gets CapturedEvent."""
    ev = t.event()

    def attempt(s: Any) -> Any:
        s.record(ev)
        return _in_thread(t, lambda: _event_query(ev))

    _refused(t, errors.CapturedEvent, attempt, "relaxed")


@case("capture.event.query_event_of_joined_stream",
      cite="CUDA Runtime API 13.5, Data types, enum cudaError: \"cudaErrorCapturedEvent: The operation is "
           "not permitted on an event which was last recorded in a capturing stream\" -- "
           "cudaErrorCapturedEvent: the operation is not permitted on an event which was last recorded "
           "in a capturing stream (any stream of the capture, including one that joined it)",
      apis=("EventRecord", "StreamWaitEvent") + _EQUERY, raises=errors.CapturedEvent)
def _(t: CaseContext) -> Any:
    """Querying an event recorded on a stream that joined the capture raises CapturedEvent."""
    s1, s2, a = t.stream(), t.stream(), t.malloc(N)
    fork, ev = t.event(), t.event()
    cap = s1.begin_capture("relaxed")
    try:
        s1.record(fork)
        s2.wait(fork)
        s2.memset(a, 1, N)
        s2.record(ev)
        err = _raises_here(t, errors.CapturedEvent, _event_query, ev)
    finally:
        cap.abort()
        _force_end(s1, s2)
    _not_capturing(t, s1, s2)
    raise err


# unsure: that the refused query of a captured event invalidates the capture (HIP does).
@case("capture.event.query_captured_invalidates",
      cite=INVALIDATION, apis=BEGIN_END + ("EventRecord",) + _EQUERY, raises=errors.StreamCaptureInvalidated)
def _(t: CaseContext) -> Any:
    """After the refused query of a captured event, ending the capture raises StreamCaptureInvalidated."""
    ev = t.event()

    def op(s: Any) -> Any:
        s.record(ev)
        return _event_query(ev)

    _invalidates(t, errors.CapturedEvent, op, "relaxed")


# ============================================================================ invalidation and its aftermath
def _invalidated_capture(t: CaseContext, s: Any, a: Any) -> Any:
    """Begin a global capture on ``s``, capture a memset, then invalidate it by a stream
    synchronization (refused).  Returns the Capture (still to be ended)."""
    cap = s.begin_capture("global")
    try:
        s.memset(a, 1, N)
        t.raises(errors.StreamCaptureUnsupported, s.synchronize)
    except BaseException:
        cap.abort()
        raise
    return cap


@case("capture.invalidation.status_invalidated",
      cite=DOC_STREAM_IS_CAPTURING_AFTER_SUCCESSFUL + " -- cudaStreamCaptureStatusInvalidated: the stream was "
           "capturing but an error has invalidated the capture sequence; it must be terminated with "
           "cudaStreamEndCapture",
      apis=("StreamIsCapturing", "StreamSynchronize"), expect=(CaptureStatus.INVALIDATED, False))
def _(t: CaseContext) -> Any:
    """After an invalidating error the stream reports INVALIDATED (``is_capturing`` is False)."""
    s, a = t.stream(), t.malloc(N)
    cap = _invalidated_capture(t, s, a)
    try:
        return s.capture_status, s.is_capturing
    finally:
        cap.abort()
        _force_end(s)


@case("capture.invalidation.info_invalidated",
      cite=DOC_STREAM_GET_CAPTURE_INFO_VALID_DATA + " -- valid data other than the capture status is returned "
           "only if the status is Active",
      apis=("StreamGetCaptureInfo", "StreamSynchronize"), expect=(CaptureStatus.INVALIDATED, None, []))
def _(t: CaseContext) -> Any:
    """``cap.info()`` of an invalidated capture: status INVALIDATED, no graph, no dependencies."""
    s, a = t.stream(), t.malloc(N)
    cap = _invalidated_capture(t, s, a)
    try:
        info = cap.info()
        return info.status, info.graph, info.dependencies
    finally:
        cap.abort()
        _force_end(s)


@case("capture.invalidation.further_work_refused",
      cite=PG_INVALIDATION + "further use of any streams which are being captured, associated with an "
                             "invalidated graph, is invalid and returns an error until the capture is ended",
      apis=("MemsetAsync", "StreamSynchronize"), raises=errors.StreamCaptureInvalidated)
def _(t: CaseContext) -> Any:
    """Work issued on a stream whose capture was invalidated raises StreamCaptureInvalidated."""
    s, a = t.stream(), t.malloc(N)
    cap = _invalidated_capture(t, s, a)
    try:
        err = _raises_here(t, errors.StreamCaptureInvalidated, s.memset, a, 2, N)
    finally:
        cap.abort()
        _force_end(s)
    _not_capturing(t, s)
    raise err


@case("capture.invalidation.end_names_failed_call",
      cite=INVALIDATION + "; pygraphrt: StreamCaptureInvalidated names the pygraphrt call that broke it",
      apis=("StreamEndCapture", "StreamSynchronize"), expect=(True, True, None))
def _(t: CaseContext) -> Any:
    """Ending an invalidated capture raises StreamCaptureInvalidated naming the failed call; no graph."""
    s, a = t.stream(), t.malloc(N)
    cap = _invalidated_capture(t, s, a)
    try:
        err = _raises_here(t, errors.StreamCaptureInvalidated, cap.end)
    finally:
        cap.abort()
        _force_end(s)
    return str(getattr(err, "api", "")).endswith("StreamEndCapture"), "StreamSynchronize" in str(err), cap.graph


@case("capture.invalidation.end_releases_stream",
      cite=PG_INVALIDATION + "cudaStreamEndCapture takes the associated streams out of capture mode, but "
                             "returns an error value and a NULL graph",
      apis=("StreamEndCapture", "StreamIsCapturing"),
      expect=(CaptureStatus.INVALIDATED, "StreamCaptureInvalidated", 0, CaptureStatus.NONE))
def _(t: CaseContext) -> Any:
    """The end of an invalidated capture (StreamEndCapture called raw: pygraphrt's end() would force the
    stream out of capture itself) fails, returns a NULL graph and leaves the stream not capturing -- the
    status read from the runtime right after that one call."""
    s, a = t.stream(), t.malloc(N)
    cap = _invalidated_capture(t, s, a)
    try:
        before = _rt_status(s)
        graph, err = _raw_end_keep(s)
        after = _rt_status(s)
        return before, type(err).__name__ if err is not None else None, graph, after
    finally:
        cap.abort()
        _force_end(s)


@case("capture.invalidation.stream_reusable",
      cite=PG_INVALIDATION + "cudaStreamEndCapture takes the streams out of capture mode: a new capture "
                             "may begin",
      apis=BEGIN_END, expect=(NodeType.MEMSET,))
def _(t: CaseContext) -> Any:
    """After an invalidated capture ended, the stream captures again normally."""
    s, a = t.stream(), t.malloc(N)
    cap = _invalidated_capture(t, s, a)
    try:
        t.raises(errors.StreamCaptureInvalidated, cap.end)
    finally:
        cap.abort()
        _force_end(s)
    with s.capture() as c2:
        s.memset(a, 3, N)
    return _types(_graph(t, c2))


@case("capture.invalidation.stream_executes_after",
      cite=PG_INVALIDATION + "after cudaStreamEndCapture the stream is out of capture mode and executes work",
      apis=("StreamEndCapture", "MemsetAsync", "StreamSynchronize"), expect=b"\x66" * 8)
def _(t: CaseContext) -> Any:
    """After an invalidated capture ended, work on the stream executes (none of the captured work did)."""
    s, a = t.stream(), t.malloc(N)
    a.copy_from(bytes(N))
    cap = _invalidated_capture(t, s, a)
    try:
        t.raises(errors.StreamCaptureInvalidated, cap.end)
    finally:
        cap.abort()
        _force_end(s)
    s.memset(a, 0x66, N)
    s.synchronize()
    return a.to_bytes(8)


@case("capture.invalidation.begin_refused_while_invalidated", kind="binding",
      cite=PYGRAPHRT_BEGIN + "a begin on a stream whose capture is invalidated but not ended is refused with "
      "IllegalState before cudaStreamBeginCapture is called (" + BEGIN + "capture \"may only be initiated if "
      "the stream is not already in capture mode\"; the runtime's own code for this case was not observed)",
      apis=("StreamBeginCapture", "StreamIsCapturing"), raises=errors.IllegalState)
def _(t: CaseContext) -> Any:
    """pygraphrt refuses a new capture on a stream whose capture is invalidated but not ended; the stream is
    left INVALIDATED (read from the runtime before any clean-up)."""
    s, a = t.stream(), t.malloc(N)
    cap = _invalidated_capture(t, s, a)
    try:
        before = t.snapshot(stream=s)
        t.check_equal(before.capture_status, CaptureStatus.INVALIDATED, "the stream before the begin")
        try:
            with t.under_test():
                s.begin_capture()
        finally:
            t.check_equal(t.snapshot(stream=s), before, "the stream after the refused begin")
    finally:
        cap.abort()
        _force_end(s)


@case("capture.invalidation.abort_releases_stream",
      cite=END + '"If capture was invalidated, due to a violation of the rules of stream capture, then a '
                 'NULL graph will be returned" -- pygraphrt\'s abort() ends an invalidated capture through '
                 'cudaStreamEndCapture: the stream is left not capturing, with no graph',
      apis=("StreamEndCapture", "StreamIsCapturing"), expect=(CaptureStatus.NONE, None))
def _(t: CaseContext) -> Any:
    """``abort()`` of an invalidated capture leaves the stream not capturing."""
    s, a = t.stream(), t.malloc(N)
    cap = _invalidated_capture(t, s, a)
    try:
        cap.abort()
        return s.capture_status, cap.graph
    finally:
        _force_end(s)


@case("capture.invalidation.with_block_raises_original_error",
      cite=SYNC_RULE + " -- the runtime's refusal propagates out of pygraphrt's with block as itself, the "
                       "capture ended",
      apis=("StreamSynchronize",) + BEGIN_END, raises=errors.StreamCaptureUnsupported)
def _(t: CaseContext) -> Any:
    """A runtime error inside ``with s.capture()`` propagates as itself, the stream left not capturing."""
    s, a = t.stream(), t.malloc(N)

    def body() -> None:
        with s.capture():
            s.memset(a, 1, N)
            s.synchronize()

    _fails_then_clean(t, errors.StreamCaptureUnsupported, body, s)


def _joined_and_invalidated(t: CaseContext) -> tuple[Any, Any, Any, Any]:
    s1, s2, a = t.stream(), t.stream(), t.malloc(N)
    fork = t.event()
    cap = s1.begin_capture("global")
    try:
        s1.memset(a, 1, N)
        s1.record(fork)
        s2.wait(fork)
        t.check_equal(_rt_status(s2), CaptureStatus.ACTIVE, "the stream that waited on the capture's event")
        s2.memset(a, 2, N)
        t.raises(errors.StreamCaptureUnsupported, s1.synchronize)
    except BaseException:
        cap.abort()
        _force_end(s1, s2)
        raise
    return s1, s2, a, cap


# unsure: that the joined stream reports INVALIDATED (the guide: every stream of the capture).
@case("capture.invalidation.joined_stream_invalidated",
      cite=PG_INVALIDATION + "any associated capture graphs are invalidated; every stream being captured into "
                             "it is affected",
      apis=("StreamIsCapturing", "StreamWaitEvent", "StreamSynchronize"), expect=CaptureStatus.INVALIDATED)
def _(t: CaseContext) -> Any:
    """A stream that joined a capture reports INVALIDATED after the origin's capture is invalidated."""
    s1, s2, _a, cap = _joined_and_invalidated(t)
    try:
        return s2.capture_status
    finally:
        cap.abort()
        _force_end(s1, s2)


# unsure: as capture.invalidation.joined_stream_invalidated.
@case("capture.invalidation.joined_stream_work_refused",
      cite=PG_INVALIDATION + "further use of any streams which are being captured is invalid and returns an "
                             "error until stream capture is ended",
      apis=("MemsetAsync", "StreamWaitEvent", "StreamSynchronize"), raises=errors.StreamCaptureInvalidated)
def _(t: CaseContext) -> Any:
    """Work on a joined stream of an invalidated capture raises StreamCaptureInvalidated."""
    s1, s2, a, cap = _joined_and_invalidated(t)
    try:
        err = _raises_here(t, errors.StreamCaptureInvalidated, s2.memset, a, 3, N)
    finally:
        cap.abort()
        _force_end(s1, s2)
    _not_capturing(t, s1, s2)
    raise err


@case("capture.invalidation.end_releases_joined_stream",
      cite=PG_INVALIDATION + "cudaStreamEndCapture takes the associated streams out of capture mode",
      apis=("StreamEndCapture", "StreamIsCapturing", "StreamWaitEvent"),
      expect=(CaptureStatus.INVALIDATED, "StreamCaptureInvalidated", CaptureStatus.NONE, CaptureStatus.NONE))
def _(t: CaseContext) -> Any:
    """Ending an invalidated capture on the origin (StreamEndCapture called raw: pygraphrt's end() would force
    the streams out itself) releases the joined stream too, read from the runtime right after that call."""
    s1, s2, _a, cap = _joined_and_invalidated(t)
    try:
        before = _rt_status(s2)
        _graph_handle, err = _raw_end_keep(s1)
        return before, type(err).__name__ if err is not None else None, _rt_status(s1), _rt_status(s2)
    finally:
        cap.abort()
        _force_end(s1, s2)
