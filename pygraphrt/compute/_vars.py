"""Variables of the compute graph: declared once, bound (and rebound) to memory or values.

A :class:`VarManager` creates named variables.  A :class:`BufferVar` stands for a range
of memory (a pygraphrt buffer, an array view: anything with an address and a size);
a :class:`ValueVar` for a host value (a scalar, a small struct) that nodes pass to their
work, e.g. as a kernel argument.  Variables are virtual until bound with
``var.update(obj)``.  Inside a node's closure ``var.read()`` / ``var.write()`` return the
bound object and record the access; the compute graph derives its edges from those records.
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING, Any, Iterator

from .. import errors
from .._operands import extent

if TYPE_CHECKING:
    from ._graph import ComputeGraph


class _Recorder:
    """The accesses one evaluation of one node's closure makes (what the variables read of the
    thread's active recorder: the evaluation's NodeContext, which has these attributes)."""

    __slots__ = ("graph", "manager", "node", "reads", "writes")

    def __init__(self, graph: "ComputeGraph", node: str) -> None:
        self.graph = graph
        self.manager = graph.manager  # (what every access is checked against)
        self.node = node
        self.reads: list[Var] = []   # in the order made, repeats kept (the evaluation drops them)
        self.writes: list[Var] = []


class _Slot:
    """A thread's active recorder (``rec``: the NodeContext of the closure being evaluated, or
    None).  The thread-local holds one slot per thread, so an evaluation sets a plain attribute
    (cheap) rather than the thread-local's own (a lookup of the thread's dictionary each)."""

    __slots__ = ("rec", "spare")

    def __init__(self) -> None:
        self.rec: _Recorder | None = None
        self.spare: Any = None  # a NodeContext no closure kept, for the thread's next evaluation


class _Active(threading.local):
    slot: _Slot

    def __init__(self) -> None:  # (run once in each thread that uses it)
        self.slot = _Slot()


_active = _Active()


def thread_slot() -> _Slot:
    """This thread's slot (see :class:`_Slot`)."""
    return _active.slot


def _current(var: "Var", how: str) -> _Recorder:
    rec = _active.slot.rec
    if rec is None:
        raise errors.IllegalState(f"Var.{how}", detail=f"{var.name}.{how}() records an access and "
                                  "belongs inside a compute-graph node's closure; use "
                                  f"{var.name}.value to get the bound object elsewhere")
    if var.manager is not rec.manager:
        raise errors.InvalidValue(f"Var.{how}", detail=f"variable {var.name!r} belongs to another "
                                  f"VarManager than graph {rec.graph.name!r} (node {rec.node!r})")
    return rec


class Var:
    """A named variable of a :class:`VarManager` (see :class:`BufferVar`, :class:`ValueVar`)."""

    kind = "var"
    #: Whether accesses to the variable order the nodes (buffer variables: memory the work
    #: reads and writes; value variables, baked into parameters and never written by a node,
    #: order nothing: leaving them out spares the inference their reads).
    orders = False
    # (slots: the compiled accesses, compute._hot, read them at fixed offsets; __dict__ keeps
    # subclasses' and users' own attributes, __weakref__ weak references, as before)
    __slots__ = ("manager", "name", "_solo", "_obj", "_bound", "__dict__", "__weakref__")

    def __init__(self, manager: "VarManager", name: str) -> None:
        self.manager = manager
        self.name = name
        self._solo = (self,)  # the accesses of a node that uses this variable alone
        self._obj: Any = None
        self._bound = False

    def __repr__(self) -> str:
        state = "bound" if self._bound else "unbound"
        return f"<{type(self).__name__} {self.name!r} {state}>"

    @property
    def is_bound(self) -> bool:
        """Whether a value or buffer is bound to the variable."""
        return self._bound

    @property
    def value(self) -> Any:
        """The bound object, without recording an access."""
        if not self._bound:
            raise errors.IllegalState(f"{self.name}.value", detail=f"variable {self.name!r} is not "
                                      f"bound: call {self.name}.update(obj) first")
        return self._obj

    def _bound_obj(self, how: str, rec: _Recorder) -> Any:
        if not self._bound:
            raise errors.IllegalState(f"Var.{how}", detail=f"node {rec.node!r} of graph "
                                      f"{rec.graph.name!r} uses variable {self.name!r}, which is not "
                                      f"bound: call {self.name}.update(obj) first")
        return self._obj

    def read(self) -> Any:
        """The bound object; inside a node's closure, records that the node reads this variable."""
        # (the common case inline: every node's every access runs this, in every phase)
        rec = _active.slot.rec
        if rec is not None and rec.manager is self.manager and self._bound:
            rec.reads.append(self)
            return self._obj
        rec = _current(self, "read")
        rec.reads.append(self)
        return self._bound_obj("read", rec)

    def write(self) -> Any:
        """The bound object; inside a node's closure, records that the node writes this variable."""
        rec = _active.slot.rec
        if rec is not None and rec.manager is self.manager and self._bound:
            rec.writes.append(self)
            return self._obj
        rec = _current(self, "write")
        rec.writes.append(self)
        return self._bound_obj("write", rec)

    def read_write(self) -> Any:
        """The bound object; records both a read and a write (an in-place update)."""
        rec = _current(self, "read_write")
        rec.reads.append(self)
        rec.writes.append(self)
        return self._bound_obj("read_write", rec)

    def update(self, obj: Any) -> None:
        """Bind (or rebind) the variable; graphs using it update their nodes at their next launch."""
        self._obj = obj
        self._bound = True
        self.manager._changed(self)


class BufferVar(Var):
    """A variable for a range of memory: device buffers, device or host array views.

    Bound to a pygraphrt buffer, anything with ``__cuda_array_interface__`` or
    ``__array_interface__``, a torch tensor, a DLPack array, or an int address with
    ``nbytes``.  Binding memory that overlaps another bound buffer variable of the same
    manager raises :class:`pygraphrt.errors.VariableOverlap`.
    """

    kind = "buffer"
    orders = True

    def __init__(self, manager: "VarManager", name: str) -> None:
        super().__init__(manager, name)
        self.range: tuple[int, int] | None = None   # (address, nbytes)

    @property
    def address(self) -> int:
        """The device address of the buffer bound to this variable.

        Raises
        ------
        InvalidValue
            The variable is not bound yet.
        """
        self.value
        assert self.range is not None
        return self.range[0]

    @property
    def nbytes(self) -> int:
        """The size in bytes of the buffer bound to this variable."""
        self.value
        assert self.range is not None
        return self.range[1]

    def update(self, obj: Any, nbytes: int | None = None) -> None:  # type: ignore[override]
        """Bind to ``obj`` (``nbytes``: its size where ``obj`` is an int address, or a prefix)."""
        rng = extent(obj, nbytes)
        self.manager._check_overlap(self, rng)
        self.range = rng
        super().update(obj)


class ValueVar(Var):
    """A variable for a host value (a scalar, a small struct) that nodes read.

    Nodes cannot write it: the host sets it with ``update(value)``; the nodes that read
    it are updated on the executable graph at the next launch (e.g. kernel arguments).
    """

    kind = "value"

    def write(self) -> Any:
        """Refused: a value variable is set from the host with ``update()``; nodes can only read it.

        Raises
        ------
        InvalidValue
            Always.
        """
        raise errors.InvalidValue("ValueVar.write", detail=f"{self.name!r} is a value variable: it is "
                                  "set from the host with update(); nodes can only read it")

    read_write = write


class VarManager:
    """Creates and owns named variables; graphs built over it follow their updates.

    Examples
    --------
    >>> vars = VarManager()
    >>> x = vars.buffer("x"); n = vars.value("n")
    >>> x.update(rt.malloc(1024)); n.update(256)
    """

    def __init__(self) -> None:
        self._vars: dict[str, Var] = {}
        self._graphs: weakref.WeakSet[ComputeGraph] = weakref.WeakSet()

    def __repr__(self) -> str:
        return f"<VarManager {len(self._vars)} variables>"

    def __iter__(self) -> Iterator[Var]:
        return iter(self._vars.values())

    def __len__(self) -> int:
        return len(self._vars)

    def __getitem__(self, name: str) -> Var:
        return self._vars[name]

    def _create(self, cls: type[Var], name: str, init: Any, **kw: Any) -> Any:
        if not isinstance(name, str) or not name:
            raise errors.InvalidValue("VarManager", detail=f"a variable needs a non-empty name, got {name!r}")
        if name in self._vars:
            raise errors.InvalidValue("VarManager", detail=f"variable {name!r} already exists")
        var = cls(self, name)
        if init is not _UNBOUND:
            var.update(init, **kw)  # may refuse (overlap): then the variable is not created
        self._vars[name] = var
        return var

    def buffer(self, name: str, obj: Any = None, *, nbytes: int | None = None) -> BufferVar:
        """A new buffer variable (bound to ``obj`` if given)."""
        return self._create(BufferVar, name, _UNBOUND if obj is None else obj,
                            **({} if nbytes is None else {"nbytes": nbytes}))

    def value(self, name: str, value: Any = None) -> ValueVar:
        """A new value variable (bound to ``value`` if given; ``None`` leaves it unbound)."""
        return self._create(ValueVar, name, _UNBOUND if value is None else value)

    def _check_overlap(self, var: BufferVar, rng: tuple[int, int]) -> None:
        start, size = rng
        if size == 0:
            return
        for other in self._vars.values():
            if other is var or not isinstance(other, BufferVar) or other.range is None:
                continue
            o_start, o_size = other.range
            if o_size and start < o_start + o_size and o_start < start + size:
                raise errors.VariableOverlap(
                    f"{var.name}.update", detail=f"[{start:#x}, {start + size:#x}) overlaps variable "
                    f"{other.name!r} at [{o_start:#x}, {o_start + o_size:#x}); variables must not share "
                    "memory, or the graph could run a reader and a writer of it concurrently")

    def _changed(self, var: Var) -> None:
        for g in list(self._graphs):
            g._var_changed(var)


class _Unbound:
    pass


_UNBOUND: Any = _Unbound()

__all__ = ["BufferVar", "ValueVar", "Var", "VarManager"]
