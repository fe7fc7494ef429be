"""Reading user source the way Python does, and LSP positions over it.

Python reads source as bytes with an optional coding cookie; LSP counts characters in UTF-16
code units; `ast` counts columns in UTF-8 bytes. Every conversion between them lives here.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from exportlens.model import Position, Range


@dataclass
class Source:
    """The text of one file, split into lines (with their endings kept)."""

    path: str
    text: str

    @cached_property
    def lines(self) -> list[str]:
        return self.text.splitlines(keepends=True) or [""]

    def line(self, lineno: int) -> str:
        """1-based line, without its ending ('' when out of range)."""
        if 1 <= lineno <= len(self.lines):
            return self.lines[lineno - 1].rstrip("\r\n")
        return ""

    @cached_property
    def tree(self) -> ast.Module | None:
        try:
            return ast.parse(self.text, filename=self.path)
        except (SyntaxError, ValueError):
            return None

    def position(self, lineno: int, byte_col: int) -> Position:
        """An `ast` position (1-based line, UTF-8 byte column) as an LSP position."""
        text = self.line(lineno)
        prefix = text.encode("utf-8")[: max(0, byte_col)].decode("utf-8", "ignore")
        return Position(max(0, lineno - 1), utf16_len(prefix))

    def node_range(self, node: ast.AST) -> Range:
        start = self.position(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end_line = getattr(node, "end_lineno", None) or node.lineno  # type: ignore[attr-defined]
        end_col = getattr(node, "end_col_offset", None)
        if end_col is None:
            end_col = len(self.line(end_line).encode("utf-8"))
        return Range(start, self.position(end_line, end_col))

    def text_of(self, rng: Range) -> str:
        """The text a range covers (positions in UTF-16 units)."""
        out = []
        for line in range(rng.start.line, rng.end.line + 1):
            text = self.line(line + 1)
            units = text.encode("utf-16-le")
            start = rng.start.character if line == rng.start.line else 0
            end = rng.end.character if line == rng.end.line else len(units) // 2
            out.append(units[start * 2 : end * 2].decode("utf-16-le", "ignore"))
        return "\n".join(out)

    def line_range(self, lineno: int) -> Range:
        """The line without its indentation and trailing blanks (the fallback range)."""
        text = self.line(lineno)
        stripped = text.strip()
        if not stripped:
            return Range(Position(max(0, lineno - 1), 0), Position(max(0, lineno - 1), utf16_len(text)))
        start = utf16_len(text[: len(text) - len(text.lstrip())])
        return Range(Position(lineno - 1, start), Position(lineno - 1, start + utf16_len(stripped)))


def utf16_len(text: str) -> int:
    """Length of `text` in UTF-16 code units (what LSP counts)."""
    return len(text.encode("utf-16-le")) // 2


class SourceError(Exception):
    """The file cannot be read as Python source; `line`/`col` point at the culprit (1-based)."""

    def __init__(self, message: str, line: int = 1, col: int = 0) -> None:
        super().__init__(message)
        self.line = line
        self.col = col


def read_source(path: str) -> Source:
    """Decode a file as Python would (coding cookie, BOM, else UTF-8), or raise SourceError."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise SourceError(f"cannot read the file: {exc.strerror or exc}") from exc
    return decode_source(path, data)


Reader = Callable[[str], "str | None"]
"""A file's current text by path (an editor's buffer, a text in memory, else the disk), None if unreadable."""


def read_disk(path: str) -> str | None:
    """The file's text as Python would read it, None when it cannot be read."""
    try:
        return read_source(path).text
    except SourceError:
        return None


def write_source(path: str, text: str) -> None:
    """Write `text` back in the file's own encoding (coding cookie or BOM kept), newlines as given."""
    try:
        with open(path, "rb") as fh:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(fh.read()).readline)
    except (OSError, SyntaxError):
        encoding = "utf-8"
    with open(path, "wb") as fh:
        fh.write(text.encode(encoding))


def refuse_binary(data: bytes | str) -> None:
    """A NUL anywhere: Python refuses the file too; say what it is, not what the tokenizer tripped on."""
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    nul = raw.find(b"\0")
    if nul >= 0:
        line = raw[:nul].count(b"\n") + 1
        raise SourceError(f"this is not Python source: the file holds binary data (a NUL byte at line {line})", line)


def decode_source(path: str, data: bytes) -> Source:
    refuse_binary(data)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        why = exc.msg if hasattr(exc, "msg") else str(exc)
        raise SourceError(
            f"this is not Python source text ({why}): a binary file, or text in another encoding than UTF-8 without a '# -*- coding: ... -*-' line"
        ) from exc
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1)
        raise SourceError(
            f"the file is not valid {encoding}: byte 0x{data[exc.start]:02x} at line {line} cannot be decoded "
            f"(save it as UTF-8, or declare its encoding with a '# -*- coding: ... -*-' line)",
            line,
            col,
        ) from exc
    if text.startswith("\ufeff"):
        text = text[1:]
    return Source(path, text)
