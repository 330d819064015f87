"""Ask the C compiler for the facts a binding claims: layouts, enum values, constants.

Builds one C program per binding that includes the same headers (with the real
system headers this time, not bindgen's stand-ins) and prints ``sizeof``,
``_Alignof`` and ``offsetof`` for every record field in the manifest, every
enum member's value, every constant's value and C type, and -- for bitfields,
which have no offset -- the bytes a struct holds after the field is set to all
ones.  Used by the tests; also handy by hand (``python -m bindgen.ccheck cuda13``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .headersets import HEADER_SETS, include_roots
from .preprocess import compiler

_TYPE_CODES = ("int", "unsigned int", "long", "unsigned long", "long long",
               "unsigned long long", "float", "double", "const char *")


def _generic(expr: str) -> str:
    arms = ", ".join(f"{t}: {i}" for i, t in enumerate(_TYPE_CODES[:-1]))
    return f"_Generic(({expr}), {arms}, char *: 8, const char *: 8, default: 99)"


def program(headers: list[str] | tuple[str, ...], manifest: dict[str, Any]) -> str:
    out = ["#include <stdio.h>", "#include <stddef.h>", "#include <stdint.h>", "#include <string.h>"]
    out += [f"#include <{h}>" for h in headers]
    out.append("int main(void) {")
    for name, rec in sorted(manifest["records"].items()):
        out.append(f'  printf("R\\t{name}\\t%zu\\t%zu\\n", sizeof({name}), _Alignof({name}));')
        for fname, ftype, offset in rec["fields"]:
            if offset is None:  # bitfield: set all ones, dump the bytes
                out.append("  { " + f"{name} v; memset(&v, 0, sizeof v); v.{fname} = ~0ull; "
                           f'printf("B\\t{name}\\t{fname}\\t"); '
                           "for (size_t i = 0; i < sizeof v; i++) printf(\"%02x\", ((unsigned char*)&v)[i]); "
                           'printf("\\n"); }')
            else:
                out.append(f'  printf("F\\t{name}\\t{fname}\\t%zu\\n", offsetof({name}, {fname}));')
    for ename, members in sorted(manifest["enums"].items()):
        for m in sorted(members):
            out.append(f'  printf("E\\t{ename}\\t{m}\\t%lld\\n", (long long)({m}));')
    for cname, value in sorted(manifest["constants"].items()):
        ctype = manifest["constant_types"][cname]
        if isinstance(value, str):
            out.append(f'  printf("C\\t{cname}\\t%d\\t%s\\n", {_generic(cname)}, {cname});')
        elif isinstance(value, float):
            out.append(f'  printf("C\\t{cname}\\t%d\\t%.17g\\n", {_generic(cname)}, (double)({cname}));')
        elif ctype in _TYPE_CODES:
            out.append(f'  printf("C\\t{cname}\\t%d\\t%llu\\n", {_generic(cname)}, (unsigned long long)({cname}));')
        else:  # a cast to a handle type, e.g. ((cudaStream_t)0x1)
            out.append(f'  printf("C\\t{cname}\\t-1\\t%llu\\n", (unsigned long long)(uintptr_t)({cname}));')
    out.append("  return 0;\n}\n")
    return "\n".join(out)


def run(binding: str, manifest: dict[str, Any]) -> dict[str, Any]:
    """Compile and run the check for a binding; return what the compiler says."""
    hs = HEADER_SETS[binding]
    return run_headers(list(hs.headers), include_roots(hs), hs.defines, manifest)


def run_headers(headers: list[str], roots: list[Path], defines: dict[str, str],
                manifest: dict[str, Any]) -> dict[str, Any]:
    """Compile and run the check for any headers; return what the compiler says."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "check.c"
        exe = Path(tmp) / "check"
        src.write_text(program(headers, manifest))
        args = [compiler(), "-std=gnu11", "-w", "-o", str(exe), str(src)]
        for root in roots:
            args += ["-I", str(root)]
        for k, v in defines.items():
            args.append(f"-D{k}={v}" if v else f"-D{k}")
        proc = subprocess.run(args, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"compiling the layout check failed:\n{proc.stderr[-4000:]}")
        text = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    result: dict[str, Any] = {"records": {}, "fields": {}, "bits": {}, "enums": {}, "constants": {}}
    for line in text.splitlines():
        kind, *rest = line.split("\t")
        if kind == "R":
            result["records"][rest[0]] = (int(rest[1]), int(rest[2]))
        elif kind == "F":
            result["fields"][(rest[0], rest[1])] = int(rest[2])
        elif kind == "B":
            result["bits"][(rest[0], rest[1])] = rest[2]
        elif kind == "E":
            result["enums"][(rest[0], rest[1])] = int(rest[2])
        elif kind == "C":
            code = int(rest[1])
            result["constants"][rest[0]] = (_TYPE_CODES[code] if 0 <= code < len(_TYPE_CODES)
                                            else None, rest[2] if len(rest) > 2 else "")
    return result


if __name__ == "__main__":
    name = sys.argv[1]
    from .generate import BINDINGS_DIR

    data = run(name, json.loads((BINDINGS_DIR / name / "manifest.json").read_text()))
    print({k: len(v) for k, v in data.items()})
