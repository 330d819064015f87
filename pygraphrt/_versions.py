"""Runtime version numbers as the vendors report them, read and written.

Below every module that names a version (the backend switch, its records, messages): a leaf.
"""

from __future__ import annotations


def version_tuple(vendor: str, v: int) -> tuple[int, int]:
    """(major, minor) of a version as the vendor's runtime reports it (13050, 70125424)."""
    if vendor in ("cuda", "sim"):  # the simulator reports the CUDA version it implements
        return v // 1000, (v % 1000) // 10
    return v // 10_000_000, (v // 100_000) % 100


def version_str(vendor: str, v: int | None) -> str:
    """``v`` as the vendor writes it ("13.0", "7.1.25424"); "none" for None."""
    if v is None:
        return "none"
    if vendor in ("cuda", "sim"):
        return f"{v // 1000}.{(v % 1000) // 10}"
    return f"{v // 10_000_000}.{(v // 100_000) % 100}.{v % 100_000}"
