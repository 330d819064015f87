"""Rank processes of the NCCL GPU tests (tests/gpu/test_nccl.py).

Started by ``multiprocessing`` (spawn: the functions below) or by ``torchrun`` (``python -m
torch.distributed.run --nproc-per-node 2 tests/gpu/nccl_workers.py``: :func:`torchrun_main`).
Every one sets ``NCCL_NVLS_ENABLE=0`` before NCCL starts (NVLink multicast stays off on the
shared GPU machines).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ["NCCL_NVLS_ENABLE"] = "0"

STEPS = 1000
N = 1024


def reference(nranks: int) -> list[Any]:
    """Each rank's buffer after STEPS of: x += 1; all_reduce(avg); x += 0.5 * (rank + 1) --
    multiples of 0.25 below 2**12, exact in float32 whatever the order of the sums."""
    import numpy as np

    xs = [np.arange(N, dtype=np.float32) + r * N for r in range(nranks)]
    for _ in range(STEPS):
        avg = sum(x + 1 for x in xs) / nranks
        xs = [(avg + np.float32(0.5 * (r + 1))).astype(np.float32) for r in range(nranks)]
    return xs


def _setup(rank: int) -> Any:
    import pygraphrt as rt

    rt.Device(rank).set_current()
    return rt


def captured_step(comm: Any, rank: int, timeout: float) -> list[str]:
    """Eager STEPS and captured-then-replayed STEPS of (kernel, all-reduce, kernel); both must
    equal the numpy reference.  Returns what went wrong (empty: nothing)."""
    import numpy as np

    import pygraphrt as rt
    from pygraphrt import nccl

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.gpu.kernels import add_kernel

    add = add_kernel()
    s = rt.Stream()
    x0 = (np.arange(N, dtype=np.float32) + rank * N).tobytes()
    want = reference(comm.size)[rank]
    problems = []

    def step(buf: Any) -> None:
        add.launch(s, buf.ptr, 1.0, N)
        comm.all_reduce(buf, buf, s, "avg", dtype="float32")
        add.launch(s, buf.ptr, 0.5 * (rank + 1), N)

    eager = rt.malloc(N * 4)
    eager.copy_from(x0)
    for _ in range(STEPS):
        step(eager)
    nccl.synchronize(s, [comm], timeout=timeout)
    got_eager = np.frombuffer(eager.to_bytes(), np.float32)
    if not (got_eager == want).all():
        problems.append(f"rank {rank}: eager differs from numpy at {np.flatnonzero(got_eager != want)[:5]}")
    graphed = rt.malloc(N * 4)
    graphed.copy_from(x0)
    with s.capture() as cap:
        step(graphed)
    exe = cap.graph.instantiate()
    for _ in range(STEPS):
        exe.launch(s)
    nccl.synchronize(s, [comm], timeout=timeout)
    got_graph = np.frombuffer(graphed.to_bytes(), np.float32)
    if not (got_graph == got_eager).all():
        problems.append(f"rank {rank}: 1000 replays differ from eager at {np.flatnonzero(got_graph != got_eager)[:5]}")
    try:
        comm.close(timeout=timeout)
        problems.append(f"rank {rank}: close() with a live executable graph was not refused")
    except rt.errors.IllegalState as exc:
        if "GraphExec" not in str(exc):
            problems.append(f"rank {rank}: the refusal does not name the graph: {exc}")
    del exe, cap
    import gc

    gc.collect()
    return problems


def file_rank(rank: int, nranks: int, id_path: str, out: Any, timeout: float | None = 120.0) -> None:
    """A rank of a job whose unique id is passed through a file (no torch); ``timeout`` None:
    a blocking communicator (NCCL's default), else a non-blocking one with bounded waits."""
    try:
        _setup(rank)
        from pygraphrt import nccl

        if rank == 0:
            nccl.unique_id().to_file(id_path)
        uid = nccl.UniqueId.from_file(id_path, timeout=120)
        comm = nccl.Communicator(nranks, rank, uid, device=rank, timeout=timeout)
        problems = captured_step(comm, rank, 120 if timeout is None else timeout)
        comm.close()
        out.put((rank, problems, nccl.library().version_str, nccl.library().how))
    except BaseException as exc:  # report, never hang the parent
        out.put((rank, [f"rank {rank}: {type(exc).__name__}: {exc}"], None, None))


def failing_rank(rank: int, id_path: str, out: Any, wait: float) -> None:
    """Rank 1 dies after the communicator is made, before the collective; rank 0's bounded
    wait must abort and report within ``wait`` seconds (plus polling slack)."""

    def report(*item: Any) -> None:  # (flushed: the process ends with os._exit)
        out.put(item)
        out.close()
        out.join_thread()

    try:
        rt = _setup(rank)
        from pygraphrt import nccl

        if rank == 0:
            nccl.unique_id().to_file(id_path)
        uid = nccl.UniqueId.from_file(id_path, timeout=120)
        comm = nccl.Communicator(2, rank, uid, device=rank, timeout=120)
        if rank == 1:
            report(rank, "died", 0.0)
            os._exit(3)
        buf = rt.malloc(1 << 20)
        s = rt.Stream()
        time.sleep(1.0)  # rank 1 is gone by now
        comm.timeout = wait  # every wait from here on: the collective's too
        t0 = time.monotonic()
        try:
            comm.all_reduce(buf, buf, s, dtype="float32")
            nccl.synchronize(s, [comm], timeout=wait)
            report(rank, "the wait returned", time.monotonic() - t0)
        except rt.errors.GraphRTError as exc:
            report(rank, f"{type(exc).__name__}: closed={comm.is_closed}: {exc}", time.monotonic() - t0)
    except BaseException as exc:
        report(rank, f"setup failed: {type(exc).__name__}: {exc}", -1.0)
    os._exit(0)  # (a stuck kernel must not keep the process: the parent waits for it)


WHILE_SOURCE = r"""
extern "C" __global__ void arm(cudaGraphConditionalHandle h, int *counter, int *iterations, int n) {
    *counter = n; *iterations = 0; cudaGraphSetConditional(h, n > 0); }
extern "C" __global__ void count_down(cudaGraphConditionalHandle h, int *counter, int *iterations) {
    *iterations += 1; int c = --(*counter); cudaGraphSetConditional(h, c > 0); }
"""


def while_body_rank(rank: int, id_path: str, out: Any, iterations: int, log: str | None = None,
                    wait: float = 60.0, exit_after: bool = False) -> None:
    """The conditional-body probe (issue 41, item 6): a WHILE body holding (count_down kernel,
    all-reduce sum), every rank looping ``iterations`` times, with pygraphrt's setting forced
    to "checked" so that NCCL and the runtime are asked.  Reports (rank, outcome, detail):
    "ran" (detail: whether every element is 3 * 2**(iterations-1) and the loop ran
    ``iterations`` times, and the body's node types), "refused by pygraphrt" (the body-node
    check: NCCL added a node the rule forbids), "refused by NCCL or the runtime" (its call
    failed while capturing into the body), "instantiate refused", or "launched, did not
    finish" (the loop's wait, bounded by ``wait``, expired or NCCL reported an error: the
    communicator aborted).  Each stage reached is appended to ``log`` (a file: what a run cut
    short still tells); ``exit_after``: leave with os._exit once reported (a spawned rank: a
    stuck kernel must not keep the process)."""

    def stage(text: str) -> None:
        if log is not None:
            with open(log, "a") as f:
                f.write(f"{time.strftime('%H:%M:%S')} rank {rank}: {text}\n")

    def report(*item: Any) -> None:
        stage(f"outcome: {item[1]}: {item[2]}")
        out.put(item)
        if exit_after:
            out.close()
            out.join_thread()
            os._exit(0)

    try:
        import numpy as np

        rt = _setup(rank)
        from pygraphrt import errors, nccl
        from pygraphrt.graph import SET_CONDITIONAL_SOURCE

        nccl.COLLECTIVES_IN_CONDITIONAL_BODIES = "checked"  # probe NCCL and the runtime themselves
        stage("started")
        if rank == 0:
            nccl.unique_id().to_file(id_path)
        uid = nccl.UniqueId.from_file(id_path, timeout=wait)
        comm = nccl.Communicator(2, rank, uid, device=rank, timeout=wait)
        stage(f"communicator ready (NCCL {nccl.library().version_str})")
        prog = rt.Program(SET_CONDITIONAL_SOURCE + WHILE_SOURCE, name="nccl_while.cu")
        arm = prog.kernel("arm", signature="cudaGraphConditionalHandle h, int *counter, int *iterations, int n")
        count_down = prog.kernel("count_down", signature="cudaGraphConditionalHandle h, int *counter, "
                                                         "int *iterations")
        s = rt.Stream()
        state = rt.malloc(8)
        buf = rt.malloc(N * 4)
        buf.copy_from(np.full(N, rank + 1, np.float32).tobytes())
        g = rt.Graph()
        h = g.conditional_handle()
        armed = g.add_kernel(arm, 1, 1, [h, state, state.ptr + 4, iterations])
        loop = g.add_while(h, dependencies=[armed])
        body = loop.bodies[0]
        counted = body.add_kernel(count_down, 1, 1, [h, state, state.ptr + 4])
        def body_types(graph: Any) -> str:
            try:
                return str(sorted(n.type.value for n in graph.nodes()))
            except errors.GraphRTError as exc:  # (a failed capture may have destroyed the graph)
                return f"unreadable ({type(exc).__name__})"

        stage("kernels compiled; capturing the all-reduce into the WHILE body")
        try:  # (thread_local: the simulator's check of this probe runs ranks as threads of one process)
            with s.capture("thread_local", graph=body, dependencies=[counted]):
                comm.all_reduce(buf, buf, s, "sum", dtype="float32")
        except errors.NotSupported as exc:
            report(rank, "refused by pygraphrt", f"{exc} | body: {body_types(body)}")
            comm.abort()
            return
        except errors.GraphRTError as exc:
            report(rank, "refused by NCCL or the runtime", f"{type(exc).__name__}: {exc} {getattr(exc, '__notes__', '')}")
            comm.abort()
            return
        types = body_types(body)
        stage(f"captured; the body holds {types}; instantiating")
        try:
            exe = g.instantiate()
        except errors.GraphRTError as exc:
            report(rank, "instantiate refused", f"{type(exc).__name__}: {exc} | body: {types}")
            comm.abort()
            return
        stage("instantiated; launching")
        exe.launch(s)
        try:
            nccl.synchronize(s, [comm], timeout=wait)
        except errors.GraphRTError as exc:  # (synchronize aborted the communicator)
            report(rank, "launched, did not finish", f"{type(exc).__name__}: {exc} | body: {types}")
            return
        stage("the loop finished")
        got = np.frombuffer(buf.to_bytes(), np.float32)
        runs = int(np.frombuffer(state.to_bytes(8), np.int32)[1])
        right = bool((got == np.float32(3 * 2 ** (iterations - 1))).all()) and runs == iterations
        del exe, g, h, loop, body, armed, counted  # (what refers to the graphs: then they are gone)
        import gc

        gc.collect()
        comm.close(timeout=wait)
        report(rank, "ran", f"right={right} iterations={runs} first={float(got[0])} body: {types}")
    except BaseException as exc:  # report, never hang the parent
        report(rank, "setup failed", f"{type(exc).__name__}: {exc}")


def update_reference(x0: list[Any], steps: list[tuple[float, int]]) -> list[Any]:
    """Every rank's buffer after ``steps`` of (x += 1; all_reduce sum of the first ``count``
    elements; x += v), for (v, count) in ``steps`` -- halves and integers below 2**22: exact in
    float32 whatever the order of the sums."""
    import numpy as np

    xs = [x.astype(np.float32).copy() for x in x0]
    for v, count in steps:
        xs = [x + np.float32(1) for x in xs]
        total = sum(x[:count] for x in xs)
        for x in xs:
            x[:count] = total
        xs = [x + np.float32(v) for x in xs]
    return xs


def update_rank(rank: int, id_path: str, out: Any, n: int = N, replays: int = 8, wait: float = 60.0) -> None:
    """Exec update of a graph holding a collective (issue 41, item 4): capture (kernel,
    all-reduce, kernel) on buffer A and instantiate it; replay; then recapture the same step
    (i) on buffer B with another kernel scalar, (ii) on B with half the count, and update the
    executable from each (``GraphExec.update``).  Reports (rank, outcomes, problems): per
    variant "accepted" (then replayed, the result checked against numpy, A left alone, the
    recaptured graph closed before a last replay: the executable must keep NCCL's plan) or
    "refused: <update result>" (the error must say why).  Both ranks run the same variants in
    the same order (NCCL's capture rule); a refusal on one rank only would leave the other's
    replay waiting, bounded by ``wait``."""
    import gc

    import numpy as np

    outcomes: dict[str, str] = {}
    problems: list[str] = []
    try:
        rt = _setup(rank)
        from pygraphrt import errors, nccl
        from tests.gpu.kernels import SOURCE as ADD_SOURCE

        if rank == 0:
            nccl.unique_id().to_file(id_path)
        uid = nccl.UniqueId.from_file(id_path, timeout=wait)
        comm = nccl.Communicator(2, rank, uid, device=rank, timeout=wait)
        add = rt.Program(ADD_SOURCE).kernel("add", signature="float *x, float v, int n")
        s = rt.Stream()
        x0 = [np.arange(n, dtype=np.float32) + r * n for r in range(2)]
        y0 = [np.arange(n, dtype=np.float32)[::-1].copy() * (r + 1) for r in range(2)]
        a, b = rt.malloc(n * 4), rt.malloc(n * 4)
        a.copy_from(x0[rank].tobytes())
        b.copy_from(y0[rank].tobytes())

        def capture(buf: Any, v: float, count: int) -> Any:
            with s.capture("thread_local") as cap:
                add.launch(s, 1, n, buf, 1.0, n)
                comm.all_reduce(buf, buf, s, "sum", dtype="float32", count=count)
                add.launch(s, 1, n, buf, v, n)
            return cap.graph

        def replay(exe: Any, times: int) -> None:
            for _ in range(times):
                exe.launch(s)
            nccl.synchronize(s, [comm], timeout=wait)

        def now(buf: Any) -> Any:
            return np.frombuffer(buf.to_bytes(), np.float32)

        g1 = capture(a, 0.5, n)
        exe = g1.instantiate()
        replay(exe, replays)
        a_after = update_reference(x0, [(0.5, n)] * replays)[rank]
        if not (now(a) == a_after).all():
            problems.append(f"rank {rank}: the first graph's replays differ from numpy")
        done: list[tuple[float, int]] = []
        for name, v, count in (("another buffer and scalar", 2.0, n), ("half the count", 2.0, n // 2)):
            g2 = capture(b, v, count)
            try:
                exe.update(g2)
            except errors.GraphExecUpdateError as exc:
                outcomes[name] = f"refused: {exc.result}"
                if str(exc.result) not in str(exc):
                    problems.append(f"rank {rank}: {name}: the refusal does not say why: {exc}")
                g2.close()
                continue
            outcomes[name] = "accepted"
            replay(exe, replays)
            done += [(v, count)] * replays
            g2.close()  # the executable keeps what it runs (NCCL's plan: a user object of the graph)
            del g2
            gc.collect()
            replay(exe, 1)
            done.append((v, count))
            want = update_reference(y0, done)[rank]
            got = now(b)
            if not (got == want).all():
                problems.append(f"rank {rank}: {name}: differs from numpy at {np.flatnonzero(got != want)[:5]}")
            if not (now(a) == a_after).all():
                problems.append(f"rank {rank}: {name}: the replays after the update still wrote buffer A")
            if comm not in nccl.communicators_of(exe):
                problems.append(f"rank {rank}: {name}: the updated executable holds no lease on the communicator")
        del exe, g1
        gc.collect()
        comm.close(timeout=wait)
    except BaseException as exc:  # report, never hang the parent
        problems.append(f"rank {rank}: {type(exc).__name__}: {exc}")
    out.put((rank, outcomes, problems))


def torchrun_main() -> int:
    """One rank under torchrun: from_env (the unique id through torchrun's store), eager
    collectives against numpy, the captured step, then from_process_group over gloo."""
    import numpy as np

    rank = int(os.environ["RANK"])
    rt = _setup(int(os.environ["LOCAL_RANK"]))
    from pygraphrt import nccl

    comm = nccl.Communicator.from_env(timeout=120)
    problems = []
    s = rt.Stream()
    n = 256
    mine = np.arange(n, dtype=np.int64) * (rank + 1)
    src, dst = rt.malloc(n * 8), rt.malloc(n * 8 * comm.size)
    src.copy_from(mine.tobytes())
    comm.all_reduce(src, dst, s, "sum", dtype="int64", count=n)
    nccl.synchronize(s, timeout=120)
    total = sum(np.arange(n, dtype=np.int64) * (r + 1) for r in range(comm.size))
    if not (np.frombuffer(dst.to_bytes(n * 8), np.int64) == total).all():
        problems.append("all_reduce differs from numpy")
    comm.all_gather(src, dst, s, dtype="int64")
    nccl.synchronize(s, timeout=120)
    gathered = np.concatenate([np.arange(n, dtype=np.int64) * (r + 1) for r in range(comm.size)])
    if not (np.frombuffer(dst.to_bytes(), np.int64) == gathered).all():
        problems.append("all_gather differs from numpy")
    problems += captured_step(comm, rank, 120)
    comm.close(timeout=120)
    import torch.distributed as dist

    dist.init_process_group("gloo")
    pg_comm = nccl.Communicator.from_process_group(device=int(os.environ["LOCAL_RANK"]), timeout=120)
    if (pg_comm.rank, pg_comm.size) != (dist.get_rank(), dist.get_world_size()):
        problems.append(f"from_process_group: rank {pg_comm.rank} size {pg_comm.size}")
    pg_comm.close(timeout=120)
    dist.destroy_process_group()
    print(f"rank {rank}: {'ok' if not problems else problems} (NCCL {nccl.library().version_str}, "
          f"{nccl.library().how})", flush=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(torchrun_main())
