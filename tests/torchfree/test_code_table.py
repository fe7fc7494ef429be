"""A code is wired in every place or in none: its record (`codes.py`) against the data types, the
fixers, the generators, the findings that make it, the torch-free cases and the README.

CONTRIBUTING's recipe ("Add a diagnostic code") names the files a new code touches; each test
here fails when one of them was forgotten: a record whose data type is not a protocol TypedDict
(or a data type no record uses), a fixer no record names (or a record naming something that is
not a fixer), a generator no fixer reaches, a code nothing makes (or made but not recorded), a
code with fixers whose recorded cases never show a fix, the README's table not regenerated. A
code no recorded case shows fails `test_replay.py::test_every_diagnostic_code_is_covered`.
"""

from __future__ import annotations

import ast
import inspect
import sys
import types
import typing
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "server") not in sys.path:
    sys.path.insert(0, str(ROOT / "server"))
if str(ROOT / "tools") not in sys.path:
    sys.path.insert(0, str(ROOT / "tools"))

import server_facts  # noqa: E402
from replay import CASES, load_expected  # noqa: E402

from exportlens import protocol  # noqa: E402
from exportlens.codes import CODES  # noqa: E402
from exportlens.fixes.common import Offer  # noqa: E402
from exportlens.model import HINT  # noqa: E402

PACKAGE = ROOT / "server" / "exportlens"
FIXES = PACKAGE / "fixes"

pytestmark = pytest.mark.quick


def _members(data: object) -> list[object]:
    """The TypedDicts a record's `data` names (one, or a union of them)."""
    return list(typing.get_args(data)) if isinstance(data, types.UnionType) else [data]


def _functions(path: Path) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in ast.parse(path.read_text(encoding="utf-8")).body if isinstance(n, ast.FunctionDef)}


def _is_fixer(fn: ast.FunctionDef) -> bool:
    return [a.arg for a in fn.args.args] == ["d", "read", "offer"]


def _named(node: ast.AST) -> set[str]:
    """Every name `node` refers to (a bare name or an attribute)."""
    return {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node) if isinstance(n, (ast.Name, ast.Attribute))}


def test_every_code_names_protocol_typeddicts_as_its_data() -> None:
    for code, info in CODES.items():
        for t in _members(info.data):
            assert typing.is_typeddict(t) and getattr(protocol, getattr(t, "__name__", ""), None) is t, (code, t)


def test_every_data_type_of_the_protocol_is_some_codes() -> None:
    used = {t for info in CODES.values() for t in _members(info.data)}
    declared = {t for name, t in vars(protocol).items() if name.endswith("Data") and typing.is_typeddict(t)}
    assert declared - used == set()


def test_every_fixer_is_named_by_its_codes_record_and_has_the_fixer_shape() -> None:
    """A fixer lives beside the generators it calls, under fixes/; a fixer no record names is dead."""
    defined = {(path.stem, name) for path in sorted(FIXES.glob("*.py")) for name, fn in _functions(path).items() if _is_fixer(fn) and not name.startswith("_")}
    named = {(f.__module__.rpartition(".")[2], f.__name__) for info in CODES.values() for f in info.fixers}
    assert defined - named == set(), "a fixer no code's record names"
    for info in CODES.values():
        for f in info.fixers:
            assert f.__module__.startswith("exportlens.fixes."), f
            params = list(inspect.signature(f).parameters.values())
            assert [p.name for p in params] == ["d", "read", "offer"], f
            assert typing.get_type_hints(f)["offer"] is Offer, f


def test_every_generator_is_reached_from_a_fixer_or_used_outside_fixes() -> None:
    """A public function under fixes/ that no named fixer reaches (through the functions it calls)
    and no other room uses is a generator nothing offers."""
    functions = {name: fn for path in sorted(FIXES.glob("*.py")) for name, fn in _functions(path).items()}
    outside = set().union(*(_named(ast.parse(p.read_text(encoding="utf-8"))) for p in PACKAGE.rglob("*.py") if FIXES not in p.parents))
    reached: set[str] = set()
    todo = [f.__name__ for info in CODES.values() for f in info.fixers] + [n for n in functions if n in outside]
    while todo:
        name = todo.pop()
        if name in reached or name not in functions:
            continue
        reached.add(name)
        todo.extend(_named(functions[name]))
    unreached = sorted(n for n in functions if not n.startswith("_") and n not in reached)
    assert unreached == []


def _strings(node: ast.AST) -> set[str]:
    """The string a code argument spells: a literal, or either literal of `"a" if … else "b"`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.IfExp):
        return _strings(node.body) | _strings(node.orelse)
    return set()


def test_every_code_is_made_somewhere_and_every_code_made_is_recorded() -> None:
    """Each record's code is spelled by the room that makes it (a finding builder, the engine, a
    static check); every code handed to `codes.new` or `new_diagnostic` has a record, spelled there
    or in a name the module binds to it (`code = "worker-timeout"`, `CODE = "deprecated-api"`)."""
    spelled: set[str] = set()
    made: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        if path.name in ("codes.py", "protocol.py") or "worker" in path.relative_to(PACKAGE).parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        spelled |= {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        bound: dict[str, set[str]] = {}
        for node in (n for n in ast.walk(tree) if isinstance(n, ast.Assign)):
            for target in (t for t in node.targets if isinstance(t, ast.Name)):
                bound.setdefault(target.id, set()).update(_strings(node.value))
        for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
            name = call.func.attr if isinstance(call.func, ast.Attribute) else call.func.id if isinstance(call.func, ast.Name) else ""
            where = {"new": 0, "new_diagnostic": 3}.get(name)
            if where is not None and len(call.args) > where:
                arg = call.args[where]
                made |= _strings(arg) or (bound.get(arg.id, set()) if isinstance(arg, ast.Name) else set())
    assert sorted(set(CODES) - spelled) == [], "a recorded code nothing makes"
    assert "worker-timeout" in made and "deprecated-api" in made  # codes held in a name are seen too
    assert sorted(made - set(CODES)) == [], "a code made without a record"


def test_every_code_with_fixers_shows_a_fix_in_a_recorded_case() -> None:
    fixed = {d["code"] for c in CASES for d in load_expected(c)["diagnostics"] if d.get("fixes")}
    assert sorted(c for c, info in CODES.items() if info.fixers and c not in fixed) == []


def test_every_record_says_what_it_means_and_what_its_fixers_offer() -> None:
    for code, info in CODES.items():
        assert info.shows, code
        assert (info.offers != "—") == bool(info.fixers), f"{code}: `offers` says what its fixers do, and '—' when it has none"


def test_the_readme_table_of_codes_is_the_records() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert server_facts.readme_codes(readme) == readme, "README.md's table of codes is stale: run tools/server_facts.py"
    assert all(f"| `{code}` |" in readme for code in CODES)


# The codes shipped so far, each with whether it is a problem (its default severity: errors and
# warnings are): that never changes silently. A new code's record alone says it, so this list is
# not one of the files a new code touches; a shipped code is never renamed or dropped.
SHIPPED_PROBLEM = {
    "data-dependent-guard": True, "missing-fake-kernel": True, "mismatched-fake-kernel": True, "guard-added": True,
    "export-error": True, "graph-break": True, "recompile": True, "tracer-warning": True, "trace-check-failed": True,
    "syntax-error": True, "worker-crashed": True, "worker-timeout": True, "target-error": True, "no-target": False,
    "draft-export-crashed": False, "config-error": True, "deprecated-api": False, "unused-ignore": False, "dim-specialized": True,
}  # fmt: skip


def test_the_shipped_codes_keep_whether_they_are_problems() -> None:
    assert {c: CODES[c].problem for c in SHIPPED_PROBLEM if c in CODES} == SHIPPED_PROBLEM


def test_could_be_dynamic_is_a_hint_whose_fix_is_verified() -> None:
    """The hint never fails a check ("0 problems" and CI unaffected), yet its fix is verified by plain
    export like a problem's; it is the only code whose fix claims dimensions dynamic."""
    info = CODES["could-be-dynamic"]
    assert (info.severity, info.problem, info.breaks_target, info.compile_finding) == (HINT, False, False, False)
    assert [c for c, i in CODES.items() if i.makes_dynamic] == ["could-be-dynamic"]
