"""Evaluate C integer constant expressions with C's types (LP64).

Used for enum values, array lengths and macro constants.  Values carry their C
type so that ``0xFFFFFFFF`` is ``unsigned int``, ``-1U`` wraps, and the usual
arithmetic conversions apply, exactly as the compiler would do it.  The layout
test compares every value found here with what gcc computes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from pycparser import c_ast

# (rank, bits, signed) for the integer types we meet; float types have rank 100+.
INT_TYPES: dict[str, tuple[int, int, bool]] = {
    "_Bool": (0, 8, False),
    "char": (1, 8, True), "signed char": (1, 8, True), "unsigned char": (1, 8, False),
    "short": (2, 16, True), "unsigned short": (2, 16, False),
    "int": (3, 32, True), "unsigned int": (3, 32, False),
    "long": (4, 64, True), "unsigned long": (4, 64, False),
    "long long": (5, 64, True), "unsigned long long": (5, 64, False),
}
FLOAT_TYPES = {"float": 101, "double": 102, "long double": 103}

_SPELLINGS = {
    "unsigned": "unsigned int", "signed": "int", "signed int": "int", "short int": "short",
    "signed short": "short", "signed short int": "short", "unsigned short int": "unsigned short",
    "long int": "long", "signed long": "long", "signed long int": "long",
    "unsigned long int": "unsigned long", "long long int": "long long",
    "signed long long": "long long", "signed long long int": "long long",
    "unsigned long long int": "unsigned long long", "long unsigned int": "unsigned long",
    "long unsigned": "unsigned long", "long long unsigned int": "unsigned long long",
    "long long unsigned": "unsigned long long", "unsigned char": "unsigned char",
    "long double": "long double",
}


def canonical_builtin(names: list[str] | tuple[str, ...]) -> str:
    """Canonical spelling of a builtin type given as a word list (``['long', 'unsigned', 'int']``)."""
    text = " ".join(names)
    if text in _SPELLINGS:
        return _SPELLINGS[text]
    words = sorted(names, key=lambda w: {"unsigned": 0, "signed": 0}.get(w, 1))
    return _SPELLINGS.get(" ".join(words), text)


class NotConstant(ValueError):
    """The expression is not an integer/float constant expression we can evaluate."""


@dataclass(frozen=True)
class Value:
    value: int | float
    ctype: str

    def __post_init__(self) -> None:
        if self.ctype not in INT_TYPES and self.ctype not in FLOAT_TYPES:
            raise NotConstant(f"unsupported type {self.ctype}")


def wrap(value: int, ctype: str) -> int:
    _, bits, signed = INT_TYPES[ctype]
    value &= (1 << bits) - 1
    if signed and value >> (bits - 1):
        value -= 1 << bits
    return value


def _promote(ctype: str) -> str:
    if ctype in FLOAT_TYPES:
        return ctype
    rank = INT_TYPES[ctype][0]
    return "int" if rank < 3 else ctype


def _common(a: str, b: str) -> str:
    a, b = _promote(a), _promote(b)
    if a in FLOAT_TYPES or b in FLOAT_TYPES:
        fa, fb = FLOAT_TYPES.get(a, 0), FLOAT_TYPES.get(b, 0)
        return a if fa >= fb else b
    ra, _, sa = INT_TYPES[a]
    rb, _, sb = INT_TYPES[b]
    if sa == sb:
        return a if ra >= rb else b
    unsigned, signed = (a, b) if not sa else (b, a)
    if INT_TYPES[unsigned][0] >= INT_TYPES[signed][0]:
        return unsigned
    if INT_TYPES[signed][1] > INT_TYPES[unsigned][1]:
        return signed
    return "unsigned " + signed


def integer_literal(text: str) -> Value:
    m = re.fullmatch(r"(0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)([uUlL]*)", text)
    if not m:
        raise NotConstant(f"bad integer literal {text!r}")
    digits, suffix = m.group(1), m.group(2).lower()
    value = int(digits, 0) if not re.fullmatch(r"0[0-7]+", digits) else int(digits, 8)
    decimal = not digits.startswith("0") or digits == "0"
    unsigned = "u" in suffix
    longs = suffix.count("l")
    if unsigned:
        order = ["unsigned int", "unsigned long", "unsigned long long"][longs:]
    elif decimal:
        order = ["int", "long", "long long"][longs:]
    else:
        order = ["int", "unsigned int", "long", "unsigned long", "long long",
                 "unsigned long long"][2 * longs:]
    for ctype in order:
        _, bits, signed = INT_TYPES[ctype]
        if value < (1 << (bits - 1 if signed else bits)):
            return Value(value, ctype)
    raise NotConstant(f"integer literal {text} is too large")


_CHAR_ESCAPES = {"n": 10, "t": 9, "r": 13, "0": 0, "\\": 92, "'": 39, '"': 34, "a": 7,
                 "b": 8, "f": 12, "v": 11}


def _char_literal(text: str) -> Value:
    body = text[1:-1]
    if body.startswith("\\"):
        esc = body[1:]
        if esc.startswith("x"):
            return Value(int(esc[1:], 16), "int")
        if esc.isdigit():
            return Value(int(esc, 8), "int")
        return Value(_CHAR_ESCAPES[esc], "int")
    return Value(ord(body), "int")


def evaluate(node: c_ast.Node, lookup: Callable[[str], Value],
             sizeof: Callable[[c_ast.Node], int] | None = None) -> Value:
    """Evaluate ``node``; ``lookup`` resolves identifiers (enumerators)."""

    def ev(n: c_ast.Node) -> Value:
        if isinstance(n, c_ast.Constant):
            if n.type == "char":
                return _char_literal(n.value)
            if n.type in ("float", "double"):
                text = n.value.rstrip("fFlL")
                ctype = "float" if n.value[-1] in "fF" else "double"
                return Value(float.fromhex(text) if "x" in text.lower() else float(text), ctype)
            if n.type == "string":
                raise NotConstant("string literal")
            return integer_literal(n.value)
        if isinstance(n, c_ast.ID):
            return lookup(n.name)
        if isinstance(n, c_ast.UnaryOp):
            if n.op == "sizeof":
                if sizeof is None:
                    raise NotConstant("sizeof")
                return Value(sizeof(n.expr), "unsigned long")
            v = ev(n.expr)
            if n.op == "!":
                return Value(int(not v.value), "int")
            t = _promote(v.ctype)
            if n.op == "+":
                return Value(v.value, t)
            if n.op == "-":
                return Value(-v.value if t in FLOAT_TYPES else wrap(-int(v.value), t), t)
            if n.op == "~":
                return Value(wrap(~int(v.value), t), t)
            raise NotConstant(f"unary {n.op}")
        if isinstance(n, c_ast.BinaryOp):
            a, b = ev(n.left), ev(n.right)
            op = n.op
            if op in ("&&", "||"):
                r = (a.value and b.value) if op == "&&" else (a.value or b.value)
                return Value(int(bool(r)), "int")
            if op in ("<<", ">>"):
                t = _promote(a.ctype)
                r = int(a.value) << int(b.value) if op == "<<" else int(a.value) >> int(b.value)
                return Value(wrap(r, t), t)
            t = _common(a.ctype, b.ctype)
            x, y = a.value, b.value
            if t in INT_TYPES:
                x, y = wrap(int(x), t), wrap(int(y), t)
            if op in ("<", ">", "<=", ">=", "==", "!="):
                r = {"<": x < y, ">": x > y, "<=": x <= y, ">=": x >= y, "==": x == y,
                     "!=": x != y}[op]
                return Value(int(r), "int")
            if t in FLOAT_TYPES:
                r = {"+": x + y, "-": x - y, "*": x * y, "/": x / y}[op]
                return Value(r, t)
            if op == "/" or op == "%":
                if y == 0:
                    raise NotConstant("division by zero")
                q = abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)
                r = q if op == "/" else x - q * y
            else:
                xi, yi = int(x), int(y)  # integer types here (floats returned above)
                r = {"+": xi + yi, "-": xi - yi, "*": xi * yi, "&": xi & yi, "|": xi | yi,
                     "^": xi ^ yi}[op]
            return Value(wrap(int(r), t), t)
        if isinstance(n, c_ast.TernaryOp):
            return ev(n.iftrue) if ev(n.cond).value else ev(n.iffalse)
        if isinstance(n, c_ast.Cast):
            target = n.to_type.type
            if isinstance(target, c_ast.TypeDecl) and isinstance(target.type, c_ast.IdentifierType):
                t = canonical_builtin(target.type.names)
                v = ev(n.expr)
                if t in FLOAT_TYPES:
                    return Value(float(v.value), t)
                if t in INT_TYPES:
                    return Value(wrap(int(v.value), t), t)
            raise NotConstant("cast to a non-arithmetic type")
        raise NotConstant(type(n).__name__)

    return ev(node)
