"""The same findings with the worker on another torch, where `make compat` left its venv (else skipped).

A slice of `make compat` (which runs every example): data-dependent findings, torch ≤ 2.12's
float `.item()` bug and a graph break, compared by (file, line, code) with the pinned torch.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EXAMPLES, ROOT

pytestmark = pytest.mark.torch

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "exportlens" / "compat"

FLOAT_BRANCH = """import torch


class M(torch.nn.Module):
    def forward(self, x):
        s = x.sum().item()
        if s > 0:
            return x + 1
        return x - 1


model = M()
example_args = (torch.ones(3),)
"""


def _findings(paths: list[Path], python: str | None) -> set[tuple[str, int, str]]:
    cmd = [sys.executable, "-m", "exportlens", "check", *map(str, paths), "--format", "json"]
    if python:
        cmd += ["--python", python]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT / "server")})
    assert out.returncode == 1, out.stderr
    doc = json.loads(out.stdout)
    return {(os.path.basename(d["file"]), d["range"]["start"]["line"], d["code"]) for d in doc["diagnostics"]}


@pytest.mark.parametrize("version", ["2.8.0", "2.14.1"])  # the oldest supported (float bug, split), the newest
def test_same_findings_on_another_torch(version: str, tmp_path: Path) -> None:
    python = CACHE / f"torch-{version}" / "bin" / "python"
    if not (python.exists() and (CACHE / f"torch-{version}" / ".ok").exists()):
        pytest.skip(f"no cached torch {version} venv (make compat builds it)")
    proj = tmp_path / "proj"
    shutil.copytree(EXAMPLES / "data_dependent", proj / "data_dependent")
    shutil.copy(EXAMPLES / "compile" / "branch.py", proj / "branch.py")
    (proj / "pyproject.toml").write_text("[project]\nname = 'p'\nversion = '0'\n")
    (proj / "float_branch.py").write_text(FLOAT_BRANCH)
    reference = _findings([proj], None)
    assert ("float_branch.py", 6, "data-dependent-guard") in reference
    assert _findings([proj], str(python)) == reference
