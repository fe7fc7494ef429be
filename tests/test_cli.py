"""`exportlens check` end to end, as a user or CI runs it: formats, exit codes, --fix/--diff."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from conftest import EXAMPLES, ROOT

pytestmark = pytest.mark.torch

SCHEMA = json.loads((ROOT / "tests/data/sarif-schema-2.1.0.json").read_text())


def cli(*args: str, cwd: Path = ROOT, python: str = sys.executable) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "server")}
    return subprocess.run([python, "-m", "exportlens", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def test_clean_model_exits_zero() -> None:
    out = cli("check", "examples/clean/model.py")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("0 problems in 1 target (")


def test_text_reads_like_a_compiler() -> None:
    out = cli("check", "examples/data_dependent/item_branch.py")
    assert out.returncode == 1
    first = out.stdout.splitlines()[0]
    assert first.startswith("examples/data_dependent/item_branch.py:9:12: error[data-dependent-guard]: Draft export could not decide `n > 2`")
    assert out.stdout.splitlines()[-1].startswith("1 problem in 1 target (")


def test_json_is_one_document_in_the_agreed_shape() -> None:
    out = cli("check", "examples/data_dependent/item_branch.py", "examples/clean", "--format", "json")
    assert out.returncode == 1
    doc = json.loads(out.stdout)  # exactly one JSON document, nothing else on stdout
    assert set(doc) == {"version", "torch", "targets", "diagnostics", "sources", "run"}  # sources and run: for the HTML page
    assert doc["version"] == 2 and doc["torch"] == "2.13.0+cpu"
    assert [(Path(t["file"]).name, t["line"], t["kind"], t["status"]) for t in doc["targets"]] == [
        ("item_branch.py", 15, "export", "problems"),
        ("model.py", 16, "export", "ok"),
    ]
    assert all(isinstance(t["seconds"], float) for t in doc["targets"])
    (d,) = doc["diagnostics"]
    assert set(d) == {"file", "range", "severity", "code", "message", "target", "related", "fixes", "data", "owner", "root_cause"}
    assert d["owner"] == d["file"] and d["data"]["source_expr"] == "n > 2"
    assert d["root_cause"] == {"file": d["file"], "line": 9}  # the user's own line: no library
    assert d["file"] == str(EXAMPLES / "data_dependent/item_branch.py")
    assert d["range"] == {"start": {"line": 8, "character": 11}, "end": {"line": 8, "character": 16}}
    assert (d["severity"], d["code"], d["target"]) == (1, "data-dependent-guard", "export at item_branch.py:15")
    # every fix verified; the rewrite that keeps both branches beats the assumption that also passes
    got = [(f["isPreferred"], f["assumes"], {k: v for k, v in f["verification"].items() if k not in ("seconds", "detail")}) for f in d["fixes"]]
    assert got == [
        (True, None, {"status": "export-passes", "remaining": [], "same_outputs": True, "assumes": None}),
        (False, "n > 2", {"status": "export-passes", "remaining": [], "same_outputs": True, "assumes": "n > 2"}),
        (False, "n <= 2", {"status": "breaks", "remaining": [], "same_outputs": False, "assumes": "n <= 2"}),
    ]
    assert all(isinstance(f["verification"]["seconds"], float) for f in d["fixes"])
    assert d["fixes"][0]["title"].startswith("Rewrite this if/return as `torch.cond`")
    assert d["fixes"][1]["title"] == "Add `torch._check(n > 2)` — assumes `n > 2` for every input; inputs with n ≤ 2 will raise"
    (edit,) = d["fixes"][1]["edits"]
    assert edit == {
        "file": d["file"],
        "range": {"start": {"line": 8, "character": 0}, "end": {"line": 8, "character": 0}},
        "newText": "        torch._check(n > 2)\n",
    }
    plain = json.loads(cli("check", "examples/data_dependent/item_branch.py", "--format", "json", "--no-verify").stdout)
    assert [("verification" in f, f["isPreferred"]) for f in plain["diagnostics"][0]["fixes"]] == [(False, True), (False, False), (False, False)]


def test_sarif_validates_against_the_published_schema() -> None:
    out = cli("check", "examples/missing_fake", "--format", "sarif")
    assert out.returncode == 1
    doc = json.loads(out.stdout)
    jsonschema.Draft4Validator(SCHEMA).validate(doc)
    results = doc["runs"][0]["results"]
    assert [
        (r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], r["locations"][0]["physicalLocation"]["region"]["startLine"])
        for r in results
    ] == [("missing-fake-kernel", "examples/missing_fake/model.py", 7), ("missing-fake-kernel", "examples/missing_fake/model.py", 13)]


def test_missing_path_is_a_usage_error() -> None:
    out = cli("check", "no/such/file.py")
    assert out.returncode == 2
    assert out.stdout == "" and "no such file or directory: no/such/file.py" in out.stderr


def test_interpreter_without_torch_is_said_plainly(tmp_path: Path) -> None:
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    out = cli("check", "examples/clean/model.py", "--python", str(venv / "bin/python"))
    assert out.returncode == 2
    assert "has no torch installed" in out.stdout


@pytest.mark.parametrize("mode", ["--diff", "--fix"])
def test_fix_and_diff_take_the_best_verified_fix(tmp_path: Path, mode: str) -> None:
    work = tmp_path / "examples"
    shutil.copytree(EXAMPLES / "data_dependent", work / "data_dependent")
    shutil.copy(EXAMPLES / "pyproject.toml", work / "pyproject.toml")
    target = work / "data_dependent/item_branch.py"
    before = target.read_text()
    out = cli("check", str(target), mode, cwd=work)
    assert out.returncode == 1
    rewritten = before.replace(
        "        if n > 2:\n            return y * 2\n        return y - 1\n",
        "        def true_fn(y):\n            return y * 2\n        def false_fn(y):\n            return y - 1\n"
        "        return torch.cond(n > 2, true_fn, false_fn, (y,))\n",
    )
    assert rewritten != before
    if mode == "--diff":
        assert target.read_text() == before
        assert "+        return torch.cond(n > 2, true_fn, false_fn, (y,))\n" in out.stdout
        assert out.stdout.startswith("--- a/data_dependent/item_branch.py")
    else:
        assert target.read_text() == rewritten
        assert "fixed data_dependent/item_branch.py" in out.stderr
        assert cli("check", str(target), cwd=work).returncode == 0


def test_fix_takes_assumptions_only_when_asked(tmp_path: Path) -> None:
    work = tmp_path / "examples"
    shutil.copytree(EXAMPLES / "data_dependent", work / "data_dependent")
    shutil.copy(EXAMPLES / "pyproject.toml", work / "pyproject.toml")
    target = work / "data_dependent/item_branch.py"
    before = target.read_text()
    out = cli("check", str(target), "--fix", "--no-verify", cwd=work)  # unverified, the check is preferred
    assert out.returncode == 1 and target.read_text() == before
    assert (
        "not fixed: data_dependent/item_branch.py:9: Add `torch._check(n > 2)` — assumes `n > 2` for every input; "
        "inputs with n ≤ 2 will raise: an assumption, not applied (pass --assume to apply it)"
    ) in out.stderr
    out = cli("check", str(target), "--fix", "--no-verify", "--assume", cwd=work)
    assert target.read_text() == before.replace("        if n > 2:", "        torch._check(n > 2)\n        if n > 2:")


def test_fix_command_makes_two_branches_export(tmp_path: Path) -> None:
    work = tmp_path / "examples"
    shutil.copytree(EXAMPLES / "data_dependent", work / "data_dependent")
    shutil.copy(EXAMPLES / "pyproject.toml", work / "pyproject.toml")
    target = work / "data_dependent/two_branches.py"
    before = target.read_text()
    out = cli("fix", str(target), cwd=work)
    assert out.returncode == 0, out.stderr
    assert target.read_text() == before  # no --write: the diff only
    assert out.stdout.startswith("--- a/data_dependent/two_branches.py") and out.stdout.count("torch.cond(") == 2
    assert out.stderr.strip().splitlines()[-1] == "exportlens: data_dependent/two_branches.py: 1 round, 2 fixes, export passes"
    out = cli("fix", str(target), "--write", cwd=work)
    assert out.returncode == 0 and target.read_text() != before
    assert cli("check", str(target), cwd=work).returncode == 0


def test_fix_command_without_assume_says_what_it_left(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    path = tmp_path / "model.py"
    shutil.copy(EXAMPLES / "data_dependent/split_sizes.py", path)
    out = cli("fix", str(path), cwd=tmp_path)
    assert out.returncode == 1 and out.stdout == ""
    assert "exportlens: not taken: model.py:9: Pin the value: add `torch._check(size == 4)`" in out.stderr
    assert out.stderr.strip().splitlines()[-1] == "exportlens: model.py: 0 rounds, 0 fixes, 1 problem remains (only assumption fixes help)"
    out = cli("fix", str(path), "--assume", "--write", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "        torch._check(size == 4)\n" in path.read_text()


def test_compile_and_trace_findings_in_every_format() -> None:
    files = ["examples/compile/print_first.py", "examples/trace/check_inputs.py"]
    text = cli("check", *files)
    assert text.returncode == 1
    assert text.stdout.splitlines()[0].startswith("examples/compile/print_first.py:7:5: warning[graph-break]: Graph break: ")
    doc = json.loads(cli("check", *files, "--format", "json").stdout)
    got = [(Path(d["file"]).name, d["range"]["start"]["line"], d["code"], d["severity"]) for d in doc["diagnostics"]]
    assert got == [("print_first.py", 6, "graph-break", 2), ("check_inputs.py", 8, "trace-check-failed", 1), ("check_inputs.py", 17, "tracer-warning", 2)]
    assert [(t["kind"], t["status"]) for t in doc["targets"]] == [("compile", "problems"), ("trace", "problems"), ("trace", "ok")]
    (fix,) = [f for f in doc["diagnostics"][0]["fixes"] if f["isPreferred"]]
    assert fix["edits"][0]["newText"] == "torch._dynamo.config.reorderable_logging_functions.add(print)\n"
    sarif = json.loads(cli("check", *files, "--format", "sarif").stdout)
    jsonschema.Draft4Validator(SCHEMA).validate(sarif)
    assert [(r["ruleId"], r["level"]) for r in sarif["runs"][0]["results"]] == [
        ("graph-break", "warning"),
        ("trace-check-failed", "error"),
        ("tracer-warning", "warning"),
    ]


def test_fix_keeps_the_files_encoding_and_merges_fixes_of_one_file(tmp_path: Path) -> None:
    """Two findings in one latin-1 file with a BOM-less cookie: both fixed, bytes re-encoded alike."""
    (tmp_path / "pyproject.toml").write_text("")
    path = tmp_path / "model.py"
    source = (
        "# -*- coding: latin-1 -*-\n# café\nimport torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x, y):\n"
        "        a = x.item()\n        if a > 2:\n            x = x * 2\n        b = y.item()\n        if b > 1:\n"
        "            return x + 1\n        return x\n\n\nmodel = M()\nexample_args = (torch.tensor(5), torch.tensor(3))\n"
    )
    path.write_bytes(source.encode("latin-1"))
    out = cli("check", str(path), "--fix", "--no-verify", "--assume", cwd=tmp_path)
    assert out.returncode == 1, out.stderr
    fixed = path.read_bytes().decode("latin-1")
    assert fixed == source.replace("        if a > 2:", "        torch._check(a > 2)\n        if a > 2:").replace(
        "        if b > 1:", "        torch._check(b > 1)\n        if b > 1:"
    )
    assert cli("check", str(path), cwd=tmp_path).returncode == 0


def test_fix_lists_what_it_did_not_fix_and_why(tmp_path: Path) -> None:
    """A refused fix is said, with its reason; so is a problem no fixer knows."""
    path = tmp_path / "refused.py"
    path.write_text(
        "import torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n        n = x.item()\n"
        "        while n > 2:\n            n = n - 1\n        return x * n\n\n\nmodel = M()\n"
        "example_args = (torch.tensor(5),)\n"
    )
    before = path.read_text()
    out = cli("check", str(path), "--fix", cwd=tmp_path)
    assert out.returncode == 1
    assert path.read_text() == before
    assert "not fixed: refused.py:7: [data-dependent-guard] the condition is a `while` loop test" in out.stderr


def test_a_run_leaves_nothing_in_the_temporary_folder(tmp_path: Path) -> None:
    """Job folders, torch's trace logs and caches all live in the worker's own folder, removed at the end."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "server"), "TMPDIR": str(tmp)}
    out = subprocess.run(
        [sys.executable, "-m", "exportlens", "check", "examples/data_dependent/item_branch.py", "examples/compile/print_first.py"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )
    assert out.returncode == 1, out.stderr
    assert sorted(p.name for p in tmp.iterdir()) == []
