"""A fix as diff rows (old and new line numbers), from its edits and the report's source lines.

The report keeps the lines around each edit (`sources.FIX_CONTEXT`), so the diff is made from
the text the check analysed, not from the file as it is when the page is rendered.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from exportlens.fixes.apply import EditError, apply_edits
from exportlens.fixes.text import line_body, split_lines
from exportlens.model import Fix, Range, TextEdit
from exportlens.report.sources import FIX_CONTEXT, Sources

CONTEXT, REMOVED, ADDED, GAP = "context", "removed", "added", "gap"


@dataclass(frozen=True)
class Row:
    kind: str  # CONTEXT, REMOVED, ADDED, or GAP between two distant changes
    old: int | None  # 1-based line number before the fix
    new: int | None  # and after it
    text: str


@dataclass(frozen=True)
class FileDiff:
    file: str
    cell: int | None
    rows: tuple[Row, ...] | None  # None: the lines are not in the report (the edits are shown as text)
    edits: tuple[TextEdit, ...]


def _rows(old: list[str], new: list[str], first: int) -> list[Row]:
    rows: list[Row] = []
    ops = difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes()
    for n, (tag, i1, i2, j1, j2) in enumerate(ops):
        if tag == "equal":
            keep = list(range(i1, i2))
            if n > 0 and n < len(ops) - 1 and len(keep) > 2 * FIX_CONTEXT:  # between two changes
                head, tail = keep[:FIX_CONTEXT], keep[-FIX_CONTEXT:]
                rows += [Row(CONTEXT, first + i + 1, first + j1 + (i - i1) + 1, old[i]) for i in head]
                rows.append(Row(GAP, None, None, ""))
                rows += [Row(CONTEXT, first + i + 1, first + j1 + (i - i1) + 1, old[i]) for i in tail]
            else:
                if n == 0:
                    keep = keep[-FIX_CONTEXT:]
                elif n == len(ops) - 1:
                    keep = keep[:FIX_CONTEXT]
                rows += [Row(CONTEXT, first + i + 1, first + j1 + (i - i1) + 1, old[i]) for i in keep]
            continue
        rows += [Row(REMOVED, first + i + 1, None, old[i]) for i in range(i1, i2)]
        rows += [Row(ADDED, None, first + j + 1, new[j]) for j in range(j1, j2)]
    return rows


def file_diffs(fix: Fix, sources: Sources | None) -> list[FileDiff]:
    """One diff per file (or notebook cell) the fix edits."""
    groups: dict[tuple[str, int | None], list[TextEdit]] = {}
    for e in fix.edits:
        groups.setdefault((e.file, e.cell), []).append(e)
    out = []
    for (file, cell), edits in groups.items():
        first = max(0, min(e.range.start.line for e in edits) - FIX_CONTEXT)
        last = max(e.range.end.line for e in edits) + FIX_CONTEXT
        count = sources.count(file, cell) if sources is not None else None
        if count is not None:
            last = min(last, count - 1)
        window = sources.window(file, cell, first, last) if sources is not None and count is not None else None
        if window is None:
            out.append(FileDiff(file, cell, None, tuple(edits)))
            continue
        old_text = "".join(line + "\n" for line in window)
        moved = [
            TextEdit(e.file, Range.of(e.range.start.line - first, e.range.start.character, e.range.end.line - first, e.range.end.character), e.new_text)
            for e in edits
        ]
        try:
            new_text = apply_edits(old_text, moved)
        except EditError:
            out.append(FileDiff(file, cell, None, tuple(edits)))
            continue
        new = [line_body(t) for t in split_lines(new_text)]
        out.append(FileDiff(file, cell, tuple(_rows(window, new, first)), tuple(edits)))
    return out
