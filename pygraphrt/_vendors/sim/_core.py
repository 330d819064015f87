"""What every part of the simulator shares: error codes, handles, conversions.

The simulator answers in the CUDA 13 runtime's terms: integers of ``cudaError_t``
and handles typed by the ``cuda13`` binding's ``ffi``.  Inside, a failing call
raises :class:`SimError` (a code and an explanation); the C-call surface
(:mod:`._lib`) turns it into the return value and keeps the explanation for
``SimVendor.error``.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

from ..._bindings.cuda13 import ffi

# cudaError_t members by name (without the ``cudaError`` prefix for the common ones).
_ERRORS: dict[str, int] = dict(ffi.typeof("cudaError_t").relements)
ERROR_NAMES: dict[int, str] = dict(ffi.typeof("cudaError_t").elements)


def code(name: str) -> int:
    """The value of ``cudaError<name>`` (``code("InvalidValue")``) or of a full member name."""
    return _ERRORS[name] if name.startswith("cuda") else _ERRORS["cudaError" + name]


SUCCESS = 0

_numpy: Any = None  # numpy, imported on first use (kernels' arrays, collectives): not at start-up


def numpy() -> Any:
    """The numpy module: imported by the first caller, then read from a module global (an import
    statement costs a microsecond or so per call even once numpy is loaded)."""
    global _numpy
    if _numpy is None:
        import numpy as np

        _numpy = np
    return _numpy


class SimError(Exception):
    """A simulated call fails with ``cudaError<name>``; ``detail`` says why (shown by pygraphrt).

    ``undefined``: what the call was given has undefined behaviour on a real runtime (a handle
    that is not a live one of its kind -- destroyed, or another kind's -- which a GPU's runtime
    follows as a pointer and may crash on); the simulator still fails the call with ``name``,
    and records it (:func:`pygraphrt.sim.undefined_calls`).
    """

    def __init__(self, name: str, detail: str = "", cause: BaseException | None = None, *,
                 undefined: bool = False) -> None:
        super().__init__(f"{name}: {detail}")
        self.code = code(name)
        self.name = name
        self.detail = detail
        self.cause = cause
        self.undefined = undefined


def enum(ctype: str) -> dict[str, int]:
    """Members of a binding enum by name."""
    return dict(ffi.typeof(ctype).relements)


def addr(p: Any) -> int:
    """The address a cffi pointer (or array, or int) holds."""
    if isinstance(p, int):
        return p
    return int(ffi.cast("uintptr_t", p))


def is_null(p: Any) -> bool:
    return addr(p) == 0


# -- handles ------------------------------------------------------------------------------------
# Runtime objects (graphs, nodes, streams, ...) are named by integers that look like host
# pointers (as the runtime's handles are), far from the simulated device memory (see
# _memory); they are only ever looked up in the simulator's tables, never dereferenced.
HANDLE_BASE = 0x5A00_0000_0000
_counter = itertools.count(1)
_counter_lock = threading.Lock()


def new_handle() -> int:
    """A fresh handle value (never reused in the process)."""
    with _counter_lock:
        return HANDLE_BASE + 0x10 * next(_counter)


def handle(ctype: str, value: int) -> Any:
    """A handle of C type ``ctype`` (``"cudaGraph_t"``) for ``value``."""
    return ffi.cast(ctype, value)


# Edge data as the simulator keeps it: (from_port, to_port, type).
EdgeData = tuple[int, int, int]
DEFAULT_EDGE: EdgeData = (0, 0, 0)
PORT_PROGRAMMATIC = 1
PORT_LAUNCH_COMPLETION = 2
TYPE_PROGRAMMATIC = 1


def read_edges(arr: Any, n: int) -> list[EdgeData]:
    """Edge data from a ``cudaGraphEdgeData`` array (NULL: all default); reserved bytes checked."""
    if arr == ffi.NULL:
        return [DEFAULT_EDGE] * n
    out = []
    for i in range(n):
        e = arr[i]
        if any(e.reserved[j] for j in range(5)):
            raise SimError("InvalidValue", "reserved bytes of cudaGraphEdgeData must be zero")
        out.append((int(e.from_port), int(e.to_port), int(e.type)))
    return out


def write_edge(target: Any, e: EdgeData) -> None:
    target.from_port, target.to_port, target.type = e
    for j in range(5):
        target.reserved[j] = 0
