"""Dynamic shapes done right, end to end with the real torch: each example's finding and its preferred
fix, applied by `exportlens check --fix`, then judged by plain `torch.export.export` in a fresh
interpreter: it passes, and every dimension the call asked to be dynamic is still dynamic."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLES, ROOT, ExampleRuns, SyncEngine

from exportlens import fix_registry as registry

pytestmark = pytest.mark.torch

ORACLE = Path(__file__).with_name("plain_dynamic.py")
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "server")}


def judge(path: Path) -> dict[str, dict[str, object]]:
    out = subprocess.run([sys.executable, str(ORACLE), str(path)], capture_output=True, text=True, env=ENV, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return {k.split(":", 1)[1]: v for k, v in json.loads(out.stdout.strip().splitlines()[-1]).items()}


def fix_with_cli(path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "exportlens", "check", str(path), "--fix", *extra], capture_output=True, text=True, env=ENV, timeout=900)


@pytest.fixture()
def work(tmp_path: Path) -> Path:
    dest = tmp_path / "examples"
    shutil.copytree(EXAMPLES, dest, ignore=shutil.ignore_patterns("__pycache__", "compile", "trace"))
    return dest


# (file, target, the preferred fix's title, the lines the fix leaves in the file)
CASES = [
    (
        "dynamic_shapes/derived_dim.py",
        "export at derived_dim.py:17",
        'Make `n` a derived dimension, as torch suggests: `_n = Dim("_n", min=1, max=512)`, then `n = 2 * _n`; it stays dynamic',
        ['_n = Dim("_n", min=1, max=512)\nn = 2 * _n\n'],
    ),
    (
        "dynamic_shapes/range_refine.py",
        "export at range_refine.py:18",
        'Refine `seq` to `Dim("seq", min=17, max=64)`, as torch suggests: it stays dynamic, over 17..64',
        ['seq = Dim("seq", min=17, max=64)\n'],
    ),
    (
        "dynamic_shapes/shared_kwargs.py",
        "export at shared_kwargs.py:19",
        'Refine `seq` to `Dim("seq", min=9, max=64)`, as torch suggests: it stays dynamic, over 9..64',
        ['seq = Dim("seq", min=9, max=64)\n'],
    ),
    (
        "dynamic_shapes/decode_step.py",
        "export at decode_step.py:23",
        "Give the example size 2 in `input_ids.shape[1]` (`torch.randint(0, 100, (1, 1))` → `torch.randint(0, 100, (1, 2))`): "
        "export specialises sizes 0 and 1; `seq` stays dynamic",
        ["input_ids = torch.randint(0, 100, (1, 2))\n"],
    ),
    (
        "dynamic_shapes/auto_branch.py",
        "model",
        "Rewrite this if/return as `torch.cond` (keeps both branches in the exported graph)",
        ["        return torch.cond(x.shape[1] == 32, true_fn, false_fn, (x,))\n"],
    ),
]


@pytest.mark.parametrize(("name", "target", "title", "lines"), CASES, ids=[c[0] for c in CASES])
def test_the_preferred_fix_exports_and_keeps_the_dimensions_dynamic(
    example_runs: ExampleRuns, plain_truth: dict[str, Any], work: Path, name: str, target: str, title: str, lines: list[str]
) -> None:
    path = work / name
    before = plain_truth[f"{name}:{target}"]  # the copy is examples/ as it is: the verdicts and findings the tests share
    result = example_runs.result(name)
    [d] = [d for d in result.diagnostics if d.problem]
    preferred = [f for f in registry.fixes_for(d) if f.is_preferred]
    assert [f.title for f in preferred] == [title]
    done = fix_with_cli(path)
    assert "Traceback" not in done.stderr, done.stderr
    text = path.read_text()
    for line in lines:
        assert line in text, text
    [after] = judge(path).values()  # one target (a script's call may have moved down a line)
    assert after["result"] == "ok", after
    assert sorted(after["dynamic"]) == sorted(after["requested"]) == sorted(before["requested"]), (before, after)  # type: ignore[arg-type]
    if d.severity == 1:  # an error: the user's own export failed before the fix
        assert before["result"] != "ok"
    else:  # dim-specialized: it passed, but without the dimension it was asked to keep
        assert before["result"] == "ok" and before["dynamic"] != before["requested"]


def test_static_is_offered_as_the_loss_it_is_and_verification_says_what_is_lost(engine: SyncEngine, work: Path) -> None:
    from exportlens.source import read_disk
    from exportlens.verify import verify_result

    path = work / "dynamic_shapes/range_refine.py"
    result = engine.check(path, outputs=True)
    engine.call(verify_result(engine.engine, result, read=read_disk))
    [d] = [d for d in result.diagnostics if d.problem]
    assert [(f.title, f.is_preferred, f.verification and (f.verification.status, f.verification.keeps_dynamic, f.verification.lost)) for f in d.fixes] == [
        ('Refine `seq` to `Dim("seq", min=17, max=64)`, as torch suggests: it stays dynamic, over 17..64', True, ("export-passes", True, ())),
        ("Mark `seq` static with `Dim.STATIC`: export passes, but `seq` is no longer dynamic", False, ("export-passes", False, ("x.shape[1]",))),
    ]
    assert d.fixes[1].verification is not None and d.fixes[1].verification.words() == "export passes, but `x.shape[1]` is no longer dynamic"


def test_a_library_that_needs_multiples_of_16_gets_torchs_derived_dimensions(example_runs: ExampleRuns, work: Path) -> None:
    """timm's PatchEmbed with dynamic_img_size=True, written small: `H % 16 == 0` inside minilib."""
    path = work / "library_project/patches.py"
    result = example_runs.result("library_project/patches.py")
    guards = [d for d in result.diagnostics if d.code == "guard-added"]
    assert [(d.data["name"], d.range.start.line + 1, d.data["library_frame"]["line"], d.data["source_expr"]) for d in guards] == [
        ("h", 28, 32, "images.shape[2] % 16 == 0"),
        ("w", 28, 33, "images.shape[3] % 16 == 0"),
    ]
    assert [r.message.split(",")[0] for r in guards[0].related] == ["the guard is added here", "the dynamic_shapes of this target"]
    assert [f.title for f in registry.fixes_for(guards[0]) if f.is_preferred] == [
        'Make `h` a derived dimension, as torch suggests: `_h = Dim("_h", max=32)`, then `h = 16 * _h`; it stays dynamic'
    ]
    specialized = [d for d in result.diagnostics if d.code == "dim-specialized"]
    found = [(d.data["dim"]["spelled"], d.data["library_frame"]["line"], d.data["value"]) for d in specialized]
    assert found == [("images.shape[2]", 19, 32), ("images.shape[3]", 20, 32)]
    assert not [f for d in specialized for f in registry.fixes_for(d) if f.is_preferred]  # only Dim.STATIC: a loss, never preferred
    done = fix_with_cli(path)
    assert done.returncode == 1, done.stdout  # the library's fixed sizes stay (warnings)
    after = judge(path)
    both = ["images.shape[2]", "images.shape[3]"]
    assert after["export at patches.py:39"] == {"requested": both, "dynamic": both, "result": "ok"}  # `_h`, `_w` inserted above
    assert after["export at patches.py:33"]["dynamic"] == []  # FixedSize: 32 x 32, as the library checks


def test_a_data_dependent_error_only_plain_export_reports(example_runs: ExampleRuns, plain_truth: dict[str, Any], work: Path) -> None:
    """Draft export crashes on `z[a]`; plain export's own failure is the finding, in the user's names."""
    path = work / "draft_crash/item_index.py"
    result = example_runs.result("draft_crash/item_index.py")
    [d] = result.diagnostics
    assert (d.code, d.range.start.line + 1, d.data["source_expr"], d.data["result"]) == ("data-dependent-guard", 11, "a > 2", None)
    assert d.message.startswith("torch.export.export fails here: it cannot decide `a > 2`")
    assert {f.title for f in registry.fixes_for(d)} == {
        "Rewrite this if/return as `torch.cond` (keeps both branches in the exported graph)",
        "Add `torch._check(a > 2)` — assumes `a > 2` for every input; inputs with a ≤ 2 will raise",
        "Add `torch._check(a <= 2)` — assumes `a <= 2` for every input; inputs with a > 2 will raise",
    }
    assert plain_truth["draft_crash/item_index.py:model"]["result"] != "ok"
    done = fix_with_cli(path, "--assume")
    assert "torch._check(a <= 2)" in path.read_text(), done.stdout
    assert judge(path)["model"]["result"] == "ok"
