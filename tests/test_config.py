"""`[tool.exportlens]` in pyproject.toml: every key, flags over it, and a bad value named by its key."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest
from conftest import EXAMPLES, SyncEngine, spans
from test_cli import cli

from exportlens import project
from exportlens.cli import DEFAULT_TIMEOUT, build_parser, engine_settings

pytestmark = pytest.mark.torch

BRANCH = (EXAMPLES / "data_dependent" / "item_branch.py").read_text()


def _config(root: Path, body: str) -> project.ProjectConfig:
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n\n[tool.exportlens]\n" + body)
    return project.load_config(str(root))


def _args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["check", "x.py", *argv])


def test_every_key_is_read(tmp_path: Path) -> None:
    cfg = _config(
        tmp_path,
        'targets = ["m.py:make"]\nignore = ["recompile"]\nselect = ["data-dependent-guard", "graph-break"]\n'
        'timeout = 30\npython = "venv/bin/python"\ncompile-backend = "aot_eager"\nexclude = ["scratch/*"]\n',
    )
    assert cfg.errors == []
    assert cfg.targets == ["m.py:make"]
    assert cfg.ignore == ["recompile"]
    assert cfg.select == ["data-dependent-guard", "graph-break"]
    assert cfg.timeout == 30.0
    assert cfg.python == str(tmp_path / "venv/bin/python")  # relative paths are the project's
    assert cfg.compile_backend == "aot_eager"
    assert cfg.exclude == ["scratch/*"]
    assert _config(tmp_path, 'python = "python3.12"\n').python == "python3.12"  # a command name stays one


@pytest.mark.parametrize(
    ("body", "key", "says"),
    [
        ('targets = "m.py:make"\n', "targets", 'targets must be a list of "path/file.py:factory" strings'),
        ('ignore = ["data-dependent-gaurd"]\n', "ignore", "ignore: unknown code 'data-dependent-gaurd'"),
        ('select = "graph-break"\n', "select", "select must be a list of diagnostic codes"),
        ("timeout = -1\n", "timeout", "timeout must be a number of seconds between 0 and 86400, got -1"),
        ('timeout = "30"\n', "timeout", "timeout must be a number of seconds"),
        ('python = ""\n', "python", "python must be the path (or command name) of an interpreter"),
        ('compile-backend = "cuda"\n', "compile-backend", "compile-backend must be one of eager, aot_eager, inductor, got 'cuda'"),
        ('exclude = "a/*"\n', "exclude", "exclude must be a list of glob strings"),
        ("timeuot = 3\n", "timeuot", "unknown key 'timeuot' (known keys: targets, ignore, select, timeout, python"),
    ],
)
def test_bad_value_is_named_by_its_key(tmp_path: Path, body: str, key: str, says: str) -> None:
    cfg = _config(tmp_path, 'select = ["graph-break"]\n' * (key != "select") + body)
    (err,) = cfg.errors
    assert err.key == key and err.line == 4 + (key != "select")  # 0-based line of the key in pyproject.toml
    assert err.message.startswith("pyproject.toml: [tool.exportlens] ") and says in err.message
    if key != "select":
        assert cfg.select == ["graph-break"]  # the good keys still count


def test_flags_override_pyproject(tmp_path: Path) -> None:
    cfg = _config(tmp_path, 'timeout = 30\npython = "/opt/py"\ncompile-backend = "inductor"\n')
    s = engine_settings(_args(), cfg)
    assert (s.timeout, s.python, s.compile_backend) == (30.0, "/opt/py", "inductor")
    s = engine_settings(_args("--timeout", "5", "--python", "/usr/bin/python3", "--compile-backend", "eager"), cfg)
    assert (s.timeout, s.python, s.compile_backend) == (5.0, "/usr/bin/python3", "eager")
    s = engine_settings(_args(), project.ProjectConfig(root=str(tmp_path)))
    assert (s.timeout, s.python, s.compile_backend) == (DEFAULT_TIMEOUT, None, "eager")
    assert s.timeout_knob == "--timeout"
    assert engine_settings(_args(), cfg).timeout_knob.startswith("timeout under [tool.exportlens] in pyproject.toml")


def test_exclude_skips_folders_and_files_in_walks(tmp_path: Path) -> None:
    for rel in ("a.py", "scratch/b.py", "pkg/legacy/c.py", "pkg/d.py", "pkg/test_e.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    found = project.python_files(str(tmp_path), ["scratch", "**/legacy/*", "test_*.py"], str(tmp_path))
    assert [Path(f).relative_to(tmp_path).as_posix() for f in found] == ["a.py", "pkg/d.py"]
    assert project.python_files(str(tmp_path / "pkg/test_e.py"), ["test_*.py"], str(tmp_path)) == [str(tmp_path / "pkg/test_e.py")]


def test_ignore_and_select_filter_the_engine(engine: SyncEngine, tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(BRANCH)
    _config(tmp_path, 'ignore = ["data-dependent-guard"]\n')
    assert spans(engine.check(path)) == []
    _config(tmp_path, 'select = ["graph-break"]\n')
    assert spans(engine.check(path)) == []
    _config(tmp_path, 'select = ["data-dependent-guard"]\n')
    assert spans(engine.check(path)) == [("m.py", 8, 11, 8, 16, "data-dependent-guard")]


def test_bad_value_in_the_engine_is_a_diagnostic_on_pyproject(engine: SyncEngine, tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(BRANCH)
    _config(tmp_path, 'select = ["data-dependent-guard"]\ntimeout = "soon"\n')
    res = engine.check(path)
    assert spans(res) == [("m.py", 8, 11, 8, 16, "data-dependent-guard"), ("pyproject.toml", 5, 0, 5, 16, "config-error")]
    assert res.diagnostics[1].message == ("pyproject.toml: [tool.exportlens] timeout must be a number of seconds between 0 and 86400, got 'soon'")


def test_cli_reads_pyproject_and_exits_2_on_a_bad_value(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(BRANCH)
    _config(tmp_path, 'ignore = ["data-dependent-guard"]\n')
    out = cli("check", str(path), "--format", "json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["diagnostics"] == []
    _config(tmp_path, 'compile-backend = "fast"\n')
    out = cli("check", str(path))
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip() == (
        f"exportlens: error: {tmp_path / 'pyproject.toml'}:5: pyproject.toml: [tool.exportlens] "
        "compile-backend must be one of eager, aot_eager, inductor, got 'fast'"
    )


def test_cli_uses_pyproject_python(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(BRANCH)
    _config(tmp_path, 'python = "no/such/python"\n')
    out = cli("check", str(path))
    assert out.returncode == 2
    assert "no/such/python" in out.stdout + out.stderr
    out = cli("check", str(path), "--python", sys.executable)  # the flag wins
    assert out.returncode == 1, out.stderr
