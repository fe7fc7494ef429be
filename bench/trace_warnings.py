"""A trace that warns a thousand times: torch.jit.trace watched by the worker vs plain, side by side.

A library (written under a `site-packages` folder of a temporary directory) warns at 62 places,
one of them 1,000 times in a loop, so the worker keeps 50 places with their counts and counts the
rest. Each round times the trace call itself, alternately in a plain `python` process (the
default warning filters, as a terminal run; after one small trace, so the tracer's first use is
paid on both sides) and in ExportLens's worker (the target's `seconds`), and prints the medians and
their ratio. A benchmark, not a test.

    python bench/trace_warnings.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "server"))

from exportlens.engine import Engine, EngineSettings  # noqa: E402

LIBRARY = (
    "import torch\n\n\ndef score(x):\n    total = x.sum() * 0\n"
    + "".join(f"    if x[{i}].sum() > 0:\n        total = total + {i}\n" for i in range(60))
    + "    for row in x[:1000]:\n        if row.sum() > 0:\n            total = total + 1\n    return total\n"
)
SCRIPT = "import sys\n\nsys.path.insert(0, {site!r})\nimport torch\nfrom loudlib import score\n\ntraced = torch.jit.trace(score, (torch.ones(1000, 2),))\n"
PLAIN = """import sys, time, warnings
sys.path.insert(0, {site!r})
import torch
from loudlib import score
x = torch.ones(1000, 2)
with warnings.catch_warnings():  # the tracer's first use, which the worker's zygote has paid before the job
    warnings.simplefilter("ignore")
    torch.jit.trace(lambda t: t + 1, (torch.ones(1),))
started = time.perf_counter()
torch.jit.trace(score, (x,))  # the default warning filters: each place printed once, as a terminal run shows them
print(time.perf_counter() - started)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "env" / "lib" / "site-packages"
        (site / "loudlib").mkdir(parents=True)
        (site / "loudlib" / "__init__.py").write_text(LIBRARY)
        project = Path(tmp) / "project"
        project.mkdir()
        (project / "pyproject.toml").write_text("")
        (project / "model.py").write_text(SCRIPT.format(site=str(site)))
        plain: list[float] = []
        watched: list[float] = []
        diagnostics = 0

        async def run() -> None:
            nonlocal diagnostics
            engine = Engine(EngineSettings(timeout=300))
            try:
                for _ in range(args.rounds):
                    out = subprocess.run([sys.executable, "-c", PLAIN.format(site=str(site))], capture_output=True, text=True, check=True)
                    plain.append(float(out.stdout.strip().splitlines()[-1]))
                    result = await engine.check_file(str(project / "model.py"))
                    (target,) = result.targets
                    watched.append(target.seconds)
                    diagnostics = len(result.diagnostics)
            finally:
                await engine.close()

        started = time.perf_counter()
        asyncio.run(run())
    p, w = statistics.median(plain), statistics.median(watched)
    print(f"trace of a library warning 1,011 times at 62 places ({diagnostics} diagnostics), median of {args.rounds}:")
    print(f"  plain torch.jit.trace {p:.2f} s · watched in the worker {w:.2f} s · {w / p:.2f}x  ({time.perf_counter() - started:.0f} s in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
