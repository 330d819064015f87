#!/usr/bin/env python3
"""What the installed torch exposes to pygraphrt.torch (issue 44), printed for a quick fix on a GPU.

    python scripts/torch-probe.py        # on the GPU machine, with torch (and pygraphrt) importable

Prints torch's version and CUDA, the CUDAGraph methods pygraphrt.torch relies on, whether
raw_cuda_graph() refuses a graph made without keep_graph / not captured / reset (and how), whether
the generators' offsets move over one replay() of a graph with and without dropout (how
pygraphrt.torch measures ``uses_rng``), what a plain cudaGraphLaunch of the executable does to a
dropout mask, and the node types of a captured graph.  Every probe is guarded: one failing prints
its error and the rest go on.
"""

from __future__ import annotations

import sys
import traceback


def probe(title: str, fn) -> None:
    print(f"\n== {title}")
    try:
        fn()
    except Exception:
        traceback.print_exc(file=sys.stdout)


def main() -> int:
    import torch

    print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
    if not torch.cuda.is_available():
        return 1
    print("device", torch.cuda.get_device_name(0))
    G = torch.cuda.CUDAGraph
    names = ["capture_begin", "capture_end", "replay", "reset", "pool", "instantiate", "raw_cuda_graph",
             "raw_cuda_graph_exec", "register_generator_state", "_keep_graph", "_has_graph_exec"]
    probe("CUDAGraph attributes", lambda: [print(f"  {n}: {hasattr(G(keep_graph=True), n)}") for n in names])
    probe("CUDAGraph.capture_begin signature", lambda: print(" ", G.capture_begin.__doc__.splitlines()[0]
                                                             if G.capture_begin.__doc__ else "(no doc)"))
    probe("torch._C._cuda_endAllocateToPool", lambda: print(" ", hasattr(torch._C, "_cuda_endAllocateToPool")))
    probe("ExternalStream", lambda: print(" ", torch.cuda.ExternalStream))

    def not_kept():
        g = G()
        x = torch.ones(4, device="cuda")
        with torch.cuda.graph(g):
            x.add_(1)
        try:
            print("  keep_graph=False raw_cuda_graph() ->", g.raw_cuda_graph())
        except Exception as e:
            print("  keep_graph=False raw_cuda_graph() raises", type(e).__name__, str(e)[:200])
        k = G(keep_graph=True)
        try:
            print("  not captured raw_cuda_graph() ->", k.raw_cuda_graph())
        except Exception as e:
            print("  not captured raw_cuda_graph() raises", type(e).__name__, str(e)[:200])
        with torch.cuda.graph(k):
            x.add_(1)
        print("  captured raw_cuda_graph() ->", hex(k.raw_cuda_graph()), "type", type(k.raw_cuda_graph()).__name__)
        k.reset()
        try:
            print("  after reset raw_cuda_graph() ->", k.raw_cuda_graph())
        except Exception as e:
            print("  after reset raw_cuda_graph() raises", type(e).__name__, str(e)[:200])
    probe("raw_cuda_graph refusals", not_kept)

    def offsets():
        gen = torch.cuda.default_generators[0]
        ones = torch.ones(4096, device="cuda")
        out = torch.empty_like(ones)
        for label, body in (("dropout", lambda: out.copy_(torch.nn.functional.dropout(ones, 0.5))),
                            ("no RNG", lambda: out.copy_(ones * 2))):
            g = G(keep_graph=True)
            before_capture = gen.get_offset()
            with torch.cuda.graph(g):
                body()
            after_capture = gen.get_offset()
            g.instantiate()
            a = gen.get_offset()
            g.replay()
            b = gen.get_offset()
            torch.cuda.synchronize()
            m1 = out.clone()
            g.replay()
            torch.cuda.synchronize()
            m2 = out.clone()
            print(f"  {label}: offset over capture {before_capture}->{after_capture}, over replay {a}->{b}; "
                  f"two replays equal: {torch.equal(m1, m2)}")
            if label == "dropout":
                from pygraphrt import lowlevel
                import pygraphrt as rt

                s = rt.Stream()
                exe = lowlevel.ffi.cast("cudaGraphExec_t", g.raw_cuda_graph_exec())
                masks = []
                for _ in range(2):
                    lowlevel.check(lowlevel.lib.cudaGraphLaunch(exe, s.handle), "cudaGraphLaunch")
                    s.synchronize()
                    masks.append(out.clone())
                print(f"  dropout via plain cudaGraphLaunch twice: equal masks: {torch.equal(*masks)}")
    probe("generator offsets over capture and replay (uses_rng measurement)", offsets)

    def node_types():
        import pygraphrt as rt

        g = G(keep_graph=True)
        x = torch.randn(64, 64, device="cuda")
        torch.mm(x, x)  # (cuBLAS makes its handle on first use: cublasCreate inside a capture fails, NOT_INITIALIZED)
        torch.cuda.synchronize()
        with torch.cuda.graph(g):
            y = torch.nn.functional.dropout(x @ x, 0.1).sum()
        w = rt.Graph.wrap(g)
        print("  node types:", sorted({n.type.name for n in w.nodes()}), "count", len(w))
        del y
    probe("node types of a captured matmul+dropout (through pygraphrt Graph.wrap)", node_types)

    def our_capture():
        import pygraphrt as rt
        import pygraphrt.torch as pt

        s = rt.Stream()
        out = torch.empty(4096, device="cuda")
        ones = torch.ones(4096, device="cuda")
        with pt.capture(s) as cap:
            out.copy_(torch.nn.functional.dropout(ones, 0.5))
        cap.replay(s)
        print("  pygraphrt.torch.capture: uses_rng", cap.uses_rng, "nodes", len(cap.graph))
    probe("pygraphrt.torch.capture round trip", our_capture)
    return 0


if __name__ == "__main__":
    sys.exit(main())
