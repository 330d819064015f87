"""Optional dependencies, imported where a feature needs them, with the fix in the error."""

from __future__ import annotations

from typing import Any


def networkx(what: str) -> Any:
    """The ``networkx`` module; ImportError naming ``what`` and the extra to install without it."""
    try:
        import networkx as nx
    except ImportError as exc:
        raise ImportError(f"{what} needs networkx: pip install 'pygraphrt[networkx]' "
                          "(or pip install networkx)") from exc
    return nx
