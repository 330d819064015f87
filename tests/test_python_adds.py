"""The Python add methods (ABI mode and the simulator; the compiled mode's adds are C), on the
simulator, in process.

Three things the hot paths do to cost less, and what must not change because of them:

* a node made by ``add_*`` enters the graph's node table lazily (``Graph._fresh``, entered by
  ``Graph._table`` when anything reads the table): every readback still gives the object the add
  returned, with its parameters and device; a node destroyed, or its graph closed, before the
  table was read reads as gone; nothing is kept after ``close``; and a node nothing but the
  graph refers to is let go at the next collection (``graph/_fresh``), made again when read;
* ``add_memset`` does not check and pack again the very same objects it packed last
  (``Graph._memset_last``): equal values of another type still take the checks, a closed buffer
  is still refused, and whoever else writes the struct (the generic validation, ``add_nodes``'
  loop) makes the next call pack again;
* a kernel's hot adder keeps each buffer given as an object once per run of nodes (the keep
  list's last entries, tested inline), never dropping one; and does not check and pack again
  the very same objects it packed last for that graph (``Graph._kernel_last``), unless another
  graph's node of that kernel, or the general path, filled the kernel's struct since, and
  still refuses a buffer closed since;
* ``add_memset`` and ``add_kernel`` take their keyword-only parameters as ordinary ones behind a
  guard (``pygraphrt._keywords``): the call forms, errors and signature stay keyword-only.
"""

from __future__ import annotations

import functools
import gc
import sys
import weakref

import pytest

import pygraphrt as rt

from .backends import selected, simulator
from .test_fast_mode import fake_cudart  # noqa: F401  (a fixture)


@pytest.fixture(scope="module", autouse=True)
def sim_backend():
    with selected("sim"):
        yield


def _same(xs, ys) -> bool:
    """The same objects, in any order."""
    return sorted(map(id, xs)) == sorted(map(id, ys))


def test_every_readback_gives_the_object_the_add_returned():
    buf = rt.malloc(64)
    g = rt.Graph()
    gc.disable()  # (a collection would enter the held nodes now: graph/_fresh, tested below)
    try:
        a = g.add_empty()
        b = g.add_memset(buf, 1, 16, dependencies=[a])
        c = g.add_memset(buf, 1, 16, dependencies=[b])  # (the packed values reused)
        d = g.add_host(lambda: None, dependencies=[c])
        e = g.add_empty(dependencies=[a, d])
        assert len(g._fresh) == 5  # none entered yet: what this test is about
    finally:
        gc.enable()
    assert _same(g.nodes(), [a, b, c, d, e])
    assert not g._fresh
    assert _same([n for n, _ in e.dependencies], [a, d]) and _same([n for n, _ in a.dependents], [b, e])
    assert all(g._wrap(n.handle) is n for n in (a, b, c, d, e))
    want = {"dst": buf.ptr, "value": 1, "element_size": 1, "width": 16, "height": 1, "pitch": 0}
    assert b.params == c.params == want
    # nodes made after the table was read join it the same way
    f = g.add_empty(dependencies=[e])
    assert sum(x is f for x in g.nodes()) == 1
    assert [n for n, _ in f.dependencies][0] is e


def test_a_node_destroyed_before_the_table_is_read_reads_as_gone():
    g = rt.Graph()
    a = g.add_empty()
    b = g.add_empty(dependencies=[a])
    b.destroy()  # its table entry was never made
    assert not b.is_valid
    c = g.add_empty(dependencies=[a])  # (the runtime may give it b's address)
    assert _same(g.nodes(), [a, c]) and g._wrap(c.handle) is c and c.is_valid
    # a node a bulk call made through a one-node method (a memset with element_size) is the
    # list's entry: destroyed, the entry stays that object, destroyed
    buf = rt.malloc(64)
    made = g.add_nodes([("empty", None, [a]), ("memset", {"dst": buf, "value": 1, "count": 4, "element_size": 1}, [0])])
    node = made[1]
    node.destroy()
    assert made[1] is node and not made[1].is_valid
    assert _same(g.nodes(), [a, c, made[0]])


def test_a_closed_graph_keeps_no_node_and_its_nodes_read_as_closed():
    g = rt.Graph()
    a = g.add_empty()
    b = g.add_memset(rt.malloc(16), 0, 16, dependencies=[a])
    ref = weakref.ref(b)
    g.close()
    assert not a.is_valid and not b.is_valid
    with pytest.raises(rt.errors.InvalidResourceHandle):
        b.params
    del b
    gc.collect()
    assert ref() is None  # the closed graph holds none of its nodes
    # a node keeps its graph alive (the graph was never named)
    n = rt.Graph().add_empty()
    m = n.graph.add_empty(dependencies=[n])
    gc.collect()
    assert m.graph is n.graph and _same(n.graph.nodes(), [n, m]) and n.graph._wrap(m.handle) is m


def test_nodes_only_their_graph_holds_are_let_go_at_a_collection():
    """graph/_fresh: at a collection's start, the fresh nodes nothing else refers to are freed
    before the collector walks them, and the held ones entered in the node table, each the one
    object of its handle; a dropped node is made again from its handle, of its class and with
    its values; a graph that made no node since the last collection is watched no more, and its
    next add watches it again."""
    from pygraphrt.graph import _fresh

    buf = rt.malloc(64)
    g = rt.Graph()
    root = g.add_empty()
    held = [g.add_memset(buf, 7, 16, dependencies=[root]) for _ in range(3)]
    dropped = [weakref.ref(g.add_memset(buf, 7, 16, dependencies=[root])) for _ in range(40)]
    dropped += [weakref.ref(g.add_empty(dependencies=[held[0]])) for _ in range(40)]
    assert _fresh.active() is True and _fresh.watching(g)
    gc.collect()
    assert not g._fresh and all(r() is None for r in dropped)
    assert _same([v for v in g._nodes.values() if type(v) is not weakref.ref], [root, *held])
    nodes = g.nodes()
    assert len(nodes) == 84 and sum(n is x for n in nodes for x in (root, *held)) == 4
    remade = [n for n in nodes if not any(n is x for x in (root, *held))]
    assert sorted(type(n).__name__ for n in remade) == ["EmptyNode"] * 40 + ["MemsetNode"] * 40
    assert all(n.params["value"] == 7 for n in remade if isinstance(n, rt.graph.MemsetNode))
    assert all(g._wrap(n.handle) is n for n in remade[:3]) and remade[0].is_valid
    gc.collect()  # a collection that finds no fresh node: watched no more
    assert not _fresh.watching(g)
    last = g.add_memset(buf, 7, 16, dependencies=[held[1]])  # (the packed values reused)
    assert _fresh.watching(g) and g._fresh == [last]
    g.close()
    gc.collect()
    assert not g._fresh and not g._nodes and not _fresh.watching(g)


def test_nodes_stay_fresh_where_no_graph_can_be_watched(monkeypatch):
    """Where the reference counts cannot tell a held node (graph/_fresh._calibrate: no
    ``sys.getrefcount``, a free-threaded build) no graph is watched: a collection leaves every
    fresh node as it is, for the table to enter when read."""
    from pygraphrt.graph import _fresh

    assert isinstance(_fresh._calibrate(), int)
    monkeypatch.setattr(_fresh, "_base", False)
    g = rt.Graph()
    a = g.add_empty()
    refs = [weakref.ref(g.add_empty(dependencies=[a])) for _ in range(10)]
    gc.collect()
    assert not _fresh.watching(g) and len(g._fresh) == 11 and all(r() is not None for r in refs)
    assert len(g.nodes()) == 11 and not g._fresh
    # counts that tell nothing apart
    monkeypatch.setattr(_fresh, "_enter_held", functools.partial(_fresh._enter_held, count=lambda obj: 5))
    assert _fresh._calibrate() is False


def test_a_graph_built_while_another_thread_collects_loses_no_node():
    """graph/_fresh sorts in whichever thread a collection starts in, while the graph's own thread
    may be adding to it: each node the builder holds stays the one object of its handle (none
    appended between the sort's copy of the list and its emptying is lost), with threads
    switched as often as CPython allows."""
    import threading

    g = rt.Graph()
    held = [g.add_empty()]
    stop = threading.Event()

    def collect():
        while not stop.is_set():
            gc.collect(0)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    collector = threading.Thread(target=collect)
    collector.start()
    try:
        for _ in range(12000):
            held.append(g.add_empty(dependencies=[held[-1]]))
    finally:
        stop.set()
        collector.join(timeout=60)
        sys.setswitchinterval(interval)
    assert not collector.is_alive()
    table = g._table()
    assert sum(table.get(n.handle) is n for n in held) == len(held)
    assert len(g.nodes()) == len(held)


def test_only_conditional_nodes_have_state_of_their_own():
    """graph/_fresh may let a node object go because no node made through ``Graph._fresh`` has
    state of its own: only ConditionalNode has (its bodies), and it is made into the table."""
    import pygraphrt.graph._hip_nodes  # noqa: F401  (its node classes too)
    from pygraphrt.graph._node import ConditionalNode, Node

    def below(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from below(sub)

    own = {c for c in below(Node) if any(k.__dict__.get("__slots__") for k in c.__mro__[:c.__mro__.index(Node)])}
    assert own == {ConditionalNode}


def test_nodes_made_before_and_after_a_second_device_came_into_use_know_their_device():
    from pygraphrt import multidevice

    with simulator(2) as backend:
        try:
            buf0 = rt.malloc(64)
            g = rt.Graph()
            a = g.add_empty()  # device 0, the only one in use yet: not in the table
            b = g.add_memset(buf0, 0, 64, dependencies=[a])
            b2 = g.add_memset(buf0, 0, 64, dependencies=[b])  # (the packed values reused)
            with rt.Device(1):
                # the very objects add_memset packed before the second device came into use
                b3 = g.add_memset(buf0, 0, 64, dependencies=[b2])
                b4 = g.add_memset(buf0, 0, 64, dependencies=[b3])
                buf1 = rt.malloc(64)
                c = g.add_empty(dependencies=[b2])
                d = g.add_memset(buf1, 0, 64, dependencies=[c])
                d2 = g.add_memset(buf1, 0, 64, dependencies=[d])  # (the same objects again)
            e = g.add_memset(buf0, 0, 64, dependencies=[d2], device=0)
            assert [n.device for n in (a, b, b2, c, d, d2, b3, b4, e)] == [0, 0, 0, 1, 1, 1, 1, 1, 0]
            assert _same(g.nodes(), [a, b, b2, c, d, d2, b3, b4, e])
            assert {g._wrap(n.handle).device for n in (c, d, d2, b3, b4)} == {1}
        finally:
            multidevice._reset_several(backend)


def _attributes_in_a_dict(obj, marker: str) -> bool:
    """Whether ``obj``'s attributes moved out of its inline values into a dict (one holding the
    attribute ``marker``): what reading ``obj.__dict__`` does in CPython 3.11 and 3.12, which
    then stops specializing reads of its attributes (see ``_runtime.Backend.memo``).  Told from
    what the collector visits, which reading ``__dict__`` here would change."""
    return any(type(r) is dict and marker in r for r in gc.get_referents(obj))


@pytest.mark.skipif(sys.version_info[:2] not in ((3, 11), (3, 12)),
                    reason="the cost of a read __dict__ was measured in CPython 3.11 and 3.12; other "
                           "versions lay instance attributes out otherwise")
def test_backend_graphs_and_executables_keep_their_attributes_out_of_a_dict():
    from pygraphrt import multidevice

    with simulator(2) as backend:
        try:
            buf = rt.malloc(64)
            g = rt.Graph()
            a = g.add_memset(buf, 0, 64, device=0)  # (Backend.memo's device count, one device yet)
            with rt.Device(1):  # (its GetDevice getter; several devices from here on)
                buf1 = rt.malloc(64)
            b = g.add_memset(buf1, 1, 64, dependencies=[a], device=1)  # (the graph's node devices)
            assert b.device == 1
            rt.Device(0).can_access_peer(1)
            clone = g.clone()
            wrapped = rt.Graph.wrap(int(backend.ffi.cast("uintptr_t", clone.handle)), owner=clone)
            wrapped.add_empty()
            exe = g.instantiate()
            assert exe.update(g) is rt.UpdateResult.SUCCESS
            exe.set_memset(a, value=3)  # (the setters' record)
            s = rt.Stream()
            exe.launch(s)
            s.synchronize()
            assert buf.to_bytes(4) == bytes([3]) * 4
            control = rt.Graph()
            control.__dict__  # noqa: B018  (what the check below must see)
            assert _attributes_in_a_dict(control, "_fresh")
            for obj, marker in ((backend, "several"), (g, "_fresh"), (clone, "_fresh"), (wrapped, "_fresh"),
                                (exe, "_launch_fn")):
                assert not _attributes_in_a_dict(obj, marker), obj
        finally:
            multidevice._reset_several(backend)


def _outcome(graph, *args, **kw):
    try:
        n = graph.add_memset(*args, **kw)
    except rt.errors.GraphRTError as exc:
        return type(exc).__name__, str(exc)
    return n.params


def test_add_memset_packs_again_unless_given_the_very_same_objects():
    buf, other = rt.malloc(64), rt.malloc(64)
    g = rt.Graph()
    g.add_memset(buf, 7, 16)
    assert g.add_memset(buf, 7, 16).params["value"] == 7
    assert g.add_memset(other, 7, 16).params["dst"] == other.ptr
    assert g.add_memset(other, 9, 8, element_size=2).params == {
        "dst": other.ptr, "value": 9, "element_size": 2, "width": 8, "height": 1, "pitch": 0}
    # equal values of another type take the checks a fresh graph makes
    for value, odd in ((7, 7.0), (1, True), (0, 0.0)):
        g.add_memset(buf, value, 16)
        assert _outcome(g, buf, odd, 16) == _outcome(rt.Graph(), buf, odd, 16)
    g.add_memset(buf, 1, 16, element_size=1)
    assert _outcome(g, buf, 1, 16, element_size=1.0) == _outcome(rt.Graph(), buf, 1, 16, element_size=1.0)
    # a buffer closed since is refused, as pygraphrt refuses it the first time (the same
    # error: pygraphrt's, before the runtime is called)
    gone = rt.malloc(64)
    g.add_memset(gone, 3, 16)
    gone.close()
    assert _outcome(g, gone, 3, 16) == _outcome(rt.Graph(), gone, 3, 16)
    assert _outcome(g, gone, 3, 16)[0] == "InvalidResourceHandle"


class _Int(int):
    """An int the generic validation accepts and add_memset's fast path leaves to it."""


def test_add_memset_packs_again_after_the_generic_validation_wrote_the_struct():
    buf = rt.malloc(64)
    g = rt.Graph()
    g.add_memset(buf, 5, 16)
    # a value the fast path leaves to the generic validation (not a plain int), which accepts it
    n = g.add_memset(buf, _Int(1), 16)
    assert n.params["value"] == 1
    assert g.add_memset(buf, 5, 16).params["value"] == 5


@pytest.mark.headers
def test_add_memset_packs_again_after_add_nodes_wrote_the_struct(fake_cudart):
    """ABI mode's add_nodes loop (graph/_bulk._abi_loop: the simulator's add_nodes takes the
    one-node methods) refills add_memset's struct: the next add_memset must pack again."""
    from .test_fast_mode import run_mode

    out = run_mode(fake_cudart, "0", """
        import pygraphrt as rt
        g = rt.Graph()
        g.add_memset(0x10000, 5, 16)
        made = g.add_nodes([("memset", {"dst": 0x20000, "value": 3, "count": 8})])
        print(made[0].params)
        print(g.add_memset(0x10000, 5, 16).params)
        print(rt.backend().ffi_mode)
    """).splitlines()
    assert out[0] == str({"dst": 0x20000, "value": 3, "element_size": 1, "width": 8, "height": 1, "pitch": 0})
    assert out[1] == str({"dst": 0x10000, "value": 5, "element_size": 1, "width": 16, "height": 1, "pitch": 0})
    assert out[2].startswith("abi")


def test_nodes_the_runtime_no_longer_has_read_as_gone_before_the_table_was_read():
    """Graph._keep_only (a recapture: the runtime's nodes are now these) reaches nodes made since
    the table was last read."""
    g = rt.Graph()
    a = g.add_empty()
    b = g.add_empty(dependencies=[a])
    c = g.add_memset(rt.malloc(16), 0, 16, dependencies=[b])
    g._keep_only({a.handle})
    assert a.is_valid and not b.is_valid and not c.is_valid
    assert g._wrap(a.handle) is a


def test_kernel_nodes_keep_every_buffer_given_as_an_object():
    k = rt.Program('extern "C" __global__ void two(float *a, float *b) {}').kernel("two", signature="float *a, float *b")
    bufs = [rt.malloc(16) for _ in range(4)]
    g = rt.Graph()
    prev = g.add_empty()
    # a run of the same buffers, then every pair in turn: all are kept, a run adds no entry
    for _ in range(50):
        prev = g.add_kernel(k, 1, 32, (bufs[0], bufs[1]), dependencies=[prev])
    length = len(g._keep)
    for _ in range(50):
        prev = g.add_kernel(k, 1, 32, (bufs[0], bufs[1]), dependencies=[prev])
    assert len(g._keep) == length
    for a in range(4):
        for b in range(4):
            prev = g.add_kernel(k, 1, 32, (bufs[a], bufs[b]), dependencies=[prev])
            assert any(x is bufs[a] for x in g._keep) and any(x is bufs[b] for x in g._keep)
    refs = [weakref.ref(b) for b in bufs]
    del bufs, a, b
    gc.collect()
    assert all(r() is not None for r in refs)  # the graph keeps them
    g.close()
    del g, prev
    gc.collect()
    assert all(r() is None for r in refs)


def test_kernel_nodes_pack_again_unless_given_the_same_values():
    """A kernel's hot adder packs its arguments only when they are not the very objects it
    packed last (0.0 == -0.0, and the node must get the bits it was given); the general path
    packing into the same buffer in between (a node with edge data), or a node of that kernel in
    another graph, makes the next node pack again; a buffer closed since is refused."""
    from pygraphrt.enums import DEFAULT_EDGE

    k = rt.Program('extern "C" __global__ void f(float *x, float v, int n) {}').kernel(
        "f", signature="float *x, float v, int n")
    buf, other = rt.malloc(64), rt.malloc(64)
    g = rt.Graph()
    prev = g.add_empty()
    made = []
    for args in ((buf, 1.0, 3), (buf, 1.0, 3), (buf, -0.0, 3), (buf, 0.0, 3), (buf, 0.0, 3), (other, 0.0, 3),
                 (other, 0.0, 4), (buf.ptr, 0.0, 4)):
        prev = g.add_kernel(k, 1, 32, args, dependencies=[prev])
        made.append((prev, args))
    for node, (p, v, n) in made:
        got = node.params["args"]
        assert got[0] == (p if type(p) is int else p.ptr) and repr(got[1]) == repr(v) and got[2] == n
    # the general path packs other values into the buffer (edge data: not the hot adder)
    g.add_kernel(k, 1, 32, (other, 2.0, 5), dependencies=[prev], edges=[DEFAULT_EDGE])
    again = g.add_kernel(k, 1, 32, (buf.ptr, 0.0, 4), dependencies=[prev])
    assert again.params["args"][1:] == [0.0, 4] and again.params["args"][0] == buf.ptr
    # another graph's node of the kernel fills its struct: this graph's next node packs again
    v, n = 5.0, 6
    g.add_kernel(k, 1, 32, (buf, v, n))
    g.add_kernel(k, 1, 32, (buf, v, n))
    rt.Graph().add_kernel(k, 2, 64, (other, 1.0, 2))
    back = g.add_kernel(k, 1, 32, (buf, v, n))
    assert back.params["args"] == [buf.ptr, 5.0, 6] and tuple(back.params["grid"]) == (1, 1, 1)
    assert tuple(back.params["block"]) == (32, 1, 1)
    # two kernels of one signature in turn, with the same objects: each node is its own kernel's
    twin = rt.Program('extern "C" __global__ void g(float *x, float v, int n) {}').kernel(
        "g", signature="float *x, float v, int n")
    for kernel in (k, k, twin, twin, k, twin):
        made = g.add_kernel(kernel, 1, 32, (buf, v, n))
        assert made.params["kernel"] is kernel and made.params["args"] == [buf.ptr, 5.0, 6]
    # a buffer closed since the very same call succeeded is refused, as a fresh graph refuses it
    gone = rt.malloc(64)
    g.add_kernel(k, 1, 32, (gone, v, n))
    g.add_kernel(k, 1, 32, (gone, v, n))
    gone.close()

    def outcome(graph):
        try:
            graph.add_kernel(k, 1, 32, (gone, v, n))
        except rt.errors.GraphRTError as exc:
            return type(exc).__name__, str(exc)
        return "made"

    assert outcome(g) == outcome(rt.Graph()) and outcome(g)[0] == "InvalidResourceHandle"


def test_the_hot_adds_keyword_only_parameters_stay_keyword_only():
    import inspect

    from pygraphrt.graph import Graph

    k = rt.Program('extern "C" __global__ void f(float *x) {}').kernel("f", signature="float *x")
    buf = rt.malloc(64)
    g = rt.Graph()
    for call in (lambda: g.add_memset(buf, 0, 16, 1), lambda: g.add_memset(buf, 0, 16, 1, 1, 0),
                 lambda: g.add_kernel(k, 1, 32, (buf,), 0), lambda: Graph.add_memset(g, buf, 0, 16, 4),
                 lambda: g.add_memset(buf, 0, 16, _kw_only=None)):
        with pytest.raises(TypeError, match="keyword-only"):
            call()
    assert g.nodes() == []  # nothing was made
    for method, positional in ((Graph.add_memset, ["self", "dst", "value", "count"]),
                               (Graph.add_kernel, ["self", "kernel", "grid", "block", "args"])):
        params = inspect.signature(method).parameters
        # (the compiled methods' self is positional-only, as a C method's is)
        assert [n for n, p in params.items() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)] == positional
        assert "_kw_only" not in params and all(p.kind is p.KEYWORD_ONLY for n, p in params.items()
                                                if n not in positional)
    assert inspect.signature(Graph.add_memset).parameters["element_size"].default == 1
    node = g.add_memset(buf, 0, 8, element_size=2, height=1, pitch=0)
    assert node.params["element_size"] == 2
