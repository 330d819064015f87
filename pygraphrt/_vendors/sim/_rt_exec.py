"""The runtime's executable graph section: instantiation (and its checks), destruction, flags,
upload, and the launch: how an executable graph's snapshot runs its nodes on a stream.

Updating an executable graph is :mod:`._rt_exec_update`'s.
"""

from __future__ import annotations

from typing import Any

from ..._bindings.cuda13 import ffi
from . import _kernels
from ._core import SimError, enum, handle
from ._graph import (COND_IF, COND_SWITCH, COND_WHILE, CONDITIONAL, EMPTY, EVENT_RECORD, GRAPH, HOST, KERNEL, MEM_ALLOC,
                     MEM_FREE, MEMCPY, MEMSET, TYPE_NAMES, Graph, SNode, Snapshot, order)
from ._rt_base import (ALL_INSTANTIATE, AUTO_FREE, COND_ASSIGN_DEFAULT, DEVICE_LAUNCH, NODE_PRIORITY, UPLOAD,
                       RuntimeBase, _now_ms)
from ._state import STATUS_ACTIVE, Exec, Stream

INSTANTIATE_RESULT = enum("enum cudaGraphInstantiateResult")


class ExecSection(RuntimeBase):
    """Executable graphs: instantiate, destroy, upload, launch and run."""

    # =========================================================================== executable graphs
    def _instantiate(self, g: Graph, flags: int, what: str) -> Exec:
        if flags & ~ALL_INSTANTIATE:
            raise SimError("InvalidValue", f"{what}: instantiate flags {flags:#x}")
        if g.capture is not None:
            raise SimError("InvalidValue" if g.capture.target else "IllegalState",
                           f"{what}: the graph is being captured into by {g.capture.describe()}")
        if flags & DEVICE_LAUNCH:
            if flags & AUTO_FREE:
                raise SimError("InvalidValue", f"{what}: device launch cannot be combined with auto free on launch")
            allowed = {KERNEL, MEMCPY, MEMSET, GRAPH, EMPTY}
            for sub in g.walk():
                bad = [n for n in sub.nodes if n.type not in allowed]
                if bad:
                    raise SimError("InvalidValue", f"{what}: a graph for device launch has only kernel, memcpy, "
                                                   f"memset and child graph nodes, not "
                                                   f"{TYPE_NAMES.get(bad[0].type, bad[0].type)}")
            # CUDA Programming Guide, Device Graph Launch (device graph creation): a graph
            # instantiated for device launch has all its nodes on a single device / context
            devices = sorted({n.device for sub in g.walk() for n in sub.nodes if n.type != GRAPH})
            if len(devices) > 1:
                raise SimError("InvalidValue", f"{what}: a graph for device launch has its nodes on one device, "
                                               f"not on devices {devices}")
        if g.has_memory_nodes() and g.live_execs:
            raise SimError("NotSupported", f"{what}: a graph with memory nodes may have one executable graph "
                                           "at a time")
        for sub in g.walk():  # cycles are refused here
            order(sub.nodes, lambda n: [d for d, _ in n.deps])
        self._check_memset_bounds(g, what)
        self._kernels_loaded(g.walk(), what)
        ex = Exec(g, flags)
        for b in ex.alloc_blocks:
            self.memory.ref_graph(b)
        if g.has_memory_nodes():
            g.live_execs += 1
            ex.counts_against_source = True
        self.execs[ex.handle] = ex
        return ex

    def _check_memset_bounds(self, g: Graph, what: str) -> None:
        """A memset node running past the end of its allocation is refused at instantiation:
        a captured memset is not checked when captured (see cudaMemsetAsync), CUDA 12.9
        checks it here (differential test, regression gpu-instantiate-checks-captured-memset)."""
        for sub in g.walk():
            for n in sub.nodes:
                if n.type != MEMSET:
                    continue
                p = n.params
                b = self.memory.find(p.dst)
                if b is None or not p.span:
                    continue
                end = p.dst + p.span
                if end > b.base + b.size:
                    raise SimError("InvalidValue", f"{what}: memset node (local id {n.local_id}) runs "
                                                   f"{end - b.base - b.size} bytes past the end of the "
                                                   f"{b.size}-byte allocation at {b.base:#x}")

    def cudaGraphInstantiate(self, out: Any, graph: Any, flags: int) -> None:
        self._out(out, "cudaGraphInstantiate")
        out[0] = handle("cudaGraphExec_t", self._instantiate(self._graph(graph), int(flags),
                                                             "cudaGraphInstantiate").handle)

    def cudaGraphInstantiateWithFlags(self, out: Any, graph: Any, flags: int) -> None:
        self._out(out, "cudaGraphInstantiateWithFlags")
        out[0] = handle("cudaGraphExec_t", self._instantiate(self._graph(graph), int(flags),
                                                             "cudaGraphInstantiateWithFlags").handle)

    def cudaGraphInstantiateWithParams(self, out: Any, graph: Any, p: Any) -> None:
        self._out(out, "cudaGraphInstantiateWithParams")
        self._out(p, "cudaGraphInstantiateWithParams")
        g = self._graph(graph)
        flags = int(p.flags)
        try:
            ex = self._instantiate(g, flags, "cudaGraphInstantiateWithParams")
        except SimError as e:
            p.result_out = INSTANTIATE_RESULT["cudaGraphInstantiateInvalidStructure" if e.name == "InvalidValue"
                                              else "cudaGraphInstantiateError"]
            p.errNode_out = ffi.NULL
            raise
        if flags & UPLOAD:
            self._stream(p.uploadStream)
        p.result_out = INSTANTIATE_RESULT["cudaGraphInstantiateSuccess"]
        p.errNode_out = ffi.NULL
        out[0] = handle("cudaGraphExec_t", ex.handle)

    def cudaGraphExecDestroy(self, exec_: Any) -> None:
        ex = self._exec(exec_)
        ex.destroyed = True
        del self.execs[ex.handle]
        self.memory.release_exec(ex)
        for b in ex.alloc_blocks:
            self.memory.unref_graph(b)
        if ex.counts_against_source:
            ex.source.live_execs -= 1

    def cudaGraphExecGetFlags(self, exec_: Any, out: Any) -> None:
        # As seen on the 12.9 and 13.0 runtimes: the node-priority flag is accepted but not reported.
        out[0] = self._exec(exec_).flags & ~NODE_PRIORITY

    def cudaGraphUpload(self, exec_: Any, stream: Any) -> None:
        self._exec(exec_)
        st = self._stream(stream)
        if st.capture is not None and st.capture.status != STATUS_ACTIVE:
            raise SimError("StreamCaptureInvalidated", f"{st.capture.describe()} was invalidated")

    def cudaGraphLaunch(self, exec_: Any, stream: Any) -> None:
        ex = self._exec(exec_)
        st = self._stream(stream)
        cap = st.capture
        if cap is not None:
            # CUDA 13.0/13.5 refuse a graph launch into a capturing stream and invalidate the
            # capture (found by the cuda-vs-sim differential test, regression seed-capture-fork-join)
            cap.invalidate("cudaGraphLaunch into the capture")
            raise SimError("StreamCaptureUnsupported", f"cudaGraphLaunch: the stream is capturing "
                                                       f"({cap.describe()}); the capture is invalidated")
        self._legacy_check(st, "cudaGraphLaunch")
        self._launch(ex, st)

    # -- running --------------------------------------------------------------------------------
    def _launch(self, ex: Exec, st: Stream) -> None:
        self._kernels_loaded(ex.snapshot.walk(), "cudaGraphLaunch")
        if self.race_check != "off":  # before anything runs: "raise" refuses the launch
            from ._races import on_launch

            on_launch(self, ex)
        for b in ex.alloc_blocks:
            if b.data is not None:
                if ex.flags & AUTO_FREE:
                    self.memory.unmap_graph(b)
                else:
                    raise SimError("InvalidValue", f"the graph allocation at {b.base:#x} made by the previous launch "
                                                   "is still allocated: free it (cudaFreeAsync / cudaFree) or "
                                                   "instantiate with cudaGraphInstantiateFlagAutoFreeOnLaunch")
        values: dict[int, int] = {}
        for h in ex.handles():
            values[h.value] = h.default if h.flags & COND_ASSIGN_DEFAULT else ex.cond_values.get(h.value, 0)
        try:
            self._run(ex.snapshot, ex, st, values)
        finally:
            ex.cond_values = values

    def _run(self, snap: Snapshot, ex: Exec, st: Stream, values: dict[int, int]) -> None:
        for n in snap.order(self.rng):
            if n.enabled:
                self._run_node(n, ex, st, values)

    def _run_node(self, n: SNode, ex: Exec, st: Stream, values: dict[int, int]) -> None:
        t, p = n.type, n.params
        what = f"graph node {TYPE_NAMES.get(t, t)} (local id {n.local_id})"
        if t == MEMSET:
            self._memset(p, what, "IllegalAddress", node=True)
        elif t == MEMCPY:
            self._memcpy(p, what, "IllegalAddress")
        elif t == KERNEL:
            _kernels.run(self, p.kernel, p.grid, p.block, p.smem, p.args, None, values, n.device)
        elif t == HOST:
            p.fn(p.user)
        elif t == GRAPH:
            assert n.child is not None
            self._run(n.child, ex, st, values)
        elif t == EVENT_RECORD:
            ev = self.events.get(p.event)
            if ev is not None:
                ev.capture, ev.recorded, ev.time = None, True, _now_ms()
        elif t == MEM_ALLOC:
            if p.block.data is not None:
                raise SimError("IllegalAddress", f"{what}: the allocation at {p.dptr:#x} is allocated already")
            self.memory.map_graph(p.block, ex)
        elif t == MEM_FREE:
            b = self.memory.find(p.dptr)
            if b is None or b.kind != "graph" or b.data is None:
                raise SimError("IllegalAddress", f"{what}: {p.dptr:#x} is not allocated graph memory")
            self.memory.unmap_graph(b)
        elif t == CONDITIONAL:
            v = values.get(p.handle, 0)
            if p.kind == COND_IF:
                if v:
                    self._run(n.bodies[0], ex, st, values)
                elif p.size == 2:
                    self._run(n.bodies[1], ex, st, values)
            elif p.kind == COND_WHILE:
                while values.get(p.handle, 0):
                    self._run(n.bodies[0], ex, st, values)
            elif p.kind == COND_SWITCH and v < p.size:
                self._run(n.bodies[v], ex, st, values)
        # EMPTY and WAIT_EVENT do nothing (the simulator runs everything before it already)
