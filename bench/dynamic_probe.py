"""The could-be-dynamic hint's cost: the check alone against the check with the Dim.AUTO probe (a benchmark).

The probe exports once more with Dim.AUTO and once with the named Dims it found
(worker/dynamic_probe.py). Where no other job runs, the worker forks it right before plain export
and runs it on the other core beside plain export; otherwise it runs after plain export in the same
process. Measured side by side in one run, through the real engine and worker, on
`bench/models/transformer_static.py` (the benchmarks' 3-block transformer, exported with no
dynamic_shapes: its batch and its sequence could be dynamic) and on
`examples/dynamic_shapes/token_mask.py`: the same job sent three ways, interleaved so machine load
hits each alike: the probe off, the probe after plain export, the probe beside it. BENCH_REPEATS (5)
sets the count.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "server"))

from exportlens.engine import Engine, EngineSettings  # noqa: E402

MODELS = [ROOT / "bench/models/transformer_static.py", ROOT / "examples/dynamic_shapes/token_mask.py"]
REPEATS = int(os.environ.get("BENCH_REPEATS", "5"))
WAYS = {"check alone": {"dynamic_probe": False}, "probe after plain export": {"probe_beside": False}, "probe beside plain export": {}}


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def sending(engine: Engine, extra: dict[str, Any]) -> None:
    """Every job the engine sends gets `extra` (the probe off, or kept off the other core)."""
    real = engine.worker.run

    async def run(job: Any, **kw: Any) -> AsyncIterator[Any]:
        async for event in real({**job, **extra}, **kw):
            yield event

    engine.worker.run = run  # type: ignore[method-assign]
    engine._bench_real_run = real  # type: ignore[attr-defined]


def restore(engine: Engine) -> None:
    engine.worker.run = engine._bench_real_run  # type: ignore[attr-defined,method-assign]


async def once(engine: Engine, path: Path, extra: dict[str, Any]) -> tuple[float, list[str], dict[str, Any]]:
    sending(engine, extra)
    try:
        started = time.perf_counter()
        result = await engine.check_file(str(path))
        seconds = time.perf_counter() - started
    finally:
        restore(engine)
    facts = next((f["probe"] for f in result.facts.values() if "probe" in f), {})
    return seconds, [d.code for d in result.diagnostics], facts


async def main() -> None:
    engine = Engine(EngineSettings())
    await engine.start()
    print(f"could-be-dynamic: the check alone vs the check with the probe (torch {engine.torch_version}; {os.cpu_count()} cores; {load()})")
    for path in MODELS:
        for extra in WAYS.values():  # warm: the first run of a file pays its imports
            await once(engine, path, extra)
        times: dict[str, list[float]] = {way: [] for way in WAYS}
        probe: dict[str, list[float]] = {way: [] for way in WAYS}
        codes: dict[str, list[str]] = {}
        beside_seen: dict[str, bool] = {}
        for _ in range(REPEATS):
            for way, extra in WAYS.items():
                seconds, found, facts = await once(engine, path, extra)
                times[way].append(seconds)
                codes[way] = found
                if facts:
                    probe[way].append(float(facts["seconds"]))
                    beside_seen[way] = bool(facts.get("beside"))
        alone = statistics.median(times["check alone"])
        print(f"  {path.relative_to(ROOT)}, warm, median of {REPEATS} [{load()}]:")
        for way in WAYS:
            t = statistics.median(times[way])
            inner = f", the probe itself {statistics.median(probe[way]):.2f} s" if probe[way] else ""
            where = " (ran beside)" if beside_seen.get(way) else ""
            print(f"    {way}: {t:.2f} s ({t / alone:.2f}x the check alone){inner}{where}; findings {codes[way]}")
    await engine.close()


if __name__ == "__main__":
    asyncio.run(main())
