"""Draft export beside plain export (worker/beside.py): the same events as one after the other,
the fork used only where plain export leaves draft export's arguments as the user wrote them,
and the engine asks for it only where the file's last run needed a draft export that took long."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLES, SyncEngine

from exportlens import document
from exportlens.engine import BESIDE_AFTER
from exportlens.protocol import JobEvent

pytestmark = [pytest.mark.torch, pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="the fork runs only where a second core is free")]

# what differs between any two runs: the log tail has times; where the probe ran ("beside": beside
# plain export only where no draft export is)
VARYING = {"seconds", "id", "pid", "draft_beside", "beside", "stderr"}


def _events(engine: SyncEngine, path: Path, beside: bool) -> list[JobEvent]:
    async def run() -> list[JobEvent]:
        plan = engine.engine.plan(document.load(str(path)))
        assert plan.targets is not None and plan.source is not None
        job = plan.targets.job(plan.path, plan.root)
        job["source"] = plan.source.text
        job["outputs"] = True
        if beside:
            job["draft_beside"] = True
        return [e async for e in engine.engine.worker.run(job, timeout=300)]

    result: list[JobEvent] = engine.call(run())
    return result


def _steady(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _steady(v) for k, v in value.items() if k not in VARYING}
    if isinstance(value, list):
        return [_steady(v) for v in value]
    return value


def _same_parts(events: list[JobEvent]) -> list[Any]:
    return [_steady(e) for e in events if e["event"] != "started"]


@pytest.mark.parametrize(
    ("example", "beside"),
    [
        ("data_dependent/tensor_branch.py", True),  # plain export fails on a data-dependent guard: the fork's draft export is taken
        ("data_dependent/item_branch.py", False),  # the script's own export call: the script goes on with draft export's program, so no fork
        ("missing_fake/model.py", True),  # a custom op without a fake kernel: likewise
        ("constraint/model.py", False),  # a violated Dim: draft export runs after, with the Dims torch suggests; the fork is killed
        ("clean/model.py", False),  # plain export passes, no custom op: no draft export at all; the fork is killed
    ],
)
def test_draft_export_beside_plain_export_gives_the_same_events(engine: SyncEngine, example: str, beside: bool) -> None:
    path = EXAMPLES / example
    alone = _events(engine, path, beside=False)
    forked = _events(engine, path, beside=True)
    assert _same_parts(forked) == _same_parts(alone)
    targets = [e for e in forked if e["event"] == "target"]
    assert [bool(t.get("draft_beside")) for t in targets] == [beside] * len(targets)
    assert not any(e.get("draft_beside") for e in alone)


SLOW_GUARD = """import time

import torch


class Slow(torch.nn.Module):
    def forward(self, x):
        time.sleep(0.6)  # every export of it takes this long: draft export too
        if x.sum() > 0:
            return x + 1
        return x - 1


model = Slow()
example_args = (torch.ones(3),)
"""


def test_the_engine_asks_for_it_where_the_last_run_needed_a_long_draft_export(engine: SyncEngine, tmp_path: Path) -> None:
    guard = tmp_path / "guard.py"
    guard.write_text(SLOW_GUARD)
    assert not engine.engine.draft_beside_for(str(guard))  # never run: plain export first, alone
    first = engine.check(guard)
    assert [(d.code, d.range.start.line + 1) for d in first.diagnostics] == [("data-dependent-guard", 9)]
    assert engine.engine.draft_beside_for(str(guard))
    again = engine.check(guard)
    assert [(d.code, d.range, d.message) for d in again.diagnostics] == [(d.code, d.range, d.message) for d in first.diagnostics]
    guard.write_text(SLOW_GUARD.replace("        if x.sum() > 0:\n            return x + 1\n", ""))  # fixed: draft export is not needed
    assert [d.code for d in engine.check(guard).diagnostics] == ["could-be-dynamic"]  # x's length: a hint, no problem
    assert not engine.engine.draft_beside_for(str(guard))
    quick = tmp_path / "quick.py"  # a draft export of 0.05 s: a fork would cost more than it saves
    quick.write_text((EXAMPLES / "data_dependent/tensor_branch.py").read_text())
    drafted = _DraftClock()
    assert [d.code for d in engine.check(quick, on_phase=drafted.phase, on_target=drafted.target).diagnostics] == ["data-dependent-guard"]
    # on a busy machine even this draft export may take BESIDE_AFTER: the rule, on the seconds it really took
    assert engine.engine.draft_beside_for(str(quick)) == (drafted.seconds >= BESIDE_AFTER), drafted.seconds


class _DraftClock:
    """The seconds a run's draft exports took, timed as the engine times them (from the "draft export"
    phase to the target's report), so a test can hold the engine to its rule on a machine of any speed."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._began: float | None = None

    def phase(self, phase: str, target: str) -> None:
        self._began = time.perf_counter() if phase == "draft export" else None

    def target(self, result: object) -> None:
        if self._began is not None:
            self.seconds, self._began = self.seconds + time.perf_counter() - self._began, None
