"""torch.jit.trace: tracer warnings and check_inputs failures, placed through torch's `# path:line:col` suffixes."""

from __future__ import annotations

import ast
import os
import re
from typing import Literal

from exportlens import codes
from exportlens.findings import placement
from exportlens.findings.context import Context, frame_range, is_user, new_diagnostic, site_related, target_anchor
from exportlens.model import Diagnostic, Range
from exportlens.protocol import TargetEvent, TraceCheckFailedData, TraceCheckFinding, TracerWarningData, TracerWarningFinding

_NODE_SUFFIX = re.compile(r"(?:aten|prim)::(?P<op>\w+)\(.*?# (?P<file>\S.*?):(?P<line>\d+):(?P<col>\d+)\s*$")

_ANY_SUFFIX = re.compile(r"# (?P<file>\S.*?):(?P<line>\d+):(?P<col>\d+)\s*$")


def trace_diagnostics(ctx: Context, event: TargetEvent) -> list[Diagnostic]:
    out = []
    for finding in event.get("trace_findings") or []:
        if finding["type"] == "tracer-warning":
            out.append(tracer_warning(ctx, event, finding))
        elif finding["type"] == "trace-check-failed":
            out.append(trace_check_failed(ctx, event, finding))
    return out


def _warning_place(ctx: Context, finding: TracerWarningFinding) -> tuple[str, Range, Literal["warning", "suffix", "stack"]] | None:
    """Where a TracerWarning belongs: its own line, a `# path:line:col` suffix, or the stack."""
    stack = placement.user_frames(finding.get("stack") or [], ctx.root)
    file, line = finding.get("file"), int(finding.get("line") or 0)
    if is_user(ctx, file) and line:
        for fr in reversed(stack):
            if fr.file == file and fr.line == line and fr.col is not None:
                return fr.file, frame_range(ctx, fr), "warning"
        src = ctx.source(str(file))
        assert src is not None
        return str(file), placement.statement_range(src, line), "warning"
    for text_line in str(finding.get("message") or "").splitlines():
        m = _NODE_SUFFIX.search(text_line) or _ANY_SUFFIX.search(text_line)
        if m and is_user(ctx, os.path.abspath(m["file"])):
            path = os.path.abspath(m["file"])
            src = ctx.source(path)
            assert src is not None
            op = m.groupdict().get("op")
            rng = placement.call_range(src, int(m["line"]), op) if op else placement.statement_range(src, int(m["line"]))
            return path, rng, "suffix"
    if stack:
        return stack[-1].file, frame_range(ctx, stack[-1]), "stack"
    return None


def _warning_text(message: str, code: str) -> tuple[Literal["python-value", "nondeterministic", "output-mismatch", "other"], str]:
    """(kind, plain words) for the TracerWarnings torch 2.13 emits."""
    first = message.split("\n", 1)[0]
    m = re.match(r"Converting a tensor to a Python (\w+)", first)
    if m:
        what = m.group(1)
        subject = f"`{code}`" if code else "this value"
        return "python-value", (
            f"torch.jit.trace turns {subject} into a Python {what}, so the trace records the value the example "
            f"input gave as a constant: it will not follow other inputs. Keep it a tensor operation "
            f"(for a branch: torch.where or torch.cond), or use torch.export."
        )
    if first.startswith("Trace had nondeterministic nodes"):
        nodes = [ln.strip() for ln in message.splitlines()[1:] if "::" in ln]
        op = re.search(r"(?:aten|prim)::(\w+)", nodes[0]).group(1) if nodes and re.search(r"::(\w+)", nodes[0]) else "random"  # type: ignore[union-attr]
        return "nondeterministic", (
            f"The traced code calls `{op}`, which gives different values on every run, so torch.jit.trace's "
            f"check cannot compare the trace with the Python function. Pass the random values in as inputs, "
            f"call .eval() on the model if this is dropout, or trace with check_trace=False."
        )
    m = re.match(r"Output nr (\d+)\. of the traced function does not match", first)
    if m:
        detail = [ln.strip() for ln in message.splitlines()[1:] if ln.strip().startswith(("Mismatched", "Greatest"))]
        return "output-mismatch", (
            f"Output {m.group(1)} of the traced function differs from what the Python function returns on the "
            f"same input, so the trace does not reproduce this code" + (f" ({'; '.join(detail[:2])})" if detail else "") + "."
        )
    return "other", f"torch.jit.trace warns: {first}"


def export_equivalent(ctx: Context) -> str | None:
    """The `torch.export.export(...)` call that replaces the target's `torch.jit.trace(...)`, from its source."""
    src = ctx.source(ctx.target_file)
    tree = src.tree if src is not None else None
    if src is None or tree is None:
        return None
    call = next(
        (
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Call)
            and n.lineno == ctx.target_line
            and isinstance(n.func, (ast.Attribute, ast.Name))
            and (n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id) == "trace"
        ),
        None,
    )
    if call is None or not call.args:
        return None
    model = ast.get_source_segment(src.text, call.args[0])
    inputs = next((k.value for k in call.keywords if k.arg == "example_inputs"), call.args[1] if len(call.args) > 1 else None)
    kwargs = next((k.value for k in call.keywords if k.arg == "example_kwarg_inputs"), None)
    if model is None or (inputs is None and kwargs is None):
        return None
    args = "()"
    if inputs is not None:
        text = ast.get_source_segment(src.text, inputs) or ""
        args = text if isinstance(inputs, ast.Tuple) else f"({text},)"
    extra = f", kwargs={ast.get_source_segment(src.text, kwargs)}" if kwargs is not None else ""
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    fn = functions.get(model) if isinstance(call.args[0], ast.Name) else None
    if fn is not None:  # export takes an nn.Module, not a function: wrap it, with the function's own parameters
        wrapper = "".join(part.capitalize() for part in model.split("_")) or "Wrapped"
        params = ast.unparse(fn.args)
        passed = ", ".join(
            [a.arg for a in fn.args.posonlyargs + fn.args.args]
            + ([f"*{fn.args.vararg.arg}"] if fn.args.vararg else [])
            + [f"{a.arg}={a.arg}" for a in fn.args.kwonlyargs]
            + ([f"**{fn.args.kwarg.arg}"] if fn.args.kwarg else [])
        )
        return (
            f"class {wrapper}(torch.nn.Module):\n    def forward(self, {params}):\n        return {model}({passed})\n\n"
            f"ep = torch.export.export({wrapper}(), {args}{extra})"
        )
    return f"ep = torch.export.export({model}, {args}{extra})"


def _migrate(ctx: Context) -> tuple[str, str | None]:
    """The sentence every trace finding ends with: TorchScript is deprecated, here is the export call."""
    code = export_equivalent(ctx)
    if code is None:
        return " TorchScript (torch.jit.trace) is deprecated: migrate to torch.export.", None
    shown = code.replace("\n\n", "; ").replace("\n        ", " ").replace("\n    ", " ")
    return f" TorchScript (torch.jit.trace) is deprecated: migrate to torch.export: `{shown}`.", code


def tracer_warning(ctx: Context, event: TargetEvent, finding: TracerWarningFinding) -> Diagnostic:
    placed = _warning_place(ctx, finding)
    how: Literal["warning", "suffix", "stack", "target"]
    if placed is None:
        file, rng = target_anchor(ctx)
        how = "target"
    else:
        file, rng, how = placed
    src = ctx.source(file)
    on_call = file == ctx.target_file and rng.start.line == ctx.target_line - 1
    # the code is the converted value only on the warning's own line, never the trace call or a caller
    code = src.text_of(rng) if src is not None and rng.start.line == rng.end.line and how in ("warning", "suffix") and not on_call else ""
    kind, message = _warning_text(str(finding.get("message") or ""), code)
    related = [] if on_call else site_related(ctx, "traced here with torch.jit.trace")
    data: TracerWarningData = {
        "kind": kind,
        "warning": finding.get("message"),
        "category": finding.get("category"),
        "torch_location": {"file": finding.get("file"), "line": finding.get("line")},
        "placed": how,
        "url": codes.JIT_TRACE_URL,
        "trace_call": {"file": ctx.target_file, "line": ctx.target_line},
    }
    if kind == "python-value" and code:
        data["test_text"] = code
    migrate, data["export_call"] = _migrate(ctx)
    return new_diagnostic(ctx, file, rng, "tracer-warning", message + migrate, related=related, data=data)


def trace_check_failed(ctx: Context, event: TargetEvent, finding: TraceCheckFinding) -> Diagnostic:
    trace_src = placement.user_frames(finding.get("trace_source") or [], ctx.root)
    # torch prints innermost first; the first user entry is the traced code's line
    place = next((f for f in trace_src if f.name != "<module>"), trace_src[0] if trace_src else None)
    if place is not None and ctx.source(place.file) is not None:
        src = ctx.source(place.file)
        assert src is not None
        file, rng = place.file, placement.statement_range(src, place.line)
    else:
        file, rng = target_anchor(ctx)
    node_diff = [ln.strip() for ln in str(finding.get("node_diff") or "").splitlines() if ln.strip().startswith(("-", "+"))]
    if finding.get("exception"):
        message = (
            "torch.jit.trace's check failed: running the trace on the check inputs raised, because the trace "
            "fixed what this line did for the example input (a loop count, an index or a branch)."
        )
    else:
        message = (
            "torch.jit.trace's check failed: tracing again with the check inputs recorded a different graph "
            "from this line on. The trace fixes what this line did for the example input (a Python loop is "
            "unrolled, a branch taken once), so other inputs get the wrong computation."
        )
    if node_diff:
        message += f" First difference: `{node_diff[0].lstrip('-+ ').split(' # ')[0]}`."
    message += " Use torch.export (or torch.jit.script) for code whose structure depends on the input."
    related = site_related(ctx, "traced here with torch.jit.trace")
    data: TraceCheckFailedData = {
        "kind": "trace-check-failed",
        "graph_diff": finding.get("graph_diff"),
        "node_diff": finding.get("node_diff"),
        "message": finding.get("message"),
        "summary": finding.get("summary"),
        "url": codes.JIT_TRACE_URL,
        "recovered": bool(event.get("recovered")),
        "trace_call": {"file": ctx.target_file, "line": ctx.target_line},
    }
    migrate, data["export_call"] = _migrate(ctx)
    return new_diagnostic(ctx, file, rng, "trace-check-failed", message + migrate, related=related, data=data)
