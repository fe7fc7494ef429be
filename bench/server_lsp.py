"""A tiny synchronous LSP client over stdio for the server benchmarks (not a test helper)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "lsp"))

from lsp_framing import read_messages  # noqa: E402  (shared with the raw-protocol tests)

PYTHON = sys.executable

CAPS: dict[str, Any] = {
    "window": {"workDoneProgress": True},
    "workspace": {"configuration": True, "codeLens": {"refreshSupport": True}},
    "textDocument": {
        "synchronization": {"didSave": True},
        "publishDiagnostics": {"relatedInformation": True, "codeDescriptionSupport": True, "dataSupport": True},
        "codeAction": {
            "codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["quickfix"]}},
            "isPreferredSupport": True,
            "disabledSupport": True,
            "dataSupport": True,
            "resolveSupport": {"properties": ["edit"]},
        },
        "hover": {"contentFormat": ["markdown"]},
    },
}


def server_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "server"), env.get("PYTHONPATH")) if p)
    return env


class Client:
    def __init__(self, cwd: Path) -> None:
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            [PYTHON, "-m", "exportlens", "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=server_env(), cwd=cwd
        )
        self.inbox: queue.Queue[tuple[float, dict[str, Any]]] = queue.Queue()
        self.ids = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for msg in read_messages(self.proc.stdout):
            self.inbox.put((time.perf_counter(), msg))

    def send(self, msg: dict[str, Any]) -> None:
        body = json.dumps(msg).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any, timeout: float = 60) -> tuple[float, Any]:
        """(seconds, result) of one request."""
        self.ids += 1
        rid = self.ids
        t0 = time.perf_counter()
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        msg = self.wait(lambda m: m.get("id") == rid and "method" not in m, timeout)[1]
        if "error" in msg:
            raise RuntimeError(msg["error"])
        return time.perf_counter() - t0, msg.get("result")

    def wait(self, pred: Any, timeout: float = 120, *, since: float = 0.0) -> tuple[float, dict[str, Any]]:
        """The first message matching `pred` received at or after `since` (perf_counter; earlier ones
        are passed over); answers the server's own requests meanwhile."""
        deadline = time.perf_counter() + timeout
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError("no matching message")
            t, msg = self.inbox.get(timeout=left)
            if "method" in msg and "id" in msg:
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": [None] if msg["method"] == "workspace/configuration" else None})
            if t >= since and pred(msg):
                return t, msg

    def initialize(self, root: Path, *, trusted: bool = True, settings: dict[str, Any] | None = None) -> float:
        """Seconds from process start to the initialize response."""
        self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": root.as_uri(),
                "capabilities": CAPS,
                "initializationOptions": {"trusted": trusted, "settings": settings or {}},
            },
        )
        self.notify("initialized", {})
        return time.perf_counter() - self.started

    def diagnostics(self, uri: str, timeout: float = 120) -> tuple[float, dict[str, Any]]:
        t, msg = self.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri, timeout)
        return t, msg["params"]

    def rss_mb(self) -> float:
        with open(f"/proc/{self.proc.pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def close(self) -> None:
        try:
            self.request("shutdown", None, 10)
            self.notify("exit", None)
            self.proc.wait(10)
        except Exception:
            self.proc.kill()
            self.proc.wait()


def percentile(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]
