"""Simulated graphs: nodes with their parameters, edges with edge data, clones, snapshots.

Parameters are kept as immutable Python values (not the runtime's structs), so an
executable graph can take a snapshot of a graph by sharing them: a setter replaces a
node's parameter object, it never changes one in place.  Child graphs and conditional
bodies are graphs owned by their node; a snapshot copies them recursively.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field, replace
from typing import Any, Iterator

from ..._bindings.cuda13 import ffi
from ._core import (DEFAULT_EDGE, PORT_LAUNCH_COMPLETION, PORT_PROGRAMMATIC, TYPE_PROGRAMMATIC,
                    EdgeData, SimError, enum, new_handle)

NT = enum("enum cudaGraphNodeType")
KERNEL = NT["cudaGraphNodeTypeKernel"]
MEMCPY = NT["cudaGraphNodeTypeMemcpy"]
MEMSET = NT["cudaGraphNodeTypeMemset"]
HOST = NT["cudaGraphNodeTypeHost"]
GRAPH = NT["cudaGraphNodeTypeGraph"]
EMPTY = NT["cudaGraphNodeTypeEmpty"]
WAIT_EVENT = NT["cudaGraphNodeTypeWaitEvent"]
EVENT_RECORD = NT["cudaGraphNodeTypeEventRecord"]
EXT_SIGNAL = NT["cudaGraphNodeTypeExtSemaphoreSignal"]
EXT_WAIT = NT["cudaGraphNodeTypeExtSemaphoreWait"]
MEM_ALLOC = NT["cudaGraphNodeTypeMemAlloc"]
MEM_FREE = NT["cudaGraphNodeTypeMemFree"]
CONDITIONAL = NT["cudaGraphNodeTypeConditional"]

TYPE_NAMES = {KERNEL: "KERNEL", MEMCPY: "MEMCPY", MEMSET: "MEMSET", HOST: "HOST", GRAPH: "GRAPH",
              EMPTY: "EMPTY", WAIT_EVENT: "WAIT_EVENT", EVENT_RECORD: "EVENT_RECORD",
              EXT_SIGNAL: "EXT_SEMAS_SIGNAL", EXT_WAIT: "EXT_SEMAS_WAIT", MEM_ALLOC: "MEM_ALLOC",
              MEM_FREE: "MEM_FREE", CONDITIONAL: "CONDITIONAL"}

COND = enum("enum cudaGraphConditionalNodeType")
COND_IF, COND_WHILE, COND_SWITCH = COND["cudaGraphCondTypeIf"], COND["cudaGraphCondTypeWhile"], \
    COND["cudaGraphCondTypeSwitch"]


# -- parameters ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class MemsetP:
    dst: int
    pitch: int
    value: int
    element_size: int
    width: int
    height: int

    @property
    def span(self) -> int:
        """Bytes from ``dst`` to the end of the last row written (0 when nothing is set)."""
        if not self.width or not self.height:
            return 0
        return (self.height - 1) * self.pitch + self.width * self.element_size


@dataclass(frozen=True)
class Pitched:
    ptr: int
    pitch: int
    xsize: int
    ysize: int


@dataclass(frozen=True)
class MemcpyP:
    src: Pitched
    src_pos: tuple[int, int, int]
    dst: Pitched
    dst_pos: tuple[int, int, int]
    extent: tuple[int, int, int]  # width in bytes, height, depth
    kind: int

    @property
    def is_1d(self) -> bool:
        return self.extent[1] == 1 and self.extent[2] == 1 and self.src_pos == (0, 0, 0) \
            and self.dst_pos == (0, 0, 0)

    @classmethod
    def one_d(cls, dst: int, src: int, count: int, kind: int) -> "MemcpyP":
        return cls(Pitched(src, count, count, 1), (0, 0, 0), Pitched(dst, count, count, 1), (0, 0, 0),
                   (count, 1, 1), kind)


@dataclass(frozen=True)
class HostP:
    fn: Any  # cudaHostFn_t (a C function pointer: pygraphrt's trampoline or anyone's)
    user: Any  # void *
    sync_mode: int = 0


@dataclass(frozen=True)
class ChildP:
    graph: "Graph"  # owned by the node


@dataclass(frozen=True)
class EventP:
    event: int


@dataclass(frozen=True)
class AllocP:
    block: Any  # _memory.Block: the reserved range
    bytesize: int
    device: int
    pool_props: bytes  # the cudaMemPoolProps as given (read back as given)
    access: bytes  # cudaMemAccessDesc array as given
    _access: list[Any] = field(default_factory=list, init=False, compare=False, repr=False)

    @property
    def dptr(self) -> int:
        return int(self.block.base)

    def access_array(self) -> Any:
        """The access descriptors as a C array owned by the node (NULL: none)."""
        if not self.access:
            return ffi.NULL
        if not self._access:
            arr = ffi.new("char[]", self.access)
            self._access.append(ffi.cast("struct cudaMemAccessDesc *", arr))
            self._access.append(arr)
        return self._access[0]


@dataclass(frozen=True)
class FreeP:
    dptr: int


@dataclass(frozen=True)
class KernelP:
    kernel: Any  # _kernels.SimKernel
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    smem: int
    args: tuple[bytes, ...]  # each parameter's bytes, copied at the launch / node creation
    attrs: tuple[tuple[int, bytes], ...] = ()  # launch attributes: (id, value bytes)
    _argv: list[Any] = field(default_factory=list, init=False, compare=False, repr=False)

    def argv(self) -> Any:
        """A ``void **`` to this node's own argument copies (what GetParams reports)."""
        if not self._argv:
            if not self.args:
                self._argv.append(ffi.NULL)
            else:
                cells = [ffi.new("char[]", a if a else b"\0") for a in self.args]
                arr = ffi.new("void *[]", cells)
                self._argv.extend([arr, cells])
        return self._argv[0]

    def attr(self, ident: int) -> bytes | None:
        for i, v in self.attrs:
            if i == ident:
                return v
        return None

    def with_attr(self, ident: int, value: bytes) -> "KernelP":
        attrs = tuple((i, v) for i, v in self.attrs if i != ident) + ((ident, value),)
        return replace(self, attrs=attrs)


@dataclass(frozen=True)
class CondP:
    handle: int
    kind: int
    size: int
    bodies: tuple["Graph", ...]  # owned by the node
    out: Any = field(compare=False, repr=False)  # cudaGraph_t[] the runtime hands back (phGraph_out)


# -- graphs -------------------------------------------------------------------------------------
class Node:
    __slots__ = ("handle", "graph", "type", "params", "deps", "outs", "local_id", "tools_id", "device",
                 "__weakref__")

    def __init__(self, graph: "Graph", type_: int, params: Any, device: int = 0) -> None:
        self.handle = new_handle()
        self.graph = graph
        self.type = type_
        self.params = params
        # the device whose context the node runs in: the current device when it was added, the
        # stream's device when it was captured (a runtime node's context)
        self.device = device
        self.deps: list[tuple[Node, EdgeData]] = []
        self.outs: list[tuple[Node, EdgeData]] = []
        self.local_id = graph.next_local_id
        graph.next_local_id += 1
        self.tools_id = (graph.id << 32) | self.local_id

    def __repr__(self) -> str:
        return f"<sim node {TYPE_NAMES.get(self.type, self.type)} {self.handle:#x}>"


class CondHandle:
    __slots__ = ("value", "graph", "default", "flags")

    def __init__(self, value: int, graph: "Graph", default: int, flags: int) -> None:
        self.value = value
        self.graph = graph
        self.default = default
        self.flags = flags


_graph_ids = iter(range(1, 1 << 31))


class Graph:
    """A graph (``cudaGraph_t``)."""

    def __init__(self) -> None:
        self.handle = new_handle()
        self.id = next(_graph_ids)
        self.nodes: list[Node] = []
        self.edges: list[tuple[Node, Node, EdgeData]] = []
        self.next_local_id = 0
        self.owner: Node | None = None  # the child-graph / conditional node that owns it
        self.capture: Any = None  # a capture in progress into this graph
        self.clone_of: int | None = None  # handle of the graph this is a clone of
        self.clone_map: dict[int, Node] = {}  # original node handle -> node of this clone
        self.cond_handles: list[CondHandle] = []
        self.live_execs = 0  # executables instantiated from it (graphs with memory nodes: at most 1)
        self.destroyed = False

    def __repr__(self) -> str:
        return f"<sim graph {self.handle:#x} ({len(self.nodes)} nodes)>"

    # -- structure ---------------------------------------------------------------------------
    def has_memory_nodes(self) -> bool:
        return any(n.type in (MEM_ALLOC, MEM_FREE) for n in self.nodes)

    def has_conditional_nodes(self) -> bool:
        return any(n.type == CONDITIONAL for n in self.nodes)

    def add_node(self, type_: int, params: Any, deps: list[Node], edges: list[EdgeData], device: int = 0) -> Node:
        if len(set(id(d) for d in deps)) != len(deps):
            raise SimError("InvalidValue", "the dependencies hold the same node twice")
        for d in deps:
            if d.graph is not self:
                raise SimError("InvalidValue", f"dependency {d.handle:#x} belongs to another graph")
        for d, e in zip(deps, edges):
            check_edge(d.type, type_, e)
        node = Node(self, type_, params, device)
        self.nodes.append(node)
        for d, e in zip(deps, edges):
            self._link(d, node, e)
        return node

    def _link(self, a: Node, b: Node, e: EdgeData) -> None:
        a.outs.append((b, e))
        b.deps.append((a, e))
        self.edges.append((a, b, e))

    def add_edge(self, a: Node, b: Node, e: EdgeData) -> None:
        if a.graph is not self or b.graph is not self:
            raise SimError("InvalidValue", "an edge's nodes must belong to the graph")
        if a is b:
            raise SimError("InvalidValue", "a node cannot depend on itself")
        if any(x is b for x, _ in a.outs):
            raise SimError("InvalidValue", f"the edge {a.handle:#x} -> {b.handle:#x} exists already")
        check_edge(a.type, b.type, e)
        self._link(a, b, e)

    def remove_edge(self, a: Node, b: Node, e: EdgeData) -> None:
        for i, (x, y, d) in enumerate(self.edges):
            if x is a and y is b:
                # CUDA 12.9-13.5 remove the edge whatever edge data the call names (documented to
                # match it): a known deviation the simulator reproduces (edges.data.remove_with_other_data)
                del self.edges[i]
                a.outs = [(n, d2) for n, d2 in a.outs if n is not b]
                b.deps = [(n, d2) for n, d2 in b.deps if n is not a]
                return
        raise SimError("InvalidValue", f"there is no edge {a.handle:#x} -> {b.handle:#x}")

    def remove_node(self, node: Node) -> None:
        for d, _ in list(node.deps):
            d.outs = [(n, e) for n, e in d.outs if n is not node]
        for o, _ in list(node.outs):
            o.deps = [(n, e) for n, e in o.deps if n is not node]
        self.edges = [(a, b, e) for a, b, e in self.edges if a is not node and b is not node]
        self.nodes.remove(node)
        node.deps, node.outs = [], []

    def roots(self) -> list[Node]:
        return [n for n in self.nodes if not n.deps]

    def walk(self) -> Iterator["Graph"]:
        """This graph and every graph owned by its nodes (child graphs, conditional bodies)."""
        yield self
        for n in self.nodes:
            for g in owned_graphs(n):
                yield from g.walk()


def owned_graphs(node: Node) -> tuple[Graph, ...]:
    if node.type == GRAPH:
        return (node.params.graph,)
    if node.type == CONDITIONAL:
        return tuple(node.params.bodies)
    return ()


def check_edge(src_type: int, dst_type: int, e: EdgeData) -> None:
    """The runtime's rules for edge data (cudaGraphEdgeData): only kernel nodes have non-zero
    outgoing ports; no node has incoming ports; programmatic edges join two kernel nodes."""
    from_port, to_port, kind = e
    if e == DEFAULT_EDGE:
        return
    if to_port != 0:
        raise SimError("InvalidValue", f"edge data to_port {to_port}: no node type defines incoming ports")
    if kind not in (0, TYPE_PROGRAMMATIC):
        raise SimError("InvalidValue", f"edge data type {kind} is not a cudaGraphDependencyType")
    if from_port not in (0, PORT_PROGRAMMATIC, PORT_LAUNCH_COMPLETION):
        raise SimError("InvalidValue", f"edge data from_port {from_port} is not a kernel node port")
    if from_port and src_type != KERNEL:
        raise SimError("InvalidValue", "non-zero outgoing ports are defined for kernel nodes only")
    if kind == TYPE_PROGRAMMATIC:
        if src_type != KERNEL or dst_type != KERNEL:
            raise SimError("InvalidValue", "programmatic edges may only join two kernel nodes")
        if from_port not in (PORT_PROGRAMMATIC, PORT_LAUNCH_COMPLETION):
            raise SimError("InvalidValue", "a programmatic edge leaves from the programmatic or the "
                                           "launch-completion port")
    elif from_port == PORT_PROGRAMMATIC:
        raise SimError("InvalidValue", "the programmatic port is used with programmatic edges only")


def order(nodes: list[Any], deps_of: Any, rng: Any = None) -> list[Any]:
    """A topological order of ``nodes`` (every edge respected): creation order among the ready
    nodes, or a random choice among them with ``rng``.  Raises InvalidValue on a cycle."""
    index = {id(n): i for i, n in enumerate(nodes)}
    waiting = [0] * len(nodes)
    outs: list[list[int]] = [[] for _ in nodes]
    for i, n in enumerate(nodes):
        for d in deps_of(n):
            waiting[i] += 1
            outs[index[id(d)]].append(i)
    ready = [i for i, w in enumerate(waiting) if w == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        if rng is not None:
            k = rng.randrange(len(ready))
            ready[k], ready[-1] = ready[-1], ready[k]
            i = ready.pop()
        else:
            i = heapq.heappop(ready)
        out.append(nodes[i])
        for j in outs[i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                if rng is not None:
                    ready.append(j)
                else:
                    heapq.heappush(ready, j)
    if len(out) != len(nodes):
        raise SimError("InvalidValue", "the graph has a cycle")
    return out


# -- snapshots (what an executable graph runs) --------------------------------------------------
class SNode:
    __slots__ = ("orig", "type", "params", "deps", "enabled", "child", "bodies", "local_id", "device")

    def __init__(self, node: Node, deps: list[tuple[int, EdgeData]]) -> None:
        self.orig = node.handle
        self.type = node.type
        self.params = node.params
        self.deps = deps
        self.enabled = True
        self.local_id = node.local_id
        self.device = node.device
        self.child: Snapshot | None = None
        self.bodies: list[Snapshot] = []


class Snapshot:
    """A graph frozen for execution: nodes in creation order, edges by index."""

    def __init__(self, graph: Graph) -> None:
        self.graph_id = graph.id
        index = {n.handle: i for i, n in enumerate(graph.nodes)}
        self.nodes: list[SNode] = []
        for n in graph.nodes:
            s = SNode(n, [(index[d.handle], e) for d, e in n.deps])
            if n.type == GRAPH:
                s.child = Snapshot(n.params.graph)
            elif n.type == CONDITIONAL:
                s.bodies = [Snapshot(b) for b in n.params.bodies]
            self.nodes.append(s)
        self.handles = list(graph.cond_handles)
        self._order: list[SNode] | None = None

    def walk(self) -> Iterator["Snapshot"]:
        yield self
        for n in self.nodes:
            if n.child is not None:
                yield from n.child.walk()
            for b in n.bodies:
                yield from b.walk()

    def order(self, rng: Any = None) -> list[SNode]:
        if rng is not None:
            return order(self.nodes, lambda n: [self.nodes[i] for i, _ in n.deps], rng)
        if self._order is None:
            self._order = order(self.nodes, lambda n: [self.nodes[i] for i, _ in n.deps])
        return self._order
