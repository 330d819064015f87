"""Stream-ordered memory on a real GPU: pools, malloc_async/free_async, capture into memory nodes."""

from __future__ import annotations

import numpy as np
import pytest

import pygraphrt as rt
from pygraphrt import errors
from pygraphrt.enums import CaptureStatus, GraphMemAttr, MemPoolAttr, NodeType

pytestmark = pytest.mark.gpu

MiB = 1 << 20


@pytest.fixture(scope="module")
def fill():
    p = rt.Program(r'''
    extern "C" __global__ void fill(int *y, int v, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = v;
    }''')
    return p.kernel("fill", signature="int*, int, int")


def test_malloc_async_free_async_in_stream_order(stream, fill):
    buf = stream.malloc_async(4 * 1000)
    assert isinstance(buf, rt.AsyncBuffer) and not buf.captured and buf.size == 4000
    stream.launch(fill, 4, 256, buf, 5, 1000)
    host = bytearray(4000)
    stream.memcpy(host, buf, 4000)
    stream.free_async(buf)
    stream.synchronize()
    assert (np.frombuffer(host, np.int32) == 5).all()
    assert not buf.is_valid
    with pytest.raises(errors.InvalidResourceHandle):
        stream.free_async(buf)  # twice
    with pytest.raises(errors.InvalidValue):
        stream.free_async("not memory")
    with pytest.raises(errors.InvalidValue):
        stream.malloc_async(-1)
    # an owned buffer dropped without free_async is released (cudaFree)
    b2 = stream.malloc_async(MiB)
    b2.close()
    assert not b2.is_valid


def test_pools_attributes_trim_and_current(stream):
    dflt = rt.MemPool.default()
    assert not dflt.is_owned and dflt == rt.MemPool.current()
    pool = rt.MemPool(release_threshold=0)
    assert pool.is_owned and pool != dflt
    attrs = pool.attributes()
    assert set(attrs) == set(MemPoolAttr)
    assert attrs[MemPoolAttr.USED_MEM_CURRENT] == 0
    bufs = [stream.malloc_async(8 * MiB, pool=pool) for _ in range(4)]
    stream.synchronize()
    assert pool.attribute(MemPoolAttr.USED_MEM_CURRENT) == 32 * MiB
    assert pool.attribute(MemPoolAttr.RESERVED_MEM_CURRENT) >= 32 * MiB
    for b in bufs:
        stream.free_async(b)
    pool.release_threshold = 64 * MiB
    assert pool.release_threshold == 64 * MiB
    stream.synchronize()
    assert pool.attribute(MemPoolAttr.USED_MEM_CURRENT) == 0
    assert pool.attribute(MemPoolAttr.RESERVED_MEM_CURRENT) >= 32 * MiB  # kept by the threshold
    pool.trim(0)
    assert pool.attribute(MemPoolAttr.RESERVED_MEM_CURRENT) == 0
    assert pool.attribute(MemPoolAttr.USED_MEM_HIGH) == 32 * MiB
    pool.set_attribute(MemPoolAttr.USED_MEM_HIGH, 0)  # reset the watermark
    assert pool.attribute(MemPoolAttr.USED_MEM_HIGH) == 0
    pool.set_attribute(MemPoolAttr.REUSE_ALLOW_OPPORTUNISTIC, False)
    assert pool.attribute(MemPoolAttr.REUSE_ALLOW_OPPORTUNISTIC) == 0
    with pytest.raises(errors.InvalidValue):
        pool.set_attribute("release_threshold", 1)
    with pytest.raises(errors.InvalidValue):
        pool.set_attribute(MemPoolAttr.RELEASE_THRESHOLD, -1)
    # as the device's current pool
    pool.set_current()
    try:
        assert rt.MemPool.current() == pool
        b = stream.malloc_async(MiB)
        stream.synchronize()
        assert pool.attribute(MemPoolAttr.USED_MEM_CURRENT) == MiB
        stream.free_async(b)
        stream.synchronize()
    finally:
        dflt.set_current()
    assert rt.MemPool.current() == dflt
    pool.close()
    with pytest.raises(errors.InvalidResourceHandle):
        stream.malloc_async(16, pool=pool)


def test_max_size_caps_the_pool_and_may_not_pass_the_devices_memory(stream):
    """``max_size`` bounds what the pool reserves; one past the device's memory is refused before
    the runtime sees it (the CUDA 12.9 runtime spun without end in cudaMemPoolCreate for 2**63,
    found by tests/api_fuzz.py on an H100)."""
    total = rt.current_device().info().total_memory
    pool = rt.MemPool(max_size=64 * MiB)
    try:
        small = stream.malloc_async(MiB, pool)
        with pytest.raises(errors.OutOfMemory):
            stream.malloc_async(128 * MiB, pool)
        small.free(stream)
        stream.synchronize()
    finally:
        pool.close()
    rt.MemPool(max_size=total).close()
    for too_big in (total + 1, 1 << 63, (1 << 64) - 1):
        with pytest.raises(errors.InvalidValue, match="more than the device's memory"):
            rt.MemPool(max_size=too_big)


def test_capture_makes_alloc_and_free_nodes(stream, fill):
    n = 1 << 16
    out = rt.malloc(4 * n)
    with stream.capture() as cap:
        tmp = stream.malloc_async(4 * n)
        assert tmp.captured
        stream.launch(fill, n // 256, 256, tmp, 3, n)
        stream.memcpy(out, tmp, 4 * n)
        stream.free_async(tmp)
    g = cap.graph
    types = sorted(nd.type.value for nd in g.nodes())
    assert types == sorted([NodeType.MEM_ALLOC.value, NodeType.KERNEL.value, NodeType.MEMCPY.value,
                            NodeType.MEM_FREE.value])
    alloc = next(nd for nd in g.nodes() if nd.type is NodeType.MEM_ALLOC)
    assert alloc.params["bytesize"] == 4 * n
    exe = g.instantiate()
    for _ in range(3):  # allocated and freed by each launch: relaunch is fine
        exe.launch(stream)
    stream.synchronize()
    assert (np.frombuffer(out.to_bytes(), np.int32) == 3).all()


def test_auto_free_on_launch(stream, fill):
    """A graph that leaves its allocation unfreed: relaunching needs AUTO_FREE_ON_LAUNCH."""
    n = 1 << 16
    with stream.capture() as cap:
        buf = stream.malloc_async(4 * n)
        stream.launch(fill, n // 256, 256, buf, 9, n)
    g = cap.graph
    assert [nd.type for nd in g.nodes()].count(NodeType.MEM_FREE) == 0
    plain = g.instantiate()
    plain.launch(stream)
    stream.synchronize()
    with pytest.raises(errors.GraphRTError):
        plain.launch(stream)  # its allocation from the first launch is still live
    stream.synchronize()
    # the graph's memory is freed outside the graph, in stream order; then it may launch again
    stream.free_async(buf.ptr)
    stream.synchronize()
    plain.launch(stream)
    stream.free_async(buf.ptr)
    stream.synchronize()
    plain.close()

    auto = g.instantiate(auto_free_on_launch=True)
    for _ in range(5):
        auto.launch(stream)
    stream.synchronize()
    host = bytearray(4 * n)
    stream.memcpy(host, buf.ptr, 4 * n)  # valid after the last launch until freed
    stream.synchronize()
    assert (np.frombuffer(host, np.int32) == 9).all()
    dev = rt.current_device()
    assert dev.graph_mem_attribute(GraphMemAttr.USED_MEM_CURRENT) >= 4 * n
    stream.free_async(buf.ptr)
    stream.synchronize()
    auto.close()
    dev.graph_mem_trim()


def test_capture_with_private_pool(stream):
    with stream.capture(pool="private") as cap:
        assert isinstance(cap.pool, rt.MemPool) and cap.pool.is_owned
        b = stream.malloc_async(MiB)
        stream.memset(b, 1, MiB)
        stream.free_async(b)
    assert b.pool is cap.pool
    exe = cap.graph.instantiate()
    exe.launch(stream)
    stream.synchronize()
    pool = rt.MemPool()
    with stream.capture(pool=pool) as cap2:
        b = stream.malloc_async(MiB)
        stream.free_async(b)
    assert b.pool is pool
    assert [nd.type for nd in cap2.graph.nodes()].count(NodeType.MEM_ALLOC) == 1
    with pytest.raises(errors.InvalidValue):
        stream.capture(pool="shared")
    assert stream.capture_status is CaptureStatus.NONE


def test_failed_malloc_async_in_capture_leaves_no_capture(stream):
    with pytest.raises(errors.GraphRTError):
        with stream.capture():
            stream.malloc_async(1 << 60)  # far beyond the device
    assert stream.capture_status is CaptureStatus.NONE


def test_kernel_nodes_on_stream_ordered_memory(stream, fill):
    """Kernel nodes take AsyncBuffers as pointer arguments (a kernel's later nodes are added in
    C in compiled mode); one freed in stream order is refused before any node is made."""
    n = 1000
    buf = stream.malloc_async(4 * n)
    g = rt.Graph()
    first = g.add_kernel(fill, 4, 256, (buf, 1, n))
    nodes = [first]
    for v in range(2, 6):
        nodes.append(g.add_kernel(fill, 4, 256, (buf, v, n), dependencies=[nodes[-1]]))
    assert [nd.args for nd in nodes] == [[buf.ptr, v, n] for v in range(1, 6)]
    exe = g.instantiate()
    exe.launch(stream)
    host = bytearray(4 * n)
    stream.memcpy(host, buf, 4 * n)
    stream.synchronize()
    assert (np.frombuffer(host, np.int32) == 5).all()
    stream.free_async(buf)
    stream.synchronize()
    before = len(g.nodes())
    with pytest.raises(errors.InvalidResourceHandle):
        g.add_kernel(fill, 4, 256, (buf, 7, n), dependencies=[nodes[-1]])
    assert len(g.nodes()) == before


@pytest.mark.parametrize("order", ["pool closed, then the memory freed", "pool closed, then freed in stream order",
                                   "freed in stream order behind a kernel, then the pool closed",
                                   "pool and memory dropped together in a cycle"])
def test_a_pool_outlives_the_memory_it_gave_in_any_order(order):
    """A pool destroyed before its memory was freed -- or while a stream-ordered free of it was
    still queued -- corrupted the heap under CUDA 12.9 and 13.0 (found by the generated API
    test on an H100: the next pool call crashed).  pygraphrt destroys the pool only after its
    memory is freed and the frees have run; the pool is invalid to the caller at close()."""
    import gc

    from .test_graphs import SPIN

    spin = rt.Program(SPIN).kernel("spin", signature="long long cycles")
    sim = rt.backend().vendor == "sim"
    if sim:
        from pygraphrt import sim as simulator

        simulator.undefined_calls(clear=True)
        pools = simulator.runtime().memory.pools
    s = rt.Stream()
    for _ in range(3):
        pool = rt.MemPool()
        handle = int(pool)
        buf = s.malloc_async(64, pool)
        s.memset(buf, 1, 64)
        if order == "pool closed, then the memory freed":
            pool.close()
            assert not pool.is_valid and (not sim or not pools[handle].destroyed)  # the memory is still out
            buf.close()
        elif order == "pool closed, then freed in stream order":
            pool.close()
            buf.free(s)
        elif order == "freed in stream order behind a kernel, then the pool closed":
            s.launch(spin, 1, 1, 50_000_000)
            buf.free(s)
            pool.close()
        else:
            cycle: list = [pool, buf]
            cycle.append(cycle)
            del cycle
        del pool, buf
        gc.collect()
        if sim:
            assert pools[handle].destroyed
        other = rt.MemPool()  # the runtime is sound: a new pool allocates, frees and goes
        other_buf = s.malloc_async(1 << 20, other)
        s.memset(other_buf, 2, 1 << 20)
        other_buf.free(s)
        other.close()
        s.synchronize()
    rt.current_device().synchronize()
    s.close()
    if sim:
        assert not simulator.undefined_calls()


@pytest.mark.parametrize("pool", ["default pool", "owned pool"])
def test_an_allocation_closed_while_work_on_it_is_queued_waits_for_that_work(pool):
    """``cudaFree`` does not wait for stream-ordered work on memory from a pool: closing an
    allocation with a memset on it queued behind a kernel failed the memset and the context
    (sticky cudaErrorLaunchFailure, CUDA 12.9 and 13.0 on an H100).  close() waits for the
    device first, as the class says."""
    from .test_graphs import SPIN

    spin = rt.Program(SPIN).kernel("spin", signature="long long cycles")
    s = rt.Stream()
    owned = rt.MemPool() if pool == "owned pool" else None
    buf = s.malloc_async(64, owned)
    s.launch(spin, 1, 1, 100_000_000)  # some 50 ms
    s.memset(buf, 7, 64)
    buf.close()
    s.synchronize()  # raised cudaErrorLaunchFailure
    again = s.malloc_async(64, owned)
    s.memset(again, 3, 64)
    host = bytearray(4)
    s.memcpy(host, again, 4)
    s.synchronize()
    assert host == b"\x03" * 4
    again.free(s)
    s.synchronize()
    if owned is not None:
        owned.close()
    s.close()
