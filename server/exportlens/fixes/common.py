"""What every fix generator shares: the Refusal result, turning a rewritten text into minimal
line edits, finding statements by line, and the ``import torch`` binding of a module."""

from __future__ import annotations

import ast
import difflib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from exportlens.model import Diagnostic, Fix, Position, Range, TextEdit
from exportlens.source import Reader

from .text import line_start_position, newline_of, parse, split_lines


@dataclass(frozen=True)
class Refusal:
    """No fix is offered; ``reason`` says why in words a user can act on."""

    reason: str


@dataclass
class Offer:
    """What a code's fixers produced for one diagnostic: the fixes, and why generators refused
    (returned with them, never kept between calls)."""

    fixes: list[Fix] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)

    def take(self, result: Fix | list[Fix] | Refusal) -> list[Fix]:
        """A generator's answer as fixes; a refusal's reason is kept."""
        if isinstance(result, Refusal):
            if result.reason not in self.refusals:
                self.refusals.append(result.reason)
            return []
        return result if isinstance(result, list) else [result]


# A code's fixer: a diagnostic and the CURRENT texts (`read`) → its fixes, each generator's refusal
# handed to `offer.take` so the reasons come back with the fixes (`fix_registry.refusals_for`).
# It lives beside the generators it calls, and the code's record in `codes.py` names it.
Fixer = Callable[[Diagnostic, Reader, Offer], list[Fix]]


def line_edits(file: str, old: str, new: str) -> tuple[TextEdit, ...]:
    """The smallest whole-line edits that turn ``old`` into ``new`` (unchanged lines untouched)."""
    a = split_lines(old)
    b = split_lines(new)
    head = 0  # lines equal at both ends are never part of an edit: match only the middle
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    sm = difflib.SequenceMatcher(a=a[head : len(a) - tail], b=b[head : len(b) - tail], autojunk=False)
    edits = []
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            continue
        start = line_start_position(old, head + i1)
        end = line_start_position(old, head + i2)
        edits.append(TextEdit(file, Range(start, end), "".join(b[head + j1 : head + j2])))
    return tuple(edits)


def make_fix(file: str, old: str, new: str, title: str, preferred: bool) -> Fix | Refusal:
    """Build a Fix from the rewritten text, refusing when the result does not parse."""
    if new == old:
        return Refusal("the fix would not change anything")
    try:
        ast.parse(new)
    except SyntaxError as exc:
        return Refusal(f"the edited code would not parse ({exc.msg}, line {exc.lineno})")
    return Fix(title=title, edits=line_edits(file, old, new), is_preferred=preferred)


def bound_names(tree: ast.AST) -> set[str]:
    """Every name a module uses or binds (variables, parameters, functions, classes, imports)."""
    out: set[str] = set()
    for n in ast.walk(tree):
        name = getattr(n, "id", None) or getattr(n, "arg", None)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = n.name
        elif isinstance(n, ast.alias):
            name = n.asname or n.name.split(".")[0]
        if isinstance(name, str):
            out.add(name)
    return out


def fresh_name(used: set[str], base: str, sep: str = "_") -> str:
    """`base`, or `base{sep}2`, `base{sep}3`… — the first not in `used` (which then holds it)."""
    name, k = base, 1
    while name in used:
        k += 1
        name = f"{base}{sep}{k}"
    used.add(name)
    return name


def parse_or_refuse(text: str) -> ast.Module | Refusal:
    tree = parse(text)
    if tree is None:
        return Refusal("the file does not parse; fix the syntax error first")
    return tree


def walk_with_parents(tree: ast.AST) -> Iterator[tuple[ast.AST, list[ast.AST]]]:
    """Every node with its ancestors (outermost first)."""
    stack: list[tuple[ast.AST, list[ast.AST]]] = [(tree, [])]
    while stack:
        node, parents = stack.pop()
        yield node, parents
        for child in ast.iter_child_nodes(node):
            stack.append((child, parents + [node]))


def stmt_start_line(node: ast.stmt) -> int:
    """First 1-based line of a statement, decorators included."""
    lines = [node.lineno]
    for d in getattr(node, "decorator_list", []):
        lines.append(d.lineno)
    return min(lines)


def walk_containing(tree: ast.AST, line: int) -> Iterator[tuple[ast.AST, list[ast.AST]]]:
    """`walk_with_parents`, pruned to the nodes whose lines hold ``line`` (1-based).

    A 2,000-line module has ~30,000 nodes; the few on one line's path are all a fix looks at.
    """
    stack: list[tuple[ast.AST, list[ast.AST]]] = [(tree, [])]
    while stack:
        node, parents = stack.pop()
        yield node, parents
        for child in ast.iter_child_nodes(node):
            start = getattr(child, "lineno", None)
            if start is not None:
                if isinstance(child, ast.stmt):
                    start = stmt_start_line(child)
                if not start <= line <= (getattr(child, "end_lineno", None) or start):
                    continue
            stack.append((child, parents + [node]))


def innermost_statement(tree: ast.Module, line: int) -> tuple[ast.stmt, list[ast.AST]] | None:
    """The innermost statement whose lines include ``line`` (1-based), with its ancestors."""
    best: tuple[ast.stmt, list[ast.AST]] | None = None
    for node, parents in walk_containing(tree, line):
        inside = isinstance(node, ast.stmt) and stmt_start_line(node) <= line <= (node.end_lineno or node.lineno)
        if inside and (best is None or len(parents) > len(best[1])):
            best = (node, parents)  # type: ignore[assignment]
    return best


def enclosing_function(parents: list[ast.AST]) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    for p in reversed(parents):
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return p
        if isinstance(p, ast.ClassDef):
            return None
    return None


def torch_binding(tree: ast.Module) -> str | None:
    """The module-level name under which ``torch`` is bound (``import torch``, ``import torch.nn``
    bind ``torch``; ``import torch as th`` binds ``th``), or None."""
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "torch":
                    return alias.asname or "torch"
                if alias.name.startswith("torch.") and alias.asname is None:
                    return "torch"
    return None


def import_torch_insertion(text: str, tree: ast.Module, before_line: int) -> tuple[int, str]:
    """Where to add ``import torch`` (0-based line index to insert at) and the line to insert:
    after the last top-level import above ``before_line`` (1-based), else after the docstring."""
    nl = newline_of(text)
    last: ast.stmt | None = None
    for node in tree.body:
        if node.lineno >= before_line:
            break
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            last = node
    if last is None:
        first = tree.body[0] if tree.body else None
        if (
            first is not None
            and isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
            and (first.end_lineno or 0) < before_line
        ):
            last = first
    index = (last.end_lineno or last.lineno) if last is not None else 0
    lines = split_lines(text)
    prefix = ""
    if index >= len(lines) and lines and not lines[-1].endswith(("\n", "\r")):
        prefix = nl
    return index, prefix + "import torch" + nl


def insert_lines(text: str, index: int, new: str) -> str:
    """Insert ``new`` (complete lines) before 0-based line ``index``."""
    lines = split_lines(text)
    return "".join(lines[:index]) + new + "".join(lines[index:])


def pos(line: int, character: int) -> Position:
    return Position(line, character)
