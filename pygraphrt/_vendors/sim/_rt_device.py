"""The runtime's device and error section: versions, devices and their properties, memory
information, ``cudaDeviceSynchronize``.

(The error functions themselves -- ``cudaGetLastError``, ``cudaPeekAtLastError``,
``cudaGetErrorName``, ``cudaGetErrorString`` -- are :class:`~._lib.SimLib`'s: they read the
calling thread's last failure, which the library records.)
"""

from __future__ import annotations

from typing import Any

from ..._bindings.cuda13 import ffi
from ._core import SimError
from ._rt_base import GREATEST_PRIORITY, MAX_THREADS_PER_BLOCK, RuntimeBase


class DeviceSection(RuntimeBase):
    """Versions, devices, ``cudaMemGetInfo``, ``cudaDeviceSynchronize``."""

    # =========================================================================== device, errors
    def cudaRuntimeGetVersion(self, out: Any) -> None:
        out[0] = self.VERSION

    def cudaDriverGetVersion(self, out: Any) -> None:
        out[0] = self.VERSION

    def cudaGetDeviceCount(self, out: Any) -> None:
        out[0] = self.device_count

    def cudaGetDevice(self, out: Any) -> None:
        out[0] = self.cur_device

    def cudaSetDevice(self, d: int) -> None:
        self.thread.device = self._device(d)

    def cudaGetDeviceProperties(self, prop: Any, d: int) -> None:
        self._device(d)
        ffi.memmove(prop, bytes(ffi.sizeof("struct cudaDeviceProp")), ffi.sizeof("struct cudaDeviceProp"))
        name = f"pygraphrt simulator (CPU) #{d}".encode()
        ffi.memmove(prop.name, name, len(name))
        prop.totalGlobalMem = self.memory.total_memory
        prop.sharedMemPerBlock = 48 * 1024
        prop.regsPerBlock = 65536
        prop.warpSize = 32
        prop.memPitch = 1 << 31
        prop.maxThreadsPerBlock = MAX_THREADS_PER_BLOCK
        prop.maxThreadsDim = [1024, 1024, 64]
        prop.maxGridSize = [(1 << 31) - 1, 65535, 65535]
        prop.totalConstMem = 64 * 1024
        prop.major, prop.minor = 9, 0
        prop.multiProcessorCount = 1
        prop.concurrentKernels = 1
        prop.unifiedAddressing = 1
        prop.managedMemory = 0
        prop.maxThreadsPerMultiProcessor = 2048
        prop.sharedMemPerMultiprocessor = 228 * 1024
        prop.sharedMemPerBlockOptin = 227 * 1024
        prop.regsPerMultiprocessor = 65536
        prop.asyncEngineCount = 1
        prop.pciDeviceID = d

    def cudaDeviceGetStreamPriorityRange(self, least: Any, greatest: Any) -> None:
        if least != ffi.NULL:
            least[0] = 0
        if greatest != ffi.NULL:
            greatest[0] = GREATEST_PRIORITY

    def cudaMemGetInfo(self, free: Any, total: Any) -> None:
        d = self.cur_device
        free[0] = self.memory.total_memory - self.memory.in_use(d)
        total[0] = self.memory.total_memory

    def cudaDeviceSynchronize(self) -> None:
        d = self.cur_device
        # an invalidated capture counts until it is ended: CUDA still refuses (found by the
        # cuda-vs-sim differential test, regression seed-capture-fork-join)
        caps = [c for c in self.captures if not c.ended and any(s.device == d for s in c.streams)]
        if caps:
            for c in caps:
                c.invalidate("cudaDeviceSynchronize during the capture")
            raise SimError("StreamCaptureUnsupported", "synchronizing the device is not permitted while "
                           f"{', '.join(c.describe() for c in caps)} is in progress on it; invalidated")
        self._unsafe("cudaDeviceSynchronize", device=d)
        self._after_sync(d)
