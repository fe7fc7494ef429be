"""The tlparse hand-off: each run's structured trace kept in a folder, linked from the diagnostic and hover."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import EXAMPLES, ROOT
from test_cli import cli

from exportlens import engine as engine_module
from exportlens.engine import Engine, EngineSettings
from exportlens.lsp.hover import hover_markdown
from exportlens.model import Diagnostic

pytestmark = pytest.mark.torch


def test_cli_trace_dir_keeps_the_trace_tlparse_reads(tmp_path: Path) -> None:
    out = cli("check", "examples/data_dependent/item_branch.py", "--trace-dir", str(tmp_path / "traces"))
    assert out.returncode == 1, out.stderr
    (run,) = (tmp_path / "traces").iterdir()
    (log,) = run.iterdir()
    assert log.suffix == ".log" and run.name.split("-")[2] == "item_branch"
    assert "propagate_real_tensors_provenance" in log.read_text()  # the failure draft export reported
    assert f"torch's structured trace: {log} (render it with `tlparse {log} --export`)" in out.stderr


def test_engine_puts_the_trace_in_each_diagnostic(tmp_path: Path) -> None:
    import asyncio

    async def go() -> tuple[list[Diagnostic], list[str]]:
        eng = Engine(EngineSettings(timeout=120, trace_dir=str(tmp_path)))
        try:
            res = await eng.check_file(str(EXAMPLES / "data_dependent/item_branch.py"))
        finally:
            await eng.close()
        return res.diagnostics, res.trace_files

    diags, files = asyncio.run(go())
    (d,) = diags
    assert files and d.data["trace_file"] == files[0] and os.path.isfile(files[0])
    text = hover_markdown(d, (EXAMPLES / "data_dependent/item_branch.py").read_text())
    assert f"[Open the full trace]({Path(files[0]).as_uri()})" in text


def test_old_runs_are_pruned(tmp_path: Path) -> None:
    for i in range(engine_module.KEEP_TRACE_RUNS + 5):
        d = tmp_path / f"old-{i:03d}"
        d.mkdir()
        os.utime(d, (i, i))
    run = engine_module._trace_run_dir(str(tmp_path), str(ROOT / "m.py"))
    assert run is not None and os.path.isdir(run)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert len(left) == engine_module.KEEP_TRACE_RUNS and "old-000" not in left and Path(run).name in left
