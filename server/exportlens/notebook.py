"""Jupyter notebooks as one script, and positions back from that script to (cell, line, column).

Why: the worker runs Python. A notebook's code cells are joined into one script, in order, with
cell magics (`%%...` cells) turned into comments and `!`/`%` lines into `pass`, so every cell
keeps its line count and every kept line its columns; only the cells up to and including the
last target's run (later cells often train or plot). Cell indices count ALL cells, markdown
included, 0-based, as nbformat and VS Code do. `Cells` is the notebook's `document.Mapper`: the
script runs from memory under a name beside the notebook and is never written. Standard library only.
"""

from __future__ import annotations

import ast
import bisect
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from exportlens.model import Diagnostic, Fix, Position, Range, Related, TargetResult, TextEdit, place

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


def script_path(path: str) -> str:
    """The name a notebook's joined cells run under: beside the notebook (so its imports resolve),
    hidden. Nothing is ever written there: the worker serves the text from memory."""
    folder, name = os.path.split(os.path.abspath(path))
    return os.path.join(folder, f".{name}.exportlens.py")


@dataclass(frozen=True)
class Cells:
    """A notebook run as its code cells joined into one script: script positions → (cell, position
    in it), and back (`document.Mapper`)."""

    path: str  # the notebook
    script: str  # the name the joined cells run under (never written)
    cells: tuple[Cell, ...]  # every cell, markdown too
    joined: Script  # the code cells that run
    container: str | None = "notebook"

    @classmethod
    def of(cls, path: str, cells: list[Cell]) -> Cells:
        return cls(path, script_path(path), tuple(cells), join(cells))

    def place(self, file: str, rng: Range) -> tuple[str, Range, int | None]:
        if file != self.script:
            return file, rng, None
        start = self.joined.to_cell(rng.start.line)
        if start is None:  # past the cells that ran: the last one's start
            cell = self.joined.cells[-1] if self.joined.cells else 0
            return self.path, Range.of(0, 0, 0, 0), cell
        end = self.joined.to_cell(rng.end.line)
        if end is None or end[0] != start[0]:  # a range never spans cells: cut it at its first line's end
            end_pos = Position(start[1], rng.start.character + 1 if end is None or end[0] != start[0] else rng.end.character)
        else:
            end_pos = Position(end[1], rng.end.character)
        return self.path, Range(Position(start[1], rng.start.character), end_pos), start[0]

    def text(self, s: str) -> str:
        base, name = re.escape(os.path.basename(self.script)), os.path.basename(self.path)

        def at(m: re.Match[str]) -> str:
            where = self.joined.to_cell(int(m.group(1)) - 1)
            return f"{name}:cell {where[0]}:{where[1] + 1}" if where else name

        return re.sub(base, name, re.sub(base + r":(\d+)", at, s))

    def related(self, r: Related) -> Related:
        file, rng, cell = self.place(r.file, r.range)
        return Related(file, rng, self.text(r.message), cell)

    def fix(self, f: Fix) -> Fix | None:
        """The fix with its script edits in cell coordinates; None when an edit is not inside one cell."""
        edits = []
        for e in f.edits:
            if e.file == self.path:
                return None  # an edit of the .ipynb file's JSON text: never
            if e.file != self.script:
                edits.append(e)
                continue
            start, end = self.joined.to_cell(e.range.start.line), self.joined.to_cell(e.range.end.line)
            if start is None or end is None or start[0] != end[0]:
                return None
            rng = Range(Position(start[1], e.range.start.character), Position(end[1], e.range.end.character))
            edits.append(TextEdit(self.path, rng, e.new_text, start[0]))
        return Fix(self.text(f.title), tuple(edits), f.is_preferred, f.assumes, f.verification)

    def diagnostic(self, d: Diagnostic) -> Diagnostic:
        file, rng, cell = self.place(d.file, d.range)
        related = [self.related(r) for r in d.related]
        fixes = [m for f in d.fixes if (m := self.fix(f)) is not None]
        return replace(d, file=file, range=rng, message=self.text(d.message), target=self.text(d.target), related=related, fixes=fixes, cell=cell)

    def target(self, t: TargetResult) -> TargetResult:
        if t.file != self.script:
            return TargetResult(self.text(t.name), t.file, t.line, t.kind, t.status, t.seconds)
        where = self.joined.to_cell(t.line - 1)
        cell, line = where if where is not None else (self.joined.cells[0] if self.joined.cells else 0, 0)
        return TargetResult(self.text(t.name), self.path, line + 1, t.kind, t.status, t.seconds, cell)

    def texts(self, ran: dict[str, str]) -> dict[str, str]:
        """Each cell that ran by its place (its source, as the editor has it), the other files as they ran."""
        out = {file: text for file, text in ran.items() if file != self.script}
        return out | {place(self.path, c.index): c.source for c in self.cells if c.index in self.joined.cells}

    def unmap(self, d: Diagnostic) -> Diagnostic | None:
        if d.file != self.path:
            return d
        if d.cell is None:
            return None  # the notebook as a whole (it could not be read): nothing in the script
        start = self.joined.to_script(d.cell, d.range.start.line)
        end = self.joined.to_script(d.cell, d.range.end.line)
        if start is None or end is None:
            return None
        rng = Range(Position(start, d.range.start.character), Position(end, d.range.end.character))
        return replace(d, file=self.script, range=rng, related=[], fixes=[], cell=None)

    def upto(self, text: str, line: int) -> tuple[str, Cells]:
        """Only the cells up to the one holding script line `line` (later cells often train or plot)."""
        where = self.joined.to_cell(line - 1)
        if where is None:
            return text, self
        cut = self.joined.cut_after(where[0])
        return cut.text, replace(self, joined=cut)

    def edited(self, text: str, edits: Sequence[TextEdit]) -> tuple[str, Cells]:
        """The cells with `edits` (cell coordinates) applied, joined again as far as before."""
        from exportlens.fixes.apply import EditError, apply_edits

        by_cell: dict[int, list[TextEdit]] = {}
        for e in edits:
            if e.file != self.path or e.cell is None or e.cell not in self.joined.cells:
                raise EditError(f"not an edit of a code cell of {os.path.basename(self.path)} that runs")
            by_cell.setdefault(e.cell, []).append(e)
        cells = [Cell(c.index, c.kind, apply_edits(c.source, by_cell[c.index])) if c.index in by_cell else c for c in self.cells]
        joined = join(cells)
        if self.joined.cells:
            joined = joined.cut_after(self.joined.cells[-1])
        try:
            ast.parse(joined.text)
        except SyntaxError as exc:
            raise EditError(f"edited cells do not parse: {exc.msg}") from exc
        return joined.text, Cells(self.path, self.script, tuple(cells), joined)
