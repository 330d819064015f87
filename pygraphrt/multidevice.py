"""Several devices: the device count, device scopes, properties, peer access and
peer-to-peer attributes, and where memory and graph nodes live.

Most of it is reached through :class:`pygraphrt.Device` (``with rt.Device(1):``,
``dev.properties()``, ``dev.enable_peer_access(other)``, ...) and the objects that know
their device (``Stream.device``, ``DeviceBuffer.device``, ``AsyncBuffer.device``,
``MemPool.device``, ``Event.device``, ``Node.device``); the functions here are the same
operations by ordinal.

The current device is per thread, as the runtime's is.  A device switch that pygraphrt
makes for you (``device=`` on a graph's ``add_*`` methods, ``Device.synchronize``) happens
only when that device is not current already, and the previous device is current again
afterwards, also when the call raises.

Peer access: the runtime has no query of whether peer access is enabled, so
:func:`peer_access_enabled` answers from pygraphrt's own record of the
:func:`enable_peer_access` / :func:`disable_peer_access` calls made through it.  It is blind
to peer access enabled by other libraries in the process (PyTorch, CuPy call
``cudaDeviceEnablePeerAccess`` themselves).  Copies between devices need no peer access
(the runtime stages them); kernels touching another device's memory do.

One device costs nothing: until a device other than 0 is used through pygraphrt (made current,
or an object made on it -- :func:`now_several`), every launch and node is device 0's and the
compiled hot methods run untouched.  From then on the backend's ``several`` flag is set: kernel
launches and kernel nodes check their arguments' devices and the code's architecture against
the device they run on (the compiled methods hand those calls to the Python ones), and each node
made without ``device=`` records the device current then (``Node.device``).  Blind spot: a device
made current behind pygraphrt's back (``torch.cuda.set_device(1)``, ``cudaSetDevice`` from
another library) while nothing has been made on it through pygraphrt yet is taken for device 0.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from . import _fast, _runtime, errors
from ._handles import Owned
from ._operands import DeviceMemory, ptr
from ._operands import ordinal as _ordinal
from .enums import NodeType, UpdateResult

if TYPE_CHECKING:
    from .device import Device

__all__ = ["device_count", "DeviceProperties", "P2PAttributes", "properties", "can_access_peer",
           "enable_peer_access", "disable_peer_access", "peer_access_enabled", "p2p_attributes",
           "pointer_device"]

T = TypeVar("T")


@dataclass(frozen=True)
class DeviceProperties:
    """What :meth:`pygraphrt.Device.properties` reports (``GetDeviceProperties``).

    ``arch`` is the vendor's architecture name (``sm_90`` on CUDA, the ``gcnArchName`` such as
    ``gfx942:sramecc+:xnack-`` on HIP); ``compute_capability`` is (major, minor) on both.
    ``uuid`` is the device's UUID as text, ``pci_bus_id`` its ``domain:bus:device.0``.
    """

    ordinal: int
    name: str
    arch: str
    compute_capability: tuple[int, int]
    total_memory: int
    multiprocessor_count: int
    uuid: str
    pci_bus_id: str


@dataclass(frozen=True)
class P2PAttributes:
    """Peer-to-peer attributes from one device to another (``DeviceGetP2PAttribute``)."""

    performance_rank: int
    access_supported: bool
    native_atomic_supported: bool
    array_access_supported: bool


# -------------------------------------------------------------------- ordinals and scopes
def device_count() -> int:
    """The number of devices the active backend's runtime reports."""
    return _count(_runtime.active())


def _count(backend: Any) -> int:
    """The runtime's device count (asked once per backend: it does not change in a process)."""
    n: int | None = backend.memo.get("_device_count")
    if n is None:
        cell = backend.ffi.new("int *")
        backend.ops.call("GetDeviceCount", cell)
        n = backend.memo["_device_count"] = int(cell[0])
        hot = _fast.hot_module(backend)
        if hot is not None:  # (the compiled adds then take device=0 themselves: see placed)
            hot.one_device(n == 1)
    return n


def checked_ordinal(backend: Any, device: Any, what: str) -> int:
    """``device`` (a Device or an int) as an ordinal of one of the runtime's devices; else
    InvalidDevice naming ``what`` and the device count."""
    d = _ordinal(device, what)
    n = _count(backend)
    if d >= n:
        raise errors.InvalidDevice(what, detail=f"device {d} does not exist: the {backend.ops.name} runtime "
                                                f"reports {n} device(s) (ordinals 0 to {n - 1})")
    return d


def device_exists(backend: Any, device: Any, what: str) -> bool:
    """Whether ``device`` (a Device or an int: InvalidValue for anything else) is one of the
    runtime's devices."""
    return _ordinal(device, what) < _count(backend)


def current(backend: Any) -> int:
    """This thread's current device (``GetDevice``).  Asked of the runtime each time: torch,
    CuPy or the user may switch devices behind pygraphrt's back, so no copy is kept."""
    get = backend.memo.get("_get_device")
    if get is None:
        get = backend.memo["_get_device"] = _device_getter(backend)
    return get()


def _device_getter(backend: Any) -> Callable[[], int]:
    """``current`` for ``backend``: the library's GetDevice looked up once (the build path's
    ``device=`` asks it on every placed node) -- the driver's own query first where the vendor
    hands it over (``Vendor.hot_fn``: CUDA's cuCtxGetDevice, the current context's device),
    the runtime's where that refuses (no context current yet)."""
    ops = backend.ops
    fn = ops.hot_fn("GetDevice")
    new = backend.ffi.new

    def get_device() -> int:
        cell = new("int *")
        rc = fn(cell)
        if rc and (rc := ops.refused("GetDevice", fn, rc, cell)):
            raise ops.error(rc, ops.prefix + "GetDevice")
        return cell[0]

    return get_device


def enter(backend: Any, device: int) -> int | None:
    """Make ``device`` current; the device to restore afterwards, or None where ``device``
    was current already (no switch made, nothing to restore)."""
    previous = current(backend)
    if previous == device:
        return None
    switch(backend, device, previous)
    return previous


def switch(backend: Any, device: int, previous: int) -> None:
    """``SetDevice(device)``, noting a second device in use (:func:`now_several`); where that
    bookkeeping raises, ``previous`` is made current again first: the caller's own switch back
    (``leave``, a scope's exit) will not run for a switch that raised."""
    backend.ops.call("SetDevice", device)
    if device and not backend.several:
        try:
            now_several(backend)
        except BaseException:
            backend.ops.call("SetDevice", previous)
            raise


def leave(backend: Any, previous: int | None) -> None:
    if previous is not None:
        backend.ops.call("SetDevice", previous)


def on_device(backend: Any, device: int, call: Callable[[], T]) -> T:
    """``call()`` with ``device`` current, the previous device restored afterwards (a switch
    only where ``device`` is not current)."""
    previous = enter(backend, device)
    try:
        return call()
    finally:
        leave(backend, previous)


class _Scopes(threading.local):
    def __init__(self) -> None:
        # (backend, device current before the scope, the Device whose scope it is)
        self.stack: list[tuple[Any, int, Any]] = []


_scopes = _Scopes()


def scope_enter(device: "Device") -> None:
    """``with Device(n):`` -- make ``n`` current for this thread, remembering the previous one."""
    b = device._backend
    d = checked_ordinal(b, device.ordinal, "Device.__enter__")
    previous = current(b)
    if previous != d:
        switch(b, d, previous)
    _scopes.stack.append((b, previous, device))


def scope_exit(device: "Device") -> None:
    """The end of a ``with Device(n):`` block (raised or not): the previous device is current
    again (also where the block switched devices itself).  Refused (IllegalState) for a Device
    that is not the thread's innermost scope: an ``__exit__`` without its ``__enter__`` would
    end another block's scope."""
    stack = _scopes.stack
    if not stack or stack[-1][2] is not device:
        raise errors.IllegalState("Device.__exit__", detail=f"{device!r} is not the innermost `with Device(n):` "
                                                            "scope of this thread (an __exit__ without its __enter__)")
    b, previous, _ = stack.pop()
    try:
        now: int | None = current(b)
    except errors.GraphRTError:
        now = None  # (the question refused: switch back regardless)
    if now != previous:
        b.ops.call("SetDevice", previous)


# -------------------------------------------------------------------- properties
def properties(device: Any) -> DeviceProperties:
    """The properties of ``device`` (a Device or an ordinal)."""
    import uuid

    b = _runtime.active()
    d = checked_ordinal(b, device, "Device.properties")
    p = b.ops.device_properties(d)
    return DeviceProperties(d, p["name"], p["arch"], p["compute_capability"], p["total_memory"],
                            p["multiprocessor_count"], str(uuid.UUID(bytes=p["uuid"])), p["pci_bus_id"])


# -------------------------------------------------------------------- peer access
def _peer_record(backend: Any) -> set[tuple[int, int]]:
    """(device, peer) pairs pygraphrt enabled peer access for (blind to other libraries')."""
    record: set[tuple[int, int]] | None = backend.memo.get("_peer_access")
    if record is None:
        record = backend.memo["_peer_access"] = set()
    return record


def _pair(device: Any, peer: Any, what: str) -> tuple[Any, int, int]:
    b = _runtime.active()
    return b, checked_ordinal(b, device, what), checked_ordinal(b, peer, what)


def _peer_error(backend: Any, rc: int, api: str, d: int, p: int) -> errors.GraphRTError:
    why = (f"device {d} and its peer are the same device: a device is not its own peer" if d == p else
           f"device {d} and peer device {p}: the runtime refused (no peer access between them where it "
           f"answers InvalidDevice)")
    return backend.ops.error(rc, backend.ops.prefix + api, detail=why)


def can_access_peer(device: Any, peer: Any) -> bool:
    """Whether ``device`` can access ``peer``'s memory once peer access is enabled
    (``DeviceCanAccessPeer``; a device and itself is the runtime's InvalidDevice)."""
    b, d, p = _pair(device, peer, "Device.can_access_peer")
    out = b.ffi.new("int *")
    rc = b.ops.fn("DeviceCanAccessPeer")(out, d, p)
    if rc:
        raise _peer_error(b, rc, "DeviceCanAccessPeer", d, p)
    return bool(out[0])


def enable_peer_access(device: Any, peer: Any) -> None:
    """Let kernels on ``device`` access ``peer``'s memory (``DeviceEnablePeerAccess`` with
    ``device`` current).  Enabling it again is no error (the runtime's
    ``PeerAccessAlreadyEnabled`` is success here)."""
    b, d, p = _pair(device, peer, "Device.enable_peer_access")
    ops = b.ops
    rc = on_device(b, d, lambda: ops.fn("DeviceEnablePeerAccess")(p, 0))
    if rc:
        err = _peer_error(b, rc, "DeviceEnablePeerAccess", d, p)  # (also clears the last error)
        if rc != ops.const("ErrorPeerAccessAlreadyEnabled"):
            raise err
    _peer_record(b).add((d, p))


def disable_peer_access(device: Any, peer: Any) -> None:
    """Withdraw ``device``'s access to ``peer``'s memory (``DeviceDisablePeerAccess``; the
    runtime's PeerAccessNotEnabled where it was not enabled)."""
    b, d, p = _pair(device, peer, "Device.disable_peer_access")
    ops = b.ops
    rc = on_device(b, d, lambda: ops.fn("DeviceDisablePeerAccess")(p))
    if rc:
        raise _peer_error(b, rc, "DeviceDisablePeerAccess", d, p)
    _peer_record(b).discard((d, p))


def peer_access_enabled(device: Any, peer: Any) -> bool:
    """Whether pygraphrt enabled ``device``'s access to ``peer`` (True for a device and
    itself).  pygraphrt's own record: the runtime has no such query, so access enabled by
    another library (PyTorch, CuPy) is not seen here."""
    b, d, p = _pair(device, peer, "Device.peer_access_enabled")
    return d == p or (d, p) in _peer_record(b)


def p2p_attributes(device: Any, peer: Any) -> P2PAttributes:
    """Peer-to-peer attributes from ``device`` to ``peer`` (``DeviceGetP2PAttribute``)."""
    b, d, p = _pair(device, peer, "Device.p2p_attributes")
    try:
        get = {name: b.ops.p2p_attribute(d, p, name) for name in b.ops.p2p_attributes}
    except errors.GraphRTError as exc:
        exc.add_note(f"asked for the peer-to-peer attributes from device {d} to device {p}")
        raise
    return P2PAttributes(get["performance_rank"], bool(get["access_supported"]),
                         bool(get["native_atomic_supported"]), bool(get["array_access_supported"]))


# -------------------------------------------------------------------- where things live
def pointer_device(address: Any) -> int | None:
    """The device whose memory ``address`` (an int or a pygraphrt buffer) is, from
    ``PointerGetAttributes``; None for host memory and addresses the runtime does not know."""
    b = _runtime.active()
    return b.ops.pointer_device(int(b.ffi.cast("uintptr_t", ptr(b, address))))


def stream_device(backend: Any, handle: Any) -> int:
    """The device of a stream handle (``StreamGetDevice``)."""
    out = backend.ffi.new("int *")
    backend.ops.call("StreamGetDevice", handle, out)
    return int(out[0])


def can_reach(backend: Any, device: int, memory_device: int) -> bool:
    """Whether kernels on ``device`` may touch ``memory_device``'s memory as far as pygraphrt
    knows: the same device, or peer access it enabled."""
    return device == memory_device or (device, memory_device) in _peer_record(backend)


def node_devices(graph: Any) -> dict[Any, int]:
    """node handle -> the device a graph's node was made on, for nodes made with ``device=``."""
    table: dict[Any, int] | None = graph._node_devices
    if table is None:
        table = graph._node_devices = {}
    return table


def placed(graph: Any, device: Any, what: str, add: Callable[[], T]) -> T:
    """``add()`` (a graph's ``add_*`` call without ``device=``) with ``device`` current, the
    node it made recorded as ``device``'s.  A refused call leaves no node (the runtime made
    none) and the previous device current."""
    b = graph._backend
    count = b.memo.get("_device_count", 0)
    if type(device) is int and 0 <= device < count:
        if count == 1:
            # The one device there is: current, and every node's device (node_device's answer
            # without a record) -- nothing to switch, check or record.
            return add()
        d = device  # (an ordinal of a device the runtime has: the checks below would pass)
    else:
        d = checked_ordinal(b, device, f"Graph.{what}")
    if what == "add_kernel" and graph._owner is not None:
        check_body_device(graph, d)
    previous = current(b)
    switching = previous != d
    if not switching and not b.several:
        # Already current, one device in use: no switch to make or undo, and no node record
        # that would ask the runtime (record_node runs only with several in use).
        node = add()
    else:
        outer = getattr(_placing, "device", None)
        _placing.device = d  # (record_node: the device is known, no need to ask the runtime)
        try:
            if switching:  # (the previous device is known: enter() would ask again)
                switch(b, d, previous)
                try:
                    node = add()
                finally:
                    b.ops.call("SetDevice", previous)
            else:
                node = add()
        finally:
            _placing.device = outer
    node_devices(graph)[node._handle] = d  # type: ignore[attr-defined]
    return node


def record_conditional_device(graph: Any, node: Any) -> None:
    """A conditional node was made: record the device current then where there are several
    (its bodies' kernels must run there), so that ``add_kernel(device=)`` in a body can check."""
    b = graph._backend
    ops = b.ops
    if not (ops.has(f"{ops.prefix}GetDeviceCount") and ops.has(f"{ops.prefix}GetDevice")):
        return  # (the stand-in runtimes of the CPU tests: tests/fakecuda)
    if _count(b) > 1:
        node_devices(graph)[node._handle] = current(b)


def check_body_device(graph: Any, device: int) -> None:
    """Refuse a kernel on ``device`` in a body of a conditional node of another device
    (cudaConditionalNodeParams, CUDA Runtime API: "All kernels, including kernels in nested
    conditionals or child graphs at any level, must belong to the same device context")."""
    cond = graph._conditional_owner()
    if cond is None:
        return
    cd = node_device(cond)
    if cd is not None and cd != device:
        raise errors.InvalidValue("Graph.add_kernel", detail=f"a kernel on device {device} in the body of a "
                                  f"conditional node of device {cd}: all kernels of a conditional node's bodies "
                                  "run in one device's context")


def check_one_device(graph: Any, what: str) -> None:
    """Refuse to instantiate for device launch a graph whose nodes pygraphrt placed on several
    devices (CUDA Programming Guide, device graph launch: a device graph's nodes all reside on
    one device)."""
    table = node_devices(graph)
    devices = sorted({table[n._handle] for n in graph.nodes() if n._handle in table})
    if len(devices) > 1:
        raise errors.InvalidValue(what, detail=f"a graph instantiated for device launch has all its nodes on one "
                                               f"device; this one has nodes on devices {devices}")

_placing = threading.local()  # .device: the device a placed add (placed) made current, or None


def node_device(node: Any) -> int | None:
    """Where a graph node runs: the device given with ``device=`` when it was made, or the
    device current when it was made while several devices were in use (pygraphrt's records);
    else a graph allocation's device, else the device of the node's context where the runtime
    reports it (CUDA >= 13.2: ``cudaGraphNodeGetParams``' ``ctx``); else device 0 while the
    backend was only ever used with device 0 (see :func:`now_several`: nodes made before a
    second device came into use are recorded as device 0's then).  None: a node pygraphrt did
    not make (captured, or a borrowed graph's) after several devices came into use, on a
    runtime that does not tell."""
    handle = node.handle  # raises once the node or its graph is gone
    table = node._graph._node_devices
    if table and handle in table:
        return int(table[handle])
    t = node.type
    if t is NodeType.MEM_ALLOC:
        return int(node.params["device"])
    backend = node._graph._backend
    d = backend.ops.node_context_device(handle, t)
    if d is None and not backend.several:
        return 0
    return d  # type: ignore[no-any-return]


def with_copy_devices(params: dict[str, Any], backend: Any) -> dict[str, Any]:
    """A memcpy node's parameters with the devices of its two operands (``dst_device``,
    ``src_device``: None for host memory), from ``PointerGetAttributes``."""
    ops = backend.ops
    params["dst_device"] = ops.pointer_device(params["dst"]) if params.get("dst") else None
    params["src_device"] = ops.pointer_device(params["src"]) if params.get("src") else None
    return params


def _memory_device(arg: Any) -> int | None:
    """The device whose memory a kernel argument is, where it is a pygraphrt buffer that says
    so (its ``device``); else None."""
    md = getattr(arg, "device", None) if isinstance(arg, DeviceMemory) else None
    return md if isinstance(md, int) else None


def check_kernel_buffers(backend: Any, device: Any, args: Any, what: str) -> None:
    """Refuse a kernel on ``device`` whose arguments include a pygraphrt buffer of another
    device that ``device`` has no peer access to (as far as pygraphrt enabled it): on the GPU
    the kernel would fault with an illegal address and poison the context."""
    d = checked_ordinal(backend, device, what)
    if not isinstance(args, (list, tuple)):
        return  # (the argument check of the call says what is wrong)
    for i, arg in enumerate(args):
        md = _memory_device(arg)
        if md is not None and not can_reach(backend, d, md):
            raise errors.InvalidValue(what, detail=f"argument {i} ({arg!r}) is device {md}'s memory and device {d} "
                                                   f"has no peer access to it: the kernel would fault (enable it "
                                                   f"with Device({d}).enable_peer_access({md}))")


def runs_on(kernel: Any, device: int | None, args: Any) -> bool:
    """Whether the checks before a kernel runs on ``device`` (:func:`check_launch`) would pass
    with nothing to do: the kernel runs there as itself (``Kernel._for_device`` found so once,
    and recorded it), and no pygraphrt buffer among ``args`` (a list or tuple) is another
    device's memory.  False sends a call to those checks.  The generated Python launches and
    node adders ask this while several devices are in use; the compiled ones ask the same in C
    (``bindgen/hot_methods.c``: ``_pgr_runs_on``)."""
    if device is None or kernel._on_devices.get(device, kernel) is not None:
        return False
    if args.__class__ is not tuple and args.__class__ is not list:
        return False
    for arg in args:
        md = _memory_device(arg)
        if md is not None and md != device:
            return False
    return True


def kernel_devices(graph: Any) -> list[int | None] | None:
    """The recorded device of each kernel node of ``graph``, in the runtime's node order (the
    order exec update pairs nodes in), or None where no node of it was made with ``device=``
    (a one-device graph: nothing to compare, nothing asked of the runtime)."""
    table = graph._node_devices
    if not table:
        return None
    return [table.get(n._handle) for n in graph.nodes() if n.type is NodeType.KERNEL]


def check_update_devices(before: list[int | None] | None, graph: Any, backend: Any) -> list[int | None] | None:
    """Refuse an exec update that would move a kernel node to another device (the runtime
    cannot: a kernel node keeps its context); returns the new graph's kernel devices."""
    after = kernel_devices(graph)
    if before is None or after is None:
        return after if after is not None else before
    for i, (a, b) in enumerate(zip(before, after)):
        if a is not None and b is not None and a != b:
            raise errors.GraphExecUpdateError(
                f"{backend.ops.prefix}GraphExecUpdate", None, None, backend.ops.name,
                f"kernel node {i} (in node order) runs on device {a} in the executable graph and on device {b} "
                "in the new graph: an update cannot move a kernel node to another device (instantiate the "
                "new graph instead)", UpdateResult.ERROR)
    return after


def access_of(backend: Any, p: Any) -> dict[int, str]:
    """The devices a graph allocation's parameters (``p``: its ``MemAllocNodeParams``) give
    access to, from its access descriptors: device -> ``"read"`` / ``"read_write"`` / ``"none"``."""
    ops = backend.ops
    n = int(p.accessDescCount)
    if not n or p.accessDescs == backend.ffi.NULL:
        return {}
    names = {ops.const("MemAccessFlagsProtNone"): "none", ops.const("MemAccessFlagsProtRead"): "read",
             ops.const("MemAccessFlagsProtReadWrite"): "read_write"}
    descs = p.accessDescs
    return {int(descs[i].location.id): names.get(int(descs[i].flags), str(int(descs[i].flags))) for i in range(n)}


# -------------------------------------------------------------------- several devices in use
# A process that only ever uses device 0 pays nothing for the checks below: they run where a
# backend's ``several`` flag is set, once a device other than 0 is made current through
# pygraphrt (``Device.set_current``, ``with Device(n)``, ``device=``) or an object is made on
# one (a stream, event or buffer made while another library had made it current).  Until
# then every node, launch and buffer is device 0's as far as pygraphrt knows.  Blind spot: a
# device made current behind pygraphrt's back (``torch.cuda.set_device(1)``) with nothing
# made through pygraphrt on it yet.
def now_several(backend: Any) -> None:
    """Note that ``backend`` is used with more than one device (once): the graphs made so far
    record their nodes as device 0's (all there was), and the hooks the upper layers
    registered (:func:`when_several`) run -- the compiled adds record each node's device from
    then on, and the compiled kernel nodes and launches stay in C only where :func:`runs_on`'s
    test passes (the Python methods check the rest)."""
    with _several_lock:
        if backend.several:
            return
        backend.several = True
        hooks = list(backend.memo.get("_several_hooks", ()))
    for obj in list(backend.live):  # (graphs by what they answer to: the graph layer sits above this one)
        if isinstance(obj, Owned) and obj._handle is not None:
            several = getattr(obj, "_several_devices", None)
            if several is not None:
                several()
    for off, _on in hooks:
        off()


_several_lock = threading.Lock()


def record_existing_nodes(graph: Any) -> None:
    """Every node ``graph`` holds now as made on device 0 (where no device is recorded)."""
    table = node_devices(graph)
    try:
        handles = [n._handle for n in graph.nodes()]
    except errors.GraphRTError:
        return
    for h in handles:
        table.setdefault(h, 0)


def when_several(backend: Any, off: Callable[[], None], on: Callable[[], None]) -> None:
    """Run ``off()`` when ``backend`` becomes used with several devices (now, if it is);
    ``on()`` undoes it (:func:`_reset_several`)."""
    with _several_lock:
        backend.memo.setdefault("_several_hooks", []).append((off, on))
        if not backend.several:
            return
    off()


def note_device(backend: Any, device: int | None) -> None:
    """An object was made on ``device`` (or it was made current): several devices are in use
    where it is not device 0."""
    if device and not backend.several:
        now_several(backend)


def launch_device(backend: Any) -> int:
    """The device a kernel node made now runs on: the current one (known without asking the
    runtime inside :func:`placed`)."""
    d = getattr(_placing, "device", None)
    return current(backend) if d is None else int(d)


def check_launch(backend: Any, kernel: Any, device: int, args: Any, what: str) -> Any:
    """Before a kernel runs on ``device`` (several devices in use): refuse arguments of memory
    ``device`` may not reach (:func:`check_kernel_buffers`) and code ``device`` cannot run;
    return the kernel to launch there (the kernel itself, or its library loaded on ``device``
    where the runtime loads code per device)."""
    check_kernel_buffers(backend, device, args, what)
    for_device = getattr(kernel, "_for_device", None)
    return kernel if for_device is None else for_device(device, what)


def record_node(graph: Any, node: Any) -> None:
    """Record the current device as ``node``'s (a node made without ``device=`` while several
    devices are in use)."""
    d = getattr(_placing, "device", None)
    node_devices(graph).setdefault(node._handle, current(graph._backend) if d is None else d)


def record_handles(graph: Any, handles: Any) -> None:
    """:func:`record_node` for the nodes of ``handles`` (one ``Graph.add_nodes`` call's, by
    handle: no node object is made for it)."""
    d = current(graph._backend)
    table = node_devices(graph)
    for h in handles:
        table.setdefault(h, d)


def _reset_several(backend: Any) -> None:
    """Forget that ``backend`` was used with several devices (tests only: one test's second
    device must not turn the next test's hot paths off); the hooks' ``on`` run."""
    with _several_lock:
        if not backend.several:
            return
        backend.several = False
        hooks = list(backend.memo.get("_several_hooks", ()))
    for _off, on in hooks:
        on()
