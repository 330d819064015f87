"""The runtime's graph section, the graph's structure: creating and destroying graphs and nodes,
adding each kind of node (typed and generic ``cudaGraphAddNode``), reading and changing node
parameters, kernel node attributes, conditional handles, edges, node and edge queries, clones,
ids, ``cudaGraphDebugDotPrint``.

Graphs, nodes and their parameters themselves are :mod:`._graph`'s; the parameter readers this
section shares with the executable graphs' are :class:`~._rt_base.RuntimeBase`'s.
"""

from __future__ import annotations

from typing import Any, Callable

from ..._bindings.cuda13 import ffi
from ._core import DEFAULT_EDGE, EdgeData, SimError, enum, handle, new_handle, read_edges, write_edge
from ._graph import (CONDITIONAL, EMPTY, EVENT_RECORD, GRAPH, HOST, KERNEL, MEM_ALLOC, MEM_FREE, MEMCPY, MEMSET,
                     TYPE_NAMES, WAIT_EVENT, AllocP, ChildP, CondHandle, EventP, Graph, KernelP, MemcpyP, Node,
                     check_edge, owned_graphs)
from ._rt_base import COND_ASSIGN_DEFAULT, LAUNCH_ATTR, OWNERSHIP, RuntimeBase


def _first_existing(a: list[Any], b: list[Any]) -> int:
    """The index of the first edge (a[i] -> b[i]) that is in its graph already or was named
    before in the same call, or len(a)."""
    seen: set[tuple[int, int]] = set()
    for i, (x, y) in enumerate(zip(a, b)):
        if (id(x), id(y)) in seen or any(o is y for o, _ in x.outs):
            return i
        seen.add((id(x), id(y)))
    return len(a)


class GraphSection(RuntimeBase):
    """Graphs and their nodes, parameters, edges, clones, ids, dot output."""

    # =========================================================================== graphs: structure
    def cudaGraphCreate(self, out: Any, flags: int) -> None:
        self._out(out, "cudaGraphCreate")
        if flags:
            raise SimError("InvalidValue", "cudaGraphCreate flags must be 0")
        out[0] = handle("cudaGraph_t", self._register_graph(Graph()).handle)

    def cudaGraphDestroy(self, graph: Any) -> None:
        g = self._graph(graph)
        if g.owner is not None:
            raise SimError("InvalidValue", "this graph belongs to a child-graph or conditional node; it is "
                                           "destroyed with its node")
        if g.capture is not None:
            raise SimError("IllegalState", f"the graph is being captured into by {g.capture.describe()}")
        self._destroy_graph(g)

    def _check_mutable(self, g: Graph, what: str) -> None:
        if g.has_memory_nodes():
            raise SimError("NotSupported", f"{what}: nodes and edges of a graph with memory nodes cannot be "
                                           "removed")

    def cudaGraphDestroyNode(self, node: Any) -> None:
        n = self._node(node)
        g = n.graph
        self._check_mutable(g, "cudaGraphDestroyNode")
        if g.capture is not None:
            raise SimError("IllegalState", f"nodes cannot be removed while {g.capture.describe()} builds the graph")
        g.remove_node(n)
        for sub in owned_graphs(n):
            self._destroy_graph(sub)
        self._forget_node(n)

    def _add(self, out: Any, graph: Any, deps: Any, n: int, type_: int, params: Any, edata: Any = ffi.NULL,
             what: str = "add node") -> Node:
        self._out(out, what)
        g = self._graph(graph)
        nodes = self._nodes_in(deps, n, what)
        if (type_ == MEMCPY and not all(params.extent)) or (type_ == MEMSET and not (params.width and params.height)):
            # CUDA refuses a memcpy or memset node that touches nothing (found by the differential test)
            raise SimError("InvalidValue", f"{what}: the node would touch no memory")
        self._body_rules(g, type_, params, self.cur_device, what)
        # an added node runs in the context current when it was added (cuGraphAdd*Node's ctx)
        node = g.add_node(type_, params, nodes, read_edges(edata, n), device=self.cur_device)
        self._register_node(node)
        out[0] = handle("cudaGraphNode_t", node.handle)
        return node

    def cudaGraphAddEmptyNode(self, out: Any, graph: Any, deps: Any, n: int) -> None:
        self._add(out, graph, deps, n, EMPTY, None, what="cudaGraphAddEmptyNode")

    def cudaGraphAddMemsetNode(self, out: Any, graph: Any, deps: Any, n: int, p: Any) -> None:
        self._graph(graph)
        self._add(out, graph, deps, n, MEMSET, self._read_memset(p, "cudaGraphAddMemsetNode"),
                  what="cudaGraphAddMemsetNode")

    def cudaGraphAddMemcpyNode(self, out: Any, graph: Any, deps: Any, n: int, p: Any) -> None:
        self._graph(graph)
        self._add(out, graph, deps, n, MEMCPY, self._read_memcpy(p, "cudaGraphAddMemcpyNode"),
                  what="cudaGraphAddMemcpyNode")

    def cudaGraphAddMemcpyNode1D(self, out: Any, graph: Any, deps: Any, n: int, dst: Any, src: Any,
                                 count: int, kind: int) -> None:
        self._graph(graph)
        self._add(out, graph, deps, n, MEMCPY, self._one_d(dst, src, count, kind, "cudaGraphAddMemcpyNode1D"),
                  what="cudaGraphAddMemcpyNode1D")

    def cudaGraphAddHostNode(self, out: Any, graph: Any, deps: Any, n: int, p: Any) -> None:
        self._graph(graph)
        self._add(out, graph, deps, n, HOST, self._read_host(p, "cudaGraphAddHostNode"),
                  what="cudaGraphAddHostNode")

    def cudaGraphAddChildGraphNode(self, out: Any, graph: Any, deps: Any, n: int, child: Any) -> None:
        g, ch = self._graph(graph), self._graph(child)
        if ch is g:
            raise SimError("InvalidValue", "a graph cannot contain itself")
        copy = self._clone_graph(ch, "cudaGraphAddChildGraphNode")
        try:
            node = self._add(out, graph, deps, n, GRAPH, ChildP(copy), what="cudaGraphAddChildGraphNode")
        except SimError:
            self._destroy_graph(copy)
            raise
        copy.owner = node

    def cudaGraphAddEventRecordNode(self, out: Any, graph: Any, deps: Any, n: int, event: Any) -> None:
        self._graph(graph)
        self._add(out, graph, deps, n, EVENT_RECORD, EventP(self._event(event).handle),
                  what="cudaGraphAddEventRecordNode")

    def cudaGraphAddEventWaitNode(self, out: Any, graph: Any, deps: Any, n: int, event: Any) -> None:
        self._graph(graph)
        self._add(out, graph, deps, n, WAIT_EVENT, EventP(self._event(event).handle),
                  what="cudaGraphAddEventWaitNode")

    def cudaGraphAddMemAllocNode(self, out: Any, graph: Any, deps: Any, n: int, p: Any) -> None:
        self._out(out, "cudaGraphAddMemAllocNode")
        self._memory_node_allowed(self._graph(graph), "cudaGraphAddMemAllocNode")
        params = self._read_alloc(p, "cudaGraphAddMemAllocNode")
        try:
            self._add(out, graph, deps, n, MEM_ALLOC, params, what="cudaGraphAddMemAllocNode")
        except SimError:
            self.memory.unref_graph(params.block)
            raise
        p.dptr = ffi.cast("void *", params.dptr)

    def cudaGraphAddMemFreeNode(self, out: Any, graph: Any, deps: Any, n: int, dptr: Any) -> None:
        g = self._graph(graph)
        self._memory_node_allowed(g, "cudaGraphAddMemFreeNode")
        self._add(out, graph, deps, n, MEM_FREE, self._read_free(g, dptr, "cudaGraphAddMemFreeNode"),
                  what="cudaGraphAddMemFreeNode")

    # -- kernels in graphs -------------------------------------------------------------------
    def cudaGraphAddKernelNode(self, out: Any, graph: Any, deps: Any, n: int, p: Any) -> None:
        self._graph(graph)
        self._add(out, graph, deps, n, KERNEL, self._read_kernel(p, "cudaGraphAddKernelNode"),
                  what="cudaGraphAddKernelNode")

    def cudaGraphKernelNodeGetParams(self, node: Any, p: Any) -> None:
        kp = self._typed(node, KERNEL, "cudaGraphKernelNodeGetParams").params
        self._loaded(kp.kernel, "cudaGraphKernelNodeGetParams: the node's kernel")
        p.func = ffi.cast("void *", kp.kernel.handle)
        p.gridDim.x, p.gridDim.y, p.gridDim.z = kp.grid
        p.blockDim.x, p.blockDim.y, p.blockDim.z = kp.block
        p.sharedMemBytes = kp.smem
        p.kernelParams = kp.argv()
        p.extra = ffi.NULL

    def cudaGraphKernelNodeSetParams(self, node: Any, p: Any) -> None:
        n = self._typed(node, KERNEL, "cudaGraphKernelNodeSetParams")
        new = self._read_kernel(p, "cudaGraphKernelNodeSetParams")
        n.params = KernelP(new.kernel, new.grid, new.block, new.smem, new.args, n.params.attrs)

    def _attr_id(self, ident: int, what: str) -> int:
        valid = set(LAUNCH_ATTR.values()) - {LAUNCH_ATTR["cudaLaunchAttributeIgnore"],
                                              LAUNCH_ATTR["cudaLaunchAttributeProgrammaticStreamSerialization"],
                                              LAUNCH_ATTR["cudaLaunchAttributeProgrammaticEvent"]}
        if ident not in valid:
            raise SimError("InvalidValue", f"{what}: launch attribute {ident} does not apply to kernel nodes")
        return ident

    def cudaGraphKernelNodeGetAttribute(self, node: Any, ident: int, value: Any) -> None:
        kp = self._typed(node, KERNEL, "cudaGraphKernelNodeGetAttribute").params
        self._attr_id(ident, "cudaGraphKernelNodeGetAttribute")
        data = kp.attr(ident) or bytes(ffi.sizeof("cudaLaunchAttributeValue"))
        ffi.memmove(value, data, len(data))

    def cudaGraphKernelNodeSetAttribute(self, node: Any, ident: int, value: Any) -> None:
        n = self._typed(node, KERNEL, "cudaGraphKernelNodeSetAttribute")
        self._attr_id(ident, "cudaGraphKernelNodeSetAttribute")
        n.params = n.params.with_attr(ident, bytes(ffi.buffer(value, ffi.sizeof("cudaLaunchAttributeValue"))))

    def cudaGraphKernelNodeCopyAttributes(self, dst: Any, src: Any) -> None:
        d = self._typed(dst, KERNEL, "cudaGraphKernelNodeCopyAttributes")
        s = self._typed(src, KERNEL, "cudaGraphKernelNodeCopyAttributes")
        d.params = KernelP(d.params.kernel, d.params.grid, d.params.block, d.params.smem, d.params.args,
                           s.params.attrs)

    # -- conditional nodes ---------------------------------------------------------------------
    def cudaGraphConditionalHandleCreate(self, out: Any, graph: Any, default: int, flags: int) -> None:
        self._out(out, "cudaGraphConditionalHandleCreate")
        g = self._graph(graph)
        if flags not in (0, COND_ASSIGN_DEFAULT):
            raise SimError("InvalidValue", f"conditional handle flags {flags:#x}")
        h = CondHandle(new_handle(), g, int(default), flags)
        g.cond_handles.append(h)
        self.cond_handles[h.value] = h
        out[0] = h.value

    # -- the generic form ------------------------------------------------------------------------
    def cudaGraphAddNode(self, out: Any, graph: Any, deps: Any, edata: Any, n: int, p: Any) -> None:
        g = self._graph(graph)
        t, params = self._read_generic(g, p, "cudaGraphAddNode")
        moved = t == GRAPH and int(p.graph.ownership) == OWNERSHIP["cudaGraphChildGraphOwnershipMove"]
        try:
            node = self._add(out, graph, deps, n, t, params, edata, "cudaGraphAddNode")
        except SimError:
            if t == MEM_ALLOC:
                self.memory.unref_graph(params.block)
            if t == GRAPH and not moved:
                self._destroy_graph(params.graph)
            raise
        if t == GRAPH:
            params.graph.owner = node
            self._register_tree(params.graph)
        elif t == CONDITIONAL:
            for b in params.bodies:
                b.owner = node
                self._register_graph(b)
            p.conditional.phGraph_out = params.out
        elif t == MEM_ALLOC:
            p.alloc.dptr = ffi.cast("void *", params.dptr)

    def cudaGraphNodeGetParams(self, node: Any, p: Any) -> None:
        n = self._node(node)
        ffi.memmove(p, bytes(ffi.sizeof("struct cudaGraphNodeParams")), ffi.sizeof("struct cudaGraphNodeParams"))
        p.type = n.type
        x = n.params
        if n.type == MEMSET:
            m = p.memset
            m.dst, m.pitch, m.value, m.elementSize, m.width, m.height = (ffi.cast("void *", x.dst), x.pitch, x.value,
                                                                          x.element_size, x.width, x.height)
        elif n.type == MEMCPY:
            self._write_memcpy(p.memcpy.copyParams, x)
        elif n.type == HOST:
            p.host.fn, p.host.userData, p.host.syncMode = x.fn, x.user, x.sync_mode
        elif n.type == KERNEL:
            k = p.kernel
            k.func = ffi.cast("void *", x.kernel.handle)
            k.kern = ffi.cast("cudaKernel_t", x.kernel.handle)
            k.gridDim.x, k.gridDim.y, k.gridDim.z = x.grid
            k.blockDim.x, k.blockDim.y, k.blockDim.z = x.block
            k.sharedMemBytes = x.smem
            k.kernelParams = x.argv()
            k.functionType = enum("enum cudaKernelFunctionType")["cudaKernelFunctionTypeKernel"]
        elif n.type == GRAPH:
            p.graph.graph = handle("cudaGraph_t", x.graph.handle)
        elif n.type == EVENT_RECORD:
            p.eventRecord.event = handle("cudaEvent_t", x.event)
        elif n.type == WAIT_EVENT:
            p.eventWait.event = handle("cudaEvent_t", x.event)
        elif n.type == MEM_ALLOC:
            self._write_alloc(p.alloc, x)
        elif n.type == MEM_FREE:
            p.free.dptr = ffi.cast("void *", x.dptr)
        elif n.type == CONDITIONAL:
            c = p.conditional
            c.handle, c.type, c.size, c.phGraph_out = x.handle, x.kind, x.size, x.out

    def _set_params(self, n: Node, t: int, params: Any, what: str) -> None:
        if t != n.type:
            raise SimError("InvalidValue", f"{what}: a {TYPE_NAMES.get(t, t)} parameter set for a "
                                           f"{TYPE_NAMES.get(n.type, n.type)} node")
        if t in (MEM_ALLOC, MEM_FREE, CONDITIONAL):
            raise SimError("InvalidValue", f"{what}: the parameters of {TYPE_NAMES[t]} nodes cannot change")
        if t == GRAPH:
            old = n.params.graph
            params.graph.owner = n
            self._register_tree(params.graph)
            self._destroy_graph(old)
        if t == KERNEL:
            params = KernelP(params.kernel, params.grid, params.block, params.smem, params.args, n.params.attrs)
        n.params = params

    def cudaGraphNodeSetParams(self, node: Any, p: Any) -> None:
        n = self._node(node)
        t = int(p.type)
        if t != n.type:
            raise SimError("InvalidValue", "cudaGraphNodeSetParams: the node's type cannot change")
        if t in (MEM_ALLOC, MEM_FREE):
            raise SimError("NotSupported", f"cudaGraphNodeSetParams: {TYPE_NAMES[t]} nodes cannot be changed")
        if t == CONDITIONAL:
            raise SimError("InvalidValue", f"cudaGraphNodeSetParams: {TYPE_NAMES[t]} nodes cannot be changed")
        _, params = self._read_generic(None, p, "cudaGraphNodeSetParams")
        self._set_params(n, t, params, "cudaGraphNodeSetParams")

    # -- typed getters and setters ---------------------------------------------------------------
    def _typed(self, node: Any, t: int, what: str) -> Node:
        n = self._node(node)
        if n.type != t:
            raise SimError("InvalidValue", f"{what}: the node is a {TYPE_NAMES.get(n.type, n.type)} node")
        return n

    def cudaGraphNodeGetType(self, node: Any, out: Any) -> None:
        out[0] = self._node(node).type

    def cudaGraphMemsetNodeGetParams(self, node: Any, p: Any) -> None:
        x = self._typed(node, MEMSET, "cudaGraphMemsetNodeGetParams").params
        p.dst, p.pitch, p.value, p.elementSize, p.width, p.height = (ffi.cast("void *", x.dst), x.pitch, x.value,
                                                                      x.element_size, x.width, x.height)

    def cudaGraphMemsetNodeSetParams(self, node: Any, p: Any) -> None:
        n = self._typed(node, MEMSET, "cudaGraphMemsetNodeSetParams")
        n.params = self._read_memset(p, "cudaGraphMemsetNodeSetParams")

    def _write_memcpy(self, p: Any, m: MemcpyP) -> None:
        p.srcArray, p.dstArray = ffi.NULL, ffi.NULL
        p.srcPos.x, p.srcPos.y, p.srcPos.z = m.src_pos
        p.dstPos.x, p.dstPos.y, p.dstPos.z = m.dst_pos
        p.srcPtr.ptr, p.srcPtr.pitch, p.srcPtr.xsize, p.srcPtr.ysize = (ffi.cast("void *", m.src.ptr), m.src.pitch,
                                                                        m.src.xsize, m.src.ysize)
        p.dstPtr.ptr, p.dstPtr.pitch, p.dstPtr.xsize, p.dstPtr.ysize = (ffi.cast("void *", m.dst.ptr), m.dst.pitch,
                                                                        m.dst.xsize, m.dst.ysize)
        p.extent.width, p.extent.height, p.extent.depth = m.extent
        p.kind = m.kind

    def cudaGraphMemcpyNodeGetParams(self, node: Any, p: Any) -> None:
        self._write_memcpy(p, self._typed(node, MEMCPY, "cudaGraphMemcpyNodeGetParams").params)

    def cudaGraphMemcpyNodeSetParams(self, node: Any, p: Any) -> None:
        n = self._typed(node, MEMCPY, "cudaGraphMemcpyNodeSetParams")
        n.params = self._read_memcpy(p, "cudaGraphMemcpyNodeSetParams")

    def cudaGraphMemcpyNodeSetParams1D(self, node: Any, dst: Any, src: Any, count: int, kind: int) -> None:
        n = self._typed(node, MEMCPY, "cudaGraphMemcpyNodeSetParams1D")
        n.params = self._one_d(dst, src, count, kind, "cudaGraphMemcpyNodeSetParams1D")

    def cudaGraphHostNodeGetParams(self, node: Any, p: Any) -> None:
        x = self._typed(node, HOST, "cudaGraphHostNodeGetParams").params
        p.fn, p.userData = x.fn, x.user

    def cudaGraphHostNodeSetParams(self, node: Any, p: Any) -> None:
        n = self._typed(node, HOST, "cudaGraphHostNodeSetParams")
        n.params = self._read_host(p, "cudaGraphHostNodeSetParams")

    def cudaGraphChildGraphNodeGetGraph(self, node: Any, out: Any) -> None:
        out[0] = handle("cudaGraph_t", self._typed(node, GRAPH, "cudaGraphChildGraphNodeGetGraph").params.graph.handle)

    def cudaGraphEventRecordNodeGetEvent(self, node: Any, out: Any) -> None:
        out[0] = handle("cudaEvent_t", self._typed(node, EVENT_RECORD, "cudaGraphEventRecordNodeGetEvent").params.event)

    def cudaGraphEventRecordNodeSetEvent(self, node: Any, event: Any) -> None:
        self._typed(node, EVENT_RECORD, "cudaGraphEventRecordNodeSetEvent").params = EventP(self._event(event).handle)

    def cudaGraphEventWaitNodeGetEvent(self, node: Any, out: Any) -> None:
        out[0] = handle("cudaEvent_t", self._typed(node, WAIT_EVENT, "cudaGraphEventWaitNodeGetEvent").params.event)

    def cudaGraphEventWaitNodeSetEvent(self, node: Any, event: Any) -> None:
        self._typed(node, WAIT_EVENT, "cudaGraphEventWaitNodeSetEvent").params = EventP(self._event(event).handle)

    def _write_alloc(self, p: Any, x: AllocP) -> None:
        ffi.memmove(ffi.addressof(p.poolProps), x.pool_props, len(x.pool_props))
        arr = x.access_array()
        p.accessDescs = arr
        p.accessDescCount = len(x.access) // ffi.sizeof("struct cudaMemAccessDesc")
        p.bytesize = x.bytesize
        p.dptr = ffi.cast("void *", x.dptr)

    def cudaGraphMemAllocNodeGetParams(self, node: Any, p: Any) -> None:
        self._write_alloc(p, self._typed(node, MEM_ALLOC, "cudaGraphMemAllocNodeGetParams").params)

    def cudaGraphMemFreeNodeGetParams(self, node: Any, out: Any) -> None:
        ffi.cast("void **", out)[0] = ffi.cast("void *",
                                              self._typed(node, MEM_FREE, "cudaGraphMemFreeNodeGetParams").params.dptr)

    # -- edges -------------------------------------------------------------------------------------
    def _edge_lists(self, graph: Any, frm: Any, to: Any, n: int, what: str) -> tuple[Graph, list[Node], list[Node]]:
        g = self._graph(graph)
        a, b = self._nodes_in(frm, n, what), self._nodes_in(to, n, what)
        for x in a + b:
            if x.graph is not g:
                raise SimError("InvalidValue", f"{what}: node {x.handle:#x} belongs to another graph")
        return g, a, b

    def cudaGraphAddDependencies(self, graph: Any, frm: Any, to: Any, edata: Any, n: int) -> None:
        g, a, b = self._edge_lists(graph, frm, to, n, "cudaGraphAddDependencies")
        edges = read_edges(edata, n)
        # CUDA 13.0 adds the edges in order: one that is there already -- an edge before the
        # call, or one named before in it -- is refused (InvalidValue) with the edges before it
        # added (differential test, regressions gpu-add-dependencies-repeat and
        # gpu-add-dependencies-exists-after-one).  An edge joining a node to itself is refused
        # before anything is added, as cudaGraphRemoveDependencies refuses it.
        for x, y in zip(a, b):
            if x is y:
                raise SimError("InvalidValue", f"cudaGraphAddDependencies: edge {x.handle:#x} -> {y.handle:#x} "
                                               "joins a node to itself")
        stop = _first_existing(a, b)
        a, b, edges = a[:stop], b[:stop], edges[:stop]
        for x, y, e in zip(a, b, edges):
            check_edge(x.type, y.type, e)
        for x, y, e in zip(a, b, edges):
            g.add_edge(x, y, e)
        if stop < n:
            raise SimError("InvalidValue", "cudaGraphAddDependencies: an edge exists already or is given twice "
                                           "(the edges named before it were added)")

    def cudaGraphRemoveDependencies(self, graph: Any, frm: Any, to: Any, edata: Any, n: int) -> None:
        g, a, b = self._edge_lists(graph, frm, to, n, "cudaGraphRemoveDependencies")
        self._check_mutable(g, "cudaGraphRemoveDependencies")
        edges = read_edges(edata, n)
        # CUDA 13.0 refuses an edge joining a node to itself before removing anything (regression
        # gpu-remove-dependencies-all-or-none), then removes the edges in order: one that is not
        # there -- never was, or was named before in the same call -- is refused (InvalidValue)
        # with the edges before it removed (differential test, regressions
        # gpu-remove-dependencies-repeat and gpu-remove-dependencies-missing-after-one)
        for x, y in zip(a, b):
            if x is y:
                raise SimError("InvalidValue", f"cudaGraphRemoveDependencies: there is no edge {x.handle:#x} -> "
                                               f"{y.handle:#x} (a node to itself)")
        for x, y, e in zip(a, b, edges):
            if not any(o is y for o, _ in x.outs):
                raise SimError("InvalidValue", f"cudaGraphRemoveDependencies: there is no edge {x.handle:#x} -> "
                                               f"{y.handle:#x} (the edges named before it were removed)")
            g.remove_edge(x, y, e)

    def _fill(self, items: list[tuple[Any, ...]], arrays: list[Any], edata: Any, count: Any, what: str,
              edge_of: Callable[[tuple[Any, ...]], EdgeData]) -> None:
        """Count-then-fill queries (nodes, edges, dependencies), with the runtime's rules."""
        if arrays[0] == ffi.NULL:
            count[0] = len(items)
            return
        room = int(count[0])
        if edata == ffi.NULL and any(edge_of(it) != DEFAULT_EDGE for it in items[:room]):
            raise SimError("LossyQuery", f"{what}: edges carry edge data; pass an array for it")
        for i in range(room):
            if i < len(items):
                for arr, h in zip(arrays, items[i][:len(arrays)]):
                    arr[i] = handle("cudaGraphNode_t", h.handle)
                if edata != ffi.NULL:
                    write_edge(edata[i], edge_of(items[i]))
            else:
                for arr in arrays:
                    arr[i] = ffi.NULL
                if edata != ffi.NULL:
                    write_edge(edata[i], DEFAULT_EDGE)
        if room > len(items):
            count[0] = len(items)

    def cudaGraphGetEdges(self, graph: Any, frm: Any, to: Any, edata: Any, count: Any) -> None:
        g = self._graph(graph)
        if (frm == ffi.NULL) != (to == ffi.NULL):
            raise SimError("InvalidValue", "cudaGraphGetEdges: from and to must both be given or both NULL")
        self._fill(g.edges, [frm, to] if frm != ffi.NULL else [ffi.NULL], edata, count, "cudaGraphGetEdges",
                   lambda it: it[2])

    def cudaGraphNodeGetDependencies(self, node: Any, deps: Any, edata: Any, count: Any) -> None:
        n = self._node(node)
        self._fill(n.deps, [deps], edata, count, "cudaGraphNodeGetDependencies", lambda it: it[1])

    def cudaGraphNodeGetDependentNodes(self, node: Any, deps: Any, edata: Any, count: Any) -> None:
        n = self._node(node)
        self._fill(n.outs, [deps], edata, count, "cudaGraphNodeGetDependentNodes", lambda it: it[1])

    def cudaGraphGetNodes(self, graph: Any, nodes: Any, count: Any) -> None:
        g = self._graph(graph)
        self._fill([(n,) for n in g.nodes], [nodes], ffi.NULL, count, "cudaGraphGetNodes", lambda it: DEFAULT_EDGE)

    def cudaGraphGetRootNodes(self, graph: Any, nodes: Any, count: Any) -> None:
        g = self._graph(graph)
        self._fill([(n,) for n in g.roots()], [nodes], ffi.NULL, count, "cudaGraphGetRootNodes",
                   lambda it: DEFAULT_EDGE)

    # -- clone, ids, dot ---------------------------------------------------------------------------
    def cudaGraphClone(self, out: Any, graph: Any) -> None:
        self._out(out, "cudaGraphClone")
        out[0] = handle("cudaGraph_t", self._clone_graph(self._graph(graph), "cudaGraphClone").handle)

    def cudaGraphNodeFindInClone(self, out: Any, node: Any, clone: Any) -> None:
        n, c = self._node(node), self._graph(clone)
        m = c.clone_map.get(n.handle)
        if m is None or m.handle not in self.nodes:
            raise SimError("InvalidValue", "cudaGraphNodeFindInClone: the graph is not a clone of this node's graph")
        out[0] = handle("cudaGraphNode_t", m.handle)

    def cudaGraphGetId(self, graph: Any, out: Any) -> None:
        out[0] = self._graph(graph).id

    def cudaGraphExecGetId(self, exec_: Any, out: Any) -> None:
        out[0] = self._exec(exec_).id

    def cudaGraphNodeGetLocalId(self, node: Any, out: Any) -> None:
        out[0] = self._node(node).local_id

    def cudaGraphNodeGetToolsId(self, node: Any, out: Any) -> None:
        out[0] = self._node(node).tools_id

    def cudaGraphNodeGetContainingGraph(self, node: Any, out: Any) -> None:
        out[0] = handle("cudaGraph_t", self._node(node).graph.handle)

    def cudaGraphDebugDotPrint(self, graph: Any, path: Any, flags: int) -> None:
        from ._dot import dot

        g = self._graph(graph)
        try:
            with open(ffi.string(path), "w", encoding="utf-8") as f:
                f.write(dot(g, flags))
        except OSError as exc:
            raise SimError("OperatingSystem", f"cudaGraphDebugDotPrint: {exc}") from exc
