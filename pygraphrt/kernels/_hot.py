"""The hot path of a plain kernel launch: one function per kernel, specialised for its signature.

``stream.launch(k, grid, block, *args)`` (no launch attributes) of a kernel whose
signature holds only ints, floats and pointers, after its first launch (which
checks the signature against the compiled kernel), calls the function made here.
It does what :meth:`Kernel._launch` does, in fewer steps:

* one generated function per signature (``exec``, as ``dataclasses`` does), with the
  arguments unpacked into locals and each one's check written out for its kind;
* pygraphrt's own buffers give their address without a cffi cast (``_address``,
  valid while the buffer's handle is);
* the launch itself: with the compiled fast path (cffi API mode), one C call --
  ``_pgr_launch_packed(state, stream, packed)``, where ``packed`` is one ``bytes``
  made by ``struct`` (dims, shared memory, the argument values) and the C side
  points the argument array into it (a fresh buffer per launch: no sharing between
  threads); in ABI mode, ``struct.pack_into`` a reusable per-kernel buffer (one per
  concurrent launcher) and the launch function (``cuLaunchKernel``) through libffi;
* what may be kept (the objects pointer arguments came from, the kernel's library)
  is handed to the capture only while the stream is capturing.

In compiled mode the launch itself moves to C as well: the hot module's ``Stream.launch`` and
``Kernel.launch`` (bindgen/hot_methods.c) take the place of the Python methods, which stay their
fallback, with the backend's first stream and first kernel (``_fast.install_method``: a bound
method taken before any launch is the C one too); :func:`install_launch`, at a kernel's first
launch, binds them to the backend, and :func:`build` records the kernel's
``_launch_layout`` -- (signature, :func:`c_layout`, the launch function's address, the failure
handler).  They check, pack and launch without running Python code, the common valid call
only, on a stream a pygraphrt capture is recording too (after the launch, the capture's keep
list gets what ``retain`` below would give it: the buffers and the kernel's library); anything
else runs the Python method; a launch's error code goes to the same failure handler as here.

Anything unusual -- a value of another type, a value out of range (``struct``
refuses it), dims given as tuples out of range, a closed stream or buffer, an
unloaded library, another backend, a launch the vendor asks to retry -- goes to
:meth:`Kernel._launch`, the checked general path, which raises the error naming
the parameter.  So the hot path never decides an error itself, except the
launch's own result code.
"""

from __future__ import annotations

import functools
import struct
import threading
from typing import TYPE_CHECKING, Any, Callable

from .. import _fast, errors
from .._fast import LAUNCH_HEADER, LAUNCH_MAX_PARAMS, compiled_helper
from .._operands import device_address
from ..multidevice import runs_on

if TYPE_CHECKING:
    from ._library import Kernel

_KIND_POINTER, _KIND_INT, _KIND_FLOAT = 0, 1, 2  # Signature._fast's codes
#: The largest signature the C packs (hot_methods.c's stack buffers): Graph.add_kernel and the launches.
KERNEL_MAX_PARAMS, KERNEL_MAX_BYTES = 64, 4096
#: struct codes the C packs; a pointer is 'P' in the layout (its own checks), 'Q' in the signature.
_C_CODES = frozenset("bBhHiIqQfd")
_lock = threading.Lock()


def c_layout(kernel: "Kernel") -> tuple[Any, bytes] | bool:
    """(signature, layout) for the C that packs ``kernel``'s arguments (``Graph.add_kernel``, the
    launches), or False where it cannot (no checked signature, a parameter other than an int,
    float or pointer, too large).  The layout: parameter count and size, then per parameter its
    offset and struct code (uint32s)."""
    sig = kernel.signature
    if sig is None or sig._fast is None or sig._struct is None or not kernel._checked:
        return False
    if len(sig.params) > KERNEL_MAX_PARAMS or sig.size > KERNEL_MAX_BYTES:
        return False
    words = [len(sig.params), sig.size]
    for p, off in zip(sig.params, sig.offsets):
        code = "P" if p.kind == "pointer" else p.code
        if p.kind != "pointer" and code not in _C_CODES:
            return False
        words += [off, ord(code)]
    return sig, struct.pack(f"<{len(words)}I", *words)


def install_launch(backend: Any) -> bool:
    """Make ``Stream.launch`` and ``Kernel.launch`` the compiled ones for ``backend``'s kernels
    and streams (once per backend; a no-op in ABI mode and on the simulator).  True when they
    are; why not is kept for :func:`status`."""
    hot = _fast.hot_module(backend)
    if hot is None:
        return False
    state = backend.memo.get("_hot_launch")
    if state is None:
        from ..device import DeviceBuffer, Stream
        from ..mempool import AsyncBuffer
        from ._library import Kernel, Library

        with _lock:
            state = backend.memo.get("_hot_launch")
            if state is None:
                try:
                    ffi = backend.ffi
                    ctypes = (ffi.typeof(f"{backend.ops.prefix}Stream_t"), ffi.typeof("void *"))
                    classes = (Stream, Kernel, Library, DeviceBuffer, AsyncBuffer)
                    hot.bind_launch(backend, ctypes, classes)
                    # Several devices in use: the C launches take a call only where the kernel
                    # runs on the stream's device as itself and no pygraphrt buffer among the
                    # arguments is another device's memory; the Python ones check the rest.
                    from ..multidevice import when_several

                    when_several(backend, lambda: hot.several(True), lambda: hot.several(False))
                    # (in place since the backend's first stream and kernel, which install them:
                    # a bound method taken before the first launch is the C one too)
                    done = [_fast.install_method(backend, cls, "launch", key)
                            for cls, key in ((Stream, "stream_launch"), (Kernel, "kernel_launch"))]
                    state = "installed" if all(done) else "the hot module refused Stream.launch or Kernel.launch"
                except (TypeError, ValueError, RuntimeError, AttributeError, backend.ffi.error) as exc:
                    state = f"{type(exc).__name__}: {exc}"  # the classes changed under the C: stay Python
                backend.memo["_hot_launch"] = state
    return state == "installed"


def status(backend: Any) -> str:
    """What makes ``backend``'s plain kernel launches: ``"C (Stream.launch, Kernel.launch)"`` or
    ``"Python (why)"`` (installing first, as a kernel's first launch would)."""
    why = _fast.no_hot_methods(backend)
    if why is not None:
        return f"Python ({why})"
    return "C (Stream.launch, Kernel.launch)" if install_launch(backend) else \
        f"Python ({backend.memo['_hot_launch']})"


def memory_types() -> tuple[type, ...]:
    """pygraphrt's buffer types: they carry ``_address`` (valid while ``_handle`` is not None)."""
    from ..device import DeviceBuffer
    from ..mempool import AsyncBuffer

    return (DeviceBuffer, AsyncBuffer)


def argument_lines(kinds: tuple[int, ...], slow: str, unpack: bool = True) -> tuple[list[str], list[str]]:
    """The lines of a generated hot function (indented for its body) that unpack ``args`` -- a
    tuple or list of ``len(kinds)`` -- into ``a0``, ``a1``, ... (``unpack``: else the caller
    has) and check each for its kind (``Signature._fast``), running ``slow`` (a ``return``) for
    anything else; and the names of the values to pack.  A pointer's value is ``p<i>``: a plain
    int as it is, the address of one of pygraphrt's open buffers of ``backend`` (``_address``),
    else ``pointer_of``'s.  The function's globals hold ``memory`` (:func:`memory_types`),
    ``backend`` and ``pointer_of``."""
    lines: list[str] = []
    values: list[str] = []
    names = [f"a{i}" for i in range(len(kinds))]
    if names and unpack:
        lines.append(f"    {', '.join(names)}, = args")
    for i, (a, k) in enumerate(zip(names, kinds)):
        if k == _KIND_POINTER:
            v = f"p{i}"
            lines += [
                f"    t = {a}.__class__",
                f"    if t is int:",
                f"        {v} = {a}",
                f"    elif t in memory and {a}._handle is not None and {a}._backend is backend:",
                f"        {v} = {a}._address",
                f"    else:",
                f"        try:",
                f"            {v} = pointer_of({a})",
                f"        except Exception:",
                f"            {slow}",
            ]
            values.append(v)
        elif k == _KIND_INT:
            lines += [f"    if {a}.__class__ is not int:", f"        {slow}"]
            values.append(a)
        else:
            lines += [f"    t = {a}.__class__",
                      f"    if t is not float and t is not int:", f"        {slow}"]
            values.append(a)
    return lines, values


def build(kernel: "Kernel") -> Callable[..., None] | None:
    """``hot(kernel, stream, grid, block, args, shared_mem)`` for ``kernel``, or None where
    its signature or the vendor has no hot path (the general path is then used)."""
    sig = kernel.signature
    if sig is None or sig._fast is None or sig._struct is None or not kernel._checked:
        return None
    backend = kernel._backend
    try:
        entry = backend.ops.launch_entry(kernel.handle, kernel.form)
    except errors.GraphRTError:
        return None
    if entry is None:
        return None
    from . import _library

    kinds = sig._fast
    n = len(kinds)
    fmt = sig._struct.format
    fmt = fmt.decode() if isinstance(fmt, bytes) else fmt
    ffi = backend.ffi
    packed_launch = compiled_helper(backend, "_pgr_launch_packed") if n <= LAUNCH_MAX_PARAMS else None
    library = kernel._owner if isinstance(kernel._owner, _library.Library) else None
    slow = "return kernel._launch(stream, grid, block, args, smem, NO_ATTRS)"
    body = [
        "def hot(kernel, stream, grid, block, args, smem):",
        "    sh = stream._handle",
        # (several devices in use: checked as the C launch checks, multidevice.runs_on)
        "    if (stream._backend is not backend or sh is None or kernel._func is None"
        + (" or library._handle is None" if library is not None else "")
        + " or backend.several and not runs_on(kernel, stream._device, args)):",
        f"        {slow}",
        "    if grid.__class__ is int and 0 < grid < 4294967296:",
        "        g0 = grid; g1 = g2 = 1",
        "    else:",
        "        g0, g1, g2 = as_dims(grid, 'grid')",
        "    if block.__class__ is int and 0 < block < 4294967296:",
        "        b0 = block; b1 = b2 = 1",
        "    else:",
        "        b0, b1, b2 = as_dims(block, 'block')",
        "    if smem.__class__ is not int or not 0 <= smem < 4294967296:",
        f"        {slow}",
        f"    if len(args) != {n}:",
        f"        {slow}",
    ]
    lines, values = argument_lines(kinds, slow)
    body += lines
    vals = ", ".join(values)
    if packed_launch is not None:
        body += [
            "    try:",
            f"        packed = pack(g0, g1, g2, b0, b1, b2, smem{', ' + vals if vals else ''})",
            "    except (StructError, OverflowError):",
            f"        {slow}",
            "    rc = c_launch(state, sh, packed)",
        ]
    else:
        body += [
            "    scratch = pool.pop() if pool else new_scratch(sig)",
            "    try:",
            f"        pack_into(scratch[0], 0{', ' + vals if vals else ''})",
            "    except (StructError, OverflowError):",
            "        pool.append(scratch)",
            f"        {slow}",
            "    rc = c_launch(func, g0, g1, g2, b0, b1, b2, smem, sh, scratch[1], null)",
            "    pool.append(scratch)",
        ]
    body += [
        "    if rc:",
        "        return failed(rc, kernel, stream, grid, block, args, smem)",
        "    if stream._capture is not None:",
        "        retain(kernel, stream, args)",
    ]
    pointers = tuple(i for i, k in enumerate(kinds) if k == _KIND_POINTER)

    def retain(kernel: "Kernel", stream: Any, args: tuple[Any, ...]) -> None:
        # The runtime copied the values; the capture's graph keeps what they came from.
        for i in pointers:
            v = args[i]
            if v is not None:
                stream._retain(v)
        if kernel._owner is not None:
            stream._retain(kernel._owner)

    retry = entry.retry

    def failed(rc: int, kernel: "Kernel", stream: Any, grid: Any, block: Any, args: tuple[Any, ...],
               smem: int) -> None:
        if rc == retry or rc == -1:  # the vendor's way around it / too many parameters for C
            return kernel._launch(stream, grid, block, args, smem, {})
        err = entry.error(rc)
        stream._note_failure(f"Kernel.launch {kernel.name}", err)
        raise err

    env: dict[str, Any] = {
        "backend": backend, "library": library, "as_dims": _library.as_dims, "NO_ATTRS": {},
        "memory": memory_types(), "pointer_of": functools.partial(device_address, backend),
        "StructError": struct.error,
        "failed": failed, "retain": retain, "sig": sig, "runs_on": runs_on,
    }
    if packed_launch is not None:
        header = "<7I%dx" % (LAUNCH_HEADER - 28)
        env["pack"] = struct.Struct(header + fmt.lstrip("<=!>@")).pack
        state = ffi.new("uintptr_t[]", [entry.address, int(ffi.cast("uintptr_t", entry.handle)), n,
                                        *sig.offsets])
        env["state"] = state
        env["c_launch"] = packed_launch
    else:
        env["pool"] = kernel._scratch
        env["new_scratch"] = kernel._new_scratch  # the general path's buffers: one pool for both
        env["pack_into"] = sig._struct.pack_into
        env["c_launch"] = entry.call
        env["func"] = entry.handle
        env["null"] = ffi.NULL
    exec(compile("\n".join(body) + "\n", f"<pygraphrt launch of {kernel.name}>", "exec"), env)
    hot = env["hot"]
    hot.mode = "compiled" if packed_launch is not None else "ffi"  # for tests and benchmarks
    hot.source = "\n".join(body)
    if packed_launch is not None:
        # The launch in C (install_launch): the same launch function, the same failure handler.
        layout = c_layout(kernel)
        if isinstance(layout, tuple) and install_launch(backend):
            kernel._launch_layout = (*layout, entry.address, failed)
    return hot
