"""The plain-JSON shapes shared by the engine, the CLI, the fixes and the language server.

Positions follow LSP: 0-based lines, 0-based characters counted in UTF-16 code units.
Everything here is standard library only so the worker, the server and the CLI can all use it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

SCHEMA_VERSION = 2  # 2: fixes carry `assumes` and `verification`

# LSP DiagnosticSeverity values.
ERROR, WARNING, INFORMATION, HINT = 1, 2, 3, 4
SEVERITY_NAMES = {ERROR: "error", WARNING: "warning", INFORMATION: "info", HINT: "hint"}  # as the CLI and the HTML report say them


def is_problem(severity: int) -> bool:
    """Whether a finding at this level is a problem: errors and warnings fail a check, count in
    "N problems" and get verified fixes; information and hints do not. The one home of that rule."""
    return severity in (ERROR, WARNING)


def place(file: str, cell: int | None) -> str:
    """The text a position is in, as one key: the file itself, or one cell of a notebook
    (`nb.ipynb:cell 2`, 0-based over all cells, as the CLI prints it). Results, texts and what the
    editor shows are keyed by it, so a notebook's cells are documents like any file."""
    return file if cell is None else f"{file}{_CELL}{cell}"


def split_place(key: str) -> tuple[str, int | None]:
    """`place`'s inverse: (file, cell or None)."""
    file, sep, cell = key.rpartition(_CELL)
    return (file, int(cell)) if sep and cell.isdigit() else (key, None)


_CELL = ":cell "


@dataclass(frozen=True, order=True)
class Position:
    line: int
    character: int

    def to_json(self) -> dict[str, int]:
        return {"line": self.line, "character": self.character}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Position:
        return cls(int(d["line"]), int(d["character"]))


@dataclass(frozen=True, order=True)
class Range:
    start: Position
    end: Position

    @classmethod
    def of(cls, line: int, character: int, end_line: int, end_character: int) -> Range:
        return cls(Position(line, character), Position(end_line, end_character))

    def to_json(self) -> dict[str, Any]:
        return {"start": self.start.to_json(), "end": self.end.to_json()}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Range:
        return cls(Position.from_json(d["start"]), Position.from_json(d["end"]))


def _cell(cell: int | None) -> dict[str, int]:
    """The `"cell"` key of a notebook position; absent for ordinary files (the schema is unchanged for them)."""
    return {} if cell is None else {"cell": cell}


@dataclass(frozen=True)
class TextEdit:
    """Replace `range` of `file` with `new_text` (an insertion has an empty range)."""

    file: str
    range: Range
    new_text: str
    cell: int | None = None  # in a notebook: the cell (0-based, over all cells); `range` is relative to it

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "range": self.range.to_json(), "newText": self.new_text, **_cell(self.cell)}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TextEdit:
        return cls(d["file"], Range.from_json(d["range"]), d["newText"], d.get("cell"))


# Verification outcomes of a fix, best first (see `exportlens.verify`).
EXPORT_PASSES, FIXES_THIS, NO_EFFECT, BREAKS, NOT_CHECKED = "export-passes", "fixes-this", "no-effect", "breaks", "not-checked"
OUTCOMES = (EXPORT_PASSES, FIXES_THIS, NOT_CHECKED, NO_EFFECT, BREAKS)


@dataclass(frozen=True)
class Verification:
    """What re-running the target with a fix applied (in memory) showed.

    `remaining`: codes of the problems the target still has; `same_outputs`: the fixed model's
    eager outputs on the example inputs equal the original's (None: not compared); `assumes`: the
    condition an assumption fix asserts for every input; `detail`: how it broke / why not checked;
    `keeps_dynamic`: plain export passes with every dimension the original call asked to be dynamic
    still dynamic (None: not known), `lost` the ones that are not (`x.shape[1]`); `made_dynamic`: the
    dimensions the fixed program has dynamic that the original's had not (a could-be-dynamic fix).
    """

    status: str
    remaining: tuple[str, ...] = ()
    same_outputs: bool | None = None
    assumes: str | None = None
    seconds: float = 0.0
    detail: str = ""
    keeps_dynamic: bool | None = None
    lost: tuple[str, ...] = ()
    made_dynamic: tuple[str, ...] = ()

    def words(self, passes: str = "export passes ✓") -> str:
        """The outcome in a few words, as the editor's code actions and the HTML report say it;
        `passes` is what a fix that leaves no problem says (the finding's code's record has it:
        `codes.outcome_words`)."""
        gone = ", ".join(f"`{d}`" for d in self.lost)
        no_longer = f"{gone} {'is' if len(self.lost) == 1 else 'are'} no longer dynamic"
        if self.status == EXPORT_PASSES and self.lost:
            return f"export passes, but {no_longer}"
        if self.status == EXPORT_PASSES and self.made_dynamic:
            n = len(self.made_dynamic)
            return f"export passes ✓, {n} dimension{'s' if n != 1 else ''} dynamic"
        if self.status == EXPORT_PASSES:
            return passes
        if self.status == FIXES_THIS:
            n = len(self.remaining)
            return f"fixes this; {n} problem{'s' if n != 1 else ''} remain{'s' if n == 1 else ''}" + (f"; {no_longer}" if self.lost else "")
        return {NO_EFFECT: "does not help", BREAKS: "breaks the target", NOT_CHECKED: "not verified"}.get(self.status, self.status)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "status": self.status,
            "remaining": list(self.remaining),
            "same_outputs": self.same_outputs,
            "assumes": self.assumes,
            "seconds": round(self.seconds, 3),
        }
        if self.detail:
            out["detail"] = self.detail
        if self.keeps_dynamic is not None:
            out["keeps_dynamic"] = self.keeps_dynamic
            out["lost"] = list(self.lost)
        if self.made_dynamic:
            out["made_dynamic"] = list(self.made_dynamic)
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Verification:
        same = d.get("same_outputs")
        return cls(
            str(d["status"]),
            tuple(str(c) for c in d.get("remaining") or ()),
            same if isinstance(same, bool) else None,
            d.get("assumes"),
            float(d.get("seconds") or 0.0),
            str(d.get("detail") or ""),
            d.get("keeps_dynamic") if isinstance(d.get("keeps_dynamic"), bool) else None,
            tuple(str(x) for x in d.get("lost") or ()),
            tuple(str(x) for x in d.get("made_dynamic") or ()),
        )


@dataclass(frozen=True)
class Fix:
    """A rewrite, or an assumption when `assumes` is set (a `torch._check` the code asserts for
    every input: inputs where it is false will raise). `verification` is filled in by re-running."""

    title: str
    edits: tuple[TextEdit, ...]
    is_preferred: bool = False
    assumes: str | None = None
    verification: Verification | None = None
    changes_example: bool = False  # it edits the example inputs: the model's outputs are not comparable

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "title": self.title,
            "isPreferred": self.is_preferred,
            "edits": [e.to_json() for e in self.edits],
            "assumes": self.assumes,
        }
        if self.verification is not None:
            out["verification"] = self.verification.to_json()
        if self.changes_example:
            out["changesExample"] = True
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Fix:
        ver = d.get("verification")
        return cls(
            d["title"],
            tuple(TextEdit.from_json(e) for e in d["edits"]),
            bool(d["isPreferred"]),
            d.get("assumes"),
            Verification.from_json(ver) if isinstance(ver, dict) else None,
            bool(d.get("changesExample")),
        )

    def key(self) -> tuple[tuple[str, Range, str], ...]:
        """Identifies a fix by its edits (the same fix offered for two findings is one fix)."""
        return tuple((place(e.file, e.cell), e.range, e.new_text) for e in self.edits)


@dataclass(frozen=True)
class Related:
    file: str
    range: Range
    message: str
    cell: int | None = None  # as in TextEdit

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "range": self.range.to_json(), "message": self.message, **_cell(self.cell)}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Related:
        return cls(d["file"], Range.from_json(d["range"]), d["message"], d.get("cell"))


@dataclass
class Diagnostic:
    """One deduplicated finding, placed on the user's line.

    `data` keeps the raw facts (guard expression, locals, op profiles, dynamic shapes...)
    that the quick fixes and the hover need; its shape per code is the type its record in `codes.py` names.
    """

    file: str
    range: Range
    severity: int
    code: str
    message: str
    target: str
    related: list[Related] = field(default_factory=list)
    fixes: list[Fix] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    cell: int | None = None  # in a notebook: the cell (0-based, over all cells); `range` is relative to it

    @property
    def problem(self) -> bool:
        return is_problem(self.severity)

    def to_json(self, with_data: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "file": self.file,
            **_cell(self.cell),
            "range": self.range.to_json(),
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
            "target": self.target,
            "related": [r.to_json() for r in self.related],
            "fixes": [f.to_json() for f in self.fixes],
        }
        if with_data:
            out["data"] = self.data
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Diagnostic:
        return cls(
            file=d["file"],
            range=Range.from_json(d["range"]),
            severity=int(d["severity"]),
            code=d["code"],
            message=d["message"],
            target=d.get("target", ""),
            related=[Related.from_json(r) for r in d.get("related", [])],
            fixes=[Fix.from_json(f) for f in d.get("fixes", [])],
            data=dict(d.get("data", {})),
            cell=d.get("cell"),
        )


@dataclass
class TargetResult:
    name: str
    file: str
    line: int  # 1-based, as in the JSON output
    kind: str  # "export" | "compile" | "trace"
    status: str  # "ok" | "problems" | "error" | "timeout" | "crashed" | "unsupported" (torch has no draft_export)
    seconds: float
    cell: int | None = None  # in a notebook: `line` is in this cell
    cached: dict[str, Any] | None = None  # reused from the results cache: the run it came from ("finished", "id", "seconds")

    def to_json(self) -> dict[str, Any]:
        out = {
            "name": self.name,
            "file": self.file,
            **_cell(self.cell),
            "line": self.line,
            "kind": self.kind,
            "status": self.status,
            "seconds": round(self.seconds, 4),
        }
        if self.cached is not None:
            out.update(cached=True, cached_from=dict(self.cached))
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TargetResult:
        came = d.get("cached_from")
        cached = dict(came) if d.get("cached") and isinstance(came, dict) else ({} if d.get("cached") else None)
        return cls(d["name"], d["file"], int(d["line"]), d["kind"], d["status"], float(d["seconds"]), d.get("cell"), cached)


@dataclass
class Report:
    """The result of one check: what the CLI prints and the server publishes."""

    torch_version: str
    targets: list[TargetResult] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    unsupported: str | None = None  # the worker's torch cannot draft-export: the one message saying so
    ignored: list[Diagnostic] = field(default_factory=list)  # silenced by `# exportlens: ignore`

    def to_json(self, *, show_ignored: bool = False, with_data: bool = False) -> dict[str, Any]:
        out = {
            "version": SCHEMA_VERSION,
            "torch": self.torch_version,
            "targets": [t.to_json() for t in self.targets],
            "diagnostics": [d.to_json(with_data=with_data) for d in self.diagnostics],
        }
        if self.unsupported:
            out["unsupported"] = self.unsupported
        if show_ignored:
            out["ignored"] = [d.to_json() for d in self.ignored]
        return out


def where(shown: str, cell: int | None, rng: Range) -> str:
    """`file:line:col`, or `nb.ipynb:cell N:line:col` in a notebook (N 0-based over all cells, line in the cell)."""
    cell_part = f"cell {cell}:" if cell is not None else ""
    return f"{shown}:{cell_part}{rng.start.line + 1}:{rng.start.character + 1}"


def text_lines(d: Diagnostic, shown: Callable[[str], str], level: str | None = None, *, related: bool = True) -> list[str]:
    """A diagnostic as compiler-style lines, `file:line:col: level[code]: message` (the one home of
    that format: the CLI's text report and the pytest plugin's failures), the message's further
    lines indented, then (`related`) each related place as a `note`. `shown` spells a file."""
    first, *rest = d.message.splitlines() or [""]
    out = [f"{where(shown(d.file), d.cell, d.range)}: {level or SEVERITY_NAMES.get(d.severity, 'note')}[{d.code}]: {first}"]
    out.extend(f"    {line}" for line in rest)
    if related:
        out.extend(f"    {where(shown(rel.file), rel.cell, rel.range)}: note: {rel.message}" for rel in d.related)
    return out
