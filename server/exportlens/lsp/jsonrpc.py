"""A pygls protocol that answers every request, even the ones it cannot parse.

pygls 2.1.1 drops a request whose parameters do not structure (it logs "Unable to handle
message"), ignores requests after `shutdown` and messages with a wrong `jsonrpc` version: the
client then waits forever. Here each of those gets a JSON-RPC error response instead. It also
pins the position encoding to UTF-16, the unit every range of `exportlens.model` is counted in.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from lsprotocol import types
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

logger = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602


@dataclass
class UnparsedRequest:
    """A request whose parameters did not structure: it is answered with an error."""

    id: int | str | None
    method: str
    reason: str


def _request_id(data: dict[str, Any]) -> int | str | None:
    value = data.get("id")
    if isinstance(value, bool):
        return None
    return value if isinstance(value, (int, str)) else None


class ExportLensProtocol(LanguageServerProtocol):
    """LanguageServerProtocol that never leaves a request unanswered."""

    # (id, result) of an `initialize` already answered before pygls was imported (lsp/handshake.py):
    # the replayed request sets the server up, and its second answer is not sent
    answered_early: tuple[Any, dict[str, Any]] | None = None

    def _send_data(self, data: Any) -> None:
        early = self.answered_early
        if early is not None and getattr(data, "id", None) == early[0] and not hasattr(data, "method"):
            self.answered_early = None
            mine = self._converter.unstructure(getattr(data, "result", None))
            if mine != early[1]:
                logger.warning("the early initialize answer differed from the server's: %s != %s", early[1], mine)
            return
        super()._send_data(data)

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except Exception as exc:
            if isinstance(data, dict) and "id" in data and "method" in data:
                cause = exc.__cause__ or exc
                return UnparsedRequest(_request_id(data), str(data.get("method")), f"{type(cause).__name__}: {cause}"[:500])
            raise

    def send_error(self, msg_id: int | str | None, code: int, message: str) -> None:
        """A raw JSON-RPC error response (the id may be null, as the spec asks when unknown)."""
        self._send_data({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}})

    def handle_message(self, message: Any) -> None:
        if isinstance(message, UnparsedRequest):
            logger.warning("invalid params for %s: %s", message.method, message.reason)
            self.send_error(message.id, INVALID_PARAMS, f"Invalid params for {message.method}: {message.reason}")
            return
        if isinstance(message, dict):  # JSON object without "jsonrpc"
            if "id" in message and "method" in message:
                self.send_error(_request_id(message), INVALID_REQUEST, "Invalid request: 'jsonrpc' must be \"2.0\"")
            return
        if not hasattr(message, "jsonrpc"):  # an array, a string, a number...
            self.send_error(None, INVALID_REQUEST, "Invalid request: a JSON-RPC message must be an object")
            return
        is_request = hasattr(message, "method") and hasattr(message, "id")
        if is_request and message.jsonrpc != self.VERSION:
            self.send_error(message.id, INVALID_REQUEST, "Invalid request: 'jsonrpc' must be \"2.0\"")
            return
        if is_request and self._shutdown and message.method != types.EXIT:
            self.send_error(message.id, INVALID_REQUEST, "The server is shutting down")
            return
        super().handle_message(message)

    def answer_parse_error(self, error: Exception) -> None:
        """Called for a body that is not JSON: its id is unknown, so the answer's id is null."""
        if isinstance(error, (json.JSONDecodeError, UnicodeDecodeError)):
            self.send_error(None, PARSE_ERROR, f"Parse error: {error}")

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        """`$/cancelRequest`: pygls only cancels the response; also stop the work behind it."""
        super()._handle_cancel_notification(msg_id)
        cancel = getattr(self._server, "cancel_request", None)
        if cancel is not None:
            cancel(msg_id)

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Generator[Any, Any, types.InitializeResult]:
        general = params.capabilities.general
        if general is not None and general.position_encodings:
            # Our ranges are UTF-16 code units; pygls would otherwise pick the client's first choice.
            general.position_encodings = [types.PositionEncodingKind.Utf16]
        return (yield from super().lsp_initialize(params))
