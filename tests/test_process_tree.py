"""A job is a process tree, and the parent owns its deadline: nothing user code forks or closes
can hang the worker or outlive it (issue: hangs and orphans).

Every test marks the processes it starts with a unique environment variable (inherited by the
zygote, its jobs and whatever they fork, also after `setsid()`) and then looks through /proc for
survivors carrying it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLES, ROOT, SyncEngine, spans

from exportlens.engine import EngineSettings

pytestmark = [pytest.mark.torch, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")]

TOKEN_VAR = "EXPORTLENS_TEST_TOKEN"

# forks a grandchild that leaves the job's session and sleeps with the job's pipe still open
SETSID_GRANDCHILD = """
def _escape():
    if os.fork() == 0:
        os.setsid()
        time.sleep(600)
        os._exit(0)
"""

MODEL = """import os
import time

import torch
{prelude}

class M(torch.nn.Module):
    def forward(self, x):
        {body}
        return x + 1


{module_code}
model = M()
example_args = (torch.ones(2),)
"""


def survivors(token: str) -> list[tuple[int, str]]:
    """Live processes (not zombies) whose environment carries `token`."""
    found = []
    needle = f"{TOKEN_VAR}={token}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                env = fh.read()
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if needle in env.split(b"\0"):
            found.append((int(entry), cmd))
    return found


def wait_no_survivors(token: str, limit: float = 20.0) -> list[tuple[int, str]]:
    """Killing is asynchronous: give the tree a moment, then report who is still there."""
    deadline = time.monotonic() + limit
    while (left := survivors(token)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


@pytest.fixture()
def token(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A unique mark, in this process's environment (so engines started here pass it on)."""
    value = uuid.uuid4().hex
    monkeypatch.setenv(TOKEN_VAR, value)
    yield value
    for pid, _ in survivors(value):  # never leave a test's orphans behind, even when it failed
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _as_in_a_terminal() -> None:
    """A terminal's foreground job gets Ctrl+C; a test run started in the background (`cmd &` in
    a script) would pass an ignored SIGINT on, and Python then leaves it ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _cli(args: list[str], token: str) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env[TOKEN_VAR] = token
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "server"), env.get("PYTHONPATH")) if p)
    return subprocess.Popen(
        [sys.executable, "-m", "exportlens", "check", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_as_in_a_terminal
    )


def _wait_for_file(path: Path, proc: subprocess.Popen[str] | None = None, limit: float = 90.0) -> None:
    deadline = time.monotonic() + limit
    while not path.exists():
        assert proc is None or proc.poll() is None, proc.communicate() if proc else ""
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.1)


def test_a_setsid_grandchild_holding_the_pipe_neither_hangs_the_worker_nor_survives(project: Path, token: str) -> None:
    path = project / "escapes.py"
    path.write_text(MODEL.format(prelude=SETSID_GRANDCHILD, body="_escape()", module_code=""))
    eng = SyncEngine(EngineSettings(timeout=30, memory_mb=2048))
    try:
        result = eng.call(eng.engine.check_file(str(path)), timeout=120)
        # x's length could be dynamic (a hint): the probe, forked beside plain export, did not hang either
        assert [t.status for t in result.targets] == ["ok"] and [d.code for d in result.diagnostics] == ["could-be-dynamic"]
        # the zygote still answers: the next job is not stuck behind the grandchild's pipe
        assert spans(eng.call(eng.engine.check_file(str(EXAMPLES / "data_dependent/item_branch.py")), timeout=120)) == [
            ("item_branch.py", 8, 11, 8, 16, "data-dependent-guard")
        ]
        grandchildren = [p for p, cmd in survivors(token) if p not in _zygote_family(eng)]
        assert grandchildren == []  # the escaped grandchild went with its job, not with the zygote
    finally:
        eng.close()
    assert wait_no_survivors(token) == []


def _zygote_family(eng: SyncEngine) -> set[int]:
    """The zygote and the spare it keeps forked ahead (legitimately alive while the engine is)."""
    pid = int(eng.engine.worker.info["pid"])
    family = {pid}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if ppid == pid:
                family.add(int(entry))
    return family


def test_user_code_that_closes_its_fds_and_keeps_running_ends_at_the_deadline(project: Path, token: str) -> None:
    path = project / "closes.py"
    path.write_text(MODEL.format(prelude="", body="pass", module_code="os.closerange(0, 4096)\ntime.sleep(600)\n"))
    started = time.monotonic()
    proc = _cli([str(path), "--timeout", "8"], token)
    try:
        out, err = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("exportlens check never returned")
    assert time.monotonic() - started < 90
    assert proc.returncode == 1, err
    line = path.read_text().splitlines().index("model = M()") + 1
    assert f"{path.name}:{line}:1: error[worker-" in out.replace(str(path), path.name), out
    assert wait_no_survivors(token) == []


def test_ctrl_c_on_the_cli_ends_the_whole_tree(project: Path, token: str) -> None:
    started_mark = project / "started"
    path = project / "sleeps.py"
    path.write_text(MODEL.format(prelude=SETSID_GRANDCHILD, body="pass", module_code=f"_escape()\nopen({str(started_mark)!r}, 'w').close()\ntime.sleep(600)\n"))
    proc = _cli([str(path), "--timeout", "300"], token)
    try:
        _wait_for_file(started_mark, proc)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("exportlens check did not stop on Ctrl+C")
    assert proc.returncode == 130
    assert wait_no_survivors(token) == []


def test_a_killed_zygote_takes_its_jobs_and_their_children_along(project: Path, token: str) -> None:
    started_mark = project / "started"
    path = project / "sleeps.py"
    path.write_text(MODEL.format(prelude=SETSID_GRANDCHILD, body="pass", module_code=f"_escape()\nopen({str(started_mark)!r}, 'w').close()\ntime.sleep(600)\n"))
    eng = SyncEngine(EngineSettings(timeout=300, memory_mb=2048))
    try:
        eng.call(eng.engine.start(), timeout=120)
        zygote = int(eng.engine.worker.info["pid"])
        import asyncio

        run = asyncio.run_coroutine_threadsafe(eng.engine.check_file(str(path)), eng.loop)
        _wait_for_file(started_mark)
        os.kill(zygote, signal.SIGKILL)
        result = run.result(60)
        assert [t.status for t in result.targets] == ["crashed"]
        (d,) = result.diagnostics
        assert d.code == "worker-crashed" and "died" in d.message
        # the jobs and the grandchild went with it (the new zygote is not started until needed)
        assert wait_no_survivors(token) == []
    finally:
        eng.close()


MEMORY_HOG = '''
def _hog():
    """Three forked children, each under a per-process cap, together well over the job's."""
    for _ in range(3):
        if os.fork() == 0:
            block = b"x" * (250 << 20)
            time.sleep(600)
            os._exit(len(block) & 0)
    time.sleep(600)
'''


def test_the_memory_cap_counts_the_whole_process_tree(project: Path, token: str) -> None:
    path = project / "hog.py"
    path.write_text(MODEL.format(prelude=MEMORY_HOG, body="pass", module_code="_hog()\n"))
    eng = SyncEngine(EngineSettings(timeout=90, memory_mb=400))
    try:
        result = eng.call(eng.engine.check_file(str(path)), timeout=150)
        (d,) = result.diagnostics
        line = path.read_text().splitlines().index("model = M()")
        assert (d.code, d.range.start.line) == ("worker-crashed", line)
        assert "memory cap of 400 MB" in d.message and "whole process tree" in d.message
        assert [t.status for t in result.targets] == ["crashed"]
        assert [p for p, _ in survivors(token) if p not in _zygote_family(eng)] == []
    finally:
        eng.close()
    assert wait_no_survivors(token) == []


def test_no_more_jobs_at_once_than_the_setting_allows(project: Path, token: str) -> None:
    """Five files at once with jobs=2: never more than two run together, and every one runs.

    Which two go first is not asserted: each file is planned in a thread before it asks for a slot, so the
    order slots are asked in is the order plans finish (FIFO slots themselves: test_worker_client).
    """
    log = project / "intervals.log"
    paths = []
    for i in range(5):
        path = project / f"f{i}.py"
        code = (
            f"with open({str(log)!r}, 'a') as fh:\n    fh.write(f'start {i} {{time.time()}}\\n')\n"
            f"time.sleep(1.5)\nwith open({str(log)!r}, 'a') as fh:\n    fh.write(f'end {i} {{time.time()}}\\n')\n"
        )
        path.write_text(MODEL.format(prelude="", body="pass", module_code=code))
        paths.append(path)
    eng = SyncEngine(EngineSettings(timeout=60, memory_mb=2048, jobs=2))
    try:
        eng.call(eng.engine.start(), timeout=120)
        import asyncio

        async def all_at_once() -> list[Any]:
            return await asyncio.gather(*(eng.engine.check_file(str(p)) for p in paths))

        results = eng.call(all_at_once(), timeout=240)
        assert [[t.status for t in r.targets] for r in results] == [["ok"]] * 5
    finally:
        eng.close()
    events = sorted((float(t), kind, int(i)) for kind, i, t in (ln.split() for ln in log.read_text().splitlines()))
    running, most = 0, 0
    for _, kind, _ in events:
        running += 1 if kind == "start" else -1
        most = max(most, running)
    assert most <= 2
    assert sorted(i for _, kind, i in events if kind == "start") == [0, 1, 2, 3, 4]


def _serve(token: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env[TOKEN_VAR] = token
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "server"), env.get("PYTHONPATH")) if p)
    return subprocess.Popen([sys.executable, "-m", "exportlens", "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)


@pytest.mark.parametrize("when", ["before its libraries are loaded", "once its worker runs"])
def test_a_server_that_ends_right_after_initialize_leaves_no_worker(token: str, when: str) -> None:
    """The worker starts as `initialize` is answered, before pygls is imported (worker_client.prestart):
    a client gone at once must not leave that zygote behind, adopted or not."""
    proc = _serve(token)
    assert proc.stdin is not None and proc.stdout is not None
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "rootUri": None, "capabilities": {}}}).encode()
    proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    proc.stdin.flush()
    assert proc.stdout.readline().lower().startswith(b"content-length")  # answered (before pygls loads)
    deadline = time.monotonic() + 120
    while not any("exportlens.worker" in cmd for _, cmd in survivors(token)):
        assert time.monotonic() < deadline and proc.poll() is None, "no worker was started"
        time.sleep(0.05)
    if when == "once its worker runs":
        while not any("exportlens.worker" in cmd and _has_child(pid) for pid, cmd in survivors(token)):  # a spare: ready
            assert time.monotonic() < deadline and proc.poll() is None, "the worker never got ready"
            time.sleep(0.1)
    proc.stdin.close()  # the editor went away without a word
    proc.wait(60)
    assert wait_no_survivors(token) == []


def _has_child(pid: int) -> bool:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    if int(fh.read().rsplit(")", 1)[1].split()[1]) == pid:
                        return True
            except (OSError, ValueError, IndexError):
                continue
    return False
