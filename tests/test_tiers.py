"""Every test file is in exactly one tier (`TIERS` in tests/conftest.py): `make check` selects the
quick one by its marker, so a file with no tier would silently drop out of it, and one with two
would run its torch tests in the quick tier."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import ROOT, TIERS, tier_problem

pytestmark = pytest.mark.quick


def module_tiers(path: Path) -> list[str]:
    """The tier markers (`pytest.mark.<tier>`) in the file's module-level `pytestmark`."""
    found: list[str] = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in targets) and node.value is not None:
                for sub in ast.walk(node.value):
                    if isinstance(sub, ast.Attribute) and sub.attr in TIERS and isinstance(sub.value, ast.Attribute) and sub.value.attr == "mark":
                        found.append(sub.attr)
    return found


def test_every_test_file_is_in_exactly_one_tier() -> None:
    files = sorted((ROOT / "tests").rglob("test_*.py"))
    assert len(files) > 50, files
    problems = [p for f in files if (p := tier_problem(f.relative_to(ROOT).as_posix(), module_tiers(f)))]
    assert problems == [], "\n".join(problems)


def test_the_check_names_the_file_and_says_how_to_add_a_tier(tmp_path: Path) -> None:
    bare = tmp_path / "test_new.py"
    bare.write_text("def test_x() -> None:\n    pass\n")
    two = tmp_path / "test_two.py"
    two.write_text("import pytest\n\npytestmark = [pytest.mark.quick, pytest.mark.torch]\n")
    listed = tmp_path / "test_listed.py"
    listed.write_text('import pytest\n\npytestmark = [pytest.mark.torch, pytest.mark.asyncio(loop_scope="module")]\n')
    assert module_tiers(bare) == [] and module_tiers(two) == ["quick", "torch"] and module_tiers(listed) == ["torch"]
    said = tier_problem("tests/test_new.py", [])
    assert said is not None and said.startswith("tests/test_new.py: in no tier. Add one line after its imports: `pytestmark = pytest.mark.quick`")
    assert "`pytestmark = pytest.mark.torch`" in said
    assert tier_problem("tests/test_two.py", ["quick", "torch"]) == "tests/test_two.py: in 2 tiers (quick, torch); keep exactly one in its `pytestmark`"
    assert tier_problem("tests/test_listed.py", ["torch"]) is None
