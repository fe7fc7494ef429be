"""Draft export beside plain export: a forked sibling runs it while plain export runs here.

When a target's plain export fails, draft export runs after it to find the rest; one after the
other the user waits for both (plain export's time to its error is 15 % of draft export's on
bench/models/transformer_branch.py). A job asked to (`"draft_beside"`: the engine asks when the
file's last run needed draft export and no other job is running) forks right before plain export;
the fork runs draft export on the other core and hands its part of the target event back through a
pipe as JSON, with what it imported, opened and read (the job's dependencies). Plain export
decides as always: where it passes without custom ops, or fails in a way that changes draft
export's arguments (a constraint violation refines the Dims), the fork is killed and nothing of it
is used. The fork buffers what it would emit, so the events arrive in the same order as when the
two run one after the other. Only a module's or a factory's target: a script's own export call
goes on with draft export's program, which only the fork would have.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
from collections.abc import Callable
from typing import Any

from exportlens.worker import dependencies

Emit = Callable[[dict[str, Any]], None]
# the fork's own work: draft export, emitting through the first argument and filling the event in the second
Work = Callable[[Emit, dict[str, Any]], None]


def cores() -> int:
    """Cores this process may run on: a fork beside it only pays where there is a second one."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class Beside:
    """One forked draft export; `take()` its result, or `kill()` it."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid = pid
        self.fd = fd

    @classmethod
    def start(cls, work: Work) -> Beside | None:
        """Fork and run `work` in the fork; None where fork is unavailable."""
        _flush_output()  # what the parent printed must not be written twice
        r, w = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(r)
            os.close(w)
            return None
        if pid == 0:
            os.close(r)
            _run_in_fork(work, w)
        os.close(w)
        return cls(pid, r)

    def take(self) -> dict[str, Any] | None:
        """Wait for the fork's result: {"event": fields, "emitted": [events]}, or None
        when it died without one (the caller then runs draft export itself)."""
        try:
            chunks = _read_until_exit(self.fd, self.pid)
        finally:
            os.close(self.fd)
        try:
            result = json.loads(b"".join(chunks))
        except ValueError:
            return None
        if not isinstance(result, dict) or "event" not in result:
            return None
        dependencies.merge(result.pop("deps", None))  # what the fork imported, opened and read: the job's too
        return result

    def kill(self) -> None:
        """Plain export decided without it: end it at once (its children are the zygote's to reap)."""
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.close(self.fd)
        _reap(self.pid)


def _run_in_fork(work: Work, fd: int) -> None:
    """The fork's body: one thread (the job may have started an OpenMP pool, which hangs a fork that
    uses it: docs/torch-facts.md §5), run, write the result, and exit without touching the parent's
    files (os._exit: no flushing of buffers the parent owns)."""
    code = 0
    try:
        import torch

        torch.set_num_threads(1)
        emitted: list[dict[str, Any]] = []
        event: dict[str, Any] = {}
        work(emitted.append, event)
        data = json.dumps({"event": event, "emitted": emitted, "deps": dependencies.recorded()}, default=str).encode()
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except BaseException:
        code = 70
    finally:
        _flush_output()  # the user's prints during draft export: to the job's log
        os._exit(code)


def _flush_output() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass


def _read_until_exit(fd: int, pid: int) -> list[bytes]:
    """What the fork wrote, read until it exited (not until the pipe's end: a process the model
    forked inherits the pipe and may hold it open for as long as it lives, tests/test_process_tree.py).
    The fork exits only after its last write was read (a pipe holds 64 KB), so once it is reaped
    what is left in the pipe is all of it."""
    chunks: list[bytes] = []
    os.set_blocking(fd, False)
    exited = False
    while True:
        if not exited:
            select.select([fd], [], [], 0.05)
        try:
            chunk = os.read(fd, 1 << 20)
        except BlockingIOError:
            if exited:
                return chunks
            exited = _exited(pid)
            continue
        if not chunk:  # every writer closed it
            _reap(pid)
            return chunks
        chunks.append(chunk)


def _exited(pid: int) -> bool:
    try:
        return os.waitpid(pid, os.WNOHANG)[0] != 0
    except ChildProcessError:
        return True


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
