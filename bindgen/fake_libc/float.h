/* pygraphrt bindgen: empty stand-in for <float.h>; vendor headers use nothing of it in C. */
