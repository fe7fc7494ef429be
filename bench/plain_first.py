"""Plain export first: ExportLens against the user's own export, side by side in one run (a benchmark).

The model is `bench/models/transformer.py` (a 3-block transformer with a dynamic batch, random
weights) and, failing, `bench/models/transformer_branch.py` (the same with a data-dependent branch
in its third block). Goals (issue 18):

1. A model that exports, cold, whole process: `exportlens check T` ≤ 1.2 × `python` + import torch +
   build + `torch.export.export` (bench/cold_script.py).
2. The same model, warm (the editor's case: a warm worker): the engine's check ≤ 1.2 × in-process
   plain export + 50 ms.
3. The failing model, warm: the first diagnostic (the engine's early findings, what the editor
   publishes before draft export starts) ≤ 1.3 × in-process plain export's time to its error; all
   findings ≤ 1.1 × in-process draft export alone.

Runs alternate ExportLens and the baseline so machine load hits both alike. BENCH_REPEATS (5) and
BENCH_COLD_RUNS (5) set the counts.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "server"))

from baseline import InProcess, timed  # noqa: E402

from exportlens.engine import Engine, EngineSettings  # noqa: E402

EXPORTS = ROOT / "bench/models/transformer.py"
FAILS = ROOT / "bench/models/transformer_branch.py"
REPEATS = int(os.environ.get("BENCH_REPEATS", "5"))
COLD_RUNS = int(os.environ.get("BENCH_COLD_RUNS", "5"))


class Clock:
    """Seconds since it was made; `first` notes the first call (the engine's early findings)."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.marks: list[float] = []

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def first(self, _findings: object) -> None:
        if not self.marks:
            self.marks.append(self.elapsed())


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def verdict(ours: float, goal: float) -> str:
    return "met" if ours <= goal else "MISSED"


async def warm_exports(engine: Engine) -> tuple[float, float]:
    base = InProcess(EXPORTS, "plain")
    await engine.check_file(str(EXPORTS))
    ours, theirs = [], []
    try:
        for _ in range(REPEATS):
            theirs.append(base.once())
            started = time.perf_counter()
            result = await engine.check_file(str(EXPORTS))
            ours.append(time.perf_counter() - started)
            assert not [d for d in result.diagnostics if d.problem], result.diagnostics
    finally:
        base.close()
    return statistics.median(theirs), statistics.median(ours)


async def warm_fails(engine: Engine) -> tuple[float, float, float, float]:
    plain, draft = InProcess(FAILS, "plain"), InProcess(FAILS, "draft")
    firsts, alls, to_error, drafts = [], [], [], []
    try:
        for _ in range(REPEATS):
            to_error.append(plain.once())
            drafts.append(draft.once())
            clock = Clock()
            result = await engine.check_file(str(FAILS), on_early=clock.first)
            alls.append(clock.elapsed())
            first = clock.marks
            assert first, "plain export failed, so the engine must say so before draft export runs"
            assert [d.code for d in result.diagnostics if d.problem] == ["data-dependent-guard"], result.diagnostics
            firsts.append(first[0])
    finally:
        plain.close()
        draft.close()
    return statistics.median(to_error), statistics.median(firsts), statistics.median(drafts), statistics.median(alls)


async def main() -> None:
    engine = Engine(EngineSettings())
    await engine.start()
    print(f"plain export first (torch {engine.torch_version}; {load()})")
    base, ours = await warm_exports(engine)
    goal = 1.2 * base + 0.050
    print(
        f"  exports, warm, median of {REPEATS}: engine {ours:.2f} s vs in-process torch.export.export {base:.2f} s: {ours / base:.2f}x "
        f"({verdict(ours, goal)}: goal <= 1.2x + 50 ms) [{load()}]"
    )
    plain, first, draft, everything = await warm_fails(engine)
    print(
        f"  fails, warm, median of {REPEATS}: first diagnostic {first:.2f} s vs plain export's error {plain:.2f} s: {first / plain:.2f}x "
        f"({verdict(first, 1.3 * plain)}: goal <= 1.3x) [{load()}]"
    )
    print(
        f"  fails, warm, median of {REPEATS}: all findings {everything:.2f} s vs draft export alone {draft:.2f} s: {everything / draft:.2f}x "
        f"({verdict(everything, 1.1 * draft)}: goal <= 1.1x) [{load()}]"
    )
    await engine.close()
    cli, script = [], []
    for _ in range(COLD_RUNS):  # interleaved
        cli.append(timed([sys.executable, "-m", "exportlens", "check", str(EXPORTS)]))
        script.append(timed([sys.executable, str(ROOT / "bench/cold_script.py"), str(EXPORTS)]))
    c, s = statistics.median(cli), statistics.median(script)
    print(
        f"  exports, cold, whole process, median of {COLD_RUNS}: exportlens check {c:.2f} s vs python + torch.export.export {s:.2f} s: "
        f"{c / s:.2f}x ({verdict(c, 1.2 * s)}: goal <= 1.2x) [{load()}]"
    )


if __name__ == "__main__":
    asyncio.run(main())
