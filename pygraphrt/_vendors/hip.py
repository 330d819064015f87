"""HIP's tables and call forms (bindings hip6 and hip7: HIP 6.2 and 7.1 headers from triton wheels).

Where HIP names match CUDA's but for the prefix, the tables are derived from
:mod:`.cuda` and the differences are spelt out here: node types 12-14 are
HIP's own (no conditional nodes); exec update has no result-info struct; no
edge-data forms of the dependency APIs (``hipStreamBeginCaptureToGraph``
accepts only NULL edge data); ``hipGraphEdgeData`` is laid out
``from_port, reserved[5], to_port, type`` -- cffi reaches its fields by name, so
the layout difference is handled by the binding; error codes 911/912 mean other
things than on CUDA, which does not matter here because classes are chosen by
name; HIP's error names for handles and memory differ (``hipErrorInvalidHandle``,
``hipErrorOutOfMemory``).  No AMD GPU was available: this module is checked
against the generated bindings and a fake libamdhip64 compiled against each
pinned HIP header set.

HIP 6 and 7 (``python -m bindgen diff hip6 hip7``; the runtime's major picks the
binding): the same entry points for everything pygraphrt calls (both name
``hipGetDeviceProperties`` ``...R0600``, both have ``hipStreamGetCaptureInfo_v2``,
``hipGraphAddNode``, ``hipStreamBeginCaptureToGraph`` and no edge-data forms), and
the same values for every enum member both have (but the ``...Count`` / ``hipLimitRange``
sentinels).  What HIP 6.2 lacks is found by
symbol and member presence, per loaded library -- ``hipGraphNodeSetParams`` /
``hipGraphExecNodeSetParams`` (generic set), ``hipGraphExecGetFlags``, the
``hipLaunchAttributeMemSyncDomain`` attribute, the batch-mem-op node type, error
codes 911/912 -- except launching with attributes, which needs
``hipDrvLaunchKernelEx`` and its ``HIP_LAUNCH_CONFIG`` (in the 7.1 headers, not in 6.2's)
and is refused up front (``HIP_BINDINGS``).  ``hipLaunchAttributeValue`` is 32 bytes in
6.2 and 64 in 7.1: each binding has its own layout, which is why the major picks the binding.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import errors
from ..enums import CaptureStatus, NodeType, UpdateResult

if TYPE_CHECKING:  # imported where used: defining it imports dataclasses (see pygraphrt._records)
    from ..enums import EdgeData
from .base import KERNEL_ATTRIBUTES, LaunchEntry, Vendor
from .cuda import CudaVendor


# The per-binding facts that symbol presence alone cannot carry (python -m bindgen diff hip6 hip7):
# the headers each binding is generated from, and the API (with its HIP_LAUNCH_CONFIG) that
# launches a kernel with launch attributes -- none in HIP 6.
HIP_BINDINGS: dict[str, dict[str, str | None]] = {
    "hip6": {"headers": "HIP 6.2.41134 (triton 3.5.1)", "launch_with_attributes": None},
    "hip7": {"headers": "HIP 7.1.25424 (triton 3.8.0)", "launch_with_attributes": "hipDrvLaunchKernelEx"},
}


def _hip(table: dict[Any, str]) -> dict[Any, str]:
    """CUDA's table with each vendor name (the values) renamed to HIP's."""
    return {k: "hip" + v[len("cuda"):] for k, v in table.items()}


def _hip_keys(table: dict[str, str]) -> dict[str, str]:
    """CUDA's error table with each vendor name (the keys) renamed to HIP's."""
    return {"hip" + k[len("cuda"):]: v for k, v in table.items()}


class HipVendor(Vendor):
    name = "hip"
    prefix = "hip"
    error_enum = "hipError_t"
    error_classes = {
        **_hip_keys({k: v for k, v in CudaVendor.error_classes.items()
                if k not in ("cudaErrorMemoryAllocation", "cudaErrorInvalidResourceHandle",
                             "cudaErrorDeviceNotLicensed", "cudaErrorCallRequiresNewerDriver",
                             "cudaErrorInitializationError", "cudaErrorNotPermitted",
                             "cudaErrorLossyQuery")}),
        "hipErrorOutOfMemory": "OutOfMemory",
        "hipErrorMemoryAllocation": "OutOfMemory",
        "hipErrorInvalidHandle": "InvalidResourceHandle",
        "hipErrorInvalidResourceHandle": "InvalidResourceHandle",
        "hipErrorNotInitialized": "NotInitialized",
        "hipErrorInitializationError": "NotInitialized",
    }
    sticky_errors = frozenset({
        "hipErrorIllegalAddress", "hipErrorLaunchFailure", "hipErrorAssert",
        "hipErrorECCNotCorrectable", "hipErrorLaunchTimeOut", "hipErrorContextIsDestroyed",
    })
    node_types = {
        **_hip({k: v for k, v in CudaVendor.node_types.items()
                if k not in (NodeType.CONDITIONAL, NodeType.MEMCPY_BATCH)}),
        NodeType.MEMCPY_FROM_SYMBOL: "hipGraphNodeTypeMemcpyFromSymbol",
        NodeType.MEMCPY_TO_SYMBOL: "hipGraphNodeTypeMemcpyToSymbol",
        NodeType.BATCH_MEM_OP: "hipGraphNodeTypeBatchMemOp",
    }
    capture_modes = _hip(CudaVendor.capture_modes)
    capture_statuses = _hip(CudaVendor.capture_statuses)
    instantiate_flags = _hip(CudaVendor.instantiate_flags)
    update_results = _hip({k: v for k, v in CudaVendor.update_results.items()
                           if k is not UpdateResult.ATTRIBUTES_CHANGED})
    graph_mem_attrs = _hip(CudaVendor.graph_mem_attrs)
    debug_dot_flags = _hip(CudaVendor.debug_dot_flags)
    edge_data_type = "hipGraphEdgeData"
    edge_symbols: dict[str, dict[str, str]] = {}  # HIP 7.1: no edge-data forms
    host_fn_type = "hipHostFn_t"
    memset_params_type = "hipMemsetParams"
    host_params_type = "hipHostNodeParams"
    kernel_params_type = "hipKernelNodeParams"
    memcpy3d_params_type = "hipMemcpy3DParms"
    mem_alloc_params_type = "hipMemAllocNodeParams"
    mem_pool_props_type = "hipMemPoolProps"
    device_prop_type = "hipDeviceProp_tR0600"
    node_params_type = "hipGraphNodeParams"
    pointer_attributes_type = "hipPointerAttribute_t"
    mem_access_desc_type = "hipMemAccessDesc"
    mem_access_flags_type = "hipMemAccessFlags"
    p2p_attributes = {"performance_rank": "hipDevP2PAttrPerformanceRank",
                      "access_supported": "hipDevP2PAttrAccessSupported",
                      "native_atomic_supported": "hipDevP2PAttrNativeAtomicSupported",
                      "array_access_supported": "hipDevP2PAttrHipArrayAccessSupported"}
    ext_sem_types = _hip(CudaVendor.ext_sem_types)
    ext_sem_desc_type = "hipExternalSemaphoreHandleDesc"
    ext_sem_signal_params_type = "hipExternalSemaphoreSignalParams"
    ext_sem_wait_params_type = "hipExternalSemaphoreWaitParams"
    ext_sem_signal_node_type = "hipExternalSemaphoreSignalNodeParams"
    ext_sem_wait_node_type = "hipExternalSemaphoreWaitNodeParams"
    generic_add_forms = (("hipGraphAddNode", False),)  # no edge-data form
    library_unload_api = "ModuleUnload"
    launch_attribute_ids = {
        "cooperative": "hipLaunchAttributeCooperative",
        "priority": "hipLaunchAttributePriority",
        "mem_sync_domain": "hipLaunchAttributeMemSyncDomain",
        "access_policy_window": "hipLaunchAttributeAccessPolicyWindow",
    }

    def _version_text(self) -> str:
        v = self.runtime_version
        return f"{v[0]}.{v[1]}" if v else "of unknown version"

    def capture_info(self, stream: Any) -> tuple[CaptureStatus, int, Any, list[tuple[Any, EdgeData]]]:
        ffi = self.ffi
        status = ffi.new("hipStreamCaptureStatus *")
        ident = ffi.new("unsigned long long *")
        graph = ffi.new("hipGraph_t *")
        deps = ffi.new("const hipGraphNode_t **")
        n = ffi.new("size_t *")
        self.call("StreamGetCaptureInfo_v2", stream, status, ident, graph, deps, n)
        st = self.capture_status_of[status[0]]
        if st is not CaptureStatus.ACTIVE:
            return st, ident[0], None, []
        from ..enums import EdgeData

        return st, ident[0], graph[0], [(deps[0][i], EdgeData()) for i in range(n[0])]

    def update_capture_dependencies(self, stream: Any, deps: list[Any],
                                    edges: list[EdgeData] | None, set_: bool) -> None:
        self.require_default_edges(edges, "hipStreamUpdateCaptureDependencies")
        flag = self.const("StreamSetCaptureDependencies" if set_ else "StreamAddCaptureDependencies")
        arr = self.ffi.new("hipGraphNode_t[]", deps) if deps else self.ffi.NULL
        self.call("StreamUpdateCaptureDependencies", stream, arr, len(deps), flag)

    def begin_capture_to_graph(self, stream: Any, graph: Any, deps: list[Any],
                               edges: list[EdgeData] | None, mode: int) -> None:
        self.require_default_edges(edges, "hipStreamBeginCaptureToGraph")
        arr = self.ffi.new("hipGraphNode_t[]", deps) if deps else self.ffi.NULL
        self.call("StreamBeginCaptureToGraph", stream, graph, arr, self.ffi.NULL, len(deps), mode)

    def exec_update(self, exec_: Any, graph: Any) -> tuple[int, UpdateResult, Any]:
        node = self.ffi.new("hipGraphNode_t *")
        result = self.ffi.new("hipGraphExecUpdateResult *")
        rc = self.fn("GraphExecUpdate")(exec_, graph, node, result)
        return rc, self.update_result_of.get(int(result[0]), UpdateResult.ERROR), node[0]

    def device_name_and_arch(self, device: int) -> tuple[str, str, int]:
        prop = self.ffi.new(f"{self.device_prop_type} *")
        self.call("GetDeviceProperties", prop, device)
        name = self.ffi.string(prop.name).decode(errors="replace")
        return name, self._arch_of(prop), int(prop.totalGlobalMem)

    def _arch_of(self, prop: Any) -> str:
        return str(self.ffi.string(prop.gcnArchName).decode(errors="replace"))

    # A code object loads into the current device's context (hipModuleLoadData); its functions
    # run there only, so a library launched on another device is loaded there too.
    library_per_device = True

    def code_runs_on(self, code_arch: str, image_kind: str, device_arch: str) -> str | None:
        """An AMD code object runs only on its own processor (``gfx942``; the target features
        after ``:``, such as ``xnack-``, are left to the loader)."""
        code, dev = code_arch.split(":", 1)[0], device_arch.split(":", 1)[0]
        if not code or not dev or code == dev:
            return None
        return f"a code object compiled for {code_arch} cannot run on a {device_arch} device (AMD code objects " \
               "run only on the processor they were compiled for)"

    # -- kernels: code objects load as modules; kernels are hipFunction_t ---------------
    def load_library(self, image: Any, path: bytes | None) -> Any:
        out = self.ffi.new("hipModule_t *")
        if path is not None:
            self.call("ModuleLoad", out, path)
        else:
            self.call("ModuleLoadData", out, image)
        return out[0]

    def library_kernel(self, library: Any, name: bytes) -> tuple[Any, str]:
        out = self.ffi.new("hipFunction_t *")
        self.call("ModuleGetFunction", out, library, name)
        return self.ffi.cast("void *", out[0]), "function"

    def _hfunc(self, func: Any) -> Any:
        return self.ffi.cast("hipFunction_t", func)

    def kernel_attribute(self, func: Any, form: str, name: str) -> int:
        out = self.ffi.new("int *")
        member = "HIP_FUNC_ATTRIBUTE_" + KERNEL_ATTRIBUTES[name][1]
        self.call("FuncGetAttribute", out, int(getattr(self.lib, member)), self._hfunc(func))
        return int(out[0])

    def set_max_dynamic_shared_memory(self, func: Any, form: str, nbytes: int) -> None:
        # hipFuncSetAttribute takes a host-side kernel stub, not a module function, and AMD
        # needs no opt-in: a module function may use what the runtime reports for it.
        limit = self.kernel_attribute(func, form, "max_dynamic_shared_size_bytes")
        if nbytes > limit:
            raise errors.InvalidValue("hipFuncGetAttribute", vendor=self.name,
                                      detail=f"{nbytes} bytes of dynamic shared memory asked for; "
                                             f"this kernel can use at most {limit} on this device")

    def occupancy(self, func: Any, form: str, block_size: int, dynamic_smem: int) -> int:
        out = self.ffi.new("int *")
        self.call("ModuleOccupancyMaxActiveBlocksPerMultiprocessor", out, self._hfunc(func),
                  block_size, dynamic_smem)
        return int(out[0])

    def allocation_range(self, address: int) -> tuple[int, int] | None:
        ffi = self.ffi
        base, size = ffi.new("hipDeviceptr_t *"), ffi.new("size_t *")
        if self.lib.hipMemGetAddressRange(base, size, ffi.cast("hipDeviceptr_t", address)):
            return None  # not device memory
        return int(ffi.cast("uintptr_t", base[0])), int(size[0])

    def launch_entry(self, func: Any, form: str) -> LaunchEntry:
        """``hipModuleLaunchKernel`` (the shape of ``cuLaunchKernel``) on the module function."""
        from .._fast import function_address

        return LaunchEntry(self.lib.hipModuleLaunchKernel,
                           function_address(self.ffi, self.lib, "hipModuleLaunchKernel"), func,
                           lambda rc: self.error(rc, "hipModuleLaunchKernel"))

    def kernel_launcher(self, func: Any, form: str) -> Any:
        """The plain-launch hot path for one kernel: ``hipModuleLaunchKernel`` with one check."""
        c_launch, null, check = self.lib.hipModuleLaunchKernel, self.ffi.NULL, self.error

        def fn(grid: tuple[int, int, int], block: tuple[int, int, int], smem: int,
               stream: Any, argv: Any) -> None:
            rc = c_launch(func, grid[0], grid[1], grid[2], block[0], block[1], block[2], smem, stream,
                          argv, null)
            if rc:
                raise check(rc, "hipModuleLaunchKernel")

        return fn

    def launch_kernel(self, func: Any, form: str, grid: tuple[int, int, int],
                      block: tuple[int, int, int], smem: int, stream: Any, argv: Any,
                      attrs: dict[str, Any]) -> None:
        ffi = self.ffi
        if not attrs:
            self.call("ModuleLaunchKernel", self._hfunc(func), *grid, *block, smem, stream, argv,
                      ffi.NULL)
            return
        api = HIP_BINDINGS.get(self.binding, {}).get("launch_with_attributes")
        if api is None or not self.has(api):  # HIP 6: no launch with attributes
            raise errors.NotSupported("hipDrvLaunchKernelEx", vendor=self.name, detail=(
                f"launch attributes {sorted(attrs)} need hipDrvLaunchKernelEx (HIP 7); this runtime "
                f"is HIP {self._version_text()} (binding {self.binding}); launch without attributes, or "
                f"set them on a kernel node"))
        cfg = ffi.new("HIP_LAUNCH_CONFIG *")
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = block
        cfg.sharedMemBytes, cfg.hStream = smem, stream
        arr = ffi.new("hipLaunchAttribute[]", len(attrs))
        for i, (name, value) in enumerate(attrs.items()):
            self.fill_launch_attribute(arr[i], name, value, "hipDrvLaunchKernelEx")
        cfg.attrs, cfg.numAttrs = arr, len(attrs)
        self.call("DrvLaunchKernelEx", cfg, self._hfunc(func), argv, ffi.NULL)
