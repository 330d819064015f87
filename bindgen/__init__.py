"""bindgen: turn vendor runtime headers into pygraphrt's committed cffi bindings.

Stages, each usable and testable alone (in the manner of rust-bindgen):

1. :mod:`bindgen.preprocess` -- the system C compiler's preprocessor, C mode, host only;
2. :mod:`bindgen.parse` -- pycparser AST -> the parser-independent IR of :mod:`bindgen.ir`;
3. :mod:`bindgen.select` -- which functions, symbols, per-thread variants and constants;
4. :mod:`bindgen.emit` -- cffi out-of-line ABI module, IntEnum module, JSON manifest.

:mod:`bindgen.headersets` pins the header packages; :mod:`bindgen.generate` runs it all;
``python -m bindgen`` is the command line.
"""
