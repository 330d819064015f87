"""The suite's cases, one module per area; importing this package registers them all."""

from __future__ import annotations

import importlib
import pkgutil


def load_all() -> None:
    """Import every case module in this package (idempotent)."""
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        importlib.import_module(f"{__name__}.{info.name}")


load_all()
