"""CodeLens: "Check export" on each target of a document, and what its last run found.

The same for every document: a target's lens goes where the document's mapper puts the target
(its line in a .py file, or its line in a notebook's cell) and only on that place. The count is
the target's problems; in a document run in parts (a notebook) it says it counts the whole
document, and "Make it export", which rewrites whole files, is offered only for a file.
"""

from __future__ import annotations

from lsprotocol import types

from exportlens.document import SUFFIXES
from exportlens.lsp.convert import uri_of
from exportlens.lsp.progress import problems_text
from exportlens.lsp.runs import Runs
from exportlens.model import TargetResult, place, split_place


def code_lenses(runs: Runs, where: str, run_command: str, make_command: str) -> list[types.CodeLens]:
    """The lenses of one place (a file, a notebook's cell) of a document ExportLens can run."""
    owner = split_place(where)[0]
    if not owner.endswith(SUFFIXES):
        return []
    found, _ = runs.plans.plan(owner)
    if found is None:
        return []
    mapper = runs.plans.document(owner).mapper
    res = runs.publisher.results.get(owner)
    arguments = [runs.ls.open_docs.get(owner) or uri_of(owner)]
    lenses = []
    for t in found.targets:
        shown = mapper.target(TargetResult(t.name, mapper.script, t.line, t.kind, "", 0.0))
        if place(shown.file, shown.cell) != where:
            continue
        rng = types.Range(start=types.Position(line=shown.line - 1, character=0), end=types.Position(line=shown.line - 1, character=0))
        lenses.append(types.CodeLens(range=rng, command=types.Command(title="▶ Check export", command=run_command, arguments=arguments)))
        ran = next((r for r in res.targets if r.name == shown.name), None) if res else None
        if res is None or ran is None:
            continue
        n = res.problems(shown.name)
        title = f"{problems_text(n)} in this {mapper.container}" if mapper.container else f"{problems_text(n)}, last run {ran.seconds:.1f} s"
        lenses.append(types.CodeLens(range=rng, command=types.Command(title=title, command="")))
        if n and mapper.container is None:
            lenses.append(types.CodeLens(range=rng, command=types.Command(title="⚙ Make it export", command=make_command, arguments=arguments)))
    return lenses
