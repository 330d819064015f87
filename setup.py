"""Optional install-time hook: build the compiled fast path (cffi API mode) when possible.

``pip install`` of a source tree runs this; where a C compiler, cffi and pycparser are
present, the runtime bindings' extensions are compiled into the installed package from the
committed sources (``pygraphrt/_bindings/<name>/fast_source.json``).  Anything missing -- or any failure -- is skipped
silently: pygraphrt then runs in pure-Python cffi ABI mode, as always.  Editable installs
skip it (run ``python -m bindgen build-fast`` in the checkout instead).
"""

from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py


class build_py_with_fast_path(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        try:
            _build_fast(Path(self.build_lib) / "pygraphrt" / "_fastlib")
        except Exception:  # optional: no compiler, no cffi -> ABI mode
            pass


def _build_fast(out_dir):
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bindgen import fast
    from bindgen.generate import fast_source_of
    from bindgen.headersets import HEADER_SETS

    if fast.have_compiler() is None:
        return
    for name in fast.FAST_BINDINGS:  # from the committed sources: no headers needed
        fast.compile_source(fast_source_of(HEADER_SETS[name]), out_dir)


def _can_build_fast():
    """Whether the compiled fast path can be built here: a C compiler, cffi and pycparser."""
    import importlib.util
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
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
