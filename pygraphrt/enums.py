"""Vendor-neutral enums and the edge-data record.

The numbers here are pygraphrt's own; each vendor module
(:mod:`pygraphrt._vendors.cuda`, :mod:`pygraphrt._vendors.hip`) maps them to
the runtime's enum members by name, and the values come from the generated
bindings.  Members a runtime lacks raise :class:`~pygraphrt.errors.NotSupported`.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any, TypeVar

__all__ = ["NodeType", "CaptureMode", "CaptureStatus", "InstantiateFlags", "UpdateResult",
           "GraphMemAttr", "MemPoolAttr", "DebugDotFlags", "DependencyType", "EdgeData", "DEFAULT_EDGE",
           "PORT_DEFAULT", "PORT_PROGRAMMATIC", "PORT_LAUNCH_ORDER", "ExternalSemaphoreType"]


class NodeType(enum.Enum):
    """The type of a graph node (``cudaGraphNodeType``)."""
    KERNEL = "kernel"
    MEMCPY = "memcpy"
    MEMSET = "memset"
    HOST = "host"
    GRAPH = "graph"
    EMPTY = "empty"
    WAIT_EVENT = "wait_event"
    EVENT_RECORD = "event_record"
    EXT_SEMAS_SIGNAL = "ext_semas_signal"
    EXT_SEMAS_WAIT = "ext_semas_wait"
    MEM_ALLOC = "mem_alloc"
    MEM_FREE = "mem_free"
    CONDITIONAL = "conditional"  # CUDA only
    MEMCPY_FROM_SYMBOL = "memcpy_from_symbol"  # HIP only
    MEMCPY_TO_SYMBOL = "memcpy_to_symbol"  # HIP only
    BATCH_MEM_OP = "batch_mem_op"  # HIP only
    MEMCPY_BATCH = "memcpy_batch"  # CUDA >= 13.5 (made by other libraries; pygraphrt reads its type only)


class ExternalSemaphoreType(enum.Enum):
    """What an imported external semaphore is (``ExternalSemaphore(type, ...)``)."""

    OPAQUE_FD = "opaque_fd"                # Vulkan binary semaphore exported as an fd
    OPAQUE_WIN32 = "opaque_win32"
    OPAQUE_WIN32_KMT = "opaque_win32_kmt"
    D3D12_FENCE = "d3d12_fence"
    D3D11_FENCE = "d3d11_fence"
    NVSCISYNC = "nvscisync"
    KEYED_MUTEX = "keyed_mutex"
    KEYED_MUTEX_KMT = "keyed_mutex_kmt"
    TIMELINE_FD = "timeline_fd"            # Vulkan timeline semaphore exported as an fd
    TIMELINE_WIN32 = "timeline_win32"


class CaptureMode(enum.Enum):
    """How a capture interacts with potentially unsafe calls of other threads
    (``cudaStreamCaptureMode``): GLOBAL, THREAD_LOCAL or RELAXED."""
    GLOBAL = "global"
    THREAD_LOCAL = "thread_local"
    RELAXED = "relaxed"


def capture_mode(mode: "str | CaptureMode", what: str) -> CaptureMode:
    """``mode`` as a CaptureMode (``"global"``, ``"thread_local"``, ``"relaxed"``), or InvalidValue."""
    if isinstance(mode, CaptureMode):
        return mode
    try:
        return CaptureMode(mode)
    except ValueError:
        from .errors import InvalidValue

        raise InvalidValue(what, detail=f"unknown capture mode {mode!r}; one of "
                                        f"{[m.value for m in CaptureMode]}") from None


_FlagT = TypeVar("_FlagT", bound=enum.IntFlag)
_EnumT = TypeVar("_EnumT", bound=enum.Enum)


def member(cls: type[_EnumT], value: Any, what: str) -> _EnumT:
    """``value`` as a member of ``cls`` (a member, or a member's value), or InvalidValue naming ``what``."""
    try:
        return cls(value)
    except (ValueError, TypeError):
        from .errors import InvalidValue

        raise InvalidValue(what, detail=f"{value!r} is not a {cls.__name__} "
                                        f"(one of {[m.value for m in cls]})") from None


def flag_set(cls: type[_FlagT], value: Any, what: str) -> _FlagT:
    """``value`` as a set of ``cls`` flags, or InvalidValue naming ``what``: for anything else,
    a bool, and bits ``cls`` has no member for (an IntFlag keeps them; no vendor table has them)."""
    try:
        flags = None if isinstance(value, bool) else cls(value)
    except ValueError:
        flags = None
    known = 0
    for f in cls:
        known |= int(f)
    if flags is None or int(flags) & ~known:
        from .errors import InvalidValue

        raise InvalidValue(what, detail=f"{value!r} is not a set of {cls.__name__}")
    return flags


class CaptureStatus(enum.Enum):
    """A stream's capture status (:attr:`pygraphrt.Stream.capture_status`)."""

    NONE = "none"
    ACTIVE = "active"
    INVALIDATED = "invalidated"

    def __call__(self) -> "CaptureStatus":
        """The old spelling ``stream.capture_status``: ``capture_status`` is a property now
        (docs/design.md); calling the status it returns gives the status, and warns."""
        import warnings

        warnings.warn("Stream.capture_status is deprecated: read the property Stream.capture_status "
                      "(no call)", DeprecationWarning, stacklevel=2)
        return self


class InstantiateFlags(enum.IntFlag):
    """Flags of :meth:`Graph.instantiate` (``cudaGraphInstantiateFlags``); combine them with ``|``."""
    NONE = 0
    AUTO_FREE_ON_LAUNCH = 1
    UPLOAD = 2
    DEVICE_LAUNCH = 4
    USE_NODE_PRIORITY = 8


class UpdateResult(enum.Enum):
    """The outcome of :meth:`GraphExec.update` (``cudaGraphExecUpdateResult``): SUCCESS or why the
    update was refused."""
    SUCCESS = "success"
    ERROR = "error"
    TOPOLOGY_CHANGED = "topology_changed"
    NODE_TYPE_CHANGED = "node_type_changed"
    FUNCTION_CHANGED = "function_changed"
    PARAMETERS_CHANGED = "parameters_changed"
    NOT_SUPPORTED = "not_supported"
    UNSUPPORTED_FUNCTION_CHANGE = "unsupported_function_change"
    ATTRIBUTES_CHANGED = "attributes_changed"  # CUDA only


class GraphMemAttr(enum.Enum):
    """A device's graph-memory statistics (``cudaGraphMemAttributeType``): memory in use and
    reserved, current and high watermark."""
    USED_MEM_CURRENT = "used_mem_current"
    USED_MEM_HIGH = "used_mem_high"
    RESERVED_MEM_CURRENT = "reserved_mem_current"
    RESERVED_MEM_HIGH = "reserved_mem_high"


class MemPoolAttr(enum.Enum):
    """Attributes of a stream-ordered memory pool (:class:`pygraphrt.MemPool`)."""

    REUSE_FOLLOW_EVENT_DEPENDENCIES = "reuse_follow_event_dependencies"
    REUSE_ALLOW_OPPORTUNISTIC = "reuse_allow_opportunistic"
    REUSE_ALLOW_INTERNAL_DEPENDENCIES = "reuse_allow_internal_dependencies"
    RELEASE_THRESHOLD = "release_threshold"
    RESERVED_MEM_CURRENT = "reserved_mem_current"
    RESERVED_MEM_HIGH = "reserved_mem_high"
    USED_MEM_CURRENT = "used_mem_current"
    USED_MEM_HIGH = "used_mem_high"


class DebugDotFlags(enum.IntFlag):
    """Flags of ``Graph.debug_dot``; the vendor module translates each bit."""

    NONE = 0
    VERBOSE = 1 << 0
    KERNEL_NODE_PARAMS = 1 << 2
    MEMCPY_NODE_PARAMS = 1 << 3
    MEMSET_NODE_PARAMS = 1 << 4
    HOST_NODE_PARAMS = 1 << 5
    EVENT_NODE_PARAMS = 1 << 6
    EXT_SEMAS_SIGNAL_NODE_PARAMS = 1 << 7
    EXT_SEMAS_WAIT_NODE_PARAMS = 1 << 8
    KERNEL_NODE_ATTRIBUTES = 1 << 9
    HANDLES = 1 << 10


class DependencyType(enum.IntEnum):
    """The type of an edge (``EdgeData.type``): DEFAULT, a full dependency, or PROGRAMMATIC
    (programmatic dependent launch)."""
    DEFAULT = 0
    PROGRAMMATIC = 1


PORT_DEFAULT = 0
PORT_PROGRAMMATIC = 1
PORT_LAUNCH_ORDER = 2


# EdgeData and DEFAULT_EDGE (a frozen dataclass): defined in ._records on first use, so that
# loading a backend does not import dataclasses (see pygraphrt._records).
if TYPE_CHECKING:
    from ._records import DEFAULT_EDGE, EdgeData


def __getattr__(name: str) -> Any:
    if name in ("EdgeData", "DEFAULT_EDGE"):  # checked first: importers probe names such as __path__
        from . import _records

        return _records.lazy(globals(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
