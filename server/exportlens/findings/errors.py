"""Exceptions and crashes: what draft export, the user's code or the worker process raised."""

from __future__ import annotations

import re

from exportlens.findings import boundary, placement
from exportlens.findings.context import Context, new_diagnostic, outer_related, target_anchor
from exportlens.findings.placement import Frame
from exportlens.model import Diagnostic, Range, Related
from exportlens.project import is_user_file
from exportlens.protocol import CrashData, DraftCrash, DraftCrashData, ExceptionInfo, ExportErrorData, SyntaxErrorData, TargetEvent

_FILE_LINE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')

_DRAFT_FOOTER = re.compile(
    r"\n\s*(The error above occurred when calling torch\.export\.export|"
    r"If you would like to view|For more information about this error|"
    r"To execute this test, run|from user code:).*",
    re.S,
)


def exception_diagnostic(ctx: Context, exc: ExceptionInfo, *, target_error: str | None = None) -> Diagnostic:
    """An exception raised by draft_export, by the user's code, or while building the target."""
    chain = exc.get("chain") or []
    syntax = exc.get("syntax")
    syntax_file, syntax_line = (syntax.get("file"), syntax.get("line")) if syntax else (None, None)
    if syntax and syntax_file and syntax_line and is_user_file(syntax_file, ctx.root):
        src = ctx.source(syntax_file)
        if src is not None:
            line = int(syntax_line)
            col = max(0, int(syntax.get("col") or 1) - 1)
            text = src.line(line)
            start = src.position(line, len(text[:col].encode()))
            rng = Range(start, src.line_range(line).end if start < src.line_range(line).end else start)
            return new_diagnostic(
                ctx, syntax_file, rng, "syntax-error", f"SyntaxError: {syntax.get('msg')}", data=SyntaxErrorData(exception_type="SyntaxError")
            )
    b = ctx.locate([("traceback", link.get("frames")) for link in chain])
    frames: list[Frame] = [*b.outer, b.frame] if b is not None else []
    if not frames:  # torch sometimes names the user's line only in its message
        for m in _FILE_LINE.finditer(exc.get("message", "")):
            if is_user_file(m["file"], ctx.root):
                frames = [Frame(m["file"], int(m["line"]))]
    message = _clean_message(exc.get("message", ""))
    kind = exc.get("type", "Exception")
    code = "target-error" if target_error else "export-error"
    lib = b.inside if b is not None and frames and frames[-1] == b.frame else None
    inside = f"inside the library {lib.package} ({lib.where()}, in `{lib.qualname}`): " if lib is not None else ""
    if kind.endswith("SystemExit"):
        text = f"{target_error[0].upper() + target_error[1:] if target_error else 'The script exited'}."
    elif target_error:
        text = f"{target_error[0].upper() + target_error[1:]}: {inside}{kind}: {message}"
    else:
        text = f"torch.export failed{' ' + inside.rstrip(': ') + ':' if inside else ':'} {kind}: {message}"
    data: ExportErrorData = {"exception_type": kind, "exception_message": exc.get("message", "")[:4000]}  # TargetErrorData's keys too
    if frames:
        frame = frames[-1]
        src = ctx.source(frame.file)
        rng = placement.frame_range(src, frame) if src else Range.of(frame.line - 1, 0, frame.line - 1, 0)
        related = outer_related(ctx, frames[:-1], "called", frame)
        if lib is not None:
            assert b is not None
            related.insert(0, boundary.library_related(ctx.source(lib.file), lib, "it was raised here"))
            data.update(
                {
                    "library": lib.package,
                    "library_frame": lib.to_json(),
                    "library_chain": b.chain(ctx.source(b.frame.file)),
                    "upstream_search": boundary.upstream_search(lib, "torch.export " + kind.rsplit(".", 1)[-1]),
                }
            )
            if b.declared:
                data["boundary_kind"] = "declaration"
                text = text.rstrip() + ("" if text.rstrip().endswith(".") else ".") + boundary.declared_note(b)
        if frame.file != ctx.target_file or frame.line != ctx.target_line:
            tsrc = ctx.source(ctx.target_file)
            if tsrc is not None and not target_error:
                related.append(Related(ctx.target_file, placement.statement_range(tsrc, ctx.target_line), "the export target"))
        return new_diagnostic(ctx, frame.file, rng, code, text, related=related, data=data)
    file, rng = target_anchor(ctx)
    return new_diagnostic(ctx, file, rng, code, text, data=data)


# Internal errors draft export is known to raise where plain export passes (torch 2.13), in a sentence.
_CRASH_FAMILIES = (
    ("PendingUnbackedSymbolNotFound", "draft export lost track of a data-dependent size it created (PendingUnbackedSymbolNotFound), a known draft-export bug"),
    (
        "cannot infer a Fake kernel",
        "draft export tried to make a fake kernel from the real output "
        'and could not ("cannot infer a Fake kernel"), e.g. for an op whose output aliases an input',
    ),
    (
        "SymIntArrayRef expected to contain only concrete integers",
        "draft export ran a real kernel with a symbolic size (seen with torch.cond operands and one-argument torch.where(mask))",
    ),
    (
        "_check_fake_real_tensors",
        "draft export's own comparison of fake and real tensors hit a data-dependent guard (seen when indexing with a value from .item())",
    ),
)


def crash_family(text: str) -> str | None:
    """What kind of draft-export crash `text` (the error's message and frames) is, in a sentence."""
    for needle, sentence in _CRASH_FAMILIES:
        if needle in text:
            return sentence
    return None


def _crash_text(crash: DraftCrash) -> str:
    parts = [crash.get("type", ""), crash.get("message", "")]
    for link in crash.get("chain") or []:
        parts += [link.get("type", ""), link.get("message", "")] + [str(f.get("name")) for f in link.get("frames") or []]
    return "\n".join(parts)


def repro_command(ctx: Context) -> str:
    """A command that runs draft export on this target again, for a PyTorch bug report."""
    path = ctx.target_file.replace("\\", "/")
    if ctx.target.startswith("export at "):
        return f"python -c \"import runpy, torch; torch.export.export = torch.export.draft_export; runpy.run_path('{path}', run_name='__main__')\""
    if ":" in ctx.target and not ctx.target.startswith(("compile", "trace")):
        factory = ctx.target.rsplit(":", 1)[-1]
        get = f"s = runpy.run_path('{path}')['{factory}'](); s = s if isinstance(s, dict) else dict(zip(('model', 'example_args', 'example_kwargs'), s))"
    else:
        get = f"s = runpy.run_path('{path}')"
    return (
        f"python -c \"import runpy, torch; {get}; torch.export.draft_export(s['model'], tuple(s['example_args']), "
        f"s.get('example_kwargs'), dynamic_shapes=s.get('dynamic_shapes'))\""
    )


def draft_crash_diagnostics(ctx: Context, event: TargetEvent) -> list[Diagnostic]:
    """Draft export itself crashed where plain export passes: a hint (likely a PyTorch bug), with draft
    export's raw error and a repro command in `data` and the project's innermost line of the crash related."""
    crash = event["draft_crash"]
    family = crash_family(_crash_text(crash)) or "draft export raised an internal error"
    raw: DraftCrashData = {
        "draft_export_error": {"type": crash.get("type"), "message": str(crash.get("message", ""))[:4000]},
        "crash_family": family,
        "repro": repro_command(ctx),
        "plain_export": crash.get("plain_export", "ok"),
    }
    file, rng = target_anchor(ctx)
    b = ctx.locate([("traceback", link.get("frames")) for link in crash.get("chain") or []])
    related = []
    if b is not None and b.declared and b.inside is not None:  # no line of the project ran: the library's line did
        related.append(boundary.library_related(ctx.source(b.inside.file), b.inside, "draft export crashed here"))
    elif b is not None and (b.frame.file, b.frame.line) != (ctx.target_file, ctx.target_line):
        src = ctx.source(b.frame.file)
        where = placement.frame_range(src, b.frame) if src else Range.of(b.frame.line - 1, 0, b.frame.line - 1, 0)
        related.append(Related(b.frame.file, where, "draft export crashed while running this line"))
    msg = (
        f"Draft export crashed on this target, but plain torch.export.export passes with the same arguments: "
        f"the model exports. The crash is most likely a PyTorch bug: {family}. The raw error and a command "
        f"that reproduces it are in the details."
    )
    return [new_diagnostic(ctx, file, rng, "draft-export-crashed", msg, related=related, data=raw)]


def _clean_message(message: str, limit: int = 12) -> str:
    text = _DRAFT_FOOTER.sub("", message).strip()
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    if len(lines) > limit:
        lines = lines[:limit] + ["…"]
    return "\n".join(lines) or "(no message)"


def crash_diagnostic(ctx: Context, status: str, detail: str, stderr: str, *, timeout_knob: str = "the timeout", found: int = 0) -> Diagnostic:
    """The job crashed or ran out of time; `found` problems torch recorded before that are reported too."""
    file, rng = target_anchor(ctx)
    tail = "\n".join(stderr.strip().splitlines()[-8:])
    if status == "timeout":
        kept = f" The {found} problem{'s' if found != 1 else ''} torch recorded before the deadline {'are' if found != 1 else 'is'} reported." if found else ""
        msg = f"The analysis of this target did not finish: {detail}.{kept} Raise {timeout_knob} if the model is just slow."
        code = "worker-timeout"
    else:
        msg = f"The worker process running this target crashed: {detail}."
        code = "worker-crashed"
    if tail:
        msg += f"\nLast output:\n{tail}"
    return new_diagnostic(ctx, file, rng, code, msg, data=CrashData(detail=detail))
