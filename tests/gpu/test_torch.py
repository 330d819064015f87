"""PyTorch work in pygraphrt graphs on a real GPU (issue 44): capture by torch on a pygraphrt stream,
replay through torch, the random-number rule on every launch path, a torch step as a child graph
beside NVRTC kernels, and a WHILE loop whose body is a captured torch step.

Run on the GPU machine with torch installed::

    PYGRAPHRT_REQUIRE_GPU=1 python -m pytest -q -p no:cacheprovider tests/gpu/test_torch.py

torch's kernels belong to torch's CUDA runtime; pygraphrt must load a runtime of the same major
version (CUDA 13 with torch's cu13x wheels) for the child and body graphs to run.
"""

from __future__ import annotations

import copy
import warnings

import pytest

import pygraphrt as rt
from pygraphrt import errors
from pygraphrt.enums import CaptureStatus, NodeType

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
F = torch.nn.functional
pt = pytest.importorskip("pygraphrt.torch")

COND = rt.SET_CONDITIONAL_SOURCE + r"""
extern "C" __global__ void scale(float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
extern "C" __global__ void add(float *x, float v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += v;
}
extern "C" __global__ void arm(cudaGraphConditionalHandle h, int *left, int n) {
    *left = n;  cudaGraphSetConditional(h, n > 0); }
extern "C" __global__ void count_down(cudaGraphConditionalHandle h, int *left, float *acc) {
    acc[0] += 1.0f;  cudaGraphSetConditional(h, --(*left) > 0); }
extern "C" __global__ void keep_going(cudaGraphConditionalHandle h, const long long *tok,
                                      const long long *pos, long long stop, long long max_steps) {
    cudaGraphSetConditional(h, tok[0] != stop && pos[0] < max_steps);
}
"""
_kernels: dict = {}


def kernels() -> dict:
    if not _kernels:
        prog = rt.Program(COND, name="torch_interop_test.cu")
        _kernels["scale"] = prog.kernel("scale", signature="float *x, float a, int n")
        _kernels["add"] = prog.kernel("add", signature="float *x, float v, int n")
        _kernels["arm"] = prog.kernel("arm", signature="cudaGraphConditionalHandle h, int *left, int n")
        _kernels["count_down"] = prog.kernel("count_down",
                                             signature="cudaGraphConditionalHandle h, int *left, float *acc")
        _kernels["keep_going"] = prog.kernel(
            "keep_going", signature="cudaGraphConditionalHandle h, long long *tok, long long *pos, "
                                    "long long stop, long long max_steps")
    return _kernels


@pytest.fixture(autouse=True)
def torch_cuda():
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    torch.cuda.synchronize()
    yield
    assert not torch.cuda.is_current_stream_capturing()


def make_mlp(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Dropout(0.25),
                               torch.nn.Linear(64, 4)).cuda()


# -- capture and replay ---------------------------------------------------------------------------
def test_training_step_replayed_20_times_matches_eager(stream):
    """MLP forward + backward + Adam(capturable=True) with dropout: 20 replays through torch match
    20 eager steps from the same weights, optimizer state and seed, step by step."""
    model = make_mlp(0)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, capturable=True)
    torch.manual_seed(1)
    x, y = torch.randn(32, 16, device="cuda"), torch.randn(32, 4, device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    pt.warmup(step, stream, n=3)
    stream.synchronize()
    ref_model = make_mlp(0)
    ref_model.load_state_dict(model.state_dict())
    ref_opt = torch.optim.Adam(ref_model.parameters(), lr=1e-2, capturable=True)
    # (a deep copy: load_state_dict copies the dict shallowly and .to() of a tensor already on the
    # device returns it, so ref_opt's exp_avg, exp_avg_sq and step would be opt's own tensors, which
    # the 20 replays below advance before the eager steps start)
    ref_opt.load_state_dict(copy.deepcopy(opt.state_dict()))
    assert all(ref_opt.state[q]["exp_avg"].data_ptr() != opt.state[p]["exp_avg"].data_ptr()
               for p, q in zip(model.parameters(), ref_model.parameters()))

    opt.zero_grad(set_to_none=True)
    with pt.capture(stream, optimizers=[opt]) as cap:
        static_loss = F.mse_loss(model(x), y)
        static_loss.backward()
        opt.step()
    assert cap.graph is not None and len(cap.graph) > 0
    assert any(n.type is NodeType.KERNEL for n in cap.graph.nodes())

    torch.manual_seed(1234)
    graphed = []
    for _ in range(20):
        cap.replay(stream)
        stream.synchronize()  # (the copy below runs on torch's default stream)
        graphed.append(static_loss.detach().clone())
    assert cap.uses_rng is True  # dropout: the generator's offset moved over replay()

    torch.manual_seed(1234)
    eager = []
    for _ in range(20):
        ref_opt.zero_grad(set_to_none=True)
        loss = F.mse_loss(ref_model(x), y)
        loss.backward()
        ref_opt.step()
        eager.append(loss.detach().clone())
    torch.cuda.synchronize()
    for i, (g, e) in enumerate(zip(graphed, eager)):
        torch.testing.assert_close(g, e, rtol=1e-4, atol=1e-5, msg=f"step {i}")
    for (name, p), q in zip(model.named_parameters(), ref_model.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5, msg=name)
    assert len({round(float(v), 6) for v in graphed}) > 1  # it trained: the losses move


def test_non_capturable_optimizer_is_refused_before_the_capture(stream):
    model = make_mlp(0)
    opt = torch.optim.Adam(model.parameters())
    with pytest.raises(errors.InvalidValue, match="capturable=True"):
        with pt.capture(stream, optimizers=[opt]):
            raise AssertionError("the block must not run")
    assert stream.capture_status is CaptureStatus.NONE


def test_pygraphrt_work_on_the_stream_is_captured_into_the_torch_graph(stream):
    k = kernels()
    x = torch.ones(256, device="cuda")
    buf = rt.malloc(64)
    with pt.capture(stream) as cap:
        x.mul_(3)                                   # torch
        stream.launch(k["add"], 1, 256, x.data_ptr(), 1.0, 256)  # pygraphrt, on the same stream
        stream.memset(buf, 0x5A, 64)
    types = [n.type for n in cap.graph.nodes()]
    assert NodeType.MEMSET in types and types.count(NodeType.KERNEL) >= 2
    x.fill_(1)
    torch.cuda.synchronize()  # (fill_ ran on torch's default stream; replay runs on `stream`)
    cap.replay(stream)
    stream.synchronize()
    assert torch.equal(x, torch.full_like(x, 4.0)) and buf.to_bytes() == b"\x5a" * 64
    assert cap.uses_rng is False


def test_a_conditional_node_at_the_capture_point_between_torch_work(stream):
    """cap.conditional_handle / cap.add_while inside torch's capture: torch work before the loop,
    a WHILE node whose body is a pygraphrt kernel, torch work after it (ordered after the loop)."""
    k = kernels()
    acc = torch.zeros(1, device="cuda")
    left = torch.zeros(1, dtype=torch.int32, device="cuda")
    with pt.capture(stream) as cap:
        acc.mul_(2)                                            # torch, before the loop
        h = cap.conditional_handle()
        stream.launch(k["arm"], 1, 1, h, left.data_ptr(), 5)   # pygraphrt: arms the loop
        loop = cap.add_while(h)
        loop.bodies[0].add_kernel(k["count_down"], 1, 1, [h, left.data_ptr(), acc.data_ptr()])
        acc.mul_(10)                                           # torch, after the loop
    assert NodeType.CONDITIONAL in [n.type for n in cap.graph.nodes()]
    with pytest.raises(errors.IllegalState):
        cap.conditional_handle()  # (only inside the block)
    acc.fill_(1)
    torch.cuda.synchronize()
    cap.replay(stream)
    stream.synchronize()
    assert acc.item() == (1 * 2 + 5) * 10 and left.item() == 0


# -- the random-number rule ----------------------------------------------------------------------
def dropout_capture(stream, gen=None):
    """The graph reads ``ones`` by address: the caller keeps it (returned) as long as the graph
    runs; freed, its block goes to the next tensor of its size (the tests' ``out.clone()``)."""
    ones = torch.ones(4096, device="cuda")
    out = torch.empty_like(ones)
    gens = [gen] if gen is not None else []
    with pt.capture(stream, generators=gens) as cap:
        if gen is None:
            out.copy_(F.dropout(ones, 0.5))
        else:
            out.copy_(torch.bernoulli(torch.full_like(ones, 0.5), generator=gen))
    return cap, out, ones


def test_replay_draws_fresh_numbers_and_every_other_launch_path_is_refused(stream):
    cap, out, _inp = dropout_capture(stream)
    assert cap.uses_rng is None  # not measured yet: treated as drawing
    with pytest.raises(errors.FixedRandomness, match="cannot tell"):
        rt.Graph().add_child_graph(cap.graph)
    masks = []
    for _ in range(3):
        cap.replay(stream)
        stream.synchronize()
        masks.append(out.clone())
    assert cap.uses_rng is True
    assert not torch.equal(masks[0], masks[1]) and not torch.equal(masks[1], masks[2])  # fresh draws

    parent = rt.Graph()
    with pytest.raises(errors.FixedRandomness, match="as a child graph node"):
        parent.add_child_graph(cap.graph)
    body = parent.add_while(parent.conditional_handle()).bodies[0]
    with pytest.raises(errors.FixedRandomness, match="in a conditional body"):
        body.add_child_graph(cap.graph)
    with pytest.raises(errors.FixedRandomness, match="executable graph"):
        cap.graph.instantiate()
    with pytest.raises(errors.FixedRandomness):
        cap.instantiate()
    with pytest.raises(errors.FixedRandomness):
        rt.GraphExec.wrap(cap.torch_graph)
    with pytest.raises(errors.FixedRandomness):
        rt.Graph.wrap(cap.torch_graph).clone().instantiate()


def test_allow_fixed_rng_launches_repeat_the_same_draws(stream):
    """What the refusal protects against, shown: launched through pygraphrt (its executable, or as a
    child node) the torch graph draws the same mask every time."""
    cap, out, _inp = dropout_capture(stream)
    cap.replay(stream)
    stream.synchronize()
    with pytest.warns(errors.FixedRandomnessWarning):
        exe = cap.instantiate(allow_fixed_rng=True)
    seen = []
    for _ in range(3):
        exe.launch(stream)
        stream.synchronize()
        seen.append(out.clone())
    assert all(set(t.unique().tolist()) <= {0.0, 2.0} for t in seen)  # dropout of ones, scaled by 1/(1-p)
    assert torch.equal(seen[0], seen[1]) and torch.equal(seen[1], seen[2])
    parent = rt.Graph()
    with pytest.warns(errors.FixedRandomnessWarning):
        parent.add_child_graph(cap.graph, allow_fixed_rng=True)
    pexe = parent.instantiate()
    child_seen = []
    for _ in range(2):
        pexe.launch(stream)
        stream.synchronize()
        child_seen.append(out.clone())
    assert torch.equal(child_seen[0], child_seen[1])


def test_a_user_generator_passed_in_generators_draws_fresh_numbers(stream):
    gen = torch.Generator(device="cuda")
    gen.manual_seed(7)
    cap, out, _inp = dropout_capture(stream, gen)
    cap.replay(stream)
    stream.synchronize()
    first = out.clone()
    cap.replay(stream)
    stream.synchronize()
    assert cap.uses_rng is True and not torch.equal(first, out)


# -- a torch step inside pygraphrt graphs ----------------------------------------------------------
def eval_capture(stream):
    model = make_mlp(3).eval()
    x = torch.randn(8, 16, device="cuda")
    out = torch.empty(8, 4, device="cuda")
    with torch.no_grad():
        pt.warmup(lambda: out.copy_(model(x)), stream)
        with pt.capture(stream) as cap:
            out.copy_(model(x))
    cap.replay(stream)  # measures: no generator moved
    stream.synchronize()
    assert cap.uses_rng is False
    return model, x, out, cap


def test_eval_step_as_a_child_graph_beside_kernels_and_a_memset(stream):
    k = kernels()
    model, x, out, cap = eval_capture(stream)
    x0 = x.clone()
    flag = rt.malloc(256)
    g = rt.Graph()
    ms = g.add_memset(flag, 0x11, 256)
    sc = g.add_kernel(k["scale"], 1, 128, [x.data_ptr(), 2.0, x.numel()], dependencies=[ms])
    child = g.add_child_graph(cap.graph, dependencies=[sc])
    g.add_kernel(k["add"], 1, 32, [out.data_ptr(), 1.0, out.numel()], dependencies=[child])
    exe = g.instantiate()
    exe.launch(stream)
    stream.synchronize()
    with torch.no_grad():
        want = model(2 * x0) + 1
    torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-4)
    assert flag.to_bytes() == b"\x11" * 256
    exe.launch(stream)  # again: x doubled once more
    stream.synchronize()
    with torch.no_grad():
        torch.testing.assert_close(out, model(4 * x0) + 1, rtol=1e-4, atol=1e-4)


def test_a_torch_graph_with_a_host_node_is_refused_in_a_conditional_body(stream):
    x = torch.ones(16, device="cuda")
    with pt.capture(stream) as cap:
        x.add_(1)
        stream.launch_host_func(lambda: None)
    cap.replay(stream)
    stream.synchronize()
    parent = rt.Graph()
    body = parent.add_while(parent.conditional_handle()).bodies[0]
    with pytest.raises(errors.InvalidValue, match="HOST node"):
        body.add_child_graph(cap.graph)
    parent.add_child_graph(cap.graph)  # (as a plain child it is fine)


class Decoder:
    """A greedy decode step with device-side state: tok (the current token), pos (steps taken),
    seq (the tokens produced)."""

    def __init__(self, vocab: int = 64, hidden: int = 32, max_steps: int = 40) -> None:
        torch.manual_seed(5)
        self.emb = torch.randn(vocab, hidden, device="cuda")
        self.out_w = torch.randn(hidden, vocab, device="cuda")
        self.tok = torch.zeros(1, dtype=torch.long, device="cuda")
        self.pos = torch.zeros(1, dtype=torch.long, device="cuda")
        self.seq = torch.full((max_steps,), -1, dtype=torch.long, device="cuda")
        self.max_steps = max_steps

    def step(self) -> None:
        h = self.emb.index_select(0, self.tok)           # (1, hidden)
        logits = (h.t() * self.out_w).sum(0)             # (vocab,): no cuBLAS, no RNG
        nxt = logits.argmax().view(1)
        self.seq.index_copy_(0, self.pos, nxt)
        self.tok.copy_(nxt)
        self.pos.add_(1)

    def reset(self, start: int) -> None:
        self.tok.fill_(start)
        self.pos.zero_()
        self.seq.fill_(-1)

    def eager(self, start: int, stop: int) -> list[int]:
        self.reset(start)
        got = []
        while True:
            self.step()
            got.append(int(self.tok.item()))
            if got[-1] == stop or len(got) >= self.max_steps:
                return got


def while_loop_graph(dec: Decoder, cap, stop: int) -> rt.Graph:
    k = kernels()
    g = rt.Graph()
    h = g.conditional_handle(default=1)
    loop = g.add_while(h)
    body = loop.bodies[0]
    child = body.add_child_graph(cap.graph)
    body.add_kernel(k["keep_going"], 1, 1, [h, dec.tok.data_ptr(), dec.pos.data_ptr(), stop, dec.max_steps],
                    dependencies=[child])
    return g


def test_while_loop_of_a_torch_step_runs_on_the_device(stream):
    dec = Decoder()
    dec.reset(3)
    pt.warmup(dec.step, stream)
    with pt.capture(stream) as cap:
        dec.step()
    dec.reset(3)
    torch.cuda.synchronize()
    cap.replay(stream)
    stream.synchronize()
    assert cap.uses_rng is False
    want_all = dec.eager(3, stop=-1)  # runs to max_steps
    assert len(want_all) == dec.max_steps
    stop = want_all[4]  # a token the greedy walk reaches at its 5th step (or earlier)
    want = want_all[:want_all.index(stop) + 1]
    for stop_token, expect in ((-1, want_all), (stop, want)):
        exe = while_loop_graph(dec, cap, stop_token).instantiate()
        dec.reset(3)
        torch.cuda.synchronize()  # (reset ran on torch's default stream)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            exe.launch(stream)  # one launch for the whole loop
        stream.synchronize()
        n = int(dec.pos.item())
        assert n == len(expect)
        assert dec.seq[:n].tolist() == expect and bool((dec.seq[n:] == -1).all())


# -- bad input -----------------------------------------------------------------------------------
def test_an_exception_in_the_block_ends_the_capture_and_torch_works_after(stream):
    x = torch.randn(1024, device="cuda")
    with pytest.raises(ValueError, match="boom"):
        with pt.capture(stream):
            y = F.dropout(x * 2, 0.5)  # allocations in the graph's pool, a generator in capture mode
            del y
            raise ValueError("boom")
    assert stream.capture_status is CaptureStatus.NONE and not torch.cuda.is_current_stream_capturing()
    with pytest.raises(RuntimeError):  # an invalidated capture: a sync inside it
        with pt.capture(stream):
            (x * 3).sum().item()
    assert stream.capture_status is CaptureStatus.NONE and not torch.cuda.is_current_stream_capturing()
    # eager torch afterwards: allocation, random numbers, a reduction read on the host
    before = torch.cuda.memory_allocated()
    z = torch.randn(1 << 20, device="cuda")
    assert torch.cuda.memory_allocated() > before
    a, b = F.dropout(z, 0.5), F.dropout(z, 0.5)
    assert not torch.equal(a, b)
    assert abs(float((a != 0).float().mean()) - 0.5) < 0.01
    with torch.cuda.stream(torch.cuda.ExternalStream(int(stream))):
        w = (z * 2).sum()
    assert torch.isfinite(w).item()
    # and a capture works again
    out = torch.empty(16, device="cuda")
    with pt.capture(stream) as cap:
        out.copy_(torch.arange(16, device="cuda", dtype=torch.float32) * 2)
    cap.replay(stream)
    stream.synchronize()
    assert out.tolist() == [2.0 * i for i in range(16)]


def test_wrap_refuses_a_graph_torch_did_not_keep(stream):
    g = torch.cuda.CUDAGraph()  # keep_graph=False: torch destroys its cudaGraph_t at capture_end
    x = torch.ones(4, device="cuda")
    with torch.cuda.graph(g):
        x.add_(1)
    with pytest.raises(errors.InvalidValue, match="keep_graph"):
        rt.Graph.wrap(g)
    with pytest.raises(errors.FixedRandomness, match="cannot tell"):
        rt.GraphExec.wrap(g)  # its executable is there, but nothing measured its random numbers
    with pytest.warns(errors.FixedRandomnessWarning):
        borrowed = rt.GraphExec.wrap(g, allow_fixed_rng=True)
    x.fill_(1)
    torch.cuda.synchronize()
    borrowed.launch(stream)
    stream.synchronize()
    assert x.tolist() == [2.0] * 4
    with pytest.raises(errors.InvalidValue, match="without its graph"):
        borrowed.graph
    kept = torch.cuda.CUDAGraph(keep_graph=True)
    with pytest.raises(errors.InvalidValue):
        rt.Graph.wrap(kept)  # not captured yet
    with torch.cuda.graph(kept):
        x.add_(1)
    w = rt.Graph.wrap(kept)
    assert len(w) >= 1
    kept.reset()
    with pytest.raises(errors.InvalidValue):
        rt.Graph.wrap(kept)  # reset: no graph
