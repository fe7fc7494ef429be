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
class Declared:
    """Where a module-level or factory target builds its model: the expression (UTF-8 byte columns, as
    `ast` and Python frames give them). A problem whose stack has no line of the project (a library
    model) goes here, with the library's line related."""

    line: int  # 1-based
    col: int
    end_line: int
    end_col: int


@dataclass(frozen=True)
class StaticTarget:
    name: str
    line: int  # 1-based
    kind: str  # "export"
    how: str  # "call" | "module" | "factory"
    declared: Declared | None = None  # a module's or factory's model expression


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
        found.targets.append(StaticTarget("model", assigned["model"], "export", "module", _module_model(tree.body, assigned["model"])))
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for name in factories or []:
        fn = defs.get(name)
        line = fn.lineno if fn is not None else 1
        found.factories.append(name)
        found.lines[name] = line
        found.targets.append(StaticTarget(f"{base}:{name}", line, "export", "factory", _factory_model(fn) if fn is not None else None))
    found.targets.sort(key=lambda t: t.line)
    return found


def _factory_model(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Declared | None:
    """The model a factory returns: the expression in its (last) `return`, or the assignment that
    built the name it returns (`model = fasterrcnn(...)` ... `return model, (x,)`)."""
    returns = [n for n in _own_nodes(fn.body) if isinstance(n, ast.Return) and n.value is not None]
    if not returns:
        return None
    ret = returns[-1]
    assert ret.value is not None
    value: ast.expr | None = ret.value
    if isinstance(value, ast.Name):  # `spec = {...}; return spec`
        value = _assigned_value(fn.body, value.id, ret.lineno) or value
    model = _model_of(value) if value is not None else None
    if model is None:
        return _span(ret)
    return _built(fn.body, model, ret.lineno) or _span(model)


def _module_model(body: list[ast.stmt], line: int) -> Declared | None:
    """The value of the module's `model = ...` (for `model = net`, the value that built `net`)."""
    stmt = next((s for s in body if s.lineno == line and isinstance(s, (ast.Assign, ast.AnnAssign))), None)
    value = stmt.value if stmt is not None else None
    if value is None:
        return None
    if isinstance(value, ast.Name):
        return _built(body, value, line) or _span(value)
    return _span(value)


def _model_of(spec: ast.expr) -> ast.expr | None:
    """The model in a factory's result: `{"model": m, ...}`, `dict(model=m, ...)` or `(m, args)`."""
    if isinstance(spec, ast.Dict):
        return next((v for k, v in zip(spec.keys, spec.values, strict=True) if isinstance(k, ast.Constant) and k.value == "model"), None)
    if isinstance(spec, ast.Call) and _dotted(spec.func) == "dict":
        return next((k.value for k in spec.keywords if k.arg == "model"), None)
    if isinstance(spec, (ast.Tuple, ast.List)) and spec.elts:
        return spec.elts[0]
    return None


def _built(body: list[ast.stmt], model: ast.expr, before: int) -> Declared | None:
    """The model expression itself, or for a plain name the value of the assignment that built it."""
    if not isinstance(model, ast.Name):
        return _span(model)
    value = _assigned_value(body, model.id, before)
    return _span(value) if value is not None else None


def _assigned_value(body: list[ast.stmt], name: str, before: int) -> ast.expr | None:
    """The value last bound to `name` above line `before` that does not just rework the name itself
    (`model = build()` rather than a later `model = model.eval()`), else the last one."""
    values: list[ast.expr] = []
    for node in _own_nodes(body):
        if not isinstance(node, ast.stmt) or node.lineno >= before:
            continue
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            values.append(node.value)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name) and node.target.id == name and node.value is not None:
            values.append(node.value)
    values.sort(key=lambda v: (v.lineno, v.col_offset))
    fresh = [v for v in values if not any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(v))]
    chosen = fresh or values
    return chosen[-1] if chosen else None


def _own_nodes(body: list[ast.stmt]) -> list[ast.AST]:
    """Every node of a body, not looking into nested functions, classes or lambdas."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        out.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    return out


def _span(node: ast.AST) -> Declared:
    line = node.lineno  # type: ignore[attr-defined]
    col = node.col_offset  # type: ignore[attr-defined]
    return Declared(line, col, getattr(node, "end_lineno", None) or line, getattr(node, "end_col_offset", None) or col)


NO_TARGET_HELP = (
    "ExportLens found nothing to analyse in this file. Declare a target in one of three ways: "
    "call torch.export.export(model, args) in the script; define module-level `model` (an "
    "nn.Module) and `example_args` (a tuple), optionally `example_kwargs` and `dynamic_shapes`; "
    'or list "path/file.py:factory" under [tool.exportlens] targets in pyproject.toml.'
)
