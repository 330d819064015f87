/* pygraphrt bindgen: empty stand-in for <ctype.h>; vendor headers use nothing of it in C. */
