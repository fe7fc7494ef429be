"""Advice that follows current torch: `_check_is_size` is deprecated, TorchScript tracing gives way to export."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EXAMPLES, ROOT, ExampleRuns, SyncEngine, spans

from exportlens import deprecated
from exportlens import fix_registry as registry
from exportlens.fixes import apply_edits
from exportlens.source import Source

pytestmark = pytest.mark.torch

SIZE_MODEL = """import torch
import torch as T
from torch import _check_is_size


class M(torch.nn.Module):
    def forward(self, x):
        n = x.item()
        torch._check_is_size(n)
        T._check_is_size(n - 1)
        _check_is_size(n, max=9)
        return torch.zeros(n)


model = M()
example_args = (torch.tensor(3),)
"""


def test_check_is_size_gets_a_hint_and_a_rewrite() -> None:
    diags = deprecated.check(Source("m.py", SIZE_MODEL))
    assert [(d.code, d.severity, d.range.start.line, d.range.start.character, d.range.end.character) for d in diags] == [
        ("deprecated-api", 4, 8, 8, 31),
        ("deprecated-api", 4, 9, 8, 31),
        ("deprecated-api", 4, 10, 8, 32),
    ]
    assert "Use `torch._check(n >= 0)`" in diags[0].message
    fixes = [registry.fixes_for(d, lambda p: SIZE_MODEL) for d in diags]
    assert [[f.title for f in fs] for fs in fixes] == [
        ["Replace with `torch._check(n >= 0)` (the same check, not deprecated)"],
        ["Replace with `T._check((n - 1) >= 0)` (the same check, not deprecated)"],
        [],
    ]  # `max=` has no one-to-one rewrite
    fixed = apply_edits(SIZE_MODEL, [*fixes[0][0].edits, *fixes[1][0].edits])
    assert "        torch._check(n >= 0)\n        T._check((n - 1) >= 0)\n" in fixed


def test_hint_comes_from_the_engine_without_running_anything_new(engine: SyncEngine, project: Path) -> None:
    path = project / "m.py"
    path.write_text(SIZE_MODEL.replace("        _check_is_size(n, max=9)\n", ""))
    res = engine.check(path)
    assert spans(res) == [("m.py", 8, 8, 8, 31, "deprecated-api"), ("m.py", 9, 8, 9, 31, "deprecated-api")]
    assert [t.name for t in res.targets] == ["model"]


def test_exportlens_never_suggests_check_is_size() -> None:
    offenders = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "server/exportlens").rglob("*.py")
        if "_check_is_size" in p.read_text() and p.name not in ("deprecated.py", "deprecated_fix.py", "codes.py")
    ]
    assert offenders == []
    from exportlens.codes import CODES

    assert [c for c, info in CODES.items() if "_check_is_size" in info.help] == ["deprecated-api"]


def test_trace_findings_say_migrate_with_the_export_call(example_runs: ExampleRuns) -> None:
    res = example_runs.result("trace/tracer_warnings.py")
    assert res.diagnostics and all("TorchScript (torch.jit.trace) is deprecated: migrate to torch.export" in d.message for d in res.diagnostics)
    gate = next(d for d in res.diagnostics if d.range.start.line == 6)
    fill = next(d for d in res.diagnostics if d.range.start.line == 12)
    assert gate.data["export_call"] == (
        "class Gate(torch.nn.Module):\n    def forward(self, x):\n        return gate(x)\n\nep = torch.export.export(Gate(), (torch.ones(3),))"
    )
    assert "`class Gate(torch.nn.Module): def forward(self, x): return gate(x); ep = torch.export.export(Gate(), (torch.ones(3),))`" in gate.message
    # the suggested call really exports a function without a data-dependent branch (real torch, a fresh interpreter)
    functions = (EXAMPLES / "trace" / "tracer_warnings.py").read_text().split('if __name__ == "__main__":')[0]
    script = functions + fill.data["export_call"] + "\nprint(type(ep).__name__)\n"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert out.stdout.strip() == "ExportedProgram", out.stderr[-2000:]
