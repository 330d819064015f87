/* pygraphrt bindgen: minimal stand-in for <cuda_runtime.h> where a header set outside the CUDA
 * runtime (nccl.h) includes it.  It declares only the runtime's types those headers name, as
 * the opaque pointers the runtime's own headers make them (same struct tags as driver_types.h,
 * so layouts are the same), and CUDART_VERSION, which they test.  The CUDA runtime itself is
 * bound by the cuda12 / cuda13 sets; pygraphrt passes their handles across as addresses.
 * (The real header cannot be preprocessed as host C without CCCL: cuda_fp16.h needs nv/target.) */
#ifndef PYGRAPHRT_STAND_IN_CUDA_RUNTIME_H
#define PYGRAPHRT_STAND_IN_CUDA_RUNTIME_H
#include <stddef.h> /* size_t: nccl.h relies on the real header having included it */
#define CUDART_VERSION 13000
typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
#endif
