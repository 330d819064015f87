"""Lifetime of runtime objects, and Python host callables run by the GPU.

Every owning wrapper registers a ``weakref.finalize`` that destroys its handle
exactly once: at ``close()``, when garbage-collected, or at interpreter exit,
whichever comes first.  Destroy errors in finalizers are swallowed (the
interpreter may be shutting down); ``close()`` reports them.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from typing import Any, Callable

from . import _runtime, errors


def _destroy(backend: _runtime.Backend, api: "str | Callable[[Any, Any], Any]", handle: Any,
             report: list[Any] | None) -> None:
    """``api(handle)``: the runtime's destroy function by name, or a function of (backend,
    handle) that returns the runtime's code (a destroy that needs more than one call) -- or,
    where the call that failed is not the destroy itself, ``(code, that call's name without
    the prefix, what it means for the object)``."""
    try:
        rc = api(backend, handle) if callable(api) else backend.ops.fn(api)(handle)
    except Exception:  # interpreter shutdown: the library may be gone
        return
    name, detail = (api if isinstance(api, str) else api.__name__), ""
    if isinstance(rc, tuple):
        rc, name, detail = rc
    if rc and report is not None:
        report.append(backend.ops.error(rc, backend.ops.prefix + name, detail))


class _Captures:
    """Captures running in this process, and the destroys the garbage collector asked for meanwhile.

    A finalizer runs whenever the collector does -- possibly in the middle of a global-mode
    capture, where ``cudaFree`` (and other destroys) are prohibited and would invalidate the
    capture.  So while any capture begun through pygraphrt is active, finalizers queue their
    destroy, and the last capture to end runs the queue.  ``close()`` is never deferred: an
    explicit destroy during a capture is the caller's call, and its error is reported.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active = 0
        self.deferred: list[tuple[_runtime.Backend, Any, Any, Any]] = []

    def began(self) -> None:
        with self.lock:
            self.active += 1

    def ended(self) -> None:
        with self.lock:
            self.active -= 1
            if self.active:
                return
            todo, self.deferred = self.deferred, []
        for backend, api, handle, lease in todo:
            _destroy(backend, api, handle, None)
            del lease  # (what had to outlive the handle may go now: see finalize)

    def finalize(self, backend: _runtime.Backend, api: "str | Callable[[Any, Any], int]", handle: Any,
                 report: list[Any] | None, lease: Any = None) -> None:
        """A finalizer's destroy: now, or when the running captures have ended.  ``lease`` is
        held until the destroy has run: what must outlive the handle (a pool outlives the
        memory it gave; its own destroy is the lease's finalizer)."""
        with self.lock:
            if self.active:
                self.deferred.append((backend, api, handle, lease))
                return
        _destroy(backend, api, handle, report)


def kept_by_live_graphs(backend: _runtime.Backend, found: Callable[[Any], bool]) -> bool:
    """Whether the keep list of a live graph, executable graph or capture in progress holds an
    object for which ``found`` is true: what their runtime objects still refer to.  Walks
    every list (explicit closes are rare; building graphs pays nothing for this)."""
    return bool(live_graphs_keeping(backend, found, first=True))


def live_graphs_keeping(backend: _runtime.Backend, found: Callable[[Any], bool],
                        first: bool = False) -> list[Any]:
    """The live graphs, executable graphs and streams capturing (see kept_by_live_graphs) whose
    keep lists hold an object for which ``found`` is true; with ``first``, at most one."""
    owners: list[Any] = []
    for obj in list(backend.live):
        stack: list[Any] = []
        if obj._keeps_for_runtime:
            stack.append(obj._keep)
        cap = getattr(obj, "_capture", None)  # (a stream's capture; an event's is a weak reference)
        if cap is not None:
            stack.append(getattr(cap, "_keep", None))
        seen: set[int] = set()
        while stack:
            item = stack.pop()
            if item.__class__ in (list, tuple):
                if id(item) not in seen:
                    seen.add(id(item))
                    stack.extend(item)
            elif item is not None and found(item):
                owners.append(obj)
                if first:
                    return owners
                break
    return owners


captures = _Captures()


class Owned:
    """Base of wrappers around one runtime handle."""

    _destroy_api: str = ""
    _kind: str = "handle"
    # Whether _keep lists what the runtime object refers to (a graph's nodes, an executable
    # graph's): kept_by_live_graphs looks there.  Elsewhere _keep is the wrapper's own operands.
    _keeps_for_runtime = False
    _handle: Any = None  # also what a half-constructed object reports

    def __init__(self, backend: _runtime.Backend, handle: Any, owned: bool, keep: Any = None,
                 lease: Any = None) -> None:
        self._backend = backend
        self._handle = handle
        self._owned = owned
        self._keep = keep  # objects the handle refers to: must outlive it
        self._finalizer: weakref.finalize | None = None
        if owned:
            self._report: list[Any] = []
            # ``lease``: held by the finalizer itself, so that even in a collected cycle it is
            # released only after the destroy has run (see _Captures.finalize)
            self._finalizer = weakref.finalize(self, captures.finalize, backend, self._destroy_api, handle,
                                               None, lease)
        backend.live.add(self)

    def _take_ownership(self, handle: Any) -> None:
        """Become the owner of ``handle`` (e.g. a graph the runtime held during capture)."""
        self._handle = handle
        self._owned = True
        self._finalizer = weakref.finalize(self, captures.finalize, self._backend, self._destroy_api, handle, None,
                                           None)
        self._backend.live.add(self)

    def _disown(self) -> Any:
        """Drop the handle without destroying it (the runtime destroys it, or has).  Returns the
        lease the finalizer held (see __init__): the caller holds it as long as the runtime may
        still need what it keeps, or drops it."""
        self._handle = None
        fin, self._finalizer = self._finalizer, None
        self._backend.live.discard(self)
        held = fin.detach() if fin is not None else None  # (obj, func, args, kwargs)
        return held[2][4] if held is not None else None

    @property
    def handle(self) -> Any:
        """The raw cffi handle; raises InvalidResourceHandle once closed."""
        h = self._handle
        if h is None:
            why = self.__dict__.get("_gone_why") if hasattr(self, "__dict__") else None
            raise errors.InvalidResourceHandle(f"{type(self).__name__}.handle",
                                               detail=why or f"this {self._kind} was closed")
        return h

    def _handle_for(self, api: str, role: str = "this") -> Any:
        """The raw cffi handle for a call of the public method ``api``; once closed,
        InvalidResourceHandle naming ``api`` (not ``<type>.handle``), and ``role`` (``"the
        stream"`` for an argument) for the object."""
        h = self._handle
        if h is None:
            why = self.__dict__.get("_gone_why") if hasattr(self, "__dict__") else None
            who = f"{role} {self._kind}"
            raise errors.InvalidResourceHandle(api, detail=f"{who}: {why}" if why else f"{who} was closed")
        return h

    def _runtime_destroyed(self, why: str) -> None:
        """The runtime destroyed the object itself: drop the handle without destroying it
        (a second destroy could hit a reused handle); later use raises saying ``why``."""
        if self._handle is None:
            return
        self._disown()
        if hasattr(self, "__dict__"):
            self.__dict__["_gone_why"] = why

    @property
    def is_valid(self) -> bool:
        """Whether the object still holds its runtime handle (not closed)."""
        return self._handle is not None

    @property
    def backend(self) -> _runtime.Backend:
        """The backend (CUDA, HIP or the simulator) this object belongs to."""
        return self._backend

    def __int__(self) -> int:
        return int(self._backend.ffi.cast("uintptr_t", self.handle))

    def close(self) -> None:
        """Destroy the runtime object now (idempotent). Wrappers of foreign handles only forget it."""
        if self._handle is None:
            return
        handle, self._handle = self._handle, None
        fin, self._finalizer = self._finalizer, None
        self._backend.live.discard(self)
        held = fin.detach() if fin is not None else None  # (its lease, if any, until the destroy has run)
        if held is not None:
            report: list[Any] = []
            _destroy(self._backend, self._destroy_api, handle, report)
            del held
            if report:
                raise report[0]

    def destroy(self) -> None:
        """The same as :meth:`close` (the runtimes' word), including a subclass's own close."""
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _same_backend(self, other: Any, what: str, kind: type | None = None) -> None:
        """Raise InvalidValue naming ``what`` unless ``other`` is a ``kind`` (where given: the
        type an argument must have) of this object's backend."""
        if kind is not None and not isinstance(other, kind):
            name = kind.__name__
            raise errors.InvalidValue(what, detail=f"{other!r} is not {'an' if name[0] in 'AEIOU' else 'a'} {name}")
        if other._backend is not self._backend:
            raise errors.InvalidValue(what, detail=f"{type(other).__name__} belongs to the "
                                                   f"{other._backend.vendor} backend, not "
                                                   f"{self._backend.vendor}")


class ErrorSink:
    """Exceptions raised by host callables, kept until the next synchronize."""

    __slots__ = ("errors", "lock", "__weakref__")

    def __init__(self) -> None:
        self.errors: list[BaseException] = []
        self.lock = threading.Lock()

    def raise_pending(self, api: str) -> None:
        with self.lock:
            if not self.errors:
                return
            first, self.errors = self.errors[0], []
        raise errors.HostCallbackError(api, first)


class HostPayload:
    """One Python callable the GPU may run.

    The C ``userData`` the runtime is given is a token (``c_handle``: a number, never an
    address) that the trampoline looks up, so a call the runtime makes after every Python
    owner of the payload is gone finds nothing and does nothing -- it cannot follow a freed
    pointer (a ``ffi.new_handle`` pointer did: cffi aborted the process, when a stream or an
    executable graph was dropped before its host function ran).  And a payload is *held*
    (:func:`hold`) while the runtime may still run it: from a stream's ``launch_host_func``
    until it has run, from each launch of an executable graph whose nodes run it until it
    has run as often -- so dropping the stream, the graph or the executable graph early
    loses nothing.
    """

    __slots__ = ("fn", "sink", "c_handle", "calls", "token", "pending", "__weakref__")

    def __init__(self, backend: _runtime.Backend, fn: Callable[[], Any], sink: ErrorSink) -> None:
        if not callable(fn):
            raise errors.InvalidValue("host function", detail=f"{fn!r} is not callable")
        self.fn = fn
        self.sink = sink
        self.calls = 0
        self.pending = 0  # runs the runtime has been asked for and not yet made (guarded by _held_lock)
        self.token = next(_tokens)
        self.c_handle = backend.ffi.cast("void *", self.token)
        _payloads[self.token] = self

    def run(self) -> None:
        with _held_lock:
            self.calls += 1
            _release(self)
        try:
            self.fn()
        except BaseException as exc:  # noqa: BLE001 - must never unwind into the runtime
            with self.sink.lock:
                self.sink.errors.append(exc)


# Payloads by token: weakly (the trampoline's lookup), and strongly while a run is pending.
_payloads: "weakref.WeakValueDictionary[int, HostPayload]" = weakref.WeakValueDictionary()
_held: dict[int, HostPayload] = {}
_held_lock = threading.Lock()
_tokens = itertools.count(1)
# Runs the runtime asked for whose payload was gone (see HostPayload): none in pygraphrt's own
# use; a host node in a graph copied outside pygraphrt (a raw clone) can run after its owners.
lost_runs = [0]


def hold(payloads: "tuple[HostPayload, ...] | list[HostPayload]") -> None:
    """The runtime was (about to be) asked to run each of ``payloads`` once more: keep each
    until it has (a launch of an executable graph with host nodes; a stream host function).
    Nodes that do not run (an untaken conditional branch) keep theirs: one payload each."""
    with _held_lock:
        for p in payloads:
            p.pending += 1
            _held[p.token] = p


def unhold(payloads: "tuple[HostPayload, ...] | list[HostPayload]") -> None:
    """Undo :func:`hold` (the launch was refused)."""
    with _held_lock:
        for p in payloads:
            _release(p)


def _release(p: HostPayload) -> None:
    """One run of ``p`` made or called off (``_held_lock`` held): let it go once none is pending."""
    p.pending -= 1
    if p.pending <= 0:
        _held.pop(p.token, None)


def payload_of(ffi: Any, user: Any) -> HostPayload | None:
    """The live payload whose token ``user`` (a host function's ``userData``) is, or None."""
    return _payloads.get(int(ffi.cast("uintptr_t", user)))


_WALKED = (HostPayload, list)  # what host_payloads looks into: a payload, a nested keep list


def host_payloads(keep: Any) -> tuple[HostPayload, ...]:
    """The host callables in retained operands (nested for child graphs, once each).

    The nesting is a graph of lists, not a tree: a graph added as its own child (legal: the
    runtime copies the child) holds its own list, and a child added twice is there twice.
    So each list is walked once."""
    if type(keep) is list and not any(issubclass(t, _WALKED) for t in set(map(type, keep))):
        return ()  # (most graphs: no host callable, no nested list -- told by one pass in C)
    found: dict[int, HostPayload] = {}
    stack, seen = [keep], set()
    while stack:
        item = stack.pop()
        if isinstance(item, HostPayload):
            found[item.token] = item
        elif isinstance(item, list) and id(item) not in seen:
            seen.add(id(item))
            stack.extend(item)
    return tuple(found.values())


_trampolines: dict[int, Any] = {}


def trampoline(backend: _runtime.Backend) -> Any:
    """The one C host function of a backend; it runs the payload whose token is ``userData``."""
    t = _trampolines.get(id(backend))
    if t is None:
        ffi = backend.ffi

        def run(user: Any) -> None:
            payload = payload_of(ffi, user)
            if payload is None:
                lost_runs[0] += 1
                return
            payload.run()

        t = ffi.callback(backend.ops.host_fn_type, run)
        _trampolines[id(backend)] = t
    return t
