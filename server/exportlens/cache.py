"""The results cache: a document whose run depends on nothing that changed is not run again.

One job runs all of a document's targets (one execution of the user's file), so an entry is one
job: its worker events, replayed through the same fold as a live run (`Engine.check`), so a reused
result is the same result. An entry is found by its *key*, the hash of everything the server sends
or knows before the run: the job itself (the document's runnable text, the overrides, which
targets, draft mode, and the compile backend where the file compiles anything), the interpreter
(its path, its binary's size and mtime), the platform, the memory cap, the environment variables
that shape torch and Python (ENV_PREFIXES), and ExportLens itself (its version and the hash of its
own code, worker included). It is reused only while what the job recorded it depended on
(`worker/dependencies.py`, the `deps` event) is unchanged: every project module, editable
install's and other folder's source it imported by content, every installed distribution it
imported by its RECORD's hash (a new version is a new dist-info folder), the project files it
opened by content, the environment variables it read, and what its imports did not find (no
file appeared where one of them would now find one first). Not in the key, on purpose: the timeout
(a finished run's result does not depend on its deadline, and a run that hit it is never stored),
where traces go, draft export beside plain export (it changes only the time, `tests/test_draft_beside.py`),
and `select` / `ignore` (applied to the replayed result, like `# exportlens: ignore` comments, so
changing them re-runs nothing; a comment written is an edit of the file's text all the same).

Never stored: a job that timed out, crashed, was cancelled or could not start, one without its
`deps` record, one whose files changed while it ran, one whose torch cannot draft-export, and one
where anything raised MemoryError (the memory cap or the machine, not the model, may have decided).

It lives in `${XDG_CACHE_HOME:-~/.cache}/exportlens/results/` (or the folder the user names), one
folder per project root. Entries are written to a temporary file and renamed into place, so a
killed run leaves at most a temporary file no reader takes; an unreadable, corrupt or foreign
entry (another FORMAT) is a miss and the next store replaces it; a folder past MAX_BYTES loses its
least recently used entries; a folder that cannot be written is said once and the run goes on
without storing. Standard library only, no torch.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from exportlens.protocol import DepsEvent, JobEvent, JobSpec

FORMAT = 1  # of an entry; another is foreign: ignored and replaced
MAX_BYTES = 256 * 1024 * 1024  # per project folder; the least recently used entries go past it
NO_CACHE_ENV = "EXPORTLENS_NO_CACHE"  # set (not "0"): every front end runs without the cache, as with --no-cache
# environment variables that shape torch and Python (read by C++ too, so not all seen as os.environ reads): in the key
ENV_PREFIXES = ("TORCH", "PYTORCH", "CUDA", "OMP_", "MKL_", "KMP_", "OPENBLAS", "PYTHON", "LD_PRELOAD", "LD_LIBRARY_PATH", "FX_", "NCCL")
NOT_IN_KEY = ("trace_dir", "draft_beside")  # where the trace goes, and a fork that changes only the time
STALE_TEMP = 3600.0  # seconds after which a killed writer's temporary file is removed


def default_base() -> str:
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "exportlens", "results")


def off_by_env() -> bool:
    """Whether EXPORTLENS_NO_CACHE turns the cache off (the test suite sets it; so may a CI job)."""
    return os.environ.get(NO_CACHE_ENV, "").strip().lower() not in ("", "0", "false", "no")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@functools.cache
def own_fingerprint() -> str:
    """ExportLens's version and the hash of its own code (an editable install changes without a new version)."""
    from exportlens import __version__

    package = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha256(__version__.encode())
    for folder, dirs, files in sorted(os.walk(package)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(f for f in files if f.endswith(".py")):
            path = os.path.join(folder, name)
            h.update(os.path.relpath(path, package).encode() + b"\0")
            with open(path, "rb") as fh:
                h.update(fh.read() + b"\0")
    return f"{__version__}+{h.hexdigest()[:20]}"


def interpreter(python: str | None) -> dict[str, Any]:
    """What names the worker's interpreter: the folder of the path given (a venv is found from it:
    `python` and `python3` of one venv are one interpreter), the binary it resolves to, and that
    binary's size and mtime."""
    import shutil

    exe = python or sys.executable
    if os.sep not in exe and "/" not in exe:
        exe = shutil.which(exe) or exe
    real = os.path.realpath(exe)
    folder = os.path.dirname(os.path.abspath(exe))
    try:
        st = os.stat(real)
    except OSError:
        return {"folder": folder, "python": os.path.abspath(exe), "missing": True}
    return {"folder": folder, "real": real, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def key(job: JobSpec, *, python: str | None, memory_mb: int, env: Mapping[str, str], exports: bool) -> str:
    """The entry a job's result is kept under: the hash of everything known before it runs.

    A setting is in it only where the file uses it: the compile backend where the file calls
    torch.compile, draft mode where it has an export target (`exports`). A file without one may still
    reach an export call at run time: its entry keeps the draft mode it ran with (`Entry.draft`)
    and holds only for that mode if an export target did run (`lookup`)."""
    spec = {k: v for k, v in job.items() if k not in NOT_IN_KEY}
    if not spec.get("compile"):
        spec.pop("compile_backend", None)  # only a file that calls torch.compile uses it
    if not exports:
        spec.pop("draft", None)
    material = {
        "format": FORMAT,
        "exportlens": own_fingerprint(),
        "interpreter": interpreter(python),
        "platform": [sys.platform, os.uname().machine if hasattr(os, "uname") else ""],
        "memory_mb": memory_mb,
        "env": {k: v for k, v in sorted(env.items()) if k.startswith(ENV_PREFIXES)},
        "job": spec,
    }
    return sha256(json.dumps(material, sort_keys=True, ensure_ascii=False, default=str).encode())


@dataclass(frozen=True)
class Entry:
    """One stored job: its events, what they depend on, and the run they came from."""

    key: str
    owner: str  # the document's file (a notebook's script name for a notebook)
    finished: str  # when its run ended, "YYYY-MM-DD HH:MM:SS UTC"
    seconds: float  # how long its job took
    events: list[JobEvent]
    deps: DepsEvent
    trace_files: list[str]
    source: str | None = None  # the runnable text it ran (the editor shows the last result on it)
    draft: str = "auto"  # the draft mode it ran with

    def used_draft(self) -> bool:
        """Whether an export target ran (draft mode shaped it)."""
        return any(e["event"] in ("target", "finding") and cast(dict[str, Any], e).get("kind", "export") == "export" for e in self.events)

    @property
    def run(self) -> dict[str, Any]:
        """The run a reused result came from, as the reports name it."""
        return {"finished": self.finished, "id": self.key[:12], "seconds": round(self.seconds, 2)}

    @property
    def torch(self) -> str | None:
        return self.deps.get("torch")

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "key": self.key,
            "owner": self.owner,
            "finished": self.finished,
            "seconds": self.seconds,
            "trace_files": self.trace_files,
            "source": self.source,
            "draft": self.draft,
            "deps": self.deps,
            "events": self.events,
        }

    @classmethod
    def from_json(cls, doc: Any, key: str) -> Entry | None:
        """The entry, or None when `doc` is not a whole entry of this FORMAT under this key."""
        if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("key") != key:
            return None
        events, deps = doc.get("events"), doc.get("deps")
        if not isinstance(events, list) or not all(isinstance(e, dict) and isinstance(e.get("event"), str) for e in events):
            return None
        if not isinstance(deps, dict) or not isinstance(deps.get("sources"), dict) or not isinstance(deps.get("distributions"), list):
            return None
        if not any(e["event"] == "done" for e in events):
            return None
        try:
            source = doc.get("source")
            return cls(
                key,
                str(doc["owner"]),
                str(doc["finished"]),
                float(doc["seconds"]),
                events,
                cast(DepsEvent, deps),
                [str(t) for t in doc["trace_files"]],
                source if isinstance(source, str) else None,
                str(doc.get("draft") or "auto"),
            )
        except (KeyError, TypeError, ValueError):
            return None


def project_files(deps: DepsEvent, root: str) -> list[str]:
    """The project's files a run imported or read (a save of one of them re-runs the document)."""
    inside = os.path.join(root, "")
    return sorted(p for p in [*deps.get("sources", {}), *deps.get("data", {})] if p.startswith(inside))


def cacheable(events: Iterable[JobEvent]) -> DepsEvent | None:
    """The job's `deps` record when its result may be kept, else None (see the module's docstring)."""
    events = list(events)
    done = [e for e in events if e["event"] == "done"]
    deps = [e for e in events if e["event"] == "deps"]
    if not done or done[-1]["status"] != "ok" or not deps or deps[-1].get("unstable"):
        return None
    if any(e["event"] == "target" and e.get("unsupported") for e in events):
        return None
    if '"MemoryError' in json.dumps(events, default=str):
        return None
    return deps[-1]


_record_shas: dict[str, tuple[tuple[int, int, int], str]] = {}


def _record_sha(path: str) -> str | None:
    """SHA-256 of a distribution's RECORD, remembered by its stat for this process (torch's is 1.5 MB)."""
    try:
        st = os.stat(path)
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        known = _record_shas.get(path)
        if known is not None and known[0] == stamp:
            return known[1]
        with open(path, "rb") as fh:
            sha = sha256(fh.read())
    except OSError:
        return None
    _record_shas[path] = (stamp, sha)
    return sha


def changed(deps: DepsEvent, texts: Mapping[str, str], env: Mapping[str, str]) -> str | None:
    """What changed since the run that recorded `deps` (a few words), or None when nothing did.
    `texts` are the files the new run is given instead of the disk's; `env` is the worker's environment."""
    for path, sha in deps.get("sources", {}).items():
        text = texts.get(path)
        try:
            if text is not None:
                now = sha256(text.encode("utf-8"))
            else:
                with open(path, "rb") as fh:
                    now = sha256(fh.read())
        except OSError:
            return f"{path} is gone"
        if now != sha:
            return f"{path} changed"
    for dist in deps.get("distributions", []):
        if dist.get("sha") is None or _record_sha(dist["record"]) != dist["sha"]:
            return f"the distribution {dist.get('name')} changed"
    for path, seen in deps.get("data", {}).items():
        try:
            st = os.stat(path)
        except OSError:
            return f"{path} is gone"
        if "sha" in seen:
            with open(path, "rb") as fh:
                if sha256(fh.read()) != seen["sha"]:
                    return f"{path} changed"
        elif (st.st_size, st.st_mtime_ns) != (seen.get("size"), seen.get("mtime_ns")):
            return f"{path} changed"
    for name, value in deps.get("env", {}).items():
        if env.get(name) != value:
            return f"the environment variable {name} changed"
    for path in deps.get("absent", []):
        if os.path.exists(path):
            return f"{path} appeared (an import would find it)"
    for folder, names in deps.get("pth", {}).items():
        try:
            listed = sorted(e.name for e in os.scandir(folder) if e.name.endswith(".pth"))
        except OSError:
            listed = []
        if listed != names:
            return f"the .pth files of {folder} changed (an install)"
    return None


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")[:40] or "project"


def _write_atomically(path: str, data: bytes) -> None:
    """`data` at `path` as one rename: a reader sees the old file or the whole new one, never half."""
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".part-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class ResultsCache:
    """The entries of every project under one base folder (one subfolder per project root). Its
    methods do blocking file work: the engine calls them in a thread, so `warn` may be called from one."""

    def __init__(self, base: str, *, max_bytes: int = MAX_BYTES, warn: Callable[[str], None] | None = None) -> None:
        self.base = os.path.abspath(os.path.expanduser(base))
        self.max_bytes = max_bytes
        self.warn = warn or (lambda message: print(message, file=sys.stderr))
        self._unwritable: set[str] = set()  # folders already said to be read-only (said once)
        self._lock = threading.Lock()
        self._bytes: dict[str, int] = {}  # folder → its entries' size as last pruned, plus what this process stored since

    def folder(self, root: str) -> str:
        root = os.path.abspath(root)
        return os.path.join(self.base, f"{_slug(os.path.basename(root))}-{sha256(root.encode())[:12]}")

    def _entry_path(self, root: str, key: str) -> str:
        return os.path.join(self.folder(root), "entries", f"{key}.json")

    def _last_path(self, root: str, owner: str) -> str:
        return os.path.join(self.folder(root), "last", f"{sha256(os.path.abspath(owner).encode())[:32]}.json")

    def read(self, root: str, key: str) -> Entry | None:
        """The entry stored under `key`, whatever it depends on; None when there is none or it is not a whole entry."""
        return Entry.from_json(_read_json(self._entry_path(root, key)), key)

    def lookup(self, root: str, key: str, texts: Mapping[str, str], env: Mapping[str, str], *, draft: str = "auto") -> Entry | None:
        """The entry under `key` if nothing it depends on changed, else None."""
        entry = self.read(root, key)
        if entry is None or (entry.draft != draft and entry.used_draft()) or changed(entry.deps, texts, env) is not None:
            return None
        try:
            os.utime(self._entry_path(root, key))  # recently used: pruned last
        except OSError:
            pass
        return entry

    def last(self, root: str, owner: str) -> Entry | None:
        """The entry of `owner`'s last stored run of its own text, whether or not it still holds (the editor shows it at once)."""
        pointer = _read_json(self._last_path(root, owner))
        if not isinstance(pointer, dict) or pointer.get("owner") != os.path.abspath(owner) or not isinstance(pointer.get("key"), str):
            return None
        return self.read(root, pointer["key"])

    def remember_last(self, root: str, owner: str, key: str) -> None:
        """Make the entry under `key` `owner`'s last run (a reused one too: a file edited and then
        edited back is shown at once as it is now, not as the edit between)."""
        path, pointer = self._last_path(root, owner), {"owner": os.path.abspath(owner), "key": key}
        if _read_json(path) == pointer:
            return
        try:
            _write_atomically(path, json.dumps(pointer).encode())
        except OSError:  # a read-only cache serves what it has; storing says that it cannot write
            pass

    def store(
        self,
        root: str,
        key: str,
        owner: str,
        events: list[JobEvent],
        *,
        seconds: float,
        trace_files: list[str],
        source: str | None,
        draft: str = "auto",
        last: bool,
    ) -> Entry | None:
        """Keep a finished job's events under `key` (and, with `last`, as `owner`'s last run); None when it may not be kept."""
        deps = cacheable(events)
        if deps is None:
            return None
        finished = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        entry = Entry(key, os.path.abspath(owner), finished, seconds, list(events), deps, list(trace_files), source, draft)
        folder = self.folder(root)
        if folder in self._unwritable:
            return None
        try:
            data = json.dumps(entry.to_json(), ensure_ascii=False, default=str).encode("utf-8")
            _write_atomically(self._entry_path(root, key), data)
            if last:
                _write_atomically(self._last_path(root, owner), json.dumps({"owner": entry.owner, "key": key}).encode())
            if folder not in self._bytes or self._bytes[folder] + len(data) > self.max_bytes:  # the folder is scanned once, then when it may be full
                self.prune(folder)
            else:
                self._bytes[folder] += len(data)
        except OSError as exc:
            with self._lock:  # stores run in threads: said once all the same
                if folder in self._unwritable:
                    return None
                self._unwritable.add(folder)
            self.warn(f"exportlens: warning: cannot write the results cache in {folder} ({exc.strerror or exc}); results of this run are not kept")
            return None
        return entry

    def prune(self, folder: str) -> None:
        """Drop the least recently used entries past `max_bytes`, and temporary files of killed writers."""
        now = time.time()
        entries = []
        for sub in ("entries", "last"):
            try:
                scanned = list(os.scandir(os.path.join(folder, sub)))
            except OSError:
                continue
            for e in scanned:
                try:
                    st = e.stat()
                except OSError:
                    continue
                if e.name.startswith(".part-"):
                    if now - st.st_mtime > STALE_TEMP:
                        _unlink(e.path)
                elif sub == "entries":
                    entries.append((st.st_mtime, st.st_size, e.path))
        total = sum(size for _, size, _ in entries)
        if total > self.max_bytes:
            for _, size, path in sorted(entries):
                if total <= self.max_bytes * 0.8:
                    break
                _unlink(path)
                total -= size
        self._bytes[folder] = total


def _read_json(path: str) -> Any:
    """The JSON document in the file, None where there is none or it does not parse (half-written, foreign)."""
    try:
        with open(path, "rb") as fh:
            return json.loads(fh.read())
    except (OSError, ValueError):
        return None


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


async def replay(entry: Entry) -> AsyncIterator[JobEvent]:
    """The entry's events, as `WorkerClient.run` would yield them."""
    for event in entry.events:
        yield event
