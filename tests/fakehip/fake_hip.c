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
struct hipGraphNode { struct ihipGraph *graph; hipGraphNodeType type; int alive; struct kernel_copy kernel; };
struct ihipGraph { struct hipGraphNode nodes[MAXN]; int n; hipGraphNode_t from[MAXN], to[MAXN]; int ne; };
/* An executable graph runs its graph's kernel nodes in order, with per-exec overrides. */
struct hipGraphExec { int nodes; struct ihipGraph *graph; struct kernel_copy over[MAXN]; int has_over[MAXN]; };
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
/* A captured work item: a node of `type` after the stream's capture dependencies. */
static hipError_t capture_node(hipStream_t s, hipGraphNodeType type) {
  hipGraphNode_t node;
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
  (*e)->nodes = g->n;
  (*e)->graph = g;
  return hipSuccess;
}
hipError_t hipGraphExecDestroy(hipGraphExec_t e) { free(e); return hipSuccess; }
hipError_t hipGraphLaunch(hipGraphExec_t e, hipStream_t s) {
  (void)s;
  if (!e) return fail(hipErrorInvalidValue);
  for (int i = 0; i < e->nodes; i++) {
    struct hipGraphNode *n = &e->graph->nodes[i];
    if (!n->alive || n->type != hipGraphNodeTypeKernel) continue;
    struct kernel_copy *k = e->has_over[i] ? &e->over[i] : &n->kernel;
    run_kernel((hipFunction_t)k->p.func, k->p.kernelParams);
  }
  return hipSuccess;
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
hipError_t hipDrvLaunchKernelEx(const HIP_LAUNCH_CONFIG *config, hipFunction_t f, void **params, void **extra) {
  if (!config || (config->numAttrs && !config->attrs)) return fail(hipErrorInvalidValue);
  for (unsigned i = 0; i < config->numAttrs; i++) {
    if (config->attrs[i].id == hipLaunchAttributePriority) fake_last_launch_priority = config->attrs[i].val.priority;
    else if (config->attrs[i].id != hipLaunchAttributeCooperative) return fail(hipErrorInvalidValue);
  }
  return launch_checked(f, config->gridDimX, config->blockDimX, config->blockDimY, config->blockDimZ, params, extra);
}

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
/* Each allocation is prefixed with its pool and size. */
struct fake_alloc { hipMemPool_t pool; size_t size; };
hipError_t hipMallocFromPoolAsync(void **dev_ptr, size_t size, hipMemPool_t p, hipStream_t stream) {
  if (!dev_ptr || !p || !stream) return fail(hipErrorInvalidValue);
  if (size > ((size_t)1 << 40)) return fail(hipErrorOutOfMemory);
  struct fake_alloc *a = malloc(sizeof *a + size);
  a->pool = p; a->size = size;
  *dev_ptr = a + 1;
  if (stream->status == hipStreamCaptureStatusActive) return capture_node(stream, hipGraphNodeTypeMemAlloc);
  p->used += size; p->reserved += size;
  if (p->used > p->high) p->high = p->used;
  return hipSuccess;
}
static void release(void *dev_ptr) {
  struct fake_alloc *a = (struct fake_alloc *)dev_ptr - 1;
  a->pool->used -= a->size;
  if (a->pool->reserved > a->pool->threshold && a->pool->reserved > a->pool->used)
    a->pool->reserved = a->pool->used > a->pool->threshold ? a->pool->used : a->pool->threshold;
  free(a);
}
hipError_t hipMallocAsync(void **dev_ptr, size_t size, hipStream_t stream) {
  return hipMallocFromPoolAsync(dev_ptr, size, current_pool, stream);
}
hipError_t hipFreeAsync(void *dev_ptr, hipStream_t stream) {
  if (!dev_ptr || !stream) return fail(hipErrorInvalidValue);
  if (stream->status == hipStreamCaptureStatusActive) return capture_node(stream, hipGraphNodeTypeMemFree);
  release(dev_ptr);
  return hipSuccess;
}
hipError_t hipFree(void *ptr) { if (ptr) release(ptr); return hipSuccess; }

/* HIP's own node types: batch memory operations (kept per node, read back as given) and
 * memcpy to / from a symbol (the fake records the call; HIP has no readback of these). */
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
