"""What CUDA and HIP share: the call forms that differ only by prefix.

A vendor module (:mod:`.cuda`, :mod:`.hip`) subclasses :class:`Vendor` and
supplies its tables (error classes, enum member names, edge-data symbols) and
the call forms that really differ (instantiate, exec update, capture info).
Everything the layer asks of a runtime goes through these methods, so the
difference between vendors lives in exactly one place per vendor.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable

from .. import errors
from ..enums import (CaptureMode, CaptureStatus, DebugDotFlags, DependencyType, GraphMemAttr,
                     InstantiateFlags, MemPoolAttr, NodeType, UpdateResult)

if TYPE_CHECKING:  # imported where used: defining it imports dataclasses (see pygraphrt._records)
    from ..enums import EdgeData

_EdgeData: Any = None  # pygraphrt.enums.EdgeData, once _edge_data has imported it


def _edge_data() -> "type[EdgeData]":
    """pygraphrt.enums.EdgeData, imported by the first query that reads edges and then kept (an
    import statement costs about a microsecond even once its module is loaded)."""
    global _EdgeData
    if _EdgeData is None:
        from ..enums import EdgeData

        _EdgeData = EdgeData
    return _EdgeData  # type: ignore[no-any-return]

class KernelParams:
    """Launch parameters of a kernel node, with the vendor struct they came from."""

    __slots__ = ("func", "grid", "block", "shared_mem_bytes", "form", "raw", "kernel_id", "argv")

    def __init__(self, func: int, grid: tuple[int, int, int], block: tuple[int, int, int],
                 shared_mem_bytes: int, form: str, raw: Any, kernel_id: int = 0,
                 argv: int = 0) -> None:
        self.func = func
        self.grid = grid
        self.block = block
        self.shared_mem_bytes = shared_mem_bytes
        self.form = form  # "runtime" or "driver": which API's struct ``raw`` is
        self.raw = raw
        # The handle pygraphrt's Kernel objects are registered under (a library
        # kernel's CUkernel where the driver reports it, else the function).
        self.kernel_id = kernel_id or func
        self.argv = argv  # address of the node's kernelParams array (0: none)


class LaunchEntry:
    """The launch function the hot path of ``Kernel.launch`` calls for one kernel.

    ``call(handle, gx, gy, gz, bx, by, bz, smem, stream, argv, NULL)`` is the
    vendor's launch in the shape of ``cuLaunchKernel`` (``hipModuleLaunchKernel``
    has the same), callable from Python; ``address`` is the same function as an
    int, for the compiled path (``_pgr_launch_packed``).  ``error(rc)`` is the
    exception for a failed launch; a launch failing with ``retry`` is made again
    through :meth:`Vendor.kernel_launcher` (which knows the way around it).
    """

    __slots__ = ("call", "address", "handle", "error", "retry")

    def __init__(self, call: Callable[..., int], address: int, handle: Any,
                 error: Callable[[int], errors.GraphRTError], retry: int | None = None) -> None:
        self.call = call
        self.address = address
        self.handle = handle
        self.error = error
        self.retry = retry


# Kernel attributes: neutral name -> (field of the runtime's FuncAttributes struct,
# suffix of the driver's / HIP's function-attribute enum member).  Same on both vendors.
KERNEL_ATTRIBUTES: dict[str, tuple[str, str]] = {
    "max_threads_per_block": ("maxThreadsPerBlock", "MAX_THREADS_PER_BLOCK"),
    "num_regs": ("numRegs", "NUM_REGS"),
    "shared_size_bytes": ("sharedSizeBytes", "SHARED_SIZE_BYTES"),
    "const_size_bytes": ("constSizeBytes", "CONST_SIZE_BYTES"),
    "local_size_bytes": ("localSizeBytes", "LOCAL_SIZE_BYTES"),
    "max_dynamic_shared_size_bytes": ("maxDynamicSharedSizeBytes", "MAX_DYNAMIC_SHARED_SIZE_BYTES"),
    "ptx_version": ("ptxVersion", "PTX_VERSION"),
    "binary_version": ("binaryVersion", "BINARY_VERSION"),
}

# Launch / kernel-node attributes: neutral keyword -> (field of the attribute-value
# union, how its value is written).  The union's field names are the same on CUDA
# and HIP; which attributes a runtime has is the vendor's ``launch_attribute_ids``.
LAUNCH_ATTRIBUTE_FIELDS: dict[str, tuple[str, str]] = {
    "cooperative": ("cooperative", "bool"),
    "priority": ("priority", "int"),
    "cluster_dim": ("clusterDim", "dim3"),
    "preferred_cluster_dim": ("preferredClusterDim", "dim3"),
    "programmatic_stream_serialization": ("programmaticStreamSerializationAllowed", "bool"),
    "programmatic_event": ("programmaticEvent", "event"),
    "mem_sync_domain": ("memSyncDomain", "int"),
    "preferred_shared_memory_carveout": ("sharedMemCarveout", "int"),
    "access_policy_window": ("accessPolicyWindow", "access_policy"),
}

# Access properties of an access-policy window: neutral name -> enum member without prefix.
ACCESS_PROPERTIES = {"normal": "AccessPropertyNormal", "streaming": "AccessPropertyStreaming",
                     "persisting": "AccessPropertyPersisting"}


# Memory-pool attributes: neutral -> (enum member without the vendor prefix, C type of
# the value).  Same names and values on CUDA and HIP.
MEM_POOL_ATTRIBUTES: dict[MemPoolAttr, tuple[str, str]] = {
    MemPoolAttr.REUSE_FOLLOW_EVENT_DEPENDENCIES: ("MemPoolReuseFollowEventDependencies", "int"),
    MemPoolAttr.REUSE_ALLOW_OPPORTUNISTIC: ("MemPoolReuseAllowOpportunistic", "int"),
    MemPoolAttr.REUSE_ALLOW_INTERNAL_DEPENDENCIES: ("MemPoolReuseAllowInternalDependencies", "int"),
    MemPoolAttr.RELEASE_THRESHOLD: ("MemPoolAttrReleaseThreshold", "unsigned long long"),
    MemPoolAttr.RESERVED_MEM_CURRENT: ("MemPoolAttrReservedMemCurrent", "unsigned long long"),
    MemPoolAttr.RESERVED_MEM_HIGH: ("MemPoolAttrReservedMemHigh", "unsigned long long"),
    MemPoolAttr.USED_MEM_CURRENT: ("MemPoolAttrUsedMemCurrent", "unsigned long long"),
    MemPoolAttr.USED_MEM_HIGH: ("MemPoolAttrUsedMemHigh", "unsigned long long"),
}


def _vstr(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


class Vendor:
    """Base of the vendor tables; one instance per loaded backend."""

    name: str = ""
    prefix: str = ""
    error_enum: str = ""  # typedef of the error enum in the binding's enums module
    # vendor error member name -> pygraphrt.errors class name
    error_classes: dict[str, str] = {}
    sticky_errors: frozenset[str] = frozenset()
    node_types: dict[NodeType, str] = {}
    capture_modes: dict[CaptureMode, str] = {}
    capture_statuses: dict[CaptureStatus, str] = {}
    instantiate_flags: dict[InstantiateFlags, str] = {}
    update_results: dict[UpdateResult, str] = {}
    graph_mem_attrs: dict[GraphMemAttr, str] = {}
    debug_dot_flags: dict[DebugDotFlags, str] = {}
    edge_data_type: str | None = None  # C type of one edge-data record
    # api role -> symbol of the form that carries edge data, per binding name
    edge_symbols: dict[str, dict[str, str]] = {}
    host_fn_type: str = ""
    memset_params_type: str = ""
    host_params_type: str = ""
    kernel_params_type: str = ""
    memcpy3d_params_type: str = ""
    mem_alloc_params_type: str = ""
    mem_pool_props_type: str = ""
    device_prop_type: str = ""
    node_params_type: str = ""
    # Several devices (pygraphrt.multidevice): the C types of a pointer's attributes and of one
    # memory-access descriptor, and neutral peer-to-peer attribute -> the vendor's enum member
    # (whose values differ: cudaDevP2PAttr counts from 1, hipDeviceP2PAttr from 0).
    pointer_attributes_type: str = ""
    mem_access_desc_type: str = ""
    mem_access_flags_type: str = ""
    p2p_attributes: dict[str, str] = {}
    # neutral external-semaphore type -> vendor enum member
    ext_sem_types: dict[Any, str] = {}
    # C types of the external-semaphore structs: handle desc, signal/wait params, node params
    ext_sem_desc_type: str = ""
    ext_sem_signal_params_type: str = ""
    ext_sem_wait_params_type: str = ""
    ext_sem_signal_node_type: str = ""
    ext_sem_wait_node_type: str = ""
    # conditional-node kind -> (the vendor's node-type member, the runtime version it needs)
    conditional_kinds: dict[str, tuple[str, int]] = {}
    conditional_assign_default: str | None = None  # handle flag: reset to default at each launch
    # (symbol, takes edge data) of the generic add-node API, best first; None
    # means "edge data exactly when the binding's prototype has it".
    generic_add_forms: tuple[tuple[str, bool | None], ...] = ()

    # Whether functions newer than the driver are refused at load (CUDA: a new runtime
    # API needs the driver of its release; minor-version compatibility covers the rest).
    gate_by_driver: bool = False

    # The compiled runtime calls the driver can make directly (pygraphrt._fast.DIRECT_SLOTS:
    # "launch", "add_empty", "capture_status", "add_memset", "add_kernel", the
    # "current_context" query the memset needs and the "current_device" query of device=)
    # -> the driver function doing that work.  None
    # here: every call goes through the runtime.
    direct_calls: dict[str, str] = {}
    # The runtime calls (prefix-less) whose driver function there takes the very same
    # arguments -> its slot: ABI mode's hot paths call those first (direct_fn).
    direct_same_args: dict[str, str] = {}

    def __init__(self, ffi: Any, lib: Any, binding: str, symbols: ModuleType,
                 runtime_version: tuple[int, int] | None = None,
                 driver_version: tuple[int, int] | None = None) -> None:
        self.ffi = ffi
        self.lib = lib
        self.binding = binding
        self.symbols = symbols  # the binding's CONSTANTS and API_SYMBOLS
        self._fns: dict[str, Callable[..., int]] = {}
        self._direct_fns: dict[str, Callable[..., int] | None] = {}  # direct_fn's answers
        self.runtime_version = runtime_version  # (major, minor) of the loaded runtime, if known
        self.driver_version = driver_version  # (major, minor) the driver supports, if known
        # Functions of the binding that the loaded runtime cannot run, found at load:
        # symbol -> why (the version it needs and the version loaded).
        self.unavailable: dict[str, str] = self._find_unavailable()
        # cffi knows the error enum's members: no need to import the IntEnum module.
        err_type = ffi.typeof(self.error_enum)
        self._error_names: dict[int, str] = dict(err_type.elements)
        codes = err_type.relements
        self._error_class: dict[int, type[errors.GraphRTError]] = {
            code: errors.GraphRTError for code in self._error_names}
        for name, cls_name in self.error_classes.items():
            if name in codes:
                self._error_class[codes[name]] = getattr(errors, cls_name)
        self._sticky_codes = {codes[n] for n in self.sticky_errors if n in codes}
        self.node_type_of = self._reverse(self.node_types)
        self.update_result_of = self._reverse(self.update_results)
        self.capture_status_of = self._reverse(self.capture_statuses)
        edge_forms = self.edge_symbols.get(binding, {})
        self.edge_forms = {role: sym for role, sym in edge_forms.items() if self.has(sym)}
        self.generic_add: tuple[str, bool] | None = None
        for sym, with_edges in self.generic_add_forms:
            if self.has(sym):
                if with_edges is None:  # decided by the prototype this binding declares
                    with_edges = len(ffi.typeof(getattr(lib, sym)).args) == 6
                self.generic_add = (sym, with_edges)
                break

    def direct_entry_points(self) -> dict[str, tuple[str, int]]:
        """slot -> (driver API, address) of the functions in :attr:`direct_calls` the driver
        provides; the compiled hot paths call them before the runtime (pygraphrt._fast.set_direct)."""
        return {}

    def direct_fn(self, api: str) -> Callable[..., int] | None:
        """ABI mode's call straight to the driver for runtime call ``api`` (prefix-less): the
        driver's function doing that work with the very same arguments, callable as the
        runtime's own, or None (no such function: every call goes through :meth:`fn`).  Hot
        paths take it through :meth:`hot_fn`, and a call it refuses (a non-zero result) is made
        again through the runtime by :meth:`refused`, whose result -- the runtime's lazy set-up,
        its error code -- then stands, as in the compiled paths.  None here."""
        return None

    def hot_fn(self, api: str) -> Callable[..., int]:
        """The function a hot path calls for runtime call ``api``: :meth:`direct_fn`'s where
        there is one, else :meth:`fn`'s (NotSupported where the runtime lacks it).  A non-zero
        result of it goes to :meth:`refused`."""
        return self.direct_fn(api) or self.fn(api)

    def refused(self, api: str, fn: Callable[..., int], rc: int, *args: Any) -> int:
        """The result that stands where ``fn`` (:meth:`hot_fn`'s function for ``api``) returned
        ``rc`` (non-zero) for ``args``: where ``fn`` is the driver's, that of the runtime's own
        call with the same arguments (it sets up what the driver lacked -- a thread's first
        context -- or says why not); else ``rc``, the runtime's own refusal."""
        runtime_fn = self.fn(api)
        return rc if fn is runtime_fn else runtime_fn(*args)

    # ------------------------------------------------------------------ lookups
    def _reverse(self, table: dict[Any, str]) -> dict[int, Any]:
        out = {}
        for neutral, member in table.items():
            if self.has(member):
                out[int(getattr(self.lib, member))] = neutral
        return out

    def value(self, table: dict[Any, str], neutral: Any, what: str) -> int:
        """The vendor's integer for a neutral enum member, or NotSupported (InvalidValue for
        something that is not one of the table's enum members)."""
        try:
            member = table.get(neutral)
        except TypeError:  # (unhashable)
            member = None
        if member is None and table:
            kind = type(next(iter(table)))
            if not isinstance(neutral, kind):
                raise errors.InvalidValue(what, detail=f"{neutral!r} is not a {kind.__name__}")
        if member is None or not self.has(member):
            raise errors.NotSupported(what, detail=f"{neutral} has no {self.name} equivalent "
                                                   f"in binding {self.binding}")
        return int(getattr(self.lib, member))

    def const(self, name: str) -> int:
        """A vendor constant by prefix-less name: an enum member or a macro constant."""
        full = self.prefix + name
        try:
            return int(getattr(self.lib, full))
        except (AttributeError, self.ffi.error):
            pass
        try:
            return int(self.symbols.CONSTANTS[full])
        except KeyError:
            raise errors.NotSupported(full, vendor=self.name,
                                      detail=f"no constant {full} in binding {self.binding}") from None

    def has(self, symbol: str) -> bool:
        """Whether the loaded library exports ``symbol`` and the runtime (and driver) can run it."""
        if symbol in self.unavailable:
            return False
        return self._exported(symbol)

    def _exported(self, symbol: str) -> bool:
        try:
            getattr(self.lib, symbol)
            return True
        except (AttributeError, NotImplementedError, self.ffi.error):
            return False

    def _find_unavailable(self) -> dict[str, str]:
        """The binding's functions newer than the loaded runtime or driver (``SINCE``), and why.

        A function the binding's headers declare but the library does not export,
        or that needs a later runtime (or, where ``gate_by_driver``, a later driver)
        than the one loaded, raises NotSupported naming the version it needs and
        the version loaded -- at the call, before anything reaches the runtime.
        """
        since: dict[str, tuple[int, int]] = getattr(self.symbols, "SINCE", {})
        if not since:
            return {}
        api_of = {sym: api for api, sym in self.symbols.API_SYMBOLS.items()}
        runtime, driver = self.runtime_version, self.driver_version
        loaded = _vstr(runtime) if runtime else "of unknown version"
        label = self.name.upper()
        out: dict[str, str] = {}
        for symbol, need in since.items():
            api = api_of.get(symbol, symbol)
            if runtime is not None and runtime < need:
                out[symbol] = (f"{api} needs {label} runtime {_vstr(need)} or newer; the loaded runtime "
                               f"is {loaded} (binding {self.binding})")
            elif not self._exported(symbol):
                out[symbol] = (f"{api} needs {label} runtime {_vstr(need)} or newer; the loaded runtime "
                               f"{loaded} does not export {symbol} (binding {self.binding})")
            elif self.gate_by_driver and driver is not None and driver < need:
                out[symbol] = (f"{api} needs a {label} driver of {_vstr(need)} or newer; the driver "
                               f"supports {_vstr(driver)} (runtime {loaded}, binding {self.binding})")
        return out

    def fn(self, api: str) -> Callable[..., int]:
        """The library function for a prefix-less api name (``"GraphLaunch"``)."""
        f = self._fns.get(api)
        if f is None:
            symbol = self.symbols.API_SYMBOLS.get(self.prefix + api, self.prefix + api)
            why = self.unavailable.get(symbol)
            if why is not None:
                raise errors.NotSupported(self.prefix + api, vendor=self.name, detail=why)
            try:
                f = getattr(self.lib, symbol)
            except (AttributeError, NotImplementedError, self.ffi.error) as exc:
                raise errors.NotSupported(self.prefix + api, vendor=self.name,
                                          detail=f"{symbol} is not exported by this runtime"
                                          + (f" ({self.name.upper()} {_vstr(self.runtime_version)}, binding "
                                             f"{self.binding})" if self.runtime_version else "")) from exc
            self._fns[api] = f
        return f

    # ------------------------------------------------------------------ errors
    def error(self, code: int, api: str, detail: str = "") -> errors.GraphRTError:
        """The exception for ``code``; also clears the runtime's last-error slot.

        The runtime remembers the last (non-sticky) error until someone calls
        ``GetLastError``; other libraries in the process (PyTorch checks it
        after each launch) would otherwise see our already-reported failure.
        """
        cls = self._error_class.get(code, errors.GraphRTError)
        if code not in self._sticky_codes:
            try:
                self.fn("GetLastError")()
            except errors.GraphRTError:
                pass
        name = self._error_names.get(code)
        if name is None:
            raw = self._call_str("GetErrorName", code)
            name = raw or f"{self.prefix}Error{code}"
        message = self._call_str("GetErrorString", code)
        if not detail and (cls is errors.NoDevice or (cls is errors.InsufficientDriver and self.driver_version is None)):
            detail = errors.SIM_HINT  # no GPU here: say that the simulator exists
        return cls(api, code, name, self.name, message, code in self._sticky_codes, detail)

    def _call_str(self, api: str, code: int) -> str:
        try:
            p = self.fn(api)(code)
        except errors.GraphRTError:
            return ""
        return self.ffi.string(p).decode(errors="replace") if p != self.ffi.NULL else ""

    def call(self, api: str, *args: Any) -> None:
        rc = self.fn(api)(*args)
        if rc:
            raise self.error(rc, self.prefix + api)

    # ------------------------------------------------------------------ edges
    @property
    def has_edge_data(self) -> bool:
        return "add_dependencies" in self.edge_forms

    def _edge_array(self, edges: list[EdgeData]) -> Any:
        arr = self.ffi.new(f"{self.edge_data_type}[]", max(len(edges), 1))
        for i, e in enumerate(edges):
            arr[i].from_port = e.from_port
            arr[i].to_port = e.to_port
            arr[i].type = int(e.type)
        return arr

    def _edges_from(self, arr: Any, n: int) -> list[EdgeData]:
        EdgeData = _edge_data()
        return [EdgeData(arr[i].from_port, arr[i].to_port, DependencyType(arr[i].type))
                if arr[i].type in (0, 1) else EdgeData(arr[i].from_port, arr[i].to_port, arr[i].type)
                for i in range(n)]

    def require_default_edges(self, edges: list[EdgeData] | None, what: str) -> None:
        if edges and any(not e.is_default for e in edges):
            raise errors.NotSupported(what, vendor=self.name,
                                      detail=f"edge data is not supported by the {self.name} "
                                             f"runtime bound as {self.binding}")

    def add_dependencies(self, graph: Any, froms: list[Any], tos: list[Any],
                         edges: list[EdgeData] | None, remove: bool = False) -> None:
        role = "remove_dependencies" if remove else "add_dependencies"
        base = "GraphRemoveDependencies" if remove else "GraphAddDependencies"
        n = len(froms)
        f_arr = self.ffi.new(f"{self.prefix}GraphNode_t[]", froms)
        t_arr = self.ffi.new(f"{self.prefix}GraphNode_t[]", tos)
        if role in self.edge_forms and edges is not None:
            sym = self.edge_forms[role]
            rc = getattr(self.lib, sym)(graph, f_arr, t_arr, self._edge_array(edges), n)
            if rc:
                raise self.error(rc, sym)
            return
        self.require_default_edges(edges, self.prefix + base)
        if role in self.edge_forms:  # the edge-data form is the only one (CUDA 13)
            rc = getattr(self.lib, self.edge_forms[role])(graph, f_arr, t_arr, self.ffi.NULL, n)
            if rc:
                raise self.error(rc, self.edge_forms[role])
            return
        self.call(base, graph, f_arr, t_arr, n)

    def _query(self, role: str, base: str, head: tuple[Any, ...], two_lists: bool
               ) -> tuple[list[Any], list[Any], list[EdgeData]]:
        """Count-then-fill queries; always ask for edge data where the runtime has it."""
        ffi = self.ffi
        count = ffi.new("size_t *")
        sym = self.edge_forms.get(role)
        fn = getattr(self.lib, sym) if sym else self.fn(base)
        api = sym or self.prefix + base
        nullish = (ffi.NULL, ffi.NULL) if two_lists else (ffi.NULL,)
        rc = fn(*head, *nullish, *((ffi.NULL,) if sym else ()), count)
        if rc:
            raise self.error(rc, api)
        n = count[0]
        if n == 0:
            return [], [], []
        a = ffi.new(f"{self.prefix}GraphNode_t[]", n)
        b = ffi.new(f"{self.prefix}GraphNode_t[]", n) if two_lists else None
        EdgeData = _edge_data()
        e = self._edge_array([EdgeData()] * n) if sym else None
        lists = (a, b) if two_lists else (a,)
        rc = fn(*head, *lists, *((e,) if sym else ()), count)
        if rc:
            raise self.error(rc, api)
        n = min(n, count[0])
        edges = self._edges_from(e, n) if sym else [EdgeData()] * n
        return [a[i] for i in range(n)], ([b[i] for i in range(n)] if two_lists else []), edges

    def get_edges(self, graph: Any) -> list[tuple[Any, Any, EdgeData]]:
        froms, tos, edges = self._query("get_edges", "GraphGetEdges", (graph,), True)
        return list(zip(froms, tos, edges))

    def node_dependencies(self, node: Any) -> list[tuple[Any, EdgeData]]:
        deps, _, edges = self._query("node_dependencies", "GraphNodeGetDependencies", (node,), False)
        return list(zip(deps, edges))

    def node_dependents(self, node: Any) -> list[tuple[Any, EdgeData]]:
        deps, _, edges = self._query("node_dependents", "GraphNodeGetDependentNodes", (node,), False)
        return list(zip(deps, edges))

    def link(self, inputs: list[tuple[str, Any, str]]) -> tuple[bytes, str]:
        """Link relocatable device code into one loadable image (CUDA: the driver's JIT linker)."""
        raise errors.NotSupported(f"{self.prefix}Link", vendor=self.name,
                                  detail="linking device code is available on CUDA only")

    def node_type_fallback(self, node: Any) -> NodeType | None:
        """The node's type by another route when ``GraphNodeGetType`` fails (None: no other route)."""
        return None

    def add_node_generic(self, graph: Any, deps: list[Any], edges: list[EdgeData] | None,
                         params: Any) -> Any:
        """``GraphAddNode`` with a node-params union; edge data where the runtime takes it."""
        if self.generic_add is None:
            raise errors.NotSupported(f"{self.prefix}GraphAddNode", vendor=self.name,
                                      detail="the generic add-node API is not in this runtime")
        sym, with_edges = self.generic_add
        ffi = self.ffi
        out = ffi.new(f"{self.prefix}GraphNode_t *")
        arr = ffi.new(f"{self.prefix}GraphNode_t[]", deps) if deps else ffi.NULL
        fn = getattr(self.lib, sym)
        if with_edges:
            e = (self._edge_array(edges) if edges and any(not x.is_default for x in edges)
                 else ffi.NULL)
            rc = fn(out, graph, arr, e, len(deps), params)
        else:
            self.require_default_edges(edges, sym)
            rc = fn(out, graph, arr, len(deps), params)
        if rc:
            raise self.error(rc, sym)
        return out[0]

    # ------------------------------------------------------------------ kernel nodes
    def kernel_params(self, node: Any) -> "KernelParams":
        """A kernel node's launch parameters (runtime form ``GraphKernelNodeGetParams``)."""
        raw = self.ffi.new(f"{self.kernel_params_type} *")
        rc = self.fn("GraphKernelNodeGetParams")(node, raw)
        if rc:
            raise self.error(rc, f"{self.prefix}GraphKernelNodeGetParams")
        return KernelParams(
            int(self.ffi.cast("uintptr_t", raw.func)),
            (raw.gridDim.x, raw.gridDim.y, raw.gridDim.z),
            (raw.blockDim.x, raw.blockDim.y, raw.blockDim.z), raw.sharedMemBytes, "runtime", raw,
            argv=int(self.ffi.cast("uintptr_t", raw.kernelParams)))

    def set_kernel_dims(self, node: Any, params: "KernelParams", exec_: Any = None) -> None:
        """Write grid/block/shared memory of ``params`` back (to the graph, or to ``exec_``)."""
        raw = params.raw
        raw.gridDim.x, raw.gridDim.y, raw.gridDim.z = params.grid
        raw.blockDim.x, raw.blockDim.y, raw.blockDim.z = params.block
        raw.sharedMemBytes = params.shared_mem_bytes
        if exec_ is None:
            self.call("GraphKernelNodeSetParams", node, raw)
        else:
            self.call("GraphExecKernelNodeSetParams", exec_, node, raw)

    # ------------------------------------------------------------------ kernels
    # A kernel handle comes in a vendor "form": CUDA's library kernels
    # ("kernel", cudaKernel_t: runtime API) and foreign functions ("function",
    # CUfunction: driver API); HIP's module functions ("function", hipFunction_t).
    launch_attribute_ids: dict[str, str] = {}
    library_unload_api: str = ""
    #: Whether a loaded library's kernels run only on the device it was loaded on (HIP's
    #: modules), so that pygraphrt loads it once more per device it is launched on.
    library_per_device: bool = False

    def code_runs_on(self, code_arch: str, image_kind: str, device_arch: str) -> str | None:
        """Why code compiled for ``code_arch`` (``image_kind``: cubin, ptx, code_object) cannot
        run on a device of ``device_arch``; None where it can (or the rule is not known)."""
        return None

    def load_library(self, image: Any, path: bytes | None) -> Any:
        """Load a code image (a cffi buffer) or a file into a library / module handle."""
        raise NotImplementedError

    def library_kernel(self, library: Any, name: bytes) -> tuple[Any, str]:
        """(function handle as ``void *``, form) of kernel ``name`` in a loaded library."""
        raise NotImplementedError

    def kernel_attribute(self, func: Any, form: str, name: str) -> int:
        raise NotImplementedError

    def set_max_dynamic_shared_memory(self, func: Any, form: str, nbytes: int) -> None:
        raise NotImplementedError

    def kernel_param_info(self, func: Any, form: str) -> list[tuple[int, int]] | None:
        """(offset, size) of each kernel parameter, or None where the runtime cannot tell."""
        return None

    def occupancy(self, func: Any, form: str, block_size: int, dynamic_smem: int) -> int:
        raise NotImplementedError

    def allocation_range(self, address: int) -> tuple[int, int] | None:
        """(base, size) of the device allocation holding ``address``; None for memory the
        runtime does not know as a device allocation (host memory) or where it cannot tell."""
        return None

    def check_copy_range(self, dst: int | None, src: int | None, count: int, what: str) -> None:
        """Refuse an eager copy running past the end of a device allocation (None: an operand
        whose range is known to fit, which is not looked up).

        Seen on an H100 with the CUDA 12.9, 13.0 and 13.5 runtimes: an eager cudaMemcpyAsync
        (cudaMemcpyDefault) from an address just past the end of a device allocation is not
        refused -- an address in no allocation is taken for host memory and the process
        dies of a segmentation fault inside the runtime.  A range that starts inside an
        allocation and runs past its end can be caught here: pygraphrt looks up each
        operand's allocation first (one driver call each).  A raw address outside every
        allocation cannot be told from host memory; that stays the caller's to get right."""
        for role, address in (("destination", dst), ("source", src)):
            if address is None:
                continue
            r = self.allocation_range(address)
            if r is not None and address + count > r[0] + r[1]:
                base, size = r
                raise errors.InvalidValue(what, detail=f"the {role} range ({count} bytes at {address:#x}) runs "
                                                       f"{address + count - base - size} bytes past the end of "
                                                       f"its {size}-byte device allocation at {base:#x}")

    #: While true, kernel launches go through the runtime's own launch function, never a
    #: shorter way to the driver (:meth:`launch_entry` gives None, :meth:`kernel_launcher` the
    #: runtime's call): the conformance suite's call recorder sets it, so that it sees them.
    runtime_launches: bool = False

    def kernel_launcher(self, func: Any, form: str) -> Callable[..., None]:
        """``launch(grid, block, smem, stream, argv)`` of one kernel without attributes:
        the hot path of :meth:`Kernel.launch`."""
        raise NotImplementedError

    def launch_entry(self, func: Any, form: str) -> LaunchEntry | None:
        """The launch function of one kernel for :mod:`pygraphrt.kernels._hot` (None: the
        vendor has none; launches then go through :meth:`kernel_launcher`)."""
        return None

    def launch_kernel(self, func: Any, form: str, grid: tuple[int, int, int],
                      block: tuple[int, int, int], smem: int, stream: Any, argv: Any,
                      attrs: dict[str, Any]) -> None:
        raise NotImplementedError

    def kernel_node_struct(self, func: Any, grid: tuple[int, int, int], block: tuple[int, int, int],
                           smem: int, argv: Any) -> Any:
        """The runtime's kernel-node parameter struct (fields alike on CUDA and HIP)."""
        p = self.ffi.new(f"{self.kernel_params_type} *")
        p.func = func
        p.gridDim.x, p.gridDim.y, p.gridDim.z = grid
        p.blockDim.x, p.blockDim.y, p.blockDim.z = block
        p.sharedMemBytes = smem
        p.kernelParams = argv
        return p

    def add_kernel_node_unlinked(self, graph: Any, func: Any, form: str, grid: tuple[int, int, int],
                                 block: tuple[int, int, int], smem: int, argv: Any) -> Any:
        """A kernel node with no dependencies (the caller adds edges); returns its handle."""
        out = self.ffi.new(f"{self.prefix}GraphNode_t *")
        self.call("GraphAddKernelNode", out, graph, self.ffi.NULL, 0,
                  self.kernel_node_struct(func, grid, block, smem, argv))
        return out[0]

    def set_kernel_node(self, node: Any, exec_: Any, func: Any, form: str,
                        grid: tuple[int, int, int], block: tuple[int, int, int], smem: int,
                        argv: Any) -> None:
        """Replace a kernel node's parameters (in its graph, or in ``exec_``)."""
        p = self.kernel_node_struct(func, grid, block, smem, argv)
        if exec_ is None:
            self.call("GraphKernelNodeSetParams", node, p)
        else:
            self.call("GraphExecKernelNodeSetParams", exec_, node, p)

    def _attribute_id(self, name: str, api: str) -> int:
        member = self.launch_attribute_ids.get(name)
        if member is None or not self.has(member):
            known = sorted(n for n, m in self.launch_attribute_ids.items() if self.has(m))
            raise errors.NotSupported(api, vendor=self.name,
                                      detail=f"launch attribute {name!r} is not available on "
                                             f"{self.name} ({self.binding}); available: {known}")
        return int(getattr(self.lib, member))

    def fill_launch_attribute(self, attr: Any, name: str, value: Any, api: str) -> Any:
        """Set ``attr.id`` and ``attr.val`` (a launch-attribute record) from a neutral keyword."""
        attr.id = self._attribute_id(name, api)
        self.encode_attribute_value(attr.val, name, value, api)
        return value.handle if name == "programmatic_event" else None

    def encode_attribute_value(self, val: Any, name: str, value: Any, api: str) -> None:
        field, kind = LAUNCH_ATTRIBUTE_FIELDS[name]
        if kind == "bool":
            if not isinstance(value, (bool, int)):
                raise errors.InvalidValue(api, detail=f"{name} takes a bool, got {value!r}")
            setattr(val, field, int(bool(value)))
        elif kind == "int":  # (the union's int fields: int, or an enum of the runtime's)
            if not isinstance(value, int) or isinstance(value, bool) or not -(1 << 31) <= value < 1 << 31:
                raise errors.InvalidValue(api, detail=f"{name} takes an int, got {value!r}")
            setattr(val, field, value)
        elif kind == "dim3":
            dims = (value,) if isinstance(value, int) else tuple(value) if isinstance(value, (tuple, list)) else ()
            if not 1 <= len(dims) <= 3 or not all(isinstance(d, int) and not isinstance(d, bool)
                                                  and 0 < d < 1 << 32 for d in dims):
                raise errors.InvalidValue(api, detail=f"{name} takes 1-3 positive ints, got {value!r}")
            dims = dims + (1,) * (3 - len(dims))
            sub = getattr(val, field)
            sub.x, sub.y, sub.z = dims
        elif kind == "access_policy":
            # A mapping: base_ptr, num_bytes, hit_ratio (1.0), hit_prop ("persisting"),
            # miss_prop ("streaming").
            if not isinstance(value, dict) or not {"base_ptr", "num_bytes"} <= set(value) or \
                    not set(value) <= {"base_ptr", "num_bytes", "hit_ratio", "hit_prop", "miss_prop"}:
                raise errors.InvalidValue(api, detail=f"{name} takes a dict with base_ptr, num_bytes "
                                                      f"and optionally hit_ratio, hit_prop, miss_prop; got {value!r}")
            from .._operands import array_address, count

            ratio = value.get("hit_ratio", 1.0)
            props = [value.get("hit_prop", "persisting"), value.get("miss_prop", "streaming")]
            if not isinstance(ratio, (int, float)) or isinstance(ratio, bool) or not 0.0 <= ratio <= 1.0 \
                    or any(p not in ACCESS_PROPERTIES for p in props):
                raise errors.InvalidValue(api, detail=f"{name}: hit_ratio in [0, 1], properties among "
                                                      f"{sorted(ACCESS_PROPERTIES)}; got {value!r}")
            base = value["base_ptr"]
            address = base if isinstance(base, int) and not isinstance(base, bool) else array_address(base)
            if address is None or address < 0:
                raise errors.InvalidValue(api, detail=f"{name}: base_ptr must be an address or a device "
                                                      f"array, got {base!r}")
            sub = getattr(val, field)
            sub.base_ptr = self.ffi.cast("void *", address)
            sub.num_bytes = count(value["num_bytes"])
            sub.hitRatio = float(ratio)
            sub.hitProp = self.const(ACCESS_PROPERTIES[props[0]])
            sub.missProp = self.const(ACCESS_PROPERTIES[props[1]])
        else:  # "event": an Event, or (Event, trigger_at_block_start)
            event, trigger = (value if isinstance(value, tuple) else (value, False))
            handle = getattr(event, "handle", None)
            if handle is None:
                raise errors.InvalidValue(api, detail=f"{name} takes an Event, got {value!r}")
            sub = getattr(val, field)
            sub.event = handle
            sub.flags = 0
            sub.triggerAtBlockStart = int(bool(trigger))

    def decode_attribute_value(self, val: Any, name: str) -> Any:
        field, kind = LAUNCH_ATTRIBUTE_FIELDS[name]
        if kind == "bool":
            return bool(getattr(val, field))
        if kind == "int":
            return int(getattr(val, field))
        if kind == "dim3":
            sub = getattr(val, field)
            return (sub.x, sub.y, sub.z)
        sub = getattr(val, field)
        if kind == "access_policy":
            names = {self.const(m): n for n, m in ACCESS_PROPERTIES.items()}
            return {"base_ptr": int(self.ffi.cast("uintptr_t", sub.base_ptr)), "num_bytes": int(sub.num_bytes),
                    "hit_ratio": float(sub.hitRatio), "hit_prop": names.get(int(sub.hitProp), int(sub.hitProp)),
                    "miss_prop": names.get(int(sub.missProp), int(sub.missProp))}
        return (int(self.ffi.cast("uintptr_t", sub.event)), bool(sub.triggerAtBlockStart))

    # Bindings whose GraphKernelNodeCopyAttributes takes (dst, src) rather than (src, dst).
    copy_attributes_dst_first: frozenset[str] = frozenset()

    def copy_kernel_node_attributes(self, src: Any, dst: Any) -> None:
        if self.binding in self.copy_attributes_dst_first:
            self.call("GraphKernelNodeCopyAttributes", dst, src)
        else:
            self.call("GraphKernelNodeCopyAttributes", src, dst)

    def kernel_node_attribute(self, node: Any, name: str) -> Any:
        api = f"{self.prefix}GraphKernelNodeGetAttribute"
        val = self.ffi.new(f"{self.prefix}LaunchAttributeValue *")
        self.call("GraphKernelNodeGetAttribute", node, self._attribute_id(name, api), val)
        return self.decode_attribute_value(val, name)

    def set_kernel_node_attribute(self, node: Any, name: str, value: Any) -> None:
        api = f"{self.prefix}GraphKernelNodeSetAttribute"
        ident = self._attribute_id(name, api)
        val = self.ffi.new(f"{self.prefix}LaunchAttributeValue *")
        self.encode_attribute_value(val, name, value, api)
        self.call("GraphKernelNodeSetAttribute", node, ident, val)

    # ------------------------------------------------------------------ stream-ordered memory
    # Same function and struct-field names on CUDA and HIP (cuda/hipMemPoolProps:
    # allocType, handleTypes, location.{type,id}, maxSize).
    def create_mem_pool(self, device: int, max_size: int) -> Any:
        props = self.ffi.new(f"{self.mem_pool_props_type} *")
        props.allocType = self.const("MemAllocationTypePinned")
        props.handleTypes = self.const("MemHandleTypeNone")
        props.location.type = self.const("MemLocationTypeDevice")
        props.location.id = device
        if max_size:
            props.maxSize = max_size
        out = self.ffi.new(f"{self.prefix}MemPool_t *")
        self.call("MemPoolCreate", out, props)
        return out[0]

    def device_mem_pool(self, device: int, default: bool) -> Any:
        out = self.ffi.new(f"{self.prefix}MemPool_t *")
        self.call("DeviceGetDefaultMemPool" if default else "DeviceGetMemPool", out, device)
        return out[0]

    def mem_pool_attribute(self, pool: Any, attr: MemPoolAttr) -> int:
        member, ctype = MEM_POOL_ATTRIBUTES[attr]
        out = self.ffi.new(f"{ctype} *")
        self.call("MemPoolGetAttribute", pool, self.const(member), out)
        return int(out[0])

    def set_mem_pool_attribute(self, pool: Any, attr: MemPoolAttr, value: int) -> None:
        member, ctype = MEM_POOL_ATTRIBUTES[attr]
        try:
            cell = self.ffi.new(f"{ctype} *", value)
        except OverflowError:
            raise errors.InvalidValue(f"{self.prefix}MemPoolSetAttribute",
                                      detail=f"{value} does not fit the attribute's {ctype}") from None
        self.call("MemPoolSetAttribute", pool, self.const(member), cell)

    def malloc_async(self, size: int, pool: Any, stream: Any) -> Any:
        out = self.ffi.new("void **")
        if pool is None:
            self.call("MallocAsync", out, size, stream)
        else:
            self.call("MallocFromPoolAsync", out, size, pool, stream)
        return out[0]

    # ------------------------------------------------------------------ capture
    def capture_info(self, stream: Any) -> tuple[CaptureStatus, int, Any, list[tuple[Any, EdgeData]]]:
        raise NotImplementedError

    def update_capture_dependencies(self, stream: Any, deps: list[Any],
                                    edges: list[EdgeData] | None, set_: bool) -> None:
        raise NotImplementedError

    def begin_capture_to_graph(self, stream: Any, graph: Any, deps: list[Any],
                               edges: list[EdgeData] | None, mode: int) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------------ exec
    def instantiate(self, graph: Any, flags: int) -> Any:
        out = self.ffi.new(f"{self.prefix}GraphExec_t *")
        self.call("GraphInstantiateWithFlags", out, graph, flags)
        return out[0]

    def exec_update(self, exec_: Any, graph: Any) -> tuple[int, UpdateResult, Any]:
        """Return (rc, result, error node handle or NULL)."""
        raise NotImplementedError

    def device_name_and_arch(self, device: int) -> tuple[str, str, int]:
        """(name, architecture, total memory in bytes) of a device."""
        raise NotImplementedError

    # ------------------------------------------------------------------ several devices
    def device_properties(self, device: int) -> dict[str, Any]:
        """The fields of the runtime's device-properties struct that pygraphrt reports, by
        neutral name (``arch`` is the vendor's: ``sm_90``, ``gfx942``); the same field names
        on CUDA and HIP but for the architecture (:meth:`_arch_of`)."""
        ffi = self.ffi
        prop = ffi.new(f"{self.device_prop_type} *")
        self.call("GetDeviceProperties", prop, device)
        uuid = bytes(ffi.buffer(ffi.addressof(prop.uuid), ffi.sizeof(prop.uuid)))
        return {"name": ffi.string(prop.name).decode(errors="replace"), "arch": self._arch_of(prop),
                "compute_capability": (int(prop.major), int(prop.minor)),
                "total_memory": int(prop.totalGlobalMem), "multiprocessor_count": int(prop.multiProcessorCount),
                "uuid": uuid, "pci_bus_id": f"{int(prop.pciDomainID):04x}:{int(prop.pciBusID):02x}:"
                                           f"{int(prop.pciDeviceID):02x}.0"}

    def _arch_of(self, prop: Any) -> str:
        raise NotImplementedError

    def p2p_attribute(self, device: int, peer: int, name: str) -> int:
        """``DeviceGetP2PAttribute(name)`` from ``device`` to ``peer``."""
        out = self.ffi.new("int *")
        self.call("DeviceGetP2PAttribute", out, int(getattr(self.lib, self.p2p_attributes[name])), device, peer)
        return int(out[0])

    def pointer_device(self, address: int) -> int | None:
        """The device whose memory ``address`` is (``PointerGetAttributes``), or None for host
        memory, memory the runtime does not know, and addresses it refuses to describe."""
        attrs = self.ffi.new(f"{self.pointer_attributes_type} *")
        try:
            fn = self.fn("PointerGetAttributes")
        except errors.NotSupported:  # (a runtime without the query cannot tell)
            return None
        rc = fn(attrs, self.ffi.cast("void *", address))
        if rc:
            self.error(rc, self.prefix + "PointerGetAttributes")  # (clears the last-error slot)
            return None
        if int(attrs.type) not in (self.const("MemoryTypeDevice"), self.const("MemoryTypeManaged")):
            return None
        return int(attrs.device)

    def node_context_device(self, node: Any, node_type: NodeType) -> int | None:
        """The device of the context a graph node runs in, where the runtime tells (None here:
        :class:`.cuda.CudaVendor` asks CUDA >= 13.2)."""
        return None

    def access_descs(self, devices: list[int]) -> Any:
        """A C array of read-write access descriptors for ``devices`` (memory-access descriptors
        of graph allocations and pools: same fields on CUDA and HIP)."""
        arr = self.ffi.new(f"{self.mem_access_desc_type}[]", max(len(devices), 1))
        for i, d in enumerate(devices):
            arr[i].location.type = self.const("MemLocationTypeDevice")
            arr[i].location.id = d
            arr[i].flags = self.const("MemAccessFlagsProtReadWrite")
        return arr

    def mem_pool_access(self, pool: Any, device: int) -> str:
        """``"none"``, ``"read"`` or ``"read_write"``: ``device``'s access to ``pool``."""
        loc = self.ffi.new(f"{self.mem_access_desc_type} *")
        loc.location.type = self.const("MemLocationTypeDevice")
        loc.location.id = device
        out = self.ffi.new(f"{self.mem_access_flags_type} *")
        self.call("MemPoolGetAccess", out, pool, self.ffi.addressof(loc, "location"))
        names = {self.const("MemAccessFlagsProtNone"): "none", self.const("MemAccessFlagsProtRead"): "read",
                 self.const("MemAccessFlagsProtReadWrite"): "read_write"}
        return names.get(int(out[0]), str(int(out[0])))

    def set_mem_pool_access(self, pool: Any, device: int, access: str) -> None:
        flags = {"none": "MemAccessFlagsProtNone", "read": "MemAccessFlagsProtRead",
                 "read_write": "MemAccessFlagsProtReadWrite"}[access]
        desc = self.access_descs([device])
        desc[0].flags = self.const(flags)
        self.call("MemPoolSetAccess", pool, desc, 1)
