"""Requests pygls cannot parse still get an answer (raw JSON-RPC over stdio, no torch runs)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from lsp_helpers import RawServer

pytestmark = pytest.mark.quick


@pytest.fixture(scope="module")
def raw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawServer]:
    root = tmp_path_factory.mktemp("raw")
    server = RawServer(root)
    reply = server.initialize(root, trusted=False)
    caps = reply["result"]["capabilities"]
    assert caps["positionEncoding"] == "utf-16"
    assert caps["codeActionProvider"] == {"codeActionKinds": ["quickfix"], "resolveProvider": True}
    assert caps["executeCommandProvider"]["commands"] == ["exportlens.runDraftExport", "exportlens.makeExportable", "exportlens.saveOpProfiles"]
    yield server
    server.close()


def test_invalid_params_are_answered(raw: RawServer) -> None:
    rid = raw.request("textDocument/hover", {"textDocument": {"uri": 5}, "position": "top"})
    got = raw.wait_response(rid)
    assert got["error"]["code"] == -32602 and "textDocument/hover" in got["error"]["message"]


def test_missing_params_are_answered(raw: RawServer) -> None:
    rid = raw.request("textDocument/codeAction", None)
    assert raw.wait_response(rid)["error"]["code"] == -32602


def test_unknown_method_is_answered(raw: RawServer) -> None:
    rid = raw.request("exportlens/nothingHere", {})
    assert raw.wait_response(rid)["error"]["code"] == -32601


def test_wrong_jsonrpc_version_is_answered(raw: RawServer) -> None:
    rid = raw.request("textDocument/codeLens", {"textDocument": {"uri": "file:///x.py"}}, jsonrpc="1.0")
    assert raw.wait_response(rid)["error"]["code"] == -32600


def test_not_json_gets_a_parse_error_with_null_id(raw: RawServer) -> None:
    raw.send_bytes(b'{"jsonrpc": "2.0", "id": 99, "method": ')
    assert raw.wait_response(None)["error"]["code"] == -32700
    raw.send_bytes(b"[1, 2, 3]")
    assert raw.wait_response(None)["error"]["code"] == -32600


def test_bad_command_arguments_are_answered(raw: RawServer) -> None:
    rid = raw.request("workspace/executeCommand", {"command": "exportlens.runDraftExport", "arguments": [{"no": "uri"}]})
    got = raw.wait_response(rid)
    assert got.get("result") == {"ran": False, "reason": "untrusted"}  # untrusted: refused before reading arguments
    rid = raw.request("workspace/executeCommand", {"command": "exportlens.noSuchCommand"})
    assert raw.wait_response(rid)["error"]["code"] == -32602


def test_resolve_of_a_foreign_action_is_answered(raw: RawServer) -> None:
    rid = raw.request("codeAction/resolve", {"title": "x", "data": {"uri": "file:///nope.py"}})
    assert raw.wait_response(rid)["error"]["code"] == -32602


def test_server_is_still_alive(raw: RawServer, tmp_path: Path) -> None:
    rid = raw.request("textDocument/codeLens", {"textDocument": {"uri": (tmp_path / "a.py").as_uri()}})
    assert raw.wait_response(rid)["result"] == []
    assert raw.proc.poll() is None
