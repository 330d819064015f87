"""cuda-pathfinder's answer for libcudart, found without importing it where that is certain.

Importing ``cuda.pathfinder`` costs tens of milliseconds (its package imports every
finder: binaries, headers, static libraries, descriptor catalogs, subprocess probes),
which was most of pygraphrt's own share of the first device call.  For the common
case -- an NVIDIA runtime wheel in site-packages and no libcudart loaded yet -- its
answer is fixed by a few ``stat`` calls, which :func:`site_packages_cudart` makes.

It answers only where it is certain to give the library cuda-pathfinder would:

* the installed cuda-pathfinder is a version whose search order was checked against
  this code (``VERIFIED``; ``tests/test_cold_start.py`` compares the two on the
  installed version in made-up site-packages layouts);
* no libcudart is loaded in the process yet (cuda-pathfinder then returns that one);
* the library is in a site-packages wheel directory, which cuda-pathfinder searches
  first (conda, the system loader, ``CUDA_HOME`` and its canary probe come after).

Anywhere else it returns None and the caller imports cuda-pathfinder as before.
The library it names is loaded the way cuda-pathfinder loads it (``RTLD_NOW |
RTLD_GLOBAL``), so what the process ends up with is the same too.
"""

from __future__ import annotations

import os
import sys

# (major, minor) of cuda-pathfinder releases whose cudart search this module reproduces
# (``_load_lib_no_cache``: site-packages, then conda, before the already-loaded check wins;
# ``find_sub_dirs_all_sitepackages``: site.getsitepackages() with the user site inserted).
# 1.8.0, 1.8.1 and 1.9.0 were compared: their cudart descriptor, site-packages step and
# search order are the same (1.9 changed the NVRTC builtins preload and the anchor-root
# path normalisation, neither on cudart's site-packages path).  tests/test_cold_start.py
# checks the installed one (1.9 in CI, 1.8.1 on the GPU machine).
VERIFIED = frozenset({(1, 8), (1, 9)})
# cuda-pathfinder's descriptor of cudart on Linux (descriptor_catalog.py).
SONAMES = ("libcudart.so.13", "libcudart.so.12")
SITE_DIRS = (("nvidia", "cu13", "lib"), ("nvidia", "cuda_runtime", "lib"))
# How cuda-pathfinder loads what it finds (load_dl_linux.CDLL_MODE).
LOAD_MODE = os.RTLD_NOW | getattr(os, "RTLD_GLOBAL", 0)
HOW = "cuda-pathfinder (site-packages; its search order, without importing it)"


def installed_version() -> tuple[int, int] | None:
    """(major, minor) of the importable cuda-pathfinder, read from its ``_version.py``
    without importing the package; None when it is not installed or unreadable."""
    from importlib.machinery import PathFinder

    try:
        spec = PathFinder.find_spec("cuda")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    if spec.loader is not None and spec.origin not in (None, "namespace"):
        return None  # a regular ``cuda`` package: its __init__ could change things; no shortcut
    for loc in spec.submodule_search_locations:
        path = os.path.join(loc, "pathfinder", "_version.py")
        if not os.path.isdir(os.path.join(loc, "pathfinder")):
            continue
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError:
            return None
        for line in text.splitlines():  # __version__ = version = '1.9.0'
            if line.startswith("__version__ ="):
                parts = line.rsplit("=", 1)[-1].strip().strip("'\"").split(".")
                try:
                    return int(parts[0]), int(parts[1])
                except (IndexError, ValueError):
                    return None
        return None  # the first ``cuda/pathfinder`` on the path is the one that would be imported
    return None


def site_dirs() -> list[str]:
    """The directories cuda-pathfinder's site-packages search walks, in its order."""
    import site

    parent_dirs = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        user_site = site.getusersitepackages()
        if user_site:
            parent_dirs.insert(1 if sys.prefix != sys.base_prefix else 0, user_site)
    return parent_dirs


def find_in_site_packages() -> str | None:
    """The libcudart cuda-pathfinder's site-packages step finds, or None (no version check)."""
    for rel in SITE_DIRS:
        for base in site_dirs():
            d = os.path.join(base, *rel)
            if os.path.isdir(d):
                for soname in SONAMES:
                    p = os.path.join(d, soname)
                    if os.path.isfile(p):
                        return p
    return None


def already_loaded() -> bool:
    """Whether a libcudart (by cuda-pathfinder's sonames) is loaded in this process."""
    # cuda-pathfinder asks dlopen(soname, RTLD_NOLOAD) (check_if_already_loaded_from_elsewhere).
    # That needs ctypes (cffi's dlopen crashes on RTLD_NOLOAD's error-less failure), whose import
    # costs a couple of milliseconds of every cold start; so the process's mappings are read
    # first, and only a process with a libcudart file mapped asks dlopen.
    try:
        with open("/proc/self/maps") as maps:
            if "libcudart" not in maps.read():
                return False
    except OSError:
        pass
    import ctypes

    for soname in SONAMES:
        try:
            ctypes.CDLL(soname, mode=os.RTLD_NOLOAD)
        except OSError:
            continue
        return True
    return False


def site_packages_cudart() -> str | None:
    """The path cuda-pathfinder would load libcudart from, when that is certain; else None."""
    if sys.platform != "linux" or "cuda.pathfinder" in sys.modules:
        return None  # imported already: asking it costs nothing
    if installed_version() not in VERIFIED:
        return None
    path = find_in_site_packages()
    if path is None or already_loaded():
        return None
    return path
