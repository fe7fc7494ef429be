"""The source overlay: a job runs texts given in memory under the files' real names.

In-process unit tests of `exportlens.worker.overlay` (standard library only), then real jobs
through the engine: the override runs, its lines are what stacks and placement show, and the
files on disk are never touched.
"""

from __future__ import annotations

import linecache
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import ROOT, SyncEngine, spans

from exportlens.worker import overlay

pytestmark = pytest.mark.torch

BRANCH = textwrap.dedent("""\
    import torch


    class Threshold(torch.nn.Module):
        def forward(self, x, y):
            n = x.item()
            if n > 2:
                return y * 2
            return y - 1


    model = Threshold()
    example_args = (torch.tensor(5), torch.ones(3))
""")


def _run_isolated(code: str, cwd: Path) -> str:
    """Overlay tests that import modules run in a fresh interpreter (sys.modules stays clean)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "server"), "PYTHONDONTWRITEBYTECODE": ""}
    out = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_import_serves_the_override_and_writes_no_bytecode(tmp_path: Path) -> None:
    (tmp_path / "helper.py").write_text("VALUE = 'disk'\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("NAME = 'disk pkg'\n")
    code = textwrap.dedent(f"""\
        import sys, linecache, inspect
        sys.path.insert(0, {str(tmp_path)!r})
        from exportlens.worker import overlay
        overlay.install({{{str(tmp_path / "helper.py")!r}: "VALUE = 'memory'\\ndef f():\\n    raise ValueError('x')\\n",
                         {str(tmp_path / "pkg" / "__init__.py")!r}: "NAME = 'memory pkg'\\n"}})
        import helper, pkg
        print(helper.VALUE, '|', pkg.NAME, '|', pkg.__path__[0].endswith('pkg'))
        print(inspect.getsource(helper.f).splitlines()[0])
        try:
            helper.f()
        except ValueError as exc:
            import traceback
            last = traceback.extract_tb(exc.__traceback__)[-1]
            print(last.filename == {str(tmp_path / "helper.py")!r}, last.lineno, last.line)
    """)
    out = _run_isolated(code, tmp_path).splitlines()
    assert out == ["memory | memory pkg | True", "def f():", "True 3 raise ValueError('x')"]
    assert (tmp_path / "helper.py").read_text() == "VALUE = 'disk'\n"
    assert not (tmp_path / "__pycache__").exists() or not list((tmp_path / "__pycache__").glob("helper*"))


def test_modules_without_override_load_from_disk(tmp_path: Path) -> None:
    (tmp_path / "plain.py").write_text("VALUE = 'disk'\n")
    code = textwrap.dedent(f"""\
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        from exportlens.worker import overlay
        overlay.install({{{str(tmp_path / "other.py")!r}: "X = 1\\n"}})
        import plain
        print(plain.VALUE, type(plain.__loader__).__name__)
    """)
    assert _run_isolated(code, tmp_path).split() == ["disk", "SourceFileLoader"]


def test_run_path_compiles_the_override_with_the_real_filename(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text("RESULT = 'disk'\n")
    overlay.install({str(script): "import sys\nRESULT = 'memory'\nME = sys.modules[__name__].__file__\n\n\ndef boom():\n    raise KeyError(1)\n"})
    try:
        ns = overlay.run_path(str(script), "__exportlens_test__")
        assert ns["RESULT"] == "memory"
        assert ns["ME"] == str(script)
        assert ns["boom"].__code__.co_filename == str(script)
        assert linecache.getline(str(script), 7).strip() == "raise KeyError(1)"
        assert "__exportlens_test__" not in sys.modules
    finally:
        overlay.uninstall()
    assert linecache.getline(str(script), 1) == "RESULT = 'disk'\n"
    assert overlay.run_path(str(script), "__exportlens_test__")["RESULT"] == "disk"


def test_install_rejects_non_text(tmp_path: Path) -> None:
    try:
        overlay.install({str(tmp_path / "a.py"): b"bytes"})  # type: ignore[dict-item]
    except TypeError as exc:
        assert "texts" in str(exc)
    else:
        raise AssertionError("bytes accepted as an override")
    finally:
        overlay.uninstall()


def test_job_runs_the_override_not_the_disk(engine: SyncEngine, project: Path) -> None:
    model = project / "model.py"
    model.write_text(BRANCH)
    before = engine.check(model)
    assert spans(before) == [("model.py", 6, 11, 6, 16, "data-dependent-guard")]
    fixed = BRANCH.replace("        if n > 2:", "        torch._check(n > 2)\n        if n > 2:")
    after = engine.check(model, overrides={str(model): fixed})
    assert spans(after) == [("model.py", 12, 0, 12, 19, "could-be-dynamic")]  # fixed: exports; x's length a hint
    assert [t.status for t in after.targets] == ["ok"]
    assert model.read_text() == BRANCH


def test_override_of_a_helper_places_findings_on_the_override(engine: SyncEngine, project: Path) -> None:
    (project / "layers.py").write_text("import torch\n\n\ndef scale(x, c):\n    return x * 2\n")
    model = project / "model.py"
    model.write_text(
        textwrap.dedent("""\
        import torch
        from layers import scale


        class M(torch.nn.Module):
            def forward(self, x, c):
                return scale(x, c) + 1


        model = M()
        example_args = (torch.ones(2), torch.tensor([1, 5]))
    """)
    )
    assert spans(engine.check(model)) == [("model.py", 9, 0, 9, 11, "could-be-dynamic")]  # exports on disk: x's and c's length a hint
    helper = "import torch\n\n# moved down a line\n\ndef scale(x, c):\n    k = c.max().item()\n    if k > 3:\n        return x * k\n    return x\n"
    result = engine.check(model, overrides={str(project / "layers.py"): helper})
    assert spans(result) == [("layers.py", 6, 7, 6, 12, "data-dependent-guard")]
    (diag,) = result.diagnostics
    assert "k > 3" in diag.message
    assert (project / "layers.py").read_text().count("item") == 0


def test_override_traceback_places_errors_on_the_override_line(engine: SyncEngine, project: Path) -> None:
    model = project / "model.py"
    model.write_text(BRANCH)
    broken = BRANCH.replace("        n = x.item()", "        n = x.item()\n\n\n        raise ValueError('from memory')")
    result = engine.check(model, overrides={str(model): broken})
    found = [(d.code, d.range.start.line) for d in result.diagnostics]
    assert found == [("export-error", 8)], [d.message for d in result.diagnostics]
    assert "from memory" in result.diagnostics[0].message
