"""The invariants ARCHITECTURE.md states about the package's rooms, checked on the source."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

pytestmark = pytest.mark.quick

PACKAGE = ROOT / "server" / "exportlens"


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Every exportlens module `path` imports, at any level (lazy and TYPE_CHECKING imports too)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "exportlens")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            if base.split(".")[0] != "exportlens":
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.add(
                    sub
                    if (PACKAGE.parent / sub.replace(".", "/")).with_suffix(".py").exists() or (PACKAGE.parent / sub.replace(".", "/") / "__init__.py").exists()
                    else base
                )
    out.discard(name)
    return out


def _graph() -> dict[str, set[str]]:
    return {_module_name(p): _imports(p) for p in PACKAGE.rglob("*.py")}


def test_no_import_circle_inside_the_package() -> None:
    graph = _graph()
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(trail[trail.index(nxt) :] + [nxt] if nxt in trail else [node, nxt])
            elif nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    assert cycles == []


def test_no_lsp_module_at_the_top_level() -> None:
    assert sorted(p.name for p in PACKAGE.glob("lsp_*.py")) == []


def test_only_the_worker_imports_torch() -> None:
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if "worker" in path.relative_to(PACKAGE).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            offenders += [f"{path.relative_to(PACKAGE)}: {n}" for n in names if n.split(".")[0] == "torch"]
    assert offenders == []


def test_the_worker_imports_only_itself_and_the_wire_protocol() -> None:
    allowed = ("exportlens.worker", "exportlens.protocol")
    bad = {
        mod: sorted(i for i in deps if not i.startswith(allowed))
        for mod, deps in _graph().items()
        if mod == "exportlens.worker" or mod.startswith("exportlens.worker.")
    }
    assert {m: d for m, d in bad.items() if d} == {}


def test_fixes_are_one_layer_of_pure_text_functions() -> None:
    """Nothing under fixes/ looks codes up, reads documents or projects, runs the engine or knows LSP:
    the registry that does (`fix_registry.py`) sits above `codes.py`, which names the fixers."""
    above = ("exportlens.codes", "exportlens.document", "exportlens.project", "exportlens.engine", "exportlens.lsp")
    graph = _graph()

    def reached(mod: str) -> set[str]:  # what importing `mod` imports, at any depth
        seen: set[str] = set()
        todo = [mod]
        while todo:
            for nxt in graph.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    fixes = [mod for mod in graph if mod == "exportlens.fixes" or mod.startswith("exportlens.fixes.")]
    assert "exportlens.fixes.data_dependent_fix" in fixes
    bad = {mod: sorted(i for i in reached(mod) if i.startswith(above)) for mod in fixes}
    assert {m: d for m, d in bad.items() if d} == {}
    writes = [s for s in _source_lines(r"\bwrite_source\b|\.write_text\(|\bopen\(") if s.startswith("fixes/")]
    assert writes == []


def test_only_lsp_knows_lsp() -> None:
    """lsprotocol and pygls are imported only under lsp/ (the CLI reaches the server through lsp.server)."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if "lsp" in path.relative_to(PACKAGE).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            offenders += [f"{path.relative_to(PACKAGE)}: {n}" for n in names if n.split(".")[0] in ("lsprotocol", "pygls")]
    assert offenders == []


def test_server_cli_findings_and_fixes_run_without_torch() -> None:
    """Importing every room but the worker leaves torch unloaded (the server must start without it)."""
    code = (
        "import sys\n"
        "import exportlens.cli, exportlens.engine, exportlens.findings, exportlens.fix_registry, exportlens.sarif\n"
        "import exportlens.report.page, exportlens.report.pytest_html\n"
        "import exportlens.lsp.server\n"
        "exportlens.lsp.server.create_server()\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False"


def test_torch_facts_citations_point_into_the_repository() -> None:
    """Comments cite how torch behaves as "docs/torch-facts.md §N", and §N is a section of that file."""
    facts = ROOT / "docs" / "torch-facts.md"
    sections = set(re.findall(r"^#+ (\d+(?:\.\d+)*)\.? ", facts.read_text(encoding="utf-8"), re.M))
    assert {"1", "1.3", "2.2", "3", "4", "5", "8"} <= sections
    bad = []
    for folder in ("server", "tests", "extension", "bench", "tools"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix not in (".py", ".ts", ".md") or "fixtures" in path.parts or path == Path(__file__).resolve():
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if "torch-facts" not in line:
                    continue
                cited = re.findall(r"docs/torch-facts\.md §(\d+(?:\.\d+)*)", line)
                if not cited or any(c not in sections for c in cited):
                    bad.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not bad, "\n".join(bad)


# -- ARCHITECTURE.md names every module -----------------------------------------------------------


def _sections(doc: str) -> list[tuple[str, str]]:
    """(heading, body) of each `### ` section of ARCHITECTURE.md's code map."""
    parts = re.split(r"^### (.*)$", doc, flags=re.M)
    return list(zip(parts[1::2], parts[2::2], strict=True))


def _unnamed(modules: list[str], doc: str) -> list[str]:
    """The modules (paths under server/exportlens) that ARCHITECTURE.md does not name: a module of a
    sub-package must appear as `name.py` (or a path ending in it) in the section whose heading names
    its folder; a top-level module in any other section."""
    sections = _sections(doc)
    missing = []
    for module in modules:
        folder, _, name = module.rpartition("/")
        if folder:
            home = [head + body for head, body in sections if f"`server/exportlens/{folder}/`" in head]
        else:
            home = [head + body for head, body in sections if not re.search(r"`server/exportlens/\w+/`", head)]
        if not any(re.search(rf"`(?:[\w/]*/)?{re.escape(name)}`", text) for text in home):
            missing.append(module)
    return missing


def _modules() -> list[str]:
    """Every module with code: an `__init__.py` that is only a docstring or a constant needs no words."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        body = ast.parse(path.read_text(encoding="utf-8")).body
        if path.name == "__init__.py" and not any(isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)) for n in body):
            continue
        out.append(path.relative_to(PACKAGE).as_posix())
    return out


def test_architecture_names_every_module() -> None:
    doc = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert _unnamed(_modules(), doc) == []
    assert _unnamed(["lsp/ghost.py", "ghost.py"], doc) == ["lsp/ghost.py", "ghost.py"]  # the check can fail


# -- one home per fact ----------------------------------------------------------------------------


def _source_lines(pattern: str) -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(pattern, line):
                found.append(f"{path.relative_to(PACKAGE).as_posix()}:{n}")
    return found


def test_is_a_problem_is_written_once() -> None:
    """Errors and warnings are problems: `model.is_problem` says it, everything else asks it."""
    spelled = _source_lines(r"severity\s*(in\s*\(\s*(ERROR|1)\s*,\s*(WARNING|2)\s*\)|<=\s*(2|WARNING))")
    assert [s.split(":")[0] for s in spelled] == ["model.py"]
    client = [
        f"{p.name}:{n}"
        for p in sorted((ROOT / "extension").rglob("*.ts"))
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if "DiagnosticSeverity.Warning" in line
    ]
    assert len(client) == 1 and client[0].startswith("serverController.ts:")  # the client's one function, `isProblem`


def test_every_diagnostic_is_made_by_codes_new() -> None:
    """A diagnostic takes its code's default severity from its record: only `codes.new` builds one
    (a notebook's mapper moves one with `dataclasses.replace`; `Diagnostic.from_json` reads one back)."""
    made = _source_lines(r"(?<![.\w])Diagnostic\(")
    assert [s.split(":")[0] for s in made] == ["codes.py"]


def test_settings_are_resolved_in_one_place() -> None:
    """Only `EngineSettings.resolved` builds a front end's settings (flags > pyproject > defaults)."""
    built = [s for s in _source_lines(r"EngineSettings\(") if not s.startswith("engine.py:")]
    assert built == []


def test_server_handlers_do_not_tell_notebooks_from_files() -> None:
    """Every feature handler of lsp/server.py is the same for a file and a notebook's cell: only the
    notebook-sync notifications and the plumbing's wiring name notebooks."""
    tree = ast.parse((PACKAGE / "lsp" / "server.py").read_text(encoding="utf-8"))
    offenders = []
    for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith("register_") and n.name != "register_notebooks"):
        for node in ast.walk(fn):
            text = ast.unparse(node) if isinstance(node, (ast.Attribute, ast.Constant, ast.Name)) else ""
            if re.search(r"notebook|ipynb|\bcell", text, re.I):
                offenders.append(f"{fn.name}: {text}")
    assert offenders == []


# -- small rooms ----------------------------------------------------------------------------------

RUNS_PARTS = ("runs.py", "gate.py", "engines.py", "publisher.py", "plans.py")  # lsp/runs.py and the parts split from it


def test_runs_and_each_part_split_from_it_stay_under_300_lines() -> None:
    sizes = {name: len((PACKAGE / "lsp" / name).read_text(encoding="utf-8").splitlines()) for name in RUNS_PARTS}
    assert {name: n for name, n in sizes.items() if n >= 300} == {}


def test_the_server_never_changes_an_engine_in_place() -> None:
    """A settings change builds a new engine (`Engines.current`): `EngineSettings` is frozen, and
    nothing outside engine.py resizes an engine's worker."""
    import dataclasses

    from exportlens.engine import EngineSettings

    assert EngineSettings.__dataclass_params__.frozen  # type: ignore[attr-defined]
    try:
        EngineSettings().timeout = 1.0  # type: ignore[misc]
    except dataclasses.FrozenInstanceError:
        pass
    else:
        raise AssertionError("EngineSettings can be changed in place")
    resized = [s for s in _source_lines(r"\.slots\.size\s*=[^=]") if not s.startswith("engine.py:")]
    assert resized == []


def test_the_interpreter_is_resolved_in_one_place() -> None:
    """The worker's interpreter (the front end's choice, else pyproject's `python`) is chosen only in
    `EngineSettings.resolved`."""
    assert [s.split(":")[0] for s in _source_lines(r"\bor\s+\w+\.python\b")] == ["engine.py"]


def test_the_document_suffixes_are_listed_once() -> None:
    """`document.PYTHON_SUFFIXES` and `SUFFIXES` are the files ExportLens checks (the client's copy
    is generated from them); nothing else lists `.py`/`.pyw` as a kind of document."""
    lists = _source_lines(r"""\(\s*["']\.py["']\s*,|["']\.pyw["']""")
    assert [s.split(":")[0] for s in lists] == ["document.py"]


def test_the_diagnostic_line_is_formatted_once() -> None:
    """`file:line:col: level[code]: message` is written by `model.text_lines` (the CLI's text and
    the pytest plugin's failures)."""
    spelled = _source_lines(r"\}\[\{[^}]*code\}\]:")
    assert [s.split(":")[0] for s in spelled] == ["model.py"]
