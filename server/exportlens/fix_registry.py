"""Which fix goes with which finding: the glue between diagnostics and `exportlens.fixes`.

Above `codes.py` (it looks codes up), `document.py` (it reads documents) and `project.py`, and the
one place that writes fixes into files (`apply_preferred`): `fixes/` below it is pure text functions.

A code's fixers are named in its record of `codes.py`; this module looks them up, runs them on
the CURRENT text of each file (`read`), never on what the worker saw, so an editor gets edits
for the document it has, and keeps only fixes that edit the user's project. A document's
diagnostic is turned back into its runnable text first and each fix into the document's
positions after (a notebook's cells; `document.Document`). Only fixes known to make export pass
in torch 2.13 are offered (docs/torch-facts.md §4); where none is known, nothing is offered.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from exportlens import codes, project
from exportlens import fixes as gen
from exportlens.document import PYTHON_SUFFIXES, Document, load
from exportlens.fixes.common import Offer
from exportlens.fixes.suppress_fix import ignore_fix as ignore_comment
from exportlens.model import Diagnostic, Fix, TextEdit
from exportlens.source import Reader, read_disk, write_source

__all__ = ["Reader", "read_disk", "fixes_for", "refusals_for", "editor_fixes", "ignore_fix", "attach", "apply_preferred", "in_project"]


def in_project(fix: Fix, diag_file: str) -> bool:
    """Whether every edit of `fix` is in the diagnostic's project: never an edit inside
    site-packages, a venv, torch or any file outside the project root."""
    root = project.find_root(diag_file)
    return all(project.is_user_file(e.file, root) for e in fix.edits)


def refusals_for(d: Diagnostic, read: Reader = read_disk, document: Document | None = None) -> tuple[list[Fix], list[str]]:
    """The fixes for one diagnostic against the current texts, the preferred one first, and why
    the generators refused when they did. `document`: the one `d` belongs to (default: its file's).

    A fix that would edit a file outside the project (a library in site-packages) is refused.
    """
    doc = document if document is not None else load(d.file)
    ran = doc.mapper.unmap(d)
    if ran is None:
        return [], []
    offer = _offer(ran, doc.reader(read))
    shown = [m for f in offer.fixes if (m := doc.mapper.fix(f)) is not None]
    return [f for f in shown if in_project(f, d.file)], offer.refusals


def fixes_for(d: Diagnostic, read: Reader = read_disk, document: Document | None = None) -> list[Fix]:
    """The fixes for one diagnostic (see `refusals_for`)."""
    return refusals_for(d, read, document)[0]


def _fixes_for(d: Diagnostic, read: Reader) -> list[Fix]:
    """What the code's fixers make of `d` (in the runnable text), before the project check."""
    return _offer(d, read).fixes


def _offer(d: Diagnostic, read: Reader) -> Offer:
    offer = Offer()
    info = codes.CODES.get(d.code)
    try:
        for fixer in info.fixers if info is not None else ():
            offer.fixes += fixer(d, read, offer)
    except (SyntaxError, ValueError, KeyError, TypeError):  # a document mid-edit: no fix rather than a wrong one
        return Offer(refusals=offer.refusals)
    offer.fixes.sort(key=lambda f: not f.is_preferred)
    return offer


def ignore_fix(d: Diagnostic, read: Reader = read_disk, document: Document | None = None) -> Fix | None:
    """ "Ignore this problem on this line": an `# exportlens: ignore[code]` comment (editors offer it last)."""
    doc = document if document is not None else load(d.file)
    ran = doc.mapper.unmap(d)
    if ran is None or not codes.suppressible(ran.code) or not ran.file.endswith(PYTHON_SUFFIXES):
        return None
    text = doc.reader(read)(ran.file)
    fix = ignore_comment(text, ran.file, ran.range.start.line, ran.code) if text is not None else None
    return doc.mapper.fix(fix) if fix is not None else None


def editor_fixes(d: Diagnostic, read: Reader = read_disk, document: Document | None = None) -> list[Fix]:
    """What an editor offers: the fixes, then "Ignore this problem on this line"."""
    found = fixes_for(d, read, document)
    try:
        ignore = ignore_fix(d, read, document)
    except (SyntaxError, ValueError):
        ignore = None
    return found + [ignore] if ignore is not None else found


def attach(diags: list[Diagnostic], read: Reader = read_disk, document: Document | None = None) -> None:
    """Fill `fixes` of every diagnostic that has none yet (the CLI's JSON and SARIF carry them)."""
    for d in diags:
        if not d.fixes:
            d.fixes = fixes_for(d, read, document)


def _shown(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


@dataclass
class Applied:
    changed: dict[str, tuple[str, str]] = field(default_factory=dict)  # file → (old, new)
    skipped: list[str] = field(default_factory=list)

    @property
    def diff(self) -> str:
        return "".join(gen.unified_diff(old, new, _shown(path)) for path, (old, new) in sorted(self.changed.items()))

    def summary(self) -> str:
        lines = [f"fixed {_shown(p)}" for p in sorted(self.changed)]
        lines += [f"not fixed: {s}" for s in self.skipped]
        return "\n".join(lines) or "nothing to fix"


def _with_verification(computed: list[Fix], known: list[Fix]) -> list[Fix]:
    """Fixes computed on the files as they are now, ranked as `known` (the diagnostic's verified
    fixes) ranked them when they are the same edits; edits always come from the current text."""
    verified = {f.key(): f for f in known if f.verification is not None}
    if not any(c.key() in verified for c in computed):
        return computed
    out = [
        Fix(
            c.title,
            c.edits,
            verified[c.key()].is_preferred if c.key() in verified else False,
            c.assumes,
            verified[c.key()].verification if c.key() in verified else None,
        )
        for c in computed
    ]
    order = {f.key(): i for i, f in enumerate(known)}
    return sorted(out, key=lambda f: order.get(f.key(), len(order)))


def _conflicts(a: TextEdit, b: TextEdit) -> bool:
    """Two edits of one file that cannot both apply: overlapping, or inserting at the same point
    (edits that only meet, one ending where the next starts, apply in a clear order)."""
    if a.file != b.file:
        return False
    if a.range == b.range:
        return True
    return a.range.start < b.range.end and b.range.start < a.range.end


def apply_preferred(diags: list[Diagnostic], *, write: bool, assume: bool = False) -> Applied:
    """Apply every preferred fix, all computed against the files as they are now.

    Fixes are computed on the files as they are now; where the diagnostic carries verified fixes
    with the same edits, their verified ranking decides which one is preferred. An assumption fix
    (`torch._check` of a condition for every input) is applied only with `assume`, otherwise it is
    left out and said. A fix shared by several diagnostics counts
    once; a fix whose edits touch another chosen fix's lines is left out (and said), so the lines
    each finding named are never stale. Each file's result must parse, or that file is left alone.
    """
    out = Applied()
    texts: dict[str, str | None] = {}

    def read(path: str) -> str | None:
        if path not in texts:
            texts[path] = read_disk(path)
        return texts[path]

    chosen: list[Fix] = []
    seen: set[tuple[Any, ...]] = set()
    for d in sorted(diags, key=lambda d: (d.file, d.range.start)):
        if d.cell is not None:  # fixes are edits of a cell: the editor applies them, where the cell is
            if d.problem:
                where = f"{_shown(d.file)}:cell {d.cell}:{d.range.start.line + 1}"
                out.skipped.append(f"{where}: [{d.code}] a notebook cell: apply its fix in the editor (quick fix on the cell); --fix edits .py files")
            continue
        found, refused = refusals_for(d, read)
        preferred = [f for f in _with_verification(found, d.fixes) if f.is_preferred]
        if not preferred:
            if d.problem:  # a problem left as it was is said, with the reason
                why = "; ".join(refused) or (
                    "the only fixes are alternatives to choose in the editor" if found else f"ExportLens has no automatic fix for [{d.code}]"
                )
                out.skipped.append(f"{_shown(d.file)}:{d.range.start.line + 1}: [{d.code}] {why}")
            continue
        fix = preferred[0]
        if fix.assumes and not assume:
            out.skipped.append(f"{_shown(d.file)}:{d.range.start.line + 1}: {fix.title}: an assumption, not applied (pass --assume to apply it)")
            continue
        key = tuple((e.file, e.range, e.new_text) for e in fix.edits)
        if key in seen:
            continue
        seen.add(key)
        taken = [e for f in chosen for e in f.edits]
        if any(_conflicts(e, t) for e in fix.edits for t in taken):
            out.skipped.append(f"{_shown(d.file)}:{d.range.start.line + 1}: {fix.title}: touches the lines of another fix; run again after this one")
            continue
        chosen.append(fix)
    by_file: dict[str, list[TextEdit]] = {}
    for fix in chosen:
        for e in fix.edits:
            by_file.setdefault(e.file, []).append(e)
    for path, edits in sorted(by_file.items()):
        old = read(path)
        if old is None:
            continue
        try:
            new = gen.apply_edits(old, edits, validate=True)
        except gen.EditError as exc:
            out.skipped.append(f"{_shown(path)}: {exc}")
            continue
        if new != old:
            out.changed[path] = (old, new)
            if write:
                write_source(path, new)
    return out
