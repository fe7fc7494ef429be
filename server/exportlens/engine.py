"""The engine: one call from a file path to its diagnostics, shared by the CLI and the server.

Reads and syntax-checks the file (no user code runs for that), finds its targets statically,
runs them in the warm worker, and turns the worker's events into placed diagnostics.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from exportlens import deprecated, findings, notebook, project, suppress, targets
from exportlens.findings import placement
from exportlens.model import ERROR, INFORMATION, WARNING, Diagnostic, Range, Report, TargetResult
from exportlens.protocol import FindingEvent, TargetEvent
from exportlens.source import Source, SourceError, read_source, refuse_binary
from exportlens.targets import FileTargets
from exportlens.worker_client import WorkerClient, WorkerUnavailable, default_jobs


@dataclass
class EngineSettings:
    python: str | None = None  # the interpreter with the user's torch; None = this one
    timeout: float = 120.0  # seconds per job
    memory_mb: int = 8192  # address space a job may add; 0 = unlimited
    extra_targets: list[str] = field(default_factory=list)  # "path.py:factory", relative to the root
    warmup: bool = True
    jobs: int = field(default_factory=default_jobs)  # jobs at once (each is a process tree), queued FIFO
    compile_backend: str = "eager"  # graph breaks are the same; aot_eager/inductor for the ablation
    timeout_knob: str = "the timeout"  # how the front end in use sets `timeout` (`--timeout`, a setting)
    trace_dir: str | None = None  # where each run's structured trace (TORCH_TRACE format, for tlparse) is kept


@dataclass
class FileResult:
    path: str
    targets: list[TargetResult] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    ran: bool = False  # whether user code was run for it
    op_profiles: list[dict[str, Any]] = field(default_factory=list)  # files written by save_op_profiles
    ignored: list[Diagnostic] = field(default_factory=list)  # silenced by `# exportlens: ignore` comments
    trace_files: list[str] = field(default_factory=list)  # torch's structured traces of this run
    texts: dict[str, str] = field(default_factory=dict)  # file → the text its diagnostics were placed on
    # target name → what fix verification compares: "outputs" (fingerprint) or "outputs_error",
    # and "plain_export" ("ok" or what plain torch.export.export raised)
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)


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


@dataclass(frozen=True)
class NotebookPlan:
    """A notebook's code cells planned as one script, under the name of the script a run writes beside it."""

    path: str  # the notebook
    script: notebook.Script
    shadow: str
    plan: Plan

    def mapper(self) -> notebook.Mapper:
        return notebook.Mapper(self.path, self.shadow, self.script)


def _unreadable_notebook(path: str, exc: notebook.NotebookError) -> Diagnostic:
    return Diagnostic(path, Range.of(0, 0, 0, 1), ERROR, "syntax-error", str(exc), "")


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


_ONE_PER_MESSAGE = {"target-error", "export-error", "worker-crashed", "worker-timeout"}


def _merge(diags: list[Diagnostic]) -> list[Diagnostic]:
    """One finding per user line and code; occurrences add up."""
    merged: dict[tuple[str, int, str, str, str, int], Diagnostic] = {}
    for d in diags:
        distinct = d.message if d.code in _ONE_PER_MESSAGE else ""
        key = (d.file, d.range.start.line, d.code, distinct, *_library_line(d))  # two library lines stay two
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
    return sorted(merged.values(), key=lambda d: (d.file, d.range.start, d.code, *_library_line(d)))


def _library_line(d: Diagnostic) -> tuple[str, int]:
    inside = d.data.get("library_frame") or {}
    return str(inside.get("file") or ""), int(inside.get("line") or 0)


class Engine:
    def __init__(self, settings: EngineSettings | None = None, *, log: Callable[[str], None] | None = None) -> None:
        self.settings = settings or EngineSettings()
        self.worker = WorkerClient(self.settings.python, warmup=self.settings.warmup, log=log, max_jobs=self.settings.jobs)

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

    def plan(self, path: str, text: str | None = None) -> Plan:
        """Static part of a check: read, syntax-check and find targets. Runs no user code.

        Never raises: a file that cannot be planned (nested too deeply for the compiler, too big...)
        is its own diagnostic, and the rest of a folder is still checked.
        """
        path = os.path.abspath(path)
        try:
            return self._plan(path, text)
        except (Exception, RecursionError) as exc:
            why = (
                "it is nested too deeply for Python's compiler"
                if isinstance(exc, RecursionError)
                else "Python ran out of memory compiling it"
                if isinstance(exc, MemoryError)
                else "ExportLens failed to read it"
            )
            message = f"The file cannot be compiled: {why} ({type(exc).__name__}: {exc})".replace(" ()", "")
            return Plan(path, _root_of(path), None, None, [Diagnostic(path, Range.of(0, 0, 0, 1), ERROR, "syntax-error", message, "")])

    def _plan(self, path: str, text: str | None) -> Plan:
        root = project.find_root(path)
        cfg = project.load_config(root)
        if text is None and path.endswith(notebook.SUFFIX):  # its code cells, as one script
            try:
                text = notebook.join(notebook.read(path)).text
            except notebook.NotebookError as exc:
                return Plan(path, root, None, None, [_unreadable_notebook(path, exc)])
        try:
            if text is not None:
                refuse_binary(text)  # an editor's buffer of a binary file
            src = Source(path, text) if text is not None else read_source(path)
        except SourceError as exc:
            rng = Range.of(exc.line - 1, 0, exc.line - 1, 1)
            return Plan(path, root, None, None, [Diagnostic(path, rng, ERROR, "syntax-error", str(exc), "")])
        try:
            compile(src.text, path, "exec", dont_inherit=True)
        except SyntaxError as exc:
            return Plan(path, root, src, None, [syntax_diagnostic(src, exc)])
        except ValueError as exc:  # e.g. NUL bytes
            return Plan(path, root, src, None, [Diagnostic(path, Range.of(0, 0, 0, 1), ERROR, "syntax-error", f"The file cannot be compiled: {exc}", "")])
        tree = src.tree
        assert tree is not None
        factories = project.factories_by_file(cfg, self.settings.extra_targets).get(path, [])
        found = targets.discover(tree, path, factories)
        notice = [Diagnostic(path, Range.of(0, 0, 0, 0), INFORMATION, "target-error", cfg.notice, "")] if cfg.notice else []
        return Plan(path, root, src, found, config_diagnostics(cfg) + notice + deprecated.check(src))

    async def check_file(
        self,
        path: str,
        *,
        text: str | None = None,
        explicit: bool = True,
        on_target: Callable[[TargetResult], None] | None = None,
        on_phase: Callable[[str, str], None] | None = None,
        save_op_profiles: bool = False,
        overrides: dict[str, str] | None = None,
        outputs: bool = False,
        plain_export: bool = False,
        timeout: float | None = None,
    ) -> FileResult:
        """Diagnostics for one file. `explicit`: the user asked for this file (not a folder walk).

        `on_phase(phase, target)` is told what the job is doing (importing, building the model, exporting).
        `overrides` ({path: text}) are run and placed instead of those files' disk contents
        (the worker serves them under the real names; nothing is written). `outputs` and
        `plain_export` collect what fix verification compares (see `FileResult.facts`).
        """
        path = os.path.abspath(path)
        overrides = {os.path.abspath(p): t for p, t in (overrides or {}).items()}
        if text is None:
            text = overrides.get(path)
        if path.endswith(notebook.SUFFIX):
            return await self.check_notebook(path, raw=text, explicit=explicit, on_target=on_target, save_op_profiles=save_op_profiles)
        result = FileResult(path)
        # off the event loop: parsing a 20,000-line file must not stall an editor's requests
        plan = await asyncio.to_thread(self.plan, path, text)
        src, found, root = plan.source, plan.targets, plan.root
        result.diagnostics.extend(plan.diagnostics)
        if src is not None:
            result.texts[path] = src.text
        if found is None:
            return result
        if not found.targets:
            if explicit:
                result.diagnostics.append(Diagnostic(path, Range.of(0, 0, 0, 0), INFORMATION, "no-target", targets.NO_TARGET_HELP, ""))
            return result
        cache = SourceCache({**overrides, **({path: src.text} if src is not None else {})})  # read once: plan already did
        result.ran = True
        job = found.job(path, root)
        job["source"] = src.text if src is not None else None  # run what was planned, not a later disk state
        if overrides:
            job["overrides"] = overrides
        if outputs:
            job["outputs"] = True
        if plain_export:
            job["plain_export"] = True
        job["compile_backend"] = self.settings.compile_backend
        job["save_op_profiles"] = save_op_profiles
        run_dir = _trace_run_dir(self.settings.trace_dir, path)
        if run_dir:
            job["trace_dir"] = run_dir
        seen: set[str] = set()
        raw: list[Diagnostic] = []
        partial: dict[str, TargetEvent] = {}  # target → what torch recorded so far (streamed findings)
        started = time.perf_counter()
        try:
            async for event in self.worker.run(job, timeout=timeout or self.settings.timeout, memory_mb=self.settings.memory_mb):
                if event["event"] == "finding":
                    _add_partial(partial, event)
                elif event["event"] == "phase":
                    if on_phase:
                        on_phase(str(event.get("phase") or ""), str(event.get("target") or ""))
                elif event["event"] == "target":
                    partial.pop(str(event.get("name")), None)  # the complete report supersedes the stream
                    ctx = findings.Context(root, cache, event["name"], event["file"], int(event["line"]))
                    got = findings.from_event(ctx, event)
                    raw.extend(got)
                    status = (
                        "error"
                        if "exception" in event or "target_error" in event
                        else ("problems" if any(d.severity in (ERROR, WARNING) for d in got) else "ok")
                    )
                    if event.get("unsupported"):
                        status = "unsupported"
                    tr = TargetResult(event["name"], event["file"], int(event["line"]), event.get("kind", "export"), status, float(event.get("seconds", 0.0)))
                    result.targets.append(tr)
                    seen.add(tr.name)
                    facts: dict[str, Any] = {k: event[k] for k in ("outputs", "outputs_error", "plain_export") if k in event}
                    if facts:
                        result.facts[tr.name] = facts
                    if saved := event.get("op_profiles"):
                        result.op_profiles.append({"target": tr.name, **saved})
                    if on_target:
                        on_target(tr)
                elif event["event"] == "done" and event["status"] == "ok" and not seen:
                    # the job finished yet no target reported: never a silent "0 problems in 0 targets"
                    t = found.targets[0]
                    names = ", ".join(x.name for x in found.targets[:3]) + (" …" if len(found.targets) > 3 else "")
                    raw.append(
                        Diagnostic(
                            path,
                            placement.statement_range(src, t.line) if src else Range.of(t.line - 1, 0, t.line - 1, 0),
                            ERROR,
                            "target-error",
                            f"No target of this file ran ({names}): the file finished without reaching "
                            "them (an early return or exit, a branch not taken, or `if __name__ == "
                            '"__main__"` around them when they are not script calls).',
                            t.name,
                        )
                    )
                    result.targets.append(TargetResult(t.name, path, t.line, t.kind, "error", time.perf_counter() - started))
                elif event["event"] == "done" and event["status"] in ("crashed", "timeout"):
                    kept = 0
                    for name, ev in partial.items():  # what torch recorded before the deadline still counts
                        ctx = findings.Context(root, cache, name, ev["file"], int(ev["line"]))
                        got = findings.from_event(ctx, ev)
                        kept += len(got)
                        raw.extend(got)
                    stopped = [t for t in _stopped_targets(found, partial) if t.name not in seen] or _stopped_targets(found, {})
                    halted = stopped[0]
                    ctx = findings.Context(root, cache, halted.name, halted.file or path, halted.line)
                    raw.append(
                        findings.crash_diagnostic(
                            ctx, event["status"], event.get("detail", ""), event.get("stderr", ""), timeout_knob=self.settings.timeout_knob, found=kept
                        )
                    )
                    tr = TargetResult(halted.name, halted.file or path, halted.line, halted.kind, event["status"], time.perf_counter() - started)
                    result.targets.append(tr)
                    if on_target:
                        on_target(tr)
        except WorkerUnavailable as exc:
            result.ran = False
            t = found.targets[0]
            raw.append(
                Diagnostic(
                    path,
                    placement.statement_range(src, t.line) if src else Range.of(0, 0, 0, 0),
                    ERROR,
                    "worker-crashed",
                    f"ExportLens could not start its worker: {exc}",
                    t.name,
                )
            )
            result.targets.append(TargetResult(t.name, path, t.line, t.kind, "crashed", 0.0))
        if run_dir:
            _attach_traces(result, raw, run_dir)
        result.diagnostics.extend(_merge(raw))
        _suppress(result, cache, project.load_config(root))
        for file in {d.file for d in result.diagnostics} | {path}:
            cache(file)
        result.texts = cache.texts()
        return result

    def plan_notebook(self, path: str, raw: str | None = None) -> NotebookPlan | Diagnostic:
        """Static part of a notebook's check (`raw`: its JSON, else the file); its diagnostic if unreadable."""
        try:
            cells = notebook.parse(raw) if raw is not None else notebook.read(path)
        except notebook.NotebookError as exc:
            return _unreadable_notebook(path, exc)
        script = notebook.join(cells)
        shadow = notebook.shadow_path(path)
        return NotebookPlan(path, script, shadow, self.plan(shadow, script.text))

    async def check_notebook(
        self,
        path: str,
        *,
        raw: str | None = None,
        explicit: bool = True,
        on_target: Callable[[TargetResult], None] | None = None,
        save_op_profiles: bool = False,
    ) -> FileResult:
        """A notebook (`raw`: its JSON, else the file): the code cells up to the last target's run as one
        script beside it; diagnostics, fixes and targets come back in cell coordinates."""
        planned = self.plan_notebook(path, raw)
        if isinstance(planned, Diagnostic):
            return FileResult(path, diagnostics=[planned])
        script, shadow, found = planned.script, planned.shadow, planned.plan.targets
        if found is not None and found.targets:
            last = script.to_cell(max(t.line for t in found.targets) - 1)
            script = script.cut_after(last[0]) if last else script
        mapper = notebook.Mapper(path, shadow, script)
        report = (lambda t: on_target(mapper.target(t))) if on_target else None
        try:
            with open(shadow, "w", encoding="utf-8") as fh:
                fh.write(script.text)
        except OSError as exc:
            return FileResult(
                path,
                diagnostics=[
                    Diagnostic(
                        path,
                        Range.of(0, 0, 0, 0),
                        ERROR,
                        "target-error",
                        f"ExportLens runs a notebook as a script beside it, and could not write one: {exc}",
                        "",
                    )
                ],
            )
        try:
            inner = await self.check_file(shadow, text=script.text, explicit=explicit, on_target=report, save_op_profiles=save_op_profiles)
            from exportlens.fixes import registry

            registry.attach(inner.diagnostics, lambda p: script.text if p == shadow else registry.read_disk(p))
        finally:
            try:
                os.remove(shadow)
            except OSError:
                pass
        return FileResult(
            path,
            [mapper.target(t) for t in inner.targets],
            [mapper.diagnostic(d) for d in inner.diagnostics],
            inner.ran,
            inner.op_profiles,
            [mapper.diagnostic(d) for d in inner.ignored],
            inner.trace_files,
        )

    async def check_paths(
        self,
        paths: list[str],
        *,
        on_file: Callable[[FileResult], None] | None = None,
        on_phase: Callable[[str, str, str], None] | None = None,
        save_op_profiles: bool = False,
        outputs: bool = False,
        plain_export: bool = False,
    ) -> Report:
        """Every Python file under `paths`; files named directly always get an answer.

        `on_phase(path, phase, target)` is told what each file's job is doing; `on_file` when it is done.
        `outputs`/`plain_export`: what fix verification compares (see `check_file`).
        """
        files: list[tuple[str, bool]] = []
        for p in paths:
            explicit = os.path.isfile(p)
            cfg = project.load_config(project.find_root(p))
            files.extend((f, explicit) for f in project.python_files(p, cfg.exclude, cfg.root, notebooks=True))
        report = Report(torch_version="unknown")
        gate = asyncio.Semaphore(max(1, self.settings.jobs))

        async def one(file: str, explicit: bool) -> FileResult:
            async with gate:
                tell = functools.partial(on_phase, file) if on_phase else None
                try:
                    res = await self.check_file(
                        file, explicit=explicit, on_phase=tell, save_op_profiles=save_op_profiles, outputs=outputs, plain_export=plain_export
                    )
                except Exception as exc:  # a bug of ours on one file must not lose the others' results
                    res = FileResult(
                        os.path.abspath(file),
                        diagnostics=[
                            Diagnostic(
                                os.path.abspath(file),
                                Range.of(0, 0, 0, 1),
                                ERROR,
                                "target-error",
                                f"ExportLens failed on this file (an internal error, please report it): {type(exc).__name__}: {exc}",
                                "",
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
        return report


@dataclass
class _Pending:
    name: str
    file: str | None
    line: int
    kind: str


def _stopped_targets(plan: targets.FileTargets, partial: dict[str, TargetEvent]) -> list[_Pending]:
    """The targets a stopped job may have been running: those with streamed findings first, latest first."""
    streamed = [_Pending(name, ev.get("file"), int(ev.get("line") or 1), str(ev.get("kind") or "export")) for name, ev in reversed(partial.items())]
    return streamed + [_Pending(t.name, None, t.line, t.kind) for t in plan.targets]


def _add_partial(partial: dict[str, TargetEvent], event: FindingEvent) -> None:
    """Collect one streamed `finding` into a target event of the same shape as the final one."""
    name = str(event.get("name"))
    if name in partial:  # the last target to stream is the one most likely running when the job stopped
        partial[name] = partial.pop(name)
    target = partial.setdefault(
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
    if "failures" in event:
        target.setdefault("failures", []).extend(event["failures"])
    if "compile_findings" in event:
        target.setdefault("compile_findings", []).extend(event["compile_findings"])
    if "trace_findings" in event:
        target.setdefault("trace_findings", []).extend(event["trace_findings"])
    if "definition" in event:
        target["definition"] = event["definition"]
    if "compile_options" in event:
        target["compile_options"] = event["compile_options"]


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


def _attach_traces(result: FileResult, diags: list[Diagnostic], run_dir: str) -> None:
    """The run's trace files, on the result and in every diagnostic's data (the hover links it)."""
    result.trace_files = sorted(os.path.join(run_dir, f) for f in os.listdir(run_dir) if f.endswith(".log"))
    if not result.trace_files:
        shutil.rmtree(run_dir, ignore_errors=True)
        return
    for d in diags:
        d.data.setdefault("trace_file", result.trace_files[0])


def _suppress(result: FileResult, cache: SourceCache, cfg: project.ProjectConfig) -> None:
    """Apply `# exportlens: ignore` comments (unused ones are reported only after a complete run),
    then the project's `ignore` / `select` codes."""
    files = {d.file for d in result.diagnostics if d.file.endswith((".py", ".pyw"))} | {result.path}
    texts = {f: (src.text if (src := cache(f)) is not None else None) for f in files}
    complete = result.ran and all(t.status in ("ok", "problems") for t in result.targets)
    outcome = suppress.apply(result.diagnostics, texts, report_unused={result.path} if complete else None)
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
        out.append(Diagnostic(cfg.path, rng, ERROR, "config-error", err.message, ""))
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
    return Diagnostic(src.path, Range(start, end), ERROR, "syntax-error", f"SyntaxError: {exc.msg}", "")
