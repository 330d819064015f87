"""Generated calls of the whole public API, on the simulator or a GPU: bad input is refused, never a crash.

Run by ``tests/test_api_fuzz.py`` in a subprocess, on the simulator (``PYGRAPHRT_FUZZ_BACKEND=sim``,
the default) and, on a GPU machine, on CUDA (``cuda``): ``python -m tests.api_fuzz EXAMPLES``.  The methods and properties called are not listed here: they are read
off the objects' classes (every public method, property and property setter of streams, events,
buffers, devices, graphs, every node type, executable graphs, captures, node lists, pools,
programs, libraries and kernels, the compute graph's manager, variables, graph and nodes), and
the module's constructors and functions beside them, so a method added later is called too;
``EXCLUDED`` names the few that are not, and why.

The run begins with a sweep: for each method, each parameter is given each of ``SWEEP`` (some
30 odd values) in turn, the required others a value that suits their name; each property
setter and protocol gets each value too.  Then hypothesis' programs: each example makes a fresh
set of objects -- live ones, closed ones (a closed stream, event, graph, buffer, executable
graph, library and its kernel, pool; a destroyed node; an ended capture; a freed stream-ordered
buffer), a capture in progress, another graph's nodes -- and makes one to four calls.  Each argument is drawn from values that suit its parameter's name
(streams for ``stream``, nodes for ``node``, small sizes for ``count``) or from everything: the
objects above in the wrong places, None, bools, ints of every range (negative, 2**64, 10**30),
``__index__`` objects, NaN and inf, strings, bytes, lists, dicts, tuples, iterators, callables.

What must hold for every call:

- it returns a value of the type its annotation gives (a method annotated ``-> int`` an int, a
  property its getter's annotation, a constructor its class), or raises a
  :class:`pygraphrt.errors.GraphRTError` of a specific class (or one carrying the vendor's error
  name), whose message begins with the API it names (a wrong value is InvalidValue naming the
  call; InvalidResourceHandle a closed object passed, OutOfMemory a size too large, a vendor's
  error what the runtime itself refused: in the sweep, a call refused otherwise must be refused
  with that class again when made with suitable values -- the objects' state refused it, not the
  value), or a TypeError from Python's own argument binding (too many,
  too few or unknown arguments) -- never an AttributeError, KeyError, OverflowError, plain
  TypeError or ValueError from inside pygraphrt or cffi, never a crash (``PROTOCOL`` says what
  ``[]`` and ``repr`` may raise, and an ImportError that says what to install is allowed where an
  optional dependency, networkx, is missing);
- a call that raised leaves every stream's capture as it found it (none begun) and every
  graph's node count as it was;
- once a program's captures are ended through their streams, none is left running (one that
  outlived its stream would refuse every later cudaMalloc).
- on the simulator: the runtime was given no handle that is not a live one of its kind
  (:func:`pygraphrt.sim.undefined_calls`), which a GPU's runtime follows and may crash on --
  ``exe.launch(buf)`` passed a buffer's ``void *`` as the stream, and the process died on an H100.

Raw addresses are the one thing no binding can check: a positive int is taken as an address as
it is (the runtimes read host memory through it), so parameters that take one (``dst``,
``src``, ``ptr``, a handle to wrap) are given 0, negative and too-large ints, never other
positive ones.

Prints ``ok <examples> <calls> <returned> <refused> <targets> <calls of the sweep> <targets whose
return type is checked> <returned values checked>``, or fails
at the sweep's first bad call or with hypothesis' smallest program (each call written as
``object.method(arguments)`` with the objects' names below).  A process that dies (a
segmentation fault) leaves the call it was making in ``$PYGRAPHRT_FUZZ_CURRENT``.
``PYGRAPHRT_FUZZ_COLLECT=1`` reports every kind of failure once instead of stopping;
``PYGRAPHRT_FUZZ_SEED=N`` draws other programs than the test's; ``PYGRAPHRT_FUZZ_PROGRESS=1``
times the sweep and, on SIGTERM (a timeout), shows where it was; ``PYGRAPHRT_FUZZ_BACKEND=cuda``
makes the calls on a GPU; ``PYGRAPHRT_FUZZ_LOG=FILE`` appends each program to FILE as it starts
(so a crash's program is the last line); ``PYGRAPHRT_FUZZ_SYNC=1`` waits for the device to be
idle before each program's objects are dropped (a crash that goes away with it comes from work
still in flight when its objects went); ``PYGRAPHRT_FUZZ_ONLY=A:B`` runs only hypothesis' programs
A to B-1 (counted from 0; the others are drawn, so the programs are the same, but not run) and
``PYGRAPHRT_FUZZ_SWEEP=0`` leaves the sweep out: together they bisect a crash that shows itself
programs after its cause.
"""

from __future__ import annotations

import functools
import inspect
import os
import re
import sys
import types
import typing
from typing import Any, Callable

import hypothesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pygraphrt as rt
from pygraphrt import compute, errors, sim
from pygraphrt._handles import captures
from pygraphrt.enums import CaptureMode, CaptureStatus, EdgeData, GraphMemAttr, InstantiateFlags, MemPoolAttr, NodeType

from .odd import Index

SOURCE = 'extern "C" __global__ void fz_k(float *y, int n) {}'
SIGNATURE = "float *y, int n"

#: The backend the calls run on: the simulator (the default), or ``cuda`` on a GPU machine,
#: where the runtime itself sees every call that pygraphrt lets through.
BACKEND = os.environ.get("PYGRAPHRT_FUZZ_BACKEND", "sim")


@functools.lru_cache(maxsize=None)
def _program() -> Any:
    """``Program(SOURCE)``, compiled once per run (a compile per fresh set of objects would cost
    NVRTC's time thousands of times over); each set still loads its own libraries."""
    return rt.Program(SOURCE)


#: Not called, and why.
EXCLUDED = {
    "Kernel.decode": "reads host memory at the address it is given (a kernelParams array a runtime "
                     "handed out): like ctypes.string_at, nothing can check it",
    "Kernel.__init__": "not a public constructor (Library.kernel and Kernel.wrap make kernels)",
    "NodeList.index": "collections.abc.Sequence's mixin: it raises what list.index does (TypeError "
                      "for a start or stop that is not an int)",
    "NodeList.count": "collections.abc.Sequence's mixin, as list.count",
}

#: Parameters that take a raw address or handle: given no positive int but 0 (see the docstring).
ADDRESS_PARAMS = {"dst", "src", "ptr", "dptr", "symbol", "obj", "argv_address"}


def _raise() -> None:
    raise RuntimeError("raised by a host function")


# (label, factory): literal values, made anew for each use (some are mutable or single-use).
LITERALS: list[tuple[str, Callable[[dict[str, Any]], Any]]] = [
    ("None", lambda o: None), ("0", lambda o: 0), ("1", lambda o: 1), ("2", lambda o: 2), ("7", lambda o: 7),
    ("-1", lambda o: -1), ("255", lambda o: 255), ("256", lambda o: 256), ("2**31", lambda o: 1 << 31),
    ("2**32", lambda o: 1 << 32), ("2**63", lambda o: 1 << 63), ("2**64", lambda o: 1 << 64),
    ("-2**63-1", lambda o: -(1 << 63) - 1), ("10**30", lambda o: 10 ** 30), ("2**40", lambda o: 1 << 40),
    ("True", lambda o: True), ("False", lambda o: False), ("1.5", lambda o: 1.5), ("0.0", lambda o: 0.0),
    ("nan", lambda o: float("nan")), ("inf", lambda o: float("inf")), ("'x'", lambda o: "x"), ("''", lambda o: ""),
    ("b'x'", lambda o: b"x"), ("object()", lambda o: object()), ("()", lambda o: ()), ("[]", lambda o: []),
    ("(1, 2, 3, 4)", lambda o: (1, 2, 3, 4)), ("(1, 1, 1)", lambda o: (1, 1, 1)), ("(2, 1)", lambda o: (2, 1)),
    ("[None]", lambda o: [None]), ("{}", lambda o: {}), ("{'a': 1}", lambda o: {"a": 1}),
    ("Index(3)", lambda o: Index(3)), ("Index(-1)", lambda o: Index(-1)), ("iter([1])", lambda o: iter([1])),
    ("noop", lambda o: (lambda: None)), ("raiser", lambda o: _raise), ("lambda *a: 0", lambda o: (lambda *a: 0)),
    ("'global'", lambda o: "global"), ("'thread_local'", lambda o: "thread_local"), ("'relaxed'", lambda o: "relaxed"),
    ("'if'", lambda o: "if"), ("'while'", lambda o: "while"), ("'switch'", lambda o: "switch"),
    ("'if_else'", lambda o: "if_else"), ("'function'", lambda o: "function"), ("'kernel'", lambda o: "kernel"),
    ("'fz_k'", lambda o: "fz_k"), ("'init'", lambda o: "init"), ("'copy'", lambda o: "copy"), ("SIGNATURE", lambda o: SIGNATURE), ("SOURCE", lambda o: SOURCE),
    ("EdgeData()", lambda o: EdgeData()), ("[EdgeData()]", lambda o: [EdgeData()]),
    ("CaptureMode.GLOBAL", lambda o: CaptureMode.GLOBAL), ("InstantiateFlags.NONE", lambda o: InstantiateFlags.NONE),
    ("InstantiateFlags.AUTO_FREE_ON_LAUNCH", lambda o: InstantiateFlags.AUTO_FREE_ON_LAUNCH),
    ("NodeType.EMPTY", lambda o: NodeType.EMPTY), ("NodeType.KERNEL", lambda o: NodeType.KERNEL),
    ("GraphMemAttr.USED_MEM_CURRENT", lambda o: GraphMemAttr.USED_MEM_CURRENT),
    ("MemPoolAttr.RELEASE_THRESHOLD", lambda o: MemPoolAttr.RELEASE_THRESHOLD),
    ("[root]", lambda o: [o["root"]]), ("[root, ms]", lambda o: [o["root"], o["ms"]]),
    ("[foreign]", lambda o: [o["foreign"]]), ("[dead_n]", lambda o: [o["dead_n"]]), ("[root, None]", lambda o: [o["root"], None]),
    ("[buf, 1]", lambda o: [o["buf"], 1]), ("[buf, 2**31]", lambda o: [o["buf"], 1 << 31]), ("[1, buf]", lambda o: [1, o["buf"]]),
    ("[('empty', None, [])]", lambda o: [("empty", None, [])]),
    ("[('memset', (buf, 0, 8), [])]", lambda o: [("memset", (o["buf"], 0, 8), [])]),
    ("[('memset', (buf, 0, 8), [0])]", lambda o: [("memset", (o["buf"], 0, 8), [0])]),
    ("[('memset', 5, [])]", lambda o: [("memset", 5, [])]), ("[('kernel', (k, 1, 1, [buf, 1]), [])]",
                                                          lambda o: [("kernel", (o["k"], 1, 1, [o["buf"], 1]), [])]),
    ("[('nope', (), [])]", lambda o: [("nope", (), [])]), ("[('empty',)]", lambda o: [("empty",)]),
    ("bytearray(8)", lambda o: bytearray(8)), ("bytes(300)", lambda o: bytes(300)),
]
_LITERAL = {label: make for label, make in LITERALS}

STREAMS = ["s", "s2", "cap_s", "legacy", "dead_s"]
GRAPHS = ["g", "g2", "child", "dead_g"]
NODES = ["root", "ms", "mc", "hn", "cn", "er", "ew", "al", "fr", "kn", "cond", "foreign", "dead_n"]
NODE_LISTS = ["[root]", "[root, ms]", "[foreign]", "[dead_n]", "[]", "None", "[root, None]"]
SIZES = ["0", "1", "2", "7", "255", "256"]
BUFFERS = ["buf", "buf2", "ab", "host", "dead_b", "dead_ab", "0"]

#: Values that suit a parameter, by its name (drawn three times in four).
GOOD: dict[str, list[str]] = {
    "stream": STREAMS, "graph": GRAPHS, "child": GRAPHS, "clone": GRAPHS, "other": GRAPHS + ["kn"],
    "event": ["e", "e2", "dead_e"], "start": ["e", "e2", "dead_e"],
    "node": NODES, "nodes": NODE_LISTS, "froms": NODE_LISTS, "tos": NODE_LISTS, "dependencies": NODE_LISTS,
    "dst": BUFFERS, "src": BUFFERS, "ptr": BUFFERS, "dptr": ["al", "ab", "buf", "dead_ab", "0"],
    "data": ["bytearray(8)", "bytes(300)", "host"], "image": ["bytes(300)", "b'x'"],
    "count": SIZES, "size": SIZES, "nbytes": SIZES, "width": SIZES, "height": SIZES, "depth": SIZES,
    "n": SIZES, "min_bytes_to_keep": SIZES, "block_size": SIZES, "dynamic_shared_mem": SIZES,
    "shared_mem": SIZES, "value": SIZES, "element_size": ["1", "2", "7"], "dst_pitch": ["256", "7"],
    "src_pitch": ["256", "7"], "offset": ["0", "7"], "default": ["0", "1"], "body": ["0", "1", "2"],
    "kernel": ["k", "dead_k"], "grid": ["1", "(1, 1, 1)", "(2, 1)", "0"], "block": ["1", "(1, 1, 1)", "0"],
    "args": ["[buf, 1]", "[buf, 2**31]", "[1, buf]", "[]"], "packed": ["packed"],
    "flags": ["0", "InstantiateFlags.NONE", "InstantiateFlags.AUTO_FREE_ON_LAUNCH"],
    "mode": ["'global'", "'thread_local'", "'relaxed'", "CaptureMode.GLOBAL"],
    "attr": ["GraphMemAttr.USED_MEM_CURRENT", "MemPoolAttr.RELEASE_THRESHOLD"],
    "kind": ["'if'", "'while'", "'switch'", "'if_else'", "'function'", "'kernel'"],
    "node_type": ["NodeType.EMPTY", "NodeType.KERNEL"],
    "handle": ["h"], "fn": ["noop", "raiser", "lambda *a: 0"], "enabled": ["True", "False"],
    "name": ["'fz_k'", "'x'"], "signature": ["SIGNATURE", "None"], "source": ["SOURCE"],
    "specs": ["[('empty', None, [])]", "[('memset', (buf, 0, 8), [])]", "[('memset', (buf, 0, 8), [0])]",
              "[('memset', 5, [])]", "[('kernel', (k, 1, 1, [buf, 1]), [])]", "[('nope', (), [])]",
              "[('empty',)]"],
    "edges": ["[EdgeData()]", "None"], "edge": ["EdgeData()"], "pool": ["mp", "dead_mp", "None"],
    "device": ["0", "dev", "None"], "priority": ["0", "-1"], "options": ["()", "None"],
    "buf": ["ab", "dead_ab", "0"], "obj": ["0", "-1", "2**64", "s", "k", "buf", "buf2", "dead_b"],
    "manager": ["vm"], "a": ["'init'", "'copy'", "cnode"], "b": ["'init'", "'copy'", "cnode"],
    "single_stream": ["True", "False"], "variables": ["True", "False"],
    "index": ["0", "1", "-1", "7", "'init'", "'x'", "root", "(1, 2, 3, 4)"],  # (for [] and ``in``)
}


def make_objects() -> dict[str, Any]:
    """A fresh set of objects on the active backend, named as the programs name them."""
    o: dict[str, Any] = {}
    o["s"], o["s2"], o["cap_s"] = rt.Stream(), rt.Stream(), rt.Stream()
    o["legacy"] = rt.Stream.legacy_default()
    o["e"], o["e2"] = rt.Event(), rt.Event()
    o["buf"], o["buf2"] = rt.malloc(256), rt.malloc(256)
    o["host"] = bytearray(256)
    o["prog"] = _program()
    o["lib"] = rt.Library(o["prog"].image)
    o["k"] = o["lib"].kernel("fz_k", signature=SIGNATURE)
    g = o["g"] = rt.Graph()
    o["root"] = g.add_empty()
    o["ms"] = g.add_memset(o["buf"], 0, 8, dependencies=[o["root"]])
    o["mc"] = g.add_memcpy(o["buf2"], o["host"], 8)
    o["hn"] = g.add_host(lambda: None)
    o["child"] = rt.Graph()
    o["child"].add_empty()
    o["cn"] = g.add_child_graph(o["child"])
    o["er"] = g.add_event_record(o["e"])
    o["ew"] = g.add_event_wait(o["e2"])
    o["al"] = g.add_mem_alloc(64)
    o["fr"] = g.add_mem_free(o["al"], dependencies=[o["al"]])
    o["kn"] = g.add_kernel(o["k"], 1, 1, [o["buf"], 1])
    o["packed"] = o["k"].pack([o["buf"], 1])
    o["h"] = g.conditional_handle()
    o["cond"] = g.add_if(o["h"])
    o["nl"] = g.add_nodes([("empty", None, []), ("memset", {"dst": o["buf"], "value": 1, "count": 4}, [0])])
    o["exe"] = g.instantiate()
    o["g2"] = rt.Graph()
    o["foreign"] = o["g2"].add_empty()
    o["mp"] = rt.MemPool()
    o["ab"] = o["s"].malloc_async(64, o["mp"])
    o["dev"] = rt.current_device()
    # closed, destroyed, ended, freed
    o["dead_s"] = rt.Stream()
    o["dead_s"].close()
    o["dead_e"] = rt.Event()
    o["dead_e"].close()
    o["dead_g"] = rt.Graph()
    o["dead_g"].add_empty()
    o["dead_g"].close()
    o["dead_b"] = rt.malloc(64)
    o["dead_b"].close()
    o["dead_x"] = o["g2"].instantiate()
    o["dead_x"].close()
    o["dead_n"] = o["g2"].add_empty()
    o["dead_n"].destroy()
    dead_lib = rt.Library(o["prog"].image)
    o["dead_k"] = dead_lib.kernel("fz_k", signature=SIGNATURE)
    dead_lib.close()
    o["dead_lib"] = dead_lib
    o["dead_mp"] = rt.MemPool()
    o["dead_mp"].close()
    o["dead_ab"] = o["s2"].malloc_async(64)
    o["dead_ab"].free(o["s2"])
    ended = rt.Stream().begin_capture()
    ended.end()
    o["dead_cap"] = ended
    # the automatic compute graph: a manager, its variables, a graph of two nodes, built
    vm = o["vm"] = compute.VarManager()
    x = o["xvar"] = vm.buffer("x", o["buf2"])
    o["vvar"] = vm.value("v", 3)
    cg = o["cg"] = compute.ComputeGraph(vm, "fz")
    cg.node("init", lambda ctx: ctx.memset(x.write(), 1))
    o["cnode"] = cg.node("copy", lambda ctx: ctx.memcpy(o["host"], x.read(), 8))
    cg.build()
    o["s"].synchronize()
    o["s2"].synchronize()
    # Last: a capture in progress (relaxed, so that it does not refuse the others' malloc and such)
    o["cap"] = o["cap_s"].begin_capture("relaxed")
    o["info"] = o["cap"].info()
    return o


#: Objects whose methods and properties are called (their classes' public attributes).
OWNERS = ["s", "cap_s", "legacy", "e", "buf", "prog", "lib", "k", "g", "root", "ms", "mc", "hn", "cn", "er", "ew",
          "al", "fr", "kn", "h", "cond", "nl", "exe", "mp", "ab", "dev", "cap", "info",
          "dead_s", "dead_e", "dead_g", "dead_b", "dead_x", "dead_n", "dead_k", "dead_lib", "dead_mp",
          "dead_ab", "dead_cap", "vm", "xvar", "vvar", "cg", "cnode"]

#: The module's constructors and functions (called as ``rt.<name>``).
MODULE = ["malloc", "current_device", "exchange_capture_mode", "link", "Stream", "Event", "Graph",
          "MemPool", "Program", "Device", "Library", "ConditionalHandle", "ExternalSemaphore",
          "SemaphoreSignal", "SemaphoreWait", "capabilities", "compute.ComputeGraph", "compute.VarManager",
          "compute.infer"]


#: Protocols used through Python's syntax and builtins (where a class defines them): ``repr``
#: never raises; ``[]`` may raise what a sequence or mapping raises (IndexError, KeyError, and
#: TypeError for an index that is not an int or a key that is not hashable) besides
#: pygraphrt's errors.
PROTOCOL = {
    "__repr__": lambda obj, arg: repr(obj),
    "__int__": lambda obj, arg: int(obj),
    "__len__": lambda obj, arg: len(obj),
    "__iter__": lambda obj, arg: list(obj),
    "__getitem__": lambda obj, arg: obj[arg],
    "__contains__": lambda obj, arg: arg in obj,
    "__enter__": lambda obj, arg: obj.__enter__(),
    "__exit__": lambda obj, arg: obj.__exit__(None, None, None),
    "__eq__": lambda obj, arg: obj == arg,
    "__hash__": lambda obj, arg: hash(obj),
}


def _defines(cls: type, dunder: str) -> bool:
    """Whether ``cls`` (not object) defines ``dunder``."""
    for klass in cls.__mro__:
        if klass is object:
            return False
        if dunder in klass.__dict__:
            return klass.__dict__[dunder] is not None
    return False


def targets(objs: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(owner, attribute, how): ``call``, ``get``, ``set`` or ``protocol``; read off the classes."""
    out: list[tuple[str, str, str]] = []
    for owner in OWNERS:
        cls = type(objs[owner])
        for attr in sorted(dir(cls)):
            if attr.startswith("_") or f"{cls.__name__}.{attr}" in EXCLUDED:
                continue
            raw = inspect.getattr_static(cls, attr)
            if isinstance(raw, property):
                out.append((owner, attr, "get"))
                if raw.fset is not None:
                    out.append((owner, attr, "set"))
            elif callable(getattr(cls, attr)):
                out.append((owner, attr, "call"))
        for dunder in PROTOCOL:
            if _defines(cls, dunder):
                out.append((owner, dunder, "protocol"))
    for name in MODULE:
        if f"{name}.__init__" not in EXCLUDED:
            out.append(("rt", name, "call"))
    return out


def _module_attr(name: str) -> Any:
    """``rt.<name>``; ``compute.<name>`` for a dotted one."""
    obj: Any = rt
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def parameters(objs: dict[str, Any], owner: str, attr: str) -> list[inspect.Parameter]:
    fn = _module_attr(attr) if owner == "rt" else getattr(objs[owner], attr)
    try:
        return list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # (a C method: its text signature, where it has one)
        return []


Token = Any  # a name of ``make_objects``' dict, a literal's label, or a list of tokens


def resolve(objs: dict[str, Any], token: Token) -> Any:
    if isinstance(token, list):
        return [resolve(objs, t) for t in token]
    if token in _LITERAL:
        return _LITERAL[token](objs)
    return objs[token]


def describe(token: Token) -> str:
    if isinstance(token, list):
        return "[" + ", ".join(describe(t) for t in token) + "]"
    return token


ANY_TOKENS = sorted(_LITERAL) + sorted(set(OWNERS) | {"s2", "e2", "buf2", "host", "g2", "child", "foreign",
                                                      "cap_s"})
_POSITIVE = re.compile(r"^(\d+|2\*\*\d+|10\*\*\d+|Index\(3\)|True)$")


def token_strategy(name: str) -> st.SearchStrategy[Token]:
    anything = ANY_TOKENS
    if name in ADDRESS_PARAMS:  # no positive int as an address (see the docstring)
        anything = [t for t in ANY_TOKENS if not _POSITIVE.match(t) or t == "0"] + ["2**64", "10**30"]
    elif name == "n":  # (a switch node's size: see SWEEP)
        anything = [t for t in ANY_TOKENS if t != "2**31"]
    good = GOOD.get(name)
    anywhere = st.sampled_from(anything)
    if not good:
        return anywhere
    return st.sampled_from([True, True, True, False]).flatmap(
        lambda suits: st.sampled_from(good) if suits else anywhere)


@st.composite
def calls(draw: Any, target_list: list[tuple[str, str, str]], params: dict[tuple[str, str], list[Any]]) -> Any:
    owner, attr, how = draw(st.sampled_from(target_list))
    if how == "get":
        return (owner, attr, how, [], {})
    if how in ("set", "protocol"):
        return (owner, attr, how, [draw(token_strategy("index" if how == "protocol" else attr))], {})
    args: list[Token] = []
    kw: dict[str, Token] = {}
    for p in params[(owner, attr)]:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            if p.default is p.empty or draw(st.booleans()):
                if p.default is not p.empty and draw(st.booleans()):
                    kw[p.name] = draw(token_strategy(p.name))
                else:
                    if kw:  # (a positional after a keyword: Python refuses; keep the call well formed)
                        break
                    args.append(draw(token_strategy(p.name)))
        elif p.kind == p.VAR_POSITIONAL:
            args.extend(draw(st.lists(token_strategy(p.name), max_size=3)))
        elif p.kind == p.KEYWORD_ONLY:
            if draw(st.integers(0, 2)) == 0:
                kw[p.name] = draw(token_strategy(p.name))
        elif p.kind == p.VAR_KEYWORD:
            if draw(st.integers(0, 3)) == 0:
                kw[draw(st.sampled_from(["priority", "cluster_dim", "bogus", "edge"]))] = draw(token_strategy("x"))
    if args and draw(st.integers(0, 9)) == 0:  # a required argument left out, now and then
        args.pop()
    return (owner, attr, how, args, kw)


def show(call: Any) -> str:
    owner, attr, how, args, kw = call
    if how == "get":
        return f"{owner}.{attr}"
    if how == "set":
        return f"{owner}.{attr} = {describe(args[0])}"
    if how == "protocol":
        return {"__repr__": f"repr({owner})", "__int__": f"int({owner})", "__len__": f"len({owner})",
                "__iter__": f"list({owner})", "__getitem__": f"{owner}[{describe(args[0])}]",
                "__contains__": f"{describe(args[0])} in {owner}", "__eq__": f"{owner} == {describe(args[0])}",
                "__hash__": f"hash({owner})"}.get(attr, f"{owner}.{attr}(...)")
    parts = [describe(a) for a in args] + [f"{k}={describe(v)}" for k, v in kw.items()]
    return f"{owner}.{attr}({', '.join(parts)})"


_BINDING = re.compile(r"missing \d+ required|takes \d+ positional|takes from \d+ to \d+ positional|"
                      r"takes no arguments|unexpected keyword argument|multiple values for argument|"
                      r"takes exactly one argument|takes at most \d+|positional argument")


def _binding_error(fn: Any, args: list[Any], kw: dict[str, Any], exc: TypeError) -> bool:
    """Python's own refusal of the arguments (too many, too few, unknown keyword), raised by the
    call itself or by a method that passes ``*args, **kw`` on (Node's builders)."""
    try:
        inspect.signature(fn).bind(*args, **kw)
    except TypeError:
        return True
    except ValueError:
        pass
    return bool(_BINDING.search(str(exc)))


def _capturing(stream: Any) -> bool | None:
    if not stream.is_valid:
        return None
    return stream.is_capturing


def tear_down(objs: dict[str, Any], mode: Any) -> None:
    """End every capture the program left open and restore thread-wide state for the next."""
    for v in list(objs.values()):  # (an invalidated capture is not ``is_capturing``, but runs till ended)
        if isinstance(v, rt.Stream) and v.is_valid and v.capture_status is not CaptureStatus.NONE:
            cap = v._capture
            if cap is not None:
                cap.abort()
            else:  # begun outside pygraphrt's Capture: end it through the runtime
                b = v.backend
                out = b.ffi.new(f"{b.ops.prefix}Graph_t *")
                b.lib.cudaStreamEndCapture(v.handle, out)
                if out[0] != b.ffi.NULL:
                    b.lib.cudaGraphDestroy(out[0])
    rt.exchange_capture_mode(mode)
    rt.MemPool.default().set_current()
    # No capture may outlive the streams it ran on: pygraphrt counts none still running, and
    # the runtime has none that refuses an allocation (a global-mode one would).
    if captures.active:
        raise AssertionError(f"{captures.active} capture(s) still running after the program's streams "
                             "ended theirs")
    try:
        rt.malloc(1).close()
    except errors.StreamCaptureError as exc:
        raise AssertionError(f"a capture outlived the program's objects: {exc}") from exc


class Stats:
    calls = returned = refused = checked = 0


# ------------------------------------------------------------------ what successful calls return
UNCHECKED = object()  # a return annotation this check cannot test (Any, a type variable, ...)


@functools.lru_cache(maxsize=None)
def _annotation_namespace() -> dict[str, Any]:
    """Every public name of pygraphrt's loaded modules (annotations are strings, postponed; some
    name classes their module imports only for type checking)."""
    ns: dict[str, Any] = {}
    for name, module in list(sys.modules.items()):
        if name == "pygraphrt" or name.startswith("pygraphrt."):
            ns.update({k: v for k, v in vars(module).items() if not k.startswith("_") and isinstance(v, type)})
    return ns


def _return_hint(target: Any, attr: str, how: str, fn: Any) -> Any:
    """The declared type of what ``target.attr`` returns (a property's getter, a method, a
    module function; a class called is its constructor), or UNCHECKED."""
    if how == "get":
        raw = inspect.getattr_static(type(target), attr, None)
        func = raw.fget if isinstance(raw, property) else None
    elif isinstance(fn, type):
        return fn
    else:
        func = getattr(fn, "__func__", fn)
    if func is None:
        return UNCHECKED
    try:
        hints = typing.get_type_hints(func, globalns={**_annotation_namespace(), **getattr(func, "__globals__", {})})
    except Exception:  # an annotation naming what cannot be resolved here: not checked (counted)
        return UNCHECKED
    return hints.get("return", UNCHECKED)


def conforms(value: Any, hint: Any, target: Any) -> bool | None:
    """Whether ``value`` is of the annotated type ``hint`` (None: the form cannot be checked)."""
    if hint is Any or isinstance(hint, typing.TypeVar) or hint is UNCHECKED:
        return None
    if hint is None or hint is type(None):
        return value is None
    if getattr(typing, "Self", None) is hint or repr(hint) == "typing_extensions.Self":
        return isinstance(value, type(target))
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        results = [conforms(value, a, target) for a in typing.get_args(hint)]
        return True if any(results) else (None if None in results else False)
    if origin is typing.Literal:
        return value in typing.get_args(hint)
    if origin is not None:
        hint = origin  # list[int] -> list, Iterator[Node] -> Iterator, Callable[..., X] -> Callable
    if hint is float:  # PEP 484: an int is acceptable where a float is declared
        return isinstance(value, (int, float))
    if isinstance(hint, type):
        try:
            return isinstance(value, hint)
        except TypeError:
            return None
    return None


def check_return(call: Any, target: Any, fn: Any, value: Any, stats: type[Stats]) -> None:
    owner, attr, how = call[:3]
    hint = _return_hint(target, attr, how, fn)
    ok = conforms(value, hint, target)
    if ok is False:
        raise AssertionError(f"{show(call)} returned {type(value).__name__} {value!r:.120}, "
                             f"but is annotated to return {hint}")
    if ok is True:
        stats.checked += 1


def check_refusal(call: Any, exc: errors.GraphRTError) -> None:
    """A refusal names what refused it and says what it is: a specific class, or the vendor's
    error name where the runtime's error has no class of its own."""
    if not isinstance(exc.api, str) or not exc.api or not str(exc).startswith(f"{exc.api} failed"):
        raise AssertionError(f"{show(call)} raised {type(exc).__name__} naming no API: {exc}")
    if type(exc) in (errors.GraphRTError, errors.StreamCaptureError) and not (exc.name and exc.vendor):
        raise AssertionError(f"{show(call)} raised a bare {type(exc).__name__} (neither a specific class "
                             f"nor the vendor's error): {exc}")


def run_call(objs: dict[str, Any], call: Any, stats: type[Stats], base: Any = None) -> None:
    """Make one call and check what must hold (see the docstring); ``base``: in the sweep, the
    same call with suitable values."""
    _undefined_calls(f"before {show(call)}, something")
    try:
        _run_call(objs, call, stats, base)
    finally:
        _undefined_calls(show(call))


def _undefined_calls(during: str) -> None:
    """Fail if the simulator was given what a real runtime has undefined behaviour for: a handle
    that is not a live one of its kind, which a GPU's runtime follows and may crash on (as
    ``exe.launch(buf)`` did: a buffer's address taken as a stream)."""
    if BACKEND == "sim":
        seen = sim.undefined_calls(clear=True)
        if seen:
            raise AssertionError(f"{during} passed the runtime what it has undefined behaviour for (a GPU's "
                                 "runtime may crash): " + "; ".join(f"{api}: {why}" for api, why in seen))


def _run_call(objs: dict[str, Any], call: Any, stats: type[Stats], base: Any = None) -> None:
    owner, attr, how, arg_tokens, kw_tokens = call
    target = rt if owner == "rt" else objs[owner]
    args = [resolve(objs, t) for t in arg_tokens]
    kw = {k: resolve(objs, t) for k, t in kw_tokens.items()}
    streams = {name: v for name, v in objs.items() if isinstance(v, rt.Stream)}
    graphs = {name: v for name, v in objs.items() if isinstance(v, rt.Graph) and v.is_valid}
    before = {name: _capturing(v) for name, v in streams.items()}
    sizes = {name: len(v) for name, v in graphs.items()}
    current = os.environ.get("PYGRAPHRT_FUZZ_CURRENT")
    if current:
        with open(current, "w") as f:
            f.write(show(call) + "\n")
    stats.calls += 1
    fn = None
    try:
        if how == "get":
            check_return(call, target, None, getattr(target, attr), stats)
        elif how == "set":
            setattr(target, attr, args[0])
        elif how == "protocol":
            try:
                PROTOCOL[attr](target, args[0])
            except (IndexError, KeyError, TypeError) as exc:
                if attr == "__repr__" or not (attr == "__getitem__" and (
                        not isinstance(exc, TypeError) or re.search("indices must be|unhashable type", str(exc)))):
                    raise
                stats.refused += 1
                return
        else:
            fn = _module_attr(attr) if owner == "rt" else getattr(target, attr)
            result = fn(*args, **kw)
            if isinstance(result, rt.Capture):  # (a capture to end later)
                objs.setdefault("_made", []).append(result)
            check_return(call, target, fn, result, stats)
        stats.returned += 1
        return
    except ImportError as exc:  # an optional dependency missing: allowed where it says what to install
        if "pip install" not in str(exc):
            raise AssertionError(f"{show(call)} raised {type(exc).__name__}: {exc}") from exc
        stats.refused += 1
    except errors.GraphRTError as exc:
        if how == "protocol" and attr == "__repr__":
            raise AssertionError(f"{show(call)} raised {type(exc).__name__}: {exc}") from exc
        check_refusal(call, exc)
        if base is not None and base is not call and fn is not None and not _refusal_of_the_value(call, exc):
            _same_refusal_with_suitable_values(objs, call, base, fn, exc)
        stats.refused += 1
    except TypeError as exc:
        if fn is None or not _binding_error(fn, args, kw, exc):
            raise AssertionError(f"{show(call)} raised {type(exc).__name__}: {exc}") from exc
        stats.refused += 1
    except AssertionError:  # (a check above: a return value not of its annotated type, ...)
        raise
    except Exception as exc:
        raise AssertionError(f"{show(call)} raised {type(exc).__name__}: {exc}") from exc
    # It raised: nothing may have changed.
    for name, v in streams.items():
        if before[name] is False and _capturing(v):
            raise AssertionError(f"{show(call)} failed and left {name} capturing")
    for name, v in graphs.items():
        if v.is_valid and len(v) != sizes[name]:
            raise AssertionError(f"{show(call)} failed and changed {name}'s node count "
                                 f"from {sizes[name]} to {len(v)}")


HUGE = {"2**63", "2**64", "10**30"}


def _refusal_of_the_value(call: Any, exc: errors.GraphRTError) -> bool:
    """Whether ``exc`` is what a wrong value is refused with: InvalidValue; InvalidDevice for a
    device ordinal past the runtime's count (issue 40: named with the call and the count);
    InvalidResourceHandle for a closed object passed (or called); OutOfMemory for a size no device
    has; the runtime's own refusal, named by the vendor's error (a kernel name it does not have, a
    path it cannot open); NotSupported naming the versions for a value that asks for an API the
    loaded runtime lacks (``spin_wait=True`` needs cudaLaunchHostFunc_v2, CUDA 13.2: the GPU API
    fuzz on CUDA 13.0, where the binding names the version, and on 12.9, whose binding lacks it)."""
    tokens = [t for t in [call[0], *call[3], *call[4].values()] if isinstance(t, str)]  # (the target too)
    return (isinstance(exc, errors.InvalidValue)
            or (isinstance(exc, errors.InvalidDevice) and "does not exist" in str(exc))
            or (isinstance(exc, errors.InvalidResourceHandle) and any("dead_" in t for t in tokens))
            or (isinstance(exc, errors.OutOfMemory) and any(t in HUGE for t in tokens))
            or (isinstance(exc, errors.NotSupported)
                and (" or newer; " in str(exc) or " is not exported by this runtime" in str(exc)))
            or bool(exc.name and exc.vendor))


def _same_refusal_with_suitable_values(objs: dict[str, Any], call: Any, base: Any, fn: Any,
                                       exc: errors.GraphRTError) -> None:
    """A wrong value is refused as InvalidValue: a sweep call refused with another class was
    refused for the objects' state, so the call with suitable values is refused with that class
    too (a refused call changes nothing, so the state is the same)."""
    try:
        fn(*[resolve(objs, t) for t in base[3]], **{k: resolve(objs, t) for k, t in base[4].items()})
    except errors.GraphRTError as again:
        if type(again) is type(exc):
            return
        outcome = f"{type(again).__name__}: {again}"
    except Exception as again:  # (reported as the sweep call's failure)
        outcome = f"{type(again).__name__}: {again}"
    else:
        outcome = "returned"
    raise AssertionError(f"{show(call)} raised {type(exc).__name__} ({exc}), not InvalidValue, while the same "
                         f"call with suitable values, {show(base)}, {outcome}") from exc


#: What the sweep gives each parameter in turn (the others at a value that suits them).  No 2**31:
#: as a switch node's size it is valid to the runtimes (an unsigned int), and the simulator then
#: makes 2**31 body graphs, until memory runs out.
SWEEP = ["None", "0", "-1", "2**63", "2**64", "10**30", "1.5", "nan", "'x'", "b'x'", "True", "object()", "(1, 2, 3, 4)",
         "[None]", "{}", "Index(-1)", "iter([1])", "noop", "s", "dead_s", "g", "dead_g", "root", "dead_n",
         "foreign", "e", "dead_e", "buf", "dead_b", "k", "dead_k", "exe", "dead_x", "mp", "cnode"]


def _sweep_value(name: str, token: str) -> bool:
    return name not in ADDRESS_PARAMS or not _POSITIVE.match(token) or token == "0"


def sweep_calls(target_list: list[tuple[str, str, str]],
                params: dict[tuple[str, str], list[Any]]) -> Any:
    """Per target, its calls: each parameter given each of ``SWEEP`` in turn, the others (the
    required ones) the first value that suits their name."""
    for owner, attr, how in target_list:
        calls: list[Any] = []
        if how == "get":
            calls.append((owner, attr, how, [], {}))
        elif how in ("set", "protocol"):
            name = "index" if how == "protocol" else attr
            calls += [(owner, attr, how, [t], {}) for t in SWEEP if _sweep_value(name, t)]
        else:
            ps = [p for p in params[(owner, attr)] if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
            positional = [p for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                          and p.default is p.empty]
            base = [GOOD.get(p.name, ["0"])[0] for p in positional]
            calls.append((owner, attr, how, list(base), {}))
            for i, p in enumerate(ps):
                for t in SWEEP:
                    if not _sweep_value(p.name, t):
                        continue
                    if p in positional:
                        args = list(base)
                        args[positional.index(p)] = t
                        calls.append((owner, attr, how, args, {}))
                    else:
                        calls.append((owner, attr, how, list(base), {p.name: t}))
        yield owner, attr, calls


def main(examples: int) -> None:
    rt.use(BACKEND)
    if BACKEND == "sim":
        sim.register_kernel("fz_k", lambda ctx, y, n: None, signature=SIGNATURE)
    mode = rt.exchange_capture_mode("global")
    rt.exchange_capture_mode(mode)
    probe = make_objects()
    target_list = targets(probe)
    params = {(o, a): parameters(probe, o, a) for o, a, how in target_list if how == "call"}
    typed = sum(_return_hint(_module_attr(a) if o == "rt" else probe[o], a, how,
                             _module_attr(a) if o == "rt" else (getattr(probe[o], a) if how == "call" else None))
                is not UNCHECKED for o, a, how in target_list if how in ("get", "call"))
    tear_down(probe, mode)
    del probe

    seed = os.environ.get("PYGRAPHRT_FUZZ_SEED") or None  # (exploring: other programs than the test's)

    @settings(max_examples=examples, deadline=None, derandomize=seed is None, database=None,
              suppress_health_check=list(HealthCheck), print_blob=False)
    @hypothesis.seed(int(seed or 0))
    @given(st.lists(calls(target_list, params), min_size=1, max_size=4))
    def program(call_list: list[Any]) -> None:
        run_program(call_list)

    log = os.environ.get("PYGRAPHRT_FUZZ_LOG")  # (exploring: every program, one line each, as it starts)
    settle = os.environ.get("PYGRAPHRT_FUZZ_SYNC")  # (exploring: the device idle before objects go)

    only = os.environ.get("PYGRAPHRT_FUZZ_ONLY")  # (exploring: bisecting, "A:B")
    first, stop = (int(x) for x in only.split(":")) if only else (0, None)
    drawn = [0]

    def run_program(call_list: list[Any]) -> None:
        index = drawn[0]
        drawn[0] += 1
        if index < first or (stop is not None and index >= stop):
            return
        if log:
            with open(log, "a") as f:
                f.write(f"#{index} ")
        run_on_fresh_objects(call_list)

    def run_on_fresh_objects(call_list: list[Any], sweep: bool = False) -> None:
        if log:
            with open(log, "a") as f:
                f.write(" ; ".join(show(c) for c in call_list) + "\n")
        objs = make_objects()
        try:
            for call in call_list:
                run_collecting(objs, call, call_list[0] if sweep else None)
        finally:
            if settle:
                try:
                    rt.current_device().synchronize()
                except errors.GraphRTError:
                    pass
            try:
                tear_down(objs, mode)
            except AssertionError as exc:
                calls_made = "; ".join(show(c) for c in call_list[:3])
                raise AssertionError(f"{exc} (after {calls_made}{' ...' if len(call_list) > 3 else ''})") from None

    def run_collecting(objs: dict[str, Any], call: Any, base: Any = None) -> None:
        if collect is None:
            run_call(objs, call, Stats, base)
            return
        try:  # (collecting: every kind of failure once, the run goes on)
            run_call(objs, call, Stats, base)
        except AssertionError as exc:
            cause = exc.__cause__
            owner = "rt" if call[0] == "rt" else type(objs[call[0]]).__name__
            key = (owner, call[1], type(cause).__name__ if cause else str(exc).split(" failed ")[-1][:40])
            collect.setdefault(key, str(exc))

    collect: dict[Any, str] | None = {} if os.environ.get("PYGRAPHRT_FUZZ_COLLECT") else None
    # First the sweep (each parameter of each target given each odd value: one fresh set of
    # objects per target), then hypothesis' programs (several calls on one set).
    progress = os.environ.get("PYGRAPHRT_FUZZ_PROGRESS")  # (exploring: where the time goes, where it hangs)
    if progress:
        import faulthandler
        import signal
        import time

        faulthandler.register(signal.SIGTERM, chain=True)  # (a timeout's SIGTERM shows where it was)
        t0 = time.perf_counter()
    sweep = sweep_calls(target_list, params) if os.environ.get("PYGRAPHRT_FUZZ_SWEEP", "1") != "0" else ()
    for i, (owner, attr, swept_calls) in enumerate(sweep):
        if progress and i % 50 == 0:
            print(f"[{time.perf_counter() - t0:7.1f}s] sweep target {i} {owner}.{attr}", file=sys.stderr, flush=True)
        run_on_fresh_objects(swept_calls, sweep=True)
    if progress:
        print(f"[{time.perf_counter() - t0:7.1f}s] sweep done", file=sys.stderr, flush=True)
    swept = Stats.calls
    program()
    for key, text in sorted((collect or {}).items()):
        print(key, "\n   ", text[:300])
    print("ok", examples, Stats.calls, Stats.returned, Stats.refused, len(target_list), swept, typed, Stats.checked)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 500)
