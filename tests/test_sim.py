"""The ``sim`` backend (pygraphrt._vendors.sim, pygraphrt.sim): CUDA 13 graph and capture
semantics on the CPU.  Runs everywhere (no GPU, no runtime library).

In this process the simulator is made the active backend for the module (and the previous
one restored afterwards); selection, ``info`` and the environment variables are checked in
subprocesses.  The README's examples run here with their data checked, then the capture
rules (negative cases too), graph memory, kernels through registered Python functions,
conditional nodes, and randomised execution orders that still respect every edge.  Finally
the GPU tests and the conformance suite run on the simulator in subprocesses.
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
import textwrap
import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import pygraphrt as rt
from pygraphrt import errors, sim
from pygraphrt.enums import (PORT_PROGRAMMATIC, CaptureMode, CaptureStatus, DependencyType, EdgeData,
                             GraphMemAttr, InstantiateFlags, NodeType, UpdateResult)

from .backends import collecting_after, selected
from .expected_counts import check_counts

REPO = Path(__file__).resolve().parent.parent
N = 4096
# subprocesses import this checkout first, then whatever the environment already had (the GPU
# machine's wheels, e.g. cffi, come through PYTHONPATH)
PYTHONPATH = os.pathsep.join([str(REPO)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))
DEVICE_BASE, DEVICE_END = 0x0D00_0000_0000_0000, 0x0D00_0100_0000_0000  # simulated device memory


@pytest.fixture(scope="module", autouse=True)
def sim_backend():
    with selected("sim") as backend:
        try:
            yield backend
        finally:
            backend.runtime.set_order("creation")


@pytest.fixture(autouse=True)
def collect_garbage():
    """Finalizers of earlier tests' buffers (cudaFree) must not run during a capture here: the
    collector would make them a prohibited call that invalidates it (see tests/sim_kernels.py)."""
    import gc

    gc.collect()


@pytest.fixture
def stream():
    s = rt.Stream()
    yield s
    assert s.capture_status is CaptureStatus.NONE, "a test left the stream capturing"
    s.close()


@pytest.fixture
def bufs():
    out = [rt.malloc(N) for _ in range(4)]
    yield out
    for b in out:
        b.close()


def run_py(code: str, **env: str) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if not k.startswith("PYGRAPHRT_")}
    e.update(PYTHONPATH=PYTHONPATH, **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=e, cwd=str(REPO), timeout=600)


def floats(buf, n, offset=0):
    return np.frombuffer(buf.to_bytes(4 * (n + offset)), np.float32)[offset:]


# ============================================================================ selection
def test_sim_is_chosen_only_when_asked():
    r = run_py("""
        import pygraphrt
        from pygraphrt import errors
        try:
            b = pygraphrt.use("auto")
            print("AUTO", b.vendor)
        except errors.BackendError as e:
            print("AUTO-ERR", e)
        import pygraphrt._runtime as r
        r._state.active = None
        b = pygraphrt.use("sim")
        print("SIM", b.vendor, b.binding, pygraphrt.backend().device_count, pygraphrt.backend().runtime_version_str)
    """)
    assert r.returncode == 0, r.stderr
    assert "AUTO sim" not in r.stdout
    if "AUTO-ERR" in r.stdout:  # no GPU runtime library at all: the error says that the simulator exists
        assert "'sim' backend" in r.stdout
    assert "SIM sim cuda13 1 13.5" in r.stdout


def test_env_var_devices_and_info():
    r = run_py("""
        import pygraphrt as rt
        info = rt.backend()
        print("INFO", info.vendor, info.device_count, info.library_path)
        rt.Device(1).set_current()
        b = rt.malloc(16)
        print("ADDR", hex(b.ptr))
        try:
            rt.Device(2).set_current()
        except rt.errors.InvalidDevice as e:
            print("BAD", e.name)
    """, PYGRAPHRT_BACKEND="sim", PYGRAPHRT_SIM_DEVICES="2")
    assert r.returncode == 0, r.stderr
    assert "INFO sim 2 <pygraphrt simulator" in r.stdout
    assert "ADDR 0xd000010" in r.stdout  # device 1's address range
    assert "BAD cudaErrorInvalidDevice" in r.stdout
    r = subprocess.run([sys.executable, "-m", "pygraphrt", "info", "--verbose"], capture_output=True, text=True,
                       cwd=str(REPO), env=dict(os.environ, PYTHONPATH=PYTHONPATH, PYGRAPHRT_BACKEND="sim"), timeout=600)
    assert r.returncode == 0, r.stderr
    assert "active backend: sim (binding cuda13) -- the CPU simulator" in r.stdout
    assert "conditional_nodes: yes" in r.stdout and "device_launch: no" in r.stdout
    assert "cudaStreamBeginRecaptureToGraph is not simulated" in r.stdout


def test_without_a_gpu_info_and_errors_name_the_simulator():
    r = run_py("""
        import pygraphrt
        from pygraphrt import errors
        try:
            b = pygraphrt.use("cuda")
        except errors.BackendError as e:
            print("NOLIB", e)
            raise SystemExit
        if b.info().device_count:
            print("HAS-A-DEVICE")
            raise SystemExit
        try:
            pygraphrt.Stream()
        except (errors.NoDevice, errors.InsufficientDriver) as e:
            print("ERR", e)
    """)
    assert r.returncode == 0, r.stderr
    if "HAS-A-DEVICE" in r.stdout or "NOLIB" in r.stdout:
        pytest.skip("needs a CUDA runtime library without a usable GPU")
    assert "ERR" in r.stdout and "the 'sim' backend runs graph code on the CPU" in r.stdout
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYGRAPHRT_")} | {"PYTHONPATH": PYTHONPATH}
    r = subprocess.run([sys.executable, "-m", "pygraphrt", "info", "--verbose"], capture_output=True, text=True,
                       cwd=str(REPO), env=env, timeout=600)
    assert "'sim' backend runs graph code on the CPU" in r.stdout
    r = subprocess.run([sys.executable, "-m", "pygraphrt", "info"], capture_output=True, text=True, cwd=str(REPO),
                       env=env, timeout=600)
    assert r.stdout.startswith("no GPU: running on the simulator (") and "pygraphrt.use('sim')" in r.stdout


def test_settings_from_the_environment():
    r = run_py("""
        import pygraphrt
        from pygraphrt import errors
        try:
            pygraphrt.use("sim")
        except errors.BackendError as e:
            print("ERR", e)
    """, PYGRAPHRT_SIM_ORDER="sideways")
    assert "ERR PYGRAPHRT_SIM_ORDER='sideways'" in r.stdout, r.stdout + r.stderr
    r = run_py("""
        import pygraphrt as rt
        print(rt.sim.runtime().memory.total_memory, rt.Device(0).info().total_memory)
    """, PYGRAPHRT_BACKEND="sim", PYGRAPHRT_SIM_MEMORY="64m")
    assert r.stdout.split() == [str(64 << 20)] * 2, r.stderr


def test_sim_backend_has_what_a_backend_has(sim_backend):
    """SimBackend sets up what Backend.__init__ does (it has no library to dlopen, so it cannot call it)."""
    from pygraphrt import _runtime

    try:
        real = _runtime.load("cuda")
    except errors.BackendError:
        pytest.skip("no CUDA runtime library to compare with")
    # (what the layers above record on a backend once -- the hot methods installed, the device
    # count, the NCCL library ... -- is in its memo, not among its attributes)
    assert set(vars(real)) <= set(vars(sim_backend)), set(vars(real)) - set(vars(sim_backend))
    assert type(sim_backend.ops).__mro__[1] is type(real.ops)  # SimVendor is the CUDA vendor table


# ============================================================================ the raw layer
def test_raw_layer_behaves_like_the_c_library():
    from pygraphrt import lowlevel

    ffi, lib = lowlevel.ffi, lowlevel.lib
    assert len(ffi.typeof(lib.cudaGraphAddNode).args) == 6  # the binding's own prototype
    out = ffi.new("cudaGraphNode_t *")
    rc = lib.cudaGraphAddEmptyNode(out, ffi.NULL, ffi.NULL, 0)
    with pytest.raises(errors.InvalidValue) as ei:
        lowlevel.check(rc, "cudaGraphAddEmptyNode")
    assert ei.value.name == "cudaErrorInvalidValue" and ei.value.vendor == "sim" and "NULL graph" in ei.value.detail
    with pytest.raises(TypeError):  # cffi converts arguments as for the real library
        lib.cudaGraphCreate(None, 0)
    assert int(lib.cudaGraphNodeTypeConditional) == 13
    assert "cudaStreamBeginRecaptureToGraph" in lowlevel.unavailable()
    with pytest.raises(AttributeError):
        lib.cudaArrayGetInfo
    g = rt.Graph()
    assert lowlevel.int_to_handle(lowlevel.handle_to_int(g.handle), "cudaGraph_t") == g.handle
    assert not DEVICE_BASE <= int(g) < DEVICE_END  # handles are not device addresses


def test_handles_that_are_not_live_are_recorded_as_undefined_behaviour():
    """A destroyed handle, or one of another kind, is refused with the runtime's error code and
    recorded by ``sim.undefined_calls`` (a GPU's runtime may crash on it); NULL is an ordinary
    refusal, not recorded."""
    from pygraphrt import lowlevel

    ffi, lib = lowlevel.ffi, lowlevel.lib
    sim.undefined_calls(clear=True)
    s = rt.Stream()
    h = s.handle
    s.close()
    g = rt.Graph()
    buf = rt.malloc(64)
    assert lib.cudaStreamSynchronize(h) == lib.cudaErrorInvalidResourceHandle
    assert lib.cudaGraphLaunch(ffi.NULL, ffi.cast("cudaStream_t", 0)) == lib.cudaErrorInvalidValue
    assert lib.cudaStreamQuery(ffi.cast("cudaStream_t", int(g))) == lib.cudaErrorInvalidResourceHandle
    assert lib.cudaGraphDestroy(ffi.cast("cudaGraph_t", buf.ptr)) == lib.cudaErrorInvalidValue
    seen = sim.undefined_calls()
    assert [api for api, _ in seen] == ["cudaStreamSynchronize", "cudaStreamQuery", "cudaGraphDestroy"]
    assert seen[0][1] == f"{int(ffi.cast('uintptr_t', h)):#x} is not a live stream"
    assert seen[2][1] == f"{buf.ptr:#x} is not a live graph"
    assert sim.undefined_calls(clear=True) == seen and sim.undefined_calls() == []
    buf.close()


def test_kernels_of_an_unloaded_library_are_recorded_as_undefined_behaviour():
    """CUDA 12.9 and 13.0 crashed reading back a kernel node whose library had been unloaded (the
    generated API test on an H100): the simulator refuses and records that, and running such a
    node, and any use of the kernel's handle."""
    from pygraphrt import lowlevel

    import tests.sim_kernels  # noqa: F401  (the kernel "fill")

    ffi, lib = lowlevel.ffi, lowlevel.lib
    sim.undefined_calls(clear=True)
    library = rt.Library(rt.Program('extern "C" __global__ void fill(float *y, float v, int n) {}').image)
    fill = library.kernel("fill", signature="float*, float, int")
    buf = rt.malloc(64)
    g = rt.Graph()
    node = g.add_kernel(fill, 1, 1, [buf, 1.0, 16])
    exe = g.instantiate()
    assert lib.cudaLibraryUnload(library.handle) == 0  # under the Library's feet, as the old close() did
    library._runtime_destroyed("unloaded by the test")
    raw = ffi.new("struct cudaKernelNodeParams *")
    assert lib.cudaGraphKernelNodeGetParams(node.handle, raw) == lib.cudaErrorInvalidDeviceFunction
    assert lib.cudaGraphLaunch(exe.handle, ffi.cast("cudaStream_t", 0)) == lib.cudaErrorInvalidDeviceFunction
    out = ffi.new("cudaGraphExec_t *")
    assert lib.cudaGraphInstantiate(out, g.handle, 0) == lib.cudaErrorInvalidDeviceFunction
    attrs = ffi.new("struct cudaFuncAttributes *")
    assert lib.cudaFuncGetAttributes(attrs, ffi.cast("void *", fill._func)) == lib.cudaErrorInvalidDeviceFunction
    seen = sim.undefined_calls(clear=True)
    assert [api for api, _ in seen] == ["cudaGraphKernelNodeGetParams", "cudaGraphLaunch", "cudaGraphInstantiate",
                                        "cudaFuncGetAttributes"]
    assert all("'fill' belongs to a library that was unloaded" in why for _, why in seen)
    exe.close()
    g.close()


def test_memory_freed_after_its_pool_was_destroyed_is_recorded_as_undefined_behaviour():
    """Documented as allowed, but CUDA 12.9 and 13.0 corrupted their heap when the memory was
    freed after its pool was destroyed (the generated API test on an H100): recorded, not
    refused."""
    from pygraphrt import lowlevel

    ffi, lib = lowlevel.ffi, lowlevel.lib
    sim.undefined_calls(clear=True)
    props = ffi.new("struct cudaMemPoolProps *")
    props.allocType = lib.cudaMemAllocationTypePinned
    props.location.type = lib.cudaMemLocationTypeDevice
    pool = ffi.new("cudaMemPool_t *")
    assert lib.cudaMemPoolCreate(pool, props) == 0
    ptr = ffi.new("void **")
    assert lib.cudaMallocFromPoolAsync(ptr, 64, pool[0], ffi.cast("cudaStream_t", 0)) == 0
    assert lib.cudaMemPoolDestroy(pool[0]) == 0
    assert sim.undefined_calls() == []  # (a pool may be destroyed with its memory out: it leaks)
    assert lib.cudaFree(ptr[0]) == 0
    assert sim.undefined_calls(clear=True) == [
        ("cudaFree", f"{int(ffi.cast('uintptr_t', ptr[0])):#x} comes from pool "
                     f"{int(ffi.cast('uintptr_t', pool[0])):#x}, destroyed before this free (a real runtime's "
                     "heap is corrupted)")]


def test_a_refused_free_of_stream_ordered_memory_names_the_runtimes_function():
    """AsyncBuffer.close() frees through a destroy that first waits for the device; the error
    the runtime gives names ``cudaFree`` (it named ``Free``: the prefix was lost)."""
    from pygraphrt import lowlevel

    s = rt.Stream()
    buf = s.malloc_async(64)
    s.synchronize()
    assert lowlevel.lib.cudaFree(lowlevel.ffi.cast("void *", buf.ptr)) == 0  # under the buffer's feet
    with pytest.raises(errors.InvalidValue) as info:
        buf.close()
    assert info.value.api == "cudaFree"
    assert "cudaFree" in str(info.value) and not buf.is_valid
    s.close()


def test_destroy_is_each_classes_own_close():
    """``destroy()`` runs the class's own ``close()``: Library.destroy() used to skip the library's
    (which invalidates its kernels and waits for graphs that run them) and Graph.destroy() the
    graph's, both being the base class's close under another name."""
    g = rt.Graph()
    g.add_empty()
    g.destroy()
    assert not g.is_valid and not g._table()  # the graph's close() empties its node table
    s = rt.Stream()
    cap = s.begin_capture()
    with pytest.raises(errors.IllegalState, match="capturing"):
        s.destroy()
    cap.abort()
    s.destroy()
    assert not s.is_valid


def test_unsimulated_functions_raise_not_supported():
    g = rt.Graph()
    with pytest.raises(errors.NotSupported, match="not simulated"):
        with rt.Stream().recapture(g):
            pass
    with pytest.raises(errors.NotSupported, match="no CUDA driver API"):
        rt.Kernel.wrap(0x1234).attributes()
    from pygraphrt.capabilities import capabilities

    assert not capabilities().device_launch and not capabilities().external_semaphore_nodes


# ============================================================================ the README's seed workflow
def seed_capture(s1, a, b, c, d, n):
    s2 = rt.Stream()
    fork, join = rt.Event(), rt.Event()
    with s1.capture() as cap:
        s1.memset(a, 1, n)
        s1.record(fork)
        s2.wait(fork)
        s1.memcpy(b, a, n)
        s2.memset(c, 3, n)
        info = cap.info()
        s2.record(join)
        s1.wait(join)
        s1.memcpy(d, c, n)
    return cap, info


def test_readme_seed_workflow(stream, bufs):
    a, b, c, d = bufs
    for x in bufs:
        x.copy_from(bytes(N))
    cap, info = seed_capture(stream, a, b, c, d, N)
    assert info.status is CaptureStatus.ACTIVE and info.id != 0
    assert [(n.type, e) for n, e in info.dependencies] == [(NodeType.MEMCPY, EdgeData(0, 0, DependencyType.DEFAULT))]
    assert {info: 1}[info] == 1  # hashable (the frozen dataclass' own hash raised: a list field)
    assert a.to_bytes(8) == bytes(8), "captured work must not run"
    g = cap.graph
    assert len(g.nodes()) == 4 and len(g.edges()) == 4
    assert [n.type for n in g.root_nodes()] == [NodeType.MEMSET]
    assert [n.type for n in g.leaf_nodes()] == [NodeType.MEMCPY]
    explicit = rt.Graph()
    A = explicit.add_memset(a, 1, N)
    B = A.memcpy(b, a, N)
    C = A.memset(c, 3, N)
    explicit.add_memcpy(d, c, N, dependencies=[B, C])
    assert g.same_structure(explicit)
    seen = []
    explicit.leaf_nodes()[0].host(lambda: seen.append(d.to_bytes(2)))
    exe = g.instantiate()
    for _ in range(1000):
        exe.launch(stream)
    stream.synchronize()
    assert b.to_bytes() == b"\x01" * N and d.to_bytes() == b"\x03" * N
    explicit.instantiate().launch(stream)
    stream.synchronize()
    assert seen == [b"\x03\x03"]


def test_explicit_graph_edges_and_edge_data(bufs):
    g = rt.Graph()
    a, b = g.add_empty(), g.add_empty()
    g.add_dependencies([a], [b], [EdgeData()])
    assert g.edges() == [(a, b, EdgeData())] and b.dependencies == [(a, EdgeData())]
    prog = EdgeData(PORT_PROGRAMMATIC, 0, DependencyType.PROGRAMMATIC)
    with pytest.raises(errors.InvalidValue, match="kernel nodes"):
        g.add_dependencies([b], [g.add_empty()], [prog])
    with pytest.raises(errors.InvalidValue, match="exists already"):
        g.add_dependencies([a], [b])
    m = g.add_memset(bufs[0], 9, 100, dependencies=[a])
    assert m.params["value"] == 9 and m.params["width"] == 100 and m.dependencies == [(a, EdgeData())]
    c = m.memcpy(bufs[1], bufs[0], 100)
    assert m.dependents == [(c, EdgeData())] and c.params["width"] == 100
    with pytest.raises(errors.InvalidValue):
        g.add_memset(bufs[0], 1, N + 1)  # runs past the allocation
    with pytest.raises(errors.InvalidValue):
        g.add_memset(DEVICE_BASE + 0xDEAD_0000, 1, 4)  # a device address in no allocation
    b.destroy()
    assert not b.is_valid and [n.type for n in g.nodes()] == [NodeType.EMPTY, NodeType.EMPTY, NodeType.MEMSET,
                                                               NodeType.MEMCPY]


def test_generic_add_node_readback_and_ids(stream, bufs):
    g = rt.Graph()
    e = g.add_node(NodeType.EMPTY)
    m = g.add_node(NodeType.MEMSET, dependencies=[e], edges=[EdgeData()], dst=bufs[0], value=8, count=N)
    seen = []
    h = g.add_node(NodeType.HOST, dependencies=[m], fn=lambda: seen.append(1), spin_wait=True)
    assert m.params["value"] == 8 and h.params["spin_wait"] is True and h.params["fn"] is not None
    assert [n.local_id for n in (e, m, h)] == [0, 1, 2] and m.containing_graph is g and g.id > 0
    m.set_params(dst=bufs[0], value=9, count=N)
    exe = g.instantiate()
    exe.launch(stream)
    exe.synchronize()
    assert bufs[0].to_bytes(4) == b"\x09" * 4 and seen == [1] and exe.id > 0
    exe.set_node_params(m, dst=bufs[0], value=10, count=N)
    exe.launch(stream)
    stream.synchronize()
    assert bufs[0].to_bytes(4) == b"\x0a" * 4
    with pytest.raises(errors.InvalidValue):
        g.add_node(NodeType.EMPTY, dependencies=[e],
                   edges=[EdgeData(PORT_PROGRAMMATIC, 0, DependencyType.PROGRAMMATIC)])


def test_lossy_edge_query_needs_room_for_edge_data():
    from pygraphrt import lowlevel

    k = kernels()["fill"]
    g = rt.Graph()
    k1, k2 = g.add_kernel(k, 1, 32, [0, 0.0, 0]), g.add_kernel(k, 1, 32, [0, 0.0, 0])
    prog = EdgeData(PORT_PROGRAMMATIC, 0, DependencyType.PROGRAMMATIC)
    g.add_dependencies([k1], [k2], [prog])
    assert g.edges() == [(k1, k2, prog)] and k1.dependents == [(k2, prog)]
    ffi, lib = lowlevel.ffi, lowlevel.lib
    n = ffi.new("size_t *")
    assert lib.cudaGraphGetEdges(g.handle, ffi.NULL, ffi.NULL, ffi.NULL, n) == 0 and n[0] == 1
    frm, to = ffi.new("cudaGraphNode_t[1]"), ffi.new("cudaGraphNode_t[1]")
    with pytest.raises(errors.LossyQuery):
        lowlevel.check(lib.cudaGraphGetEdges(g.handle, frm, to, ffi.NULL, n), "cudaGraphGetEdges")
    g.remove_dependencies([k1], [k2], [prog])
    assert g.edges() == []
    # CUDA 12.9-13.5 remove an edge whatever edge data the call names (documented to match it;
    # the conformance suite's known deviation edges.data.remove_with_other_data): so does sim
    g.add_dependencies([k1], [k2], [prog])
    g.remove_dependencies([k1], [k2])
    assert g.edges() == []


# ============================================================================ exec update, setters
def test_readme_exec_update_example(stream, bufs):
    a = bufs[0]
    g1 = rt.Graph()
    m = g1.add_memset(a, 1, N)
    exe = g1.instantiate()
    g2 = rt.Graph()
    g2.add_memset(a, 2, N)
    assert exe.update(g2) is UpdateResult.SUCCESS
    exe.launch(stream)
    stream.synchronize()
    assert a.to_bytes(8) == b"\x02" * 8
    exe.set_memset(m, value=7)  # nodes of the graph it was instantiated from, after the update too
    exe.launch(stream)
    stream.synchronize()
    assert a.to_bytes(8) == b"\x07" * 8
    exe.set_enabled(m, False)
    assert not exe.is_enabled(m)
    a.copy_from(bytes(N))
    exe.launch(stream)
    stream.synchronize()
    assert a.to_bytes(8) == bytes(8)
    g3 = rt.Graph()
    x = g3.add_memset(a, 3, N)
    x.empty()
    with pytest.raises(errors.GraphExecUpdateError) as ei:
        exe.update(g3)
    assert ei.value.result is UpdateResult.TOPOLOGY_CHANGED and ei.value.error_node is None


def test_exec_update_result_codes(stream, bufs):
    g = rt.Graph()
    a = g.add_memset(bufs[0], 1, N)
    g.add_memcpy(bufs[1], bufs[0], N, dependencies=[a])
    exe = g.instantiate()
    other = rt.Graph()  # same count, another type
    x = other.add_memset(bufs[0], 1, N)
    y = other.add_empty(dependencies=[x])
    with pytest.raises(errors.GraphExecUpdateError) as ei:
        exe.update(other)
    assert ei.value.result is UpdateResult.NODE_TYPE_CHANGED and ei.value.error_node is y
    flat = rt.Graph()  # same types, no edge
    flat.add_memset(bufs[0], 1, N)
    z = flat.add_memcpy(bufs[1], bufs[0], N)
    with pytest.raises(errors.GraphExecUpdateError) as ei:
        exe.update(flat)
    # another number of dependencies: CUDA (12.9-13.5) names no node (documented: the node of the
    # new graph; the conformance deviation exec.update.edge_added), and so does sim
    assert ei.value.result is UpdateResult.TOPOLOGY_CHANGED and ei.value.error_node is None
    assert z.type is NodeType.MEMCPY
    g2d = rt.Graph()
    g2d.add_memset(bufs[0], 1, 16, height=4, pitch=64)
    exe2 = g2d.instantiate()
    other2 = rt.Graph()
    other2.add_memset(bufs[0], 1, 8, height=4, pitch=64)  # a 2D memset's shape cannot change
    with pytest.raises(errors.GraphExecUpdateError) as ei:
        exe2.update(other2)
    assert ei.value.result is UpdateResult.PARAMETERS_CHANGED
    same = rt.Graph()
    s1 = same.add_memset(bufs[2], 5, N)
    same.add_memcpy(bufs[3], bufs[2], N, dependencies=[s1])
    assert exe.update(same) is UpdateResult.SUCCESS
    exe.launch(stream)
    stream.synchronize()
    assert bufs[3].to_bytes(4) == b"\x05" * 4


def test_per_node_exec_setters(stream, bufs):
    a, b, c, _ = bufs
    ev = rt.Event()
    child = rt.Graph()
    child.add_memset(a, 6, N)
    g = rt.Graph()
    cn = g.add_child_graph(child)
    cp = cn.memcpy(b, a, N)
    calls = []
    hn = cp.host(lambda: calls.append("first"))
    rec = hn.event_record(ev)
    exe = g.instantiate()
    exe.launch(stream)
    stream.synchronize()
    assert b.to_bytes(2) == b"\x06\x06" and calls == ["first"]
    new_child = rt.Graph()
    new_child.add_memset(a, 8, N)
    exe.set_child_graph(cn, new_child)
    exe.set_memcpy(cp, c, a, N)
    exe.set_host(hn, lambda: calls.append("second"))
    exe.set_event(rec, rt.Event())
    exe.launch(stream)
    stream.synchronize()
    assert c.to_bytes(2) == b"\x08\x08" and calls == ["first", "second"]
    bad = rt.Graph()
    bad.add_memset(a, 1, N).empty()
    with pytest.raises(errors.GraphExecUpdateFailure, match="topology"):
        exe.set_child_graph(cn, bad)
    with pytest.raises(errors.InvalidValue):
        exe.set_enabled(hn, False)  # only kernel, memcpy and memset nodes
    # documented as not supported, but CUDA 12.9-13.5 accept a device destination replaced by
    # pageable host memory (conformance deviation exec.set_memcpy.memory_type_changed): so does sim
    host = bytearray(N)
    exe.set_memcpy(cp, host, a, N)


def test_clone_dot_and_exports(bufs):
    g = rt.Graph()
    a = g.add_memset(bufs[0], 1, N)
    a.empty()
    c = g.clone()
    a2 = g.find_clone(a, c)
    assert a2.graph is c and a2.type is NodeType.MEMSET and a2.params["value"] == 1
    assert c.same_structure(g)
    with pytest.raises(errors.InvalidValue):
        rt.Graph().find_clone(rt.Graph().add_empty(), c)
    dot = g.debug_dot()
    assert dot.startswith("digraph") and "MEMSET" in dot and "->" in dot
    assert g.to_networkx().number_of_edges() == 1
    assert json.loads(g.to_json())["nodes"][0]["type"] == "memset"


def test_instantiate_flags_upload_and_one_shot_rules(stream, bufs):
    g = rt.Graph()
    g.add_memset(bufs[0], 4, N)
    exe = g.instantiate(upload_stream=stream, auto_free_on_launch=True)
    assert InstantiateFlags.AUTO_FREE_ON_LAUNCH in exe.flags
    exe2 = g.instantiate(device_launch=True)
    assert InstantiateFlags.DEVICE_LAUNCH in exe2.flags
    exe3 = g.instantiate(use_node_priority=True)
    assert exe3.flags is InstantiateFlags.NONE  # as the CUDA 12.9/13.0 runtimes report it
    h = rt.Graph()
    h.add_host(lambda: None)
    with pytest.raises(errors.InvalidValue, match="device launch"):
        h.instantiate(device_launch=True)
    with pytest.raises(errors.InvalidValue):
        g.instantiate(device_launch=True, auto_free_on_launch=True)


# ============================================================================ host functions, events, memory
def test_host_functions_run_in_order_and_errors_surface(stream):
    order = []
    stream.launch_host_func(lambda: order.append(1))
    stream.launch_host_func(lambda: 1 / 0)
    stream.launch_host_func(lambda: order.append(2))
    with pytest.raises(errors.HostCallbackError) as ei:
        stream.synchronize()
    assert isinstance(ei.value.__cause__, ZeroDivisionError) and order == [1, 2]
    stream.synchronize()  # reported once
    g = rt.Graph()
    g.add_host(lambda: 1 / 0)
    exe = g.instantiate()
    exe.launch(stream)
    with pytest.raises(errors.HostCallbackError):
        exe.synchronize()


def test_host_payloads_are_held_per_launch_and_found_by_token(stream):
    """The runtime is given a token, not a pointer to the Python object: a run asked for after the
    payload is gone finds nothing (counted, nothing followed), a launch holds its graph's
    payloads until they have run, and a node that does not run keeps one held payload."""
    from pygraphrt import _handles

    ran = []
    g = rt.Graph()
    g.add_host(lambda: ran.append("node"))
    body_graph_handle = g.conditional_handle(default=0)
    cond = g.add_if(body_graph_handle)
    cond.bodies[0].add_host(lambda: ran.append("untaken"))
    exe = g.instantiate()
    held = dict(_handles._held)
    for _ in range(3):
        exe.launch(stream)
    stream.synchronize()
    assert ran == ["node"] * 3
    new = {t: p for t, p in _handles._held.items() if t not in held}
    assert [p.fn() for p in new.values()] == [None] and ran[-1] == "untaken"  # the untaken one, once
    payload = _handles.HostPayload(stream.backend, lambda: ran.append("gone"), _handles.ErrorSink())
    token = payload.c_handle
    assert _handles.payload_of(stream.backend.ffi, token) is payload
    del payload
    import gc

    gc.collect()
    lost = _handles.lost_runs[0]
    _handles.trampoline(stream.backend)(token)  # the runtime's late call
    assert _handles.lost_runs[0] == lost + 1 and ran[-1] == "untaken"
    stream.launch_host_func(lambda: ran.append("eager"))
    stream.synchronize()
    assert ran[-1] == "eager" and {t: p for t, p in _handles._held.items() if t not in held} == new


def test_a_host_node_made_by_other_code_is_read_without_following_its_user_data():
    """``HostNode.params`` of a host node whose function is not pygraphrt's gives fn None: its
    ``userData`` is someone else's (here 0xdead0) and is never followed (cffi's from_handle on
    it would abort the process)."""
    from pygraphrt import lowlevel

    ffi, lib = lowlevel.ffi, lowlevel.lib
    g = rt.Graph()
    theirs = ffi.callback("void(void *)", lambda user: None)
    p = ffi.new("struct cudaHostNodeParams *")
    p.fn, p.userData = theirs, ffi.cast("void *", 0xDEAD0)
    out = ffi.new("cudaGraphNode_t *")
    lowlevel.check(lib.cudaGraphAddHostNode(out, g.handle, ffi.NULL, 0, p), "cudaGraphAddHostNode")
    (node,) = g.nodes()
    assert node.type is NodeType.HOST and node.params["fn"] is None


def test_events(stream, bufs):
    start, end = rt.Event(timing=True), rt.Event(timing=True)
    stream.record(start)
    stream.memset(bufs[0], 1, N)
    stream.record(end)
    end.synchronize()
    assert end.is_done and end.elapsed_ms(start) >= 0.0
    with pytest.raises(errors.InvalidResourceHandle):
        rt.Event().elapsed_ms(rt.Event())  # created without timing
    with pytest.raises(errors.InvalidResourceHandle):
        rt.Event(timing=True).elapsed_ms(start)  # never recorded
    s2 = rt.Stream()
    s2.wait(end)  # outside a capture: the work is done already
    s2.memset(bufs[1], 2, N)
    s2.synchronize()
    assert bufs[1].to_bytes(1) == b"\x02"
    g = rt.Graph()
    ev = rt.Event(timing=True)
    g.add_event_record(ev).event_wait(ev)
    g.instantiate().launch(stream)
    stream.synchronize()
    assert ev.elapsed_ms(start) >= 0.0


def test_memory_copies_and_checks(stream):
    a, b = rt.malloc(64), rt.malloc(64)
    host = bytearray(range(64))
    a.copy_from(host)
    stream.memcpy(b, a, 64)
    back = bytearray(64)
    stream.memcpy(back, b, 64)
    stream.synchronize()
    assert back == host and b.to_bytes(4, stream=stream) == bytes(range(4))
    assert sim.read(a.ptr + 10, 3) == bytes([10, 11, 12])
    sim.write(a.ptr, b"\xff\xfe")
    assert a.to_bytes(2) == b"\xff\xfe"
    g = rt.Graph()  # a pitched 2D copy: 4 rows of 8 bytes out of rows of 16
    g.add_memcpy_2d(b, 8, a, 16, 8, 4)
    g.instantiate().launch(stream)
    stream.synchronize()
    assert b.to_bytes(32) == b"".join(a.to_bytes(64)[16 * r:16 * r + 8] for r in range(4))
    with pytest.raises(errors.InvalidValue):
        stream.memcpy(b, a, 65)  # past the end
    ptr = a.ptr
    a.close()
    with pytest.raises(errors.InvalidValue):
        stream.memcpy(b, ptr, 4)  # freed memory is never touched
    with pytest.raises(errors.InvalidValue):
        sim.read(ptr, 4)
    big = sim.runtime().memory.total_memory
    with pytest.raises(errors.OutOfMemory):
        rt.malloc(big + 1)


def test_an_eager_copy_looks_up_only_the_operands_whose_range_it_does_not_know(stream, monkeypatch):
    """The copy range check asks the runtime where a raw address's allocation ends (one driver
    query each); a pygraphrt buffer (the count was held to its size) and a Python buffer (host
    memory) need no question.  A raw address running past its allocation is still refused, also
    beside a buffer."""
    ops = rt.lowlevel.backend_object().ops
    asked: list[int] = []
    real = ops.allocation_range

    def allocation_range(address: int) -> tuple[int, int] | None:
        asked.append(address)
        return real(address)  # type: ignore[no-any-return]

    monkeypatch.setattr(ops, "allocation_range", allocation_range)
    a, b = rt.malloc(64), rt.malloc(64)
    host = bytearray(64)
    for dst, src in ((b, a), (host, b), (a, host), (b, np.zeros(16, np.float32)), (memoryview(host), a)):
        stream.memcpy(dst, src, 64)
    assert asked == []
    stream.memcpy(b.ptr, a, 64)
    stream.memcpy(host, a.ptr + 8, 56)
    assert asked == [b.ptr, a.ptr + 8]
    with pytest.raises(errors.InvalidValue, match="past the end"):
        stream.memcpy(b, a.ptr + 8, 64)
    stream.synchronize()


def test_an_eager_copy_asks_the_capture_status_once(stream, monkeypatch):
    """An eager copy asks whether the stream is capturing (a capture pygraphrt did not begin
    must be seen) once, before the copy: that answer also says whether a host buffer is kept
    until the copy has run, or left to a capture's graph."""
    ops = rt.lowlevel.backend_object().ops
    calls: list[str] = []

    def call(api: str, *args):
        calls.append(api)
        return type(ops).call(ops, api, *args)

    kept: list[list[object]] = []
    keep = type(stream)._keep_until_run

    def keep_until_run(self, operands):
        kept.append(operands)
        return keep(self, operands)

    monkeypatch.setattr(ops, "call", call)
    monkeypatch.setattr(type(stream), "_keep_until_run", keep_until_run)
    a, host = rt.malloc(64), bytearray(64)
    array = np.zeros(16, np.float32)
    # (dst, src, what is kept until the copy has run: host buffers, not device buffers)
    for dst, src, want in ((a, host, [host]), (host, a, [host]), (a, array, [array]), (a, a, None)):
        calls.clear()
        kept.clear()
        stream.memcpy(dst, src, 64)
        assert calls.count("StreamIsCapturing") == 1, calls
        assert kept == ([want] if want else []), kept
    stream.synchronize()
    assert host == bytearray(64)


def test_a_host_buffer_shorter_than_the_count_is_refused_before_the_copy(stream):
    # A host address carries no size, so neither the runtime nor the simulator can refuse a copy
    # past a host buffer's end: pygraphrt must, from the object (found by the mutation check:
    # check_fits could answer "fits" with no in-process test noticing).  The view is the first
    # 8 bytes of a 64-byte buffer, so a copy that did run stays inside memory that is ours.
    a = rt.malloc(64)
    a.copy_from(bytes(range(64)))
    backing = bytearray(64)
    with pytest.raises(errors.InvalidValue, match="64 bytes do not fit the destination"):
        stream.memcpy(memoryview(backing)[:8], a, 64)
    with pytest.raises(errors.InvalidValue, match="64 bytes do not fit the source"):
        stream.memcpy(a, memoryview(bytes(64))[:8], 64)
    stream.synchronize()
    assert backing == bytearray(64) and a.to_bytes(64) == bytes(range(64))


# ============================================================================ capture rules
def test_capture_modes_and_unsafe_calls(stream, bufs):
    # global: a synchronous allocation on the capturing thread is refused and invalidates
    with pytest.raises(errors.StreamCaptureInvalidated, match="malloc"):
        with stream.capture("global"):
            stream.memset(bufs[0], 1, N)
            with pytest.raises(errors.StreamCaptureUnsupported):
                rt.malloc(64)
    assert stream.capture_status is CaptureStatus.NONE
    # relaxed: allowed
    with stream.capture("relaxed") as cap:
        stream.memset(bufs[0], 1, N)
        rt.malloc(64).close()
    assert len(cap.graph.nodes()) == 1
    # a thread switched to relaxed may allocate during a global capture
    with stream.capture("global"):
        prev = rt.exchange_capture_mode("relaxed")
        try:
            rt.malloc(64).close()
        finally:
            rt.exchange_capture_mode(prev)

    def other_thread(mode=None):
        out = []

        def run():
            if mode:
                rt.exchange_capture_mode(mode)
            try:
                rt.malloc(64).close()
                out.append("ok")
            except errors.StreamCaptureUnsupported:
                out.append("refused")

        t = threading.Thread(target=run)
        t.start()
        t.join()
        return out[0]

    with stream.capture("thread_local"):
        assert other_thread() == "ok"  # thread-local captures restrict their own thread only
    cap = stream.begin_capture("global")
    assert other_thread("relaxed") == "ok" and other_thread("thread_local") == "ok"
    assert other_thread() == "refused"  # a global capture restricts global-mode threads
    with pytest.raises(errors.StreamCaptureInvalidated):
        cap.end()


def test_exchange_capture_mode_is_per_thread():
    prev = rt.exchange_capture_mode("relaxed")
    try:
        assert rt.exchange_capture_mode("relaxed") is CaptureMode.RELAXED
        seen = []
        t = threading.Thread(target=lambda: seen.append(rt.exchange_capture_mode("global")))
        t.start()
        t.join()
        assert seen == [CaptureMode.GLOBAL]
    finally:
        rt.exchange_capture_mode(prev)
    with pytest.raises(errors.InvalidValue):
        rt.exchange_capture_mode("bogus")


def test_synchronize_and_query_during_capture(stream, bufs):
    with pytest.raises(errors.StreamCaptureInvalidated, match="Stream.StreamSynchronize"):
        with stream.capture():
            stream.memset(bufs[0], 1, N)
            with pytest.raises(errors.StreamCaptureUnsupported):
                stream.synchronize()
            assert stream.capture_status is CaptureStatus.INVALIDATED and not stream.is_capturing
    with pytest.raises(errors.StreamCaptureInvalidated):
        with stream.capture():
            with pytest.raises(errors.StreamCaptureUnsupported):
                stream.synchronize()
            with pytest.raises(errors.StreamCaptureInvalidated):
                stream.memset(bufs[0], 2, N)  # further work on the invalidated capture is refused
    for mode in ("global", "relaxed"):  # a necessary conflict, whatever the mode
        cap = stream.begin_capture(mode)
        with pytest.raises(errors.StreamCaptureUnsupported):
            stream.is_done
        cap.abort()
    ev = rt.Event()
    cap = stream.begin_capture("relaxed")
    stream.record(ev)
    with pytest.raises(errors.CapturedEvent):
        ev.is_done
    with pytest.raises(errors.StreamCaptureInvalidated):
        cap.end()
    cap = stream.begin_capture("relaxed")
    with pytest.raises(errors.StreamCaptureUnsupported):
        rt.current_device().synchronize()  # the device encompasses the capture
    cap.abort()
    assert stream.capture_status is CaptureStatus.NONE


def test_legacy_stream_rules(bufs):
    legacy = rt.Stream.legacy_default()
    with pytest.raises(errors.StreamCaptureUnsupported):
        with legacy.capture():
            pass
    blocking = rt.Stream(non_blocking=False)
    with blocking.capture() as cap:
        blocking.memset(bufs[0], 1, N)
        with pytest.raises(errors.StreamCaptureImplicit):
            legacy.capture_status  # refused, without invalidating
        blocking.memset(bufs[0], 2, N)
    assert len(cap.graph.nodes()) == 2
    with pytest.raises(errors.StreamCaptureInvalidated):
        with blocking.capture():
            with pytest.raises(errors.StreamCaptureImplicit):
                legacy.memset(bufs[1], 2, N)  # work on the legacy stream: refused, invalidates
    nonblocking = rt.Stream()
    bufs[1].copy_from(bytes(N))
    with nonblocking.capture() as cap:
        nonblocking.memset(bufs[0], 1, N)
        legacy.memset(bufs[1], 5, N)  # allowed, executed, not captured
        assert legacy.capture_status is CaptureStatus.NONE
    assert len(cap.graph.nodes()) == 1 and bufs[1].to_bytes(2) == b"\x05\x05"


def test_cross_stream_capture_errors(bufs):
    s1, s2, s3 = rt.Stream(), rt.Stream(), rt.Stream()
    fork = rt.Event()
    # unjoined work: the end fails and leaves no stream capturing
    with pytest.raises(errors.StreamCaptureUnjoined):
        with s1.capture():
            s1.memset(bufs[0], 1, N)
            s1.record(fork)
            s2.wait(fork)
            s2.memset(bufs[1], 2, N)
    assert s1.capture_status is CaptureStatus.NONE and s2.capture_status is CaptureStatus.NONE
    # a fork without work need not be joined
    with s1.capture() as cap:
        s1.record(fork)
        s2.wait(fork)
        s1.memset(bufs[0], 1, N)
    assert len(cap.graph.nodes()) == 1 and s2.capture_status is CaptureStatus.NONE
    # joining back through a third stream counts
    join = rt.Event()
    with s1.capture() as cap:
        s1.record(fork)
        s2.wait(fork)
        s2.memset(bufs[1], 2, N)
        s2.record(join)
        s3.wait(join)
        s3.record(join)
        s1.wait(join)
    assert len(cap.graph.nodes()) == 1
    # waiting on uncaptured work: isolation
    s3.memset(bufs[2], 1, N)
    s3.record(fork)
    with pytest.raises(errors.StreamCaptureInvalidated):
        with s1.capture():
            with pytest.raises(errors.StreamCaptureIsolation):
                s1.wait(fork)
    # waiting on an event of another capture: a merge
    c1 = s1.begin_capture()
    c2 = s2.begin_capture()
    s1.memset(bufs[0], 1, N)
    s1.record(fork)
    with pytest.raises(errors.StreamCaptureMerge):
        s2.wait(fork)
    c2.abort()
    c1.abort()
    # ending on a stream that only joined: unmatched
    from pygraphrt.conformance.cases.capture import _raw_end

    cap = s1.begin_capture()
    s1.record(fork)
    s2.wait(fork)
    with pytest.raises(errors.StreamCaptureUnmatched):
        _raw_end(s2)
    cap.abort()
    for s in (s1, s2, s3):
        assert s.capture_status is CaptureStatus.NONE


def test_end_from_another_thread(stream, bufs):
    cap = stream.begin_capture("global")
    stream.memset(bufs[0], 1, N)
    box = []
    t = threading.Thread(target=lambda: box.append(pytest.raises(errors.StreamCaptureWrongThread, cap.end)))
    t.start()
    t.join()
    assert box  # refused; as CUDA 12.9/13.0 do, the sequence is ended all the same
    assert stream.capture_status is CaptureStatus.NONE
    cap.abort()
    relaxed = stream.begin_capture("relaxed")
    stream.memset(bufs[0], 1, N)
    out = []
    t = threading.Thread(target=lambda: out.append(relaxed.end()))
    t.start()
    t.join()
    assert len(out[0].nodes()) == 1


def test_capture_info_update_dependencies_and_capture_into_a_graph(stream, bufs):
    g = rt.Graph()
    root = g.add_memset(bufs[0], 1, N)
    with stream.capture(graph=g, dependencies=[root]) as cap:
        stream.memset(bufs[1], 2, N)
        info = cap.info()
        assert info.graph is g and [n for n, _ in info.dependencies] == [g.nodes()[1]]
        cap.update_dependencies([root], replace=True)
        assert [n for n, _ in cap.info().dependencies] == [root]
        e = g.add_empty()
        cap.update_dependencies([e])
        assert [n for n, _ in cap.info().dependencies] == [root, e]
        stream.memset(bufs[2], 3, N)
    assert cap.graph is g and len(g.nodes()) == 4 and len(root.dependents) == 2
    other = rt.Graph().add_empty()
    cap = stream.begin_capture()
    with pytest.raises(errors.InvalidValue):
        cap.update_dependencies([other])
    assert stream.capture_status is CaptureStatus.ACTIVE  # a refused update leaves the capture alone
    cap.abort()
    with pytest.raises(errors.IllegalState):
        cap.update_dependencies([])
    # nested begins are refused and leave the first capture intact
    with stream.capture() as cap:
        stream.memset(bufs[0], 1, N)
        with pytest.raises(errors.IllegalState):
            stream.begin_capture()
        stream.memset(bufs[0], 2, N)
    assert len(cap.graph.nodes()) == 2


def test_captured_work_becomes_nodes(stream, bufs):
    calls = []
    bufs[0].copy_from(b"\x11" * N)
    with stream.capture() as cap:
        stream.memset(bufs[0], 0x22, N)
        stream.launch_host_func(lambda: calls.append(1))
        tmp = stream.malloc_async(N)
        stream.memcpy(tmp, bufs[0], N)
        stream.memcpy(bufs[1], tmp, N)
        stream.free_async(tmp)
    assert bufs[0].to_bytes(2) == b"\x11\x11" and calls == []
    types = [n.type for n in cap.graph.nodes()]
    assert types == [NodeType.MEMSET, NodeType.HOST, NodeType.MEM_ALLOC, NodeType.MEMCPY, NodeType.MEMCPY,
                     NodeType.MEM_FREE]
    assert len(cap.graph.edges()) == 5 and tmp.captured
    exe = cap.graph.instantiate()
    for _ in range(3):
        exe.launch(stream)
    stream.synchronize()
    assert calls == [1, 1, 1] and bufs[1].to_bytes(2) == b"\x22\x22"
    sub = rt.Graph()  # CUDA 13.0/13.5 refuse a graph launch into a capture and invalidate it:
    sub.add_memset(bufs[2], 7, N)  # so does sim (found by the cuda-vs-sim differential test)
    sub_exe = sub.instantiate()
    with pytest.raises(errors.StreamCaptureInvalidated):
        with stream.capture():
            with pytest.raises(errors.StreamCaptureUnsupported):
                sub_exe.launch(stream)
    assert not stream.is_capturing


def test_garbage_collected_buffer_does_not_break_a_capture(stream, bufs):
    """A finalizer's cudaFree during a global-mode capture would invalidate it (as on a GPU):
    pygraphrt defers the destroys the collector asks for until the last capture has ended."""
    import gc

    class Cycle:
        pass

    gc.disable()  # the collection happens where real code's allocations may trigger it: in the capture
    try:
        c = Cycle()
        c.me, c.buf = c, rt.malloc(64)  # freed only by the collector
        address = c.buf.ptr
        del c
        with stream.capture() as cap:
            stream.memset(bufs[0], 1, N)
            gc.collect()
            sim.read(address, 64)  # still allocated: the free waits for the capture's end
            stream.memset(bufs[1], 2, N)
    finally:
        gc.enable()
    assert [n.type for n in cap.graph.nodes()] == [NodeType.MEMSET, NodeType.MEMSET]
    with pytest.raises(errors.InvalidValue):
        sim.read(address, 64)  # freed once the capture ended


def test_closing_a_capturing_stream_is_refused(bufs):
    """Closing the stream a capture runs on would leave the capture running (a global-mode one
    refusing every thread's cudaMalloc for ever): refused until the capture ends (found by
    tests/api_fuzz.py, whose later examples could no longer allocate)."""
    s = rt.Stream()
    cap = s.begin_capture()
    s.memset(bufs[0], 1, N)
    with pytest.raises(errors.IllegalState, match="capturing: end or abort the capture first"):
        s.close()
    with pytest.raises(errors.IllegalState):
        s.destroy()
    assert s.is_valid and s.is_capturing
    cap.abort()
    s.close()
    assert not s.is_valid
    rt.malloc(64).close()  # no capture left behind


def test_a_collection_as_the_capture_begins_is_deferred_too(stream, bufs):
    """The collector can run as soon as the runtime has begun the capture, before
    ``Capture.begin`` returns (the simulator's begin is Python; on a GPU, any allocation after
    the call): its destroys must already wait.  Counting the capture only after the begin
    returned let the finalizer's cudaFree invalidate the new capture (found by tests/api_fuzz.py)."""
    import gc

    class Cycle:
        pass

    gc.disable()
    try:
        c = Cycle()
        c.me, c.buf = c, rt.malloc(64)
        address = c.buf.ptr
        del c
        with collecting_after("StreamBeginCapture"):
            with stream.capture() as cap:
                sim.read(address, 64)  # still allocated
                stream.memset(bufs[0], 1, N)
    finally:
        gc.enable()
    assert [n.type for n in cap.graph.nodes()] == [NodeType.MEMSET]
    with pytest.raises(errors.InvalidValue):
        sim.read(address, 64)  # freed once the capture ended


# ============================================================================ graph memory
def test_graph_memory_attributes_and_trim(stream):
    dev = rt.Device(0)
    dev.synchronize()
    dev.graph_mem_trim()
    dev.reset_graph_mem_high_watermarks()
    before = dev.graph_mem_attributes()
    g = rt.Graph()
    alloc = g.add_mem_alloc(64 << 20)
    assert DEVICE_BASE <= alloc.dptr < DEVICE_END and alloc.params["bytesize"] == 64 << 20
    ms = alloc.memset(alloc.dptr, 1, 64 << 20)
    ms.mem_free(alloc)
    exe = g.instantiate()
    exe.launch(stream)
    stream.synchronize()
    attrs = dev.graph_mem_attributes()
    # the physical memory stays with the executable graph for its next launch
    assert attrs[GraphMemAttr.USED_MEM_CURRENT] - before[GraphMemAttr.USED_MEM_CURRENT] == 64 << 20
    assert attrs[GraphMemAttr.USED_MEM_HIGH] >= 64 << 20 and attrs[GraphMemAttr.RESERVED_MEM_CURRENT] >= 64 << 20
    exe.launch(stream)  # freed inside the graph: relaunchable, same memory
    stream.synchronize()
    assert dev.graph_mem_attribute(GraphMemAttr.USED_MEM_CURRENT) == attrs[GraphMemAttr.USED_MEM_CURRENT]
    with pytest.raises(errors.NotSupported):
        g.instantiate()  # one executable graph at a time for a graph with memory nodes
    with pytest.raises(errors.NotSupported):
        g.clone()
    with pytest.raises(errors.NotSupported):
        alloc.set_params(size=1 << 20)
    with pytest.raises(errors.GraphRTError):
        ms.destroy()
    exe.close()
    g.close()
    mid = dev.graph_mem_attributes()
    assert mid[GraphMemAttr.USED_MEM_CURRENT] == before[GraphMemAttr.USED_MEM_CURRENT]
    assert mid[GraphMemAttr.RESERVED_MEM_CURRENT] == attrs[GraphMemAttr.RESERVED_MEM_CURRENT]  # kept until trim
    dev.graph_mem_trim()
    after = dev.graph_mem_attributes()
    assert after[GraphMemAttr.RESERVED_MEM_CURRENT] < attrs[GraphMemAttr.RESERVED_MEM_CURRENT]
    dev.reset_graph_mem_high_watermarks()
    assert dev.graph_mem_attribute(GraphMemAttr.USED_MEM_HIGH) == 0


def test_graph_memory_left_allocated_and_auto_free(stream):
    out = rt.malloc(N)
    with stream.capture() as cap:
        t = stream.malloc_async(N)
        stream.memset(t, 9, N)
        stream.memcpy(out, t, N)
    g = cap.graph
    exe = g.instantiate()
    exe.launch(stream)
    stream.synchronize()
    assert out.to_bytes(2) == b"\x09\x09" and sim.read(t.ptr, 2) == b"\x09\x09"  # still allocated
    with pytest.raises(errors.InvalidValue, match="still allocated"):
        exe.launch(stream)
    stream.free_async(t.ptr)  # graph memory may be freed outside the graph
    stream.synchronize()
    with pytest.raises(errors.InvalidValue):
        sim.read(t.ptr, 2)  # unmapped
    exe.launch(stream)
    exe.close()
    stream.free_async(t.ptr)
    auto = g.instantiate(auto_free_on_launch=True)
    for _ in range(3):
        auto.launch(stream)
    stream.free_async(t.ptr)
    stream.synchronize()


def test_mem_pools(stream):
    pool = rt.MemPool(release_threshold=64 << 20)
    tmp = stream.malloc_async(N, pool=pool)
    stream.memset(tmp, 0, N)
    stream.free_async(tmp)
    stream.synchronize()
    assert pool.attribute(rt.MemPoolAttr.RESERVED_MEM_CURRENT) >= N  # kept by the threshold
    assert pool.attribute(rt.MemPoolAttr.USED_MEM_CURRENT) == 0
    pool.trim(0)
    assert pool.attribute(rt.MemPoolAttr.RESERVED_MEM_CURRENT) == 0
    pool.release_threshold = 0
    t2 = stream.malloc_async(N, pool=pool)
    stream.free_async(t2)
    stream.synchronize()
    assert pool.attribute(rt.MemPoolAttr.RESERVED_MEM_CURRENT) == 0
    assert rt.MemPool.default() == rt.MemPool.current()
    with stream.capture(pool="private") as cap:
        t3 = stream.malloc_async(N)
        stream.free_async(t3)
    assert [n.type for n in cap.graph.nodes()] == [NodeType.MEM_ALLOC, NodeType.MEM_FREE]


# ============================================================================ kernels
SOURCE = r"""
extern "C" __global__ void fill(float *y, float v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;  if (i < n) y[i] = v; }
extern "C" __global__ void scale(float *out, const float *in, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;  if (i < n) out[i] = s * in[i]; }
extern "C" {
__global__ void __launch_bounds__(256) add2(float *out, const float *a, const float *b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;  if (i < n) out[i] = a[i] + b[i]; }
}
__global__ void mangled(int *p) {}
extern "C" __global__ void unregistered(int *p) {}
extern "C" __global__ void boom(int *p) {}
"""
_kernels: list = []


def kernels():
    if not _kernels:
        import tests.sim_kernels  # noqa: F401 - registers fill, scale, add2, ...

        sim.register_kernel("boom", lambda ctx, p: 1 / 0)
        prog = rt.Program(SOURCE, name="sim_test.cu")
        _kernels.append({"prog": prog,
                         "fill": prog.kernel("fill", signature="float *y, float v, int n"),
                         "scale": prog.kernel("scale", signature="float *out, const float *in, float s, int n"),
                         "add2": prog.kernel("add2", signature="float *out, const float *a, const float *b, int n")})
    return _kernels[0]


def test_program_finds_kernels_and_checks_signatures():
    k = kernels()
    prog = k["prog"]
    assert "fill" in prog.log and "add2" in prog.log and prog.image_kind == "cubin" and prog.arch == "sm_90"
    assert k["scale"].param_info == [(0, 8), (8, 8), (16, 4), (20, 4)]
    with pytest.raises(errors.GraphRTError, match="mangled"):
        prog.kernel("mangled")  # not extern "C": its name is mangled, as with NVRTC
    wrong = prog.kernel("fill", signature="float *y, int n")
    with pytest.raises(errors.InvalidValue, match="parameters"):
        wrong.launch(rt.Stream(), 1, 1, 0, 1)
    assert k["fill"].attributes().max_threads_per_block == 1024
    assert k["fill"].max_active_blocks_per_multiprocessor(256) > 0


def test_a_kernels_signature_is_read_only(stream):
    """Once a kernel's first launch has checked its signature against the compiled kernel, its
    fast paths are made for that signature: the signature cannot be replaced under them (it
    once could, and a wrong one then went unchecked); ``with_signature`` gives the same kernel
    typed anew, checked at its own first launch."""
    fill = kernels()["fill"]
    y = rt.malloc(16)
    stream.launch(fill, 1, 4, y, 1.0, 4)  # checked; the hot launch is made for this signature
    with pytest.raises(AttributeError):
        fill.signature = "float *y, int n"  # type: ignore[misc]
    assert str(fill.signature) == "float* y, float v, int n"
    wrong = fill.with_signature("float *y, int n")
    assert wrong.signature is not fill.signature and len(wrong.signature.params) == 2
    with pytest.raises(errors.InvalidValue, match="parameters"):
        stream.launch(wrong, 1, 4, y, 4)
    stream.launch(fill, 1, 4, y, 2.0, 4)
    stream.synchronize()
    assert list(floats(y, 4)) == [2.0] * 4


def test_templates_through_name_expressions_and_registered_signatures(stream):
    prog = rt.Program("template <typename T> __global__ void axpb(T *y, T a, T b, int n) {}",
                      name_expressions=["axpb<float>"])
    assert prog.lowered_names == {"axpb<float>": "axpb<float>"}  # the simulator does not mangle
    k = prog.kernel("axpb<float>", signature="float *y, float a, float b, int n")
    assert k.param_info is None  # the simulator cannot read a template's parameters
    y = rt.malloc(16)
    y.copy_from(np.ones(4, np.float32).tobytes())
    with pytest.raises(errors.NotSupported, match="axpb<float>"):
        stream.launch(k, 1, 4, y, 2.0, 1.0, 4)

    def axpb(ctx, y, a, b, n):
        v = ctx.array(y, "f4", n)
        v[:] = a * v + b

    sim.register_kernel("axpb<float>", axpb, signature="float *y, float a, float b, int n")
    try:
        stream.launch(k, 1, 4, y, 2.0, 1.0, 4)
        stream.synchronize()
        assert list(floats(y, 4)) == [3.0] * 4
        assert "axpb<float>" in sim.registered_kernels()
    finally:
        sim.unregister_kernel("axpb<float>")


def test_readme_kernel_workflow(stream):
    k = kernels()
    fill, scale, add2 = k["fill"], k["scale"], k["add2"]
    n = N // 4
    a, b, c, d = (rt.malloc(N) for _ in range(4))
    grid, block = (n + 255) // 256, 256
    stream.launch(fill, grid, block, a, 1.0, n)
    with stream.capture() as cap:
        stream.launch(scale, grid, block, b, a, 2.0, n)
    assert cap.graph.nodes()[0].args == [b.ptr, a.ptr, 2.0, n]
    g = rt.Graph()
    A = g.add_kernel(fill, grid, block, [a, 1.0, n])
    B = A.kernel(scale, grid, block, [b, a, 2.0, n])
    C = A.kernel(scale, grid, block, [c, a, 3.0, n])
    D = g.add_kernel(add2, grid, block, [d, b, c, n], dependencies=[B, C])
    exe = g.instantiate()
    exe.launch(stream)
    stream.synchronize()
    assert set(floats(d, n)) == {5.0}
    exe.set_kernel_params(B, args=[b, a, 10.0, n])
    exe.launch(stream)
    stream.synchronize()
    assert set(floats(d, n)) == {13.0}
    assert D.params["grid"] == rt.graph.Dim3(grid) and D.params["kernel"] is not None
    with pytest.raises(errors.InvalidValue, match="a float where a pointer is declared"):
        stream.launch(fill, grid, block, 1.5, 2.0, n)
    exe.set_kernel_launch_dims(A, grid=1)  # only the first 256 elements now
    a.copy_from(bytes(N))
    exe.launch(stream)
    stream.synchronize()
    assert set(floats(a, 256)) == {1.0} and set(floats(a, n - 256, 256)) == {0.0}
    B.set_attribute("priority", 3)
    assert B.attribute("priority") == 3
    B.copy_attributes_to(C)
    assert C.attribute("priority") == 3


def test_kernels_without_function_or_failing(stream):
    prog = kernels()["prog"]
    k = prog.kernel("unregistered", signature="int *p")
    buf = rt.malloc(16)
    g = rt.Graph()
    node = g.add_kernel(k, 1, 1, [buf])  # the node is kept: built, read, updated
    assert node.args == [buf.ptr]
    exe = g.instantiate()
    with pytest.raises(errors.NotSupported, match="'unregistered' has no Python implementation"):
        exe.launch(stream)
    with pytest.raises(errors.NotSupported, match="register_kernel"):
        stream.launch(k, 1, 1, buf)
    sim.register_kernel("unregistered", lambda ctx, p: ctx.write(p, b"\x2a"))
    try:
        exe.launch(stream)  # looked up at each launch
        stream.synchronize()
        assert buf.to_bytes(1) == b"\x2a"
    finally:
        sim.unregister_kernel("unregistered")
    boom = prog.kernel("boom", signature="int *p")
    with pytest.raises(errors.LaunchFailure) as ei:
        stream.launch(boom, 1, 1, buf)
    assert isinstance(ei.value.__cause__, ZeroDivisionError) and "boom" in ei.value.detail and not ei.value.sticky
    stream.synchronize()  # the simulator has no context to corrupt


def test_programmatic_edges_in_capture(stream):
    fill = kernels()["fill"]
    buf = rt.malloc(N)
    prog = EdgeData(PORT_PROGRAMMATIC, 0, DependencyType.PROGRAMMATIC)
    with stream.capture() as cap:
        stream.launch(fill, 1, 32, buf, 1.0, 32)
        stream.launch(fill, 1, 32, buf, 2.0, 32, programmatic_stream_serialization=True)
    assert [e for _, _, e in cap.graph.edges()] == [prog]
    with stream.capture() as cap:
        stream.launch(fill, 1, 32, buf, 1.0, 32)
        k1 = cap.info().dependencies[0][0]
        cap.update_dependencies([k1], [prog], replace=True)
        assert cap.info().dependencies == [(k1, prog)]
        stream.launch(fill, 1, 32, buf, 2.0, 32)
    assert [e for _, _, e in cap.graph.edges()] == [prog]
    cap.graph.instantiate().launch(stream)
    stream.synchronize()
    assert set(floats(buf, 32)) == {2.0}
    with pytest.raises(errors.InvalidValue):  # programmatic data into a memset
        with stream.capture() as cap:
            stream.launch(fill, 1, 32, buf, 1.0, 32)
            cap.update_dependencies([cap.info().dependencies[0][0]], [prog], replace=True)
            stream.memset(buf, 0, 4)


# ============================================================================ conditional nodes
LOOPS = r"""
extern "C" __global__ void arm(cudaGraphConditionalHandle h, int *left, int n) {
    *left = n;  cudaGraphSetConditional(h, n > 0); }
extern "C" __global__ void step(cudaGraphConditionalHandle h, int *left, float *acc) {
    acc[0] += 1.0f;  cudaGraphSetConditional(h, --(*left) > 0); }
extern "C" __global__ void set_value(cudaGraphConditionalHandle h, unsigned int v) {
    cudaGraphSetConditional(h, v); }
"""


def test_readme_conditional_loop_explicit_and_captured(stream):
    kernels()
    loops = rt.Program(rt.SET_CONDITIONAL_SOURCE + LOOPS)
    arm = loops.kernel("arm", signature="cudaGraphConditionalHandle h, int *left, int n")
    step = loops.kernel("step", signature="cudaGraphConditionalHandle h, int *left, float *acc")
    left, acc = rt.malloc(4), rt.malloc(4)
    s2 = rt.Stream()
    g = rt.Graph()
    h = g.conditional_handle()
    start = g.add_kernel(arm, 1, 1, [h, left, 10])
    loop = g.add_while(h, dependencies=[start])
    loop.bodies[0].add_kernel(step, 1, 1, [h, left, acc])
    stream.memset(acc, 0, 4)
    g.instantiate().launch(stream)
    stream.synchronize()
    assert struct.unpack("<f", acc.to_bytes(4))[0] == 10.0
    with stream.capture() as cap:
        h2 = cap.conditional_handle()
        stream.launch(arm, 1, 1, h2, left, 10)
        loop2 = cap.add_while(h2)
        with loop2.capture(s2):
            s2.launch(step, 1, 1, h2, left, acc)
    assert cap.graph.same_structure(g) and loop2.kind == "while"
    stream.memset(acc, 0, 4)
    cap.graph.instantiate().launch(stream)
    stream.synchronize()
    assert struct.unpack("<f", acc.to_bytes(4))[0] == 10.0
    with pytest.raises(errors.NotSupported):
        g.clone()  # graphs with conditional nodes cannot be cloned


def test_if_else_and_switch(stream):
    kernels()
    loops = rt.Program(rt.SET_CONDITIONAL_SOURCE + LOOPS)
    setter = loops.kernel("set_value", signature="cudaGraphConditionalHandle h, unsigned int v")
    out = rt.malloc(16)
    results = []
    for value in range(4):
        g = rt.Graph()
        h = g.conditional_handle()
        sw = g.add_switch(h, 3, dependencies=[g.add_kernel(setter, 1, 1, [h, value])])
        for i, body in enumerate(sw.bodies):
            body.add_memset(out.ptr + 4 * i, 1, 4)
        ie = g.add_if_else(h, dependencies=[sw])
        ie.bodies[0].add_memset(out.ptr + 12, 1, 4)
        ie.bodies[1].add_memset(out.ptr + 12, 2, 4)
        out.copy_from(bytes(16))
        g.instantiate().launch(stream)
        stream.synchronize()
        results.append(out.to_bytes(16)[::4])
    assert results == [b"\x01\x00\x00\x02", b"\x00\x01\x00\x01", b"\x00\x00\x01\x01", b"\x00\x00\x00\x01"]


# ============================================================================ execution order
def test_random_order_respects_every_edge(stream):
    ran: list[int] = []
    g = rt.Graph()
    nodes = []
    import random

    pick = random.Random(7)
    for i in range(40):
        deps = pick.sample(nodes, min(len(nodes), pick.randrange(3)))
        nodes.append(g.add_host(lambda i=i: ran.append(i), dependencies=deps))
    index = {n: i for i, n in enumerate(nodes)}
    edges = [(index[a], index[b]) for a, b, _ in g.edges()]
    exe = g.instantiate()
    orders = set()
    for seed in range(5):
        sim.set_order("random", seed)
        ran.clear()
        exe.launch(stream)
        stream.synchronize()
        pos = {v: k for k, v in enumerate(ran)}
        assert sorted(ran) == list(range(40)) and all(pos[a] < pos[b] for a, b in edges)
        orders.add(tuple(ran))
    assert len(orders) > 1
    sim.set_order("creation")
    ran.clear()
    exe.launch(stream)
    stream.synchronize()
    assert ran == list(range(40))  # creation order among the ready nodes (each depends on earlier ones)
    with pytest.raises(ValueError):
        sim.set_order("sideways")


def test_random_order_reveals_a_missing_dependency(stream):
    buf = rt.malloc(N)
    out = bytearray(4)
    g = rt.Graph()
    g.add_memset(buf, 1, N)
    g.add_memcpy(out, buf, 4)  # forgot: dependencies=[the memset]
    exe = g.instantiate()
    seen = set()
    for seed in range(12):
        sim.set_order("random", seed)
        buf.copy_from(bytes(N))
        exe.launch(stream)
        stream.synchronize()
        seen.add(bytes(out))
    sim.set_order("creation")
    assert seen == {b"\x00" * 4, b"\x01" * 4}


# ============================================================================ the suites, on the simulator
# GPU tests that need what the simulator does not have, with the reason.
GPU_ONLY = {
    "test_graphs.py::test_backend_reports_binding_matching_runtime": "asserts vendor == 'cuda'",
    "test_graphs.py::test_raw_layer_null_graph_raises_invalid_value": "asserts vendor == 'cuda'",
    "test_cuda13x.py::test_capabilities_follow_runtime_and_driver": "recapture is not simulated",
    "test_cuda13x.py::test_recapture_into_an_existing_graph": "recapture is not simulated",
    "test_kernels.py::test_program_compiles_for_current_device": "expects a real CUBIN (ELF)",
    "test_kernels.py::test_compile_error_carries_log_and_options": "needs a compiler to fail",
    "test_kernels.py::test_warnings_kept_on_success": "needs a compiler's warnings",
    "test_kernels.py::test_headers_and_options": "needs the preprocessor (headers, -D)",
    "test_kernels.py::test_wrong_arguments_raise_before_launch": "struct parameter: layout unknown to the simulator",
    "test_kernels.py::test_struct_argument": "struct parameter: layout unknown to the simulator",
    "test_kernels.py::test_templates_by_name_expression": "template kernel: layout unknown to the simulator",
    "test_kernels.py::test_random_signatures_round_trip_through_kernel_node": "struct parameters, unregistered kernel",
    # PyTorch / CuPy work on the real GPU: their streams and addresses mean nothing to the simulator
    # (where they are installed -- the GPU machine -- such a test crashed the process in CuPy)
    "test_compute.py::test_default_stream_torch_cupy_and_a_foreign_capture": "PyTorch and CuPy on the GPU",
    "test_graphs.py::test_kernel_node_from_torch_capture_params_and_launch_dims": "a PyTorch capture",
    "test_interop_lifetime.py::test_wrap_foreign_streams_without_owning_them": "a CuPy stream",
    "test_kernels.py::test_foreign_cupy_raw_kernel": "a CuPy kernel",
    "test_kernels.py::test_torch_tensor_argument": "PyTorch tensors",
    # real device code compiled for the GPU (where cuda.bindings / NVRTC are there to make it)
    "test_graphs.py::test_programmatic_edge_data_between_kernel_nodes": "a CUBIN for the GPU",
    "test_graphs.py::test_library_kernel_params_and_launch_dims_through_the_driver_api": "the driver API",
    "test_kernels.py::test_attributes_and_occupancy_agree_with_cuda_bindings": "cuda.bindings on the GPU",
}
GPU_ONLY_FILES = {"test_extsem.py": "a Vulkan driver", "test_device_launch.py": "device code and its linker",
                  "test_sim_differential.py": "compares the real CUDA runtime with the simulator",
                  "test_torch.py": "torch's own CUDA graphs (torch.cuda.CUDAGraph) on a real GPU"}


def test_gpu_tests_pass_on_the_simulator():
    """tests/gpu, unedited, on the simulator (kernels from tests/sim_kernels.py): everything that does
    not depend on a real GPU, compiler or driver passes, with GPU tests required to run."""
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "tests.sim_kernels",
                        "tests/gpu", *(f"--deselect=tests/gpu/{t}" for t in GPU_ONLY),
                        *(f"--ignore=tests/gpu/{f}" for f in GPU_ONLY_FILES)],
                       capture_output=True, text=True, cwd=str(REPO), timeout=600,
                       env=dict(os.environ, PYTHONPATH=PYTHONPATH, PYGRAPHRT_BACKEND="sim", PYGRAPHRT_REQUIRE_GPU="1"))
    tail = r.stdout[-3000:]
    assert r.returncode == 0, tail + r.stderr[-2000:]
    summary = r.stdout.strip().splitlines()[-1]
    counts = {word: int(n) for n, word in re.findall(
        r"(\d+) (passed|failed|skipped|deselected|xfailed|xpassed|errors?)\b", summary)}
    assert counts.get("passed"), f"no test passed: {summary!r}"
    skips = "\n".join(line for line in r.stdout.splitlines() if line.startswith("SKIPPED"))
    check_counts("gpu tests on sim", counts, "gpu_tests_pass_on_the_simulator",
                 f"\nsummary: {summary}\n{skips}")


@pytest.mark.parametrize("devices", [1, 2])
def test_conformance_suite_passes_on_the_simulator(tmp_path, capsys, devices):
    """The whole conformance suite on ``sim`` with one device and with two (the ``multidevice``
    area runs only there); its pass / deviation table goes to the terminal (CI's log shows it)
    whether or not the run passes."""
    out = tmp_path / "sim.json"
    r = run_py(f"""
        import sys
        import tests.sim_kernels  # the suite's kernels as Python functions
        from pygraphrt.conformance.__main__ import main
        sys.exit(main(["-q", "--json", {str(out)!r}]))
    """, PYGRAPHRT_BACKEND="sim", PYGRAPHRT_SIM_DEVICES=str(devices))
    label = "conformance on sim" + ("" if devices == 1 else f", {devices} devices")
    table = r.stdout[r.stdout.find("pygraphrt "):] if "pygraphrt " in r.stdout else r.stdout[-4000:]
    with capsys.disabled():
        print(f"\n== {label} (tests/test_sim.py)\n" + table.rstrip())
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    doc = json.loads(out.read_text())
    statuses = [c["status"] for c in doc["cases"]]
    assert "failed" not in statuses and "error" not in statuses, [
        (c["id"], c["status"]) for c in doc["cases"] if c["status"] in ("failed", "error")]
    check_counts(label, dict(Counter(statuses)), "conformance_suite_passes_on_the_simulator")


def test_main_job_runs_the_seed_workflow_on_the_simulator_without_a_gpu():
    """``python -m pygraphrt demo`` (scripts/main's last step): with no GPU it runs on ``sim``, says
    so, prints the captured diamond with its edge data, and checks the data."""
    probe = run_py("""
        import pygraphrt
        try:
            print(pygraphrt.use("auto").info().device_count)
        except Exception:
            print(0)
    """)
    if probe.stdout.strip() not in ("", "0"):
        pytest.skip("this machine has a GPU: the demo runs there (checked by scripts/gpu-test's machine)")
    env = {k: v for k, v in os.environ.items() if k != "PYGRAPHRT_BACKEND"}
    r = subprocess.run([sys.executable, "-m", "pygraphrt", "demo"], capture_output=True, text=True,
                       cwd=str(REPO), env=dict(env, PYTHONPATH=PYTHONPATH), timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert out.startswith("no GPU: running on the simulator (") and "no GPU is used" in out
    assert "captured graph: 4 nodes, 4 edges" in out
    assert "status ACTIVE" in out and "('MEMCPY', 'EdgeData()')" in out
    assert out.count("edge data EdgeData()") == 4
    assert "b holds 01010101..., d holds 03030303... (correct)" in out


def test_a_dropped_active_capture_stops_deferring_frees():
    """Finalizers' destroys wait while a capture is active; a Capture object dropped while still
    active (its stream gone too) must not keep them waiting for ever."""
    import gc

    from pygraphrt._handles import captures

    before = captures.active
    s = rt.Stream()
    cap = s.capture()
    cap.begin()
    assert captures.active == before + 1
    del cap, s
    gc.collect()
    assert captures.active == before
    # and the runtime's capture was ended: a global-mode capture left running would refuse
    # every later allocation ("potentially unsafe" calls) for ever
    assert not [c for c in sim.runtime().captures if not c.ended]
    rt.malloc(64).close()
