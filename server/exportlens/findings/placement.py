"""Where on the user's line a finding goes: the frame, then the expression.

Torch reports lines, never columns. The frame is the innermost one in the user's project
(not torch, not site-packages, not the stdlib); the range is narrowed with `ast` to the
expression that caused the problem — the `if` test, the call of the op, the `.split(...)`.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from exportlens.model import Range
from exportlens.project import is_user_file
from exportlens.source import Source


@dataclass(frozen=True)
class Frame:
    file: str
    line: int  # 1-based
    name: str = ""
    col: int | None = None  # UTF-8 byte offsets, when Python gave them
    end_line: int | None = None
    end_col: int | None = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Frame:
        return cls(str(d.get("file")), int(d.get("line") or 1), str(d.get("name") or ""), d.get("col"), d.get("end_line"), d.get("end_col"))


def user_frames(frames: Iterable[Mapping[str, Any]], root: str) -> list[Frame]:
    """`frames`: `protocol.FrameInfo`s (or frames of the same shape made here)."""
    """The frames (outermost first) that are the user's code."""
    return [Frame.from_json(f) for f in frames if f.get("file") and f.get("line") and is_user_file(f["file"], root)]


def statement_at(tree: ast.Module, line: int) -> ast.stmt | None:
    """The innermost statement whose span holds `line` (a compound statement only for its header)."""
    best: ast.stmt | None = None

    def visit(body: list[ast.stmt]) -> None:
        nonlocal best
        for stmt in body:
            end = getattr(stmt, "end_lineno", stmt.lineno) or stmt.lineno
            start = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
            if start <= line <= end:
                best = stmt
                for name in ("body", "orelse", "finalbody", "handlers"):
                    inner = getattr(stmt, name, None)
                    if isinstance(inner, list):
                        visit([s for s in inner if isinstance(s, ast.stmt)] + [s for h in inner if isinstance(h, ast.ExceptHandler) for s in h.body])
                for case in getattr(stmt, "cases", []) or []:
                    visit(case.body)
                return

    visit(tree.body)
    return best


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _call_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        if func.attr in ("default",) and isinstance(func.value, ast.Attribute):
            return func.value.attr
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _smallest(nodes: list[ast.AST]) -> ast.AST | None:
    def size(n: ast.AST) -> tuple[int, int]:
        return ((getattr(n, "end_lineno", 0) or 0) - n.lineno, (getattr(n, "end_col_offset", 0) or 0) - n.col_offset)  # type: ignore[attr-defined]

    return min(nodes, key=size) if nodes else None


def _statement_expr(stmt: ast.stmt) -> ast.AST:
    value = getattr(stmt, "value", None)
    if isinstance(stmt, (ast.If, ast.While, ast.Assert)):
        return stmt.test
    if isinstance(value, ast.AST):
        return value
    return stmt


def guard_range(src: Source, line: int, symbol_names: set[str]) -> tuple[Range, ast.stmt | None]:
    """For a guard: the branch test, the conditional expression, or the call fed by the symbol."""
    tree = src.tree
    stmt = statement_at(tree, line) if tree is not None else None
    if stmt is None:
        return src.line_range(line), None
    if isinstance(stmt, (ast.If, ast.While, ast.Assert)):
        return src.node_range(stmt.test), stmt
    if isinstance(stmt, (ast.For, ast.AsyncFor)) and stmt.lineno == line:  # iterating needs the length: the iterable
        return src.node_range(stmt.iter), stmt
    header = [n for n in ast.walk(stmt) if isinstance(n, ast.IfExp)]
    if header:
        return src.node_range(header[0].test), stmt
    calls = [n for n in ast.walk(stmt) if isinstance(n, ast.Call) and n.lineno <= line <= (n.end_lineno or n.lineno)]
    fed = [c for c in calls if symbol_names & set().union(*(_names(a) for a in [*c.args, *(k.value for k in c.keywords)]))]
    node = _smallest(fed)  # type: ignore[arg-type]
    if node is None:
        node = _statement_expr(stmt)
    return src.node_range(node), stmt


def named_call_range(src: Source, line: int, callee: str) -> Range | None:
    """The call of `callee` (by its name) on `line`, or None when the line has no such call."""
    tree = src.tree
    stmt = statement_at(tree, line) if tree is not None else None
    if stmt is None or not callee:
        return None
    calls = [n for n in ast.walk(stmt) if isinstance(n, ast.Call) and _call_name(n) == callee and n.lineno <= line <= (n.end_lineno or n.lineno)]
    node = _smallest(calls)  # type: ignore[arg-type]
    return src.node_range(node) if node is not None else None


def name_range(src: Source, line: int, name: str) -> Range | None:
    """The first use of the plain name `name` on `line` (a guarded variable), or None."""
    tree = src.tree
    stmt = statement_at(tree, line) if tree is not None else None
    if stmt is None or not name:
        return None
    found = [n for n in ast.walk(stmt) if isinstance(n, ast.Name) and n.id == name and n.lineno == line]
    node = min(found, key=lambda n: n.col_offset) if found else None
    return src.node_range(node) if node is not None else None


def call_range(src: Source, line: int, callee: str) -> Range:
    """The call of `callee` (an op or function name) on `line`, else the statement's expression."""
    tree = src.tree
    stmt = statement_at(tree, line) if tree is not None else None
    if stmt is None:
        return src.line_range(line)
    calls = [n for n in ast.walk(stmt) if isinstance(n, ast.Call) and _call_name(n) == callee]
    on_line = [c for c in calls if c.lineno <= line <= (c.end_lineno or c.lineno)] or calls
    node = _smallest(on_line)  # type: ignore[arg-type]
    return src.node_range(node if node is not None else _statement_expr(stmt))


def frame_range(src: Source, frame: Frame) -> Range:
    """A traceback frame: Python's own columns when it gave them, else the statement."""
    if frame.col is not None and frame.end_col is not None and frame.end_line:
        start = src.position(frame.line, frame.col)
        end = src.position(frame.end_line, frame.end_col)
        if end > start:
            return Range(start, end)
    return statement_range(src, frame.line)


def statement_range(src: Source, line: int) -> Range:
    tree = src.tree
    stmt = statement_at(tree, line) if tree is not None else None
    if stmt is None:
        return src.line_range(line)
    if isinstance(stmt, (ast.If, ast.While, ast.For, ast.With, ast.FunctionDef, ast.ClassDef, ast.Try, ast.AsyncFunctionDef, ast.AsyncFor, ast.AsyncWith)):
        return src.line_range(stmt.lineno)
    return src.node_range(stmt)


def definition_range(src: Source, line: int) -> Range:
    """The name in a `def` (for a decorated op function), or the call that defines an op."""
    tree = src.tree
    if tree is None:
        return src.line_range(line)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            if first <= line <= node.lineno:
                text = src.line(node.lineno)
                col = text.find(node.name, text.find("def"))
                if col >= 0:
                    start = src.position(node.lineno, len(text[:col].encode()))
                    return Range(start, src.position(node.lineno, len(text[:col].encode()) + len(node.name.encode())))
    return statement_range(src, line)


SourceLoader = Callable[[str], Source | None]
