"""Conformance cases, area ``multidevice``: the runtime's rules for work on several devices.

Every case needs two devices (``devices>=2``: on one device the area skips, saying so; on the
simulator ``PYGRAPHRT_SIM_DEVICES=2``).  Runtime cases call the runtime through the raw layer
(``t.call``) where pygraphrt would refuse first; the cases of ``kind="binding"`` check
pygraphrt's own refusals and records.

Two kinds of case run on the simulator only (``sim``): a kernel touching memory its device may
not reach (an illegal-address fault on a GPU, which poisons the context: it must never run in
the suite's process), and a machine without peer access (the NVLink test machines have it).
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from pygraphrt import errors
from pygraphrt.enums import InstantiateFlags, NodeType

from .._case import CaseContext, case

_RT = "CUDA Runtime API 13.0"
EVENT_RECORD = f"{_RT}, Event Management, cudaEventRecord: "
WAIT_EVENT = f"{_RT}, Stream Management, cudaStreamWaitEvent: "
PEER = f"{_RT}, Peer Device Memory Access, "
POOL = f"{_RT}, Stream Ordered Memory Allocator, "
MEMCPY = f"{_RT}, Memory Management, cudaMemcpyAsync: "
COND = f"{_RT}, Data types, cudaConditionalNodeParams: "
UPDATE = f"{_RT}, Graph Management, cudaGraphExecUpdate: "
PG_DEVICE_LAUNCH = "CUDA Programming Guide, CUDA Graphs, Device Graph Launch (device graph creation): "
PG_GRAPH_MEMORY = "CUDA Programming Guide, CUDA Graphs, Graph Memory Nodes, Peer Access (with stream capture): "
PYGRAPHRT = "pygraphrt README, Several GPUs: "

TWO = ("devices>=2",)
TWO_K = ("devices>=2", "kernels")
SIM = ("devices>=2", "sim")
SIM_K = ("devices>=2", "sim", "kernels")


def _code(t: CaseContext, exc: errors.GraphRTError) -> str:
    """The runtime's error name without the vendor prefix (``ErrorPeerAccessAlreadyEnabled``)."""
    name = exc.name or ""
    prefix = t.backend.ops.prefix
    return name[len(prefix):] if name.startswith(prefix) else name


def _on(t: CaseContext, device: int) -> Any:
    return t.rt.Device(device)


@contextlib.contextmanager
def _peer(t: CaseContext, device: int, peer: int) -> Iterator[None]:
    """Peer access from ``device`` to ``peer`` for the block (pygraphrt's calls; disabled after)."""
    t.rt.Device(device).enable_peer_access(peer)
    try:
        yield
    finally:
        t.rt.Device(device).disable_peer_access(peer)


@contextlib.contextmanager
def _no_peer_hardware() -> Iterator[None]:
    from pygraphrt import sim

    previous = sim.set_peer_access(False)
    try:
        yield
    finally:
        sim.set_peer_access(previous)


# Documentation passages several cases quote (each case adds its own gloss after them).
DOC_STREAM_WAIT_EVENT_SYNCHRONIZATION_PERFORMED = ("CUDA Runtime API 13.5, Stream Management, "
                                                   "cudaStreamWaitEvent: \"The synchronization will be "
                                                   "performed efficiently on the device when applicable. event "
                                                   "may be from a different device than stream\"")


# ---------------------------------------------------------------------------- events and streams
@case("multidevice.event.record_on_another_devices_stream",
      cite="CUDA Runtime API 13.5, Event Management, cudaEventRecord: \"Captures in event the contents of "
           "stream at the time of this call. event and stream must be on the same CUDA context\" -- event "
           "and stream must be on the same device (the driver's cuEventRecord: 'hEvent and hStream must "
           "be from the same context otherwise CUDA_ERROR_INVALID_HANDLE is returned')",
      apis=("EventRecord",), requires=TWO, raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> None:
    """cudaEventRecord of a device-1 event on a device-0 stream is refused by the runtime."""
    s0 = t.stream()
    with _on(t, 1):
        e1 = t.event()
    t.call("EventRecord", e1.handle, s0.handle)


@case("multidevice.event.record_on_another_devices_stream_named", kind="binding",
      cite=PYGRAPHRT + "an event of one device recorded on another device's stream is refused before the "
      "runtime, naming both devices (the runtime says only \"invalid resource handle\")",
      apis=("EventRecord",), requires=TWO, expect=(None, True, True))
def _(t: CaseContext) -> tuple[Any, bool, bool]:
    """Stream.record of another device's event: pygraphrt's refusal (no vendor code) names both
    devices."""
    s0 = t.stream()
    with _on(t, 1):
        e1 = t.event()
    e = t.raises(errors.InvalidResourceHandle, s0.record, e1)
    return getattr(e, "code", None), "device 1" in str(e), "device 0" in str(e)


@case("multidevice.event.wait_on_another_devices_event",
      cite=DOC_STREAM_WAIT_EVENT_SYNCHRONIZATION_PERFORMED + " -- the event may be from a different device than "
           "the stream",
      apis=("EventRecord", "StreamWaitEvent"), requires=TWO, expect=None)
def _(t: CaseContext) -> None:
    """A device-0 stream waits on an event recorded on a device-1 stream."""
    s0 = t.stream()
    with _on(t, 1):
        s1, e1 = t.stream(), t.event()
    t.call("EventRecord", e1.handle, s1.handle)
    t.call("StreamWaitEvent", s0.handle, e1.handle, 0)
    s0.synchronize()


@case("multidevice.event.capture_fork_join_across_devices",
      cite=DOC_STREAM_WAIT_EVENT_SYNCHRONIZATION_PERFORMED + " -- the event may be from a different device than "
           "the stream; CUDA Runtime API 13.5, Event Management, cudaEventRecord: \"Captures in event the "
           "contents of stream at the time of this call. event and stream must be on the same CUDA context\" -- "
           "event and stream must be on the same device",
      apis=("StreamBeginCapture", "EventRecord", "StreamWaitEvent", "StreamEndCapture"), requires=TWO, expect=2)
def _(t: CaseContext) -> int:
    """A capture forks to a device-1 stream and joins back, each event of its stream's device: two
    memset nodes (events between streams of a capture are edges, not nodes)."""
    s0, fork, b0 = t.stream(), t.event(), t.malloc(256)
    with _on(t, 1):
        s1, join, b1 = t.stream(), t.event(), t.malloc(256)
    with s0.capture() as cap:
        s0.memset(b0, 1, 256)
        s0.record(fork)
        s1.wait(fork)
        with _on(t, 1):
            s1.memset(b1, 2, 256)
            s1.record(join)
        s0.wait(join)
    t.track(cap.graph)
    return len(cap.graph)


# ---------------------------------------------------------------------------- peer access
def _can_access(t: CaseContext, d: int, p: int) -> int:
    out = t.ffi.new("int *")
    t.call("DeviceCanAccessPeer", out, d, p)
    return int(out[0])


def _enable_raw(t: CaseContext, peer: int) -> None:
    t.call("DeviceEnablePeerAccess", peer, 0)


@case("multidevice.peer.can_access_self",
      cite="Observed, cudaDeviceCanAccessPeer: asked about a device and itself, it answers 0 with cudaSuccess "
           "(deviations.OBSERVATIONS); CUDA Runtime API 13.5, Peer Device Memory Access, "
           "cudaDeviceCanAccessPeer: \"Returns in *canAccessPeer a value of 1 if device device is capable of "
           "directly accessing memory from peerDevice and 0 otherwise\" -- no documentation sentence states "
           "the answer for a device and itself; the GPU runs answer 0 without an error (a device is not its "
           "own peer)",
      apis=("DeviceCanAccessPeer",), requires=TWO, expect=0)
def _(t: CaseContext) -> int:
    """cudaDeviceCanAccessPeer(0, 0): answered, not refused (a 2-GPU run, CUDA 13.0: no error)."""
    return _can_access(t, 0, 0)


@case("multidevice.peer.can_access_out_of_range",
      cite="CUDA Runtime API 13.5, Peer Device Memory Access, cudaDeviceCanAccessPeer: \"cudaSuccess, "
           "cudaErrorInvalidDevice\" -- returns cudaSuccess, cudaErrorInvalidDevice",
      apis=("DeviceCanAccessPeer",), requires=TWO, raises=errors.InvalidDevice)
def _(t: CaseContext) -> None:
    """cudaDeviceCanAccessPeer(0, device count)."""
    _can_access(t, 0, t.rt.device_count())


@case("multidevice.peer.enable_self",
      cite=PEER + "cudaDeviceEnablePeerAccess: returns cudaErrorInvalidDevice if cudaDeviceCanAccessPeer() "
      "indicates that the current device cannot directly access memory from peerDevice",
      apis=("DeviceEnablePeerAccess",), requires=TWO, raises=errors.InvalidDevice)
def _(t: CaseContext) -> None:
    """cudaDeviceEnablePeerAccess(0) with device 0 current."""
    with _on(t, 0):
        _enable_raw(t, 0)


@case("multidevice.peer.enable_out_of_range",
      cite="CUDA Runtime API 13.5, Peer Device Memory Access, cudaDeviceEnablePeerAccess: \"cudaSuccess, "
           "cudaErrorInvalidDevice, cudaErrorPeerAccessAlreadyEnabled, cudaErrorInvalidValue\" -- returns "
           "cudaSuccess, cudaErrorInvalidDevice, cudaErrorPeerAccessAlreadyEnabled, "
           "cudaErrorInvalidValue",
      apis=("DeviceEnablePeerAccess",), requires=TWO, raises=errors.InvalidDevice)
def _(t: CaseContext) -> None:
    """cudaDeviceEnablePeerAccess(device count)."""
    with _on(t, 0):
        _enable_raw(t, t.rt.device_count())


@case("multidevice.peer.enable_twice",
      cite="CUDA Runtime API 13.5, Peer Device Memory Access, cudaDeviceEnablePeerAccess: \"Returns "
           "cudaErrorPeerAccessAlreadyEnabled if direct access of peerDevice from the current device has "
           "already been enabled\" -- returns cudaErrorPeerAccessAlreadyEnabled if direct access of "
           "peerDevice from the current device has already been enabled (on a machine with peer access)",
      apis=("DeviceCanAccessPeer", "DeviceEnablePeerAccess", "DeviceDisablePeerAccess"), requires=TWO,
      expect="ErrorPeerAccessAlreadyEnabled")
def _(t: CaseContext) -> str:
    """The second cudaDeviceEnablePeerAccess(1) from device 0."""
    t.check(_can_access(t, 0, 1) == 1, "device 0 cannot access device 1: no peer access on this machine")
    with _on(t, 0):
        _enable_raw(t, 1)
        try:
            e = t.raises(errors.GraphRTError, _enable_raw, t, 1)
        finally:
            t.call("DeviceDisablePeerAccess", 1)
    assert isinstance(e, errors.GraphRTError)
    return _code(t, e)


@case("multidevice.peer.disable_not_enabled",
      cite=PEER + "cudaDeviceDisablePeerAccess: returns cudaErrorPeerAccessNotEnabled if direct access to "
      "memory on peerDevice has not yet been enabled from the current device",
      apis=("DeviceDisablePeerAccess",), requires=TWO, expect="ErrorPeerAccessNotEnabled")
def _(t: CaseContext) -> str:
    """cudaDeviceDisablePeerAccess(1) from device 0 without enabling it."""
    with _on(t, 0):
        e = t.raises(errors.GraphRTError, t.call, "DeviceDisablePeerAccess", 1)
    assert isinstance(e, errors.GraphRTError)
    return _code(t, e)


@case("multidevice.peer.enable_twice_is_success", kind="binding",
      cite=PYGRAPHRT + "enabling peer access again is no error (the runtime's PeerAccessAlreadyEnabled is "
      "success for the user); peer_access_enabled is pygraphrt's own record",
      apis=("DeviceEnablePeerAccess", "DeviceDisablePeerAccess"), requires=TWO, expect=(True, False))
def _(t: CaseContext) -> tuple[bool, bool]:
    """Device(0).enable_peer_access(1) twice, then disabled."""
    d0 = t.rt.Device(0)
    d0.enable_peer_access(1)
    try:
        d0.enable_peer_access(1)
        enabled = d0.peer_access_enabled(1)
    finally:
        d0.disable_peer_access(1)
    return enabled, d0.peer_access_enabled(1)


@case("multidevice.peer.no_peer_hardware",
      cite="CUDA Runtime API 13.5, Peer Device Memory Access, cudaDeviceCanAccessPeer: \"Returns in *canAccessPeer "
           "a value of 1 if device device is capable of directly accessing memory from peerDevice and 0 otherwise\"; "
           "CUDA Runtime API 13.5, Peer Device Memory Access, cudaDeviceEnablePeerAccess: \"Returns "
           "cudaErrorInvalidDevice if cudaDeviceCanAccessPeer() indicates that the current device cannot directly "
           "access memory from peerDevice\" -- a machine without peer access: the NVLink test machines cannot show "
           "it, so the simulator's setting does",
      apis=("DeviceCanAccessPeer", "DeviceEnablePeerAccess"), requires=SIM, expect=(0, "ErrorInvalidDevice"))
def _(t: CaseContext) -> tuple[int, str]:
    """On a machine without peer access: the answer and the refusal."""
    with _no_peer_hardware(), _on(t, 0):
        can = _can_access(t, 0, 1)
        e = t.raises(errors.InvalidDevice, _enable_raw, t, 1)
    assert isinstance(e, errors.GraphRTError)
    return can, _code(t, e)


# ---------------------------------------------------------------------------- pools
@case("multidevice.pool.access_default",
      cite="CUDA Runtime API 13.5, Stream Ordered Memory Allocator, cudaMemPoolGetAccess: \"By default, "
           "the pool's memory will be accessible from the device it is allocated on\" -- returns the "
           "accessibility of a pool from a device; a pool's memory is accessible from its own device, "
           "and by default not from others (cudaMemPoolSetAccess grants it)",
      apis=("MemPoolCreate", "MemPoolGetAccess"), requires=TWO, expect=("read_write", "none"))
def _(t: CaseContext) -> tuple[str, str]:
    """A device-1 pool's access from devices 1 and 0."""
    pool = t.track(t.rt.MemPool(device=1))
    return pool.access(1), pool.access(0)


@case("multidevice.pool.set_access",
      cite="CUDA Runtime API 13.5, Stream Ordered Memory Allocator, cudaMemPoolSetAccess: \"Each "
           "descriptor instructs the access to enable for a single gpu\" -- controls visibility of pools "
           "between devices (each descriptor instructs the access to enable for a single GPU); "
           "cudaMemPoolGetAccess reports it",
      apis=("MemPoolSetAccess", "MemPoolGetAccess"), requires=TWO, expect=("read_write", "none"))
def _(t: CaseContext) -> tuple[str, ...]:
    """Read-write, then no access from device 0 to a device-1 pool."""
    pool = t.track(t.rt.MemPool(device=1))
    out = []
    for access in ("read_write", "none"):
        pool.set_access(0, access)
        out.append(pool.access(0))
    return out[0], out[1]


@case("multidevice.pool.set_access_read_only",
      cite="CUDA Runtime API 13.5, Stream Ordered Memory Allocator, cudaMemPoolSetAccess: \"Each "
           "descriptor instructs the access to enable for a single gpu\" -- each descriptor instructs the "
           "access to enable for a single GPU (cudaMemAccessFlagsProtRead: make the address range read "
           "accessible); returns cudaSuccess, cudaErrorInvalidValue", apis=("MemPoolSetAccess", "MemPoolGetAccess"), requires=TWO, expect="read")
def _(t: CaseContext) -> str:
    """Read-only access from device 0 to a device-1 pool."""
    pool = t.track(t.rt.MemPool(device=1))
    pool.set_access(0, "read")
    got = pool.access(0)
    pool.set_access(0, "none")
    return got


@case("multidevice.pool.captured_allocation_takes_access_at_capture",
      cite=PG_GRAPH_MEMORY + "an allocation node made by stream capture records the peer accessibility of "
      "the allocating pool at the time of capture; changing the pool's access afterwards does not change "
      "the mappings the graph makes", apis=("MemPoolSetAccess", "MallocFromPoolAsync"),
      requires=TWO + ("graph_memory_nodes",), expect=({0: "read_write"}, {}))
def _(t: CaseContext) -> tuple[dict[int, str], dict[int, str]]:
    """Allocation nodes captured with and without access granted to device 0."""
    with _on(t, 1):
        pool, s1 = t.track(t.rt.MemPool()), t.stream()
    seen = []
    for access in ("read_write", "none"):
        pool.set_access(0, access)
        with _on(t, 1):
            with s1.capture() as cap:
                buf = s1.malloc_async(256, pool=pool)
                buf.free(s1)
        t.track(cap.graph)
        pool.set_access(0, "none" if access == "read_write" else "read_write")  # after: no effect
        alloc = next(n for n in cap.graph.nodes() if n.type is NodeType.MEM_ALLOC)
        seen.append(alloc.params["peers"])
    pool.set_access(0, "none")
    return seen[0], seen[1]


# ---------------------------------------------------------------------------- copies
def _first_difference(got: bytes, want: bytes) -> int:
    """The first offset where the copy differs from its source (-1: none): what a failure shows."""
    return next((i for i, (a, b) in enumerate(zip(got, want)) if a != b),
                -1 if len(got) == len(want) else min(len(got), len(want)))


def _copied(t: CaseContext, size: int = 4096) -> int:
    data = bytes(i * 7 % 251 for i in range(size))
    s0, src = t.stream(), t.malloc(size)
    src.copy_from(data)
    with _on(t, 1):
        dst = t.malloc(size)
    s0.memcpy(dst, src, size)
    s0.synchronize()
    return _first_difference(dst.to_bytes(), data)


@case("multidevice.copy.without_peer_access",
      cite="CUDA Programming Guide, Peer-to-Peer Memory Copy: with unified addressing, cudaMemcpyDefault "
           "copies between any two addresses; copies between devices need no peer access (CUDA "
           "Programming Guide, Peer-to-Peer Memory Copy)",
      apis=("MemcpyAsync",), requires=TWO, expect=-1)
def _(t: CaseContext) -> int:
    """A device-0 buffer copied into a device-1 buffer, no peer access enabled."""
    return _copied(t)


@case("multidevice.copy.with_peer_access",
      cite="CUDA Runtime API 13.5, Memory Management, cudaMemcpyAsync: \"copies count bytes from the memory "
           "area pointed to by src to the memory area pointed to by dst\" ... \"Passing cudaMemcpyDefault is "
           "recommended, in which case the type of transfer is inferred from the pointer values\" -- the copy "
           "from the device-0 buffer into the device-1 buffer; peer access, enabled first, is no condition of "
           "it; CUDA Programming Guide, Peer-to-Peer Memory Copy: copies between devices work with or without "
           "peer access", apis=("DeviceEnablePeerAccess", "MemcpyAsync"), requires=TWO, expect=-1)
def _(t: CaseContext) -> int:
    """The same copy with peer access enabled both ways."""
    with _peer(t, 0, 1), _peer(t, 1, 0):
        return _copied(t)


@case("multidevice.copy.graph_node_between_devices",
      cite="CUDA Runtime API 13.5, Graph Management, cudaGraphAddMemcpyNode1D: \"However, "
           "cudaMemcpyDefault is only allowed on systems that support unified virtual addressing\" -- a "
           "memcpy node copies between any two addresses with cudaMemcpyDefault (unified addressing), "
           "also between devices",
      apis=("GraphAddMemcpyNode1D", "GraphLaunch"), requires=TWO, expect=-1)
def _(t: CaseContext) -> int:
    """A memcpy node from device 1's memory into device 0's."""
    size = 1024
    data = bytes(range(256)) * 4
    with _on(t, 1):
        src = t.malloc(size)
    src.copy_from(data)
    dst, s0 = t.malloc(size), t.stream()
    g = t.graph()
    g.add_memcpy(dst, src, size)
    t.instantiate(g).launch(s0)
    s0.synchronize()
    return _first_difference(dst.to_bytes(), data)


@case("multidevice.copy.without_peer_hardware",
      cite="CUDA Programming Guide, Peer-to-Peer Memory Copy: copies between devices work without peer "
           "access (staged through the host where the devices cannot reach each other: a machine without "
           "P2P, simulated)",
      apis=("MemcpyAsync",), requires=SIM, expect=-1)
def _(t: CaseContext) -> int:
    """A copy between devices on a machine without peer access."""
    with _no_peer_hardware():
        return _copied(t)


# ---------------------------------------------------------------------------- kernels and other devices' memory
def _launch_reading_device_1(t: CaseContext) -> bytes:
    """copy_u32 on device 0 reading a device-1 buffer (plain addresses: no pygraphrt check)."""
    n = 64
    with _on(t, 1):
        src = t.malloc(4 * n)
    src.copy_from(bytes([9]) * (4 * n))
    dst, s0 = t.malloc(4 * n), t.stream()
    s0.launch(t.kernel("copy_u32"), 1, n, dst.ptr, src.ptr, n)
    s0.synchronize()
    return bytes(dst.to_bytes())


@case("multidevice.kernel.peer_memory_with_access",
      cite=PEER + "cudaDeviceEnablePeerAccess: on success, all allocations from peerDevice will immediately "
      "be accessible by the current device", apis=("DeviceEnablePeerAccess",), requires=TWO_K,
      expect=bytes([9]) * 256)
def _(t: CaseContext) -> bytes:
    """A kernel on device 0 reads device 1's memory with peer access enabled."""
    with _peer(t, 0, 1):
        return _launch_reading_device_1(t)


@case("multidevice.kernel.peer_memory_without_access",
      cite="CUDA Programming Guide, Peer-to-Peer Memory Access: a kernel touching them faults "
           "(cudaErrorIllegalAddress; sticky on a GPU, so simulated only)",
      apis=("LaunchKernel",), requires=SIM_K, expect="ErrorIllegalAddress")
def _(t: CaseContext) -> str:
    """A kernel on device 0 reads device 1's memory without peer access."""
    e = t.raises(errors.GraphRTError, _launch_reading_device_1, t)
    assert isinstance(e, errors.GraphRTError)
    return _code(t, e)


@case("multidevice.kernel.graph_memory_not_granted",
      cite="CUDA Programming Guide, Graph Memory Nodes, Peer Access: \"Graph allocations can be configured "
           "for access from multiple GPUs, in which case CUDA will map the allocations onto the peer GPUs as "
           "required\" ... \"an allocation may sometimes allow more peer access than was requested during its "
           "creation; however, relying on these extra mappings is still an error\" -- a device the allocation "
           "was not granted to has no mapping of it: a kernel there touching it faults (cudaErrorIllegalAddress; "
           "sticky on a GPU, so simulated only)",
      apis=("GraphAddMemAllocNode", "GraphLaunch"), requires=SIM_K + ("graph_memory_nodes",),
      expect="ErrorIllegalAddress")
def _(t: CaseContext) -> str:
    """A kernel on device 0 reads a device-1 graph allocation not granted to device 0."""
    n = 64
    out, s0 = t.malloc(4 * n), t.stream()
    g = t.graph()
    alloc = g.add_mem_alloc(4 * n, device=1)
    read = g.add_kernel(t.kernel("copy_u32"), 1, n, (out.ptr, alloc.dptr, n), dependencies=[alloc], device=0)
    g.add_mem_free(alloc, dependencies=[read], device=1)
    exe = t.instantiate(g)
    e = t.raises(errors.GraphRTError, exe.launch, s0)
    assert isinstance(e, errors.GraphRTError)
    return _code(t, e)


# ---------------------------------------------------------------------------- documented limits of graphs
def _body_kernel_on_device_1(t: CaseContext) -> None:
    g = t.graph()
    node = g.add_if(g.conditional_handle(1))  # device 0 current
    (body,) = node.bodies
    buf = t.malloc(64)
    with _peer(t, 1, 0), _on(t, 1):
        body.add_kernel(t.kernel("copy_u32"), 1, 16, (buf.ptr, buf.ptr, 16))  # no device=: the runtime's
    t.instantiate(g)


@case("multidevice.limits.conditional_body_kernel_on_another_device",
      cite="CUDA Runtime API 13.5, Data types, cudaConditionalNodeParams: \"This applies recursively to "
           "child graphs and conditional bodies. - All kernels, including kernels in nested conditionals "
           "or child graphs at any level, must belong to the same device context\" -- All kernels, "
           "including kernels in nested conditionals or child graphs at any level, must belong to the "
           "same device context (refused when the kernel node is added or at instantiation)",
      apis=("GraphAddNode", "GraphAddKernelNode"), requires=TWO_K + ("conditional_nodes",),
      raises=errors.InvalidValue)
def _(t: CaseContext) -> None:
    """A device-1 kernel in the body of a device-0 IF node."""
    _body_kernel_on_device_1(t)


@case("multidevice.limits.conditional_body_kernel_on_another_device_named", kind="binding",
      cite=PYGRAPHRT + "add_kernel(device=) in a conditional body of another device is refused before the "
      "runtime (" + COND + "all kernels must belong to the same device context)",
      apis=("GraphAddKernelNode",), requires=TWO_K + ("conditional_nodes",), expect=(True, 0))
def _(t: CaseContext) -> tuple[bool, int]:
    """Graph.add_kernel(..., device=1) into a device-0 IF node's body."""
    g = t.graph()
    node = g.add_if(g.conditional_handle(1))
    (body,) = node.bodies
    buf = t.malloc(64)
    with _peer(t, 1, 0):
        e = t.raises(errors.InvalidValue, body.add_kernel, t.kernel("copy_u32"), 1, 16, (buf, buf, 16), device=1)
    assert isinstance(e, errors.GraphRTError)
    return e.code is None and "device 1" in str(e) and "device 0" in str(e), len(body)


@case("multidevice.limits.conditional_body_event_node",
      cite="CUDA Runtime API 13.5, Data types, cudaConditionalNodeParams: \"- Allowed node types are "
           "kernel nodes, empty nodes, child graphs, memsets, memcopies, and conditionals\" -- Allowed "
           "node types are kernel nodes, empty nodes, child graphs, memsets, memcopies, and conditionals "
           "(no event record or wait nodes; refused when added or at instantiation)",
      apis=("GraphAddEventRecordNode",), requires=("conditional_nodes",),
      raises=errors.InvalidValue)
def _(t: CaseContext) -> None:
    """An event record node added (raw) to an IF node's body."""
    g = t.graph()
    node = g.add_if(g.conditional_handle(1))
    (body,) = node.bodies
    ev = t.event()
    out = t.new("GraphNode_t *")
    t.call("GraphAddEventRecordNode", out, body.handle, t.NULL, 0, ev.handle)
    t.instantiate(g)


def _two_device_graph(t: CaseContext) -> Any:
    b0 = t.malloc(64)
    with _on(t, 1):
        b1 = t.malloc(64)
    g = t.graph()
    g.add_memset(b0, 1, 64, device=0)
    g.add_memset(b1, 1, 64, device=1)
    return g


@case("multidevice.limits.device_launch_on_several_devices",
      cite=PG_DEVICE_LAUNCH + "a graph instantiated for device launch has all its nodes on a single device "
      "(context); cudaGraphInstantiateWithFlags refuses it",
      apis=("GraphInstantiateWithFlags",), requires=TWO + ("device_launch",), raises=errors.InvalidValue)
def _(t: CaseContext) -> None:
    """cudaGraphInstantiateWithFlags(DeviceLaunch) of memset nodes on devices 0 and 1 (raw)."""
    g = _two_device_graph(t)
    ops = t.backend.ops
    flag = ops.value(ops.instantiate_flags, InstantiateFlags.DEVICE_LAUNCH, f"{ops.prefix}GraphInstantiate")
    out = t.new("GraphExec_t *")
    t.call("GraphInstantiateWithFlags", out, g.handle, flag)
    t.track(t.rt.GraphExec(g, out[0]))  # (not reached where refused)


@case("multidevice.limits.device_launch_on_several_devices_named", kind="binding",
      cite=PYGRAPHRT + "instantiate(device_launch=True) of a graph pygraphrt placed on several devices is "
      "refused before the runtime, naming the devices (" + PG_DEVICE_LAUNCH + "one device)",
      apis=("GraphInstantiateWithFlags",), requires=TWO + ("device_launch",), expect=(None, True))
def _(t: CaseContext) -> tuple[Any, bool]:
    """Graph.instantiate(device_launch=True) of nodes placed on devices 0 and 1: pygraphrt's
    refusal (no vendor code) names the devices."""
    g = _two_device_graph(t)
    e = t.raises(errors.InvalidValue, g.instantiate, device_launch=True)
    assert isinstance(e, errors.GraphRTError)
    return e.code, "[0, 1]" in str(e)


@case("multidevice.limits.update_moves_kernel_to_another_device",
      cite="CUDA Runtime API 13.5, Graph Management, cudaGraphExecUpdate: \"Kernel nodes: - The owning "
           "context of the function cannot change\" -- the kernel made with device 1 current belongs to "
           "another context",
      apis=("GraphExecUpdate",), requires=TWO_K, raises=errors.GraphExecUpdateFailure)
def _(t: CaseContext) -> None:
    """Update a device-0 kernel node with the same kernel made with device 1 current (no device=),
    through the runtime's own cudaGraphExecUpdate: GraphExec.update refuses it first where
    pygraphrt knows the nodes' devices (a binding check, multidevice.limits.*_named)."""
    k = t.kernel("copy_u32")
    a, b = t.malloc(64), t.malloc(64)
    g1, g2 = t.graph(), t.graph()
    g1.add_kernel(k, 1, 16, (a.ptr, b.ptr, 16))
    with _on(t, 1):
        g2.add_kernel(k, 1, 16, (a.ptr, b.ptr, 16))
    exe = t.instantiate(g1)
    ops = t.backend.ops
    with t.under_test():
        rc, _result, _node = ops.exec_update(exe.handle, g2.handle)
        if rc:
            raise ops.error(rc, f"{ops.prefix}GraphExecUpdate")


@case("multidevice.limits.update_moves_memcpy_operand_to_another_device",
      cite="CUDA Runtime API 13.5, Graph Management, cudaGraphExecUpdate: \"Memset and memcpy nodes: - The "
           "CUDA device(s) to which the operand(s) was allocated/mapped cannot change\" -- the destination "
           "moves from device 0's memory to device 1's", apis=("GraphExecUpdate",), requires=TWO, raises=errors.GraphExecUpdateError)
def _(t: CaseContext) -> None:
    """Update a memcpy node whose destination moves from device 0's memory to device 1's."""
    a0, b0 = t.malloc(64), t.malloc(64)
    with _on(t, 1):
        a1 = t.malloc(64)
    g1, g2 = t.graph(), t.graph()
    g1.add_memcpy(a0, b0, 64)
    g2.add_memcpy(a1, b0, 64)
    t.instantiate(g1).update(g2)
