"""PyTorch work in pygraphrt graphs: capture done by torch, replay through torch.

``import pygraphrt.torch`` (torch is imported on first use, never by ``import pygraphrt``)::

    with pygraphrt.torch.capture(stream) as cap:     # torch's CUDAGraph(keep_graph=True) capture
        loss = step(x)                                # torch work, and pygraphrt work on `stream`
    cap.replay(stream)                                # torch's replay(): fresh random numbers
    parent.add_child_graph(cap.graph)                 # a pygraphrt Graph (RNG-free graphs only)

Why torch does the capture: torch's generators are told about a capture only inside
``CUDAGraph.capture_begin`` / ``capture_end`` and refresh their seed and offset only inside
``CUDAGraph.replay()``; torch's caching allocator routes a capture's allocations (autograd's
too) to the graph's pool by capture id.  None of that happens under pygraphrt's own
``cudaStreamBeginCapture``.  So the capture is torch's, on the pygraphrt stream made torch's
current stream (``torch.cuda.ExternalStream`` of its handle); pygraphrt work issued on that
stream in the block is captured into the same graph.

The random-number rule: a graph that draws torch random numbers repeats its draws when launched
any way other than torch's ``replay()`` (as a child node, in a conditional body, through its
executable).  ``cap.uses_rng`` is measured by ``cap.replay``: the registered generators'
offsets before and after (torch advances them by the graph's whole increment in ``replay()``);
before the first replay it is None (not known), and pygraphrt treats the graph as drawing.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Iterable, Sequence

from . import errors
from .device import Stream
from .enums import CaptureStatus
from .graph import Graph, GraphExec
from .graph._foreign import RandomDraws

__all__ = ["capture", "TorchCapture", "warmup", "check_capturable", "load_torch"]

_MODES = ("global", "thread_local", "relaxed")


def load_torch(what: str = "pygraphrt.torch") -> Any:
    """The ``torch`` module; ImportError naming the extra to install when it is missing."""
    try:
        import torch
    except ImportError as exc:
        raise ImportError(f"{what} needs PyTorch: pip install 'pygraphrt[torch]' (or install torch "
                          "with CUDA from pytorch.org)") from exc
    return torch


def _torch_stream(torch: Any, stream: Stream, api: str) -> Any:
    if not isinstance(stream, Stream):
        raise errors.InvalidValue(api, detail=f"stream must be a pygraphrt Stream (Stream.wrap borrows "
                                              f"another library's), got {stream!r}")
    if stream.is_legacy_default:
        raise errors.InvalidValue(api, detail="the legacy default stream cannot be captured: use a created stream")
    return torch.cuda.ExternalStream(int(stream), device=stream.device)


def check_capturable(optimizers: Iterable[Any], api: str = "pygraphrt.torch.check_capturable") -> None:
    """Refuse optimizers whose steps cannot be captured: a param group with a ``capturable``
    option needs it True (``torch.optim.Adam(..., capturable=True)``), which keeps the step count
    on the device instead of reading it on the host; optimizers without the option (SGD) pass."""
    for opt in optimizers:
        groups = getattr(opt, "param_groups", None)
        if groups is None:
            raise errors.InvalidValue(api, detail=f"{opt!r} is not a torch optimizer (no param_groups)")
        for i, group in enumerate(groups):
            # (an optimizer without the option -- SGD -- keeps no step count on the host)
            if group.get("capturable", True) is False:
                raise errors.InvalidValue(api, detail=f"{type(opt).__name__} param group {i} has capturable=False: "
                                                      f"create the optimizer with capturable=True to capture its "
                                                      f"step()")


def warmup(fn: Callable[[], Any], stream: Stream, n: int = 3) -> Any:
    """Run ``fn()`` ``n`` times on ``stream`` (made torch's current stream), ordered after
    torch's current stream and before its later work: the side-stream warm-up torch asks for
    before a capture (lazy initialisation, cuBLAS workspaces, the allocator's blocks).
    Returns the last result."""
    torch = load_torch("pygraphrt.torch.warmup")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise errors.InvalidValue("pygraphrt.torch.warmup", detail=f"n must be a positive int, got {n!r}")
    ext = _torch_stream(torch, stream, "pygraphrt.torch.warmup")
    ext.wait_stream(torch.cuda.current_stream())
    out = None
    with torch.cuda.stream(ext):
        for _ in range(n):
            out = fn()
    torch.cuda.current_stream().wait_stream(ext)
    return out


def _offsets(gens: Sequence[Any]) -> list[int]:
    return [int(g.get_offset()) for g in gens]


class _Operands:
    """What pygraphrt's stream methods hand a capture while torch captures (``Stream._capture``):
    the operands of captured pygraphrt work (host callables, buffers given as objects, kernels'
    libraries), kept by the captured graph as pygraphrt's own ``Capture`` keeps them; streams
    joined through an event recorded inside the capture are tracked so that they are let go."""

    pool = None  # (Stream.malloc_async inside the block: the device's pool)

    def __init__(self) -> None:
        self._keep: list[Any] = []
        self._state = "active"
        self._streams: set[Stream] = set()

    def _join(self, stream: Stream) -> None:
        stream._capture = self  # type: ignore[assignment]
        self._streams.add(stream)

    def _leave(self) -> None:
        self._state = "ended"
        for st in self._streams:
            if st._capture is self:  # type: ignore[comparison-overlap]
                st._capture = None
                st._capture_failure = None
        self._streams.clear()


class TorchCapture:
    """A capture by torch on a pygraphrt stream (made by :func:`capture`).

    Attributes
    ----------
    graph : Graph
        After the block: the captured graph, borrowed from (and keeping alive) ``torch_graph``.
    torch_graph : torch.cuda.CUDAGraph
        Torch's graph object (``keep_graph=True``); its pool holds the capture's tensors.
    uses_rng : bool or None
        Whether the graph draws torch random numbers: measured by :meth:`replay` (the
        generators' offsets over it), None until then.
    """

    def __init__(self, stream: Stream, pool: Any = None, mode: str = "global",
                 generators: Sequence[Any] = (), optimizers: Iterable[Any] = ()) -> None:
        self._torch = torch = load_torch("pygraphrt.torch.capture")
        if mode not in _MODES:
            raise errors.InvalidValue("pygraphrt.torch.capture", detail=f"mode {mode!r}: one of {', '.join(_MODES)}")
        check_capturable(optimizers, "pygraphrt.torch.capture")
        self.stream = stream
        self._ext = _torch_stream(torch, stream, "pygraphrt.torch.capture")
        self._pool = pool
        self._mode = mode
        self._device = stream.device
        # The generators the graph's replay refreshes: the device's default one (torch registers
        # it at capture_begin) and the user's (registered here, before the capture).
        self.generators: list[Any] = [torch.cuda.default_generators[self._device], *generators]
        self._draws = RandomDraws("a torch graph captured by pygraphrt.torch.capture")
        self.torch_graph: Any = None
        self.graph: Graph | None = None
        self._stream_ctx: Any = None
        self._pool_id: Any = None
        self._operands: _Operands | None = None

    @property
    def uses_rng(self) -> bool | None:
        return self._draws.uses_rng

    def __enter__(self) -> "TorchCapture":
        if self.torch_graph is not None:
            raise errors.IllegalState("pygraphrt.torch.capture", detail="a TorchCapture is used once: make another")
        if self.stream._capture is not None:
            raise errors.IllegalState("pygraphrt.torch.capture", detail="the stream is in a pygraphrt capture already")
        torch = self._torch
        g = torch.cuda.CUDAGraph(keep_graph=True)
        for gen in self.generators[1:]:
            g.register_generator_state(gen)
        g._pygraphrt_draws = self._draws  # (Graph.wrap of this CUDAGraph finds what replay measured)
        # As torch.cuda.graph does: the capture starts from a quiet device and a trimmed cache.
        torch.cuda.synchronize(self._device)
        torch.cuda.empty_cache()
        # The pool's id is ours to know: after a capture_end that failed, torch's g.pool() refuses
        # ("without a preceding successful capture") and the allocator's routing to it is ended here.
        self._pool_id = torch.cuda.graph_pool_handle() if self._pool is None else self._pool
        self._stream_ctx = torch.cuda.stream(self._ext)
        self._stream_ctx.__enter__()
        try:
            g.capture_begin(pool=self._pool_id, capture_error_mode=self._mode)
        except BaseException:
            self._stream_ctx.__exit__(*sys.exc_info())
            raise
        self.torch_graph = g
        # pygraphrt work issued on the stream in the block is captured: its operands must live
        # as long as the graph (a host callable is called at every replay)
        self._operands = _Operands()
        self._operands._join(self.stream)
        return self

    def __exit__(self, et: Any, ev: Any, tb: Any) -> None:
        g, operands = self.torch_graph, self._operands
        assert operands is not None
        try:
            if et is None:
                try:
                    g.capture_end()
                except BaseException as end_err:  # (an invalidated capture: torch says why)
                    self._abandon(end_err, ended=True)
                    raise
                self.graph = Graph.wrap(g)
                self.graph._keep.append(operands._keep)
                return
            self._abandon(ev, ended=False)  # (returning None re-raises it)
        finally:
            operands._leave()
            self._stream_ctx.__exit__(et, ev, tb)

    def _abandon(self, exc: BaseException, ended: bool) -> None:
        """End a capture left by an exception: through torch (capture_end, unless ``ended``: it
        was tried), so that its allocator stops routing to the graph's pool and its generators
        leave capture mode; where torch could not end it (an invalidated capture), end what is
        left ourselves.  What failed on the way is added to ``exc`` as notes."""
        torch, g = self._torch, self.torch_graph
        notes = []
        end_failed = ended
        if not ended:
            try:
                g.capture_end()
            except Exception as end_err:  # the capture was invalidated (e.g. a sync inside it)
                notes.append(f"torch's capture_end then failed too: {end_err}")
                end_failed = True
        if end_failed:
            # torch's capture_end raises at cudaStreamEndCapture (an invalidated capture) before it
            # ends the allocator's routing to the pool, and its reset() releases the pool (the
            # reference capture_begin took) only after a capture that ended: both are done here.
            pool_id = getattr(self._pool_id, "id", self._pool_id)  # (a torch.cuda.MemPool: its id)
            try:
                torch._C._cuda_endAllocateToPool(self._device, pool_id)
            except Exception:
                pass  # (capture_end failed after ending it, at "Invalid capture": torch refuses a second end)
            try:
                torch._C._cuda_releasePool(self._device, pool_id)
            except Exception as rel_err:
                notes.append(f"releasing the capture's memory pool failed: {rel_err}")
        try:
            if self.stream.capture_status is not CaptureStatus.NONE:  # still capturing: end it, drop the graph
                b = self.stream._backend
                out = b.ffi.new(f"{b.ops.prefix}Graph_t *")
                b.ops.fn("StreamEndCapture")(self.stream.handle, out)
                if out[0] != b.ffi.NULL:
                    b.ops.fn("GraphDestroy")(out[0])
        except Exception as end_err:
            notes.append(f"ending the stream's capture failed: {end_err}")
        if end_failed:
            try:
                self._end_generators_capture()
            except Exception as gen_err:
                notes.append(f"taking torch's generators out of capture mode failed: {gen_err}")
        try:
            g.reset()  # (torch frees what the capture held in its pool)
        except Exception:
            pass
        for note in notes:
            if hasattr(exc, "add_note"):
                exc.add_note(note)

    def _end_generators_capture(self) -> None:
        """Take the registered generators out of capture mode after a capture torch could not end.

        torch's ``capture_begin`` puts each registered generator in capture mode
        (``capture_prologue``) and only a ``capture_end`` that gets past ``cudaStreamEndCapture``
        takes it out (``capture_epilogue``); left in it, every later eager random op raises "Offset
        increment outside graph capture encountered unexpectedly".  torch exposes no call for the
        epilogue alone, so a capture of nothing with the same generators registered runs prologue
        and epilogue once more: their seed and offset are left as they were, capture mode off.
        It runs on a stream made for it: torch's ``reset()`` of a captured graph drops the cuBLAS
        workspaces of its capture stream, which graphs captured earlier on the user's stream use.
        """
        import warnings

        from .device import Device

        torch = self._torch
        torch.cuda.synchronize(self._device)  # (the prologue refills the generators' device-side seed/offset)
        with Device(self._device):
            side = Stream()
        try:
            empty = torch.cuda.CUDAGraph(keep_graph=True)  # (kept: nothing to instantiate)
            for gen in self.generators[1:]:
                empty.register_generator_state(gen)
            with torch.cuda.stream(torch.cuda.ExternalStream(int(side), device=self._device)):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # torch warns that the graph is empty: it is meant to be
                    empty.capture_begin(capture_error_mode="relaxed")
                    empty.capture_end()
                empty.reset()
        finally:
            side.close()

    # -- conditional nodes at the capture's current point (as Capture's) --------------------------
    def _capturing_graph(self, api: str) -> Any:
        """The graph torch's capture is building, borrowed (the runtime owns it until the end)."""
        if self._operands is None or self._operands._state != "active":
            raise errors.IllegalState(api, detail="only inside the pygraphrt.torch.capture block")
        ops = self.stream._backend.ops
        status, _, handle, _ = ops.capture_info(self.stream.handle)
        if status is not CaptureStatus.ACTIVE:
            raise errors.StreamCaptureInvalidated(api, detail=f"capture status is {status}")
        live = self.__dict__.get("_live")
        if live is None or live._handle != handle:
            live = self._live = Graph._borrow(handle, owner=self)
        return live

    def conditional_handle(self, default: int = 0, *, reset_each_launch: bool = True) -> Any:
        """A conditional handle on the graph being captured (see ``Graph.conditional_handle``)."""
        graph = self._capturing_graph("TorchCapture.conditional_handle")
        return graph.conditional_handle(default, reset_each_launch=reset_each_launch)

    def add_conditional(self, kind: str, handle: Any, size: int | None = None) -> Any:
        """Insert a conditional node after the work captured so far (torch's and pygraphrt's);
        later work depends on it.  Fill its bodies with pygraphrt work
        (``node.capture(other_stream)``, or the body graphs' add methods): torch work captured
        on another stream is outside torch's capture (its allocator and generators do not
        know that capture)."""
        api = f"TorchCapture.add_{kind}"
        graph = self._capturing_graph(api)
        ops = self.stream._backend.ops
        _, _, _, deps = ops.capture_info(self.stream.handle)
        nodes = [graph._wrap(h) for h, _ in deps]
        edges = [e for _, e in deps]
        node = graph.add_conditional(kind, handle, size, dependencies=nodes,
                                     edges=edges if any(not e.is_default for e in edges) else None)
        ops.update_capture_dependencies(self.stream.handle, [node.handle], None, True)
        return node

    def add_if(self, handle: Any) -> Any:
        """Insert an ``if`` conditional node after the work captured so far."""
        return self.add_conditional("if", handle)

    def add_while(self, handle: Any) -> Any:
        """Insert a ``while`` conditional node after the work captured so far."""
        return self.add_conditional("while", handle)

    def replay(self, stream: Stream | None = None) -> None:
        """Replay through torch's ``CUDAGraph.replay()`` on ``stream`` (default: the capture's),
        which refreshes the registered generators' seed and offset: random ops draw fresh
        numbers each time.  Measures :attr:`uses_rng` (the generators' offsets over the call)."""
        if self.torch_graph is None or self.graph is None:
            raise errors.IllegalState("TorchCapture.replay", detail="the capture has not ended (or failed)")
        torch = self._torch
        ext = self._ext if stream is None else _torch_stream(torch, stream, "TorchCapture.replay")
        before = _offsets(self.generators)
        with torch.cuda.stream(ext):
            self.torch_graph.replay()
        moved = [b != a for b, a in zip(before, _offsets(self.generators))]
        if self._draws.uses_rng is None or any(moved):
            self._draws.uses_rng = any(moved)
            self._draws.how = ("its generators' offsets moved over torch's replay()" if any(moved) else
                               "its generators' offsets did not move over torch's replay()")

    def instantiate(self, *, allow_fixed_rng: bool = False) -> GraphExec:
        """``GraphExec.wrap`` of torch's executable graph (launching it repeats random draws:
        refused for a graph that draws, see the module's note)."""
        if self.torch_graph is None or self.graph is None:
            raise errors.IllegalState("TorchCapture.instantiate", detail="the capture has not ended (or failed)")
        return GraphExec.wrap(self.torch_graph, graph=self.graph, allow_fixed_rng=allow_fixed_rng)


def capture(stream: Stream, pool: Any = None, mode: str = "global", generators: Sequence[Any] = (),
            optimizers: Iterable[Any] = ()) -> TorchCapture:
    """Capture torch (and pygraphrt) work on ``stream`` with torch's own capture.

    Parameters
    ----------
    stream : Stream
        A created pygraphrt stream; inside the block it is torch's current stream.
    pool : optional
        A torch graph memory pool (``torch.cuda.graph_pool_handle()``, another graph's
        ``pool()``, a ``torch.cuda.MemPool``) to share; default: the graph's own.
    mode : str
        ``"global"`` (default), ``"thread_local"`` or ``"relaxed"`` (torch's
        ``capture_error_mode``).
    generators : sequence of torch.Generator
        User-made CUDA generators the captured work draws from (the device's default one is
        always registered).
    optimizers : iterable of torch.optim.Optimizer
        Optimizers stepped in the block: checked to be ``capturable=True`` before the capture.

    Returns
    -------
    TorchCapture
        A context manager; ``cap.graph`` after the block.

    Raises
    ------
    ImportError
        torch is not installed (names the ``pygraphrt[torch]`` extra).
    InvalidValue
        A bad mode, stream or optimizer.

    Notes
    -----
    An exception in the block ends the capture through torch (``capture_end``; if torch cannot,
    what is left of it too), frees the partial graph (``reset``) and is re-raised: torch's
    allocator and generators are back to eager use.
    """
    return TorchCapture(stream, pool, mode, generators, optimizers)

