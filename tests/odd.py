"""Odd argument values the generated-call tests share."""

from __future__ import annotations


class Index:
    """An object with ``__index__`` only (not an int): an int to pygraphrt wherever one is taken."""

    def __init__(self, v: int) -> None:
        self.v = v

    def __index__(self) -> int:
        return self.v

    def __repr__(self) -> str:
        return f"Index({self.v})"
