"""pygraphrt.nccl on the sim backend's own collectives (issue 41, item 7): two simulated devices in
this process, ``init_all``, eager and captured into sim graphs (a host node per rank and group:
:mod:`pygraphrt._vendors.sim._nccl`), with the checks pygraphrt makes on a GPU."""

from __future__ import annotations

import contextlib
import gc
import threading
import time

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


def replay_each_rank(exes, streams, steps: int, join_s: float) -> None:
    """Launch rank r's executable graph ``steps`` times on ``streams[r]`` with device r current,
    from a thread per rank (a rank's collective waits for the other's part), then wait for the
    stream, watching the communicators the graph captured (``nccl.synchronize``, bounded); the threads are joined within ``join_s`` seconds, and
    none may hang or fail."""
    problems = []

    def replay(r: int) -> None:
        try:
            with rt.Device(r):
                for _ in range(steps):
                    exes[r].launch(streams[r])
                nccl.synchronize(streams[r], [exes[r]], timeout=30)
        except BaseException as exc:  # reported below
            problems.append(f"rank {r}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=replay, args=(r,)) for r in range(len(exes))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(join_s)
    assert not any(t.is_alive() for t in threads), "a replay thread hung"
    assert problems == []


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
    replay_each_rank(exes, s, STEPS, join_s=120)
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


def test_numbers_out_of_their_c_range_and_bad_timeouts_are_refused_naming_the_call(sim2):
    """What cffi would refuse with a bare OverflowError or TypeError (an int parameter of NCCL's
    past 32 bits, a host scalar that does not fit its type), and timeouts that are not positive
    seconds (a bound already past would abort the communicators at once), are InvalidValue
    naming the call, before the library; the communicators stay usable."""
    comms = nccl.Communicator.init_all([0, 1])
    s, bufs = streams_and(comms, lambda r: rt.malloc(64))
    c = comms[0]
    lib = nccl.library().lib
    uid = nccl.unique_id()

    def refused(fn, api, *words):
        before = lib.calls
        with pytest.raises(errors.InvalidValue) as info:
            fn()
        assert info.value.api == api, (info.value.api, api)
        assert lib.calls == before, "the library was called"
        for w in words:
            assert w in str(info.value), (w, str(info.value))

    big = 1 << 31
    refused(lambda: nccl.Communicator(big, 0, uid), "ncclCommInitRankConfig", f"nranks {big} is out of range")
    refused(lambda: nccl.Communicator(-big - 1, 0, uid), "ncclCommInitRankConfig", "out of range")
    with nccl.group():
        refused(lambda: c.split(big), "ncclCommSplit", f"color {big} is out of range")
        refused(lambda: c.split(0, key=big), "ncclCommSplit", f"key {big} is out of range")
        refused(lambda: c.split(0, key=1.0), "ncclCommSplit", "key must be an int")
        refused(lambda: c.split(-1), "ncclCommSplit", "color must be >= 0 or None")
    assert nccl._group_depth() == 0
    refused(lambda: c.all_reduce(bufs[0], bufs[0], s[0], dtype="float32", count=-1), "ncclAllReduce",
            "count must be >= 0")
    refused(lambda: c.all_reduce(bufs[0], bufs[0], s[0], dtype="float32", count=big), "ncclAllReduce",
            f"the call needs {big}")  # (a size_t: past 32 bits is a count, too large for the buffer)
    premul = "ncclRedOpCreatePreMulSum"
    refused(lambda: c.premul_sum(big, dtype="int32"), premul, f"the scalar {big} does not fit int32")
    refused(lambda: c.premul_sum(-1, dtype="uint8"), premul, "the scalar -1 does not fit uint8")
    refused(lambda: c.premul_sum(1.5, dtype="int64"), premul, "a host scalar of int64 must be an int")
    refused(lambda: c.premul_sum(3), premul, "a host scalar needs dtype=")
    refused(lambda: c.premul_sum(3, dtype="float16"), premul, "a host scalar of float16: give it in device memory")
    refused(lambda: c.premul_sum(True, dtype="int32"), premul, "bool is not device memory")
    for bad in (0, -1, float("nan"), True, "3"):
        refused(lambda: nccl.synchronize(s[0], timeout=bad), "nccl.synchronize", "timeout must be positive")
        refused(lambda: c.synchronize(s[0], timeout=bad), "Communicator.synchronize", "timeout must be positive")
        refused(lambda: nccl.Communicator.init_all([0], timeout=bad), "Communicator.init_all", "timeout must")
        refused(lambda: nccl.Communicator(2, 0, uid, timeout=bad), "ncclCommInitRankConfig", "timeout must")
        refused(lambda: c.close(timeout=bad), "Communicator.close", "timeout must be positive")
        refused(lambda: nccl.UniqueId.from_file("/nonexistent/id", timeout=bad), "UniqueId.from_file",
                "timeout must be positive")
        with nccl.group():
            refused(lambda: c.split(0, timeout=bad), "ncclCommSplit", "timeout must be positive")
    refused(lambda: nccl.Communicator.from_env(timeout=None), "Communicator.from_env",
            "timeout must be positive seconds, got None")
    # watch: communicators and graphs, in a sequence (anything else would be watched for nothing)
    refused(lambda: nccl.synchronize(s[0], [c, 5]), "nccl.synchronize", "int is not a Communicator")
    refused(lambda: nccl.synchronize(s[0], c), "nccl.synchronize", "got one Communicator (put it in a list)")
    refused(lambda: nccl.synchronize(s[0], 5), "nccl.synchronize", "a sequence of communicators and graphs")
    refused(lambda: nccl.synchronize(bufs[0]), "nccl.synchronize", "expected a pygraphrt Stream")
    assert not any(x.is_closed for x in comms)
    each(comms, lambda r, x: x.all_reduce(bufs[r], bufs[r], s[r], dtype="float32"))
    for r, x in enumerate(comms):
        x.synchronize(s[r], timeout=5)
    with nccl.group():
        for x in comms:
            x.close()


def test_malformed_cuda_array_interfaces_are_refused_naming_the_call(sim2):
    """A buffer whose ``__cuda_array_interface__`` is malformed (CuPy's, Numba's or one's own),
    or a DLPack producer whose device or capsule is, is InvalidValue naming the collective, before
    the library (it was a KeyError, TypeError or ValueError)."""
    from tests.test_operands import MALFORMED_INTERFACES, MALFORMED_LAYOUTS

    comms = nccl.Communicator.init_all([0, 1])
    s, bufs = streams_and(comms, lambda r: rt.malloc(64))
    lib = nccl.library().lib

    class Array:
        def __init__(self, iface):
            self.__cuda_array_interface__ = iface

    for iface, detail in MALFORMED_INTERFACES + MALFORMED_LAYOUTS:
        for role in ("sendbuf", "recvbuf"):
            before = lib.calls
            args = [bufs[0], bufs[0]]
            args[role == "recvbuf"] = Array(iface)
            with pytest.raises(errors.InvalidValue) as info:
                comms[0].all_reduce(*args, s[0], dtype="float32", count=4)
            assert info.value.api == "ncclAllReduce" and detail in str(info.value), (iface, str(info.value))
            assert lib.calls == before
    masked = Array({"shape": (4,), "typestr": "<f4", "data": (bufs[0].ptr, False), "mask": object()})
    with pytest.raises(errors.InvalidValue, match="sendbuf: a masked array"):
        comms[0].all_reduce(masked, bufs[0], s[0], count=4)

    class NoInterface:
        __cuda_array_interface__ = None  # (the class has the attribute; the object has none)

    with pytest.raises(errors.InvalidValue, match=r"sendbuf: NoInterface.__cuda_array_interface__ is None"):
        comms[0].all_reduce(NoInterface(), bufs[0], s[0], dtype="float32", count=4)
    from tests.test_operands import MALFORMED_DLPACK

    for producer, detail in MALFORMED_DLPACK:  # (DLPack producers: their device and capsule)
        with pytest.raises(errors.InvalidValue) as info:
            comms[0].all_reduce(producer, bufs[0], s[0], dtype="float32", count=4)
        assert info.value.api == "ncclAllReduce" and detail in str(info.value), (detail, str(info.value))
    each(comms, lambda r, c: c.all_reduce(bufs[r], bufs[r], s[r], dtype="float32"))  # still usable
    for c in comms:
        c.abort()


def test_synchronize_waits_are_bounded_and_abort_what_they_watch(sim2, monkeypatch):
    """A stream that never finishes (on a GPU: a peer that never arrives, and NCCL says nothing):
    ``synchronize(timeout=)`` gives up after the timeout, aborts every communicator it watched
    -- those given (first) and those that ran eager work on the stream -- and says which; the
    others stay open."""
    comms = nccl.Communicator.init_all([0, 1])
    other = nccl.Communicator.init_all([0, 1])
    s, bufs = streams_and(comms, lambda r: rt.malloc(64))
    each(comms, lambda r, c: c.all_reduce(bufs[r], bufs[r], s[r], dtype="float32"))  # s[r] ran comms[r]'s work
    nccl.synchronize(s[0], [other[1]], timeout=5)  # done: returns, aborting nothing
    assert not any(c.is_closed for c in comms + other)
    monkeypatch.setattr(rt.Stream, "is_done", property(lambda self: False))
    raised: list[BaseException] = []

    def wait() -> None:  # (in a thread: were the wait unbounded, this test would not hang with it)
        try:
            nccl.synchronize(s[0], [other[1]], timeout=0.2)
        except BaseException as exc:
            raised.append(exc)

    start = time.monotonic()
    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    waiter.join(10)
    took = time.monotonic() - start
    assert not waiter.is_alive(), "synchronize(timeout=0.2) was still waiting after 10 s"
    assert 0.2 <= took < 10, took
    assert len(raised) == 1 and isinstance(raised[0], errors.CommTimeout), raised
    exc = raised[0]
    assert exc.api == "nccl.synchronize" and exc.vendor == "nccl"
    assert "not done after 0.2 s; aborted communicators: rank 1, rank 0" in str(exc), str(exc)
    assert comms[0].is_closed and other[1].is_closed
    assert not comms[1].is_closed and not other[0].is_closed
    with pytest.raises(errors.CommTimeout):  # the communicator's own timeout= bounds its wait too
        comms[1].synchronize(s[1], timeout=0.05)
    assert comms[1].is_closed
    monkeypatch.undo()
    other[0].abort()


def test_split_orders_the_new_ranks_by_key(sim2):
    """ncclCommSplit: ranks of one color form a communicator ordered by ``key`` (here the reverse
    of their ranks; color 0 is a color), which an all-gather shows."""
    comms = nccl.Communicator.init_all([0, 1])
    with nccl.group():
        kids = [c.split(0, key=10 - c.rank) for c in comms]
    assert [(k.rank, k.size) for k in kids] == [(1, 2), (0, 2)]
    xs = [np.full(4, 10 + r, np.int32) for r in range(2)]
    s, bufs = streams_and(comms, lambda r: (buffer_of(xs[r]), rt.malloc(8 * 4)))
    each(kids, lambda r, k: k.all_gather(bufs[r][0], bufs[r][1], s[r], dtype="int32"))
    for r in range(2):  # the child's rank 0 is the parent's rank 1
        assert (read(bufs[r][1], np.int32, 8) == np.concatenate([xs[1], xs[0]])).all(), r
    with nccl.group():
        for k in kids + comms:
            k.close()


def test_premul_sum_of_host_scalars_is_read_when_made(sim2):
    """A Python number (``ncclScalarHostImmediate``) of an integer or a float type."""
    comms = nccl.Communicator.init_all([0, 1])
    xs = [np.arange(N, dtype=np.int64) + 100 * r for r in range(2)]
    fs = [x.astype(np.float64) for x in xs]
    s, bufs = streams_and(comms, lambda r: (buffer_of(xs[r]), buffer_of(fs[r]), rt.malloc(N * 8)))
    iops = [c.premul_sum(3, dtype="int64") for c in comms]
    fops = [c.premul_sum(0.5, dtype="float64") for c in comms]
    assert [(o.dtype, o.comm) for o in iops] == [("int64", c) for c in comms]
    each(comms, lambda r, c: c.all_reduce(bufs[r][0], bufs[r][2], s[r], iops[r], dtype="int64"))
    assert all((read(bufs[r][2], np.int64, N) == 3 * (xs[0] + xs[1])).all() for r in range(2))
    each(comms, lambda r, c: c.all_reduce(bufs[r][1], bufs[r][2], s[r], fops[r], dtype="float64"))
    assert all((read(bufs[r][2], np.float64, N) == 0.5 * (fs[0] + fs[1])).all() for r in range(2))
    with pytest.raises(errors.InvalidValue, match="the reduction is for int64, the buffers are float64"):
        comms[0].all_reduce(bufs[0][1], bufs[0][2], s[0], iops[0], dtype="float64")
    with pytest.raises(errors.InvalidValue, match="belongs to another communicator"):
        comms[0].all_reduce(bufs[0][0], bufs[0][2], s[0], iops[1], dtype="int64")
    iops[0].destroy()
    iops[0].destroy()  # (a second destroy does nothing)
    with pytest.raises(errors.InvalidValue, match="the reduction was destroyed"):
        comms[0].all_reduce(bufs[0][0], bufs[0][2], s[0], iops[0], dtype="int64")
    with nccl.group():
        for c in comms:
            c.close()


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
