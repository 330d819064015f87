"""Kernels on a real GPU: compile, load, launch, capture, kernel nodes, typed arguments.

Run by scripts/gpu-test on each CUDA runtime (13.x and 12.9, the latter with
NVRTC 12 through PYGRAPHRT_NVRTC).
"""

from __future__ import annotations

import ctypes
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pygraphrt as rt
from pygraphrt import errors, lowlevel
from pygraphrt.enums import CaptureStatus, DependencyType, EdgeData, NodeType, UpdateResult
from pygraphrt.enums import PORT_PROGRAMMATIC

pytestmark = pytest.mark.gpu

SOURCE = r'''
struct Params { int n; float scale; };

extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void fill(float *y, float v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = v;
}
extern "C" __global__ void scale(float *out, const float *in, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = s * in[i];
}
extern "C" __global__ void add2(float *out, const float *a, const float *b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}
extern "C" __global__ void with_struct(float *y, Params p) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) y[i] *= p.scale;
}
template <typename T> __global__ void axpb(T *y, T a, T b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * y[i] + b;
}
'''


class Params(ctypes.Structure):
    _fields_ = [("n", ctypes.c_int), ("scale", ctypes.c_float)]


class Oversize(ctypes.Structure):
    _fields_ = [("n", ctypes.c_int), ("scale", ctypes.c_float), ("extra", ctypes.c_double)]


@pytest.fixture(scope="module")
def prog():
    return rt.Program(SOURCE, name="test_kernels.cu", name_expressions=["axpb<float>", "axpb<double>"])


def upload(a: np.ndarray, stream=None) -> rt.DeviceBuffer:
    buf = rt.malloc(a.nbytes)
    buf.copy_from(a.tobytes())
    return buf


def download(buf: rt.DeviceBuffer, n: int, dtype=np.float32) -> np.ndarray:
    return np.frombuffer(buf.to_bytes(n * np.dtype(dtype).itemsize), dtype=dtype)


def blocks(n: int, b: int = 256) -> int:
    return (n + b - 1) // b


# ---------------------------------------------------------------- compile / load
def test_program_compiles_for_current_device(prog):
    arch = rt.current_device().info().arch
    assert prog.image_kind in ("cubin", "ptx")
    if prog.image_kind == "cubin":
        assert prog.image[:4] == b"\x7fELF" and prog.arch == arch
    assert any(o.startswith("--gpu-architecture=") for o in prog.options)
    assert prog.lowered_names["axpb<float>"].startswith("_Z")
    expected = os.environ.get("PYGRAPHRT_EXPECT_BINDING")
    if expected:  # NVRTC of the runtime's major
        assert f"nvrtc {expected[-2:]}." in prog.compiler, prog.compiler


def test_compile_error_carries_log_and_options():
    with pytest.raises(errors.CompileError) as ei:
        rt.Program('extern "C" __global__ void broken(int *p) { p[0] = undefined_name; }',
                   name="broken.cu", options=["-DSOMETHING=1"])
    err = ei.value
    assert "undefined_name" in err.log and "broken.cu" in err.log
    assert "-DSOMETHING=1" in err.options and any(o.startswith("--gpu-architecture") for o in err.options)
    assert err.source_name == "broken.cu"
    assert "undefined_name" in str(err)


def test_warnings_kept_on_success():
    p = rt.Program('#warning pygraphrt-test-warning\nextern "C" __global__ void w(int *p) { p[0] = 1; }')
    assert "pygraphrt-test-warning" in p.log
    assert any("pygraphrt-test-warning" in w for w in p.warnings)
    # the program that warned still compiled: its kernel runs and writes what its source says
    k = p.kernel("w", signature="int *p")
    assert k.name == "w"
    buf = rt.malloc(4)
    buf.copy_from(bytes(4))
    s = rt.Stream()
    s.launch(k, 1, 1, buf)
    s.synchronize()
    assert np.frombuffer(buf.to_bytes(4), np.int32)[0] == 1


def test_headers_and_options():
    p = rt.Program('#include "cfg.h"\nextern "C" __global__ void k(int *p) { p[0] = CFG_VALUE + EXTRA; }',
                   headers={"cfg.h": "#define CFG_VALUE 40\n"}, options=["-DEXTRA=2"])
    k = p.kernel("k", signature="int *p")
    buf = rt.malloc(4)
    s = rt.Stream()
    s.launch(k, 1, 1, buf)
    s.synchronize()
    assert np.frombuffer(buf.to_bytes(4), np.int32)[0] == 42


def test_library_from_bytes_and_file(prog, tmp_path, stream):
    path = tmp_path / "k.bin"
    path.write_bytes(prog.image)
    for lib in (rt.Library(prog.image), rt.Library(path), rt.Library(str(path))):
        k = lib.kernel("fill", signature="float*, float, int")
        buf = rt.malloc(16)
        stream.launch(k, 1, 4, buf, 2.5, 4)
        stream.synchronize()
        assert download(buf, 4).tolist() == [2.5] * 4
        lib.close()
        assert not k.is_valid
        with pytest.raises(errors.InvalidResourceHandle):
            stream.launch(k, 1, 4, buf, 2.5, 4)
    with pytest.raises(errors.InvalidValue):
        rt.Library(tmp_path / "missing.bin")
    with pytest.raises(errors.InvalidValue):
        rt.Library(b"")
    with pytest.raises(errors.GraphRTError):  # at load, or at first use where loading is lazy
        rt.Library(b"not an image at all").kernel("fill")
    with pytest.raises(errors.GraphRTError):
        rt.Library(prog.image).kernel("no_such_kernel")


# ---------------------------------------------------------------- stream launch
def test_saxpy_one_million(prog, stream):
    n = 1 << 20
    rng = np.random.default_rng(1)
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    dx, dy = upload(x), upload(y)
    saxpy = prog.kernel("saxpy", signature="float a, const float *x, float *y, int n")
    stream.launch(saxpy, blocks(n), 256, 2.0, dx, dy, n)
    stream.synchronize()
    np.testing.assert_allclose(download(dy, n), np.float32(2.0) * x + y, rtol=1e-6)


def test_saxpy_captured_replayed_1000_times(prog, stream):
    n = 1 << 20
    x = np.full(n, 0.5, np.float32)
    dx, dy = upload(x), upload(np.zeros(n, np.float32))
    saxpy = prog.kernel("saxpy", signature="float, const float*, float*, int")
    with stream.capture() as cap:
        stream.launch(saxpy, blocks(n), 256, 2.0, dx, dy, n)
    graph = cap.graph
    (node,) = graph.nodes()
    assert isinstance(node, rt.KernelNode)
    params = node.params
    assert params["kernel"] is not None and params["kernel"].name == "saxpy"
    assert params["args"] == [2.0, dx.ptr, dy.ptr, n]
    assert tuple(params["grid"]) == (blocks(n), 1, 1) and tuple(params["block"]) == (256, 1, 1)
    exe = graph.instantiate()
    for _ in range(1000):
        exe.launch(stream)
    stream.synchronize()
    np.testing.assert_array_equal(download(dy, n), np.full(n, 1000.0, np.float32))


def test_untyped_kernel_takes_typed_values_only(prog, stream):
    fill = prog.kernel("fill")  # no signature
    buf = rt.malloc(64)
    stream.launch(fill, 1, 16, buf, np.float32(3.0), np.int32(16))
    stream.synchronize()
    assert download(buf, 16).tolist() == [3.0] * 16
    with pytest.raises(errors.InvalidValue, match="plain float"):
        stream.launch(fill, 1, 16, buf, 3.0, np.int32(16))
    # typed, but the wrong size for the compiled parameter (float64 where float is declared)
    with pytest.raises(errors.InvalidValue, match="argument 1"):
        stream.launch(fill, 1, 16, buf, np.float64(3.0), np.int32(16))


def test_wrong_arguments_raise_before_launch(prog, stream):
    n = 256
    buf = upload(np.ones(n, np.float32))
    fill = prog.kernel("fill", signature="float *y, float v, int n")
    with pytest.raises(errors.InvalidValue, match="takes 3 arguments"):
        stream.launch(fill, 1, n, buf, 2.0)
    with pytest.raises(errors.InvalidValue, match=r"argument 0 \(float\* y\).*float where a pointer"):
        stream.launch(fill, 1, n, 1.5, 2.0, n)
    with pytest.raises(errors.InvalidValue, match="argument 2"):
        stream.launch(fill, 1, n, buf, 2.0, 2.5)
    with pytest.raises(errors.InvalidValue, match="does not fit"):
        stream.launch(fill, 1, n, buf, 2.0, 1 << 40)
    # the signature disagrees with the compiled kernel: count, then a struct too big
    wrong = prog.kernel("fill", signature="float*, float")
    with pytest.raises(errors.InvalidValue, match="compiled kernel has 3 parameters"):
        stream.launch(wrong, 1, n, buf, 2.0)
    big = prog.kernel("with_struct", signature=[ctypes.c_void_p, Oversize])
    with pytest.raises(errors.InvalidValue, match="argument 1 .*16 bytes.*8 bytes"):
        stream.launch(big, 1, n, buf, Oversize(n, 2.0, 0.0))
    with pytest.raises(errors.InvalidValue):
        stream.launch(fill, 0, n, buf, 2.0, n)
    with pytest.raises(errors.InvalidValue):
        stream.launch(fill, 1, (1, 2, 3, 4), buf, 2.0, n)
    stream.synchronize()
    assert download(buf, n).tolist() == [1.0] * n  # nothing ran
    # a launch the runtime refuses (too many threads) raises and leaves no capture behind
    with pytest.raises(errors.GraphRTError):
        with stream.capture():
            stream.launch(fill, 1, 4096, buf, 2.0, n)
    assert stream.capture_status is CaptureStatus.NONE


def test_struct_argument(prog, stream):
    n = 100
    buf = upload(np.full(n, 2.0, np.float32))
    k = prog.kernel("with_struct", signature=rt.kernels.parse_signature("float *y, Params p",
                                                                          types={"Params": Params}))
    stream.launch(k, 1, 128, buf, Params(n, 1.5))
    stream.launch(k, 1, 128, buf, (n, 2.0))  # a tuple builds the Structure
    stream.synchronize()
    assert download(buf, n).tolist() == [6.0] * n


def test_templates_by_name_expression(prog, stream):
    n = 64
    for t, dtype in (("float", np.float32), ("double", np.float64)):
        k = prog.kernel(f"axpb<{t}>", signature=f"{t}*, {t}, {t}, int")
        buf = upload(np.arange(n, dtype=dtype))
        stream.launch(k, 1, n, buf, 2.0, 1.0, n)
        stream.synchronize()
        np.testing.assert_array_equal(download(buf, n, dtype), 2.0 * np.arange(n, dtype=dtype) + 1.0)


def test_launch_attributes(prog, stream):
    n = 64
    buf = rt.malloc(4 * n)
    fill = prog.kernel("fill", signature="float*, float, int")
    stream.launch(fill, 1, n, buf, 1.0, n, priority=0)
    stream.launch(fill, 1, n, buf, 4.0, n, cooperative=True)
    stream.synchronize()
    assert download(buf, n).tolist() == [4.0] * n
    with pytest.raises(errors.InvalidValue):
        stream.launch(fill, 1, n, buf, 1.0, n, priority="high")
    with pytest.raises((errors.InvalidValue, errors.NotSupported)):
        stream.launch(fill, 1, n, buf, 1.0, n, no_such_attribute=1)


def test_attributes_and_occupancy_agree_with_cuda_bindings(prog):
    driver = pytest.importorskip("cuda.bindings.driver")
    k = prog.kernel("saxpy")
    attrs = k.attributes()
    assert attrs.max_threads_per_block > 0 and attrs.num_regs > 0
    handle = driver.CUkernel(int(k))
    err, dev = driver.cuCtxGetDevice()
    assert err == driver.CUresult.CUDA_SUCCESS
    A = driver.CUfunction_attribute
    for name, member in (("max_threads_per_block", A.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
                         ("num_regs", A.CU_FUNC_ATTRIBUTE_NUM_REGS),
                         ("shared_size_bytes", A.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
                         ("const_size_bytes", A.CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES),
                         ("local_size_bytes", A.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES),
                         ("binary_version", A.CU_FUNC_ATTRIBUTE_BINARY_VERSION)):
        err, value = driver.cuKernelGetAttribute(member, handle, dev)
        assert err == driver.CUresult.CUDA_SUCCESS
        assert getattr(attrs, name) == value, name
    err, func = driver.cuKernelGetFunction(handle)
    assert err == driver.CUresult.CUDA_SUCCESS
    for block in (32, 128, 256, 1024):
        err, theirs = driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(func, block, 0)
        assert err == driver.CUresult.CUDA_SUCCESS
        assert k.max_active_blocks_per_multiprocessor(block) == theirs > 0
    k.set_max_dynamic_shared_memory(64 * 1024)
    assert k.attributes().max_dynamic_shared_size_bytes == 64 * 1024
    assert k.param_info == [(0, 4), (8, 8), (16, 8), (24, 4)]
    with pytest.raises(errors.InvalidValue):
        k.max_active_blocks_per_multiprocessor(0)


def test_foreign_cupy_raw_kernel(stream):
    cupy = pytest.importorskip("cupy")
    raw = cupy.RawKernel(r'''
    extern "C" __global__ void twice(float *y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] *= 2.0f;
    }''', "twice")
    raw.compile()
    n = 1000
    arr = cupy.arange(n, dtype=cupy.float32)
    k = rt.Kernel.wrap(raw, signature="float *y, int n")
    assert k.form == "function" and k.library is None
    cupy.cuda.runtime.deviceSynchronize()
    stream.launch(k, blocks(n), 256, arr, n)  # a CuPy array packs by __cuda_array_interface__
    stream.synchronize()
    np.testing.assert_array_equal(cupy.asnumpy(arr), 2 * np.arange(n, dtype=np.float32))
    # as a graph node too
    g = rt.Graph()
    node = g.add_kernel(k, blocks(n), 256, [arr, n])
    assert node.args == [arr.data.ptr, n]
    g.instantiate().launch(stream)
    stream.synchronize()
    np.testing.assert_array_equal(cupy.asnumpy(arr), 4 * np.arange(n, dtype=np.float32))
    del raw
    with pytest.raises(errors.InvalidValue):
        rt.Kernel.wrap(0)
    with pytest.raises(errors.InvalidValue):
        rt.Kernel.wrap(object())


def test_torch_tensor_argument(prog, stream):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    t = torch.zeros(128, device="cuda", dtype=torch.float32)
    torch.cuda.synchronize()
    stream.launch(prog.kernel("fill", signature="float*, float, int"), 1, 128, t, 7.0, 128)
    stream.synchronize()
    assert t.cpu().tolist() == [7.0] * 128
    with pytest.raises(errors.InvalidValue, match="CPU torch.Tensor"):
        stream.launch(prog.kernel("fill", signature="float*, float, int"), 1, 128, t.cpu(), 7.0, 128)


# ---------------------------------------------------------------- kernel nodes
def diamond(prog, n, bufs, v=1.0, s=2.0):
    """A fills a; B: b = s*a and C: c = 3*a in parallel; D: d = b + c."""
    fill = prog.kernel("fill", signature="float *y, float v, int n")
    scale = prog.kernel("scale", signature="float *out, const float *in, float s, int n")
    add2 = prog.kernel("add2", signature="float *out, const float *a, const float *b, int n")
    a, b, c, d = bufs
    g = rt.Graph()
    A = g.add_kernel(fill, blocks(n), 256, [a, v, n])
    B = A.kernel(scale, blocks(n), 256, [b, a, s, n])
    C = A.kernel(scale, blocks(n), 256, [c, a, 3.0, n])
    D = g.add_kernel(add2, blocks(n), 256, [d, b, c, n], dependencies=[B, C])
    return g, (A, B, C, D)


def test_diamond_of_four_kernel_nodes(prog, stream):
    n = 10_000
    bufs = [rt.malloc(4 * n) for _ in range(4)]
    g, (A, B, C, D) = diamond(prog, n, bufs)
    assert [nd.type for nd in g.nodes()] == [NodeType.KERNEL] * 4
    assert {nd for nd, _ in D.dependencies} == {B, C}
    assert A.args == [bufs[0].ptr, 1.0, n] and B.args == [bufs[1].ptr, bufs[0].ptr, 2.0, n]
    assert D.params["kernel"].name == "add2"
    exe = g.instantiate()
    exe.launch(stream)
    stream.synchronize()
    assert download(bufs[3], n).tolist() == [5.0] * n
    # change B in the executable graph only: b = 10*a -> d = 13
    exe.set_kernel_params(B, args=[bufs[1], bufs[0], 10.0, n])
    exe.launch(stream)
    stream.synchronize()
    assert download(bufs[3], n).tolist() == [13.0] * n
    assert B.args[2] == 2.0  # the graph's own node is unchanged
    # change A in the graph, then update the executable graph from it
    A.set_params(args=[bufs[0], 4.0, n])
    assert A.args[1] == 4.0
    assert exe.update(g) is UpdateResult.SUCCESS
    exe.launch(stream)
    stream.synchronize()
    assert download(bufs[3], n).tolist() == [20.0] * n
    # launch dims and grid through set_kernel_params
    exe.set_kernel_params(D, grid=1, block=32)
    exe.launch(stream)
    stream.synchronize()


def test_exec_update_from_another_graph_with_new_arguments(prog, stream):
    n = 4096
    bufs = [rt.malloc(4 * n) for _ in range(4)]
    g1, _ = diamond(prog, n, bufs, v=1.0, s=2.0)
    g2, _ = diamond(prog, n, bufs, v=2.0, s=5.0)
    exe = g1.instantiate()
    exe.launch(stream)
    stream.synchronize()
    assert download(bufs[3], n)[0] == 5.0
    assert exe.update(g2) is UpdateResult.SUCCESS
    exe.launch(stream)
    stream.synchronize()
    assert download(bufs[3], n).tolist() == [16.0] * n  # 5*2 + 3*2


def test_kernel_node_set_kernel_and_wrong_args(prog, stream):
    n = 256
    buf = rt.malloc(4 * n)
    fill = prog.kernel("fill", signature="float*, float, int")
    scale = prog.kernel("scale", signature="float*, const float*, float, int")
    g = rt.Graph()
    node = g.add_kernel(fill, 1, n, [buf, 1.0, n])
    with pytest.raises(errors.InvalidValue, match="takes 3 arguments"):
        g.add_kernel(fill, 1, n, [buf, 1.0])
    with pytest.raises(errors.InvalidValue):
        node.set_params(args=[buf, "x", n])
    with pytest.raises(errors.InvalidValue, match="needs its args"):
        node.set_params(kernel=scale)
    node.set_params(kernel=scale, args=[buf, buf, 3.0, n])
    assert node.params["kernel"].name == "scale" and node.args[2] == 3.0
    assert len(g.nodes()) == 1
    with pytest.raises(errors.InvalidValue):
        g.add_kernel("fill", 1, n, [buf, 1.0, n])


def test_kernel_node_attributes(prog):
    n = 64
    buf = rt.malloc(4 * n)
    fill = prog.kernel("fill", signature="float*, float, int")
    g = rt.Graph()
    a = g.add_kernel(fill, 1, n, [buf, 1.0, n], attributes={"priority": -1})
    b = g.add_kernel(fill, 1, n, [buf, 2.0, n])
    assert a.attribute("priority") == -1
    a.set_attribute("cluster_dim", (1, 1, 1))
    assert a.attribute("cluster_dim") == (1, 1, 1)
    a.copy_attributes_to(b)
    assert b.attribute("priority") == -1 and a.attribute("priority") == -1
    b.set_attribute("priority", 0)
    b.copy_attributes_to(a)  # the other way round
    assert a.attribute("priority") == 0 and a.attribute("cluster_dim") == (1, 1, 1)
    window = {"base_ptr": buf, "num_bytes": 4 * n, "hit_ratio": 0.5, "hit_prop": "persisting",
              "miss_prop": "streaming"}
    a.set_attribute("access_policy_window", window)
    assert a.attribute("access_policy_window") == dict(window, base_ptr=buf.ptr)
    with pytest.raises(errors.InvalidValue):
        a.set_attribute("access_policy_window", {"base_ptr": buf, "num_bytes": 4, "hit_prop": "sticky"})
    s = rt.Stream()
    s.launch(fill, 1, n, buf, 3.0, n, access_policy_window=window)
    s.synchronize()
    assert np.frombuffer(buf.to_bytes(4 * n), np.float32).tolist() == [3.0] * n
    with pytest.raises(errors.InvalidValue):
        a.attribute("bogus")
    with pytest.raises(errors.InvalidValue):
        a.set_attribute("priority", "x")


def test_programmatic_edge_runs(prog, stream):
    """A -> B over a programmatic edge: B waits (griddepcontrol.wait) for A's results."""
    if int(rt.current_device().info().arch.removeprefix("sm_")) < 90:
        pytest.skip("programmatic dependent launch needs sm_90")
    p = rt.Program(r'''
    extern "C" __global__ void producer(int *x, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) x[i] = i * 3;
        asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    }
    extern "C" __global__ void consumer(int *y, const int *x, int n) {
        asm volatile("griddepcontrol.wait;" ::: "memory");
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = x[i] + 1;
    }''')
    n = 1 << 16
    x, y = rt.malloc(4 * n), rt.malloc(4 * n)
    g = rt.Graph()
    a = g.add_kernel(p.kernel("producer", signature="int*, int"), blocks(n), 256, [x, n])
    edge = EdgeData(from_port=PORT_PROGRAMMATIC, type=DependencyType.PROGRAMMATIC)
    b = a.kernel(p.kernel("consumer", signature="int*, const int*, int"), blocks(n), 256, [y, x, n],
                 edge=edge)
    assert g.edges() == [(a, b, edge)]
    exe = g.instantiate()
    for _ in range(3):
        exe.launch(stream)
    stream.synchronize()
    assert (download(y, n, np.int32) == np.arange(n, dtype=np.int32) * 3 + 1).all()
    # and on a stream: programmatic stream serialization
    stream.launch(p.kernel("producer", signature="int*, int"), blocks(n), 256, x, n)
    stream.launch(p.kernel("consumer", signature="int*, const int*, int"), blocks(n), 256, y, x, n,
                  programmatic_stream_serialization=True)
    stream.synchronize()
    assert (download(y, n, np.int32) == np.arange(n, dtype=np.int32) * 3 + 1).all()


def test_capture_keeps_argument_arrays_alive(prog, stream):
    n = 1024
    fill = prog.kernel("fill", signature="float*, float, int")
    out, tmp = rt.malloc(4 * n), rt.malloc(4 * n)
    with stream.capture() as cap:
        stream.launch(fill, blocks(n), 256, tmp, 9.0, n)
        stream.memcpy(out, tmp, 4 * n)
    del tmp  # the graph keeps it
    exe = cap.graph.instantiate()
    exe.launch(stream)
    stream.synchronize()
    assert download(out, n).tolist() == [9.0] * n


def test_captured_launches_of_a_hot_kernel_keep_buffers_and_library(stream):
    # Launched before the capture, the kernel's launches take its hot path in the capture too
    # (C in compiled mode): the graph keeps each buffer once and the kernel's library, the only
    # references left to them here.
    import gc
    import weakref

    n = 1024
    prog = rt.Program(SOURCE, name="hot_capture.cu")
    fill = prog.kernel("fill", signature="float*, float, int")
    out, tmp = rt.malloc(4 * n), rt.malloc(4 * n)
    for v in (1.0, 2.0):
        stream.launch(fill, blocks(n), 256, out, v, n)
    assert fill._hot or rt.backend().vendor == "sim"  # (the simulator's launches have no hot path)
    library = weakref.ref(fill._owner)
    with stream.capture() as cap:
        for v in (7.0, 8.0, 9.0):
            stream.launch(fill, blocks(n), 256, tmp, v, n)
        fill.launch(stream, blocks(n), 256, tmp, 10.0, n)
        stream.memcpy(out, tmp, 4 * n)
    graph = cap.graph
    assert graph._keep.count(tmp) == 1 and graph._keep.count(fill._owner) == 1
    del tmp, fill, prog
    gc.collect()
    assert library() is not None  # the graph's
    exe = graph.instantiate()
    exe.launch(stream)
    stream.synchronize()
    assert download(out, n).tolist() == [10.0] * n
    exe.close()
    graph.close()
    del exe, graph, cap
    gc.collect()
    assert library() is None  # nothing else kept it


@pytest.mark.parametrize("how", ["close", "destroy"])
def test_a_library_closed_while_graphs_run_its_kernels_stays_loaded_until_they_go(stream, how):
    # Found by the generated API test on an H100: lib.destroy() unloaded the library under a
    # graph's kernel node, and reading the node back (g.to_networkx()) crashed CUDA 12.9 and 13.0
    # inside cudaGraphKernelNodeGetParams.  Now the library closes for the caller at once and
    # is unloaded when the graph, the executable graph and the capture that use it are gone.
    import gc
    import weakref

    if rt.backend().vendor == "sim":
        from pygraphrt import sim

        sim.undefined_calls(clear=True)
    n = 256
    lib = rt.Library(rt.Program(SOURCE, name="closed_library.cu").image)
    fill = lib.kernel("fill", signature="float*, float, int")
    out, other = rt.malloc(4 * n), rt.malloc(4 * n)
    g = rt.Graph()
    node = g.add_kernel(fill, 1, n, [out, 5.0, n])
    exe = g.instantiate()
    cap_stream = rt.Stream()
    cap = cap_stream.begin_capture()
    cap_stream.launch(fill, 1, n, other, 6.0, n)
    getattr(lib, how)()
    assert not lib.is_valid and not fill.is_valid
    with pytest.raises(errors.InvalidResourceHandle):
        lib.kernel("fill")
    with pytest.raises(errors.InvalidResourceHandle):
        g.add_kernel(fill, 1, n, [out, 1.0, n])
    p = node.params  # read back (this crashed): the arguments are still decoded by the signature
    assert tuple(p["grid"]) == (1, 1, 1) and tuple(p["block"]) == (n, 1, 1) and p["args"][1:] == [5.0, n]
    assert len(g.to_networkx()) == 1
    exe.launch(stream)
    captured = cap.end()
    captured_exe = captured.instantiate()
    captured_exe.launch(stream)
    stream.synchronize()
    assert download(out, n).tolist() == [5.0] * n and download(other, n).tolist() == [6.0] * n
    library = weakref.ref(lib)
    del lib, fill, node, p, g, exe, cap, captured, captured_exe
    cap_stream.close()
    gc.collect()
    assert library() is None  # unloaded with the last of them (its finalizer)
    if rt.backend().vendor == "sim":
        assert not sim.undefined_calls()


def test_a_library_nothing_runs_is_unloaded_at_close(stream):
    n = 64
    lib = rt.Library(rt.Program(SOURCE, name="closed_library.cu").image)
    fill = lib.kernel("fill", signature="float*, float, int")
    out = rt.malloc(4 * n)
    stream.launch(fill, 1, n, out, 2.0, n)  # launched work is not a graph's: it does not count
    g = rt.Graph()
    g.add_kernel(fill, 1, n, [out, 1.0, n])
    g.close()  # a closed graph does not count either
    handle = int(lib)
    lib.close()
    stream.synchronize()
    assert download(out, n).tolist() == [2.0] * n
    if rt.backend().vendor == "sim":
        from pygraphrt import sim

        assert handle not in sim.runtime().libraries


# ---------------------------------------------------------------- signature round-trip
SCALARS = [("signed char", ctypes.c_int8, st.integers(-128, 127)),
           ("unsigned char", ctypes.c_uint8, st.integers(0, 255)),
           ("short", ctypes.c_int16, st.integers(-(1 << 15), (1 << 15) - 1)),
           ("unsigned short", ctypes.c_uint16, st.integers(0, (1 << 16) - 1)),
           ("int", ctypes.c_int32, st.integers(-(1 << 31), (1 << 31) - 1)),
           ("unsigned int", ctypes.c_uint32, st.integers(0, (1 << 32) - 1)),
           ("long long", ctypes.c_int64, st.integers(-(1 << 63), (1 << 63) - 1)),
           ("unsigned long", ctypes.c_uint64, st.integers(0, (1 << 64) - 1)),
           ("float", ctypes.c_float, st.floats(width=32, allow_nan=False)),
           ("double", ctypes.c_double, st.floats(allow_nan=False)),
           ("void*", None, st.integers(0, (1 << 64) - 1))]


@st.composite
def signatures(draw):
    count = draw(st.integers(0, 8))
    params, values, structs = [], [], []
    for i in range(count):
        if draw(st.integers(0, 5)) == 0:  # a small struct of scalars
            fields = draw(st.lists(st.sampled_from(SCALARS[:-1]), min_size=1, max_size=3))
            cls = type(f"S{i}", (ctypes.Structure,),
                       {"_fields_": [(f"f{j}", f[1]) for j, f in enumerate(fields)]})
            vals = [draw(f[2]) for f in fields]
            c_decl = f"struct S{i} {{ " + " ".join(f"{f[0]} f{j};" for j, f in enumerate(fields)) + " };"
            structs.append((c_decl, cls))
            params.append((f"S{i}", cls))
            values.append(cls(*vals))
        else:
            name, _, strat = draw(st.sampled_from(SCALARS))
            params.append((name, None))
            values.append(draw(strat))
    return params, values, structs


_compiled: dict[str, rt.Kernel] = {}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(signatures())
def test_random_signatures_round_trip_through_kernel_node(case):
    params, values, structs = case
    decl = ", ".join(f"{t} p{i}" for i, (t, _) in enumerate(params)) or "void"
    src = "\n".join(d for d, _ in structs) + f'\nextern "C" __global__ void k({decl}) {{}}\n'
    types = {f"S{i}": cls for i, (_, cls) in enumerate(params) if cls is not None}
    lib = _compiled.get(src)
    if lib is None:
        lib = _compiled[src] = rt.Program(src).load()
    kernel = lib.kernel("k", signature=rt.kernels.parse_signature(decl if params else "", types=types))
    g = rt.Graph()
    node = g.add_kernel(kernel, 1, 1, values)
    back = node.args
    assert len(back) == len(values)
    for (t, cls), v, b in zip(params, values, back):
        if cls is not None:
            assert bytes(b) == bytes(v)
        elif t == "float":
            assert b == ctypes.c_float(v).value
        else:
            assert b == v
    g.instantiate().launch(rt.Stream.legacy_default())  # a node with these arguments runs
    rt.current_device().synchronize()


def test_many_nodes_of_one_kernel_values_reach_each_node(prog, stream):
    """After a kernel's first node, compiled mode adds its nodes in C (graph._hot): a chain of
    nodes of one kernel, each with its own scalar, pointers (buffers and ints), dims given
    as ints, tuples and lists, computes what the same launches on a stream compute."""
    n = 1000
    saxpy = prog.kernel("saxpy", "float a, const float *x, float *y, int n")
    x = upload(np.linspace(-1, 1, n, dtype=np.float32))
    y_graph, y_stream = upload(np.arange(n, dtype=np.float32)), upload(np.arange(n, dtype=np.float32))
    g = rt.Graph()
    prev = None
    scalars = [0.5 + (i % 5) * 0.25 for i in range(60)]
    for i, a in enumerate(scalars):
        xp = x if i % 2 else x.ptr  # a buffer, or its address as an int
        yp = y_graph.ptr if i % 4 == 1 else y_graph
        grid = [blocks(n, 128)] if i % 3 == 0 else (blocks(n, 128), 1) if i % 3 == 1 else blocks(n, 128)
        prev = g.add_kernel(saxpy, grid, (128,), (a, xp, yp, n), dependencies=[prev] if prev else None)
        saxpy.launch(stream, blocks(n, 128), 128, a, x, y_stream, n)
    assert len(g.nodes()) == len(scalars)
    assert prev.args == [scalars[-1], x.ptr, y_graph.ptr, n]
    assert tuple(prev.params["grid"]) == (blocks(n, 128), 1, 1)
    backend = lowlevel.backend_object()
    if backend.ffi_mode.startswith("api") and "Graph.add_kernel" in backend.memo.get("_hot_methods", ()):
        assert saxpy._node_layout, "the kernel's later nodes were not added in C"
    exe = g.instantiate()
    exe.launch(stream)
    stream.synchronize()
    assert np.array_equal(download(y_graph, n), download(y_stream, n))
    # the values were copied when each node was made: a second launch applies the same steps again
    exe.launch(stream)
    for a in scalars:
        saxpy.launch(stream, blocks(n, 128), 128, a, x, y_stream, n)
    stream.synchronize()
    assert np.array_equal(download(y_graph, n), download(y_stream, n))
