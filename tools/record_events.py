"""Record the torch-free test tier's fixtures: real worker events, and what the engine makes of them.

    .venv/bin/python tools/record_events.py                 # every case: run the real worker (torch), then expected
    .venv/bin/python tools/record_events.py CASE...         # only these cases
    .venv/bin/python tools/record_events.py --expected-only # keep the events, recompute <case>.expected.json (no torch)

Each case (tests/torchfree/replay.py finds them: every example in examples/EXPECTED.json, and each
file under tests/fixtures/events/sources/ that opens with its docstring, or folder there with a
model.py) is checked once through the real engine and worker;
the job the engine sent and every event the worker answered go to tests/fixtures/events/<case>.json.
Then the recording is replayed without torch and the result goes to <case>.expected.json.

Re-record after a change to the worker or to torch; recompute the expected files after a change to
findings, placement or fixes, and read the diff: it is the change in what users see.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "server")]

from torchfree.replay import CASES, CASES_BY_NAME, EVENTS, Case, replay_sync, result_json, to_placeholders  # noqa: E402

from exportlens.engine import Engine, EngineSettings  # noqa: E402
from exportlens.options import DEFAULT_TIMEOUT  # noqa: E402
from exportlens.protocol import JobEvent, JobSpec  # noqa: E402
from exportlens.worker_client import WorkerClient  # noqa: E402


def write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=1, ensure_ascii=False, sort_keys=False) + "\n", encoding="utf-8")


async def record(case: Case, worker: WorkerClient) -> dict[str, Any]:
    """Check the case's file with the real (warm, shared) worker; keep the job and the events."""
    engine = Engine(EngineSettings(timeout=case.timeout, memory_mb=2048))
    engine.worker = worker
    real_run = worker.run
    seen: dict[str, Any] = {"job": None, "events": []}

    async def recording_run(job: JobSpec, *, timeout: float = DEFAULT_TIMEOUT, memory_mb: int = 0) -> AsyncIterator[JobEvent]:
        seen["job"] = {k: v for k, v in json.loads(json.dumps(job)).items() if k != "source"}  # the file's own text
        async for event in real_run(job, timeout=timeout, memory_mb=memory_mb):
            if event["event"] != "deps":  # what the job imported: this machine's paths and hashes, for the results cache only
                seen["events"].append(json.loads(json.dumps(event)))
            yield event

    worker.run = recording_run  # type: ignore[method-assign]
    try:
        await engine.check_file(str(case.file))
    finally:
        worker.run = real_run  # type: ignore[method-assign]
    return {"check": str(case.file), "torch": engine.torch_version, "job": seen["job"], "events": seen["events"]}


async def record_all(cases: list[Case]) -> None:
    worker = WorkerClient()
    try:
        for case in cases:
            write_json(EVENTS / f"{case.name}.json", to_placeholders(await record(case, worker)))
            print(f"{case.name}: recorded", file=sys.stderr)
    finally:
        await worker.close()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*", help="case names (default: all)")
    parser.add_argument("--expected-only", action="store_true", help="recompute the expected files from the recorded events")
    args = parser.parse_args(argv)
    unknown = [c for c in args.cases if c not in CASES_BY_NAME]
    if unknown:
        parser.error(f"unknown cases: {', '.join(unknown)} (known: {', '.join(CASES_BY_NAME)})")
    cases = [CASES_BY_NAME[c] for c in args.cases] if args.cases else CASES
    if not args.expected_only:
        asyncio.run(record_all(cases))
    for case in cases:
        result, _ = replay_sync(case)
        write_json(EVENTS / f"{case.name}.expected.json", to_placeholders(result_json(result)))
        print(f"{case.name}: {len(result.diagnostics)} diagnostics", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
