/* pygraphrt bindgen: empty stand-in for <cuda_fp16.h> (see cuda_runtime.h here): the header
 * sets that include it declare no function or record with a __half in it. */
