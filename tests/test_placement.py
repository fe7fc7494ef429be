"""Placement rules on harder shapes: multi-line statements, loops, deep helpers, strict export."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import SyncEngine, spans

pytestmark = pytest.mark.torch

HEADER = "import torch\n\n\n"


def test_multi_line_test_is_widened_to_the_whole_condition(engine: SyncEngine, project: Path) -> None:
    path = project / "multiline.py"
    path.write_text(
        HEADER + "class M(torch.nn.Module):\n    def forward(self, x):\n        a = x.item()\n"
        "        if (\n            a\n            > 2\n        ):\n            return x * 2\n        return x\n\n\n"
        "model = M()\nexample_args = (torch.tensor(5),)\n"
    )
    (d,) = engine.check(path).diagnostics
    assert (d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character) == (7, 12, 8, 15)
    assert d.data["test_text"] == "a\n            > 2"
    assert d.data["statement_line"] == 7


def test_a_line_in_a_loop_is_one_finding_with_its_count(engine: SyncEngine, project: Path) -> None:
    path = project / "loop.py"
    path.write_text(
        HEADER + "class M(torch.nn.Module):\n    def forward(self, x):\n        n = x.item()\n        out = x\n"
        "        for i in range(3):\n            if n > i:\n                out = out + 1\n        return out\n\n\n"
        "model = M()\nexample_args = (torch.tensor(5),)\n"
    )
    (d,) = engine.check(path).diagnostics
    assert spans_of(d) == (8, 15, 8, 20)
    assert d.data["occurrences"] == 3 and "Reached 3 times" in d.message


def test_elif_is_placed_on_its_own_test(engine: SyncEngine, project: Path) -> None:
    path = project / "elif_.py"
    path.write_text(
        HEADER + "class M(torch.nn.Module):\n    def forward(self, x):\n        n = x.item()\n        if n > 100:\n"
        "            return x\n        elif n > 2:\n            return x * 2\n        return x * 3\n\n\n"
        "model = M()\nexample_args = (torch.tensor(5),)\n"
    )
    diags = engine.check(path).diagnostics
    assert [(d.range.start.line, d.range.start.character, d.range.end.character) for d in diags] == [(6, 11, 18), (8, 13, 18)]


def test_deep_helper_chain_in_another_file(engine: SyncEngine, project: Path) -> None:
    """torch keeps three frames; all in the helper file: the diagnostic goes there, not to the model."""
    (project / "deep.py").write_text(
        "def a(v):\n    return b(v)\n\n\ndef b(v):\n    return c(v)\n\n\ndef c(v):\n    if v > 1:\n        return 1\n    return 0\n"
    )
    path = project / "model.py"
    path.write_text(
        HEADER + "from deep import a\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
        "        return x * a(x.item())\n\n\nmodel = M()\nexample_args = (torch.tensor(5),)\n"
    )
    (d,) = engine.check(path).diagnostics
    assert (Path(d.file).name, spans_of(d)) == ("deep.py", (9, 7, 9, 12))
    # the whole chain, from the live Python stack (torch itself keeps only the 3 frames in deep.py)
    assert [(Path(r.file).name, r.range.start.line) for r in d.related] == [("deep.py", 5), ("deep.py", 1), ("model.py", 8)]


def test_strict_export_in_a_script(engine: SyncEngine, project: Path) -> None:
    path = project / "strict.py"
    path.write_text(
        HEADER + "class M(torch.nn.Module):\n    def forward(self, x):\n        n = x.item()\n        if n > 2:\n"
        "            return x * 2\n        return x\n\n\ntorch.export.export(M(), (torch.tensor(5),), strict=True)\n"
    )
    result = engine.check(path)
    assert spans(result) == [("strict.py", 6, 11, 6, 16, "data-dependent-guard")]
    assert [t.name for t in result.targets] == ["export at strict.py:12"]


def test_strict_export_places_dynamic_shape_findings_on_the_guard(engine: SyncEngine, project: Path) -> None:
    """Under strict=True dynamo names an input by its place among the flattened inputs
    (`L['flat_args'][0]`); the findings still go on the guard's line, in the input's own name."""
    model = HEADER + "class M(torch.nn.Module):\n    def forward(self, x):\n        if x.shape[1] > 16:\n            return x * 2\n        return x\n\n\n"
    path = project / "strict_dims.py"
    path.write_text(model + 'torch.export.export(M(), (torch.randn(2, 32),), dynamic_shapes={"x": {1: torch.export.Dim("seq", min=4, max=64)}}, strict=True)\n')
    (d,) = engine.check(path).diagnostics
    assert (d.code, d.range.start.line, d.range.start.character, d.range.end.character) == ("guard-added", 5, 11, 26)
    assert d.data["source_expr"] == "x.shape[1] > 16" and d.data["suggested"] == ["seq = Dim('seq', min=17, max=64)"]
    path.write_text(model + 'torch.export.export(M(), (torch.randn(2, 32),), dynamic_shapes={"x": {1: torch.export.Dim.AUTO}}, strict=True)\n')
    path.write_text(path.read_text().replace("> 16", "== 32"))
    (d,) = engine.check(path).diagnostics
    assert (d.code, d.range.start.line, d.data["source_expr"], d.data["value"]) == ("dim-specialized", 5, "x.shape[1] == 32", 32)


def test_two_exports_in_one_script_are_two_targets(engine: SyncEngine, project: Path) -> None:
    path = project / "two.py"
    path.write_text(
        HEADER + "class M(torch.nn.Module):\n    def forward(self, x):\n        return x + 1\n\n\n"
        "class N(torch.nn.Module):\n    def forward(self, x):\n        if x.sum() > 0:\n            return x\n"
        "        return -x\n\n\nep = torch.export.export(M(), (torch.ones(2),))\nprint(ep.module()(torch.ones(2)))\n"
        "torch.export.export(N(), (torch.ones(2),))\n"
    )
    result = engine.check(path)
    assert [(t.name, t.status) for t in result.targets] == [("export at two.py:16", "ok"), ("export at two.py:18", "problems")]
    assert spans(result) == [("two.py", 10, 11, 10, 22, "data-dependent-guard"), ("two.py", 15, 0, 15, 47, "could-be-dynamic")]  # M exports: x's length a hint


def spans_of(d) -> tuple[int, int, int, int]:  # type: ignore[no-untyped-def]
    return (d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character)
