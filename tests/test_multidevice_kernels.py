"""Kernels and the compute graph over several devices (issue 40, items 2, 4, 5 and the
kernel-argument check): ``Program(device=)``, code a device cannot run refused before the launch,
a library launched on every device (loaded once more per device where the runtime needs it), the
device check of kernel arguments on every launch path, ``node.device`` for nodes made without
``device=``, and ``ComputeGraph.node(device=)``.

The CPU tests run on the simulator with 2 devices (``tests.backends.simulator``) and, for the
compiled launch paths, on the do-nothing libcudart stub of the benchmarks in a child process.
The tests marked ``gpu`` run on a machine with 2 GPUs (they skip saying why with fewer), and on
the 2-device simulator with Python twins of their kernels.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

import pygraphrt as rt
from pygraphrt import errors, multidevice, sim
from pygraphrt._vendors import CudaVendor, HipVendor
from pygraphrt.compute import ComputeGraph, VarManager

from .backends import simulator
from .test_launch_hot import stub_cudart  # noqa: F401  (a fixture: benchmarks/stub_cudart.c, built)
from .conftest import require_devices

REPO = Path(__file__).resolve().parent.parent

SOURCE = r"""
extern "C" __global__ void mdk_fill(int *dst, int value, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = value + i;
}
extern "C" __global__ void mdk_add(int *dst, const int *a, const int *b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = a[i] + b[i];
}
"""
FILL, ADD = "int *dst, int value, int n", "int *dst, const int *a, const int *b, int n"


def _n(ctx: Any, n: int) -> int:
    return max(0, min(int(n), ctx.grid[0] * ctx.block[0]))


@sim.register_kernel("mdk_fill")
def _fill(ctx: Any, dst: int, value: int, n: int) -> None:
    k = _n(ctx, n)
    ctx.array(dst, "i4", k)[:] = value + np.arange(k, dtype=np.int32)


@sim.register_kernel("mdk_add")
def _add(ctx: Any, dst: int, a: int, b: int, n: int) -> None:
    k = _n(ctx, n)
    ctx.array(dst, "i4", k)[:] = ctx.array(a, "i4", k) + ctx.array(b, "i4", k)


def ints(buf: Any, n: int) -> np.ndarray:
    return np.frombuffer(buf.to_bytes(4 * n), np.int32)


@pytest.fixture
def sim2() -> Iterator[Any]:
    """A 2-device simulator on which no second device has been used yet (the per-backend record
    of several devices in use is reset before and after: the simulator is shared by the tests)."""
    with simulator(2) as backend:
        multidevice._reset_several(backend)
        try:
            yield backend
        finally:
            multidevice._reset_several(backend)


@pytest.fixture
def sim1() -> Iterator[Any]:
    with simulator(1) as backend:
        yield backend


@pytest.fixture(params=[pytest.param("gpu", marks=pytest.mark.gpu), "sim"])
def two_devices(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The GPU with 2 devices (skips with fewer; fails under PYGRAPHRT_REQUIRE_GPU=1) or a
    2-device simulator."""
    if request.param == "sim":
        with simulator(2) as backend:
            yield backend
        return
    from pygraphrt import _runtime

    backend = _runtime.active()
    require_devices(2, backend)
    yield backend


# ============================================================================ architecture rules
@pytest.mark.parametrize("code, kind, device, runs", [
    ("sm_80", "cubin", "sm_86", True),     # the same major, a newer minor
    ("sm_86", "cubin", "sm_80", False),    # an older minor
    ("sm_80", "cubin", "sm_90", False),    # another major: cubins do not run forward
    ("sm_90a", "cubin", "sm_90", True),
    ("sm_90a", "cubin", "sm_91", False),   # arch-specific: that very compute capability only
    ("compute_80", "ptx", "sm_90", True),  # PTX is JIT-compiled forward
    ("compute_90", "ptx", "sm_80", False),
])
def test_cuda_compatibility_rules(code, kind, device, runs):
    why = CudaVendor.code_runs_on(None, code, kind, device)  # type: ignore[arg-type]
    assert (why is None) == runs, why
    if not runs:
        assert code in why and device in why


def test_hip_code_objects_run_on_their_processor_only():
    assert HipVendor.code_runs_on(None, "gfx942", "code_object", "gfx942:sramecc+:xnack-") is None  # type: ignore[arg-type]
    why = HipVendor.code_runs_on(None, "gfx90a", "code_object", "gfx942:sramecc+:xnack-")  # type: ignore[arg-type]
    assert why is not None and "gfx90a" in why and "gfx942" in why
    assert HipVendor.library_per_device and not CudaVendor.library_per_device


# ============================================================================ Program(device=) (sim)
@pytest.fixture
def device1_is_sm80(sim2: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Device 1 of the simulator reports compute capability 8.0 (its devices are all sm_90
    otherwise): code compiled for one cannot run on the other."""
    ops = sim2.ops
    real = ops.device_name_and_arch

    def name_and_arch(device: int) -> tuple[str, str, int]:
        name, arch, mem = real(device)
        return (name, "sm_80" if device == 1 else arch, mem)

    monkeypatch.setattr(ops, "device_name_and_arch", name_and_arch)
    return sim2


def test_program_compiles_for_the_given_devices_architecture(device1_is_sm80):
    p0, p1 = rt.Program(SOURCE, name="p0.cu"), rt.Program(SOURCE, name="p1.cu", device=1)
    assert (p0.device, p0.arch) == (0, "sm_90") and "--gpu-architecture=sm_90" in p0.options
    assert (p1.device, p1.arch) == (1, "sm_80") and "--gpu-architecture=sm_80" in p1.options
    assert rt.current_device() == rt.Device(0)
    assert rt.Program(SOURCE, device=rt.Device(1)).arch == "sm_80"
    with pytest.raises(errors.InvalidDevice) as e:
        rt.Program(SOURCE, device=2)
    assert e.value.api == "Program" and "reports 2 device(s)" in str(e.value)


def test_code_a_device_cannot_run_is_refused_before_the_launch_on_every_path(device1_is_sm80):
    backend = device1_is_sm80
    k1 = rt.Program(SOURCE, name="for_device_1.cu", device=1).kernel("mdk_fill", signature=FILL)
    s0 = rt.Stream()
    buf0 = rt.malloc(64)
    with rt.Device(1):
        s1, buf1 = rt.Stream(), rt.malloc(64)
    s1.launch(k1, 1, 16, buf1, 7, 16)  # on its own device: runs
    s1.synchronize()
    assert list(ints(buf1, 16)) == list(range(7, 23))
    rt.Device(0).enable_peer_access(1)
    try:
        g = rt.Graph()
        for call in (lambda: s0.launch(k1, 1, 16, buf0, 1, 16),
                     lambda: k1.launch(s0, 1, 16, buf0, 1, 16),
                     lambda: g.add_kernel(k1, 1, 16, (buf0, 1, 16)),
                     lambda: g.add_kernel(k1, 1, 16, (buf0, 1, 16), device=0)):
            with pytest.raises(errors.NotSupported) as e:
                call()
            assert "device 0: cubin compiled for sm_80 cannot run on a sm_90 device" in str(e.value)
            assert "Program(..., device=0)" in str(e.value)
        assert len(g) == 0
        assert g.add_kernel(k1, 1, 16, (buf1, 2, 16), device=1).device == 1
    finally:
        rt.Device(0).disable_peer_access(1)
    assert backend.several


def test_a_one_device_program_checks_a_kernels_architecture_at_its_first_launch(sim1):
    k = rt.Program(SOURCE, name="sm100.cu", options=["--gpu-architecture=sm_100"]).kernel("mdk_fill", signature=FILL)
    s, buf = rt.Stream(), rt.malloc(64)
    with pytest.raises(errors.NotSupported) as e:
        s.launch(k, 1, 16, buf, 0, 16)
    assert "sm_100 cannot run on a sm_90 device" in str(e.value)
    with pytest.raises(errors.NotSupported):
        rt.Graph().add_kernel(k, 1, 16, (buf, 0, 16))
    ptx = rt.Program(SOURCE, name="ptx.cu", options=["--gpu-architecture=compute_80"])
    assert ptx.image_kind == "ptx"
    ptx.kernel("mdk_fill", signature=FILL).launch(s, 1, 16, buf, 3, 16)  # PTX runs forward
    s.synchronize()
    assert ints(buf, 1)[0] == 3
    assert not sim1.several


# ============================================================================ the argument check (sim)
def test_kernel_argument_of_a_device_without_peer_access_is_refused_on_every_path(sim2):
    k = rt.Program(SOURCE, name="args.cu").kernel("mdk_fill", signature=FILL)
    s0, buf0 = rt.Stream(), rt.malloc(64)
    s0.launch(k, 1, 16, buf0, 0, 16)  # the kernel's first launch (its hot path is made after it)
    s0.launch(k, 1, 16, buf0, 0, 16)
    assert not sim2.several  # (the simulator has no hot launch: the stub test below covers it)
    with rt.Device(1):
        s1, buf1 = rt.Stream(), rt.malloc(64)
    assert sim2.several  # a second device in use from here on
    g = rt.Graph()
    paths = {"Stream.launch": lambda: s0.launch(k, 1, 16, buf1, 0, 16),
             "Kernel.launch": lambda: k.launch(s0, 1, 16, buf1, 0, 16),
             "Kernel.launch (attributes)": lambda: k.launch(s0, 1, 16, buf1, 0, 16, priority=0),
             "Graph.add_kernel": lambda: g.add_kernel(k, 1, 16, (buf1, 0, 16)),
             "Graph.add_kernel (device=)": lambda: g.add_kernel(k, 1, 16, (buf1, 0, 16), device=0)}
    for path, call in paths.items():
        with pytest.raises(errors.InvalidValue) as e:
            call()
        assert "argument 0" in str(e.value) and "device 1's memory and device 0 has no peer access" in str(e.value), path
    assert len(g) == 0
    s1.launch(k, 1, 16, buf1, 5, 16)  # on the buffer's own device
    with rt.Device(1):
        n1 = g.add_kernel(k, 1, 16, (buf1, 6, 16))
    assert n1.device == 1
    rt.Device(0).enable_peer_access(1)
    try:
        for path, call in paths.items():
            call()
    finally:
        rt.Device(0).disable_peer_access(1)
    s0.synchronize()
    s1.synchronize()


def _on_stub(stub_cudart: Path, tmp_path: Path, mode: str, script: str) -> list[str]:
    """The lines ``script`` prints, run on the do-nothing runtime (benchmarks/stub_cudart.c) in
    a fresh interpreter: ABI mode (``mode`` "0") or the compiled path ("1", required to load;
    skipped where it is not built)."""
    env = dict(os.environ, PYGRAPHRT_BACKEND="cuda", PYGRAPHRT_CUDART=str(stub_cudart), PYGRAPHRT_FAST=mode,
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    if mode == "1":
        from pygraphrt import _fast

        if _fast.extension_path("cuda13") is None:
            pytest.skip("the fast path is not built")
        env["PYGRAPHRT_REQUIRE_FAST"] = "1"
    path = tmp_path / "run.py"
    path.write_text(script)
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, cwd=str(REPO))
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


#: What both kernel scripts below start with: a wrapped kernel of the stub, a stream of device 0,
#: a buffer of it and one standing for device 1's memory (the stub has one device).
STUB_KERNEL = """
    b = _runtime.active()
    k = rt.Kernel.wrap(0x5000, signature="float *x", kind="kernel", name="tiny")
    s, buf, other = rt.Stream(), rt.malloc(4), rt.malloc(4)
    s._device = 0
    other.device = 1
    calls = []
"""

STUB_SCRIPT = textwrap.dedent("""
    import sys
    import pygraphrt as rt
    from pygraphrt import _runtime, errors, multidevice
    from pygraphrt.graph import _kernel as kernel_nodes
    from pygraphrt.kernels import _library

""" + STUB_KERNEL + """
    python_launch, python_add = _library.Kernel._launch, kernel_nodes.add
    _library.Kernel._launch = lambda self, *a: (calls.append("launch"), python_launch(self, *a))[1]
    kernel_nodes.add = lambda *a: (calls.append("add"), python_add(*a))[1]
    g = rt.Graph()
    for _ in range(3):  # one device in use: not checked
        s.launch(k, 1, 32, other); k.launch(s, 1, 32, other); g.add_kernel(k, 1, 32, (other,))
    print(calls.count("launch"), calls.count("add"))
    calls.clear()
    multidevice.now_several(b)
    for call in (lambda: s.launch(k, 1, 32, other), lambda: k.launch(s, 1, 32, other),
                 lambda: g.add_kernel(k, 1, 32, (other,))):
        try:
            call()
            print("not refused")
        except errors.InvalidValue as e:
            print("refused", "device 1's memory" in str(e))
    s.launch(k, 1, 32, buf); g.add_kernel(k, 1, 32, (buf,))
    print(calls.count("launch"), calls.count("add"), len(g._table()))
    multidevice._reset_several(b)
    calls.clear()
    s.launch(k, 1, 32, other); k.launch(s, 1, 32, other); g.add_kernel(k, 1, 32, (other,))
    print(calls.count("launch"), calls.count("add"))
""")


@pytest.mark.headers  # (the stub is built from the pinned headers; a failed build fails the test)
@pytest.mark.parametrize("mode, first, several, reset", [("0", "1 1", "2 0 4", "0 0"), ("1", "1 1", "2 0 4", "0 0")])
def test_compiled_launch_paths_hand_calls_to_python_once_several_devices_are_in_use(stub_cudart, tmp_path, mode,
                                                                                     first, several, reset):
    """With one device in use the C Stream.launch, Kernel.launch and Graph.add_kernel run (the
    Python methods see only a kernel's first launch and node); with several, a call whose
    argument is another device's memory reaches the Python methods, which refuse it, while the
    valid launch and node stay in C; back to the unchecked C when the record is reset.  ABI
    mode: the same counts -- a kernel's later launches and nodes go from the methods straight
    to its generated Python launch and node adder, as they go to C, with the same checks."""
    # (Python launches, Python kernel-node adds) per stage; the refused calls reach _launch, and
    # Graph.add_kernel refuses before its adder; then one valid launch and node
    assert _on_stub(stub_cudart, tmp_path, mode, STUB_SCRIPT)[:6] == [
        first, "refused True", "refused True", "refused True", several, reset]


SEVERAL_HOT_SCRIPT = textwrap.dedent("""
    import pygraphrt as rt
    from pygraphrt import _runtime, errors, multidevice
    from pygraphrt.graph import _graph, _kernel as kernel_nodes
    from pygraphrt.kernels import _library

""" + STUB_KERNEL + """
    def counted(name, fn):
        return lambda *a: (calls.append(name), fn(*a))[1]
    multidevice.check_launch = counted("launch check", multidevice.check_launch)
    _graph.check_launch = counted("node check", _graph.check_launch)
    kernel_nodes.add = counted("python adder", kernel_nodes.add)
    multidevice.stream_device = counted("stream device asked", lambda backend, handle: 0)
    g = rt.Graph()
    s.launch(k, 1, 32, buf); g.add_kernel(k, 1, 32, (buf,))  # first launch and node: Python (one device)
    multidevice.now_several(b)
    made = []
    def step(label, call):
        calls.clear()
        try:
            out = call()
            if out is not None:
                made.append(out)
        except errors.InvalidValue as e:
            out = "refused: " + ("device 1's memory" in str(e) and "other device" or str(e))
        print(label, "|", " ".join(calls) or "hot", "|", getattr(out, "device", out))
    step("launch", lambda: s.launch(k, 1, 32, buf))
    step("kernel.launch", lambda: k.launch(s, 1, 32, buf))
    step("node", lambda: g.add_kernel(k, 1, 32, (buf,)))
    step("node, args a list", lambda: g.add_kernel(k, 1, 32, [buf]))
    step("node, int pointer", lambda: g.add_kernel(k, 1, 32, (0x1000,)))
    step("launch other", lambda: s.launch(k, 1, 32, other))
    step("node other", lambda: g.add_kernel(k, 1, 32, [other]))
    k._on_devices.clear()  # not yet checked on this device
    step("launch unchecked", lambda: s.launch(k, 1, 32, buf))
    step("launch again", lambda: s.launch(k, 1, 32, buf))
    k._on_devices.clear()
    step("node unchecked", lambda: g.add_kernel(k, 1, 32, (buf,)))
    step("node again", lambda: g.add_kernel(k, 1, 32, (buf,)))
    s._device = None  # a stream whose device pygraphrt has not asked
    step("launch, stream device unknown", lambda: s.launch(k, 1, 32, buf))
    step("launch, stream device known", lambda: s.launch(k, 1, 32, buf))
    print("recorded", [g._node_devices.get(n._handle, "none") for n in made])
    multidevice._reset_several(b)
    step("launch other, one device", lambda: s.launch(k, 1, 32, other))
    step("node other, one device", lambda: g.add_kernel(k, 1, 32, (other,)))
""")


@pytest.mark.headers  # (the stub is built from the pinned headers; a failed build fails the test)
@pytest.mark.parametrize("mode", ["0", "1"])
def test_with_several_devices_kernel_launches_and_adds_stay_hot_where_the_checks_pass(stub_cudart, tmp_path, mode):
    """Several devices in use: Stream.launch, Kernel.launch and Graph.add_kernel stay on their hot
    paths (compiled: the C methods; ABI: the kernel's generated launch and node adder) where the
    kernel runs on the stream's (the current) device as itself -- checked there once by the
    general path -- and no pygraphrt buffer among the arguments is another device's memory; each
    node's device is recorded.  Another device's memory, a kernel not yet checked on the device
    and a stream whose device is unknown take the general path (which refuses, checks, or asks
    once).  Back to the unchecked hot paths once one device is in use."""
    assert _on_stub(stub_cudart, tmp_path, mode, SEVERAL_HOT_SCRIPT) == [
        "launch | hot | None",
        "kernel.launch | hot | None",
        "node | hot | 0",
        "node, args a list | hot | 0",
        "node, int pointer | hot | 0",
        "launch other | launch check | refused: other device",
        "node other | node check | refused: other device",
        "launch unchecked | launch check | None",
        "launch again | hot | None",
        "node unchecked | node check python adder | 0",
        "node again | hot | 0",
        "launch, stream device unknown | stream device asked launch check | None",
        "launch, stream device known | hot | None",
        "recorded [0, 0, 0, 0, 0]",
        "launch other, one device | hot | None",
        "node other, one device | hot | 0",
    ]


# ============================================================================ node.device (sim)
def test_node_device_without_the_keyword(sim2):
    buf0 = rt.malloc(64)
    g = rt.Graph()
    before = g.add_memset(buf0, 1, 64)  # one device in use so far: device 0's
    assert before.device == 0 and not sim2.several
    with rt.Device(1):  # a second device: from here on each node's device is recorded
        buf1 = rt.malloc(64)
        made = [g.add_memset(buf1, 2, 64), g.add_empty(), g.add_memcpy(buf1, buf0, 64)]
        bulk = g.add_nodes([("empty", {}), ("empty", {})])
    after = g.add_empty(dependencies=[made[1]])
    assert sim2.several
    assert [n.device for n in made] == [1, 1, 1] and [n.device for n in bulk] == [1, 1]
    assert (before.device, after.device) == (0, 0)
    assert rt.current_device() == rt.Device(0)


def test_node_device_of_a_one_device_backend_costs_no_runtime_call(sim1):
    buf = rt.malloc(64)
    g = rt.Graph()
    n = g.add_memset(buf, 0, 64)
    assert n.device == 0 and not sim1.several


# ============================================================================ per-device loading (sim as HIP)
def test_a_library_is_loaded_once_more_on_each_device_where_the_runtime_needs_it(sim2, monkeypatch):
    """Where the runtime's libraries belong to the device they were loaded on (HIP's modules:
    the simulator told so here), a kernel launched on another device runs its library loaded
    there, loaded once; closing the library closes the copies."""
    monkeypatch.setattr(sim2.ops, "library_per_device", True, raising=False)
    prog = rt.Program(SOURCE, name="per_device.cu")
    k = prog.kernel("mdk_fill", signature=FILL)
    lib = k.library
    assert lib is not None and lib.device == 0
    with rt.Device(1):
        s1, buf1 = rt.Stream(), rt.malloc(64)
    s1.launch(k, 1, 16, buf1, 10, 16)
    s1.launch(k, 1, 16, buf1, 20, 16)
    s1.synchronize()
    assert list(ints(buf1, 16)) == list(range(20, 36))
    k1 = k.for_device(1)
    assert k1 is not k and k1.library is not lib and k1.library.device == 1
    assert k.for_device(1) is k1 and lib._copies == {1: k1.library}  # loaded once
    assert k.for_device(0) is k
    lib.close()
    assert not k1.library.is_valid


def test_cuda_libraries_run_on_every_device_without_another_load(sim2):
    k = rt.Program(SOURCE, name="shared.cu").kernel("mdk_fill", signature=FILL)
    assert k.for_device(1) is k and k.library._copies == {}


# ============================================================================ the compute graph (sim)
def test_compute_graph_nodes_on_devices(sim2):
    n = 16
    buf0, out = rt.malloc(4 * n), rt.malloc(4 * n)
    with rt.Device(1):
        buf1 = rt.malloc(4 * n)
    vars = VarManager()
    a, b, c = vars.buffer("a", buf0), vars.buffer("b", buf1), vars.buffer("c", out)
    seen: dict[str, set[int]] = {}
    g = ComputeGraph(vars, "two devices")

    @g.node("fill_b", device=1)
    def _(ctx):
        seen.setdefault("fill_b", set()).add(rt.current_device().ordinal)
        ctx.memset(b.write(), 3)

    @g.node("fill_a")
    def _(ctx):
        seen.setdefault("fill_a", set()).add(rt.current_device().ordinal)
        ctx.memset(a.write(), 4)

    @g.node("copy", device=0)
    def _(ctx):
        ctx.memcpy(c.write(), b.read())

    assert [(x.name, y.name) for x, y, _ in g.topology()] == [("fill_b", "copy")]
    s = rt.Stream()
    g.launch(s)
    s.synchronize()
    assert out.to_bytes() == bytes([3]) * (4 * n) and buf0.to_bytes() == bytes([4]) * (4 * n)
    assert [gn.device for gn in g["fill_b"].graph_nodes] == [1]
    assert [gn.device for gn in g["copy"].graph_nodes] == [0]
    assert seen == {"fill_b": {1}, "fill_a": {0}}  # every phase ran fill_b with device 1 current
    assert rt.current_device() == rt.Device(0)
    out.copy_from(bytes(4 * n))
    buf1.copy_from(bytes(4 * n))
    g.launch(s, single_stream=True)  # fill_b's work on a stream of device 1, ordered by events
    s.synchronize()
    assert out.to_bytes() == bytes([3]) * (4 * n)
    assert list(g._device_streams) == [1] and g._device_streams[1][0].device == 1
    assert "device 1" in g.to_dot() and repr(g["fill_b"]).endswith("on device 1>")
    with pytest.raises(errors.InvalidDevice):
        g.node("nowhere", lambda ctx: None, device=2)
    nx = pytest.importorskip("networkx")
    d = g.to_networkx()
    assert isinstance(d, nx.DiGraph) and d.nodes["fill_b"]["device"] == 1 and d.nodes["fill_a"]["device"] is None


# ============================================================================ 2 devices: GPU and sim
@pytest.mark.devices(2)
class TestTwoDevices:
    def test_program_for_each_device(self, two_devices):
        for d in (0, 1):
            p = rt.Program(SOURCE, name=f"dev{d}.cu", device=d)
            # that device's architecture (PTX for an older one where NVRTC predates the device)
            assert p.device == d and (p.arch == rt.Device(d).properties().arch or p.image_kind == "ptx"), p
            k = p.kernel("mdk_fill", signature=FILL)
            with rt.Device(d):
                s, buf = rt.Stream(), rt.malloc(64)
            s.launch(k, 1, 16, buf, 100 * d, 16)
            s.synchronize()
            assert list(ints(buf, 16)) == [100 * d + i for i in range(16)]

    def test_one_library_launched_on_both_devices(self, two_devices):
        prog = rt.Program(SOURCE, name="both.cu")
        fill, add = prog.kernel("mdk_fill", signature=FILL), prog.kernel("mdk_add", signature=ADD)
        n = 256
        s0, a0, b0, out0 = rt.Stream(), rt.malloc(4 * n), rt.malloc(4 * n), rt.malloc(4 * n)
        with rt.Device(1):
            s1, a1, b1, out1 = rt.Stream(), rt.malloc(4 * n), rt.malloc(4 * n), rt.malloc(4 * n)
        for s, a, b, out, base in ((s0, a0, b0, out0, 1), (s1, a1, b1, out1, 1000)):
            s.launch(fill, 1, n, a, base, n)
            fill.launch(s, 1, n, b, 2 * base, n)
            s.launch(add, 1, n, out, a, b, n)
        s0.synchronize()
        s1.synchronize()
        assert list(ints(out0, n)) == [3 + 2 * i for i in range(n)]
        assert list(ints(out1, n)) == [3000 + 2 * i for i in range(n)]
        g = rt.Graph()  # the same kernels as nodes on both devices, one graph
        f0 = g.add_kernel(fill, 1, n, (a0, 7, n), device=0)
        f1 = g.add_kernel(fill, 1, n, (a1, 9, n), device=1)
        assert (f0.device, f1.device) == (0, 1)
        g.instantiate().launch(s0)
        s0.synchronize()
        assert ints(a0, 1)[0] == 7 and ints(a1, 1)[0] == 9


DEVICE_KEYWORD_SCRIPT = textwrap.dedent("""
    import pygraphrt as rt
    from pygraphrt import errors
    from pygraphrt.graph import _graph

    k = rt.Kernel.wrap(0x5000, signature="float *x", kind="kernel", name="tiny")
    g, buf = rt.Graph(), rt.malloc(64)
    try:  # a first placement by Python: the device count asked, multidevice.placed bound
        g.add_memset(buf, 1, 64, device=1)
    except errors.InvalidDevice:
        pass
    g.add_memset(buf, 1, 64, device=0)
    g.add_kernel(k, 1, 32, (buf,))      # a kernel's first node: Python
    placed = []
    python_placed = _graph._placed
    _graph._placed = lambda *a: (placed.append(1), python_placed(*a))[1]
    for _ in range(3):
        g.add_memset(buf, 1, 64, device=0)
        g.add_kernel(k, 1, 32, (buf,), device=0)
    print(len(placed), len(g._table()))
    for bad in (1, -1, "0"):
        try:
            g.add_memset(buf, 1, 64, device=bad)
            print("not refused")
        except (errors.InvalidDevice, errors.InvalidValue) as e:
            print(type(e).__name__)
    print(len(placed), len(g._table()))
    from pygraphrt import _fast, _runtime
    hot = _fast.hot_module(_runtime.active())
    if hot is not None:  # as on a runtime of several devices: the C asks which one is current
        hot.one_device(False)
    before = len(placed)
    for _ in range(3):
        g.add_memset(buf, 1, 64, device=0)
    print(len(placed) - before, len(g._table()))
""")


@pytest.mark.headers
@pytest.mark.parametrize("mode", ["0", "1"])
def test_device_keyword_naming_the_only_device_stays_in_the_compiled_adds(stub_cudart, tmp_path, mode):
    """On a one-device runtime ``device=0`` is the current device: the C add_memset and
    add_kernel take it themselves (no Python placement); another ordinal, a negative one or a
    string still reach the Python method, which refuses them (InvalidDevice naming the count,
    InvalidValue).  With several devices (one in use) the C asks the runtime which is current
    and takes ``device=0`` where it is.  ABI mode: the Python add_memset and add_kernel skip the
    placing call for ``device=0`` of a one-device runtime too (graph/_graph._only_device)."""
    # (no add placed by Python; the three refusals reach it; none after one_device(False) either)
    out = _on_stub(stub_cudart, tmp_path, mode, DEVICE_KEYWORD_SCRIPT)
    assert out[:6] == ["0 8", "InvalidDevice", "InvalidValue", "InvalidValue", "3 8", "0 11"], out
