"""Where a finding's root cause is: one field of the JSON report that the page (and any reader) groups by.

The innermost location of the problem: the library line for a problem inside a library (the same
`torchvision/ops/boxes.py:86` whichever target, and whichever line of the project, reached it),
the finding's own line otherwise. A zoo of models declared as factories reaches one library line
from several declarations: grouped by this field, it is one root cause with all its targets.
In the JSON: `"root_cause": {"file", "line" (1-based, as in data.library_frame), "cell"?, "library"?, "where"?}`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exportlens.findings.boundary import where
from exportlens.model import Diagnostic
from exportlens.report.sources import library_line


def root_cause(d: Diagnostic) -> dict[str, Any]:
    """The innermost location of `d`: its library line (with the package and the import path), else its own line."""
    lib = library_line(d)
    if lib is not None:
        frame = d.data.get("library_frame") or {}
        out: dict[str, Any] = {"file": lib[0], "line": lib[1] + 1, "where": where(lib[0], lib[1] + 1)}
        package = d.data.get("library") or frame.get("package")
        if package:
            out["library"] = str(package)
        return out
    own: dict[str, Any] = {"file": d.file, "line": d.range.start.line + 1}
    if d.cell is not None:
        own["cell"] = d.cell
    return own


def read(value: Any) -> tuple[str, int | None, int] | None:
    """A report's `root_cause` as (file, cell, 0-based line), None when it is missing or not well formed."""
    if not isinstance(value, Mapping) or not isinstance(value.get("file"), str) or not isinstance(value.get("line"), int) or value["line"] < 1:
        return None
    cell = value.get("cell")
    return str(value["file"]), cell if isinstance(cell, int) else None, int(value["line"]) - 1
