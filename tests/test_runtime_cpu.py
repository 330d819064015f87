"""Runtime core without a GPU: loading, selection, errors, vendor tables, raw layer."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pygraphrt import errors
from pygraphrt._vendors import CudaVendor, HipVendor
from pygraphrt.enums import (CaptureMode, CaptureStatus, DebugDotFlags, DependencyType, EdgeData,
                             GraphMemAttr, InstantiateFlags, NodeType, UpdateResult)

REPO = Path(__file__).resolve().parent.parent
CUDA12_LIB = REPO / ".cache" / "headers" / "nvidia-cuda-runtime-cu12" / "lib" / "libcudart.so.12"
CUDA13_LIB = REPO / ".cache" / "headers" / "nvidia-cuda-runtime" / "lib" / "libcudart.so.13"


def vendor(binding: str):
    pkg = importlib.import_module(f"pygraphrt._bindings.{binding}")
    symbols = importlib.import_module(f"pygraphrt._bindings.{binding}.symbols")
    cls = HipVendor if binding.startswith("hip") else CudaVendor
    # dlopen(None): the process itself.  Enum constants resolve without the
    # vendor library; functions do not (and are not needed here).
    ops = cls(pkg.ffi, pkg.ffi.dlopen(None), binding, symbols)
    ops.enums = importlib.import_module(f"pygraphrt._bindings.{binding}.enums")
    return ops


def _pythonpath() -> str:
    # this checkout first, then what the environment had (the GPU machine's wheels, cffi among
    # them, come through PYTHONPATH)
    return os.pathsep.join([str(REPO)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))


def run_py(code: str, **env: str) -> subprocess.CompletedProcess:
    e = dict(os.environ, PYTHONPATH=_pythonpath(), **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=e, cwd=str(REPO), timeout=120)


# -- vendor tables -------------------------------------------------------------
@pytest.mark.parametrize("binding", ["cuda12", "cuda13", "hip6", "hip7"])
def test_every_table_entry_names_a_member_of_the_binding(binding):
    ops = vendor(binding)
    err_enum = getattr(ops.enums, ops.error_enum)
    members = {m.name for m in err_enum}
    assert set(ops.error_classes) <= members | {"hipErrorMemoryAllocation", "hipErrorInitializationError",
                                                "hipErrorInvalidResourceHandle"}
    for name in ops.error_classes.values():
        assert issubclass(getattr(errors, name), errors.GraphRTError)
    newer = {"cuda12": {"cudaGraphNodeTypeMemcpyBatch"},  # CUDA 13.5's, not 12.9's
             "hip6": {"hipGraphNodeTypeBatchMemOp"}}.get(binding, set())  # HIP 7's, not 6.2's
    for table in (ops.node_types, ops.capture_modes, ops.capture_statuses, ops.instantiate_flags,
                  ops.update_results, ops.graph_mem_attrs, ops.debug_dot_flags):
        for neutral, member in table.items():
            assert hasattr(ops.lib, member) or member in newer, f"{binding}: {member} ({neutral}) missing"


def test_node_type_values_differ_where_the_vendors_do():
    cuda, hip = vendor("cuda13"), vendor("hip7")
    assert cuda.node_type_of[13] is NodeType.CONDITIONAL
    assert hip.node_type_of[12] is NodeType.MEMCPY_FROM_SYMBOL
    assert hip.node_type_of[13] is NodeType.MEMCPY_TO_SYMBOL
    assert hip.node_type_of[14] is NodeType.BATCH_MEM_OP
    for v in range(12):
        assert cuda.node_type_of[v] is hip.node_type_of[v]
    with pytest.raises(errors.NotSupported, match="no hip equivalent"):
        hip.value(hip.node_types, NodeType.CONDITIONAL, "x")
    with pytest.raises(errors.NotSupported):
        hip.value(hip.update_results, UpdateResult.ATTRIBUTES_CHANGED, "x")
    assert cuda.update_result_of[8] is UpdateResult.ATTRIBUTES_CHANGED


@pytest.mark.parametrize("binding", ["cuda12", "cuda13", "hip6", "hip7"])
def test_neutral_enums_map_to_the_documented_values(binding):
    ops = vendor(binding)
    assert [ops.value(ops.capture_modes, m, "") for m in CaptureMode] == [0, 1, 2]
    assert [ops.value(ops.capture_statuses, m, "") for m in CaptureStatus] == [0, 1, 2]
    assert [ops.value(ops.graph_mem_attrs, m, "") for m in GraphMemAttr] == [0, 1, 2, 3]
    for flag in (InstantiateFlags.AUTO_FREE_ON_LAUNCH, InstantiateFlags.UPLOAD,
                 InstantiateFlags.DEVICE_LAUNCH, InstantiateFlags.USE_NODE_PRIORITY):
        assert ops.value(ops.instantiate_flags, flag, "") == int(flag)
    assert ops.value(ops.debug_dot_flags, DebugDotFlags.VERBOSE, "") == 1


@pytest.mark.parametrize("binding,expected", [
    ("cuda13", "0102010000000000"),  # from_port, to_port, type, reserved[5]
    ("cuda12", "0102010000000000"),
    ("hip7", "0100000000000201"),    # from_port, reserved[5], to_port, type
    ("hip6", "0100000000000201"),
])
def test_edge_data_bytes_per_vendor(binding, expected):
    ops = vendor(binding)
    arr = ops._edge_array([EdgeData(1, 2, DependencyType.PROGRAMMATIC)])
    assert bytes(ops.ffi.buffer(arr, 8)).hex() == expected
    assert ops._edges_from(arr, 1) == [EdgeData(1, 2, DependencyType.PROGRAMMATIC)]


def test_edge_data_validation():
    with pytest.raises(ValueError):
        EdgeData(from_port=256)
    with pytest.raises(ValueError):
        EdgeData(type=-1)
    assert EdgeData().is_default and not EdgeData(1).is_default


def test_hip_refuses_non_default_edge_data_naming_the_feature():
    ops = vendor("hip7")
    assert not ops.has_edge_data
    with pytest.raises(errors.NotSupported, match="edge data is not supported by the hip"):
        ops.require_default_edges([EdgeData(1, 0, DependencyType.PROGRAMMATIC)], "hipGraphAddDependencies")
    ops.require_default_edges([EdgeData()], "hipGraphAddDependencies")  # default edges are fine


# -- errors ----------------------------------------------------------------------
@pytest.mark.parametrize("binding", ["cuda12", "cuda13"])
def test_cuda_error_classes(binding):
    ops = vendor(binding)
    E = ops.enums.cudaError_t
    cases = {
        E.cudaErrorInvalidValue: errors.InvalidValue, E.cudaErrorMemoryAllocation: errors.OutOfMemory,
        E.cudaErrorNoDevice: errors.NoDevice, E.cudaErrorInsufficientDriver: errors.InsufficientDriver,
        E.cudaErrorLossyQuery: errors.LossyQuery, E.cudaErrorNotPermitted: errors.NotPermitted,
        E.cudaErrorStreamCaptureInvalidated: errors.StreamCaptureInvalidated,
        E.cudaErrorStreamCaptureWrongThread: errors.StreamCaptureWrongThread,
        E.cudaErrorCapturedEvent: errors.CapturedEvent,
        E.cudaErrorGraphExecUpdateFailure: errors.GraphExecUpdateFailure,
        E.cudaErrorInvalidResourceHandle: errors.InvalidResourceHandle,
    }
    for code, cls in cases.items():
        err = ops.error(int(code), "cudaSomething")
        assert type(err) is cls and err.code == int(code) and err.name == code.name
        assert err.api == "cudaSomething" and err.vendor == "cuda"
        assert isinstance(err, errors.GraphRTError)
    sticky = ops.error(int(E.cudaErrorIllegalAddress), "cudaStreamSynchronize")
    assert sticky.sticky and "sticky" in str(sticky)


def test_colliding_codes_911_912_mean_different_things():
    cuda, hip = vendor("cuda13"), vendor("hip7")
    assert cuda.error(911, "x").name == "cudaErrorExternalDevice"
    assert hip.error(911, "x").name == "hipErrorInvalidChannelDescriptor"
    assert cuda.error(912, "x").name == "cudaErrorInvalidClusterSize"
    assert hip.error(912, "x").name == "hipErrorInvalidTexture"
    assert type(hip.error(int(hip.enums.hipError_t.hipErrorInvalidHandle), "x")) is errors.InvalidResourceHandle
    assert type(hip.error(int(hip.enums.hipError_t.hipErrorOutOfMemory), "x")) is errors.OutOfMemory


def test_unknown_code_keeps_number_and_a_name():
    err = vendor("hip7").error(424242, "hipFoo")
    assert type(err) is errors.GraphRTError and err.code == 424242 and err.name == "hipError424242"


def test_errors_pickle():
    import pickle

    e = vendor("cuda13").error(1, "cudaGraphLaunch")
    e2 = pickle.loads(pickle.dumps(e))
    assert type(e2) is errors.InvalidValue and e2.api == "cudaGraphLaunch" and e2.code == 1


def test_errors_take_notes_on_every_python():
    # Graph.add_nodes adds a note saying which spec failed; Python 3.10 has no add_note of its
    # own (PEP 678 is 3.11): GraphRTError keeps the note as 3.11 does, and in the message.
    e = vendor("cuda13").error(1, "cudaGraphAddEmptyNode")
    first = str(e)
    e.add_note("(spec 3)")
    e.add_note("(and another)")
    assert e.__notes__ == ["(spec 3)", "(and another)"]
    if sys.version_info < (3, 11):
        assert str(e) == first + "\n(spec 3)\n(and another)"
    else:
        assert str(e) == first  # 3.11+ prints notes after the message itself
    with pytest.raises(TypeError, match="note must be a str"):
        e.add_note(3)


# -- loading and selection (subprocesses: each gets a fresh backend) -------------
def test_import_is_lazy():
    r = run_py("""
        import sys, pygraphrt
        assert not any(m.startswith(('pygraphrt._runtime', 'pygraphrt._bindings', '_cffi_backend'))
                       for m in sys.modules), sorted(m for m in sys.modules if 'pygraphrt' in m)
        print('lazy')
    """)
    assert r.returncode == 0 and "lazy" in r.stdout, r.stderr


@pytest.mark.headers  # uses the runtime libraries of the pinned wheels
@pytest.mark.parametrize("lib,binding", [(CUDA13_LIB, "cuda13"), (CUDA12_LIB, "cuda12")])
def test_real_cudart_without_driver(lib, binding):
    if not lib.exists():
        pytest.fail(f"{lib} missing: run `python -m bindgen fetch`")
    r = run_py("""
        import json, pygraphrt
        from pygraphrt import errors
        b = pygraphrt.use("cuda")
        out = {"binding": b.binding, "path": b.path}
        try:
            pygraphrt.Stream()
            out["error"] = None
        except errors.GraphRTError as e:
            out.update(error=type(e).__name__, api=e.api, name=e.name)
        print(json.dumps(out))
    """, PYGRAPHRT_CUDART=str(lib), CUDA_VISIBLE_DEVICES="")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["binding"] == binding and out["path"] == str(lib)
    if out["error"] is not None:  # no driver here (CI); a GPU machine would succeed
        assert out["error"] in ("InsufficientDriver", "NoDevice")
        assert out["api"] == "cudaStreamCreateWithPriority" and out["name"].startswith("cudaError")


def test_unsupported_runtime_version_is_a_clear_error(tmp_path):
    src = tmp_path / "fake.c"
    src.write_text("int cudaRuntimeGetVersion(int *v) { *v = 11080; return 0; }\n")
    lib = tmp_path / "libcudart.so.11"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    r = run_py("""
        import pygraphrt
        from pygraphrt import errors
        try:
            pygraphrt.use("cuda")
        except errors.BackendError as e:
            print("ERR", e)
    """, PYGRAPHRT_CUDART=str(lib))
    assert "ERR" in r.stdout, r.stderr
    assert str(lib) in r.stdout and "11.8" in r.stdout and "cuda 12.x, cuda 13.x" in r.stdout


def test_missing_hip_library_is_a_clear_error():
    r = run_py("""
        import pygraphrt
        from pygraphrt import errors
        try:
            pygraphrt.use("hip")
        except errors.BackendError as e:
            print("ERR", e)
    """, PYGRAPHRT_HIP_LIB="/nonexistent/libamdhip64.so")
    assert "ERR no hip runtime library could be loaded" in r.stdout
    assert "/nonexistent/libamdhip64.so (PYGRAPHRT_HIP_LIB): no such file" in r.stdout


@pytest.mark.headers
def test_unknown_backend_and_switching_with_live_objects():
    r = run_py("""
        import pygraphrt
        from pygraphrt import errors, _runtime
        for bad in ("opencl", ""):
            try:
                pygraphrt.use(bad)
            except errors.BackendError as e:
                print("BAD", e)
        b = pygraphrt.use("cuda")
        class Thing: pass
        t = Thing()
        b.live.add(t)
        try:
            pygraphrt.use("hip")
        except errors.BackendError as e:
            print("SWITCH", e)
        assert pygraphrt.use("cuda") is b
        assert pygraphrt.use("auto") is b   # auto picks the active vendor: no switch, no refusal
        del t
        import gc; gc.collect()
        print("LIVE", len(b.live))
    """, PYGRAPHRT_CUDART=str(CUDA13_LIB))
    assert r.stdout.count("BAD unknown backend") == 2, r.stdout + r.stderr
    assert "SWITCH" in r.stdout and "still alive" in r.stdout
    assert "LIVE 0" in r.stdout


@pytest.mark.headers
def test_backend_env_var_and_lowlevel_roundtrip():
    r = run_py("""
        import pygraphrt
        from pygraphrt import lowlevel
        info = pygraphrt.backend()
        print("VENDOR", info.vendor, info.binding)
        h = lowlevel.int_to_handle(0x1234, "cudaStream_t")
        print("INT", hex(lowlevel.handle_to_int(h)))
        print("MANIFEST", len(lowlevel.manifest()["functions"]) > 300)
        print("SYM", lowlevel.lib.cudaGraphLaunch is not None)
    """, PYGRAPHRT_BACKEND="cuda", PYGRAPHRT_CUDART=str(CUDA12_LIB))
    assert "VENDOR cuda cuda12" in r.stdout, r.stderr
    assert "INT 0x1234" in r.stdout and "MANIFEST True" in r.stdout and "SYM True" in r.stdout


@pytest.mark.headers
def test_info_exits_zero_and_says_what_it_found():
    """``info --verbose`` is the full report, each library tried listed once; plain ``info``
    says first, in one line, that there is no GPU and why (on this GPU-less machine)."""
    env = dict(os.environ, PYTHONPATH=_pythonpath(), PYGRAPHRT_CUDART=str(CUDA13_LIB))
    env.pop("PYGRAPHRT_BACKEND", None)
    r = subprocess.run([sys.executable, "-m", "pygraphrt", "info", "--verbose"], capture_output=True,
                       text=True, env=env, cwd=str(REPO), timeout=120)
    assert r.returncode == 0, r.stderr
    assert "active backend: cuda (binding cuda13)" in r.stdout
    assert "capabilities:" in r.stdout and "libraries tried:" in r.stdout
    if "hip: not available" in r.stdout:  # each failed HIP load is reported once, not twice
        lines = r.stdout.splitlines()
        tried = [line for line in lines if "[hip]" in line]
        assert tried and [line for line in lines if "libamdhip64" in line] == tried, r.stdout
    print(r.stdout)
    short = subprocess.run([sys.executable, "-m", "pygraphrt", "info"], capture_output=True, text=True,
                           env=env, cwd=str(REPO), timeout=120)
    assert short.returncode == 0, short.stderr
    lines = short.stdout.splitlines()
    if "devices: none" in r.stdout:  # no GPU here
        assert lines[0].startswith("no GPU: running on the simulator (CUDA 13.5 runtime but no"), lines
    assert len(lines) == 2 and "info --verbose" in lines[1], lines


@pytest.mark.headers
def test_capabilities_table_for_each_binding():
    r = run_py("""
        import pygraphrt
        c = pygraphrt.capabilities()
        print(c.binding, c.edge_data, c.conditional_nodes, c.exec_update_result_info)
    """, PYGRAPHRT_CUDART=str(CUDA12_LIB))
    assert r.stdout.strip() == "cuda12 True True True", r.stderr


@pytest.mark.headers
@pytest.mark.parametrize("lib,binding,form", [(CUDA13_LIB, "cuda13", "cudaGraphAddNode"),
                                              (CUDA12_LIB, "cuda12", "cudaGraphAddNode_v2")])
def test_generic_add_node_form_per_binding(lib, binding, form):
    pkg = importlib.import_module(f"pygraphrt._bindings.{binding}")
    symbols = importlib.import_module(f"pygraphrt._bindings.{binding}.symbols")
    ops = CudaVendor(pkg.ffi, pkg.ffi.dlopen(str(lib)), binding, symbols)
    assert ops.generic_add == (form, True)  # both take edge data at creation
    assert ops.has_edge_data


# -- operands: DLPack ------------------------------------------------------------
class _ScribblingDLPack:
    """A DLPack producer on device type 2 (CUDA) of ``shape`` float64 at ``data`` + ``offset``, whose
    capsule's destructor scribbles over the tensor, as a producer freeing it would: an address or
    extent read after the capsule is gone comes out wrong."""

    def __init__(self, data: int, offset: int, shape: tuple[int, ...], strides: tuple[int, ...] | None) -> None:
        import ctypes

        class Device(ctypes.Structure):
            _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]

        class DataType(ctypes.Structure):
            _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]

        class Tensor(ctypes.Structure):
            _fields_ = [("data", ctypes.c_void_p), ("device", Device), ("ndim", ctypes.c_int),
                        ("dtype", DataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                        ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]

        class Managed(ctypes.Structure):
            _fields_ = [("dl_tensor", Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]

        self._ct, self._Managed = ctypes, Managed
        self._args = (data, offset, shape, strides)
        self._keep: list = []  # every tensor made (scribbled, never freed: the test process owns them)
        api = ctypes.PyDLL(None)  # its own function objects: pygraphrt sets pythonapi's argtypes
        self._new = api.PyCapsule_New
        self._new.restype, self._new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        get = api.PyCapsule_GetPointer
        get.restype, get.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_char_p]
        valid = api.PyCapsule_IsValid
        valid.restype, valid.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p]

        def scribble(capsule: int) -> None:  # a raw pointer: the capsule is being destroyed
            if valid(capsule, b"dltensor"):
                t = Managed.from_address(get(capsule, b"dltensor")).dl_tensor
                t.data, t.byte_offset, t.ndim = None, 0, 0
                t.dtype.bits = 0

        self._destructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(scribble)

    def __dlpack_device__(self) -> tuple[int, int]:
        return 2, 0

    def __dlpack__(self, **kw):
        ct = self._ct
        data, offset, shape, strides = self._args
        m = self._Managed()
        sh = (ct.c_int64 * len(shape))(*shape)
        st = (ct.c_int64 * len(shape))(*strides) if strides else None
        m.dl_tensor.data, m.dl_tensor.byte_offset, m.dl_tensor.ndim = data, offset, len(shape)
        m.dl_tensor.device.device_type, m.dl_tensor.dtype.code, m.dl_tensor.dtype.bits = 2, 2, 64
        m.dl_tensor.dtype.lanes = 1
        m.dl_tensor.shape = sh
        m.dl_tensor.strides = st if st is not None else None
        self._keep.append((m, sh, st))
        return self._new(ct.addressof(m), b"dltensor", ct.cast(self._destructor, ct.c_void_p))


def test_a_dlpack_producers_tensor_is_read_while_its_capsule_lives():
    from pygraphrt import _operands

    rows = _ScribblingDLPack(0x10000, 64, (2, 8), None)  # rows 1-2 of a (4, 8) float64 array
    assert _operands.array_address(rows) == 0x10000 + 64
    assert _operands.extent(rows) == (0x10000 + 64, 128)
    column = _ScribblingDLPack(0x20000, 8, (4,), (8,))  # column 1 of the same: a stride of 8 elements
    assert _operands.extent(column) == (0x20000 + 8, 3 * 64 + 8)
