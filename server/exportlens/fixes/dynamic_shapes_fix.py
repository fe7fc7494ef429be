"""Dynamic-shape fixes as torch suggests them, edited where the user wrote their Dims and examples.

Plain export's constraint violation ends with "Suggested fixes:" (docs/torch-facts.md §9):
a range (`seq = Dim('seq', min=17, max=64)`), a derived dimension (`_n = Dim('_n', min=1,
max=512)` then `n = 2*_n`), a relation (`b = a`), or a constant (`batch = 4`). The first three keep
the dimension dynamic and are what a fix should do; a constant gives it up and says so. A size of
0 or 1 in the example is always specialised: the fix that keeps the dimension dynamic edits the
example (`(1, 1)` → `(1, 2)`). `Dim.STATIC` is always the alternative that gives the dimension up,
and its title says so.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace
from typing import Any

from exportlens.model import Diagnostic, Fix
from exportlens.source import Reader

from .common import Offer, Refusal, bound_names, fresh_name, make_fix, parse_or_refuse
from .cond_rewrite import rewrite_if_as_cond
from .spec_source import bound_name, dim_calls, dim_prefix, spec_entry, statement_of
from .spec_source import example_size as example_site
from .text import indent_of, newline_of, node_span, replace_spans, segment, split_lines

_RANGE = re.compile(r"^(?P<name>\w+) = Dim\('(?P<dim>[^']*)'(?:, min=(?P<min>-?\d+))?(?:, max=(?P<max>-?\d+))?\)$")
_CONSTANT = re.compile(r"^(?P<name>\w+) = (?P<value>-?\d+)$")
_LINEAR = re.compile(r"^(?P<name>\w+) = (?:(?P<factor>\d+)\*)?(?P<root>[A-Za-z_]\w*)(?: (?P<sign>[+-]) (?P<offset>\d+))?$")


@dataclass(frozen=True)
class Suggestion:
    """One line of torch's "Suggested fixes:", parsed."""

    name: str
    kind: str  # range | static | derived (`name = factor*root + offset`; factor 1, offset 0: equal)
    min: int | None = None
    max: int | None = None
    value: int | None = None
    root: str | None = None
    factor: int = 1
    offset: int = 0


def parse_suggested(lines: list[str]) -> dict[str, Suggestion]:
    """torch's suggested-fix lines by the name they set (unknown shapes of line are skipped)."""
    out: dict[str, Suggestion] = {}
    for line in lines:
        line = line.strip()
        if m := _RANGE.match(line):
            out[m["name"]] = Suggestion(m["name"], "range", min=_int(m["min"]), max=_int(m["max"]))
        elif m := _CONSTANT.match(line):
            out[m["name"]] = Suggestion(m["name"], "static", value=int(m["value"]))
        elif m := _LINEAR.match(line):
            offset = int(m["offset"] or 0) * (-1 if m["sign"] == "-" else 1)
            out[m["name"]] = Suggestion(m["name"], "derived", root=m["root"], factor=int(m["factor"] or 1), offset=offset)
    return out


def _int(text: str | None) -> int | None:
    return int(text) if text is not None else None


def _dim_text(prefix: str, name: str, lo: int | None, hi: int | None) -> str:
    bounds = "".join(f", {k}={v}" for k, v in (("min", lo), ("max", hi)) if v is not None)
    return f'{prefix}("{name}"{bounds})'


def _span(lo: int | None, hi: int | None) -> str:
    return f"{lo if lo is not None else 0}..{hi if hi is not None else '∞'}"


def refine_range(text: str, file: str, name: str, lo: int | None, hi: int | None, *, preferred: bool = True) -> Fix | Refusal:
    """Every `Dim("name", ...)` of the file gets torch's range: the dimension stays dynamic."""
    tree = parse_or_refuse(text)
    if isinstance(tree, Refusal):
        return tree
    calls = dim_calls(tree, name)
    if not calls:
        return Refusal(f'no `Dim("{name}", ...)` in this file to refine (the Dim may be built elsewhere)')
    lines = split_lines(text)
    spans = []
    for call in calls:
        a, b = node_span(text, call)
        spans.append((a, b, _dim_text(segment(lines, call.func), name, lo, hi)))
    shown = _dim_text(segment(lines, calls[0].func), name, lo, hi)
    title = f"Refine `{name}` to `{shown}`, as torch suggests: it stays dynamic, over {_span(lo, hi)}"
    return make_fix(file, text, replace_spans(text, spans), title, preferred)


def derive(text: str, file: str, name: str, suggested: list[str], *, preferred: bool = True) -> Fix | Refusal:
    """`n` becomes `2 * _n`, as torch's `suggested` lines say; a new root Dim (`_n = Dim("_n", min=1,
    max=512)`) is inserted above the first place `n` is written, an existing one is used by its name."""
    tree = parse_or_refuse(text)
    if isinstance(tree, Refusal):
        return tree
    lines_by_name = parse_suggested(suggested)
    s = lines_by_name.get(name)
    calls = dim_calls(tree, name)
    if s is None or s.kind != "derived" or s.root is None:
        return Refusal(f"torch suggests no derived dimension for `{name}`")
    if not calls:
        return Refusal(f'no `Dim("{name}", ...)` in this file to derive from another dimension')
    lines = split_lines(text)
    prefix = segment(lines, calls[0].func)
    existing = dim_calls(tree, s.root)
    root = lines_by_name.get(s.root)
    insert = ""
    if existing:  # a relation to a Dim the user already has: refer to it by its variable
        bound = bound_name(tree, existing[0])
        if bound is None:
            return Refusal(f'`Dim("{s.root}")` is not bound to a name this file could refer to; edit the spec by hand')
        root_name = bound[0]
    else:
        if root is None or root.kind != "range":
            return Refusal(f"torch's suggestion names the root `{s.root}` without its range")
        root_name = fresh_name(bound_names(tree), s.root) if s.root in bound_names(tree) else s.root
        insert = f"{root_name} = {_dim_text(prefix, s.root, root.min, root.max)}"
    expr = f"{s.factor} * {root_name}" if s.factor != 1 else root_name
    if s.offset:
        expr += f" {'+' if s.offset > 0 else '-'} {abs(s.offset)}"
    new = replace_spans(text, [(*node_span(text, call), expr) for call in calls])
    if insert:
        place = statement_of(tree, calls[0])
        if place is None:
            return Refusal("could not find the statement that builds the Dim")
        stmt = place[0]
        new_lines = split_lines(new)
        new_lines.insert(stmt.lineno - 1, indent_of(lines[stmt.lineno - 1]) + insert + newline_of(text, stmt.lineno - 1))
        new = "".join(new_lines)
    how = f"`{insert}`, then `{name} = {expr}`" if insert else f"`{name} = {expr}`"
    title = f"Make `{name}` a derived dimension, as torch suggests: {how}; it stays dynamic"
    return make_fix(file, text, new, title, preferred)


def static_dims(text: str, file: str, call_line: int, name: str | None, dims: list[dict[str, Any]], value: int | None = None) -> Fix | Refusal:
    """`Dim.STATIC` for the dimension: every `Dim("name")` of the file, or (Dim.AUTO, Dim.DYNAMIC)
    the entries of `dims` in the spec of the export call at `call_line`. Export passes, and the
    dimension is no longer dynamic: never the preferred fix."""
    tree = parse_or_refuse(text)
    if isinstance(tree, Refusal):
        return tree
    nodes: list[ast.expr] = [*dim_calls(tree, name)] if name else []
    for dim in dims:
        entry = spec_entry(tree, call_line, str(dim["input"]), int(dim["index"]), int(dim["dim"])) if not dim.get("name") else None
        if entry is not None and not any(entry is n for n in nodes):
            nodes.append(entry)
    what = name or ", ".join(str(d["spelled"]) for d in dims)
    if not nodes:
        return Refusal(f"could not find where `{what}` is declared dynamic in this file")
    static = f"{dim_prefix(tree)}.STATIC"
    size = f" (the program accepts only size {value})" if value is not None else ""
    title = f"Mark `{what}` static with `{static}`: export passes, but `{what}` is no longer dynamic{size}"
    return make_fix(file, text, replace_spans(text, [(*node_span(text, n), static) for n in nodes]), title, False)


def example_size(text: str, file: str, call_line: int, dim: dict[str, Any], dim_name: str, size: int = 2) -> Fix | Refusal:
    """The example's literal size 0/1 in dimension `dim` (of the target at `call_line`) becomes
    `size`: export no longer specialises the dimension, which stays dynamic."""
    tree = parse_or_refuse(text)
    if isinstance(tree, Refusal):
        return tree
    site = example_site(tree, call_line, str(dim["input"]), int(dim["index"]), int(dim["dim"])) if not dim.get("path") else None
    if site is None:
        return Refusal(f"the example input `{dim['input']}` is not written with literal sizes here; give it size 2 or more in dimension {dim['dim']} by hand")
    a, b = node_span(text, site.size)
    ca, cb = node_span(text, site.creation)
    new = replace_spans(text, [(a, b, str(size))])
    old_call, new_call = text[ca:cb], new[ca : cb + len(str(size)) - (b - a)]
    title = f"Give the example size {size} in `{dim['spelled']}` (`{old_call}` → `{new_call}`): export specialises sizes 0 and 1; `{dim_name}` stays dynamic"
    fix = make_fix(file, text, new, title, True)
    return replace(fix, changes_example=True) if isinstance(fix, Fix) else fix


# -- the fixers (codes.py names them) ----------------------------------------------------------


def guard_added(d: Diagnostic, read: Reader, offer: Offer) -> list[Fix]:
    """guard-added: torch's suggested fix where the user wrote the Dim (a range, a derived dimension),
    a larger example for a size of 0/1, a `torch.cond` rewrite of the user's `if` that fixed it to a
    constant; `Dim.STATIC` as the alternative that gives the dimension up."""
    call = d.data.get("export_call") or {}
    text = read(call["file"]) if call.get("file") else None
    if text is None:
        return []
    file, line = call["file"], int(call["line"])
    name, reason, dims = str(d.data.get("name") or ""), d.data.get("reason"), d.data.get("dims") or []
    out: list[Fix] = []
    if reason == "zero-one":
        out += offer.take(example_size(text, file, line, dims[0], name)) if dims else []
    else:
        suggested = list(d.data.get("suggested") or [])
        s = parse_suggested(suggested).get(name)
        if s is not None and s.kind == "range":
            out += offer.take(refine_range(text, file, name, s.min, s.max))
        elif s is not None and s.kind == "derived":
            out += offer.take(derive(text, file, name, suggested))
        if reason == "constant" or s is None:
            out += _cond_fixes(d, read, offer)
    named = name if any(dim.get("name") == name for dim in dims) else None
    out += offer.take(static_dims(text, file, line, named, [] if named else dims, d.data.get("value")))
    return out


def dim_specialized(d: Diagnostic, read: Reader, offer: Offer) -> list[Fix]:
    """dim-specialized: a larger example for a size of 0/1, a `torch.cond` rewrite of the user's `if`
    that fixed it (both keep the dimension dynamic); `Dim.STATIC` to say what the program already is."""
    call = d.data.get("export_call") or {}
    dim = d.data.get("dim") or {}
    text = read(call["file"]) if call.get("file") else None
    if text is None or not dim:
        return []
    file, line = call["file"], int(call["line"])
    out: list[Fix] = []
    if d.data.get("reason") == "zero-one":
        out += offer.take(example_size(text, file, line, dim, str(dim.get("name") or dim.get("spelled"))))
    elif d.data.get("statement_kind") == "if" and d.data.get("placed") == "guard" and not d.data.get("library"):
        out += _cond_fixes(d, read, offer)
    named = dim.get("name") if dim.get("kind") in ("named", "derived") else None
    out += offer.take(static_dims(text, file, line, named, [] if named else [dim], d.data.get("value")))
    return out


def _cond_fixes(d: Diagnostic, read: Reader, offer: Offer) -> list[Fix]:
    """The `if` that fixed the dimension, as `torch.cond`: both paths stay, and so does the dimension."""
    line = int(d.data.get("user_line") or 0)
    text = read(d.file) if line and not d.data.get("library") else None
    if text is None:
        return []
    return offer.take(rewrite_if_as_cond(text, d.file, line))
