"""The simulator's runtime: every CUDA 13 runtime function the layer calls, in Python.

Each public method named like a C function (``cudaGraphCreate``) takes the arguments the C
function takes, as cffi objects typed by the ``cuda13`` binding (:mod:`._lib` makes each a
C function pointer of the binding's own prototype), writes its outputs through the given
pointers and returns nothing or raises :class:`SimError` (the ``cudaError_t`` it returns).

Semantics follow the CUDA 13 runtime as documented (and, where the documentation is silent,
as pygraphrt's GPU tests and conformance cases observed it): see :mod:`._state` for streams,
events and capture, :mod:`._memory` for memory, :mod:`._graph` for graphs.

The methods live in one module per section of the runtime API, each a mixin of
:class:`~._rt_base.RuntimeBase` (:mod:`._rt_base`: the runtime's state, the lookups of handles,
the capture rules and the helpers several sections share).  A section imports only that base and
the simulator's core, never another section; :class:`SimRuntime` composes them:

* :mod:`._rt_device` -- device, errors: versions, devices, ``cudaDeviceSynchronize``;
* :mod:`._rt_memory` -- memory: allocation, copies and memsets, pools, stream-ordered allocation;
* :mod:`._rt_streams` -- streams: streams, event waits, host functions, stream capture;
* :mod:`._rt_events` -- events;
* :mod:`._rt_graphs` -- graphs, their structure: nodes, parameters, edges, clones, ids, dot output;
* :mod:`._rt_exec` -- executable graphs: instantiation, upload, launch (running a snapshot);
* :mod:`._rt_exec_update` -- executable graphs' update: the whole graph, per node, enabled state;
* :mod:`._rt_graph_memory` -- graph memory: a device's attributes, trim;
* :mod:`._rt_kernels` -- kernels: libraries, attributes, occupancy, launches.
"""

from __future__ import annotations

from ._rt_device import DeviceSection
from ._rt_events import EventSection
from ._rt_exec import ExecSection
from ._rt_exec_update import ExecUpdateSection
from ._rt_graph_memory import GraphMemorySection
from ._rt_graphs import GraphSection
from ._rt_kernels import KernelSection
from ._rt_memory import MemorySection
from ._rt_peers import PeerSection
from ._rt_streams import StreamSection


class SimRuntime(DeviceSection, MemorySection, StreamSection, EventSection, GraphSection, ExecSection,
                 ExecUpdateSection, GraphMemorySection, KernelSection, PeerSection):
    """All state of one simulated CUDA runtime (one per ``sim`` backend)."""
