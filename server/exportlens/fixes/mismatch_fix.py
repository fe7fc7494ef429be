"""Edit an existing fake kernel whose output does not match the real kernel's.

draft_export says only ``'Dtypes torch.float64 and torch.float32 are not equal!'`` or
``'mismatch between fake value 3 and real value 6 '`` (it compares sizes pairwise and never
says "rank"), plus the real output's metadata in the op profile (docs/torch-facts.md §1.3, 1c). So:
a dtype mismatch sets ``dtype=`` on the factory call (or adds ``.to(dtype)``); a size mismatch
returns a new tensor of the real rank with data-dependent sizes; a fake returning its input
returns a fresh tensor instead of the alias. Never registers a second fake kernel.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from typing import Any

from exportlens.model import Diagnostic, Fix
from exportlens.source import Reader

from .common import (
    Offer,
    Refusal,
    make_fix,
    parse_or_refuse,
    stmt_start_line,
    torch_binding,
    walk_with_parents,
)
from .fake_kernel import _device, _dtype, missing_fake_kernel
from .text import indent_of, newline_of, node_span, replace_spans, segment, split_lines

_FACTORIES = {
    "empty", "empty_like", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like", "rand",
    "rand_like", "randn", "randn_like", "empty_strided", "new_empty", "new_zeros", "new_ones",
    "new_full", "new_empty_strided", "arange", "tensor",
}  # fmt: skip
_DTYPE_RE = re.compile(r"Dtypes (torch\.\w+) and (torch\.\w+) are not equal")
_SIZE_RE = re.compile(r"mismatch between fake value (\S+) and real value (\S+)")


def _function_at(tree: ast.Module, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    for node, _ in walk_with_parents(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and line in (stmt_start_line(node), node.lineno):
            return node
    return None


def _own_returns(fn: ast.AST) -> list[ast.Return]:
    out, stack = [], list(ast.iter_child_nodes(fn))
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Return):
            out.append(n)
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(n))
    return sorted(out, key=lambda r: r.lineno)


def _factory(e: ast.AST) -> ast.Call | None:
    if isinstance(e, ast.Call):
        f = e.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
        if name in _FACTORIES:
            return e
    return None


def mismatch_fix(
    text: str,
    file: str,
    def_line: int,
    reason: str,
    real_out: dict[str, Any] | list[dict[str, Any]] | None,
    *,
    preferred: bool = True,
) -> Fix | Refusal:
    """A fix editing the fake function defined at ``def_line`` (1-based, decorator or ``def``)
    so it produces what the real kernel produced (``real_out``: ``{"rank", "dtype", "device"}``)."""
    tree = parse_or_refuse(text)
    if isinstance(tree, Refusal):
        return tree
    fn = _function_at(tree, def_line)
    if fn is None:
        return Refusal(f"no fake function defined at line {def_line}")
    if isinstance(real_out, list):
        if len(real_out) != 1:
            return Refusal("the op returns several tensors and torch does not say which one mismatches")
        real_out = real_out[0]
    returns = _own_returns(fn)
    if not returns or any(r.value is None for r in returns):
        return Refusal("the fake function has no `return <tensor>` to correct")
    if any(isinstance(r.value, (ast.Tuple, ast.List)) for r in returns):
        return Refusal("the fake function returns several tensors and torch does not say which one mismatches")
    lines = split_lines(text)
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
    tb = torch_binding(tree) or "torch"
    dtype_m, size_m = _DTYPE_RE.search(reason), _SIZE_RE.search(reason)
    aliased = [r for r in returns if isinstance(r.value, ast.Name) and r.value.id in params]
    spans: list[tuple[int, int, str]] = []

    if dtype_m:
        if real_out is None:
            return Refusal("the real output's dtype is unknown (no op profile)")
        dt = _dtype(real_out["dtype"])
        if dt not in dtype_m.groups():
            return Refusal(f"the profile's dtype {dt} is not one of the two torch compared")
        assigns = {t.id: n.value for n in ast.walk(fn) if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
        for r in returns:
            v = r.value
            assert v is not None
            if isinstance(v, ast.Name) and v.id in params:
                a, b = node_span(text, v)
                spans.append((a, b, f"{tb}.empty_like({v.id}, dtype={dt})"))
                continue
            call = _factory(v) or (_factory(assigns[v.id]) if isinstance(v, ast.Name) and v.id in assigns else None)
            if call is not None:
                kw = next((k for k in call.keywords if k.arg == "dtype"), None)
                if kw is not None:
                    a, b = node_span(text, kw.value)
                    spans.append((a, b, dt))
                else:
                    a, b = node_span(text, call)
                    a = b - 1  # before the closing parenthesis
                    sep = ", " if call.args or call.keywords else ""
                    spans.append((a, a, f"{sep}dtype={dt}"))
            else:
                a, b = node_span(text, v)
                src = segment(lines, v)
                atom = isinstance(v, (ast.Name, ast.Call, ast.Attribute, ast.Subscript))
                spans.append((a, b, f"{src if atom else '(' + src + ')'}.to({dt})"))
        title = f"Make the fake kernel return {dt}, as the real kernel does"
        new = replace_spans(text, sorted(set(spans)))
        return make_fix(file, text, new, title, preferred)

    if size_m:
        if real_out is None:
            return Refusal("the real output's rank is unknown (no op profile)")
        rank = int(real_out["rank"])
        dt = _dtype(real_out["dtype"])
        used = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} | set(params)
        ctx = "ctx" if "ctx" not in used else "fake_ctx"
        inserts: list[tuple[int, int, str]] = []
        for r in returns:
            v = r.value
            assert v is not None
            names = [n.id for n in ast.walk(v) if isinstance(n, ast.Name) and n.id in params]
            device = f"{names[0]}.device" if names else repr(_device(real_out.get("device", "cpu")))
            sizes = ", ".join(f"{ctx}.new_dynamic_size()" for _ in range(rank))
            shape = "()" if rank == 0 else f"({sizes},)" if rank == 1 else f"({sizes})"
            a, b = node_span(text, v)
            spans.append((a, b, f"{tb}.empty({shape}, dtype={dt}, device={device})"))
            if rank:
                ra, _ = node_span(text, r)
                line_start = ra - len(text[:ra].split("\n")[-1].split("\r")[-1])
                ind = indent_of(lines[r.lineno - 1])
                if text[line_start:ra].strip():
                    return Refusal("the fake function's `return` shares its line with other code")
                nl = newline_of(text, r.lineno - 1)
                inserts.append((line_start, line_start, f"{ind}{ctx} = {tb}.library.get_ctx(){nl}"))
        title = f"Make the fake kernel return a new rank-{rank} {dt} tensor with data-dependent sizes"
        new = replace_spans(text, spans + inserts)
        return make_fix(file, text, new, title, preferred)

    if aliased:
        for r in aliased:
            assert isinstance(r.value, ast.Name)
            a, b = node_span(text, r.value)
            spans.append((a, b, f"{tb}.empty_like({r.value.id})"))
        title = "Return a fresh tensor from the fake kernel instead of its input"
        return make_fix(file, text, replace_spans(text, spans), title, preferred)
    return Refusal(f"cannot tell how to correct the fake kernel from torch's reason: {reason.strip()!r}")


# -- the fixer (codes.py names it) --------------------------------------------------------------


def mismatched_fake_kernel(d: Diagnostic, read: Reader, offer: Offer) -> list[Fix]:
    """mismatched-fake-kernel: the registered fake function corrected from the real outputs."""
    fake = d.data.get("fake")
    profiles = d.data.get("profiles") or []
    if not fake and d.data.get("library"):  # the library's own fake kernel is wrong: one registered in the project replaces it
        op = d.data.get("qualname") or d.data.get("op")
        title = f"Replace the library's wrong fake kernel of `{op}` with one in this file (from the outputs draft_export observed)"
        return [dataclasses.replace(f, title=title) for f in missing_fake_kernel(d, read, offer)]
    if not fake or len(profiles) != 1:
        return []
    text = read(fake["file"])
    if text is None:
        return []
    return offer.take(mismatch_fix(text, fake["file"], int(fake["line"]), d.data.get("reason", ""), profiles[0].get("out")))
