"""The user's export is the judge, without torch: recorded runs replayed with draft export's report
changed, to show what plain export's verdict decides (findings/verdict.py) and how fixes are ranked."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from replay import CASES_BY_NAME, load_recording, replay_sync

from exportlens.model import EXPORT_PASSES, Fix, Verification
from exportlens.verify import helps, rank

pytestmark = pytest.mark.quick


def target_event(recording: dict[str, Any]) -> dict[str, Any]:
    return next(e for e in recording["events"] if e["event"] == "target")


def problems(name: str, change: Any) -> list[tuple[str, int, str]]:
    case = CASES_BY_NAME[name]
    recording = copy.deepcopy(load_recording(case))
    change(target_event(recording))
    result, _ = replay_sync(case, recording)
    return [(d.code, d.range.start.line + 1, d.message[:40]) for d in result.diagnostics if d.problem]


ARTEFACT = {  # what draft export's Dim.AUTO retry reported for shared_kwargs.py before plain export ran first
    "type": "GUARD_ADDED",
    "xfail": False,
    "expr": "Eq(s27, s64)",
    "prefix": "eval",
    "user_stack": [{"file": "{examples}/dynamic_shapes/shared_kwargs.py", "line": 12, "name": "forward", "loc": "hidden = x * mask"}],
    "stack": [],
    "symbol_to_sources": {"s27": "L['x'].size()[1]", "s64": "L['mask'].size()[1]"},
    "frame_locals": {"loc": "hidden = x * mask", "locals": {}, "symbols": {}},
}


def test_draft_exports_own_guards_never_become_findings() -> None:
    def add_artefact(event: dict[str, Any]) -> None:
        event["failures"] = [ARTEFACT]

    assert problems("dynamic_shapes__shared_kwargs", add_artefact) == [("guard-added", 13, "`seq` (`x.shape[1]`, `mask.shape[1]`, Di")]


def test_a_data_dependent_guard_of_a_model_that_exports_is_dropped() -> None:
    def add_guess(event: dict[str, Any]) -> None:
        event["failures"] = [{**ARTEFACT, "type": "DATA_DEPENDENT_ERROR", "expr": "u0 > 2", "result": "True", "occurrences": 1}]

    assert problems("dynamic_shapes__auto_branch", add_guess) == [("dim-specialized", 8, "`x.shape[1]` is marked Dim.AUTO, but the")]


def test_a_failing_plain_export_is_never_clean() -> None:
    """Its failure in a form ExportLens cannot read (no violation parsed, no draft finding): the error as it is."""

    def unreadable(event: dict[str, Any]) -> None:
        event["plain"]["violations"] = []
        event["failures"] = []

    assert problems("dynamic_shapes__range_refine", unreadable) == [("export-error", 18, "torch.export failed: torch._dynamo.exc.U")]


def test_plain_exports_data_dependent_guard_gives_way_to_draft_exports_richer_one() -> None:
    """item_branch.py: both report `n > 2` on line 9; draft export's has the example's value (True)."""
    result, _ = replay_sync(CASES_BY_NAME["data_dependent__item_branch"])
    [d] = result.diagnostics
    assert (d.code, d.range.start.line + 1, d.data["result"]) == ("data-dependent-guard", 9, "True")


def fix(title: str, keeps: bool | None, lost: tuple[str, ...] = ()) -> Fix:
    return Fix(title, (), False, verification=Verification(EXPORT_PASSES, keeps_dynamic=keeps, lost=lost))


def test_a_fix_that_loses_a_dynamic_dimension_is_never_preferred() -> None:
    static = fix("Dim.STATIC", False, ("x.shape[1]",))
    refine = fix("refine", True)
    assert [(f.title, f.is_preferred) for f in rank([static, refine])] == [("refine", True), ("Dim.STATIC", False)]
    assert [(f.title, f.is_preferred) for f in rank([static])] == [("Dim.STATIC", False)]  # the only one that passes: still not preferred
    assert not helps(static) and helps(refine)
    assert static.verification is not None and static.verification.words() == "export passes, but `x.shape[1]` is no longer dynamic"
