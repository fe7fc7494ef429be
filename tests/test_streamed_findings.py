"""Graph breaks and tracer warnings are streamed as torch records them: a job stopped by its
time limit still reports them, with the timeout on the target that was running."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

pytestmark = pytest.mark.torch

HANGS_IN_TRACE = '''"""A graph break, then a tracer warning, then the trace hangs."""
import time

import torch


def double_then_print(x):
    y = x * 2
    print("logged")
    return y + 1


class Positive(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            time.sleep(600)
        return x + 1


torch.compile(double_then_print)(torch.ones(2))
torch.jit.trace(Positive(), (torch.ones(2),))
'''


def test_a_timeout_keeps_the_graph_break_and_the_tracer_warning(tmp_path: Path) -> None:
    # --no-verify: each fix's verification would run the hanging script to its timeout again (what is asserted is the run's own)
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "hangs.py").write_text(HANGS_IN_TRACE)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "server")}
    out = subprocess.run(
        [sys.executable, "-m", "exportlens", "check", str(tmp_path / "hangs.py"), "--timeout", "20", "--format", "json", "--no-verify"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )
    assert out.returncode == 1, out.stderr[-2000:]
    doc = json.loads(out.stdout)
    got = [(d["code"], d["range"]["start"]["line"], d["range"]["start"]["character"], d["range"]["end"]["character"], d["target"]) for d in doc["diagnostics"]]
    assert got == [
        ("graph-break", 8, 4, 19, "compile at hangs.py:20"),  # compile targets are reported at the script's end
        ("tracer-warning", 14, 11, 22, "trace at hangs.py:21"),  # the trace never returned
        ("worker-timeout", 20, 0, 45, "trace at hangs.py:21"),
    ], out.stderr[-2000:]
    assert "The 2 problems torch recorded before the deadline are reported" in doc["diagnostics"][2]["message"]
    assert [(t["name"], t["status"]) for t in doc["targets"]] == [("trace at hangs.py:21", "timeout")]
