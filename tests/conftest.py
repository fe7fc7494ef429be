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

# -- tiers: every test file says which one it is in, with one line after its imports ------------------
# `make check` runs `pytest -m quick` (a new quick file is picked up by its marker); `make test` runs all.
TIERS = {
    "quick": "needs no torch run (no worker, no CLI or server with a worker, no oracle): `make check` runs it, and `make test`",
    "torch": "runs real torch (a worker, the CLI, a language server, an oracle in a fresh interpreter): `make test` only",
}


def tier_problem(file: str, tiers: list[str]) -> str | None:
    """Why `file` (marked with `tiers`) is not in exactly one tier, and how to put it in one; None when it is."""
    if len(tiers) == 1:
        return None
    if tiers:
        return f"{file}: in {len(tiers)} tiers ({', '.join(tiers)}); keep exactly one in its `pytestmark`"
    return (
        f"{file}: in no tier. Add one line after its imports: `pytestmark = pytest.mark.quick` (it {TIERS['quick']}) or "
        f"`pytestmark = pytest.mark.torch` (it {TIERS['torch']}); a file with a `pytestmark` list gets the tier first in it "
        "(see TIERS in tests/conftest.py)"
    )


def pytest_configure(config: pytest.Config) -> None:
    for name, meaning in TIERS.items():
        config.addinivalue_line("markers", f"{name}: {meaning}")


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects: a file without a tier must fail `make check` too, not vanish from it
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    problems: dict[str, str] = {}
    for item in items:
        module = item.getparent(pytest.Module)
        file = os.path.relpath(item.path, ROOT)
        own = [m.name for m in module.own_markers if m.name in TIERS] if module is not None else []
        problem = tier_problem(file, own)
        if problem is None and {m.name for m in item.iter_markers() if m.name in TIERS} != set(own):
            problem = f"{file}: {item.name} has a tier of its own; tiers are per file (its `pytestmark`)"
        if problem:
            problems.setdefault(file, problem)
    if problems:
        raise pytest.UsageError("every test file is in exactly one tier:\n" + "\n".join(problems[f] for f in sorted(problems)))


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
