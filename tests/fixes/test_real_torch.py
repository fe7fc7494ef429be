"""The key golden outputs really make torch 2.13 succeed, and their inputs really fail.

Fixture sidecars with a ``"torch"`` expression are checked in two subprocesses (all inputs in
one, all outputs in the other, to pay the torch import once each): the expression is evaluated
in the module's namespace after ``runpy.run_path``; an ExportedProgram from draft_export counts
as success only when its report is clean. Inputs must fail, outputs must succeed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.torch

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "fixes"
ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv" / "bin" / "python"

RUNNER = r"""
import json, runpy, sys, warnings
warnings.filterwarnings("ignore")
import torch
torch.set_num_threads(1)
results = {}
for name, path, expr in json.loads(sys.argv[1]):
    try:
        ns = runpy.run_path(path, run_name="fixture_" + name.replace("/", "_"))
        value = eval(expr, ns)
        report = getattr(value, "_report", None)
        results[name] = "ok" if report is None or report.successful() else "report: " + repr(report)
    except Exception as exc:  # noqa: BLE001 - the failure text is the result
        results[name] = type(exc).__name__ + ": " + str(exc).splitlines()[0][:200]
print("RESULTS " + json.dumps(results))
"""


def _cases() -> list[tuple[str, Path, str]]:
    out = []
    for spec_path in sorted(FIXTURES.glob("*/*.json")):
        spec = json.loads(spec_path.read_text("utf-8"))
        if "torch" in spec:
            name = f"{spec_path.parent.name}/{spec_path.name[:-5]}"
            out.append((name, spec_path, spec["torch"]))
    return out


CASES = _cases()


def _run(suffix: str) -> dict[str, str]:
    if not PYTHON.exists():
        pytest.skip("no .venv with torch")
    jobs = [(n, str(p.with_name(p.name[:-5] + suffix)), e) for n, p, e in CASES]
    proc = subprocess.run([str(PYTHON), "-c", RUNNER, json.dumps(jobs)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULTS ")), None)
    assert line is not None, proc.stderr[-2000:]
    return dict(json.loads(line[len("RESULTS ") :]))


@pytest.fixture(scope="module")
def inputs_results() -> dict[str, str]:
    return _run(".in.py")


@pytest.fixture(scope="module")
def outputs_results() -> dict[str, str]:
    return _run(".out.py")


def test_enough_real_cases() -> None:
    kinds = {n.split("/")[0] for n, _, _ in CASES}
    assert kinds == {"check", "cond", "fake", "mismatch", "dynamic_shapes"}


@pytest.mark.parametrize("name", [n for n, _, _ in CASES])
def test_input_fails_output_passes(name: str, inputs_results: dict[str, str], outputs_results: dict[str, str]) -> None:
    assert inputs_results[name] != "ok", f"{name}: the unfixed input already exports"
    assert outputs_results[name] == "ok", f"{name}: {outputs_results[name]}"


if __name__ == "__main__":  # pragma: no cover - manual look at the raw results
    print(_run(sys.argv[1] if len(sys.argv) > 1 else ".out.py"))
