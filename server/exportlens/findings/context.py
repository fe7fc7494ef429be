"""What every finding builder shares: the target's context, and where a diagnostic goes."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from exportlens import codes
from exportlens.findings import boundary, placement
from exportlens.findings.placement import Frame, SourceLoader
from exportlens.model import Diagnostic, Range, Related
from exportlens.project import is_user_file
from exportlens.protocol import CodeLocation, LibraryFacts
from exportlens.source import Source


@dataclass
class Context:
    """What a target's findings need: the project, a way to read files, where the target is."""

    root: str
    load: SourceLoader
    target: str
    target_file: str
    target_line: int
    # where a module-level or factory target builds its model (`targets.Declared`): the boundary of a
    # problem whose stack has no line of the project (a library model)
    declared: Frame | None = None

    def source(self, path: str) -> Source | None:
        return self.load(path)

    def locate(self, stacks: Iterable[tuple[str, Sequence[Mapping[str, Any]] | None]]) -> boundary.Boundary | None:
        """The boundary of a problem: the project's innermost line on its stacks, else the target's declaration."""
        return boundary.locate(stacks, self.root, self.declared)


def new_diagnostic(
    ctx: Context,
    file: str,
    rng: Range,
    code: str,
    message: str,
    *,
    related: list[Related] | None = None,
    data: Mapping[str, Any] | None = None,
    severity: int | None = None,
) -> Diagnostic:
    """A diagnostic of this target; its default severity is the code's own, from `codes`.

    `data` is of the type its code's record names (`codes.py`); the diagnostic keeps that very dict.
    """
    return codes.new(code, file, rng, message, ctx.target, severity=severity or None, related=related, data=data)


def base(path: str) -> str:
    return os.path.basename(path)


def outer_related(ctx: Context, frames: list[Frame], what: str, inner: Frame | None = None) -> list[Related]:
    """The outer user frames, innermost first, each narrowed to the call of the next frame in."""
    out = []
    callee = inner.name if inner is not None else ""
    for fr in reversed(frames):
        src = ctx.source(fr.file)
        if src is not None:
            rng = placement.call_range(src, fr.line, callee) if callee else placement.statement_range(src, fr.line)
            out.append(Related(fr.file, rng, f"{what} from here ({fr.name or 'module'})"))
        callee = fr.name
    return out


def target_anchor(ctx: Context) -> tuple[str, Range]:
    src = ctx.source(ctx.target_file)
    if src is None:
        line = max(0, ctx.target_line - 1)
        return ctx.target_file, Range.of(line, 0, line, 0)
    return ctx.target_file, placement.statement_range(src, ctx.target_line)


def is_user(ctx: Context, path: str | None) -> bool:
    return bool(path) and is_user_file(path, ctx.root) and ctx.source(str(path)) is not None


def frame_range(ctx: Context, frame: Frame) -> Range:
    src = ctx.source(frame.file)
    if src is None:
        return Range.of(frame.line - 1, 0, frame.line - 1, 0)
    return placement.frame_range(src, frame)


def site_related(ctx: Context, what: str) -> list[Related]:
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


def def_anchor(ctx: Context, code: CodeLocation | None) -> tuple[str, Range] | None:
    """The name in the `def` of a compiled function (`co_firstlineno` may be its decorator)."""
    if not code or not is_user(ctx, code.get("file")):
        return None
    src = ctx.source(code["file"])
    assert src is not None
    return code["file"], placement.definition_range(src, int(code.get("line") or 1))


def frame_name(frame: Frame) -> str:
    return "module" if frame.name in ("", "<module>") else frame.name


def library_place(ctx: Context, b: boundary.Boundary, what: str = "it happens here") -> tuple[Range, list[Related], LibraryFacts]:
    """Range on the project's call into the library, the library line as related (saying `what` it is), the chain as data."""
    lib = b.inside
    assert lib is not None
    src = ctx.source(b.frame.file)
    if src is None:
        rng = Range.of(b.frame.line - 1, 0, b.frame.line - 1, 0)
    elif b.declared:  # no line of the project on the stack: the expression that builds the target's model
        rng = placement.frame_range(src, b.frame)
    else:  # the call of the library's function, else Python's columns of the call, else the statement
        named = placement.named_call_range(src, b.frame.line, b.library[0].name)
        if named is not None:
            rng = named
        elif b.frame.col is not None:
            rng = placement.frame_range(src, b.frame)
        else:
            rng = placement.call_range(src, b.frame.line, b.library[0].name)
    related = [boundary.library_related(ctx.source(lib.file), lib, what)]
    if len(b.library) > 2:  # the same library line reached two ways is two problems: say which way
        caller = b.library[-2]
        related.append(boundary.library_related(ctx.source(caller.file), caller, "reached from here"))
    if len(b.library) > 1:
        entry = b.library[0]
        related.append(boundary.library_related(ctx.source(entry.file), entry, "the library is entered here"))
    related += outer_related(ctx, b.outer, "called", b.frame)
    data: LibraryFacts = {
        "library": lib.package,
        "library_frame": lib.to_json(),
        "library_chain": b.chain(ctx.source(b.frame.file)),
        "boundary": {"file": b.frame.file, "line": b.frame.line},
        "stack_source": b.source,
        "user_line": b.frame.line,
    }
    if b.declared:
        data["boundary_kind"] = "declaration"
    return rng, related, data
