"""pytest plugin: every ExportLens target becomes a test item (`pytest --exportlens PATH`).

Why: a team already runs pytest over its model zoo; as items, targets get pytest-xdist
(spread over cores), CI sharding, `-k` selection and JUnit XML for free. A file that declares
targets (found statically, as the CLI does) is collected as one node whose children are its
targets, `path/file.py::<target name>`; a Jupyter notebook likewise, its code cells run as one
script as `exportlens check` does (`nb.ipynb::export at nb.ipynb:cell 4:1`). A finding (error or
warning) fails the item with the diagnostic text and `file:line:col` (`nb.ipynb:cell N:line:col`). The pytest process never imports torch: the engine runs
the targets in its worker process, once per file (the items of a file share that run).

Enable with `-p exportlens.pytest_plugin --exportlens` (or just `--exportlens` when ExportLens
is installed: its `pytest11` entry point loads the plugin, which stays inert without the flag).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from exportlens import document
from exportlens.document import SUFFIXES
from exportlens.model import Diagnostic, TargetResult, text_lines
from exportlens.options import DEFAULT_TIMEOUT

FAILED = ("error", "timeout", "crashed")
CACHED = "exportlens_cached"  # an item's user property: its target was reused, from the run it names
_KEY = pytest.StashKey["_Runner"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("exportlens", "ExportLens: torch.export / compile / trace targets as test items")
    group.addoption("--exportlens", action="store_true", default=False, help="collect every ExportLens target in the given paths as a test item")
    group.addoption(
        "--exportlens-timeout", type=float, default=None, metavar="S", help=f"seconds per file (default: pyproject's timeout, else {DEFAULT_TIMEOUT:.0f})"
    )
    group.addoption(
        "--exportlens-python", default=None, metavar="PYTHON", help="interpreter with torch for the worker (default: pyproject's python, else this one)"
    )
    group.addoption("--exportlens-cache-dir", default=None, metavar="DIR", help="keep the results cache in DIR (default: pyproject's cache-dir, else ~/.cache)")
    group.addoption("--exportlens-no-cache", action="store_true", default=False, help="run every target, reusing and keeping no results")
    group.addoption(
        "--exportlens-html",
        default=None,
        metavar="PATH",
        help="write one HTML page of every target's findings, with verified fixes, to PATH (pytest-xdist workers' results combined)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "exportlens: an ExportLens target collected by --exportlens")
    if config.getoption("exportlens"):
        config.stash[_KEY] = _Runner(config)
    if config.getoption("exportlens_html"):
        if not config.getoption("exportlens"):
            raise pytest.UsageError("--exportlens-html needs --exportlens")
        from exportlens.report.pytest_html import HtmlReport

        config.pluginmanager.register(HtmlReport(config, config.stash[_KEY]), "exportlens-html")


def pytest_unconfigure(config: pytest.Config) -> None:
    runner = config.stash.get(_KEY, None)
    if runner is not None:
        runner.close()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    runner = parent.config.stash.get(_KEY, None)
    if runner is None or file_path.suffix not in SUFFIXES or not runner.wanted(file_path):
        return None
    return ExportLensFile.from_parent(parent, path=file_path)


class _Runner:
    """One engine per pytest process (each xdist worker has its own), on its own event loop thread."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.loop: asyncio.AbstractEventLoop | None = None  # started on the first run
        self.engine: Any = None
        self.results: dict[str, Any] = {}  # file → FileResult
        self.lock = threading.Lock()
        self.verify = bool(config.getoption("exportlens_html"))  # the page shows verified fixes: keep what verification compares

    def wanted(self, path: Path) -> bool:
        """A file that names targets; `exclude` globs apply unless the file was named itself."""
        from exportlens import project

        full = str(path.resolve())
        named = any(Path(a).resolve() == path.resolve() for a in self.config.args if os.path.isfile(a))
        cfg = project.load_config(project.find_root(full))
        return named or not project.excluded(full, cfg.root, cfg.exclude)

    def plan(self, path: Path) -> tuple[list[tuple[str, int | None]] | None, list[Diagnostic]]:
        """The document's targets as (name, line; None inside a notebook's cell), statically (no user code runs, no worker starts)."""
        doc = document.load(str(path))
        plan = self._engine().plan(doc)
        m = doc.mapper
        if plan.targets is None:
            return None, [m.diagnostic(d) for d in plan.diagnostics]
        shown = [m.target(TargetResult(t.name, plan.path, t.line, t.kind, "", 0.0)) for t in plan.targets.targets]
        return [(t.name, t.line if t.cell is None else None) for t in shown], [m.diagnostic(d) for d in plan.diagnostics]

    def check(self, path: Path) -> Any:
        key = str(path.resolve())
        with self.lock:
            if key not in self.results:
                self.results[key] = self._call(self._engine().check(document.load(key), outputs=self.verify))
            return self.results[key]

    def _engine(self) -> Any:
        if self.engine is None:
            from exportlens import project
            from exportlens.engine import Engine, EngineSettings

            first = self.config.args[0] if self.config.args else str(self.config.rootpath)
            cfg = project.load_config(project.find_root(os.path.abspath(first)))
            options = {"python": self.config.getoption("exportlens_python"), "timeout": self.config.getoption("exportlens_timeout")}
            folder = self.config.getoption("exportlens_cache_dir")
            settings = EngineSettings.resolved(
                cfg,
                **options,
                cache=False if self.config.getoption("exportlens_no_cache") else None,
                cache_dir=os.path.abspath(folder) if folder else None,
                knob="--exportlens-timeout",
                jobs=1,
            )
            self.engine = Engine(settings)
        return self.engine

    def _call(self, coro: Any) -> Any:
        if self.loop is None:
            self.loop = asyncio.new_event_loop()
            threading.Thread(target=self.loop.run_forever, name="exportlens-engine", daemon=True).start()
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self) -> None:
        if self.engine is not None and self.loop is not None:
            try:
                self._call(self.engine.close())
            finally:
                self.loop.call_soon_threadsafe(self.loop.stop)


class ExportLensFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        runner: _Runner = self.config.stash[_KEY]
        found, diags = runner.plan(self.path)
        if found is None:
            broken = [d for d in diags if d.code == "syntax-error"]
            if broken and "torch" in self.path.read_text(errors="replace"):
                raise self.CollectError(_describe(broken, self.config))
            return
        for name, line in found:
            yield ExportLensItem.from_parent(self, name=name, line=line)


class ExportLensFailure(Exception):
    """The target's findings, already formatted."""


class ExportLensItem(pytest.Item):
    def __init__(self, *, line: int | None, **kw: Any) -> None:
        super().__init__(**kw)
        self.line = line
        self.funcargs: dict[str, Any] = {}  # plugins that wrap every call (pytest-lsp 1.0) expect it on any item
        self.add_marker("exportlens")

    def runtest(self) -> None:
        runner: _Runner = self.config.stash[_KEY]
        result = runner.check(self.path)
        mine = [d for d in result.diagnostics if d.problem and self.name in d.target.split(", ")]
        target = next((t for t in result.targets if t.name == self.name), None)
        status = target.status if target is not None else None
        if target is not None and target.cached is not None:  # said in the JUnit XML and the summary
            self.user_properties.append((CACHED, target.cached.get("finished", "")))
        if mine:
            raise ExportLensFailure(_describe(mine, self.config))
        if status in FAILED:
            raise ExportLensFailure(f"{self.name}: {status}")
        if status is None and result.ran:
            raise ExportLensFailure(f"{self.name}: the file ran but this target reported nothing")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ExportLensFailure):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None if self.line is None else self.line - 1, f"exportlens: {self.name}"


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """`exportlens: 12 targets, 9 from the cache` when the run reused any (xdist workers' items too)."""
    reports = [r for group in terminalreporter.stats.values() for r in group]
    items = [r for r in reports if getattr(r, "when", None) == "call" and "exportlens" in getattr(r, "keywords", {})]
    reused = sum(1 for r in items if any(name == CACHED for name, _ in getattr(r, "user_properties", ())))
    if reused:
        terminalreporter.write_line(f"exportlens: {len(items)} target{'s' if len(items) != 1 else ''}, {reused} from the cache")


def _describe(diags: list[Diagnostic], config: pytest.Config) -> str:
    """Compiler-style lines, `file:line:col: error[code]: message`, paths relative to pytest's root."""

    def shown(file: str) -> str:
        try:
            rel = os.path.relpath(file, config.rootpath)
        except ValueError:
            return file
        return file if rel.startswith("..") else rel

    return "\n".join(line for d in diags for line in text_lines(d, shown, related=False))
