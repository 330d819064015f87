/* pygraphrt bindgen: minimal stand-in for <stdbool.h>. */
#ifndef PYGRAPHRT_FAKE_STDBOOL_H
#define PYGRAPHRT_FAKE_STDBOOL_H
#define bool _Bool
#define true 1
#define false 0
#endif
