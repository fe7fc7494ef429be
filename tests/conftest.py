"""Shared fixtures: one warm engine for the whole session, driven from synchronous tests."""

from __future__ import annotations

import asyncio
import json
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
# The expected diagnostics of every bundled example, shared with the e2e tests (tests/e2e/expectations.ts).
EXPECTED_EXAMPLES: dict[str, list[dict[str, Any]]] = json.loads((EXAMPLES / "EXPECTED.json").read_text(encoding="utf-8"))["examples"]
SEVERITY_NAMES = {1: "error", 2: "warning", 3: "information", 4: "hint"}


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
        (os.path.basename(d.file), d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character, d.code) for d in result.diagnostics
    ]


ExampleSpan = tuple[str, int, int, int, int, str, str]


def example_spans(result: FileResult) -> list[ExampleSpan]:
    """(file relative to examples/, start line, start char, end line, end char, code, severity), as EXPECTED.json has them."""
    return [
        (
            Path(d.file).relative_to(EXAMPLES).as_posix(),
            d.range.start.line,
            d.range.start.character,
            d.range.end.line,
            d.range.end.character,
            d.code,
            SEVERITY_NAMES[d.severity],
        )
        for d in result.diagnostics
    ]


def expected_example_spans(name: str) -> list[ExampleSpan]:
    """What EXPECTED.json says checking examples/`name` gives, in `example_spans`' shape."""
    return [(e["file"], *e["range"], e["code"], e["severity"]) for e in EXPECTED_EXAMPLES[name]]
