"""Exceptions and crashes: what draft export, the user's code or the worker process raised."""

from __future__ import annotations

import re
from typing import Any

from exportlens.findings import placement
from exportlens.findings.context import Context, new_diagnostic, outer_related, target_anchor
from exportlens.findings.placement import Frame
from exportlens.model import Diagnostic, Range, Related
from exportlens.project import is_user_file

_FILE_LINE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')

_DRAFT_FOOTER = re.compile(r"\n\s*(The error above occurred when calling torch\.export\.export|"
                           r"If you would like to view|For more information about this error|"
                           r"To execute this test, run|from user code:).*", re.S)

def exception_diagnostic(ctx: Context, exc: dict[str, Any], *, target_error: str | None = None) -> Diagnostic:
    """An exception raised by draft_export, by the user's code, or while building the target."""
    chain = exc.get("chain") or []
    syntax = exc.get("syntax")
    if syntax and syntax.get("file") and syntax.get("line") and is_user_file(syntax["file"], ctx.root):
        src = ctx.source(syntax["file"])
        if src is not None:
            line = int(syntax["line"])
            col = max(0, int(syntax.get("col") or 1) - 1)
            text = src.line(line)
            start = src.position(line, len(text[:col].encode()))
            rng = Range(start, src.line_range(line).end if start < src.line_range(line).end else start)
            return new_diagnostic(ctx, syntax["file"], rng, "syntax-error", f"SyntaxError: {syntax.get('msg')}",
                         data={"exception_type": "SyntaxError"})
    frames: list[Frame] = []
    for link in chain:
        frames = placement.user_frames(link.get("frames") or [], ctx.root)
        if frames:
            break
    if not frames:  # torch sometimes names the user's line only in its message
        for m in _FILE_LINE.finditer(exc.get("message", "")):
            if is_user_file(m["file"], ctx.root):
                frames = [Frame(m["file"], int(m["line"]))]
    message = _clean_message(exc.get("message", ""))
    kind = exc.get("type", "Exception")
    code = "target-error" if target_error else "export-error"
    if kind.endswith("SystemExit"):
        text = f"{target_error or 'The script exited'}."
    elif target_error:
        text = f"{target_error[0].upper() + target_error[1:]}: {kind}: {message}"
    else:
        text = f"torch.export failed: {kind}: {message}"
    data = {"exception_type": kind, "exception_message": exc.get("message", "")[:4000]}
    if frames:
        frame = frames[-1]
        src = ctx.source(frame.file)
        rng = placement.frame_range(src, frame) if src else Range.of(frame.line - 1, 0, frame.line - 1, 0)
        related = outer_related(ctx, frames[:-1], "called", frame)
        if frame.file != ctx.target_file or frame.line != ctx.target_line:
            tsrc = ctx.source(ctx.target_file)
            if tsrc is not None and not target_error:
                related.append(Related(ctx.target_file, placement.statement_range(tsrc, ctx.target_line), "the export target"))
        return new_diagnostic(ctx, frame.file, rng, code, text, related=related, data=data)
    file, rng = target_anchor(ctx)
    return new_diagnostic(ctx, file, rng, code, text, data=data)

def _clean_message(message: str, limit: int = 12) -> str:
    text = _DRAFT_FOOTER.sub("", message).strip()
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    if len(lines) > limit:
        lines = lines[:limit] + ["…"]
    return "\n".join(lines) or "(no message)"

def crash_diagnostic(ctx: Context, status: str, detail: str, stderr: str) -> Diagnostic:
    file, rng = target_anchor(ctx)
    tail = "\n".join(stderr.strip().splitlines()[-8:])
    if status == "timeout":
        msg = f"The analysis of this target did not finish: {detail}. Raise exportlens.timeoutSeconds if the model is just slow."
        code = "worker-timeout"
    else:
        msg = f"The worker process running this target crashed: {detail}."
        code = "worker-crashed"
    if tail:
        msg += f"\nLast output:\n{tail}"
    return new_diagnostic(ctx, file, rng, code, msg, data={"detail": detail})
