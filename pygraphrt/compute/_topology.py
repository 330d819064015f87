"""Dependencies from accesses: the hazard graph of nodes written in program order.

For each buffer variable, in program order: a reader depends on the last writer
(read after write); a writer depends on the last writer (write after write) and on
every reader since that write (write after read).  Nodes with no hazard between them
stay independent, so the runtime may run them in parallel.  Value variables are host
values baked into the nodes' parameters: they order nothing.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Hashable, Sequence

from .. import errors
from .._operands import listed


class HazardKind(str, enum.Enum):
    """The kind of conflict between two nodes' accesses to a variable: read after write (RAW), write
    after read (WAR), write after write (WAW)."""
    READ_AFTER_WRITE = "RAW"
    WRITE_AFTER_READ = "WAR"
    WRITE_AFTER_WRITE = "WAW"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Hazard:
    """Why an edge exists: ``variable`` is accessed by both nodes, ``kind`` says how."""

    variable: str
    kind: HazardKind

    def __str__(self) -> str:
        return f"{self.variable} {self.kind.value}"

    def __repr__(self) -> str:
        return f"Hazard({self.variable!r}, {self.kind.value})"


def infer(accesses: Sequence[tuple[Sequence[Hashable], Sequence[Hashable]]],
          name=lambda v: str(v)) -> dict[tuple[int, int], list[Hazard]]:
    """Edges ``(i, j)`` (``i`` before ``j`` in program order) with the hazards that cause them.

    ``accesses[j]`` is ``(reads, writes)`` of node ``j``: ordered collections of
    variables (only those that order work: buffer variables).  ``name(var)`` labels a
    variable in the hazards.
    """
    last_writer: dict[Hashable, int] = {}
    readers: dict[Hashable, list[int]] = {}
    edges: dict[tuple[int, int], list[Hazard]] = {}

    def add(i: int, j: int, var: Hashable, kind: HazardKind) -> None:
        h = Hazard(name(var), kind)
        got = edges.setdefault((i, j), [])
        if h not in got:
            got.append(h)

    for j, access in enumerate(listed(accesses, "compute.infer", "(reads, writes) pairs")):
        try:
            reads, writes = access
            reads, writes = list(reads), list(writes)
            wset = set(writes)
            touched = list(dict.fromkeys([*reads, *writes]))
        except (TypeError, ValueError):
            raise errors.InvalidValue("compute.infer", detail=f"accesses[{j}] must be (reads, writes), two "
                                                              f"collections of hashable variables, got {access!r}"
                                      ) from None
        for v in touched:
            i = last_writer.get(v)
            if i is not None:
                if v in reads:
                    add(i, j, v, HazardKind.READ_AFTER_WRITE)
                if v in wset:
                    add(i, j, v, HazardKind.WRITE_AFTER_WRITE)
            if v in wset:
                for r in readers.get(v, ()):
                    if r != j:
                        add(r, j, v, HazardKind.WRITE_AFTER_READ)
        for v in touched:
            if v in wset:
                last_writer[v] = j
                readers[v] = []
            else:
                readers.setdefault(v, []).append(j)
    return dict(sorted(edges.items()))


class _Uses:
    """One variable's accesses so far, as :func:`index_accesses` goes through the nodes."""

    __slots__ = ("nodes", "writer", "readers", "orders")

    def __init__(self, j: int, orders: bool) -> None:
        self.orders = orders  # the variable's (read once)
        self.nodes = [j]  # every node that accesses it, in order, each once
        self.writer = -1  # its last writer (-1: none yet)
        self.readers: list[int] = []  # its readers since that write


def index_accesses(reads_of: Sequence[Sequence[Any]], writes_of: Sequence[Sequence[Any]]
                   ) -> tuple[list[int], list[int], dict[Any, list[int]]]:
    """What a build and its updates need of the nodes' accesses, in one pass: the edges of
    :func:`infer` without their hazards, and each variable's nodes.

    ``reads_of[j]`` and ``writes_of[j]``: node ``j``'s recorded variables (compute ``Var``s, each
    once); those whose ``orders`` is false (value variables) are indexed but make no edge.
    Returns ``(sources, targets, nodes_of)``: edge ``k`` is ``sources[k] -> targets[k]``, in the
    order found (ints the build indexes with: no tuple per edge); ``nodes_of[var]`` the nodes that
    access ``var``, in order.

    The edge rules are :func:`infer`'s, per variable: a node depends on the last writer of what it
    reads or writes, and a writer on every reader since that write.  Every edge found while node
    ``j`` is visited ends at ``j``: ``to[i] == j`` marks a source ``i`` found already.
    """
    uses: dict[Any, _Uses] = {}
    sources: list[int] = []
    targets: list[int] = []
    to = [-1] * len(reads_of)
    add_source, add_target = sources.append, targets.append
    for j, (reads, writes) in enumerate(zip(reads_of, writes_of)):
        for v in writes:  # (first: a variable both read and written is written)
            u = uses.get(v)
            if u is None:
                uses[v] = u = _Uses(j, v.orders)
            else:
                u.nodes.append(j)
            if not u.orders:
                continue
            i = u.writer
            if i >= 0 and to[i] != j:
                to[i] = j
                add_source(i)
                add_target(j)
            rs = u.readers
            if rs:
                for r in rs:
                    if to[r] != j:
                        to[r] = j
                        add_source(r)
                        add_target(j)
                rs.clear()
            u.writer = j
        for v in reads:
            u = uses.get(v)
            if u is None:
                uses[v] = u = _Uses(j, v.orders)
            elif u.nodes[-1] != j:
                u.nodes.append(j)
            if not u.orders:
                continue
            i = u.writer
            if i == j:  # also written by this node: its edges are the write's
                continue
            if i >= 0 and to[i] != j:
                to[i] = j
                add_source(i)
                add_target(j)
            u.readers.append(j)
    return sources, targets, {v: u.nodes for v, u in uses.items()}


__all__ = ["Hazard", "HazardKind", "infer"]
