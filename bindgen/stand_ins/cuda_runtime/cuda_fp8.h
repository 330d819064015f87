/* pygraphrt bindgen: empty stand-in for <cuda_fp8.h> (see cuda_runtime.h here): NCCL 2.27's
 * nccl.h includes it for CUDART_VERSION >= 11080 and declares nothing with an fp8 type in it. */
