/* pygraphrt bindgen: empty stand-in for <cuda_bf16.h> (see cuda_runtime.h here): the header
 * sets that include it declare no function or record with a __nv_bfloat16 in it. */
