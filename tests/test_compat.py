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

# -- stand-ins for older torch APIs ------------------------------------------------------------


def draft_export_2_8(mod: Any, args: Any, kwargs: Any = None, *, dynamic_shapes: Any = None,
                     preserve_module_call_signature: Any = (), strict: bool = False) -> None:
    """Stand-in: torch 2.8's signature (no prefer_deferred_runtime_asserts_over_guards)."""


def draft_export_2_13(mod: Any, args: Any, kwargs: Any = None, *, dynamic_shapes: Any = None,
                      preserve_module_call_signature: Any = (), strict: bool = False,
                      prefer_deferred_runtime_asserts_over_guards: bool = False) -> None:
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
    options = {"dynamic_shapes": None, "strict": False, "preserve_module_call_signature": (),
               "prefer_deferred_runtime_asserts_over_guards": False}
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


@pytest.mark.parametrize(("expr", "result", "expected"), [
    ("Eq(u0, 1)", "1", "True"),  # torch ≤ 2.11's tensor condition
    ("Eq(u0, 1)", "0", "False"),
    ("u0 > 2", "1", "True"),
    ("Eq(u0, 1)", "True", "True"),  # 2.12+
    ("((u0 + 11)//u0)", "1", "1"),  # a value keeps its number
    ("u0", "0", "0"),
])
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

FAILING_WARMUP = '''"""Test stand-in: torch <= 2.12's float-assert bug, hit by the zygote's warm-up only."""
import torch

_real = torch.export.draft_export


def draft_export(mod, *args, **kwargs):
    if type(mod).__name__ == "WarmUp":
        raise AssertionError("Unknown symbol zuf0 created by constraints solver")
    return _real(mod, *args, **kwargs)


torch.export.draft_export = draft_export
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
            assert spans(eng.check(EXAMPLES / "data_dependent/item_branch.py")) == [
                ("item_branch.py", 8, 11, 8, 16, "data-dependent-guard")]
        assert eng.engine.worker.info["pid"] == pid
    finally:
        eng.close()
