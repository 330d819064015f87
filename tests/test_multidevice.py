"""Several devices (pygraphrt.multidevice): device scopes, properties, peer access, objects that know
their device, ``device=`` on graph adds, copies and graphs across devices.

The CPU tests run on the simulator with one device and with two (``tests.backends.simulator``:
what ``PYGRAPHRT_SIM_DEVICES`` sets); what they check is pygraphrt's own (scopes, records, the
checks made before the runtime) or the runtime's answers the simulator gives as CUDA documents them.
The tests of real multi-device work (:class:`TestTwoDevices`) run twice: on the GPU (marked ``gpu``;
they skip saying why with fewer than 2 GPUs, and fail then under ``PYGRAPHRT_REQUIRE_GPU=1``) and
on a 2-device simulator, with Python twins of their kernels.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

import numpy as np
import pytest

import pygraphrt as rt
from pygraphrt import errors, multidevice, sim
from pygraphrt.enums import CaptureStatus, NodeType, UpdateResult

from .backends import simulator
from .conftest import require_devices

# ============================================================================ kernels
SOURCE = r"""
extern "C" __global__ void tp_matvec(const int *a, const int *x, int *y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        int s = 0;
        for (int c = 0; c < cols; ++c) s += a[r * cols + c] * x[c];
        y[r] = s;
    }
}
extern "C" __global__ void tp_accumulate(int *acc, const int *p0, const int *p1, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) acc[i] += p0[i] + p1[i];
}
extern "C" __global__ void md_copy(int *dst, const int *src, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i];
}
"""
SIGNATURES = {"tp_matvec": "const int *a, const int *x, int *y, int rows, int cols",
              "tp_accumulate": "int *acc, const int *p0, const int *p1, int n",
              "md_copy": "int *dst, const int *src, int n"}


def _threads(ctx: Any, n: int) -> int:
    return max(0, min(int(n), ctx.grid[0] * ctx.block[0]))


# Python twins of the kernels above, for the simulator (each does the whole launch at once).
@sim.register_kernel("tp_matvec")
def _tp_matvec(ctx: Any, a: int, x: int, y: int, rows: int, cols: int) -> None:
    r = _threads(ctx, rows)
    matrix = ctx.array(a, "i4", rows * cols).reshape(rows, cols)
    ctx.array(y, "i4", r)[:] = (matrix[:r].astype(np.int64) @ ctx.array(x, "i4", cols)).astype(np.int32)


@sim.register_kernel("tp_accumulate")
def _tp_accumulate(ctx: Any, acc: int, p0: int, p1: int, n: int) -> None:
    k = _threads(ctx, n)
    ctx.array(acc, "i4", k)[:] += ctx.array(p0, "i4", k) + ctx.array(p1, "i4", k)


@sim.register_kernel("md_copy")
def _md_copy(ctx: Any, dst: int, src: int, n: int) -> None:
    k = _threads(ctx, n)
    ctx.array(dst, "i4", k)[:] = ctx.array(src, "i4", k)


def kernels() -> dict[str, Any]:
    prog = rt.Program(SOURCE, name="multidevice_test.cu")
    return {name: prog.kernel(name, signature=sig) for name, sig in SIGNATURES.items()}


# ============================================================================ helpers
@pytest.fixture
def sim1() -> Iterator[Any]:
    with simulator(1) as backend:
        yield backend


@pytest.fixture
def sim2() -> Iterator[Any]:
    with simulator(2) as backend:
        yield backend


@contextlib.contextmanager
def runtime_calls(backend: Any) -> Iterator[list[str]]:
    """The names of the runtime calls made through ``backend.ops.call`` during the block."""
    ops = backend.ops
    seen: list[str] = []

    def call(api: str, *args: Any) -> Any:
        seen.append(api)
        return type(ops).call(ops, api, *args)

    def fn(api: str) -> Any:  # (multidevice.current looks GetDevice up once per backend)
        f = type(ops).fn(ops, api)
        if api != "GetDevice":  # (ops.call's own lookups are counted by call above)
            return f

        def counted(*args: Any) -> Any:
            seen.append(api)
            return f(*args)

        return counted

    import gc

    gc.collect()  # (an earlier test's objects finalized mid-block would make calls of their own)
    ops.call, ops.fn = call, fn
    backend.memo.pop("_get_device", None)
    try:
        yield seen
    finally:
        del ops.call, ops.fn
        backend.memo.pop("_get_device", None)


def ints(buf: Any, n: int) -> np.ndarray:
    return np.frombuffer(buf.to_bytes(4 * n), np.int32)


# ============================================================================ one device (sim)
def test_device_count_and_properties(sim1):
    assert rt.device_count() == 1 == rt.multidevice.device_count()
    p = rt.Device(0).properties()
    assert isinstance(p, rt.DeviceProperties)
    assert (p.ordinal, p.name, p.arch, p.compute_capability) == (0, "pygraphrt simulator (CPU) #0", "sm_90", (9, 0))
    assert p.total_memory == sim1.runtime.memory.total_memory and p.multiprocessor_count == 1
    assert len(p.uuid) == 36 and p.pci_bus_id == "0000:00:00.0"


def test_ordinal_past_the_count_names_the_call_and_the_count(sim1):
    for what, call in [("Device.__enter__", lambda: rt.Device(1).__enter__()),
                       ("Device.properties", lambda: rt.Device(3).properties()),
                       ("Device.enable_peer_access", lambda: rt.Device(0).enable_peer_access(1)),
                       ("Device.p2p_attributes", lambda: rt.Device(5).p2p_attributes(0)),
                       ("MemPool.set_access", lambda: rt.MemPool().set_access(2))]:
        with pytest.raises(errors.InvalidDevice) as e:
            call()
        assert e.value.api == what and "reports 1 device(s)" in str(e.value), str(e.value)
    assert rt.current_device() == rt.Device(0)


def test_scope_on_the_current_device_switches_nothing(sim1):
    with runtime_calls(sim1) as calls:
        with rt.Device(0) as d:
            assert d == rt.Device(0)
    assert "SetDevice" not in calls and calls.count("GetDevice") == 2  # (entry, exit)


def test_device_keyword_costs_nothing_when_absent_and_no_switch_when_current(sim1):
    buf = rt.malloc(256)
    g = rt.Graph()
    with runtime_calls(sim1) as calls:
        g.add_memset(buf, 1, 256)
        g.add_memcpy(buf, bytearray(16), 16)
    assert calls == []  # device=None: not even a query of the current device
    with runtime_calls(sim1) as calls:
        n = g.add_memset(buf, 2, 256, device=0)
    assert calls == []  # the only device there is: current, nothing to ask or switch
    assert n.device == 0


def test_device_keyword_on_the_current_one_of_two_devices_asks_once_and_switches_nothing(sim2):
    buf = rt.malloc(256)
    g = rt.Graph()
    with rt.Device(1):
        g.add_memset(buf, 0, 256, device=1)  # (the device count asked: once per backend)
        with runtime_calls(sim2) as calls:
            n = g.add_memset(buf, 2, 256, device=1)
        assert calls == ["GetDevice"]  # current already: no switch
        assert n.device == 1
    with runtime_calls(sim2) as calls:
        m = g.add_memset(buf, 3, 256, device=1)
    assert calls == ["GetDevice", "SetDevice", "SetDevice"]  # (there and back)
    assert m.device == 1 and rt.current_device() == rt.Device(0)


def test_device_keyword_before_a_second_device_is_used_records_and_marks_nothing(sim2):
    """Of two devices, only the first used so far: ``device=0`` (current) asks which device is
    current, once, and makes the node there with no switch and no record (every node is device
    0's in the one-device state, which it leaves on: the compiled paths' C stays on).  Where
    device 1 was made current behind pygraphrt's back, ``device=0`` switches there and back and
    records the node.  The first node placed on device 1 is the second device's first use,
    which ends that state; the nodes made before are recorded as device 0's then."""
    multidevice._reset_several(sim2)  # (the process's 2-device simulator: earlier tests used device 1)
    buf = rt.malloc(64)
    g = rt.Graph()
    k = kernels()["md_copy"]
    assert rt.device_count() == 2  # (counted once per backend; a placed node's first check asks)
    with runtime_calls(sim2) as calls:
        first = g.add_memset(buf, 1, 64, device=0)
    assert calls == ["GetDevice"] and first.device == 0
    warm = g.add_kernel(k, 1, 16, (buf, buf, 16), dependencies=[first])  # (the kernel's first node: loads)
    with runtime_calls(sim2) as calls:
        n = g.add_kernel(k, 1, 16, (buf, buf, 16), dependencies=[warm], device=0)
    assert calls == ["GetDevice"] and n.device == 0
    assert not sim2.several and multidevice.node_devices(g) == {}
    sim2.ops.call("SetDevice", 1)  # (as torch.cuda.set_device(1) would: behind pygraphrt's back)
    try:
        with runtime_calls(sim2) as calls:
            behind = g.add_memset(buf, 3, 64, device=0, dependencies=[n])
        # (asked, then there and back; placing asks again in this rare case)
        assert calls[0] == "GetDevice" and calls[-2:] == ["SetDevice", "SetDevice"] and len(calls) <= 4
        with runtime_calls(sim2) as again_calls:  # (the same arguments: the struct's fast test first)
            again = g.add_memset(buf, 3, 64, device=0, dependencies=[behind])
        assert again_calls == calls  # (which device is current: asked as often, not once more)
        assert multidevice.current(sim2) == 1
    finally:
        sim2.ops.call("SetDevice", 0)
    assert not sim2.several and multidevice.node_devices(g) == {behind.handle: 0, again.handle: 0}
    assert behind.device == 0 and again.device == 0
    with rt.Device(1):
        buf1 = rt.malloc(64)
    sim2_several = sim2.several  # (the scope above used device 1: several since)
    m = g.add_memset(buf1, 2, 64, device=1, dependencies=[again])
    assert sim2_several and sim2.several and m.device == 1 and rt.current_device() == rt.Device(0)
    assert multidevice.node_devices(g) == {first.handle: 0, warm.handle: 0, n.handle: 0, behind.handle: 0,
                                           again.handle: 0, m.handle: 1}


def test_a_node_placed_on_a_second_device_first_marks_several_devices_in_use(sim2):
    multidevice._reset_several(sim2)
    buf = rt.malloc(64)
    g = rt.Graph()
    m = g.add_memset(buf, 2, 64, device=1)  # (device 1's first use: no scope, no allocation there)
    assert sim2.several and m.device == 1 and rt.current_device() == rt.Device(0)


def test_objects_know_their_device(sim1):
    s, e, buf, pool = rt.Stream(), rt.Event(), rt.malloc(64), rt.MemPool()
    ab = s.malloc_async(64)
    g = rt.Graph()
    alloc = g.add_mem_alloc(64)
    assert (s.device, e.device, buf.device, pool.device, ab.device, alloc.device) == (0, 0, 0, 0, 0, 0)
    assert rt.Stream.legacy_default().device == 0
    assert g.add_memset(buf, 0, 64).device == 0  # without device=: one device in use, so device 0
    ab.free(s)
    s.synchronize()


def test_self_peer_access_is_the_runtimes_answer_naming_both(sim1):
    # as CUDA 13.0 answers on two H200s: enabling access to itself is PeerAccessUnsupported
    # (conformance deviation multidevice.peer.enable_self); asking is answered, 0
    with pytest.raises(errors.NotSupported) as e:
        rt.Device(0).enable_peer_access(0)
    assert e.value.name == "cudaErrorPeerAccessUnsupported" and "device 0 and its peer are the same device" in str(e.value)
    assert rt.Device(0).can_access_peer(0) is False
    assert rt.Device(0).peer_access_enabled(0)  # a device always reaches its own memory


def test_refused_device_keyword_leaves_no_node(sim1):
    buf = rt.malloc(64)
    g = rt.Graph()
    for call in (lambda: g.add_memset(buf, 0, 64, device=1), lambda: g.add_mem_alloc(64, peers=[7]),
                 lambda: g.add_memcpy(buf, buf, 64, device=9)):
        with pytest.raises(errors.InvalidDevice):
            call()
    with pytest.raises(errors.InvalidValue) as e:  # the runtime's answer (a location naming no device)
        g.add_mem_alloc(64, device=2)
    assert e.value.name == "cudaErrorInvalidValue"
    with pytest.raises(errors.InvalidValue):
        g.add_memset(buf, 0, 64, device="one")
    assert len(g) == 0 and rt.current_device() == rt.Device(0)


# ============================================================================ two devices (sim)
def test_scope_restores_the_previous_device_also_when_the_block_raises(sim2):
    assert rt.current_device() == rt.Device(0)
    with pytest.raises(KeyError):
        with rt.Device(1):
            assert rt.current_device() == rt.Device(1)
            raise KeyError("inside")
    assert rt.current_device() == rt.Device(0)
    with rt.Device(1):  # nested, and a block that switched devices itself
        with rt.Device(0):
            rt.Device(1).set_current()
        assert rt.current_device() == rt.Device(1)
    assert rt.current_device() == rt.Device(0)


def test_an_exit_without_its_enter_is_refused_and_ends_no_other_scope(sim2):
    """Found by the generated API calls: Device.__exit__ with no scope open raised IndexError, and
    with another block's scope open it ended that one."""
    with pytest.raises(errors.IllegalState, match="not the innermost"):
        rt.Device(0).__exit__(None, None, None)
    with rt.Device(1):
        with pytest.raises(errors.IllegalState):
            rt.Device(1).__exit__(None, None, None)  # another object: not this block's scope
        assert rt.current_device() == rt.Device(1)
    assert rt.current_device() == rt.Device(0)


def test_scopes_are_per_thread(sim2):
    seen: list[Any] = []
    entered, release = threading.Event(), threading.Event()

    def other() -> None:
        with rt.Device(1):
            seen.append(rt.current_device())
            entered.set()
            release.wait(10)
        seen.append(rt.current_device())

    t = threading.Thread(target=other)
    t.start()
    assert entered.wait(10)
    assert rt.current_device() == rt.Device(0)  # the other thread's scope is its own
    release.set()
    t.join(10)
    assert seen == [rt.Device(1), rt.Device(0)]


def test_peer_access_second_enable_is_success_and_the_record_is_pygraphrts(sim2):
    d0, d1 = rt.Device(0), rt.Device(1)
    assert d0.can_access_peer(1) and d1.can_access_peer(d0)
    assert not d0.peer_access_enabled(1)
    d0.enable_peer_access(1)
    d0.enable_peer_access(d1)  # the runtime's PeerAccessAlreadyEnabled: success here
    assert d0.peer_access_enabled(1) and not d1.peer_access_enabled(0)
    assert rt.current_device() == d0
    with rt.Device(1):
        d0.disable_peer_access(1)  # made with device 0 current, device 1 current again after
        assert rt.current_device() == d1
    assert not d0.peer_access_enabled(1)
    with pytest.raises(errors.GraphRTError) as e:
        d0.disable_peer_access(1)
    assert e.value.name == "cudaErrorPeerAccessNotEnabled"
    a = d0.p2p_attributes(1)
    assert a == rt.P2PAttributes(performance_rank=0, access_supported=True, native_atomic_supported=True,
                                 array_access_supported=False)


def test_objects_know_their_device_on_device_1(sim2):
    with rt.Device(1):
        s, e, buf, pool = rt.Stream(), rt.Event(), rt.malloc(64), rt.MemPool()
        assert rt.Stream.legacy_default().device == 1  # the current device's
    ab = s.malloc_async(64)  # from the pool of the stream's device, whichever is current
    wrapped = rt.Stream.wrap(int(s))
    assert (s.device, e.device, buf.device, pool.device, ab.device, wrapped.device) == (1, 1, 1, 1, 1, 1)
    assert rt.multidevice.pointer_device(buf) == 1 and rt.multidevice.pointer_device(bytearray(8)) is None
    ab.free(s)
    s.synchronize()


def test_event_of_another_device_is_refused_before_the_runtime(sim2):
    s0 = rt.Stream()
    with rt.Device(1):
        e1 = rt.Event()
    with runtime_calls(sim2) as calls, pytest.raises(errors.InvalidResourceHandle) as e:
        s0.record(e1)
    assert "EventRecord" not in calls
    assert "event belongs to device 1 and the stream to device 0" in str(e.value)
    s0.wait(e1)  # a wait may use another device's event
    # refused inside a capture: no node, and the capture does not stay running
    with pytest.raises(errors.InvalidResourceHandle):
        with s0.capture():
            s0.record(e1)
    assert s0.capture_status is CaptureStatus.NONE


def test_device_keyword_switches_restores_and_records(sim2):
    buf0 = rt.malloc(64)
    with rt.Device(1):
        buf1 = rt.malloc(64)
    g = rt.Graph()
    with pytest.raises(errors.InvalidValue):  # refused by the runtime with device 1 current
        g.add_memset(buf1, 5, 4096, device=1)
    assert len(g) == 0 and rt.current_device() == rt.Device(0)
    with runtime_calls(sim2) as calls:
        n = g.add_memset(buf1, 5, 64, device=1)
    assert calls == ["GetDevice", "SetDevice", "SetDevice"] and rt.current_device() == rt.Device(0)
    assert n.device == 1
    c = g.add_memcpy(buf0, buf1, 64, dependencies=[n], device=rt.Device(0))
    assert c.device == 0
    p = c.params
    assert (p["dst_device"], p["src_device"]) == (0, 1)
    h = g.add_memcpy(bytearray(8), buf1, 8)
    assert (h.params["dst_device"], h.params["src_device"]) == (None, 1)
    s = rt.Stream()
    g.instantiate().launch(s)
    s.synchronize()
    assert buf0.to_bytes() == bytes([5]) * 64


def test_mem_alloc_peers_fill_the_access_descriptors(sim2):
    g = rt.Graph()
    a = g.add_mem_alloc(256, device=1, peers=[0, 1])
    assert a.device == 1 and a.params["device"] == 1
    assert a.params["peers"] == {0: "read_write"}  # (its own device has access: not listed)
    assert g.add_mem_alloc(256).params["peers"] == {}
    assert rt.current_device() == rt.Device(0)


def test_pool_access(sim2):
    with rt.Device(1):
        pool = rt.MemPool()
    assert pool.device == 1 and rt.MemPool(device=1).device == 1
    assert pool.access(1) == "read_write" and pool.access(0) == "none"
    with pytest.raises(errors.NotSupported):  # read-only, as CUDA 13.0 refuses it (a conformance deviation)
        pool.set_access(0, "read")
    assert pool.access(0) == "none"
    pool.set_access(rt.Device(0))
    assert pool.access(0) == "read_write"
    with pytest.raises(errors.InvalidValue):
        pool.set_access(0, "write")


def test_kernel_argument_of_a_device_without_peer_access_is_refused(sim2):
    k = kernels()["md_copy"]
    buf0 = rt.malloc(64)
    with rt.Device(1):
        buf1 = rt.malloc(64)
    g = rt.Graph()
    with pytest.raises(errors.InvalidValue) as e:
        g.add_kernel(k, 1, 16, (buf0, buf1, 16), device=0)
    assert "argument 1" in str(e.value) and "device 1's memory" in str(e.value)
    assert len(g) == 0
    rt.Device(0).enable_peer_access(1)
    try:
        assert g.add_kernel(k, 1, 16, (buf0, buf1, 16), device=0).device == 0
    finally:
        rt.Device(0).disable_peer_access(1)


def test_exec_update_cannot_move_a_kernel_node_to_another_device(sim2):
    k = kernels()["md_copy"]
    with rt.Device(1):
        a, b = rt.malloc(64), rt.malloc(64)
    g1, g2 = rt.Graph(), rt.Graph()
    g1.add_kernel(k, 1, 16, (a, b, 16), device=1)
    rt.Device(0).enable_peer_access(1)
    try:
        g2.add_kernel(k, 1, 16, (a, b, 16), device=0)
    finally:
        rt.Device(0).disable_peer_access(1)
    exe = g1.instantiate()
    with pytest.raises(errors.GraphExecUpdateError) as e:
        exe.update(g2)
    assert "device 1 in the executable graph and on device 0 in the new graph" in str(e.value)
    g3 = rt.Graph()
    g3.add_kernel(k, 1, 16, (b, a, 16), device=1)
    exe.update(g3)  # the same device: the runtime's update
    with pytest.raises(errors.GraphExecUpdateError) as e:  # (the devices recorded from g3 now)
        exe.update(g2)
    assert "device 1 in the executable graph and on device 0 in the new graph" in str(e.value)


# ============================================================================ the runtime's per-device rules (sim)
@contextlib.contextmanager
def no_peer_access(backend: Any) -> Iterator[None]:
    """The simulated machine without peer access (PYGRAPHRT_SIM_PEER_ACCESS=0) for the block."""
    rt_ = backend.runtime
    saved = rt_.peer_capable
    rt_.peer_capable = False
    try:
        yield
    finally:
        rt_.peer_capable = saved


@contextlib.contextmanager
def peer(device: int, other: int) -> Iterator[None]:
    rt.Device(device).enable_peer_access(other)
    try:
        yield
    finally:
        rt.Device(device).disable_peer_access(other)


def faults(backend: Any, call: Any) -> str:
    """``call()`` must fail with the runtime's cudaErrorIllegalAddress and be recorded as undefined
    behaviour (a GPU faults); returns the recorded reason."""
    sim.undefined_calls(clear=True)
    with pytest.raises(errors.GraphRTError) as e:
        call()
    assert e.value.name == "cudaErrorIllegalAddress", e.value
    recorded = sim.undefined_calls(clear=True)
    assert recorded, "the illegal access was not recorded as undefined behaviour"
    return recorded[-1][1]


def test_sim_event_record_on_another_devices_stream_is_the_runtimes_invalid_resource_handle(sim2):
    ops = sim2.ops
    s0 = rt.Stream()
    with rt.Device(1):
        e1, s1 = rt.Event(), rt.Stream()
    with pytest.raises(errors.InvalidResourceHandle) as e:  # the raw call: the runtime's own refusal
        ops.call("EventRecord", e1.handle, s0.handle)
    assert "the event belongs to device 1 and the stream to device 0" in str(e.value)
    ops.call("EventRecord", e1.handle, s1.handle)  # its own device's stream
    ops.call("StreamWaitEvent", s0.handle, e1.handle, 0)  # a wait may use another device's event
    s0.synchronize()


def test_sim_kernel_touching_another_devices_memory_needs_peer_access(sim2):
    k = kernels()["md_copy"]
    s0, buf0 = rt.Stream(), rt.malloc(64)
    with rt.Device(1):
        buf1 = rt.malloc(64)
    buf1.copy_from(bytes(range(64)))
    # plain addresses: pygraphrt cannot tell their device, the runtime (here the simulator) faults
    why = faults(sim2, lambda: s0.launch(k, 1, 16, buf0.ptr, buf1.ptr, 16))
    assert "device 0 has no peer access" in why and "device 1" in why
    with peer(0, 1):
        s0.launch(k, 1, 16, buf0.ptr, buf1.ptr, 16)
        s0.synchronize()
    assert buf0.to_bytes() == bytes(range(64))
    faults(sim2, lambda: s0.launch(k, 1, 16, buf0.ptr, buf1.ptr, 16))  # disabled again


def test_sim_copies_between_devices_need_no_peer_access(sim2):
    with no_peer_access(sim2):
        assert rt.Device(0).can_access_peer(1) is False
        with pytest.raises(errors.InvalidDevice) as e:
            rt.Device(0).enable_peer_access(1)
        assert "device 0 and peer device 1" in str(e.value)
        assert rt.Device(0).p2p_attributes(1).access_supported is False
        s0, a = rt.Stream(), rt.malloc(256)
        with rt.Device(1):
            b = rt.malloc(256)
        a.copy_from(bytes(range(256)))
        s0.memcpy(b, a, 256)
        s0.synchronize()
        assert b.to_bytes() == bytes(range(256))
    assert rt.Device(0).can_access_peer(1) is True


def test_sim_peer_access_setting_from_the_environment(monkeypatch):
    from pygraphrt._vendors.sim._vendor import settings

    monkeypatch.setenv("PYGRAPHRT_SIM_PEER_ACCESS", "0")
    assert settings()["peer_access"] is False
    monkeypatch.setenv("PYGRAPHRT_SIM_PEER_ACCESS", "yes")
    with pytest.raises(errors.BackendError):
        settings()
    monkeypatch.delenv("PYGRAPHRT_SIM_PEER_ACCESS")
    assert settings()["peer_access"] is True


def test_sim_graph_memory_access_descriptors(sim2):
    k = kernels()["md_copy"]
    n = 64
    out, s = rt.malloc(4 * n), rt.Stream()
    for peers, ok in (([], False), ([0], True)):
        g = rt.Graph()
        alloc = g.add_mem_alloc(4 * n, device=1, peers=peers)
        fill = g.add_memset(alloc.dptr, 7, 4 * n, dependencies=[alloc], device=1)
        read = g.add_kernel(k, 1, n, (out, alloc.dptr, n), dependencies=[fill], device=0)
        g.add_mem_free(alloc, dependencies=[read], device=1)
        exe = g.instantiate()
        if ok:
            exe.launch(s)
            s.synchronize()
            assert out.to_bytes() == bytes([7]) * (4 * n)
        else:
            assert "accessDescs" in faults(sim2, lambda: exe.launch(s))
        exe.close()
        g.close()


def test_sim_pool_memory_needs_the_pools_access(sim2):
    k = kernels()["md_copy"]
    s0, out = rt.Stream(), rt.malloc(64)
    with rt.Device(1):
        pool, s1 = rt.MemPool(), rt.Stream()
    buf = s1.malloc_async(64, pool=pool)
    s1.synchronize()
    with peer(0, 1):  # peer access does not reach pool memory
        assert "cudaMemPoolSetAccess" in faults(sim2, lambda: s0.launch(k, 1, 16, out.ptr, buf.ptr, 16))
    pool.set_access(0)
    s0.launch(k, 1, 16, out.ptr, buf.ptr, 16)
    s0.synchronize()
    pool.set_access(0, "none")
    buf.free(s1)
    s1.synchronize()


def test_sim_captured_allocation_takes_the_pools_access_at_capture_time(sim2):
    k = kernels()["md_copy"]
    n = 16
    out = rt.malloc(4 * n)
    with rt.Device(1):
        pool, s1 = rt.MemPool(), rt.Stream()
    s0 = rt.Stream()
    for granted in (True, False):
        pool.set_access(0, "read_write" if granted else "none")
        fork, join = rt.Event(), None
        with s0.capture() as cap:
            s0.record(fork)
            s1.wait(fork)
            with rt.Device(1):
                buf = s1.malloc_async(4 * n, pool=pool)
                s1.memset(buf, 3, 4 * n)
                join = rt.Event()
                s1.record(join)
            s0.wait(join)
            s0.launch(k, 1, n, out.ptr, buf.ptr, n)  # device 0 reads device 1's graph memory
            s1.wait(rt_record(s0))
            with rt.Device(1):
                buf.free(s1)
                back = rt.Event()
                s1.record(back)
            s0.wait(back)
        alloc = next(x for x in cap.graph.nodes() if x.type is NodeType.MEM_ALLOC)
        assert alloc.params["peers"] == ({0: "read_write"} if granted else {})
        pool.set_access(0, "none" if granted else "read_write")  # changed after the capture: no effect
        exe = cap.graph.instantiate()
        if granted:
            exe.launch(s0)
            s0.synchronize()
            assert out.to_bytes() == bytes([3]) * (4 * n)
        else:
            faults(sim2, lambda: exe.launch(s0))
        exe.close()
    pool.set_access(0, "none")


def rt_record(stream: Any) -> Any:
    """An event of ``stream``'s device recorded on it (made with that device current)."""
    with rt.Device(stream.device):
        e = rt.Event()
    stream.record(e)
    return e


def test_conditional_body_kernels_on_one_device_and_no_event_nodes(sim2):
    k = kernels()["md_copy"]
    buf = rt.malloc(64)
    g = rt.Graph()
    node = g.add_if(g.conditional_handle(1))
    (body,) = node.bodies
    with peer(1, 0):
        with pytest.raises(errors.InvalidValue) as e:
            body.add_kernel(k, 1, 16, (buf, buf, 16), device=1)  # pygraphrt refuses first
        assert e.value.api == "Graph.add_kernel" and e.value.code is None
        assert "conditional node of device 0" in str(e.value)
        with rt.Device(1), pytest.raises(errors.InvalidValue) as e:  # without device=: the runtime refuses
            body.add_kernel(k, 1, 16, (buf, buf, 16))
        assert "all kernels of a conditional node's bodies" in str(e.value)
    assert len(body) == 0
    body.add_kernel(k, 1, 16, (buf, buf, 16), device=0)
    with rt.Device(0):
        ev = rt.Event()
    with pytest.raises(errors.InvalidValue) as e:
        body.add_event_record(ev)
    assert e.value.code is None and "no event record or event wait nodes" in str(e.value)
    p = sim2.ffi.new("cudaGraphNode_t *")
    with pytest.raises(errors.InvalidValue):  # the raw call: the runtime's refusal
        sim2.ops.call("GraphAddEventWaitNode", p, body.handle, sim2.ffi.NULL, 0, ev.handle)
    assert len(body) == 1


def test_device_launch_graph_has_its_nodes_on_one_device(sim2):
    buf0 = rt.malloc(64)
    with rt.Device(1):
        buf1 = rt.malloc(64)
    g = rt.Graph()
    g.add_memset(buf0, 1, 64, device=0)
    g.add_memset(buf1, 1, 64, device=1)
    with pytest.raises(errors.InvalidValue) as e:
        g.instantiate(device_launch=True)
    assert e.value.code is None and "devices [0, 1]" in str(e.value)  # pygraphrt's, before the runtime
    out = sim2.ffi.new("cudaGraphExec_t *")
    with pytest.raises(errors.InvalidValue) as e:  # the raw call
        sim2.ops.call("GraphInstantiateWithFlags", out, g.handle, 4)
    assert "on one device" in str(e.value)
    one = rt.Graph()
    one.add_memset(buf1, 1, 64, device=1)
    one.add_memset(buf1, 2, 32, device=1)
    one.instantiate(device_launch=True).close()
    g.instantiate().close()  # for host launch several devices are fine


def test_sim_exec_update_keeps_kernel_contexts_and_memcpy_operand_devices(sim2):
    k = kernels()["md_copy"]
    a0, b0 = rt.malloc(64), rt.malloc(64)
    with rt.Device(1):
        a1 = rt.malloc(64)
    with peer(1, 0):
        g1, g2 = rt.Graph(), rt.Graph()
        g1.add_kernel(k, 1, 16, (a0.ptr, b0.ptr, 16))  # without device=: current device 0
        with rt.Device(1):
            g2.add_kernel(k, 1, 16, (a0.ptr, b0.ptr, 16))  # device 1 current
            s1 = rt.Stream()
            with s1.capture() as cap:  # captured: a node pygraphrt did not make, so has no record of
                s1.launch(k, 1, 16, a0.ptr, b0.ptr, 16)
        exe = g1.instantiate()
        with pytest.raises(errors.GraphExecUpdateError) as e:  # pygraphrt has no record: the runtime's
            exe.update(cap.graph)
        assert e.value.result is UpdateResult.UNSUPPORTED_FUNCTION_CHANGE
        with pytest.raises(errors.GraphExecUpdateError) as e:  # recorded (device 1 current): pygraphrt's
            exe.update(g2)
        assert e.value.result is UpdateResult.ERROR and "runs on device 0 in the executable graph and on device 1" in str(e.value)
    c1, c2, c3 = rt.Graph(), rt.Graph(), rt.Graph()
    c1.add_memcpy(a0, b0, 64)
    c2.add_memcpy(a1, b0, 64)  # the destination moves to device 1
    c3.add_memcpy(b0, a0, 64)  # device 0 still
    exe = c1.instantiate()
    with pytest.raises(errors.GraphExecUpdateError) as e:
        exe.update(c2)
    assert e.value.result is UpdateResult.PARAMETERS_CHANGED
    exe.update(c3)


# ============================================================================ two devices: real work
@pytest.fixture(params=[pytest.param("gpu", marks=pytest.mark.gpu), "sim"])
def two_devices(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The backend of a 2-device test: the GPU (skipping, or failing under
    PYGRAPHRT_REQUIRE_GPU=1, with fewer than 2) or a simulator with 2 devices."""
    if request.param == "sim":
        with simulator(2) as backend:
            yield backend
        return
    from pygraphrt import _runtime

    backend = _runtime.active()
    require_devices(2, backend)
    yield backend


R, C = 256, 128  # the matrix of the tensor-parallel step; each device takes C // 2 columns
H = C // 2


class TensorParallelStep:
    """y = A @ x with A's columns split over devices 0 and 1: each computes its partial product,
    device 1's partial is copied to device 0, which adds both into ``acc`` (so that after N
    replays acc = N * A @ x: every replay counts)."""

    def __init__(self) -> None:
        rng = np.random.default_rng(40)
        self.a = rng.integers(-9, 10, size=(R, C), dtype=np.int32)
        self.x = rng.integers(-9, 10, size=C, dtype=np.int32)
        self.k = kernels()
        self.s0, self.e_fork = rt.Stream(), rt.Event()  # device 0's
        self.acc, self.p0, self.from1 = rt.malloc(4 * R), rt.malloc(4 * R), rt.malloc(4 * R)
        self.a0, self.x0 = rt.malloc(4 * R * H), rt.malloc(4 * H)
        self.a0.copy_from(np.ascontiguousarray(self.a[:, :H]))
        self.x0.copy_from(self.x[:H].copy())
        with rt.Device(1):  # device 1's stream, event and buffers
            self.s1, self.e_join = rt.Stream(), rt.Event()
            self.a1, self.x1, self.p1 = rt.malloc(4 * R * H), rt.malloc(4 * H), rt.malloc(4 * R)
            self.a1.copy_from(np.ascontiguousarray(self.a[:, H:]))
            self.x1.copy_from(self.x[H:].copy())
        self.acc.copy_from(bytes(4 * R))

    @property
    def expected(self) -> np.ndarray:
        return (self.a.astype(np.int64) @ self.x).astype(np.int32)

    def issue(self) -> None:
        """The step's work on the two streams (fork to device 1 and join back)."""
        k, grid = self.k, (R + 127) // 128
        self.s0.record(self.e_fork)
        self.s1.wait(self.e_fork)  # device 1 waits on device 0's event
        self.s0.launch(k["tp_matvec"], grid, 128, self.a0, self.x0, self.p0, R, H)
        with rt.Device(1):
            self.s1.launch(k["tp_matvec"], grid, 128, self.a1, self.x1, self.p1, R, H)
            self.s1.memcpy(self.from1, self.p1, 4 * R)  # the partial to device 0
            self.s1.record(self.e_join)  # device 1's event on device 1's stream
        self.s0.wait(self.e_join)
        self.s0.launch(k["tp_accumulate"], grid, 128, self.acc, self.p0, self.from1, R)

    def build(self) -> Any:
        """The same step as an explicit graph, each node on its device."""
        k, grid = self.k, (R + 127) // 128
        g = rt.Graph()
        m0 = g.add_kernel(k["tp_matvec"], grid, 128, (self.a0, self.x0, self.p0, R, H), device=0)
        m1 = g.add_kernel(k["tp_matvec"], grid, 128, (self.a1, self.x1, self.p1, R, H), device=1)
        cp = g.add_memcpy(self.from1, self.p1, 4 * R, dependencies=[m1], device=1)
        g.add_kernel(k["tp_accumulate"], grid, 128, (self.acc, self.p0, self.from1, R),
                     dependencies=[m0, cp], device=0)
        assert (m0.device, m1.device, cp.device) == (0, 1, 1)
        assert (cp.params["dst_device"], cp.params["src_device"]) == (0, 1)
        return g

    def replay(self, graph: Any, times: int) -> np.ndarray:
        exe = graph.instantiate()
        for _ in range(times):
            exe.launch(self.s0)
        self.s0.synchronize()
        return ints(self.acc, R)


@pytest.mark.devices(2)
class TestTwoDevices:
    def test_tensor_parallel_step_captured_once_replayed_1000_times(self, two_devices):
        step = TensorParallelStep()
        step.issue()  # eagerly once: the single step's result
        step.s0.synchronize()
        assert np.array_equal(ints(step.acc, R), step.expected)
        step.acc.copy_from(bytes(4 * R))
        with step.s0.capture() as cap:
            step.issue()
        assert step.s1.capture_status is CaptureStatus.NONE
        devices = {n.type: n for n in cap.graph.nodes()}
        assert devices[NodeType.MEMCPY].params["src_device"] == 1
        assert np.array_equal(step.replay(cap.graph, 1000), 1000 * step.expected.astype(np.int64))
        assert rt.current_device() == rt.Device(0)

    def test_tensor_parallel_step_built_explicitly(self, two_devices):
        step = TensorParallelStep()
        assert np.array_equal(step.replay(step.build(), 1000), 1000 * step.expected.astype(np.int64))
        assert rt.current_device() == rt.Device(0)

    def test_graph_memory_on_device_1_read_by_a_kernel_on_device_0(self, two_devices):
        k = kernels()["md_copy"]
        n = 1024
        out = rt.malloc(4 * n)
        g = rt.Graph()
        alloc = g.add_mem_alloc(4 * n, device=1, peers=[0])
        assert alloc.params["peers"] == {0: "read_write"}
        fill = g.add_memset(alloc.dptr, 0x5A, 4 * n, dependencies=[alloc], device=1)
        read = g.add_kernel(k, n // 128, 128, (out, alloc.dptr, n), dependencies=[fill], device=0)
        g.add_mem_free(alloc, dependencies=[read], device=1)
        s = rt.Stream()
        g.instantiate().launch(s)
        s.synchronize()
        assert out.to_bytes() == bytes([0x5A]) * (4 * n)

    def test_device_keyword_asks_which_device_is_current_each_time(self, two_devices):
        """``device=0`` lands on device 0 while another device was made current behind
        pygraphrt's back (the runtime's own SetDevice, as torch.cuda.set_device does), which
        it restores; and from a thread where no context is current yet (CUDA's driver query
        refuses there and the runtime's answers: device 0).  The compiled adds ask in C."""
        backend = two_devices
        buf = rt.malloc(256)
        g = rt.Graph()
        backend.ops.call("SetDevice", 1)
        try:
            assert multidevice.current(backend) == 1
            first = g.add_memset(buf, 7, 256, device=0)
            assert multidevice.current(backend) == 1
        finally:
            backend.ops.call("SetDevice", 0)
        seen: list[Any] = []

        def in_a_new_thread() -> None:
            try:
                seen.append(multidevice.current(backend))
                seen.append(g.add_memset(buf, 9, 128, dependencies=[first], device=0))
            except BaseException as exc:  # (reported by the test's own thread)
                seen.append(exc)

        thread = threading.Thread(target=in_a_new_thread)
        thread.start()
        thread.join(timeout=60)
        assert not thread.is_alive() and seen[0] == 0 and len(seen) == 2, seen
        assert (first.device, seen[1].device) == (0, 0)
        s = rt.Stream()
        g.instantiate().launch(s)
        s.synchronize()
        assert buf.to_bytes() == bytes([9]) * 128 + bytes([7]) * 128

    def test_node_device_without_the_keyword_from_the_runtime_where_it_tells(self, two_devices):
        with rt.Device(1):
            buf = rt.malloc(64)
            g = rt.Graph()
            node = g.add_memset(buf, 1, 64)  # no device=: made with device 1 current
        # from the runtime where it tells (13.2+), else pygraphrt's record of the current device
        # (kept once several devices are in use: `with rt.Device(1)` made it so)
        assert node.device == 1

    def test_every_kernel_node_made_without_the_keyword_records_its_device(self, two_devices):
        """A kernel's later nodes (ABI mode and the simulator make them by its generated hot
        adder while one device is in use) record the current device as its first node does."""
        k = kernels()["md_copy"]
        with rt.Device(1):
            buf = rt.malloc(64)
            g = rt.Graph()
            nodes = [g.add_kernel(k, 1, 16, (buf, buf, 16))]
            for _ in range(3):
                nodes.append(g.add_kernel(k, 1, 16, (buf, buf, 16), dependencies=[nodes[-1]]))
        nodes.append(g.add_kernel(k, 1, 16, (buf, buf, 16), dependencies=[nodes[-1]], device=1))
        assert [n.device for n in nodes] == [1] * 5

    @pytest.mark.parametrize("size", [1, 4096, 64 << 20])
    def test_peer_copies(self, two_devices, size):
        data = np.random.default_rng(size).integers(0, 256, size=size, dtype=np.uint8).tobytes()
        src = rt.malloc(size)
        src.copy_from(data)
        s0 = rt.Stream()
        with rt.Device(1):
            mid, s1 = rt.malloc(size), rt.Stream()
        back = rt.malloc(size)
        s0.memcpy(mid, src, size)  # eager, device 0 -> 1
        s0.synchronize()
        assert mid.to_bytes() == data
        with s1.capture() as cap:  # captured, device 1 -> 0
            s1.memcpy(back, mid, size)
        (node,) = cap.graph.nodes()
        assert (node.params["dst_device"], node.params["src_device"]) == (0, 1)
        cap.graph.instantiate().launch(s1)
        s1.synchronize()
        assert back.to_bytes() == data
        g = rt.Graph()  # explicit, device 1 -> 0 again, into a zeroed buffer
        back.copy_from(bytes(size))
        g.add_memcpy(back, mid, size, device=1)
        g.instantiate().launch(s0)
        s0.synchronize()
        assert back.to_bytes() == data

    def test_capture_fork_join_across_devices_with_events_of_their_streams_devices(self, two_devices):
        n = 4096
        s0, fork, b0 = rt.Stream(), rt.Event(), rt.malloc(n)
        with rt.Device(1):
            s1, join, b1 = rt.Stream(), rt.Event(), rt.malloc(n)
        with s0.capture() as cap:
            s0.memset(b0, 1, n)
            s0.record(fork)
            s1.wait(fork)
            with rt.Device(1):
                s1.memset(b1, 2, n)
                s1.memcpy(b0, b1, n // 2)  # after both memsets: the left half from device 1
                s1.record(join)
            s0.wait(join)
        g = cap.graph
        assert len(g) == 3
        g.instantiate().launch(s0)
        s0.synchronize()
        assert b0.to_bytes() == bytes([2]) * (n // 2) + bytes([1]) * (n // 2)
        assert b1.to_bytes() == bytes([2]) * n


# ============================================================================ vendor tables
@pytest.mark.parametrize("binding", ["cuda12", "cuda13", "hip6", "hip7"])
def test_vendor_tables_name_the_bindings_own_members(binding):
    """The several-device names resolve in each binding, with the vendor's own enum values
    (cudaDevP2PAttr counts from 1, hipDeviceP2PAttr from 0) and struct types."""
    import importlib

    from pygraphrt._vendors import CudaVendor, HipVendor

    pkg = importlib.import_module(f"pygraphrt._bindings.{binding}")
    symbols = importlib.import_module(f"pygraphrt._bindings.{binding}.symbols")
    cls = HipVendor if binding.startswith("hip") else CudaVendor
    ops = cls(pkg.ffi, pkg.ffi.dlopen(None), binding, symbols)
    ranks = {name: int(getattr(ops.lib, member)) for name, member in ops.p2p_attributes.items()}
    first = 0 if binding.startswith("hip") else 1
    assert ranks == {"performance_rank": first, "access_supported": first + 1,
                     "native_atomic_supported": first + 2, "array_access_supported": first + 3}
    for ctype in (ops.pointer_attributes_type, ops.mem_access_desc_type, ops.mem_access_flags_type):
        assert pkg.ffi.sizeof(ctype) > 0
    descs = ops.access_descs([1, 3])
    assert [(d.location.id, d.flags) for d in descs] == [(1, ops.const("MemAccessFlagsProtReadWrite"))] * 1 + \
        [(3, ops.const("MemAccessFlagsProtReadWrite"))]
    for fn in ("DeviceCanAccessPeer", "DeviceEnablePeerAccess", "DeviceDisablePeerAccess", "DeviceGetP2PAttribute",
               "PointerGetAttributes", "MemPoolSetAccess", "MemPoolGetAccess", "StreamGetDevice"):
        assert ops.prefix + fn in symbols.API_SYMBOLS, fn
