"""Where the user wrote an export call's dynamic shapes and example inputs, in the source.

A dynamic-shape fix edits what the user wrote, where they wrote it: a `Dim("seq", ...)` bound to a
name, inline in the dict, or returned by a helper; a `Dim.AUTO` entry of the spec; the literal
size of an example input (`torch.randint(0, 100, (1, 1))`). This module finds those nodes; the
generators in `dynamic_shapes_fix.py` edit them. Pure: text in, nodes out.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .common import torch_binding, walk_with_parents

# torch factories whose size is written as varargs or one tuple (`torch.randn(2, 3)`, `torch.zeros((2, 3))`)
_SIZED = {"randn", "rand", "zeros", "ones", "empty", "randn_like", "full"}
_SIZE_LAST = {"randint"}  # randint(high, size) / randint(low, high, size)


def call_name(node: ast.AST) -> str | None:
    """The called function's last name (`torch.export.Dim` → `Dim`)."""
    if not isinstance(node, ast.Call):
        return None
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None


def dim_calls(tree: ast.Module, name: str) -> list[ast.Call]:
    """Every `Dim("<name>", ...)` call of the module, in source order (bound, inline or in a helper)."""
    spelled = {"Dim", dim_prefix(tree).rsplit(".", 1)[-1]}  # `from torch.export import Dim as D`
    found = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and call_name(n) in spelled and n.args and isinstance(n.args[0], ast.Constant) and n.args[0].value == name
    ]
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def dim_prefix(tree: ast.Module) -> str:
    """How this module spells `Dim` (`Dim` when imported from torch.export, else `torch.export.Dim`)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("torch.export", "torch.export.dynamic_shapes"):
            for alias in node.names:
                if alias.name == "Dim":
                    return alias.asname or "Dim"
    return f"{torch_binding(tree) or 'torch'}.export.Dim"


def bound_name(tree: ast.Module, call: ast.Call) -> tuple[str, ast.stmt] | None:
    """(`seq`, its statement) when the call is the whole value of `seq = Dim("seq", ...)`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and node.value is call and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            return node.targets[0].id, node
    return None


def statement_of(tree: ast.Module, node: ast.AST) -> tuple[ast.stmt, list[ast.AST]] | None:
    """The statement holding `node`, and that statement's ancestors."""
    for n, parents in walk_with_parents(tree):
        if n is node:
            for i in range(len(parents) - 1, -1, -1):
                if isinstance(parents[i], ast.stmt):
                    return parents[i], parents[:i]  # type: ignore[return-value]
    return None


def export_call(tree: ast.Module, line: int) -> ast.Call | None:
    """The export call of a target at `line` (the innermost call there with `dynamic_shapes=`, else
    one named `export`)."""
    best: tuple[int, int, ast.Call] | None = None
    for node, parents in walk_with_parents(tree):
        if not isinstance(node, ast.Call) or not node.lineno <= line <= (node.end_lineno or node.lineno):
            continue
        score = 2 if any(k.arg == "dynamic_shapes" for k in node.keywords) else 1 if call_name(node) in ("export", "draft_export") else 0
        if score and (best is None or (score, len(parents)) > best[:2]):
            best = (score, len(parents), node)
    return best[2] if best is not None else None


def _assigned(tree: ast.Module, name: str, before: int) -> ast.expr | None:
    """The value of the last `name = ...` of the module (or a function) before line `before`."""
    found: ast.expr | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and node.lineno < before and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            if found is None or node.lineno > getattr(found, "lineno", 0):
                found = node.value
    return found


def resolve(tree: ast.Module, node: ast.expr | None, before: int, depth: int = 3) -> ast.expr | None:
    """A name followed to the value it was last assigned before `before` (a few steps)."""
    while isinstance(node, ast.Name) and depth > 0:
        node = _assigned(tree, node.id, before)
        depth -= 1
    return node


def call_inputs(tree: ast.Module, line: int) -> tuple[ast.expr | None, ast.expr | None, int]:
    """(args, kwargs, line they are read before) of the target at `line`: the export call's, else
    the module's `example_args` / `example_kwargs` (the ExportDB convention)."""
    call = export_call(tree, line)
    if call is not None:
        args = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "args"), None)
        kwargs = call.args[2] if len(call.args) > 2 else next((k.value for k in call.keywords if k.arg == "kwargs"), None)
        return args, kwargs, call.lineno
    end = len(tree.body) and (tree.body[-1].end_lineno or 0) + 1
    return _assigned(tree, "example_args", end), _assigned(tree, "example_kwargs", end), end


@dataclass(frozen=True)
class ExampleSize:
    """The literal size of one dimension of an example input: where to squiggle and what to edit."""

    creation: ast.Call  # `torch.randint(0, 100, (1, 1))`
    size: ast.Constant  # the `1` of the dimension


def example_size(tree: ast.Module, line: int, input_name: str, index: int, dim: int) -> ExampleSize | None:
    """The literal size of dimension `dim` of the example input (`index`-th positional, or the
    keyword `input_name`), where the example is a torch factory call written with literal sizes."""
    args, kwargs, before = call_inputs(tree, line)
    args, kwargs = resolve(tree, args, before), resolve(tree, kwargs, before)
    value: ast.expr | None = None
    if isinstance(args, (ast.Tuple, ast.List)) and index < len(args.elts):
        value = args.elts[index]
    elif isinstance(kwargs, ast.Dict):
        value = next((v for k, v in zip(kwargs.keys, kwargs.values, strict=True) if isinstance(k, ast.Constant) and k.value == input_name), None)
    value = resolve(tree, value, before)
    if not isinstance(value, ast.Call):
        return None
    size = _size_node(value, dim)
    return ExampleSize(value, size) if size is not None else None


def _size_node(call: ast.Call, dim: int) -> ast.Constant | None:
    name = call_name(call)
    sizes: list[ast.expr] | None = None
    keyword = next((k.value for k in call.keywords if k.arg == "size"), None)
    if isinstance(keyword, (ast.Tuple, ast.List)):
        sizes = list(keyword.elts)
    elif name in _SIZED:
        first = call.args[0] if call.args else None
        if isinstance(first, (ast.Tuple, ast.List)):
            sizes = list(first.elts)
        elif name != "full":
            sizes = list(call.args)
    elif name in _SIZE_LAST:
        last = call.args[-1] if call.args else None
        sizes = list(last.elts) if isinstance(last, (ast.Tuple, ast.List)) else None
    if sizes is None or dim >= len(sizes):
        return None
    node = sizes[dim]
    return node if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool) else None


def spec_entry(tree: ast.Module, line: int, input_name: str, index: int, dim: int) -> ast.expr | None:
    """The entry of dimension `dim` of an input in the target's `dynamic_shapes` literal
    (`{"x": {1: Dim.AUTO}}`, `{"x": (None, Dim.AUTO)}`, a positional tuple), names followed."""
    call = export_call(tree, line)
    if call is not None:
        spec: ast.expr | None = next((k.value for k in call.keywords if k.arg == "dynamic_shapes"), None)
        before = call.lineno
    else:
        before = len(tree.body) and (tree.body[-1].end_lineno or 0) + 1
        spec = _assigned(tree, "dynamic_shapes", before)
    spec = resolve(tree, spec, before)
    entry: ast.expr | None = None
    if isinstance(spec, ast.Dict):
        entry = next((v for k, v in zip(spec.keys, spec.values, strict=True) if isinstance(k, ast.Constant) and k.value == input_name), None)
    elif isinstance(spec, (ast.Tuple, ast.List)) and index < len(spec.elts):
        entry = spec.elts[index]
    entry = resolve(tree, entry, before)
    if isinstance(entry, ast.Dict):
        return next((v for k, v in zip(entry.keys, entry.values, strict=True) if isinstance(k, ast.Constant) and k.value == dim), None)
    if isinstance(entry, (ast.Tuple, ast.List)) and dim < len(entry.elts):
        return entry.elts[dim]
    return None
