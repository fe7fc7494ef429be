"""Verified fixes and "Make it export" in the language server, with the real engine and torch.

Verification starts only after a run's diagnostics are published, decorates the quick fixes and
the hover with each fix's outcome, and is cancelled by a newer edit. "Make it export" answers
with one annotated WorkspaceEdit that needs confirmation, after which the file exports.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsp_helpers import (
    ROOT,
    WAIT,
    change_doc,
    copy_examples,
    field_of,
    init_params,
    next_publish,
    open_doc,
    open_notebook,
    save_doc,
    save_notebook,
    server_config,
    spans,
    wait_for,
)
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = [pytest.mark.torch, pytest.mark.asyncio(loop_scope="module")]


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_examples(tmp_path_factory.mktemp("verify"))


@pytest_lsp.fixture(scope="module", config=server_config())
async def client(lsp_client: LanguageClient, ws: Path):
    await asyncio.wait_for(lsp_client.initialize_session(init_params(ws, settings={"verifyBudgetSeconds": 240})), 30)
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), 30)


def verifications(client: LanguageClient, uri: str, state: str | None = None) -> list[tuple[float, Any]]:
    return [
        (t, p)
        for t, p in client.verifications  # type: ignore[attr-defined]
        if field_of(p, "uri") == uri and (state is None or field_of(p, "state") == state)
    ]


async def actions_for(client: LanguageClient, uri: str, diags: list[types.Diagnostic]) -> list[types.CodeAction]:
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=diags[0].range,
        context=types.CodeActionContext(diagnostics=diags, only=[types.CodeActionKind.QuickFix]),
    )
    got = await asyncio.wait_for(client.text_document_code_action_async(params), 10)
    return [a for a in got or [] if isinstance(a, types.CodeAction)]


async def test_verification_starts_after_publish_and_decorates_the_fixes(client: LanguageClient, ws: Path) -> None:
    since = time.monotonic()
    uri = open_doc(client, ws / "data_dependent" / "item_branch.py")
    pub = await next_publish(client, uri, since)
    published_at = max(t for t, p in client.publishes if p.uri == uri)  # type: ignore[attr-defined]
    assert spans(pub.diagnostics) == [(8, 11, 8, 16, "data-dependent-guard")]
    ((started_at, started),) = await wait_for(lambda: verifications(client, uri, "started"), WAIT, "verification to start")
    first_publish = min(t for t, p in client.publishes if p.uri == uri and t >= since)  # type: ignore[attr-defined]
    assert first_publish <= published_at <= started_at, "verification began before the diagnostics were published"
    assert field_of(started, "fixes") == 3
    ((_, done),) = await wait_for(lambda: verifications(client, uri, "done"), 300, "verification to finish")
    assert list(field_of(done, "statuses")) == ["breaks", "export-passes", "export-passes"]

    actions = await actions_for(client, uri, list(pub.diagnostics))
    assert [(a.title, bool(a.is_preferred)) for a in actions] == [
        ("Rewrite this if/return as `torch.cond` (keeps both branches in the exported graph) — export passes ✓", True),
        ("Add `torch._check(n > 2)` — assumes `n > 2` for every input; inputs with n ≤ 2 will raise — export passes ✓", False),
        ("Add `torch._check(n <= 2)` — assumes `n <= 2` for every input; inputs with n > 2 will raise — breaks the target", False),
        ("Ignore this problem on this line (adds `# exportlens: ignore[data-dependent-guard]`; the problem stays, unreported)", False),
    ]
    resolved = await asyncio.wait_for(client.code_action_resolve_async(actions[1]), 10)
    assert resolved.edit is not None and resolved.edit.document_changes
    change = resolved.edit.document_changes[0]
    assert isinstance(change, types.TextDocumentEdit) and change.edits[0].new_text == "        torch._check(n > 2)\n"

    hover = await asyncio.wait_for(
        client.text_document_hover_async(types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=8, character=13))),
        10,
    )
    assert hover is not None
    text = hover.contents.value  # type: ignore[union-attr]
    assert "**Fixes, verified by re-running the target with each one**" in text
    assert "- Rewrite this if/return as `torch.cond` (keeps both branches in the exported graph) (preferred): export passes ✓" in text
    assert "will raise: breaks the target; changes the model's outputs on the example inputs (the model now raises" in text


async def test_a_notebooks_quick_fixes_carry_their_verified_outcomes(client: LanguageClient, ws: Path) -> None:
    """The same verification as a .py file's: each fix applied to the notebook's cells in memory and run again."""
    nb = ws / "nb" / "threshold.ipynb"
    nb.parent.mkdir()
    shutil.copy(ROOT / "tests/fixtures/notebook/threshold.ipynb", nb)
    uris = open_notebook(client, nb)
    since = time.monotonic()
    save_notebook(client, nb)
    pub = await next_publish(client, uris[2], since)
    assert spans(pub.diagnostics) == [(3, 11, 3, 16, "data-dependent-guard")]
    ((_, done),) = await wait_for(lambda: verifications(client, nb.as_uri(), "done"), 300, "the notebook's verification to finish")
    assert list(field_of(done, "statuses")) == ["breaks", "export-passes"]

    actions = await actions_for(client, uris[2], list(pub.diagnostics))
    assert [(a.title, bool(a.is_preferred)) for a in actions] == [
        ("Add `torch._check(n > 2)` — assumes `n > 2` for every input; inputs with n ≤ 2 will raise — export passes ✓", True),
        ("Add `torch._check(n <= 2)` — assumes `n <= 2` for every input; inputs with n > 2 will raise — breaks the target", False),
        ("Ignore this problem on this line (adds `# exportlens: ignore[data-dependent-guard]`; the problem stays, unreported)", False),
    ]
    resolved = await asyncio.wait_for(client.code_action_resolve_async(actions[0]), 10)
    assert resolved.edit is not None
    (change,) = resolved.edit.document_changes or []
    assert isinstance(change, types.TextDocumentEdit) and (change.text_document.uri, change.text_document.version) == (uris[2], 1)
    assert [(e.range.start.line, e.range.end.line, e.new_text) for e in change.edits] == [(3, 3, "        torch._check(n > 2)\n")]

    hover = await asyncio.wait_for(
        client.text_document_hover_async(
            types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uris[2]), position=types.Position(line=3, character=13))
        ),
        10,
    )
    assert hover is not None
    text = hover.contents.value  # type: ignore[union-attr]
    assert "- Add `torch._check(n > 2)` — assumes `n > 2` for every input; inputs with n ≤ 2 will raise (preferred): export passes ✓" in text
    assert sorted(p.name for p in nb.parent.iterdir()) == ["threshold.ipynb"]  # every run of the cells was in memory


async def test_a_newer_edit_cancels_verification(client: LanguageClient, ws: Path) -> None:
    since = time.monotonic()
    uri = open_doc(client, ws / "data_dependent" / "tensor_branch.py")
    await next_publish(client, uri, since)
    await wait_for(lambda: verifications(client, uri, "started"), WAIT, "verification to start")
    text = client.docs[uri][1]  # type: ignore[attr-defined]
    change_doc(client, uri, "# typing\n" + text)
    ((_, cancelled),) = await wait_for(lambda: verifications(client, uri, "cancelled"), 30, "verification to be cancelled")
    assert field_of(cancelled, "reason") == "edited"
    assert verifications(client, uri, "done") == []
    change_doc(client, uri, text)


async def test_make_it_export_sends_one_confirmed_edit_and_the_file_exports(client: LanguageClient, ws: Path) -> None:
    path = ws / "data_dependent" / "two_branches.py"
    since = time.monotonic()
    uri = open_doc(client, path)
    pub = await next_publish(client, uri, since)
    assert spans(pub.diagnostics) == [(7, 11, 7, 22, "data-dependent-guard"), (9, 11, 9, 22, "data-dependent-guard")]
    lenses = await asyncio.wait_for(client.text_document_code_lens_async(types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))), 10)
    make = [lens for lens in lenses if lens.command is not None and lens.command.command == "exportlens.makeExportable"]
    assert [(lens.range.start.line, lens.command.title, list(lens.command.arguments or [])) for lens in make if lens.command] == [
        (14, "⚙ Make it export", [uri])
    ]
    before = len(client.applied_edits)  # type: ignore[attr-defined]
    answer = await asyncio.wait_for(
        client.workspace_execute_command_async(types.ExecuteCommandParams(command="exportlens.makeExportable", arguments=[uri])), 600
    )
    assert answer["applied"] is True and answer["passes"] is True, answer
    assert answer["summary"] == "1 round, 2 fixes, export passes"
    (sent,) = client.applied_edits[before:]  # type: ignore[attr-defined]
    edit = sent.edit
    assert edit.change_annotations is not None
    (annotation,) = edit.change_annotations.values()
    assert annotation.needs_confirmation is True and annotation.label == "Make it export"
    (change,) = edit.document_changes
    assert change.text_document.uri == uri and change.text_document.version == 1
    assert all(isinstance(e, types.AnnotatedTextEdit) for e in change.edits)
    text = client.docs[uri][1]  # type: ignore[attr-defined]
    assert text.count("torch.cond(") == 2
    since = time.monotonic()
    save_doc(client, uri)
    pub = await next_publish(client, uri, since)
    # no problem left; the program that now exports is static in x's length, which torch could keep dynamic: a hint
    assert spans(pub.diagnostics) == [(20, 0, 20, 18, "could-be-dynamic")] and pub.diagnostics[0].severity == types.DiagnosticSeverity.Hint


async def test_make_it_export_declined_changes_nothing_and_says_so(client: LanguageClient, ws: Path) -> None:
    path = ws / "data_dependent" / "declined_two_branches.py"
    path.write_text((ROOT / "examples" / "data_dependent" / "two_branches.py").read_text())
    before_text = path.read_text()
    since = time.monotonic()
    uri = open_doc(client, path)
    await next_publish(client, uri, since)
    client.decline_edits = True  # type: ignore[attr-defined]
    shown = len(client.messages)
    try:
        answer = await asyncio.wait_for(
            client.workspace_execute_command_async(types.ExecuteCommandParams(command="exportlens.makeExportable", arguments=[uri])), 600
        )
    finally:
        client.decline_edits = False  # type: ignore[attr-defined]
    assert answer["applied"] is False and answer["summary"] == "1 round, 2 fixes, export passes", answer
    said = [m.message for m in client.messages[shown:] if m.type == types.MessageType.Warning]
    assert said == [
        "ExportLens: declined_two_branches.py: nothing was changed (the edit was declined or a document changed meanwhile). "
        "In a refactor preview, tick the changes before applying them."
    ]
    assert client.docs[uri][1] == before_text and path.read_text() == before_text  # type: ignore[attr-defined]


async def test_could_be_dynamic_its_verified_quick_fix_hover_and_suggest_dynamic_shapes(client: LanguageClient, ws: Path) -> None:
    """The hint of a passing export, its quick fix verified (the dims it made dynamic), the hover, and the
    "Suggest dynamic shapes" command (make-it-export with `dynamic`): one confirmed edit, after which the
    file says nothing."""
    since = time.monotonic()
    uri = open_doc(client, ws / "dynamic_shapes" / "token_mask.py")
    pub = await next_publish(client, uri, since)
    assert spans(pub.diagnostics) == [(25, 0, 25, 68, "could-be-dynamic")]
    assert pub.diagnostics[0].severity == types.DiagnosticSeverity.Hint
    ((_, done),) = await wait_for(lambda: verifications(client, uri, "done"), 300, "verification to finish")
    assert list(field_of(done, "statuses")) == ["export-passes"]
    actions = await actions_for(client, uri, list(pub.diagnostics))
    title = (
        "Write `dynamic_shapes` with every dimension torch keeps dynamic: `batch` (`input_ids.shape[0]`, `attention_mask.shape[0]`); "
        "`seq` (`input_ids.shape[1]`, `attention_mask.shape[1]`) — export passes ✓, 4 dimensions dynamic"
    )
    assert [(a.title, bool(a.is_preferred)) for a in actions][0] == (title, True)
    hover = await asyncio.wait_for(
        client.text_document_hover_async(types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=25, character=3))),
        10,
    )
    assert hover is not None and "could-be-dynamic" in hover.contents.value  # type: ignore[union-attr]
    shown = "export passes ✓; dynamic now: `input_ids.shape[0]`, `input_ids.shape[1]`, `attention_mask.shape[0]`, `attention_mask.shape[1]`"
    assert shown in hover.contents.value  # type: ignore[union-attr]
    before = len(client.applied_edits)  # type: ignore[attr-defined]
    answer = await asyncio.wait_for(
        client.workspace_execute_command_async(types.ExecuteCommandParams(command="exportlens.makeExportable", arguments=[uri, {"dynamic": True}])), 600
    )
    assert answer["applied"] is True and answer["passes"] is True and answer["summary"] == "1 round, 1 fix, export passes", answer
    (sent,) = client.applied_edits[before:]  # type: ignore[attr-defined]
    (annotation,) = sent.edit.change_annotations.values()
    assert annotation.needs_confirmation is True and annotation.label == "Suggest dynamic shapes"
    text = client.docs[uri][1]  # type: ignore[attr-defined]
    assert text == (ROOT / "tests" / "fixtures" / "fixes" / "dynamic_shapes" / "spec_token_mask.out.py").read_text()
    since = time.monotonic()
    save_doc(client, uri)
    pub = await next_publish(client, uri, since)
    assert list(pub.diagnostics) == []


async def test_suggest_dynamic_shapes_says_why_it_wrote_no_spec(client: LanguageClient, ws: Path) -> None:
    """The hint stands, but its spec cannot be written (the call's dynamic_shapes is built by a function):
    "Suggest dynamic shapes" changes nothing and says why, not that every dimension already is dynamic
    nor that only assumption fixes help."""
    path = ws / "dynamic_shapes" / "spec_by_a_function.py"
    path.write_text(
        "import torch\nfrom torch.export import Dim\n\n\nclass Add(torch.nn.Module):\n    def forward(self, x, y):\n        return x + y\n\n\n"
        'def spec_for(rows):\n    return {"x": {0: rows}, "y": None}\n\n\n'
        'torch.export.export(Add(), (torch.randn(3, 2), torch.randn(2)), dynamic_shapes=spec_for(Dim("rows")))\n'
    )
    since = time.monotonic()
    uri = open_doc(client, path)
    pub = await next_publish(client, uri, since)
    assert [(d.code, d.range.start.line) for d in pub.diagnostics] == [("could-be-dynamic", 13)]
    before, shown = len(client.applied_edits), len(client.messages)  # type: ignore[attr-defined]
    answer = await asyncio.wait_for(
        client.workspace_execute_command_async(types.ExecuteCommandParams(command="exportlens.makeExportable", arguments=[uri, {"dynamic": True}])), 600
    )
    why = "the call's own dynamic_shapes is not a literal this fix can complete; add the Dims by hand"
    assert answer["applied"] is False and answer["passes"] is True and answer["skipped"] == [], answer
    assert answer["summary"] == f"0 rounds, 0 fixes, export passes; no dynamic_shapes written: {why}", answer
    assert [(m.type, m.message) for m in client.messages[shown:]] == [  # type: ignore[attr-defined]
        (types.MessageType.Info, f"ExportLens: spec_by_a_function.py: 0 rounds, 0 fixes, export passes; no dynamic_shapes written: {why}.")
    ]
    assert client.applied_edits[before:] == []  # type: ignore[attr-defined]
