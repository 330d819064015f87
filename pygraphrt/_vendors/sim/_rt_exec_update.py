"""The runtime's executable graph update section: ``cudaGraphExecUpdate`` (which changes of the
graph an executable graph takes), the per-node parameter changes of an executable graph
(``cudaGraphExec*SetParams``, ``cudaGraphExecNodeSetParams``) and enabling or disabling its nodes.
"""

from __future__ import annotations

from typing import Any

from ..._bindings.cuda13 import ffi
from ._core import SimError, addr, enum, handle
from ._graph import (CONDITIONAL, EVENT_RECORD, GRAPH, HOST, KERNEL, MEM_ALLOC, MEM_FREE, MEMCPY, MEMSET, TYPE_NAMES,
                     WAIT_EVENT, ChildP, CondHandle, EventP, KernelP, MemcpyP, MemsetP, Node, SNode, Snapshot)
from ._rt_base import LAUNCH_ATTR, NODE_PRIORITY, RuntimeBase

UPDATE = enum("enum cudaGraphExecUpdateResult")


class ExecUpdateSection(RuntimeBase):
    """Updating executable graphs: whole-graph update, per-node parameters, enabled state."""

    # =========================================================================== executable graphs: update
    # -- update ---------------------------------------------------------------------------------
    def _compare(self, old: list[SNode], new: list[Node], old_handles: list[CondHandle],
                 new_handles: list[CondHandle], flags: int = 0) -> tuple[str, Node | None, Node | None]:
        if len(old) != len(new):
            return "TopologyChanged", None, None
        for o, n in zip(old, new):
            if o.type != n.type:
                return "NodeTypeChanged", n, None
        index = {n.handle: i for i, n in enumerate(new)}
        for o, n in zip(old, new):
            nd = [(index[d.handle], e) for d, e in n.deps]
            if len(nd) != len(o.deps):
                # CUDA names no node for another number of dependencies (documented: the node of
                # hGraph): a known deviation the simulator reproduces (exec.update.edge_added)
                return "TopologyChanged", None, None
            for (a, ea), (b, eb) in zip(nd, o.deps):
                if a != b or ea != eb:
                    return "TopologyChanged", n, new[a]
        for o, n in zip(old, new):
            why = self._params_changed(o, n, old_handles, new_handles, flags)
            if why:
                return why, n, None
        return "", None, None

    def _params_changed(self, o: SNode, n: Node, old_handles: list[CondHandle],
                        new_handles: list[CondHandle], flags: int = 0) -> str:
        a, b = o.params, n.params
        if o.type == KERNEL and o.device != n.device:
            # CUDA Runtime API, cudaGraphExecUpdate, kernel nodes: "The owning context of the
            # function cannot change" (a kernel node runs in the context it was made in)
            return "UnsupportedFunctionChange"
        if o.type == KERNEL:
            # a node cannot become (or stop being) cooperative, nor change its priority when the
            # executable graph uses node priorities: AttributesChanged (as CUDA 12.9-13.5 report)
            def attr(p: KernelP, name: str) -> bytes:
                return (p.attr(LAUNCH_ATTR[name]) or b"").rstrip(b"\0")

            fixed = ["cudaLaunchAttributeCooperative"]
            if flags & NODE_PRIORITY:
                fixed.append("cudaLaunchAttributePriority")
            return "AttributesChanged" if any(attr(a, f) != attr(b, f) for f in fixed) else ""
        if o.type == MEMSET:
            return "" if self._memset_ok(a, b) is None else "ParametersChanged"
        if o.type == MEMCPY:
            return "" if self._memcpy_ok(a, b) is None else "ParametersChanged"
        if o.type == MEM_ALLOC:
            same = (a.bytesize, a.device, a.pool_props) == (b.bytesize, b.device, b.pool_props)
            return "" if same and a.dptr == b.dptr else "ParametersChanged"
        if o.type == MEM_FREE:
            return "" if a.dptr == b.dptr else "ParametersChanged"
        if o.type == GRAPH:
            assert o.child is not None
            why, _, _ = self._compare(o.child.nodes, b.graph.nodes, o.child.handles, b.graph.cond_handles,
                                      flags)
            return why
        if o.type == CONDITIONAL:
            if (a.kind, a.size) != (b.kind, b.size):
                return "ParametersChanged"
            pos = [i for i, h in enumerate(old_handles) if h.value == a.handle]
            npos = [i for i, h in enumerate(new_handles) if h.value == b.handle]
            if pos != npos:
                return "ParametersChanged"
            for body, new_body in zip(o.bodies, b.bodies):
                why, _, _ = self._compare(body.nodes, new_body.nodes, body.handles, new_body.cond_handles,
                                          flags)
                if why:
                    return why
        return ""

    def _memset_ok(self, a: MemsetP, b: MemsetP) -> str | None:
        if a.height > 1 and (a.width, a.height, a.pitch, a.element_size) != (b.width, b.height, b.pitch,
                                                                             b.element_size):
            return "the dimensions of a 2D memset cannot change"
        if a.height == 1 and b.height != 1:
            return "the height of a 1D memset cannot change"
        if b.width == 0:
            return "zero-sized memsets are not supported"
        if self.memory.is_device(a.dst) != self.memory.is_device(b.dst):
            return "the destination must be the same kind of memory"
        return self._operand_devices_kept(((a.dst, b.dst),))

    def _operand_devices_kept(self, pairs: tuple[tuple[int, int], ...]) -> str | None:
        """CUDA Runtime API, cudaGraphExecUpdate, memset and memcpy nodes: "The CUDA device(s) to
        which the operand(s) was allocated/mapped cannot change"."""
        for old, new in pairs:
            a, b = self.memory.find(old), self.memory.find(new)
            if a is not None and b is not None and a.device != b.device:
                return f"an operand moved from device {a.device}'s memory to device {b.device}'s"
        return None

    def _memcpy_ok(self, a: MemcpyP, b: MemcpyP) -> str | None:
        if a.is_1d != b.is_1d:
            return "a 1D copy must stay 1D (and a 3D copy 3D)"
        if not a.is_1d and (a.extent, a.src.pitch, a.dst.pitch) != (b.extent, b.src.pitch, b.dst.pitch):
            return "the shape of a 2D/3D copy cannot change"
        if b.extent[0] == 0:
            return "zero-length copies are not supported"
        # No check of the kinds of memory: documented as not supported, but CUDA 12.9-13.5 accept a
        # device operand replaced by pageable host memory (exec.*.memcpy_memory_type_changed),
        # and the simulator reproduces that known deviation.
        return self._operand_devices_kept(((a.src.ptr, b.src.ptr), (a.dst.ptr, b.dst.ptr)))

    def cudaGraphExecUpdate(self, exec_: Any, graph: Any, info: Any) -> None:
        ex = self._exec(exec_)
        g = self._graph(graph)
        if info != ffi.NULL:
            info.result, info.errorNode, info.errorFromNode = UPDATE["cudaGraphExecUpdateError"], ffi.NULL, ffi.NULL
        why, node, frm = self._compare(ex.snapshot.nodes, g.nodes, ex.snapshot.handles, g.cond_handles,
                                       ex.flags)
        if why:
            if info != ffi.NULL:
                info.result = UPDATE["cudaGraphExecUpdateError" + why]
                info.errorNode = ffi.NULL if node is None else handle("cudaGraphNode_t", node.handle)
                info.errorFromNode = ffi.NULL if frm is None else handle("cudaGraphNode_t", frm.handle)
            raise SimError("GraphExecUpdateFailure", f"the graph cannot update this executable graph ({why})")
        fresh = Snapshot(g)
        for o, f in zip(ex.snapshot.nodes, fresh.nodes):
            o.params, o.child, o.bodies = f.params, f.child, f.bodies
        ex.snapshot.handles = fresh.handles
        if info != ffi.NULL:
            info.result = UPDATE["cudaGraphExecUpdateSuccess"]

    # -- per-node changes in an executable graph -------------------------------------------------
    def _exec_node(self, exec_: Any, node: Any, t: int | None, what: str) -> SNode:
        ex = self._exec(exec_)
        n = ex.node(addr(node), what)
        if t is not None and n.type != t:
            raise SimError("InvalidValue", f"{what}: the node is a {TYPE_NAMES.get(n.type, n.type)} node")
        return n

    def _exec_set(self, n: SNode, params: Any, what: str) -> None:
        t = n.type
        if t == MEMSET:
            why = self._memset_ok(n.params, params)
            if why:
                raise SimError("InvalidValue", f"{what}: {why}")
        elif t == MEMCPY:
            why = self._memcpy_ok(n.params, params)
            if why:
                raise SimError("InvalidValue", f"{what}: {why}")
        elif t in (MEM_ALLOC, MEM_FREE, CONDITIONAL):
            raise SimError("InvalidValue", f"{what}: {TYPE_NAMES[t]} nodes cannot be changed in an executable graph")
        elif t == GRAPH:
            assert n.child is not None
            why, _, _ = self._compare(n.child.nodes, params.graph.nodes, n.child.handles, params.graph.cond_handles)
            if why:  # CUDA: GraphExecUpdateFailure (documented: InvalidValue), a known deviation
                raise SimError("GraphExecUpdateFailure", f"{what}: the child graph's topology differs ({why})")
            n.child = Snapshot(params.graph)
        elif t == KERNEL:
            params = KernelP(params.kernel, params.grid, params.block, params.smem, params.args, n.params.attrs)
        n.params = params

    def cudaGraphExecMemsetNodeSetParams(self, exec_: Any, node: Any, p: Any) -> None:
        n = self._exec_node(exec_, node, MEMSET, "cudaGraphExecMemsetNodeSetParams")
        self._exec_set(n, self._read_memset(p, "cudaGraphExecMemsetNodeSetParams"), "cudaGraphExecMemsetNodeSetParams")

    def cudaGraphExecMemcpyNodeSetParams(self, exec_: Any, node: Any, p: Any) -> None:
        n = self._exec_node(exec_, node, MEMCPY, "cudaGraphExecMemcpyNodeSetParams")
        self._exec_set(n, self._read_memcpy(p, "cudaGraphExecMemcpyNodeSetParams"), "cudaGraphExecMemcpyNodeSetParams")

    def cudaGraphExecMemcpyNodeSetParams1D(self, exec_: Any, node: Any, dst: Any, src: Any, count: int,
                                           kind: int) -> None:
        what = "cudaGraphExecMemcpyNodeSetParams1D"
        n = self._exec_node(exec_, node, MEMCPY, what)
        self._exec_set(n, self._one_d(dst, src, count, kind, what), what)

    def cudaGraphExecHostNodeSetParams(self, exec_: Any, node: Any, p: Any) -> None:
        what = "cudaGraphExecHostNodeSetParams"
        n = self._exec_node(exec_, node, HOST, what)
        self._exec_set(n, self._read_host(p, what), what)

    def cudaGraphExecKernelNodeSetParams(self, exec_: Any, node: Any, p: Any) -> None:
        what = "cudaGraphExecKernelNodeSetParams"
        n = self._exec_node(exec_, node, KERNEL, what)
        self._exec_set(n, self._read_kernel(p, what), what)

    def cudaGraphExecChildGraphNodeSetParams(self, exec_: Any, node: Any, child: Any) -> None:
        what = "cudaGraphExecChildGraphNodeSetParams"
        n = self._exec_node(exec_, node, GRAPH, what)
        self._exec_set(n, ChildP(self._graph(child)), what)

    def cudaGraphExecEventRecordNodeSetEvent(self, exec_: Any, node: Any, event: Any) -> None:
        what = "cudaGraphExecEventRecordNodeSetEvent"
        self._exec_set(self._exec_node(exec_, node, EVENT_RECORD, what), EventP(self._event(event).handle), what)

    def cudaGraphExecEventWaitNodeSetEvent(self, exec_: Any, node: Any, event: Any) -> None:
        what = "cudaGraphExecEventWaitNodeSetEvent"
        self._exec_set(self._exec_node(exec_, node, WAIT_EVENT, what), EventP(self._event(event).handle), what)

    def cudaGraphExecNodeSetParams(self, exec_: Any, node: Any, p: Any) -> None:
        what = "cudaGraphExecNodeSetParams"
        n = self._exec_node(exec_, node, None, what)
        t = int(p.type)
        if t != n.type:
            raise SimError("InvalidValue", f"{what}: the node's type cannot change")
        if t in (MEM_ALLOC, MEM_FREE):
            raise SimError("NotSupported", f"{what}: {TYPE_NAMES[t]} nodes cannot be changed in an executable graph")
        if t == CONDITIONAL:
            raise SimError("InvalidValue", f"{what}: {TYPE_NAMES[t]} nodes cannot be changed in an executable graph")
        if t == GRAPH:
            self._exec_set(n, ChildP(self._graph(p.graph.graph)), what)
            return
        _, params = self._read_generic(None, p, what)
        self._exec_set(n, params, what)

    def cudaGraphNodeSetEnabled(self, exec_: Any, node: Any, enabled: int) -> None:
        n = self._exec_node(exec_, node, None, "cudaGraphNodeSetEnabled")
        if n.type not in (KERNEL, MEMCPY, MEMSET):
            raise SimError("InvalidValue", "cudaGraphNodeSetEnabled: only kernel, memcpy and memset nodes can be "
                                           "disabled")
        n.enabled = bool(enabled)

    def cudaGraphNodeGetEnabled(self, exec_: Any, node: Any, out: Any) -> None:
        n = self._exec_node(exec_, node, None, "cudaGraphNodeGetEnabled")
        if n.type not in (KERNEL, MEMCPY, MEMSET):
            raise SimError("InvalidValue", "cudaGraphNodeGetEnabled: only kernel, memcpy and memset nodes have an "
                                           "enabled state")
        out[0] = int(n.enabled)
