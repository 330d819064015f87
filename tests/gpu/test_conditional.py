"""Conditional nodes on a real GPU: IF, IF-ELSE, WHILE, SWITCH, nesting, capture forms, update.

Run by scripts/gpu-test on both CUDA runtimes (12.9 and 13.x have all four kinds).
"""

from __future__ import annotations

import numpy as np
import pytest

import pygraphrt as rt
from pygraphrt import errors
from pygraphrt.enums import InstantiateFlags, NodeType, UpdateResult

pytestmark = pytest.mark.gpu

_kernels: list = []


def kernels():
    if not _kernels:
        from pygraphrt.graph import SET_CONDITIONAL_SOURCE

        prog = rt.Program(SET_CONDITIONAL_SOURCE + r"""
extern "C" __global__ void set_value(cudaGraphConditionalHandle h, unsigned int v) {
    cudaGraphSetConditional(h, v); }
extern "C" __global__ void arm(cudaGraphConditionalHandle h, int *counter, int *iterations, int n) {
    *counter = n; *iterations = 0; cudaGraphSetConditional(h, n > 0); }
extern "C" __global__ void count_down(cudaGraphConditionalHandle h, int *counter, int *iterations) {
    *iterations += 1; int c = --(*counter); cudaGraphSetConditional(h, c > 0); }
extern "C" __global__ void add_int(int *p, int v) { *p += v; }
""", name="conditional_test.cu")
        _kernels.append({
            "set_value": prog.kernel("set_value", signature="cudaGraphConditionalHandle h, unsigned int v"),
            "arm": prog.kernel("arm", signature="cudaGraphConditionalHandle h, int *counter, int *iterations, int n"),
            "count_down": prog.kernel("count_down", signature="cudaGraphConditionalHandle h, int *counter, "
                                                              "int *iterations"),
            "add_int": prog.kernel("add_int", signature="int *p, int v"),
        })
    return _kernels[0]


def ints(buf, n=4):
    return list(np.frombuffer(buf.to_bytes(4 * n), np.int32))


def run(graph, stream):
    exe = graph.instantiate()
    exe.launch(stream)
    stream.synchronize()
    return exe


def test_while_runs_exactly_n_iterations(stream):
    k = kernels()
    state = rt.malloc(8)                      # counter, iterations
    g = rt.Graph()
    h = g.conditional_handle()
    arm = g.add_kernel(k["arm"], 1, 1, [h, state, state.ptr + 4, 0])
    loop = g.add_while(h, dependencies=[arm])
    assert loop.type is NodeType.CONDITIONAL and loop.kind == "while" and loop.size == 1
    assert loop.condition is h and loop.params["kind"] == "while"
    body = loop.bodies[0]
    body.add_kernel(k["count_down"], 1, 1, [h, state, state.ptr + 4])
    assert loop.params["bodies"] == [1]
    exe = g.instantiate()
    for n in (0, 1, 7, 1000):
        exe.set_kernel_params(arm, args=[h, state, state.ptr + 4, n])
        exe.launch(stream)
        stream.synchronize()
        assert ints(state, 2)[1] == n, n
    assert g.nodes()[1] is loop                # the same Python object from the runtime's list
    exe.close()


def test_if_if_else_and_switch_pick_the_right_body(stream):
    k = kernels()
    marks = rt.malloc(16)
    for kind, size, values in (("if", 1, (0, 1, 9)), ("if_else", 2, (0, 1, 9)), ("switch", 3, (0, 1, 2, 3, 7))):
        g = rt.Graph()
        h = g.conditional_handle()
        setter = g.add_kernel(k["set_value"], 1, 1, [h, 0])
        node = g.add_conditional(kind, h, size if kind == "switch" else None, dependencies=[setter])
        assert node.size == size and len(node.bodies) == size
        for i, body in enumerate(node.bodies):
            body.add_memset(marks.ptr + 4 * i, i + 1, 1)
        exe = g.instantiate()
        for v in values:
            marks.copy_from(bytes(16))
            exe.set_kernel_params(setter, args=[h, v])
            exe.launch(stream)
            stream.synchronize()
            got = list(marks.to_bytes()[0:4 * size:4])
            if kind == "if":
                want = [1 if v else 0]
            elif kind == "if_else":
                want = [1, 0] if v else [0, 2]
            else:
                want = [i + 1 if i == v else 0 for i in range(size)]   # out of range: nothing
            assert got == want, (kind, v, got)
        exe.close()


def test_nested_while_inside_if(stream):
    k = kernels()
    state = rt.malloc(8)
    g = rt.Graph()
    outer = g.conditional_handle()
    setter = g.add_kernel(k["set_value"], 1, 1, [outer, 1])
    branch = g.add_if(outer, dependencies=[setter])
    body = branch.bodies[0]
    inner = body.conditional_handle()            # a handle of the body graph, for the node in it
    arm = body.add_kernel(k["arm"], 1, 1, [inner, state, state.ptr + 4, 5])
    loop = body.add_while(inner, dependencies=[arm])
    loop.bodies[0].add_kernel(k["count_down"], 1, 1, [inner, state, state.ptr + 4])
    exe = run(g, stream)
    assert ints(state, 2)[1] == 5
    exe.set_kernel_params(setter, args=[outer, 0])
    state.copy_from(bytes(8))
    exe.launch(stream)
    stream.synchronize()
    assert ints(state, 2) == [0, 0]              # the IF was false: the loop never armed
    exe.close()


def test_capture_forms_equal_the_explicit_graph(stream):
    k = kernels()
    state = rt.malloc(8)
    marks = rt.malloc(16)
    s2 = rt.Stream()

    def explicit():
        g = rt.Graph()
        h = g.conditional_handle()
        arm = g.add_kernel(k["arm"], 1, 1, [h, state, state.ptr + 4, 7])
        loop = g.add_while(h, dependencies=[arm])
        loop.bodies[0].add_kernel(k["count_down"], 1, 1, [h, state, state.ptr + 4])
        h2 = g.conditional_handle()
        sel = g.add_kernel(k["set_value"], 1, 1, [h2, 1], dependencies=[loop])
        sw = g.add_switch(h2, 2, dependencies=[sel])
        for i, b in enumerate(sw.bodies):
            b.add_memset(marks.ptr + 4 * i, i + 1, 1)
        g.add_memset(marks.ptr + 8, 9, 1, dependencies=[sw])
        return g

    with stream.capture() as cap:
        h = cap.conditional_handle()
        stream.launch(k["arm"], 1, 1, h, state, state.ptr + 4, 7)
        loop = cap.add_while(h)
        with loop.capture(s2):
            s2.launch(k["count_down"], 1, 1, h, state, state.ptr + 4)
        h2 = cap.conditional_handle()
        stream.launch(k["set_value"], 1, 1, h2, 1)
        sw = cap.add_switch(h2, 2)
        for i in range(2):
            with sw.capture(s2, body=i):
                s2.memset(marks.ptr + 4 * i, i + 1, 1)
        stream.memset(marks.ptr + 8, 9, 1)
    captured = cap.graph
    ref = explicit()
    assert captured.same_structure(ref)
    kinds = [n.type for n in captured.nodes()]
    assert kinds.count(NodeType.CONDITIONAL) == 2
    results = []
    for g in (captured, ref):
        marks.copy_from(bytes(16))
        state.copy_from(bytes(8))
        exe = run(g, stream)
        results.append((ints(state, 2), list(marks.to_bytes()[0:12:4])))
        exe.close()
    assert results[0] == results[1] == ([0, 7], [0, 2, 9])
    s2.close()


def test_exec_update_of_a_body_parameter(stream):
    k = kernels()
    marks = rt.malloc(4)

    def build(value):
        g = rt.Graph()
        h = g.conditional_handle(1, reset_each_launch=True)   # true at every launch
        node = g.add_if(h)
        node.bodies[0].add_memset(marks, value, 4)
        return g

    exe = run(build(3), stream)
    assert marks.to_bytes() == bytes([3] * 4)
    assert exe.update(build(5)) is UpdateResult.SUCCESS
    exe.launch(stream)
    stream.synchronize()
    assert marks.to_bytes() == bytes([5] * 4)
    del k
    exe.close()


def test_misuse_raises_clearly(stream):
    k = kernels()
    g, other = rt.Graph(), rt.Graph()
    h_other = other.conditional_handle()
    with pytest.raises(errors.InvalidValue, match="belongs to another graph"):
        g.add_if(h_other)
    h = g.conditional_handle()
    with pytest.raises(errors.InvalidValue, match="at least one body"):
        g.add_switch(h, 0)
    with pytest.raises(errors.InvalidValue, match="not a ConditionalHandle"):
        g.add_while(12345)
    with pytest.raises(errors.InvalidValue, match="kind 'until'"):
        g.add_conditional("until", h)
    with pytest.raises(errors.InvalidValue, match="reset_each_launch"):
        g.conditional_handle(3, reset_each_launch=False)
    node = g.add_if(h)
    with pytest.raises(errors.InvalidValue, match="has 1 bodies"):
        node.capture(stream, body=1)
    assert len(g.nodes()) == 1                    # the refused calls left nothing behind
    with pytest.raises(errors.NotSupported):      # the runtime does not clone conditional nodes
        g.clone()
    try:
        copy = rt.Graph().add_child_graph(g).child  # the runtime's copy: parameters unknown to pygraphrt
    except errors.NotSupported:
        copy = None                                 # the runtime may refuse to copy it at all
    if copy is not None:
        (inner,) = copy.nodes()
        assert inner.type is NodeType.CONDITIONAL
        with pytest.raises(errors.NotSupported, match="readback"):
            inner.bodies
    from pygraphrt.graph import MemOp
    with pytest.raises(errors.NotSupported, match="HIP node types"):
        g.add_batch_mem_op([MemOp.barrier()])
    # A device-launchable graph may not contain host nodes: the runtime refuses it.
    d = rt.Graph()
    d.add_host(lambda: None)
    with pytest.raises(errors.InvalidValue):
        d.instantiate(InstantiateFlags.DEVICE_LAUNCH)
    with pytest.raises(errors.IllegalState):
        cap = stream.capture()
        cap.add_if(h)
    del k
