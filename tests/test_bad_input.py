"""Arguments of the wrong type or out of range, on the simulator: every public call here raises
InvalidValue naming the call (never an AttributeError, TypeError or OverflowError from inside
pygraphrt or cffi, never an address wrapped round), adds no node and leaves no stream capturing."""

from __future__ import annotations

import pytest

import pygraphrt as rt
from pygraphrt import errors

from .backends import selected

#: Values no call below takes where it wants an Event, Stream, Graph, iterable, size or ordinal.
BAD = [None, -1, 1 << 64, 1.5, "x", True, object(), (1, 2, 3, 4)]


@pytest.fixture(scope="module")
def objs():
    with selected("sim"):
        s, other = rt.Stream(), rt.Stream()
        g = rt.Graph()
        root = g.add_empty()
        yield {"s": s, "g": g, "root": root, "buf": rt.malloc(256), "exe": g.instantiate(),
               "event": rt.Event(), "host": bytearray(64)}
        other.synchronize()


def _calls(o):
    s, g, root, buf, exe, event, host = (o[k] for k in ("s", "g", "root", "buf", "exe", "event", "host"))
    return {
        "Stream.record": (lambda v: s.record(v), "all"),
        "Stream.wait": (lambda v: s.wait(v), "all"),
        "Event.elapsed_ms": (lambda v: event.elapsed_ms(v), "all"),
        "GraphExec.upload": (lambda v: exe.upload(v), "all"),
        "GraphExec.update": (lambda v: exe.update(v), "all"),
        "GraphExec.launch": (lambda v: exe.launch(v), "all"),
        "Stream.capture graph": (lambda v: s.capture(graph=v).__enter__(), "not None"),
        "Graph.add_empty dependencies": (lambda v: g.add_empty(dependencies=v), "not None, not tuple"),
        "Graph.add_empty edges": (lambda v: g.add_empty(dependencies=[root], edges=v), "not None, not tuple"),
        "Graph.add_memcpy_2d width": (lambda v: g.add_memcpy_2d(buf, 64, host, 64, v, 1), "all"),
        "Graph.add_memcpy_2d depth": (lambda v: g.add_memcpy_2d(buf, 64, host, 64, 8, 1, v), "all"),
        "Graph.add_memset dst": (lambda v: g.add_memset(v, 0, 8), "all"),
        "Graph.add_memcpy count": (lambda v: g.add_memcpy(buf, host, v), "all"),
        "Graph.add_nodes": (lambda v: g.add_nodes(v), "not None, not tuple"),
        "Graph.add_nodes spec": (lambda v: g.add_nodes([v]), "all"),
        "Graph.add_nodes spec dependencies": (lambda v: g.add_nodes([("empty", None, v)]), "not None, not tuple"),
        "Graph.add_networkx": (lambda v: g.add_networkx(v), "all"),
        "Graph.instantiate flags": (lambda v: g.instantiate(flags=v), "all"),
        "DeviceBuffer.copy_from": (lambda v: buf.copy_from(v), "all"),
        "Stream.wait_external_semaphores": (lambda v: s.wait_external_semaphores(v), "all"),
        "Stream priority": (lambda v: rt.Stream(priority=v), "not -1"),
        "Device": (lambda v: rt.Device(v).set_current(), "all"),
        "MemPool device": (lambda v: rt.MemPool(v), "not None"),
    }


_NAMES = ["None", "-1", "2**64", "1.5", "'x'", "True", "object", "tuple"]
_SKIPS = {"all": set(), "not None": {"None"}, "not None, not tuple": {"None", "tuple"},
          "not -1": {"-1"}}


def _cases():
    # (call, value): the values each call refuses (a few are valid for some calls: None means
    # "no dependencies", a tuple of ints is a dims-like tuple, -1 a stream priority, ...)
    for name, (_, which) in _calls({k: None for k in ("s", "g", "root", "buf", "exe", "event", "host")}).items():
        skip = _SKIPS[which]
        for label, v in zip(_NAMES, BAD):
            if label not in skip:
                yield pytest.param(name, v, id=f"{name}-{label}")


@pytest.mark.parametrize("name, value", list(_cases()))
def test_bad_arguments_raise_invalid_value(objs, name, value):
    pytest.importorskip("networkx") if name == "Graph.add_networkx" else None
    with selected("sim"):
        g, s = objs["g"], objs["s"]
        before = len(g)
        call = _calls(objs)[name][0]
        with pytest.raises(errors.InvalidValue):
            call(value)
        assert len(g) == before
        assert not s.is_capturing
