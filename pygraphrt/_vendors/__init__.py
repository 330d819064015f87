"""Vendor tables: one module per vendor holds every fact that differs."""

from .base import Vendor
from .cuda import CudaVendor
from .hip import HipVendor

VENDORS: dict[str, type[Vendor]] = {"cuda": CudaVendor, "hip": HipVendor}

__all__ = ["Vendor", "CudaVendor", "HipVendor", "VENDORS"]
