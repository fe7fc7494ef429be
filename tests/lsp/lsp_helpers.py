"""Helpers for driving the real `exportlens serve` with pytest-lsp.

The client records every publishDiagnostics (not only the last per URI) and applies workspace
edits like an editor would: it refuses a TextDocumentEdit for another version of the document.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest_lsp
from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
WAIT = 90.0  # seconds: a cold worker imports torch first

SLOW_MODEL = '''"""Sleeps at import: a run long enough to cancel."""
import time

import torch

time.sleep(60)


class Same(torch.nn.Module):
    def forward(self, x):
        return x + 1


model = Same()
example_args = (torch.ones(2),)
'''

CRASH_MODEL = '''"""Dies in the middle of the export: the worker process exits."""
import os

import torch


class Dies(torch.nn.Module):
    def forward(self, x):
        os._exit(7)


model = Dies()
example_args = (torch.ones(2),)
'''


def server_config() -> ClientServerConfig:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "server"), env.get("PYTHONPATH")) if p)
    return ClientServerConfig(server_command=[sys.executable, "-m", "exportlens", "serve"], client_factory=make_client, server_env=env)


def make_client() -> LanguageClient:
    client = LanguageClient(converter_factory=default_converter)
    client.publishes = []  # type: ignore[attr-defined]
    client.docs = {}  # type: ignore[attr-defined]  # uri → [version, text]

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def publish(c: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        c.diagnostics[params.uri] = params.diagnostics
        c.publishes.append((time.monotonic(), params))  # type: ignore[attr-defined]

    client.applied_edits = []  # type: ignore[attr-defined]  # every workspace/applyEdit the server sent
    client.verifications = []  # type: ignore[attr-defined]  # (time, params) of exportlens/verification

    @client.feature("exportlens/verification")
    def verification(c: LanguageClient, params: Any) -> None:
        c.verifications.append((time.monotonic(), params))  # type: ignore[attr-defined]

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(c: LanguageClient, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        c.applied_edits.append(params)  # type: ignore[attr-defined]
        ok = False if getattr(c, "decline_edits", False) else apply_workspace_edit(c, params.edit)  # a user saying no
        return types.ApplyWorkspaceEditResult(applied=ok)

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def lens_refresh(c: LanguageClient, params: Any) -> None:
        c.lens_refreshes = getattr(c, "lens_refreshes", 0) + 1  # type: ignore[attr-defined]

    client.timed_progress = []  # type: ignore[attr-defined]  # (time, value) of every $/progress, in order with the publishes
    shown = DEFAULT_CLIENT_FEATURES[types.PROGRESS]

    @client.feature(types.PROGRESS)
    def progress(c: LanguageClient, params: types.ProgressParams) -> None:
        c.timed_progress.append((time.monotonic(), params.value))  # type: ignore[attr-defined]
        shown(c, params)

    for method, func in DEFAULT_CLIENT_FEATURES.items():
        if method not in (types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, types.PROGRESS):
            client.feature(method)(func)
    return client


def copy_examples(dest: Path) -> Path:
    ws = dest / "examples"
    shutil.copytree(EXAMPLES, ws, ignore=shutil.ignore_patterns("__pycache__"))
    return ws


def init_params(ws: Path, *, trusted: bool = True, settings: dict[str, Any] | None = None, client: str = "visual-studio-code") -> types.InitializeParams:
    uri = ws.as_uri()
    return types.InitializeParams(
        capabilities=pytest_lsp.client_capabilities(client),
        root_uri=uri,
        workspace_folders=[types.WorkspaceFolder(uri=uri, name=ws.name)],
        initialization_options={"trusted": trusted, "settings": settings or {}},
    )


# -- documents, as an editor keeps them --------------------------------------------------------


def open_doc(client: LanguageClient, path: Path) -> str:
    uri = path.as_uri()
    text = path.read_text()
    client.docs[uri] = [1, text]  # type: ignore[attr-defined]
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    return uri


def change_doc(client: LanguageClient, uri: str, text: str) -> int:
    doc = client.docs[uri]  # type: ignore[attr-defined]
    doc[0] += 1
    doc[1] = text
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=doc[0]),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    return int(doc[0])


def save_doc(client: LanguageClient, uri: str) -> None:
    text = client.docs[uri][1]  # type: ignore[attr-defined]
    Path(_path(uri)).write_text(text)
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))


def close_doc(client: LanguageClient, uri: str) -> None:
    client.docs.pop(uri, None)  # type: ignore[attr-defined]
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))


def _path(uri: str) -> str:
    from urllib.parse import unquote, urlparse

    return unquote(urlparse(uri).path)


def _offset(text: str, pos: types.Position) -> int:
    lines = text.splitlines(keepends=True)
    before = sum(len(line) for line in lines[: pos.line])
    line = lines[pos.line] if pos.line < len(lines) else ""
    units = line.encode("utf-16-le")[: pos.character * 2].decode("utf-16-le", "ignore")
    return before + len(units)


def apply_text_edits(text: str, edits: list[Any]) -> str:
    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: _offset(text, e.range.start)] + e.new_text + text[_offset(text, e.range.end) :]
    return text


def apply_workspace_edit(client: LanguageClient, edit: types.WorkspaceEdit) -> bool:
    """Apply like VS Code: a versioned edit for another version of an open document is refused."""
    for change in edit.document_changes or []:
        assert isinstance(change, types.TextDocumentEdit)
        uri = change.text_document.uri
        doc = client.docs.get(uri)  # type: ignore[attr-defined]
        if doc is not None and change.text_document.version is not None and change.text_document.version != doc[0]:
            return False
    for change in edit.document_changes or []:
        assert isinstance(change, types.TextDocumentEdit)
        uri = change.text_document.uri
        edits = [e for e in change.edits if isinstance(e, (types.TextEdit, types.AnnotatedTextEdit))]
        doc = client.docs.get(uri)  # type: ignore[attr-defined]
        if doc is None:
            Path(_path(uri)).write_text(apply_text_edits(Path(_path(uri)).read_text(), edits))
        else:
            change_doc(client, uri, apply_text_edits(doc[1], edits))
    return True


# -- waiting -----------------------------------------------------------------------------------


async def wait_for(predicate: Callable[[], Any], timeout: float = WAIT, what: str = "condition") -> Any:
    """Poll until `predicate()` is truthy; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        await asyncio.sleep(0.05)


def publishes_for(client: LanguageClient, uri: str, since: float = 0.0) -> list[types.PublishDiagnosticsParams]:
    return [p for t, p in client.publishes if p.uri == uri and t >= since]  # type: ignore[attr-defined]


def field_of(params: Any, name: str) -> Any:
    """A field of a notification's params, whether pygls gave them as a dict or as an object."""
    return params.get(name) if isinstance(params, dict) else getattr(params, name, None)


def is_partial(pub: types.PublishDiagnosticsParams) -> bool:
    """Published early: the user's export failed and the run is still finding the rest (draft export)."""
    return any(isinstance(d.data, dict) and d.data.get("partial") for d in pub.diagnostics)


async def next_publish(client: LanguageClient, uri: str, since: float, timeout: float = WAIT) -> types.PublishDiagnosticsParams:
    """The newest publish for `uri` after `since` that is a run's result (not an early, partial one)."""
    got = await wait_for(lambda: [p for p in publishes_for(client, uri, since) if not is_partial(p)], timeout, f"diagnostics for {uri}")
    return got[-1]


def spans(diags: Any) -> list[tuple[int, int, int, int, str]]:
    return sorted((d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character, str(d.code)) for d in diags)


def progress_kinds(client: LanguageClient) -> dict[str, list[Any]]:
    return {str(k): list(v) for k, v in client.progress_reports.items()}


class RawServer:
    """`exportlens serve` over raw stdio framing, for messages a typed client cannot send."""

    def __init__(self, cwd: Path | None = None) -> None:
        import queue
        import subprocess
        import threading

        env = server_config().server_env
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "exportlens", "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=cwd
        )
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.responses: dict[Any, dict[str, Any]] = {}
        self.notifications: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._ids = 0

    def _read(self) -> None:
        from lsp_framing import read_messages

        assert self.proc.stdout is not None
        for msg in read_messages(self.proc.stdout):
            self.messages.put(msg)

    def send_bytes(self, body: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def send(self, msg: Any) -> None:
        import json

        self.send_bytes(json.dumps(msg).encode())

    def request(self, method: str, params: Any, **extra: Any) -> Any:
        self._ids += 1
        msg = {"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params, **extra}
        self.send(msg)
        return self._ids

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait_response(self, msg_id: Any, timeout: float = 10.0) -> dict[str, Any]:
        """The response to `msg_id`; answers server → client requests with null meanwhile."""
        import queue

        deadline = time.monotonic() + timeout
        while msg_id not in self.responses:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no response to request {msg_id!r} within {timeout} s")
            try:
                msg = self.messages.get(timeout=left)
            except queue.Empty:
                continue
            if "method" in msg and "id" in msg:  # a request from the server (configuration, progress...)
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": [None] if msg["method"] == "workspace/configuration" else None})
            elif "method" in msg:
                self.notifications.append(msg)
            else:
                self.responses[msg.get("id")] = msg
        return self.responses.pop(msg_id)

    def initialize(self, root: Path, *, trusted: bool = True, settings: dict[str, Any] | None = None) -> dict[str, Any]:
        caps = default_converter().unstructure(pytest_lsp.client_capabilities("visual-studio-code"))
        rid = self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": root.as_uri(),
                "capabilities": caps,
                "initializationOptions": {"trusted": trusted, "settings": settings or {}},
            },
        )
        got = self.wait_response(rid, 30)
        self.notify("initialized", {})
        return got

    def close(self) -> None:
        try:
            rid = self.request("shutdown", None)
            self.wait_response(rid, 10)
            self.notify("exit", None)
            self.proc.wait(10)
        except Exception:
            self.proc.kill()
            self.proc.wait(10)


# -- notebooks, as VS Code syncs them (LSP 3.17): only the Python cells, each a text document ----


def cell_uri(notebook: Path, index: int) -> str:
    return f"vscode-notebook-cell:{notebook}#cell{index}"


def open_notebook(client: LanguageClient, notebook: Path, *, code_only: bool = True) -> dict[int, str]:
    """notebookDocument/didOpen with the notebook's cells (by default its code cells only, as a
    Python cell selector makes VS Code send them); returns disk cell index → cell URI."""
    import json

    cells = json.loads(notebook.read_text())["cells"]
    uris: dict[int, str] = {}
    lsp_cells, docs = [], []
    for i, cell in enumerate(cells):
        if code_only and cell["cell_type"] != "code":
            continue
        uri = cell_uri(notebook, i)
        uris[i] = uri
        text = "".join(cell["source"])
        code = cell["cell_type"] == "code"
        lsp_cells.append(types.NotebookCell(kind=types.NotebookCellKind.Code if code else types.NotebookCellKind.Markup, document=uri))
        docs.append(types.TextDocumentItem(uri=uri, language_id="python" if code else "markdown", version=1, text=text))
        client.docs[uri] = [1, text]  # type: ignore[attr-defined]
    client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(uri=notebook.as_uri(), notebook_type="jupyter-notebook", version=1, cells=lsp_cells),
            cell_text_documents=docs,
        )
    )
    return uris


def save_notebook(client: LanguageClient, notebook: Path) -> None:
    client.notebook_document_did_save(types.DidSaveNotebookDocumentParams(notebook_document=types.NotebookDocumentIdentifier(uri=notebook.as_uri())))
