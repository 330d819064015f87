"""What the active runtime can do, derived from vendor, version and exported symbols.

The flags per runtime::

    | capability                 | CUDA 12.9 | CUDA 13.0 | CUDA 13.5 | HIP 6.2 | HIP 7.1 |
    |----------------------------|-----------|-----------|-----------|---------|---------|
    | edge_data                  | yes (_v2) | yes       | yes       | no      | no      |
    | conditional_nodes          | yes       | yes       | yes       | no      | no      |
    | generic_add_node           | yes       | yes       | yes       | yes     | yes     |
    | node_set_params            | yes       | yes       | yes       | no      | yes     |
    | capture_to_graph           | yes       | yes       | yes       | yes     | yes     |
    | capture_to_graph_edge_data | yes       | yes       | yes       | no      | no      |
    | graph_memory_nodes         | yes       | yes       | yes       | yes     | yes     |
    | device_launch              | yes       | yes       | yes       | no      | no      |
    | exec_update_result_info    | yes       | yes       | yes       | no      | no      |
    | per_node_enable            | yes       | yes       | yes       | yes     | yes     |
    | instantiate_with_params    | yes       | yes       | yes       | yes     | yes     |
    | instantiate_flag_combos    | yes       | yes       | yes       | no (one flag at a time) | no |
    | conditional_if_else_switch | yes       | yes       | yes       | no      | no      |
    | external_semaphore_nodes   | yes       | yes       | yes       | yes     | yes     |
    | node_get_params            | no        | no        | yes (13.2)| no      | no      |
    | graph_ids                  | no        | no        | yes (13.1)| no      | no      |
    | containing_graph           | no        | no        | yes (13.1)| no      | no      |
    | recapture_to_graph         | no        | no        | yes (13.3)| no      | no      |
    | host_func_spin_wait        | no        | no        | yes (13.2)| no      | no      |

The table is what ``capabilities()`` computes for the pinned bindings; on an
older runtime library (e.g. CUDA 12.0-12.2) symbol presence turns flags off.
The CUDA 13.1+ rows need the runtime *and* the driver of that release (a 13.5
runtime on a 13.0 driver reports them off: ``Vendor.unavailable`` says why).
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
    # CUDA 13.1-13.3 graph APIs (runtime and driver both new enough; see README)
    node_get_params: bool = False
    graph_ids: bool = False
    containing_graph: bool = False
    recapture_to_graph: bool = False
    host_func_spin_wait: bool = False

    def as_dict(self) -> dict[str, object]:
        """The capabilities as a dict, field name -> value (``vendor``, ``binding`` and one bool per
        feature)."""
        return asdict(self)


def capabilities() -> Capabilities:
    """Capabilities of the active backend (see the module docstring for the table)."""
    b = _runtime.active()
    ops, p = b.ops, b.ops.prefix
    has = ops.has
    cuda = b.vendor in ("cuda", "sim")  # the simulator implements CUDA 13's semantics
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
        # the launching kernel is linked with the device runtime through the driver API
        device_launch=cuda and has("cudaGraphInstantiateWithFlags") and has("cudaGetDriverEntryPointByVersion"),
        exec_update_result_info=cuda,
        per_node_enable=has(f"{p}GraphNodeSetEnabled"),
        instantiate_with_params=has(f"{p}GraphInstantiateWithParams"),
        instantiate_flag_combinations=cuda,
        conditional_if_else_switch=cuda and has("cudaGraphConditionalHandleCreate") and b.runtime_version >= 12080,
        external_semaphore_nodes=has(f"{p}GraphAddExternalSemaphoresSignalNode"),
        node_get_params=has(f"{p}GraphNodeGetParams"),
        graph_ids=all(has(f"{p}{api}") for api in ("GraphGetId", "GraphExecGetId", "GraphNodeGetLocalId",
                                                     "GraphNodeGetToolsId")),
        containing_graph=has(f"{p}GraphNodeGetContainingGraph"),
        recapture_to_graph=has(f"{p}StreamBeginRecaptureToGraph"),
        host_func_spin_wait=has(f"{p}LaunchHostFunc_v2"),
    )
