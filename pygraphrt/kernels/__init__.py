"""Kernels: compile from source, load, launch with typed arguments.

One module per concept: :mod:`._program` (NVRTC / HIPRTC compilation),
:mod:`._library` (loaded code, kernels, attributes, occupancy, launch), :mod:`._link`
(linking relocatable code and the device runtime),
:mod:`._signature` (kernel signatures: packing and unpacking arguments the way
the compiler lays out kernel parameters).  Kernel *nodes* live with the other
node types in :mod:`pygraphrt.graph`.

Example::

    import pygraphrt as rt
    prog = rt.Program(r'''
    extern "C" __global__ void axpy(float *y, const float *x, float a, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] += a * x[i];
    }''')
    axpy = prog.kernel("axpy", signature="float*, const float*, float, int")
    stream.launch(axpy, (n + 255) // 256, 256, y, x, 2.0, n)
"""

from ._library import Kernel, KernelAttributes, Library
from ._link import device_runtime_library, link
from ._program import Program
from ._signature import ArgType, PackedArgs, Signature, infer_signature, parse_signature

__all__ = ["Program", "Library", "Kernel", "KernelAttributes", "Signature", "ArgType",
           "PackedArgs", "parse_signature", "infer_signature", "link", "device_runtime_library"]
