/* pygraphrt bindgen: empty stand-in for <string.h>; vendor headers use nothing of it in C. */
