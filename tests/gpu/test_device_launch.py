"""Device-side graph launch: a kernel launches an uploaded, device-launchable graph.

The launching kernel is compiled as relocatable code and linked with the CUDA device runtime
(``libcudadevrt.a`` from beside the runtime library) by ``rt.link``; it must itself run in a
graph (the runtime's rule for device launches).
"""

from __future__ import annotations

import numpy as np
import pytest

import pygraphrt as rt
from pygraphrt import errors
from pygraphrt.enums import InstantiateFlags

pytestmark = pytest.mark.gpu

LAUNCHER = r"""
extern "C" __global__ void launch_fire_and_forget(cudaGraphExec_t g) {
    cudaGraphLaunch(g, cudaStreamGraphFireAndForget); }
extern "C" __global__ void launch_tail(cudaGraphExec_t g) {
    cudaGraphLaunch(g, cudaStreamGraphTailLaunch); }
"""
WRITER = r"""
extern "C" __global__ void write(int *p, int v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;  if (i < n) p[i] = v + i; }
"""


def test_a_kernel_launches_a_device_graph(stream):
    prog = rt.Program(LAUNCHER, name="launcher.cu", options=["-rdc=true"])
    from pygraphrt import _runtime

    ops = _runtime.active().ops
    if ops.runtime_version > ops.driver_version:
        # A device runtime newer than the driver cannot be linked by the driver's JIT linker.
        with pytest.raises(errors.NotSupported, match="cannot be linked by the JIT linker"):
            rt.link(prog, device_runtime=True)
        return
    lib = rt.link(prog, device_runtime=True)
    writer = rt.Program(WRITER).kernel("write", signature="int *p, int v, int n")
    out = rt.malloc(4 * 256)
    for entry, v in (("launch_fire_and_forget", 100), ("launch_tail", 500)):
        out.copy_from(bytes(4 * 256))
        dev = rt.Graph()
        dev.add_kernel(writer, 1, 256, [out, v, 256])
        dev_exe = dev.instantiate(InstantiateFlags.DEVICE_LAUNCH)
        dev_exe.upload(stream)
        launcher = lib.kernel(entry, signature="unsigned long long g")
        host = rt.Graph()
        host.add_kernel(launcher, 1, 1, [int(dev_exe)])
        exe = host.instantiate()
        exe.launch(stream)
        stream.synchronize()
        got = np.frombuffer(out.to_bytes(), np.int32)
        assert np.array_equal(got, v + np.arange(256, dtype=np.int32)), entry
        exe.close()
        dev_exe.close()
    # A graph with a host node cannot be made device-launchable.
    bad = rt.Graph()
    bad.add_host(lambda: None)
    with pytest.raises(errors.InvalidValue):
        bad.instantiate(InstantiateFlags.DEVICE_LAUNCH)
    # Input the linker cannot use is refused with what it is.
    with pytest.raises(errors.InvalidValue, match="cannot tell"):
        rt.link(b"not code")
    with pytest.raises(errors.InvalidValue, match="nothing to link"):
        rt.link()
    # the linker's info log is kept as text (what the driver's JIT linker wrote, perhaps empty):
    # a link that succeeded logged no error
    assert isinstance(lib.link_log, str) and "error" not in lib.link_log.lower(), repr(lib.link_log)
