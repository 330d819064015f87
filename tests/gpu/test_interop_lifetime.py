"""Foreign streams, lifetime and remaining node kinds on a real GPU."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import pygraphrt as rt
from pygraphrt import errors
from pygraphrt.enums import CaptureStatus, DebugDotFlags, NodeType

pytestmark = pytest.mark.gpu
REPO = Path(__file__).resolve().parents[2]


class CoreStyleStream:
    """An object speaking cuda.core's ``__cuda_stream__`` protocol."""

    def __init__(self, handle: int) -> None:
        self.handle_int = handle

    def __cuda_stream__(self):
        return (0, self.handle_int)


def test_wrap_foreign_streams_without_owning_them():
    owner = rt.Stream()
    as_int = int(owner)
    for obj in (as_int, CoreStyleStream(as_int)):
        s = rt.Stream.wrap(obj)
        assert int(s) == as_int and not s._owned
        s.close()  # forgets, never destroys
    assert owner.is_done  # still a live stream
    cupy = pytest.importorskip("cupy")
    cs = cupy.cuda.Stream(non_blocking=True)
    s = rt.Stream.wrap(cs)
    assert int(s) == cs.ptr
    buf = rt.malloc(64)
    with s.capture():
        s.memset(buf, 1, 64)
    with pytest.raises(errors.InvalidValue):
        rt.Stream.wrap(object())
    with pytest.raises(errors.InvalidValue):
        rt.Stream.wrap(True)


def test_event_from_another_capture_is_refused():
    s1, s2 = rt.Stream(), rt.Stream()
    buf = rt.malloc(64)
    ev = rt.Event()
    cap1 = s1.begin_capture()
    s1.memset(buf, 1, 64)
    s1.record(ev)
    cap2 = s2.begin_capture()
    with pytest.raises(errors.StreamCaptureError):
        s2.wait(ev)  # joining two different captures: isolation violation
    for cap in (cap2, cap1):
        try:
            cap.end()
        except errors.GraphRTError:
            pass
    assert s1.capture_status is CaptureStatus.NONE and s2.capture_status is CaptureStatus.NONE


def test_memcpy_2d_and_host_node_params():
    src, dst = rt.malloc(64 * 8), rt.malloc(64 * 8)
    src.copy_from(bytes(range(256)) * 2)
    g = rt.Graph()
    fn = lambda: None  # noqa: E731
    h = g.add_host(fn)
    c = h.memcpy_2d(dst, 64, src, 64, 32, 8)  # the left half of each 64-byte row
    assert c.type is NodeType.MEMCPY and c.params["width"] == 32 and c.params["height"] == 8
    assert h.params["fn"] is fn
    s = rt.Stream()
    dst.copy_from(bytes(512))
    g.instantiate().launch(s)
    s.synchronize()
    out, want = dst.to_bytes(), (bytes(range(256)) * 2)
    for row in range(8):
        assert out[row * 64:row * 64 + 32] == want[row * 64:row * 64 + 32]
        assert out[row * 64 + 32:row * 64 + 64] == bytes(32)


def test_debug_dot_to_a_path(tmp_path):
    g = rt.Graph()
    g.add_empty().empty()
    p = tmp_path / "g.dot"
    text = g.debug_dot(str(p), DebugDotFlags.VERBOSE | DebugDotFlags.HANDLES)
    assert p.read_text() == text and text.count("->") == 1


def test_finalizers_free_once_and_interpreter_exit_is_clean():
    g = rt.Graph()
    n = g.add_empty()
    exe = g.instantiate()
    del g, exe
    gc.collect()  # the node keeps its graph alive: nothing destroyed under it
    assert n.is_valid and n.type is NodeType.EMPTY
    code = textwrap.dedent("""
        import pygraphrt as rt
        s = rt.Stream(); g = rt.Graph(); a = g.add_empty(); g.add_host(lambda: None, dependencies=[a])
        e = g.instantiate(); e.launch(s); s.synchronize()
        b = rt.malloc(1 << 20); ev = rt.Event()
        g.close(); g.close()   # explicit close twice, then exit with live objects
        print("done")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO)] + sys.path)))
    assert r.returncode == 0 and r.stdout.strip() == "done", r.stderr


def test_graph_keeps_operands_alive():
    g = rt.Graph()
    calls = []
    g.add_host(lambda: calls.append(1))  # the lambda's only reference is the graph
    exe = g.instantiate()
    del g
    gc.collect()
    s = rt.Stream()
    exe.launch(s)
    exe.synchronize()
    assert calls == [1]


def test_captured_buffers_live_as_long_as_the_graph():
    import weakref

    s, s2 = rt.Stream(), rt.Stream()
    a, b = rt.malloc(256), rt.malloc(256)
    wa, wb = weakref.ref(a), weakref.ref(b)
    fork, join = rt.Event(), rt.Event()
    with s.capture() as cap:
        s.memset(a, 5, 256)
        s.record(fork)
        s2.wait(fork)                 # s2 joins the capture
        s2.memcpy(b, a, 256)
        s2.record(join)
        s.wait(join)
    exe = cap.graph.instantiate()
    del a, b, cap
    gc.collect()
    assert wa() is not None and wb() is not None  # the graph (and its exec) keep them
    exe.launch(s)
    s.synchronize()
    assert wb().to_bytes(4) == b"\x05" * 4
