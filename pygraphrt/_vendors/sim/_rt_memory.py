"""The runtime's memory section: ``cudaMalloc`` / ``cudaFree``, copies and memsets (eager and
on a stream), and stream-ordered memory: pools (``cudaMemPool*``, a device's default and current
pool) and ``cudaMallocAsync`` / ``cudaMallocFromPoolAsync`` / ``cudaFreeAsync``.

Memory itself -- fake device addresses, pools, graph memory accounting -- is :mod:`._memory`'s.
"""

from __future__ import annotations

from typing import Any

from ..._bindings.cuda13 import ffi
from ._core import SimError, addr, enum, handle
from ._graph import MEM_ALLOC, MEM_FREE, MEMCPY, MEMSET, AllocP, FreeP, MemcpyP, MemsetP
from ._memory import Pool
from ._rt_base import RuntimeBase
from ._state import STATUS_ACTIVE

POOL_ATTR = enum("enum cudaMemPoolAttr")


class MemorySection(RuntimeBase):
    """Allocation, copies and memsets, memory pools and stream-ordered allocation."""

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

    def cudaMemsetAsync(self, dst: Any, value: int, count: int, stream: Any) -> None:
        st = self._stream(stream)
        p = MemsetP(addr(dst), count, value & 0xFF, 1, count, 1)
        if st.capture is None and count:
            # CUDA 13.0 on two H200s refuses an eager memset of another device's memory on a
            # stream whose device has no peer access to it, whichever device is current (a
            # captured one is taken; with access it runs): the 2-device differential test,
            # regression gpu-2dev-eager-memset-on-another-devices-stream
            block = self.memory.find(p.dst) if self.memory.is_device(p.dst) else None
            if block is not None and block.device != st.device and not self._reaches(st.device, block):
                raise SimError("InvalidValue", f"cudaMemsetAsync on a stream of device {st.device} of memory of "
                                               f"device {block.device}, which device {st.device} has no access to")
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
            # CUDA Programming Guide, Graph Memory Nodes, peer access with stream capture: the
            # allocation node takes the pool's peer accessibility as it is at capture time; a
            # cudaMemPoolSetAccess after the capture does not change what the graph maps
            none = enum("enum cudaMemAccessFlags")["cudaMemAccessFlagsProtNone"]
            block.access = {d: f for (h, d), f in self.pool_access.items() if h == pool.handle and f != none}
            descs = ffi.new("struct cudaMemAccessDesc[]", max(1, len(block.access)))
            for i, (d, f) in enumerate(sorted(block.access.items())):
                descs[i].location.type = enum("enum cudaMemLocationType")["cudaMemLocationTypeDevice"]
                descs[i].location.id, descs[i].flags = d, f
            access = bytes(ffi.buffer(descs, ffi.sizeof("struct cudaMemAccessDesc") * len(block.access)))
            params = AllocP(block, size, pool.device, bytes(ffi.buffer(props)), access)
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
