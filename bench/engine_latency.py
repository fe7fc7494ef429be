"""Engine latency, side by side in one run (a benchmark, not a test).

1. Warm: the engine's per-target latency (warm zygote → pre-warmed child → plain export, then draft
   export where it runs → placed findings) against repeated in-process draft_export of the same
   target (what finding all of a failing target's problems takes), alternating one of each.
   Goal: engine ≤ 1.3 × in-process + 50 ms. Against the user's own plain export: bench/plain_first.py.
2. Cold: `exportlens check FILE` (a fresh CLI: start the worker, analyse, exit) against a fresh
   `python` script that imports torch and calls draft_export. Goal: the CLI is no slower.

Runs are interleaved so that machine load hits both sides alike. Prints a table and the ratios.
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

EXAMPLES = [
    "clean/model.py",
    "data_dependent/tensor_branch.py",
    "data_dependent/split_sizes.py",
    "missing_fake/model.py",
    "mismatched_fake/model.py",
    "constraint/model.py",
    "two_files/model.py",
]
REPEATS = int(os.environ.get("BENCH_REPEATS", "9"))
COLD_RUNS = int(os.environ.get("BENCH_COLD_RUNS", "5"))


async def side_by_side(engine: Engine, path: Path) -> tuple[list[float], list[float]]:
    """Alternate one in-process draft_export and one engine check, REPEATS times each."""
    base = InProcess(path)
    await engine.check_file(str(path))  # the same footing as the baseline's warm-up call
    ours, theirs = [], []
    try:
        for _ in range(REPEATS):
            theirs.append(base.once())
            started = time.perf_counter()
            await engine.check_file(str(path))
            ours.append(time.perf_counter() - started)
    finally:
        base.close()
    return theirs, ours


async def main() -> None:
    engine = Engine(EngineSettings())
    await engine.start()
    print(f"warm per-target latency, median of {REPEATS} (seconds)")
    print(f"{'example':34} {'in-process':>10} {'engine':>8} {'ratio':>6} {'goal':>7}")
    met = True
    for name in EXAMPLES:
        path = ROOT / "examples" / name
        theirs, mine = await side_by_side(engine, path)
        base, ours = statistics.median(theirs), statistics.median(mine)
        goal = 1.3 * base + 0.050
        met &= ours <= goal
        print(f"{name:34} {base:10.3f} {ours:8.3f} {ours / base:6.2f} {'ok' if ours <= goal else 'MISSED':>7}")
    await engine.close()
    print(f"warm goal (engine <= 1.3 x in-process + 50 ms): {'met' if met else 'MISSED'}")

    target = ROOT / "examples/data_dependent/tensor_branch.py"
    cli, script = [], []
    for _ in range(COLD_RUNS):  # interleaved
        cli.append(timed([sys.executable, "-m", "exportlens", "check", str(target)]))
        script.append(timed([sys.executable, str(ROOT / "bench/cold_script.py"), str(target), "draft"]))
    c, s = statistics.median(cli), statistics.median(script)
    print(
        f"\ncold, median of {COLD_RUNS}: exportlens check {c:.2f} s, plain python+draft_export {s:.2f} s, "
        f"ratio {c / s:.2f} ({'met' if c <= s else 'MISSED'}: goal <= 1.00)"
    )


if __name__ == "__main__":
    asyncio.run(main())
