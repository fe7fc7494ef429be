"""The same findings with the worker on another torch, where `make compat` left its venv (else skipped).

A slice of `make compat` (which runs every example): data-dependent findings, torch ≤ 2.12's
float `.item()` bug and a graph break, compared by (file, line, code) with the pinned torch; and
what `make compat` does not compare, the could-be-dynamic hints' fixes and their verification.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def _check(paths: list[Path], python: str | None) -> list[dict[str, Any]]:
    """`exportlens check --format json` with the worker on `python` (None: the pinned torch): its diagnostics."""
    cmd = [sys.executable, "-m", "exportlens", "check", *map(str, paths), "--format", "json", "--no-cache"]
    if python:
        cmd += ["--python", python]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT / "server")})
    assert out.returncode == 1, out.stderr
    diagnostics: list[dict[str, Any]] = json.loads(out.stdout)["diagnostics"]
    return diagnostics


def _findings(paths: list[Path], python: str | None) -> set[tuple[str, int, str]]:
    return {(os.path.basename(d["file"]), d["range"]["start"]["line"], d["code"]) for d in _check(paths, python)}


def _cached(version: str) -> str:
    """The interpreter of `make compat`'s venv for `version`; the test is skipped where there is none."""
    python = CACHE / f"torch-{version}" / "bin" / "python"
    if not (python.exists() and (CACHE / f"torch-{version}" / ".ok").exists()):
        pytest.skip(f"no cached torch {version} venv (make compat builds it)")
    return str(python)


@pytest.mark.parametrize("version", ["2.8.0", "2.14.1"])  # the oldest supported (float bug, split), the newest
def test_same_findings_on_another_torch(version: str, tmp_path: Path) -> None:
    python = _cached(version)
    proj = tmp_path / "proj"
    shutil.copytree(EXAMPLES / "data_dependent", proj / "data_dependent")
    shutil.copy(EXAMPLES / "compile" / "branch.py", proj / "branch.py")
    (proj / "pyproject.toml").write_text("[project]\nname = 'p'\nversion = '0'\n")
    (proj / "float_branch.py").write_text(FLOAT_BRANCH)
    reference = _findings([proj], None)
    assert ("float_branch.py", 6, "data-dependent-guard") in reference
    assert _findings([proj], python) == reference


# the clause saying how the probe checked its spec: a torch without `_guards_code` (2.8) checks it by
# a named export, the others read the Dim.AUTO program
_HOW_CHECKED = re.compile(r"; (plain export with (this Dim|these Dims) passes|exported with Dim\.AUTO, the program keeps (it|them) dynamic)\.")


def _hints(python: str | None) -> list[tuple[str, int, str, str, str]]:
    """examples/dynamic_shapes/ checked with the worker on `python`: each finding with its fixes' edits
    and the dimensions their verification made dynamic (how the probe checked its spec left out)."""
    return sorted(
        (
            os.path.basename(d["file"]),
            d["range"]["start"]["line"],
            d["code"],
            _HOW_CHECKED.sub("; CHECKED.", d["message"]),
            json.dumps([(f["edits"], f["verification"].get("made_dynamic")) for f in d["fixes"]]),
        )
        for d in _check([EXAMPLES / "dynamic_shapes"], python)
    )


@pytest.fixture(scope="module")
def pinned_hints() -> list[tuple[str, int, str, str, str]]:
    return _hints(None)


@pytest.mark.parametrize("version", ["2.8.0", "2.10.0", "2.12.1", "2.14.1"])
def test_the_same_dynamic_shapes_fixes_on_another_torch(version: str, pinned_hints: list[tuple[str, int, str, str, str]]) -> None:
    """The could-be-dynamic hints and every dynamic-shape fix read the same on each release: 2.10.0's
    int32 indexing bounds in `_guards_code` once made conv_net's height and width "static" there
    (`compat.input_guards`), which `make compat`'s (file, line, code) comparison cannot see."""
    python = _cached(version)
    conv = [h for h in pinned_hints if h[0] == "conv_net.py" and h[2] == "could-be-dynamic"]
    assert len(conv) == 1 and '["images.shape[0]", "images.shape[2]", "images.shape[3]"]' in conv[0][4]  # made dynamic
    assert _hints(python) == pinned_hints
