"""Suppression comments in a file's text, `# exportlens: ignore[code, code]`, and the edits that add or remove them.

A directive is found with `tokenize`, so only real comments count (never text inside strings);
its range is in UTF-16 columns (LSP's). `suppress.py` applies the directives to a run's findings;
this module only reads and edits text: "Ignore this problem on this line" (`ignore_fix`, editors
offer it last) and the removal of an unused one (`remove_unused_fix`). Standard library only.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

from exportlens.model import Diagnostic, Fix, Range, TextEdit
from exportlens.source import Reader, utf16_len

from .common import Offer

DIRECTIVE = re.compile(r"#\s*exportlens:\s*ignore(?:\[(?P<codes>[^\]]*)\])?(?=\s|#|$)")
IGNORE_TITLE = "Ignore this problem on this line"


@dataclass
class Ignore:
    """One directive: its line (0-based), its codes (None: every code) and where it is."""

    line: int
    codes: tuple[str, ...] | None
    range: Range  # the directive's own text, `# exportlens: ignore[...]`
    used: set[str] = field(default_factory=set)  # codes it silenced ("*" for a bare one)


def _comments(text: str) -> list[tuple[int, int, str]]:
    """(0-based line, code-point column, comment text) of every real comment; [] if untokenizable."""
    out: list[tuple[int, int, str]] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                out.append((tok.start[0] - 1, tok.start[1], tok.string))
    except (tokenize.TokenError, SyntaxError, ValueError):
        pass  # the file does not tokenize to the end: the comments seen so far still count
    return out


def directives(text: str) -> dict[int, Ignore]:
    """The ignore directives of a text, by 0-based line."""
    lines = text.splitlines()
    found: dict[int, Ignore] = {}
    for line, col, comment in _comments(text):
        m = DIRECTIVE.search(comment)
        if m is None:
            continue
        raw = m.group("codes")
        codes = tuple(c.strip() for c in raw.split(",") if c.strip()) if raw is not None else None
        before = lines[line][: col + m.start()] if line < len(lines) else ""
        start = utf16_len(before)
        found[line] = Ignore(line, codes or None, Range.of(line, start, line, start + utf16_len(m.group(0))))
    return found


def silences(ignore: Ignore, code: str) -> bool:
    return ignore.codes is None or code in ignore.codes


def _commentable_lines(text: str) -> set[int]:
    """0-based lines whose end is outside any string or line continuation (a comment may go there)."""
    ok: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT):
                ok.add(tok.start[0] - 1)
    except (tokenize.TokenError, SyntaxError, ValueError):
        return set()
    return ok


def ignore_fix(text: str, file: str, line: int, code: str) -> Fix | None:
    """`# exportlens: ignore[code]` at the end of 0-based `line`, keeping any comment already there.

    An existing listed directive gets the code added to its list. None when no comment can go on
    that line (inside a string, after a `\\` continuation) or the text does not tokenize.
    """
    lines = text.splitlines()
    if not 0 <= line < len(lines) or line not in _commentable_lines(text):
        return None
    existing = directives(text).get(line)
    title = f"{IGNORE_TITLE} (adds `# exportlens: ignore[{code}]`; the problem stays, unreported)"
    if existing is not None:
        if existing.codes is None or code in existing.codes:
            return None  # already silenced: nothing to add
        new = f"# exportlens: ignore[{', '.join([*existing.codes, code])}]"
        return Fix(title, (TextEdit(file, existing.range, new),))
    body = lines[line]
    content = body.rstrip()
    start, end = utf16_len(content), utf16_len(body)
    return Fix(title, (TextEdit(file, Range.of(line, start, line, end), f"  # exportlens: ignore[{code}]"),))


def remove_unused_fix(text: str, d: Diagnostic) -> Fix | None:
    """For an `unused-ignore` hint: drop the unused codes, or the whole directive (and the blanks before it)."""
    ignore = directives(text).get(d.range.start.line)
    if ignore is None or ignore.range != d.range:
        return None  # the line changed since the run
    unused = set(d.data.get("unused_codes") or [])
    keep = [c for c in ignore.codes or () if c not in unused]
    if keep:
        return Fix("Remove the unused codes from the ignore", (TextEdit(d.file, ignore.range, f"# exportlens: ignore[{', '.join(keep)}]"),), True)
    body = text.splitlines()[ignore.line]
    units = body.encode("utf-16-le")
    start = ignore.range.start.character
    while start > 0 and units[(start - 1) * 2 : start * 2].decode("utf-16-le") in (" ", "\t"):
        start -= 1
    end = ignore.range.end.character
    if start == 0 and end < len(units) // 2:  # a comment line going on after the directive: keep its indentation
        start = ignore.range.start.character
    return Fix("Remove the unused ignore", (TextEdit(d.file, Range.of(ignore.line, start, ignore.line, end), ""),), True)


# -- the fixer (codes.py names it) --------------------------------------------------------------


def unused_ignore(d: Diagnostic, read: Reader, offer: Offer) -> list[Fix]:
    """unused-ignore: the unused codes (or the whole comment) removed."""
    text = read(d.file)
    removal = remove_unused_fix(text, d) if text is not None else None
    return [removal] if removal is not None else []
