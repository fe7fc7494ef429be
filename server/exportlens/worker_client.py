"""The server's side of the worker: start the zygote, send jobs, stream their events back.

It never imports torch. If the zygote dies it is started again on the next job; jobs that were
running when it died end with a `crashed` event instead of hanging. The parent owns every
deadline: a job whose `done` does not come in time ends here too (and the zygote, which should
have ended it, is replaced). At most `max_jobs` jobs run at once; the others wait their turn in
the order they were asked for. Everything the worker ever started carries an environment mark,
so nothing of it outlives the zygote.

Jobs run where `BACKGROUND` names some work (fix verification's task sets it) are background
work: `preempt()` kills them at once and hands their slots on, so a run somebody waits for never
waits for them; the zygote runs them at a lower priority and keeps its warm spares for the others.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import IO, Any

from exportlens.options import DEFAULT_TIMEOUT
from exportlens.protocol import DoneEvent, JobEvent, JobSpec, Request, RunRequest

PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
READY_TIMEOUT = 180.0
RETRY_START_AFTER = 30.0  # a zygote that failed to start is not started again for every file of a check
DEADLINE_GRACE = 15.0  # seconds past a job's own time limit before the client stops waiting for the zygote
WORKER_MARK = "EXPORTLENS_WORKER"  # same name as worker/proctree.py's: every process of one worker has it
STREAM_LIMIT = 64 * 1024 * 1024  # one event line can carry a large report


BACKGROUND: ContextVar[str | None] = ContextVar("exportlens_background_work", default=None)
"""The background work a task's jobs belong to (None: somebody waits for them). Set it at the
task's start: the tasks it creates inherit it, and `preempt(work)` kills exactly those jobs."""


class WorkerUnavailable(Exception):
    """The zygote could not start (no torch in that interpreter, a broken interpreter...)."""


def default_jobs() -> int:
    """Jobs at once the machine can take: one per core (each job is a process using one or more)."""
    return max(1, os.cpu_count() or 1)


class _FairSlots:
    """A FIFO semaphore: waiters are served strictly in the order they came (files saved first run first)."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self.used = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    async def acquire(self) -> None:
        if self.used < self.size and not self._waiters:
            self.used += 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # the slot was handed over just as we left
                self.release()
            else:
                self._waiters.remove(fut)
            raise

    def release(self) -> None:
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)  # the slot passes straight on: `used` stays
                return
        self.used -= 1


class _Lease:
    """One job's slot, given back exactly once: when the job ends, or earlier when it is preempted."""

    def __init__(self, slots: _FairSlots, work: str | None = None) -> None:
        self.slots = slots
        self.work = work  # the background work it belongs to (None: foreground)
        self.held = True
        self.preempted = False

    def release(self) -> None:
        if self.held:
            self.held = False
            self.slots.release()


def sweep(mark: str) -> int:
    """Kill every process that carries the worker's mark (what is left once the zygote is gone)."""
    if not sys.platform.startswith("linux"):
        return 0
    needle = f"{WORKER_MARK}={mark}".encode()
    killed = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                if needle not in fh.read().split(b"\0"):
                    continue
            os.kill(int(entry), signal.SIGKILL)
            killed += 1
        except OSError:
            continue
    return killed


class WorkerClient:
    def __init__(self, python: str | None = None, *, warmup: bool = True, log: Callable[[str], None] | None = None, max_jobs: int | None = None) -> None:
        self.python = python or sys.executable
        self.warmup = warmup
        self.log = log or (lambda line: None)
        self.info: dict[str, Any] = {}
        self.slots = _FairSlots(max_jobs or default_jobs())
        self.closed = False
        self._proc: Process | None = None
        self._mark = ""
        self._queues: dict[str, asyncio.Queue[JobEvent]] = {}
        self._ready: asyncio.Future[dict[str, Any]] | None = None
        self._start_lock = asyncio.Lock()
        self._ids = itertools.count(1)
        self._tasks: list[asyncio.Task[None]] = []
        self._stderr_tail: list[str] = []
        self._owner: dict[str, Process] = {}  # job → the zygote it was sent to
        self._background: dict[str, _Lease] = {}  # background jobs sent to the zygote, by id
        self._failed: tuple[float, WorkerUnavailable] | None = None  # the last failed start, and when

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    async def start(self) -> dict[str, Any]:
        """Start the zygote if needed; return its `ready` event (torch version, timings)."""
        async with self._start_lock:
            if self.closed:
                raise WorkerUnavailable("the worker was shut down")
            if self.running and self._ready is not None and self._ready.done() and not self._ready.exception():
                return self._ready.result()
            loop = asyncio.get_running_loop()
            if self._failed is not None and loop.time() - self._failed[0] < RETRY_START_AFTER:
                raise self._failed[1]
            try:
                info = await self._start()
            except WorkerUnavailable as exc:
                if not self.closed:
                    self._failed = (loop.time(), exc)
                raise
            self._failed = None
            return info

    async def _start(self) -> dict[str, Any]:
        early = _take_early(self.python, self.warmup)
        if early is not None:  # started before the server's libraries were imported (prestart)
            self._mark = early.mark
            self._proc = await _adopt(early.popen)
            return await self._connect()
        self._mark = uuid.uuid4().hex
        # cwd: `-m` puts the working directory first on sys.path, and the server's may be the
        # user's workspace (a `selectors.py` there must not run); our own folder is safe.
        # Its own session: a terminal's Ctrl+C reaches the CLI, which then ends the worker in order.
        creating = asyncio.ensure_future(
            asyncio.create_subprocess_exec(
                *_command(self.python, self.warmup),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=_environment(self._mark),
                limit=STREAM_LIMIT,
                cwd=PACKAGE_PARENT,
                start_new_session=True,
            )
        )
        try:
            # Never cancel the creation itself: asyncio (3.11) then waits forever for pipes that
            # never connect. Let it finish (milliseconds), then stop what it started.
            self._proc = await asyncio.shield(creating)
        except asyncio.CancelledError:
            proc = await _settled(creating)
            if proc is not None:
                _kill_session(proc.pid)
                await proc.wait()
                sweep(self._mark)
            raise
        except OSError as exc:
            raise WorkerUnavailable(f"cannot start the Python interpreter '{self.python}': {exc}") from exc
        return await self._connect()

    async def _connect(self) -> dict[str, Any]:
        """Read the new zygote's events and wait for its `ready`."""
        if self.closed:  # closed while it was being created
            await self._forget()
            raise WorkerUnavailable("the worker was shut down")
        assert self._proc is not None
        loop = asyncio.get_running_loop()
        self._ready = loop.create_future()
        self._stderr_tail = []
        self._tasks = [loop.create_task(self._read_events(self._proc, self._ready, self._mark)), loop.create_task(self._read_stderr(self._proc))]
        try:
            # asyncio.timeout, not wait_for: 3.11's wait_for can swallow a cancellation (Ctrl+C) that
            # lands just as the awaited thing completes
            async with asyncio.timeout(READY_TIMEOUT):
                self.info = await asyncio.shield(self._ready)
        except TimeoutError as exc:
            await self._forget()
            raise WorkerUnavailable(f"the worker did not start within {READY_TIMEOUT:.0f} s") from exc
        except WorkerUnavailable:
            await self._forget()
            raise
        return self.info

    async def _read_stderr(self, proc: Process) -> None:
        assert proc.stderr is not None
        async for raw in proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip()
            self._stderr_tail = (self._stderr_tail + [line])[-40:]
            self.log(line)

    async def _read_events(self, proc: Process, ready: asyncio.Future[dict[str, Any]], mark: str) -> None:
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
        sweep(mark)  # its jobs died with it (parent-death signal); what they forked goes now
        if ready.done() and not ready.cancelled() and ready.exception() is None:
            remove_workdir(ready.result())
        await asyncio.sleep(0)  # let the stderr reader catch up
        if not ready.done():
            ready.set_exception(WorkerUnavailable(self._startup_failure(code)))
        for job_id, queue in list(self._queues.items()):
            if self._owner.get(job_id) is not proc:
                continue
            died: DoneEvent = {
                "event": "done",
                "id": job_id,
                "status": "crashed",
                "worker_died": True,
                "detail": f"the worker process died (exit status {code})",
                "stderr": "",
            }
            queue.put_nowait(died)

    def _startup_failure(self, code: int) -> str:
        tail = "\n".join(self._stderr_tail[-12:])
        if "No module named 'torch'" in tail:
            return f"the interpreter '{self.python}' has no torch installed (pip install torch)"
        return f"the worker exited with status {code} while starting:\n{tail}"

    async def _send(self, message: Request) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(_line(message))
        await self._proc.stdin.drain()

    async def run(self, job: JobSpec, *, timeout: float = DEFAULT_TIMEOUT, memory_mb: int = 0) -> AsyncIterator[JobEvent]:
        """Run one job; yield its `started`, `target` … events, ending with `done`.

        Waits for a free slot first (FIFO). Cancelling the consumer kills the job's process tree.
        A background job (`BACKGROUND`) ends with `done` status "cancelled" when preempted.
        """
        await self.slots.acquire()
        lease = _Lease(self.slots, BACKGROUND.get())
        try:
            async for event in self._run(job, timeout, memory_mb, lease if lease.work is not None else None):
                yield event
        finally:
            lease.release()

    def preempt(self, work: str | None = None) -> list[str]:
        """Kill the background jobs of `work` (None: all of them) now and give their slots to
        whoever waits: the cancels are written before anything sent after this call (the zygote
        kills each process tree as it reads them), and nothing waits for the jobs to end. Returns
        their ids."""
        jobs = {i: lease for i, lease in self._background.items() if work is None or lease.work == work}
        for job_id, lease in jobs.items():
            del self._background[job_id]
            lease.preempted = True
            lease.release()
            self._write({"op": "cancel", "id": job_id})
        return list(jobs)

    async def spares(self) -> list[int]:
        """The pids of the zygote's warm spares, waiting for a job (its answer to a ping)."""
        await self.start()
        ping_id = f"ping-{next(self._ids)}"
        queue: asyncio.Queue[JobEvent] = asyncio.Queue()
        self._queues[ping_id] = queue
        try:
            await self._send({"op": "ping", "id": ping_id})
            async with asyncio.timeout(READY_TIMEOUT):
                pong: Any = await queue.get()  # routed by its id like a job's events
        finally:
            self._queues.pop(ping_id, None)
        return [int(p) for p in pong.get("spares") or []]

    def _write(self, message: Request) -> None:
        """Send without waiting (a request is a few bytes; the pipe's buffer takes it)."""
        proc = self._proc
        if proc is None or proc.returncode is not None or proc.stdin is None:
            return
        try:
            proc.stdin.write(_line(message))
        except (ConnectionError, RuntimeError):
            pass

    async def _run(self, job: JobSpec, timeout: float, memory_mb: int, background: _Lease | None) -> AsyncIterator[JobEvent]:
        job_id = str(next(self._ids))
        queue: asyncio.Queue[JobEvent] = asyncio.Queue()
        self._queues[job_id] = queue
        finished = False
        message: RunRequest = {"op": "run", "id": job_id, "job": job, "timeout": timeout, "memory_mb": memory_mb}
        if background is not None:
            message["background"] = True
            self._background[job_id] = background
        loop = asyncio.get_running_loop()
        try:
            for attempt in (1, 2):  # a zygote found dead before the job started is restarted once
                await self.start()
                if background is not None and background.preempted:  # preempted before it was sent
                    finished = True
                    yield {"event": "done", "id": job_id, "status": "cancelled", "detail": "preempted", "stderr": ""}
                    return
                try:
                    assert self._proc is not None
                    self._owner[job_id] = self._proc
                    await self._send(message)
                except (ConnectionError, BrokenPipeError):
                    await self._forget()
                    continue
                deadline = loop.time() + timeout + DEADLINE_GRACE
                started = False
                while True:
                    try:
                        async with asyncio.timeout_at(deadline):  # never swallows a cancellation
                            event = await queue.get()
                    except TimeoutError:
                        # The zygote should have stopped this job long ago: it is stuck. Replace it.
                        self.log(f"job {job_id}: no answer from the worker {DEADLINE_GRACE:.0f} s after its time limit; restarting the worker")
                        await self._forget()
                        finished = True
                        yield {
                            "event": "done",
                            "id": job_id,
                            "status": "timeout",
                            "stderr": "",
                            "detail": "the job ran past its time limit and the worker did not stop it; the worker was restarted",
                        }
                        return
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
            self._background.pop(job_id, None)
            if not finished and self.running and not (background is not None and background.preempted):
                try:
                    await self._send({"op": "cancel", "id": job_id})
                except (ConnectionError, RuntimeError, AssertionError):
                    pass

    async def _forget(self) -> None:
        """Drop a dead or stuck zygote (and everything it started) so that the next start() makes a new one."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.returncode is None:
            _kill_session(proc.pid)
            await proc.wait()
        if self._mark:
            sweep(self._mark)

    async def close(self) -> None:
        """Stop the worker and everything it started; no new one is started afterwards."""
        self.closed = True
        if self._ready is not None and not self._ready.done():  # a start() waiting for it ends now
            self._ready.set_exception(WorkerUnavailable("the worker was shut down while it was starting"))
            self._ready.exception()  # retrieved: no "never retrieved" warning when nobody waits
        proc, self._proc = self._proc, None
        if proc is not None and proc.returncode is None:
            try:
                if proc.stdin is not None:
                    proc.stdin.close()
                async with asyncio.timeout(2.0):
                    await proc.wait()
            except (TimeoutError, ConnectionError):
                _kill_session(proc.pid)
                await proc.wait()
        if self._mark:
            sweep(self._mark)
        for task in self._tasks:
            task.cancel()
        self._tasks = []


async def _settled(creating: asyncio.Future[asyncio.subprocess.Process]) -> asyncio.subprocess.Process | None:
    """The process a creation made, waiting for it even while our task is being cancelled."""
    while not creating.done():
        try:
            await asyncio.wait([creating])
        except asyncio.CancelledError:
            continue
    return None if creating.cancelled() or creating.exception() is not None else creating.result()


def _line(message: Request) -> bytes:
    return (json.dumps(message) + "\n").encode()


def remove_workdir(info: dict[str, Any]) -> None:
    """The worker's private temporary folder, if it could not remove it itself (it was killed)."""
    path = info.get("tmpdir")
    if isinstance(path, str) and os.path.basename(path).startswith("exportlens-worker-") and os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)


def _kill_session(pid: int) -> None:
    """The zygote leads its own session and process group: kill the group (jobs have their own
    sessions and die with the zygote by their parent-death signal)."""
    try:
        os.killpg(pid, signal.SIGKILL)
        return
    except OSError:
        pass
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def _command(python: str, warmup: bool) -> list[str]:
    return [python, "-m", "exportlens.worker"] + ([] if warmup else ["--no-warmup"])


def worker_environment() -> dict[str, str]:
    """The environment a zygote started now gets (but its mark): what a job's code reads (the results cache compares it)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_PARENT, env.get("PYTHONPATH")) if p)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def _environment(mark: str) -> dict[str, str]:
    return {**worker_environment(), WORKER_MARK: mark}


# -- starting the zygote before the event loop exists -------------------------------------------


@dataclass
class _Early:
    python: str
    warmup: bool
    mark: str
    popen: subprocess.Popen[bytes]


_early: _Early | None = None


def prestart(python: str | None, *, warmup: bool = True) -> None:
    """Start the zygote now, before the language server's libraries are imported.

    The editor opens its first file right after `initialize`, and the zygote then needs seconds
    (import torch, warm-up) before it can run anything; importing pygls takes most of a second
    of its own. Started here, the two overlap. The server's WorkerClient adopts this process if it
    asks for the same interpreter; a different one stops it (the mark sweeps what it started).
    """
    global _early
    if _early is not None:
        return
    mark = uuid.uuid4().hex
    python = python or sys.executable
    try:
        popen = subprocess.Popen(
            _command(python, warmup),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_environment(mark),
            cwd=PACKAGE_PARENT,
            start_new_session=True,
        )
    except OSError:
        return  # the WorkerClient's own start says why, with its message
    _early = _Early(python, warmup, mark, popen)
    atexit.register(discard_prestarted)


def discard_prestarted() -> None:
    """Stop a prestarted zygote nobody adopted (the server ended, or wanted another interpreter)."""
    global _early
    early, _early = _early, None
    if early is None:
        return
    _kill_session(early.popen.pid)
    early.popen.wait()
    for pipe in (early.popen.stdin, early.popen.stdout, early.popen.stderr):
        if pipe is not None:
            pipe.close()
    sweep(early.mark)


def _take_early(python: str, warmup: bool) -> _Early | None:
    global _early
    early = _early
    if early is None:
        return None
    if early.python != python or early.warmup != warmup:
        discard_prestarted()
        return None
    _early = None
    return early  # also when it already died: its stderr says why (no torch, ...)


class AdoptedProcess:
    """A zygote started by prestart(), seen through the parts of asyncio.subprocess.Process that
    WorkerClient uses (pid, returncode, wait, the three pipes as streams)."""

    def __init__(self, popen: subprocess.Popen[bytes], stdin: asyncio.StreamWriter, stdout: asyncio.StreamReader, stderr: asyncio.StreamReader) -> None:
        self._popen = popen
        self.stdin: asyncio.StreamWriter | None = stdin
        self.stdout: asyncio.StreamReader | None = stdout
        self.stderr: asyncio.StreamReader | None = stderr

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        return self._popen.poll()

    async def wait(self) -> int:
        while (code := self._popen.poll()) is None:
            await asyncio.sleep(0.05)  # no child watcher knows this process: look, briefly
        return code


async def _adopt(popen: subprocess.Popen[bytes]) -> AdoptedProcess:
    loop = asyncio.get_running_loop()

    async def reader(pipe: IO[bytes] | None) -> asyncio.StreamReader:
        stream = asyncio.StreamReader(limit=STREAM_LIMIT, loop=loop)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream, loop=loop), pipe)
        return stream

    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, popen.stdin)
    stdin = asyncio.StreamWriter(transport, protocol, None, loop)
    return AdoptedProcess(popen, stdin, await reader(popen.stdout), await reader(popen.stderr))


Process = asyncio.subprocess.Process | AdoptedProcess  # what WorkerClient holds
