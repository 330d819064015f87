"""Vendor tables: one module per vendor holds every fact that differs."""

from __future__ import annotations

from typing import Any

from .base import Vendor
from .cuda import CudaVendor


def vendor_class(vendor: str) -> type[Vendor]:
    """The table class of ``vendor`` ("cuda" or "hip").  The HIP module is imported when
    first asked for: a CUDA process never needs it, and its cold start should not pay for it."""
    if vendor == "hip":
        from .hip import HipVendor

        return HipVendor
    if vendor == "cuda":
        return CudaVendor
    raise KeyError(vendor)


def __getattr__(name: str) -> Any:
    if name == "HipVendor":
        return vendor_class("hip")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Vendor", "CudaVendor", "HipVendor", "vendor_class"]
