"""Insert ``torch._check(<condition>)`` on its own line above the statement holding a line.

This is what draft_export's "Please add torch._check(...)" advice means in code: in torch 2.13
a check on a Python number (``a = x.item(); torch._check(a > 2)``) makes plain export pass
(docs/torch-facts.md §4). A tensor-valued condition cannot be checked directly; see
``insert_item_check`` and the cond rewrite for that case.
"""

from __future__ import annotations

import ast
import keyword
import re

from exportlens.model import Fix

from .common import (
    Refusal,
    bound_names,
    fresh_name,
    import_torch_insertion,
    innermost_statement,
    insert_lines,
    make_fix,
    parse_or_refuse,
    stmt_start_line,
    torch_binding,
)
from .text import (
    byte_col_to_index,
    indent_of,
    line_body,
    newline_of,
    segment,
    split_lines,
)

_BODY_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def _header_end(node: ast.stmt) -> int:
    """Last line of a compound statement's header (the whole statement for simple ones)."""
    if not any(getattr(node, f, None) for f in _BODY_FIELDS):
        return node.end_lineno or node.lineno
    end = node.lineno
    for field, value in ast.iter_fields(node):
        if field in _BODY_FIELDS or field == "decorator_list":
            continue
        children = value if isinstance(value, list) else [value]
        for child in children:
            if isinstance(child, ast.AST) and hasattr(child, "end_lineno"):
                end = max(end, child.end_lineno or end)
    return end


def _starts_line(lines: list[str], node: ast.stmt) -> bool:
    """True when only whitespace precedes the statement on its first line."""
    if getattr(node, "decorator_list", None):
        return True
    body = line_body(lines[node.lineno - 1])
    return not body[: byte_col_to_index(body, node.col_offset)].strip()


def locate_statement(text: str, line: int) -> tuple[ast.Module, ast.stmt, list[ast.AST]] | Refusal:
    """The statement a check for ``line`` (1-based) goes above, or why there is none."""
    tree = parse_or_refuse(text)
    if isinstance(tree, Refusal):
        return tree
    found = innermost_statement(tree, line)
    if found is None:
        return Refusal(f"line {line} holds no statement")
    node, parents = found
    lines = split_lines(text)
    while not _starts_line(lines, node) and parents and isinstance(parents[-1], ast.stmt):
        node, parents = parents[-1], parents[:-1]
    if line > _header_end(node):
        return Refusal(f"line {line} holds no statement of its own (blank, comment or `else:` line)")
    parent = parents[-1] if parents else None
    if isinstance(node, ast.If) and isinstance(parent, ast.If) and parent.orelse == [node] and line_body(lines[node.lineno - 1]).lstrip().startswith("elif"):
        return Refusal(
            "the condition is an `elif` test: a check placed above the whole `if` would also run "
            "(and fail) when an earlier branch is taken; turn the `elif` into `else:` + `if` first"
        )
    if isinstance(node, ast.While):
        return Refusal(
            "the condition is a `while` loop test: a check above the loop runs once, not on every "
            "iteration, so it would not hold the value the loop tests later"
        )
    return tree, node, parents


def _normalise_condition(condition: str) -> str | Refusal:
    try:
        expr = ast.parse(condition.strip(), mode="eval")
    except SyntaxError:
        return Refusal(f"`{condition}` is not a Python expression")
    text = condition.strip()
    return text if "\n" not in text and "\r" not in text else ast.unparse(expr)


def _check_text(text: str, tree: ast.Module, node: ast.stmt, condition: str, extra_lines: list[str] | None = None) -> tuple[str, str]:
    """New text with the check (and ``import torch`` when missing) inserted above ``node``."""
    lines = split_lines(text)
    start = stmt_start_line(node)
    nl = newline_of(text, start - 1)
    indent = indent_of(lines[start - 1])
    binding = torch_binding(tree)
    block = "".join(indent + ln + nl for ln in (extra_lines or []))
    block += f"{indent}{binding or 'torch'}._check({condition}){nl}"
    new = insert_lines(text, start - 1, block)
    if binding is None:
        index, imp = import_torch_insertion(text, tree, start)
        new = insert_lines(new, index, imp)
    return new, binding or "torch"


def insert_check(text: str, file: str, line: int, condition: str, *, preferred: bool = True, title: str | None = None) -> Fix | Refusal:
    """A fix inserting ``torch._check(condition)`` above the statement holding ``line``."""
    return insert_checks(text, file, line, [condition], preferred=preferred, title=title)


def insert_checks(text: str, file: str, line: int, conditions: list[str], *, preferred: bool = True, title: str | None = None) -> Fix | Refusal:
    """A fix inserting one ``torch._check(c)`` per condition above the statement holding ``line``.

    A condition on a name the statement itself binds with ``:=`` cannot be checked above it (the
    name does not exist yet): when the walrus is what the ``if``/``assert`` test evaluates first, it
    becomes an assignment above the check (``n = x.item()``, check, ``if n > 2:``), else the fix is
    refused.
    """
    conds: list[str] = []
    for condition in conditions:
        cond = _normalise_condition(condition)
        if isinstance(cond, Refusal):
            return cond
        conds.append(cond)
    located = locate_statement(text, line)
    if isinstance(located, Refusal):
        return located
    tree, node, _ = located
    used = {n.id for c in conds for n in ast.walk(ast.parse(c, mode="eval")) if isinstance(n, ast.Name)}
    walrus = [w for w in _walruses(node) if isinstance(w.target, ast.Name) and w.target.id in used]
    if walrus:
        return _bind_walrus_first(text, file, tree, node, walrus, conds, preferred, title)
    binding = torch_binding(tree) or "torch"
    new, _ = _check_text(text, tree, node, conds[-1], [f"{binding}._check({c})" for c in conds[:-1]])
    shown = " and ".join(f"`{binding}._check({c})`" for c in conds)
    return make_fix(file, text, new, title or f"Add {shown}", preferred)


def _walruses(node: ast.stmt) -> list[ast.NamedExpr]:
    """The `:=` in the statement's own header (not in the bodies of a compound statement)."""
    header = [getattr(node, "test", None)] if any(getattr(node, f, None) for f in _BODY_FIELDS) else [node]
    return [w for part in header if part is not None for w in ast.walk(part) if isinstance(w, ast.NamedExpr)]


def _evaluated_first(test: ast.expr) -> ast.expr:
    """The operand Python evaluates before anything else in ``test``."""
    while True:
        if isinstance(test, ast.Compare):
            test = test.left
        elif isinstance(test, ast.BoolOp):
            test = test.values[0]
        elif isinstance(test, ast.BinOp):
            test = test.left
        elif isinstance(test, ast.UnaryOp):
            test = test.operand
        else:
            return test


def _bind_walrus_first(
    text: str, file: str, tree: ast.Module, node: ast.stmt, walrus: list[ast.NamedExpr], conds: list[str], preferred: bool, title: str | None
) -> Fix | Refusal:
    """``if (n := x.item()) > 2:`` → ``n = x.item()`` / ``torch._check(n > 2)`` / ``if n > 2:``."""
    name = walrus[0].target.id
    test = getattr(node, "test", None)
    refusal = Refusal(
        f"the condition uses `{name}`, which this statement binds with `:=`: a check above it would run "
        f"before `{name}` exists; assign `{name}` on its own line first"
    )
    if len(walrus) != 1 or not isinstance(node, (ast.If, ast.Assert)) or test is None or _evaluated_first(test) is not walrus[0]:
        return refusal
    w = walrus[0]
    if w.lineno != w.end_lineno:
        return refusal
    lines = split_lines(text)
    idx = w.lineno - 1
    body = line_body(lines[idx])
    a = byte_col_to_index(body, w.col_offset)
    b = byte_col_to_index(body, w.end_col_offset or 0)
    left, right = body[:a].rstrip(), body[b:].lstrip()
    if not (left.endswith("(") and right.startswith(")")):
        return refusal
    before = left[:-1].rstrip()
    word = re.search(r"[\w.]*$", before)
    called = bool(before) and (before[-1] in ")]}'\"" or bool(word and word.group() and not keyword.iskeyword(word.group())))
    if called:  # those parentheses are a call's (or a subscript's), not the walrus's own
        return refusal
    value = segment(lines, w.value)
    new_lines = list(lines)
    open_paren = len(left) - 1
    close_paren = b + (len(body[b:]) - len(right))
    new_lines[idx] = body[:open_paren] + name + body[close_paren + 1 :] + lines[idx][len(body) :]
    rebound = "".join(new_lines)
    retree = ast.parse(rebound)
    renode = innermost_statement(retree, node.lineno)
    if renode is None:
        return refusal
    binding = torch_binding(retree) or "torch"
    checks = [f"{name} = {value}"] + [f"{binding}._check({c})" for c in conds[:-1]]
    new, _ = _check_text(rebound, retree, renode[0], conds[-1], checks)
    shown = " and ".join(f"`{binding}._check({c})`" for c in conds)
    bind = f"Bind `{name} = {value}` on its own line"
    return make_fix(file, text, new, f"{bind}, then {title[0].lower() + title[1:]}" if title else f"{bind} and add {shown}", preferred)


def chained_conditions(text: str, line: int, condition: str) -> list[str]:
    """When the ``if`` at ``line`` tests ``a and b and …`` and torch could not decide ``condition``
    (one of the parts), the parts from it on: for the ``if`` to be taken each must hold, and torch
    reports only the first it meets (the next ones count as its "occurrences"). ``[condition]``
    otherwise. Every part must be a comparison, or only ``condition`` is returned."""
    located = locate_statement(text, line)
    if isinstance(located, Refusal) or not isinstance(located[1], ast.If):
        return [condition]
    test = located[1].test
    if not (isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)):
        return [condition]
    try:
        wanted = ast.unparse(ast.parse(condition.strip(), mode="eval").body)
    except SyntaxError:
        return [condition]
    parts = [ast.unparse(v) for v in test.values]
    if wanted not in parts:
        return [condition]
    rest = test.values[parts.index(wanted) :]
    if not all(isinstance(v, ast.Compare) for v in rest):
        return [condition]
    lines = split_lines(text)
    return [src if "\n" not in (src := segment(lines, v)) and "\r" not in src else ast.unparse(v) for v in rest]


def negate(condition: str) -> str:
    """The opposite condition, written the simple way when it is a single comparison."""
    flip = {ast.Gt: "<=", ast.GtE: "<", ast.Lt: ">=", ast.LtE: ">", ast.Eq: "!=", ast.NotEq: "=="}
    try:
        expr = ast.parse(condition.strip(), mode="eval").body
    except SyntaxError:
        return f"not ({condition})"
    if isinstance(expr, ast.Compare) and len(expr.ops) == 1 and type(expr.ops[0]) in flip:
        return f"{ast.unparse(expr.left)} {flip[type(expr.ops[0])]} {ast.unparse(expr.comparators[0])}"
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        return ast.unparse(expr.operand)
    return f"not ({condition.strip()})"


def insert_item_check(text: str, file: str, line: int, tensor_expr: str, *, preferred: bool = False) -> Fix | Refusal:
    """For ``if <tensor expr> <op> …:`` bind the tensor's value with ``.item()`` above the ``if``,
    check it, and test the bound number: ``s = x.sum().item(); torch._check(s > 0); if s > 0:``.

    Works in torch 2.13 (docs/torch-facts.md §4) but specialises the model to the example's branch; the
    ``torch.cond`` rewrite keeps both branches and is the preferred fix for tensor conditions.
    """
    located = locate_statement(text, line)
    if isinstance(located, Refusal):
        return located
    tree, node, _ = located
    if not isinstance(node, ast.If):
        return Refusal(f"line {line} is not an `if` statement")
    lines = split_lines(text)
    test_src = segment(lines, node.test)
    want = tensor_expr.strip()
    if "\n" in test_src or "\r" in test_src or test_src.count(want) != 1:
        return Refusal(f"`{want}` does not occur exactly once in the one-line test `{test_src}`")
    name = fresh_name(bound_names(tree), "value", sep="")
    new_test = test_src.replace(want, name)
    try:
        inner = ast.parse(want, mode="eval").body
    except SyntaxError:
        return Refusal(f"`{want}` is not a Python expression")
    atom = isinstance(inner, (ast.Name, ast.Call, ast.Attribute, ast.Subscript))
    bind = f"{name} = {want if atom else '(' + want + ')'}.item()"
    new, binding = _check_text(text, tree, node, new_test, [bind])
    # Now replace the test inside the `if` header, which moved down by the inserted lines.
    shift = len(split_lines(new)) - len(lines)
    new_lines = split_lines(new)
    idx = node.test.lineno - 1 + shift
    body = line_body(new_lines[idx])
    a = byte_col_to_index(body, node.test.col_offset)
    b = byte_col_to_index(body, node.test.end_col_offset or 0)
    new_lines[idx] = body[:a] + new_test + body[b:] + new_lines[idx][len(body) :]
    title = f"Bind `{name} = {want}.item()` and add `{binding}._check({new_test})` (assume the branch taken)"
    return make_fix(file, text, "".join(new_lines), title, preferred)
