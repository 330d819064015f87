"""The ``sim`` backend: a CPU implementation of the CUDA 13 runtime semantics pygraphrt uses.

Selected only explicitly (``pygraphrt.use("sim")`` or ``PYGRAPHRT_BACKEND=sim``; ``auto``
never picks it).  Layout of this package:

* :mod:`._core` -- error codes, handles, edge data;
* :mod:`._memory` -- device memory at fake addresses, pools, graph memory accounting;
* :mod:`._graph` -- graphs, nodes, parameters, snapshots, topological order;
* :mod:`._state` -- streams, events, captures, executable graphs (and the capture rules);
* :mod:`._api` -- :class:`SimRuntime`: one method per CUDA runtime function, composed of the
  runtime API's sections (``_rt_device``, ``_rt_memory``, ``_rt_streams``, ``_rt_events``,
  ``_rt_graphs``, ``_rt_exec``, ``_rt_exec_update``, ``_rt_graph_memory``, ``_rt_kernels``), which
  import only the core (``_core``, ``_memory``, ``_graph``, ``_state``, ``_kernels``) and
  :mod:`._rt_base` (the state and helpers they share), never each other;
* :mod:`._lib` -- :class:`SimLib`: those methods as C function pointers of the binding's prototypes;
* :mod:`._kernels` -- Python functions registered for kernel names, images, launch context;
* :mod:`._nvrtc` -- the NVRTC stand-in behind ``rt.Program`` on the simulator;
* :mod:`._dot` -- ``cudaGraphDebugDotPrint``;
* :mod:`._vendor` -- :class:`SimVendor` (the vendor table) and :class:`SimBackend`.

The public face is :mod:`pygraphrt.sim`.
"""

from ._vendor import LIBRARY_PATH, SimBackend, SimVendor, settings

__all__ = ["SimBackend", "SimVendor", "LIBRARY_PATH", "settings"]
