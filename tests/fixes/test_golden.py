"""Golden tests for the quick-fix generators, in the style of TorchFix.

Each ``tests/fixtures/fixes/<kind>/<case>.in.py`` is fixed with the parameters in
``<case>.json`` (``fn``: which generator, ``args``, optional ``pick`` for generators returning a
list, ``preferred``, ``title`` substring, ``refusal`` substring); the result must equal
``<case>.out.py`` byte for byte (CRLF, tabs and non-ASCII included). A refusal case has no
``.out.py``. Set EXPORTLENS_REGEN_GOLDEN=1 to (re)write the outputs, then review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from exportlens import fixes
from exportlens.fixes import Refusal, apply_edits
from exportlens.fixes.text import end_position
from exportlens.model import Fix

pytestmark = pytest.mark.quick

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "fixes"
CASES = sorted(FIXTURES.glob("*/*.in.py"))


def read(path: Path) -> str:
    """The text exactly as an editor holds it (no newline translation)."""
    return path.read_bytes().decode("utf-8")


def run_case(case: Path) -> tuple[dict[str, Any], str, Fix | Refusal]:
    spec = json.loads(case.with_name(case.name.replace(".in.py", ".json")).read_text("utf-8"))
    text = read(case)
    file = case.name.replace(".in.py", ".py")
    result = getattr(fixes, spec["fn"])(text, file, **spec["args"])
    if isinstance(result, list):
        result = result[spec.get("pick", 0)]
    return spec, text, result


@pytest.mark.parametrize("case", CASES, ids=[f"{c.parent.name}/{c.name[:-6]}" for c in CASES])
def test_golden(case: Path) -> None:
    spec, text, result = run_case(case)
    out = case.with_name(case.name.replace(".in.py", ".out.py"))
    if "refusal" in spec:
        assert isinstance(result, Refusal), f"expected a refusal, got {result}"
        assert spec["refusal"] in result.reason
        assert not out.exists()
        return
    assert isinstance(result, Fix), f"refused: {getattr(result, 'reason', result)}"
    assert result.is_preferred is spec.get("preferred", True)
    assert spec.get("title", "") in result.title
    file = case.name.replace(".in.py", ".py")
    assert all(e.file == file for e in result.edits)
    new = apply_edits(text, result.edits, validate=True)
    if os.environ.get("EXPORTLENS_REGEN_GOLDEN"):
        out.write_bytes(new.encode("utf-8"))
    assert new == read(out)
    # Edits replace whole lines only (so untouched lines stay byte-identical).
    end = end_position(text)
    for e in result.edits:
        assert e.range.start.character == 0
        assert e.range.end.character == 0 or e.range.end == end


def test_every_kind_has_cases() -> None:
    kinds = {c.parent.name for c in CASES}
    assert kinds == {"check", "cond", "fake", "mismatch", "dynamic_shapes", "compile"}
    assert len(CASES) >= 40


def test_crlf_fixtures_kept_crlf() -> None:
    """Git must not normalise the CRLF fixtures (tests/fixtures/fixes/.gitattributes: -text)."""
    crlf = [c for c in CASES if b"\r\n" in c.read_bytes()]
    assert len(crlf) >= 4
    for c in crlf:
        out = c.with_name(c.name.replace(".in.py", ".out.py"))
        if out.exists():
            data = out.read_bytes()
            assert b"\n" not in data.replace(b"\r\n", b""), f"{out.name} mixes newline styles"


SIZE_OUT = {"rank": 1, "dtype": "torch.float32"}


@pytest.mark.parametrize("case", CASES, ids=[f"{c.parent.name}/{c.name[:-6]}" for c in CASES])
def test_no_exception_on_any_line(case: Path) -> None:
    """Every line of every fixture gives a parsing Fix or a Refusal, never an exception."""
    text = read(case)
    for line in range(1, len(text.splitlines()) + 2):
        for result in (
            fixes.insert_check(text, "f.py", line, "a > 0"),
            fixes.rewrite_if_as_cond(text, "f.py", line),
            fixes.insert_item_check(text, "f.py", line, "x.sum()"),
            fixes.static_dims(text, "f.py", line, "batch", [{"input": "x", "index": 0, "dim": 0, "spelled": "x.shape[0]"}], 4),
            fixes.example_size_fix(text, "f.py", line, {"input": "x", "index": 0, "dim": 1, "spelled": "x.shape[1]"}, "seq"),
            fixes.mismatch_fix(text, "f.py", line, "mismatch between fake value 3 and real value 6 ", SIZE_OUT),
        ):
            for fix in result if isinstance(result, list) else [result]:
                assert isinstance(fix, (Fix, Refusal))
                if isinstance(fix, Fix):
                    apply_edits(text, fix.edits, validate=True)
                else:
                    assert fix.reason
