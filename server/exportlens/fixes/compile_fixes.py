"""Fixes for torch.compile findings (graph breaks and recompiles), from the troubleshooting guide.

Each is a small, exact edit: a dynamo config line inserted once after the imports, a
`@torch.compiler.disable` decorator on an untraceable helper, or `dynamic=False` dropped from
the `torch.compile` call that keeps recompiling. The `torch.cond` rewrite for a data-dependent
branch is `cond_rewrite.rewrite_if_as_cond`, shared with export.
"""

from __future__ import annotations

import ast

from exportlens.model import Diagnostic, Fix
from exportlens.source import Reader

from .common import Offer, Refusal, import_torch_insertion, insert_lines, make_fix, parse_or_refuse, stmt_start_line, torch_binding
from .cond_rewrite import rewrite_if_as_cond
from .text import indent_of, newline_of, node_span, replace_spans, split_lines


def _after_imports(text: str, tree: ast.Module, statement: str) -> str:
    """`statement` (using the name `torch`) inserted after the last top-level import."""
    nl = newline_of(text)
    binding = torch_binding(tree)
    index, import_line = import_torch_insertion(text, tree, len(split_lines(text)) + 1)
    line = statement.replace("torch.", f"{binding or 'torch'}.", 1) + nl
    if binding is None:
        line = import_line + line
    elif import_line.startswith(nl):
        line = nl + line
    return insert_lines(text, index, line)


def dynamo_config_fix(text: str, file: str, setting: str, title: str, *, preferred: bool = True) -> Fix | Refusal:
    """Insert `torch._dynamo.config.<setting>` once, near the imports."""
    tree = parse_or_refuse(text)
    if isinstance(tree, Refusal):
        return tree
    key = setting.split("=")[0].split(".")[0].split("(")[0].strip()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == key and ast.unparse(node.value).endswith("_dynamo.config"):
            return Refusal(f"`torch._dynamo.config.{key}` is already set in this file")
    return make_fix(file, text, _after_imports(text, tree, f"torch._dynamo.config.{setting}"), title, preferred)


def capture_scalar_outputs_fix(text: str, file: str) -> Fix | Refusal:
    return dynamo_config_fix(
        text, file, "capture_scalar_outputs = True", "Set `torch._dynamo.config.capture_scalar_outputs = True` (capture .item() in the graph)"
    )


def reorderable_logging_fix(text: str, file: str, function: str) -> Fix | Refusal:
    if not function.isidentifier():
        return Refusal(f"`{function}` is not a plain function name")
    return dynamo_config_fix(
        text,
        file,
        f"reorderable_logging_functions.add({function})",
        f"Register `{function}` in `torch._dynamo.config.reorderable_logging_functions` (no graph break)",
    )


def compiler_disable_fix(text: str, file: str, line: int, *, preferred: bool = False) -> Fix | Refusal:
    """Decorate the innermost function holding `line` (1-based) with `@torch.compiler.disable`."""
    tree = parse_or_refuse(text)
    if isinstance(tree, Refusal):
        return tree
    holders = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt_start_line(n) <= line <= (n.end_lineno or n.lineno)]
    if not holders:
        return Refusal(f"line {line} is not inside a function")
    fn = max(holders, key=lambda n: n.lineno)
    if any("disable" in ast.unparse(d) for d in fn.decorator_list):
        return Refusal(f"`{fn.name}` is already excluded from compilation")
    lines = split_lines(text)
    first = fn.lineno  # right above `def`, below other decorators: disable wraps the plain function
    binding = torch_binding(tree)
    new = insert_lines(text, first - 1, f"{indent_of(lines[first - 1])}@{binding or 'torch'}.compiler.disable{newline_of(text, first - 1)}")
    if binding is None:
        index, import_line = import_torch_insertion(new, ast.parse(new), first)
        new = insert_lines(new, index, import_line)
    return make_fix(file, text, new, f"Run `{fn.name}` outside the graph with `@torch.compiler.disable`", preferred)


def _own_line(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The whole line around [start, end) when nothing but blanks, a comma and a comment is beside it."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end + 1
    before, after = text[line_start:start], text[end:line_end]
    rest = after.strip()
    if before.strip() or not (rest == "" or rest == "," or rest.startswith("#") or (rest.startswith(",") and rest[1:].strip().startswith("#"))):
        return None
    return line_start, line_end


def drop_dynamic_false_fix(text: str, file: str, call_line: int) -> Fix | Refusal:
    """Remove `dynamic=False` from the `torch.compile(...)` call or decorator at `call_line`."""
    tree = parse_or_refuse(text)
    if isinstance(tree, Refusal):
        return tree
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and call.lineno <= call_line <= (call.end_lineno or call.lineno)):
            continue
        items: list[ast.AST] = [*call.args, *call.keywords]
        for kw in call.keywords:
            if kw.arg == "dynamic" and isinstance(kw.value, ast.Constant) and kw.value.value is False:
                at = items.index(kw)
                start, end = node_span(text, kw)
                own_line = _own_line(text, start, end)
                if own_line is not None:  # `dynamic=False,  # comment` alone on its line: drop the line
                    start, end = own_line
                elif at > 0:  # from the end of the previous argument
                    start = node_span(text, items[at - 1])[1]
                elif at + 1 < len(items):  # up to the next argument
                    end = node_span(text, items[at + 1])[0]
                new = replace_spans(text, [(start, end, "")])
                return make_fix(file, text, new, "Drop `dynamic=False` so torch.compile marks the changing sizes dynamic", True)
    return Refusal(f"no `dynamic=False` in a call at line {call_line}")


# -- the fixer (codes.py names it) --------------------------------------------------------------


def compile_finding(d: Diagnostic, read: Reader, offer: Offer) -> list[Fix]:
    """graph-break / recompile: the fixes the worker said apply, in its order of preference."""
    out: list[Fix] = []
    for want in d.data.get("fixes") or []:
        kind = want.get("fix")
        file = want.get("file") or (want.get("compile_call") or {}).get("file") or d.file
        text = read(file)
        if text is None:
            continue
        if kind == "torch_cond":
            found = offer.take(rewrite_if_as_cond(text, file, d.range.start.line + 1))
        elif kind == "capture_scalar_outputs":
            found = offer.take(capture_scalar_outputs_fix(text, file))
        elif kind == "reorderable_logging":
            found = offer.take(reorderable_logging_fix(text, file, str(want.get("function") or "print")))
        elif kind == "compiler_disable":
            found = offer.take(compiler_disable_fix(text, file, int(want.get("line") or d.range.start.line + 1)))
        elif kind == "drop_dynamic_false":
            found = offer.take(drop_dynamic_false_fix(text, file, int((want.get("compile_call") or {}).get("line") or 0)))
        else:
            found = []  # pass-as-tensor, mark_dynamic, torch._check under compile: not rewritten automatically
        out += [Fix(f.title, f.edits, not out and i == 0) for i, f in enumerate(found)]
    return out
