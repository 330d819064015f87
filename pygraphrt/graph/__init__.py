"""Graphs: explicit definition, nodes, capture, executable graphs, export.

One module per concept: :mod:`._graph` (explicit definition), :mod:`._node`
(node base with builder methods and one subclass per type), :mod:`._capture`
(stream capture and capture info), :mod:`._conditional` (conditional
handles and nodes), :mod:`._hip_nodes` (HIP's batch-mem-op and memcpy-symbol nodes),
:mod:`._nodelist` (what ``add_nodes`` returns), :mod:`._exec` (instantiate / launch /
update), :mod:`._export` (networkx, JSON, structural comparison), :mod:`._readback`
(generic node parameters and ids, CUDA >= 13.1), :mod:`._recapture` (recapture into an
existing graph, CUDA >= 13.3).
"""

from ._capture import Capture, CaptureInfo
from ._conditional import SET_CONDITIONAL_SOURCE, ConditionalHandle
from ._hip_nodes import BatchMemOpNode, MemcpyFromSymbolNode, MemcpyToSymbolNode, MemOp
from ._exec import GraphExec
from ._graph import Graph
from ._nodelist import NodeList
from ._node import (ChildGraphNode, ConditionalNode, Dim3, ExternalSemaphoreSignalNode,
                    ExternalSemaphoreWaitNode, EmptyNode, EventRecordNode, EventWaitNode, HostNode,
                    KernelNode, MemAllocNode, MemcpyNode, MemFreeNode, MemsetNode, Node, OtherNode)
from ._recapture import Recapture, RecaptureMismatch, RecaptureStatus

__all__ = ["Graph", "GraphExec", "NodeList", "Capture", "CaptureInfo", "Node", "EmptyNode", "MemsetNode",
           "MemcpyNode", "HostNode", "ChildGraphNode", "EventRecordNode", "EventWaitNode",
           "MemAllocNode", "MemFreeNode", "KernelNode", "OtherNode", "Dim3", "ConditionalNode",
           "ConditionalHandle", "SET_CONDITIONAL_SOURCE", "ExternalSemaphoreSignalNode",
           "ExternalSemaphoreWaitNode", "Recapture", "RecaptureMismatch", "RecaptureStatus"]
