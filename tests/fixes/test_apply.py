"""apply_edits / unified_diff / the text helpers: UTF-16 columns, CRLF, overlaps, validation."""

from __future__ import annotations

import pytest

from exportlens.fixes import EditError, Refusal, apply_edits, apply_fix, insert_check, negate, unified_diff
from exportlens.fixes.common import line_edits, make_fix
from exportlens.fixes.text import end_position, split_lines, utf16_to_index
from exportlens.model import Fix, Position, Range, TextEdit
from exportlens.source import utf16_len

pytestmark = pytest.mark.quick


def edit(l1: int, c1: int, l2: int, c2: int, new: str, file: str = "f.py") -> TextEdit:
    return TextEdit(file, Range.of(l1, c1, l2, c2), new)


def test_utf16_columns_after_astral_characters() -> None:
    text = 's = "😀é"; t = 1\n'
    # "😀" is 2 UTF-16 units: `t` starts at column 11 in UTF-16, index 10 in code points.
    assert utf16_len('s = "😀é"; ') == 11
    assert utf16_to_index('s = "😀é"; t = 1', 11) == 10
    assert apply_edits(text, [edit(0, 11, 0, 12, "u")]) == 's = "😀é"; u = 1\n'


def test_lsp_lines_split_only_on_crlf_cr_lf() -> None:
    text = "a = 1\r\nb = '\x0c\u2028'\rc = 3\nd"
    assert split_lines(text) == ["a = 1\r\n", "b = '\x0c\u2028'\r", "c = 3\n", "d"]
    assert end_position(text) == Position(3, 1)
    assert end_position("a\n") == Position(1, 0)


def test_edits_sorted_and_same_point_inserts_keep_order() -> None:
    text = "a\nb\n"
    out = apply_edits(text, [edit(1, 0, 1, 0, "y\n"), edit(0, 0, 0, 0, "x1\n"), edit(0, 0, 0, 0, "x2\n")])
    assert out == "x1\nx2\na\ny\nb\n"


def test_overlapping_edits_refused() -> None:
    with pytest.raises(EditError, match="overlapping"):
        apply_edits("abcdef\n", [edit(0, 0, 0, 3, "x"), edit(0, 2, 0, 4, "y")])


def test_validate_refuses_unparsable_result() -> None:
    with pytest.raises(EditError, match="does not parse"):
        apply_edits("x = 1\n", [edit(0, 4, 0, 5, "(")], validate=True)


def test_positions_past_the_end_clamp() -> None:
    assert apply_edits("ab", [edit(0, 99, 5, 0, "c")]) == "abc"


def test_make_fix_never_returns_unparsable_code() -> None:
    res = make_fix("f.py", "x = 1\n", "x = (\n", "t", True)
    assert isinstance(res, Refusal) and "would not parse" in res.reason


def test_line_edits_are_minimal_whole_lines() -> None:
    old = "a\r\nb\r\nc\r\n"
    new = "a\r\nB\r\nc\r\nd\r\n"
    assert line_edits("f.py", old, new) == (
        edit(1, 0, 2, 0, "B\r\n"),
        edit(3, 0, 3, 0, "d\r\n"),
    )


def test_apply_fix_across_files_and_unified_diff() -> None:
    fix = Fix("t", (edit(0, 0, 0, 0, "import torch\n", "a.py"), edit(0, 0, 0, 1, "z", "b.py")))
    out = apply_fix({"a.py": "x = 1\n", "b.py": "y = 2"}, fix)
    assert out == {"a.py": "import torch\nx = 1\n", "b.py": "z = 2"}
    diff = unified_diff("y = 2", out["b.py"], "b.py")
    assert diff == ("--- a/b.py\n+++ b/b.py\n@@ -1 +1 @@\n-y = 2\n\\ No newline at end of file\n+z = 2\n\\ No newline at end of file\n")
    assert unified_diff("same\n", "same\n", "c.py") == ""


def test_insert_check_edit_ranges_in_utf16() -> None:
    text = "import torch\ndef f(x):\n    ä = '😀'; a = x.item()\n    return x[:a]\n"
    fix = insert_check(text, "f.py", 4, "a >= 0")
    assert isinstance(fix, Fix)
    assert fix.edits == (edit(3, 0, 3, 0, "    torch._check(a >= 0)\n"),)
    assert fix.to_json()["edits"][0]["range"] == {"start": {"line": 3, "character": 0}, "end": {"line": 3, "character": 0}}


def test_unparsable_document_refused() -> None:
    res = insert_check("def f(:\n", "f.py", 1, "a > 0")
    assert isinstance(res, Refusal) and "does not parse" in res.reason


@pytest.mark.parametrize(
    ("cond", "expected"),
    [
        ("a > 2", "a <= 2"),
        ("n == 0", "n != 0"),
        ("x.item() < y", "x.item() >= y"),
        ("not ok", "ok"),
        ("a < b < c", "not (a < b < c)"),
    ],
)
def test_negate(cond: str, expected: str) -> None:
    assert negate(cond) == expected
