"""Node objects that only their graph holds, let go before the cyclic collector walks them.

The Python add paths (ABI mode, the simulator, and the compiled mode's general paths) keep each
node they make in the graph's ``_fresh`` list, so that every readback of the graph gives the
object the add returned (``Graph._table`` enters them in the node table when it is read).  A
loop that drops each node it gets -- a chain or fan-out built to be instantiated -- would leave
those objects alive as long as the graph: tracked objects that the cyclic collector walks at
every young collection, then promotes, and counts toward the next full collection of the whole
heap (in a process with a large heap, one per few graphs of thousands of nodes).  The compiled
add methods keep their nodes by an untracked weak reference, which pure Python cannot make.

This module gives the Python paths the same effect.  At the start of every collection
(``gc.callbacks``), each watched graph's fresh nodes are sorted: a node something else refers to
(a caller's variable, a list of the caller's, a dependency being added) is entered in the node
table, as ``Graph._table`` would enter it; a node nothing else refers to is dropped, and freed
before the collector sees it.  Dropping an object nothing refers to cannot be observed: a later
readback makes the node's object again from its handle (``Graph._wrap``), and that is the one
object of the handle from then on.  Only a weak reference to a dropped node dies with it, as a
weak reference to a compiled add's node does.  Nodes with state of their own
(``ConditionalNode``) never enter ``_fresh``: ``Graph._wrap`` makes them, into the table.

Whether something else refers to a node is read from its reference count.  What the count of an
object that nothing else holds reads as there depends on the interpreter (CPython 3.14 counts
borrowed references on its stack no more), so it is measured once, by sorting two probes through
the very function that sorts nodes (:func:`_calibrate`); where that does not give a consistent
answer -- no ``sys.getrefcount``, a free-threaded build, whose counts other threads change -- no
graph is watched and nodes stay in ``_fresh`` until the table is read, as before.

A graph is watched from the add that finds its ``_fresh`` empty (:func:`watch`) until a
collection finds it empty again; so a collection visits only graphs that made nodes since the
last one.  Graphs are held weakly here.

This module knows graphs by the objects it is handed (their ``_fresh``, ``_nodes`` and
``_fresh_watched``) and imports nothing of the graph package.
"""

from __future__ import annotations

import gc
import sys
import threading
from typing import Any, Callable
from weakref import ref as _ref

#: Weak references to the graphs watched now (see the module).
_watched: list[Any] = []
#: The reference count :func:`_enter_held` reads for a node nothing else refers to; None: not
#: measured yet; False: no graph is watched (see the module).
_base: int | bool | None = None
_lock = threading.Lock()


def _enter_held(fresh: list[Any], nodes: dict[Any, Any], base: int,
                count: Callable[[Any], int] = sys.getrefcount) -> None:
    """Take the nodes out of ``fresh`` (a graph's ``_fresh``), entering in ``nodes`` (its node
    table) each one that something else refers to, keyed by its handle (a destroyed node's,
    None, is left out, as ``Graph._table`` leaves it); the others go.  ``base``: what
    :func:`_calibrate` measured.

    This runs in whichever thread the collection started in, while another thread may be adding
    to the same graph: the list is copied and emptied by two steps between which CPython does
    not switch threads -- a slice and a ``del`` of a slice, no call, no backward jump, the only
    places its eval loop lets another thread in -- so no node appended meanwhile is lost.  (A
    call of a Python function between them would open that door; the test that plants one,
    tests/test_python_adds.py, then fails.)"""
    taken = fresh[:]
    del fresh[:]
    for n in taken:
        if count(n) > base:
            h = n._handle
            if h is not None:
                nodes[h] = n


class _Probe:
    """What :func:`_calibrate` sorts: an object with a handle, as a node is to :func:`_enter_held`."""

    __slots__ = ("_handle",)

    def __init__(self, handle: int) -> None:
        self._handle = handle


def _calibrate() -> int | bool:
    """The count :func:`_enter_held` reads for a node nothing else refers to, measured by sorting
    a probe nothing else refers to beside one a variable holds; False where no count separates
    them (no ``sys.getrefcount``, a free-threaded build)."""
    if not hasattr(sys, "getrefcount"):
        return False
    gil = getattr(sys, "_is_gil_enabled", None)
    if gil is not None and not gil():
        return False
    for base in range(1, 16):
        held = _Probe(2)
        fresh = [_Probe(1), held]
        nodes: dict[Any, Any] = {}
        _enter_held(fresh, nodes, base)
        if 1 not in nodes:  # the lowest count that leaves the unheld probe out
            return base if nodes.get(2) is held and len(nodes) == 1 else False
    return False


def watch(graph: Any) -> None:
    """Watch ``graph`` (its ``_fresh`` was empty before the node being added): its fresh nodes
    are sorted at the start of every collection until one finds none.  The adds call this where
    they find ``_fresh`` empty, so it costs nothing per node."""
    global _base
    if graph._fresh_watched:
        return
    if _base is None:
        with _lock:
            if _base is None:
                base = _calibrate()
                if base is not False:
                    gc.callbacks.append(_on_collect)
                _base = base
    if _base is False:
        return
    graph._fresh_watched = True
    _watched.append(_ref(graph))


def _on_collect(phase: str, info: dict[str, Any]) -> None:
    """``gc.callbacks``' hook: at a collection's start, sort each watched graph's fresh nodes (see
    the module); a graph with none is watched no more.  (The list of graphs is taken as
    :func:`_enter_held` takes a graph's nodes: a graph another thread's add watches meanwhile
    stays for the next collection.)"""
    if phase != "start" or not _watched:
        return
    base = _base
    graphs = _watched[:]
    del _watched[:]
    still: list[Any] = []
    for r in graphs:
        g = r()
        if g is None:
            continue
        fresh = g._fresh
        if fresh:
            _enter_held(fresh, g._nodes, base)  # type: ignore[arg-type]
            still.append(r)
        else:  # (read and set with no call between: no other thread's add comes in between)
            g._fresh_watched = False
    _watched.extend(still)


def watching(graph: Any) -> bool:
    """Whether ``graph`` is watched now (for the tests)."""
    return bool(graph._fresh_watched)


def active() -> bool | None:
    """True where graphs are watched, False where they cannot be (see the module), None before
    the first add asked (for the tests)."""
    return None if _base is None else _base is not False
