"""`initialize` is answered before pygls is imported: the early answer must be exactly what the
server itself computes, for every kind of client, and the server must still set itself up."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from typing import Any

import pytest
import pytest_lsp
from lsp_framing import read_messages
from lsp_helpers import ROOT
from lsprotocol import types
from pygls.protocol import default_converter

from exportlens.lsp import handshake
from exportlens.lsp.server import create_server

pytestmark = pytest.mark.quick


def _pygls_answer(caps: types.ClientCapabilities) -> dict[str, Any]:
    server = create_server()
    params = types.InitializeParams(capabilities=caps, initialization_options={"trusted": False})
    steps = server.protocol.lsp_initialize(params)
    try:
        handler, args, _ = next(steps)
        steps.send(handler(*args))
    except StopIteration as done:
        return default_converter().unstructure(done.value)
    raise AssertionError("lsp_initialize did not finish")


@pytest.mark.parametrize("client", ["visual-studio-code", "neovim", "utf-8-first"])
def test_the_early_answer_is_the_servers_own(client: str) -> None:
    if client == "utf-8-first":
        caps = types.ClientCapabilities(general=types.GeneralClientCapabilities(position_encodings=["utf-8", "utf-16"]))
    else:
        caps = pytest_lsp.client_capabilities(client)
    assert handshake.capabilities(default_converter().unstructure(caps)) == _pygls_answer(caps)


def test_replay_gives_back_exactly_what_was_read() -> None:
    msgs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}, {"jsonrpc": "2.0", "method": "initialized", "params": {}}]
    data = b"".join(b"Content-Length: %d\r\n\r\n" % len(b := json.dumps(m).encode()) + b for m in msgs)
    stream = io.BytesIO(data)
    first = handshake.read_message(stream)
    assert list(read_messages(handshake.Replay(first, stream))) == msgs  # type: ignore[arg-type]


def test_initialize_is_answered_once_and_at_once() -> None:
    """One answer to initialize (the early one), then the server works as usual."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "server")}
    msgs = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"processId": None, "rootUri": None, "capabilities": {}, "initializationOptions": {"trusted": False}},
        },
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "textDocument/hover",
            "params": {"textDocument": {"uri": "file:///nowhere.py"}, "position": {"line": 0, "character": 0}},
        },
        {"jsonrpc": "2.0", "id": 3, "method": "shutdown", "params": None},
        {"jsonrpc": "2.0", "method": "exit", "params": None},
    ]
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "exportlens", "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    for m in msgs:
        body = json.dumps(m).encode()
        proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    proc.stdin.flush()
    answers = [m for m in read_messages(proc.stdout) if "id" in m and "method" not in m]
    proc.wait(60)
    assert [a["id"] for a in answers] == [1, 2, 3]
    assert answers[0]["result"]["capabilities"]["hoverProvider"] is True
    assert answers[1]["result"] is None  # the hover was served by the real server, set up by the replay
    assert time.monotonic() - started < 60
