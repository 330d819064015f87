"""Conformance cases, area ``kernels``: kernel nodes, kernel arguments, launch attributes.

Kernel nodes of the suite's standard kernels (``t.kernel("fill_u32")`` ...): adding them,
reading back ``node.params`` / ``node.args``, ``set_params`` / ``set_launch_dims``,
launch results read back from memory; argument mismatches (count, types, ranges) that
pygraphrt refuses before any runtime call; launch dimensions and shared memory the
runtime refuses; ``stream.launch`` with typed arguments; kernel-node attributes and
``copy_attributes_to``; the kernel's own attributes and occupancy; and, on executable
graphs, ``set_kernel_params`` (new arguments, another kernel), ``set_kernel_launch_dims``,
disabling, and exec update of kernel nodes.

Every case needs ``"kernels"`` (a kernel compiler for the backend).  Conventions: see
:mod:`.graph`.
"""

from __future__ import annotations

from typing import Any

from pygraphrt import errors
from pygraphrt.enums import InstantiateFlags, NodeType, UpdateResult

from .._case import CaseContext, case
from .exec import DOC_GRAPH_EXEC_UPDATE_UPDATES_NODE, _expect_update_error, _update

n64 = 64  # elements each kernel covers
NB = 4 * n64  # bytes of a buffer of n64 unsigned ints
K = ("kernels",)

_RT = "CUDA Runtime API 13.0"
_GM = f"{_RT}, Graph Management"
ADD = f"{_GM}, cudaGraphAddKernelNode: "
GET = f"{_GM}, cudaGraphKernelNodeGetParams: "
SET = f"{_GM}, cudaGraphKernelNodeSetParams: "
EXEC_SET = f"{_GM}, cudaGraphExecKernelNodeSetParams: "
GET_ATTR = f"{_GM}, cudaGraphKernelNodeGetAttribute / cudaGraphKernelNodeSetAttribute: "
COPY_ATTR = f"{_GM}, cudaGraphKernelNodeCopyAttributes: "
UPDATE = f"{_GM}, cudaGraphExecUpdate: "
ENABLE = f"{_GM}, cudaGraphNodeSetEnabled: "
CLONE = f"{_GM}, cudaGraphClone: "
_EC = f"{_RT}, Execution Control"
LAUNCH = f"{_EC}, cudaLaunchKernel: "
LAUNCH_EX = f"{_EC}, cudaLaunchKernelExC: "
FUNC_ATTR = f"{_EC}, cudaFuncGetAttributes: "
FUNC_SET_ATTR = f"{_EC}, cudaFuncSetAttribute: "
PARAM_INFO = f"{_EC}, cudaFuncGetParamInfo: "
OCCUPANCY = f"{_RT}, Occupancy, cudaOccupancyMaxActiveBlocksPerMultiprocessor: "
PYGRAPHRT = "pygraphrt kernels API: "
PYCHECK = PYGRAPHRT + "arguments are checked against the kernel's signature before any runtime call, InvalidValue"
DIMCHECK = PYGRAPHRT + "launch dimensions are 1-3 positive ints, checked before any runtime call, InvalidValue"


# ---------------------------------------------------------------------------- helpers
def _zeroed(t: CaseContext, size: int = NB) -> Any:
    buf = t.malloc(size)
    buf.copy_from(bytes(size))
    return buf


def _u32(buf: Any, n: int = n64) -> list[int]:
    data = buf.to_bytes(4 * n)
    return [int.from_bytes(data[i:i + 4], "little") for i in range(0, 4 * n, 4)]


def _filled(t: CaseContext, value: int) -> Any:
    buf = t.malloc(NB)
    buf.copy_from(b"".join(value.to_bytes(4, "little") for _ in range(n64)))
    return buf


def _run(t: CaseContext, g: Any) -> Any:
    s = t.stream()
    exe = t.instantiate(g)
    exe.launch(s)
    s.synchronize()
    return exe


def _fill_graph(t: CaseContext, buf: Any, value: int, grid: Any = 1, block: Any = n64) -> tuple[Any, Any]:
    g = t.graph()
    return g, g.add_kernel(t.kernel("fill_u32"), grid, block, [buf, value, n64])


def _own_kernel(t: CaseContext, name: str = "own_noop") -> Any:
    """A kernel of this case's own (a program compiled for it): a case that changes a kernel's
    attributes must not change the shared standard kernels other cases use (``t.kernel``)."""
    prog = t.rt.Program(f'extern "C" __global__ void {name}() {{}}', name=f"conformance_{name}.cu")
    t.track(prog.load())  # unloaded after the case
    return prog.kernel(name, signature="")


def _dims(node: Any) -> tuple[Any, Any]:
    """The kernel node's grid and block as the runtime reports them (GraphKernelNodeGetParams)."""
    p = node.params
    return tuple(p["grid"]), tuple(p["block"])


# The gloss of the kernel-dimension observations (kernels.dims.*): what they were seen against.
_DIMS_NOT_STATED = (" (deviations.OBSERVATIONS); CUDA Runtime API 13.5, Graph Management, "
                    "cudaGraphAddKernelNode: \"cudaSuccess, cudaErrorInvalidValue, cudaErrorInvalidDeviceFunction\" "
                    "-- the return list names cudaErrorInvalidValue; no sentence states the device's "
                    "launch-dimension and shared-memory limits for a kernel node, nor that they are "
                    "checked when the node is added")

# Documentation passages several cases quote (each case adds its own gloss after them).
DOC_GRAPH_ADD_KERNEL_NODE_CREATES_NEW = ("CUDA Runtime API 13.5, Graph Management, cudaGraphAddKernelNode: "
                                         "\"Creates a new kernel execution node and adds it to graph with "
                                         "numDependencies dependencies specified via pDependencies and "
                                         "arguments specified in pNodeParams\"")
DOC_GRAPH_ADD_KERNEL_NODE_WHEN_GRAPH = ("CUDA Runtime API 13.5, Graph Management, cudaGraphAddKernelNode: "
                                        "\"When the graph is launched, the node will invoke kernel func on a "
                                        "(gridDim.x x gridDim.y x gridDim.z) grid of blocks\"")
DOC_GRAPH_EXEC_KERNEL_NODE_SET_PARAMS_ALREADY_ENQUEUED = ("CUDA Runtime API 13.5, Graph Management, "
                                                          "cudaGraphExecKernelNodeSetParams: \"Already enqueued "
                                                          "or running launches of hGraphExec are not affected "
                                                          "by this call. node is also not modified by this "
                                                          "call\"")
DOC_GRAPH_EXEC_UPDATE_KERNEL_NODES = ("CUDA Runtime API 13.5, Graph Management, cudaGraphExecUpdate: \"- Kernel "
                                      "nodes: - The owning context of the function cannot change. - A node "
                                      "whose function originally did not use CUDA dynamic parallelism cannot "
                                      "be updated to a function which uses CDP. - A node whose function "
                                      "originally did not make device-side update calls cannot be updated to a "
                                      "function which makes device-side update calls. - A cooperative node "
                                      "cannot be updated to a non-cooperative node, and vice-versa. - If the "
                                      "graph was instantiated with cudaGraphInstantiateFlagUseNodePriority, "
                                      "the priority attribute cannot change\"")


# ============================================================================ kernel nodes
@case("kernels.node.type", cite=ADD + "creates a new kernel execution node", apis=("GraphAddKernelNode",
                                                                                   "GraphNodeGetType"),
      requires=K, expect=(NodeType.KERNEL, NodeType.KERNEL))
def _(t: CaseContext) -> Any:
    """A kernel node is a KERNEL node as the runtime reports it, also when listed from the graph."""
    g, k = _fill_graph(t, _zeroed(t), 1)
    return t.runtime_type(k), t.runtime_type(g.nodes()[0])


@case("kernels.node.params", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphKernelNodeGetParams: \"Returns the "
                                  "parameters of kernel node node in pNodeParams\" -- returns the parameters of kernel node "
                                  "(function, gridDim, blockDim, sharedMemBytes, kernelParams)", apis=("GraphAddKernelNode", "GraphKernelNodeGetParams"), requires=K,
      expect=((2, 1, 1), (32, 1, 1), 0, "fill_u32", True))
def _(t: CaseContext) -> Any:
    """A kernel node reads back its launch dimensions, shared memory and kernel."""
    _g, k = _fill_graph(t, _zeroed(t), 1, grid=2, block=32)
    p = k.params
    return tuple(p["grid"]), tuple(p["block"]), p["shared_mem_bytes"], p["kernel"].name, p["func"] != 0


@case("kernels.node.args", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphKernelNodeGetParams: \"The kernelParams or "
                                "extra array, as well as the argument values it points to, are copied during this call\" -- "
                                "kernelParams: the kernel's arguments (copied at creation); pygraphrt kernels API: decoded by "
                                "the kernel's signature", apis=("GraphAddKernelNode", "GraphKernelNodeGetParams"), requires=K,
      expect=(True, 7, n64, ((1, 1, 1), (n64, 1, 1))))
def _(t: CaseContext) -> Any:
    """A kernel node's arguments (and launch dimensions) read back as given."""
    buf = _zeroed(t)
    _g, k = _fill_graph(t, buf, 7)
    args = k.args
    return args[0] == buf.ptr, args[1], args[2], _dims(k)


@case("kernels.node.dims_3d", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphAddKernelNode: \"Returns the parameters of "
                                   "kernel node node in pNodeParams\" -- gridDim and blockDim are three-dimensional", apis=("GraphAddKernelNode",
                                                                                            "GraphKernelNodeGetParams"),
      requires=K, expect=((2, 3, 1), (4, 2, 2)))
def _(t: CaseContext) -> Any:
    """Three-dimensional launch dimensions read back as given."""
    _g, k = _fill_graph(t, _zeroed(t), 1, grid=(2, 3), block=(4, 2, 2))
    return tuple(k.params["grid"]), tuple(k.params["block"])


@case("kernels.node.shared_mem", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphAddKernelNode: \"sharedMem sets the amount "
                                      "of dynamic shared memory that will be available to each thread block\" -- sharedMemBytes: "
                                      "dynamic shared-memory size per thread block",
      apis=("GraphAddKernelNode", "GraphKernelNodeGetParams"), requires=K, expect=256)
def _(t: CaseContext) -> Any:
    """The dynamic shared memory of a kernel node reads back."""
    g = t.graph()
    k = g.add_kernel(t.kernel("noop"), 1, 1, [], shared_mem=256)
    return k.params["shared_mem_bytes"]


@case("kernels.node.runs", cite=DOC_GRAPH_ADD_KERNEL_NODE_WHEN_GRAPH + " -- when the graph is launched, the node "
                                "will invoke kernel func on a (gridDim) grid of (blockDim) blocks", apis=("GraphAddKernelNode", "GraphLaunch"), requires=K,
      expect=(NodeType.KERNEL, [7] * n64))
def _(t: CaseContext) -> Any:
    """A launched kernel node writes what its kernel writes."""
    buf = _zeroed(t)
    g, k = _fill_graph(t, buf, 7)
    _run(t, g)
    return t.runtime_type(k), _u32(buf)  # the node the add returned, as the runtime reports it


@case("kernels.node.partial_grid", cite=DOC_GRAPH_ADD_KERNEL_NODE_WHEN_GRAPH + " -- the node invokes the kernel "
                                        "on gridDim x blockDim threads",
      apis=("GraphAddKernelNode", "GraphLaunch"), requires=K, expect=(NodeType.KERNEL, [6] * 32 + [0] * 32))
def _(t: CaseContext) -> Any:
    """A launch of 32 threads fills 32 of 64 elements."""
    buf = _zeroed(t)
    g, k = _fill_graph(t, buf, 6, grid=1, block=32)
    _run(t, g)
    return t.runtime_type(k), _u32(buf)  # the node the add returned, as the runtime reports it


@case("kernels.node.multi_block", cite=DOC_GRAPH_ADD_KERNEL_NODE_WHEN_GRAPH + " -- the node invokes the kernel "
                                       "on a grid of gridDim blocks",
      apis=("GraphAddKernelNode", "GraphLaunch"), requires=K, expect=(NodeType.KERNEL, [8] * n64))
def _(t: CaseContext) -> Any:
    """Four blocks of 16 threads fill all 64 elements."""
    buf = _zeroed(t)
    g, k = _fill_graph(t, buf, 8, grid=4, block=16)
    _run(t, g)
    return t.runtime_type(k), _u32(buf)  # the node the add returned, as the runtime reports it


@case("kernels.node.chain", cite=DOC_GRAPH_ADD_KERNEL_NODE_CREATES_NEW + " -- dependencies order the kernels: "
                                 "the dependent kernel sees the first one's writes", apis=("GraphAddKernelNode", "GraphLaunch"), requires=K, expect=[7] * n64)
def _(t: CaseContext) -> Any:
    """fill 3 then add 4 gives 7 everywhere."""
    buf = _zeroed(t)
    g, k = _fill_graph(t, buf, 3)
    k.kernel(t.kernel("add_u32"), 1, n64, [buf, 4, n64])
    _run(t, g)
    return _u32(buf)


@case("kernels.node.diamond", cite=DOC_GRAPH_ADD_KERNEL_NODE_CREATES_NEW + " -- kernel nodes with dependencies "
                                   "run after them", apis=("GraphAddKernelNode",
                                                                                               "GraphLaunch"),
      requires=K, expect=([5] * n64, [5] * n64, [5] * n64))
def _(t: CaseContext) -> Any:
    """fill a, copy a to b and to c in parallel, then add 0 to a: every copy sees the fill."""
    a, b, c = _zeroed(t), _zeroed(t), _zeroed(t)
    copy = t.kernel("copy_u32")
    g, k = _fill_graph(t, a, 5)
    x = k.kernel(copy, 1, n64, [b, a, n64])
    y = k.kernel(copy, 1, n64, [c, a, n64])
    g.add_kernel(t.kernel("add_u32"), 1, n64, [a, 0, n64], dependencies=[x, y])
    _run(t, g)
    return _u32(a), _u32(b), _u32(c)


@case("kernels.node.noop", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphAddKernelNode: \"If the kernel has N "
                                "parameters, then kernelParams needs to be an array of N pointers\" -- kernelParams may be "
                                "NULL for a kernel without parameters",
      apis=("GraphAddKernelNode", "GraphNodeGetType", "GraphKernelNodeGetParams"), requires=K,
      expect=([], NodeType.KERNEL, ((1, 1, 1), (1, 1, 1))))
def _(t: CaseContext) -> Any:
    """A kernel without parameters makes a node with no arguments, and runs."""
    # The launch is only required to be accepted: a kernel that does nothing has no effect to observe.
    g = t.graph()
    k = g.add_kernel(t.kernel("noop"), 1, 1, [])
    _run(t, g)
    return k.args, t.runtime_type(k), _dims(k)


@case("kernels.node.null_pointer_argument", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphAddKernelNode: \"Each pointer, from "
                                                 "kernelParams[0] to kernelParams[N-1], points to the region of memory from which the actual "
                                                 "parameter will be copied\" -- kernelParams are copied at creation (a NULL pointer is a value "
                                                 "like any other)", apis=("GraphAddKernelNode", "GraphKernelNodeGetParams"), requires=K,
      expect=(0, 1, 0, ((1, 1, 1), (1, 1, 1))))
def _(t: CaseContext) -> Any:
    """None for a pointer parameter is the NULL pointer, read back as 0 (the node is not launched)."""
    g = t.graph()
    k = g.add_kernel(t.kernel("fill_u32"), 1, 1, [None, 1, 0])
    return (*k.args, _dims(k))


@case("kernels.node.set_params_args", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphKernelNodeSetParams: \"Sets the parameters "
                                           "of kernel node node to pNodeParams\" -- sets the parameters of kernel node to pNodeParams",
      apis=("GraphKernelNodeSetParams", "GraphKernelNodeGetParams", "GraphLaunch"), requires=K,
      expect=(9, ((1, 1, 1), (n64, 1, 1)), [9] * n64))
def _(t: CaseContext) -> Any:
    """New arguments of a kernel node read back (its dimensions kept) and are used by a later instantiation."""
    buf = _zeroed(t)
    g, k = _fill_graph(t, buf, 1)
    k.set_params(args=[buf, 9, n64])
    v = k.args[1]
    _run(t, g)
    return v, _dims(k), _u32(buf)


@case("kernels.node.set_params_kernel", cite=("CUDA Runtime API 13.5, Graph Management, cudaGraphKernelNodeSetParams: \"Sets the parameters of "
      "kernel node node to pNodeParams\" -- sets the parameters of the kernel node (func included); CUDA "
      "Runtime API 13.5, Graph Management, cudaGraphKernelNodeGetParams: \"Returns the parameters of kernel "
      "node node in pNodeParams\" -- reads them back"),
      apis=("GraphKernelNodeSetParams", "GraphKernelNodeGetParams", "GraphLaunch"), requires=K,
      expect=("add_u32", ((1, 1, 1), (n64, 1, 1)), [7] * n64))
def _(t: CaseContext) -> Any:
    """A kernel node given another kernel reads it back (its dimensions kept) and runs that kernel."""
    buf = _filled(t, 5)
    g, k = _fill_graph(t, buf, 1)
    k.set_params(kernel=t.kernel("add_u32"), args=[buf, 2, n64])
    name = k.params["kernel"].name
    _run(t, g)
    return name, _dims(k), _u32(buf)


@case("kernels.node.set_params_dims", cite=("CUDA Runtime API 13.5, Graph Management, cudaGraphKernelNodeSetParams: \"Sets the parameters of "
      "kernel node node to pNodeParams\" -- sets the parameters of the kernel node (gridDim, blockDim); CUDA"
      " Runtime API 13.5, Graph Management, cudaGraphKernelNodeGetParams: \"Returns the parameters of kernel"
      " node node in pNodeParams\" -- reads them back"),
      apis=("GraphKernelNodeSetParams", "GraphKernelNodeGetParams"), requires=K, expect=((2, 1, 1), (32, 1, 1), 7))
def _(t: CaseContext) -> Any:
    """New launch dimensions read back; the arguments stay."""
    _g, k = _fill_graph(t, _zeroed(t), 7)
    k.set_params(grid=2, block=32)
    return tuple(k.params["grid"]), tuple(k.params["block"]), k.args[1]


@case("kernels.node.set_launch_dims", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphKernelNodeSetParams: \"Sets the parameters "
                                           "of kernel node node to pNodeParams\" -- sets the parameters of kernel node; pygraphrt kernels "
                                           "API: set_launch_dims changes grid, block and shared memory only", apis=("GraphKernelNodeSetParams",),
      requires=K, expect=((1, 1, 1), (16, 1, 1), 128, 3))
def _(t: CaseContext) -> Any:
    """set_launch_dims changes the dimensions and shared memory, keeping the arguments."""
    _g, k = _fill_graph(t, _zeroed(t), 3)
    k.set_launch_dims(grid=(1,), block=16, shared_mem_bytes=128)
    p = k.params
    return tuple(p["grid"]), tuple(p["block"]), p["shared_mem_bytes"], k.args[1]


@case("kernels.node.set_params_after_instantiate", cite=(
          "Observed, cudaGraphKernelNodeSetParams: parameters set on the graph's kernel node after "
          "instantiation do not reach the executable graph (its launch writes the old value) "
          "(deviations.OBSERVATIONS); CUDA Runtime API 13.5, Graph Management, cudaGraphKernelNodeSetParams: "
          "\"Sets the parameters of kernel node node to pNodeParams\" -- sets the parameters of the node in "
          "its graph; CUDA Runtime API 13.5, Graph Management, cudaGraphInstantiate: \"Instantiates graph as "
          "an executable graph\" -- no documentation sentence states that later changes to graph leave the "
          "executable graph (a snapshot)"), apis=("GraphKernelNodeSetParams",
                                                                               "GraphLaunch"),
      requires=K, expect=[1] * n64)
def _(t: CaseContext) -> Any:
    """Changing a kernel node after instantiation does not change the executable graph."""
    buf = _zeroed(t)
    g, k = _fill_graph(t, buf, 1)
    exe = t.instantiate(g)
    k.set_params(args=[buf, 2, n64])
    s = t.stream()
    exe.launch(s)
    s.synchronize()
    return _u32(buf)


@case("kernels.node.clone_args", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphClone: \"All parameters are copied into the "
                                      "cloned graph\" -- the clone's nodes have the parameters of the original's",
      apis=("GraphClone", "GraphNodeFindInClone", "GraphKernelNodeGetParams"), requires=K,
      expect=(True, 4, n64, ((2, 1, 1), (32, 1, 1))))
def _(t: CaseContext) -> Any:
    """A cloned kernel node has the original's arguments and launch dimensions."""
    buf = _zeroed(t)
    g, k = _fill_graph(t, buf, 4, grid=2, block=32)
    c = t.track(g.clone())
    kc = g.find_clone(k, c)
    args = kc.args
    return args[0] == buf.ptr, args[1], args[2], _dims(kc)


@case("kernels.node.set_params_kernel_without_args", kind="binding",
      cite=SET + "a new func needs its kernelParams; " + PYCHECK,
      apis=("GraphKernelNodeSetParams",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Another kernel without arguments is refused."""
    _g, k = _fill_graph(t, _zeroed(t), 1)
    k.set_params(kernel=t.kernel("add_u32"))


@case("kernels.node.set_params_wrong_args", kind="binding",
      cite=SET + "kernelParams must match the kernel's parameters; "
      + PYCHECK, apis=("GraphKernelNodeSetParams",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """New arguments that do not fit the signature are refused."""
    buf = _zeroed(t)
    _g, k = _fill_graph(t, buf, 1)
    k.set_params(args=[buf, "nine", n64])


@case("kernels.node.set_params_refused_keeps_node", kind="binding",
      cite=SET + "on failure the node keeps its parameters; "
      + PYCHECK, apis=("GraphKernelNodeSetParams", "GraphKernelNodeGetParams"), requires=K, expect=(1, "fill_u32"))
def _(t: CaseContext) -> Any:
    """A refused set_params leaves the node's arguments and kernel."""
    buf = _zeroed(t)
    _g, k = _fill_graph(t, buf, 1)
    t.raises(errors.InvalidValue, k.set_params, args=[buf, 2])
    return k.args[1], k.params["kernel"].name


@case("kernels.node.set_launch_dims_zero_tuple", kind="binding", cite=SET + "blockDim must be positive; " + DIMCHECK,
      apis=("GraphKernelNodeSetParams",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A zero block dimension is refused."""
    _g, k = _fill_graph(t, _zeroed(t), 1)
    k.set_launch_dims(block=(0,))


@case("kernels.node.set_launch_dims_zero_int", kind="binding", cite=SET + "blockDim must be positive; " + DIMCHECK,
      apis=("GraphKernelNodeSetParams",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A zero grid given as a plain int is refused."""
    # unsure: pygraphrt gap -- _as_dim3 (graph/_node.py) checks tuples but passes a plain int through
    # unchecked; the runtime then answers (the simulator: cudaErrorInvalidConfiguration, a plain GraphRTError).
    _g, k = _fill_graph(t, _zeroed(t), 1)
    k.set_launch_dims(grid=0)


@case("kernels.node.set_launch_dims_negative_int", kind="binding", cite=SET + "gridDim is unsigned; " + DIMCHECK,
      apis=("GraphKernelNodeSetParams",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A negative grid given as a plain int is refused."""
    # found by this case on CUDA 13.0: pygraphrt let -1 through to cffi (OverflowError); now
    # every launch dimension is checked in one place (kernels._library.as_dims)
    _g, k = _fill_graph(t, _zeroed(t), 1)
    k.set_launch_dims(grid=-1)


@case("kernels.node.not_a_kernel", kind="binding",
      cite=ADD + "func is a kernel; " + PYGRAPHRT + "a Kernel is required, "
      "InvalidValue", apis=("GraphAddKernelNode",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A kernel given by name is refused."""
    t.graph().add_kernel("fill_u32", 1, n64, [_zeroed(t), 1, n64])


# ============================================================================ arguments
@case("kernels.args.too_few", kind="binding",
      cite=ADD + "kernelParams holds one pointer per kernel parameter; " + PYCHECK,
      apis=("GraphAddKernelNode",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Two arguments for three parameters are refused."""
    t.graph().add_kernel(t.kernel("fill_u32"), 1, n64, [_zeroed(t), 1])


@case("kernels.args.too_many", kind="binding",
      cite=ADD + "kernelParams holds one pointer per kernel parameter; " + PYCHECK,
      apis=("GraphAddKernelNode",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Four arguments for three parameters are refused."""
    t.graph().add_kernel(t.kernel("fill_u32"), 1, n64, [_zeroed(t), 1, n64, 0])


@case("kernels.args.noop_given_one", kind="binding", cite=ADD + "a kernel without parameters takes none; " + PYCHECK,
      apis=("GraphAddKernelNode",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """An argument for a kernel without parameters is refused."""
    t.graph().add_kernel(t.kernel("noop"), 1, 1, [0])


@case("kernels.args.float_for_pointer", kind="binding",
      cite=ADD + "each argument must have its parameter's type; " + PYCHECK,
      apis=("GraphAddKernelNode",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A float where a pointer is declared is refused."""
    t.graph().add_kernel(t.kernel("fill_u32"), 1, n64, [1.5, 1, n64])


@case("kernels.args.float_for_int", kind="binding",
      cite=ADD + "each argument must have its parameter's type; " + PYCHECK,
      apis=("GraphAddKernelNode",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A float where an int is declared is refused."""
    t.graph().add_kernel(t.kernel("fill_u32"), 1, n64, [_zeroed(t), 1, 64.0])


@case("kernels.args.bool_for_int", kind="binding",
      cite=ADD + "each argument must have its parameter's type; " + PYCHECK,
      apis=("GraphAddKernelNode",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A bool where an int is declared is refused."""
    t.graph().add_kernel(t.kernel("fill_u32"), 1, n64, [_zeroed(t), True, n64])


@case("kernels.args.string_for_unsigned", kind="binding",
      cite=ADD + "each argument must have its parameter's type; " + PYCHECK,
      apis=("GraphAddKernelNode",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A string where an unsigned int is declared is refused."""
    t.graph().add_kernel(t.kernel("fill_u32"), 1, n64, [_zeroed(t), "7", n64])


@case("kernels.args.negative_for_unsigned", kind="binding",
      cite=ADD + "an argument must fit its parameter's type; " + PYCHECK,
      apis=("GraphAddKernelNode",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """-1 for an unsigned int is refused."""
    t.graph().add_kernel(t.kernel("fill_u32"), 1, n64, [_zeroed(t), -1, n64])


@case("kernels.args.unsigned_overflow", kind="binding",
      cite=ADD + "an argument must fit its parameter's type; " + PYCHECK,
      apis=("GraphAddKernelNode",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """2**32 for an unsigned int is refused."""
    t.graph().add_kernel(t.kernel("fill_u32"), 1, n64, [_zeroed(t), 1 << 32, n64])


@case("kernels.args.int_overflow", kind="binding", cite=ADD + "an argument must fit its parameter's type; " + PYCHECK,
      apis=("GraphAddKernelNode",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """2**40 for an int is refused."""
    t.graph().add_kernel(t.kernel("fill_u32"), 1, n64, [_zeroed(t), 1, 1 << 40])


@case("kernels.args.pointer_out_of_range", kind="binding",
      cite=ADD + "a pointer argument is a 64-bit address; " + PYCHECK,
      apis=("GraphAddKernelNode",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """An address beyond 64 bits is refused."""
    t.graph().add_kernel(t.kernel("fill_u32"), 1, n64, [1 << 64, 1, n64])


@case("kernels.args.closed_buffer", kind="binding",
      cite=ADD + "a pointer argument is the buffer's address; " + PYGRAPHRT
      + "a closed buffer raises InvalidResourceHandle", apis=("GraphAddKernelNode",), requires=K,
      raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """A freed buffer as a pointer argument is refused."""
    buf = t.malloc(NB)
    buf.close()
    t.graph().add_kernel(t.kernel("fill_u32"), 1, n64, [buf, 1, n64])


@case("kernels.args.not_a_sequence", kind="binding", cite=ADD + "kernelParams is an array of arguments; " + PYCHECK,
      apis=("GraphAddKernelNode",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Arguments given as a string are refused."""
    t.graph().add_kernel(t.kernel("fill_u32"), 1, n64, "abc")


@case("kernels.args.refusal_adds_nothing", kind="binding", cite=ADD + "on failure no node is added; " + PYCHECK,
      apis=("GraphAddKernelNode", "GraphGetNodes"), requires=K, expect=0)
def _(t: CaseContext) -> Any:
    """A node refused for its arguments is not in the graph."""
    g = t.graph()
    t.raises(errors.InvalidValue, g.add_kernel, t.kernel("fill_u32"), 1, n64, [_zeroed(t), 1])
    return len(g)


@case("kernels.args.signature_disagrees_with_kernel", kind="binding",
      cite=PARAM_INFO + "returns the offset and size of each "
      "kernel parameter; " + PYGRAPHRT + "a signature that disagrees with the compiled kernel is refused",
      apis=("FuncGetParamInfo", "GraphAddKernelNode"), requires=("kernels", "cuda>=12.4"),
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A signature with two parameters for a three-parameter kernel is refused before the node is made."""
    # A kernel of its own: a second Kernel object with a signature for one of the standard kernels
    # would take over pygraphrt's kernel registry entry (see the report: readback breaks when it dies).
    prog = t.rt.Program('extern "C" __global__ void sig3(unsigned int *p, unsigned int v, int n) {}',
                        name="conformance_sig3.cu")
    wrong = prog.kernel("sig3", signature="unsigned int *p, unsigned int v")
    t.graph().add_kernel(wrong, 1, n64, [_zeroed(t), 1])


@case("kernels.args.param_info", cite="CUDA Runtime API 13.5, Execution Control, cudaFuncGetParamInfo: \"Queries the kernel "
                                      "parameter at paramIndex in func's list of parameters and returns parameter information via "
                                      "paramOffset and paramSize. paramOffset returns the offset of the parameter in the "
                                      "device-side parameter layout. paramSize returns the size in bytes of the parameter\" -- "
                                      "Obtains the offset and size of a kernel parameter: paramIndex - the parameter index to "
                                      "query; paramOffset - returns the offset into the device-side parameter layout at which the "
                                      "parameter resides; paramSize - returns the size in bytes of the parameter",
      apis=("FuncGetParamInfo",), requires=("kernels", "cuda>=12.4"), expect=[(0, 8), (8, 4), (12, 4)])
def _(t: CaseContext) -> Any:
    """fill_u32(unsigned *p, unsigned v, int n) has parameters at 0 (8 bytes), 8 and 12 (4 bytes)."""
    # Asked of the runtime here (the kernel's param_info is what pygraphrt read when it checked the
    # signature), into values pre-set to what no parameter has.
    k = t.kernel("fill_u32")
    out = []
    for i in range(3):
        offset, size = t.ffi.new("size_t *", 0xDEAD), t.ffi.new("size_t *", 0xDEAD)
        t.call("FuncGetParamInfo", k.handle, i, offset, size)
        out.append((int(offset[0]), int(size[0])))
    return out


@case("kernels.dims.grid_zero", kind="binding",
      cite=ADD + "gridDim must be positive; " + DIMCHECK, apis=("GraphAddKernelNode",),
      requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A grid of zero blocks is refused."""
    _fill_graph(t, _zeroed(t), 1, grid=0)


@case("kernels.dims.block_zero", kind="binding",
      cite=ADD + "blockDim must be positive; " + DIMCHECK, apis=("GraphAddKernelNode",),
      requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A block of zero threads is refused."""
    _fill_graph(t, _zeroed(t), 1, block=(32, 0))


@case("kernels.dims.four_dimensions", kind="binding",
      cite=ADD + "gridDim is a dim3; " + DIMCHECK, apis=("GraphAddKernelNode",),
      requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Four grid dimensions are refused."""
    _fill_graph(t, _zeroed(t), 1, grid=(1, 1, 1, 1))


@case("kernels.dims.negative", kind="binding", cite=ADD + "blockDim is a dim3 of unsigned ints; " + DIMCHECK,
      apis=("GraphAddKernelNode",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A negative block dimension is refused."""
    _fill_graph(t, _zeroed(t), 1, block=-32)


@case("kernels.dims.shared_mem_negative", kind="binding", cite=ADD + "sharedMemBytes is an unsigned int; " + PYGRAPHRT
      + "checked before any runtime call, InvalidValue", apis=("GraphAddKernelNode",), requires=K,
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Negative dynamic shared memory is refused."""
    t.graph().add_kernel(t.kernel("noop"), 1, 1, [], shared_mem=-1)


#: What cudaGraphAddKernelNode documents for its refusals (the launch configuration is checked when the
#: node is added: CUDA 12.9-13.5 refuse these there with cudaErrorInvalidValue).
ADD_REFUSAL = ADD + "returns cudaSuccess, cudaErrorInvalidValue, cudaErrorInvalidDeviceFunction; "
DIMS_REFUSAL = ADD_REFUSAL + ("pNodeParams - parameters for the GPU execution node (its gridDim, blockDim and "
                              "sharedMemBytes; here beyond what the device allows)")


def _refused_add(t: CaseContext, add: Any) -> None:
    """``add(graph, buffer)`` is the call under test; the graph's node and edge counts are unchanged."""
    g = t.graph()
    buf = _zeroed(t)
    before = t.snapshot(graph=g)
    try:
        add(g, buf)  # (the case wraps this helper in t.under_test())
    finally:
        t.check_equal(t.snapshot(graph=g), before, "the graph after the refused kernel node")


@case("kernels.dims.block_too_large", cite=(
          "Observed, cudaGraphAddKernelNode: a block of 4096 threads is refused with cudaErrorInvalidValue "
          "when the node is added" + _DIMS_NOT_STATED), apis=("GraphAddKernelNode",), requires=K,
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A block of 4096 threads is refused when the node is added; the graph is unchanged."""
    with t.under_test():
        _refused_add(t, lambda g, buf: g.add_kernel(t.kernel("fill_u32"), 1, 4096, [buf, 1, n64]))


@case("kernels.dims.block_z_too_large", cite=(
          "Observed, cudaGraphAddKernelNode: a block 128 threads deep in z is refused with "
          "cudaErrorInvalidValue when the node is added" + _DIMS_NOT_STATED), apis=("GraphAddKernelNode",), requires=K,
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A block 128 threads deep in z is refused when the node is added; the graph is unchanged."""
    with t.under_test():
        _refused_add(t, lambda g, buf: g.add_kernel(t.kernel("fill_u32"), 1, (1, 1, 128), [buf, 1, n64]))


@case("kernels.dims.grid_y_too_large", cite=(
          "Observed, cudaGraphAddKernelNode: a grid of 70000 blocks in y is refused with "
          "cudaErrorInvalidValue when the node is added" + _DIMS_NOT_STATED), apis=("GraphAddKernelNode",), requires=K,
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A grid of 70000 blocks in y is refused when the node is added; the graph is unchanged."""
    with t.under_test():
        _refused_add(t, lambda g, buf: g.add_kernel(t.kernel("fill_u32"), (1, 70000), n64, [buf, 1, n64]))


@case("kernels.dims.shared_mem_too_large", cite=(
          "Observed, cudaGraphAddKernelNode: 1 GiB of dynamic shared memory is refused with "
          "cudaErrorInvalidValue when the node is added" + _DIMS_NOT_STATED),
      apis=("GraphAddKernelNode",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """1 GiB of dynamic shared memory is refused when the node is added; the graph is unchanged."""
    with t.under_test():
        _refused_add(t, lambda g, buf: g.add_kernel(t.kernel("noop"), 1, 1, [], shared_mem=1 << 30))


@case("kernels.dims.stream_block_too_large", cite="CUDA Runtime API 13.5, Execution Control, cudaLaunchKernel: \"cudaSuccess, "
                                                  "cudaErrorInvalidDeviceFunction, cudaErrorInvalidConfiguration, cudaErrorLaunchFailure, "
                                                  "cudaErrorLaunchTimeout, cudaErrorLaunchOutOfResources, cudaErrorSharedObjectInitFailed, "
                                                  "cudaErrorInvalidPtx, cudaErrorUnsupportedPtxVersion, cudaErrorNoKernelImageForDevice, "
                                                  "cudaErrorJitCompilerNotFound, cudaErrorJitCompilationDisabled _null_stream\" -- an invalid "
                                                  "launch configuration is an error (cudaErrorInvalidConfiguration; the driver's "
                                                  "cuLaunchKernel: CUDA_ERROR_INVALID_VALUE); nothing runs",
      apis=("LaunchKernel",), requires=K, raises=errors.GraphRTError)
def _(t: CaseContext) -> Any:
    """A stream launch with 4096 threads per block is refused with the documented code."""
    # pygraphrt has no class of its own for cudaErrorInvalidConfiguration (a plain GraphRTError), so
    # the vendor's name is what is pinned: the runtime's cudaLaunchKernel documents
    # cudaErrorInvalidConfiguration (the path taken while calls are recorded); where pygraphrt
    # launches through the driver's cuLaunchKernel (ABI mode, not recording), CUDA 12.9-13.5 return
    # CUDA_ERROR_INVALID_VALUE.
    buf = _zeroed(t)
    s = t.stream()
    try:
        with t.under_test():
            try:
                s.launch(t.kernel("fill_u32"), 1, 4096, buf, 1, n64)
            except errors.GraphRTError as e:
                t.note(f"refused by {e.api} as {type(e).__name__} ({e.name})")
                t.check(e.name in ("cudaErrorInvalidConfiguration", "CUDA_ERROR_INVALID_VALUE"),
                        f"refused with {e.name}, not the documented cudaErrorInvalidConfiguration")
                raise
    finally:
        s.synchronize()


# ============================================================================ stream launch
@case("kernels.stream.launch", cite="CUDA Runtime API 13.5, Execution Control, cudaLaunchKernel: \"The function invokes kernel "
                                    "func on gridDim (gridDim.x &times; gridDim.y &times; gridDim.z) grid of blocks\" -- launches "
                                    "the kernel on gridDim x blockDim threads in stream; pygraphrt kernels API: plain Python "
                                    "values packed by the signature", apis=("LaunchKernel",), requires=K,
      expect=[11] * n64)
def _(t: CaseContext) -> Any:
    """A stream launch with typed arguments writes what the kernel writes."""
    buf = _zeroed(t)
    s = t.stream()
    s.launch(t.kernel("fill_u32"), 1, n64, buf, 11, n64)
    s.synchronize()
    return _u32(buf)


@case("kernels.stream.order", cite="CUDA Programming Guide, Asynchronous Concurrent Execution, Streams: kernels launched into "
                                   "one stream run in order", apis=("LaunchKernel",),
      requires=K, expect=[7] * n64)
def _(t: CaseContext) -> Any:
    """fill 3 then add 4 on one stream gives 7."""
    buf = _zeroed(t)
    s = t.stream()
    s.launch(t.kernel("fill_u32"), 2, 32, buf, 3, n64)
    s.launch(t.kernel("add_u32"), 2, 32, buf, 4, n64)
    s.synchronize()
    return _u32(buf)


@case("kernels.stream.wrong_count", kind="binding",
      cite=LAUNCH + "args holds one pointer per kernel parameter; " + PYCHECK,
      apis=("LaunchKernel",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A stream launch with too few arguments is refused before anything runs."""
    s = t.stream()
    s.launch(t.kernel("fill_u32"), 1, n64, _zeroed(t), 1)


@case("kernels.stream.wrong_type", kind="binding",
      cite=LAUNCH + "each argument must have its parameter's type; " + PYCHECK,
      apis=("LaunchKernel",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A stream launch with a float for the pointer is refused."""
    s = t.stream()
    s.launch(t.kernel("fill_u32"), 1, n64, 2.0, 1, n64)


@case("kernels.stream.refusal_runs_nothing", kind="binding", cite=LAUNCH + "a refused launch does not run; " + PYCHECK,
      apis=("LaunchKernel",), requires=K, expect=[0] * n64)
def _(t: CaseContext) -> Any:
    """After a refused launch the buffer is untouched."""
    buf = _zeroed(t)
    s = t.stream()
    t.raises(errors.InvalidValue, s.launch, t.kernel("fill_u32"), 1, n64, buf, 1, 1 << 40)
    s.synchronize()
    return _u32(buf)


@case("kernels.stream.not_a_kernel", kind="binding",
      cite=LAUNCH + "func is a device function; " + PYGRAPHRT + "a Kernel is "
      "required, InvalidValue", apis=("LaunchKernel",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Launching a kernel given by name is refused."""
    t.stream().launch("fill_u32", 1, n64, _zeroed(t), 1, n64)


@case("kernels.stream.closed_stream", kind="binding",
      cite=LAUNCH + "stream - stream identifier; " + PYGRAPHRT + "a closed "
      "stream raises InvalidResourceHandle", apis=("LaunchKernel",), requires=K, raises=errors.InvalidResourceHandle)
def _(t: CaseContext) -> Any:
    """Launching on a closed stream is refused."""
    s = t.stream()
    s.close()
    s.launch(t.kernel("fill_u32"), 1, n64, _zeroed(t), 1, n64)


@case("kernels.stream.grid_zero", kind="binding",
      cite=LAUNCH + "gridDim must be positive; " + DIMCHECK, apis=("LaunchKernel",),
      requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A stream launch of zero blocks is refused."""
    t.stream().launch(t.kernel("fill_u32"), 0, n64, _zeroed(t), 1, n64)


@case("kernels.stream.priority_attribute", cite="CUDA Runtime API 13.5, Data types, cudaLaunchAttributePriority: \"Valid for streams, graph "
                                                "nodes, launches\" -- cudaLaunchAttributePriority: the launch's priority",
      apis=("LaunchKernelExC",), requires=("kernels", "cuda"), expect=[12] * n64)
def _(t: CaseContext) -> Any:
    """A launch with the priority attribute runs."""
    buf = _zeroed(t)
    s = t.stream()
    s.launch(t.kernel("fill_u32"), 1, n64, buf, 12, n64, priority=0)
    s.synchronize()
    return _u32(buf)


@case("kernels.stream.unknown_attribute", kind="binding",
      cite=LAUNCH_EX + "attrs are cudaLaunchAttribute ids; " + PYGRAPHRT
      + "an attribute the runtime does not have raises NotSupported", apis=("LaunchKernelExC",), requires=K,
      raises=errors.NotSupported)
def _(t: CaseContext) -> Any:
    """A launch attribute pygraphrt does not know is refused."""
    s = t.stream()
    s.launch(t.kernel("fill_u32"), 1, n64, _zeroed(t), 1, n64, no_such_attribute=1)


@case("kernels.stream.captured_node_args", cite="CUDA Runtime API 13.5, Stream Management, cudaStreamBeginCapture: \"When a stream is in "
                                                "capture mode, all operations pushed into the stream will not be executed, but will instead "
                                                "be captured into a graph\" -- work launched into a capturing stream becomes graph nodes (a "
                                                "kernel launch: a kernel node with its arguments)", apis=("LaunchKernel", "StreamBeginCapture", "GraphKernelNodeGetParams", "GraphNodeGetType"),
      requires=K,
      expect=(NodeType.KERNEL, 13, (1, 1, 1), (n64, 1, 1)))
def _(t: CaseContext) -> Any:
    """A captured stream launch is a kernel node with the launch's arguments and dimensions."""
    buf = _zeroed(t)
    s = t.stream()
    with s.capture() as cap:
        s.launch(t.kernel("fill_u32"), 1, n64, buf, 13, n64)
    g = t.track(cap.graph)
    k = g.nodes()[0]
    return t.runtime_type(k), k.args[1], tuple(k.params["grid"]), tuple(k.params["block"])


# ============================================================================ executable graphs
@case("kernels.exec.set_args", cite=DOC_GRAPH_EXEC_KERNEL_NODE_SET_PARAMS_ALREADY_ENQUEUED + " -- updates the work "
                                    "represented by node in hGraphExec as though node had contained pNodeParams "
                                    "at instantiation; node is not modified", apis=("GraphExecKernelNodeSetParams",
                                                                                    "GraphLaunch"),
      requires=K, expect=([21] * n64, 1))
def _(t: CaseContext) -> Any:
    """New arguments reach the executable graph; the graph's node keeps its own."""
    buf = _zeroed(t)
    g, k = _fill_graph(t, buf, 1)
    exe = t.instantiate(g)
    exe.set_kernel_params(k, args=[buf, 21, n64])
    s = t.stream()
    exe.launch(s)
    s.synchronize()
    return _u32(buf), k.args[1]


@case("kernels.exec.set_other_kernel", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphExecKernelNodeSetParams: \"- The owning "
                                            "device of the function cannot change. - A node whose function originally did not use CUDA "
                                            "dynamic parallelism cannot be updated to a function which uses CDP - A node whose function "
                                            "originally did not make device-side update calls cannot be updated to a function which makes "
                                            "device-side update calls. - If hGraphExec was not instantiated for device launch, a node "
                                            "whose function originally did not use device-side cudaGraphLaunch() cannot be updated to a "
                                            "function which uses device-side cudaGraphLaunch() unless the node resides on the same device "
                                            "as nodes which contained such calls at instantiate-time\" -- the owning context of the "
                                            "function cannot change (another kernel of the same context may be set)", apis=("GraphExecKernelNodeSetParams", "GraphLaunch"), requires=K,
      expect=([7] * n64, "fill_u32"))
def _(t: CaseContext) -> Any:
    """The executable graph runs another kernel after set_kernel_params(kernel=...)."""
    buf = _filled(t, 5)
    g, k = _fill_graph(t, buf, 1)
    exe = t.instantiate(g)
    exe.set_kernel_params(k, kernel=t.kernel("add_u32"), args=[buf, 2, n64])
    s = t.stream()
    exe.launch(s)
    s.synchronize()
    return _u32(buf), k.params["kernel"].name


@case("kernels.exec.set_dims", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphExecKernelNodeSetParams: \"All nodeParams "
                                    "fields may change, but the following restrictions apply to func updates\" -- gridDim and "
                                    "blockDim may change", apis=("GraphExecKernelNodeSetParams",
                                                                                       "GraphLaunch"),
      requires=K, expect=[14] * 16 + [0] * 48)
def _(t: CaseContext) -> Any:
    """A smaller block set on the executable graph writes fewer elements."""
    buf = _zeroed(t)
    g, k = _fill_graph(t, buf, 14)
    exe = t.instantiate(g)
    exe.set_kernel_params(k, block=16)
    s = t.stream()
    exe.launch(s)
    s.synchronize()
    return _u32(buf)


@case("kernels.exec.set_launch_dims", cite=DOC_GRAPH_EXEC_KERNEL_NODE_SET_PARAMS_ALREADY_ENQUEUED + " -- gridDim and blockDim may "
                                           "change; node is not modified",
      apis=("GraphExecKernelNodeSetParams", "GraphLaunch"), requires=K, expect=([15] * 32 + [0] * 32, (n64, 1, 1)))
def _(t: CaseContext) -> Any:
    """set_kernel_launch_dims changes the executable graph only."""
    buf = _zeroed(t)
    g, k = _fill_graph(t, buf, 15)
    exe = t.instantiate(g)
    exe.set_kernel_launch_dims(k, block=32)
    s = t.stream()
    exe.launch(s)
    s.synchronize()
    return _u32(buf), tuple(k.params["block"])


@case("kernels.exec.set_launch_dims_zero", kind="binding", cite=EXEC_SET + "blockDim must be positive; " + DIMCHECK,
      apis=("GraphExecKernelNodeSetParams",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A zero block set on the executable graph is refused."""
    # unsure: pygraphrt gap -- a plain int 0 passes _as_dim3 (graph/_node.py) unchecked, so the runtime
    # answers (the simulator: cudaErrorInvalidConfiguration, a plain GraphRTError).
    g, k = _fill_graph(t, _zeroed(t), 1)
    t.instantiate(g).set_kernel_launch_dims(k, block=0)


@case("kernels.exec.set_kernel_without_args", kind="binding",
      cite=EXEC_SET + "a new func needs its kernelParams; " + PYCHECK,
      apis=("GraphExecKernelNodeSetParams",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Another kernel without arguments is refused on the executable graph."""
    g, k = _fill_graph(t, _zeroed(t), 1)
    t.instantiate(g).set_kernel_params(k, kernel=t.kernel("copy_u32"))


@case("kernels.exec.set_wrong_args", kind="binding",
      cite=EXEC_SET + "kernelParams must match the kernel's parameters; " + PYCHECK,
      apis=("GraphExecKernelNodeSetParams",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Arguments that do not fit are refused on the executable graph."""
    buf = _zeroed(t)
    g, k = _fill_graph(t, buf, 1)
    t.instantiate(g).set_kernel_params(k, args=[buf, 1.5, n64])


@case("kernels.exec.set_other_graph_node", kind="binding",
      cite=EXEC_SET + "node must remain in the graph which was used to "
      "instantiate hGraphExec; " + PYGRAPHRT + "InvalidValue", apis=("GraphExecKernelNodeSetParams",), requires=K,
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A kernel node of another graph is refused."""
    buf = _zeroed(t)
    g1, _k1 = _fill_graph(t, buf, 1)
    _g2, k2 = _fill_graph(t, buf, 2)
    t.instantiate(g1).set_kernel_params(k2, args=[buf, 3, n64])


@case("kernels.exec.set_on_memset_node", kind="binding",
      cite=EXEC_SET + "node - kernel node from the graph; " + PYGRAPHRT
      + "InvalidValue", apis=("GraphExecKernelNodeSetParams",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """set_kernel_params on a memset node is refused."""
    buf = _zeroed(t)
    g = t.graph()
    m = g.add_memset(buf, 1, NB)
    t.instantiate(g).set_kernel_params(m, args=[buf, 1, n64])


@case("kernels.exec.disabled", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphNodeSetEnabled: \"Disabled nodes are "
                                    "functionally equivalent to empty nodes until they are reenabled\" -- kernel nodes can be "
                                    "disabled: functionally equivalent to empty nodes until reenabled", apis=("GraphNodeSetEnabled", "GraphLaunch"), requires=("kernels", "per_node_enable"),
      expect=([0] * n64, [16] * n64))
def _(t: CaseContext) -> Any:
    """A disabled kernel node writes nothing; re-enabled, it writes."""
    buf = _zeroed(t)
    g, k = _fill_graph(t, buf, 16)
    exe = t.instantiate(g)
    s = t.stream()
    exe.set_enabled(k, False)
    exe.launch(s)
    s.synchronize()
    off = _u32(buf)
    exe.set_enabled(k, True)
    exe.launch(s)
    s.synchronize()
    return off, _u32(buf)


@case("kernels.update.args", cite=DOC_GRAPH_EXEC_UPDATE_UPDATES_NODE + " -- updates kernel node parameters from "
                                  "a topologically identical graph",
      apis=("GraphExecUpdate", "GraphLaunch"), requires=K, expect=(UpdateResult.SUCCESS, [17] * n64))
def _(t: CaseContext) -> Any:
    """A kernel node with new arguments updates."""
    buf = _zeroed(t)
    g1, _a = _fill_graph(t, buf, 1)
    g2, _b = _fill_graph(t, buf, 17)
    exe = t.instantiate(g1)
    r = _update(t, exe, g2)
    s = t.stream()
    exe.launch(s)
    s.synchronize()
    return r, _u32(buf)


@case("kernels.update.function", cite=DOC_GRAPH_EXEC_UPDATE_KERNEL_NODES + " -- kernel nodes: the owning context "
                                      "of the function cannot change (cudaGraphExecUpdateErrorFunctionChanged "
                                      "only for CUDA drivers < 11.2): another kernel updates",
      apis=("GraphExecUpdate", "GraphLaunch"), requires=K, expect=(UpdateResult.SUCCESS, [7] * n64))
def _(t: CaseContext) -> Any:
    """A kernel node running another kernel of the same context updates."""
    buf = _filled(t, 5)
    g1, _a = _fill_graph(t, buf, 1)
    g2 = t.graph()
    g2.add_kernel(t.kernel("add_u32"), 1, n64, [buf, 2, n64])
    exe = t.instantiate(g1)
    r = _update(t, exe, g2)
    s = t.stream()
    exe.launch(s)
    s.synchronize()
    return r, _u32(buf)


@case("kernels.update.dims", cite=(DOC_GRAPH_EXEC_UPDATE_UPDATES_NODE + " -- updates node parameters; \"- Kernel "
                                   "nodes: - The owning context of the function cannot change\" -- the "
                                   "kernel-node restrictions do not include launch dimensions"),
      apis=("GraphExecUpdate", "GraphLaunch"), requires=K, expect=(UpdateResult.SUCCESS, [18] * 8 + [0] * 56))
def _(t: CaseContext) -> Any:
    """A kernel node with a smaller block updates."""
    buf = _zeroed(t)
    g1, _a = _fill_graph(t, buf, 18)
    g2, _b = _fill_graph(t, buf, 18, block=8)
    exe = t.instantiate(g1)
    r = _update(t, exe, g2)
    s = t.stream()
    exe.launch(s)
    s.synchronize()
    return r, _u32(buf)


@case("kernels.update.to_memset", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphExecUpdate: "
                                       "\"cudaGraphExecUpdateErrorNodeTypeChanged if the type of a node changed\" -- "
                                       "cudaGraphExecUpdateErrorNodeTypeChanged when a node in hGraph has a different type than the "
                                       "node it is paired with", apis=("GraphExecUpdate",), requires=K,
      raises=errors.GraphExecUpdateError)
def _(t: CaseContext) -> Any:
    """A kernel node paired with a memset node: NODE_TYPE_CHANGED."""
    buf = _zeroed(t)
    g1, _a = _fill_graph(t, buf, 1)
    g2 = t.graph()
    g2.add_memset(buf, 1, NB)
    exe = t.instantiate(g1)
    with t.under_test():
        _expect_update_error(t, exe, g2, UpdateResult.NODE_TYPE_CHANGED)


@case("kernels.update.priority_with_node_priority", cite=DOC_GRAPH_EXEC_UPDATE_KERNEL_NODES + " -- if the graph was "
                                                         "instantiated with cudaGraphInstantiateFlagUseNodePriority, the "
                                                         "priority attribute cannot change "
                                                         "(cudaGraphExecUpdateErrorAttributesChanged)", apis=("GraphExecUpdate", "GraphKernelNodeSetAttribute"),
      requires=("kernels", "cuda"), raises=errors.GraphExecUpdateError)
def _(t: CaseContext) -> Any:
    """With node priorities in use, a kernel node whose priority changed does not update."""
    # CUDA 12.9-13.5: ATTRIBUTES_CHANGED.
    buf = _zeroed(t)
    g1, k1 = _fill_graph(t, buf, 1)
    k1.set_attribute("priority", 0)
    g2, k2 = _fill_graph(t, buf, 1)
    k2.set_attribute("priority", -1)
    exe = t.instantiate(g1, InstantiateFlags.USE_NODE_PRIORITY)
    with t.under_test():
        _expect_update_error(t, exe, g2, UpdateResult.ATTRIBUTES_CHANGED)


@case("kernels.update.cooperative_changed", cite=DOC_GRAPH_EXEC_UPDATE_KERNEL_NODES + " -- kernel nodes: a "
                                                 "cooperative node cannot be updated to a non-cooperative node, "
                                                 "and vice-versa", apis=("GraphExecUpdate", "GraphKernelNodeSetAttribute"),
      requires=("kernels", "cuda"), raises=errors.GraphExecUpdateError)
def _(t: CaseContext) -> Any:
    """A kernel node that became cooperative does not update."""
    # CUDA 12.9-13.5: ATTRIBUTES_CHANGED.
    buf = _zeroed(t)
    g1, _k1 = _fill_graph(t, buf, 1)
    g2, k2 = _fill_graph(t, buf, 1)
    k2.set_attribute("cooperative", True)
    exe = t.instantiate(g1)
    with t.under_test():
        _expect_update_error(t, exe, g2, UpdateResult.ATTRIBUTES_CHANGED)


# ============================================================================ kernel-node attributes
@case("kernels.attr.priority", cite=("CUDA Runtime API 13.5, Data types, union cudaLaunchAttributeValue: \"Value of launch attribute "
      "cudaLaunchAttributePriority. Execution priority of the kernel\" -- the node's execution priority, "
      "read back as set"),
      apis=("GraphKernelNodeSetAttribute", "GraphKernelNodeGetAttribute"), requires=K, expect=-1)
def _(t: CaseContext) -> Any:
    """The priority attribute reads back what was set."""
    _g, k = _fill_graph(t, _zeroed(t), 1)
    k.set_attribute("priority", -1)
    return k.attribute("priority")


@case("kernels.attr.at_creation", cite=("CUDA Runtime API 13.5, Graph Management, cudaGraphKernelNodeGetAttribute / "
      "cudaGraphKernelNodeSetAttribute: \"Sets attribute attr on node hNode from corresponding attribute of "
      "value\" -- sets a kernel node attribute; \"Queries attribute attr from node hNode and stores it in "
      "corresponding member of value_out\" -- reads it back; pygraphrt kernels API: add_kernel(attributes=) "
      "sets them once the node exists"), apis=("GraphAddKernelNode", "GraphKernelNodeSetAttribute",
                                                            "GraphKernelNodeGetAttribute"), requires=K, expect=-1)
def _(t: CaseContext) -> Any:
    """An attribute given at creation reads back."""
    g = t.graph()
    k = g.add_kernel(t.kernel("fill_u32"), 1, n64, [_zeroed(t), 1, n64], attributes={"priority": -1})
    return k.attribute("priority")


@case("kernels.attr.cooperative", cite=("Observed, cudaGraphKernelNodeGetAttribute: a new kernel node's "
                                        "cudaLaunchAttributeCooperative reads 0 (off) "
                                        "(deviations.OBSERVATIONS); CUDA Runtime API 13.5, Data types, union "
                                        "cudaLaunchAttributeValue: \"Value of launch attribute "
                                        "cudaLaunchAttributeCooperative. Nonzero indicates a cooperative "
                                        "kernel\" -- set, the node is a cooperative launch; that a new kernel "
                                        "node's value is zero (off) is not stated"), apis=("GraphKernelNodeSetAttribute", "GraphKernelNodeGetAttribute"), requires=K, expect=(False, True))
def _(t: CaseContext) -> Any:
    """The cooperative attribute starts off and reads back once set."""
    _g, k = _fill_graph(t, _zeroed(t), 1)
    before = k.attribute("cooperative")
    k.set_attribute("cooperative", True)
    return before, k.attribute("cooperative")


@case("kernels.attr.copy", cite=COPY_ATTR + "copies attributes from source node to destination node",
      apis=("GraphKernelNodeCopyAttributes", "GraphKernelNodeGetAttribute"), requires=K, expect=(-1, -1))
def _(t: CaseContext) -> Any:
    """copy_attributes_to gives the other node the source's priority, leaving the source's."""
    g, a = _fill_graph(t, _zeroed(t), 1)
    b = g.add_kernel(t.kernel("fill_u32"), 1, n64, [_zeroed(t), 2, n64])
    a.set_attribute("priority", -1)
    a.copy_attributes_to(b)
    return b.attribute("priority"), a.attribute("priority")


@case("kernels.attr.copy_across_graphs", cite="CUDA Runtime API 13.5, Graph Management, cudaGraphKernelNodeCopyAttributes: \"Both node must "
                                              "have the same context\" -- both nodes must belong to the same context (not to the same graph)", apis=("GraphKernelNodeCopyAttributes", "GraphKernelNodeGetAttribute"), requires=K,
      expect=(False, True))
def _(t: CaseContext) -> Any:
    """Attributes copy to a kernel node of another graph (cooperative: off before the copy, on after)."""
    _g1, a = _fill_graph(t, _zeroed(t), 1)
    _g2, b = _fill_graph(t, _zeroed(t), 2)
    a.set_attribute("cooperative", True)
    before = b.attribute("cooperative")
    a.copy_attributes_to(b)
    return before, b.attribute("cooperative")


@case("kernels.attr.unknown_name", kind="binding",
      cite=GET_ATTR + "attr is a cudaLaunchAttributeID; " + PYGRAPHRT + "an "
      "unknown attribute name is refused, InvalidValue", apis=("GraphKernelNodeGetAttribute",), requires=K,
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """An attribute name pygraphrt does not know is refused."""
    _g, k = _fill_graph(t, _zeroed(t), 1)
    k.attribute("speed")


@case("kernels.attr.wrong_value_type", kind="binding",
      cite=GET_ATTR + "value is the attribute's union member (an int for "
      "priority); " + PYGRAPHRT + "InvalidValue", apis=("GraphKernelNodeSetAttribute",), requires=K,
      raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A priority that is not an int is refused."""
    _g, k = _fill_graph(t, _zeroed(t), 1)
    k.set_attribute("priority", "high")


@case("kernels.attr.unknown_at_creation_removes_node", cite=(
          "CUDA Runtime API 13.5, Graph Management, cudaGraphDestroyNode: \"Removes node from its graph\" -- "
          "the node pygraphrt added is removed, so the graph's node count (cudaGraphGetNodes) is 0; that an "
          "attribute refused at creation leads to the removal is pygraphrt's (kernels API: "
          "add_kernel(attributes=) destroys the node it added when an attribute is refused)"), apis=("GraphAddKernelNode", "GraphDestroyNode"),
      requires=K, expect=0)
def _(t: CaseContext) -> Any:
    """A node whose attributes are refused at creation is not left in the graph."""
    g = t.graph()
    t.raises(errors.InvalidValue, g.add_kernel, t.kernel("fill_u32"), 1, n64, [_zeroed(t), 1, n64],
             attributes={"speed": 1})
    return len(g)


@case("kernels.attr.copy_to_non_kernel", kind="binding",
      cite=COPY_ATTR + "both nodes must be kernel nodes; " + PYGRAPHRT
      + "InvalidValue", apis=("GraphKernelNodeCopyAttributes",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Copying attributes to an empty node is refused."""
    g, k = _fill_graph(t, _zeroed(t), 1)
    k.copy_attributes_to(g.add_empty())


@case("kernels.attr.copy_raw_non_kernel", cite=(
          "Observed, cudaGraphKernelNodeCopyAttributes: the error code (deviations.OBSERVATIONS); CUDA Runtime "
          "API 13.5, Graph Management, cudaGraphKernelNodeCopyAttributes: \"Copies attributes from source node "
          "hSrc to destination node hDst\" -- both are kernel nodes (the attributes are cudaKernelNodeAttrID); "
          "no sentence states that another node type is refused"), apis=("GraphKernelNodeCopyAttributes",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """The runtime refuses to copy attributes between a kernel node and an empty node."""
    g, k = _fill_graph(t, _zeroed(t), 1)
    e = g.add_empty()
    with t.under_test():
        t.call("GraphKernelNodeCopyAttributes", e.handle, k.handle)


@case("kernels.attr.get_on_memset_raw", cite=(
          "Observed, cudaGraphKernelNodeGetAttribute: a memset node is refused with cudaErrorInvalidValue "
          "(deviations.OBSERVATIONS); CUDA Runtime API 13.5, Graph Management, "
          "cudaGraphKernelNodeGetAttribute: \"Queries attribute attr from node hNode and stores it in "
          "corresponding member of value_out\" -- hNode must be a kernel node; no sentence states that another "
          "node type is refused (cudaErrorInvalidValue is only in the return list)"), apis=("GraphKernelNodeGetAttribute",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """The runtime refuses to read a launch attribute of a memset node."""
    g = t.graph()
    m = g.add_memset(_zeroed(t), 1, NB)
    ops = t.backend.ops
    ident = ops._attribute_id("priority", "priority")
    val = t.ffi.new(f"{ops.prefix}LaunchAttributeValue *")
    with t.under_test():
        t.call("GraphKernelNodeGetAttribute", m.handle, ident, val)


# ============================================================================ the kernel itself
@case("kernels.kernel.attributes", cite="CUDA Runtime API 13.5, Data types, cudaFuncAttributes: \"The maximum number of threads per "
                                        "block, beyond which a launch of the function would fail. This number depends on both the "
                                        "function and the device on which the function is currently loaded\" -- maxThreadsPerBlock: "
                                        "the maximum number of threads per block, beyond which a launch of the function would fail. "
                                        "This number depends on both the function and the device on which the function is currently "
                                        "loaded; binaryVersion: the binary architecture version for which the function was compiled. "
                                        "This value is the major binary version * 10 + the minor binary version",
      apis=("FuncGetAttributes", "GetDeviceProperties"), requires=K,
      expect={"max threads per block within the device's": True, "a launch of 64 threads fits": True,
              "binary version - device compute capability": 0})
def _(t: CaseContext) -> Any:
    """A compiled kernel's attributes agree with the device it is loaded on."""
    a = t.kernel("fill_u32").attributes()
    dev = t.rt.current_device().ordinal
    prop = t.ffi.new(f"{t.backend.ops.device_prop_type} *")
    t.call("GetDeviceProperties", prop, dev)
    t.note(f"kernel attributes {a}; device maxThreadsPerBlock {prop.maxThreadsPerBlock}, "
           f"compute capability {prop.major}.{prop.minor}")
    return {"max threads per block within the device's": a.max_threads_per_block <= prop.maxThreadsPerBlock,
            "a launch of 64 threads fits": a.max_threads_per_block >= n64,
            "binary version - device compute capability": a.binary_version - (10 * prop.major + prop.minor)}


@case("kernels.kernel.occupancy", cite=OCCUPANCY + "returns in *numBlocks the maximum number of active blocks per "
      "streaming multiprocessor for the device function", apis=("OccupancyMaxActiveBlocksPerMultiprocessor",
                                                                "GetDeviceProperties"), requires=K,
      expect={"at least one block": True, "within the multiprocessor's threads": True})
def _(t: CaseContext) -> Any:
    """Blocks of 64 threads fit on a multiprocessor, within what one multiprocessor can hold."""
    blocks = t.kernel("fill_u32").max_active_blocks_per_multiprocessor(n64)
    prop = t.ffi.new(f"{t.backend.ops.device_prop_type} *")
    t.call("GetDeviceProperties", prop, t.rt.current_device().ordinal)
    t.note(f"{blocks} blocks of {n64} threads; maxThreadsPerMultiProcessor {prop.maxThreadsPerMultiProcessor}")
    return {"at least one block": blocks >= 1,
            "within the multiprocessor's threads": blocks * n64 <= prop.maxThreadsPerMultiProcessor}


@case("kernels.kernel.occupancy_zero_block", kind="binding",
      cite=OCCUPANCY + "blockSize is the block size the kernel is "
      "launched with; " + PYGRAPHRT + "a non-positive block size is refused, InvalidValue",
      apis=("OccupancyMaxActiveBlocksPerMultiprocessor",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """Occupancy for a block of zero threads is refused."""
    t.kernel("fill_u32").max_active_blocks_per_multiprocessor(0)


@case("kernels.kernel.max_dynamic_shared_memory", cite="CUDA Runtime API 13.5, Execution Control, cudaFuncSetAttribute: \"Valid values for attr are: "
                                                       "- cudaFuncAttributeMaxDynamicSharedMemorySize - The requested maximum size in bytes of "
                                                       "dynamically-allocated shared memory\" -- cudaFuncAttributeMaxDynamicSharedMemorySize: the "
                                                       "maximum size of dynamically-allocated shared memory; CUDA Runtime API 13.5, Execution "
                                                       "Control, cudaFuncGetAttributes: \"This function obtains the attributes of a function "
                                                       "specified via func\" -- reads it back",
      apis=("FuncSetAttribute", "FuncGetAttributes"), requires=K, expect=1024)
def _(t: CaseContext) -> Any:
    """The maximum dynamic shared memory of a kernel reads back what was set."""
    k = _own_kernel(t)  # not the shared standard kernel: this changes the kernel's attribute
    k.set_max_dynamic_shared_memory(1024)
    return k.attributes().max_dynamic_shared_size_bytes


@case("kernels.kernel.max_dynamic_shared_memory_too_large", cite="CUDA Runtime API 13.5, Execution Control, cudaFuncSetAttribute: \"The sum of this value and "
                                                                 "the function attribute sharedSizeBytes cannot exceed the device attribute "
                                                                 "cudaDevAttrMaxSharedMemoryPerBlockOptin\" ... \"If the specified attribute cannot be written, "
                                                                 "or if the value is incorrect, then cudaErrorInvalidValue is returned\" -- the value must not "
                                                                 "exceed the device's shared memory per block minus the kernel's static shared memory; returns "
                                                                 "cudaErrorInvalidValue",
      apis=("FuncSetAttribute",), requires=K, raises=errors.InvalidValue)
def _(t: CaseContext) -> Any:
    """A maximum dynamic shared memory of 1 GiB is refused; the kernel keeps its value."""
    k = _own_kernel(t)  # not the shared standard kernel: a wrongly accepted value would change it
    before = k.attributes().max_dynamic_shared_size_bytes
    try:
        with t.under_test():
            k.set_max_dynamic_shared_memory(1 << 30)
    finally:
        t.check_equal(k.attributes().max_dynamic_shared_size_bytes, before, "the kernel's maximum after the refusal")
