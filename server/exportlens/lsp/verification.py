"""Verified quick fixes in the editor: after a run is published, each fix is re-run in memory.

Verification is background work: it starts only once the run's diagnostics are published and no
run (nor a command that runs targets) has been in flight for a moment (`Gate.when_quiet`), so it
never delays one. A run that begins
preempts every verification at once: its worker jobs are killed, not awaited (`WorkerClient.
preempt`), and it starts over once no run is in flight. An edit or save of a file a run covered
drops that run's verification for good (the next run of the new text brings its own). Its
outcomes decorate the code actions (`title — export passes ✓`), pick the preferred fix, order
unhelpful ones last (or hide them, setting `exportlens.unhelpfulFixes`) and show in the hover.
The client hears `exportlens/verification` notifications (`started`, `done` with the URIs whose
code actions changed, `cancelled`, `failed`).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lsprotocol import types

from exportlens import codes
from exportlens.document import Document
from exportlens.engine import Engine
from exportlens.lsp.convert import uri_of
from exportlens.lsp.host import Host
from exportlens.lsp.settings import UNHELPFUL_HIDE, VERIFY_ON
from exportlens.model import (
    BREAKS,
    EXPORT_PASSES,
    FIXES_THIS,
    NO_EFFECT,
    Diagnostic,
    Fix,
    Verification,
    place,
    split_place,
)
from exportlens.worker_client import BACKGROUND

NOTIFICATION = "exportlens/verification"
DiagKey = tuple[str, str, int, int, str]


def diag_key(d: Diagnostic) -> DiagKey:
    return (place(d.file, d.cell), d.code, d.range.start.line, d.range.start.character, d.message)


def outcome_suffix(v: Verification | None, code: str) -> str:
    """What a code action's title says after its fix was verified ('' while unverified)."""
    if v is None or v.status not in (EXPORT_PASSES, FIXES_THIS, NO_EFFECT, BREAKS):
        return ""
    return f" — {codes.outcome_words(v, code)}"


@dataclass
class _Run:
    """A published run whose fixes are to be verified."""

    owner: str
    diagnostics: list[Diagnostic]
    texts: dict[str, str | None]
    doc: Document
    engine: Engine | None = None  # the engine its jobs run on, once started

    @property
    def work(self) -> str:
        """Its jobs' background work (`worker_client.BACKGROUND`): preempted by this name."""
        return f"verify {self.owner}"


class FixVerification:
    def __init__(self, ls: Host) -> None:
        self.ls = ls
        self.tasks: dict[str, asyncio.Task[None]] = {}  # owner → its verification in flight
        self.running: dict[str, _Run] = {}  # owner → what its task in flight verifies
        self.waiting: dict[str, _Run] = {}  # owner → a run to verify once no run is in flight
        self.covers: dict[str, set[str]] = {}  # owner → places its run covered (an edit there cancels)
        self.verified: dict[DiagKey, list[Fix]] = {}  # finding → its fixes, verified and ranked
        self.owner_keys: dict[str, set[DiagKey]] = {}
        self.closed = False

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self, owner: str, diagnostics: list[Diagnostic], texts: dict[str, str | None], doc: Document) -> None:
        """Verify the fixes of `owner`'s freshly published run of `doc` once no run is in flight
        (an older verification of `owner` ends now)."""
        self.cancel(owner, "superseded")
        for key in self.owner_keys.pop(owner, set()):
            self.verified.pop(key, None)
        s = self.ls.settings
        if s.verify_fixes != VERIFY_ON or not getattr(self.ls, "trusted", True):
            return
        from exportlens.verify import to_verify

        if not to_verify(diagnostics):
            return
        self.covers[owner] = {owner} | {p for p in texts} | {place(d.file, d.cell) for d in diagnostics}
        self.waiting[owner] = _Run(owner, list(diagnostics), dict(texts), doc)
        self.resume()

    def resume(self) -> None:
        """No run is in flight: start the verifications that wait once none has been for a
        moment (`Gate.when_quiet`)."""
        if not self.closed and self.waiting:
            self.ls.runs.gate.when_quiet(self._start_waiting)

    def _start_waiting(self) -> None:
        if self.closed:
            return
        budget = self.ls.settings.verify_budget_seconds
        for owner, run in list(self.waiting.items()):
            del self.waiting[owner]
            run.engine = self.ls.runs.engines.current()
            task = asyncio.ensure_future(self._verify(run, budget))
            self.tasks[owner] = task
            self.running[owner] = run
            task.add_done_callback(functools.partial(self._ended, owner))

    def _ended(self, owner: str, task: asyncio.Task[None]) -> None:
        if self.tasks.get(owner) is task:
            del self.tasks[owner]
            self.running.pop(owner, None)

    def preempt(self) -> None:
        """A run begins: every verification in flight stops now (its jobs are killed, not
        awaited) and waits to start over once no run is in flight; an edit or a save of what it
        covered (`cancel_touching`) drops it for good."""
        for owner, run in list(self.running.items()):
            self.cancel(owner, "preempted by a run")
            self.waiting.setdefault(owner, run)

    def cancel(self, owner: str, why: str) -> None:
        """End `owner`'s verification, in flight (its jobs killed at once) or waiting."""
        self.waiting.pop(owner, None)
        run = self.running.pop(owner, None)
        task = self.tasks.pop(owner, None)
        if run is not None and run.engine is not None:
            run.engine.worker.preempt(run.work)  # its jobs die before anything sent after this
        if task is not None and not task.done():
            task.cancel()
            self._notify(owner, "cancelled", reason=why)

    def cancel_touching(self, path: str, why: str) -> None:
        """A file or a cell changed (edit or save): verifications that ran on its old text are moot."""
        for owner, places in list(self.covers.items()):
            if path in places or any(split_place(p)[0] == path for p in places):
                self.cancel(owner, why)

    async def close(self) -> None:
        self.closed = True
        self.waiting.clear()
        tasks = list(self.tasks.values())
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _notify(self, owner: str, state: str, **extra: Any) -> None:
        try:
            self.ls.protocol.notify(NOTIFICATION, {"uri": self.ls.open_docs.get(owner) or uri_of(owner), "state": state, **extra})
        except Exception:  # the client went away: nothing to tell
            pass

    async def _verify(self, run: _Run, budget: float) -> None:
        from exportlens import fix_registry
        from exportlens.verify import Verifier, to_verify

        BACKGROUND.set(run.work)  # this task's jobs (and its subtasks') are background work
        owner, diagnostics, texts, doc, engine = run.owner, run.diagnostics, run.texts, run.doc, run.engine
        assert engine is not None
        started = time.perf_counter()
        # the files as the run analysed them (a notebook's cells travel in its document, not as files)
        known = {p: t for p, t in texts.items() if t is not None and split_place(p)[1] is None}

        def read(path: str) -> str | None:
            return known[path] if path in known else fix_registry.read_disk(path)

        def fixes_of_each() -> list[tuple[Diagnostic, list[Fix]]]:
            return [(d, f) for d in to_verify(diagnostics) if (f := fix_registry.fixes_for(d, read, doc))]

        items = await asyncio.to_thread(fixes_of_each)  # parsing and rewriting files: not on the event loop
        count = len({f.key() for _, fixes in items for f in fixes})
        self._notify(owner, "started", fixes=count)
        verifier = Verifier(engine, owner, None, read, budget, jobs=1, overrides=dict(known), document=doc)
        try:
            baseline, _ = await asyncio.gather(
                engine.check(doc, overrides=dict(known), outputs=True, timeout=min(engine.settings.timeout, budget + 5)),
                verifier.run(f for _, fixes in items for f in fixes),
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # an engine bug must not take the server down
            self.ls.log(f"verifying fixes of {owner} failed: {type(exc).__name__}: {exc}", types.MessageType.Error)
            self._notify(owner, "failed", reason=str(exc))
            return
        verifier.base = baseline
        keys = set()
        for d, fixes in verifier.classify(items):
            key = diag_key(d)
            self.verified[key] = fixes
            keys.add(key)
        self.owner_keys[owner] = keys
        self.covers.pop(owner, None)
        statuses = [f.verification.status for _, fixes in self.verified_of(owner) for f in fixes if f.verification]
        seconds = round(time.perf_counter() - started, 3)
        self._notify(owner, "done", fixes=count, seconds=seconds, statuses=sorted(statuses), uris=self._uris(d for d, _ in items))
        self.ls.refresh_code_lens()

    def _uris(self, diagnostics: Iterable[Diagnostic]) -> list[str]:
        """The URIs the client shows these diagnostics under (their code actions just changed)."""
        out = []
        for where in sorted({place(d.file, d.cell) for d in diagnostics}):
            uri = self.ls.open_docs.get(where) or (uri_of(where) if split_place(where)[1] is None else None)
            if uri is not None:
                out.append(uri)
        return out

    def verified_of(self, owner: str) -> list[tuple[DiagKey, list[Fix]]]:
        return [(k, self.verified[k]) for k in self.owner_keys.get(owner, set()) if k in self.verified]

    # -- what the features show ---------------------------------------------------------------

    def fixes(self, diag: Diagnostic, fixes: list[Fix]) -> list[Fix]:
        """`fixes` (as computed for the current text) with their verification, ranked; unhelpful
        ones last or hidden. Unverified fixes come back unchanged."""
        done = self.verified.get(diag_key(diag))
        if not done:
            return fixes
        by_key = {f.key(): f for f in done}
        order = {f.key(): i for i, f in enumerate(done)}
        out = []
        for f in fixes:
            v = by_key.get(f.key())
            out.append(f if v is None else Fix(f.title, f.edits, v.is_preferred, f.assumes, v.verification))
        out.sort(key=lambda f: order.get(f.key(), len(order)))
        if self.ls.settings.unhelpful_fixes == UNHELPFUL_HIDE:
            out = [f for f in out if f.verification is None or f.verification.status not in (NO_EFFECT, BREAKS)]
        return out

    def for_hover(self, diag: Diagnostic) -> list[Fix]:
        return list(self.verified.get(diag_key(diag)) or [])
