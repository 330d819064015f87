/* pygraphrt bindgen: minimal stand-in for <stdlib.h>: only the types vendor headers use. */
#include <stddef.h>
