"""The editor with an interpreter whose torch has no draft_export (a stand-in for torch 2.7).

One `window/showMessage` per server start names the installed version and the minimum; the
server stays up and quiet: runs end without diagnostics or tracebacks, one worker serves them all.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

import pytest
import pytest_lsp
from lsp_helpers import ROOT, init_params, make_client, open_doc, save_doc, wait_for
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

sys.path.insert(0, str(ROOT / "tests"))
from old_torch import STARTS_ENV, VERSION, make_project, make_venv  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.asyncio(loop_scope="module")]

WORK = Path(tempfile.mkdtemp(prefix="exportlens-old-torch-"))
STARTS = WORK / "starts.log"


def _config() -> ClientServerConfig:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "server"), env.get("PYTHONPATH")) if p)
    env[STARTS_ENV] = str(STARTS)
    return ClientServerConfig(server_command=[sys.executable, "-m", "exportlens", "serve"], client_factory=make_client, server_env=env)


@pytest.fixture(scope="module")
def setup() -> tuple[Path, Path]:
    return make_venv(WORK / "old-torch-standin"), make_project(WORK / "proj")


@pytest_lsp.fixture(scope="module", config=_config())
async def client(lsp_client: LanguageClient, setup: tuple[Path, Path]):
    python, proj = setup
    await asyncio.wait_for(lsp_client.initialize_session(init_params(proj, settings={"interpreter": str(python)})), 30)
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), 30)


def _warnings(client: LanguageClient) -> list[types.ShowMessageParams]:
    return [m for m in client.messages if m.type == types.MessageType.Warning]


async def test_one_message_then_quiet(client: LanguageClient, setup: tuple[Path, Path]) -> None:
    _, proj = setup
    said = await wait_for(lambda: _warnings(client), what="the 'torch too old' message")
    assert len(said) == 1 and VERSION in said[0].message and "2.8" in said[0].message
    for name in ("model.py", "script.py"):
        uri = open_doc(client, proj / name)
        save_doc(client, uri)  # a run on save, like an editor
        result = await asyncio.wait_for(
            client.workspace_execute_command_async(types.ExecuteCommandParams(command="exportlens.runDraftExport", arguments=[uri])), 60
        )
        assert result is not None and result["ran"] and result["problems"] == 0
        assert result["targets"] and {t["status"] for t in result["targets"]} == {"unsupported"}
    assert not any(p.diagnostics for _, p in client.publishes)  # type: ignore[attr-defined]
    # still answering, still one message, no traceback anywhere, one worker for everything
    lenses = await asyncio.wait_for(
        client.text_document_code_lens_async(types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=(proj / "model.py").as_uri()))), 10
    )
    assert lenses
    assert len(_warnings(client)) == 1
    assert not any("Traceback" in m.message for m in [*client.messages, *client.log_messages])
    assert len(STARTS.read_text().splitlines()) == 1
