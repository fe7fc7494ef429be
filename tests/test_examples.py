"""Every bundled example, through the real engine and real torch: exact code, file and range."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import EXAMPLES, EXPECTED_EXAMPLES, ExampleRuns, SyncEngine, example_spans, expected_example_spans, spans

from exportlens.model import ERROR, INFORMATION, WARNING
from exportlens.sarif import to_sarif

pytestmark = pytest.mark.torch

# compile/ and trace/ examples are checked by tests/test_compile_trace.py, from the same EXPECTED.json.
LIBRARY_SOURCES = EXAMPLES / "library_project" / "libsrc"
EXPORT_EXAMPLES = sorted(k for k in EXPECTED_EXAMPLES if not k.startswith(("compile/", "trace/")))


def test_expected_json_covers_every_example_file() -> None:
    """Every .py under examples/ is checked (a key) or is a helper a checked file's diagnostics land in."""
    files = {
        p.relative_to(EXAMPLES).as_posix() for p in EXAMPLES.rglob("*.py") if LIBRARY_SOURCES not in p.parents
    }  # the library itself is installed into site-packages
    helpers = {d["file"] for diags in EXPECTED_EXAMPLES.values() for d in diags} - set(EXPECTED_EXAMPLES)
    assert files == set(EXPECTED_EXAMPLES) | helpers


@pytest.mark.parametrize("name", EXPORT_EXAMPLES)
def test_example_diagnostics(example_runs: ExampleRuns, name: str) -> None:
    result = example_runs.result(name)
    assert example_spans(result) == expected_example_spans(name)
    assert result.targets, "every example declares a target"
    expected = EXPECTED_EXAMPLES[name]
    codes = {e["code"] for e in expected if e["severity"] in ("error", "warning")}
    status = "ok" if not codes else "error" if codes & {"export-error", "target-error"} else "problems"
    assert all(t.status == status for t in result.targets)


def test_messages_speak_the_users_names(example_runs: ExampleRuns) -> None:
    (d,) = example_runs.result("data_dependent/item_branch.py").diagnostics
    assert d.severity == ERROR
    assert "`n > 2`" in d.message and "torch saw `u0 > 2`" in d.message
    assert "torch._check(n > 2)" in d.message and "True" in d.message
    assert d.data["source_expr"] == "n > 2" and d.data["result"] == "True"
    assert d.data["names"] == {"u0": "n"}
    assert d.target == "export at item_branch.py:15"


def test_tensor_condition_is_told_apart(example_runs: ExampleRuns) -> None:
    (d,) = example_runs.result("data_dependent/tensor_branch.py").diagnostics
    assert d.data["tensor_condition"] is True
    assert d.data["test_text"] == "x.sum() > 0"
    assert "torch.cond" in d.message and "torch._check" not in d.message


def test_split_needs_the_value_pinned(example_runs: ExampleRuns) -> None:
    (d,) = example_runs.result("data_dependent/split_sizes.py").diagnostics
    assert d.data["kind"] == "value"
    assert d.data["pin"] == "size == 4"
    assert "torch._check(size == 4)" in d.message
    assert d.data["occurrences"] == 2


def test_constraint_violation_names_the_dimension(example_runs: ExampleRuns) -> None:
    """torch fixes `batch` to 4 on `if x.shape[0] == 4:`: the finding is on that line, names the Dim,
    the input dimension, the guard and torch's suggestion (here a constant: it says so)."""
    (d,) = example_runs.result("constraint/model.py").diagnostics
    assert d.message == (
        '`batch` (`x.shape[0]`, `y.shape[0]`, Dim("batch")) is marked dynamic, but this code fixes it to 4: torch added the guard '
        "`x.shape[0] == 4`, so torch.export.export fails with a constraint violation. torch suggests `batch = 4`, which "
        "makes `batch` static."
    )
    dims = [(dim["spelled"], dim["kind"], dim["name"], dim["size"]) for dim in d.data["dims"]]
    assert dims == [("x.shape[0]", "named", "batch", 4), ("y.shape[0]", "named", "batch", 4)]
    assert (d.data["reason"], d.data["value"], d.data["expr"], d.data["suggested"], d.data["placed"]) == ("constant", 4, "Eq(s77, 4)", ["batch = 4"], "guard")
    (rel,) = d.related
    assert rel.range.start.line == 15 and "dynamic_shapes" in rel.message


def test_helper_file_gets_the_diagnostic_and_the_caller_is_related(example_runs: ExampleRuns) -> None:
    (d,) = example_runs.result("two_files/model.py").diagnostics
    assert d.file == str(EXAMPLES / "two_files/layers.py")
    assert "`k > 3`" in d.message
    (rel,) = d.related
    assert rel.file == str(EXAMPLES / "two_files/model.py")
    assert (rel.range.start.line, rel.range.start.character) == (8, 15)


def test_missing_fake_kernel_keeps_the_op_profile(example_runs: ExampleRuns) -> None:
    diags = example_runs.result("missing_fake/model.py").diagnostics
    call = next(d for d in diags if d.data["role"] == "call")
    assert call.data["qualname"] == "exportlens_demo::nonzero_rows"
    assert call.data["definition"]["kind"] == "custom_op" and call.data["definition"]["line"] == 6
    assert call.data["profiles"] == [
        {
            "args": [{"rank": 2, "dtype": "torch.float32", "device": "cpu", "layout": "torch.strided"}],
            "out": {"rank": 2, "dtype": "torch.float32", "device": "cpu", "layout": "torch.strided"},
            "sizes": {"args": [[3, 2]], "out": [[2, 2]]},  # the real sizes: one row of three was dropped
        }
    ]
    assert "@nonzero_rows.register_fake" in call.message


def test_mismatched_fake_kernel_points_at_the_fake(example_runs: ExampleRuns) -> None:
    diags = example_runs.result("mismatched_fake/model.py").diagnostics
    assert {d.severity for d in diags} == {WARNING}
    fake = next(d for d in diags if d.data["role"] == "fake")
    assert fake.data["fake"]["line"] == 11
    assert "torch.float64" in fake.message and "torch.float32" in fake.message


def test_repeated_runs_in_one_zygote_still_resolve_files(engine: SyncEngine) -> None:
    """torch's per-report filename table is empty after the first export in a process."""
    first = spans(engine.check(EXAMPLES / "two_files/model.py"))
    for _ in range(2):
        assert spans(engine.check(EXAMPLES / "two_files/model.py")) == first
        assert example_spans(engine.check(EXAMPLES / "data_dependent/item_branch.py")) == expected_example_spans("data_dependent/item_branch.py")


def test_folder_walk_is_quiet_about_helper_modules(example_runs: ExampleRuns) -> None:
    folder = EXAMPLES / "two_files"  # walked as part of examples/: layers.py is a helper, found by the walk, not named
    diagnostics = [d for d in example_runs.report().diagnostics if Path(d.file).is_relative_to(folder)]
    assert [(Path(d.file).name, d.code) for d in diagnostics] == [("layers.py", "data-dependent-guard")]
    assert not any(d.severity == INFORMATION for d in diagnostics)


def test_op_profiles_are_saved_in_torchs_format(engine: SyncEngine, examples_copy) -> None:  # type: ignore[no-untyped-def]
    path = examples_copy / "missing_fake/model.py"
    result = engine.check(path, save_op_profiles=True)
    (saved,) = result.op_profiles
    assert saved == {"target": "model", "file": str(examples_copy / "missing_fake/model.op_profiles.yaml"), "ops": ["exportlens_demo.nonzero_rows.default"]}
    text = (examples_copy / "missing_fake/model.op_profiles.yaml").read_text()
    assert text.startswith("torch_version: '2.13'\noperators:\n  exportlens_demo.nonzero_rows.default:\n")


def test_library_define_op_is_found_at_its_define_call(example_runs: ExampleRuns) -> None:
    diags = example_runs.result("library_op/model.py").diagnostics
    definition = next(d for d in diags if d.data["role"] == "definition")
    assert definition.data["definition"]["kind"] == "library" and definition.data["definition"]["line"] == 5
    assert '@torch.library.register_fake("exportlens_demo::twice")' in definition.message


# The only results whose level may differ from their rule's default, each for a documented reason.
DELIBERATE_LEVELS = {
    ("graph-break", "error"): lambda data: data.get("fullgraph") is True,  # fullgraph=True: the script stops there
    ("recompile", "note"): lambda data: data.get("recompiles") == 1 and data["change"]["kind"] == "size",  # automatic dynamic
}


def test_sarif_result_levels_equal_their_rules_default_level(example_runs: ExampleRuns) -> None:
    """One home per fact: a result's level comes from the same table as its rule's default level.

    `mismatched-fake-kernel` once was an error in codes.py and a warning in findings, so SARIF's rule
    said "error" while its results said "warning".
    """
    report = example_runs.report()
    log = to_sarif(report.to_json(), tool_version="test", root=str(EXAMPLES))
    (run,) = log["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert len(run["results"]) == len(report.diagnostics)
    checked = set()
    for result, diag in zip(run["results"], report.diagnostics, strict=True):
        rule = rules[result["ruleIndex"]]
        assert rule["id"] == result["ruleId"] == diag.code
        if result["level"] != rule["defaultConfiguration"]["level"]:
            allowed = DELIBERATE_LEVELS.get((diag.code, result["level"]))
            assert allowed is not None and allowed(diag.data), (diag.code, result["level"], diag.file, diag.range.start.line)
        checked.add(diag.code)
    assert {
        "data-dependent-guard",
        "guard-added",
        "missing-fake-kernel",
        "mismatched-fake-kernel",
        "graph-break",
        "recompile",
        "tracer-warning",
        "trace-check-failed",
    } <= checked
