"""External semaphores on a real GPU, with a real Vulkan timeline semaphore (see vulkan.py).

Signal and wait nodes (add, read back, set on the graph and the executable graph) and the
stream-level calls; a wait must block until Vulkan signals the value from the host.
"""

from __future__ import annotations

import os
import time

import pytest

import pygraphrt as rt
from pygraphrt import errors
from pygraphrt.enums import NodeType

from .vulkan import TimelineSemaphore

pytestmark = pytest.mark.gpu


def cuda_uuid() -> bytes | None:
    from pygraphrt import _runtime

    b = _runtime.active()
    if b.vendor != "cuda":
        return None
    p = b.ffi.new(f"{b.ops.device_prop_type} *")
    b.ops.call("GetDeviceProperties", p, 0)
    return bytes(b.ffi.buffer(p.uuid.bytes))


def finished(stream, vk, timeout=10.0) -> bool:
    """Whether the stream's work completes within ``timeout`` (if not, unblock it and say so)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if stream.is_done:
            return True
        time.sleep(0.005)
    vk.signal(vk.value + 1000)  # never leave a stream blocked on the semaphore
    stream.synchronize()
    return False


def test_vulkan_timeline_semaphore_nodes_and_stream_calls(stream):
    vk = TimelineSemaphore(cuda_uuid())
    sem = rt.ExternalSemaphore("timeline_fd", fd=vk.export_fd())
    assert sem.type is rt.ExternalSemaphoreType.TIMELINE_FD
    flag = rt.malloc(4)
    flag.copy_from(bytes(4))
    g = rt.Graph()
    w = g.add_external_semaphore_wait([rt.SemaphoreWait(sem, value=1)])
    m = w.memset(flag, 7, 4)
    s = g.add_external_semaphore_signal([rt.SemaphoreSignal(sem, value=2)], dependencies=[m])
    assert [n.type for n in g.nodes()] == [NodeType.EXT_SEMAS_WAIT, NodeType.MEMSET, NodeType.EXT_SEMAS_SIGNAL]
    assert w.params == {"waits": [rt.SemaphoreWait(sem, 1)]}
    assert s.params == {"signals": [rt.SemaphoreSignal(sem, 2)]}
    exe = g.instantiate()
    exe.launch(stream)
    time.sleep(0.2)
    assert not stream.is_done and flag.to_bytes() == bytes(4) and vk.value == 0   # blocked on Vulkan
    vk.signal(1)
    assert finished(stream, vk)
    assert flag.to_bytes() == bytes([7] * 4) and vk.value == 2                    # the graph signalled 2

    exe.set_external_semaphore_wait(w, [rt.SemaphoreWait(sem, value=3)])          # this exec only
    exe.set_external_semaphore_signal(s, [rt.SemaphoreSignal(sem, value=4)])
    flag.copy_from(bytes(4))
    exe.launch(stream)
    time.sleep(0.1)
    assert not stream.is_done and vk.value == 2
    vk.signal(3)
    assert finished(stream, vk) and vk.value == 4 and flag.to_bytes() == bytes([7] * 4)
    assert w.params["waits"][0].value == 1                                         # the graph kept its own
    w.set_params([rt.SemaphoreWait(sem, value=5)])
    assert w.params == {"waits": [rt.SemaphoreWait(sem, 5)]}

    stream.wait_external_semaphores([rt.SemaphoreWait(sem, value=6)])
    stream.memset(flag, 9, 4)
    stream.signal_external_semaphores([rt.SemaphoreSignal(sem, value=7)])
    time.sleep(0.1)
    assert not stream.is_done
    vk.signal(6)
    assert finished(stream, vk) and vk.value == 7 and flag.to_bytes() == bytes([9] * 4)

    # Misuse: refused before the runtime, or by it, with nothing left behind.
    n_nodes = len(g.nodes())
    with pytest.raises(errors.InvalidValue, match="at least one"):
        g.add_external_semaphore_wait([])
    with pytest.raises(errors.InvalidValue, match="not a SemaphoreWait"):
        g.add_external_semaphore_wait([123])
    with pytest.raises(errors.InvalidValue, match="not a SemaphoreSignal"):
        g.add_external_semaphore_signal([rt.SemaphoreWait(sem, 1)])
    with pytest.raises(errors.InvalidValue, match="unsigned 64-bit"):
        g.add_external_semaphore_signal([rt.SemaphoreSignal(sem, -1)])
    with pytest.raises(errors.InvalidValue, match="takes fd="):
        rt.ExternalSemaphore("timeline_fd")
    with pytest.raises(errors.InvalidValue, match="unknown type"):
        rt.ExternalSemaphore("semaphore", fd=3)
    with pytest.raises(errors.InvalidValue, match="expected a ExternalSemaphoreWaitNode"):
        exe.set_external_semaphore_wait(s, [rt.SemaphoreWait(sem, 1)])
    assert len(g.nodes()) == n_nodes
    null = os.open("/dev/null", os.O_RDONLY)
    try:
        with pytest.raises(errors.GraphRTError):
            rt.ExternalSemaphore("timeline_fd", fd=null)                          # not a semaphore
    finally:
        os.close(null)                                                             # a failed import leaves it ours
    exe.close()
    g.close()
    sem.close()
    with pytest.raises(errors.InvalidResourceHandle):
        rt.Graph().add_external_semaphore_signal([sem])
    vk.close()
