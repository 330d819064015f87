"""Switching the active backend inside a test process (one place for the tests that need it)."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator


@contextlib.contextmanager
def selected(vendor: str) -> Iterator[Any]:
    """Make ``vendor`` (``"sim"``, ``"cuda"``, ...) the active backend for the block and restore
    the previous one after -- directly, as ``pygraphrt.use`` would refuse while the other
    backend has live objects (the tests keep theirs)."""
    from pygraphrt import _runtime

    with _runtime._state.lock:
        saved = _runtime._state.active
        backend = _runtime.load(vendor)
        _runtime._state.active = backend
    try:
        yield backend
    finally:
        with _runtime._state.lock:
            _runtime._state.active = saved
