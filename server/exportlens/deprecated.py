"""Deprecated torch APIs in the user's source, found statically (no torch, no run needed).

`torch._check_is_size(x)` raises a FutureWarning since torch 2.11 and will be removed along with
`guard_size_oblivious`; torch's own advice is `torch._check(x >= 0)`. ExportLens reports it as a
`deprecated-api` hint with that rewrite, and never suggests `_check_is_size` itself.
"""

from __future__ import annotations

import ast

from exportlens.model import HINT, Diagnostic, Fix, TextEdit
from exportlens.source import Source

CODE = "deprecated-api"
_OLD = "_check_is_size"


def _bound_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(names of the torch module, names bound directly to torch._check_is_size) in this file."""
    modules: set[str] = {"torch"}
    direct: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(a.asname for a in node.names if a.name == "torch" and a.asname)
        elif isinstance(node, ast.ImportFrom) and node.module == "torch":
            direct.update(a.asname or a.name for a in node.names if a.name == _OLD)
    return modules, direct


def _torch_alias(tree: ast.Module) -> str | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "torch":
                    return a.asname or "torch"
    return None


def _calls(tree: ast.Module) -> list[tuple[ast.Call, str | None]]:
    """Each `torch._check_is_size(...)` call with the module prefix it used (None: imported by name)."""
    modules, direct = _bound_names(tree)
    out: list[tuple[ast.Call, str | None]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr == _OLD and isinstance(f.value, ast.Name) and f.value.id in modules:
            out.append((node, f.value.id))
        elif isinstance(f, ast.Name) and f.id in direct:
            out.append((node, None))
    return sorted(out, key=lambda c: (c[0].lineno, c[0].col_offset))


def check(src: Source) -> list[Diagnostic]:
    """A `deprecated-api` hint on every `torch._check_is_size(...)` call."""
    tree = src.tree
    if tree is None:
        return []
    out = []
    for call, _prefix in _calls(tree):
        arg = ast.get_source_segment(src.text, call.args[0]) if call.args else None
        replacement = f"torch._check({_nonneg(call.args[0], arg)})" if arg else "torch._check(x >= 0)"
        message = (
            f"`torch._check_is_size` is deprecated (a FutureWarning since torch 2.11; it goes away with "
            f"guard_size_oblivious). Use `{replacement}`: it tells export the same thing."
        )
        out.append(Diagnostic(src.path, src.node_range(call), HINT, CODE, message, "", data={"deprecated": "torch._check_is_size", "replacement": replacement}))
    return out


def _nonneg(node: ast.expr, text: str) -> str:
    simple = isinstance(node, (ast.Name, ast.Attribute, ast.Subscript, ast.Call, ast.Constant))
    return f"{text} >= 0" if simple else f"({text}) >= 0"


def fix(text: str, d: Diagnostic) -> Fix | None:
    """Rewrite the call at the diagnostic's range as `torch._check(x >= 0)` (same meaning: a rewrite)."""
    src = Source(d.file, text)
    tree = src.tree
    if tree is None:
        return None
    for call, prefix in _calls(tree):
        if src.node_range(call) != d.range:
            continue
        if len(call.args) != 1 or call.keywords:
            return None  # `max=` or a message: not a one-to-one rewrite
        arg = ast.get_source_segment(text, call.args[0])
        if arg is None:
            return None
        module = prefix or _torch_alias(tree)
        if module is None:
            return None  # `from torch import _check_is_size` and no `import torch` to reach torch._check
        new = f"{module}._check({_nonneg(call.args[0], arg)})"
        return Fix(f"Replace with `{new}` (the same check, not deprecated)", (TextEdit(d.file, d.range, new),), True)
    return None
