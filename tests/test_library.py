"""Problems inside a library: on the project's line that called into it, with the library line related.

`examples/library_project/` uses `minilib`, installed (not editable) into the venv from its
`libsrc/` folder by the Makefile, so its files live in site-packages, outside the project. The
library has a data-dependent guard in two places, a custom op without a fake kernel and a graph
break; each is its own diagnostic on `self.detector(images)` / `filter_scores(scores, 0.5)`. A
traced entry warns at four minilib places, a compiled one recompiles two minilib functions (and
dynamo's resume functions of them), and one library guard is reached two ways (two failures).
Libraries written on the fly under a `site-packages` folder outside the project cover what minilib
does not: a library module called twice (dynamo's log drops the project's line), a guard on a
library attribute set on the first call, a trace that warns a thousand times.
Also: draft export's own crashes told apart by plain export, and findings kept across a timeout.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EXAMPLES, ROOT, ExampleRuns, SyncEngine

from exportlens import fix_registry as registry
from exportlens import project
from exportlens.model import INFORMATION, WARNING, Diagnostic, Range

pytestmark = pytest.mark.torch

LIB_PROJECT = EXAMPLES / "library_project"
SPEC = importlib.util.find_spec("minilib")
if SPEC is None or SPEC.origin is None:
    pytest.fail("the example library minilib is not installed in this venv: run `make .venv/.installed`", pytrace=False)
MINILIB = Path(SPEC.origin).parent
BOUNDARY = (12, 16, 12, 37)  # `self.detector(images)` in detect.py, 0-based as in LSP
# minilib's guard `if num_kept > max_keep:` as `data.library_frame` names it
POSTPROCESS_GUARD = {
    "file": str(MINILIB / "postprocess.py"),
    "line": 8,
    "function": "limit_detections",
    "source": "if num_kept > max_keep:",
    "package": "minilib",
    "where": "minilib/postprocess.py:8",
}


def rng(r: Range) -> tuple[int, int, int, int]:
    return (r.start.line, r.start.character, r.end.line, r.end.character)


def library_related(d: Diagnostic) -> list[tuple[str, tuple[int, int, int, int]]]:
    return [(os.path.relpath(r.file, MINILIB), rng(r.range)) for r in d.related if r.file.startswith(str(MINILIB))]


def test_the_library_lives_outside_the_project() -> None:
    assert "site-packages" in MINILIB.parts
    assert not project.is_user_file(str(MINILIB / "detector.py"), str(LIB_PROJECT))
    assert not (LIB_PROJECT / "minilib").exists()  # `import minilib` from the project finds the installed copy


def test_each_library_problem_is_its_own_diagnostic_on_the_boundary(example_runs: ExampleRuns) -> None:
    result = example_runs.result(LIB_PROJECT / "detect.py")
    got = [(os.path.basename(d.file), rng(d.range), d.code) for d in result.diagnostics]
    assert got == [
        ("detect.py", BOUNDARY, "data-dependent-guard"),
        ("detect.py", BOUNDARY, "data-dependent-guard"),
        ("detect.py", BOUNDARY, "missing-fake-kernel"),
    ]
    first, second, fake = result.diagnostics
    # the library line as related location: the real file in site-packages, the exact expression
    assert library_related(first) == [("detector.py", (16, 11, 16, 30))]
    assert library_related(second) == [("postprocess.py", (7, 7, 7, 26)), ("detector.py", (19, 15, 19, 61))]
    assert library_related(fake) == [("detector.py", (15, 16, 15, 36)), ("ops.py", (6, 4, 6, 16))]
    assert "in `limit_detections`" in second.related[0].message and "`if num_kept > max_keep:`" in second.related[0].message
    # the message speaks the library's names, and says what the user can do
    assert "`boxes.shape[0] == 0`" in first.message and "minilib/detector.py:17" in first.message
    assert "`num_kept > max_keep`" in second.message and "torch saw `u2 > 2`" in second.message
    assert "minilib/postprocess.py:8" in second.message and "never edits it" in second.message
    assert second.data["library_frame"] == POSTPROCESS_GUARD
    assert [f["function"] for f in second.data["library_chain"]] == ["forward", "TinyDetector.forward", "limit_detections"]
    assert second.data["library_chain"][0]["source"] == "boxes = self.detector(images)"  # the project's line, as written
    assert second.data["upstream_search"] == "minilib limit_detections torch.export data-dependent"
    assert 'register_fake("minilib::decode_boxes")' in fake.message
    assert [t.status for t in result.targets] == ["problems"]


def test_fixes_never_edit_the_library(example_runs: ExampleRuns, engine: SyncEngine, tmp_path: Path) -> None:
    result = example_runs.result(LIB_PROJECT / "detect.py")
    registry.attach(result.diagnostics)
    assert [len(d.fixes) for d in result.diagnostics] == [0, 0, 1]  # the guards' names are the library's
    edited = {e.file for d in result.diagnostics for f in d.fixes for e in f.edits}
    assert edited == {str(LIB_PROJECT / "detect.py")}  # only the fake kernel, registered in the project
    (fix,) = next(d for d in result.diagnostics if d.code == "missing-fake-kernel").fixes
    assert (fix.edits[0].range.start.line, fix.edits[0].new_text.strip()) == (
        6,
        (
            '@torch.library.register_fake("minilib::decode_boxes")\ndef _decode_boxes_fake(deltas):\n'
            "    ctx = torch.library.get_ctx()\n"
            "    return torch.empty((ctx.new_dynamic_size(), deltas.shape[1]), dtype=torch.float32, device=deltas.device)"
        ),
    )
    # with the fake kernel registered in the project, that finding is gone and the guards stay
    work = tmp_path / "library_project"
    work.mkdir()
    (work / "pyproject.toml").write_text((LIB_PROJECT / "pyproject.toml").read_text())
    (work / "detect.py").write_text((LIB_PROJECT / "detect.py").read_text())
    moved = [Diagnostic.from_json({**d.to_json(with_data=True), "file": str(work / "detect.py")}) for d in result.diagnostics]
    applied = registry.apply_preferred(moved, write=True)
    assert list(applied.changed) == [str(work / "detect.py")]
    after = engine.check(work / "detect.py")
    assert [d.code for d in after.diagnostics] == ["data-dependent-guard", "data-dependent-guard"]


def test_fix_registry_refuses_edits_outside_the_project(tmp_path: Path) -> None:
    lib = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "somelib"
    lib.mkdir(parents=True)
    (lib / "ops.py").write_text(
        'import torch\n\n\n@torch.library.custom_op("somelib::op", mutates_args=())\ndef op(x: torch.Tensor) -> torch.Tensor:\n    return x.clone()\n'
    )
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "pyproject.toml").write_text("")
    (proj / "model.py").write_text("import torch\nimport somelib\n\nx = 1\n")
    data = {
        "op": "somelib.op.default",
        "qualname": "somelib::op",
        "definition": {"file": str(lib / "ops.py"), "line": 4, "kind": "custom_op", "function": "op"},
        "profiles": [{"args": [{"rank": 1, "dtype": "torch.float32", "device": "cpu"}], "out": {"rank": 1, "dtype": "torch.float32", "device": "cpu"}}],
    }
    diag = Diagnostic(str(proj / "model.py"), Range.of(3, 0, 3, 5), 1, "missing-fake-kernel", "m", "t", data=data)
    assert registry._fixes_for(diag, registry.read_disk)[0].edits[0].file == str(lib / "ops.py")  # what it would do
    assert registry.fixes_for(diag) == []  # ...is refused: never an edit inside site-packages
    diag.data["library"] = "somelib"
    (fix,) = registry.fixes_for(diag)
    assert [e.file for e in fix.edits] == [str(proj / "model.py")]


def test_graph_break_inside_the_library(example_runs: ExampleRuns) -> None:
    result = example_runs.result(LIB_PROJECT / "compiled.py")
    (d,) = result.diagnostics
    assert (os.path.basename(d.file), rng(d.range), d.code) == ("compiled.py", (7, 11, 7, 37), "graph-break")
    assert library_related(d) == [("postprocess.py", (13, 7, 13, 31))]  # dynamo's columns of `scores.max() > threshold`
    assert "inside the library minilib (minilib/postprocess.py:14, in `filter_scores`)" in d.message
    assert "`scores.max() > threshold`" in d.message
    registry.attach(result.diagnostics)
    assert d.fixes == []  # a torch.cond rewrite of the user's line would be wrong: the branch is the library's


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "server")}
    return subprocess.run([sys.executable, "-m", "exportlens", "check", *args], capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT)


def test_text_json_and_sarif_carry_the_boundary_and_the_library_line() -> None:
    path = str(LIB_PROJECT / "detect.py")
    text = _cli(path)
    assert text.returncode == 1, text.stderr
    lines = text.stdout.splitlines()
    heads = [ln.split(": ", 2)[:2] for ln in lines if "[" in ln and not ln.startswith(" ")]
    assert heads == [["examples/library_project/detect.py:13:17", "error[data-dependent-guard]"]] * 2 + [
        ["examples/library_project/detect.py:13:17", "error[missing-fake-kernel]"]
    ]
    assert any(
        ln.strip().startswith(str(MINILIB / "postprocess.py") + ":8:8: note: it happens here") or "minilib/postprocess.py:8:8: note: it happens here" in ln
        for ln in lines
    )
    doc = json.loads(_cli(path, "--format", "json").stdout)
    rels = [(d["code"], d["range"]["start"]["line"], [(r["file"], r["range"]["start"]["line"]) for r in d["related"]]) for d in doc["diagnostics"]]
    assert rels[1] == ("data-dependent-guard", 12, [(str(MINILIB / "postprocess.py"), 7), (str(MINILIB / "detector.py"), 19)])
    sarif = json.loads(_cli(path, "--format", "sarif").stdout)
    results = sarif["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["data-dependent-guard", "data-dependent-guard", "missing-fake-kernel"]
    region = results[1]["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (13, 17)
    related = results[1]["relatedLocations"][0]["physicalLocation"]
    assert related["artifactLocation"]["uri"].endswith("minilib/postprocess.py")
    assert related["region"]["startLine"] == 8


def test_draft_export_crash_where_plain_export_passes_is_no_error(example_runs: ExampleRuns) -> None:
    result = example_runs.result("draft_crash/cond_operands.py")
    hint, d = result.diagnostics  # x's columns and y's length (one dimension) could be dynamic: a hint beside it
    assert (hint.code, d.code, d.severity, rng(d.range)) == ("could-be-dynamic", "draft-export-crashed", INFORMATION, (6, 0, 6, 27))
    assert "plain torch.export.export passes" in d.message and "torch.cond operands" in d.message
    assert d.data["plain_export"] == "ok"
    assert "SymIntArrayRef expected to contain only concrete integers" in d.data["draft_export_error"]["message"]
    assert d.data["repro"].startswith('python -c "import runpy, torch; s = runpy.run_path(')
    assert [t.status for t in result.targets] == ["ok"]


def test_a_draft_export_crash_carries_its_raw_error_and_the_users_line_everywhere(example_runs: ExampleRuns) -> None:
    """item_pick.py: plain export passes, draft export (run always in draft_crash/) crashes on `z[a]`.
    The raw error and the repro command reach the JSON, the SARIF and the hover; the project's line it
    was running is a related location."""
    from exportlens.lsp.hover import hover_markdown

    path = EXAMPLES / "draft_crash/item_pick.py"
    hint, d = example_runs.result(path).diagnostics  # z's length could be dynamic: a hint beside it
    assert (hint.code, d.code, rng(d.range)) == ("could-be-dynamic", "draft-export-crashed", (14, 0, 14, 14))
    assert [(r.message, rng(r.range)) for r in d.related] == [("draft export crashed while running this line", (10, 17, 10, 21))]
    assert "_check_fake_real_tensors" in d.data["crash_family"] or "fake and real" in d.data["crash_family"]
    doc = json.loads(_cli(str(path), "--format", "json").stdout)
    assert {k: type(v).__name__ for k, v in doc["diagnostics"][1]["data"].items() if k in ("draft_export_error", "repro")} == {
        "draft_export_error": "dict",
        "repro": "str",
    }
    sarif = json.loads(_cli(str(path), "--format", "sarif").stdout)
    (props,) = [r["properties"] for r in sarif["runs"][0]["results"] if r["ruleId"] == "draft-export-crashed"]
    assert props["repro"] == d.data["repro"] and props["draft_export_error"]["type"].endswith("GuardOnDataDependentSymNode")
    assert "Draft export's own error" in hover_markdown(d, path.read_text()) and d.data["repro"] in hover_markdown(d, path.read_text())


def test_draft_export_crash_where_plain_export_fails_reports_that_failure(example_runs: ExampleRuns) -> None:
    """Plain export runs first and fails on `if a > 2:`: that is the finding, in its rich form; draft
    export, run next to find the rest, crashes on `z[a]` (its own bug) and adds nothing."""
    result = example_runs.result("draft_crash/item_index.py")
    (d,) = result.diagnostics
    assert (d.code, rng(d.range)) == ("data-dependent-guard", (10, 11, 10, 16))
    assert d.message.startswith("torch.export.export fails here: it cannot decide `a > 2`")
    assert (d.data["expr"], d.data["source_expr"], d.data["result"]) == ("u0 > 2", "a > 2", None)


HANGS_AFTER_GUARD = """import time

import torch


class Slow(torch.nn.Module):
    def forward(self, x):
        n = x.item()
        if n > 2:
            x = x + 1
        time.sleep(3600)
        return x


model = Slow()
example_args = (torch.tensor(3),)
"""


def test_a_timeout_keeps_the_guard_torch_recorded_before_it(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "slow.py").write_text(HANGS_AFTER_GUARD)
    # --no-verify: each fix's verification would run the hanging model to its timeout again (what is asserted is the run's own)
    out = _cli(str(tmp_path / "slow.py"), "--timeout", "20", "--format", "json", "--no-verify")
    doc = json.loads(out.stdout)
    got = [(d["code"], d["range"]["start"]["line"], d["range"]["start"]["character"], d["range"]["end"]["character"]) for d in doc["diagnostics"]]
    assert got == [("data-dependent-guard", 8, 11, 16), ("worker-timeout", 14, 0, 14)], out.stderr[-2000:]
    assert "torch._check(n > 2)" in doc["diagnostics"][0]["message"]
    assert "Raise --timeout" in doc["diagnostics"][1]["message"] and "1 problem torch recorded" in doc["diagnostics"][1]["message"]
    assert [t["status"] for t in doc["targets"]] == ["timeout"]


TRACED_BOUNDARY = (12, 15, 12, 35)  # `self.head(boxes * 2)` in traced.py


def test_each_tracer_warning_in_the_library_is_its_own_diagnostic(example_runs: ExampleRuns) -> None:
    result = example_runs.result(LIB_PROJECT / "traced.py")
    got = [(os.path.basename(d.file), rng(d.range), d.code) for d in result.diagnostics]
    assert got == [("traced.py", TRACED_BOUNDARY, "tracer-warning")] * 4 + [("traced.py", (17, 0, 17, 41), "target-error")]
    warnings, error = result.diagnostics[:4], result.diagnostics[4]
    # each on the project's call into the library, with the library line (narrowed to what it is about) related
    assert [library_related(d)[0] for d in warnings] == [
        ("head.py", (10, 7, 10, 22)),  # `boxes.max() > 1`
        ("head.py", (16, 12, 16, 31)),  # `int(boxes.shape[0])`
        ("head.py", (22, 15, 22, 20)),  # `for box in boxes:`: the iterable
        ("head.py", (23, 11, 23, 26)),  # `box[2] > box[0]`, once per box
    ]
    assert [d.data["kind"] for d in warnings] == ["python-value", "python-value", "loop", "python-value"]
    assert [d.data["count"] for d in warnings] == [1, 1, 1, 4]
    assert "torch.jit.trace warned here 4 times" in warnings[3].message and "warned here" not in warnings[0].message
    assert warnings[0].message.startswith("Inside the library minilib (minilib/head.py:11, in `scale_boxes`): torch.jit.trace turns `boxes.max() > 1`")
    assert "a Python integer" in warnings[1].message and "never edits it" in warnings[1].message
    assert warnings[2].data["library_frame"]["function"] == "box_scores" and warnings[2].data["boundary"] == {
        "file": str(LIB_PROJECT / "traced.py"),
        "line": 13,
    }
    assert warnings[0].related[-1].message == "traced here with torch.jit.trace"
    # the error the trace then raised is kept beside them, on the trace call
    assert "Encountering a dict at the output of the tracer" in error.message and error.message.startswith("The torch.jit.trace call raised")
    assert [t.status for t in result.targets] == ["error"]


def test_each_recompiled_library_function_is_its_own_diagnostic(example_runs: ExampleRuns) -> None:
    result = example_runs.result(LIB_PROJECT / "recompiled.py")
    recompiles = [d for d in result.diagnostics if d.code == "recompile"]
    got = [(rng(d.range), d.data["function"], d.data.get("resumes"), library_related(d)) for d in recompiles]
    assert got == [
        ((7, 4, 7, 15), "postprocess", None, []),  # the project's own function: its `def`
        ((8, 4, 8, 41), "postprocess", {"name": "postprocess", "line": 9}, []),  # dynamo's resume function of it
        ((8, 11, 8, 41), "remove_small_boxes", None, [("postprocess.py", (18, 4, 18, 22))]),  # `remove_small_boxes(boxes, 1.0)`
        ((9, 11, 9, 43), "filter_scores", None, [("postprocess.py", (12, 4, 12, 17))]),  # `filter_scores(scores[keep], 0.5)`
        ((9, 11, 9, 43), "filter_scores", {"name": "filter_scores", "line": 14}, [("postprocess.py", (13, 4, 13, 32))]),
    ]
    small, scores, resumed = recompiles[2], recompiles[3], recompiles[4]
    # the guard that failed, in the library's own names, and what changed between the calls
    assert small.message.startswith(
        "torch.compile recompiled `remove_small_boxes`, inside the library minilib (minilib/postprocess.py:19), 1 time: "
        "on the first, the size of dimension 0 of `boxes` changed (4 → 6)."
    )
    assert small.data["guard"] == "tensor 'boxes' size mismatch at index 0. expected 4, actual 6"
    assert small.data["change"]["kind"] == "size" and small.data["library"] == "minilib" and small.data["placed"] == "live"
    assert scores.related[0].message.startswith("the recompiled function, in the library minilib (minilib/postprocess.py:13, in `filter_scores`)")
    assert "`filter_scores` (the part after its graph break at line 14" in resumed.message
    assert resumed.related[0].message.startswith("the recompiled part starts here")
    assert recompiles[1].message.startswith("torch.compile recompiled `postprocess` (the part after its graph break at line 9")
    assert {d.data["fixes"] == [] for d in (small, scores, resumed)} == {True}  # nothing to edit in the library
    # and the graph breaks that made them functions of their own
    assert [(rng(d.range), library_related(d)) for d in result.diagnostics if d.code == "graph-break"] == [
        ((8, 11, 8, 41), [("postprocess.py", (21, 11, 21, 28))]),
        ((9, 11, 9, 43), [("postprocess.py", (13, 7, 13, 31))]),
    ]


def test_one_library_guard_reached_two_ways_is_two_diagnostics(example_runs: ExampleRuns) -> None:
    """Torch's report has two failures (their kept stacks differ); merging by the library line lost one."""
    result = example_runs.result(LIB_PROJECT / "two_stage.py")
    first, second = result.diagnostics
    assert (first.code, rng(first.range)) == (second.code, rng(second.range)) == ("data-dependent-guard", (12, 15, 12, 43))
    assert first.data["library_frame"] == second.data["library_frame"]  # the same library line...
    assert [first.data["expr"], second.data["expr"]] == ["u0 > 3", "u1 > 1"]
    assert library_related(first) == [("postprocess.py", (7, 7, 7, 26)), ("detector.py", (31, 15, 31, 49)), ("detector.py", (27, 20, 27, 47))]
    assert library_related(second) == [("postprocess.py", (7, 7, 7, 26)), ("detector.py", (34, 15, 34, 67)), ("detector.py", (28, 15, 28, 45))]
    assert first.related[1].message.startswith("reached from here, in the library minilib (minilib/detector.py:32, in `TwoStageDetector.propose`)")


def _library_project(tmp_path: Path, lib: dict[str, str], main: str) -> tuple[Path, Path]:
    """A project and a library under a `site-packages` folder outside it (the script puts it on sys.path)."""
    site = tmp_path / "env" / "lib" / "site-packages"
    for name, text in lib.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(text)
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "pyproject.toml").write_text("")
    (proj / "model.py").write_text(f"import sys\n\nsys.path.insert(0, {str(site)!r})\n" + main)
    return proj / "model.py", site


GNN_LIB = """import torch


class Conv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x, edge_index):
        h = self.lin(x)
        keep = (edge_index[0] != edge_index[1]).nonzero()
        return h + keep.sum()
"""

GNN_MAIN = """import torch
from gnnlib import Conv


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = Conv()
        self.conv2 = Conv()

    def forward(self, x, edge_index):
        x = self.conv1(x, edge_index).relu()
        return self.conv2(x, edge_index)


model = torch.compile(Net())
out = model(torch.rand(3, 4), torch.tensor([[0, 1, 2], [1, 1, 0]]))
"""


def test_a_library_module_called_twice_on_the_lines_dynamo_traced(engine: SyncEngine, tmp_path: Path) -> None:
    """dynamo's logged traceback joins `Net.forward` and the library's `Conv.forward` (same name), so it
    names only the `__main__` line; its own user stack has `self.conv1(...)`. The recompile of `Conv.forward`
    (its input now requires grad) goes on `self.conv2(...)`, the call that recompiled it."""
    path, site = _library_project(tmp_path, {"gnnlib/__init__.py": GNN_LIB}, GNN_MAIN)
    result = engine.check(path)
    got = [
        (d.code, rng(d.range), [(os.path.relpath(r.file, site), r.range.start.line) for r in d.related if r.file.startswith(str(site))])
        for d in result.diagnostics
    ]
    assert got == [
        ("graph-break", (14, 12, 14, 37), [("gnnlib/__init__.py", 10)]),  # x = self.conv1(x, edge_index).relu()
        ("graph-break", (15, 15, 15, 40), [("gnnlib/__init__.py", 10)]),  # the same break reached again: the graph splits here too
        ("recompile", (15, 15, 15, 40), [("gnnlib/__init__.py", 8)]),  # return self.conv2(x, edge_index)
    ]
    brk, _again, rec = result.diagnostics
    assert brk.data["stack_source"] == "dynamo" and "Dynamic shape operator" in brk.message
    assert rec.data["change"]["kind"] == "requires_grad" and "`x.requires_grad` changed" in rec.message


CONFIG_LIB = """import torch


class Config:
    problem_type = None


class Classifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.config = Config()
        self.lin = torch.nn.Linear(4, 2)

    def forward(self, x, labels):
        logits = self.lin(x)
        if self.config.problem_type is None:
            self.config.problem_type = "single_label"
        return torch.nn.functional.cross_entropy(logits, labels)
"""

CONFIG_MAIN = """import torch
from cfglib import Classifier

model = Classifier()


def train_step(x, labels):
    loss = model(x, labels)
    return loss * 2


step = torch.compile(train_step)
for _ in range(2):
    step(torch.rand(3, 4), torch.tensor([0, 1, 0]))
"""


def test_a_recompile_goes_on_the_line_the_guard_failure_names(engine: SyncEngine, tmp_path: Path) -> None:
    """As transformers sets `config.problem_type` on the first call: torch's guard failure names
    `loss = model(x, labels)` (and the library line), not `def train_step`."""
    path, site = _library_project(tmp_path, {"cfglib/__init__.py": CONFIG_LIB}, CONFIG_MAIN)
    (d,) = engine.check(path).diagnostics
    assert (d.code, rng(d.range), d.data["placed"], d.data["function"]) == ("recompile", (10, 11, 10, 27), "guard", "train_step")
    assert [(os.path.relpath(r.file, site), r.range.start.line) for r in d.related if r.file.startswith(str(site))] == [("cfglib/__init__.py", 15)]
    assert d.data["change"] == {
        "kind": "attribute",
        "name": "model.config.problem_type",
        "text": "`model.config.problem_type` was set after the code was compiled without it",
        "keeps": "whether `model.config.problem_type` exists",
    }
    assert "The guard is on the library's code (cfglib, `if self.config.problem_type is None:`)" in d.message


LOUD_LIB = (
    "import torch\n\n\ndef score(x):\n    total = x.sum() * 0\n"
    + "".join(f"    if x[{i}].sum() > 0:\n        total = total + {i}\n" for i in range(60))
    + "    for row in x[:1000]:\n        if row.sum() > 0:\n            total = total + 1\n    return total\n"
)

LOUD_MAIN = """import torch
from loudlib import score

traced = torch.jit.trace(score, (torch.ones(1000, 2),))
"""


def test_a_trace_that_warns_a_thousand_times_is_capped_and_counted(engine: SyncEngine, tmp_path: Path) -> None:
    path, site = _library_project(tmp_path, {"loudlib/__init__.py": LOUD_LIB}, LOUD_MAIN)
    result = engine.check(path)
    assert {d.code for d in result.diagnostics} == {"tracer-warning"}
    placed = [d for d in result.diagnostics if d.data["kind"] != "overflow"]
    (overflow,) = [d for d in result.diagnostics if d.data["kind"] == "overflow"]
    assert len(placed) == 50 and {rng(d.range) for d in placed} == {(6, 9, 6, 55)}  # all on the trace call, the boundary
    assert sorted(d.data["library_frame"]["line"] for d in placed) == list(range(6, 106, 2))  # the first 50 places
    assert overflow.message.startswith("torch.jit.trace warned at 12 more places (1011 warnings) beyond the 50 shown one by one")


def test_a_recompile_says_what_changed_at_each_call(project: Path, engine: SyncEngine) -> None:
    (project / "model.py").write_text(
        "import torch\n\n\ndef double(boxes):\n    return boxes * 2\n\n\nfast = torch.compile(double)\n"
        "fast(torch.ones(4, 4))\nfast(torch.ones(8, 4))\nfast(torch.ones(2, 8, 4))\n"
    )
    (d,) = engine.check(project / "model.py").diagnostics
    assert (d.code, rng(d.range), d.data["recompiles"]) == ("recompile", (3, 4, 3, 10), 2)
    assert "2 times: on the first, the size of dimension 0 of `boxes` changed (4 → 8). Then the number of dimensions of `boxes` changed (2 → 3)." in d.message


def test_a_library_break_dynamo_falls_back_on_is_one_finding_that_names_the_skipped_function(example_runs: ExampleRuns) -> None:
    """minilib's LayerDrop branch is inside its loop over the layers, as in wav2vec2's encoder: dynamo logs
    the break (tracing `train_step`), then "Failed to handle graph break gracefully. Skipping the function
    and falling back to eager." for `LayerDropEncoder.forward` at the same line. One finding says both and
    keeps both records (docs/torch-facts.md §2.5)."""
    (d,) = example_runs.result(LIB_PROJECT / "layerdrop.py").diagnostics
    assert (d.code, rng(d.range), d.severity) == ("graph-break", (11, 13, 11, 28), WARNING)  # hidden = model(features)
    assert d.message.startswith(
        "Graph break inside the library minilib (minilib/layerdrop.py:17, in `forward`): `not skip_the_layer` depends on a tensor's "
        "values, so torch.compile cannot pick a branch while tracing. It splits the graph here, and dynamo then skipped the whole "
        "function `LayerDropEncoder.forward` (minilib/layerdrop.py:13) because graph breaks inside a for/while loop are not "
        "supported: nothing in it is compiled, it runs in eager mode on every call."
    )
    first, fallback = d.data["records"]
    assert first.startswith(f"Graph break in user code at {MINILIB / 'layerdrop.py'}:17\nGraph Break Reason: Encountered graph break when attempting")
    assert fallback.startswith(
        f"Graph break in user code at {MINILIB / 'layerdrop.py'}:17\nGraph Break Reason: Failed to handle graph break gracefully. "
        "Skipping the function and falling back to eager."
    )
    assert d.data["fallback"]["function"] == {"name": "forward", "qualname": "LayerDropEncoder.forward", "file": str(MINILIB / "layerdrop.py"), "line": 13}
    assert d.data["fallback"]["why"] == "graph break in loop" and "occurrences" not in d.data
    in_library = [(os.path.relpath(r.file, MINILIB), r.range.start.line) for r in d.related if r.file.startswith(str(MINILIB))]
    assert in_library == [("layerdrop.py", 16), ("layerdrop.py", 31)]


TWO_CALLS = """import torch
from minilib.layerdrop import LayerDropModel

model = LayerDropModel()


def train_step(a, b):
    first = model(a)
    second = model(b)
    return (first + second).mean()


step = torch.compile(train_step)
step(torch.rand(3, 4), torch.rand(3, 4))
"""


def test_one_library_break_reached_from_two_project_lines_stays_two(project: Path, engine: SyncEngine) -> None:
    """dynamo logs the second reach as a suppressed repeat of the first (same place, same reason), but its
    stack goes through `second = model(b)`: the graph splits there too. Only the first folds with the fall-back."""
    (project / "model.py").write_text(TWO_CALLS)
    got = [(d.code, rng(d.range), "fallback" in d.data) for d in engine.check(project / "model.py").diagnostics]
    assert got == [("graph-break", (7, 12, 7, 20), True), ("graph-break", (8, 13, 8, 21), False)]
