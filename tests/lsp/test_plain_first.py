"""Over LSP: the user's export fails, so its finding is published at once, before draft export
starts (the run's progress reports the draft-export phase only after that publish), and the run's
final publish says the same thing, on the same version."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

import pytest
import pytest_lsp
from lsp_helpers import EXAMPLES, WAIT, init_params, is_partial, open_doc, server_config, wait_for
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = [pytest.mark.torch, pytest.mark.asyncio(loop_scope="module")]


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("lsp-plain-first") / "examples"
    shutil.copytree(EXAMPLES / "dynamic_shapes", ws / "dynamic_shapes", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(EXAMPLES / "pyproject.toml", ws / "pyproject.toml")
    return ws


@pytest_lsp.fixture(scope="module", config=server_config())
async def client(lsp_client: LanguageClient, ws: Path):
    await asyncio.wait_for(lsp_client.initialize_session(init_params(ws, settings={"verifyFixes": "off"})), 30)
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), 30)


def messages(client: LanguageClient) -> list[tuple[float, str]]:
    """(time, message) of every work-done progress report (raw JSON values)."""
    return [(t, str((v or {}).get("message") or "")) for t, v in client.timed_progress]  # type: ignore[attr-defined]


def ends(client: LanguageClient, after: float) -> list[float]:
    return [t for t, v in client.timed_progress if (v or {}).get("kind") == "end" and t > after]  # type: ignore[attr-defined]


async def test_the_failed_export_is_published_before_draft_export_starts(client: LanguageClient, ws: Path) -> None:
    uri = open_doc(client, ws / "dynamic_shapes" / "range_refine.py")
    draft = await wait_for(lambda: [t for t, m in messages(client) if m.endswith(": draft export")], WAIT + 60, "the draft-export phase")
    ended = await wait_for(lambda: ends(client, draft[0]), WAIT, "the run's end")
    await wait_for(lambda: [p for t, p in client.publishes if p.uri == uri and t >= ended[0] - 5 and p.diagnostics], WAIT, "the final publish")  # type: ignore[attr-defined]
    mine = [(t, p) for t, p in client.publishes if p.uri == uri and p.diagnostics]  # type: ignore[attr-defined]
    early = [(t, p) for t, p in mine if t < draft[0]]
    assert early, "plain export's failure was not published before draft export started"
    first, last = early[0][1], mine[-1][1]
    shown = [(d.code, d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character) for d in first.diagnostics]
    assert shown == [("guard-added", 11, 11, 11, 26)]
    assert [(d.code, d.range.start.line) for d in last.diagnostics] == [("guard-added", 11)]
    assert first.version == last.version == 1
    assert is_partial(first) and not is_partial(last)  # the early one says the run is still going
    assert "torch suggests `seq = Dim('seq', min=17, max=64)`" in first.diagnostics[0].message


async def test_a_model_that_exports_runs_no_draft_export(client: LanguageClient, ws: Path) -> None:
    since = time.monotonic()
    uri = open_doc(client, ws / "dynamic_shapes" / "auto_branch.py")
    await wait_for(lambda: ends(client, since), WAIT, "the run's end")
    await wait_for(lambda: [p for t, p in client.publishes if p.uri == uri], WAIT, "a publish")  # type: ignore[attr-defined]
    phases = [m for t, m in messages(client) if t > since]
    assert not [m for m in phases if m.endswith(": draft export")], phases
    last = [p for t, p in client.publishes if p.uri == uri][-1]  # type: ignore[attr-defined]
    assert [(d.code, d.severity, d.range.start.line) for d in last.diagnostics] == [("dim-specialized", types.DiagnosticSeverity.Warning, 7)]
