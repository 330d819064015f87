"""Executable graphs: launch, upload, update, per-node parameters."""

from __future__ import annotations

from typing import Any

from .. import errors
from .._handles import HostPayload, Owned, host_payloads
from .._handles import hold as _hold
from .._handles import unhold as _unhold
from .._operands import count as _count
from .._operands import ptr as _ptr
from ..device import Event, Stream
from ..enums import InstantiateFlags, UpdateResult
from . import _params
from ._node import (ChildGraphNode, EventRecordNode, EventWaitNode, ExternalSemaphoreSignalNode,
                    ExternalSemaphoreWaitNode, HostNode, KernelNode, MemcpyNode, MemsetNode, Node,
                    _apply_dims)
from ..multidevice import check_update_devices, kernel_devices
# (graph/_graph imports this module on first use -- Graph.instantiate -- so this one may import it)
from ._graph import Graph


_kernel: Any = None  # graph._kernel, once a kernel node is set (GraphExec._set_kernel)


class GraphExec(Owned):
    """An instantiated graph.  It keeps alive everything its nodes refer to."""

    _destroy_api = "GraphExecDestroy"
    _kind = "executable graph"
    _keeps_for_runtime = True
    # The attributes the compiled launch (graph/_hot.py) reads and writes at fixed offsets.  (A
    # slot has no class default: ``_handle`` exists once Owned.__init__ has run.)
    __slots__ = ("_backend", "_handle", "_host_sinks", "_last_stream")

    def __init__(self, graph: "Graph", handle: Any) -> None:
        super().__init__(graph._backend, handle, True, keep=graph._keep)
        # ABI mode: the driver's cuGraphLaunch where the runtime hands it out (a refused call is
        # made again through the runtime: _launch_slow); compiled mode's C launch does the same.
        self._launch_fn = graph._backend.ops.hot_fn("GraphLaunch")
        self._last_stream: Stream | None = None
        # Nodes of the graph it was instantiated from address this exec's nodes,
        # also after update() (the runtime's rule for the per-node setters).
        self._graph = graph
        # The recorded device of each kernel node (only for graphs with nodes made with device=):
        # what update() holds the new graph's to (pygraphrt.multidevice.check_update_devices).
        self._kernel_devices: list[int | None] | None = None
        if graph._node_devices is not None:
            self._kernel_devices = kernel_devices(graph)
        self._sinks = [graph._sink]
        # What each node's current parameters set on this executable use (node handle -> its
        # index in _params_kept, a list inside _keep): a node set again replaces its entry, so a
        # graph updated every frame keeps one entry per node, not one per update.
        self._params_slot: dict[Any, int] = {}
        self._params_kept: list[Any] = []
        # Only graphs with Python host callables need their errors routed to the
        # stream's next synchronize: the others skip that on every launch.
        self._host_payloads: tuple[HostPayload, ...] = ()
        self._host_sinks: tuple[Any, ...] = ()
        self._init_setters()
        self._add_host(host_payloads(graph._keep))

    def _init_setters(self) -> None:
        """The setters' state, none yet: attributes set here, never entries put in the instance's
        ``__dict__`` (reading that makes every later attribute read -- ``_launch_fn`` on each
        launch among them -- unspecialized: see ``_runtime.Backend.memo``)."""
        # node handle -> what the per-node setters set in this executable graph (the source
        # graph's node knows nothing of it); None until the first such call
        self._set_values: dict[Any, dict[str, Any]] | None = None
        self._kernels_kept: dict[int, Any] | None = None  # id -> kernel set on a node (_retain_kernel)
        self._last_kernel_kept: Any = None  # the kernel _set_kernel retained last
        self._copy_kind: Any = None  # the vendor's MemcpyDefault (_set_memcpy), looked up once

    def _add_host(self, payloads: tuple[HostPayload, ...]) -> None:
        """Host callables its nodes run: each launch holds them until they have run (see
        ``_handles.HostPayload``), and their errors go to the launching stream and to
        :meth:`synchronize` -- through each one's own sink: a child graph's callables report to
        the child's."""
        if not payloads:
            return
        known = set(self._host_payloads)
        new = tuple(p for p in payloads if p not in known)
        self._host_payloads += new
        for p in new:
            if p.sink not in self._host_sinks:
                self._host_sinks = self._host_sinks + (p.sink,)
            if p.sink not in self._sinks:
                self._sinks.append(p.sink)
        # Its launches take _launch_slow, which holds the payloads: calling None raises the
        # TypeError the hot path hands there (so graphs without host nodes pay nothing).
        self._launch_fn = None

    def _retain(self, keep: Any, sink: Any, has_host: bool) -> None:
        """Keep more operands alive (a graph updated in, a new host callable); ``has_host``:
        whether they may hold host callables (False for an event, a buffer)."""
        self._keep = [self._keep, keep]
        if sink not in self._sinks:
            self._sinks.append(sink)
        if has_host:
            self._add_host(host_payloads(keep))

    def _retain_params(self, node_handle: Any, keep: list[Any]) -> None:
        """Keep what a node's new parameters use (its packed kernel arguments) in place of what
        its previous ones used.  The runtime copies a kernel node's argument values when the
        setter returns, so only the current ones are needed -- kept, like the node's own, for
        the runtime's sake.  (The kernels themselves are kept for good, :meth:`_retain_kernel`:
        a launch still running may use the previous one's code.)"""
        slot = self._params_slot.get(node_handle)
        kept = self._params_kept
        if slot is not None:
            kept[slot] = keep
            return
        if not kept:  # the first: the list joins the keep list that live-graph checks walk
            self._keep = [self._keep, kept]
        self._params_slot[node_handle] = len(kept)
        kept.append(keep)

    def _retain_kernel(self, kernel: Any) -> None:
        """Keep a kernel set on a node (and its library) as long as this executable graph: once
        per kernel, however often nodes are set to it."""
        kernels = self._kernels_kept
        if kernels is None:
            kernels = self._kernels_kept = {}
        if id(kernel) not in kernels:
            kernels[id(kernel)] = kernel
            self._retain([kernel, kernel._owner], self._sinks[0], False)

    @classmethod
    def wrap(cls, obj: Any, owner: Any = None, *, graph: "Graph | None" = None,
             allow_fixed_rng: bool = False) -> "GraphExec":
        """Borrow an executable graph another library made; pygraphrt never destroys it.

        Parameters
        ----------
        obj : torch.cuda.CUDAGraph, cuda.core Graph, CUgraphExec / cudaGraphExec_t, or int
            A torch graph must be made with ``keep_graph=True`` and captured; one not yet
            instantiated is instantiated through torch (``CUDAGraph.instantiate``, what its first
            ``replay()`` does).  An int is taken as a ``cudaGraphExec_t`` and trusted.
        owner : object, optional
            What keeps it alive (default: ``obj``, unless it is an int); kept as long as the
            returned object.
        graph : Graph, optional
            The graph it was instantiated from, for :attr:`graph` and the per-node setters
            (a torch graph's is found: ``Graph.wrap(obj)``).
        allow_fixed_rng : bool
            A torch graph that draws (or may draw) random numbers repeats its draws when launched
            other than through torch's ``replay()``: refused
            (``pygraphrt.errors.FixedRandomness``) unless True, which warns instead.

        Raises
        ------
        InvalidValue
            ``obj`` holds no executable graph pygraphrt can find, naming what was given.
        FixedRandomness
            See ``allow_fixed_rng``.
        """
        from .. import _runtime
        from ._foreign import exec_handle

        if isinstance(obj, GraphExec):
            raise errors.InvalidValue("GraphExec.wrap", detail=f"{obj!r} is a pygraphrt GraphExec already: use it "
                                                               "as it is")
        value, graph_value = exec_handle(obj, "GraphExec.wrap", allow_fixed_rng)
        if owner is None and not isinstance(obj, int):
            owner = obj
        b = _runtime.active()
        if graph is None and graph_value is not None:
            graph = Graph.wrap(obj, owner)
        if graph is not None:
            if not isinstance(graph, Graph) or graph._backend is not b:
                raise errors.InvalidValue("GraphExec.wrap", detail=f"graph must be a Graph of the active backend, "
                                                                   f"got {graph!r}")
        self = cls.__new__(cls)
        Owned.__init__(self, b, b.ffi.cast(f"{b.ops.prefix}GraphExec_t", value), False,
                       keep=[graph._keep if graph is not None else None, owner])
        self._launch_fn = b.ops.hot_fn("GraphLaunch")
        self._last_stream = None
        self._graph = graph  # type: ignore[assignment]
        self._kernel_devices = None
        self._sinks = [graph._sink] if graph is not None else []
        self._params_slot = {}
        self._params_kept = []
        self._host_payloads = ()
        self._host_sinks = ()
        self._init_setters()
        return self

    @property
    def graph(self) -> "Graph":
        """The graph this executable graph was instantiated from."""
        g = self._graph
        if g is None:
            raise errors.InvalidValue("GraphExec.graph", detail="this executable graph was wrapped from a handle "
                                                                "without its graph (GraphExec.wrap(..., graph=))")
        return g

    @property
    def id(self) -> int:
        """The executable graph's id (``GraphExecGetId``, CUDA >= 13.1)."""
        from ._readback import exec_id

        return exec_id(self)

    def launch(self, stream: Stream) -> None:
        """Launch the executable graph on ``stream`` (asynchronously: it runs after the work
        issued to the stream before it).

        Parameters
        ----------
        stream : Stream
            An open stream of the same backend.  The executable graph may be launched again
            before a launch completed: launches on one stream run one after another.

        Raises
        ------
        InvalidValue
            ``stream`` is not a Stream of this backend.
        InvalidResourceHandle
            The executable graph or the stream was closed.
        GraphRTError
            The runtime refused the launch (its error class and code).

        Notes
        -----
        A host node's exception is raised by the next :meth:`synchronize` (or the stream's).

        Examples
        --------
        >>> exe = graph.instantiate()          # doctest: +SKIP
        >>> exe.launch(stream); stream.synchronize()   # doctest: +SKIP
        """
        # The hot path: one C call and one check.  A closed executable graph or stream (handle
        # None), or a stream of another backend makes cffi refuse the arguments; the slow path
        # then says precisely why.  Anything but a Stream goes there first: a buffer's handle
        # is a ``void *``, which cffi passes as any pointer, and a GPU's runtime crashed on a
        # device address taken as a stream.  So does a graph whose nodes run Python callables
        # (its ``_launch_fn`` is None): the slow path holds them until they have run.
        fn = self._launch_fn  # (an attribute load, not a method lookup: CPython specializes it)
        if stream.__class__ is not Stream:
            self._launch_slow(stream)
            return
        try:
            rc = fn(self._handle, stream._handle)
        except (TypeError, AttributeError):
            rc = -1  # (the slow path raises outside this handler: no TypeError as its context)
        if rc:
            self._launch_slow(stream, rc if rc > 0 else 0)
            return
        # (no host sinks to hand the stream here: a graph with host callables has no _launch_fn,
        # so its launches all take _launch_slow, which does)
        self._last_stream = stream

    def _launch_slow(self, stream: Any, refused: int = 0) -> None:
        """The launch's checks, then the runtime's call.  ``refused``: what the hot path's call
        returned -- the runtime's own refusal is raised as it is; the driver's (Vendor.direct_fn)
        is made again through the runtime, which sets up what the driver lacked (a thread's
        first context) and launches, or says why not."""
        h = self._handle_for("GraphExec.launch")  # raises when closed, naming the call
        self._same_backend(stream, "GraphExec.launch", Stream)
        sh = stream._handle_for("GraphExec.launch", "the")
        ops = self._backend.ops
        payloads = self._host_payloads
        if payloads:
            _hold(payloads)  # (before the call: a host node may run before it returns)
        try:
            if refused:
                rc = ops.refused("GraphLaunch", self._launch_fn, refused, h, sh)
                if rc:
                    raise ops.error(rc, ops.prefix + "GraphLaunch")
            else:
                ops.call("GraphLaunch", h, sh)
        except BaseException:
            if payloads:
                _unhold(payloads)
            raise
        if self._host_sinks:
            stream._sinks.update(self._host_sinks)
        self._last_stream = stream

    def upload(self, stream: Stream) -> None:
        """Upload the graph's work to the device ahead of the first launch."""
        self._same_backend(stream, "GraphExec.upload", Stream)
        self._backend.ops.call("GraphUpload", self._handle_for("GraphExec.upload"),
                               stream._handle_for("GraphExec.upload", "the"))

    def synchronize(self) -> None:
        """Wait for the last launch; raise what a host node raised."""
        if self._last_stream is not None:
            self._last_stream.synchronize()
        for sink in self._sinks:
            sink.raise_pending("GraphExec.synchronize")

    @property
    def flags(self) -> InstantiateFlags:
        """The instantiation flags the runtime reports (``GraphExecGetFlags``).

        CUDA reports AUTO_FREE_ON_LAUNCH, UPLOAD and DEVICE_LAUNCH; it was seen
        not to report USE_NODE_PRIORITY (12.9 and 13.0 runtimes, driver 580).
        """
        ops = self._backend.ops
        out = self._backend.ffi.new("unsigned long long *")
        ops.call("GraphExecGetFlags", self.handle, out)
        result = InstantiateFlags.NONE
        for neutral, member in ops.instantiate_flags.items():
            if ops.has(member) and out[0] & int(getattr(self._backend.lib, member)):
                result |= neutral
        return result

    def update(self, graph: "Graph") -> UpdateResult:
        """Update in place from ``graph`` (same topology).  Raises GraphExecUpdateError
        carrying ``result`` (e.g. TOPOLOGY_CHANGED) and ``error_node`` when refused."""
        self._same_backend(graph, "GraphExec.update", Graph)
        if graph._draws is not None:
            from ._foreign import check_draws

            check_draws(graph._draws, "GraphExec.update", "through a pygraphrt executable graph",
                        False)
        ops = self._backend.ops
        devices = self._kernel_devices
        if devices is not None or graph._node_devices is not None:  # (several devices: before the runtime)
            devices = check_update_devices(devices, graph, self._backend)
        rc, result, node = ops.exec_update(self.handle, graph.handle)
        if rc == 0 and result is UpdateResult.SUCCESS:
            self._retain(graph._keep, graph._sink, True)
            self._kernel_devices = devices
            # the nodes now hold ``graph``'s parameters: what the setters set before is gone
            self._set_values = None
            return result
        err_node = None
        if node is not None and node != self._backend.ffi.NULL:
            try:
                err_node = graph._wrap(node)
            except errors.GraphRTError:
                err_node = None
        base = ops.error(rc, f"{ops.prefix}GraphExecUpdate") if rc else None
        raise errors.GraphExecUpdateError(f"{ops.prefix}GraphExecUpdate", rc,
                                          base.name if base else None, ops.name,
                                          base.message if base else "", result, err_node)

    # -- per-node changes ------------------------------------------------------
    def _node(self, node: Node, cls: type[Node] | None = None) -> Any:
        if not isinstance(node, Node) or node._graph is not self._graph:
            raise errors.InvalidValue("GraphExec node", detail="the node must belong to the graph "
                                                               "this executable was made from")
        if cls is not None and not isinstance(node, cls):
            raise errors.InvalidValue("GraphExec node", detail=f"expected a {cls.__name__}")
        return node.handle

    def set_enabled(self, node: Node, enabled: bool) -> None:
        """Enable or disable a node for later launches (kernel, memcpy, memset nodes)."""
        self._backend.ops.call("GraphNodeSetEnabled", self.handle, self._node(node), int(bool(enabled)))

    def is_enabled(self, node: Node) -> bool:
        """Whether ``node`` (a node of the source graph) is enabled in this executable graph."""
        out = self._backend.ffi.new("unsigned int *")
        self._backend.ops.call("GraphNodeGetEnabled", self.handle, self._node(node), out)
        return bool(out[0])

    def set_node_params(self, node: Node, **params: Any) -> None:
        """Replace a node's parameters in this executable graph only (generic form).

        Same keywords as :meth:`Graph.add_node` for the node's type.
        """
        h = self._node(node)
        kept: list[Any] = []
        p = _params.fill(self._graph, node.type, params, self._sinks[0], kept.append, Graph)
        self._backend.ops.call("GraphExecNodeSetParams", self.handle, h, p)
        self._retain(kept, self._sinks[0], True)

    def set_memset(self, node: MemsetNode, *, dst: Any = None, value: int | None = None,
                   count: int | None = None) -> None:
        """Change a memset node's parameters in this executable graph only; what is not given
        stays as this executable graph has it (as set by earlier calls, else the source graph's
        node -- after :meth:`update`, the node of the graph it was updated from is not known to
        pygraphrt, and the source graph's node fills in again)."""
        h = self._node(node, MemsetNode)
        b = self._backend
        values = self._set_values
        if values is None:
            values = self._set_values = {}
        cur = values.get(h) or node.params
        now = {"dst": cur["dst"] if dst is None else dst, "value": cur["value"] if value is None else value,
               "width": cur["width"] if count is None else count, "element_size": cur["element_size"],
               "height": cur["height"], "pitch": cur["pitch"]}
        p = b.ffi.new(f"{b.ops.memset_params_type} *")
        _params.memset_fields(b, p, now["dst"], now["value"], now["width"], now["element_size"],
                              now["height"], now["pitch"], what="set_memset")
        b.ops.call("GraphExecMemsetNodeSetParams", self.handle, h, p)
        values[h] = now
        if dst is not None:  # a buffer given as an object lives while it is this node's
            self._retain_params(h, [dst])

    def set_memcpy(self, node: MemcpyNode, dst: Any, src: Any, count: int) -> None:
        """Change a 1-D copy node's ``dst``, ``src`` and ``count`` in this executable graph
        (operands as for :meth:`Stream.memcpy`)."""
        self._set_memcpy(self._node(node, MemcpyNode), dst, src, count)

    def _set_memcpy(self, node_handle: Any, dst: Any, src: Any, count: int) -> None:
        """:meth:`set_memcpy` of a node known to be a copy node of this executable's graph (its
        handle): what the compute graph's updates call."""
        b = self._backend
        ops = b.ops
        kind = self._copy_kind
        if kind is None:
            kind = self._copy_kind = ops.const("MemcpyDefault")
        ops.call("GraphExecMemcpyNodeSetParams1D", self.handle, node_handle, _ptr(b, dst), _ptr(b, src),
                 _count(count), kind)
        # operands given as objects live while they are this node's (in place of the previous
        # ones: an update each frame must not grow the keep list)
        self._retain_params(node_handle, [dst, src])

    def set_host(self, node: HostNode, fn: Any) -> None:
        """Give host node ``node`` a new callable ``fn`` in this executable graph (the source graph
        is unchanged)."""
        h = self._node(node, HostNode)
        b = self._backend
        p = b.ffi.new(f"{b.ops.host_params_type} *")
        payload = _params.host_fields(b, p, fn, self._sinks[0])
        b.ops.call("GraphExecHostNodeSetParams", self.handle, h, p)
        self._retain(payload, self._sinks[0], True)

    def set_child_graph(self, node: ChildGraphNode, child: "Graph") -> None:
        """Replace a child-graph node's graph in this executable graph only.

        The runtime requires ``child`` to have the same topology as the node's
        current graph (node count, types and edges); only parameters may differ.
        """
        h = self._node(node, ChildGraphNode)
        self._graph._same_backend(child, "set_child_graph", Graph)
        self._backend.ops.call("GraphExecChildGraphNodeSetParams", self.handle, h, child.handle)
        self._retain(child._keep, child._sink, True)

    def set_event(self, node: "EventRecordNode | EventWaitNode", event: Event) -> None:
        """Change the event an event-record or event-wait node uses, in this executable graph only."""
        if isinstance(node, EventRecordNode):
            api = "GraphExecEventRecordNodeSetEvent"
        elif isinstance(node, EventWaitNode):
            api = "GraphExecEventWaitNodeSetEvent"
        else:
            raise errors.InvalidValue("set_event", detail="expected an EventRecordNode or EventWaitNode")
        h = self._node(node)
        self._graph._same_backend(event, "set_event", Event)
        self._backend.ops.call(api, self.handle, h, event.handle)
        self._retain([event], self._sinks[0], False)

    def set_external_semaphore_signal(self, node: "ExternalSemaphoreSignalNode", signals: Any) -> None:
        """Change a signal node's semaphores and values in this executable graph only."""
        self._ext_sem(node, ExternalSemaphoreSignalNode, signals, False)

    def set_external_semaphore_wait(self, node: "ExternalSemaphoreWaitNode", waits: Any) -> None:
        """Change a wait node's semaphores and values in this executable graph only."""
        self._ext_sem(node, ExternalSemaphoreWaitNode, waits, True)

    def _ext_sem(self, node: Any, cls: type[Node], items: Any, wait: bool) -> None:
        from .. import extsem

        h = self._node(node, cls)
        p, keep = extsem.node_params(self._backend, items, wait, f"GraphExec.set_{node.type.value}")
        self._backend.ops.call(f"GraphExecExternalSemaphores{'Wait' if wait else 'Signal'}NodeSetParams",
                               self.handle, h, p)
        self._retain(keep, self._sinks[0], False)

    def set_batch_mem_op(self, node: Node, ops: Any, flags: int = 0) -> None:
        """HIP: change a batch-mem-op node's operations in this executable graph only."""
        from . import _hip_nodes

        h = self._node(node, _hip_nodes.BatchMemOpNode)
        p, keep = _hip_nodes._batch_params(self._graph, ops, flags, "GraphExec.set_batch_mem_op")
        self._backend.ops.call("GraphExecBatchMemOpNodeSetParams", self.handle, h, p)
        self._retain(keep, self._sinks[0], False)

    def set_memcpy_to_symbol(self, node: Node, symbol: int, src: Any, count: int, offset: int = 0) -> None:
        """HIP: change a memcpy-to-symbol node in this executable graph only."""
        self._memcpy_symbol(node, True, symbol, src, count, offset)

    def set_memcpy_from_symbol(self, node: Node, dst: Any, symbol: int, count: int, offset: int = 0) -> None:
        """HIP: change a memcpy-from-symbol node in this executable graph only."""
        self._memcpy_symbol(node, False, symbol, dst, count, offset)

    def _memcpy_symbol(self, node: Node, to: bool, symbol: int, buffer: Any, count: int, offset: int) -> None:
        from . import _hip_nodes

        h = self._node(node, _hip_nodes.MemcpyToSymbolNode if to else _hip_nodes.MemcpyFromSymbolNode)
        args = _hip_nodes._symbol_args(self._graph, symbol, buffer, count, offset, to)
        self._backend.ops.call("GraphExecMemcpyNodeSetParams" + ("ToSymbol" if to else "FromSymbol"),
                               self.handle, h, *args)
        self._retain([buffer], self._sinks[0], False)

    def set_kernel_launch_dims(self, node: KernelNode, grid: Any = None, block: Any = None,
                               shared_mem_bytes: int | None = None) -> None:
        """Change a kernel node's grid, block or dynamic shared memory in this executable graph;
        what is not given stays."""
        h = self._node(node, KernelNode)
        ops = self._backend.ops
        k = ops.kernel_params(h)
        values = self._set_values
        if values is None:
            values = self._set_values = {}
        before = values.get(h)
        if before is not None:  # what earlier calls set in this executable graph, not the source's
            from ..kernels._library import as_dims

            k.grid = as_dims(before["grid"], "grid") if "grid" in before else k.grid
            k.block = as_dims(before["block"], "block") if "block" in before else k.block
            k.shared_mem_bytes = before.get("shared_mem", k.shared_mem_bytes)
        _apply_dims(k, grid, block, shared_mem_bytes)
        ops.set_kernel_dims(h, k, exec_=self.handle)
        values[h] = {**(before or {}), "grid": k.grid, "block": k.block, "shared_mem": k.shared_mem_bytes}


    def set_kernel_params(self, node: KernelNode, *, kernel: Any = None, args: Any = None,
                          grid: Any = None, block: Any = None, shared_mem: int | None = None) -> None:
        """Change a kernel node in this executable graph only, without re-instantiating.

        What is not given stays as it is.  ``args`` are packed by the kernel's
        signature; they (and the arrays their pointers came from) live as long
        as this executable graph.  A new ``kernel`` must be in the same context.
        """
        self._set_kernel(node, self._node(node, KernelNode), kernel, args, grid, block, shared_mem)

    def _set_kernel(self, node: KernelNode, node_handle: Any, kernel: Any, args: Any, grid: Any, block: Any,
                    shared_mem: int | None) -> None:
        """:meth:`set_kernel_params` of a kernel node known to be of this executable's graph (its
        handle): what the compute graph's updates call."""
        global _kernel
        if _kernel is None:  # (imported on first use: it imports the kernels layer)
            from . import _kernel as module

            _kernel = module
        values = self._set_values
        if values is None:
            values = self._set_values = {}
        before = values.get(node_handle)
        if before is not None and (kernel is None or args is None or grid is None or block is None
                                   or shared_mem is None):
            # what is not given stays as earlier calls set it in this executable graph (the source
            # graph's node knows nothing of them)
            kernel = before.get("kernel") if kernel is None else kernel
            args = before.get("args") if args is None else args
            grid = before.get("grid") if grid is None else grid
            block = before.get("block") if block is None else block
            shared_mem = before.get("shared_mem") if shared_mem is None else shared_mem
        # (recorded once the call below has succeeded)
        given = {k: v for k, v in (("kernel", kernel), ("args", args), ("grid", grid), ("block", block),
                                   ("shared_mem", shared_mem)) if v is not None}
        if (kernel is not None and args is not None and grid is not None and block is not None
                and shared_mem is not None
                and _kernel.set_in_exec_reusing_scratch(self, node_handle, kernel, grid, block, shared_mem, args)):
            # the runtime copied the values: nothing of the node's earlier packed arguments is needed
            if kernel is not self._last_kernel_kept:
                self._retain_kernel(kernel)
                self._last_kernel_kept = kernel
            slot = self._params_slot.get(node_handle)
            if slot is not None:
                self._params_kept[slot] = None
            values[node_handle] = given
            return
        kept: list[Any] = []
        k = _kernel.update(node, self.handle, kept, kernel, grid, block, args, shared_mem)
        if k is not None:
            self._retain_kernel(k)
        self._retain_params(node_handle, kept)
        values[node_handle] = {**(before or {}), **given}


__all__ = ["GraphExec"]
