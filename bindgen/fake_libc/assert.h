/* pygraphrt bindgen: empty stand-in for <assert.h>; vendor headers use nothing of it in C. */
