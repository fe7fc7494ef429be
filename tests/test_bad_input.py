"""Bad input gets one clear diagnostic (or message) and nothing else breaks."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import SyncEngine, spans

pytestmark = pytest.mark.torch

GOOD = "import torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return x + 1\n\n\n"


def test_empty_file_says_how_to_declare_a_target(engine: SyncEngine, project: Path) -> None:
    path = project / "empty.py"
    path.write_text("")
    result = engine.check(path)
    (d,) = result.diagnostics
    assert (d.code, d.severity, d.range.start.line) == ("no-target", 3, 0)
    assert "example_args" in d.message and "[tool.exportlens]" in d.message
    assert not result.ran


def test_syntax_error_is_placed_on_its_token_and_runs_nothing(engine: SyncEngine, project: Path) -> None:
    path = project / "broken.py"
    marker = project / "ran.txt"
    path.write_text(f"open({str(marker)!r}, 'w').write('ran')\nmodel = 1\nexample_args = (1,\nif x\n")
    result = engine.check(path)
    (d,) = result.diagnostics
    assert d.code == "syntax-error" and d.message.startswith("SyntaxError:")
    assert d.range.start.line == 2
    assert not marker.exists() and not result.ran


def test_syntax_error_columns_count_utf16(engine: SyncEngine, project: Path) -> None:
    path = project / "wide.py"
    path.write_text("s = '😀😀' +\n", encoding="utf-8")
    (d,) = engine.check(path).diagnostics
    assert (d.code, d.range.start.line) == ("syntax-error", 0)
    assert d.range.start.character == 12  # the line's end: 10 code points, the 2 emoji take 2 UTF-16 units each


def test_non_utf8_bytes(engine: SyncEngine, project: Path) -> None:
    path = project / "latin.py"
    path.write_bytes(b"import torch\n# caf\xe9\nmodel = 1\n")
    (d,) = engine.check(path).diagnostics
    assert (d.code, d.range.start.line) == ("syntax-error", 1)
    assert "0xe9" in d.message and "UTF-8" in d.message


def test_a_binary_file_is_called_binary(engine: SyncEngine, project: Path) -> None:
    path = project / "weights.py"
    path.write_bytes(b"import torch\n" + bytes(range(256)) * 4)  # e.g. a checkpoint saved under a .py name
    (d,) = engine.check(path).diagnostics
    assert (d.code, d.range.start.line) == ("syntax-error", 1)
    assert d.message == "this is not Python source: the file holds binary data (a NUL byte at line 2)"


def test_undecodable_first_lines_say_what_to_do(engine: SyncEngine, project: Path) -> None:
    path = project / "legacy.py"
    path.write_bytes(b"# r\xe9sum\xe9 of the model\nimport torch\n")  # latin-1, no coding line
    (d,) = engine.check(path).diagnostics
    assert d.code == "syntax-error"
    assert d.message == (
        "this is not Python source text (invalid or missing encoding declaration): a binary file, or text in another "
        "encoding than UTF-8 without a '# -*- coding: ... -*-' line"
    )


def test_declared_encoding_is_honoured(engine: SyncEngine, project: Path) -> None:
    path = project / "declared.py"
    path.write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\nx = 1\n")
    (d,) = engine.check(path).diagnostics
    assert d.code == "no-target"


def test_fifty_thousand_lines(engine: SyncEngine, project: Path) -> None:
    path = project / "huge.py"
    body = "".join(f"v{i} = {i}\n" for i in range(50_000))
    path.write_text(GOOD + body + "model = M()\nexample_args = (torch.ones(2),)\n")
    started = time.perf_counter()
    result = engine.check(path)
    assert [d.code for d in result.diagnostics] == ["could-be-dynamic"] and [t.status for t in result.targets] == ["ok"]  # x's length: a hint
    assert result.targets[0].line == 50_009
    assert time.perf_counter() - started < 60


def test_file_outside_any_project(engine: SyncEngine, tmp_path: Path) -> None:
    path = tmp_path / "loose.py"  # no pyproject.toml, no .git: its folder is the project
    path.write_text(
        GOOD + "model = M()\nexample_args = (torch.ones(2),)\n"
        "\n\nclass N(torch.nn.Module):\n    def forward(self, x):\n        if x.sum() > 0:\n"
        "            return x\n        return -x\n\n\nmodel = N()\n"
    )
    assert spans(engine.check(path)) == [("loose.py", 14, 11, 14, 22, "data-dependent-guard")]


def test_factory_that_raises(engine: SyncEngine, project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.exportlens]\ntargets = ["factories.py:make"]\n')
    path = project / "factories.py"
    path.write_text("def helper():\n    raise RuntimeError('no weights here')\n\n\ndef make():\n    return helper()\n")
    result = engine.check(path)
    (d,) = result.diagnostics
    assert (d.code, d.range.start.line, d.range.start.character) == ("target-error", 1, 4)
    assert "RuntimeError: no weights here" in d.message
    assert [(t.name, t.line, t.status) for t in result.targets] == [("factories.py:make", 5, "error")]
    (rel,) = d.related
    assert rel.range.start.line == 5


def test_factory_with_a_wrong_return(engine: SyncEngine, project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.exportlens]\ntargets = ["f.py:make", "f.py:missing"]\n')
    path = project / "f.py"
    path.write_text("def make():\n    return 42\n")
    diags = engine.check(path).diagnostics
    assert [(d.code, d.range.start.line) for d in diags] == [("target-error", 0)] * 2
    assert any("must return a dict" in d.message for d in diags)
    assert any("no callable named 'missing'" in d.message for d in diags)


def test_wrong_example_inputs(engine: SyncEngine, project: Path) -> None:
    path = project / "shapes.py"
    path.write_text(
        "import torch\n\n\nclass M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = torch.nn.Linear(5, 6)\n\n    def forward(self, x):\n        return self.fc(x)\n\n\n"
        "model = M()\nexample_args = (torch.ones(3, 4),)\n"
    )
    (d,) = engine.check(path).diagnostics
    assert (d.code, d.range.start.line, d.range.start.character, d.range.end.character) == ("export-error", 9, 15, 25)
    assert "a and b must have same reduction dim, but got [3, 4] X [5, 6]" in d.message  # plain export's words: the user's own export


def test_args_not_a_tuple_in_a_script(engine: SyncEngine, project: Path) -> None:
    path = project / "script.py"
    path.write_text(GOOD + "torch.export.export(M(), torch.ones(2))\nprint('after')\n")
    result = engine.check(path)
    (d,) = result.diagnostics
    assert (d.code, d.range.start.line) == ("export-error", 8)
    assert "Expecting `args` to be a tuple" in d.message
    assert [(t.name, t.status) for t in result.targets] == [("export at script.py:9", "error")]


def test_syntax_error_in_an_imported_helper_lands_in_the_helper(engine: SyncEngine, project: Path) -> None:
    (project / "helper.py").write_text("def scale(x):\n    return x *\n")
    path = project / "uses_helper.py"
    path.write_text("import torch\nfrom helper import scale\n\nmodel = torch.nn.Linear(2, 2)\nexample_args = (torch.ones(2),)\n")
    (d,) = engine.check(path).diagnostics
    assert (Path(d.file).name, d.code, d.range.start.line) == ("helper.py", "syntax-error", 1)
    assert d.message == "SyntaxError: invalid syntax"


def test_a_file_too_deeply_nested_to_compile_does_not_stop_a_folder_check(project: Path) -> None:
    """RecursionError while compiling one file is that file's diagnostic; the others are still checked."""
    import shutil
    import subprocess
    import sys

    from conftest import EXAMPLES, ROOT

    (project / "deep.py").write_text("x = 1" + " + 1" * 100_000 + "\n")
    shutil.copy(EXAMPLES / "data_dependent" / "item_branch.py", project / "item_branch.py")
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT / "server")}
    out = subprocess.run([sys.executable, "-m", "exportlens", "check", str(project)], capture_output=True, text=True, env=env, cwd=project, timeout=300)
    lines = out.stdout.splitlines()
    assert out.returncode == 1, out.stderr
    assert lines[0].startswith("deep.py:1:1: error[syntax-error]: The file cannot be compiled: it is nested too deeply")
    assert any(ln.startswith("item_branch.py:9:12: error[data-dependent-guard]") for ln in lines)
    assert lines[-1].startswith("2 problems in 1 target")


def test_planning_never_raises(engine: SyncEngine, project: Path) -> None:
    path = project / "deep.py"
    path.write_text("x = 1" + " + 1" * 100_000 + "\n")
    (d,) = engine.check(path).diagnostics
    assert (d.code, d.range.start.line) == ("syntax-error", 0) and "RecursionError" in d.message


def test_the_job_runs_the_text_it_was_given_not_the_disk(engine: SyncEngine, project: Path) -> None:
    """The editor's buffer (or one snapshot) is what runs: the disk may be mid-write."""
    from conftest import EXAMPLES

    path = project / "model.py"
    path.write_text(GOOD + "model = M()\nexample_args = (torch.ones(2),)\n")  # clean on disk
    text = (EXAMPLES / "data_dependent" / "item_branch.py").read_text()
    result = engine.check(path, text=text)
    assert spans(result) == [("model.py", 8, 11, 8, 16, "data-dependent-guard")]
    assert result.texts[str(path)] == text


def test_a_pyproject_target_outside_the_project_is_said(engine: SyncEngine, project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.exportlens]\ntargets = ["../elsewhere/build.py:make"]\n')
    path = project / "model.py"
    path.write_text(GOOD + "model = M()\nexample_args = (torch.ones(2),)\n")
    diagnostics = engine.check(path).diagnostics
    assert [d.code for d in diagnostics] == ["target-error", "could-be-dynamic"]  # the file's own target still runs
    d = diagnostics[0]
    assert (d.code, d.severity) == ("target-error", 3)
    assert "'../elsewhere/build.py:make' is outside the project folder" in d.message


def test_a_file_deleted_before_its_run_gets_a_clear_diagnostic(engine: SyncEngine, project: Path) -> None:
    path = project / "gone.py"  # listed by a folder walk, deleted before its turn
    (d,) = engine.check(path).diagnostics
    assert (d.code, d.range.start.line) == ("syntax-error", 0)
    assert d.message.startswith("cannot read the file: No such file or directory")
