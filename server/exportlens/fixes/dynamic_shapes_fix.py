"""Edit the ``dynamic_shapes`` literal of an export call after a constraint violation.

torch says e.g. "You marked batch as dynamic but your code specialized it to be a constant
(4) ... Suggested fixes: batch = 4" and gives no file or line (docs/torch-facts.md §1.3, 1d). Two fixes:
``Dim.STATIC`` (what torch suggests: the model accepts only that size) and ``Dim.AUTO`` (export
decides per dimension instead of failing; a dimension the code specialises is still static).
"""

from __future__ import annotations

import ast
from typing import Any

from exportlens.model import Fix

from .common import Refusal, make_fix, parse_or_refuse, torch_binding, walk_with_parents
from .text import node_span, replace_spans, segment, split_lines


def _is_dim_call(node: ast.AST, name: str) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    fname = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    return fname == "Dim" and bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value == name


def _scope_statements(scope: ast.AST) -> list[ast.stmt]:
    """Statements of a function or module body, not descending into nested defs/classes."""
    out: list[ast.stmt] = []
    stack = list(getattr(scope, "body", []))
    while stack:
        s = stack.pop()
        out.append(s)
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody", "handlers"):
            for child in getattr(s, field, []) or []:
                if isinstance(child, ast.ExceptHandler):
                    stack.extend(child.body)
                elif isinstance(child, ast.stmt):
                    stack.append(child)
    return sorted(out, key=lambda s: s.lineno)


def _dim_prefix(tree: ast.Module) -> str:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("torch.export", "torch.export.dynamic_shapes"):
            for alias in node.names:
                if alias.name == "Dim":
                    return alias.asname or "Dim"
    return f"{torch_binding(tree) or 'torch'}.export.Dim"


def dynamic_shapes_fixes(text: str, file: str, call_line: int, dim: str, value: Any = None) -> list[Fix] | Refusal:
    """Fixes for "you marked ``dim`` dynamic but the code specialised it" on the export call
    at ``call_line`` (1-based): ``Dim.STATIC`` (preferred, as torch suggests) and ``Dim.AUTO``."""
    tree = parse_or_refuse(text)
    if isinstance(tree, Refusal):
        return tree
    lines = split_lines(text)
    best: tuple[ast.Call, list[ast.AST]] | None = None
    for node, parents in walk_with_parents(tree):
        if (
            isinstance(node, ast.Call)
            and node.lineno <= call_line <= (node.end_lineno or node.lineno)
            and any(k.arg == "dynamic_shapes" for k in node.keywords)
        ) and (best is None or len(parents) > len(best[1])):
            best = (node, parents)
    scope: ast.AST = tree
    if best is not None:
        call, parents = best
        spec = next(k.value for k in call.keywords if k.arg == "dynamic_shapes")
        scope = next((p for p in reversed(parents) if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef))), tree)
        before = call.lineno
    else:  # the ExportDB convention: a module-level `dynamic_shapes = {...}` beside `model`
        spec = ast.Name(id="dynamic_shapes", ctx=ast.Load())
        before = len(lines) + 1
        if not any(isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "dynamic_shapes" for t in s.targets) for s in tree.body):
            return Refusal(f"no call with `dynamic_shapes=` at line {call_line} and no module-level `dynamic_shapes`")
    stmts = _scope_statements(scope)
    if isinstance(spec, ast.Name):
        bound = [
            s for s in stmts
            if isinstance(s, ast.Assign) and s.lineno < before
            and any(isinstance(t, ast.Name) and t.id == spec.id for t in s.targets)
        ]  # fmt: skip
        if not bound:
            return Refusal(f"`{spec.id}` is not assigned a literal earlier in the same scope")
        spec = bound[-1].value
    if not isinstance(spec, (ast.Dict, ast.Tuple, ast.List)):
        return Refusal("the dynamic_shapes value is not a dict/tuple/list literal")

    # Variables bound to Dim("<dim>") in this scope or the module.
    dim_vars: dict[str, str] = {}
    for s in _scope_statements(tree) + (stmts if scope is not tree else []):
        if isinstance(s, ast.Assign) and _is_dim_call(s.value, dim):
            assert isinstance(s.value, ast.Call)
            for t in s.targets:
                if isinstance(t, ast.Name):
                    dim_vars[t.id] = segment(lines, s.value.func)
    refs: list[tuple[ast.AST, str]] = []
    derived = False
    for node, anc in walk_with_parents(spec):
        hit: str | None = None
        if _is_dim_call(node, dim):
            assert isinstance(node, ast.Call)
            hit = segment(lines, node.func)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and (node.id in dim_vars or node.id == dim):
            hit = dim_vars.get(node.id) or _dim_prefix(tree)
        if hit is not None:
            if any(isinstance(a, ast.Call) for a in anc) and not _is_dim_call(node, dim):
                continue  # an argument of some call, not an entry of the spec
            if anc and isinstance(anc[-1], ast.BinOp):
                derived = True
            refs.append((node, hit))
    if derived:
        return Refusal(f"`{dim}` is used in a derived dimension (arithmetic); edit the spec by hand")
    if not refs:
        return Refusal(f"`{dim}` does not appear in the dynamic_shapes of this call")

    fixes: list[Fix] = []
    shown = f" = {value}" if value is not None else ""
    static = f"Mark `{dim}` static with Dim.STATIC, as torch suggests ({dim}{shown}): the model will not be dynamic in `{dim}`"
    auto = f"Switch `{dim}` to Dim.AUTO: export no longer fails, but keeps `{dim}` dynamic only where the code allows (this code specialises it: {dim}{shown})"
    variants = (("STATIC", True, static), ("AUTO", False, auto))
    for attr, pref, title in variants:
        spans = []
        for node, prefix in refs:
            a, b = node_span(text, node)
            spans.append((a, b, f"{prefix}.{attr}"))
        fix = make_fix(file, text, replace_spans(text, spans), title, pref)
        if isinstance(fix, Refusal):
            return fix
        fixes.append(fix)
    return fixes
