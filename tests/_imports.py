"""pygraphrt's import graph as the interpreter would execute it, computed from the source with ``ast``.

Counted: every ``import`` / ``from ... import`` that can execute (module level, function-local,
inside ``try``), with relative imports resolved, and ``importlib.import_module`` calls: a literal
name, an f-string (``{__name__}`` is the module's own name; any other field matches any
characters but a dot, against the modules that exist), or a variable bound in the same function
from literal strings (``for pkg, rel in (("a", ...), ...)``).  A computed name that cannot be
resolved that way is reported as unresolved (the layer test fails on it).

Left out: imports under ``if TYPE_CHECKING:`` (they never execute).  A package's imports of its
own descendants are marked (``own_child``) and left out of the circles (the package is its
children's face: ``graph/__init__`` re-exports ``graph._graph``), not out of the layer order.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass
from pathlib import Path

FIELD = "\x00"  # an f-string field in a pattern, replaced before matching
REPO = Path(__file__).resolve().parent.parent
PACKAGE = "pygraphrt"


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported pygraphrt module
    line: int
    own_child: bool = False  # a package importing one of its descendants


@functools.lru_cache(maxsize=None)
def module_files(root: Path = REPO) -> dict[str, Path]:
    """Every pygraphrt module (packages by their ``__init__``) -> its file."""
    found = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def extension_modules(root: Path = REPO) -> set[str]:
    """Compiled modules (``_fastlib/_cuda13.cpython-...so``): imported by computed names."""
    out = set()
    for path in (root / PACKAGE).rglob("*.so"):
        rel = path.relative_to(root)
        out.add(".".join([*rel.parent.parts, path.name.split(".")[0]]))
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _executing_nodes(tree: ast.AST):
    """Every node except those under ``if TYPE_CHECKING:`` (its ``else`` executes)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _enclosing_scopes(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    scope_of: dict[ast.AST, ast.AST] = {}

    def visit(node: ast.AST, scope: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            scope_of[child] = scope
            visit(child, child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else scope)

    visit(tree, tree)
    return scope_of


def _module_table(tree: ast.Module, name: str) -> list[str] | None:
    """The pygraphrt module names in the module-level literal ``name = {...}`` (a table that an
    import reads its module name from: ``module, attr = PLUGINS[key]``), or None."""
    for node in tree.body:
        value = None
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            value = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            value = node.value
        if isinstance(value, (ast.Dict, ast.Tuple, ast.List)):
            return [c.value for c in ast.walk(value) if isinstance(c, ast.Constant)
                    and isinstance(c.value, str) and re.fullmatch(r"pygraphrt(\.\w+)*", c.value)]
    return None


def _literal_bindings(scope: ast.AST, name: str, tree: ast.Module) -> list[str] | None:
    """The literal strings ``name`` is bound to in ``scope`` (``name = "x"``, a ``for`` over a
    literal tuple of literal tuples / strings, or an unpacking of a module-level table's row),
    or None where any binding is not literal."""
    values: list[str] = []
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Tuple) and any(
                isinstance(e, ast.Name) and e.id == name for e in t.elts) for t in node.targets):
            root = node.value
            while isinstance(root, ast.Subscript):
                root = root.value
            table = _module_table(tree, root.id) if isinstance(root, ast.Name) else None
            if table is None:
                return None
            values.extend(table)
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
                return None
            values.append(node.value.value)
        elif isinstance(node, ast.For):
            target = node.target
            names = [target] if isinstance(target, ast.Name) else list(getattr(target, "elts", []))
            idx = next((i for i, t in enumerate(names) if isinstance(t, ast.Name) and t.id == name), None)
            if idx is None:
                continue
            if not isinstance(node.iter, (ast.Tuple, ast.List)):
                return None
            for item in node.iter.elts:
                value = item if isinstance(target, ast.Name) else (
                    item.elts[idx] if isinstance(item, (ast.Tuple, ast.List)) else None)
                if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
                    return None
                values.append(value.value)
    return values or None


def _computed_names(arg: ast.expr, module: str, scope: ast.AST, tree: ast.Module) -> list[str] | None:
    """Regular expressions (or literal names, escaped) the argument of import_module can take."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return [re.escape(arg.value)]
    if isinstance(arg, ast.JoinedStr):
        pattern = ""
        for part in arg.values:
            if isinstance(part, ast.Constant):
                pattern += re.escape(str(part.value))
            elif isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name) \
                    and part.value.id == "__name__":
                pattern += re.escape(module)
            else:
                pattern += FIELD
        return [pattern]
    if isinstance(arg, ast.Name):
        bound = _literal_bindings(scope, arg.id, tree)
        return None if bound is None else [re.escape(v) for v in bound]
    return None


def _is_import_module(call: ast.Call) -> bool:
    f = call.func
    return (isinstance(f, ast.Attribute) and f.attr == "import_module"
            and isinstance(f.value, ast.Name) and f.value.id == "importlib") or (
        isinstance(f, ast.Name) and f.id in ("import_module", "__import__"))


def import_graph(root: Path = REPO) -> tuple[list[Import], list[str]]:
    """(every executing import between pygraphrt modules, the computed imports that could not be
    resolved, as 'module:line: text')."""
    files = module_files(root)
    known = set(files) | extension_modules(root)
    edges: list[Import] = []
    unresolved: list[str] = []
    for module, path in files.items():
        is_pkg = path.name == "__init__.py"
        base = module.split(".") if is_pkg else module.split(".")[:-1]
        tree = ast.parse(path.read_text(), str(path))
        scope_of = _enclosing_scopes(tree)
        constants = sorted({c.value for c in ast.walk(tree) if isinstance(c, ast.Constant)
                            and isinstance(c.value, str) and re.fullmatch(r"\w+", c.value)})
        found: list[tuple[str, int]] = []
        for node in _executing_nodes(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    found.append((alias.name, node.lineno))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    anchor = base[: len(base) - node.level + 1]
                    parent = ".".join(anchor + ([node.module] if node.module else []))
                else:
                    parent = node.module or ""
                for alias in node.names:
                    child = f"{parent}.{alias.name}"
                    found.append((child if child in known else parent, node.lineno))
            elif isinstance(node, ast.Call) and _is_import_module(node) and node.args:
                patterns = _computed_names(node.args[0], module, scope_of.get(node, tree), tree)
                if patterns is None:
                    unresolved.append(f"{module}:{node.lineno}: {ast.unparse(node)}")
                    continue
                for pattern in patterns:
                    if pattern.startswith(FIELD):  # f"{package}.x": any package, pygraphrt's too
                        unresolved.append(f"{module}:{node.lineno}: {ast.unparse(node)} starts with a computed name")
                        continue
                    if not re.match(r"pygraphrt(\\\.|$)", pattern):
                        continue  # another package's module (nvidia.cu13)
                    # a field takes the file's own string constants where they name modules
                    # ({module_name} over _LAZY's values), else any characters but a dot
                    narrow = pattern.replace(FIELD, "(?:" + "|".join(map(re.escape, constants)) + ")")
                    hits = sorted(m for m in known if re.fullmatch(narrow, m)) if constants else []
                    if not hits:
                        hits = sorted(m for m in known if re.fullmatch(pattern.replace(FIELD, r"[^.]+"), m))
                    if not hits:
                        # compiled modules not built in this checkout (_fastlib/_{binding}):
                        # the package they would be in
                        package = re.sub(r"\\(.)", r"\1", pattern.split(FIELD)[0]).rpartition(".")[0]
                        if FIELD in pattern and package in files and files[package].name == "__init__.py":
                            hits = [package]
                    if not hits:
                        unresolved.append(f"{module}:{node.lineno}: {ast.unparse(node)} names no module")
                    found.extend((h, node.lineno) for h in hits)
        for target, line in found:
            # the longest pygraphrt module the name starts with (pygraphrt.x.y where y is a function)
            while target and target not in known:
                target = target.rpartition(".")[0]
            if not target.startswith(PACKAGE) or target == module:
                continue
            edges.append(Import(module, target, line, is_pkg and target.startswith(module + ".")))
    return edges, unresolved


def folder(module: str) -> str:
    """The folder a module lies in: pygraphrt.graph._node -> pygraphrt.graph; a package is in its own."""
    files = module_files()
    path = files.get(module)
    if path is not None and path.name == "__init__.py":
        return module
    return module.rpartition(".")[0]


def cycles(nodes: set[str], edges: set[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    graph: dict[str, list[str]] = {n: [] for n in nodes}
    for a, b in edges:
        graph.setdefault(a, []).append(b)
        graph.setdefault(b, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:  # recursion depth is bounded by the module count (~150)
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return sorted(out)


def module_cycles(edges: list[Import]) -> list[list[str]]:
    """Circles of modules, a package's imports of its own descendants left out."""
    es = {(e.source, e.target) for e in edges if not e.own_child}
    return cycles({m for e in es for m in e}, es)


if __name__ == "__main__":  # a report: python -m tests._imports
    edges, unresolved = import_graph()
    print(len(edges), "imports;", "unresolved:", unresolved)
    for comp in module_cycles(edges):
        print("circle of", len(comp), "across folders" if len({folder(m) for m in comp}) > 1 else "in a folder", comp)
