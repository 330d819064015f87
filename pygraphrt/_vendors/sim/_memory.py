"""Simulated device memory: an address space per device, allocations, pools, graph memory.

Device addresses start at ``0x0d00_0000_0000_0000`` (64 GiB of address space per device):
above 2**56, where no operating system maps user memory (x86-64 user space ends at 2**47, or
2**56 with 5-level paging; arm64's at 2**52), and below 2**63, so they stay positive where
pointers travel as signed 64-bit integers (DLPack, PyTorch).  A device pointer and a host
pointer therefore cannot be confused: an address in that range that is not inside a live
allocation is an error and is never dereferenced.  (The Linux mmap area reaches well below
0x7f00_0000_0000, so a range there would collide with host buffers.)  Any other non-NULL address is host memory (unified
addressing: ``cudaMemcpyDefault`` tells the kinds apart by address) and is read and written
in place, as the GPU would through a mapped host pointer.

Three kinds of allocations:

* ``malloc``: ``cudaMalloc``, backed at once, freed by ``cudaFree``;
* ``async``: ``cudaMallocAsync`` / ``cudaMallocFromPoolAsync`` outside a capture, counted by
  their pool (reserved / used, high watermarks, release threshold, trim);
* ``graph``: memory-allocation nodes.  The address is reserved when the node is made and
  stays the same for every launch; the memory is mapped when the allocation node runs and
  unmapped when a free node (or ``cudaFreeAsync`` / ``cudaFree``) frees it.  The physical
  memory stays associated with the executable graph that first ran the node until that
  executable is destroyed (the device's graph-memory attributes count it as used), then
  returns to the device's graph pool, which ``cudaDeviceGraphMemTrim`` empties.
"""

from __future__ import annotations

import bisect
from typing import Any

from ..._bindings.cuda13 import ffi
from ._core import SimError, new_handle

SPAN_PER_DEVICE = 0x10_0000_0000  # 64 GiB of addresses per device: at most 16 devices
DEVICE_MEMORY_BASE = 0x0D00_0000_0000_0000
DEVICE_MEMORY_END = DEVICE_MEMORY_BASE + 16 * SPAN_PER_DEVICE
ALIGN = 256  # cudaMalloc's guaranteed alignment


def padded(size: int) -> int:
    """The bytes an allocation of ``size`` really spans: up to the next ALIGN boundary.

    A graph node whose range the runtime did not check (a memset captured from a stream: CUDA
    checks the bounds of an eager memset but not of a captured one) may write into this
    padding when it runs, harmlessly, as on the GPU."""
    return max(ALIGN, (size + ALIGN - 1) // ALIGN * ALIGN)


def is_device_address(address: int) -> bool:
    return DEVICE_MEMORY_BASE <= address < DEVICE_MEMORY_END


class Block:
    """One allocation (or, for graph memory, one reserved address range)."""

    __slots__ = ("base", "size", "device", "kind", "data", "phys", "pool", "refs", "exec_owner",
                 "orphan", "node_params", "access")

    def __init__(self, base: int, size: int, device: int, kind: str) -> None:
        self.base = base
        self.size = size
        self.device = device
        self.kind = kind  # "malloc" | "async" | "graph"
        self.data: bytearray | None = None  # mapped memory (None: a reservation not mapped now)
        self.phys: bytearray | None = None  # graph memory: the physical memory kept between launches
        self.pool: Pool | None = None
        self.refs = 0  # graph memory: nodes and executables naming this reservation
        self.exec_owner: Any = None  # graph memory: the executable its physical memory belongs to
        self.orphan = False  # graph memory: still mapped after its executable was destroyed
        self.node_params: Any = None  # graph memory: the allocation node's pool properties (bytes)
        # graph memory: the other devices its allocation node maps it for (device -> cudaMemAccessFlags),
        # from the node's access descriptors or, captured, the pool's access at capture time
        self.access: dict[int, int] = {}

    def __repr__(self) -> str:
        return f"<{self.kind} block {self.base:#x}+{self.size}>"


class _AddressSpace:
    """First-fit allocator of one device's address range (freed ranges are reused)."""

    def __init__(self, base: int) -> None:
        self.base = base
        self.end = base + SPAN_PER_DEVICE
        self.next = base
        self.holes: list[tuple[int, int]] = []  # (base, size), sorted by base

    def take(self, size: int) -> int:
        size = max(ALIGN, (size + ALIGN - 1) // ALIGN * ALIGN)
        for i, (b, s) in enumerate(self.holes):
            if s >= size:
                if s == size:
                    del self.holes[i]
                else:
                    self.holes[i] = (b + size, s - size)
                return b
        if self.next + size > self.end:
            raise SimError("MemoryAllocation", f"the simulated device's {SPAN_PER_DEVICE >> 30} GiB of "
                                               "address space are exhausted")
        b = self.next
        self.next += size
        return b

    def give(self, base: int, size: int) -> None:
        size = max(ALIGN, (size + ALIGN - 1) // ALIGN * ALIGN)
        i = bisect.bisect_left(self.holes, (base, 0))
        self.holes.insert(i, (base, size))
        # coalesce with the neighbours
        if i + 1 < len(self.holes) and self.holes[i][0] + self.holes[i][1] == self.holes[i + 1][0]:
            self.holes[i] = (self.holes[i][0], self.holes[i][1] + self.holes[i + 1][1])
            del self.holes[i + 1]
        if i > 0 and self.holes[i - 1][0] + self.holes[i - 1][1] == self.holes[i][0]:
            self.holes[i - 1] = (self.holes[i - 1][0], self.holes[i - 1][1] + self.holes[i][1])
            del self.holes[i]
        if self.holes and self.holes[-1][0] + self.holes[-1][1] == self.next:
            self.next = self.holes[-1][0]
            self.holes.pop()


class Pool:
    """A stream-ordered memory pool (``cudaMemPool_t``)."""

    def __init__(self, device: int, max_size: int = 0, default: bool = False) -> None:
        self.handle = new_handle()
        self.device = device
        self.max_size = max_size
        self.default = default
        self.threshold = 0
        # reuse policies (all enabled by default, as the runtime's pools are)
        self.reuse = {1: 1, 2: 1, 3: 1}
        self.used = 0
        self.free = 0  # reserved but not in use
        self.used_high = 0
        self.reserved_high = 0
        self.destroyed = False

    @property
    def reserved(self) -> int:
        return self.used + self.free

    def take(self, size: int) -> int:
        """Account for an allocation of ``size``; returns the bytes newly reserved."""
        grow = max(0, size - self.free)
        if self.max_size and self.reserved + grow > self.max_size:
            raise SimError("MemoryAllocation", f"the pool's maximum size ({self.max_size} bytes) would be exceeded")
        self.free -= size - grow
        self.used += size
        self.used_high = max(self.used_high, self.used)
        self.reserved_high = max(self.reserved_high, self.reserved)
        return grow

    def give(self, size: int) -> None:
        self.used -= size
        self.free += size

    def release_to_threshold(self) -> None:
        """At a synchronization: keep at most the release threshold reserved (what is used stays)."""
        if self.reserved > self.threshold:
            self.free = max(0, min(self.free, self.threshold - self.used))

    def trim(self, keep: int) -> None:
        self.free = max(0, min(self.free, keep - self.used))


class GraphMemory:
    """A device's graph-memory accounting (``cudaDeviceGetGraphMemAttribute``)."""

    def __init__(self) -> None:
        self.used = 0
        self.free = 0
        self.used_high = 0
        self.reserved_high = 0

    @property
    def reserved(self) -> int:
        return self.used + self.free

    def acquire(self, size: int) -> None:
        self.free -= min(self.free, size)
        self.used += size
        self.used_high = max(self.used_high, self.used)
        self.reserved_high = max(self.reserved_high, self.reserved)

    def release(self, size: int) -> None:
        self.used -= size
        self.free += size


class Memory:
    """All simulated memory of the process's simulated devices."""

    def __init__(self, devices: int, total_memory: int) -> None:
        self.total_memory = total_memory
        self.spaces = [_AddressSpace(DEVICE_MEMORY_BASE + d * SPAN_PER_DEVICE) for d in range(devices)]
        self.blocks: dict[int, Block] = {}
        self.bases: list[int] = []
        self.graph = [GraphMemory() for _ in range(devices)]
        self.malloc_bytes = [0] * devices
        self.pools: dict[int, Pool] = {}
        self.default_pools = [self._new_pool(d, default=True) for d in range(devices)]
        self.current_pools = list(self.default_pools)

    # -- bookkeeping -----------------------------------------------------------------------
    def _new_pool(self, device: int, max_size: int = 0, default: bool = False) -> Pool:
        p = Pool(device, max_size, default)
        self.pools[p.handle] = p
        return p

    def new_pool(self, device: int, max_size: int) -> Pool:
        return self._new_pool(device, max_size)

    def in_use(self, device: int) -> int:
        pools = sum(p.reserved for p in self.pools.values() if p.device == device)
        return self.malloc_bytes[device] + pools + self.graph[device].reserved

    def _check_room(self, device: int, extra: int) -> None:
        if self.in_use(device) + extra > self.total_memory:
            raise SimError("MemoryAllocation", f"{extra} more bytes do not fit in the simulated device's "
                                               f"{self.total_memory} bytes ({self.in_use(device)} in use)")

    def _insert(self, block: Block) -> Block:
        self.blocks[block.base] = block
        bisect.insort(self.bases, block.base)
        return block

    def _remove(self, block: Block) -> None:
        del self.blocks[block.base]
        i = bisect.bisect_left(self.bases, block.base)
        del self.bases[i]
        self.spaces[block.device].give(block.base, block.size)

    def find(self, address: int) -> Block | None:
        """The block whose range holds ``address`` (mapped or not)."""
        # (a collection may run a finalizer's free inside this call, on this thread, and shrink
        # the table between the search and the read: read what is there, or find nothing)
        bases = self.bases
        i = bisect.bisect_right(bases, address) - 1
        base = bases[i] if 0 <= i < len(bases) else None
        b = None if base is None else self.blocks.get(base)
        return b if b is not None and b.base <= address < b.base + max(b.size, 1) else None

    # -- allocation ------------------------------------------------------------------------
    def malloc(self, device: int, size: int) -> Block:
        self._check_room(device, size)
        b = Block(self.spaces[device].take(size), size, device, "malloc")
        b.data = bytearray(padded(size))
        self.malloc_bytes[device] += size
        return self._insert(b)

    def malloc_async(self, pool: Pool, size: int) -> Block:
        self._check_room(pool.device, max(0, size - pool.free))
        pool.take(size)
        b = Block(self.spaces[pool.device].take(size), size, pool.device, "async")
        b.data = bytearray(padded(size))
        b.pool = pool
        return self._insert(b)

    def reserve_graph(self, device: int, size: int) -> Block:
        """The address range of a memory-allocation node (mapped when the node runs)."""
        return self._insert(Block(self.spaces[device].take(size), size, device, "graph"))

    def free(self, block: Block) -> None:
        """Free a block as ``cudaFree`` / ``cudaFreeAsync`` do (graph memory: unmap it)."""
        if block.kind == "malloc":
            self.malloc_bytes[block.device] -= block.size
            block.data = None
            self._remove(block)
        elif block.kind == "async":
            assert block.pool is not None
            block.pool.give(block.size)
            block.data = None
            self._remove(block)
        else:
            self.unmap_graph(block)

    # -- graph memory ------------------------------------------------------------------------
    def map_graph(self, block: Block, exec_: Any) -> None:
        """The allocation node runs: map its memory (the executable's physical memory)."""
        if block.phys is None or block.exec_owner is None:
            self._check_room(block.device, max(0, block.size - self.graph[block.device].free))
            self.graph[block.device].acquire(block.size)
            block.phys = bytearray(padded(block.size))
            block.exec_owner = exec_
            exec_.phys_blocks.append(block)
        block.data = block.phys
        block.refs += 1  # a mapped allocation keeps its address

    def unmap_graph(self, block: Block) -> None:
        block.data = None
        if block.orphan:  # its executable is gone: the physical memory returns to the pool now
            block.orphan = False
            block.phys = None
            self.graph[block.device].release(block.size)
        self.unref_graph(block)

    def release_exec(self, exec_: Any) -> None:
        """An executable graph is destroyed: its graph memory returns to the device's pool
        (an allocation still mapped keeps its memory until it is freed)."""
        for block in exec_.phys_blocks:
            if block.exec_owner is not exec_:
                continue
            block.exec_owner = None
            if block.data is not None:
                block.orphan = True
            else:
                block.phys = None
                self.graph[block.device].release(block.size)
        exec_.phys_blocks = []

    def ref_graph(self, block: Block) -> None:
        block.refs += 1

    def unref_graph(self, block: Block) -> None:
        block.refs -= 1
        if block.refs <= 0 and block.data is None and block.base in self.blocks:
            self._remove(block)

    def trim_graph(self, device: int) -> None:
        self.graph[device].free = 0

    # -- access ------------------------------------------------------------------------------
    def view(self, address: int, n: int, what: str = "access", error: str = "InvalidValue",
             into_padding: bool = False) -> memoryview:
        """A writable view of ``n`` bytes at ``address``: device memory or, outside the device
        range, host memory in place.  ``into_padding``: the range may run into the allocation's
        alignment padding (a graph node running; see ``padded``)."""
        if address == 0:
            raise SimError(error, f"{what}: NULL pointer")
        if is_device_address(address):
            b = self.find(address)
            if b is None:
                raise SimError(error, f"{what}: {address:#x} is not in any allocation of the simulated device")
            if b.data is None:
                state = "graph memory that is not allocated now (its allocation node has not run, or it "\
                        "was freed)" if b.kind == "graph" else "freed memory"
                raise SimError(error, f"{what}: {address:#x} is {state}")
            off = address - b.base
            if off + n > (len(b.data) if into_padding else b.size):
                raise SimError(error, f"{what}: {n} bytes at {address:#x} run past the end of the "
                                      f"{b.size}-byte allocation at {b.base:#x}")
            return memoryview(b.data)[off:off + n]
        if n == 0:
            return memoryview(bytearray(0))
        return memoryview(ffi.buffer(ffi.cast("char *", address), n))

    def is_device(self, address: int) -> bool:
        return is_device_address(address)

    def check_range(self, address: int, n: int, what: str) -> None:
        """A device range must lie inside one allocation (its mapping may come later: graph memory)."""
        if address == 0:
            raise SimError("InvalidValue", f"{what}: NULL pointer")
        if is_device_address(address):
            b = self.find(address)
            if b is None:
                raise SimError("InvalidValue", f"{what}: {address:#x} is not in any allocation of the "
                                               "simulated device")
            if address - b.base + n > b.size:
                raise SimError("InvalidValue", f"{what}: {n} bytes at {address:#x} run past the end of the "
                                               f"{b.size}-byte allocation at {b.base:#x}")
