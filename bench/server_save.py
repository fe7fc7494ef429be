"""Warm save → diagnostics through the server, compared with the engine alone (goal ≤ 1.3×).

Both use a warm worker on the same file (examples/data_dependent/item_branch.py, copied): the
engine figure is `Engine.check_file` in-process; the server figure is from sending didSave to
receiving publishDiagnostics. Medians of RUNS each; prints both and their ratio.
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server_lsp import ROOT, Client  # noqa: E402

sys.path.insert(0, str(ROOT / "server"))
from exportlens.engine import Engine  # noqa: E402

RUNS = 7
GOAL = 1.3


async def engine_alone(path: Path) -> list[float]:
    engine = Engine()
    await engine.start()
    await engine.check_file(str(path))  # warm: first import of the user's module paths
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        res = await engine.check_file(str(path))
        times.append(time.perf_counter() - t0)
        assert [d.code for d in res.diagnostics] == ["data-dependent-guard"]
    await engine.close()
    return times


def through_server(root: Path, path: Path) -> list[float]:
    c = Client(root)
    c.initialize(root)
    uri = path.as_uri()
    c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": path.read_text()}})
    c.diagnostics(uri)  # the run on open warms everything
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        c.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        t, pub = c.diagnostics(uri)
        times.append(t - t0)
        assert [d["code"] for d in pub["diagnostics"]] == ["data-dependent-guard"]
    c.close()
    return times


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shutil.copytree(ROOT / "examples", root, dirs_exist_ok=True)
        path = root / "data_dependent" / "item_branch.py"
        eng = statistics.median(asyncio.run(engine_alone(path)))
        srv = statistics.median(through_server(root, path))
    ratio = srv / eng
    print(f"warm check, engine alone: median {eng * 1000:.0f} ms over {RUNS}")
    print(f"warm save -> diagnostics through the server: median {srv * 1000:.0f} ms over {RUNS}")
    print(f"ratio server/engine {ratio:.2f}; goal <= {GOAL}")


if __name__ == "__main__":
    main()
