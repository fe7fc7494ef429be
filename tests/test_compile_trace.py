"""torch.compile graph breaks and recompiles, torch.jit.trace warnings: real torch, exact places.

The examples under examples/compile and examples/trace run the way the worker runs a script
(a fresh fork per file, as `__main__`, with `compile_watch`/`trace_watch` installed), and the
events go through `findings` with the engine's source cache; `test_engine_end_to_end` checks the
same through the engine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLES, EXPECTED_EXAMPLES, ROOT, ExampleRuns, spans

from exportlens import findings
from exportlens.engine import SourceCache
from exportlens.findings.compile import what_changed
from exportlens.model import Diagnostic

pytestmark = pytest.mark.torch

# What the worker will do for these files (job.py + compile_watch/trace_watch), once per file.
HARNESS = r"""
import json, os, runpy, sys
import torch
from exportlens.worker import compile_watch, trace_watch

root, backend = sys.argv[1], sys.argv[2]
for file in sys.argv[3:]:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        out = os.fdopen(w, "w")
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        def emit(event):
            out.write(json.dumps(event, default=str) + "\n")
            out.flush()
        try:
            torch.set_num_threads(1)
            compile_watch.install(emit, root, backend)
            trace_watch.install(emit, root)
            sys.argv = [file]
            sys.path[:0] = [os.path.dirname(file), root]
            os.chdir(root)
            try:
                runpy.run_path(file, run_name="__main__")
            except BaseException as exc:
                emit({"event": "script-raised", "type": type(exc).__name__, "message": str(exc)[:2000]})
            finally:
                compile_watch.finish()
        finally:
            out.close()
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as fh:
        for line in fh:
            sys.stdout.write(json.dumps({"source": file, **json.loads(line)}) + "\n")
    os.waitpid(pid, 0)
"""

COMPILE = ["branch.py", "fullgraph_branch.py", "item.py", "print_first.py", "helper_call.py", "deepcopy_state.py", "recompile_shapes.py", "recompile_number.py"]
TRACE = ["tracer_warnings.py", "check_inputs.py"]


def run_examples(files: list[Path], backend: str = "eager") -> list[dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "server")}
    out = subprocess.run([sys.executable, "-c", HARNESS, str(EXAMPLES), backend, *map(str, files)], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return [json.loads(line) for line in out.stdout.splitlines()]


def diagnose(events: list[dict[str, Any]]) -> dict[str, list[Diagnostic]]:
    """Example file name → its diagnostics, placed as the engine places them."""
    cache = SourceCache()
    out: dict[str, list[Diagnostic]] = {}
    for ev in events:
        name = os.path.basename(ev["source"])
        out.setdefault(name, [])
        if ev["event"] != "target":
            continue
        ctx = findings.Context(str(EXAMPLES), cache, ev["name"], ev["file"], int(ev["line"]))
        out[name].extend(findings.from_event(ctx, ev))
    return out


@pytest.fixture(scope="module")
def events() -> list[dict[str, Any]]:
    return run_examples([EXAMPLES / "compile" / f for f in COMPILE] + [EXAMPLES / "trace" / f for f in TRACE])


@pytest.fixture(scope="module")
def diags(events: list[dict[str, Any]]) -> dict[str, list[Diagnostic]]:
    return diagnose(events)


def span(d: Diagnostic) -> tuple[str, int, int, int, int, str]:
    r = d.range
    return (os.path.basename(d.file), r.start.line, r.start.character, r.end.line, r.end.character, d.code)


def text(d: Diagnostic) -> str:
    return Path(d.file).read_text().splitlines()[d.range.start.line][d.range.start.character : d.range.end.character]


# example file name → sorted [(file name, line, char, end line, end char, code)], 0-based like LSP, from examples/EXPECTED.json
EXPECTED = {
    os.path.basename(name): sorted((os.path.basename(d["file"]), *d["range"], d["code"]) for d in diags)
    for name, diags in EXPECTED_EXAMPLES.items()
    if name.startswith(("compile/", "trace/"))
}
assert sorted(EXPECTED) == sorted(COMPILE + TRACE)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_spans(diags: dict[str, list[Diagnostic]], name: str) -> None:
    assert sorted(span(d) for d in diags[name]) == EXPECTED[name]


def test_targets_are_the_compile_and_trace_calls(events: list[dict[str, Any]]) -> None:
    got = sorted((os.path.basename(e["source"]), e["name"], e["kind"], e["line"]) for e in events if e["event"] == "target")
    assert got == [
        ("branch.py", "compile at branch.py:15", "compile", 15),
        ("check_inputs.py", "trace at check_inputs.py:18", "trace", 18),
        ("check_inputs.py", "trace at check_inputs.py:19", "trace", 19),  # the script went on after the failure
        ("deepcopy_state.py", "compile at deepcopy_state.py:8", "compile", 8),
        ("fullgraph_branch.py", "compile at fullgraph_branch.py:6", "compile", 6),
        ("helper_call.py", "compile at helper_call.py:7", "compile", 7),
        ("item.py", "compile at item.py:6", "compile", 6),
        ("print_first.py", "compile at print_first.py:12", "compile", 12),
        ("recompile_number.py", "compile at recompile_number.py:11", "compile", 11),
        ("recompile_shapes.py", "compile at recompile_shapes.py:6", "compile", 6),
        ("tracer_warnings.py", "trace at tracer_warnings.py:18", "trace", 18),
        ("tracer_warnings.py", "trace at tracer_warnings.py:19", "trace", 19),
    ]
    raised = [(os.path.basename(e["source"]), e["type"]) for e in events if e["event"] == "script-raised"]
    assert raised == [("fullgraph_branch.py", "Unsupported")]
    compiled = [e for e in events if e["event"] == "target" and e["kind"] == "compile"]
    assert {e["compile_options"]["used_backend"] for e in compiled} == {"eager"}


def test_data_dependent_branch(diags: dict[str, list[Diagnostic]]) -> None:
    (d,) = diags["branch.py"]
    assert d.severity == 2 and text(d) == "y.sum() > 0"
    assert d.message.startswith("Graph break: `y.sum() > 0` depends on a tensor's values")
    assert "Use `torch.cond` to express dynamic control flow." in d.message  # torch's own hint
    assert d.data["gb_id"] == "gb0170" and d.data["url"].endswith("/gb/gb0170.html")
    assert d.data["fix"] == "torch_cond" and d.data["title"] == "Data-dependent branching"
    assert d.data["compiled"]["name"] == "forward"
    assert [(os.path.basename(r.file), r.range.start.line, r.message) for r in d.related] == [
        ("branch.py", 15, "called from here (module)"),
        ("branch.py", 14, "compiled here with torch.compile"),
    ]


def test_fullgraph_break_is_an_error(diags: dict[str, list[Diagnostic]]) -> None:
    (d,) = diags["fullgraph_branch.py"]
    assert d.severity == 1 and text(d) == "x.mean() > 0" and d.data["fullgraph"] is True
    assert "With fullgraph=True this is an error: the call raises here." in d.message
    assert d.data["gb_id"] == "gb0170" and d.data["fix"] == "torch_cond"


def test_item(diags: dict[str, list[Diagnostic]]) -> None:
    (d,) = diags["item.py"]
    assert text(d) == "x.mean().item()"
    assert d.data["gb_id"] == "gb0124"
    assert [f["fix"] for f in d.data["fixes"]] == ["capture_scalar_outputs", "torch_check"]
    assert "capture_scalar_outputs = True" in d.message


def test_print_as_first_statement(diags: dict[str, list[Diagnostic]]) -> None:
    (d,) = diags["print_first.py"]
    assert text(d) == 'print("step called")'
    assert d.data["gb_id"] == "gb0059"
    assert d.data["fixes"] == [{"fix": "reorderable_logging", "function": "print"}]
    assert "`print(...)`" in d.message and "reorderable_logging_functions" in d.message


def test_helper_in_another_file(diags: dict[str, list[Diagnostic]]) -> None:
    (d,) = diags["helper_call.py"]
    assert d.file == str(EXAMPLES / "compile" / "clamp_helpers.py")
    assert text(d) == "x.abs().max() > 1"
    assert "(reached from the compiled function `normalise`)" in d.message
    assert [f["fix"] for f in d.data["fixes"]] == ["torch_cond", "compiler_disable"]
    assert d.data["fixes"][1]["function"] == "clip_if_large"
    caller = d.related[0]
    assert (os.path.basename(caller.file), caller.range.start.line, caller.range.start.character) == ("helper_call.py", 9, 11)
    assert caller.message == "called from here (normalise)"


def test_deepcopy_lands_on_the_workspace_frame(diags: dict[str, list[Diagnostic]]) -> None:
    (d,) = diags["deepcopy_state.py"]
    assert text(d) == "copy.deepcopy(x)"
    assert os.path.basename(d.data["torch_location"]["file"]) == "copy.py"  # where torch said it broke
    assert d.data["gb_id"] == "gb4198" and d.data["fixes"] == []


def test_recompiles_on_shapes_hit_the_limit(diags: dict[str, list[Diagnostic]]) -> None:
    (d,) = diags["recompile_shapes.py"]
    assert d.severity == 2 and text(d) == "double"
    assert d.data["recompiles"] == 8 and d.data["limit_hit"] is True and d.data["limit"] == 8
    assert d.data["change"]["kind"] == "size" and d.data["change"]["name"] == "x" and d.data["change"]["dim"] == 0
    assert "hit recompile_limit (8): the size of dimension 0 of `x` keeps changing" in d.message
    assert [f["fix"] for f in d.data["fixes"]] == ["drop_dynamic_false", "mark_dynamic"]
    call = d.related[0]
    assert (call.range.start.line, call.range.start.character, call.message) == (12, 8, "this call triggered the recompile")
    assert d.related[-1].range.start.line == 5  # the @torch.compile(dynamic=False) line


def test_recompile_on_a_python_number(diags: dict[str, list[Diagnostic]]) -> None:
    (d,) = diags["recompile_number.py"]
    # on the line torch's guard failure names (its user stack), narrowed to the guarded name
    assert text(d) == "offset" and d.range.start.line == 6 and d.data["placed"] == "guard"
    assert d.data["recompiles"] == 1 and d.data["limit_hit"] is False and d.data["function"] == "shift"
    assert d.data["guard"] == "offset == 1"
    assert d.data["fixes"] == [{"fix": "pass_as_tensor", "name": "offset"}]
    assert "recompiled `shift` 1 time: on the first, the Python number `offset` changed (the code was compiled for 1)" in d.message
    assert [(r.range.start.line, r.message) for r in d.related] == [
        (13, "this call triggered the recompile"),
        (10, "compiled here with torch.compile"),
    ]


def test_tracer_warnings(diags: dict[str, list[Diagnostic]]) -> None:
    by_line = {d.range.start.line: d for d in diags["tracer_warnings.py"]}
    assert by_line[6].data["kind"] == "python-value" and "Python boolean" in by_line[6].message
    assert by_line[6].data["placed"] == "warning"
    assert by_line[12].data["kind"] == "nondeterministic" and "`rand`" in by_line[12].message
    assert by_line[12].data["placed"] == "suffix"
    assert by_line[12].data["torch_location"]["file"].endswith(os.path.join("torch", "jit", "_trace.py"))
    assert by_line[18].data["kind"] == "output-mismatch"


def test_check_inputs_failure(diags: dict[str, list[Diagnostic]], events: list[dict[str, Any]]) -> None:
    d = next(d for d in diags["check_inputs.py"] if d.code == "trace-check-failed")
    assert d.severity == 1 and text(d) == "result = result * x[i]"
    assert "aten::mul" in d.data["graph_diff"] and d.data["recovered"] is True
    assert "First difference: `%result : Tensor = aten::mul(%result.3, %10)`." in d.message
    later = next(e for e in events if e.get("name") == "trace at check_inputs.py:19")
    assert later["trace_findings"] == []


def test_parsers_on_torch_text() -> None:
    from exportlens.worker import compile_watch

    rec = compile_watch.parse_recompile(
        "Recompiling function fn in /p/m.py:30\n    triggered by the following guard failure(s):\n"
        "    - 0/1: tensor 'x' size mismatch at index 0. expected 2, actual 3\n"
        "    - 0/0: tensor 'x' size mismatch at index 0. expected 1, actual 3"
    )
    assert rec is not None and rec["code"] == {"file": "/p/m.py", "line": 30, "name": "fn"}
    assert [f["compile_id"] for f in rec["failures"]] == ["0/1", "0/0"] and rec["failed_entries"] == 2
    limit = compile_watch.parse_limit(
        "torch._dynamo hit config.recompile_limit (8)\n   function: 'fn_static' (/p/m.py:34)\n"
        "   last reason: 0/7: tensor 'x' size mismatch at index 0. expected 7, actual 8\n"
    )
    assert limit is not None and limit["limit"] == 8 and limit["compile_id"] == "0/7"
    assert limit["reason"] == "tensor 'x' size mismatch at index 0. expected 7, actual 8"
    dup = compile_watch.parse_graph_break(
        "Graph break (user stack suppressed due to duplicate graph break) in user code at /p/h.py:5\n"
        "Graph Break Reason: Data-dependent branching\n  Explanation: Detected data-dependent branching.\n"
        "  Hint: Use `torch.cond` to express dynamic control flow.\n\n For more details about this graph break, "
        "please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html"
    )
    assert dup is not None and dup["duplicate"] and dup["gb_id"] == "gb0170"
    assert dup["frames"] == [{"file": "/p/h.py", "line": 5}] and dup["hints"] == ["Use `torch.cond` to express dynamic control flow."]
    assert what_changed("x == 2.5")["kind"] == "value"
    resumed = compile_watch.parse_recompile(
        "Recompiling function torch_dynamo_resume_in_filter_scores_at_14 in /site-packages/minilib/postprocess.py:14\n"
        "    triggered by the following guard failure(s):\n    - 5/0: tensor 'scores' size mismatch at index 0. expected 4, actual 6"
    )
    assert resumed is not None and resumed["resumes"] == {"name": "filter_scores", "line": 14}


@pytest.mark.parametrize(
    ("guard", "kind", "text"),
    [  # the guard failures dynamo 2.13 logs (docs/torch-facts.md §2.3)
        ("tensor 'x' size mismatch at index 0. expected 4, actual 6", "size", "the size of dimension 0 of `x` changed (4 → 6)"),
        ("tensor 'boxes' rank mismatch. expected 2, actual 3", "rank", "the number of dimensions of `boxes` changed (2 → 3)"),
        ("tensor 'x' dtype mismatch. expected Float, actual Double", "dtype", "the dtype of `x` changed (Float → Double)"),
        (
            "tensor 'x' requires_grad mismatch. expected requires_grad=0",
            "requires_grad",
            "`x.requires_grad` changed (the code was compiled for a tensor without requires_grad)",
        ),
        (
            "k == 1                                                   # return x * 2 + k  # mp/g.py:9 in f",
            "value",
            "the Python number `k` changed (the code was compiled for 1)",
        ),
        ("flag == True", "value", "the Python value `flag` changed (the code was compiled for True)"),
        ("mode == 'a'", "value", "the Python value `mode` changed (the code was compiled for 'a')"),
        ("L['offset'] == 3", "value", "the Python number `offset` changed (the code was compiled for 3)"),
        ("___check_type_id(k, 139690571562208), type=<class 'int'>  # return x * 2 + k", "type", "the type of `k` changed (the code was compiled for int)"),
        (
            "not ___dict_contains('problem_type', G['model'].config.__dict__)",
            "attribute",
            "`model.config.problem_type` was set after the code was compiled without it",
        ),
        ("len(L['xs']) == 2", "other", "the guard `len(L['xs']) == 2` failed"),
    ],
)
def test_what_changed_speaks_each_guard(guard: str, kind: str, text: str) -> None:
    change = what_changed(guard)
    assert (change["kind"], change["text"]) == (kind, text)


@pytest.mark.parametrize("name", sorted(n for n in EXPECTED_EXAMPLES if n.startswith(("compile/", "trace/"))))
def test_engine_end_to_end(example_runs: ExampleRuns, name: str) -> None:
    """Every compile and trace example through the engine (the run every test of examples/ shares)."""
    result = example_runs.result(name)
    assert sorted(spans(result)) == EXPECTED[os.path.basename(name)]


@pytest.mark.slow
def test_inductor_sees_the_same_breaks() -> None:
    """The ablation the troubleshooting guide recommends: inductor breaks where eager breaks (~20 s)."""
    got = diagnose(run_examples([EXAMPLES / "compile" / "item.py"], backend="inductor"))
    assert sorted(span(d) for d in got["item.py"]) == EXPECTED["item.py"]
