"""The simulator's runtime: every CUDA 13 runtime function the layer calls, in Python.

Each public method named like a C function (``cudaGraphCreate``) takes the arguments the C
function takes, as cffi objects typed by the ``cuda13`` binding (:mod:`._lib` makes each a
C function pointer of the binding's own prototype), writes its outputs through the given
pointers and returns nothing or raises :class:`SimError` (the ``cudaError_t`` it returns).

Semantics follow the CUDA 13 runtime as documented (and, where the documentation is silent,
as pygraphrt's GPU tests and conformance cases observed it): see :mod:`._state` for streams,
events and capture, :mod:`._memory` for memory, :mod:`._graph` for graphs.
"""

from __future__ import annotations

import collections
import random
import threading
import time
from typing import Any, Callable, Iterator

from ..._bindings.cuda13 import ffi
from . import _kernels
from ._core import (DEFAULT_EDGE, PORT_PROGRAMMATIC, TYPE_PROGRAMMATIC, EdgeData, SimError, addr, enum,
                    handle, new_handle, read_edges, write_edge)
from ._graph import (COND_IF, COND_SWITCH, COND_WHILE, CONDITIONAL, EMPTY, EVENT_RECORD, GRAPH, HOST,
                     KERNEL, MEM_ALLOC, MEM_FREE, MEMCPY, MEMSET, TYPE_NAMES, WAIT_EVENT, AllocP, ChildP,
                     CondHandle, CondP, EventP, FreeP, Graph, HostP, KernelP, MemcpyP, MemsetP, Node,
                     Pitched, SNode, Snapshot, check_edge, order, owned_graphs)
from ._memory import Memory, Pool
from ._state import (GLOBAL, MODE_NAMES, RELAXED, STATUS_ACTIVE, STATUS_INVALIDATED, STATUS_NONE, Capture,
                     Event, Exec, Stream, captured_work, merge_deps, unjoined)

INSTANTIATE = enum("enum cudaGraphInstantiateFlags")
AUTO_FREE = INSTANTIATE["cudaGraphInstantiateFlagAutoFreeOnLaunch"]
UPLOAD = INSTANTIATE["cudaGraphInstantiateFlagUpload"]
DEVICE_LAUNCH = INSTANTIATE["cudaGraphInstantiateFlagDeviceLaunch"]
NODE_PRIORITY = INSTANTIATE["cudaGraphInstantiateFlagUseNodePriority"]
ALL_INSTANTIATE = AUTO_FREE | UPLOAD | DEVICE_LAUNCH | NODE_PRIORITY

UPDATE = enum("enum cudaGraphExecUpdateResult")
GRAPH_MEM = enum("enum cudaGraphMemAttributeType")
POOL_ATTR = enum("enum cudaMemPoolAttr")
LAUNCH_ATTR = enum("enum cudaLaunchAttributeID")
MEMCPY_KIND = enum("enum cudaMemcpyKind")
OWNERSHIP = enum("enum cudaGraphChildGraphNodeOwnership")
INSTANTIATE_RESULT = enum("enum cudaGraphInstantiateResult")
HOST_TO_HOST, HOST_TO_DEVICE, DEVICE_TO_HOST, DEVICE_TO_DEVICE, DEFAULT_KIND = range(5)
COND_ASSIGN_DEFAULT = 1  # cudaGraphCondAssignDefault
STREAM_NON_BLOCKING = 1
EVENT_DISABLE_TIMING = 2
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


def _first_existing(a: list[Any], b: list[Any]) -> int:
    """The index of the first edge (a[i] -> b[i]) that is in its graph already or was named
    before in the same call, or len(a)."""
    seen: set[tuple[int, int]] = set()
    for i, (x, y) in enumerate(zip(a, b)):
        if (id(x), id(y)) in seen or any(o is y for o, _ in x.outs):
            return i
        seen.add((id(x), id(y)))
    return len(a)


def _dims(d: Any) -> tuple[int, int, int]:
    return (int(d.x), int(d.y), int(d.z))


class SimRuntime:
    """All state of one simulated CUDA runtime (one per ``sim`` backend)."""

    VERSION = 13050  # the cuda13 binding's headers: CUDA 13.5

    def __init__(self, devices: int = 1, total_memory: int = 16 << 30, order: str = "creation",
                 seed: int | None = None) -> None:
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

    def _unsafe(self, what: str) -> None:
        """A potentially unsafe call (synchronous allocation, copy, synchronization or query)."""
        caps = self._prohibiting()
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
            n = cap.graph.add_node(type_, params, [d for d, _ in deps], data)
            self._register_node(n)
            captured_work(st, n)
            return n
        self._legacy_check(st, what)
        run()
        return None

    # =========================================================================== device, errors
    def cudaRuntimeGetVersion(self, out: Any) -> None:
        out[0] = self.VERSION

    def cudaDriverGetVersion(self, out: Any) -> None:
        out[0] = self.VERSION

    def cudaGetDeviceCount(self, out: Any) -> None:
        out[0] = self.device_count

    def cudaGetDevice(self, out: Any) -> None:
        out[0] = self.cur_device

    def cudaSetDevice(self, d: int) -> None:
        self.thread.device = self._device(d)

    def cudaGetDeviceProperties(self, prop: Any, d: int) -> None:
        self._device(d)
        ffi.memmove(prop, bytes(ffi.sizeof("struct cudaDeviceProp")), ffi.sizeof("struct cudaDeviceProp"))
        name = f"pygraphrt simulator (CPU) #{d}".encode()
        ffi.memmove(prop.name, name, len(name))
        prop.totalGlobalMem = self.memory.total_memory
        prop.sharedMemPerBlock = 48 * 1024
        prop.regsPerBlock = 65536
        prop.warpSize = 32
        prop.memPitch = 1 << 31
        prop.maxThreadsPerBlock = MAX_THREADS_PER_BLOCK
        prop.maxThreadsDim = [1024, 1024, 64]
        prop.maxGridSize = [(1 << 31) - 1, 65535, 65535]
        prop.totalConstMem = 64 * 1024
        prop.major, prop.minor = 9, 0
        prop.multiProcessorCount = 1
        prop.concurrentKernels = 1
        prop.unifiedAddressing = 1
        prop.managedMemory = 0
        prop.maxThreadsPerMultiProcessor = 2048
        prop.sharedMemPerMultiprocessor = 228 * 1024
        prop.sharedMemPerBlockOptin = 227 * 1024
        prop.regsPerMultiprocessor = 65536
        prop.asyncEngineCount = 1
        prop.pciDeviceID = d

    def cudaDeviceGetStreamPriorityRange(self, least: Any, greatest: Any) -> None:
        if least != ffi.NULL:
            least[0] = 0
        if greatest != ffi.NULL:
            greatest[0] = GREATEST_PRIORITY

    def cudaMemGetInfo(self, free: Any, total: Any) -> None:
        d = self.cur_device
        free[0] = self.memory.total_memory - self.memory.in_use(d)
        total[0] = self.memory.total_memory

    def cudaDeviceSynchronize(self) -> None:
        d = self.cur_device
        # an invalidated capture counts until it is ended: CUDA still refuses (found by the
        # cuda-vs-sim differential test, regression seed-capture-fork-join)
        caps = [c for c in self.captures if not c.ended and any(s.device == d for s in c.streams)]
        if caps:
            for c in caps:
                c.invalidate("cudaDeviceSynchronize during the capture")
            raise SimError("StreamCaptureUnsupported", "synchronizing the device is not permitted while "
                           f"{', '.join(c.describe() for c in caps)} is in progress on it; invalidated")
        self._unsafe("cudaDeviceSynchronize")
        self._after_sync(d)

    # =========================================================================== memory
    def cudaMalloc(self, out: Any, size: int) -> None:
        self._out(out, "cudaMalloc")
        self._unsafe("cudaMalloc")
        out[0] = ffi.cast("void *", self.memory.malloc(self.cur_device, size).base)

    def cudaFree(self, p: Any) -> None:
        v = addr(p)
        if v == 0:
            return
        self._unsafe("cudaFree")
        b = self.memory.find(v)
        if b is None or b.base != v or (b.kind == "graph" and b.data is None):
            raise SimError("InvalidValue", f"cudaFree: {v:#x} is not the start of a live allocation")
        self._pool_outlived(b, "cudaFree")
        self.memory.free(b)

    def _pool_outlived(self, b: Any, what: str) -> None:
        """Freeing memory whose pool was destroyed is documented as allowed (the pool goes once
        its memory is freed), but it corrupted the heap under CUDA 12.9 and 13.0 on an H100
        (the generated API test): recorded as undefined, not refused."""
        if b.kind == "async" and b.pool is not None and b.pool.destroyed:
            self.undefined.append((what, f"{b.base:#x} comes from pool {b.pool.handle:#x}, destroyed before "
                                         "this free (a real runtime's heap is corrupted)"))

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

    def cudaMemcpy(self, dst: Any, src: Any, count: int, kind: int) -> None:
        d, s = addr(dst), addr(src)
        self._check_kind(d, s, kind, "cudaMemcpy")
        self._legacy_check(self.legacy[self.cur_device], "cudaMemcpy")
        self._unsafe("cudaMemcpy")
        self._copy(d, s, count, kind, "cudaMemcpy")

    def cudaMemcpyAsync(self, dst: Any, src: Any, count: int, kind: int, stream: Any) -> None:
        d, s = addr(dst), addr(src)
        st = self._stream(stream)
        self._check_kind(d, s, kind, "cudaMemcpyAsync")
        if not count and st.capture is not None:
            # nothing to copy: no node, and no error even in an invalidated capture (CUDA 12.9:
            # differential test, regression gpu-zero-copy-in-invalidated-capture)
            return
        self._refuse_if_invalidated(st, "cudaMemcpyAsync")
        if count:
            self.memory.check_range(d, count, "cudaMemcpyAsync destination")
            self.memory.check_range(s, count, "cudaMemcpyAsync source")
        self._submit(st, "cudaMemcpyAsync", lambda: (MEMCPY, MemcpyP.one_d(d, s, count, kind)),
                     lambda: self._copy(d, s, count, kind, "cudaMemcpyAsync"))

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

    def cudaMemsetAsync(self, dst: Any, value: int, count: int, stream: Any) -> None:
        st = self._stream(stream)
        p = MemsetP(addr(dst), count, value & 0xFF, 1, count, 1)
        if count:  # a zero-byte memset returns before the capture is looked at, as a copy does
            self._refuse_if_invalidated(st, "cudaMemsetAsync")
        # CUDA checks that an eager memset stays inside its allocation, not a captured one
        # (CUDA 12.9, 13.0 and 13.5 capture a memset running 1 byte past a 100-byte buffer:
        # differential test, regression gpu-captured-memset-unchecked-bounds); the node then
        # writes into the allocation's padding when it runs
        self._check_memset(p, "cudaMemsetAsync", bounds=st.capture is None)
        if not count and st.capture is not None:
            return  # nothing to set: CUDA 13.0 adds no node to the capture (differential test)
        self._submit(st, "cudaMemsetAsync", lambda: (MEMSET, p), lambda: self._memset(p, "cudaMemsetAsync"))

    def cudaMemset(self, dst: Any, value: int, count: int) -> None:
        p = MemsetP(addr(dst), count, value & 0xFF, 1, count, 1)
        self._check_memset(p, "cudaMemset")
        self._legacy_check(self.legacy[self.cur_device], "cudaMemset")
        self._unsafe("cudaMemset")
        self._memset(p, "cudaMemset")

    # -- stream-ordered memory -------------------------------------------------------------------
    def cudaMemPoolCreate(self, out: Any, props: Any) -> None:
        if props.allocType != enum("enum cudaMemAllocationType")["cudaMemAllocationTypePinned"]:
            raise SimError("InvalidValue", "the simulator's pools hold pinned device memory (allocType)")
        if props.location.type != enum("enum cudaMemLocationType")["cudaMemLocationTypeDevice"]:
            raise SimError("InvalidValue", "the simulator's pools live on a device (location.type)")
        if not 0 <= props.location.id < self.device_count:  # CUDA: InvalidValue here, not InvalidDevice
            raise SimError("InvalidValue", f"location.id {props.location.id}: the simulator has "
                                           f"{self.device_count} device(s) (PYGRAPHRT_SIM_DEVICES)")
        p = self.memory.new_pool(props.location.id, int(props.maxSize))
        out[0] = handle("cudaMemPool_t", p.handle)

    def cudaMemPoolDestroy(self, pool: Any) -> None:
        p = self._pool(pool)
        if p.default:
            raise SimError("InvalidValue", "a device's default pool cannot be destroyed")
        p.destroyed = True
        cur = self.memory.current_pools
        if cur[p.device] is p:
            cur[p.device] = self.memory.default_pools[p.device]

    def cudaDeviceGetDefaultMemPool(self, out: Any, d: int) -> None:
        out[0] = handle("cudaMemPool_t", self.memory.default_pools[self._device(d)].handle)

    def cudaDeviceGetMemPool(self, out: Any, d: int) -> None:
        out[0] = handle("cudaMemPool_t", self.memory.current_pools[self._device(d)].handle)

    def cudaDeviceSetMemPool(self, d: int, pool: Any) -> None:
        p = self._pool(pool)
        if p.device != self._device(d):
            raise SimError("InvalidValue", f"the pool lives on device {p.device}, not {d}")
        self.memory.current_pools[d] = p

    def cudaMemPoolGetAttribute(self, pool: Any, attr: int, value: Any) -> None:
        p = self._pool(pool)
        A = POOL_ATTR
        if attr in (A["cudaMemPoolReuseFollowEventDependencies"], A["cudaMemPoolReuseAllowOpportunistic"],
                    A["cudaMemPoolReuseAllowInternalDependencies"]):
            ffi.cast("int *", value)[0] = p.reuse[attr]
            return
        values = {A["cudaMemPoolAttrReleaseThreshold"]: p.threshold,
                  A["cudaMemPoolAttrReservedMemCurrent"]: p.reserved,
                  A["cudaMemPoolAttrReservedMemHigh"]: p.reserved_high,
                  A["cudaMemPoolAttrUsedMemCurrent"]: p.used, A["cudaMemPoolAttrUsedMemHigh"]: p.used_high,
                  A["cudaMemPoolAttrMaxPoolSize"]: p.max_size}
        if attr not in values:
            raise SimError("InvalidValue", f"memory pool attribute {attr} is not simulated")
        ffi.cast("unsigned long long *", value)[0] = values[attr]

    def cudaMemPoolSetAttribute(self, pool: Any, attr: int, value: Any) -> None:
        p = self._pool(pool)
        A = POOL_ATTR
        if attr in p.reuse:
            p.reuse[attr] = 1 if ffi.cast("int *", value)[0] else 0
        elif attr == A["cudaMemPoolAttrReleaseThreshold"]:
            p.threshold = int(ffi.cast("unsigned long long *", value)[0])
        elif attr in (A["cudaMemPoolAttrReservedMemHigh"], A["cudaMemPoolAttrUsedMemHigh"]):
            if ffi.cast("unsigned long long *", value)[0] != 0:
                raise SimError("InvalidValue", "a high watermark can only be reset to 0")
            if attr == A["cudaMemPoolAttrUsedMemHigh"]:
                p.used_high = p.used
            else:
                p.reserved_high = p.reserved
        else:
            raise SimError("InvalidValue", f"memory pool attribute {attr} cannot be set")

    def cudaMemPoolTrimTo(self, pool: Any, keep: int) -> None:
        self._pool(pool).trim(int(keep))

    def _malloc_async(self, out: Any, size: int, pool: Pool, stream: Any, what: str) -> None:
        self._out(out, what)
        st = self._stream(stream)
        if pool.device != st.device:
            raise SimError("InvalidValue", f"{what}: the pool lives on device {pool.device}, the stream on "
                                           f"{st.device}")
        cap = st.capture
        if cap is not None:
            if cap.status != STATUS_ACTIVE:
                raise SimError("StreamCaptureInvalidated", f"{what}: {cap.describe()} was invalidated "
                                                           f"({cap.reason})")
            block = self.memory.reserve_graph(pool.device, size)
            props = ffi.new("struct cudaMemPoolProps *")
            props.allocType = enum("enum cudaMemAllocationType")["cudaMemAllocationTypePinned"]
            props.location.type = enum("enum cudaMemLocationType")["cudaMemLocationTypeDevice"]
            props.location.id = pool.device
            self.memory.ref_graph(block)
            params = AllocP(block, size, pool.device, bytes(ffi.buffer(props)), b"")
            self._submit(st, what, lambda: (MEM_ALLOC, params), lambda: None)
            out[0] = ffi.cast("void *", block.base)
            return
        self._legacy_check(st, what)
        out[0] = ffi.cast("void *", self.memory.malloc_async(pool, size).base)

    def cudaMallocAsync(self, out: Any, size: int, stream: Any) -> None:
        st = self._stream(stream)
        self._malloc_async(out, size, self.memory.current_pools[st.device], stream, "cudaMallocAsync")

    def cudaMallocFromPoolAsync(self, out: Any, size: int, pool: Any, stream: Any) -> None:
        self._malloc_async(out, size, self._pool(pool), stream, "cudaMallocFromPoolAsync")

    def cudaFreeAsync(self, p: Any, stream: Any) -> None:
        v = addr(p)
        st = self._stream(stream)
        b = self.memory.find(v)
        if b is None or b.base != v or b.kind == "malloc":
            raise SimError("InvalidValue", f"cudaFreeAsync: {v:#x} is not the start of a stream-ordered or "
                                           "graph allocation")
        if st.capture is not None:
            if b.kind != "graph":
                raise SimError("InvalidValue", "cudaFreeAsync in a capture frees graph memory only (free nodes)")
            self._submit(st, "cudaFreeAsync", lambda: (MEM_FREE, FreeP(v)), lambda: None)
            return
        if b.kind == "graph" and b.data is None:
            raise SimError("InvalidValue", f"cudaFreeAsync: the graph allocation at {v:#x} is not allocated now")
        self._pool_outlived(b, "cudaFreeAsync")
        self._submit(st, "cudaFreeAsync", lambda: (MEM_FREE, FreeP(v)), lambda: self.memory.free(b))

    # =========================================================================== streams
    def cudaStreamCreate(self, out: Any) -> None:
        self.cudaStreamCreateWithPriority(out, 0, 0)

    def cudaStreamCreateWithFlags(self, out: Any, flags: int) -> None:
        self.cudaStreamCreateWithPriority(out, flags, 0)

    def cudaStreamCreateWithPriority(self, out: Any, flags: int, priority: int) -> None:
        self._out(out, "cudaStreamCreate")
        if flags not in (0, STREAM_NON_BLOCKING):
            raise SimError("InvalidValue", f"stream flags {flags:#x}")
        prio = min(0, max(GREATEST_PRIORITY, priority))
        s = Stream(self.cur_device, blocking=not flags, priority=prio)
        self.streams[s.handle] = s
        out[0] = handle("cudaStream_t", s.handle)

    def cudaStreamGetFlags(self, stream: Any, out: Any) -> None:
        out[0] = 0 if self._stream(stream).blocking else STREAM_NON_BLOCKING

    def cudaStreamGetPriority(self, stream: Any, out: Any) -> None:
        out[0] = self._stream(stream).priority

    def cudaStreamDestroy(self, stream: Any) -> None:
        st = self._stream(stream)
        if st.legacy or addr(stream) == 2:
            raise SimError("InvalidResourceHandle", "the default streams cannot be destroyed")
        cap = st.capture
        if cap is not None:
            cap.invalidate("a stream of the capture was destroyed")
            cap.streams = [s for s in cap.streams if s is not st]
            st.capture = None
        st.destroyed = True
        del self.streams[st.handle]

    def cudaStreamSynchronize(self, stream: Any) -> None:
        st = self._stream(stream)
        self._sync_stream_check(st, "cudaStreamSynchronize")
        self._after_sync(st.device)

    def cudaStreamQuery(self, stream: Any) -> None:
        self._sync_stream_check(self._stream(stream), "cudaStreamQuery")

    def cudaStreamWaitEvent(self, stream: Any, event: Any, flags: int) -> None:
        st = self._stream(stream)
        ev = self._event(event)
        if flags not in (0, EVENT_EXTERNAL):
            raise SimError("InvalidValue", f"cudaStreamWaitEvent flags {flags:#x}")
        cap, ecap = st.capture, ev.captured()
        if cap is not None and cap.status != STATUS_ACTIVE:
            raise SimError("StreamCaptureInvalidated", f"{cap.describe()} was invalidated ({cap.reason})")
        if ev.capture is not None and ev.capture.ended and flags != EVENT_EXTERNAL:
            # last recorded in a capture that has ended: CUDA refuses (InvalidValue) -- in a
            # capture (13.0, which invalidates it) and outside one (12.9): differential test,
            # regressions gpu-wait-on-event-of-ended-capture, gpu-eager-wait-on-event-of-ended-capture
            if cap is not None:
                cap.invalidate("cudaStreamWaitEvent on an event recorded in an ended capture")
            raise SimError("InvalidValue", f"the event was last recorded in {ev.capture.describe()}, which "
                                           "has ended" + ("; the capture is invalidated" if cap is not None else ""))
        if cap is not None and flags == EVENT_EXTERNAL:  # an event-wait node
            self._submit(st, "cudaStreamWaitEvent", lambda: (WAIT_EVENT, EventP(ev.handle)), lambda: None)
            return
        if ecap is None:
            if cap is not None and ev.recorded:
                cap.invalidate("cudaStreamWaitEvent on an event recorded outside the capture")
                raise SimError("StreamCaptureIsolation", f"the stream takes part in {cap.describe()}; the event "
                                                         "was recorded outside it (a dependency would cross the "
                                                         "capture's boundary); the capture is invalidated")
            if cap is None:
                self._legacy_check(st, "cudaStreamWaitEvent")
            return  # outside a capture: the event's work is done (synchronous simulation)
        if ecap.status != STATUS_ACTIVE:
            if cap is None:
                # a stream outside any capture cannot join an invalidated one: CUDA 13.0 answers
                # InvalidValue (differential test, regression gpu-wait-on-event-of-invalidated-capture)
                raise SimError("InvalidValue", f"the event was recorded in {ecap.describe()}, which was "
                                               f"invalidated ({ecap.reason}); no stream can join it")
            raise SimError("StreamCaptureInvalidated", f"the event belongs to {ecap.describe()}, which was "
                                                       f"invalidated ({ecap.reason})")
        if cap is None:
            if st.legacy:
                ecap.invalidate("the legacy stream waited on an event of the capture")
                raise SimError("StreamCaptureUnsupported", "the legacy stream cannot join a capture; the "
                                                           "capture is invalidated")
            ecap.join(st, ev.cap_deps, ev.cap_tokens)  # the stream joins the capture
            return
        if cap is not ecap:
            cap.invalidate("a wait merging two captures")
            ecap.invalidate("a wait merging two captures")
            raise SimError("StreamCaptureMerge", f"the stream takes part in {cap.describe()}; the event was "
                                                 f"recorded in {ecap.describe()}: waiting would merge two "
                                                 "capture sequences; both are invalidated")
        st.deps = merge_deps(st.deps, ev.cap_deps)
        st.tokens |= ev.cap_tokens

    def cudaLaunchHostFunc(self, stream: Any, fn: Any, user: Any) -> None:
        self._host_func(stream, fn, user, 0, "cudaLaunchHostFunc")

    def cudaLaunchHostFunc_v2(self, stream: Any, fn: Any, user: Any, sync_mode: int) -> None:
        if sync_mode not in (0, 1):
            raise SimError("InvalidValue", f"host task sync mode {sync_mode}")
        self._host_func(stream, fn, user, sync_mode, "cudaLaunchHostFunc_v2")

    def _host_func(self, stream: Any, fn: Any, user: Any, mode: int, what: str) -> None:
        st = self._stream(stream)
        if fn == ffi.NULL:
            raise SimError("InvalidValue", f"{what}: NULL function")
        p = HostP(fn, user, mode)
        self._submit(st, what, lambda: (HOST, p), lambda: p.fn(p.user))

    # -- capture ---------------------------------------------------------------------------
    def _begin(self, st: Stream, mode: int, graph: Graph | None, deps: list[Node], edges: list[EdgeData]) -> None:
        if st.legacy:
            raise SimError("StreamCaptureUnsupported", "the legacy stream cannot be captured")
        if mode not in MODE_NAMES:
            raise SimError("InvalidValue", f"capture mode {mode}")
        if st.capture is not None:
            raise SimError("IllegalState", f"the stream already takes part in {st.capture.describe()}")
        if graph is not None and graph.capture is not None:
            raise SimError("IllegalState", f"the graph is being captured into by {graph.capture.describe()}")
        target = graph is not None
        if graph is None:
            graph = self._register_graph(Graph())
        else:
            for d in deps:
                if d.graph is not graph:
                    raise SimError("InvalidValue", f"dependency {d.handle:#x} is not a node of the graph "
                                                   "captured into")
        cap = Capture(st, mode, graph, target)
        graph.capture = cap
        self.captures.append(cap)
        # a node named twice is one dependency (CUDA 13.0/13.5 capture into a graph given the
        # same node twice and draw one edge: differential test, regression
        # gpu-capture-to-graph-duplicate-dependency)
        cap.join(st, merge_deps([], list(zip(deps, edges))), set())

    def cudaStreamBeginCapture(self, stream: Any, mode: int) -> None:
        self._begin(self._stream(stream), mode, None, [], [])

    def cudaStreamBeginCaptureToGraph(self, stream: Any, graph: Any, deps: Any, edata: Any, n: int,
                                      mode: int) -> None:
        st = self._stream(stream)
        g = self._graph(graph)
        nodes = self._nodes_in(deps, n, "cudaStreamBeginCaptureToGraph")
        self._begin(st, mode, g, nodes, read_edges(edata, n))

    def _end(self, cap: Capture) -> None:
        cap.ended = True
        for s in cap.streams:
            s.capture = None
            s.deps, s.tokens, s.work = [], set(), 0
        if cap in self.captures:
            self.captures.remove(cap)
        if cap.graph.capture is cap:
            cap.graph.capture = None

    def cudaStreamEndCapture(self, stream: Any, out: Any) -> None:
        out[0] = ffi.NULL
        st = self._stream(stream)
        cap = st.capture
        if cap is None:
            raise SimError("IllegalState", "the stream is not capturing")
        if cap.origin is not st:
            cap.invalidate("cudaStreamEndCapture on a stream that joined the capture")
            raise SimError("StreamCaptureUnmatched", f"{cap.describe()} was not begun on this stream; it is "
                                                     "invalidated")
        if cap.mode != RELAXED and cap.thread != threading.get_ident():
            # As seen on CUDA 12.9 and 13.0 (undocumented): refused, and the sequence is ended anyway.
            self._end(cap)
            if not cap.target:
                self._destroy_graph(cap.graph)
            raise SimError("StreamCaptureWrongThread", f"{cap.describe()} must be ended by the thread that "
                                                       "began it (it is not relaxed); it is ended, without a graph")
        loose = unjoined(cap)
        self._end(cap)
        if cap.status == STATUS_INVALIDATED:
            # CUDA 12.9 and 13.0 destroy the graph of an invalidated capture -- also the user's
            # graph of a capture into an existing graph (seen on an H100: every later call on it
            # returns InvalidValue); so does the simulator
            self._destroy_graph(cap.graph)
            raise SimError("StreamCaptureInvalidated", f"{cap.describe()} was invalidated: {cap.reason}")
        if loose:
            if not cap.target:
                self._destroy_graph(cap.graph)
            raise SimError("StreamCaptureUnjoined", f"{cap.describe()}: the work of stream(s) "
                                                    f"{', '.join(hex(s.handle) for s in loose)} was not joined "
                                                    "back into the origin stream")
        out[0] = handle("cudaGraph_t", cap.graph.handle)

    def cudaStreamIsCapturing(self, stream: Any, status: Any) -> None:
        st = self._stream(stream)
        self._legacy_check(st, "cudaStreamIsCapturing", invalidate=False)
        cap = st.capture
        status[0] = STATUS_NONE if cap is None else cap.status

    def cudaStreamGetCaptureInfo(self, stream: Any, status: Any, ident: Any, graph: Any, deps: Any,
                                 edata: Any, n: Any) -> None:
        st = self._stream(stream)
        self._legacy_check(st, "cudaStreamGetCaptureInfo", invalidate=False)
        cap = st.capture
        if status != ffi.NULL:
            status[0] = STATUS_NONE if cap is None else cap.status
        if ident != ffi.NULL:
            ident[0] = 0 if cap is None else cap.id
        if cap is None or cap.status != STATUS_ACTIVE:
            return
        count = len(st.deps)
        if edata == ffi.NULL and any(e != DEFAULT_EDGE for _, e in st.deps):
            raise SimError("LossyQuery", "the capture's dependencies carry edge data: ask for it")
        if graph != ffi.NULL:
            graph[0] = handle("cudaGraph_t", cap.graph.handle)
        arr = ffi.new("cudaGraphNode_t[]", [handle("cudaGraphNode_t", d.handle) for d, _ in st.deps] or 1)
        earr = ffi.new("cudaGraphEdgeData[]", max(count, 1))
        for i, (_, e) in enumerate(st.deps):
            write_edge(earr[i], e)
        st.info_keep = (arr, earr)  # valid until the next call on the stream (kept until then)
        if deps != ffi.NULL:
            deps[0] = arr
        if edata != ffi.NULL:
            edata[0] = earr
        if n != ffi.NULL:
            n[0] = count

    def cudaStreamUpdateCaptureDependencies(self, stream: Any, deps: Any, edata: Any, n: int, flags: int) -> None:
        st = self._stream(stream)
        cap = st.capture
        if cap is None:
            raise SimError("IllegalState", "the stream is not capturing")
        if cap.status != STATUS_ACTIVE:
            raise SimError("StreamCaptureInvalidated", f"{cap.describe()} was invalidated ({cap.reason})")
        if flags not in (0, 1):
            raise SimError("InvalidValue", f"cudaStreamUpdateCaptureDependencies flags {flags:#x}")
        nodes = self._nodes_in(deps, n, "cudaStreamUpdateCaptureDependencies")
        edges = read_edges(edata, n)
        for x in nodes:
            if x.graph is not cap.graph:
                raise SimError("InvalidValue", f"node {x.handle:#x} is not in the graph being captured")
        if len({id(x) for x in nodes}) != len(nodes):
            raise SimError("InvalidValue", "the same node is given twice")
        given = list(zip(nodes, edges))
        st.deps = given if flags == 1 else merge_deps(st.deps, given)

    def cudaThreadExchangeStreamCaptureMode(self, mode: Any) -> None:
        m = int(mode[0])
        if m not in MODE_NAMES:
            raise SimError("InvalidValue", f"capture mode {m}")
        mode[0], self.thread.mode = self.thread.mode, m

    # =========================================================================== events
    def cudaEventCreate(self, out: Any) -> None:
        self.cudaEventCreateWithFlags(out, 0)

    def cudaEventCreateWithFlags(self, out: Any, flags: int) -> None:
        self._out(out, "cudaEventCreate")
        if flags & ~0x7:
            raise SimError("InvalidValue", f"event flags {flags:#x}")
        e = Event(self.cur_device, flags)
        self.events[e.handle] = e
        out[0] = handle("cudaEvent_t", e.handle)

    def cudaEventDestroy(self, event: Any) -> None:
        e = self._event(event)
        e.destroyed = True
        del self.events[e.handle]

    def cudaEventRecord(self, event: Any, stream: Any) -> None:
        self._record(event, stream, 0, "cudaEventRecord")

    def cudaEventRecordWithFlags(self, event: Any, stream: Any, flags: int) -> None:
        if flags not in (0, EVENT_EXTERNAL):
            raise SimError("InvalidValue", f"cudaEventRecordWithFlags flags {flags:#x}")
        self._record(event, stream, flags, "cudaEventRecordWithFlags")

    def _record(self, event: Any, stream: Any, flags: int, what: str) -> None:
        ev = self._event(event)
        st = self._stream(stream)
        cap = st.capture
        if cap is not None:
            if cap.status != STATUS_ACTIVE:
                raise SimError("StreamCaptureInvalidated", f"{cap.describe()} was invalidated ({cap.reason})")
            if flags == EVENT_EXTERNAL:  # an event-record node
                self._submit(st, what, lambda: (EVENT_RECORD, EventP(ev.handle)), lambda: None)
            ev.capture, ev.cap_deps, ev.cap_tokens = cap, list(st.deps), set(st.tokens)
            ev.recorded = False
            return
        self._legacy_check(st, what)
        ev.capture = None
        ev.recorded = True
        ev.time = _now_ms()

    def _event_check(self, ev: Event, what: str) -> None:
        cap = ev.captured()
        if cap is not None and cap.status != STATUS_ACTIVE:
            # recorded in a capture that is invalidated (not yet ended): CUDA 13.0/13.5 answer
            # InvalidValue, as for an ended one (differential test, regression
            # gpu-query-event-of-invalidated-capture)
            raise SimError("InvalidValue", f"{what}: the event was last recorded in {cap.describe()}, "
                                           f"which was invalidated ({cap.reason})")
        if cap is not None:
            cap.invalidate(f"{what} of an event recorded in the capture")
            raise SimError("CapturedEvent", f"{what}: the event was last recorded in {cap.describe()}; the "
                                            "capture is invalidated")
        self._unsafe(what)

    def cudaEventQuery(self, event: Any) -> None:
        ev = self._event(event)
        if ev.capture is not None and ev.capture.ended:
            # answered before the capture rules (CUDA 12.9 during an invalidated capture:
            # differential test, regression gpu-query-event-of-ended-capture-first)
            raise SimError("InvalidValue", f"cudaEventQuery: the event was last recorded in "
                                           f"{ev.capture.describe()}, which has ended")
        self._event_check(ev, "cudaEventQuery")
        if ev.capture is not None:
            # last recorded in a capture that has ended: CUDA 13.0/13.5 answer InvalidValue
            # (found by the cuda-vs-sim differential test, regression seed-capture-fork-join)
            raise SimError("InvalidValue", f"cudaEventQuery: the event was last recorded in "
                                           f"{ev.capture.describe()}, which has ended")

    def cudaEventSynchronize(self, event: Any) -> None:
        ev = self._event(event)
        self._event_check(ev, "cudaEventSynchronize")
        self._after_sync(ev.device)

    def cudaEventElapsedTime(self, ms: Any, start: Any, end: Any) -> None:
        a, b = self._event(start), self._event(end)
        for e in (a, b):
            if e.captured() is not None:
                raise SimError("CapturedEvent", "cudaEventElapsedTime: an event was last recorded in a capture")
        if (a.flags | b.flags) & EVENT_DISABLE_TIMING:
            raise SimError("InvalidResourceHandle", "an event was created with cudaEventDisableTiming")
        if a.time is None or b.time is None:
            raise SimError("InvalidResourceHandle", "an event has not been recorded")
        ms[0] = b.time - a.time

    # =========================================================================== graphs: structure
    def cudaGraphCreate(self, out: Any, flags: int) -> None:
        self._out(out, "cudaGraphCreate")
        if flags:
            raise SimError("InvalidValue", "cudaGraphCreate flags must be 0")
        out[0] = handle("cudaGraph_t", self._register_graph(Graph()).handle)

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
        node = g.add_node(type_, params, nodes, read_edges(edata, n))
        self._register_node(node)
        out[0] = handle("cudaGraphNode_t", node.handle)
        return node

    def cudaGraphAddEmptyNode(self, out: Any, graph: Any, deps: Any, n: int) -> None:
        self._add(out, graph, deps, n, EMPTY, None, what="cudaGraphAddEmptyNode")

    def _read_memset(self, p: Any, what: str) -> MemsetP:
        m = MemsetP(addr(p.dst), int(p.pitch), int(p.value), int(p.elementSize), int(p.width), int(p.height))
        self._check_memset(m, what)
        return m

    def cudaGraphAddMemsetNode(self, out: Any, graph: Any, deps: Any, n: int, p: Any) -> None:
        self._graph(graph)
        self._add(out, graph, deps, n, MEMSET, self._read_memset(p, "cudaGraphAddMemsetNode"),
                  what="cudaGraphAddMemsetNode")

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

    def cudaGraphAddMemcpyNode(self, out: Any, graph: Any, deps: Any, n: int, p: Any) -> None:
        self._graph(graph)
        self._add(out, graph, deps, n, MEMCPY, self._read_memcpy(p, "cudaGraphAddMemcpyNode"),
                  what="cudaGraphAddMemcpyNode")

    def _one_d(self, dst: Any, src: Any, count: int, kind: int, what: str) -> MemcpyP:
        m = MemcpyP.one_d(addr(dst), addr(src), int(count), int(kind))
        self._check_memcpy(m, what)
        return m

    def cudaGraphAddMemcpyNode1D(self, out: Any, graph: Any, deps: Any, n: int, dst: Any, src: Any,
                                 count: int, kind: int) -> None:
        self._graph(graph)
        self._add(out, graph, deps, n, MEMCPY, self._one_d(dst, src, count, kind, "cudaGraphAddMemcpyNode1D"),
                  what="cudaGraphAddMemcpyNode1D")

    def _read_host(self, p: Any, what: str, sync_mode: int = 0) -> HostP:
        if p.fn == ffi.NULL:
            raise SimError("InvalidValue", f"{what}: NULL host function")
        if sync_mode not in (0, 1):
            raise SimError("InvalidValue", f"{what}: host task sync mode {sync_mode}")
        return HostP(p.fn, p.userData, sync_mode)

    def cudaGraphAddHostNode(self, out: Any, graph: Any, deps: Any, n: int, p: Any) -> None:
        self._graph(graph)
        self._add(out, graph, deps, n, HOST, self._read_host(p, "cudaGraphAddHostNode"),
                  what="cudaGraphAddHostNode")

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
            m = c.add_node(n.type, params, [mapping[d.handle] for d, _ in n.deps], [e for _, e in n.deps])
            if n.type == GRAPH:
                params.graph.owner = m
            mapping[n.handle] = m
        c.clone_map = mapping
        for h in g.cond_handles:
            c.cond_handles.append(h)
        self._register_tree(c)
        return c

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
        block = self.memory.reserve_graph(device, size)
        self.memory.ref_graph(block)
        return AllocP(block, size, device, bytes(ffi.buffer(ffi.addressof(props))), access)

    def _memory_node_allowed(self, g: Graph, what: str) -> None:
        if g.owner is not None and g.owner.type == GRAPH:
            raise SimError("NotSupported", f"{what}: memory nodes cannot be added to a child graph node's graph")

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

    def _read_free(self, g: Graph, dptr: Any, what: str) -> FreeP:
        v = addr(dptr)
        b = self.memory.find(v)
        if b is None or b.kind != "graph" or b.base != v:
            raise SimError("InvalidValue", f"{what}: {v:#x} is not the address of a graph allocation")
        if any(n.type == MEM_FREE and n.params.dptr == v for n in g.nodes):
            raise SimError("InvalidValue", f"{what}: the graph frees the allocation at {v:#x} already")
        return FreeP(v)

    def cudaGraphAddMemFreeNode(self, out: Any, graph: Any, deps: Any, n: int, dptr: Any) -> None:
        g = self._graph(graph)
        self._memory_node_allowed(g, "cudaGraphAddMemFreeNode")
        self._add(out, graph, deps, n, MEM_FREE, self._read_free(g, dptr, "cudaGraphAddMemFreeNode"),
                  what="cudaGraphAddMemFreeNode")

    # -- kernels in graphs -------------------------------------------------------------------
    def _check_launch(self, k: _kernels.SimKernel, grid: tuple[int, int, int], block: tuple[int, int, int],
                      smem: int, what: str, zero: str = "InvalidConfiguration") -> None:
        # a launch with a zero dimension is a bad configuration; kernel-node parameters with one
        # are an invalid value (what CUDA 12.9 / 13.x return: conformance kernels.node.*_zero*)
        if min(grid) < 1 or min(block) < 1:
            raise SimError(zero, f"{what}: grid {grid} / block {block} has a zero dimension")
        if block[0] * block[1] * block[2] > MAX_THREADS_PER_BLOCK or block[0] > 1024 or block[1] > 1024 \
                or block[2] > 64:
            raise SimError("InvalidConfiguration", f"{what}: block {block} exceeds the device's limits")
        if grid[0] >= 1 << 31 or grid[1] > 65535 or grid[2] > 65535:
            raise SimError("InvalidConfiguration", f"{what}: grid {grid} exceeds the device's limits")
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
        self._check_launch(k, grid, block, smem, what, zero="InvalidValue")
        return KernelP(k, grid, block, smem, self._read_args(k, p.kernelParams, p.extra, what))

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

    # -- the generic form ------------------------------------------------------------------------
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
            _kernels.run(self, p.kernel, p.grid, p.block, p.smem, p.args, None, values)
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
        return None

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

    # =========================================================================== graph memory
    def cudaDeviceGetGraphMemAttribute(self, d: int, attr: int, value: Any) -> None:
        gm = self.memory.graph[self._device(d)]
        values = {GRAPH_MEM["cudaGraphMemAttrUsedMemCurrent"]: gm.used,
                  GRAPH_MEM["cudaGraphMemAttrUsedMemHigh"]: gm.used_high,
                  GRAPH_MEM["cudaGraphMemAttrReservedMemCurrent"]: gm.reserved,
                  GRAPH_MEM["cudaGraphMemAttrReservedMemHigh"]: gm.reserved_high}
        if attr not in values:
            raise SimError("InvalidValue", f"graph memory attribute {attr}")
        ffi.cast("unsigned long long *", value)[0] = values[attr]

    def cudaDeviceSetGraphMemAttribute(self, d: int, attr: int, value: Any) -> None:
        gm = self.memory.graph[self._device(d)]
        if attr not in (GRAPH_MEM["cudaGraphMemAttrUsedMemHigh"], GRAPH_MEM["cudaGraphMemAttrReservedMemHigh"]):
            raise SimError("InvalidValue", "only the high watermarks can be set (reset)")
        if ffi.cast("unsigned long long *", value)[0] != 0:
            raise SimError("InvalidValue", "a high watermark can only be reset to 0")
        if attr == GRAPH_MEM["cudaGraphMemAttrUsedMemHigh"]:
            gm.used_high = 0
        else:
            gm.reserved_high = 0

    def cudaDeviceGraphMemTrim(self, d: int) -> None:
        self.memory.trim_graph(self._device(d))

    # =========================================================================== kernels
    def cudaLibraryLoadData(self, out: Any, code: Any, jit_opts: Any, jit_vals: Any, n_jit: int, lib_opts: Any,
                            lib_vals: Any, n_lib: int) -> None:
        self._out(out, "cudaLibraryLoadData")
        if code == ffi.NULL:
            raise SimError("InvalidValue", "cudaLibraryLoadData: NULL image")
        lib = _kernels.SimLibrary(_kernels.read_image(ffi, code))
        self.libraries[lib.handle] = lib
        out[0] = handle("cudaLibrary_t", lib.handle)

    def cudaLibraryLoadFromFile(self, out: Any, path: Any, jit_opts: Any, jit_vals: Any, n_jit: int,
                                lib_opts: Any, lib_vals: Any, n_lib: int) -> None:
        try:
            with open(ffi.string(path), "rb") as f:
                data = f.read()
        except OSError as exc:
            raise SimError("FileNotFound", f"cudaLibraryLoadFromFile: {exc}") from exc
        buf = ffi.from_buffer(data)
        self.cudaLibraryLoadData(out, buf, jit_opts, jit_vals, n_jit, lib_opts, lib_vals, n_lib)

    def cudaLibraryUnload(self, library: Any) -> None:
        v = addr(library)
        lib = self.libraries.pop(v, None)
        if lib is None:
            raise SimError("InvalidResourceHandle", f"{v:#x} is not a loaded library", undefined=v != 0)
        lib.unloaded = True

    def cudaLibraryGetKernel(self, out: Any, library: Any, name: Any) -> None:
        self._out(out, "cudaLibraryGetKernel")
        v = addr(library)
        lib = self.libraries.get(v)
        if lib is None:
            raise SimError("InvalidResourceHandle", f"{v:#x} is not a loaded library", undefined=v != 0)
        k = lib.kernel(ffi.string(name).decode())
        self.kernels[k.handle] = k
        out[0] = handle("cudaKernel_t", k.handle)

    def cudaFuncGetAttributes(self, attrs: Any, func: Any) -> None:
        k = self._kernel(func)
        ffi.memmove(attrs, bytes(ffi.sizeof("struct cudaFuncAttributes")), ffi.sizeof("struct cudaFuncAttributes"))
        attrs.maxThreadsPerBlock = MAX_THREADS_PER_BLOCK
        attrs.numRegs = 32
        attrs.ptxVersion = 90
        attrs.binaryVersion = 90
        attrs.maxDynamicSharedSizeBytes = k.max_dynamic_smem

    def cudaFuncSetAttribute(self, func: Any, attr: int, value: int) -> None:
        k = self._kernel(func)
        if attr == enum("enum cudaFuncAttribute")["cudaFuncAttributeMaxDynamicSharedMemorySize"]:
            if not 0 <= value <= 227 * 1024:
                raise SimError("InvalidValue", f"{value} bytes of dynamic shared memory exceed the device's 227 KiB")
            k.max_dynamic_smem = value
            return
        if attr not in enum("enum cudaFuncAttribute").values():
            raise SimError("InvalidValue", f"function attribute {attr}")

    def cudaFuncGetParamInfo(self, func: Any, index: int, offset: Any, size: Any) -> None:
        k = self._kernel(func)
        layout = k.layout()
        if layout is None:
            raise SimError("NotSupported", f"the simulator does not know the parameters of kernel {k.name!r}")
        if not 0 <= index < len(layout):
            raise SimError("InvalidValue", f"kernel {k.name!r} has {len(layout)} parameters")
        offset[0] = layout.offsets[index]
        size[0] = layout.params[index].size

    def cudaOccupancyMaxActiveBlocksPerMultiprocessor(self, out: Any, func: Any, block: int, smem: int) -> None:
        self._kernel(func)
        if block <= 0:
            raise SimError("InvalidValue", "block size must be positive")
        out[0] = 0 if block > MAX_THREADS_PER_BLOCK else max(1, min(32, 2048 // block))

    def _launch_kernel(self, func: Any, grid: tuple[int, int, int], block: tuple[int, int, int], argv: Any,
                       smem: int, stream: Any, attrs: tuple[tuple[int, bytes], ...], what: str) -> None:
        k = self._kernel(func)
        st = self._stream(stream)
        self._check_launch(k, grid, block, smem, what)
        args = self._read_args(k, argv, ffi.NULL, what)
        serial_id = LAUNCH_ATTR["cudaLaunchAttributeProgrammaticStreamSerialization"]
        launch_only = (serial_id, LAUNCH_ATTR["cudaLaunchAttributeProgrammaticEvent"])  # edges, in a graph
        p = KernelP(k, grid, block, smem, args, tuple(a for a in attrs if a[0] not in launch_only))
        serial = next((v for i, v in attrs if i == serial_id), None)
        programmatic = serial is not None and int.from_bytes(serial[:4], "little") != 0

        def edges(deps: list[tuple[Node, EdgeData]]) -> list[EdgeData]:
            if not programmatic:
                return [e for _, e in deps]
            return [(PORT_PROGRAMMATIC, 0, TYPE_PROGRAMMATIC) if d.type == KERNEL and e == DEFAULT_EDGE else e
                    for d, e in deps]

        self._submit(st, what, lambda: (KERNEL, p),
                     lambda: _kernels.run(self, k, grid, block, smem, args, addr(stream), None), edges)

    def cudaLaunchKernel(self, func: Any, grid: Any, block: Any, argv: Any, smem: int, stream: Any) -> None:
        self._launch_kernel(func, _dims(grid), _dims(block), argv, int(smem), stream, (), "cudaLaunchKernel")

    def cudaLaunchKernelExC(self, config: Any, func: Any, argv: Any) -> None:
        attrs = []
        size = ffi.sizeof("cudaLaunchAttributeValue")
        for i in range(int(config.numAttrs)):
            a = config.attrs[i]
            ident = int(a.id)
            if ident not in LAUNCH_ATTR.values():
                raise SimError("InvalidValue", f"cudaLaunchKernelExC: launch attribute {ident}")
            attrs.append((ident, bytes(ffi.buffer(ffi.addressof(a.val), size))))
        self._launch_kernel(func, _dims(config.gridDim), _dims(config.blockDim), argv, int(config.dynamicSmemBytes),
                            config.stream, tuple(attrs), "cudaLaunchKernelExC")
