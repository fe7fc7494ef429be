"""Neither the server nor the worker imports from the user's workspace on start-up, whichever
documented way starts them: a `selectors.py`, `typing.py` or `json.py` in the working directory
(imported by asyncio, pygls and torch) must never run, least of all with `trusted: false`."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from exportlens.worker_client import WorkerClient

pytestmark = pytest.mark.torch

SHADOWED = ("selectors", "typing", "json")  # imported by asyncio, pygls and torch: after our first line
BEFORE_US = ("types", "functools", "enum")  # imported by `-m` itself before any of our code: only -P helps


def _shadow(ws: Path, names: tuple[str, ...]) -> None:
    for name in names:
        (ws / f"{name}.py").write_text(
            f"open({str(ws / 'IMPORTED')!r}, 'a').write({name!r} + '\\n')\nraise ImportError('the workspace must not be imported')\n"
        )


@pytest.fixture()
def hostile(tmp_path: Path) -> Path:
    """A workspace whose modules shadow the standard library and leave a mark when imported."""
    ws = tmp_path / "ws"
    ws.mkdir()
    _shadow(ws, SHADOWED)
    return ws


def _frame(message: dict[str, object]) -> bytes:
    body = json.dumps(message).encode()
    return f"Content-Length: {len(body)}\r\n\r\n".encode() + body


def _initialize_and_exit(command: list[str], ws: Path, *, cwd: Path, env: dict[str, str] | None = None) -> str:
    """Start the server, initialize it untrusted in `ws`, shut it down; return its stdout."""
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"processId": None, "rootUri": ws.as_uri(), "capabilities": {}, "initializationOptions": {"trusted": False}},
    }
    messages = [
        init,
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None},
        {"jsonrpc": "2.0", "method": "exit", "params": None},
    ]
    out = subprocess.run(command, input=b"".join(_frame(m) for m in messages), capture_output=True, cwd=cwd, env=env or dict(os.environ), timeout=120)
    return out.stdout.decode(errors="replace")


def _marks(ws: Path) -> list[str]:
    mark = ws / "IMPORTED"
    return mark.read_text().split() if mark.exists() else []


def test_python_dash_m_exportlens_serve_in_the_workspace(hostile: Path) -> None:
    out = _initialize_and_exit([sys.executable, "-m", "exportlens", "serve"], hostile, cwd=hostile)
    assert '"id": 1' in out.replace('"id":1', '"id": 1')  # it answered initialize
    assert _marks(hostile) == []


def test_python_dash_p_dash_m_exportlens_serve_the_readme_recipe(hostile: Path) -> None:
    _shadow(hostile, BEFORE_US)
    out = _initialize_and_exit([sys.executable, "-P", "-m", "exportlens", "serve"], hostile, cwd=hostile)
    assert "capabilities" in out
    assert _marks(hostile) == []


def test_the_exportlens_console_script(hostile: Path) -> None:
    _shadow(hostile, BEFORE_US)
    script = Path(sys.executable).parent / "exportlens"
    if not script.exists():
        pytest.skip("no console script installed next to this interpreter")
    out = _initialize_and_exit([str(script), "serve"], hostile, cwd=hostile)
    assert "capabilities" in out
    assert _marks(hostile) == []


def test_the_vs_code_extensions_launch(hostile: Path) -> None:
    """As extension/lib/serverLaunch.ts starts it: from the library folder, PYTHONSAFEPATH set and
    taken back out of the server's environment (the worker and user code must not inherit it)."""
    _shadow(hostile, BEFORE_US)
    launch = (ROOT / "extension" / "lib" / "serverLaunch.ts").read_text()
    assert "env['PYTHONSAFEPATH'] = '1'" in launch and "env['EXPORTLENS_SAFEPATH'] = '1'" in launch
    env = {**os.environ, "PYTHONPATH": str(ROOT / "server"), "PYTHONSAFEPATH": "1", "EXPORTLENS_SAFEPATH": "1"}
    out = _initialize_and_exit([sys.executable, "-m", "exportlens", "serve"], hostile, cwd=ROOT / "server", env=env)
    assert "capabilities" in out
    assert _marks(hostile) == []
    probe = subprocess.run([sys.executable, "-m", "exportlens", "--version"], cwd=ROOT / "server", env=env, capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0
    check = (
        "import os, runpy, sys; sys.argv = ['exportlens', '--version']\n"
        "try:\n    runpy.run_module('exportlens', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "print('PYTHONSAFEPATH' in os.environ)"
    )
    env_after = subprocess.run([sys.executable, "-c", check], cwd=ROOT / "server", env=env, capture_output=True, text=True, timeout=60)
    assert env_after.stdout.strip().splitlines()[-1] == "False"


def test_the_workers_own_launch_from_a_server_started_in_the_workspace(hostile: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _shadow(hostile, BEFORE_US)
    monkeypatch.chdir(hostile)  # the server's working directory is the workspace

    async def start_and_close() -> dict[str, object]:
        client = WorkerClient(sys.executable, warmup=False)
        try:
            return await client.start()
        finally:
            await client.close()

    info = asyncio.run(start_and_close())
    assert "torch" in info
    assert _marks(hostile) == []
