"""Arguments of the wrong type or out of range, on the simulator: every public call here raises
InvalidValue naming the call (never an AttributeError, TypeError or OverflowError from inside
pygraphrt or cffi, never an address wrapped round), adds no node and leaves no stream capturing."""

from __future__ import annotations

import sys

import pytest

import pygraphrt as rt
from pygraphrt import errors, sim
from pygraphrt.enums import MemPoolAttr

from .backends import selected

SOURCE = 'extern "C" __global__ void bad_k(float *y, int n) {}'

#: Values no call below takes where it wants an Event, Stream, Graph, iterable, size or ordinal.
BAD = [None, -1, 1 << 64, 1.5, "x", True, object(), (1, 2, 3, 4)]


@pytest.fixture(scope="module")
def objs():
    with selected("sim"):
        s = rt.Stream()
        g = rt.Graph()
        root = g.add_empty()
        sim.register_kernel("bad_k", lambda ctx, y, n: None, signature="float *y, int n")
        program = rt.Program(SOURCE)
        buf = rt.malloc(256)
        memset = g.add_memset(buf, 0, 8)
        o = {"s": s, "g": g, "root": root, "buf": buf, "memset": memset, "exe": g.instantiate(),
               "event": rt.Event(), "host": bytearray(64), "program": program,
               "kernel": program.kernel("bad_k", signature="float *y, int n"), "handle": g.conditional_handle(),
               "kernel_node": g.add_kernel(program.kernel("bad_k", signature="float *y, int n"), 1, 1, [buf, 1]),
               "async_buf": s.malloc_async(64), "conditional": g.add_if(g.conditional_handle()),
               "capture": rt.Stream().begin_capture("relaxed")}
        yield o
        o["capture"].abort()
        sim.unregister_kernel("bad_k")


def _calls(o):
    s, g, root, buf, exe, event, host = (o.get(k) for k in ("s", "g", "root", "buf", "exe", "event", "host"))
    return {
        "Stream.record": (lambda v: s.record(v), "all"),
        "Stream.wait": (lambda v: s.wait(v), "all"),
        "Event.elapsed_ms": (lambda v: event.elapsed_ms(v), "all"),
        "GraphExec.upload": (lambda v: exe.upload(v), "all"),
        "GraphExec.update": (lambda v: exe.update(v), "all"),
        "GraphExec.launch": (lambda v: exe.launch(v), "all"),
        "Stream.capture graph": (lambda v: s.capture(graph=v).__enter__(), "not None"),
        "Graph.add_empty dependencies": (lambda v: g.add_empty(dependencies=v), "not None"),
        "Graph.add_empty edges": (lambda v: g.add_empty(dependencies=[root], edges=v), "not None"),
        "Graph.add_memcpy_2d width": (lambda v: g.add_memcpy_2d(buf, 64, host, 64, v, 1), "all"),
        "Graph.add_memcpy_2d depth": (lambda v: g.add_memcpy_2d(buf, 64, host, 64, 8, 1, v), "all"),
        "Graph.add_memset dst": (lambda v: g.add_memset(v, 0, 8), "all"),
        "Graph.add_memcpy count": (lambda v: g.add_memcpy(buf, host, v), "all"),
        "Graph.add_nodes": (lambda v: g.add_nodes(v), "not None"),
        "Graph.add_nodes spec": (lambda v: g.add_nodes([v]), "all"),
        "Graph.add_nodes spec dependencies": (lambda v: g.add_nodes([("empty", None, v)]), "not None"),
        "Graph.add_networkx": (lambda v: g.add_networkx(v), "all"),
        "Graph.instantiate flags": (lambda v: g.instantiate(flags=v), "all"),
        "DeviceBuffer.copy_from": (lambda v: buf.copy_from(v), "all"),
        "Stream.wait_external_semaphores": (lambda v: s.wait_external_semaphores(v), "all"),
        "Stream priority": (lambda v: rt.Stream(priority=v), "not -1"),
        "Device": (lambda v: rt.Device(v).set_current(), "all"),
        "MemPool device": (lambda v: rt.MemPool(v), "not None"),
        "Graph.add_dependencies": (lambda v: g.add_dependencies(v, [root]), "not None"),
        "Graph.remove_dependencies": (lambda v: g.remove_dependencies([root], v), "not None"),
        "Graph.add_kernel attributes": (lambda v: g.add_kernel(o["kernel"], 1, 1, [buf, 1], attributes=v),
                                        "not None"),
        "Graph.add_kernel kernel": (lambda v: g.add_kernel(v, 1, 1, [buf, 1]), "all"),
        "Graph.add_kernel grid": (lambda v: g.add_kernel(o["kernel"], v, 1, [buf, 1]), "all"),
        "Graph.add_kernel args": (lambda v: g.add_kernel(o["kernel"], 1, 1, v), "all"),
        "Graph.add_conditional switch size": (lambda v: g.add_conditional("switch", o["handle"], v), "not None"),
        "Graph.add_conditional handle": (lambda v: g.add_conditional("if", v), "all"),
        "Program.kernel": (lambda v: o["program"].kernel(v), "not 'x'"),  # (a name it lacks: NotFound)
        "Kernel.occupancy": (lambda v: o["kernel"].occupancy(v), "all"),
        "Device.graph_mem_attribute": (lambda v: rt.current_device().graph_mem_attribute(v), "all"),
        "Graph.debug_dot flags": (lambda v: g.debug_dot(None, v), "all"),
        "Graph.debug_dot path": (lambda v: g.debug_dot(v), "not None, not 'x'"),
        "GraphExec.set_enabled node": (lambda v: exe.set_enabled(v, True), "all"),
        "GraphExec.set_memset count": (lambda v: exe.set_memset(o["memset"], count=v), "not None"),
        "Stream.launch priority": (lambda v: s.launch(o["kernel"], 1, 1, buf, 1, priority=v), "not -1"),
        "Stream.launch cluster_dim": (lambda v: s.launch(o["kernel"], 1, 1, buf, 1, cluster_dim=v), "all"),
        "MemPool.set_attribute": (lambda v: rt.MemPool().set_attribute(MemPoolAttr.RELEASE_THRESHOLD, v),
                                  "not True"),
        "MemPool release_threshold": (lambda v: rt.MemPool(release_threshold=v), "not None, not True"),
        "Program name": (lambda v: rt.Program(SOURCE, v), "not 'x'"),
        "Program options": (lambda v: rt.Program(SOURCE, options=v), "not None"),
        "KernelNode.attribute": (lambda v: o["kernel_node"].attribute(v), "all"),
        # found by tests/api_fuzz.py (each raised AttributeError, TypeError, OverflowError or a
        # plain ValueError from inside pygraphrt or cffi, or read past the buffer)
        "DeviceBuffer.to_bytes count": (lambda v: buf.to_bytes(v), "not None"),
        "DeviceBuffer.to_bytes stream": (lambda v: buf.to_bytes(8, v), "not None"),
        "DeviceBuffer.copy_from stream": (lambda v: buf.copy_from(b"12345678", v), "not None"),
        "AsyncBuffer.free stream": (lambda v: o["async_buf"].free(v), "all"),
        "ConditionalNode.capture stream": (lambda v: o["conditional"].capture(v), "all"),
        "Graph.add_mem_alloc device": (lambda v: g.add_mem_alloc(64, device=v), "not None"),
        "Graph.add_node type": (lambda v: g.add_node(v), "all"),
        "Graph.add_nodes spec params": (lambda v: g.add_nodes([("memset", v)]), "all"),
        "Graph.add_nodes spec params keys": (lambda v: g.add_nodes([("memset", {"dst": buf, "value": 0,
                                                                                "count": 8, "bogus": v})]), "all"),
        "Graph.find_clone clone": (lambda v: g.find_clone(root, v), "all"),
        "Graph.same_structure": (lambda v: g.same_structure(v), "all"),
        "Kernel.pack": (lambda v: o["kernel"].pack(v), "all"),
        "Kernel.argv": (lambda v: o["kernel"].argv(v), "all"),
        "Kernel.decode": (lambda v: o["kernel"].decode(v), "all"),
        "Library.from_data": (lambda v: rt.Library.from_data(v), "all"),
        "Library.from_file": (lambda v: rt.Library.from_file(v), "all"),
        "Stream.wrap": (lambda v: rt.Stream.wrap(v), "all"),
        "Stream.capture graph target": (lambda v: s.capture(graph=v, dependencies=[root]), "not None"),
        "Capture.update_dependencies": (lambda v: o["capture"].update_dependencies(v), "not None"),
        "Program headers": (lambda v: rt.Program(SOURCE, headers=v), "not None"),
        "Program header text": (lambda v: rt.Program(SOURCE, headers={"h.cuh": v}), "not 'x'"),
        "compute.infer": (lambda v: rt.compute.infer(v), "not None"),
        "Kernel.set_max_dynamic_shared_memory": (lambda v: o["kernel"].set_max_dynamic_shared_memory(v), "all"),
        "KernelNode.set_launch_dims shared_mem_bytes": (
            lambda v: o["kernel_node"].set_launch_dims(shared_mem_bytes=v), "not None"),
        "compute.infer access": (lambda v: rt.compute.infer([v]), "all"),
        "Program name_expressions": (lambda v: rt.Program(SOURCE, name_expressions=v), "not None"),
    }


_NAMES = ["None", "-1", "2**64", "1.5", "'x'", "True", "object", "tuple"]
_SKIPS = {"all": set(), "not None": {"None"},
          "not -1": {"-1"}, "not 'x'": {"'x'"}, "not None, not 'x'": {"None", "'x'"},
          "not True": {"True"}, "not None, not True": {"None", "True"}}


def _cases():
    # (call, value): the values each call refuses (a few are valid for some: None means "no
    # dependencies", "the current device" or "no options", -1 is a priority, 'x' a kernel
    # name, True a pool attribute's value)
    for name, (_, which) in _calls({}).items():
        skip = _SKIPS[which]
        for label, v in zip(_NAMES, BAD):
            if label not in skip:
                yield pytest.param(name, v, id=f"{name}-{label}")


@pytest.mark.parametrize("name, value", list(_cases()))
def test_bad_arguments_raise_invalid_value(objs, name, value):
    if name == "Graph.add_networkx":
        pytest.importorskip("networkx")
    with selected("sim"):
        g, s = objs["g"], objs["s"]
        before = len(g)
        call = _calls(objs)[name][0]
        sim.undefined_calls(clear=True)
        with pytest.raises(errors.InvalidValue):
            call(value)
        assert len(g) == before
        assert not s.is_capturing
        assert sim.undefined_calls(clear=True) == []  # (refused before the runtime was given it)


@pytest.mark.parametrize("kind", ["buffer", "stream-ordered buffer", "graph", "node", "executable graph",
                                  "kernel", "memory pool"])
@pytest.mark.parametrize("call", ["GraphExec.launch", "GraphExec.upload", "Stream.wait",
                                  "Stream.record"])
def test_an_object_of_another_kind_is_refused_before_the_runtime_sees_it(objs, call, kind):
    """An object where a stream or event is wanted is refused with InvalidValue, and never reaches
    the runtime: a buffer's handle is a ``void *``, which cffi passes as any pointer, and
    ``exe.launch(buf)`` gave a GPU's runtime a device address as a stream -- it crashed (found
    by tests/api_fuzz.py on an H100; the simulator records such calls, ``sim.undefined_calls``)."""
    with selected("sim"):
        wrong = {"buffer": objs["buf"], "stream-ordered buffer": objs["async_buf"], "graph": objs["g"],
                 "node": objs["root"], "executable graph": objs["exe"], "kernel": objs["kernel"],
                 "memory pool": rt.MemPool.default()}[kind]
        s, exe = objs["s"], objs["exe"]
        fn = {"GraphExec.launch": exe.launch, "GraphExec.upload": exe.upload,
              "Stream.wait": s.wait, "Stream.record": s.record}[call]
        sim.undefined_calls(clear=True)
        with pytest.raises(errors.InvalidValue):
            fn(wrong)
        assert sim.undefined_calls(clear=True) == []
        assert not s.is_capturing


@pytest.mark.parametrize("what", ["another stream", "the stream itself", "an executable graph"])
def test_stream_launch_refuses_what_is_not_a_kernel(objs, what):
    """Objects with a ``launch`` of their own are not kernels: refused, not called (a stream's
    launch given another stream called that one back, without end, until RecursionError)."""
    with selected("sim"):
        s, buf = objs["s"], objs["buf"]
        other = {"another stream": rt.Stream(), "the stream itself": s, "an executable graph": objs["exe"]}[what]
        with pytest.raises(errors.InvalidValue, match="is not a pygraphrt Kernel"):
            s.launch(other, 1, 1, buf, 1)
        assert not s.is_capturing


def test_to_bytes_reads_no_more_than_the_buffer(objs):
    """``to_bytes(count)`` past the buffer's size is refused (it copied from past the end)."""
    with selected("sim"):
        buf = objs["buf"]
        with pytest.raises(errors.InvalidValue, match="the buffer has 256"):
            buf.to_bytes(257)
        assert len(buf.to_bytes(256)) == 256


def test_stream_wrap_refuses_a_pygraphrt_stream_and_what_holds_no_int_handle(objs):
    with selected("sim"):
        with pytest.raises(errors.InvalidValue, match="a pygraphrt Stream already"):
            rt.Stream.wrap(objs["s"])
        with pytest.raises(errors.InvalidValue, match="cannot find a stream handle"):
            rt.Stream.wrap(objs["event"])  # (its ``handle`` is cffi's: int() refuses it)


def test_max_dynamic_shared_memory_must_fit_the_runtimes_int(objs):
    """The attribute's value is an int to the runtimes: 2**31 and 2**63 are refused (2**63 raised
    OverflowError from cffi; found by tests/api_fuzz.py with another seed)."""
    with selected("sim"):
        for n in (1 << 31, 1 << 63):
            with pytest.raises(errors.InvalidValue, match="int attribute"):
                objs["kernel"].set_max_dynamic_shared_memory(n)


def test_a_missing_networkx_is_named_with_what_to_install(objs, monkeypatch):
    """networkx is optional: without it each call that needs it raises ImportError naming the
    call and the extra (it was a bare ModuleNotFoundError; found by tests/api_fuzz.py run under
    an interpreter without networkx)."""
    monkeypatch.setitem(sys.modules, "networkx", None)  # (import networkx now raises ImportError)
    with selected("sim"):
        g = objs["g"]
        cg = rt.compute.ComputeGraph(rt.compute.VarManager(), "nx")
        for name, call in [("Graph.same_structure", lambda: g.same_structure(g)),
                           ("Graph.to_networkx", g.to_networkx),
                           ("Graph.add_networkx", lambda: g.add_networkx(object())),
                           ("ComputeGraph.to_networkx", cg.to_networkx)]:
            with pytest.raises(ImportError, match=rf"{name} needs networkx: pip install 'pygraphrt\[networkx\]'"):
                call()


def test_a_pool_bound_past_the_devices_memory_is_refused(objs):
    """``MemPool(max_size=)`` past the device's memory is refused before the runtime sees it (the
    CUDA 12.9 runtime spun without end in cudaMemPoolCreate for 2**63; found by tests/api_fuzz.py
    on an H100).  Up to the device's memory it is the runtime's bound."""
    with selected("sim"):
        total = rt.current_device().info().total_memory
        rt.MemPool(max_size=total).close()
        for too_big in (total + 1, 1 << 63):
            with pytest.raises(errors.InvalidValue, match="more than the device's memory"):
                rt.MemPool(max_size=too_big)
        with pytest.raises(errors.InvalidValue):
            rt.MemPool(max_size=1 << 64)


def test_launch_host_func_spin_wait_takes_a_bool_before_the_runtime_is_asked():
    """``spin_wait=-1`` is refused as a value (InvalidValue naming the call) on every runtime,
    before pygraphrt asks whether the runtime has cudaLaunchHostFunc_v2 (CUDA 13.0 lacks it: the
    GPU's API fuzz saw NotSupported there where the value was what was wrong)."""
    import pygraphrt as rt
    from pygraphrt import errors

    from .backends import selected

    with selected("sim"):
        s = rt.Stream()
        for bad in (-1, 1, "yes", None):
            with pytest.raises(errors.InvalidValue) as e:
                s.launch_host_func(lambda: None, spin_wait=bad)
            assert e.value.api == "Stream.launch_host_func" and "spin_wait" in str(e.value)
        ran = []
        s.launch_host_func(lambda: ran.append(1), spin_wait=True)
        s.synchronize()
        assert ran == [1]
        s.close()
