"""The torch group (issue 44): ``scripts/bench OUTDIR --group torch [--quick]``.

A greedy decode-style loop (a small embedding, an elementwise logit reduction and argmax: no RNG,
no cuBLAS) run ``STEPS`` iterations three ways, each timed as microseconds per iteration:

* (a) one launch of a pygraphrt graph whose WHILE node's body is the step captured by
  ``pygraphrt.torch.capture`` plus a kernel that sets the condition on the device (stop token or
  step count): no host round trip per iteration;
* (b) the same captured step replayed from Python (``cap.replay``), reading the stop flag on the host
  every iteration (``.item()``: one synchronisation per iteration);
* (c) the step run eagerly from Python with the same host read.

The stop token is never reached (stop = -1), so every contender runs ``STEPS`` iterations.  Target:
(a) below (b).  Without a GPU or torch the group skips, saying why.
"""

from __future__ import annotations

import datetime as dt
import platform
import time
from pathlib import Path
from typing import Any, Callable

from .stats import Figure, chart, ratio, table, to_json

GROUP = "torch: decode loop per iteration"
COND_SOURCE = r"""
extern "C" __global__ void keep_going(cudaGraphConditionalHandle h, const long long *tok,
                                      const long long *pos, long long stop, long long max_steps) {
    cudaGraphSetConditional(h, tok[0] != stop && pos[0] < max_steps);
}
"""


class Decoder:
    """Device-side state and one greedy step (the same as tests/gpu/test_torch.py's)."""

    def __init__(self, torch: Any, steps: int, vocab: int = 256, hidden: int = 64) -> None:
        torch.manual_seed(5)
        self.torch = torch
        self.emb = torch.randn(vocab, hidden, device="cuda")
        self.out_w = torch.randn(hidden, vocab, device="cuda")
        self.tok = torch.zeros(1, dtype=torch.long, device="cuda")
        self.pos = torch.zeros(1, dtype=torch.long, device="cuda")
        self.seq = torch.full((steps,), -1, dtype=torch.long, device="cuda")
        self.steps = steps

    def step(self) -> None:
        h = self.emb.index_select(0, self.tok)
        nxt = (h.t() * self.out_w).sum(0).argmax().view(1)
        self.seq.index_copy_(0, self.pos, nxt)
        self.tok.copy_(nxt)
        self.pos.add_(1)

    def reset(self) -> None:
        self.tok.zero_()
        self.pos.zero_()
        self.torch.cuda.synchronize()


def timed(trials: int, steps: int, once: Callable[[], None], reset: Callable[[], None]) -> list[float]:
    out = []
    for _ in range(trials):
        reset()
        t0 = time.perf_counter_ns()
        once()
        out.append((time.perf_counter_ns() - t0) / 1e3 / steps)
    return out


def measure(quick: bool) -> tuple[dict[str, Figure], str]:
    import torch

    import pygraphrt as rt
    import pygraphrt.torch as pt

    steps = 64 if quick else 512
    trials = 3 if quick else 11
    stream = rt.Stream()
    dec = Decoder(torch, steps)
    keep_going = rt.Program(rt.SET_CONDITIONAL_SOURCE + COND_SOURCE, name="torch_loop.cu").kernel(
        "keep_going", signature="cudaGraphConditionalHandle h, long long *tok, long long *pos, long long stop, "
                                "long long max_steps")
    pt.warmup(dec.step, stream)
    with pt.capture(stream) as cap:
        dec.step()
    dec.reset()
    cap.replay(stream)  # measures uses_rng (False: the loop below may hold it)
    stream.synchronize()
    g = rt.Graph()
    h = g.conditional_handle(default=1)
    body = g.add_while(h).bodies[0]
    child = body.add_child_graph(cap.graph)
    body.add_kernel(keep_going, 1, 1, [h, dec.tok.data_ptr(), dec.pos.data_ptr(), -1, steps], dependencies=[child])
    exe = g.instantiate(upload_stream=stream)
    stream.synchronize()

    def device_loop() -> None:
        exe.launch(stream)
        stream.synchronize()

    ext = torch.cuda.ExternalStream(int(stream))

    def host_loop(step: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            with torch.cuda.stream(ext):
                for _ in range(steps):
                    step()
                    if ((dec.tok == -1) | (dec.pos >= steps)).item():  # the host reads the stop flag
                        break
        return run

    def replay() -> None:
        cap.torch_graph.replay()

    figs = {}
    for name, fn in (("(a) WHILE node, one launch", device_loop),
                     ("(b) cap.replay per step, host reads stop flag", host_loop(replay)),
                     ("(c) eager torch per step, host reads stop flag", host_loop(dec.step))):
        dec.reset()  # (the step writes seq[pos]: a run must start from pos 0, not where the last one stopped)
        fn()  # warm
        figs[name] = Figure(GROUP, name, timed(trials, steps, fn, dec.reset), note=f"{steps} iterations")
    # the device loop must have run every iteration (checked, not assumed)
    dec.reset()
    device_loop()
    ran = int(dec.pos.item())
    if ran != steps:
        raise RuntimeError(f"the WHILE loop ran {ran} iterations, expected {steps}")
    return figs, torch.cuda.get_device_name(0)


def run(outdir: Path, quick: bool) -> int:
    try:
        import torch
    except ImportError as exc:
        print(f"torch group skipped: {exc}")
        return 0
    if not torch.cuda.is_available():
        print("torch group skipped: torch sees no CUDA device")
        return 0
    figs, gpu = measure(quick)
    found = [r for r in [ratio(figs, "WHILE loop vs host-driven replay", "(a) WHILE node, one launch",
                               "(b) cap.replay per step, host reads stop flag", "(a) below (b)", limit=1.0)]
             if r is not None]
    meta = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "group": "torch",
            "python": platform.python_version(), "quick": quick, "gpu": gpu, "torch": torch.__version__,
            "torch_cuda": torch.version.cuda}
    ordered = sorted(figs.values(), key=lambda f: f.name)
    text = f"torch: {gpu}, torch {torch.__version__} (CUDA {torch.version.cuda})\n" + table(ordered, found)
    print(text)
    stem = f"{meta['date'][:10]}-{gpu.replace(' ', '-')}-torch"
    (outdir / f"{stem}.json").write_text(to_json(meta, ordered, found))
    (outdir / f"{stem}.txt").write_text(text + "\n")
    chart(ordered, str(outdir / f"{stem}.png"))
    return 0
