"""Stage 1: run the system C compiler's preprocessor over a header set.

Vendor headers are preprocessed in C mode, host only (no ``__CUDACC__`` /
``__HIPCC__``), with bindgen's own minimal libc stand-ins in place of the system
headers so that the result is plain C that pycparser understands and that does
not depend on the machine's libc.  GCC attributes are then lifted out of the
text: ``aligned(N)`` on a struct or union is kept (layouts depend on it),
everything else (``deprecated``, ``visibility`` ...) is dropped.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

FAKE_LIBC = Path(__file__).with_name("fake_libc")

# LP64 sizes for evaluating ``sizeof`` inside attribute arguments.
_BUILTIN_SIZES = {
    "char": 1, "signed char": 1, "unsigned char": 1, "short": 2, "unsigned short": 2,
    "int": 4, "unsigned int": 4, "unsigned": 4, "long": 8, "long int": 8,
    "unsigned long": 8, "unsigned long int": 8, "long long": 8, "unsigned long long": 8,
    "float": 4, "double": 8, "long double": 16, "void *": 8,
}


class PreprocessError(RuntimeError):
    pass


def compiler() -> str:
    """The C compiler: ``$CC``, else ``cc``/``gcc`` on PATH."""
    for candidate in (os.environ.get("CC"), "cc", "gcc"):
        if candidate and shutil.which(candidate):
            return candidate
    raise PreprocessError("no C compiler found (set CC, or install gcc)")


@dataclass
class Preprocessed:
    text: str  # parseable C, line markers kept
    aligned: dict[str, int] = field(default_factory=dict)  # "struct float4" -> 16


def _run(args: list[str], source: str) -> str:
    proc = subprocess.run(args, input=source, capture_output=True, text=True)
    if proc.returncode != 0:
        raise PreprocessError(f"{' '.join(args)} failed:\n{proc.stderr[-4000:]}")
    return proc.stdout


def _base_args(include_dirs: list[Path], defines: dict[str, str]) -> list[str]:
    args = [compiler(), "-E", "-x", "c", "-std=gnu11", "-nostdinc", "-undef",
            "-D__x86_64__=1", "-D__linux__=1", "-D__unix__=1", "-D__LP64__=1",
            "-D__GNUC__=4", "-D__SIZEOF_POINTER__=8", "-D__SIZEOF_LONG__=8",
            "-I", str(FAKE_LIBC)]
    # -undef drops the compiler's own target macros, so the output is the same on
    # any host; the few the vendor headers test are put back by hand above.
    for inc in include_dirs:
        args += ["-I", str(inc)]
    for name, value in sorted(defines.items()):
        args.append(f"-D{name}={value}" if value != "" else f"-D{name}")
    return args


def entry_source(headers: list[str]) -> str:
    return "".join(f"#include <{h}>\n" for h in headers)


def preprocess(headers: list[str], include_dirs: list[Path], defines: dict[str, str]) -> Preprocessed:
    """Preprocess ``#include <h>`` for each of ``headers``; return parseable text."""
    raw = _run(_base_args(include_dirs, defines) + ["-"], entry_source(headers))
    return lift_attributes(raw)


def macros(headers: list[str], include_dirs: list[Path], defines: dict[str, str]) -> dict[str, str]:
    """Object-like macros defined after including ``headers`` (``gcc -dM``)."""
    out = _run(_base_args(include_dirs, defines) + ["-dM", "-"], entry_source(headers))
    result: dict[str, str] = {}
    for line in out.splitlines():
        m = re.match(r"#define (\w+)(\(.*?\))?(?: (.*))?$", line)
        if m and m.group(2) is None:
            result[m.group(1)] = (m.group(3) or "").strip()
    return result


def expand(names: list[str], headers: list[str], include_dirs: list[Path],
           defines: dict[str, str]) -> dict[str, str]:
    """Fully macro-expand each name in ``names`` after including ``headers``."""
    if not names:
        return {}
    probe = entry_source(headers) + "".join(
        f'\n__pygraphrt_probe__ "{name}" : {name} __pygraphrt_end__\n' for name in names)
    out = _run(_base_args(include_dirs, defines) + ["-P", "-"], probe)
    result: dict[str, str] = {}
    for m in re.finditer(r'__pygraphrt_probe__ "(\w+)" :\s*(.*?)\s*__pygraphrt_end__', out, re.S):
        result[m.group(1)] = " ".join(m.group(2).split())
    return result


_ATTR = "__attribute__"


def _balanced(text: str, start: int) -> int:
    """Index just past the parenthesised group that starts at ``text[start] == '('``."""
    depth = 0
    i = start
    in_str = False
    while i < len(text):
        c = text[i]
        if in_str:
            if c == "\\":
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise PreprocessError("unbalanced parentheses in attribute")


def _eval_size_expr(expr: str) -> int:
    def size(m: re.Match[str]) -> str:
        name = " ".join(m.group(1).split())
        if name not in _BUILTIN_SIZES:
            raise PreprocessError(f"cannot evaluate sizeof({name}) in an attribute")
        return str(_BUILTIN_SIZES[name])

    expr = re.sub(r"(?:sizeof|__alignof__|_Alignof)\s*\(([^()]*)\)", size, expr)
    if not re.fullmatch(r"[\d\s+*()\-/]+", expr):
        raise PreprocessError(f"cannot evaluate attribute argument {expr!r}")
    return int(eval(expr, {"__builtins__": {}}))  # digits and + - * / only


_ALIGN_MARK = "__pygraphrt_aligned__"


def lift_attributes(text: str) -> Preprocessed:
    """Remove GCC attribute syntax; keep ``aligned(N)`` of structs/unions aside."""
    pieces: list[str] = []
    pos = 0
    while True:
        i = text.find(_ATTR, pos)
        if i < 0:
            pieces.append(text[pos:])
            break
        pieces.append(text[pos:i])
        j = i + len(_ATTR)
        while j < len(text) and text[j].isspace():
            j += 1
        if j >= len(text) or text[j] != "(":
            raise PreprocessError("__attribute__ without arguments")
        end = _balanced(text, j)
        body = text[j + 2:end - 2].strip()  # inside ((...))
        m = re.fullmatch(r"(?:aligned|__aligned__)\s*\((.*)\)", body, re.S)
        if m:
            pieces.append(f" {_ALIGN_MARK}({_eval_size_expr(m.group(1))}) ")
        else:
            pieces.append(" ")
        pos = end
    text = "".join(pieces)
    for token in ("__extension__", "__restrict__", "__restrict", "__inline__", "__inline"):
        text = re.sub(rf"\b{token}\b", "inline" if "inline" in token else "", text)

    aligned: dict[str, int] = {}

    def tag(m: re.Match[str]) -> str:
        aligned[f"{m.group(1)} {m.group(3)}"] = int(m.group(2))
        return f"{m.group(1)} {m.group(3)}"

    text = re.sub(rf"\b(struct|union)\s+{_ALIGN_MARK}\((\d+)\)\s+(\w+)", tag, text)
    if _ALIGN_MARK in text:
        where = text.index(_ALIGN_MARK)
        raise PreprocessError(
            "aligned() attribute in an unsupported position: "
            + " ".join(text[max(0, where - 120):where + 60].split()))
    return Preprocessed(text=text, aligned=aligned)
