"""The test suite's own shape: what would keep a test from ever running."""

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _redefined(body: list[ast.stmt], where: str) -> list[str]:
    """Names defined twice (def, async def or class) at one level of a module or class body."""
    seen: dict[str, int] = {}
    out = []
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name in seen:
                out.append(f"{where}{node.name} (lines {seen[node.name]} and {node.lineno})")
            seen[node.name] = node.lineno
            if isinstance(node, ast.ClassDef):
                out += _redefined(node.body, f"{where}{node.name}.")
    return out


def test_no_test_module_defines_a_name_twice():
    """A second ``def test_x`` in a module (or class) replaces the first, which pytest then never
    collects: it passes by not running.  Every module under tests/, the GPU tests' included."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        found += [f"{path.relative_to(TESTS)}: {d}" for d in _redefined(tree.body, "")]
    assert not found, "defined twice (the first never runs): " + "; ".join(found)


def test_a_name_defined_twice_is_found():
    src = "def test_a():\n    pass\n\nclass T:\n    def test_b(self): pass\n    def test_b(self): pass\n\ndef test_a(): pass\n"
    assert _redefined(ast.parse(src).body, "") == ["T.test_b (lines 5 and 6)", "test_a (lines 1 and 8)"]
