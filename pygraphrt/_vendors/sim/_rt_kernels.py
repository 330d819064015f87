"""The runtime's kernel section: libraries (``cudaLibraryLoadData`` / ``LoadFromFile`` /
``Unload``, ``cudaLibraryGetKernel``), function attributes and parameter information,
occupancy, and kernel launches on a stream (``cudaLaunchKernel``, ``cudaLaunchKernelExC``).

Kernels themselves (Python functions registered for names, images, the launch context) are
:mod:`._kernels`'s.
"""

from __future__ import annotations

from typing import Any

from ..._bindings.cuda13 import ffi
from . import _kernels
from ._core import DEFAULT_EDGE, PORT_PROGRAMMATIC, TYPE_PROGRAMMATIC, EdgeData, SimError, addr, enum, handle
from ._graph import KERNEL, KernelP, Node
from ._rt_base import LAUNCH_ATTR, MAX_THREADS_PER_BLOCK, RuntimeBase, _dims


class KernelSection(RuntimeBase):
    """Libraries, kernel attributes, occupancy, kernel launches."""

    # =========================================================================== kernels
    def cudaLibraryLoadData(self, out: Any, code: Any, jit_opts: Any, jit_vals: Any, n_jit: int, lib_opts: Any,
                            lib_vals: Any, n_lib: int) -> None:
        self._out(out, "cudaLibraryLoadData")
        if code == ffi.NULL:
            raise SimError("InvalidValue", "cudaLibraryLoadData: NULL image")
        lib = _kernels.SimLibrary(_kernels.read_image(ffi, code))
        self.libraries[lib.handle] = lib
        out[0] = handle("cudaLibrary_t", lib.handle)

    def cudaLibraryLoadFromFile(self, out: Any, path: Any, jit_opts: Any, jit_vals: Any, n_jit: int,
                                lib_opts: Any, lib_vals: Any, n_lib: int) -> None:
        try:
            with open(ffi.string(path), "rb") as f:
                data = f.read()
        except OSError as exc:
            raise SimError("FileNotFound", f"cudaLibraryLoadFromFile: {exc}") from exc
        buf = ffi.from_buffer(data)
        self.cudaLibraryLoadData(out, buf, jit_opts, jit_vals, n_jit, lib_opts, lib_vals, n_lib)

    def cudaLibraryUnload(self, library: Any) -> None:
        v = addr(library)
        lib = self.libraries.pop(v, None)
        if lib is None:
            raise SimError("InvalidResourceHandle", f"{v:#x} is not a loaded library", undefined=v != 0)
        lib.unloaded = True

    def cudaLibraryGetKernel(self, out: Any, library: Any, name: Any) -> None:
        self._out(out, "cudaLibraryGetKernel")
        v = addr(library)
        lib = self.libraries.get(v)
        if lib is None:
            raise SimError("InvalidResourceHandle", f"{v:#x} is not a loaded library", undefined=v != 0)
        k = lib.kernel(ffi.string(name).decode())
        self.kernels[k.handle] = k
        out[0] = handle("cudaKernel_t", k.handle)

    def cudaFuncGetAttributes(self, attrs: Any, func: Any) -> None:
        k = self._kernel(func)
        ffi.memmove(attrs, bytes(ffi.sizeof("struct cudaFuncAttributes")), ffi.sizeof("struct cudaFuncAttributes"))
        attrs.maxThreadsPerBlock = MAX_THREADS_PER_BLOCK
        attrs.numRegs = 32
        attrs.ptxVersion = 90
        attrs.binaryVersion = 90
        attrs.maxDynamicSharedSizeBytes = k.max_dynamic_smem

    def cudaFuncSetAttribute(self, func: Any, attr: int, value: int) -> None:
        k = self._kernel(func)
        if attr == enum("enum cudaFuncAttribute")["cudaFuncAttributeMaxDynamicSharedMemorySize"]:
            if not 0 <= value <= 227 * 1024:
                raise SimError("InvalidValue", f"{value} bytes of dynamic shared memory exceed the device's 227 KiB")
            k.max_dynamic_smem = value
            return
        if attr not in enum("enum cudaFuncAttribute").values():
            raise SimError("InvalidValue", f"function attribute {attr}")

    def cudaFuncGetParamInfo(self, func: Any, index: int, offset: Any, size: Any) -> None:
        k = self._kernel(func)
        layout = k.layout()
        if layout is None:
            raise SimError("NotSupported", f"the simulator does not know the parameters of kernel {k.name!r}")
        if not 0 <= index < len(layout):
            raise SimError("InvalidValue", f"kernel {k.name!r} has {len(layout)} parameters")
        offset[0] = layout.offsets[index]
        size[0] = layout.params[index].size

    def cudaOccupancyMaxActiveBlocksPerMultiprocessor(self, out: Any, func: Any, block: int, smem: int) -> None:
        self._kernel(func)
        if block <= 0:
            raise SimError("InvalidValue", "block size must be positive")
        out[0] = 0 if block > MAX_THREADS_PER_BLOCK else max(1, min(32, 2048 // block))

    def _launch_kernel(self, func: Any, grid: tuple[int, int, int], block: tuple[int, int, int], argv: Any,
                       smem: int, stream: Any, attrs: tuple[tuple[int, bytes], ...], what: str) -> None:
        k = self._kernel(func)
        st = self._stream(stream)
        self._check_launch(k, grid, block, smem, what)
        args = self._read_args(k, argv, ffi.NULL, what)
        serial_id = LAUNCH_ATTR["cudaLaunchAttributeProgrammaticStreamSerialization"]
        launch_only = (serial_id, LAUNCH_ATTR["cudaLaunchAttributeProgrammaticEvent"])  # edges, in a graph
        p = KernelP(k, grid, block, smem, args, tuple(a for a in attrs if a[0] not in launch_only))
        serial = next((v for i, v in attrs if i == serial_id), None)
        programmatic = serial is not None and int.from_bytes(serial[:4], "little") != 0

        def edges(deps: list[tuple[Node, EdgeData]]) -> list[EdgeData]:
            if not programmatic:
                return [e for _, e in deps]
            return [(PORT_PROGRAMMATIC, 0, TYPE_PROGRAMMATIC) if d.type == KERNEL and e == DEFAULT_EDGE else e
                    for d, e in deps]

        self._submit(st, what, lambda: (KERNEL, p),
                     lambda: _kernels.run(self, k, grid, block, smem, args, addr(stream), None, st.device), edges)

    def cudaLaunchKernel(self, func: Any, grid: Any, block: Any, argv: Any, smem: int, stream: Any) -> None:
        self._launch_kernel(func, _dims(grid), _dims(block), argv, int(smem), stream, (), "cudaLaunchKernel")

    def cudaLaunchKernelExC(self, config: Any, func: Any, argv: Any) -> None:
        attrs = []
        size = ffi.sizeof("cudaLaunchAttributeValue")
        for i in range(int(config.numAttrs)):
            a = config.attrs[i]
            ident = int(a.id)
            if ident not in LAUNCH_ATTR.values():
                raise SimError("InvalidValue", f"cudaLaunchKernelExC: launch attribute {ident}")
            attrs.append((ident, bytes(ffi.buffer(ffi.addressof(a.val), size))))
        self._launch_kernel(func, _dims(config.gridDim), _dims(config.blockDim), argv, int(config.dynamicSmemBytes),
                            config.stream, tuple(attrs), "cudaLaunchKernelExC")
