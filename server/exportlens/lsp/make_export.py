"""The `exportlens.makeExportable` command: "make it export" on the editor's texts (and, with
`{"dynamic": true}`, "Suggest dynamic shapes": then the could-be-dynamic hint's verified spec).

Runs the fix loop (`exportlens.make_exportable`) on the open documents' texts (the disk's for
files that are not open), then sends the result as ONE WorkspaceEdit across every touched file.
Its edits carry a change annotation that needs confirmation, so VS Code shows its refactor
preview and nothing changes until the user accepts. Versioned edits: a document edited while the
loop ran refuses the edit rather than receiving it on the wrong lines.
"""

from __future__ import annotations

import os
from typing import Any

from lsprotocol import types

from exportlens.lsp.convert import lsp_range, path_of, uri_of
from exportlens.lsp.host import Host

ANNOTATION = "exportlens.makeExportable"


def _arg_path(arg: Any) -> str | None:
    if isinstance(arg, dict):
        arg = arg.get("uri") or arg.get("external")
    if not isinstance(arg, str):
        return None
    return path_of(arg) if arg.startswith("file:") else (os.path.normpath(arg) if os.path.isabs(arg) else None)


def _annotations_supported(ls: Host) -> bool:
    caps = ls.client_capabilities
    ws = caps.workspace if caps is not None else None
    edit = ws.workspace_edit if ws is not None else None
    return bool(edit is not None and edit.change_annotation_support is not None)


def workspace_edit(ls: Host, changed: dict[str, tuple[str, str]], label: str, description: str) -> types.WorkspaceEdit:
    """One versioned TextDocumentEdit per file (whole-line edits only where lines changed), all
    under one change annotation that needs confirmation when the client supports annotations."""
    from exportlens.fixes.common import line_edits

    annotated = _annotations_supported(ls)
    changes: list[types.TextDocumentEdit | types.CreateFile | types.RenameFile | types.DeleteFile] = []
    for path, (old, new) in sorted(changed.items()):
        _, version = ls.runs.publisher.current_text(path)
        edits: list[types.TextEdit | types.AnnotatedTextEdit | types.SnippetTextEdit] = []
        for e in line_edits(path, old, new):
            if annotated:
                edits.append(types.AnnotatedTextEdit(range=lsp_range(e.range), new_text=e.new_text, annotation_id=ANNOTATION))
            else:
                edits.append(types.TextEdit(range=lsp_range(e.range), new_text=e.new_text))
        changes.append(
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(uri=ls.open_docs.get(path) or uri_of(path), version=version), edits=edits
            )
        )
    annotations = {ANNOTATION: types.ChangeAnnotation(label=label, needs_confirmation=True, description=description)} if annotated else None
    return types.WorkspaceEdit(document_changes=changes, change_annotations=annotations)


async def run_make_exportable(ls: Any, args: tuple[Any, ...]) -> dict[str, Any]:
    """Answer of the command: what was done, and whether the edit was applied."""
    from exportlens.make_exportable import make_exportable

    def tell(message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        ls.window_show_message(types.ShowMessageParams(type=kind, message=message))

    if not ls.can_run():
        return {"applied": False, "passes": False, "reason": "untrusted"}
    path = _arg_path(args[0]) if args else None
    if path is None or not os.path.isfile(path):
        tell("ExportLens: Make it export needs a Python file (pass its URI).", types.MessageType.Warning)
        return {"applied": False, "passes": False, "reason": "no file"}
    if ls.runs.plans.document(path).script != path:  # a notebook runs in parts: its fixes are the quick fixes on its cells
        tell("ExportLens: Make it export edits Python files; apply a notebook's fixes with the quick fixes on its cells.", types.MessageType.Warning)
        return {"applied": False, "passes": False, "reason": "not a Python file"}
    options = args[1] if len(args) > 1 and isinstance(args[1], dict) else {}
    assume = bool(options.get("assume", False))
    dynamic = bool(options.get("dynamic", False))  # "Suggest dynamic shapes": then the could-be-dynamic spec too
    with ls.runs.gate.foreground():  # somebody waits for this: verification stops until it is done
        outcome = await make_exportable(
            ls.runs.engines.current(), path, read=ls.actions.read, assume=assume, budget=ls.settings.verify_budget_seconds, jobs=1, dynamic=dynamic
        )
    summary = outcome.summary()
    if dynamic and outcome.unwritten:  # a hint whose spec this fix cannot write (the user's spec is not a literal, ...)
        summary += "; no dynamic_shapes written: " + "; ".join(why for _, _, why in outcome.unwritten)
    elif dynamic and outcome.passes and not any(s.code == "could-be-dynamic" for s in outcome.steps):
        summary += "; every dimension torch can keep dynamic already is (or a batch of 1 is all that keeps one static)"
    answer: dict[str, Any] = {
        "passes": outcome.passes,
        "rounds": outcome.rounds,
        "fixes": [s.title for s in outcome.steps],
        "summary": summary,
        "skipped": list(outcome.skipped),
        "files": sorted(outcome.changed()),
        "remaining": [{"file": d.file, "line": d.range.start.line + 1, "code": d.code} for d in outcome.remaining],
    }
    changed = outcome.changed()
    if not changed:
        hint = " (only assumption fixes help: run it again and include assumptions)" if outcome.skipped else ""
        tell(f"ExportLens: {os.path.basename(path)}: {summary}{hint}.", types.MessageType.Info if outcome.passes else types.MessageType.Warning)
        return answer | {"applied": False}
    edit = workspace_edit(ls, changed, "Suggest dynamic shapes" if dynamic else "Make it export", summary)
    result = await ls.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit=edit, label=f"ExportLens: {summary}"))
    answer["applied"] = bool(result.applied)
    if not result.applied:
        why = result.failure_reason or "the edit was declined or a document changed meanwhile"
        ls.log(f"make it export: {path}: not applied: {why}")
        # VS Code lists edits that need confirmation unticked in its Refactor Preview: "Apply" alone applies nothing
        tell(
            f"ExportLens: {os.path.basename(path)}: nothing was changed ({why}). In a refactor preview, tick the changes before applying them.",
            types.MessageType.Warning,
        )
    return answer
