"""Every HIP function pygraphrt calls is in the fake libamdhip64, and each runs there.

``test_the_fake_exports_every_hip_function_pygraphrt_calls`` lists the HIP functions the layer
references -- read off its source: the prefix-less names handed to the vendor layer
(``ops.call("GraphUpload", ...)`` -> ``hipGraphUpload``; also in ``f"{prefix}..."`` strings and
concatenations), ``hip...`` names and ``lib.hip...`` attributes, mapped through the binding's
``API_SYMBOLS`` as ``Vendor.fn`` maps them -- plus the functions the compiled fast path's generated
C calls, keeps those the header set declares, and fails on any the fake (built on that header set)
does not export.  The listing over-approximates (a name in an error message counts), never
under-approximates what ``Vendor.fn`` can be asked for.

The other tests drive the functions added for that (``hipGraphUpload``, ``hipGraphNodeSetEnabled``,
``hipStreamQuery``, ``hipEventElapsedTime``, graph-memory attributes and trim, capture into a graph
and dependency updates, the executable graph's per-node setters, ``hipLaunchHostFunc``, external
semaphores, ...) through pygraphrt on the fake, once per pinned header set.  The fake checks call
forms and struct layouts against HIP's headers; its behaviour is a toy, so these tests say that the
call arrived with the arguments pygraphrt meant -- not what HIP does with them.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.test_hip_fake import REPO, build_fake, fake_hip_set, run_hip  # noqa: F401 - fixtures by name

pytestmark = pytest.mark.headers
LAYER = REPO / "pygraphrt"
# Not the layer: generated bindings, the simulator, CUDA's own vendor module, the raw layer handed
# to users, the conformance suite (cases, not library code).
NOT_THE_LAYER = ("_bindings/", "_vendors/sim/", "_vendors/cuda.py", "_fastlib/", "lowlevel.py", "conformance/")


def _names_in(tree: ast.AST) -> set[str]:
    """Candidate function names in a module: string constants, the text after ``{...prefix}`` in
    f-strings, both results of ``"Name" + ("A" if c else "B")``, and ``hip...`` attributes."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.add(node.value)
        elif isinstance(node, ast.JoinedStr):
            for a, b in zip(node.values, node.values[1:]):
                if (isinstance(a, ast.FormattedValue) and "prefix" in ast.unparse(a.value)
                        and isinstance(b, ast.Constant)):
                    out.add(re.match(r"\w*", b.value).group(0))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and isinstance(node.left, ast.Constant):
            right = node.right
            tails = [right] if isinstance(right, ast.Constant) else (
                [right.body, right.orelse] if isinstance(right, ast.IfExp) else [])
            out |= {f"{node.left.value}{t.value}" for t in tails
                    if isinstance(t, ast.Constant) and isinstance(t.value, str)}
        elif isinstance(node, ast.Attribute) and node.attr.startswith("hip"):
            out.add(node.attr)
    return out


def hip_functions_the_layer_calls(binding: str) -> dict[str, str]:
    """HIP function -> where the layer names it, for the functions ``binding`` declares."""
    import importlib

    declared = set(json.loads((LAYER / "_bindings" / binding / "manifest.json").read_text())["functions"])
    api_symbols = importlib.import_module(f"pygraphrt._bindings.{binding}.symbols").API_SYMBOLS
    found: dict[str, str] = {}
    for path in sorted(LAYER.rglob("*.py")):
        rel = path.relative_to(LAYER).as_posix()
        if rel.startswith(NOT_THE_LAYER):
            continue
        for name in _names_in(ast.parse(path.read_text())):
            for full in (name, "hip" + name):
                symbol = api_symbols.get(full, full)  # as Vendor.fn resolves a name
                if symbol in declared:
                    found.setdefault(symbol, f"pygraphrt/{rel}")
    # the compiled fast path: its generated C after the binding's declarations and pointer table
    c_source = json.loads((LAYER / "_bindings" / binding / "fast_source.json").read_text())["c_source"]
    own_code = c_source[c_source.index("/* -- calls straight to the driver"):]
    for symbol in re.findall(r"\b(hip[A-Z]\w*)\s*\(", own_code):
        if symbol in declared:
            found.setdefault(symbol, f"pygraphrt/_bindings/{binding}/fast_source.json")
    return found


def exported(lib: Path) -> set[str]:
    out = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True)
    return {line.split()[-1] for line in out.stdout.splitlines() if line.strip()}


def test_the_fake_exports_every_hip_function_pygraphrt_calls(fake_hip_set):
    calls = hip_functions_the_layer_calls(fake_hip_set.binding)
    # the listing finds what it must (the layer's own calls of each kind): a scan that found
    # nothing would pass below
    assert {"hipGraphLaunch", "hipGraphUpload", "hipStreamGetCaptureInfo_v2", "hipModuleLaunchKernel",
            "hipGraphExecMemsetNodeSetParams", "hipGraphAddMemcpyNodeToSymbol" if fake_hip_set.hip7 else
            "hipGraphAddMemcpyNode", "hipGraphAddEmptyNode"} <= set(calls), sorted(calls)
    assert len(calls) > 100, len(calls)
    missing = {f: where for f, where in calls.items() if f not in exported(fake_hip_set.path)}
    assert not missing, (f"the fake HIP ({fake_hip_set.binding}) lacks {len(missing)} function(s) pygraphrt "
                         "calls: " + ", ".join(f"{f} (named in {w})" for f, w in sorted(missing.items())))


def test_stream_query_and_event_timing(fake_hip_set):
    """Stream.query (hipStreamQuery: hipErrorNotReady is False), Event.elapsed_ms
    (hipEventElapsedTime: the fake's clock advances 1.5 ms a record), refusals mapped by name."""
    out = run_hip(fake_hip_set, f"""
        import ctypes
        import pygraphrt as rt
        from pygraphrt import errors
        fake = ctypes.CDLL({str(fake_hip_set.path)!r})
        s = rt.Stream()
        print("idle", s.is_done)
        ctypes.c_int.in_dll(fake, "fake_stream_not_ready").value = 1
        print("busy", s.is_done)
        ctypes.c_int.in_dll(fake, "fake_stream_not_ready").value = 0
        a, b, c = rt.Event(timing=True), rt.Event(timing=True), rt.Event(timing=True)
        for e in (a, b, c):
            s.record(e)
        print("ms", b.elapsed_ms(a), c.elapsed_ms(a))
        untimed = rt.Event()
        s.record(untimed)
        try:
            untimed.elapsed_ms(a)
        except errors.GraphRTError as e:
            print("untimed", type(e).__name__, e.api, e.name)
        with s.capture() as cap:
            try:
                s.is_done
            except errors.GraphRTError as e:
                print("capturing", type(e).__name__, e.name)
    """)
    assert out.splitlines() == ["idle True", "busy False", "ms 1.5 3.0",
                                "untimed InvalidResourceHandle hipEventElapsedTime hipErrorInvalidHandle",
                                "capturing StreamCaptureUnsupported hipErrorStreamCaptureUnsupported"]


def test_graph_memory_attributes_and_trim(fake_hip_set):
    """Device.graph_mem_attribute(s) read each hipGraphMemAttr* as a uint64 (the fake's four
    counters, set here, come back under their names), reset_graph_mem_high_watermarks writes 0 to
    the two high watermarks (the fake then sets them to the current values), graph_mem_trim."""
    out = run_hip(fake_hip_set, f"""
        import ctypes
        import pygraphrt as rt
        fake = ctypes.CDLL({str(fake_hip_set.path)!r})
        counters = (ctypes.c_ulonglong * 4).in_dll(fake, "fake_graph_mem")
        counters[:] = [1 << 33, (1 << 33) + 1, 3 << 40, (3 << 40) + 5]  # used cur/high, reserved cur/high
        dev = rt.current_device()
        print(sorted((a.name, v) for a, v in dev.graph_mem_attributes().items()))
        dev.reset_graph_mem_high_watermarks()
        print(list(counters))
        dev.graph_mem_trim()
        dev.graph_mem_trim()
        print("trims", ctypes.c_int.in_dll(fake, "fake_graph_mem_trims").value)
    """)
    assert out.splitlines() == [
        str(sorted([("USED_MEM_CURRENT", 1 << 33), ("USED_MEM_HIGH", (1 << 33) + 1),
                    ("RESERVED_MEM_CURRENT", 3 << 40), ("RESERVED_MEM_HIGH", (3 << 40) + 5)])),
        str([1 << 33, 1 << 33, 3 << 40, 3 << 40]), "trims 2"]


def test_host_functions_and_capture_into_a_graph(fake_hip_set):
    """Stream.launch_host_func (hipLaunchHostFunc: runs at once, or becomes a host node in a
    capture), capture into an existing graph after given nodes (hipStreamBeginCaptureToGraph) and
    Capture.update_dependencies (hipStreamUpdateCaptureDependencies, add and replace)."""
    out = run_hip(fake_hip_set, """
        import pygraphrt as rt
        from pygraphrt.enums import NodeType
        ran = []
        s = rt.Stream()
        s.launch_host_func(lambda: ran.append("eager"))
        print("eager", ran)
        g = rt.Graph()
        a, b = g.add_empty(), g.add_empty()
        with s.capture(graph=g, dependencies=[a]) as cap:
            s.launch_host_func(lambda: ran.append("captured"))
            cap.update_dependencies([b])
            print("added", [n.type.name for n, _ in cap.info().dependencies])
            cap.update_dependencies([a], replace=True)
            print("set", [n for n, _ in cap.info().dependencies] == [a])
            s.memset(rt.malloc(16), 1, 16)
        nodes = g.nodes()
        host = [n for n in nodes if n.type is NodeType.HOST]
        memset = [n for n in nodes if n.type is NodeType.MEMSET]
        print("graph", len(nodes), len(host), len(memset))
        print("edges", sorted((g.nodes().index(x), g.nodes().index(y)) for x, y, _ in g.edges()))
        exe = g.instantiate()
        exe.launch(s)
        s.synchronize()
        print("ran", ran)
    """)
    assert out.splitlines() == ["eager ['eager']", "added ['HOST', 'EMPTY']", "set True", "graph 4 1 1",
                                "edges [(0, 2), (0, 3)]", "ran ['eager', 'captured']"]


def test_executable_graph_upload_enable_and_setters(fake_hip_set):
    """GraphExec.upload / instantiate(upload_stream=) (hipGraphUpload), set_enabled / is_enabled
    (hipGraphNodeSetEnabled / GetEnabled: a disabled memset writes nothing), and the per-exec
    setters: memset, 1-D memcpy, host, child graph, event record / wait -- each changes what this
    executable graph runs (or uses) and leaves the graph itself as it was."""
    out = run_hip(fake_hip_set, f"""
        import ctypes
        import pygraphrt as rt
        from pygraphrt import errors
        fake = ctypes.CDLL({str(fake_hip_set.path)!r})
        uploads = lambda: ctypes.c_int.in_dll(fake, "fake_graph_uploads").value
        s = rt.Stream()
        buf, src = rt.malloc(16), rt.malloc(16)
        src.copy_from(bytes(range(16)))
        g = rt.Graph()
        ms = g.add_memset(buf, 1, 4)
        mc = g.add_memcpy(buf.ptr + 8, src, 4, dependencies=[ms])
        calls = []
        hn = g.add_host(lambda: calls.append("graph's"))
        child = rt.Graph()
        child.add_memset(buf.ptr + 4, 2, 2)
        cn = g.add_child_graph(child)
        e1, e2 = rt.Event(), rt.Event()
        er, ew = g.add_event_record(e1), g.add_event_wait(e1)
        exe = g.instantiate(upload_stream=s)
        exe.upload(s)
        print("uploads", uploads())
        exe.set_enabled(ms, False)
        print("enabled", exe.is_enabled(ms), exe.is_enabled(mc))
        exe.launch(s)
        print("disabled", buf.to_bytes(16).hex())
        exe.set_enabled(ms, True)
        exe.set_memset(ms, value=7)
        exe.set_memcpy(mc, buf.ptr + 8, src.ptr + 4, 4)
        exe.set_host(hn, lambda: calls.append("exec's"))
        other = rt.Graph()
        other.add_memset(buf.ptr + 4, 3, 2)
        exe.set_child_graph(cn, other)
        try:
            exe.set_child_graph(cn, rt.Graph())
        except errors.InvalidValue as e:
            print("topology", e.api)
        exe.set_event(er, e2)
        exe.set_event(ew, e2)
        exe.launch(s)
        print("set", buf.to_bytes(16).hex(), calls)
        print("graph kept", ms.params["value"], er.params["event"] == int(e1), ew.params["event"] == int(e1))
        try:
            exe.set_enabled(hn, False)
        except errors.InvalidValue as e:
            print("host node", e.api)
    """)
    assert out.splitlines() == [
        "uploads 2", "enabled False True",
        "disabled " + "00000000" + "02020000" + "00010203" + "00000000",  # the memset did not run
        "topology hipGraphExecChildGraphNodeSetParams",
        "set " + "07070707" + "03030000" + "04050607" + "00000000" + " [\"graph's\", \"exec's\"]",
        "graph kept 1 True True", "host node hipGraphNodeSetEnabled"]


def test_hip7_exec_flags_and_generic_exec_setter(fake_hip_set):
    """GraphExec.flags (hipGraphExecGetFlags) and set_node_params (hipGraphExecNodeSetParams):
    HIP 7; on HIP 6.2, which lacks both, refused naming the runtime."""
    out = run_hip(fake_hip_set, """
        import pygraphrt as rt
        from pygraphrt import errors
        from pygraphrt.enums import InstantiateFlags
        buf = rt.malloc(8)
        g = rt.Graph()
        ms = g.add_memset(buf, 1, 8)
        for exe in (g.instantiate(), g.instantiate(auto_free_on_launch=True)):
            try:
                print("flags", [f.name for f in InstantiateFlags if f and f in exe.flags])
            except errors.NotSupported as e:
                print("flags refused", e.api)
        try:
            exe.set_node_params(ms, dst=buf, value=9, count=8)
            s = rt.Stream()
            exe.launch(s)
            print("generic", buf.to_bytes(8).hex(), ms.params["value"])
        except errors.NotSupported as e:
            print("generic refused", e.api)
    """)
    if fake_hip_set.hip7:
        assert out.splitlines() == ["flags []", "flags ['AUTO_FREE_ON_LAUNCH']",
                                    "generic " + "09" * 8 + " 1"]
    else:
        assert out.splitlines() == ["flags refused hipGraphExecGetFlags", "flags refused hipGraphExecGetFlags",
                                    "generic refused hipGraphExecNodeSetParams"]


def test_external_semaphores(fake_hip_set):
    """ExternalSemaphore (hipImportExternalSemaphore / hipDestroyExternalSemaphore), a stream's
    signal and wait (hipSignal/WaitExternalSemaphoresAsync: the fence value arrives where HIP's
    struct keeps it), captured into nodes of HIP's semaphore node types, and the graph's own
    signal / wait nodes (hipGraphAddExternalSemaphores{Signal,Wait}Node)."""
    out = run_hip(fake_hip_set, f"""
        import ctypes
        import pygraphrt as rt
        from pygraphrt import errors
        from pygraphrt.extsem import SemaphoreSignal, SemaphoreWait
        fake = ctypes.CDLL({str(fake_hip_set.path)!r})
        fake.fake_semaphore_value.restype = ctypes.c_ulonglong
        fake.fake_semaphore_value.argtypes = [ctypes.c_void_p]
        sem = rt.ExternalSemaphore("opaque_fd", fd=7)
        value = lambda: fake.fake_semaphore_value(int(sem))
        s = rt.Stream()
        s.signal_external_semaphores([SemaphoreSignal(sem, value=41)])
        print("signalled", value())
        s.wait_external_semaphores([SemaphoreWait(sem, value=41)])
        try:
            s.wait_external_semaphores([SemaphoreWait(sem, value=42)])
        except errors.GraphRTError as e:
            print("not yet", type(e).__name__, e.api)
        with s.capture() as cap:
            s.signal_external_semaphores([SemaphoreSignal(sem, value=50)])
            s.wait_external_semaphores([SemaphoreWait(sem, value=50)])
        print("captured", [n.type.name for n in cap.graph.nodes()], value())
        g = rt.Graph()
        sig = g.add_external_semaphore_signal([SemaphoreSignal(sem, value=60)])
        wait = g.add_external_semaphore_wait([SemaphoreWait(sem, value=60)], dependencies=[sig])
        print("nodes", sig.type.name, wait.type.name, len(g.edges()))
        sem.close()
        print("closed", sem.is_valid)
    """)
    assert out.splitlines() == ["signalled 41", "not yet NotReady hipWaitExternalSemaphoresAsync",
                                "captured ['EXT_SEMAS_SIGNAL', 'EXT_SEMAS_WAIT'] 41",
                                "nodes EXT_SEMAS_SIGNAL EXT_SEMAS_WAIT 1", "closed False"]


def test_instantiate_forms_pygraphrt_names(fake_hip_set):
    """hipGraphInstantiate and hipGraphInstantiateWithParams, which pygraphrt names (its error
    labels, the instantiate_with_params capability) without calling on HIP, through the raw layer:
    the executable graph they make runs, and WithParams reports its result and uploads."""
    out = run_hip(fake_hip_set, f"""
        import ctypes
        import pygraphrt as rt
        from pygraphrt import lowlevel
        ffi, lib = lowlevel.ffi, lowlevel.lib
        fake = ctypes.CDLL({str(fake_hip_set.path)!r})
        buf = rt.malloc(4)
        g = rt.Graph()
        g.add_memset(buf, 5, 4)
        exe, err = ffi.new("hipGraphExec_t *"), ffi.new("hipGraphNode_t *")
        log = ffi.new("char[]", b"x" * 8)
        lowlevel.check(lib.hipGraphInstantiate(exe, g.handle, err, log, 8), "hipGraphInstantiate")
        lowlevel.check(lib.hipGraphLaunch(exe[0], ffi.NULL), "hipGraphLaunch")
        print("plain", buf.to_bytes(4).hex(), err[0] == ffi.NULL, ffi.string(log) == b"")
        p = ffi.new("hipGraphInstantiateParams *")
        p.flags = lib.hipGraphInstantiateFlagUpload
        s = rt.Stream()
        p.uploadStream = s.handle
        before = ctypes.c_int.in_dll(fake, "fake_graph_uploads").value
        lowlevel.check(lib.hipGraphInstantiateWithParams(exe, g.handle, p), "hipGraphInstantiateWithParams")
        print("params", p.result_out == lib.hipGraphInstantiateSuccess, p.errNode_out == ffi.NULL,
              ctypes.c_int.in_dll(fake, "fake_graph_uploads").value - before)
        print("capability", rt.capabilities().instantiate_with_params)
    """)
    assert out.splitlines() == ["plain 05050505 True True", "params True True 1", "capability True"]
