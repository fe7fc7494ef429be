"""Progress on long runs: the worker's phases reach the CLI's stderr (never its stdout)."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys

import pytest
from conftest import EXAMPLES, ROOT, SyncEngine

from exportlens.cli_progress import CliProgress

pytestmark = pytest.mark.torch

SLOW = ROOT / "tests" / "fixtures" / "slow" / "slow_forward.py"  # forward sleeps 4 s


def test_a_long_export_shows_its_phase_on_stderr_and_stdout_stays_json() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "server")}
    out = subprocess.run(
        [sys.executable, "-m", "exportlens", "check", str(SLOW), "--format", "json"], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)  # nothing but the document on stdout
    assert [(t["name"], t["status"]) for t in doc["targets"]] == [("model", "ok")]
    assert [d["code"] for d in doc["diagnostics"]] == ["could-be-dynamic"]  # exports; its input's length could be dynamic (a hint)
    said = re.findall(r"^exportlens: model — (exporting), (\d+) s$", out.stderr, re.MULTILINE)
    assert said and said[0][0] == "exporting" and int(said[0][1]) >= 3, out.stderr
    assert "exportlens:" not in out.stdout


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_quiet_for_short_targets_then_every_ten_seconds_and_on_a_new_phase() -> None:
    clock, out = Clock(), io.StringIO()
    p = CliProgress(out, clock)
    p.phase("/p/a.py", "importing", "a.py")
    clock.now += 2.9
    p.tick()
    assert out.getvalue() == ""  # a short import says nothing
    p.phase("/p/a.py", "building the model", "a.py:make")  # a new target starts its own clock
    clock.now += 2.9
    p.tick()
    assert out.getvalue() == ""
    clock.now += 0.2
    p.tick()
    p.tick()
    assert out.getvalue() == "exportlens: a.py:make — building the model, 3 s\n"
    p.phase("/p/a.py", "exporting", "a.py:make")
    clock.now += 1
    p.tick()  # the phase changed after it was named: say so at once
    clock.now += 9.5
    p.tick()
    clock.now += 0.6
    p.tick()
    assert out.getvalue().splitlines()[1:] == ["exportlens: a.py:make — exporting, 4 s", "exportlens: a.py:make — exporting, 14 s"]
    p.file_done("/p/a.py")
    clock.now += 30
    p.tick()
    assert len(out.getvalue().splitlines()) == 3  # a finished file is quiet


def test_the_engine_tells_each_phase_of_a_factory_and_a_script(engine: SyncEngine) -> None:
    seen: list[tuple[str, str]] = []
    engine.check(EXAMPLES / "factory" / "build.py", on_phase=lambda phase, target: seen.append((phase, target)))
    # plain export fails on the data-dependent branch, then draft export runs to find the rest
    assert seen == [
        ("importing", "build.py"),
        ("building the model", "build.py:make_target"),
        ("exporting", "build.py:make_target"),
        ("draft export", "build.py:make_target"),
    ]
    seen.clear()
    engine.check(EXAMPLES / "data_dependent" / "item_branch.py", on_phase=lambda phase, target: seen.append((phase, target)))
    assert seen[0] == ("running the script", "item_branch.py")
    assert [p for p, _ in seen[1:]] == ["exporting", "draft export"]
    seen.clear()
    engine.check(EXAMPLES / "clean" / "model.py", on_phase=lambda phase, target: seen.append((phase, target)))
    assert [p for p, _ in seen] == ["importing", "exporting"]  # it exports: no draft export
