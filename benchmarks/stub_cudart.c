/* A do-nothing libcudart for measuring what pygraphrt's Python layer costs on top of the raw call.
 *
 * Compiled against the pinned CUDA 13.5 runtime headers (so every prototype is NVIDIA's) by
 * benchmarks/breakdown.py.  Each function checks its pointers and returns at once; handles are
 * distinct fake addresses (never dereferenced), so graphs of any size cost no memory.  Only
 * what the breakdown calls is defined: anything else is "not exported" and pygraphrt says so.
 * The few driver functions a kernel launch uses (cuCtxGetCurrent, cuKernelGetFunction,
 * cuLaunchKernel) are handed out by cudaGetDriverEntryPointByVersion, as the real runtime
 * does, with their prototypes from the pinned cuda.h; the stub's one "kernel" takes one
 * pointer parameter (cudaFuncGetParamInfo says so), like the benchmark's tiny kernel.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <string.h>

static uintptr_t next_handle = 0x1000;
#define NEW(T) ((T)(next_handle += 64))

cudaError_t cudaRuntimeGetVersion(int *v) { if (!v) return cudaErrorInvalidValue; *v = CUDART_VERSION; return cudaSuccess; }
cudaError_t cudaDriverGetVersion(int *v) { if (!v) return cudaErrorInvalidValue; *v = CUDART_VERSION; return cudaSuccess; }
cudaError_t cudaGetDeviceCount(int *n) { if (!n) return cudaErrorInvalidValue; *n = 1; return cudaSuccess; }
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
/* one device, current from the start (device= on the graph adds asks which is current) */
static int stub_device;
cudaError_t cudaGetDevice(int *d) { if (!d) return cudaErrorInvalidValue; *d = stub_device; return cudaSuccess; }
cudaError_t cudaSetDevice(int d) { if (d != 0) return cudaErrorInvalidDevice; stub_device = d; return cudaSuccess; }
const char *cudaGetErrorName(cudaError_t e) { return e ? "cudaErrorUnknown" : "cudaSuccess"; }
const char *cudaGetErrorString(cudaError_t e) { return e ? "stub error" : "no error"; }

cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned int flags, int prio) {
  (void)flags; (void)prio; if (!s) return cudaErrorInvalidValue; *s = NEW(cudaStream_t); return cudaSuccess; }
cudaError_t cudaStreamDestroy(cudaStream_t s) { return s ? cudaSuccess : cudaErrorInvalidResourceHandle; }
cudaError_t cudaStreamSynchronize(cudaStream_t s) { (void)s; return cudaSuccess; }
cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *st) {
  (void)s; if (!st) return cudaErrorInvalidValue; *st = cudaStreamCaptureStatusNone; return cudaSuccess; }

cudaError_t cudaGraphCreate(cudaGraph_t *g, unsigned int flags) {
  if (!g || flags) return cudaErrorInvalidValue; *g = NEW(cudaGraph_t); return cudaSuccess; }
cudaError_t cudaGraphDestroy(cudaGraph_t g) { return g ? cudaSuccess : cudaErrorInvalidValue; }
cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t *out, cudaGraph_t g, const cudaGraphNode_t *deps, size_t n) {
  if (!out || !g || (n && !deps)) return cudaErrorInvalidValue; *out = NEW(cudaGraphNode_t); return cudaSuccess; }
cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t *out, cudaGraph_t g, const cudaGraphNode_t *deps, size_t n,
                                   const struct cudaMemsetParams *p) {
  if (!out || !g || !p || (n && !deps)) return cudaErrorInvalidValue; *out = NEW(cudaGraphNode_t); return cudaSuccess; }
cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t *out, cudaGraph_t g, const cudaGraphNode_t *deps, size_t n,
                                   const struct cudaKernelNodeParams *p) {
  if (!out || !g || !p || !p->func || (n && !deps)) return cudaErrorInvalidValue;
  *out = NEW(cudaGraphNode_t); return cudaSuccess; }
cudaError_t cudaGraphAddDependencies(cudaGraph_t g, const cudaGraphNode_t *from, const cudaGraphNode_t *to,
                                     const cudaGraphEdgeData *edges, size_t n) {
  (void)edges; if (!g || (n && (!from || !to))) return cudaErrorInvalidValue; return cudaSuccess; }
/* the compute graph's work (benchmarks/compute.py): copy nodes, and the setters its updates call */
cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t *out, cudaGraph_t g, const cudaGraphNode_t *deps, size_t n,
                                     void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) {
  (void)dst; (void)src; (void)count; (void)kind;
  if (!out || !g || (n && !deps)) return cudaErrorInvalidValue; *out = NEW(cudaGraphNode_t); return cudaSuccess; }
cudaError_t cudaGraphMemcpyNodeSetParams1D(cudaGraphNode_t node, void *dst, const void *src, size_t count,
                                           enum cudaMemcpyKind kind) {
  (void)dst; (void)src; (void)count; (void)kind; return node ? cudaSuccess : cudaErrorInvalidValue; }
cudaError_t cudaGraphExecMemcpyNodeSetParams1D(cudaGraphExec_t e, cudaGraphNode_t node, void *dst, const void *src,
                                               size_t count, enum cudaMemcpyKind kind) {
  (void)dst; (void)src; (void)count; (void)kind; return e && node ? cudaSuccess : cudaErrorInvalidValue; }
cudaError_t cudaGraphKernelNodeGetParams(cudaGraphNode_t node, struct cudaKernelNodeParams *p) {
  if (!node || !p) return cudaErrorInvalidValue; memset(p, 0, sizeof *p); p->func = (void *)0x5000; return cudaSuccess; }
cudaError_t cudaGraphKernelNodeSetParams(cudaGraphNode_t node, const struct cudaKernelNodeParams *p) {
  return node && p && p->func ? cudaSuccess : cudaErrorInvalidValue; }
cudaError_t cudaGraphExecKernelNodeSetParams(cudaGraphExec_t e, cudaGraphNode_t node, const struct cudaKernelNodeParams *p) {
  return e && node && p && p->func ? cudaSuccess : cudaErrorInvalidValue; }
cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, enum cudaGraphNodeType *t) {
  if (!node || !t) return cudaErrorInvalidValue; *t = cudaGraphNodeTypeEmpty; return cudaSuccess; }
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long flags) {
  (void)flags; if (!e || !g) return cudaErrorInvalidValue; *e = NEW(cudaGraphExec_t); return cudaSuccess; }
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) { return e ? cudaSuccess : cudaErrorInvalidValue; }
cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s) { (void)s; return e ? cudaSuccess : cudaErrorInvalidValue; }

/* ---- device memory: fake addresses, nothing allocated ---- */
cudaError_t cudaMalloc(void **p, size_t size) {
  (void)size; if (!p) return cudaErrorInvalidValue; *p = NEW(void *); return cudaSuccess; }
cudaError_t cudaFree(void *p) { (void)p; return cudaSuccess; }

/* ---- kernel launch: the runtime's parameter query and the driver entry points ---- */
cudaError_t cudaFuncGetParamInfo(const void *func, size_t i, size_t *offset, size_t *size) {
  if (!func || !offset || !size || i >= 1) return cudaErrorInvalidValue;
  *offset = 0; *size = sizeof(void *); return cudaSuccess; }

/* What the tests look at (tests/test_launch_hot.py): launches made, the first parameter's
 * 8 bytes and the grid's x of the last one; the current context (NULL: none, as on a thread that
 * has made no runtime call -- a launch on the NULL stream then fails as the driver's does). */
int stub_launches, stub_runtime_launches;
unsigned long long stub_last_arg0;
unsigned int stub_last_grid_x;
void *stub_context = (void *)0x7000;
static CUresult stub_cuCtxGetCurrent(CUcontext *ctx) {
  if (!ctx) return CUDA_ERROR_INVALID_VALUE; *ctx = (CUcontext)stub_context; return CUDA_SUCCESS; }
static CUresult stub_cuKernelGetFunction(CUfunction *f, CUkernel k) {
  if (!f || !k) return CUDA_ERROR_INVALID_VALUE; *f = (CUfunction)((uintptr_t)k + 8); return CUDA_SUCCESS; }
static CUresult stub_cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                    unsigned int bx, unsigned int by, unsigned int bz, unsigned int smem,
                                    CUstream s, void **params, void **extra) {
  (void)extra;
  if (!f || !gx || !gy || !gz || !bx || !by || !bz || !params || !params[0] || smem > 49152)
    return CUDA_ERROR_INVALID_VALUE;
  if (!s && !stub_context) return CUDA_ERROR_INVALID_CONTEXT;
  stub_launches++; memcpy(&stub_last_arg0, params[0], 8); stub_last_grid_x = gx;
  return CUDA_SUCCESS; }
cudaError_t cudaLaunchKernel(const void *f, dim3 grid, dim3 block, void **params, size_t smem, cudaStream_t s) {
  (void)block; (void)smem; (void)s;
  if (!f || !params || !params[0]) return cudaErrorInvalidValue;
  stub_context = (void *)0x7000;  /* the runtime makes the primary context current */
  stub_runtime_launches++; memcpy(&stub_last_arg0, params[0], 8); stub_last_grid_x = grid.x;
  return cudaSuccess; }

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned int version,
                                             unsigned long long flags, enum cudaDriverEntryPointQueryResult *st) {
  (void)version; (void)flags;
  if (!symbol || !fn) return cudaErrorInvalidValue;
  *fn = !strcmp(symbol, "cuCtxGetCurrent") ? (void *)stub_cuCtxGetCurrent
      : !strcmp(symbol, "cuKernelGetFunction") ? (void *)stub_cuKernelGetFunction
      : !strcmp(symbol, "cuLaunchKernel") ? (void *)stub_cuLaunchKernel : NULL;
  if (st) *st = *fn ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
  return cudaSuccess; }
