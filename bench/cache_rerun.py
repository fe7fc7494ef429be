"""The results cache, side by side in one run (a benchmark, not a test).

`exportlens check examples/` as a user or CI runs it (a fresh CLI each time), on a copy of the
bundled examples with a cache folder of its own, in rounds:

1. cold: an empty cache, every target runs;
2. unchanged: the same project again, every target reused. Goal: at most max(1 s, 5 % of cold);
3. one file edited (a comment appended to one example): that file runs again, the rest is reused;
4. that file alone without the cache: what the edit costs at the least (a worker starts for it);
5. floor: the same CLI on a file without targets (starting Python and ExportLens, no worker), what
   an unchanged re-run cannot go below.

Rounds interleave the four, so that machine load hits them alike. Prints medians and the ratios.
BENCH_ROUNDS (default 3) sets the rounds. Python's bytecode goes to a folder of the bench's own
(PYTHONPYCACHEPREFIX, filled by one untimed run first): an installed ExportLens starts from its
.pyc files, also where the shell says PYTHONDONTWRITEBYTECODE.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
EDITED = "data_dependent/item_branch.py"


def _check(target: Path, cache: Path, env: dict[str, str], *extra: str) -> tuple[float, str]:
    started = time.perf_counter()
    command = [sys.executable, "-m", "exportlens", "check", str(target), "--cache-dir", str(cache), *extra]
    out = subprocess.run(command, capture_output=True, text=True, env=env, timeout=1800)
    seconds = time.perf_counter() - started
    if out.returncode not in (0, 1):
        raise SystemExit(f"exportlens check failed ({out.returncode}):\n{out.stderr[-2000:]}")
    return seconds, out.stdout.splitlines()[-1]


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="exportlens-bench-cache-"))
    env = {k: v for k, v in os.environ.items() if k != "EXPORTLENS_NO_CACHE"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "server"), env.get("PYTHONPATH")) if p)
    examples = work / "examples"
    shutil.copytree(ROOT / "examples", examples, ignore=shutil.ignore_patterns("__pycache__"))
    empty = work / "no_target.py"
    empty.write_text("x = 1\n")
    cache = work / "cache"
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    _check(examples / "clean" / "model.py", work / "warm-up-cache", env)  # untimed: every module's bytecode, ours and torch's
    times: dict[str, list[float]] = {"cold": [], "unchanged": [], "one file edited": [], "that file alone": [], "floor (no target)": []}
    try:
        for r in range(ROUNDS):
            shutil.rmtree(cache, ignore_errors=True)
            for name, target in (("cold", examples), ("unchanged", examples)):
                seconds, summary = _check(target, cache, env)
                times[name].append(seconds)
                print(f"round {r + 1}: {name:<16} {seconds:7.2f} s   {summary}", file=sys.stderr)
            edited = examples / EDITED
            edited.write_text(edited.read_text() + f"# bench edit {r}\n")
            seconds, summary = _check(examples, cache, env)
            times["one file edited"].append(seconds)
            print(f"round {r + 1}: {'one file edited':<16} {seconds:7.2f} s   {summary}", file=sys.stderr)
            seconds, _ = _check(edited, cache, env, "--no-cache")
            times["that file alone"].append(seconds)
            seconds, _ = _check(empty, cache, env)
            times["floor (no target)"].append(seconds)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"\nexportlens check examples/ ({ROUNDS} rounds, medians; load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    print(f"{'case':<20} {'median s':>9} {'vs cold':>8}")
    for name, value in med.items():
        print(f"{name:<20} {value:9.2f} {value / med['cold']:8.1%}")
    goal = max(1.0, 0.05 * med["cold"])
    verdict = "met" if med["unchanged"] <= goal else "NOT met"
    print(f"\nunchanged re-run: {med['unchanged']:.2f} s, goal max(1 s, 5 % of cold = {0.05 * med['cold']:.2f} s) = {goal:.2f} s: {verdict}")


if __name__ == "__main__":
    main()
