/* A stand-in libamdhip64 for testing pygraphrt's HIP code paths without an AMD GPU.
 *
 * It is compiled against the real HIP 7.1 headers (from the pinned triton wheel),
 * so the C compiler checks every definition below against HIP's own prototype: a
 * call form pygraphrt gets wrong (arity, types) fails here or in the tests.
 * Behaviour is a tiny in-memory graph: nodes, edges, capture of "memset" work
 * items into a graph, and exec update that compares node counts.  Written for
 * pygraphrt's tests; it implements only what they call.
 */
#include <hip/hip_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 256
struct hipGraphNode { struct ihipGraph *graph; hipGraphNodeType type; int alive; };
struct ihipGraph { struct hipGraphNode nodes[MAXN]; int n; hipGraphNode_t from[MAXN], to[MAXN]; int ne; };
struct hipGraphExec { int nodes; };
struct ihipStream_t { hipStreamCaptureStatus status; struct ihipGraph *graph; unsigned long long id;
                      hipGraphNode_t deps[MAXN]; size_t ndeps; };

static unsigned long long next_capture_id = 1;
static hipError_t last_error = hipSuccess;
static hipError_t fail(hipError_t e) { last_error = e; return e; }

hipError_t hipRuntimeGetVersion(int *v) { *v = 70125424; return hipSuccess; }
hipError_t hipDriverGetVersion(int *v) { *v = 70125424; return hipSuccess; }
hipError_t hipGetDeviceCount(int *n) { *n = 1; return hipSuccess; }
hipError_t hipGetLastError(void) { hipError_t e = last_error; last_error = hipSuccess; return e; }
const char *hipGetErrorName(hipError_t e) {
  switch (e) {
    case hipErrorInvalidValue: return "hipErrorInvalidValue";
    case hipErrorInvalidHandle: return "hipErrorInvalidHandle";
    case hipErrorGraphExecUpdateFailure: return "hipErrorGraphExecUpdateFailure";
    case hipErrorStreamCaptureUnsupported: return "hipErrorStreamCaptureUnsupported";
    case hipErrorInvalidChannelDescriptor: return "hipErrorInvalidChannelDescriptor";
    default: return "hipErrorUnknown";
  }
}
const char *hipGetErrorString(hipError_t e) { return e == hipSuccess ? "no error" : "fake hip error"; }

hipError_t hipGraphCreate(hipGraph_t *g, unsigned int flags) {
  if (!g || flags) return fail(hipErrorInvalidValue);
  *g = calloc(1, sizeof(struct ihipGraph));
  return hipSuccess;
}
hipError_t hipGraphDestroy(hipGraph_t g) { if (!g) return fail(hipErrorInvalidValue); free(g); return hipSuccess; }

static hipError_t add_node(hipGraphNode_t *out, hipGraph_t g, const hipGraphNode_t *deps, size_t n,
                           hipGraphNodeType type) {
  if (!out || !g || g->n >= MAXN || (n && !deps)) return fail(hipErrorInvalidValue);
  for (size_t i = 0; i < n; i++)
    if (!deps[i] || deps[i]->graph != g) return fail(hipErrorInvalidValue);
  hipGraphNode_t node = &g->nodes[g->n++];
  node->graph = g; node->type = type; node->alive = 1;
  for (size_t i = 0; i < n; i++) { g->from[g->ne] = deps[i]; g->to[g->ne++] = node; }
  *out = node;
  return hipSuccess;
}
hipError_t hipGraphAddEmptyNode(hipGraphNode_t *out, hipGraph_t g, const hipGraphNode_t *deps, size_t n) {
  return add_node(out, g, deps, n, hipGraphNodeTypeEmpty);
}
hipError_t hipGraphAddNode(hipGraphNode_t *out, hipGraph_t g, const hipGraphNode_t *deps, size_t n,
                           hipGraphNodeParams *params) {
  if (!params) return fail(hipErrorInvalidValue);
  return add_node(out, g, deps, n, params->type);
}
hipError_t hipGraphNodeSetParams(hipGraphNode_t node, hipGraphNodeParams *params) {
  if (!node || !params || params->type != node->type) return fail(hipErrorInvalidValue);
  return hipSuccess;
}
hipError_t hipGraphNodeGetType(hipGraphNode_t node, hipGraphNodeType *t) {
  if (!node || !t) return fail(hipErrorInvalidValue);
  *t = node->type;
  return hipSuccess;
}
hipError_t hipGraphAddDependencies(hipGraph_t g, const hipGraphNode_t *from, const hipGraphNode_t *to,
                                   size_t n) {
  if (!g) return fail(hipErrorInvalidValue);
  for (size_t i = 0; i < n; i++) {
    for (int e = 0; e < g->ne; e++)
      if (g->from[e] == from[i] && g->to[e] == to[i]) return fail(hipErrorInvalidValue);  /* duplicate */
    g->from[g->ne] = from[i]; g->to[g->ne++] = to[i];
  }
  return hipSuccess;
}
hipError_t hipGraphGetEdges(hipGraph_t g, hipGraphNode_t *from, hipGraphNode_t *to, size_t *n) {
  if (!g || !n) return fail(hipErrorInvalidValue);
  if (!from && !to) { *n = (size_t)g->ne; return hipSuccess; }
  size_t k = *n < (size_t)g->ne ? *n : (size_t)g->ne;
  for (size_t i = 0; i < k; i++) { from[i] = g->from[i]; to[i] = g->to[i]; }
  *n = k;
  return hipSuccess;
}
static hipError_t neighbours(hipGraphNode_t node, hipGraphNode_t *out, size_t *n, int want_deps) {
  if (!node || !n) return fail(hipErrorInvalidValue);
  hipGraph_t g = node->graph;
  size_t count = 0;
  for (int e = 0; e < g->ne; e++) {
    hipGraphNode_t mine = want_deps ? g->to[e] : g->from[e];
    hipGraphNode_t other = want_deps ? g->from[e] : g->to[e];
    if (mine != node) continue;
    if (out && count < *n) out[count] = other;
    count++;
  }
  if (out && count > *n) count = *n;
  *n = count;
  return hipSuccess;
}
hipError_t hipGraphNodeGetDependencies(hipGraphNode_t node, hipGraphNode_t *deps, size_t *n) {
  return neighbours(node, deps, n, 1);
}
hipError_t hipGraphNodeGetDependentNodes(hipGraphNode_t node, hipGraphNode_t *deps, size_t *n) {
  return neighbours(node, deps, n, 0);
}
hipError_t hipGraphGetNodes(hipGraph_t g, hipGraphNode_t *nodes, size_t *n) {
  if (!g || !n) return fail(hipErrorInvalidValue);
  if (!nodes) { *n = (size_t)g->n; return hipSuccess; }
  size_t k = *n < (size_t)g->n ? *n : (size_t)g->n;
  for (size_t i = 0; i < k; i++) nodes[i] = &g->nodes[i];
  *n = k;
  return hipSuccess;
}

hipError_t hipStreamCreateWithPriority(hipStream_t *s, unsigned int flags, int priority) {
  (void)flags; (void)priority;
  *s = calloc(1, sizeof(struct ihipStream_t));
  return hipSuccess;
}
hipError_t hipStreamDestroy(hipStream_t s) { free(s); return hipSuccess; }
hipError_t hipStreamIsCapturing(hipStream_t s, hipStreamCaptureStatus *st) {
  if (!s) return fail(hipErrorStreamCaptureUnsupported);  /* the legacy stream */
  *st = s->status;
  return hipSuccess;
}
hipError_t hipStreamBeginCapture(hipStream_t s, hipStreamCaptureMode mode) {
  (void)mode;
  if (!s) return fail(hipErrorStreamCaptureUnsupported);
  if (s->status != hipStreamCaptureStatusNone) return fail(hipErrorIllegalState);
  hipGraphCreate(&s->graph, 0);
  s->status = hipStreamCaptureStatusActive;
  s->id = next_capture_id++;
  s->ndeps = 0;
  return hipSuccess;
}
hipError_t hipStreamEndCapture(hipStream_t s, hipGraph_t *g) {
  if (!s || s->status == hipStreamCaptureStatusNone) return fail(hipErrorIllegalState);
  *g = s->graph;
  s->graph = NULL;
  s->status = hipStreamCaptureStatusNone;
  return hipSuccess;  /* (joined streams are simply reused fresh by the tests) */
}
hipError_t hipStreamGetCaptureInfo_v2(hipStream_t s, hipStreamCaptureStatus *st, unsigned long long *id,
                                      hipGraph_t *g, const hipGraphNode_t **deps, size_t *n) {
  if (!s || !st) return fail(hipErrorInvalidValue);
  *st = s->status;
  if (id) *id = s->id;
  if (g) *g = s->graph;
  if (deps) *deps = s->deps;
  if (n) *n = s->ndeps;
  return hipSuccess;
}
struct ihipEvent_t { struct ihipStream_t *capture; hipGraphNode_t deps[MAXN]; size_t ndeps; };
hipError_t hipEventCreateWithFlags(hipEvent_t *e, unsigned flags) {
  (void)flags;
  if (!e) return fail(hipErrorInvalidValue);
  *e = calloc(1, sizeof(struct ihipEvent_t));
  return hipSuccess;
}
hipError_t hipEventDestroy(hipEvent_t e) { free(e); return hipSuccess; }
hipError_t hipEventRecord(hipEvent_t e, hipStream_t s) {
  if (!e) return fail(hipErrorInvalidHandle);
  e->capture = (s && s->status == hipStreamCaptureStatusActive) ? s : NULL;
  e->ndeps = e->capture ? s->ndeps : 0;
  if (e->capture) memcpy(e->deps, s->deps, s->ndeps * sizeof(hipGraphNode_t));
  return hipSuccess;
}
hipError_t hipStreamWaitEvent(hipStream_t s, hipEvent_t e, unsigned int flags) {
  (void)flags;
  if (!s || !e) return fail(hipErrorInvalidHandle);
  if (e->capture && s->status == hipStreamCaptureStatusNone) {  /* s joins the capture */
    s->status = hipStreamCaptureStatusActive;
    s->graph = e->capture->graph;
    s->id = e->capture->id;
    s->ndeps = 0;
  }
  if (e->capture) {
    for (size_t i = 0; i < e->ndeps; i++) s->deps[s->ndeps++] = e->deps[i];
  }
  return hipSuccess;
}
hipError_t hipMemsetAsync(void *dst, int value, size_t count, hipStream_t s) {
  (void)dst; (void)value; (void)count;
  if (s && s->status == hipStreamCaptureStatusActive) {
    hipGraphNode_t node;
    hipError_t e = add_node(&node, s->graph, s->deps, s->ndeps, hipGraphNodeTypeMemset);
    if (e) return e;
    s->deps[0] = node;
    s->ndeps = 1;
  }
  return hipSuccess;
}
hipError_t hipGraphInstantiateWithFlags(hipGraphExec_t *e, hipGraph_t g, unsigned long long flags) {
  /* HIP accepts exactly one of 0, AutoFreeOnLaunch, UseNodePriority. */
  if (!e || !g) return fail(hipErrorInvalidValue);
  if (flags != 0 && flags != hipGraphInstantiateFlagAutoFreeOnLaunch &&
      flags != hipGraphInstantiateFlagUseNodePriority) return fail(hipErrorInvalidValue);
  *e = calloc(1, sizeof(struct hipGraphExec));
  (*e)->nodes = g->n;
  return hipSuccess;
}
hipError_t hipGraphExecDestroy(hipGraphExec_t e) { free(e); return hipSuccess; }
hipError_t hipGraphLaunch(hipGraphExec_t e, hipStream_t s) {
  (void)s;
  return e ? hipSuccess : fail(hipErrorInvalidValue);
}
hipError_t hipGraphExecUpdate(hipGraphExec_t e, hipGraph_t g, hipGraphNode_t *err_node,
                              hipGraphExecUpdateResult *result) {
  if (!e || !g) return fail(hipErrorInvalidValue);
  if (e->nodes != g->n) {
    *result = hipGraphExecUpdateErrorTopologyChanged;
    *err_node = g->n ? &g->nodes[g->n - 1] : NULL;
    return fail(hipErrorGraphExecUpdateFailure);
  }
  *result = hipGraphExecUpdateSuccess;
  *err_node = NULL;
  return hipSuccess;
}
