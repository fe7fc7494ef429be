"""A data-dependent guard decided inside a torch operator is reported as probably torch's, not patched.

`x.unflatten(0, (n.item(), -1))`: the operator's own shape logic guards on `u0 != 0`, a value
with no name in the user's code. The finding says it is probably a PyTorch bug or limitation,
offers no `torch._check`, and carries a repro command that fails the same way with plain
torch.export. (When the value has a name, pinning it stays on offer: that is what works for a
split on torch ≤ 2.12.)
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import SyncEngine, spans

from exportlens import fix_registry as registry

pytestmark = pytest.mark.torch

MODEL = textwrap.dedent("""\
    import torch


    class Rows(torch.nn.Module):
        def forward(self, x, n):
            k = n.item() + 0
            return x.unflatten(0, (n.item(), -1)) * k


    model = Rows()
    example_args = (torch.arange(6.0), torch.tensor(2))
""")


def test_guard_inside_an_operator_is_torchs(engine: SyncEngine, project: Path) -> None:
    path = project / "model.py"
    path.write_text(MODEL)
    result = engine.check(path)
    assert spans(result) == [("model.py", 6, 15, 6, 49, "data-dependent-guard")]
    (d,) = result.diagnostics
    assert d.data["torch_internal"] is True
    assert "inside PyTorch itself" in d.message and "probably a PyTorch bug or limitation" in d.message
    assert "torch._check(" not in d.message.split("Reproduce")[0].replace("no `torch._check` is offered", "")
    assert registry.fixes_for(d) == []
    repro = d.data["repro"]
    assert repro.startswith("python -c ") and str(path) in repro and repro in d.message
    argv = shlex.split(repro)
    out = subprocess.run([sys.executable, *argv[1:]], capture_output=True, text=True, timeout=300, cwd=project, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert out.returncode != 0
    assert "data-dependent" in out.stderr and "u0" in out.stderr, out.stderr[-2000:]


def test_a_branch_in_user_code_is_not_torchs(engine: SyncEngine, project: Path) -> None:
    path = project / "model.py"
    path.write_text(MODEL.replace("        return x.unflatten(0, (n.item(), -1)) * k", "        if k > 1:\n            return x\n        return x + 1"))
    (d,) = engine.check(path).diagnostics
    assert "torch_internal" not in d.data and "repro" not in d.data
    assert [f.assumes for f in registry.fixes_for(d)][:1] == ["k > 1"]
