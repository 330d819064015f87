"""No import statement runs per call on the paths a program runs per node, copy, launch or capture.

pygraphrt imports many modules where they are first used, to keep start-up short (see
tests/test_cold_start.py and ARCHITECTURE.md).  An import statement costs about a
microsecond even once its module is loaded (the package's name resolved, ``sys.modules``
searched, the names bound), which is a third of an ABI-mode node add: a module imported on
first use is kept in a module global after that (``_kernel or _load_kernel()``), or imported at
the top where start-up allows.  This test counts the import statements that pygraphrt's own
code executes while one workload runs twice, with 2 and with 5 rounds of the same calls: a
statement whose count grows with the rounds runs per call.  The workload runs on the
simulator with two devices, first while one device is in use, then with several in use (the
paths that check and record devices); a second workload runs the eager and captured
collectives of :mod:`pygraphrt.nccl` on the simulator's NCCL.  It is not a timing: it counts.
"""

from __future__ import annotations

import builtins
import collections
import sys
from typing import Any, Callable, Iterator

import pytest

import pygraphrt as rt
from pygraphrt import multidevice, nccl
from tests import sim_kernels  # noqa: F401  (registers the simulator's twin of add_u32)

from .backends import simulator
from .test_nccl_sim import replay_each_rank
from .test_operands import GpuDlpack

# the conformance suite's add_u32 (pygraphrt/conformance/_case.py), whose twin tests/sim_kernels has
SOURCE = r"""
extern "C" __global__ void add_u32(unsigned int *p, unsigned int v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;  if (i < n) p[i] += v; }
"""


def workload(rounds: int, kernel: Any) -> None:
    """The calls a program makes per node, per launch, per copy and per capture, ``rounds``
    times each (plus what it does once: a graph, its executable)."""
    buf, buf2 = rt.malloc(256), rt.malloc(256)
    host = bytearray(256)
    s, e = rt.Stream(), rt.Event()
    g = rt.Graph()
    prev = g.add_empty()
    kernel_nodes = []
    for i in range(rounds):
        prev = g.add_memset(buf, i & 255, 64, dependencies=[prev])
        prev = g.add_memset(buf, 1, 64, dependencies=[prev], device=0)
        prev = g.add_memcpy(buf2, buf, 64, dependencies=[prev])
        prev = g.add_memcpy(buf2, buf, 64, dependencies=[prev], device=0)
        prev = g.add_kernel(kernel, 1, 32, (buf, i, 16), dependencies=[prev])
        kernel_nodes.append(prev)
        prev = g.add_kernel(kernel, 1, 32, (buf, i, 16), dependencies=[prev], device=0)
        prev = g.add_empty(dependencies=[prev])
        prev = g.add_event_record(e, dependencies=[prev])
        prev = g.add_nodes([("empty", {}, [prev]), ("memset", {"dst": buf, "value": 1, "count": 64}, [0])])[-1]
    for node in kernel_nodes:
        assert node.params["args"] is not None and node.device == 0 and node.dependencies
    for node in g.nodes():
        node.type, node.device
    g.edges()
    exe = g.instantiate()
    for i, node in enumerate(kernel_nodes):
        exe.set_kernel_params(node, args=(buf, i + 1, 16))
    for _ in range(rounds):
        exe.launch(s)
        s.launch(kernel, 1, 32, buf, 1, 16)
        s.memcpy(buf2, buf, 64)
        s.memcpy(host, buf, 64)
        s.memset(buf, 3, 64)
        s.record(e)
        s.wait(e)
        assert not s.is_capturing
        s.capture_status, s.is_done, e.is_done
        s.malloc_async(64).free(s)
    s.synchronize()
    for _ in range(rounds):
        with s.capture() as cap:
            s.launch(kernel, 1, 32, buf, 1, 16)
            s.memcpy(buf2, buf, 64)
        cap.graph.instantiate().launch(s)
    for _ in range(rounds):
        exe.update(g)
    s.synchronize()


class ArrayInterface:
    """A CuPy-like array over a pygraphrt buffer that does not say its device (the runtime is
    asked where its address lives)."""

    def __init__(self, buf: Any, n: int) -> None:
        self.buf, self.n = buf, n

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {"shape": (self.n,), "typestr": "<f4", "data": (self.buf.ptr, False), "version": 3}


def nccl_workload(rounds: int, comms: list[Any]) -> None:
    """Eager collectives of both ranks in a group, ``rounds`` times, on pygraphrt buffers,
    ``__cuda_array_interface__`` arrays and a DLPack producer, alternating two streams per rank
    (a new stream is checked again); then captured, replayed (a thread per rank) and waited for,
    every wait bounded."""
    n = 16
    streams, bufs = [], []
    for c in comms:
        with rt.Device(c.device):
            streams.append((rt.Stream(), rt.Stream()))
            bufs.append((rt.malloc(4 * n), rt.malloc(4 * n)))
    dl = GpuDlpack(bufs[0][0].ptr, 0, n)  # (rank 0's: on device 0)
    for i in range(rounds):
        with nccl.group():
            for r, c in enumerate(comms):
                c.all_reduce(bufs[r][0], bufs[r][1], streams[r][i % 2], "sum", dtype="float32", count=n)
        with nccl.group():
            for r, c in enumerate(comms):
                c.all_reduce(ArrayInterface(bufs[r][0], n), ArrayInterface(bufs[r][1], n), streams[r][0])
        with nccl.group():
            comms[0].all_reduce(dl, bufs[0][1], streams[0][0])
            comms[1].all_reduce(bufs[1][0], bufs[1][1], streams[1][0], dtype="float32", count=n)
    for r in range(2):
        for s in streams[r]:
            nccl.synchronize(s, comms, timeout=30)
    exes = []
    for r, c in enumerate(comms):  # (one rank's graph at a time: each needs the other's to run)
        with rt.Device(c.device), streams[r][0].capture() as cap:
            for _ in range(rounds):
                c.all_reduce(bufs[r][0], bufs[r][1], streams[r][0], "sum", dtype="float32", count=n)
        exes.append(cap.graph.instantiate())
    replay_each_rank(exes, [s[0] for s in streams], rounds, join_s=60)  # (rank r on device r)


def imports_run(call: Callable[[], None]) -> collections.Counter[str]:
    """The import statements in pygraphrt's functions that ``call()`` executes, by place."""
    seen: collections.Counter[str] = collections.Counter()
    real = builtins.__import__

    def counting(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        frame = sys._getframe(1)
        code = frame.f_code
        if "pygraphrt" in code.co_filename.replace("\\", "/").split("/") and code.co_name != "<module>":
            where = code.co_filename.replace("\\", "/").split("/pygraphrt/")[-1]
            seen[f"{where}:{frame.f_lineno} ({code.co_name}) imports {'.' * level}{name}"] += 1
        return real(name, globals, locals, fromlist, level)

    builtins.__import__ = counting
    try:
        call()
    finally:
        builtins.__import__ = real
    return seen


@pytest.fixture
def two_simulated_devices() -> Iterator[Any]:
    with simulator(2) as backend:
        multidevice._reset_several(backend)  # (the process's 2-device simulator: a test used device 1)
        try:
            yield backend
        finally:
            multidevice._reset_several(backend)


@pytest.mark.parametrize("devices_in_use", ["one", "several"])
def test_no_import_statement_runs_per_call(two_simulated_devices, devices_in_use):
    backend = two_simulated_devices
    kernel = rt.Program(SOURCE, name="per_call_imports.cu").kernel(
        "add_u32", signature="unsigned int *p, unsigned int v, int n")
    if devices_in_use == "several":
        with rt.Device(1):
            pass
    assert backend.several is (devices_in_use == "several")
    workload(2, kernel)  # (first uses: what is imported once is imported here)
    few = imports_run(lambda: workload(2, kernel))
    many = imports_run(lambda: workload(5, kernel))
    assert backend.several is (devices_in_use == "several")
    per_call = {place: (few[place], n) for place, n in many.items() if n > few[place]}
    assert not per_call, ("import statements run per call (place: count with 2 rounds, with 5): "
                          + "; ".join(f"{p}: {c}" for p, c in sorted(per_call.items())))


def test_no_import_statement_runs_per_collective(two_simulated_devices):
    comms = nccl.Communicator.init_all([0, 1])
    try:
        nccl_workload(2, comms)
        few = imports_run(lambda: nccl_workload(2, comms))
        many = imports_run(lambda: nccl_workload(5, comms))
    finally:
        for c in comms:
            c.close(destroy_graphs=True, timeout=30)
    per_call = {place: (few[place], n) for place, n in many.items() if n > few[place]}
    assert not per_call, ("import statements run per call (place: count with 2 rounds, with 5): "
                          + "; ".join(f"{p}: {c}" for p, c in sorted(per_call.items())))
    assert few, "the workload ran no import statement at all (is the counter counting?)"


def test_the_count_sees_an_import_statement_in_a_pygraphrt_function():
    """The counter itself: a function compiled as if it were pygraphrt's, importing a module
    that is loaded already, is counted once per call (and one elsewhere is not counted)."""
    ours: dict[str, Any] = {}
    exec(compile("def per_call():\n    import json\n    return json\n", "/site/pygraphrt/_example.py", "exec"), ours)
    theirs: dict[str, Any] = {}
    exec(compile("def per_call():\n    import json\n    return json\n", "/site/other/_example.py", "exec"), theirs)

    def calls() -> None:
        for _ in range(3):
            ours["per_call"]()
            theirs["per_call"]()

    assert imports_run(calls) == {"_example.py:2 (per_call) imports json": 3}
