"""Explicit graph definition."""

from __future__ import annotations

from functools import partial as _partial
from struct import error as _StructError
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence
from weakref import ReferenceType as _WeakRef

from .. import _runtime, errors
from .._handles import ErrorSink, Owned
from .._keywords import KEYWORDS, KeywordsFollow, keywords_follow, positional_error
from .._operands import count as _count
from .._operands import keep as _keep_alive
from .._operands import listed as _listed
from .._operands import ptr as _ptr
from ..device import Device, DeviceBuffer, Event, Stream
from ..multidevice import check_kernel_buffers, check_launch, check_one_device, checked_ordinal, device_exists
from ..multidevice import current as _current_device
from ..multidevice import launch_device, record_existing_nodes
from ..multidevice import runs_on as _runs_on
from ..multidevice import placed as _placed
from ..multidevice import record_node as _record_node
from . import _params
from ._fresh import watch as _watch_fresh
from ..enums import DebugDotFlags, EdgeData, InstantiateFlags, NodeType, flag_set, member
from ._node import (NODE_CLASSES, ChildGraphNode, ConditionalNode, EmptyNode,
                    EventRecordNode, EventWaitNode, ExternalSemaphoreSignalNode, ExternalSemaphoreWaitNode,
                    HostNode, KernelNode, MemAllocNode, MemcpyNode, MemFreeNode, MemsetNode, Node,
                    OtherNode)
from ._node import check_edges as _check_edges
from ._node import new_node as _node_of

if TYPE_CHECKING:
    from ._conditional import ConditionalHandle
    from ._exec import GraphExec
    from ._foreign import RandomDraws
    from ._nodelist import NodeList


_MEMSET_LIMIT = {1: 1 << 8, 2: 1 << 16, 4: 1 << 32}  # element size -> values it can hold


_kernel_nodes: Any = None  # graph/_kernel, loaded by the first add_kernel (it brings in pygraphrt.kernels)
_GraphExec: Any = None  # graph/_exec.GraphExec, loaded by the first instantiate (_exec imports this module)
_Kernel: Any = None  # kernels.Kernel, set with _kernel_nodes (add_kernel's hot dispatch tests it)
_bulk: Any = None  # graph/_bulk, loaded by the first add_nodes / add_networkx


def _load_kernel_nodes() -> Any:
    global _kernel_nodes, _Kernel
    from . import _kernel

    _kernel_nodes = _kernel
    _Kernel = _kernel.Kernel
    return _kernel


def _load_bulk() -> Any:
    global _bulk
    from . import _bulk as bulk

    _bulk = bulk
    return bulk


def _load_graph_exec() -> Any:
    global _GraphExec
    from ._exec import GraphExec

    _GraphExec = GraphExec
    return GraphExec


class _Calls:
    """A backend's functions for the runtime calls graphs make, as attributes
    (``calls.GraphAddEmptyNode``), looked up once -- ``ops.fn`` raises NotSupported for one
    the runtime lacks, at the call that needs it -- then plain instance attributes.  Where ABI
    mode calls the driver's function for one (``ops.direct_fn``: the empty-node add on CUDA),
    the attribute is that function; a call it refuses is made again by :meth:`refused`."""

    def __init__(self, ops: Any) -> None:
        self.__dict__["_ops"] = ops

    def __getattr__(self, api: str) -> Any:
        f = self._ops.hot_fn(api)
        self.__dict__[api] = f
        return f

    def refused(self, api: str, rc: int, *args: Any) -> int:
        """What stands where ``calls.<api>(*args)`` returned ``rc`` (non-zero): ``ops.refused``."""
        return self._ops.refused(api, getattr(self, api), rc, *args)

    def retry(self, api: str, rc: int, *args: Any) -> None:
        """:meth:`refused`, raising the error of what stands (the vendor's code, naming ``api``)
        unless it is success: the add paths' one line after a non-zero result, which keeps
        their own code short enough for CPython to jump over it without EXTENDED_ARG."""
        rc = self.refused(api, rc, *args)
        if rc:
            ops = self._ops
            raise ops.error(rc, ops.prefix + api)


def _calls(backend: Any) -> _Calls:
    c = backend.memo.get("_graph_calls")
    if c is None:
        c = backend.memo["_graph_calls"] = _Calls(backend.ops)
        # The backend's first graph: where its compiled extension has them, the C versions of
        # the hot methods take over (graph/_hot.py; nothing happens in ABI mode or on the sim).
        install_hot(backend)
    return c


def install_hot(backend: Any) -> None:
    """Put the compiled hot methods (graph/_hot) on Graph and GraphExec for ``backend``, where its
    compiled extension has them: what its first graph does (and ``pygraphrt info``, before it
    says what runs them).  graph/_hot sits below this module: it is handed the classes."""
    from . import _hot
    from ._exec import GraphExec

    _hot.install(backend, {"Graph": Graph, "GraphExec": GraphExec, "Node": Node, "EmptyNode": EmptyNode,
                           "MemsetNode": MemsetNode, "MemcpyNode": MemcpyNode, "KernelNode": KernelNode})


def _unplaced(graph: "Graph", device: Any) -> bool:
    """Whether a node made without ``device=`` lands where ``device`` says, with nothing to
    switch, check or record: ordinal 0 of a runtime that has one device (counted already), or
    ordinal 0 while it is current and no other device has been used through pygraphrt (every
    node is device 0's then: multidevice.node_device).  The ABI build path then skips the
    placing call (its cost is measured in benchmarks/multidevice: "the cost of device= on the
    one-device build path"); asking which device is current is the one call it cannot skip --
    torch, CuPy or the user may have switched behind pygraphrt's back."""
    if device.__class__ is not int or device != 0:
        return False
    b = graph._backend
    count = b.memo.get("_device_count")
    if count == 1:
        return True
    return bool(count) and not b.several and _current_device(b) == 0


def _live(entry: Node | _WeakRef[Node] | None) -> Node | None:
    """The node of a node-table entry (see Graph.__init__), None when there is none (left)."""
    return entry() if type(entry) is _WeakRef else entry  # type: ignore[return-value]


class Graph(Owned):
    """A CUDA/HIP graph built explicitly or by stream capture.

    Operands the graph refers to (host callables, child graphs, buffers given
    as objects) are retained for the graph's lifetime and by every executable
    graph instantiated from it.
    """

    _destroy_api = "GraphDestroy"
    _kind = "graph"
    _keeps_for_runtime = True
    # The attributes the compiled hot methods (graph/_hot.py) read at fixed offsets.  (A slot
    # has no class default: ``_handle`` exists once Owned.__init__ has run.)
    __slots__ = ("_backend", "_handle", "_nodes", "_keep")

    def __init__(self) -> None:
        """An empty graph (``cudaGraphCreate`` / ``hipGraphCreate``) on the active backend."""
        self._init(None, True, None)

    @classmethod
    def _adopt(cls, handle: Any, owned: bool = True, owner: Any = None) -> "Graph":
        """The Graph of a runtime graph handle (a captured graph, a clone, a child graph's body):
        ``owned`` -- destroyed with the object; ``owner`` -- what a borrowed graph keeps alive."""
        self = cls.__new__(cls)
        self._init(handle, owned, owner)
        return self

    def _init(self, _handle: Any, _owned: bool, _owner: Any) -> None:
        backend = _runtime.active()
        if _handle is None:
            out = backend.ffi.new(f"{backend.ops.prefix}Graph_t *")
            backend.ops.call("GraphCreate", out, 0)
            _handle = out[0]
        super().__init__(backend, _handle, _owned, keep=[])
        # The node table: the one Python object of each node handle, keyed by the handle itself
        # (cffi pointers hash and compare by address).  An entry is the node, or a weak
        # reference to it: the compiled add methods keep nodes weakly, so that a node its
        # caller drops dies at once instead of becoming one more object the cyclic collector
        # must keep walking (in a process with a large heap, a full collection per few
        # graphs of thousands of nodes).  A node a weak entry has lost is made again on demand
        # by _wrap; nodes with state of their own (ConditionalNode) are only made by Python
        # code, which keeps them strongly.  Read entries with _live.
        self._nodes: dict[Any, Node | _WeakRef[Node]] = {}
        # Nodes the Python add methods made and not yet entered in the table (a list append
        # costs a fraction of a dict entry keyed by a cffi pointer, and a graph built to be
        # instantiated may never read its table): _table() enters them.  Everything that reads
        # the table reads it through _table(); only the compiled add methods write it directly,
        # and graph/_fresh: an add that finds this list empty has the graph watched, and at each
        # collection's start the fresh nodes nothing else refers to are let go, the others
        # entered in the table.
        self._fresh: list[Node] = []
        self._fresh_watched = False
        # Scratch cells reused by node creation (graphs are not thread-safe in the
        # runtime either: one graph must not be modified from two threads at once).
        ffi, prefix = backend.ffi, backend.ops.prefix
        self._out1 = ffi.new(f"{prefix}GraphNode_t *")
        self._fn = backend.ops.fn
        self._dep1 = ffi.new(f"{prefix}GraphNode_t[1]")
        self._depn: Any = None  # grown on demand for nodes with several dependencies
        self._calls = _calls(backend)
        # add_empty's function for its hot path (ABI mode: the driver's, where there is one), as
        # an instance attribute: read without _Calls' lookup hook.  None: the runtime lacks it,
        # and the generic path says so.
        try:
            self._empty_fn = self._calls.GraphAddEmptyNode
        except errors.GraphRTError:
            self._empty_fn = None
        self._memset: Any = None  # the memset-params cell (_make_memset_cell), made on first use
        self._memset_fn: Any = None  # (and its function, with it)
        # The plain (dst, value, count, element_size, height, pitch) objects add_memset last packed
        # into the cell's struct, the struct, and what the call takes that stays as long as the
        # graph -- the runtime's function, the dependency and output cells -- and what says
        # whether dst is still open (the buffer; _params.OPEN for an address), the graph's
        # handle (whatever drops it drops this: close, _disown) and the fresh-node list:
        # one tuple unpacked per call costs less than reading each.  _params.NO_MEMSET while
        # the struct holds anything else (whoever else writes it -- the generic validation,
        # add_nodes' loop -- sets that) and while several devices are in use (the nodes' devices
        # are recorded then, by the general path: _several_devices).
        self._memset_last: tuple[Any, ...] = _params.NO_MEMSET
        # The same for the kernel nodes' hot adders (graph/_kernel.build_adder): the kernel of
        # the last node one made, the scratch (out of the kernel's pool while here) and struct
        # it was made from, and the objects they were filled from.
        self._kernel_last: tuple[Any, ...] | None = None
        self._sink = ErrorSink()
        self._owner = _owner  # a borrowed graph keeps what owns it alive
        # add_nodes' results whose entries are still handles (see _nodelist), told when
        # nodes go; None until the first.
        self._node_lists: list[_WeakRef[NodeList]] | None = None
        # Another library's graph (wrap) or a clone of one: child-graph use checks its nodes.
        self._foreign = False
        # What a wrapped torch graph (or a clone of one) draws (graph/_foreign.RandomDraws), else None.
        self._draws: RandomDraws | None = None
        # node handle -> device of the nodes made with device= (multidevice.node_devices), else None.
        # (These are attributes set here, as every state of a graph is, never entries put in its
        # __dict__: see _runtime.Backend.memo for what reading __dict__ costs every later read.)
        self._node_devices: dict[Any, int] | None = None

    @staticmethod
    def _borrow(handle: Any, owner: Any) -> "Graph":
        """A Graph (this class, whatever the object it is called on) borrowing the runtime graph
        ``handle`` -- a child graph node's copy, a conditional node's body, the graph holding a
        node -- kept alive by ``owner``.  The modules below this one (nodes, readback,
        conditional nodes) make them as ``graph._borrow(...)`` through the graph at hand."""
        return Graph._adopt(handle, False, owner)

    @classmethod
    def wrap(cls, obj: Any, owner: Any = None) -> "Graph":
        """Borrow a graph another library made; pygraphrt never destroys it.

        Parameters
        ----------
        obj : torch.cuda.CUDAGraph, cuda.core graph definition, CUgraph / cudaGraph_t, or int
            A torch graph must be made with ``keep_graph=True`` and captured (its
            ``raw_cuda_graph()``); an int is taken as a ``cudaGraph_t`` handle and trusted (the
            runtime cannot tell a live handle from a stale one).
        owner : object, optional
            What keeps the foreign graph alive (default: ``obj``, unless it is an int).  The
            returned Graph, every executable graph instantiated from it and every graph holding
            it as a child node keep ``owner`` alive.

        Returns
        -------
        Graph
            Nodes and edges read back as for any graph; clone, instantiate, launch and
            ``GraphExec.update`` work on it.  A torch graph that draws (or may draw) random
            numbers is refused as a child node and by ``instantiate`` unless
            ``allow_fixed_rng=True`` (see ``pygraphrt.errors.FixedRandomness``).

        Raises
        ------
        InvalidValue
            ``obj`` holds no graph pygraphrt can find (a torch graph made without
            ``keep_graph=True``, not captured or reset; a CuPy graph, whose handles Python cannot
            read; anything else), naming what was given.
        """
        from ._foreign import graph_handle

        if isinstance(obj, Graph):
            raise errors.InvalidValue("Graph.wrap", detail=f"{obj!r} is a pygraphrt Graph already: use it as it is")
        value, draws = graph_handle(obj, "Graph.wrap")
        if owner is None and not isinstance(obj, int):
            owner = obj
        b = _runtime.active()
        g = cls._adopt(b.ffi.cast(f"{b.ops.prefix}Graph_t", value), False, owner)
        g._keep.append(owner)  # (what holds it as a child, or instantiates it, keeps the owner too)
        g._foreign = True
        g._draws = draws
        return g

    def _conditional_owner(self) -> Any:
        """The conditional node this graph is a body of -- directly, or through child graphs and
        nested bodies (the outermost one) -- else None."""
        found = None
        owner = self._owner
        while owner is not None:
            if getattr(owner, "_cond", None) is not None:
                found = owner
            # (a wrapped graph's owner is another library's object, with no _graph)
            owner = getattr(getattr(owner, "_graph", None), "_owner", None)
        return found

    def _several_devices(self) -> None:
        """The backend is now used with several devices (pygraphrt.multidevice.now_several,
        once): the nodes made so far are device 0's (all there was), and add_memset stops taking
        its remembered struct, whose path records no device."""
        self._memset_last = _params.NO_MEMSET
        record_existing_nodes(self)

    def _disown(self) -> Any:
        self._memset_last = _params.NO_MEMSET  # (it holds the handle this drops)
        return super()._disown()

    def _take_ownership(self, handle: Any) -> None:
        self._memset_last = _params.NO_MEMSET
        super()._take_ownership(handle)

    def close(self) -> None:
        """Destroy the graph now.  Executable graphs made from it stay usable."""
        super().close()
        self._nodes.clear()
        self._fresh.clear()
        self._memset_last, self._kernel_last = _params.NO_MEMSET, None  # (what they hold is the keep list's)

    # -- node table ---------------------------------------------------------
    def _table(self) -> dict[Any, Node | _WeakRef[Node]]:
        """The node table (handle -> node or weak reference), the nodes made since it was last
        read (``_fresh``) entered first."""
        fresh = self._fresh
        nodes = self._nodes
        if fresh:
            for node in fresh:
                h = node._handle
                if h is not None:
                    nodes[h] = node
            fresh.clear()
        return nodes

    def _node_type(self, handle: Any) -> NodeType:
        ops = self._backend.ops
        out = self._backend.ffi.new(f"enum {ops.prefix}GraphNodeType *")
        rc = ops.fn("GraphNodeGetType")(handle, out)
        if rc:
            err = ops.error(rc, f"{ops.prefix}GraphNodeGetType")
            try:
                fallback = ops.node_type_fallback(handle)
            except errors.GraphRTError:
                fallback = None
            if fallback is None:
                raise err
            return fallback
        t = ops.node_type_of.get(out[0])
        if t is None:
            raise errors.NotSupported(f"{ops.prefix}GraphNodeGetType",
                                      detail=f"unknown node type value {out[0]}")
        return t

    def _wrap(self, handle: Any, cls: type[Node] | None = None) -> Node:
        """The one Python object of a node handle (``cls`` when the caller knows the type)."""
        node = _live(self._table().get(handle))
        if node is None:
            if cls is None:
                cls = NODE_CLASSES.get(self._node_type(handle), OtherNode)
            node = self._nodes[handle] = _node_of(cls, self, handle)
        return node

    def _forget(self, handle: Any) -> None:
        """Node ``handle`` was destroyed: out of the node table and the bulk lists (whose entry
        for it becomes the table's object, if there was one, else a destroyed node)."""
        node = _live(self._table().pop(handle, None))
        if self._node_lists:
            from ._readback import _addr

            address = _addr(self._backend.ffi, handle)
            for made in self._live_lists():
                made._gone_address(address, node)

    def _keep_only(self, alive: set[Any]) -> None:
        """The runtime's nodes are now ``alive`` (handles; recapture): every other node of the
        table and the bulk lists is gone, its object (if any) destroyed."""
        gone = {}
        for h in [h for h in self._table() if h not in alive]:
            node = gone[h] = _live(self._nodes.pop(h))
            if node is not None:
                node._handle = None
        if self._node_lists:
            from ._readback import _addr

            ffi = self._backend.ffi
            addresses = {_addr(ffi, h) for h in alive}
            objects = {_addr(ffi, h): node for h, node in gone.items() if node is not None}
            for made in self._live_lists():
                made._gone(lambda a: a not in addresses, objects)

    def _watch(self, made: "NodeList") -> None:
        """Tell ``made`` (its entries hold node handles, not yet objects) when nodes go."""
        lists = self._node_lists = [r for r in self._node_lists or () if r() is not None]
        lists.append(_WeakRef(made))

    def _live_lists(self) -> list["NodeList"]:
        return [made for made in (r() for r in self._node_lists or ()) if made is not None]

    def _made_node(self, address: int, cls: type[Node]) -> Node:
        """The node object of the node at ``address``, made by a bulk loop as a ``cls`` (a
        NodeList's entry, read): the table's object, else a new one, entered weakly as the
        compiled adds enter theirs (the list keeps it)."""
        b = self._backend
        handle = b.ffi.cast(f"{b.ops.prefix}GraphNode_t", address)
        node = _live(self._table().get(handle))
        if node is None:
            node = _node_of(cls, self, handle)
            if self._handle is not None:  # a closed graph's table stays empty
                self._nodes[handle] = _WeakRef(node)
        return node

    def _make_memset_cell(self) -> Any:
        """The graph's memset-params cell (``_params.memset_packer``: struct, pack, pack_at),
        made on first use: add_memset's, and the bulk loops'."""
        b = self._backend
        # add_memset's function, read without _Calls' lookup hook (None: the runtime lacks it,
        # and _Calls raises saying so, at the call)
        try:
            self._memset_fn = self._calls.GraphAddMemsetNode
        except errors.GraphRTError:
            self._memset_fn = None
        self._memset = _params.memset_packer(b.ffi, b.ops.memset_params_type)
        return self._memset

    def _own_all(self, dependencies: Iterable[Node] | None) -> list[Node]:
        """``dependencies`` (None: none), each checked to be a node of this graph."""
        return [self._own(d) for d in _listed(dependencies, "dependencies", "Nodes")]

    def _own(self, node: Node) -> Node:
        if not isinstance(node, Node):
            raise errors.InvalidValue("dependency", detail=f"{node!r} is not a Node")
        if node._graph is not self:
            raise errors.InvalidValue("dependency", detail=f"{node!r} belongs to another graph")
        return node

    # -- adding nodes --------------------------------------------------------
    def _dep_array(self, deps: Sequence[Any], n: int) -> Any:
        """The scratch C array holding the handles of ``deps`` (each checked to be a live node
        of this graph); reused from call to call, as the runtime copies it."""
        arr = self._depn
        if arr is None or len(arr) < n:
            b = self._backend
            arr = self._depn = b.ffi.new(f"{b.ops.prefix}GraphNode_t[]", max(n, 8))
        for i, d in enumerate(deps):
            if isinstance(d, Node) and d._graph is self:
                dh = d._handle
                if dh is None or self._handle is None:
                    dh = d.handle  # raises InvalidResourceHandle
            else:
                dh = self._own(d).handle
            arr[i] = dh
        return arr

    def _new_node(self, cls: type[Node], node_handle: Any) -> Node:
        """The node object of a handle the runtime just made, entered in the node table."""
        node = _node_of(cls, self, node_handle)
        fresh = self._fresh
        if not fresh:
            _watch_fresh(self)
        fresh.append(node)
        if self._backend.several:  # several devices in use: where it runs (multidevice.node_device)
            _record_node(self, node)
        return node

    def _add(self, api: str, dependencies: Iterable[Node] | None, edges: Sequence[EdgeData] | None,
             *args: Any, cls: type[Node] = OtherNode) -> Node:
        # A hot path (graphs of 10^4+ nodes are built node by node): checks are
        # inlined and the scratch cells reused; anything unusual takes _own().
        h = self._handle
        if h is None:
            self.handle  # raises InvalidResourceHandle
        t = type(dependencies)
        deps: Sequence[Node] = (dependencies if t is list or t is tuple  # type: ignore[assignment]
                                else _listed(dependencies, "dependencies", "Nodes"))
        if edges is not None and any(not e.is_default for e in _check_edges(deps, edges) or ()):
            return self._add_with_edge_data(api, list(deps), list(edges), args, cls)
        n = len(deps)
        if n == 0:
            arr = self._backend.ffi.NULL
        elif n == 1:
            d = deps[0]
            if isinstance(d, Node) and d._graph is self and d._handle is not None:
                dh = d._handle
            else:
                dh = self._own(d).handle
            arr = self._dep1
            arr[0] = dh
        else:
            arr = self._dep_array(deps, n)
        out = self._out1
        calls = self._calls
        # One parameter (a node's struct or handle), the common case, is passed as it is: a
        # call with *args would first build a tuple of all five arguments.
        fn = getattr(calls, api)
        rc = fn(out, h, arr, n, args[0]) if len(args) == 1 else fn(out, h, arr, n, *args)
        if rc:
            calls.retry(api, rc, out, h, arr, n, *args)
        return self._new_node(cls, out[0])

    def _add_with_edge_data(self, api: str, deps: list[Node], edges: list[EdgeData],
                            args: tuple[Any, ...], cls: type[Node] | None) -> Node:
        """Create the node alone, then add its incoming edges with their data."""
        ops = self._backend.ops
        for d in deps:
            self._own(d)
        if not ops.has_edge_data:
            ops.require_default_edges(edges, f"{ops.prefix}{api}")
        node = self._add(api, (), None, *args, cls=cls)
        try:
            self.add_dependencies(deps, [node] * len(deps), edges)
        except BaseException:
            h = node._handle
            ops.call("GraphDestroyNode", h)
            self._forget(h)
            node._handle = None
            raise
        return node

    def add_empty(self, *, dependencies: Iterable[Node] | None = None,
                  edges: Sequence[EdgeData] | None = None) -> Node:
        """An empty node: a join point with no work."""
        # The hot path of explicit building, inlined: a sequence of one live node of this
        # graph (the pattern tests a list or tuple and its length in fewer steps than type()
        # and len() would; the node's class by the mark every node class has, Node._is_node),
        # no edge data.  Anything else takes _add, which says what is wrong.
        h = self._handle
        if edges is None and h is not None:
            match dependencies:
                case [d]:
                    try:
                        d.__class__._is_node
                    except AttributeError:
                        pass
                    else:
                        fn = self._empty_fn
                        if d._graph is self and fn is not None:
                            dh = d._handle
                            if dh is not None:
                                arr = self._dep1
                                arr[0] = dh
                                out = self._out1
                                rc = fn(out, h, arr, 1)
                                if rc:
                                    self._calls.retry("GraphAddEmptyNode", rc, out, h, arr, 1)
                                # _new_node, inlined: a Python call costs a fifth of this path
                                node = EmptyNode()
                                node._graph = self
                                node._handle = out[0]
                                fresh = self._fresh
                                if not fresh:
                                    _watch_fresh(self)
                                fresh.append(node)
                                if self._backend.several:
                                    _record_node(self, node)
                                return node
        return self._add("GraphAddEmptyNode", dependencies, edges, cls=EmptyNode)

    @keywords_follow
    def add_memset(self, dst: Any, value: int, count: int, _kw_only: KeywordsFollow = KEYWORDS, element_size: int = 1,
                   height: int = 1, pitch: int = 0, dependencies: Iterable[Node] | None = None,
                   edges: Sequence[EdgeData] | None = None, device: "Device | int | None" = None) -> Node:
        """Set ``count`` elements of ``element_size`` (1, 2 or 4) bytes to ``value`` (2D with height/pitch).

        ``device``: the device the node runs on (made with it current; default: the current
        device) -- the same keyword on every ``add_*`` that makes device work."""
        # The struct holds the last plain values this method packed (their checks passed then):
        # the same objects again -- a loop's constants -- are neither checked nor packed again;
        # only a buffer's being open is.  (Identity, not equality: True == 1 and 0.0 == 0 must
        # still take the checks that refuse them.)  last: those six objects, the struct, and
        # what the call takes from this graph, read once when it was packed (see _memset_last
        # in __init__).  (The test is written as "anything differs" so that each failing part
        # jumps into the block right below it, and the hot path pays one far jump, not one per
        # part: a jump past a long block costs CPython an EXTENDED_ARG each.)
        # (device= is tested first, so that ``here`` is set whenever a device was given: _unplaced
        # may ask the runtime, and is asked once)
        l_dst, l_value, l_count, l_size, l_height, l_pitch, p, fn, arr, out, l_open, h, fresh = self._memset_last
        if ((device is not None and not (here := _unplaced(self, device)))
                or dst is not l_dst or value is not l_value or count is not l_count
                or element_size is not l_size or height is not l_height or pitch is not l_pitch
                or l_open._handle is None or _kw_only is not KEYWORDS or edges is not None):
            if _kw_only is not KEYWORDS:
                raise positional_error("Graph.add_memset")
            if device is not None and not here:
                # (a partial, not a lambda: a closure would make every argument a cell variable,
                # created on every call of this method, the hot ones included)
                return _placed(self, device, "add_memset", _partial(
                    self.add_memset, dst, value, count, element_size=element_size, height=height, pitch=pitch,
                    dependencies=dependencies, edges=edges))
            # The runtime copies the parameters when it makes the node: one struct per graph,
            # refilled each time.  Plain ints and pygraphrt buffers are written directly;
            # anything else (and every error) takes the generic validation.
            p, pack, _ = self._memset or self._make_memset_cell()
            self._memset_last = _params.NO_MEMSET  # (until pack has written every field)
            limit = _MEMSET_LIMIT.get(element_size) if type(element_size) is int else None
            td: Any = None
            if (limit is not None and type(value) is int and value < limit and type(count) is int
                    and type(height) is int and type(pitch) is int):
                # The lower bounds and the fields' own upper bounds are pack's: it refuses a value
                # that does not fit its field (struct.error; OverflowError where HIP's layout is
                # written by cffi), and the generic validation then says what is wrong.
                td = type(dst)
                try:
                    if td is int:
                        pack(dst, value, element_size, count, height, pitch)
                    elif td is DeviceBuffer and dst._handle is not None and dst._backend is self._backend:
                        pack(dst._address, value, element_size, count, height, pitch)
                        keep = self._keep  # buffers given as objects live as long as the graph
                        if not keep or keep[-1] is not dst:
                            _keep_alive(keep, dst)
                    else:
                        td = None
                except (_StructError, OverflowError):
                    td = None
            fn = self._memset_fn
            h = self._handle
            # (fn or h None: _add raises saying why -- NotSupported, closed; several devices in
            # use: _add records the node's device, and the struct is not remembered, so that the
            # path below need not ask -- _several_devices forgets it when that begins)
            if td is None or fn is None or h is None or self._backend.several:
                if td is None:
                    _params.memset_fields(self._backend, p, dst, value, count, element_size, height, pitch,
                                          what="add_memset")
                    self._keep_operand(dst)
                return self._add("GraphAddMemsetNode", dependencies, edges, p, cls=MemsetNode)
            arr, out, fresh = self._dep1, self._out1, self._fresh
            self._memset_last = (dst, value, count, element_size, height, pitch, p, fn, arr, out,
                                 dst if td is DeviceBuffer else _params.OPEN, h, fresh)
            if edges is not None:
                return self._add("GraphAddMemsetNode", dependencies, edges, p, cls=MemsetNode)
        # Inlined as in add_empty: one live dependency of this graph, in a sequence of one (a
        # list, as a loop building a chain or a fan-out gives, or a tuple: the pattern below
        # tests that, and the length, in fewer steps than type() and len() would; its class
        # by Node._is_node); anything else takes _add with the struct.
        match dependencies:
            case [d]:
                try:
                    d.__class__._is_node
                except AttributeError:
                    pass
                else:
                    if d._graph is self:
                        dh = d._handle
                        if dh is not None:
                            arr[0] = dh
                            rc = fn(out, h, arr, 1, p)
                            if rc:
                                self._calls.retry("GraphAddMemsetNode", rc, out, h, arr, 1, p)
                            # _new_node, inlined (as in add_empty)
                            node = MemsetNode()
                            node._graph = self
                            node._handle = out[0]
                            if not fresh:
                                _watch_fresh(self)
                            fresh.append(node)
                            return node
        return self._add("GraphAddMemsetNode", dependencies, edges, p, cls=MemsetNode)

    def add_memcpy(self, dst: Any, src: Any, count: int, *,
                   dependencies: Iterable[Node] | None = None,
                   edges: Sequence[EdgeData] | None = None, device: "Device | int | None" = None) -> Node:
        """Copy ``count`` bytes; host or device memory on either side (unified addressing),
        also between devices (``MemcpyDefault``: the runtime tells the devices by address)."""
        if device is not None:
            return _placed(self, device, "add_memcpy", lambda: self.add_memcpy(
                dst, src, count, dependencies=dependencies, edges=edges))
        b = self._backend
        kind = b.ops.const("MemcpyDefault")
        self._keep_operand(dst)
        self._keep_operand(src)
        return self._add("GraphAddMemcpyNode1D", dependencies, edges, _ptr(b, dst), _ptr(b, src),
                         _count(count), kind, cls=MemcpyNode)

    def add_memcpy_2d(self, dst: Any, dst_pitch: int, src: Any, src_pitch: int, width: int,
                      height: int, depth: int = 1, *, dependencies: Iterable[Node] | None = None,
                      edges: Sequence[EdgeData] | None = None, device: "Device | int | None" = None) -> Node:
        """A pitched 2D (or 3D with ``depth``) copy of ``width`` bytes x ``height`` rows x ``depth``."""
        if device is not None:
            return _placed(self, device, "add_memcpy_2d", lambda: self.add_memcpy_2d(
                dst, dst_pitch, src, src_pitch, width, height, depth, dependencies=dependencies, edges=edges))
        b = self._backend
        ffi = b.ffi
        width, height, depth = _count(width), _count(height), _count(depth)
        p = ffi.new(f"{b.ops.memcpy3d_params_type} *")
        p.srcPtr.ptr = _ptr(b, src)
        p.srcPtr.pitch = _count(src_pitch)
        p.srcPtr.xsize = width
        p.srcPtr.ysize = height
        p.dstPtr.ptr = _ptr(b, dst)
        p.dstPtr.pitch = _count(dst_pitch)
        p.dstPtr.xsize = width
        p.dstPtr.ysize = height
        p.extent.width = width
        p.extent.height = height
        p.extent.depth = depth
        p.kind = b.ops.const("MemcpyDefault")
        self._keep_operand(dst)
        self._keep_operand(src)
        return self._add("GraphAddMemcpyNode", dependencies, edges, p, cls=MemcpyNode)

    def add_host(self, fn: Callable[[], Any], *, dependencies: Iterable[Node] | None = None,
                 edges: Sequence[EdgeData] | None = None) -> Node:
        """A node that runs the Python callable ``fn()`` on a runtime thread.

        An exception it raises is kept and raised by the next
        ``synchronize()`` of the stream or executable graph that ran it.
        """
        b = self._backend
        p = b.ffi.new(f"{b.ops.host_params_type} *")
        self._keep.append(_params.host_fields(b, p, fn, self._sink))
        return self._add("GraphAddHostNode", dependencies, edges, p, cls=HostNode)

    def add_child_graph(self, child: "Graph", *, dependencies: Iterable[Node] | None = None,
                        edges: Sequence[EdgeData] | None = None, allow_fixed_rng: bool = False) -> Node:
        """Embed a copy of ``child`` (its operands are retained here too).

        In a conditional node's body (directly or through child graphs) the child may hold
        only kernel, empty, child-graph, memset, memcpy and conditional nodes; a wrapped
        (foreign) child holds no memory allocation or free nodes: either is refused naming
        the node type.  A child that draws (or may draw) torch random numbers would repeat its
        draws on every launch: refused (``pygraphrt.errors.FixedRandomness``) unless
        ``allow_fixed_rng=True``, which warns instead.
        """
        self._same_backend(child, "add_child_graph", Graph)
        if child is self:
            raise errors.InvalidValue("add_child_graph", detail="a graph cannot contain itself")
        in_body = self._owner is not None and self._conditional_owner() is not None
        if in_body or child._foreign:
            from ._foreign import check_child_nodes, check_draws, draws_of

            check_child_nodes(child, "Graph.add_child_graph", in_body)
            check_draws(draws_of(child), "Graph.add_child_graph",
                        "in a conditional body" if in_body else "as a child graph node", allow_fixed_rng)
        self._keep.append(child._keep)
        return self._add("GraphAddChildGraphNode", dependencies, edges, child.handle, cls=ChildGraphNode)

    def add_event_record(self, event: Event, *, dependencies: Iterable[Node] | None = None,
                         edges: Sequence[EdgeData] | None = None) -> Node:
        """Add a node that records ``event`` when it runs.

        Parameters
        ----------
        event : Event
            The event to record.
        dependencies : iterable of Node, optional
            The nodes it runs after.
        edges : sequence of EdgeData, optional
            Edge data per dependency, where the runtime has it.

        Returns
        -------
        EventRecordNode
        """
        self._check_event(event)
        return self._add("GraphAddEventRecordNode", dependencies, edges, event.handle, cls=EventRecordNode)

    def add_event_wait(self, event: Event, *, dependencies: Iterable[Node] | None = None,
                       edges: Sequence[EdgeData] | None = None) -> Node:
        """Add a node that waits for ``event`` before the nodes after it run.

        Parameters
        ----------
        event : Event
            The event to wait on.
        dependencies : iterable of Node, optional
            The nodes it runs after.
        edges : sequence of EdgeData, optional
            Edge data per dependency, where the runtime has it.

        Returns
        -------
        EventWaitNode
        """
        self._check_event(event)
        return self._add("GraphAddEventWaitNode", dependencies, edges, event.handle, cls=EventWaitNode)

    def _check_event(self, event: Any) -> None:
        self._same_backend(event, "event node", Event)
        if self._owner is not None and self._conditional_owner() is not None:
            # cudaConditionalNodeParams (CUDA Runtime API): the node types a body may hold are
            # kernel, empty, child graph, memset, memcpy and conditional nodes
            raise errors.InvalidValue("event node", detail="a conditional node's body holds no event record or "
                                                           "event wait nodes")
        self._keep.append(event)

    def add_mem_alloc(self, size: int, *, device: "Device | int | None" = None,
                      dependencies: Iterable[Node] | None = None,
                      edges: Sequence[EdgeData] | None = None,
                      peers: "Iterable[Device | int] | None" = None) -> MemAllocNode:
        """Allocate ``size`` bytes of graph memory on ``device`` (default: the current device);
        the node's ``dptr`` is the address.  ``peers``: devices whose nodes may read and write
        the memory too (the allocation's access descriptors)."""
        b = self._backend
        switch = False
        if device is not None or peers is not None:
            # A device that does not exist is the runtime's to refuse here (InvalidValue: the
            # location it is given names none), as it was before device= switched devices.
            switch = device is not None and device_exists(b, device, "Graph.add_mem_alloc")
            peer_list = [checked_ordinal(b, d, "Graph.add_mem_alloc") for d in
                         _listed(peers, "peers", "devices")]
        p = b.ffi.new(f"{b.ops.mem_alloc_params_type} *")
        _params.alloc_fields(b, p, size, device)
        if peers is not None:
            own = int(p.poolProps.location.id)
            others = sorted({d for d in peer_list if d != own})  # (its own device has access)
            descs = b.ops.access_descs(others)  # (alive until the runtime copied it, below)
            if others:
                p.accessDescs = descs
                p.accessDescCount = len(others)
        if switch:
            return _placed(self, device, "add_mem_alloc", lambda: self._add(
                "GraphAddMemAllocNode", dependencies, edges, p, cls=MemAllocNode))  # type: ignore[return-value]
        node = self._add("GraphAddMemAllocNode", dependencies, edges, p, cls=MemAllocNode)
        assert isinstance(node, MemAllocNode)
        return node

    def add_mem_free(self, dptr: Any, *, dependencies: Iterable[Node] | None = None,
                     edges: Sequence[EdgeData] | None = None, device: "Device | int | None" = None) -> Node:
        """Free graph memory (``dptr``: an address or the MemAllocNode that made it)."""
        if device is not None:
            return _placed(self, device, "add_mem_free", lambda: self.add_mem_free(
                dptr, dependencies=dependencies, edges=edges))
        if isinstance(dptr, MemAllocNode):
            dptr = dptr.dptr
        return self._add("GraphAddMemFreeNode", dependencies, edges, _ptr(self._backend, dptr), cls=MemFreeNode)

    def add_nodes(self, specs: Iterable[Sequence[Any]], *, names: dict[Any, Node] | None = None
                  ) -> "NodeList":
        """Add many nodes in one call; returns them in the order of ``specs``, as a
        :class:`NodeList` (a read-only sequence whose node objects are made when first read).

        Each spec is ``(kind, params)`` or ``(kind, params, deps)``: ``kind`` names an
        ``add_<kind>`` method (``"empty"``, ``"memset"``, ``"memcpy"``, ``"kernel"``,
        ``"host"``, ...), ``params`` its keyword arguments (a dict; ``{}`` or None for
        none), ``deps`` the node's dependencies: an int is the index of an earlier spec
        of this call, a :class:`Node` a node of this graph, anything else a key of
        ``names``.  Edges carry default edge data.  The same checks as the single-node
        methods apply.  Each run of consecutive empty and plain memset specs (``dst``,
        ``value``, ``count`` only) is made by one loop (in C with the compiled fast path, in
        Python in ABI mode), the runtime writing their handles into the NodeList (no node
        objects until read); other specs go through the one-node methods.  If a spec fails,
        the nodes made before it stay in the graph and the exception says which spec failed.
        """
        return (_bulk or _load_bulk()).add_nodes(self, specs, names)  # type: ignore[no-any-return]

    def add_networkx(self, dag: Any, *, kind: str = "kind", params: str = "params") -> dict[Any, Node]:
        """Add a networkx DAG's nodes and edges in one call (:meth:`add_nodes`).

        Each DAG node's attribute ``kind`` (default ``"empty"``) and ``params`` (a dict)
        give its ``add_<kind>`` call; every DAG edge becomes a dependency.  Returns
        DAG node -> graph node.
        """
        return (_bulk or _load_bulk()).add_networkx(self, dag, kind, params)  # type: ignore[no-any-return]

    def add_node(self, node_type: NodeType, *, dependencies: Iterable[Node] | None = None,
                 edges: Sequence[EdgeData] | None = None, **params: Any) -> Node:
        """Add a node through the runtime's generic API (``cudaGraphAddNode`` / ``hipGraphAddNode``).

        ``params`` by type: EMPTY none; MEMSET ``dst, value, count[, element_size,
        height, pitch]``; HOST ``fn``; GRAPH ``child``; EVENT_RECORD / WAIT_EVENT
        ``event``; MEM_ALLOC ``size[, device]``; MEM_FREE ``dptr``.  Where the
        runtime's form takes edge data (CUDA >= 12.3) it is passed at creation.
        """
        node_type = member(NodeType, node_type, "Graph.add_node")
        deps = self._own_all(dependencies)
        edges = _check_edges(deps, edges)
        p = self._node_params(node_type, params)
        h = self._backend.ops.add_node_generic(self.handle, [d.handle for d in deps], edges, p)
        node = self._wrap(h, NODE_CLASSES.get(node_type, OtherNode))
        if self._backend.several:
            _record_node(self, node)
        return node

    def _node_params(self, node_type: NodeType, params: dict[str, Any]) -> Any:
        """The generic node-params union of ``params`` for a ``node_type`` node of this graph, its
        operands kept by the graph: :meth:`add_node`'s and ``Node.set_params``'."""
        return _params.fill(self, node_type, params, self._sink, self._keep.append, Graph)

    @keywords_follow
    def add_kernel(self, kernel: Any, grid: Any, block: Any, args: Sequence[Any] = (),
                   _kw_only: KeywordsFollow = KEYWORDS,
                   shared_mem: int = 0, attributes: dict[str, Any] | None = None,
                   dependencies: Iterable[Node] | None = None,
                   edges: Sequence[EdgeData] | None = None, device: "Device | int | None" = None) -> KernelNode:
        """Add a kernel node: ``kernel`` launched on ``grid`` x ``block`` with ``args``.

        Parameters
        ----------
        kernel : pygraphrt.kernels.Kernel
            From :meth:`Program.kernel`, :meth:`Library.kernel` or :meth:`Kernel.wrap`.
        grid, block : int or sequence of 1-3 ints
            Launch dimensions.
        args : sequence
            Packed by the kernel's signature (plain Python values allowed) or, for
            a kernel without one, explicitly typed values and device arrays.
            Checked before the node is made; the packed values, and the arrays
            pointers came from, live as long as the graph.
        shared_mem : int
            Dynamic shared memory per block, in bytes.
        attributes : dict, optional
            Kernel-node attributes by name (``priority``, ``cluster_dim``, ...),
            set once the node exists.
        device : Device or int, optional
            The device the kernel runs on (the node is made with it current; default: the
            current device).  A pygraphrt buffer among ``args`` whose memory is another
            device's, without peer access enabled through pygraphrt, is refused (the kernel
            would fault on the GPU).
        """
        # A kernel with a hot adder (its later nodes: graph/_kernel.build_adder) goes straight
        # to it, as _kernel.add would send it (a Python call less on the hot path).
        if device is not None and _unplaced(self, device):
            device = None
        # (several devices in use: where the checks below would pass with nothing to do, as
        # multidevice.runs_on finds, the hot adder too -- it records the node's device)
        if (kernel.__class__ is _Kernel and attributes is None and edges is None and _kw_only is KEYWORDS
                and device is None and (not (b := self._backend).several or _runs_on(kernel, launch_device(b), args))):
            hot = kernel._node_hot
            if hot:
                return hot(self, kernel, grid, block, args, shared_mem, dependencies)  # type: ignore[no-any-return]
        if _kw_only is not KEYWORDS:
            raise positional_error("Graph.add_kernel")
        if device is not None:
            check_kernel_buffers(self._backend, device, args, "Graph.add_kernel")
            return _placed(self, device, "add_kernel", _partial(  # (a partial: see add_memset)
                self.add_kernel, kernel, grid, block, args, shared_mem=shared_mem, attributes=attributes,
                dependencies=dependencies, edges=edges))
        if self._backend.several:  # several devices in use: checked for the current device
            kernel = check_launch(self._backend, kernel, launch_device(self._backend), args, "Graph.add_kernel")
        kernel_nodes = _kernel_nodes or _load_kernel_nodes()
        return kernel_nodes.add(self, kernel, grid, block, args, shared_mem, attributes, dependencies, edges)

    # -- conditional nodes (see _conditional) ---------------------------------
    def conditional_handle(self, default: int = 0, *, reset_each_launch: bool = True) -> "ConditionalHandle":
        """A conditional value of this graph, set on the device by ``cudaGraphSetConditional``.

        With ``reset_each_launch`` it takes ``default`` at the start of every launch.
        """
        from . import _conditional

        return _conditional.create_handle(self, default, reset_each_launch)

    def add_conditional(self, kind: str, handle: "ConditionalHandle", size: int | None = None, *,
                        dependencies: Iterable[Node] | None = None,
                        edges: Sequence[EdgeData] | None = None) -> "ConditionalNode":
        """A conditional node: ``kind`` is ``"if"``, ``"if_else"``, ``"while"`` or ``"switch"``
        (``size`` bodies; the others have 1, IF-ELSE 2).  ``node.bodies`` are its graphs."""
        from . import _conditional

        sizes = {"if": 1, "if_else": 2, "while": 1}
        if kind not in (*sizes, "switch"):
            raise errors.InvalidValue("Graph.add_conditional", detail=f"kind {kind!r}: one of 'if', "
                                                                      "'if_else', 'while', 'switch'")
        if kind != "switch":
            if size not in (None, sizes[kind]):
                raise errors.InvalidValue("Graph.add_conditional", detail=f"a {kind} node has "
                                                                          f"{sizes[kind]} bodies")
            size = sizes[kind]
        elif size is None:
            raise errors.InvalidValue("Graph.add_switch", detail="a switch node needs its number of bodies")
        return _conditional.add(self, kind, handle, size, dependencies, edges)

    def add_if(self, handle: "ConditionalHandle", *, dependencies: Iterable[Node] | None = None,
               edges: Sequence[EdgeData] | None = None) -> "ConditionalNode":
        """Run ``node.bodies[0]`` when the handle's value is non-zero."""
        return self.add_conditional("if", handle, dependencies=dependencies, edges=edges)

    def add_if_else(self, handle: "ConditionalHandle", *, dependencies: Iterable[Node] | None = None,
                    edges: Sequence[EdgeData] | None = None) -> "ConditionalNode":
        """Run ``bodies[0]`` when the value is non-zero, else ``bodies[1]`` (CUDA >= 12.8)."""
        return self.add_conditional("if_else", handle, dependencies=dependencies, edges=edges)

    def add_while(self, handle: "ConditionalHandle", *, dependencies: Iterable[Node] | None = None,
                  edges: Sequence[EdgeData] | None = None) -> "ConditionalNode":
        """Run ``bodies[0]`` while the value is non-zero (tested before each iteration)."""
        return self.add_conditional("while", handle, dependencies=dependencies, edges=edges)

    def add_switch(self, handle: "ConditionalHandle", n: int, *, dependencies: Iterable[Node] | None = None,
                   edges: Sequence[EdgeData] | None = None) -> "ConditionalNode":
        """Run ``bodies[value]`` (nothing when the value is ``>= n``) (CUDA >= 12.8)."""
        return self.add_conditional("switch", handle, n, dependencies=dependencies, edges=edges)

    def add_external_semaphore_signal(self, signals: Sequence[Any], *,
                                      dependencies: Iterable[Node] | None = None,
                                      edges: Sequence[EdgeData] | None = None) -> "ExternalSemaphoreSignalNode":
        """Signal external semaphores: ``signals`` are :class:`pygraphrt.SemaphoreSignal`
        (or ExternalSemaphores, signalled with value 0)."""
        from .. import extsem

        p, keep = extsem.node_params(self._backend, signals, False, "Graph.add_external_semaphore_signal")
        node = self._add("GraphAddExternalSemaphoresSignalNode", dependencies, edges, p,
                         cls=ExternalSemaphoreSignalNode)
        self._keep.append(keep)
        return node  # type: ignore[return-value]

    def add_external_semaphore_wait(self, waits: Sequence[Any], *,
                                    dependencies: Iterable[Node] | None = None,
                                    edges: Sequence[EdgeData] | None = None) -> "ExternalSemaphoreWaitNode":
        """Wait for external semaphores: ``waits`` are :class:`pygraphrt.SemaphoreWait`."""
        from .. import extsem

        p, keep = extsem.node_params(self._backend, waits, True, "Graph.add_external_semaphore_wait")
        node = self._add("GraphAddExternalSemaphoresWaitNode", dependencies, edges, p,
                         cls=ExternalSemaphoreWaitNode)
        self._keep.append(keep)
        return node  # type: ignore[return-value]

    # -- HIP's own node types (see _hip_nodes) ---------------------------------
    def add_batch_mem_op(self, ops: Sequence[Any], flags: int = 0, *,
                         dependencies: Iterable[Node] | None = None,
                         edges: Sequence[EdgeData] | None = None) -> Node:
        """HIP: wait-value / write-value / flush / barrier operations (:class:`pygraphrt.graph.MemOp`)."""
        from . import _hip_nodes

        return _hip_nodes.add_batch_mem_op(self, ops, flags, dependencies, edges)

    def add_memcpy_to_symbol(self, symbol: int, src: Any, count: int, offset: int = 0, *,
                             dependencies: Iterable[Node] | None = None,
                             edges: Sequence[EdgeData] | None = None) -> Node:
        """HIP: copy ``count`` bytes from ``src`` to the device variable at ``symbol`` + ``offset``."""
        from . import _hip_nodes

        return _hip_nodes.add_memcpy_symbol(self, True, symbol, src, count, offset, dependencies, edges)

    def add_memcpy_from_symbol(self, dst: Any, symbol: int, count: int, offset: int = 0, *,
                               dependencies: Iterable[Node] | None = None,
                               edges: Sequence[EdgeData] | None = None) -> Node:
        """HIP: copy ``count`` bytes from the device variable at ``symbol`` + ``offset`` to ``dst``."""
        from . import _hip_nodes

        return _hip_nodes.add_memcpy_symbol(self, False, symbol, dst, count, offset, dependencies, edges)

    def _keep_operand(self, obj: Any) -> None:
        if isinstance(obj, DeviceBuffer):
            self._same_backend(obj, "graph operand")
        if not isinstance(obj, int):
            _keep_alive(self._keep, obj)  # buffers given as objects live as long as the graph

    # -- edges ---------------------------------------------------------------
    def add_dependencies(self, froms: Sequence[Node], tos: Sequence[Node],
                         edges: Sequence[EdgeData] | None = None) -> None:
        """Add edges froms[i] -> tos[i] (with ``edges[i]`` data where supported)."""
        self._edges_op(froms, tos, edges, remove=False)

    def remove_dependencies(self, froms: Sequence[Node], tos: Sequence[Node],
                            edges: Sequence[EdgeData] | None = None) -> None:
        """Remove the edges ``froms[i] -> tos[i]``.

        Parameters
        ----------
        froms, tos : sequence of Node
            The edges' ends, of the same length.
        edges : sequence of EdgeData, optional
            The edge data of each edge to remove (an edge is removed only with its own data).

        Raises
        ------
        InvalidValue
            A listed edge does not exist, or the lengths differ.
        """
        self._edges_op(froms, tos, edges, remove=True)

    def _edges_op(self, froms: Sequence[Node], tos: Sequence[Node],
                  edges: Sequence[EdgeData] | None, remove: bool) -> None:
        froms, tos = self._own_all(froms), self._own_all(tos)
        if len(froms) != len(tos):
            raise errors.InvalidValue("dependencies", detail="froms and tos differ in length")
        edges = _check_edges(froms, edges)
        if not froms:
            return
        self._backend.ops.add_dependencies(self.handle, [n.handle for n in froms],
                                           [n.handle for n in tos], edges, remove=remove)

    def edges(self) -> list[tuple[Node, Node, EdgeData]]:
        """Every edge with its edge data (asked for wherever the runtime has it)."""
        return [(self._wrap(a), self._wrap(b), e)
                for a, b, e in self._backend.ops.get_edges(self.handle)]

    # -- introspection -------------------------------------------------------
    def _list(self, api: str) -> list[Node]:
        ops, ffi = self._backend.ops, self._backend.ffi
        n = ffi.new("size_t *")
        ops.call(api, self.handle, ffi.NULL, n)
        if n[0] == 0:
            return []
        arr = ffi.new(f"{ops.prefix}GraphNode_t[]", n[0])
        ops.call(api, self.handle, arr, n)
        return [self._wrap(arr[i]) for i in range(n[0])]

    def nodes(self) -> list[Node]:
        """Every node of the graph, in the order the runtime lists them.

        Returns
        -------
        list of Node
            One object per node: the same object each time it is read.
        """
        return self._list("GraphGetNodes")

    def root_nodes(self) -> list[Node]:
        """The nodes that depend on nothing (the graph's first nodes).

        Returns
        -------
        list of Node
        """
        return self._list("GraphGetRootNodes")

    def leaf_nodes(self) -> list[Node]:
        """The nodes nothing depends on (the graph's last nodes).

        Returns
        -------
        list of Node
        """
        return [n for n in self.nodes() if not n.dependents]

    def __len__(self) -> int:
        ffi = self._backend.ffi
        n = ffi.new("size_t *")
        self._backend.ops.call("GraphGetNodes", self.handle, ffi.NULL, n)
        return int(n[0])

    @property
    def id(self) -> int:
        """The graph's id (``GraphGetId``, CUDA >= 13.1; as in ``debug_dot``)."""
        from ._readback import graph_id

        return graph_id(self)

    def clone(self) -> "Graph":
        """A copy; ``find_clone`` maps nodes of this graph to the copy's."""
        out = self._backend.ffi.new(f"{self._backend.ops.prefix}Graph_t *")
        self._backend.ops.call("GraphClone", out, self.handle)
        g = Graph._adopt(out[0])
        g._keep.append(self._keep)
        if self._draws is not None:  # (a copy draws as the original does)
            g._draws = self._draws
            g._foreign = True
        return g

    def find_clone(self, node: Node, clone: "Graph") -> Node:
        """The node of ``clone`` that was copied from ``node`` of this graph."""
        self._same_backend(clone, "Graph.find_clone", Graph)
        self._own(node)
        out = self._backend.ffi.new(f"{self._backend.ops.prefix}GraphNode_t *")
        self._backend.ops.call("GraphNodeFindInClone", out, node.handle, clone.handle)
        return clone._wrap(out[0])

    def debug_dot(self, path: str | None = None, flags: DebugDotFlags = DebugDotFlags.VERBOSE) -> str:
        """The runtime's DOT description; written to ``path`` if given, and returned."""
        import os
        import tempfile

        if path is not None and not isinstance(path, (str, bytes, os.PathLike)):
            raise errors.InvalidValue("Graph.debug_dot", detail=f"path must be a str or os.PathLike, got {path!r}")
        flags = flag_set(DebugDotFlags, flags, "Graph.debug_dot")
        ops = self._backend.ops
        vendor_flags = 0
        for flag in DebugDotFlags:
            if flag and flag in flags:
                vendor_flags |= ops.value(ops.debug_dot_flags, flag, f"{ops.prefix}GraphDebugDotPrint")
        target = path
        tmp = None
        if target is None:
            fd, tmp = tempfile.mkstemp(suffix=".dot")
            os.close(fd)
            target = tmp
        try:
            ops.call("GraphDebugDotPrint", self.handle, os.fsencode(target), vendor_flags)
            with open(target, encoding="utf-8", errors="replace") as f:
                return f.read()
        finally:
            if tmp is not None:
                os.unlink(tmp)

    # -- export / comparison (see _export) ---------------------------------
    def to_networkx(self) -> Any:
        """The graph as a ``networkx.DiGraph``: one vertex per node (its index in :meth:`nodes`, with
        ``type`` and ``params``), one edge per dependency (with its ``edge_data``).

        Returns
        -------
        networkx.DiGraph

        Raises
        ------
        ImportError
            networkx is not installed (``pip install "pygraphrt[networkx]"``).
        """
        from ._export import to_networkx

        return to_networkx(self)

    def to_json(self) -> str:
        """The graph's structure as JSON text: its nodes (type, parameters) and edges (with edge data).

        Returns
        -------
        str
            The JSON document; :meth:`same_structure` compares two graphs without it.
        """
        from ._export import to_json

        return to_json(self)

    def same_structure(self, other: "Graph") -> bool:
        """Same shape, node types and edge data (node identities aside)."""
        from ._export import same_structure

        self._same_backend(other, "Graph.same_structure", Graph)
        return same_structure(self, other)

    def _cycle(self) -> str:
        """A cycle of the graph's edges as ``"KERNEL node 2 -> EMPTY node 3 -> KERNEL node 2"``
        (nodes numbered in ``nodes()`` order), or ``""`` where there is none or it cannot be read."""
        try:
            nodes = self.nodes()
            index = {n.handle: i for i, n in enumerate(nodes)}
            after: dict[int, list[int]] = {i: [] for i in range(len(nodes))}
            for a, b, _ in self._backend.ops.get_edges(self.handle):
                after[index[a]].append(index[b])
        except (errors.GraphRTError, KeyError):
            return ""
        state = [0] * len(nodes)  # 0 unseen, 1 on the current path, 2 done
        for root in range(len(nodes)):
            if state[root]:
                continue
            path, todo = [root], [iter(after[root])]
            state[root] = 1
            while todo:
                nxt = next(todo[-1], None)
                if nxt is None:
                    state[path.pop()] = 2
                    todo.pop()
                elif state[nxt] == 1:
                    loop = path[path.index(nxt):] + [nxt]
                    return " -> ".join(f"{nodes[i].type.name} node {i}" for i in loop)
                elif state[nxt] == 0:
                    state[nxt] = 1
                    path.append(nxt)
                    todo.append(iter(after[nxt]))
        return ""

    # -- instantiate ---------------------------------------------------------
    def instantiate(self, flags: InstantiateFlags = InstantiateFlags.NONE, *,
                    upload_stream: Stream | None = None, auto_free_on_launch: bool = False,
                    use_node_priority: bool = False, device_launch: bool = False,
                    allow_fixed_rng: bool = False) -> "GraphExec":
        """Make an executable graph.  ``upload_stream`` uploads it right away.

        A wrapped torch graph that draws (or may draw) random numbers is refused
        (``pygraphrt.errors.FixedRandomness``: its launches would repeat the same draws) unless
        ``allow_fixed_rng=True``, which warns instead.
        """
        make_exec = _GraphExec or _load_graph_exec()
        if self._draws is not None:
            from ._foreign import check_draws

            check_draws(self._draws, "Graph.instantiate", "through its pygraphrt executable graph",
                        allow_fixed_rng)

        f = flag_set(InstantiateFlags, flags, "Graph.instantiate")
        if auto_free_on_launch:
            f |= InstantiateFlags.AUTO_FREE_ON_LAUNCH
        if use_node_priority:
            f |= InstantiateFlags.USE_NODE_PRIORITY
        if device_launch:
            f |= InstantiateFlags.DEVICE_LAUNCH
        ops = self._backend.ops
        vendor_flags = 0
        for bit in InstantiateFlags:
            if bit and bit in f and bit is not InstantiateFlags.UPLOAD:
                vendor_flags |= ops.value(ops.instantiate_flags, bit, f"{ops.prefix}GraphInstantiate")
        if InstantiateFlags.DEVICE_LAUNCH in f and self._node_devices is not None:
            check_one_device(self, "Graph.instantiate")
        try:
            handle = ops.instantiate(self.handle, vendor_flags)
        except errors.InvalidValue as err:
            cycle = self._cycle() if type(err) is errors.InvalidValue else None
            if not cycle:
                raise
            # The runtime says only "invalid argument" (the simulator, "the graph has a cycle"):
            # name the nodes, read back from the graph's edges.
            raise errors.InvalidValue(err.api, err.code, err.name, err.vendor, err.message, err.sticky,
                                      detail=f"the graph has a cycle: {cycle} (remove_dependencies "
                                             "breaks it)") from None
        exec_ = make_exec(self, handle)
        if upload_stream is not None or InstantiateFlags.UPLOAD in f:
            if upload_stream is None:
                raise errors.InvalidValue("Graph.instantiate", detail="UPLOAD needs upload_stream")
            exec_.upload(upload_stream)
        return exec_
