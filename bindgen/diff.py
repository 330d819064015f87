"""API differences between two bindings' manifests (``python -m bindgen diff A B``)."""

from __future__ import annotations

import re
from typing import Any


def diff_manifests(a: dict[str, Any], b: dict[str, Any], match: str | None = None) -> list[str]:
    """Human-readable lines: what B adds, removes or changes relative to A.

    ``match``: a regular expression; only functions, enums and records whose name
    it matches (``re.search``) are compared.
    """
    lines: list[str] = []
    if match is not None:
        pattern = re.compile(match)
        a, b = ({**m, **{k: {n: v for n, v in m[k].items() if pattern.search(n)}
                         for k in ("functions", "enums", "records")}} for m in (a, b))

    def section(title: str, items: list[str]) -> None:
        if items:
            lines.append(f"{title} ({len(items)}):")
            lines.extend(f"  {item}" for item in items)

    fa, fb = a["functions"], b["functions"]
    section("functions added", sorted(set(fb) - set(fa)))
    section("functions removed", sorted(set(fa) - set(fb)))
    changed = []
    for name in sorted(set(fa) & set(fb)):
        x, y = fa[name], fb[name]
        if x["symbol"] != y["symbol"]:
            changed.append(f"{name}: symbol {x['symbol']} -> {y['symbol']}")
        if x["params"] != y["params"] or x["result"] != y["result"]:
            sig = lambda f: f"{f['result']} ({', '.join(f'{t} {n}'.strip() for t, n in f['params'])})"
            changed.append(f"{name}: {sig(x)} -> {sig(y)}")
    section("functions changed", changed)

    ea, eb = a["enums"], b["enums"]
    section("enums added", sorted(set(eb) - set(ea)))
    section("enums removed", sorted(set(ea) - set(eb)))
    enum_changes = []
    for name in sorted(set(ea) & set(eb)):
        ma, mb = ea[name], eb[name]
        for m in sorted(set(mb) - set(ma)):
            enum_changes.append(f"{name}.{m} added = {mb[m]}")
        for m in sorted(set(ma) - set(mb)):
            enum_changes.append(f"{name}.{m} removed (was {ma[m]})")
        for m in sorted(set(ma) & set(mb)):
            if ma[m] != mb[m]:
                enum_changes.append(f"{name}.{m}: {ma[m]} -> {mb[m]}")
    section("enum members changed", enum_changes)

    ra, rb = a["records"], b["records"]
    section("records added", sorted(set(rb) - set(ra)))
    section("records removed", sorted(set(ra) - set(rb)))
    layout = []
    for name in sorted(set(ra) & set(rb)):
        x, y = ra[name], rb[name]
        if (x["size"], x["align"], x["fields"]) != (y["size"], y["align"], y["fields"]):
            fx = {f[0]: (f[1], f[2]) for f in x["fields"]}
            fy = {f[0]: (f[1], f[2]) for f in y["fields"]}
            detail = []
            if x["size"] != y["size"]:
                detail.append(f"size {x['size']} -> {y['size']}")
            detail += [f"+{k}" for k in fy if k not in fx] + [f"-{k}" for k in fx if k not in fy]
            detail += [f"{k}: {fx[k]} -> {fy[k]}" for k in fx if k in fy and fx[k] != fy[k]]
            layout.append(f"{name}: {'; '.join(detail)}")
    section("record layouts changed", layout)
    return lines
