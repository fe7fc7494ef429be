"""could-be-dynamic end to end with the real torch: each example's hint, its fix's exact text (the golden
file), verified by the engine, and judged by plain `torch.export.export` in a fresh interpreter: the
program's placeholders have the symbols the hint promised (shared where it said one Dim, derived where it
said `2 * batch`, static where it said static). Checking the fixed file again says nothing at all."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EXAMPLES, ROOT, SyncEngine

from exportlens import fix_registry as registry
from exportlens import verify
from exportlens.fixes import apply_edits
from exportlens.model import HINT, Diagnostic

pytestmark = pytest.mark.torch

GOLDEN = ROOT / "tests" / "fixtures" / "fixes" / "dynamic_shapes"
ORACLE = Path(__file__).with_name("program_symbols.py")
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "server")}


def symbols(path: Path) -> dict[str, dict[str, object]]:
    out = subprocess.run([sys.executable, str(ORACLE), str(path)], capture_output=True, text=True, env=ENV, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def hint_of(engine: SyncEngine, path: Path, text: str | None = None) -> tuple[Diagnostic, list[Diagnostic]]:
    result = engine.check(path, text=text)
    hints = [d for d in result.diagnostics if d.code == "could-be-dynamic"]
    assert len(hints) == 1, [(d.code, d.message) for d in result.diagnostics]
    return hints[0], result.diagnostics


# example, target, the dimensions made dynamic (in the verification), and how the program's placeholders must read
CASES = [
    ("token_mask", "export at token_mask.py:26", ["input_ids.shape[0]", "input_ids.shape[1]", "attention_mask.shape[0]", "attention_mask.shape[1]"]),
    ("conv_net", "export at conv_net.py:27", ["images.shape[0]", "images.shape[2]", "images.shape[3]"]),
    ("pairs", "export at pairs.py:14", ["x.shape[0]", "x.shape[1]", "pairs.shape[0]", "pairs.shape[1]"]),
    ("mlp", "model", ["features.shape[0]"]),
    (
        "nested_batch",
        "export at nested_batch.py:21",
        [f"batch{keys}.shape[{dim}]" for keys in ("['tokens']", "['extra'][0]", "['extra'][1]") for dim in (0, 1)],
    ),
    ("warmup_calls", "export at warmup_calls.py:24", ["tokens.shape[0]", "tokens.shape[1]"]),
]


def shapes_of(found: dict[str, dict[str, object]]) -> dict[str, list[str]]:
    (entry,) = found.values()
    assert entry["result"] == "ok", entry
    return entry["shapes"]  # type: ignore[return-value]


def check_symbols(case: str, shapes: dict[str, list[str]]) -> None:
    """The program of the fixed file, as the hint described it."""
    if case == "token_mask":
        ids, mask = shapes["input_ids"], shapes["attention_mask"]
        assert ids == mask and all(s.startswith("s") for s in ids) and ids[0] != ids[1]  # one batch, one seq, shared
    elif case == "conv_net":
        b, c, h, w = shapes["images"]
        assert c == "3" and len({b, h, w}) == 3 and all(s.startswith("s") for s in (b, h, w))
    elif case == "pairs":
        x, pairs = shapes["x"], shapes["pairs"]
        assert pairs[0] == f"2*{x[0]}" and pairs[1] == x[1] and x[0] != x[1]  # derived, and shared
    elif case == "mlp":
        assert shapes["features"][0].startswith("s") and shapes["features"][1] == "32"
    elif case == "nested_batch":
        tokens, e0, e1 = shapes["batch_tokens"], shapes["batch_extra_0"], shapes["batch_extra_1"]
        assert tokens[0] == e0[0] == e1[0] and tokens[2] == "8"
        assert len({tokens[1], e0[1], e1[1], tokens[0]}) == 4
    elif case == "warmup_calls":
        batch, seq = shapes["tokens"]
        assert batch.startswith("s") and seq.startswith("s") and batch != seq


@pytest.mark.parametrize(("case", "target", "made"), CASES, ids=[c[0] for c in CASES])
def test_the_hint_its_fix_and_the_program_it_gives(engine: SyncEngine, tmp_path: Path, case: str, target: str, made: list[str]) -> None:
    path = EXAMPLES / "dynamic_shapes" / f"{case}.py"
    d, everything = hint_of(engine, path)
    assert [x.code for x in everything] == ["could-be-dynamic"] and d.severity == HINT and not d.problem
    assert d.target == target and d.data["placed"] == "target"
    fixes = registry.fixes_for(d)
    fix = fixes[0]
    assert fix.is_preferred and fix.title.startswith("Write `dynamic_shapes` with every dimension torch keeps dynamic: ")
    text = path.read_text(encoding="utf-8")
    fixed = apply_edits(text, fix.edits, validate=True)
    assert fixed == (GOLDEN / f"spec_{case}.out.py").read_text(encoding="utf-8")  # the golden text, byte for byte
    # verified like any fix: plain export passes with the dims it claims dynamic
    result = engine.check(path)
    (verified,) = [x for x in result.diagnostics if x.code == "could-be-dynamic"]
    engine.call(verify.verify_result(engine.engine, result, read=registry.read_disk))
    v = verified.fixes[0].verification
    assert v is not None and v.status == "export-passes" and v.keeps_dynamic is True and v.lost == ()
    assert sorted(v.made_dynamic) == sorted(made)
    # checking the fixed file again: no could-be-dynamic and no other finding
    again = engine.check(path, text=fixed)
    assert again.diagnostics == [], [(x.code, x.message) for x in again.diagnostics]
    # judged by plain export in a fresh interpreter: the program's symbols, not only "it passes"
    out = tmp_path / f"{case}.py"
    out.write_text(fixed, encoding="utf-8")
    check_symbols(case, shapes_of(symbols(out)))


def test_the_messages_name_the_dimensions_in_the_users_names(engine: SyncEngine) -> None:
    d, _ = hint_of(engine, EXAMPLES / "dynamic_shapes" / "token_mask.py")
    assert d.message == (
        "torch.export.export passes, but the program accepts only the example's sizes (`input_ids.shape[0]` = 2, `input_ids.shape[1]` = 16, "
        "`attention_mask.shape[0]` = 2, `attention_mask.shape[1]` = 16). torch can keep these 4 dimensions dynamic: `batch` (`input_ids.shape[0]`, "
        "`attention_mask.shape[0]`); `seq` (`input_ids.shape[1]`, `attention_mask.shape[1]`); exported with Dim.AUTO, the program keeps them dynamic."
    )
    d, _ = hint_of(engine, EXAMPLES / "dynamic_shapes" / "nested_batch.py")
    assert "`batch['extra'][0].shape[1]`" in d.message and "Static: `batch['tokens'].shape[2]`" in d.message
    d, _ = hint_of(engine, EXAMPLES / "dynamic_shapes" / "conv_net.py")
    assert "`images.shape[0]` only with an example of size 2 or more there: export specialises sizes 0 and 1" in d.message
    assert "Static: `images.shape[1]` (the code fixes it)." in d.message
    d, _ = hint_of(engine, EXAMPLES / "dynamic_shapes" / "pairs.py")
    assert "`pairs.shape[0]` = `2 * batch`" in d.message


def test_observed_calls_give_the_alternative_that_makes_only_what_varied(engine: SyncEngine, tmp_path: Path) -> None:
    path = EXAMPLES / "dynamic_shapes" / "warmup_calls.py"
    d, _ = hint_of(engine, path)
    assert "called the model on 3 other inputs, where only `tokens.shape[1]` varied" in d.message
    preferred, alternative = registry.fixes_for(d)
    assert preferred.is_preferred and not alternative.is_preferred
    assert alternative.title == "Make dynamic what varied in the script's 3 other calls of the model: `seq` (`tokens.shape[1]`)"
    fixed = apply_edits(path.read_text(encoding="utf-8"), alternative.edits, validate=True)
    assert fixed == (GOLDEN / "spec_warmup_calls_observed.out.py").read_text(encoding="utf-8")
    out = tmp_path / "warmup_calls.py"
    out.write_text(fixed, encoding="utf-8")
    batch, seq = shapes_of(symbols(out))["tokens"]
    assert batch == "4" and seq.startswith("s")  # exactly what varied: the batch stayed 4
    again = engine.check(path, text=fixed)  # the batch could still be dynamic: the hint says so, about it alone
    (left,) = again.diagnostics
    assert left.code == "could-be-dynamic" and [x["spelled"] for x in left.data["spec"]["dims"]] == ["tokens.shape[0]"]


SILENT = {
    "already_dynamic": (
        "import torch\nfrom torch.export import Dim\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return x.sum(1)\n\n\n"
        'torch.export.export(M(), (torch.randn(3, 4),), dynamic_shapes={"x": {0: Dim("b"), 1: Dim("n")}})\n'
    ),
    "genuinely_static": (
        "import torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return x.reshape(12) + torch.arange(12)\n\n\n"
        "torch.export.export(M(), (torch.randn(3, 4),))\n"
    ),
    "compiled": ("import torch\n\n\ndef f(x):\n    return x * 2\n\n\ncompiled = torch.compile(f, backend='eager')\ncompiled(torch.randn(3, 4))\n"),
    # a file that also calls torch.compile is not probed: the probe (and its observer of the model's calls) stays out of a compile watch's run
    "exported_beside_compile": (
        "import torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n\n\n"
        "compiled = torch.compile(M(), backend='eager')\ncompiled(torch.randn(3, 4))\ntorch.export.export(M(), (torch.randn(3, 4),))\n"
    ),
    "traced": (
        "import torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n\n\n"
        "traced = torch.jit.trace(M(), (torch.randn(3, 4),))\n"
    ),
    "failing": (
        "import torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n        if x.sum() > 0:\n            return x\n        return -x\n\n\n"
        "torch.export.export(M(), (torch.randn(3, 4),))\n"
    ),
}


@pytest.mark.parametrize("name", sorted(SILENT))
def test_no_hint_where_there_is_nothing_to_gain(engine: SyncEngine, project: Path, name: str) -> None:
    """As dynamic as torch allows, static because the code is, compile and trace targets, a model whose
    export fails: no could-be-dynamic."""
    path = project / f"{name}.py"
    path.write_text(SILENT[name], encoding="utf-8")
    result = engine.check(path)
    assert result.ran and not [d for d in result.diagnostics if d.code == "could-be-dynamic"], [(d.code, d.message) for d in result.diagnostics]
    if name == "failing":
        assert [d.code for d in result.diagnostics] == ["data-dependent-guard"]
    if name == "exported_beside_compile":
        assert sorted((t.kind, t.status) for t in result.targets) == [("compile", "ok"), ("export", "ok")] and result.diagnostics == []


BATCH_OF_ONE = (
    "import torch\n\n\nclass M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = torch.nn.Linear(4, 2)\n\n"
    "    def forward(self, x):\n        return self.fc(x)\n\n\ntorch.export.export(M(), (torch.randn(1, 4),))\n"
)


def test_a_batch_of_one_alone_is_told_and_its_fix_gives_the_example_two(engine: SyncEngine, project: Path) -> None:
    """The most common static export: an MLP exported with a batch of 1. Export always specialises a
    size of 1 (docs/torch-facts.md §9), so the program takes batch 1 only; the hint says so, and its fix
    gives the example a batch of 2 along with the spec, verified by plain export."""
    path = project / "one.py"
    path.write_text(BATCH_OF_ONE, encoding="utf-8")
    d, _ = hint_of(engine, path)
    assert d.message.startswith("torch.export.export passes, but the program accepts only the example's sizes (`x.shape[0]` = 1).")
    assert "(`x.shape[0]` only with an example of size 2 or more there: export specialises sizes 0 and 1)" in d.message, d.message
    assert "Static: `x.shape[1]` (the code fixes it)." in d.message
    (fix,) = registry.fixes_for(d)
    fixed = apply_edits(BATCH_OF_ONE, fix.edits, validate=True)
    assert fixed.endswith('batch = Dim("batch")\ntorch.export.export(M(), (torch.randn(2, 4),), dynamic_shapes={"x": {0: batch}})\n'), fixed
    assert fixed.startswith("import torch\nfrom torch.export import Dim\n\n\nclass M")
    result = engine.check(path)
    engine.call(verify.verify_result(engine.engine, result, read=registry.read_disk))
    (hint,) = result.diagnostics
    (verified,) = hint.fixes
    assert verified.verification is not None and verified.verification.status == "export-passes"
    assert verified.verification.made_dynamic == ("x.shape[0]",)
    assert engine.check(path, text=fixed).diagnostics == []
    out = project / "one_fixed.py"
    out.write_text(fixed, encoding="utf-8")
    (entry,) = symbols(out).values()
    batch, width = entry["shapes"]["x"]  # type: ignore[index,misc]
    assert batch.startswith("s") and width == "4"


def test_the_hint_keeps_the_users_own_dims_and_completes_them(engine: SyncEngine, project: Path) -> None:
    path = project / "partial.py"
    path.write_text(
        "import torch\nfrom torch.export import Dim\n\n\nclass M(torch.nn.Module):\n    def forward(self, x, mask):\n        return (x * mask).sum(1)\n\n\n"
        'seq = Dim("seq", max=64)\n'
        'torch.export.export(M(), (torch.randn(2, 32), torch.ones(2, 32)), dynamic_shapes={"x": {1: seq}, "mask": {1: seq}})\n',
        encoding="utf-8",
    )
    d, _ = hint_of(engine, path)
    (fix,) = registry.fixes_for(d)
    fixed = apply_edits(path.read_text(encoding="utf-8"), fix.edits, validate=True)
    assert fixed.endswith(
        'seq = Dim("seq", max=64)\nbatch = Dim("batch")\n'
        'torch.export.export(M(), (torch.randn(2, 32), torch.ones(2, 32)), dynamic_shapes={"x": {0: batch, 1: seq}, "mask": {0: batch, 1: seq}})\n'
    )
    assert engine.check(path, text=fixed).diagnostics == []


def test_a_registered_pytree_input_is_walked_as_torch_flattens_it(engine: SyncEngine, project: Path) -> None:
    path = project / "cache.py"
    path.write_text(
        "import dataclasses\n\nimport torch\nimport torch.utils._pytree as pytree\n\n\n@dataclasses.dataclass\nclass Cache:\n"
        "    k: torch.Tensor\n    v: torch.Tensor\n\n\npytree.register_dataclass(Cache)\n\n\nclass M(torch.nn.Module):\n"
        "    def forward(self, x, cache):\n        return x.sum(1) + cache.k.sum((1, 2)) + cache.v.sum((1, 2))\n\n\n"
        "torch.export.export(M(), (torch.randn(2, 5), Cache(torch.randn(2, 4, 3), torch.randn(2, 4, 3))))\n",
        encoding="utf-8",
    )
    d, _ = hint_of(engine, path)
    assert "`cache.k.shape[1]`" in d.message
    (fix,) = registry.fixes_for(d)
    fixed = apply_edits(path.read_text(encoding="utf-8"), fix.edits, validate=True)
    assert '"cache": [{0: batch, 1: k_dim1, 2: k_dim2}, {0: batch, 1: v_dim1, 2: v_dim2}]' in fixed  # k and v: unrelated lengths
    assert engine.check(path, text=fixed).diagnostics == []


KEYWORDS_AND_A_BOUND = (
    "import torch\n\n\nclass Tagger(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.pos = torch.nn.Parameter(torch.randn(64, 8))\n        self.fc = torch.nn.Linear(8, 3)\n\n"
    "    def forward(self, x, *, mask, scale=1.0):\n        return self.fc(x + self.pos[: x.shape[1]]) * mask * scale\n\n\n"
    'torch.export.export(Tagger(), (torch.randn(4, 10, 8),), {"mask": torch.ones(4, 10, 1), "scale": 2.0})\n'
)


def test_keyword_inputs_by_key_and_a_range_torch_bounds(engine: SyncEngine, project: Path) -> None:
    """kwargs are keyed by name beside the args (a float among them: None), the sequence a slice of 64
    positions bounds gets `max=64`, and a size 1 of the example is told as such, not as the code's."""
    path = project / "tagger.py"
    path.write_text(KEYWORDS_AND_A_BOUND, encoding="utf-8")
    d, _ = hint_of(engine, path)
    assert d.message.endswith(
        "`seq` (`x.shape[1]`, `mask.shape[1]`) over 2..64; plain export with these Dims passes. "
        "Static: `x.shape[2]` (the code fixes it); `mask.shape[2]` (0 or 1 in the example: export specialises sizes 0 and 1)."
    ), d.message
    (fix,) = registry.fixes_for(d)
    fixed = apply_edits(KEYWORDS_AND_A_BOUND, fix.edits, validate=True)
    assert fixed.startswith("import torch\nfrom torch.export import Dim\n\n\nclass Tagger")
    assert fixed.endswith(
        'batch = Dim("batch")\nseq = Dim("seq", max=64)\n'
        'torch.export.export(Tagger(), (torch.randn(4, 10, 8),), {"mask": torch.ones(4, 10, 1), "scale": 2.0}, '
        'dynamic_shapes={"x": {0: batch, 1: seq}, "mask": {0: batch, 1: seq}, "scale": None})\n'
    )
    assert engine.check(path, text=fixed).diagnostics == []
    out = project / "tagger_fixed.py"
    out.write_text(fixed, encoding="utf-8")
    (entry,) = symbols(out).values()
    x, mask = entry["shapes"]["x"], entry["shapes"]["mask"]  # type: ignore[index]
    assert x[:2] == mask[:2] and x[2] == "8" and mask[2] == "1" and x[0] != x[1]
    # the upper bounds the spec gave (a named Dim's range reads from 0 in range_constraints, docs/torch-facts.md §10)
    assert entry["ranges"][x[1]][1] == 64 and entry["ranges"][x[0]][1] is None  # type: ignore[index]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "exportlens", *args], capture_output=True, text=True, env=ENV, cwd=cwd, timeout=900)


def test_the_cli_writes_it_with_fix_dynamic_shows_it_with_check_diff_and_in_the_html_report(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\nversion = '0'\n")
    model = tmp_path / "token_mask.py"
    model.write_text((EXAMPLES / "dynamic_shapes" / "token_mask.py").read_text(encoding="utf-8"), encoding="utf-8")
    golden = (GOLDEN / "spec_token_mask.out.py").read_text(encoding="utf-8")
    diff = cli("check", "token_mask.py", "--diff", cwd=tmp_path)
    assert diff.returncode == 0, diff.stderr  # a hint is no problem
    assert '+batch = Dim("batch")\n+seq = Dim("seq")\n' in diff.stdout and "+from torch.export import Dim\n" in diff.stdout
    page = cli("check", "token_mask.py", "--format", "html", cwd=tmp_path)
    assert page.returncode == 0, page.stderr
    assert "could-be-dynamic" in page.stdout and "with every dimension torch keeps dynamic" in page.stdout
    assert "dynamic_shapes={&quot;input_ids&quot;: {0: batch, 1: seq}, &quot;attention_mask&quot;: {0: batch, 1: seq}}" in page.stdout  # the fix's diff
    plain = cli("fix", "token_mask.py", cwd=tmp_path)  # without --dynamic: it exports already, nothing to do
    assert plain.returncode == 0 and plain.stdout == "", plain.stderr
    text = cli("check", "token_mask.py", cwd=tmp_path)  # only a hint: exit 0, and the summary counts no problem
    assert text.returncode == 0 and re.search(r"^0 problems in 1 target \(", text.stdout, re.M), text.stdout
    assert text.stdout.startswith("token_mask.py:26:1: hint[could-be-dynamic]: torch.export.export passes"), text.stdout
    written = cli("fix", "token_mask.py", "--dynamic", "--write", cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    assert "token_mask.py: 1 round, 1 fix, export passes (written)" in written.stderr
    assert model.read_text(encoding="utf-8") == golden


TWO_TARGETS = (
    "import torch\n\n\nclass A(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n\n\n"
    "class B(torch.nn.Module):\n    def forward(self, y):\n        return y.sum(1)\n\n\n"
    "torch.export.export(A(), (torch.randn(3, 4),))\ntorch.export.export(B(), (torch.randn(5, 6),))\n"
)


def test_fix_dynamic_takes_every_targets_spec_and_imports_dim_once(project: Path) -> None:
    """Two export calls in one file: the second target's spec is made on the text the first one left
    (its Dim import, its `batch`), so `Dim` is imported once and the second batch gets a name of its own."""
    model = project / "two.py"
    model.write_text(TWO_TARGETS, encoding="utf-8")
    written = cli("fix", "two.py", "--dynamic", "--write", cwd=project)
    assert written.returncode == 0 and "two.py: 2 rounds, 2 fixes, export passes (written)" in written.stderr, written.stderr
    assert model.read_text(encoding="utf-8") == (
        "import torch\nfrom torch.export import Dim\n\n\nclass A(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n\n\n"
        "class B(torch.nn.Module):\n    def forward(self, y):\n        return y.sum(1)\n\n\n"
        'batch = Dim("batch")\nx_dim1 = Dim("x_dim1")\n'
        'torch.export.export(A(), (torch.randn(3, 4),), dynamic_shapes={"x": {0: batch, 1: x_dim1}})\n'
        'batch_size = Dim("batch_size")\ny_dim1 = Dim("y_dim1")\n'
        'torch.export.export(B(), (torch.randn(5, 6),), dynamic_shapes={"y": {0: batch_size, 1: y_dim1}})\n'
    )
    again = cli("check", "two.py", cwd=project)
    assert again.returncode == 0 and again.stdout.startswith("0 problems in 2 targets ("), again.stdout
