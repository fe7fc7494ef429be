"""Answer `initialize` before the language server's libraries are even imported.

Importing pygls and lsprotocol (one large module of attrs classes) takes most of a second, and an
editor waits for the `initialize` answer before it sends anything else. The answer is static (our
capabilities; only the position encoding depends on the client), so it is written straight away,
from the raw message; the request is then replayed to the real server, which sets itself up from
it exactly as usual, and its own answer to that one request is dropped (tests check the two agree).
Standard library only: this module is imported before pygls.
"""

from __future__ import annotations

import json
from typing import IO, Any

from exportlens import __version__
from exportlens.lsp.settings import Settings

COMMANDS = ["exportlens.runDraftExport", "exportlens.makeExportable", "exportlens.saveOpProfiles"]  # as the server registers them
# LSP 3.17 notebook sync (lsp/server.py NOTEBOOK_SYNC): Jupyter notebooks' Python cells, with save notifications
NOTEBOOK_SYNC = {"notebookSelector": [{"notebook": "jupyter-notebook", "cells": [{"language": "python"}]}], "save": True}


def capabilities(client: Any) -> dict[str, Any]:
    """The `initialize` result the server gives a client with these capabilities (the same for all:
    our ranges are UTF-16 code units whatever the client prefers, see jsonrpc.lsp_initialize)."""
    encoding = "utf-16"
    sync = _get(client, "textDocument", "synchronization")
    text_sync: dict[str, Any] = {"change": 2, "openClose": True, "save": {"includeText": False}}
    for key in ("willSave", "willSaveWaitUntil"):  # pygls says False only to a client that asked about it
        if isinstance(sync, dict) and sync.get(key) is not None:
            text_sync[key] = False
    caps: dict[str, Any] = {
        "codeActionProvider": {"codeActionKinds": ["quickfix"], "resolveProvider": True},
        "codeLensProvider": {"resolveProvider": False},
        "executeCommandProvider": {"commands": list(COMMANDS)},
        "hoverProvider": True,
        "positionEncoding": encoding,
        "textDocumentSync": text_sync,
        "workspace": {"fileOperations": {}, "workspaceFolders": {"changeNotifications": True, "supported": True}},
    }
    if isinstance(client, dict) and client.get("notebookDocument") is not None:  # as pygls: only to a client with notebooks
        caps["notebookDocumentSync"] = NOTEBOOK_SYNC
    return {"capabilities": caps, "serverInfo": {"name": "exportlens", "version": __version__}}


def _get(value: Any, *keys: str) -> Any:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def read_message(stream: IO[bytes]) -> bytes:
    """One framed message, headers included, exactly as it came (b"" at end of input)."""
    raw = b""
    length = None
    while True:
        line = stream.readline()
        if not line:
            return raw
        raw += line
        if line.lower().startswith(b"content-length:"):
            try:
                length = int(line.split(b":", 1)[1])
            except ValueError:
                return raw
        if line in (b"\r\n", b"\n"):
            break
    return raw + (stream.read(length) if length else b"")


class Replay:
    """A binary stdin that first gives back the bytes already read, then the real stream."""

    def __init__(self, head: bytes, stream: IO[bytes]) -> None:
        self.head = head
        self.stream = stream

    def readline(self) -> bytes:
        if self.head:
            line, sep, rest = self.head.partition(b"\n")
            self.head = rest
            return line + sep if sep or not rest else line
        return self.stream.readline()

    def read(self, n: int = -1) -> bytes:
        if self.head:
            out, self.head = self.head[:n], self.head[n:]
            if len(out) < n:
                out += self.stream.read(n - len(out))
            return out
        return self.stream.read(n)


def _initialize_body(raw: bytes) -> dict[str, Any] | None:
    """The JSON body of `raw` if it is a well-formed `initialize` request."""
    try:
        body = json.loads(raw.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in raw else raw.split(b"\n\n", 1)[1])
    except (ValueError, IndexError):
        return None
    if (
        not isinstance(body, dict)
        or body.get("method") != "initialize"
        or body.get("jsonrpc") != "2.0"
        or not isinstance(body.get("id"), (int, str))
        or not isinstance(body.get("params"), dict)
    ):
        return None
    return body


def answer_initialize(raw: bytes, out: IO[bytes]) -> tuple[Any, dict[str, Any]] | None:
    """If `raw` is an `initialize` request, answer it on `out` now; return (its id, the answer)."""
    body = _initialize_body(raw)
    if body is None:
        return None
    result = capabilities(body["params"].get("capabilities") or {})
    data = json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": result}).encode()
    out.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
    out.flush()
    return body["id"], result


def worker_to_start(raw: bytes) -> tuple[bool, str | None]:
    """(start the worker now?, its interpreter; None: the server's own) from the `initialize` request.

    As the server decides at `initialize` (lsp/server.py): a client that sends no `trusted` option
    is trusted; the interpreter is the `interpreter` setting of the initialization options.
    """
    body = _initialize_body(raw)
    opts = body["params"].get("initializationOptions") if body is not None else None
    if body is None or (isinstance(opts, dict) and opts.get("trusted") is False):
        return False, None
    return True, Settings.parse(opts.get("settings") if isinstance(opts, dict) else None).interpreter
