/* A stand-in libamdhip64 for testing pygraphrt's HIP code paths without an AMD GPU.
 *
 * It is compiled against the real HIP 7.1 headers (from the pinned triton wheel),
 * so the C compiler checks every definition below against HIP's own prototype: a
 * call form pygraphrt gets wrong (arity, types) fails here or in the tests.
 * Behaviour is a tiny in-memory graph: nodes, edges, capture of "memset" work
 * items into a graph, and exec update that compares node counts.  Written for
 * pygraphrt's tests; it exports every HIP function pygraphrt calls (tests/test_hip_fake_calls.py
 * lists them from pygraphrt's source and fails on one missing here).
 *
 * For the conformance suite (python -m pygraphrt.conformance against this fake,
 * PYGRAPHRT_CONFORMANCE_FAKE=1) it also keeps each node type's parameters (memset,
 * memcpy, host, child graph, event record / wait, graph memory alloc / free) as
 * given, clones graphs (hipGraphClone, hipGraphNodeFindInClone), destroys nodes,
 * lists root nodes, writes a DOT file, and launches an executable graph's own copy
 * of its graph in dependency order: memset and memcpy nodes run on "device" memory
 * (host memory the fake handed out, and only inside such allocations), host nodes
 * call their function, child graphs run recursively.  It is a stand-in for call
 * forms, not a model of HIP's rules.
 */
#include <hip/hip_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 256
/* Kernels of fake modules run on the host.  A module image is the text "FAKEHIP";
 * its functions: add_int(int *out, int a, int b) stores a + b; noop() does nothing. */
struct ihipModuleSymbol_t { const char *name; int nparams; size_t sizes[3]; };
static struct ihipModuleSymbol_t fake_functions[] = {{"add_int", 3, {8, 4, 4}}, {"noop", 0, {0}}};
struct ihipModule_t { int loaded; };
static void run_kernel(hipFunction_t f, void **args) {
  if (f == &fake_functions[0]) { int *out; memcpy(&out, args[0], 8); *out = *(int *)args[1] + *(int *)args[2]; }
}
/* A kernel node keeps copies of its argument values, as HIP does. */
struct kernel_copy { hipKernelNodeParams p; char values[3][8]; void *argv[3]; int priority; };
static void copy_kernel_params(struct kernel_copy *k, const hipKernelNodeParams *p) {
  hipFunction_t f = (hipFunction_t)p->func;
  k->p = *p;
  for (int i = 0; i < f->nparams; i++) { memcpy(k->values[i], p->kernelParams[i], f->sizes[i]); k->argv[i] = k->values[i]; }
  k->p.kernelParams = f->nparams ? k->argv : NULL;
}
/* Each node keeps the parameters of its type as given (copies, as HIP does). */
struct hipGraphNode {
  struct ihipGraph *graph; hipGraphNodeType type; int alive; struct kernel_copy kernel;
  hipMemsetParams memset; hipMemcpy3DParms memcpy; hipHostNodeParams host;
  struct ihipGraph *child;   /* a child graph node's own copy of its graph */
  hipEvent_t event;          /* event record / wait nodes */
  hipMemAllocNodeParams alloc; void *free_ptr;
  hipGraphNode_t origin;     /* the node this one was cloned from (hipGraphNodeFindInClone) */
};
struct ihipGraph { struct hipGraphNode nodes[MAXN]; int n; hipGraphNode_t from[MAXN], to[MAXN]; int ne;
                   int owned_by_node; };
/* An executable graph runs its own copy of the graph (taken at instantiation) in dependency
 * order, with per-exec kernel overrides; `graph` is the graph it was made from (identity only). */
struct hipGraphExec { int nodes; struct ihipGraph *graph; struct ihipGraph *copy; struct kernel_copy over[MAXN];
                      int has_over[MAXN]; unsigned long long flags; int disabled[MAXN]; };
static struct ihipGraph *clone_graph(const struct ihipGraph *g);
static void free_graph(struct ihipGraph *g);
static hipError_t run_graph(struct ihipGraph *g, struct hipGraphExec *e);
struct ihipStream_t { hipStreamCaptureStatus status; struct ihipGraph *graph; unsigned long long id;
                      hipGraphNode_t deps[MAXN]; size_t ndeps; };

static unsigned long long next_capture_id = 1;
static hipError_t last_error = hipSuccess;
static hipError_t fail(hipError_t e) { last_error = e; return e; }

/* The version of the headers it is compiled against (hip_version.h), unless the test asks for
 * another (-DFAKE_HIP_VERSION=...: an unsupported major).  HIP 7-only parts are under
 * FAKE_HIP7, so that a fake built on HIP 6.2 headers exports what a HIP 6 runtime does. */
#ifndef FAKE_HIP_VERSION
#define FAKE_HIP_VERSION HIP_VERSION
#endif
#define FAKE_HIP7 (HIP_VERSION_MAJOR >= 7)
hipError_t hipRuntimeGetVersion(int *v) { *v = FAKE_HIP_VERSION; return hipSuccess; }
hipError_t hipDriverGetVersion(int *v) { *v = FAKE_HIP_VERSION; return hipSuccess; }
hipError_t hipGetDeviceCount(int *n) { *n = 1; return hipSuccess; }
hipError_t hipGetLastError(void) { hipError_t e = last_error; last_error = hipSuccess; return e; }
const char *hipGetErrorName(hipError_t e) {
  switch (e) {
    case hipErrorInvalidValue: return "hipErrorInvalidValue";
    case hipErrorInvalidHandle: return "hipErrorInvalidHandle";
    case hipErrorGraphExecUpdateFailure: return "hipErrorGraphExecUpdateFailure";
    case hipErrorStreamCaptureUnsupported: return "hipErrorStreamCaptureUnsupported";
#if FAKE_HIP7
    case hipErrorInvalidChannelDescriptor: return "hipErrorInvalidChannelDescriptor";
#endif
    default: return "hipErrorUnknown";
  }
}
const char *hipGetErrorString(hipError_t e) { return e == hipSuccess ? "no error" : "fake hip error"; }

hipError_t hipGraphCreate(hipGraph_t *g, unsigned int flags) {
  if (!g || flags) return fail(hipErrorInvalidValue);
  *g = calloc(1, sizeof(struct ihipGraph));
  return hipSuccess;
}
static void free_graph(struct ihipGraph *g) {
  if (!g) return;
  for (int i = 0; i < g->n; i++)
    if (g->nodes[i].child) free_graph(g->nodes[i].child);
  free(g);
}
hipError_t hipGraphDestroy(hipGraph_t g) {
  if (!g || g->owned_by_node) return fail(hipErrorInvalidValue);
  free_graph(g);
  return hipSuccess;
}

static hipError_t add_node(hipGraphNode_t *out, hipGraph_t g, const hipGraphNode_t *deps, size_t n,
                           hipGraphNodeType type) {
  if (!out || !g || g->n >= MAXN || (n && !deps) || g->ne + (int)n > MAXN) return fail(hipErrorInvalidValue);
  for (size_t i = 0; i < n; i++) {
    if (!deps[i] || deps[i]->graph != g || !deps[i]->alive) return fail(hipErrorInvalidValue);
    for (size_t j = 0; j < i; j++)
      if (deps[j] == deps[i]) return fail(hipErrorInvalidValue);  /* no duplicate entries */
  }
  hipGraphNode_t node = &g->nodes[g->n++];
  node->graph = g; node->type = type; node->alive = 1;
  for (size_t i = 0; i < n; i++) { g->from[g->ne] = deps[i]; g->to[g->ne++] = node; }
  *out = node;
  return hipSuccess;
}
hipError_t hipGraphAddEmptyNode(hipGraphNode_t *out, hipGraph_t g, const hipGraphNode_t *deps, size_t n) {
  return add_node(out, g, deps, n, hipGraphNodeTypeEmpty);
}
static hipError_t check_params(hipGraph_t g, hipGraphNodeParams *p, int creating);
static void store_params(hipGraphNode_t node, hipGraphNodeParams *p);
hipError_t hipGraphAddNode(hipGraphNode_t *out, hipGraph_t g, const hipGraphNode_t *deps, size_t n,
                           hipGraphNodeParams *params) {
  if (!params) return fail(hipErrorInvalidValue);
  hipError_t e = check_params(g, params, 1);
  if (e) return e;
  e = add_node(out, g, deps, n, params->type);
  if (e) return e;
  store_params(*out, params);
  return hipSuccess;
}
#if FAKE_HIP7
hipError_t hipGraphNodeSetParams(hipGraphNode_t node, hipGraphNodeParams *params) {
  if (!node || !params || params->type != node->type) return fail(hipErrorInvalidValue);
  if (node->type == hipGraphNodeTypeMemAlloc || node->type == hipGraphNodeTypeMemFree)
    return fail(hipErrorNotSupported);
  hipError_t e = check_params(node->graph, params, 0);
  if (e) return e;
  store_params(node, params);
  return hipSuccess;
}
#endif
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
static int is_root(hipGraph_t g, hipGraphNode_t node) {
  for (int e = 0; e < g->ne; e++)
    if (g->to[e] == node) return 0;
  return 1;
}
/* Alive nodes (roots only: want_roots) in creation order; entries past the count are set to NULL. */
static hipError_t list_nodes(hipGraph_t g, hipGraphNode_t *nodes, size_t *n, int want_roots) {
  if (!g || !n) return fail(hipErrorInvalidValue);
  size_t count = 0;
  for (int i = 0; i < g->n; i++) {
    hipGraphNode_t node = &g->nodes[i];
    if (!node->alive || (want_roots && !is_root(g, node))) continue;
    if (nodes && count < *n) nodes[count] = node;
    count++;
  }
  if (nodes) {
    for (size_t i = count; i < *n; i++) nodes[i] = NULL;
    if (count > *n) count = *n;
  }
  *n = count;
  return hipSuccess;
}
hipError_t hipGraphGetNodes(hipGraph_t g, hipGraphNode_t *nodes, size_t *n) { return list_nodes(g, nodes, n, 0); }
hipError_t hipGraphGetRootNodes(hipGraph_t g, hipGraphNode_t *nodes, size_t *n) { return list_nodes(g, nodes, n, 1); }

/* Live streams, so that ending a capture detaches the streams that joined it (they share its graph). */
#define MAXSTREAMS 1024
static hipStream_t live_streams[MAXSTREAMS];
hipError_t hipStreamCreateWithPriority(hipStream_t *s, unsigned int flags, int priority) {
  (void)flags; (void)priority;
  if (!s) return fail(hipErrorInvalidValue);
  *s = calloc(1, sizeof(struct ihipStream_t));
  for (int i = 0; i < MAXSTREAMS; i++)
    if (!live_streams[i]) { live_streams[i] = *s; break; }
  return hipSuccess;
}
hipError_t hipStreamDestroy(hipStream_t s) {
  if (!s) return fail(hipErrorInvalidHandle);
  for (int i = 0; i < MAXSTREAMS; i++)
    if (live_streams[i] == s) live_streams[i] = NULL;
  free(s);
  return hipSuccess;
}
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
  if (!g) return fail(hipErrorInvalidValue);
  *g = s->graph;
  for (int i = 0; i < MAXSTREAMS; i++) {  /* joined streams leave the capture (no unjoined-work rule here) */
    hipStream_t o = live_streams[i];
    if (o && o != s && o->graph == *g) { o->graph = NULL; o->status = hipStreamCaptureStatusNone; o->ndeps = 0; }
  }
  s->graph = NULL;
  s->status = hipStreamCaptureStatusNone;
  return hipSuccess;
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
/* An event records a tick of a fake clock (1.5 ms a record) for hipEventElapsedTime. */
struct ihipEvent_t { struct ihipStream_t *capture; hipGraphNode_t deps[MAXN]; size_t ndeps; unsigned flags;
                     int recorded; double ms; };
static double fake_clock_ms;
hipError_t hipEventCreateWithFlags(hipEvent_t *e, unsigned flags) {
  if (!e) return fail(hipErrorInvalidValue);
  *e = calloc(1, sizeof(struct ihipEvent_t));
  (*e)->flags = flags;
  return hipSuccess;
}
hipError_t hipEventDestroy(hipEvent_t e) { free(e); return hipSuccess; }
hipError_t hipEventRecord(hipEvent_t e, hipStream_t s) {
  if (!e) return fail(hipErrorInvalidHandle);
  e->capture = (s && s->status == hipStreamCaptureStatusActive) ? s : NULL;
  e->ndeps = e->capture ? s->ndeps : 0;
  if (e->capture) memcpy(e->deps, s->deps, s->ndeps * sizeof(hipGraphNode_t));
  if (!e->capture) { fake_clock_ms += 1.5; e->ms = fake_clock_ms; e->recorded = 1; }
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
/* A captured work item: a node of `type` after the stream's capture dependencies. */
static hipError_t capture_node(hipStream_t s, hipGraphNodeType type) {
  hipGraphNode_t node;
  size_t k = 0;  /* a join can bring a node in twice: depend on it once */
  for (size_t i = 0; i < s->ndeps; i++) {
    size_t j = 0;
    while (j < k && s->deps[j] != s->deps[i]) j++;
    if (j == k) s->deps[k++] = s->deps[i];
  }
  s->ndeps = k;
  hipError_t e = add_node(&node, s->graph, s->deps, s->ndeps, type);
  if (e) return e;
  s->deps[0] = node;
  s->ndeps = 1;
  return hipSuccess;
}
hipError_t hipMemsetAsync(void *dst, int value, size_t count, hipStream_t s) {
  (void)dst; (void)value; (void)count;
  if (s && s->status == hipStreamCaptureStatusActive) return capture_node(s, hipGraphNodeTypeMemset);
  return hipSuccess;
}
hipError_t hipGraphInstantiateWithFlags(hipGraphExec_t *e, hipGraph_t g, unsigned long long flags) {
  /* HIP accepts exactly one of 0, AutoFreeOnLaunch, UseNodePriority. */
  if (!e || !g) return fail(hipErrorInvalidValue);
  if (flags != 0 && flags != hipGraphInstantiateFlagAutoFreeOnLaunch &&
      flags != hipGraphInstantiateFlagUseNodePriority) return fail(hipErrorInvalidValue);
  *e = calloc(1, sizeof(struct hipGraphExec));
  (*e)->flags = flags;
  (*e)->nodes = g->n;
  (*e)->graph = g;
  (*e)->copy = clone_graph(g);
  return hipSuccess;
}
hipError_t hipGraphExecDestroy(hipGraphExec_t e) { if (e) free_graph(e->copy); free(e); return hipSuccess; }
hipError_t hipGraphLaunch(hipGraphExec_t e, hipStream_t s) {
  (void)s;
  if (!e) return fail(hipErrorInvalidValue);
  return run_graph(e->copy, e);
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
  free_graph(e->copy);            /* the parameters of the new graph, per-exec overrides dropped */
  e->copy = clone_graph(g);
  memset(e->has_over, 0, sizeof e->has_over);
  return hipSuccess;
}

/* ---- modules and kernels ---- */
hipError_t hipModuleLoadData(hipModule_t *module, const void *image) {
  if (!module || !image) return fail(hipErrorInvalidValue);
  if (strncmp((const char *)image, "FAKEHIP", 7)) return fail(hipErrorInvalidImage);
  *module = calloc(1, sizeof(struct ihipModule_t));
  (*module)->loaded = 1;
  return hipSuccess;
}
hipError_t hipModuleLoad(hipModule_t *module, const char *fname) {
  char buf[8] = {0};
  FILE *f = fname ? fopen(fname, "rb") : NULL;
  if (!f) return fail(hipErrorFileNotFound);
  size_t got = fread(buf, 1, 7, f);
  fclose(f);
  if (got != 7) return fail(hipErrorInvalidImage);
  return hipModuleLoadData(module, buf);
}
hipError_t hipModuleUnload(hipModule_t module) { if (!module) return fail(hipErrorInvalidValue); free(module); return hipSuccess; }
hipError_t hipModuleGetFunction(hipFunction_t *function, hipModule_t module, const char *kname) {
  if (!function || !module || !kname) return fail(hipErrorInvalidValue);
  for (size_t i = 0; i < sizeof fake_functions / sizeof fake_functions[0]; i++)
    if (!strcmp(fake_functions[i].name, kname)) { *function = &fake_functions[i]; return hipSuccess; }
  return fail(hipErrorNotFound);
}
hipError_t hipFuncGetAttribute(int *value, hipFunction_attribute attrib, hipFunction_t hfunc) {
  if (!value || !hfunc) return fail(hipErrorInvalidValue);
  switch (attrib) {
    case HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case HIP_FUNC_ATTRIBUTE_NUM_REGS: *value = 8 + hfunc->nparams; break;
    case HIP_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *value = 65536; break;
    case HIP_FUNC_ATTRIBUTE_PTX_VERSION: case HIP_FUNC_ATTRIBUTE_BINARY_VERSION: *value = 94; break;
    default: *value = 0;
  }
  return hipSuccess;
}
hipError_t hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, hipFunction_t f, int blockSize,
                                                              size_t dynSharedMemPerBlk) {
  if (!numBlocks || !f || blockSize <= 0 || blockSize > 1024 || dynSharedMemPerBlk > 65536)
    return fail(hipErrorInvalidValue);
  *numBlocks = 2048 / blockSize;
  return hipSuccess;
}
static hipError_t launch_checked(hipFunction_t f, unsigned gx, unsigned bx, unsigned by, unsigned bz,
                                 void **params, void **extra) {
  if (!f || !gx || extra) return fail(hipErrorInvalidValue);
  if ((unsigned long long)bx * by * bz > 1024) return fail(hipErrorInvalidConfiguration);
  if (f->nparams && !params) return fail(hipErrorInvalidValue);
  run_kernel(f, params);
  return hipSuccess;
}
hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned int gridDimX, unsigned int gridDimY,
                                 unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                 unsigned int blockDimZ, unsigned int sharedMemBytes, hipStream_t stream,
                                 void **kernelParams, void **extra) {
  (void)gridDimY; (void)gridDimZ; (void)sharedMemBytes; (void)stream;
  return launch_checked(f, gridDimX, blockDimX, blockDimY, blockDimZ, kernelParams, extra);
}
int fake_last_launch_priority = -100;
#if FAKE_HIP7
hipError_t hipDrvLaunchKernelEx(const HIP_LAUNCH_CONFIG *config, hipFunction_t f, void **params, void **extra) {
  if (!config || (config->numAttrs && !config->attrs)) return fail(hipErrorInvalidValue);
  for (unsigned i = 0; i < config->numAttrs; i++) {
    if (config->attrs[i].id == hipLaunchAttributePriority) fake_last_launch_priority = config->attrs[i].val.priority;
    else if (config->attrs[i].id != hipLaunchAttributeCooperative) return fail(hipErrorInvalidValue);
  }
  return launch_checked(f, config->gridDimX, config->blockDimX, config->blockDimY, config->blockDimZ, params, extra);
}
#endif

/* ---- kernel nodes ---- */
hipError_t hipGraphAddKernelNode(hipGraphNode_t *pGraphNode, hipGraph_t graph, const hipGraphNode_t *pDependencies,
                                 size_t numDependencies, const hipKernelNodeParams *pNodeParams) {
  if (!pNodeParams || !pNodeParams->func) return fail(hipErrorInvalidValue);
  hipError_t e = add_node(pGraphNode, graph, pDependencies, numDependencies, hipGraphNodeTypeKernel);
  if (e) return e;
  copy_kernel_params(&(*pGraphNode)->kernel, pNodeParams);
  return hipSuccess;
}
hipError_t hipGraphKernelNodeGetParams(hipGraphNode_t node, hipKernelNodeParams *pNodeParams) {
  if (!node || !pNodeParams || node->type != hipGraphNodeTypeKernel) return fail(hipErrorInvalidValue);
  *pNodeParams = node->kernel.p;
  return hipSuccess;
}
hipError_t hipGraphKernelNodeSetParams(hipGraphNode_t node, const hipKernelNodeParams *pNodeParams) {
  if (!node || !pNodeParams || !pNodeParams->func || node->type != hipGraphNodeTypeKernel)
    return fail(hipErrorInvalidValue);
  copy_kernel_params(&node->kernel, pNodeParams);
  return hipSuccess;
}
hipError_t hipGraphExecKernelNodeSetParams(hipGraphExec_t hGraphExec, hipGraphNode_t node,
                                           const hipKernelNodeParams *pNodeParams) {
  if (!hGraphExec || !node || !pNodeParams || node->graph != hGraphExec->graph) return fail(hipErrorInvalidValue);
  int i = (int)(node - hGraphExec->graph->nodes);
  copy_kernel_params(&hGraphExec->over[i], pNodeParams);
  hGraphExec->has_over[i] = 1;
  return hipSuccess;
}
hipError_t hipGraphKernelNodeGetAttribute(hipGraphNode_t hNode, hipKernelNodeAttrID attr, hipKernelNodeAttrValue *value) {
  if (!hNode || !value || attr != hipLaunchAttributePriority) return fail(hipErrorInvalidValue);
  value->priority = hNode->kernel.priority;
  return hipSuccess;
}
hipError_t hipGraphKernelNodeSetAttribute(hipGraphNode_t hNode, hipKernelNodeAttrID attr,
                                          const hipKernelNodeAttrValue *value) {
  if (!hNode || !value || attr != hipLaunchAttributePriority) return fail(hipErrorInvalidValue);
  hNode->kernel.priority = value->priority;
  return hipSuccess;
}
hipError_t hipGraphKernelNodeCopyAttributes(hipGraphNode_t hSrc, hipGraphNode_t hDst) {
  if (!hSrc || !hDst) return fail(hipErrorInvalidValue);
  hDst->kernel.priority = hSrc->kernel.priority;
  return hipSuccess;
}

/* ---- stream-ordered memory: pools count what they hand out; a captured allocation becomes
 * a mem-alloc node and a captured free a mem-free node (host memory stands in for device memory) ---- */
struct ihipMemPoolHandle_t { size_t used, high, reserved, threshold; int opportunistic; hipMemPoolProps props; };
static struct ihipMemPoolHandle_t default_pool;
static hipMemPool_t current_pool = &default_pool;
hipError_t hipGetDevice(int *deviceId) { if (!deviceId) return fail(hipErrorInvalidValue); *deviceId = 0; return hipSuccess; }
hipError_t hipMemPoolCreate(hipMemPool_t *mem_pool, const hipMemPoolProps *pool_props) {
  if (!mem_pool || !pool_props || pool_props->location.type != hipMemLocationTypeDevice || pool_props->location.id != 0
      || pool_props->allocType != hipMemAllocationTypePinned) return fail(hipErrorInvalidValue);
  *mem_pool = calloc(1, sizeof(struct ihipMemPoolHandle_t));
  (*mem_pool)->props = *pool_props;
  (*mem_pool)->opportunistic = 1;
  return hipSuccess;
}
hipError_t hipMemPoolDestroy(hipMemPool_t mem_pool) {
  if (!mem_pool || mem_pool == &default_pool) return fail(hipErrorInvalidValue);
  if (current_pool == mem_pool) current_pool = &default_pool;
  free(mem_pool);
  return hipSuccess;
}
hipError_t hipDeviceGetDefaultMemPool(hipMemPool_t *mem_pool, int device) {
  if (!mem_pool || device) return fail(hipErrorInvalidDevice);
  *mem_pool = &default_pool;
  return hipSuccess;
}
hipError_t hipDeviceGetMemPool(hipMemPool_t *mem_pool, int device) {
  if (!mem_pool || device) return fail(hipErrorInvalidDevice);
  *mem_pool = current_pool;
  return hipSuccess;
}
hipError_t hipDeviceSetMemPool(int device, hipMemPool_t mem_pool) {
  if (device || !mem_pool) return fail(hipErrorInvalidValue);
  current_pool = mem_pool;
  return hipSuccess;
}
hipError_t hipMemPoolGetAttribute(hipMemPool_t p, hipMemPoolAttr attr, void *value) {
  if (!p || !value) return fail(hipErrorInvalidValue);
  switch (attr) {
    case hipMemPoolReuseAllowOpportunistic: *(int *)value = p->opportunistic; break;
    case hipMemPoolReuseFollowEventDependencies: case hipMemPoolReuseAllowInternalDependencies: *(int *)value = 1; break;
    case hipMemPoolAttrReleaseThreshold: *(uint64_t *)value = p->threshold; break;
    case hipMemPoolAttrUsedMemCurrent: *(uint64_t *)value = p->used; break;
    case hipMemPoolAttrUsedMemHigh: *(uint64_t *)value = p->high; break;
    case hipMemPoolAttrReservedMemCurrent: *(uint64_t *)value = p->reserved; break;
    case hipMemPoolAttrReservedMemHigh: *(uint64_t *)value = p->high; break;
    default: return fail(hipErrorInvalidValue);
  }
  return hipSuccess;
}
hipError_t hipMemPoolSetAttribute(hipMemPool_t p, hipMemPoolAttr attr, void *value) {
  if (!p || !value) return fail(hipErrorInvalidValue);
  switch (attr) {
    case hipMemPoolReuseAllowOpportunistic: p->opportunistic = *(int *)value; break;
    case hipMemPoolAttrReleaseThreshold: p->threshold = *(uint64_t *)value; break;
    case hipMemPoolAttrUsedMemHigh: if (*(uint64_t *)value) return fail(hipErrorInvalidValue); p->high = p->used; break;
    default: return fail(hipErrorInvalidValue);
  }
  return hipSuccess;
}
hipError_t hipMemPoolTrimTo(hipMemPool_t p, size_t min_bytes_to_hold) {
  if (!p) return fail(hipErrorInvalidValue);
  size_t keep = p->used > min_bytes_to_hold ? p->used : min_bytes_to_hold;
  if (p->reserved > keep) p->reserved = keep;
  return hipSuccess;
}
/* Each allocation is prefixed with its pool and size; live allocations are registered, so that
 * frees of unknown addresses are refused and graph nodes only touch memory the fake handed out. */
struct fake_alloc { hipMemPool_t pool; size_t size; };
#define MAXALLOC 4096
static struct { char *ptr; size_t size; } allocations[MAXALLOC];
static void track_alloc(void *p, size_t size) {
  for (int i = 0; i < MAXALLOC; i++)
    if (!allocations[i].ptr) { allocations[i].ptr = p; allocations[i].size = size; return; }
}
static int find_alloc(const void *p) {
  for (int i = 0; i < MAXALLOC; i++)
    if (allocations[i].ptr && allocations[i].ptr == (const char *)p) return i;
  return -1;
}
/* Whether [p, p + n) lies inside one live allocation of the fake. */
static int in_alloc(const void *p, size_t n) {
  const char *c = p;
  for (int i = 0; i < MAXALLOC; i++)
    if (allocations[i].ptr && c >= allocations[i].ptr && c + n <= allocations[i].ptr + allocations[i].size) return 1;
  return 0;
}
static struct ihipMemPoolHandle_t plain_pool;  /* hipMalloc and graph allocations */
static void *new_alloc(hipMemPool_t p, size_t size) {
  struct fake_alloc *a = malloc(sizeof *a + (size ? size : 1));
  a->pool = p; a->size = size;
  track_alloc(a + 1, size);
  return a + 1;
}
hipError_t hipMallocFromPoolAsync(void **dev_ptr, size_t size, hipMemPool_t p, hipStream_t stream) {
  if (!dev_ptr || !p || !stream) return fail(hipErrorInvalidValue);
  if (size > ((size_t)1 << 40)) return fail(hipErrorOutOfMemory);
  *dev_ptr = new_alloc(p, size);
  if (stream->status == hipStreamCaptureStatusActive) return capture_node(stream, hipGraphNodeTypeMemAlloc);
  p->used += size; p->reserved += size;
  if (p->used > p->high) p->high = p->used;
  return hipSuccess;
}
static void release(void *dev_ptr) {
  struct fake_alloc *a = (struct fake_alloc *)dev_ptr - 1;
  allocations[find_alloc(dev_ptr)].ptr = NULL;
  a->pool->used -= a->size;
  if (a->pool->reserved > a->pool->threshold && a->pool->reserved > a->pool->used)
    a->pool->reserved = a->pool->used > a->pool->threshold ? a->pool->used : a->pool->threshold;
  free(a);
}
hipError_t hipMallocAsync(void **dev_ptr, size_t size, hipStream_t stream) {
  return hipMallocFromPoolAsync(dev_ptr, size, current_pool, stream);
}
hipError_t hipFreeAsync(void *dev_ptr, hipStream_t stream) {
  if (!dev_ptr || !stream || find_alloc(dev_ptr) < 0) return fail(hipErrorInvalidValue);
  if (stream->status == hipStreamCaptureStatusActive) return capture_node(stream, hipGraphNodeTypeMemFree);
  release(dev_ptr);
  return hipSuccess;
}
hipError_t hipFree(void *ptr) {
  if (!ptr) return hipSuccess;
  if (find_alloc(ptr) < 0) return fail(hipErrorInvalidValue);
  release(ptr);
  return hipSuccess;
}
hipError_t hipMalloc(void **ptr, size_t size) {
  if (!ptr) return fail(hipErrorInvalidValue);
  if (size > ((size_t)1 << 40)) return fail(hipErrorOutOfMemory);
  *ptr = new_alloc(&plain_pool, size);
  memset(*ptr, 0, size);
  return hipSuccess;
}
/* One side must be memory of the fake (the other is the caller's host memory). */
hipError_t hipMemcpy(void *dst, const void *src, size_t n, hipMemcpyKind kind) {
  (void)kind;
  if (!n) return hipSuccess;
  if (!dst || !src || !(in_alloc(dst, n) || in_alloc(src, n))) return fail(hipErrorInvalidValue);
  memmove(dst, src, n);
  return hipSuccess;
}
hipError_t hipMemcpyAsync(void *dst, const void *src, size_t n, hipMemcpyKind kind, hipStream_t s) {
  if (s && s->status == hipStreamCaptureStatusActive) return capture_node(s, hipGraphNodeTypeMemcpy);
  return hipMemcpy(dst, src, n, kind);
}
/* The allocation holding dptr (anywhere inside it), as the runtime answers it. */
hipError_t hipMemGetAddressRange(hipDeviceptr_t *pbase, size_t *psize, hipDeviceptr_t dptr) {
  const char *c = dptr;
  for (int i = 0; i < MAXALLOC; i++)
    if (allocations[i].ptr && c >= allocations[i].ptr && c < allocations[i].ptr + (allocations[i].size ? allocations[i].size : 1)) {
      if (pbase) *pbase = allocations[i].ptr;
      if (psize) *psize = allocations[i].size;
      return hipSuccess;
    }
  return fail(hipErrorNotFound);
}
hipError_t hipSetDevice(int device) { return device ? fail(hipErrorInvalidDevice) : hipSuccess; }
hipError_t hipDeviceSynchronize(void) { return hipSuccess; }
hipError_t hipStreamSynchronize(hipStream_t s) {
  if (s && s->status != hipStreamCaptureStatusNone) return fail(hipErrorStreamCaptureUnsupported);
  return hipSuccess;
}
hipError_t hipEventSynchronize(hipEvent_t e) { return e ? hipSuccess : fail(hipErrorInvalidHandle); }
hipError_t hipEventQuery(hipEvent_t e) { return e ? hipSuccess : fail(hipErrorInvalidHandle); }
static __thread hipStreamCaptureMode thread_capture_mode = hipStreamCaptureModeGlobal;
hipError_t hipThreadExchangeStreamCaptureMode(hipStreamCaptureMode *mode) {
  if (!mode || *mode < hipStreamCaptureModeGlobal || *mode > hipStreamCaptureModeRelaxed) return fail(hipErrorInvalidValue);
  hipStreamCaptureMode prev = thread_capture_mode;
  thread_capture_mode = *mode;
  *mode = prev;
  return hipSuccess;
}

/* ---- device properties: name, architecture (Program's default --offload-arch), memory ----
 * hipGetDeviceProperties is hipGetDevicePropertiesR0600 by the headers' macro (HIP 6 and 7). */
hipError_t hipGetDeviceProperties(hipDeviceProp_t *prop, int device) {
  if (!prop) return fail(hipErrorInvalidValue);
  if (device) return fail(hipErrorInvalidDevice);
  memset(prop, 0, sizeof *prop);
  strcpy(prop->name, "Fake HIP device");
  strcpy(prop->gcnArchName, "gfx942:sramecc+:xnack-");
  prop->totalGlobalMem = (size_t)64 << 30;
  return hipSuccess;
}

#if FAKE_HIP7
/* HIP's own node type of HIP 7: batch memory operations (kept per node, read back as given). */
static struct { hipGraphNode_t node; hipBatchMemOpNodeParams p; hipStreamBatchMemOpParams ops[8]; } batch_store[MAXN];
static int nbatch;
static hipError_t store_batch(hipGraphNode_t node, const hipBatchMemOpNodeParams *p) {
  if (!p || !p->paramArray || p->count == 0 || p->count > 8) return fail(hipErrorInvalidValue);
  int i = 0;
  while (i < nbatch && batch_store[i].node != node) i++;
  if (i == nbatch) { if (nbatch >= MAXN) return fail(hipErrorInvalidValue); nbatch++; }
  batch_store[i].node = node;
  batch_store[i].p = *p;
  memcpy(batch_store[i].ops, p->paramArray, p->count * sizeof(hipStreamBatchMemOpParams));
  batch_store[i].p.paramArray = batch_store[i].ops;
  return hipSuccess;
}
hipError_t hipGraphAddBatchMemOpNode(hipGraphNode_t *phGraphNode, hipGraph_t hGraph, const hipGraphNode_t *dependencies,
                                     size_t numDependencies, const hipBatchMemOpNodeParams *nodeParams) {
  if (!nodeParams || nodeParams->count == 0 || nodeParams->count > 8) return fail(hipErrorInvalidValue);
  hipError_t e = add_node(phGraphNode, hGraph, dependencies, numDependencies, hipGraphNodeTypeBatchMemOp);
  return e ? e : store_batch(*phGraphNode, nodeParams);
}
hipError_t hipGraphBatchMemOpNodeGetParams(hipGraphNode_t hNode, hipBatchMemOpNodeParams *nodeParams_out) {
  for (int i = 0; i < nbatch; i++)
    if (batch_store[i].node == hNode) { *nodeParams_out = batch_store[i].p; return hipSuccess; }
  return fail(hipErrorInvalidValue);
}
hipError_t hipGraphBatchMemOpNodeSetParams(hipGraphNode_t hNode, hipBatchMemOpNodeParams *nodeParams) {
  if (!hNode || hNode->type != hipGraphNodeTypeBatchMemOp) return fail(hipErrorInvalidValue);
  return store_batch(hNode, nodeParams);
}
hipError_t hipGraphExecBatchMemOpNodeSetParams(hipGraphExec_t hGraphExec, hipGraphNode_t hNode,
                                               const hipBatchMemOpNodeParams *nodeParams) {
  if (!hGraphExec || !hNode || hNode->type != hipGraphNodeTypeBatchMemOp || !nodeParams) return fail(hipErrorInvalidValue);
  return hipSuccess;
}
#endif

/* HIP's memcpy-to / from-symbol nodes (HIP 6.2 and 7.1): the fake records the call; HIP has no
 * readback of these. */
hipError_t hipGraphAddMemcpyNodeToSymbol(hipGraphNode_t *pGraphNode, hipGraph_t graph, const hipGraphNode_t *pDependencies,
                                         size_t numDependencies, const void *symbol, const void *src, size_t count,
                                         size_t offset, hipMemcpyKind kind) {
  if (!symbol || !src || kind != hipMemcpyDefault) return fail(hipErrorInvalidValue);
  (void)count; (void)offset;
  return add_node(pGraphNode, graph, pDependencies, numDependencies, hipGraphNodeTypeMemcpyToSymbol);
}
hipError_t hipGraphAddMemcpyNodeFromSymbol(hipGraphNode_t *pGraphNode, hipGraph_t graph, const hipGraphNode_t *pDependencies,
                                           size_t numDependencies, void *dst, const void *symbol, size_t count,
                                           size_t offset, hipMemcpyKind kind) {
  if (!symbol || !dst || kind != hipMemcpyDefault) return fail(hipErrorInvalidValue);
  (void)count; (void)offset;
  return add_node(pGraphNode, graph, pDependencies, numDependencies, hipGraphNodeTypeMemcpyFromSymbol);
}
hipError_t hipGraphMemcpyNodeSetParamsToSymbol(hipGraphNode_t node, const void *symbol, const void *src, size_t count,
                                               size_t offset, hipMemcpyKind kind) {
  (void)count; (void)offset;
  if (!node || node->type != hipGraphNodeTypeMemcpyToSymbol || !symbol || !src || kind != hipMemcpyDefault)
    return fail(hipErrorInvalidValue);
  return hipSuccess;
}
hipError_t hipGraphExecMemcpyNodeSetParamsFromSymbol(hipGraphExec_t hGraphExec, hipGraphNode_t node, void *dst,
                                                     const void *symbol, size_t count, size_t offset, hipMemcpyKind kind) {
  (void)count; (void)offset;
  if (!hGraphExec || !node || node->type != hipGraphNodeTypeMemcpyFromSymbol || !symbol || !dst || kind != hipMemcpyDefault)
    return fail(hipErrorInvalidValue);
  return hipSuccess;
}
hipError_t hipGraphMemcpyNodeSetParamsFromSymbol(hipGraphNode_t node, void *dst, const void *symbol, size_t count,
                                                 size_t offset, hipMemcpyKind kind) {
  (void)count; (void)offset;
  if (!node || node->type != hipGraphNodeTypeMemcpyFromSymbol || !symbol || !dst || kind != hipMemcpyDefault)
    return fail(hipErrorInvalidValue);
  return hipSuccess;
}
hipError_t hipGraphExecMemcpyNodeSetParamsToSymbol(hipGraphExec_t hGraphExec, hipGraphNode_t node, const void *symbol,
                                                   const void *src, size_t count, size_t offset, hipMemcpyKind kind) {
  (void)count; (void)offset;
  if (!hGraphExec || !node || node->type != hipGraphNodeTypeMemcpyToSymbol || !symbol || !src || kind != hipMemcpyDefault)
    return fail(hipErrorInvalidValue);
  return hipSuccess;
}

/* ---- node types for the conformance suite: parameters kept as given ---- */
static hipError_t check_memset(const hipMemsetParams *p) {
  if (!p || !p->dst || (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4) || !p->width
      || !p->height) return fail(hipErrorInvalidValue);
  if (p->height > 1 && p->pitch < p->width * p->elementSize) return fail(hipErrorInvalidValue);
  return hipSuccess;
}
static hipError_t check_memcpy(const hipMemcpy3DParms *p) {
  if (!p || !p->srcPtr.ptr || !p->dstPtr.ptr) return fail(hipErrorInvalidValue);
  if ((p->extent.height > 1 || p->extent.depth > 1) &&
      (p->srcPtr.pitch < p->extent.width || p->dstPtr.pitch < p->extent.width)) return fail(hipErrorInvalidValue);
  return hipSuccess;
}
static hipGraphNode_t find_alloc_node(hipGraph_t g, void *dptr) {
  for (int i = 0; i < g->n; i++)
    if (g->nodes[i].alive && g->nodes[i].type == hipGraphNodeTypeMemAlloc && g->nodes[i].alloc.dptr == dptr)
      return &g->nodes[i];
  return NULL;
}
static int freed_in(hipGraph_t g, void *dptr) {
  for (int i = 0; i < g->n; i++)
    if (g->nodes[i].alive && g->nodes[i].type == hipGraphNodeTypeMemFree && g->nodes[i].free_ptr == dptr) return 1;
  return 0;
}
static int has_graph_memory(const struct ihipGraph *g) {
  for (int i = 0; i < g->n; i++)
    if (g->nodes[i].alive && (g->nodes[i].type == hipGraphNodeTypeMemAlloc || g->nodes[i].type == hipGraphNodeTypeMemFree))
      return 1;
  return 0;
}
static hipError_t check_alloc(hipMemAllocNodeParams *p) {
  if (!p || !p->bytesize || p->poolProps.location.id != 0 || p->poolProps.location.type != hipMemLocationTypeDevice)
    return fail(hipErrorInvalidValue);
  return hipSuccess;
}
static hipError_t check_params(hipGraph_t g, hipGraphNodeParams *p, int creating) {
  if (!g) return fail(hipErrorInvalidValue);
  switch (p->type) {
    case hipGraphNodeTypeMemset: return p->memset.dst ? hipSuccess : fail(hipErrorInvalidValue);
    case hipGraphNodeTypeHost: return p->host.fn ? hipSuccess : fail(hipErrorInvalidValue);
    case hipGraphNodeTypeGraph:
      if (!p->graph.graph || p->graph.graph == g || has_graph_memory(p->graph.graph)) return fail(hipErrorInvalidValue);
      return hipSuccess;
    case hipGraphNodeTypeEventRecord: return p->eventRecord.event ? hipSuccess : fail(hipErrorInvalidValue);
    case hipGraphNodeTypeWaitEvent: return p->eventWait.event ? hipSuccess : fail(hipErrorInvalidValue);
    case hipGraphNodeTypeMemAlloc: return creating ? check_alloc(&p->alloc) : fail(hipErrorNotSupported);
    case hipGraphNodeTypeMemFree:
      if (!creating) return fail(hipErrorNotSupported);
      if (!p->free.dptr || !find_alloc_node(g, p->free.dptr) || freed_in(g, p->free.dptr)) return fail(hipErrorInvalidValue);
      return hipSuccess;
    default: return hipSuccess;
  }
}
static void store_params(hipGraphNode_t node, hipGraphNodeParams *p) {
  switch (p->type) {
    case hipGraphNodeTypeMemset: node->memset = p->memset; break;
    case hipGraphNodeTypeHost: node->host = p->host; break;
    case hipGraphNodeTypeGraph:
      if (node->child) free_graph(node->child);
      node->child = clone_graph(p->graph.graph);
      node->child->owned_by_node = 1;
      break;
    case hipGraphNodeTypeEventRecord: node->event = p->eventRecord.event; break;
    case hipGraphNodeTypeWaitEvent: node->event = p->eventWait.event; break;
    case hipGraphNodeTypeMemAlloc:
      node->alloc = p->alloc;
      node->alloc.accessDescs = NULL;
      node->alloc.dptr = p->alloc.dptr = new_alloc(&plain_pool, p->alloc.bytesize);
      break;
    case hipGraphNodeTypeMemFree: node->free_ptr = p->free.dptr; break;
    default: break;
  }
}
static hipError_t typed(hipGraphNode_t node, hipGraphNodeType type) {
  return (!node || !node->alive || node->type != type) ? fail(hipErrorInvalidValue) : hipSuccess;
}

hipError_t hipGraphAddMemsetNode(hipGraphNode_t *out, hipGraph_t g, const hipGraphNode_t *deps, size_t n,
                                 const hipMemsetParams *p) {
  hipError_t e = check_memset(p);
  if (!e) e = add_node(out, g, deps, n, hipGraphNodeTypeMemset);
  if (!e) (*out)->memset = *p;
  return e;
}
hipError_t hipGraphMemsetNodeGetParams(hipGraphNode_t node, hipMemsetParams *p) {
  hipError_t e = typed(node, hipGraphNodeTypeMemset);
  if (!e && !p) e = fail(hipErrorInvalidValue);
  if (!e) *p = node->memset;
  return e;
}
hipError_t hipGraphMemsetNodeSetParams(hipGraphNode_t node, const hipMemsetParams *p) {
  hipError_t e = typed(node, hipGraphNodeTypeMemset);
  if (!e) e = check_memset(p);
  if (!e) node->memset = *p;
  return e;
}
static hipMemcpy3DParms params_1d(void *dst, const void *src, size_t count, hipMemcpyKind kind) {
  hipMemcpy3DParms p;
  memset(&p, 0, sizeof p);
  p.srcPtr.ptr = (void *)src; p.srcPtr.pitch = count; p.srcPtr.xsize = count; p.srcPtr.ysize = 1;
  p.dstPtr.ptr = dst; p.dstPtr.pitch = count; p.dstPtr.xsize = count; p.dstPtr.ysize = 1;
  p.extent.width = count; p.extent.height = 1; p.extent.depth = 1;
  p.kind = kind;
  return p;
}
hipError_t hipGraphAddMemcpyNode(hipGraphNode_t *out, hipGraph_t g, const hipGraphNode_t *deps, size_t n,
                                 const hipMemcpy3DParms *p) {
  hipError_t e = check_memcpy(p);
  if (!e) e = add_node(out, g, deps, n, hipGraphNodeTypeMemcpy);
  if (!e) (*out)->memcpy = *p;
  return e;
}
hipError_t hipGraphAddMemcpyNode1D(hipGraphNode_t *out, hipGraph_t g, const hipGraphNode_t *deps, size_t n,
                                   void *dst, const void *src, size_t count, hipMemcpyKind kind) {
  hipMemcpy3DParms p = params_1d(dst, src, count, kind);
  return hipGraphAddMemcpyNode(out, g, deps, n, &p);
}
hipError_t hipGraphMemcpyNodeGetParams(hipGraphNode_t node, hipMemcpy3DParms *p) {
  hipError_t e = typed(node, hipGraphNodeTypeMemcpy);
  if (!e && !p) e = fail(hipErrorInvalidValue);
  if (!e) *p = node->memcpy;
  return e;
}
hipError_t hipGraphMemcpyNodeSetParams(hipGraphNode_t node, const hipMemcpy3DParms *p) {
  hipError_t e = typed(node, hipGraphNodeTypeMemcpy);
  if (!e) e = check_memcpy(p);
  if (!e) node->memcpy = *p;
  return e;
}
hipError_t hipGraphMemcpyNodeSetParams1D(hipGraphNode_t node, void *dst, const void *src, size_t count,
                                         hipMemcpyKind kind) {
  hipMemcpy3DParms p = params_1d(dst, src, count, kind);
  return hipGraphMemcpyNodeSetParams(node, &p);
}
hipError_t hipGraphAddHostNode(hipGraphNode_t *out, hipGraph_t g, const hipGraphNode_t *deps, size_t n,
                               const hipHostNodeParams *p) {
  hipError_t e = (!p || !p->fn) ? fail(hipErrorInvalidValue) : hipSuccess;
  if (!e) e = add_node(out, g, deps, n, hipGraphNodeTypeHost);
  if (!e) (*out)->host = *p;
  return e;
}
hipError_t hipGraphHostNodeGetParams(hipGraphNode_t node, hipHostNodeParams *p) {
  hipError_t e = typed(node, hipGraphNodeTypeHost);
  if (!e && !p) e = fail(hipErrorInvalidValue);
  if (!e) *p = node->host;
  return e;
}
hipError_t hipGraphHostNodeSetParams(hipGraphNode_t node, const hipHostNodeParams *p) {
  hipError_t e = typed(node, hipGraphNodeTypeHost);
  if (!e && (!p || !p->fn)) e = fail(hipErrorInvalidValue);
  if (!e) node->host = *p;
  return e;
}
hipError_t hipGraphAddChildGraphNode(hipGraphNode_t *out, hipGraph_t g, const hipGraphNode_t *deps, size_t n,
                                     hipGraph_t child) {
  hipGraphNodeParams p;
  memset(&p, 0, sizeof p);
  p.type = hipGraphNodeTypeGraph;
  p.graph.graph = child;
  hipError_t e = check_params(g, &p, 1);
  if (!e) e = add_node(out, g, deps, n, hipGraphNodeTypeGraph);
  if (!e) store_params(*out, &p);
  return e;
}
hipError_t hipGraphChildGraphNodeGetGraph(hipGraphNode_t node, hipGraph_t *out) {
  hipError_t e = typed(node, hipGraphNodeTypeGraph);
  if (!e && !out) e = fail(hipErrorInvalidValue);
  if (!e) *out = node->child;
  return e;
}
static hipError_t add_event_node(hipGraphNode_t *out, hipGraph_t g, const hipGraphNode_t *deps, size_t n,
                                 hipEvent_t event, hipGraphNodeType type) {
  hipError_t e = event ? hipSuccess : fail(hipErrorInvalidValue);
  if (!e) e = add_node(out, g, deps, n, type);
  if (!e) (*out)->event = event;
  return e;
}
hipError_t hipGraphAddEventRecordNode(hipGraphNode_t *out, hipGraph_t g, const hipGraphNode_t *deps, size_t n,
                                      hipEvent_t event) {
  return add_event_node(out, g, deps, n, event, hipGraphNodeTypeEventRecord);
}
hipError_t hipGraphAddEventWaitNode(hipGraphNode_t *out, hipGraph_t g, const hipGraphNode_t *deps, size_t n,
                                    hipEvent_t event) {
  return add_event_node(out, g, deps, n, event, hipGraphNodeTypeWaitEvent);
}
static hipError_t get_event(hipGraphNode_t node, hipEvent_t *out, hipGraphNodeType type) {
  hipError_t e = typed(node, type);
  if (!e && !out) e = fail(hipErrorInvalidValue);
  if (!e) *out = node->event;
  return e;
}
static hipError_t set_event(hipGraphNode_t node, hipEvent_t event, hipGraphNodeType type) {
  hipError_t e = typed(node, type);
  if (!e && !event) e = fail(hipErrorInvalidValue);
  if (!e) node->event = event;
  return e;
}
hipError_t hipGraphEventRecordNodeGetEvent(hipGraphNode_t node, hipEvent_t *out) {
  return get_event(node, out, hipGraphNodeTypeEventRecord);
}
hipError_t hipGraphEventRecordNodeSetEvent(hipGraphNode_t node, hipEvent_t event) {
  return set_event(node, event, hipGraphNodeTypeEventRecord);
}
hipError_t hipGraphEventWaitNodeGetEvent(hipGraphNode_t node, hipEvent_t *out) {
  return get_event(node, out, hipGraphNodeTypeWaitEvent);
}
hipError_t hipGraphEventWaitNodeSetEvent(hipGraphNode_t node, hipEvent_t event) {
  return set_event(node, event, hipGraphNodeTypeWaitEvent);
}
hipError_t hipGraphAddMemAllocNode(hipGraphNode_t *out, hipGraph_t g, const hipGraphNode_t *deps, size_t n,
                                   hipMemAllocNodeParams *p) {
  hipGraphNodeParams gp;
  memset(&gp, 0, sizeof gp);
  gp.type = hipGraphNodeTypeMemAlloc;
  if (!p) return fail(hipErrorInvalidValue);
  gp.alloc = *p;
  hipError_t e = check_params(g, &gp, 1);
  if (!e) e = add_node(out, g, deps, n, hipGraphNodeTypeMemAlloc);
  if (!e) { store_params(*out, &gp); p->dptr = gp.alloc.dptr; }
  return e;
}
hipError_t hipGraphMemAllocNodeGetParams(hipGraphNode_t node, hipMemAllocNodeParams *p) {
  hipError_t e = typed(node, hipGraphNodeTypeMemAlloc);
  if (!e && !p) e = fail(hipErrorInvalidValue);
  if (!e) *p = node->alloc;
  return e;
}
hipError_t hipGraphAddMemFreeNode(hipGraphNode_t *out, hipGraph_t g, const hipGraphNode_t *deps, size_t n,
                                  void *dptr) {
  hipGraphNodeParams gp;
  memset(&gp, 0, sizeof gp);
  gp.type = hipGraphNodeTypeMemFree;
  gp.free.dptr = dptr;
  hipError_t e = check_params(g, &gp, 1);
  if (!e) e = add_node(out, g, deps, n, hipGraphNodeTypeMemFree);
  if (!e) store_params(*out, &gp);
  return e;
}
hipError_t hipGraphMemFreeNodeGetParams(hipGraphNode_t node, void *dptr_out) {
  hipError_t e = typed(node, hipGraphNodeTypeMemFree);
  if (!e && !dptr_out) e = fail(hipErrorInvalidValue);
  if (!e) *(void **)dptr_out = node->free_ptr;
  return e;
}

/* ---- structure: clone, find in clone, destroy a node, remove edges, DOT ---- */
static struct ihipGraph *clone_graph(const struct ihipGraph *g) {
  struct ihipGraph *c = calloc(1, sizeof *c);
  c->n = g->n;
  for (int i = 0; i < g->n; i++) {
    const struct hipGraphNode *src = &g->nodes[i];
    struct hipGraphNode *dst = &c->nodes[i];
    *dst = *src;
    dst->graph = c;
    dst->origin = (hipGraphNode_t)src;
    if (src->type == hipGraphNodeTypeKernel && src->kernel.p.func) copy_kernel_params(&dst->kernel, &src->kernel.p);
    if (src->child) { dst->child = clone_graph(src->child); dst->child->owned_by_node = 1; }
  }
  c->ne = g->ne;
  for (int e = 0; e < g->ne; e++) {
    c->from[e] = &c->nodes[g->from[e] - g->nodes];
    c->to[e] = &c->nodes[g->to[e] - g->nodes];
  }
  return c;
}
hipError_t hipGraphClone(hipGraph_t *out, hipGraph_t g) {
  if (!out || !g) return fail(hipErrorInvalidValue);
  if (has_graph_memory(g)) return fail(hipErrorNotSupported);  /* as CUDA documents for its clone */
  *out = clone_graph(g);
  return hipSuccess;
}
hipError_t hipGraphNodeFindInClone(hipGraphNode_t *out, hipGraphNode_t original, hipGraph_t clone) {
  if (!out || !original || !clone) return fail(hipErrorInvalidValue);
  for (int i = 0; i < clone->n; i++)
    if (clone->nodes[i].alive && clone->nodes[i].origin == original) { *out = &clone->nodes[i]; return hipSuccess; }
  return fail(hipErrorInvalidValue);
}
hipError_t hipGraphDestroyNode(hipGraphNode_t node) {
  if (!node || !node->alive) return fail(hipErrorInvalidValue);
  hipGraph_t g = node->graph;
  int k = 0;
  for (int e = 0; e < g->ne; e++)
    if (g->from[e] != node && g->to[e] != node) { g->from[k] = g->from[e]; g->to[k] = g->to[e]; k++; }
  g->ne = k;
  node->alive = 0;
  if (node->child) { free_graph(node->child); node->child = NULL; }
  return hipSuccess;
}
hipError_t hipGraphRemoveDependencies(hipGraph_t g, const hipGraphNode_t *from, const hipGraphNode_t *to, size_t n) {
  if (!g || (n && (!from || !to))) return fail(hipErrorInvalidValue);
  for (size_t i = 0; i < n; i++) {
    int found = -1;
    for (int e = 0; e < g->ne && found < 0; e++)
      if (g->from[e] == from[i] && g->to[e] == to[i]) found = e;
    if (found < 0) return fail(hipErrorInvalidValue);
    for (int e = found; e + 1 < g->ne; e++) { g->from[e] = g->from[e + 1]; g->to[e] = g->to[e + 1]; }
    g->ne--;
  }
  return hipSuccess;
}
static const char *type_name(hipGraphNodeType t) {
  switch (t) {
    case hipGraphNodeTypeKernel: return "KERNEL";
    case hipGraphNodeTypeMemcpy: return "MEMCPY";
    case hipGraphNodeTypeMemset: return "MEMSET";
    case hipGraphNodeTypeHost: return "HOST";
    case hipGraphNodeTypeGraph: return "GRAPH";
    case hipGraphNodeTypeEmpty: return "EMPTY";
    case hipGraphNodeTypeWaitEvent: return "WAIT_EVENT";
    case hipGraphNodeTypeEventRecord: return "EVENT_RECORD";
    case hipGraphNodeTypeMemAlloc: return "MEM_ALLOC";
    case hipGraphNodeTypeMemFree: return "MEM_FREE";
    default: return "OTHER";
  }
}
hipError_t hipGraphDebugDotPrint(hipGraph_t g, const char *path, unsigned int flags) {
  (void)flags;
  if (!g || !path) return fail(hipErrorInvalidValue);
  FILE *f = fopen(path, "w");
  if (!f) return fail(hipErrorOperatingSystem);
  fprintf(f, "digraph fakehip {\n");
  for (int i = 0; i < g->n; i++)
    if (g->nodes[i].alive) fprintf(f, "  n%d [label=\"%s %d\"];\n", i, type_name(g->nodes[i].type), i);
  for (int e = 0; e < g->ne; e++)
    fprintf(f, "  n%d -> n%d;\n", (int)(g->from[e] - g->nodes), (int)(g->to[e] - g->nodes));
  fprintf(f, "}\n");
  fclose(f);
  return hipSuccess;
}

/* ---- running a graph: dependency order; memory work only inside the fake's allocations ---- */
static void run_memset(const hipMemsetParams *p) {
  size_t row = p->width * p->elementSize, pitch = p->height > 1 ? p->pitch : row;
  if (!p->height || !in_alloc(p->dst, pitch * (p->height - 1) + row)) return;
  for (size_t y = 0; y < p->height; y++) {
    char *r = (char *)p->dst + y * pitch;
    for (size_t x = 0; x < p->width; x++) {
      if (p->elementSize == 1) r[x] = (char)p->value;
      else if (p->elementSize == 2) { unsigned short v = (unsigned short)p->value; memcpy(r + 2 * x, &v, 2); }
      else { unsigned int v = p->value; memcpy(r + 4 * x, &v, 4); }
    }
  }
}
static void run_memcpy(const hipMemcpy3DParms *p) {
  size_t w = p->extent.width, h = p->extent.height ? p->extent.height : 1, d = p->extent.depth ? p->extent.depth : 1;
  size_t sp = p->srcPtr.pitch ? p->srcPtr.pitch : w, dp = p->dstPtr.pitch ? p->dstPtr.pitch : w;
  size_t sh = p->srcPtr.ysize ? p->srcPtr.ysize : h, dh = p->dstPtr.ysize ? p->dstPtr.ysize : h;
  size_t slast = ((d - 1) * sh + (h - 1)) * sp + w, dlast = ((d - 1) * dh + (h - 1)) * dp + w;
  if (!w || !in_alloc(p->srcPtr.ptr, slast) || !in_alloc(p->dstPtr.ptr, dlast)) return;
  for (size_t z = 0; z < d; z++)
    for (size_t y = 0; y < h; y++)
      memmove((char *)p->dstPtr.ptr + (z * dh + y) * dp, (const char *)p->srcPtr.ptr + (z * sh + y) * sp, w);
}
static hipError_t run_graph(struct ihipGraph *g, struct hipGraphExec *e) {
  int done[MAXN] = {0}, left = 0;
  for (int i = 0; i < g->n; i++) left += g->nodes[i].alive;
  while (left > 0) {
    int progressed = 0;
    for (int i = 0; i < g->n; i++) {
      struct hipGraphNode *n = &g->nodes[i];
      if (!n->alive || done[i]) continue;
      int ready = 1;
      for (int k = 0; k < g->ne && ready; k++)
        if (g->to[k] == n && !done[g->from[k] - g->nodes]) ready = 0;
      if (!ready) continue;
      if (e && e->disabled[i]) { done[i] = 1; left--; progressed = 1; continue; }  /* ordered, does nothing */
      switch (n->type) {
        case hipGraphNodeTypeKernel: {
          struct kernel_copy *k = (e && e->has_over[i]) ? &e->over[i] : &n->kernel;
          if (k->p.func) run_kernel((hipFunction_t)k->p.func, k->p.kernelParams);
          break;
        }
        case hipGraphNodeTypeMemset: if (n->memset.dst) run_memset(&n->memset); break;
        case hipGraphNodeTypeMemcpy: run_memcpy(&n->memcpy); break;
        case hipGraphNodeTypeHost: if (n->host.fn) n->host.fn(n->host.userData); break;
        case hipGraphNodeTypeGraph: if (n->child) run_graph(n->child, NULL); break;
        default: break;
      }
      done[i] = 1; left--; progressed = 1;
    }
    if (!progressed) return fail(hipErrorInvalidValue);  /* a cycle */
  }
  return hipSuccess;
}

/* ---- the rest of what pygraphrt calls on HIP (tests/test_hip_fake_calls.py exercises each) ----
 * Each call is checked against HIP's prototype by the compiler; the behaviour is the same toy as
 * above: enough state that a test can see each call arrive with the arguments pygraphrt meant. */
int fake_graph_uploads, fake_graph_mem_trims, fake_stream_not_ready;
unsigned long long fake_graph_mem[4];  /* used current / high, reserved current / high */
hipError_t hipStreamQuery(hipStream_t s) {
  if (s && s->status != hipStreamCaptureStatusNone) return fail(hipErrorStreamCaptureUnsupported);
  return fake_stream_not_ready ? fail(hipErrorNotReady) : hipSuccess;  /* a test sets the flag */
}
hipError_t hipEventElapsedTime(float *ms, hipEvent_t start, hipEvent_t stop) {
  if (!ms || !start || !stop) return fail(hipErrorInvalidHandle);
  if ((start->flags | stop->flags) & hipEventDisableTiming) return fail(hipErrorInvalidHandle);
  if (!start->recorded || !stop->recorded) return fail(hipErrorNotReady);
  *ms = (float)(stop->ms - start->ms);
  return hipSuccess;
}
hipError_t hipDeviceGraphMemTrim(int device) {
  if (device) return fail(hipErrorInvalidDevice);
  fake_graph_mem_trims++;
  return hipSuccess;
}
static int graph_mem_index(hipGraphMemAttributeType attr) {
  switch (attr) {
    case hipGraphMemAttrUsedMemCurrent: return 0;
    case hipGraphMemAttrUsedMemHigh: return 1;
    case hipGraphMemAttrReservedMemCurrent: return 2;
    case hipGraphMemAttrReservedMemHigh: return 3;
    default: return -1;
  }
}
hipError_t hipDeviceGetGraphMemAttribute(int device, hipGraphMemAttributeType attr, void *value) {
  int i = graph_mem_index(attr);
  if (device) return fail(hipErrorInvalidDevice);
  if (i < 0 || !value) return fail(hipErrorInvalidValue);
  memcpy(value, &fake_graph_mem[i], sizeof fake_graph_mem[i]);  /* a uint64_t, as HIP documents */
  return hipSuccess;
}
hipError_t hipDeviceSetGraphMemAttribute(int device, hipGraphMemAttributeType attr, void *value) {
  int i = graph_mem_index(attr);
  unsigned long long v;
  if (device) return fail(hipErrorInvalidDevice);
  if (!value || (i != 1 && i != 3)) return fail(hipErrorInvalidValue);  /* only the high watermarks */
  memcpy(&v, value, sizeof v);
  if (v != 0) return fail(hipErrorInvalidValue);                        /* ... reset to 0 */
  fake_graph_mem[i] = fake_graph_mem[i - 1];
  return hipSuccess;
}
hipError_t hipLaunchHostFunc(hipStream_t s, hipHostFn_t fn, void *userData) {
  if (!fn) return fail(hipErrorInvalidValue);
  if (s && s->status == hipStreamCaptureStatusActive) {
    hipError_t e = capture_node(s, hipGraphNodeTypeHost);
    if (!e) { s->deps[0]->host.fn = fn; s->deps[0]->host.userData = userData; }
    return e;
  }
  fn(userData);  /* the stream's work so far is done: run it now */
  return hipSuccess;
}
hipError_t hipStreamBeginCaptureToGraph(hipStream_t s, hipGraph_t g, const hipGraphNode_t *deps,
                                        const hipGraphEdgeData *edges, size_t n, hipStreamCaptureMode mode) {
  (void)mode;
  if (!s) return fail(hipErrorStreamCaptureUnsupported);
  if (!g || edges || (n && !deps) || n > MAXN) return fail(hipErrorInvalidValue);  /* HIP: no edge data */
  if (s->status != hipStreamCaptureStatusNone) return fail(hipErrorIllegalState);
  for (size_t i = 0; i < n; i++)
    if (!deps[i] || deps[i]->graph != g || !deps[i]->alive) return fail(hipErrorInvalidValue);
  s->graph = g;
  s->status = hipStreamCaptureStatusActive;
  s->id = next_capture_id++;
  s->ndeps = n;
  memcpy(s->deps, deps, n * sizeof *deps);
  return hipSuccess;
}
hipError_t hipStreamUpdateCaptureDependencies(hipStream_t s, hipGraphNode_t *deps, size_t n, unsigned int flags) {
  if (!s || s->status != hipStreamCaptureStatusActive) return fail(hipErrorIllegalState);
  if ((n && !deps) || (flags != hipStreamAddCaptureDependencies && flags != hipStreamSetCaptureDependencies))
    return fail(hipErrorInvalidValue);
  for (size_t i = 0; i < n; i++)
    if (!deps[i] || deps[i]->graph != s->graph || !deps[i]->alive) return fail(hipErrorInvalidValue);
  if (flags == hipStreamSetCaptureDependencies) s->ndeps = 0;
  if (s->ndeps + n > MAXN) return fail(hipErrorInvalidValue);
  memcpy(s->deps + s->ndeps, deps, n * sizeof *deps);
  s->ndeps += n;
  return hipSuccess;
}
hipError_t hipGraphInstantiate(hipGraphExec_t *e, hipGraph_t g, hipGraphNode_t *err_node, char *log, size_t size) {
  if (err_node) *err_node = NULL;
  if (log && size) log[0] = '\0';
  return hipGraphInstantiateWithFlags(e, g, 0);
}
hipError_t hipGraphInstantiateWithParams(hipGraphExec_t *e, hipGraph_t g, hipGraphInstantiateParams *p) {
  if (!p) return fail(hipErrorInvalidValue);
  hipError_t rc = hipGraphInstantiateWithFlags(e, g, p->flags & ~(unsigned long long)hipGraphInstantiateFlagUpload);
  p->errNode_out = NULL;
  p->result_out = rc ? hipGraphInstantiateError : hipGraphInstantiateSuccess;
  if (!rc) (*e)->flags = p->flags;
  if (!rc && (p->flags & hipGraphInstantiateFlagUpload)) rc = hipGraphUpload(*e, p->uploadStream);
  return rc;
}
hipError_t hipGraphUpload(hipGraphExec_t e, hipStream_t s) {
  if (!e) return fail(hipErrorInvalidValue);
  if (s && s->status != hipStreamCaptureStatusNone) return fail(hipErrorStreamCaptureUnsupported);
  fake_graph_uploads++;
  return hipSuccess;
}
/* The executable graph's own copy of `node` (a node of the graph it was instantiated from). */
static hipError_t exec_node(hipGraphExec_t e, hipGraphNode_t node, int type, struct hipGraphNode **out) {
  if (!e || !node || node->graph != e->graph || !node->alive) return fail(hipErrorInvalidValue);
  int i = (int)(node - e->graph->nodes);
  if (i >= e->copy->n || !e->copy->nodes[i].alive || (type >= 0 && e->copy->nodes[i].type != (hipGraphNodeType)type))
    return fail(hipErrorInvalidValue);
  *out = &e->copy->nodes[i];
  return hipSuccess;
}
hipError_t hipGraphNodeSetEnabled(hipGraphExec_t e, hipGraphNode_t node, unsigned int enabled) {
  struct hipGraphNode *c;
  hipError_t rc = exec_node(e, node, -1, &c);
  if (rc) return rc;
  if (c->type != hipGraphNodeTypeKernel && c->type != hipGraphNodeTypeMemcpy && c->type != hipGraphNodeTypeMemset)
    return fail(hipErrorInvalidValue);  /* as documented: kernel, memcpy and memset nodes */
  e->disabled[c - e->copy->nodes] = !enabled;
  return hipSuccess;
}
hipError_t hipGraphNodeGetEnabled(hipGraphExec_t e, hipGraphNode_t node, unsigned int *enabled) {
  struct hipGraphNode *c;
  hipError_t rc = exec_node(e, node, -1, &c);
  if (!rc && !enabled) rc = fail(hipErrorInvalidValue);
  if (!rc) *enabled = !e->disabled[c - e->copy->nodes];
  return rc;
}
hipError_t hipGraphExecMemsetNodeSetParams(hipGraphExec_t e, hipGraphNode_t node, const hipMemsetParams *p) {
  struct hipGraphNode *c;
  hipError_t rc = exec_node(e, node, hipGraphNodeTypeMemset, &c);
  if (!rc) rc = check_memset(p);
  if (!rc) c->memset = *p;
  return rc;
}
hipError_t hipGraphExecMemcpyNodeSetParams(hipGraphExec_t e, hipGraphNode_t node, hipMemcpy3DParms *p) {
  struct hipGraphNode *c;
  hipError_t rc = exec_node(e, node, hipGraphNodeTypeMemcpy, &c);
  if (!rc) rc = check_memcpy(p);
  if (!rc) c->memcpy = *p;
  return rc;
}
hipError_t hipGraphExecMemcpyNodeSetParams1D(hipGraphExec_t e, hipGraphNode_t node, void *dst, const void *src,
                                             size_t count, hipMemcpyKind kind) {
  hipMemcpy3DParms p = params_1d(dst, src, count, kind);
  return hipGraphExecMemcpyNodeSetParams(e, node, &p);
}
hipError_t hipGraphExecHostNodeSetParams(hipGraphExec_t e, hipGraphNode_t node, const hipHostNodeParams *p) {
  struct hipGraphNode *c;
  hipError_t rc = exec_node(e, node, hipGraphNodeTypeHost, &c);
  if (!rc && (!p || !p->fn)) rc = fail(hipErrorInvalidValue);
  if (!rc) c->host = *p;
  return rc;
}
static int same_shape(const struct ihipGraph *a, const struct ihipGraph *b) {
  if (a->n != b->n || a->ne != b->ne) return 0;
  for (int i = 0; i < a->n; i++)
    if (a->nodes[i].alive != b->nodes[i].alive || a->nodes[i].type != b->nodes[i].type) return 0;
  return 1;
}
hipError_t hipGraphExecChildGraphNodeSetParams(hipGraphExec_t e, hipGraphNode_t node, hipGraph_t child) {
  struct hipGraphNode *c;
  hipError_t rc = exec_node(e, node, hipGraphNodeTypeGraph, &c);
  if (!rc && (!child || !same_shape(c->child, child))) rc = fail(hipErrorInvalidValue);  /* same topology */
  if (!rc) {
    free_graph(c->child);
    c->child = clone_graph(child);
    c->child->owned_by_node = 1;
  }
  return rc;
}
static hipError_t exec_set_event(hipGraphExec_t e, hipGraphNode_t node, hipEvent_t event, hipGraphNodeType type) {
  struct hipGraphNode *c;
  hipError_t rc = exec_node(e, node, type, &c);
  if (!rc && !event) rc = fail(hipErrorInvalidValue);
  if (!rc) c->event = event;
  return rc;
}
hipError_t hipGraphExecEventRecordNodeSetEvent(hipGraphExec_t e, hipGraphNode_t node, hipEvent_t event) {
  return exec_set_event(e, node, event, hipGraphNodeTypeEventRecord);
}
hipError_t hipGraphExecEventWaitNodeSetEvent(hipGraphExec_t e, hipGraphNode_t node, hipEvent_t event) {
  return exec_set_event(e, node, event, hipGraphNodeTypeWaitEvent);
}
#if FAKE_HIP7
hipError_t hipGraphExecGetFlags(hipGraphExec_t e, unsigned long long *flags) {
  if (!e || !flags) return fail(hipErrorInvalidValue);
  *flags = e->flags;
  return hipSuccess;
}
hipError_t hipGraphExecNodeSetParams(hipGraphExec_t e, hipGraphNode_t node, hipGraphNodeParams *p) {
  struct hipGraphNode *c;
  hipError_t rc = p ? exec_node(e, node, p->type, &c) : fail(hipErrorInvalidValue);
  if (!rc) rc = check_params(e->copy, p, 0);
  if (!rc && p->type == hipGraphNodeTypeGraph && !same_shape(c->child, p->graph.graph)) rc = fail(hipErrorInvalidValue);
  if (!rc) store_params(c, p);
  return rc;
}
#endif

/* External semaphores: a semaphore is a counter; signals set it, waits check it (the fake runs
 * stream work at once), captured ones become nodes of HIP's semaphore node types. */
struct fake_semaphore { hipExternalSemaphoreHandleType type; int fd; unsigned long long value; };
unsigned long long fake_semaphore_value(hipExternalSemaphore_t sem) {
  return sem ? ((struct fake_semaphore *)sem)->value : 0;
}
hipError_t hipImportExternalSemaphore(hipExternalSemaphore_t *out, const hipExternalSemaphoreHandleDesc *desc) {
  if (!out || !desc) return fail(hipErrorInvalidValue);
  if (desc->type == hipExternalSemaphoreHandleTypeOpaqueFd && desc->handle.fd < 0) return fail(hipErrorInvalidValue);
  struct fake_semaphore *sem = calloc(1, sizeof *sem);
  sem->type = desc->type;
  sem->fd = desc->handle.fd;
  *out = sem;
  return hipSuccess;
}
hipError_t hipDestroyExternalSemaphore(hipExternalSemaphore_t sem) {
  if (!sem) return fail(hipErrorInvalidValue);
  free(sem);
  return hipSuccess;
}
static hipError_t semaphores(const hipExternalSemaphore_t *sems, const void *params, unsigned int n) {
  if (!n || !sems || !params) return fail(hipErrorInvalidValue);
  for (unsigned int i = 0; i < n; i++)
    if (!sems[i]) return fail(hipErrorInvalidValue);
  return hipSuccess;
}
hipError_t hipSignalExternalSemaphoresAsync(const hipExternalSemaphore_t *sems,
                                            const hipExternalSemaphoreSignalParams *params, unsigned int n,
                                            hipStream_t s) {
  hipError_t rc = semaphores(sems, params, n);
  if (rc) return rc;
  if (s && s->status == hipStreamCaptureStatusActive) return capture_node(s, hipGraphNodeTypeExtSemaphoreSignal);
  for (unsigned int i = 0; i < n; i++) ((struct fake_semaphore *)sems[i])->value = params[i].params.fence.value;
  return hipSuccess;
}
hipError_t hipWaitExternalSemaphoresAsync(const hipExternalSemaphore_t *sems,
                                          const hipExternalSemaphoreWaitParams *params, unsigned int n,
                                          hipStream_t s) {
  hipError_t rc = semaphores(sems, params, n);
  if (rc) return rc;
  if (s && s->status == hipStreamCaptureStatusActive) return capture_node(s, hipGraphNodeTypeExtSemaphoreWait);
  for (unsigned int i = 0; i < n; i++)  /* nothing else would signal it: waiting would never end */
    if (((struct fake_semaphore *)sems[i])->value < params[i].params.fence.value) return fail(hipErrorNotReady);
  return hipSuccess;
}
hipError_t hipGraphAddExternalSemaphoresSignalNode(hipGraphNode_t *out, hipGraph_t g, const hipGraphNode_t *deps,
                                                   size_t n, const hipExternalSemaphoreSignalNodeParams *p) {
  hipError_t rc = p ? semaphores(p->extSemArray, p->paramsArray, p->numExtSems) : fail(hipErrorInvalidValue);
  return rc ? rc : add_node(out, g, deps, n, hipGraphNodeTypeExtSemaphoreSignal);
}
hipError_t hipGraphAddExternalSemaphoresWaitNode(hipGraphNode_t *out, hipGraph_t g, const hipGraphNode_t *deps,
                                                 size_t n, const hipExternalSemaphoreWaitNodeParams *p) {
  hipError_t rc = p ? semaphores(p->extSemArray, p->paramsArray, p->numExtSems) : fail(hipErrorInvalidValue);
  return rc ? rc : add_node(out, g, deps, n, hipGraphNodeTypeExtSemaphoreWait);
}

/* ---- several devices: the fake has one device (ordinal 0), so every peer question names a
   device that is not there or the device itself -- the call forms are what is checked. */
hipError_t hipDeviceCanAccessPeer(int *canAccessPeer, int deviceId, int peerDeviceId) {
  if (!canAccessPeer) return fail(hipErrorInvalidValue);
  if (deviceId != 0 || peerDeviceId != 0) return fail(hipErrorInvalidDevice);
  *canAccessPeer = 0;  /* a device is not its own peer */
  return hipSuccess;
}
hipError_t hipDeviceEnablePeerAccess(int peerDeviceId, unsigned int flags) {
  if (flags) return fail(hipErrorInvalidValue);
  return fail(peerDeviceId == 0 ? hipErrorPeerAccessUnsupported : hipErrorInvalidDevice);
}
hipError_t hipDeviceDisablePeerAccess(int peerDeviceId) {
  return fail(peerDeviceId == 0 ? hipErrorPeerAccessNotEnabled : hipErrorInvalidDevice);
}
hipError_t hipDeviceGetP2PAttribute(int *value, hipDeviceP2PAttr attr, int srcDevice, int dstDevice) {
  if (!value || attr < hipDevP2PAttrPerformanceRank || attr > hipDevP2PAttrHipArrayAccessSupported)
    return fail(hipErrorInvalidValue);
  if (srcDevice != 0 || dstDevice != 0) return fail(hipErrorInvalidDevice);
  *value = 0;
  return hipSuccess;
}
hipError_t hipMemPoolSetAccess(hipMemPool_t mem_pool, const hipMemAccessDesc *desc_list, size_t count) {
  if (!mem_pool || (count && !desc_list)) return fail(hipErrorInvalidValue);
  for (size_t i = 0; i < count; i++) {
    if (desc_list[i].location.type != hipMemLocationTypeDevice) return fail(hipErrorInvalidValue);
    if (desc_list[i].location.id != 0) return fail(hipErrorInvalidDevice);
    /* the pool's own device always reads and writes */
    if (desc_list[i].flags != hipMemAccessFlagsProtReadWrite) return fail(hipErrorInvalidValue);
  }
  return hipSuccess;
}
hipError_t hipMemPoolGetAccess(hipMemAccessFlags *flags, hipMemPool_t mem_pool, hipMemLocation *location) {
  if (!flags || !mem_pool || !location || location->type != hipMemLocationTypeDevice) return fail(hipErrorInvalidValue);
  if (location->id != 0) return fail(hipErrorInvalidDevice);
  *flags = hipMemAccessFlagsProtReadWrite;
  return hipSuccess;
}
hipError_t hipPointerGetAttributes(hipPointerAttribute_t *attributes, const void *ptr) {
  if (!attributes || !ptr) return fail(hipErrorInvalidValue);
  memset(attributes, 0, sizeof *attributes);
  attributes->type = hipMemoryTypeDevice;  /* the fake's allocations are its one device's */
  attributes->device = 0;
  attributes->devicePointer = (void *)ptr;
  return hipSuccess;
}
hipError_t hipStreamGetDevice(hipStream_t stream, hipDevice_t *device) {
  (void)stream;
  if (!device) return fail(hipErrorInvalidValue);
  *device = 0;
  return hipSuccess;
}
