"""Fix verification: each fix re-run in memory and given one outcome, and the outcome is true.

Units first (line shifts, output comparison, ranking), then real runs through the warm worker
with real torch: exact outcomes on the examples, and the oracle: every `export-passes` fix,
applied to a copy and exported with plain `torch.export.export` in a fresh interpreter, passes;
every `no-effect` fix leaves export failing.
"""

from __future__ import annotations

import os
import shutil
import textwrap
from pathlib import Path

import pytest
from conftest import EXAMPLES, SyncEngine, plain_export

from exportlens import verify
from exportlens.fix_registry import read_disk
from exportlens.fixes import apply_fix
from exportlens.model import (
    BREAKS,
    EXPORT_PASSES,
    FIXES_THIS,
    NO_EFFECT,
    NOT_CHECKED,
    Diagnostic,
    Fix,
    Range,
    TextEdit,
    Verification,
)

pytestmark = pytest.mark.torch


def _edit(line: int, end_line: int, text: str) -> TextEdit:
    return TextEdit("f.py", Range.of(line, 0, end_line, 0), text)


# -- units ----------------------------------------------------------------------------------------


def test_line_shift_of_an_insertion() -> None:
    shift = verify.LineShift.of([_edit(5, 5, "        torch._check(n > 2)\n")])
    assert [shift.line(n) for n in (0, 4, 5, 6, 9)] == [0, 4, 6, 7, 10]
    assert shift.region(5) is None


def test_line_shift_of_a_rewrite() -> None:
    shift = verify.LineShift.of([_edit(3, 5, "a\nb\nc\nd\n")])  # lines 3-4 become four lines
    assert [shift.line(n) for n in (2, 3, 4, 5, 8)] == [2, None, None, 7, 10]
    assert shift.region(3) == (3, 6) and shift.region(4) == (3, 6)


def test_line_shift_of_two_edits() -> None:
    shift = verify.LineShift.of([_edit(8, 10, "x\n"), _edit(2, 2, "i\nj\n")])
    assert [shift.line(n) for n in (1, 2, 7, 8, 9, 10)] == [1, 4, 9, None, None, 11]
    assert shift.region(9) == (10, 10)


def test_same_outputs() -> None:
    a = {"outputs": [{"shape": [2], "dtype": "torch.float32", "hash": "aa", "sum": 3.0, "abs_sum": 3.0}]}
    near = {"outputs": [{"shape": [2], "dtype": "torch.float32", "hash": "bb", "sum": 3.0000000001, "abs_sum": 3.0}]}
    far = {"outputs": [{"shape": [2], "dtype": "torch.float32", "hash": "cc", "sum": 4.0, "abs_sum": 4.0}]}
    assert verify.same_outputs(a, a) is True
    assert verify.same_outputs(a, near) is True
    assert verify.same_outputs(a, far) is False
    assert verify.same_outputs(a, {"outputs_error": "RuntimeError: x"}) is False
    assert verify.same_outputs(a, None) is None


def _fix(title: str, status: str, *, assumes: str | None = None, same: bool | None = True, preferred: bool = False) -> Fix:
    return Fix(title, (), preferred, assumes, Verification(status, same_outputs=same, assumes=assumes))


def test_rank_prefers_the_best_verified_rewrite() -> None:
    ranked = verify.rank(
        [
            _fix("check", EXPORT_PASSES, assumes="n > 2", preferred=True),
            _fix("other", BREAKS, same=False),
            _fix("cond", EXPORT_PASSES),
            _fix("nothing", NO_EFFECT),
        ]
    )
    assert [(f.title, f.is_preferred) for f in ranked] == [("cond", True), ("check", False), ("nothing", False), ("other", False)]


def test_rank_prefers_nothing_when_nothing_helps() -> None:
    ranked = verify.rank([_fix("a", NO_EFFECT, preferred=True), _fix("b", BREAKS)])
    assert [(f.title, f.is_preferred) for f in ranked] == [("a", False), ("b", False)]
    unverified = [_fix("a", NOT_CHECKED, preferred=True), _fix("b", NOT_CHECKED)]
    assert verify.rank(unverified) == unverified


# -- real runs ------------------------------------------------------------------------------------


def _verified(engine: SyncEngine, path: Path) -> list[Diagnostic]:
    result = engine.check(path, outputs=True)
    engine.call(verify.verify_result(engine.engine, result, read=read_disk, budget=240))
    return verify.problems(result.diagnostics)


def _outcomes(d: Diagnostic) -> list[tuple[str, str | None, str, tuple[str, ...], bool | None, bool]]:
    out = []
    for f in d.fixes:
        assert f.verification is not None
        v = f.verification
        out.append((f.title.split(" — ")[0].split(" (")[0], f.assumes, v.status, v.remaining, v.same_outputs, f.is_preferred))
    return out


def test_item_branch_outcomes(engine: SyncEngine, examples_copy: Path) -> None:
    (d,) = _verified(engine, examples_copy / "data_dependent" / "item_branch.py")
    assert _outcomes(d) == [
        ("Rewrite this if/return as `torch.cond`", None, EXPORT_PASSES, (), True, True),
        ("Add `torch._check(n > 2)`", "n > 2", EXPORT_PASSES, (), True, False),
        ("Add `torch._check(n <= 2)`", "n <= 2", BREAKS, (), False, False),  # plain export passes; the model raises
    ]
    assumption = d.fixes[1]
    assert assumption.title == "Add `torch._check(n > 2)` — assumes `n > 2` for every input; inputs with n ≤ 2 will raise"
    assert (d.fixes[2].verification.detail if d.fixes[2].verification else "").startswith("the model now raises on its example inputs: RuntimeError")
    assert all(0 < (f.verification.seconds if f.verification else 0) < 120 for f in d.fixes)


def test_two_branches_each_fix_leaves_the_other(engine: SyncEngine, examples_copy: Path) -> None:
    first, second = _verified(engine, examples_copy / "data_dependent" / "two_branches.py")
    assert (first.range.start.line, second.range.start.line) == (7, 9)
    for d in (first, second):
        assert [(f.verification.status, f.verification.remaining) for f in d.fixes if f.verification] == [(FIXES_THIS, ("data-dependent-guard",))] * 2
        assert d.fixes[0].is_preferred and d.fixes[0].assumes is None  # the torch.cond rewrite


def test_a_fix_that_changes_nothing_is_no_effect(engine: SyncEngine, project: Path) -> None:
    """A fix that only adds lines above the finding: the finding comes back one line lower."""
    model = project / "model.py"
    shutil.copy(EXAMPLES / "data_dependent" / "item_branch.py", model)
    result = engine.check(model, outputs=True)
    (d,) = verify.problems(result.diagnostics)
    useless = Fix("Add a comment", (TextEdit(str(model), Range.of(8, 0, 8, 0), "        # n is a number\n"),), True)
    verifier = verify.Verifier(engine.engine, str(model), result, read_disk, budget=120)
    ((_, (fix,)),) = engine.call(verifier.verify([(d, [useless])]))
    assert fix.verification is not None
    assert (fix.verification.status, fix.verification.remaining, fix.verification.same_outputs) == (NO_EFFECT, ("data-dependent-guard",), True)
    assert not fix.is_preferred


def test_budget_spent_means_not_checked(engine: SyncEngine, examples_copy: Path) -> None:
    path = examples_copy / "data_dependent" / "item_branch.py"
    result = engine.check(path, outputs=True)
    engine.call(verify.verify_result(engine.engine, result, read=read_disk, budget=0))
    (d,) = verify.problems(result.diagnostics)
    assert {(f.verification.status, f.verification.detail) for f in d.fixes if f.verification} == {(NOT_CHECKED, "the time budget for verifying fixes ran out")}
    assert d.fixes[0].is_preferred  # unverified: the generators' own preference stands


# -- the oracle: outcomes are true ----------------------------------------------------------------


NO_EFFECT_MODEL = textwrap.dedent("""\
    import torch


    class Gate(torch.nn.Module):
        def forward(self, x):
            n = x.item()
            if n > 2:
                return x * 2
            return x


    model = Gate()
    example_args = (torch.tensor(5),)
""")


def test_every_export_passes_fix_exports_and_every_no_effect_fix_does_not(engine: SyncEngine, tmp_path: Path) -> None:
    work = tmp_path / "examples"
    shutil.copytree(EXAMPLES, work, ignore=shutil.ignore_patterns("__pycache__", "compile", "trace"))
    corpus = work / "corpus"  # a finding whose only offered fix (added here) has no effect
    corpus.mkdir()
    (corpus / "gate.py").write_text(NO_EFFECT_MODEL)
    cases: list[tuple[Path, Diagnostic, Fix]] = []
    for path in sorted(p for p in work.rglob("*.py") if p.name != "layers.py"):
        result = engine.check(path, outputs=True)
        if not verify.problems(result.diagnostics):
            continue
        if path.parent == corpus:
            (d,) = verify.problems(result.diagnostics)
            d.fixes = [Fix("comment", (TextEdit(str(path), Range.of(5, 0, 5, 0), "        # n > 2 here\n"),))]
            verifier = verify.Verifier(engine.engine, str(path), result, read_disk, budget=120)
            for dd, fixes in engine.call(verifier.verify([(d, d.fixes)])):
                dd.fixes = fixes
        else:
            engine.call(verify.verify_result(engine.engine, result, read=read_disk, budget=240))
        cases += [
            (path, d, f) for d in verify.problems(result.diagnostics) for f in d.fixes if f.verification and f.verification.status in (EXPORT_PASSES, NO_EFFECT)
        ]
    statuses = [f.verification.status for _, _, f in cases if f.verification]
    assert statuses.count(EXPORT_PASSES) >= 15 and statuses.count(NO_EFFECT) >= 1, statuses

    unique: dict[object, tuple[Path, Diagnostic, Fix]] = {}
    for owner, d, f in cases:
        unique.setdefault(f.key(), (owner, d, f))

    def fixed_copy(index: int, owner: Path, fix: Fix) -> Path:
        """A copy of the examples with `fix` applied: the path of its `owner` there."""
        copy = tmp_path / f"fix{index}"
        shutil.copytree(work, copy)
        texts = {e.file: Path(e.file).read_text() for e in fix.edits}
        for path, new in apply_fix(texts, fix).items():
            (copy / os.path.relpath(path, work)).write_text(new)
        return copy / os.path.relpath(owner, work)

    copies = [fixed_copy(index, owner, fix) for index, (owner, _, fix) in enumerate(unique.values())]
    # plain export judges each fixed file (it imports its helpers from its own copy) apart, as a fresh interpreter would
    verdicts = plain_export(*copies, each=True)
    found = []
    for path, (owner, d, fix) in zip(copies, unique.values(), strict=True):
        mine = [v for k, v in verdicts[str(path)].items() if k.startswith(owner.name + ":")]
        assert len(mine) == 1, verdicts[str(path)]
        assert fix.verification is not None
        if fix.verification.keeps_dynamic and mine[0]["result"] == "ok":  # a fix said to keep the requested dimensions dynamic really does
            assert mine[0]["dynamic"] == mine[0]["requested"], (fix.title, mine[0])
        found.append((fix.verification.status, str(mine[0]["result"]), f"{os.path.relpath(d.file, work)}: {fix.title}"))
    wrong = [(status, verdict, what) for status, verdict, what in found if (verdict == "ok") != (status == EXPORT_PASSES)]
    passes = sum(1 for status, verdict, _ in found if status == EXPORT_PASSES and verdict == "ok")
    print(
        f"\nverified fixes: {passes}/{sum(1 for s, _, _ in found if s == EXPORT_PASSES)} export-passes fixes export "
        f"with plain torch.export.export; {sum(1 for s, v, _ in found if s == NO_EFFECT and v != 'ok')}/"
        f"{sum(1 for s, _, _ in found if s == NO_EFFECT)} no-effect fixes still fail"
    )
    assert wrong == []


@pytest.mark.parametrize("name", ["data_dependent/tensor_branch.py"])
def test_verification_does_not_touch_the_disk(engine: SyncEngine, examples_copy: Path, name: str) -> None:
    path = examples_copy / name
    before = path.read_text()
    _verified(engine, path)
    assert path.read_text() == before
    assert not list(path.parent.glob("__pycache__/tensor_branch*"))
