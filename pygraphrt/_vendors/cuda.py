"""CUDA's tables and call forms (bindings cuda12 and cuda13).

Facts checked against the bound headers (see the manifests): CUDA 13 folded
edge data into ``cudaGraphAddDependencies`` & co., CUDA 12.3-12.9 have them as
``_v2`` (``cudaStreamGetCaptureInfo_v3``); ``cudaGraphExecUpdate`` takes a
``cudaGraphExecUpdateResultInfo``.
"""

from __future__ import annotations

import importlib
import os
import re
from typing import TYPE_CHECKING, Any

from .. import _fast, errors
from ..enums import (CaptureMode, CaptureStatus, DebugDotFlags, ExternalSemaphoreType, GraphMemAttr,
                     InstantiateFlags, NodeType, UpdateResult)

if TYPE_CHECKING:  # imported where used: defining it imports dataclasses (see pygraphrt._records)
    from ..enums import EdgeData
from .base import KERNEL_ATTRIBUTES, KernelParams, LaunchEntry, Vendor

# Driver results (CUresult names) -> pygraphrt.errors class names, for the few
# driver calls made (kernel nodes the runtime API cannot describe).
DRIVER_ERROR_CLASSES = {
    "CUDA_ERROR_INVALID_VALUE": "InvalidValue",
    "CUDA_ERROR_INVALID_HANDLE": "InvalidResourceHandle",
    "CUDA_ERROR_NOT_SUPPORTED": "NotSupported",
    "CUDA_ERROR_NOT_PERMITTED": "NotPermitted",
    "CUDA_ERROR_OUT_OF_MEMORY": "OutOfMemory",
    "CUDA_ERROR_NOT_INITIALIZED": "NotInitialized",
    "CUDA_ERROR_NO_DEVICE": "NoDevice",
}
# The driver-API ABI version these bindings declare (CUDA_KERNEL_NODE_PARAMS_v2: 12.0).
DRIVER_ABI_VERSION = 12000
# Driver entry points newer than DRIVER_ABI_VERSION, asked for at the version that added them.
DRIVER_API_VERSIONS = {"cuFuncGetParamInfo": 12040}

# cuLaunchKernel, typed in the runtime binding (runtime handles pass as they are).
_LAUNCH_CDECL = ("int (*)(void *, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, "
                 "unsigned int, unsigned int, void *, void **, void **)")

_EDGE_ROLES_13 = {
    "add_dependencies": "cudaGraphAddDependencies",
    "remove_dependencies": "cudaGraphRemoveDependencies",
    "get_edges": "cudaGraphGetEdges",
    "node_dependencies": "cudaGraphNodeGetDependencies",
    "node_dependents": "cudaGraphNodeGetDependentNodes",
    "capture_info": "cudaStreamGetCaptureInfo",
    "update_capture": "cudaStreamUpdateCaptureDependencies",
    "capture_to_graph": "cudaStreamBeginCaptureToGraph",
}
_EDGE_ROLES_12 = {
    "add_dependencies": "cudaGraphAddDependencies_v2",
    "remove_dependencies": "cudaGraphRemoveDependencies_v2",
    "get_edges": "cudaGraphGetEdges_v2",
    "node_dependencies": "cudaGraphNodeGetDependencies_v2",
    "node_dependents": "cudaGraphNodeGetDependentNodes_v2",
    "capture_info": "cudaStreamGetCaptureInfo_v3",
    "update_capture": "cudaStreamUpdateCaptureDependencies_v2",
    "capture_to_graph": "cudaStreamBeginCaptureToGraph",
}


class CudaVendor(Vendor):
    name = "cuda"
    gate_by_driver = True  # a 13.x API a 13.0 driver lacks is refused at load (Vendor.unavailable)
    # The runtime's cudaGraphLaunch, cudaGraphAddEmptyNode and cudaStreamIsCapturing do their own
    # work (lazy context set-up, checks: some 0.1 us a call on an H100) before calling these,
    # which take the same arguments (runtime and driver handles are one).  The memset and kernel
    # adds take the driver's structs (the compiled extension lays them out from the driver
    # binding: bindgen.fast.DIRECT_DRIVER, which a test holds to this table); the runtime's
    # cudaGraphAddKernelNode also finds a library kernel's function anew per call (about
    # 0.35 us of 0.9 on an H100), the driver's takes the kernel and the current context.
    # cudaGetDevice (an add's device=) costs some 60 ns on an H200 host, the driver's
    # cuCtxGetDevice 17: the runtime's current device is the current context's (its driver
    # interoperability section); with none current the driver refuses and the runtime answers.
    direct_calls = {"launch": "cuGraphLaunch", "add_empty": "cuGraphAddEmptyNode",
                    "capture_status": "cuStreamIsCapturing", "add_memset": "cuGraphAddMemsetNode",
                    "add_kernel": "cuGraphAddKernelNode", "current_context": "cuCtxGetCurrent",
                    "current_device": "cuCtxGetDevice"}
    # Of those, the runtime calls whose driver function takes the very same arguments (the same
    # handles, the same capture-status values) -> its slot: ABI mode calls these through the
    # runtime function's own type (direct_fn); the memset and kernel adds need the driver's
    # structs, which only the compiled extension lays out.
    direct_same_args = {"GraphLaunch": "launch", "GraphAddEmptyNode": "add_empty",
                        "StreamIsCapturing": "capture_status", "GetDevice": "current_device"}
    prefix = "cuda"
    error_enum = "cudaError_t"
    error_classes = {
        "cudaErrorInvalidValue": "InvalidValue",
        "cudaErrorInvalidDevice": "InvalidDevice",
        "cudaErrorDeviceNotLicensed": "InvalidDevice",
        "cudaErrorMemoryAllocation": "OutOfMemory",
        "cudaErrorNotSupported": "NotSupported",
        "cudaErrorPeerAccessUnsupported": "NotSupported",
        "cudaErrorNotPermitted": "NotPermitted",
        "cudaErrorIllegalState": "IllegalState",
        "cudaErrorInvalidResourceHandle": "InvalidResourceHandle",
        "cudaErrorContextIsDestroyed": "InvalidResourceHandle",
        "cudaErrorNotReady": "NotReady",
        "cudaErrorNoDevice": "NoDevice",
        "cudaErrorInsufficientDriver": "InsufficientDriver",
        "cudaErrorCallRequiresNewerDriver": "InsufficientDriver",
        "cudaErrorInitializationError": "NotInitialized",
        "cudaErrorLossyQuery": "LossyQuery",
        "cudaErrorGraphExecUpdateFailure": "GraphExecUpdateFailure",
        "cudaErrorStreamCaptureUnsupported": "StreamCaptureUnsupported",
        "cudaErrorStreamCaptureInvalidated": "StreamCaptureInvalidated",
        "cudaErrorStreamCaptureMerge": "StreamCaptureMerge",
        "cudaErrorStreamCaptureUnmatched": "StreamCaptureUnmatched",
        "cudaErrorStreamCaptureUnjoined": "StreamCaptureUnjoined",
        "cudaErrorStreamCaptureIsolation": "StreamCaptureIsolation",
        "cudaErrorStreamCaptureImplicit": "StreamCaptureImplicit",
        "cudaErrorStreamCaptureWrongThread": "StreamCaptureWrongThread",
        "cudaErrorCapturedEvent": "CapturedEvent",
        "cudaErrorLaunchFailure": "LaunchFailure",
    }
    # Errors after which the context is unusable (CUDA runtime docs: "the
    # process must be terminated and relaunched").
    sticky_errors = frozenset({
        "cudaErrorIllegalAddress", "cudaErrorLaunchFailure", "cudaErrorIllegalInstruction",
        "cudaErrorMisalignedAddress", "cudaErrorInvalidAddressSpace", "cudaErrorInvalidPc",
        "cudaErrorHardwareStackError", "cudaErrorAssert", "cudaErrorECCUncorrectable",
        "cudaErrorLaunchTimeout", "cudaErrorTensorMemoryLeak", "cudaErrorContextIsDestroyed",
    })
    node_types = {
        NodeType.KERNEL: "cudaGraphNodeTypeKernel", NodeType.MEMCPY: "cudaGraphNodeTypeMemcpy",
        NodeType.MEMSET: "cudaGraphNodeTypeMemset", NodeType.HOST: "cudaGraphNodeTypeHost",
        NodeType.GRAPH: "cudaGraphNodeTypeGraph", NodeType.EMPTY: "cudaGraphNodeTypeEmpty",
        NodeType.WAIT_EVENT: "cudaGraphNodeTypeWaitEvent",
        NodeType.EVENT_RECORD: "cudaGraphNodeTypeEventRecord",
        NodeType.EXT_SEMAS_SIGNAL: "cudaGraphNodeTypeExtSemaphoreSignal",
        NodeType.EXT_SEMAS_WAIT: "cudaGraphNodeTypeExtSemaphoreWait",
        NodeType.MEM_ALLOC: "cudaGraphNodeTypeMemAlloc",
        NodeType.MEM_FREE: "cudaGraphNodeTypeMemFree",
        NodeType.CONDITIONAL: "cudaGraphNodeTypeConditional",
        NodeType.MEMCPY_BATCH: "cudaGraphNodeTypeMemcpyBatch",  # 13.5 headers (cuda13 binding only)
    }
    # The driver's names of the same node types (see node_type_fallback).
    driver_node_types = {
        NodeType.KERNEL: "CU_GRAPH_NODE_TYPE_KERNEL", NodeType.MEMCPY: "CU_GRAPH_NODE_TYPE_MEMCPY",
        NodeType.MEMSET: "CU_GRAPH_NODE_TYPE_MEMSET", NodeType.HOST: "CU_GRAPH_NODE_TYPE_HOST",
        NodeType.GRAPH: "CU_GRAPH_NODE_TYPE_GRAPH", NodeType.EMPTY: "CU_GRAPH_NODE_TYPE_EMPTY",
        NodeType.WAIT_EVENT: "CU_GRAPH_NODE_TYPE_WAIT_EVENT",
        NodeType.EVENT_RECORD: "CU_GRAPH_NODE_TYPE_EVENT_RECORD",
        NodeType.EXT_SEMAS_SIGNAL: "CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL",
        NodeType.EXT_SEMAS_WAIT: "CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT",
        NodeType.MEM_ALLOC: "CU_GRAPH_NODE_TYPE_MEM_ALLOC", NodeType.MEM_FREE: "CU_GRAPH_NODE_TYPE_MEM_FREE",
        NodeType.CONDITIONAL: "CU_GRAPH_NODE_TYPE_CONDITIONAL",
        NodeType.MEMCPY_BATCH: "CU_GRAPH_NODE_TYPE_MEMCPY_BATCH",
    }
    ext_sem_types = {
        ExternalSemaphoreType.OPAQUE_FD: "cudaExternalSemaphoreHandleTypeOpaqueFd",
        ExternalSemaphoreType.OPAQUE_WIN32: "cudaExternalSemaphoreHandleTypeOpaqueWin32",
        ExternalSemaphoreType.OPAQUE_WIN32_KMT: "cudaExternalSemaphoreHandleTypeOpaqueWin32Kmt",
        ExternalSemaphoreType.D3D12_FENCE: "cudaExternalSemaphoreHandleTypeD3D12Fence",
        ExternalSemaphoreType.D3D11_FENCE: "cudaExternalSemaphoreHandleTypeD3D11Fence",
        ExternalSemaphoreType.NVSCISYNC: "cudaExternalSemaphoreHandleTypeNvSciSync",
        ExternalSemaphoreType.KEYED_MUTEX: "cudaExternalSemaphoreHandleTypeKeyedMutex",
        ExternalSemaphoreType.KEYED_MUTEX_KMT: "cudaExternalSemaphoreHandleTypeKeyedMutexKmt",
        ExternalSemaphoreType.TIMELINE_FD: "cudaExternalSemaphoreHandleTypeTimelineSemaphoreFd",
        ExternalSemaphoreType.TIMELINE_WIN32: "cudaExternalSemaphoreHandleTypeTimelineSemaphoreWin32",
    }
    ext_sem_desc_type = "struct cudaExternalSemaphoreHandleDesc"
    ext_sem_signal_params_type = "struct cudaExternalSemaphoreSignalParams"
    ext_sem_wait_params_type = "struct cudaExternalSemaphoreWaitParams"
    ext_sem_signal_node_type = "struct cudaExternalSemaphoreSignalNodeParams"
    ext_sem_wait_node_type = "struct cudaExternalSemaphoreWaitNodeParams"
    # IF and WHILE came with CUDA 12.4; IF with an else body and SWITCH with 12.8.
    conditional_kinds = {"if": ("cudaGraphCondTypeIf", 12040), "if_else": ("cudaGraphCondTypeIf", 12080),
                         "while": ("cudaGraphCondTypeWhile", 12040),
                         "switch": ("cudaGraphCondTypeSwitch", 12080)}
    conditional_assign_default = "cudaGraphCondAssignDefault"
    capture_modes = {CaptureMode.GLOBAL: "cudaStreamCaptureModeGlobal",
                     CaptureMode.THREAD_LOCAL: "cudaStreamCaptureModeThreadLocal",
                     CaptureMode.RELAXED: "cudaStreamCaptureModeRelaxed"}
    capture_statuses = {CaptureStatus.NONE: "cudaStreamCaptureStatusNone",
                        CaptureStatus.ACTIVE: "cudaStreamCaptureStatusActive",
                        CaptureStatus.INVALIDATED: "cudaStreamCaptureStatusInvalidated"}
    instantiate_flags = {
        InstantiateFlags.AUTO_FREE_ON_LAUNCH: "cudaGraphInstantiateFlagAutoFreeOnLaunch",
        InstantiateFlags.UPLOAD: "cudaGraphInstantiateFlagUpload",
        InstantiateFlags.DEVICE_LAUNCH: "cudaGraphInstantiateFlagDeviceLaunch",
        InstantiateFlags.USE_NODE_PRIORITY: "cudaGraphInstantiateFlagUseNodePriority",
    }
    update_results = {
        UpdateResult.SUCCESS: "cudaGraphExecUpdateSuccess",
        UpdateResult.ERROR: "cudaGraphExecUpdateError",
        UpdateResult.TOPOLOGY_CHANGED: "cudaGraphExecUpdateErrorTopologyChanged",
        UpdateResult.NODE_TYPE_CHANGED: "cudaGraphExecUpdateErrorNodeTypeChanged",
        UpdateResult.FUNCTION_CHANGED: "cudaGraphExecUpdateErrorFunctionChanged",
        UpdateResult.PARAMETERS_CHANGED: "cudaGraphExecUpdateErrorParametersChanged",
        UpdateResult.NOT_SUPPORTED: "cudaGraphExecUpdateErrorNotSupported",
        UpdateResult.UNSUPPORTED_FUNCTION_CHANGE: "cudaGraphExecUpdateErrorUnsupportedFunctionChange",
        UpdateResult.ATTRIBUTES_CHANGED: "cudaGraphExecUpdateErrorAttributesChanged",
    }
    graph_mem_attrs = {GraphMemAttr.USED_MEM_CURRENT: "cudaGraphMemAttrUsedMemCurrent",
                       GraphMemAttr.USED_MEM_HIGH: "cudaGraphMemAttrUsedMemHigh",
                       GraphMemAttr.RESERVED_MEM_CURRENT: "cudaGraphMemAttrReservedMemCurrent",
                       GraphMemAttr.RESERVED_MEM_HIGH: "cudaGraphMemAttrReservedMemHigh"}
    debug_dot_flags = {
        DebugDotFlags.VERBOSE: "cudaGraphDebugDotFlagsVerbose",
        DebugDotFlags.KERNEL_NODE_PARAMS: "cudaGraphDebugDotFlagsKernelNodeParams",
        DebugDotFlags.MEMCPY_NODE_PARAMS: "cudaGraphDebugDotFlagsMemcpyNodeParams",
        DebugDotFlags.MEMSET_NODE_PARAMS: "cudaGraphDebugDotFlagsMemsetNodeParams",
        DebugDotFlags.HOST_NODE_PARAMS: "cudaGraphDebugDotFlagsHostNodeParams",
        DebugDotFlags.EVENT_NODE_PARAMS: "cudaGraphDebugDotFlagsEventNodeParams",
        DebugDotFlags.EXT_SEMAS_SIGNAL_NODE_PARAMS: "cudaGraphDebugDotFlagsExtSemasSignalNodeParams",
        DebugDotFlags.EXT_SEMAS_WAIT_NODE_PARAMS: "cudaGraphDebugDotFlagsExtSemasWaitNodeParams",
        DebugDotFlags.KERNEL_NODE_ATTRIBUTES: "cudaGraphDebugDotFlagsKernelNodeAttributes",
        DebugDotFlags.HANDLES: "cudaGraphDebugDotFlagsHandles",
    }
    edge_data_type = "cudaGraphEdgeData"
    edge_symbols = {"cuda13": _EDGE_ROLES_13, "cuda12": _EDGE_ROLES_12}
    host_fn_type = "cudaHostFn_t"
    memset_params_type = "struct cudaMemsetParams"
    host_params_type = "struct cudaHostNodeParams"
    kernel_params_type = "struct cudaKernelNodeParams"
    memcpy3d_params_type = "struct cudaMemcpy3DParms"
    mem_alloc_params_type = "struct cudaMemAllocNodeParams"
    mem_pool_props_type = "struct cudaMemPoolProps"
    device_prop_type = "struct cudaDeviceProp"
    node_params_type = "struct cudaGraphNodeParams"
    pointer_attributes_type = "struct cudaPointerAttributes"
    mem_access_desc_type = "struct cudaMemAccessDesc"
    mem_access_flags_type = "enum cudaMemAccessFlags"
    p2p_attributes = {"performance_rank": "cudaDevP2PAttrPerformanceRank",
                      "access_supported": "cudaDevP2PAttrAccessSupported",
                      "native_atomic_supported": "cudaDevP2PAttrNativeAtomicSupported",
                      "array_access_supported": "cudaDevP2PAttrCudaArrayAccessSupported"}
    # (symbol, takes edge data), best first: CUDA 13 folded edge data into
    # cudaGraphAddNode; CUDA 12.3-12.9 have it as cudaGraphAddNode_v2.
    generic_add_forms = (("cudaGraphAddNode_v2", True), ("cudaGraphAddNode", None))
    library_unload_api = "LibraryUnload"
    # cudaGraphKernelNodeCopyAttributes copies into its FIRST argument on both runtimes
    # (measured on the GPU: 12.9 and 13.0).  The 13.0 header names them (hDst, hSrc); the
    # 12.9 header names them (hSrc, hDst), but its runtime behaves like 13.0 (like the
    # driver's cuGraphKernelNodeCopyAttributes(dst, src)).  HIP's header says (hSrc, hDst).
    copy_attributes_dst_first = frozenset({"cuda12", "cuda13"})
    launch_attribute_ids = {
        "cooperative": "cudaLaunchAttributeCooperative",
        "priority": "cudaLaunchAttributePriority",
        "cluster_dim": "cudaLaunchAttributeClusterDimension",
        "preferred_cluster_dim": "cudaLaunchAttributePreferredClusterDimension",
        "programmatic_stream_serialization": "cudaLaunchAttributeProgrammaticStreamSerialization",
        "programmatic_event": "cudaLaunchAttributeProgrammaticEvent",
        "mem_sync_domain": "cudaLaunchAttributeMemSyncDomain",
        "access_policy_window": "cudaLaunchAttributeAccessPolicyWindow",
        "preferred_shared_memory_carveout": "cudaLaunchAttributePreferredSharedMemoryCarveout",
    }

    def capture_info(self, stream: Any) -> tuple[CaptureStatus, int, Any, list[tuple[Any, EdgeData]]]:
        ffi = self.ffi
        status = ffi.new("enum cudaStreamCaptureStatus *")
        ident = ffi.new("unsigned long long *")
        graph = ffi.new("cudaGraph_t *")
        deps = ffi.new("const cudaGraphNode_t **")
        n = ffi.new("size_t *")
        sym = self.edge_forms.get("capture_info")
        if sym is not None:
            edata = ffi.new("const cudaGraphEdgeData **")
            rc = getattr(self.lib, sym)(stream, status, ident, graph, deps, edata, n)
        else:  # CUDA 12.0-12.2: no edge data
            sym = "cudaStreamGetCaptureInfo"
            edata = None
            rc = self.fn("StreamGetCaptureInfo")(stream, status, ident, graph, deps, n)
        if rc:
            raise self.error(rc, sym)
        st = self.capture_status_of[status[0]]
        if st is not CaptureStatus.ACTIVE:
            return st, ident[0], None, []
        count = n[0]
        # The arrays belong to the runtime and stay valid only until the next
        # call on this stream: copy them out now.
        handles = [deps[0][i] for i in range(count)]
        if edata is not None and edata[0] != ffi.NULL:
            edges = self._edges_from(edata[0], count)
        else:
            from ..enums import EdgeData

            edges = [EdgeData()] * count
        return st, ident[0], graph[0], list(zip(handles, edges))

    def update_capture_dependencies(self, stream: Any, deps: list[Any],
                                    edges: list[EdgeData] | None, set_: bool) -> None:
        flag = self.const("StreamSetCaptureDependencies" if set_ else "StreamAddCaptureDependencies")
        arr = self.ffi.new("cudaGraphNode_t[]", deps) if deps else self.ffi.NULL
        sym = self.edge_forms.get("update_capture")
        if sym is not None:
            e = self._edge_array(edges) if edges is not None else self.ffi.NULL
            rc = getattr(self.lib, sym)(stream, arr, e, len(deps), flag)
            if rc:
                raise self.error(rc, sym)
            return
        self.require_default_edges(edges, "cudaStreamUpdateCaptureDependencies")
        self.call("StreamUpdateCaptureDependencies", stream, arr, len(deps), flag)

    def begin_capture_to_graph(self, stream: Any, graph: Any, deps: list[Any],
                               edges: list[EdgeData] | None, mode: int) -> None:
        arr = self.ffi.new("cudaGraphNode_t[]", deps) if deps else self.ffi.NULL
        e = self._edge_array(edges) if edges and any(not x.is_default for x in edges) else self.ffi.NULL
        self.call("StreamBeginCaptureToGraph", stream, graph, arr, e, len(deps), mode)

    def exec_update(self, exec_: Any, graph: Any) -> tuple[int, UpdateResult, Any]:
        info = self.ffi.new("cudaGraphExecUpdateResultInfo *")
        rc = self.fn("GraphExecUpdate")(exec_, graph, info)
        result = self.update_result_of.get(int(info.result), UpdateResult.ERROR)
        return rc, result, info.errorNode

    # -- kernel nodes through the driver API ------------------------------------
    # cudaGraphKernelNodeGetParams describes only kernels launched through this
    # runtime's host stubs.  Kernels from libraries or NVRTC, or launched through
    # another runtime in the process (PyTorch's, say), need the driver's form;
    # its functions come from the runtime (cudaGetDriverEntryPointByVersion),
    # typed by the generated driver binding of the same major version.

    def kernel_params(self, node: Any) -> KernelParams:
        try:
            return super().kernel_params(node)
        except errors.GraphRTError as exc:
            if exc.name != "cudaErrorInvalidDeviceFunction":
                raise
        dffi = self._driver_ffi()
        raw = dffi.new("CUDA_KERNEL_NODE_PARAMS *")
        self._driver_call("cuGraphKernelNodeGetParams", self._to_driver("CUgraphNode", node), raw)
        return KernelParams(int(dffi.cast("uintptr_t", raw.func)),
                            (raw.gridDimX, raw.gridDimY, raw.gridDimZ),
                            (raw.blockDimX, raw.blockDimY, raw.blockDimZ), raw.sharedMemBytes,
                            "driver", raw, kernel_id=int(dffi.cast("uintptr_t", raw.kern)),
                            argv=int(dffi.cast("uintptr_t", raw.kernelParams)))

    def set_kernel_dims(self, node: Any, params: KernelParams, exec_: Any = None) -> None:
        if params.form == "runtime":
            super().set_kernel_dims(node, params, exec_)
            return
        raw = params.raw
        raw.gridDimX, raw.gridDimY, raw.gridDimZ = params.grid
        raw.blockDimX, raw.blockDimY, raw.blockDimZ = params.block
        raw.sharedMemBytes = params.shared_mem_bytes
        dnode = self._to_driver("CUgraphNode", node)
        if exec_ is None:
            self._driver_call("cuGraphKernelNodeSetParams", dnode, raw)
        else:
            self._driver_call("cuGraphExecKernelNodeSetParams",
                              self._to_driver("CUgraphExec", exec_), dnode, raw)

    def _driver_ffi(self) -> Any:
        major = self.binding.removeprefix("cuda")
        return importlib.import_module(f"pygraphrt._bindings.cudadrv{major}").ffi

    def _to_driver(self, ctype: str, handle: Any) -> Any:
        """The same handle typed for the driver binding (runtime and driver handles are one)."""
        return self._driver_ffi().cast(ctype, int(self.ffi.cast("uintptr_t", handle)))

    def node_type_fallback(self, node: Any) -> NodeType | None:
        """A node's type from the driver, for nodes the runtime cannot describe.

        Seen: the CUDA 12.9 runtime on a CUDA 13.0 driver answers cudaGraphNodeGetType
        for a conditional node with cudaErrorUnknown; the driver reports it.
        """
        dffi = self._driver_ffi()
        out = dffi.new("CUgraphNodeType *")
        self._driver_call("cuGraphNodeGetType", self._to_driver("CUgraphNode", node), out)
        names = dict(dffi.typeof("CUgraphNodeType").elements)
        name = names.get(out[0])
        for neutral, member in self.driver_node_types.items():
            if member == name:
                return neutral
        return None

    def _driver_call(self, api: str, *args: Any) -> None:
        cache: dict[str, Any] | None = getattr(self, "_driver_fns", None)
        if cache is None:  # (an attribute, not a __dict__ entry: see _runtime.Backend.memo)
            cache = {}
            self._driver_fns: dict[str, Any] = cache
        fn = cache.get(api)
        dffi = self._driver_ffi()
        if fn is None:
            pkg = importlib.import_module(f"pygraphrt._bindings.cudadrv{self.binding.removeprefix('cuda')}")
            proto = pkg.manifest()["functions"][api]
            cdecl = f"{proto['result']}(*)({', '.join(t for t, _ in proto['params'])})"
            fn = dffi.cast(cdecl, int(self.ffi.cast("uintptr_t", self._entry_point(api))))
            cache[api] = fn
        rc = fn(*args)
        observe = self.driver_call_observer
        if observe is not None:
            observe(api, int(rc))
        if rc:
            self._raise_driver(rc, api)

    #: Told of every call made through the driver (``observe(api, rc)``) while set: the
    #: conformance suite's call recorder, which sees the runtime's functions at the library and
    #: the driver's equivalents here (the graph's kernel-node calls of library kernels, linking).
    driver_call_observer: Any = None

    def device_name_and_arch(self, device: int) -> tuple[str, str, int]:
        prop = self.ffi.new(f"{self.device_prop_type} *")
        self.call("GetDeviceProperties", prop, device)
        name = self.ffi.string(prop.name).decode(errors="replace")
        return name, self._arch_of(prop), int(prop.totalGlobalMem)

    def _arch_of(self, prop: Any) -> str:
        return f"sm_{prop.major}{prop.minor}"

    def code_runs_on(self, code_arch: str, image_kind: str, device_arch: str) -> str | None:
        """CUDA's compatibility rules (CUDA C++ Programming Guide, "Binary Compatibility" and
        "PTX Compatibility"): a cubin for ``sm_XY`` runs on devices of compute capability X.Z with
        Z >= Y (the same major); an arch-specific one (``sm_90a``) only on X.Y itself; a
        family-specific one (``sm_100f``) on X.Z, Z >= Y.  PTX for ``compute_XY`` is compiled by
        the driver for any device of compute capability X.Y or newer."""
        code = re.fullmatch(r"(sm|compute)_(\d+)(\d)([af]?)", code_arch)
        dev = re.fullmatch(r"sm_(\d+)(\d)[af]?", device_arch)
        if code is None or dev is None:
            return None
        cmaj, cmin, dmaj, dmin = int(code[2]), int(code[3]), int(dev[1]), int(dev[2])
        suffix = code[4]
        if code[1] == "compute" or image_kind == "ptx":
            ok = (dmaj, dmin) >= (cmaj, cmin) and not suffix
            rule = "PTX is compiled by the driver only for the same or a newer compute capability"
        elif suffix == "a":
            ok = (dmaj, dmin) == (cmaj, cmin)
            rule = "arch-specific code runs only on that very compute capability"
        else:
            ok = dmaj == cmaj and dmin >= cmin
            rule = "a cubin runs only on devices of its major compute capability, same or newer minor"
        return None if ok else f"{image_kind} compiled for {code_arch} cannot run on a {device_arch} device ({rule})"

    # The node-params members that carry the node's context (cudaGraphNodeParams, CUDA 13).
    _CONTEXT_MEMBERS = {NodeType.KERNEL: "kernel", NodeType.MEMSET: "memset", NodeType.MEMCPY: "memcpy",
                        NodeType.EVENT_RECORD: "eventRecord"}

    def node_context_device(self, node: Any, node_type: NodeType) -> int | None:
        """The device of a node's context: ``cudaGraphNodeGetParams``' ``ctx`` (13.2) through
        ``cudaExecutionCtxGetDevice`` (13.1), where the runtime has both and reports a context."""
        member = self._CONTEXT_MEMBERS.get(node_type)
        if member is None or not (self.has(f"{self.prefix}GraphNodeGetParams")
                                  and self.has(f"{self.prefix}ExecutionCtxGetDevice")):
            return None
        p = self.ffi.new(f"{self.node_params_type} *")
        rc = self.fn("GraphNodeGetParams")(node, p)
        if rc:
            self.error(rc, f"{self.prefix}GraphNodeGetParams")  # (clears the last-error slot)
            return None
        ctx = getattr(p, member).ctx
        if ctx == self.ffi.NULL:
            return None
        out = self.ffi.new("int *")
        rc = self.fn("ExecutionCtxGetDevice")(out, ctx)
        if rc:
            self.error(rc, f"{self.prefix}ExecutionCtxGetDevice")
            return None
        return int(out[0])

    # -- kernels ------------------------------------------------------------------
    # Library kernels (cudaKernel_t) go through the runtime API, which takes them
    # as ``const void *`` everywhere (seen on the 12.9 and 13.0 runtimes).  Foreign
    # CUfunctions (CuPy, numba, driver-API users) are refused by the runtime
    # (cudaErrorInvalidResourceHandle), so they go through the driver API.

    def load_library(self, image: Any, path: bytes | None) -> Any:
        ffi = self.ffi
        out = ffi.new("cudaLibrary_t *")
        if path is not None:
            self.call("LibraryLoadFromFile", out, path, ffi.NULL, ffi.NULL, 0, ffi.NULL, ffi.NULL, 0)
        else:
            self.call("LibraryLoadData", out, image, ffi.NULL, ffi.NULL, 0, ffi.NULL, ffi.NULL, 0)
        return out[0]

    def link(self, inputs: list[tuple[str, Any, str]]) -> tuple[bytes, str]:
        """Link relocatable code with the driver's JIT linker (``cuLinkCreate`` ...).

        ``inputs``: (kind, bytes or a path as str, name) with kind ``cubin``, ``ptx``, ``fatbin``,
        ``object`` or ``library``.  Returns (the linked CUBIN, the linker's info log).
        """
        dffi = self._driver_ffi()
        self.call("Free", self.ffi.NULL)  # the device's primary context, current on this thread
        kinds = {"cubin": "CU_JIT_INPUT_CUBIN", "ptx": "CU_JIT_INPUT_PTX", "fatbin": "CU_JIT_INPUT_FATBINARY",
                 "object": "CU_JIT_INPUT_OBJECT", "library": "CU_JIT_INPUT_LIBRARY"}
        jit = dict(dffi.typeof("CUjit_option").relements)
        info, err = dffi.new("char[]", 1 << 16), dffi.new("char[]", 1 << 16)
        names = ["CU_JIT_INFO_LOG_BUFFER", "CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES",
                 "CU_JIT_ERROR_LOG_BUFFER", "CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES"]
        opts = dffi.new("CUjit_option[]", [jit[n] for n in names])
        vals = dffi.new("void *[]", [info, dffi.cast("void *", 1 << 16), err, dffi.cast("void *", 1 << 16)])
        state = dffi.new("CUlinkState *")
        self._driver_call("cuLinkCreate", len(names), opts, vals, state)
        try:
            for kind, data, name in inputs:
                t = dffi.typeof("CUjitInputType").relements[kinds[kind]]
                try:
                    if isinstance(data, str):
                        self._driver_call("cuLinkAddFile", state[0], t, os.fsencode(data), 0, dffi.NULL,
                                          dffi.NULL)
                    else:
                        buf = dffi.from_buffer(bytes(data))
                        self._driver_call("cuLinkAddData", state[0], t, buf, len(buf), name.encode(), 0,
                                          dffi.NULL, dffi.NULL)
                except errors.GraphRTError as e:
                    raise type(e)(e.api, e.code, e.name, e.vendor, e.message,
                                  detail=f"adding {name}: {dffi.string(err).decode(errors='replace')}") from None
            cubin, size = dffi.new("void **"), dffi.new("size_t *")
            try:
                self._driver_call("cuLinkComplete", state[0], cubin, size)
            except errors.GraphRTError as e:
                raise type(e)(e.api, e.code, e.name, e.vendor, e.message,
                              detail=dffi.string(err).decode(errors="replace")) from None
            return bytes(dffi.buffer(cubin[0], size[0])), dffi.string(info).decode(errors="replace")
        finally:
            self._driver_call("cuLinkDestroy", state[0])

    def library_kernel(self, library: Any, name: bytes) -> tuple[Any, str]:
        out = self.ffi.new("cudaKernel_t *")
        self.call("LibraryGetKernel", out, library, name)
        return self.ffi.cast("void *", out[0]), "kernel"

    def _dfunc(self, func: Any) -> Any:
        return self._to_driver("CUfunction", func)

    def _driver_enum(self, typedef: str, member: str) -> int:
        return int(self._driver_ffi().typeof(typedef).relements[member])

    def kernel_attribute(self, func: Any, form: str, name: str) -> int:
        field, suffix = KERNEL_ATTRIBUTES[name]
        if form == "kernel":
            attrs = self.ffi.new("struct cudaFuncAttributes *")
            self.call("FuncGetAttributes", attrs, func)
            return int(getattr(attrs, field))
        out = self._driver_ffi().new("int *")
        self._driver_call("cuFuncGetAttribute", out,
                          self._driver_enum("CUfunction_attribute", "CU_FUNC_ATTRIBUTE_" + suffix),
                          self._dfunc(func))
        return int(out[0])

    def set_max_dynamic_shared_memory(self, func: Any, form: str, nbytes: int) -> None:
        if form == "kernel":
            self.call("FuncSetAttribute", func, self.const("FuncAttributeMaxDynamicSharedMemorySize"),
                      nbytes)
            return
        self._driver_call("cuFuncSetAttribute", self._dfunc(func),
                          self._driver_enum("CUfunction_attribute",
                                            "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES"), nbytes)

    def kernel_param_info(self, func: Any, form: str) -> list[tuple[int, int]] | None:
        if form == "kernel" and not self.has("cudaFuncGetParamInfo"):
            return None
        ffi = self._driver_ffi() if form != "kernel" else self.ffi
        offset, size = ffi.new("size_t *"), ffi.new("size_t *")
        out: list[tuple[int, int]] = []
        while True:
            # Asking past the last parameter is how the count is found: InvalidValue.
            try:
                if form == "kernel":
                    self.call("FuncGetParamInfo", func, len(out), offset, size)
                else:
                    self._driver_call("cuFuncGetParamInfo", self._dfunc(func), len(out), offset, size)
            except errors.InvalidValue:
                return out
            out.append((int(offset[0]), int(size[0])))

    def occupancy(self, func: Any, form: str, block_size: int, dynamic_smem: int) -> int:
        if form == "kernel":
            out = self.ffi.new("int *")
            self.call("OccupancyMaxActiveBlocksPerMultiprocessor", out, func, block_size, dynamic_smem)
            return int(out[0])
        dout = self._driver_ffi().new("int *")
        self._driver_call("cuOccupancyMaxActiveBlocksPerMultiprocessor", dout, self._dfunc(func),
                          block_size, dynamic_smem)
        return int(dout[0])

    def direct_entry_points(self) -> dict[str, tuple[str, int]]:
        out = {}
        for slot, api in self.direct_calls.items():
            try:
                out[slot] = (api, int(self.ffi.cast("uintptr_t", self._entry_point(api))))
            except errors.GraphRTError:  # not provided (an older runtime, the simulator): runtime only
                continue
        return out

    def direct_fn(self, api: str) -> Any:
        try:
            return self._direct_fns[api]
        except KeyError:
            pass
        f = None
        slot = self.direct_same_args.get(api)
        # Compiled mode's functions are not cdata: its C calls the driver itself (set_direct).
        if slot is not None and not _fast.direct_off():
            runtime_fn = self.fn(api)
            if isinstance(runtime_fn, self.ffi.CData):
                try:
                    f = self.ffi.cast(self.ffi.typeof(runtime_fn), self._entry_point(self.direct_calls[slot]))
                except errors.GraphRTError:  # not provided (an older runtime, the simulator)
                    f = None
        self._direct_fns[api] = f
        return f

    def _entry_point(self, api: str) -> Any:
        """The driver's ``api`` (``void *``), at the version this binding declares it for."""
        ffi = self.ffi
        out = ffi.new("void **")
        status = ffi.new("enum cudaDriverEntryPointQueryResult *")
        # Functions newer than the driver binding's major (its SINCE table) are asked for
        # at the release that added them.
        dsyms = importlib.import_module(f"pygraphrt._bindings.cudadrv{self.binding.removeprefix('cuda')}.symbols")
        since = getattr(dsyms, "SINCE", {}).get(dsyms.API_SYMBOLS.get(api, api))
        version = DRIVER_API_VERSIONS.get(api, DRIVER_ABI_VERSION)
        if since is not None:
            version = max(version, since[0] * 1000 + since[1] * 10)
        self.call("GetDriverEntryPointByVersion", api.encode(), out, version, 0, status)
        if status[0] != 0 or out[0] == ffi.NULL:
            detail = f"the driver does not provide {api} (status {status[0]})"
            if since is not None and self.driver_version is not None and self.driver_version < since:
                detail = (f"{api} needs a CUDA driver of {since[0]}.{since[1]} or newer; the driver "
                          f"supports {self.driver_version[0]}.{self.driver_version[1]}")
            raise errors.NotSupported(api, vendor=self.name, detail=detail)
        return out[0]

    def _driver_fn(self, api: str, cdecl: str) -> Any:
        """A driver entry point typed in the runtime binding (runtime handles pass as they are)."""
        return self.ffi.cast(cdecl, self._entry_point(api))

    _address_range: Any = None  # cuMemGetAddressRange, typed, once needed

    def allocation_range(self, address: int) -> tuple[int, int] | None:
        get = self._address_range
        if get is None:
            get = self._address_range = self._driver_fn(
                "cuMemGetAddressRange", "int (*)(unsigned long long *, size_t *, unsigned long long)")
        ffi = self.ffi
        base, size = ffi.new("unsigned long long *"), ffi.new("size_t *")
        if get(base, size, address):  # not device memory (CUDA_ERROR_NOT_FOUND / INVALID_VALUE)
            return None
        return int(base[0]), int(size[0])

    def launch_entry(self, func: Any, form: str) -> LaunchEntry:
        """The driver's ``cuLaunchKernel`` on the kernel's own handle.

        A foreign CUfunction launches as it is.  A library kernel (CUkernel: what
        ``cudaLibraryGetKernel`` returns) is passed as it is too: the driver launches
        it in the stream's context (the current context for the NULL stream), loading
        it there on first use -- so a switch of device or context needs no check here.
        Where no context can be found (the NULL stream on a thread that has made no
        runtime call yet: CUDA_ERROR_INVALID_CONTEXT) the launch is retried through
        the runtime's ``cudaLaunchKernel``, which makes the device's primary context
        current (:meth:`kernel_launcher`).
        """
        if self.runtime_launches:
            return None  # (recording: Kernel.launch takes kernel_launcher, the runtime's call)
        c_launch = self._driver_fn("cuLaunchKernel", _LAUNCH_CDECL)
        retry = self._driver_enum("CUresult", "CUDA_ERROR_INVALID_CONTEXT") if form == "kernel" else None
        return LaunchEntry(c_launch, int(self.ffi.cast("uintptr_t", c_launch)), func,
                           lambda rc: self._driver_error(rc, "cuLaunchKernel"), retry)

    def kernel_launcher(self, func: Any, form: str) -> Any:
        """The plain launch of one kernel (no attributes): :meth:`launch_entry`'s
        ``cuLaunchKernel``, falling back to the runtime where the driver finds no context
        (the runtime's ``cudaLaunchKernel`` alone while :attr:`runtime_launches` is set)."""
        if self.runtime_launches:
            def through_runtime(grid: tuple[int, int, int], block: tuple[int, int, int], smem: int,
                                stream: Any, argv: Any) -> None:
                self.launch_kernel(func, form, grid, block, smem, stream, argv, {})

            return through_runtime
        entry = self.launch_entry(func, form)
        c_launch, null, retry = entry.call, self.ffi.NULL, entry.retry

        def launch(grid: tuple[int, int, int], block: tuple[int, int, int], smem: int,
                   stream: Any, argv: Any) -> None:
            rc = c_launch(func, grid[0], grid[1], grid[2], block[0], block[1], block[2], smem,
                          stream, argv, null)
            if rc:
                if rc == retry:
                    self.launch_kernel(func, form, grid, block, smem, stream, argv, {})
                    return
                raise entry.error(rc)

        return launch

    def _driver_error(self, rc: int, api: str) -> errors.GraphRTError:
        name = self._driver_ffi().typeof("CUresult").elements.get(rc, f"CUresult{rc}")
        cls = getattr(errors, DRIVER_ERROR_CLASSES.get(name, "GraphRTError"))
        return cls(api, rc, name, self.name, "")

    def _raise_driver(self, rc: int, api: str) -> None:
        raise self._driver_error(rc, api)

    def launch_kernel(self, func: Any, form: str, grid: tuple[int, int, int],
                      block: tuple[int, int, int], smem: int, stream: Any, argv: Any,
                      attrs: dict[str, Any]) -> None:
        ffi = self.ffi
        if form == "kernel":
            if not attrs:
                self.call("LaunchKernel", func, ffi.new("dim3 *", grid)[0],
                          ffi.new("dim3 *", block)[0], argv, smem, stream)
                return
            cfg = ffi.new("cudaLaunchConfig_t *")
            cfg.gridDim.x, cfg.gridDim.y, cfg.gridDim.z = grid
            cfg.blockDim.x, cfg.blockDim.y, cfg.blockDim.z = block
            cfg.dynamicSmemBytes = smem
            cfg.stream = stream
            arr = ffi.new("cudaLaunchAttribute[]", len(attrs))
            for i, (name, value) in enumerate(attrs.items()):
                self.fill_launch_attribute(arr[i], name, value, "cudaLaunchKernelExC")
            cfg.attrs, cfg.numAttrs = arr, len(attrs)
            self.call("LaunchKernelExC", cfg, func, argv)
            return
        dffi = self._driver_ffi()
        dstream = self._to_driver("CUstream", stream)
        dargv = dffi.cast("void **", int(ffi.cast("uintptr_t", argv)))
        if not attrs:
            self._driver_call("cuLaunchKernel", self._dfunc(func), *grid, *block, smem, dstream,
                              dargv, dffi.NULL)
            return
        cfg = dffi.new("CUlaunchConfig *")
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = block
        cfg.sharedMemBytes, cfg.hStream = smem, dstream
        arr = dffi.new("CUlaunchAttribute[]", len(attrs))
        for i, (name, value) in enumerate(attrs.items()):
            # The driver's attribute ids and value union are the runtime's, field for field.
            rt_attr = ffi.new("cudaLaunchAttribute *")
            self.fill_launch_attribute(rt_attr, name, value, "cuLaunchKernelEx")
            arr[i].id = int(rt_attr.id)
            dffi.memmove(dffi.addressof(arr[i].value), ffi.buffer(ffi.addressof(rt_attr.val)),
                         ffi.sizeof("cudaLaunchAttributeValue"))
        cfg.attrs, cfg.numAttrs = arr, len(attrs)
        self._driver_call("cuLaunchKernelEx", cfg, self._dfunc(func), dargv, dffi.NULL)

    def _driver_node_struct(self, func: Any, grid: tuple[int, int, int], block: tuple[int, int, int],
                            smem: int, argv: Any) -> Any:
        dffi = self._driver_ffi()
        p = dffi.new("CUDA_KERNEL_NODE_PARAMS *")
        p.func = self._dfunc(func)
        p.gridDimX, p.gridDimY, p.gridDimZ = grid
        p.blockDimX, p.blockDimY, p.blockDimZ = block
        p.sharedMemBytes = smem
        p.kernelParams = dffi.cast("void **", int(self.ffi.cast("uintptr_t", argv)))
        return p

    def add_kernel_node_unlinked(self, graph: Any, func: Any, form: str, grid: tuple[int, int, int],
                                 block: tuple[int, int, int], smem: int, argv: Any) -> Any:
        if form == "kernel":
            return super().add_kernel_node_unlinked(graph, func, form, grid, block, smem, argv)
        dffi = self._driver_ffi()
        out = dffi.new("CUgraphNode *")
        self._driver_call("cuGraphAddKernelNode", out, self._to_driver("CUgraph", graph), dffi.NULL, 0,
                          self._driver_node_struct(func, grid, block, smem, argv))
        return self.ffi.cast("cudaGraphNode_t", int(dffi.cast("uintptr_t", out[0])))

    def set_kernel_node(self, node: Any, exec_: Any, func: Any, form: str,
                        grid: tuple[int, int, int], block: tuple[int, int, int], smem: int,
                        argv: Any) -> None:
        if form == "kernel":
            super().set_kernel_node(node, exec_, func, form, grid, block, smem, argv)
            return
        p = self._driver_node_struct(func, grid, block, smem, argv)
        dnode = self._to_driver("CUgraphNode", node)
        if exec_ is None:
            self._driver_call("cuGraphKernelNodeSetParams", dnode, p)
        else:
            self._driver_call("cuGraphExecKernelNodeSetParams", self._to_driver("CUgraphExec", exec_),
                              dnode, p)
