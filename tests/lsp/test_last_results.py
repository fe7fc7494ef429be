"""A fresh server shows a file's last results at once, from the results cache, then the run's.

`exportlens check` fills the cache (the user's cache folder, here under a temporary
XDG_CACHE_HOME); a new server then opens the files. A file whose run still holds gets its cached
diagnostics, marked as from the last run, and the run reuses them (marked confirmed); a file whose
helper changed since gets the last run's diagnostics first, then the diagnostics of a real run;
a save of that helper then runs that file again, and not the other.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsp_helpers import ROOT, change_doc, init_params, make_client, open_doc, publishes_for, save_doc, wait_for
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from exportlens.lsp.hover import hover_markdown
from exportlens.lsp.last_results import came_from
from exportlens.model import Diagnostic, Range

pytestmark = pytest.mark.torch

WORK = Path(tempfile.mkdtemp(prefix="exportlens-last-results-"))
PROJ = WORK / "proj"
BRANCH = """\
import torch
from helper import OFFSET


class M(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x + OFFSET
        return x - OFFSET


model = M()
example_args = (torch.ones(3),)
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "EXPORTLENS_NO_CACHE"}  # the suite's default is off; this test is about it
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "server"), env.get("PYTHONPATH")) if p)
    env["XDG_CACHE_HOME"] = str(WORK / "xdg")
    return env


@pytest.fixture(scope="module")
def filled() -> Path:
    """The project, checked once by the CLI into the default cache folder; then a helper of a.py changes."""
    PROJ.mkdir()
    (PROJ / "pyproject.toml").write_text("[project]\nname = 'p'\nversion = '0'\n")
    (PROJ / "helper.py").write_text("OFFSET = 1\n")
    (PROJ / "a.py").write_text(BRANCH)  # imports helper
    (PROJ / "b.py").write_text(BRANCH.replace("from helper import OFFSET\n", "OFFSET = 1\n"))
    out = subprocess.run([sys.executable, "-m", "exportlens", "check", str(PROJ)], capture_output=True, text=True, env=_env(), timeout=600)
    assert out.returncode == 1 and out.stdout.splitlines()[-1].startswith("2 problems in 2 targets ("), out.stdout + out.stderr
    assert len(list((WORK / "xdg" / "exportlens" / "results").glob("proj-*/entries/*.json"))) == 2
    (PROJ / "helper.py").write_text("OFFSET = 2  # a.py's run no longer holds\n")
    return PROJ


CONFIG = ClientServerConfig(server_command=[sys.executable, "-m", "exportlens", "serve"], client_factory=make_client, server_env=_env())


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: LanguageClient, filled: Path) -> Any:
    await asyncio.wait_for(lsp_client.initialize_session(init_params(filled)), 30)
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), 30)


def _cached(pub: types.PublishDiagnosticsParams) -> list[Any]:
    """Each diagnostic's `cached` mark (None: from a run of now)."""
    return [d.data.get("cached") if isinstance(d.data, dict) else None for d in pub.diagnostics]


def _ends(client: LanguageClient) -> list[float]:
    return [t for t, v in client.timed_progress if isinstance(v, types.WorkDoneProgressEnd) or (isinstance(v, dict) and v.get("kind") == "end")]  # type: ignore[attr-defined]


@pytest.mark.asyncio(loop_scope="module")
async def test_a_fresh_server_shows_the_last_results_at_once_then_the_runs(client: LanguageClient, filled: Path) -> None:
    uri = open_doc(client, filled / "a.py")
    first = await wait_for(lambda: [p for p in publishes_for(client, uri) if p.diagnostics], what="a.py's first diagnostics")
    shown = first[0]
    assert [d.code for d in shown.diagnostics] == ["data-dependent-guard"] and shown.diagnostics[0].range.start.line == 6
    (mark,) = set(map(str, _cached(shown)))
    assert "'confirmed': False" in mark and "UTC" in mark  # the last run's, with its time, before any run ended
    assert not _ends(client)
    # helper.py changed since: a real run replaces them
    fresh = await wait_for(lambda: [p for p in publishes_for(client, uri) if p.diagnostics and _cached(p) == [None]], what="a.py's run")
    assert [d.code for d in fresh[-1].diagnostics] == ["data-dependent-guard"]

    a_uri, uri = uri, open_doc(client, filled / "b.py")
    confirmed = await wait_for(
        lambda: [p for p in publishes_for(client, uri) if p.diagnostics and all(c and c.get("confirmed") is not False for c in _cached(p))],
        what="b.py's run, reused from the cache",
    )
    assert all(all(c is not None for c in _cached(p)) for p in publishes_for(client, uri))  # nothing of b.py ran again
    at = types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=confirmed[-1].diagnostics[0].range.start)
    hover = await asyncio.wait_for(client.text_document_hover_async(at), 30)
    assert hover is not None and "Reused from the run of " in str(hover.contents)

    # a save of helper.py runs a.py again (its run imported helper.py), and not b.py (whose did not)
    helper = open_doc(client, filled / "helper.py")
    since = time.monotonic()
    change_doc(client, helper, "OFFSET = 3\n")
    save_doc(client, helper)
    await wait_for(lambda: [p for p in publishes_for(client, a_uri, since) if p.diagnostics and _cached(p) == [None]], what="a.py's run after the save")
    await wait_for(lambda: [t for t in _ends(client) if t > since], what="the end of that run")
    assert publishes_for(client, uri, since) == []  # b.py, had it run, would have been answered from the cache long before


def test_the_hover_says_where_a_result_from_the_cache_came_from() -> None:
    d = Diagnostic("/p/a.py", Range.of(6, 11, 6, 20), 1, "data-dependent-guard", "m", "model")
    last = hover_markdown(d, None, came_from=came_from({"finished": "2026-01-02 03:04:05 UTC", "confirmed": False}))
    assert "*From the last run (2026-01-02 03:04:05 UTC), shown before this file runs again: the run replaces it.*" in last.splitlines()
    reused = hover_markdown(d, None, came_from=came_from({"finished": "2026-01-02 03:04:05 UTC"}))
    assert "*Reused from the run of 2026-01-02 03:04:05 UTC: nothing it depends on changed since.*" in reused.splitlines()
    assert came_from(None) is None and "From the last run" not in hover_markdown(d, None)
