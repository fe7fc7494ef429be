"""The results cache without torch: its key, what it keeps and refuses, what it trusts, and shards.

The real-torch side (the worker's record of what a run imported, edits that re-run exactly what
depends on them, a killed run, a read-only folder) is tests/test_cache.py.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest
from replay import CASES_BY_NAME, ReplayWorker, load_recording, result_json

from exportlens import cache, document, project, shards
from exportlens.engine import Engine, EngineSettings
from exportlens.protocol import JobEvent, JobSpec

pytestmark = pytest.mark.quick

JOB: JobSpec = {"file": "/p/m.py", "root": "/p", "main": False, "module_vars": True, "factories": [], "lines": {"model": 3}, "compile": False, "trace": False}
ENV = {"PATH": "/bin", "HOME": "/h"}


def _key(job: JobSpec = JOB, env: dict[str, str] = ENV, exports: bool = True, **kw: Any) -> str:
    return cache.key(job, python=kw.get("python"), memory_mb=kw.get("memory_mb", 2048), env=env, exports=exports)


def test_the_key_holds_what_shapes_a_run_and_nothing_else() -> None:
    base = _key({**JOB, "source": "x = 1\n"})
    assert _key({**JOB, "source": "x = 1\n"}) == base
    assert _key({**JOB, "source": "x = 2\n"}) != base  # the document's text
    assert _key({**JOB, "source": "x = 1\n", "overrides": {"/p/h.py": "y = 1\n"}}) != base  # a helper's text given instead of the disk's
    assert _key({**JOB, "source": "x = 1\n"}, memory_mb=4096) != base
    assert _key({**JOB, "source": "x = 1\n", "outputs": True}) != base  # verification keeps what it compares
    # where traces go and draft export beside plain export change nothing of the result
    assert _key({**JOB, "source": "x = 1\n", "trace_dir": "/t/run-1", "draft_beside": True}) == base
    # the compile backend only where the file compiles; draft mode only where it has export targets
    assert _key({**JOB, "source": "x = 1\n", "compile_backend": "inductor"}) == base
    compiling: JobSpec = {**JOB, "source": "x = 1\n", "compile": True}
    assert _key({**compiling, "compile_backend": "eager"}) != _key({**compiling, "compile_backend": "inductor"})
    assert _key({**JOB, "draft": "always"}) != _key(JOB)
    assert _key({**JOB, "draft": "always"}, exports=False) == _key(JOB, exports=False)
    # environment variables that shape torch are in it; the others are not
    assert _key(env={**ENV, "TORCH_LOGS": "+dynamo"}) != _key() and _key(env={**ENV, "PYTORCH_JIT": "0"}) != _key()
    assert _key(env={**ENV, "TERM": "xterm"}) == _key()


def _events(status: str = "ok", **deps: Any) -> list[JobEvent]:
    record = {"event": "deps", "python": "/v/bin/python", "python_version": "3.11", "torch": "2.13.0"}
    record.update(sources={}, distributions=[], data={}, env={})
    return [
        {"event": "target", "name": "model", "file": "/p/m.py", "line": 3, "kind": "export", "seconds": 0.1},  # type: ignore[typeddict-item]
        {**record, **deps},  # type: ignore[list-item]
        {"event": "done", "id": "1", "status": status, "detail": "", "stderr": ""},  # type: ignore[typeddict-item]
    ]


def _store(rc: cache.ResultsCache, key: str, events: list[JobEvent], root: str = "/p") -> cache.Entry | None:
    return rc.store(root, key, "/p/m.py", events, seconds=1.0, trace_files=[], source="x = 1\n", last=True)


@pytest.mark.parametrize(
    "events",
    [
        _events("timeout"),
        _events("crashed"),
        _events("cancelled"),
        [e for e in _events() if e["event"] != "deps"],  # no record of what it depended on
        _events(unstable=["/p/data.json"]),  # a file changed while it ran
        [{**_events()[0], "unsupported": "draft_export"}, *_events()[1:]],  # type: ignore[list-item]
        [{**_events()[0], "exception": {"type": "MemoryError", "message": ""}}, *_events()[1:]],  # type: ignore[list-item]
    ],
    ids=["timeout", "crashed", "cancelled", "no-record", "unstable", "unsupported", "memory-error"],
)
def test_a_run_that_did_not_finish_cleanly_is_never_kept(tmp_path: Path, events: list[JobEvent]) -> None:
    rc = cache.ResultsCache(str(tmp_path / "c"))
    assert _store(rc, "k" * 64, events) is None
    assert not (tmp_path / "c").exists()


def test_an_entry_holds_while_nothing_it_depends_on_changed(tmp_path: Path) -> None:
    helper, data = tmp_path / "helper.py", tmp_path / "cfg.json"
    helper.write_text("A = 1\n")
    data.write_text("{}")
    record = tmp_path / "torch-2.13.0.dist-info" / "RECORD"
    record.parent.mkdir()
    record.write_text("torch/__init__.py,sha256=x,1\n")
    sha = cache.sha256
    later, site = tmp_path / "later.py", tmp_path / "site-packages"  # an import that found nothing; a site folder it searched
    site.mkdir()
    (site / "distutils-precedence.pth").write_text("")
    events = _events(
        sources={str(helper): sha(b"A = 1\n")},
        data={str(data): {"sha": sha(b"{}")}},
        distributions=[{"name": "torch", "version": "2.13.0", "record": str(record), "sha": sha(record.read_bytes())}],
        env={"MY_FLAG": None},
        absent=[str(later)],
        pth={str(site): ["distutils-precedence.pth"]},
    )
    rc = cache.ResultsCache(str(tmp_path / "c"))
    key = "a" * 64
    assert _store(rc, key, events, str(tmp_path)) is not None
    assert rc.lookup(str(tmp_path), key, {}, ENV) is not None
    assert rc.lookup(str(tmp_path), "b" * 64, {}, ENV) is None  # another key
    deps = rc.read(str(tmp_path), key).deps  # type: ignore[union-attr]
    assert cache.changed(deps, {str(helper): "A = 2\n"}, ENV) == f"{helper} changed"  # the text the run is given wins over the disk's
    assert cache.changed(deps, {}, {**ENV, "MY_FLAG": "1"}) == "the environment variable MY_FLAG changed"
    data.write_text('{"a": 1}')
    assert cache.changed(deps, {}, ENV) == f"{data} changed"
    data.write_text("{}")
    record.write_text("torch/__init__.py,sha256=y,1\n")  # reinstalled, other files
    assert cache.changed(deps, {}, ENV) == "the distribution torch changed"
    record.write_text("torch/__init__.py,sha256=x,1\n")
    later.write_text("WIDTH = 4\n")  # `No module named 'later'` no longer holds
    assert cache.changed(deps, {}, ENV) == f"{later} appeared (an import would find it)"
    later.unlink()
    (site / "__editable__.later-0.1.pth").write_text("/src\n")  # an editable install that a finder serves
    assert cache.changed(deps, {}, ENV) == f"the .pth files of {site} changed (an install)"
    (site / "__editable__.later-0.1.pth").unlink()
    assert cache.changed(deps, {}, ENV) is None
    helper.unlink()
    assert cache.changed(deps, {}, ENV) == f"{helper} is gone"


def test_draft_mode_counts_only_where_an_export_target_ran(tmp_path: Path) -> None:
    rc = cache.ResultsCache(str(tmp_path / "c"))
    compile_only = [{"event": "target", "name": "compile at m.py:3", "file": "/p/m.py", "line": 3, "kind": "compile", "seconds": 0.1}, *_events()[1:]]
    assert rc.store("/p", "c" * 64, "/p/m.py", compile_only, seconds=1, trace_files=[], source="", draft="auto", last=False) is not None  # type: ignore[arg-type]
    assert rc.lookup("/p", "c" * 64, {}, ENV, draft="always") is not None
    assert rc.store("/p", "e" * 64, "/p/m.py", _events(), seconds=1, trace_files=[], source="", draft="auto", last=False) is not None
    assert rc.lookup("/p", "e" * 64, {}, ENV, draft="always") is None
    assert rc.lookup("/p", "e" * 64, {}, ENV, draft="auto") is not None


def test_a_corrupt_half_written_or_foreign_entry_is_a_miss(tmp_path: Path) -> None:
    rc = cache.ResultsCache(str(tmp_path / "c"))
    key = "d" * 64
    entry = _store(rc, key, _events())
    assert entry is not None
    path = Path(rc.folder("/p")) / "entries" / f"{key}.json"
    whole = path.read_bytes()
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # the temporary file was renamed into place
    foreign = json.dumps({**json.loads(whole), "format": cache.FORMAT + 1}).encode()
    for bad in (whole[: len(whole) // 2], b"\x00" * 10, b"[]", foreign, whole.replace(b"d" * 64, b"e" * 64)):
        path.write_bytes(bad)
        assert rc.read("/p", key) is None and rc.lookup("/p", key, {}, ENV) is None
    path.write_bytes(whole)
    assert rc.lookup("/p", key, {}, ENV) == entry
    assert rc.last("/p", "/p/m.py") == entry
    assert rc.last("/p", "/p/other.py") is None


def test_the_folder_is_bounded_and_a_killed_writers_leftovers_go(tmp_path: Path) -> None:
    rc = cache.ResultsCache(str(tmp_path / "c"), max_bytes=4000)
    keys = [f"{i:064d}" for i in range(12)]
    for i, k in enumerate(keys):
        assert _store(rc, k, _events()) is not None
        os.utime(Path(rc.folder("/p")) / "entries" / f"{k}.json", (1000 + i, 1000 + i))  # oldest first
    entries = Path(rc.folder("/p")) / "entries"
    stale = entries / ".part-dead.tmp"
    stale.write_text("{")
    os.utime(stale, (0, 0))
    rc.prune(rc.folder("/p"))
    left = sorted(p.name for p in entries.iterdir())
    assert sum(p.stat().st_size for p in entries.iterdir()) <= 4000 * 0.8
    assert left == sorted(f"{k}.json" for k in keys[-len(left) :]) and 0 < len(left) < len(keys)  # the newest stay


def test_a_folder_that_cannot_be_written_is_said_once(tmp_path: Path) -> None:
    blocked = tmp_path / "c"
    blocked.write_text("a file where the folder should be")  # unwritable for root too
    said: list[str] = []
    rc = cache.ResultsCache(str(blocked), warn=said.append)
    assert _store(rc, "f" * 64, _events()) is None
    assert _store(rc, "0" * 64, _events()) is None
    assert len(said) == 1 and said[0].startswith(f"exportlens: warning: cannot write the results cache in {blocked}")
    assert rc.lookup("/p", "f" * 64, {}, ENV) is None


def _recorded_with_deps(case_name: str) -> tuple[Any, dict[str, Any], list[JobEvent]]:
    """A recorded case, its events ending as the worker's do: the record of what the job depended on (the file itself), then done."""
    case = CASES_BY_NAME[case_name]
    recording = load_recording(case)
    own = {str(case.file): cache.sha256(Path(case.file).read_bytes())}
    return case, recording, [e for e in recording["events"] if e["event"] != "done"] + _events(sources=own)[1:]


def test_a_reused_result_is_the_run_it_came_from(tmp_path: Path) -> None:
    """Through the real engine: the second check sends no job, and its result is the first's, marked."""
    case, recording, events = _recorded_with_deps("data_dependent__item_branch")

    async def twice() -> tuple[Any, Any, ReplayWorker]:
        engine = Engine(EngineSettings(timeout=case.timeout, warmup=False, cache_dir=str(tmp_path / "c")))
        worker = ReplayWorker(recording["job"], events)
        engine.worker = worker  # type: ignore[assignment]
        first = await engine.check_file(str(case.file))
        second = await engine.check_file(str(case.file))
        return first, second, worker

    first, second, worker = asyncio.run(twice())
    assert len(worker.jobs) == 1
    assert first.cached is None and second.cached is not None and second.torch == "2.13.0"
    assert first.depends == second.depends == [str(case.file)]  # what a save of one of them runs again
    assert [t.cached for t in second.targets] == [second.cached]
    shown = result_json(second)
    assert [{k: t.pop(k) for k in ("cached", "cached_from")} for t in shown["targets"]] == [{"cached": True, "cached_from": second.cached}]
    assert shown == result_json(first)


def test_shards_split_files_stably_and_a_new_file_moves_no_other(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    files = [str(tmp_path / f"m{i}.py") for i in range(60)]
    for n in (1, 2, 3, 7):
        owners = [[k for k in range(1, n + 1) if shards.in_shard(f, (k, n))] for f in files]
        assert all(len(o) == 1 for o in owners)  # every file in exactly one shard
    before = {f: shards.shard_of(f, 4) for f in files}
    assert len(set(before.values())) == 4
    (tmp_path / "new.py").write_text("")
    assert {f: shards.shard_of(f, 4) for f in files} == before
    assert shards.parse("2/5") == (2, 5)
    for bad in ("0/3", "4/3", "1", "a/b", "1/0"):
        with pytest.raises(ValueError):
            shards.parse(bad)


def test_a_run_with_a_fix_applied_is_never_the_files_last_and_a_reused_one_is(tmp_path: Path) -> None:
    """The editor shows a file's last run at once on open: never a fix's verification run (the file
    with the fix applied in memory), and a reused run becomes the last again (edited, then edited
    back); it says whether that run still holds for the text the editor has."""
    case, recording, events = _recorded_with_deps("data_dependent__item_branch")
    rc = cache.ResultsCache(str(tmp_path / "c"))
    root = project.find_root(str(case.file))

    async def scenario() -> None:
        engine = Engine(EngineSettings(timeout=case.timeout, warmup=False, cache_dir=rc.base))
        engine.worker = ReplayWorker(recording["job"], events)  # type: ignore[assignment]
        await engine.check(dataclasses.replace(document.load(str(case.file)), fixed=True))  # as verification runs a fix
        assert rc.last(root, str(case.file)) is None
        reused = await engine.check(document.load(str(case.file)))
        assert reused.cached is not None
        last = rc.last(root, str(case.file))
        assert last is not None and last.run == reused.cached

        shown = await engine.last_result(document.load(str(case.file)))  # on open: nothing changed, it holds
        assert shown is not None and shown.cached is not None and "holds" not in shown.cached and len(engine.worker.jobs) == 1  # type: ignore[attr-defined]
        edited = await engine.last_result(document.load(str(case.file), Path(case.file).read_text() + "# edited\n"))
        assert edited is not None and edited.cached is not None and edited.cached["holds"] is False  # shown only until the run that follows
        assert [d.code for d in edited.diagnostics] == [d.code for d in reused.diagnostics]

    asyncio.run(scenario())
    no_cache = Engine(EngineSettings(timeout=case.timeout, warmup=False))
    no_cache.worker = ReplayWorker(recording["job"], events)  # type: ignore[assignment]
    result = asyncio.run(no_cache.check_file(str(case.file)))
    assert result.cached is None and result.depends == [str(case.file)]  # a save re-runs what imported it, the cache off too
