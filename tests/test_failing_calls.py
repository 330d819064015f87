"""What pygraphrt does when the runtime refuses: every runtime call of eight workflows made to
fail in turn (pygraphrt.sim.failing_calls), on the simulator with two devices.

Each workflow uses one area the way users do -- stream capture and exec update; explicit graphs
with every common node type, clone, upload and parameter setters; the compute graph (build,
rebind, update, a launch into a capture); stream-ordered memory, pools, events, host functions
and graph memory; conditional nodes, explicit and captured; two devices (peer access, a placed
node, a capture across devices' streams); NCCL (init_all, a grouped all-reduce); editing (bulk
adds, edges added and removed, a capture into a graph, executable setters).  For each call
it makes, in order, one run in which that call alone fails (with ``cudaErrorInvalidValue``,
``NotSupported``, ``MemoryAllocation``, ``StreamCaptureInvalidated`` or ``IllegalState`` in turn;
an NCCL call with ``ncclInvalidArgument``, ``InvalidUsage``, ``SystemError``, ``RemoteError`` or
``InternalError``) must:

* raise a pygraphrt error (a :class:`~pygraphrt.errors.GraphRTError`) or succeed -- nothing
  else (no ``AttributeError``, ``IndexError``, ... from pygraphrt's own code);
* leave no capture running, and the device current that was (unless the refused call was
  ``cudaSetDevice`` itself: a switch back the runtime refused leaves the device where it is);
* leave, once its objects are gone, no runtime object alive that was not alive before it (graphs,
  executables, streams, events, allocations, pools, libraries, nodes, NCCL communicators);
* leave pygraphrt working: the workflow then runs cleanly.

Calls made while destroying something are left alone: a runtime that refuses a destroy keeps
the object (pygraphrt cannot free it), and a finalizer's refusal is reported nowhere by design.
"""

from __future__ import annotations

import gc
import struct
import sys
import traceback
import warnings
from typing import Any, Callable, Iterator

import pytest

import pygraphrt as rt
from pygraphrt import errors, nccl, sim
from pygraphrt.compute import ComputeGraph, VarManager

from .backends import simulator

NB = 64
SRC = 'extern "C" __global__ void fi_add(unsigned char *x, int n) {}'


@pytest.fixture(scope="module")
def sim2() -> Iterator[Any]:
    with simulator(2) as backend:
        if "fi_add" not in sim.registered_kernels():
            sim.register_kernel("fi_add", lambda ctx, x, n: None)
        yield backend
        # (the simulator is the other tests' too: the peer access w_multidevice enabled goes)
        rt.Device(0).set_current()
        if rt.Device(0).peer_access_enabled(1):
            rt.Device(0).disable_peer_access(1)


def w_capture() -> None:
    """Capture (a memset, a copy, a kernel), instantiate, launch; capture again and update the executable."""
    s = rt.Stream()
    a, b = rt.malloc(NB), rt.malloc(NB)
    k = rt.Program(SRC).kernel("fi_add", signature="unsigned char *x, int n")
    with s.capture() as cap:
        s.memset(a, 1, NB)
        s.memcpy(b, a, NB)
        s.launch(k, 1, 1, b, NB)
    g = cap.graph
    exe = g.instantiate()
    exe.launch(s)
    s.synchronize()
    with s.capture() as cap2:
        s.memset(a, 2, NB)
        s.memcpy(b, a, NB)
        s.launch(k, 1, 1, b, NB)
    exe.update(cap2.graph)
    exe.launch(s)
    s.synchronize()
    exe.close(); g.close(); cap2.graph.close(); s.close()


def w_explicit() -> None:
    """An explicit graph of every common node type; clone, upload, launch, a memset setter, exec update; memory nodes."""
    s = rt.Stream()
    a, b = rt.malloc(NB), rt.malloc(NB)
    k = rt.Program(SRC).kernel("fi_add", signature="unsigned char *x, int n")
    g = rt.Graph()
    e = g.add_empty()
    m = g.add_memset(a, 3, NB, dependencies=[e])
    c = g.add_memcpy(b, a, NB, dependencies=[m])
    kn = g.add_kernel(k, 1, 1, (b, NB), dependencies=[c])
    h = g.add_host(lambda: None, dependencies=[kn])
    ev = rt.Event()
    r = g.add_event_record(ev, dependencies=[h])
    g.add_event_wait(ev, dependencies=[r])
    child = rt.Graph()
    child.add_memset(a, 4, NB)
    g.add_child_graph(child, dependencies=[r])
    gm = rt.Graph()
    al = gm.add_mem_alloc(NB)
    gm.add_mem_free(al.dptr, dependencies=[gm.add_memset(al.dptr, 0, NB, dependencies=[al])])
    em = gm.instantiate()
    em.launch(s)
    g2 = g.clone()
    exe = g.instantiate()
    exe.upload(s)
    exe.launch(s)
    exe.set_memset(m, value=5)
    exe.launch(s)
    s.synchronize()
    exe.update(g2)
    exe.launch(s)
    s.synchronize()
    s.synchronize()
    em.close(); gm.close(); exe.close(); g.close(); g2.close(); child.close(); ev.close(); s.close()


def w_compute() -> None:
    """A compute graph: build and launch, a rebound variable's update, a launch into a capture."""
    s = rt.Stream()
    vm = VarManager()
    bufs = [rt.malloc(NB) for _ in range(4)]
    x, y, z = (vm.buffer(n, b) for n, b in zip("xyz", bufs))
    k = rt.Program(SRC).kernel("fi_add", signature="unsigned char *x, int n")
    g = ComputeGraph(vm, "fi")
    g.node("a", lambda ctx: ctx.memset(x.write(), 1, NB))
    g.node("b", lambda ctx: ctx.memcpy(y.write(), x.read(), NB))
    g.node("c", lambda ctx: ctx.launch(k, 1, 1, z.read_write(), NB))
    g.launch(s)
    s.synchronize()
    z.update(bufs[3])
    g.launch(s)
    with s.capture() as cap:
        g.launch(s)
    exe = cap.graph.instantiate()
    exe.launch(s)
    s.synchronize()
    exe.close(); cap.graph.close(); g.close(); s.close()


def w_memory() -> None:
    """A pool, stream-ordered allocations (eager and captured), timed events, a host function, graph memory."""
    s = rt.Stream()
    pool = rt.MemPool()
    b = s.malloc_async(NB, pool)
    s.memset(b, 1, NB)
    s.free_async(b)
    with s.capture() as cap:
        c = s.malloc_async(NB)
        s.memset(c, 2, NB)
        s.free_async(c)
    exe = cap.graph.instantiate()
    exe.launch(s)
    ev0, ev1 = rt.Event(timing=True), rt.Event(timing=True)
    s.record(ev0)
    s.launch_host_func(lambda: None)
    s.record(ev1)
    s.synchronize()
    ev1.elapsed_ms(ev0)
    d = rt.Device(0)
    d.graph_mem_attributes()
    d.graph_mem_trim()
    d.synchronize()
    exe.close(); cap.graph.close(); pool.close(); s.close(); ev0.close(); ev1.close()


LOOPS = """
extern "C" __global__ void fi_arm(cudaGraphConditionalHandle h, int *left, int n) { *left = n;
    cudaGraphSetConditional(h, n > 0); }
extern "C" __global__ void fi_step(cudaGraphConditionalHandle h, int *left) {
    cudaGraphSetConditional(h, --(*left) > 0); }
"""


def _loop_kernels() -> tuple[Any, Any]:
    if "fi_arm" not in sim.registered_kernels():
        @sim.register_kernel("fi_arm")
        def _(ctx, h, left, n):
            ctx.memory(left, 4)[:] = struct.pack("<i", n)
            ctx.set_conditional(h, n > 0)

        @sim.register_kernel("fi_step")
        def _(ctx, h, left):
            v = struct.unpack("<i", bytes(ctx.memory(left, 4)))[0] - 1
            ctx.memory(left, 4)[:] = struct.pack("<i", v)
            ctx.set_conditional(h, v > 0)
    p = rt.Program(rt.SET_CONDITIONAL_SOURCE + LOOPS)
    return (p.kernel("fi_arm", signature="cudaGraphConditionalHandle h, int *left, int n"),
            p.kernel("fi_step", signature="cudaGraphConditionalHandle h, int *left"))


def w_conditional() -> None:
    """A while loop and an if/else, explicit; a while loop captured."""
    arm, step = _loop_kernels()
    s, s2 = rt.Stream(), rt.Stream()
    left, out = rt.malloc(4), rt.malloc(16)
    g = rt.Graph()
    h = g.conditional_handle()
    start = g.add_kernel(arm, 1, 1, [h, left, 3])
    loop = g.add_while(h, dependencies=[start])
    loop.bodies[0].add_kernel(step, 1, 1, [h, left])
    ie = g.add_if_else(h, dependencies=[loop])
    ie.bodies[0].add_memset(out, 1, 4)
    ie.bodies[1].add_memset(out, 2, 4)
    exe = g.instantiate()
    exe.launch(s)
    s.synchronize()
    with s.capture() as cap:
        h2 = cap.conditional_handle()
        s.launch(arm, 1, 1, h2, left, 2)
        loop2 = cap.add_while(h2)
        with loop2.capture(s2):
            s2.launch(step, 1, 1, h2, left)
    e2 = cap.graph.instantiate()
    e2.launch(s)
    s.synchronize()
    exe.close(); g.close(); e2.close(); cap.graph.close(); s.close(); s2.close()


def w_multidevice() -> None:
    """Peer access, a node placed on device 1, a capture across the two devices' streams."""
    d0, d1 = rt.Device(0), rt.Device(1)
    if not d0.peer_access_enabled(d1):
        d0.enable_peer_access(d1)
    with d1:
        b1 = rt.malloc(NB)
        s1 = rt.Stream()
    s = rt.Stream()
    a = rt.malloc(NB)
    g = rt.Graph()
    m = g.add_memset(a, 1, NB)
    m1 = g.add_memset(b1, 2, NB, dependencies=[m], device=1)
    g.add_memcpy(a, b1, NB, dependencies=[m1])
    exe = g.instantiate()
    exe.launch(s)
    s.synchronize()
    ev = rt.Event()
    with d1:
        ev1 = rt.Event()
    with s.capture() as cap:
        s.memset(a, 3, NB)
        s.record(ev)
        s1.wait(ev)
        s1.memset(b1, 4, NB)
        s1.record(ev1)
        s.wait(ev1)
    e2 = cap.graph.instantiate()
    e2.launch(s)
    s.synchronize()
    exe.close(); g.close(); e2.close(); cap.graph.close(); s.close(); s1.close(); ev.close(); ev1.close()


def w_nccl() -> None:
    """Two communicators (init_all), a grouped all-reduce, a bounded wait, a grouped close."""
    comms = nccl.Communicator.init_all([0, 1])
    s, bufs = [], []
    for c in comms:
        with rt.Device(c.device):
            s.append(rt.Stream())
            bufs.append((rt.malloc(NB), rt.malloc(NB)))
    try:
        with nccl.group():
            for r, c in enumerate(comms):
                c.all_reduce(bufs[r][0], bufs[r][1], s[r], "sum", dtype="float32")
        for r in range(2):
            nccl.synchronize(s[r], timeout=5)
    finally:
        with nccl.group():
            for c in comms:
                c.close()
        for x in s:
            x.close()


def w_editing() -> None:
    """Bulk adds, edges added and removed, a capture into an existing graph, node parameters and
    enabling on an executable, the graph drawn, cloned and compared.  (Not a recapture: the
    simulator does not implement cudaStreamBeginRecaptureToGraph.)"""
    s = rt.Stream()
    a, b = rt.malloc(NB), rt.malloc(NB)
    k = rt.Program(SRC).kernel("fi_add", signature="unsigned char *x, int n")
    g = rt.Graph()
    nodes = g.add_nodes([("empty", {}), ("memset", {"dst": a, "value": 1, "count": NB}, [0]),
                         ("memset", {"dst": b, "value": 2, "count": NB}, [0]),
                         ("kernel", {"kernel": k, "grid": 1, "block": 1, "args": (b, NB)}, [2])])
    g.add_dependencies([nodes[1]], [nodes[3]])
    g.remove_dependencies([nodes[1]], [nodes[3]])
    with s.capture(graph=g, dependencies=[nodes[3]]):
        s.memcpy(a, b, NB)
    g.debug_dot()
    exe = g.instantiate()
    exe.set_enabled(nodes[2], False)
    exe.set_kernel_params(nodes[3], kernel=k, grid=1, block=1, args=(a, NB), shared_mem=0)
    exe.launch(s)
    s.synchronize()
    assert g.same_structure(g.clone())
    exe.close(); g.close(); s.close()


WORKFLOWS = [w_capture, w_explicit, w_compute, w_memory, w_conditional, w_multidevice, w_nccl, w_editing]
SKIP = ("Destroy", "cudaFree")  # (and any call inside pygraphrt's _handles._destroy: eligible())
# The errors the refused calls return, in turn: some make pygraphrt take another way (a query
# the runtime does not support has fallbacks; an invalidated capture ends its capture).
REFUSALS = ("InvalidValue", "NotSupported", "MemoryAllocation", "StreamCaptureInvalidated", "IllegalState")
# ... and the simulator's NCCL calls' (a rank whose call fails: its peers' waits must end)
NCCL_REFUSALS = ("InvalidArgument", "InvalidUsage", "SystemError", "RemoteError", "InternalError")


def live_objects() -> dict[str, int]:
    """The simulator's live runtime objects by kind.  (Kernels and conditional handles have no
    destroy in CUDA -- they go with their library or graph -- and destroyed pools stay in the
    simulator's records, marked, to tell a stale handle: neither is counted.)"""
    r = sim.runtime()
    return dict(graphs=len(r.graphs), execs=len(r.execs), streams=len(r.streams), events=len(r.events),
                nodes=len(r.nodes), allocations=len(r.memory.blocks), libraries=len(r.libraries),
                pools=sum(not p.destroyed for p in r.memory.pools.values()), captures=len(r.captures),
                communicators=len(nccl.library().lib._comms))


def eligible(name: str) -> bool:
    """Whether a failure is injected into the call ``name`` (not a destroy, nor a call a destroy makes)."""
    if any(word in name for word in SKIP):
        return False
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_name == "_destroy":
            return False
        f = f.f_back
    return True


def calls_of(workflow: Callable[[], None]) -> list[str]:
    names: list[str] = []
    with sim.failing_calls(lambda n: names.append(n) if eligible(n) else None):
        workflow()
    return names


def failing_at(index: int, failed: list[str]) -> Callable[[str], "str | None"]:
    count = [0]

    def choose(name: str) -> "str | None":
        if not eligible(name):
            return None
        count[0] += 1
        if count[0] - 1 == index:
            failed.append(name)
            return (NCCL_REFUSALS if name.startswith("nccl") else REFUSALS)[index % len(REFUSALS)]
        return None

    return choose


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=[w.__name__[2:] for w in WORKFLOWS])
def test_every_refused_call_raises_a_pygraphrt_error_and_leaves_nothing_behind(sim2, workflow):
    workflow()
    gc.collect()
    names = calls_of(workflow)
    gc.collect()
    assert len(names) > 30  # (the workflow does what it says)
    problems: list[str] = []
    for i in range(len(names)):
        before = live_objects()
        failed: list[str] = []
        outcome = "ran"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                with sim.failing_calls(failing_at(i, failed)):
                    workflow()
            except errors.GraphRTError as exc:
                outcome = f"{type(exc).__name__}"
                del exc
            except BaseException:  # noqa: BLE001 - what pygraphrt must never raise here, reported
                problems.append(f"call {i} ({failed}): {traceback.format_exc(limit=-6)}")
                continue
        gc.collect()
        device = rt.current_device().ordinal
        if device != 0:  # (the workflows end where they began; a refused cudaSetDevice may not)
            if failed != ["cudaSetDevice"]:
                problems.append(f"call {i} ({failed}, then {outcome}): device {device} left current")
            rt.Device(0).set_current()
        after = live_objects()
        if after != before:
            grew = {k: (before[k], after[k]) for k in after if after[k] != before[k]}
            problems.append(f"call {i} ({failed}, then {outcome}): runtime objects left: {grew}")
        try:
            workflow()
        except BaseException as exc:  # noqa: BLE001 - reported
            problems.append(f"call {i} ({failed}): the clean run after it failed: {type(exc).__name__}: {exc}")
        gc.collect()
    assert not problems, "\n".join(problems)


def test_failing_calls_fails_what_it_is_told_and_nothing_after_its_block(sim2):
    asked: list[str] = []

    def choose(name: str) -> "str | None":
        asked.append(name)
        return "MemoryAllocation" if name == "cudaMalloc" else None

    with pytest.raises(errors.OutOfMemory, match=r"cudaMalloc failed .*failing_calls asked"):
        with sim.failing_calls(choose):
            rt.Stream().close()
            rt.malloc(16)
    assert "cudaStreamCreateWithPriority" in asked and asked[-1] == "cudaMalloc"
    rt.malloc(16).close()  # (the block's end removed the hook, also when it raised)
    with sim.failing_calls(lambda name: "NoSuchError" if name == "cudaMalloc" else None):
        with pytest.raises(errors.GraphRTError, match="'NoSuchError', which choose\\(\\) gave for cudaMalloc, "
                                                      "is not a cudaError name"):
            rt.malloc(16)
        with pytest.raises(errors.IllegalState, match="another failing_calls block is active"):
            with sim.failing_calls(lambda name: None):
                pass
    with pytest.raises(errors.InvalidValue, match="is not callable"):
        with sim.failing_calls("cudaMalloc"):  # type: ignore[arg-type]
            pass


def _nth(name: str, n: int, error: str = "InvalidValue") -> Callable[[str], "str | None"]:
    """A choose() that fails the ``n``-th call (from 1) of ``name`` in its block."""
    seen = [0]

    def choose(called: str) -> "str | None":
        if called != name:
            return None
        seen[0] += 1
        return error if seen[0] == n else None

    return choose


@pytest.mark.parametrize("what", ["buffer", "pool"])
def test_a_pool_or_its_memory_whose_device_cannot_be_waited_for_stays_and_the_error_names_the_call(sim2, what):
    """Closing stream-ordered memory or a pool first waits for its device's work (freeing under
    queued work faults the context).  Where that wait cannot be made -- device 1 refused as
    current, or its synchronize refused -- the object is not destroyed, and the error names the
    refused call (not the destroy never made) and says so; where only the switch back to the
    caller's device is refused, the object is gone and the error says which device stays current."""
    s1 = None

    def make() -> Any:
        nonlocal s1
        with rt.Device(1):
            if what == "pool":
                return rt.MemPool()
            s1 = rt.Stream()
            made = s1.malloc_async(NB)
            s1.synchronize()
            return made

    kind = "pools" if what == "pool" else "allocations"
    api = "cudaMemPoolDestroy" if what == "pool" else "cudaFree"
    for refused, n, says, destroyed, current in (
            ("cudaDeviceSynchronize", 1, "was not destroyed", False, 0),
            ("cudaSetDevice", 1, "device 1 could not be made current to wait for its work", False, 0),
            ("cudaSetDevice", 2, "was destroyed, but device 0 could not be made current again: device 1 stays current",
             True, 1),
            ("cudaGetDevice", 1, "was not destroyed", False, 0)):
        rt.Device(0).set_current()
        obj = make()
        before = live_objects()[kind]
        with pytest.raises(errors.GraphRTError) as e:
            with sim.failing_calls(_nth(refused, n)):
                obj.close()
        assert e.value.api == refused, (refused, n, str(e.value))
        assert says in str(e.value), (refused, n, str(e.value))
        if not destroyed:
            assert f"({api[4:]} not called)" in str(e.value)
        assert live_objects()[kind] == before - destroyed, (refused, n)
        assert rt.current_device() == rt.Device(current), (refused, n)
    rt.Device(0).set_current()
    if what == "pool":  # memory from it still allocated: its close destroys nothing yet, refuses nothing
        with rt.Device(1):
            pool, s1 = rt.MemPool(), rt.Stream()
            held = s1.malloc_async(NB, pool)
            s1.synchronize()
        before = live_objects()["pools"]
        with sim.failing_calls(_nth("cudaDeviceSynchronize", 1)):
            pool.close()
        assert live_objects()["pools"] == before
        held.close()  # the last of its memory: the pool goes with it
        assert live_objects()["pools"] == before - 1
    if s1 is not None:
        s1.close()
