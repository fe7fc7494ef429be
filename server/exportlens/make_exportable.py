""" "Make it export": check → apply the best verified fix of each finding → check again.

The loop a user really wants from quick fixes. Every round verifies each finding's fixes (see
`verify`), takes the best one that helps (assumption fixes only when allowed), applies them all
at once in memory and re-checks. A round that does not leave fewer problems (or that breaks the
target, or changes what the model computes) is not kept: the single best fix, whose run is
already known, is taken instead. It stops when export passes, when no verified fix helps, or
after `rounds`. Nothing is written here: the caller gets the texts (the CLI writes them with
`--write`, the editor shows them as one WorkspaceEdit for confirmation).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from exportlens import codes
from exportlens.engine import Engine, FileResult
from exportlens.fixes import EditError, apply_edits
from exportlens.model import EXPORT_PASSES, NOT_CHECKED, OUTCOMES, Diagnostic, Fix, TextEdit
from exportlens.verify import breaks_target, helps, problems, same_outputs, verify_result

Reader = Callable[[str], "str | None"]


@dataclass
class Step:
    """One applied fix: which finding, where, and what its verification said."""

    title: str
    file: str
    line: int  # 1-based, in the text of the round it was applied in
    code: str
    status: str


@dataclass
class Outcome:
    owner: str
    original: dict[str, str] = field(default_factory=dict)  # file → text before any fix
    texts: dict[str, str] = field(default_factory=dict)  # file → text after the kept fixes
    rounds: int = 0
    steps: list[Step] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # assumption fixes not taken, and why
    unwritten: list[tuple[str, int, str]] = field(default_factory=list)  # `dynamic`: (file, line, why) of a hint whose spec was not taken
    passes: bool = False
    remaining: list[Diagnostic] = field(default_factory=list)
    stopped: str = ""

    def not_taken(self) -> list[str]:
        """What was left out, and why: assumption fixes, and could-be-dynamic specs not written."""
        return self.skipped + [f"{os.path.relpath(f)}:{line}: could-be-dynamic: {why}" for f, line, why in self.unwritten]

    def changed(self) -> dict[str, tuple[str, str]]:
        return {p: (self.original[p], t) for p, t in sorted(self.texts.items()) if self.original.get(p) != t}

    def summary(self) -> str:
        fixes = len(self.steps)
        head = f"{self.rounds} round{'s' if self.rounds != 1 else ''}, {fixes} fix{'es' if fixes != 1 else ''}"
        if self.passes:
            return f"{head}, export passes"
        left = len(problems(self.remaining))
        tail = f"{left} problem{'s' if left != 1 else ''} remain{'s' if left == 1 else ''}" if left else "export still fails"
        return f"{head}, {tail} ({self.stopped})" if self.stopped else f"{head}, {tail}"


def export_passes(result: FileResult) -> bool:
    """No problem left, every target ran, and plain export passed on every export target."""
    if problems(result.diagnostics) or not result.targets or not result.ran:
        return False
    for t in result.targets:
        if t.status != "ok":
            return False
        if t.kind == "export" and result.facts.get(t.name, {}).get("plain_export") != "ok":
            return False
    return True


def _apply(texts: dict[str, str], fixes: list[Fix]) -> dict[str, str] | None:
    """All fixes applied at once (they were computed on the same texts); None if they clash."""
    by_file: dict[str, list[TextEdit]] = {}
    for f in fixes:
        for e in f.edits:
            by_file.setdefault(e.file, []).append(e)
    out = dict(texts)
    try:
        for path, edits in by_file.items():
            out[path] = apply_edits(texts[path], edits, validate=True)
    except (EditError, KeyError):
        return None
    return out


def _better(trial: FileResult, base: FileResult, fixes: list[Fix]) -> bool:
    """Fewer problems, nothing newly broken, and the models still compute the same (unless a fix
    changed the example inputs themselves: then the outputs cannot be compared)."""
    if len(problems(trial.diagnostics)) >= len(problems(base.diagnostics)):
        return False
    had = {d.code for d in base.diagnostics}
    if any(breaks_target(d) and d.code not in had for d in trial.diagnostics):
        return False
    if any(t.status in ("crashed", "timeout") for t in trial.targets):
        return False
    if any(f.changes_example for f in fixes):
        return True
    return all(same_outputs(base.facts.get(t.name), trial.facts.get(t.name)) is not False for t in base.targets if t.name in trial.facts)


async def make_exportable(
    engine: Engine, path: str, *, read: Reader, assume: bool = False, rounds: int = 5, budget: float = 120.0, jobs: int = 2, dynamic: bool = False
) -> Outcome:
    """Fix `path`'s targets until export passes; the result holds the new texts, nothing written.
    `dynamic`: then take each could-be-dynamic hint's verified spec too (`exportlens fix --dynamic`)."""
    path = os.path.abspath(path)
    out = Outcome(path)
    texts: dict[str, str] = {}

    def current(p: str) -> str | None:
        if p in texts:
            return texts[p]
        text = read(p)
        if text is not None and p not in out.original:
            out.original[p] = text
        return text

    first = current(path)
    if first is None:
        out.stopped = f"cannot read {os.path.basename(path)}"
        return out
    texts[path] = first
    base = await engine.check_file(path, overrides=dict(texts), outputs=True)
    while not export_passes(base):
        if out.rounds >= rounds:
            out.stopped = f"stopped after {rounds} rounds"
            break
        if any(t.status in ("crashed", "timeout") for t in base.targets) or not base.ran:
            out.stopped = "the target did not run to the end"
            break
        verifier = await verify_result(engine, base, read=current, budget=budget, jobs=jobs, overrides=texts)
        chosen: list[tuple[Diagnostic, Fix]] = []
        seen: set[object] = set()
        for d in problems(base.diagnostics):
            helping = [f for f in d.fixes if helps(f)]
            allowed = [f for f in helping if assume or not f.assumes]
            if helping and not allowed:
                out.skipped.append(f"{os.path.relpath(d.file)}:{d.range.start.line + 1}: {helping[0].title} (an assumption: pass --assume to take it)")
            if allowed and allowed[0].key() not in seen:
                seen.add(allowed[0].key())
                chosen.append((d, allowed[0]))
        if not chosen:
            out.stopped = "no verified fix helps" if not out.skipped else "only assumption fixes help"
            break
        out.rounds += 1
        combined = _apply(texts | {p: t for p in {e.file for _, f in chosen for e in f.edits} if (t := current(p)) is not None}, [f for _, f in chosen])
        trial = None
        if combined is not None and len(chosen) > 1:
            trial = await engine.check_file(path, overrides=combined, outputs=True)
        if trial is not None and combined is not None and (_better(trial, base, [f for _, f in chosen]) or export_passes(trial)):
            kept = chosen
            texts, base = combined, trial
        else:  # one at a time: the best single fix, whose run the verification already made
            d, fix = min(chosen, key=lambda c: _order(c[1]))
            run = verifier.runs.get(fix.key())
            single = verifier.texts_for(fix)
            if not isinstance(run, FileResult) or isinstance(single, str):
                out.stopped = "the verified fix could not be applied again"
                break
            if not (_better(run, base, [fix]) or export_passes(run)):
                out.stopped = "no fix leaves fewer problems"
                break
            kept = [(d, fix)]
            texts = texts | single
            base = run
        for d, fix in kept:
            status = fix.verification.status if fix.verification else ""
            out.steps.append(Step(fix.title, d.file, d.range.start.line + 1, d.code, status))
    if dynamic and export_passes(base):
        texts, base = await _make_dynamic(engine, base, out, texts, current, budget, jobs)
    out.texts = {p: t for p, t in texts.items()}
    for p in out.texts:
        out.original.setdefault(p, read(p) or "")
    out.passes = export_passes(base)
    out.remaining = problems(base.diagnostics)
    return out


async def _make_dynamic(
    engine: Engine, base: FileResult, out: Outcome, texts: dict[str, str], current: Reader, budget: float, jobs: int
) -> tuple[dict[str, str], FileResult]:
    """The model exports: take the verified spec of its could-be-dynamic hint (one target's at a time,
    each only if export still passes with it), as the last step."""

    def reading(p: str) -> str | None:  # the texts as this loop left them (a second target's fix is made on the first's result)
        return texts[p] if p in texts else current(p)

    for _ in range(len(base.targets)):
        hints = [d for d in base.diagnostics if codes.record(d.code).makes_dynamic]
        if not hints:
            break
        verifier = await verify_result(engine, base, read=reading, budget=budget, jobs=jobs, overrides=texts)
        d = hints[0]
        fix = next((f for f in d.fixes if f.is_preferred and helps(f) and f.verification is not None and f.verification.status == EXPORT_PASSES), None)
        run = verifier.runs.get(fix.key()) if fix is not None else None
        single = verifier.texts_for(fix) if fix is not None else "no verified spec"
        if fix is None or not isinstance(run, FileResult) or isinstance(single, str) or not export_passes(run):
            from exportlens import fix_registry

            why = "; ".join(fix_registry.refusals_for(d, reading, base.document)[1]) or "no spec that plain export verified"
            out.unwritten.append((d.file, d.range.start.line + 1, why))
            break
        out.rounds += 1
        out.steps.append(Step(fix.title, d.file, d.range.start.line + 1, d.code, EXPORT_PASSES))
        texts, base = texts | single, run
    return texts, base


def _order(fix: Fix) -> int:
    v = fix.verification
    return OUTCOMES.index(v.status) if v is not None and v.status in OUTCOMES else OUTCOMES.index(NOT_CHECKED)
