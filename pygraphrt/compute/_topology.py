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
from typing import Hashable, Sequence

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


#: An edge ``(i, j)`` as :func:`edge_pairs` keeps it: ``i << PAIR_SHIFT | j`` (an int: no tuple per
#: edge for the cyclic collector to track; node indices stay below ``2**PAIR_SHIFT``).
PAIR_SHIFT = 32
PAIR_LOW = (1 << PAIR_SHIFT) - 1


def edge_pairs(reads_of: Sequence[Sequence[Hashable]], writes_of: Sequence[Sequence[Hashable]]) -> dict[int, None]:
    """The edges of :func:`infer` without their hazards, in the order they are found (an
    insertion-ordered set of ``i << PAIR_SHIFT | j``): what a build needs.  ``reads_of[j]`` and
    ``writes_of[j]``: node ``j``'s accesses as for :func:`infer`, each without repeats (a node's
    recorded reads and writes); not checked.

    Per variable the same rules: a node depends on the last writer of what it reads or
    writes, and a writer on every reader since that write.
    """
    last_writer: dict[Hashable, int] = {}
    readers: dict[Hashable, list[int]] = {}
    edges: dict[int, None] = {}
    for j, (reads, writes) in enumerate(zip(reads_of, writes_of)):
        for v in writes:  # (first: a variable both read and written is written)
            i = last_writer.get(v)
            if i is not None:
                edges[i << PAIR_SHIFT | j] = None
            rs = readers.get(v)
            if rs:
                for r in rs:
                    edges[r << PAIR_SHIFT | j] = None
            last_writer[v] = j
            readers[v] = []
        for v in reads:
            i = last_writer.get(v)
            if i == j:  # also written by this node: its edges are the write's
                continue
            if i is not None:
                edges[i << PAIR_SHIFT | j] = None
            rs = readers.get(v)
            if rs is None:
                readers[v] = [j]
            else:
                rs.append(j)
    return edges


__all__ = ["Hazard", "HazardKind", "infer"]
