"""The pre-commit hook definition: the id, entry and file types pre-commit reads."""

from __future__ import annotations

import shlex

import pytest
import yaml
from conftest import ROOT

from exportlens.cli import build_parser

pytestmark = pytest.mark.quick


def test_hook_runs_exportlens_check_on_python_files() -> None:
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "exportlens"
    assert hook["entry"] == "exportlens check"
    assert hook["language"] == "python" and hook["types"] == ["python"]
    assert hook["require_serial"] is True
    args = build_parser().parse_args([*shlex.split(hook["entry"])[1:], "a.py", "b.py"])  # pre-commit appends the files
    assert args.command == "check" and args.paths == ["a.py", "b.py"]


def test_readme_workflow_uploads_the_sarif() -> None:
    readme = (ROOT / "README.md").read_text()
    block = readme.split("```yaml\nname: exportlens\n", 1)[1].split("```", 1)[0]
    flow = yaml.safe_load("name: exportlens\n" + block)
    steps = flow["jobs"]["export"]["steps"]
    run = next(s["run"] for s in steps if "exportlens check" in s.get("run", ""))
    assert "--format sarif > exportlens.sarif" in run
    upload = next(s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif@"))
    assert upload["with"]["sarif_file"] == "exportlens.sarif" and upload["if"] == "always()"
    assert flow["permissions"]["security-events"] == "write"
