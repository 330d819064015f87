"""The work a compute-graph node issues, and the context its closure issues it through.

A closure calls ``ctx.launch(...)``, ``ctx.memcpy(...)``, ... ; each call records one
work item.  The same items become explicit graph nodes (build), are applied to the
executable graph through the per-node setters (update), or run as plain stream work
(single-stream launch).  Recording makes no runtime call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, ClassVar, Sequence

from .. import errors
from .._operands import extent

if TYPE_CHECKING:
    from ..device import Event, Stream
    from ..graph import Graph, GraphExec, Node
    from ._graph import ComputeGraph


class CannotSet(Exception):
    """An item's change cannot be applied to the executable graph in place (so: rebuild)."""


#: A work item: ``(kind, *operands)``, ``kind`` the :class:`Work` subclass that adds, sets and
#: runs it (e.g. ``(KernelWork, kernel, grid, block, args, shared_mem, attributes)``).  Items are
#: plain tuples because a first launch records two a node (topology and build phases): a tuple
#: costs less than half of an object's construction, which runs a Python ``__init__``.
Item = tuple[Any, ...]


class Work:
    """A kind of work item (never instantiated): what a closure's ``ctx`` call recorded, and how
    it becomes a graph node, an exec-setter call, or stream work.  Its methods take the item."""

    kind: ClassVar[str] = "work"

    @staticmethod
    def add(item: Item, cg: "ComputeGraph", graph: "Graph") -> "Node":
        raise NotImplementedError

    @staticmethod
    def set(item: Item, cg: "ComputeGraph", exe: "GraphExec", node: "Node") -> int:
        """Apply ``item`` to ``exe`` (the executable's node made from the template's ``node``);
        returns the exec setter calls made.  The template node follows later (:meth:`set_template`)."""
        raise NotImplementedError

    @staticmethod
    def set_template(item: Item, node: "Node") -> None:
        """Give the template graph's ``node`` the item's parameters (after :meth:`set`, when
        the template is next used; work whose template cannot be set marks it stale instead)."""

    @staticmethod
    def run(item: Item, cg: "ComputeGraph", stream: "Stream") -> None:
        raise NotImplementedError

    @classmethod
    def describe(cls, item: Item) -> str:
        return cls.kind


class KernelWork(Work):
    """``(KernelWork, kernel, grid, block, args, shared_mem, attributes)``."""

    kind: ClassVar[str] = "kernel"

    @staticmethod
    def add(item: Item, cg: "ComputeGraph", graph: "Graph") -> "Node":
        _, kernel, grid, block, args, shared_mem, attributes = item
        return graph.add_kernel(kernel, grid, block, args, shared_mem=shared_mem, attributes=attributes or None)

    @staticmethod
    def set(item: Item, cg: "ComputeGraph", exe: "GraphExec", node: "Node") -> int:
        # (the node is the build's kernel node of exe's graph: GraphExec.set_kernel_params's
        # check of it is skipped)
        _, kernel, grid, block, args, shared_mem, _ = item
        exe._set_kernel(node, node.handle, kernel, args, grid, block, shared_mem)  # type: ignore[arg-type]
        return 1

    @staticmethod
    def set_template(item: Item, node: "Node") -> None:
        _, kernel, grid, block, args, shared_mem, _ = item
        node.set_params(kernel=kernel, grid=grid, block=block, args=args, shared_mem=shared_mem)

    @staticmethod
    def run(item: Item, cg: "ComputeGraph", stream: "Stream") -> None:
        _, kernel, grid, block, args, shared_mem, attributes = item
        stream.launch(kernel, grid, block, *args, shared_mem=shared_mem, **attributes)

    @classmethod
    def shape(cls, item: Item) -> tuple[Any, ...]:
        """What must stay equal for an in-place update: the kind and the launch attributes (an item
        of any other kind has its kind's one shape: :func:`same_shapes`)."""
        attributes = item[6]
        if not attributes:
            return _PLAIN_KERNEL
        return (cls.kind, tuple(sorted((k, repr(v)) for k, v in attributes.items())))

    @classmethod
    def describe(cls, item: Item) -> str:
        name = getattr(item[1], "name", None)
        return f"kernel {name}" if name else f"kernel {item[1]!r}"


_PLAIN_KERNEL = ("kernel", ())  # KernelWork.shape without launch attributes


class MemcpyWork(Work):
    """``(MemcpyWork, dst, src, count)``."""

    kind: ClassVar[str] = "memcpy"

    @staticmethod
    def add(item: Item, cg: "ComputeGraph", graph: "Graph") -> "Node":
        return graph.add_memcpy(item[1], item[2], item[3])

    @staticmethod
    def set(item: Item, cg: "ComputeGraph", exe: "GraphExec", node: "Node") -> int:
        exe._set_memcpy(node.handle, item[1], item[2], item[3])  # (the build's copy node of exe's graph)
        return 1

    @staticmethod
    def set_template(item: Item, node: "Node") -> None:
        node.set_params(dst=item[1], src=item[2], count=item[3])

    @staticmethod
    def run(item: Item, cg: "ComputeGraph", stream: "Stream") -> None:
        stream.memcpy(item[1], item[2], item[3])

    @classmethod
    def describe(cls, item: Item) -> str:
        return f"memcpy {item[3]} B"


class MemsetWork(Work):
    """``(MemsetWork, dst, value, count)``."""

    kind: ClassVar[str] = "memset"

    @staticmethod
    def add(item: Item, cg: "ComputeGraph", graph: "Graph") -> "Node":
        return graph.add_memset(item[1], item[2], item[3])

    @staticmethod
    def set(item: Item, cg: "ComputeGraph", exe: "GraphExec", node: "Node") -> int:
        exe.set_memset(node, dst=item[1], value=item[2], count=item[3])  # type: ignore[arg-type]
        return 1

    @staticmethod
    def set_template(item: Item, node: "Node") -> None:
        node.set_params(dst=item[1], value=item[2], count=item[3])

    @staticmethod
    def run(item: Item, cg: "ComputeGraph", stream: "Stream") -> None:
        stream.memset(item[1], item[2], item[3])

    @classmethod
    def describe(cls, item: Item) -> str:
        return f"memset {item[3]} B"


class HostWork(Work):
    """``(HostWork, fn)``."""

    kind: ClassVar[str] = "host"

    @staticmethod
    def add(item: Item, cg: "ComputeGraph", graph: "Graph") -> "Node":
        return graph.add_host(item[1])

    @staticmethod
    def set(item: Item, cg: "ComputeGraph", exe: "GraphExec", node: "Node") -> int:
        exe.set_host(node, item[1])  # type: ignore[arg-type]
        return 1

    @staticmethod
    def set_template(item: Item, node: "Node") -> None:
        node.set_params(fn=item[1])

    @staticmethod
    def run(item: Item, cg: "ComputeGraph", stream: "Stream") -> None:
        stream.launch_host_func(item[1])

    @classmethod
    def describe(cls, item: Item) -> str:
        return f"host {getattr(item[1], '__name__', 'fn')}"


class ChildGraphWork(Work):
    """``(ChildGraphWork, graph)``."""

    kind: ClassVar[str] = "graph"

    @staticmethod
    def add(item: Item, cg: "ComputeGraph", graph: "Graph") -> "Node":
        return graph.add_child_graph(item[1])

    @staticmethod
    def set(item: Item, cg: "ComputeGraph", exe: "GraphExec", node: "Node") -> int:
        # The runtime has no in-graph setter for a child graph: the template goes stale.
        _set_child(exe, node, item[1])
        cg._template_stale = True
        return 1

    @staticmethod
    def run(item: Item, cg: "ComputeGraph", stream: "Stream") -> None:
        cg._child_exec(item[1]).launch(stream)

    @classmethod
    def describe(cls, item: Item) -> str:
        return "child graph"


class CaptureWork(Work):
    """Stream work (any library's) captured into a child graph, ``ctx.capture(fn)``:
    ``(CaptureWork, fn)``."""

    kind: ClassVar[str] = "capture"

    @staticmethod
    def add(item: Item, cg: "ComputeGraph", graph: "Graph") -> "Node":
        child = cg._capture(item[1])
        try:
            return graph.add_child_graph(child)
        finally:
            child.close()  # the node holds the runtime's own copy (operands stay with `graph`)

    @staticmethod
    def set(item: Item, cg: "ComputeGraph", exe: "GraphExec", node: "Node") -> int:
        child = cg._capture(item[1])
        try:
            _set_child(exe, node, child)
        finally:
            child.close()
        cg._template_stale = True
        return 1

    @staticmethod
    def run(item: Item, cg: "ComputeGraph", stream: "Stream") -> None:
        item[1](stream)

    @classmethod
    def describe(cls, item: Item) -> str:
        return f"capture {getattr(item[1], '__name__', 'fn')}"


def _set_child(exe: "GraphExec", node: "Node", child: "Graph") -> None:
    try:
        exe.set_child_graph(node, child)  # type: ignore[arg-type]
    except errors.GraphRTError as e:
        # The runtime refuses a child whose topology differs: not an in-place change.
        raise CannotSet(f"the child graph changed in a way the runtime cannot set in place ({e})") from e


class _EventWork(Work):
    """``(kind, event)``."""

    @staticmethod
    def set(item: Item, cg: "ComputeGraph", exe: "GraphExec", node: "Node") -> int:
        exe.set_event(node, item[1])  # type: ignore[arg-type]
        return 1

    @staticmethod
    def set_template(item: Item, node: "Node") -> None:
        node.set_event(item[1])  # type: ignore[attr-defined]


class EventRecordWork(_EventWork):
    kind: ClassVar[str] = "event_record"

    @staticmethod
    def add(item: Item, cg: "ComputeGraph", graph: "Graph") -> "Node":
        return graph.add_event_record(item[1])

    @staticmethod
    def run(item: Item, cg: "ComputeGraph", stream: "Stream") -> None:
        stream.record(item[1])


class EventWaitWork(_EventWork):
    kind: ClassVar[str] = "event_wait"

    @staticmethod
    def add(item: Item, cg: "ComputeGraph", graph: "Graph") -> "Node":
        return graph.add_event_wait(item[1])

    @staticmethod
    def run(item: Item, cg: "ComputeGraph", stream: "Stream") -> None:
        stream.wait(item[1])


# Classes whose ``launch`` is callable: NodeContext.launch checks a kernel's class here first
# (a set lookup instead of a getattr and a callable() a launch).  At most _KERNEL_CLASSES_MAX are
# remembered (held strongly): classes made at run time, one per kernel, are not kept alive for good.
_KERNEL_CLASSES: set[type] = set()
_KERNEL_CLASSES_MAX = 64


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
        self.items: list[Item] = []
        self.graph = graph
        self.manager = graph.manager if graph is not None else None
        self.reads: list[Any] = []
        self.writes: list[Any] = []

    def __repr__(self) -> str:
        return f"<NodeContext {self.node!r} {self.phase}, {len(self.items)} items>"

    def launch(self, kernel: Any, grid: Any, block: Any, *args: Any, shared_mem: int = 0,
               **attributes: Any) -> None:
        """A kernel launch (a kernel node): same arguments as :meth:`pygraphrt.Stream.launch`."""
        if type(kernel) not in _KERNEL_CLASSES:
            if not callable(getattr(kernel, "launch", None)):
                raise errors.InvalidValue("NodeContext.launch", detail=f"node {self.node!r}: {kernel!r} "
                                                                       "is not a pygraphrt Kernel")
            if callable(getattr(type(kernel), "launch", None)) and len(_KERNEL_CLASSES) < _KERNEL_CLASSES_MAX:
                _KERNEL_CLASSES.add(type(kernel))  # (its class's launch, not the instance's)
        self.items.append((KernelWork, kernel, grid, block, args, shared_mem, attributes))  # (**attributes: a new dict)

    def memcpy(self, dst: Any, src: Any, count: int | None = None) -> None:
        """Copy ``count`` bytes (default: the size of ``src``, which ``dst`` must hold)."""
        if count is None:
            count = self._size(src, "memcpy source")
            dst_size = self._size(dst, "memcpy destination", required=False)
            if dst_size is not None and dst_size < count:
                raise errors.InvalidValue("NodeContext.memcpy", detail=f"node {self.node!r}: the "
                                          f"destination holds {dst_size} bytes, the source {count}")
        self.items.append((MemcpyWork, dst, src, count))

    def memset(self, dst: Any, value: int, count: int | None = None) -> None:
        """Set ``count`` bytes (default: all of ``dst``) to the byte ``value``."""
        if count is None:
            count = self._size(dst, "memset destination")
        self.items.append((MemsetWork, dst, value, count))

    def host(self, fn: Callable[[], Any]) -> None:
        """Run the Python callable ``fn()`` on a runtime thread (a host node)."""
        if not callable(fn):
            raise errors.InvalidValue("NodeContext.host", detail=f"node {self.node!r}: {fn!r} is not callable")
        self.items.append((HostWork, fn))

    def child_graph(self, graph: "Graph") -> None:
        """Run a copy of ``graph`` (a child-graph node)."""
        from ..graph import Graph

        if not isinstance(graph, Graph):
            raise errors.InvalidValue("NodeContext.child_graph", detail=f"node {self.node!r}: {graph!r} "
                                                                        "is not a Graph")
        self.items.append((ChildGraphWork, graph))

    def record(self, event: "Event") -> None:
        """Record ``event`` (an event-record node)."""
        self.items.append((EventRecordWork, _event(event, self.node)))

    def wait(self, event: "Event") -> None:
        """Wait for ``event`` (an event-wait node)."""
        self.items.append((EventWaitWork, _event(event, self.node)))

    def capture(self, fn: Callable[["Stream"], Any]) -> None:
        """Work ``fn(stream)`` issues on the stream it is given (e.g. another library's calls).

        In a graph it is captured into a child graph (re-captured on update); in a
        single-stream launch it runs on the launch stream.  The variables it uses must
        be read/written in the closure itself, not inside ``fn``: ``fn`` is not called
        while the topology is inferred.
        """
        if not callable(fn):
            raise errors.InvalidValue("NodeContext.capture", detail=f"node {self.node!r}: {fn!r} is not callable")
        self.items.append((CaptureWork, fn))

    def _size(self, obj: Any, what: str, required: bool = True) -> Any:
        try:
            return extent(obj)[1]
        except errors.InvalidValue:
            if not required:
                return None
            raise errors.InvalidValue("NodeContext", detail=f"node {self.node!r}: the {what} "
                                      f"({type(obj).__name__}) has no size: pass count=") from None


def same_shapes(old: "Sequence[Item]", new: "Sequence[Item]") -> bool:
    """Whether two evaluations' work has the same shapes, item by item: work of one kind has one
    shape but for kernel launches with attributes (:meth:`KernelWork.shape`)."""
    if len(old) != len(new):
        return False
    if len(new) == 1:  # (a node's one item, the common case: no zip to make)
        a, b = old[0], new[0]
        return a[0] is b[0] and not (
            a[0] is KernelWork and (a[6] or b[6]) and KernelWork.shape(a) != KernelWork.shape(b))
    for a, b in zip(old, new):
        if a[0] is not b[0]:
            return False
        if a[0] is KernelWork and (a[6] or b[6]) and KernelWork.shape(a) != KernelWork.shape(b):
            return False
    return True


def _event(event: Any, node: str) -> "Event":
    from ..device import Event

    if not isinstance(event, Event):
        raise errors.InvalidValue("NodeContext", detail=f"node {node!r}: {event!r} is not an Event")
    return event


__all__ = ["Item", "NodeContext", "Work"]
