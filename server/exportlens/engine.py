"""The engine: one call from a document to its diagnostics, shared by the CLI, the server and pytest.

`Engine.check(document)` is the one entry, for a .py file and a notebook alike: it plans the
document's runnable text (reads and syntax-checks it, finds its targets statically; no user code
runs for that), runs the targets in the warm worker from memory, folds the worker's events into
placed diagnostics (`_Fold`), and hands the result back in the document's own positions.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import functools
import itertools
import os
import shutil
import sys
import time
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from exportlens import cache as results_cache
from exportlens import codes, deprecated, document, findings, project, suppress, targets
from exportlens.document import Document
from exportlens.findings import placement
from exportlens.model import INFORMATION, Diagnostic, Range, Report, TargetResult
from exportlens.options import COMPILE_BACKENDS, DEFAULT_TIMEOUT, DRAFT_MODES
from exportlens.protocol import DepsEvent, DoneEvent, FindingEvent, JobEvent, JobSpec, PhaseEvent, TargetEvent
from exportlens.source import Source, SourceError, read_source, refuse_binary
from exportlens.targets import FileTargets
from exportlens.worker_client import BACKGROUND, WorkerClient, WorkerUnavailable, default_jobs, worker_environment


@dataclass(frozen=True)
class EngineSettings:
    """What one engine runs with; frozen: other settings are another engine (`Engine.with_settings`)."""

    python: str | None = None  # the interpreter with the user's torch; None = this one
    timeout: float = DEFAULT_TIMEOUT  # seconds per job
    memory_mb: int = 8192  # address space a job may add; 0 = unlimited
    extra_targets: list[str] = field(default_factory=list)  # "path.py:factory", relative to the root
    warmup: bool = True
    jobs: int = field(default_factory=default_jobs)  # jobs at once (each is a process tree), queued FIFO
    compile_backend: str = COMPILE_BACKENDS[0]  # graph breaks are the same with each; the others for the ablation
    timeout_knob: str = "the timeout"  # how the front end in use sets `timeout` (`--timeout`, a setting)
    trace_dir: str | None = None  # where each run's structured trace (TORCH_TRACE format, for tlparse) is kept
    draft: str | None = None  # when draft export runs: "auto" (plain export failed, or custom ops), "always"; None: not given
    cache_dir: str | None = None  # the results cache's base folder (cache.py); None: every run runs (the front ends turn it on)
    reuse: bool = True  # False: every job runs, its result still kept (the CLI's --trace-dir asks for the traces of a run)

    def draft_for(self, cfg: project.ProjectConfig) -> str:
        """When draft export runs for a document of this project: the front end's choice, else the
        document's own `[tool.exportlens] draft-export` (a folder may ask for it), else "auto"."""
        return self.draft or cfg.draft_export or DRAFT_MODES[0]

    @classmethod
    def resolved(
        cls,
        cfg: project.ProjectConfig,
        *,
        python: str | None = None,
        timeout: float | None = None,
        compile_backend: str | None = None,
        draft: str | None = None,
        cache: bool | None = None,
        cache_dir: str | None = None,
        default_timeout: float = DEFAULT_TIMEOUT,
        knob: str = "the timeout",
        **fixed: Any,
    ) -> EngineSettings:
        """The one precedence of every front end (CLI, language server, pytest plugin): what the user
        gave it (a flag, an editor setting; None: not given), then `[tool.exportlens]` of
        pyproject.toml, then the defaults. `knob` names how the front end sets the timeout; `fixed`
        are settings only the front end has (jobs, memory, trace folder). The results cache is on
        unless the front end says no (`--no-cache`) or EXPORTLENS_NO_CACHE does (a folder given
        to the front end turns it on), in the front end's folder, else pyproject's `cache-dir`,
        else the user's cache folder."""
        from_pyproject = timeout is None and cfg.timeout is not None
        use_cache = cache if cache is not None else (cache_dir is not None or not results_cache.off_by_env())
        return cls(
            python=python or cfg.python,
            timeout=timeout if timeout is not None else (cfg.timeout or default_timeout),
            timeout_knob=f"timeout under [tool.exportlens] in pyproject.toml (or {knob})" if from_pyproject else knob,
            compile_backend=compile_backend or cfg.compile_backend or cls.compile_backend,
            draft=draft,  # pyproject's draft-export is the document's own: `draft_for`
            cache_dir=(cache_dir or cfg.cache_dir or results_cache.default_base()) if use_cache else None,
            **fixed,
        )


@dataclass
class FileResult:
    path: str
    targets: list[TargetResult] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)  # in the document's positions (a notebook's: per cell)
    ran: bool = False  # whether user code was run for it
    op_profiles: list[dict[str, Any]] = field(default_factory=list)  # files written by save_op_profiles
    ignored: list[Diagnostic] = field(default_factory=list)  # silenced by `# exportlens: ignore` comments
    trace_files: list[str] = field(default_factory=list)  # torch's structured traces of this run
    texts: dict[str, str] = field(default_factory=dict)  # `model.place` → the text its diagnostics were placed on
    # target name → what fix verification compares: "outputs" (fingerprint) or "outputs_error",
    # "plain_export" ("ok" or what plain torch.export.export raised), and which requested dimensions
    # the program kept dynamic ("requested", "dynamic": spellings, `x.shape[1]`)
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    document: Document | None = None  # what ran: fixes computed later are placed by its mapper
    cached: dict[str, Any] | None = None  # reused from the results cache: the run it came from (`cache.Entry.run`)
    depends: list[str] = field(default_factory=list)  # the project's files the run imported or read (worker/dependencies.py)
    torch: str | None = None  # the torch that ran it (known without a worker for a reused result)


@dataclass(frozen=True)
class Plan:
    """The static part of a check: what the file is and what would run. No user code ran for it.

    `targets` is None when the file cannot be analysed at all (unreadable, a syntax error);
    `diagnostics` are what planning found (the syntax error, a bad project configuration).
    """

    path: str
    root: str  # the project root: sys.path, cwd, and what counts as the user's code
    source: Source | None
    targets: FileTargets | None
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def target_names(self) -> list[str]:
        return [t.name for t in self.targets.targets] if self.targets is not None else []


class SourceCache:
    """Files read for placement, once per check (a helper module may be hit many times)."""

    def __init__(self, overrides: dict[str, str] | None = None) -> None:
        self._cache: dict[str, Source | None] = {}
        self.overrides = overrides or {}

    def __call__(self, path: str) -> Source | None:
        path = os.path.abspath(path)
        if path not in self._cache:
            if path in self.overrides:
                self._cache[path] = Source(path, self.overrides[path])
            else:
                try:
                    self._cache[path] = read_source(path)
                except SourceError:
                    self._cache[path] = None
        return self._cache[path]

    def texts(self) -> dict[str, str]:
        return {path: src.text for path, src in self._cache.items() if src is not None}


_LAST: contextvars.ContextVar[results_cache.Entry | None] = contextvars.ContextVar("exportlens_last_result", default=None)
"""Set by `Engine.last_result`: the entry its check replays, whatever its key and dependencies."""

BESIDE_AFTER = 0.5  # seconds of draft export after which the next run of the file forks it beside plain export


def _merge(diags: list[Diagnostic]) -> list[Diagnostic]:
    """One finding per user line, code and site; occurrences add up."""
    merged: dict[tuple[str, int, str, str, str, int, str], Diagnostic] = {}
    for d in diags:
        distinct = d.message if codes.record(d.code).one_per_message else ""
        key = (d.file, d.range.start.line, d.code, distinct, *_site(d))  # two library lines (or paths, or warnings) stay two
        first = merged.get(key)
        if first is None:
            merged[key] = d
            continue
        if d.target and d.target not in first.target.split(", "):
            first.target = f"{first.target}, {d.target}"
        first.data["occurrences"] = int(first.data.get("occurrences", 1)) + int(d.data.get("occurrences", 1))
        for rel in d.related:
            if rel not in first.related:
                first.related.append(rel)
    return sorted(merged.values(), key=lambda d: (d.file, d.range.start, d.code, *_site(d)))


def _site(d: Diagnostic) -> tuple[str, int, str]:
    """What tells two findings on one line apart: the library line, then the library path to it (two
    draft-export guards at one library line reached two ways are two failures in torch's report) or the
    finding's own `site` (a tracer warning's place and text, a recompiled function)."""
    inside = d.data.get("library_frame") or {}
    path = "|".join(f"{f.get('file')}:{f.get('line')}" for f in d.data.get("library_chain") or [] if not f.get("project"))
    return str(inside.get("file") or ""), int(inside.get("line") or 0), str(d.data.get("site") or path)


class Engine:
    def __init__(
        self,
        settings: EngineSettings | None = None,
        *,
        log: Callable[[str], None] | None = None,
        worker: WorkerClient | None = None,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self.settings = settings or EngineSettings()
        self.worker = worker or WorkerClient(self.settings.python, warmup=self.settings.warmup, log=log, max_jobs=self.settings.jobs)
        self._needed_draft: set[str] = set()  # files whose last run needed a draft export that took long (worker/beside.py)
        self._results_cache: results_cache.ResultsCache | None = None
        # what the user must hear once (a results cache folder that cannot be written; told from a thread): stderr, or the editor's log
        self.warn: Callable[[str], None] = warn or (lambda message: print(message, file=sys.stderr))

    def with_settings(self, settings: EngineSettings) -> Engine:
        """An engine for other settings of the same interpreter: it shares this one's worker (a cold
        worker is seconds of importing torch) and what it learnt of the files' draft exports; this
        one keeps its settings for the runs in flight on it."""
        if settings.python != self.settings.python:
            raise ValueError("another interpreter needs another worker: build a new Engine")
        new = Engine(settings, worker=self.worker, warn=self.warn)
        new._needed_draft = self._needed_draft
        new._results_cache = self._results_cache  # what it said once stays said
        self.worker.slots.size = max(1, settings.jobs)
        return new

    def draft_beside_for(self, path: str) -> bool:
        """Whether a run of `path` now starts draft export in a fork beside plain export (worker/beside.py):
        where its last run needed a draft export of BESIDE_AFTER seconds or more (likely again, as the
        user edits a failing model) and no other job runs (the fork takes the other core)."""
        return os.path.abspath(path) in self._needed_draft and self.worker.slots.used == 0

    @property
    def torch_version(self) -> str:
        return str(self.worker.info.get("torch", "unknown"))

    @property
    def unsupported(self) -> str | None:
        """The worker's message when its torch has no draft_export (export targets are skipped), else None."""
        message = self.worker.info.get("unsupported")
        return str(message) if message else None

    async def start(self) -> dict[str, Any]:
        return await self.worker.start()

    async def close(self) -> None:
        await self.worker.close()

    def plan(self, doc: Document | str, text: str | None = None) -> Plan:
        """Static part of a check (`doc`, or the file at a path with `text`): read, syntax-check and
        find targets, in the runnable text's positions. Runs no user code.

        Never raises: a file that cannot be planned (nested too deeply for the compiler, too big...)
        is its own diagnostic, and the rest of a folder is still checked.
        """
        if isinstance(doc, str):
            doc = document.load(doc, text)
        if doc.unreadable is not None:
            return Plan(doc.path, _root_of(doc.path), None, None, [codes.new("syntax-error", doc.path, Range.of(0, 0, 0, 1), doc.unreadable)])
        path = doc.script
        try:
            return self._plan(path, doc.text)
        except (Exception, RecursionError) as exc:
            why = (
                "it is nested too deeply for Python's compiler"
                if isinstance(exc, RecursionError)
                else "Python ran out of memory compiling it"
                if isinstance(exc, MemoryError)
                else "ExportLens failed to read it"
            )
            message = f"The file cannot be compiled: {why} ({type(exc).__name__}: {exc})".replace(" ()", "")
            return Plan(path, _root_of(path), None, None, [codes.new("syntax-error", path, Range.of(0, 0, 0, 1), message)])

    def _plan(self, path: str, text: str | None) -> Plan:
        root = project.find_root(path)
        cfg = project.load_config(root)
        try:
            if text is not None:
                refuse_binary(text)  # an editor's buffer of a binary file
            src = Source(path, text) if text is not None else read_source(path)
        except SourceError as exc:
            rng = Range.of(exc.line - 1, 0, exc.line - 1, 1)
            return Plan(path, root, None, None, [codes.new("syntax-error", path, rng, str(exc))])
        try:
            compile(src.text, path, "exec", dont_inherit=True)
        except SyntaxError as exc:
            return Plan(path, root, src, None, [syntax_diagnostic(src, exc)])
        except ValueError as exc:  # e.g. NUL bytes
            return Plan(path, root, src, None, [codes.new("syntax-error", path, Range.of(0, 0, 0, 1), f"The file cannot be compiled: {exc}")])
        tree = src.tree
        assert tree is not None
        factories = project.factories_by_file(cfg, self.settings.extra_targets).get(path, [])
        found = targets.discover(tree, path, factories)
        # information, not an error: nothing of the project failed, a declared target outside it is
        # skipped (ExportLens analyses only the project's files) and the user hears why
        notice = [codes.new("target-error", path, Range.of(0, 0, 0, 0), cfg.notice, severity=INFORMATION)] if cfg.notice else []
        return Plan(path, root, src, found, config_diagnostics(cfg) + notice + deprecated.check(src))

    async def check(
        self,
        doc: Document,
        *,
        explicit: bool = True,
        on_target: Callable[[TargetResult], None] | None = None,
        on_phase: Callable[[str, str], None] | None = None,
        on_early: Callable[[list[Diagnostic]], None] | None = None,
        save_op_profiles: bool = False,
        overrides: dict[str, str] | None = None,
        outputs: bool = False,
        timeout: float | None = None,
        draft: str | None = None,
    ) -> FileResult:
        """Diagnostics for one document, in its own positions. `explicit`: the user asked for it (not a folder walk).

        The document's text runs as planned, from memory (nothing is written). `on_phase(phase,
        target)` is told what the job is doing (importing, building the model, exporting, draft
        export). `on_early(diagnostics)` gets the document's findings so far, in its positions, the
        moment a target's plain export fails (before draft export runs to find the rest).
        `overrides` ({path: text}) are other files run and placed instead of their disk contents.
        `outputs` collects what fix verification compares besides plain export's verdict (`FileResult.facts`).
        `draft` ("always") runs draft export for this check even where plain export passes (the editor's
        "Run draft export" command), whatever the settings say.
        """
        overrides = {os.path.abspath(p): t for p, t in (overrides or {}).items()}
        # off the event loop: parsing a 20,000-line file must not stall an editor's requests
        plan = await asyncio.to_thread(self.plan, doc)
        src, found, path = plan.source, plan.targets, plan.path
        result = FileResult(path)  # in the runnable text's positions until `_shown`
        result.diagnostics.extend(plan.diagnostics)
        if src is None or found is None:
            return _shown(result, doc)
        result.texts[path] = src.text
        if not found.targets:
            if explicit:
                result.diagnostics.append(codes.new("no-target", path, Range.of(0, 0, 0, 0), targets.NO_TARGET_HELP))
            return _shown(result, doc)
        ran = doc.upto(src.text, max(t.line for t in found.targets))
        assert ran.text is not None
        mapper = ran.mapper
        cache = SourceCache({**overrides, path: ran.text})  # read once: plan already did
        result.ran = True
        job = found.job(path, plan.root)
        job["source"] = ran.text  # run what was planned, not a later disk state
        others = {p: t for p, t in overrides.items() if p != path}
        if others:
            job["overrides"] = others
        if outputs:
            job["outputs"] = True
        cfg = project.load_config(plan.root)
        if (draft or self.settings.draft_for(cfg)) == "always":
            job["draft"] = "always"
        job["compile_backend"] = self.settings.compile_backend
        job["save_op_profiles"] = save_op_profiles
        exports = any(t.kind == "export" for t in found.targets)
        texts = {**overrides, path: ran.text}
        kept = await asyncio.to_thread(self._kept, job, plan.root, texts, exports) if not save_op_profiles else None  # it writes files: always runs
        reused = kept[1] if kept else None
        run_dir = _trace_run_dir(self.settings.trace_dir, path) if reused is None else None
        if run_dir:
            job["trace_dir"] = run_dir
        foreground = BACKGROUND.get() is None
        if foreground and self.draft_beside_for(path):
            job["draft_beside"] = True

        def early(diags: list[Diagnostic]) -> None:
            assert on_early is not None
            fresh = _merge([dataclasses.replace(d, data=dict(d.data), related=list(d.related)) for d in diags])  # _merge adds up in place
            kept = suppress.apply(fresh, {f: (src.text if (src := cache(f)) else None) for f in {d.file for d in fresh}}).kept
            on_early([mapper.diagnostic(d) for d in plan.diagnostics + kept if _selected(d.code, cfg)])

        fold = _Fold(
            plan,
            cache,
            result,
            self.settings.timeout_knob,
            on_target=(lambda t: on_target(mapper.target(t))) if on_target else None,
            on_phase=(lambda phase, target: on_phase(phase, mapper.text(target))) if on_phase and reused is None else None,
            on_early=early if on_early and reused is None else None,  # a reused result is whole at once
        )
        events: list[JobEvent] = []
        started = time.perf_counter()
        try:
            drafting: float | None = None  # when the job's draft export began
            drafted = 0.0  # seconds its draft exports took
            limit = timeout or self.settings.timeout
            stream = results_cache.replay(reused) if reused else self.worker.run(job, timeout=limit, memory_mb=self.settings.memory_mb)
            async for event in stream:
                if event["event"] == "phase":
                    drafting = time.perf_counter() if event.get("phase") == "draft export" else None
                elif event["event"] == "target" and drafting is not None:
                    drafted, drafting = drafted + time.perf_counter() - drafting, None
                events.append(event)
                fold.take(event)
            if foreground and reused is None:  # a fork costs some 60 ms: worth it beside a draft export that takes long
                (self._needed_draft.add if drafted >= BESIDE_AFTER else self._needed_draft.discard)(path)
        except WorkerUnavailable as exc:
            fold.unavailable(exc)
        if run_dir:
            _attach_traces(result, fold.raw, run_dir)
        elif reused is not None:
            _attach_traces(result, fold.raw, None, [f for f in reused.trace_files if os.path.isfile(f)])
        result.diagnostics.extend(_merge(fold.raw))
        _suppress(result, cache, cfg)
        for file in {d.file for d in result.diagnostics} | {path}:
            cache(file)
        result.texts = cache.texts()
        last = not overrides and not doc.fixed  # a fix's verification is not the document's last run
        if kept is not None and (store := self.result_store) is not None and _LAST.get() is None:
            if reused is None:  # kept only if the job finished (cache.cacheable)
                seconds = time.perf_counter() - started
                draft = job.get("draft", "auto")
                await asyncio.to_thread(
                    store.store, plan.root, kept[0], path, events, seconds=seconds, trace_files=result.trace_files, source=ran.text, draft=draft, last=last
                )
            elif last:
                await asyncio.to_thread(store.remember_last, plan.root, path, kept[0])
        shown = _with_deps(_shown(result, ran), reused.deps if reused else _deps_of(events), plan.root, reused)
        if shown.cached is not None and kept is not None and not kept[2]:
            shown.cached["holds"] = False  # the last run, shown on open before the run that replaces it
        return shown

    @property
    def result_store(self) -> results_cache.ResultsCache | None:
        """The results cache of the current settings (None: off); `warn` hears once that its folder cannot be written."""
        base = self.settings.cache_dir
        if base is None:
            return None
        if self._results_cache is None or self._results_cache.base != os.path.abspath(os.path.expanduser(base)):
            self._results_cache = results_cache.ResultsCache(base, warn=self.warn)
        return self._results_cache

    def _kept(self, job: JobSpec, root: str, texts: dict[str, str], exports: bool) -> tuple[str, results_cache.Entry | None, bool] | None:
        """The job's cache key, the entry to reuse (None: run it) and whether that entry holds now
        (the last run `last_result` shows may not); None when the cache is off."""
        rc = self.result_store
        if rc is None:
            return None
        env = worker_environment()
        key = results_cache.key(job, python=self.settings.python, memory_mb=self.settings.memory_mb, env=env, exports=exports)
        holding = rc.lookup(root, key, texts, env, draft=job.get("draft", "auto")) if self.settings.reuse else None
        last = _LAST.get()
        if last is not None and holding is None:
            return key, last, False
        return key, holding, holding is not None

    async def last_result(self, doc: Document) -> FileResult | None:
        """The document's last stored result, whether or not it still holds, without running anything:
        the editor shows it at once on open (`cached` says when it ran, and `"holds": False` where
        something it depends on changed since; its `texts` are the ones it ran, so the editor moves
        its ranges onto the current text). None: none is stored, or a notebook whose code changed since."""
        rc = self.result_store
        if rc is None or doc.unreadable is not None:
            return None
        root = _root_of(doc.script)
        entry = await asyncio.to_thread(rc.last, root, doc.script)
        if entry is None or entry.source is None:
            return None
        edited = False
        if doc.script == doc.path:
            now = doc.text if doc.text is not None else await asyncio.to_thread(_disk_text, doc.path)
            edited = now != entry.source
            doc = document.load(doc.path, entry.source)  # the text it ran
        elif doc.text is None or doc.upto(doc.text, len(doc.text.splitlines()) + 1).text != entry.source:
            return None
        token = _LAST.set(entry)
        try:
            result = await self.check(doc, explicit=False)
        finally:
            _LAST.reset(token)
        if result.cached is not None and edited:
            result.cached["holds"] = False  # the file's own text changed since
        return result

    async def check_file(self, path: str, *, text: str | None = None, overrides: dict[str, str] | None = None, **options: Any) -> FileResult:
        """`check` of the file at `path` (`text`: the editor's; else an override of it, else the disk's)."""
        path = os.path.abspath(path)
        if text is None:
            text = {os.path.abspath(p): t for p, t in (overrides or {}).items()}.get(path)
        return await self.check(document.load(path, text), overrides=overrides, **options)

    async def check_paths(
        self,
        paths: list[str],
        *,
        on_file: Callable[[FileResult], None] | None = None,
        on_phase: Callable[[str, str, str], None] | None = None,
        on_early: Callable[[str, list[Diagnostic]], None] | None = None,
        save_op_profiles: bool = False,
        outputs: bool = False,
        keep: Callable[[str], bool] | None = None,
    ) -> Report:
        """Every Python file under `paths`; files named directly always get an answer.

        `on_phase(path, phase, target)` is told what each file's job is doing, `on_early(path, findings)`
        when a target's plain export failed (draft export then runs); `on_file` when it is done.
        `outputs`: what fix verification compares (see `check`). `keep`: only the files it says yes
        to (a shard, `shards.py`).
        """
        files: list[tuple[str, bool]] = []
        for p in paths:
            explicit = os.path.isfile(p)
            cfg = project.load_config(project.find_root(p))
            files.extend((f, explicit) for f in project.python_files(p, cfg.exclude, cfg.root, notebooks=True) if keep is None or keep(f))
        report = Report(torch_version="unknown")
        gate = asyncio.Semaphore(max(1, self.settings.jobs))

        async def one(file: str, explicit: bool) -> FileResult:
            async with gate:
                tell = functools.partial(on_phase, file) if on_phase else None
                failed = functools.partial(on_early, file) if on_early else None
                try:
                    res = await self.check(
                        document.load(file), explicit=explicit, on_phase=tell, on_early=failed, save_op_profiles=save_op_profiles, outputs=outputs
                    )
                except Exception as exc:  # a bug of ours on one file must not lose the others' results
                    res = FileResult(
                        os.path.abspath(file),
                        diagnostics=[
                            codes.new(
                                "target-error",
                                os.path.abspath(file),
                                Range.of(0, 0, 0, 1),
                                f"ExportLens failed on this file (an internal error, please report it): {type(exc).__name__}: {exc}",
                            )
                        ],
                    )
            if on_file:
                on_file(res)
            return res

        tasks = [asyncio.ensure_future(one(f, e)) for f, e in files]
        try:
            results = await asyncio.gather(*tasks)
        finally:  # nothing of this check outlives it (no job may start after the engine is closed)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        for res in results:  # results keep the files' order
            report.targets.extend(res.targets)
            report.diagnostics.extend(res.diagnostics)
            report.ignored.extend(res.ignored)
        configs = {(d.file, d.range, d.message): d for d in report.diagnostics if d.code == "config-error"}  # once, not per file
        kept = [d for d in report.diagnostics if d.code != "config-error"] + list(configs.values())
        report.diagnostics = sorted(kept, key=lambda d: (d.file, d.range.start, d.code))  # a helper's findings by its own name
        if self.worker.info:
            report.torch_version = self.torch_version
            report.unsupported = self.unsupported
        else:  # every result reused: the torch they ran with (no worker was started)
            report.torch_version = next((r.torch for r in results if r.torch), report.torch_version)
        return report


# A streamed `finding` carries the keys of its target's final event (`protocol.FindingEvent`, the one
# place they are declared): lists of findings add up, anything else is the latest.
_FINDING_HEADER = {"event", "id", "name", "file", "line", "kind"}
STREAMED: dict[str, bool] = {key: typing.get_origin(hint) is list for key, hint in typing.get_type_hints(FindingEvent).items() if key not in _FINDING_HEADER}


@dataclass
class _Pending:
    name: str
    file: str | None
    line: int
    kind: str


class _Fold:
    """One job's events folded into a result, one method per event kind (`take` dispatches).

    Streamed findings are kept per target until its complete `target` event supersedes them, so a
    job stopped by its deadline or a crash still reports what torch recorded; a job that finished
    without any target reporting is said, never shown as "0 problems in 0 targets".
    """

    def __init__(
        self,
        plan: Plan,
        cache: SourceCache,
        result: FileResult,
        timeout_knob: str,
        *,
        on_target: Callable[[TargetResult], None] | None,
        on_phase: Callable[[str, str], None] | None,
        on_early: Callable[[list[Diagnostic]], None] | None = None,
    ) -> None:
        assert plan.targets is not None and plan.source is not None
        self.found, self.src, self.path, self.root = plan.targets, plan.source, plan.path, plan.root
        self.cache, self.result, self.timeout_knob = cache, result, timeout_knob
        self.on_target, self.on_phase, self.on_early = on_target, on_phase, on_early
        self.raw: list[Diagnostic] = []
        self.seen: set[str] = set()
        self.partial: dict[str, TargetEvent] = {}  # target → what torch recorded so far (streamed findings)
        self.started = time.perf_counter()

    def context(self, name: str, file: str, line: int) -> findings.Context:
        """A target's context; a module's or factory's knows where it builds its model (`targets.Declared`)."""
        static = next((t for t in self.found.targets if t.name == name and t.declared is not None), None)
        d = static.declared if static is not None and os.path.abspath(file) == os.path.abspath(self.path) else None
        declared = (
            placement.Frame(file, d.line, static.name.rsplit(":", 1)[-1] if static.how == "factory" else "<module>", d.col, d.end_line, d.end_col)
            if d and static
            else None
        )
        return findings.Context(self.root, self.cache, name, file, line, declared)

    def take(self, event: JobEvent) -> None:
        if event["event"] == "finding":
            self.finding(event)
        elif event["event"] == "phase":
            self.phase(event)
        elif event["event"] == "target":
            self.target(event)
        elif event["event"] == "done":
            self.done(event)

    def finding(self, event: FindingEvent) -> None:
        """Collect one streamed finding into a target event of the same shape as the final one."""
        name = str(event.get("name"))
        if name in self.partial:  # the last target to stream is the one most likely running when the job stopped
            self.partial[name] = self.partial.pop(name)
        target = self.partial.setdefault(
            name,
            {
                "event": "target",
                "name": name,
                "file": event["file"],
                "line": int(event.get("line") or 1),
                "kind": event.get("kind", "export"),
                "seconds": 0.0,
                "partial": True,
            },
        )
        stored = cast("dict[str, Any]", target)
        for key, adds_up in STREAMED.items():
            if key in event:
                value = cast("dict[str, Any]", event)[key]
                if adds_up:
                    stored.setdefault(key, []).extend(value)
                else:
                    stored[key] = value
        if "plain" in event and self.on_early is not None:  # the user's export failed: say so before draft export runs
            self.on_early(self.so_far())

    def so_far(self) -> list[Diagnostic]:
        """The findings of the finished targets and of what the running ones streamed."""
        out = list(self.raw)
        for name, ev in self.partial.items():
            out += findings.from_event(self.context(name, ev["file"], int(ev["line"])), ev)
        return out

    def phase(self, event: PhaseEvent) -> None:
        if self.on_phase:
            self.on_phase(str(event.get("phase") or ""), str(event.get("target") or ""))

    def target(self, event: TargetEvent) -> None:
        self.partial.pop(str(event.get("name")), None)  # the complete report supersedes the stream
        ctx = self.context(event["name"], event["file"], int(event["line"]))
        got = findings.from_event(ctx, event)
        self.raw.extend(got)
        status = "error" if "exception" in event or "target_error" in event else ("problems" if any(d.problem for d in got) else "ok")
        if event.get("unsupported"):
            status = "unsupported"
        tr = TargetResult(event["name"], event["file"], int(event["line"]), event.get("kind", "export"), status, float(event.get("seconds", 0.0)))
        self._add_target(tr)
        self.seen.add(tr.name)
        facts: dict[str, Any] = {k: event[k] for k in ("outputs", "outputs_error", "plain_export") if k in event}
        if (plain := event.get("plain")) is not None:
            facts["requested"] = [d["spelled"] for d in plain.get("requested") or []]
            facts["dynamic"] = plain.get("dynamic")
        if isinstance(probe := event.get("dynamic_probe"), dict):  # what the could-be-dynamic probe cost: the run's, not the finding's
            facts["probe"] = {"seconds": float(probe.get("seconds") or 0.0), "exports": int(probe.get("exports") or 0), "beside": bool(probe.get("beside"))}
        if facts:
            self.result.facts[tr.name] = facts
        if saved := event.get("op_profiles"):
            self.result.op_profiles.append({"target": tr.name, **saved})

    def done(self, event: DoneEvent) -> None:
        if event["status"] == "ok" and not self.seen:
            # the job finished yet no target reported: never a silent "0 problems in 0 targets"
            t = self.found.targets[0]
            names = ", ".join(x.name for x in self.found.targets[:3]) + (" …" if len(self.found.targets) > 3 else "")
            self.raw.append(
                codes.new(
                    "target-error",
                    self.path,
                    placement.statement_range(self.src, t.line),
                    f"No target of this file ran ({names}): the file finished without reaching "
                    "them (an early return or exit, a branch not taken, or `if __name__ == "
                    '"__main__"` around them when they are not script calls).',
                    t.name,
                )
            )
            self.result.targets.append(TargetResult(t.name, self.path, t.line, t.kind, "error", time.perf_counter() - self.started))
        elif event["status"] in ("crashed", "timeout"):
            kept = 0
            for name, ev in self.partial.items():  # what torch recorded before the deadline still counts
                got = findings.from_event(self.context(name, ev["file"], int(ev["line"])), ev)
                kept += len(got)
                self.raw.extend(got)
            stopped = [t for t in self._stopped() if t.name not in self.seen] or self._stopped(streamed=False)
            halted = stopped[0]
            ctx = self.context(halted.name, halted.file or self.path, halted.line)
            self.raw.append(
                findings.crash_diagnostic(ctx, event["status"], event.get("detail", ""), event.get("stderr", ""), timeout_knob=self.timeout_knob, found=kept)
            )
            self._add_target(TargetResult(halted.name, halted.file or self.path, halted.line, halted.kind, event["status"], time.perf_counter() - self.started))

    def unavailable(self, exc: WorkerUnavailable) -> None:
        """The worker could not start: the first target says so."""
        self.result.ran = False
        t = self.found.targets[0]
        self.raw.append(
            codes.new("worker-crashed", self.path, placement.statement_range(self.src, t.line), f"ExportLens could not start its worker: {exc}", t.name)
        )
        self.result.targets.append(TargetResult(t.name, self.path, t.line, t.kind, "crashed", 0.0))

    def _add_target(self, tr: TargetResult) -> None:
        self.result.targets.append(tr)
        if self.on_target:
            self.on_target(tr)

    def _stopped(self, *, streamed: bool = True) -> list[_Pending]:
        """The targets a stopped job may have been running: those with streamed findings first, latest first."""
        found = [_Pending(name, ev.get("file"), int(ev.get("line") or 1), str(ev.get("kind") or "export")) for name, ev in reversed(self.partial.items())]
        return (found if streamed else []) + [_Pending(t.name, None, t.line, t.kind) for t in self.found.targets]


def _shown(result: FileResult, doc: Document) -> FileResult:
    """A run's result (in the runnable text's positions) in the document's own."""
    m = doc.mapper
    return FileResult(
        doc.path,
        [m.target(t) for t in result.targets],
        [m.diagnostic(d) for d in result.diagnostics],
        result.ran,
        result.op_profiles,
        [m.diagnostic(d) for d in result.ignored],
        result.trace_files,
        m.texts(result.texts),
        {m.text(name): facts for name, facts in result.facts.items()},
        doc,
        result.cached,
        result.depends,
        result.torch,
    )


def _deps_of(events: list[JobEvent]) -> DepsEvent | None:
    """The job's record of what it depended on (worker/dependencies.py), its last event before `done`."""
    return next((cast(DepsEvent, e) for e in reversed(events) if e["event"] == "deps"), None)


def _with_deps(result: FileResult, deps: DepsEvent | None, root: str, reused: results_cache.Entry | None) -> FileResult:
    """The result with what its run recorded: the project's files it imported or read (a save of one
    runs it again, with the cache on or off) and its torch; when it was reused rather than run, the run
    it came from (on the result and on each of its targets)."""
    if deps is not None:
        result.depends = results_cache.project_files(deps, root)
        result.torch = deps.get("torch")
    if reused is not None:
        result.cached = reused.run
        for t in result.targets:
            t.cached = reused.run
    return result


def _disk_text(path: str) -> str | None:
    try:
        return read_source(path).text
    except SourceError:
        return None


def _root_of(path: str) -> str:
    try:
        return project.find_root(path)
    except Exception:
        return os.path.dirname(path)


_TRACE_RUNS = itertools.count(1)
KEEP_TRACE_RUNS = 100  # a cache folder: older runs' traces are removed


def _trace_run_dir(trace_dir: str | None, path: str) -> str | None:
    """A fresh folder for one run's structured trace under `trace_dir` (the oldest runs pruned)."""
    if not trace_dir:
        return None
    base = os.path.abspath(trace_dir)
    stem = os.path.splitext(os.path.basename(path))[0].lstrip(".") or "run"
    run_dir = os.path.join(base, f"{time.strftime('%Y%m%d-%H%M%S')}-{stem}-{os.getpid()}-{next(_TRACE_RUNS)}")
    try:
        os.makedirs(run_dir)
        runs = sorted((e for e in os.scandir(base) if e.is_dir()), key=lambda e: e.stat().st_mtime)
        for old in runs[:-KEEP_TRACE_RUNS]:
            shutil.rmtree(old.path, ignore_errors=True)
    except OSError:
        return None  # no trace rather than no check
    return run_dir


def _attach_traces(result: FileResult, diags: list[Diagnostic], run_dir: str | None, kept: list[str] | None = None) -> None:
    """The run's trace files (those of `run_dir`, or the `kept` ones of the run a reused result came
    from), on the result and in every diagnostic's data (the hover links it)."""
    result.trace_files = kept if kept is not None else sorted(os.path.join(run_dir, f) for f in os.listdir(run_dir) if f.endswith(".log")) if run_dir else []
    if not result.trace_files:
        if run_dir:
            shutil.rmtree(run_dir, ignore_errors=True)
        return
    for d in diags:
        d.data.setdefault("trace_file", result.trace_files[0])


def _suppress(result: FileResult, cache: SourceCache, cfg: project.ProjectConfig) -> None:
    """Apply `# exportlens: ignore` comments (unused ones are reported only after a complete run),
    then the project's `ignore` / `select` codes."""
    files = {d.file for d in result.diagnostics if d.file.endswith(document.PYTHON_SUFFIXES)} | {result.path}
    texts = {f: (src.text if (src := cache(f)) is not None else None) for f in files}
    complete = result.ran and all(t.status in ("ok", "problems") for t in result.targets)
    outcome = suppress.apply(result.diagnostics, texts, report_unused={result.path} if complete else None, known=codes.CODES)
    kept = [d for d in outcome.kept + outcome.unused if _selected(d.code, cfg)]
    result.diagnostics = sorted(kept, key=lambda d: (d.file, d.range.start, d.code))
    result.ignored = outcome.ignored


def _selected(code: str, cfg: project.ProjectConfig) -> bool:
    if code == "config-error":
        return True  # a bad `select` must not hide its own error
    return code not in cfg.ignore and (cfg.select is None or code in cfg.select)


def config_diagnostics(cfg: project.ProjectConfig) -> list[Diagnostic]:
    """Each bad `[tool.exportlens]` value, on its line of pyproject.toml."""
    out = []
    for err in cfg.errors:
        try:
            rng = read_source(cfg.path).line_range(err.line + 1)
        except SourceError:
            rng = Range.of(err.line, 0, err.line, 0)
        out.append(codes.new("config-error", cfg.path, rng, err.message))
    return out


def syntax_diagnostic(src: Source, exc: SyntaxError) -> Diagnostic:
    line = int(exc.lineno or 1)
    text = src.line(line)
    col = max(0, int(exc.offset or 1) - 1)  # code points, 1-based
    end_line = int(getattr(exc, "end_lineno", None) or line)
    end_col = int(getattr(exc, "end_offset", None) or 0) - 1
    start = src.position(line, len(text[:col].encode()))
    if end_line == line and end_col > col:
        end = src.position(line, len(text[:end_col].encode()))
    else:
        end = src.line_range(line).end if src.line_range(line).end > start else start
    if end <= start:
        end = type(start)(start.line, start.character + 1)
    return codes.new("syntax-error", src.path, Range(start, end), f"SyntaxError: {exc.msg}")
