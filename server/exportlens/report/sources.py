"""The source lines a report shows, kept in the JSON report itself.

Why in the report: the page is also rendered later (`exportlens report report.json`), often on
another machine than the CI runner that checked the models, where the paths do not exist or the
files have moved on. So the check keeps the lines each finding needs, as they were analysed (the
engine's texts, else the file as it is on disk at the end of the check): the range with a few
lines around it, the library line, the related lines, and the lines around each fix's edits
(what a diff shows). In the JSON: `"sources": [{"file", "cell"?, "count", "lines": {"12": text}}]`
with 1-based line numbers (0-based LSP lines inside this module) and `count` the file's (or
cell's) number of lines. Notebook cells are their own entries, their lines counted in the cell.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from exportlens import notebook
from exportlens.fixes.text import line_body, split_lines
from exportlens.model import Diagnostic, Range, place
from exportlens.source import SourceError, read_source

CONTEXT = 2  # lines shown above and below a finding's range (and the library line)
FIX_CONTEXT = 3  # lines around a fix's edits, as in a unified diff
MAX_SPAN = 12  # lines kept of one long range (a range over a whole function shows its start)
MAX_RELATED = 20  # related locations whose lines are kept, per finding

Key = tuple[str, int | None]  # (file, cell): a cell's lines are counted in the cell


def library_line(d: Diagnostic) -> tuple[str, int] | None:
    """Where the problem happened inside a library (file, 0-based line), from `data`."""
    frame = d.data.get("library_frame")
    if not isinstance(frame, dict) or not frame.get("file") or not isinstance(frame.get("line"), int):
        return None
    return str(frame["file"]), int(frame["line"]) - 1


def library_related(d: Diagnostic) -> Range | None:
    """The range of the library line, from the related location that names it."""
    where = library_line(d)
    if where is None:
        return None
    return next((r.range for r in d.related if r.file == where[0] and r.range.start.line == where[1]), None)


def _span(lines: set[int], rng: Range, context: int) -> None:
    last = min(rng.end.line, rng.start.line + MAX_SPAN - 1)
    lines.update(range(max(0, rng.start.line - context), last + context + 1))


def wanted(diags: Iterable[Diagnostic]) -> dict[Key, set[int]]:
    """The (0-based) lines of each file the page shows for these findings."""
    out: dict[Key, set[int]] = {}
    for d in diags:
        _span(out.setdefault((d.file, d.cell), set()), d.range, CONTEXT)
        lib = library_line(d)
        for r in d.related[:MAX_RELATED]:
            near = CONTEXT if lib is not None and (r.file, r.range.start.line) == lib else 0
            _span(out.setdefault((r.file, r.cell), set()), r.range, near)
        if lib is not None and library_related(d) is None:
            out.setdefault((lib[0], None), set()).update(range(max(0, lib[1] - CONTEXT), lib[1] + CONTEXT + 1))
        for fix in d.fixes:
            for e in fix.edits:
                _span(out.setdefault((e.file, e.cell), set()), e.range, FIX_CONTEXT)
    return out


@dataclass
class Sources:
    """Lines by (file, cell), 0-based, without their line endings."""

    lines: dict[Key, dict[int, str]] = field(default_factory=dict)
    counts: dict[Key, int] = field(default_factory=dict)

    def line(self, file: str, cell: int | None, line: int) -> str | None:
        return self.lines.get((file, cell), {}).get(line)

    def count(self, file: str, cell: int | None) -> int | None:
        return self.counts.get((file, cell))

    def window(self, file: str, cell: int | None, first: int, last: int) -> list[str] | None:
        """Lines first..last (0-based, inclusive), or None when one of them is not known."""
        have = self.lines.get((file, cell), {})
        out = [have.get(i) for i in range(first, last + 1)]
        return None if any(t is None for t in out) else [t for t in out if t is not None]

    def to_json(self) -> list[dict[str, Any]]:
        out = []
        for (file, cell), lines in sorted(self.lines.items(), key=lambda kv: (kv[0][0], -1 if kv[0][1] is None else kv[0][1])):
            entry: dict[str, Any] = {"file": file}
            if cell is not None:
                entry["cell"] = cell
            entry["count"] = self.counts.get((file, cell), 0)
            entry["lines"] = {str(i + 1): lines[i] for i in sorted(lines)}
            out.append(entry)
        return out

    @classmethod
    def from_json(cls, items: Any) -> Sources:
        """The report's `sources`; entries that are not well formed are skipped (the page then says the source is not known)."""
        out = cls()
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict) or not isinstance(item.get("file"), str) or not isinstance(item.get("lines"), dict):
                continue
            cell = item.get("cell") if isinstance(item.get("cell"), int) else None
            key = (item["file"], cell)
            out.lines[key] = {int(k) - 1: str(v) for k, v in item["lines"].items() if str(k).isdigit() and int(k) > 0}
            if isinstance(item.get("count"), int):
                out.counts[key] = item["count"]
        return out


Reader = Callable[[str, int | None], str | None]


def disk_reader(texts: Mapping[str, str] | None = None) -> Reader:
    """Reads a file (its declared encoding) or a notebook's cell; `texts` first (what the engine
    analysed, keyed by `model.place`: a file, or one cell of a notebook)."""
    cells: dict[str, list[notebook.Cell] | None] = {}

    def read(file: str, cell: int | None) -> str | None:
        if texts is not None and place(file, cell) in texts:
            return texts[place(file, cell)]
        if cell is None:
            try:
                return read_source(file).text
            except SourceError:
                return None
        if file not in cells:
            try:
                cells[file] = notebook.read(file)
            except notebook.NotebookError:
                cells[file] = None
        found = cells[file]
        return found[cell].source if found is not None and 0 <= cell < len(found) else None

    return read


def collect(diags: Iterable[Diagnostic], read: Reader) -> Sources:
    """The lines the page needs for `diags`, read once per file."""
    out = Sources()
    for (file, cell), wanted_lines in wanted(diags).items():
        text = read(file, cell)
        if text is None:
            continue
        lines = [line_body(t) for t in split_lines(text)]
        out.counts[(file, cell)] = len(lines)
        out.lines[(file, cell)] = {i: lines[i] for i in sorted(wanted_lines) if i < len(lines)}
    return out
