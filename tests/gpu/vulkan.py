"""A Vulkan timeline semaphore exported as an opaque fd, for the external-semaphore tests.

The GPU machine has NVIDIA's Vulkan driver (the ICD ``libGLX_nvidia.so.0``, listed in
``/usr/share/vulkan/icd.d/nvidia_icd.json``) but no Vulkan loader (``libvulkan.so.1``).
The loader only dispatches; so this talks to the ICD directly through its documented
loader-ICD interface: ``vk_icdNegotiateLoaderICDInterfaceVersion`` and
``vk_icdGetInstanceProcAddr``.  With a loader present (``PYGRAPHRT_VULKAN=libvulkan.so.1``)
it uses the loader instead.  Structures are declared here with ctypes from the Vulkan
specification (only the few needed).
"""

from __future__ import annotations

import ctypes
import json
import os
from pathlib import Path

c_u32, c_u64, c_void_p, c_char_p = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_char_p

VK_API_VERSION_1_2 = (1 << 22) | (2 << 12)
ST_APPLICATION_INFO = 0
ST_INSTANCE_CREATE_INFO = 1
ST_DEVICE_QUEUE_CREATE_INFO = 2
ST_DEVICE_CREATE_INFO = 3
ST_SEMAPHORE_CREATE_INFO = 9
ST_PHYSICAL_DEVICE_PROPERTIES_2 = 1000059001
ST_PHYSICAL_DEVICE_ID_PROPERTIES = 1000071004
ST_EXPORT_SEMAPHORE_CREATE_INFO = 1000077000
ST_SEMAPHORE_GET_FD_INFO_KHR = 1000079001
ST_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES = 1000207000
ST_SEMAPHORE_TYPE_CREATE_INFO = 1000207002
ST_SEMAPHORE_SIGNAL_INFO = 1000207005
SEMAPHORE_TYPE_TIMELINE = 1
HANDLE_TYPE_OPAQUE_FD_BIT = 0x1


class ApplicationInfo(ctypes.Structure):
    _fields_ = [("sType", c_u32), ("pNext", c_void_p), ("pApplicationName", c_char_p),
                ("applicationVersion", c_u32), ("pEngineName", c_char_p), ("engineVersion", c_u32),
                ("apiVersion", c_u32)]


class InstanceCreateInfo(ctypes.Structure):
    _fields_ = [("sType", c_u32), ("pNext", c_void_p), ("flags", c_u32),
                ("pApplicationInfo", ctypes.POINTER(ApplicationInfo)), ("enabledLayerCount", c_u32),
                ("ppEnabledLayerNames", c_void_p), ("enabledExtensionCount", c_u32),
                ("ppEnabledExtensionNames", c_void_p)]


class IDProperties(ctypes.Structure):
    _fields_ = [("sType", c_u32), ("pNext", c_void_p), ("deviceUUID", ctypes.c_uint8 * 16),
                ("driverUUID", ctypes.c_uint8 * 16), ("deviceLUID", ctypes.c_uint8 * 8),
                ("deviceNodeMask", c_u32), ("deviceLUIDValid", c_u32)]


class Properties2(ctypes.Structure):
    # VkPhysicalDeviceProperties is large (limits, sparse properties): a generous byte area.
    _fields_ = [("sType", c_u32), ("pNext", c_void_p), ("properties", ctypes.c_uint8 * 4096)]


class QueueCreateInfo(ctypes.Structure):
    _fields_ = [("sType", c_u32), ("pNext", c_void_p), ("flags", c_u32), ("queueFamilyIndex", c_u32),
                ("queueCount", c_u32), ("pQueuePriorities", ctypes.POINTER(ctypes.c_float))]


class TimelineFeatures(ctypes.Structure):
    _fields_ = [("sType", c_u32), ("pNext", c_void_p), ("timelineSemaphore", c_u32)]


class DeviceCreateInfo(ctypes.Structure):
    _fields_ = [("sType", c_u32), ("pNext", c_void_p), ("flags", c_u32), ("queueCreateInfoCount", c_u32),
                ("pQueueCreateInfos", ctypes.POINTER(QueueCreateInfo)), ("enabledLayerCount", c_u32),
                ("ppEnabledLayerNames", c_void_p), ("enabledExtensionCount", c_u32),
                ("ppEnabledExtensionNames", ctypes.POINTER(c_char_p)), ("pEnabledFeatures", c_void_p)]


class SemaphoreTypeCreateInfo(ctypes.Structure):
    _fields_ = [("sType", c_u32), ("pNext", c_void_p), ("semaphoreType", c_u32), ("initialValue", c_u64)]


class ExportSemaphoreCreateInfo(ctypes.Structure):
    _fields_ = [("sType", c_u32), ("pNext", c_void_p), ("handleTypes", c_u32)]


class SemaphoreCreateInfo(ctypes.Structure):
    _fields_ = [("sType", c_u32), ("pNext", c_void_p), ("flags", c_u32)]


class SemaphoreGetFdInfo(ctypes.Structure):
    _fields_ = [("sType", c_u32), ("pNext", c_void_p), ("semaphore", c_u64), ("handleType", c_u32)]


class SemaphoreSignalInfo(ctypes.Structure):
    _fields_ = [("sType", c_u32), ("pNext", c_void_p), ("semaphore", c_u64), ("value", c_u64)]


class VulkanError(RuntimeError):
    pass


def _check(rc: int, what: str) -> None:
    if rc != 0:
        raise VulkanError(f"{what} returned VkResult {rc}")


def _negotiated(lib: ctypes.CDLL) -> bool:
    negotiate = getattr(lib, "vk_icdNegotiateLoaderICDInterfaceVersion", None)
    if negotiate is None:
        return hasattr(lib, "vk_icdGetInstanceProcAddr")
    negotiate.argtypes = [ctypes.POINTER(c_u32)]
    version = c_u32(5)
    return negotiate(ctypes.byref(version)) == 0


def _driver() -> tuple[ctypes.CDLL, bool]:
    """(library, is_loader): a Vulkan loader if named or present, else an NVIDIA ICD.

    The manifest's ICD (``libGLX_nvidia.so.0``) refuses the interface negotiation on a
    machine without an X server (VK_ERROR_INITIALIZATION_FAILED, seen on the H100 machine);
    NVIDIA's EGL library carries the same ICD and works headless, so it is tried too.
    """
    named = os.environ.get("PYGRAPHRT_VULKAN")
    for name in [named] if named else ["libvulkan.so.1"]:
        try:
            return ctypes.CDLL(name), True
        except OSError:
            pass
    icds: list[str] = []
    for folder in (Path("/usr/share/vulkan/icd.d"), Path("/etc/vulkan/icd.d")):
        if folder.is_dir():
            icds += [json.loads(f.read_text())["ICD"]["library_path"] for f in sorted(folder.glob("nvidia*.json"))]
    tried = []
    for name in [*icds, "libEGL_nvidia.so.0"]:
        try:
            lib = ctypes.CDLL(name)
        except OSError as e:
            tried.append(f"{name}: {e}")
            continue
        if _negotiated(lib):
            return lib, False
        tried.append(f"{name}: interface negotiation failed")
    raise VulkanError(f"no usable Vulkan loader or NVIDIA ICD: {tried}")


class TimelineSemaphore:
    """A timeline semaphore on the Vulkan device that is the CUDA device with ``uuid``."""

    def __init__(self, uuid: bytes | None = None) -> None:
        lib, is_loader = _driver()
        gipa = lib.vkGetInstanceProcAddr if is_loader else lib.vk_icdGetInstanceProcAddr
        gipa.restype, gipa.argtypes = c_void_p, [c_void_p, c_char_p]
        self._lib = lib

        def proc(instance: int | None, name: str, res: object, *args: object) -> object:
            addr = gipa(instance, name.encode())
            if not addr:
                raise VulkanError(f"{name} is not available")
            return ctypes.CFUNCTYPE(res, *args)(addr)

        app = ApplicationInfo(ST_APPLICATION_INFO, None, b"pygraphrt-test", 1, b"none", 0, VK_API_VERSION_1_2)
        ici = InstanceCreateInfo(ST_INSTANCE_CREATE_INFO, None, 0, ctypes.pointer(app), 0, None, 0, None)
        inst = c_void_p()
        create_instance = proc(None, "vkCreateInstance", ctypes.c_int32, ctypes.POINTER(InstanceCreateInfo),
                               c_void_p, ctypes.POINTER(c_void_p))
        _check(create_instance(ctypes.byref(ici), None, ctypes.byref(inst)), "vkCreateInstance")
        self.instance = inst.value
        enum_pd = proc(self.instance, "vkEnumeratePhysicalDevices", ctypes.c_int32, c_void_p,
                       ctypes.POINTER(c_u32), ctypes.POINTER(c_void_p))
        count = c_u32(0)
        _check(enum_pd(self.instance, ctypes.byref(count), None), "vkEnumeratePhysicalDevices")
        pds = (c_void_p * count.value)()
        _check(enum_pd(self.instance, ctypes.byref(count), pds), "vkEnumeratePhysicalDevices")
        props2 = proc(self.instance, "vkGetPhysicalDeviceProperties2", None, c_void_p,
                      ctypes.POINTER(Properties2))
        chosen = None
        self.device_uuid = b""
        for pd in pds:
            ids = IDProperties(ST_PHYSICAL_DEVICE_ID_PROPERTIES, None)
            p2 = Properties2(ST_PHYSICAL_DEVICE_PROPERTIES_2, ctypes.cast(ctypes.pointer(ids), c_void_p))
            props2(pd, ctypes.byref(p2))
            if uuid is None or bytes(ids.deviceUUID) == uuid:
                chosen, self.device_uuid = pd, bytes(ids.deviceUUID)
                break
        if chosen is None:
            raise VulkanError(f"no Vulkan device has the CUDA device's UUID {uuid!r}")
        prio = ctypes.c_float(1.0)
        qci = QueueCreateInfo(ST_DEVICE_QUEUE_CREATE_INFO, None, 0, 0, 1, ctypes.pointer(prio))
        feats = TimelineFeatures(ST_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES, None, 1)
        exts = (c_char_p * 1)(b"VK_KHR_external_semaphore_fd")
        dci = DeviceCreateInfo(ST_DEVICE_CREATE_INFO, ctypes.cast(ctypes.pointer(feats), c_void_p), 0, 1,
                               ctypes.pointer(qci), 0, None, 1, exts, None)
        dev = c_void_p()
        create_device = proc(self.instance, "vkCreateDevice", ctypes.c_int32, c_void_p,
                             ctypes.POINTER(DeviceCreateInfo), c_void_p, ctypes.POINTER(c_void_p))
        _check(create_device(chosen, ctypes.byref(dci), None, ctypes.byref(dev)), "vkCreateDevice")
        self.device = dev.value
        gdpa = proc(self.instance, "vkGetDeviceProcAddr", c_void_p, c_void_p, c_char_p)

        def dproc(name: str, res: object, *args: object) -> object:
            addr = gdpa(self.device, name.encode())
            if not addr:
                raise VulkanError(f"{name} is not available")
            return ctypes.CFUNCTYPE(res, *args)(addr)

        self._destroy_device = dproc("vkDestroyDevice", None, c_void_p, c_void_p)
        self._destroy_instance = proc(self.instance, "vkDestroyInstance", None, c_void_p, c_void_p)
        create_sem = dproc("vkCreateSemaphore", ctypes.c_int32, c_void_p, ctypes.POINTER(SemaphoreCreateInfo),
                           c_void_p, ctypes.POINTER(c_u64))
        self._destroy_sem = dproc("vkDestroySemaphore", None, c_void_p, c_u64, c_void_p)
        self._get_fd = dproc("vkGetSemaphoreFdKHR", ctypes.c_int32, c_void_p,
                             ctypes.POINTER(SemaphoreGetFdInfo), ctypes.POINTER(ctypes.c_int))
        self._signal = dproc("vkSignalSemaphore", ctypes.c_int32, c_void_p, ctypes.POINTER(SemaphoreSignalInfo))
        self._value = dproc("vkGetSemaphoreCounterValue", ctypes.c_int32, c_void_p, c_u64,
                            ctypes.POINTER(c_u64))
        export = ExportSemaphoreCreateInfo(ST_EXPORT_SEMAPHORE_CREATE_INFO, None, HANDLE_TYPE_OPAQUE_FD_BIT)
        stype = SemaphoreTypeCreateInfo(ST_SEMAPHORE_TYPE_CREATE_INFO,
                                        ctypes.cast(ctypes.pointer(export), c_void_p), SEMAPHORE_TYPE_TIMELINE, 0)
        sci = SemaphoreCreateInfo(ST_SEMAPHORE_CREATE_INFO, ctypes.cast(ctypes.pointer(stype), c_void_p), 0)
        sem = c_u64()
        _check(create_sem(self.device, ctypes.byref(sci), None, ctypes.byref(sem)), "vkCreateSemaphore")
        self.semaphore = sem.value

    def export_fd(self) -> int:
        """A new opaque fd for the semaphore (the importer owns it)."""
        info = SemaphoreGetFdInfo(ST_SEMAPHORE_GET_FD_INFO_KHR, None, self.semaphore, HANDLE_TYPE_OPAQUE_FD_BIT)
        fd = ctypes.c_int(-1)
        _check(self._get_fd(self.device, ctypes.byref(info), ctypes.byref(fd)), "vkGetSemaphoreFdKHR")
        return fd.value

    def signal(self, value: int) -> None:
        """Signal from the host (vkSignalSemaphore)."""
        info = SemaphoreSignalInfo(ST_SEMAPHORE_SIGNAL_INFO, None, self.semaphore, value)
        _check(self._signal(self.device, ctypes.byref(info)), "vkSignalSemaphore")

    @property
    def value(self) -> int:
        out = c_u64()
        _check(self._value(self.device, self.semaphore, ctypes.byref(out)), "vkGetSemaphoreCounterValue")
        return out.value

    def close(self) -> None:
        if self.device:
            self._destroy_sem(self.device, self.semaphore, None)
            self._destroy_device(self.device, None)
            self._destroy_instance(self.instance, None)
            self.device = None
