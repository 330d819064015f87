"""The inlined hot paths of explicit building (add_empty, add_memset, add_nodes) on the sim
backend: the same nodes, parameters and refusals as the general path."""

from __future__ import annotations

import pytest

import pygraphrt as rt
from pygraphrt import errors
from pygraphrt.enums import NodeType

from .backends import selected


@pytest.fixture(scope="module", autouse=True)
def sim_backend():
    with selected("sim"):
        yield


MEMSETS = [  # (value, count, element_size, height, pitch)
    (7, 16, 1, 1, 0), (0xABCD, 8, 2, 1, 0), (0xDEADBEEF, 4, 4, 1, 0), (255, 16, 1, 4, 64),
    (3, 1, 1, 1, 0),
]


@pytest.mark.parametrize("as_buffer", [False, True])
def test_memset_params_match_the_generic_form(as_buffer):
    buf = rt.malloc(4096)
    dst = buf if as_buffer else buf.ptr
    g = rt.Graph()
    root = g.add_empty()
    for value, count, es, height, pitch in MEMSETS:
        fast = g.add_memset(dst, value, count, element_size=es, height=height, pitch=pitch,
                            dependencies=[root])
        generic = g.add_node(NodeType.MEMSET, dst=dst, value=value, count=count, element_size=es,
                             height=height, pitch=pitch, dependencies=[root])
        assert fast.params == generic.params
        assert fast.params["dst"] == buf.ptr and fast.params["value"] == value
        assert g._wrap(fast.handle) is fast and fast.type is NodeType.MEMSET
    assert (buf in g._keep) is as_buffer  # buffers given as objects live as long as the graph


def test_memset_operands_other_than_ints_and_buffers():
    buf = rt.malloc(64)
    g = rt.Graph()
    n = g.add_memset(rt.lowlevel.ffi.cast("void *", buf.ptr + 8), 1, 8)
    assert n.params["dst"] == buf.ptr + 8
    assert len(g) == 1


@pytest.mark.parametrize("kw, match", [
    ({"value": 256}, "does not fit"), ({"value": -1}, "does not fit"), ({"value": True}, "does not fit"),
    ({"value": 1 << 16, "element_size": 2}, "does not fit"), ({"element_size": 3}, "1, 2 or 4"),
    ({"element_size": [1]}, "1, 2 or 4"), ({"count": -1}, "non-negative"), ({"count": 2.0}, "non-negative"),
    ({"height": -1}, "non-negative"), ({"pitch": None}, "non-negative"), ({"dst": -5}, "address -5 is out of range"),
    ({"dst": True}, "a bool is not a pointer"), ({"dst": object()}, "not a pointer or buffer"),
    ({"count": 1 << 64}, "does not fit a 64-bit size"), ({"height": 1 << 64}, "does not fit a 64-bit size"),
    ({"pitch": 1 << 70}, "does not fit a 64-bit size"), ({"dst": 1 << 64}, "out of range"),
    ({"dst": (1 << 64) + 0x1000}, "out of range"), ({"value": 1 << 32, "element_size": 4}, "does not fit"),
])
def test_memset_refusals(kw, match):
    buf = rt.malloc(64)
    args = {"dst": buf.ptr, "value": 1, "count": 8, **kw}
    g = rt.Graph()
    with pytest.raises(errors.InvalidValue, match=match):
        g.add_memset(args.pop("dst"), args.pop("value"), args.pop("count"), **args)
    assert len(g) == 0
    assert g.add_memset(buf, 1, 8).params["value"] == 1  # the reused struct is refilled in full


def test_memset_closed_buffer_and_graph():
    buf = rt.malloc(64)
    g = rt.Graph()
    buf.close()
    with pytest.raises(errors.InvalidResourceHandle):
        g.add_memset(buf, 0, 8)
    g.close()
    with pytest.raises(errors.InvalidResourceHandle):
        g.add_memset(0x1000, 0, 8)
    with pytest.raises(errors.InvalidResourceHandle):
        g.add_empty()


@pytest.mark.parametrize("method", ["empty", "memset"])
def test_dependency_checks(method):
    buf = rt.malloc(64)
    g, other = rt.Graph(), rt.Graph()
    add = (lambda **kw: g.add_empty(**kw)) if method == "empty" else (
        lambda **kw: g.add_memset(buf, 0, 8, **kw))
    a = g.add_empty()
    foreign = other.add_empty()
    with pytest.raises(errors.InvalidValue, match="another graph"):
        add(dependencies=[foreign])
    with pytest.raises(errors.InvalidValue, match="not a Node"):
        add(dependencies=[42])
    exe = g.instantiate()  # has _graph and _handle, but is no node
    with pytest.raises(errors.InvalidValue, match="not a Node"):
        add(dependencies=[exe])
    with pytest.raises(errors.InvalidValue, match="another graph"):
        add(dependencies=[a, foreign])
    dead = g.add_empty()
    dead.destroy()
    with pytest.raises(errors.InvalidResourceHandle):
        add(dependencies=[dead])
    with pytest.raises(errors.InvalidResourceHandle):
        add(dependencies=[a, dead])
    assert len(g) == 1
    # generators, several dependencies (the scratch array grows), edges given as defaults
    many = [g.add_empty() for _ in range(20)]
    n = add(dependencies=iter(many[:3]))
    assert {d for d, _ in n.dependencies} == set(many[:3])
    n = add(dependencies=many)
    assert {d for d, _ in n.dependencies} == set(many)
    n = add(dependencies=many[:2])
    assert {d for d, _ in n.dependencies} == set(many[:2])
    n = add(dependencies=(a,), edges=[rt.enums.DEFAULT_EDGE])
    assert [d for d, _ in n.dependencies] == [a]
