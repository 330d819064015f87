"""A vendor-neutral conformance suite for the graph API: ``python -m pygraphrt.conformance``.

Cases are written once against pygraphrt's vendor-neutral API (:mod:`._case`:
:func:`case`, :class:`CaseContext`), registered in :data:`REGISTRY` by importing
:mod:`pygraphrt.conformance.cases`, and run by :class:`Runner` (:mod:`._runner`),
which checks each case's outcome and that it left nothing behind.  Known vendor
deviations are in :mod:`.deviations`.  Importing this package loads no runtime.
"""

from __future__ import annotations

from ._case import AREAS, KINDS, NOTHING, REGISTRY, Case, CaseContext, CaseFailure, Snapshot, case
from ._runner import (FAKE_CALL_FORMS, STATUSES, CaseResult, Environment, Report, RunAborted, Runner,
                      SetupError, select)
from .deviations import DEVIATIONS, Deviation

__all__ = ["AREAS", "KINDS", "Snapshot", "NOTHING", "REGISTRY", "Case", "CaseContext", "CaseFailure", "case",
           "Runner", "Environment", "Report", "CaseResult", "RunAborted", "SetupError", "STATUSES",
           "FAKE_CALL_FORMS", "select", "Deviation", "DEVIATIONS", "load_cases"]


def load_cases() -> dict[str, Case]:
    """Import every case module; returns :data:`REGISTRY`."""
    from . import cases  # noqa: F401 - importing registers them

    return REGISTRY
