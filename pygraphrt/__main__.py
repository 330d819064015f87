"""``python -m pygraphrt info``: what was found, what was chosen, what it can do; ``demo``: the seed workflow."""

from __future__ import annotations

import argparse
import os
import sys


def summary(out=sys.stdout) -> int:
    """``python -m pygraphrt info``: one line -- the GPU pygraphrt runs on, or "no GPU" and why
    (then graph code runs on the simulator) -- and where the full report is."""
    from ._demo import no_gpu_reason

    p = lambda *a: print(*a, file=out)  # noqa: E731
    why = no_gpu_reason()
    if why is not None:
        p(f"no GPU: running on the simulator ({why}): pygraphrt.use('sim') or PYGRAPHRT_BACKEND=sim")
    else:
        import pygraphrt

        b = pygraphrt.use("auto")
        bi = b.info()
        from .device import Device
        from .errors import GraphRTError

        def name(i: int) -> str:
            try:
                return Device(i).info().name
            except GraphRTError as exc:  # (a runtime without the properties call still reports)
                return f"(name unknown: {exc})"

        names = ", ".join(f"[{i}] {name(i)}" for i in range(bi.device_count))
        p(f"GPU: {bi.vendor} {bi.runtime_version_str} runtime, {bi.device_count} device(s): {names}")
        p(f"  call path: {bi.ffi_mode}")  # (compiled, or ABI mode and why: pip hides the build's output)
    p("  the full report (libraries tried, call path, capabilities, functions this runtime lacks): "
      "python -m pygraphrt info --verbose")
    return 0


def info(out=sys.stdout) -> int:
    """``python -m pygraphrt info --verbose``: what was found, what was chosen, what it can do."""
    from . import _runtime, errors
    from ._versions import version_str
    from .errors import SIM_HINT
    from .capabilities import capabilities
    from .device import Device

    p = lambda *a: print(*a, file=out)  # noqa: E731
    p("pygraphrt info")
    backends = {}
    for vendor in ("cuda", "hip"):
        try:
            backends[vendor] = _runtime.load(vendor)
        except errors.BackendError:
            p(f"  {vendor}: not available (no runtime library loaded: the libraries tried are below)")
    p("  libraries tried:")
    for a in _runtime.attempts():
        p(f"    [{a.vendor}] {a.candidate or '-'} via {a.how}: {a.outcome}")
    if not backends and os.environ.get("PYGRAPHRT_BACKEND") != "sim":
        p("  no GPU runtime library found: nothing to run on this machine")
        p(f"  {SIM_HINT}")
        return 0
    try:
        active = _runtime.active()
    except errors.BackendError as exc:
        p(f"  no backend selected: {exc}")
        return 0
    bi = active.info()
    p(f"  active backend: {bi.vendor} (binding {bi.binding})"
      + (" -- the CPU simulator: no GPU is used" if bi.vendor == "sim" else ""))
    p(f"    library: {bi.library_path}")
    p(f"    runtime version: {bi.runtime_version_str} ({bi.runtime_version})")
    p(f"    call path: {bi.ffi_mode} [PYGRAPHRT_FAST={os.environ.get('PYGRAPHRT_FAST', 'auto') or 'auto'}]")
    if bi.ffi_mode.startswith("api"):
        from ._fast import extension_path

        p(f"    compiled extension: {extension_path(bi.binding)}")
    if bi.vendor != "sim":
        from .graph import _hot
        from .graph._graph import install_hot

        install_hot(active)  # (as the first graph would: the classes they go on are handed over)
        p(f"    hot methods: {_hot.status(active)}")
        from .kernels import _hot as _launch_hot

        p(f"    kernel launches: {_launch_hot.status(active)}")
        p(f"    straight to the driver: {_hot.direct_status(active)}")
        from .compute import _graph as _compute, _hot as _compute_hot

        _compute_hot.install(_compute.ComputeGraph, _compute.ComputeNode)  # (as a first topology phase would)
        p(f"    compute graph evaluation: {_compute_hot.status()}")
    p(f"    driver version: {version_str(bi.vendor, bi.driver_version)}"
      + ("" if bi.driver_version else " (no driver found)"))
    if bi.device_error:
        p(f"    devices: none ({bi.device_error})")  # the error says that the simulator exists
    else:
        p(f"    devices: {bi.device_count}" + (f" ({SIM_HINT})" if not bi.device_count else ""))
        for i in range(bi.device_count):
            try:
                d = Device(i).info()
                p(f"      [{i}] {d.name}, {d.arch}, {d.total_memory / 2**30:.1f} GiB")
            except errors.GraphRTError as exc:
                p(f"      [{i}] unreadable: {exc}")
    p("    capabilities:")
    for k, v in capabilities().as_dict().items():
        if k not in ("vendor", "binding"):
            p(f"      {k}: {'yes' if v else 'no'}")
    missing = active.ops.unavailable
    p(f"    functions of binding {bi.binding} this runtime cannot run: {len(missing)}")
    graph_first = sorted(missing, key=lambda sym: ("Graph" not in sym and "Capture" not in sym, sym))
    for why in [missing[sym] for sym in graph_first][:8]:
        p(f"      {why}")
    if len(missing) > 8:
        p(f"      ... and {len(missing) - 8} more (pygraphrt.lowlevel.unavailable())")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pygraphrt",
                                 description="info: what pygraphrt finds here; demo: the README's seed "
                                             "workflow, on the GPU if there is one, else on the simulator")
    ap.add_argument("command", nargs="?", default="info", choices=["info", "demo"])
    ap.add_argument("--verbose", "-v", action="store_true",
                    help="info: the full report (libraries tried, call path, capabilities, functions)")
    args = ap.parse_args(argv)
    if args.command == "demo":
        from ._demo import run

        return run()
    return info() if args.verbose else summary()


if __name__ == "__main__":
    sys.exit(main())
