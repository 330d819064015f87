"""Simulated kernels: Python functions registered for kernel names.

``rt.Program(source)`` on the simulator compiles nothing: the simulator's NVRTC stand-in
(:mod:`._nvrtc`) records the source and finds its ``extern "C" __global__`` kernels and
their parameter lists; the "image" it returns names them.  Loaded as a library, each
kernel has the parameter layout its declaration gives (reported by
``cudaFuncGetParamInfo``, so pygraphrt checks signatures against it as on a GPU).

Launching a kernel (on a stream, or as a graph node) calls the Python function registered
for its name (:func:`pygraphrt.sim.register_kernel`) once per launch, with a
:class:`KernelContext` and the arguments decoded by the layout: pointers as int device
addresses, numbers as Python numbers.  Without a registered function the launch fails with
``cudaErrorNotSupported`` naming the kernel; the node itself is kept (graphs can be built,
read and updated).
"""

from __future__ import annotations

import json
import re
import struct
import threading
from dataclasses import dataclass
from typing import Any, Callable

from ._core import SimError, new_handle, numpy

IMAGE_MAGIC = b"\x7fPGRTSIM"  # then a little-endian u64 payload length, then JSON

# -- the registry -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Registered:
    name: str
    fn: Callable[..., Any]
    signature: Any  # pygraphrt.kernels Signature or None


_registry: dict[str, Registered] = {}
_registry_lock = threading.Lock()


def register(name: str, fn: Callable[..., Any], signature: Any = None) -> None:
    from ...kernels._signature import parse_signature

    if not isinstance(name, str) or not name:
        raise ValueError(f"a kernel name must be a non-empty str, got {name!r}")
    if not callable(fn):
        raise TypeError(f"{fn!r} is not callable")
    sig = None if signature is None else parse_signature(signature)
    with _registry_lock:
        _registry[name] = Registered(name, fn, sig)


def unregister(name: str) -> None:
    with _registry_lock:
        _registry.pop(name, None)


def registered() -> dict[str, Registered]:
    with _registry_lock:
        return dict(_registry)


def lookup(name: str) -> Registered | None:
    return _registry.get(name)


# -- finding kernels in source ---------------------------------------------------------------------
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_EXTERN_BLOCK = re.compile(r'extern\s+"C"\s*\{')
_GLOBAL = re.compile(r"__global__\b")
_AFTER_GLOBAL = re.compile(r"\s*(?:__launch_bounds__\s*\([^)]*\)\s*|__noinline__\s*|static\s*|inline\s*)*"
                           r"void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?([A-Za-z_]\w*)\s*\(")


def _match_paren(text: str, start: int) -> int:
    """Index of the ')' closing the '(' at ``start - 1``."""
    depth = 1
    i = start
    while i < len(text) and depth:
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
        i += 1
    return i - 1


def find_kernels(source: str) -> dict[str, str]:
    """``extern "C"`` kernels of a CUDA C++ source: name -> parameter list text.

    A ``__global__`` function counts when its declaration says ``extern "C"`` or it is
    inside an ``extern "C" { ... }`` block (the names NVRTC leaves unmangled).
    """
    text = _COMMENTS.sub(" ", source)
    blocks: list[tuple[int, int]] = []
    for m in _EXTERN_BLOCK.finditer(text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        blocks.append((m.end(), i))
    out: dict[str, str] = {}
    for g in _GLOBAL.finditer(text):
        m = _AFTER_GLOBAL.match(text, g.end())
        if m is None:
            continue
        name = m.group(1)
        close = _match_paren(text, m.end())
        params = " ".join(text[m.end():close].split())
        # the declaration's own prefix: back to the previous ';', '{' or '}'
        j = g.start()
        while j > 0 and text[j - 1] not in ";{}":
            j -= 1
        prefix = text[j:g.start()]
        in_block = any(a <= g.start() < b for a, b in blocks)
        if "template" in prefix:
            continue
        if re.search(r'extern\s+"C"', prefix) or in_block:
            out[name] = params
    return out


def make_image(name: str, source: str, kernels: dict[str, str | None], expressions: list[str]) -> bytes:
    payload = json.dumps({"format": 1, "name": name, "source": source, "kernels": kernels,
                          "name_expressions": expressions}).encode()
    return IMAGE_MAGIC + struct.pack("<Q", len(payload)) + payload


def read_image(ffi: Any, code: Any) -> dict[str, Any]:
    """The payload of a simulator image at ``code`` (a pointer), or SimError."""
    p = ffi.cast("unsigned char *", code)
    for i, b in enumerate(IMAGE_MAGIC):  # byte by byte: never read far past a short foreign image
        if p[i] != b:
            raise SimError("InvalidKernelImage",
                           "the simulator runs only images made by rt.Program on the sim backend (it "
                           "cannot run real device code): register a Python function for each kernel "
                           "name with pygraphrt.sim.register_kernel and build the kernels with "
                           "rt.Program(source)")
    n = struct.unpack("<Q", bytes(ffi.buffer(p + len(IMAGE_MAGIC), 8)))[0]
    return dict(json.loads(bytes(ffi.buffer(p + len(IMAGE_MAGIC) + 8, n))))


def parse_layout(params: str | None) -> Any:
    """The Signature of a parameter list, or None when pygraphrt's parser cannot read it."""
    if params is None:
        return None
    from ... import errors
    from ...kernels._signature import parse_signature

    try:
        return parse_signature(params)
    except (errors.GraphRTError, ValueError, TypeError):
        return None


# -- libraries and kernels ----------------------------------------------------------------------------
class SimLibrary:
    def __init__(self, payload: dict[str, Any]) -> None:
        self.handle = new_handle()
        self.name = str(payload.get("name", "program"))
        self.source = str(payload.get("source", ""))
        self.declared: dict[str, str | None] = dict(payload.get("kernels", {}))
        self.kernels: dict[str, SimKernel] = {}
        self.unloaded = False

    def kernel(self, name: str) -> "SimKernel":
        k = self.kernels.get(name)
        if k is None:
            if name not in self.declared:
                known = ", ".join(sorted(self.declared)) or "none"
                raise SimError("SymbolNotFound", f"no kernel {name!r} in program {self.name} "
                                                 f"(its extern \"C\" kernels and name expressions: {known})")
            k = self.kernels[name] = SimKernel(self, name, parse_layout(self.declared[name]))
        return k


class SimKernel:
    """A kernel of a simulated library (``cudaKernel_t``)."""

    def __init__(self, library: SimLibrary, name: str, layout: Any) -> None:
        self.handle = new_handle()
        self.library = library
        self.name = name
        self.source_layout = layout  # from the declaration, or None
        self.max_dynamic_smem = 48 * 1024

    def layout(self) -> Any:
        """The parameter layout: the declaration's, else the registered function's signature."""
        if self.source_layout is not None:
            return self.source_layout
        reg = lookup(self.name)
        return reg.signature if reg is not None else None

    def __repr__(self) -> str:
        return f"<sim kernel {self.name}>"


# -- running a kernel ------------------------------------------------------------------------------
class KernelContext:
    """What a simulated kernel's Python function gets first: the launch and device memory.

    Attributes: ``name``, ``grid`` and ``block`` (3-tuples), ``shared_mem`` (dynamic
    shared memory in bytes), ``stream`` (the stream handle as an int; 0 for the legacy
    stream; None when a graph runs the kernel), ``signature`` (the parameter layout the
    arguments were decoded with: a :class:`pygraphrt.kernels.Signature`, whose ``params``
    tell a function registered for kernels of one name but different types which it got).
    """

    def __init__(self, runtime: Any, name: str, grid: tuple[int, int, int], block: tuple[int, int, int],
                 shared_mem: int, stream: int | None, conditionals: dict[int, Any] | None,
                 signature: Any = None, device: int = 0) -> None:
        self._runtime = runtime
        self.name = name
        self.device = device  # the device the kernel runs on (its stream's, or its graph node's)
        self.signature = signature
        self.grid = grid
        self.block = block
        self.shared_mem = shared_mem
        self.stream = stream
        self._conditionals = conditionals

    @property
    def threads(self) -> int:
        """Threads in the whole launch (grid x block)."""
        g, b = self.grid, self.block
        return g[0] * g[1] * g[2] * b[0] * b[1] * b[2]

    def memory(self, address: int, nbytes: int) -> memoryview:
        """A writable view of ``nbytes`` of device (or host) memory at ``address`` (another device's
        memory only where this kernel's device may reach it: else an illegal-address fault)."""
        self._runtime._kernel_reach(self.device, int(address), f"kernel {self.name}")
        return self._runtime.memory.view(int(address), int(nbytes), f"kernel {self.name}", "IllegalAddress")

    def read(self, address: int, nbytes: int) -> bytes:
        """Read ``nbytes`` of simulated device memory at ``address``.

        Returns
        -------
        bytes
            A copy of the bytes.
        """
        return bytes(self.memory(address, nbytes))

    def write(self, address: int, data: Any) -> None:
        """Write ``data`` (any bytes-like object) to simulated device memory at ``address``."""
        mv = memoryview(data).cast("B")
        self.memory(address, len(mv))[:] = mv

    def array(self, address: int, dtype: Any, count: int) -> Any:
        """A writable numpy array of ``count`` elements of ``dtype`` at ``address`` (needs numpy)."""
        np = numpy()
        dt = np.dtype(dtype)
        return np.frombuffer(self.memory(address, dt.itemsize * int(count)), dtype=dt)

    def set_conditional(self, handle: Any, value: int) -> None:
        """``cudaGraphSetConditional(handle, value)``: only inside a graph that owns the handle."""
        h = int(handle)
        table = self._conditionals
        if table is None or h not in table:
            raise SimError("InvalidValue", f"kernel {self.name}: cudaGraphSetConditional with handle {h:#x}, "
                                           "which no graph running this kernel owns")
        table[h] = int(value) & 0xFFFFFFFF


def run(runtime: Any, kernel: SimKernel, grid: tuple[int, int, int], block: tuple[int, int, int],
        smem: int, args: tuple[bytes, ...], stream: int | None, conditionals: dict[int, Any] | None,
        device: int = 0) -> None:
    """Run one launch of ``kernel`` on ``device`` through its registered function."""
    reg = lookup(kernel.name)
    if reg is None:
        raise SimError("NotSupported", f"kernel {kernel.name!r} has no Python implementation on the simulator: "
                                       f"register one with pygraphrt.sim.register_kernel({kernel.name!r}, fn)")
    layout = kernel.layout()
    if layout is None:
        raise SimError("NotSupported", f"the simulator cannot decode the arguments of kernel {kernel.name!r}: "
                                       "its parameter list was not found or not understood; pass signature= "
                                       "to pygraphrt.sim.register_kernel")
    values = layout.unpack(list(args)) if len(layout) else []
    ctx = KernelContext(runtime, kernel.name, grid, block, smem, stream, conditionals, layout, device)
    try:
        reg.fn(ctx, *values)
    except SimError:
        raise
    except Exception as exc:  # the kernel's own bug: a launch failure naming it
        raise SimError("LaunchFailure", f"kernel {kernel.name!r} raised {type(exc).__name__}: {exc}",
                       cause=exc) from exc
