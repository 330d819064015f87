"""Collectives across GPUs, processes and machines: NCCL through the ``nccl`` binding.

NCCL (``libnccl.so.2``) is found the way libcudart is (:func:`library`): ``PYGRAPHRT_NCCL``;
the copy already loaded in the process (torch loads one: two *different* libnccl in one
process is refused, since each keeps its own state and their communicators cannot meet);
cuda-pathfinder (``load_nvidia_dynamic_lib("nccl")``); the ``nvidia/nccl/lib`` folder of an
``nvidia-nccl-cu12`` / ``-cu13`` wheel in site-packages; the system loader.  One binding,
generated from the newest ``nccl.h`` pinned by bindgen, serves every NCCL 2.x from 2.27: a
function newer than the loaded library raises :class:`~pygraphrt.errors.NotSupported` naming
both versions (``ncclGetVersion`` gives the loaded one).

A :class:`Communicator` is one rank on one device.  Every operation takes a pygraphrt
:class:`~pygraphrt.device.Stream` and is captured when the stream captures; a graph or
executable graph that captured a communicator keeps it alive, and :meth:`Communicator.close`
while one lives is refused, naming them (NCCL's destroy would wait for them: a hang).  Waits
are bounded where a ``timeout`` is given: the communicator is then non-blocking inside NCCL
(``config.blocking = 0``) and pygraphrt polls ``ncclCommGetAsyncError``; on expiry it aborts
the communicators and raises :class:`~pygraphrt.errors.CommTimeout`.  The price: NCCL launches
every eager operation of a non-blocking communicator from a thread it starts for it (answering
``ncclInProgress``, polled here without sleeping for its first milliseconds); a blocking
communicator's eager operation is one NCCL call.

Buffers: pygraphrt buffers (``dtype=`` given), torch tensors (read through their own accessors:
bfloat16 too), ``__cuda_array_interface__`` arrays (CuPy) and DLPack arrays on a CUDA device --
their dtype, size and device read from them; contiguous; a destination NCCL writes not read-only.
An executable graph that captured collectives may be updated from a recapture
(``GraphExec.update``); the updated executable holds the lease of the graph it was updated from.

Arguments are checked before NCCL sees them (a closed communicator, a rank or peer out of
range, a unique id of the wrong size, a count larger than a buffer, a dtype that differs from
the array's): :class:`~pygraphrt.errors.InvalidValue` naming the call.  NCCL's own refusals
are mapped by the ``ncclResult_t`` name (:data:`RESULT_CLASSES`) and name the call and rank.

On the ``sim`` backend :func:`library` is the simulator's stand-in
(``pygraphrt._vendors.sim._nccl``, handed over by the backend's ``nccl_library()``; a
library named by ``PYGRAPHRT_NCCL`` still wins): collectives among the simulated devices of
one process (:meth:`Communicator.init_all`), eager and captured (a host node per rank and
group), behind the same checks -- ranks of one thread issue their parts inside :func:`group`;
captured graphs of several ranks are launched from one thread per rank.

Collectives inside conditional bodies (IF / WHILE / SWITCH, CUDA >= 12.4) are a probe, not a
promise.  What is known: the runtime allows only kernel, empty, child-graph, memset, memcpy and
conditional nodes in a body (``cudaConditionalNodeParams``: "This applies recursively to child
graphs and conditional bodies"); NCCL documents nothing about conditional nodes, and adds host
nodes to a captured graph when its plan needs proxy operations (network, shared-memory paths;
NVLink peer-to-peer within a machine may need none).  So a collective issued on a stream that
captures into a body (``ConditionalNode.capture``, or ``Stream.capture(graph=body)``) is, per
:data:`COLLECTIVES_IN_CONDITIONAL_BODIES`: ``"checked"`` -- NCCL captures it, then pygraphrt
reads the node types NCCL added to the body and refuses (:class:`~pygraphrt.errors.NotSupported`,
naming them) any the rule forbids, before the runtime meets them at instantiation; or
``"refused"`` -- refused before NCCL is called.  What decides: the GPU probe
``tests/gpu/test_nccl.py::test_all_reduce_in_a_while_body`` (2 GPUs, every rank looping the
same count), which reports what NCCL added and whether the loop's all-reduces gave the right
sums; where the runtime refuses what the check passes, the setting becomes ``"refused"``.  On
the simulator a collective is a host node, so the check refuses it there.

What the probe found (2026-11-27, two NVLink-connected H200s, NCCL 2.28.9, CUDA 13.0, driver
580; with the setting forced to ``"checked"``): NCCL captures the all-reduce into the WHILE body
as ``event_record, kernel, kernel, wait_event`` -- its own cross-stream join, as event nodes,
which a conditional body may not hold -- and ``cudaGraphInstantiateWithFlags`` refuses the
parent graph (``cudaErrorInvalidValue``) on every rank.  pygraphrt's body-node check did not see
the event nodes when the call returned (NCCL adds them as its internal streams join the
capture), so ``"checked"`` would not refuse early.  Hence the setting is ``"refused"``: a
collective in a conditional body is refused before NCCL is called, naming this reason
(``_CONDITIONAL_BODIES_WHY``); the probe test holds the finding and fails if a later NCCL or
runtime runs the loop, so the decision is revisited then.

RCCL (AMD) is not bound: its ``rccl.h`` has no pinned source in the package registries; the
library seam (:class:`Library`) is where a ``rccl`` header set would plug in.
"""

from __future__ import annotations

import contextlib
import itertools
import numbers
import operator
import os
import threading
import time
import weakref
from typing import Any, Iterator, Sequence

from . import _runtime, errors
from ._handles import Owned, live_graphs_keeping
from ._operands import DeviceMemory, _dltensor, array_interface, dlpack_device
from .device import Stream, current_device
from .multidevice import pointer_device

__all__ = ["Library", "library", "UniqueId", "unique_id", "Communicator", "RedOp", "group",
           "synchronize", "communicators_of", "collectives_in_conditional_bodies", "RESULT_CLASSES",
           "DTYPES"]

# ncclResult_t by name -> the pygraphrt error class (ncclInProgress is not an error: polled).
RESULT_CLASSES: dict[str, type[errors.GraphRTError]] = {
    "ncclUnhandledCudaError": errors.UnhandledCudaError,
    "ncclSystemError": errors.CommSystemError,
    "ncclInternalError": errors.CommInternalError,
    "ncclInvalidArgument": errors.InvalidValue,
    "ncclInvalidUsage": errors.InvalidUsage,
    "ncclRemoteError": errors.RemoteError,
    "ncclTimeout": errors.CommTimeout,
}
_IN_PROGRESS = 7  # ncclInProgress (checked against the binding's enum in the tests)

# dtype name -> (ncclDataType_t member, bytes per element)
DTYPES: dict[str, tuple[str, int]] = {
    "int8": ("ncclInt8", 1), "uint8": ("ncclUint8", 1), "int32": ("ncclInt32", 4),
    "uint32": ("ncclUint32", 4), "int64": ("ncclInt64", 8), "uint64": ("ncclUint64", 8),
    "float16": ("ncclFloat16", 2), "float32": ("ncclFloat32", 4), "float64": ("ncclFloat64", 8),
    "bfloat16": ("ncclBfloat16", 2),
}
# __cuda_array_interface__ typestr (kind, size) -> dtype name
_TYPESTR = {("i", 1): "int8", ("u", 1): "uint8", ("i", 4): "int32", ("u", 4): "uint32",
            ("i", 8): "int64", ("u", 8): "uint64", ("f", 2): "float16", ("f", 4): "float32",
            ("f", 8): "float64"}
_OPS = {"sum": "ncclSum", "prod": "ncclProd", "max": "ncclMax", "min": "ncclMin", "avg": "ncclAvg"}
UNIQUE_ID_BYTES = 128  # NCCL_UNIQUE_ID_BYTES (checked against the binding in the tests)
#: What a collective issued on a stream that captures into a conditional body meets (see the
#: module docstring): "checked" (NCCL captures it; node types the body rule forbids are refused
#: after its call) or "refused" (refused before NCCL is called).
COLLECTIVES_IN_CONDITIONAL_BODIES = "refused"
#: Why the setting is what it is (the refusal's message says it): the one place the GPU probe's
#: finding is written, beside the setting it decides.
_CONDITIONAL_BODIES_WHY = ("NCCL captures a collective as event record/wait nodes around its kernels "
                           "(NCCL 2.28.9, CUDA 13.0, two H200s: event_record, kernel, kernel, wait_event), "
                           "and a conditional body may not hold event nodes: the runtime refuses the graph "
                           "at instantiation (cudaErrorInvalidValue)")
# The node types a conditional body may hold (cudaConditionalNodeParams), by NodeType value.
BODY_NODE_TYPES = frozenset({"kernel", "empty", "graph", "memset", "memcpy", "conditional"})
SONAME = "libnccl.so.2"
#: Seconds a non-blocking communicator's ncclInProgress is polled without sleeping (see
#: Communicator._settle): an eager operation's launch ends well within it.
SETTLE_SPIN_S = 0.002


# ---------------------------------------------------------------- the library
def version_tuple(code: int) -> tuple[int, int, int]:
    """(major, minor, patch) of ``ncclGetVersion``'s code (NCCL_VERSION: 2.9 on is X*10000 +
    Y*100 + Z; before, X*1000 + Y*100 + Z)."""
    if code >= 10000:
        return code // 10000, (code % 10000) // 100, code % 100
    return code // 1000, (code % 1000) // 100, code % 100


def loaded_copies() -> list[str]:
    """The distinct libnccl files mapped into this process (real paths; one per file)."""
    found: dict[tuple[int, int], str] = {}
    try:
        with open("/proc/self/maps") as maps:
            text = maps.read()
    except OSError:
        return []
    for line in text.splitlines():
        path = line.split(None, 5)[5].strip() if len(line.split(None, 5)) == 6 else ""
        if "/libnccl" not in path or ".so" not in path:
            continue
        try:
            st = os.stat(path)
        except OSError:
            continue
        found.setdefault((st.st_dev, st.st_ino), os.path.realpath(path))
    return sorted(found.values())


def _refuse_two_copies(api: str) -> None:
    copies = loaded_copies()
    if len(copies) > 1:
        raise errors.BackendError(
            f"{api}: {len(copies)} different libnccl are loaded in this process: {', '.join(copies)}. "
            "Each keeps its own state, so communicators of one cannot meet the other's (and symbols "
            "may resolve to either): load one, e.g. PYGRAPHRT_NCCL=<the path torch loaded>, or "
            "import torch before pygraphrt.nccl so that its copy is reused")


def _candidates() -> list[tuple[str, str]]:
    """(path or soname, how it was found), in the order tried."""
    env = os.environ.get("PYGRAPHRT_NCCL")
    if env:
        return [(env, "PYGRAPHRT_NCCL")]
    copies = loaded_copies()
    if copies:  # torch (or anyone) loaded one: use it, never a second
        return [(copies[0], "already loaded in this process")]
    found: list[tuple[str, str]] = []
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib

        dl = load_nvidia_dynamic_lib("nccl")
        if dl.abs_path:
            found.append((dl.abs_path, f"cuda-pathfinder ({getattr(dl, 'found_via', 'found')})"))
    except Exception as exc:  # not installed, or found nothing
        found.append(("", f"cuda-pathfinder: {type(exc).__name__}: {exc}"))
    from . import _pathfinder

    for base in _pathfinder.site_dirs():  # without cuda-pathfinder: the wheels' folder
        p = os.path.join(base, "nvidia", "nccl", "lib", SONAME)
        if os.path.isfile(p):
            found.append((p, "site-packages (nvidia-nccl wheel)"))
    found.append((SONAME, "system loader"))
    return found


class Library:
    """A loaded libnccl and the ``nccl`` binding opened on it."""

    def __init__(self, path: str, how: str, lib: Any = None) -> None:
        from ._bindings.nccl import ffi, symbols

        self.ffi: Any = ffi
        self.symbols: Any = symbols
        # (``lib``: a stand-in a plug-in backend gives, function pointers of the binding's
        # prototypes -- the simulator's collectives; else the library at ``path``)
        self.lib: Any = ffi.dlopen(path) if lib is None else lib
        self.how = how
        out = ffi.new("int *")
        try:
            get_version = self.lib.ncclGetVersion
        except AttributeError:
            raise errors.BackendError(f"{path} exports no ncclGetVersion: not NCCL") from None
        rc = get_version(out)
        if rc:
            raise errors.BackendError(f"{path}: ncclGetVersion returned {rc}")
        self.version_code = out[0]
        self.version = version_tuple(out[0])
        self.path = path
        if "/" not in path and lib is None:
            copies = loaded_copies()
            self.path = copies[0] if copies else path
        self._fns: dict[str, Any] = {}
        self._enums: dict[str, int] = {}
        # the hot path's lookups: dtype name -> ncclDataType_t, op name -> ncclRedOp_t
        self.dtype_values: dict[str, int] = {n: self.enum(member) for n, (member, _) in DTYPES.items()}
        self.op_values: dict[str, int] = {n: self.enum(member) for n, member in _OPS.items()}
        self._names: dict[int, str] = dict(ffi.typeof("ncclResult_t").elements)

    @property
    def version_str(self) -> str:
        """The loaded NCCL's version as text, e.g. ``"2.28.9"``."""
        return "%d.%d.%d" % self.version

    def fn(self, api: str) -> Any:
        """The bound function ``api``; NotSupported where the loaded library is older than the
        release that added it (the binding's ``since``), naming both versions."""
        f = self._fns.get(api)
        if f is not None:
            return f
        since = self.symbols.SINCE.get(api)
        if since is not None and self.version[:2] < since:
            raise errors.NotSupported(api, vendor="nccl", detail=(
                f"{api} is in NCCL {since[0]}.{since[1]} and later; the loaded library "
                f"{self.path} is NCCL {self.version_str}"))
        try:
            f = getattr(self.lib, self.symbols.API_SYMBOLS.get(api, api))
        except AttributeError:
            raise errors.NotSupported(api, vendor="nccl", detail=(
                f"the loaded library {self.path} (NCCL {self.version_str}) does not export it")) from None
        self._fns[api] = f
        return f

    def error(self, rc: int, api: str, rank: int | None = None, comm: Any = None) -> errors.GraphRTError:
        """The pygraphrt error for ``ncclResult_t`` ``rc`` of ``api`` (by name: RESULT_CLASSES)."""
        ffi = self.ffi
        name = self._names.get(rc, f"ncclResult_t {rc}")
        message = ""
        try:
            message = ffi.string(self.lib.ncclGetErrorString(rc)).decode(errors="replace")
            # (NCCL leaves the comm argument unused: NULL asks for this thread's last error too)
            last = self.lib.ncclGetLastError(ffi.NULL if comm is None else comm)
            if last != ffi.NULL:
                text = ffi.string(last).decode(errors="replace")
                if text:
                    message = f"{message}: {text}" if message else text
        except Exception:  # (a library without these: the name says enough)
            pass
        cls = RESULT_CLASSES.get(name, errors.GraphRTError)
        return cls(api, rc, name, "nccl", message, detail="" if rank is None else f"rank {rank}")

    def call(self, api: str, *args: Any, rank: int | None = None, comm: Any = None) -> int:
        """Call ``api``; return 0 or ncclInProgress; raise on any other result."""
        rc = self.fn(api)(*args)
        if rc and rc != _IN_PROGRESS:
            raise self.error(rc, api, rank, comm)
        return rc

    def enum(self, name: str) -> int:
        """The value of an enum member of nccl.h (``ncclSum``)."""
        v = self._enums.get(name)
        if v is None:
            v = self._enums[name] = int(self.ffi.integer_const(name))
        return v


_library: Library | None = None
_library_lock = threading.Lock()
attempts: list[str] = []  # "path (how): outcome", for error messages and tests


def library() -> Library:
    """The loaded libnccl (found once; see the module docstring for the order) -- on a plug-in
    backend that has collectives of its own (the simulator), those, unless ``PYGRAPHRT_NCCL``
    names a library."""
    global _library
    backend = _runtime.active()
    plugin = getattr(backend, "nccl_library", None)
    if plugin is not None and not os.environ.get("PYGRAPHRT_NCCL"):
        own = backend.memo.get("_nccl_library")
        if own is None:
            stand_in = plugin()
            own = backend.memo["_nccl_library"] = Library(getattr(stand_in, "PATH", repr(stand_in)),
                                                              f"the {backend.vendor} backend's collectives",
                                                              stand_in)
        return own
    lib = _library
    if lib is not None:
        return lib
    with _library_lock:
        if _library is not None:
            return _library
        reasons = []
        for cand, how in _candidates():
            if not cand:
                reasons.append(how)
                continue
            if "/" in cand and not os.path.exists(cand):
                reasons.append(f"{cand} ({how}): no such file")
                continue
            try:
                lib = Library(cand, how)
            except (OSError, errors.BackendError) as exc:
                reasons.append(f"{cand} ({how}): {exc}")
                continue
            attempts.append(f"{lib.path} ({how}): NCCL {lib.version_str}")
            _refuse_two_copies("pygraphrt.nccl")
            _library = lib
            return lib
        attempts.extend(reasons)
        raise errors.BackendError("no NCCL library could be loaded (pip install pygraphrt[nccl-cu13], "
                                  "or set PYGRAPHRT_NCCL); tried: " + "; ".join(reasons))


def _reset_for_tests() -> None:
    global _library
    _library = None
    attempts.clear()


# ---------------------------------------------------------------- unique ids
class UniqueId:
    """The 128 bytes (``ncclUniqueId``) every rank of a new communicator must be given: made by
    one rank (:func:`unique_id`) and passed to the others (torch's store, a file, any channel)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise errors.InvalidValue("UniqueId", detail=f"expected {UNIQUE_ID_BYTES} bytes, got "
                                                         f"{type(data).__name__}")
        data = bytes(data)
        if len(data) != UNIQUE_ID_BYTES:
            raise errors.InvalidValue("UniqueId", detail=f"a unique id is {UNIQUE_ID_BYTES} bytes, "
                                                         f"got {len(data)}")
        self.data = data

    def __bytes__(self) -> bytes:
        return self.data

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UniqueId) and other.data == self.data

    def __hash__(self) -> int:
        return hash(self.data)

    def __repr__(self) -> str:
        return f"<UniqueId {self.data[:8].hex()}...>"

    def to_file(self, path: str | os.PathLike[str]) -> None:
        """Write the id to ``path`` (atomically: readers never see a part of it) -- the way to
        pass it without torch, on a filesystem every rank sees."""
        path = os.fspath(path)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(self.data)
        os.replace(tmp, path)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], timeout: float | None = 60.0) -> "UniqueId":
        """Read an id :meth:`to_file` wrote, waiting up to ``timeout`` seconds for it to appear
        (None: as long as it takes)."""
        timeout = _seconds(timeout, "UniqueId.from_file")
        path = os.fspath(path)
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.001
        while True:
            try:
                with open(path, "rb") as f:
                    return cls(f.read())
            except FileNotFoundError:
                if deadline is not None and time.monotonic() >= deadline:
                    raise errors.CommTimeout("UniqueId.from_file",
                                             detail=f"{path} did not appear within {timeout} s") from None
            time.sleep(delay)
            delay = min(delay * 2, 0.05)


def unique_id() -> UniqueId:
    """A new unique id (``ncclGetUniqueId``): made by one rank, given to all."""
    lib = library()
    out = lib.ffi.new("ncclUniqueId *")
    lib.call("ncclGetUniqueId", out)
    return UniqueId(bytes(lib.ffi.buffer(out)))


def _as_unique_id(value: Any, api: str) -> UniqueId:
    if isinstance(value, UniqueId):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        if len(data) != UNIQUE_ID_BYTES:
            raise errors.InvalidValue(api, detail=f"a unique id is {UNIQUE_ID_BYTES} bytes, got {len(data)}")
        return UniqueId(data)
    raise errors.InvalidValue(api, detail=f"expected a UniqueId or {UNIQUE_ID_BYTES} bytes, got "
                                          f"{type(value).__name__}")


# ---------------------------------------------------------------- groups
_local = threading.local()


def _group_depth() -> int:
    return getattr(_local, "depth", 0)


@contextlib.contextmanager
def group() -> Iterator[None]:
    """``ncclGroupStart`` / ``ncclGroupEnd`` around the block (per thread; may span several
    communicators): the operations issued inside are launched together at its end -- what
    one thread driving several ranks (:meth:`Communicator.init_all`) needs, and what fuses
    sends and receives."""
    lib = library()
    lib.call("ncclGroupStart")
    _local.depth = _group_depth() + 1
    pending: list[Communicator] = []
    closing: list[Communicator] = []
    outer, outer_closing = getattr(_local, "pending", None), getattr(_local, "closing", None)
    _local.pending, _local.closing = pending, closing
    try:
        yield
    except BaseException:
        _local.depth -= 1
        _local.pending, _local.closing = outer, outer_closing
        with contextlib.suppress(errors.GraphRTError):
            lib.call("ncclGroupEnd")
        raise
    _local.depth -= 1
    _local.pending, _local.closing = outer, outer_closing
    lib.call("ncclGroupEnd")
    if outer is not None and outer_closing is not None:
        outer.extend(pending)
        outer_closing.extend(closing)
        return
    for comm in dict.fromkeys(pending):
        if not comm._closed:
            comm._settle("ncclGroupEnd", comm.timeout)
    for comm in closing:  # finalized in the group (every rank's at once): destroy them now
        comm._destroy_finalized()


# ---------------------------------------------------------------- buffers
_DTYPE_ALIASES = {"half": "float16", "float": "float32", "double": "float64", "int": "int32",
                  "long": "int64", "bf16": "bfloat16"}
_dtype_names: dict[Any, str] = {}  # a dtype as given (hashable) -> its name: the hot path's one lookup


def _dtype_name(dtype: Any, api: str) -> str:
    """The NCCL dtype name of ``dtype`` (a name, a numpy or torch dtype)."""
    try:
        known = _dtype_names.get(dtype)
    except TypeError:  # (unhashable: looked at every time)
        known = None
    if known is not None:
        return known
    name = dtype if isinstance(dtype, str) else getattr(dtype, "name", None) or str(dtype)
    name = str(name).replace("torch.", "")
    name = _DTYPE_ALIASES.get(name, name)
    if name not in DTYPES:
        raise errors.InvalidValue(api, detail=f"dtype {dtype!r} has no NCCL type; NCCL takes "
                                              f"{', '.join(DTYPES)}")
    with contextlib.suppress(TypeError):
        if len(_dtype_names) < 256:
            _dtype_names[dtype] = name
    return name


class _Operand:
    __slots__ = ("address", "nbytes", "dtype", "device", "obj")

    def __init__(self, address: int, nbytes: int, dtype: str, device: int | None, obj: Any) -> None:
        self.address = address
        self.nbytes = nbytes
        self.dtype = dtype
        self.device = device
        self.obj = obj

    @property
    def elements(self) -> int:
        return self.nbytes // DTYPES[self.dtype][1]


# DLPack (dlpack.h): the device types NCCL can address as one GPU's memory -- kDLCUDA (2) and
# kDLCUDAManaged (13); pinned host memory (kDLCUDAHost, 3) and every other kind are refused.
_DLPACK_CUDA, _DLPACK_CUDA_MANAGED = 2, 13
# (DLDataTypeCode, bits) -> dtype name: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4
_DLPACK_DTYPES = {(0, 8): "int8", (1, 8): "uint8", (0, 32): "int32", (1, 32): "uint32", (0, 64): "int64",
                  (1, 64): "uint64", (2, 16): "float16", (2, 32): "float32", (2, 64): "float64",
                  (4, 16): "bfloat16"}


def _given(dtype: Any, own: str | None, api: str, role: str, what: str) -> str:
    """The dtype of an array operand: the one given (which must be the array's), or the array's."""
    if dtype is not None:
        name = _dtype_name(dtype, api)
        if own is not None and own != name:
            raise errors.InvalidValue(api, detail=f"{role}: dtype {name} given for an array of {own}")
        return name
    if own is None:
        raise errors.InvalidValue(api, detail=f"{role}: {what} has no NCCL type; give dtype=")
    return own


def _contiguous(shape: Sequence[int], strides: Sequence[int] | None, itemsize: int) -> bool:
    """Whether byte ``strides`` (None: C order) lay ``shape`` out densely in C order."""
    if strides is None:
        return True
    expect = itemsize
    for dim, st in zip(reversed(shape), reversed(strides)):
        if dim > 1 and st != expect:
            return False
        expect *= dim
    return True


def _own_operand(buf: Any, dtype: Any, api: str, role: str, writable: bool) -> _Operand:
    """A pygraphrt buffer: untyped, so ``dtype`` must be given."""
    if dtype is None:
        raise errors.InvalidValue(api, detail=f"{role}: a {type(buf).__name__} has no element type; "
                                              "give dtype=")
    name = _dtype_name(dtype, api)
    try:
        address = buf.ptr
    except errors.GraphRTError:
        raise errors.InvalidValue(api, detail=f"{role}: the {type(buf).__name__} was freed") from None
    device = getattr(buf, "device", None)
    return _Operand(address, buf.size, name, getattr(device, "ordinal", device), buf)


_torch_dtype_names: dict[Any, str | None] = {}  # torch.dtype -> name (None: no NCCL type)


def _torch_operand(t: Any, dtype: Any, api: str, role: str, writable: bool) -> _Operand:
    """A torch tensor, through its own accessors (its ``__cuda_array_interface__`` is built in
    Python at every read, and refuses bfloat16)."""
    if not t.is_cuda:
        raise errors.InvalidValue(api, detail=f"{role}: a CPU torch.Tensor is not device memory")
    if not t.is_contiguous():
        raise errors.InvalidValue(api, detail=f"{role}: the tensor is not contiguous (strides {t.stride()})")
    tdt = t.dtype
    own = _torch_dtype_names.get(tdt, "")
    if own == "":  # (first sight of this dtype: torch.float32 -> "float32", torch.bool -> None)
        short = str(tdt).replace("torch.", "")
        short = _DTYPE_ALIASES.get(short, short)
        own = _torch_dtype_names[tdt] = short if short in DTYPES else None
    name = _given(dtype, own, api, role, f"torch {tdt}")
    return _Operand(int(t.data_ptr()), t.numel() * t.element_size(), name, int(t.get_device()), t)


def _cai_operand(buf: Any, dtype: Any, api: str, role: str, writable: bool) -> _Operand:
    """An object with ``__cuda_array_interface__`` (CuPy, Numba, ...): its typestr, shape,
    strides and data; its device where the object says (``.device.index`` / ``.device.id``),
    else the runtime's (``PointerGetAttributes``: None for host memory)."""
    cai = array_interface(buf, api)
    if cai is None:  # (its class has the attribute; this object's is None)
        raise errors.InvalidValue(api, detail=f"{role}: {type(buf).__name__}.__cuda_array_interface__ is None")
    typestr, size, shape, strides = cai.typestr, cai.itemsize, cai.shape, cai.strides
    if cai.masked:
        raise errors.InvalidValue(api, detail=f"{role}: a masked array (__cuda_array_interface__ mask)")
    if not _contiguous(shape, strides, size):
        raise errors.InvalidValue(api, detail=f"{role}: the array is not contiguous (strides {strides})")
    name = _given(dtype, _TYPESTR.get((typestr[1], size)), api, role, f"typestr {typestr!r}")
    if writable and cai.readonly:
        raise errors.InvalidValue(api, detail=f"{role}: the array is read-only (__cuda_array_interface__)")
    n = 1
    for s in shape:
        n *= s
    dev = getattr(buf, "device", None)
    device = getattr(dev, "index", None)  # torch.device
    if device is None:
        device = getattr(dev, "id", None)  # cupy.cuda.Device
    address = cai.address
    if not isinstance(device, int):  # (the array does not say: one runtime query)
        device = pointer_device(address) if address else None
    return _Operand(address, n * size, name, device, buf)


def _dlpack_operand(buf: Any, dtype: Any, api: str, role: str, writable: bool) -> _Operand:
    """A DLPack producer (``__dlpack__`` / ``__dlpack_device__``) on one CUDA device: the
    tensor is read while its capsule lives (the capsule is not consumed)."""
    dev_type, dev_id = dlpack_device(buf, api)
    if dev_type not in (_DLPACK_CUDA, _DLPACK_CUDA_MANAGED):
        raise errors.InvalidValue(api, detail=f"{role}: a {type(buf).__name__} on DLPack device type "
                                              f"{dev_type} is not CUDA device memory")
    capsule = buf.__dlpack__()
    t = _dltensor(capsule, api, buf)
    code, bits, lanes = int(t.dtype.code), int(t.dtype.bits), int(t.dtype.lanes)
    own = _DLPACK_DTYPES.get((code, bits)) if lanes == 1 else None
    name = _given(dtype, own, api, role, f"DLPack type (code {code}, {bits} bits, {lanes} lanes)")
    shape = [int(t.shape[i]) for i in range(t.ndim)]
    itemsize = (bits * lanes + 7) // 8
    strides = [int(t.strides[i]) * itemsize for i in range(t.ndim)] if t.strides else None
    if not _contiguous(shape, strides, itemsize):
        raise errors.InvalidValue(api, detail=f"{role}: the array is not contiguous (strides {strides})")
    n = 1
    for s in shape:
        n *= s
    address = int(t.data or 0) + int(t.byte_offset)
    del t, capsule  # (read: the producer may let the tensor go)
    return _Operand(address, n * itemsize, name, int(dev_id), buf)


# type -> its reader: found once per type (the hot path's one dict lookup)
_readers: dict[type, Any] = {}


def _reader(buf: Any) -> Any:
    """The reader of ``buf``'s kind (None: not device memory): pygraphrt buffers, torch tensors,
    ``__cuda_array_interface__`` objects, then DLPack producers -- cached per type."""
    cls = type(buf)
    if isinstance(buf, DeviceMemory):
        reader: Any = _own_operand
    elif callable(getattr(buf, "data_ptr", None)) and hasattr(buf, "is_cuda") and hasattr(buf, "get_device"):
        reader = _torch_operand  # (before its __cuda_array_interface__: see _torch_operand)
    elif hasattr(cls, "__cuda_array_interface__"):
        reader = _cai_operand
    elif "__cuda_array_interface__" in getattr(buf, "__dict__", ()):
        return _cai_operand  # (an attribute of this instance: not cached for its type)
    elif hasattr(buf, "__dlpack__") and hasattr(buf, "__dlpack_device__"):
        reader = _dlpack_operand
    else:
        return None
    if len(_readers) < 256:
        _readers[cls] = reader
    return reader


def _operand(buf: Any, dtype: Any, api: str, role: str, writable: bool = False) -> _Operand:
    """Address, bytes, dtype and (where known) device of a buffer: a pygraphrt buffer (dtype
    given), a torch tensor, an object with ``__cuda_array_interface__`` (CuPy) or a DLPack
    producer on a CUDA device (their dtype, or a given one that must agree); contiguous only."""
    reader = _readers.get(type(buf)) or _reader(buf)
    if reader is None:
        raise errors.InvalidValue(api, detail=(
            f"{role}: {type(buf).__name__} is not device memory (a pygraphrt buffer, a torch or CuPy "
            "tensor, an object with __cuda_array_interface__, or a DLPack array on a CUDA device)"))
    return reader(buf, dtype, api, role, writable)


# ---------------------------------------------------------------- communicators
class RedOp:
    """A reduction NCCL made for one communicator and dtype (``ncclRedOpCreatePreMulSum``);
    destroyed with its communicator (or by :meth:`destroy`)."""

    def __init__(self, comm: "Communicator", value: Any, dtype: str, scalar: Any) -> None:
        self.comm = comm
        self.value = value
        self.dtype = dtype
        self._scalar = scalar  # the device scalar (or host cell) NCCL reads: must outlive the op
        self._destroyed = False

    def destroy(self) -> None:
        """Destroy the reduction (``ncclRedOpDestroy``); a second call does nothing."""
        if self._destroyed:
            return
        self._destroyed = True
        comm = self.comm
        if comm._handle_or_none() is not None:
            lib = comm._lib
            lib.call("ncclRedOpDestroy", self.value, comm._comm(), rank=comm._rank, comm=comm._comm())
        if self in comm._redops:
            comm._redops.remove(self)


def _finalize_comm(lib: Library, cell: Any) -> None:
    """At garbage collection or exit: abort (local: it waits neither for the peers, as finalize
    would, nor for graphs -- those that captured the communicator kept it alive, so they are
    gone, or at exit were created later and are destroyed first), which frees its reductions."""
    try:
        handle = cell[0]
        if handle == lib.ffi.NULL:
            return
        lib.fn("ncclCommAbort")(handle)
        cell[0] = lib.ffi.NULL
    except Exception:  # interpreter shutdown: the library may be gone
        pass


_stream_comms: "weakref.WeakKeyDictionary[Any, weakref.WeakSet[Communicator]]" = weakref.WeakKeyDictionary()


class Communicator:
    """One rank of an NCCL communicator, on one device.

    Parameters
    ----------
    nranks, rank : int
        The communicator's size and this rank (``0 <= rank < nranks``).
    unique_id : UniqueId or bytes
        The same id on every rank (:func:`unique_id` on one of them).
    device : int or Device, optional
        The GPU of this rank (default: the current device).
    blocking : bool
        NCCL's ``config.blocking``; a ``timeout`` makes the communicator non-blocking inside
        NCCL whatever this says, so that pygraphrt can bound the waits.
    timeout : float, optional
        Seconds that init, split, group ends, :meth:`close` and :meth:`synchronize` may take;
        on expiry the communicator is aborted and :class:`~pygraphrt.errors.CommTimeout` raised.
    """

    def __init__(self, nranks: int, rank: int, unique_id: "UniqueId | bytes", device: Any = None, *,
                 blocking: bool = True, timeout: float | None = None, _defer: bool = False) -> None:
        api = "ncclCommInitRankConfig"
        nranks = _index(nranks, api, "nranks")
        rank = _index(rank, api, "rank")
        if nranks < 1:
            raise errors.InvalidValue(api, detail=f"nranks must be at least 1, got {nranks}")
        if not 0 <= rank < nranks:
            raise errors.InvalidValue(api, detail=f"rank {rank} is outside the communicator of {nranks} rank(s)")
        uid = _as_unique_id(unique_id, api)
        timeout = _seconds(timeout, api)
        self._lib = library()
        _refuse_two_copies(api)
        self._backend = _runtime.active()
        self._setup(nranks, rank, _device_ordinal(device, api), blocking, timeout)
        ffi = self._lib.ffi
        cid = ffi.new("ncclUniqueId *")
        ffi.memmove(cid, uid.data, UNIQUE_ID_BYTES)
        with _on_device(self._backend, self._device):
            self._lib.call(api, self._cell, nranks, cid[0], rank, self._config, rank=rank)
        if not _defer and _group_depth() == 0:
            self._settle(api, timeout)

    def _setup(self, nranks: int, rank: int, device: int, blocking: bool, timeout: float | None) -> None:
        ffi = self._lib.ffi
        self._size = nranks
        self._rank = rank
        self._device = device
        self.timeout = timeout
        self._blocking = blocking and timeout is None
        self._cell = ffi.new("ncclComm_t *")
        self._config = _config(self._lib, self._blocking)
        self._redops: list[RedOp] = []
        self._closed = False
        self._close_timeout: float | None = timeout
        self._finalizer = weakref.finalize(self, _finalize_comm, self._lib, self._cell)
        # (a weak reference to the stream of the last operation, its handle): checked then
        self._last_stream: tuple[Any, Any] = (None, None)
        pending = getattr(_local, "pending", None)
        if pending is not None and _group_depth():
            pending.append(self)

    @classmethod
    def _new(cls, lib: Library, nranks: int, rank: int, device: int, blocking: bool,
             timeout: float | None) -> "Communicator":
        self = cls.__new__(cls)
        self._lib = lib
        self._backend = _runtime.active()
        self._setup(nranks, rank, device, blocking, timeout)
        return self

    # -- construction ----------------------------------------------------
    @classmethod
    def init_all(cls, devices: Sequence[Any], *, timeout: float | None = None) -> "list[Communicator]":
        """One communicator per device of ``devices``, all in this process (rank i on
        ``devices[i]``): for eager use from one thread (group every operation over them with
        :func:`group`).  NCCL advises one GPU per process where graphs capture collectives."""
        api = "Communicator.init_all"
        timeout = _seconds(timeout, api)
        ordinals = [_device_ordinal(d, api) for d in devices]
        if not ordinals:
            raise errors.InvalidValue(api, detail="no devices given")
        if len(set(ordinals)) != len(ordinals):
            raise errors.InvalidValue(api, detail=f"devices repeat: {ordinals}")
        uid = unique_id()
        comms: list[Communicator] = []
        with group():
            for r, d in enumerate(ordinals):
                comms.append(cls(len(ordinals), r, uid, d, timeout=timeout, blocking=timeout is None))
        return comms

    @classmethod
    def from_env(cls, *, timeout: float = 300.0, device: Any = None, name: str = "default") -> "Communicator":
        """A communicator over the processes a launcher started (``torchrun``): rank and size
        from ``RANK`` / ``WORLD_SIZE``, the device from ``LOCAL_RANK``, and the unique id made
        by rank 0 and passed through torch's store at ``MASTER_ADDR:MASTER_PORT`` (under
        torchrun its agent serves that store -- ``TORCHELASTIC_USE_AGENT_STORE`` -- and every
        rank is a client of it; otherwise rank 0 serves it, as torch's ``env://`` does).
        ``name`` keeps several communicators of one job apart (made in the same order on every
        rank)."""
        api = "Communicator.from_env"
        timeout = _seconds(timeout, api, optional=False)  # (torch's store needs a bound)
        env = os.environ
        missing = [v for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if not env.get(v)]
        if missing:
            raise errors.InvalidValue(api, detail=f"{', '.join(missing)} not set: start the processes "
                                                  "with torchrun (or set them), or pass the unique id "
                                                  "yourself (UniqueId.to_file / from_file)")
        try:
            rank, size = int(env["RANK"]), int(env["WORLD_SIZE"])
            local = int(env.get("LOCAL_RANK", "0"))
            port = int(env["MASTER_PORT"])
        except ValueError as exc:
            raise errors.InvalidValue(api, detail=f"bad launcher environment: {exc}") from None
        store = _env_store(env["MASTER_ADDR"], port, rank, size, timeout)
        serial = next(_env_serial)
        key = f"pygraphrt/nccl/{name}/{serial}/unique_id"
        if rank == 0:
            uid = unique_id()
            store.set(key, uid.data)
        else:
            try:
                data = store.get(key)
            except Exception as exc:  # torch's store timeout (a DistStoreError / RuntimeError)
                raise errors.CommTimeout(api, detail=f"rank {rank}: no unique id from rank 0 under "
                                                     f"{key!r} within {timeout} s ({exc})") from None
            uid = UniqueId(bytes(data))
        return cls(size, rank, uid, local if device is None else device, timeout=timeout)

    @classmethod
    def from_process_group(cls, pg: Any = None, *, device: Any = None,
                           timeout: float | None = None) -> "Communicator":
        """A communicator over the ranks of a ``torch.distributed`` process group (default: the
        world): the group's rank 0 makes the unique id and broadcasts it through the group."""
        timeout = _seconds(timeout, "Communicator.from_process_group")
        import torch.distributed as dist

        group_ = pg if pg is not None else dist.group.WORLD
        rank, size = dist.get_rank(group_), dist.get_world_size(group_)
        payload = [unique_id().data if rank == 0 else None]
        dist.broadcast_object_list(payload, src=dist.get_global_rank(group_, 0), group=group_)
        if device is None:
            import torch

            device = torch.cuda.current_device()
        return cls(size, rank, UniqueId(payload[0]), device, timeout=timeout)

    def split(self, color: int | None, key: int = 0, *, timeout: float | None = None) -> "Communicator | None":
        """``ncclCommSplit``: the ranks with the same ``color`` form a new communicator, ordered
        by ``key``; ``color=None`` (NCCL_SPLIT_NOCOLOR) takes part without joining one (None is
        returned).  Collective over this communicator's ranks (in one process: inside
        :func:`group`)."""
        api = "ncclCommSplit"
        comm = self._comm(api)
        if color is None:
            c = int(self._lib.symbols.CONSTANTS["NCCL_SPLIT_NOCOLOR"])
        else:
            c = _index(color, api, "color")
            if c < 0:
                raise errors.InvalidValue(api, detail=f"color must be >= 0 or None, got {c}")
        k = _index(key, api, "key")
        timeout = self.timeout if timeout is None else _seconds(timeout, api)
        child = Communicator._new(self._lib, 0, 0, self._device, self._blocking and timeout is None, timeout)
        with _on_device(self._backend, self._device):
            self._lib.call(api, comm, c, k, child._cell, child._config, rank=self._rank, comm=comm)
        if _group_depth() == 0:
            child._settle(api, timeout)
        child._size = -1  # asked of NCCL once the new communicator exists (see size / rank)
        child._rank = -1
        if color is None:
            child._mark_closed()
            return None
        if _group_depth() == 0:  # (in a group, asked once the group has ended)
            child.rank, child.size
        return child

    # -- properties ------------------------------------------------------
    def _handle_or_none(self) -> Any:
        if self._closed:
            return None
        h = self._cell[0]
        return None if h == self._lib.ffi.NULL else h

    def _comm(self, api: str = "Communicator") -> Any:
        h = self._handle_or_none()
        if h is None:
            raise errors.InvalidValue(api, detail="the communicator is closed" if self._closed else
                                      "the communicator is not initialised yet (its group has not ended)")
        return h

    def _query(self, api: str) -> int:
        out = self._lib.ffi.new("int *")
        comm = self._comm(api)
        self._lib.call(api, comm, out, rank=self._rank if self._rank >= 0 else None, comm=comm)
        return int(out[0])

    @property
    def rank(self) -> int:
        """This rank (``ncclCommUserRank``)."""
        if self._rank < 0:
            self._rank = self._query("ncclCommUserRank")
        return self._rank

    @property
    def size(self) -> int:
        """The number of ranks (``ncclCommCount``)."""
        if self._size < 0:
            self._size = self._query("ncclCommCount")
        return self._size

    @property
    def device(self) -> int:
        """The ordinal of this rank's GPU."""
        return self._device

    @property
    def is_closed(self) -> bool:
        """Whether :meth:`close` has run (the communicator can no longer be used)."""
        return self._closed

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"rank {self._rank} of {self._size}"
        return f"<Communicator {state} on device {self._device}>"

    def __enter__(self) -> "Communicator":
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.close()
        else:
            self.abort()

    # -- waiting ---------------------------------------------------------
    def async_error(self) -> int:
        """``ncclCommGetAsyncError``: 0, ncclInProgress (7), or the error NCCL met."""
        out = self._lib.ffi.new("ncclResult_t *")
        comm = self._comm("ncclCommGetAsyncError")
        rc = self._lib.fn("ncclCommGetAsyncError")(comm, out)
        if rc:
            raise self._lib.error(rc, "ncclCommGetAsyncError", self._rank, comm)
        return int(out[0])

    def _settle(self, api: str, timeout: float | None) -> None:
        """Wait for a non-blocking call's ncclInProgress to end (up to ``timeout``); raise what
        NCCL reports; on expiry abort and raise CommTimeout.

        An eager operation on a non-blocking communicator is launched by a thread NCCL starts
        for it, done in tens of microseconds: the state is polled without sleeping for the
        first ``SETTLE_SPIN_S`` (a sleep would cost more than the launch), then with sleeps
        growing from 50 us to 10 ms (init and finalize take seconds)."""
        if self._blocking or self._handle_or_none() is None:
            return
        now = time.monotonic()
        deadline = None if timeout is None else now + timeout
        spin_until = now + SETTLE_SPIN_S
        get = self._lib.fn("ncclCommGetAsyncError")
        cell = self._lib.ffi.new("ncclResult_t *")
        delay = 0.00005
        while True:
            comm = self._comm("ncclCommGetAsyncError")
            rc = get(comm, cell)
            if rc:
                raise self._lib.error(rc, "ncclCommGetAsyncError", self._rank, comm)
            state = cell[0]
            if state == 0:
                return
            if state != _IN_PROGRESS:
                raise self._lib.error(state, api, self._rank, self._handle_or_none())
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                self.abort()
                raise errors.CommTimeout(api, vendor="nccl", detail=(
                    f"rank {self._rank}: still in progress after {timeout} s; the communicator was aborted"))
            if now < spin_until:
                continue
            time.sleep(delay)
            delay = min(delay * 2, 0.01)

    def synchronize(self, stream: Any, timeout: float | None = None) -> None:
        """Wait for ``stream`` and this communicator (see :func:`synchronize`)."""
        timeout = self.timeout if timeout is None else _seconds(timeout, "Communicator.synchronize")
        synchronize(stream, [self], timeout=timeout)

    # -- lifetime --------------------------------------------------------
    def _graphs_holding(self) -> list[Any]:
        return live_graphs_keeping(self._backend, lambda o: o is self)

    def close(self, *, destroy_graphs: bool = False, timeout: float | None = None) -> None:
        """``ncclCommFinalize`` then ``ncclCommDestroy`` (bounded by ``timeout`` or the
        communicator's), after destroying its reductions.  Collective: every rank closes.
        Refused while a live graph or executable graph captured this communicator (NCCL's
        destroy would wait for them), naming them -- or, with ``destroy_graphs``, those are
        closed first.  One process driving several ranks closes them inside :func:`group`
        (each finalize waits for the others; the destroys come at the group's end)."""
        if timeout is not None:
            timeout = _seconds(timeout, "Communicator.close")
        if self._closed:
            return
        holders = self._graphs_holding()
        if holders and destroy_graphs:
            for h in holders:
                h.close()
            holders = self._graphs_holding()
        if holders:
            names = ", ".join(repr(h) for h in holders)
            raise errors.IllegalState("Communicator.close", vendor="nccl", detail=(
                f"rank {self._rank}: {len(holders)} live graph(s) captured this communicator: {names}; "
                "close them first (or close(destroy_graphs=True)): NCCL's destroy would wait for them"))
        comm = self._handle_or_none()
        if comm is None:
            self._mark_closed()
            return
        self._close_timeout = self.timeout if timeout is None else timeout
        lib = self._lib
        with _on_device(self._backend, self._device):
            for op in list(self._redops):
                op.destroy()
            lib.call("ncclCommFinalize", comm, rank=self._rank, comm=comm)
        closing = getattr(_local, "closing", None)
        if _group_depth() and closing is not None:
            # Several ranks in one thread: each finalize waits for the others, so they are
            # grouped and the destroys come at the group's end.
            closing.append(self)
            return
        self._destroy_finalized()

    def _destroy_finalized(self) -> None:
        comm = self._handle_or_none()
        if comm is None:
            return
        self._settle("ncclCommFinalize", self._close_timeout)
        if self._closed:  # (the wait expired and aborted it)
            return
        # (closed once the destroy was called, whatever NCCL answered: never a second destroy;
        # but a device switch that fails before it leaves the communicator open, for a later
        # close or its finalizer -- not forgotten alive)
        with _on_device(self._backend, self._device):
            try:
                self._lib.call("ncclCommDestroy", comm, rank=self._rank)
            finally:
                self._mark_closed()

    def _mark_closed(self) -> None:
        """Closed for good: no call reaches its handle again, and its finalizer will not abort it."""
        self._closed = True
        self._finalizer.detach()
        self._cell[0] = self._lib.ffi.NULL

    def abort(self) -> None:
        """``ncclCommAbort``: end this rank's part now, without the peers (what a failed peer or
        an expired wait calls for).  Idempotent."""
        if self._closed:
            return
        comm = self._handle_or_none()
        if comm is None:
            self._mark_closed()
            return
        # (closed once the abort was called, as in _destroy_finalized: a device switch that
        # fails before it leaves the communicator open)
        with _on_device(self._backend, self._device):
            try:
                self._lib.call("ncclCommAbort", comm, rank=self._rank)
            finally:
                self._mark_closed()
                for op in self._redops:
                    op._destroyed = True
                self._redops.clear()

    # -- operations ------------------------------------------------------
    def premul_sum(self, scalar: Any, dtype: Any = None) -> RedOp:
        """A sum whose inputs are each multiplied by ``scalar`` first
        (``ncclRedOpCreatePreMulSum``): a device buffer holding one element (read when the
        collective runs: ``ncclScalarDevice``, so graph replays see a changed value), or a
        Python number (read now: ``ncclScalarHostImmediate``).  Destroyed with the
        communicator."""
        api = "ncclRedOpCreatePreMulSum"
        comm = self._comm(api)
        lib, ffi = self._lib, self._lib.ffi
        if isinstance(scalar, (int, float)) and not isinstance(scalar, bool):
            if dtype is None:
                raise errors.InvalidValue(api, detail="a host scalar needs dtype=")
            name = _dtype_name(dtype, api)
            ctype = {"int8": "int8_t", "uint8": "uint8_t", "int32": "int32_t", "uint32": "uint32_t",
                     "int64": "int64_t", "uint64": "uint64_t", "float32": "float", "float64": "double"}.get(name)
            if ctype is None:
                raise errors.InvalidValue(api, detail=f"a host scalar of {name}: give it in device memory")
            if ctype != "float" and ctype != "double" and not isinstance(scalar, int):
                raise errors.InvalidValue(api, detail=f"a host scalar of {name} must be an int, got {scalar!r}")
            try:
                cell = ffi.new(f"{ctype} *", scalar)
            except OverflowError:
                raise errors.InvalidValue(api, detail=f"the scalar {scalar!r} does not fit {name}") from None
            residence = lib.enum("ncclScalarHostImmediate")
            ptr, keep = ffi.cast("void *", cell), cell
        else:
            op = _operand(scalar, dtype, api, "scalar")
            name = op.dtype
            if op.elements < 1:
                raise errors.InvalidValue(api, detail="the scalar's buffer holds no element")
            residence = lib.enum("ncclScalarDevice")
            ptr, keep = ffi.cast("void *", op.address), op.obj
        out = ffi.new("ncclRedOp_t *")
        with _on_device(self._backend, self._device):
            lib.call(api, out, ptr, lib.enum(DTYPES[name][0]), residence, comm, rank=self._rank, comm=comm)
        red = RedOp(self, out[0], name, keep)
        self._redops.append(red)
        return red

    def _op(self, op: Any, dtype: str, api: str) -> int:
        if op.__class__ is str:
            v = self._lib.op_values.get(op)  # (the hot path: "sum", ...)
            if v is not None:
                return v
        if isinstance(op, RedOp):
            if op.comm is not self:
                raise errors.InvalidValue(api, detail="the reduction belongs to another communicator")
            if op._destroyed:
                raise errors.InvalidValue(api, detail="the reduction was destroyed")
            if op.dtype != dtype:
                raise errors.InvalidValue(api, detail=f"the reduction is for {op.dtype}, the buffers are {dtype}")
            return int(op.value)
        name = _OPS.get(str(op).lower()) if isinstance(op, str) else None
        if name is None:
            raise errors.InvalidValue(api, detail=f"op {op!r}: use one of {', '.join(_OPS)} or a RedOp "
                                                  "(premul_sum)")
        return self._lib.enum(name)

    def _prepare(self, api: str, stream: Any) -> tuple[Any, Any]:
        """The communicator's handle and ``stream``'s, checked: the fast path is the stream of
        the previous call, still open (its checks were made then)."""
        if self._closed:
            raise errors.InvalidValue(api, detail="the communicator is closed")
        ref, handle = self._last_stream  # (one tuple: a thread switch cannot pair one with another's)
        if ref is not None and ref() is stream and stream._handle is not None:
            comm = self._cell[0]
            if comm != self._lib.ffi.NULL:
                return comm, handle
        return self._prepare_stream(api, stream)

    def _prepare_stream(self, api: str, stream: Any) -> tuple[Any, Any]:
        comm = self._comm(api)
        if not isinstance(stream, Stream):
            raise errors.InvalidValue(api, detail=f"stream: expected a pygraphrt Stream (Stream.wrap "
                                                  f"takes torch's and CuPy's), got {type(stream).__name__}")
        if stream._backend is not self._backend:
            raise errors.InvalidValue(api, detail="the stream belongs to another backend")
        dev = getattr(stream, "device", None)  # (where streams know their device)
        dev = getattr(dev, "ordinal", dev)
        if isinstance(dev, int) and dev != self._device:
            raise errors.InvalidValue(api, detail=f"the stream is on device {dev}, the communicator "
                                                  f"(rank {self._rank}) on device {self._device}")
        s = self._lib.ffi.cast("cudaStream_t", int(stream))
        # synchronize(stream) watches the communicators the stream has run work of
        known = _stream_comms.get(stream)
        if known is None:
            known = _stream_comms[stream] = weakref.WeakSet()
        known.add(self)
        self._last_stream = (weakref.ref(stream), s)
        return comm, s

    def _buffers(self, api: str, dtype: Any, *roles: tuple[str, Any, bool]) -> tuple[list[_Operand | None], str]:
        """Each (role, buffer, whether NCCL writes it) as an operand; one dtype."""
        ops: list[_Operand | None] = []
        name: str | None = _dtype_name(dtype, api) if dtype is not None else None
        for role, buf, writable in roles:
            if buf is None:
                ops.append(None)
                continue
            o = _operand(buf, name, api, role, writable)
            if name is None:
                name = o.dtype
            elif o.dtype != name:
                raise errors.InvalidValue(api, detail=f"{role} is {o.dtype}, the other buffer {name}")
            if o.device is not None and o.device != self._device:
                raise errors.InvalidValue(api, detail=f"{role} is on device {o.device}, the communicator "
                                                      f"(rank {self._rank}) on device {self._device}")
            ops.append(o)
        assert name is not None
        return ops, name

    @staticmethod
    def _fits(api: str, role: str, o: _Operand | None, need: int) -> None:
        if o is not None and o.elements < need:
            raise errors.InvalidValue(api, detail=f"{role} holds {o.elements} {o.dtype} element(s); "
                                                  f"the call needs {need}")

    def _count(self, api: str, count: Any, default: _Operand | None, per: int = 1) -> int:
        if count is None:
            if default is None:
                raise errors.InvalidValue(api, detail="count= is needed (no buffer to take it from)")
            return default.elements // per
        if count.__class__ is int and 0 <= count < (1 << 63):
            return count
        n = _index(count, api, "count", _SIZE)
        if n < 0:
            raise errors.InvalidValue(api, detail=f"count must be >= 0, got {n}")
        return n

    def _peer(self, api: str, value: Any, what: str) -> int:
        p = _index(value, api, what)
        if not 0 <= p < self.size:
            raise errors.InvalidValue(api, detail=f"{what} {p} is outside the communicator of {self.size} rank(s)")
        return p

    def _enqueue(self, api: str, stream: Any, keep: Sequence[Any], *args: Any) -> None:
        """Call ``api`` (NCCL sets the communicator's device itself around a collective, so no
        device switch here); during a pygraphrt capture, the graph keeps ``keep`` and this
        communicator; a non-blocking communicator's ncclInProgress is waited out."""
        if stream._capture is not None:
            return self._enqueue_captured(api, stream, keep, *args)
        rc = self._lib.fn(api)(*args)
        if rc:
            if rc != _IN_PROGRESS:
                raise self._lib.error(rc, api, self._rank, args[-2])
        if not self._blocking:
            self._after_non_blocking(api, rc)
        return None

    def _after_non_blocking(self, api: str, rc: int) -> None:
        if _group_depth():
            pending = getattr(_local, "pending", None)
            if pending is not None:
                pending.append(self)
        elif rc == _IN_PROGRESS:
            self._settle(api, self.timeout)

    def _enqueue_captured(self, api: str, stream: Any, keep: Sequence[Any], *args: Any) -> None:
        comm = args[-2]
        body = _conditional_body(stream)
        before: set[Any] = set()
        if body is not None:
            if collectives_in_conditional_bodies() == "refused":
                raise errors.NotSupported(api, vendor="nccl", detail=(
                    f"rank {self._rank}: the stream captures into the body of a conditional node; a "
                    "collective there is refused before NCCL is called (pygraphrt.nccl."
                    f"COLLECTIVES_IN_CONDITIONAL_BODIES: {_CONDITIONAL_BODIES_WHY}) -- loop on the host, or "
                    "unroll the loop in the graph"))
            before = {n._handle for n in body.nodes()}
        try:
            rc = self._lib.call(api, *args, rank=self._rank, comm=comm)
        except errors.GraphRTError as exc:
            if body is not None:
                exc.add_note("the stream captures into the body of a conditional node, which may hold only "
                             "kernel, empty, child-graph, memset, memcpy and conditional nodes: NCCL's own "
                             "runtime calls there may be what was refused")
            raise
        if body is not None:
            _check_body(api, self._rank, body, before)
        # The capture keeps the buffers and this communicator: a graph that runs the collective
        # holds its communicator (close() refuses while it lives).
        for obj in keep:
            if obj is not None:
                stream._retain(obj)
        stream._retain(self)
        if not self._blocking:
            self._after_non_blocking(api, rc)

    def _pair(self, api: str, dtype: Any, sendbuf: Any, recvbuf: Any, count: int | None, count_of: str,
              send_blocks: int = 1, recv_blocks: int = 1) -> tuple[Any, Any, int, str]:
        """A collective's two buffers (either may be None where the operation allows it), their
        dtype name and the element count, checked before NCCL sees them: ``count`` (default: all
        of the ``count_of`` buffer, ``"send"`` or ``"recv"``), ``sendbuf`` holding
        ``send_blocks`` and ``recvbuf`` ``recv_blocks`` times that many elements."""
        if sendbuf is recvbuf and sendbuf is not None:  # in place: read once (as written to)
            (src,), name = self._buffers(api, dtype, ("sendbuf", sendbuf, True))
            dst = src
        else:
            (src, dst), name = self._buffers(api, dtype, ("sendbuf", sendbuf, False), ("recvbuf", recvbuf, True))
        n = self._count(api, count, src if count_of == "send" else dst)
        self._fits(api, "sendbuf", src, n * send_blocks)
        self._fits(api, "recvbuf", dst, n * recv_blocks)
        return src, dst, n, name

    def all_reduce(self, sendbuf: Any, recvbuf: Any, stream: Any, op: Any = "sum", *,
                   count: int | None = None, dtype: Any = None) -> None:
        """``ncclAllReduce``: every rank's ``recvbuf`` gets the reduction (``op``: sum, prod,
        max, min, avg, or a :meth:`premul_sum`) of all ranks' ``sendbuf`` (``count`` elements;
        default: all of ``recvbuf``).  ``sendbuf is recvbuf`` reduces in place."""
        api = "ncclAllReduce"
        comm, s = self._prepare(api, stream)
        src, dst, n, name = self._pair(api, dtype, sendbuf, recvbuf, count, "recv")
        assert src is not None and dst is not None
        ffi = self._lib.ffi
        self._enqueue(api, stream, (sendbuf, recvbuf, op if isinstance(op, RedOp) else None),
                      ffi.cast("void *", src.address), ffi.cast("void *", dst.address), n,
                      self._lib.dtype_values[name], self._op(op, name, api), comm, s)

    def broadcast(self, sendbuf: Any, recvbuf: Any, root: int, stream: Any, *,
                  count: int | None = None, dtype: Any = None) -> None:
        """``ncclBroadcast``: ``root``'s ``sendbuf`` to every rank's ``recvbuf`` (``sendbuf`` is
        read on the root only; None elsewhere is fine)."""
        api = "ncclBroadcast"
        comm, s = self._prepare(api, stream)
        r = self._peer(api, root, "root")
        if r == self.rank and sendbuf is None:
            raise errors.InvalidValue(api, detail="the root needs a sendbuf")
        src, dst, n, name = self._pair(api, dtype, sendbuf, recvbuf, count, "recv")
        assert dst is not None
        ffi = self._lib.ffi
        self._enqueue(api, stream, (sendbuf, recvbuf), ffi.cast("void *", (src or dst).address),
                      ffi.cast("void *", dst.address), n, self._lib.dtype_values[name], r, comm, s)

    def reduce(self, sendbuf: Any, recvbuf: Any, root: int, stream: Any, op: Any = "sum", *,
               count: int | None = None, dtype: Any = None) -> None:
        """``ncclReduce``: the reduction of every rank's ``sendbuf`` into ``root``'s ``recvbuf``
        (None elsewhere is fine)."""
        api = "ncclReduce"
        comm, s = self._prepare(api, stream)
        r = self._peer(api, root, "root")
        if r == self.rank and recvbuf is None:
            raise errors.InvalidValue(api, detail="the root needs a recvbuf")
        src, dst, n, name = self._pair(api, dtype, sendbuf, recvbuf, count, "send")
        assert src is not None
        ffi = self._lib.ffi
        self._enqueue(api, stream, (sendbuf, recvbuf, op if isinstance(op, RedOp) else None),
                      ffi.cast("void *", src.address), ffi.cast("void *", dst.address if dst is not None else 0), n,
                      self._lib.dtype_values[name], self._op(op, name, api), r, comm, s)

    def all_gather(self, sendbuf: Any, recvbuf: Any, stream: Any, *, count: int | None = None,
                   dtype: Any = None) -> None:
        """``ncclAllGather``: rank i's ``count`` elements of ``sendbuf`` (default: all of it) land at
        ``recvbuf[i*count:(i+1)*count]`` on every rank."""
        api = "ncclAllGather"
        comm, s = self._prepare(api, stream)
        src, dst, n, name = self._pair(api, dtype, sendbuf, recvbuf, count, "send", recv_blocks=self.size)
        assert src is not None and dst is not None
        ffi = self._lib.ffi
        self._enqueue(api, stream, (sendbuf, recvbuf), ffi.cast("void *", src.address),
                      ffi.cast("void *", dst.address), n, self._lib.dtype_values[name], comm, s)

    def reduce_scatter(self, sendbuf: Any, recvbuf: Any, stream: Any, op: Any = "sum", *,
                       count: int | None = None, dtype: Any = None) -> None:
        """``ncclReduceScatter``: the reduction of every rank's ``sendbuf`` (``size * count``
        elements), rank i keeping block i (``count`` elements; default: all of ``recvbuf``)."""
        api = "ncclReduceScatter"
        comm, s = self._prepare(api, stream)
        src, dst, n, name = self._pair(api, dtype, sendbuf, recvbuf, count, "recv", send_blocks=self.size)
        assert src is not None and dst is not None
        ffi = self._lib.ffi
        self._enqueue(api, stream, (sendbuf, recvbuf, op if isinstance(op, RedOp) else None),
                      ffi.cast("void *", src.address), ffi.cast("void *", dst.address), n,
                      self._lib.dtype_values[name], self._op(op, name, api), comm, s)

    def send(self, buf: Any, peer: int, stream: Any, *, count: int | None = None, dtype: Any = None) -> None:
        """``ncclSend`` of ``count`` elements (default: all of ``buf``) to ``peer``, which must
        :meth:`recv` them (concurrent sends and receives: inside :func:`group`)."""
        api = "ncclSend"
        comm, s = self._prepare(api, stream)
        p = self._peer(api, peer, "peer")
        (src,), name = self._buffers(api, dtype, ("buf", buf, False))
        n = self._count(api, count, src)
        self._fits(api, "buf", src, n)
        assert src is not None
        self._enqueue(api, stream, (buf,), self._lib.ffi.cast("void *", src.address), n,
                      self._lib.dtype_values[name], p, comm, s)

    def recv(self, buf: Any, peer: int, stream: Any, *, count: int | None = None, dtype: Any = None) -> None:
        """``ncclRecv`` of ``count`` elements (default: all of ``buf``) from ``peer``."""
        api = "ncclRecv"
        comm, s = self._prepare(api, stream)
        p = self._peer(api, peer, "peer")
        (dst,), name = self._buffers(api, dtype, ("buf", buf, True))
        n = self._count(api, count, dst)
        self._fits(api, "buf", dst, n)
        assert dst is not None
        self._enqueue(api, stream, (buf,), self._lib.ffi.cast("void *", dst.address), n,
                      self._lib.dtype_values[name], p, comm, s)

    def all_to_all(self, sendbuf: Any, recvbuf: Any, stream: Any, *, count: int | None = None,
                   dtype: Any = None) -> None:
        """Block j of ``sendbuf`` (``count`` elements; default: ``len(sendbuf) // size``) to rank
        j, block i of ``recvbuf`` from rank i: grouped ``ncclSend`` / ``ncclRecv`` (every NCCL
        2.x has them; ``ncclAlltoAll`` is 2.28's)."""
        api = "Communicator.all_to_all"
        comm, s = self._prepare(api, stream)
        (src, dst), name = self._buffers(api, dtype, ("sendbuf", sendbuf, False), ("recvbuf", recvbuf, True))
        size = self.size
        n = self._count(api, count, src, per=size)
        self._fits(api, "sendbuf", src, n * size)
        self._fits(api, "recvbuf", dst, n * size)
        assert src is not None and dst is not None
        ffi, lib = self._lib.ffi, self._lib
        width = n * DTYPES[name][1]
        dt = lib.dtype_values[name]
        with group():
            for peer in range(size):
                self._enqueue("ncclSend", stream, (sendbuf,), ffi.cast("void *", src.address + peer * width),
                              n, dt, peer, comm, s)
                self._enqueue("ncclRecv", stream, (recvbuf,), ffi.cast("void *", dst.address + peer * width),
                              n, dt, peer, comm, s)


_env_serial = itertools.count()


def _env_store(host: str, port: int, rank: int, size: int, timeout: float) -> Any:
    """torch's store for the unique id: a client of torchrun's agent store (with the prefix its
    workers use), or -- outside torchrun -- rank 0 serving it as torch's env:// does."""
    from datetime import timedelta

    import torch.distributed as dist

    agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE", "").lower() in ("true", "1")
    # (multi_tenant, as torch's env:// makes it: a process group created later in this process
    # shares the server rather than failing to bind the port a second time)
    store = dist.TCPStore(host, port, size, is_master=(rank == 0 and not agent),
                          timeout=timedelta(seconds=timeout), wait_for_workers=False,
                          multi_tenant=True)
    if agent:  # torch.distributed.rendezvous's _create_c10d_store / env:// under torchrun
        restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
        return dist.PrefixStore(f"/worker/attempt_{restart}", store)
    return store


# ---------------------------------------------------------------- bounded waits
def communicators_of(graph: Any) -> "list[Communicator]":
    """The communicators a graph or executable graph captured (what its keep list holds)."""
    found: dict[int, Communicator] = {}
    stack, seen = [getattr(graph, "_keep", None)], set()
    while stack:
        item = stack.pop()
        if isinstance(item, Communicator):
            found.setdefault(id(item), item)
        elif item.__class__ in (list, tuple) and id(item) not in seen:
            seen.add(id(item))
            stack.extend(item)
    return list(found.values())


def synchronize(stream: Any, watch: "Sequence[Any] | None" = None, *,
                timeout: float | None = None) -> None:
    """Wait for ``stream`` (``cudaStreamQuery``, polled) while watching communicators with
    ``ncclCommGetAsyncError``: those of ``watch`` (communicators, and graphs or executable
    graphs, standing for the communicators they captured), and every live communicator this
    stream has run eager work of.  An error a communicator reports aborts them all and is
    raised; when ``timeout`` seconds pass first (a peer that died may make NCCL report
    nothing), they are aborted and :class:`~pygraphrt.errors.CommTimeout` is raised."""
    api = "nccl.synchronize"
    if not isinstance(stream, Stream):
        raise errors.InvalidValue(api, detail=f"expected a pygraphrt Stream, got {type(stream).__name__}")
    timeout = _seconds(timeout, api)
    found: dict[int, Communicator] = {}  # (those given first: the first error found is theirs)
    for item in _watched(watch, api):
        for c in [item] if isinstance(item, Communicator) else communicators_of(item):
            found.setdefault(id(c), c)
    for c in list(_stream_comms.get(stream, ())):
        found.setdefault(id(c), c)
    watched = list(found.values())
    deadline = None if timeout is None else time.monotonic() + timeout
    delay = 0.0001
    while True:
        for c in watched:  # first: an error NCCL met is reported even where the stream is done
            if c.is_closed:
                continue
            state = c.async_error()
            if state not in (0, _IN_PROGRESS):
                err = c._lib.error(state, "ncclCommGetAsyncError", c._rank, c._handle_or_none())
                _abort_all(watched)
                raise err
        if stream.is_done:
            stream.synchronize()  # (raises what host callables left, as Stream.synchronize does)
            return
        if deadline is not None and time.monotonic() >= deadline:
            _abort_all(watched)
            ranks = ", ".join(f"rank {c._rank}" for c in watched) or "none"
            raise errors.CommTimeout(api, vendor="nccl", detail=(
                f"the stream was not done after {timeout} s; aborted communicators: {ranks}"))
        time.sleep(delay)
        delay = min(delay * 2, 0.01)


def _watched(watch: Any, api: str) -> list[Any]:
    """``watch`` of :func:`synchronize`, checked: communicators, graphs, executable graphs
    (anything else would be watched for nothing -- a wait that could not end as asked)."""
    def graph_like(x: Any) -> bool:  # a Graph or GraphExec: the keep list holds what it captured
        return isinstance(x, Owned) and x._keeps_for_runtime

    if watch is None:
        return []
    if isinstance(watch, (Communicator, str, bytes)) or graph_like(watch):
        raise errors.InvalidValue(api, detail=f"watch: a sequence of communicators and graphs, got one "
                                              f"{type(watch).__name__} (put it in a list)")
    try:
        items = list(watch)
    except TypeError:
        raise errors.InvalidValue(api, detail=f"watch: a sequence of communicators and graphs, got "
                                              f"{type(watch).__name__}") from None
    for item in items:
        if not (isinstance(item, Communicator) or graph_like(item)):
            raise errors.InvalidValue(api, detail=f"watch: {type(item).__name__} is not a Communicator, "
                                                  "Graph or GraphExec")
    return items


def _abort_all(comms: Sequence[Communicator]) -> None:
    for c in comms:
        with contextlib.suppress(errors.GraphRTError):
            c.abort()


# ---------------------------------------------------------------- conditional bodies
def collectives_in_conditional_bodies() -> str:
    """The setting :data:`COLLECTIVES_IN_CONDITIONAL_BODIES` (``"checked"`` or ``"refused"``),
    read at every collective captured into a body, so that a probe or the user may change it;
    any other value is refused rather than read as one of them."""
    mode = COLLECTIVES_IN_CONDITIONAL_BODIES
    if mode not in ("checked", "refused"):
        raise errors.InvalidValue("pygraphrt.nccl.COLLECTIVES_IN_CONDITIONAL_BODIES", detail=(
            f"{mode!r}: it is 'checked' or 'refused'"))
    return mode


def _conditional_body(stream: Any) -> Any:
    """The graph ``stream`` captures into when it is the body of a conditional node (or None)."""
    cap = getattr(stream, "_capture", None)
    target = getattr(cap, "_target", None) if cap is not None else None
    owner = getattr(target, "_owner", None) if target is not None else None
    return target if owner is not None and hasattr(owner, "_cond") else None


def _check_body(api: str, rank: int, body: Any, before: set[Any]) -> None:
    """Refuse the nodes NCCL added to a conditional body that the body rule forbids (host nodes:
    proxy operations), naming them -- before the runtime meets them at instantiation."""
    added = [n for n in body.nodes() if n._handle not in before]
    bad = sorted({n.type.value for n in added if n.type.value not in BODY_NODE_TYPES})
    if bad:
        raise errors.NotSupported(api, vendor="nccl", detail=(
            f"rank {rank}: NCCL added {', '.join(bad)} node(s) to the body of a conditional node, which may "
            f"hold only {', '.join(sorted(BODY_NODE_TYPES))} nodes (a host node is NCCL's proxy operation: a "
            "network or shared-memory path); the runtime would refuse the graph -- discard it, and loop on "
            "the host or unroll the loop in the graph"))


# ---------------------------------------------------------------- helpers
_INT = (-(1 << 31), 1 << 31)  # NCCL's int parameters: ranks, colors, keys, roots, peers, devices
_SIZE = (-(1 << 63), 1 << 63)  # counts (size_t; a negative one is refused by the caller, saying so)


def _index(value: Any, api: str, what: str, bounds: tuple[int, int] = _INT) -> int:
    """``value`` as an int within ``bounds`` (the C parameter's range: cffi would raise a bare
    OverflowError for one outside it)."""
    if isinstance(value, bool):
        raise errors.InvalidValue(api, detail=f"{what} must be an int, got {value!r}")
    try:
        v = operator.index(value)
    except TypeError:
        raise errors.InvalidValue(api, detail=f"{what} must be an int, got {value!r}") from None
    if not bounds[0] <= v < bounds[1]:
        raise errors.InvalidValue(api, detail=f"{what} {v} is out of range ({bounds[0]} to {bounds[1] - 1})")
    return v


def _seconds(timeout: Any, api: str, optional: bool = True) -> Any:
    """``timeout``, checked: a positive number of seconds, or None (no bound) where ``optional``.
    (A bound that has passed already would abort the communicators at once.)"""
    if timeout is None and optional:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real) or not float(timeout) > 0:  # (NaN too)
        raise errors.InvalidValue(api, detail=f"timeout must be positive seconds{' or None' if optional else ''}, "
                                              f"got {timeout!r}")
    return timeout


def _device_ordinal(device: Any, api: str) -> int:
    if device is None:
        return current_device().ordinal
    ordinal = getattr(device, "ordinal", None)  # pygraphrt Device
    if ordinal is None:
        ordinal = getattr(device, "index", None) if not isinstance(device, int) else device  # torch.device
    if ordinal is None:
        raise errors.InvalidValue(api, detail=f"device {device!r}: give an ordinal or a Device")
    d = _index(ordinal, api, "device")
    backend = _runtime.active()
    count = backend.device_count()
    if not 0 <= d < count:
        raise errors.InvalidValue(api, detail=f"device {d}: {count} device(s) present")
    return d


@contextlib.contextmanager
def _on_device(backend: Any, device: int) -> Iterator[None]:
    """Make ``device`` current for NCCL's call (it uses the current device), then restore."""
    ops = backend.ops
    cur = backend.ffi.new("int *")
    ops.call("GetDevice", cur)
    if cur[0] == device:
        yield
        return
    ops.call("SetDevice", device)
    try:
        yield
    finally:
        ops.call("SetDevice", cur[0])


def _config(lib: Library, blocking: bool) -> Any:
    """NCCL_CONFIG_INITIALIZER (every field undefined, i.e. NCCL's default), with ``blocking``."""
    ffi = lib.ffi
    cfg = ffi.new("ncclConfig_t *")
    undef = int(lib.symbols.CONSTANTS["NCCL_CONFIG_UNDEF_INT"])
    for fname, ftype in ffi.typeof("ncclConfig_t").fields:
        if ftype.type.kind == "primitive" and ftype.type.cname == "int":
            setattr(cfg, fname, undef)
    cfg.size = ffi.sizeof("ncclConfig_t")
    cfg.magic = int(lib.symbols.CONSTANTS["NCCL_API_MAGIC"])
    cfg.version = int(lib.symbols.CONSTANTS["NCCL_VERSION_CODE"])
    cfg.blocking = 1 if blocking else 0
    return cfg
