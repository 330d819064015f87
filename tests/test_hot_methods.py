"""The compiled hot methods (``GraphExec.launch``, ``Graph.add_empty``, ``Graph.add_memset``,
``Graph.add_kernel``, ``Graph.add_memcpy`` in C: bindgen/hot_methods.c, installed by pygraphrt.graph._hot) without a GPU.

Against the fake libcudart, the same script runs in ABI mode (the Python methods) and in
compiled mode: every call must give the same result or the same error, and in compiled mode
the common calls must not run the Python method while every unusual one must (a profile hook
tells which ran) -- odd arguments, another graph's nodes, edge data, closed handles, a
runtime error, a graph with host callables, the simulator's objects in the same process.
Against the do-nothing libcudart of benchmarks/, many calls on each path must leave no
reference and no memory behind.
"""

from __future__ import annotations

import re

import pytest

from .test_cuda13x import run_py
from .test_fast_mode import fake_cudart, needs_fast, run_mode  # noqa: F401  (fixtures)
from .test_launch_hot import stub_cudart  # noqa: F401

pytestmark = pytest.mark.headers

# Each case prints "label | result | path": the result must be the same in both modes; the path
# is "c" where the C method did the call, "py" where the Python method ran ("?": a TypeError
# of arguments that do not bind, raised before either could tell).
PROBE = """
    import sys
    import pygraphrt as rt
    from pygraphrt import errors, lowlevel
    from pygraphrt.enums import DEFAULT_EDGE, NodeType
    from pygraphrt.graph import Graph, GraphExec
    from pygraphrt._handles import Owned
    PY_METHODS = {"add_empty", "add_memset", "launch", "add_kernel", "add_memcpy"}

    def case(label, fn):
        seen = []
        sys.setprofile(lambda frame, event, arg: seen.append(frame.f_code.co_name) if event == "call" else None)
        try:
            result = fn()
        except Exception as exc:
            result = f"{type(exc).__name__}: {exc}"
        finally:
            sys.setprofile(None)
        # (a call its arguments cannot bind to fails before any frame: which method ran is unknown)
        path = "py" if PY_METHODS & set(seen) else "?" if str(result).startswith("TypeError") else "c"
        print(label, "|", result, "|", path)

    def borrowed_buffer(address, size):  # the fake has no cudaMalloc: a borrowed address
        buf = rt.DeviceBuffer.__new__(rt.DeviceBuffer)
        Owned.__init__(buf, lowlevel.backend_object(), lowlevel.ffi.cast("void *", address), False)
        buf.size, buf._address = size, address
        return buf
"""

ADD = PROBE + """
    g = rt.Graph()
    r = g.add_empty()
    names = {r: "r"}
    def node(n):
        if isinstance(n, str):
            return n
        names.setdefault(n, f"n{len(names)}")
        ok = g._wrap(n.handle) is n and n.graph is g and n.handle in g._table()
        return f"{type(n).__name__} {names[n]} deps={[names.get(d, '?') for d, _ in n.dependencies]} {ok}"
    many = [g.add_empty() for _ in range(17)]
    for i, m in enumerate(many):
        names[m] = f"m{i}"
    case("no dependencies", lambda: node(g.add_empty()))
    case("empty list", lambda: node(g.add_empty(dependencies=[])))
    case("None", lambda: node(g.add_empty(dependencies=None, edges=None)))
    case("one", lambda: node(g.add_empty(dependencies=[r])))
    case("tuple of two", lambda: node(g.add_empty(dependencies=(r, many[0]))))
    case("sixteen", lambda: node(g.add_empty(dependencies=many[:16])))
    case("seventeen", lambda: node(g.add_empty(dependencies=many)))
    case("generator", lambda: node(g.add_empty(dependencies=(d for d in [r]))))
    # other sequences of one (the Python methods' pattern takes any; the C hands them over)
    import collections
    case("deque of one", lambda: node(g.add_empty(dependencies=collections.deque([r]))))
    case("range of one", lambda: node(g.add_empty(dependencies=range(1))))
    case("string of one", lambda: node(g.add_empty(dependencies="r")))
    case("dict of one", lambda: node(g.add_empty(dependencies={r: 1})))
    case("builder", lambda: node(r.empty()))
    case("default edge data", lambda: node(g.add_empty(dependencies=[r], edges=[DEFAULT_EDGE])))
    other = rt.Graph().add_empty()
    case("another graph's node", lambda: node(g.add_empty(dependencies=[other])))
    case("not a node", lambda: node(g.add_empty(dependencies=[42])))
    dead = g.add_empty()
    dead._handle = None  # what Node.destroy leaves
    case("destroyed node", lambda: node(g.add_empty(dependencies=[dead])))
    case("positional", lambda: node(g.add_empty([r])))
    case("unknown keyword", lambda: node(g.add_empty(deps=[r])))
    class MyGraph(Graph):
        pass
    case("subclass", lambda: type(MyGraph().add_empty()).__name__)
    case("unbound call", lambda: node(Graph.add_empty(g, dependencies=[r])))
    buf = borrowed_buffer(a, 32)
    def params(n):
        p = n.params
        return {**p, "dst": p["dst"] - a}
    case("memset int", lambda: (node(g.add_memset(a, 7, 16, dependencies=[r])), params(g.nodes()[-1])))
    case("memset keywords", lambda: params(g.add_memset(dst=a + 8, value=1, count=2, element_size=2, height=3,
                                                        pitch=8)))
    case("memset 4-byte max", lambda: g.add_memset(a, 2**32 - 1, 1, element_size=4).params["value"])
    case("memset buffer", lambda: (node(g.add_memset(buf, 9, 4, dependencies=(r,))), buf in g._keep,
                                   g.nodes()[-1].params["dst"] == a))
    case("memset value too big", lambda: g.add_memset(a, 256, 1))
    case("memset element size 3", lambda: g.add_memset(a, 1, 1, element_size=3))
    case("memset bool value", lambda: g.add_memset(a, True, 1).params["value"])
    case("memset negative count", lambda: g.add_memset(a, 1, -1))
    case("memset address 2**64", lambda: g.add_memset(2**64, 1, 1))
    case("memset cffi pointer", lambda: g.add_memset(lowlevel.ffi.cast("void *", a), 1, 1).params["dst"] == a)
    case("memset dst twice", lambda: g.add_memset(a, 1, 1, dst=a))
    case("memset too few", lambda: g.add_memset(a, 1))
    case("memset edge data", lambda: node(g.add_memset(a, 1, 1, dependencies=[r], edges=[DEFAULT_EDGE])))
    case("memset another graph's node", lambda: g.add_memset(a, 1, 1, dependencies=[other]))
    case("memset deque of one", lambda: node(g.add_memset(a, 5, 4, dependencies=collections.deque([r]))))
    case("memset tuple of one", lambda: node(g.add_memset(a, 5, 4, dependencies=(r,))))
    case("memset range of one", lambda: node(g.add_memset(a, 5, 4, dependencies=range(1))))
    case("memset string of one", lambda: node(g.add_memset(a, 5, 4, dependencies="r")))
    case("memset, buffer kept once", lambda: (g.add_memset(buf, 1, 1), g._keep.count(buf)))
    others = [borrowed_buffer(a + 8 * i, 8) for i in range(8)]
    case("memset, buffer past the keep window", lambda: ([g.add_memset(o, 1, 1) for o in others],
                                                         g.add_memset(buf, 1, 1), g._keep.count(buf),
                                                         g._keep[-9:] == [*others, buf])[2:])
    closed = borrowed_buffer(a, 8)
    closed.close()
    case("memset closed buffer", lambda: g.add_memset(closed, 1, 1))
    case("bulk specs", lambda: [node(n) for n in g.add_nodes([("empty", None, []), ("empty", None, [0]),
                                                              ("memset", {"dst": a, "value": 3, "count": 4}, ["r"]),
                                                              ("empty", None, [1, 2])], names={"r": r})])
    print("nodes", len(g.nodes()), len(g._table()))
    case("full graph", lambda: [g.add_empty(dependencies=[r]) for _ in range(64)])
    case("full graph, memset", lambda: g.add_memset(a, 1, 1))
    g.close()
    case("closed graph", lambda: g.add_empty())
    case("closed graph, memset", lambda: g.add_memset(a, 1, 1))
"""

# 1-D copy nodes: each node made is read back (the fake keeps its copy parameters).
COPY = PROBE + """
    g = rt.Graph()
    r = g.add_empty()
    many = [g.add_empty() for _ in range(17)]
    names = {r: "r", **{m: f"m{i}" for i, m in enumerate(many)}}
    ops = lowlevel.backend_object().ops
    def copy(n):
        p = n._query(ops.memcpy3d_params_type, "GraphMemcpyNodeGetParams")
        names.setdefault(n, f"n{len(names)}")
        ok = g._wrap(n.handle) is n and n.graph is g and n.handle in g._nodes
        at = lambda x: n._addr(x) - a if a <= n._addr(x) < a + 64 else n._addr(x)
        return (type(n).__name__, names[n], at(p.dstPtr.ptr), at(p.srcPtr.ptr), p.extent.width, int(p.kind),
                [names.get(d, "?") for d, _ in n.dependencies], ok)
    buf = borrowed_buffer(a + 32, 16)
    case("copy ints", lambda: copy(g.add_memcpy(a, a + 16, 8, dependencies=[r])))
    case("copy keywords", lambda: copy(g.add_memcpy(dst=a + 4, src=a + 8, count=4, dependencies=(r, many[0]),
                                                    edges=None, device=None)))
    case("copy device 0", lambda: copy(g.add_memcpy(a, a + 8, 2, device=0)))
    case("copy zero bytes", lambda: copy(g.add_memcpy(a, a, 0)))
    case("copy buffer dst", lambda: (copy(g.add_memcpy(buf, a, 4)), g._keep.count(buf)))
    case("copy buffer src, kept once", lambda: (copy(g.add_memcpy(a, buf, 4)), g._keep.count(buf)))
    case("copy sixteen", lambda: copy(g.add_memcpy(a, a + 8, 1, dependencies=many[:16])))
    case("copy seventeen", lambda: copy(g.add_memcpy(a, a + 8, 1, dependencies=many)))
    case("copy builder", lambda: copy(r.memcpy(a, a + 8, 1)))
    case("copy unbound call", lambda: copy(Graph.add_memcpy(g, a, a + 8, 1)))
    case("copy edge data", lambda: copy(g.add_memcpy(a, a + 8, 1, dependencies=[r], edges=[DEFAULT_EDGE])))
    case("copy cffi pointer", lambda: copy(g.add_memcpy(lowlevel.ffi.cast("void *", a), a + 8, 1)))
    case("copy host bytes", lambda: copy(g.add_memcpy(a, b"abcd", 4))[:2])
    case("copy bool count", lambda: g.add_memcpy(a, a + 8, True))
    case("copy negative count", lambda: g.add_memcpy(a, a + 8, -1))
    case("copy count 2**64", lambda: g.add_memcpy(a, a + 8, 2**64))
    case("copy address 2**64", lambda: g.add_memcpy(2**64, a, 1))
    case("copy negative address", lambda: g.add_memcpy(a, -8, 1))
    case("copy None", lambda: g.add_memcpy(None, a, 1))
    closed = borrowed_buffer(a, 8)
    closed.close()
    case("copy closed buffer", lambda: g.add_memcpy(a, closed, 1))
    other = rt.Graph().add_empty()
    case("copy another graph's node", lambda: g.add_memcpy(a, a + 8, 1, dependencies=[other]))
    case("copy device 1", lambda: g.add_memcpy(a, a + 8, 1, device=1))
    case("copy too few", lambda: g.add_memcpy(a, a + 8))
    case("copy count twice", lambda: g.add_memcpy(a, a + 8, 1, count=1))
    class MyGraph(Graph):
        pass
    case("copy subclass", lambda: type(MyGraph().add_memcpy(a, a + 8, 1)).__name__)
    print("nodes", len(g.nodes()), len(g._nodes))
    case("full graph, copy", lambda: [g.add_memcpy(a, a + 8, 1) for _ in range(64)])
    g.close()
    case("closed graph, copy", lambda: g.add_memcpy(a, a + 8, 1))
"""

# Kernel nodes: the fake's kernels all take FAKE_KERNEL_PARAMS's eight parameters and it keeps
# copies of the values, so each node is read back (node.params decodes them by the signature).
# A kernel of the fake (FAKE_KERNEL_PARAMS lays out this signature), a buffer of the probe's bytes,
# and arguments for it: ARGS, or args((index, value), ...) with some changed.
FAKE_KERNEL = """
    import ctypes
    from pygraphrt.kernels import Kernel
    SIG = "float *x, int n, double a, unsigned char c, short h, float f, long long q, unsigned int u"
    k = Kernel.wrap(0x5000, signature=SIG, kind="kernel", name="fake")
    buf = borrowed_buffer(a + 16, 32)
    ARGS = (a, 7, 2.5, 255, -3, 1.5, -2**63, 2**32 - 1)
    def args(*changes):
        v = list(ARGS)
        for i, x in changes:
            v[i] = x
        return tuple(v)
"""

KERNEL = PROBE + FAKE_KERNEL + """
    g = rt.Graph()
    r = g.add_empty()
    many = [g.add_empty() for _ in range(17)]
    names = {r: "r", **{m: f"m{i}" for i, m in enumerate(many)}}
    def node(n):
        p = n.params
        values = list(p["args"])
        if a <= values[0] < a + 64:  # the probe's own buffer: where in it (addresses differ per run)
            values[0] -= a
        names.setdefault(n, f"n{len(names)}")
        ok = g._wrap(n.handle) is n and n.handle in g._table() and p["kernel"] is k
        return (type(n).__name__, names[n], tuple(p["grid"]), tuple(p["block"]), p["shared_mem_bytes"], values,
                [names.get(d, "?") for d, _ in n.dependencies], ok)
    case("first node", lambda: node(g.add_kernel(k, 1, 32, ARGS)))
    case("positional", lambda: node(g.add_kernel(k, 4, 64, ARGS, dependencies=[r])))
    listed = list(ARGS)
    case("list args", lambda: (node(g.add_kernel(k, 1, 1, listed)), not any(x is listed for x in g._keep)))
    case("keywords", lambda: node(g.add_kernel(kernel=k, grid=(2, 3), block=[32, 2, 1], args=ARGS, shared_mem=128,
                                               dependencies=(r, many[0]), edges=None, attributes=None)))
    case("three dims", lambda: node(g.add_kernel(k, (1, 2, 3), (4, 5, 6), ARGS, shared_mem=2**32 - 1)))
    def forget_last(g):  # what ABI mode's adder remembers the objects it packed last by (not a keep)
        g._kernel_last = None
    before = sys.getrefcount(buf)
    case("buffer pointer", lambda: (node(g.add_kernel(k, 1, 32, args((0, buf)))),
                                    forget_last(g) or sys.getrefcount(buf) - before))
    case("ints for floats", lambda: node(g.add_kernel(k, 1, 32, args((2, 2), (5, -1)))))
    case("extremes", lambda: node(g.add_kernel(k, 1, 32, args((0, 2**64 - 1), (1, -2**31), (3, 0), (4, 2**15 - 1),
                                                               (5, float("inf")), (6, 2**63 - 1), (7, 0)))))
    case("sixteen", lambda: node(g.add_kernel(k, 1, 32, ARGS, dependencies=many[:16])))
    case("builder", lambda: node(r.kernel(k, 1, 32, ARGS)))
    case("unbound call", lambda: node(Graph.add_kernel(g, k, 1, 32, ARGS)))
    case("seventeen", lambda: node(g.add_kernel(k, 1, 32, ARGS, dependencies=many)))
    case("edge data", lambda: node(g.add_kernel(k, 1, 32, ARGS, dependencies=[r], edges=[DEFAULT_EDGE])))
    case("attributes", lambda: node(g.add_kernel(k, 1, 32, ARGS, attributes={})))
    case("bool for int", lambda: node(g.add_kernel(k, 1, 32, args((1, True)))))
    case("ctypes int", lambda: node(g.add_kernel(k, 1, 32, args((1, ctypes.c_int(5))))))
    case("int too big", lambda: g.add_kernel(k, 1, 32, args((1, 2**31))))
    case("unsigned negative", lambda: g.add_kernel(k, 1, 32, args((3, -1))))
    case("float too big", lambda: g.add_kernel(k, 1, 32, args((5, 1e39))))
    case("float for int", lambda: g.add_kernel(k, 1, 32, args((1, 1.0))))
    case("pointer None", lambda: g.add_kernel(k, 1, 32, args((0, None))))
    case("pointer negative", lambda: g.add_kernel(k, 1, 32, args((0, -8))))
    closed = borrowed_buffer(a, 8)
    closed.close()
    case("closed buffer", lambda: g.add_kernel(k, 1, 32, args((0, closed))))
    case("too few args", lambda: g.add_kernel(k, 1, 32, ARGS[:-1]))
    case("args a string", lambda: g.add_kernel(k, 1, 32, "abcdefgh"))
    case("no args", lambda: g.add_kernel(k, 1, 32))
    case("grid 0", lambda: g.add_kernel(k, 0, 32, ARGS))
    case("grid 2**32", lambda: g.add_kernel(k, 2**32, 32, ARGS))
    case("four dims", lambda: g.add_kernel(k, (1, 1, 1, 1), 32, ARGS))
    case("Dim3 grid", lambda: node(g.add_kernel(k, r.kernel(k, 2, 32, ARGS).params["grid"], 32, ARGS)))
    case("negative shared memory", lambda: g.add_kernel(k, 1, 32, ARGS, shared_mem=-1))
    case("not a kernel", lambda: g.add_kernel(42, 1, 32, ARGS))
    other = rt.Graph().add_empty()
    case("another graph's node", lambda: g.add_kernel(k, 1, 32, ARGS, dependencies=[other]))
    case("unknown keyword", lambda: g.add_kernel(k, 1, 32, ARGS, smem=0))
    case("args twice", lambda: g.add_kernel(k, 1, 32, ARGS, args=ARGS))
    copy = k.with_signature(SIG)
    case("a new kernel's first node", lambda: node(g.add_kernel(copy, 1, 32, ARGS)) and "ok")
    case("its second", lambda: node(g.add_kernel(copy, 1, 32, ARGS)) and "ok")
    # the Python path writes a node's launch shape into its reused struct only when it changes
    case("shared memory 2**32", lambda: g.add_kernel(k, 1, 32, ARGS, shared_mem=2**32))
    case("an earlier shape again", lambda: node(g.add_kernel(k, 4, 64, ARGS, dependencies=[r])))
    case("another shape", lambda: node(g.add_kernel(k, (2, 2), 16, ARGS, shared_mem=8)))
    case("the same shape", lambda: node(g.add_kernel(k, (2, 2), 16, args((1, 9)), shared_mem=8)))
    # plain-int shapes are the Python path's key: a refused one leaves the last one written, and
    # the same shape given as tuples, then as ints again, or one field changed, is written again
    case("int shape", lambda: node(g.add_kernel(k, 3, 32, ARGS)))
    case("int shape refused", lambda: g.add_kernel(k, 3, 32, ARGS, shared_mem=-1))
    case("int shape again", lambda: node(g.add_kernel(k, 3, 32, args((1, 4)))))
    case("as tuples", lambda: node(g.add_kernel(k, (3,), (32, 1, 1), ARGS)))
    case("ints after tuples", lambda: node(g.add_kernel(k, 3, 32, ARGS)))
    case("block alone", lambda: node(g.add_kernel(k, 3, 64, ARGS)))
    case("shared memory alone", lambda: node(g.add_kernel(k, 3, 64, ARGS, shared_mem=16)))
    case("grid refused", lambda: g.add_kernel(k, 0, 64, ARGS, shared_mem=16))
    case("bool grid", lambda: g.add_kernel(k, True, 64, ARGS, shared_mem=16))
    case("the last shape", lambda: node(g.add_kernel(k, 3, 64, ARGS, shared_mem=16)))
    # argument buffers are reused from node to node (Python path) or on the C stack: each node
    # must still hold its own values, read back now that every node is made
    print("values at the end", [p["args"][1:] for p in (n.params for n in g.nodes()) if p.get("args") is not None])
    case("full graph", lambda: [g.add_kernel(k, 1, 32, ARGS) for _ in range(64)])
    g.close()
    case("closed graph", lambda: g.add_kernel(k, 1, 32, ARGS))
"""

# Graph.add_nodes: the C loop makes the plain specs and leaves the others to the one-node methods
# (a profile hook lists which of those ran), then goes on.
BULK = PROBE + """
    g = rt.Graph()
    r = g.add_empty()
    many = [g.add_empty() for _ in range(17)]
    buf = borrowed_buffer(a, 32)
    seen = []
    def hook(frame, event, arg):
        if event == "call" and frame.f_code.co_name in ("add_empty", "add_memset"):
            seen.append(frame.f_code.co_name)
    specs = [("empty", None, ["r"]), ("empty", {}, [0]),
             ("memset", {"dst": buf, "value": 3, "count": 4}, [0, 1]),
             ("memset", {"dst": a, "value": 1, "count": 2, "element_size": 2}, [2]),  # one-node: a fourth key
             ("empty", (), [3]),  # one-node: empty params, but not None or {}
             ["empty", None, (r, 4)],
             ("memset", {"dst": a + 8, "value": 255, "count": 8}),
             ("empty", None, many),  # one-node: seventeen dependencies
             ("empty", None, [many[0], "r", 7, 6]),
             ("memset", {"dst": a, "value": 256, "count": 1}, [8])]  # refused: the one-node method says why
    sys.setprofile(hook)
    try:
        g.add_nodes(specs, names={"r": r})
    except errors.GraphRTError as exc:
        print(type(exc).__name__, exc.__notes__)
    sys.setprofile(None)
    print("one-node calls", seen)
    made = g.nodes()[18:]
    names = {r: "r", **{m: f"m{i}" for i, m in enumerate(many)}, **{n: f"s{i}" for i, n in enumerate(made)}}
    for n in made:
        p = n.params if type(n).__name__ == "MemsetNode" else {}
        print(type(n).__name__, sorted(names[d] for d, _ in n.dependencies), {k: v - a if k == "dst" else v
                                                                                for k, v in p.items()},
              g._wrap(n.handle) is n)
    print("buffer kept", g._keep.count(buf))
    import gc
    try:
        g.add_nodes([("empty", None, [r])] * 80)  # the fake's graphs hold 64 nodes
    except errors.GraphRTError as exc:
        print(type(exc).__name__, exc.__notes__, len(g.nodes()), gc.isenabled())
    gc.disable()  # the caller's choice stays: the C loop leaves the collector alone
    h = rt.Graph()
    print(len(h.add_nodes([("empty", None, [i - 1] if i else []) for i in range(60)])), gc.isenabled())
    gc.enable()
    g.close()
    try:
        g.add_nodes([("empty", None)])
    except errors.GraphRTError as exc:
        print(type(exc).__name__)
"""

# Graph.add_nodes' NodeList: in compiled mode its entries are node handles until read; what a
# reader sees is what ABI mode (node objects made by the one-node methods) gives.
NODE_LIST = PROBE + """
    a = 0x10000
    g = rt.Graph()
    r = g.add_empty()
    made = g.add_nodes([("empty", None, ["r"])] + [("memset", {"dst": a, "value": 1, "count": 4}, [i])
                                                    for i in range(5)], names={"r": r})
    print("entries before reading", len(g._table()))
    print(type(made).__name__, len(made), [type(n).__name__ for n in made], repr(made))
    print("one object", made[2] is made[2], made[-1] is made[5], g.nodes()[3] is made[2],
          g._wrap(made[4].handle) is made[4], made[3].dependencies[0][0] is made[2])
    print("sequence", made[1:3] == [made[1], made[2]], made == list(made), made == tuple(made),
          made != made[:-1], made[::-1][0] is made[5], made.index(made[3]), made[3] in made, made == 3)
    for bad in (6, -7, "x"):
        try:
            made[bad]
        except (IndexError, TypeError) as exc:
            print(type(exc).__name__, exc)
    # spec 5's node, read through the graph, is destroyed; the runtime reuses its address for
    # the next node: the list's entry stays the destroyed node
    last = g.nodes()[-1]
    address = int(last)
    last.destroy()
    again = g.add_memset(a, 2, 4, dependencies=[made[4]])
    print("destroyed", int(again) == address, made[5] is last, made[5].is_valid, again.is_valid)
    # a later bulk call takes this list's nodes as dependencies
    more = g.add_nodes([("empty", None, [made[1], made[4]])])
    print("later call", sorted(made.index(d) for d, _ in more[0].dependencies))
    # recapture keeps only the nodes the runtime still has (Graph._keep_only)
    h = rt.Graph()
    m = h.add_nodes([("empty", None)] * 3)
    first = m[0]
    h._keep_only({first.handle})
    print("kept only the first", [n.is_valid for n in m], m[0] is first, [type(n).__name__ for n in m])
    k = rt.Graph()
    mk = k.add_nodes([("empty", None), ("memset", {"dst": a, "value": 0, "count": 1})])
    first = mk[0]
    k.close()
    print("closed", first.is_valid, mk[1].is_valid, type(mk[1]).__name__, [type(x).__name__ for x in mk])
    # iterating makes the entries' objects at once (compiled: make_nodes), taking the table's
    # objects where the graph made them first
    j = rt.Graph()
    mj = j.add_nodes([("empty", None), ("memset", {"dst": a, "value": 0, "count": 1}, [0]),
                      ("empty", None, [1])])
    listed = {int(x): x for x in j.nodes()}
    print("iterated", [x is listed[int(x)] for x in mj], [type(x).__name__ for x in mj[1:]])
"""


@needs_fast
def test_bulk_results_are_made_when_read_and_follow_the_nodes_that_go(either_fake):
    """add_nodes returns a NodeList: the C loop (compiled) or the Python loop (ABI) has the
    runtime write each node's handle into it, and the node object is made when its entry is
    read (the graph's one object of it); a node
    destroyed, gone in a recapture or in a closed graph reads as such, never as the node the
    runtime later made at its address.  Everything a reader sees is the same in both modes."""
    abi, api = run_mode(either_fake, "0", NODE_LIST).splitlines(), run_mode(either_fake, "1", NODE_LIST).splitlines()
    assert abi[0] == api[0] == "entries before reading 1"  # no objects made (ABI: the Python loop)
    assert abi[1:] == api[1:]
    assert api[1:] == [
        "NodeList 6 ['EmptyNode', 'MemsetNode', 'MemsetNode', 'MemsetNode', 'MemsetNode', 'MemsetNode'] "
        "<NodeList of 6 node(s)>",
        "one object True True True True True",
        "sequence True True True True True 3 True False",
        "IndexError NodeList index out of range",
        "IndexError NodeList index out of range",
        "TypeError NodeList indices must be integers or slices, not str",
        "destroyed True True False True",
        "later call [1, 4]",
        "kept only the first [True, False, False] True ['EmptyNode', 'EmptyNode', 'EmptyNode']",
        "closed False False MemsetNode ['EmptyNode', 'MemsetNode']",
        "iterated [True, True, True] ['MemsetNode', 'EmptyNode']"]


@needs_fast
def test_bulk_results_of_the_batched_path_read_the_same(fake_cudart):  # noqa: F811
    """Compiled without the hot module's loop, add_nodes batches runs of plain specs into the
    generated _pgr_add_nodes, which writes the NodeList's entries too (copied from its output
    array): everything a reader sees is as in ABI mode."""
    batched = NODE_LIST.replace("    a = 0x10000\n", "    from pygraphrt.graph import _hot\n"
                                "    _hot.bulk_adder = _hot.node_maker = lambda backend: None\n    a = 0x10000\n", 1)
    assert batched != NODE_LIST
    abi, api = run_mode(fake_cudart, "0", NODE_LIST).splitlines(), run_mode(fake_cudart, "1", batched).splitlines()
    assert api[0] == "entries before reading 1" and abi[1:] == api[1:]


LAUNCH = PROBE + """
    from tests.backends import selected
    s = rt.Stream()
    g = rt.Graph()
    m = g.add_empty().memset(a, 5, 8)
    exe = g.instantiate()
    case("launch", lambda: (exe.launch(s), buf.raw[:9], exe._last_stream is s))
    case("launch, keyword", lambda: exe.launch(stream=s))
    case("not a stream", lambda: exe.launch(42))
    case("no stream", lambda: exe.launch())
    case("two arguments", lambda: exe.launch(s, s))
    case("unknown keyword", lambda: exe.launch(strm=s))
    legacy = rt.Stream.legacy_default()
    case("legacy stream", lambda: (exe.launch(legacy), exe._last_stream is legacy))
    null_exec = GraphExec(g, lowlevel.ffi.cast("cudaGraphExec_t", 0))  # the fake refuses a NULL one
    case("runtime error", lambda: null_exec.launch(s))
    calls = []
    h = rt.Graph()
    h.add_node(NodeType.HOST, fn=lambda: calls.append(1))
    hexe = h.instantiate()
    case("host callables", lambda: (hexe.launch(s), calls, len(s._sinks)))
    gone = rt.Stream()
    gone.close()
    case("closed stream", lambda: exe.launch(gone))
    with selected("sim"):
        ss = rt.Stream()
        sg = rt.Graph()
        sbuf = rt.malloc(8)
        sg.add_empty().memset(sbuf, 3, 8)
        sexe = sg.instantiate()
        case("sim launch", lambda: (sexe.launch(ss), ss.synchronize(), sbuf.to_bytes()))
        case("sim add_empty", lambda: sorted(d.type.name for d, _ in sg.add_empty(dependencies=sg.nodes()).dependencies))
        # (in ABI mode both backends share the cuda13 ABI module's ffi, so cffi takes the other's
        # handles there: these two are compared with compiled mode's Python method instead)
        case("mixed: sim stream, cuda exec", lambda: exe.launch(ss))
        case("mixed: cuda stream, sim exec", lambda: sexe.launch(s))
        case("cuda node in sim graph", lambda: sg.add_empty(dependencies=[m]))
    exe.close()
    case("closed exec", lambda: exe.launch(s))
"""


# The plain kernel launch (Stream.launch, Kernel.launch in C: kernels._hot.install_launch) against
# the fake's cuLaunchKernel, which records the last launch (fake_last_launch).
KERNEL_LAUNCH = PROBE + FAKE_KERNEL + """
    import os, struct, threading
    from tests.backends import selected
    PY_METHODS = {"launch", "hot"}  # the Python methods and the kernel's Python hot launch
    fake = ctypes.CDLL(os.environ["PYGRAPHRT_CUDART"])
    class Launch(ctypes.Structure):
        _fields_ = [("func", ctypes.c_void_p), ("stream", ctypes.c_void_p), ("grid", ctypes.c_uint * 3),
                    ("block", ctypes.c_uint * 3), ("smem", ctypes.c_uint), ("args", ctypes.c_ubyte * 48)]
    last = Launch.in_dll(fake, "fake_last_launch")
    count, by_runtime = (ctypes.c_int.in_dll(fake, n) for n in ("fake_launches", "fake_runtime_launches"))
    refuses, no_context = (ctypes.c_int.in_dll(fake, n) for n in ("fake_driver_refuses", "fake_no_context"))
    s = rt.Stream()
    legacy = rt.Stream.legacy_default()
    streams = {0: "NULL", int(lowlevel.ffi.cast("uintptr_t", s.handle)): "s"}
    early_stream_launch, early_kernel_launch = s.launch, k.launch  # bound before any launch
    def launched(fn):
        # (launches made, by the runtime, the kernel, grid, block, shared memory, stream, values)
        before, rbefore = count.value, by_runtime.value
        fn()
        v = list(struct.unpack_from("<Qi4xdBxhfqI", bytes(last.args)))
        if a <= v[0] < a + 64:  # the probe's own buffer: where in it (addresses differ per run)
            v[0] = f"a+{v[0] - a}"
        return (count.value - before, by_runtime.value - rbefore, last.func == 0x5000, tuple(last.grid),
                tuple(last.block), last.smem, streams.get(last.stream or 0, "?"), v)
    case("first launch", lambda: launched(lambda: s.launch(k, 1, 32, *ARGS)))
    case("stream launch", lambda: launched(lambda: s.launch(k, 4, 64, *ARGS)))
    case("kernel launch", lambda: launched(lambda: k.launch(s, (2, 3), [4, 5, 6], *ARGS, shared_mem=128)))
    case("bound before the first launch", lambda: launched(lambda: (early_stream_launch(k, 2, 32, *ARGS),
                                                                    early_kernel_launch(s, 2, 32, *ARGS))))
    case("unbound stream launch", lambda: launched(lambda: rt.Stream.launch(s, k, 1, 32, *ARGS)))
    case("unbound kernel launch", lambda: launched(lambda: Kernel.launch(k, s, 1, 32, *ARGS)))
    before = sys.getrefcount(buf)
    case("buffer pointer", lambda: (launched(lambda: s.launch(k, 1, 32, *args((0, buf)))), sys.getrefcount(buf) - before))
    case("ints for floats", lambda: launched(lambda: s.launch(k, 1, 32, *args((2, 2), (5, -1)))))
    case("extremes", lambda: launched(lambda: s.launch(k, 2**32 - 1, (1, 1, 2**32 - 1), *args(
        (0, 2**64 - 1), (1, -2**31), (3, 0), (4, 2**15 - 1), (5, float("inf")), (6, 2**63 - 1), (7, 0)),
        shared_mem=49152)))
    case("legacy stream", lambda: launched(lambda: legacy.launch(k, 1, 32, *ARGS)))
    refuses.value = 1
    case("driver error", lambda: launched(lambda: s.launch(k, 1, 32, *ARGS)))
    refuses.value = 0
    case("runtime's error", lambda: launched(lambda: s.launch(k, 1, 32, *ARGS, shared_mem=49153)))
    no_context.value = 1
    case("no context: the runtime's launch", lambda: launched(lambda: legacy.launch(k, 3, 32, *ARGS)))
    case("a context again", lambda: launched(lambda: legacy.launch(k, 5, 32, *ARGS)))
    for label, bad in [("bool for int", args((1, True))), ("ctypes int", args((1, ctypes.c_int(5)))),
                       ("int too big", args((1, 2**31))), ("unsigned negative", args((3, -1))),
                       ("float too big", args((5, 1e39))), ("float for int", args((1, 1.0))),
                       ("pointer None", args((0, None))), ("pointer negative", args((0, -8))),
                       ("pointer float", args((0, 1.5))), ("too few args", ARGS[:-1]), ("too many args", ARGS + (1,))]:
        case(label, lambda bad=bad: launched(lambda: s.launch(k, 1, 32, *bad)))
    for label, grid, block, smem in [("grid 0", 0, 1, 0), ("grid 2**32", 2**32, 1, 0), ("four dims", (1, 1, 1, 1), 1, 0),
                                     ("grid float", 1.0, 1, 0), ("block (0,)", 1, (0,), 0),
                                     ("negative shared memory", 1, 1, -1), ("shared memory 2**32", 1, 1, 2**32),
                                     ("shared memory float", 1, 1, 0.0)]:
        case(label, lambda g=grid, b=block, m=smem: launched(lambda: s.launch(k, g, b, *ARGS, shared_mem=m)))
    case("launch attributes", lambda: launched(lambda: s.launch(k, 1, 32, *ARGS, priority=1)))
    case("unknown attribute", lambda: launched(lambda: k.launch(s, 1, 32, *ARGS, shared=1)))
    case("no arguments", lambda: s.launch())
    case("not a kernel", lambda: s.launch(object(), 1, 1))
    case("not a stream", lambda: k.launch(object(), 1, 1, *ARGS))
    class MyStream(rt.Stream):
        pass
    mine = MyStream()
    streams[int(lowlevel.ffi.cast("uintptr_t", mine.handle))] = "mine"
    case("a Stream subclass", lambda: launched(lambda: mine.launch(k, 1, 32, *ARGS)))
    closed_buffer = borrowed_buffer(a, 8)
    closed_buffer.close()
    case("closed buffer", lambda: s.launch(k, 1, 32, *args((0, closed_buffer))))
    gone = rt.Stream()
    gone.close()
    case("closed stream", lambda: k.launch(gone, 1, 32, *ARGS))
    def captured():
        before = count.value
        with s.capture() as cap:
            s.launch(k, 6, 32, *args((0, buf)))
            k.launch(s, 7, 32, *args((0, buf)))
        g = cap.graph
        nodes = g.nodes()
        # no launch: kernel nodes, whose graph keeps the buffer the pointers came from, once
        # (this kernel wraps a handle: no library to keep)
        return (count.value - before, [n.type.name for n in nodes], [tuple(n.params["grid"]) for n in nodes],
                nodes[0].params["args"][1:3], [type(x).__name__ for x in g._keep])
    case("captured", captured)
    case("after the capture", lambda: launched(lambda: s.launch(k, 7, 32, *ARGS)))
    def threads():
        def run(i):
            for j in range(100):
                s.launch(k, 1 + i, 32, *args((1, i * 1000 + j)))
        ts = [threading.Thread(target=run, args=(i,)) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        s.launch(k, 1, 32, *ARGS)  # (and one here, where the profile hook sees which method ran)
    case("four threads", lambda: launched(threads)[:2])
    with selected("sim"):
        ss = rt.Stream()
        case("mixed: sim stream, cuda kernel", lambda: s.launch(k, 1, 32, *ARGS) or ss.launch(k, 1, 32, *ARGS))
        case("mixed: cuda kernel on sim stream", lambda: k.launch(ss, 1, 32, *ARGS))
    case("back on cuda", lambda: launched(lambda: s.launch(k, 9, 32, *ARGS)))
"""


def _rows(out: str) -> list[tuple[str, str, str]]:
    """(label, result, path) per case; addresses (which differ from process to process) as 0x?."""
    rows = []
    for line in re.sub(r"0x[0-9a-f]+", "0x?", out).splitlines():
        if line.count(" | ") == 2:
            label, result, path = line.split(" | ")
            rows.append((label, result, path))
        else:
            rows.append((line, "", ""))
    return rows


def _same_results_and_paths(lib, code: str) -> dict[str, str]:
    """Run ``code`` in both modes: the results must agree (but for the "mixed:" cases) and ABI
    mode runs the Python methods throughout (but for "bulk specs" and "mixed: bulk ...": add_nodes'
    own Python loop makes plain specs there, calling no one-node method); returns the path
    compiled mode took, by label."""
    abi, api = _rows(run_mode(lib, "0", code)), _rows(run_mode(lib, "1", code))
    assert [(label, result) for label, result, _ in abi if not label.startswith("mixed:")] == \
        [(label, result) for label, result, _ in api if not label.startswith("mixed:")]
    assert {path for label, _, path in abi if label != "bulk specs" and not label.startswith("mixed: bulk")} \
        <= {"py", "?", ""}
    return {label: path for label, _, path in api if path}


@pytest.fixture(scope="module", params=["runtime", "driver"])
def either_fake(request, tmp_path_factory):
    """The fake libcudart without and with the driver's stand-ins (FAKE_DRIVER_DIRECT): with
    them, compiled mode's memset, kernel and empty adds go to the driver's functions with the
    driver's structs, and the nodes, read back through the runtime, must say what ABI mode's."""
    from .test_cuda13x import build_fake_cudart

    return build_fake_cudart(tmp_path_factory.mktemp(f"fake-{request.param}") / "libcudart.so.13",
                             driver_direct=request.param == "driver")


@needs_fast
def test_adding_nodes_same_results_c_for_the_common_calls(either_fake):
    paths = _same_results_and_paths(either_fake, ADD)
    c = {"no dependencies", "empty list", "None", "one", "tuple of two", "sixteen", "builder", "unbound call",
         "memset int", "memset keywords", "memset 4-byte max", "memset buffer", "memset tuple of one",
         "memset, buffer kept once",
         "memset, buffer past the keep window",
         "bulk specs", "full graph", "full graph, memset"}  # bulk specs: add_nodes calls the C methods
    assert {label for label, path in paths.items() if path == "c"} == c
    unknown = {"positional", "unknown keyword", "memset dst twice", "memset too few"}
    assert {label for label, path in paths.items() if path == "?"} == unknown
    assert len(paths) == ADD.count("case(\"")  # every other case took the Python method


def test_adding_nodes_results(fake_cudart):  # noqa: F811
    """What the ADD script prints (ABI mode): the cases mean what their labels say."""
    rows = {label: result for label, result, _ in _rows(run_mode(fake_cudart, "0", ADD))}
    assert rows["no dependencies"].startswith("EmptyNode") and rows["no dependencies"].endswith(" deps=[] True")
    assert rows["one"].endswith(" deps=['r'] True")
    assert rows["tuple of two"].endswith(" deps=['r', 'm0'] True")
    assert rows["sixteen"].endswith("deps=" + str([f"m{i}" for i in range(16)]) + " True")
    assert rows["seventeen"].endswith("deps=" + str([f"m{i}" for i in range(17)]) + " True")
    assert rows["another graph's node"].startswith("InvalidValue") and "another graph" in rows["another graph's node"]
    assert rows["not a node"].startswith("InvalidValue") and "is not a Node" in rows["not a node"]
    assert rows["destroyed node"].startswith("InvalidResourceHandle")
    assert rows["positional"].startswith("TypeError") and rows["unknown keyword"].startswith("TypeError")
    assert rows["memset int"].endswith("deps=['r'] True\", {'dst': 0, 'value': 7, 'element_size': 1, "
                                       "'width': 16, 'height': 1, 'pitch': 0})")
    assert rows["memset keywords"] == "{'dst': 8, 'value': 1, 'element_size': 2, 'width': 2, 'height': 3, 'pitch': 8}"
    assert rows["memset 4-byte max"] == str(2**32 - 1)
    assert rows["memset buffer"].endswith(", True, True)")
    assert rows["memset value too big"].startswith("InvalidValue")
    for shape in ("deque of one", "dict of one", "memset deque of one", "memset tuple of one"):
        assert rows[shape].endswith(" deps=['r'] True"), shape  # (a dict: its keys, as iterating it gives)
    for shape in ("range of one", "memset range of one"):
        assert rows[shape].startswith("InvalidValue") and "0 is not a Node" in rows[shape], rows[shape]
    for shape in ("string of one", "memset string of one"):
        assert rows[shape].startswith("InvalidValue"), rows[shape]
    # the buffer the case before kept: one of the keep list's last entries, so no second entry;
    # once eight other objects came after it, a new one
    assert rows["memset, buffer kept once"].endswith(", 1)")
    assert rows["memset, buffer past the keep window"] == "(2, True)"
    assert rows["memset closed buffer"].startswith("InvalidResourceHandle")
    assert rows["full graph"].startswith("InvalidValue: cudaGraphAddEmptyNode failed")
    assert rows["full graph, memset"].startswith("InvalidValue: cudaGraphAddMemsetNode failed")
    assert rows["closed graph"].startswith("InvalidResourceHandle")
    bulk = rows["bulk specs"]
    assert bulk.startswith("['EmptyNode ") and "deps=[] True" in bulk and "MemsetNode" in bulk, bulk
    assert bulk.count(" True") == 4 and "deps=['r'] True" in bulk, bulk


@needs_fast
def test_copy_nodes_same_results_c_for_the_common_calls(either_fake):
    paths = _same_results_and_paths(either_fake, COPY)
    assert {label for label, path in paths.items() if path == "c"} == {
        "copy ints", "copy keywords", "copy device 0", "copy zero bytes", "copy buffer dst",
        "copy buffer src, kept once", "copy sixteen", "copy builder", "copy unbound call", "full graph, copy"}
    assert {label for label, path in paths.items() if path == "?"} == {"copy too few", "copy count twice"}
    assert len(paths) == COPY.count("case(\"")  # every other case took the Python method


def test_copy_nodes_results(fake_cudart):  # noqa: F811
    """What the COPY script prints (ABI mode): the cases mean what their labels say."""
    rows = {label: result for label, result, _ in _rows(run_mode(fake_cudart, "0", COPY))}
    assert rows["copy ints"] == "('MemcpyNode', 'n18', 0, 16, 8, 4, ['r'], True)"
    assert rows["copy keywords"] == "('MemcpyNode', 'n19', 4, 8, 4, 4, ['r', 'm0'], True)"
    assert rows["copy device 0"] == "('MemcpyNode', 'n20', 0, 8, 2, 4, [], True)"
    assert rows["copy zero bytes"] == "('MemcpyNode', 'n21', 0, 0, 0, 4, [], True)"
    assert rows["copy buffer dst"] == "(('MemcpyNode', 'n22', 32, 0, 4, 4, [], True), 1)"
    assert rows["copy buffer src, kept once"] == "(('MemcpyNode', 'n23', 0, 32, 4, 4, [], True), 1)"
    assert rows["copy sixteen"].endswith(str([f"m{i}" for i in range(16)]) + ", True)")
    assert rows["copy seventeen"].endswith(str([f"m{i}" for i in range(17)]) + ", True)")
    assert rows["copy builder"].endswith(", ['r'], True)")
    assert rows["copy edge data"].endswith(", ['r'], True)")
    assert rows["copy cffi pointer"].startswith("('MemcpyNode', ")
    assert rows["copy host bytes"].startswith("('MemcpyNode', ")
    for label in ("copy bool count", "copy negative count", "copy count 2**64", "copy address 2**64",
                  "copy negative address", "copy None", "copy another graph's node"):
        assert rows[label].startswith("InvalidValue"), (label, rows[label])
    assert rows["copy closed buffer"].startswith("InvalidResourceHandle")
    assert rows["copy device 1"].startswith("InvalidDevice")  # the fake has one device
    assert rows["copy too few"].startswith("TypeError") and rows["copy count twice"].startswith("TypeError")
    assert rows["copy subclass"] == "MemcpyNode"
    assert rows["full graph, copy"].startswith("InvalidValue: cudaGraphAddMemcpyNode1D failed")
    assert rows["closed graph, copy"].startswith("InvalidResourceHandle")


@needs_fast
def test_kernel_nodes_same_results_c_for_the_common_calls(either_fake):
    paths = _same_results_and_paths(either_fake, KERNEL)
    assert {label for label, path in paths.items() if path == "c"} == {
        "positional", "list args", "keywords", "three dims", "buffer pointer", "ints for floats", "extremes",
        "sixteen", "builder", "unbound call", "its second", "an earlier shape again", "another shape",
        "the same shape", "int shape", "int shape again", "as tuples", "ints after tuples", "block alone",
        "shared memory alone", "the last shape", "full graph"}
    assert {label for label, path in paths.items() if path == "?"} == {"unknown keyword", "args twice"}
    assert len(paths) == KERNEL.count("case(\"")


SEVERAL = PROBE + FAKE_KERNEL + """
    import ctypes as C
    from pygraphrt import multidevice
    from pygraphrt.graph import _hot as graph_hot
    fake = C.CDLL(rt.backend().library_path)
    C.c_int.in_dll(fake, "fake_device_count").value = 2
    current = C.c_int.in_dll(fake, "fake_current_device")
    backend = lowlevel.backend_object()
    g = rt.Graph()
    r = g.add_empty()
    g.add_kernel(k, 1, 32, ARGS, dependencies=[r])  # (the kernel's first node: Python in both modes)
    case("one device in use: no record", lambda: (g.add_memset(a, 1, 4, dependencies=[r]).device,
                                                   multidevice.node_devices(g)))
    multidevice.now_several(backend)  # (as a scope or an allocation on device 1 makes it)
    def made(node):
        return type(node).__name__, node.device, multidevice.node_devices(g).get(node.handle)
    for device in (1, 0):
        current.value = device  # (set behind pygraphrt's back, as torch.cuda.set_device would)
        case(f"empty on {device}", lambda: made(g.add_empty(dependencies=[r])))
        case(f"memset on {device}", lambda: made(g.add_memset(a, 1, 4, dependencies=[r])))
        case(f"memset buffer on {device}", lambda: made(g.add_memset(buf, 2, 8, dependencies=[r])))
        case(f"copy on {device}", lambda: made(g.add_memcpy(a, a + 32, 16, dependencies=[r])))
        case(f"kernel on {device}", lambda: made(g.add_kernel(k, 1, 32, ARGS, dependencies=[r])))
        case(f"kernel again on {device}", lambda: made(g.add_kernel(k, 1, 32, ARGS, dependencies=[r])))
        # add_nodes: the C loop (compiled) or its Python form (ABI); the devices recorded by
        # handle, no node object made for that
        case(f"mixed: bulk on {device}", lambda: (lambda m: (graph_hot.in_c(backend) or lowlevel.backend_object().ffi_mode,
                                                      [c is None for c in m._cache],
                                                      [multidevice.node_devices(g).get(h) for h in m._entry_handles()],
                                                      [n.device for n in m]))(
            g.add_nodes([("empty", None, [r]), ("memset", {"dst": a, "value": 5, "count": 4}, [0])])))
    current.value = 0
    case("device=0 current", lambda: made(g.add_memset(a, 3, 4, dependencies=[r], device=0)))
    multidevice._reset_several(backend)
    case("one device again: no record", lambda: (g.add_empty(dependencies=[r]).device, len(multidevice.node_devices(g))))
"""


@needs_fast
def test_with_several_devices_in_use_the_c_adds_record_each_nodes_device(either_fake):
    """Once several devices are in use, the compiled empty, memset, copy and kernel adds stay in C
    and record each node's device (the current one) as the Python adds do; a kernel's first node
    on a device takes the Python method, which checks that the kernel runs there (the C takes
    the later ones: its arguments here are no pygraphrt buffers).  Back to one device, nothing is
    recorded."""
    paths = _same_results_and_paths(either_fake, SEVERAL)
    rows = {label: result for label, result, _ in _rows(run_mode(either_fake, "1", SEVERAL))}
    abi_rows = {label: result for label, result, _ in _rows(run_mode(either_fake, "0", SEVERAL))}
    assert rows["one device in use: no record"] == "(0, {})"
    for device in (1, 0):
        for what, cls in (("empty", "EmptyNode"), ("memset", "MemsetNode"), ("memset buffer", "MemsetNode"),
                          ("copy", "MemcpyNode"), ("kernel", "KernelNode"), ("kernel again", "KernelNode")):
            assert rows[f"{what} on {device}"] == f"('{cls}', {device}, {device})", (what, device)
            # (the kernel's first node on device 1 checks it there; device 0's was its first node)
            first_there = what == "kernel" and device == 1
            assert paths[f"{what} on {device}"] == ("py" if first_there else "c"), (what, device)
        # (compiled: the C loop, True; the objects made only when read, after the record)
        bulk = rows[f"mixed: bulk on {device}"]
        assert bulk == f"(True, [True, True], [{device}, {device}], [{device}, {device}])", bulk
        # (ABI: add_nodes' Python form of the loop, the same record)
        bulk = abi_rows[f"mixed: bulk on {device}"]
        assert bulk.startswith("('abi") and bulk.endswith(f", [True, True], [{device}, {device}], [{device}, {device}])"), bulk
    assert rows["device=0 current"] == "('MemsetNode', 0, 0)" and paths["device=0 current"] == "c"
    assert paths["one device in use: no record"] == paths["one device again: no record"] == "c"
    assert rows["one device again: no record"] == "(0, 20)"  # (the 3 nodes before several began: as 0)


def test_kernel_nodes_results(fake_cudart):  # noqa: F811
    """What the KERNEL script prints (ABI mode): the cases mean what their labels say."""
    out = run_mode(fake_cudart, "0", KERNEL)
    rows = {label: result for label, result, _ in _rows(out)}
    values = "[0, 7, 2.5, 255, -3, 1.5, -9223372036854775808, 4294967295]"
    assert rows["first node"] == f"('KernelNode', 'n18', (1, 1, 1), (32, 1, 1), 0, {values}, [], True)"
    assert rows["positional"] == f"('KernelNode', 'n19', (4, 1, 1), (64, 1, 1), 0, {values}, ['r'], True)"
    assert rows["list args"].endswith(", True)")
    assert rows["keywords"] == f"('KernelNode', 'n21', (2, 3, 1), (32, 2, 1), 128, {values}, ['r', 'm0'], True)"
    assert rows["three dims"].startswith("('KernelNode', 'n22', (1, 2, 3), (4, 5, 6), 4294967295, ")
    assert rows["buffer pointer"].startswith("(('KernelNode', 'n23', (1, 1, 1), (32, 1, 1), 0, [16, ")
    assert rows["buffer pointer"].endswith(", 1)")  # the graph holds the buffer
    assert ", [0, 7, 2.0, 255, -3, -1.0, " in rows["ints for floats"]
    # (a pointer argument reads back in hex: _rows shows every hex number as 0x?)
    assert ", [0x?, -2147483648, 2.5, 0, 32767, inf, 9223372036854775807, 0], " in rows["extremes"]
    assert ", [0xffffffffffffffff, -2147483648, 2.5, 0, 32767, inf, 9223372036854775807, 0], " in \
        [line for line in out.splitlines() if line.startswith("extremes |")][0]
    assert rows["sixteen"].endswith(str([f"m{i}" for i in range(16)]) + ", True)")
    assert rows["seventeen"].endswith(str([f"m{i}" for i in range(17)]) + ", True)")
    assert rows["builder"].endswith(f"{values}, ['r'], True)")
    assert rows["a new kernel's first node"] == rows["its second"] == "ok"
    assert rows["shared memory 2**32"].startswith("InvalidValue: shared_mem failed [4294967296 bytes do not fit")
    # (their kernel reads back as `copy`, registered last for the same handle)
    assert f", (4, 1, 1), (64, 1, 1), 0, {values}, ['r'], " in rows["an earlier shape again"]
    assert f", (2, 2, 1), (16, 1, 1), 8, {values}, [], " in rows["another shape"]
    assert ", (2, 2, 1), (16, 1, 1), 8, [0, 9, 2.5, 255, -3, 1.5, -9223372036854775808, 4294967295], [], " in \
        rows["the same shape"]
    assert rows["edge data"].endswith(", ['r'], True)") and rows["attributes"].endswith(", [], True)")
    shapes = {"int shape": "(3, 1, 1), (32, 1, 1), 0", "as tuples": "(3, 1, 1), (32, 1, 1), 0",
              "ints after tuples": "(3, 1, 1), (32, 1, 1), 0", "block alone": "(3, 1, 1), (64, 1, 1), 0",
              "shared memory alone": "(3, 1, 1), (64, 1, 1), 16", "the last shape": "(3, 1, 1), (64, 1, 1), 16"}
    for label, shape in shapes.items():
        assert f", {shape}, {values}, [], " in rows[label], (label, rows[label])
    assert ", (3, 1, 1), (32, 1, 1), 0, [0, 4, 2.5, 255, -3, 1.5, -9223372036854775808, 4294967295], [], " \
        in rows["int shape again"]
    for label in ("int too big", "unsigned negative", "float too big", "float for int", "pointer negative",
                  "too few args", "args a string", "no args", "grid 0", "grid 2**32", "four dims",
                  "negative shared memory", "not a kernel", "another graph's node", "int shape refused",
                  "grid refused", "bool grid"):
        assert rows[label].startswith("InvalidValue"), (label, rows[label])
    assert rows["closed buffer"].startswith("InvalidResourceHandle")
    assert rows["Dim3 grid"].startswith("('KernelNode', 'n")
    assert rows["unknown keyword"].startswith("TypeError") and rows["args twice"].startswith("TypeError")
    at_end = next(label for label in rows if label.startswith("values at the end"))
    assert at_end.startswith("values at the end [[7, 2.5, 255, -3, 1.5, -9223372036854775808, 4294967295], ") and \
        "[-2147483648, 2.5, 0, 32767, inf, 9223372036854775807, 0]" in at_end and "[7, 2.0, 255, -3, -1.0, " in at_end
    assert rows["full graph"].startswith("InvalidValue: cudaGraphAddKernelNode failed")
    assert rows["closed graph"].startswith("InvalidResourceHandle")


@needs_fast
def test_bulk_c_loop_same_results_and_leaves_the_unusual_specs(either_fake):
    abi, api = run_mode(either_fake, "0", BULK).splitlines(), run_mode(either_fake, "1", BULK).splitlines()
    # specs 3 and 4 go to the C add_memset / add_empty (no Python frame); 7 and 9 on to the Python ones
    calls = [line for line in api if line.startswith("one-node calls")]
    assert calls == ["one-node calls ['add_empty', 'add_memset']"]
    assert [line for line in abi if not line.startswith("one-node calls")] == \
        [line for line in api if not line.startswith("one-node calls")]
    assert api[0] == "InvalidValue ['(Graph.add_nodes: spec 9; 9 node(s) added before it stay)']"
    rows = api[2:11]
    assert rows[0] == "EmptyNode ['r'] {} True" and rows[1] == "EmptyNode ['s0'] {} True"
    assert rows[2] == ("MemsetNode ['s0', 's1'] {'dst': 0, 'value': 3, 'element_size': 1, 'width': 4, 'height': 1, "
                       "'pitch': 0} True")
    assert rows[3].startswith("MemsetNode ['s2'] {'dst': 0, 'value': 1, 'element_size': 2, 'width': 2,")
    assert rows[5] == "EmptyNode ['r', 's4'] {} True"
    assert rows[6] == ("MemsetNode [] {'dst': 8, 'value': 255, 'element_size': 1, 'width': 8, 'height': 1, "
                       "'pitch': 0} True")
    assert rows[7] == "EmptyNode " + str(sorted(f"m{i}" for i in range(17))) + " {} True"
    assert rows[8] == "EmptyNode ['m0', 'r', 's6', 's7'] {} True"
    assert api[11] == "buffer kept 1"
    assert api[12] == "InvalidValue ['(Graph.add_nodes: spec 37; 37 node(s) added before it stay)'] 64 True"
    assert api[13] == "60 False"
    assert api[14] == "InvalidResourceHandle"


@needs_fast
def test_launch_same_results_c_for_the_common_calls(fake_cudart):  # noqa: F811
    paths = _same_results_and_paths(fake_cudart, LAUNCH)
    assert {label for label, path in paths.items() if path == "c"} == {"launch", "launch, keyword",
                                                                      "legacy stream", "runtime error"}
    assert {label for label, path in paths.items() if path == "?"} == {"no stream", "two arguments",
                                                                      "unknown keyword"}
    assert len(paths) == LAUNCH.count("case(\"")
    rows = {label: result for label, result, _ in _rows(run_mode(fake_cudart, "1", LAUNCH))}
    assert rows["launch"] == "(None, b'\\x05\\x05\\x05\\x05\\x05\\x05\\x05\\x05\\x00', True)"
    assert rows["not a stream"].startswith("InvalidValue")
    assert rows["runtime error"].startswith("InvalidValue: cudaGraphLaunch failed")
    assert rows["host callables"] == "(None, [1], 1)"
    # (named as the call the user made, in both modes, not as an internal "Stream.handle")
    assert rows["closed stream"] == "InvalidResourceHandle: GraphExec.launch failed [the stream was closed]"
    assert rows["sim launch"] == "(None, None, b'\\x03\\x03\\x03\\x03\\x03\\x03\\x03\\x03')"
    assert rows["sim add_empty"] == "['EMPTY', 'MEMSET']"
    assert rows["mixed: sim stream, cuda exec"].startswith("InvalidValue") and "belongs to the sim backend" in \
        rows["mixed: sim stream, cuda exec"]
    assert rows["mixed: cuda stream, sim exec"].startswith("InvalidValue") and "belongs to the cuda backend" in \
        rows["mixed: cuda stream, sim exec"]
    assert rows["cuda node in sim graph"].startswith("InvalidValue")
    assert rows["closed exec"] == ("InvalidResourceHandle: GraphExec.launch failed [this executable graph "
                                   "was closed]")


@needs_fast
def test_kernel_launch_same_results_c_for_the_common_calls(tmp_path):
    """Stream.launch and Kernel.launch in C: the same launches (read back from the fake's
    cuLaunchKernel) and the same errors as the Python methods in ABI mode; C does the common
    calls, the Python method everything else."""
    from .test_cuda13x import build_fake_cudart

    lib = build_fake_cudart(tmp_path / "libcudart.so.13", driver_direct=True)
    paths = _same_results_and_paths(lib, KERNEL_LAUNCH)
    assert {label for label, path in paths.items() if path == "c"} == {
        "stream launch", "kernel launch", "bound before the first launch", "unbound stream launch", "unbound kernel launch", "buffer pointer",
        "ints for floats", "extremes", "legacy stream", "driver error", "runtime's error",
        "a context again", "captured", "after the capture", "four threads", "back on cuda"}
    assert {label for label, path in paths.items() if path == "?"} == {"no arguments"}
    assert len(paths) == KERNEL_LAUNCH.count("case(\"") + 11 + 8  # (and the two loops' cases)
    rows = {label: result for label, result, _ in _rows(run_mode(lib, "1", KERNEL_LAUNCH))}
    values = "['a+0', 7, 2.5, 255, -3, 1.5, -9223372036854775808, 4294967295]"
    assert rows["first launch"] == f"(1, 0, True, (1, 1, 1), (32, 1, 1), 0, 's', {values})"
    assert rows["stream launch"] == f"(1, 0, True, (4, 1, 1), (64, 1, 1), 0, 's', {values})"
    assert rows["kernel launch"] == f"(1, 0, True, (2, 3, 1), (4, 5, 6), 128, 's', {values})"
    assert rows["unbound stream launch"] == rows["unbound kernel launch"] == rows["first launch"]
    assert rows["bound before the first launch"] == f"(2, 0, True, (2, 1, 1), (32, 1, 1), 0, 's', {values})"
    assert rows["buffer pointer"] == (f"((1, 0, True, (1, 1, 1), (32, 1, 1), 0, 's', ['a+16'{values[6:]}), 0)")
    assert rows["ints for floats"].endswith("['a+0', 7, 2.0, 255, -3, -1.0, -9223372036854775808, 4294967295])")
    assert rows["extremes"] == ("(1, 0, True, (4294967295, 1, 1), (1, 1, 4294967295), 49152, 's', "
                                "[18446744073709551615, -2147483648, 2.5, 0, 32767, inf, 9223372036854775807, 0])")
    assert rows["legacy stream"] == f"(1, 0, True, (1, 1, 1), (32, 1, 1), 0, 'NULL', {values})"
    assert rows["driver error"].startswith("GraphRTError: cuLaunchKernel failed") and "CUDA_ERROR_UNKNOWN" in \
        rows["driver error"]
    assert rows["runtime's error"].startswith("InvalidValue: cuLaunchKernel failed")
    assert rows["no context: the runtime's launch"] == f"(1, 1, True, (3, 1, 1), (32, 1, 1), 0, 'NULL', {values})"
    assert rows["a context again"] == f"(1, 0, True, (5, 1, 1), (32, 1, 1), 0, 'NULL', {values})"
    assert rows["ctypes int"].startswith("(1, 0, True, (1, 1, 1), (32, 1, 1), 0, 's', ['a+0', 5, ")
    assert rows["pointer None"].startswith("(1, 0, True, (1, 1, 1), (32, 1, 1), 0, 's', [0, 7, ")
    for label in ("bool for int", "int too big", "unsigned negative", "float too big", "float for int",
                  "pointer negative", "pointer float", "too few args", "too many args", "grid 0", "grid 2**32",
                  "four dims", "grid float", "block (0,)", "negative shared memory", "shared memory 2**32",
                  "shared memory float", "not a kernel", "not a stream", "mixed: sim stream, cuda kernel",
                  "mixed: cuda kernel on sim stream"):
        assert rows[label].startswith("InvalidValue"), (label, rows[label])
    assert rows["launch attributes"].startswith("NotSupported: cudaLaunchKernelExC failed")  # the fake has none
    assert rows["unknown attribute"].startswith("NotSupported") and "launch attribute 'shared'" in \
        rows["unknown attribute"]
    assert rows["a Stream subclass"] == f"(1, 0, True, (1, 1, 1), (32, 1, 1), 0, 'mine', {values})"
    assert rows["closed buffer"].startswith("InvalidResourceHandle")
    assert rows["closed stream"].startswith("InvalidResourceHandle")
    assert rows["captured"] == "(0, ['KERNEL', 'KERNEL'], [(6, 1, 1), (7, 1, 1)], [7, 2.5], ['DeviceBuffer'])"
    assert rows["after the capture"] == f"(1, 0, True, (7, 1, 1), (32, 1, 1), 0, 's', {values})"
    assert rows["four threads"] == "(401, 0)"
    assert rows["back on cuda"] == f"(1, 0, True, (9, 1, 1), (32, 1, 1), 0, 's', {values})"


@needs_fast
def test_installed_only_in_compiled_mode_and_info_says_so(fake_cudart):  # noqa: F811
    code = """
        import io
        import pygraphrt as rt
        from pygraphrt import _fast, lowlevel
        from pygraphrt.__main__ import info
        from pygraphrt.graph import Graph, GraphExec
        b = lowlevel.backend_object()
        print(type(Graph.__dict__["add_empty"]).__name__, _fast.hot_module(b) is not None)
        rt.Graph()  # the backend's first graph installs them
        print(type(Graph.__dict__["add_empty"]).__name__, type(Graph.__dict__["add_memset"]).__name__,
              type(GraphExec.__dict__["launch"]).__name__)
        f = io.StringIO(); info(f)
        print([l.strip() for l in f.getvalue().splitlines() if "hot methods:" in l][0])
        import inspect
        print(inspect.signature(Graph.add_empty), Graph.add_empty.__doc__.splitlines()[-1])
        print([l.strip() for l in f.getvalue().splitlines() if "kernel launches:" in l][0],
              type(rt.Stream.__dict__["launch"]).__name__, type(rt.Kernel.__dict__["launch"]).__name__)
        print(inspect.signature(rt.Stream.launch))
        hot = _fast.hot_module(b)
        print("handles read directly", hot.handles_read() if hot is not None else None)
        print(inspect.signature(Graph.add_memset))  # (keyword-only behind a guard: pygraphrt._keywords)
    """
    abi = run_mode(fake_cudart, "0", code).splitlines()
    api = run_mode(fake_cudart, "1", code).splitlines()
    assert abi[:3] == ["function False", "function function function",
                       "hot methods: Python (compiled mode only)"]
    assert api[:3] == ["function True", "method_descriptor method_descriptor method_descriptor",
                       "hot methods: C (GraphExec.launch, Graph.add_empty, Graph.add_memset, Graph.add_memcpy, "
                       "Graph.add_kernel)"]
    assert api[3] == "(self, /, *, dependencies=None, edges=None) An empty node: a join point with no work."
    assert abi[3].startswith("(self, *, dependencies: 'Iterable[Node] | None' = None")
    # (info installs the launches, as a kernel's first launch would)
    assert abi[4] == "kernel launches: Python (compiled mode only) function function"
    assert api[4] == "kernel launches: C (Stream.launch, Kernel.launch) method_descriptor method_descriptor"
    assert api[5] == "(self, /, kernel, grid, block, *args, shared_mem=0, **attributes)"
    # (cffi's layout proved when the backend was bound: the hot methods read handles directly)
    assert api[6] == "handles read directly True" and abi[6] == "handles read directly None"
    assert api[7] == ("(self, /, dst, value, count, *, element_size=1, height=1, pitch=0, dependencies=None, "
                      "edges=None, device=None)")
    assert abi[7].startswith("(self, dst: 'Any', value: 'int', count: 'int', *, element_size: 'int' = 1, ")


@needs_fast
def test_bind_refuses_classes_it_cannot_read(fake_cudart):  # noqa: F811
    out = run_mode(fake_cudart, "1", """
        import pygraphrt as rt
        from pygraphrt import _fast, lowlevel
        from pygraphrt.graph import Graph, GraphExec, Node
        from pygraphrt.graph._node import EmptyNode, MemcpyNode
        b = lowlevel.backend_object()
        rt.Graph()
        hot = _fast.hot_module(b)
        class Plain:
            pass
        class CopyWithSlot(MemcpyNode):
            __slots__ = ("extra",)
        classes = [Graph, GraphExec, rt.Stream, Node, EmptyNode, Plain, rt.DeviceBuffer, MemcpyNode]
        for bad in ((Plain,) + tuple(classes[1:]), tuple(classes), tuple(classes[:5]) + (EmptyNode, rt.DeviceBuffer,
                                                                                         CopyWithSlot)):
            try:
                hot.bind(b, b.ops.error, (None,) * 5, (None,) * 5, bad)
            except TypeError as exc:
                print(exc)
        good = (Graph, GraphExec, rt.Stream, Node, EmptyNode, EmptyNode, rt.DeviceBuffer, MemcpyNode)
        try:  # (cdata are made of the ctypes when a backend is bound: they must be ctypes)
            hot.bind(b, b.ops.error, (None,) * 5, (None,) * 5, good)
        except TypeError as exc:
            print(exc)
        from pygraphrt.graph import KernelNode
        from pygraphrt.kernels import Kernel, Library
        from pygraphrt.mempool import AsyncBuffer
        class WithSlot(KernelNode):
            __slots__ = ("extra",)
        for bad in ((Plain, Library, KernelNode, AsyncBuffer), (Kernel, Library, WithSlot, AsyncBuffer),
                    (Kernel, Library, KernelNode)):
            try:
                hot.bind_kernels(bad)
            except TypeError as exc:
                print(exc)
        class OldKernel(Kernel):  # its slots are inherited, not its own: refused
            __slots__ = ()
        ffi = b.ffi
        launch_types = (ffi.typeof("cudaStream_t"), ffi.typeof("void *"))
        for types, bad in ((launch_types, (rt.Stream, Plain, Library, rt.DeviceBuffer, AsyncBuffer)),
                           (launch_types, (rt.Stream, OldKernel, Library, rt.DeviceBuffer, AsyncBuffer)),
                           (launch_types, (rt.Stream, Kernel, Library, Plain, AsyncBuffer)),
                           (launch_types, (rt.Stream, Kernel, Library, rt.DeviceBuffer)),
                           (launch_types[:1], (rt.Stream, Kernel, Library, rt.DeviceBuffer, AsyncBuffer)),
                           ((None, None), (rt.Stream, Kernel, Library, rt.DeviceBuffer, AsyncBuffer))):
            try:
                hot.bind_launch(b, types, bad)
            except TypeError as exc:
                print(exc)
        g = rt.Graph()  # still bound as before
        print(type(g.add_empty(dependencies=[g.add_empty()])).__name__, hot.handles_read())
    """).splitlines()
    assert out == ["Plain._backend is not a __slots__ member of the class",
                   "bind: EmptyNode, MemsetNode and MemcpyNode must be concrete Node classes without slots of their own",
                   "bind: EmptyNode, MemsetNode and MemcpyNode must be concrete Node classes without slots of their own",
                   "bind: ctypes must be cffi ctypes",
                   "Plain._backend is not a __slots__ member of the class",
                   "bind_kernels: KernelNode must be a concrete Node class without slots of its own",
                   "bind_kernels: classes takes 4 classes",
                   "Plain._backend is not a __slots__ member of the class",
                   "OldKernel._backend is not a __slots__ member of the class",
                   "Plain._backend is not a __slots__ member of the class",
                   "bind_launch: classes takes 5 classes",
                   "bind_launch: ctypes takes 2 types", "bind_launch: ctypes must be cffi ctypes",
                   "EmptyNode True"]


LEAKS = """
    import gc, sys, tracemalloc
    import pygraphrt as rt
    from pygraphrt import errors, lowlevel
    from pygraphrt.graph import EmptyNode, Graph
    ffi = lowlevel.ffi
    s, g = rt.Stream(), rt.Graph()
    r = g.add_empty()
    exe = g.instantiate()
    exe.launch(s)
    null_graph = Graph._adopt(ffi.cast("cudaGraph_t", 0), owned=False)  # the stub refuses it
    closed = rt.Graph()
    closed.close()
    deps = [r]
    N = 20000
    k = rt.Kernel.wrap(0x5000, signature="float *x", kind="kernel", name="tiny")  # the stub's kernel
    g.add_kernel(k, 1, 32, (0x1000,))  # its first node checks the signature: C from now on
    kargs = (0x1000,)
    buf = rt.malloc(64)
    s.launch(k, 1, 32, buf)  # its first launch, likewise: Stream.launch and Kernel.launch in C

    def refs():
        return [sys.getrefcount(o) for o in (s, g, r, exe, deps, EmptyNode, null_graph, closed, k, kargs, buf)]

    def failing(fn):
        for _ in range(N):
            try:
                fn()
            except errors.GraphRTError:
                pass

    loops = {
        "launch": lambda: [exe.launch(s) for _ in range(N)],
        "launch fallback": lambda: failing(lambda: exe.launch(42)),
        "add_empty error": lambda: failing(lambda: null_graph.add_empty(dependencies=None)),
        "add_empty fallback": lambda: failing(lambda: closed.add_empty(dependencies=deps)),
        "add_memset error": lambda: failing(lambda: null_graph.add_memset(0x1000, 1, 1)),
        "add_memset fallback": lambda: failing(lambda: g.add_memset(0x1000, 256, 1)),
        "add_kernel error": lambda: failing(lambda: null_graph.add_kernel(k, 1, 32, kargs)),
        "add_kernel fallback": lambda: failing(lambda: g.add_kernel(k, 0, 32, kargs)),
        "add_nodes error": lambda: failing(lambda: null_graph.add_nodes([("empty", None, deps)] * 2)),
        "stream launch": lambda: [s.launch(k, 1, 32, buf) for _ in range(N)],
        "kernel launch": lambda: [k.launch(s, 1, 32, *kargs, shared_mem=0) for _ in range(N)],
        "launch error": lambda: failing(lambda: s.launch(k, 1, 32, buf, shared_mem=1 << 20)),  # the stub refuses it
        "stream launch fallback": lambda: failing(lambda: s.launch(k, 0, 32, buf)),
    }
    tracemalloc.start()
    for name, loop in loops.items():
        loop()  # warm-up: caches, interned strings
        gc.collect()
        before, mem = refs(), tracemalloc.get_traced_memory()[0]
        loop()
        gc.collect()
        print(name, [b - a for a, b in zip(before, refs())], tracemalloc.get_traced_memory()[0] - mem < 50_000)
    before = refs()
    made = [g.add_empty(dependencies=deps) for _ in range(N)]
    print("add_empty", [b - a for a, b in zip(before, refs())], len(g._table()) - 1 == N)
    del made
    kept = len(g._keep)
    made = [g.add_kernel(k, 1, 32, kargs, dependencies=deps) for _ in range(N)]
    print("add_kernel", [b - a for a, b in zip(before, refs())], len(g._table()) - 1 == 2 * N,
          len(g._keep) - kept == 1)  # the kernel, once (plain int arguments: nothing else to keep)
    del made
    g.close()
    gc.collect()
    print("after close", [b - a for a, b in zip(before, refs())])
    g._keep.clear()  # what the graph object keeps for its executables until it is gone
    print("without the graph's keep", [b - a for a, b in zip(before, refs())])
    # add_nodes writes handles; reading its entries (make_nodes, a chunk at a time) makes the
    # objects, each holding the graph and its class, given back when dropped
    g2 = rt.Graph()
    counts = lambda: [sys.getrefcount(o) for o in (g2, EmptyNode)]
    before = counts()
    bulk = g2.add_nodes([("empty", None)] * N)
    print("add_nodes", [b - a for a, b in zip(before, counts())], len(g2._table()))
    nodes = list(bulk)
    print("read", [b - a for a, b in zip(before, counts())], len(g2._table()) == N,
          all(x is y for x, y in zip(nodes, bulk)), len(set(map(id, nodes))) == N,
          not any(gc.is_tracked(e) for e in g2._table().values()))  # entries made in C: untracked
    del nodes, bulk
    gc.collect()
    print("dropped", [b - a for a, b in zip(before, counts())])
    print("launches in C", type(rt.Stream.__dict__["launch"]).__name__, k._launch_layout is not None)
"""


@needs_fast
def test_no_references_or_memory_left_behind(stub_cudart):  # noqa: F811
    """20000 calls of each path leave every object's reference count and the traced memory as they
    were; a node takes exactly one reference to the graph and one to its class, which the node
    gives back when its caller drops it (the node table keeps C-made nodes weakly)."""
    out = run_py(LEAKS, PYGRAPHRT_BACKEND="cuda", PYGRAPHRT_CUDART=str(stub_cudart),
                 PYGRAPHRT_FAST="1").splitlines()
    zero = [0] * 11
    assert out[:13] == [f"{name} {zero} True" for name in (
        "launch", "launch fallback", "add_empty error", "add_empty fallback", "add_memset error", "add_memset fallback",
        "add_kernel error", "add_kernel fallback", "add_nodes error", "stream launch", "kernel launch", "launch error",
        "stream launch fallback")]
    out = out[4:]  # (the kernel launches' lines)
    assert out[9] == "add_empty [0, 20000, 0, 0, 0, 20000, 0, 0, 0, 0, 0] True"
    # a kernel node: the graph and its class; the kernel is kept by one keep list entry for all
    # of them, not the argument tuple, which holds no buffer (the empty nodes, dropped, gave
    # theirs back)
    assert out[10] == "add_kernel [0, 20000, 0, 0, 0, 0, 0, 0, 1, 0, 0] True True"
    # the table: r, made in C and held by this script, and the nodes made since (the first kernel
    # node, made by the Python method and dropped by this script, was let go at a collection
    # before the counts were taken: graph/_fresh); r stays as it was after close
    assert out[11] == "after close [0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0]"
    # (k: less the first node's keep too, made before the counts were taken)
    assert out[12] == "without the graph's keep [0, 0, 0, 0, 0, 0, 0, 0, -1, 0, 0]"
    # the NodeList holds the graph; no node object until read (the graph's table is empty)
    assert out[13:] == ["add_nodes [1, 0] 0", "read [20001, 20000] True True True True", "dropped [0, 0]",
                        "launches in C method_descriptor True"]


ABI_KERNEL_KEEP = """
    import gc
    import pygraphrt as rt
    buf = rt.malloc(4096)
    k = rt.Kernel.wrap(0x5000, signature="float *x", kind="kernel", name="tiny")  # the stub's kernel
    g = rt.Graph()
    prev = g.add_empty()
    for _ in range(3):
        prev = g.add_kernel(k, 1, 32, (buf,), dependencies=[prev])
    N = 20000
    gc.collect()
    objects, kept = len(gc.get_objects()), len(g._keep)
    for _ in range(N):
        prev = g.add_kernel(k, 1, 32, (buf,), dependencies=[prev])
    gc.collect()
    print(f"{(len(gc.get_objects()) - objects) / N:.2f} {(len(g._keep) - kept) / N:.2f}", g._keep[-2:] == [buf, k])
    other = rt.malloc(64)
    g.add_kernel(k, 1, 32, (other,))
    print(g._keep[-3:] == [buf, k, other], len(g._keep) - kept)
"""


def test_abi_kernel_nodes_keep_list_entries_not_objects(stub_cudart):  # noqa: F811
    """ABI mode's kernel nodes keep the kernel and the buffers their pointers came from as entries
    of the graph's keep list, as the C method does, not a tuple and a list per node; and a node
    the caller drops is let go at the next collection (graph/_fresh), so the collector gains
    no object a node.  Nodes of the same kernel and buffer add no entry (one of the list's last
    entries keeps each already); a new buffer adds one."""
    out = run_py(ABI_KERNEL_KEEP, PYGRAPHRT_BACKEND="cuda", PYGRAPHRT_CUDART=str(stub_cudart),
                 PYGRAPHRT_FAST="0")
    assert out.split() == ["0.00", "0.00", "True", "True", "1"]


NODE_TABLE = """
    import gc, weakref
    import pygraphrt as rt
    g = rt.Graph()
    root = g.add_empty()
    a = g.add_memset(0x1000, 7, 16, dependencies=[root])
    h = int(a)
    entry = g._table()[a._handle]
    print("entry", type(entry).__name__, gc.is_tracked(entry))
    print("the live object", [n is a for n in g.nodes()], g.nodes()[1].dependencies[0][0] is root)
    w = weakref.ref(a)
    del a
    print("freed when dropped", w() is None)
    b = [n for n in g.nodes() if int(n) == h][0]
    print("made again", type(b).__name__, b.is_valid, b is g.nodes()[1], b.dependencies[0][0] is root,
          b.params["value"])
    g2 = rt.Graph()
    n2 = g2.add_empty()
    wg = weakref.ref(g2)
    del g2
    print("a held node keeps its graph", wg() is not None, n2.graph is wg())
    gc.disable()
    del n2
    by_refcount = wg() is None
    gc.enable()
    gc.collect()
    print("freed by refcount", by_refcount)
    print("freed", wg() is None)
"""


@needs_fast
def test_node_table_keeps_c_made_nodes_weakly(fake_cudart):  # noqa: F811
    """The C add methods enter their nodes in the node table by an untracked weak reference:
    a node its caller drops is freed at once (no object left for the cyclic collector), a
    graph whose nodes are all dropped goes by refcount, and everything observable is as in ABI
    mode, where the table keeps the node itself: the one live object per handle, a dropped
    node made again (of its class, with its values) when the graph lists it."""
    abi = run_mode(fake_cudart, "0", NODE_TABLE).splitlines()
    api = run_mode(fake_cudart, "1", NODE_TABLE).splitlines()
    same = ["the live object [False, True] True", "made again MemsetNode True True True 7",
            "a held node keeps its graph True True", "freed True"]
    assert [abi[i] for i in (1, 3, 4, 6)] == same
    assert [api[i] for i in (1, 3, 4, 6)] == same
    assert abi[0] == "entry MemsetNode True" and api[0] == "entry ReferenceType False"
    assert abi[2] == "freed when dropped False" and api[2] == "freed when dropped True"
    assert abi[5] == "freed by refcount False" and api[5] == "freed by refcount True"
