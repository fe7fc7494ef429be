"""The code table (`codes.py`) against the fixers and the data types: one record per code names them.

A fixer nobody names is dead code; a code whose fixer is missing offers nothing; a data type no
code uses (or a code whose data type is not a protocol TypedDict) means the contract and the
table disagree.
"""

from __future__ import annotations

import inspect
import sys
import types
import typing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "server") not in sys.path:
    sys.path.insert(0, str(ROOT / "server"))

from exportlens import protocol  # noqa: E402
from exportlens.codes import CODES  # noqa: E402
from exportlens.fixes import fixers  # noqa: E402
from exportlens.fixes.common import Offer  # noqa: E402


def _members(data: object) -> list[object]:
    """The TypedDicts a record's `data` names (one, or a union of them)."""
    return list(typing.get_args(data)) if isinstance(data, types.UnionType) else [data]


def test_every_code_names_protocol_typeddicts_as_its_data() -> None:
    for code, info in CODES.items():
        for t in _members(info.data):
            assert typing.is_typeddict(t) and getattr(protocol, getattr(t, "__name__", ""), None) is t, (code, t)


def test_every_data_type_of_the_protocol_is_some_codes() -> None:
    used = {t for info in CODES.values() for t in _members(info.data)}
    declared = {t for name, t in vars(protocol).items() if name.endswith("Data") and typing.is_typeddict(t)}
    assert declared - used == set()


def test_every_fixer_is_named_by_a_code_and_has_the_fixer_shape() -> None:
    named = {f for info in CODES.values() for f in info.fixers}
    defined = {f for name, f in vars(fixers).items() if inspect.isfunction(f) and not name.startswith("_") and f.__module__ == fixers.__name__}
    assert defined - named == set(), "a fixer no code names"
    for f in named:
        params = list(inspect.signature(f).parameters.values())
        assert [p.name for p in params] == ["d", "read", "offer"], f
        assert typing.get_type_hints(f)["offer"] is Offer, f


def test_problem_is_the_default_severity_read_once() -> None:
    assert {c for c, info in CODES.items() if not info.problem} == {"no-target", "draft-export-crashed", "deprecated-api", "unused-ignore"}
