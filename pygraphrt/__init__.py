"""pygraphrt: CUDA and HIP graphs from Python through one error-checked API.

Quick start::

    import pygraphrt as rt
    s = rt.Stream()
    buf = rt.malloc(1 << 20)
    with s.capture() as cap:
        s.memset(buf, 7, 1 << 20)
    exe = cap.graph.instantiate()
    exe.launch(s); s.synchronize()

Importing pygraphrt loads no runtime: the backend is chosen on first use
(``PYGRAPHRT_BACKEND`` = cuda | hip | sim | auto, or :func:`use`; ``sim`` is the CPU
simulator, :mod:`pygraphrt.sim`).
"""

from __future__ import annotations

from typing import Any

__version__ = "0.2.0"

# Lazy attributes keep `import pygraphrt` cheap: nothing below is imported,
# and no library is loaded, until first touched.
_LAZY = {
    "use": ("_runtime", "use"),
    "errors": ("errors", None),
    "enums": ("enums", None),
    "lowlevel": ("lowlevel", None),
    "capabilities": ("capabilities", "capabilities"),
    "Capabilities": ("capabilities", "Capabilities"),
    "GraphRTError": ("errors", "GraphRTError"),
    "Device": ("device", "Device"),
    "Stream": ("device", "Stream"),
    "Event": ("device", "Event"),
    "DeviceBuffer": ("device", "DeviceBuffer"),
    "malloc": ("device", "malloc"),
    "current_device": ("device", "current_device"),
    "multidevice": ("multidevice", None),
    "device_count": ("multidevice", "device_count"),
    "DeviceProperties": ("multidevice", "DeviceProperties"),
    "P2PAttributes": ("multidevice", "P2PAttributes"),
    "exchange_capture_mode": ("device", "exchange_capture_mode"),
    "Graph": ("graph", "Graph"),
    "GraphExec": ("graph", "GraphExec"),
    "Node": ("graph", "Node"),
    "Capture": ("graph", "Capture"),
    "Recapture": ("graph", "Recapture"),
    "RecaptureMismatch": ("graph", "RecaptureMismatch"),
    "RecaptureStatus": ("graph", "RecaptureStatus"),
    "KernelNode": ("graph", "KernelNode"),
    "ConditionalNode": ("graph", "ConditionalNode"),
    "ConditionalHandle": ("graph", "ConditionalHandle"),
    "SET_CONDITIONAL_SOURCE": ("graph", "SET_CONDITIONAL_SOURCE"),
    "MemPool": ("mempool", "MemPool"),
    "ExternalSemaphore": ("extsem", "ExternalSemaphore"),
    "SemaphoreSignal": ("extsem", "SemaphoreSignal"),
    "SemaphoreWait": ("extsem", "SemaphoreWait"),
    "ExternalSemaphoreType": ("enums", "ExternalSemaphoreType"),
    "AsyncBuffer": ("mempool", "AsyncBuffer"),
    "MemPoolAttr": ("enums", "MemPoolAttr"),
    "kernels": ("kernels", None),
    "compute": ("compute", None),
    "sim": ("sim", None),
    "Program": ("kernels", "Program"),
    "Library": ("kernels", "Library"),
    "Kernel": ("kernels", "Kernel"),
    "link": ("kernels", "link"),
    "CompileError": ("errors", "CompileError"),
    "NodeType": ("enums", "NodeType"),
    "CaptureMode": ("enums", "CaptureMode"),
    "CaptureStatus": ("enums", "CaptureStatus"),
    "InstantiateFlags": ("enums", "InstantiateFlags"),
    "UpdateResult": ("enums", "UpdateResult"),
    "GraphMemAttr": ("enums", "GraphMemAttr"),
    "DebugDotFlags": ("enums", "DebugDotFlags"),
    "DependencyType": ("enums", "DependencyType"),
    "EdgeData": ("enums", "EdgeData"),
}

__all__ = sorted([*_LAZY, "backend"])


def backend() -> Any:
    """Describe the active backend (selecting one if needed): vendor, versions, library, binding, devices."""
    from . import _runtime

    return _runtime.active().info()


def __getattr__(name: str) -> Any:
    try:
        module_name, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'pygraphrt' has no attribute {name!r}") from None
    import importlib

    module = importlib.import_module(f"pygraphrt.{module_name}")
    value = module if attr is None else getattr(module, attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
