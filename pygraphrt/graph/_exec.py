"""Executable graphs: launch, upload, update, per-node parameters."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from ._graph import Graph


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
        if "_node_devices" in graph.__dict__:
            from ..multidevice import kernel_devices

            self._kernel_devices = kernel_devices(graph)
        self._sinks = [graph._sink]
        # Only graphs with Python host callables need their errors routed to the
        # stream's next synchronize: the others skip that on every launch.
        self._host_payloads: tuple[HostPayload, ...] = ()
        self._host_sinks: tuple[Any, ...] = ()
        self._add_host(host_payloads(graph._keep), graph._sink)

    def _add_host(self, payloads: tuple[HostPayload, ...], sink: Any) -> None:
        """Host callables its nodes run: each launch holds them until they have run (see
        ``_handles.HostPayload``), and their errors go to the launching stream."""
        if not payloads:
            return
        known = set(self._host_payloads)
        self._host_payloads += tuple(p for p in payloads if p not in known)
        if sink not in self._host_sinks:
            self._host_sinks = self._host_sinks + (sink,)
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
            self._add_host(host_payloads(keep), sink)

    @property
    def graph(self) -> "Graph":
        """The graph this executable graph was instantiated from."""
        return self._graph

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
        from ._graph import Graph

        self._same_backend(graph, "GraphExec.update", Graph)
        ops = self._backend.ops
        devices = self._kernel_devices
        if devices is not None or "_node_devices" in graph.__dict__:  # (several devices: before the runtime)
            from ..multidevice import check_update_devices

            devices = check_update_devices(devices, graph, self._backend)
        rc, result, node = ops.exec_update(self.handle, graph.handle)
        if rc == 0 and result is UpdateResult.SUCCESS:
            self._retain(graph._keep, graph._sink, True)
            self._kernel_devices = devices
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
        p = _params.fill(self._graph, node.type, params, self._sinks[0], kept.append)
        self._backend.ops.call("GraphExecNodeSetParams", self.handle, h, p)
        self._retain(kept, self._sinks[0], True)

    def set_memset(self, node: MemsetNode, *, dst: Any = None, value: int | None = None,
                   count: int | None = None) -> None:
        """Change a memset node's parameters in this executable graph only."""
        h = self._node(node, MemsetNode)
        b = self._backend
        cur = node.params
        p = b.ffi.new(f"{b.ops.memset_params_type} *")
        _params.memset_fields(b, p, cur["dst"] if dst is None else dst,
                              cur["value"] if value is None else value,
                              cur["width"] if count is None else count, cur["element_size"],
                              cur["height"], cur["pitch"], what="set_memset")
        b.ops.call("GraphExecMemsetNodeSetParams", self.handle, h, p)
        if dst is not None:  # a buffer given as an object lives as long as this executable graph
            self._retain([dst], self._sinks[0], False)

    def set_memcpy(self, node: MemcpyNode, dst: Any, src: Any, count: int) -> None:
        """Change a 1-D copy node's ``dst``, ``src`` and ``count`` in this executable graph
        (operands as for :meth:`Stream.memcpy`)."""
        h = self._node(node, MemcpyNode)
        b = self._backend
        kind = b.ops.const("MemcpyDefault")
        b.ops.call("GraphExecMemcpyNodeSetParams1D", self.handle, h, _ptr(b, dst), _ptr(b, src),
                   _count(count), kind)
        self._retain([dst, src], self._sinks[0], False)  # (operands given as objects: kept alive)

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
        from ._graph import Graph

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
        _apply_dims(k, grid, block, shared_mem_bytes)
        ops.set_kernel_dims(h, k, exec_=self.handle)


    def set_kernel_params(self, node: KernelNode, *, kernel: Any = None, args: Any = None,
                          grid: Any = None, block: Any = None, shared_mem: int | None = None) -> None:
        """Change a kernel node in this executable graph only, without re-instantiating.

        What is not given stays as it is.  ``args`` are packed by the kernel's
        signature; they (and the arrays their pointers came from) live as long
        as this executable graph.  A new ``kernel`` must be in the same context.
        """
        from . import _kernel

        self._node(node, KernelNode)
        kept: list[Any] = []
        _kernel.update(node, self.handle, kept, kernel, grid, block, args, shared_mem)
        self._retain(kept, self._sinks[0], False)


__all__ = ["GraphExec"]
