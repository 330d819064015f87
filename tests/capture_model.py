"""A pure-Python model of stream capture: which DAG a multi-stream program produces.

A program is a list of steps over streams 0..k-1; stream 0 starts the capture.
  ("op", s)          enqueue one node on stream s
  ("fork", s, t)     record an event on s, then stream t waits on it
At the end every stream that joined is joined back into stream 0 (record on it,
wait on 0), as a capture must be.  The runtime's rule, which the model applies:
a node depends on the capturing stream's current dependency set; waiting on an
event adds the event's set to the waiter's; enqueuing replaces the set by the
new node.
"""

from __future__ import annotations

from dataclasses import dataclass, field

Step = tuple


@dataclass
class CaptureModel:
    streams: int
    current: dict[int, frozenset[int]] = field(default_factory=dict)
    edges: set[tuple[int, int]] = field(default_factory=set)
    nodes: int = 0

    def __post_init__(self) -> None:
        self.current = {0: frozenset()}

    def op(self, s: int) -> int:
        if s not in self.current:
            raise ValueError(f"stream {s} is not part of the capture")
        n = self.nodes
        self.nodes += 1
        self.edges |= {(d, n) for d in self.current[s]}
        self.current[s] = frozenset({n})
        return n

    def fork(self, s: int, t: int) -> None:
        if s not in self.current:
            raise ValueError(f"stream {s} is not part of the capture")
        self.current[t] = self.current.get(t, frozenset()) | self.current[s]

    def join_all(self) -> None:
        for t in sorted(self.current):
            if t != 0:
                self.fork(t, 0)


def run_model(streams: int, program: list[Step]) -> CaptureModel:
    m = CaptureModel(streams)
    for step in program:
        if step[0] == "op":
            m.op(step[1])
        else:
            m.fork(step[1], step[2])
    m.join_all()
    return m


def valid_program(streams: int, program: list[Step]) -> list[Step]:
    """Drop steps that touch a stream before it joined the capture."""
    joined = {0}
    out = []
    for step in program:
        if step[0] == "op" and step[1] in joined:
            out.append(step)
        elif step[0] == "fork" and step[1] in joined and step[1] != step[2]:
            joined.add(step[2])
            out.append(step)
    return out
