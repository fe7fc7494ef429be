"""The preferred guard fix, applied, makes export pass with the real torch: also when the `if`
binds its value with `:=`, and when its test is an `and` chain torch reports only the first part of."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import SyncEngine

from exportlens import fix_registry as registry
from exportlens.fixes import apply_edits

pytestmark = pytest.mark.torch

HEAD = "import torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
TAIL = "            return torch.ones(1) * n\n        return torch.zeros(1)\n\n\nmodel = M()\nexample_args = (torch.tensor(5),)\n"


@pytest.mark.parametrize(
    ("body", "check_lines"),
    [
        ("        if (n := x.item()) > 2:\n", ["n = x.item()", "torch._check(n > 2)", "if n > 2:"]),
        ("        n = x.item()\n        if n > 2 and n < 100:\n", ["torch._check(n > 2)", "torch._check(n < 100)"]),
    ],
)
def test_the_preferred_fix_makes_export_pass(engine: SyncEngine, project: Path, body: str, check_lines: list[str]) -> None:
    path = project / "guarded.py"
    text = HEAD + body + TAIL
    path.write_text(text)
    result = engine.check(path)
    (d,) = result.diagnostics
    assert d.code == "data-dependent-guard"
    registry.attach(result.diagnostics)
    preferred = [f for f in d.fixes if f.is_preferred]
    assert len(preferred) == 1
    fixed = apply_edits(text, preferred[0].edits, validate=True)
    stripped = [ln.strip() for ln in fixed.splitlines()]
    assert all(ln in stripped for ln in check_lines), fixed
    path.write_text(fixed)
    again = engine.check(path)
    assert again.diagnostics == [] and [t.status for t in again.targets] == ["ok"]
