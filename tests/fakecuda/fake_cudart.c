/* A stand-in libcudart 13.x for testing pygraphrt's CUDA 13.1-13.3 graph paths without a GPU.
 *
 * Compiled against the pinned CUDA 13.5 runtime headers with -Wall -Werror, so every
 * definition below is checked against NVIDIA's prototype.  It reports CUDART_VERSION and,
 * as driver version, FAKE_DRIVER_VERSION (default: the same), so the tests can play a 13.5
 * runtime on a 13.0 driver.  Behaviour is a tiny in-memory graph of empty, memset and host
 * nodes: ids, the containing graph, generic parameter readback, stream capture, and
 * recapture into an existing graph as cuda_runtime_api.h documents it (nodes again in the
 * same order; a topology mismatch fails the recapture; other parameter changes go to the
 * callback with cudaGraphRecaptureEligibleForUpdate, and a non-success answer fails it).
 * Memsets write host memory; 1-D copy nodes keep their parameters (read back, never run); host
 * nodes call their function at launch; each node keeps its
 * dependencies, given when it is added or by cudaGraphAddDependencies (without edge data), read
 * back by cudaGraphNodeGetDependencies; MAXDEPS of them.  Kernel nodes keep their
 * launch parameters and copies of their argument values, read back by
 * cudaGraphKernelNodeGetParams; every kernel has the parameters FAKE_KERNEL_PARAMS lays out
 * (cudaFuncGetParamInfo says so).  Built with -DFAKE_DRIVER_DIRECT, it also hands out
 * (cudaGetDriverEntryPointByVersion) stand-ins for the driver functions pygraphrt's compiled
 * paths call straight (cuGraphLaunch, cuGraphAddEmptyNode, cuStreamIsCapturing,
 * cuGraphAddMemsetNode, cuGraphAddKernelNode, cuCtxGetCurrent, cuCtxGetDevice; cuFuncGetParamInfo for a
 * CUfunction's signature check; cuLaunchKernel, with the runtime's cudaLaunchKernel that a
 * launch the driver refuses for want of a context is made again through), typed from the
 * pinned cuda.h:
 * they count their calls (fake_driver_calls; the runtime's graph launch, capture query and
 * empty, memset and kernel adds count theirs in fake_runtime_calls) and, while
 * fake_driver_refuses is set, refuse with a driver error code; while fake_no_context is set
 * no context is current; fake_kernel_field says which field of the last kernel node's driver
 * struct held the kernel (1 kern, 2 func).  Written for pygraphrt's
 * tests; it implements only what they call.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FAKE_DRIVER_VERSION
#define FAKE_DRIVER_VERSION CUDART_VERSION
#endif
#define MAXN 64
#define MAXDEPS 32

struct CUgraphNode_st {
  struct CUgraph_st *graph;
  enum cudaGraphNodeType type;
  unsigned local_id;
  struct cudaMemsetParamsV2 memset;
  struct cudaHostNodeParamsV2 host;
  struct cudaKernelNodeParams kernel;  /* kernelParams: argv, into args */
  struct cudaMemcpy3DParms copy;  /* a 1-D copy node's, read back by cudaGraphMemcpyNodeGetParams */
  unsigned char args[64];
  void *argv[16];
  struct CUgraphNode_st *deps[MAXDEPS];
  size_t ndeps;
};
struct CUgraph_st { unsigned id; struct CUgraphNode_st nodes[MAXN]; int n; };
struct CUgraphExec_st { unsigned id; struct CUgraph_st *graph; struct CUgraphNode_st nodes[MAXN]; int n; };
struct CUstream_st {
  enum cudaStreamCaptureStatus status;
  struct CUgraph_st *graph;
  int recapture, next;  /* recapturing: the index of the next node to match */
  struct cudaGraphRecaptureCallbackData cb;
};

static unsigned next_graph_id = 1, next_exec_id = 1;
static cudaError_t last_error = cudaSuccess;
static cudaError_t fail(cudaError_t e) { last_error = e; return e; }

cudaError_t cudaRuntimeGetVersion(int *v) { *v = CUDART_VERSION; return cudaSuccess; }
cudaError_t cudaDriverGetVersion(int *v) { *v = FAKE_DRIVER_VERSION; return cudaSuccess; }
/* fake_device_count devices (1 unless a test says otherwise), of which fake_current_device
 * (0 unless a test sets it, as another library switching devices would) is current; there is
 * no cudaSetDevice.  fake_runtime_device_queries counts the runtime's answers to "which
 * device" (fake_driver_device_queries the driver's cuCtxGetDevice's, with FAKE_DRIVER_DIRECT). */
int fake_device_count = 1;
int fake_current_device;
cudaError_t cudaGetDeviceCount(int *n) { *n = fake_device_count; return cudaSuccess; }
int fake_runtime_device_queries;
cudaError_t cudaGetDevice(int *d) {
  fake_runtime_device_queries++;
  *d = fake_current_device;
  return cudaSuccess;
}
cudaError_t cudaGetLastError(void) { cudaError_t e = last_error; last_error = cudaSuccess; return e; }
const char *cudaGetErrorName(cudaError_t e) { (void)e; return "cudaErrorUnknown"; }
const char *cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "fake cuda error"; }

/* ---- graphs and nodes ---- */
static struct CUgraph_st *new_graph(void) {
  struct CUgraph_st *g = calloc(1, sizeof *g);
  g->id = next_graph_id++;
  return g;
}
cudaError_t cudaGraphCreate(cudaGraph_t *g, unsigned int flags) {
  if (!g || flags) return fail(cudaErrorInvalidValue);
  *g = new_graph();
  return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t g) { if (!g) return fail(cudaErrorInvalidValue); free(g); return cudaSuccess; }
static cudaError_t add(cudaGraphNode_t *out, cudaGraph_t g, enum cudaGraphNodeType type,
                       const cudaGraphNode_t *deps, size_t n) {
  if (!out || !g || g->n == MAXN || n > MAXDEPS || (n && !deps)) return fail(cudaErrorInvalidValue);
  for (size_t i = 0; i < n; i++)
    if (!deps[i] || deps[i]->graph != g) return fail(cudaErrorInvalidValue);
  cudaGraphNode_t node = &g->nodes[g->n];
  memset(node, 0, sizeof *node);
  node->graph = g; node->type = type; node->local_id = (unsigned)g->n++;
  for (size_t i = 0; i < n; i++) node->deps[i] = deps[i];
  node->ndeps = n;
  *out = node;
  return cudaSuccess;
}
/* The fake frees only its graph's last node: its slot, so its address, is the next node's (as a
 * real runtime may reuse a destroyed node's memory). */
cudaError_t cudaGraphDestroyNode(cudaGraphNode_t node) {
  if (!node || !node->graph || node != &node->graph->nodes[node->graph->n - 1]) return fail(cudaErrorInvalidValue);
  node->graph->n--;
  memset(node, 0, sizeof *node);
  return cudaSuccess;
}
int fake_runtime_calls, fake_driver_calls, fake_driver_refuses;
cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t *out, cudaGraph_t g, const cudaGraphNode_t *deps, size_t n) {
  fake_runtime_calls++;
  return add(out, g, cudaGraphNodeTypeEmpty, deps, n);
}
static void memset_v2(struct cudaMemsetParamsV2 *to, void *dst, unsigned value, unsigned elem, size_t width,
                      size_t height, size_t pitch) {
  memset(to, 0, sizeof *to);
  to->dst = dst; to->value = value; to->elementSize = elem; to->width = width; to->height = height; to->pitch = pitch;
}
cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t *out, cudaGraph_t g, const cudaGraphNode_t *deps, size_t n,
                                   const struct cudaMemsetParams *p) {
  fake_runtime_calls++;
  if (!p) return fail(cudaErrorInvalidValue);
  cudaError_t e = add(out, g, cudaGraphNodeTypeMemset, deps, n);
  if (!e) memset_v2(&(*out)->memset, p->dst, p->value, p->elementSize, p->width, p->height, p->pitch);
  return e;
}
/* Every fake kernel's parameters, (offset, size) each: the layout of
 * (float *x, int n, double a, unsigned char c, short h, float f, long long q, unsigned int u). */
static const size_t FAKE_KERNEL_PARAMS[][2] = {{0, 8}, {8, 4}, {16, 8}, {24, 1}, {26, 2}, {28, 4}, {32, 8}, {40, 4}};
#define FAKE_KERNEL_NPARAMS (sizeof FAKE_KERNEL_PARAMS / sizeof FAKE_KERNEL_PARAMS[0])
cudaError_t cudaFuncGetParamInfo(const void *func, size_t i, size_t *offset, size_t *size) {
  if (!func || !offset || !size || i >= FAKE_KERNEL_NPARAMS) return fail(cudaErrorInvalidValue);
  *offset = FAKE_KERNEL_PARAMS[i][0];
  *size = FAKE_KERNEL_PARAMS[i][1];
  return cudaSuccess;
}
static cudaError_t add_kernel(cudaGraphNode_t *out, cudaGraph_t g, const cudaGraphNode_t *deps, size_t n,
                              const struct cudaKernelNodeParams *p) {
  if (!p || !p->func || p->extra || !p->kernelParams || !p->gridDim.x || !p->blockDim.x)
    return fail(cudaErrorInvalidValue);
  cudaError_t e = add(out, g, cudaGraphNodeTypeKernel, deps, n);
  if (e) return e;
  cudaGraphNode_t node = *out;
  node->kernel = *p;
  for (size_t i = 0; i < FAKE_KERNEL_NPARAMS; i++) {  /* the values are copied, as the runtime does */
    memcpy(node->args + FAKE_KERNEL_PARAMS[i][0], p->kernelParams[i], FAKE_KERNEL_PARAMS[i][1]);
    node->argv[i] = node->args + FAKE_KERNEL_PARAMS[i][0];
  }
  node->kernel.kernelParams = node->argv;
  return cudaSuccess;
}
cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t *out, cudaGraph_t g, const cudaGraphNode_t *deps, size_t n,
                                   const struct cudaKernelNodeParams *p) {
  fake_runtime_calls++;
  return add_kernel(out, g, deps, n, p);
}
cudaError_t cudaGraphKernelNodeGetParams(cudaGraphNode_t node, struct cudaKernelNodeParams *p) {
  if (!node || !p || node->type != cudaGraphNodeTypeKernel) return fail(cudaErrorInvalidValue);
  *p = node->kernel;
  return cudaSuccess;
}
cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t *out, cudaGraph_t g, const cudaGraphNode_t *deps, size_t n,
                                     void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) {
  fake_runtime_calls++;
  cudaError_t e = add(out, g, cudaGraphNodeTypeMemcpy, deps, n);
  if (!e) {
    struct cudaMemcpy3DParms *c = &(*out)->copy;
    memset(c, 0, sizeof *c);
    c->dstPtr.ptr = dst; c->dstPtr.pitch = c->dstPtr.xsize = count; c->dstPtr.ysize = 1;
    c->srcPtr.ptr = (void *)src; c->srcPtr.pitch = c->srcPtr.xsize = count; c->srcPtr.ysize = 1;
    c->extent.width = count; c->extent.height = c->extent.depth = 1;
    c->kind = kind;
  }
  return e;
}
cudaError_t cudaGraphMemcpyNodeGetParams(cudaGraphNode_t node, struct cudaMemcpy3DParms *p) {
  if (!node || !p || node->type != cudaGraphNodeTypeMemcpy) return fail(cudaErrorInvalidValue);
  *p = node->copy;
  return cudaSuccess;
}
cudaError_t cudaGraphMemsetNodeGetParams(cudaGraphNode_t node, struct cudaMemsetParams *p) {
  if (!node || !p || node->type != cudaGraphNodeTypeMemset) return fail(cudaErrorInvalidValue);
  p->dst = node->memset.dst; p->value = node->memset.value; p->elementSize = node->memset.elementSize;
  p->width = node->memset.width; p->height = node->memset.height; p->pitch = node->memset.pitch;
  return cudaSuccess;
}
cudaError_t cudaGraphAddNode(cudaGraphNode_t *out, cudaGraph_t g, const cudaGraphNode_t *deps,
                             const cudaGraphEdgeData *edges, size_t n, struct cudaGraphNodeParams *p) {
  (void)edges;
  if (!p || (p->type != cudaGraphNodeTypeHost && p->type != cudaGraphNodeTypeEmpty)) return fail(cudaErrorInvalidValue);
  cudaError_t e = add(out, g, p->type, deps, n);
  if (!e && p->type == cudaGraphNodeTypeHost) (*out)->host = p->host;
  return e;
}
cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, enum cudaGraphNodeType *t) {
  if (!node || !t) return fail(cudaErrorInvalidValue);
  *t = node->type;
  return cudaSuccess;
}
cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t *deps, cudaGraphEdgeData *edges,
                                         size_t *n) {
  if (!node || !n) return fail(cudaErrorInvalidValue);
  if (!deps) { *n = node->ndeps; return cudaSuccess; }
  size_t k = *n < node->ndeps ? *n : node->ndeps;
  for (size_t i = 0; i < k; i++) {
    deps[i] = node->deps[i];
    if (edges) memset(&edges[i], 0, sizeof edges[i]);
  }
  *n = k;
  return cudaSuccess;
}
cudaError_t cudaGraphAddDependencies(cudaGraph_t g, const cudaGraphNode_t *from, const cudaGraphNode_t *to,
                                     const cudaGraphEdgeData *edges, size_t n) {
  if (!g || (n && (!from || !to))) return fail(cudaErrorInvalidValue);
  size_t added[MAXN] = {0};
  for (size_t i = 0; i < n; i++) {  /* (checked first: a refused call adds none) */
    if (!from[i] || !to[i] || from[i]->graph != g || to[i]->graph != g || (edges && edges[i].type))
      return fail(cudaErrorInvalidValue);
    if (to[i]->ndeps + ++added[to[i] - g->nodes] > MAXDEPS) return fail(cudaErrorNotSupported);
  }
  for (size_t i = 0; i < n; i++) to[i]->deps[to[i]->ndeps++] = from[i];
  return cudaSuccess;
}
cudaError_t cudaGraphGetNodes(cudaGraph_t g, cudaGraphNode_t *nodes, size_t *n) {
  if (!g || !n) return fail(cudaErrorInvalidValue);
  if (!nodes) { *n = (size_t)g->n; return cudaSuccess; }
  size_t k = *n < (size_t)g->n ? *n : (size_t)g->n;
  for (size_t i = 0; i < k; i++) nodes[i] = &g->nodes[i];
  *n = k;
  return cudaSuccess;
}
static void to_params(cudaGraphNode_t node, struct cudaGraphNodeParams *p) {
  memset(p, 0, sizeof *p);
  p->type = node->type;
  if (node->type == cudaGraphNodeTypeMemset) p->memset = node->memset;
  if (node->type == cudaGraphNodeTypeHost) p->host = node->host;
  if (node->type == cudaGraphNodeTypeMemcpy) p->memcpy.copyParams = node->copy;
}
cudaError_t cudaGraphNodeGetParams(cudaGraphNode_t node, struct cudaGraphNodeParams *p) {
  if (!node || !p) return fail(cudaErrorInvalidValue);
  to_params(node, p);
  return cudaSuccess;
}
/* ---- ids and the containing graph (13.1) ---- */
cudaError_t cudaGraphGetId(cudaGraph_t g, unsigned int *id) {
  if (!g || !id) return fail(cudaErrorInvalidValue);
  *id = g->id;
  return cudaSuccess;
}
cudaError_t cudaGraphNodeGetLocalId(cudaGraphNode_t node, unsigned int *id) {
  if (!node || !id) return fail(cudaErrorInvalidValue);
  *id = node->local_id;
  return cudaSuccess;
}
cudaError_t cudaGraphNodeGetToolsId(cudaGraphNode_t node, unsigned long long *id) {
  if (!node || !id) return fail(cudaErrorInvalidValue);
  *id = ((unsigned long long)node->graph->id << 32) | node->local_id;
  return cudaSuccess;
}
cudaError_t cudaGraphNodeGetContainingGraph(cudaGraphNode_t node, cudaGraph_t *g) {
  if (!node || !g) return fail(cudaErrorInvalidValue);
  *g = node->graph;
  return cudaSuccess;
}
cudaError_t cudaGraphExecGetId(cudaGraphExec_t e, unsigned int *id) {
  if (!e || !id) return fail(cudaErrorInvalidValue);
  *id = e->id;
  return cudaSuccess;
}

/* ---- executable graphs: memsets write host memory, host nodes run ---- */
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long flags) {
  if (!e || !g || flags) return fail(cudaErrorInvalidValue);
  *e = calloc(1, sizeof **e);
  (*e)->id = next_exec_id++; (*e)->graph = g; (*e)->n = g->n;
  memcpy((*e)->nodes, g->nodes, sizeof g->nodes);
  return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) { free(e); return cudaSuccess; }
cudaError_t cudaGraphExecUpdate(cudaGraphExec_t e, cudaGraph_t g, cudaGraphExecUpdateResultInfo *info) {
  if (!e || !g || !info) return fail(cudaErrorInvalidValue);
  memset(info, 0, sizeof *info);
  for (int i = 0; i < g->n; i++)
    if (i >= e->n || g->nodes[i].type != e->nodes[i].type) {
      info->result = cudaGraphExecUpdateErrorTopologyChanged;
      return fail(cudaErrorGraphExecUpdateFailure);
    }
  if (g->n != e->n) { info->result = cudaGraphExecUpdateErrorTopologyChanged; return fail(cudaErrorGraphExecUpdateFailure); }
  memcpy(e->nodes, g->nodes, sizeof g->nodes);
  info->result = cudaGraphExecUpdateSuccess;
  return cudaSuccess;
}
static void run(struct CUgraphNode_st *node) {
  if (node->type == cudaGraphNodeTypeMemset && node->memset.dst)
    memset(node->memset.dst, (int)node->memset.value, node->memset.width * node->memset.height);
  if (node->type == cudaGraphNodeTypeHost && node->host.fn) node->host.fn(node->host.userData);
}
static cudaError_t launch(cudaGraphExec_t e) {
  if (!e) return fail(cudaErrorInvalidValue);
  for (int i = 0; i < e->n; i++) run(&e->nodes[i]);
  return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s) {
  (void)s;
  fake_runtime_calls++;
  return launch(e);
}

/* ---- streams, capture, recapture ---- */
cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned int flags, int priority) {
  (void)flags; (void)priority;
  *s = calloc(1, sizeof **s);
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) { free(s); return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t s) { (void)s; return cudaSuccess; }
cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *st) {
  fake_runtime_calls++;
  if (!s) return fail(cudaErrorStreamCaptureUnsupported);
  *st = s->status;
  return cudaSuccess;
}

#ifdef FAKE_DRIVER_DIRECT
#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
/* The driver's stand-ins: 999 is CUDA_ERROR_UNKNOWN, 900 CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED. */
int fake_no_context, fake_kernel_field;
static int fake_context;  /* the one context: its address */
static CUresult drv_ctx_get_current(CUcontext *ctx) {
  *ctx = fake_no_context ? NULL : (CUcontext)(void *)&fake_context;
  return CUDA_SUCCESS;
}
/* The current context's device; none current: the driver's CUDA_ERROR_INVALID_CONTEXT. */
int fake_driver_device_queries;
static CUresult drv_ctx_get_device(CUdevice *d) {
  fake_driver_device_queries++;
  if (fake_driver_refuses) return CUDA_ERROR_UNKNOWN;
  if (fake_no_context) return CUDA_ERROR_INVALID_CONTEXT;
  *d = fake_current_device;
  return CUDA_SUCCESS;
}
static CUresult drv_add_memset(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                               const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx) {
  fake_driver_calls++;
  if (fake_driver_refuses) return CUDA_ERROR_UNKNOWN;
  if (ctx != (CUcontext)(void *)&fake_context) return CUDA_ERROR_INVALID_CONTEXT;
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  cudaError_t e = add(out, g, cudaGraphNodeTypeMemset, deps, n);
  if (!e) memset_v2(&(*out)->memset, (void *)(uintptr_t)p->dst, p->value, p->elementSize, p->width, p->height, p->pitch);
  return e ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}
static CUresult drv_func_get_param_info(CUfunction f, size_t i, size_t *offset, size_t *size) {
  return cudaFuncGetParamInfo((const void *)f, i, offset, size) ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}
/* A library kernel (kern) runs in ctx, NULL: the current context; a function (func) in its own. */
static CUresult drv_add_kernel(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                               const CUDA_KERNEL_NODE_PARAMS *p) {
  fake_driver_calls++;
  if (fake_driver_refuses) return CUDA_ERROR_UNKNOWN;
  if (!p || !p->func == !p->kern) return CUDA_ERROR_INVALID_VALUE;
  if (p->kern && !p->ctx && fake_no_context) return CUDA_ERROR_INVALID_CONTEXT;
  struct cudaKernelNodeParams rp = {
    .func = p->func ? (void *)p->func : (void *)p->kern,
    .gridDim = {p->gridDimX, p->gridDimY, p->gridDimZ}, .blockDim = {p->blockDimX, p->blockDimY, p->blockDimZ},
    .sharedMemBytes = p->sharedMemBytes, .kernelParams = p->kernelParams, .extra = p->extra};
  cudaError_t e = add_kernel(out, g, deps, n, &rp);
  if (!e) fake_kernel_field = p->kern ? 1 : 2;
  return e ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}
/* Kernel launches (the driver's cuLaunchKernel, the runtime's cudaLaunchKernel): fake_launches
 * counts those made (fake_runtime_launches those through the runtime) and fake_last_launch holds
 * the last one, its argument values copied as FAKE_KERNEL_PARAMS lays them out.  A library kernel
 * on the NULL stream with no context current fails as the driver's does (the runtime's launch
 * makes one current); a launch on a capturing stream adds a kernel node to its graph instead. */
int fake_launches, fake_runtime_launches;
/* The C launches release the GIL, so threads launch at once: the record is kept under a lock, as
 * a driver's own bookkeeping is (the counts must not lose a launch) */
static pthread_mutex_t fake_launch_lock = PTHREAD_MUTEX_INITIALIZER;
struct {
  void *func, *stream;
  unsigned int grid[3], block[3], smem;
  unsigned char args[48];
} fake_last_launch;
static CUresult fake_launch(void *f, const unsigned int *dims, unsigned int smem, cudaStream_t s, void **params) {
  if (!f || !dims[0] || !dims[1] || !dims[2] || !dims[3] || !dims[4] || !dims[5] || !params || smem > 49152)
    return CUDA_ERROR_INVALID_VALUE;
  if (s && s->status != cudaStreamCaptureStatusNone) {
    struct cudaKernelNodeParams rp = {.func = f, .gridDim = {dims[0], dims[1], dims[2]},
                                      .blockDim = {dims[3], dims[4], dims[5]}, .sharedMemBytes = smem,
                                      .kernelParams = params};
    cudaGraphNode_t node;
    return s->recapture || add_kernel(&node, s->graph, NULL, 0, &rp) ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
  }
  pthread_mutex_lock(&fake_launch_lock);
  fake_launches++;
  fake_last_launch.func = f;
  fake_last_launch.stream = s;
  memcpy(fake_last_launch.grid, dims, 3 * sizeof *dims);
  memcpy(fake_last_launch.block, dims + 3, 3 * sizeof *dims);
  fake_last_launch.smem = smem;
  for (size_t i = 0; i < FAKE_KERNEL_NPARAMS; i++)
    memcpy(fake_last_launch.args + FAKE_KERNEL_PARAMS[i][0], params[i], FAKE_KERNEL_PARAMS[i][1]);
  pthread_mutex_unlock(&fake_launch_lock);
  return CUDA_SUCCESS;
}
static CUresult drv_launch_kernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                                  unsigned int by, unsigned int bz, unsigned int smem, CUstream s, void **params,
                                  void **extra) {
  const unsigned int dims[6] = {gx, gy, gz, bx, by, bz};
  if (fake_driver_refuses) return CUDA_ERROR_UNKNOWN;
  if (extra) return CUDA_ERROR_INVALID_VALUE;
  if (!s && fake_no_context) return CUDA_ERROR_INVALID_CONTEXT;
  return fake_launch((void *)f, dims, smem, (cudaStream_t)(void *)s, params);
}
cudaError_t cudaLaunchKernel(const void *f, dim3 grid, dim3 block, void **params, size_t smem, cudaStream_t s) {
  const unsigned int dims[6] = {grid.x, grid.y, grid.z, block.x, block.y, block.z};
  CUresult r = smem > 0xFFFFFFFFu ? CUDA_ERROR_INVALID_VALUE : fake_launch((void *)f, dims, (unsigned int)smem, s, params);
  if (r) return fail(cudaErrorInvalidValue);
  fake_no_context = 0;  /* the runtime makes the device's primary context current */
  pthread_mutex_lock(&fake_launch_lock);
  fake_runtime_launches++;
  pthread_mutex_unlock(&fake_launch_lock);
  return cudaSuccess;
}
static int drv_graph_launch(cudaGraphExec_t e, cudaStream_t s) {
  (void)s;
  fake_driver_calls++;
  return fake_driver_refuses || !e ? 999 : (int)launch(e);
}
static int drv_add_empty(cudaGraphNode_t *out, cudaGraph_t g, const cudaGraphNode_t *deps, size_t n) {
  fake_driver_calls++;
  return fake_driver_refuses ? 999 : (int)add(out, g, cudaGraphNodeTypeEmpty, deps, n);
}
static int drv_is_capturing(cudaStream_t s, enum cudaStreamCaptureStatus *st) {
  fake_driver_calls++;
  if (fake_driver_refuses) return 999;
  if (!s) return 900;
  *st = s->status;
  return 0;
}
cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned int version,
                                             unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *status) {
  (void)flags;
  *fn = !strcmp(symbol, "cuGraphLaunch") ? (void *)drv_graph_launch
      : !strcmp(symbol, "cuGraphAddEmptyNode") ? (void *)drv_add_empty
      : !strcmp(symbol, "cuStreamIsCapturing") ? (void *)drv_is_capturing
      : !strcmp(symbol, "cuGraphAddMemsetNode") ? (void *)drv_add_memset
      : !strcmp(symbol, "cuGraphAddKernelNode") && version >= 12000 ? (void *)drv_add_kernel
      : !strcmp(symbol, "cuCtxGetCurrent") ? (void *)drv_ctx_get_current
      : !strcmp(symbol, "cuCtxGetDevice") ? (void *)drv_ctx_get_device
      : !strcmp(symbol, "cuFuncGetParamInfo") ? (void *)drv_func_get_param_info
      : !strcmp(symbol, "cuLaunchKernel") ? (void *)drv_launch_kernel : NULL;
  if (status) *status = *fn ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
  return cudaSuccess;
}
#endif
cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode) {
  (void)mode;
  if (!s) return fail(cudaErrorStreamCaptureUnsupported);
  if (s->status != cudaStreamCaptureStatusNone) return fail(cudaErrorIllegalState);
  s->graph = new_graph(); s->status = cudaStreamCaptureStatusActive; s->recapture = 0;
  return cudaSuccess;
}
cudaError_t cudaStreamBeginRecaptureToGraph(cudaStream_t s, enum cudaStreamCaptureMode mode, cudaGraph_t g,
                                            struct cudaGraphRecaptureCallbackData *cb) {
  (void)mode;
  if (!s || !g) return fail(cudaErrorInvalidValue);
  if (s->status != cudaStreamCaptureStatusNone) return fail(cudaErrorIllegalState);
  s->graph = g; s->status = cudaStreamCaptureStatusActive; s->recapture = 1; s->next = 0;
  memset(&s->cb, 0, sizeof s->cb);
  if (cb) s->cb = *cb;
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g) {
  if (!s || s->status == cudaStreamCaptureStatusNone) return fail(cudaErrorIllegalState);
  int failed = s->status == cudaStreamCaptureStatusInvalidated || (s->recapture && s->next != s->graph->n);
  *g = failed ? NULL : s->graph;
  s->graph = NULL; s->status = cudaStreamCaptureStatusNone;
  if (failed) return fail(s->recapture ? cudaErrorGraphRecaptureFailure : cudaErrorStreamCaptureInvalidated);
  return cudaSuccess;
}
/* A captured work item: a new node, or, recapturing, the next node of the graph compared with it. */
static cudaError_t capture(cudaStream_t s, struct CUgraphNode_st *item) {
  if (!s->recapture) {
    cudaGraphNode_t node;
    cudaError_t e = add(&node, s->graph, item->type, NULL, 0);
    if (!e) { node->memset = item->memset; node->host = item->host; }
    return e;
  }
  if (s->status != cudaStreamCaptureStatusActive) return fail(cudaErrorStreamCaptureInvalidated);
  if (s->next >= s->graph->n || s->graph->nodes[s->next].type != item->type) {
    s->status = cudaStreamCaptureStatusInvalidated;  /* topology mismatch: fails at once */
    return fail(cudaErrorGraphRecaptureFailure);
  }
  cudaGraphNode_t node = &s->graph->nodes[s->next++];
  int changed = memcmp(&node->memset, &item->memset, sizeof item->memset) ||
                memcmp(&node->host, &item->host, sizeof item->host);
  if (changed && s->cb.callbackFunc) {
    struct cudaGraphNodeParams original, recaptured;
    to_params(node, &original);
    to_params(item, &recaptured);
    if (s->cb.callbackFunc(s->cb.userData, node, &original, &recaptured, cudaGraphRecaptureEligibleForUpdate)) {
      s->status = cudaStreamCaptureStatusInvalidated;
      return fail(cudaErrorGraphRecaptureFailure);
    }
  }
  node->memset = item->memset;
  node->host = item->host;
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *dst, int value, size_t count, cudaStream_t s) {
  struct CUgraphNode_st item = {0};
  item.type = cudaGraphNodeTypeMemset;
  memset_v2(&item.memset, dst, (unsigned)value & 0xff, 1, count, 1, 0);
  if (s && s->status != cudaStreamCaptureStatusNone) return capture(s, &item);
  run(&item);
  return cudaSuccess;
}
cudaError_t cudaLaunchHostFunc_v2(cudaStream_t s, cudaHostFn_t fn, void *userData, unsigned int syncMode) {
  if (!fn || syncMode > cudaHostTaskSpinWait) return fail(cudaErrorInvalidValue);
  struct CUgraphNode_st item = {0};
  item.type = cudaGraphNodeTypeHost;
  item.host.fn = fn; item.host.userData = userData; item.host.syncMode = syncMode;
  if (s && s->status != cudaStreamCaptureStatusNone) return capture(s, &item);
  run(&item);
  return cudaSuccess;
}
cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void *userData) {
  return cudaLaunchHostFunc_v2(s, fn, userData, cudaHostTaskBlocking);
}
