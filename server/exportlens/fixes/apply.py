"""Apply TextEdits to a text, validate the result, and show it as a unified diff.

Used by the fix generators (each fix is applied and re-parsed before it is offered) and by
``exportlens check --fix`` / ``--diff``.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Iterable, Sequence

from exportlens.model import Fix, Position, TextEdit

from .text import split_lines, utf16_to_index


class EditError(ValueError):
    """Edits that cannot be applied: overlapping ranges, or a result that does not parse."""


def _offset(lines: list[str], starts: list[int], pos: Position) -> int:
    """String offset of an LSP position; lines/columns past the end clamp as LSP specifies."""
    if pos.line >= len(lines):
        return starts[-1]
    line = lines[pos.line].rstrip("\r\n")
    return starts[pos.line] + utf16_to_index(line, pos.character)


def apply_edits(text: str, edits: Iterable[TextEdit], *, validate: bool = False) -> str:
    """Apply edits (all for this one text) and return the new text.

    Edits are sorted by start; insertions at the same point keep their given order. Overlapping
    ranges raise EditError. With ``validate`` the result must parse (``ast.parse``).
    """
    lines = split_lines(text)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    spans = []
    for order, e in enumerate(edits):
        a = _offset(lines, starts, e.range.start)
        b = _offset(lines, starts, e.range.end)
        if b < a:
            raise EditError(f"edit range ends before it starts: {e.range}")
        spans.append((a, b, order, e.new_text))
    spans.sort(key=lambda s: (s[0], s[1], s[2]))
    out: list[str] = []
    pos = 0
    for a, b, _, new in spans:
        if a < pos:
            raise EditError("overlapping edits")
        out.append(text[pos:a])
        out.append(new)
        pos = b
    out.append(text[pos:])
    result = "".join(out)
    if validate:
        try:
            ast.parse(result)
        except SyntaxError as exc:
            raise EditError(f"edited text does not parse: {exc.msg} (line {exc.lineno})") from exc
    return result


def apply_fix(texts: dict[str, str], fix: Fix, *, validate: bool = True) -> dict[str, str]:
    """Apply a fix whose edits may touch several files; answers the new text of each file."""
    by_file: dict[str, list[TextEdit]] = {}
    for e in fix.edits:
        by_file.setdefault(e.file, []).append(e)
    out = {}
    for file, edits in by_file.items():
        if file not in texts:
            raise EditError(f"no text for {file}")
        out[file] = apply_edits(texts[file], edits, validate=validate)
    return out


def unified_diff(old: str, new: str, path: str, *, context: int = 3) -> str:
    """A ``diff -u`` style patch of one file (``a/path`` → ``b/path``); '' when nothing changed."""
    if old == new:
        return ""
    a = split_lines(old)
    b = split_lines(new)

    # difflib wants every line terminated; mark a missing final newline like diff does.
    def norm(ls: Sequence[str]) -> list[str]:
        res = list(ls)
        if res and not res[-1].endswith(("\n", "\r")):
            res[-1] = res[-1] + "\n\\ No newline at end of file\n"
        return res

    return "".join(difflib.unified_diff(norm(a), norm(b), f"a/{path}", f"b/{path}", n=context))
