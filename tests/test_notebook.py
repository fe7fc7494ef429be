"""Notebooks in the CLI: code cells joined, magics neutralised, positions back in (cell, line, column)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from conftest import ROOT, SyncEngine, kill_mid_run
from test_cli import SCHEMA, cli

from exportlens import notebook

pytestmark = pytest.mark.torch

NB = ROOT / "tests/fixtures/notebook/threshold.ipynb"
REL = "tests/fixtures/notebook/threshold.ipynb"


def test_join_keeps_line_counts_and_maps_back() -> None:
    cells = notebook.read(str(NB))
    assert [c.kind for c in cells] == ["markdown", "code", "code", "code", "code", "markdown", "code"]
    script = notebook.join(cells)
    assert script.cells == [1, 2, 3, 4, 6] and script.sizes == [3, 6, 2, 1, 1]
    lines = script.text.splitlines()
    assert lines[:3] == ["pass  # %matplotlib inline", "import torch", "pass  # !pip list | grep torch"]
    assert lines[9:11] == ["# %%time", "# print('timing a cell magic: never run as Python')"]
    assert script.to_cell(6) == (2, 3) and script.to_cell(11) == (4, 0) and script.to_cell(13) is None
    assert script.to_script(2, 3) == 6
    cut = script.cut_after(4)
    assert cut.cells == [1, 2, 3, 4] and "training" not in cut.text and cut.text.count("\n") == 12


def test_magics_inside_blocks_keep_indentation() -> None:
    assert notebook.neutralise("for i in range(2):\n    !echo $i\n    %time f()\n") == "for i in range(2):\n    pass  # !echo $i\n    pass  # %time f()\n"


def test_not_a_notebook_is_said_plainly(tmp_path: Path) -> None:
    bad = tmp_path / "bad.ipynb"
    bad.write_text("{not json")
    out = cli("check", str(bad))
    assert out.returncode == 1
    assert out.stdout.startswith(f"{bad}:1:1: error[syntax-error]: the notebook is not valid JSON")


def test_cli_text_names_the_cell_line_and_column() -> None:
    out = cli("check", REL)
    assert out.returncode == 1, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith(f"{REL}:cell 2:4:12: error[data-dependent-guard]: Draft export could not decide `n > 2`")
    assert lines[-1].startswith("1 problem in 1 target (")  # the training cell after the export never ran
    assert not [p for p in NB.parent.iterdir() if p.name.startswith(".")]  # the shadow script is gone


def test_cli_json_has_the_cell_and_cell_relative_ranges_and_fixes() -> None:
    doc = json.loads(cli("check", REL, "--format", "json").stdout)
    (t,) = doc["targets"]
    assert (t["name"], t["cell"], t["line"], t["status"]) == ("export at threshold.ipynb:cell 4:1", 4, 1, "problems")
    (d,) = doc["diagnostics"]
    assert d["file"] == str(NB) and d["cell"] == 2
    assert d["range"] == {"start": {"line": 3, "character": 11}, "end": {"line": 3, "character": 16}}
    preferred = next(f for f in d["fixes"] if f["isPreferred"])
    assert preferred["edits"] == [
        {
            "file": str(NB),
            "cell": 2,
            "newText": "        torch._check(n > 2)\n",
            "range": {"start": {"line": 3, "character": 0}, "end": {"line": 3, "character": 0}},
        }
    ]


def test_cli_sarif_region_is_in_the_notebook_file() -> None:
    doc = json.loads(cli("check", REL, "--format", "sarif").stdout)
    jsonschema.Draft4Validator(SCHEMA).validate(doc)
    (r,) = doc["runs"][0]["results"]
    loc = r["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == REL
    region = loc["region"]
    line = NB.read_text().splitlines()[region["startLine"] - 1]
    assert line[region["startColumn"] - 1 : region["endColumn"] - 1] == "n > 2"
    assert r["properties"]["cell"] == 2
    assert r["properties"]["cellRange"] == {"start": {"line": 3, "character": 11}, "end": {"line": 3, "character": 16}}
    assert "fixes" not in r  # cell edits do not apply to the .ipynb JSON text


def test_folder_walk_includes_notebooks(tmp_path: Path) -> None:
    dest = tmp_path / "nbs"
    dest.mkdir()
    (dest / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    shutil.copy(NB, dest / "threshold.ipynb")
    doc = json.loads(cli("check", str(dest), "--format", "json").stdout)
    assert [(Path(d["file"]).name, d["cell"], d["range"]["start"]["line"]) for d in doc["diagnostics"]] == [("threshold.ipynb", 2, 3)]


@pytest.mark.parametrize(("cell", "line", "char", "expected"), [(2, 3, 11, "n > 2:\\n"), (4, 0, 0, "ep = torch")])
def test_raw_position(cell: int, line: int, char: int, expected: str) -> None:
    raw = NB.read_text()
    pos = notebook.raw_position(raw, cell, line, char)
    assert pos is not None
    assert raw.splitlines()[pos[0]][pos[1] :].startswith(expected)


def test_syntax_error_lands_in_its_cell(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    nb = tmp_path / "broken.ipynb"
    nb.write_text(
        json.dumps(
            {
                "nbformat": 4,
                "nbformat_minor": 5,
                "metadata": {},
                "cells": [
                    {"cell_type": "markdown", "metadata": {}, "source": ["# title\n"]},
                    {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": ["import torch\n"]},
                    {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": ["x = 1\n", "y = (2 +\n"]},
                ],
            }
        )
    )
    doc = json.loads(cli("check", str(nb), "--format", "json").stdout)
    (d,) = doc["diagnostics"]
    assert (d["code"], d["cell"], d["range"]["start"]["line"]) == ("syntax-error", 2, 1)


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under `folder`, hidden ones too: name → (size, mtime)."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.rglob("*"))}


def _project_with(tmp_path: Path, nb: Path) -> Path:
    dest = tmp_path / "proj"
    dest.mkdir()
    (dest / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    shutil.copy(nb, dest / nb.name)
    return dest


def test_a_notebook_check_writes_nothing_in_the_project(engine: SyncEngine, tmp_path: Path) -> None:
    """The joined cells run from memory under a name beside the notebook: no file appears, even for a moment."""
    proj = _project_with(tmp_path, NB)
    before = _files(proj)
    res = engine.check(proj / "threshold.ipynb")
    assert [(d.code, d.cell, d.range.start.line) for d in res.diagnostics] == [("data-dependent-guard", 2, 3)]
    out = cli("check", str(proj / "threshold.ipynb"), "--format", "json")  # verifies every fix too: each is one more run
    assert out.returncode == 1, out.stderr
    (d,) = json.loads(out.stdout)["diagnostics"]
    assert [f["verification"]["status"] for f in d["fixes"]] == ["export-passes", "breaks"]
    assert _files(proj) == before


SLOW_NOTEBOOK = {
    "nbformat": 4,
    "nbformat_minor": 5,
    "metadata": {},
    "cells": [
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": ["import os, time\n", "import torch\n"]},
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "source": ['open(os.environ["EXPORTLENS_TEST_MARK"], "w").close()  # the run is under way\n', "time.sleep(600)\n"],
        },
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "source": ["ep = torch.export.export(torch.nn.ReLU(), (torch.ones(2),))\n"],
        },
    ],
}


def test_a_cli_killed_mid_run_leaves_nothing_in_the_project(tmp_path: Path) -> None:
    """SIGKILL (a closed laptop, the OOM killer) gives no chance to clean up: there must be nothing to clean."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (proj / "slow.ipynb").write_text(json.dumps(SLOW_NOTEBOOK))
    mark = tmp_path / "running"  # outside the project
    before = _files(proj)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "server"), "EXPORTLENS_TEST_MARK": str(mark)}

    def nothing_beside_the_running_cells() -> None:
        assert _files(proj) == before

    kill_mid_run(
        [sys.executable, "-m", "exportlens", "check", str(proj / "slow.ipynb")], mark, env=env, cwd=tmp_path, while_running=nothing_beside_the_running_cells
    )
    assert _files(proj) == before


@pytest.fixture()
def read_only(tmp_path: Path) -> Iterator[Path]:
    """A project folder nobody can write to (root included: the folder is also made immutable)."""
    proj = _project_with(tmp_path, NB)
    proj.chmod(0o555)
    immutable = False
    try:
        (proj / ".probe").touch()
    except OSError:
        pass
    else:  # root ignores the mode
        (proj / ".probe").unlink()
        immutable = subprocess.run(["chattr", "+i", str(proj)], capture_output=True).returncode == 0
        if not immutable:
            pytest.skip("cannot make a folder read-only for this user here")
    try:
        yield proj
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(proj)], check=True)
        proj.chmod(0o755)


def test_a_notebook_in_a_read_only_folder_is_checked(read_only: Path) -> None:
    with pytest.raises(OSError):
        (read_only / ".x").touch()
    out = cli("check", str(read_only / "threshold.ipynb"))
    assert out.returncode == 1, out.stderr
    assert out.stdout.splitlines()[0].startswith(
        f"{read_only / 'threshold.ipynb'}:cell 2:4:12: error[data-dependent-guard]: Draft export could not decide `n > 2`"
    )


def test_fix_commands_leave_a_notebook_alone_and_say_where_its_fix_is(tmp_path: Path) -> None:
    nb = tmp_path / "threshold.ipynb"
    shutil.copy(NB, nb)
    before = nb.read_bytes()
    out = cli("fix", str(nb), "--write")
    assert out.returncode == 1
    assert out.stderr.splitlines() == [
        f"exportlens: {nb}: not fixed: `exportlens fix` edits .py files; apply a notebook's fixes in the editor (quick fix on the cell)"
    ]
    out = cli("check", "--fix", str(nb))
    assert out.returncode == 1
    assert (
        f"not fixed: {nb}:cell 2:4: [data-dependent-guard] a notebook cell: apply its fix in the editor (quick fix on the cell); --fix edits .py files"
        in out.stderr + out.stdout
    )
    assert nb.read_bytes() == before
