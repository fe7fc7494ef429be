"""Runs and their results: one task per analysed document, newest wins, results published per place.

A run belongs to its *owner* (the document whose targets ran: a .py file or a notebook); its
diagnostics land in *places* (`model.place`: a file, or one cell of a notebook), possibly of other
files (a helper module). A new run of an owner cancels the one in flight, which kills that worker
job; a run whose generation is no longer the newest publishes nothing. Every place a run touched
is re-published from all owners' results, so a diagnostic a later run no longer has is cleared.
Ranges are carried onto the editor's current text (see `lsp/textmap.py`). Nothing here knows what
kind of document it runs: the document's mapper does (`document.py`).

Runs are what somebody waits for: while one is in flight (`busy`; also a command that runs targets,
`foreground()`), fix verification waits, and one that begins preempts it (`lsp/verification.py`).
Background work (verification, precomputing fixes) starts once no run has been in flight for
SETTLE seconds (`when_quiet`): an editor often saves again right after a publish (format-on-save,
"save all", save on focus change), and that run then finds the server and the cores free.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import unquote

from lsprotocol import types

from exportlens import document, project
from exportlens.document import Document
from exportlens.engine import Engine, EngineSettings, FileResult
from exportlens.lsp.convert import path_of, text_hash, to_lsp, uri_of
from exportlens.lsp.host import Host
from exportlens.lsp.progress import RunProgress, problems_text
from exportlens.lsp.settings import Settings
from exportlens.lsp.textmap import LineMap, line_map
from exportlens.model import Diagnostic, TargetResult, place, split_place
from exportlens.source import SourceError, read_disk, read_source
from exportlens.targets import FileTargets


@dataclass
class OwnerResult:
    """The last published result of running one file's targets."""

    owner: str
    diagnostics: list[Diagnostic]
    targets: list[TargetResult]
    texts: dict[str, str | None]  # place → the text the diagnostics were placed against
    seconds: float
    version: int | None = None  # the editor's version of the owner that was analysed (None: a disk snapshot)
    finished: float = field(default_factory=time.time)
    document: Document | None = None  # what ran: places the fixes computed for its diagnostics
    final: bool = True  # False: published early (the user's export failed), the run is still finding the rest

    def files(self) -> set[str]:
        """The places its diagnostics are in."""
        return {place(d.file, d.cell) for d in self.diagnostics}

    def problems(self, target: str | None = None) -> int:
        return sum(1 for d in self.diagnostics if d.problem and (target is None or target in d.target.split(", ")))


@dataclass
class RunSummary:
    files: list[str]
    problems: int
    targets: list[dict[str, Any]]
    cancelled: bool = False
    superseded: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"files": self.files, "problems": self.problems, "targets": self.targets, "cancelled": self.cancelled, "superseded": self.superseded}


SETTLE = 0.25  # seconds with no run in flight before background work starts
TRACE_CACHE = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "exportlens", "traces")


def _consume(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()


def _config_stamp(path: str) -> float:
    """When the project's pyproject.toml last changed (targets may be declared there)."""
    try:
        return os.stat(os.path.join(project.find_root(path), "pyproject.toml")).st_mtime
    except OSError:
        return 0.0


def count_problems(diags: list[Diagnostic]) -> int:
    return sum(1 for d in diags if d.problem)


class Runs:
    def __init__(self, ls: Host) -> None:
        self.ls = ls
        self._engine: Engine | None = None
        self._engine_python: str | None = None
        self.results: dict[str, OwnerResult] = {}
        self.tasks: dict[str, asyncio.Task[FileResult | None]] = {}
        self.generation: dict[str, int] = {}
        self.published: set[str] = set()  # files that currently show diagnostics
        self._maps: dict[tuple[str, str], LineMap] = {}  # (analysed text's hash, current text's hash)
        self._plans: dict[tuple[Any, ...], tuple[FileTargets | None, bool]] = {}  # (path, text hash, …) → plan
        self._loaded: dict[str, tuple[tuple[int, int], Document]] = {}  # path → (its stat, the document read from disk)
        self._closing: list[asyncio.Task[None]] = []
        self._held = 0  # runs (and commands that run targets) in flight
        self._quiet: list[Callable[[], None]] = []  # background work waiting for no run in flight
        self._quiet_timer: asyncio.TimerHandle | None = None
        self._to_warm: set[str] = set()  # places whose fixes to precompute once quiet

    # -- what somebody waits for --------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """A run or a command that runs targets is in flight: background work waits."""
        return self._held > 0

    def hold(self) -> None:
        """Work somebody waits for begins: verification in flight stops now (its jobs killed), and
        background work waits for it to end."""
        self._held += 1
        if self._quiet_timer is not None:
            self._quiet_timer.cancel()
            self._quiet_timer = None
        self.ls.verification.preempt()

    def release(self) -> None:
        self._held -= 1
        if self._held == 0:
            self.ls.verification.resume()
            if self._quiet:
                self._arm_quiet()

    def when_quiet(self, work: Callable[[], None]) -> None:
        """Call `work` once no run has been in flight for SETTLE seconds (once, however often asked)."""
        if work not in self._quiet:
            self._quiet.append(work)
        if not self.busy:
            self._arm_quiet()

    def _arm_quiet(self) -> None:
        if self._quiet_timer is not None:
            self._quiet_timer.cancel()
        self._quiet_timer = asyncio.get_running_loop().call_later(SETTLE, self._quiet_now)

    def _quiet_now(self) -> None:
        self._quiet_timer = None
        if self.busy:
            return  # release() arms it again
        work, self._quiet = self._quiet, []
        for w in work:
            w()

    def _warm(self) -> None:
        """Precompute the fixes of the places published since (computing them holds the server's
        interpreter for a while: not while a save's run starts)."""
        paths, self._to_warm = sorted(self._to_warm), set()
        self.ls.background(self.ls.actions.warm(paths))

    @contextlib.contextmanager
    def foreground(self) -> Iterator[None]:
        """Hold for the length of a command that runs targets (run on all, make it export...)."""
        self.hold()
        try:
            yield
        finally:
            self.release()

    # -- engine -------------------------------------------------------------------------------

    def engine(self) -> Engine:
        """The engine for the current settings (a new interpreter means a new worker)."""
        s = self.ls.settings
        cfg = self.project_config()
        python = s.interpreter or cfg.python
        if self._engine is not None and self._engine_python != python:
            old, self._engine = self._engine, None
            self._closing.append(asyncio.ensure_future(old.close()))
        default = Settings()
        want = EngineSettings.resolved(  # a client setting left at its default does not override pyproject.toml
            cfg,
            python=s.interpreter,
            timeout=s.timeout_seconds if s.timeout_seconds != default.timeout_seconds else None,
            compile_backend=s.compile_backend if s.compile_backend != default.compile_backend else None,
            draft=s.draft_export if s.draft_export != default.draft_export else None,
            default_timeout=default.timeout_seconds,
            knob="the setting exportlens.timeoutSeconds",
            extra_targets=list(s.targets),
            trace_dir=TRACE_CACHE,  # draft export writes its trace anyway: keep it where hover links it
        )
        if self._engine is None:
            self._engine = Engine(want, log=self.ls.log_worker)
            self._engine_python = python
        now = self._engine.settings
        now.timeout, now.timeout_knob, now.compile_backend, now.draft = want.timeout, want.timeout_knob, want.compile_backend, want.draft
        now.extra_targets, now.trace_dir = want.extra_targets, want.trace_dir
        if s.jobs is not None:
            now.jobs = self._engine.worker.slots.size = s.jobs
        return self._engine

    def project_config(self) -> project.ProjectConfig:
        """`[tool.exportlens]` of the workspace's project (the first folder)."""
        try:
            root = self.ls.workspace.root_path
        except RuntimeError:
            root = None
        return project.load_config(project.find_root(root)) if root else project.ProjectConfig(root="")

    async def warm_up(self) -> None:
        """Start the worker (it imports torch) so the first run does not pay for it."""
        try:
            info = await self.engine().start()
            self.ls.log(f"worker ready: torch {info.get('torch', '?')}")
            self.ls.tell_unsupported(info.get("unsupported"))
        except Exception as exc:  # reported as a diagnostic when a run needs it
            if self._engine is not None and not self._engine.worker.closed:  # not just replaced by a newer one
                self.ls.log(f"worker did not start: {exc}", types.MessageType.Warning)

    async def close(self) -> None:
        if self._quiet_timer is not None:
            self._quiet_timer.cancel()
        self._quiet.clear()
        for task in list(self.tasks.values()):
            task.cancel()
        if self._engine is not None:
            await self._engine.close()
        for t in self._closing:
            await asyncio.gather(t, return_exceptions=True)

    # -- planning -----------------------------------------------------------------------------

    def document(self, path: str, text: str | None = None) -> Document:
        """The document of `path` as the editor has it: the open buffer (`text`), else the disk's
        (a notebook is read once per change on disk, not once per request)."""
        if text is None:
            text, _ = self.current_text(path)
        return document.load(path, text) if text is not None else self.disk_document(path)

    def disk_document(self, path: str) -> Document:
        """The document of `path` as it is on disk, loaded again only when the file changed."""
        try:
            st = os.stat(path)
            stamp = (st.st_mtime_ns, st.st_size)
        except OSError:
            return document.load(path)
        cached = self._loaded.get(path)
        if cached is None or cached[0] != stamp:
            if len(self._loaded) > 64:
                self._loaded.clear()
            cached = self._loaded[path] = (stamp, document.load(path))
        return cached[1]

    def document_of(self, owner: str) -> Document:
        """The document `owner`'s last run analysed (its fixes are placed by it), else the current one."""
        res = self.results.get(owner)
        return res.document if res is not None and res.document is not None else self.document(owner)

    def target_names(self, path: str, text: str | None = None) -> list[str]:
        """Targets of a document, statically (no user code runs), as the document names them."""
        found = self.plan(path, text)[0]
        mapper = self.document(path, text).mapper
        return [mapper.text(t.name) for t in found.targets] if found is not None else []

    def worth_running(self, path: str, text: str | None = None) -> bool:
        """A file with targets, or one Python could not compile (binary, undecodable, a syntax error,
        nested too deeply): running that one costs no worker job and publishes why."""
        found, unreadable = self.plan(path, text)
        return bool(found is not None and found.targets) or unreadable

    def plan(self, path: str, text: str | None = None) -> tuple[FileTargets | None, bool]:
        """(targets, unreadable) of a file, cached by its text's hash (and the settings that name
        targets): a 20,000-line file is parsed once per version, not once per CodeLens request."""
        doc = self.document(path, text)
        key = (path, text_hash(doc.text), tuple(self.ls.settings.targets), _config_stamp(path)) if doc.text is not None else None
        if key is not None and key in self._plans:
            return self._plans[key]
        try:
            found = self.engine().plan(doc).targets
        except Exception as exc:
            self.ls.log(f"cannot plan {path}: {exc}", types.MessageType.Warning)
            return None, False
        answer = (found, found is None and os.path.exists(path))  # found is None: Python could not compile it
        if key is not None:
            if len(self._plans) > 256:
                self._plans.clear()
            self._plans[key] = answer
        return answer

    def owners_for_save(self, path: str) -> list[str]:
        """Files to run when `path` is saved: itself if it has targets, and every owner whose
        last result placed something in it (a helper module)."""
        owners = [path] if self.worth_running(path) or path in self.results else []
        owners += [o for o, r in self.results.items() if o != path and path in r.files()]
        return owners

    def workspace_owners(self) -> list[str]:
        roots: list[str] = []
        try:
            ws = self.ls.workspace
            for folder in ws.folders.values():
                if (p := path_of(folder.uri)) is not None:
                    roots.append(p)
            if not roots and ws.root_path:
                roots.append(ws.root_path)
        except RuntimeError:
            pass
        files: list[str] = []
        for root in roots:
            if os.path.isdir(root):
                cfg = project.load_config(project.find_root(root))
                files.extend(f for f in project.python_files(root, cfg.exclude, cfg.root) if f not in files)
        return [f for f in files if self.target_names(f)]

    # -- running ------------------------------------------------------------------------------

    def start(self, path: str, *, explicit: bool = False, progress: RunProgress | None = None) -> asyncio.Task[FileResult | None]:
        """Run `path` now, cancelling its run in flight; the task yields None if superseded."""
        old = self.tasks.get(path)
        if old is not None and not old.done():
            old.cancel()
        gen = self.generation.get(path, 0) + 1
        self.generation[path] = gen
        self.hold()  # before its job is sent: verification's jobs are killed first
        task = asyncio.ensure_future(self._run(path, gen, explicit, progress))
        self.tasks[path] = task
        task.add_done_callback(lambda t: self._ended(path, t))
        return task

    def _ended(self, path: str, task: asyncio.Task[FileResult | None]) -> None:
        if self.tasks.get(path) is task:
            del self.tasks[path]
        self.release()  # published (or superseded): verification may resume

    async def _run(self, path: str, gen: int, explicit: bool, shared: RunProgress | None) -> FileResult | None:
        engine = self.engine()
        # The text the editor has now (didSave comes after the buffer is final), not the disk, which
        # the editor may be rewriting in place; a file that is not open is read once, by the plan.
        text, version = self.snapshot(path)
        if text is None and not os.path.exists(path):
            self.ls.log(f"{path} was deleted before ExportLens could run it", types.MessageType.Info)
            self.store(path, FileResult(path), None)
            return None
        progress = shared
        if progress is None:
            task = asyncio.current_task()
            names = self.target_names(path) or [os.path.basename(path)]
            progress = RunProgress.start(self.ls, names, lambda: task.cancel() if task else None)
        try:
            doc = document.load(path, text) if text is not None else self.disk_document(path)

            def early(diags: list[Diagnostic]) -> None:  # the user's export failed: shown before draft export runs
                if self.generation.get(path) == gen:
                    self.store(path, FileResult(path, diagnostics=diags, ran=True, document=doc), version, final=False)

            result = await engine.check(doc, explicit=explicit, on_target=progress.target, on_phase=progress.phase, on_early=early)
            self.ls.tell_unsupported(engine.unsupported)
        except asyncio.CancelledError:
            if shared is None:
                superseded = self.generation.get(path) != gen
                progress.end("superseded by a newer run" if superseded else "cancelled")
            raise
        except Exception as exc:  # an engine bug must not take the server down
            self.ls.log(f"run of {path} failed: {type(exc).__name__}: {exc}", types.MessageType.Error)
            if shared is None:
                progress.end(f"failed: {exc}")
            return None
        if self.generation.get(path) != gen:
            if shared is None:
                progress.end("superseded by a newer run")
            return None
        if engine is not self._engine:  # the interpreter setting changed under this run: its worker was
            if shared is None:  # closed (a "crash" that is none), and the new interpreter is what counts
                progress.end("superseded: the interpreter changed")
            self.start(path, explicit=explicit).add_done_callback(_consume)
            return None
        self.store(path, result, version)
        if shared is None:
            progress.end(problems_text(count_problems(result.diagnostics)))
        return result

    async def run_paths(self, paths: list[str], *, explicit: bool) -> RunSummary:
        """Run several owners one after the other under one progress (the command)."""
        if len(paths) == 1:
            task = self.start(paths[0], explicit=explicit)
            return await self._await_runs([(paths[0], task, self.generation[paths[0]])])
        with self.foreground():  # no verification between one owner's run and the next
            return await self._run_one_by_one(paths, explicit=explicit)

    async def _run_one_by_one(self, paths: list[str], *, explicit: bool) -> RunSummary:
        names = [n for p in paths for n in self.target_names(p)]
        me = asyncio.current_task()
        progress = RunProgress.start(self.ls, names or ["workspace"], lambda: me.cancel() if me else None)
        pairs: list[tuple[str, asyncio.Task[FileResult | None], int]] = []
        try:
            for p in paths:
                task = self.start(p, explicit=explicit, progress=progress)
                pairs.append((p, task, self.generation[p]))
                try:
                    await asyncio.shield(task)
                except asyncio.CancelledError:
                    if not task.done():  # we were cancelled, not the run
                        task.cancel()
                        raise
        except asyncio.CancelledError:
            progress.end("cancelled")
            raise
        summary = await self._await_runs(pairs)
        progress.end(problems_text(summary.problems))
        return summary

    async def _await_runs(self, pairs: list[tuple[str, asyncio.Task[FileResult | None], int]]) -> RunSummary:
        summary = RunSummary([], 0, [])
        for path, task, gen in pairs:
            summary.files.append(path)
            try:
                result = await task
            except asyncio.CancelledError:
                me = asyncio.current_task()
                if me is not None and me.cancelling():
                    raise
                superseded = self.generation.get(path) != gen
                summary.superseded |= superseded
                summary.cancelled |= not superseded
                continue
            if result is None:
                summary.superseded = True
                continue
            summary.problems += count_problems(result.diagnostics)
            summary.targets.extend(t.to_json() for t in result.targets)
        return summary

    # -- results and publishing ---------------------------------------------------------------

    def snapshot(self, path: str) -> tuple[str | None, int | None]:
        """(text, version) a run of `path` analyses: the editor's buffer when it is open, else
        (None, None) and the engine reads one snapshot of the file.

        A buffer with non-ASCII text is only trusted if the saved bytes decode to it the way
        Python reads them: otherwise (a latin-1 file without a coding line) Python could not run the
        file, and reading the disk says so."""
        text, version = self.current_text(path)
        if text is None or text.isascii():
            return text, version
        try:
            read_source(path)
        except SourceError:
            return None, None
        return text, version

    def store(self, owner: str, result: FileResult, version: int | None = None, *, final: bool = True) -> None:
        """Keep and publish a run's result; a final one also warms its fixes and starts verifying them
        (an early one, the user's failed export before draft export ends, is only shown)."""
        old = self.results.get(owner)
        before = old.files() if old else set()
        seconds = sum(t.seconds for t in result.targets)
        places = {place(d.file, d.cell) for d in result.diagnostics} | {owner}
        # the texts the diagnostics were placed on (what the run analysed), never a later disk state
        texts: dict[str, str | None] = {p: result.texts[p] if p in result.texts else read_disk(p) if p != owner else None for p in places}
        doc = result.document or document.load(owner)
        self.results[owner] = OwnerResult(owner, list(result.diagnostics), list(result.targets), texts, seconds, version=version, document=doc, final=final)
        self.ls.track(doc)  # a notebook's cells get the URIs its results are published on
        touched = sorted(before | self.results[owner].files())
        for p in touched:
            self.publish(p)
        if not final:
            return
        self.ls.refresh_code_lens()
        self._to_warm.update(touched)
        self.when_quiet(self._warm)
        self.ls.verification.start(owner, list(result.diagnostics), texts, doc)  # after publishing: never delays it

    def current_text(self, path: str) -> tuple[str | None, int | None]:
        """The editor's text and version of a place (a file, a notebook's cell) if it is open, else (None, None)."""
        uri = self.ls.open_docs.get(path)
        if uri is None:
            return None, None
        try:
            doc = self.ls.workspace.text_documents.get(unquote(uri))
        except RuntimeError:
            return None, None
        if doc is None:
            return None, None
        return doc.source, doc.version

    def analysed_text(self, owner: str, path: str) -> str | None:
        """The text of a place that `owner`'s last run placed its findings on (None: not one of them)."""
        res = self.results.get(owner)
        return res.texts.get(path) if res is not None else None

    def line_map(self, owner: str, path: str) -> LineMap | None:
        """From the text `owner`'s run analysed to the open document (None: not open)."""
        text, _ = self.current_text(path)
        if text is None:
            return None
        res = self.results.get(owner)
        analysed = (res.texts.get(path) if res else None) or ""
        key = (text_hash(analysed), text_hash(text))  # the texts themselves: versions repeat across runs
        cached = self._maps.get(key)
        if cached is None:
            cached = line_map(analysed, text)
            if len(self._maps) > 256:
                self._maps.clear()
            self._maps[key] = cached
        return cached

    async def prepare(self, path: str) -> None:
        """Compute the line maps `path`'s diagnostics need in a thread (a long file's diff must not
        stall the event loop); diagnostics_in then finds them cached."""
        text, _ = self.current_text(path)
        if text is None:
            return
        todo = {}
        for res in list(self.results.values()):
            analysed = res.texts.get(path)
            if analysed is not None and any(place(d.file, d.cell) == path for d in res.diagnostics):
                key = (text_hash(analysed), text_hash(text))
                if key not in self._maps:
                    todo[key] = analysed
        if todo:
            maps = await asyncio.to_thread(lambda: {k: line_map(a, text) for k, a in todo.items()})
            self._maps.update(maps)

    def diagnostics_in(self, path: str) -> list[tuple[Diagnostic, str | None, str]]:
        """(diagnostic at its current range, analysed-text hash, owner) for one place."""
        out: list[tuple[Diagnostic, str | None, str]] = []
        seen: set[tuple[Any, ...]] = set()
        for owner, res in self.results.items():
            mine = [d for d in res.diagnostics if place(d.file, d.cell) == path]
            if not mine:
                continue
            analysed = res.texts.get(path)
            # no analysed text: the file could not be read at all; its diagnostics stand where they are
            lm = self.line_map(owner, path) if analysed is not None else None
            sha = text_hash(analysed) if analysed is not None else None
            for d in mine:
                rng = lm.range(d.range) if lm is not None else d.range
                if rng is None:
                    continue  # its line was edited since the run: dropped until the next one
                key = (rng, d.code, d.message)
                if key in seen:
                    continue
                seen.add(key)
                moved = d if rng == d.range else replace(d, range=rng)
                out.append((moved, sha, owner))
        return out

    def publish(self, path: str) -> None:
        """Send a place's diagnostics from every owner's result (an empty list clears them); a
        notebook cell the editor does not show is skipped."""
        uri = self.ls.open_docs.get(path) or (uri_of(path) if split_place(path)[1] is None else None)
        if uri is None:
            return
        items = self.diagnostics_in(path)
        _, version = self.current_text(path)
        diags = [to_lsp(d, text_sha=sha, owner=owner, partial=not self.results[owner].final) for d, sha, owner in items]
        if not diags and path not in self.published:
            return
        self.ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diags, version=version))
        if diags:
            self.published.add(path)
        else:
            self.published.discard(path)

    def republish(self, file: str) -> None:
        """Show the results on a file (or every cell of a notebook) again: it was just opened."""
        places = {p for res in self.results.values() for p in res.files()} | self.published
        for p in sorted(places):
            if split_place(p)[0] == file:
                self.publish(p)
