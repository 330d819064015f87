"""Collectives among the simulated devices of one process: the simulator's stand-in for libnccl.

:class:`SimNccl` is to ``libnccl.so.2`` what :class:`~._lib.SimLib` is to libcudart: C function
pointers (``ffi.callback``) of the prototypes the ``nccl`` binding declares, so
:mod:`pygraphrt.nccl` calls them exactly as it calls NCCL (:meth:`SimBackend.nccl_library`
hands it this object while the sim backend is active).  It is a plug-in above the simulator's
runtime: it reaches streams and memory only through the runtime's C surface
(``cudaLaunchHostFunc``) and its memory (``runtime.memory.view``), never the runtime sections.

The model:

* every rank lives in this process: a unique id names a *clique*; ``ncclCommInitRankConfig``
  joins it, and the communicator is ready once all ``nranks`` have joined;
* operations issued inside ``ncclGroupStart/End`` (or alone, outside a group) are one *batch*
  per (communicator, stream): at the group's end each batch becomes one host function on its
  stream (``cudaLaunchHostFunc``) -- run now on an eager stream, a host node on a capturing
  one (NCCL itself adds kernel and host nodes; the simulator's honest form is a host node), run
  at every launch of the graph;
* a batch, when it runs, *arrives* with each of its operations: it snapshots its inputs in
  stream order (a send is buffered, a broadcast root's own copy is made at once) and the
  arrival that completes an operation (every rank of a collective, both ends of a send/receive;
  matched by order, as NCCL matches them) computes it and writes every rank's output;
* a batch that needs an output not yet complete waits for the peers -- unless, in an eager
  group end, the missing ranks' batches are still to come in the same group end (they complete
  it before the group end returns: nothing of the rank runs in between).  Waiting releases the
  simulator's lock, so ranks launched from their own threads (NCCL's advice for capture: one
  thread or process per GPU) meet; a wait no other thread can end (this is the only thread),
  or longer than ``PYGRAPHRT_SIM_NCCL_WAIT`` seconds (default 60), gives up: the
  communicator's asynchronous error (``ncclCommGetAsyncError``) says why;
* a mismatch between ranks (another operation, count, type, reduction or root at the same
  place in the order) is ``ncclInvalidUsage`` on every rank of it -- on a GPU a hang or garbage.

Reductions: sum, prod, max, min, avg (integers truncate, as NCCL's do) and pre-multiplied sums
(the scalar read when the operation runs for ``ncclScalarDevice``), on every integer and float
type numpy has, bfloat16 through float32.  FP8 types are refused (``ncclInvalidArgument``).
"""

from __future__ import annotations

import functools
import os
import threading
import time
from typing import Any, Callable

from ._core import SimError, numpy

LIBRARY_PATH = "<pygraphrt simulator: collectives among simulated devices>"
VERSION_CODE = 22809  # the NCCL whose behaviour this stands in for (the GPU machine's 2.28.9)

_RESULT_TEXT = {
    0: "no error", 1: "unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
    2: "unhandled system error", 3: "internal error - please report this issue to the NCCL developers",
    4: "invalid argument", 5: "invalid usage", 6: "remote process exited or there was a network error",
    7: "NCCL operation in progress", 8: "NCCL timeout",
}
SUCCESS, CUDA_ERROR, INTERNAL, INVALID_ARGUMENT, INVALID_USAGE, REMOTE, IN_PROGRESS, TIMEOUT = 0, 1, 3, 4, 5, 6, 7, 8


@functools.lru_cache(maxsize=None)
def failure_results() -> dict[str, int]:
    """The ``ncclResult_t`` values a call can fail with, by name without the prefix (what
    pygraphrt.sim.failing_calls' ``choose`` returns for an nccl* call), from the binding's enum."""
    from ..._bindings.nccl import ffi

    return {name[len("nccl"):]: value for name, value in ffi.typeof("ncclResult_t").relements.items()
            if name not in ("ncclSuccess", "ncclNumResults")}

# ncclDataType_t -> numpy dtype name (bfloat16: widened to float32 and rounded back)
_DTYPES = {0: "int8", 1: "uint8", 2: "int32", 3: "uint32", 4: "int64", 5: "uint64", 6: "float16",
           7: "float32", 8: "float64", 9: "bfloat16"}
_SIZES = {0: 1, 1: 1, 2: 4, 3: 4, 4: 8, 5: 8, 6: 2, 7: 4, 8: 8, 9: 2}
_OP_NAMES = {0: "sum", 1: "prod", 2: "max", 3: "min", 4: "avg"}
_NUM_OPS = 5
_SPLIT_NOCOLOR = -1


class NcclFailure(Exception):
    """A call's refusal: its ncclResult_t and the message ncclGetLastError gives."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _wait_limit() -> float:
    raw = os.environ.get("PYGRAPHRT_SIM_NCCL_WAIT", "").strip()
    try:
        return float(raw) if raw else 60.0
    except ValueError:
        return 60.0


class Clique:
    """The ranks of one communicator (one unique id, or one split)."""

    def __init__(self, nranks: int) -> None:
        self.nranks = nranks
        self.members: dict[int, "Comm"] = {}
        self.instances: dict[tuple[Any, ...], "Instance"] = {}

    @property
    def ready(self) -> bool:
        return len(self.members) == self.nranks


class Comm:
    """One rank (what an ``ncclComm_t`` points to)."""

    def __init__(self, handle: int, clique: Clique | None, rank: int, device: int, blocking: bool) -> None:
        self.handle = handle
        self.clique = clique
        self.rank = rank
        self.device = device
        self.blocking = blocking
        self.async_error = 0
        self.last_error = ""
        self.aborted = False
        self.finalized = False
        self.coll_seq = 0  # collectives this rank has run (the order that matches ranks)
        self.sent: dict[int, int] = {}  # peer -> sends run
        self.received: dict[int, int] = {}  # peer -> receives run
        self.splits = 0
        self.redops: dict[int, tuple[int, Any]] = {}  # op -> (dtype, scalar: a value or ("device", address))
        self.next_op = _NUM_OPS

    def fail(self, code: int, message: str) -> None:
        if not self.async_error:
            self.async_error = code
            self.last_error = message


class Op:
    """One operation of a batch, as issued (captured batches run it at every launch)."""

    __slots__ = ("kind", "send", "recv", "count", "dtype", "redop", "root")

    def __init__(self, kind: str, send: int, recv: int, count: int, dtype: int, redop: int, root: int) -> None:
        self.kind, self.send, self.recv, self.count = kind, send, recv, count
        self.dtype, self.redop, self.root = dtype, redop, root

    def describe(self) -> str:
        extra = f", root {self.root}" if self.kind in ("broadcast", "reduce") else \
            f", peer {self.root}" if self.kind in ("send", "recv") else ""
        op = f", op {_OP_NAMES.get(self.redop, 'premul_sum')}" if self.kind in ("all_reduce", "reduce",
                                                                                 "reduce_scatter") else ""
        return f"{self.kind} of {self.count} {_DTYPES.get(self.dtype, self.dtype)}{op}{extra}"


class Instance:
    """One run of one operation: the arrivals of its ranks, completed by the last."""

    def __init__(self, key: tuple[Any, ...], slots: dict[Any, int]) -> None:
        self.key = key
        self.slots = slots  # slot (a rank; "send" / "recv" for a send-receive pair) -> its rank
        self.arrived: dict[Any, tuple[Comm, Op, Any]] = {}  # slot -> (comm, op, inputs)
        self.done = False
        self.failed = ""
        self.failed_code = REMOTE

    def missing(self) -> set[int]:
        return {r for s, r in self.slots.items() if s not in self.arrived}

    def settled(self) -> bool:
        return self.done or bool(self.failed)


class Batch:
    """A (communicator, stream)'s operations of one group: one host function."""

    def __init__(self, comm: Comm, stream: int) -> None:
        self.comm = comm
        self.stream = stream
        self.ops: list[Op] = []


class SimNccl:
    """The ``lib`` pygraphrt.nccl's :class:`~pygraphrt.nccl.Library` calls on the sim backend."""

    PATH = LIBRARY_PATH

    def __init__(self, backend: Any) -> None:
        from ..._bindings import nccl as binding

        self._backend = backend
        self._runtime = backend.runtime
        self.ffi = ffi = binding.ffi
        self._lock = self._runtime.lock
        self._cond = threading.Condition(self._lock)
        self._constants = ffi.dlopen(None)
        self._comms: dict[int, Comm] = {}
        self._cliques: dict[bytes, Clique] = {}
        self._splits: dict[tuple[int, int], dict[int, tuple[int, int, Comm | None]]] = {}
        self._next_handle = 0x5100
        self._local = threading.local()
        self._batches: dict[int, Batch] = {}
        self._next_batch = 1
        self._strings: dict[Any, Any] = {}
        self.calls = 0  # calls that reached the library (what a check made before it must not do)
        cffi = backend.ffi  # the cuda13 binding: the host function's prototype
        self._host_fn = cffi.callback("void(*)(void *)", self._run_batch)
        self._cuda_ffi = cffi
        functions = binding.manifest()["functions"]
        self._fns: dict[str, Any] = {}
        for name, proto in functions.items():
            impl = getattr(self, "_" + name, None)
            if impl is None or proto["symbol"] != name:
                continue
            params = ", ".join(t for t, _ in proto["params"]) or "void"
            ctype = f"{proto['result']}(*)({params})"
            if proto["result"] == "ncclResult_t":
                self._fns[name] = ffi.callback(ctype, self._entry(name, impl), error=INTERNAL)
            else:
                self._fns[name] = ffi.callback(ctype, impl)

    # -- the C surface ---------------------------------------------------------------------
    def _entry(self, name: str, impl: Callable[..., Any]) -> Callable[..., int]:
        counted = name not in ("ncclGetVersion", "ncclCommGetAsyncError", "ncclCommAbort")

        def call(*args: Any) -> int:
            with self._lock:
                if counted:
                    self.calls += 1
                self._local.last = ""
                try:
                    fail = self._runtime.fail_call
                    if fail is not None and (chosen := fail(name)) is not None:
                        if name == "ncclGroupEnd" and self._depth():
                            # (NCCL's group end ends the group whatever it answers: the refused
                            # one ends it too, its operations dropped)
                            self._leave_group()
                        raise NcclFailure(failure_results()[chosen],
                                          f"{name} failed as pygraphrt.sim.failing_calls asked")
                    return int(impl(*args) or 0)
                except NcclFailure as exc:
                    self._local.last = exc.message
                    return exc.code
                except SimError as exc:
                    self._local.last = f"{name}: {exc.detail}"
                    return INVALID_ARGUMENT
                except Exception as exc:  # noqa: BLE001 - must not unwind into C
                    self._local.last = f"internal error of the simulator's NCCL in {name}: {type(exc).__name__}: {exc}"
                    return INTERNAL

        call.__name__ = name
        return call

    def __getattr__(self, name: str) -> Any:
        fns = self.__dict__.get("_fns")
        if fns is not None and name in fns:
            return fns[name]
        if name.startswith("_") or fns is None:
            raise AttributeError(name)
        raise AttributeError(f"{name} is not simulated: the simulator's NCCL does not implement it")

    def __repr__(self) -> str:
        return f"<pygraphrt simulator NCCL: {len(self._fns)} functions>"

    def _cstring(self, key: Any, text: str) -> Any:
        s = self._strings.get((key, text))
        if s is None:
            s = self._strings[(key, text)] = self.ffi.new("char[]", text.encode())
        return s

    def _ncclGetErrorString(self, result: int) -> Any:
        return self._cstring("result", _RESULT_TEXT.get(int(result), "unknown result"))

    def _ncclGetLastError(self, comm: Any) -> Any:
        c = self._comms.get(int(self.ffi.cast("uintptr_t", comm))) if comm != self.ffi.NULL else None
        text = getattr(self._local, "last", "") or (c.last_error if c is not None else "")
        return self._cstring("last", text)

    def _ncclGetVersion(self, out: Any) -> None:
        out[0] = VERSION_CODE

    def _ncclGetUniqueId(self, out: Any) -> None:
        self.ffi.memmove(out, os.urandom(128), 128)

    # -- communicators ---------------------------------------------------------------------
    def _new_comm(self, clique: Clique | None, rank: int, device: int, blocking: bool) -> Comm:
        self._next_handle += 0x10
        c = Comm(self._next_handle, clique, rank, device, blocking)
        self._comms[c.handle] = c
        return c

    def _comm(self, handle: Any, name: str) -> Comm:
        h = int(self.ffi.cast("uintptr_t", handle))
        c = self._comms.get(h)
        if c is None:
            raise NcclFailure(INVALID_ARGUMENT, f"{name}: {h:#x} is not a live communicator of the simulator")
        return c

    def _ncclCommInitRankConfig(self, out: Any, nranks: int, uid: Any, rank: int, config: Any) -> int:
        if nranks < 1 or not 0 <= rank < nranks:
            raise NcclFailure(INVALID_ARGUMENT, f"ncclCommInitRankConfig: rank {rank} of {nranks}")
        key = bytes(self.ffi.buffer(self.ffi.addressof(uid)))
        clique = self._cliques.get(key)
        if clique is None:
            clique = self._cliques[key] = Clique(nranks)
        if clique.nranks != nranks:
            raise NcclFailure(INVALID_USAGE, f"ncclCommInitRankConfig: nranks {nranks}, but the unique id's "
                                             f"communicator has {clique.nranks}")
        if rank in clique.members:
            raise NcclFailure(INVALID_USAGE, f"ncclCommInitRankConfig: rank {rank} joined this unique id already")
        blocking = config == self.ffi.NULL or config.blocking != 0
        c = self._new_comm(clique, rank, self._runtime.cur_device, blocking)
        clique.members[rank] = c
        out[0] = self.ffi.cast("ncclComm_t", c.handle)
        self._cond.notify_all()
        return self._join(c, lambda: c.clique is not None and c.clique.ready, "the other ranks to join")

    def _join(self, c: Comm, ready: Callable[[], bool], what: str) -> int:
        """After an init or split: ready now, in progress (non-blocking), left to the group's end,
        or waited for (blocking, outside a group: other threads' ranks)."""
        if ready():
            return SUCCESS
        if self._depth():
            self._local.joining.append((c, ready, what))
            return IN_PROGRESS if not c.blocking else SUCCESS
        if not c.blocking:
            return IN_PROGRESS
        self._wait(c, ready, what, None)
        if c.async_error:
            raise NcclFailure(c.async_error, c.last_error)
        return SUCCESS

    def _ncclCommCount(self, comm: Any, out: Any) -> None:
        c = self._ready(comm, "ncclCommCount")
        assert c.clique is not None
        out[0] = c.clique.nranks

    def _ncclCommUserRank(self, comm: Any, out: Any) -> None:
        out[0] = self._ready(comm, "ncclCommUserRank").rank

    def _ncclCommCuDevice(self, comm: Any, out: Any) -> None:
        out[0] = self._comm(comm, "ncclCommCuDevice").device

    def _ready(self, comm: Any, name: str) -> Comm:
        c = self._comm(comm, name)
        if c.clique is None or not c.clique.ready:
            raise NcclFailure(INVALID_USAGE, f"{name}: the communicator is not initialised (its other ranks have "
                                             "not joined: in one process, create them inside nccl.group())")
        return c

    def _ncclCommGetAsyncError(self, comm: Any, out: Any) -> None:
        c = self._comm(comm, "ncclCommGetAsyncError")
        if c.async_error:
            out[0] = c.async_error
        elif c.clique is None or not c.clique.ready:
            out[0] = IN_PROGRESS
        else:
            out[0] = SUCCESS

    def _ncclCommSplit(self, comm: Any, color: int, key: int, out: Any, config: Any) -> int:
        c = self._ready(comm, "ncclCommSplit")
        assert c.clique is not None
        parent = c.clique
        seq = c.splits
        c.splits += 1
        table = self._splits.setdefault((id(parent), seq), {})
        blocking = config == self.ffi.NULL or config.blocking != 0
        child = None if color == _SPLIT_NOCOLOR else self._new_comm(None, -1, c.device, blocking)
        table[c.rank] = (color, key, child)
        out[0] = self.ffi.NULL if child is None else self.ffi.cast("ncclComm_t", child.handle)
        if len(table) == parent.nranks:  # the last rank: form the new communicators
            del self._splits[(id(parent), seq)]
            for col in {v[0] for v in table.values() if v[0] != _SPLIT_NOCOLOR}:
                ranks = sorted((v[1], r) for r, v in table.items() if v[0] == col)
                clique = Clique(len(ranks))
                for new_rank, (_, old) in enumerate(ranks):
                    kid = table[old][2]
                    assert kid is not None
                    kid.clique, kid.rank = clique, new_rank
                    clique.members[new_rank] = kid
            self._cond.notify_all()
        if child is None:
            return SUCCESS
        return self._join(child, lambda: child.clique is not None, "the other ranks' split")

    def _ncclCommFinalize(self, comm: Any) -> None:
        self._comm(comm, "ncclCommFinalize").finalized = True

    def _ncclCommDestroy(self, comm: Any) -> None:
        c = self._comm(comm, "ncclCommDestroy")
        self._forget(c)

    def _ncclCommAbort(self, comm: Any) -> None:
        c = self._comm(comm, "ncclCommAbort")
        c.aborted = True
        self._forget(c)
        if c.clique is not None:  # the peers' waits for this rank end
            for inst in c.clique.instances.values():
                if not inst.done and c.rank in inst.missing():
                    inst.failed = f"rank {c.rank} aborted its communicator"
        self._cond.notify_all()

    def _forget(self, c: Comm) -> None:
        self._comms.pop(c.handle, None)
        for bid in [k for k, b in self._batches.items() if b.comm is c]:
            del self._batches[bid]

    # -- reductions ------------------------------------------------------------------------
    def _ncclRedOpCreatePreMulSum(self, out: Any, scalar: Any, dtype: int, residence: int, comm: Any) -> None:
        c = self._ready(comm, "ncclRedOpCreatePreMulSum")
        self._dtype(dtype, "ncclRedOpCreatePreMulSum")
        addr = int(self.ffi.cast("uintptr_t", scalar))
        if residence == int(self.ffi.integer_const("ncclScalarDevice")):
            value: Any = ("device", addr)
        else:
            value = self._array(bytes(self._runtime.memory.view(addr, _SIZES[dtype], "the scalar")), dtype)[0]
        op = c.next_op
        c.next_op += 1
        c.redops[op] = (dtype, value)
        out[0] = op

    def _ncclRedOpDestroy(self, op: int, comm: Any) -> None:
        c = self._comm(comm, "ncclRedOpDestroy")
        if c.redops.pop(int(op), None) is None:
            raise NcclFailure(INVALID_ARGUMENT, f"ncclRedOpDestroy: {int(op)} is not a reduction of this communicator")

    # -- groups ----------------------------------------------------------------------------
    def _depth(self) -> int:
        return getattr(self._local, "depth", 0)

    def _ncclGroupStart(self) -> None:
        if not self._depth():
            self._local.batches = {}
            self._local.joining = []
        self._local.depth = self._depth() + 1

    def _leave_group(self) -> "tuple[dict[tuple[int, int], Batch], list[Any]] | None":
        """One group level ended; at the outermost, the group's batches and joining communicators,
        taken out of the thread's state (None: still inside a group)."""
        self._local.depth -= 1
        if self._depth():
            return None
        ended = self._local.batches, self._local.joining
        self._local.batches, self._local.joining = {}, []
        return ended

    def _ncclGroupEnd(self) -> int:
        if not self._depth():
            raise NcclFailure(INVALID_USAGE, "ncclGroupEnd without ncclGroupStart")
        ended = self._leave_group()
        if ended is None:
            return SUCCESS
        batches, joining = ended
        for c, ready, what in joining:  # inits and splits of the group: every rank has called by now
            if not ready():
                if not c.blocking:
                    continue  # (polled: ncclInProgress until the others come)
                self._wait(c, ready, what, None)
                if c.async_error:
                    raise NcclFailure(c.async_error, c.last_error)
        return self._flush(list(batches.values()))

    # -- operations ------------------------------------------------------------------------
    def _issue(self, name: str, comm: Any, stream: Any, op: Op) -> int:
        c = self._ready(comm, name)
        if c.aborted or c.finalized:
            raise NcclFailure(INVALID_USAGE, f"{name}: the communicator is {'aborted' if c.aborted else 'finalized'}")
        if c.async_error:
            raise NcclFailure(c.async_error, c.last_error)
        self._dtype(op.dtype, name)
        if op.kind in ("all_reduce", "reduce", "reduce_scatter") and op.redop >= _NUM_OPS:
            got = c.redops.get(op.redop)
            if got is None:
                raise NcclFailure(INVALID_ARGUMENT, f"{name}: reduction {op.redop} is not one of this communicator's")
            if got[0] != op.dtype:
                raise NcclFailure(INVALID_ARGUMENT, f"{name}: the reduction is for another type")
        elif op.kind in ("all_reduce", "reduce", "reduce_scatter") and op.redop not in _OP_NAMES:
            raise NcclFailure(INVALID_ARGUMENT, f"{name}: reduction {op.redop}")
        assert c.clique is not None
        if op.kind in ("broadcast", "reduce", "send", "recv") and not 0 <= op.root < c.clique.nranks:
            raise NcclFailure(INVALID_ARGUMENT, f"{name}: rank {op.root} of {c.clique.nranks}")
        s = int(self.ffi.cast("uintptr_t", stream))
        if self._depth():
            batches = self._local.batches
            b = batches.get((c.handle, s))
            if b is None:
                b = batches[(c.handle, s)] = Batch(c, s)
            b.ops.append(op)
            return SUCCESS
        b = Batch(c, s)
        b.ops.append(op)
        return self._flush([b])

    def _ncclAllReduce(self, send: Any, recv: Any, count: int, dtype: int, redop: int, comm: Any, stream: Any) -> int:
        return self._issue("ncclAllReduce", comm, stream, Op("all_reduce", self._a(send), self._a(recv), count,
                                                             dtype, redop, 0))

    def _ncclBroadcast(self, send: Any, recv: Any, count: int, dtype: int, root: int, comm: Any, stream: Any) -> int:
        return self._issue("ncclBroadcast", comm, stream, Op("broadcast", self._a(send), self._a(recv), count,
                                                             dtype, 0, root))

    def _ncclReduce(self, send: Any, recv: Any, count: int, dtype: int, redop: int, root: int, comm: Any,
                    stream: Any) -> int:
        return self._issue("ncclReduce", comm, stream, Op("reduce", self._a(send), self._a(recv), count, dtype,
                                                          redop, root))

    def _ncclAllGather(self, send: Any, recv: Any, count: int, dtype: int, comm: Any, stream: Any) -> int:
        return self._issue("ncclAllGather", comm, stream, Op("all_gather", self._a(send), self._a(recv), count,
                                                             dtype, 0, 0))

    def _ncclReduceScatter(self, send: Any, recv: Any, count: int, dtype: int, redop: int, comm: Any,
                           stream: Any) -> int:
        return self._issue("ncclReduceScatter", comm, stream, Op("reduce_scatter", self._a(send), self._a(recv),
                                                                 count, dtype, redop, 0))

    def _ncclSend(self, send: Any, count: int, dtype: int, peer: int, comm: Any, stream: Any) -> int:
        return self._issue("ncclSend", comm, stream, Op("send", self._a(send), 0, count, dtype, 0, peer))

    def _ncclRecv(self, recv: Any, count: int, dtype: int, peer: int, comm: Any, stream: Any) -> int:
        return self._issue("ncclRecv", comm, stream, Op("recv", 0, self._a(recv), count, dtype, 0, peer))

    def _a(self, p: Any) -> int:
        return int(self.ffi.cast("uintptr_t", p))

    def _dtype(self, dtype: int, name: str) -> None:
        if int(dtype) not in _DTYPES:
            raise NcclFailure(INVALID_ARGUMENT, f"{name}: data type {int(dtype)} is not simulated (FP8 types are not)")

    # -- running ---------------------------------------------------------------------------
    def _flush(self, batches: list[Batch]) -> int:
        """Each batch as a host function on its stream, in issue order; the ranks still to come
        in this flush complete what the earlier ones left open."""
        flush: dict[str, set[int]] = {"to_come": {b.comm.handle for b in batches}}
        outer = getattr(self._local, "flush", None)
        self._local.flush = flush
        lib, cffi = self._backend.lib, self._cuda_ffi
        try:
            for i, b in enumerate(batches):
                bid = self._next_batch
                self._next_batch += 1
                self._batches[bid] = b
                if not any(x.comm is b.comm for x in batches[i + 1:]):
                    flush["to_come"].discard(b.comm.handle)
                rc = lib.cudaLaunchHostFunc(cffi.cast("cudaStream_t", b.stream), self._host_fn,
                                            cffi.cast("void *", bid))
                if rc:
                    failure = lib.take_failure(rc)
                    self._batches.pop(bid, None)
                    raise NcclFailure(CUDA_ERROR, f"cudaLaunchHostFunc (the collective's host function) failed: "
                                                  f"{failure[2] if failure else rc}")
                if not self._captured(b.stream):
                    self._batches.pop(bid, None)  # ran: an eager batch is not needed again
        finally:
            self._local.flush = outer
        for b in batches:
            if b.comm.async_error:
                raise NcclFailure(b.comm.async_error, b.comm.last_error)
        return SUCCESS

    def _captured(self, stream: int) -> bool:
        st = self._runtime.streams.get(stream)
        return st is not None and st.capture is not None

    def _run_batch(self, user: Any) -> None:
        """The host function: arrive with every operation, then wait for this rank's outputs."""
        with self._lock:
            b = self._batches.get(int(self._cuda_ffi.cast("uintptr_t", user)))
            if b is None or b.comm.aborted:
                return
            c = b.comm
            try:
                self._run_ops(c, b)
            except NcclFailure as exc:
                c.fail(exc.code, exc.message)
            except Exception as exc:  # noqa: BLE001 - a host function must not unwind into C
                c.fail(INTERNAL, f"internal error of the simulator's NCCL: {type(exc).__name__}: {exc}")

    def _run_ops(self, c: Comm, b: Batch) -> None:
        waits = [self._arrive(c, op) for op in b.ops]
        flush = getattr(self._local, "flush", None)
        for inst in waits:
            if inst is None or inst.done:
                continue
            assert c.clique is not None
            missing = inst.missing()
            to_come = {c.clique.members[r].handle for r in missing if r in c.clique.members}
            if flush is not None and len(to_come) == len(missing) and to_come <= flush["to_come"]:
                continue  # completed by the rest of this group end, before it returns
            what = f"rank(s) {sorted(missing)} to issue their part of {self._mine(inst, c).describe()}"
            self._wait(c, inst.settled, what, inst)
            if inst.failed and not c.async_error:
                c.fail(inst.failed_code, inst.failed)

    @staticmethod
    def _mine(inst: Instance, c: Comm) -> Op:
        for comm, op, _ in inst.arrived.values():
            if comm is c:
                return op
        return next(iter(inst.arrived.values()))[1]

    def _wait(self, c: Comm, done: Callable[[], bool], what: str, inst: Instance | None) -> None:
        deadline = time.monotonic() + _wait_limit()
        while not done():
            if c.aborted:
                return
            if threading.active_count() <= 1:
                why = (f"rank {c.rank} waits for {what}, and no other thread can issue it: ranks of one process "
                       "issue their parts inside nccl.group() (eager), or launch each rank's work from a thread "
                       "of its own (captured graphs)")
                self._give_up(c, INVALID_USAGE, why, inst)
                return
            if time.monotonic() >= deadline:
                self._give_up(c, TIMEOUT, f"rank {c.rank} waited {_wait_limit()} s (PYGRAPHRT_SIM_NCCL_WAIT) for "
                                          f"{what}", inst)
                return
            self._cond.wait(0.02)

    def _give_up(self, c: Comm, code: int, why: str, inst: Instance | None) -> None:
        c.fail(code, why)
        if inst is not None and c.clique is not None:
            c.clique.instances.pop(inst.key, None)

    def _arrive(self, c: Comm, op: Op) -> Instance | None:
        """Arrive with ``op``: snapshot the inputs; the last arrival computes it.  Returns the
        instance whose output this rank still needs (None: nothing to wait for)."""
        clique = c.clique
        assert clique is not None
        if op.kind in ("send", "recv"):
            src, dst = (c.rank, op.root) if op.kind == "send" else (op.root, c.rank)
            table = c.sent if op.kind == "send" else c.received
            n = table.get(op.root, 0)
            table[op.root] = n + 1
            key: tuple[Any, ...] = ("p2p", src, dst, n)
            slots: dict[Any, int] = {"send": src, "recv": dst}
            slot: Any = op.kind
        else:
            key = ("coll", c.coll_seq)
            c.coll_seq += 1
            slots = {r: r for r in range(clique.nranks)}
            slot = c.rank
        inst = clique.instances.get(key)
        if inst is None:
            inst = clique.instances[key] = Instance(key, slots)
        elif inst.arrived:
            first_rank, (_, first, _) = next(iter(inst.arrived.items()))
            if op.kind in ("send", "recv"):
                same = (first.count, first.dtype) == (op.count, op.dtype)
                why = (f"send/receive #{n} from rank {src} to rank {dst}: {first.describe()} on one side, "
                       f"{op.describe()} on the other")
            else:
                same = (first.kind, first.count, first.dtype, first.root, self._op_kind(first)) == \
                    (op.kind, op.count, op.dtype, op.root, self._op_kind(op))
                why = (f"the ranks disagree on collective #{key[1]}: rank {c.rank} issued {op.describe()}, rank "
                       f"{first_rank} {first.describe()}")
            if not same:
                for other, _, _ in inst.arrived.values():
                    other.fail(INVALID_USAGE, why)
                clique.instances.pop(key, None)
                raise NcclFailure(INVALID_USAGE, why)
        inputs = self._inputs(c, op)
        inst.arrived[slot] = (c, op, inputs)
        if op.kind == "broadcast" and c.rank == op.root and op.send != op.recv:
            self._write(op.recv, self._bytes(inputs, op.dtype), "the root's recvbuff")
        if len(inst.arrived) == len(inst.slots):
            clique.instances.pop(key, None)
            try:
                self._complete(inst)
            except (SimError, NcclFailure) as exc:
                why = exc.detail if isinstance(exc, SimError) else exc.message
                for other, _, _ in inst.arrived.values():
                    other.fail(INVALID_ARGUMENT, f"{op.kind}: {why}")
                inst.failed = why
            inst.done = True
            self._cond.notify_all()
            return None
        own_output = op.kind in ("all_reduce", "all_gather", "reduce_scatter", "recv") or \
            (op.kind == "broadcast" and c.rank != op.root) or (op.kind == "reduce" and c.rank == op.root)
        return inst if own_output else None

    @staticmethod
    def _op_kind(op: Op) -> Any:
        return op.redop if op.redop < _NUM_OPS else "premul"

    def _inputs(self, c: Comm, op: Op) -> Any:
        size = _SIZES[op.dtype]
        if op.kind in ("recv",) or (op.kind == "broadcast" and c.rank != op.root):
            return None
        n = op.count * (c.clique.nranks if op.kind == "reduce_scatter" else 1)  # type: ignore[union-attr]
        data = self._array(bytes(self._runtime.memory.view(op.send, n * size, f"{op.kind}'s sendbuff")), op.dtype)
        if op.redop >= _NUM_OPS and op.kind in ("all_reduce", "reduce", "reduce_scatter"):
            _, scalar = c.redops[op.redop]
            if isinstance(scalar, tuple):  # ncclScalarDevice: read now, when the operation runs
                scalar = self._array(bytes(self._runtime.memory.view(scalar[1], size, "the premul_sum scalar")),
                                     op.dtype)[0]
            data = data * scalar
        return data

    def _array(self, raw: bytes, dtype: int) -> Any:
        np = numpy()

        if dtype == 9:  # bfloat16: the upper half of a float32
            return (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32)
        return np.frombuffer(raw, _DTYPES[dtype]).copy()

    def _bytes(self, values: Any, dtype: int) -> bytes:
        np = numpy()

        if dtype == 9:
            u = np.asarray(values, np.float32).view(np.uint32)
            return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16).tobytes()
        return np.asarray(values).astype(_DTYPES[dtype], copy=False).tobytes()

    def _write(self, address: int, data: bytes, what: str) -> None:
        self._runtime.memory.view(address, len(data), what)[:] = data

    def _reduce(self, arrays: list[Any], op: Op) -> Any:
        np = numpy()

        kind = op.redop if op.redop < _NUM_OPS else 0  # premul_sum: a sum of the multiplied inputs
        out = arrays[0].copy()
        with np.errstate(over="ignore"):
            for a in arrays[1:]:
                if kind in (0, 4):
                    out = out + a
                elif kind == 1:
                    out = out * a
                elif kind == 2:
                    out = np.maximum(out, a)
                else:
                    out = np.minimum(out, a)
            if kind == 4:
                out = out // len(arrays) if out.dtype.kind in "iu" else out / len(arrays)
        return out

    def _complete(self, inst: Instance) -> None:
        ranks = inst.arrived
        _, op, _ = next(iter(ranks.values()))
        dt = op.dtype
        if op.kind in ("send", "recv"):
            self._write(ranks["recv"][1].recv, self._bytes(ranks["send"][2], dt),
                        f"ncclRecv's recvbuff (from rank {inst.key[1]})")
            return
        order = sorted(ranks)
        if op.kind == "all_reduce":
            result = self._bytes(self._reduce([ranks[r][2] for r in order], op), dt)
            for r in order:
                self._write(ranks[r][1].recv, result, f"rank {r}'s recvbuff")
        elif op.kind == "reduce":
            root = op.root
            self._write(ranks[root][1].recv, self._bytes(self._reduce([ranks[r][2] for r in order], op), dt),
                        f"root {root}'s recvbuff")
        elif op.kind == "broadcast":
            data = self._bytes(ranks[op.root][2], dt)
            for r in order:
                if r != op.root:
                    self._write(ranks[r][1].recv, data, f"rank {r}'s recvbuff")
        elif op.kind == "all_gather":
            np = numpy()

            data = self._bytes(np.concatenate([ranks[r][2] for r in order]), dt)
            for r in order:
                self._write(ranks[r][1].recv, data, f"rank {r}'s recvbuff")
        elif op.kind == "reduce_scatter":
            total = self._reduce([ranks[r][2] for r in order], op)
            n = op.count
            for i, r in enumerate(order):
                self._write(ranks[r][1].recv, self._bytes(total[i * n:(i + 1) * n], dt), f"rank {r}'s recvbuff")
