"""Finding targets without running anything: which calls, variables and factories a file has.

The server uses this to decide whether a file is worth a worker job at all (and to tell the user
how to declare a target when there is none); the worker uses the same answer to know how to run
the file.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field

from exportlens.protocol import JobSpec

EXPORT_FUNCS = {"export", "draft_export"}


@dataclass(frozen=True)
class StaticTarget:
    name: str
    line: int  # 1-based
    kind: str  # "export"
    how: str  # "call" | "module" | "factory"


@dataclass
class FileTargets:
    targets: list[StaticTarget] = field(default_factory=list)
    run_as_main: bool = False
    module_vars: bool = False
    factories: list[str] = field(default_factory=list)
    lines: dict[str, int] = field(default_factory=dict)
    compile: bool = False  # the file calls torch.compile: watch graph breaks and recompiles
    trace: bool = False  # the file calls torch.jit.trace: watch tracer warnings and checks

    def job(self, path: str, root: str) -> JobSpec:
        """The worker request for this file."""
        return {
            "file": path,
            "root": root,
            "main": self.run_as_main,
            "module_vars": self.module_vars,
            "factories": self.factories,
            "lines": self.lines,
            "compile": self.compile,
            "trace": self.trace,
        }


def _dotted(node: ast.expr) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _export_aliases(tree: ast.Module) -> set[str]:
    """Names bound to torch.export's export functions or to the torch.export module."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("torch.export", "torch"):
            for alias in node.names:
                if node.module == "torch.export" and alias.name in EXPORT_FUNCS:
                    names.add(alias.asname or alias.name)
                if node.module == "torch" and alias.name == "export":
                    names.add((alias.asname or alias.name) + ".")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "torch.export" and alias.asname:
                    names.add(alias.asname + ".")
    return names


def _is_export_call(call: ast.Call, aliases: set[str]) -> bool:
    name = _dotted(call.func)
    if not name:
        return False
    if name in aliases:
        return True
    head, _, last = name.rpartition(".")
    if last not in EXPORT_FUNCS:
        return False
    return head.endswith("torch.export") or head + "." in aliases


def _compile_trace_names(tree: ast.Module) -> dict[str, str]:
    """Dotted names that mean torch.compile / torch.jit.trace in this file → "compile" | "trace"."""
    names = {"torch.compile": "compile", "torch.jit.trace": "trace"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "torch" and alias.asname:
                    names[f"{alias.asname}.compile"] = "compile"
                    names[f"{alias.asname}.jit.trace"] = "trace"
                elif alias.name == "torch.jit" and alias.asname:
                    names[f"{alias.asname}.trace"] = "trace"
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                bound = alias.asname or alias.name
                if node.module == "torch" and alias.name == "compile":
                    names[bound] = "compile"
                elif node.module == "torch" and alias.name == "jit":
                    names[f"{bound}.trace"] = "trace"
                elif node.module == "torch.jit" and alias.name == "trace":
                    names[bound] = "trace"
    return names


def _compile_trace_targets(tree: ast.Module, base: str, found: FileTargets) -> None:
    """`torch.compile(...)`, `@torch.compile`, `torch.jit.trace(...)`: targets named by their line."""
    names = _compile_trace_names(tree)
    for node in ast.walk(tree):
        hits: list[tuple[str, int]] = []
        if isinstance(node, ast.Call) and _dotted(node.func) in names:
            hits.append((names[_dotted(node.func)], node.lineno))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            hits.extend((names[_dotted(d)], d.lineno) for d in node.decorator_list if _dotted(d) in names)
        for kind, line in hits:
            found.targets.append(StaticTarget(f"{kind} at {base}:{line}", line, kind, "call"))
            found.run_as_main = True
            setattr(found, kind, True)


def discover(tree: ast.Module, path: str, factories: list[str] | None = None) -> FileTargets:
    found = FileTargets()
    base = os.path.basename(path)
    _compile_trace_targets(tree, base, found)
    aliases = _export_aliases(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _is_export_call(node, aliases):
            found.targets.append(StaticTarget(f"export at {base}:{node.lineno}", node.lineno, "export", "call"))
            found.run_as_main = True
    assigned: dict[str, int] = {}
    for stmt in tree.body:
        targets: list[ast.expr] = []
        if isinstance(stmt, ast.Assign):
            targets = stmt.targets
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets = [stmt.target]
        for t in targets:
            if isinstance(t, ast.Name) and t.id not in assigned:
                assigned[t.id] = stmt.lineno
    if "model" in assigned and "example_args" in assigned:
        found.module_vars = True
        found.lines["model"] = assigned["model"]
        found.targets.append(StaticTarget("model", assigned["model"], "export", "module"))
    defs = {n.name: n.lineno for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for name in factories or []:
        line = defs.get(name, 1)
        found.factories.append(name)
        found.lines[name] = line
        found.targets.append(StaticTarget(f"{base}:{name}", line, "export", "factory"))
    found.targets.sort(key=lambda t: t.line)
    return found


NO_TARGET_HELP = (
    "ExportLens found nothing to analyse in this file. Declare a target in one of three ways: "
    "call torch.export.export(model, args) in the script; define module-level `model` (an "
    "nn.Module) and `example_args` (a tuple), optionally `example_kwargs` and `dynamic_shapes`; "
    'or list "path/file.py:factory" under [tool.exportlens] targets in pyproject.toml.'
)
