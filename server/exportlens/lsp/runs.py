"""Runs: one task per analysed document, newest wins; what each part of a run's life is handed to.

A new run of an owner (the document whose targets run: a .py file or a notebook) cancels the one in
flight, which kills that worker job; a run whose generation is no longer the newest publishes
nothing. The parts, each in its module: `gate.Gate` (what somebody waits for, and when background
work may start), `engines.Engines` (the engine for the current settings), `publisher.Publisher`
(each owner's result, published per place) and `plans.Plans` (documents and their cached plans).
A final result also queues the background work: precomputing its fixes and verifying them.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any

from lsprotocol import types

from exportlens import document
from exportlens.engine import FileResult
from exportlens.lsp.engines import Engines
from exportlens.lsp.gate import Gate
from exportlens.lsp.host import Host
from exportlens.lsp.last_results import LastResults
from exportlens.lsp.plans import Plans
from exportlens.lsp.progress import RunProgress, problems_text
from exportlens.lsp.publisher import Publisher
from exportlens.model import Diagnostic


@dataclass
class RunSummary:
    files: list[str]
    problems: int
    targets: list[dict[str, Any]]
    cancelled: bool = False
    superseded: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"files": self.files, "problems": self.problems, "targets": self.targets, "cancelled": self.cancelled, "superseded": self.superseded}


def _consume(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()


def count_problems(diags: list[Diagnostic]) -> int:
    return sum(1 for d in diags if d.problem)


class Runs:
    def __init__(self, ls: Host) -> None:
        self.ls = ls
        self.gate = Gate(on_hold=lambda: ls.verification.preempt(), on_release=lambda: ls.verification.resume())
        self.engines = Engines(ls)
        self.publisher = Publisher(ls)
        self.plans = Plans(ls, self.engines, self.publisher)
        self.last = LastResults(ls, self.engines, self.publisher)  # on open: the last stored results at once
        self.tasks: dict[str, asyncio.Task[FileResult | None]] = {}
        self.generation: dict[str, int] = {}
        self._to_warm: set[str] = set()  # places whose fixes to precompute once quiet

    async def close(self) -> None:
        self.gate.close()
        for task in list(self.tasks.values()):
            task.cancel()
        await self.engines.close()

    def start(self, path: str, *, explicit: bool = False, progress: RunProgress | None = None, draft: str | None = None) -> asyncio.Task[FileResult | None]:
        """Run `path` now, cancelling its run in flight; the task yields None if superseded."""
        old = self.tasks.get(path)
        if old is not None and not old.done():
            old.cancel()
        gen = self.generation.get(path, 0) + 1
        self.generation[path] = gen
        self.gate.hold()  # before its job is sent: verification's jobs are killed first
        task = asyncio.ensure_future(self._run(path, gen, explicit, progress, draft))
        self.tasks[path] = task
        task.add_done_callback(lambda t: self._ended(path, t))
        return task

    def _ended(self, path: str, task: asyncio.Task[FileResult | None]) -> None:
        if self.tasks.get(path) is task:
            del self.tasks[path]
        self.gate.release()  # published (or superseded): verification may resume

    async def _run(self, path: str, gen: int, explicit: bool, shared: RunProgress | None, draft: str | None = None) -> FileResult | None:
        engine = self.engines.current()
        # The text the editor has now (didSave comes after the buffer is final), not the disk, which
        # the editor may be rewriting in place; a file that is not open is read once, by the plan.
        text, version = self.publisher.snapshot(path)
        if text is None and not os.path.exists(path):
            self.ls.log(f"{path} was deleted before ExportLens could run it", types.MessageType.Info)
            self.store(path, FileResult(path), None)
            return None
        progress = shared
        if progress is None:
            task = asyncio.current_task()
            names = self.plans.target_names(path) or [os.path.basename(path)]
            progress = RunProgress.start(self.ls, names, lambda: task.cancel() if task else None)
        try:
            doc = document.load(path, text) if text is not None else self.plans.disk_document(path)

            def early(diags: list[Diagnostic]) -> None:  # the user's export failed: shown before draft export runs
                if self.generation.get(path) == gen:
                    self.store(path, FileResult(path, diagnostics=diags, ran=True, document=doc), version, final=False)

            result = await engine.check(doc, explicit=explicit, on_target=progress.target, on_phase=progress.phase, on_early=early, draft=draft)
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
        if self.engines.superseded(engine):  # the interpreter setting changed under this run: its worker was
            if shared is None:  # closed (a "crash" that is none), and the new interpreter is what counts
                progress.end("superseded: the interpreter changed")
            self.start(path, explicit=explicit, draft=draft).add_done_callback(_consume)
            return None
        self.store(path, result, version)
        if shared is None:
            reused = f" (reused from the run of {result.cached['finished']})" if result.cached else ""
            progress.end(problems_text(count_problems(result.diagnostics)) + reused)
        return result

    async def run_paths(self, paths: list[str], *, explicit: bool, draft: str | None = None) -> RunSummary:
        """Run several owners one after the other under one progress (the command); `draft` ("always"):
        draft export runs even where plain export passes (the "Run draft export" command)."""
        if len(paths) == 1:
            task = self.start(paths[0], explicit=explicit, draft=draft)
            return await self._await_runs([(paths[0], task, self.generation[paths[0]])])
        with self.gate.foreground():  # no verification between one owner's run and the next
            return await self._run_one_by_one(paths, explicit=explicit, draft=draft)

    async def _run_one_by_one(self, paths: list[str], *, explicit: bool, draft: str | None = None) -> RunSummary:
        names = [n for p in paths for n in self.plans.target_names(p)]
        me = asyncio.current_task()
        progress = RunProgress.start(self.ls, names or ["workspace"], lambda: me.cancel() if me else None)
        pairs: list[tuple[str, asyncio.Task[FileResult | None], int]] = []
        try:
            for p in paths:
                task = self.start(p, explicit=explicit, progress=progress, draft=draft)
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

    def store(self, owner: str, result: FileResult, version: int | None = None, *, final: bool = True) -> None:
        """Keep and publish a run's result; a final one also warms its fixes and starts verifying them
        (an early one, the user's failed export before draft export ends, is only shown)."""
        kept, touched = self.publisher.keep(owner, result, version, final=final)
        if not final:
            return
        self.ls.refresh_code_lens()
        self._to_warm.update(touched)
        self.gate.when_quiet(self._warm)
        assert kept.document is not None
        self.ls.verification.start(owner, list(result.diagnostics), kept.texts, kept.document)  # after publishing: never delays it

    def _warm(self) -> None:
        """Precompute the fixes of the places published since (computing them holds the server's
        interpreter for a while: not while a save's run starts)."""
        paths, self._to_warm = sorted(self._to_warm), set()
        self.ls.background(self.ls.actions.warm(paths))
