"""The server's side of the worker: start the zygote, send jobs, stream their events back.

It never imports torch. If the zygote dies it is started again on the next job; jobs that were
running when it died end with a `crashed` event instead of hanging.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

from exportlens.protocol import DoneEvent, JobEvent, JobSpec, Request, RunRequest

PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
READY_TIMEOUT = 180.0
RETRY_START_AFTER = 30.0  # a zygote that failed to start is not started again for every file of a check


class WorkerUnavailable(Exception):
    """The zygote could not start (no torch in that interpreter, a broken interpreter...)."""


class WorkerClient:
    def __init__(self, python: str | None = None, *, warmup: bool = True,
                 log: Callable[[str], None] | None = None) -> None:
        self.python = python or sys.executable
        self.warmup = warmup
        self.log = log or (lambda line: None)
        self.info: dict[str, Any] = {}
        self._proc: asyncio.subprocess.Process | None = None
        self._queues: dict[str, asyncio.Queue[JobEvent]] = {}
        self._ready: asyncio.Future[dict[str, Any]] | None = None
        self._start_lock = asyncio.Lock()
        self._ids = itertools.count(1)
        self._tasks: list[asyncio.Task[None]] = []
        self._stderr_tail: list[str] = []
        self._owner: dict[str, asyncio.subprocess.Process] = {}  # job → the zygote it was sent to
        self._failed: tuple[float, WorkerUnavailable] | None = None  # the last failed start, and when

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    async def start(self) -> dict[str, Any]:
        """Start the zygote if needed; return its `ready` event (torch version, timings)."""
        async with self._start_lock:
            if self.running and self._ready is not None and self._ready.done() and not self._ready.exception():
                return self._ready.result()
            loop = asyncio.get_running_loop()
            if self._failed is not None and loop.time() - self._failed[0] < RETRY_START_AFTER:
                raise self._failed[1]
            try:
                info = await self._start()
            except WorkerUnavailable as exc:
                self._failed = (loop.time(), exc)
                raise
            self._failed = None
            return info

    async def _start(self) -> dict[str, Any]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_PARENT, env.get("PYTHONPATH")) if p)
        env.setdefault("PYTHONUNBUFFERED", "1")
        args = [self.python, "-m", "exportlens.worker"] + ([] if self.warmup else ["--no-warmup"])
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, env=env, limit=64 * 1024 * 1024,
            )
        except OSError as exc:
            raise WorkerUnavailable(f"cannot start the Python interpreter '{self.python}': {exc}") from exc
        loop = asyncio.get_running_loop()
        self._ready = loop.create_future()
        self._stderr_tail = []
        self._tasks = [loop.create_task(self._read_events(self._proc, self._ready)),
                       loop.create_task(self._read_stderr(self._proc))]
        try:
            self.info = await asyncio.wait_for(asyncio.shield(self._ready), READY_TIMEOUT)
        except TimeoutError as exc:
            await self.close()
            raise WorkerUnavailable(f"the worker did not start within {READY_TIMEOUT:.0f} s") from exc
        except WorkerUnavailable:
            await self._forget()
            raise
        return self.info

    async def _read_stderr(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stderr is not None
        async for raw in proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip()
            self._stderr_tail = (self._stderr_tail + [line])[-40:]
            self.log(line)

    async def _read_events(self, proc: asyncio.subprocess.Process, ready: asyncio.Future[dict[str, Any]]) -> None:
        assert proc.stdout is not None
        async for raw in proc.stdout:
            try:
                event = json.loads(raw)
            except ValueError:
                self.log(f"worker said something unexpected: {raw[:200]!r}")
                continue
            kind = event.get("event")
            if kind == "ready" and not ready.done():
                ready.set_result(event)
            elif (queue := self._queues.get(str(event.get("id")))) is not None:
                queue.put_nowait(event)
        code = await proc.wait()
        await asyncio.sleep(0)  # let the stderr reader catch up
        if not ready.done():
            ready.set_exception(WorkerUnavailable(self._startup_failure(code)))
        for job_id, queue in list(self._queues.items()):
            if self._owner.get(job_id) is not proc:
                continue
            died: DoneEvent = {"event": "done", "id": job_id, "status": "crashed", "worker_died": True,
                               "detail": f"the worker process died (exit status {code})", "stderr": ""}
            queue.put_nowait(died)

    def _startup_failure(self, code: int) -> str:
        tail = "\n".join(self._stderr_tail[-12:])
        if "No module named 'torch'" in tail:
            return f"the interpreter '{self.python}' has no torch installed (pip install torch)"
        return f"the worker exited with status {code} while starting:\n{tail}"

    async def _send(self, message: Request) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write((json.dumps(message) + "\n").encode())
        await self._proc.stdin.drain()

    async def run(self, job: JobSpec, *, timeout: float = 120.0, memory_mb: int = 0) -> AsyncIterator[JobEvent]:
        """Run one job; yield its `started`, `target` … events, ending with `done`.

        Cancelling the consumer kills the job's process.
        """
        job_id = str(next(self._ids))
        queue: asyncio.Queue[JobEvent] = asyncio.Queue()
        self._queues[job_id] = queue
        finished = False
        message: RunRequest = {"op": "run", "id": job_id, "job": job, "timeout": timeout, "memory_mb": memory_mb}
        try:
            for attempt in (1, 2):  # a zygote found dead before the job started is restarted once
                await self.start()
                try:
                    assert self._proc is not None
                    self._owner[job_id] = self._proc
                    await self._send(message)
                except (ConnectionError, BrokenPipeError):
                    await self._forget()
                    continue
                started = False
                while True:
                    event = await queue.get()
                    if event.get("worker_died") and not started and attempt == 1:
                        await self._forget()
                        break
                    started = started or event.get("event") == "started"
                    yield event
                    if event.get("event") == "done":
                        finished = True
                        return
        finally:
            self._queues.pop(job_id, None)
            self._owner.pop(job_id, None)
            if not finished and self.running:
                try:
                    await self._send({"op": "cancel", "id": job_id})
                except (ConnectionError, RuntimeError, AssertionError):
                    pass

    async def _forget(self) -> None:
        """Drop a dead zygote so that the next start() makes a new one."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.returncode is None:
            proc.kill()
            await proc.wait()

    async def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.returncode is None:
            try:
                if proc.stdin is not None:
                    proc.stdin.close()
                await asyncio.wait_for(proc.wait(), 2.0)
            except (TimeoutError, ConnectionError):
                proc.kill()
                await proc.wait()
        for task in self._tasks:
            task.cancel()
        self._tasks = []
