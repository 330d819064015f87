"""Recapture into an existing graph (``cudaStreamBeginRecaptureToGraph``, CUDA >= 13.3).

What the runtime documents (``cuda_runtime_api.h`` of 13.5): capture on a stream
into an existing graph whose nodes are created again *in the same order*.  A
topology mismatch, or a parameter mismatch of a memory allocation or free node,
fails the recapture at once.  Any other parameter mismatch calls a callback with
the node, its original and its recaptured parameters, and a status: eligible or
not for an update of an executable graph (or an error, which ends the recapture
whatever the callback returns); the recapture fails as soon as the callback
returns anything but success.  A recapture that fails for any reason leaves the
graph undefined: it should be destroyed.  User objects of the graph are released
before the recapture.

pygraphrt: ``with stream.recapture(graph, on_mismatch=fn) as cap:`` issues the
same work again (typically with new operands); afterwards ``cap.mismatches``
lists every reported mismatch (node, status, both parameter sets decoded as in
``node.params``) and ``cap.update_eligible`` says whether an executable graph
made from ``graph`` can take the change (``exec.update(graph)``).  ``fn(mismatch)``
may return False to fail the recapture; an exception it raises does the same
and is chained to the error that follows.  On failure (or an exception in the
block) the graph is closed, since the runtime left it undefined; the objects the
graph retained for its old operands are replaced by those of the recapture
(executable graphs keep what they were made with).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from .. import errors
from ..enums import CaptureMode
from ._capture import Capture
from ._graph import Graph

if TYPE_CHECKING:
    from ..device import Stream
    from ._node import Node


class RecaptureStatus(enum.Enum):
    """How a node whose parameters changed in a recapture stands (``cudaGraphRecaptureStatus``)."""

    ELIGIBLE_FOR_UPDATE = "eligible_for_update"
    INELIGIBLE_FOR_UPDATE = "ineligible_for_update"
    ERROR = "error"


_STATUS_MEMBERS = {RecaptureStatus.ELIGIBLE_FOR_UPDATE: "GraphRecaptureEligibleForUpdate",
                   RecaptureStatus.INELIGIBLE_FOR_UPDATE: "GraphRecaptureIneligibleForUpdate",
                   RecaptureStatus.ERROR: "GraphRecaptureError"}


@dataclass(frozen=True)
class RecaptureMismatch:
    """One node the recapture found changed: the runtime's report, decoded."""

    node: "Node"
    status: RecaptureStatus | int
    original: dict[str, Any]
    recaptured: dict[str, Any]


class Recapture(Capture):
    """``stream.recapture(graph)``: a :class:`Capture` into ``graph`` that re-creates its nodes."""

    def __init__(self, stream: "Stream", graph: Graph, mode: str | CaptureMode = CaptureMode.GLOBAL,
                 on_mismatch: Callable[[RecaptureMismatch], Any] | None = None) -> None:
        if not isinstance(graph, Graph):
            raise errors.InvalidValue("Stream.recapture", detail=f"{graph!r} is not a Graph")
        if on_mismatch is not None and not callable(on_mismatch):
            raise errors.InvalidValue("Stream.recapture", detail=f"on_mismatch {on_mismatch!r} is not callable")
        super().__init__(stream, mode, graph, None, None)
        self._on_mismatch = on_mismatch
        self.mismatches: list[RecaptureMismatch] = []
        self.callback_error: BaseException | None = None
        self._c: tuple[Any, Any] | None = None  # the C callback and its data: alive while capturing

    @property
    def update_eligible(self) -> bool:
        """Whether every reported change can be applied to an executable graph by ``update``."""
        return all(m.status is RecaptureStatus.ELIGIBLE_FOR_UPDATE for m in self.mismatches)

    def _begin_into_target(self, mode: int) -> None:
        graph = self._target
        assert graph is not None
        b = self.stream.backend
        ops, ffi = b.ops, b.ffi
        begin = ops.fn("StreamBeginRecaptureToGraph")  # NotSupported (with versions) before anything
        statuses = {int(getattr(b.lib, ops.prefix + member)): neutral
                    for neutral, member in _STATUS_MEMBERS.items()}
        failure = ops.const("ErrorGraphRecaptureFailure")

        def on_mismatch(user: Any, node: Any, original: Any, recaptured: Any, status: int) -> int:
            from ._readback import decode

            try:
                m = RecaptureMismatch(graph._wrap(node), statuses.get(int(status), int(status)),
                                      decode(graph, original, graph), decode(graph, recaptured, graph))
                self.mismatches.append(m)
                if self._on_mismatch is not None and self._on_mismatch(m) is False:
                    return failure
                return 0
            except BaseException as exc:  # noqa: BLE001 - must not unwind into the runtime
                self.callback_error = exc
                return failure

        cb = ffi.callback(f"{ops.prefix}GraphRecaptureCallback_t", on_mismatch, onerror=lambda *a: failure)
        data = ffi.new(f"struct {ops.prefix}GraphRecaptureCallbackData *")
        data.callbackFunc = cb
        data.userData = ffi.NULL
        self._c = (cb, data)
        rc = begin(self.stream.handle, mode, graph.handle, data)
        if rc:
            raise ops.error(rc, f"{ops.prefix}StreamBeginRecaptureToGraph")

    def end(self) -> Graph:
        """End the recapture and return the graph (closed, and the error raised, if it failed)."""
        if self._state != "active":
            return super().end()
        graph = self._target
        assert graph is not None
        old_keep = graph._keep
        graph._keep = []  # the recaptured nodes use what this capture retains, not the old operands
        try:
            out = super().end()
        except errors.GraphRTError as exc:
            graph._keep = old_keep
            if self._state == "active":  # not ended (another thread's capture): still recapturing
                raise
            self._c = None
            self._discard_graph()
            if self.callback_error is not None:
                raise exc from self.callback_error
            raise
        self._c = None
        # Nodes the runtime made anew (if any) replace the ones that are gone.
        graph._keep_only(set(_node_handles(graph)))
        return out

    def abort(self) -> None:
        """End the recapture; the runtime left the graph undefined, so it is closed."""
        active = self._state == "active"
        super().abort()
        self._c = None
        if active:
            self._discard_graph()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            super().__exit__(exc_type, exc, tb)
        finally:
            if exc is not None and self.callback_error is not None and exc is not self.callback_error \
                    and exc.__cause__ is None:
                exc.__cause__ = self.callback_error

    def _discard_graph(self) -> None:
        graph = self._target
        if graph is not None and graph.is_valid:
            try:
                graph.close()
            except errors.GraphRTError:
                pass


def _node_handles(graph: Graph) -> list[Any]:
    b = graph._backend
    n = b.ffi.new("size_t *")
    b.ops.call("GraphGetNodes", graph.handle, b.ffi.NULL, n)
    if n[0] == 0:
        return []
    arr = b.ffi.new(f"{b.ops.prefix}GraphNode_t[]", n[0])
    b.ops.call("GraphGetNodes", graph.handle, arr, n)
    return [arr[i] for i in range(n[0])]
