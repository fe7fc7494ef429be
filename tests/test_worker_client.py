"""The client side of the worker on its own: cancellation at any moment never hangs, a closed
client starts nothing, and job slots are handed out first come, first served."""

from __future__ import annotations

import asyncio
import sys

import pytest

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
