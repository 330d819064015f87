"""Pictures of a compute graph: Graphviz DOT and networkx."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import _optional
from ._vars import ValueVar

if TYPE_CHECKING:
    from ._graph import ComputeGraph


def _esc(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _q(*lines: str) -> str:
    """A quoted DOT string; several lines are joined with DOT's centred line break."""
    return '"' + "\\n".join(_esc(s) for s in lines) + '"'


def to_dot(g: "ComputeGraph", *, variables: bool = True) -> str:
    edges = g.edges()
    lines = [f"digraph {_q(g.name)} {{", "  node [shape=box, style=rounded];"]
    for n in g.nodes():
        work = ", ".join(w[0].describe(w) for w in n.items) or "empty"
        where = () if n.device is None else (f"device {n.device}",)
        lines.append(f"  {_q('node:' + n.name)} [label={_q(n.name, work, *where)}];")
    if variables:
        used: dict[Any, None] = {}
        for n in g.nodes():
            used.update(dict.fromkeys(n.reads))
            used.update(dict.fromkeys(n.writes))
        for v in used:
            shape = "note" if isinstance(v, ValueVar) else "ellipse"
            lines.append(f"  {_q('var:' + v.name)} [label={_q(v.name)}, shape={shape}, style=filled, "
                         'fillcolor="#f0f0f0"];')
        for n in g.nodes():
            for v in n.reads:
                lines.append(f"  {_q('var:' + v.name)} -> {_q('node:' + n.name)} "
                             '[color=red, style=dashed, arrowhead=open];')
            for v in n.writes:
                lines.append(f"  {_q('node:' + n.name)} -> {_q('var:' + v.name)} "
                             '[color=blue, style=dashed, arrowhead=open];')
    for a, b, hazards in edges:
        label = ", ".join(str(h) for h in hazards)
        lines.append(f"  {_q('node:' + a.name)} -> {_q('node:' + b.name)} [label={_q(label)}, penwidth=2];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_networkx(g: "ComputeGraph") -> Any:
    nx = _optional.networkx("ComputeGraph.to_networkx")
    d = nx.DiGraph(name=g.name)
    edges = g.edges()
    for n in g.nodes():
        d.add_node(n.name, index=n.index, reads=[v.name for v in n.reads],
                   writes=[v.name for v in n.writes], work=n.work, device=n.device)
    for a, b, hazards in edges:
        d.add_edge(a.name, b.name, hazards=[(h.variable, h.kind.value) for h in hazards])
    return d
