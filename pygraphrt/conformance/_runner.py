"""Running conformance cases: outcomes, isolation checks, reports (JSON, JUnit, tables).

Each case runs with a fresh :class:`~pygraphrt.conformance.CaseContext` and is judged:

``passed``
    the documented outcome: ``raises=`` -- the exception is an instance of that class;
    ``expect=`` -- the returned value ``==`` the expected one.
``failed``
    anything else: another exception or value, a failed ``t.check``, or a failed
    isolation check after the case (below).
``error``
    the case's own code broke (``TypeError``, ``KeyError``, ... -- an exception that is
    neither a pygraphrt error nor an assertion); it counts as a failure.
``deviation``
    the outcome differs from the documented one exactly as an entry of
    :mod:`pygraphrt.conformance.deviations` says, on a runtime and driver version the
    entry was seen on.
``unverified-deviation``
    the same difference on a runtime or driver version outside the ones the entry was
    seen on: neither a pass nor an exemption -- counted and listed, to be checked on that
    version (the exit status stays 0; under pytest the GPU test fails, naming it).
``skipped``
    a requirement is missing (capability, vendor, runtime version, NVIDIA architecture
    ``sm>=NN``, kernel compiler);
    the reason names it.
``fake-mismatch``
    only when running against the fake HIP library (below).

**Runtime and binding cases.**  A case of ``kind="runtime"`` (:mod:`._case`) passes only
when, besides its outcome, (1) every API its ``apis=`` names was called -- the runner
records the runtime calls of the case's own code at the library's function pointers
(:mod:`._calls`; the record is taken with ``PYGRAPHRT_FAST=0``, and on ``sim``, where the
fast path does not apply: with the compiled fast path the runner says it records nothing
and this check is not made) -- and (2) for a negative case, the runtime itself returned
the refusal: the error carries the vendor's error name and, where calls are recorded, a
recorded call returned that code (inside ``t.under_test()``, where the case uses it).
Binding cases are judged on their outcome alone.  The record (``calls``) and the kind
are in the JSON, and every summary counts the two kinds apart.

**Isolation.**  After each case the runner checks that it left nothing behind:
no stream it created (tracked or not) is still capturing -- the capture is ended and
the case fails; the tracked resources close without error; after ``gc.collect()`` no
object the case created still owns a runtime handle (``pygraphrt._runtime``'s
``live`` set, compared with the objects alive before the case; leaked objects are
named by type, then closed); the thread's capture-interaction mode is as before; and
``synchronize()`` of the device reports no error.  A leak, a left capture or a changed
mode fails the case.  A *sticky* error (the context is corrupted: every later case
would fail) aborts the run with a message naming the case.

**The fake HIP library.**  CI has no AMD GPU; the suite runs there against
``tests/fakehip/fake_hip.c``, a stand-in ``libamdhip64`` compiled against HIP's own
headers that implements the *call forms* pygraphrt uses with only a toy model of
their semantics.  Setting ``PYGRAPHRT_CONFORMANCE_FAKE=1`` (only the HIP backend
accepts it) says so to the runner: every case still runs, but an outcome that differs
from the documented one is reported as ``fake-mismatch`` -- informational, not a
failure, because the fake does not implement the runtime's behaviour -- *except*
for the cases in :data:`FAKE_CALL_FORMS`, which check call forms and translations
the fake does model (argument order, struct fields, enum values, handle lists) and
are judged strictly.  Results of a fake run are marked ``"fake": true`` in the JSON
and say nothing about a real HIP runtime.
"""

from __future__ import annotations

import fnmatch
import gc
import json
import os
import platform
import re
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence, TextIO

from ._calls import Call, CallRecorder, RecordingUnavailable, calls_text
from ._case import AREAS, KINDS, NOTHING, Case, CaseContext, CaseFailure
from .deviations import Deviation
from .deviations import find as find_deviation

__all__ = ["STATUSES", "FAKE_ENV", "FAKE_CALL_FORMS", "Environment", "CaseResult", "Report", "Runner",
           "RunAborted", "SetupError", "select", "known_requirement", "result_filename", "load_schema",
           "SCHEMA_ID", "session_environment", "run_one"]

SCHEMA_ID = "pygraphrt-conformance/2"
STATUSES = ("passed", "failed", "error", "skipped", "deviation", "unverified-deviation", "fake-mismatch")
FAILING = frozenset({"failed", "error"})
FAKE_ENV = "PYGRAPHRT_CONFORMANCE_FAKE"

#: Cases judged strictly against the fake HIP library: each checks a call form or a
#: translation the fake models faithfully (see the module docstring and
#: tests/fakehip/fake_hip.c).  Every id here must be registered (tests check it).
FAKE_CALL_FORMS: frozenset[str] = frozenset({
    # graph create / destroy / listing
    "graph.create.empty",
    "graph.create.flags_must_be_zero",
    "graph.create.len_counts_nodes",
    "graph.destroy.is_valid_false",
    "graph.destroy.close_twice",
    "graph.destroy.nodes_invalid",
    "graph.destroy.add_after_close",
    "graph.destroy.nodes_after_close",
    "graph.nodes.identity",
    "graph.nodes.count_query",
    "graph.nodes.larger_array_padded",
    "graph.nodes.null_count",
    "graph.nodes.null_graph",
    "graph.root_nodes.excludes_dependents",
    "graph.leaf_nodes.excludes_dependencies",
    "graph.edges.diamond",
    "graph.add_empty.null_graph",
    "graph.node_type.null_node",
    # clone
    "graph.clone.empty",
    "graph.clone.copies_types_and_edges",
    "graph.clone.find_clone_maps_every_node",
    "graph.clone.independent_of_later_nodes",
    "graph.clone.find_clone_node_added_later",
    "graph.clone.find_clone_removed_in_clone",
    "graph.clone.find_clone_foreign_node",
    "graph.clone.null_graph",
    # child graphs
    "graph.child.copied_at_add",
    "graph.child.survives_closing_original",
    "graph.child.same_embedded_handle",
    "graph.child.changes_through_handle",
    "graph.child.contains_itself",
    "graph.child.not_a_graph",
    "graph.child.get_graph_wrong_type",
    # nodes: types and parameters
    "graph.nodes.runtime_types",
    "graph.nodes.runtime_types_listed",
    "graph.empty.type_and_params",
    "graph.empty.dependencies",
    "graph.empty.foreign_dependency",
    "graph.memset.params",
    "graph.memset.element_size_2",
    "graph.memset.element_size_4",
    "graph.memset.params_2d",
    "graph.memset.element_size_3",
    "graph.memset.get_params_wrong_type",
    "graph.memcpy.params_1d",
    "graph.memcpy.params_2d",
    "graph.memcpy.set_params_1d",
    "graph.host.params_fn",
    "graph.host.not_callable",
    "graph.event_record.params_event",
    "graph.event_wait.params_event",
    "graph.event_record.set_event",
    "graph.event_wait.set_event",
    "graph.event_record.get_event_on_wait_node",
    "graph.mem_alloc.params",
    "graph.mem_free.params",
    "graph.mem_alloc.runtime_types",
    "graph.add_node.empty",
    "graph.add_node.memset_params",
    "graph.event_record.generic",
    "graph.add_node.kernel_refused",
    "graph.add_node.missing_parameter",
    # destroy
    "graph.destroy_node.severs_edges",
    "graph.destroy_node.twice",
    "graph.destroy_node.dependent_becomes_root",
})


class RunAborted(Exception):
    """A sticky error: the device context is unusable, the run cannot go on."""


class SetupError(Exception):
    """The suite cannot run here (no backend, no device, fake mode on the wrong backend)."""


def _device_count(env: "Environment") -> int:
    """The device count for ``devices>=N`` (0 where the runtime cannot tell: a fake runtime)."""
    if env.fake:
        return int(env.info.get("device_count", 0))
    try:
        from pygraphrt.multidevice import device_count

        return device_count()
    except Exception:  # noqa: BLE001 - no count is no devices for this requirement
        return 0


# ---------------------------------------------------------------------------- environment
@dataclass
class Environment:
    """What the runner needs of the backend; :meth:`active` builds it for the real one.

    Tests build environments of their own (no GPU): every hook may be None, which
    skips the check it serves.
    """

    vendor: str
    runtime_version: int  # as the vendor encodes it: CUDA 12040 = 12.4; HIP major*1e7 + minor*1e5 + patch
    capabilities: dict[str, bool]
    live: Any = None  # the set of objects owning runtime handles (Backend.live)
    synchronize: Callable[[], None] | None = None  # device synchronize: raises the pending error
    kernels: Callable[[], str | None] | None = None  # None when the standard kernels compile, else why not
    end_capture: Callable[[Any], None] | None = None  # end a capture left running on a stream
    capture_mode: Callable[[], Any] | None = None  # this thread's capture-interaction mode
    set_capture_mode: Callable[[Any], None] | None = None
    keep: Callable[[], Iterable[Any]] | None = None  # objects that may stay alive (the kernel cache)
    fake: bool = False
    strict: frozenset[str] = FAKE_CALL_FORMS  # judged strictly even when fake
    deviations: Sequence[Deviation] | None = None  # None: the package's table
    info: dict[str, Any] = field(default_factory=dict)
    driver_version: int | None = None  # as the vendor encodes it (CUDA 13000 = 13.0); None: unknown
    recorder: Any = None  # a CallRecorder (._calls): the runtime calls of each case; None: not recorded
    record_off: str | None = "no recorder"  # why the calls are not recorded (None when they are)
    _kernel_reason: list[str | None] = field(default_factory=list, repr=False)

    @property
    def api(self) -> str:
        """Whose API and semantics the backend implements: ``sim`` is judged as CUDA (its
        requirements, versions and known deviations are CUDA's: the simulator is held to the
        real CUDA runtime, deviations included)."""
        return "cuda" if self.vendor == "sim" else self.vendor

    @property
    def version(self) -> tuple[int, int]:
        """The runtime version as ``(major, minor)``."""
        v = self.runtime_version
        if self.api == "cuda":
            return v // 1000, (v % 1000) // 10
        return v // 10_000_000, (v // 100_000) % 100

    @property
    def version_str(self) -> str:
        """The runtime version as text (``"13.0"``)."""
        return "%d.%d" % self.version

    @property
    def driver(self) -> tuple[int, int] | None:
        """(major, minor) the driver supports, or None (unknown)."""
        v = self.driver_version
        if v is None:
            return None
        if self.api == "cuda":
            return v // 1000, (v % 1000) // 10
        return v // 10_000_000, (v // 100_000) % 100

    def kernel_reason(self) -> str | None:
        """Why the standard kernels cannot be compiled (asked once), or None."""
        if not self._kernel_reason:
            self._kernel_reason.append(None if self.kernels is None else self.kernels())
        return self._kernel_reason[0]

    @classmethod
    def active(cls, fake: bool | None = None) -> "Environment":
        """The environment of pygraphrt's active backend (selecting one if needed)."""
        import pygraphrt
        from pygraphrt import _runtime, _versions, errors
        from pygraphrt.capabilities import capabilities

        if fake is None:
            fake = os.environ.get(FAKE_ENV) == "1"
        try:
            b = _runtime.active()
        except errors.BackendError as exc:
            raise SetupError(f"no backend: {exc}") from exc
        bi = b.info()
        if bi.device_count < 1:
            raise SetupError(f"the {bi.vendor} runtime {bi.library_path} ({bi.runtime_version_str}) "
                             f"reports no device" + (f": {bi.device_error}" if bi.device_error else "")
                             + "; the suite needs a GPU")
        if fake and bi.vendor != "hip":
            raise SetupError(f"{FAKE_ENV}=1 is for the fake HIP library only; the active backend is "
                             f"{bi.vendor} ({bi.library_path})")
        caps = {k: bool(v) for k, v in capabilities().as_dict().items() if isinstance(v, bool)}
        if bi.vendor == "sim":  # the suite's kernels run as Python functions there
            from ._sim_kernels import register

            register()
        try:
            d = pygraphrt.Device(0).info()
            gpu: dict[str, Any] | None = {"ordinal": d.ordinal, "name": d.name, "arch": d.arch,
                                          "total_memory": int(d.total_memory)}
        except errors.GraphRTError as exc:
            gpu = {"ordinal": 0, "name": f"unknown ({type(exc).__name__})", "arch": "", "total_memory": 0}
        info = {
            "vendor": bi.vendor, "binding": bi.binding, "library_path": bi.library_path,
            "runtime_version": bi.runtime_version, "runtime_version_str": bi.runtime_version_str,
            "driver_version": bi.driver_version,
            "driver_version_str": _versions.version_str(bi.vendor, bi.driver_version),
            "device_count": bi.device_count, "gpu": gpu, "capabilities": caps,
        }

        def synchronize() -> None:
            pygraphrt.current_device().synchronize()

        def kernels() -> str | None:
            from ._case import _standard_kernels

            try:
                _standard_kernels(pygraphrt)
            except (errors.NotSupported, errors.CompileError) as exc:
                return f"{type(exc).__name__}: {exc}"
            except errors.GraphRTError as exc:
                return f"the standard kernels could not be made: {type(exc).__name__}: {exc}"
            return None

        def end_capture(stream: Any) -> None:
            ops, ffi = b.ops, b.ffi
            out = ffi.new(f"{ops.prefix}Graph_t *")
            rc = ops.fn("StreamEndCapture")(stream.handle, out)
            if out[0] != ffi.NULL:
                ops.fn("GraphDestroy")(out[0])
            if rc:
                raise ops.error(rc, ops.prefix + "StreamEndCapture")

        def capture_mode() -> Any:
            prev = pygraphrt.exchange_capture_mode("global")
            pygraphrt.exchange_capture_mode(prev)
            return prev

        def set_capture_mode(mode: Any) -> None:
            pygraphrt.exchange_capture_mode(mode)

        def keep() -> Iterable[Any]:
            from ._case import _compiled

            return list(_compiled.values())

        try:
            capture_mode()
            mode_hooks: tuple[Any, Any] = (capture_mode, set_capture_mode)
        except errors.GraphRTError:
            mode_hooks = (None, None)
        record_off = CallRecorder.unavailable(b)
        recorder = CallRecorder(b) if record_off is None else None
        return cls(vendor=bi.vendor, runtime_version=bi.runtime_version, capabilities=caps, live=b.live,
                   synchronize=synchronize, kernels=kernels, end_capture=end_capture,
                   capture_mode=mode_hooks[0], set_capture_mode=mode_hooks[1], keep=keep,
                   fake=fake, info=info, driver_version=bi.driver_version, recorder=recorder,
                   record_off=record_off)


_VERSION_REQ = re.compile(r"^(cuda|hip)>=(\d+)\.(\d+)$")
_DEVICES_REQ = re.compile(r"^devices>=(\d+)$")
_ARCH_REQ = re.compile(r"^sm>=(\d+)(\d)$")  # sm>=90: compute capability 9.0 or later (NVIDIA)
_SM_ARCH = re.compile(r"^sm_(\d+)(\d)$")  # the architecture as pygraphrt.Device.info() reports it


def known_requirement(requirement: str) -> bool:
    """Whether the runner understands ``requirement`` (a capability, vendor, version, 'kernels',
    'sim', 'devices>=N' or 'sm>=NN')."""
    from dataclasses import fields

    from pygraphrt.capabilities import Capabilities

    caps = {f.name for f in fields(Capabilities) if f.type in (bool, "bool")}
    return requirement in ("cuda", "hip", "kernels", "sim") or requirement in caps \
        or _VERSION_REQ.match(requirement) is not None or _DEVICES_REQ.match(requirement) is not None \
        or _ARCH_REQ.match(requirement) is not None


# ---------------------------------------------------------------------------- results
@dataclass
class CaseResult:
    id: str
    area: str
    title: str
    status: str
    expected: str
    observed: str = ""
    error_name: str | None = None
    error_code: int | None = None
    reason: str = ""
    duration_s: float = 0.0
    notes: list[str] = field(default_factory=list)
    apis: tuple[str, ...] = ()
    cite: str = ""
    requires: tuple[str, ...] = ()
    negative: bool = False
    deviation: dict[str, Any] | None = None
    kind: str = "runtime"
    calls: list[str] | None = None  # the runtime APIs the case's code called, in order; None: not recorded
    outcome_status: str = ""  # the status its outcome and rules gave, before the isolation checks

    def as_dict(self) -> dict[str, Any]:
        """The result as a JSON-ready dict (the schema of ``conformance/schema.json``)."""
        return {"id": self.id, "area": self.area, "title": self.title, "kind": self.kind,
                "status": self.status, "calls": None if self.calls is None else list(self.calls),
                "negative": self.negative, "expected": self.expected, "observed": self.observed,
                "error_name": self.error_name, "error_code": self.error_code, "reason": self.reason,
                "duration_s": round(self.duration_s, 6), "notes": list(self.notes),
                "apis": list(self.apis), "cite": self.cite, "requires": list(self.requires),
                "deviation": self.deviation}


@dataclass
class _Observed:
    raised: bool
    summary: str  # "raised InvalidValue: ..." / "returned 3"
    key: str  # what deviations match: the class name, or the value's repr
    message: str
    error_name: str | None
    error_code: int | None
    error: Any = None  # the pygraphrt error behind an exception outcome, if any


def _clip(text: str, n: int = 1500) -> str:
    return text if len(text) <= n else text[:n] + f"... [{len(text) - n} more characters]"


def _runtime_error_in(exc: BaseException) -> Any:
    """The pygraphrt error in ``exc``'s cause/context chain (itself included): the first that
    carries a vendor error name (the runtime's refusal behind an error of pygraphrt's), else
    the first."""
    from pygraphrt import errors

    seen = 0
    first = None
    cur: BaseException | None = exc
    while cur is not None and seen < 8:
        if isinstance(cur, errors.GraphRTError):
            if isinstance(getattr(cur, "name", None), str):
                return cur
            if first is None:
                first = cur
        cur = cur.__cause__ or cur.__context__
        seen += 1
    return first


def _observe_exception(exc: BaseException) -> _Observed:
    rt_err = _runtime_error_in(exc)
    name = getattr(rt_err, "name", None) if rt_err is not None else None
    code = getattr(rt_err, "code", None) if rt_err is not None else None
    message = _clip(str(exc))
    return _Observed(True, f"raised {type(exc).__name__}: {message}" if message else
                     f"raised {type(exc).__name__}", type(exc).__name__, message,
                     name if isinstance(name, str) else None, code if isinstance(code, int) else None,
                     rt_err)


def _observe_value(value: Any) -> _Observed:
    try:
        text = repr(value)
    except Exception as exc:  # noqa: BLE001 - a repr that fails is still an outcome
        text = f"<unrepresentable {type(value).__name__}: {type(exc).__name__}>"
    return _Observed(False, f"returned {_clip(text)}", text, "", None, None)


def _is_library_error(exc: BaseException) -> bool:
    """Errors that are outcomes (pygraphrt's, assertions) rather than a broken case."""
    from pygraphrt import errors

    return isinstance(exc, (errors.GraphRTError, AssertionError))


def _raised_by(exc: BaseException, scoped: BaseException | None) -> bool:
    """Whether ``exc`` is the exception that left a ``t.under_test()`` block (or wraps it)."""
    cur: BaseException | None = exc
    for _ in range(8):
        if cur is None:
            return False
        if cur is scoped:
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def _safe_repr(value: Any) -> str:
    try:
        return _clip(repr(value), 600)
    except Exception as exc:  # noqa: BLE001
        return f"<unrepresentable {type(value).__name__}: {type(exc).__name__}>"


def expected_vs_got(expected: Any, got: Any) -> str:
    """The failure text of a returned value that differs: both reprs, and where they differ."""
    lines = [f"expected {_safe_repr(expected)}, got {_safe_repr(got)}"]
    if isinstance(expected, dict) and isinstance(got, dict):
        keys = list(dict.fromkeys([*expected, *got]))
        diff = [f"[{k!r}]: expected {_safe_repr(expected.get(k, NOTHING))}, got {_safe_repr(got.get(k, NOTHING))}"
                for k in keys if k not in expected or k not in got or expected[k] != got[k]]
        lines += diff[:10]
    elif isinstance(expected, (tuple, list)) and isinstance(got, (tuple, list)):
        if len(expected) != len(got):
            lines.append(f"length: expected {len(expected)}, got {len(got)}")
        diff = [f"[{i}]: expected {_safe_repr(e)}, got {_safe_repr(g)}"
                for i, (e, g) in enumerate(zip(expected, got)) if e != g]
        lines += diff[:10]
    elif expected is True:
        lines.append("the case returns a bare True: nothing says what differed (it is on --audit's list)")
    return "; ".join(lines)


# ---------------------------------------------------------------------------- runner
class Runner:
    """Runs cases in an :class:`Environment`; ``run()`` gives a :class:`Report`."""

    def __init__(self, env: Environment, cases: Iterable[Case], *, out: TextIO | None = None,
                 progress: bool = True, verbose: bool = False) -> None:
        self.env = env
        self.cases = list(cases)
        self.out = out
        self.progress = progress and out is not None
        self.verbose = verbose and out is not None  # a line per case, before it runs (finds crashes)

    # -- requirements ----------------------------------------------------------------
    def unmet(self, case: Case) -> tuple[str, str] | None:
        """("skipped", why) for a missing requirement, ("error", why) for an unknown one, or None."""
        env = self.env
        later_kernels = False
        for r in case.requires:
            m = _VERSION_REQ.match(r)
            if r in ("cuda", "hip"):
                if env.api != r:
                    return "skipped", f"needs the {r} backend (this run is {env.vendor} {env.version_str})"
            elif m is not None:
                vendor, need = m.group(1), (int(m.group(2)), int(m.group(3)))
                if env.api != vendor:
                    return "skipped", f"needs {r} (this run is {env.vendor} {env.version_str})"
                if env.version < need:
                    return "skipped", f"needs {r} (the runtime is {env.vendor} {env.version_str})"
            elif (a := _ARCH_REQ.match(r)) is not None:
                need = (int(a.group(1)), int(a.group(2)))
                arch = str((env.info.get("gpu") or {}).get("arch") or "")
                have = _SM_ARCH.match(arch)
                if env.api != "cuda" or have is None:
                    return "skipped", (f"needs an NVIDIA device of compute capability {need[0]}.{need[1]} or later "
                                       f"({r}); device 0 is {arch or 'of unknown architecture'}")
                if (int(have.group(1)), int(have.group(2))) < need:
                    return "skipped", f"needs {r} (device 0 is {arch}, compute capability " \
                                      f"{have.group(1)}.{have.group(2)})"
            elif r == "kernels":
                later_kernels = True
            elif r == "sim":
                if env.vendor != "sim":
                    return "skipped", (f"runs on the simulator only (this run is {env.vendor} {env.version_str}): "
                                       "a GPU cannot show it safely or at all")
            elif _DEVICES_REQ.match(r) is not None:
                devices, count = int(r[len("devices>="):]), _device_count(env)
                if count < devices:
                    return "skipped", (f"needs {devices} devices; this runtime reports {count}"
                                       + (" (PYGRAPHRT_SIM_DEVICES)" if env.vendor == "sim" else ""))
            elif r in env.capabilities:
                if not env.capabilities[r]:
                    return "skipped", (f"needs capability {r} (not on {env.vendor} {env.version_str}"
                                       + (f", binding {env.info['binding']}" if env.info.get("binding") else "")
                                       + ")")
            else:
                return "error", (f"unknown requirement {r!r}: not a capability of "
                                 f"pygraphrt.capabilities(), a vendor, 'kernels', 'vendor>=major.minor' "
                                 f"or 'sm>=NN'")
        if later_kernels:
            why = env.kernel_reason()
            if why is not None:
                return "skipped", f"needs a kernel compiler: {why}"
        return None

    # -- one case ----------------------------------------------------------------------
    def run_case(self, case: Case) -> CaseResult:
        """Run one case and check what it left behind.

        Returns
        -------
        CaseResult
            Its outcome.
        """
        env = self.env
        res = CaseResult(id=case.id, area=case.area, title=case.title, status="passed",
                         expected=case.expected_text(), apis=case.apis, cite=case.cite,
                         requires=case.requires, negative=case.negative, kind=case.kind)
        t0 = time.perf_counter()
        missing = self.unmet(case)
        if missing is not None:
            res.status, res.reason = missing
            res.duration_s = time.perf_counter() - t0
            return res
        before = list(env.live) if env.live is not None else []
        before_ids = {id(o) for o in before}
        mode_before = self._mode()
        t = CaseContext()
        rec = env.recorder
        caught: BaseException | None = None
        value: Any = None
        calls: list[Call] = []
        if rec is not None:
            rec.install()
            rec.take()
            t.recorder = rec
            rec.active = True
        try:
            try:
                value = case.fn(t)
            except Exception as exc:  # noqa: BLE001 - every outcome is recorded
                caught = exc
        finally:
            if rec is not None:
                rec.active = False
                calls = rec.take()
        if rec is not None:
            res.calls = list(dict.fromkeys(c.api for c in calls))
        obs = _observe_exception(caught) if caught is not None else _observe_value(value)
        res.observed, res.error_name, res.error_code = obs.summary, obs.error_name, obs.error_code
        res.status, res.reason = self._judge(case, caught, value, obs)
        t.scoped = t.scoped or case.scoped
        if res.status == "passed" and case.raises is not None and t.scoped and caught is not None \
                and not _raised_by(caught, t.under_test_error):
            inside = t.under_test_error
            res.status = "failed"
            res.reason = (f"{obs.summary}: raised outside t.under_test() (the call the documentation places "
                          f"the error at {'raised nothing' if inside is None else 'raised ' + type(inside).__name__})")
        if res.status == "passed" and case.kind == "runtime":
            broken = self._runtime_rules(case, t, calls, obs, rec is not None)
            if broken:
                res.status, res.reason = "failed", broken
        sticky = caught is not None and bool(getattr(_runtime_error_in(caught), "sticky", False))
        caught = value = None  # drop what the case made before looking for leaks
        obs.error = None
        t.under_test_error = None  # (its traceback's frames hold the objects the refused method was given)
        if res.status == "failed":
            self._deviation(case, obs, res)
        if sticky:
            t.close()
            if rec is not None:
                rec.uninstall()
            raise RunAborted(f"case {case.id} got a sticky error ({obs.summary}); the device context is "
                             "unusable and the run stops here: restart the process")
        res.outcome_status = res.status
        try:
            problems = self._teardown(t, before, before_ids, mode_before)
        finally:
            if rec is not None:
                rec.uninstall()
        res.notes = list(t.notes)
        del t
        if problems:
            text = "; ".join(problems)
            if res.status in ("passed", "deviation", "unverified-deviation"):
                res.status, res.reason = "failed", text
            else:
                res.reason = f"{res.reason}; {text}" if res.reason else text
        if env.fake and case.id not in env.strict and res.status in FAILING:
            res.reason = f"[{res.status} on the fake: informational] {res.reason}"
            res.status = "fake-mismatch"
        res.duration_s = time.perf_counter() - t0
        return res

    def _deviation(self, case: Case, obs: _Observed, res: CaseResult) -> None:
        """A failed outcome that a deviation entry explains: ``deviation`` on the versions the
        entry was seen on (any, on the simulator), ``unverified-deviation`` elsewhere."""
        env = self.env
        dev = find_deviation(case.id, env.api, None, obs.key, obs.error_name, obs.message, table=env.deviations)
        if dev is None:
            return
        res.deviation = {"vendor": dev.vendor, "runtime": dev.runtime, "driver": dev.driver,
                         "observed": dev.observed, "code": dev.code, "reason": dev.reason}
        if env.vendor == "sim" or dev.covers(env.version, env.driver):
            res.status, res.reason = "deviation", dev.reason
            return
        drv = "%d.%d" % env.driver if env.driver is not None else "unknown"
        res.status = "unverified-deviation"
        res.reason = (f"the known deviation was seen on {dev.seen}, not on this runtime {env.version_str} / "
                      f"driver {drv}: check it here and extend its versions in deviations.py, or mend the "
                      f"runtime ({dev.reason})")

    def _runtime_rules(self, case: Case, t: CaseContext, calls: list[Call], obs: _Observed,
                       recorded: bool) -> str:
        """Why a runtime case's passing outcome does not stand (module docstring), or ''."""
        problems = []
        if recorded:
            called = {c.api for c in calls}
            missing = [a for a in case.apis if a not in called]
            if missing:
                problems.append(f"claimed API(s) never called: {', '.join(missing)}; the case called "
                                f"{calls_text(calls)}")
        if case.raises is not None:
            name, code = obs.error_name, obs.error_code
            if name is None:
                problems.append(f"the refusal came from pygraphrt, not the runtime: {obs.summary} carries no "
                                f"vendor error name (a runtime negative needs the runtime's refusal; a "
                                f"refusal of pygraphrt's own is a binding case)")
            elif recorded:
                scope = t.scope_calls if t.scoped else calls
                if not any(c.rc == code for c in scope):
                    where = "inside t.under_test()" if t.scoped else "by the case"
                    problems.append(f"the error names {name} ({code}), but no runtime call {where} returned it "
                                    f"(calls: {calls_text(scope)})")
        return "; ".join(problems)

    def _judge(self, case: Case, exc: BaseException | None, value: Any, obs: _Observed) -> tuple[str, str]:
        if exc is not None:
            if case.raises is not None and isinstance(exc, case.raises):
                return "passed", ""
            if isinstance(exc, CaseFailure):
                return "failed", f"check failed: {obs.message}"
            if _is_library_error(exc):
                return "failed", f"{obs.summary}; expected {case.expected_text()}"
            return "error", f"the case's code raised {obs.summary}"
        if case.raises is not None:
            return "failed", f"{obs.summary}; expected {case.expected_text()}"
        try:
            same = bool(value == case.expect)
        except Exception as e:  # noqa: BLE001 - a comparison that raises is the case's error
            return "error", f"comparing the returned value raised {type(e).__name__}: {e}"
        if same:
            return "passed", ""
        return "failed", expected_vs_got(case.expect, value)

    @staticmethod
    def _close_tracked(t: CaseContext) -> list[str]:
        return [f"closing a tracked resource raised {type(e).__name__}: {e}" for e in t.close()]

    def _check_leaks(self, before_ids: set[int]) -> list[str]:
        """Objects made by the case that still own a runtime handle: named, then closed."""
        env = self.env
        if env.live is None:
            return []
        gc.collect()
        excluded = _reachable_ids(env.keep() if env.keep is not None else ())
        leaked = [o for o in list(env.live)
                  if id(o) not in before_ids and id(o) not in excluded and getattr(o, "_owned", True)]
        if not leaked:
            return []
        kinds: dict[str, int] = {}
        for o in leaked:
            kinds[type(o).__name__] = kinds.get(type(o).__name__, 0) + 1
            try:  # isolate the next case
                o.close()
            except Exception:  # noqa: BLE001
                pass
        return ["leak: still alive after the case: " + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))]

    def _end_left_captures(self, t: CaseContext, before_ids: set[int]) -> list[str]:
        """End the captures a case left running on its streams; one problem per stream."""
        capturing = list(t.capturing_streams())
        if self.env.live is not None:
            for obj in list(self.env.live):
                if id(obj) not in before_ids and not any(obj is s for s in capturing) and _capturing(obj):
                    capturing.append(obj)
        problems = []
        for s in capturing:
            try:
                st = s.capture_status
                what = getattr(st, "value", st)
            except Exception:  # noqa: BLE001
                what = "capturing"
            msg = f"left a {type(s).__name__} capturing ({what})"
            if self.env.end_capture is not None:
                try:
                    self.env.end_capture(s)
                except Exception as exc:  # noqa: BLE001
                    msg += f"; ending that capture raised {type(exc).__name__}: {exc}"
            problems.append(msg)
        return problems

    def _mode(self) -> Any:
        if self.env.capture_mode is None:
            return None
        try:
            return self.env.capture_mode()
        except Exception:  # noqa: BLE001 - the check is skipped where it cannot be made
            return None

    def _teardown(self, t: CaseContext, before: list[Any], before_ids: set[int], mode_before: Any) -> list[str]:
        """The isolation checks (module docstring); returns the problems found.

        Each check is a method of its own: no local variable here may keep an object of
        the case alive while the leak check runs.
        """
        env = self.env
        # 1. no stream left capturing (tracked streams and any stream the case made)
        problems = self._end_left_captures(t, before_ids)
        # 2. tracked resources close cleanly
        problems += self._close_tracked(t)
        # 3. nothing the case made still owns a runtime handle
        problems += self._check_leaks(before_ids)
        before.clear()
        # 4. this thread's capture mode as before
        if mode_before is not None and env.capture_mode is not None:
            try:
                now = env.capture_mode()
            except Exception:  # noqa: BLE001
                now = mode_before
            if now != mode_before:
                problems.append(f"left this thread's capture mode {getattr(now, 'value', now)} "
                                f"(was {getattr(mode_before, 'value', mode_before)})")
                if env.set_capture_mode is not None:
                    env.set_capture_mode(mode_before)
        # 5. no error pending on the device
        if env.synchronize is not None:
            try:
                env.synchronize()
            except Exception as exc:  # noqa: BLE001
                if getattr(exc, "sticky", False):
                    raise RunAborted(f"device synchronize after the case raised a sticky error: {exc}; "
                                     "the device context is unusable and the run stops here") from None
                problems.append(f"device synchronize after the case raised {type(exc).__name__}: {exc}")
        return problems

    # -- all cases ---------------------------------------------------------------------
    def run(self) -> "Report":
        """Run every selected case in order, each isolated (see the module docstring).

        Returns
        -------
        Report
            The results.
        """
        report = Report(env=self.env)
        by_area: dict[str, list[Case]] = {}
        for c in self.cases:
            by_area.setdefault(c.area, []).append(c)
        t0 = time.perf_counter()
        try:
            for area, cases in by_area.items():
                for c in cases:
                    if self.verbose:
                        self._print(f"  run {c.id}")
                    r = self.run_case(c)
                    report.results.append(r)
                    if self.progress and r.status in FAILING:
                        self._print(f"  {r.status.upper()} {r.id}: {_clip(r.reason, 400)}")
                if self.progress:
                    self._print(report.area_line(area))
        except RunAborted as exc:
            report.aborted = str(exc)
            if self.progress:
                self._print(f"ABORTED: {exc}")
        report.duration_s = time.perf_counter() - t0
        return report

    def _print(self, text: str) -> None:
        if self.out is not None:
            print(text, file=self.out, flush=True)


def _capturing(obj: Any) -> bool:
    """Whether ``obj`` is a valid stream whose capture status is not NONE."""
    # (a property of the class: read it only of a valid stream, and inside the try)
    if getattr(type(obj), "capture_status", None) is None or not getattr(obj, "is_valid", False):
        return False
    try:
        st = obj.capture_status
    except Exception:  # noqa: BLE001 - unreadable: not reported
        return False
    return bool(getattr(st, "value", st) != "none")


def _reachable_ids(roots: Iterable[Any], depth: int = 4) -> set[int]:
    """ids of the objects reachable from ``roots`` within ``depth`` references."""
    seen: set[int] = set()
    frontier = list(roots)
    for _ in range(depth):
        nxt = []
        for o in frontier:
            if id(o) in seen:
                continue
            seen.add(id(o))
            if isinstance(o, (str, bytes, int, float, type(None))):
                continue
            nxt.extend(gc.get_referents(o))
        frontier = nxt
    return seen


# ---------------------------------------------------------------------------- report
@dataclass
class Report:
    env: Environment
    results: list[CaseResult] = field(default_factory=list)
    aborted: str | None = None
    duration_s: float = 0.0

    def counts(self, area: str | None = None, kind: str | None = None) -> dict[str, int]:
        """The number of results per status, of one ``area`` and/or one ``kind`` (None: all)."""
        out = {s: 0 for s in STATUSES}
        for r in self.results:
            if (area is None or r.area == area) and (kind is None or r.kind == kind):
                out[r.status] += 1
        return out

    @property
    def areas(self) -> list[str]:
        """The areas of the results, in the order they ran."""
        return list(dict.fromkeys(r.area for r in self.results))

    @property
    def exit_code(self) -> int:
        """The command's exit status: 0 all passed (deviations and skips included), 1 a case failed,
        2 the run was aborted."""
        if self.aborted:
            return 2
        return 1 if any(r.status in FAILING for r in self.results) else 0

    def area_line(self, area: str) -> str:
        """One line of counts for ``area``: cases, passed, and the other statuses that occurred."""
        c = self.counts(area)
        n = sum(c.values())
        kinds = {k: sum(self.counts(area, k).values()) for k in KINDS}
        parts = [f"{area}: {n} cases ({kinds['runtime']} runtime, {kinds['binding']} binding)",
                 f"{c['passed']} passed"]
        labels = [("failed", "failed"), ("error", "errors"), ("deviation", "deviation"),
                  ("unverified-deviation", "unverified-deviation"),
                  ("skipped", "skipped"), ("fake-mismatch", "fake-mismatch")]
        for key, label in labels:
            if c[key]:
                parts.append(f"{c[key]} {label}")
        return "  ".join(parts)

    def table(self) -> str:
        """The summary as text: a table of counts per area, then the failures, known deviations and
        skip reasons."""
        fake = self.env.fake
        cols = ["cases", "passed", "failed", "skipped", "deviation", "unverified"] \
            + (["fake-mismatch"] if fake else [])
        width = max([len("binding cases"), len("area")] + [len(a) for a in self.areas]) + 2
        lines = ["".join(["area".ljust(width)] + [c.rjust(len(c) + 2) for c in cols])]

        def row(name: str, c: dict[str, int]) -> str:
            vals = {"cases": sum(c.values()), "passed": c["passed"], "failed": c["failed"] + c["error"],
                    "skipped": c["skipped"], "deviation": c["deviation"],
                    "unverified": c["unverified-deviation"], "fake-mismatch": c["fake-mismatch"]}
            return "".join([name.ljust(width)] + [str(vals[col]).rjust(len(col) + 2) for col in cols])

        for a in self.areas:
            lines.append(row(a, self.counts(a)))
        lines.append(row("total", self.counts()))
        for k in KINDS:  # the runtime's behaviour and pygraphrt's own, counted apart
            lines.append(row(f"{k} cases", self.counts(kind=k)))
        lines.append(f"runtime calls: {self.record_line()}")
        failing = [r for r in self.results if r.status in FAILING]
        if failing:
            lines.append("")
            lines.append(f"failures ({len(failing)}; errors are failures of the case's own code):")
            lines += [f"  {r.status.upper()} {r.id}: {_clip(r.reason, 600)}" for r in failing]
        devs = [r for r in self.results if r.status == "deviation"]
        if devs:
            lines.append("")
            lines.append(f"known deviations ({len(devs)}):")
            for r in devs:  # "raised NotSupported (cudaErrorNotSupported)" / "returned <repr>", then why
                if r.observed.startswith("raised "):
                    seen = r.observed.split(":", 1)[0] + (f" ({r.error_name})" if r.error_name else "")
                else:
                    seen = _clip(r.observed, 120)
                lines.append(f"  {r.id}: {seen} -- {r.reason}")
        unverified = [r for r in self.results if r.status == "unverified-deviation"]
        if unverified:
            lines.append("")
            lines.append(f"unverified deviations ({len(unverified)}; a known difference on a runtime or driver it "
                         "was not seen on -- check it on this version):")
            for r in unverified:
                if r.observed.startswith("raised "):
                    seen = r.observed.split(":", 1)[0] + (f" ({r.error_name})" if r.error_name else "")
                else:
                    seen = _clip(r.observed, 120)
                lines.append(f"  {r.id}: {seen} -- {_clip(r.reason, 400)}")
        skipped: dict[str, int] = {}
        for r in self.results:
            if r.status == "skipped":
                skipped[r.reason] = skipped.get(r.reason, 0) + 1
        if skipped:
            lines.append("")
            lines.append("skipped, by reason:")
            lines += [f"  {n:4d}  {_clip(why, 300)}" for why, n in sorted(skipped.items(), key=lambda x: -x[1])]
        if fake:
            lines.append("")
            lines.append(f"FAKE RUN ({FAKE_ENV}=1): outcomes of the fake HIP library, not of a HIP runtime; "
                         f"fake-mismatch is informational, the {len(self.env.strict)} call-form cases are "
                         "judged strictly")
        if self.aborted:
            lines.append("")
            lines.append(f"ABORTED: {self.aborted}")
        return "\n".join(lines)

    def record_line(self) -> str:
        """Whether the runtime calls were recorded per case (and, where not, why)."""
        env = self.env
        if env.recorder is not None:
            return "recorded per case (runtime cases: every claimed API called, negatives refused by the runtime)"
        return f"NOT recorded: {env.record_off}; the claimed-API check is not made"

    def to_json(self, selection: dict[str, Any] | None = None) -> dict[str, Any]:
        """The report as a JSON-ready dict (``conformance/schema.json``); ``selection`` records how
        the cases were chosen."""
        import pygraphrt

        by_area = {a: self.counts(a) for a in self.areas}
        by_kind = {k: self.counts(kind=k) for k in KINDS}
        return {
            "schema": SCHEMA_ID,
            "pygraphrt_version": pygraphrt.__version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "fake": self.env.fake,
            "backend": dict(self.env.info) if self.env.info else {
                "vendor": self.env.vendor, "runtime_version": self.env.runtime_version,
                "runtime_version_str": self.env.version_str},
            "selection": dict(selection or {}),
            "summary": {"total": len(self.results), **self.counts(), "by_area": by_area,
                        "by_kind": by_kind, "duration_s": round(self.duration_s, 3)},
            "call_record": {"recorded": self.env.recorder is not None,
                            "why_not": None if self.env.recorder is not None else self.env.record_off},
            "aborted": self.aborted,
            "cases": [r.as_dict() for r in self.results],
        }

    def to_junit(self) -> str:
        """The report as JUnit XML text (one test suite per area)."""
        suites = ET.Element("testsuites", name="pygraphrt-conformance")
        total = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for area in self.areas:
            rs = [r for r in self.results if r.area == area]
            c = self.counts(area)
            attrs = {"tests": len(rs), "failures": c["failed"], "errors": c["error"],
                     "skipped": c["skipped"] + c["fake-mismatch"]}
            for k in total:
                total[k] += attrs[k]
            suite = ET.SubElement(suites, "testsuite", {"name": area,
                                                        "time": f"{sum(r.duration_s for r in rs):.6f}",
                                                        **{k: str(v) for k, v in attrs.items()}})
            for r in rs:
                tc = ET.SubElement(suite, "testcase", classname=f"pygraphrt.conformance.{area}", name=r.id,
                                   time=f"{r.duration_s:.6f}")
                if r.status == "failed":
                    ET.SubElement(tc, "failure", message=_clip(r.reason, 500)).text = \
                        f"expected: {r.expected}\nobserved: {r.observed}\n{r.reason}"
                elif r.status == "error":
                    ET.SubElement(tc, "error", message=_clip(r.reason, 500)).text = r.reason
                elif r.status == "skipped":
                    ET.SubElement(tc, "skipped", message=_clip(r.reason, 500))
                elif r.status == "fake-mismatch":
                    ET.SubElement(tc, "skipped", message=_clip("fake-mismatch: " + r.reason, 500))
                elif r.status == "deviation":
                    ET.SubElement(tc, "system-out").text = f"known deviation: {r.observed} -- {r.reason}"
                elif r.status == "unverified-deviation":
                    ET.SubElement(tc, "system-out").text = f"UNVERIFIED deviation: {r.observed} -- {r.reason}"
                props = ET.SubElement(tc, "properties")
                ET.SubElement(props, "property", name="status", value=r.status)
                ET.SubElement(props, "property", name="kind", value=r.kind)
                ET.SubElement(props, "property", name="cite", value=r.cite)
        for k, v in total.items():
            suites.set(k, str(v))
        return ET.tostring(suites, encoding="unicode", xml_declaration=True)


def load_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the ``--json`` document, kept in the package."""
    from importlib import resources

    text = resources.files("pygraphrt.conformance").joinpath("schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def result_filename(doc: dict[str, Any]) -> str:
    """``<vendor>-<runtime>-<gpu>.json`` for a result document (the published results' names)."""
    b = doc.get("backend", {})
    gpu = (b.get("gpu") or {}).get("name") or "unknown-gpu"
    slug = re.sub(r"[^a-z0-9]+", "-", gpu.lower()).strip("-") or "gpu"
    runtime = b.get("runtime_version_str") or "unknown"
    runtime = ".".join(str(runtime).split(".")[:2])
    return f"{b.get('vendor', 'unknown')}-{runtime}-{slug}{'-fake' if doc.get('fake') else ''}.json"


# ---------------------------------------------------------------------------- selection
def select(cases: Iterable[Case], pattern: str | None = None, areas: Sequence[str] | None = None) -> list[Case]:
    """Cases whose id matches ``pattern`` (a substring, or a glob with ``*?[``; several
    separated by commas: any) and whose area is in ``areas``; in registration order,
    grouped by area."""
    pats = [p.strip() for p in (pattern or "").split(",") if p.strip()]

    def match(cid: str) -> bool:
        if not pats:
            return True
        return any(fnmatch.fnmatchcase(cid, p) if any(ch in p for ch in "*?[") else p in cid for p in pats)

    chosen = [c for c in cases if match(c.id) and (not areas or c.area in areas)]
    order = {a: i for i, a in enumerate(dict.fromkeys(c.area for c in chosen))}
    return sorted(chosen, key=lambda c: order[c.area])  # stable: registration order within an area


def unknown_areas(areas: Sequence[str]) -> list[str]:
    return [a for a in areas if a not in AREAS]


# ---------------------------------------------------------------------------- pytest helpers
_SESSION: list[Environment] = []


def session_environment() -> Environment:
    """One environment per process (the active backend), for running cases one by one."""
    if not _SESSION:
        _SESSION.append(Environment.active())
    return _SESSION[0]


def run_one(case: Case, env: Environment | None = None) -> CaseResult:
    """Run one case in ``env`` (default: :func:`session_environment`)."""
    return Runner(env or session_environment(), [case], progress=False).run_case(case)


def write_json(path: str, doc: dict[str, Any]) -> None:
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, sort_keys=False)
        f.write("\n")

