"""Fix verification: re-run the target with each fix applied in memory and say what happened.

A quick fix is a well-formed guess until the target runs again with it. For each fix of a
finding, the owner document's targets run once more in the warm worker with the fix applied in
memory (`Document.edited` for the document itself, a notebook's cells included; `overrides` for
other files; nothing is written), and the finding gets one outcome (`model.OUTCOMES`):

* `export-passes`: no problem is left on the finding's target and plain `torch.export.export`
  with the same arguments succeeds (for a torch.compile finding: no graph break or recompile is
  left in the re-run of the script's compile call);
* `fixes-this`: this finding is gone, the `remaining` problems are not;
* `no-effect`: the same finding comes back;
* `breaks`: the target now fails differently (an export error, a crash, or the model raising
  on its example inputs), `detail` says how;
* `not-checked`: not run (time budget, timeout, cancelled, edits that do not apply).

The fixed model's eager outputs on the example inputs are compared with the original's
(`same_outputs`). No torch here: the worker runs everything.
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from exportlens import codes, document
from exportlens.document import Document
from exportlens.engine import Engine, FileResult
from exportlens.fixes import EditError, apply_fix
from exportlens.model import (
    BREAKS,
    EXPORT_PASSES,
    FIXES_THIS,
    NO_EFFECT,
    NOT_CHECKED,
    OUTCOMES,
    Diagnostic,
    Fix,
    TargetResult,
    TextEdit,
    Verification,
    place,
)
from exportlens.source import Reader


def breaks_target(d: Diagnostic) -> bool:
    """A finding that means the target no longer runs at all (a fix that brings one is a breaking
    fix): its code's record says so (`CodeInfo.breaks_target`)."""
    return codes.record(d.code).breaks_target


def problems(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    return [d for d in diags if d.problem]


def to_verify(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    """The findings whose fixes are verified: every problem, and the hints whose fix writes a spec."""
    return [d for d in diags if d.problem or codes.record(d.code).makes_dynamic]


def targets_of(d: Diagnostic) -> set[str]:
    return {t for t in d.target.split(", ") if t}


# -- where lines go when a fix is applied -------------------------------------------------------


@dataclass
class LineShift:
    """Old line → new line of one file after a fix's edits (None: the line was edited).

    Each edit is kept as the old lines it touches, [start, stop), and how many lines it adds;
    an insertion at the start of a line touches none and pushes that line down.
    """

    edits: list[tuple[int, int, int]] = field(default_factory=list)  # (start, stop, added lines), by start

    @classmethod
    def of(cls, edits: Iterable[TextEdit]) -> LineShift:
        spans = []
        for e in edits:
            start, end = e.range.start, e.range.end
            stop = end.line if end.character == 0 else end.line + 1
            spans.append((start.line, max(stop, start.line), e.new_text.count("\n") - (end.line - start.line)))
        return cls(sorted(spans))

    def _before(self, old: int) -> int:
        return sum(delta for start, stop, delta in self.edits if stop <= old and (start < old or start == stop))

    def line(self, old: int) -> int | None:
        if any(start <= old < stop for start, stop, _ in self.edits):
            return None
        return old + self._before(old)

    def region(self, old: int) -> tuple[int, int] | None:
        """The new lines (inclusive) that replaced the edit holding `old` (a rewritten statement)."""
        for start, stop, delta in self.edits:
            if start <= old < stop:
                first = start + self._before(start)
                return first, max(first, first + (stop - start) + delta - 1)
        return None


def _shifts(fix: Fix) -> dict[str, LineShift]:
    """Each edited text's line shift, by `model.place` (a notebook's cells shift one by one)."""
    by_place: dict[str, list[TextEdit]] = {}
    for e in fix.edits:
        by_place.setdefault(place(e.file, e.cell), []).append(e)
    return {p: LineShift.of(es) for p, es in by_place.items()}


def _target_names(base: list[TargetResult], fixed: list[TargetResult], shifts: dict[str, LineShift]) -> dict[str, str]:
    """Original target name → its name in the fixed run (`export at f.py:15` may become `:16`)."""
    out: dict[str, str] = {}
    by_place = {(t.kind, place(t.file, t.cell), t.line): t.name for t in fixed}
    for t in base:
        where = place(t.file, t.cell)
        shift = shifts.get(where)
        line = shift.line(t.line - 1) if shift is not None else t.line - 1
        moved = by_place.get((t.kind, where, line + 1)) if line is not None else None
        if moved is None and shift is not None and (region := shift.region(t.line - 1)) is not None:
            # the fix rewrote the target's own line (a spec added to the call): the one target in what replaced it
            inside = [name for (kind, p, ln), name in by_place.items() if kind == t.kind and p == where and region[0] <= ln - 1 <= region[1]]
            moved = inside[0] if len(inside) == 1 else None
        out[t.name] = moved or t.name
    return out


def same_finding(orig: Diagnostic, new: Diagnostic, shifts: dict[str, LineShift]) -> bool:
    """Whether `new` (from the fixed run) is `orig` come back."""
    if orig.code != new.code:
        return False
    if orig.data.get("site") != new.data.get("site"):
        return False  # another dimension (or recompiled function, or warning) on the same line
    op = orig.data.get("op")
    if op and op == new.data.get("op"):
        return True
    if place(orig.file, orig.cell) != place(new.file, new.cell):
        return False
    shift = shifts.get(place(orig.file, orig.cell))
    line = orig.range.start.line
    if shift is None:
        return new.range.start.line == line
    moved = shift.line(line)
    if moved is not None:
        return new.range.start.line == moved
    region = shift.region(line)
    return region is not None and region[0] <= new.range.start.line <= region[1]


# -- comparing outputs --------------------------------------------------------------------------


def _close(a: Any, b: Any) -> bool:
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return bool(a == b)
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9) or (math.isnan(a) and math.isnan(b))


def same_outputs(before: dict[str, Any] | None, after: dict[str, Any] | None) -> bool | None:
    """Equal eager outputs (hash, or shapes and sums within 1e-6), None when not both known."""
    if not before or not after:
        return None
    if "outputs_error" in before or "outputs_error" in after:
        if "outputs_error" in before and "outputs_error" in after:
            return bool(before["outputs_error"] == after["outputs_error"])
        return False if ("outputs" in before or "outputs" in after) else None
    a, b = before.get("outputs"), after.get("outputs")
    if a is None or b is None:
        return None
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x.get("hash") is not None and x.get("hash") == y.get("hash") and x.get("shape") == y.get("shape"):
            continue
        if x.get("shape") != y.get("shape") or x.get("dtype") != y.get("dtype") or x.get("value") != y.get("value"):
            return False
        if not (_close(x.get("sum"), y.get("sum")) and _close(x.get("abs_sum"), y.get("abs_sum"))):
            return False
    return True


# -- one outcome --------------------------------------------------------------------------------


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0][:300]


def classify(d: Diagnostic, fix: Fix, base: FileResult, fixed: FileResult, seconds: float) -> Verification:
    """The outcome of `fix` for finding `d`, from the original run and the run with the fix."""
    shifts = _shifts(fix)
    names = _target_names(base.targets, fixed.targets, shifts)
    mine = {names.get(t, t) for t in targets_of(d)}
    ran = [t for t in fixed.targets if t.name in mine]

    def verdict(status: str, remaining: Iterable[str] = (), detail: str = "", same: bool | None = None) -> Verification:
        keeps, lost = dynamism_kept(d, base, fixed, names) if status in (EXPORT_PASSES, FIXES_THIS) and not codes.record(d.code).compile_finding else (None, ())
        made = made_dynamic(d, base, fixed, names) if status in (EXPORT_PASSES, FIXES_THIS) else ()
        return Verification(status, tuple(remaining), None if fix.changes_example else same, fix.assumes, seconds, detail, keeps, lost, made)

    if any(t.status == "timeout" for t in ran):
        return verdict(NOT_CHECKED, detail="the run with the fix timed out")
    left = [e for e in problems(fixed.diagnostics) if targets_of(e) & mine or not e.target]
    if codes.record(d.code).makes_dynamic:  # the hint itself coming back (the same dimensions, or others) is what is left
        left += [e for e in fixed.diagnostics if e.code == d.code and not e.problem and targets_of(e) & mine]
    same = _outputs_compared(d, base, fixed, names)
    if any(t.status == "crashed" for t in ran):
        return verdict(BREAKS, [e.code for e in left], "the target crashed with the fix applied", same)
    had = {(e.code, _first_line(e.message)) for e in base.diagnostics}
    new_breaks = [e for e in left if breaks_target(e) and (e.code, _first_line(e.message)) not in had]
    if new_breaks:
        return verdict(BREAKS, [e.code for e in left], f"{new_breaks[0].code}: {_first_line(new_breaks[0].message)}", same)
    raised = _newly_raises(d, base, fixed, names)
    if raised:
        return verdict(BREAKS, [e.code for e in left], f"the model now raises on its example inputs: {raised}", same)
    if any(same_finding(d, e, shifts) for e in left):
        return verdict(NO_EFFECT, [e.code for e in left], same=same)
    if left:
        return verdict(FIXES_THIS, [e.code for e in left], same=same)
    if codes.record(d.code).compile_finding:
        return verdict(EXPORT_PASSES, same=same)
    plain = [fixed.facts.get(t.name, {}).get("plain_export") for t in ran if t.kind == "export"]
    failing = [p for p in plain if p != "ok"]
    if plain and not failing:
        return verdict(EXPORT_PASSES, same=same)
    why = next((p for p in failing if p), "it did not run")
    return verdict(FIXES_THIS, ["export-error"], f"plain torch.export.export still fails: {why}", same)


def dynamism_kept(d: Diagnostic, base: FileResult, fixed: FileResult, names: dict[str, str]) -> tuple[bool | None, tuple[str, ...]]:
    """Whether the fixed run keeps dynamic every dimension the original call asked to be dynamic, and
    the ones it lost: those the fixed call no longer asks for (a `Dim.STATIC`), and those its program
    has static (plain export passed). None when nothing was asked or nothing is known."""
    lost: list[str] = []
    known = False
    for t in targets_of(d):
        after = fixed.facts.get(names.get(t, t)) or {}
        asked, still, kept = (base.facts.get(t) or {}).get("requested"), after.get("requested"), after.get("dynamic")
        if codes.record(d.code).makes_dynamic:  # what the fixed call asks for is what the fix claims
            asked = list((base.facts.get(t) or {}).get("requested") or []) + [x for x in still or [] if x not in (asked or [])]
        if not asked or (still is None and kept is None):
            continue
        known = True
        lost += [dim for dim in asked if (still is not None and dim not in still or kept is not None and dim not in kept) and dim not in lost]
    return (not lost, tuple(lost)) if known else (None, ())


def made_dynamic(d: Diagnostic, base: FileResult, fixed: FileResult, names: dict[str, str]) -> tuple[str, ...]:
    """The dimensions the fixed program has dynamic that the original had not (`input_ids.shape[1]`)."""
    out: list[str] = []
    for t in targets_of(d):
        before = set((base.facts.get(t) or {}).get("dynamic") or [])
        after = (fixed.facts.get(names.get(t, t)) or {}).get("dynamic") or []
        out += [x for x in after if x not in before and x not in out]
    return tuple(out)


def _outputs_compared(d: Diagnostic, base: FileResult, fixed: FileResult, names: dict[str, str]) -> bool | None:
    verdicts = [same_outputs(base.facts.get(t), fixed.facts.get(names.get(t, t))) for t in targets_of(d)]
    known = [v for v in verdicts if v is not None]
    if not known:
        return None
    return all(known)


def _newly_raises(d: Diagnostic, base: FileResult, fixed: FileResult, names: dict[str, str]) -> str | None:
    for t in targets_of(d):
        before, after = base.facts.get(t) or {}, fixed.facts.get(names.get(t, t)) or {}
        if "outputs" in before and "outputs_error" in after:
            return str(after["outputs_error"])
    return None


# -- ranking ------------------------------------------------------------------------------------


def _rank(fix: Fix, index: int) -> tuple[int, int, int, int, int]:
    v = fix.verification
    status = OUTCOMES.index(v.status) if v is not None and v.status in OUTCOMES else OUTCOMES.index(NOT_CHECKED)
    lost = 1 if v is not None and v.keeps_dynamic is False else 0
    return (status, lost, 1 if fix.assumes else 0, 1 if v is not None and v.same_outputs is False else 0, index)


def helps(fix: Fix) -> bool:
    """Verified to help without a cost the user did not ask for: the outputs stay, and so do the
    dimensions they asked to be dynamic."""
    v = fix.verification
    return v is not None and v.status in (EXPORT_PASSES, FIXES_THIS) and v.same_outputs is not False and v.keeps_dynamic is not False


def rank(fixes: list[Fix]) -> list[Fix]:
    """Best verified first: export-passes before fixes-this, keeping the requested dynamic dimensions
    before losing one, a rewrite before an assumption, unchanged outputs before changed ones. The first
    is preferred only if it helps (a fix that gives up a dynamic dimension never is); with no
    verification at all the generators' own order and preference stand."""
    if not any(f.verification is not None and f.verification.status != NOT_CHECKED for f in fixes):
        return fixes
    ordered = [f for _, f in sorted(((_rank(f, i), f) for i, f in enumerate(fixes)), key=lambda p: p[0])]
    return [replace(f, is_preferred=(i == 0 and helps(f))) for i, f in enumerate(ordered)]


# -- running ------------------------------------------------------------------------------------


@dataclass
class Verifier:
    """Verifies the fixes of one owner document's findings against its run `base` (which ran with
    `outputs=True` so there is something to compare with; it may be set after `run`)."""

    engine: Engine
    owner: str
    base: FileResult | None
    read: Reader  # the texts `base` ran (overrides, else disk)
    budget: float = 60.0  # seconds for all of this owner's fixes
    jobs: int = 2
    overrides: dict[str, str] = field(default_factory=dict)  # texts every run uses (earlier fixes, the editor's)
    runs: dict[Any, FileResult | str] = field(default_factory=dict)  # fix key → fixed run, or why not run
    document: Document | None = None  # the owner's document (default: `base`'s, else the owner file's)

    def doc(self) -> Document:
        found = self.document or (self.base.document if self.base is not None else None)
        if found is None or found.path != os.path.abspath(self.owner):
            found = document.load(self.owner, self.overrides.get(os.path.abspath(self.owner)))
        return found

    def texts_for(self, fix: Fix) -> dict[str, str] | str:
        """The texts of the files `fix` touches with it applied, or why it cannot be applied."""
        return texts if isinstance(texts := self.applied(fix), str) else texts[1]

    def applied(self, fix: Fix) -> tuple[Document, dict[str, str]] | str:
        """The owner's document and the other files' texts with `fix` applied, or why it cannot be."""
        doc = self.doc()
        own = [e for e in fix.edits if e.file == doc.path]
        other = Fix(fix.title, tuple(e for e in fix.edits if e.file != doc.path))
        texts: dict[str, str] = {}
        for path in {e.file for e in other.edits}:
            text = self.read(path)
            if text is None:
                return f"cannot read {os.path.basename(path)}"
            texts[path] = text
        try:
            fixed = doc.edited(own, self.read) if own else doc
            texts = apply_fix(texts, other)
        except EditError as exc:
            return f"the fix does not apply: {exc}"
        if fixed.text is not None and fixed.script == fixed.path:
            texts[fixed.path] = fixed.text  # a file's own text is a text like the others (make_exportable keeps them)
        return fixed, texts

    async def _run(self, fix: Fix, deadline: float, gate: asyncio.Semaphore) -> None:
        key = fix.key()
        async with gate:
            left = deadline - time.monotonic()
            if left <= 0:
                self.runs[key] = "the time budget for verifying fixes ran out"
                return
            applied = self.applied(fix)
            if isinstance(applied, str):
                self.runs[key] = applied
                return
            doc, texts = applied
            started = time.perf_counter()
            fixed = await self.engine.check(doc, overrides={**self.overrides, **texts}, outputs=True, timeout=min(self.engine.settings.timeout, max(left, 1.0)))
            fixed.facts["__seconds__"] = {"seconds": time.perf_counter() - started}
            self.runs[key] = fixed

    async def run(self, fixes: Iterable[Fix]) -> None:
        """Run every fix not run yet (a fix shared by several findings once), within the budget."""
        deadline = time.monotonic() + self.budget
        gate = asyncio.Semaphore(max(1, self.jobs))
        unique: dict[Any, Fix] = {}
        for f in fixes:
            unique.setdefault(f.key(), f)
        await asyncio.gather(*(self._run(f, deadline, gate) for k, f in unique.items() if k not in self.runs))

    def classify(self, items: list[tuple[Diagnostic, list[Fix]]]) -> list[tuple[Diagnostic, list[Fix]]]:
        """Each finding's fixes with their outcome, ranked."""
        return [(d, rank([self.outcome(d, f) for f in fixes])) for d, fixes in items]

    async def verify(self, items: list[tuple[Diagnostic, list[Fix]]]) -> list[tuple[Diagnostic, list[Fix]]]:
        await self.run(f for _, fixes in items for f in fixes)
        return self.classify(items)

    def outcome(self, d: Diagnostic, fix: Fix) -> Fix:
        run = self.runs.get(fix.key())
        if run is None or isinstance(run, str) or self.base is None:
            detail = run if isinstance(run, str) else "not run"
            ver = Verification(NOT_CHECKED, assumes=fix.assumes, detail=detail)
        else:
            seconds = float(run.facts.get("__seconds__", {}).get("seconds", 0.0))
            ver = classify(d, fix, self.base, run, seconds)
        return replace(fix, verification=ver)


def not_checked(fixes: list[Fix], why: str) -> list[Fix]:
    """Fixes marked as not verified (verification off, untrusted workspace, cancelled)."""
    return [replace(f, verification=Verification(NOT_CHECKED, assumes=f.assumes, detail=why)) for f in fixes]


async def verify_result(
    engine: Engine, result: FileResult, *, read: Reader, budget: float = 60.0, jobs: int = 2, overrides: dict[str, str] | None = None
) -> Verifier:
    """Give every problem of `result` its fixes, verified and ranked (in place)."""
    from exportlens import fix_registry

    items = [(d, fix_registry.fixes_for(d, read, result.document)) for d in to_verify(result.diagnostics)]
    verifier = Verifier(engine, result.path, result, read, budget, jobs, dict(overrides or {}))
    for d, fixes in await verifier.verify([(d, f) for d, f in items if f]):
        d.fixes = fixes
    return verifier
