"""Command line: ``python -m bindgen [generate|fetch|diff] [--check] [--stats]``."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from . import headersets
from .diff import diff_manifests
from .generate import BINDINGS_DIR, compare, generate, write
from .headersets import HEADER_SETS


def _manifest(name_or_path: str) -> dict:
    """A committed binding's manifest, a manifest file, or ``name@version``: the binding
    generated (in memory) from that release of its header set's history."""
    path = Path(name_or_path)
    if not path.exists() and "@" in name_or_path:
        name, version = name_or_path.split("@", 1)
        hs = HEADER_SETS[name]
        headersets.fetch(list(hs.fetch_keys))
        return generate(hs, history_version=version).manifest
    if not path.exists():
        path = BINDINGS_DIR / name_or_path / "manifest.json"
    return json.loads(path.read_text())


def _stats(names: list[str]) -> None:
    print(f"{'binding':<9} {'functions':>9} {'enums':>6} {'members':>8} {'records':>8} "
          f"{'typedefs':>8} {'constants':>9} {'omitted':>7}")
    for name in names:
        m = _manifest(name)
        members = sum(len(v) for v in m["enums"].values())
        print(f"{name:<9} {len(m['functions']):>9} {len(m['enums']):>6} {members:>8} "
              f"{len(m['records']):>8} {len(m['typedefs']):>8} {len(m['constants']):>9} "
              f"{len(m['omitted']):>7}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bindgen", description=__doc__)
    p.add_argument("verb", nargs="?", default="generate", choices=["generate", "fetch", "diff"])
    p.add_argument("args", nargs="*", help="binding names (generate), or A B (diff)")
    p.add_argument("--check", action="store_true",
                   help="regenerate from the pinned headers and fail on any byte difference")
    p.add_argument("--stats", action="store_true", help="print counts per binding")
    p.add_argument("--match", metavar="REGEX",
                   help="diff: only functions, enums and records whose name matches REGEX")
    p.add_argument("--cuda-include", help="use this CUDA toolkit include folder instead of the pins")
    p.add_argument("--hip-include", help="use this ROCm/HIP include folder instead of the pins")
    p.add_argument("--from-env", action="store_true",
                   help="use CUDA_HOME / ROCM_PATH (HIP_PATH) toolkits instead of the pins")
    p.add_argument("--out", type=Path, default=BINDINGS_DIR,
                   help="write the binding packages here (default: pygraphrt/_bindings)")
    a = p.parse_args(argv)

    if a.verb == "fetch":
        print(headersets.fetch(a.args or None))
        return 0
    if a.verb == "diff":
        if len(a.args) != 2:
            p.error("diff takes two bindings (names or manifest paths)")
        lines = diff_manifests(_manifest(a.args[0]), _manifest(a.args[1]), a.match)
        print("\n".join(lines) if lines else "no API differences")
        return 0

    names = a.args or list(HEADER_SETS)
    unknown = [n for n in names if n not in HEADER_SETS]
    if unknown:
        p.error(f"unknown binding(s) {unknown}; known: {sorted(HEADER_SETS)}")
    if a.stats and not a.check:
        _stats(names)  # `--stats` alone reports on what is committed
        return 0
    custom = a.cuda_include or a.hip_include or a.from_env
    if a.check and custom:
        p.error("--check always uses the pinned headers")
    if not custom:
        headersets.fetch(sorted({pkg for n in names for pkg in HEADER_SETS[n].fetch_keys}))
    failed = []
    for name in names:
        hs = HEADER_SETS[name]
        override = None
        if custom:
            override = headersets.user_toolkit_include(hs, a.cuda_include, a.hip_include)
            if override is None:
                print(f"{name}: no toolkit given for {hs.toolkit}; skipped")
                continue
        t0 = time.perf_counter()
        gen = generate(hs, override)
        if a.check:
            diffs = compare(gen, a.out)
            status = "differs: " + ", ".join(diffs) if diffs else "up to date"
            if diffs:
                failed.append(name)
        else:
            write(gen, a.out)
            status = f"written to {a.out / name}"
        print(f"{name}: {status} ({time.perf_counter() - t0:.1f} s)")
    if a.stats:
        _stats(names)
    if failed:
        print(f"bindgen --check: {len(failed)} binding(s) differ from the pinned headers: "
              f"{', '.join(failed)}; run `python -m bindgen` and commit", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
