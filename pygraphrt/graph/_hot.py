"""The compiled hot methods of graphs: ``GraphExec.launch``, ``Graph.add_empty``, ``Graph.add_memset``,
``Graph.add_kernel`` and ``Graph.add_memcpy`` (1-D) in C.

In compiled mode (``PYGRAPHRT_FAST``, cffi API mode) the binding's extension holds a second
module with these methods as CPython method descriptors (``bindgen/hot_methods.c``,
generated into the extension by ``bindgen.fast``; ``pygraphrt._fast`` loads it).  When a
backend's first graph is made, :func:`install` puts them on the classes in place of the
Python methods, which stay their fallback: the C does only the common valid call -- plain
arguments, live handles of that backend, at most 16 dependencies, no edge data -- and hands
every other call, untouched, to the Python method, so errors and semantics are the Python
code's.  Objects of another backend (the simulator's) take the Python method too.

``Graph.add_kernel`` joins them with a backend's first kernel node (so that a program without
kernels never imports ``pygraphrt.kernels``): :func:`install_kernel_nodes`.  A kernel's first
node is always made by the Python method, which checks the signature against the compiled
kernel and then records the kernel's packed layout (:func:`pygraphrt.kernels._hot.c_layout`, in
the kernel's ``_node_layout``); later nodes of that kernel are packed and added in C when every argument is
a plain int, float or pointer (an int, or an open pygraphrt buffer) in range.

Nothing is installed in ABI mode, on the simulator, or for a method whose runtime function
the layer would not call through the same symbol (``ops.fn``).  :func:`status` says what is
active (``pygraphrt info``).

This module sits below the classes it puts methods on: graph/_graph hands it Graph, GraphExec
and the node classes (``_graph.install_hot``, with a backend's first graph), and graph/_kernel
and graph/_bulk, below Graph, use it.
"""

from __future__ import annotations

import threading
from typing import Any

from .. import _fast, errors

# (class name, method, the runtime API it calls): the C module's method table, in its order
HOT_METHODS = (("GraphExec", "launch", "GraphLaunch"),
               ("Graph", "add_empty", "GraphAddEmptyNode"),
               ("Graph", "add_memset", "GraphAddMemsetNode"),
               ("Graph", "add_kernel", "GraphAddKernelNode"),
               ("Graph", "add_memcpy", "GraphAddMemcpyNode1D"))
#: The index in HOT_METHODS of add_kernel, which install_kernel_nodes installs; the others install
#: with the backend's first graph.
_KERNEL = 3
_lock = threading.Lock()
#: Graph, GraphExec and the node classes the C binds to, by name: handed to :func:`install` by
#: graph/_graph (the same for every backend).
_classes: dict[str, type] = {}


def _check(backend: Any, hot: Any) -> tuple[tuple[str | None, ...], str | None]:
    """(per hot method: the API name its errors carry, or None where it stays Python; why
    none can run, or None).  A method runs in C where the library exports its function and
    ``ops.fn`` hands out that very function (not a per-thread variant, not refused)."""
    ops, lib, ffi = backend.ops, backend.lib, backend.ffi
    offered = hot.symbols()
    api: list[str | None] = []
    for _cls, method, name in HOT_METHODS:
        symbol = offered.get(method)
        try:
            same = symbol is not None and ops.fn(name) is getattr(lib, symbol)
        except (errors.GraphRTError, AttributeError, ffi.error):
            same = False
        api.append(ops.prefix + name if same else None)
    if not any(api):
        return tuple(api), "the runtime exports none of their functions"
    # cffi's conversions as the C uses them: a handle read and made again is the same cdata
    node_t = ffi.typeof(f"{ops.prefix}GraphNode_t")
    probe = ffi.cast(node_t, 0x5A5A0)
    back = hot.roundtrip(probe, node_t)
    if back != probe or ffi.typeof(back) is not node_t or hash(back) != hash(probe):
        return tuple(api), "cffi's pointer conversion did not round-trip"
    return tuple(api), None


def install(backend: Any, classes: dict[str, type] | None = None) -> None:
    """Make ``backend``'s graphs use the C hot methods, where it has them (once per backend;
    a no-op in ABI mode and on the simulator).  What happened is kept for :func:`status`.
    ``classes``: Graph, GraphExec, Node, EmptyNode, MemsetNode, MemcpyNode and KernelNode by
    name (graph/_graph's ``install_hot`` hands them; the calls after it may leave them out)."""
    if classes is not None:
        _classes.update(classes)
    hot = _fast.hot_module(backend)
    if hot is None or "_hot_methods" in backend.memo:
        return
    if not _classes:
        raise RuntimeError("graph/_hot.install: no classes yet (pygraphrt.graph._graph.install_hot hands them)")
    from ..device import DeviceBuffer, Stream

    with _lock:
        if "_hot_methods" in backend.memo:
            return
        api, why = _check(backend, hot)
        done: list[str] = []
        try:
            if why is None:
                ffi, prefix = backend.ffi, backend.ops.prefix
                ctypes = tuple(ffi.typeof(t) for t in (f"{prefix}GraphExec_t", f"{prefix}Stream_t",
                                                       f"{prefix}Graph_t", f"{prefix}GraphNode_t", "void *"))
                c = _classes
                bound = (c["Graph"], c["GraphExec"], Stream, c["Node"], c["EmptyNode"], c["MemsetNode"],
                         DeviceBuffer, c["MemcpyNode"])
                hot.bind(backend, backend.ops.error, api, ctypes, bound)
                _record_with_several_devices(backend, hot)
                for i, ((cls_name, method, _name), on) in enumerate(zip(HOT_METHODS, api)):
                    if i == _KERNEL:
                        continue  # (add_kernel: install_kernel_nodes)
                    _fast.put_method(hot, c[cls_name], method, method)
                    if on:
                        done.append(f"{cls_name}.{method}")
                # The runtime calls behind them (and Stream.is_capturing's) go straight to the
                # driver where the vendor names a driver function doing the same work.
                backend.memo["_direct_calls"] = _fast.set_direct(backend)
        except (TypeError, ValueError, RuntimeError) as exc:  # the classes changed under the C: stay Python
            why = f"{type(exc).__name__}: {exc}"
        backend.memo["_hot_methods"] = done if why is None else why


def _record_with_several_devices(backend: Any, hot: Any) -> None:
    """Once ``backend`` is used with several devices, the C adds hand each node they make to
    ``multidevice.record_node``, which records its device as the Python adds do, and
    ``add_kernel`` stays in C only where the kernel runs on the current device as itself and no
    pygraphrt buffer among its arguments is another device's memory (what ``multidevice``'s
    checks would pass; the C hands anything else to the Python method, which checks it).  Both
    are set in one call (``hot.several``): no add runs between them.  A one-device program
    records nothing."""
    from ..multidevice import record_node, when_several

    when_several(backend, lambda: hot.several(True, record_node), lambda: hot.several(False, None))


def install_kernel_nodes(backend: Any) -> bool:
    """Make ``backend``'s graphs add kernel nodes in C too (after :func:`install`; once per
    backend).  True when ``Graph.add_kernel`` runs in C for it."""
    hot = _fast.hot_module(backend)
    if hot is None:
        return False
    install(backend)
    done = backend.memo["_hot_methods"]
    if not isinstance(done, list):
        return False
    if "_hot_kernels" in backend.memo:  # tried once already
        return "Graph.add_kernel" in done
    from ..kernels._library import Kernel, Library
    from ..mempool import AsyncBuffer

    with _lock:
        if "_hot_kernels" not in backend.memo:
            api, why = _check(backend, hot)
            if why is None and api[_KERNEL] is None:
                why = "the runtime does not export its function"
            if why is None:
                try:
                    hot.bind_kernels((Kernel, Library, _classes["KernelNode"], AsyncBuffer))
                    _fast.put_method(hot, _classes["Graph"], "add_kernel", "add_kernel")
                    done.append("Graph.add_kernel")
                except (TypeError, ValueError, RuntimeError) as exc:
                    why = f"{type(exc).__name__}: {exc}"
            backend.memo["_hot_kernels"] = why or "installed"  # why it stays Python, if it does
    return "Graph.add_kernel" in done


def bulk_adder(backend: Any) -> Any:
    """The C loop of ``Graph.add_nodes`` (the hot module's ``add_nodes``) where ``backend``'s
    empty and memset nodes are added in C, else None."""
    return _fast.hot_module(backend).add_nodes if in_c(backend) else None


def node_maker(backend: Any) -> Any:
    """The hot module's ``make_nodes`` (a NodeList's node objects, a chunk at a time) where
    ``backend``'s empty and memset nodes are added in C, else None."""
    return _fast.hot_module(backend).make_nodes if in_c(backend) else None


def in_c(backend: Any) -> bool:
    """Whether ``backend``'s graphs add empty and memset nodes in C (installing first)."""
    if _fast.hot_module(backend) is None:
        return False
    install(backend)
    done = backend.memo["_hot_methods"]
    # (several devices in use: add_nodes records its nodes' devices by handle after the loop)
    return isinstance(done, list) and "Graph.add_empty" in done and "Graph.add_memset" in done


def status(backend: Any) -> str:
    """What runs the hot methods for ``backend``: ``"C (GraphExec.launch, ...)"`` or
    ``"Python (why)"`` (installing them first, as the first graph and kernel node would)."""
    why = _fast.no_hot_methods(backend)
    if why is not None:
        return f"Python ({why})"
    install(backend)
    install_kernel_nodes(backend)  # as the first kernel node would
    done = backend.memo["_hot_methods"]
    return f"C ({', '.join(done)})" if isinstance(done, list) else f"Python ({done})"


def direct_status(backend: Any) -> str:
    """Which driver functions the runtime calls go to first -- in compiled mode its C's
    (pygraphrt._fast.set_direct), in ABI mode the Python hot paths' (``Vendor.direct_fn``) --
    or ``"off (why)"``; installing the hot methods first, as the first graph would."""
    if str(getattr(backend, "ffi_mode", "")).startswith("abi"):
        return _abi_direct_status(backend.ops)
    if _fast.hot_module(backend) is None:
        return "off (the compiled hot methods only)"
    install(backend)
    return backend.memo.get("_direct_calls", "off (the hot methods stay Python)")


def _abi_direct_status(ops: Any) -> str:
    if _fast.direct_off():
        return "off (PYGRAPHRT_DIRECT=0)"
    done = []
    for api, slot in ops.direct_same_args.items():
        try:
            if ops.direct_fn(api) is not None:
                done.append(ops.direct_calls[slot])
        except errors.GraphRTError:  # the runtime lacks the call itself
            continue
    return ", ".join(done) if done else f"off (the {ops.name} driver offers none of them)"
