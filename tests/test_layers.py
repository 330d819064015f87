"""The imports of pygraphrt follow ARCHITECTURE.md: its layer table, its allowlist of upward
imports, its one-concept circles (the three fenced tables are the one source of truth)."""

from __future__ import annotations

import re

import pytest

from . import _imports

ARCHITECTURE = _imports.REPO / "ARCHITECTURE.md"


def fenced(name: str, text: str | None = None) -> list[str]:
    """The non-empty, non-comment lines of ARCHITECTURE.md's ```name block."""
    text = ARCHITECTURE.read_text() if text is None else text
    m = re.search(rf"^```{re.escape(name)}\n(.*?)^```", text, re.M | re.S)
    assert m, f"ARCHITECTURE.md has no ```{name} table"
    return [ln for ln in m.group(1).splitlines() if ln.strip() and not ln.startswith("#")]


def layer_table() -> list[tuple[int, str, str]]:
    """(layer number, layer name, module or 'package.*') rows."""
    rows = []
    for line in fenced("layers"):
        number, name, *modules = line.split()
        rows += [(int(number), name, m) for m in modules]
    return rows


def layer_of(module: str, rows: list[tuple[int, str, str]]) -> tuple[int, str] | None:
    """The layer placing ``module``: its exact name, else the longest ``package.*`` above it."""
    best = None
    for number, name, entry in rows:
        if entry == module:
            return number, name
        if entry.endswith(".*") and (module == entry[:-2] or module.startswith(entry[:-1])):
            if best is None or len(entry) > best[0]:
                best = (len(entry), (number, name))
    return None if best is None else best[1]


def allowlist() -> dict[tuple[str, str], str]:
    out = {}
    for line in fenced("upward-imports"):
        m = re.match(r"(\S+)\s*->\s*(\S+)\s+(.+)", line)
        assert m, f"ARCHITECTURE.md upward-imports: cannot read {line!r}"
        out[(m.group(1), m.group(2))] = m.group(3)
    return out


def one_concept_circles() -> list[list[str]]:
    """Each allowed circle as its list of module names (or 'package.*' entries)."""
    out = []
    for line in fenced("one-concept-circles"):
        names = []
        for word in line.split():
            if not word.startswith("pygraphrt"):
                break
            names.append(word)
        out.append(names)
    return out


def covers(entries: list[str], circle: list[str]) -> bool:
    return all(any(m == e or (e.endswith(".*") and m.startswith(e[:-1])) for e in entries) for m in circle)


def violations() -> list[str]:
    """Every way the code and ARCHITECTURE.md disagree, as readable lines."""
    edges, unresolved = _imports.import_graph()
    rows = layer_table()
    allowed = allowlist()
    problems = [f"computed import that the test cannot resolve (name it literally): {u}" for u in unresolved]
    modules = sorted(_imports.module_files())
    for m in modules:
        if layer_of(m, rows) is None:
            problems.append(f"{m} is not placed in ARCHITECTURE.md's layers table")
    used = set()
    for e in edges:
        src, dst = layer_of(e.source, rows), layer_of(e.target, rows)
        if src is None or dst is None or dst[0] <= src[0]:
            continue
        if (e.source, e.target) in allowed:
            used.add((e.source, e.target))
            continue
        problems.append(f"upward import {e.source} ({src[1]}, layer {src[0]}) -> {e.target} "
                        f"({dst[1]}, layer {dst[0]}) at line {e.line}: not in ARCHITECTURE.md's "
                        f"upward-imports allowlist")
    for pair in sorted(set(allowed) - used):
        problems.append(f"allowlist entry {pair[0]} -> {pair[1]} is not an upward import in the code "
                        f"any more: remove it from ARCHITECTURE.md")
    # circles, without the allowlisted upward imports (function-local: they run after both
    # modules have loaded)
    kept = [e for e in edges if (e.source, e.target) not in allowed]
    concepts = one_concept_circles()
    for circle in _imports.module_cycles(kept):
        folders = sorted({_imports.folder(m) for m in circle})
        if len(folders) > 1:
            problems.append(f"import circle across folders {folders}: {' <-> '.join(circle)}")
        elif not any(covers(c, circle) for c in concepts):
            problems.append(f"import circle in {folders[0]} that ARCHITECTURE.md does not name as one "
                            f"concept: {' <-> '.join(circle)}")
    return problems


def graph_order_violations() -> list[str]:
    """Imports inside graph/ against ARCHITECTURE.md's ``graph-order`` rows: each module of the
    folder in one row; an import goes to a lower row, or within a row only between the modules of
    a named one-concept circle (a circle the test above already requires to be named)."""
    rows = [line.split() for line in fenced("graph-order")]
    rank = {m: i for i, row in enumerate(rows) for m in row}
    problems = [f"{m} is not placed in ARCHITECTURE.md's graph-order table"
                for m in sorted(_imports.module_files()) if m.startswith("pygraphrt.graph.") and m not in rank]
    problems += [f"graph-order places {m}, which is no module" for m in rank if m not in _imports.module_files()]
    circles = one_concept_circles()
    edges, _ = _imports.import_graph()
    for e in edges:
        if e.own_child or e.source not in rank or e.target not in rank:
            continue
        rs, rt = rank[e.source], rank[e.target]
        if rt > rs or (rt == rs and not any(e.source in c and e.target in c for c in circles)):
            problems.append(f"{e.source} (graph-order row {rs + 1}) imports {e.target} (row {rt + 1}) at line "
                            f"{e.line}: against ARCHITECTURE.md's order inside graph/")
    return problems


def test_imports_inside_graph_follow_its_order():
    problems = graph_order_violations()
    assert not problems, "\n".join(problems)


def test_imports_follow_architecture_md():
    problems = violations()
    assert not problems, "\n".join(problems)


def test_every_layer_table_entry_names_a_module():
    """A placed name that no module has is a typo that would leave a module unplaced."""
    modules = set(_imports.module_files())
    for _, _, entry in layer_table():
        if entry.endswith(".*"):
            ok = any(m == entry[:-2] or m.startswith(entry[:-1]) for m in modules)
        else:
            ok = entry in modules
        assert ok, f"ARCHITECTURE.md places {entry}, which is no module of pygraphrt"


def test_resolver_counts_function_local_and_computed_imports_and_skips_type_checking():
    edges, _ = _imports.import_graph()
    pairs = {(e.source, e.target) for e in edges}
    # function-local (Stream.malloc_async) and computed (f"pygraphrt._bindings.{binding}.symbols" over
    # SUPPORTED's names) imports are counted
    assert ("pygraphrt.device", "pygraphrt.mempool") in pairs
    assert ("pygraphrt._runtime", "pygraphrt._bindings.cuda13.symbols") in pairs
    assert ("pygraphrt._backends", "pygraphrt._vendors.sim") in pairs  # read from the PLUGINS table
    # device's TYPE_CHECKING import of pygraphrt.kernels (the package) never runs
    assert ("pygraphrt.device", "pygraphrt.kernels") not in pairs


def test_module_placement_takes_the_longest_package_entry():
    rows = layer_table()
    assert layer_of("pygraphrt._vendors.sim._new_section", rows)[1] == "plugins"
    assert layer_of("pygraphrt._vendors.cuda", rows)[1] == "vendors"
    assert layer_of("pygraphrt", rows)[1] == "facade"


@pytest.mark.parametrize("table", ["layers", "upward-imports", "one-concept-circles", "graph-order"])
def test_tables_are_present(table):
    assert fenced(table)
