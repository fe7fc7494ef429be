"""Verified quick fixes in the editor: after a run is published, each fix is re-run in memory.

Verification starts only once the run's diagnostics are published (it never delays them), in
the background, and is cancelled by any newer edit or save of a file the run covered. Its
outcomes decorate the code actions (`title — export passes ✓`), pick the preferred fix, order
unhelpful ones last (or hide them, setting `exportlens.unhelpfulFixes`) and show in the hover.
The client hears `exportlens/verification` notifications (`started`, `done`, `cancelled`).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from lsprotocol import types

from exportlens.document import Document
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

NOTIFICATION = "exportlens/verification"
DiagKey = tuple[str, str, int, int, str]


def diag_key(d: Diagnostic) -> DiagKey:
    return (place(d.file, d.cell), d.code, d.range.start.line, d.range.start.character, d.message)


def outcome_suffix(v: Verification | None, code: str) -> str:
    """What a code action's title says after its fix was verified ('' while unverified)."""
    if v is None or v.status not in (EXPORT_PASSES, FIXES_THIS, NO_EFFECT, BREAKS):
        return ""
    return f" — {v.words(code)}"


class FixVerification:
    def __init__(self, ls: Host) -> None:
        self.ls = ls
        self.tasks: dict[str, asyncio.Task[None]] = {}  # owner → its verification in flight
        self.covers: dict[str, set[str]] = {}  # owner → places its run covered (an edit there cancels)
        self.verified: dict[DiagKey, list[Fix]] = {}  # finding → its fixes, verified and ranked
        self.owner_keys: dict[str, set[DiagKey]] = {}

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self, owner: str, diagnostics: list[Diagnostic], texts: dict[str, str | None], doc: Document) -> None:
        """Verify the fixes of `owner`'s freshly published run of `doc` (cancelling an older verification)."""
        self.cancel(owner, "superseded")
        for key in self.owner_keys.pop(owner, set()):
            self.verified.pop(key, None)
        s = self.ls.settings
        if s.verify_fixes != VERIFY_ON or not getattr(self.ls, "trusted", True):
            return
        from exportlens.verify import problems

        if not problems(diagnostics):
            return
        self.covers[owner] = {owner} | {p for p in texts} | {place(d.file, d.cell) for d in diagnostics}
        task = asyncio.ensure_future(self._verify(owner, list(diagnostics), dict(texts), doc, s.verify_budget_seconds))
        self.tasks[owner] = task
        task.add_done_callback(lambda t: self.tasks.pop(owner, None) if self.tasks.get(owner) is t else None)

    def cancel(self, owner: str, why: str) -> None:
        task = self.tasks.pop(owner, None)
        if task is not None and not task.done():
            task.cancel()
            self._notify(owner, "cancelled", reason=why)

    def cancel_touching(self, path: str, why: str) -> None:
        """A file or a cell changed (edit or save): verifications that ran on its old text are moot."""
        for owner, places in list(self.covers.items()):
            if path in places or any(split_place(p)[0] == path for p in places):
                self.cancel(owner, why)

    async def close(self) -> None:
        tasks = list(self.tasks.values())
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _notify(self, owner: str, state: str, **extra: Any) -> None:
        try:
            self.ls.protocol.notify(NOTIFICATION, {"uri": self.ls.open_docs.get(owner) or uri_of(owner), "state": state, **extra})
        except Exception:  # the client went away: nothing to tell
            pass

    async def _verify(self, owner: str, diagnostics: list[Diagnostic], texts: dict[str, str | None], doc: Document, budget: float) -> None:
        from exportlens.fixes import registry
        from exportlens.verify import Verifier, problems

        started = time.perf_counter()
        # the files as the run analysed them (a notebook's cells travel in its document, not as files)
        known = {p: t for p, t in texts.items() if t is not None and split_place(p)[1] is None}

        def read(path: str) -> str | None:
            return known[path] if path in known else registry.read_disk(path)

        items = [(d, registry.fixes_for(d, read, doc)) for d in problems(diagnostics)]
        items = [(d, f) for d, f in items if f]
        count = len({f.key() for _, fixes in items for f in fixes})
        self._notify(owner, "started", fixes=count)
        engine = self.ls.runs.engine()
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
        self._notify(owner, "done", fixes=count, seconds=round(time.perf_counter() - started, 3), statuses=sorted(statuses))
        self.ls.refresh_code_lens()

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
