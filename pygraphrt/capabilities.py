"""What the active runtime can do, derived from vendor, version and exported symbols.

| capability                 | CUDA 12.9 | CUDA 13.x | HIP 7.1 |
|----------------------------|-----------|-----------|---------|
| edge_data                  | yes (_v2) | yes       | no      |
| conditional_nodes          | yes       | yes       | no      |
| generic_add_node           | yes       | yes       | yes     |
| node_set_params            | yes       | yes       | yes     |
| capture_to_graph           | yes       | yes       | yes     |
| capture_to_graph_edge_data | yes       | yes       | no      |
| graph_memory_nodes         | yes       | yes       | yes     |
| device_launch              | yes       | yes       | no      |
| exec_update_result_info    | yes       | yes       | no      |
| per_node_enable            | yes       | yes       | yes     |
| instantiate_with_params    | yes       | yes       | yes     |
| instantiate_flag_combos    | yes       | yes       | no (one flag at a time) |
| conditional_if_else_switch | yes       | yes       | no      |
| external_semaphore_nodes   | yes       | yes       | yes     |

The table is what ``capabilities()`` computes for the pinned bindings; on an
older runtime library (e.g. CUDA 12.0-12.2) symbol presence turns flags off.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from . import _runtime


@dataclass(frozen=True)
class Capabilities:
    vendor: str
    binding: str
    edge_data: bool
    conditional_nodes: bool
    generic_add_node: bool
    node_set_params: bool
    capture_to_graph: bool
    capture_to_graph_edge_data: bool
    graph_memory_nodes: bool
    device_launch: bool
    exec_update_result_info: bool
    per_node_enable: bool
    instantiate_with_params: bool
    instantiate_flag_combinations: bool
    conditional_if_else_switch: bool = False
    external_semaphore_nodes: bool = False

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def capabilities() -> Capabilities:
    """Capabilities of the active backend (see the module docstring for the table)."""
    b = _runtime.active()
    ops, p = b.ops, b.ops.prefix
    has = ops.has
    cuda = b.vendor == "cuda"
    return Capabilities(
        vendor=b.vendor,
        binding=b.binding,
        edge_data=ops.has_edge_data,
        conditional_nodes=cuda and has("cudaGraphConditionalHandleCreate"),
        generic_add_node=has(f"{p}GraphAddNode") or has(f"{p}GraphAddNode_v2"),
        node_set_params=has(f"{p}GraphNodeSetParams"),
        capture_to_graph=has(f"{p}StreamBeginCaptureToGraph"),
        capture_to_graph_edge_data=cuda and has("cudaStreamBeginCaptureToGraph"),
        graph_memory_nodes=has(f"{p}GraphAddMemAllocNode"),
        device_launch=cuda and has("cudaGraphInstantiateWithFlags"),
        exec_update_result_info=cuda,
        per_node_enable=has(f"{p}GraphNodeSetEnabled"),
        instantiate_with_params=has(f"{p}GraphInstantiateWithParams"),
        instantiate_flag_combinations=cuda,
        conditional_if_else_switch=cuda and has("cudaGraphConditionalHandleCreate") and b.runtime_version >= 12080,
        external_semaphore_nodes=has(f"{p}GraphAddExternalSemaphoresSignalNode"),
    )
