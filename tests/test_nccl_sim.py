"""pygraphrt.nccl on the sim backend's own collectives (issue 41, item 7): two simulated devices in
this process, ``init_all``, eager and captured into sim graphs (a host node per rank and group:
:mod:`pygraphrt._vendors.sim._nccl`), with the checks pygraphrt makes on a GPU."""

from __future__ import annotations

import contextlib
import gc
import threading

import numpy as np
import pytest

import pygraphrt as rt
from pygraphrt import errors, nccl
from tests import sim_kernels  # noqa: F401  (registers the sim twin of tests/gpu/kernels.py's add)
from tests.backends import simulator
from tests.gpu.kernels import SOURCE as ADD_SOURCE

N = 64
STEPS = 100


@pytest.fixture
def sim2():
    with simulator(2) as backend:
        yield backend


def streams_and(comms, make=None):
    """One stream per rank on its device (NCCL's rule, checked), and ``make(rank)`` made there."""
    s, made = [], []
    for r, c in enumerate(comms):
        with rt.Device(c.device):
            s.append(rt.Stream())
            if make is not None:
                made.append(make(r))
    return s, made


def buffer_of(values) -> rt.DeviceBuffer:
    b = rt.malloc(values.nbytes)
    b.copy_from(values.tobytes())
    return b


def read(buf, dtype, count):
    return np.frombuffer(buf.to_bytes(count * np.dtype(dtype).itemsize), dtype)


def each(comms, fn):
    with nccl.group():
        for r, c in enumerate(comms):
            fn(r, c)


def test_the_library_is_the_simulators(sim2, monkeypatch):
    monkeypatch.delenv("PYGRAPHRT_NCCL", raising=False)
    lib = nccl.library()
    assert lib.how == "the sim backend's collectives" and lib.version_str == "2.28.9"
    assert lib is nccl.library()  # one per backend
    with pytest.raises(errors.NotSupported, match="ncclCommRegister"):
        lib.fn("ncclCommRegister")  # (not simulated: as a library that does not export it)


def test_every_operation_against_numpy(sim2):
    comms = nccl.Communicator.init_all([0, 1])
    assert [(c.rank, c.size, c.device) for c in comms] == [(0, 2, 0), (1, 2, 1)]
    rng = np.random.default_rng(5)
    xs = [rng.integers(0, 50, N).astype(np.int32) for _ in comms]
    s, bufs = streams_and(comms, lambda r: (buffer_of(xs[r]), rt.malloc(2 * N * 4)))
    send = [b[0] for b in bufs]
    recv = [b[1] for b in bufs]
    ref = {"sum": xs[0] + xs[1], "prod": xs[0] * xs[1], "max": np.maximum(*xs), "min": np.minimum(*xs),
           "avg": (xs[0] + xs[1]) // 2}
    for op, want in ref.items():
        each(comms, lambda r, c: c.all_reduce(send[r], recv[r], s[r], op, dtype="int32", count=N))
        for r in range(2):
            assert (read(recv[r], np.int32, N) == want).all(), (op, r)
    each(comms, lambda r, c: c.broadcast(send[r], recv[r], 1, s[r], dtype="int32", count=N))
    assert all((read(recv[r], np.int32, N) == xs[1]).all() for r in range(2))
    each(comms, lambda r, c: c.reduce(send[r], recv[r], 0, s[r], "max", dtype="int32", count=N))
    assert (read(recv[0], np.int32, N) == ref["max"]).all()
    each(comms, lambda r, c: c.all_gather(send[r], recv[r], s[r], dtype="int32"))
    assert all((read(recv[r], np.int32, 2 * N) == np.concatenate(xs)).all() for r in range(2))
    h = N // 2
    each(comms, lambda r, c: c.reduce_scatter(send[r], recv[r], s[r], "sum", dtype="int32", count=h))
    assert (read(recv[0], np.int32, h) == ref["sum"][:h]).all() and (read(recv[1], np.int32, h) == ref["sum"][h:]).all()
    each(comms, lambda r, c: (c.send(send[r], 1 - r, s[r], dtype="int32"),
                              c.recv(recv[r], 1 - r, s[r], dtype="int32", count=N)))
    assert (read(recv[0], np.int32, N) == xs[1]).all() and (read(recv[1], np.int32, N) == xs[0]).all()
    each(comms, lambda r, c: c.all_to_all(send[r], recv[r], s[r], dtype="int32", count=h))
    assert (read(recv[0], np.int32, N) == np.concatenate([xs[0][:h], xs[1][:h]])).all()
    assert (read(recv[1], np.int32, N) == np.concatenate([xs[0][h:], xs[1][h:]])).all()
    # pre-multiplied sums: the device scalar is read when the collective runs
    _, scalars = streams_and(comms, lambda r: buffer_of(np.array([3], np.int32)))
    ops = [c.premul_sum(scalars[r], dtype="int32") for r, c in enumerate(comms)]
    each(comms, lambda r, c: c.all_reduce(send[r], recv[r], s[r], ops[r], dtype="int32", count=N))
    assert (read(recv[0], np.int32, N) == 3 * ref["sum"]).all()
    for sc in scalars:
        sc.copy_from(np.array([5], np.int32).tobytes())
    each(comms, lambda r, c: c.all_reduce(send[r], recv[r], s[r], ops[r], dtype="int32", count=N))
    assert (read(recv[1], np.int32, N) == 5 * ref["sum"]).all()
    # floats: float32 avg exact here (integers below 2**24), bfloat16 sums of small integers
    fx = [x.astype(np.float32) for x in xs]
    _, fb = streams_and(comms, lambda r: (buffer_of(fx[r]), rt.malloc(N * 4)))
    each(comms, lambda r, c: c.all_reduce(fb[r][0], fb[r][1], s[r], "avg", dtype="float32"))
    assert (read(fb[0][1], np.float32, N) == (fx[0] + fx[1]) / 2).all()
    bf = [(x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16) for x in fx]
    _, bb = streams_and(comms, lambda r: (buffer_of(bf[r]), rt.malloc(N * 2)))
    each(comms, lambda r, c: c.all_reduce(bb[r][0], bb[r][1], s[r], "sum", dtype="bfloat16"))
    got = (read(bb[1][1], np.uint16, N).astype(np.uint32) << 16).view(np.float32)
    assert (got == fx[0] + fx[1]).all()
    # split: rank 1 takes part without a color
    with nccl.group():
        kids = [c.split(None if c.rank == 1 else 4, key=0) for c in comms]
    assert kids[1] is None and (kids[0].rank, kids[0].size) == (0, 1)
    kids[0].close()
    with nccl.group():
        for c in comms:
            c.close()
    assert all(c.is_closed for c in comms)


def _add_kernel():
    return rt.Program(ADD_SOURCE).kernel("add", signature="float *x, float v, int n")


def _reference():
    xs = [np.arange(N, dtype=np.float32) + r * N for r in range(2)]
    for _ in range(STEPS):
        avg = sum(x + 1 for x in xs) / 2
        xs = [(avg + np.float32(0.5 * (r + 1))).astype(np.float32) for r in range(2)]
    return xs


def test_a_captured_step_replayed_100x_equals_eager_and_numpy(sim2):
    """Kernel, all-reduce (avg), kernel, all-gather of the result: captured once per rank,
    replayed 100x from one thread per rank (each rank's host node waits for the other's), equal
    to 100 eager steps and to numpy."""
    comms = nccl.Communicator.init_all([0, 1])
    add = _add_kernel()
    x0 = [np.arange(N, dtype=np.float32) + r * N for r in range(2)]
    s, bufs = streams_and(comms, lambda r: (buffer_of(x0[r]), buffer_of(x0[r]), rt.malloc(2 * N * 4),
                                            rt.malloc(2 * N * 4)))

    def step(which: int, gathered: int) -> None:
        for r in range(2):
            add.launch(s[r], 1, N, bufs[r][which], 1.0, N)
        each(comms, lambda r, c: c.all_reduce(bufs[r][which], bufs[r][which], s[r], "avg", dtype="float32"))
        for r in range(2):
            add.launch(s[r], 1, N, bufs[r][which], 0.5 * (r + 1), N)
        each(comms, lambda r, c: c.all_gather(bufs[r][which], bufs[r][gathered], s[r], dtype="float32"))

    for _ in range(STEPS):
        step(0, 2)
    eager = [read(bufs[r][0], np.float32, N) for r in range(2)]
    want = _reference()
    assert all((eager[r] == want[r]).all() for r in range(2))
    with contextlib.ExitStack() as stack:
        caps = [stack.enter_context(s[r].capture()) for r in range(2)]
        step(1, 3)
    exes = [cap.graph.instantiate() for cap in caps]
    assert [nccl.communicators_of(e) for e in exes] == [[comms[0]], [comms[1]]]
    problems = []

    def replay(r: int) -> None:
        try:
            with rt.Device(r):
                for _ in range(STEPS):
                    exes[r].launch(s[r])
                nccl.synchronize(s[r], timeout=30)
        except BaseException as exc:  # reported below
            problems.append(f"rank {r}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=replay, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a replay thread hung"
    assert problems == []
    for r in range(2):
        assert (read(bufs[r][1], np.float32, N) == eager[r]).all(), r
        assert (read(bufs[r][3], np.float32, 2 * N) == np.concatenate(eager)).all(), r


def test_one_thread_cannot_meet_itself_and_is_told_so(sim2):
    """Ranks of one process in one thread outside a group (eager), or graphs of both ranks
    launched from one thread: the simulator says why at once, rather than hang."""
    comms = nccl.Communicator.init_all([0, 1])
    s, bufs = streams_and(comms, lambda r: rt.malloc(N * 4))
    if threading.active_count() > 1:
        pytest.skip("other threads are alive in this process: the simulator would wait for them")
    with pytest.raises(errors.InvalidUsage, match=r"rank 0 waits for rank\(s\) \[1\].*inside nccl.group"):
        comms[0].all_reduce(bufs[0], bufs[0], s[0], dtype="float32")
    comms2 = nccl.Communicator.init_all([0, 1])
    with contextlib.ExitStack() as stack:
        caps = [stack.enter_context(s[r].capture()) for r in range(2)]
        each(comms2, lambda r, c: c.all_reduce(bufs[r], bufs[r], s[r], dtype="float32"))
    exes = [cap.graph.instantiate() for cap in caps]
    exes[0].launch(s[0])
    with pytest.raises(errors.InvalidUsage, match="a thread of its own"):
        nccl.synchronize(s[0], [exes[0]], timeout=5)
    assert comms2[0].is_closed  # synchronize aborted what it watched


def test_ranks_that_disagree_are_refused(sim2):
    comms = nccl.Communicator.init_all([0, 1])
    s, bufs = streams_and(comms, lambda r: rt.malloc(N * 4))
    with pytest.raises(errors.InvalidUsage, match="disagree on collective #0: rank 1 issued broadcast"):
        with nccl.group():
            comms[0].all_reduce(bufs[0], bufs[0], s[0], dtype="float32")
            comms[1].broadcast(bufs[1], bufs[1], 0, s[1], dtype="float32")


def test_close_with_a_live_graph_is_refused(sim2):
    comm, = nccl.Communicator.init_all([0])
    s = rt.Stream()
    buf = buffer_of(np.arange(N, dtype=np.float32))
    with s.capture() as cap:
        comm.all_reduce(buf, buf, s, "sum", dtype="float32")
    exe = cap.graph.instantiate()
    for _ in range(3):
        exe.launch(s)
    nccl.synchronize(s, [exe], timeout=5)
    assert (read(buf, np.float32, N) == np.arange(N, dtype=np.float32)).all()  # one rank: itself
    with pytest.raises(errors.IllegalState, match="GraphExec"):
        comm.close()
    assert not comm.is_closed
    del exe, cap
    gc.collect()
    comm.close()
    assert comm.is_closed


def test_bad_input_is_refused_before_the_library(sim2):
    comms = nccl.Communicator.init_all([0, 1])
    s, bufs = streams_and(comms, lambda r: rt.malloc(64))
    c, b = comms[0], bufs[0]
    lib = nccl.library().lib

    def refused(fn, *words):
        before = lib.calls
        with pytest.raises(errors.InvalidValue) as info:
            fn()
        assert lib.calls == before, "the library was called"
        for w in words:
            assert w in str(info.value), (w, str(info.value))

    refused(lambda: c.all_reduce(b, b, s[0], dtype="float32", count=17), "ncclAllReduce", "16 float32", "needs 17")
    refused(lambda: c.all_reduce(b, b, s[0]), "no element type; give dtype=")
    refused(lambda: c.all_reduce(b, bufs[1], s[0], dtype="float32"), "recvbuf is on device 1", "device 0")

    class Typed:  # an array that does not say its device: the runtime is asked where it lives
        def __init__(self, buf):
            self.buf = buf

        @property
        def __cuda_array_interface__(self):
            return {"shape": (16,), "typestr": "<f4", "data": (self.buf.ptr, False), "version": 3}

    refused(lambda: c.all_reduce(Typed(bufs[1]), Typed(b), s[0]), "sendbuf is on device 1", "device 0")
    refused(lambda: c.all_reduce(b, b, s[1], dtype="float32"), "stream is on device 1")
    refused(lambda: c.all_gather(b, b, s[0], dtype="float32"), "ncclAllGather", "needs 32")
    refused(lambda: c.send(b, 2, s[0], dtype="float32"), "ncclSend", "peer 2")
    refused(lambda: c.broadcast(b, b, -1, s[0], dtype="float32"), "root -1")
    refused(lambda: c.all_reduce(b, b, s[0], "xor", dtype="float32"), "op 'xor'")
    refused(lambda: c.all_reduce(b, b, s[0], dtype="complex64"), "has no NCCL type")
    uid = nccl.unique_id()
    refused(lambda: nccl.Communicator(2, 2, uid), "rank 2 is outside")
    refused(lambda: nccl.Communicator(2, 0, uid.data[:100]), "128 bytes, got 100")
    refused(lambda: nccl.Communicator.init_all([1, 1]), "devices repeat")
    for x in comms:
        x.abort()
    refused(lambda: c.all_reduce(b, b, s[0], dtype="float32"), "closed")


def test_a_collective_in_a_conditional_body(sim2, monkeypatch):
    """The simulator's collective is a host node: captured into a WHILE body, the body-node
    check refuses it (what a GPU's NCCL proxy host node meets); with the setting "refused",
    the collective is refused before the library is called."""
    monkeypatch.setattr(nccl, "COLLECTIVES_IN_CONDITIONAL_BODIES", "checked")
    comm, = nccl.Communicator.init_all([0])
    s = rt.Stream()
    buf = buffer_of(np.ones(N, np.float32))
    lib = nccl.library().lib
    g = rt.Graph()
    loop = g.add_while(g.conditional_handle())
    with pytest.raises(errors.NotSupported, match=r"NCCL added host node\(s\) to the body of a conditional node"):
        with loop.capture(s):
            comm.all_reduce(buf, buf, s, dtype="float32")
    # a capture that is not into a body is no business of the check
    with s.capture() as cap:
        comm.all_reduce(buf, buf, s, dtype="float32")
    assert [n.type.value for n in cap.graph.nodes()] == ["host"]
    monkeypatch.setattr(nccl, "COLLECTIVES_IN_CONDITIONAL_BODIES", "refused")
    g2 = rt.Graph()
    loop2 = g2.add_while(g2.conditional_handle())
    before = lib.calls
    with pytest.raises(errors.NotSupported, match="captures into the body of a conditional node"):
        with loop2.capture(s):
            comm.all_reduce(buf, buf, s, dtype="float32")
    assert lib.calls == before and loop2.bodies[0].nodes() == []
    del cap
    gc.collect()


def test_the_conditional_body_probe_runs_here(sim2, monkeypatch, tmp_path):
    """tests/gpu/nccl_workers.while_body_rank, the GPU probe's rank, run as two threads on the
    simulator: its code works up to the body check, which refuses the simulator's host node on
    both ranks (on a GPU the probe decides what NCCL adds)."""
    import queue

    from tests.gpu import nccl_workers

    monkeypatch.setattr(nccl, "COLLECTIVES_IN_CONDITIONAL_BODIES", "checked")
    out: queue.Queue = queue.Queue()
    logs = [tmp_path / f"rank{r}.log" for r in range(2)]
    threads = [threading.Thread(target=nccl_workers.while_body_rank,
                                args=(r, str(tmp_path / "id"), out, 5, str(logs[r]), 30.0)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a rank hung"
    results = sorted(out.get_nowait() for _ in range(out.qsize()))
    assert [(r[0], r[1]) for r in results] == [(0, "refused by pygraphrt"), (1, "refused by pygraphrt")], results
    # (the body's listing may be unreadable: with both ranks in one process a capture can be
    # invalidated by the other thread's calls, and the runtime then destroys its graph)
    assert all("NCCL added host node(s) to the body of a conditional node" in r[2] for r in results), results
    # each rank's stages, as the GPU run prints them (what a run cut short still tells)
    for r, log in enumerate(logs):
        stages = [line.split(": ", 1)[1] for line in log.read_text().splitlines()]
        assert stages[:2] == ["started", "communicator ready (NCCL 2.28.9)"], stages
        assert stages[2].startswith("kernels compiled") and stages[-1].startswith("outcome: refused by pygraphrt")


def test_the_conditional_body_setting_is_one_of_two(sim2, monkeypatch):
    """COLLECTIVES_IN_CONDITIONAL_BODIES is read at every collective captured into a body: a
    value other than "checked" or "refused" is refused, naming it, before NCCL is called."""
    comm, = nccl.Communicator.init_all([0])
    s = rt.Stream()
    buf = buffer_of(np.ones(N, np.float32))
    monkeypatch.setattr(nccl, "COLLECTIVES_IN_CONDITIONAL_BODIES", "check")
    g = rt.Graph()
    loop = g.add_while(g.conditional_handle())
    before = nccl.library().lib.calls
    with pytest.raises(errors.InvalidValue, match="COLLECTIVES_IN_CONDITIONAL_BODIES.*'check'"):
        with loop.capture(s):
            comm.all_reduce(buf, buf, s, dtype="float32")
    assert nccl.library().lib.calls == before
    with s.capture() as cap:  # (outside a body the setting is not read)
        comm.all_reduce(buf, buf, s, dtype="float32")
    del cap
    gc.collect()


def test_exec_update_of_a_graph_holding_a_collective(sim2, tmp_path):
    """tests/gpu/nccl_workers.update_rank, the GPU test's rank, run as two threads on the
    simulator: a captured (kernel, all-reduce, kernel) step recaptured on another buffer with
    another scalar, then with half the count, and the executable updated from each -- the
    simulator's collective is a host node, whose update it accepts; each updated executable
    computes what numpy does, leaves the first buffer alone, and keeps its lease on the
    communicator after the recaptured graph is closed."""
    import queue

    from tests.gpu import nccl_workers

    out: queue.Queue = queue.Queue()
    threads = [threading.Thread(target=nccl_workers.update_rank, args=(r, str(tmp_path / "id"), out, N, 3, 30))
               for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a rank hung"
    results = sorted(out.get_nowait() for _ in range(out.qsize()))
    accepted = {"another buffer and scalar": "accepted", "half the count": "accepted"}
    assert results == [(0, accepted, []), (1, accepted, [])], results
