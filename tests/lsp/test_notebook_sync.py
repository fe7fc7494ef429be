"""Jupyter notebooks over LSP 3.17 notebook sync: the diagnostic lands in the right cell, its fix edits that cell."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

import pytest
import pytest_lsp
from lsp_helpers import ROOT, WAIT, apply_text_edits, init_params, next_publish, open_notebook, save_notebook, server_config, spans
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = [pytest.mark.torch, pytest.mark.asyncio(loop_scope="module")]

NB = ROOT / "tests/fixtures/notebook/threshold.ipynb"


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("nb")
    (ws / "pyproject.toml").write_text("[project]\nname = 'nb'\n")
    shutil.copy(NB, ws / "threshold.ipynb")
    return ws


@pytest_lsp.fixture(scope="module", config=server_config())
async def client(lsp_client: LanguageClient, ws: Path):
    params = init_params(ws, settings={"verifyFixes": "off"})  # the fixes as generated, not yet verified
    # VS Code (vscode-languageclient 9) announces notebook sync; pytest-lsp's recorded capabilities predate it
    params.capabilities.notebook_document = types.NotebookDocumentClientCapabilities(
        synchronization=types.NotebookDocumentSyncClientCapabilities(dynamic_registration=True, execution_summary_support=True)
    )
    result = await asyncio.wait_for(lsp_client.initialize_session(params), 30)
    lsp_client.capabilities_seen = result.capabilities  # type: ignore[attr-defined]
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), 30)


async def test_server_declares_notebook_sync_with_save(client: LanguageClient) -> None:
    sync = client.capabilities_seen.notebook_document_sync  # type: ignore[attr-defined]
    assert isinstance(sync, types.NotebookDocumentSyncOptions) and sync.save is True
    (selector,) = sync.notebook_selector
    assert [c.language for c in selector.cells or []] == ["python"]


async def test_save_puts_the_diagnostic_in_its_cell_and_the_fix_edits_that_cell(client: LanguageClient, ws: Path) -> None:
    nb = ws / "threshold.ipynb"
    uris = open_notebook(client, nb)  # code cells only: 1, 2, 3, 4, 6
    assert sorted(uris) == [1, 2, 3, 4, 6]
    await asyncio.sleep(0.5)
    assert not [p for t, p in client.publishes]  # type: ignore[attr-defined]  # opening runs nothing: saving does
    since = time.monotonic()
    save_notebook(client, nb)
    pub = await next_publish(client, uris[2], since, timeout=WAIT)
    (d,) = pub.diagnostics
    assert (d.code, d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character) == ("data-dependent-guard", 3, 11, 3, 16)
    assert pub.version == 1
    assert "`n > 2`" in d.message
    assert all(not p.diagnostics for t, p in client.publishes if p.uri != uris[2])  # type: ignore[attr-defined]

    actions = await asyncio.wait_for(
        client.text_document_code_action_async(
            types.CodeActionParams(text_document=types.TextDocumentIdentifier(uri=uris[2]), range=d.range, context=types.CodeActionContext(diagnostics=[d]))
        ),
        10,
    )
    titles = [a.title for a in actions]
    assert titles[0] == "Add `torch._check(n > 2)` — assumes `n > 2` for every input; inputs with n ≤ 2 will raise"
    assert titles[-1].startswith("Ignore this problem on this line")
    preferred = [a for a in actions if a.is_preferred]
    assert len(preferred) == 1 and preferred[0].edit is None  # as for a .py file: the edit comes from resolve
    resolved = await asyncio.wait_for(client.code_action_resolve_async(preferred[0]), 10)
    assert resolved.edit is not None
    (change,) = resolved.edit.document_changes or []
    assert isinstance(change, types.TextDocumentEdit)
    assert change.text_document.uri == uris[2] and change.text_document.version == 1
    cell_text = client.docs[uris[2]][1]  # type: ignore[attr-defined]
    fixed = apply_text_edits(cell_text, [e for e in change.edits if isinstance(e, types.TextEdit)])
    assert fixed.splitlines()[3:5] == ["        torch._check(n > 2)", "        if n > 2:"]

    ignore = await asyncio.wait_for(client.code_action_resolve_async(actions[-1]), 10)
    (change,) = ignore.edit.document_changes or []  # type: ignore[union-attr]
    assert change.text_document.uri == uris[2]  # type: ignore[union-attr]
    assert apply_text_edits(cell_text, list(change.edits)).splitlines()[3] == "        if n > 2:  # exportlens: ignore[data-dependent-guard]"  # type: ignore[arg-type]


async def test_hover_on_the_cells_diagnostic(client: LanguageClient, ws: Path) -> None:
    nb = ws / "threshold.ipynb"
    cell2 = f"vscode-notebook-cell:{nb}#cell2"

    async def hover(uri: str, line: int, character: int) -> types.Hover | None:
        params = types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=character))
        return await asyncio.wait_for(client.text_document_hover_async(params), 10)

    got = await hover(cell2, 3, 13)  # inside `n > 2` on the cell's line 3
    assert got is not None and isinstance(got.contents, types.MarkupContent)
    assert got.range == types.Range(start=types.Position(line=3, character=11), end=types.Position(line=3, character=16))
    text = got.contents.value
    assert text.startswith("**ExportLens · `data-dependent-guard`**")
    assert "- guard in your code: `n > 2`" in text
    assert "- `u0` is `n`, created on line 3: `n = x.item()`" in text  # the cell's own line numbers
    assert await hover(cell2, 2, 13) is None  # the line above: no finding there
    assert await hover(f"vscode-notebook-cell:{nb}#cell4", 0, 5) is None  # the target's cell has none


async def test_code_lens_on_the_target_cell(client: LanguageClient, ws: Path) -> None:
    nb = ws / "threshold.ipynb"
    uri = nb.as_uri()
    lenses = await asyncio.wait_for(
        client.text_document_code_lens_async(types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=f"vscode-notebook-cell:{nb}#cell4"))), 10
    )
    assert [(lens.range.start.line, lens.command.title) for lens in lenses] == [(0, "▶ Check export"), (0, "1 problem in this notebook")]
    assert list(lenses[0].command.arguments or []) == [uri]
    other = await asyncio.wait_for(
        client.text_document_code_lens_async(types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=f"vscode-notebook-cell:{nb}#cell2"))), 10
    )
    assert list(other) == []


async def test_saving_the_fix_clears_the_cell(client: LanguageClient, ws: Path) -> None:
    nb = ws / "threshold.ipynb"
    text = nb.read_text()
    nb.write_text(text.replace('"        if n > 2:\\n",', '"        torch._check(n > 2)\\n",\n    "        if n > 2:\\n",'))
    since = time.monotonic()
    save_notebook(client, nb)
    pub = await next_publish(client, f"vscode-notebook-cell:{nb}#cell2", since)
    assert list(pub.diagnostics) == []
    # the target's cell: the notebook's model now exports, and x's length could be dynamic (a hint, no problem)
    target_cell = await next_publish(client, f"vscode-notebook-cell:{nb}#cell4", since)
    assert spans(target_cell.diagnostics) == [(0, 0, 0, 71, "could-be-dynamic")]
