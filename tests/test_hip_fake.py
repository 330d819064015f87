"""pygraphrt's HIP code paths against a fake libamdhip64 (no AMD GPU exists here).

tests/fakehip/fake_hip.c is compiled against EACH pinned HIP header set (hip6: HIP 6.2 from
triton 3.5.1, hip7: HIP 7.1 from triton 3.8.0) with -Wall -Werror, so each function
pygraphrt calls is checked against that HIP's own prototype by the C compiler, and the
fake reports that header set's HIP_VERSION; then the backend is driven through it, once
per set: loading and version choice (6.x -> hip6, 7.x -> hip7, 5.x -> a clear error),
graphs and edges (HIP's 4-argument forms), refusal of edge data, capture and capture info
(``hipStreamGetCaptureInfo_v2``), exec update (HIP's errorNode/result form), instantiate
flags, error mapping by name, modules and kernels, memory pools, and rt.Program through a
fake libhiprtc compiled against the pinned hiprtc.h.  What HIP 6.2 lacks
(``hipGraphNodeSetParams``, ``hipDrvLaunchKernelEx``) is absent from its fake too, and
pygraphrt refuses it naming the runtime.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from bindgen.headersets import HEADER_SETS, include_roots

pytestmark = pytest.mark.headers
REPO = Path(__file__).resolve().parent.parent
FAKES = Path(__file__).parent / "fakehip"
HIP_SETS = sorted(name for name, hs in HEADER_SETS.items() if hs.vendor == "hip")


def build_fake(out: Path, header_set: str, source: str = "fake_hip.c", *defines: str) -> Path:
    """Compile a fake library against a pinned header set (-Wall -Werror)."""
    inc = include_roots(HEADER_SETS[header_set])[0]
    subprocess.run(["cc", "-std=gnu11", "-Wall", "-Werror", "-shared", "-fPIC", "-D__HIP_PLATFORM_AMD__",
                    *defines, "-I", str(inc), "-o", str(out), str(FAKES / source)], check=True)
    return out


def hip_version_of(header_set: str) -> str:
    """HIP_VERSION_MAJOR.MINOR.PATCH of a header set's hip_version.h."""
    text = (include_roots(HEADER_SETS[header_set])[0] / "hip" / "hip_version.h").read_text()
    fields = dict(line.split()[1:3] for line in text.splitlines()
                  if line.startswith("#define HIP_VERSION_") and len(line.split()) == 3)
    return f"{fields['HIP_VERSION_MAJOR']}.{fields['HIP_VERSION_MINOR']}.{fields['HIP_VERSION_PATCH']}"


@dataclass(frozen=True)
class Fake:
    path: Path  # the fake libamdhip64
    binding: str  # the header set it was compiled against (= the binding pygraphrt must pick)
    version: str  # that set's HIP version

    @property
    def hip7(self) -> bool:
        return self.binding == "hip7"


@pytest.fixture(scope="module")
def fake_hip(tmp_path_factory) -> Path:
    """The fake built on the hip7 headers (other test modules use this one)."""
    return build_fake(tmp_path_factory.mktemp("fakehip") / "libamdhip64.so", "hip7")


@pytest.fixture(scope="module", params=HIP_SETS)
def fake_hip_set(request, tmp_path_factory) -> Fake:
    """The fake built on each pinned HIP header set in turn."""
    name = request.param
    path = build_fake(tmp_path_factory.mktemp(f"fake{name}") / "libamdhip64.so", name)
    return Fake(path, name, hip_version_of(name))


def run_hip(lib: Path | Fake, code: str, **env: str) -> str:
    lib = lib.path if isinstance(lib, Fake) else lib
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])), PYGRAPHRT_BACKEND="hip", PYGRAPHRT_HIP_LIB=str(lib), **env)
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                       env=env, cwd=str(REPO), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_backend_selection_and_info(fake_hip_set):
    out = run_hip(fake_hip_set, """
        import pygraphrt as rt
        i = rt.backend()
        print(i.vendor, i.binding, i.runtime_version_str, i.device_count, i.library_path)
        c = rt.capabilities()
        print(c.edge_data, c.exec_update_result_info, c.conditional_nodes, c.instantiate_flag_combinations)
        print(c.generic_add_node, c.node_set_params, c.node_get_params, c.graph_ids, c.recapture_to_graph)
    """)
    first, second, third = out.splitlines()[:3]
    f = fake_hip_set
    assert first == f"hip {f.binding} {f.version} 1 {f.path}"  # the header set's version picks the binding
    assert second == "False False False False"
    assert third == f"True {f.hip7} False False False"  # hipGraphNodeSetParams: HIP 7 only


@pytest.mark.parametrize("version,expected", [(60000000, "hip6"), (60441134, "hip6"), (70000000, "hip7"),
                                              (79900000, "hip7"), (50731921, None), (80000000, None)])
def test_version_choice(tmp_path, version, expected):
    """6.x -> hip6, 7.x -> hip7; any other major is refused naming the library, its version and the
    supported ones (the fake is built on the binding's headers, reporting ``version``)."""
    lib = build_fake(tmp_path / "libamdhip64.so", expected or "hip6", "fake_hip.c",
                     f"-DFAKE_HIP_VERSION={version}")
    out = run_hip(lib, """
        import pygraphrt as rt
        from pygraphrt import errors
        try:
            print("BINDING", rt.backend().binding)
        except errors.BackendError as e:
            print("REFUSED", e)
    """)
    if expected:
        assert out.strip() == f"BINDING {expected}"
    else:
        major, minor, patch = version // 10_000_000, version // 100_000 % 100, version % 100_000
        assert out.startswith("REFUSED"), out
        assert f"{lib} is hip runtime {major}.{minor}.{patch}; pygraphrt supports hip 6.x, hip 7.x" in out


def test_graph_edges_and_errors(fake_hip_set):
    out = run_hip(fake_hip_set, """
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


def test_generic_add_node_form(fake_hip_set):
    out = run_hip(fake_hip_set, """
        import pygraphrt as rt
        from pygraphrt import errors
        from pygraphrt.enums import EdgeData, DependencyType, NodeType
        g = rt.Graph()
        e = g.add_node(NodeType.EMPTY)
        m = g.add_node(NodeType.MEMSET, dependencies=[e], dst=0x1000, value=1, count=16)
        assert m.type is NodeType.MEMSET and g.edges() == [(e, m, EdgeData())]
        try:
            m.set_params(dst=0x1000, value=2, count=16)   # hipGraphNodeSetParams: HIP 7 (not in 6.2)
            print("SET ok")
        except errors.NotSupported as exc:
            print("SET", exc.detail)
        try:
            g.add_node(NodeType.EMPTY, dependencies=[e], edges=[EdgeData(1, 0, DependencyType.PROGRAMMATIC)])
        except errors.NotSupported as exc:
            print("EDGES", exc.api)
        print("OK")
    """)
    assert "EDGES hipGraphAddNode" in out and out.strip().endswith("OK")
    if fake_hip_set.hip7:
        assert "SET ok" in out
    else:
        assert "SET hipGraphNodeSetParams is not exported by this runtime (HIP 6.2, binding hip6)" in out


def test_stream_copy_past_the_end_of_an_allocation_is_refused(fake_hip_set):
    """Stream.memcpy looks up each device operand's allocation (hipMemGetAddressRange) and
    refuses a range running past its end before the runtime sees it (on CUDA such a copy
    crashed the process inside the runtime); host memory and fitting copies go through."""
    out = run_hip(fake_hip_set, """
        import pygraphrt as rt
        from pygraphrt import errors
        s = rt.Stream()
        a, b = rt.malloc(64), rt.malloc(64)
        host = bytearray(b"x" * 64)
        s.memcpy(a, host, 64)
        s.memcpy(b.ptr + 8, a.ptr, 56)
        for dst, src, n in ((a.ptr + 60, b.ptr, 8), (a.ptr, b.ptr + 1, 64)):
            try:
                s.memcpy(dst, src, n)
            except errors.InvalidValue as e:
                assert "past the end" in str(e) and "hipMemcpyAsync" in str(e), e
            else:
                raise AssertionError("not refused")
        s.memcpy(a.ptr + 60, host, 0)   # nothing to copy: nothing to check
        back = bytearray(64)
        s.memcpy(back, b, 64)
        s.synchronize()
        assert bytes(back[8:]) == b"x" * 56
        print("ok")
    """)
    assert out.strip() == "ok"


def test_capture_and_capture_info(fake_hip_set):
    out = run_hip(fake_hip_set, """
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
            print("LEGACY", e.api, "|", e)
        try:
            with s.capture():
                raise KeyError("inside")
        except KeyError:
            print("CLEAN", s.capture_status)
    """)
    # pygraphrt's own refusal names its call and the runtime function it did not call (HIP's name)
    assert "LEGACY Capture.begin |" in out and "hipStreamBeginCapture was not called" in out
    assert "CLEAN CaptureStatus.NONE" in out


def test_instantiate_launch_and_exec_update(fake_hip_set):
    out = run_hip(fake_hip_set, """
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


def test_captured_operands_live_as_long_as_the_graph(fake_hip_set):
    out = run_hip(fake_hip_set, """
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


def test_kernels_modules_launch_and_kernel_nodes(fake_hip_set, tmp_path):
    """Library = hipModuleLoadData/hipModuleLoad, kernels = hipModuleGetFunction, launches through
    hipModuleLaunchKernel (no attributes) and hipDrvLaunchKernelEx (attributes; HIP 6 has none: refused
    naming the runtime), kernel nodes through hipGraphAddKernelNode / Get/SetParams /
    hipGraphExecKernelNodeSetParams, node attributes through hipGraphKernelNode{Get,Set}Attribute."""
    image = tmp_path / "fake.co"
    image.write_bytes(b"FAKEHIP")
    out = run_hip(fake_hip_set, f"""
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
            try:
                s.launch(k, 1, 1, where, 5, 6, priority=3)  # hipDrvLaunchKernelEx: HIP 7 (not in 6.2)
                prio = ctypes.c_int.in_dll(ctypes.CDLL({str(fake_hip_set.path)!r}), "fake_last_launch_priority").value
                print("ex", cell.value, prio)
            except errors.NotSupported as e:
                print("ex refused", "need hipDrvLaunchKernelEx (HIP 7); this runtime is HIP 6.2" in e.detail)
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
                print("no cluster", ("available" if {fake_hip_set.hip7} else "hipDrvLaunchKernelEx (HIP 7)") in str(e))
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
    ex = "ex 11 3" if fake_hip_set.hip7 else "ex refused True"
    per_library = ["function None 11 8", "plain 42", ex, "refused hipErrorInvalidConfiguration", "bad arg True",
                   "no cluster True", "too much smem"]
    # the same seven lines for the library loaded from bytes (hipModuleLoadData), then from the file
    # (hipModuleLoad)
    assert lines[:7] == per_library, lines[:7]
    assert lines[7:14] == per_library, lines[7:14]
    assert lines[14:] == ["image hipErrorInvalidImage", "missing hipErrorNotFound", "args True True True",
                          "prio 2 0", "copied 2", "graph 7", "exec set 101 3", "node set [7, 7]",
                          "unloaded"]


def test_stream_ordered_memory_and_pools(fake_hip_set):
    """hipMemPool* and hipMallocAsync/hipMallocFromPoolAsync/hipFreeAsync call forms, and capture of
    stream-ordered allocations into mem-alloc / mem-free nodes."""
    out = run_hip(fake_hip_set, """
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


@pytest.fixture(scope="module")
def fake_hiprtc(tmp_path_factory) -> Path:
    """The fake libhiprtc, built on the hiprtc.h of the pinned set that has one (HIP 6.2)."""
    return build_fake(tmp_path_factory.mktemp("fakehiprtc") / "libhiprtc.so", "hiprtc", "fake_hiprtc.c")


def test_program_compiles_with_hiprtc(fake_hip_set, fake_hiprtc):
    """rt.Program on HIP: the generated hiprtc binding drives (fake) HIPRTC: the device's
    --offload-arch by default, name expressions, the log and its warnings, CompileError; the code
    object loads as a module and its kernel launches."""
    out = run_hip(fake_hip_set, """
        import ctypes
        import pygraphrt as rt
        from pygraphrt import errors
        src = 'extern "C" __global__ void add_int(int *out, int a, int b) { *out = a + b; }\\n#warning w'
        prog = rt.Program(src, name="k.hip", name_expressions=["add_int<int>"])
        print(prog.image_kind, prog.image[:7], prog.options, prog.arch)
        print(prog.compiler.split(" (")[0], prog.lowered_names, len(prog.warnings))
        k = prog.kernel("add_int<int>", signature="int *out, int a, int b")
        cell = ctypes.c_int(0)
        with rt.Stream() as s:
            s.launch(k, 1, 1, ctypes.addressof(cell), 40, 2)
        print("ran", cell.value)
        try:
            rt.Program("#error no")
        except errors.CompileError as e:
            print("error", e.api, e.name, "fake compile error" in e.log)
    """, PYGRAPHRT_HIPRTC=str(fake_hiprtc))
    assert out.splitlines() == [
        "code_object b'FAKEHIP' ('--offload-arch=gfx942:sramecc+:xnack-',) gfx942:sramecc+:xnack-",
        "hiprtc 6.2 {'add_int<int>': 'add_int'} 1",
        "ran 42",
        "error hiprtcCompileProgram HIPRTC_ERROR_COMPILATION True"]


def test_cuda_13x_graph_apis_are_refused_on_hip(fake_hip_set):
    """Ids, the containing graph, recapture and spin-wait host functions are CUDA 13.1+ APIs: HIP
    refuses them naming the runtime; node.params keeps the type-specific readback."""
    out = run_hip(fake_hip_set, """
        import pygraphrt as rt
        from pygraphrt import errors
        g = rt.Graph()
        n = g.add_empty()
        print("params", n.params)
        s = rt.Stream()
        for what, call in (("id", lambda: g.id), ("local_id", lambda: n.local_id),
                           ("tools_id", lambda: n.tools_id), ("containing", lambda: n.containing_graph),
                           ("exec id", lambda: g.instantiate().id),
                           ("recapture", lambda: s.recapture(g).begin()),
                           ("spin", lambda: s.launch_host_func(print, spin_wait=True))):
            try:
                call()
                print(what, "ran")
            except errors.NotSupported as e:
                print(what, e.api, e.detail)
        print("capturing", s.is_capturing, len(g.nodes()))
    """)
    v = f"(HIP {fake_hip_set.version.rsplit('.', 1)[0]}, binding {fake_hip_set.binding})"
    assert out.splitlines() == [
        "params {}",
        f"id hipGraphGetId hipGraphGetId is not exported by this runtime {v}",
        f"local_id hipGraphNodeGetLocalId hipGraphNodeGetLocalId is not exported by this runtime {v}",
        f"tools_id hipGraphNodeGetToolsId hipGraphNodeGetToolsId is not exported by this runtime {v}",
        f"containing hipGraphNodeGetContainingGraph hipGraphNodeGetContainingGraph is not exported by this "
        f"runtime {v}",
        f"exec id hipGraphExecGetId hipGraphExecGetId is not exported by this runtime {v}",
        f"recapture hipStreamBeginRecaptureToGraph hipStreamBeginRecaptureToGraph is not exported by this "
        f"runtime {v}",
        f"spin hipLaunchHostFunc_v2 hipLaunchHostFunc_v2 is not exported by this runtime {v}",
        "capturing False 1"]


@pytest.mark.parametrize("mode", ["abi", "compiled"])
def test_bulk_nodes_are_made_by_one_loop_and_read_back(fake_hip_set, mode):
    """add_nodes on HIP: the plain specs made by the Python loop (ABI) or the C loop (compiled),
    the runtime writing their handles into the NodeList (the table has no entry for them until
    read); types, parameters and dependencies read back, and the launched graph sets the bytes."""
    env = {"PYGRAPHRT_FAST": "1", "PYGRAPHRT_REQUIRE_FAST": "1"} if mode == "compiled" else {"PYGRAPHRT_FAST": "0"}
    if mode == "compiled":
        from bindgen.fast import have_compiler

        if have_compiler() is None:
            pytest.skip("no C compiler: the compiled mode is not built")
    out = run_hip(fake_hip_set, """
        import pygraphrt as rt
        from pygraphrt import lowlevel
        g = rt.Graph()
        r = g.add_empty()
        buf = rt.malloc(64)
        made = g.add_nodes([("empty", None, ["r"]), ("memset", {"dst": buf, "value": 7, "count": 16}, [0]),
                            ("memset", {"dst": buf.ptr + 16, "value": 9, "count": 8}, [1, r]),
                            ("empty", None, [2])], names={"r": r})
        print(len(g._table()), lowlevel.backend_object().ffi_mode.split()[0], buf in g._keep)
        print([n.type.name for n in made], [made[1].params["value"], made[2].params["value"]],
              made[2].params["dst"] - buf.ptr, made[1].params["width"])
        print(sorted(id(d) for d, _ in made[2].dependencies) == sorted([id(made[1]), id(r)]),
              [d for d, _ in made[3].dependencies] == [made[2]], made[0].dependencies[0][0] is r)
        s = rt.Stream()
        buf.memset(0) if hasattr(buf, "memset") else None
        e = g.instantiate()
        e.launch(s)
        s.synchronize()
        print(buf.to_bytes(24) == b"\\x07" * 16 + b"\\x09" * 8)
    """, **env).splitlines()
    assert out[0] == f"1 {'api' if mode == 'compiled' else 'abi'} True"
    assert out[1:3] == ["['EMPTY', 'MEMSET', 'MEMSET', 'EMPTY'] [7, 9] 16 16", "True True True"]
    assert out[3] == "True"


@pytest.mark.parametrize("mode", ["abi", "compiled"])
def test_plain_launches_after_the_first_in_c(fake_hip_set, mode):
    """Stream.launch and Kernel.launch on HIP: after a kernel's first launch (the Python method,
    which checks the signature) compiled mode launches it from C through hipModuleLaunchKernel;
    the kernel runs (the fake adds its ints), and an error the runtime returns is raised as in ABI
    mode."""
    env = {"PYGRAPHRT_FAST": "1", "PYGRAPHRT_REQUIRE_FAST": "1"} if mode == "compiled" else {"PYGRAPHRT_FAST": "0"}
    if mode == "compiled":
        from bindgen.fast import have_compiler

        if have_compiler() is None:
            pytest.skip("no C compiler: the compiled mode is not built")
    out = run_hip(fake_hip_set, """
        import ctypes, sys
        import pygraphrt as rt
        from pygraphrt import errors
        cell = ctypes.c_int(0)
        where = ctypes.addressof(cell)
        k = rt.Library(b"FAKEHIP").kernel("add_int", signature="int *out, int a, int b")
        s = rt.Stream()
        s.launch(k, 1, 1, where, 40, 2)  # the first: the Python method
        seen = []
        sys.setprofile(lambda frame, event, arg: seen.append(frame.f_code.co_name) if event == "call" else None)
        s.launch(k, 1, 1, where, 30, 3)
        a = cell.value
        k.launch(s, (1, 1), 1, where, 20, 4)
        sys.setprofile(None)
        print(a, cell.value, "launch" in seen, type(rt.Stream.__dict__["launch"]).__name__, k._launch_layout is not None)
        try:
            s.launch(k, 1, 2048, where, 1, 1)
        except errors.GraphRTError as e:
            print("refused", e.api, e.name)
    """, **env).splitlines()
    compiled = mode == "compiled"
    assert out[0] == f"33 24 {not compiled} {'method_descriptor' if compiled else 'function'} {compiled}"
    assert out[1] == "refused hipModuleLaunchKernel hipErrorInvalidConfiguration"
