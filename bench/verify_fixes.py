"""Fix verification and "make it export", side by side with the warm check (a benchmark, not a test).

1. Per fix: the time to verify it (one warm job running the target with the fix served from
   memory, plus plain export when draft export is clean and the eager outputs) against a warm
   check of the same file, measured alternately. Goal: ≤ 1.5 × the warm check.
2. Per fixable example: `make_exportable` (check, verify every fix, apply, re-check) against
   the check alone, with the rounds, fixes and outcome.

Prints tables and the ratios. BENCH_REPEATS (default 3) alternations per fix.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "server"))

from exportlens import fix_registry as registry  # noqa: E402
from exportlens import verify  # noqa: E402
from exportlens.engine import Engine, EngineSettings  # noqa: E402
from exportlens.make_exportable import make_exportable  # noqa: E402

FIXABLE = [
    "data_dependent/item_branch.py",
    "data_dependent/tensor_branch.py",
    "data_dependent/split_sizes.py",
    "data_dependent/two_branches.py",
    "factory/build.py",
    "two_files/model.py",
    "constraint/model.py",
    "missing_fake/model.py",
    "mismatched_fake/model.py",
    "library_op/model.py",
    "compile/branch.py",
    "compile/item.py",
    "compile/print_first.py",
    "compile/recompile_shapes.py",
]
REPEATS = int(os.environ.get("BENCH_REPEATS", "3"))


async def timed_check(engine: Engine, path: Path) -> float:
    started = time.perf_counter()
    await engine.check_file(str(path))
    return time.perf_counter() - started


async def per_fix(engine: Engine, work: Path) -> list[tuple[str, str, str, float, float]]:
    rows = []
    for name in FIXABLE:
        path = work / name
        base = await engine.check_file(str(path), outputs=True, plain_export=True)
        fixes = {f.key(): (d, f) for d in verify.problems(base.diagnostics) for f in registry.fixes_for(d)}
        for _key, (d, fix) in fixes.items():
            checks, verifies, status = [], [], ""
            for _ in range(REPEATS):
                checks.append(await timed_check(engine, path))
                verifier = verify.Verifier(engine, str(path), base, registry.read_disk, budget=600)
                ((_, (done,)),) = await verifier.verify([(d, [fix])])
                assert done.verification is not None
                verifies.append(done.verification.seconds)
                status = done.verification.status
            rows.append((name, fix.title.split(" — ")[0].split(" (")[0][:48], status, statistics.median(checks), statistics.median(verifies)))
    return rows


async def loops(engine: Engine, work: Path) -> list[tuple[str, float, float, str]]:
    rows = []
    for name in FIXABLE:
        path = work / name
        check = await timed_check(engine, path)
        started = time.perf_counter()
        out = await make_exportable(engine, str(path), read=registry.read_disk, assume=True, budget=600, jobs=2)
        rows.append((name, check, time.perf_counter() - started, out.summary()))
    return rows


async def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="exportlens-bench-")) / "examples"
    shutil.copytree(ROOT / "examples", work, ignore=shutil.ignore_patterns("__pycache__"))
    engine = Engine(EngineSettings(timeout=300))
    try:
        await engine.start()
        await engine.check_file(str(work / "clean/model.py"))
        print(f"1. verifying one fix vs a warm check of the same file (median of {REPEATS}, alternating)")
        print(f"{'example':34} {'fix':50} {'outcome':14} {'check':>7} {'verify':>7} {'ratio':>6}")
        ratios = []
        for name, title, status, check, ver in await per_fix(engine, work):
            ratios.append(ver / check)
            print(f"{name:34} {title:50} {status:14} {check:6.2f}s {ver:6.2f}s {ver / check:5.2f}×")
        met = sum(1 for r in ratios if r <= 1.5)
        print(f"   goal ≤ 1.5×: met for {met}/{len(ratios)} fixes; median ratio {statistics.median(ratios):.2f}×\n")
        print("2. make it export (--assume) vs the check alone")
        print(f"{'example':34} {'check':>7} {'fix loop':>9} {'ratio':>6}  outcome")
        for name, check, loop, summary in await loops(engine, work):
            print(f"{name:34} {check:6.2f}s {loop:8.2f}s {loop / check:5.1f}×  {summary}")
    finally:
        await engine.close()
        shutil.rmtree(work.parent, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
