"""The results cache over real torch: what is reused, what runs again, and what is never trusted.

Every test has its own cache folder (`--cache-dir`) and turns the cache on for its CLI runs (the
rest of the suite runs with EXPORTLENS_NO_CACHE, tests/conftest.py). The editable library is
installed the way pip's editable installs appear, but into a site folder of the test's own: a
dist-info with `direct_url.json` saying `"dir_info": {"editable": true}` and an `__editable__`
.pth file naming the library's source folder, which a `sitecustomize` on PYTHONPATH adds with
`site.addsitedir` (so the shared venv is never touched); a plain install (`sitelib`, a RECORD of
its files' hashes) goes into such a folder the same way.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLES, ROOT, SyncEngine, kill_mid_run
from html_dom import parse

from exportlens.engine import EngineSettings

pytestmark = pytest.mark.torch

A = """\
import torch
from helper_a import make

model = make()
example_args = (torch.randn(2, 4),)
"""
HELPER_A = """\
import torch


def make():
    return torch.nn.Linear(4, 4)
"""
B = """\
import torch


class M(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x + 1
        return x - 1


model = M()
example_args = (torch.ones(3),)
"""
C = """\
import torch


def f(x):
    print("a graph break")
    return x * 2


compiled = torch.compile(f)
compiled(torch.ones(2))
"""
D = """\
import edlib
import torch

model = torch.nn.Linear(edlib.WIDTH, 2)
example_args = (torch.randn(1, edlib.WIDTH),)
"""
E = """\
import torch


class M(torch.nn.Module):
    def forward(self, x):
        from lazyhelp import scale  # imported while export traces the model, not before

        return x * scale()


model = M()
example_args = (torch.ones(2),)
"""
LAZYHELP = "def scale():\n    return 2\n"


def _editable_library(tmp: Path) -> Path:
    """`edlib` as `pip install -e` leaves it, in a site folder of this test's own; returns the folder
    PYTHONPATH needs (its `sitecustomize` adds the site folder, whose .pth names the source)."""
    src = tmp / "edlib-src"
    (src / "edlib").mkdir(parents=True)
    (src / "edlib" / "__init__.py").write_text("WIDTH = 4\n")
    site_dir = tmp / "env" / "site-packages"
    info = site_dir / "edlib-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: edlib\nVersion: 0.1\n")
    (info / "direct_url.json").write_text(json.dumps({"dir_info": {"editable": True}, "url": src.as_uri()}))
    (info / "INSTALLER").write_text("pip\n")
    pth = site_dir / "__editable__.edlib-0.1.pth"
    pth.write_text(f"{src}\n")
    (info / "RECORD").write_text(
        "__editable__.edlib-0.1.pth,,\nedlib-0.1.dist-info/METADATA,,\nedlib-0.1.dist-info/direct_url.json,,\nedlib-0.1.dist-info/RECORD,,\n"
    )
    boot = tmp / "boot"
    boot.mkdir()
    (boot / "sitecustomize.py").write_text(f"import site\nsite.addsitedir({str(site_dir)!r})\n")
    return boot


@pytest.fixture()
def zoo(tmp_path: Path) -> Path:
    """A project of five files: a helper's model, a data-dependent branch, a graph break, an editable
    library's model, a model that imports a helper only while it is exported."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "pyproject.toml").write_text("[project]\nname = 'zoo'\nversion = '0'\n")
    for name, text in {"a.py": A, "helper_a.py": HELPER_A, "b.py": B, "c.py": C, "d.py": D, "e.py": E, "lazyhelp.py": LAZYHELP}.items():
        (proj / name).write_text(text)
    return proj


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "EXPORTLENS_NO_CACHE"}
    paths = [str(ROOT / "server")] + ([str(tmp / "boot")] if (tmp / "boot").is_dir() else [])
    return {**env, "PYTHONPATH": os.pathsep.join(paths), **extra}


def check(proj: Path, *args: str, cache: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "exportlens", "check", str(proj), "--cache-dir", str(cache), *args],
        capture_output=True,
        text=True,
        cwd=proj.parent,
        env=env if env is not None else _env(proj.parent),
        timeout=600,
    )


def report(proj: Path, *args: str, cache: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    out = check(proj, "--format", "json", *args, cache=cache, env=env)
    assert out.returncode in (0, 1), out.stderr
    doc: dict[str, Any] = json.loads(out.stdout)
    return doc


def reused(doc: dict[str, Any]) -> dict[str, bool]:
    """file name → whether its targets came from the cache (each file's targets share one run)."""
    out: dict[str, bool] = {}
    for t in doc["targets"]:
        name = Path(t["file"]).name
        assert out.get(name, bool(t.get("cached"))) == bool(t.get("cached")), "a file's targets are reused together"
        out[name] = bool(t.get("cached"))
    return out


def ran(doc: dict[str, Any]) -> set[str]:
    return {name for name, cached in reused(doc).items() if not cached}


def comparable(doc: dict[str, Any]) -> dict[str, Any]:
    """A report without what differs between a run and its reuse: timings, when, and the cache's marks."""

    def plain(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items() if k not in ("seconds", "cached", "cached_from", "run", "trace_file")}
        if isinstance(v, list):
            return [plain(x) for x in v]
        return v

    return dict(plain(doc))


def test_an_unchanged_project_reuses_every_target_and_gives_the_same_report(zoo: Path, tmp_path: Path) -> None:
    _editable_library(tmp_path)
    cache = tmp_path / "cache"
    cold = report(zoo, cache=cache)  # verification on (--format json): the fixes' outcomes are kept too
    assert ran(cold) == {"a.py", "b.py", "c.py", "d.py", "e.py"}
    assert [t["status"] for t in cold["targets"] if Path(t["file"]).name == "b.py"] == ["problems"]
    (guard,) = [d for d in cold["diagnostics"] if d["code"] == "data-dependent-guard"]
    assert [(f["assumes"], f["verification"]["status"]) for f in guard["fixes"]] == [(None, "export-passes"), ("x.sum() > 0", "export-passes")]

    kept = {p.name: json.loads(p.read_text())["finished"] for p in cache.glob("*/entries/*.json")}
    verified = {json.dumps(f["edits"]) for d in cold["diagnostics"] for f in d["fixes"] if f["verification"]["status"] != "not-checked"}
    assert len(kept) == 5 + len(verified) >= 7  # each file's run, and the run of each fix with it applied (b.py's two, c.py's)
    warm = report(zoo, cache=cache)
    assert ran(warm) == set()
    assert {p.name: json.loads(p.read_text())["finished"] for p in cache.glob("*/entries/*.json")} == kept  # nothing ran again, not even verification
    assert comparable(warm) == comparable(cold)
    came = {t["cached_from"]["id"] for t in warm["targets"]}
    assert len(came) == 5 and all(len(i) == 12 for i in came)  # each file's own run


def test_an_edit_or_a_setting_re_runs_exactly_the_targets_that_depend_on_it(zoo: Path, tmp_path: Path) -> None:
    _editable_library(tmp_path)
    cache = tmp_path / "cache"
    cold = report(zoo, "--no-verify", cache=cache)
    assert ran(cold) == {"a.py", "b.py", "c.py", "d.py", "e.py"}
    problems = sum(1 for d in cold["diagnostics"] if d["severity"] <= 2)
    text = check(zoo, cache=cache)  # without verification, as the JSON above: the same entries
    assert text.stdout.splitlines()[-1].startswith(f"{problems} problems in 5 targets, 5 from the cache ("), text.stdout

    def edit(path: Path, text: str) -> None:
        path.write_text(path.read_text() + text)

    edit(zoo / "helper_a.py", "# a project helper a.py imports\n")
    assert ran(report(zoo, "--no-verify", cache=cache)) == {"a.py"}
    edit(tmp_path / "edlib-src" / "edlib" / "__init__.py", "# the editable library d.py imports\n")
    assert ran(report(zoo, "--no-verify", cache=cache)) == {"d.py"}
    edit(zoo / "lazyhelp.py", "# imported by e.py's model during export\n")
    assert ran(report(zoo, "--no-verify", cache=cache)) == {"e.py"}
    edit(zoo / "b.py", "# the target's own file\n")
    assert ran(report(zoo, "--no-verify", cache=cache)) == {"b.py"}
    # settings: each re-runs the files it shapes, once
    assert ran(report(zoo, "--no-verify", "--compile-backend", "aot_eager", cache=cache)) == {"c.py"}
    assert ran(report(zoo, "--no-verify", "--compile-backend", "aot_eager", cache=cache)) == set()
    assert ran(report(zoo, "--no-verify", "--compile-backend", "aot_eager", "--draft", "always", cache=cache)) == {"a.py", "b.py", "d.py", "e.py"}
    # ignore applies to the reused result: nothing runs, and the code is gone
    (zoo / "pyproject.toml").write_text("[project]\nname = 'zoo'\nversion = '0'\n\n[tool.exportlens]\nignore = ['data-dependent-guard']\n")
    after = report(zoo, "--no-verify", "--compile-backend", "aot_eager", "--draft", "always", cache=cache)
    assert ran(after) == set()
    assert "data-dependent-guard" not in {d["code"] for d in after["diagnostics"]}
    # an environment variable that shapes torch is part of the key
    assert ran(report(zoo, "--no-verify", "--compile-backend", "aot_eager", "--draft", "always", cache=cache, env=_env(tmp_path, TORCH_LOGS="-all"))) == {
        "a.py",
        "b.py",
        "c.py",
        "d.py",
        "e.py",
    }
    entries = [json.loads(p.read_text()) for p in cache.glob("*/entries/*.json")]
    (editable,) = [dist for e in entries for dist in e["deps"]["distributions"] if dist["name"] == "edlib"][:1]
    assert editable["editable"] == str(tmp_path / "edlib-src")  # found from pip's direct_url.json


F = """\
import torch
import vendored  # found in a PYTHONPATH folder, after the script's own
from later import WIDTH  # not written yet

model = torch.nn.Linear(WIDTH, 2)
example_args = (torch.randn(1, WIDTH),)
"""


def test_an_import_that_found_nothing_or_found_a_later_folder_runs_again_when_a_file_appears(tmp_path: Path) -> None:
    """A run's result depends on what its imports did not find too: `No module named 'later'` holds
    only until later.py is written, and an import found in a PYTHONPATH folder only until a file of
    that name appears earlier on the path (beside the script)."""
    proj, vendor = tmp_path / "proj", tmp_path / "vendor"
    proj.mkdir()
    vendor.mkdir()
    (proj / "pyproject.toml").write_text("[project]\nname = 'f'\nversion = '0'\n")
    (proj / "f.py").write_text(F)
    (vendor / "vendored.py").write_text("V = 1\n")
    cache, env = tmp_path / "cache", _env(tmp_path)
    env["PYTHONPATH"] += os.pathsep + str(vendor)

    def problems(doc: dict[str, Any]) -> list[tuple[str, str]]:
        return [(d["code"], d["message"]) for d in doc["diagnostics"] if d["severity"] <= 2]

    first = report(proj, "--no-verify", cache=cache, env=env)
    ((code, message),) = problems(first)
    assert ran(first) == {"f.py"} and code == "target-error" and "No module named 'later'" in message
    assert ran(report(proj, "--no-verify", cache=cache, env=env)) == set()
    (proj / "later.py").write_text("WIDTH = 4\n")
    written = report(proj, "--no-verify", cache=cache, env=env)
    assert ran(written) == {"f.py"} and problems(written) == [] and [t["status"] for t in written["targets"]] == ["ok"]
    assert ran(report(proj, "--no-verify", cache=cache, env=env)) == set()
    (proj / "vendored.py").write_text("raise ImportError('the project now has its own vendored.py')\n")
    shadowed = report(proj, "--no-verify", cache=cache, env=env)
    ((code, message),) = problems(shadowed)
    assert ran(shadowed) == {"f.py"} and code == "target-error" and "the project now has its own vendored.py" in message


NOTEBOOK_CELLS = [
    ("markdown", "# A model\n"),
    ("code", "import torch\n"),
    ("code", "class M(torch.nn.Module):\n    def forward(self, x):\n        if x.sum() > 0:\n            return x + 1\n        return x - 1\n"),
    ("code", "model = M()\nexample_args = (torch.ones(3),)\n"),
]


def _notebook(cells: list[tuple[str, str]]) -> str:
    def cell(kind: str, text: str) -> dict[str, Any]:
        extra: dict[str, Any] = {"outputs": [], "execution_count": None} if kind == "code" else {}
        return {"cell_type": kind, "metadata": {}, "source": text.splitlines(keepends=True), **extra}

    return json.dumps({"cells": [cell(k, t) for k, t in cells], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def test_a_notebook_is_reused_by_its_code_cells_text(tmp_path: Path) -> None:
    """A notebook's run is its code cells joined: a markdown cell changed or added runs nothing (the
    reused finding follows its cell), a code cell changed runs it again."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "pyproject.toml").write_text("[project]\nname = 'nb'\nversion = '0'\n")
    nb, cache = proj / "model.ipynb", tmp_path / "cache"
    nb.write_text(_notebook(NOTEBOOK_CELLS))

    def where(doc: dict[str, Any]) -> list[tuple[str, int, int]]:
        return [(d["code"], d["cell"], d["range"]["start"]["line"]) for d in doc["diagnostics"] if d["severity"] <= 2]

    cold = report(proj, "--no-verify", cache=cache)
    assert ran(cold) == {"model.ipynb"} and where(cold) == [("data-dependent-guard", 2, 2)]
    nb.write_text(_notebook([("markdown", "# A model, described at length\n\nin two paragraphs\n"), ("markdown", "## and a new cell\n"), *NOTEBOOK_CELLS[1:]]))
    moved = report(proj, "--no-verify", cache=cache)
    assert ran(moved) == set() and where(moved) == [("data-dependent-guard", 3, 2)]
    nb.write_text(_notebook([*NOTEBOOK_CELLS[:3], ("code", "model = M()\nexample_args = (torch.ones(4),)\n")]))
    edited = report(proj, "--no-verify", cache=cache)
    assert ran(edited) == {"model.ipynb"} and where(edited) == [("data-dependent-guard", 2, 2)]


def test_trace_dir_runs_again_for_its_traces(zoo: Path, tmp_path: Path) -> None:
    """`--trace-dir` asks for the traces of runs made now: nothing is reused, what ran is kept."""
    for name in ("a.py", "c.py", "d.py", "e.py"):
        (zoo / name).unlink()
    cache, traces = tmp_path / "cache", tmp_path / "traces"
    assert ran(report(zoo, "--no-verify", cache=cache)) == {"b.py"}
    traced = check(zoo, "--no-verify", "--trace-dir", str(traces), cache=cache)
    assert "from the cache" not in traced.stdout.splitlines()[-1] and list(traces.rglob("*.log")), traced.stdout + traced.stderr
    assert ran(report(zoo, "--no-verify", cache=cache)) == set()


def test_no_cache_runs_everything_and_keeps_nothing(zoo: Path, tmp_path: Path) -> None:
    for name in ("c.py", "d.py", "e.py"):
        (zoo / name).unlink()
    cache = tmp_path / "cache"
    assert ran(report(zoo, "--no-verify", "--no-cache", cache=cache)) == {"a.py", "b.py"}
    assert not cache.exists()
    assert ran(report(zoo, "--no-verify", cache=cache, env={**_env(tmp_path), "EXPORTLENS_NO_CACHE": "1"})) == {"a.py", "b.py"}  # --cache-dir alone turns it on
    assert ran(report(zoo, "--no-verify", cache=cache)) == set()


SLOW = """\
import os
import time

import torch

open(os.environ["EXPORTLENS_TEST_MARK"], "w").close()
while os.path.exists(os.environ["EXPORTLENS_TEST_HOLD"]):  # the test kills the run while it waits here
    time.sleep(0.05)
model = torch.nn.Linear(2, 2)
example_args = (torch.ones(1, 2),)
"""


def test_a_killed_run_keeps_what_finished_and_nothing_of_what_did_not(zoo: Path, tmp_path: Path) -> None:
    for name in ("b.py", "c.py", "d.py", "e.py"):
        (zoo / name).unlink()
    (zoo / "slow.py").write_text(SLOW)
    cache = tmp_path / "cache"
    mark, hold = tmp_path / "running", tmp_path / "hold"  # slow.py says it runs, and waits while `hold` exists
    hold.touch()
    env = _env(tmp_path, EXPORTLENS_TEST_MARK=str(mark), EXPORTLENS_TEST_HOLD=str(hold))
    # a.py runs first (files go in order, one job at a time); the check is killed while slow.py runs
    kill_mid_run([sys.executable, "-m", "exportlens", "check", str(zoo), "--cache-dir", str(cache), "--jobs", "1"], mark, env=env, cwd=tmp_path)
    hold.unlink()
    assert len(list(cache.glob("*/entries/*.json"))) == 1  # a.py's, whole; nothing of slow.py
    doc = report(zoo, "--no-verify", cache=cache, env=env)
    assert reused(doc) == {"a.py": True, "slow.py": False}
    assert [t["status"] for t in doc["targets"]] == ["ok", "ok"]


def test_a_corrupt_or_foreign_entry_is_ignored_and_replaced(zoo: Path, tmp_path: Path) -> None:
    for name in ("c.py", "d.py", "e.py"):
        (zoo / name).unlink()
    cache = tmp_path / "cache"
    cold = report(zoo, "--no-verify", cache=cache)
    entries = {json.loads(p.read_text())["owner"]: p for p in cache.glob("*/entries/*.json")}
    a, b = entries[str(zoo / "a.py")], entries[str(zoo / "b.py")]
    a.write_bytes(a.read_bytes()[: len(a.read_bytes()) // 2])  # half an entry, as a disk that filled up leaves it
    foreign = json.loads(b.read_text())
    foreign["format"] += 1  # another ExportLens's entry
    b.write_text(json.dumps(foreign))
    (a.parent / ".part-1234.tmp").write_text('{"format": 1')  # a killed writer's temporary file: never read
    again = report(zoo, "--no-verify", cache=cache)
    assert ran(again) == {"a.py", "b.py"}
    assert comparable(again) == comparable(cold)
    assert json.loads(a.read_text())["format"] == foreign["format"] - 1  # replaced by whole entries
    assert ran(report(zoo, "--no-verify", cache=cache)) == set()


@pytest.fixture()
def immutable(tmp_path: Path) -> Iterator[Any]:
    """Makes folders read-only for this user (root too: `chattr +i`), and writable again after."""
    made: list[Path] = []

    def make(folder: Path) -> None:
        folder.chmod(0o555)
        try:
            (folder / ".probe").touch()
        except OSError:
            made.append(folder)
            return
        (folder / ".probe").unlink()  # root ignores the mode
        if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
            pytest.skip("cannot make a folder read-only for this user here")
        made.append(folder)

    yield make
    for folder in made:
        subprocess.run(["chattr", "-i", str(folder)], capture_output=True)
        folder.chmod(0o755)


def test_a_read_only_cache_folder_warns_once_and_runs(zoo: Path, tmp_path: Path, immutable: Any) -> None:
    for name in ("c.py", "d.py", "e.py"):
        (zoo / name).unlink()
    cache = tmp_path / "cache"
    cache.mkdir()
    immutable(cache)
    out = check(zoo, "--format", "json", "--no-verify", cache=cache)
    assert out.returncode == 1, out.stderr
    assert ran(json.loads(out.stdout)) == {"a.py", "b.py"}
    warnings = [line for line in out.stderr.splitlines() if "results cache" in line]
    assert len(warnings) == 1 and warnings[0].startswith(f"exportlens: warning: cannot write the results cache in {cache}"), out.stderr

    # a cache kept read-only (restored in CI, say) still serves what holds
    writable = tmp_path / "kept"
    report(zoo, "--no-verify", cache=writable)
    for folder in [writable, *writable.rglob("*")]:
        if folder.is_dir():
            immutable(folder)
    out = check(zoo, "--format", "json", "--no-verify", cache=writable)
    assert ran(json.loads(out.stdout)) == set() and "results cache" not in out.stderr
    (zoo / "b.py").write_text(B + "# changed\n")
    out = check(zoo, "--format", "json", "--no-verify", cache=writable)
    assert ran(json.loads(out.stdout)) == {"b.py"}  # the changed file runs; its result cannot be kept, said once
    assert len([line for line in out.stderr.splitlines() if "results cache" in line]) == 1


def test_shards_hold_every_target_once_and_merge_into_one_page(tmp_path: Path) -> None:
    proj = tmp_path / "examples"
    shutil.copytree(EXAMPLES, proj, ignore=shutil.ignore_patterns("__pycache__"))
    cache = tmp_path / "cache"
    whole = report(proj, "--no-verify", cache=cache)  # the shards below reuse it, as CI's kept cache would
    parts = []
    for k in (1, 2, 3):
        doc = report(proj, "--no-verify", "--shard", f"{k}/3", cache=cache)
        assert doc["run"]["shard"] == f"{k}/3" and ran(doc) == set()
        parts.append(doc)
    names = [(t["file"], t["name"]) for p in parts for t in p["targets"]]
    assert len(names) == len(set(names)) and sorted(names) == sorted((t["file"], t["name"]) for t in whole["targets"])
    assert all(p["targets"] for p in parts)  # 25 files: no shard is empty
    files = [tmp_path / f"shard{k}.json" for k in (1, 2, 3)]
    for f, p in zip(files, parts, strict=True):
        f.write_text(json.dumps(p))
    page = subprocess.run(
        [sys.executable, "-m", "exportlens", "report", *map(str, files)], capture_output=True, text=True, env=_env(tmp_path), timeout=120, cwd=tmp_path
    )
    assert page.returncode == 0, page.stderr
    rows = parse(page.stdout).by_id("target-table").one("tbody").all("tr", where=lambda r: r.attrs.get("id", "").startswith("row-"))
    assert len(rows) == len(whole["targets"]) and all(r.attrs.get("data-cached") == "true" for r in rows)


def test_pytest_items_say_what_was_reused(zoo: Path, tmp_path: Path) -> None:
    for name in ("b.py", "c.py", "d.py", "e.py"):
        (zoo / name).unlink()
    cache, junit = tmp_path / "cache", tmp_path / "junit.xml"

    def run() -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "pytest", "-p", "exportlens.pytest_plugin", "-p", "no:cacheprovider", "--exportlens", str(zoo)]
        command += ["--exportlens-cache-dir", str(cache), f"--junitxml={junit}", "-q"]
        return subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=_env(tmp_path), timeout=600)

    first = run()
    assert first.returncode == 0, first.stdout[-3000:]
    assert "from the cache" not in first.stdout
    second = run()
    assert second.returncode == 0 and "exportlens: 1 target, 1 from the cache" in second.stdout, second.stdout[-3000:]
    (prop,) = ET.parse(junit).getroot().iter("property")
    assert prop.get("name") == "exportlens_cached" and prop.get("value", "").endswith(" UTC")


NET_V1 = """\
import torch


class M(torch.nn.Module):
    def forward(self, x):
        return x * 2
"""
NET_V2 = B.split("\n\n\nmodel = ")[0] + "\n"  # its data-dependent branch, as a library's
FACTORY = """\
import torch
from sitelib import M


def build():
    return M(), (torch.ones(3),)
"""
MODULE_LEVEL = """\
import torch
from sitelib import M

model = M()
example_args = (torch.ones(3),)
"""


def _install_library(tmp: Path, text: str) -> None:
    """`sitelib` as `pip install` (not editable) leaves it, in a site folder of this test's own: its
    file and a RECORD with each file's hash, as pip writes it. Called again, it is a reinstall."""
    site_dir = tmp / "env" / "site-packages"
    (site_dir / "sitelib").mkdir(parents=True, exist_ok=True)
    info = site_dir / "sitelib-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (site_dir / "sitelib" / "__init__.py").write_text(text)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: sitelib\nVersion: 0.1\n")
    (info / "INSTALLER").write_text("pip\n")
    digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
    (info / "RECORD").write_text(
        f"sitelib/__init__.py,sha256={digest},{len(text.encode())}\nsitelib-0.1.dist-info/METADATA,,\nsitelib-0.1.dist-info/RECORD,,\n"
    )
    boot = tmp / "boot"
    boot.mkdir(exist_ok=True)
    (boot / "sitecustomize.py").write_text(f"import site\nsite.addsitedir({str(site_dir)!r})\n")


def test_a_declared_library_model_runs_again_when_its_library_is_reinstalled(tmp_path: Path) -> None:
    """A factory's and a module-level model whose whole forward is an installed library's: the
    project's text does not change, the library's reinstall does (its RECORD), and both run again
    with the new library's problem on their declarations; nothing of the old library's is reused."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "pyproject.toml").write_text("[project]\nname = 'lib'\nversion = '0'\n\n[tool.exportlens]\ntargets = ['factory.py:build']\n")
    (proj / "factory.py").write_text(FACTORY)
    (proj / "module_level.py").write_text(MODULE_LEVEL)
    _install_library(tmp_path, NET_V1)
    cache = tmp_path / "cache"

    def problems(doc: dict[str, Any]) -> list[tuple[str, int, str]]:
        return sorted((Path(d["file"]).name, d["range"]["start"]["line"], d["code"]) for d in doc["diagnostics"] if d["severity"] <= 2)

    cold = report(proj, "--no-verify", cache=cache)
    assert ran(cold) == {"factory.py", "module_level.py"} and problems(cold) == []
    assert ran(report(proj, "--no-verify", cache=cache)) == set()
    _install_library(tmp_path, NET_V2)
    after = report(proj, "--no-verify", cache=cache)
    assert ran(after) == {"factory.py", "module_level.py"}
    assert problems(after) == [("factory.py", 5, "data-dependent-guard"), ("module_level.py", 3, "data-dependent-guard")]
    again = report(proj, "--no-verify", cache=cache)
    assert ran(again) == set() and problems(again) == problems(after)


PASSES = NET_V1 + "\n\nmodel = M()\nexample_args = (torch.ones(3),)\n"  # plain export passes


def test_run_draft_export_and_a_plain_run_do_not_reuse_each_other(tmp_path: Path) -> None:
    """'Run draft export' (Engine.check(draft='always')) and the plain run of the same text are two
    entries: neither is served the other's result, each is reused by its own kind of run."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\nversion = '0'\n")
    model = tmp_path / "model.py"
    model.write_text(PASSES)
    eng = SyncEngine(EngineSettings(timeout=120, memory_mb=2048, cache_dir=str(tmp_path / "cache")))
    try:
        plain = eng.check(model)
        assert plain.ran and plain.cached is None
        draft = eng.check(model, draft="always")
        assert draft.cached is None  # the plain run's entry is not the draft run's
        plain_again, draft_again = eng.check(model), eng.check(model, draft="always")
        assert plain_again.cached is not None and draft_again.cached is not None
        assert plain_again.cached["id"] != draft_again.cached["id"]
        model.write_text(PASSES + "# edited\n")
        assert eng.check(model, draft="always").cached is None  # the reverse order: a draft run first
        assert eng.check(model).cached is None
    finally:
        eng.close()
