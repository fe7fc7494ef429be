"""What the engine checks: one document, the same way for a .py file and a Jupyter notebook.

A `Document` is the file the user has (`path`), the Python text that runs for it (`text`) and a
`Mapper` from positions in that text to positions in the file. A .py file runs as itself (`Same`:
every position is its own); a notebook runs as its code cells joined into one script
(`notebook.Cells`: script line → (cell, line in it)). The text runs from memory through the
worker's overlay, under the mapper's `script` name: the file itself, or a name beside the
notebook that is never written (so the notebook's imports resolve as they would beside it).

The engine plans, runs and places in the runnable text; the mapper turns the results, and every
fix computed for them later, into the document's positions; `unmap` turns a diagnostic back so a
fixer sees the text that ran. Which mapper a file gets is decided once, in `load`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from exportlens import notebook
from exportlens.model import Diagnostic, Fix, TargetResult, TextEdit
from exportlens.source import Reader

PYTHON_SUFFIXES = (".py", ".pyw")  # Python files: each runs as itself
SUFFIXES = (*PYTHON_SUFFIXES, notebook.SUFFIX)  # the files ExportLens checks as documents (the one list)


class Mapper(Protocol):
    """Positions of a document's runnable text → the document's own, and back."""

    @property
    def script(self) -> str:
        """The name the runnable text runs under (the file itself for a .py file)."""
        ...

    @property
    def container(self) -> str | None:
        """What a part of this document is called when positions are in parts of it ("notebook"), None when they are the file's own."""
        ...

    def diagnostic(self, d: Diagnostic) -> Diagnostic: ...

    def target(self, t: TargetResult) -> TargetResult: ...

    def fix(self, f: Fix) -> Fix | None:
        """The fix in the document's positions; None when it cannot be expressed there."""
        ...

    def text(self, s: str) -> str:
        """A message or a target name as the document's (the script's name and lines replaced)."""
        ...

    def texts(self, ran: dict[str, str]) -> dict[str, str]:
        """The texts a run placed its findings on (file → text), keyed by `model.place`."""
        ...

    def unmap(self, d: Diagnostic) -> Diagnostic | None:
        """A diagnostic of this document back in the runnable text (None: not in it)."""
        ...

    def upto(self, text: str, line: int) -> tuple[str, Mapper]:
        """The runnable text (and its mapper) that stops where line `line` (1-based) belongs."""
        ...

    def edited(self, text: str, edits: Sequence[TextEdit]) -> tuple[str, Mapper]:
        """The runnable text and mapper after `edits` (in the document's positions); raises EditError."""
        ...


@dataclass(frozen=True)
class Same:
    """A .py file: it runs as itself, under its own name, and every position is its own."""

    script: str
    container: str | None = None

    def diagnostic(self, d: Diagnostic) -> Diagnostic:
        return d

    def target(self, t: TargetResult) -> TargetResult:
        return t

    def fix(self, f: Fix) -> Fix | None:
        return f

    def text(self, s: str) -> str:
        return s

    def texts(self, ran: dict[str, str]) -> dict[str, str]:
        return dict(ran)

    def unmap(self, d: Diagnostic) -> Diagnostic | None:
        return d

    def upto(self, text: str, line: int) -> tuple[str, Mapper]:
        return text, self

    def edited(self, text: str, edits: Sequence[TextEdit]) -> tuple[str, Mapper]:
        from exportlens.fixes.apply import apply_edits

        return apply_edits(text, edits, validate=True), self


@dataclass(frozen=True)
class Document:
    """A file to check: its path, the Python text that runs for it, and where that text's positions are in the file."""

    path: str
    text: str | None  # None: a .py file's text on disk, read once when it is planned
    mapper: Mapper
    unreadable: str | None = None  # why the file is not a document ExportLens can run (a broken notebook)
    fixed: bool = False  # a fix applied in memory (`edited`, fix verification): never kept as the file's last run

    @property
    def script(self) -> str:
        return self.mapper.script

    def reader(self, read: Reader) -> Reader:
        """`read`, except that the runnable text answers for its own name where that name is not a
        file (a notebook's script exists only in memory)."""
        if self.script == self.path or self.text is None:
            return read
        text, script = self.text, self.script
        return lambda path: text if path == script else read(path)

    def upto(self, text: str, line: int) -> Document:
        """This document running `text` only as far as line `line` needs (a notebook: that line's cell)."""
        ran, mapper = self.mapper.upto(text, line)
        return Document(self.path, ran, mapper, fixed=self.fixed)

    def edited(self, edits: Sequence[TextEdit], read: Reader) -> Document:
        """This document with `edits` (in its own positions) applied; raises EditError."""
        from exportlens.fixes.apply import EditError

        text = self.text if self.text is not None else read(self.path)
        if text is None:
            raise EditError(f"cannot read {os.path.basename(self.path)}")
        new, mapper = self.mapper.edited(text, edits)
        return Document(self.path, new, mapper, fixed=True)


def load(path: str, text: str | None = None) -> Document:
    """The document of a file: a notebook's code cells (`text`: its JSON, else the file's), any other
    file as itself (`text`: an editor's buffer, else the disk's, read when planned). Never raises."""
    path = os.path.abspath(path)
    if not path.endswith(notebook.SUFFIX):
        return Document(path, text, Same(path))
    try:
        cells = notebook.parse(text) if text is not None else notebook.read(path)
    except notebook.NotebookError as exc:
        return Document(path, None, Same(path), unreadable=str(exc))
    mapper = notebook.Cells.of(path, cells)
    return Document(path, mapper.joined.text, mapper)
