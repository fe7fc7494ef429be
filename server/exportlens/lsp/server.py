"""The exportlens language server: `exportlens serve` speaks LSP over stdio (pygls 2.x).

It never imports torch: runs go to the engine's warm worker process. It runs a document's
targets (a .py file on open and save, a notebook on save; setting `exportlens.run`), or on the
command `exportlens.runDraftExport`, with work-done progress and cancellation; publishes the
newest result per place (a file, a notebook's cell); and offers hover, CodeLens and quick fixes
from those results. Every handler is the same for a file and a notebook's cell: a URI becomes a
place (`place_of`), and the document behind it places everything. In an untrusted workspace
(initialization option `trusted: false`) it runs no user code at all and says so once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Coroutine
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from exportlens import __version__
from exportlens.document import PYTHON_SUFFIXES, Document
from exportlens.lsp.actions import Actions
from exportlens.lsp.convert import path_of
from exportlens.lsp.handshake import Replay
from exportlens.lsp.hover import hover_at, hover_markdown
from exportlens.lsp.jsonrpc import ExportLensProtocol
from exportlens.lsp.last_results import came_from
from exportlens.lsp.lenses import code_lenses
from exportlens.lsp.notebooks import Notebooks
from exportlens.lsp.runs import Runs, RunSummary
from exportlens.lsp.settings import RUN_ON_SAVE, SECTION, Settings
from exportlens.lsp.verification import FixVerification

RUN_COMMAND = "exportlens.runDraftExport"
MAKE_EXPORTABLE_COMMAND = "exportlens.makeExportable"
SAVE_PROFILES_COMMAND = "exportlens.saveOpProfiles"
# LSP 3.17 notebook sync: Jupyter notebooks' Python cells; the client tells us when the notebook is saved
NOTEBOOK_SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[types.NotebookDocumentFilterWithCells(cells=[types.NotebookCellLanguage(language="python")], notebook="jupyter-notebook")], save=True
)
UNTRUSTED_MESSAGE = (
    "ExportLens is off in this workspace because it is not trusted: it would have to run the workspace's code to analyse it. Trust the workspace to turn it on."
)


class _ClientLogHandler(logging.Handler):
    """Library warnings go to the client's log, never to stdout (stdout is the protocol)."""

    def __init__(self, ls: ExportLensServer) -> None:
        super().__init__(logging.WARNING)
        self.ls = ls
        self._busy = False

    def emit(self, record: logging.LogRecord) -> None:
        if self._busy or self.ls.protocol.writer is None:
            return
        self._busy = True
        try:
            self.ls.log(self.format(record).splitlines()[0][:2000], types.MessageType.Error if record.levelno >= logging.ERROR else types.MessageType.Warning)
        except Exception:
            pass
        finally:
            self._busy = False


class ExportLensServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("exportlens", __version__, protocol_cls=ExportLensProtocol, notebook_document_sync=NOTEBOOK_SYNC)
        self.settings = Settings()
        self.trusted = True
        self.told_untrusted = False
        self.told_unsupported = False  # "this torch has no draft_export" is said once per server start
        self.open_docs: dict[str, str] = {}  # place (a file, a notebook's cell) → the URI the client uses for it
        self.runs = Runs(self)
        self.actions = Actions(self)
        self.notebooks = Notebooks(self)
        self.verification = FixVerification(self)
        self.requests: dict[Any, asyncio.Task[Any]] = {}  # request id → its handler task (for $/cancelRequest)
        self._background: set[asyncio.Task[Any]] = set()

    # -- plumbing -----------------------------------------------------------------------------

    def log(self, message: str, kind: types.MessageType = types.MessageType.Log) -> None:
        if self.protocol.writer is None:
            return
        self.window_log_message(types.LogMessageParams(type=kind, message=message))

    def log_worker(self, line: str) -> None:
        self.log(f"[worker] {line}")

    def background(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Malformed input is answered (parse error) and logged, not shown as a pop-up."""
        proto = self.protocol
        if isinstance(proto, ExportLensProtocol):
            proto.answer_parse_error(error)
        self.log(f"{getattr(source, '__name__', source)}: {error}", types.MessageType.Error)

    def cancel_request(self, msg_id: Any) -> None:
        task = self.requests.get(msg_id)
        if task is not None and not task.done():
            task.cancel()

    def refresh_code_lens(self) -> None:
        caps = self.client_capabilities
        ws = caps.workspace if caps is not None else None
        if ws is not None and ws.code_lens is not None and ws.code_lens.refresh_support:
            self.background(self._refresh_lens())

    async def _refresh_lens(self) -> None:
        try:
            await asyncio.wait_for(self.workspace_code_lens_refresh_async(None), 5.0)
        except Exception as exc:
            self.log(f"codeLens refresh: {exc}")

    def can_run(self) -> bool:
        """False in an untrusted workspace, where no user code may run (said once)."""
        if self.trusted:
            return True
        self.tell_untrusted()
        return False

    def tell_untrusted(self) -> None:
        if not self.told_untrusted:
            self.told_untrusted = True
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Info, message=UNTRUSTED_MESSAGE))

    def tell_unsupported(self, message: str | None) -> None:
        """The worker's torch cannot draft-export: one notification per server start, then quiet."""
        if message and not self.told_unsupported:
            self.told_unsupported = True
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=message))

    async def pull_settings(self) -> None:
        caps = self.client_capabilities
        if caps is None or caps.workspace is None or not caps.workspace.configuration:
            return
        try:
            got = await asyncio.wait_for(self.workspace_configuration_async(types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)])), 5.0)
        except Exception as exc:
            self.log(f"workspace/configuration failed: {exc}", types.MessageType.Warning)
            return
        if got and isinstance(got[0], dict):
            self.apply_settings(got[0])

    def apply_settings(self, raw: Any) -> None:
        before = self.settings
        self.settings = Settings.parse(raw, before)
        if self.settings != before:
            self.log(f"settings: {vars(self.settings)}")
            if self.trusted and self.settings.interpreter != before.interpreter:
                self.background(self.runs.engines.warm_up())

    def place_of(self, uri: str) -> str | None:
        """The place a URI shows: a file's path, or the notebook cell it is synced as (None: neither)."""
        path = path_of(uri)
        return path if path is not None else next((p for p, u in self.open_docs.items() if u == uri), None)

    def track(self, doc: Document) -> None:
        self.notebooks.track(doc)

    def run_file_soon(self, path: str, *, explicit: bool = False) -> None:
        if self.can_run():
            task = self.runs.start(path, explicit=explicit)
            task.add_done_callback(_consume)

    def saved(self, path: str) -> None:
        """A document was saved: run it (and every owner whose findings are in it), setting `exportlens.run` permitting."""
        if self.settings.run != RUN_ON_SAVE:
            return
        if not self.trusted:
            self.tell_untrusted()
            return
        self.verification.cancel_touching(path, "saved")
        for owner in self.runs.plans.owners_for_save(path):
            self.run_file_soon(owner)

    async def run_command(self, args: tuple[Any, ...]) -> dict[str, Any] | None:
        """`[uri]` checks one file, `[]` every owner of the workspace; `[uri, {"draft": "always"}]` runs
        draft export too where plain export passes (its full report, crashes included)."""
        if not self.can_run():
            return {"ran": False, "reason": "untrusted"}
        options = args[1] if len(args) > 1 and isinstance(args[1], dict) else {}
        draft = "always" if options.get("draft") == "always" else None
        if args and args[0] is not None:
            path = _arg_path(args[0])
            if path is None:
                raise ValueError(f"{RUN_COMMAND} expects a file URI, got {args[0]!r}")
            summary = await self.runs.run_paths([path], explicit=True, draft=draft)
        else:
            owners = self.runs.plans.workspace_owners()
            if not owners:
                self.window_show_message(types.ShowMessageParams(type=types.MessageType.Info, message="ExportLens found no export target in this workspace."))
                return RunSummary([], 0, []).to_json() | {"ran": False}
            summary = await self.runs.run_paths(owners, explicit=False, draft=draft)
        return summary.to_json() | {"ran": True}


def _consume(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()


def _arg_path(arg: Any) -> str | None:
    """A command argument naming a file: a URI string, a path, or a VS Code Uri object."""
    if isinstance(arg, dict):
        arg = arg.get("uri") or arg.get("external") or (arg.get("path") if arg.get("scheme") == "file" else None)
    if not isinstance(arg, str) or not arg:
        return None
    if arg.startswith("file:"):
        return path_of(arg)
    return os.path.normpath(arg) if os.path.isabs(arg) else None


def _is_python(uri: str, language_id: str | None = None) -> bool:
    return language_id == "python" or uri.endswith(PYTHON_SUFFIXES)


def register_lifecycle(server: ExportLensServer) -> None:
    """initialize (trust, first settings), initialized (warm-up), shutdown, configuration changes."""

    @server.feature(types.INITIALIZE)
    def initialize(ls: ExportLensServer, params: types.InitializeParams) -> None:
        opts = params.initialization_options
        if isinstance(opts, dict):
            if isinstance(opts.get("trusted"), bool):
                ls.trusted = opts["trusted"]
            ls.apply_settings(opts.get("settings"))
        if ls.trusted:  # torch imports while the editor is still starting (opening files, asking settings)
            ls.background(ls.runs.engines.warm_up())

    @server.feature(types.INITIALIZED)
    async def initialized(ls: ExportLensServer, params: types.InitializedParams) -> None:
        if not ls.trusted:
            ls.tell_untrusted()
            return
        await ls.pull_settings()  # a different interpreter there starts its worker (apply_settings)

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: ExportLensServer, params: Any) -> None:
        await ls.verification.close()
        await ls.runs.close()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: ExportLensServer, params: types.DidChangeConfigurationParams) -> None:
        caps = ls.client_capabilities
        if caps is not None and caps.workspace is not None and caps.workspace.configuration:
            await ls.pull_settings()
        else:
            ls.apply_settings(params.settings)


def register_documents(server: ExportLensServer) -> None:
    """Open, close and save: which files run, and when (setting `exportlens.run`)."""

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: ExportLensServer, params: types.DidOpenTextDocumentParams) -> None:
        doc = params.text_document
        path = path_of(doc.uri)
        if path is None or not _is_python(doc.uri, doc.language_id):
            return
        ls.open_docs[path] = doc.uri
        ls.runs.publisher.republish(path)  # re-place them on the text the editor has
        if not ls.trusted or ls.settings.run != RUN_ON_SAVE:
            return
        if not ls.runs.plans.worth_running(path, doc.text):
            return
        done = ls.runs.publisher.results.get(path)
        if done is None or done.texts.get(path) != doc.text:
            ls.runs.last.show(path, doc.text)  # the last stored results at once, until the run replaces them
            ls.run_file_soon(path)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: ExportLensServer, params: types.DidChangeTextDocumentParams) -> None:
        path = path_of(params.text_document.uri)
        if path is not None:
            ls.verification.cancel_touching(path, "edited")

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: ExportLensServer, params: types.DidCloseTextDocumentParams) -> None:
        path = path_of(params.text_document.uri)
        if path is not None:
            ls.open_docs.pop(path, None)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: ExportLensServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        path = path_of(uri)
        if path is not None and _is_python(uri):
            ls.saved(path)


def register_notebooks(server: ExportLensServer) -> None:
    """Jupyter notebooks over LSP 3.17 notebook sync: their cells become places; show the last result on open, run on save."""

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_did_open(ls: ExportLensServer, params: types.DidOpenNotebookDocumentParams) -> None:
        path = ls.notebooks.opened(params.notebook_document.uri)
        if path is not None:
            ls.runs.publisher.republish(path)  # the cells have new URIs: show the last result on them
            if ls.trusted:
                ls.runs.last.show(path, run_follows=False)  # none yet in this server: the cache's last one of these cells, if it holds

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_did_change(ls: ExportLensServer, params: types.DidChangeNotebookDocumentParams) -> None:
        cells = params.change.cells
        if cells is not None and cells.structure is not None:
            ls.notebooks.changed(params.notebook_document.uri)
        path = path_of(params.notebook_document.uri)
        if path is not None and cells is not None and cells.text_content:
            ls.verification.cancel_touching(path, "edited")

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_did_close(ls: ExportLensServer, params: types.DidCloseNotebookDocumentParams) -> None:
        ls.notebooks.closed(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_did_save(ls: ExportLensServer, params: types.DidSaveNotebookDocumentParams) -> None:
        path = path_of(params.notebook_document.uri)
        if path is not None:
            ls.saved(path)


def register_code_actions(server: ExportLensServer) -> None:
    """Quick fixes from the published results, resolved lazily."""

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix], resolve_provider=True))
    async def code_action(ls: ExportLensServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        return await ls.actions.code_actions(params)

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def code_action_resolve(ls: ExportLensServer, params: types.CodeAction) -> types.CodeAction:
        return await ls.actions.resolve(params)


def register_hover(server: ExportLensServer) -> None:
    """The findings under the cursor, in Markdown."""

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: ExportLensServer, params: types.TextDocumentPositionParams) -> types.Hover | None:
        path = ls.place_of(params.text_document.uri)
        if path is None:
            return None
        await ls.runs.publisher.prepare(path)
        text, _ = ls.runs.publisher.current_text(path)
        results = ls.runs.publisher.results  # each diagnostic with the cache's mark of its owner's result
        items = [(diag, results[owner].cached) for diag, _sha, owner in ls.runs.publisher.diagnostics_in(path)]
        return hover_at(items, params.position, lambda d, cached: hover_markdown(d, text, ls.verification.for_hover(d), came_from=came_from(cached)))


def register_code_lens(server: ExportLensServer) -> None:
    """A run lens on each target, and the last run's problem count."""

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    def code_lens(ls: ExportLensServer, params: types.CodeLensParams) -> list[types.CodeLens]:
        where = ls.place_of(params.text_document.uri)
        if not ls.trusted or where is None:
            return []
        return code_lenses(ls.runs, where, RUN_COMMAND, MAKE_EXPORTABLE_COMMAND)


def register_commands(server: ExportLensServer) -> None:
    """`exportlens.runDraftExport`, `exportlens.makeExportable` and `exportlens.saveOpProfiles`."""

    @server.command(RUN_COMMAND)
    async def run_draft_export(ls: ExportLensServer, *args: Any) -> dict[str, Any] | None:
        msg_id = ls.protocol.msg_id
        task = asyncio.current_task()
        if msg_id is not None and task is not None:
            ls.requests[msg_id] = task
        try:
            return await ls.run_command(args)
        finally:
            ls.requests.pop(msg_id, None)

    @server.command(MAKE_EXPORTABLE_COMMAND)
    async def make_exportable(ls: ExportLensServer, *args: Any) -> dict[str, Any]:
        """Fix, verify, repeat on the editor's texts; one WorkspaceEdit the user confirms."""
        from exportlens.lsp.make_export import run_make_exportable

        msg_id = ls.protocol.msg_id
        task = asyncio.current_task()
        if msg_id is not None and task is not None:
            ls.requests[msg_id] = task
        try:
            return await run_make_exportable(ls, args)
        finally:
            ls.requests.pop(msg_id, None)

    @server.command(SAVE_PROFILES_COMMAND)
    async def save_op_profiles(ls: ExportLensServer, *args: Any) -> dict[str, Any]:
        """Run the file once more and write the custom-op profiles draft export saw (torch's YAML)."""

        def tell(message: str, kind: types.MessageType = types.MessageType.Info) -> None:
            ls.window_show_message(types.ShowMessageParams(type=kind, message=message))

        if not ls.trusted:
            tell(UNTRUSTED_MESSAGE)
            return {"saved": False, "reason": "untrusted"}
        path = path_of(args[0]) if args and isinstance(args[0], str) else None
        if path is None or not os.path.isfile(path):
            tell("ExportLens: Save op profiles needs a Python file (pass its URI).", types.MessageType.Warning)
            return {"saved": False, "reason": "no file"}
        with ls.runs.gate.foreground():
            result = await ls.runs.engines.current().check_file(path, save_op_profiles=True)
        written = [p for p in result.op_profiles if p.get("file")]
        if written:
            files = ", ".join(os.path.basename(p["file"]) for p in written)
            tell(f"ExportLens: wrote {files} ({', '.join(op for p in written for op in p['ops'])}).")
            return {"saved": True, "files": [p["file"] for p in written]}
        reason = next((p.get("error") for p in result.op_profiles), None) or "no export target of this file ran"
        tell(f"ExportLens: no op profiles saved: {reason}.", types.MessageType.Warning)
        return {"saved": False, "reason": reason}


# One registration function per feature; each takes the server and adds its handlers.
FEATURES = (register_lifecycle, register_documents, register_notebooks, register_code_actions, register_hover, register_code_lens, register_commands)


def create_server() -> ExportLensServer:
    server = ExportLensServer()
    for register in FEATURES:
        register(server)
    return server


def serve(first: bytes = b"", early: tuple[Any, dict[str, Any]] | None = None) -> None:
    """Run the server on stdin/stdout until the client says exit. `first`: the message already read
    (and, `early`, answered) before this module was imported (see lsp/handshake.py)."""
    server = create_server()
    if isinstance(server.protocol, ExportLensProtocol):
        server.protocol.answered_early = early
    handler = _ClientLogHandler(server)
    for name in ("pygls", "exportlens"):
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.propagate = False
    server.start_io(stdin=Replay(first, sys.stdin.buffer) if first else None)  # type: ignore[arg-type]  # readline + read
