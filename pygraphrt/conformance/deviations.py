"""Known deviations: where a runtime knowingly differs from the documented behaviour.

A case's expected outcome is the documented, vendor-neutral one.  When a runtime
returns something else, the difference is either *known* -- listed here, with the
vendor's error code and the reason -- and the case's status is ``deviation``, or it
is not, and the case **fails**: an undocumented difference is a failure.

An entry matches a case result when all of these hold:

* ``case`` is the case id;
* ``vendor`` is the active backend's vendor (``"cuda"`` or ``"hip"``);
* ``observed`` / ``code`` / ``detail`` match (below).

Then the *versions* decide between two statuses.  ``runtime`` and ``driver`` are the
versions the deviation was actually seen on (the runtime's version, and the CUDA version
the driver supports, as ``cudaDriverGetVersion`` reports it: driver 580 reports 13.0).
Within both, the case's status is ``deviation``; outside either, it is
``unverified-deviation``: the same difference on a runtime or driver nobody has run it
on is neither a pass nor a silent exemption -- it is counted and listed, so that a new
version is checked, not assumed.  Every GPU run so far had driver 580 (13.0), so each
entry's driver range is that one point, and a driver update flags them all: that is the
intent.  On the simulator (``sim``: it has no driver, and models the behaviour observed on
those versions on purpose) the versions are not compared.

Version ranges: ``"*"`` (any), ``"13.x"`` (any 13 release), ``"12.9"`` (that minor
release), ``">=13.0"``, ``"<12.4"``, clauses joined by commas (``">=12.3,<13.0"``: all of
them), and alternatives joined by ``|`` (``"12.9|13.0|13.5"``: any of them -- the points
seen, with no claim about the releases between them).  The table's entries list the points
seen.
* ``observed`` is what the case observed: the class name of the exception it raised
  (``"InvalidValue"``, ``"NotSupported"``, ``"CaseFailure"`` for a failed intermediate
  check) or the ``repr`` of the value it returned (``"3"``, ``"(True, 2)"``);
* ``code`` is the vendor error name that came with it (``"cudaErrorInvalidValue"``;
  for a ``CaseFailure``, the name carried by the runtime error that caused it), or
  ``None`` when the outcome carries no vendor code (a returned value, or an error
  pygraphrt raised itself);
* ``detail``, when given, occurs in the observed message (to tell apart two
  ``CaseFailure`` outcomes of one case).

Entries are added after a run on real hardware, each with the reason the runtime
differs (the vendor's documentation, a release note, a bug report): nothing here is
assumed without a run that showed it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable

__all__ = ["Deviation", "DEVIATIONS", "Observation", "OBSERVATIONS", "find", "parse_range", "version_in",
           "check_table"]

_CLAUSE = re.compile(r"^(>=|<=|==|>|<)?(\d+)\.(\d+|x)$")


@dataclass(frozen=True)
class Deviation:
    """One known deviation (see the module docstring for how it is matched)."""

    case: str
    vendor: str
    runtime: str
    observed: str
    code: str | None
    reason: str
    detail: str | None = None
    driver: str = "*"  # the driver versions (the CUDA version the driver supports) it was seen on

    def matches(self, case: str, vendor: str, version: tuple[int, int] | None, observed: str,
                code: str | None, message: str = "") -> bool:
        """Whether this known deviation explains the observed outcome of ``case`` on ``vendor``
        (and, unless ``version`` is None, whether the runtime version is in :attr:`runtime`)."""
        return (self.case == case and self.vendor == vendor
                and (version is None or version_in(version, self.runtime))
                and self.observed == observed and self.code == code
                and (self.detail is None or self.detail in message))

    def covers(self, runtime: tuple[int, int], driver: tuple[int, int] | None) -> bool:
        """Whether the entry was seen on this runtime and driver (an unknown driver: no)."""
        if not version_in(runtime, self.runtime):
            return False
        if self.driver.strip() in ("*", ""):
            return True
        return driver is not None and version_in(driver, self.driver)

    @property
    def seen(self) -> str:
        """The versions the deviation was seen on (``runtime 13.0, driver 13.0``)."""
        return f"runtime {self.runtime}, driver {self.driver}"


def parse_range(text: str) -> Callable[[tuple[int, int]], bool]:
    """A predicate on (major, minor) for a version range (see the module docstring)."""
    text = text.strip()
    if text in ("*", ""):
        return lambda v: True
    if "|" in text:
        alternatives = [parse_range(part) for part in text.split("|")]
        if any(not part.strip() for part in text.split("|")):
            raise ValueError(f"version range {text!r}: an empty alternative")
        return lambda v: any(p(v) for p in alternatives)
    tests: list[tuple[str, tuple[int, int]]] = []  # (operator, bound); "x" compares majors only
    for raw in text.split(","):
        clause = raw.strip()
        m = _CLAUSE.match(clause)
        if m is None:
            raise ValueError(f"version range {text!r}: cannot read {clause!r} "
                             "(use '*', '13.x', '12.9', '>=13.0', '<12.4', joined by commas)")
        op, major_s, minor_s = m.group(1), m.group(2), m.group(3)
        if minor_s == "x":
            if op is not None:
                raise ValueError(f"version range {text!r}: {clause!r} mixes an operator with '.x'")
            tests.append(("x", (int(major_s), 0)))
        else:
            tests.append((op or "==", (int(major_s), int(minor_s))))

    def compare(v: tuple[int, int], op: str, bound: tuple[int, int]) -> bool:
        if op == "x":
            return v[0] == bound[0]
        return {"==": v == bound, ">=": v >= bound, ">": v > bound, "<=": v <= bound, "<": v < bound}[op]

    return lambda v: all(compare(v, op, bound) for op, bound in tests)


def version_in(version: tuple[int, int], runtime: str) -> bool:
    return parse_range(runtime)(version)


_SEEN = "seen on an H100 with driver 580 (CUDA 13.0) under the 12.9, 13.0 and 13.5 runtimes"
# The versions each entry was seen on (pygraphrt/conformance/results/*.json): nothing else.
_RUNTIMES = "12.9|13.0|13.5"
_SEEN_2GPU = "seen on two NVLink-connected H200s with driver 580 (CUDA 13.0) under the 12.9, 13.0 and 13.5 runtimes"
_DRIVERS = "13.0"
_UPDATE_FAILURE = "cudaErrorGraphExecUpdateFailure"

#: The known deviations (filled from runs on real hardware; see the module docstring).
#: The simulator (``sim``) is judged as CUDA, so it is held to these too.
DEVIATIONS: tuple[Deviation, ...] = (
    Deviation("exec.instantiate.use_node_priority_flag", "cuda", _RUNTIMES, "<InstantiateFlags.NONE: 0>", None,
              "cudaGraphExecGetFlags does not report cudaGraphInstantiateFlagUseNodePriority: the flag is "
              "accepted and node priorities apply, but GetFlags returns 0 (the other flags are reported); "
              + _SEEN, driver=_DRIVERS),
    Deviation("edges.data.remove_with_other_data", "cuda", _RUNTIMES, "0", None,
              "cudaGraphRemoveDependencies does not match edge data: asked to remove a default edge where "
              "the edge is programmatic, it succeeds and removes the programmatic edge; " + _SEEN, driver=_DRIVERS),
    Deviation("exec.update.edge_added", "cuda", _RUNTIMES, "CaseFailure", _UPDATE_FAILURE,
              "cudaGraphExecUpdate reports cudaGraphExecUpdateErrorTopologyChanged for a node with another "
              "number of dependencies, but with errorNode NULL instead of the node of hGraph; " + _SEEN,
              detail="error_node None", driver=_DRIVERS),
    Deviation("exec.update.edge_moved", "cuda", _RUNTIMES, "CaseFailure", _UPDATE_FAILURE,
              "the runtime pairs the nodes of the two graphs by their place in dependency order, not by "
              "creation order alone, so a moved edge is reported as cudaGraphExecUpdateErrorNodeTypeChanged "
              "(naming the memset node) rather than TopologyChanged; the update is refused either way; "
              + _SEEN, detail="NODE_TYPE_CHANGED", driver=_DRIVERS),
    Deviation("exec.update.memcpy_memory_type_changed", "cuda", _RUNTIMES, "None", None,
              "cudaGraphExecUpdate accepts a device-to-device copy replaced by a copy to pageable host memory "
              "(documented as not supported): with unified addressing the runtime does not treat it as a "
              "change of memory type; " + _SEEN, driver=_DRIVERS),
    Deviation("exec.set_memcpy.memory_type_changed", "cuda", _RUNTIMES, "None", None,
              "cudaGraphExecMemcpyNodeSetParams1D accepts a destination in pageable host memory for a node "
              "instantiated as a device-to-device copy (documented as not supported); " + _SEEN, driver=_DRIVERS),
    Deviation("exec.set_child_graph.topology_differs", "cuda", _RUNTIMES, "GraphExecUpdateFailure",
              _UPDATE_FAILURE,
              "cudaGraphExecChildGraphNodeSetParams refuses a child graph of another topology with "
              "cudaErrorGraphExecUpdateFailure, where the documentation lists cudaErrorInvalidValue; " + _SEEN,
              driver=_DRIVERS),
    Deviation("exec.set_child_graph.node_type_differs", "cuda", _RUNTIMES, "GraphExecUpdateFailure",
              _UPDATE_FAILURE,
              "cudaGraphExecChildGraphNodeSetParams refuses a child graph whose node has another type with "
              "cudaErrorGraphExecUpdateFailure, where the documentation lists cudaErrorInvalidValue; " + _SEEN,
              driver=_DRIVERS),
    Deviation("multidevice.peer.enable_self", "cuda", _RUNTIMES, "NotSupported", "cudaErrorPeerAccessUnsupported",
              "cudaDeviceEnablePeerAccess of the current device itself returns cudaErrorPeerAccessUnsupported, "
              "where the documentation says cudaErrorInvalidDevice when cudaDeviceCanAccessPeer() says the "
              "device cannot access peerDevice (it answers 0 for itself); " + _SEEN_2GPU, driver=_DRIVERS),
    Deviation("multidevice.pool.set_access_read_only", "cuda", _RUNTIMES, "NotSupported", "cudaErrorNotSupported",
              "cudaMemPoolSetAccess refuses cudaMemAccessFlagsProtRead (read-only access to another device's "
              "pool) with cudaErrorNotSupported; the documentation lists cudaSuccess and cudaErrorInvalidValue "
              "only; " + _SEEN_2GPU, driver=_DRIVERS),
    Deviation("capture.thread.wrong_thread_end_ends_the_capture", "cuda", _RUNTIMES,
              "(<CaptureStatus.NONE: 'none'>, 'IllegalState')", None,
              "cudaStreamEndCapture from another thread than the one that began a global-mode capture returns "
              "cudaErrorStreamCaptureWrongThread as documented, but ends the capture sequence all the same: the "
              "stream is no longer capturing and the beginning thread's end gets cudaErrorIllegalState (the "
              "documentation says the end must come from the beginning thread, nothing of the refused call "
              "ending it); " + _SEEN, driver=_DRIVERS),
    Deviation("control.ext_sem.import_not_a_semaphore", "cuda", _RUNTIMES, "GraphRTError", "cudaErrorUnknown",
              "cudaImportExternalSemaphore refuses an fd that is not a timeline semaphore (/dev/null) with "
              "cudaErrorUnknown, where the documentation lists cudaErrorInvalidResourceHandle and "
              "cudaErrorOperatingSystem; " + _SEEN, driver=_DRIVERS),
    Deviation("kernels.dims.stream_block_too_large", "cuda", "13.0|13.5", "CaseFailure", "cudaErrorInvalidValue",
              "the CUDA 13.0 and 13.5 runtimes' cudaLaunchKernel refuses a launch of a library kernel "
              "(cudaKernel_t) whose block exceeds the device's limits with cudaErrorInvalidValue, where the "
              "documentation says cudaErrorInvalidConfiguration (the 12.9 runtime returns it); seen on two "
              "H200s with driver 580 (CUDA 13.0), with the runtime calls recorded", driver=_DRIVERS),
    *(Deviation(case, "cuda", "12.9", "GraphRTError", "cudaErrorUnknown",
                "the CUDA 12.9 runtime on a CUDA 13.0 driver answers cudaGraphNodeGetType for a conditional "
                "node with cudaErrorUnknown (the driver's cuGraphNodeGetType reports CU_GRAPH_NODE_TYPE_CONDITIONAL;"
                " pygraphrt's node readback falls back to it); the 13.0 and 13.5 runtimes answer; seen on two "
                "H200s with driver 580", detail="cudaGraphNodeGetType", driver=_DRIVERS)
      for case in ("control.node.shapes", "control.node.runtime_type", "control.clone.refused",
                   "control.if.runs_when_set", "control.if_else.picks_a_branch", "control.switch.each_value",
                   "control.while.iterations", "control.handle.default_each_launch",
                   "control.handle.default_zero_skips", "control.nested.while_in_if",
                   "control.capture.equals_explicit", "control.update.body_memset_value")),
)


@dataclass(frozen=True)
class Observation:
    """A runtime outcome a case expects that the vendor's documentation does not state.

    The case's ``cite=`` then begins ``Observed`` (not a vendor document) and this entry says what
    was seen, on which runtime and driver versions (as :class:`Deviation`'s ``runtime`` / ``driver``:
    the points seen) and what the documentation says instead.  ``tests/cite_check.py`` requires an
    entry for every such case and checks the versions against the committed GPU results.
    """

    case: str
    vendor: str
    runtime: str
    driver: str
    observed: str
    documented: str


#: Observations without documentation (issue 38: a cite quotes documentation; what none says is
#: listed here with the versions it was seen on).
OBSERVATIONS: tuple[Observation, ...] = (
    Observation("memory.trim.invalid_device", "cuda", "12.9|13.0|13.5", _DRIVERS,
                "cudaDeviceGraphMemTrim of a device ordinal that does not exist returns "
                "cudaErrorInvalidDevice (101)",
                "the 12.9 and 13.5 headers list only cudaSuccess and cudaErrorInvalidValue"),
    Observation("kernels.attr.copy_raw_non_kernel", "cuda", "12.9|13.0|13.5", _DRIVERS,
                "cudaGraphKernelNodeCopyAttributes between a kernel node and a memset node returns "
                "cudaErrorInvalidValue",
                "the headers say only that both nodes must have the same context and list cudaSuccess and "
                "cudaErrorInvalidContext"),
    *(Observation(case, "cuda", "12.9|13.0|13.5", _DRIVERS,
                  f"cudaDevice{verb}GraphMemAttribute refuses {what} with cudaErrorInvalidValue",
                  f"the headers list the valid attributes{extra} and the codes cudaSuccess and cudaErrorInvalidDevice")
      for case, verb, what, extra in (
          ("memory.attributes.set_current_refused", "Set", "a current-usage attribute (not settable)", ""),
          ("memory.attributes.reset_to_nonzero_refused", "Set", "a high watermark set to a value other than 0",
           " ('High watermark can only be reset to zero')"),
          ("memory.attributes.unknown_attribute", "Get", "an attribute that is not a cudaGraphMemAttributeType",
           ""))),
    Observation("memory.pool.max_size_exceeded", "cuda", "12.9|13.0|13.5", _DRIVERS,
                "cudaMallocFromPoolAsync beyond the pool's maxSize returns cudaErrorMemoryAllocation (2)",
                "the headers list cudaErrorOutOfMemory, a name the runtime's enum cudaError does not have"),
    # Refusals whose code the function's return list names, but of an input no sentence of its documentation
    # describes as invalid (a NULL handle it does not require to be valid, a node of another type, a size or
    # device no sentence bounds): the refusal itself is what was seen.
    *(Observation(case, "cuda", _RUNTIMES, _DRIVERS, f"{function} refuses {what} with cudaErrorInvalidValue",
                  f"the return list names cudaErrorInvalidValue; {documented}")
      for case, function, what, documented in (
          ("exec.instantiate.null_graph", "cudaGraphInstantiateWithFlags", "a NULL graph",
           "no sentence requires graph to be valid or non-NULL ('graph - Graph to instantiate')"),
          ("exec.instantiate.null_out", "cudaGraphInstantiateWithFlags", "a NULL pGraphExec",
           "no sentence requires pGraphExec to be non-NULL ('pGraphExec - Returns instantiated graph')"),
          ("exec.launch.null_exec", "cudaGraphLaunch", "a NULL graphExec",
           "no sentence requires graphExec to be valid or non-NULL ('graphExec - Executable graph to launch')"),
          ("exec.upload.null_exec", "cudaGraphUpload", "a NULL graphExec",
           "no sentence requires graphExec to be valid or non-NULL ('graphExec - Executable graph to upload')"),
          ("graph.child.get_graph_wrong_type", "cudaGraphChildGraphNodeGetGraph", "a memset node",
           "the text speaks of 'a child graph node'; no sentence says another node type is refused"),
          ("graph.memset.get_params_wrong_type", "cudaGraphMemsetNodeGetParams", "an empty node",
           "the text speaks of 'memset node node'; no sentence says another node type is refused"),
          ("graph.memcpy.set_params_wrong_type", "cudaGraphMemcpyNodeSetParams1D", "a memset node",
           "the text speaks of 'memcpy node node'; no sentence says another node type is refused"),
          ("graph.host.get_params_wrong_type", "cudaGraphHostNodeGetParams", "an empty node",
           "the text speaks of 'host node node'; no sentence says another node type is refused"),
          ("graph.event_record.get_event_on_wait_node", "cudaGraphEventRecordNodeGetEvent", "an event wait node",
           "the text speaks of 'event record node hNode'; no sentence says another node type is refused"),
          ("kernels.attr.get_on_memset_raw", "cudaGraphKernelNodeGetAttribute", "a memset node",
           "the text ('Queries attribute attr from node hNode') names no node type"),
          ("graph.memset.pitch_below_width", "cudaGraphAddMemsetNode",
           "a 2-D memset of 4 rows of 100 bytes with pitch 50 (when the node is added)",
           "cudaMemset2D defines pitch as the row width plus padding; no sentence says a smaller pitch is refused"),
          ("graph.mem_alloc.zero_size", "cudaGraphAddMemAllocNode", "a bytesize of 0",
           "no sentence bounds bytesize (cudaMallocAsync accepts 0)"),
          ("graph.mem_alloc.invalid_device", "cudaGraphAddMemAllocNode",
           "an allocation located on device 1048576 (no such device)",
           "no sentence says a location that is no device is refused (cudaErrorInvalidDevice is the code whose "
           "description names a device ordinal that is no device)"),
          ("memory.pool.invalid_device", "cudaMemPoolCreate", "a pool located on device 4096 (no such device)",
           "no sentence says a location that is no device is refused (cudaErrorInvalidDevice is the code whose "
           "description names a device ordinal that is no device)"),
          *((f"kernels.dims.{name}", "cudaGraphAddKernelNode", f"{what} when the node is added",
             "no sentence states a kernel node's launch limits or that they are checked when the node is added; "
             "the description of cudaErrorInvalidConfiguration names this trigger ('requesting too many threads or "
             "blocks', 'more shared memory per block than the device supports') for a kernel launch")
            for name, what in (("block_too_large", "a block of 4096 threads"),
                               ("block_z_too_large", "a block 128 threads deep in z"),
                               ("grid_y_too_large", "a grid of 70000 blocks in y"),
                               ("shared_mem_too_large", "1 GiB of dynamic shared memory"))))),
    # Outcomes no sentence states at all (a call accepted, what a call leaves behind, a default).
    *(Observation(case, "cuda", _RUNTIMES, _DRIVERS, observed, documented)
      for case, observed, documented in (
          ("capture.fork.joined_stream_released_by_end",
           "cudaStreamEndCapture on the origin stream also ends the capture on a stream that joined it "
           "(cudaStreamWaitEvent on an event recorded in the capture): that stream reports no capture afterwards",
           "cudaStreamEndCapture: 'Ends capture on a stream'; nothing of the streams that joined the capture"),
          ("capture.to_graph.abort_keeps_target",
           "a capture into an existing graph (cudaStreamBeginCaptureToGraph) ended and discarded leaves that graph "
           "valid, with the nodes it had before",
           "cudaStreamBeginCaptureToGraph: 'Begins graph capture on a stream to an existing graph'; nothing of "
           "what ending the capture does to that graph"),
          ("capture.ops.other_stream_executes",
           "a memset on another stream during a capture executes and is not captured",
           "cudaStreamBeginCapture speaks of the capturing stream only ('all operations pushed into the stream "
           "will not be executed')"),
          ("graph.destroy.exec_survives_graph",
           "an executable graph launches and runs after the graph it was instantiated from is destroyed",
           "neither cudaGraphInstantiate nor cudaGraphDestroy says what becomes of the executable graph"),
          ("exec.launch.after_graph_closed",
           "an executable graph launches and writes, twice, after its graph is destroyed",
           "cudaGraphDestroy's documentation does not mention executable graphs"),
          ("graph.clone.modified_clone_leaves_original",
           "nodes and an edge added to a clone do not appear in the original",
           "cudaGraphClone states the other direction only ('the original graph may be modified after this call "
           "without affecting the clone')"),
          ("graph.clone.survives_closing_original",
           "a clone keeps its nodes and edges after its original is destroyed",
           "cudaGraphDestroy destroys 'the graph specified by graph, as well as all of its nodes'; nothing of clones"),
          ("edges.add.transitive_redundant",
           "cudaGraphAddDependencies accepts an edge a->c already implied by a->b->c (three edges)",
           "only 'Specifying an existing dependency will return an error'; nothing of implied edges"),
          ("edges.data.refusal_adds_nothing",
           "a programmatic edge refused by cudaGraphAddDependencies (cudaErrorInvalidValue) leaves no edge",
           "nothing of what a refused call leaves in the graph"),
          ("exec.instantiate.snapshot",
           "a node added to a graph after instantiation is not run by the executable graph",
           "nothing says the executable graph is a snapshot; cudaGraphExecUpdate is how changes reach one"),
          ("kernels.node.set_params_after_instantiate",
           "cudaGraphKernelNodeSetParams after instantiation does not change what the executable graph runs",
           "nothing says the executable graph is a snapshot of the graph's kernel node parameters"),
          ("exec.upload.other_stream_then_launch",
           "a graph uploaded on one stream (cudaGraphUpload) launches and runs on another",
           "cudaGraphUpload orders the upload in its stream; nothing of a launch on another stream"),
          ("exec.enabled.default",
           "cudaGraphNodeGetEnabled reports the memset and memcpy nodes of a new executable graph enabled (1)",
           "nothing says nodes are enabled at instantiation"),
          ("kernels.attr.cooperative",
           "cudaGraphKernelNodeGetAttribute reads a new kernel node's cudaLaunchAttributeCooperative as 0",
           "the attribute's documentation ('Nonzero indicates a cooperative kernel') gives no default"),
          ("multidevice.peer.can_access_self",
           "cudaDeviceCanAccessPeer of a device and itself answers 0 with cudaSuccess (two H200s)",
           "'1 if device device is capable of directly accessing memory from peerDevice and 0 otherwise'; nothing "
           "of a device and itself"))),
)


def find(case: str, vendor: str, version: tuple[int, int] | None, observed: str, code: str | None,
         message: str = "", table: Iterable[Deviation] | None = None) -> Deviation | None:
    """The entry of ``table`` (default :data:`DEVIATIONS`) that explains an outcome, or None;
    ``version`` None: whatever the runtime version (the caller then asks :meth:`Deviation.covers`)."""
    for d in DEVIATIONS if table is None else table:
        if d.matches(case, vendor, version, observed, code, message):
            return d
    return None


def check_table(table: Iterable[Deviation], known_ids: Iterable[str]) -> list[str]:
    """Problems with a deviation table: unknown case ids, vendors or version ranges, missing reasons."""
    ids = set(known_ids)
    problems = []
    seen: set[tuple[str, str, str, str, str | None, str | None]] = set()
    for d in table:
        where = f"deviation {d.case} ({d.vendor} {d.runtime})"
        if d.case not in ids:
            problems.append(f"{where}: no such case")
        if d.vendor not in ("cuda", "hip"):
            problems.append(f"{where}: vendor must be 'cuda' or 'hip'")
        for r in (d.runtime, d.driver):
            try:
                parse_range(r)
            except ValueError as e:
                problems.append(f"{where}: {e}")
        if not d.reason.strip():
            problems.append(f"{where}: a reason is required")
        if d.code is not None and not d.code.startswith(d.vendor):
            problems.append(f"{where}: code {d.code!r} is not a {d.vendor} error name")
        key = (d.case, d.vendor, d.runtime + "/" + d.driver, d.observed, d.code, d.detail)
        if key in seen:
            problems.append(f"{where}: listed twice")
        seen.add(key)
    return problems
