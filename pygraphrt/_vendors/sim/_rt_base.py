"""The simulator's runtime, what its sections share: state, lookups, capture rules, shared helpers.

:class:`RuntimeBase` holds all state of one simulated CUDA runtime (devices, memory, streams,
events, graphs and their nodes, executable graphs, libraries and kernels, captures) and what more
than one section of the runtime API needs: the lookups of handles, the capture rules (which calls
a capture forbids; work captured on a capturing stream or run now), copies and memsets (eager
calls, graph nodes and their launch) and the readers of node parameters (graph nodes, executable
graph nodes, kernel launches).

The sections of the runtime API are the ``_rt_*`` modules, each a mixin of :class:`RuntimeBase`
that imports only this module and the simulator's core (:mod:`._core`, :mod:`._state`,
:mod:`._graph`, :mod:`._memory`, :mod:`._kernels`), never another section; :class:`SimRuntime`
(:mod:`._api`) composes them.  A helper that several sections use lives here, not in one of them
(``tests/test_sim_sections.py`` holds both rules).
"""

from __future__ import annotations

import collections
import random
import threading
import time
from typing import Any, Callable, Iterator

from ..._bindings.cuda13 import ffi
from . import _kernels
from ._core import EdgeData, SimError, addr, enum, handle
from ._graph import (COND_IF, COND_SWITCH, COND_WHILE, CONDITIONAL, EMPTY, EVENT_RECORD, GRAPH, HOST, KERNEL, MEM_ALLOC,
                     MEM_FREE, MEMCPY, MEMSET, TYPE_NAMES, WAIT_EVENT, AllocP, ChildP, CondHandle, CondP, EventP, FreeP,
                     Graph, HostP, KernelP, MemcpyP, MemsetP, Node, Pitched, order, owned_graphs)
from ._memory import Memory, Pool
from ._state import (GLOBAL, MODE_NAMES, RELAXED, STATUS_ACTIVE, STATUS_INVALIDATED, Capture, Event, Exec, Stream,
                     captured_work)

INSTANTIATE = enum("enum cudaGraphInstantiateFlags")
AUTO_FREE = INSTANTIATE["cudaGraphInstantiateFlagAutoFreeOnLaunch"]
UPLOAD = INSTANTIATE["cudaGraphInstantiateFlagUpload"]
DEVICE_LAUNCH = INSTANTIATE["cudaGraphInstantiateFlagDeviceLaunch"]
NODE_PRIORITY = INSTANTIATE["cudaGraphInstantiateFlagUseNodePriority"]
ALL_INSTANTIATE = AUTO_FREE | UPLOAD | DEVICE_LAUNCH | NODE_PRIORITY

LAUNCH_ATTR = enum("enum cudaLaunchAttributeID")
MEMCPY_KIND = enum("enum cudaMemcpyKind")
OWNERSHIP = enum("enum cudaGraphChildGraphNodeOwnership")
HOST_TO_HOST, HOST_TO_DEVICE, DEVICE_TO_HOST, DEVICE_TO_DEVICE, DEFAULT_KIND = range(5)
COND_ASSIGN_DEFAULT = 1  # cudaGraphCondAssignDefault
EVENT_EXTERNAL = 1  # cudaEventRecordExternal / cudaEventWaitExternal
MAX_THREADS_PER_BLOCK = 1024
GREATEST_PRIORITY = -5


class _Thread(threading.local):
    """Per-thread state: capture interaction mode, current device, last error, per-thread streams."""

    def __init__(self) -> None:
        self.mode = GLOBAL
        self.device = 0
        self.last_error = 0
        self.failure: tuple[str, int, str, BaseException | None] | None = None
        self.ptds: dict[int, Stream] = {}


def _now_ms() -> float:
    return time.perf_counter() * 1000.0


def _dims(d: Any) -> tuple[int, int, int]:
    return (int(d.x), int(d.y), int(d.z))


class RuntimeBase:
    """The state of one simulated CUDA runtime and what its sections share (see the module)."""

    VERSION = 13050  # the cuda13 binding's headers: CUDA 13.5

    def __init__(self, devices: int = 1, total_memory: int = 16 << 30, order: str = "creation",
                 seed: int | None = None, peer_access: bool = True) -> None:
        if not 1 <= devices <= 16:
            raise ValueError(f"the simulator has 1 to 16 devices, not {devices}")
        self.device_count = devices
        self.memory = Memory(devices, total_memory)
        self.lock = threading.RLock()
        self.thread = _Thread()
        self.legacy = [Stream(d, blocking=True, legacy=True) for d in range(devices)]
        self.streams: dict[int, Stream] = {}
        self.events: dict[int, Event] = {}
        self.graphs: dict[int, Graph] = {}
        self.nodes: dict[int, Node] = {}
        self.execs: dict[int, Exec] = {}
        self.libraries: dict[int, _kernels.SimLibrary] = {}
        self.kernels: dict[int, _kernels.SimKernel] = {}
        self.cond_handles: dict[int, CondHandle] = {}
        self.captures: list[Capture] = []
        self.rng: random.Random | None = None
        self.set_order(order, seed)
        self.race_check = "off"  # "warn" / "raise": check each graph launch for races (see _races)
        # Calls a real runtime would have undefined behaviour for (SimError.undefined): (api, why),
        # the latest ones (see pygraphrt.sim.undefined_calls)
        self.undefined: collections.deque[tuple[str, str]] = collections.deque(maxlen=1000)
        # (device, peer) pairs whose peer access is enabled (the runtime's per-context record)
        self.peer_pairs: set[tuple[int, int]] = set()
        # (pool handle, device) -> cudaMemAccessFlags granted by cudaMemPoolSetAccess
        self.pool_access: dict[tuple[int, int], int] = {}
        # False: a machine whose devices cannot reach each other's memory (no NVLink or PCIe P2P:
        # cudaDeviceCanAccessPeer answers 0); copies between devices still work (staged)
        self.peer_capable = peer_access
        # pygraphrt.sim.failing_calls: asked before each C call the simulator serves; an error
        # name it returns makes that call fail with it, before it changes anything
        self.fail_call: Callable[[str], str | None] | None = None

    def set_order(self, mode: str, seed: int | None = None) -> None:
        """``"creation"``: ready nodes run in creation order; ``"random"``: a random valid order."""
        if mode not in ("creation", "random"):
            raise ValueError(f"order is 'creation' or 'random', not {mode!r}")
        self.rng = random.Random(seed) if mode == "random" else None

    # =========================================================================== lookups
    @property
    def cur_device(self) -> int:
        return self.thread.device

    def _stream(self, h: Any) -> Stream:
        v = addr(h)
        if v in (0, 1):  # cudaStreamLegacy
            return self.legacy[self.cur_device]
        if v == 2:  # cudaStreamPerThread: this thread's default stream (blocking)
            d = self.cur_device
            s = self.thread.ptds.get(d)
            if s is None:
                s = self.thread.ptds[d] = Stream(d, blocking=True)
            return s
        s = self.streams.get(v)
        if s is None:
            raise SimError("InvalidResourceHandle", f"{v:#x} is not a live stream", undefined=True)
        return s

    @staticmethod
    def _live(table: dict[int, Any], h: Any, code: str, what: str) -> Any:
        """The live object of handle ``h`` in ``table``; else ``code`` naming NULL or the handle."""
        v = addr(h)
        obj = table.get(v)
        if obj is None:
            raise SimError(code, f"NULL {what}" if v == 0 else f"{v:#x} is not a live {what}", undefined=v != 0)
        return obj

    def _event(self, h: Any) -> Event:
        ev: Event = self._live(self.events, h, "InvalidResourceHandle", "event")
        return ev

    def _graph(self, h: Any) -> Graph:
        g: Graph = self._live(self.graphs, h, "InvalidValue", "graph")
        return g

    def _node(self, h: Any) -> Node:
        n: Node = self._live(self.nodes, h, "InvalidValue", "graph node")
        return n

    def _exec(self, h: Any) -> Exec:
        e: Exec = self._live(self.execs, h, "InvalidValue", "executable graph")
        return e

    def _kernel(self, h: Any) -> _kernels.SimKernel:
        v = addr(h)
        k = self.kernels.get(v)
        if k is None:
            raise SimError("InvalidDeviceFunction", f"{v:#x} is not a kernel of a library loaded into the "
                                                    "simulator (host stubs and CUfunctions do not exist here)",
                           undefined=v != 0)
        self._loaded(k, "the kernel")
        return k

    @staticmethod
    def _loaded(k: _kernels.SimKernel, what: str) -> None:
        """A kernel whose library was unloaded is gone: the runtimes follow it and may crash (CUDA
        12.9 and 13.0 did, reading back a kernel node's parameters after cudaLibraryUnload; found
        by the generated API test on an H100), so it is refused and recorded as undefined."""
        if k.library.unloaded:
            raise SimError("InvalidDeviceFunction", f"{what} {k.name!r} belongs to a library that was unloaded",
                           undefined=True)

    def _kernels_loaded(self, graphs: Iterator[Any], what: str) -> None:
        for sub in graphs:
            for n in sub.nodes:
                if n.type == KERNEL:
                    self._loaded(n.params.kernel, f"{what}: the kernel node's kernel")

    def _pool(self, h: Any) -> Pool:
        v = addr(h)
        p = self.memory.pools.get(v)
        if p is None or p.destroyed:
            raise SimError("InvalidValue", f"{v:#x} is not a live memory pool", undefined=v != 0)
        return p

    def _device(self, d: int) -> int:
        if not 0 <= d < self.device_count:
            raise SimError("InvalidDevice", f"device {d}: the simulator has {self.device_count} device(s) "
                                            "(PYGRAPHRT_SIM_DEVICES)")
        return d

    @staticmethod
    def _out(p: Any, what: str) -> None:
        """Output pointers are checked before anything changes."""
        if p == ffi.NULL:
            raise SimError("InvalidValue", f"{what}: NULL output pointer")

    def _nodes_in(self, arr: Any, n: int, what: str) -> list[Node]:
        if n and arr == ffi.NULL:
            raise SimError("InvalidValue", f"{what}: NULL array for {n} nodes")
        return [self._node(arr[i]) for i in range(n)]

    def _register_graph(self, g: Graph) -> Graph:
        self.graphs[g.handle] = g
        return g

    def _register_node(self, n: Node) -> Node:
        self.nodes[n.handle] = n
        for g in owned_graphs(n):
            self._register_tree(g)
        return n

    def _register_tree(self, g: Graph) -> None:
        self.graphs[g.handle] = g
        for n in g.nodes:
            self._register_node(n)

    # -- forgetting a graph and its nodes (graphs destroyed, captures that end without a graph) ---
    def _destroy_graph(self, g: Graph) -> None:
        for sub in list(g.walk()):
            sub.destroyed = True
            self.graphs.pop(sub.handle, None)
            for n in sub.nodes:
                self._forget_node(n)

    def _forget_node(self, n: Node) -> None:
        self.nodes.pop(n.handle, None)
        if n.type == MEM_ALLOC:
            self.memory.unref_graph(n.params.block)

    # =========================================================================== capture rules
    def _prohibiting(self) -> list[Capture]:
        """Active captures that forbid this thread's potentially unsafe calls (its mode's rule)."""
        mode = self.thread.mode
        if mode == RELAXED:
            return []
        # an invalidated capture forbids them too until it is ended (CUDA 12.9 refuses an event
        # query during an invalidated global capture: differential test, regression
        # gpu-unsafe-call-after-invalidation)
        me = threading.get_ident()
        out = [c for c in self.captures if not c.ended and c.thread == me and c.mode != RELAXED]
        if mode == GLOBAL:
            out += [c for c in self.captures if not c.ended and c.thread != me and c.mode == GLOBAL]
        return out

    def _reaches(self, device: int, block: Any) -> bool:
        """Whether work on ``device`` (a kernel; an eager memset) may touch ``block`` (an allocation
        of another device) -- shared by the kernels' and the memory section's checks:
        cudaMalloc memory through peer access (cudaDeviceEnablePeerAccess, per context), pool
        memory through the pool's access (cudaMemPoolSetAccess; peer access does not reach it),
        graph memory through its allocation node's access descriptors."""
        if not self.peer_capable:
            return False
        none = enum("enum cudaMemAccessFlags")["cudaMemAccessFlagsProtNone"]
        if block.kind == "graph":
            return bool(block.access.get(device, none) != none)
        if block.kind == "async":
            return block.pool is not None and self.pool_access.get((block.pool.handle, device), none) != none
        return (device, block.device) in self.peer_pairs

    def _unsafe(self, what: str, device: int | None = None) -> None:
        """A potentially unsafe call (synchronous allocation, copy, synchronization or query).
        ``device``: a call that concerns one device only (cudaDeviceSynchronize), which only
        captures on that device's streams prohibit -- CUDA 13.0 on two H200s synchronizes device
        0 while a stream of device 1 captures, in either mode (the 2-device differential test,
        regression gpu-2dev-device-sync-beside-a-capture)."""
        caps = self._prohibiting()
        if device is not None:
            caps = [c for c in caps if any(s.device == device for s in c.streams)]
        if caps:
            for c in caps:
                c.invalidate(f"{what} during {c.describe()}")
            mode = MODE_NAMES[self.thread.mode]
            raise SimError("StreamCaptureUnsupported",
                           f"{what} is a potentially unsafe call, prohibited to this thread (interaction mode "
                           f"{mode}) by {', '.join(c.describe() for c in caps)}; the capture is invalidated")

    def _legacy_check(self, st: Stream, what: str, invalidate: bool = True) -> None:
        """The legacy stream may not be used while a blocking stream of its device captures."""
        if not st.legacy:
            return
        caps = [c for c in self.captures if not c.ended and c.status == STATUS_ACTIVE
                and any(s.blocking and s.device == st.device for s in c.streams)]
        if caps:
            if invalidate:
                for c in caps:
                    c.invalidate(f"{what} on the legacy stream during {c.describe()}")
            raise SimError("StreamCaptureImplicit",
                           f"{what} on the legacy stream would make an implicit dependency on "
                           f"{', '.join(c.describe() for c in caps)} (a stream created without "
                           "cudaStreamNonBlocking)" + ("; the capture is invalidated" if invalidate else ""))

    def _sync_stream_check(self, st: Stream, what: str) -> None:
        cap = st.capture
        if cap is not None:
            if cap.status == STATUS_INVALIDATED and what != "cudaStreamSynchronize":
                raise SimError("StreamCaptureInvalidated", f"{what}: the stream's {cap.describe()} was "
                                                           f"invalidated ({cap.reason})")
            # synchronizing a stream whose capture is invalidated but not ended: CUDA 12.9 still
            # answers StreamCaptureUnsupported (the differential test, regression
            # gpu-sync-after-invalidation)
            cap.invalidate(f"{what} of a capturing stream")
            raise SimError("StreamCaptureUnsupported", f"{what} of a stream taking part in {cap.describe()} is "
                                                       "not permitted; the capture is invalidated")
        self._legacy_check(st, what)
        self._unsafe(what)

    def _after_sync(self, device: int) -> None:
        """A synchronization: pools release what exceeds their release threshold."""
        for p in self.memory.pools.values():
            if p.device == device:
                p.release_to_threshold()

    # -- work on a stream ----------------------------------------------------------------------
    def _refuse_if_invalidated(self, st: Stream, what: str) -> None:
        """Work on a stream whose capture is invalidated is refused before its arguments are
        checked (CUDA 13.0/13.5: a memcpy past the end there is StreamCaptureInvalidated, not
        InvalidValue -- differential test, regression gpu-invalidated-capture-refuses-first)."""
        cap = st.capture
        if cap is not None and cap.status != STATUS_ACTIVE:
            raise SimError("StreamCaptureInvalidated", f"{what}: {cap.describe()} was invalidated "
                                                       f"({cap.reason}); end it first")

    def _submit(self, st: Stream, what: str, node: Callable[[], tuple[int, Any]],
                run: Callable[[], None], edges: Callable[[list[tuple[Node, EdgeData]]], list[EdgeData]] | None = None
                ) -> Node | None:
        """Capture ``node()`` (type, params) on a capturing stream, else ``run()`` it now."""
        cap = st.capture
        if cap is not None:
            self._refuse_if_invalidated(st, what)
            type_, params = node()
            deps = st.deps
            data = edges(deps) if edges is not None else [e for _, e in deps]
            self._body_rules(cap.graph, type_, params, st.device, what)
            # a captured node runs in the context of the stream it was captured on
            n = cap.graph.add_node(type_, params, [d for d, _ in deps], data, device=st.device)
            self._register_node(n)
            captured_work(st, n)
            return n
        self._legacy_check(st, what)
        run()
        return None

    # =========================================================================== copies and memsets
    # (the memory section's calls, memset and memcpy nodes (graphs, update) and their launch)
    def _copy(self, dst: int, src: int, n: int, kind: int, what: str, error: str = "InvalidValue") -> None:
        if n == 0:
            return
        d = self.memory.view(dst, n, f"{what} destination", error)
        s = self.memory.view(src, n, f"{what} source", error)
        d[:] = bytes(s)

    def _check_kind(self, dst: int, src: int, kind: int, what: str) -> None:
        if not 0 <= kind <= 4:
            raise SimError("InvalidMemcpyDirection", f"{what}: {kind} is not a cudaMemcpyKind")
        if kind == DEFAULT_KIND:
            return
        dev_src, dev_dst = self.memory.is_device(src), self.memory.is_device(dst)
        want_src = kind in (DEVICE_TO_HOST, DEVICE_TO_DEVICE)
        want_dst = kind in (HOST_TO_DEVICE, DEVICE_TO_DEVICE)
        if (dev_src, dev_dst) != (want_src, want_dst):
            raise SimError("InvalidValue", f"{what}: the pointers do not match the copy direction {kind}")

    def _memset(self, p: MemsetP, what: str, error: str = "InvalidValue", node: bool = False) -> None:
        if not p.width or not p.height:
            return
        es = p.element_size
        pattern = (p.value & ((1 << (8 * es)) - 1)).to_bytes(es, "little") * p.width
        if p.height == 1:
            self.memory.view(p.dst, len(pattern), what, error, node)[:] = pattern
            return
        for row in range(p.height):
            self.memory.view(p.dst + row * p.pitch, len(pattern), what, error, node)[:] = pattern

    def _check_memset(self, p: MemsetP, what: str, bounds: bool = True) -> None:
        if p.element_size not in (1, 2, 4):
            raise SimError("InvalidValue", f"{what}: element size {p.element_size} is not 1, 2 or 4")
        if not self.memory.is_device(p.dst):
            raise SimError("InvalidValue", f"{what}: {p.dst:#x} is not device memory")
        if p.dst % p.element_size:  # CUDA refuses a destination not aligned to the element (differential test)
            raise SimError("InvalidValue", f"{what}: {p.dst:#x} is not aligned to the element size {p.element_size}")
        row = p.width * p.element_size
        if p.height > 1 and p.pitch < row:
            raise SimError("InvalidValue", f"{what}: pitch {p.pitch} is less than a row ({row} bytes)")
        if p.span:
            self.memory.check_range(p.dst, p.span if bounds else 1, what)

    def _read_memset(self, p: Any, what: str) -> MemsetP:
        m = MemsetP(addr(p.dst), int(p.pitch), int(p.value), int(p.elementSize), int(p.width), int(p.height))
        self._check_memset(m, what)
        return m

    def _read_memcpy(self, p: Any, what: str) -> MemcpyP:
        if p.srcArray != ffi.NULL or p.dstArray != ffi.NULL:
            raise SimError("NotSupported", f"{what}: CUDA arrays are not simulated")
        m = MemcpyP(Pitched(addr(p.srcPtr.ptr), int(p.srcPtr.pitch), int(p.srcPtr.xsize), int(p.srcPtr.ysize)),
                    (int(p.srcPos.x), int(p.srcPos.y), int(p.srcPos.z)),
                    Pitched(addr(p.dstPtr.ptr), int(p.dstPtr.pitch), int(p.dstPtr.xsize), int(p.dstPtr.ysize)),
                    (int(p.dstPos.x), int(p.dstPos.y), int(p.dstPos.z)),
                    (int(p.extent.width), int(p.extent.height), int(p.extent.depth)), int(p.kind))
        self._check_memcpy(m, what)
        return m

    def _memcpy_spans(self, m: MemcpyP) -> tuple[tuple[int, int], tuple[int, int]]:
        """(start, bytes) of the source and destination ranges a copy touches."""
        w, h, d = m.extent
        out = []
        for ptr, pos in ((m.src, m.src_pos), (m.dst, m.dst_pos)):
            pitch = ptr.pitch if (h > 1 or d > 1 or pos[1] or pos[2]) else max(ptr.pitch, w)
            slab = pitch * max(ptr.ysize, 1)
            start = ptr.ptr + pos[2] * slab + pos[1] * pitch + pos[0]
            span = (d - 1) * slab + (h - 1) * pitch + w if w and h and d else 0
            out.append((start, span))
        return out[0], out[1]

    def _check_memcpy(self, m: MemcpyP, what: str) -> None:
        w, h, d = m.extent
        if h > 1 or d > 1:
            for ptr in (m.src, m.dst):
                if ptr.pitch < w:
                    raise SimError("InvalidPitchValue", f"{what}: pitch {ptr.pitch} is less than the width {w}")
        (s, sn), (t, tn) = self._memcpy_spans(m)
        self._check_kind(t, s, m.kind, what)
        if sn:
            self.memory.check_range(s, sn, f"{what} source")
            self.memory.check_range(t, tn, f"{what} destination")

    def _memcpy(self, m: MemcpyP, what: str, error: str = "InvalidValue") -> None:
        w, h, d = m.extent
        if not (w and h and d):
            return
        if m.is_1d:
            self._copy(m.dst.ptr, m.src.ptr, w, m.kind, what, error)
            return
        for z in range(d):
            for y in range(h):
                so = (m.src_pos[2] + z) * m.src.pitch * m.src.ysize + (m.src_pos[1] + y) * m.src.pitch + m.src_pos[0]
                do = (m.dst_pos[2] + z) * m.dst.pitch * m.dst.ysize + (m.dst_pos[1] + y) * m.dst.pitch + m.dst_pos[0]
                self._copy(m.dst.ptr + do, m.src.ptr + so, w, m.kind, what, error)

    def _one_d(self, dst: Any, src: Any, count: int, kind: int, what: str) -> MemcpyP:
        m = MemcpyP.one_d(addr(dst), addr(src), int(count), int(kind))
        self._check_memcpy(m, what)
        return m

    # =========================================================================== node parameters
    # (read from the runtime's structs for graph nodes, executable graph nodes (update) and, for
    # kernels, launches on a stream (kernels))
    def _read_host(self, p: Any, what: str, sync_mode: int = 0) -> HostP:
        if p.fn == ffi.NULL:
            raise SimError("InvalidValue", f"{what}: NULL host function")
        if sync_mode not in (0, 1):
            raise SimError("InvalidValue", f"{what}: host task sync mode {sync_mode}")
        return HostP(p.fn, p.userData, sync_mode)

    # -- kernels: launch configuration and arguments -----------------------------------------
    def _check_launch(self, k: _kernels.SimKernel, grid: tuple[int, int, int], block: tuple[int, int, int],
                      smem: int, what: str, refusal: str = "InvalidConfiguration") -> None:
        # a launch with a zero or too large dimension is a bad configuration; kernel-node
        # parameters with one are an invalid value (what CUDA 12.9 / 13.x return: conformance
        # kernels.node.*_zero*, kernels.dims.*_too_large)
        if min(grid) < 1 or min(block) < 1:
            raise SimError(refusal, f"{what}: grid {grid} / block {block} has a zero dimension")
        if block[0] * block[1] * block[2] > MAX_THREADS_PER_BLOCK or block[0] > 1024 or block[1] > 1024 \
                or block[2] > 64:
            raise SimError(refusal, f"{what}: block {block} exceeds the device's limits")
        if grid[0] >= 1 << 31 or grid[1] > 65535 or grid[2] > 65535:
            raise SimError(refusal, f"{what}: grid {grid} exceeds the device's limits")
        if smem > k.max_dynamic_smem:
            raise SimError("InvalidValue", f"{what}: {smem} bytes of dynamic shared memory exceed the kernel's "
                                           f"{k.max_dynamic_smem} (cudaFuncSetAttribute raises the limit)")

    def _read_args(self, k: _kernels.SimKernel, argv: Any, extra: Any, what: str) -> tuple[bytes, ...]:
        if extra != ffi.NULL:
            raise SimError("NotSupported", f"{what}: the 'extra' argument form is not simulated")
        layout = k.layout()
        if layout is None:
            raise SimError("NotSupported", f"{what}: the simulator does not know the parameters of kernel "
                                           f"{k.name!r}; pass signature= to pygraphrt.sim.register_kernel")
        if not len(layout):
            return ()
        if argv == ffi.NULL:
            raise SimError("InvalidValue", f"{what}: kernel {k.name!r} takes {len(layout)} arguments; got none")
        argv = ffi.cast("void **", argv)
        out = []
        for i, p in enumerate(layout.params):
            if argv[i] == ffi.NULL:
                raise SimError("InvalidValue", f"{what}: argument {i} of kernel {k.name!r} is a NULL pointer")
            out.append(bytes(ffi.buffer(ffi.cast("char *", argv[i]), p.size)))
        return tuple(out)

    def _read_kernel(self, p: Any, what: str, v2: bool = False) -> KernelP:
        func = p.func
        if v2 and p.kern != ffi.NULL:
            func = p.kern
        k = self._kernel(func)
        grid, block = _dims(p.gridDim), _dims(p.blockDim)
        smem = int(p.sharedMemBytes)
        self._check_launch(k, grid, block, smem, what, refusal="InvalidValue")
        return KernelP(k, grid, block, smem, self._read_args(k, p.kernelParams, p.extra, what))

    # -- child graphs, memory nodes, conditional nodes, the generic form -------------------
    def _clone_graph(self, g: Graph, what: str) -> Graph:
        """A copy of ``g`` (registered), with ``clone_map`` from g's nodes to the copy's."""
        if g.has_memory_nodes():
            raise SimError("NotSupported", f"{what}: a graph with memory nodes cannot be cloned")
        if g.has_conditional_nodes():
            raise SimError("NotSupported", f"{what}: a graph with conditional nodes cannot be cloned")
        c = Graph()
        c.clone_of = g.handle
        mapping: dict[int, Node] = {}
        for n in g.nodes:
            params = n.params
            if n.type == GRAPH:
                params = ChildP(self._clone_graph(n.params.graph, what))
            m = c.add_node(n.type, params, [mapping[d.handle] for d, _ in n.deps], [e for _, e in n.deps],
                           device=n.device)
            if n.type == GRAPH:
                params.graph.owner = m
            mapping[n.handle] = m
        c.clone_map = mapping
        for h in g.cond_handles:
            c.cond_handles.append(h)
        self._register_tree(c)
        return c

    @staticmethod
    def _conditional_owner(g: Graph) -> Node | None:
        """The conditional node whose body ``g`` is (directly, or through child graphs and nested
        bodies: the outermost one), else None."""
        found = None
        owner = g.owner
        while owner is not None:
            if owner.type == CONDITIONAL:
                found = owner
            owner = owner.graph.owner
        return found

    def _body_rules(self, g: Graph, type_: int, params: Any, device: int, what: str) -> None:
        """The rules of a conditional node's bodies (cudaConditionalNodeParams, CUDA Runtime API
        13.x: "All kernels, including kernels in nested conditionals or child graphs at any
        level, must belong to the same device context", and the allowed node types leave out
        event record and event wait nodes; the driver's CUDA_CONDITIONAL_NODE_PARAMS: the
        node's ctx "must match context used to create the handle and all body nodes")."""
        cond = self._conditional_owner(g)
        if cond is None:
            return
        if type_ in (EVENT_RECORD, WAIT_EVENT):
            raise SimError("InvalidValue", f"{what}: a conditional node's body holds no event record or "
                                           "event wait nodes")
        kernels: list[int] = [device] if type_ == KERNEL else []
        if type_ == GRAPH:
            kernels = [n.device for sub in params.graph.walk() for n in sub.nodes if n.type == KERNEL]
            if any(n.type in (EVENT_RECORD, WAIT_EVENT) for sub in params.graph.walk() for n in sub.nodes):
                raise SimError("InvalidValue", f"{what}: a conditional node's body holds no event record or "
                                               "event wait nodes (the child graph has one)")
        for d in kernels:
            if d != cond.device:
                raise SimError("InvalidValue", f"{what}: a kernel on device {d} in the body of a conditional node "
                                               f"of device {cond.device}: all kernels of a conditional node's "
                                               "bodies belong to one device context")

    def _memory_node_allowed(self, g: Graph, what: str) -> None:
        if g.owner is not None and g.owner.type == GRAPH:
            raise SimError("NotSupported", f"{what}: memory nodes cannot be added to a child graph node's graph")

    def _read_alloc(self, p: Any, what: str) -> AllocP:
        props = p.poolProps
        if props.allocType != enum("enum cudaMemAllocationType")["cudaMemAllocationTypePinned"]:
            raise SimError("InvalidValue", f"{what}: graph memory is pinned device memory (allocType)")
        if props.location.type != enum("enum cudaMemLocationType")["cudaMemLocationTypeDevice"]:
            raise SimError("InvalidValue", f"{what}: graph memory lives on a device (location.type)")
        if not 0 <= int(props.location.id) < self.device_count:
            raise SimError("InvalidValue", f"{what}: device {int(props.location.id)} does not exist (the simulator "
                                           f"has {self.device_count}: PYGRAPHRT_SIM_DEVICES)")
        device = int(props.location.id)
        size = int(p.bytesize)
        if size == 0:
            raise SimError("InvalidValue", f"{what}: zero-byte allocation")
        access = b""
        if p.accessDescCount:
            access = bytes(ffi.buffer(p.accessDescs, ffi.sizeof("struct cudaMemAccessDesc") * p.accessDescCount))
        grants = {}
        if p.accessDescCount:
            if p.accessDescs == ffi.NULL:
                raise SimError("InvalidValue", f"{what}: NULL access descriptors for {int(p.accessDescCount)}")
            for i in range(int(p.accessDescCount)):
                desc = p.accessDescs[i]
                peer = int(desc.location.id)
                if int(desc.location.type) != enum("enum cudaMemLocationType")["cudaMemLocationTypeDevice"] \
                        or not 0 <= peer < self.device_count:
                    raise SimError("InvalidValue", f"{what}: access descriptor {i} names no simulated device")
                grants[peer] = int(desc.flags)
        block = self.memory.reserve_graph(device, size)
        block.access = grants  # the devices the allocation is mapped for when its node runs
        self.memory.ref_graph(block)
        return AllocP(block, size, device, bytes(ffi.buffer(ffi.addressof(props))), access)

    def _read_free(self, g: Graph, dptr: Any, what: str) -> FreeP:
        v = addr(dptr)
        b = self.memory.find(v)
        if b is None or b.kind != "graph" or b.base != v:
            raise SimError("InvalidValue", f"{what}: {v:#x} is not the address of a graph allocation")
        if any(n.type == MEM_FREE and n.params.dptr == v for n in g.nodes):
            raise SimError("InvalidValue", f"{what}: the graph frees the allocation at {v:#x} already")
        return FreeP(v)

    def _read_conditional(self, g: Graph, p: Any, what: str) -> CondP:
        h = self.cond_handles.get(int(p.handle))
        if h is None or h.graph is not g:
            raise SimError("InvalidValue", f"{what}: the conditional handle was not created on this graph")
        kind, size = int(p.type), int(p.size)
        ok = {COND_IF: size in (1, 2), COND_WHILE: size == 1, COND_SWITCH: size >= 1}
        if kind not in ok or not ok[kind]:
            raise SimError("InvalidValue", f"{what}: conditional type {kind} with {size} bodies")
        bodies = tuple(Graph() for _ in range(size))
        arr = ffi.new("cudaGraph_t[]", [handle("cudaGraph_t", b.handle) for b in bodies])
        return CondP(h.value, kind, size, bodies, arr)

    def _read_generic(self, g: Graph | None, p: Any, what: str) -> tuple[int, Any]:
        t = int(p.type)
        if t == EMPTY:
            return t, None
        if t == MEMSET:
            return t, self._read_memset(p.memset, what)
        if t == MEMCPY:
            return t, self._read_memcpy(p.memcpy.copyParams, what)
        if t == HOST:
            return t, self._read_host(p.host, what, int(p.host.syncMode))
        if t == KERNEL:
            return t, self._read_kernel(p.kernel, what, v2=True)
        if t in (EVENT_RECORD, WAIT_EVENT):
            return t, EventP(self._event((p.eventRecord if t == EVENT_RECORD else p.eventWait).event).handle)
        if t == GRAPH:
            child = self._graph(p.graph.graph)
            own = int(p.graph.ownership)
            if own == OWNERSHIP["cudaGraphChildGraphOwnershipMove"]:
                if child.owner is not None or child.capture is not None:
                    raise SimError("InvalidValue", f"{what}: the child graph is owned elsewhere or being captured")
                return t, ChildP(child)
            if own != OWNERSHIP["cudaGraphChildGraphOwnershipClone"]:
                raise SimError("InvalidValue", f"{what}: child graph ownership {own}")
            if child is g:
                raise SimError("InvalidValue", f"{what}: a graph cannot contain itself")
            return t, ChildP(self._clone_graph(child, what))
        if t in (MEM_ALLOC, MEM_FREE):
            if g is None:
                raise SimError("NotSupported", f"{what}: the parameters of memory nodes cannot be changed")
            self._memory_node_allowed(g, what)
            if t == MEM_ALLOC:
                return t, self._read_alloc(p.alloc, what)
            return t, self._read_free(g, p.free.dptr, what)
        if t == CONDITIONAL:
            if g is None:
                raise SimError("InvalidValue", f"{what}: conditional nodes cannot be changed")
            return t, self._read_conditional(g, p.conditional, what)
        raise SimError("NotSupported", f"{what}: node type {TYPE_NAMES.get(t, t)} is not simulated")
