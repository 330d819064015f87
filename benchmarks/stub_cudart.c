/* A do-nothing libcudart for measuring what pygraphrt's Python layer costs on top of the raw call.
 *
 * Compiled against the pinned CUDA 13.5 runtime headers (so every prototype is NVIDIA's) by
 * benchmarks/breakdown.py.  Each function checks its pointers and returns at once; handles are
 * distinct fake addresses (never dereferenced), so graphs of any size cost no memory.  Only
 * what the breakdown calls is defined: anything else is "not exported" and pygraphrt says so.
 */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <string.h>

static uintptr_t next_handle = 0x1000;
#define NEW(T) ((T)(next_handle += 64))

cudaError_t cudaRuntimeGetVersion(int *v) { if (!v) return cudaErrorInvalidValue; *v = CUDART_VERSION; return cudaSuccess; }
cudaError_t cudaDriverGetVersion(int *v) { if (!v) return cudaErrorInvalidValue; *v = CUDART_VERSION; return cudaSuccess; }
cudaError_t cudaGetDeviceCount(int *n) { if (!n) return cudaErrorInvalidValue; *n = 1; return cudaSuccess; }
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
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
cudaError_t cudaGraphAddDependencies(cudaGraph_t g, const cudaGraphNode_t *from, const cudaGraphNode_t *to,
                                     const cudaGraphEdgeData *edges, size_t n) {
  (void)edges; if (!g || (n && (!from || !to))) return cudaErrorInvalidValue; return cudaSuccess; }
cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, enum cudaGraphNodeType *t) {
  if (!node || !t) return cudaErrorInvalidValue; *t = cudaGraphNodeTypeEmpty; return cudaSuccess; }
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long flags) {
  (void)flags; if (!e || !g) return cudaErrorInvalidValue; *e = NEW(cudaGraphExec_t); return cudaSuccess; }
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) { return e ? cudaSuccess : cudaErrorInvalidValue; }
cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s) { (void)s; return e ? cudaSuccess : cudaErrorInvalidValue; }
