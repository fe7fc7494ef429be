"""Shared fixtures: one warm engine for the whole session, driven from synchronous tests."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "server"))

from exportlens.engine import Engine, EngineSettings, FileResult  # noqa: E402

EXAMPLES = ROOT / "examples"


class SyncEngine:
    """A real Engine on its own event loop thread, so plain tests can call it."""

    def __init__(self, settings: EngineSettings) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.engine = Engine(settings)

    def call(self, coro: Any, timeout: float = 300) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def check(self, path: str | os.PathLike[str], **kw: Any) -> FileResult:
        return self.call(self.engine.check_file(str(path), **kw))

    def close(self) -> None:
        self.call(self.engine.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


@pytest.fixture(scope="session")
def engine() -> Iterator[SyncEngine]:
    eng = SyncEngine(EngineSettings(timeout=60, memory_mb=2048))
    yield eng
    eng.close()


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    """An empty project folder (it has a pyproject.toml, so it is its own root)."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\nversion = '0'\n")
    return tmp_path


@pytest.fixture(scope="session")
def examples_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("ws") / "examples"
    shutil.copytree(EXAMPLES, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def spans(result: FileResult) -> list[tuple[str, int, int, int, int, str]]:
    """(file name, start line, start char, end line, end char, code), 0-based as in LSP."""
    return [
        (os.path.basename(d.file), d.range.start.line, d.range.start.character, d.range.end.line,
         d.range.end.character, d.code)
        for d in result.diagnostics
    ]
