"""Graph nodes: a base with builder methods, and one subclass per node type.

A node keeps its graph alive.  The same runtime handle always gives the same
Python object while the graph lives (the graph's node table).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from .. import errors
from .._operands import listed as _listed
from ..enums import DEFAULT_EDGE, EdgeData, NodeType
from ..multidevice import access_of, node_device, with_copy_devices

if TYPE_CHECKING:
    from ._graph import Graph

_kernel: Any = None  # graph/_kernel, loaded by the first kernel node read or set (_load_kernel)


def _load_kernel() -> Any:
    """graph/_kernel (it imports pygraphrt.kernels: loaded with the first kernel node, then kept --
    an import statement costs about a microsecond even once its module is loaded)."""
    global _kernel
    from . import _kernel as kernel

    _kernel = kernel
    return kernel


@dataclass(frozen=True)
class Dim3:
    x: int = 1
    y: int = 1
    z: int = 1

    def __iter__(self) -> Iterator[int]:
        return iter((self.x, self.y, self.z))


def _as_dim3(v: Any, what: str) -> Dim3:
    from ..kernels._library import as_dims  # the one check of launch dimensions (ints in 1..2**32-1)

    return Dim3(*as_dims(v, what))


def check_edges(deps: Sequence["Node"], edges: Sequence[EdgeData] | None) -> list[EdgeData] | None:
    """``edges`` (None: none) as a list, checked to be EdgeData, one per dependency in ``deps``."""
    if edges is None:
        return None
    edges = _listed(edges, "edges", "EdgeData")
    if len(edges) != len(deps):
        raise errors.InvalidValue("edges", detail=f"{len(edges)} edge data for {len(deps)} dependencies")
    for e in edges:
        if not isinstance(e, EdgeData):
            raise errors.InvalidValue("edges", detail=f"{e!r} is not an EdgeData")
    return edges


def _builder(add: str) -> Callable[..., "Node"]:
    def method(self: "Node", *args: Any, edge: EdgeData | None = None, **kw: Any) -> "Node":
        return getattr(self.graph, add)(*args, dependencies=[self],
                                        edges=None if edge is None else [edge], **kw)

    method.__name__ = add.removeprefix("add_")
    method.__doc__ = (f"Add a node depending on this one (``edge``: its edge data); "
                      f"same arguments as :meth:`Graph.{add}`.  Returns the new node.")
    return method


class Node:
    """A node of a :class:`~pygraphrt.graph.Graph`.

    Node objects come from a graph (its ``add_*`` methods, :meth:`Graph.nodes`, captures,
    readback): the classes have no ``__init__``, since a class without one is the cheapest object
    CPython makes, and graphs of 10^4+ nodes make one per node.  The graph sets ``_graph`` and
    ``_handle`` (:func:`new_node`).
    """

    node_type: NodeType | None = None
    #: What the Python add paths tell a dependency's class by (a subclass's too, as
    #: isinstance would): ``d.__class__._is_node`` is a read CPython 3.11+ specializes (an
    #: attribute of the class object itself, found by type version), about half of what a set
    #: of classes or isinstance costs per node; any other class raises AttributeError there,
    #: and the general path (isinstance) says what is wrong.  Its presence is the mark, not
    #: its value.
    _is_node = True
    __slots__ = ("_graph", "_handle", "__weakref__")
    _graph: "Graph"
    _handle: Any  # the runtime's handle; None once the node is destroyed


    # builder methods: ``a.memset(...)`` returns a node that depends on ``a``
    empty = _builder("add_empty")
    memset = _builder("add_memset")
    memcpy = _builder("add_memcpy")
    memcpy_2d = _builder("add_memcpy_2d")
    host = _builder("add_host")
    child_graph = _builder("add_child_graph")
    event_record = _builder("add_event_record")
    external_semaphore_signal = _builder("add_external_semaphore_signal")
    external_semaphore_wait = _builder("add_external_semaphore_wait")
    event_wait = _builder("add_event_wait")
    mem_alloc = _builder("add_mem_alloc")
    mem_free = _builder("add_mem_free")
    kernel = _builder("add_kernel")

    @property
    def graph(self) -> "Graph":
        """The graph this node belongs to."""
        return self._graph

    @property
    def handle(self) -> Any:
        """The node's runtime handle (a cffi pointer).

        Raises
        ------
        InvalidResourceHandle
            The node was destroyed or its graph closed.
        """
        if self._handle is None or not self._graph.is_valid:
            raise errors.InvalidResourceHandle(f"{type(self).__name__}.handle",
                                               detail="the node or its graph was destroyed")
        return self._handle

    @property
    def is_valid(self) -> bool:
        """Whether the node still exists (not destroyed, its graph not closed)."""
        return self._handle is not None and self._graph.is_valid

    def __int__(self) -> int:
        return int(self._graph._backend.ffi.cast("uintptr_t", self.handle))

    def __repr__(self) -> str:
        t = self.type.value if self.is_valid else "destroyed"
        return f"<{type(self).__name__} {t} {hex(int(self)) if self.is_valid else ''}>"

    @property
    def type(self) -> NodeType:
        """The node's type (:class:`NodeType`)."""
        known = type(self).node_type  # the class was chosen by the node's type
        if known is not None:
            self.handle  # raises once the node or its graph is destroyed
            return known
        return self._graph._node_type(self.handle)

    @property
    def params(self) -> dict[str, Any]:
        """The node's parameters as the runtime reports them."""
        return {}

    @property
    def device(self) -> int | None:
        """The device the node runs on, where known: the ``device=`` it was made with, or a graph
        allocation's device; None for a node made without ``device=`` (it runs on the device
        that was current then: see :func:`pygraphrt.multidevice.node_device`)."""
        return node_device(self)

    def __init_subclass__(cls, **kw: Any) -> None:
        # ``params`` asks the runtime's generic readback first (cudaGraphNodeGetParams,
        # CUDA >= 13.2) and falls back to the type-specific getter a class defines.
        super().__init_subclass__(**kw)
        typed = cls.__dict__.get("params")
        if isinstance(typed, property):
            from ._readback import generic_first

            setattr(cls, "params", generic_first(typed))

    # -- ids (CUDA >= 13.1; NotSupported, naming the versions, elsewhere) -------
    @property
    def local_id(self) -> int:
        """The node's id within its graph (``GraphNodeGetLocalId``; as in ``debug_dot``)."""
        from ._readback import local_id

        return local_id(self)

    @property
    def tools_id(self) -> int:
        """The id tools (profilers) know the node by (``GraphNodeGetToolsId``)."""
        from ._readback import tools_id

        return tools_id(self)

    @property
    def containing_graph(self) -> "Graph":
        """The graph the runtime says holds this node (``GraphNodeGetContainingGraph``)."""
        from ._readback import containing_graph

        return containing_graph(self)

    def _query(self, ctype: str, api: str) -> Any:
        """A new ``ctype`` filled by the runtime's getter ``api`` for this node."""
        b = self._graph._backend
        out = b.ffi.new(f"{ctype} *")
        b.ops.call(api, self.handle, out)
        return out

    def _addr(self, pointer: Any) -> int:
        return int(self._graph._backend.ffi.cast("uintptr_t", pointer))

    @property
    def dependencies(self) -> list[tuple["Node", EdgeData]]:
        """Nodes this one depends on, each with its edge's data."""
        ops = self._graph._backend.ops
        return [(self._graph._wrap(h), e) for h, e in ops.node_dependencies(self.handle)]

    @property
    def dependents(self) -> list[tuple["Node", EdgeData]]:
        """The nodes that depend on this one, each with the edge's data.

        Returns
        -------
        list of (Node, EdgeData)
        """
        ops = self._graph._backend.ops
        return [(self._graph._wrap(h), e) for h, e in ops.node_dependents(self.handle)]

    def add_dependent(self, node: "Node", edge: EdgeData = DEFAULT_EDGE) -> None:
        """Add the edge self -> node (with edge data where the runtime has it)."""
        self._graph.add_dependencies([self], [node], [edge])

    def remove_dependent(self, node: "Node", edge: EdgeData = DEFAULT_EDGE) -> None:
        """Remove the edge from this node to ``node`` (with edge data ``edge``)."""
        self._graph.remove_dependencies([self], [node], [edge])

    def set_params(self, **params: Any) -> None:
        """Replace this node's parameters in its graph (generic ``GraphNodeSetParams``).

        Same keywords as :meth:`Graph.add_node` for this node's type.
        """
        g = self._graph
        # (filled by the graph, which keeps the operands: graph/_params sits above this module)
        p = g._node_params(self.type, params)
        g._backend.ops.call("GraphNodeSetParams", self.handle, p)

    def destroy(self) -> None:
        """Remove this node (and its edges) from the graph."""
        h = self.handle
        self._graph._backend.ops.call("GraphDestroyNode", h)
        self._graph._forget(h)
        self._handle = None


class EmptyNode(Node):
    """A node that does nothing: a point to order other nodes by."""
    __slots__ = ()
    node_type = NodeType.EMPTY


class MemsetNode(Node):
    """A memset node (:meth:`Graph.add_memset`)."""
    __slots__ = ()
    node_type = NodeType.MEMSET

    @property
    def params(self) -> dict[str, Any]:
        """``dst`` (address), ``value``, ``element_size``, ``width``, ``height`` and ``pitch``."""
        p = self._query(self._graph._backend.ops.memset_params_type, "GraphMemsetNodeGetParams")
        return {"dst": self._addr(p.dst), "value": p.value,
                "element_size": p.elementSize, "width": p.width, "height": p.height,
                "pitch": p.pitch}


class MemcpyNode(Node):
    """A copy node (:meth:`Graph.add_memcpy` and the 2-D/3-D forms)."""
    __slots__ = ()
    node_type = NodeType.MEMCPY

    @property
    def params(self) -> dict[str, Any]:
        """``dst``, ``src`` (addresses), pitches, ``width``/``height``/``depth``, ``kind``, and
        ``dst_device``/``src_device`` (None: host memory)."""
        p = self._query(self._graph._backend.ops.memcpy3d_params_type, "GraphMemcpyNodeGetParams")
        # dst_device / src_device: the devices whose memory the operands are (None: host memory)
        return with_copy_devices({"dst": self._addr(p.dstPtr.ptr), "src": self._addr(p.srcPtr.ptr),
                                  "dst_pitch": p.dstPtr.pitch, "src_pitch": p.srcPtr.pitch,
                                  "width": p.extent.width, "height": p.extent.height, "depth": p.extent.depth,
                                  "kind": int(p.kind)}, self._graph._backend)

    def set_params(self, *, dst: Any, src: Any, count: int) -> None:  # type: ignore[override]
        """Make this a 1-D copy of ``count`` bytes from ``src`` to ``dst`` (in its graph)."""
        from .._operands import count as _count
        from .._operands import ptr as _ptr

        g = self._graph
        b = g._backend
        b.ops.call("GraphMemcpyNodeSetParams1D", self.handle, _ptr(b, dst), _ptr(b, src), _count(count),
                   b.ops.const("MemcpyDefault"))
        g._keep_operand(dst)
        g._keep_operand(src)


class HostNode(Node):
    """A node that runs a Python callable on a host thread (:meth:`Graph.add_host`)."""
    __slots__ = ()
    node_type = NodeType.HOST

    @property
    def params(self) -> dict[str, Any]:
        """``{"fn": callable}``: the node's host callable."""
        from ._readback import host_callable

        p = self._query(self._graph._backend.ops.host_params_type, "GraphHostNodeGetParams")
        return {"fn": host_callable(self._graph._backend, p.fn, p.userData)}


class ChildGraphNode(Node):
    """A node that runs a copy of another graph (:meth:`Graph.add_child_graph`); ``child`` is that copy."""
    __slots__ = ()
    node_type = NodeType.GRAPH

    @property
    def child(self) -> "Graph":
        """The node's own copy of the child graph (owned by the node)."""
        out = self._query(f"{self._graph._backend.ops.prefix}Graph_t", "GraphChildGraphNodeGetGraph")
        return self._graph._borrow(out[0], owner=self)

    @property
    def params(self) -> dict[str, Any]:
        """``{"nodes": n}``: the number of nodes of the child graph."""
        return {"nodes": len(self.child.nodes())}


class _EventNode(Node):
    __slots__ = ()
    _get_api = ""
    _set_api = ""

    def set_event(self, event: Any) -> None:
        """Use ``event`` in this node (in its graph; executables made earlier keep theirs)."""
        from ..device import Event

        g = self._graph
        g._same_backend(event, "set_event", Event)
        g._backend.ops.call(self._set_api, self.handle, event.handle)
        g._keep.append(event)

    @property
    def params(self) -> dict[str, Any]:
        """``{"event": address}``: the node's event handle."""
        out = self._query(f"{self._graph._backend.ops.prefix}Event_t", self._get_api)
        return {"event": self._addr(out[0])}


class EventRecordNode(_EventNode):
    """A node that records an event (:meth:`Graph.add_event_record`)."""
    __slots__ = ()
    node_type = NodeType.EVENT_RECORD
    _get_api = "GraphEventRecordNodeGetEvent"
    _set_api = "GraphEventRecordNodeSetEvent"


class EventWaitNode(_EventNode):
    """A node that waits for an event (:meth:`Graph.add_event_wait`)."""
    __slots__ = ()
    node_type = NodeType.WAIT_EVENT
    _get_api = "GraphEventWaitNodeGetEvent"
    _set_api = "GraphEventWaitNodeSetEvent"


class MemAllocNode(Node):
    """A graph memory allocation (:meth:`Graph.add_mem_alloc`); ``dptr`` is its address."""
    __slots__ = ()
    node_type = NodeType.MEM_ALLOC

    @property
    def params(self) -> dict[str, Any]:
        """``dptr`` (the address), ``bytesize``, ``device`` and ``peers`` (devices given access,
        with their access)."""
        p = self._query(self._graph._backend.ops.mem_alloc_params_type, "GraphMemAllocNodeGetParams")
        # peers: the other devices given access (its access descriptors), as {device: access}
        return {"dptr": self._addr(p.dptr), "bytesize": p.bytesize,
                "device": p.poolProps.location.id, "peers": access_of(self._graph._backend, p)}

    @property
    def dptr(self) -> int:
        """The device address this node's allocation will have."""
        return self.params["dptr"]


class MemFreeNode(Node):
    """A node that frees graph memory (:meth:`Graph.add_mem_free`)."""
    __slots__ = ()
    node_type = NodeType.MEM_FREE

    @property
    def params(self) -> dict[str, Any]:
        """``{"dptr": address}``: the memory freed."""
        out = self._query("void *", "GraphMemFreeNodeGetParams")
        return {"dptr": self._addr(out[0])}


class KernelNode(Node):
    """A kernel launch: its kernel, launch dimensions and argument values.

    Any kernel node is readable on CUDA: kernels the runtime API cannot describe
    (library kernels, foreign functions, another runtime's kernels) are read
    and written through the driver API.  Argument values are decoded when
    pygraphrt knows the node's kernel and its signature.
    """

    __slots__ = ()
    node_type = NodeType.KERNEL

    @property
    def params(self) -> dict[str, Any]:
        """``func``, ``grid``, ``block``, ``shared_mem_bytes``, ``kernel`` (a Kernel or
        None) and ``args`` (decoded values, or None without a known signature)."""
        return (_kernel or _load_kernel()).read(self)

    @property
    def args(self) -> list[Any] | None:
        """The node's argument values decoded by its kernel's signature (None: not decodable)."""
        return self.params["args"]

    def set_params(self, *, kernel: Any = None, grid: Any = None, block: Any = None,  # type: ignore[override]
                   args: Any = None, shared_mem: int | None = None) -> None:
        """Change this node in its graph; what is not given stays as it is.

        A new ``kernel`` needs its ``args``; new ``args`` are packed by the
        (new or current) kernel's signature.  (The node's Kernel, if pygraphrt
        knows it, is ``params["kernel"]``; ``node.kernel(...)`` is the builder
        that adds a kernel node after this one.)
        """
        (_kernel or _load_kernel()).update(self, None, self._graph._keep, kernel, grid, block, args, shared_mem)

    def set_launch_dims(self, grid: Any = None, block: Any = None,
                        shared_mem_bytes: int | None = None) -> None:
        """Change grid / block / dynamic shared memory of this node in its graph."""
        ops = self._graph._backend.ops
        k = ops.kernel_params(self.handle)
        _apply_dims(k, grid, block, shared_mem_bytes)
        ops.set_kernel_dims(self.handle, k)

    def attribute(self, name: str) -> Any:
        """A kernel-node attribute by name (``priority``, ``cluster_dim``, ``cooperative``, ...)."""
        return (_kernel or _load_kernel()).attribute(self, name)

    def set_attribute(self, name: str, value: Any) -> None:
        """Set a kernel-node attribute by name (see :meth:`attribute`)."""
        (_kernel or _load_kernel()).set_attribute(self, name, value)

    def copy_attributes_to(self, other: "KernelNode") -> None:
        """Copy all of this node's attributes to another kernel node (of any graph)."""
        if not isinstance(other, KernelNode):
            raise errors.InvalidValue("KernelNode.copy_attributes_to", detail=f"{other!r} is not a KernelNode")
        if other._graph._backend is not self._graph._backend:
            raise errors.InvalidValue("KernelNode.copy_attributes_to", detail="the node belongs to another backend")
        self._graph._backend.ops.copy_kernel_node_attributes(self.handle, other.handle)


def _apply_dims(k: Any, grid: Any, block: Any, shared: int | None) -> None:
    """Validate and apply new launch dimensions to a KernelParams."""
    if grid is not None:
        d = _as_dim3(grid, "grid")
        k.grid = (d.x, d.y, d.z)
    if block is not None:
        d = _as_dim3(block, "block")
        k.block = (d.x, d.y, d.z)
    if shared is not None:
        from ..kernels._library import as_shared_mem  # (the kernels' rule: an unsigned int)

        k.shared_mem_bytes = as_shared_mem(shared)


class ConditionalNode(Node):
    """IF / IF-ELSE / WHILE / SWITCH: runs a body graph as a value set on the device says.

    Made by :meth:`Graph.add_if` (``add_if_else``, ``add_while``, ``add_switch``) or the
    same methods of a :class:`Capture`; the value comes from a
    :class:`~pygraphrt.graph.ConditionalHandle` a kernel sets with
    ``cudaGraphSetConditional`` (see :data:`pygraphrt.graph.SET_CONDITIONAL_SOURCE`).
    """

    __slots__ = ("_cond",)
    node_type = NodeType.CONDITIONAL

    _cond: Any  # (kind, ConditionalHandle, [body Graphs]) when pygraphrt made it, else None

    def _info(self) -> Any:
        if self._cond is None:
            raise errors.NotSupported("ConditionalNode.params", detail="the runtime has no readback of a "
                                      "conditional node's parameters before CUDA 13.5 "
                                      "(cudaGraphNodeGetParams); pygraphrt knows them for the nodes it "
                                      "made, not for the runtime's copies (a child graph's) or nodes "
                                      "other libraries made")
        return self._cond

    @property
    def kind(self) -> str:
        """``"if"``, ``"if_else"``, ``"while"`` or ``"switch"``."""
        return self._info()[0]

    @property
    def condition(self) -> Any:
        """The :class:`~pygraphrt.graph.ConditionalHandle` whose value decides."""
        return self._info()[1]

    @property
    def bodies(self) -> list["Graph"]:
        """The body graphs (owned by the node): fill them explicitly or by capture."""
        return list(self._info()[2])

    @property
    def size(self) -> int:
        """The number of bodies (1 for if and while, 2 for if_else, n for a switch)."""
        return len(self._info()[2])

    @property
    def params(self) -> dict[str, Any]:
        """``kind`` (if, if_else, while, switch), ``handle`` (the condition's value), ``size``
        (bodies) and ``bodies`` (nodes per body)."""
        kind, handle, bodies = self._info()
        return {"kind": kind, "handle": handle.value, "size": len(bodies),
                "bodies": [len(b.nodes()) for b in bodies]}

    def capture(self, stream: Any, body: int = 0, mode: Any = "global") -> Any:
        """``with node.capture(stream, body=i):`` captures work on ``stream`` into body ``i``."""
        bodies = self._info()[2]
        if not isinstance(body, int) or not 0 <= body < len(bodies):
            raise errors.InvalidValue("ConditionalNode.capture", detail=f"body {body!r}: this "
                                      f"{self.kind} node has {len(bodies)} bodies")
        from ..device import Stream  # (device sits above the graph package's modules)

        if not isinstance(stream, Stream):
            raise errors.InvalidValue("ConditionalNode.capture", detail=f"{stream!r} is not a Stream")
        return stream.capture(mode, graph=bodies[body])


class _ExtSemNode(Node):
    __slots__ = ()
    _wait = False
    _api = ""  # GraphExternalSemaphores{Signal,Wait}Node

    @property
    def params(self) -> dict[str, Any]:
        """``{"signals": [SemaphoreSignal, ...]}`` (or ``"waits"``), as the runtime reports them."""
        from .. import extsem

        b = self._graph._backend
        ops = b.ops
        out = self._query(ops.ext_sem_wait_node_type if self._wait else ops.ext_sem_signal_node_type,
                          f"{self._api}GetParams")
        return {"waits" if self._wait else "signals": extsem.unpack(b, out, self._wait)}

    def set_params(self, items: Any) -> None:  # type: ignore[override]
        """Replace the semaphores and values (in this node's graph)."""
        from .. import extsem

        g = self._graph
        p, keep = extsem.node_params(g._backend, items, self._wait, f"{type(self).__name__}.set_params")
        g._backend.ops.call(f"{self._api}SetParams", self.handle, p)
        g._keep.append(keep)


class ExternalSemaphoreSignalNode(_ExtSemNode):
    """Signals external semaphores when it runs."""

    __slots__ = ()
    node_type = NodeType.EXT_SEMAS_SIGNAL
    _api = "GraphExternalSemaphoresSignalNode"


class ExternalSemaphoreWaitNode(_ExtSemNode):
    """Waits for external semaphores before its dependents run."""

    __slots__ = ()
    node_type = NodeType.EXT_SEMAS_WAIT
    _wait = True
    _api = "GraphExternalSemaphoresWaitNode"


class OtherNode(Node):
    """A node type pygraphrt does not model (HIP's memcpy-symbol and batch mem-op nodes)."""

    __slots__ = ()


NODE_CLASSES: dict[NodeType, type[Node]] = {
    cls.node_type: cls for cls in (EmptyNode, MemsetNode, MemcpyNode, HostNode, ChildGraphNode,
                                   EventRecordNode, EventWaitNode, MemAllocNode, MemFreeNode,
                                   KernelNode, ConditionalNode, ExternalSemaphoreSignalNode,
                                   ExternalSemaphoreWaitNode)
}


def new_node(cls: type[Node], graph: "Graph", handle: Any) -> Node:
    """The ``cls`` object of node ``handle`` of ``graph`` (a handle of None: a destroyed node's).
    The graph's hot add paths inline these lines."""
    node = cls()
    node._graph = graph
    node._handle = handle
    if cls is ConditionalNode:
        node._cond = None  # type: ignore[attr-defined]
    return node
