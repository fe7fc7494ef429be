"""Hover text for a diagnostic: the guard in source terms and as torch printed it, the locals
with their symbolic shapes, and where each symbol came from (the `.item()` or op that made it).

Everything comes from `Diagnostic.data` plus a static look at the current text; nothing runs.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from lsprotocol import types

from exportlens.lsp.convert import doc_url, lsp_range
from exportlens.model import Diagnostic, Fix

T = TypeVar("T")

_SYMBOL = re.compile(r"\b([us]\d+)\b")


def _title(code: str) -> str:
    try:
        from exportlens import codes

        title = getattr(getattr(codes, "CODES", {}).get(code), "title", None)
        if isinstance(title, str):
            return title
    except Exception:
        pass
    return code


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def assignment_of(text: str | None, name: str, before_line: int) -> tuple[int, str] | None:
    """The last simple assignment to `name` above 1-based `before_line`: (line, statement)."""
    if not text or not name.isidentifier():
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    best: tuple[int, str] | None = None
    lines = text.splitlines()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.lineno < before_line:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            if name in names and (best is None or node.lineno > best[0]):
                stmt = "\n".join(lines[node.lineno - 1 : (node.end_lineno or node.lineno)]).strip()
                best = (node.lineno, stmt)
    return best


def _outcome(fix: Fix) -> str:
    v = fix.verification
    if v is None:
        return "not verified"
    words = {
        "export-passes": "export passes ✓",
        "fixes-this": "fixes this",
        "no-effect": "does not help",
        "breaks": "breaks the target",
        "not-checked": "not verified",
    }.get(v.status, v.status)
    if v.remaining:
        words += f"; remaining: {', '.join(f'`{c}`' for c in v.remaining)}"
    if v.same_outputs is False:
        words += "; changes the model's outputs on the example inputs"
    if v.lost:
        words += f"; {', '.join(f'`{d}`' for d in v.lost)} no longer dynamic"
    elif v.keeps_dynamic and not v.made_dynamic:
        words += "; the dimensions asked to be dynamic stay dynamic"
    if v.made_dynamic:
        words += f"; dynamic now: {', '.join(f'`{d}`' for d in v.made_dynamic)}"
    if v.detail and v.status in ("breaks", "not-checked"):
        words += f" ({_cell(v.detail)[:160]})"
    return f"{words} ({v.seconds:.1f} s)" if v.status != "not-checked" else words


def hover_markdown(diag: Diagnostic, text: str | None, fixes: list[Fix] | None = None, *, came_from: str | None = None) -> str:
    """Markdown for one diagnostic; `text` is the file's current text (for symbol origins);
    `fixes`, when verified, are listed with what re-running the target with each one showed;
    `came_from` says which earlier run a result from the results cache is (`lsp/last_results.py`)."""
    d = diag.data
    out = [f"**ExportLens · `{diag.code}`** — {_title(diag.code)}", ""] + ([came_from, ""] if came_from else [])
    source_expr, expr = d.get("source_expr"), d.get("expr")
    if expr or source_expr:
        if source_expr:
            where = f"the library {d['library']}" if d.get("library") else "your code"  # a library's guard is not the user's
            out.append(f"- guard in {where}: `{source_expr}`")
        if expr:
            out.append(f"- as torch printed it: `{expr}`")
        if d.get("result") is not None:
            out.append(f"- with the example inputs it was: `{d['result']}`")
        values = d.get("values") or {}
        if values:
            out.append("- observed values: " + ", ".join(f"`{k} = {v}`" for k, v in sorted(values.items())))
    if d.get("op") or d.get("qualname"):
        out.append(f"- operator: `{d.get('qualname') or d.get('op')}`")
    if d.get("reason"):
        out.append(f"- fake vs real: {str(d['reason']).strip()}")
    for dim in d.get("dims") or ([d["dim"]] if isinstance(d.get("dim"), dict) else []):
        asked = dim.get("name") and f'Dim("{dim["name"]}")' or f"Dim.{str(dim.get('kind', '')).upper()}"
        out.append(f"- `{dim.get('spelled')}`: asked for as `{asked}`, the example's size is {dim.get('size')}")
    for line in d.get("lines") or []:
        out.append(f"- torch: {_cell(line)}")
    if d.get("suggested"):
        out.append("- torch's suggested fixes: " + "; ".join(f"`{s}`" for s in d["suggested"]))
    locals_ = d.get("locals") or {}
    if locals_:
        out += ["", "| local | symbolic value |", "|---|---|"]
        for name, vals in sorted(locals_.items()):
            shown = ", ".join(str(v) for v in vals) if isinstance(vals, list) else str(vals)
            out.append(f"| `{_cell(name)}` | `{_cell(shown)}` |")
    names = d.get("names") or {}
    symbols = sorted(set(_SYMBOL.findall(str(expr or ""))))
    origins = []
    line = int(d.get("statement_line") or d.get("user_line") or diag.range.start.line + 1)
    for sym in symbols:
        local = names.get(sym)
        if not local:
            continue
        found = assignment_of(text, str(local), line)
        if found:
            origins.append(f"- `{sym}` is `{local}`, created on line {found[0]}: `{found[1].splitlines()[0]}`")
        else:
            origins.append(f"- `{sym}` is `{local}`")
    if origins:
        out += ["", "**Where the symbols come from**", *origins]
    if d.get("gb_id") or d.get("gb"):
        out.append(f"- graph break id: `{d.get('gb_id') or d.get('gb')}`")
    chain = d.get("library_chain") or []
    if chain:
        out += ["", f"**From your code into the library {d.get('library', '')}**"]
        for i, fr in enumerate(chain):
            where = f"`{os.path.basename(str(fr.get('file')))}:{fr.get('line')}`"
            code = f": `{_cell(fr.get('source'))}`" if fr.get("source") else ""
            who = "your code" if fr.get("project") else f"`{fr.get('function')}`"
            out.append(f"{i + 1}. {who} {where}{code}")
        if d.get("upstream_search"):
            out.append(f"- to search the library's issues: `{d['upstream_search']}`")
    if d.get("draft_export_error"):
        err = d["draft_export_error"]
        out += [
            "",
            f"**Draft export's own error** ({d.get('crash_family', '')})",
            "```",
            f"{err.get('type')}: {str(err.get('message', '')).strip()[:1500]}",
            "```",
        ]
        if d.get("repro"):
            out += ["Reproduce it:", "```", str(d["repro"]), "```"]
    if d.get("graph_diff"):
        out += ["", "**Graph diff (trace vs check)**", "```", str(d["graph_diff"]).strip(), "```"]
    if fixes:
        out += ["", "**Fixes, verified by re-running the target with each one**"]
        for f in fixes:
            star = " (preferred)" if f.is_preferred else ""
            out.append(f"- {f.title}{star}: {_outcome(f)}")
    url = doc_url(diag.code, d)
    if url:
        out += ["", f"[PyTorch documentation]({url})"]
    trace = d.get("trace_file")
    if isinstance(trace, str) and trace:
        out += [
            "",
            f"[Open the full trace]({Path(trace).as_uri()}) (torch's structured trace of this run: "
            f"`tlparse {trace} --export` renders it; attach it to a PyTorch bug report)",
        ]
    return "\n".join(out)


def hover_at(items: Iterable[tuple[Diagnostic, T]], position: types.Position, markdown: Callable[[Diagnostic, T], str]) -> types.Hover | None:
    """One hover for every diagnostic under the cursor (a .py file's or a notebook cell's), ruled apart;
    each item is a diagnostic and what `markdown` needs besides (the cache's mark of its result)."""
    pos = (position.line, position.character)
    hits = [(d, x) for d, x in items if (d.range.start.line, d.range.start.character) <= pos <= (d.range.end.line, d.range.end.character)]
    if not hits:
        return None
    value = "\n\n---\n\n".join(markdown(d, x) for d, x in hits)
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=value), range=lsp_range(hits[0][0].range))
