"""An untrusted workspace: the server runs no user code at all and says so once."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
import pytest_lsp
from lsp_helpers import copy_examples, init_params, open_doc, open_notebook, save_doc, save_notebook, server_config
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = [pytest.mark.quick, pytest.mark.asyncio(loop_scope="module")]


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = copy_examples(tmp_path_factory.mktemp("untrusted"))
    # Would leave a mark if any code of the workspace ran.
    (ws / "marker.py").write_text(
        "import pathlib\npathlib.Path(__file__).with_name('RAN').write_text('x')\nimport torch\nmodel = torch.nn.Identity()\nexample_args = (torch.ones(1),)\n"
    )
    import json

    (ws / "marker.ipynb").write_text(
        json.dumps(
            {
                "nbformat": 4,
                "nbformat_minor": 5,
                "metadata": {},
                "cells": [
                    {
                        "cell_type": "code",
                        "metadata": {},
                        "outputs": [],
                        "execution_count": None,
                        "source": (ws / "marker.py").read_text().replace("__file__", "'marker.py'").splitlines(keepends=True),
                    }
                ],
            }
        )
    )
    return ws


@pytest_lsp.fixture(scope="module", config=server_config())
async def client(lsp_client: LanguageClient, ws: Path):
    await asyncio.wait_for(lsp_client.initialize_session(init_params(ws, trusted=False)), 30)
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), 30)


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    if int(fh.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    return out


async def test_untrusted_runs_nothing_and_says_so_once(client: LanguageClient, ws: Path) -> None:
    uris = [open_doc(client, ws / "marker.py"), open_doc(client, ws / "data_dependent" / "item_branch.py")]
    for uri in uris:
        save_doc(client, uri)
    open_notebook(client, ws / "marker.ipynb")
    save_notebook(client, ws / "marker.ipynb")
    result = await asyncio.wait_for(
        client.workspace_execute_command_async(types.ExecuteCommandParams(command="exportlens.runDraftExport", arguments=[(ws / "marker.ipynb").as_uri()])), 10
    )
    assert result == {"ran": False, "reason": "untrusted"}
    result = await asyncio.wait_for(
        client.workspace_execute_command_async(types.ExecuteCommandParams(command="exportlens.runDraftExport", arguments=[uris[1]])), 10
    )
    assert result == {"ran": False, "reason": "untrusted"}
    everything = await asyncio.wait_for(
        client.workspace_execute_command_async(types.ExecuteCommandParams(command="exportlens.runDraftExport", arguments=[])), 10
    )
    assert everything == {"ran": False, "reason": "untrusted"}
    lenses = await asyncio.wait_for(client.text_document_code_lens_async(types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uris[1]))), 10)
    assert list(lenses or []) == []
    await asyncio.sleep(2.0)
    assert client.diagnostics == {}
    assert not (ws / "RAN").exists()
    infos = [m for m in client.messages if m.type == types.MessageType.Info]
    assert len(infos) == 1 and "not trusted" in infos[0].message
    server = client._server
    assert server is not None and _children(server.pid) == []  # no worker process was started
    assert not any("[worker]" in m.message for m in client.log_messages)
