"""The warm zygote: import torch once, warm export up, fork a fresh child per job.

Protocol (JSON lines). Requests on stdin:
  {"op": "run", "id": str, "job": {...}, "timeout": seconds, "memory_mb": int, "background": bool}
  {"op": "cancel", "id": str}
  {"op": "ping", "id": str}
Events on stdout: {"event": "ready", "torch": ..., "pid": ..., "warmup_seconds": ...},
  {"event": "started", "id", "pid"}, {"event": "target", "id", ...} per target,
  {"event": "done", "id", "status": "ok"|"crashed"|"timeout"|"cancelled", "detail", "stderr"},
  {"event": "pong", "id", "spares": [pid of each warm spare]}.
Everything user code prints goes to a per-job file, never to the protocol.

A background job (fix verification) is work nobody waits for: it runs at a lower priority, never
on a warm spare, and does not stop the zygote from warming spares beside it, so the next job
somebody waits for starts on a warm one the moment the background job is cancelled.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import select
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import IO, Any

from exportlens.worker import dependencies, proctree

_child_threads = 1  # the thread count torch picked for this machine; jobs get it back
_fresh_rng: Any = None  # torch's random state as `import torch` left it in the zygote: every job starts from it
_protocol_fd: int | None = None  # closed in every child so the server sees the zygote's EOF
_zygote_pid = os.getpid()  # jobs die with this process (the --one-job fallback: with its parent)
_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EOF_GRACE = 2.0  # seconds a job may live on after closing its pipe (it is normally exiting)
SCAN_EVERY = 0.3  # seconds between looks at the jobs' process trees (members, memory)
SPARES = 2  # warm children kept forked ahead: a job that comes right after another still gets a warm one
BACKGROUND_NICE = 10  # a background job gives its core way to the jobs somebody waits for


@dataclass
class Child:
    id: str
    pid: int
    fd: int
    deadline: float
    jobdir: str
    memory_mb: int = 0
    proc: subprocess.Popen[bytes] | None = None
    buffer: bytes = b""
    ended: bool = False
    eof_at: float | None = None  # when its pipe closed (the process may live on without it)
    status: int | None = None  # wait status of the job's own process, once reaped
    cancelled: bool = False
    background: bool = False
    cores: int = 1  # 2 while its draft export may run in a fork beside its plain export (beside.py)
    timed_out: bool = False
    closed_pipe: bool = False  # its pipe closed while the process kept running
    memory_used: int = 0  # bytes of the whole tree when it went over its cap
    killed: bool = False
    reported: bool = False  # its `done` went out already
    seen: dict[int, int] = field(default_factory=dict)  # every member seen: pid → start time


def _warm_up() -> float:
    """One tiny plain export (a guard on a dynamic size) pays torch's lazy start-up once.

    Every export target runs the user's plain `torch.export.export` first (docs/torch-facts.md §9),
    so that is the path to warm (a spare repeats it to pay fork's copy-on-write faults); the zygote
    also walks a failing target's path once (`_warm_failure_paths`). Raises when torch cannot export
    at all; the caller carries on cold.
    """
    import torch

    class WarmUp(torch.nn.Module):  # the layers most models are built of, so building one in a job is warm too
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)
            self.norm = torch.nn.LayerNorm(4)

        def forward(self, x: Any) -> Any:
            if x.shape[0] > 1:
                return self.norm(self.fc(x)) * 2
            return x

    started = time.perf_counter()
    try:
        torch.export.export(WarmUp(), (torch.ones(3, 4),), dynamic_shapes={"x": {0: torch.export.Dim.AUTO}})
    finally:
        _prime_module_cache()
    return time.perf_counter() - started


def _try_warm_up() -> tuple[float, str | None]:
    """Warm up, or say why not: a warm-up that fails must not take the worker down (it serves cold)."""
    started = time.perf_counter()
    try:
        return _warm_up(), None
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
        print(f"exportlens worker: warm-up failed, serving without it: {error}", file=sys.stderr, flush=True)
        return time.perf_counter() - started, error


def _warm_failure_paths() -> float:
    """Walk once, here, the path of a target whose export fails, so every child inherits it warm.

    A plain export that stops on a data-dependent guard formats a traceback through some 60 torch
    files: without this each failing job read them into `linecache` again (≈20 ms of its first
    finding). Draft export past that guard pays its own first-call set-up (≈25 ms per job). Both
    cost ≈0.1 s once at start-up. torch's report of them goes nowhere; a torch that cannot do either
    only stays colder (docs/torch-facts.md §9). Returns the seconds it took.
    """
    import torch

    class Branch(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            if x.item() > 1:
                return x + 1
            return x - 1

    started = time.perf_counter()
    quiet = os.open(os.devnull, os.O_WRONLY)
    saved = [os.dup(1), os.dup(2)]
    sys.stdout.flush()
    sys.stderr.flush()
    for fd in (1, 2):  # torch logs draft export's report and the guard it went past: not the user's
        os.dup2(quiet, fd)
    try:
        from exportlens.worker import capture, compat

        for export in (torch.export.export, compat.draft_export(torch.export)):
            try:
                if export is not None:
                    export(Branch(), (torch.tensor(3),))
            except Exception as exc:
                capture.exception_info(exc)  # what a failing job formats: its source lines
    except Exception:
        pass
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, old in zip((1, 2), saved, strict=True):
            os.dup2(old, fd)
            os.close(old)
        os.close(quiet)
    return time.perf_counter() - started


def _preimport_job() -> None:
    """Import the job's own modules once, here: every job would import them again (≈50 ms each)."""
    try:
        from exportlens.worker import job  # noqa: F401  (importing has no effect but the import)

        dependencies.prime()  # the installed distributions, read once: a job's record of them then costs a few ms
    except Exception:  # the job says what is wrong when it imports them itself
        pass


def _prime_module_cache() -> None:
    """Map every loaded module's file in `inspect`'s cache now, once, in the zygote.

    Export looks up the module of the user's functions; for a file it has not seen, `inspect.getmodule`
    walks all ~1,500 loaded modules through `os.path.realpath` (≈45 ms of lstat calls). Done here,
    a job only maps the modules it imports itself.
    """
    import inspect

    inspect.getmodule(None, os.path.join(tempfile.gettempdir(), "exportlens-prime-module-cache.py"))


def _limit_memory(memory_mb: int) -> None:
    """Cap the address space at what the child has now plus `memory_mb`."""
    if memory_mb <= 0:
        return
    try:
        with open("/proc/self/status") as fh:
            vm = next((int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:")), 0)
        limit = vm + memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (OSError, ValueError):
        pass


def _lower_priority() -> None:
    try:
        os.nice(BACKGROUND_NICE)
    except (AttributeError, OSError):  # no nice() here: it runs at the normal priority
        pass


def _detach() -> None:
    """Job-independent set-up of a child: its own session (so its process group is killed as one),
    death with the zygote, no protocol, no stdin."""
    try:
        os.setsid()
    except OSError:  # already a session leader (the spawn fallback starts one)
        pass
    proctree.die_with_parent(_zygote_pid)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the zygote's clean-up handler is not the job's
    if _protocol_fd is not None:
        os.close(_protocol_fd)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    import torch

    # The zygote never starts an OpenMP pool (it runs at one thread from before its first op), so a
    # child may use every core again; a pool started before fork would hang it (docs/torch-facts.md §5).
    torch.set_num_threads(_child_threads)


def _restore_fresh_rng() -> None:
    """Start every job from the one random state the zygote had right after `import torch`.

    A spare's warm-up builds layers (random weights) and a fresh fork does not, so without this a
    model whose examples come from `torch.randn` got other inputs on a spare than on a fresh fork,
    and a verified fix's outputs looked changed. (A plain `python` seeds torch differently each run.)"""
    if _fresh_rng is not None:
        import torch

        torch.random.set_rng_state(_fresh_rng)


def run_child(request: dict[str, Any], result_fd: int, jobdir: str, *, detached: bool = False) -> None:
    """Body of a job process: redirect the world, run the job, report, never return."""
    code = 0
    out: IO[str] | None = None
    try:
        if not detached:
            _detach()
        log = os.open(os.path.join(jobdir, "output.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(log, 1)
        os.dup2(log, 2)
        tempfile.tempdir = jobdir
        os.environ["TMPDIR"] = jobdir
        if request.get("background"):
            _lower_priority()
        _limit_memory(int(request.get("memory_mb", 0)))
        out = os.fdopen(result_fd, "w", buffering=1)

        def emit(event: dict[str, Any]) -> None:
            assert out is not None
            out.write(json.dumps(event, default=str) + "\n")
            out.flush()

        from exportlens.worker import job

        _restore_fresh_rng()
        job.run(request["job"], emit)
        emit({"event": "end"})
    except BaseException:  # anything left is a bug of ours; the exit status says so
        code = 70
        try:
            import traceback

            traceback.print_exc()
        except BaseException:
            pass
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            pass
        os._exit(code)


def run_spare(request_fd: int, result_fd: int) -> None:
    """A child forked ahead of time: it pays fork's copy-on-write faults on a throwaway export
    (about 30 ms on the first export in a fresh fork), then waits for its job."""
    try:
        _detach()
        _warm_up()
        os.write(result_fd, b"\n")  # ready: the zygote reads this empty line before it hands us a job
        data = b""
        while not data.endswith(b"\n"):
            chunk = os.read(request_fd, 1 << 16)
            if not chunk:
                os._exit(0)  # the zygote went away or retired us
            data += chunk
        request = json.loads(data)
    except BaseException:
        os._exit(71)
    run_child(request, result_fd, request["jobdir"], detached=True)


@dataclass
class Spare:
    pid: int
    request_fd: int
    result_fd: int
    ready: bool = False  # its warm-up is done (it wrote its empty line)
    watched: bool = True  # its result pipe is in the selector (until its warm-up ends)


class Zygote:
    def __init__(self, protocol: IO[str]) -> None:
        self.protocol = protocol
        self.children: dict[int, Child] = {}
        self.selector = selectors.DefaultSelector()
        # EXPORTLENS_NO_FORK=1 forces the spawn path that platforms without fork take
        self.can_fork = hasattr(os, "fork") and sys.platform != "win32" and not os.environ.get("EXPORTLENS_NO_FORK")
        self.use_spares = True
        self.spares: list[Spare] = []  # oldest first
        self.served_warm = False  # a job started on a warm spare: past the cold start
        self.cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        self._next_scan = 0.0
        self._spare_deaths = 0

    def send(self, event: dict[str, Any]) -> None:
        self.protocol.write(json.dumps(event, default=str) + "\n")
        self.protocol.flush()

    def _fork(self, *parents_ends: int) -> int:
        """fork(); the child closes the zygote's ends of its pipes and the spares', like any child."""
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            spares = [fd for s in self.spares for fd in (s.request_fd, s.result_fd)]
            for fd in (*parents_ends, *spares, *self.children):
                os.close(fd)
        return pid

    def fork_spare(self) -> None:
        if not self.can_fork or not self.use_spares:
            return
        req_r, req_w = os.pipe()
        res_r, res_w = os.pipe()
        pid = self._fork(req_w, res_r)
        if pid == 0:
            run_spare(req_r, res_w)
        os.close(req_r)
        os.close(res_w)
        spare = Spare(pid, req_w, res_r)
        self.spares.append(spare)
        self.selector.register(res_r, selectors.EVENT_READ, spare)  # its warm-up ends: refill at once

    def refill(self) -> None:
        """Keep SPARES warm children forked ahead, warming one at a time on a free core: never on
        the cores of jobs somebody waits for (two for a job with draft export beside its plain
        export; on a one-core machine, only while none runs), and
        not beside the first jobs of a cold start, before any spare was ready (the first squiggle:
        its own copy-on-write faults need the machine). Background jobs do not count: they give
        way (lower priority)."""
        if len(self.spares) >= SPARES or any(not s.ready for s in self.spares):
            return
        waited_for = sum(c.cores for c in self.children.values() if not (c.background or c.killed or c.ended))  # ended: only exiting
        if waited_for >= self.cores or (waited_for and not self.served_warm):
            return
        self.fork_spare()

    def _spare_ready(self, spare: Spare) -> bool:
        """Whether its warm-up is done (its empty line is read here); a spare that died is dropped."""
        if spare.ready:
            return True
        if not select.select([spare.result_fd], [], [], 0)[0]:
            return False
        self._unwatch(spare)
        try:
            said = os.read(spare.result_fd, 1)
        except OSError:
            said = b""
        if said != b"\n":  # it died warming up
            self._lost_spare(spare)
            return False
        spare.ready = True
        return True

    def _unwatch(self, spare: Spare) -> None:
        if spare.watched:
            spare.watched = False
            self.selector.unregister(spare.result_fd)

    def _lost_spare(self, spare: Spare) -> None:
        """A spare died before it got a job: after three, something kills them (stop making new ones, fork per job)."""
        self._drop_spare(spare)
        self._spare_deaths += 1
        if self._spare_deaths >= 3:
            self.use_spares = False

    def _drop_spare(self, spare: Spare) -> None:
        if spare not in self.spares:
            return
        self.spares.remove(spare)
        self._unwatch(spare)
        os.close(spare.request_fd)
        os.close(spare.result_fd)

    def _take_spare(self) -> Spare | None:
        """A spare that finished warming up (the oldest); one still warming stays for a later job."""
        self._reap_any()  # a spare that died while waiting is dropped there: never hand it a job
        for spare in list(self.spares):
            if self._spare_ready(spare):
                self.spares.remove(spare)
                return spare
        return None  # a fresh fork now beats waiting for the warm-up

    def retire_spares(self) -> None:
        for spare in list(self.spares):
            self._drop_spare(spare)
            proctree.kill([spare.pid])  # reaped by _reap_any, never waited for here

    def start(self, request: dict[str, Any]) -> None:
        jobdir = tempfile.mkdtemp(prefix="exportlens-job-")
        timeout = float(request["timeout"])  # the client always sends it (`RunRequest.timeout`); `_handle` checked it
        memory_mb = int(request.get("memory_mb") or 0)
        background = bool(request.get("background"))
        if not background and not any(not c.reported for c in self.children.values()) and isinstance(request.get("job"), dict):
            # no other job runs: the could-be-dynamic probe may take the other core beside plain export (dynamic_probe.py)
            request = {**request, "job": {"probe_beside": True, **request["job"]}}  # unless the job says otherwise (bench/dynamic_probe.py)
        spare = None if background else self._take_spare()  # the warm spares are for jobs somebody waits for
        if spare is not None:
            try:
                os.write(spare.request_fd, (json.dumps({**request, "jobdir": jobdir}) + "\n").encode())
            finally:
                os.close(spare.request_fd)
            child = Child(request["id"], spare.pid, spare.result_fd, time.monotonic() + timeout, jobdir, memory_mb)
        elif self.can_fork:
            r, w = os.pipe()
            pid = self._fork(r)
            if pid == 0:
                run_child(request, w, jobdir)
            os.close(w)
            child = Child(request["id"], pid, r, time.monotonic() + timeout, jobdir, memory_mb)
        else:  # no fork here: a fresh interpreter per job, slower but just as isolated
            safe = ["-P"] if sys.version_info >= (3, 11) else []  # never import from the working directory
            proc = subprocess.Popen(
                [sys.executable, *safe, "-m", "exportlens.worker", "--one-job", jobdir],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                cwd=_PACKAGE_PARENT,
            )
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(json.dumps(request).encode())
            proc.stdin.close()
            child = Child(request["id"], proc.pid, proc.stdout.fileno(), time.monotonic() + timeout, jobdir, memory_mb, proc=proc)
        child.background = background
        child.cores = 2 if request.get("job", {}).get("draft_beside") or request.get("job", {}).get("probe_beside") else 1
        self.served_warm = self.served_warm or spare is not None
        os.set_blocking(child.fd, False)
        self.children[child.fd] = child
        self.selector.register(child.fd, selectors.EVENT_READ, child)
        self.send({"event": "started", "id": child.id, "pid": child.pid})

    def cancel(self, job_id: str) -> None:
        for child in self.children.values():
            if child.id == job_id:
                child.cancelled = True
                self._kill_tree(child)

    # -- a job's process tree -----------------------------------------------------------------

    def _known(self) -> set[int]:
        """Our own processes: the jobs' roots and the spares (never taken for orphans)."""
        return {c.pid for c in self.children.values()} | {s.pid for s in self.spares}

    def _watch_trees(self, procs: dict[int, proctree.Proc]) -> None:
        """Record every job's members; give orphans re-parented to us to the jobs they came from
        (or, unknown, to every running job); stop a tree over its memory cap."""
        me = os.getpid()
        known = self._known()
        running = list(self.children.values())
        for child in running:
            for pid in proctree.members(child.pid, procs):
                child.seen.setdefault(pid, procs[pid].started)
        for p in procs.values():
            if p.ppid != me or p.pid in known:
                continue
            owners = [c for c in running if c.seen.get(p.pid) == p.started] or running
            if not owners:
                proctree.kill([p.pid])  # a leftover nobody owns any more
            for child in owners:
                child.seen.setdefault(p.pid, p.started)
        for child in running:
            if child.memory_mb <= 0 or child.killed:
                continue
            cap, live = child.memory_mb * 1024 * 1024, self._live(child, procs)
            if sum(proctree.resident_bytes(pid) for pid in live) <= cap:
                continue  # private memory is part of the resident: under the cap without the costly count
            used = sum(proctree.private_bytes(pid) for pid in live)
            if used > cap:
                child.memory_used = used
                self._kill_tree(child, procs)

    def _live(self, child: Child, procs: dict[int, proctree.Proc]) -> set[int]:
        return {pid for pid, started in child.seen.items() if (p := procs.get(pid)) is not None and p.started == started}

    def _kill_tree(self, child: Child, procs: dict[int, proctree.Proc] | None = None) -> None:
        """The job's session, everything it forked (also what left the session) and its orphans."""
        child.killed = True
        proctree.kill_group(child.pid)
        procs = proctree.snapshot() if procs is None else procs
        for pid in proctree.members(child.pid, procs):
            child.seen.setdefault(pid, procs[pid].started)
        proctree.kill(self._live(child, procs) | {child.pid} - {os.getpid()})
        if child.proc is not None and not proctree.LINUX:
            child.proc.kill()

    def _reap_any(self) -> None:
        """Collect every exited child without blocking: jobs, the spares, adopted orphans."""
        if not hasattr(os, "waitpid") or sys.platform == "win32":
            for child in self.children.values():
                if child.proc is not None and child.status is None and (code := child.proc.poll()) is not None:
                    child.status = code << 8 if code >= 0 else -code
            return
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            spare = next((s for s in self.spares if s.pid == pid), None)
            if spare is not None:  # died while waiting for a job
                self._lost_spare(spare)
                continue
            for child in self.children.values():
                if child.pid == pid:
                    child.status = status
                    break

    # -- events -------------------------------------------------------------------------------

    def _read(self, child: Child) -> None:
        """Read what is there now (the pipe never blocks us: whoever holds it, we do not wait)."""
        while child.eof_at is None:
            try:
                chunk = os.read(child.fd, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                child.eof_at = time.monotonic()
                self.selector.unregister(child.fd)
                return
            child.buffer += chunk
            *lines, child.buffer = child.buffer.split(b"\n")
            for raw in lines:
                self._event(child, raw)

    def _event(self, child: Child, raw: bytes) -> None:
        try:
            event = json.loads(raw)
        except ValueError:
            return
        if event.get("event") == "end":
            child.ended = True
            if not child.cancelled and not child.killed:  # complete: answer now, reap the process later
                child.reported = True
                self.send({"event": "done", "id": child.id, "status": "ok", "detail": "", "stderr": _tail(os.path.join(child.jobdir, "output.log"))})
            return
        event["id"] = child.id
        self.send(event)

    def _finish(self, child: Child) -> None:
        """The job's own process is gone: take what it wrote, end what it left, answer."""
        self._kill_tree(child)  # grandchildren the user's code left behind
        self._read(child)  # what it wrote before it went is in the pipe already
        if child.eof_at is None:
            self.selector.unregister(child.fd)
        del self.children[child.fd]
        if child.proc is not None and child.proc.stdout is not None:
            child.proc.stdout.close()
        else:
            os.close(child.fd)
        if not child.reported:
            status, detail = self._verdict(child)
            self.send({"event": "done", "id": child.id, "status": status, "detail": detail, "stderr": _tail(os.path.join(child.jobdir, "output.log"))})
        shutil.rmtree(child.jobdir, ignore_errors=True)

    def _verdict(self, child: Child) -> tuple[str, str]:
        if child.cancelled:
            return "cancelled", "cancelled"
        if child.timed_out:
            return "timeout", "the job ran past its time limit and was stopped"
        if child.memory_used:
            return "crashed", (
                f"the job's processes used {child.memory_used / 2**20:.0f} MB together, over its "
                f"memory cap of {child.memory_mb} MB (the whole process tree counts), and were stopped"
            )
        if child.closed_pipe:
            return "crashed", ("the job closed its connection to ExportLens (did the code close inherited file descriptors?) and was stopped")
        st = child.status or 0
        if os.WIFSIGNALED(st):
            return "crashed", f"killed by signal {_signal_name(os.WTERMSIG(st))}"
        code = os.WEXITSTATUS(st)
        if child.ended and code == 0:
            return "ok", ""
        if code == 0:
            return "crashed", "the process exited (os._exit?) before the analysis finished"
        return "crashed", f"the process exited with status {code} before the analysis finished"

    def _tick(self) -> None:
        """Deadlines, memory, pipes closed early, exited jobs: everything that needs no event."""
        self._reap_any()
        now = time.monotonic()
        if self.children and now >= self._next_scan:
            self._next_scan = now + SCAN_EVERY
            self._watch_trees(proctree.snapshot())
        for child in list(self.children.values()):
            if child.status is not None:
                self._finish(child)
                continue
            if now >= child.deadline and not child.timed_out:
                child.timed_out = True
                self._kill_tree(child)
            elif child.eof_at is not None and now - child.eof_at > EOF_GRACE and not child.killed:
                child.closed_pipe = not child.ended
                self._kill_tree(child)

    def shutdown(self) -> None:
        for child in list(self.children.values()):
            self._kill_tree(child)
        self.retire_spares()
        me = os.getpid()
        proctree.kill({p.pid for p in proctree.snapshot().values() if p.ppid == me})  # adopted orphans
        self._reap_any()

    def serve(self, stdin: IO[bytes]) -> None:
        os.set_blocking(stdin.fileno(), True)
        self.selector.register(stdin.fileno(), selectors.EVENT_READ, None)
        pending = b""
        while True:
            now = time.monotonic()
            timeout = min((c.deadline - now for c in self.children.values() if not c.timed_out), default=None)
            wait = 0.2 if timeout is None else max(0.0, min(timeout, 0.2))
            for key, _ in self.selector.select(wait):
                if key.data is None:
                    chunk = os.read(stdin.fileno(), 1 << 16)
                    if not chunk:
                        self.shutdown()
                        return
                    pending += chunk
                    *lines, pending = pending.split(b"\n")
                    for raw in lines:
                        self._handle(raw)
                elif isinstance(key.data, Spare):
                    self._spare_ready(key.data)
                else:
                    self._read(key.data)
            self._tick()
            self.refill()

    def _handle(self, raw: bytes) -> None:
        if not raw.strip():
            return
        try:
            request = json.loads(raw)
        except ValueError:
            self.send({"event": "error", "message": "unparseable request"})
            return
        op = request.get("op")
        if op == "run":
            timeout = request.get("timeout")
            if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
                self.send({"event": "error", "message": f"a run request needs its timeout in seconds, got {timeout!r}"})
                return
            self.start(request)
        elif op == "cancel":
            self.cancel(str(request.get("id")))
        elif op == "ping":
            self._reap_any()
            ready = [s.pid for s in list(self.spares) if self._spare_ready(s)]
            self.send({"event": "pong", "id": request.get("id"), "spares": ready})


def _tail(path: str, lines: int = 60) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 16384))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return str(num)


def main(argv: list[str]) -> int:
    global _protocol_fd, _child_threads, _zygote_pid, _fresh_rng
    dependencies.launched()  # the environment the server gave us, before torch sets anything of its own
    if argv[:1] == ["--one-job"]:  # spawn fallback: one job, then exit (no fork, so all threads)
        _zygote_pid = os.getppid()
        import torch

        _child_threads = torch.get_num_threads()
        request = json.loads(sys.stdin.read())
        run_child(request, os.dup(1), argv[1])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # terminated: still end every job's tree
    proctree.become_subreaper()  # a job's orphans come to us, not to init: found, killed, reaped
    # One private temporary folder for everything this worker writes (job folders, torch's trace
    # logs, inductor's cache), set before torch is imported; removed when the worker ends.
    workdir = tempfile.mkdtemp(prefix="exportlens-worker-")
    os.environ["TMPDIR"] = tempfile.tempdir = workdir
    # The protocol keeps the real stdout; anything else printed goes to stderr.
    _protocol_fd = os.dup(1)
    protocol = os.fdopen(_protocol_fd, "w", buffering=1)
    os.dup2(2, 1)
    started = time.perf_counter()
    import torch

    try:
        _fresh_rng = torch.random.get_rng_state()
    except Exception:  # a torch without it (or a stand-in): jobs keep whatever state they have
        _fresh_rng = None
    _child_threads = torch.get_num_threads()
    torch.set_num_threads(1)  # before any op: no OpenMP pool in the zygote, ever
    imported = time.perf_counter() - started
    warm, warm_error = (0.0, None) if "--no-warmup" in argv else _try_warm_up()
    _preimport_job()
    if warm_error is None and "--no-warmup" not in argv:
        warm += _warm_failure_paths()
    gc.collect()
    gc.freeze()  # children's collections then skip torch's objects: no copy-on-write storm per job
    zygote = Zygote(protocol)
    # a spare warms up like the zygote did: where that failed, a spare would only die
    zygote.use_spares = "--no-spare" not in argv and "--no-warmup" not in argv and warm_error is None
    from exportlens.worker import compat

    found = compat.probe(torch)
    zygote.send(
        {
            "event": "ready",
            "torch": str(torch.__version__),
            "pid": os.getpid(),
            "python": sys.version.split()[0],
            "import_seconds": round(imported, 3),
            "warmup_seconds": round(warm, 3),
            "warmup_error": warm_error,
            "fork": zygote.can_fork,
            "compat": found,
            "tmpdir": workdir,
            "unsupported": None if found["draft_export"] else compat.unsupported_message(str(torch.__version__)),
        }
    )
    try:
        zygote.serve(sys.stdin.buffer)
    finally:
        zygote.shutdown()
        shutil.rmtree(workdir, ignore_errors=True)
    protocol.flush()
    os._exit(0)  # the server went away: skip torch's ~0.35 s interpreter teardown
