"""The public dataclass records, defined on first use.

``dataclasses`` imports ``inspect`` (with ``ast``, ``dis``, ``tokenize``): several
milliseconds that loading a backend and making the first device call do not need.
:class:`~pygraphrt.enums.EdgeData`, :class:`~pygraphrt.device.DeviceInfo` and
:class:`~pygraphrt._runtime.BackendInfo` live here and their modules hand them out
through a module ``__getattr__``; each keeps its public module name (``__module__``),
so repr, pickling and ``from pygraphrt.enums import EdgeData`` are unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from .enums import PORT_DEFAULT, DependencyType


@dataclass(frozen=True)
class EdgeData:
    """Data carried by one edge: the ports it leaves and enters, and its type.

    The default (all zero) is a plain full dependency; runtimes without edge
    data accept only that.
    """

    from_port: int = PORT_DEFAULT
    to_port: int = 0
    type: DependencyType = DependencyType.DEFAULT

    def __post_init__(self) -> None:
        for name in ("from_port", "to_port", "type"):
            v = getattr(self, name)
            if not isinstance(v, int) or not 0 <= v <= 255:
                raise ValueError(f"EdgeData.{name} must be an int in 0..255, got {v!r}")

    @property
    def is_default(self) -> bool:
        """Whether this is the plain full dependency (all fields zero)."""
        return self.from_port == 0 and self.to_port == 0 and self.type == 0

    def __repr__(self) -> str:
        # Short: only the fields that differ from the default (``EdgeData()`` on most edges).
        parts = [f"{name}={v}" for name, v in (("from_port", self.from_port), ("to_port", self.to_port))
                 if v != 0]
        if self.type != 0:
            parts.append(f"type={getattr(self.type, 'name', self.type)}")
        return f"EdgeData({', '.join(parts)})"


DEFAULT_EDGE = EdgeData()


@dataclass(frozen=True)
class DeviceInfo:
    ordinal: int
    name: str
    arch: str  # sm_90 / gfx942
    total_memory: int


@dataclass
class BackendInfo:
    """What :func:`pygraphrt.backend` reports."""

    vendor: str
    binding: str
    library_path: str
    runtime_version: int
    driver_version: int | None
    device_count: int
    device_error: str | None = None
    # "api (compiled: ...)": the compiled fast path; "abi (why not)": cffi ABI mode.
    ffi_mode: str = "abi"

    @property
    def runtime_version_str(self) -> str:
        from ._versions import version_str

        return version_str(self.vendor, self.runtime_version)


# Their public homes (set after the decorator, which reads the defining module's namespace).
EdgeData.__module__ = "pygraphrt.enums"
DeviceInfo.__module__ = "pygraphrt.device"
BackendInfo.__module__ = "pygraphrt._runtime"


def lazy(module: dict, name: str) -> object:
    """For a module ``__getattr__``: the record ``name``, cached in the module's namespace."""
    value = globals()[name]
    module[name] = value
    return value
