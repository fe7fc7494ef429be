"""The language server against the real engine and torch, driven by pytest-lsp presenting
VS Code's recorded client capabilities, on a copy of examples/ (one server for the module)."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest
import pytest_lsp
from lsp_helpers import (
    CRASH_MODEL,
    SLOW_MODEL,
    WAIT,
    apply_workspace_edit,
    change_doc,
    copy_examples,
    init_params,
    is_partial,
    next_publish,
    open_doc,
    publishes_for,
    save_doc,
    server_config,
    spans,
    wait_for,
)
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = [pytest.mark.torch, pytest.mark.asyncio(loop_scope="module")]

GUARD_URL = "https://docs.pytorch.org/docs/stable/user_guide/torch_compiler/compile/dynamic_shapes_troubleshooting_guardon_errors.html"


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = copy_examples(tmp_path_factory.mktemp("lsp"))
    (ws / "slow").mkdir()
    (ws / "slow" / "model.py").write_text(SLOW_MODEL)
    (ws / "crash").mkdir()
    (ws / "crash" / "model.py").write_text(CRASH_MODEL)
    return ws


@pytest_lsp.fixture(scope="module", config=server_config())
async def client(lsp_client: LanguageClient, ws: Path):
    # fix verification (tests/lsp/test_verification.py) off: these tests see the fixes as generated
    await asyncio.wait_for(lsp_client.initialize_session(init_params(ws, settings={"verifyFixes": "off"})), 30)
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), 30)


async def run_command(client: LanguageClient, *args: object, timeout: float = WAIT) -> object:
    return await asyncio.wait_for(
        client.workspace_execute_command_async(types.ExecuteCommandParams(command="exportlens.runDraftExport", arguments=list(args))), timeout
    )


async def test_open_publishes_guard_on_the_exact_range(client: LanguageClient, ws: Path) -> None:
    since = time.monotonic()
    uri = open_doc(client, ws / "data_dependent" / "item_branch.py")
    pub = await next_publish(client, uri, since)
    assert spans(pub.diagnostics) == [(8, 11, 8, 16, "data-dependent-guard")]
    d = pub.diagnostics[0]
    assert pub.version == 1
    assert d.source == "exportlens"
    assert d.severity == types.DiagnosticSeverity.Error
    assert d.code_description is not None and d.code_description.href == GUARD_URL
    assert "`n > 2`" in d.message
    assert d.data["diagnostic"]["data"]["expr"] == "u0 > 2"
    assert d.data["diagnostic"]["data"]["source_expr"] == "n > 2"


async def test_progress_begin_report_end(client: LanguageClient, ws: Path) -> None:
    # the run of the previous test reported progress; look at every token's sequence
    await wait_for(lambda: any(r and isinstance(r[-1], types.WorkDoneProgressEnd) for r in client.progress_reports.values()), what="a finished progress")
    runs = [r for r in client.progress_reports.values() if r and isinstance(r[-1], types.WorkDoneProgressEnd)]
    seq = runs[0]
    assert isinstance(seq[0], types.WorkDoneProgressBegin)
    assert seq[0].title == "ExportLens"
    assert seq[0].message == "export: export at item_branch.py:15"
    assert seq[0].cancellable is True
    reports = [v for v in seq if isinstance(v, types.WorkDoneProgressReport)]
    assert [r.message for r in reports] == [
        "item_branch.py: running the script",
        "export at item_branch.py:15: exporting",  # the user's own export: it fails
        "export at item_branch.py:15: draft export",  # then draft export finds the rest
        "export at item_branch.py:15: problems (1/1)",
    ]
    assert seq[-1].message == "1 problem"


async def test_hover_shows_guard_locals_and_symbol_origin(client: LanguageClient, ws: Path) -> None:
    uri = (ws / "data_dependent" / "item_branch.py").as_uri()
    hover = await asyncio.wait_for(
        client.text_document_hover_async(types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=8, character=13))),
        10,
    )
    assert hover is not None
    text = hover.contents.value  # type: ignore[union-attr]
    assert "guard in your code: `n > 2`" in text
    assert "as torch printed it: `u0 > 2`" in text
    assert "| `n` | `u0` |" in text
    assert "`u0` is `n`, created on line 8: `n = x.item()`" in text
    assert hover.range == types.Range(start=types.Position(line=8, character=11), end=types.Position(line=8, character=16))
    none = await asyncio.wait_for(
        client.text_document_hover_async(types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=0, character=0))),
        10,
    )
    assert none is None


async def test_code_lens_above_target(client: LanguageClient, ws: Path) -> None:
    uri = (ws / "data_dependent" / "item_branch.py").as_uri()
    lenses = await asyncio.wait_for(client.text_document_code_lens_async(types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))), 10)
    assert [(lens.range.start.line, lens.command.title.split(",")[0]) for lens in lenses] == [
        (14, "▶ Check export"),
        (14, "1 problem"),
        (14, "⚙ Make it export"),
    ]
    assert lenses[0].command.command == "exportlens.runDraftExport" and list(lenses[0].command.arguments or []) == [uri]
    assert lenses[1].command.title.startswith("1 problem, last run ") and lenses[1].command.title.endswith(" s")
    assert lenses[2].command.command == "exportlens.makeExportable" and list(lenses[2].command.arguments or []) == [uri]


async def test_quick_fix_apply_save_clears_the_diagnostic(client: LanguageClient, ws: Path) -> None:
    path = ws / "data_dependent" / "tensor_branch.py"
    since = time.monotonic()
    uri = open_doc(client, path)
    pub = await next_publish(client, uri, since)
    assert spans(pub.diagnostics) == [(7, 11, 7, 22, "data-dependent-guard")]
    ctx = types.CodeActionContext(diagnostics=list(pub.diagnostics), only=[types.CodeActionKind.QuickFix])
    actions = await asyncio.wait_for(
        client.text_document_code_action_async(
            types.CodeActionParams(text_document=types.TextDocumentIdentifier(uri=uri), range=pub.diagnostics[0].range, context=ctx)
        ),
        10,
    )
    assert actions, "no quick fix offered"
    preferred = [a for a in actions if isinstance(a, types.CodeAction) and a.is_preferred]
    assert len(preferred) == 1
    action = preferred[0]
    assert action.kind == types.CodeActionKind.QuickFix and action.edit is None  # lazy: edit comes from resolve
    resolved = await asyncio.wait_for(client.code_action_resolve_async(action), 10)
    assert resolved.edit is not None and resolved.edit.document_changes
    change = resolved.edit.document_changes[0]
    assert isinstance(change, types.TextDocumentEdit)
    assert change.text_document.uri == uri and change.text_document.version == 1
    assert apply_workspace_edit(client, resolved.edit)
    assert "torch.cond" in client.docs[uri][1]
    since = time.monotonic()
    save_doc(client, uri)
    pub = await next_publish(client, uri, since)
    # the problem is gone; the program that now exports is static where torch could keep it dynamic: a hint, no problem
    assert spans(pub.diagnostics) == [(14, 0, 14, 18, "could-be-dynamic")] and pub.diagnostics[0].severity == types.DiagnosticSeverity.Hint
    assert pub.version == 2


async def test_outdated_version_is_refused(client: LanguageClient, ws: Path) -> None:
    path = ws / "data_dependent" / "split_sizes.py"
    since = time.monotonic()
    uri = open_doc(client, path)
    pub = await next_publish(client, uri, since)
    assert spans(pub.diagnostics) == [(8, 16, 8, 29, "data-dependent-guard")]
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=pub.diagnostics[0].range, context=types.CodeActionContext(diagnostics=list(pub.diagnostics))
    )
    actions = await asyncio.wait_for(client.text_document_code_action_async(params), 10)
    assert [a.title for a in actions] == [
        "Pin the value: add `torch._check(size == 4)` — assumes `size == 4` for every input; any other value will raise",
        "Ignore this problem on this line (adds `# exportlens: ignore[data-dependent-guard]`; the problem stays, unreported)",
    ]
    text = client.docs[uri][1]
    change_doc(client, uri, "# a comment\n" + text)  # version 2: the action above is for version 1
    with pytest.raises(Exception, match="changed"):
        await asyncio.wait_for(client.code_action_resolve_async(actions[0]), 10)
    stale = await asyncio.wait_for(client.text_document_code_action_async(params), 10)
    assert [(a.title, a.disabled is not None) for a in stale] == [("ExportLens: fix unavailable until the file is run again", True)]
    change_doc(client, uri, text)  # back to the saved text


async def test_helper_module_gets_its_own_diagnostics(client: LanguageClient, ws: Path) -> None:
    since = time.monotonic()
    model = open_doc(client, ws / "two_files" / "model.py")
    layers = (ws / "two_files" / "layers.py").as_uri()
    pub = await next_publish(client, layers, since)
    assert spans(pub.diagnostics) == [(7, 7, 7, 12, "data-dependent-guard")]
    assert pub.version is None  # not open in the editor
    rel = pub.diagnostics[0].related_information
    assert rel is not None and [(r.location.uri, r.location.range.start.line) for r in rel] == [(model, 8)]
    assert publishes_for(client, model, since) == []  # nothing to say about model.py itself
    # fix the helper on disk and save it: the owner (model.py) runs again and the helper is cleared
    text = (ws / "two_files" / "layers.py").read_text()
    (ws / "two_files" / "layers.py").write_text(text.replace("    if k > 3:", "    torch._check(k > 3)\n    if k > 3:"))
    since = time.monotonic()
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=layers)))
    pub = await next_publish(client, layers, since)
    assert list(pub.diagnostics) == []


async def test_edits_during_a_run_shift_or_drop_ranges(client: LanguageClient, ws: Path) -> None:
    path = ws / "factory" / "build.py"
    since = time.monotonic()
    uri = open_doc(client, path)
    text = client.docs[uri][1]
    change_doc(client, uri, "# one\n# two\n" + text)  # typed while the run is in flight
    pub = await next_publish(client, uri, since)
    assert pub.version == 2
    assert spans(pub.diagnostics) == [(10, 11, 10, 21, "data-dependent-guard")]  # line 8 moved down by two
    since = time.monotonic()
    change_doc(client, uri, text.replace("if width >= 2:", "if width >= 2 :"))  # edit the guarded line itself
    save_doc(client, uri)
    pub = await next_publish(client, uri, since)
    assert spans(pub.diagnostics) == [(8, 11, 8, 21, "data-dependent-guard")]  # the re-run placed it anew


async def test_rapid_saves_publish_only_the_last_result(client: LanguageClient, ws: Path) -> None:
    path = ws / "constraint" / "model.py"
    since = time.monotonic()
    uri = open_doc(client, path)
    await next_publish(client, uri, since)
    text = client.docs[uri][1]
    since = time.monotonic()
    tokens_before = set(client.progress_reports)
    for i in range(3):  # back to back, as an editor's auto-save does: no run can finish in between
        change_doc(client, uri, text + f"# save {i}\n")
        save_doc(client, uri)

    def ended() -> list[str]:
        return [r[-1].message for t, r in client.progress_reports.items() if t not in tokens_before and r and isinstance(r[-1], types.WorkDoneProgressEnd)]

    # every run that began has ended (the last with its result): nothing is left to publish late
    await wait_for(lambda: "1 problem" in ended(), WAIT, "the last run's end")
    await wait_for(lambda: len(ended()) == len([t for t in client.progress_reports if t not in tokens_before]), 30, "every run's end")
    pubs = publishes_for(client, uri, since)  # the last run's own: its export failed (published at once), then its result
    assert [(p.version, is_partial(p)) for p in pubs] == [(4, True), (4, False)]
    assert spans(pubs[-1].diagnostics) == [(9, 11, 9, 26, "guard-added")]
    assert sorted(ended()) == ["1 problem"] + ["superseded by a newer run"] * (len(ended()) - 1)


async def test_a_save_while_the_disk_is_half_written_analyses_the_editors_text(client: LanguageClient, ws: Path) -> None:
    """An in-place save truncates the file before it writes it: the run must not see that moment."""
    path = ws / "half_written" / "model.py"
    path.parent.mkdir()
    path.write_text((ws / "data_dependent" / "item_branch.py").read_text())
    since = time.monotonic()
    uri = open_doc(client, path)
    await next_publish(client, uri, since)
    full = client.docs[uri][1]
    version = change_doc(client, uri, "# saved while the disk is half written\n" + full)
    since = time.monotonic()
    path.write_text("")  # the editor's write has truncated the file and not written it yet
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    pub = await next_publish(client, uri, since)
    path.write_text(client.docs[uri][1])
    assert pub.version == version
    assert spans(pub.diagnostics) == [(9, 11, 9, 16, "data-dependent-guard")]  # one line lower: the buffer's text


@pytest.mark.parametrize(
    ("name", "data", "words"),
    [
        ("latin.py", b"import torch\n# caf\xe9\nmodel = torch.nn.Linear(2, 2)\nexample_args = (torch.ones(2),)\n", "not valid utf-8"),
        ("binary.py", b"\x00\x01\x02\x7fELF\x00import torch\n", "this is not Python source: the file holds binary data (a NUL byte at line 1)"),
    ],
)
async def test_a_file_python_cannot_read_gets_a_diagnostic(client: LanguageClient, ws: Path, name: str, data: bytes, words: str) -> None:
    path = ws / "unreadable" / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(data)
    since = time.monotonic()
    uri = path.as_uri()
    text = data.decode("latin-1")  # what an editor shows for bytes that are not UTF-8
    client.docs[uri] = [1, text]
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    pub = await next_publish(client, uri, since)
    (d,) = pub.diagnostics
    assert d.code == "syntax-error" and words in d.message


async def test_cancel_from_the_progress_ui_kills_the_run(client: LanguageClient, ws: Path) -> None:
    uri = (ws / "slow" / "model.py").as_uri()
    tokens_before = set(client.progress_reports)
    started = time.monotonic()
    command = asyncio.ensure_future(run_command(client, uri))
    token = await wait_for(lambda: [t for t in client.progress_reports if t not in tokens_before and client.progress_reports[t]], 30, "progress begin")
    await asyncio.sleep(0.5)
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token[0]))
    result = await asyncio.wait_for(command, 20)
    assert result["cancelled"] is True and result["problems"] == 0
    assert time.monotonic() - started < 20  # the job (sleeping 60 s) was killed
    end = await wait_for(lambda: [v for v in client.progress_reports[token[0]] if isinstance(v, types.WorkDoneProgressEnd)], 10, "progress end")
    assert end[0].message == "cancelled"
    assert publishes_for(client, uri) == []


async def test_cancel_request_stops_the_command(client: LanguageClient, ws: Path) -> None:
    uri = (ws / "slow" / "model.py").as_uri()
    started = time.monotonic()
    fut = client.protocol.send_request(
        "workspace/executeCommand", types.ExecuteCommandParams(command="exportlens.runDraftExport", arguments=[uri]), msg_id="cancel-me"
    )
    await asyncio.sleep(1.0)
    client.protocol.notify("$/cancelRequest", types.CancelParams(id="cancel-me"))
    with pytest.raises(Exception, match="cancel"):
        await asyncio.wait_for(asyncio.wrap_future(fut), 20)
    assert time.monotonic() - started < 20


async def test_worker_crash_becomes_a_diagnostic(client: LanguageClient, ws: Path) -> None:
    path = ws / "crash" / "model.py"
    since = time.monotonic()
    uri = open_doc(client, path)
    pub = await next_publish(client, uri, since)
    assert [d.code for d in pub.diagnostics] == ["worker-crashed"]
    assert "7" in pub.diagnostics[0].message  # the exit status
    # and the server keeps serving: a later run works
    since = time.monotonic()
    result = await run_command(client, (ws / "missing_fake" / "model.py").as_uri())
    assert result["problems"] == 2 and result["ran"] is True


async def test_run_all_targets_of_the_workspace(client: LanguageClient, ws: Path) -> None:
    (ws / "slow" / "model.py").unlink()
    (ws / "crash" / "model.py").unlink()
    result = await run_command(client, timeout=180)
    names = sorted(t["name"] for t in result["targets"])
    from exportlens.engine import Engine

    planned = sorted(t.name for f in sorted(ws.rglob("*.py")) if (found := Engine().plan(str(f)).targets) for t in found.targets)
    assert names == planned  # every target of the workspace ran, each once
    assert {"build.py:make_target", "export at item_branch.py:15", "model"} <= set(names)
    assert result["problems"] >= 8


PICK_MODEL = """import torch


class Pick(torch.nn.Module):
    def forward(self, x, z):
        a = x.item()
        return z[a] * 2


model = Pick()
example_args = (torch.tensor(2), torch.randn(9))
"""


async def test_the_draft_export_option_shows_draft_exports_report_where_plain_export_passes(client: LanguageClient, ws: Path) -> None:
    """ "Run draft export on this file" (`[uri, {"draft": "always"}]`): plain export passes, so a check is
    clean; draft export, run anyway, crashes on `z[a]`, and that hint is published. A later plain check
    goes back to the user's export alone."""
    (ws / "passes").mkdir()
    path = ws / "passes" / "pick.py"
    path.write_text(PICK_MODEL)
    uri = path.as_uri()
    since = time.monotonic()
    checked = await run_command(client, uri)
    assert checked["ran"] and checked["problems"] == 0
    hint = (9, 0, 9, 14, "could-be-dynamic")  # z's length of 9 could be dynamic: a hint, never a problem
    assert [spans(p.diagnostics) for p in publishes_for(client, uri, since)][-1:] == [[hint]]
    since = time.monotonic()
    drafted = await run_command(client, uri, {"draft": "always"})
    assert drafted["ran"] and drafted["problems"] == 0  # a hint, not a problem: the model exports
    hinted, d = (await next_publish(client, uri, since)).diagnostics
    assert spans([hinted]) == [hint]
    assert (d.code, d.severity, d.range.start.line) == ("draft-export-crashed", types.DiagnosticSeverity.Information, 9)
    assert "plain torch.export.export passes with the same arguments" in d.message
    since = time.monotonic()
    await run_command(client, uri)
    assert spans((await next_publish(client, uri, since)).diagnostics) == [hint]


async def test_save_op_profiles(client: LanguageClient, ws: Path) -> None:
    got = await asyncio.wait_for(client.workspace_execute_command_async(types.ExecuteCommandParams(command="exportlens.saveOpProfiles", arguments=[])), 10)
    assert got == {"saved": False, "reason": "no file"}
    uri = (ws / "missing_fake" / "model.py").as_uri()
    got = await asyncio.wait_for(client.workspace_execute_command_async(types.ExecuteCommandParams(command="exportlens.saveOpProfiles", arguments=[uri])), 60)
    saved = ws / "missing_fake" / "model.op_profiles.yaml"
    assert got == {"saved": True, "files": [str(saved)]}
    assert saved.read_text().startswith("torch_version: '2.13'\noperators:\n  exportlens_demo.nonzero_rows.default:")


async def test_manual_mode_does_not_run_on_save(client: LanguageClient, ws: Path) -> None:
    client.set_configuration({"run": "manual", "timeoutSeconds": 30}, section="exportlens")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await asyncio.sleep(0.5)
    uri = (ws / "data_dependent" / "item_branch.py").as_uri()
    since = time.monotonic()
    save_doc(client, uri)
    await asyncio.sleep(3.0)
    assert publishes_for(client, uri, since) == []
    client.set_configuration({"run": "onSave"}, section="exportlens")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))


def _zygotes() -> list[int]:
    """The worker processes (zygotes) of this module's server, the child of this process that serves."""

    def cmdline(pid: str) -> str:
        try:
            return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            return ""

    def parent(pid: str) -> str:
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
        except OSError:
            return ""

    servers = {p for p in os.listdir("/proc") if p.isdigit() and parent(p) == str(os.getpid()) and "exportlens serve" in cmdline(p)}
    return sorted(int(p) for p in os.listdir("/proc") if p.isdigit() and parent(p) in servers and "exportlens.worker" in cmdline(p))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_a_settings_change_takes_effect_on_the_same_worker(client: LanguageClient, ws: Path) -> None:
    """Other settings are a new engine (never one changed in place), and for the same interpreter it
    keeps the warm worker: the new timeout holds, and no second zygote imported torch for it."""
    uri = (ws / "clean" / "model.py").as_uri()
    result = await run_command(client, uri)
    assert (result["ran"], result["problems"]) == (True, 0)
    before = _zygotes()
    assert len(before) == 1
    client.set_configuration({"timeoutSeconds": 5}, section="exportlens")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    try:
        await wait_for(lambda: any("'timeout_seconds': 5.0" in m.message for m in client.log_messages), 30, "the new settings")
        (ws / "slow_again").mkdir()
        (ws / "slow_again" / "model.py").write_text(SLOW_MODEL)  # the cancel tests deleted slow/
        slow = (ws / "slow_again" / "model.py").as_uri()
        since = time.monotonic()
        await run_command(client, slow)  # sleeps 60 s at import: the 5 s timeout ends it
        pub = await next_publish(client, slow, since)
        assert [d.code for d in pub.diagnostics] == ["worker-timeout"]
        assert _zygotes() == before
    finally:
        (ws / "slow_again" / "model.py").unlink(missing_ok=True)
        client.set_configuration({}, section="exportlens")
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))


async def test_interpreter_setting_reaches_the_worker(client: LanguageClient, ws: Path) -> None:
    client.set_configuration({"interpreter": str(ws / "no-such-python"), "run": "onSave"}, section="exportlens")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await asyncio.sleep(0.5)
    uri = (ws / "clean" / "model.py").as_uri()
    since = time.monotonic()
    result = await run_command(client, uri)
    assert result["ran"] is True
    pub = await next_publish(client, uri, since)
    assert [d.code for d in pub.diagnostics] == ["worker-crashed"]
    assert "no-such-python" in pub.diagnostics[0].message


async def test_graph_break_links_its_own_page_and_hovers(client: LanguageClient, ws: Path) -> None:
    since = time.monotonic()
    uri = open_doc(client, ws / "compile" / "branch.py")
    pub = await next_publish(client, uri, since)
    assert spans(pub.diagnostics) == [(8, 11, 8, 22, "graph-break")]
    (d,) = pub.diagnostics
    assert d.severity == types.DiagnosticSeverity.Warning
    assert d.code_description is not None and d.code_description.href.endswith("/gb/gb0170.html")
    hover = await asyncio.wait_for(
        client.text_document_hover_async(types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=8, character=14))),
        10,
    )
    assert hover is not None and "graph break id: `gb0170`" in hover.contents.value  # type: ignore[union-attr]
