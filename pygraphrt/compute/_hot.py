"""The compute graph's compiled paths: the index of its accesses (:func:`index_function`) and its
evaluation in C -- ``ComputeGraph._evaluate``, ``Var.read``, ``Var.write``, ``NodeContext.launch``,
``NodeContext.memcpy`` and the build phase's loop.

Every node's closure runs once a phase through ``ComputeGraph._evaluate``, and each access it
makes through ``Var.read`` / ``Var.write``, each piece of work through its context's verbs: in
Python they are about half of a compute graph's first launch.  In compiled mode
(``PYGRAPHRT_FAST``) the binding's hot module (``bindgen/hot_methods.c``, ``bind_compute``)
holds these as CPython method descriptors;
:func:`install` puts them on the classes the first time a topology phase runs with such a
backend active.  The Python methods stay their fallback: the C does only the common call -- a
node without a device, no evaluation already running in the thread, a bound variable accessed
inside a closure of its manager's graph, a kernel of a class checked before, a copy with its
count, no keywords -- and hands every other call, before changing
anything, to the Python method, so errors and semantics stay the Python code's.

They touch no runtime (Python objects only), so once installed they stay for the process and
serve every graph, whichever backend it runs on.  Nothing is installed in ABI mode, on the
simulator alone, or on a free-threaded build (the C spares a context by its reference count and
remembers one thread's slot, both of which assume the GIL).  :func:`status` says what happened.

This module sits below the classes it puts methods on but ComputeGraph and ComputeNode, which
compute/_graph hands it.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

from .. import _fast, _runtime
from . import _vars, _work
from ._topology import index_accesses
from ._work import NodeContext

_lock = threading.Lock()
#: None: not tried with a compiled backend yet; else what install did (``status``).
_done: str | None = None
#: The installed C evaluation (ComputeGraph._evaluate's descriptor) and the build phase's C loop.
_evaluate_descr: Any = None
_build_nodes: Any = None


def _active_hot() -> Any:
    """The active backend's hot module (bindgen/hot_methods.c), or None: no backend selected yet
    (none is selected here), ABI mode, or the simulator."""
    backend = _runtime.active_or_none()
    return _fast.hot_module(backend) if backend is not None else None


def index_function() -> Callable[[Sequence[Sequence[Any]], Sequence[Sequence[Any]]],
                                 tuple[list[int], list[int], dict[Any, list[int]]]]:
    """``compute._topology.index_accesses``, in C where the active backend's compiled extension
    has it (the hot module's ``index_accesses``: the same results), else the Python function.  A
    topology inferred before any runtime call takes the Python function."""
    return getattr(_active_hot(), "index_accesses", None) or index_accesses


def install(graph_cls: type, node_cls: type) -> None:
    """Put the C evaluation on ``graph_cls`` (ComputeGraph, whose nodes are ``node_cls``:
    ComputeNode) and the C accesses on ``Var``, where
    the active backend's compiled extension has them (once per process; a cheap no-op after)."""
    global _done, _evaluate_descr, _build_nodes
    if _done is not None:
        return
    hot = _active_hot()
    if hot is None:
        return  # (ABI mode or the simulator, or no backend yet: asked again at the next phase)
    with _lock:
        if _done is not None:
            return
        targets = ((graph_cls, "_evaluate"), (_vars.Var, "read"), (_vars.Var, "write"), (NodeContext, "launch"),
                   (NodeContext, "memcpy"))
        fallbacks = tuple(cls.__dict__[name] for cls, name in targets)
        try:
            descrs = hot.bind_compute(_vars._active, (_vars._Slot, NodeContext, graph_cls, node_cls, _vars.Var),
                                      (_vars.Var, _vars.BufferVar, _vars.ValueVar),
                                      (_work._KERNEL_CLASSES, _work.KernelWork, _work.MemcpyWork), fallbacks,
                                      tuple(_fast.method_doc(f) for f in fallbacks))
        except (TypeError, ValueError, NotImplementedError, AttributeError) as exc:
            _done = f"in Python: {type(exc).__name__}: {exc}"
            return
        for (cls, name), descr in zip(targets, descrs):
            setattr(cls, name, descr)
        _evaluate_descr, _build_nodes = descrs[0], hot.build_nodes
        _done = "in C: " + ", ".join(f"{cls.__name__}.{name}" for cls, name in targets)


def build_loop(cg: Any) -> Any:
    """The C loop of ``cg``'s build phase (the hot module's ``build_nodes``), or None where the
    evaluation is not the installed C method: not installed, or ``cg``'s ``_evaluate``
    replaced (on the object or by a subclass), which the Python loop then calls."""
    if _done is None or _build_nodes is None or "_evaluate" in getattr(cg, "__dict__", ()):
        return None
    return _build_nodes if type(cg)._evaluate is _evaluate_descr else None


def status() -> str:
    """Where the compute graph's evaluation runs (``pygraphrt info``)."""
    if _done is not None:
        return _done
    if _runtime.active_or_none() is not None and _active_hot() is None:
        return "in Python (the active backend has no compiled extension: ABI mode or the simulator)"
    return "in Python (no compute graph evaluated with a compiled backend yet)"


__all__ = ["build_loop", "index_function", "install", "status"]
