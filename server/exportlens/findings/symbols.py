"""Spelling torch's symbolic expressions in the user's own names.

Draft export reports guards over sympy symbols (`u0 > 2`, `Eq(s77, 4)`); the user wrote
`n > 2` and `x.shape[0] == 4`. The frame locals (`{'n': ['u0']}`) and the symbol sources
(`{'s77': "L['x'].size()[0]"}`) give the mapping; this module applies it without sympy.
"""

from __future__ import annotations

import ast
import re
from typing import Any

SYMBOL = re.compile(r"^[a-z]+\d+$")
_SOURCE_NAME = re.compile(r"L\['([A-Za-z_]\w*)'\]")
_SIZE = re.compile(r"\.size\(\)\[(\d+)\]")
_STRIDE = re.compile(r"\.stride\(\)\[(\d+)\]")

_COMPARE = {
    "Eq": ast.Eq,
    "Ne": ast.NotEq,
    "Lt": ast.Lt,
    "Le": ast.LtE,
    "Gt": ast.Gt,
    "Ge": ast.GtE,
    "StrictLessThan": ast.Lt,
    "StrictGreaterThan": ast.Gt,
    "LessThan": ast.LtE,
    "GreaterThan": ast.GtE,
}
_BINARY = {"Mod": ast.Mod, "PythonMod": ast.Mod, "FloorDiv": ast.FloorDiv, "IntTrueDiv": ast.Div, "TruncToInt": None}
_NEGATE = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE, ast.LtE: ast.Gt}


def source_to_python(source: str) -> str:
    """`L['x'].size()[0]` → `x.shape[0]` (what the user would write)."""
    text = _SOURCE_NAME.sub(r"\1", source)
    text = _SIZE.sub(r".shape[\1]", text)
    return _STRIDE.sub(r".stride(\1)", text)


def symbol_names(frame_locals: dict[str, Any] | None, symbol_to_sources: dict[str, Any] | None) -> dict[str, str]:
    """Symbol → the user's spelling of it."""
    names: dict[str, str] = {}
    for sym, src in (symbol_to_sources or {}).items():
        if isinstance(src, str):
            names[sym] = source_to_python(src)
    symbols = (frame_locals or {}).get("symbols") or {}
    for sym, src in symbols.items():
        if isinstance(src, str) and sym not in names:
            names[sym] = source_to_python(src)
    for name, values in ((frame_locals or {}).get("locals") or {}).items():
        for value in values if isinstance(values, list) else [values]:
            if isinstance(value, str) and SYMBOL.match(value.strip()):
                names.setdefault(value.strip(), name)  # locals beat sources only when no source exists
    return names


class _ToPython(ast.NodeTransformer):
    def __init__(self, names: dict[str, str]) -> None:
        self.names = names
        self.unmapped: set[str] = set()

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.names:
            return ast.parse(self.names[node.id], mode="eval").body
        if SYMBOL.match(node.id):
            self.unmapped.add(node.id)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        fn = node.func.id if isinstance(node.func, ast.Name) else ""
        args = node.args
        if fn in _COMPARE and len(args) == 2:
            return ast.Compare(left=args[0], ops=[_COMPARE[fn]()], comparators=[args[1]])
        if fn in ("Mod", "PythonMod", "FloorDiv") and len(args) == 2:
            op = _BINARY[fn]
            assert op is not None
            return ast.BinOp(left=args[0], op=op(), right=args[1])
        if fn in ("And", "Or") and args:
            return ast.BoolOp(op=ast.And() if fn == "And" else ast.Or(), values=args)
        if fn == "Not" and len(args) == 1:
            return negate(args[0])
        if fn in ("Max", "Min"):
            return ast.Call(func=ast.Name(fn.lower(), ast.Load()), args=args, keywords=[])
        if fn == "Abs" and len(args) == 1:
            return ast.Call(func=ast.Name("abs", ast.Load()), args=args, keywords=[])
        return node


def negate(node: ast.expr) -> ast.expr:
    """`a > 2` → `a <= 2`; anything else → `not (…)`."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _NEGATE:
        return ast.Compare(left=node.left, ops=[_NEGATE[type(node.ops[0])]()], comparators=node.comparators)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return node.operand
    return ast.UnaryOp(op=ast.Not(), operand=node)


def to_python(expr: str, names: dict[str, str]) -> tuple[str | None, set[str]]:
    """Torch's expression in Python with the user's names, and the symbols left unmapped."""
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError:
        return None, set()
    conv = _ToPython(names)
    body = conv.visit(tree.body)
    return ast.unparse(ast.fix_missing_locations(body)), conv.unmapped


def symbols_in(expr: str) -> set[str]:
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and SYMBOL.match(n.id)}
