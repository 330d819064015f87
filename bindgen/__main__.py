"""Command line: ``python -m bindgen [generate|fetch|diff|build-fast] [--check] [--stats]``."""

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


def _build_one(name: str, keep: Path | None) -> str:
    from . import fast
    from .generate import fast_source_of

    t0 = time.perf_counter()
    src = fast_source_of(HEADER_SETS[name])
    if fast.stale_hot_methods(src):
        raise RuntimeError(f"bindgen/hot_methods.c has changed since {name}'s fast_source.json was "
                           "generated, so this build would be the old code: run `python -m bindgen "
                           "generate` first")
    current = fast.up_to_date(src, fast.FASTLIB_DIR)
    if current is not None and keep is None:
        return f"{name}: up to date ({current.name})"
    build = None
    if keep is not None:
        build = keep / name
        build.mkdir(parents=True, exist_ok=True)
    path = fast.compile_source(src, fast.FASTLIB_DIR, build)
    return f"{name}: built {path.relative_to(fast.FASTLIB_DIR.parent.parent)} ({time.perf_counter() - t0:.1f} s)"


def _build_fast(names: list[str], jobs: int, if_possible: bool, keep: Path | None) -> int:
    """Compile the API-mode extensions (the compiled fast path) of the runtime bindings."""
    import os
    from concurrent.futures import ProcessPoolExecutor

    from . import fast

    names = names or list(fast.FAST_BINDINGS)
    bad = [n for n in names if n not in fast.FAST_BINDINGS]
    if bad:
        print(f"build-fast: {bad} have no fast path; choose among {list(fast.FAST_BINDINGS)}",
              file=sys.stderr)
        return 2
    why = None
    if fast.have_compiler() is None:  # the committed sources need nothing else (no headers)
        why = "no C compiler found (cc, gcc, clang or $CC)"
    if why is not None:
        print(f"build-fast: skipped: {why}; pygraphrt stays in cffi ABI mode",
              file=sys.stderr)
        return 0 if if_possible else 1
    jobs = jobs or min(len(names), os.cpu_count() or 1)
    failed = 0
    if jobs == 1:
        results = [(n, _try(_build_one, n, keep)) for n in names]
    else:
        with ProcessPoolExecutor(jobs) as pool:
            futs = [(n, pool.submit(_try, _build_one, n, keep)) for n in names]
            results = [(n, f.result()) for n, f in futs]
    for name, (ok, text) in results:
        print(text if ok else f"{name}: build failed: {text}", file=sys.stdout if ok else sys.stderr)
        failed += not ok
    if failed and not if_possible:
        return 1
    return 0


def _try(fn, *args):  # picklable for the process pool: (ok, text)
    try:
        return True, fn(*args)
    except Exception as exc:  # a compiler error: report it, the ABI mode remains
        return False, f"{type(exc).__name__}: {str(exc)[-2000:]}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bindgen", description=__doc__)
    p.add_argument("verb", nargs="?", default="generate", choices=["generate", "fetch", "diff", "build-fast"])
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
    p.add_argument("--jobs", "-j", type=int, default=0,
                   help="build-fast: compile this many bindings at once (default: the CPU count)")
    p.add_argument("--if-possible", action="store_true",
                   help="build-fast: exit 0 and say why when no C compiler or headers are found")
    p.add_argument("--keep-c", type=Path, metavar="DIR",
                   help="build-fast: keep the generated C source and objects in DIR")
    a = p.parse_intermixed_args(argv)  # (`build-fast -j 2 cuda13`: names after an option)

    if a.verb == "fetch":
        print(headersets.fetch(a.args or None))
        return 0
    if a.verb == "build-fast":
        return _build_fast(a.args, a.jobs, a.if_possible, a.keep_c)
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
