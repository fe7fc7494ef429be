"""Faults in user code end that job only: each becomes a finding and the next job is right."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from conftest import EXAMPLES, SyncEngine, spans

from exportlens.engine import EngineSettings

pytestmark = pytest.mark.torch

MODEL = """import torch


class M(torch.nn.Module):
    def forward(self, x):
        {body}
        return x + 1


model = M()
example_args = (torch.ones(3),)
"""


def _write(project: Path, body: str, name: str = "faulty.py") -> Path:
    path = project / name
    path.write_text(MODEL.format(body=body))
    return path


@pytest.fixture(scope="module")
def fast_engine() -> SyncEngine:
    eng = SyncEngine(EngineSettings(timeout=4, memory_mb=512))
    yield eng
    eng.close()


def _still_correct(eng: SyncEngine) -> None:
    assert spans(eng.check(EXAMPLES / "data_dependent/item_branch.py")) == [("item_branch.py", 8, 11, 8, 16, "data-dependent-guard")]


@pytest.mark.parametrize(
    ("body", "code", "status", "words"),
    [
        ("import time; time.sleep(60)", "worker-timeout", "timeout", "time limit"),
        ("import ctypes; ctypes.string_at(0)", "worker-crashed", "crashed", "SIGSEGV"),
        ("import os; os._exit(3)", "worker-crashed", "crashed", "status 3"),
        ("import os; os._exit(0)", "worker-crashed", "crashed", "before the analysis finished"),
        ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", "worker-crashed", "crashed", "SIGKILL"),
    ],
)
def test_process_faults_become_findings(fast_engine: SyncEngine, project: Path, body: str, code: str, status: str, words: str) -> None:
    path = _write(project, body)
    result = fast_engine.check(path)
    (d,) = result.diagnostics
    assert (d.code, d.file, d.range.start.line) == (code, str(path), 9)  # the `model = M()` target line
    assert words in d.message
    assert [t.status for t in result.targets] == [status]
    _still_correct(fast_engine)


@pytest.mark.parametrize(
    ("body", "code", "line", "words"),
    [
        ("raise ValueError('boom from user code')", "export-error", 5, "ValueError: boom from user code"),
        ("x = [0] * (10 ** 10)", "export-error", 5, "MemoryError"),
    ],
)
def test_exceptions_in_forward(fast_engine: SyncEngine, project: Path, body: str, code: str, line: int, words: str) -> None:
    path = _write(project, body)
    (d,) = fast_engine.check(path).diagnostics
    assert (d.code, d.range.start.line) == (code, line)
    assert words in d.message
    _still_correct(fast_engine)


def test_sys_exit_in_the_script(fast_engine: SyncEngine, project: Path) -> None:
    path = project / "exits.py"
    path.write_text("import sys\nimport torch\nsys.exit(2)\nmodel = torch.nn.Linear(2, 2)\nexample_args = (torch.ones(2),)\n")
    result = fast_engine.check(path)
    (d,) = result.diagnostics
    assert d.code == "target-error" and "sys.exit(2)" in d.message
    _still_correct(fast_engine)


def test_import_error(fast_engine: SyncEngine, project: Path) -> None:
    path = project / "imports.py"
    path.write_text("import torch\nimport no_such_module_here\nmodel = torch.nn.Linear(2, 2)\nexample_args = (torch.ones(2),)\n")
    (d,) = fast_engine.check(path).diagnostics
    assert (d.code, d.range.start.line, d.range.start.character, d.range.end.character) == ("target-error", 1, 0, 26)
    assert "ModuleNotFoundError: No module named 'no_such_module_here'" in d.message


def test_user_state_is_not_shared_between_jobs(fast_engine: SyncEngine, project: Path) -> None:
    helper = project / "counter.py"
    helper.write_text("calls = []\n")
    path = project / "stateful.py"
    path.write_text(
        "import torch\nimport counter\ncounter.calls.append(1)\n\n\n"
        "class M(torch.nn.Module):\n    def forward(self, x):\n        return x * len(counter.calls)\n\n\n"
        "assert len(counter.calls) == 1, counter.calls\nmodel = M()\nexample_args = (torch.ones(2),)\n"
    )
    for _ in range(2):
        result = fast_engine.check(path)
        assert [d.code for d in result.diagnostics] == ["could-be-dynamic"] and [t.status for t in result.targets] == ["ok"]  # x's length: a hint


def test_zygote_restarts_after_it_dies(project: Path) -> None:
    eng = SyncEngine(EngineSettings(timeout=30))
    try:
        _still_correct(eng)
        pid = eng.engine.worker.info["pid"]
        os.kill(pid, signal.SIGKILL)
        _still_correct(eng)
        assert eng.engine.worker.info["pid"] != pid
    finally:
        eng.close()


def test_big_parallel_ops_in_a_job_do_not_hang(fast_engine: SyncEngine, project: Path) -> None:
    """OpenMP pools do not survive fork: the zygote never starts one, so jobs may (docs/torch-facts.md §5)."""
    path = project / "matmul.py"
    path.write_text(
        "import torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
        "        return (x @ x).sort(dim=1).values\n\n\nmodel = M()\nexample_args = (torch.randn(2000, 2000),)\n"
    )
    for _ in range(2):
        result = fast_engine.check(path)
        # x's square size could be dynamic (a hint): the probe's fork after the job's OpenMP pool does not hang either
        assert [t.status for t in result.targets] == ["ok"] and [d.code for d in result.diagnostics] == ["could-be-dynamic"]


def test_spawn_fallback_where_fork_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXPORTLENS_NO_FORK", "1")
    eng = SyncEngine(EngineSettings(timeout=60))
    try:
        assert eng.engine.worker.info == {}
        _still_correct(eng)
        assert eng.engine.worker.info["fork"] is False
        assert spans(eng.check(EXAMPLES / "two_files/model.py")) == [("layers.py", 7, 7, 7, 12, "data-dependent-guard")]
    finally:
        eng.close()


def test_sys_exit_zero_at_import_is_not_a_silent_clean(fast_engine: SyncEngine, project: Path) -> None:
    path = project / "exits_zero.py"
    path.write_text("import sys\nimport torch\nsys.exit(0)\nmodel = torch.nn.Linear(2, 2)\nexample_args = (torch.ones(2),)\n")
    result = fast_engine.check(path)
    (d,) = result.diagnostics
    assert (d.code, d.range.start.line) == ("target-error", 2)
    assert "sys.exit(0) before any export target ran" in d.message
    assert [t.status for t in result.targets] == ["error"]


def test_system_exit_in_a_forward_called_from_a_script(fast_engine: SyncEngine, project: Path) -> None:
    path = project / "script_exit.py"
    path.write_text(
        "import sys\n\nimport torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
        "        sys.exit(0)\n\n\ntorch.export.export(M(), (torch.ones(2),))\n"
    )
    result = fast_engine.check(path)
    (d,) = result.diagnostics
    assert (d.code, d.range.start.line) == ("target-error", 7)
    assert d.message.startswith("The model called sys.exit(0) during the export")
    assert [(t.name, t.status) for t in result.targets] == [("export at script_exit.py:11", "error")]


def test_a_script_that_replaces_torch_export_export(fast_engine: SyncEngine, project: Path) -> None:
    path = project / "replaces.py"
    path.write_text("import torch\n\ntorch.export.export = lambda *args, **kwargs: None\ntorch.export.export(torch.nn.Linear(2, 2), (torch.ones(2),))\n")
    result = fast_engine.check(path)
    (d,) = result.diagnostics
    assert d.code == "target-error" and "replaced torch.export.export" in d.message


def test_a_target_the_script_never_reaches(fast_engine: SyncEngine, project: Path) -> None:
    path = project / "unreached.py"
    path.write_text("import torch\n\nif torch.__version__ == 'never':\n    torch.export.export(torch.nn.Linear(2, 2), (torch.ones(2),))\n")
    result = fast_engine.check(path)
    (d,) = result.diagnostics
    assert (d.code, d.range.start.line) == ("target-error", 3)
    assert d.message.startswith("No target of this file ran (export at unreached.py:4)")
