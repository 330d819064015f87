"""Cross-check against NVIDIA's own bindings, and against the libraries' exported symbols.

* every member of every graph / capture / error enum in ``cuda.bindings.runtime``
  (pinned 12.9.4 and 13.5.0, each installed into its own folder by
  ``scripts/test``) exists in our binding of the same major with the same value
  (skipped, saying so, where PyPI has no wheel of one for this Python);
* every ``cudaGraph*`` / ``cudaStream*Capture*`` / ``cudaDeviceGraphMem*``
  function there is in our manifest;
* every bound CUDA/NVRTC/NCCL function's symbol is exported by the library from the
  pinned wheel (dlsym; no GPU needed);
* every ``extern __host__ ... CUDARTAPI`` declaration of ``cuda_runtime_api.h``
  and every ``hipError_t`` API of ``hip_runtime_api.h`` is bound.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bindgen.headersets import HEADER_SETS, REPO, include_roots, library_path

from .conftest import load_manifest

NVIDIA_PINS = {"cuda12": "12.9.4", "cuda13": "13.5.0"}


def _nvidia_dump(binding: str) -> dict:
    target = REPO / ".cache" / f"cuda-bindings-{NVIDIA_PINS[binding]}"
    if not (target / "cuda" / "bindings").exists():
        unavailable = target.with_name(f"{target.name}.unavailable-py{sys.version_info[0]}.{sys.version_info[1]}")
        if unavailable.exists():  # scripts/_env found no wheel of it for this Python on PyPI
            pytest.skip(unavailable.read_text().strip())
        pytest.fail(f"cuda-bindings {NVIDIA_PINS[binding]} is not installed in {target}; "
                    "run scripts/test (it installs it)")
    env = dict(os.environ, PYTHONPATH=str(target))
    out = subprocess.run([sys.executable, str(Path(__file__).with_name("nvidia_dump.py"))],
                         env=env, capture_output=True, text=True, check=True, cwd="/")
    return json.loads(out.stdout)


def _our_enum(manifest: dict, name: str) -> dict | None:
    enums = manifest["enums"]
    for candidate in (f"enum {name}", name, manifest["typedefs"].get(name, "")):
        if candidate in enums:
            return enums[candidate]
    return None


@pytest.mark.parametrize("binding", ["cuda12", "cuda13"])
def test_enums_and_functions_match_cuda_bindings(binding, fetched):
    ours = load_manifest(binding)
    theirs = _nvidia_dump(binding)
    assert theirs["version"] == NVIDIA_PINS[binding]
    members = 0
    for cls, values in theirs["enums"].items():
        mine = _our_enum(ours, cls)
        assert mine is not None, f"{cls} missing from {binding}"
        for member, value in values.items():
            assert mine.get(member) == value, f"{cls}.{member}: ours {mine.get(member)} vs {value}"
            members += 1
    missing = [f for f in theirs["functions"] if f not in ours["functions"]]
    assert not missing, missing
    assert len(theirs["enums"]) >= 15 and len(theirs["functions"]) >= 60
    print(f"{binding}: {len(theirs['enums'])} enums / {members} members and "
          f"{len(theirs['functions'])} functions of cuda-bindings {theirs['version']} agree")


@pytest.mark.parametrize("binding", ["cuda12", "cuda13", "nvrtc12", "nvrtc13", "nccl"])
def test_every_symbol_is_exported_by_the_wheel_library(binding, fetched):
    path = library_path(HEADER_SETS[binding])
    assert path is not None, f"{HEADER_SETS[binding].library} not extracted; run python -m bindgen fetch"
    lib = ctypes.CDLL(str(path))
    missing = []
    for api, fn in load_manifest(binding)["functions"].items():
        try:
            getattr(lib, fn["symbol"])
        except AttributeError:
            missing.append(f"{api} -> {fn['symbol']}")
    assert not missing, missing


@pytest.mark.parametrize("binding", ["cuda12", "cuda13"])
def test_whole_cuda_runtime_api_is_bound(binding, fetched):
    header = include_roots(HEADER_SETS[binding])[0] / "cuda_runtime_api.h"
    text = header.read_text()
    # The block under __CUDA_API_VERSION_INTERNAL re-declares legacy ABI entry
    # points for the runtime's own build; it is not part of the public API.
    start = text.index("#if defined(__CUDA_API_VERSION_INTERNAL)")
    end = text.index("#elif defined(__CUDART_API_PER_THREAD_DEFAULT_STREAM)", start)
    public = text[:start] + text[end:]
    names = set(re.findall(r"extern\s+__host__[^;(]*?cudaError_t\s+CUDARTAPI\s+(\w+)\s*\(", public))
    bound = load_manifest(binding)["functions"]
    missing = sorted(n for n in names if n not in bound)
    assert not missing, missing
    assert len(names) > 250


@pytest.mark.parametrize("binding", ["hip6", "hip7"])
def test_whole_hip_runtime_api_is_bound(binding, fetched):
    root = include_roots(HEADER_SETS[binding])[0]
    text = (root / "hip" / "hip_runtime_api.h").read_text()
    # C++-only declarations are not C API: the hip_impl namespace, and static
    # inline helpers (hipLaunchKernelEx is a template wrapper, not an export).
    text = re.sub(r"namespace hip_impl \{.*?\}", "", text, flags=re.S)
    names = set(re.findall(r"(?m)^(?!\s*static)\s*(?:\w+(?:\([^)]*\))?\s+)*?hipError_t\s+(hip\w+)\s*\(",
                           text))
    bound = load_manifest(binding)["functions"]
    missing = sorted(n for n in names if n not in bound)
    assert not missing, missing
    assert len(names) > 400
