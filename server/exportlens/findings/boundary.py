"""Where a problem inside a library meets the project: the boundary line and the library line.

Real models are built from libraries (torchvision, transformers, PyG): the guard, the op without
a fake kernel or the graph break is in site-packages, and the line the user can act on is the
innermost line of the project that called into the library (`self.detector(images)`). Every
stack torch offers is tried in order of completeness — the live Python stack recorded when torch
logged the problem, the exception's traceback, dynamo's user stack, draft export's 3 kept frames.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from exportlens.findings.placement import Frame
from exportlens.model import Range, Related
from exportlens.project import is_user_file
from exportlens.source import Source

NO_EDIT = "This is the library's code, not yours: ExportLens never edits it."
SHORT_EXPR = 120  # longer symbolic expressions are shortened in messages; the whole one stays in data
_PACKAGE_DIRS = ("site-packages", "dist-packages")


@dataclass(frozen=True)
class LibraryFrame:
    """A frame inside a library (outside the project, not torch, not the standard library)."""

    file: str
    line: int
    name: str
    qualname: str
    loc: str | None
    package: str
    col: int | None = None
    end_line: int | None = None
    end_col: int | None = None

    def to_json(self) -> dict[str, Any]:
        """`file` is where it lives on this machine; `where` names it as an import does, the same on every machine."""
        return {"file": self.file, "line": self.line, "function": self.qualname, "source": self.loc, "package": self.package, "where": self.where()}

    def as_frame(self) -> Frame:
        return Frame(self.file, self.line, self.name, self.col, self.end_line, self.end_col)

    def where(self) -> str:
        """`minilib/postprocess.py:8` — the path from the package on, as an import would name it."""
        return where(self.file, self.line)


@dataclass
class Boundary:
    frame: Frame  # the innermost project frame: the user's call into the library (or the problem itself)
    outer: list[Frame]  # project frames around it, outermost first
    library: list[LibraryFrame] = field(default_factory=list)  # inside the library, outermost first
    source: str = ""  # which stack told: live, traceback, dynamo, torch
    declared: bool = False  # no line of the project on any stack: `frame` is where the target builds its model

    @property
    def inside(self) -> LibraryFrame | None:
        """The library line where the problem happened (None: it happened in the project)."""
        return self.library[-1] if self.library else None

    def chain(self, src: Source | None = None) -> list[dict[str, Any]]:
        """Every frame from the project's call to the library line, for the hover and `data`;
        `src` (the project frame's file) gives that line's text, as library frames carry theirs."""
        mine: dict[str, Any] = {"file": self.frame.file, "line": self.frame.line, "function": self.frame.name, "project": True}
        text = src.line(self.frame.line).strip() if src is not None else ""
        if text:
            mine["source"] = text
        return [mine] + [{**lib.to_json(), "project": False} for lib in self.library]


def import_path(path: str) -> str | None:
    """`minilib/postprocess.py` for a file under site-packages (the path from the package on, as an
    import names it), None for a file elsewhere."""
    parts = os.path.abspath(path).split(os.sep)
    for marker in _PACKAGE_DIRS:
        if marker in parts:
            return "/".join(parts[len(parts) - parts[::-1].index(marker) :])
    return None


def where(file: str, line: int) -> str:
    """`minilib/postprocess.py:8` for a library file: the path from the package on, as an import names it."""
    return f"{import_path(file) or os.path.basename(file)}:{line}"


def is_torch(path: str) -> bool:
    parts = os.path.abspath(path).split(os.sep)
    return any(parts[i] in _PACKAGE_DIRS and parts[i + 1] in ("torch", "functorch") for i in range(len(parts) - 1))


def package_of(path: str) -> str:
    """The import name of a library file's top package (`minilib`), else its folder's name."""
    parts = os.path.abspath(path).split(os.sep)
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] in _PACKAGE_DIRS:
            top = parts[i + 1]
            return top[:-3] if top.endswith(".py") else top
    return os.path.basename(os.path.dirname(path))


def _is_library(fr: Mapping[str, Any], root: str) -> bool:
    file = str(fr.get("file") or "")
    return bool(file) and not file.startswith("<") and not fr.get("where") and not is_torch(file) and not is_user_file(file, root)


def locate(stacks: Iterable[tuple[str, Sequence[Mapping[str, Any]] | None]], root: str, declared: Frame | None = None) -> Boundary | None:
    """The boundary from the first stack (most complete first) that has a line of the project.

    A library model declared as a module-level `model` or built by a factory runs with no line of the
    project on its stack: then, given the target's `declared` model expression, the boundary is that
    line and the library frames are the first stack's that has any (nothing inside a library: None).
    """
    usable = [(source, [f for f in frames or [] if f.get("file") and f.get("line")]) for source, frames in stacks]
    for source, frames in usable:
        idx = next((i for i in range(len(frames) - 1, -1, -1) if is_user_file(str(frames[i]["file"]), root)), None)
        if idx is None:
            continue
        outer = [Frame.from_json(f) for f in frames[:idx] if is_user_file(str(f["file"]), root)]
        return Boundary(Frame.from_json(frames[idx]), outer, _library_frames(frames[idx + 1 :], root), source)
    if declared is None:
        return None
    for source, frames in usable:
        library = _library_frames(frames, root)
        if library:
            return Boundary(declared, [], library, source, declared=True)
    return None


def _library_frames(frames: Sequence[Mapping[str, Any]], root: str) -> list[LibraryFrame]:
    return [
        LibraryFrame(
            str(f["file"]),
            int(f["line"]),
            str(f.get("name") or ""),
            str(f.get("qualname") or f.get("name") or ""),
            f.get("loc"),
            package_of(str(f["file"])),
            f.get("col"),
            f.get("end_line"),
            f.get("end_col"),
        )
        for f in frames
        if _is_library(f, root)
    ]


def declared_note(b: Boundary | None) -> str:
    """What the message says when the finding sits on the target's declaration, not on a call."""
    if b is None or not b.declared:
        return ""
    return " No line of this project runs while the model exports: it is shown where the target builds the model."


def shorten(text: str, limit: int = SHORT_EXPR) -> str:
    """A long symbolic expression cut to `limit` characters (the whole one stays in `data`)."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def library_range(src: Source | None, lib: LibraryFrame) -> Range:
    if src is None:
        return Range.of(lib.line - 1, 0, lib.line - 1, 0)
    from exportlens.findings import placement

    return placement.frame_range(src, lib.as_frame())


def library_related(src: Source | None, lib: LibraryFrame, what: str = "it happens here") -> Related:
    """The library line as a related location: the real path, the function and its source text."""
    code = f": `{shorten(lib.loc, 80)}`" if lib.loc else ""
    return Related(lib.file, library_range(src, lib), f"{what}, in the library {lib.package} ({lib.where()}, in `{lib.qualname}`){code}")


def upstream_search(lib: LibraryFrame, what: str) -> str:
    """Text to search the library's issue tracker with."""
    return f"{lib.package} {lib.qualname} {what}"
