"""Jupyter notebooks as one script, and positions back from that script to (cell, line, column).

Why: the worker runs files. A notebook's code cells are joined into one script, in order, with
cell magics (`%%...` cells) turned into comments and `!`/`%` lines into `pass`, so every cell
keeps its line count and every kept line its columns; only the cells up to and including the
last target's run (later cells often train or plot). Cell indices count ALL cells, markdown
included, 0-based, as nbformat and VS Code do. Standard library only (json).
"""

from __future__ import annotations

import bisect
import itertools
import json
import os
import re
from dataclasses import dataclass, field

from exportlens.model import Diagnostic, Fix, Position, Range, Related, TargetResult, TextEdit

SUFFIX = ".ipynb"


class NotebookError(Exception):
    """The file is not a notebook ExportLens can read."""


@dataclass(frozen=True)
class Cell:
    index: int  # over all cells
    kind: str  # "code" | "markdown" | "raw"
    source: str


@dataclass
class Script:
    """The joined code cells: `text`, and where each cell starts in it."""

    text: str
    starts: list[int] = field(default_factory=list)  # script line (0-based) where each included code cell starts
    cells: list[int] = field(default_factory=list)  # the cell index of each included code cell
    sizes: list[int] = field(default_factory=list)  # the line count of each included code cell

    def to_cell(self, line: int) -> tuple[int, int] | None:
        """Script line (0-based) → (cell index, line in the cell), None past the end."""
        i = bisect.bisect_right(self.starts, line) - 1
        if i < 0 or line - self.starts[i] >= self.sizes[i]:
            return None
        return self.cells[i], line - self.starts[i]

    def to_script(self, cell: int, line: int) -> int | None:
        """(cell index, line in the cell) → script line, None for a cell not in the script."""
        if cell not in self.cells:
            return None
        i = self.cells.index(cell)
        return self.starts[i] + line if 0 <= line < self.sizes[i] else None

    def cut_after(self, cell: int) -> Script:
        """The script up to and including `cell`."""
        keep = [i for i, c in enumerate(self.cells) if c <= cell]
        if not keep:
            return Script("", [], [], [])
        end = self.starts[keep[-1]] + self.sizes[keep[-1]]
        lines = self.text.splitlines(keepends=True)[:end]
        return Script("".join(lines), self.starts[: len(keep)], self.cells[: len(keep)], self.sizes[: len(keep)])


def _text(source: object) -> str:
    if isinstance(source, list):
        return "".join(str(s) for s in source)
    return source if isinstance(source, str) else ""


def parse(raw: str) -> list[Cell]:
    """The cells of a notebook's JSON text (nbformat 4; 3's worksheets too)."""
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"the notebook is not valid JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise NotebookError("the notebook is not a JSON object")
    cells = doc.get("cells")
    if cells is None and isinstance(doc.get("worksheets"), list) and doc["worksheets"]:
        cells = doc["worksheets"][0].get("cells")
    if not isinstance(cells, list):
        raise NotebookError("the notebook has no list of cells")
    out = []
    for i, cell in enumerate(cells):
        cell = cell if isinstance(cell, dict) else {}
        out.append(Cell(i, str(cell.get("cell_type", "raw")), _text(cell.get("source", cell.get("input", "")))))
    return out


def read(path: str) -> list[Cell]:
    try:
        with open(path, encoding="utf-8") as fh:
            return parse(fh.read())
    except (OSError, UnicodeDecodeError) as exc:
        raise NotebookError(f"cannot read the notebook: {exc}") from exc


_MAGIC_LINE = re.compile(r"^(\s*)([!%].*)$")


def neutralise(source: str) -> str:
    """A code cell as plain Python: a `%%` cell becomes comments, `!`/`%` lines become `pass`."""
    lines = source.splitlines()
    if lines and lines[0].lstrip().startswith("%%"):
        return "".join(f"# {line}\n" for line in lines)
    out = []
    for line in lines:
        m = _MAGIC_LINE.match(line)
        out.append(f"{m.group(1)}pass  # {m.group(2)}\n" if m else line + "\n")
    return "".join(out)


def join(cells: list[Cell]) -> Script:
    """Every code cell, in order, as one script."""
    script = Script("")
    parts: list[str] = []
    line = 0
    for cell in cells:
        if cell.kind != "code":
            continue
        text = neutralise(cell.source)
        size = text.count("\n")
        script.starts.append(line)
        script.cells.append(cell.index)
        script.sizes.append(size)
        parts.append(text)
        line += size
    script.text = "".join(parts)
    return script


def raw_position(raw: str, cell: int, line: int, character: int) -> tuple[int, int] | None:
    """Where (cell, line, UTF-16 character) sits in the notebook FILE, 0-based: for SARIF regions.

    Works for notebooks written as nbformat writes them (one source line per JSON string line);
    None otherwise (the caller then falls back to the cell's own positions).
    """
    try:
        doc = json.loads(raw)
        source = doc["cells"][cell]["source"]
    except (json.JSONDecodeError, KeyError, IndexError, TypeError):
        return None
    if not isinstance(source, list) or line >= len(source):
        return None
    file_lines = raw.splitlines()
    seen = -1
    for n, text in enumerate(file_lines):
        if text.strip().startswith('"cells"'):
            seen = n
            break
    # walk the "source" arrays in order: the cell-th one is ours
    found = 0
    for n in range(seen + 1, len(file_lines)):
        if file_lines[n].strip().startswith('"source": ['):
            if found == cell:
                target = n + 1 + line
                if target >= len(file_lines):
                    return None
                text = file_lines[target]
                quote = text.find('"')
                wanted = str(source[line])
                if quote < 0 or not text[quote:].rstrip(",").startswith(json.dumps(wanted, ensure_ascii=False)[:-1]):
                    return None
                prefix = wanted.encode("utf-16-le")[: character * 2].decode("utf-16-le", "ignore")
                escaped = json.dumps(prefix, ensure_ascii=False)[1:-1]
                return target, len(text[: quote + 1].encode("utf-16-le")) // 2 + len(escaped.encode("utf-16-le")) // 2
            found += 1
        elif file_lines[n].strip().startswith('"source": "') or file_lines[n].strip() == '"source": [],':
            found += 1
    return None


# -- from the script back to the notebook -------------------------------------------------------

_SHADOWS = itertools.count(1)


def shadow_path(path: str) -> str:
    """The script file a notebook's run uses: hidden, beside the notebook (so its imports resolve), unique per run."""
    folder, name = os.path.split(os.path.abspath(path))
    return os.path.join(folder, f".{name}.{os.getpid()}-{next(_SHADOWS)}.exportlens.py")


@dataclass
class Mapper:
    """Positions, names and messages of a shadow-script run, as the notebook's."""

    path: str  # the notebook
    shadow: str  # the script file that ran
    script: Script

    def place(self, file: str, rng: Range) -> tuple[str, Range, int | None]:
        if file != self.shadow:
            return file, rng, None
        start = self.script.to_cell(rng.start.line)
        if start is None:  # past the cells that ran: the last one's start
            cell = self.script.cells[-1] if self.script.cells else 0
            return self.path, Range.of(0, 0, 0, 0), cell
        end = self.script.to_cell(rng.end.line)
        if end is None or end[0] != start[0]:  # a range never spans cells: cut it at its first line's end
            end_pos = Position(start[1], rng.start.character + 1 if end is None or end[0] != start[0] else rng.end.character)
        else:
            end_pos = Position(end[1], rng.end.character)
        return self.path, Range(Position(start[1], rng.start.character), end_pos), start[0]

    def text(self, s: str) -> str:
        base, name = re.escape(os.path.basename(self.shadow)), os.path.basename(self.path)

        def at(m: re.Match[str]) -> str:
            where = self.script.to_cell(int(m.group(1)) - 1)
            return f"{name}:cell {where[0]}:{where[1] + 1}" if where else name

        return re.sub(base, name, re.sub(base + r":(\d+)", at, s))

    def related(self, r: Related) -> Related:
        file, rng, cell = self.place(r.file, r.range)
        return Related(file, rng, self.text(r.message), cell)

    def fix(self, f: Fix) -> Fix | None:
        """The fix with its script edits in cell coordinates; None when an edit is not inside one cell."""
        edits = []
        for e in f.edits:
            if e.file != self.shadow:
                edits.append(e)
                continue
            start, end = self.script.to_cell(e.range.start.line), self.script.to_cell(e.range.end.line)
            if start is None or end is None or start[0] != end[0]:
                return None
            rng = Range(Position(start[1], e.range.start.character), Position(end[1], e.range.end.character))
            edits.append(TextEdit(self.path, rng, e.new_text, start[0]))
        return Fix(self.text(f.title), tuple(edits), f.is_preferred)

    def diagnostic(self, d: Diagnostic) -> Diagnostic:
        file, rng, cell = self.place(d.file, d.range)
        if cell is None:
            return Diagnostic(
                d.file, d.range, d.severity, d.code, self.text(d.message), self.text(d.target), [self.related(r) for r in d.related], d.fixes, d.data
            )
        fixes = [m for f in d.fixes if (m := self.fix(f)) is not None]
        data = {**d.data, "script_file": self.shadow, "script_range": d.range.to_json()}
        return Diagnostic(file, rng, d.severity, d.code, self.text(d.message), self.text(d.target), [self.related(r) for r in d.related], fixes, data, cell)

    def target(self, t: TargetResult) -> TargetResult:
        if t.file != self.shadow:
            return TargetResult(self.text(t.name), t.file, t.line, t.kind, t.status, t.seconds)
        where = self.script.to_cell(t.line - 1)
        cell, line = where if where is not None else (self.script.cells[0] if self.script.cells else 0, 0)
        return TargetResult(self.text(t.name), self.path, line + 1, t.kind, t.status, t.seconds, cell)
