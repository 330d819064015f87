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
    assert [l.split()[0] for l in lines[1:]] == ["cuda12", "cuda13", "hip7", "hip6", "cudadrv12", "cudadrv13",
                                                "nvrtc12", "nvrtc13", "hiprtc", "nccl"]


def test_diff_cuda12_cuda13_shows_the_edge_data_folding():
    out = run("diff", "cuda12", "cuda13")
    assert "cudaStreamGetCaptureInfo: symbol cudaStreamGetCaptureInfo_v2 -> cudaStreamGetCaptureInfo" in out
    assert "cudaGraphAddDependencies: cudaError_t (cudaGraph_t graph, const cudaGraphNode_t * from, " \
           "const cudaGraphNode_t * to, size_t numDependencies) -> " in out
    assert "functions removed" in out and "cudaGraphAddDependencies_v2" in out
    assert run("diff", "cuda13", "cuda13").strip() == "no API differences"


def test_diff_against_a_history_release():
    """``name@version``: the binding generated from an earlier release of its header set's history."""
    out = run("diff", "cuda13@13.0", "cuda13", "--match", "Graph|Capture|HostFunc")
    added = out.split("functions added", 1)[1].split(":", 1)[1].split("\n\n")[0]
    for api in ("cudaGraphNodeGetParams", "cudaStreamBeginRecaptureToGraph", "cudaGraphGetId",
                "cudaGraphExecGetId", "cudaGraphNodeGetLocalId", "cudaGraphNodeGetToolsId",
                "cudaGraphNodeGetContainingGraph", "cudaGraphConditionalHandleCreate_v2",
                "cudaLaunchHostFunc_v2"):
        assert f"  {api}\n" in added, api
    assert "cudaMemcpyWithAttributesAsync" not in out  # --match keeps to the pattern
    assert "struct cudaGraphNodeParams: +memcpyBatch" in out
    assert "functions removed" not in out and "functions changed" not in out


def test_since_tables_come_from_the_history():
    """Each function newer than the oldest release of a set's history says which release added it."""
    import json

    from bindgen.generate import BINDINGS_DIR

    since = json.loads((BINDINGS_DIR / "cuda13" / "manifest.json").read_text())["since"]
    assert since["cudaGraphGetId"] == "13.1" and since["cudaGraphNodeGetParams"] == "13.2"
    assert since["cudaStreamBeginRecaptureToGraph"] == "13.3"
    assert since["cudaStreamBeginRecaptureToGraph_ptsz"] == "13.3"  # as old as its base
    assert "cudaGraphLaunch" not in since  # in 13.0: every 13.x runtime has it
    from pygraphrt._bindings.cuda13 import symbols

    assert symbols.SINCE["cudaLaunchHostFunc_v2"] == (13, 2)
    nvrtc = json.loads((BINDINGS_DIR / "nvrtc13" / "manifest.json").read_text())["since"]
    assert nvrtc["nvrtcGetTileIR"] == "13.2"
    drv = json.loads((BINDINGS_DIR / "cudadrv13" / "manifest.json").read_text())["since"]
    assert drv["cuGraphNodeGetParams"] == "13.2"


def test_nccl_since_table_and_its_cuda_stand_ins():
    """nccl's history gives ``since`` (2.27 is the oldest: what it declares is unmarked); the
    CUDA runtime types nccl.h names come from bindgen's stand-ins, spelt as the cuda13 binding
    spells them (so a stream of one binding is the same pointer type in the other)."""
    import json

    from bindgen.generate import BINDINGS_DIR

    nccl = json.loads((BINDINGS_DIR / "nccl" / "manifest.json").read_text())
    assert nccl["since"]["ncclAlltoAll"] == "2.28" and nccl["since"]["ncclCommGetUniqueId"] == "2.29"
    assert nccl["since"]["ncclAllReduceConfig"] == "2.31"
    assert "ncclAllReduce" not in nccl["since"] and "ncclCommInitRankConfig" not in nccl["since"]
    cuda13 = json.loads((BINDINGS_DIR / "cuda13" / "manifest.json").read_text())
    for name in ("cudaStream_t", "cudaEvent_t"):
        assert nccl["typedefs"][name] == cuda13["typedefs"][name], name
    from pygraphrt._bindings.nccl import symbols

    assert symbols.SINCE["ncclCommGetUniqueId"] == (2, 29)
    assert symbols.CONSTANTS["NCCL_UNIQUE_ID_BYTES"] == 128
