"""Over examples/: ExportLens finds, per export target, as many problems as torch's own report.

The oracle is torch itself: `tests/draft_report.py` runs `torch.export.draft_export` directly on
each export target (in a subprocess, no ExportLens code in the loop) and deduplicates its report
by (failure type, innermost user frame, or the op for kernel failures).

ExportLens may show one problem as several diagnostics: a fake-kernel problem goes on the call
site and on the op's definition (the fix goes there), a mismatched fake kernel once per mismatch
it names. So diagnostics are grouped by what identifies the problem (the code, and the op, or
the library line, or the user line) before counting; two guards in two library lines stay two.

When draft export itself raises, torch's report is empty: the problem count is then 1 if plain
`torch.export.export` fails too (ExportLens reports that failure) and 0 if it passes (ExportLens
gives an information-level `draft-export-crashed`, not a problem).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from typing import Any

from conftest import EXAMPLES, ROOT, SyncEngine

from exportlens.model import ERROR, WARNING, Diagnostic

TORCH_CODE = {
    "DATA_DEPENDENT_ERROR": "data-dependent-guard",
    "GUARD_ADDED": "guard-added",
    "MISSING_FAKE_KERNEL": "missing-fake-kernel",
    "MISMATCHED_FAKE_KERNEL": "mismatched-fake-kernel",
}


def torch_report() -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "server")}
    out = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "draft_report.py"), str(EXAMPLES)], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return dict(json.loads(out.stdout))


def torch_problems(entry: dict[str, Any]) -> list[str]:
    if entry["raised"] is not None:
        return [] if entry["plain"] == "ok" else ["export-error"]
    return [TORCH_CODE[kind] for kind, _where in entry["problems"]]


def problem_key(d: Diagnostic) -> tuple[str, str]:
    """What identifies the problem behind a diagnostic, whichever line it is shown on."""
    data = d.data or {}
    op = data.get("qualname") or data.get("op")
    if op:
        return d.code, str(op).replace("::", ".").removesuffix(".default")
    lib = data.get("library_frame") or {}
    if lib:
        return d.code, f"{lib.get('file')}:{lib.get('line')}"
    return d.code, f"{d.file}:{d.range.start.line}"


def test_one_problem_per_distinct_failure_in_torchs_report(engine: SyncEngine) -> None:
    report = torch_report()
    assert len(report) >= 12  # every export example took part
    mine: dict[str, list[str]] = {}
    for file in sorted({key.split(":", 1)[0] for key in report}):
        result = engine.check(EXAMPLES / file)
        for t in result.targets:
            if t.kind != "export":
                continue
            found = {problem_key(d) for d in result.diagnostics if d.severity in (ERROR, WARNING) and t.name in d.target.split(", ")}
            mine[f"{file}:{t.name}"] = [code for code, _ in found]
    assert sorted(mine) == sorted(report)
    differ = {
        key: (Counter(mine[key]), Counter(torch_problems(entry))) for key, entry in report.items() if Counter(mine[key]) != Counter(torch_problems(entry))
    }
    assert differ == {}
