"""The automatic compute graph: variables, nodes in program order, inferred dependencies.

After muda's compute graph: declare variables once, write each node as a closure that
reads and writes them, in the program's logical order; the graph derives its edges
(read after write, write after read, write after write), updates exactly the nodes
that use a changed variable, and can run the same closures on one stream for
debugging::

    from pygraphrt import compute

    vars = compute.VarManager()
    x, y = vars.buffer("x", rt.malloc(n)), vars.buffer("y", rt.malloc(n))
    g = compute.ComputeGraph(vars, "demo")

    @g.node("init_x")
    def _(ctx):
        ctx.memset(x.write(), 1)

    @g.node("copy")
    def _(ctx):
        ctx.memcpy(y.write(), x.read())

    g.launch(stream)                       # init_x -> copy (x: read after write)
    x.update(other_buffer); g.launch(stream)  # only the nodes using x are updated
    g.launch(stream, single_stream=True)   # the closures as plain stream work

See :class:`ComputeGraph`, :class:`VarManager`, :class:`NodeContext`.
"""

from __future__ import annotations

from ._graph import ComputeGraph, ComputeNode, RebuildWarning, UpdateReport
from ._topology import Hazard, HazardKind, infer
from ._vars import BufferVar, ValueVar, Var, VarManager
from ._work import NodeContext

__all__ = ["BufferVar", "ComputeGraph", "ComputeNode", "Hazard", "HazardKind", "NodeContext",
           "RebuildWarning", "UpdateReport", "ValueVar", "Var", "VarManager", "infer"]
