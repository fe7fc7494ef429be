"""The torch-free tier: recorded worker events through the real engine, findings, placement and fixes.

Milliseconds per case, no torch (a subprocess proves it). The real-torch tests are the second
tier; `tools/record_events.py` turns real runs into these fixtures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from protocol_check import shape_errors
from replay import CASES, CASES_BY_NAME, EVENTS, EXAMPLES, ROOT, Case, load_expected, load_recording, replay_sync, result_json

from exportlens.codes import CODES
from exportlens.fixes.apply import apply_edits
from exportlens.model import TextEdit
from exportlens.protocol import JobEvent, JobSpec
from exportlens.source import read_source

pytestmark = pytest.mark.quick

SEVERITY_NAMES = {1: "error", 2: "warning", 3: "information", 4: "hint"}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_replay_gives_the_expected_diagnostics_and_fixes(case: Case) -> None:
    result, worker = replay_sync(case)
    assert result_json(result) == load_expected(case)
    assert len(worker.jobs) == (0 if load_recording(case)["job"] is None else 1)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_recorded_wire_matches_the_protocol(case: Case) -> None:
    """The recorded job and events are exactly what exportlens.protocol documents."""
    recording = load_recording(case)
    if recording["job"] is not None:
        assert shape_errors(recording["job"], JobSpec) == []
    for i, event in enumerate(recording["events"]):
        assert shape_errors(event, JobEvent, f"events[{i}]") == []


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_diagnostic_data_matches_its_codes_type(case: Case) -> None:
    for d in load_expected(case)["diagnostics"]:
        assert shape_errors(d["data"], CODES[d["code"]].data, f"{d['code']}.data") == []


def test_every_code_has_a_data_type() -> None:
    assert all(info.data is not None for info in CODES.values())


def test_every_diagnostic_code_is_covered() -> None:
    codes = {d["code"] for c in CASES for d in load_expected(c)["diagnostics"]}
    assert codes == set(CODES), f"no recorded case shows {sorted(set(CODES) - codes)}"


def test_example_cases_agree_with_examples_expected_json() -> None:
    """The recorded examples show what examples/EXPECTED.json says (so the fixtures are not stale)."""
    expected = json.loads((EXAMPLES / "EXPECTED.json").read_text(encoding="utf-8"))["examples"]
    for name, diags in expected.items():
        case = CASES_BY_NAME[name.removesuffix(".py").replace("/", "__")]
        got = [
            (
                os.path.relpath(d["file"], EXAMPLES),
                d["code"],
                SEVERITY_NAMES[d["severity"]],
                [d["range"]["start"]["line"], d["range"]["start"]["character"], d["range"]["end"]["line"], d["range"]["end"]["character"]],
            )
            for d in load_expected(case)["diagnostics"]
        ]
        assert got == [(d["file"], d["code"], d["severity"], d["range"]) for d in diags], name


def test_each_quick_fix_edits_only_a_file_of_the_case() -> None:
    for case in CASES:
        for d in load_expected(case)["diagnostics"]:
            for fix in d["fixes"]:
                assert fix["edits"], (case.name, fix["title"])
                assert all(os.path.isfile(e["file"]) for e in fix["edits"]), (case.name, fix["title"])


def test_the_tier_never_imports_torch() -> None:
    """Replay every case in a fresh interpreter and check torch was never imported."""
    code = (
        "import sys\n"
        f"sys.path[:0] = [{str(ROOT / 'tests' / 'torchfree')!r}, {str(ROOT / 'server')!r}]\n"
        "import replay\n"
        "for case in replay.CASES:\n"
        "    replay.result_json(replay.replay_sync(case)[0])\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "print('ok', len(replay.CASES))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == f"ok {len(CASES)}"


def test_fixtures_hold_no_machine_paths() -> None:
    for path in EVENTS.glob("*.json"):
        text = path.read_text(encoding="utf-8")
        assert str(ROOT) not in text, path.name


def test_every_recorded_fix_applies_and_parses() -> None:
    """Fixes are pure functions of the current text, and a fix whose result does not parse is never offered."""
    count = 0
    for case in CASES:
        for d in load_expected(case)["diagnostics"]:
            for fix in d["fixes"]:
                by_file: dict[str, list[TextEdit]] = {}
                for e in fix["edits"]:
                    by_file.setdefault(e["file"], []).append(TextEdit.from_json(e))
                for file, edits in by_file.items():
                    new = apply_edits(read_source(file).text, edits, validate=True)
                    compile(new, file, "exec", dont_inherit=True)
                    count += 1
    assert count >= 10
