"""Kernel nodes: adding them with typed arguments, reading them back, changing them.

The graph, node and exec classes delegate here so that kernel-node logic lives
in one place.  Argument buffers (and the objects their pointers came from) are
kept by the graph -- or by the executable graph they were set on -- for as
long as it lives: the runtime copies argument values, but a captured or
explicit node's pointers must stay valid.

A kernel's first node checks its signature against the kernel; its later nodes are then
made in C (compiled mode: ``graph._hot``) or, where C does not make them (ABI mode, the
simulator, signatures the C does not pack), by a function generated for the signature
(:func:`build_adder`).  Both hand anything unusual to the general path here.
"""

from __future__ import annotations

import functools
import struct
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from .. import errors
from .._operands import device_address
from .._operands import keep as keep_alive
from ..enums import EdgeData
from ..kernels._hot import _KIND_POINTER, argument_lines, c_layout, memory_types
from ..kernels._library import Dims, Kernel, Library, as_dims, as_shared_mem, lookup
from ..multidevice import record_node
# At module level, not per call (a function-level import costs ~0.4-1 us): graph/_graph loads
# this module lazily, from add_kernel, so both are there by then.
from . import _hot
from ._fresh import watch as watch_fresh
from ._node import Dim3, KernelNode
from ._node import check_edges as _check_edges

if TYPE_CHECKING:
    from ._graph import Graph


def _kernel(graph: "Graph", kernel: Any, what: str) -> Kernel:
    if not isinstance(kernel, Kernel):
        raise errors.InvalidValue(what, detail=f"{kernel!r} is not a pygraphrt Kernel")
    if kernel._backend is not graph._backend:
        raise errors.InvalidValue(what, detail="the kernel belongs to another backend")
    return kernel


def _packed(kernel: Kernel, args: Sequence[Any]) -> tuple[Any, tuple[Any, ...]]:
    """(argv, what must stay alive for it) for ``args`` packed by ``kernel``."""
    if isinstance(args, (str, bytes)) or not isinstance(args, (list, tuple)):
        raise errors.InvalidValue("kernel args", detail=f"args must be a list or tuple, got {type(args).__name__}")
    packed = kernel.pack(args)
    argv, base = kernel.argv(packed)
    return argv, (kernel, kernel._owner, packed, base, argv)


def add(graph: "Graph", kernel: Any, grid: Any, block: Any, args: Sequence[Any], shared_mem: int,
        attributes: dict[str, Any] | None, dependencies: Iterable[Any] | None,
        edges: Sequence[EdgeData] | None) -> "KernelNode":
    # Where the C method does not make them (ABI mode, the simulator), a kernel's later nodes
    # go to its generated hot adder (:func:`build_adder`), which takes the general path below
    # for anything it does not handle.
    if type(kernel) is Kernel and edges is None and attributes is None:
        hot = kernel._node_hot
        if hot:
            return hot(graph, kernel, grid, block, args, shared_mem, dependencies)  # type: ignore[no-any-return]
    return _add_general(graph, kernel, grid, block, args, shared_mem, attributes, dependencies, edges)


def _add_general(graph: "Graph", kernel: Any, grid: Any, block: Any, args: Sequence[Any], shared_mem: int,
                 attributes: dict[str, Any] | None, dependencies: Iterable[Any] | None,
                 edges: Sequence[EdgeData] | None) -> "KernelNode":
    # A kernel of a node before (so not a foreign one, its signature checked) goes straight to
    # the reusable struct.  (Only checks the path below makes too, in the same order, come
    # before it: a wrong value raises what it would.)  Arguments that do not fit it are packed
    # afresh below, without trying the struct again.
    if attributes is not None and not isinstance(attributes, dict):
        raise errors.InvalidValue("Graph.add_kernel", detail=f"attributes must be a dict, got {attributes!r}")
    reused = (type(kernel) is Kernel and kernel._node_layout is not None and not attributes
              and kernel._backend is graph._backend)
    if reused:
        made = _add_reusing_scratch(graph, kernel, grid, block, shared_mem, args, dependencies, edges)
        if made is not None:
            return made
    k = _kernel(graph, kernel, "Graph.add_kernel")
    if k._node_layout is None and not graph._backend.several:
        # A kernel's first node: can the current device run its code?  (With several devices in
        # use Graph.add_kernel checks every node.)
        from ..device import _current_ordinal

        device = _current_ordinal(graph._backend)
        if device is not None:
            k._for_device(device, "Graph.add_kernel")
    g, b, smem = as_dims(grid, "grid"), as_dims(block, "block"), as_shared_mem(shared_mem)
    ops = graph._backend.ops
    foreign = k.form == "function" and graph._backend.vendor == "cuda"
    if not foreign and not attributes and not reused:
        made = _add_reusing_scratch(graph, k, g, b, smem, args, dependencies, edges)
        if made is not None:
            _note_layout(graph, k)
            return made
    argv, keep = _packed(k, args)
    if foreign:
        # A foreign CUfunction: created through the driver, then linked.
        deps = graph._own_all(dependencies)
        checked = _check_edges(deps, edges)
        h = ops.add_kernel_node_unlinked(graph.handle, k.handle, k.form, g, b, smem, argv)
        node = graph._wrap(h, KernelNode)
        if graph._backend.several:
            record_node(graph, node)
        try:
            if deps:
                graph.add_dependencies(deps, [node] * len(deps), checked)
        except BaseException:
            node.destroy()
            raise
    else:
        node = graph._add("GraphAddKernelNode", dependencies, edges,
                          ops.kernel_node_struct(k.handle, g, b, smem, argv), cls=KernelNode)
    graph._keep.append(keep)
    try:
        for name, value in (attributes or {}).items():
            set_attribute(node, name, value)  # type: ignore[arg-type]
    except BaseException:
        node.destroy()
        raise
    if not foreign:
        _note_layout(graph, k)
    return node  # type: ignore[return-value]


def _note_layout(graph: "Graph", k: Kernel) -> None:
    """Once ``k``'s signature is checked against the kernel, let its later nodes be added in C
    (compiled mode: graph._hot) or, where they cannot be, by its hot adder (:func:`build_adder`)."""
    if k._node_layout is None and k._checked:
        k._node_layout = c_layout(k) if _hot.install_kernel_nodes(graph._backend) else False
        if not k._node_layout:
            k._node_hot = build_adder(graph, k) or False


def build_adder(graph: "Graph", kernel: Kernel) -> Callable[..., KernelNode] | None:
    """``hot(graph, kernel, grid, block, args, shared_mem, dependencies)``: ``kernel``'s nodes
    added by a function generated for its signature, as ``kernels._hot`` makes its launches; or
    None where its signature has none (a parameter other than an int, float or pointer).

    It does what :func:`_add_reusing_scratch` and ``Graph._add`` do, in fewer steps: the
    arguments unpacked into locals, each checked for its kind (pygraphrt's buffers give their
    ``_address``) and packed by one ``struct.pack_into`` of the kernel's reusable parameter
    struct and buffer (``_node_scratch``); grid, block and shared memory as plain ints, written
    into the struct only when they differ from the last node's; at most one dependency, a live
    node of this graph (more: ``Graph._dep_array``, which raises what ``Graph._add`` would); the
    node made as ``Graph._add`` makes it.  A node of the very objects the graph's last
    hot-added node was made from (``Graph._kernel_last``, which holds that scratch) is made
    from the struct as it is, with none of that work but a buffer's being open.  Anything else
    -- a value of another type or out of range, dims as tuples, another backend, a closed
    graph, an unloaded library -- takes :func:`_add_general`, which raises the error that names
    it: the hot adder decides no other error but the runtime's result code.
    """
    sig = kernel._signature
    if sig is None or sig._fast is None or sig._struct is None or not kernel._checked:
        return None
    backend = graph._backend
    calls = graph._calls
    try:
        add_fn = calls.GraphAddKernelNode
    except errors.GraphRTError:
        return None
    kinds = sig._fast
    library = kernel._owner if isinstance(kernel._owner, Library) else None
    slow = "return slow(graph, kernel, grid, block, args, smem, None, deps, None)"
    n = len(kinds)
    names = [f"a{i}" for i in range(n)]
    pointers = [i for i, k in enumerate(kinds) if k == _KIND_POINTER]
    # What this graph's last node of a hot adder was made from (graph._kernel_last): the kernel,
    # its scratch -- the graph's own while it is remembered (out of the kernel's pool: nothing
    # else fills it) --, that scratch's parameter struct, then grid, block, shared memory and
    # the arguments.  The same objects again -- a loop's -- were checked and packed then, and
    # kept by the graph (identity, not equality: True == 1 and 0.0 == -0.0); of those, only an
    # open buffer's being open may have changed.  Only ints and pygraphrt's buffers are
    # remembered: another object's pointer (pointer_of) is asked afresh each time.  (The graph
    # holds them: it keeps the buffers its nodes were given anyway.)
    same = " and ".join(["last is not None", "kernel is last[0]", "grid is last[3]", "block is last[4]",
                         "smem is last[5]"] + [f"{a} is last[{6 + i}]" for i, a in enumerate(names)])
    open_ = "".join(f" and ({names[i]}.__class__ is int or {names[i]}._handle is not None)" for i in pointers)
    lib_open = " and library._handle is not None" if library is not None else ""
    checks, values = argument_lines(kinds, slow, unpack=False)  # (unpacked above, in the body's first lines)
    vals = ", ".join(values)
    remembered = " and ".join(f"({names[i]}.__class__ is int or {names[i]}.__class__ in memory)"
                              for i in pointers) or "True"
    body = [
        "def hot(graph, kernel, grid, block, args, smem, deps):",
        "    ta = args.__class__",
        "    if ta is not tuple and ta is not list:",
        f"        {slow}",
    ]
    if names:  # (another number of arguments: ValueError, which costs nothing until raised)
        body += ["    try:", f"        {', '.join(names)}, = args", "    except ValueError:", f"        {slow}"]
    else:
        body += ["    if args:", f"        {slow}"]
    body += [
        # the dependencies: none, or a live node of this graph (checked here: a sequence of one,
        # by the pattern; its class by the mark every node class has, Node._is_node), or a list or
        # tuple of more (checked by Graph._dep_array, once the arguments have packed: the general
        # path's order); anything else takes the general path, which says what is wrong
        "    match deps:",
        "        case [d]:",
        "            nd = 1",
        "            try:",
        "                d.__class__._is_node",
        "            except AttributeError:",
        f"                {slow}",
        "            if d._graph is not graph or d._handle is None:",
        f"                {slow}",
        "        case None:",
        "            nd = 0",
        "        case list() | tuple():",
        "            nd = len(deps)",
        "        case _:",
        f"            {slow}",
        "    last = graph._kernel_last",
        "    h = graph._handle",
        f"    if {same} and h is not None{open_} and kernel._func is not None{lib_open}:",
        "        p = last[2]",
        "        scratch = None",
        "    else:",
        "        if last is not None:  # (the scratch it holds goes back to its kernel's pool)",
        "            graph._kernel_last = None",
        "            last[0]._node_scratch.append(last[1])",
        "        if not (h is not None and graph._backend is backend and kernel._func is not None" + lib_open
        + " and grid.__class__ is int and block.__class__ is int and smem.__class__ is int):",
        f"            {slow}",
    ]
    body += ["    " + line for line in checks]  # (their lines are indented for a body: this is the else)
    body += [
        "        scratch = pool.pop() if pool else new_scratch(graph, kernel)",
        "        p = scratch[1]",
        # the launch dimensions are in range where they equal what the struct holds (ints, as
        # checked above): checked only when they change, and written then
        "        key = (grid, block, smem)",
        "        same = scratch[3] == key",
        "        try:",
        "            if not same and not (0 < grid < 4294967296 and 0 < block < 4294967296 and 0 <= smem < 4294967296):",
        "                raise StructError  # (out of range: the general path says which)",
        f"            pack_into(scratch[0], 0{', ' + vals if vals else ''})",
        "        except (StructError, OverflowError):",
        "            pool.append(scratch)",
        f"            {slow}",
        "        if not same:  # written only when they change",
        "            scratch[3] = None  # (until every field is written)",
        "            p.func = kernel._func",
        "            dims = p.gridDim",
        "            dims.x, dims.y, dims.z = grid, 1, 1",
        "            dims = p.blockDim",
        "            dims.x, dims.y, dims.z = block, 1, 1",
        "            p.sharedMemBytes = smem",
        "            scratch[3] = key",
        # the runtime's call and the node, as Graph._add makes them
        "    try:",
        "        if nd == 1:",
        "            arr = graph._dep1",
        "            arr[0] = d._handle",
        "        elif nd == 0:",
        "            arr = NULL",
        "        else:",
        "            arr = graph._dep_array(deps, nd)",
        "        out = graph._out1",
        "        rc = add_fn(out, h, arr, nd, p)",
        "        if rc:",
        "            calls.retry(API, rc, out, h, arr, nd, p)",
        "    except BaseException:",
        "        if scratch is not None:",
        "            pool.append(scratch)",
        "        raise",
        "    node = KernelNode()",
        "    node._graph = graph",
        "    node._handle = out[0]",
        "    fresh = graph._fresh",
        "    if not fresh:",
        "        watch_fresh(graph)",
        "    fresh.append(node)",
        # several devices in use: the node's device recorded, as Graph._new_node records it
        "    if backend.several:",
        "        record_node(graph, node)",
        "    if scratch is None:  # the objects of the graph's last node: kept already",
        "        return node",
        # the runtime copied the values: the graph keeps the objects pointers came from, and
        # the kernel (which keeps its library), as _add_reusing_scratch does
        "    kept = graph._keep",
    ]
    objs = [names[i] for i in pointers]
    # The common case of a loop: every pointer given as an object, distinct, and the keep list
    # ending with them, in order, and the kernel -- what this function leaves it as -- so
    # nothing is to be kept; tested first, in one condition.
    tail = [f"kept[{-2 - i}] is {a}" for i, a in enumerate(reversed(objs))]
    body += [
        "    try:",
        "        done = (" + " and ".join([f"p{a[1:]} is not {a}" for a in objs] + ["kept[-1] is kernel"] + tail) + ")",
        "    except IndexError:",
        "        done = False",
        "    if not done:",
    ]
    for a in objs:
        body += [f"        if p{a[1:]} is not {a} and (not kept or kept[-1] is not {a}):",
                 f"            keep_alive(kept, {a})"]
    body += [
        "        if not kept or kept[-1] is not kernel:",
        "            keep_alive(kept, kernel)",
        # made and its objects kept: remembered, the scratch the graph's from now on
        f"    if {remembered}:",
        f"        graph._kernel_last = (kernel, scratch, p, grid, block, smem{', ' + ', '.join(names) if names else ''})",
        "    else:",
        "        pool.append(scratch)",
        "    return node",
    ]
    env: dict[str, Any] = {
        "backend": backend, "library": library, "slow": _add_general, "memory": memory_types(),
        "pointer_of": functools.partial(device_address, backend), "StructError": struct.error,
        "pool": kernel._node_scratch, "new_scratch": _new_node_scratch, "pack_into": sig._struct.pack_into,
        "KernelNode": KernelNode, "NULL": backend.ffi.NULL,
        "calls": calls, "add_fn": add_fn, "API": "GraphAddKernelNode", "keep_alive": keep_alive,
        "record_node": record_node, "watch_fresh": watch_fresh,
    }
    exec(compile("\n".join(body) + "\n", f"<pygraphrt kernel node of {kernel.name}>", "exec"), env)
    hot = env["hot"]
    hot.source = "\n".join(body)  # for tests
    return hot  # type: ignore[no-any-return]


def _filled_scratch(graph: "Graph", k: Kernel, values: Any, grid: Any, block: Any, smem: Any) -> Any:
    """A reusable scratch of ``k`` (:func:`_new_node_scratch`) with ``values`` packed into its
    argument buffer and the launch dimensions in its parameter struct, or None where a value
    does not pack (nothing written; the caller takes the general path, which says why).  The
    caller returns the scratch to ``k._node_scratch`` after its runtime call."""
    # Launch dimensions given as plain ints are their own key: the struct holds them already
    # when they equal the last node's, and nothing is converted or written.
    key = (grid, block, smem) if type(grid) is int and type(block) is int and type(smem) is int else None
    pool = k._node_scratch
    scratch = pool.pop() if pool else _new_node_scratch(graph, k)
    try:
        k._signature._struct.pack_into(scratch[0], 0, *values)  # type: ignore[union-attr]
    except (struct.error, OverflowError):
        pool.append(scratch)
        return None
    except BaseException:
        pool.append(scratch)
        raise
    try:
        p = scratch[1]
        func = k.handle  # raises once the kernel's library is unloaded
        if key is None or scratch[3] != key:
            # Written only when they change (a cffi field write costs about as much as the
            # runtime's call): nodes of one kernel and shape, the common case, write none.
            g, b, smem = as_dims(grid, "grid"), as_dims(block, "block"), as_shared_mem(smem)
            scratch[3] = None  # (until every field is written: a write may raise)
            p.func = func
            grid_dim, block_dim = p.gridDim, p.blockDim
            grid_dim.x, grid_dim.y, grid_dim.z = g
            block_dim.x, block_dim.y, block_dim.z = b
            p.sharedMemBytes = smem
            scratch[3] = key
    except BaseException:
        pool.append(scratch)
        raise
    return scratch


def _add_reusing_scratch(graph: "Graph", k: Kernel, grid: Any, block: Any, smem: Any, args: Any,
                         dependencies: Iterable[Any] | None, edges: Sequence[EdgeData] | None) -> KernelNode | None:
    """The node made from a reusable parameter struct and argument buffer of ``k`` (the
    runtimes, and the simulator, copy the values when the node is made), when its signature
    is checked and every argument is a plain int, float or pointer that packs; else None,
    and the caller packs afresh (and explains what does not fit).  The launch dimensions
    are checked here (as_dims, as_shared_mem: what they raise is what :func:`add` would)."""
    sig = k._signature
    if (not k._checked or sig is None or sig._struct is None or sig._fast is None
            or (type(args) is not tuple and type(args) is not list)):
        return None
    fast = sig.fast_values(args, k._pointer_of)
    if fast is None:
        return None
    values, pointers = fast
    scratch = _filled_scratch(graph, k, values, grid, block, smem)
    if scratch is None:
        return None
    try:
        node = graph._add("GraphAddKernelNode", dependencies, edges, scratch[1], cls=KernelNode)
    finally:
        k._node_scratch.append(scratch)  # one per concurrent caller (list pop/append are atomic)
    # The runtime copied the values: the graph keeps what pointers came from and the kernel
    # (which keeps its library), as keep list entries, as the C method does (no tuple and list a
    # node: two more objects for the cyclic collector to walk).  In a loop they are the last
    # entries already, and nothing is added.
    keep = graph._keep
    for owner in pointers:
        keep_alive(keep, owner)
    if not keep or keep[-1] is not k:
        keep_alive(keep, k)
    return node  # type: ignore[return-value]


def set_in_exec_reusing_scratch(exe: Any, node_handle: Any, kernel: Any, grid: Any, block: Any, smem: Any,
                                args: Any) -> bool:
    """Set a kernel node of executable graph ``exe`` (every parameter given) from the kernel's
    reusable parameter struct and argument buffer, as :func:`_add_reusing_scratch` adds one: the
    runtimes (and the simulator) copy the values when the setter returns, so nothing packed is
    kept.  True when done; False -- nothing called, nothing changed -- where the kernel has had no
    node yet (its signature unchecked), belongs to another backend, or an argument is not a plain
    int, float or pointer that packs: the caller takes the general path, which says what is wrong.
    The launch dimensions are checked as :func:`update` checks them (what they raise is the same)."""
    graph = exe._graph
    if (type(kernel) is not Kernel or kernel._node_layout is None or kernel._backend is not graph._backend
            or not kernel._checked):
        return False
    sig = kernel._signature
    if sig is None or sig._struct is None or sig._fast is None or (type(args) is not tuple and type(args) is not list):
        return False
    fast = sig.fast_values(args, kernel._pointer_of)
    if fast is None:
        return False
    scratch = _filled_scratch(graph, kernel, fast[0], grid, block, smem)
    if scratch is None:
        return False
    try:
        graph._backend.ops.call("GraphExecKernelNodeSetParams", exe.handle, node_handle, scratch[1])
    finally:
        kernel._node_scratch.append(scratch)
    return True


def _new_node_scratch(graph: "Graph", k: Kernel) -> list[Any]:
    """[writable view of an argument buffer, kernel-node parameter struct whose argument array
    points into it, the array, (grid, block, shared memory) the struct holds or None]
    for :func:`_add_reusing_scratch` and :func:`build_adder`'s function: the launch's buffer and
    array (``Kernel._new_scratch``, which keeps the buffer) with a parameter struct.  A kernel's
    pool (``Kernel._node_scratch``) holds those not in use; a graph whose last hot-added node
    was the kernel's holds the one it was made from (``Graph._kernel_last``) until its next."""
    view, argv = k._new_scratch(k.signature)  # type: ignore[arg-type]
    p = graph._backend.ffi.new(f"{graph._backend.ops.kernel_params_type} *")
    p.kernelParams = argv
    return [view, p, argv, None]


def read(node: "KernelNode") -> dict[str, Any]:
    """The node's launch parameters, its Kernel (if pygraphrt knows it) and decoded arguments."""
    backend = node._graph._backend
    k = backend.ops.kernel_params(node.handle)
    kernel = lookup(backend, k.kernel_id) or lookup(backend, k.func)
    return {"func": k.func, "grid": Dim3(*k.grid), "block": Dim3(*k.block),
            "shared_mem_bytes": k.shared_mem_bytes, "kernel": kernel,
            "args": kernel.decode(k.argv) if kernel is not None else None}


def update(node: "KernelNode", exec_: Any, keep: list[Any], kernel: Any = None, grid: Any = None,
           block: Any = None, args: Sequence[Any] | None = None,
           shared_mem: int | None = None) -> "Kernel | None":
    """Set a kernel node's parameters in its graph (``exec_`` None) or in an executable graph.

    Unchanged values are taken from the node.  New arguments need the kernel's
    signature (or typed values); they are appended to ``keep``.  Returns the kernel the node
    now runs (None: one pygraphrt does not know).
    """
    graph = node._graph
    backend = graph._backend
    ops = backend.ops
    h = node.handle
    if kernel is not None and args is not None and grid is not None and block is not None \
            and shared_mem is not None:  # all given (the compute graph's updates): nothing to read back
        k: Kernel | None = _kernel(graph, kernel, "kernel node")
        g: Dims = as_dims(grid, "grid")
        b: Dims = as_dims(block, "block")
        smem = as_shared_mem(shared_mem)
    else:
        cur = ops.kernel_params(h)
        known = lookup(backend, cur.kernel_id) or lookup(backend, cur.func)
        k = _kernel(graph, kernel, "kernel node") if kernel is not None else known
        g = as_dims(grid, "grid") if grid is not None else cur.grid
        b = as_dims(block, "block") if block is not None else cur.block
        smem = as_shared_mem(shared_mem) if shared_mem is not None else cur.shared_mem_bytes
    if k is None:
        if args is not None:
            raise errors.NotSupported("kernel node", detail="pygraphrt does not know this node's kernel, so "
                                      "it cannot pack new arguments: pass kernel=<Kernel with a signature>")
        cur.grid, cur.block, cur.shared_mem_bytes = g, b, smem
        ops.set_kernel_dims(h, cur, exec_=exec_)
        return None
    if args is None:
        if k is not known:
            raise errors.InvalidValue("kernel node", detail="a new kernel needs its args")
        # The node's own argument copies: valid while the node lives.
        argv = backend.ffi.cast("void **", cur.argv)
    else:
        argv, held = _packed(k, args)
        keep.append(held)
    ops.set_kernel_node(h, exec_, k.handle, k.form, g, b, smem, argv)
    keep.append((k, k._owner))
    return k


def attribute(node: "KernelNode", name: str) -> Any:
    _attr_name(name)
    return node._graph._backend.ops.kernel_node_attribute(node.handle, name)


def set_attribute(node: "KernelNode", name: str, value: Any) -> None:
    _attr_name(name)
    node._graph._backend.ops.set_kernel_node_attribute(node.handle, name, value)
    node._graph._keep.append(value)  # an Event given as programmatic_event


def _attr_name(name: Any) -> None:
    from .._vendors.base import LAUNCH_ATTRIBUTE_FIELDS

    if not isinstance(name, str) or name not in LAUNCH_ATTRIBUTE_FIELDS:
        raise errors.InvalidValue("kernel node attribute",
                                  detail=f"unknown attribute {name!r}; known: {sorted(LAUNCH_ATTRIBUTE_FIELDS)}")
