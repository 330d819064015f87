"""Generated calls against pygraphrt's fast paths: each method held to a slower path it must agree with.

Run by ``tests/test_hot_fuzz.py`` in a subprocess against a fake runtime -- the fake libcudart
(``PYGRAPHRT_CUDART``) or the fake libamdhip64 (``PYGRAPHRT_BACKEND=hip``,
``PYGRAPHRT_HIP_LIB``): ``python -m tests.hot_fuzz EXAMPLES``, in either mode.

- Compiled mode (``PYGRAPHRT_FAST=1``): each compiled hot method against the Python method it
  replaced (taken from the class before the first graph, stream or kernel installs the C).
- ABI mode (``PYGRAPHRT_FAST=0``): each Python method -- its inlined fast path, a kernel's
  generated adder and launch -- against its general path (``Graph._add``,
  ``_kernel._add_general``, ``GraphExec._launch_slow``, ``Kernel._launch``).

The methods are ``Graph.add_empty``, ``add_memset``, ``add_kernel`` and ``add_nodes`` (whose
bulk loop, C or ABI mode's Python, is held to each spec through the one-node methods; its
NodeList's entries are read by index and slice, some only after nodes were destroyed),
``GraphExec.launch``, ``Stream.launch`` and ``Kernel.launch``.  Hypothesis draws short programs of
calls with arguments from the plain (which the fast paths take) to the odd: bools, int
subclasses, ``__index__`` objects, numpy and ctypes scalars, values one past a field's range,
huge and negative ints, NaN, generators, another graph's nodes, closed buffers and streams,
unknown keywords, capturing streams.  Each call runs through the class's method on one twin and
through the reference on the other; the twins -- two graphs, two capturing streams -- start
alike.  The two must give the same node (type, dependencies, parameters read back), the same
launch (what the fake libcudart's ``cuLaunchKernel`` recorded; the bytes the fake HIP's kernel
wrote) or the same error (type, message, notes), and leave the twins alike (node count, the
graph's and the capture's keep lists, the captured graphs).  Afterwards nothing the calls
touched may hold a reference more than before.

Prints ``ok <examples> <calls> <calls the fast path made>`` (the last: calls that succeeded on
the method's twin with no frame of the reference's functions) or fails with hypothesis'
smallest program.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import re
import sys
import types
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pygraphrt as rt
from pygraphrt import errors, lowlevel
from pygraphrt._handles import Owned
from pygraphrt.device import DeviceBuffer, Stream
from pygraphrt.enums import DEFAULT_EDGE
from pygraphrt.graph import _bulk, _kernel, _params
from pygraphrt.graph._exec import GraphExec
from pygraphrt.graph._graph import Graph
from pygraphrt.graph._node import EmptyNode, MemsetNode
from pygraphrt.kernels import Kernel

from .odd import Index

# The Python methods, before any object of the backend installs the C ones in their place.
PY = {"add_empty": Graph.__dict__["add_empty"], "add_memset": Graph.__dict__["add_memset"],
      "add_kernel": Graph.__dict__["add_kernel"], "exec_launch": GraphExec.__dict__["launch"],
      "stream_launch": Stream.__dict__["launch"], "kernel_launch": Kernel.__dict__["launch"]}
assert all(type(f) is types.FunctionType for f in PY.values()), PY
ABI = rt.backend().ffi_mode.startswith("abi")
HIP = lowlevel.backend_object().vendor == "hip"  # (the fake libamdhip64: PYGRAPHRT_BACKEND=hip)


# ABI mode's reference: each method's general path, which its inlined fast path (and the
# kernels' generated adders and launches) must agree with.  Same signatures as the methods.
def general_add_empty(self: Graph, *, dependencies: Any = None, edges: Any = None) -> Any:
    return self._add("GraphAddEmptyNode", dependencies, edges, cls=EmptyNode)


def general_add_memset(self: Graph, dst: Any, value: Any, count: Any, *, element_size: Any = 1, height: Any = 1,
                       pitch: Any = 0, dependencies: Any = None, edges: Any = None) -> Any:
    p = (self._memset or self._make_memset_cell())[0]
    _params.memset_fields(self._backend, p, dst, value, count, element_size, height, pitch, what="add_memset")
    self._keep_operand(dst)
    return self._add("GraphAddMemsetNode", dependencies, edges, p, cls=MemsetNode)


def general_add_kernel(self: Graph, kernel: Any, grid: Any, block: Any, args: Any = (), *, shared_mem: Any = 0,
                       attributes: Any = None, dependencies: Any = None, edges: Any = None) -> Any:
    return _kernel._add_general(self, kernel, grid, block, args, shared_mem, attributes, dependencies, edges)


def general_exec_launch(self: GraphExec, stream: Any) -> None:
    self._launch_slow(stream)


def general_kernel_launch(self: Kernel, stream: Any, grid: Any, block: Any, *args: Any, shared_mem: Any = 0,
                          **attributes: Any) -> None:
    if not isinstance(stream, Stream):
        raise errors.InvalidValue("Kernel.launch", detail=f"{stream!r} is not a Stream")
    self._launch(stream, grid, block, args, shared_mem, attributes)


def general_stream_launch(self: Stream, kernel: Any, grid: Any, block: Any, *args: Any, shared_mem: Any = 0,
                          **attributes: Any) -> None:
    if not isinstance(kernel, Kernel):
        raise errors.InvalidValue("Stream.launch", detail=f"{kernel!r} is not a pygraphrt Kernel")
    general_kernel_launch(kernel, self, grid, block, *args, shared_mem=shared_mem, **attributes)


# What the class's method is held to: in compiled mode the Python method it replaced, in ABI mode
# the general path; and the names of the functions whose frames mean the call went that way.
REFERENCE = {name: globals()["general_" + name] for name in PY} if ABI else PY
for _name, _general in REFERENCE.items():
    _general.__qualname__ = PY[_name].__qualname__  # (named as the method in an argument's TypeError)
SLOW_NAMES = {"_add", "_add_general", "_launch_slow", "_launch", "_one_node"} if ABI else {f.__name__ for f in PY.values()}

try:
    import numpy as np
except ImportError:  # numpy's scalars are only some of the odd values
    np = None

MEM = ctypes.create_string_buffer(64)  # the memory the fake's memset nodes and pointers point into
A = ctypes.addressof(MEM)
HEX = re.compile(r"0x[0-9a-fA-F]+")


def borrowed_buffer(address: int, size: int) -> DeviceBuffer:
    """A DeviceBuffer over the probe's own memory (the fake has no cudaMalloc)."""
    buf = DeviceBuffer.__new__(DeviceBuffer)
    Owned.__init__(buf, lowlevel.backend_object(), lowlevel.ffi.cast("void *", address), False)
    buf.size, buf._address = size, address
    return buf


class MyInt(int):
    pass


class MyFloat(float):
    pass


class MyStream(Stream):
    pass


# -- the objects both twins share, and each twin's own ------------------------------------------
if HIP:
    # the fake HIP module's kernels (tests/fakehip/fake_hip.c): add_int(int *out, int a, int b), which
    # stores a + b through out when launched (on the host), and noop(), which takes nothing
    SIG = "int *out, int a, int b"
    ARGS: tuple[Any, ...] = (A, 7, 2)
    K = rt.Library(b"FAKEHIP").kernel("add_int", signature=SIG)
    K2 = rt.Library(b"FAKEHIP").kernel("add_int", signature=SIG)  # (switching kernels)
    K_WRONG = rt.Library(b"FAKEHIP").kernel("noop", signature="int n")
else:
    # the fake libcudart's kernels all take these eight (FAKE_KERNEL_PARAMS)
    SIG = "float *x, int n, double a, unsigned char c, short h, float f, long long q, unsigned int u"
    ARGS = (A, 7, 2.5, 255, -3, 1.5, -2**63, 2**32 - 1)
    K = Kernel.wrap(0x5000, signature=SIG, kind="kernel", name="fake")
    K2 = Kernel.wrap(0x5100, signature=SIG, kind="kernel", name="second")  # (switching kernels)
    K_WRONG = Kernel.wrap(0x5200, signature="int n", kind="kernel", name="wrong")
BUFS = [borrowed_buffer(A + 8 * i, 8) for i in range(3)]
CLOSED_BUF = borrowed_buffer(A, 8)
CLOSED_BUF.close()
STREAM = Stream()
MY_STREAM = MyStream()
LEGACY = Stream.legacy_default()
CLOSED_STREAM = Stream()
CLOSED_STREAM.close()
FOREIGN = Graph()
FOREIGN_NODE = FOREIGN.add_empty()
_safe = Graph()  # executable graphs of nodes that touch nothing when launched
_safe.add_empty().empty()
EXEC = _safe.instantiate()
CLOSED_EXEC = _safe.instantiate()
CLOSED_EXEC.close()
SHARED: dict[str, Any] = {
    "k": K, "k2": K2, "k_wrong": K_WRONG, "closed_buf": CLOSED_BUF, "stream": STREAM, "my_stream": MY_STREAM,
    "legacy": LEGACY, "closed_stream": CLOSED_STREAM, "foreign": FOREIGN_NODE, "exec": EXEC,
    "closed_exec": CLOSED_EXEC, **{f"buf{i}": b for i, b in enumerate(BUFS)}}
NAMES = {id(v): k for k, v in SHARED.items()}
FAKE = ctypes.CDLL(os.environ["PYGRAPHRT_HIP_LIB" if HIP else "PYGRAPHRT_CUDART"])


class Launch(ctypes.Structure):
    _fields_ = [("func", ctypes.c_void_p), ("stream", ctypes.c_void_p), ("grid", ctypes.c_uint * 3),
                ("block", ctypes.c_uint * 3), ("smem", ctypes.c_uint), ("args", ctypes.c_ubyte * 48)]


try:  # (the fake libcudart built with FAKE_DRIVER_DIRECT: kernel launches, which it records)
    LAST: Any = Launch.in_dll(FAKE, "fake_last_launch")
    LAUNCHES: Any = ctypes.c_int.in_dll(FAKE, "fake_launches")
except ValueError:
    LAST = LAUNCHES = None
# (the fake libcudart's runtime calls and driver calls together: the C may take the driver's function)
CALLS = [] if HIP else [ctypes.c_int.in_dll(FAKE, n) for n in ("fake_runtime_calls", "fake_driver_calls")]
#: Whether the fake launches kernels: the CUDA one records them, the HIP one runs them.
LAUNCHING = LAST is not None or HIP


class Twin:
    """One side's graph, its nodes (those made before and by the program, in order), a node
    whose handle is gone, and a stream capturing into a graph of its own."""

    def __init__(self) -> None:
        self.graph = Graph()
        self.nodes = [self.graph.add_empty()]
        self.nodes.append(self.graph.add_memset(A, 1, 4, dependencies=self.nodes[:1]))
        # (a kernel's first node is always the Python method's: made here, it is so on both twins)
        self.nodes += [PY["add_kernel"](self.graph, k, 1, 32, ARGS, dependencies=self.nodes[:1]) for k in (K, K2)]
        self.dead = self.graph.add_empty()
        self.dead.destroy()  # (its address is the next node's: the fake reuses the slot)
        self.lists: list[Any] = []  # what add_nodes returned, in order
        self.capturing = Stream()
        self.capture = self.capturing.capture()
        self.capture.__enter__()

    def close(self) -> list[Any]:
        """End the capture and close both graphs; the captured graph's nodes, described."""
        try:
            self.capture.__exit__(None, None, None)
            nodes = self.capture.graph.nodes()
            captured = [describe(n, nodes, self.capture.graph) for n in nodes]
            self.capture.graph.close()
        except Exception as exc:  # noqa: BLE001 (a capture a call left invalid: say so)
            captured = [error(exc)]
        self.capturing.close()
        self.graph.close()
        return captured


class Ref:
    """An object drawn by name: resolved per twin when the call is made."""

    def __init__(self, kind: str, i: int = 0) -> None:
        self.kind, self.i = kind, i

    def __repr__(self) -> str:
        return f"{self.kind}[{self.i}]" if self.i else self.kind


def resolve(v: Any, twin: Twin) -> Any:
    if isinstance(v, Ref):
        if v.kind == "node":
            return twin.nodes[v.i % len(twin.nodes)]
        if v.kind == "dead":
            return twin.dead
        if v.kind == "addr":
            return A + v.i
        if v.kind == "ptr":
            return lowlevel.ffi.cast("void *", A + v.i)
        if v.kind == "capturing":
            return twin.capturing
        if v.kind == "gen":
            return (resolve(x, twin) for x in v.i)  # type: ignore[attr-defined]
        return SHARED[v.kind]
    if type(v) is list:
        return [resolve(x, twin) for x in v]
    if type(v) is tuple:
        return tuple(resolve(x, twin) for x in v)
    if type(v) is dict:
        return {k: resolve(x, twin) for k, x in v.items()}
    return v


def gen(items: list[Any]) -> Ref:
    r = Ref("gen")
    r.i = items  # type: ignore[assignment]
    return r


# -- what a call did, described alike for both twins ----------------------------------------------
def error(exc: BaseException) -> str:
    notes = getattr(exc, "__notes__", [])
    return f"{type(exc).__name__}: {HEX.sub('0x?', str(exc))} {notes}"


def value(v: Any) -> Any:
    if isinstance(v, int) and not isinstance(v, bool) and A <= v < A + 64:
        return f"A+{v - A}"
    return repr(v) if isinstance(v, float) else v  # (NaN is not NaN)


def describe(n: Any, places: list[Any], graph: Any) -> Any:
    """A node of ``graph``: its type, its dependencies by their place in ``places``, its
    parameters read back."""
    where = {id(x): i for i, x in enumerate(places)}
    p = dict(n.params)
    if "dst" in p:
        p["dst"] = value(p["dst"])
    if "args" in p:
        p["args"] = [value(x) for x in p["args"]]
    if "kernel" in p:
        p["kernel"] = NAMES.get(id(p["kernel"]), repr(p["kernel"]))
    deps = [where.get(id(d), "?") for d, _ in n.dependencies]
    return (type(n).__name__, n.graph is graph, deps, sorted(p.items(), key=lambda kv: kv[0]))


def keep(graph: Any) -> list[str]:
    return [NAMES.get(id(x), type(x).__name__) for x in graph._keep]


def launch_record() -> tuple[Any, ...]:
    streams = {int(lowlevel.ffi.cast("uintptr_t", s.handle)): n for n, s in
               (("stream", STREAM), ("my_stream", MY_STREAM))}
    raw = bytes(LAST.args)
    return (LAST.func, streams.get(LAST.stream or 0, "NULL" if not LAST.stream else "?"), tuple(LAST.grid),
            tuple(LAST.block), LAST.smem, raw)


def call(op: tuple[str, list[Any], dict[str, Any]], twin: Twin, fast: bool) -> tuple[Any, bool]:
    """Make the call on ``twin``: through the class (the C method) or the saved Python method.
    (what it did, whether a Python method frame ran)."""
    name, args, kwargs = op
    args, kwargs = resolve(args, twin), resolve(kwargs, twin)
    if name == "read":
        return read(twin, *args), True
    if name == "destroy":  # the graph's last node (the only one the fakes destroy)
        try:
            last = twin.graph.nodes()[-1]
            last.destroy()
            return ("destroyed", type(last).__name__), True
        except Exception as exc:  # noqa: BLE001
            return error(exc), True
    seen: list[str] = []
    launches, runtime_calls = LAUNCHES.value if LAUNCHES else 0, sum(c.value for c in CALLS)
    ctypes.memset(MEM, 0, len(MEM))  # (what a launched kernel writes there, HIP's add_int, is seen after)
    sys.setprofile(lambda frame, event, arg: seen.append(frame.f_code.co_name) if event == "call" else None)
    try:
        if name.endswith("launch"):  # (on the first argument: an executable graph, a stream, a kernel)
            target = args[0]
            result = target.launch(*args[1:], **kwargs) if fast else REFERENCE[name](target, *args[1:], **kwargs)
        elif name.startswith("add_nodes"):
            if fast:
                result = twin.graph.add_nodes(*args, **kwargs)
            else:
                with one_node_methods_only():
                    result = Graph.add_nodes(twin.graph, *args, **kwargs)
        else:
            fn = getattr(twin.graph, name) if fast else REFERENCE[name].__get__(twin.graph)
            result = fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 (the error is the result)
        sys.setprofile(None)
        return error(exc), bool(SLOW_NAMES & set(seen))
    sys.setprofile(None)
    if name.endswith("launch"):
        made = LAUNCHES.value - launches if LAUNCHES else 0
        return ("launched", made, sum(c.value for c in CALLS) - runtime_calls, launch_record() if made else None,
                MEM.raw), bool(SLOW_NAMES & set(seen))
    if name.startswith("add_nodes"):
        twin.lists.append(result)
        if name == "add_nodes_lazy":  # (its entries read later, by "read", or never)
            return ("made", len(result)), bool(SLOW_NAMES & set(seen))
        made = list(result)
        places = twin.nodes + made
        twin.nodes.extend(made)
        return [describe(n, places, twin.graph) for n in made], bool(SLOW_NAMES & set(seen))
    described = describe(result, twin.nodes, twin.graph)
    twin.nodes.append(result)
    return described, bool(SLOW_NAMES & set(seen))


def read(twin: Twin, which: int, plan: list[Any]) -> Any:
    """Entries of one of ``twin``'s NodeLists, by index or slice: for each, what it is and which
    of the graph's nodes (``graph.nodes()``) it is; a node destroyed since reads as destroyed."""
    if not twin.lists:
        return "no list"
    made = twin.lists[which % len(twin.lists)]
    live = twin.graph.nodes()

    def state(n: Any) -> Any:
        at = next((j for j, x in enumerate(live) if x is n), None)
        return (type(n).__name__, n._handle is None, at, n is made[made.index(n)] if n in made else "?")

    out: list[Any] = [len(made)]
    for item in plan:
        try:
            got = made[slice(*item)] if isinstance(item, tuple) else made[item]
            out.append([state(n) for n in got] if isinstance(got, list) else (state(got), got is made[item]))
        except Exception as exc:  # noqa: BLE001
            out.append(error(exc))
    out.append(list(made) == [made[i] for i in range(len(made))])
    return out


@contextlib.contextmanager
def one_node_methods_only() -> Any:
    """``Graph.add_nodes`` with no loop of its own: each spec through the one-node methods, the
    reference for the C loop (the hot module's ``add_nodes`` and ``make_nodes``)."""
    saved = _bulk._hot, _bulk._fast, _bulk._abi_loop
    _bulk._hot = types.SimpleNamespace(bulk_adder=lambda backend: None, node_maker=lambda backend: None)
    _bulk._fast = types.SimpleNamespace(compiled_helper=lambda backend, name: None)
    _bulk._abi_loop = lambda graph, seq, i, made, names: i  # (ABI mode's loop: leaves every spec)
    try:
        yield
    finally:
        _bulk._hot, _bulk._fast, _bulk._abi_loop = saved


# -- the strategies -------------------------------------------------------------------------------
EDGE_INTS = [0, 1, 2, 3, 4, 7, 8, 255, 256, 2**15 - 1, 2**15, 2**16, 2**31 - 1, 2**31, 2**32 - 1, 2**32,
             2**63 - 1, 2**63, 2**64 - 1, 2**64, -1, -2, -2**15 - 1, -2**31, -2**31 - 1, -2**63, -2**63 - 1, -2**64]
ODD = [True, False, 1.0, 0.0, -0.0, 0.5, float("nan"), float("inf"), -float("inf"), None, "1", b"1", MyInt(1),
       MyInt(2**40), MyFloat(1.5), Index(1), Index(-1), ctypes.c_int(5), ctypes.c_double(1.5), 1j, [1], (1,),
       object()]
if np is not None:
    ODD += [np.int32(3), np.uint8(200), np.int64(-5), np.float32(1.5), np.float64(2.5), np.bool_(True)]


def pick(*strategies: Any) -> Any:
    """One of ``strategies``, each as often as it is listed.  (st.one_of draws each distinct
    strategy as often, however many times it is listed.)"""
    return st.sampled_from(strategies).flatmap(lambda s: s)


small = st.integers(0, 64)
num = pick(small, st.sampled_from(EDGE_INTS), st.sampled_from(EDGE_INTS), st.sampled_from(ODD), st.sampled_from(ODD),
           st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True))


def mostly(good: Any, odd: Any = num, weight: int = 6) -> Any:
    """``good`` about ``weight`` times in ``weight + 1``, else ``odd``: a call has a few odd
    arguments at most, so that many calls are plain enough for the C to make."""
    return pick(*[good] * weight, odd)


node_ref = st.integers(0, 40).map(lambda i: Ref("node", i))
dep_item = mostly(node_ref, pick(st.just(Ref("foreign")), st.just(Ref("dead")), st.just(Ref("foreign")),
                                 st.just(Ref("dead")), num, st.just(Ref("k"))), 3)
short = st.lists(dep_item, min_size=1, max_size=3)  # (one odd item among good ones, often)
deps = mostly(pick(st.none(), st.lists(node_ref, max_size=3), st.lists(node_ref, max_size=3).map(tuple),
                   st.lists(node_ref, min_size=15, max_size=17)),
              pick(short, short, short, short.map(tuple), short.map(gen), st.lists(dep_item, max_size=18), dep_item,
                   st.sampled_from(["ab", b"", {}, set()])), 3)
edges = mostly(st.none(), st.one_of(st.just([]), st.lists(st.sampled_from([DEFAULT_EDGE, 5, None]), max_size=3)))
good_pointer = st.one_of(st.integers(0, 56).map(lambda i: Ref("addr", i)),
                         st.sampled_from([Ref("buf0"), Ref("buf1"), Ref("buf2")]))
pointer = mostly(good_pointer, st.one_of(st.integers(0, 56).map(lambda i: Ref("ptr", i)), st.just(Ref("closed_buf")),
                                         st.just(0), st.none(), num), 4)
# (memsets of at most 8 bytes from the pointers above, mostly: the fake writes no memory until a
# graph launch, and no fuzzed graph is launched; still, keep the parameters honest)
element_size = mostly(st.sampled_from([1, 2, 4]), st.one_of(st.sampled_from([0, 3, 8, True, 1.0]), num))
dim = mostly(st.integers(1, 4), st.one_of(st.sampled_from([0, 2**32 - 1, 2**32, -1]), num))
dims = pick(dim, dim, st.lists(dim, min_size=1, max_size=3), st.lists(dim, min_size=1, max_size=3).map(tuple),
                 st.lists(dim, max_size=4))


def int_arg(lo: int, hi: int) -> Any:
    """An argument of an integer parameter of range lo..hi: mostly in range (its ends too), else
    just out of it, or anything."""
    return mostly(pick(st.integers(lo, hi), st.sampled_from([lo, hi, 0])),
                  pick(st.sampled_from([lo - 1, hi + 1]), num, pointer), 8)


def float_arg(width: int) -> Any:
    return mostly(pick(st.floats(width=width), st.integers(-2**53, 2**53)), pick(num, pointer), 8)


# the arguments of SIG's parameters: for kernel nodes, and for launches
pointer_arg = mostly(good_pointer, pick(num, pointer), 8)
int32_arg = int_arg(-2**31, 2**31 - 1)
if HIP:
    # a launched add_int writes through its pointer: there, addresses in MEM or what pygraphrt refuses
    safe_pointer_arg = pick(good_pointer, good_pointer, good_pointer, st.integers(0, 60).map(lambda i: Ref("ptr", i)),
                            st.just(Ref("closed_buf")), st.sampled_from(["x", 1.5, -1, 2**64, Index(8), b"p"]))
    node_args, launch_args = [pointer_arg, int32_arg, int32_arg], [safe_pointer_arg, int32_arg, int32_arg]
else:
    node_args = launch_args = [pointer_arg, int32_arg, float_arg(64), int_arg(0, 255), int_arg(-2**15, 2**15 - 1),
                               float_arg(32), int_arg(-2**63, 2**63 - 1), int_arg(0, 2**32 - 1)]


@st.composite
def kernel_args(draw: Any, launch: bool = False) -> Any:
    values = [draw(a) for a in (launch_args if launch else node_args)]
    shape = draw(st.sampled_from(["tuple"] * 12 + ["list"] * 3 + ["short", "long", "str", "none"]))
    if shape == "list":
        return values
    if shape == "short":
        return tuple(values[:draw(st.integers(0, 7))])
    if shape == "long":
        return (*values, draw(num))
    if shape == "str":
        return "abcdefgh"
    if shape == "none":
        return None
    return tuple(values)


def optional(**strategies: Any) -> Any:
    return st.fixed_dictionaries({}, optional=strategies)


@st.composite
def add_empty(draw: Any) -> Any:
    kwargs = draw(optional(dependencies=deps, edges=edges, bogus=num))
    if "bogus" in kwargs and draw(st.sampled_from([True, True, True, False])):
        del kwargs["bogus"]
    args = draw(mostly(st.just([]), st.lists(deps, min_size=1, max_size=1), 12))
    return ("add_empty", args, kwargs)


@st.composite
def add_memset(draw: Any) -> Any:
    head = [draw(pointer), draw(mostly(pick(small, small, small, st.integers(0, 2**32 - 1), memset_ends))),
            draw(mostly(st.integers(0, 2)))]
    n = draw(st.sampled_from([3, 3, 3, 3, 2, 1, 0]))
    kwargs = dict(zip(("dst", "value", "count")[n:], head[n:]))
    kwargs.update(draw(optional(element_size=element_size, height=mostly(st.just(1)), pitch=mostly(st.just(0)),
                                dependencies=deps, edges=edges, bogus=num)))
    if "bogus" in kwargs and draw(st.sampled_from([True, True, True, False])):
        del kwargs["bogus"]
    return ("add_memset", head[:n], kwargs)


kernels = st.sampled_from([Ref("k")] * 8 + [Ref("k2")] * 2 + [Ref("k_wrong"), Ref("stream"), None, 5])


@st.composite
def add_kernel(draw: Any) -> Any:
    head = [draw(kernels), draw(dims), draw(dims), draw(kernel_args())]
    n = draw(st.sampled_from([4, 4, 4, 3, 2, 0]))
    kwargs = dict(zip(("kernel", "grid", "block", "args")[n:], head[n:]))
    kwargs.update(draw(optional(shared_mem=mostly(st.integers(0, 2**16)), dependencies=deps, edges=edges,
                                attributes=st.sampled_from([None, None, None, {}, {"priority": 1}, 5]), bogus=num)))
    if "bogus" in kwargs and draw(st.sampled_from([True, True, True, False])):
        del kwargs["bogus"]
    return ("add_kernel", head[:n], kwargs)


launch_stream = st.sampled_from([Ref("stream")] * 4 + [Ref("capturing")] * 3 + [Ref("my_stream"), Ref("legacy"),
                                                                                  Ref("closed_stream")])


@st.composite
def exec_launch(draw: Any) -> Any:
    target = draw(st.sampled_from([Ref("exec"), Ref("exec"), Ref("exec"), Ref("closed_exec")]))
    stream = draw(mostly(launch_stream, st.one_of(num, st.just(Ref("k")))))
    form = draw(st.sampled_from(["positional"] * 4 + ["keyword", "none", "two"]))
    if form == "keyword":
        return ("exec_launch", [target], {"stream": stream})
    return ("exec_launch", [target] + {"positional": [stream], "none": [], "two": [stream, stream]}[form], {})


@st.composite
def plain_launch(draw: Any) -> Any:
    stream, kernel = draw(launch_stream), draw(kernels)
    values = draw(kernel_args(launch=True))
    values = list(values) if isinstance(values, (tuple, list)) else [values]
    kwargs = draw(optional(shared_mem=mostly(st.integers(0, 2**16)), priority=st.just(1), bogus=num))
    for key in ("priority", "bogus"):
        if key in kwargs and draw(st.sampled_from([True, True, True, False])):
            del kwargs[key]
    grid, block = draw(dims), draw(dims)
    if draw(st.booleans()) or kernel in (None, 5) or kernel.kind == "stream":  # Stream.launch(kernel, ...)
        return ("stream_launch", [stream, kernel, grid, block, *values], kwargs)
    return ("kernel_launch", [kernel, stream, grid, block, *values], kwargs)




def spec_dep(i: int) -> Any:
    """A dependency of spec ``i``: mostly an earlier spec's index, a node or a name."""
    earlier = [st.integers(0, i - 1)] * 4 if i else []
    return pick(*earlier, node_ref, st.sampled_from(["r", "m"]),
                st.sampled_from([i, -1, 40, "zz", Ref("foreign"), Ref("dead"), True, 1.0, None]))


# (made once: hypothesis caches the strategies it is given, and with them their values, which
# the reference count check at the end would see)
SPEC_DEPS = [spec_dep(i) for i in range(10)]


# the ends of the values a memset's element sizes hold, and one past them
memset_ends = st.sampled_from([255, 256, 2**16 - 1, 2**16, 2**32 - 1, 2**32, -1])
byte = pick(*[st.integers(0, 255)] * 4, memset_ends)
spec_params = {
    "empty": mostly(st.sampled_from([None, {}]), st.sampled_from([{"dst": 1}, 5, "x", [], {"dependencies": []}]), 8),
    "memset": mostly(st.fixed_dictionaries({"dst": good_pointer, "value": byte, "count": st.integers(0, 8)}),
                     st.one_of(st.fixed_dictionaries({"dst": pointer, "value": num, "count": num}),
                               st.fixed_dictionaries({"dst": good_pointer, "value": st.integers(0, 255),
                                                      "count": st.integers(0, 8)}, optional={
                                   "element_size": element_size, "height": st.just(1), "bogus": num}),
                               st.sampled_from([None, {}, 5, {"dst": 0}]))),
    "kernel": st.just({"kernel": Ref("k"), "grid": 1, "block": 32, "args": ARGS}),
}


@st.composite
def spec(draw: Any, i: int) -> Any:
    kind = draw(pick(*[st.just("empty")] * 4, *[st.just("memset")] * 4, st.just("kernel"),
                     st.sampled_from(["host", "nodes", "dependencies", "bogus", 5, None])))
    params = draw(spec_params.get(kind, st.just({})))
    after = draw(mostly(st.lists(SPEC_DEPS[i], max_size=3), st.one_of(deps, SPEC_DEPS[i]), 8))
    shape = draw(st.sampled_from(["three"] * 30 + ["two"] * 3 + ["list"] * 3 + ["one", "four", "string"]))
    return {"three": (kind, params, after), "two": (kind, params), "list": [kind, params, after], "one": (kind,),
            "four": (kind, params, after, 1), "string": "empty"}[shape]


SPECS = [spec(i) for i in range(10)]


def plain_spec(i: int) -> Any:
    """Spec ``i`` as the bulk loops take it, mostly: an empty or plain memset node after earlier
    specs or nodes."""
    after = st.lists(pick(*[st.integers(0, i - 1)] * 3 * bool(i), node_ref), max_size=3)
    plain = st.tuples(st.just("empty"), st.sampled_from([None, {}]), after) | st.tuples(
        st.just("memset"), st.fixed_dictionaries({"dst": good_pointer, "value": st.integers(0, 255),
                                                  "count": st.integers(0, 8)}), after)
    return mostly(plain, SPECS[i], 12)


PLAIN_SPECS = [plain_spec(i) for i in range(10)]


@st.composite
def add_nodes(draw: Any, lazy: bool | None = None) -> Any:
    specs = [draw((PLAIN_SPECS if lazy else SPECS)[i]) for i in range(draw(st.integers(0, 10)))]
    container = draw(st.sampled_from(["list"] * 6 + ["tuple", "generator", "none"]))
    specs = {"list": specs, "tuple": tuple(specs), "generator": gen(specs), "none": None}[container]
    names = draw(mostly(st.just({"r": Ref("node", 0), "m": Ref("node", 1)}),
                        st.sampled_from([None, {}, {"r": Ref("dead")}, {"m": Ref("foreign")}])))
    if lazy is None:  # (lazy: its entries are read by later "read" calls, or never)
        lazy = draw(st.booleans())
    return ("add_nodes_lazy" if lazy else "add_nodes", [specs], {"names": names})


entry = st.integers(-12, 12)
bound = st.one_of(st.none(), entry)
reads = st.tuples(st.integers(0, 3), st.lists(pick(entry, entry, st.tuples(bound, bound, st.sampled_from(
    [None, None, 1, 2, -1, -2, 3, 0]))), min_size=1, max_size=5)).map(lambda r: ("read", list(r), {}))
destroy = st.just(("destroy", [], {}))
# a lazy add_nodes, then its entries read, nodes destroyed (the graph's last), read again
bulk_then_reads = st.tuples(add_nodes(lazy=True), st.lists(pick(reads, reads, destroy), min_size=1, max_size=4))
calls = [add_empty(), add_empty(), add_memset(), add_memset(), add_kernel(), add_kernel(), exec_launch(),
         add_nodes(), reads, destroy, *[plain_launch()] * 2 * LAUNCHING]
program = st.lists(pick(*[c.map(lambda op: [op]) for c in calls], bulk_then_reads.map(lambda t: [t[0], *t[1]])),
                   min_size=1, max_size=8).map(lambda chunks: [op for chunk in chunks for op in chunk])
STATS = {"examples": 0, "calls": 0, "c": 0}


def check(ops: list[Any]) -> None:
    fast_twin, ref_twin = Twin(), Twin()
    try:
        for op in ops:
            got_fast, slow = call(op, fast_twin, True)
            got_ref, _ = call(op, ref_twin, False)
            assert got_fast == got_ref, f"{op!r}:\n  method:    {got_fast!r}\n  reference: {got_ref!r}"
            STATS["calls"] += 1
            STATS["c"] += not slow and not isinstance(got_fast, str)
            state_c, state_py = (
                (len(t.graph.nodes()), len(t.graph._table()), keep(t.graph), keep(t.capture), t.capturing.is_capturing)
                for t in (fast_twin, ref_twin))
            assert state_c == state_py, f"after {op!r}:\n  method:    {state_c!r}\n  reference: {state_py!r}"
    finally:
        captured = fast_twin.close(), ref_twin.close()
    assert captured[0] == captured[1], f"captured:\n  method:    {captured[0]!r}\n  reference: {captured[1]!r}"
    STATS["examples"] += 1


def main(examples: int) -> None:
    Twin().close()  # (the kernel's first node, made in Python, installs the C add_kernel)
    if LAUNCHING:  # (and its first launch its launch layout, before the references are counted)
        for k in (K, K2):
            k.launch(STREAM, 1, 32, *ARGS)
    # compiled mode: each class's method is the C one; ABI mode: the Python one
    for cls, name, key in ((Graph, "add_empty", "add_empty"), (Graph, "add_memset", "add_memset"),
                           (Graph, "add_kernel", "add_kernel"), (GraphExec, "launch", "exec_launch"),
                           (Stream, "launch", "stream_launch"), (Kernel, "launch", "kernel_launch")):
        method = cls.__dict__[name]
        assert (method is PY[key]) == ABI, f"{cls.__name__}.{name}: {method!r} in {'ABI' if ABI else 'compiled'} mode"
    watched = [K, K2, K_WRONG, *BUFS, CLOSED_BUF, STREAM, MY_STREAM, LEGACY, CLOSED_STREAM, EXEC, FOREIGN_NODE,
               *[o for o in ODD if not isinstance(o, (bool, type(None), str, bytes))]]
    EXEC._last_stream = None  # (the stream a launch waits on: one reference, by design)
    gc.collect()
    before = [sys.getrefcount(o) for o in watched]
    given(program)(settings(max_examples=examples, deadline=None, derandomize=True, database=None,
                            suppress_health_check=list(HealthCheck))(check))()
    EXEC._last_stream = None
    gc.collect()
    after = [sys.getrefcount(o) for o in watched]
    grown = [(repr(o), b, a) for o, b, a in zip(watched, before, after) if a > b]
    assert not grown, f"references left behind: {grown}"
    print("ok", STATS["examples"], STATS["calls"], STATS["c"])


if __name__ == "__main__":
    main(int(sys.argv[1]))
