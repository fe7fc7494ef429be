"""The worker's compatibility probes, with small stand-ins for the APIs of older torch releases.

No second torch is needed: each probe takes the object it probes, so a plain Python class or
function stands in for "torch 2.8's draft_export" or "torch 2.10's ShapeEnv". One test runs the
real zygote with a warm-up that fails the way torch ≤ 2.12 fails, and checks it still serves.
"""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLES, SyncEngine, spans

from exportlens.engine import EngineSettings
from exportlens.worker import compat

pytestmark = pytest.mark.torch

# -- stand-ins for older torch APIs ------------------------------------------------------------


def draft_export_2_8(
    mod: Any, args: Any, kwargs: Any = None, *, dynamic_shapes: Any = None, preserve_module_call_signature: Any = (), strict: bool = False
) -> None:
    """Stand-in: torch 2.8's signature (no prefer_deferred_runtime_asserts_over_guards)."""


def draft_export_2_13(
    mod: Any,
    args: Any,
    kwargs: Any = None,
    *,
    dynamic_shapes: Any = None,
    preserve_module_call_signature: Any = (),
    strict: bool = False,
    prefer_deferred_runtime_asserts_over_guards: bool = False,
) -> None:
    """Stand-in: torch 2.9+'s signature."""


class ShapeEnv2_10:
    """Stand-in: torch ≤ 2.10 names the real-value hook and dict after `unbacked_var_to_val`."""

    def __init__(self) -> None:
        self.unbacked_var_to_val = {"u0": 4}

    def set_unbacked_var_to_val(self, k: Any, v: Any) -> None:
        self.unbacked_var_to_val[k] = v


class ShapeEnv2_13:
    """Stand-in: torch ≥ 2.11's names."""

    def __init__(self) -> None:
        self.real_tensor_prop_unbacked_vals = {"u0": 5}
        self.unbacked_var_to_val: dict[str, int] = {}

    def set_real_tensor_prop_unbacked_vals(self, k: Any, v: Any) -> None:
        self.real_tensor_prop_unbacked_vals[k] = v


def test_draft_export_present_or_not() -> None:
    assert compat.draft_export(types.SimpleNamespace(draft_export=draft_export_2_13)) is draft_export_2_13
    old = types.SimpleNamespace(export=lambda *a: None)  # torch 2.7: only torch.export._draft_export
    assert compat.draft_export(old) is None
    assert compat.draft_export(None) is None


def test_unsupported_message_names_both_versions() -> None:
    text = compat.unsupported_message("2.7.0+cu126")
    assert "2.7.0+cu126" in text and "2.8" in text and "draft_export" in text


def test_parameter_probe_drops_what_torch_2_8_does_not_take() -> None:
    options = {"dynamic_shapes": None, "strict": False, "preserve_module_call_signature": (), "prefer_deferred_runtime_asserts_over_guards": False}
    assert compat.accepts(draft_export_2_13, "prefer_deferred_runtime_asserts_over_guards")
    assert not compat.accepts(draft_export_2_8, "prefer_deferred_runtime_asserts_over_guards")
    assert compat.export_options(draft_export_2_13, options) == options
    assert "prefer_deferred_runtime_asserts_over_guards" not in compat.export_options(draft_export_2_8, options)
    # a value the user chose is passed on: torch then says what it thinks of it
    chosen = {**options, "prefer_deferred_runtime_asserts_over_guards": True}
    assert compat.export_options(draft_export_2_8, chosen)["prefer_deferred_runtime_asserts_over_guards"] is True
    assert compat.accepts(lambda *a, **kw: None, "anything")


def test_unbacked_value_hook_and_dict_by_name() -> None:
    assert compat.unbacked_value_hook(ShapeEnv2_13) == "set_real_tensor_prop_unbacked_vals"
    assert compat.unbacked_value_hook(ShapeEnv2_10) == "set_unbacked_var_to_val"
    assert compat.unbacked_value_hook(object) is None
    assert compat.unbacked_values(ShapeEnv2_13()) == {"u0": 5}
    assert compat.unbacked_values(ShapeEnv2_10()) == {"u0": 4}
    assert compat.unbacked_values(object()) == {}


def test_the_real_torch_probes_as_new() -> None:
    import torch

    found = compat.probe(torch)
    assert found["draft_export"] and found["prefer_deferred_runtime_asserts"]
    assert found["unbacked_value_hook"] == "set_real_tensor_prop_unbacked_vals"
    assert found["additional_inputs"] is True


def test_additional_inputs_and_input_guards_are_probed_by_feature() -> None:
    """A torch without AdditionalInputs (or a program without `_guards_code`): no alternative spec,
    no guards read; the Dim.AUTO probe goes on without them."""

    class WithIt:
        class AdditionalInputs:
            def add(self, args: object, kwargs: object = None) -> None: ...

            def dynamic_shapes(self, m: object, args: object, kwargs: object = None) -> None: ...

    class Program:
        _guards_code = ["(L['x'].size()[1]*L['x'].size()[0]) == 12"]

    assert compat.additional_inputs(WithIt) is WithIt.AdditionalInputs
    assert compat.additional_inputs(object()) is None
    assert compat.input_guards(Program()) == ["(L['x'].size()[1]*L['x'].size()[0]) == 12"]
    assert compat.input_guards(object()) is None  # not known: the probe checks its spec by a second export


def test_index_bounds_are_not_input_guards() -> None:
    """torch 2.10.0's `_guards_code` for examples/dynamic_shapes/conv_net.py with named Dims on the
    batch, the height and the width (measured): three int32 indexing bounds, which read as a tie of
    the height and the width made the hint call them static there. They bound, they do not tie."""

    class Program:
        _guards_code = [
            "3*L['images'].size()[2]*L['images'].size()[3] <= 2147483647",
            "8*L['images'].size()[2]*L['images'].size()[3] <= 2147483647",
            "16*L['images'].size()[2]*L['images'].size()[3] <= 2147483647",
            "L['x'].size()[0]*L['x'].size()[1] <= 9223372036854775807",
            "(L['x'].size()[1]*L['x'].size()[0]) == 12",
            "L['x'].size()[0] <= 64",
        ]

    assert compat.input_guards(Program()) == ["(L['x'].size()[1]*L['x'].size()[0]) == 12", "L['x'].size()[0] <= 64"]


@pytest.mark.parametrize(
    ("expr", "result", "expected"),
    [
        ("Eq(u0, 1)", "1", "True"),  # torch ≤ 2.11's tensor condition
        ("Eq(u0, 1)", "0", "False"),
        ("u0 > 2", "1", "True"),
        ("Eq(u0, 1)", "True", "True"),  # 2.12+
        ("((u0 + 11)//u0)", "1", "1"),  # a value keeps its number
        ("u0", "0", "0"),
    ],
)
def test_condition_result(expr: str, result: str, expected: str) -> None:
    assert compat.condition_result(expr, result) == expected


def test_float_item_bug_is_recognised_through_the_chain() -> None:
    bug = AssertionError("Unknown symbol zuf0 created by constraints solver")
    assert compat.float_item_bug(bug) == "zuf0"
    try:
        try:
            raise bug
        except AssertionError as inner:
            raise RuntimeError("draft export failed") from inner
    except RuntimeError as outer:
        assert compat.float_item_bug(outer) == "zuf0"
    assert compat.float_item_bug(AssertionError("Unknown symbol u0 created by constraints solver")) is None
    assert compat.float_item_bug(ValueError("Unknown symbol zuf0 created by constraints solver")) is None


# -- a warm-up that fails must not take the worker down -----------------------------------------

FAILING_WARMUP = '''"""Test stand-in: torch <= 2.12's float-assert bug, hit by the zygote's warm-up export only."""
import torch

_real = torch.export.export


def export(mod, *args, **kwargs):
    if type(mod).__name__ == "WarmUp":
        raise AssertionError("Unknown symbol zuf0 created by constraints solver")
    return _real(mod, *args, **kwargs)


torch.export.export = export
'''


def test_a_failing_warm_up_leaves_the_zygote_serving(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "sitecustomize.py").write_text(FAILING_WARMUP)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    eng = SyncEngine(EngineSettings(timeout=60, memory_mb=2048))
    try:
        info = eng.call(eng.engine.start())
        assert "Unknown symbol zuf0" in info["warmup_error"]
        assert info["unsupported"] is None and info["compat"]["draft_export"]
        pid = info["pid"]
        for _ in range(2):  # served cold, by the same zygote, with the right findings
            assert spans(eng.check(EXAMPLES / "data_dependent/item_branch.py")) == [("item_branch.py", 8, 11, 8, 16, "data-dependent-guard")]
        assert eng.engine.worker.info["pid"] == pid
    finally:
        eng.close()


# -- what older releases report, placed and told like 2.13's findings (server side, no torch) -----

FLOAT_BRANCH = """import torch


class M(torch.nn.Module):
    def forward(self, x):
        s = x.sum().item()
        if s > 0:
            return x + 1
        return x - 1
"""

SPLIT = """import torch


class Chunker(torch.nn.Module):
    def forward(self, x, n):
        size = n.item()
        parts = x.split(size)
        return parts[0] * 2
"""


def _context(project: Path, path: Path) -> Any:
    from exportlens.engine import SourceCache
    from exportlens.findings import Context

    return Context(str(project), SourceCache(), "model", str(path), 1)


def test_float_item_bug_of_torch_2_12_is_explained_on_the_branch(project: Path) -> None:
    from exportlens import findings

    path = project / "float_branch.py"
    path.write_text(FLOAT_BRANCH)
    event = {  # what the worker sends on torch <= 2.12 (measured on 2.8.0 and 2.12.1)
        "event": "target",
        "name": "model",
        "file": str(path),
        "line": 1,
        "kind": "export",
        "seconds": 0.1,
        "exception": {"type": "AssertionError", "message": "Unknown symbol zuf0 created by constraints solver", "chain": [], "syntax": None},
        "torch_bug": {
            "kind": "float-item-assert",
            "symbol": "zuf0",
            "created": {"symbol": "zuf0", "file": str(path), "line": 6},
            "branch": {"symbol": "zuf0", "expr": "zuf0 > 0.0", "file": str(path), "line": 7},
        },
    }
    [d] = findings.from_event(_context(project, path), event)
    assert (d.code, d.range.start.line, d.range.start.character) == ("data-dependent-guard", 6, 11)
    assert "torch 2.13" in d.message and "int(...)" in d.message and "Traceback" not in d.message
    assert [r.range.start.line for r in d.related] == [5]


def test_split_asked_as_eq_zero_prefers_pinning(project: Path) -> None:
    from exportlens import findings
    from exportlens import fix_registry as quickfix

    path = project / "split.py"
    path.write_text(SPLIT)
    failure = {  # torch <= 2.12 asks `Eq(u0, 0)` first inside x.split(size)
        "type": "DATA_DEPENDENT_ERROR",
        "expr": "Eq(u0, 0)",
        "result": "False",
        "occurrences": 3,
        "user_stack": [{"file": str(path), "line": 7, "name": "forward", "loc": "parts = x.split(size)"}],
        "frame_locals": {"loc": "parts = x.split(size)", "locals": {"size": ["u0"]}, "symbols": {}},
        "symbol_to_sources": {},
    }
    event = {"event": "target", "name": "model", "file": str(path), "line": 1, "kind": "export", "seconds": 0.1, "failures": [failure], "values": {"u0": 4}}
    [d] = findings.from_event(_context(project, path), event)
    assert d.data["pin"] == "size == 4" and "torch._check(size == 4)" in d.message
    quickfix.attach([d])
    assert [(f.title.split(":")[0], f.is_preferred) for f in d.fixes] == [
        ("Pin the value", True),
        ("Add `torch._check(size != 0)` — assumes `size != 0` for every input; inputs with size = 0 will raise (settles only this first question)", False),
    ]
    assert [f.assumes for f in d.fixes] == ["size == 4", "size != 0"]


@pytest.mark.parametrize(
    ("title", "gb_id", "kind"),
    [
        ("Data-dependent branching", None, "branch"),  # 2.8-2.10 log it without an id
        ("Data-dependent branching", "gb0170", "branch"),
        ("copy.deepcopy()", "gb0179", "deepcopy"),  # 2.10/2.11
        ("Attempted to copy.deepcopy a tensor", "gb4198", "deepcopy"),  # 2.12+
        ("Unsupported Tensor.item() call with capture_scalar_outputs=False", None, "item"),
        ("Failed to trace builtin operator", None, "builtin"),
        ("Something new", "gb0170", "branch"),  # an unknown title still has its id
        ("Something new", None, None),
    ],
)
def test_graph_breaks_are_told_apart_by_title(title: str, gb_id: str | None, kind: str | None) -> None:
    from exportlens.findings.compile import break_kind

    assert break_kind({"title": title, "gb_id": gb_id}) == kind


# -- a torch without draft_export: one clear message, one zygote --------------------------------


def test_torch_without_draft_export_gets_one_message(tmp_path: Path) -> None:
    import json
    import os
    import subprocess
    import sys

    from conftest import ROOT
    from old_torch import STARTS_ENV, VERSION, make_project, make_venv

    python = make_venv(tmp_path / "old-torch-standin")
    proj = make_project(tmp_path / "proj")
    starts = tmp_path / "starts.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "server"), STARTS_ENV: str(starts)}

    def check(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "exportlens", "check", str(proj), "--python", str(python), *extra], capture_output=True, text=True, env=env, timeout=300
        )

    out = check()
    assert out.returncode == 2, out.stderr
    said = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(said) == 1 and VERSION in said[0] and "2.8" in said[0] and "draft_export" in said[0]
    assert "Traceback" not in out.stderr + out.stdout
    assert out.stdout.strip().splitlines()[-1].endswith(f"torch {VERSION})")
    assert out.stdout.startswith("0 problems in 3 targets")
    assert len(starts.read_text().splitlines()) == 1  # one zygote for both files, never one per file

    doc = json.loads(check("--format", "json").stdout)
    assert doc["torch"] == VERSION and VERSION in doc["unsupported"]
    assert doc["diagnostics"] == [] and {t["status"] for t in doc["targets"]} == {"unsupported"}


class _Frame:
    """A stand-in for a Python frame: a code name, locals, the caller."""

    def __init__(self, name: str, f_locals: dict[str, object], back: _Frame | None = None) -> None:
        self.f_code = type("Code", (), {"co_name": name})()
        self.f_locals = f_locals
        self.f_back = back


def test_graph_break_stack_is_the_uncollapsed_one_of_each_torch() -> None:
    """2.9+: `log_graph_break` has the exception (`exc.real_stack`); 2.8: its caller does, and its own
    `user_stack` is already collapsed; without one, the tracing context's stack; elsewhere, None."""
    exc = RuntimeError("graph break")
    exc.real_stack = ["forward", "forward"]  # type: ignore[attr-defined]
    handler = lambda frame: _Frame("emit", {}, _Frame("callHandlers", {}, frame))  # noqa: E731
    new = handler(_Frame("log_graph_break", {"exc": exc, "user_stack": ["forward"]}))
    old = handler(_Frame("log_graph_break", {"user_stack": ["forward"]}, _Frame("wrapper", {"excp": exc})))
    bare = handler(_Frame("log_graph_break", {"user_stack": ["forward"]}, _Frame("STORE_ATTR", {})))
    assert compat.graph_break_stack(new, lambda: ["context"]) == ["forward", "forward"]
    assert compat.graph_break_stack(old, lambda: ["context"]) == ["forward", "forward"]
    assert compat.graph_break_stack(bare, lambda: ["context"]) == ["context"]
    assert compat.graph_break_stack(handler(_Frame("elsewhere", {})), lambda: ["context"]) is None
