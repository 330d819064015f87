"""The case-authoring API of the conformance suite: :func:`case`, :class:`Case`, :class:`CaseContext`.

A case is a small function written once against pygraphrt's vendor-neutral API.
It declares, next to its code, what it checks and what must happen::

    @case("graph.add_dependencies.duplicate_edge",
          cite="CUDA Runtime API 13.5, Graph Management, cudaGraphAddDependencies: "
               "\"Specifying an existing dependency will return an error\"",
          apis=("GraphAddDependencies",),
          raises=errors.InvalidValue)
    def _(t):
        g = t.graph()
        a, b = g.add_empty(), g.add_empty()
        g.add_dependencies([a], [b])
        g.add_dependencies([a], [b])            # the call that must raise

``cite=`` quotes the vendor's documentation: ``<document>[ <version>], <where>: "<the words>"``
(words outside the double quotes are the author's gloss); ``tests/cite_check.py`` finds each quote
in the pinned headers' doc comments (the suite's README, "Citations are the documentation's words").

Exactly one of ``expect=`` (the value the case function must return; compared with
``==``, so values, tuples, dicts, enums and dataclasses all work) or ``raises=`` (the
vendor-neutral exception class the case must raise) is given.  ``raises=`` makes the
case *negative*.  ``t.check`` / ``t.raises`` verify intermediate steps of a case.

``apis`` names the runtime functions without the vendor prefix (``GraphAddNode`` for
``cudaGraphAddNode`` / ``hipGraphAddNode``).  ``requires`` lists what the case needs:
capability names of :class:`pygraphrt.capabilities.Capabilities` (``"edge_data"``),
a vendor (``"cuda"``, ``"hip"``), a minimum runtime (``"cuda>=12.4"``, ``"hip>=7.1"``),
a minimum NVIDIA architecture of device 0 (``"sm>=90"``: compute capability 9.0 or later,
as programmatic dependencies need; skipped, saying why, on an older one and on HIP),
or ``"kernels"`` (a kernel compiler for the backend), or ``"devices>=2"`` (at least that many
devices), or ``"sim"`` (only on the simulator: what no GPU machine can show safely or at all).

**Two kinds of case.**  ``kind="runtime"`` (the default) claims what the *runtime*
documents; ``kind="binding"`` claims what pygraphrt adds: its own refusals (raised
before any runtime call), reads of its own bookkeeping, its policies, and inputs that
are undefined behaviour for the runtime (destroyed handles, another graph's nodes),
which pygraphrt must refuse before they reach it.  The runner holds runtime cases to
more than their outcome (:mod:`._runner`): every API named in ``apis=`` must have been
called (the runner records the runtime calls at the library's function pointers,
:mod:`._calls`), and a runtime negative passes only when the runtime itself returned
the refusal -- the vendor's error name is required and recorded.  The two kinds are
counted apart everywhere.

**Where the error must come from.**  ``raises=`` alone matches the exception wherever
in the case body it was raised.  A case that wraps the call the documentation names in
``t.under_test()`` (or calls it as ``t.call_under_test(fn, *args)``) is matched only
there: the same class raised by any other line fails the case, and for a runtime case
the refusal must be returned by a runtime call made inside that scope::

    @case("capture.end.unjoined", cite=..., apis=("StreamEndCapture",),
          raises=errors.StreamCaptureUnjoined)
    def _(t):
        ...                                   # set-up: an error here fails the case
        with t.under_test():
            cap.end()                         # only here may StreamCaptureUnjoined come from

Cases without it keep the old matching for now.  ``t.runtime_type(node)`` reads a node's
type through the runtime's ``GraphNodeGetType`` (not pygraphrt's class constant), and
``t.snapshot(graph=, stream=, exe=)`` reads capture status, node and edge counts and the
executable's flags from the runtime: a negative case takes one before the refused call
and compares after it, *before* any forced clean-up (``abort()``, a forced end).
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

__all__ = ["AREAS", "KINDS", "Case", "CaseContext", "CaseFailure", "REGISTRY", "Snapshot", "case", "NOTHING"]

#: The kinds of case: what the runtime documents, or what pygraphrt adds (module docstring).
KINDS = ("runtime", "binding")

#: The areas of the suite (the first word of every case id), with what each covers.
AREAS: dict[str, str] = {
    "graph": "graph create/destroy/clone, node listing, every node type's add / readback / set, "
             "child graphs, node destroy, debug dot, export",
    "capture": "stream capture: modes, thread rules, relaxed mode, capture to a graph, capture "
               "dependencies and info, prohibited operations, invalidation",
    "exec": "instantiate flags, launch / upload, exec update results, per-node exec setters, "
            "enable / disable",
    "memory": "graph memory nodes, graph memory attributes and trim, stream-ordered memory in graphs",
    "edges": "edges and edge data: add / remove / query dependencies, edge-data rules",
    "kernels": "kernel nodes, kernel arguments, launch attributes",
    "control": "conditional nodes (IF / IF-ELSE / WHILE / SWITCH), their handles and bodies, "
               "external-semaphore nodes, device-launchable graphs",
    "multidevice": "several devices: events and streams of different devices, peer access, pool "
                   "access, copies between devices, the documented multi-device limits of graphs",
}


class _Nothing:
    def __repr__(self) -> str:
        return "NOTHING"


#: ``expect=`` placeholder meaning "not given" (``None`` is a legitimate expected value).
NOTHING: Any = _Nothing()

_ID = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_]+)+$")
_REQUIREMENT = re.compile(r"^(cuda|hip|kernels|[a-z_]+|(cuda|hip)>=\d+\.\d+|devices>=\d+|sm>=\d{2,3})$")


# What the raw reads of runtime_type / snapshot put in their outputs before the call: a runtime
# that reports success but writes nothing is then read as no type, status or count at all
# (never as "kernel", "none" or 0, which are zeros).
_UNWRITTEN_ENUM = 0x7FFFFFFF
_UNWRITTEN_SIZE = (1 << 64) - 1


class CaseFailure(AssertionError):
    """A case's own check failed (``t.check`` / ``t.raises``)."""


@dataclass(frozen=True)
class Case:
    """One registered conformance case."""

    id: str
    area: str
    title: str
    cite: str
    apis: tuple[str, ...]
    requires: tuple[str, ...]
    expect: Any
    raises: type[BaseException] | None
    fn: Callable[["CaseContext"], Any] = field(repr=False, compare=False)
    module: str = ""
    kind: str = "runtime"

    @property
    def scoped(self) -> bool:
        """Whether the case's code uses ``t.under_test()`` / ``t.call_under_test()`` (read from its
        code object, so that an error raised before the scope is reached fails too)."""
        return _uses_scope(getattr(self.fn, "__code__", None))

    @property
    def negative(self) -> bool:
        """True when the documented outcome is an error."""
        return self.raises is not None

    def expected_text(self) -> str:
        """What the case expects, as text: ``raises <Error>`` or ``returns <value>``."""
        if self.raises is not None:
            return f"raises {self.raises.__name__}"
        return f"returns {self.expect!r}"


def _uses_scope(code: Any, depth: int = 0) -> bool:
    if code is None or depth > 3:
        return False
    if "under_test" in code.co_names or "call_under_test" in code.co_names:
        return True
    return any(_uses_scope(c, depth + 1) for c in code.co_consts if hasattr(c, "co_names"))


#: Every case, by id, in registration order.
REGISTRY: dict[str, Case] = {}


def case(id: str, *, cite: str, apis: tuple[str, ...] | list[str], expect: Any = NOTHING,
         raises: type[BaseException] | None = None,
         requires: tuple[str, ...] | list[str] = (), kind: str = "runtime",
         registry: dict[str, Case] | None = None) -> Callable[[Callable[["CaseContext"], Any]], Case]:
    """Register a conformance case (see the module docstring).

    ``kind`` is ``"runtime"`` (default: the case claims documented runtime behaviour) or
    ``"binding"`` (it claims what pygraphrt adds).  ``registry`` (default :data:`REGISTRY`)
    lets tests register synthetic cases in a registry of their own.
    """
    target = REGISTRY if registry is None else registry
    if not _ID.match(id):
        raise ValueError(f"case id {id!r}: dotted lowercase words (area.topic.detail)")
    if id in target:
        raise ValueError(f"case id {id!r} is registered twice")
    if not cite or not cite.strip():
        raise ValueError(f"case {id}: a citation of the documented behaviour is required")
    if not apis:
        raise ValueError(f"case {id}: name the API(s) it touches")
    if kind not in KINDS:
        raise ValueError(f"case {id}: kind must be one of {KINDS}, not {kind!r}")
    if (expect is NOTHING) == (raises is None):
        raise ValueError(f"case {id}: give exactly one of expect= and raises=")
    if raises is not None and not (isinstance(raises, type) and issubclass(raises, BaseException)):
        raise ValueError(f"case {id}: raises= must be an exception class")
    for r in requires:
        if not _REQUIREMENT.match(r):
            raise ValueError(f"case {id}: requirement {r!r} is not a capability, vendor, "
                             f"'kernels', 'sim', 'devices>=N', 'vendor>=major.minor' or 'sm>=NN'")

    def register(fn: Callable[[CaseContext], Any]) -> Case:
        doc = (fn.__doc__ or "").strip().splitlines()
        c = Case(id=id, area=id.split(".", 1)[0], title=doc[0] if doc else id, cite=cite.strip(),
                 apis=tuple(apis), requires=tuple(requires), expect=expect, raises=raises, fn=fn,
                 module=fn.__module__, kind=kind)
        target[id] = c
        return c

    return register


class CaseContext:
    """What a case function is given: the library, tracked resources and checks.

    Every resource made through the context (``graph()``, ``stream()``, ``event()``,
    ``malloc()``, ``instantiate()``) is closed after the case, in reverse order, so a
    case that raises half-way leaves nothing behind.  Objects a case makes directly
    with ``t.rt`` are its own to close.
    """

    def __init__(self) -> None:
        import pygraphrt
        from pygraphrt import enums, errors

        self.rt = pygraphrt
        self.errors = errors
        self.enums = enums
        self._owned: list[Any] = []
        self.notes: list[str] = []
        # The runner's call recorder (None: calls are not recorded), and what the
        # under_test() scopes saw: whether one was used, the exception that left one,
        # and the runtime calls made inside them.
        self.recorder: Any = None
        self.scoped = False
        self.under_test_error: BaseException | None = None
        self.scope_calls: list[Any] = []
        self._in_scope = False

    # -------------------------------------------------------------- tracked resources
    def track(self, obj: Any) -> Any:
        """Close ``obj`` (anything with ``close()``) after the case; returns it."""
        self._owned.append(obj)
        return obj

    def graph(self) -> Any:
        """A new empty Graph, closed after the case."""
        return self.track(self.rt.Graph())

    def stream(self, **kw: Any) -> Any:
        """A new Stream (keyword arguments as :class:`pygraphrt.Stream`), closed after the case."""
        return self.track(self.rt.Stream(**kw))

    def event(self, **kw: Any) -> Any:
        """A new Event (keyword arguments as :class:`pygraphrt.Event`), closed after the case."""
        return self.track(self.rt.Event(**kw))

    def malloc(self, size: int) -> Any:
        """``rt.malloc(size)`` on the current device, closed after the case."""
        return self.track(self.rt.malloc(size))

    def instantiate(self, graph: Any, *args: Any, **kw: Any) -> Any:
        """``graph.instantiate(*args, **kw)``; the executable graph is closed after the case."""
        return self.track(graph.instantiate(*args, **kw))

    def kernel(self, name: str) -> Any:
        """One of the suite's standard kernels, compiled once per process (needs ``"kernels"``).

        ``noop()``; ``fill_u32(unsigned int *p, unsigned int v, int n)``: p[i] = v;
        ``add_u32(unsigned int *p, unsigned int v, int n)``: p[i] += v;
        ``copy_u32(unsigned int *dst, const unsigned int *src, int n)``: dst[i] = src[i].
        Launch with any grid/block covering ``n``.
        """
        kernels = _standard_kernels(self.rt)
        try:
            return kernels[name]
        except KeyError:
            raise KeyError(f"no standard kernel {name!r}; have {sorted(kernels)}") from None

    # -------------------------------------------------------------- the raw layer
    @property
    def backend(self) -> Any:
        """The active backend (``pygraphrt._runtime.Backend``): ``ffi``, ``lib``, ``ops``."""
        from pygraphrt import _runtime

        return _runtime.active()

    @property
    def ffi(self) -> Any:
        """The active backend's cffi FFI object."""
        return self.backend.ffi

    @property
    def NULL(self) -> Any:
        """The active backend's cffi NULL pointer."""
        return self.backend.ffi.NULL

    def new(self, ctype: str, init: Any = None) -> Any:
        """``ffi.new`` of a vendor type named without its prefix: ``t.new("Graph_t *")``."""
        b = self.backend
        return b.ffi.new(b.ops.prefix + ctype, init)

    def call(self, api: str, *args: Any) -> None:
        """Call the runtime function ``api`` (no vendor prefix: ``"GraphCreate"``) with raw
        arguments, bypassing pygraphrt's own checks; a failure raises the vendor-neutral error."""
        self.backend.ops.call(api, *args)

    def runtime_type(self, node: Any) -> Any:
        """The node's type as the runtime reports it (``GraphNodeGetType``, through the raw
        layer): a :class:`pygraphrt.enums.NodeType`, or the vendor's integer for a type
        pygraphrt has no name for.  Not ``node.type``, which for nodes pygraphrt made is a
        class constant."""
        handle = getattr(node, "handle", node)
        out = self.backend.ffi.new(f"enum {self.backend.ops.prefix}GraphNodeType *", _UNWRITTEN_ENUM)
        self.call("GraphNodeGetType", handle, out)
        value = int(out[0])
        return self.backend.ops.node_type_of.get(value, value)

    @contextlib.contextmanager
    def under_test(self) -> Iterator[None]:
        """The call(s) the documentation places the case's error at (module docstring).

        For a case with ``raises=``, the expected exception must leave this block: the
        same class raised anywhere else fails the case; a runtime case's refusal must be
        returned by a runtime call made inside it.
        """
        if self._in_scope:
            raise CaseFailure("t.under_test() blocks do not nest")
        self.scoped = True
        rec = self.recorder
        start = rec.mark() if rec is not None else 0
        self._in_scope = True
        try:
            yield
        except BaseException as exc:
            self.under_test_error = exc
            raise
        finally:
            self._in_scope = False
            if rec is not None:
                self.scope_calls.extend(rec.calls[start:])

    def call_under_test(self, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        """``fn(*args, **kw)`` as the call under test (:meth:`under_test`); returns its value."""
        with self.under_test():
            return fn(*args, **kw)

    def snapshot(self, graph: Any = None, stream: Any = None, exe: Any = None) -> "Snapshot":
        """What the runtime reports now about ``graph``, ``stream`` and ``exe`` (each optional).

        Read through the raw layer, never from pygraphrt's bookkeeping: the graph's node and
        edge counts (``GraphGetNodes`` / ``GraphGetEdges`` asked for their count), the
        stream's capture status (``StreamIsCapturing``) and, while it captures, the number
        of nodes in its capture graph, and the executable graph's flags
        (``GraphExecGetFlags``).  Snapshots compare with ``==``: a negative case takes one
        before the refused call and compares after it, *before* any forced clean-up::

            before = t.snapshot(graph=g, stream=s)
            with t.under_test():
                g.add_dependencies([a], [a])
            t.check_equal(t.snapshot(graph=g, stream=s), before, "after the refusal")
        """
        b = self.backend
        ffi, ops = b.ffi, b.ops
        nodes = edges = capture_nodes = flags = None
        status = None
        if graph is not None:
            nodes, edges = self._graph_counts(getattr(graph, "handle", graph))
        if stream is not None:
            h = getattr(stream, "handle", stream)
            st = ffi.new(f"enum {ops.prefix}StreamCaptureStatus *", _UNWRITTEN_ENUM)
            self.call("StreamIsCapturing", h, st)
            status = ops.capture_status_of.get(int(st[0]), int(st[0]))
            if getattr(status, "value", status) != "none":
                _st, _id, cgraph, _deps = ops.capture_info(h)
                if cgraph is not None and cgraph != ffi.NULL:
                    capture_nodes = self._graph_counts(cgraph)[0]
        if exe is not None:
            out = ffi.new("unsigned long long *", _UNWRITTEN_SIZE)
            self.call("GraphExecGetFlags", getattr(exe, "handle", exe), out)
            flags = int(out[0])
        return Snapshot(capture_status=status, capture_nodes=capture_nodes, nodes=nodes, edges=edges,
                        exec_flags=flags)

    def _graph_counts(self, handle: Any) -> tuple[int, int]:
        b = self.backend
        ffi, ops = b.ffi, b.ops
        n = ffi.new("size_t *", _UNWRITTEN_SIZE)
        self.call("GraphGetNodes", handle, ffi.NULL, n)
        e = ffi.new("size_t *", _UNWRITTEN_SIZE)
        sym = ops.edge_forms.get("get_edges")
        if sym:  # the edge-data form (the only one in CUDA 13): NULL edge data asks the count
            rc = getattr(ops.lib, sym)(handle, ffi.NULL, ffi.NULL, ffi.NULL, e)
            if rc:
                raise ops.error(rc, sym)
        else:
            self.call("GraphGetEdges", handle, ffi.NULL, ffi.NULL, e)
        return int(n[0]), int(e[0])

    # -------------------------------------------------------------- checks
    def check(self, condition: Any, what: str) -> None:
        """Fail the case with ``what`` unless ``condition`` is true."""
        if not condition:
            raise CaseFailure(what)

    def check_equal(self, observed: Any, expected: Any, what: str) -> None:
        """Fail the case (CaseFailure) unless ``observed == expected``; ``what`` names the value in
        the message."""
        if observed != expected:
            raise CaseFailure(f"{what}: observed {observed!r}, expected {expected!r}")

    def raises(self, exc: type[BaseException], fn: Callable[..., Any], *args: Any, **kw: Any) -> BaseException:
        """Call ``fn``; it must raise ``exc`` (returned for further checks)."""
        try:
            fn(*args, **kw)
        except exc as e:
            return e
        except Exception as e:  # noqa: BLE001 - a different error is this case's failure
            raise CaseFailure(f"{getattr(fn, '__name__', fn)!s} raised {type(e).__name__}: {e}; "
                              f"expected {exc.__name__}") from e
        raise CaseFailure(f"{getattr(fn, '__name__', fn)!s} returned; expected {exc.__name__}")

    def note(self, text: str) -> None:
        """Add a line to the case's result (shown in --json output)."""
        self.notes.append(text)

    # -------------------------------------------------------------- teardown
    def tracked(self) -> list[Any]:
        """The tracked resources not yet closed, oldest first."""
        return list(self._owned)

    def capturing_streams(self) -> list[Any]:
        """Tracked streams that are still capturing (status ACTIVE or INVALIDATED).

        The runner asks this before closing anything: a case must not leave a
        capture running.  Closed streams and streams whose status cannot be read
        are not reported.
        """
        out = []
        for obj in self._owned:
            # (a property of the class: read only of a valid stream, and inside the try)
            if getattr(type(obj), "capture_status", None) is None or not getattr(obj, "is_valid", False):
                continue
            try:
                st = obj.capture_status
            except Exception:  # noqa: BLE001 - unreadable: not reported here
                continue
            if getattr(st, "value", st) != "none":
                out.append(obj)
        return out

    def close(self) -> list[BaseException]:
        """Close tracked resources, newest first; returns what failed to close."""
        failures: list[BaseException] = []
        while self._owned:
            obj = self._owned.pop()
            try:
                obj.close()
            except Exception as e:  # noqa: BLE001 - reported by the runner
                failures.append(e)
        return failures


@dataclass(frozen=True)
class Snapshot:
    """What :meth:`CaseContext.snapshot` read from the runtime (None: not asked)."""

    capture_status: Any = None  # CaptureStatus of the stream
    capture_nodes: int | None = None  # nodes in the stream's capture graph, while it captures
    nodes: int | None = None  # the graph's node count
    edges: int | None = None  # the graph's edge count
    exec_flags: int | None = None  # the executable graph's flags, as the runtime reports them


_KERNEL_SOURCE = r"""
extern "C" __global__ void noop() {}
extern "C" __global__ void fill_u32(unsigned int *p, unsigned int v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;  if (i < n) p[i] = v; }
extern "C" __global__ void add_u32(unsigned int *p, unsigned int v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;  if (i < n) p[i] += v; }
extern "C" __global__ void copy_u32(unsigned int *dst, const unsigned int *src, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;  if (i < n) dst[i] = src[i]; }
"""
_SIGNATURES = {
    "noop": "",
    "fill_u32": "unsigned int *p, unsigned int v, int n",
    "add_u32": "unsigned int *p, unsigned int v, int n",
    "copy_u32": "unsigned int *dst, const unsigned int *src, int n",
}
_compiled: dict[Any, dict[str, Any]] = {}  # per backend (and per area for areas with their own kernels)


def _standard_kernels(rt: Any) -> dict[str, Any]:
    """The standard kernels of the active backend (compiled on first use, kept per backend)."""
    from pygraphrt import _runtime

    key = id(_runtime.active())
    if key not in _compiled:
        prog = rt.Program(_KERNEL_SOURCE, name="pygraphrt_conformance.cu")
        _compiled[key] = {n: prog.kernel(n, signature=sig) for n, sig in _SIGNATURES.items()}
    return _compiled[key]
