"""`# exportlens: ignore[...]` comments: parsing, the engine applying them, the edits that add/remove them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import EXAMPLES, SyncEngine, spans
from test_cli import cli

from exportlens import fix_registry as registry
from exportlens import suppress
from exportlens.fixes import apply_edits
from exportlens.model import Diagnostic, Range

pytestmark = pytest.mark.torch

BRANCH = (EXAMPLES / "data_dependent" / "item_branch.py").read_text()
IF_LINE = "        if n > 2:\n"


def _model(project: Path, comment: str) -> Path:
    path = project / "item_branch.py"
    assert IF_LINE in BRANCH
    path.write_text(BRANCH.replace(IF_LINE, f"        if n > 2:{comment}\n"))
    return path


# -- parsing -------------------------------------------------------------------------------------


def test_directives_bare_listed_and_only_real_comments() -> None:
    text = (
        "x = 1  # exportlens: ignore\n"
        "y = 2  # note  #exportlens:ignore[a-b, c]\n"
        's = "# exportlens: ignore"\n'
        "z = 3  # exportlens: ignored\n"
        "# é # exportlens: ignore[x]\n"
    )
    found = suppress.directives(text)
    assert sorted(found) == [0, 1, 4]
    assert found[0].codes is None and found[0].range == Range.of(0, 7, 0, 27)
    assert found[1].codes == ("a-b", "c") and found[1].range == Range.of(1, 15, 1, 41)
    assert found[4].codes == ("x",) and found[4].range == Range.of(4, 4, 4, 27)  # UTF-16 columns


# -- the engine ----------------------------------------------------------------------------------


def test_listed_code_silences_exactly_that_finding(engine: SyncEngine, project: Path) -> None:
    res = engine.check(_model(project, "  # exportlens: ignore[data-dependent-guard]"))
    assert spans(res) == []
    assert [(d.code, d.range) for d in res.ignored] == [("data-dependent-guard", Range.of(8, 11, 8, 16))]


def test_bare_ignore_silences_and_keeps_other_comments(engine: SyncEngine, project: Path) -> None:
    res = engine.check(_model(project, "  # keep me # exportlens: ignore"))
    assert spans(res) == []
    assert [d.code for d in res.ignored] == ["data-dependent-guard"]


def test_wrong_code_silences_nothing_and_says_so(engine: SyncEngine, project: Path) -> None:
    res = engine.check(_model(project, "  # exportlens: ignore[graph-break, no-such-code]"))
    assert spans(res) == [("item_branch.py", 8, 11, 8, 16, "data-dependent-guard"), ("item_branch.py", 8, 19, 8, 66, "unused-ignore")]
    hint = res.diagnostics[1]
    assert hint.severity == 4
    assert hint.message.startswith("Unused ignore: `graph-break`, `no-such-code` (not an ExportLens code) silence nothing")
    assert res.ignored == []


def test_unused_bare_ignore_elsewhere_gets_a_hint_with_a_removal(engine: SyncEngine, project: Path) -> None:
    path = project / "item_branch.py"
    text = BRANCH.replace("        n = x.item()\n", "        n = x.item()  # exportlens: ignore\n")
    path.write_text(text)
    res = engine.check(path)
    assert spans(res) == [("item_branch.py", 7, 22, 7, 42, "unused-ignore"), ("item_branch.py", 8, 11, 8, 16, "data-dependent-guard")]
    (fix,) = registry.fixes_for(res.diagnostics[0], lambda p: text)
    assert fix.is_preferred and fix.title == "Remove the unused ignore"
    assert apply_edits(text, list(fix.edits)) == BRANCH


def test_partly_used_list_keeps_the_used_code(engine: SyncEngine, project: Path) -> None:
    path = _model(project, "  # exportlens: ignore[recompile, data-dependent-guard]")
    res = engine.check(path)
    assert [d.code for d in res.ignored] == ["data-dependent-guard"]
    (hint,) = res.diagnostics
    assert hint.code == "unused-ignore" and hint.data["unused_codes"] == ["recompile"]
    (fix,) = registry.fixes_for(hint, lambda p: path.read_text())
    assert apply_edits(path.read_text(), list(fix.edits)) == BRANCH.replace(IF_LINE, "        if n > 2:  # exportlens: ignore[data-dependent-guard]\n")


def test_no_unused_hint_after_a_crash(engine: SyncEngine, project: Path) -> None:
    path = project / "dies.py"
    path.write_text(
        "import os\nimport torch  # exportlens: ignore[target-error]\n\n\nclass M(torch.nn.Module):\n"
        "    def forward(self, x):\n        os._exit(3)\n\n\nmodel = M()\nexample_args = (torch.ones(2),)\n"
    )
    res = engine.check(path)
    assert [d.code for d in res.diagnostics] == ["worker-crashed"]


# -- the edit that adds a comment -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("        if n > 2:\n", "        if n > 2:  # exportlens: ignore[data-dependent-guard]\n"),
        ("        if n > 2:   \n", "        if n > 2:  # exportlens: ignore[data-dependent-guard]\n"),
        ("        if n > 2:  # why\n", "        if n > 2:  # why  # exportlens: ignore[data-dependent-guard]\n"),
        ("        if n > 2:  # exportlens: ignore[graph-break]\n", "        if n > 2:  # exportlens: ignore[graph-break, data-dependent-guard]\n"),
    ],
)
def test_ignore_fix_is_one_minimal_edit(line: str, expected: str) -> None:
    text = BRANCH.replace(IF_LINE, line)
    d = Diagnostic("m.py", Range.of(8, 11, 8, 16), 1, "data-dependent-guard", "m", "t")
    fix = registry.ignore_fix(d, lambda p: text)
    assert fix is not None and not fix.is_preferred and len(fix.edits) == 1
    assert fix.title.startswith("Ignore this problem on this line")
    assert fix.edits[0].range.start.line == fix.edits[0].range.end.line == 8
    assert apply_edits(text, list(fix.edits)) == BRANCH.replace(IF_LINE, expected)


def test_ignore_fix_refused_where_a_comment_cannot_go() -> None:
    text = 'x = 1 + \\\n    2\ns = """a\nb"""\n'
    for line in (0, 2):
        d = Diagnostic("m.py", Range.of(line, 0, line, 1), 1, "export-error", "m", "t")
        assert registry.ignore_fix(d, lambda p: text) is None
    d = Diagnostic("m.py", Range.of(1, 4, 1, 5), 1, "export-error", "m", "t")
    fix = registry.ignore_fix(d, lambda p: text)
    assert fix is not None and apply_edits(text, list(fix.edits)).splitlines()[1] == "    2  # exportlens: ignore[export-error]"


# -- the CLI -------------------------------------------------------------------------------------


def test_cli_show_ignored(project: Path) -> None:
    path = _model(project, "  # exportlens: ignore[data-dependent-guard]")
    out = cli("check", str(path))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("0 problems in 1 target (")
    shown = cli("check", str(path), "--show-ignored")
    assert shown.returncode == 0
    assert shown.stdout.splitlines()[0].startswith(f"{path}:9:12: ignored[data-dependent-guard]: Draft export could not decide `n > 2`")
    doc = json.loads(cli("check", str(path), "--show-ignored", "--format", "json").stdout)
    assert doc["diagnostics"] == []
    assert [(d["code"], d["range"]["start"]["line"]) for d in doc["ignored"]] == [("data-dependent-guard", 8)]
