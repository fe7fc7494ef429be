"""Each owner's last result, and what the editor shows of them: published per place.

A run belongs to its *owner* (the document whose targets ran: a .py file or a notebook); its
diagnostics land in *places* (`model.place`: a file, or one cell of a notebook), possibly of other
files (a helper module). Every place a result touched is re-published from all owners' results,
so a diagnostic a later run no longer has is cleared. Ranges are carried onto the editor's
current text (see `lsp/textmap.py`).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import unquote

from lsprotocol import types

from exportlens import document
from exportlens.document import Document
from exportlens.engine import FileResult
from exportlens.lsp.convert import text_hash, to_lsp, uri_of
from exportlens.lsp.host import Host
from exportlens.lsp.textmap import LineMap, line_map
from exportlens.model import Diagnostic, TargetResult, place, split_place
from exportlens.source import SourceError, read_disk, read_source


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
    cached: dict[str, Any] | None = None  # from the results cache: the run it came from ("confirmed": False, not run again yet)
    depends: list[str] = field(default_factory=list)  # the project's files the run imported or read (a save of one re-runs it)

    def files(self) -> set[str]:
        """The places its diagnostics are in."""
        return {place(d.file, d.cell) for d in self.diagnostics}

    def problems(self, target: str | None = None) -> int:
        return sum(1 for d in self.diagnostics if d.problem and (target is None or target in d.target.split(", ")))


class Publisher:
    def __init__(self, ls: Host) -> None:
        self.ls = ls
        self.results: dict[str, OwnerResult] = {}
        self.published: set[str] = set()  # places that currently show diagnostics
        self._maps: dict[tuple[str, str], LineMap] = {}  # (analysed text's hash, current text's hash)

    def keep(self, owner: str, result: FileResult, version: int | None = None, *, final: bool = True) -> tuple[OwnerResult, list[str]]:
        """Keep a run's result and publish every place it (or the owner's last one) touched; the
        kept result and those places."""
        old = self.results.get(owner)
        before = old.files() if old else set()
        seconds = sum(t.seconds for t in result.targets)
        places = {place(d.file, d.cell) for d in result.diagnostics} | {owner}
        # the texts the diagnostics were placed on (what the run analysed), never a later disk state
        texts: dict[str, str | None] = {p: result.texts[p] if p in result.texts else read_disk(p) if p != owner else None for p in places}
        doc = result.document or document.load(owner)
        kept = OwnerResult(owner, list(result.diagnostics), list(result.targets), texts, seconds, version=version, document=doc, final=final)
        kept.cached, kept.depends = result.cached, list(result.depends)
        self.results[owner] = kept
        self.ls.track(doc)  # a notebook's cells get the URIs its results are published on
        touched = sorted(before | kept.files())
        for p in touched:
            self.publish(p)
        return kept, touched

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
        diags = [to_lsp(d, text_sha=sha, owner=owner, partial=not self.results[owner].final, cached=self.results[owner].cached) for d, sha, owner in items]
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
