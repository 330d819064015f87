"""The header sets pygraphrt binds, the pinned packages they come from, and fetching.

Vendor headers are never copied into the repository: ``python -m bindgen fetch``
downloads the pinned wheels with pip (download only), checks each file's
sha256, and extracts just the include folders (and, for the tests, the runtime
libraries) into a cache outside git.  Users may point at their own toolkit
instead (``--cuda-include`` / ``--hip-include`` or CUDA_HOME / ROCM_PATH).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# bindgen's own minimal stand-ins for headers of another vendor library that a header set
# includes but does not bind (nccl.h includes cuda_runtime.h for cudaStream_t): like the libc
# stand-ins, they make the text parseable; unlike them, what they declare is kept, since the
# set's functions name it.
STAND_INS = Path(__file__).resolve().parent / "stand_ins"


@dataclass(frozen=True)
class Wheel:
    project: str
    version: str
    filename: str
    sha256: str
    # folders inside the wheel to extract, mapped to a name in the cache
    include: str
    libs: tuple[str, ...] = ()
    # An older release of a project pinned beside the current one (for a header
    # set's history): keyed ``project@version`` rather than by the project alone.
    older: bool = False

    @property
    def key(self) -> str:
        """The name header sets use for this wheel (and its folder in the cache)."""
        return f"{self.project}@{self.version}" if self.older else self.project


def _cu13(project: str, version: str, sha: str, lib: str | None, older: bool = True,
          tag: str = "manylinux2014_x86_64.manylinux_2_17_x86_64") -> Wheel:
    """A CUDA 13 component wheel (runtime, crt, nvrtc: all under nvidia/cu13/)."""
    filename = f"{project.replace('-', '_')}-{version}-py3-none-{tag}.whl"
    return Wheel(project, version, filename, sha, "nvidia/cu13/include",
                 (f"nvidia/cu13/lib/{lib}",) if lib else (), older)


def _nccl(version: str, sha: str, tag: str, older: bool = True, lib: bool = False) -> Wheel:
    """An ``nvidia-nccl-cu13`` wheel (nccl.h under nvidia/nccl/include, libnccl.so.2 under lib/)."""
    return Wheel("nvidia-nccl-cu13", version, f"nvidia_nccl_cu13-{version}-py3-none-{tag}.whl", sha,
                 "nvidia/nccl/include", ("nvidia/nccl/lib/libnccl.so.2",) if lib else (), older)


_NVRTC_TAG = "manylinux2010_x86_64.manylinux_2_12_x86_64"

WHEELS: dict[str, Wheel] = {w.key: w for w in [
    _cu13("nvidia-cuda-runtime", "13.5.37",
          "df2b79a8852f10d1fef8c848489c49eebb5754051bf870202a862831412b179d", "libcudart.so.13", older=False),
    _cu13("nvidia-cuda-crt", "13.5.37",
          "e898b7f73d3035fa89915a3f7bf3b54a73e90249746111aed295822c4729bb29", None, older=False),
    # The history of the cuda13 / cudadrv13 header sets: the newest release of each
    # earlier 13.x minor (which functions each declares: ``since`` in the manifests).
    _cu13("nvidia-cuda-runtime", "13.0.96",
          "7f82250d7782aa23b6cfe765ecc7db554bd3c2870c43f3d1821f1d18aebf0548", "libcudart.so.13"),
    _cu13("nvidia-cuda-runtime", "13.1.80",
          "dac25b52e69050e5a7a84957e6df470a85b185f8f648a99a1ab1dfce027576cf", None),
    _cu13("nvidia-cuda-runtime", "13.2.86",
          "3498247680dfddce31bad102af7e3e26fc795342a3cac64722bb0fa95e7f60f0", None),
    _cu13("nvidia-cuda-runtime", "13.3.29",
          "e04420616e72f563167a7733272992d7e6df6dc5cb54b2f94f9f1520ea9e30c1", None),
    _cu13("nvidia-cuda-runtime", "13.4.92",
          "9641f797da20ce1dd8e779b6e96d08cf9ba564cec8e8225458811ee26423f3a5", None),
    Wheel("nvidia-cuda-runtime-cu12", "12.9.79",
          "nvidia_cuda_runtime_cu12-12.9.79-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
          "25bba2dfb01d48a9b59ca474a1ac43c6ebf7011f1b0b8cc44f54eb6ac48a96c3",
          "nvidia/cuda_runtime/include", ("nvidia/cuda_runtime/lib/libcudart.so.12",)),
    Wheel("nvidia-cuda-nvcc-cu12", "12.9.86",
          "nvidia_cuda_nvcc_cu12-12.9.86-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl",
          "5d6a0d32fdc7ea39917c20065614ae93add6f577d840233237ff08e9a38f58f0",
          "nvidia/cuda_nvcc/include/crt"),
    _cu13("nvidia-cuda-nvrtc", "13.5.37",
          "86b4d68058807988b7d9af5b44917a0601e9c337f35ccd657bfb3c759ff8d8bc", "libnvrtc.so.13",
          older=False, tag=_NVRTC_TAG),
    _cu13("nvidia-cuda-nvrtc", "13.0.88",
          "ad9b6d2ead2435f11cbb6868809d2adeeee302e9bb94bcf0539c7a40d80e8575", "libnvrtc.so.13",
          tag=_NVRTC_TAG),
    _cu13("nvidia-cuda-nvrtc", "13.1.115",
          "d7cf1284ab82f379884decc8813d9d4a729bc96b1ec020a9cf80303f698d73c4", None, tag=_NVRTC_TAG),
    _cu13("nvidia-cuda-nvrtc", "13.2.86",
          "8111c5130e967b78222ea2124145f8efe9ce201b752b2579a2513100a53be1c5", None, tag=_NVRTC_TAG),
    _cu13("nvidia-cuda-nvrtc", "13.3.33",
          "82530788b8c6164a54d3fd9ae8bcca8893d397c4aeb998861982a03bbe41e204", None, tag=_NVRTC_TAG),
    _cu13("nvidia-cuda-nvrtc", "13.4.92",
          "5ce8c97b00b232c4f50c8c4b5a3b68cafee08bdb82ea86f2052ff01d03194f4a", None, tag=_NVRTC_TAG),
    Wheel("nvidia-cuda-nvrtc-cu12", "12.9.86",
          "nvidia_cuda_nvrtc_cu12-12.9.86-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl",
          "210cf05005a447e29214e9ce50851e83fc5f4358df8b453155d5e1918094dcb4",
          "nvidia/cuda_nvrtc/include", ("nvidia/cuda_nvrtc/lib/libnvrtc.so.12",)),
    # NCCL 2.32.3, the newest nvidia-nccl-cu13: nccl.h and the library its symbols are
    # checked against (the wheel is ~300 MB, nearly all libnccl.so.2; only these two are kept).
    _nccl("2.32.3", "1459723080ac889d73a26edfa3e04383a7928ab31ac8f0ec43b3ea9548b04ff3",
          "manylinux_2_27_x86_64", older=False, lib=True),
    # The nccl set's history: the newest release of each earlier 2.x minor that has a CUDA 13
    # wheel (2.27 is the first); headers only.
    _nccl("2.27.7", "b28a524abd8389b76a4a3f133c76a7aaa7005e47fcaa9d9603b90103927a3f93",
          "manylinux2014_x86_64.manylinux_2_17_x86_64"),
    _nccl("2.28.9", "e4553a30f34195f3fa1da02a6da3d6337d28f2003943aa0a3d247bbc25fefc42",
          "manylinux_2_18_x86_64"),
    _nccl("2.29.7", "edd81538446786ec3b73972543e53bb43bcaf0bfc8ef76cb679fcc390ffe136d",
          "manylinux_2_18_x86_64"),
    _nccl("2.30.7", "cefa7fdb9710efd0f39c5f1be1d61ff6fc9a996c451265bd7fbdcf9455ed4b50",
          "manylinux_2_18_x86_64"),
    _nccl("2.31.2", "0bcaf0308854cb55fcc35af72e2c83143f3b71e65a4e865e2c586b1cdcdb5ae0",
          "manylinux_2_18_x86_64"),
    # HIP 7.1.25424 (triton 3.9.0 carries the same HIP headers: no newer HIP 7 is pinnable).
    Wheel("triton", "3.8.0",
          "triton-3.8.0-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
          "e91ffa46d095b252248297292dd22bcbacd53a125a0c2eefbbbf74925a320bc3",
          "triton/backends/amd/include"),
    # HIP 6.2.41134 with hiprtc.h: the newest triton that carries HIP 6 (3.3.1-3.5.1 do;
    # 3.4.0's headers are byte-identical, 3.3.1's differ in comments only).
    Wheel("triton", "3.5.1",
          "triton-3.5.1-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
          "d2c6b915a03888ab931a9fd3e55ba36785e1fe70cbea0b40c6ef93b20fc85232",
          "triton/backends/amd/include", older=True),
]}


@dataclass(frozen=True)
class HeaderSet:
    """One binding: which headers, from where, with which defines."""

    name: str  # module name under pygraphrt._bindings
    vendor: str  # "cuda" | "hip" | "nvrtc" | "cudadrv" | "hiprtc" | "nccl"
    version: str
    packages: tuple[str, ...]  # WHEELS keys; the first provides the main include root
    headers: tuple[str, ...]  # what the entry file includes
    api_headers: tuple[str, ...]  # functions declared in these files are bound
    library: str  # the shared library the functions come from
    defines: dict[str, str] = field(default_factory=dict)
    # Defining this makes the headers rename functions to their per-thread-stream
    # variants; a second pass with it set collects those variants.
    per_thread_define: str | None = None
    per_thread_suffixes: tuple[str, ...] = ()
    constant_prefixes: tuple[str, ...] = ()
    # where the crt/ headers of a CUDA 12 set live, relative to the cache
    extra_roots: tuple[str, ...] = ()
    toolkit: str = "cuda"  # which --*-include / *_HOME applies
    # Earlier releases of the same major, oldest first: (version, WHEELS key standing in
    # for packages[0]).  Each function gets ``since``: the first of these versions (or
    # ``version``) whose headers declare it, so that a runtime older than the headers
    # can be told which functions it lacks.  Empty: every function counts as ``version``'s.
    history: tuple[tuple[str, str], ...] = ()
    # A folder of STAND_INS searched after the set's own headers (see STAND_INS).
    stand_ins: str | None = None

    @property
    def fetch_keys(self) -> tuple[str, ...]:
        """Every WHEELS key this set needs: its packages and its history."""
        return self.packages + tuple(key for _, key in self.history)


def _cu13_history(project: str, versions: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    return tuple((".".join(v.split(".")[:2]), f"{project}@{v}") for v in versions)


_NCCL_HISTORY = tuple((".".join(v.split(".")[:2]), f"nvidia-nccl-cu13@{v}")
                      for v in ("2.27.7", "2.28.9", "2.29.7", "2.30.7", "2.31.2"))
_RUNTIME13_HISTORY = _cu13_history("nvidia-cuda-runtime", ("13.0.96", "13.1.80", "13.2.86", "13.3.29", "13.4.92"))
_NVRTC13_HISTORY = _cu13_history("nvidia-cuda-nvrtc", ("13.0.88", "13.1.115", "13.2.86", "13.3.33", "13.4.92"))


HEADER_SETS: dict[str, HeaderSet] = {s.name: s for s in [
    HeaderSet("cuda12", "cuda", "12.9", ("nvidia-cuda-runtime-cu12", "nvidia-cuda-nvcc-cu12"),
              ("cuda_runtime_api.h",), ("cuda_runtime_api.h",), "libcudart.so.12",
              per_thread_define="CUDA_API_PER_THREAD_DEFAULT_STREAM",
              per_thread_suffixes=("_ptds", "_ptsz"),
              constant_prefixes=("cuda", "CUDA", "CUDART")),
    HeaderSet("cuda13", "cuda", "13.5", ("nvidia-cuda-runtime", "nvidia-cuda-crt"),
              ("cuda_runtime_api.h",), ("cuda_runtime_api.h",), "libcudart.so.13",
              per_thread_define="CUDA_API_PER_THREAD_DEFAULT_STREAM",
              per_thread_suffixes=("_ptds", "_ptsz"),
              constant_prefixes=("cuda", "CUDA", "CUDART"), history=_RUNTIME13_HISTORY),
    HeaderSet("hip7", "hip", "7.1", ("triton",),
              ("hip/hip_runtime_api.h",),
              ("hip/hip_runtime_api.h", "hip/amd_detail/amd_hip_runtime_pt_api.h"),
              "libamdhip64.so.7",
              defines={"__HIP_PLATFORM_AMD__": ""},
              per_thread_define="HIP_API_PER_THREAD_DEFAULT_STREAM",
              per_thread_suffixes=("_spt",),
              constant_prefixes=("hip", "HIP"), toolkit="hip"),
    HeaderSet("hip6", "hip", "6.2", ("triton@3.5.1",),
              ("hip/hip_runtime_api.h",),
              ("hip/hip_runtime_api.h", "hip/amd_detail/amd_hip_runtime_pt_api.h"),
              "libamdhip64.so.6",
              defines={"__HIP_PLATFORM_AMD__": ""},
              per_thread_define="HIP_API_PER_THREAD_DEFAULT_STREAM",
              per_thread_suffixes=("_spt",),
              constant_prefixes=("hip", "HIP"), toolkit="hip"),
    # The driver API, reached through the runtime's cudaGetDriverEntryPoint* (so no
    # libcuda is opened by name): kernel nodes the runtime API cannot describe.
    HeaderSet("cudadrv12", "cudadrv", "12.9", ("nvidia-cuda-runtime-cu12",),
              ("cuda.h",), ("cuda.h",), "libcuda.so.1",
              per_thread_define="CUDA_API_PER_THREAD_DEFAULT_STREAM",
              per_thread_suffixes=("_ptds", "_ptsz"), constant_prefixes=("cu", "CU")),
    HeaderSet("cudadrv13", "cudadrv", "13.5", ("nvidia-cuda-runtime",),
              ("cuda.h",), ("cuda.h",), "libcuda.so.1",
              per_thread_define="CUDA_API_PER_THREAD_DEFAULT_STREAM",
              per_thread_suffixes=("_ptds", "_ptsz"), constant_prefixes=("cu", "CU"),
              history=_RUNTIME13_HISTORY),
    HeaderSet("nvrtc12", "nvrtc", "12.9", ("nvidia-cuda-nvrtc-cu12",),
              ("nvrtc.h",), ("nvrtc.h",), "libnvrtc.so.12", constant_prefixes=("NVRTC",)),
    HeaderSet("nvrtc13", "nvrtc", "13.5", ("nvidia-cuda-nvrtc",),
              ("nvrtc.h",), ("nvrtc.h",), "libnvrtc.so.13", constant_prefixes=("NVRTC",),
              history=_NVRTC13_HISTORY),
    # HIPRTC from the only pinned HIP source that carries hiprtc.h (HIP 6.2, triton 3.5.1).
    # Its C API is the same on ROCm 6 and 7 (libhiprtc.so.6 / .so.7); pygraphrt loads either.
    HeaderSet("hiprtc", "hiprtc", "6.2", ("triton@3.5.1",),
              ("hip/hiprtc.h",), ("hip/hiprtc.h",), "libhiprtc.so",
              defines={"__HIP_PLATFORM_AMD__": ""}, constant_prefixes=("HIPRTC",), toolkit="hip"),
    # NCCL from the newest nvidia-nccl-cu13; its ABI (libnccl.so.2) is the same for CUDA 12
    # and 13 builds, so one binding serves nvidia-nccl-cu12 and -cu13 and torch's copy.
    # cuda_runtime.h (for cudaStream_t / cudaEvent_t) comes from bindgen's stand-ins.
    HeaderSet("nccl", "nccl", "2.32", ("nvidia-nccl-cu13",), ("nccl.h",), ("nccl.h",),
              "libnccl.so.2", constant_prefixes=("NCCL",), toolkit="nccl",
              history=_NCCL_HISTORY, stand_ins="cuda_runtime"),
]}


def cache_dir() -> Path:
    """Where fetched headers live: ``$PYGRAPHRT_HEADER_CACHE`` or ``<repo>/.cache/headers``."""
    return Path(os.environ.get("PYGRAPHRT_HEADER_CACHE", REPO / ".cache" / "headers"))


class FetchError(RuntimeError):
    pass


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _download(wheel: Wheel, wheels: Path) -> Path:
    target = wheels / wheel.filename
    if target.exists() and sha256(target) == wheel.sha256:
        return target
    wheels.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--python-version", "3.12", "--implementation", "cp",
           "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_27_x86_64",
           "--platform", "manylinux_2_18_x86_64", "--platform", "manylinux_2_17_x86_64",
           "--platform", "manylinux2014_x86_64",
           "--platform", "manylinux_2_12_x86_64", "--platform", "manylinux2010_x86_64",
           "--disable-pip-version-check", "-q", "-d", str(wheels),
           f"{wheel.project}=={wheel.version}"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0 or not target.exists():
        raise FetchError(f"pip download {wheel.project}=={wheel.version} failed:\n"
                         f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    digest = sha256(target)
    if digest != wheel.sha256:
        target.unlink()
        raise FetchError(f"{wheel.filename}: sha256 {digest} != pinned {wheel.sha256}")
    return target


def fetch(projects: list[str] | None = None, keep_wheels: bool = False) -> Path:
    """Download and extract the pinned wheels; return the cache folder."""
    cache = cache_dir()
    wheels_dir = cache / "wheels"
    for name in projects or list(WHEELS):
        wheel = WHEELS[name]
        stamp = cache / name / ".sha256"
        if stamp.exists() and stamp.read_text() == wheel.sha256:
            continue
        path = _download(wheel, wheels_dir)
        dest = cache / name
        if dest.exists():
            shutil.rmtree(dest)
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                name_in = info.filename
                if name_in.startswith(wheel.include + "/") and not info.is_dir():
                    rel = name_in[len(wheel.include) + 1:]
                    out = dest / "include" / rel
                elif name_in in wheel.libs:
                    out = dest / "lib" / Path(name_in).name
                else:
                    continue
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(zf.read(info))
        stamp.write_text(wheel.sha256)
        if not keep_wheels:
            path.unlink()
    return cache


def include_roots(hs: HeaderSet, override: Path | None = None) -> list[Path]:
    """Include folders for a header set: a user's toolkit if given, else the cache."""
    stand_ins = [STAND_INS / hs.stand_ins] if hs.stand_ins else []
    if override is not None:
        return [override] + stand_ins
    cache = cache_dir()
    roots: list[Path] = []
    for project in hs.packages:
        inc = cache / project / "include"
        if not inc.exists():
            raise FetchError(f"headers of {project} are not in {cache}; run `python -m bindgen fetch`")
        if project == "nvidia-cuda-nvcc-cu12":
            # This wheel's include/crt is extracted as include/: expose it as crt/.
            crt_parent = cache / project / "crt-root"
            if not (crt_parent / "crt").exists():
                crt_parent.mkdir(parents=True, exist_ok=True)
                (crt_parent / "crt").symlink_to(inc.resolve(), target_is_directory=True)
            roots.append(crt_parent)
        else:
            roots.append(inc)
    return roots + stand_ins


def history_roots(hs: HeaderSet, key: str) -> list[Path]:
    """Include folders of ``hs`` with the history wheel ``key`` in place of its first package."""
    roots = include_roots(hs)
    inc = cache_dir() / key / "include"
    if not inc.exists():
        raise FetchError(f"headers of {key} are not in {cache_dir()}; run `python -m bindgen fetch`")
    return [inc] + roots[1:]


def library_path(hs: HeaderSet) -> Path | None:
    """The runtime library extracted from the pinned wheel (tests use it), if any."""
    for project in hs.packages:
        for lib in WHEELS[project].libs:
            p = cache_dir() / project / "lib" / Path(lib).name
            if p.exists():
                return p
    return None


def user_toolkit_include(hs: HeaderSet, cuda_include: str | None, hip_include: str | None) -> Path | None:
    """The include folder of a user's toolkit for ``hs``, from flags or the environment."""
    if hs.toolkit == "nccl":  # a local NCCL build or package: $NCCL_HOME/include/nccl.h
        return Path(os.environ["NCCL_HOME"]) / "include" if os.environ.get("NCCL_HOME") else None
    if hs.toolkit == "hip":
        if hip_include:
            return Path(hip_include)
        for var in ("ROCM_PATH", "HIP_PATH"):
            if os.environ.get(var):
                return Path(os.environ[var]) / "include"
        return None
    if cuda_include:
        return Path(cuda_include)
    if os.environ.get("CUDA_HOME"):
        return Path(os.environ["CUDA_HOME"]) / "include"
    return None
