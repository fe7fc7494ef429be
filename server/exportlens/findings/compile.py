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
from exportlens.model import ERROR, HINT, Diagnostic, Range, Related
from exportlens.protocol import (
    Change,
    CodeLocation,
    CompileOptions,
    FixChoice,
    FrameInfo,
    GraphBreakData,
    GraphBreakFinding,
    LibraryFacts,
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

# The guard failures dynamo logs (docs/torch-facts.md §2.3); names as `x`, `L['x']` or `G['model'].config`.
_TENSOR = r"tensor '(?P<name>[^']+)' "
_SIZE_GUARD = re.compile(_TENSOR + r"size mismatch at index (?P<dim>\d+)\. expected (?P<expected>\d+), actual (?P<actual>\d+)")
_RANK_GUARD = re.compile(_TENSOR + r"rank mismatch\. expected (?P<expected>\d+), actual (?P<actual>\d+)")
_DTYPE_GUARD = re.compile(_TENSOR + r"dtype mismatch\. expected (?P<expected>\w+), actual (?P<actual>\w+)")
_GRAD_GUARD = re.compile(_TENSOR + r"requires_grad mismatch\. expected requires_grad=(?P<expected>\d)")
_VALUE_GUARD = re.compile(r"^(?P<name>[A-Za-z_][\w\[\]'.]*) == (?P<value>-?\d+(?:\.\d*)?(?:e-?\d+)?|True|False|None|'[^']*'|\"[^\"]*\")$")
_TYPE_GUARD = re.compile(r"^___check_type_id\((?P<name>[^,]+), \d+\)(?:, type=<class '(?P<type>[^']+)'>)?")
_ATTR_GUARD = re.compile(r"^(?P<negated>not )?___dict_contains\('(?P<attr>\w+)', (?P<owner>.+)\.__dict__\)$")
_TENSOR_GUARDS = (  # (guard, kind, what changed, what keeps changing when the limit is hit)
    (_SIZE_GUARD, "size", "the size of dimension {dim} of `{name}` changed ({expected} → {actual})", "the size of dimension {dim} of `{name}`"),
    (_RANK_GUARD, "rank", "the number of dimensions of `{name}` changed ({expected} → {actual})", "the number of dimensions of `{name}`"),
    (_DTYPE_GUARD, "dtype", "the dtype of `{name}` changed ({expected} → {actual})", "the dtype of `{name}`"),
)
_SCOPE = re.compile(r"\b[LG]\['(?P<name>[^']+)'\]")

_BUILTIN = re.compile(r"builtin operator `(?P<name>[\w.]+)`")

_UNHELPFUL_HINTS = ("Please report an issue to PyTorch.",)

# Why dynamo could not resume after a break and skipped the function: the second break of its
# fall-back record, by gb_type title, else that break's explanation (docs/torch-facts.md §2.5).
_WHY_NO_RESUME = {
    "graph break in loop": "graph breaks inside a for/while loop are not supported",
    "Graph break under GenericContextWrappingVariable": "graph breaks inside this context manager are not supported",
}


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


def _skipped(ctx: Context, finding: GraphBreakFinding) -> str:
    """The function dynamo gave up on, as the message names it (a library's with its place)."""
    fn = (finding.get("fallback") or {}).get("function")
    if not fn:
        return "the whole function"
    resumes = fn.get("resumes")
    name = f"the rest of `{resumes['name']}` (after line {resumes['line']})" if resumes else f"the whole function `{fn['qualname'] or fn['name']}`"
    if fn["file"] and fn["line"] and not is_user(ctx, fn["file"]):
        name += f" ({boundary.where(fn['file'], fn['line'])})"
    return name


def _fallback_text(ctx: Context, finding: GraphBreakFinding) -> str:
    """What dynamo did about the break when it could not resume after it (docs/torch-facts.md §2.5):
    it skipped the function, which now runs in eager mode on every call. Paired with the break's own
    record, the graph split here first (in the function that called it)."""
    fallback = finding.get("fallback") or {}
    said = str(fallback.get("why") or "")
    why = _WHY_NO_RESUME.get(said) or str(fallback.get("why_explanation") or said).split(". ", 1)[0].strip().rstrip(".")
    why = f" because {why[0].lower()}{why[1:]}" if why else ""
    skipped = _skipped(ctx, finding)
    if len(finding.get("records") or []) > 1:
        return f"It splits the graph here, and dynamo then skipped {skipped}{why}: nothing in it is compiled, it runs in eager mode on every call."
    return f"Dynamo could not resume after it{why}, so it skipped {skipped}: nothing in it is compiled, it runs in eager mode on every call."


def _break_text(ctx: Context, finding: GraphBreakFinding, test: str) -> str:
    kind = break_kind(finding)
    title = str(finding.get("title") or "an unsupported construct").rstrip(".")
    explanation = str(finding.get("explanation") or "").split("\n", 1)[0].strip()
    then = (
        "With fullgraph=True this is an error: the call raises here." if finding.get("fullgraph") else "It splits the graph here and runs this part in Python."
    )
    if "fallback" in finding:
        then = _fallback_text(ctx, finding)
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
    inside = f"Graph break inside the library {lib.package} ({lib.where()}, in `{lib.qualname}`): "
    message = _break_text(ctx, finding, test).replace("Graph break: ", inside, 1)
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
    _fallback_data(finding, data)
    diag = new_diagnostic(ctx, b.frame.file, rng, "graph-break", message, related=related, data=data)
    if finding.get("fullgraph"):
        diag.severity = ERROR
        data["fullgraph"] = True
    return diag


def _fallback_data(finding: GraphBreakFinding, data: GraphBreakData) -> None:
    """Dynamo's fall-back in `data`: what it skipped and why, and torch's records (both, for a pair)."""
    if "fallback" in finding:
        data["fallback"] = finding["fallback"]
    if finding.get("records"):
        data["records"] = finding["records"]


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
    message = _break_text(ctx, finding, test)
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
    _fallback_data(finding, data)
    diag = new_diagnostic(ctx, file, rng, "graph-break", message, related=related, data=data)
    if finding.get("fullgraph"):  # the script stops here: not a slowdown but a failure
        diag.severity = ERROR
    return diag


def spelled(name: str) -> str:
    """A guard's name as the code spells it: `L['x']` is the local `x`, `G['model'].config` the global's attribute."""
    return _SCOPE.sub(lambda m: m["name"], name.strip())


def what_changed(guard: str) -> Change:
    """A failed guard in plain words: a tensor's size, rank, dtype or requires_grad, a Python value, a type, an attribute."""
    text = guard.split("  # ", 1)[0].strip()
    for pattern, kind, said, keeps in _TENSOR_GUARDS:
        m = pattern.search(text)
        if m:
            facts = {**m.groupdict(), "name": spelled(m["name"])}
            change = cast(Change, {"kind": kind, "name": facts["name"], "text": said.format(**facts), "keeps": keeps.format(**facts)})
            if kind == "dtype":
                change["value"] = facts["expected"]
            else:
                change.update(cast(Change, {k: int(v) for k, v in facts.items() if k in ("dim", "expected", "actual")}))
            return change
    m = _GRAD_GUARD.search(text)
    if m:
        name = spelled(m["name"])
        was = "without" if m["expected"] == "0" else "with"
        return {
            "kind": "requires_grad",
            "name": name,
            "text": f"`{name}.requires_grad` changed (the code was compiled for a tensor {was} requires_grad)",
            "keeps": f"`{name}.requires_grad`",
        }
    m = _VALUE_GUARD.match(text)
    if m:
        name = spelled(m["name"])
        number = m["value"] not in ("True", "False", "None") and not m["value"].startswith(("'", '"'))
        return {
            "kind": "value",
            "name": name,
            "value": m["value"],
            "text": f"the Python {'number' if number else 'value'} `{name}` changed (the code was compiled for {m['value']})",
            "keeps": f"the value of `{name}`",
        }
    m = _TYPE_GUARD.match(text)
    if m:
        name = spelled(m["name"])
        was = f" (the code was compiled for {m['type']})" if m["type"] else ""
        return {"kind": "type", "name": name, "text": f"the type of `{name}` changed{was}", "keeps": f"the type of `{name}`"}
    m = _ATTR_GUARD.match(text)
    if m:
        name = f"{spelled(m['owner'])}.{m['attr']}"
        how = "was set after the code was compiled without it" if m["negated"] else "was removed after the code was compiled with it"
        return {"kind": "attribute", "name": name, "text": f"`{name}` {how}", "keeps": f"whether `{name}` exists"}
    return {"kind": "other", "text": f"the guard `{text}` failed", "keeps": f"what the guard `{text}` checks"}


def _resumed_name(finding: RecompileFinding | RecompileLimitFinding, fn: str) -> tuple[str, str]:
    """(plain name, how to say it): a resume function is named by the function it continues."""
    resumes = finding.get("resumes")
    if resumes:
        part = f"the part after its graph break at line {resumes['line']}, which dynamo compiles as a function of its own"
        return resumes["name"], f"`{resumes['name']}` ({part})"
    return fn, f"`{fn}`"


def _guard_frames(recs: list[RecompileFinding]) -> list[FrameInfo]:
    """The user stack torch printed under a failed guard (the newest entry first), if any."""
    for rec in recs:
        for failure in rec.get("failures") or []:
            if failure.get("frames"):
                return failure["frames"]
    return []


def _recompiled_library_frame(ctx: Context, code: CodeLocation, name: str) -> boundary.LibraryFrame:
    """The recompiled library function (its `def`, or the line a resume function continues from)."""
    file, line = str(code.get("file")), int(code.get("line") or 1)
    src = ctx.source(file)
    text = src.line(line) if src is not None else ""
    at = text.find(f"def {name}")  # a `def` line: its name is the range, else Python's statement
    col = len(text[: at + 4].encode()) if at >= 0 else None
    end = col + len(name.encode()) if col is not None else None
    return boundary.LibraryFrame(file, line, name, name, text.strip() or None, boundary.package_of(file), col, line if col is not None else None, end)


def _recompile_place(
    ctx: Context, event: TargetEvent, code: CodeLocation, fn: str, recs: list[RecompileFinding], triggered: RecompileFinding | RecompileLimitFinding | None
) -> tuple[str, Range, list[Related], LibraryFacts | None, str]:
    """Where a recompile goes, from the most specific source torch offers: the failed guard's user
    stack, then (for a library function) the live stack of the call that recompiled it, then the
    function's `def`, then the compile call. Returns (file, range, related, library facts, placed)."""
    guard_frames = _guard_frames(recs)
    call_stack = triggered.get("call_stack", []) if triggered else []
    resumes = triggered.get("resumes") if triggered else None
    user_code = is_user(ctx, code.get("file"))
    found = boundary.locate([("guard", guard_frames)], ctx.root)
    if found is None and not user_code:
        found = boundary.locate([("live", call_stack)], ctx.root)
        if found is not None:  # the recompiled function is the library line; it is not live yet when torch logs
            inside = _recompiled_library_frame(ctx, code, fn)
            found.library = [lib for lib in found.library if (lib.file, lib.line) != (inside.file, inside.line)] + [inside]
            found.outer = [f for f in found.outer if (f.file, f.line) != (ctx.target_file, ctx.target_line)]
    if found is not None and found.inside is not None:
        what = "the guarded value is used here"
        if found.source == "live":
            what = "the recompiled part starts here (after the graph break)" if resumes else "the recompiled function"
        rng, related, facts = library_place(ctx, found, what)
        return found.frame.file, rng, related, facts, found.source
    if found is not None:
        src = ctx.source(found.frame.file)
        assert src is not None
        name = spelled(what_changed(_first_guard(recs)).get("name", "")).split(".")[0]
        rng = placement.name_range(src, found.frame.line, name) or placement.statement_range(src, found.frame.line)
        return found.frame.file, rng, [], None, "guard"
    if user_code and resumes:
        src = ctx.source(code["file"])
        assert src is not None
        return code["file"], placement.statement_range(src, int(code.get("line") or 1)), [], None, "resume"
    anchor = def_anchor(ctx, code) or def_anchor(ctx, event.get("definition")) or target_anchor(ctx)
    return anchor[0], anchor[1], [], None, "definition"


def _recompile_advice(ctx: Context, change: Change, options: CompileOptions, *, in_library: bool) -> tuple[str, list[FixChoice]]:
    """What to do about what changed (a library's own parameters are not the project's to mark)."""
    fixes: list[FixChoice] = []
    if change["kind"] == "size":
        if not in_library:
            fixes.append({"fix": "mark_dynamic", "input": change["name"], "dim": change["dim"]})
        if options.get("dynamic") is False:
            fixes.insert(0, {"fix": "drop_dynamic_false", "compile_call": {"file": ctx.target_file, "line": ctx.target_line}})
            text = " The function is compiled with dynamic=False, so every new size compiles again: drop dynamic=False"
            return text + f" or mark dimension {change['dim']} of `{change['name']}` dynamic.", fixes
        if in_library:
            return " Mark that dimension of the tensor you pass in dynamic (torch._dynamo.mark_dynamic) to compile it once.", fixes
        return f" Mark dimension {change['dim']} of `{change['name']}` dynamic to compile it once.", fixes
    if change["kind"] == "value" and not in_library and change["value"] not in ("True", "False", "None") and not change["value"].startswith(("'", '"')):
        fixes.append({"fix": "pass_as_tensor", "name": change["name"]})
        return f" Pass `{change['name']}` as a tensor so a new value does not compile again.", fixes
    if change["kind"] == "rank":
        return " torch.compile compiles once per number of dimensions: pass tensors of the same rank on every call (for example, always a batch).", fixes
    return "", fixes


def _first_guard(recs: list[RecompileFinding]) -> str:
    failure = recs[0]["failures"][0] if recs and recs[0].get("failures") else None
    return str((failure.get("guard") or failure.get("reason") or "") if failure else "")


def recompiles(ctx: Context, event: TargetEvent, group: list[RecompileFinding | RecompileLimitFinding]) -> Diagnostic:
    """One recompiled function (or dynamo's resume function of one): how often, what changed, where."""
    recs: list[RecompileFinding] = []
    limit: RecompileLimitFinding | None = None
    for f in group:
        if f["type"] == "recompile":
            recs.append(f)
        elif limit is None:
            limit = f
    code: CodeLocation = group[0]["code"]
    raw_name = str(code.get("name") or _compiled_name(event))
    triggered: RecompileFinding | RecompileLimitFinding | None = recs[0] if recs else limit
    fn, said = _resumed_name(group[0], raw_name)
    guard = _first_guard(recs) if recs else ""
    if limit is not None and not recs:
        guard = re.sub(r"^\d+/\d+: ", "", str(limit.get("reason") or ""))
    change = what_changed(guard)
    file, rng, placed_related, facts, placed = _recompile_place(ctx, event, code, fn, recs, triggered)
    count = len(recs)
    where = ""
    if facts is not None and placed == "live":
        frame = facts.get("library_frame") or {}
        where = f", inside the library {facts.get('library')} ({boundary.where(str(frame.get('file')), int(frame.get('line') or 0))}),"
    message = (
        (f"torch.compile recompiled {said}{where} {count} time{'s' if count != 1 else ''}: on the first, {change['text']}.")
        if count
        else f"torch.compile stopped compiling {said}{where}."
    )
    later: list[str] = []  # what changed at the later recompiles, when it is another thing (not the same size again)
    seen = {change["keeps"]}
    for rec in recs[1:]:
        then = what_changed(_first_guard([rec]))
        if then["keeps"] not in seen and then["kind"] != "other":
            seen.add(then["keeps"])
            later.append(then["text"])
    if later:
        message += f" Then {'; then '.join(later[:3])}."
    if facts is not None and placed == "guard":
        frame = facts.get("library_frame") or {}
        message += f" The guard is on the library's code ({facts.get('library')}, `{boundary.shorten(str(frame.get('source') or ''), 80)}`)."
    if limit is not None:
        last = what_changed(re.sub(r"^\d+/\d+: ", "", str(limit.get("reason") or "")))
        message += (
            f" It then hit {limit.get('config', 'recompile_limit')} ({limit.get('limit')}): "
            f"{last['keeps']} keeps changing, so later calls run without compilation."
        )
    options = event.get("compile_options") or {}
    advice, fixes = _recompile_advice(ctx, change, options, in_library=facts is not None and placed == "live")
    message += advice
    if facts is not None:
        message += f" {boundary.NO_EDIT}"
    related: list[Related] = list(placed_related)
    sites = placement.user_frames(triggered.get("call_stack", []) if triggered else [], ctx.root)
    if sites:
        site = sites[-1]
        site_rng = frame_range(ctx, site)
        if (site.file, site_rng.start.line) != (file, rng.start.line):
            related.append(Related(site.file, site_rng, "this call triggered the recompile"))
    if placed in ("definition", "resume"):
        for fr in placement.user_frames(_guard_frames(recs), ctx.root)[-1:]:
            src = ctx.source(fr.file)
            if src is not None:
                related.append(Related(fr.file, placement.statement_range(src, fr.line), "the guarded value is used here"))
    related += site_related(ctx, "compiled here with torch.compile")
    data = cast(
        RecompileData,
        {
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
            "placed": placed,
            "site": f"{code.get('file')}:{code.get('line')}",
            **(facts or {}),
        },
    )
    if group[0].get("resumes"):
        data["resumes"] = group[0]["resumes"]
    diag = new_diagnostic(ctx, file, rng, "recompile", message, related=related, data=data)
    if change["kind"] == "size" and count == 1 and limit is None and options.get("dynamic") is not False:
        # automatic dynamic shapes: one recompile, then the size is dynamic. Expected, so a hint.
        diag.severity = HINT
        diag.message += " (This single recompile is torch.compile switching the size to dynamic; it happens once.)"
    return diag
