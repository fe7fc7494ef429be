"""torch.compile: graph breaks (dynamo's own log records) and recompiles, on the user's lines."""

from __future__ import annotations

import os
import re
from typing import cast

from exportlens import codes
from exportlens.findings import boundary, placement
from exportlens.findings.context import (
    Context,
    def_anchor,
    frame_name,
    frame_range,
    is_user,
    library_place,
    new_diagnostic,
    site_related,
    target_anchor,
)
from exportlens.findings.placement import Frame
from exportlens.model import ERROR, HINT, Diagnostic, Related
from exportlens.protocol import (
    Change,
    CodeLocation,
    FixChoice,
    FrameInfo,
    GraphBreakData,
    GraphBreakFinding,
    RecompileData,
    RecompileFinding,
    RecompileLimitFinding,
    TargetEvent,
)

# Graph breaks are told apart by their gb_type title, the same from torch 2.8 to 2.14; the ids are
# not (2.8 logs none, 2.9/2.10 log the data-dependent branch without one, and a deepcopy of a tensor
# is gb0179 "copy.deepcopy()" before 2.12's gb4198). Ids stay in `data` when torch gives them.
BRANCH, ITEM, BUILTIN, DEEPCOPY = "branch", "item", "builtin", "deepcopy"
_KIND_BY_TITLE = {
    "Data-dependent branching": BRANCH,
    "Unsupported Tensor.item() call with capture_scalar_outputs=False": ITEM,
    "Failed to trace builtin operator": BUILTIN,
    "Attempted to copy.deepcopy a tensor": DEEPCOPY,
    "copy.deepcopy()": DEEPCOPY,
}
_KIND_BY_ID = {"gb0170": BRANCH, "gb0124": ITEM, "gb0059": BUILTIN, "gb4198": DEEPCOPY, "gb0179": DEEPCOPY}
_CALLEE = {ITEM: "item", DEEPCOPY: "deepcopy"}  # where dynamo gives no columns (torch ≤ 2.12)

_SIZE_GUARD = re.compile(
    r"tensor '(?P<name>[^']+)' size mismatch at index (?P<dim>\d+)\. "
    r"expected (?P<expected>\d+), actual (?P<actual>\d+)"
)

_VALUE_GUARD = re.compile(r"^(?:L\[')?(?P<name>[A-Za-z_]\w*)(?:'\])? == (?P<value>-?\d+(?:\.\d*)?(?:e-?\d+)?)$")

_BUILTIN = re.compile(r"builtin operator `(?P<name>[\w.]+)`")

_UNHELPFUL_HINTS = ("Please report an issue to PyTorch.",)


def compile_diagnostics(ctx: Context, event: TargetEvent) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    raw = event.get("compile_findings") or []
    for finding in raw:
        if finding["type"] == "graph-break":
            out.append(graph_break(ctx, event, finding))
    by_code: dict[tuple[str, int], list[RecompileFinding | RecompileLimitFinding]] = {}
    for finding in raw:
        if finding["type"] == "recompile" or finding["type"] == "recompile-limit":
            code = finding.get("code")
            by_code.setdefault((str(code.get("file")), int(code.get("line") or 0)), []).append(finding)
    for group in by_code.values():
        out.append(recompiles(ctx, event, group))
    return out


def _compiled_name(event: TargetEvent) -> str:
    definition = event.get("definition")
    return str((definition["name"] if definition else None) or "the compiled function")


def _hints(finding: GraphBreakFinding) -> list[str]:
    return [h for h in finding.get("hints") or [] if h and h not in _UNHELPFUL_HINTS]


def break_kind(finding: GraphBreakFinding) -> str | None:
    """Which known graph break this is: by torch's title, else by its gb id."""
    title = str(finding.get("title") or "").strip()
    return _KIND_BY_TITLE.get(title) or _KIND_BY_TITLE.get(title.rstrip(".")) or _KIND_BY_ID.get(str(finding.get("gb_id")))


def _break_fixes(finding: GraphBreakFinding, frame: Frame | None, event: TargetEvent) -> list[FixChoice]:
    """Which of the issue's fixes apply to this break, most useful first."""
    kind = break_kind(finding)
    hints = " ".join(finding.get("hints") or [])
    fixes: list[FixChoice] = []
    if kind == BRANCH:
        fixes.append({"fix": "torch_cond"})
    elif kind == ITEM or "capture_scalar_outputs" in hints:
        fixes.append({"fix": "capture_scalar_outputs"})
        fixes.append({"fix": "torch_check"})
    elif "reorderable_logging_functions" in hints:
        m = _BUILTIN.search(finding.get("explanation") or "")
        fixes.append({"fix": "reorderable_logging", "function": m["name"] if m else "print"})
    definition = event.get("definition")
    if (
        frame is not None
        and frame.name
        and frame.name != "<module>"
        and (definition is None or frame.name != definition["name"] or os.path.abspath(frame.file) != definition["file"])
    ):
        fixes.append({"fix": "compiler_disable", "function": frame.name, "file": frame.file, "line": frame.line})
    return fixes


def _break_text(finding: GraphBreakFinding, test: str) -> str:
    kind = break_kind(finding)
    title = str(finding.get("title") or "an unsupported construct").rstrip(".")
    explanation = str(finding.get("explanation") or "").split("\n", 1)[0].strip()
    then = (
        "With fullgraph=True this is an error: the call raises here." if finding.get("fullgraph") else "It splits the graph here and runs this part in Python."
    )
    if kind == BRANCH:
        what = f"`{test}`" if test else "this condition"
        return f"Graph break: {what} depends on a tensor's values, so torch.compile cannot pick a branch while tracing. {then}"
    if kind == ITEM:
        return (
            "Graph break: `.item()` turns a tensor into a Python number, which torch.compile does not "
            f"capture by default (capture_scalar_outputs=False). {then}"
        )
    if kind == DEEPCOPY:
        return f"Graph break: torch.compile cannot trace `copy.deepcopy` of a tensor. {then}"
    if kind == BUILTIN:
        m = _BUILTIN.search(explanation)
        name = m["name"] if m else "this builtin"
        return f"Graph break: torch.compile cannot put the Python call `{name}(...)` into the graph. {then}"
    text = f"Graph break: torch.compile cannot trace this ({title})"
    return text + (f": {explanation}" if explanation and explanation != title else ".") + f" {then}"


def _library_break(ctx: Context, event: TargetEvent, finding: GraphBreakFinding, b: boundary.Boundary) -> Diagnostic:
    """A graph break inside a library: on the project's call into it, the library line related."""
    lib = b.inside
    assert lib is not None
    rng, related, placed = library_place(ctx, b)
    lib_src = ctx.source(lib.file)
    test = ""
    if lib_src is not None:
        lrng = placement.guard_range(lib_src, lib.line, set())[0] if break_kind(finding) == BRANCH else boundary.library_range(lib_src, lib)
        test = lib_src.text_of(lrng) if lrng.start.line == lrng.end.line else ""
    message = _break_text(finding, test).replace("Graph break: ", f"Graph break inside the library {lib.package} ({lib.where()}, in `{lib.qualname}`): ", 1)
    hints = _hints(finding)
    if hints:
        message += " Torch suggests (for the library's code): " + " ".join(h if h.endswith(".") else h + "." for h in hints)
    search = boundary.upstream_search(lib, f"torch.compile graph break {finding.get('gb_id') or ''}".strip())
    message += (
        f" This is the library's code, not yours: ExportLens never edits it. What you can do: accept the "
        f"break, or move this call out of the compiled region (call it from a function decorated with "
        f"@torch.compiler.disable) so the rest compiles in one graph. Otherwise it is a library "
        f'limitation: search its issues for "{search}".'
    )
    related += site_related(ctx, "compiled here with torch.compile")
    fixes = [f for f in _break_fixes(finding, None, event) if f["fix"] == "capture_scalar_outputs"]
    data = cast(
        GraphBreakData,
        {  # GraphBreakData with the library's facts (LibraryFacts) spread in
            "kind": "graph-break",
            "gb_id": finding.get("gb_id"),
            "url": finding.get("url"),
            "title": finding.get("title"),
            "reason": finding.get("reason"),
            "explanation": finding.get("explanation"),
            "hints": finding.get("hints") or [],
            "torch_location": finding.get("at") or {},
            **placed,
            "function": b.frame.name,
            "compiled": event.get("definition"),
            "compile_call": {"file": ctx.target_file, "line": ctx.target_line},
            "compile_options": event.get("compile_options") or {},
            "upstream_search": search,
            "advice": "library",
            "fix": fixes[0]["fix"] if fixes else None,
            "fixes": fixes,
            "library_test_text": test,
        },
    )
    diag = new_diagnostic(ctx, b.frame.file, rng, "graph-break", message, related=related, data=data)
    if finding.get("fullgraph"):
        diag.severity = ERROR
        data["fullgraph"] = True
    return diag


def graph_break(ctx: Context, event: TargetEvent, finding: GraphBreakFinding) -> Diagnostic:
    b = boundary.locate([("dynamo", finding.get("frames"))], ctx.root)
    if b is not None and b.inside is not None:
        return _library_break(ctx, event, finding, b)
    frames = placement.user_frames(finding.get("frames") or [], ctx.root)
    at = finding.get("at")
    if not frames and at and at.get("line") and is_user(ctx, at["file"]):
        frames = [Frame(at["file"], int(at["line"] or 0))]
    frame = frames[-1] if frames else None
    test = ""
    if frame is not None and ctx.source(frame.file) is not None:
        src = ctx.source(frame.file)
        assert src is not None
        file = frame.file
        kind = break_kind(finding)
        if kind == BRANCH:  # dynamo's carets also cover the `:` here
            rng = placement.guard_range(src, frame.line, set())[0]
        elif frame.col is not None:
            rng = placement.frame_range(src, frame)
        elif kind in _CALLEE:
            rng = placement.call_range(src, frame.line, _CALLEE[kind])
        else:
            m = _BUILTIN.search(str(finding.get("explanation") or ""))
            rng = placement.call_range(src, frame.line, m["name"].split(".")[-1]) if m else placement.statement_range(src, frame.line)
        test = src.text_of(rng) if rng.start.line == rng.end.line else ""
    else:
        file, rng = target_anchor(ctx)
    message = _break_text(finding, test)
    hints = _hints(finding)
    if hints:
        message += " Torch suggests: " + " ".join(h if h.endswith(".") else h + "." for h in hints)
    name = _compiled_name(event)
    if frame is not None and frame.name not in (name, "<module>"):
        message += f" (reached from the compiled function `{name}`)"
    related = [Related(f.file, frame_range(ctx, f), f"called from here ({frame_name(f)})") for f in reversed(frames[:-1])]
    related += site_related(ctx, "compiled here with torch.compile")
    fixes = _break_fixes(finding, frame, event)
    data: GraphBreakData = {
        "kind": "graph-break",
        "break": break_kind(finding),
        "gb_id": finding.get("gb_id"),
        "url": finding.get("url"),
        "title": finding.get("title"),
        "reason": finding.get("reason"),
        "explanation": finding.get("explanation"),
        "hints": finding.get("hints") or [],
        "torch_location": at or {},
        "user_line": frame.line if frame else None,
        "function": frame.name if frame else None,
        "compiled": event.get("definition"),
        "compile_call": {"file": ctx.target_file, "line": ctx.target_line},
        "compile_options": event.get("compile_options") or {},
        "fix": fixes[0]["fix"] if fixes else None,
        "fixes": fixes,
    }
    if test:
        data["test_text"] = test
    if finding.get("fullgraph"):
        data["fullgraph"] = True
    diag = new_diagnostic(ctx, file, rng, "graph-break", message, related=related, data=data)
    if finding.get("fullgraph"):  # the script stops here: not a slowdown but a failure
        diag.severity = ERROR
    return diag


def what_changed(guard: str) -> Change:
    """A failed guard in plain words: a tensor dimension, a Python number, or torch's text."""
    m = _SIZE_GUARD.search(guard)
    if m:
        return {
            "kind": "size",
            "name": m["name"],
            "dim": int(m["dim"]),
            "expected": int(m["expected"]),
            "actual": int(m["actual"]),
            "text": f"the size of dimension {m['dim']} of `{m['name']}` changed ({m['expected']} → {m['actual']})",
            "keeps": f"the size of dimension {m['dim']} of `{m['name']}`",
        }
    m = _VALUE_GUARD.match(guard.strip())
    if m:
        return {
            "kind": "value",
            "name": m["name"],
            "value": m["value"],
            "text": f"the Python number `{m['name']}` changed (the code was compiled for {m['value']})",
            "keeps": f"the value of the Python number `{m['name']}`",
        }
    return {"kind": "other", "text": f"the guard `{guard}` failed", "keeps": f"what the guard `{guard}` checks"}


def recompiles(ctx: Context, event: TargetEvent, group: list[RecompileFinding | RecompileLimitFinding]) -> Diagnostic:
    recs: list[RecompileFinding] = []
    limit: RecompileLimitFinding | None = None
    for f in group:
        if f["type"] == "recompile":
            recs.append(f)
        elif limit is None:
            limit = f
    code: CodeLocation = group[0]["code"]
    fn = str(code.get("name") or _compiled_name(event))
    failure = recs[0]["failures"][0] if recs and recs[0].get("failures") else None
    first_frames: list[FrameInfo] = failure.get("frames", []) if failure else []
    guard = str((failure.get("guard") or failure.get("reason") or "") if failure else (limit.get("reason", "") if limit else ""))
    if limit is not None and not recs:
        guard = re.sub(r"^\d+/\d+: ", "", str(limit.get("reason") or ""))
    change = what_changed(guard)
    anchor = def_anchor(ctx, code) or def_anchor(ctx, event.get("definition")) or target_anchor(ctx)
    count = len(recs)
    message = (
        (f"torch.compile recompiled `{fn}` {count} time{'s' if count != 1 else ''}: on the first, {change['text']}.")
        if count
        else f"torch.compile stopped compiling `{fn}`."
    )
    if limit is not None:
        last = what_changed(re.sub(r"^\d+/\d+: ", "", str(limit.get("reason") or "")))
        message += (
            f" It then hit {limit.get('config', 'recompile_limit')} ({limit.get('limit')}): "
            f"{last['keeps']} keeps changing, so later calls run without compilation."
        )
    options = event.get("compile_options") or {}
    fixes: list[FixChoice] = []
    if change["kind"] == "size":
        if options.get("dynamic") is False:
            fixes.append({"fix": "drop_dynamic_false", "compile_call": {"file": ctx.target_file, "line": ctx.target_line}})
            message += " The function is compiled with dynamic=False, so every new size compiles again: drop dynamic=False"
            message += f" or mark dimension {change['dim']} of `{change['name']}` dynamic."
        else:
            message += f" Mark dimension {change['dim']} of `{change['name']}` dynamic to compile it once."
        fixes.append({"fix": "mark_dynamic", "input": change["name"], "dim": change["dim"]})
    elif change["kind"] == "value":
        fixes.append({"fix": "pass_as_tensor", "name": change["name"]})
        message += f" Pass `{change['name']}` as a tensor so a new value does not compile again."
    related: list[Related] = []
    triggered: RecompileFinding | RecompileLimitFinding | None = recs[0] if recs else limit
    sites = placement.user_frames(triggered.get("call_stack", []) if triggered else [], ctx.root)
    if sites:
        site = sites[-1]
        related.append(Related(site.file, frame_range(ctx, site), "this call triggered the recompile"))
    for fr in placement.user_frames(first_frames, ctx.root)[-1:]:
        src = ctx.source(fr.file)
        if src is not None:
            related.append(Related(fr.file, placement.statement_range(src, fr.line), "the guarded value is used here"))
    related += site_related(ctx, "compiled here with torch.compile")
    data: RecompileData = {
        "kind": "recompile",
        "function": fn,
        "code": code,
        "recompiles": count,
        "guard": guard,
        "change": change,
        "reasons": [r.get("reason") for r in recs],
        "limit_hit": limit is not None,
        "limit": limit.get("limit") if limit else None,
        "url": codes.RECOMPILATION_URL,
        "compile_call": {"file": ctx.target_file, "line": ctx.target_line},
        "compile_options": options,
        "fix": fixes[0]["fix"] if fixes else None,
        "fixes": fixes,
    }
    diag = new_diagnostic(ctx, anchor[0], anchor[1], "recompile", message, related=related, data=data)
    if change["kind"] == "size" and count == 1 and limit is None and options.get("dynamic") is not False:
        # automatic dynamic shapes: one recompile, then the size is dynamic. Expected, so a hint.
        diag.severity = HINT
        diag.message += " (This single recompile is torch.compile switching the size to dynamic; it happens once.)"
    return diag
