"""Install-time hook: build the compiled fast path (cffi API mode) where a C compiler exists.

``pip install`` of a source tree or of the sdist runs this; where a C compiler, cffi and
pycparser are present, the runtime bindings' extensions are compiled into the installed package
from the committed sources (``pygraphrt/_bindings/<name>/fast_source.json``, through
``bindgen/fast.py``: the sdist carries both).  Where that cannot be done the install goes on in
pure-Python cffi ABI mode -- but never silently: what was built, or why nothing was, is written
to ``pygraphrt/_fastlib/build.json`` in the installed package, and ``python -m pygraphrt info``
says it at run time (pip hides a build's output).  ``PYGRAPHRT_BUILD_FAST=1`` makes a build that
cannot compile every extension fail instead (``scripts/wheels`` sets it: a platform wheel never
lacks them); ``PYGRAPHRT_BUILD_FAST=0`` makes the pure ``py3-none-any`` wheel (ABI mode) even where
a compiler exists.  Editable installs skip it (run ``python -m bindgen build-fast`` in the checkout).
"""

import json
import os
import sys
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
#: Written beside the extensions (pygraphrt._fast.BUILD_RECORD reads it).
BUILD_RECORD = "build.json"


class build_py_with_fast_path(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        out_dir = Path(self.build_lib) / "pygraphrt" / "_fastlib"
        record = _build_fast(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / BUILD_RECORD).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        if record["why_not"]:
            message = (f"pygraphrt: the compiled fast path was not built ({record['why_not']}); "
                       "this install runs in cffi ABI mode")
            if os.environ.get("PYGRAPHRT_BUILD_FAST") == "1":
                raise SystemExit(f"{message} and PYGRAPHRT_BUILD_FAST=1 requires it")
            print(f"WARNING: {message}", file=sys.stderr)


def _build_fast(out_dir):
    """Compile every fast-path binding into ``out_dir``; the build record: which were built
    (``built``), the compiler (``compiler``: its file name) and why any was not (``why_not``)."""
    record = {"built": [], "compiler": None, "why_not": None}
    if os.environ.get("PYGRAPHRT_BUILD_FAST") == "0":
        record["why_not"] = "a pure-Python build (PYGRAPHRT_BUILD_FAST=0); the platform wheels carry the compiled path"
        return record
    try:
        sys.path.insert(0, str(HERE))
        from bindgen import fast
    except Exception as exc:  # cffi missing (bindgen.emit needs it), or a source without bindgen/
        record["why_not"] = f"cannot load bindgen's fast-path builder: {type(exc).__name__}: {exc}"
        return record
    cc = fast.have_compiler()
    if cc is None:
        record["why_not"] = ("built without a C compiler: " + (f"CC={os.environ['CC']!r} was not found"
                             if os.environ.get("CC") else "none of cc, gcc, clang on PATH and CC unset"))
        return record
    record["compiler"] = os.path.basename(cc)
    try:
        import pycparser  # noqa: F401  (cffi's compile parses the cdef with it)
    except ImportError:
        record["why_not"] = "built without pycparser (cffi needs it to compile)"
        return record
    for name in fast.FAST_BINDINGS:  # from the committed sources: no headers needed
        try:
            src = fast.load_source(HERE / "pygraphrt" / "_bindings" / name / fast.SOURCE_FILE)
            fast.compile_source(src, out_dir)
        except Exception as exc:  # the compiler's own messages went to the (hidden) build log
            record["why_not"] = f"building binding {name} with {record['compiler']} failed: {type(exc).__name__}: {exc}"
            break
        record["built"].append(name)
    for stamp in Path(out_dir).glob("_*.stamp"):  # build-fast's up-to-date marks: no use installed
        stamp.unlink()
    return record


def _can_build_fast():
    """Whether the compiled fast path can be built here: a C compiler, cffi and pycparser."""
    import importlib.util

    if os.environ.get("PYGRAPHRT_BUILD_FAST") == "0":
        return False
    sys.path.insert(0, str(HERE))
    try:
        from bindgen import fast
    except Exception:
        return False
    return (fast.have_compiler() is not None and importlib.util.find_spec("cffi") is not None
            and importlib.util.find_spec("pycparser") is not None)


class MaybeBinaryDistribution(Distribution):
    """A wheel that carries the compiled extensions is a platform wheel (``cp3XX-cp3XX-<platform>``),
    not ``py3-none-any``: the extensions are built for one interpreter and platform.  Where they
    cannot be built the wheel stays pure Python (ABI mode everywhere).  bdist_wheel asks before
    building, so this answers from what the build will find."""

    def has_ext_modules(self):
        return super().has_ext_modules() or _can_build_fast()


setup(cmdclass={"build_py": build_py_with_fast_path}, distclass=MaybeBinaryDistribution)
