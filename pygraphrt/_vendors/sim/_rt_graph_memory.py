"""The runtime's graph memory section: a device's graph memory attributes (current and high
watermark use and reservation) and ``cudaDeviceGraphMemTrim``.
"""

from __future__ import annotations

from typing import Any

from ..._bindings.cuda13 import ffi
from ._core import SimError, enum
from ._rt_base import RuntimeBase

GRAPH_MEM = enum("enum cudaGraphMemAttributeType")


class GraphMemorySection(RuntimeBase):
    """A device's graph memory: attributes and trim."""

    # =========================================================================== graph memory
    def cudaDeviceGetGraphMemAttribute(self, d: int, attr: int, value: Any) -> None:
        gm = self.memory.graph[self._device(d)]
        values = {GRAPH_MEM["cudaGraphMemAttrUsedMemCurrent"]: gm.used,
                  GRAPH_MEM["cudaGraphMemAttrUsedMemHigh"]: gm.used_high,
                  GRAPH_MEM["cudaGraphMemAttrReservedMemCurrent"]: gm.reserved,
                  GRAPH_MEM["cudaGraphMemAttrReservedMemHigh"]: gm.reserved_high}
        if attr not in values:
            raise SimError("InvalidValue", f"graph memory attribute {attr}")
        ffi.cast("unsigned long long *", value)[0] = values[attr]

    def cudaDeviceSetGraphMemAttribute(self, d: int, attr: int, value: Any) -> None:
        gm = self.memory.graph[self._device(d)]
        if attr not in (GRAPH_MEM["cudaGraphMemAttrUsedMemHigh"], GRAPH_MEM["cudaGraphMemAttrReservedMemHigh"]):
            raise SimError("InvalidValue", "only the high watermarks can be set (reset)")
        if ffi.cast("unsigned long long *", value)[0] != 0:
            raise SimError("InvalidValue", "a high watermark can only be reset to 0")
        if attr == GRAPH_MEM["cudaGraphMemAttrUsedMemHigh"]:
            gm.used_high = 0
        else:
            gm.reserved_high = 0

    def cudaDeviceGraphMemTrim(self, d: int) -> None:
        self.memory.trim_graph(self._device(d))
