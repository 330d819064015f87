/* pygraphrt bindgen: minimal stand-in for <stddef.h>, so that pycparser sees plain C.
   The names below are cffi built-ins; declarations from this folder never reach a binding. */
#ifndef PYGRAPHRT_FAKE_STDDEF_H
#define PYGRAPHRT_FAKE_STDDEF_H
typedef unsigned long size_t;
typedef long ptrdiff_t;
typedef int wchar_t;
#define NULL ((void*)0)
#define offsetof(t, m) __builtin_offsetof(t, m)
#endif
