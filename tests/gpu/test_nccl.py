"""pygraphrt.nccl on GPUs: 2 GPUs, NCCL found as pygraphrt finds it (torch's nvidia-nccl-cu13 on
the GPU machine).  One process x 2 GPUs (init_all, eager); 2 processes x 1 GPU with the id
through a file (a captured kernel + all-reduce + kernel step replayed 1000x equal to eager, and
close() with a live graph refused); torchrun --nproc-per-node 2 (from_env through torchrun's
store, from_process_group); a rank that dies before a collective (plain multiprocessing, since
torchrun would terminate the survivor): the survivor's bounded wait aborts and reports in time.
NCCL_NVLS_ENABLE=0 everywhere: NVLink multicast stays off on the shared machines."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

os.environ["NCCL_NVLS_ENABLE"] = "0"

pytestmark = pytest.mark.gpu
REPO = Path(__file__).resolve().parents[2]


def need_two_gpus() -> None:
    from pygraphrt import _runtime, errors, nccl

    count = _runtime.active().device_count()
    if count < 2:
        pytest.skip(f"needs 2 GPUs; {count} present")
    try:
        nccl.library()
    except errors.BackendError as exc:
        pytest.skip(f"no NCCL library: {exc}")


def test_eager_collectives_one_process_two_gpus():
    need_two_gpus()
    import numpy as np

    import pygraphrt as rt
    from pygraphrt import nccl

    comms = nccl.Communicator.init_all([0, 1], timeout=120)
    n = 4096
    rng = np.random.default_rng(3)
    xs = [rng.integers(0, 1000, n).astype(np.int32) for _ in comms]
    streams, send, recv = [], [], []
    for r, c in enumerate(comms):
        rt.Device(c.device).set_current()
        streams.append(rt.Stream())
        send.append(rt.malloc(n * 4))
        send[r].copy_from(xs[r].tobytes())
        recv.append(rt.malloc(2 * n * 4))

    def each(fn):
        with nccl.group():
            for r, c in enumerate(comms):
                fn(r, c)
        for s in streams:
            nccl.synchronize(s, timeout=120)

    def got(r, count=n):
        return np.frombuffer(recv[r].to_bytes(count * 4), np.int32)

    ref = {"sum": xs[0] + xs[1], "prod": xs[0] * xs[1], "max": np.maximum(*xs), "min": np.minimum(*xs),
           "avg": (xs[0] + xs[1]) // 2}
    for op, want in ref.items():
        each(lambda r, c: c.all_reduce(send[r], recv[r], streams[r], op, dtype="int32", count=n))
        for r in range(2):
            assert (got(r) == want).all(), (op, r)
    each(lambda r, c: c.broadcast(send[r], recv[r], 1, streams[r], dtype="int32", count=n))
    assert (got(0) == xs[1]).all() and (got(1) == xs[1]).all()
    each(lambda r, c: c.reduce(send[r], recv[r], 0, streams[r], "max", dtype="int32", count=n))
    assert (got(0) == ref["max"]).all()
    each(lambda r, c: c.all_gather(send[r], recv[r], streams[r], dtype="int32"))
    assert all((got(r, 2 * n) == np.concatenate(xs)).all() for r in range(2))
    each(lambda r, c: c.reduce_scatter(send[r], recv[r], streams[r], "sum", dtype="int32", count=n // 2))
    assert (got(0, n // 2) == ref["sum"][: n // 2]).all() and (got(1, n // 2) == ref["sum"][n // 2:]).all()
    each(lambda r, c: (c.send(send[r], 1 - r, streams[r], dtype="int32"),
                       c.recv(recv[r], 1 - r, streams[r], dtype="int32", count=n)))
    assert (got(0) == xs[1]).all() and (got(1) == xs[0]).all()
    each(lambda r, c: c.all_to_all(send[r], recv[r], streams[r], dtype="int32", count=n // 2))
    h = n // 2
    assert (got(0) == np.concatenate([xs[0][:h], xs[1][:h]])).all()
    assert (got(1) == np.concatenate([xs[0][h:], xs[1][h:]])).all()
    scalars = []
    for c in comms:
        rt.Device(c.device).set_current()
        sc = rt.malloc(4)
        sc.copy_from(np.array([3], np.int32).tobytes())
        scalars.append(sc)
    ops = [c.premul_sum(scalars[r], dtype="int32") for r, c in enumerate(comms)]
    each(lambda r, c: c.all_reduce(send[r], recv[r], streams[r], ops[r], dtype="int32", count=n))
    assert (got(0) == 3 * ref["sum"]).all() and (got(1) == 3 * ref["sum"]).all()
    with nccl.group():
        for c in comms:
            c.close()
    assert all(c.is_closed for c in comms)


def test_torch_tensors_as_buffers_one_process_two_gpus():
    """torch tensors as buffers (issue 41, item 4), eager, one process x 2 GPUs: dtype and size
    read from the tensor (int32, bfloat16 -- which torch's __cuda_array_interface__ refuses --
    float16), against torch's own sums; a tensor on the other GPU, a CPU tensor, a strided view
    and a dtype that disagrees refused before NCCL.  Every wait bounded."""
    need_two_gpus()
    torch = pytest.importorskip("torch")
    import pygraphrt as rt
    from pygraphrt import errors, nccl

    comms = nccl.Communicator.init_all([0, 1], timeout=120)
    streams = []
    for c in comms:
        rt.Device(c.device).set_current()
        streams.append(rt.Stream())
    n = 1000
    for dt in (torch.int32, torch.bfloat16, torch.float16):
        xs = [(torch.arange(n, device=f"cuda:{r}") % 17 + r).to(dt) for r in range(2)]  # small integers: exact
        ys = [torch.zeros(n, dtype=dt, device=f"cuda:{r}") for r in range(2)]
        for r in range(2):
            torch.cuda.synchronize(r)  # (torch filled them on its own stream)
        with nccl.group():
            for r, c in enumerate(comms):
                c.all_reduce(xs[r], ys[r], streams[r], "sum")
        for s in streams:
            nccl.synchronize(s, timeout=120)
        want = (xs[0].cpu().float() + xs[1].cpu().float()).to(dt)
        for r in range(2):
            assert torch.equal(ys[r].cpu(), want), (dt, r)
    c, s = comms[0], streams[0]
    on1 = torch.zeros(8, dtype=torch.float32, device="cuda:1")
    on0 = torch.zeros(8, dtype=torch.float32, device="cuda:0")
    for bad, words in ((lambda: c.all_reduce(on1, on0, s), "sendbuf is on device 1"),
                       (lambda: c.all_reduce(torch.zeros(8), on0, s), "CPU torch.Tensor"),
                       (lambda: c.all_reduce(torch.zeros(4, 4, device="cuda:0")[:, 0], on0, s), "not contiguous"),
                       (lambda: c.all_reduce(on0, on0, s, dtype="int32"), "dtype int32 given")):
        with pytest.raises(errors.InvalidValue, match=words):
            bad()
    with nccl.group():
        for comm in comms:
            comm.close()


def test_cupy_arrays_as_buffers_one_process_two_gpus():
    """CuPy arrays (__cuda_array_interface__, device from .device.id) as buffers, eager."""
    need_two_gpus()
    cp = pytest.importorskip("cupy")
    import numpy as np

    import pygraphrt as rt
    from pygraphrt import nccl

    comms = nccl.Communicator.init_all([0, 1], timeout=120)
    xs, ys, streams = [], [], []
    for r, c in enumerate(comms):
        rt.Device(c.device).set_current()
        streams.append(rt.Stream())
        with cp.cuda.Device(r):
            xs.append(cp.arange(100, dtype=cp.int64) * (r + 1))
            ys.append(cp.zeros(100, dtype=cp.int64))
            cp.cuda.Device(r).synchronize()
    with nccl.group():
        for r, c in enumerate(comms):
            c.all_reduce(xs[r], ys[r], streams[r], "sum")
    for s in streams:
        nccl.synchronize(s, timeout=120)
    for r in range(2):
        assert (cp.asnumpy(ys[r]) == np.arange(100) * 3).all()
    with nccl.group():
        for comm in comms:
            comm.close()


def test_close_with_a_live_graph_is_refused():
    need_two_gpus()
    import gc

    import pygraphrt as rt
    from pygraphrt import errors, nccl

    rt.Device(0).set_current()
    comm = nccl.Communicator(1, 0, nccl.unique_id(), device=0, timeout=60)
    s = rt.Stream()
    buf = rt.malloc(1024)
    with s.capture() as cap:
        comm.all_reduce(buf, buf, s, dtype="float32")
    exe = cap.graph.instantiate()
    exe.launch(s)
    nccl.synchronize(s, timeout=60)
    t0 = time.monotonic()
    with pytest.raises(errors.IllegalState, match="GraphExec"):
        comm.close()
    assert time.monotonic() - t0 < 5 and not comm.is_closed
    del exe, cap
    gc.collect()
    comm.close(timeout=60)
    assert comm.is_closed


def _spawn(target, args_of, nranks: int, limit: float) -> list:
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=target, args=args_of(r, out)) for r in range(nranks)]
    for p in procs:
        p.start()
    results = []
    deadline = time.monotonic() + limit
    try:
        while len(results) < nranks and time.monotonic() < deadline:
            try:
                results.append(out.get(timeout=1))
            except Exception:
                if all(not p.is_alive() for p in procs) and out.empty():
                    break
    finally:
        for p in procs:
            p.join(max(0.0, deadline - time.monotonic()) + 5)
            if p.is_alive():
                p.kill()
                results.append(("hung", p.pid))
    return sorted(results, key=lambda r: str(r[0]))


@pytest.mark.parametrize("timeout", [None, 120.0], ids=["blocking", "non-blocking"])
def test_captured_step_two_processes_replayed_1000x(tmp_path, timeout):
    """NCCL's communicators both ways: blocking (its default) and non-blocking (what a timeout
    makes them, so that waits are bounded)."""
    need_two_gpus()
    from tests.gpu import nccl_workers

    results = _spawn(nccl_workers.file_rank, lambda r, q: (r, 2, str(tmp_path / "id"), q, timeout), 2, 600)
    assert len(results) == 2 and all(r[0] in (0, 1) for r in results), results
    for rank, problems, version, how in results:
        assert problems == [], problems
    print("NCCL", results[0][2], "found by", results[0][3])


def test_a_failing_rank_makes_the_survivors_bounded_wait_abort(tmp_path):
    need_two_gpus()
    from tests.gpu import nccl_workers

    wait = 10.0
    results = _spawn(nccl_workers.failing_rank, lambda r, q: (r, str(tmp_path / "id"), q, wait), 2, 300)
    by_rank = {r[0]: r for r in results}
    assert "hung" not in by_rank, results
    assert by_rank[1][1] == "died", results
    _, what, took = by_rank[0]
    assert what.startswith(("CommTimeout", "RemoteError")) and "closed=True" in what, what
    assert took < wait + 5, (took, what)


def test_torchrun_two_processes():
    need_two_gpus()
    pytest.importorskip("torch")
    env = dict(os.environ, NCCL_NVLS_ENABLE="0",
               PYTHONPATH=os.pathsep.join([str(REPO)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           str(REPO / "tests" / "gpu" / "nccl_workers.py")]
    code, out = _run_bounded(cmd, env, REPO, 500)
    assert code == 0, out[-8000:]
    lines = [l for l in out.splitlines() if l.startswith("rank ")]
    assert sorted(l.split(":")[0] for l in lines) == ["rank 0", "rank 1"], out[-8000:]
    assert all(": ok (NCCL" in l for l in lines), out[-8000:]
    print("\n".join(lines))


def test_all_reduce_in_a_while_body(tmp_path):
    """The conditional-body probe (issue 41, item 6), 2 processes x 1 GPU: an all-reduce
    captured into a WHILE body, every rank looping 5 times, with pygraphrt's setting forced to
    "checked" so that NCCL and the runtime are asked.  It holds the finding the setting
    ``"refused"`` rests on (pygraphrt.nccl's docstring; two H200s, NCCL 2.28.9, CUDA 13.0): NCCL
    puts event record/wait nodes into the body and the runtime refuses the graph at
    instantiation, on every rank.  It fails -- so the decision is revisited -- if the loop runs (a
    later NCCL or runtime), if pygraphrt's check refuses first (then "checked" would be safe), on
    a hang or a wrong sum.  Prints each rank's stages and outcome whatever happens; the whole
    probe is bounded (ranks' waits 40 s, the run 150 s)."""
    need_two_gpus()
    from pygraphrt import nccl
    from tests.conftest import require_devices
    from tests.gpu import nccl_workers

    require_devices(2)
    logs = [tmp_path / f"rank{r}.log" for r in range(2)]
    try:
        results = _spawn(nccl_workers.while_body_rank,
                         lambda r, q: (r, str(tmp_path / "id"), q, 5, str(logs[r]), 40.0, True), 2, 150)
    finally:
        for log in logs:
            print(log.read_text() if log.exists() else f"{log.name}: no stage reached")
    print("conditional-body probe:", results)
    assert len(results) == 2 and "hung" not in {r[0] for r in results}, results
    assert nccl.COLLECTIVES_IN_CONDITIONAL_BODIES == "refused"
    for rank, outcome, detail in results:
        assert outcome == "instantiate refused", (
            f"rank {rank}: {outcome} ({detail}) -- not the finding pygraphrt.nccl's setting 'refused' rests on; "
            "revisit COLLECTIVES_IN_CONDITIONAL_BODIES and _CONDITIONAL_BODIES_WHY")
        assert "cudaErrorInvalidValue" in detail and "event_record" in detail and "wait_event" in detail, (rank, detail)


def test_exec_update_of_a_graph_holding_a_collective(tmp_path):
    """Exec update of graphs holding an all-reduce (issue 41, item 4), 2 processes x 1 GPU:
    the step recaptured on another buffer and scalar, then with half the count, and the
    executable updated from each (nccl_workers.update_rank).  Records what the runtime does
    -- printed: the lead reads it -- and passes when every variant is either accepted with
    results equal to numpy (after the recaptured graph is closed too) or refused with an error
    that names the runtime's update result; both ranks must see the same."""
    need_two_gpus()
    from tests.gpu import nccl_workers

    results = _spawn(nccl_workers.update_rank, lambda r, q: (r, str(tmp_path / "id"), q, nccl_workers.N, 8, 60.0),
                     2, 240)
    print("exec update of graphs holding an all-reduce:", results)
    assert len(results) == 2 and "hung" not in {r[0] for r in results}, results
    (_, out0, problems0), (_, out1, problems1) = results
    assert problems0 == [] and problems1 == [], results
    assert out0 == out1 and len(out0) == 2, results
    assert all(v == "accepted" or v.startswith("refused: ") for v in out0.values()), results


def test_docs_collectives_example_under_torchrun(tmp_path):
    """The collectives page's tp_step.py (docs/guide/collectives.md), run by exactly the command
    the page gives (its environment
    assignments, ``torchrun`` -- the one beside this interpreter, else on PATH -- and its
    arguments), 2 processes x 1 GPU, bounded: on expiry torchrun and its workers are killed."""
    need_two_gpus()
    pytest.importorskip("torch")
    import shlex
    import shutil

    from tests.test_docs_examples import collectives_example, collectives_torchrun_command

    words = shlex.split(collectives_torchrun_command())
    assignments = dict(w.split("=", 1) for w in words[: next(i for i, w in enumerate(words) if "=" not in w)])
    argv = words[len(assignments):]
    assert argv[0] == "torchrun" and argv[-1] == "tp_step.py", argv
    beside = Path(sys.executable).with_name("torchrun")
    torchrun = str(beside) if beside.exists() else shutil.which("torchrun")
    if torchrun is None:
        pytest.skip("no torchrun beside this interpreter or on PATH")
    (tmp_path / "tp_step.py").write_text(collectives_example())
    env = dict(os.environ, **assignments,  # (pygraphrt from this checkout, as an install would give it)
               PYTHONPATH=os.pathsep.join([str(REPO)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))
    code, out = _run_bounded([torchrun] + argv[1:], env, tmp_path, 300)
    assert code == 0, out[-8000:]
    lines = sorted(l for l in out.splitlines() if l.startswith("rank "))
    assert lines == [f"rank {i}: y == W @ X + bias after 10 replays: True" for i in (0, 1)], out[-8000:]
    print(" ".join([f"{k}={v}" for k, v in assignments.items()] + [torchrun] + argv[1:]), "->", lines)


def _run_bounded(cmd: list[str], env: dict, cwd: Path, limit: float) -> tuple[int, str]:
    """Run ``cmd`` in a session of its own; past ``limit`` seconds kill the whole session
    (torchrun's workers too, not only torchrun) and fail, with what it printed."""
    import signal

    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=str(cwd),
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        pytest.fail(f"{' '.join(cmd)} did not end within {limit} s (killed): {out[-8000:]}")
    return p.returncode, out
