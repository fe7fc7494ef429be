"""Quick fixes as LSP code actions: listed cheaply, edits filled in by `codeAction/resolve`.

An action is only offered while the document is exactly the text the diagnostic was computed
against (its hash travels in the diagnostic's `data`); after an edit the fix would target stale
lines, so the action is shown disabled ("save to run again") or not at all. A fix is computed for
the diagnostic's document (its owner's run: a notebook's fixes are computed on the script that
ran and placed in its cells by the same mapper) and offered only while every text it edits is
still the one that run analysed. Edits are versioned `TextDocumentEdit`s, so a client also
refuses them if the document moved on in between, and resolve refuses (ContentModified) an action
listed for an older version. A notebook cell is a place like a file (`model.place`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcContentModified, JsonRpcInvalidParams

from exportlens import fix_registry
from exportlens.document import Document
from exportlens.lsp.convert import SOURCE, from_lsp_data, lsp_range, text_hash, uri_of
from exportlens.lsp.host import Host
from exportlens.lsp.verification import outcome_suffix
from exportlens.model import Diagnostic, Fix, place
from exportlens.source import Reader, read_disk

STALE = "The file changed since ExportLens ran: save it to run again, then apply the fix"


def fix_id(fix: Fix) -> str:
    """A fix's identity across requests: its edits (the title may gain a verified outcome)."""
    raw = json.dumps([e.to_json() for e in fix.edits], sort_keys=True)
    return hashlib.sha1(raw.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _key(diag: Diagnostic, doc: Document) -> str:
    """A diagnostic of one run of its document (the same finding in another run of a notebook is another entry)."""
    raw = json.dumps([diag.to_json(with_data=True), doc.path, text_hash(doc.text or "")], sort_keys=True, default=str)
    return hashlib.sha1(raw.encode("utf-8", "surrogatepass")).hexdigest()


class FixCache:
    """Fixes per diagnostic, valid while every file they were computed from is unchanged.

    Computing fixes parses and diffs whole files (hundreds of ms on a 2,000-line file), and an
    editor asks for code actions on every cursor move, so each result is computed once: when a
    run's diagnostics are published (in a thread) or on the first request.
    """

    def __init__(self) -> None:
        self.entries: dict[str, tuple[dict[str, str | None], list[Fix]]] = {}

    def get(self, diag: Diagnostic, doc: Document, read: Reader) -> list[Fix] | None:
        hit = self.entries.get(_key(diag, doc))
        if hit is None:
            return None
        reads, fixes = hit
        for path, sha in reads.items():
            text = read(path)
            if (text_hash(text) if text is not None else None) != sha:
                return None
        return fixes

    def compute(self, diag: Diagnostic, doc: Document, read: Reader) -> list[Fix]:
        reads: dict[str, str | None] = {}

        def recording(path: str) -> str | None:
            text = read(path)
            reads[path] = text_hash(text) if text is not None else None
            return text

        fixes = fix_registry.editor_fixes(diag, recording, doc)
        if len(self.entries) > 512:
            self.entries.clear()
        self.entries[_key(diag, doc)] = (reads, fixes)
        return fixes


class Actions:
    def __init__(self, ls: Host) -> None:
        self.ls = ls
        self.cache = FixCache()
        self.pending: dict[str, asyncio.Future[Any]] = {}

    async def fixes(self, diag: Diagnostic, owner: str) -> list[Fix]:
        """The fixes of a diagnostic of `owner`'s run, computed once per text (asked before they
        were precomputed, its place's are precomputed now, off the event loop)."""
        doc = self.ls.runs.plans.document_of(owner)
        pending = self.pending.get(_key(diag, doc))
        if pending is not None:  # being precomputed right now: wait for it rather than compute twice
            await asyncio.shield(pending)
        elif self.cache.get(diag, doc, self.read) is None:
            await self.warm([place(diag.file, diag.cell)])
        found = self.cache.get(diag, doc, self.read)
        return found if found is not None else self.cache.compute(diag, doc, self.read)

    async def warm(self, paths: list[str]) -> None:
        """Compute the fixes of fresh diagnostics in open places off the event loop."""
        snapshot = {p: t for p in self.ls.open_docs if (t := self.ls.runs.publisher.current_text(p)[0]) is not None}

        def read(path: str) -> str | None:
            return snapshot[path] if path in snapshot else read_disk(path)

        todo = []
        for path in paths:
            current = snapshot.get(path)
            if current is None:
                continue
            sha = text_hash(current)
            for d, dsha, owner in self.ls.runs.publisher.diagnostics_in(path):
                doc = self.ls.runs.plans.document_of(owner)
                if dsha == sha and self.cache.get(d, doc, read) is None:
                    todo.append((d, doc))
        futures = {}
        for diag, doc in todo:
            key = _key(diag, doc)
            futures[key] = self.pending[key] = asyncio.get_running_loop().create_future()
        for diag, doc in todo:
            key = _key(diag, doc)
            try:
                await asyncio.to_thread(self.cache.compute, diag, doc, read)
            except Exception as exc:  # a fix generator bug: the request path will say so
                self.ls.log(f"precomputing fixes failed: {exc}")
            finally:
                futures[key].set_result(None)
                if self.pending.get(key) is futures[key]:
                    del self.pending[key]

    # -- capabilities -------------------------------------------------------------------------

    def _code_action_caps(self) -> types.CodeActionClientCapabilities | None:
        caps = self.ls.client_capabilities
        return caps.text_document.code_action if caps is not None and caps.text_document is not None else None

    def lazy(self) -> bool:
        ca = self._code_action_caps()
        return bool(ca and ca.resolve_support and "edit" in (ca.resolve_support.properties or []) and ca.data_support)

    def disabled_supported(self) -> bool:
        ca = self._code_action_caps()
        return bool(ca and ca.disabled_support)

    # -- texts --------------------------------------------------------------------------------

    def read(self, path: str) -> str | None:
        """The current text of a file: the open document's, else the disk's."""
        text, _ = self.ls.runs.publisher.current_text(path)
        return text if text is not None else read_disk(path)

    def _still_analysed(self, owner: str, fix: Fix) -> bool:
        """Every text the fix edits is the one `owner`'s run analysed, where the run saw it."""
        for e in fix.edits:
            where = place(e.file, e.cell)
            analysed = self.ls.runs.publisher.analysed_text(owner, where)
            if analysed is not None and self.ls.runs.publisher.current_text(where)[0] not in (None, analysed):
                return False
        return True

    def _diagnostics(self, params: types.CodeActionParams, path: str) -> list[tuple[Diagnostic, str | None, str]]:
        """Ours among the diagnostics the client sent, else ours that overlap the range: (diagnostic, text hash, owner)."""
        found: list[tuple[Diagnostic, str | None, str]] = []
        for d in params.context.diagnostics:
            if d.source != SOURCE:
                continue
            decoded = from_lsp_data(d.data)
            if decoded is not None:
                found.append(decoded)
        if found or params.context.diagnostics:
            return found
        want = params.range
        for diag, sha, owner in self.ls.runs.publisher.diagnostics_in(path):
            r = diag.range
            if (r.start.line, r.start.character) <= (want.end.line, want.end.character) and (want.start.line, want.start.character) <= (
                r.end.line,
                r.end.character,
            ):
                found.append((diag, sha, owner))
        return found

    # -- requests -----------------------------------------------------------------------------

    async def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        only = params.context.only
        if only and not any(types.CodeActionKind.QuickFix.value.startswith(str(getattr(k, "value", k))) for k in only):
            return []
        uri = params.text_document.uri
        path = self.ls.place_of(uri)
        if path is None:
            return []
        text, version = self.ls.runs.publisher.current_text(path)
        current = text if text is not None else self.read(path)
        if current is None:
            return []
        current_sha = text_hash(current)
        out: list[types.CodeAction] = []
        lazy = self.lazy()
        for diag, sha, owner in self._diagnostics(params, path):
            lsp_diag = self._lsp_diag(diag, params)
            if sha is not None and sha != current_sha:
                if self.disabled_supported():
                    out.append(
                        types.CodeAction(
                            title="ExportLens: fix unavailable until the file is run again",
                            kind=types.CodeActionKind.QuickFix,
                            diagnostics=[lsp_diag],
                            disabled=types.CodeActionDisabled(reason=STALE),
                        )
                    )
                continue
            fixes = [f for f in self.ls.verification.fixes(diag, await self.fixes(diag, owner)) if self._still_analysed(owner, f)]
            for fix in fixes:
                title = fix.title + outcome_suffix(fix.verification, diag.code)
                action = types.CodeAction(title=title, kind=types.CodeActionKind.QuickFix, diagnostics=[lsp_diag], is_preferred=fix.is_preferred or None)
                if lazy:
                    action.data = {
                        "uri": uri,
                        "version": version,
                        "sha": current_sha,
                        "fix": fix_id(fix),
                        "title": fix.title,
                        "diagnostic": diag.to_json(with_data=True),
                        "owner": owner,
                    }
                else:
                    action.edit = self.workspace_edit(fix)
                out.append(action)
        return out

    async def resolve(self, action: types.CodeAction) -> types.CodeAction:
        data: Any = action.data
        if action.edit is not None or not isinstance(data, dict):
            return action
        try:
            uri = str(data["uri"])
            diag = Diagnostic.from_json(data["diagnostic"])
            wanted = str(data["fix"])
            owner = str(data.get("owner") or diag.file)
        except (KeyError, TypeError, ValueError) as exc:
            raise JsonRpcInvalidParams(message=f"not an ExportLens code action: {exc}") from exc
        path = self.ls.place_of(uri)
        if path is None:
            raise JsonRpcInvalidParams(message="quick fixes are not available")
        fixes = await self.fixes(diag, owner)
        text, version = self.ls.runs.publisher.current_text(path)  # after the await: the newest version
        current = text if text is not None else self.read(path)
        if version != data.get("version") or current is None or text_hash(current) != data.get("sha"):
            raise JsonRpcContentModified(message="The document changed since this fix was offered; ask for fixes again")
        chosen = next((f for f in fixes if fix_id(f) == wanted and f.title == data.get("title")), None)
        if chosen is None or not self._still_analysed(owner, chosen):
            raise JsonRpcContentModified(message="This fix no longer applies to the document")
        action.edit = self.workspace_edit(chosen)
        return action

    # -- building edits -----------------------------------------------------------------------

    def workspace_edit(self, fix: Fix) -> types.WorkspaceEdit:
        """One versioned TextDocumentEdit per place (a file, a notebook's cell), in the order the fix lists them."""
        by_place: dict[str, list[types.TextEdit]] = {}
        for e in fix.edits:
            by_place.setdefault(place(e.file, e.cell), []).append(types.TextEdit(range=lsp_range(e.range), new_text=e.new_text))
        changes: list[types.TextDocumentEdit | types.CreateFile | types.RenameFile | types.DeleteFile] = []
        for where, edits in by_place.items():
            _, version = self.ls.runs.publisher.current_text(where)
            uri = self.ls.open_docs.get(where) or uri_of(where)
            changes.append(types.TextDocumentEdit(text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version), edits=list(edits)))
        return types.WorkspaceEdit(document_changes=changes)

    def _lsp_diag(self, diag: Diagnostic, params: types.CodeActionParams) -> types.Diagnostic:
        for d in params.context.diagnostics:
            decoded = from_lsp_data(d.data) if d.source == SOURCE else None
            if decoded is not None and decoded[0].code == diag.code and decoded[0].range == diag.range:
                return d
        return types.Diagnostic(range=lsp_range(diag.range), message=diag.message, code=diag.code, source=SOURCE)
