"""torch.compile and torch.jit.trace target events → placed diagnostics.

The worker's `compile_watch`/`trace_watch` send raw findings (torch's own reason text, hints,
graph-break ids, frames with columns, the compiled function's code). Here each one is put on
the user's line — the workspace frame, never `copy.py` or torch — narrowed to the expression,
and told in plain words with torch's hints. `data` keeps the raw facts and, where one of the
issue's quick fixes applies, which one (`fix`/`fixes`). Never imports torch.
"""

from __future__ import annotations

import os
import re
from typing import Any

from exportlens import placement
from exportlens.findings import Context, exception_diagnostic
from exportlens.model import ERROR, HINT, WARNING, Diagnostic, Range, Related
from exportlens.placement import Frame
from exportlens.project import is_user_file
from exportlens.source import Source

SEVERITY = {"graph-break": WARNING, "recompile": WARNING, "tracer-warning": WARNING, "trace-check-failed": ERROR}

GB_BRANCH, GB_ITEM, GB_BUILTIN, GB_DEEPCOPY = "gb0170", "gb0124", "gb0059", "gb4198"

_SIZE_GUARD = re.compile(r"tensor '(?P<name>[^']+)' size mismatch at index (?P<dim>\d+)\. "
                         r"expected (?P<expected>\d+), actual (?P<actual>\d+)")
_VALUE_GUARD = re.compile(r"^(?:L\[')?(?P<name>[A-Za-z_]\w*)(?:'\])? == (?P<value>-?\d+(?:\.\d*)?(?:e-?\d+)?)$")
_NODE_SUFFIX = re.compile(r"(?:aten|prim)::(?P<op>\w+)\(.*?# (?P<file>\S.*?):(?P<line>\d+):(?P<col>\d+)\s*$")
_ANY_SUFFIX = re.compile(r"# (?P<file>\S.*?):(?P<line>\d+):(?P<col>\d+)\s*$")
_BUILTIN = re.compile(r"builtin operator `(?P<name>[\w.]+)`")
_UNHELPFUL_HINTS = ("Please report an issue to PyTorch.",)


def from_compile_event(ctx: Context, event: dict[str, Any]) -> list[Diagnostic]:
    """All diagnostics of one `compile` or `trace` target event of the worker."""
    out: list[Diagnostic] = []
    if event.get("kind") == "compile":
        out.extend(compile_diagnostics(ctx, event))
    elif event.get("kind") == "trace":
        out.extend(trace_diagnostics(ctx, event))
    if "exception" in event:
        out.append(exception_diagnostic(ctx, event["exception"], target_error=event.get("target_error")))
    return out


# -- shared helpers --------------------------------------------------------------------------

def _diag(ctx: Context, file: str, rng: Range, code: str, message: str, *, related: list[Related] | None = None,
          data: dict[str, Any] | None = None) -> Diagnostic:
    return Diagnostic(file=file, range=rng, severity=SEVERITY[code], code=code, message=message,
                      target=ctx.target, related=related or [], data=data or {})


def _user(ctx: Context, path: str | None) -> bool:
    return bool(path) and is_user_file(path, ctx.root) and ctx.source(str(path)) is not None


def _target_anchor(ctx: Context) -> tuple[str, Range]:
    src = ctx.source(ctx.target_file)
    if src is None:
        line = max(0, ctx.target_line - 1)
        return ctx.target_file, Range.of(line, 0, line, 0)
    return ctx.target_file, placement.statement_range(src, ctx.target_line)


def _frame_range(ctx: Context, frame: Frame) -> Range:
    src = ctx.source(frame.file)
    if src is None:
        return Range.of(frame.line - 1, 0, frame.line - 1, 0)
    return placement.frame_range(src, frame)


def _site_related(ctx: Context, what: str) -> list[Related]:
    """The `torch.compile(...)` / `torch.jit.trace(...)` call this target stands for."""
    src = ctx.source(ctx.target_file)
    if src is None or not is_user_file(ctx.target_file, ctx.root):
        return []
    return [Related(ctx.target_file, site_range(src, ctx.target_line), what)]


def site_range(src: Source, line: int) -> Range:
    """A `torch.compile(...)` call, or the `@torch.compile` decorator line (not the whole def)."""
    text = src.line(line).lstrip()
    if text.startswith("@"):
        return src.line_range(line)
    return placement.statement_range(src, line)


def _def_anchor(ctx: Context, code: dict[str, Any] | None) -> tuple[str, Range] | None:
    """The name in the `def` of a compiled function (`co_firstlineno` may be its decorator)."""
    if not code or not _user(ctx, code.get("file")):
        return None
    src = ctx.source(code["file"])
    assert src is not None
    return code["file"], placement.definition_range(src, int(code.get("line") or 1))


def _name(frame: Frame) -> str:
    return "module" if frame.name in ("", "<module>") else frame.name


# -- torch.compile ---------------------------------------------------------------------------

def compile_diagnostics(ctx: Context, event: dict[str, Any]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    raw = event.get("compile_findings") or []
    for finding in raw:
        if finding.get("type") == "graph-break":
            out.append(graph_break(ctx, event, finding))
    by_code: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for finding in raw:
        if finding.get("type") in ("recompile", "recompile-limit"):
            code = finding.get("code") or {}
            by_code.setdefault((str(code.get("file")), int(code.get("line") or 0)), []).append(finding)
    for group in by_code.values():
        out.append(recompiles(ctx, event, group))
    return out


def _compiled_name(event: dict[str, Any]) -> str:
    return str((event.get("definition") or {}).get("name") or "the compiled function")


def _hints(finding: dict[str, Any]) -> list[str]:
    return [h for h in finding.get("hints") or [] if h and h not in _UNHELPFUL_HINTS]


def _break_fixes(finding: dict[str, Any], frame: Frame | None, event: dict[str, Any]) -> list[dict[str, Any]]:
    """Which of the issue's fixes apply to this break, most useful first."""
    gb = finding.get("gb_id")
    hints = " ".join(finding.get("hints") or [])
    fixes: list[dict[str, Any]] = []
    if gb == GB_BRANCH:
        fixes.append({"fix": "torch_cond"})
    elif gb == GB_ITEM or "capture_scalar_outputs" in hints:
        fixes.append({"fix": "capture_scalar_outputs"})
        fixes.append({"fix": "torch_check"})
    elif "reorderable_logging_functions" in hints:
        m = _BUILTIN.search(finding.get("explanation") or "")
        fixes.append({"fix": "reorderable_logging", "function": m["name"] if m else "print"})
    definition = event.get("definition") or {}
    if frame is not None and frame.name and frame.name != "<module>" and (
            frame.name != definition.get("name") or os.path.abspath(frame.file) != definition.get("file")):
        fixes.append({"fix": "compiler_disable", "function": frame.name, "file": frame.file, "line": frame.line})
    return fixes


def _break_text(finding: dict[str, Any], test: str) -> str:
    gb = finding.get("gb_id")
    title = str(finding.get("title") or "an unsupported construct").rstrip(".")
    explanation = str(finding.get("explanation") or "").split("\n", 1)[0].strip()
    then = ("With fullgraph=True this is an error: the call raises here." if finding.get("fullgraph")
            else "It splits the graph here and runs this part in Python.")
    if gb == GB_BRANCH:
        what = f"`{test}`" if test else "this condition"
        return (f"Graph break: {what} depends on a tensor's values, so torch.compile cannot pick a branch "
                f"while tracing. {then}")
    if gb == GB_ITEM:
        return ("Graph break: `.item()` turns a tensor into a Python number, which torch.compile does not "
                f"capture by default (capture_scalar_outputs=False). {then}")
    if gb == GB_DEEPCOPY:
        return f"Graph break: torch.compile cannot trace `copy.deepcopy` of a tensor. {then}"
    if gb == GB_BUILTIN:
        m = _BUILTIN.search(explanation)
        name = m["name"] if m else "this builtin"
        return f"Graph break: torch.compile cannot put the Python call `{name}(...)` into the graph. {then}"
    text = f"Graph break: torch.compile cannot trace this ({title})"
    return text + (f": {explanation}" if explanation and explanation != title else ".") + f" {then}"


def graph_break(ctx: Context, event: dict[str, Any], finding: dict[str, Any]) -> Diagnostic:
    frames = placement.user_frames(finding.get("frames") or [], ctx.root)
    at = finding.get("at") or {}
    if not frames and _user(ctx, at.get("file")):
        frames = [Frame(at["file"], int(at["line"]))]
    frame = frames[-1] if frames else None
    test = ""
    if frame is not None and ctx.source(frame.file) is not None:
        src = ctx.source(frame.file)
        assert src is not None
        file = frame.file
        if finding.get("gb_id") == GB_BRANCH:  # dynamo's carets also cover the `:` here
            rng = placement.guard_range(src, frame.line, set())[0]
        elif frame.col is not None:
            rng = placement.frame_range(src, frame)
        else:
            m = _BUILTIN.search(str(finding.get("explanation") or ""))
            rng = placement.call_range(src, frame.line, m["name"].split(".")[-1]) if m else \
                placement.statement_range(src, frame.line)
        test = src.text_of(rng) if rng.start.line == rng.end.line else ""
    else:
        file, rng = _target_anchor(ctx)
    message = _break_text(finding, test)
    hints = _hints(finding)
    if hints:
        message += " Torch suggests: " + " ".join(h if h.endswith(".") else h + "." for h in hints)
    name = _compiled_name(event)
    if frame is not None and frame.name not in (name, "<module>"):
        message += f" (reached from the compiled function `{name}`)"
    related = [Related(f.file, _frame_range(ctx, f), f"called from here ({_name(f)})")
               for f in reversed(frames[:-1])]
    related += _site_related(ctx, "compiled here with torch.compile")
    fixes = _break_fixes(finding, frame, event)
    data = {
        "kind": "graph-break", "gb_id": finding.get("gb_id"), "url": finding.get("url"),
        "title": finding.get("title"), "reason": finding.get("reason"), "explanation": finding.get("explanation"),
        "hints": finding.get("hints") or [], "torch_location": at, "user_line": frame.line if frame else None,
        "function": frame.name if frame else None, "compiled": event.get("definition"),
        "compile_call": {"file": ctx.target_file, "line": ctx.target_line},
        "compile_options": event.get("compile_options") or {},
        "fix": fixes[0]["fix"] if fixes else None, "fixes": fixes,
    }
    if test:
        data["test_text"] = test
    diag = _diag(ctx, file, rng, "graph-break", message, related=related, data=data)
    if finding.get("fullgraph"):  # the script stops here: not a slowdown but a failure
        diag.severity = ERROR
        data["fullgraph"] = True
    return diag


def what_changed(guard: str) -> dict[str, Any]:
    """A failed guard in plain words: a tensor dimension, a Python number, or torch's text."""
    m = _SIZE_GUARD.search(guard)
    if m:
        return {"kind": "size", "name": m["name"], "dim": int(m["dim"]), "expected": int(m["expected"]),
                "actual": int(m["actual"]),
                "text": f"the size of dimension {m['dim']} of `{m['name']}` changed ({m['expected']} → {m['actual']})",
                "keeps": f"the size of dimension {m['dim']} of `{m['name']}`"}
    m = _VALUE_GUARD.match(guard.strip())
    if m:
        return {"kind": "value", "name": m["name"], "value": m["value"],
                "text": f"the Python number `{m['name']}` changed (the code was compiled for {m['value']})",
                "keeps": f"the value of the Python number `{m['name']}`"}
    return {"kind": "other", "text": f"the guard `{guard}` failed", "keeps": f"what the guard `{guard}` checks"}


def recompiles(ctx: Context, event: dict[str, Any], group: list[dict[str, Any]]) -> Diagnostic:
    recs = [f for f in group if f.get("type") == "recompile"]
    limit = next((f for f in group if f.get("type") == "recompile-limit"), None)
    code = (group[0].get("code") or {})
    fn = str(code.get("name") or _compiled_name(event))
    first = (recs[0]["failures"][0] if recs and recs[0].get("failures") else {"guard": (limit or {}).get("reason", "")})
    guard = str(first.get("guard") or first.get("reason") or "")
    if limit is not None and not recs:
        guard = re.sub(r"^\d+/\d+: ", "", str(limit.get("reason") or ""))
    change = what_changed(guard)
    anchor = _def_anchor(ctx, code) or _def_anchor(ctx, event.get("definition")) or _target_anchor(ctx)
    count = len(recs)
    message = (f"torch.compile recompiled `{fn}` {count} time{'s' if count != 1 else ''}: on the first, "
               f"{change['text']}.") if count else f"torch.compile stopped compiling `{fn}`."
    if limit is not None:
        last = what_changed(re.sub(r"^\d+/\d+: ", "", str(limit.get("reason") or "")))
        message += (f" It then hit {limit.get('config', 'recompile_limit')} ({limit.get('limit')}): "
                    f"{last['keeps']} keeps changing, so later calls run without compilation.")
    options = event.get("compile_options") or {}
    fixes: list[dict[str, Any]] = []
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
    calls = [f for f in (recs[0] if recs else limit or {}).get("call_stack") or []]
    sites = placement.user_frames(calls, ctx.root)
    if sites:
        site = sites[-1]
        related.append(Related(site.file, _frame_range(ctx, site), "this call triggered the recompile"))
    for fr in placement.user_frames(first.get("frames") or [], ctx.root)[-1:]:
        src = ctx.source(fr.file)
        if src is not None:
            related.append(Related(fr.file, placement.statement_range(src, fr.line), "the guarded value is used here"))
    related += _site_related(ctx, "compiled here with torch.compile")
    data = {
        "kind": "recompile", "function": fn, "code": code, "recompiles": count, "guard": guard, "change": change,
        "reasons": [r.get("reason") for r in recs], "limit_hit": limit is not None,
        "limit": limit.get("limit") if limit else None, "url": _RECOMPILE_URL,
        "compile_call": {"file": ctx.target_file, "line": ctx.target_line}, "compile_options": options,
        "fix": fixes[0]["fix"] if fixes else None, "fixes": fixes,
    }
    diag = _diag(ctx, anchor[0], anchor[1], "recompile", message, related=related, data=data)
    if change["kind"] == "size" and count == 1 and limit is None and options.get("dynamic") is not False:
        # automatic dynamic shapes: one recompile, then the size is dynamic. Expected, so a hint.
        diag.severity = HINT
        diag.message += " (This single recompile is torch.compile switching the size to dynamic; it happens once.)"
    return diag


_RECOMPILE_URL = ("https://docs.pytorch.org/docs/main/user_guide/torch_compiler/compile/"
                  "programming_model.recompilation.html")


# -- torch.jit.trace -------------------------------------------------------------------------

def trace_diagnostics(ctx: Context, event: dict[str, Any]) -> list[Diagnostic]:
    out = []
    for finding in event.get("trace_findings") or []:
        if finding.get("type") == "tracer-warning":
            out.append(tracer_warning(ctx, event, finding))
        elif finding.get("type") == "trace-check-failed":
            out.append(trace_check_failed(ctx, event, finding))
    return out


def _warning_place(ctx: Context, finding: dict[str, Any]) -> tuple[str, Range, str] | None:
    """Where a TracerWarning belongs: its own line, a `# path:line:col` suffix, or the stack."""
    stack = placement.user_frames(finding.get("stack") or [], ctx.root)
    file, line = finding.get("file"), int(finding.get("line") or 0)
    if _user(ctx, file) and line:
        for fr in reversed(stack):
            if fr.file == file and fr.line == line and fr.col is not None:
                return fr.file, _frame_range(ctx, fr), "warning"
        src = ctx.source(str(file))
        assert src is not None
        return str(file), placement.statement_range(src, line), "warning"
    for text_line in str(finding.get("message") or "").splitlines():
        m = _NODE_SUFFIX.search(text_line) or _ANY_SUFFIX.search(text_line)
        if m and _user(ctx, os.path.abspath(m["file"])):
            path = os.path.abspath(m["file"])
            src = ctx.source(path)
            assert src is not None
            op = m.groupdict().get("op")
            rng = placement.call_range(src, int(m["line"]), op) if op else placement.statement_range(src, int(m["line"]))
            return path, rng, "suffix"
    if stack:
        return stack[-1].file, _frame_range(ctx, stack[-1]), "stack"
    return None


def _warning_text(message: str, code: str) -> tuple[str, str]:
    """(kind, plain words) for the TracerWarnings torch 2.13 emits."""
    first = message.split("\n", 1)[0]
    m = re.match(r"Converting a tensor to a Python (\w+)", first)
    if m:
        what = m.group(1)
        subject = f"`{code}`" if code else "this value"
        return "python-value", (
            f"torch.jit.trace turns {subject} into a Python {what}, so the trace records the value the example "
            f"input gave as a constant: it will not follow other inputs. Keep it a tensor operation "
            f"(for a branch: torch.where or torch.cond), or use torch.export.")
    if first.startswith("Trace had nondeterministic nodes"):
        nodes = [ln.strip() for ln in message.splitlines()[1:] if "::" in ln]
        op = re.search(r"(?:aten|prim)::(\w+)", nodes[0]).group(1) if nodes and re.search(r"::(\w+)", nodes[0]) else "random"  # type: ignore[union-attr]
        return "nondeterministic", (
            f"The traced code calls `{op}`, which gives different values on every run, so torch.jit.trace's "
            f"check cannot compare the trace with the Python function. Pass the random values in as inputs, "
            f"call .eval() on the model if this is dropout, or trace with check_trace=False.")
    m = re.match(r"Output nr (\d+)\. of the traced function does not match", first)
    if m:
        detail = [ln.strip() for ln in message.splitlines()[1:] if ln.strip().startswith(("Mismatched", "Greatest"))]
        return "output-mismatch", (
            f"Output {m.group(1)} of the traced function differs from what the Python function returns on the "
            f"same input, so the trace does not reproduce this code" + (f" ({'; '.join(detail[:2])})" if detail else "")
            + ".")
    return "other", f"torch.jit.trace warns: {first}"


def tracer_warning(ctx: Context, event: dict[str, Any], finding: dict[str, Any]) -> Diagnostic:
    placed = _warning_place(ctx, finding)
    if placed is None:
        file, rng = _target_anchor(ctx)
        how = "target"
    else:
        file, rng, how = placed
    src = ctx.source(file)
    code = src.text_of(rng) if src is not None and rng.start.line == rng.end.line else ""
    kind, message = _warning_text(str(finding.get("message") or ""), code)
    on_call = file == ctx.target_file and rng.start.line == ctx.target_line - 1
    related = [] if on_call else _site_related(ctx, "traced here with torch.jit.trace")
    data = {"kind": kind, "warning": finding.get("message"), "category": finding.get("category"),
            "torch_location": {"file": finding.get("file"), "line": finding.get("line")}, "placed": how,
            "url": _JIT_TRACE_URL, "trace_call": {"file": ctx.target_file, "line": ctx.target_line}}
    if kind == "python-value" and code:
        data["test_text"] = code
    return _diag(ctx, file, rng, "tracer-warning", message, related=related, data=data)


_JIT_TRACE_URL = "https://docs.pytorch.org/docs/stable/generated/torch.jit.trace.html"


def trace_check_failed(ctx: Context, event: dict[str, Any], finding: dict[str, Any]) -> Diagnostic:
    trace_src = placement.user_frames(finding.get("trace_source") or [], ctx.root)
    # torch prints innermost first; the first user entry is the traced code's line
    place = next((f for f in trace_src if f.name != "<module>"), trace_src[0] if trace_src else None)
    if place is not None and ctx.source(place.file) is not None:
        src = ctx.source(place.file)
        assert src is not None
        file, rng = place.file, placement.statement_range(src, place.line)
    else:
        file, rng = _target_anchor(ctx)
    node_diff = [ln.strip() for ln in str(finding.get("node_diff") or "").splitlines() if ln.strip().startswith(("-", "+"))]
    if finding.get("exception"):
        message = ("torch.jit.trace's check failed: running the trace on the check inputs raised, because the trace "
                   "fixed what this line did for the example input (a loop count, an index or a branch).")
    else:
        message = ("torch.jit.trace's check failed: tracing again with the check inputs recorded a different graph "
                   "from this line on. The trace fixes what this line did for the example input (a Python loop is "
                   "unrolled, a branch taken once), so other inputs get the wrong computation.")
    if node_diff:
        message += f" First difference: `{node_diff[0].lstrip('-+ ').split(' # ')[0]}`."
    message += " Use torch.export (or torch.jit.script) for code whose structure depends on the input."
    related = _site_related(ctx, "traced here with torch.jit.trace")
    data = {"kind": "trace-check-failed", "graph_diff": finding.get("graph_diff"), "node_diff": finding.get("node_diff"),
            "message": finding.get("message"), "summary": finding.get("summary"), "url": _JIT_TRACE_URL,
            "recovered": bool(event.get("recovered")),
            "trace_call": {"file": ctx.target_file, "line": ctx.target_line}}
    return _diag(ctx, file, rng, "trace-check-failed", message, related=related, data=data)
