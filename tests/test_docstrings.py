"""Every public callable has a docstring for users (the API reference renders them).

"Public": every name in ``pygraphrt.__all__`` and in the ``__all__`` of the public modules
(below); for a class, its public methods and properties -- its own and those it inherits from
pygraphrt classes (not ``object``'s, ``enum``'s or ``int``'s).  A name without a docstring, or whose
help would show a comment above it instead (``inspect.getdoc`` is None), fails here.
"""

from __future__ import annotations

import enum
import importlib
import inspect
from typing import Any, Iterator

import pytest

PUBLIC_MODULES = ("pygraphrt", "pygraphrt.errors", "pygraphrt.enums", "pygraphrt.device", "pygraphrt.lowlevel",
                  "pygraphrt.mempool", "pygraphrt.extsem", "pygraphrt.multidevice", "pygraphrt.sim",
                  "pygraphrt.graph", "pygraphrt.kernels", "pygraphrt.compute", "pygraphrt.conformance",
                  "pygraphrt.nccl")


def _own_doc(obj: Any) -> str | None:
    """The object's own docstring (``__doc__`` as written, not inherited from a base class)."""
    doc = obj.__doc__ if not isinstance(obj, property) else (obj.fget.__doc__ if obj.fget else obj.__doc__)
    return doc if doc and doc.strip() else None


def _members(cls: type) -> Iterator[tuple[str, Any]]:
    """Public methods and properties of ``cls``, from pygraphrt classes in its MRO."""
    seen: set[str] = set()
    for base in cls.__mro__:
        if not base.__module__.startswith("pygraphrt") or issubclass(base, BaseException) and base.__module__ == "builtins":
            continue
        for name, value in vars(base).items():
            if name.startswith("_") or name in seen:
                continue
            seen.add(name)
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            if isinstance(value, property) or inspect.isfunction(value) or inspect.ismethoddescriptor(value):
                yield f"{base.__name__}.{name}", value


def public_callables() -> list[tuple[str, Any]]:
    out: dict[str, Any] = {}
    for modname in PUBLIC_MODULES:
        mod = importlib.import_module(modname)
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name)
            if inspect.ismodule(obj):
                continue
            if inspect.isclass(obj):
                out.setdefault(f"{obj.__module__}.{obj.__qualname__}", obj)
                if issubclass(obj, enum.Enum):
                    continue  # (members are values; the class docstring says what they mean)
                for qual, member in _members(obj):
                    out.setdefault(f"{obj.__module__}.{qual}", member)
            elif callable(obj) and (inspect.isfunction(obj) or inspect.isbuiltin(obj)):
                out.setdefault(f"{getattr(obj, '__module__', modname)}.{obj.__qualname__}", obj)
    return sorted(out.items())


def test_every_public_callable_has_a_docstring():
    missing = [name for name, obj in public_callables() if _own_doc(obj) is None]
    assert not missing, f"{len(missing)} public callables without a docstring:\n  " + "\n  ".join(missing)


def test_the_checker_sees_the_public_api():
    names = dict(public_callables())
    for name in ("pygraphrt.graph._graph.Graph.nodes", "pygraphrt.device.Stream.memcpy", "pygraphrt.device.malloc",
                 "pygraphrt.graph._exec.GraphExec.launch", "pygraphrt.device.Stream.is_capturing"):
        assert name in names, name


@pytest.mark.parametrize("name", ["pygraphrt.graph._graph.Graph.to_networkx", "pygraphrt.graph._exec.GraphExec.launch"])
def test_docstrings_speak_to_users_not_of_internals(name):
    """Not a section comment (``# -- export``), not implementation notes (the hot path)."""
    doc = _own_doc(dict(public_callables())[name]) or ""
    assert doc and "hot path" not in doc and "cffi" not in doc and ("Returns" in doc or "Parameters" in doc), doc


def test_each_public_module_has_an_api_reference_page():
    """docs/api/<module>.md autodocs each public module (its ``__all__``), and the API index lists
    the page: a public module added to the list above without a page fails here."""
    from pathlib import Path

    api = Path(__file__).resolve().parent.parent / "docs" / "api"
    index = (api / "index.md").read_text()
    for modname in PUBLIC_MODULES:
        short = modname.rsplit(".", 1)[-1]
        page = api / f"{short}.md"
        assert page.is_file(), f"no API reference page {page} for {modname}"
        assert f".. automodule:: {modname}\n" in page.read_text(), f"{page} does not autodoc {modname}"
        assert f"\n{short}\n" in index, f"docs/api/index.md does not list {short}"
