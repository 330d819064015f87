"""Stage 5 (optional): a cffi *API-mode* extension from the same IR -- the compiled fast path.

The ABI modules (:mod:`bindgen.emit`) call every function through libffi.  This
stage emits, for one header set, C source that cffi compiles into an extension
module whose calls are plain C calls:

* the binding's type declarations (the cdef itself is C: enums, records with the
  same alignment carriers, typedefs; packed records under ``#pragma pack(1)``);
* for each function one pointer ``_pgr_p_<symbol>`` and
  ``#define <symbol> (*_pgr_p_<symbol>)``, so the wrappers cffi generates call
  through the pointer;
* ``_pgr_bind(handle)``: fills the pointers with ``dlsym`` on the handle of the
  library pygraphrt already chose (the vendor library is still picked at run
  time; ``_pgr_open(path)`` gives that handle); a symbol the library lacks stays NULL
  and ``_pgr_bound(i)`` / ``_pgr_next_unbound(i)`` say so, so
  :mod:`pygraphrt._fast` refuses it exactly as ABI mode does (AttributeError at
  lookup, hence NotSupported naming the API) instead of calling NULL;
* ``_pgr_launch_packed(state, stream, packed)``: a kernel launch in one C call (the
  launch function is a pointer the layer hands over, so it serves the driver's
  ``cuLaunchKernel``, which is no export of the runtime, and ``hipModuleLaunchKernel``);
* a second Python module in the same shared library, ``<extension>_hot``: the layer's
  hottest methods (``GraphExec.launch``, ``Graph.add_empty``, ``Graph.add_memset``,
  ``Graph.add_kernel``, ``Graph.add_memcpy``, the spec loop of ``Graph.add_nodes``, and the plain kernel launch,
  ``Stream.launch`` / ``Kernel.launch``) as CPython method descriptors (:data:`HOT_METHODS_C`,
  ``hot_methods.c``, after the runtime calls :func:`_hot_calls` generates from the IR), which
  handle the common valid call in C and hand everything else to the Python method they replace
  (see :mod:`pygraphrt.graph._hot` and :mod:`pygraphrt.kernels._hot`).  Being in the same file, they call through the same
  pointers and use cffi's conversions through the same export table.

No vendor header or toolkit is needed to compile: the declarations come from the
generated cdef.  Its source is committed beside each binding (``fast_source.json``,
checked by ``bindgen --check`` like the rest); the compiled extension is never committed:
``python -m bindgen build-fast`` builds it into ``pygraphrt/_fastlib/`` (see README,
"Compiled fast path").
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import emit
from .ir import FuncPtr, Function, Module, Named, Pointer, declare

FASTLIB_DIR = Path(__file__).resolve().parent.parent / "pygraphrt" / "_fastlib"
# The runtime bindings the layer calls on its hot paths (the driver and NVRTC
# bindings stay ABI: they are not on a per-launch path).
FAST_BINDINGS = ("cuda12", "cuda13", "hip6", "hip7")

HELPERS_CDEF = """\
void *_pgr_open(const char *path);
int _pgr_bind(void *handle);
int _pgr_count(void);
const char *_pgr_name(int i);
int _pgr_bound(int i);
int _pgr_next_unbound(int i);
int _pgr_set_direct(int slot, void *fn);
const char *_pgr_abi_hash(void);
const char *_pgr_source_hash(void);
int _pgr_launch_packed(const uintptr_t *state, void *stream, const char *packed);
int _pgr_capture_status(void *stream);
int _pgr_add_nodes(void *graph, int n, const int *kinds, const int *dep_start, const int *dep_ref,
                   void *ext, void *params, size_t params_size, void *out, int *done);
"""

#: The runtime calls of the hot paths that may go straight to the driver (``_pgr_set_direct``'s
#: slots, in order): the graph launch, the empty-, memset- and kernel-node adds, the
#: capture-status query, the current-context query the memset add needs (the driver's
#: memset node names its context), and the current-device query of an add's ``device=``
#: (the device of the current context is the runtime's current device; none current, the
#: runtime answers).  pygraphrt._fast.DIRECT_SLOTS says the same (a test checks).
DIRECT_SLOTS = ("launch", "add_empty", "capture_status", "add_memset", "add_kernel", "current_context",
                "current_device")
#: The driver function each slot is generated for; the memset and kernel adds take the driver's
#: own parameter structs, laid out from the driver binding's IR (:func:`driver_struct`).  The
#: CUDA vendor table (pygraphrt._vendors.cuda, ``direct_calls``) hands over the same functions
#: (a test checks).
DIRECT_DRIVER = {"launch": "cuGraphLaunch", "add_empty": "cuGraphAddEmptyNode",
                 "capture_status": "cuStreamIsCapturing", "add_memset": "cuGraphAddMemsetNode",
                 "add_kernel": "cuGraphAddKernelNode", "current_context": "cuCtxGetCurrent",
                 "current_device": "cuCtxGetDevice"}
#: The driver binding whose IR lays out those structs, by runtime binding.
DRIVER_BINDINGS = {"cuda12": "cudadrv12", "cuda13": "cudadrv13"}

#: The most kernel parameters ``_pgr_launch_packed`` takes (its argument array is on the C stack).
LAUNCH_MAX_PARAMS = 64
#: Bytes before the parameters in ``_pgr_launch_packed``'s buffer: grid x/y/z, block x/y/z and
#: dynamic shared memory as seven ``unsigned int``, then padding (a multiple of any alignment).
LAUNCH_HEADER = 32

# One C call per kernel launch (pygraphrt.kernels._hot): the launch function (cuLaunchKernel, or
# hipModuleLaunchKernel: the same shape), the kernel and the parameter offsets live in a state
# array made once per kernel; each launch passes the stream and one buffer that struct packed
# (dims, shared memory, parameter values), whose parameters' addresses become the argument array.
LAUNCH_HELPER = f"""\
typedef int (*_pgr_launch_fn)(void *, unsigned int, unsigned int, unsigned int, unsigned int,
                              unsigned int, unsigned int, unsigned int, void *, void **, void **);
/* state: [launch function, kernel handle, parameter count n, n offsets into the parameters] */
static int _pgr_launch_packed(const uintptr_t *state, void *stream, const char *packed) {{
    void *argv[{LAUNCH_MAX_PARAMS}];
    unsigned int d[7];
    uintptr_t i, n = state[2];
    if (n > {LAUNCH_MAX_PARAMS}) return -1;
    memcpy(d, packed, sizeof d);
    for (i = 0; i < n; i++) argv[i] = (void *)(packed + {LAUNCH_HEADER} + state[3 + i]);
    return ((_pgr_launch_fn)state[0])((void *)state[1], d[0], d[1], d[2], d[3], d[4], d[5], d[6],
                                      stream, n ? argv : NULL, NULL);
}}
"""

#: What ``_pgr_capture_status`` returns when the runtime lacks ``StreamIsCapturing``.
NO_FUNCTION = -0x7FFFFFFF

# The calls straight to the driver: where the layer hands over the driver's function doing what
# a runtime call does (CUDA: cuGraphLaunch for cudaGraphLaunch, ...; the memset and kernel adds
# with the driver's own structs, :func:`driver_struct`), the call goes to the driver first --
# skipping the runtime's own work, some 0.1-0.35 us a call on an H100 -- and a call the driver
# refuses is made again through the runtime, so the runtime's lazy context set-up, its error
# codes and its last error are what the caller gets.
DIRECT_TABLE = [
    "/* -- calls straight to the driver (see bindgen/fast.py, DIRECT_TABLE) -- */",
    f"#define _PGR_DIRECT_N {len(DIRECT_SLOTS)}",
    "static void *_pgr_direct[_PGR_DIRECT_N];",
    "static int _pgr_set_direct(int slot, void *fn) {",
    "    if (slot < 0 || slot >= _PGR_DIRECT_N) return -1;",
    "    _pgr_direct[slot] = fn;",
    "    return 0;",
    "}",
]

# C types a driver struct's fields may have in :func:`driver_struct` (after typedefs):
# scalars as spelled, and any pointer as ``void *``.
_FLAT_SCALARS = {"char", "signed char", "unsigned char", "short", "unsigned short", "int", "unsigned int",
                 "long", "unsigned long", "long long", "unsigned long long", "size_t", "float", "double"}


def _through_typedefs(t: object, module: Module) -> object:
    """``t`` with ``module``'s typedefs resolved (at most 8 deep)."""
    seen = 0
    while isinstance(t, Named) and t.name in module.typedefs and seen < 8:
        t, seen = module.typedefs[t.name].type, seen + 1
    return t


def _flat_type(t: object, module: Module) -> Named | Pointer | None:
    t = _through_typedefs(t, module)
    if isinstance(t, (Pointer, FuncPtr)):
        return Pointer(Named("void"))
    if isinstance(t, Named) and t.name in _FLAT_SCALARS:
        return Named(t.name)
    return None


@dataclass(frozen=True)
class DriverStruct:
    """A driver parameter struct as the extension declares it: ``struct <c_name>`` with the
    driver header's fields in order, each a scalar or ``void *`` (so no driver type name is
    needed beside the runtime's declarations)."""
    c_name: str
    fields: tuple[tuple[Named | Pointer, str], ...]  # (type, field name)

    def declaration(self) -> list[str]:
        return [f"struct {self.c_name} {{", *(f"    {declare(t, n)};" for t, n in self.fields), "};"]


def driver_struct(fn: Function, index: int, module: Module) -> DriverStruct | None:
    """The struct driver function ``fn`` takes by pointer as parameter ``index``, from the driver
    binding's IR (``module``), flattened for :class:`DriverStruct`; None where it is opaque or a
    field is not a scalar or pointer (an array, a nested record, a bit field): no direct call."""
    if index >= len(fn.params):
        return None
    ptr = fn.params[index].type
    if not isinstance(ptr, Pointer):
        return None
    target = _through_typedefs(ptr.target, module)
    rec = module.records.get(target.name) if isinstance(target, Named) else None
    if rec is None or rec.fields is None or rec.kind != "struct" or rec.packed or rec.align:
        return None
    fields = []
    for f in rec.fields:
        c_type = _flat_type(f.type, module)
        if c_type is None or not f.name or f.bit_width is not None:
            return None
        fields.append((c_type, f.name))
    return DriverStruct("_pgr_drv_" + fn.symbol, tuple(fields))


def _direct_first(slot: str, fn_type: str, args: str, result: str = "0") -> list[str]:
    """C lines that make a call through the driver function in direct slot ``slot`` (typed
    ``fn_type``, given ``args``) and return ``result`` where it succeeds; the runtime's call,
    which the caller writes next, follows where the slot is empty or the driver refused."""
    i = DIRECT_SLOTS.index(slot)
    return [f"    if (_pgr_direct[{i}] != NULL &&",
            f"        (({fn_type})_pgr_direct[{i}])({args}) == 0)",
            f"        return {result};"]


#: The C of the hot methods' module (CPython API; binding-independent: it calls the
#: ``_pgr_hot_*`` functions :func:`_hot_calls` generates before it).
HOT_METHODS_C = Path(__file__).resolve().parent / "hot_methods.c"
#: The runtime function each hot method calls, by API name for CUDA and HIP, in the order of
#: hot_methods.c's method table.
HOT_APIS = (("launch", ("cudaGraphLaunch", "hipGraphLaunch")),
            ("add_empty", ("cudaGraphAddEmptyNode", "hipGraphAddEmptyNode")),
            ("add_memset", ("cudaGraphAddMemsetNode", "hipGraphAddMemsetNode")),
            ("add_kernel", ("cudaGraphAddKernelNode", "hipGraphAddKernelNode")),
            ("add_memcpy", ("cudaGraphAddMemcpyNode1D", "hipGraphAddMemcpyNode1D")))


def _helpers(functions: dict[str, Function]) -> list[str]:
    """C helpers the layer's hot paths call instead of a runtime function plus Python work.

    ``_pgr_capture_status(stream)``: ``<prefix>StreamIsCapturing`` returning the status
    itself (>= 0), or minus the error code, or NO_FUNCTION when the library lacks it --
    one argument and no out-cell for ``Stream.is_capturing``.  The status is written
    through a zeroed, suitably aligned cell, so no vendor type name is needed.
    """
    by_api = {fn.api_name: fn for fn in functions.values()}
    cap = by_api.get("cudaStreamIsCapturing") or by_api.get("hipStreamIsCapturing")
    lines = ["/* -- helpers for the layer's hot paths (see bindgen/fast.py) -- */"]
    if cap is None:
        lines.append(f"static int _pgr_capture_status(void *stream) {{ (void)stream; return {NO_FUNCTION}; }}")
    else:
        lines += [
            "static int _pgr_capture_status(void *stream) {",
            "    long long cell = 0;",
            f"    int rc;",
            f"    if (_pgr_p_{cap.symbol} == NULL) return {NO_FUNCTION};",
            *_direct_first("capture_status", "int (*)(void *, void *)", "stream, (void *)&cell",
                           "*(int *)&cell"),
            "    cell = 0;",
            f"    rc = (int){cap.symbol}(stream, (void *)&cell);",
            "    return rc ? -rc : *(int *)&cell;",
            "}",
        ]
    lines += _add_nodes_helper(by_api)
    return lines + [""]


def _add_nodes_helper(by_api: dict[str, Function]) -> list[str]:
    """``_pgr_add_nodes``: add ``n`` empty (kind 0) or memset (kind 1) nodes in one call.

    Node ``i``'s dependencies are ``dep_ref[dep_start[i] .. dep_start[i+1]-1]``: ``r >= 0``
    is node ``r`` of this call (``out[r]``), ``r < 0`` the handle ``ext[-r-1]``.  The
    parameters of the ``m``-th memset node of the call are at ``params + m * params_size``.  Handles go to ``out``; ``*done`` is the
    number of nodes made; the result is the first failing call's error code (0: all made),
    or NO_FUNCTION when the library lacks the function a node needs.  Handles and
    parameter structs travel as ``void *``: no vendor type name is needed.
    """
    empty = by_api.get("cudaGraphAddEmptyNode") or by_api.get("hipGraphAddEmptyNode")
    memset = by_api.get("cudaGraphAddMemsetNode") or by_api.get("hipGraphAddMemsetNode")
    head = ("static int _pgr_add_nodes(void *graph, int n, const int *kinds, const int *dep_start, "
            "const int *dep_ref,\n                          void *ext, void *params, size_t params_size, "
            "void *out, int *done) {")
    if empty is None or memset is None:
        return [head, f"    *done = 0; return {NO_FUNCTION};", "}"]
    return [
        head,
        "    void **o = (void **)out, **e = (void **)ext, *stack[16], **deps = stack;",
        "    int i, k, rc = 0, most = 0;",
        "    size_t m = 0;",
        "    for (i = 0; i < n; i++)",
        "        if (dep_start[i + 1] - dep_start[i] > most) most = dep_start[i + 1] - dep_start[i];",
        "    if (most > 16 && (deps = (void **)malloc(sizeof(void *) * (size_t)most)) == NULL) {",
        "        *done = 0;",
        "        return 2;  /* out of memory: the runtimes' MemoryAllocation code */",
        "    }",
        "    for (i = 0; i < n; i++) {",
        "        int nd = dep_start[i + 1] - dep_start[i];",
        "        for (k = 0; k < nd; k++) {",
        "            int r = dep_ref[dep_start[i] + k];",
        "            deps[k] = r >= 0 ? o[r] : e[-r - 1];",
        "        }",
        "        if (kinds[i] == 0) {",
        f"            if (_pgr_p_{empty.symbol} == NULL) {{ rc = {NO_FUNCTION}; break; }}",
        f"            rc = (int){empty.symbol}((void *)&o[i], graph, (void *)deps, (size_t)nd);",
        "        } else {",
        f"            if (_pgr_p_{memset.symbol} == NULL) {{ rc = {NO_FUNCTION}; break; }}",
        f"            rc = (int){memset.symbol}((void *)&o[i], graph, (void *)deps, (size_t)nd,",
        "                                 (void *)((char *)params + m * params_size));",
        "            m++;",
        "        }",
        "        if (rc) break;",
        "    }",
        "    if (deps != stack) free(deps);",
        "    *done = i;",
        "    return rc;",
        "}",
    ]


def _call_args(fn: Function, c_args: list[str]) -> str:
    """``c_args`` (untyped ``void *`` / size values) cast to the parameters of ``fn``."""
    return ", ".join(f"({declare(p.type)}){a}" for p, a in zip(fn.params, c_args))


def _param_struct(fn: Function, module: Module) -> Named | None:
    """The parameter struct a ``GraphAdd*Node`` function takes by pointer (its last parameter),
    if its layout is in the binding (not opaque): C fills it field by field, as the layer does
    by name."""
    last = fn.params[-1].type if fn.params else None
    if not isinstance(last, Pointer) or not isinstance(last.target, Named):
        return None
    name = last.target.name
    target = _through_typedefs(Named(name), module)
    rec = module.records.get(target.name) if isinstance(target, Named) else None
    if rec is None or rec.fields is None or emit.record_cdef(rec)[1] is not None:
        return None
    return Named(name)


def _enum_value(module: Module, member: str) -> int | None:
    """The value of enumerator ``member`` in the binding's enums (None: not declared)."""
    for enum in module.enums.values():
        for name, value in enum.members:
            if name == member:
                return value
    return None


def _add_with_struct(fn: Function, params: Named, fields: list[tuple[str, str]]) -> list[str]:
    """The body of a hot ``GraphAdd*Node`` call: its parameter struct on the stack, zeroed,
    ``fields`` (field, C value) set by name, then ``fn(out, graph, deps, n, &params)``."""
    return [f"    {declare(params, 'params')};",
            "    memset(&params, 0, sizeof params);",
            *(f"    params.{field} = {value};" for field, value in fields),
            f"    return (int){fn.symbol}({_call_args(fn, ['out', 'graph', 'deps', 'n', '&params'])});"]


# The driver structs' fields the direct memset and kernel adds set (C values by field name):
# the header's field names, checked against the driver IR (a struct with other fields, e.g.
# an older layout, gets no direct call).  A library kernel (a CUkernel: form 1) is the ``kern``
# field, ``ctx`` NULL meaning the current context (the layer adds a foreign CUfunction's nodes
# through the driver in Python: they never reach this call).
_DRIVER_MEMSET_FIELDS = {"dst": "(uintptr_t)dst", "pitch": "pitch", "value": "value",
                         "elementSize": "element_size", "width": "width", "height": "height"}
_DRIVER_KERNEL_FIELDS = {"func": "NULL", "gridDimX": "dims[0]", "gridDimY": "dims[1]",
                         "gridDimZ": "dims[2]", "blockDimX": "dims[3]", "blockDimY": "dims[4]",
                         "blockDimZ": "dims[5]", "sharedMemBytes": "dims[6]", "kernelParams": "(void *)argv",
                         "extra": "NULL", "kern": "func", "ctx": "NULL"}


def _direct_structs(driver: tuple[Module, dict[str, Function]] | None) -> dict[str, DriverStruct]:
    """The direct adds' driver structs (slot -> struct) the driver binding's IR lays out as
    the fields above need; none without a driver binding (HIP)."""
    if driver is None:
        return {}
    module, functions = driver
    out = {}
    for slot, index, names in (("add_memset", 4, _DRIVER_MEMSET_FIELDS), ("add_kernel", 4, _DRIVER_KERNEL_FIELDS)):
        fn = functions.get(DIRECT_DRIVER[slot])
        st = driver_struct(fn, index, module) if fn is not None else None
        if st is not None and {n for _, n in st.fields} == set(names):
            out[slot] = st
    return out


def _direct_add(slot: str, st: DriverStruct, fn_type: str, args: str, guard: str = "1") -> list[str]:
    """C lines making the add of direct slot ``slot`` with driver struct ``st`` (``dp``), filled
    by field name, where ``guard`` holds; returning 0 where the driver made the node (else the
    runtime's call, which follows, makes it or reports the error)."""
    i = DIRECT_SLOTS.index(slot)
    values = _DRIVER_MEMSET_FIELDS if slot == "add_memset" else _DRIVER_KERNEL_FIELDS
    return [f"    if (_pgr_direct[{i}] != NULL && ({guard})) {{",
            f"        struct {st.c_name} dp;",
            "        memset(&dp, 0, sizeof dp);",
            *(f"        dp.{name} = {values[name]};" for _, name in st.fields),
            f"        if ((({fn_type})_pgr_direct[{i}])({args}) == 0) return 0;",
            "    }"]


def _hot_calls(binding: str, functions: dict[str, Function], module: Module,
               driver: tuple[Module, dict[str, Function]] | None = None) -> list[str]:
    """The C before :data:`HOT_METHODS_C`: its module's name and init function, and the runtime
    calls of the hot methods with untyped arguments -- ``_pgr_hot_launch(exec, stream)``,
    ``_pgr_hot_add_empty(out, graph, deps, n)``, ``_pgr_hot_add_memset(out, graph, deps, n,
    dst, value, element_size, width, height, pitch)``, ``_pgr_hot_add_kernel(out, graph, deps,
    n, func, dims, argv)`` (its parameter struct filled by field name, as the layer does),
    ``_pgr_hot_add_memcpy(out, graph, deps, n, dst, src, count)`` (MemcpyDefault's value from the IR) --
    each cast to the IR's prototype and
    made through the pointer ``_pgr_bind`` filled; ``_pgr_hot_bound(m)`` says whether the
    library exports method ``m``'s function (never called through NULL)."""
    by_api = {fn.api_name: fn for fn in functions.values()}
    found: list[Function | None] = [next((by_api[a] for a in apis if a in by_api), None) for _, apis in HOT_APIS]
    launch, empty, memset, kernel, memcpy = found
    params = _param_struct(memset, module) if memset is not None else None
    if memset is not None and params is None:
        found[2] = memset = None  # its struct is opaque here: add_memset stays Python
    kparams = _param_struct(kernel, module) if kernel is not None else None
    if kernel is not None and kparams is None:
        found[3] = kernel = None
    copy_kind = _enum_value(module, memcpy.api_name[:-len("GraphAddMemcpyNode1D")] + "MemcpyDefault") \
        if memcpy is not None else None
    if copy_kind is None:
        found[4] = memcpy = None  # no MemcpyDefault to name: add_memcpy stays Python
    direct = _direct_structs(driver)
    short = module_name(binding).rsplit(".", 1)[-1] + "_hot"
    lines = [
        "/* -- the hot methods' runtime calls (see bindgen/fast.py, _hot_calls) -- */",
        *(line for st in direct.values() for line in st.declaration()),
        f'#define _PGR_HOT_NAME "{module_name(binding)}_hot"',
        f"#define _PGR_HOT_INIT PyInit_{short}",
        f"static const char *const _pgr_hot_symbols[{len(HOT_APIS)}] = {{"
        + ", ".join(f'"{fn.symbol}"' if fn else "NULL" for fn in found) + "};",
        "static int _pgr_hot_bound(int m) {",
        "    switch (m) {",
    ]
    lines += [f"    case {i}: return _pgr_p_{fn.symbol} != NULL;" for i, fn in enumerate(found) if fn]
    lines += ["    default: return 0;", "    }", "}"]
    lines.append("static int _pgr_hot_launch(void *exec, void *stream) {")
    if launch:
        lines += [*_direct_first("launch", "int (*)(void *, void *)", "exec, stream"),
                  f"    return (int){launch.symbol}({_call_args(launch, ['exec', 'stream'])});"]
    else:
        lines.append("    (void)exec; (void)stream; return -1;")
    lines += ["}", "static int _pgr_hot_add_empty(void **out, void *graph, void **deps, size_t n) {"]
    if empty:
        lines += [*_direct_first("add_empty", "int (*)(void **, void *, void **, size_t)", "out, graph, deps, n"),
                  f"    return (int){empty.symbol}({_call_args(empty, ['out', 'graph', 'deps', 'n'])});"]
    else:
        lines.append("    (void)out; (void)graph; (void)deps; (void)n; return -1;")
    lines += ["}",
              "static int _pgr_hot_add_memset(void **out, void *graph, void **deps, size_t n, void *dst,",
              "                               unsigned int value, unsigned int element_size, size_t width,",
              "                               size_t height, size_t pitch) {"]
    if memset is not None and params is not None:
        if "add_memset" in direct:
            # the driver's memset node runs in the context it names: the current one (none
            # current: the runtime's call, which makes its device's primary context current)
            c = DIRECT_SLOTS.index("current_context")
            lines += ["    void *ctx = NULL;",
                      *_direct_add("add_memset", direct["add_memset"],
                                   "int (*)(void **, void *, void **, size_t, const void *, void *)",
                                   "out, graph, deps, n, &dp, ctx",
                                   f"_pgr_direct[{c}] != NULL && ((int (*)(void **))_pgr_direct[{c}])(&ctx) == 0 "
                                   "&& ctx != NULL")]
        lines += _add_with_struct(memset, params, [("dst", "dst"), ("value", "value"), ("elementSize", "element_size"),
                                                   ("width", "width"), ("height", "height"), ("pitch", "pitch")])
    else:
        lines += ["    (void)out; (void)graph; (void)deps; (void)n; (void)dst; (void)value;",
                  "    (void)element_size; (void)width; (void)height; (void)pitch;",
                  "    return -1;"]
    lines += ["}",
              "/* dims: grid x, y, z, block x, y, z, dynamic shared memory bytes; form: 1 a library",
              " * kernel (cudaKernel_t), 0 another handle (the runtime's call only) */",
              "static int _pgr_hot_add_kernel(void **out, void *graph, void **deps, size_t n, void *func,",
              "                               int form, const unsigned int *dims, void **argv) {"]
    if kernel is not None and kparams is not None:
        if "add_kernel" in direct:
            lines += _direct_add("add_kernel", direct["add_kernel"],
                                 "int (*)(void **, void *, void **, size_t, const void *)",
                                 "out, graph, deps, n, &dp", "form == 1")
        else:
            lines.append("    (void)form;")
        lines += _add_with_struct(kernel, kparams, [
            ("func", "func"), ("gridDim.x", "dims[0]"), ("gridDim.y", "dims[1]"), ("gridDim.z", "dims[2]"),
            ("blockDim.x", "dims[3]"), ("blockDim.y", "dims[4]"), ("blockDim.z", "dims[5]"),
            ("sharedMemBytes", "dims[6]"), ("kernelParams", "argv"), ("extra", "NULL")])
    else:
        lines += ["    (void)out; (void)graph; (void)deps; (void)n; (void)func; (void)form; (void)dims; (void)argv;",
                  "    return -1;"]
    lines += ["}",
              "/* a 1-D copy of `count` bytes, MemcpyDefault (the runtime tells the memory by address) */",
              "static int _pgr_hot_add_memcpy(void **out, void *graph, void **deps, size_t n, void *dst, void *src,",
              "                               size_t count) {"]
    if memcpy is not None:
        lines.append(f"    return (int){memcpy.symbol}("
                     f"{_call_args(memcpy, ['out', 'graph', 'deps', 'n', 'dst', 'src', 'count', str(copy_kind)])});")
    else:
        lines += ["    (void)out; (void)graph; (void)deps; (void)n; (void)dst; (void)src; (void)count;",
                  "    return -1;"]
    lines.append("}")
    # The current device, for an add's device= (hot_methods.c, _pgr_device_here): -1 where the
    # library lacks the function (the C then hands the call to Python).  The driver's
    # cuCtxGetDevice answers first where handed over (why: CudaVendor.direct_calls); with no
    # context current it refuses, and the runtime's answer stands.
    get_device = by_api.get("cudaGetDevice") or by_api.get("hipGetDevice")
    lines.append("static int _pgr_hot_get_device(int *device) {")
    if get_device is not None:
        lines += [f"    if (_pgr_p_{get_device.symbol} == NULL) return -1;",
                  *_direct_first("current_device", "int (*)(int *)", "device"),
                  f"    return (int){get_device.symbol}({_call_args(get_device, ['device'])});"]
    else:
        lines.append("    (void)device; return -1;")
    lines.append("}")
    return lines


def hot_section(binding: str, functions: dict[str, Function], module: Module,
                driver: tuple[Module, dict[str, Function]] | None = None) -> list[str]:
    """The hot methods' module (:func:`_hot_calls` and :data:`HOT_METHODS_C`), or nothing for a
    binding without any of their functions (the golden sample)."""
    by_api = {fn.api_name for fn in functions.values()}
    if not any(a in by_api for _, apis in HOT_APIS for a in apis):
        return []
    return ["", *_hot_calls(binding, functions, module, driver), "", _hot_methods_text()]


def _hot_methods_text() -> str:
    """:data:`HOT_METHODS_C` as a source embeds it (and :func:`stale_hot_methods` looks for it)."""
    return HOT_METHODS_C.read_text().rstrip("\n")


def stale_hot_methods(src: FastSource) -> bool:
    """True when ``src`` carries the hot methods' module and ``bindgen/hot_methods.c`` (where
    this checkout has it) is not the text embedded there: the file was edited after ``bindgen
    generate`` wrote the source, and a build would compile the old code."""
    if "_PGR_HOT_INIT" not in src.c_source or not HOT_METHODS_C.exists():
        return False
    return _hot_methods_text() not in src.c_source


def module_name(binding: str) -> str:
    return f"pygraphrt._fastlib._{binding}"


def abi_hash(ffi_module_text: str | bytes) -> str:
    """What ties an extension to the ABI module it mirrors: sha256 of ``_ffi.py``."""
    data = ffi_module_text.encode() if isinstance(ffi_module_text, str) else ffi_module_text
    return hashlib.sha256(data).hexdigest()


@dataclass
class FastSource:
    name: str  # the extension's module name
    cdef: str  # given to cffi (the ABI cdef + the helpers)
    cdef_packed: str
    c_source: str  # given to set_source


#: The committed file (beside each binding's ``_ffi.py``) that holds a :class:`FastSource`.
SOURCE_FILE = "fast_source.json"
# (where _pgr_source_hash's value goes, once the source around it is hashed)
_SOURCE_HASH_SLOT = "@PGR_SOURCE_HASH@"


def source_json(src: FastSource) -> str:
    """The committed form of ``src`` (stable: keys sorted, one field per line)."""
    import json

    return json.dumps({"name": src.name, "cdef": src.cdef, "cdef_packed": src.cdef_packed,
                       "c_source": src.c_source}, indent=1, sort_keys=True) + "\n"


def load_source(path: Path) -> FastSource:
    """The :class:`FastSource` committed at ``path``."""
    import json

    d = json.loads(path.read_text())
    return FastSource(d["name"], d["cdef"], d["cdef_packed"], d["c_source"])


def _symbols(functions: dict[str, Function]) -> list[Function]:
    seen: dict[str, Function] = {}
    for fn in functions.values():
        seen.setdefault(fn.symbol, fn)
    return list(seen.values())


def _pointer_decl(fn: Function) -> str:
    ftype = FuncPtr(fn.result, tuple(p.type for p in fn.params), fn.variadic)
    return f"static {declare(Pointer(ftype), '_pgr_p_' + fn.symbol)};"


def c_source(binding: str, types: list[str], packed: str, functions: dict[str, Function],
             hash_: str, module: Module | None = None,
             driver: tuple[Module, dict[str, Function]] | None = None) -> str:
    """The C text cffi compiles (``ffi.set_source(name, <this>)``); with the binding's ``module``,
    the hot methods' module too (:func:`hot_section`; ``driver``: the driver binding's IR, module
    and functions, for the direct adds' structs)."""
    fns = _symbols(functions)
    lines = [
        f"/* {binding}: compiled fast path generated by python -m bindgen build-fast; do not edit. */",
        "#include <stddef.h>",
        "#include <stdint.h>",
        "#include <stdlib.h>",
        "#include <string.h>",
        "#ifdef _WIN32",
        "#include <windows.h>",
        "#define _PGR_SYM(h, n) ((void *)GetProcAddress((HMODULE)(h), (n)))",
        "#else",
        "#include <dlfcn.h>",
        "#define _PGR_SYM(h, n) dlsym((h), (n))",
        "#endif",
        "",
        "/* -- the binding's declarations (its cdef) -- */",
        *types,
    ]
    if packed:
        lines += ["#pragma pack(push, 1)", packed.rstrip("\n"), "#pragma pack(pop)"]
    lines += ["", "/* -- one pointer per function, filled by _pgr_bind() -- */"]
    for fn in fns:
        lines.append(_pointer_decl(fn))
        lines.append(f"#define {fn.symbol} (*_pgr_p_{fn.symbol})")
    lines += ["", "static const char *const _pgr_names[] = {"]
    lines += [f'    "{fn.symbol}",' for fn in fns] or ['    ""']
    lines += ["};", "static void **const _pgr_slots[] = {"]
    lines += [f"    (void **)&_pgr_p_{fn.symbol}," for fn in fns] or ["    NULL"]
    lines += [
        "};",
        f"#define _PGR_N {len(fns)}",
        "",
        "/* The library at `path`, which pygraphrt has loaded already: the same handle, its count",
        " * raised and never lowered, as ffi.dlopen's (here, so that the layer needs no ctypes). */",
        "static void *_pgr_open(const char *path) {",
        "#ifdef _WIN32",
        "    return (void *)LoadLibraryA(path);",
        "#else",
        "    return dlopen(path, RTLD_NOW | RTLD_LOCAL);",
        "#endif",
        "}",
        "static int _pgr_bind(void *handle) {",
        "    int i, n = 0;",
        "    for (i = 0; i < _PGR_N; i++) {",
        "        *_pgr_slots[i] = handle ? _PGR_SYM(handle, _pgr_names[i]) : NULL;",
        "        n += *_pgr_slots[i] != NULL;",
        "    }",
        "    return n;",
        "}",
        "static int _pgr_count(void) { return _PGR_N; }",
        "static const char *_pgr_name(int i) { return i >= 0 && i < _PGR_N ? _pgr_names[i] : NULL; }",
        "static int _pgr_bound(int i) { return i >= 0 && i < _PGR_N && *_pgr_slots[i] != NULL; }",
        "/* The first index >= i whose function the library lacks, or -1: the layer lists the",
        " * missing names without a call per function. */",
        "static int _pgr_next_unbound(int i) {",
        "    for (; i >= 0 && i < _PGR_N; i++)",
        "        if (*_pgr_slots[i] == NULL) return i;",
        "    return -1;",
        "}",
        f'static const char *_pgr_abi_hash(void) {{ return "{hash_}"; }}',
        "/* The sha256 of this extension's whole source (cdef and C, this line's value left out):",
        " * the binding package's FAST_SHA256, checked at load, so that an extension built from",
        " * an older hot_methods.c or generator is refused as stale. */",
        f'static const char *_pgr_source_hash(void) {{ return "{_SOURCE_HASH_SLOT}"; }}',
        "",
        *DIRECT_TABLE,
        "",
        LAUNCH_HELPER,
        *_helpers(functions),
        *(hot_section(binding, functions, module, driver) if module is not None else []),
    ]
    return "\n".join(lines)


def fast_source(binding: str, module: Module, functions: dict[str, Function], hash_: str,
                driver: tuple[Module, dict[str, Function]] | None = None) -> FastSource:
    """Everything cffi needs to compile the extension of one binding, from its IR (and, for the
    calls straight to the driver, the driver binding's: ``driver``, its module and functions)."""
    types, decls, packed, _omitted = emit.build_cdef_parts(module, functions)
    cdef = "\n".join(types + decls) + "\n" + HELPERS_CDEF
    c = c_source(binding, types, packed, functions, hash_, module, driver)
    digest = hashlib.sha256("\0".join([cdef, packed, c]).encode()).hexdigest()
    return FastSource(module_name(binding), cdef, packed, c.replace(_SOURCE_HASH_SLOT, digest, 1))


def source_hash(src: FastSource) -> str:
    """What ``src``'s extension returns from ``_pgr_source_hash()`` (the binding package's
    ``FAST_SHA256``)."""
    m = re.search(r'_pgr_source_hash\(void\) \{ return "([0-9a-f]{64})"; \}', src.c_source)
    if m is None:
        raise ValueError(f"{src.name}: no _pgr_source_hash in its C source")
    return m.group(1)


def make_api_ffi(src: FastSource):
    import cffi

    ffi = cffi.FFI()
    ffi.cdef(src.cdef)
    if src.cdef_packed:
        ffi.cdef(src.cdef_packed, packed=True)
    # The full C API, not cffi's default limited one: the hot methods' module (hot_methods.c)
    # uses CPython's vectorcall and member descriptors; the extension is built per
    # interpreter anyway (its file name carries the version tag).
    ffi.set_source(src.name, src.c_source, extra_compile_args=["-O2", "-w"],
                   define_macros=[("_CFFI_NO_LIMITED_API", None)],
                   libraries=[] if sys.platform == "win32" else ["dl"])
    return ffi


def compile_source(src: FastSource, out_dir: Path, build_dir: Path | None = None,
                   verbose: bool = False) -> Path:
    """Compile ``src`` and put the extension into ``out_dir``; returns its path."""
    import contextlib
    import io

    own = build_dir is None
    build = Path(tempfile.mkdtemp(prefix="pygraphrt-fast-")) if own else build_dir
    try:
        ffi = make_api_ffi(src)
        sink = contextlib.nullcontext() if verbose else contextlib.redirect_stdout(io.StringIO())
        with sink:
            built = Path(ffi.compile(tmpdir=str(build), verbose=verbose))
        out_dir.mkdir(parents=True, exist_ok=True)
        target = out_dir / built.name
        tmp = target.with_name(target.name + ".tmp")
        shutil.copyfile(built, tmp)
        os.replace(tmp, target)  # atomic: a process importing it never sees half a file
        _stamp_path(src, out_dir).write_text(_stamp(src))
        return target
    finally:
        if own:
            shutil.rmtree(build, ignore_errors=True)


def have_compiler() -> str | None:
    """A C compiler's path (``CC`` or cc/gcc/clang), or None."""
    cc = os.environ.get("CC")
    if cc:
        return shutil.which(cc.split()[0])
    return next((p for p in map(shutil.which, ("cc", "gcc", "clang")) if p), None)


def _stamp(src: FastSource) -> str:
    import cffi

    key = "\0".join([src.cdef, src.cdef_packed, src.c_source, sys.version, cffi.__version__])
    return hashlib.sha256(key.encode()).hexdigest() + "\n"


def _stamp_path(src: FastSource, out_dir: Path) -> Path:
    return out_dir / (src.name.rsplit(".", 1)[-1] + ".stamp")


def up_to_date(src: FastSource, out_dir: Path) -> Path | None:
    """The built extension of ``src`` in ``out_dir`` if it was built from this very source
    by this interpreter and cffi (``build-fast`` then skips it), else None."""
    import importlib.machinery

    stamp = _stamp_path(src, out_dir)
    ext = out_dir / (src.name.rsplit(".", 1)[-1] + importlib.machinery.EXTENSION_SUFFIXES[0])
    if ext.exists() and stamp.exists() and stamp.read_text() == _stamp(src):
        return ext
    return None
