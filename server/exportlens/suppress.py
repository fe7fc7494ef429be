"""Suppression comments, in ruff's and mypy's style: `# exportlens: ignore[code, code]`.

A directive silences the diagnostics that START on its line: a bare `# exportlens: ignore`
silences every code, a listed one only those codes; a code whose record says it is not
suppressible (`CodeInfo.suppressible`: findings about the comments or pyproject.toml themselves)
is never silenced. A directive (or a listed code) that silenced nothing gets an `unused-ignore`
hint, so stale ignores do not pile up. The directives are read by `fixes/suppress_fix.py` (only
real comments count, never text inside strings), which also holds the edits that add and remove
them. The engine applies this, so the CLI and the language server agree. Standard library only.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from exportlens import codes
from exportlens.fixes.suppress_fix import Ignore, directives, silences
from exportlens.model import Diagnostic

UNUSED = "unused-ignore"


@dataclass
class Outcome:
    kept: list[Diagnostic]
    ignored: list[Diagnostic]
    unused: list[Diagnostic]


def apply(diags: list[Diagnostic], texts: dict[str, str | None], *, report_unused: set[str] | None = None, known: Collection[str] = ()) -> Outcome:
    """Split `diags` into kept and silenced by the directives in `texts` (file → text).

    `report_unused`: files whose directives get `unused-ignore` hints (only files whose run was
    complete: after a crash a directive may have silenced a finding that never came).
    """
    by_file = {path: directives(text) for path, text in texts.items() if text is not None}
    out = Outcome([], [], [])
    for d in diags:
        ignore = by_file.get(d.file, {}).get(d.range.start.line)
        if ignore is not None and codes.suppressible(d.code) and silences(ignore, d.code):
            ignore.used.add(d.code if ignore.codes is not None else "*")
            out.ignored.append(d)
        else:
            out.kept.append(d)
    for path in sorted(report_unused or ()):
        for ignore in by_file.get(path, {}).values():
            hint = unused_hint(path, ignore, known)
            if hint is not None:
                out.unused.append(hint)
    return out


def unused_hint(path: str, ignore: Ignore, known: Collection[str] = ()) -> Diagnostic | None:
    """The hint for a directive that silenced nothing (`known`: the codes that exist, to name a misspelt one)."""
    if ignore.codes is None:
        if ignore.used:
            return None
        message = "This `# exportlens: ignore` silences nothing: no ExportLens problem starts on this line. Remove it."
        unused: list[str] = []
    else:
        unused = [c for c in ignore.codes if c not in ignore.used]
        if not unused:
            return None
        names = ", ".join(f"`{c}`" + ("" if c in known else " (not an ExportLens code)") for c in unused)
        message = (
            f"Unused ignore: {names} silence{'s' if len(unused) == 1 else ''} nothing on this line "
            f"(no such ExportLens problem starts here). Remove {'it' if len(unused) == 1 else 'them'}."
        )
    return codes.new(
        UNUSED, path, ignore.range, message, data={"unused_codes": unused, "directive": [ignore.range.start.character, ignore.range.end.character]}
    )
