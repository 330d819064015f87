"""Vendor-neutral exceptions.

Every runtime call pygraphrt makes goes through one checker; a failure raises
a subclass of :class:`GraphRTError` chosen by the vendor table of the active
backend (:mod:`pygraphrt._vendors.cuda` / :mod:`pygraphrt._vendors.hip`), so
the same ``except pygraphrt.errors.InvalidValue`` works on CUDA and HIP.
Codes that mean different things on the two vendors (911/912) are resolved by
name, never by number.  Unknown codes keep their number and name and raise the
base class.
"""

from __future__ import annotations

import sys

__all__ = [
    "GraphRTError", "InvalidValue", "InvalidDevice", "OutOfMemory", "NotSupported",
    "NotPermitted", "IllegalState", "InvalidResourceHandle", "NotReady", "NoDevice",
    "InsufficientDriver", "NotInitialized", "LossyQuery", "GraphExecUpdateFailure",
    "StreamCaptureError", "StreamCaptureUnsupported", "StreamCaptureInvalidated",
    "StreamCaptureMerge", "StreamCaptureUnmatched", "StreamCaptureUnjoined",
    "StreamCaptureIsolation", "StreamCaptureImplicit", "StreamCaptureWrongThread",
    "CapturedEvent", "LaunchFailure", "HostCallbackError", "BackendError",
    "GraphExecUpdateError", "CompileError", "VariableOverlap", "PhaseMismatch",
    "RaceDetected", "RaceWarning", "InvalidUsage", "UnhandledCudaError", "CommSystemError",
    "CommInternalError", "RemoteError", "CommTimeout", "FixedRandomness", "FixedRandomnessWarning",
]

# Said wherever pygraphrt finds no GPU (info, NoDevice, a failed auto): the simulator exists.
# Here, below every module that says it (the backend switch, the vendor tables' error builder).
SIM_HINT = ("no GPU? the 'sim' backend runs graph code on the CPU: pygraphrt.use('sim') or "
            "PYGRAPHRT_BACKEND=sim")


class GraphRTError(RuntimeError):
    """A runtime call failed.

    Attributes
    ----------
    api : str
        The C function that was called (``"cudaGraphLaunch"``), or the
        pygraphrt operation for errors raised before any call.
    code : int | None
        The vendor's integer error code.
    name : str | None
        The vendor's enum name (``"cudaErrorInvalidValue"``).
    vendor : str | None
        ``"cuda"`` or ``"hip"``.
    message : str
        The runtime's own description (``cudaGetErrorString``).
    sticky : bool
        True when the error corrupts the context: the process must restart
        to use the device again.
    """

    def __init__(self, api: str, code: int | None = None, name: str | None = None,
                 vendor: str | None = None, message: str = "", sticky: bool = False,
                 detail: str = "") -> None:
        self.api = api
        self.code = code
        self.name = name
        self.vendor = vendor
        self.message = message
        self.sticky = sticky
        self.detail = detail
        parts = [f"{api} failed"]
        if name is not None:
            parts.append(f": {name} ({code})")
        if message:
            parts.append(f": {message}")
        if detail:
            parts.append(f" [{detail}]")
        if sticky:
            parts.append(" -- this error is sticky: the device context is corrupted and "
                         "the process must be restarted to use the GPU again")
        super().__init__("".join(parts))

    def __reduce__(self):  # keep the fields through pickling (multiprocessing)
        return (type(self), (self.api, self.code, self.name, self.vendor, self.message,
                             self.sticky, self.detail))

    if sys.version_info < (3, 11):
        def add_note(self, note: str) -> None:
            """Python 3.10 has no exception notes (PEP 678, 3.11): ``note`` is kept in
            ``__notes__`` as 3.11's ``add_note`` keeps it, and added to the message on a line
            of its own, since 3.10's traceback does not print notes."""
            if not isinstance(note, str):
                raise TypeError(f"note must be a str, not {type(note).__name__}")
            self.__dict__.setdefault("__notes__", []).append(note)
            self.args = (f"{self.args[0]}\n{note}" if self.args else note, *self.args[1:])


class InvalidValue(GraphRTError, ValueError):
    """An argument was out of range or a handle was NULL."""


class InvalidDevice(GraphRTError):
    """The device ordinal is not a device of this machine."""


class OutOfMemory(GraphRTError, MemoryError):
    """The device ran out of memory."""


class NotSupported(GraphRTError):
    """The runtime, the device or this binding cannot do the operation."""


class NotPermitted(GraphRTError):
    """The operation is not permitted (in this state, or on this object)."""


class IllegalState(GraphRTError):
    """The object is not in a state that allows the operation (a capture already used, a stream
    capturing, ...)."""


class FixedRandomness(IllegalState):
    """A graph that draws torch random numbers would be launched in a way that repeats its draws.

    Torch refreshes its generators' seed and offset only in ``CUDAGraph.replay()``: launched as a
    child graph node, in a conditional body or through its executable, such a graph draws the same
    numbers every time.  ``allow_fixed_rng=True`` accepts that (with a
    :class:`FixedRandomnessWarning`); see ``docs/guide/interop.md``.
    """


class FixedRandomnessWarning(UserWarning):
    """A graph that draws (or may draw) torch random numbers was launched, with
    ``allow_fixed_rng=True``, in a way that repeats its draws (see :class:`FixedRandomness`)."""


class InvalidUsage(IllegalState):
    """NCCL refused a call made in a way its API does not allow (``ncclInvalidUsage``: e.g. a
    collective captured on one rank and run eagerly on another, or a communicator used after
    ``ncclCommFinalize``)."""


class UnhandledCudaError(GraphRTError):
    """A CUDA call NCCL made failed (``ncclUnhandledCudaError``); what capture misuse returns."""


class CommSystemError(GraphRTError):
    """A system call NCCL made failed (``ncclSystemError``: sockets, shared memory, files)."""


class CommInternalError(GraphRTError):
    """NCCL failed internally (``ncclInternalError``)."""


class RemoteError(GraphRTError):
    """A peer of the communicator failed or went away (``ncclRemoteError``)."""


class CommTimeout(GraphRTError, TimeoutError):
    """A bounded wait on a communicator expired (pygraphrt's ``timeout=``, or NCCL's
    ``ncclTimeout``); pygraphrt aborted the communicators it waited on."""


class InvalidResourceHandle(GraphRTError):
    """A handle is invalid: the object was closed, or belongs to another context."""


class NotReady(GraphRTError):
    """The work queried has not completed yet (``StreamQuery``/``EventQuery``: ``is_done`` reads it
    as False)."""


class NoDevice(GraphRTError):
    """The runtime found no device (a machine without a GPU: the ``sim`` backend runs graph code on
    the CPU)."""


class InsufficientDriver(GraphRTError):
    """No driver, or one older than the runtime needs."""


class NotInitialized(GraphRTError):
    """The runtime or driver was not initialized."""


class LossyQuery(GraphRTError):
    """A query without room for edge data on a graph whose edges carry data."""


class GraphExecUpdateFailure(GraphRTError):
    """The runtime refused to update an executable graph with a changed graph."""


class LaunchFailure(GraphRTError):
    """A kernel or graph launch failed on the device."""


class StreamCaptureError(GraphRTError):
    """Base of the stream-capture errors."""


class StreamCaptureUnsupported(StreamCaptureError):
    """The operation is not permitted while a stream is capturing."""


class StreamCaptureInvalidated(StreamCaptureError):
    """The capture was invalidated by an earlier operation that is not allowed during capture."""


class StreamCaptureMerge(StreamCaptureError):
    """The operation would merge two independent captures."""


class StreamCaptureUnmatched(StreamCaptureError):
    """The capture was not begun on this stream, or ended from another stream."""


class StreamCaptureUnjoined(StreamCaptureError):
    """The capture forked into another stream that did not join back before it ended."""


class StreamCaptureIsolation(StreamCaptureError):
    """The operation would make a capture depend on work outside it."""


class StreamCaptureImplicit(StreamCaptureError):
    """The operation would implicitly synchronize with a capturing stream (the legacy default stream
    during a capture)."""


class StreamCaptureWrongThread(StreamCaptureError):
    """The capture must be ended from the thread that began it (thread-local or global mode)."""


class CapturedEvent(StreamCaptureError):
    """The operation is not permitted on an event recorded in a capture that is still active."""


class GraphExecUpdateError(GraphExecUpdateFailure):
    """``GraphExec.update`` was refused; ``result`` says why, ``error_node`` where.

    Attributes
    ----------
    result : pygraphrt.enums.UpdateResult
    error_node : pygraphrt.graph.Node | None
    """

    def __init__(self, api: str, code: int | None, name: str | None, vendor: str | None,
                 message: str, result: object, error_node: object = None) -> None:
        super().__init__(api, code, name, vendor, message, detail=f"update result {result}")
        self.result = result
        self.error_node = error_node


class HostCallbackError(GraphRTError):
    """A Python host function run by the GPU raised; ``__cause__`` is its exception."""

    def __init__(self, api: str, exc: BaseException) -> None:
        super().__init__(api, detail=f"host callable raised {type(exc).__name__}: {exc}")
        self.__cause__ = exc


class BackendError(GraphRTError):
    """No backend could be loaded, or switching backends was refused."""

    def __init__(self, message: str) -> None:
        RuntimeError.__init__(self, message)
        self.api, self.code, self.name, self.vendor, self.message = "pygraphrt.use", None, None, None, message
        self.sticky, self.detail = False, ""

    def __reduce__(self):
        return (type(self), (self.message,))


class CompileError(GraphRTError):
    """Runtime compilation (NVRTC / HIPRTC) failed.

    Attributes
    ----------
    log : str
        The compiler's full log.
    options : tuple[str, ...]
        The options the compiler was given.
    source_name : str
        The program's name (used in the log's messages).
    """

    def __init__(self, api: str, code: int | None, name: str | None, vendor: str | None,
                 log: str, options: tuple[str, ...], source_name: str) -> None:
        super().__init__(api, code, name, vendor, "",
                         detail=f"compiling {source_name} with {list(options)}:\n{log.strip()}")
        self.log = log
        self.options = options
        self.source_name = source_name

    def __reduce__(self):
        return (type(self), (self.api, self.code, self.name, self.vendor, self.log, self.options,
                             self.source_name))


class VariableOverlap(InvalidValue):
    """Two compute-graph variables were bound to overlapping memory.

    The compute graph orders work by variables; two variables sharing bytes would
    let it run a reader and a writer of the same memory concurrently.
    """


class PhaseMismatch(GraphRTError):
    """A compute-graph node's closure produced different work or accesses in two phases.

    A closure is called to infer the topology, to build nodes, to update them and to
    run directly; with the same bindings it must record the same accesses and issue
    the same kinds of work each time (``detail`` says what differed).
    """


class RaceDetected(InvalidValue):
    """The simulator's race check refused a graph launch (``pygraphrt.sim.set_race_check("raise")``).

    Two nodes of the graph with no path between them touch overlapping memory, one of
    them writing: on a GPU they may run concurrently.  Nothing of the graph ran.  An
    InvalidValue, like :class:`VariableOverlap`: the graph lacks a dependency.

    Attributes
    ----------
    races : list[pygraphrt.sim.Race]
        The races found (``detail`` spells out the first few).
    """

    def __init__(self, api: str, code: int | None = None, name: str | None = None,
                 vendor: str | None = None, message: str = "", sticky: bool = False,
                 detail: str = "", races: list[object] | None = None) -> None:
        super().__init__(api, code, name, vendor, message, sticky, detail)
        self.races = list(races or [])


class RaceWarning(UserWarning):
    """The simulator's race check found races in a launched graph (mode ``"warn"``).

    Attributes
    ----------
    races : list[pygraphrt.sim.Race]
        The races found (the message spells out the first few).
    """

    def __init__(self, message: str, races: list[object] | None = None) -> None:
        super().__init__(message)
        self.races = list(races or [])
