"""The client side of the worker on its own: cancellation at any moment never hangs, a closed
client starts nothing, job slots are handed out first come, first served, and background jobs
give way at once to the runs somebody waits for."""

from __future__ import annotations

import asyncio
import inspect
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from exportlens import worker_client
from exportlens.protocol import JobEvent, JobSpec
from exportlens.worker_client import BACKGROUND, WorkerClient, WorkerUnavailable, _FairSlots

pytestmark = pytest.mark.torch


async def test_cancelling_a_start_at_any_moment_leaves_no_worker() -> None:
    for steps in range(4):  # the cancellation lands at each of the first moments of a start
        client = WorkerClient(sys.executable, warmup=False)
        starting = asyncio.ensure_future(client.start())
        for _ in range(steps + 1):
            await asyncio.sleep(0)
        starting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(starting, 30)
        await asyncio.wait_for(client.close(), 30)
        assert not client.running


async def test_close_while_starting_ends_the_start_at_once() -> None:
    client = WorkerClient(sys.executable, warmup=False)
    starting = asyncio.ensure_future(client.start())
    while client._proc is None:
        await asyncio.sleep(0.01)
    await asyncio.wait_for(client.close(), 30)
    with pytest.raises(WorkerUnavailable):
        await asyncio.wait_for(starting, 10)  # not the 180 s start-up limit
    with pytest.raises(WorkerUnavailable, match="shut down"):
        await client.start()  # a closed client starts no new worker


async def test_slots_are_first_come_first_served_and_survive_cancellation() -> None:
    slots = _FairSlots(1)
    order: list[int] = []
    await slots.acquire()

    async def take(i: int) -> None:
        await slots.acquire()
        order.append(i)
        await asyncio.sleep(0.01)
        slots.release()

    waiters = [asyncio.ensure_future(take(i)) for i in range(4)]
    await asyncio.sleep(0.01)
    waiters[1].cancel()  # a run superseded while it waited gives its turn away
    slots.release()
    await asyncio.gather(*waiters, return_exceptions=True)
    assert order == [0, 2, 3]
    assert slots.used == 0


# -- a zygote started before the server's event loop (worker_client.prestart) -------------------


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_a_prestarted_zygote_is_adopted_and_serves_runs() -> None:
    from conftest import EXAMPLES

    from exportlens.engine import Engine, EngineSettings

    worker_client.prestart(None, warmup=False)
    early = worker_client._early
    assert early is not None
    engine = Engine(EngineSettings(warmup=False))  # the server's own interpreter, as prestarted
    try:
        info = await asyncio.wait_for(engine.start(), 180)
        assert info["pid"] == early.popen.pid  # adopted, not a second zygote
        assert worker_client._early is None
        result = await engine.check_file(str(EXAMPLES / "data_dependent" / "item_branch.py"))
        assert [(d.code, d.range.start.line) for d in result.diagnostics] == [("data-dependent-guard", 8)]  # examples/EXPECTED.json
    finally:
        await engine.close()
    assert not _alive(early.popen.pid)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_a_prestarted_zygote_for_another_interpreter_is_stopped(tmp_path: Path) -> None:
    other = tmp_path / "python"
    other.symlink_to(sys.executable)  # another interpreter setting (same binary, other name)
    worker_client.prestart(str(other), warmup=False)
    early = worker_client._early
    assert early is not None
    client = WorkerClient(sys.executable, warmup=False)
    try:
        info = await asyncio.wait_for(client.start(), 180)
        assert info["pid"] != early.popen.pid
        assert not _alive(early.popen.pid)
        assert worker_client._early is None
    finally:
        await client.close()


def test_a_prestarted_zygote_nobody_adopts_ends_with_the_server() -> None:
    worker_client.prestart(None, warmup=False)
    early = worker_client._early
    assert early is not None
    worker_client.discard_prestarted()  # what atexit does when the server ends first
    assert early.popen.returncode is not None
    assert worker_client._early is None


# -- background work (fix verification) gives way to the runs somebody waits for ---------------

SLEEPER = """import time

import torch

time.sleep(600)  # a verification job still running when the next run comes


class Same(torch.nn.Module):
    def forward(self, x):
        return x + 1


model = Same()
example_args = (torch.ones(2),)
"""


def _job(path: Path) -> JobSpec:
    return {
        "file": str(path),
        "root": str(path.parent),
        "main": False,
        "module_vars": True,
        "factories": [],
        "lines": {"model": 1},
        "compile": False,
        "trace": False,
    }


def _nice(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[16])  # field 19 of stat(5): the nice value


async def _until(what: str, probe: Callable[[], Any], limit: float = 180.0) -> Any:
    """Poll `probe` (plain or async) until it gives something truthy; fail after `limit` seconds."""
    deadline = asyncio.get_running_loop().time() + limit
    while True:
        value = probe()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


async def _all(events: AsyncIterator[JobEvent]) -> list[JobEvent]:
    return [e async for e in events]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_a_run_preempts_background_jobs_at_once_and_starts_on_a_warm_spare(tmp_path: Path) -> None:
    """Background jobs never take a warm spare and run niced; preempt() kills them without waiting
    and hands their slots on, and the next run starts on a spare that was warm before it was sent."""
    (tmp_path / "sleeper.py").write_text(SLEEPER)
    (tmp_path / "quick.py").write_text(SLEEPER.replace("time.sleep(600)  # a verification job still running when the next run comes", "pass"))
    client = WorkerClient(sys.executable, max_jobs=1)  # one slot: the run can only have the one verification held
    events: list[JobEvent] = []

    async def verify() -> None:
        BACKGROUND.set("verify sleeper.py")
        async for event in client.run(_job(tmp_path / "sleeper.py"), timeout=600):
            events.append(event)

    try:
        await asyncio.wait_for(client.start(), 180)
        warm = await _until("a warm spare", client.spares)
        background = asyncio.ensure_future(verify())
        started = await _until("the background job to start", lambda: [e for e in events if e["event"] == "started"])
        job_pid = int(started[0]["pid"])
        assert job_pid not in warm and set(warm) <= set(await client.spares())  # the spares wait for the runs
        assert _nice(job_pid) == 10 and client.slots.used == 1

        assert client.preempt("verify something else") == [] and _alive(job_pid)
        (preempted,) = client.preempt()
        assert client.slots.used == 0  # its slot is free before the job has even died
        run = await asyncio.wait_for(_all(client.run(_job(tmp_path / "quick.py"), timeout=120)), 180)  # not behind the slot
        assert run[0]["event"] == "started" and int(run[0]["pid"]) in warm  # warm before it was sent
        assert (run[-1]["event"], run[-1].get("status")) == ("done", "ok")
        await _until("the preempted job's process to end", lambda: not _alive(job_pid), 30)
        await asyncio.wait_for(background, 30)
        assert (events[-1]["event"], events[-1]["id"], events[-1].get("status")) == ("done", preempted, "cancelled")
    finally:
        await client.close()


RANDOM_EXAMPLE = """import torch


class Same(torch.nn.Module):
    def forward(self, x):
        return x + 1


model = Same()
example_args = (torch.randn(8),)
"""


async def test_every_job_starts_from_the_same_random_state_on_a_spare_or_a_fresh_fork(tmp_path: Path) -> None:
    """A spare's warm-up builds layers with random weights; a fresh fork does not. Examples drawn with
    `torch.randn` are still the same in both, or a verified fix's outputs would look changed."""
    (tmp_path / "random_example.py").write_text(RANDOM_EXAMPLE)
    job: JobSpec = {**_job(tmp_path / "random_example.py"), "outputs": True}
    client = WorkerClient(sys.executable, max_jobs=1)

    async def outputs(background: bool) -> tuple[int, Any]:
        if background:
            BACKGROUND.set("verify random_example.py")  # never on a spare: a fresh fork
        events = await asyncio.wait_for(_all(client.run(job, timeout=120)), 180)
        [target] = [e for e in events if e["event"] == "target"]
        return int(events[0]["pid"]), target["outputs"]

    try:
        await asyncio.wait_for(client.start(), 180)
        warm = await _until("a warm spare", client.spares)
        on_spare_pid, on_spare = await outputs(background=False)
        fresh_pid, fresh = await asyncio.ensure_future(outputs(background=True))  # its own context: BACKGROUND set there only
        assert on_spare_pid in warm and fresh_pid not in warm
        assert on_spare == fresh and len(on_spare) == 1 and on_spare[0]["shape"] == [8]
    finally:
        await client.close()


def test_the_zygotes_warm_up_of_a_failing_export_says_nothing() -> None:
    """Start-up warms the path of a target that fails (plain export on a data-dependent guard, then
    draft export past it) so each failing job starts warm; torch's report of that warm-up is no
    concern of the user's and must not reach the worker's stderr (crash messages quote its tail)."""
    import json
    import subprocess
    import uuid

    proc = subprocess.Popen(
        worker_client._command(sys.executable, True),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=worker_client._environment(uuid.uuid4().hex),
        cwd=worker_client.PACKAGE_PARENT,
    )
    try:
        assert proc.stdout is not None and proc.stdin is not None
        ready = json.loads(proc.stdout.readline())
        _, stderr = proc.communicate(b"", timeout=180)  # closes its stdin: the zygote ends
    finally:
        proc.kill()
        proc.wait()
    assert (ready["event"], ready["warmup_error"]) == ("ready", None)
    text = stderr.decode(errors="replace")
    for noise in ("issue(s) found during export", "propagate_real_tensors", "GuardOnDataDependentSymNode", "u0 > 1"):
        assert noise not in text, text
