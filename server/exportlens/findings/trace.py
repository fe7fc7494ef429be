"""torch.jit.trace: tracer warnings and check_inputs failures, placed through torch's `# path:line:col` suffixes."""

from __future__ import annotations

import ast
import dataclasses
import os
import re
from typing import Literal, cast

from exportlens import codes
from exportlens.findings import boundary, placement
from exportlens.findings.context import Context, frame_range, is_user, library_place, new_diagnostic, site_related, target_anchor
from exportlens.model import Diagnostic, Range
from exportlens.project import is_user_file
from exportlens.protocol import TargetEvent, TraceCheckFailedData, TraceCheckFinding, TraceOverflow, TracerWarningData, TracerWarningFinding
from exportlens.source import Source

_NODE_SUFFIX = re.compile(r"(?:aten|prim)::(?P<op>\w+)\(.*?# (?P<file>\S.*?):(?P<line>\d+):(?P<col>\d+)\s*$")

_ANY_SUFFIX = re.compile(r"# (?P<file>\S.*?):(?P<line>\d+):(?P<col>\d+)\s*$")


Placed = Literal["warning", "suffix", "stack", "target", "library"]


def trace_diagnostics(ctx: Context, event: TargetEvent) -> list[Diagnostic]:
    """One diagnostic per distinct tracer warning (and failed check); warnings past the kept places in one more."""
    out = []
    for finding in event.get("trace_findings") or []:
        if finding["type"] == "tracer-warning":
            out.append(tracer_warning(ctx, event, finding))
        elif finding["type"] == "trace-check-failed":
            out.append(trace_check_failed(ctx, event, finding))
    overflow = event.get("trace_overflow")
    if overflow:
        out.append(_overflow(ctx, overflow))
    return out


def _overflow(ctx: Context, overflow: TraceOverflow) -> Diagnostic:
    """The warnings past the places kept: counted on the trace call, so none is silently dropped."""
    file, rng = target_anchor(ctx)
    sites, warnings = overflow["sites"], overflow["warnings"]
    message = (
        f"torch.jit.trace warned at {sites} more place{'s' if sites != 1 else ''} ({warnings} warning{'s' if warnings != 1 else ''}) "
        f"beyond the {overflow['kept']} shown one by one; run the trace with warnings shown to see them all."
    )
    data: TracerWarningData = {
        "kind": "overflow",
        "warning": None,
        "category": "TracerWarning",
        "torch_location": {},
        "placed": "target",
        "url": codes.JIT_TRACE_URL,
        "trace_call": {"file": ctx.target_file, "line": ctx.target_line},
        "count": warnings,
    }
    migrate, data["export_call"] = _migrate(ctx)
    return new_diagnostic(ctx, file, rng, "tracer-warning", message + migrate, data=data)


def _warning_place(ctx: Context, finding: TracerWarningFinding) -> tuple[str, Range, Placed] | None:
    """Where a TracerWarning in the project belongs: its own line, a `# path:line:col` suffix, or the stack."""
    stack = placement.user_frames(finding.get("stack") or [], ctx.root)
    file, line = finding.get("file"), int(finding.get("line") or 0)
    if is_user(ctx, file) and line:
        for fr in reversed(stack):
            if fr.file == file and fr.line == line and fr.col is not None:
                return fr.file, frame_range(ctx, fr), "warning"
        src = ctx.source(str(file))
        assert src is not None
        return str(file), placement.statement_range(src, line), "warning"
    suffix = _suffix(finding)
    if suffix is not None and is_user(ctx, suffix[0]):
        path, at, op = suffix
        src = ctx.source(path)
        assert src is not None
        rng = placement.call_range(src, at, op) if op else placement.statement_range(src, at)
        return path, rng, "suffix"
    if stack:
        return stack[-1].file, frame_range(ctx, stack[-1]), "stack"
    return None


def _suffix(finding: TracerWarningFinding) -> tuple[str, int, str | None] | None:
    """The first `# path:line:col` location in the warning's graph text (the check run's warnings), with its op."""
    for text_line in str(finding.get("message") or "").splitlines():
        m = _NODE_SUFFIX.search(text_line) or _ANY_SUFFIX.search(text_line)
        if m:
            return os.path.abspath(m["file"]), int(m["line"]), m.groupdict().get("op")
    return None


def _library_warning(ctx: Context, finding: TracerWarningFinding) -> boundary.Boundary | None:
    """A warning raised in a library (or a check warning whose node comes from one): the boundary, the library line inside."""
    file = str(finding.get("file") or "")
    found = boundary.locate([("live", finding.get("stack"))], ctx.root)
    if found is None or is_user(ctx, file):
        return None
    found.outer = [f for f in found.outer if (f.file, f.line) != (ctx.target_file, ctx.target_line)]  # the trace call itself
    if found.inside is not None and (found.inside.file, found.inside.line) == (os.path.abspath(file), int(finding.get("line") or 0)):
        return found
    suffix = _suffix(finding)
    if suffix is not None and not is_user_file(suffix[0], ctx.root) and not boundary.is_torch(suffix[0]):
        lib_src = ctx.source(suffix[0])
        loc = lib_src.line(suffix[1]).strip() if lib_src is not None else None
        found.library = [boundary.LibraryFrame(suffix[0], suffix[1], "", "", loc or None, boundary.package_of(suffix[0]))]
        return found
    return found if found.inside is not None else None


_KINDS: list[tuple[re.Pattern[str], Literal["python-value", "loop", "length", "constant", "nondeterministic", "output-mismatch"]]] = [
    (re.compile(r"Converting a tensor to a Python (\w+)"), "python-value"),
    (re.compile(r"Iterating over a tensor"), "loop"),
    (re.compile(r"Using len to get tensor shape"), "length"),
    (re.compile(r"torch\.tensor results are registered as constants"), "constant"),
    (re.compile(r"Trace had nondeterministic nodes"), "nondeterministic"),
    (re.compile(r"Output nr (\d+)\. of the traced function does not match"), "output-mismatch"),
]


def _warning_text(message: str, code: str) -> tuple[Literal["python-value", "loop", "length", "constant", "nondeterministic", "output-mismatch", "other"], str]:
    """(kind, plain words) for the TracerWarnings torch 2.13 emits."""
    first = message.split("\n", 1)[0]
    subject = f"`{code}`" if code else "this value"
    for pattern, kind in _KINDS:
        m = pattern.match(first)
        if not m:
            continue
        if kind == "python-value":
            return kind, (
                f"torch.jit.trace turns {subject} into a Python {m.group(1)}, so the trace records the value the example "
                f"input gave as a constant: it will not follow other inputs. Keep it a tensor operation "
                f"(for a branch: torch.where or torch.cond), or use torch.export."
            )
        if kind == "loop":
            return kind, (
                f"torch.jit.trace unrolls the loop over {subject} for the example input's length: an input of another "
                f"length still runs that many iterations. Use a tensor operation over the whole tensor, or torch.export."
            )
        if kind == "length":
            return kind, (
                f"torch.jit.trace records `len(...)` in {subject} as the example input's length, a constant: other "
                f"lengths get the wrong value. Use `tensor.shape[0]`, which the trace follows."
            )
        if kind == "constant":
            return kind, (
                f"torch.jit.trace records the `torch.tensor(...)` in {subject} as a constant: right for fixed values, "
                f"wrong when it is built from values that depend on the input."
            )
        if kind == "nondeterministic":
            nodes = [ln.strip() for ln in message.splitlines()[1:] if "::" in ln]
            op_match = re.search(r"(?:aten|prim)::(\w+)", nodes[0]) if nodes else None
            op = op_match.group(1) if op_match else "random"
            return kind, (
                f"The traced code calls `{op}`, which gives different values on every run, so torch.jit.trace's "
                f"check cannot compare the trace with the Python function. Pass the random values in as inputs, "
                f"call .eval() on the model if this is dropout, or trace with check_trace=False."
            )
        detail = [ln.strip() for ln in message.splitlines()[1:] if ln.strip().startswith(("Mismatched", "Greatest"))]
        return kind, (
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


def kind_of(message: str) -> str:
    first = message.split("\n", 1)[0]
    return next((kind for pattern, kind in _KINDS if pattern.match(first)), "other")


def _library_subject(src: Source, lib: boundary.LibraryFrame, kind: str) -> boundary.LibraryFrame:
    """The library frame narrowed to the expression a warning is about: the loop's iterable, a branch's
    test (where Python gave no columns), else as Python gave it."""
    stmt = placement.statement_at(src.tree, lib.line) if src.tree is not None else None
    node: ast.expr | None = None
    if kind == "loop" and isinstance(stmt, (ast.For, ast.AsyncFor)) and stmt.lineno == lib.line:
        node = stmt.iter
    elif lib.col is None and isinstance(stmt, (ast.If, ast.While)) and stmt.lineno == lib.line:
        node = stmt.test
    if node is None or node.end_lineno is None or node.end_col_offset is None:
        return lib
    return dataclasses.replace(lib, col=node.col_offset, end_line=node.end_lineno, end_col=node.end_col_offset)


def _times(count: int) -> str:
    return f" torch.jit.trace warned here {count} times (a loop, or a line reached again)." if count > 1 else ""


def tracer_warning(ctx: Context, event: TargetEvent, finding: TracerWarningFinding) -> Diagnostic:
    """One distinct tracer warning: on its own line in the project, or on the project's call into the library that raised it."""
    count = int(finding.get("count") or 1)
    lib_b = _library_warning(ctx, finding)
    if lib_b is not None:
        return _library_tracer_warning(ctx, finding, lib_b, count)
    placed = _warning_place(ctx, finding)
    how: Placed
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
    data = _warning_data(ctx, finding, kind, how, count)
    if kind == "python-value" and code:
        data["test_text"] = code
    migrate, data["export_call"] = _migrate(ctx)
    return new_diagnostic(ctx, file, rng, "tracer-warning", message + _times(count) + migrate, related=related, data=data)


def _warning_data(ctx: Context, finding: TracerWarningFinding, kind: str, how: Placed, count: int) -> TracerWarningData:
    return cast(
        TracerWarningData,
        {
            "kind": kind,
            "warning": finding.get("message"),
            "category": finding.get("category"),
            "torch_location": {"file": finding.get("file"), "line": finding.get("line")},
            "placed": how,
            "url": codes.JIT_TRACE_URL,
            "trace_call": {"file": ctx.target_file, "line": ctx.target_line},
            "count": count,
            "site": f"{finding.get('file')}:{finding.get('line')}:{str(finding.get('message') or '').split(chr(10), 1)[0]}",
        },
    )


def _library_tracer_warning(ctx: Context, finding: TracerWarningFinding, b: boundary.Boundary, count: int) -> Diagnostic:
    """A tracer warning raised in a library: on the project's call into it, the library line related."""
    lib = b.inside
    assert lib is not None
    lib_src = ctx.source(lib.file)
    code = ""
    if lib_src is not None:
        lib = b.library[-1] = _library_subject(lib_src, lib, kind_of(str(finding.get("message") or "")))
        lrng = boundary.library_range(lib_src, lib)
        code = lib_src.text_of(lrng) if lrng.start.line == lrng.end.line else ""
    rng, related, facts = library_place(ctx, b)
    kind, text = _warning_text(str(finding.get("message") or ""), code)
    where = f" ({lib.where()}, in `{lib.qualname}`)" if lib.qualname else f" ({lib.where()})"
    message = f"Inside the library {lib.package}{where}: {text[0].lower()}{text[1:]}" + _times(count)
    message += (
        f" {boundary.NO_EDIT} What you can do: check the traced module on inputs unlike the example "
        f"(torch.jit.trace's check_inputs), or move to torch.export, which keeps such values as guards instead of constants."
    )
    if b.frame.file != ctx.target_file or b.frame.line != ctx.target_line:
        related += site_related(ctx, "traced here with torch.jit.trace")
    data = _warning_data(ctx, finding, kind, "library", count)
    data.update(cast(TracerWarningData, facts))
    if code:
        data["library_test_text"] = code
    migrate, data["export_call"] = _migrate(ctx)
    return new_diagnostic(ctx, b.frame.file, rng, "tracer-warning", message + migrate, related=related, data=data)


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
