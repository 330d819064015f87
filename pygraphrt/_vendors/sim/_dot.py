"""``cudaGraphDebugDotPrint`` for simulated graphs: a DOT description of the graph.

Node names are ``graph_<id>_node_<local id>`` (the ids ``cudaGraphGetId`` and
``cudaGraphNodeGetLocalId`` report); child graphs and conditional bodies are clusters.
With the verbose flag (or the per-type flags) each label carries the node's parameters.
"""

from __future__ import annotations

from typing import Any

from ._core import DEFAULT_EDGE, enum
from ._graph import (CONDITIONAL, EVENT_RECORD, HOST, KERNEL, MEM_ALLOC, MEM_FREE, MEMCPY, MEMSET, TYPE_NAMES,
                     WAIT_EVENT, Graph, Node, owned_graphs)

FLAGS = enum("enum cudaGraphDebugDotFlags")
VERBOSE = FLAGS["cudaGraphDebugDotFlagsVerbose"]
_PER_TYPE = {KERNEL: FLAGS["cudaGraphDebugDotFlagsKernelNodeParams"],
             MEMCPY: FLAGS["cudaGraphDebugDotFlagsMemcpyNodeParams"],
             MEMSET: FLAGS["cudaGraphDebugDotFlagsMemsetNodeParams"],
             HOST: FLAGS["cudaGraphDebugDotFlagsHostNodeParams"],
             EVENT_RECORD: FLAGS["cudaGraphDebugDotFlagsEventNodeParams"],
             WAIT_EVENT: FLAGS["cudaGraphDebugDotFlagsEventNodeParams"],
             CONDITIONAL: FLAGS["cudaGraphDebugDotFlagsConditionalNodeParams"]}


def _name(n: Node) -> str:
    return f"graph_{n.graph.id}_node_{n.local_id}"


def _params(n: Node) -> list[str]:
    p = n.params
    if n.type == MEMSET:
        return [f"dst {p.dst:#x}", f"value {p.value:#x}", f"elementSize {p.element_size}",
                f"width {p.width}", f"height {p.height}", f"pitch {p.pitch}"]
    if n.type == MEMCPY:
        w, h, d = p.extent
        return [f"src {p.src.ptr:#x}", f"dst {p.dst.ptr:#x}", f"extent {w} x {h} x {d}", f"kind {p.kind}"]
    if n.type == KERNEL:
        return [f"kernel {p.kernel.name}", f"grid {p.grid}", f"block {p.block}", f"sharedMem {p.smem}"]
    if n.type == HOST:
        return [f"fn {int(_ffi().cast('uintptr_t', p.fn)):#x}"]
    if n.type in (EVENT_RECORD, WAIT_EVENT):
        return [f"event {p.event:#x}"]
    if n.type == MEM_ALLOC:
        return [f"dptr {p.dptr:#x}", f"bytesize {p.bytesize}", f"device {p.device}"]
    if n.type == MEM_FREE:
        return [f"dptr {p.dptr:#x}"]
    if n.type == CONDITIONAL:
        kind = {0: "if", 1: "while", 2: "switch"}.get(p.kind, str(p.kind))
        return [f"{kind} handle {p.handle:#x}", f"size {p.size}"]
    return []


def _ffi() -> Any:
    from ..._bindings.cuda13 import ffi

    return ffi


def _body(g: Graph, flags: int, out: list[str], indent: str) -> None:
    for n in g.nodes:
        label = [f"{n.local_id}", TYPE_NAMES.get(n.type, str(n.type))]
        if flags & VERBOSE or flags & _PER_TYPE.get(n.type, 0):
            label += _params(n)
        text = "\\n".join(x.replace('"', "'") for x in label)
        out.append(f'{indent}"{_name(n)}" [shape=box, label="{text}"];')
        for i, sub in enumerate(owned_graphs(n)):
            out.append(f'{indent}subgraph "cluster_graph_{sub.id}" {{')
            out.append(f'{indent}  label="graph {sub.id} ({"body " + str(i) if n.type == CONDITIONAL else "child"} '
                       f'of node {n.local_id})";')
            _body(sub, flags, out, indent + "  ")
            out.append(f"{indent}}}")
    for a, b, e in g.edges:
        attr = "" if e == DEFAULT_EDGE else f' [label="port {e[0]} -> {e[1]}, type {e[2]}", style=dashed]'
        out.append(f'{indent}"{_name(a)}" -> "{_name(b)}"{attr};')


def dot(g: Graph, flags: int) -> str:
    out = [f'digraph "graph_{g.id}" {{', '  label="pygraphrt simulator graph";']
    _body(g, flags, out, "  ")
    out.append("}")
    return "\n".join(out) + "\n"


__all__ = ["dot"]
