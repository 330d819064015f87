"""One cuda13 binding (13.5 headers) for every CUDA 13.x runtime, without a GPU.

The binding's SINCE table (from the pinned 13.0-13.4 runtime wheels) says which
release added each newer function; at load, pygraphrt refuses those the runtime
lacks or, with an older driver, cannot run -- NotSupported naming the function,
the version it needs and the version loaded.  The runtime libraries come from the
pinned wheels (13.0.96 and 13.5.37); no driver is needed for any of this.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from pygraphrt import errors
from pygraphrt._vendors import CudaVendor
from pygraphrt.enums import NodeType

pytestmark = pytest.mark.headers
REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / ".cache" / "headers"
CUDART_13_0 = CACHE / "nvidia-cuda-runtime@13.0.96" / "lib" / "libcudart.so.13"
CUDART_13_5 = CACHE / "nvidia-cuda-runtime" / "lib" / "libcudart.so.13"
NVRTC_13_0 = CACHE / "nvidia-cuda-nvrtc@13.0.88" / "lib" / "libnvrtc.so.13"
NVRTC_13_5 = CACHE / "nvidia-cuda-nvrtc" / "lib" / "libnvrtc.so.13"
NEW_GRAPH_APIS = {"cudaGraphGetId": "13.1", "cudaGraphExecGetId": "13.1", "cudaGraphNodeGetLocalId": "13.1",
                  "cudaGraphNodeGetToolsId": "13.1", "cudaGraphNodeGetContainingGraph": "13.1",
                  "cudaGraphNodeGetParams": "13.2", "cudaLaunchHostFunc_v2": "13.2",
                  "cudaStreamBeginRecaptureToGraph": "13.3"}


def run_py(code: str, **env: str) -> str:
    e = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])), **env)
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                       env=e, cwd=str(REPO), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def cuda13(lib: Path, runtime: tuple[int, int] | None, driver: tuple[int, int] | None) -> CudaVendor:
    pkg = importlib.import_module("pygraphrt._bindings.cuda13")
    symbols = importlib.import_module("pygraphrt._bindings.cuda13.symbols")
    return CudaVendor(pkg.ffi, pkg.ffi.dlopen(str(lib)), "cuda13", symbols, runtime, driver)


def test_the_13_0_runtime_is_told_what_it_lacks():
    """The 13.0 runtime under the 13.5-generated binding: the new graph APIs are refused at the call,
    naming what they need; the capabilities say no; everything 13.0 has is bound as before."""
    out = run_py("""
        import pygraphrt as rt
        from pygraphrt import errors, lowlevel
        b = rt.backend()
        print(b.binding, b.runtime_version_str)
        c = rt.capabilities()
        print(c.node_get_params, c.graph_ids, c.containing_graph, c.recapture_to_graph, c.host_func_spin_wait,
              c.edge_data, c.generic_add_node)
        ops = lowlevel.backend_object().ops
        for api in ("GraphNodeGetParams", "StreamBeginRecaptureToGraph", "GraphGetId", "LaunchHostFunc_v2"):
            try:
                ops.fn(api)
            except errors.NotSupported as e:
                print(e.api, "|", e.detail)
        print(len(lowlevel.unavailable()), ops.has("cudaGraphAddNode"), ops.has("cudaGraphNodeGetParams"))
    """, PYGRAPHRT_BACKEND="cuda", PYGRAPHRT_CUDART=str(CUDART_13_0))
    lines = out.splitlines()
    assert lines[0] == "cuda13 13.0"
    assert lines[1] == "False False False False False True True"
    assert lines[2] == ("cudaGraphNodeGetParams | cudaGraphNodeGetParams needs CUDA runtime 13.2 or newer; "
                        "the loaded runtime is 13.0 (binding cuda13)")
    assert lines[3].startswith("cudaStreamBeginRecaptureToGraph | cudaStreamBeginRecaptureToGraph needs CUDA "
                               "runtime 13.3 or newer; the loaded runtime is 13.0")
    assert "cudaGraphGetId needs CUDA runtime 13.1 or newer" in lines[4]
    assert "cudaLaunchHostFunc_v2 needs CUDA runtime 13.2 or newer" in lines[5]
    assert lines[6] == "33 True False"


def test_the_13_5_runtime_has_them_all():
    out = run_py("""
        import pygraphrt as rt
        from pygraphrt import lowlevel
        c = rt.capabilities()
        print(rt.backend().runtime_version_str, c.node_get_params, c.graph_ids, c.containing_graph,
              c.recapture_to_graph, c.host_func_spin_wait, lowlevel.unavailable())
    """, PYGRAPHRT_BACKEND="cuda", PYGRAPHRT_CUDART=str(CUDART_13_5))
    assert out.strip() == "13.5 True True True True True {}"


@pytest.mark.parametrize("api,since", sorted(NEW_GRAPH_APIS.items()))
def test_an_older_driver_refuses_at_load(api, since):
    """A 13.5 runtime on a 13.0 driver (minor-version compatibility): functions of a later release
    than the driver are refused, naming both versions; a new enough driver lets them through."""
    ops = cuda13(CUDART_13_5, (13, 5), (13, 0))
    assert not ops.has(api)
    with pytest.raises(errors.NotSupported) as e:
        ops.fn(api.removeprefix("cuda"))
    assert e.value.detail == (f"{api} needs a CUDA driver of {since} or newer; the driver supports 13.0 "
                              f"(runtime 13.5, binding cuda13)")
    assert cuda13(CUDART_13_5, (13, 5), (13, 5)).has(api)
    assert cuda13(CUDART_13_5, (13, 5), None).has(api)  # driver unknown: the runtime decides


def test_runtime_version_is_checked_before_the_symbol():
    """A runtime that reports an older version than a function needs is refused even if it exports it."""
    ops = cuda13(CUDART_13_5, (13, 2), (13, 5))
    assert ops.has("cudaGraphNodeGetParams") and not ops.has("cudaStreamBeginRecaptureToGraph")
    assert ops.unavailable["cudaStreamBeginRecaptureToGraph"].startswith(
        "cudaStreamBeginRecaptureToGraph needs CUDA runtime 13.3 or newer; the loaded runtime is 13.2")
    assert "cudaStreamBeginRecaptureToGraph_ptsz" in ops.unavailable  # per-thread variants alike


def test_nvrtc_13_0_under_the_13_5_binding():
    from pygraphrt.kernels._program import _Compiler

    old = _Compiler("nvrtc", "nvrtc13", str(NVRTC_13_0))
    assert old.version == (13, 0)
    with pytest.raises(errors.NotSupported, match=r"nvrtcGetTileIR needs NVRTC 13.2 or newer; the loaded "
                                                  r"NVRTC is 13.0"):
        old.fn("GetTileIR")
    old.fn("CompileProgram")  # 13.0's own functions are there
    assert _Compiler("nvrtc", "nvrtc13", str(NVRTC_13_5)).unavailable == {}


# -- the generic node-params decoder (what node.params reads on CUDA >= 13.2) ------------------
@pytest.fixture
def fake_graph():
    ops = cuda13(CUDART_13_5, (13, 5), (13, 5))
    backend = SimpleNamespace(ffi=ops.ffi, lib=ops.lib, ops=ops, vendor="cuda")
    return SimpleNamespace(_backend=backend)


def test_decode_node_params_union(fake_graph):
    from pygraphrt.graph._readback import decode

    ops, ffi = fake_graph._backend.ops, fake_graph._backend.ffi
    p = ffi.new("struct cudaGraphNodeParams *")
    p.type = ops.value(ops.node_types, NodeType.MEMSET, "")
    p.memset.dst = ffi.cast("void *", 0x1000)
    p.memset.value, p.memset.elementSize, p.memset.width, p.memset.height, p.memset.pitch = 7, 4, 16, 2, 64
    assert decode(fake_graph, p) == {"type": NodeType.MEMSET, "dst": 0x1000, "value": 7, "element_size": 4,
                                     "width": 16, "height": 2, "pitch": 64}
    p = ffi.new("struct cudaGraphNodeParams *")
    p.type = ops.value(ops.node_types, NodeType.MEMCPY, "")
    c = p.memcpy.copyParams
    c.dstPtr.ptr, c.srcPtr.ptr = ffi.cast("void *", 0x2000), ffi.cast("void *", 0x3000)
    c.extent.width, c.extent.height, c.extent.depth, c.kind = 256, 1, 1, ops.const("MemcpyDefault")
    assert decode(fake_graph, p) == {"type": NodeType.MEMCPY, "dst": 0x2000, "src": 0x3000, "dst_pitch": 0,
                                     "src_pitch": 0, "width": 256, "height": 1, "depth": 1, "kind": 4}
    p = ffi.new("struct cudaGraphNodeParams *")
    p.type = ops.value(ops.node_types, NodeType.MEM_ALLOC, "")
    p.alloc.dptr, p.alloc.bytesize = ffi.cast("void *", 0x4000), 1 << 20
    p.alloc.poolProps.location.id = 0
    assert decode(fake_graph, p) == {"type": NodeType.MEM_ALLOC, "dptr": 0x4000, "bytesize": 1 << 20,
                                     "device": 0}
    p = ffi.new("struct cudaGraphNodeParams *")
    p.type = ops.value(ops.node_types, NodeType.KERNEL, "")
    p.kernel.gridDim.x, p.kernel.gridDim.y, p.kernel.gridDim.z = 4, 2, 1
    p.kernel.blockDim.x, p.kernel.blockDim.y, p.kernel.blockDim.z = 128, 1, 1
    p.kernel.sharedMemBytes = 32
    assert decode(fake_graph, p) == {"type": NodeType.KERNEL, "func": 0, "grid": (4, 2, 1),
                                     "block": (128, 1, 1), "shared_mem_bytes": 32}


def test_decode_host_params_recognises_only_pygraphrt_payloads(fake_graph):
    from pygraphrt._handles import ErrorSink, HostPayload, trampoline
    from pygraphrt.graph._readback import decode

    b = fake_graph._backend
    ops, ffi = b.ops, b.ffi
    fn = lambda: None  # noqa: E731
    payload = HostPayload(b, fn, ErrorSink())
    p = ffi.new("struct cudaGraphNodeParams *")
    p.type = ops.value(ops.node_types, NodeType.HOST, "")
    p.host.fn, p.host.userData = trampoline(b), payload.c_handle
    p.host.syncMode = ops.const("HostTaskSpinWait")
    assert decode(fake_graph, p) == {"type": NodeType.HOST, "fn": fn, "spin_wait": True}
    p.host.fn = ffi.cast("cudaHostFn_t", 0x1234)  # someone else's host function: userData is theirs
    assert decode(fake_graph, p)["fn"] is None


# -- end to end through a fake libcudart 13.5 (tests/fakecuda/fake_cudart.c) ------------------
#: A folder of fake libraries compiled beforehand, one sub-folder per variant (:func:`fake_variant`,
#: ``stub_cudart``): tests/test_wheel.py runs these tests against an installed wheel where no C
#: compiler is on PATH, so it compiles the fakes first and names the folder here.
PREBUILT = os.environ.get("PYGRAPHRT_TEST_PREBUILT")


def fake_variant(driver: int | None = None, driver_direct: bool = False) -> str:
    """The sub-folder of PYGRAPHRT_TEST_PREBUILT holding this variant's ``libcudart.so.13``."""
    return "fake_cudart" + (f"-driver{driver}" if driver else "") + ("-direct" if driver_direct else "")


def build_fake_cudart(out: Path, driver: int | None = None, driver_direct: bool = False) -> Path:
    """The fake compiled against the pinned cuda13 headers (-Wall -Werror); ``driver``: the driver
    version it reports (default: the headers' CUDART_VERSION); ``driver_direct``: with the
    driver stand-ins (FAKE_DRIVER_DIRECT).  Copied from PYGRAPHRT_TEST_PREBUILT where that is set."""
    if PREBUILT:
        import shutil

        prebuilt = Path(PREBUILT) / fake_variant(driver, driver_direct) / "libcudart.so.13"
        if not prebuilt.is_file():
            raise FileNotFoundError(f"PYGRAPHRT_TEST_PREBUILT={PREBUILT} has no {prebuilt.relative_to(PREBUILT)}")
        shutil.copyfile(prebuilt, out)
        return out
    from bindgen.headersets import HEADER_SETS, include_roots

    incs = [a for root in include_roots(HEADER_SETS["cuda13"]) for a in ("-I", str(root))]
    defines = [f"-DFAKE_DRIVER_VERSION={driver}"] if driver else []
    defines += ["-DFAKE_DRIVER_DIRECT"] if driver_direct else []
    subprocess.run(["cc", "-std=gnu11", "-Wall", "-Werror", "-shared", "-fPIC", "-pthread", *defines, *incs, "-o", str(out),
                    str(REPO / "tests" / "fakecuda" / "fake_cudart.c")], check=True)
    return out


@pytest.fixture(scope="module")
def fake_cudart(tmp_path_factory) -> Path:
    return build_fake_cudart(tmp_path_factory.mktemp("fakecudart") / "libcudart.so.13")


def run_fake(lib: Path, code: str) -> str:
    return run_py("import ctypes\nbuf = ctypes.create_string_buffer(64)\na = ctypes.addressof(buf)\n"
                  + textwrap.dedent(code), PYGRAPHRT_BACKEND="cuda", PYGRAPHRT_CUDART=str(lib))


def test_fake_ids_containing_graph_and_generic_params(fake_cudart):
    out = run_fake(fake_cudart, """
        import pygraphrt as rt
        from pygraphrt.enums import NodeType
        from pygraphrt.graph._readback import generic_params, typed_params
        c = rt.capabilities()
        print(rt.backend().runtime_version_str, c.node_get_params, c.graph_ids, c.containing_graph,
              c.recapture_to_graph, c.host_func_spin_wait)
        g, g2 = rt.Graph(), rt.Graph()
        e = g.add_empty()
        m = e.memset(a, 7, 16)
        print(g.id != g2.id, e.local_id, m.local_id, m.tools_id == (g.id << 32 | 1), m.containing_graph is g)
        print(generic_params(m) == typed_params(m) == m.params, m.params["value"], generic_params(e))
        exe1, exe2 = g.instantiate(), g.instantiate()
        print(exe1.id != exe2.id)
    """)
    assert out.splitlines() == ["13.5 True True True True True", "True 0 1 True True", "True 7 {}", "True"]


def test_fake_spin_wait_host_functions(fake_cudart):
    out = run_fake(fake_cudart, """
        import pygraphrt as rt
        from pygraphrt.enums import NodeType
        calls = []
        s = rt.Stream()
        s.launch_host_func(lambda: calls.append("stream"), spin_wait=True)
        with s.capture() as cap:
            s.launch_host_func(lambda: calls.append("captured"), spin_wait=True)
            s.launch_host_func(lambda: calls.append("blocking"))
        g = rt.Graph()
        h = g.add_node(NodeType.HOST, fn=lambda: calls.append("node"), spin_wait=True)
        cap.graph.instantiate().launch(s)
        g.instantiate().launch(s)
        s.synchronize()
        print(calls)
        print([n.params["spin_wait"] for n in cap.graph.nodes()], h.params["spin_wait"])
    """)
    assert out.splitlines() == ["['stream', 'captured', 'blocking', 'node']", "[True, False] True"]


def test_fake_recapture(fake_cudart):
    """Recapture updates the graph in place (same node objects), reports what changed, and an
    executable graph takes it by update; every failure leaves the graph closed."""
    out = run_fake(fake_cudart, """
        import pygraphrt as rt
        from pygraphrt import errors
        from pygraphrt.graph import RecaptureStatus
        s = rt.Stream()
        def work(v1, v2, extra=False):
            s.memset(a, v1, 16)
            s.memset(a + 16, v2, 16)
            if extra:
                s.memset(a + 32, 9, 16)
        def fresh():
            with s.capture() as cap:
                work(1, 2)
            return cap.graph
        g = fresh()
        before = g.nodes()
        exe = g.instantiate()
        seen = []
        with s.recapture(g, on_mismatch=seen.append) as rc:
            work(3, 2)
        m = rc.mismatches[0]
        print(rc.graph is g, g.nodes() == before, seen == rc.mismatches, len(rc.mismatches), m.node is before[0])
        print(m.status is RecaptureStatus.ELIGIBLE_FOR_UPDATE, m.original["value"], m.recaptured["value"],
              rc.update_eligible)
        print(exe.update(g), end=" ")
        exe.launch(s)
        s.synchronize()
        print(buf.raw[:32] == bytes([3]) * 16 + bytes([2]) * 16)
        with s.recapture(g) as rc:
            work(3, 2)
        print("unchanged", rc.mismatches, g.is_valid)
        for name, body, hook in (("fewer", lambda: s.memset(a, 1, 16), None),
                                 ("more", lambda: work(1, 2, extra=True), None),
                                 ("refused", lambda: work(5, 2), lambda m: False),
                                 ("raised", lambda: work(6, 2), lambda m: 1 / 0)):
            g = fresh()
            try:
                with s.recapture(g, on_mismatch=hook):
                    body()
            except errors.GraphRTError as e:
                print(name, e.api, e.name, type(e.__cause__).__name__, g.is_valid, s.is_capturing)
        g = fresh()
        try:
            with s.recapture(g):
                raise KeyError("inside")
        except KeyError:
            print("exception", g.is_valid, s.is_capturing)
    """)
    assert out.splitlines() == [
        "True True True 1 True",
        "True 1 3 True",
        "UpdateResult.SUCCESS True",
        "unchanged [] True",
        "fewer cudaStreamEndCapture cudaErrorGraphRecaptureFailure NoneType False False",
        "more cudaMemsetAsync cudaErrorGraphRecaptureFailure NoneType False False",
        "refused cudaMemsetAsync cudaErrorGraphRecaptureFailure NoneType False False",
        "raised cudaMemsetAsync cudaErrorGraphRecaptureFailure ZeroDivisionError False False",
        "exception False False"]


def test_fake_13_5_runtime_on_a_13_0_driver(tmp_path):
    """Minor-version compatibility: the 13.5 runtime runs on a 13.0 driver, and what needs a newer
    driver is refused at the call, naming both versions; nothing is left half-done."""
    lib = build_fake_cudart(tmp_path / "libcudart.so.13", driver=13000)
    out = run_fake(lib, """
        import pygraphrt as rt
        from pygraphrt import errors
        from pygraphrt.enums import NodeType
        b = rt.backend()
        c = rt.capabilities()
        print(b.runtime_version, b.driver_version, c.node_get_params, c.graph_ids, c.recapture_to_graph,
              c.host_func_spin_wait)
        g = rt.Graph()
        m = g.add_memset(a, 7, 16)
        print(m.params["value"])  # the type-specific readback
        s = rt.Stream()
        for name, call in (("id", lambda: g.id), ("local", lambda: m.local_id),
                           ("containing", lambda: m.containing_graph),
                           ("recapture", lambda: s.recapture(g).begin()),
                           ("spin", lambda: s.launch_host_func(print, spin_wait=True)),
                           ("node", lambda: g.add_node(NodeType.HOST, fn=print, spin_wait=True))):
            try:
                call()
            except errors.NotSupported as e:
                print(name, e.detail)
        print(len(g), g.is_valid, s.is_capturing)
    """)
    lines = out.splitlines()
    assert lines[0] == "13050 13000 False False False False" and lines[1] == "7"
    assert lines[2] == ("id cudaGraphGetId needs a CUDA driver of 13.1 or newer; the driver supports 13.0 "
                        "(runtime 13.5, binding cuda13)")
    assert lines[3].startswith("local cudaGraphNodeGetLocalId needs a CUDA driver of 13.1 or newer")
    assert lines[4].startswith("containing cudaGraphNodeGetContainingGraph needs a CUDA driver of 13.1")
    assert lines[5].startswith("recapture cudaStreamBeginRecaptureToGraph needs a CUDA driver of 13.3 or newer; "
                               "the driver supports 13.0")
    assert lines[6].startswith("spin cudaLaunchHostFunc_v2 needs a CUDA driver of 13.2 or newer")
    assert lines[7].startswith("node spin_wait host nodes: cudaLaunchHostFunc_v2 needs a CUDA driver of 13.2")
    assert lines[8] == "1 True False"
