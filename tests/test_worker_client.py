"""The client side of the worker on its own: cancellation at any moment never hangs, a closed
client starts nothing, and job slots are handed out first come, first served."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from exportlens import worker_client
from exportlens.worker_client import WorkerClient, WorkerUnavailable, _FairSlots


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
