"""Jupyter notebooks over LSP 3.17 notebook sync: run on save; diagnostics, fixes, hovers and lenses per cell.

A notebook runs when it is saved (never per keystroke), from the file on disk, through the
engine's notebook path: diagnostics come back as (cell index over ALL cells, range in the cell).
The client syncs cells as text documents with their own URIs, possibly only the code cells, so
a disk cell index is matched to a synced cell by position when the client syncs every cell, else
by the order of the code cells. Quick fixes are the engine's (already in cell coordinates) and
are offered only while the cell's text is exactly the text the run analysed; edits are versioned
`TextDocumentEdit`s on the cell's URI.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from lsprotocol import types

from exportlens import notebook, suppress
from exportlens.engine import Engine
from exportlens.lsp.convert import lsp_range, path_of, text_hash, to_lsp
from exportlens.lsp.host import Host
from exportlens.lsp.hover import hover_at, hover_markdown
from exportlens.lsp.progress import RunProgress, problems_text
from exportlens.model import ERROR, WARNING, Diagnostic, Fix, TargetResult

STALE = "The cell changed since ExportLens ran: save the notebook to run again, then apply the fix"


@dataclass
class NotebookResult:
    path: str
    kinds: list[str]  # each disk cell's kind, by index
    diagnostics: list[Diagnostic]
    targets: list[TargetResult]
    texts: dict[int, str]  # cell index → the cell text the run analysed
    published: set[str] = field(default_factory=set)  # cell URIs that show diagnostics


class Notebooks:
    def __init__(self, ls: Host, engine: Callable[[], Engine]) -> None:
        self.ls = ls
        self.engine = engine  # the runs' engine, for the current settings
        self.results: dict[str, NotebookResult] = {}  # notebook URI → last result
        self.tasks: dict[str, asyncio.Task[NotebookResult | None]] = {}

    # -- cells ----------------------------------------------------------------------------------

    def document(self, uri: str) -> types.NotebookDocument | None:
        try:
            return self.ls.workspace.get_notebook_document(notebook_uri=uri)
        except RuntimeError:
            return None

    def owner_of(self, cell_uri: str) -> types.NotebookDocument | None:
        try:
            return self.ls.workspace.get_notebook_document(cell_uri=cell_uri)
        except RuntimeError:
            return None

    @staticmethod
    def cell_uris(doc: types.NotebookDocument, kinds: list[str]) -> dict[int, str]:
        """Disk cell index → the URI of the synced cell that stands for it."""
        synced = list(doc.cells)
        if len(synced) == len(kinds):
            return {i: c.document for i, c in enumerate(synced)}
        code_cells = [c.document for c in synced if c.kind == types.NotebookCellKind.Code]
        disk_code = [i for i, k in enumerate(kinds) if k == "code"]
        return dict(zip(disk_code, code_cells, strict=False))

    def cell_text(self, cell_uri: str) -> tuple[str | None, int | None]:
        try:
            doc = self.ls.workspace.get_text_document(cell_uri)
        except RuntimeError:
            return None, None
        return doc.source, doc.version

    # -- running --------------------------------------------------------------------------------

    def on_save(self, uri: str) -> None:
        path = path_of(uri)
        if path is None or not path.endswith(notebook.SUFFIX):
            return
        old = self.tasks.get(uri)
        if old is not None and not old.done():
            old.cancel()  # the newest save wins; cancelling kills that worker job
        task = asyncio.ensure_future(self.run(uri, path))
        self.tasks[uri] = task
        task.add_done_callback(lambda t: None if t.cancelled() else t.exception())

    async def run(self, uri: str, path: str) -> NotebookResult | None:
        engine = self.engine()
        try:
            cells = notebook.read(path)
        except notebook.NotebookError as exc:
            self.ls.log(f"notebook {path}: {exc}", types.MessageType.Warning)
            cells = []
        me = asyncio.current_task()
        progress = RunProgress.start(self.ls, [os.path.basename(path)], lambda: me.cancel() if me else None)
        try:
            result = await engine.check_notebook(path, on_target=progress.target)
        except asyncio.CancelledError:
            progress.end("cancelled")
            raise
        except Exception as exc:  # an engine bug must not take the server down
            self.ls.log(f"run of {path} failed: {type(exc).__name__}: {exc}", types.MessageType.Error)
            progress.end(f"failed: {exc}")
            return None
        res = NotebookResult(path, [c.kind for c in cells], result.diagnostics, result.targets, {c.index: c.source for c in cells})
        old = self.results.get(uri)
        if old is not None:
            res.published = old.published
        self.results[uri] = res
        self.publish(uri)
        self.ls.refresh_code_lens()
        progress.end(problems_text(sum(1 for d in result.diagnostics if d.severity in (ERROR, WARNING))))
        return res

    def publish(self, uri: str) -> None:
        res = self.results.get(uri)
        doc = self.document(uri)
        if res is None or doc is None:
            return
        uris = self.cell_uris(doc, res.kinds)
        by_cell: dict[str, list[types.Diagnostic]] = {}
        for d in res.diagnostics:
            if d.cell is None or d.cell not in uris:
                continue  # a helper module's finding: the .py file's own publishing shows it
            text = res.texts.get(d.cell)
            by_cell.setdefault(uris[d.cell], []).append(to_lsp(d, text_sha=text_hash(text) if text is not None else None, owner=res.path))
        for cell_uri in sorted(set(by_cell) | res.published):
            _, version = self.cell_text(cell_uri)
            self.ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cell_uri, diagnostics=by_cell.get(cell_uri, []), version=version))
        res.published = set(by_cell)

    # -- features -------------------------------------------------------------------------------

    def _cell_of(self, cell_uri: str) -> tuple[str, NotebookResult, int] | None:
        doc = self.owner_of(cell_uri)
        res = self.results.get(doc.uri) if doc is not None else None
        if doc is None or res is None:
            return None
        index = next((i for i, u in self.cell_uris(doc, res.kinds).items() if u == cell_uri), None)
        return (doc.uri, res, index) if index is not None else None

    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        found = self._cell_of(params.text_document.uri)
        if found is None:
            return []
        _, res, index = found
        text, version = self.cell_text(params.text_document.uri)
        want = params.range
        out: list[types.CodeAction] = []
        for d in res.diagnostics:
            r = d.range
            if (
                d.cell != index
                or (r.end.line, r.end.character) < (want.start.line, want.start.character)
                or (want.end.line, want.end.character) < (r.start.line, r.start.character)
            ):
                continue
            lsp_diag = to_lsp(d, text_sha=None, owner=res.path)
            if text is None or text != res.texts.get(index):
                out.append(
                    types.CodeAction(
                        title="ExportLens: fix unavailable until the notebook is run again",
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[lsp_diag],
                        disabled=types.CodeActionDisabled(reason=STALE),
                    )
                )
                continue
            fixes = [f for f in d.fixes if all(e.cell == index for e in f.edits)]
            ignore = suppress.ignore_fix(text, res.path, d.range.start.line, d.code) if d.code not in suppress.NOT_SUPPRESSIBLE else None
            for fix in fixes + ([ignore] if ignore is not None else []):
                out.append(
                    types.CodeAction(
                        title=fix.title,
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[lsp_diag],
                        is_preferred=fix.is_preferred or None,
                        edit=self._edit(fix, params.text_document.uri, version),
                    )
                )
        return out

    def hover(self, cell_uri: str, position: types.Position) -> types.Hover | None:
        """The cell's findings under the cursor, in Markdown, as for a .py file."""
        found = self._cell_of(cell_uri)
        if found is None:
            return None
        _, res, index = found
        text = res.texts.get(index)  # the text the run analysed: the ranges and symbol lines are in it
        return hover_at((d for d in res.diagnostics if d.cell == index), position, lambda d: hover_markdown(d, text))

    @staticmethod
    def _edit(fix: Fix, cell_uri: str, version: int | None) -> types.WorkspaceEdit:
        edits = [types.TextEdit(range=lsp_range(e.range), new_text=e.new_text) for e in fix.edits]
        return types.WorkspaceEdit(
            document_changes=[types.TextDocumentEdit(text_document=types.OptionalVersionedTextDocumentIdentifier(uri=cell_uri, version=version), edits=edits)]
        )

    def code_lenses(self, cell_uri: str, run_command: str) -> list[types.CodeLens] | None:
        """Lenses for a notebook cell (None: not a notebook cell): "Run draft export" on each target's cell."""
        doc = self.owner_of(cell_uri)
        path = path_of(doc.uri) if doc is not None else None
        if doc is None or path is None:
            return None
        try:
            cells = notebook.read(path)
        except notebook.NotebookError:
            return []
        script = notebook.join(cells)
        uris = self.cell_uris(doc, [c.kind for c in cells])
        found = self.engine().plan(path, script.text).targets
        res = self.results.get(doc.uri)
        lenses = []
        for t in found.targets if found is not None else []:
            where = script.to_cell(t.line - 1)
            if where is None or uris.get(where[0]) != cell_uri:
                continue
            rng = types.Range(start=types.Position(line=where[1], character=0), end=types.Position(line=where[1], character=0))
            lenses.append(types.CodeLens(range=rng, command=types.Command(title="▶ Run draft export", command=run_command, arguments=[doc.uri])))
            if res is not None:
                n = sum(1 for d in res.diagnostics if d.severity in (ERROR, WARNING))
                lenses.append(types.CodeLens(range=rng, command=types.Command(title=f"{problems_text(n)} in this notebook", command="")))
        return lenses
