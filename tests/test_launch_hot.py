"""The hot path of a plain kernel launch (pygraphrt.kernels._hot), without a GPU.

* On the simulator, with the vendor's launch function replaced by a recorder: the values
  that reach the launch, and that every unusual call still takes the checked path (errors
  naming the parameter), the launch's own errors, the vendor's retry, capture retention; and
  the kernel-node counterpart, Graph.add_kernel's reused parameter structs, from threads.
* The compiled one-call launch (``_pgr_launch_packed`` of a built fast-path extension) with a
  C callback as the launch function: the argument array it builds.
* End to end through the do-nothing libcudart of benchmarks/ (pinned headers), in both modes:
  a library kernel launched as it is (CUkernel), the runtime's launch where the driver finds
  no context.
"""

from __future__ import annotations

import collections
import ctypes
import struct
import subprocess
import sys
import textwrap
import threading
import types
from pathlib import Path

import pytest

import pygraphrt as rt
from pygraphrt import errors, sim
from pygraphrt._vendors.base import LaunchEntry

from .backends import selected

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def backend():
    with selected("sim") as b:
        sim.register_kernel("hot3", lambda ctx, y, n, v: None, signature="float *y, int n, float v")
        try:
            yield b
        finally:
            sim.unregister_kernel("hot3")


class Recorder:
    """A launch function in cuLaunchKernel's shape that decodes what it is given."""

    def __init__(self, ffi, sizes, rc=0):
        self.ffi, self.sizes, self.rc, self.calls = ffi, sizes, rc, []

    def __call__(self, f, gx, gy, gz, bx, by, bz, smem, stream, argv, extra):
        ffi = self.ffi
        arr = ffi.cast("void **", argv)
        blobs = [bytes(ffi.buffer(ffi.cast("char *", arr[i]), n)) for i, n in enumerate(self.sizes)]
        self.calls.append(((gx, gy, gz), (bx, by, bz), smem, blobs))
        return self.rc


@pytest.fixture
def hot(backend, monkeypatch):
    """(kernel, stream, recorder, buffer) with the hot path on, through the recorder."""
    ops = backend.ops
    rec = Recorder(backend.ffi, (8, 4, 4))
    errs = []

    def entry(func, form):
        return LaunchEntry(rec, 0, func, lambda rc: (errs.append(rc), errors.InvalidValue("fakeLaunch", rc))[1],
                           retry=77)

    monkeypatch.setattr(ops, "launch_entry", entry, raising=False)
    k = rt.Program('extern "C" __global__ void hot3(float *y, int n, float v) {}').kernel(
        "hot3", signature="float *y, int n, float v")
    s = rt.Stream()
    buf = rt.malloc(64)
    s.launch(k, 1, 1, buf, 1, 1.0)  # the first launch: the general path, which checks the signature
    assert k._hot and k._hot.mode == "ffi" and not rec.calls
    yield k, s, rec, buf
    s.synchronize()


def test_values_reach_the_launch(hot):
    k, s, rec, buf = hot
    s.launch(k, 3, 64, buf, 7, 2.5)
    k.launch(s, (2, 3), (4, 5, 6), buf.ptr, -1, 3, shared_mem=128)
    assert rec.calls == [
        ((3, 1, 1), (64, 1, 1), 0, [struct.pack("<Q", buf.ptr), struct.pack("<i", 7), struct.pack("<f", 2.5)]),
        ((2, 3, 1), (4, 5, 6), 128, [struct.pack("<Q", buf.ptr), struct.pack("<i", -1), struct.pack("<f", 3.0)]),
    ]


@pytest.mark.parametrize("args, match", [
    ((1.5, 1, 1.0), "argument 0"),             # a float where a pointer is declared
    ((True, 1, 1.0), "argument 0"),
    ((-1, 1, 1.0), "argument 0"),              # an address out of range
    ((0, 1.5, 1.0), "argument 1"),             # a float for an int
    ((0, 1 << 31, 1.0), "argument 1"),         # does not fit in int
    ((0, True, 1.0), "argument 1"),
    ((0, 1, "x"), "argument 2"),
    ((0, 1, 1e39), "argument 2"),              # overflows float
    ((0, 1), "takes 3 arguments"),
])
def test_bad_arguments_take_the_checked_path(hot, args, match):
    k, s, rec, _ = hot
    with pytest.raises(errors.InvalidValue, match=match):
        s.launch(k, 1, 1, *args)
    assert not rec.calls


@pytest.mark.parametrize("grid, block, smem", [(0, 1, 0), (1, 0, 0), (1 << 32, 1, 0), ((1, 0), 1, 0),
                                               (1.0, 1, 0), (1, 1, -1), (1, 1, 1.0), (1, 1, 1 << 32)])
def test_bad_dims_and_shared_memory(hot, grid, block, smem):
    k, s, rec, buf = hot
    with pytest.raises(errors.InvalidValue):
        s.launch(k, grid, block, buf, 1, 1.0, shared_mem=smem)
    assert not rec.calls


def test_closed_objects_and_other_kinds(hot):
    k, s, rec, buf = hot
    other = rt.malloc(8)
    other.close()
    with pytest.raises(errors.InvalidResourceHandle):
        s.launch(k, 1, 1, other, 1, 1.0)
    view = types.SimpleNamespace(__cuda_array_interface__={"data": (buf.ptr + 8, False), "shape": (4,),
                                                           "typestr": "<f4", "version": 3})
    s.launch(k, 1, 1, view, 1, 1)  # any device array; an int for a float parameter
    s.launch(k, 1, 1, None, 1, 1.0)
    assert [c[3][0] for c in rec.calls] == [struct.pack("<Q", buf.ptr + 8), struct.pack("<Q", 0)]
    closed = rt.Stream()
    closed.close()
    with pytest.raises(errors.InvalidResourceHandle):
        k.launch(closed, 1, 1, buf, 1, 1.0)


def test_launch_errors_and_retry(hot, backend, monkeypatch):
    k, s, rec, buf = hot
    rec.rc = 5
    with pytest.raises(errors.InvalidValue, match="fakeLaunch"):
        s.launch(k, 1, 1, buf, 1, 1.0)
    rec.rc = 77  # the vendor's retry code: the launch is made again by kernel_launcher
    again = []
    monkeypatch.setattr(k, "_launcher", lambda *a: again.append(a))
    s.launch(k, 1, 1, buf, 2, 1.0)
    assert len(again) == 1 and again[0][:3] == ((1, 1, 1), (1, 1, 1), 0)


def test_capture_keeps_buffers_and_library(hot):
    k, s, rec, buf = hot
    other = rt.malloc(8)
    cap = types.SimpleNamespace(_keep=[])
    s._capture = cap
    try:
        s.launch(k, 1, 1, buf, 1, 1.0)
        s.launch(k, 1, 1, 1234, 1, 1.0)  # an address: nothing more to keep
        s.launch(k, 1, 1, buf, 2, 1.0)  # the same objects again: kept once (a window of entries)
        s.launch(k, 1, 1, other, 2, 1.0)
    finally:
        s._capture = None
    assert cap._keep == [buf, k._owner, other]
    assert len(rec.calls) == 4


def test_threads_share_a_kernel(hot):
    k, s, rec, buf = hot

    def run(i):
        for j in range(200):
            s.launch(k, 1, 1, buf, i * 1000 + j, 1.0)

    ts = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    got = sorted(struct.unpack("<i", c[3][1])[0] for c in rec.calls)
    assert got == sorted(i * 1000 + j for i in range(4) for j in range(200))


def test_threads_add_kernel_nodes_of_their_own_shapes(backend):
    """Graph.add_kernel's Python path reuses a kernel's parameter structs (one per concurrent
    caller), writing a struct's launch shape only when it changes: threads adding nodes of
    shapes of their own, changing from node to node, each get theirs."""
    from pygraphrt.graph import KernelNode

    k = rt.Program('extern "C" __global__ void hot3(float *y, int n, float v) {}').kernel(
        "hot3", signature="float *y, int n, float v")
    buf = rt.malloc(64)
    graphs = [rt.Graph() for _ in range(4)]

    def shape(i, j):
        return (i + 1, 1, 1), (32 * (j % 3 + 1), 1, 1), 8 * i + j % 2

    def run(i):
        g = graphs[i]
        prev = g.add_empty()
        for j in range(150):
            grid, block, smem = shape(i, j)
            prev = g.add_kernel(k, grid[0], block[0], (buf, i * 1000 + j, 0.5), shared_mem=smem,
                                dependencies=[prev])

    ts = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for i, g in enumerate(graphs):
        got = sorted((n.params["args"][1], tuple(n.params["grid"]), tuple(n.params["block"]),
                      n.params["shared_mem_bytes"]) for n in g.nodes() if isinstance(n, KernelNode))
        assert got == sorted((i * 1000 + j, *shape(i, j)) for j in range(150))
        g.close()


def _node_view(node):
    p = node.params
    return (tuple(p["grid"]), tuple(p["block"]), p["shared_mem_bytes"], list(p["args"]),
            sorted(id(d) for d, _ in node.dependencies))


def _outcome(fn):
    try:
        return fn()
    except errors.GraphRTError as exc:
        return f"{type(exc).__name__}: {exc}"


def test_kernel_nodes_hot_adder_agrees_with_the_general_path(backend):
    """Where C does not make kernel nodes (here the simulator; ABI mode), a kernel's later nodes
    go to its generated adder (graph._kernel.build_adder): for every call, usual or not, the
    node (launch shape, argument values, dependencies) or the error is what the general path
    gives, and the adder hands only the unusual calls to it."""
    from pygraphrt.graph import _kernel

    src = 'extern "C" __global__ void hot3(float *y, int n, float v) {}'
    sig = "float *y, int n, float v"
    hot_k = rt.Program(src).kernel("hot3", signature=sig)
    plain_k = rt.Program(src).kernel("hot3", signature=sig)
    buf, other_buf = rt.malloc(64), rt.malloc(64)
    g, other = rt.Graph(), rt.Graph()
    root, second, foreign = g.add_empty(), g.add_empty(), other.add_empty()
    dead = g.add_empty()
    dead.destroy()
    exe = g.instantiate()  # has _graph (this graph) and _handle, and is no node
    hot_k_first = g.add_kernel(hot_k, 1, 32, [buf, 1, 1.0])
    plain_k_first = g.add_kernel(plain_k, 1, 32, [buf, 1, 1.0])
    hot = hot_k._node_hot
    assert hot and "pack_into(scratch[0], 0, p0, a1, a2)" in hot.source
    plain_k._node_hot = False  # the general path throughout
    slow_calls = []
    general = hot.__globals__["slow"]
    hot.__globals__["slow"] = lambda *a: (slow_calls.append(a[4]), general(*a))[1]
    # (label, grid, block, args, shared_mem, dependencies, taken by the adder itself)
    cases = [
        ("ints", 2, 64, (0x1000, 5, 2), 0, [root], True),
        ("buffer and list", 3, 32, [buf, -7, 0.25], 16, [second], True),
        ("no dependencies", 3, 32, (buf, 0, 1.5), 16, None, True),
        ("empty dependencies", 3, 32, (buf, 0, 1.5), 16, (), True),
        ("two dependencies", 1, 1, (buf, 1, 1.0), 0, [root, second], True),
        ("null pointer", 1, 1, (None, 1, 1.0), 0, [root], True),
        ("dims as tuples", (2, 2), (8, 4, 2), (buf, 1, 1.0), 0, [root], False),
        ("a generator of dependencies", 1, 1, (buf, 1, 1.0), 0, iter([root]), False),
        ("int too large", 1, 1, (buf, 1 << 31, 1.0), 0, [root], False),
        ("a bool", 1, 1, (buf, True, 1.0), 0, [root], False),
        ("a str for a float", 1, 1, (buf, 1, "x"), 0, [root], False),
        ("too few", 1, 1, (buf, 1), 0, [root], False),
        ("a str for args", 1, 1, "abc", 0, [root], False),
        ("grid 0", 0, 1, (buf, 1, 1.0), 0, [root], False),
        ("block 2**32", 1, 1 << 32, (buf, 1, 1.0), 0, [root], False),
        ("shared memory 2**32", 1, 1, (buf, 1, 1.0), 1 << 32, [root], False),
        ("shared memory -1", 1, 1, (buf, 1, 1.0), -1, [root], False),
        ("another graph's node", 1, 1, (buf, 1, 1.0), 0, [foreign], False),
        ("another graph's node among two", 1, 1, (buf, 1, 1.0), 0, [root, foreign], True),
        ("not a node", 1, 1, (buf, 1, 1.0), 0, ["root"], False),
        ("an executable graph of this graph", 1, 1, (buf, 1, 1.0), 0, [exe], False),
        ("a destroyed node", 1, 1, (buf, 1, 1.0), 0, [dead], False),
        ("a deque of one", 1, 1, (buf, 1, 1.0), 0, collections.deque([root]), True),
        ("a set of one", 1, 1, (buf, 1, 1.0), 0, {root}, False),
        ("a closed buffer", 1, 1, (other_buf, 1, 1.0), 0, [root], False),
        ("back to ints", 2, 64, (0x1000, 5, 2), 0, [root], True),
    ]
    for label, grid, block, args, smem, deps, taken in cases:
        if label == "a closed buffer":
            other_buf.close()
        seen = len(slow_calls)
        a = _outcome(lambda: _node_view(g.add_kernel(hot_k, grid, block, args, shared_mem=smem,
                                                     dependencies=deps if not hasattr(deps, "__next__")
                                                     else iter([root]))))
        b = _outcome(lambda: _node_view(g.add_kernel(plain_k, grid, block, args, shared_mem=smem,
                                                     dependencies=deps if not hasattr(deps, "__next__")
                                                     else iter([root]))))
        assert a == b, label
        assert (len(slow_calls) == seen) == taken, label
    # the graph keeps the buffer pointers came from, and the kernel, once each
    assert g._keep.count(buf) == 1 and g._keep.count(hot_k) == 1
    assert hot_k_first.params["args"] == plain_k_first.params["args"]
    # a closed graph, and an unloaded library: the general path says so
    hot_k._owner.close()
    assert "unloaded" in _outcome(lambda: g.add_kernel(hot_k, 1, 1, (0, 1, 1.0), dependencies=[root]))
    g.close()
    assert _outcome(lambda: g.add_kernel(plain_k, 1, 1, (0, 1, 1.0))) == \
        _outcome(lambda: hot(g, plain_k, 1, 1, (0, 1, 1.0), 0, None))
    other.close()
    buf.close()


def test_no_hot_path_without_a_launch_function(backend):
    k = rt.Program('extern "C" __global__ void hot3(float *y, int n, float v) {}').kernel(
        "hot3", signature="float *y, int n, float v")
    s = rt.Stream()
    buf = rt.malloc(64)
    s.launch(k, 1, 1, buf, 1, 1.0)
    s.launch(k, 1, 1, buf, 1, 1.0)
    assert k._hot is False  # the simulator: kernel_launcher every time
    s.synchronize()


# -- the compiled one-call launch ---------------------------------------------------------------
def test_compiled_launch_helper_builds_the_argument_array():
    from pygraphrt import _fast

    try:
        import pygraphrt._fastlib._cuda13 as ext
    except ImportError:
        pytest.skip("the fast path is not built (python -m bindgen build-fast)")
    ffi, lib = ext.ffi, ext.lib
    seen = []
    cdecl = ("int(void *, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, "
             "unsigned int, unsigned int, void *, void **, void **)")

    @ffi.callback(cdecl)
    def launch(f, gx, gy, gz, bx, by, bz, smem, stream, argv, extra):
        seen.append((int(ffi.cast("uintptr_t", f)), (gx, gy, gz), (bx, by, bz), smem,
                     int(ffi.cast("uintptr_t", stream)), extra == ffi.NULL,
                     struct.unpack("<Q", bytes(ffi.buffer(ffi.cast("char *", argv[0]), 8)))[0],
                     struct.unpack("<i", bytes(ffi.buffer(ffi.cast("char *", argv[1]), 4)))[0],
                     struct.unpack("<d", bytes(ffi.buffer(ffi.cast("char *", argv[2]), 8)))[0]))
        return 42

    from pygraphrt.kernels._signature import parse_signature

    s = parse_signature("float *y, int n, double d")
    assert s.offsets == (0, 8, 16)
    state = ffi.new("uintptr_t[]", [int(ffi.cast("uintptr_t", launch)), 0xABC, 3, *s.offsets])
    packed = struct.pack("<7I%dx" % (_fast.LAUNCH_HEADER - 28) + s._struct.format.lstrip("<"),
                         2, 3, 4, 5, 6, 7, 99, 0xDEAD0, -3, 0.25)
    assert lib._pgr_launch_packed(state, ffi.cast("void *", 0x55), packed) == 42
    assert seen == [(0xABC, (2, 3, 4), (5, 6, 7), 99, 0x55, True, 0xDEAD0, -3, 0.25)]
    too_many = ffi.new("uintptr_t[]", [int(ffi.cast("uintptr_t", launch)), 1, _fast.LAUNCH_MAX_PARAMS + 1])
    assert lib._pgr_launch_packed(too_many, ffi.NULL, packed) == -1


def test_launch_constants_match_bindgen():
    bindgen_fast = pytest.importorskip("bindgen.fast")
    from pygraphrt import _fast

    assert (bindgen_fast.LAUNCH_HEADER, bindgen_fast.LAUNCH_MAX_PARAMS) == (_fast.LAUNCH_HEADER,
                                                                          _fast.LAUNCH_MAX_PARAMS)
    assert bindgen_fast.NO_FUNCTION == _fast.NO_FUNCTION
    assert bindgen_fast.DIRECT_SLOTS == _fast.DIRECT_SLOTS
    # the driver functions the extension's direct calls are generated for are those the CUDA
    # vendor table hands over
    from pygraphrt._vendors.cuda import CudaVendor

    assert bindgen_fast.DIRECT_DRIVER == CudaVendor.direct_calls
    assert set(bindgen_fast.DIRECT_DRIVER) == set(_fast.DIRECT_SLOTS)


# -- end to end through the do-nothing libcudart ---------------------------------------------------
@pytest.fixture(scope="module")
def stub_cudart(tmp_path_factory):
    from .test_cuda13x import PREBUILT

    if PREBUILT:  # compiled beforehand (tests/test_wheel.py)
        return Path(PREBUILT) / "stub_cudart" / "libcudart.so.13"
    from benchmarks.breakdown import build_stub
    from bindgen.fast import have_compiler

    if have_compiler() is None:  # the one reason to skip; the tests are marked `headers` besides
        pytest.skip("no C compiler (cc, gcc, clang or $CC) to build benchmarks/stub_cudart.c")
    try:
        return build_stub(tmp_path_factory.mktemp("stub"))
    except Exception as exc:  # with a compiler and the headers, a stub that does not build is a bug
        pytest.fail(f"building benchmarks/stub_cudart.c failed: {type(exc).__name__}: {exc}", pytrace=False)


STUB_SCRIPT = textwrap.dedent("""
    import ctypes, sys
    import pygraphrt as rt
    from pygraphrt import errors
    stub = ctypes.CDLL(sys.argv[1])
    count = lambda name: ctypes.c_int.in_dll(stub, name).value
    k = rt.Kernel.wrap(0x5000, signature="float *x", kind="kernel", name="tiny")
    s, buf = rt.Stream(), rt.malloc(4)
    for grid in (1, 2, 3):
        s.launch(k, grid, 32, buf)
    print(k._hot.mode, count("stub_launches"), ctypes.c_uint.in_dll(stub, "stub_last_grid_x").value,
          ctypes.c_ulonglong.in_dll(stub, "stub_last_arg0").value == buf.ptr)
    # No current context: the driver refuses the NULL stream; the runtime's launch makes one current.
    ctypes.c_void_p.in_dll(stub, "stub_context").value = None
    null = rt.Stream.legacy_default()
    null.launch(k, 4, 32, buf)
    null.launch(k, 5, 32, buf)
    print(count("stub_runtime_launches"), count("stub_launches"), ctypes.c_uint.in_dll(stub, "stub_last_grid_x").value)
    try:
        s.launch(k, 1, 32, buf, shared_mem=1 << 20)  # more than the stub's cuLaunchKernel takes
    except errors.InvalidValue as e:
        print("error", e.api, e.name)
    # A capture (a stand-in with its keep list: the stub records no graphs) keeps the buffers
    # and the kernel's owner, one entry for a run of launches on the same ones; compiled mode
    # launches in C meanwhile
    import types
    owner, other = types.SimpleNamespace(), rt.malloc(4)
    k._owner = owner
    cap = s._capture = types.SimpleNamespace(_keep=[])
    before = count("stub_launches")
    s.launch(k, 1, 32, buf)
    k.launch(s, 2, 32, buf)
    s.launch(k, 3, 32, buf.ptr)
    s.launch(k, 4, 32, other)
    s._capture = None
    print(count("stub_launches") - before, [("buf", "owner", "other")[[buf, owner, other].index(x)] for x in cap._keep])
""")


@pytest.mark.headers
@pytest.mark.parametrize("mode, expect", [("0", "ffi"), ("1", "compiled")])
def test_stub_cudart_end_to_end(stub_cudart, mode, expect, tmp_path):
    if mode == "1":
        from pygraphrt import _fast

        if _fast.extension_path("cuda13") is None:
            pytest.skip("the fast path is not built")
    script = tmp_path / "run.py"
    script.write_text(STUB_SCRIPT)
    import os

    env = dict(os.environ, PYGRAPHRT_BACKEND="cuda", PYGRAPHRT_CUDART=str(stub_cudart), PYGRAPHRT_FAST=mode,
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, str(script), str(stub_cudart)], capture_output=True, text=True,
                       env=env, cwd=str(REPO))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:4] == [f"{expect} 3 3 True", "1 4 5", "error cuLaunchKernel CUDA_ERROR_INVALID_VALUE",
                                         "4 ['buf', 'owner', 'other']"]
