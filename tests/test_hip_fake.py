"""pygraphrt's HIP code paths against a fake libamdhip64 (no AMD GPU exists here).

tests/fakehip/fake_hip.c is compiled against the real HIP 7.1 headers with
-Wall -Werror, so each function pygraphrt calls is checked against HIP's own
prototype by the C compiler; then the backend is driven through it: loading and
version choice, graphs and edges (HIP's 4-argument forms), refusal of edge data,
capture and capture info (``hipStreamGetCaptureInfo_v2``), exec update (HIP's
errorNode/result form), instantiate flags, and error mapping by name.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bindgen.headersets import HEADER_SETS, include_roots

pytestmark = pytest.mark.headers
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def fake_hip(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fakehip") / "libamdhip64.so"
    inc = include_roots(HEADER_SETS["hip7"])[0]
    subprocess.run(["cc", "-std=gnu11", "-Wall", "-Werror", "-shared", "-fPIC", "-D__HIP_PLATFORM_AMD__",
                    "-I", str(inc), "-o", str(out), str(Path(__file__).parent / "fakehip" / "fake_hip.c")],
                   check=True)
    return out


def run_hip(lib: Path, code: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(REPO), PYGRAPHRT_BACKEND="hip", PYGRAPHRT_HIP_LIB=str(lib))
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                       env=env, cwd=str(REPO), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_backend_selection_and_info(fake_hip):
    out = run_hip(fake_hip, """
        import pygraphrt as rt
        i = rt.backend()
        print(i.vendor, i.binding, i.runtime_version_str, i.device_count, i.library_path)
        c = rt.capabilities()
        print(c.edge_data, c.exec_update_result_info, c.conditional_nodes, c.instantiate_flag_combinations)
    """)
    first, second = out.splitlines()[:2]
    assert first == f"hip hip7 7.1.25424 1 {fake_hip}"
    assert second == "False False False False"


def test_graph_edges_and_errors(fake_hip):
    out = run_hip(fake_hip, """
        import pygraphrt as rt
        from pygraphrt import errors
        from pygraphrt.enums import EdgeData, DependencyType, NodeType
        g = rt.Graph()
        a = g.add_empty()
        c = g.add_empty(dependencies=[a])
        d = g.add_empty()
        g.add_dependencies([a], [d])
        assert g.edges() == [(a, c, EdgeData()), (a, d, EdgeData())], g.edges()
        assert c.dependencies == [(a, EdgeData())]
        assert [n for n, _ in a.dependents] == [c, d]
        assert g.nodes() == [a, c, d] and all(n.type is NodeType.EMPTY for n in g.nodes())
        g.add_dependencies([c], [d], [EdgeData()])            # default edge data is fine
        try:
            g.add_dependencies([c], [a], [EdgeData(1, 0, DependencyType.PROGRAMMATIC)])
        except errors.NotSupported as e:
            print("EDGE", e)
        try:
            g.add_dependencies([a], [c])                       # duplicate
        except errors.InvalidValue as e:
            print("DUP", e.api, e.name, e.vendor)
        try:
            g.add_empty(edges=[EdgeData()], dependencies=[a, c])
        except errors.InvalidValue as e:
            print("LEN", e.detail)
        print("OK")
    """)
    assert "EDGE" in out and "edge data is not supported by the hip runtime" in out
    assert "DUP hipGraphAddDependencies hipErrorInvalidValue hip" in out
    assert "LEN 1 edge data for 2 dependencies" in out
    assert out.strip().endswith("OK")


def test_generic_add_node_form(fake_hip):
    out = run_hip(fake_hip, """
        import pygraphrt as rt
        from pygraphrt import errors
        from pygraphrt.enums import EdgeData, DependencyType, NodeType
        g = rt.Graph()
        e = g.add_node(NodeType.EMPTY)
        m = g.add_node(NodeType.MEMSET, dependencies=[e], dst=0x1000, value=1, count=16)
        assert m.type is NodeType.MEMSET and g.edges() == [(e, m, EdgeData())]
        m.set_params(dst=0x1000, value=2, count=16)
        try:
            g.add_node(NodeType.EMPTY, dependencies=[e], edges=[EdgeData(1, 0, DependencyType.PROGRAMMATIC)])
        except errors.NotSupported as exc:
            print("EDGES", exc.api)
        print("OK")
    """)
    assert "EDGES hipGraphAddNode" in out and out.strip().endswith("OK")


def test_capture_and_capture_info(fake_hip):
    out = run_hip(fake_hip, """
        import pygraphrt as rt
        from pygraphrt import errors
        from pygraphrt.enums import CaptureStatus, NodeType, EdgeData
        s = rt.Stream()
        with s.capture() as cap:
            s.memset(0x1000, 1, 16)
            info = cap.info()
            s.memset(0x1000, 2, 16)
        assert info.status is CaptureStatus.ACTIVE and info.id != 0
        assert [(n.type, e) for n, e in info.dependencies] == [(NodeType.MEMSET, EdgeData())]
        g = cap.graph
        assert [n.type for n in g.nodes()] == [NodeType.MEMSET, NodeType.MEMSET]
        assert len(g.edges()) == 1 and info.dependencies[0][0] is g.nodes()[0]
        assert not s.is_capturing
        try:
            with rt.Stream.legacy_default().capture():
                pass
        except errors.StreamCaptureUnsupported as e:
            print("LEGACY", e.api)
        try:
            with s.capture():
                raise KeyError("inside")
        except KeyError:
            print("CLEAN", s.capture_status())
    """)
    assert "LEGACY hipStreamBeginCapture" in out
    assert "CLEAN CaptureStatus.NONE" in out


def test_instantiate_launch_and_exec_update(fake_hip):
    out = run_hip(fake_hip, """
        import pygraphrt as rt
        from pygraphrt import errors
        from pygraphrt.enums import UpdateResult
        def chain(n):
            g = rt.Graph(); prev = g.add_empty()
            for _ in range(n - 1):
                prev = g.add_empty(dependencies=[prev])
            return g
        s = rt.Stream()
        g = chain(3)
        exe = g.instantiate(auto_free_on_launch=True)
        exe.launch(s)
        assert exe.update(chain(3)) is UpdateResult.SUCCESS
        g4 = chain(4)
        try:
            exe.update(g4)
        except errors.GraphExecUpdateError as e:
            print("UPDATE", e.result, e.error_node is g4.nodes()[-1], e.name)
        try:
            g.instantiate(auto_free_on_launch=True, use_node_priority=True)
        except errors.InvalidValue as e:
            print("FLAGS", e.api)
        exe.close()
        try:
            exe.launch(s)
        except errors.InvalidResourceHandle as e:
            print("CLOSED", e)
    """)
    assert "UPDATE UpdateResult.TOPOLOGY_CHANGED True hipErrorGraphExecUpdateFailure" in out
    assert "FLAGS hipGraphInstantiateWithFlags" in out
    assert "CLOSED" in out


def test_captured_operands_live_as_long_as_the_graph(fake_hip):
    out = run_hip(fake_hip, """
        import gc, weakref
        import pygraphrt as rt
        from pygraphrt.enums import NodeType
        class Buf(bytearray):  # a host buffer object that can be weakly referenced
            pass
        a, b = Buf(16), Buf(16)
        wa, wb = weakref.ref(a), weakref.ref(b)
        s, s2 = rt.Stream(), rt.Stream()
        fork = rt.Event()
        with s.capture() as cap:
            s.memset(a, 1, 16)
            s.record(fork)
            s2.wait(fork)          # s2 joins the capture through the event
            s2.memset(b, 2, 16)
        assert s2._capture is None and s._capture is None
        g = cap.graph
        assert [n.type for n in g.nodes()] == [NodeType.MEMSET, NodeType.MEMSET]
        del a, b
        gc.collect()
        print("ALIVE", wa() is not None, wb() is not None)
        g.close(); del g, cap
        gc.collect()
        print("FREED", wa() is None, wb() is None)
    """)
    assert "ALIVE True True" in out and "FREED True True" in out


def test_kernels_modules_launch_and_kernel_nodes(fake_hip, tmp_path):
    """Library = hipModuleLoadData/hipModuleLoad, kernels = hipModuleGetFunction, launches through
    hipModuleLaunchKernel (no attributes) and hipDrvLaunchKernelEx (attributes), kernel nodes through
    hipGraphAddKernelNode / Get/SetParams / hipGraphExecKernelNodeSetParams."""
    image = tmp_path / "fake.co"
    image.write_bytes(b"FAKEHIP")
    out = run_hip(fake_hip, f"""
        import ctypes
        import pygraphrt as rt
        from pygraphrt import errors
        cell = ctypes.c_int(0)
        where = ctypes.addressof(cell)
        for lib in (rt.Library(b"FAKEHIP"), rt.Library({str(image)!r})):
            k = lib.kernel("add_int", signature="int *out, int a, int b")
            print(k.form, k.param_info, k.attributes().num_regs, k.max_active_blocks_per_multiprocessor(256))
            s = rt.Stream()
            s.launch(k, 1, 1, where, 40, 2)
            print("plain", cell.value)
            s.launch(k, 1, 1, where, 5, 6, priority=3)
            prio = ctypes.c_int.in_dll(ctypes.CDLL({str(fake_hip)!r}), "fake_last_launch_priority").value
            print("ex", cell.value, prio)
            try:
                s.launch(k, 1, 2048, where, 1, 1)
            except errors.GraphRTError as e:
                print("refused", e.name)
            try:
                s.launch(k, 1, 1, where, 1.5, 1)
            except errors.InvalidValue as e:
                print("bad arg", "argument 1" in str(e))
            try:
                s.launch(k, 1, 1, where, 1, 1, cluster_dim=(2, 1, 1))
            except errors.NotSupported as e:
                print("no cluster", "available" in str(e))
            k.set_max_dynamic_shared_memory(1024)
            try:
                k.set_max_dynamic_shared_memory(1 << 20)
            except errors.InvalidValue as e:
                print("too much smem")
        try:
            rt.Library(b"garbage")
        except errors.GraphRTError as e:
            print("image", e.name)
        try:
            lib.kernel("missing")
        except errors.GraphRTError as e:
            print("missing", e.name)
        g = rt.Graph()
        n1 = g.add_kernel(k, 1, 1, [where, 1, 2], attributes={{"priority": 2}})
        n2 = n1.kernel(k, 1, 1, [where, 3, 4])
        print("args", n1.args == [where, 1, 2], n2.args == [where, 3, 4], n2.params["kernel"] is k)
        print("prio", n1.attribute("priority"), n2.attribute("priority"))
        n1.copy_attributes_to(n2)
        print("copied", n2.attribute("priority"))
        exe = g.instantiate()
        exe.launch(s)
        print("graph", cell.value)
        exe.set_kernel_params(n2, args=[where, 100, 1])
        exe.launch(s)
        print("exec set", cell.value, n2.args[1])
        n2.set_params(args=[where, 7, 7])
        print("node set", n2.args[1:])
        noop = lib.kernel("noop", signature="")
        g.add_kernel(noop, 1, 1, [])
        lib.close()
        try:
            k.handle
        except errors.InvalidResourceHandle:
            print("unloaded")
    """)
    lines = out.splitlines()
    assert lines[0] == "function None 11 8"
    assert lines[1:8] == ["plain 42", "ex 11 3", "refused hipErrorInvalidConfiguration", "bad arg True",
                          "no cluster True", "too much smem", "function None 11 8"]
    assert lines[14:] == ["image hipErrorInvalidImage", "missing hipErrorNotFound", "args True True True",
                          "prio 2 0", "copied 2", "graph 7", "exec set 101 3", "node set [7, 7]",
                          "unloaded"]


def test_stream_ordered_memory_and_pools(fake_hip):
    """hipMemPool* and hipMallocAsync/hipMallocFromPoolAsync/hipFreeAsync call forms, and capture of
    stream-ordered allocations into mem-alloc / mem-free nodes."""
    out = run_hip(fake_hip, """
        import pygraphrt as rt
        from pygraphrt import errors
        from pygraphrt.enums import MemPoolAttr, NodeType
        s = rt.Stream()
        dflt = rt.MemPool.default()
        print("default", dflt == rt.MemPool.current(), dflt.is_owned)
        pool = rt.MemPool(release_threshold=1000)
        bufs = [s.malloc_async(400, pool=pool) for _ in range(3)]
        print("used", pool.attribute(MemPoolAttr.USED_MEM_CURRENT), pool.attribute(MemPoolAttr.USED_MEM_HIGH))
        for b in bufs:
            s.free_async(b)
        print("freed", pool.attribute(MemPoolAttr.USED_MEM_CURRENT), pool.attribute(MemPoolAttr.RESERVED_MEM_CURRENT))
        pool.trim(0)
        print("trimmed", pool.attribute(MemPoolAttr.RESERVED_MEM_CURRENT), pool.release_threshold)
        pool.set_attribute(MemPoolAttr.REUSE_ALLOW_OPPORTUNISTIC, False)
        print("opportunistic", pool.attribute(MemPoolAttr.REUSE_ALLOW_OPPORTUNISTIC))
        pool.set_current()
        b = s.malloc_async(64)
        print("current", rt.MemPool.current() == pool, pool.attribute(MemPoolAttr.USED_MEM_CURRENT))
        b.close()
        print("closed", pool.attribute(MemPoolAttr.USED_MEM_CURRENT))
        dflt.set_current()
        with s.capture(pool="private") as cap:
            t = s.malloc_async(128)
            s.free_async(t)
        print("nodes", sorted(n.type.value for n in cap.graph.nodes()), t.captured, t.pool is cap.pool)
        try:
            s.malloc_async(1 << 50)
        except errors.OutOfMemory as e:
            print("oom", e.name)
        try:
            pool.set_attribute(MemPoolAttr.USED_MEM_HIGH, 5)
        except errors.InvalidValue as e:
            print("refused", e.api)
    """)
    assert out.splitlines() == [
        "default True False", "used 1200 1200", "freed 0 1000", "trimmed 0 1000", "opportunistic 0",
        "current True 64", "closed 0", "nodes ['mem_alloc', 'mem_free'] True True",
        "oom hipErrorOutOfMemory", "refused hipMemPoolSetAttribute"]
