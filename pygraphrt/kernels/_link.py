"""Linking relocatable device code: several programs, libraries such as the device runtime.

Code compiled with ``-rdc=true`` (relocatable device code) must be linked before it loads;
kernels that launch graphs from the device (``cudaGraphLaunch(exec, cudaStreamGraphFireAndForget)``
or ``cudaStreamGraphTailLaunch``; NVRTC declares these itself, no include needed) need the
CUDA device runtime, ``libcudadevrt.a``, which ships beside ``libcudart`` in NVIDIA's
runtime wheels (and in toolkits' ``lib64``).  CUDA only: the driver's JIT linker.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .. import _runtime, errors
from ._library import Library


def device_runtime_library() -> str:
    """Where ``libcudadevrt.a`` is: ``PYGRAPHRT_CUDADEVRT``, beside the loaded libcudart,
    ``CUDA_HOME``/``CUDA_PATH``; NotSupported naming the places tried."""
    b = _runtime.active()
    if b.vendor != "cuda":
        raise errors.NotSupported("device_runtime_library", vendor=b.vendor,
                                  detail="the CUDA device runtime exists on CUDA only")
    tried = []
    env = os.environ.get("PYGRAPHRT_CUDADEVRT")
    candidates = [Path(env)] if env else []
    candidates.append(Path(os.path.realpath(b.path)).parent / "libcudadevrt.a")
    for var in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(var)
        if root:
            candidates += [Path(root) / "lib64" / "libcudadevrt.a", Path(root) / "lib" / "libcudadevrt.a"]
    for c in candidates:
        if c.is_file():
            return str(c)
        tried.append(str(c))
    raise errors.NotSupported("device_runtime_library", vendor="cuda",
                              detail=f"libcudadevrt.a not found (tried {tried}); set PYGRAPHRT_CUDADEVRT")


_SUFFIX_KINDS = {".cubin": "cubin", ".ptx": "ptx", ".fatbin": "fatbin", ".o": "object", ".a": "library"}


def _sniff(data: bytes) -> str:
    if data[:4] == b"\x7fELF":
        return "cubin"
    if data[:4] == b"\x50\xed\x55\xba":  # fatbin magic 0xBA55ED50, little-endian
        return "fatbin"
    if data.lstrip()[:2] == b"//" or data.lstrip().startswith(b".version"):
        return "ptx"
    raise errors.InvalidValue("link", detail="cannot tell what these bytes are (a CUBIN, PTX or fatbin)")


def link(*inputs: Any, device_runtime: bool = False) -> Library:
    """Link relocatable device code into a loaded :class:`Library`.

    Parameters
    ----------
    *inputs
        :class:`Program` objects (compiled with ``options=["-rdc=true"]``), bytes (CUBIN,
        PTX or fatbin, told apart by their content), or paths (``.cubin``, ``.ptx``,
        ``.fatbin``, ``.o``, ``.a``).
    device_runtime : bool
        Also link the CUDA device runtime (``libcudadevrt.a``): needed by kernels that
        call runtime functions on the device, e.g. ``cudaGraphLaunch``.

    Raises ``NotSupported`` on HIP; a link error carries the linker's error log.
    """
    from ._program import Program

    b = _runtime.active()
    items: list[tuple[str, Any, str]] = []
    for i, x in enumerate(inputs):
        if isinstance(x, Program):
            if x.image_kind not in ("cubin", "ptx"):
                raise errors.InvalidValue("link", detail=f"{x.name} is a {x.image_kind}, not linkable here")
            items.append((x.image_kind, x.image, x.name))
        elif isinstance(x, (bytes, bytearray, memoryview)):
            data = bytes(x)
            items.append((_sniff(data), data, f"input{i}"))
        elif isinstance(x, (str, os.PathLike)):
            p = Path(x)
            kind = _SUFFIX_KINDS.get(p.suffix)
            if kind is None or not p.is_file():
                raise errors.InvalidValue("link", detail=f"{p}: not a file ending in {sorted(_SUFFIX_KINDS)}")
            items.append((kind, str(p), str(p)))
        else:
            raise errors.InvalidValue("link", detail=f"{x!r} is not a Program, bytes or a path")
    if not items:
        raise errors.InvalidValue("link", detail="nothing to link")
    if device_runtime:
        lib = device_runtime_library()
        items.append(("library", lib, lib))
    try:
        image, log = b.ops.link(items)
    except errors.GraphRTError as e:
        runtime, driver = getattr(b.ops, "runtime_version", None), getattr(b.ops, "driver_version", None)
        if device_runtime and runtime and driver and runtime > driver:
            # Seen: the 13.5 wheel's libcudadevrt.a with a 13.0 driver -> CUDA_ERROR_NO_BINARY_FOR_GPU.
            raise errors.NotSupported("link", vendor=b.vendor, detail=(
                f"the device runtime of CUDA {runtime[0]}.{runtime[1]} ({items[-1][2]}) cannot be linked "
                f"by the JIT linker of a {driver[0]}.{driver[1]} driver ({e.name}); use a libcudadevrt.a "
                "no newer than the driver (PYGRAPHRT_CUDADEVRT) or a newer driver")) from e
        raise
    library = Library(image)
    library.link_log = log
    return library


__all__ = ["device_runtime_library", "link"]
