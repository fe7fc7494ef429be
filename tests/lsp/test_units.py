"""The server's pure parts: carrying ranges across edits, and reading settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from exportlens.lsp.settings import Settings
from exportlens.lsp.textmap import line_map
from exportlens.model import Range

pytestmark = pytest.mark.quick

TEXT = "import torch\n\nclass M:\n    def f(self, x):\n        n = x.item()\n        if n > 2:\n            return 1\n"


def test_identical_text_keeps_ranges() -> None:
    assert line_map(TEXT, TEXT).range(Range.of(5, 11, 5, 16)) == Range.of(5, 11, 5, 16)


def test_lines_inserted_above_shift_the_range() -> None:
    new = "# a\n# b\n" + TEXT
    assert line_map(TEXT, new).range(Range.of(5, 11, 5, 16)) == Range.of(7, 11, 7, 16)


def test_lines_deleted_above_shift_the_range_up() -> None:
    new = TEXT.replace("import torch\n\n", "")
    assert line_map(TEXT, new).range(Range.of(5, 11, 5, 16)) == Range.of(3, 11, 3, 16)


def test_an_edited_line_drops_the_range() -> None:
    new = TEXT.replace("if n > 2:", "if n > 3:")
    lm = line_map(TEXT, new)
    assert lm.range(Range.of(5, 11, 5, 16)) is None
    assert lm.range(Range.of(4, 8, 4, 20)) == Range.of(4, 8, 4, 20)  # the line above is untouched


def test_a_multi_line_range_split_by_an_insertion_is_dropped() -> None:
    new = TEXT.replace("        if n > 2:\n", "        # note\n        if n > 2:\n")
    assert line_map(TEXT, new).range(Range.of(4, 8, 5, 16)) is None


def test_settings_parse_and_fall_back() -> None:
    s = Settings.parse({"exportlens": {"interpreter": ["/opt/py/bin/python", "-X"], "timeoutSeconds": 30, "run": "manual", "targets": ["m.py:make", 3]}})
    assert (s.interpreter, s.timeout_seconds, s.run, s.targets) == ("/opt/py/bin/python", 30.0, "manual", ["m.py:make"])
    bad = Settings.parse({"interpreter": 5, "timeoutSeconds": -1, "run": "always", "targets": "x"}, s)
    assert (bad.interpreter, bad.timeout_seconds, bad.run, bad.targets) == (None, 30.0, "manual", ["m.py:make"])
    assert Settings.parse(None) == Settings()
    assert Settings.parse({"compileBackend": "inductor"}).compile_backend == "inductor"
    assert Settings.parse({"compileBackend": "tensorrt"}, s).compile_backend == "eager"
    assert Settings.parse({"interpreter": "  "}).interpreter is None


class _Doc:
    def __init__(self, source: str, version: int) -> None:
        self.source, self.version = source, version


class _Host:
    """Just enough of the server for the publisher to read the editor's text."""

    def __init__(self, path: str, text: str, version: int) -> None:
        self.uri = f"file://{path}"
        self.open_docs = {path: self.uri}
        self.workspace = type("W", (), {"text_documents": {self.uri: _Doc(text, version)}})()


def test_line_maps_are_keyed_by_the_texts_not_the_version() -> None:
    """Two runs at the same editor version (a half-written file, then the real one) must not share a map."""
    from exportlens.lsp.publisher import OwnerResult, Publisher
    from exportlens.model import ERROR, Diagnostic

    path = "/ws/m.py"
    runs = Publisher(_Host(path, TEXT, 3))  # type: ignore[arg-type]
    diag = Diagnostic(path, Range.of(5, 11, 5, 16), ERROR, "data-dependent-guard", "n > 2", "m")
    runs.results[path] = OwnerResult(path, [diag], [], {path: ""}, 0.0)  # analysed an empty file
    assert runs.diagnostics_in(path) == []  # nothing of it can be placed on the editor's text
    runs.results[path] = OwnerResult(path, [diag], [], {path: TEXT}, 0.0)  # the same version, the real text
    assert [d.range for d, _, _ in runs.diagnostics_in(path)] == [Range.of(5, 11, 5, 16)]


def test_a_long_file_maps_in_linear_time() -> None:
    import time

    old = "".join("x = 1\n\n" if i % 2 else f"v{i} = {i}\n" for i in range(20_000))
    new = "# one line added at the top\n" + old
    started = time.perf_counter()
    lm = line_map(old, new)
    assert lm.range(Range.of(19_000, 0, 19_000, 4)) == Range.of(19_001, 0, 19_001, 4)
    assert time.perf_counter() - started < 2.0  # difflib over all of it took seconds


class _SettingsHost:
    """Just enough of the server for the engine adapter: its settings and a workspace without a folder."""

    def __init__(self) -> None:
        self.settings = Settings()
        self.workspace = type("W", (), {"root_path": None})()

    def log_worker(self, line: str) -> None:
        pass


def test_a_settings_change_builds_a_new_engine_on_the_same_worker() -> None:
    """An engine is never changed in place: other settings mean another engine, and for the same
    interpreter it keeps the worker (a cold one is seconds); another interpreter gets its own."""
    import asyncio
    import sys

    from exportlens.lsp.engines import Engines

    async def scenario() -> None:
        host = _SettingsHost()
        engines = Engines(host)  # type: ignore[arg-type]
        first = engines.current()
        assert engines.current() is first  # nothing changed: the same engine
        host.settings = Settings.parse({"timeoutSeconds": 30, "compileBackend": "inductor", "jobs": 3})
        second = engines.current()
        assert second is not first and second.worker is first.worker
        assert (first.settings.timeout, first.settings.compile_backend) == (120.0, "eager")  # the runs in flight on it keep theirs
        assert (second.settings.timeout, second.settings.compile_backend, second.settings.jobs) == (30.0, "inductor", 3)
        assert second.worker.slots.size == 3 and not engines.superseded(first)
        host.settings = Settings.parse({"interpreter": sys.executable}, host.settings)
        third = engines.current()
        assert third.worker is not second.worker and engines.superseded(second)
        await engines.close()
        assert first.worker.closed and third.worker.closed

    asyncio.run(scenario())


def test_a_save_runs_the_owners_whose_run_imported_or_read_the_saved_file(tmp_path: Path) -> None:
    """A helper's save runs every file whose last run imported it (the record of its job,
    worker/dependencies.py, whether or not the results cache is on) or has a finding in it."""
    from exportlens.lsp.engines import Engines
    from exportlens.lsp.plans import Plans
    from exportlens.lsp.publisher import OwnerResult

    for name, text in {"helper.py": "A = 1\n", "config.json": "{}", "other.py": "B = 2\n"}.items():
        (tmp_path / name).write_text(text)
    a, b, helper, config = (str(tmp_path / n) for n in ("a.py", "b.py", "helper.py", "config.json"))

    class _Publisher:
        results = {a: OwnerResult(a, [], [], {}, 1.0, depends=[a, helper]), b: OwnerResult(b, [], [], {}, 1.0, depends=[b, config])}

        def current_text(self, path: str) -> tuple[None, None]:
            return None, None  # not open in the editor: the disk's

    plans = Plans(_SettingsHost(), Engines(_SettingsHost()), _Publisher())  # type: ignore[arg-type]
    assert plans.owners_for_save(helper) == [a]
    assert plans.owners_for_save(config) == [b]
    assert plans.owners_for_save(str(tmp_path / "other.py")) == []
