"""Cross-references of a report: each finding's targets, and findings grouped by root cause.

Why root causes: on a real model zoo most findings share a few causes. The same library line
(torchvision's `boxes.numel() == 0` guard under `batched_nms`) reaches every detector, each
through its own user line, or from each factory's declaration of a library model. Grouping by
the innermost location (each finding's `root_cause` in the JSON report, `report/rootcause.py`: the
library line for a problem inside a library, the user's own line otherwise) and the code turns "80
findings" into "one library line, 12 targets" - what a library maintainer acts on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from exportlens.findings.boundary import import_path, shorten
from exportlens.model import Range
from exportlens.report import rootcause
from exportlens.report.jsonreport import ReportDoc
from exportlens.report.sources import Sources, library_line, library_related


def text_under(sources: Sources | None, file: str, cell: int | None, rng: Range) -> str | None:
    """The source text a range covers (its first lines for a long one), None when not known."""
    if sources is None:
        return None
    from exportlens.fixes.text import utf16_to_index

    last = min(rng.end.line, rng.start.line + 3)
    parts = []
    for n in range(rng.start.line, last + 1):
        line = sources.line(file, cell, n)
        if line is None:
            return None
        a = utf16_to_index(line, rng.start.character) if n == rng.start.line else 0
        b = utf16_to_index(line, rng.end.character) if n == rng.end.line else len(line)
        parts.append(line[a:b])
    return shorten(" ".join(p.strip() for p in parts)) or None


@dataclass
class Cause:
    """Findings of one code at one innermost location, across targets."""

    code: str
    file: str
    cell: int | None
    line: int  # 0-based
    library: str | None  # the package, for a line inside a library
    text: str  # the expression (or the line) at that location
    findings: list[int] = field(default_factory=list)  # indices into ReportDoc.diagnostics
    targets: list[int] = field(default_factory=list)  # indices into ReportDoc.targets
    severity: int = 4  # the most severe of its findings (LSP: 1 error ... 4 hint)


class Index:
    """What the page links: findings ↔ targets, display paths, root causes."""

    def __init__(self, doc: ReportDoc) -> None:
        self.doc = doc
        by_key: dict[tuple[str, str], list[int]] = {}
        for i, t in enumerate(doc.targets):
            by_key.setdefault((os.path.abspath(t.file), t.name), []).append(i)
        by_name: dict[str, list[int]] = {}
        for i, t in enumerate(doc.targets):
            by_name.setdefault(t.name, []).append(i)
        self.finding_targets: list[list[int]] = []
        for d, owner in zip(doc.diagnostics, doc.owners, strict=True):
            names = [n for n in d.target.split(", ") if n]
            home = os.path.abspath(owner or d.file)
            mine = [i for n in names for i in by_key.get((home, n), [])]
            if not mine and owner is None:  # an older report: a helper's finding, matched by a unique target name
                mine = [by_name[n][0] for n in names if len(by_name.get(n, [])) == 1]
            self.finding_targets.append(sorted(set(mine)))
        self.target_findings: list[list[int]] = [[] for _ in doc.targets]
        for f, ts in enumerate(self.finding_targets):
            for j in ts:
                self.target_findings[j].append(f)
        self.root = self._root()

    def _root(self) -> str:
        """The folder the paths are shown from: the deepest one holding every checked file."""
        files = [os.path.abspath(t.file) for t in self.doc.targets]
        files += [os.path.abspath(o or d.file) for d, o in zip(self.doc.diagnostics, self.doc.owners, strict=True)]
        dirs = [os.path.dirname(f) for f in files if import_path(f) is None]
        if not dirs:
            return ""
        try:
            return os.path.commonpath(dirs)
        except ValueError:  # different drives
            return ""

    def show(self, file: str) -> str:
        """A file as the page names it: from the checked folder, a library's from its package, else as given."""
        full = os.path.abspath(file)
        lib = import_path(full)
        if lib is not None:
            return lib
        if self.root and (full == self.root or full.startswith(self.root.rstrip(os.sep) + os.sep)):
            return os.path.relpath(full, self.root).replace(os.sep, "/")
        return file

    def causes(self) -> list[Cause]:
        """Root causes, most targets first (then errors before warnings, then by place)."""
        groups: dict[tuple[str, str, int | None, int], Cause] = {}
        sources = self.doc.sources
        given = self.doc.root_causes
        for i, d in enumerate(self.doc.diagnostics):
            at = (given[i] if i < len(given) else None) or rootcause.read(rootcause.root_cause(d))  # an older report: from `data`
            assert at is not None
            file, cell, line = at
            lib = library_line(d)
            if lib is not None and (file, cell, line) == (lib[0], None, lib[1]):
                rng = library_related(d)
                frame = d.data.get("library_frame") or {}
                text = (text_under(sources, file, None, rng) if rng is not None else None) or shorten(str(frame.get("source") or "").strip())
                package = str(d.data.get("library") or frame.get("package") or "") or None
            elif (file, cell, line) == (d.file, d.cell, d.range.start.line):
                text = text_under(sources, d.file, d.cell, d.range) or shorten(str(d.data.get("test_text") or ""))
                package = None
            else:  # a reader's own root cause: the line there
                text = shorten((sources.line(file, cell, line) if sources is not None else None) or "")
                package = None
            cause = groups.setdefault((d.code, file, cell, line), Cause(d.code, file, cell, line, package, text))
            cause.findings.append(i)
            cause.severity = min(cause.severity, d.severity)
            for t in self.finding_targets[i]:
                if t not in cause.targets:
                    cause.targets.append(t)
        return sorted(groups.values(), key=lambda c: (-len(c.targets), c.severity, self.show(c.file), c.cell or 0, c.line, c.code))
