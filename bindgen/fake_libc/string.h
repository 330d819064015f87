/* pygraphrt bindgen: minimal stand-in for <string.h>: size_t, which C says it defines (HIP 6.2's
 * hip_runtime_api.h uses size_t before including <stddef.h>). */
#include <stddef.h>
