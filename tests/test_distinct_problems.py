"""Over examples/: ExportLens finds, per target, as many problems as torch itself reports.

The oracles are torch itself, each in a subprocess with no ExportLens code running torch:
`tests/draft_report.py` runs `torch.export.draft_export` directly on each export target and keeps
its report's failures as torch deduplicates them (failure type, and the user stack torch kept or the
op for kernel failures); `tests/torch_logs_report.py` runs each compile and trace example under
`TORCH_LOGS=graph_breaks,recompiles` and collects, per `torch.compile` / `torch.jit.trace` call
site, the distinct graph breaks and recompiled functions in those records and the distinct
TracerWarnings raised during the trace.

ExportLens may show one problem as several diagnostics: a fake-kernel problem goes on the call
site and on the op's definition (the fix goes there), a mismatched fake kernel once per mismatch
it names. So diagnostics are grouped by what identifies the problem (the code, and the op, or
the library path to the library line, or the user line) before counting; two guards at one library
line reached two ways stay two, as in torch's report.

Plain `torch.export.export` decides first, as ExportLens runs it: a program that exports has one
problem per requested dimension it lost (`dim-specialized`) and draft export's mismatched fake
kernels, nothing else of draft export's report; a constraint violation is one problem per Dim it
names, plus what draft export (run with torch's suggested spec) finds beyond the Dims; any other
failure is draft export's problems, or that one failure when draft export finds none.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from typing import Any

import pytest
from conftest import EXAMPLES, EXPECTED_EXAMPLES, ROOT, ExampleRuns

from exportlens.model import ERROR, WARNING, Diagnostic

pytestmark = pytest.mark.torch

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


PLAIN_CODE = {"data-dependent": "data-dependent-guard", "missing-fake-kernel": "missing-fake-kernel", "error": "export-error"}


def torch_problems(entry: dict[str, Any]) -> list[str]:
    drafts = [TORCH_CODE[kind] for kind, _where in entry["problems"] if kind != "GUARD_ADDED"]  # its Dim.AUTO retry's guards
    if entry["plain"] == "ok":
        return ["dim-specialized"] * len(entry["lost"]) + [c for c in drafts if c == "mismatched-fake-kernel"]
    if entry["plain_kind"] == "constraint":
        return ["guard-added"] * len(entry["violated"]) + drafts
    return drafts or [PLAIN_CODE[entry["plain_kind"]]]


def problem_key(d: Diagnostic) -> tuple[str, str]:
    """What identifies the problem behind a diagnostic, whichever line it is shown on."""
    data = d.data or {}
    op = data.get("qualname") or data.get("op")
    if op:
        return d.code, str(op).replace("::", ".").removesuffix(".default")
    if d.code in ("guard-added", "dim-specialized"):
        return d.code, str(data.get("site"))  # one per dimension (a Dim, or an input's dimension)
    chain = [f"{f.get('file')}:{f.get('line')}" for f in data.get("library_chain") or [] if not f.get("project")]
    if chain:
        return d.code, " > ".join(chain)
    return d.code, f"{d.file}:{d.range.start.line}"


def test_one_problem_per_distinct_failure_in_torchs_report(example_runs: ExampleRuns) -> None:
    report = torch_report()
    assert len(report) >= 12  # every export example took part
    mine: dict[str, list[str]] = {}
    for file in sorted({key.split(":", 1)[0] for key in report}):
        result = example_runs.result(file)
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


COMPILE_CODES = ("graph-break", "recompile")
TRACE_CODES = ("tracer-warning", "trace-check-failed")


def torch_log_sites(files: list[str]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "server")}
    out = subprocess.run([sys.executable, str(ROOT / "tests" / "torch_logs_report.py"), *files], capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return dict(json.loads(out.stdout))


def test_one_finding_per_distinct_site_in_torchs_logs(example_runs: ExampleRuns) -> None:
    """Graph breaks, recompiled functions (a resume function is its own) and tracer warnings: as many
    findings per compile or trace target as distinct sites in torch's own logs and warnings."""
    files = sorted(str(EXAMPLES / name) for name in EXPECTED_EXAMPLES if any(d["code"] in COMPILE_CODES + TRACE_CODES for d in EXPECTED_EXAMPLES[name]))
    assert len(files) >= 12  # compile/, trace/ and the library project's compiled, recompiled and traced entries
    sites = torch_log_sites(files)
    theirs = {
        key: len(entry["graph_breaks"]) + len(entry["recompiles"]) + len(entry["tracer_warnings"]) + int(entry["check_failed"]) for key, entry in sites.items()
    }
    mine: dict[str, int] = {}
    for file in files:
        result = example_runs.result(file)
        for t in result.targets:
            if t.kind in ("compile", "trace"):
                wanted = COMPILE_CODES if t.kind == "compile" else TRACE_CODES
                mine[f"{file}:{t.name}"] = sum(1 for d in result.diagnostics if d.code in wanted and t.name in d.target.split(", "))
    assert {k: v for k, v in mine.items() if v} == {k: v for k, v in theirs.items() if v}
    library = {k: v for k, v in theirs.items() if "library_project" in k}
    assert library == {
        f"{EXAMPLES}/library_project/compiled.py:compile at compiled.py:11": 1,
        f"{EXAMPLES}/library_project/recompiled.py:compile at recompiled.py:13": 7,  # 2 breaks, 5 recompiled functions
        f"{EXAMPLES}/library_project/layerdrop.py:compile at layerdrop.py:16": 1,  # a break and dynamo's fall-back for it
        f"{EXAMPLES}/library_project/traced.py:trace at traced.py:18": 4,
    }
