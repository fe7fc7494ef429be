"""The user's export is the judge: over every export target of examples/, plain `torch.export.export`
(tests/plain_dynamic.py, in a fresh interpreter, no ExportLens code in it) against ExportLens's verdict.

A target whose plain export fails has an error; one whose plain export passes has none, and exactly
one `dim-specialized` warning per dimension it was asked to keep dynamic and did not.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from conftest import EXAMPLES, ExampleRuns

from exportlens.model import ERROR

pytestmark = pytest.mark.torch


def test_exportlens_never_calls_a_failing_export_clean(plain_truth: dict[str, dict[str, Any]], example_runs: ExampleRuns) -> None:
    truth = plain_truth  # tests/plain_dynamic.py on examples/, in a fresh interpreter (conftest.plain_export)
    files = sorted({key.split(":", 1)[0] for key in truth})
    verdicts: dict[str, tuple[list[str], list[str]]] = {}  # target → (error codes, dimensions said specialized)
    for path in files:
        result = example_runs.result(path)
        for t in result.targets:
            if t.kind != "export":
                continue
            mine = [d for d in result.diagnostics if t.name in d.target.split(", ")]
            errors = [d.code for d in mine if d.severity == ERROR]
            lost = sorted(d.data["dim"]["spelled"] for d in mine if d.code == "dim-specialized")
            verdicts[f"{os.path.relpath(t.file, EXAMPLES)}:{t.name}"] = (errors, lost)
    assert set(truth) <= set(verdicts), sorted(set(truth) - set(verdicts))
    wrong = []
    for key, judged in sorted(truth.items()):
        errors, lost = verdicts[key]
        if judged["result"] != "ok" and not errors:
            wrong.append(f"{key}: plain export fails ({judged['result']}), ExportLens calls it clean")
        if judged["result"] == "ok" and errors:
            wrong.append(f"{key}: plain export passes, ExportLens reports {errors}")
        asked, dynamic = list(judged["requested"]), list(judged["dynamic"])  # type: ignore[call-overload]
        if judged["result"] == "ok" and lost != sorted(set(asked) - set(dynamic)):
            wrong.append(f"{key}: the program lost {sorted(set(asked) - set(dynamic))}, ExportLens says {lost}")
    assert wrong == []
    failing = sorted(k for k, v in truth.items() if v["result"] != "ok")
    assert len(failing) >= 15 and "dynamic_shapes/decode_step.py:export at decode_step.py:23" in failing  # the oracle can fail
