"""Replay recorded worker events through the real engine, findings, placement and fixes, without torch.

A case is one file checked once by the real worker (`tools/record_events.py` records it):
`tests/fixtures/events/<case>.json` holds the job the engine sent and the events the worker
answered; `<case>.expected.json` holds what the engine made of them (targets, diagnostics with
their data and quick fixes). Replaying swaps the engine's `WorkerClient` for `ReplayWorker`, so
everything but the worker runs for real: planning, findings, placement, merging, fixes.

Paths in the fixtures are written with placeholders ({examples}, {sources}, {repo}, {python},
{tmp}) so they do not depend on the machine that recorded them.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "server") not in sys.path:
    sys.path.insert(0, str(ROOT / "server"))

from exportlens import fix_registry as registry  # noqa: E402
from exportlens.engine import Engine, EngineSettings, FileResult  # noqa: E402
from exportlens.options import DEFAULT_TIMEOUT  # noqa: E402
from exportlens.protocol import JobEvent, JobSpec  # noqa: E402

EVENTS = ROOT / "tests" / "fixtures" / "events"
SOURCES = EVENTS / "sources"
EXAMPLES = ROOT / "examples"


@dataclass(frozen=True)
class Case:
    name: str
    file: Path  # the file checked
    timeout: float = 60.0  # the job's time limit when it was recorded


def _example_cases() -> list[Case]:
    expected = json.loads((EXAMPLES / "EXPECTED.json").read_text(encoding="utf-8"))["examples"]
    return [Case(name.removesuffix(".py").replace("/", "__"), EXAMPLES / name) for name in expected]


TIMEOUTS = {"slow_model": 3.0}  # cases recorded with a shorter time limit than Case's default


def _source_cases() -> list[Case]:
    """The cases for what no example shows, found rather than listed: every file directly under
    sources/ whose first line opens the docstring saying what it shows (a file without one is a
    helper a case imports), and every folder there with a `model.py` (a case with its own
    pyproject.toml)."""
    files = [p for p in sorted(SOURCES.glob("*.py")) if p.read_text(encoding="utf-8").startswith('"""')]
    files += sorted(SOURCES.glob("*/model.py"))
    names = [p.stem if p.parent == SOURCES else p.parent.name for p in files]
    return [Case(name, path, TIMEOUTS.get(name, Case.timeout)) for name, path in zip(names, files, strict=True)]


# Every bundled example, then the cases for the codes no example shows.
CASES: list[Case] = _example_cases() + _source_cases()
CASES_BY_NAME = {c.name: c for c in CASES}


def _places() -> list[tuple[str, str]]:
    """(real path, placeholder), most specific first."""
    places = [
        (str(EXAMPLES), "{examples}"),
        (str(SOURCES), "{sources}"),
        (str(ROOT), "{repo}"),
        (sys.base_prefix, "{python}"),
        (tempfile.gettempdir(), "{tmp}"),
    ]
    return [(real, ph) for real, ph in places if real and real != os.sep]


def to_placeholders(value: Any) -> Any:
    if isinstance(value, str):
        for real, ph in _places():
            value = value.replace(real, ph)
        return value
    if isinstance(value, list):
        return [to_placeholders(v) for v in value]
    if isinstance(value, dict):
        return {to_placeholders(k): to_placeholders(v) for k, v in value.items()}
    return value


def from_placeholders(value: Any) -> Any:
    if isinstance(value, str):
        for real, ph in _places():
            value = value.replace(ph, real)
        return value
    if isinstance(value, list):
        return [from_placeholders(v) for v in value]
    if isinstance(value, dict):
        return {from_placeholders(k): from_placeholders(v) for k, v in value.items()}
    return value


def load_recording(case: Case) -> dict[str, Any]:
    data: dict[str, Any] = from_placeholders(json.loads((EVENTS / f"{case.name}.json").read_text(encoding="utf-8")))
    return data


def load_expected(case: Case) -> dict[str, Any]:
    data: dict[str, Any] = from_placeholders(json.loads((EVENTS / f"{case.name}.expected.json").read_text(encoding="utf-8")))
    return data


class ReplayWorker:
    """Stands in for `WorkerClient`: answers the one recorded job with the recorded events."""

    def __init__(self, job: JobSpec | None, events: list[JobEvent]) -> None:
        self.job = job
        self.events = events
        self.info: dict[str, Any] = {"event": "ready", "torch": "recorded"}
        self.jobs: list[JobSpec] = []

    async def start(self) -> dict[str, Any]:
        return self.info

    async def close(self) -> None:
        return None

    async def run(self, job: JobSpec, *, timeout: float = DEFAULT_TIMEOUT, memory_mb: int = 0) -> AsyncIterator[JobEvent]:
        self.jobs.append(job)
        if self.job is None:
            raise AssertionError(f"the recording has no job, but the engine sent {job}")
        # The job carries the planned text (`source`, the editor's buffer or one snapshot of the file);
        # recordings keep the job without it, and it must be the file's own text here.
        sent = {k: v for k, v in job.items() if k != "source"}
        if sent != {k: v for k, v in self.job.items() if k != "source"}:
            raise AssertionError(f"the engine sent another job than the recorded one:\n{job}\n!=\n{self.job}")
        if job.get("source") is not None and job["source"] != Path(job["file"]).read_text(encoding="utf-8"):
            raise AssertionError("the job's source is not the file's text")
        for event in self.events:
            yield event


def result_json(result: FileResult) -> dict[str, Any]:
    """What a case's expected file holds: targets (without timings) and diagnostics with data and fixes."""
    registry.attach(result.diagnostics)
    return {
        "targets": [{k: v for k, v in t.to_json().items() if k != "seconds"} for t in result.targets],
        "diagnostics": [d.to_json(with_data=True) for d in result.diagnostics],
    }


async def replay(case: Case, recording: dict[str, Any] | None = None) -> tuple[FileResult, ReplayWorker]:
    recording = recording if recording is not None else load_recording(case)
    engine = Engine(EngineSettings(timeout=case.timeout, warmup=False))
    worker = ReplayWorker(recording["job"], recording["events"])
    engine.worker = worker  # type: ignore[assignment]
    result = await engine.check_file(str(case.file))
    return result, worker


def replay_sync(case: Case, recording: dict[str, Any] | None = None) -> tuple[FileResult, ReplayWorker]:
    return asyncio.run(replay(case, recording))
