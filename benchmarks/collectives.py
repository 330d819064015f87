"""The collectives group (issue 41, item 9): ``scripts/bench OUTDIR --group collectives [--quick]``.

Two processes x 1 GPU, started by ``torchrun --standalone --nproc-per-node 2`` (bounded: the
run is killed after ``LIMIT_S``); every contender uses one libnccl, torch's (torch loads it
first; pygraphrt.nccl takes the copy already loaded, and the figures name it).  Per-op latency
of an in-place float32 all-reduce (sum) at 8 B, 1 KiB, 64 KiB and 1 MiB, ``OPS`` ops per trial:

* (a) ``OPS`` all-reduces captured into one pygraphrt graph, replayed (one launch per trial);
* (b) ``OPS`` eager ``Communicator.all_reduce`` calls on a pygraphrt stream, a pygraphrt buffer
  (dtype and count given), on a blocking communicator;
* (b torch tensor) the same with torch's tensor as the buffer (its dtype and size read from it);
* (b raw) the same ``ncclAllReduce`` called through the binding with its arguments made once
  (no checks, no pygraphrt): (b) minus (b raw) is pygraphrt's own cost per call;
* (b non-blocking) the same on a non-blocking communicator (``timeout=``: what makes init and
  close bounded) -- NCCL then launches every eager operation from a thread it starts for it and
  answers ncclInProgress, which pygraphrt polls to completion; reported, no target;
* (c) ``OPS`` ``torch.distributed.all_reduce`` calls on the same ranks (torch's NCCL group,
  whose communicator is blocking: ``TORCH_NCCL_USE_COMM_NONBLOCKING=0`` is set so).

Every contender is timed the same way: the ranks meet at a barrier, the clock starts, ``OPS``
calls are issued with no synchronization between them, one synchronize waits for them all
(pygraphrt's stream; torch's device, ``torch.cuda.synchronize``), the clock stops: the time
divided by ``OPS``.  Targets: (a) at least 2x lower per op than (b) up to 64 KiB (what capture
buys), (b) <= (c) (the binding's own cost).  Bus bandwidth at 256 MiB (nccl-tests' busbw =
algbw * 2(n-1)/n) for (b) and (c).  Rank 0's figures are reported (the ranks meet at every
all-reduce).  Without 2 GPUs or torch the group skips, saying why.

The timing functions take a communicator, stream and buffer, so the smoke test runs them on
the simulator (two ranks in threads, tiny sizes, no timing asserts).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from .stats import Figure, chart, ratio, table, to_json

SIZES = {"8 B": 8, "1 KiB": 1 << 10, "64 KiB": 64 << 10, "1 MiB": 1 << 20}
BANDWIDTH_BYTES = 256 << 20
OPS = 100
LIMIT_S = 100  # the whole torchrun run (start-up and NCCL init ~20 s, two communicators; the figures ~15 s)
GROUP = "collectives: all-reduce per op"


def per_op_graph(comm: Any, stream: Any, buf: Any, count: int, ops: int, trials: int,
                 barrier: Callable[[], None]) -> list[float]:
    """(a): ``ops`` all-reduces captured into one graph; microseconds per op of each replay."""
    with stream.capture() as cap:
        for _ in range(ops):
            comm.all_reduce(buf, buf, stream, "sum", dtype="float32", count=count)
    exe = cap.graph.instantiate()
    barrier()  # (every rank's capture has ended before any rank synchronizes)
    exe.launch(stream)  # warm-up (and upload)
    stream.synchronize()
    out = []
    for _ in range(trials):
        barrier()
        t0 = time.perf_counter_ns()
        exe.launch(stream)
        stream.synchronize()
        out.append((time.perf_counter_ns() - t0) / 1e3 / ops)
    exe.close()
    cap.graph.close()
    return out


def per_op_eager(comm: Any, stream: Any, buf: Any, count: int | None, ops: int, trials: int,
                 barrier: Callable[[], None]) -> list[float]:
    """(b): ``ops`` eager pygraphrt all-reduces; microseconds per op of each trial (``count``
    None: a typed array, its dtype and size read from it)."""
    all_reduce = comm.all_reduce
    kw: dict[str, Any] = {} if count is None else {"dtype": "float32", "count": count}
    for _ in range(2):  # warm-up
        all_reduce(buf, buf, stream, "sum", **kw)
    stream.synchronize()
    out = []
    for _ in range(trials):
        barrier()
        t0 = time.perf_counter_ns()
        for _ in range(ops):
            all_reduce(buf, buf, stream, "sum", **kw)
        stream.synchronize()
        out.append((time.perf_counter_ns() - t0) / 1e3 / ops)
    return out


def per_op_raw(comm: Any, stream: Any, buf: Any, count: int, ops: int, trials: int,
               barrier: Callable[[], None]) -> list[float]:
    """(b raw): ``ops`` calls of the library's ``ncclAllReduce`` through the binding, arguments
    made once (a blocking communicator: no ncclInProgress to wait out); microseconds per op."""
    from pygraphrt import nccl

    lib = nccl.library()
    ffi = lib.ffi
    ptr = ffi.cast("void *", buf.ptr)
    args = (ptr, ptr, count, lib.dtype_values["float32"], lib.op_values["sum"], comm._comm(),
            ffi.cast("cudaStream_t", int(stream)))
    all_reduce = lib.fn("ncclAllReduce")
    for _ in range(2):
        if all_reduce(*args):
            raise RuntimeError("ncclAllReduce failed")
    stream.synchronize()
    out = []
    for _ in range(trials):
        barrier()
        t0 = time.perf_counter_ns()
        for _ in range(ops):
            all_reduce(*args)
        stream.synchronize()
        out.append((time.perf_counter_ns() - t0) / 1e3 / ops)
    return out


def per_op_torch(tensor: Any, ops: int, trials: int, barrier: Callable[[], None]) -> list[float]:
    """(c): ``ops`` torch.distributed.all_reduce calls; microseconds per op of each trial."""
    import torch
    import torch.distributed as dist

    for _ in range(2):
        dist.all_reduce(tensor)
    torch.cuda.synchronize()
    out = []
    for _ in range(trials):
        barrier()
        t0 = time.perf_counter_ns()
        for _ in range(ops):
            dist.all_reduce(tensor)
        torch.cuda.synchronize()
        out.append((time.perf_counter_ns() - t0) / 1e3 / ops)
    return out


def busbw_gbs(us_per_op: float, nbytes: int, nranks: int) -> float:
    """nccl-tests' bus bandwidth of an all-reduce: algbw * 2(n-1)/n, in GB/s."""
    algbw = nbytes / (us_per_op * 1e-6) / 1e9
    return algbw * 2 * (nranks - 1) / nranks


def worker(outdir: Path, quick: bool) -> int:
    """One rank under torchrun: torch's NCCL process group first (its libnccl), then
    pygraphrt's communicator over the same ranks (the copy already loaded)."""
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ["TORCH_NCCL_USE_COMM_NONBLOCKING"] = "0"  # (torch's default, made explicit: see (c))
    import torch
    import torch.distributed as dist

    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    import pygraphrt as rt
    from pygraphrt import nccl

    rt.Device(local).set_current()
    comm = nccl.Communicator.from_process_group(device=local)  # blocking, as torch's is
    bounded = nccl.Communicator.from_process_group(device=local, timeout=120)  # non-blocking
    n = comm.size

    def barrier() -> None:
        dist.barrier(device_ids=[local])

    trials = 3 if quick else 11
    ops = 20 if quick else OPS
    s = rt.Stream()
    figs: dict[str, list[float]] = {}
    for label, nbytes in SIZES.items():
        count = max(1, nbytes // 4)
        buf = rt.malloc(count * 4)
        buf.copy_from(bytes(count * 4))
        tensor = torch.zeros(count, dtype=torch.float32, device="cuda")
        torch.cuda.synchronize()  # (torch's zeros ran on its stream; (b torch tensor) uses pygraphrt's)
        figs[f"(a) pygraphrt graph replay, {label}"] = per_op_graph(comm, s, buf, count, ops, trials, barrier)
        figs[f"(b) pygraphrt eager, {label}"] = per_op_eager(comm, s, buf, count, ops, trials, barrier)
        figs[f"(b raw) ncclAllReduce through the binding, {label}"] = per_op_raw(comm, s, buf, count, ops, trials,
                                                                                 barrier)
        figs[f"(b torch tensor) pygraphrt eager, {label}"] = per_op_eager(comm, s, tensor, None, ops, trials,
                                                                          barrier)
        figs[f"(b non-blocking) pygraphrt eager, {label}"] = per_op_eager(bounded, s, buf, count, ops, trials,
                                                                          barrier)
        figs[f"(c) torch.distributed, {label}"] = per_op_torch(tensor, ops, trials, barrier)
        buf.close()
    count = BANDWIDTH_BYTES // 4
    big = rt.malloc(BANDWIDTH_BYTES)
    tensor = torch.zeros(count, dtype=torch.float32, device="cuda")
    bw_ops = 5 if quick else 20
    figs["busbw 256 MiB: (b) pygraphrt eager"] = [
        busbw_gbs(v, BANDWIDTH_BYTES, n) for v in per_op_eager(comm, s, big, count, bw_ops, trials, barrier)]
    figs["busbw 256 MiB: (c) torch.distributed"] = [
        busbw_gbs(v, BANDWIDTH_BYTES, n) for v in per_op_torch(tensor, bw_ops, trials, barrier)]
    lib = nccl.library()
    if dist.get_rank() == 0:
        (outdir / ".collectives.json").write_text(json.dumps({
            "figures": figs, "nranks": n, "ops_per_trial": ops,
            "nccl": lib.version_str, "nccl_library": lib.path, "nccl_found": lib.how,
            "torch_nccl": ".".join(map(str, torch.cuda.nccl.version())), "torch": torch.__version__,
            "gpu": torch.cuda.get_device_name(local)}))
    barrier()
    comm.close(timeout=120)
    bounded.close(timeout=120)
    dist.destroy_process_group()
    return 0


def skip_reason() -> str | None:
    """Why the group cannot run here (None: it can)."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        return "torch is not installed (the group needs torch.distributed and torchrun)"
    try:
        import pygraphrt as rt

        count = rt.device_count()
    except Exception as exc:  # no runtime / no driver
        return f"no GPU runtime: {type(exc).__name__}: {exc}"
    if rt.backend().vendor != "cuda":
        return f"the active backend is {rt.backend().vendor}, not cuda"
    if count < 2:
        return f"needs 2 GPUs; {count} present"
    return None


def run(outdir: Path, quick: bool) -> int:
    """The group: torchrun over 2 GPUs (bounded), then the table, JSON and chart."""
    reason = skip_reason()
    if reason is not None:
        print(f"collectives group skipped: {reason}")
        return 0
    outdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, NCCL_NVLS_ENABLE="0", PYTHONPATH=os.pathsep.join(sys.path))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           "-m", "benchmarks.collectives", "--worker", str(outdir)] + (["--quick"] if quick else [])
    try:
        r = subprocess.run(cmd, env=env, timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        print(f"collectives group: torchrun did not end within {LIMIT_S} s (killed)")
        return 1
    data_path = outdir / ".collectives.json"
    if r.returncode != 0 or not data_path.exists():
        print(f"collectives group: the ranks failed (exit {r.returncode})")
        return 1
    data = json.loads(data_path.read_text())
    data_path.unlink()
    figs = {name: Figure("collectives: bus bandwidth" if name.startswith("busbw") else GROUP, name, vals,
                         unit="GB/s" if name.startswith("busbw") else "us",
                         note=f"rank 0 of {data['nranks']}, {data['ops_per_trial']} ops per trial")
            for name, vals in data["figures"].items()}
    ratios = []
    for label in SIZES:
        if SIZES[label] <= 64 << 10:
            ratios.append(ratio(figs, f"capture {label}", f"(b) pygraphrt eager, {label}",
                                f"(a) pygraphrt graph replay, {label}", ">= 2.0", at_least=2.0))
        ratios.append(ratio(figs, f"binding {label}", f"(b) pygraphrt eager, {label}",
                            f"(c) torch.distributed, {label}", "<= 1.0", limit=1.0))
    ratios.append(ratio(figs, "busbw 256 MiB", "busbw 256 MiB: (b) pygraphrt eager",
                        "busbw 256 MiB: (c) torch.distributed", "report"))
    found = [x for x in ratios if x is not None]
    meta = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "group": "collectives",
            "python": platform.python_version(), "quick": quick, "gpu": data["gpu"], "nranks": data["nranks"],
            "nccl": data["nccl"], "nccl_library": data["nccl_library"], "nccl_found": data["nccl_found"],
            "torch": data["torch"], "torch_nccl": data["torch_nccl"]}
    ordered = sorted(figs.values(), key=lambda f: (f.group, f.name))
    text = (f"collectives: {data['nranks']} x {data['gpu']}, NCCL {data['nccl']} ({data['nccl_library']}; "
            f"torch's: {data['torch_nccl']})\n" + table(ordered, found))
    print(text)
    stem = f"{meta['date'][:10]}-{str(data['gpu']).replace(' ', '-')}-collectives"
    (outdir / f"{stem}.json").write_text(to_json(meta, ordered, found))
    (outdir / f"{stem}.txt").write_text(text + "\n")
    chart(ordered, str(outdir / f"{stem}.png"))
    return 0


if __name__ == "__main__":  # a rank under torchrun: python -m benchmarks.collectives --worker OUTDIR [--quick]
    args = sys.argv[1:]
    if not args or args[0] != "--worker" or len(args) < 2:
        sys.exit("usage: (run by scripts/bench OUTDIR --group collectives)")
    sys.exit(worker(Path(args[1]), "--quick" in args[2:]))
