"""`pytest --exportlens examples/ -n 2`: every target is an item, exactly the ones with problems fail."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import EXAMPLES, ROOT, ExampleRuns

pytestmark = pytest.mark.torch


def _pytest(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "server")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "exportlens.pytest_plugin", "-p", "no:cacheprovider", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
    )


def test_examples_as_items_under_xdist(tmp_path: Path, example_runs: ExampleRuns) -> None:
    report = tmp_path / "junit.xml"
    out = _pytest("--exportlens", "examples/", "-n", "2", f"--junitxml={report}", "-q")
    assert out.returncode == 1, out.stdout[-3000:] + out.stderr[-3000:]
    assert "-- Python" in out.stdout and "[gw0]" in out.stdout and "[gw1]" in out.stdout  # xdist spread the items
    cases = ET.parse(report).getroot().iter("testcase")
    outcome = {f"{c.get('classname', '').replace('.', '/')}.py::{c.get('name')}": c.find("failure") is not None for c in cases}

    targets = example_runs.report().targets  # what `exportlens check examples/` finds (the run the tests share)
    items = {f"examples/{Path(t.file).relative_to(EXAMPLES).as_posix()}::{t.name}" for t in targets}
    failing = {f"examples/{Path(t.file).relative_to(EXAMPLES).as_posix()}::{t.name}" for t in targets if t.status != "ok"}
    assert set(outcome) == items and len(items) == len(targets) >= 20
    assert {k for k, failed in outcome.items() if failed} == failing
    assert failing and "examples/data_dependent/item_branch.py::export at item_branch.py:15" in failing
    assert outcome["examples/clean/model.py::model"] is False


def test_failure_names_the_line_and_the_finding() -> None:
    out = _pytest("--exportlens", "examples/data_dependent/item_branch.py", "examples/clean", "-rN")
    assert out.returncode == 1, out.stdout[-3000:]
    assert "2 items" in out.stdout or "collected 2 items" in out.stdout
    assert "examples/data_dependent/item_branch.py:9:12: error[data-dependent-guard]: Draft export could not decide `n > 2`" in out.stdout
    assert "_ exportlens: export at item_branch.py:15 _" in out.stdout
    assert "1 failed, 1 passed" in out.stdout


def test_inert_without_the_flag_and_never_imports_torch(tmp_path: Path) -> None:
    probe = tmp_path / "test_probe.py"
    probe.write_text("import sys\n\ndef test_no_torch():\n    assert 'torch' not in sys.modules\n")
    model = tmp_path / "model.py"
    model.write_text((ROOT / "examples/clean/model.py").read_text())
    out = _pytest(str(tmp_path), "-q", cwd=tmp_path)
    assert out.returncode == 0 and "1 passed" in out.stdout, out.stdout  # model.py is not collected
    out = _pytest("--exportlens", str(tmp_path), "-q", "-p", "no:randomly", cwd=tmp_path)
    assert out.returncode == 0 and "2 passed" in out.stdout, out.stdout  # the probe runs after model.py's target ran


def test_notebooks_are_collected_and_fail_on_the_cell_line(tmp_path: Path) -> None:
    shutil.copy(ROOT / "tests/fixtures/notebook/threshold.ipynb", tmp_path / "threshold.ipynb")
    clean = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# exports cleanly\n"]},
            {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": (ROOT / "examples/clean/model.py").read_text()},
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / "clean.ipynb").write_text(json.dumps(clean))
    out = _pytest("--exportlens", str(tmp_path), "-rA", "-v", cwd=tmp_path)
    assert out.returncode == 1, out.stdout[-3000:] + out.stderr[-3000:]
    assert "threshold.ipynb::export at threshold.ipynb:cell 4:1 FAILED" in out.stdout
    assert "clean.ipynb::model PASSED" in out.stdout
    assert "threshold.ipynb:cell 2:4:12: error[data-dependent-guard]: Draft export could not decide `n > 2`" in out.stdout
    assert "1 failed, 1 passed" in out.stdout
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".exportlens.py")]  # no shadow scripts left
