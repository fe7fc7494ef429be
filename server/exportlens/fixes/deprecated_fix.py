"""Deprecated torch calls in a file's text, and their rewrite: `torch._check_is_size(x)` → `torch._check(x >= 0)`.

`torch._check_is_size(x)` raises a FutureWarning since torch 2.11 and will be removed along with
`guard_size_oblivious`; torch's own advice is `torch._check(x >= 0)`, which states the same fact to
export (a rewrite, not an assumption). `deprecated.py` reports each call this module finds as a
`deprecated-api` hint. Pure functions of the text; no torch.
"""

from __future__ import annotations

import ast

from exportlens.model import Diagnostic, Fix, TextEdit
from exportlens.source import Reader, Source

from .common import Offer

DEPRECATED = "torch._check_is_size"
_OLD = DEPRECATED.rpartition(".")[2]


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


def calls(tree: ast.Module) -> list[tuple[ast.Call, str | None]]:
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


def replacement(call: ast.Call, text: str) -> str:
    """What the call says in the form torch recommends, for the message (`torch._check(n >= 0)`)."""
    arg = ast.get_source_segment(text, call.args[0]) if call.args else None
    return f"torch._check({_nonneg(call.args[0], arg)})" if arg else "torch._check(x >= 0)"


def _nonneg(node: ast.expr, text: str) -> str:
    simple = isinstance(node, (ast.Name, ast.Attribute, ast.Subscript, ast.Call, ast.Constant))
    return f"{text} >= 0" if simple else f"({text}) >= 0"


def rewrite(text: str, d: Diagnostic) -> Fix | None:
    """Rewrite the call at the diagnostic's range as `torch._check(x >= 0)` (same meaning: a rewrite)."""
    src = Source(d.file, text)
    tree = src.tree
    if tree is None:
        return None
    for call, prefix in calls(tree):
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


# -- the fixer (codes.py names it) --------------------------------------------------------------


def deprecated_api(d: Diagnostic, read: Reader, offer: Offer) -> list[Fix]:
    """deprecated-api: the deprecated call rewritten with its replacement (`rewrite`)."""
    text = read(d.file)
    fix = rewrite(text, d) if text is not None else None
    return [fix] if fix is not None else []
