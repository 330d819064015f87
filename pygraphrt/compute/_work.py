"""The work a compute-graph node issues, and the context its closure issues it through.

A closure calls ``ctx.launch(...)``, ``ctx.memcpy(...)``, ... ; each call records one
work item.  The same items become explicit graph nodes (build), are applied to the
executable graph through the per-node setters (update), or run as plain stream work
(single-stream launch).  Recording makes no runtime call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Sequence

from .. import errors
from .._operands import extent

if TYPE_CHECKING:
    from ..device import Event, Stream
    from ..graph import Graph, GraphExec, Node
    from ._graph import ComputeGraph


class CannotSet(Exception):
    """An item's change cannot be applied to the executable graph in place (so: rebuild)."""


@dataclass(eq=False, slots=True)  # (no per-item __dict__: two items a node a build)
class Work:
    kind: ClassVar[str] = "work"

    def add(self, cg: "ComputeGraph", graph: "Graph") -> "Node":
        raise NotImplementedError

    def set(self, cg: "ComputeGraph", exe: "GraphExec", node: "Node") -> int:
        """Apply to ``exe`` (the executable's node made from the template's ``node``); returns
        the exec setter calls made.  The template node follows later (:meth:`set_template`)."""
        raise NotImplementedError

    def set_template(self, node: "Node") -> None:
        """Give the template graph's ``node`` this item's parameters (after :meth:`set`, when
        the template is next used; work whose template cannot be set marks it stale instead)."""

    def run(self, cg: "ComputeGraph", stream: "Stream") -> None:
        raise NotImplementedError

    def shape(self) -> tuple[Any, ...]:
        """What must stay equal for an in-place update (the kind, launch attributes)."""
        return (self.kind,)

    def describe(self) -> str:
        return self.kind


@dataclass(eq=False, slots=True)
class KernelWork(Work):
    kind: ClassVar[str] = "kernel"
    kernel: Any
    grid: Any
    block: Any
    args: tuple[Any, ...]
    shared_mem: int = 0
    attributes: dict[str, Any] = field(default_factory=dict)

    def add(self, cg: "ComputeGraph", graph: "Graph") -> "Node":
        return graph.add_kernel(self.kernel, self.grid, self.block, self.args, shared_mem=self.shared_mem,
                                attributes=self.attributes or None)

    def set(self, cg: "ComputeGraph", exe: "GraphExec", node: "Node") -> int:
        # (the node is the build's kernel node of exe's graph: GraphExec.set_kernel_params's
        # check of it is skipped)
        exe._set_kernel(node, node.handle, self.kernel, self.args, self.grid, self.block,  # type: ignore[arg-type]
                        self.shared_mem)
        return 1

    def set_template(self, node: "Node") -> None:
        node.set_params(kernel=self.kernel, grid=self.grid, block=self.block, args=self.args,
                        shared_mem=self.shared_mem)

    def run(self, cg: "ComputeGraph", stream: "Stream") -> None:
        stream.launch(self.kernel, self.grid, self.block, *self.args, shared_mem=self.shared_mem,
                      **self.attributes)

    def shape(self) -> tuple[Any, ...]:
        if not self.attributes:
            return _PLAIN_KERNEL
        return (self.kind, tuple(sorted((k, repr(v)) for k, v in self.attributes.items())))

    def describe(self) -> str:
        name = getattr(self.kernel, "name", None)
        return f"kernel {name}" if name else f"kernel {self.kernel!r}"


_PLAIN_KERNEL = ("kernel", ())  # KernelWork.shape without launch attributes


@dataclass(eq=False, slots=True)
class MemcpyWork(Work):
    kind: ClassVar[str] = "memcpy"
    dst: Any
    src: Any
    count: int

    def add(self, cg: "ComputeGraph", graph: "Graph") -> "Node":
        return graph.add_memcpy(self.dst, self.src, self.count)

    def set(self, cg: "ComputeGraph", exe: "GraphExec", node: "Node") -> int:
        exe._set_memcpy(node.handle, self.dst, self.src, self.count)  # (the build's copy node of exe's graph)
        return 1

    def set_template(self, node: "Node") -> None:
        node.set_params(dst=self.dst, src=self.src, count=self.count)

    def run(self, cg: "ComputeGraph", stream: "Stream") -> None:
        stream.memcpy(self.dst, self.src, self.count)

    def describe(self) -> str:
        return f"memcpy {self.count} B"


@dataclass(eq=False, slots=True)
class MemsetWork(Work):
    kind: ClassVar[str] = "memset"
    dst: Any
    value: int
    count: int

    def add(self, cg: "ComputeGraph", graph: "Graph") -> "Node":
        return graph.add_memset(self.dst, self.value, self.count)

    def set(self, cg: "ComputeGraph", exe: "GraphExec", node: "Node") -> int:
        exe.set_memset(node, dst=self.dst, value=self.value, count=self.count)  # type: ignore[arg-type]
        return 1

    def set_template(self, node: "Node") -> None:
        node.set_params(dst=self.dst, value=self.value, count=self.count)

    def run(self, cg: "ComputeGraph", stream: "Stream") -> None:
        stream.memset(self.dst, self.value, self.count)

    def describe(self) -> str:
        return f"memset {self.count} B"


@dataclass(eq=False, slots=True)
class HostWork(Work):
    kind: ClassVar[str] = "host"
    fn: Callable[[], Any]

    def add(self, cg: "ComputeGraph", graph: "Graph") -> "Node":
        return graph.add_host(self.fn)

    def set(self, cg: "ComputeGraph", exe: "GraphExec", node: "Node") -> int:
        exe.set_host(node, self.fn)  # type: ignore[arg-type]
        return 1

    def set_template(self, node: "Node") -> None:
        node.set_params(fn=self.fn)

    def run(self, cg: "ComputeGraph", stream: "Stream") -> None:
        stream.launch_host_func(self.fn)

    def describe(self) -> str:
        return f"host {getattr(self.fn, '__name__', 'fn')}"


@dataclass(eq=False, slots=True)
class ChildGraphWork(Work):
    kind: ClassVar[str] = "graph"
    graph: "Graph"

    def add(self, cg: "ComputeGraph", graph: "Graph") -> "Node":
        return graph.add_child_graph(self.graph)

    def set(self, cg: "ComputeGraph", exe: "GraphExec", node: "Node") -> int:
        # The runtime has no in-graph setter for a child graph: the template goes stale.
        _set_child(exe, node, self.graph)
        cg._template_stale = True
        return 1

    def run(self, cg: "ComputeGraph", stream: "Stream") -> None:
        cg._child_exec(self.graph).launch(stream)

    def describe(self) -> str:
        return "child graph"


@dataclass(eq=False, slots=True)
class CaptureWork(Work):
    """Stream work (any library's) captured into a child graph: ``ctx.capture(fn)``."""

    kind: ClassVar[str] = "capture"
    fn: Callable[["Stream"], Any]

    def add(self, cg: "ComputeGraph", graph: "Graph") -> "Node":
        child = cg._capture(self.fn)
        try:
            return graph.add_child_graph(child)
        finally:
            child.close()  # the node holds the runtime's own copy (operands stay with `graph`)

    def set(self, cg: "ComputeGraph", exe: "GraphExec", node: "Node") -> int:
        child = cg._capture(self.fn)
        try:
            _set_child(exe, node, child)
        finally:
            child.close()
        cg._template_stale = True
        return 1

    def run(self, cg: "ComputeGraph", stream: "Stream") -> None:
        self.fn(stream)

    def describe(self) -> str:
        return f"capture {getattr(self.fn, '__name__', 'fn')}"


def _set_child(exe: "GraphExec", node: "Node", child: "Graph") -> None:
    try:
        exe.set_child_graph(node, child)  # type: ignore[arg-type]
    except errors.GraphRTError as e:
        # The runtime refuses a child whose topology differs: not an in-place change.
        raise CannotSet(f"the child graph changed in a way the runtime cannot set in place ({e})") from e


@dataclass(eq=False, slots=True)
class _EventWork(Work):
    event: "Event"

    def set(self, cg: "ComputeGraph", exe: "GraphExec", node: "Node") -> int:
        exe.set_event(node, self.event)  # type: ignore[arg-type]
        return 1

    def set_template(self, node: "Node") -> None:
        node.set_event(self.event)  # type: ignore[attr-defined]


@dataclass(eq=False, slots=True)
class EventRecordWork(_EventWork):
    kind: ClassVar[str] = "event_record"

    def add(self, cg: "ComputeGraph", graph: "Graph") -> "Node":
        return graph.add_event_record(self.event)

    def run(self, cg: "ComputeGraph", stream: "Stream") -> None:
        stream.record(self.event)


@dataclass(eq=False, slots=True)
class EventWaitWork(_EventWork):
    kind: ClassVar[str] = "event_wait"

    def add(self, cg: "ComputeGraph", graph: "Graph") -> "Node":
        return graph.add_event_wait(self.event)

    def run(self, cg: "ComputeGraph", stream: "Stream") -> None:
        stream.wait(self.event)


class NodeContext:
    """What a node's closure is given: the verbs that issue its work.

    Attributes
    ----------
    node : str
        The node's name.
    phase : str
        ``"topology"``, ``"build"``, ``"update"`` or ``"direct"`` -- for diagnostics
        only: a closure must issue the same work in every phase.
    """

    # (graph, manager, reads, writes: the accesses the closure makes through variables, recorded
    # while the context is the thread's active one -- the context is its own recorder, see
    # compute._vars._Recorder)
    __slots__ = ("node", "phase", "items", "graph", "manager", "reads", "writes")

    def __init__(self, node: str, phase: str, graph: "ComputeGraph | None" = None) -> None:
        self.node = node
        self.phase = phase
        self.items: list[Work] = []
        self.graph = graph
        self.manager = graph.manager if graph is not None else None
        self.reads: list[Any] = []
        self.writes: list[Any] = []

    def __repr__(self) -> str:
        return f"<NodeContext {self.node!r} {self.phase}, {len(self.items)} items>"

    def launch(self, kernel: Any, grid: Any, block: Any, *args: Any, shared_mem: int = 0,
               **attributes: Any) -> None:
        """A kernel launch (a kernel node): same arguments as :meth:`pygraphrt.Stream.launch`."""
        if not callable(getattr(kernel, "launch", None)):
            raise errors.InvalidValue("NodeContext.launch", detail=f"node {self.node!r}: {kernel!r} is "
                                                                   "not a pygraphrt Kernel")
        self.items.append(KernelWork(kernel, grid, block, args, shared_mem, attributes))  # (**attributes: a new dict)

    def memcpy(self, dst: Any, src: Any, count: int | None = None) -> None:
        """Copy ``count`` bytes (default: the size of ``src``, which ``dst`` must hold)."""
        if count is None:
            count = self._size(src, "memcpy source")
            dst_size = self._size(dst, "memcpy destination", required=False)
            if dst_size is not None and dst_size < count:
                raise errors.InvalidValue("NodeContext.memcpy", detail=f"node {self.node!r}: the "
                                          f"destination holds {dst_size} bytes, the source {count}")
        self.items.append(MemcpyWork(dst, src, count))

    def memset(self, dst: Any, value: int, count: int | None = None) -> None:
        """Set ``count`` bytes (default: all of ``dst``) to the byte ``value``."""
        if count is None:
            count = self._size(dst, "memset destination")
        self.items.append(MemsetWork(dst, value, count))

    def host(self, fn: Callable[[], Any]) -> None:
        """Run the Python callable ``fn()`` on a runtime thread (a host node)."""
        if not callable(fn):
            raise errors.InvalidValue("NodeContext.host", detail=f"node {self.node!r}: {fn!r} is not callable")
        self.items.append(HostWork(fn))

    def child_graph(self, graph: "Graph") -> None:
        """Run a copy of ``graph`` (a child-graph node)."""
        from ..graph import Graph

        if not isinstance(graph, Graph):
            raise errors.InvalidValue("NodeContext.child_graph", detail=f"node {self.node!r}: {graph!r} "
                                                                        "is not a Graph")
        self.items.append(ChildGraphWork(graph))

    def record(self, event: "Event") -> None:
        """Record ``event`` (an event-record node)."""
        self.items.append(EventRecordWork(_event(event, self.node)))

    def wait(self, event: "Event") -> None:
        """Wait for ``event`` (an event-wait node)."""
        self.items.append(EventWaitWork(_event(event, self.node)))

    def capture(self, fn: Callable[["Stream"], Any]) -> None:
        """Work ``fn(stream)`` issues on the stream it is given (e.g. another library's calls).

        In a graph it is captured into a child graph (re-captured on update); in a
        single-stream launch it runs on the launch stream.  The variables it uses must
        be read/written in the closure itself, not inside ``fn``: ``fn`` is not called
        while the topology is inferred.
        """
        if not callable(fn):
            raise errors.InvalidValue("NodeContext.capture", detail=f"node {self.node!r}: {fn!r} is not callable")
        self.items.append(CaptureWork(fn))

    def _size(self, obj: Any, what: str, required: bool = True) -> Any:
        try:
            return extent(obj)[1]
        except errors.InvalidValue:
            if not required:
                return None
            raise errors.InvalidValue("NodeContext", detail=f"node {self.node!r}: the {what} "
                                      f"({type(obj).__name__}) has no size: pass count=") from None


def same_shapes(old: "Sequence[Work]", new: "Sequence[Work]") -> bool:
    """Whether two evaluations' work has the same shapes, item by item (:meth:`Work.shape`): work
    of one class has one shape but for kernel launches with attributes."""
    if len(old) != len(new):
        return False
    if len(new) == 1:  # (a node's one item, the common case: no zip to make)
        a, b = old[0], new[0]
        return a.__class__ is b.__class__ and not (
            a.__class__ is KernelWork and (a.attributes or b.attributes) and a.shape() != b.shape())  # type: ignore[attr-defined]
    for a, b in zip(old, new):
        if a.__class__ is not b.__class__:
            return False
        if a.__class__ is KernelWork and (a.attributes or b.attributes) and a.shape() != b.shape():  # type: ignore[attr-defined]
            return False
    return True


def _event(event: Any, node: str) -> "Event":
    from ..device import Event

    if not isinstance(event, Event):
        raise errors.InvalidValue("NodeContext", detail=f"node {node!r}: {event!r} is not an Event")
    return event


__all__ = ["NodeContext", "Work"]
