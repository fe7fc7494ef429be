"""A job is a process tree: find all of it, measure it, kill it (Linux /proc; elsewhere the job's
process group only).

User code may fork, and a forked child may call `setsid()` (leaving the job's session and process
group) or outlive its parent. A process belongs to a job if it is in the job's session or descends
from the job by parent links; the zygote remembers every member it saw (pid and start time, so a
reused pid is never taken for one). The zygote is a child subreaper, so orphans of a job are
re-parented to it (not to init): they stay findable and are reaped. The server marks its zygote's
environment (`WORKER_MARK`), which every process of that worker inherits, for a last sweep once
the zygote is gone. Standard library only: no torch here.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from dataclasses import dataclass

WORKER_MARK = "EXPORTLENS_WORKER"  # set by the server for its zygote: every process of that worker has it
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
LINUX = sys.platform.startswith("linux")


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    sid: int
    started: int  # clock ticks after boot: with the pid, an identity that survives pid reuse


def _prctl(option: int, value: int) -> bool:
    if not LINUX:
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def die_with_parent(parent: int) -> None:
    """In a freshly forked child: get SIGKILL when the parent dies (and go now if it already has)."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(75)


def become_subreaper() -> bool:
    """Orphaned descendants are re-parented to this process instead of init."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def snapshot() -> dict[int, Proc]:
    """Every live process: pid → (parent, session). Empty where there is no /proc."""
    procs: dict[int, Proc] = {}
    if not LINUX:
        return procs
    try:
        entries = os.listdir("/proc")
    except OSError:
        return procs
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) < 20 or fields[0] == b"Z":  # a zombie holds no memory and cannot be killed again
            continue
        procs[int(entry)] = Proc(int(entry), int(fields[1]), int(fields[3]), int(fields[19]))
    return procs


def has_env(pid: int, name: str, value: str) -> bool:
    """Whether the process started with NAME=VALUE in its environment (what /proc shows: the
    environment it was exec'd with, which every fork without exec shares)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return f"{name}={value}".encode() in fh.read().split(b"\0")
    except OSError:
        return False


def members(root: int, procs: dict[int, Proc]) -> set[int]:
    """The job's processes that are still linked to it: its session, and its descendants (also
    the ones that left the session). The root itself is included while it lives."""
    found = {p.pid for p in procs.values() if p.sid == root or p.pid == root}
    children: dict[int, list[int]] = {}
    for p in procs.values():
        children.setdefault(p.ppid, []).append(p.pid)
    todo = list(found)
    while todo:
        for kid in children.get(todo.pop(), ()):
            if kid not in found:
                found.add(kid)
                todo.append(kid)
    return found


def marked(name: str, value: str) -> set[int]:
    """Every process carrying NAME=VALUE (the thorough sweep: also ones that left every link)."""
    return {pid for pid in snapshot() if pid != os.getpid() and has_env(pid, name, value)}


def resident_bytes(pid: int) -> int:
    """Memory the process has in RAM (statm: one short read). Its private memory is never more,
    so a tree whose resident total is under a cap is under it without reading `private_bytes`."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def private_bytes(pid: int) -> int:
    """Memory only this process holds (pages shared with the zygote since fork are not counted).
    Reading it walks every mapping of the process (tens of ms for a process that imported torch)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as fh:
            total = 0
            for line in fh:
                if line.startswith((b"Private_Clean:", b"Private_Dirty:")):
                    total += int(line.split()[1]) * 1024
            return total
    except (OSError, ValueError):
        return 0


def kill(pids: set[int] | list[int]) -> None:
    for pid in pids:
        if pid <= 1 or pid == os.getpid():
            continue
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
