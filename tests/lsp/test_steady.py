"""The server on a busy day: the interpreter setting switched while a run is in flight, and a
20,000-line file being edited (one server for the module)."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest
import pytest_lsp
from lsp_helpers import (
    EXAMPLES,
    WAIT,
    change_doc,
    init_params,
    next_publish,
    open_doc,
    publishes_for,
    server_config,
    spans,
    wait_for,
)
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = [pytest.mark.torch, pytest.mark.asyncio(loop_scope="module")]


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("steady")
    (ws / "pyproject.toml").write_text("[project]\nname = 'p'\nversion = '0'\n")
    guard = (EXAMPLES / "data_dependent" / "item_branch.py").read_text()
    (ws / "slow_guard.py").write_text(guard.replace("import torch\n", "import time\n\nimport torch\n\ntime.sleep(4)\n", 1))
    filler = "".join(f"v{i} = {i}\n" if i % 3 else "\n" for i in range(20_000))
    (ws / "long.py").write_text(guard + filler)
    return ws


@pytest_lsp.fixture(scope="module", config=server_config())
async def client(lsp_client: LanguageClient, ws: Path):
    await asyncio.wait_for(lsp_client.initialize_session(init_params(ws)), 30)
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), 30)


async def test_switching_the_interpreter_mid_run_publishes_no_false_crash(client: LanguageClient, ws: Path) -> None:
    uri = (ws / "slow_guard.py").as_uri()
    tokens_before = set(client.progress_reports)
    since = time.monotonic()
    open_doc(client, ws / "slow_guard.py")
    await wait_for(lambda: [t for t in client.progress_reports if t not in tokens_before and client.progress_reports[t]], WAIT, "the run's progress")
    # the same interpreter by another name: a new worker, and the old one is closed under the run
    other = str(Path(sys.executable).parent / "python3")
    client.set_configuration({"interpreter": other, "run": "onSave"}, section="exportlens")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    pub = await next_publish(client, uri, since, timeout=WAIT * 2)
    assert spans(pub.diagnostics) == [(12, 11, 12, 16, "data-dependent-guard")]
    assert not any(d.code == "worker-crashed" for p in publishes_for(client, uri, since) for d in p.diagnostics)


async def test_a_long_file_being_edited_answers_hover_at_once(client: LanguageClient, ws: Path) -> None:
    since = time.monotonic()
    uri = open_doc(client, ws / "long.py")
    pub = await next_publish(client, uri, since, timeout=WAIT * 2)
    assert spans(pub.diagnostics) == [(8, 11, 8, 16, "data-dependent-guard")]
    change_doc(client, uri, "# typed, not saved\n" + client.docs[uri][1])
    started = time.monotonic()
    hover = await asyncio.wait_for(
        client.text_document_hover_async(types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=9, character=12))),
        60,
    )
    took = time.monotonic() - started
    assert hover is not None and "n > 2" in hover.contents.value  # type: ignore[union-attr]
    assert took < 10.0  # the whole-file diff took a minute; the event loop answered nothing meanwhile
