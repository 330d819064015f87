"""What a new user trips over (issue 43, "What a new user hit"), on the simulator: host arrays as
copy operands, errors that name the call and the argument, capture objects used without ``with``,
cycles named at instantiate, one convention for cheap state reads, short reprs, public
signatures without private parameters, readable conformance deviations."""

from __future__ import annotations

import gc
import inspect
import struct
import warnings
import weakref
from types import SimpleNamespace

import numpy as np
import pytest

import pygraphrt as rt
from pygraphrt import errors
from pygraphrt.enums import CaptureStatus, DependencyType, EdgeData

from .backends import selected


@pytest.fixture(scope="module", autouse=True)
def sim_backend():
    with selected("sim") as backend:
        yield backend


@pytest.fixture(autouse=True)
def collect_garbage():
    gc.collect()  # (earlier tests' finalizers must not run inside a capture here)


# -- copies with host arrays -------------------------------------------------------------------
def test_memcpy_takes_host_arrays_both_ways():
    s, a = rt.Stream(), rt.malloc(16)
    s.memcpy(a, np.arange(4, dtype=np.float32), 16)
    out = np.zeros(4, np.float32)
    s.memcpy(out, a, 16)
    s.synchronize()
    assert out.tolist() == [0.0, 1.0, 2.0, 3.0]
    src = np.full(4, 7, np.float32)
    src.flags.writeable = False  # a read-only source is fine
    s.memcpy(a, src, 16)
    s.memcpy(out, a, 16)
    s.synchronize()
    assert out.tolist() == [7.0] * 4


@pytest.mark.parametrize("dst_first", [True, False])
def test_memcpy_refusals_name_the_argument_and_what_is_accepted(dst_first):
    s, a = rt.Stream(), rt.malloc(16)
    args = ([1, 2, 3], a) if dst_first else (a, [1, 2, 3])
    with pytest.raises(errors.InvalidValue) as e:
        s.memcpy(*args, 3)
    role = "dst" if dst_first else "src"
    assert e.value.api == "Stream.memcpy" and e.value.detail.startswith(f"{role}: list is not")
    assert "numpy array" in e.value.detail and "__cuda_array_interface__" in e.value.detail


def test_memcpy_refuses_read_only_and_strided_destinations():
    s, a = rt.Stream(), rt.malloc(16)
    ro = np.zeros(4, np.float32)
    ro.flags.writeable = False
    with pytest.raises(errors.InvalidValue, match=r"dst: ndarray is read-only"):
        s.memcpy(ro, a, 16)
    with pytest.raises(errors.InvalidValue, match=r"dst: bytes is read-only"):
        s.memcpy(b"abcd", a, 4)
    with pytest.raises(errors.InvalidValue, match=r"src: ndarray is not one contiguous block"):
        s.memcpy(a, np.zeros(8, np.float32)[::2], 16)


def test_eager_host_copy_keeps_its_buffer_until_the_copy_ran(sim_backend):
    """A temporary host array given to an async copy lives until the stream reached the copy: the
    runtime's host function queued after it (deferred here, as a GPU runtime runs it later) lets
    it go, not the caller's ``del``."""
    s, a = rt.Stream(), rt.malloc(16)
    ops = sim_backend.ops
    deferred = []
    real_fn = type(ops).fn

    def fn(self_or_name, *rest):
        name = rest[0] if rest else self_or_name
        f = real_fn(ops, name)
        if name == "LaunchHostFunc":
            return lambda *args: deferred.append((f, args)) or 0
        return f

    ops.fn = fn
    try:
        src = np.arange(4, dtype=np.float32)
        alive = weakref.ref(src)
        s.memcpy(a, src, 16)
        del src
        gc.collect()
        assert alive() is not None, "the host buffer went before its copy ran"
        assert len(deferred) == 1
    finally:
        del ops.fn
    f, args = deferred.pop()
    f(*args)  # the runtime reaches the host function: the buffer may go
    s.synchronize()
    gc.collect()
    assert alive() is None, "the host buffer is kept after its copy ran"


def test_captured_host_copy_is_kept_by_the_graph():
    s, a = rt.Stream(), rt.malloc(16)
    src = np.arange(4, dtype=np.float32)
    alive = weakref.ref(src)
    with s.capture() as cap:
        s.memcpy(a, src, 16)
    del src
    gc.collect()
    assert alive() is not None
    cap.graph.instantiate().launch(s)
    out = np.zeros(4, np.float32)
    s.memcpy(out, a, 16)
    s.synchronize()
    assert out.tolist() == [0.0, 1.0, 2.0, 3.0]


# -- errors that name the call -------------------------------------------------------------------
def test_launch_on_a_closed_stream_names_graphexec_launch():
    g = rt.Graph()
    g.add_empty()
    exe = g.instantiate()
    s = rt.Stream()
    s.close()
    with pytest.raises(errors.InvalidResourceHandle) as e:
        exe.launch(s)
    assert str(e.value) == "GraphExec.launch failed [the stream was closed]"
    with pytest.raises(errors.InvalidResourceHandle, match=r"^GraphExec.upload failed \[the stream was closed\]"):
        exe.upload(s)


def test_capture_graph_without_with_explains():
    s = rt.Stream()
    cap = s.capture()
    with pytest.raises(errors.IllegalState, match=r"has not begun: capture in a block, `with stream.capture"):
        cap.graph
    cap.begin()
    with pytest.raises(errors.IllegalState, match=r"still running.*cap.info\(\).graph"):
        cap.graph
    g = cap.end()
    assert cap.graph is g
    cap2 = s.begin_capture()
    cap2.abort()
    assert cap2.graph is None  # discarded: no graph (conformance capture.begin_end.abort_discards)


def test_dropped_active_capture_warns_resource_warning():
    s = rt.Stream()
    s.begin_capture()
    del s  # the stream holds its capture: both go together
    with pytest.warns(ResourceWarning, match=r"begun and never ended"):
        gc.collect()
    ended = rt.Stream()  # a capture ended in time warns nothing
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        with ended.capture():
            pass
        del ended
        gc.collect()


def test_instantiate_names_the_nodes_of_a_cycle():
    g = rt.Graph()
    g.add_empty()
    a = g.add_empty()
    b = g.add_empty(dependencies=[a])
    c = g.add_empty(dependencies=[b])
    g.add_dependencies([c], [a])
    with pytest.raises(errors.InvalidValue) as e:
        g.instantiate()
    assert "the graph has a cycle: EMPTY node 1 -> EMPTY node 2 -> EMPTY node 3 -> EMPTY node 1" in str(e.value)
    g.remove_dependencies([c], [a])
    g.instantiate()
    assert g._cycle() == ""


# -- cheap state reads are properties (docs/design.md) --------------------------------------------
def test_state_reads_are_properties_and_the_old_calls_warn():
    s, ev = rt.Stream(), rt.Event()
    assert s.is_done is True and ev.is_done is True
    assert s.capture_status is CaptureStatus.NONE and s.is_capturing is False
    with s.capture():
        assert s.capture_status is CaptureStatus.ACTIVE and s.is_capturing is True
    for old, now in ((s.query, True), (ev.query, True), (s.capture_status, CaptureStatus.NONE)):
        with pytest.warns(DeprecationWarning, match=r"is deprecated: read the property"):
            assert old() == now
    for cls, name in ((rt.Stream, "is_done"), (rt.Stream, "capture_status"), (rt.Stream, "is_capturing"),
                      (rt.Event, "is_done")):
        assert isinstance(inspect.getattr_static(cls, name), property), (cls, name)


# -- public signatures and reprs --------------------------------------------------------------------
@pytest.mark.parametrize("cls", [rt.Graph, rt.Stream, rt.Event])
def test_constructors_show_only_public_parameters(cls):
    params = inspect.signature(cls).parameters
    assert not [p for p in params if p.startswith("_")], params
    assert cls.__init__.__doc__


def test_internal_constructors_still_make_graphs_and_streams():
    g = rt.Graph()
    g.add_empty()
    assert len(g.clone().nodes()) == 1  # Graph._adopt
    s, buf = rt.Stream(), rt.malloc(8)
    with s.capture() as cap:
        s.memset(buf, 1, 8)
    assert [n.type.name for n in cap.graph.nodes()] == ["MEMSET"]
    assert rt.Stream.wrap(int(s)).is_done  # Stream._adopt, borrowed


def test_edge_data_repr_is_short():
    assert repr(EdgeData()) == "EdgeData()"
    assert repr(EdgeData(to_port=1, type=DependencyType.PROGRAMMATIC)) == "EdgeData(to_port=1, type=PROGRAMMATIC)"
    assert repr(EdgeData(from_port=2)) == "EdgeData(from_port=2)"


def test_kernel_argument_pointers_read_back_in_hex():
    from pygraphrt.kernels._signature import parse_signature

    sig = parse_signature("float*, int")
    values = sig.unpack_buffer(struct.pack("<Qi", 0x7F0000001000, 5))
    assert repr(values) == "[0x7f0000001000, 5]"
    assert values[0] == 0x7F0000001000 and isinstance(values[0], int)


def test_conformance_deviation_lines_are_readable():
    from pygraphrt.conformance._runner import CaseResult, Environment, Report

    results = [CaseResult(id="exec.flags.readback", area="exec", title="t", status="deviation", expected="NONE",
                          observed="returned <InstantiateFlags.NONE: 0>", reason="CUDA 12.9 reads back NONE"),
               CaseResult(id="graph.x", area="graph", title="t", status="deviation", expected="",
                          observed="raised NotSupported: cudaGraphX failed: ...", error_name="cudaErrorNotSupported",
                          reason="HIP lacks it")]
    text = Report(env=Environment(vendor="cuda", runtime_version=13000, capabilities={}), results=results).table()
    assert "  exec.flags.readback: returned <InstantiateFlags.NONE: 0> -- CUDA 12.9 reads back NONE" in text
    assert "  graph.x: raised NotSupported (cudaErrorNotSupported) -- HIP lacks it" in text


def test_the_design_page_records_the_convention_and_every_deprecated_spelling():
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "design.md").read_text()
    assert "## Cheap state reads are properties" in text
    for old, new in (("stream.query()", "stream.is_done"), ("event.query()", "event.is_done"),
                     ("stream.capture_status()", "stream.capture_status")):
        assert f"| `{old}` | `{new}` |" in text
