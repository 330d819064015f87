"""A test kernel built with NVRTC and loaded into the runtime under test.

Kernels launched by PyTorch/CuPy belong to *their* CUDA runtime (13.x on the GPU
machine); the CUDA 12.9 runtime cannot read those kernel nodes.  This helper
compiles a tiny kernel with NVRTC (through pygraphrt's own nvrtc binding) and
loads it with ``cudaLibraryLoadData`` into the active runtime, so kernel nodes
can be captured and read on every runtime.
"""

from __future__ import annotations

import importlib

import pytest

import pygraphrt as rt
from pygraphrt import lowlevel

SOURCE = r'''
extern "C" __global__ void add(float *x, float v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += v;
}
'''


class AddKernel:
    """``launch(stream, ptr, value, n)`` enqueues x[i] += value for i < n."""

    def __init__(self) -> None:
        try:
            from cuda.pathfinder import load_nvidia_dynamic_lib

            path = load_nvidia_dynamic_lib("nvrtc").abs_path
        except Exception as exc:  # pragma: no cover - depends on the machine
            pytest.skip(f"NVRTC not found: {exc}")
        major = 13 if ".so.13" in path else 12
        nv = importlib.import_module(f"pygraphrt._bindings.nvrtc{major}").ffi
        nvrtc = nv.dlopen(path)
        prog = nv.new("nvrtcProgram *")
        assert nvrtc.nvrtcCreateProgram(prog, SOURCE.encode(), b"add.cu", 0, nv.NULL, nv.NULL) == 0
        arch = rt.Device(0).info().arch.replace("sm_", "sm_")
        opts = [nv.new("char[]", f"--gpu-architecture={arch}".encode())]
        rc = nvrtc.nvrtcCompileProgram(prog[0], 1, nv.new("char *[]", opts))
        if rc != 0:
            size = nv.new("size_t *")
            nvrtc.nvrtcGetProgramLogSize(prog[0], size)
            log = nv.new("char[]", size[0])
            nvrtc.nvrtcGetProgramLog(prog[0], log)
            raise RuntimeError(nv.string(log).decode())
        size = nv.new("size_t *")
        assert nvrtc.nvrtcGetCUBINSize(prog[0], size) == 0
        cubin = nv.new("char[]", size[0])
        assert nvrtc.nvrtcGetCUBIN(prog[0], cubin) == 0
        nvrtc.nvrtcDestroyProgram(prog)
        ffi, lib = lowlevel.ffi, lowlevel.lib
        self.library = ffi.new("cudaLibrary_t *")
        lowlevel.check(lib.cudaLibraryLoadData(self.library, cubin, ffi.NULL, ffi.NULL, 0,
                                               ffi.NULL, ffi.NULL, 0), "cudaLibraryLoadData")
        kernel = ffi.new("cudaKernel_t *")
        lowlevel.check(lib.cudaLibraryGetKernel(kernel, self.library[0], b"add"), "cudaLibraryGetKernel")
        self.kernel = kernel[0]
        self._cubin = cubin

    def launch(self, stream: rt.Stream, ptr: int, value: float, n: int, block: int = 128) -> None:
        ffi, lib = lowlevel.ffi, lowlevel.lib
        cells = [ffi.new("void **", ffi.cast("void *", ptr)), ffi.new("float *", value),
                 ffi.new("int *", n)]
        args = ffi.new("void *[3]", [ffi.cast("void *", c) for c in cells])
        grid = ffi.new("dim3 *", [(n + block - 1) // block, 1, 1])[0]
        blk = ffi.new("dim3 *", [block, 1, 1])[0]
        lowlevel.check(lib.cudaLaunchKernel(ffi.cast("void *", self.kernel), grid, blk, args, 0,
                                            stream.handle), "cudaLaunchKernel")


_kernel: list[AddKernel] = []


def add_kernel() -> AddKernel:
    if not _kernel:
        _kernel.append(AddKernel())
    return _kernel[0]
