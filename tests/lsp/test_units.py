"""The server's pure parts: carrying ranges across edits, and reading settings."""

from __future__ import annotations

from exportlens.lsp.settings import Settings
from exportlens.lsp.textmap import line_map
from exportlens.model import Range

TEXT = "import torch\n\nclass M:\n    def f(self, x):\n        n = x.item()\n        if n > 2:\n            return 1\n"


def test_identical_text_keeps_ranges() -> None:
    assert line_map(TEXT, TEXT).range(Range.of(5, 11, 5, 16)) == Range.of(5, 11, 5, 16)


def test_lines_inserted_above_shift_the_range() -> None:
    new = "# a\n# b\n" + TEXT
    assert line_map(TEXT, new).range(Range.of(5, 11, 5, 16)) == Range.of(7, 11, 7, 16)


def test_lines_deleted_above_shift_the_range_up() -> None:
    new = TEXT.replace("import torch\n\n", "")
    assert line_map(TEXT, new).range(Range.of(5, 11, 5, 16)) == Range.of(3, 11, 3, 16)


def test_an_edited_line_drops_the_range() -> None:
    new = TEXT.replace("if n > 2:", "if n > 3:")
    lm = line_map(TEXT, new)
    assert lm.range(Range.of(5, 11, 5, 16)) is None
    assert lm.range(Range.of(4, 8, 4, 20)) == Range.of(4, 8, 4, 20)  # the line above is untouched


def test_a_multi_line_range_split_by_an_insertion_is_dropped() -> None:
    new = TEXT.replace("        if n > 2:\n", "        # note\n        if n > 2:\n")
    assert line_map(TEXT, new).range(Range.of(4, 8, 5, 16)) is None


def test_settings_parse_and_fall_back() -> None:
    s = Settings.parse({"exportlens": {"interpreter": ["/opt/py/bin/python", "-X"], "timeoutSeconds": 30,
                                       "run": "manual", "targets": ["m.py:make", 3]}})
    assert (s.interpreter, s.timeout_seconds, s.run, s.targets) == ("/opt/py/bin/python", 30.0, "manual", ["m.py:make"])
    bad = Settings.parse({"interpreter": 5, "timeoutSeconds": -1, "run": "always", "targets": "x"}, s)
    assert (bad.interpreter, bad.timeout_seconds, bad.run, bad.targets) == (None, 30.0, "manual", ["m.py:make"])
    assert Settings.parse(None) == Settings()
    assert Settings.parse({"compileBackend": "inductor"}).compile_backend == "inductor"
    assert Settings.parse({"compileBackend": "tensorrt"}, s).compile_backend == "eager"
    assert Settings.parse({"interpreter": "  "}).interpreter is None
