"""Backends that plug in above the runtime layer, by name.

A backend here is not a vendor runtime library to find and dlopen but a module of pygraphrt
that builds a :class:`pygraphrt._runtime.Backend` subclass itself: the CPU simulator, which
sits above the graph layer (it uses kernels and graphs), so the runtime below it must not import
it by name.  The runtime asks this table instead, and the plug-in's module is imported only
when the backend is chosen (``pygraphrt.use("sim")``): start-up stays lazy.  A new plug-in
backend is one row here.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

# name -> (the module that provides the backend, its Backend subclass's name, what loading it
# did: the outcome recorded in ``pygraphrt._runtime.attempts()``)
PLUGINS: dict[str, tuple[str, str, Callable[[Any], str]]] = {
    "sim": ("pygraphrt._vendors.sim", "SimBackend",
            lambda sim: f"started the simulator ({sim.runtime.device_count} device(s))"),
}


def create(name: str) -> tuple[Any, str]:
    """(a new backend of the plug-in ``name``, a key of :data:`PLUGINS`, with its module imported
    now; the outcome to record)."""
    module, factory, outcome = PLUGINS[name]
    backend = getattr(importlib.import_module(module), factory)()
    return backend, outcome(backend)
