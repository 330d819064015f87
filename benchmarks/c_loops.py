"""The in-process C baseline: ``benchmarks/c_loops.c`` built with the system C compiler and
loaded beside pygraphrt, calling the entry points of the runtime library pygraphrt loaded.

Ratios against C need both sides from one process: the GPU machines' speed differs from one
process to the next, by up to 2x for the same raw call.  ``benchmarks/launch_bench.cu``, a
separate C++ program, is still run and reported; the targets against C use these loops.
"""

from __future__ import annotations

import ctypes
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Mapping

HERE = Path(__file__).resolve().parent

CDEF = """
int pgr_c_launch(void *fn, void *exec, void *stream, int n);
int pgr_c_is_capturing(void *fn, void *stream, int n);
int pgr_c_add_empty(void *fn, void *graph, void *root, int n, int chain);
int pgr_c_instantiate(void *fn, void *graph, void **exec);
int pgr_c_exec_destroy(void *fn, void *exec);
"""

# What each loop calls: the CUDA runtime entry point, by name.
ENTRY_POINTS = {"launch": "cudaGraphLaunch", "is_capturing": "cudaStreamIsCapturing",
                "add_empty": "cudaGraphAddEmptyNode", "instantiate": "cudaGraphInstantiateWithFlags",
                "exec_destroy": "cudaGraphExecDestroy"}


class CLoops:
    """The C loops of the shared library ``so``, each calling the function at the address
    ``fns`` gives for it (keys: those of :data:`ENTRY_POINTS`)."""

    def __init__(self, so: Path, fns: Mapping[str, int]) -> None:
        import cffi

        self.ffi = cffi.FFI()
        self.ffi.cdef(CDEF)
        self._lib = self.ffi.dlopen(str(so))
        missing = set(ENTRY_POINTS) - set(fns)
        if missing:
            raise ValueError(f"no address for {sorted(missing)}")
        self._fn = {k: self.ffi.cast("void *", fns[k]) for k in ENTRY_POINTS}

    def _ptr(self, handle: int) -> Any:
        return self.ffi.cast("void *", handle)

    @staticmethod
    def _check(rc: int, what: str) -> None:
        if rc:
            raise RuntimeError(f"C loop {ENTRY_POINTS[what]}: the runtime returned {rc}")

    def launch(self, exec_handle: int, stream: int, n: int) -> None:
        """``n`` launches of the executable graph ``exec_handle`` on ``stream``."""
        self._check(self._lib.pgr_c_launch(self._fn["launch"], self._ptr(exec_handle), self._ptr(stream), n),
                    "launch")

    def is_capturing(self, stream: int, n: int) -> None:
        """``n`` capture-status queries of ``stream``."""
        self._check(self._lib.pgr_c_is_capturing(self._fn["is_capturing"], self._ptr(stream), n), "is_capturing")

    def add_empty(self, graph: int, root: int, n: int, chain: bool) -> None:
        """``n`` empty nodes in ``graph``, a chain from node ``root`` or all depending on it."""
        self._check(self._lib.pgr_c_add_empty(self._fn["add_empty"], self._ptr(graph), self._ptr(root), n,
                                              int(chain)), "add_empty")

    def instantiate_and_destroy(self, graph: int) -> None:
        """``graph`` instantiated (what a caller times), then the executable graph destroyed."""
        out = self.ffi.new("void **")
        self._check(self._lib.pgr_c_instantiate(self._fn["instantiate"], self._ptr(graph), out), "instantiate")
        self._check(self._lib.pgr_c_exec_destroy(self._fn["exec_destroy"], out[0]), "exec_destroy")


def build(out_dir: Path) -> Path | None:
    """``c_loops.c`` built into ``out_dir``; None (and why, printed) where no C compiler is
    found or the build fails."""
    from bindgen.fast import have_compiler  # the project's one way to find the C compiler

    cc = have_compiler()
    if cc is None:
        print("no C compiler: the in-process C baseline is skipped")
        return None
    out = out_dir / "libpgr_c_loops.so"
    r = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(out), str(HERE / "c_loops.c")],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print("building the in-process C baseline failed; it is skipped:\n" + r.stderr[-2000:])
        return None
    return out


def load(library: str) -> CLoops | None:
    """The C loops calling the CUDA runtime at ``library``, a path pygraphrt loaded (dlopen
    gives back the handle pygraphrt holds, so the addresses are the ones it calls); None
    where they cannot be built."""
    rt = ctypes.CDLL(library)
    fns: dict[str, int] = {}
    for k, name in ENTRY_POINTS.items():
        address = ctypes.cast(getattr(rt, name), ctypes.c_void_p).value
        if not address:
            raise RuntimeError(f"{library}: {name} has no address")
        fns[k] = address
    with tempfile.TemporaryDirectory(prefix="pgr-c-loops-") as tmp:  # (a loaded library may be unlinked)
        so = build(Path(tmp))
        return CLoops(so, fns) if so is not None else None
