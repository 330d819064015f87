"""bindgen's command line: --stats and diff on the committed bindings."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run(*args):
    return subprocess.run([sys.executable, "-m", "bindgen", *args], capture_output=True, text=True,
                          cwd=str(REPO), check=True).stdout


def test_stats_lists_every_binding():
    out = run("--stats")
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["binding", "functions", "enums"]
    assert [l.split()[0] for l in lines[1:]] == ["cuda12", "cuda13", "hip7", "cudadrv12", "cudadrv13", "nvrtc12", "nvrtc13"]


def test_diff_cuda12_cuda13_shows_the_edge_data_folding():
    out = run("diff", "cuda12", "cuda13")
    assert "cudaStreamGetCaptureInfo: symbol cudaStreamGetCaptureInfo_v2 -> cudaStreamGetCaptureInfo" in out
    assert "cudaGraphAddDependencies: cudaError_t (cudaGraph_t graph, const cudaGraphNode_t * from, " \
           "const cudaGraphNode_t * to, size_t numDependencies) -> " in out
    assert "functions removed" in out and "cudaGraphAddDependencies_v2" in out
    assert run("diff", "cuda13", "cuda13").strip() == "no API differences"
