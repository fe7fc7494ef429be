"""LSP's stdio framing (`Content-Length` headers), read by hand: for the raw-protocol tests and
the server benchmarks, which send what a typed client cannot and time what comes back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any


def read_messages(stream: IO[bytes]) -> Iterator[dict[str, Any]]:
    """Every message the server writes, until its stdout closes."""
    while True:
        length = 0
        while True:
            line = stream.readline()
            if not line:
                return
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
            if line in (b"\r\n", b"\n"):
                break
        yield json.loads(stream.read(length))
