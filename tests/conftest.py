"""Shared fixtures: one warm engine for the whole session, driven from synchronous tests, and the
runs many tests assert on (every example through the engine, the plain-export oracle on examples/),
each made once per test run and handed out as a copy."""

from __future__ import annotations

import asyncio
import copy
import fcntl
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "server"))
# The results cache is off for the whole suite (the CLI, the server and pytest runs it starts inherit
# this): tests that check the same examples many times test a run, and never write the user's ~/.cache.
# The cache's own tests turn it on with a folder of their own (tests/test_cache.py).
os.environ["EXPORTLENS_NO_CACHE"] = "1"

from exportlens.engine import Engine, EngineSettings, FileResult  # noqa: E402
from exportlens.model import Report  # noqa: E402

EXAMPLES = ROOT / "examples"
# The expected diagnostics of every bundled example, shared with the e2e tests (tests/e2e/expectations.ts).
EXPECTED_EXAMPLES: dict[str, list[dict[str, Any]]] = json.loads((EXAMPLES / "EXPECTED.json").read_text(encoding="utf-8"))["examples"]
SEVERITY_NAMES = {1: "error", 2: "warning", 3: "information", 4: "hint"}

# -- tiers: every test file says which one it is in, with one line after its imports ------------------
# `make check` runs `pytest -m quick` (a new quick file is picked up by its marker); `make test` runs all.
TIERS = {
    "quick": "needs no torch run (no worker, no CLI or server that starts one, no oracle): `make check` runs it, and `make test`",
    "torch": "runs real torch (a worker, the CLI, a language server, an oracle in a fresh interpreter): only `make test`",
}


def tier_problem(file: str, tiers: list[str]) -> str | None:
    """Why `file` (marked with `tiers`) is not in exactly one tier, and how to put it in one; None when it is."""
    if len(tiers) == 1:
        return None
    if tiers:
        return f"{file}: in {len(tiers)} tiers ({', '.join(tiers)}); keep exactly one in its `pytestmark`"
    return (
        f"{file}: in no tier. Add one line after its imports: `pytestmark = pytest.mark.quick` if it needs no torch run "
        "(`make check` runs it), else `pytestmark = pytest.mark.torch` (only `make test` runs it); in an existing "
        "`pytestmark` list, put the tier first. TIERS in tests/conftest.py says what each tier holds."
    )


def pytest_configure(config: pytest.Config) -> None:
    for name, meaning in TIERS.items():
        config.addinivalue_line("markers", f"{name}: {meaning}")


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects: a file without a tier must fail `make check` too, not vanish from it
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    problems: dict[str, str] = {}
    for item in items:
        module = item.getparent(pytest.Module)
        if module is None or not item.path.is_relative_to(ROOT / "tests"):
            continue  # not a test file of ours: e.g. `--exportlens` targets, when a run the tests start collects tests/fixtures/
        file = os.path.relpath(item.path, ROOT)
        own = [m.name for m in module.own_markers if m.name in TIERS]
        problem = tier_problem(file, own)
        if problem is None and {m.name for m in item.iter_markers() if m.name in TIERS} != set(own):
            problem = f"{file}: {item.name} has a tier of its own; tiers are per file (its `pytestmark`)"
        if problem:
            problems.setdefault(file, problem)
    if problems:
        raise pytest.UsageError("every test file is in exactly one tier:\n" + "\n".join(problems[f] for f in sorted(problems)))


TRIPWIRE = Path(__file__).with_name("tripwire")  # its sitecustomize.py logs a child process's `import torch`


@pytest.fixture(autouse=True)
def _quick_runs_no_torch(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A quick test imports no torch, neither here nor in a Python process it starts (a worker, a CLI,
    a server that starts one) that inherits its environment: the tier would then be neither quick nor
    what `make check` says it is."""
    if request.node.get_closest_marker("quick") is None:
        yield
        return
    log = tmp_path_factory.mktemp("torch-imports") / "log"
    monkeypatch.setenv("EXPORTLENS_TEST_TORCH_LOG", str(log))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(TRIPWIRE), os.environ.get("PYTHONPATH")) if p))
    had_torch = "torch" in sys.modules  # a torch test before it in this process may have imported it
    yield
    imported = not had_torch and "torch" in sys.modules
    assert not imported, "a quick test imported torch: mark its file `pytestmark = pytest.mark.torch`"
    assert not log.exists(), f"a quick test started a process that imported torch (mark its file torch):\n{log.read_text()}"


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


T = TypeVar("T")


def once_per_run(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[], T]) -> T:
    """`make()` once per test run. Alone, that is once per session; under pytest-xdist each worker
    process has its own session, so the first worker to ask makes it and leaves it pickled in the
    run's temp folder (shared by the workers), and the others wait for it there and read it."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return make()
    shared = tmp_path_factory.getbasetemp().parent / f"{name}.pickle"
    with open(shared.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also when `make` raises (the next asker tries)
        if shared.exists():
            return pickle.loads(shared.read_bytes())  # type: ignore[no-any-return]
        value = make()
        partial = shared.with_suffix(".partial")
        partial.write_bytes(pickle.dumps(value))
        partial.replace(shared)
        return value


class ExampleRuns:
    """Every file of examples/ checked once by the engine (a folder walk, as `exportlens check examples/`).

    Each call hands out a deep copy, so a test may change what it got without another test seeing it."""

    def __init__(self, results: dict[str, FileResult], report: Report) -> None:
        self._results, self._report = results, report

    def result(self, name: str | os.PathLike[str]) -> FileResult:
        """The FileResult of examples/`name` (relative to examples/, or a path inside it)."""
        path = Path(name)
        key = (path.relative_to(EXAMPLES) if path.is_absolute() else path).as_posix()
        return copy.deepcopy(self._results[key])

    def report(self) -> Report:
        """The whole walk's Report: its targets and diagnostics in `check_paths`' order."""
        return copy.deepcopy(self._report)


@pytest.fixture(scope="session")
def example_runs(engine: SyncEngine, tmp_path_factory: pytest.TempPathFactory) -> ExampleRuns:
    """Every example through the shared engine, once per test run (tests that change or re-run an
    example, or need other options, still run it themselves)."""

    def walk() -> ExampleRuns:
        results: dict[str, FileResult] = {}

        def keep(res: FileResult) -> None:
            results[Path(res.path).relative_to(EXAMPLES).as_posix()] = res

        report = engine.call(engine.engine.check_paths([str(EXAMPLES)], on_file=keep), timeout=1800)
        return ExampleRuns(results, report)

    return once_per_run(tmp_path_factory, "example_runs", walk)


PLAIN_ORACLE = Path(__file__).with_name("plain_dynamic.py")


def plain_export(*paths: str | os.PathLike[str], each: bool = False, timeout: float = 900) -> dict[str, Any]:
    """tests/plain_dynamic.py (plain `torch.export.export`, no ExportLens code running torch) on
    `paths`, in a fresh interpreter: {"<file relative to its folder>:<target>": verdict}; `each`:
    {path: that path's own object}, each path judged apart (a fork per path of one interpreter)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "server")}
    argv = [sys.executable, str(PLAIN_ORACLE), *(["--each"] if each else []), *map(str, paths)]
    out = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout)
    assert out.returncode == 0, out.stderr[-3000:]
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.fixture(scope="session")
def _plain_truth_once(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    return once_per_run(tmp_path_factory, "plain_truth", lambda: plain_export(EXAMPLES))


@pytest.fixture()
def plain_truth(_plain_truth_once: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Plain export's verdict on every export target of examples/ (keys relative to examples/),
    made once per test run; each test gets its own copy."""
    return copy.deepcopy(_plain_truth_once)


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


def kill_mid_run(command: list[str], mark: Path, *, env: dict[str, str], cwd: Path, while_running: Callable[[], None] = lambda: None) -> None:
    """Start `command` (an `exportlens check`) in a session of its own and SIGKILL it once the user's
    code it runs writes `mark` (a closed laptop, the OOM killer: no chance to clean up), then its
    process group too (the worker it started). `while_running` is called just before the kill."""
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 240  # a cold worker imports torch first
        while not mark.exists():
            assert proc.poll() is None, "the check ended before the code that writes the mark ran"
            assert time.monotonic() < deadline, "the code that writes the mark never ran"
            time.sleep(0.05)
        while_running()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the worker, if it outlived the CLI
        except ProcessLookupError:
            pass
        proc.wait(30)
