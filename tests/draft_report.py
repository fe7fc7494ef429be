"""Run torch's own exports on every export target under a folder (the count oracle).

Used by test_distinct_problems.py in a subprocess: `python tests/draft_report.py FOLDER` prints one
JSON object {target: {"plain": "ok" | "<exception>", "plain_kind": ..., "violated": [Dim names],
"lost": [dimensions], "problems": [[failure type, where], ...], "raised": null | "<exception>"}}.
Plain `torch.export.export` runs first, as the user would: `plain_kind` is what its failure is
(constraint, data-dependent, missing-fake-kernel, error), `violated` the Dims its constraint
violation names, `lost` the requested dimensions its program has static. Then `draft_export` runs
(with the spec refined by torch's own suggested fixes after a constraint violation): `problems` are
its report's failures deduplicated by (failure type, the user stack torch kept, or the op for kernel
failures), as torch deduplicates them; `raised` what it raised. Script targets run as `__main__`
with their export calls routed here, as ExportLens does. No ExportLens code runs torch.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import runpy
import sys
import tomllib
from typing import Any

import torch
from torch._logging import structured

from exportlens import project, targets

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

EXPORT = torch.export.export


def _where(failure: Any) -> str:
    """What torch's report keys a failure by (`LogRecord._hash` in torch/export/_draft_export.py): the op
    for a kernel failure, else the kept user stack, so one library line reached two ways is two."""
    data = failure.data
    if "op" in data:
        return str(data["op"])
    names = {v: k for k, v in structured.INTERN_TABLE.items()}
    stack = data.get("user_stack") or data.get("stack") or []
    if not stack:
        return str(data.get("expr", ""))
    return " < ".join(f"{names.get(fr.get('filename'), fr.get('filename'))}:{fr.get('line')}" for fr in reversed(stack))


def _kind(exc: BaseException) -> tuple[str, list[str], list[str]]:
    """(what a plain export failure is, the Dims a constraint violation names, torch's suggested lines)."""
    chain, cur = [], exc
    while cur is not None and cur not in chain:
        chain.append(cur)
        cur = cur.__cause__ or cur.__context__  # type: ignore[assignment]
    text = "\n".join(str(e) for e in chain)
    if "Constraints violated (" in text:
        names = text.split("Constraints violated (", 1)[1].split(")!", 1)[0].split(", ")
        tail = text.split("Suggested fixes:", 1)[1].split("\n\n", 1)[0] if "Suggested fixes:" in text else ""
        lines = [ln.strip() for ln in tail.splitlines() if " = " in ln]
        return "constraint", names, lines
    if "GuardOnDataDependentSymNode" in text or any(type(e).__name__ == "GuardOnDataDependentSymNode" for e in chain):
        return "data-dependent", [], []
    if "no fake impl registered" in text or any(type(e).__name__ == "UnsupportedOperatorException" for e in chain):
        return "missing-fake-kernel", [], []
    return "error", [], []


def draft(mod: Any, args: Any, kwargs: Any = None, **options: Any) -> dict[str, Any]:
    from plain_dynamic import judge  # the plain-export oracle: which requested dimensions stayed dynamic

    entry: dict[str, Any] = {"violated": [], "lost": [], "plain_kind": None}
    judged: dict[str, dict[str, Any]] = {}
    try:
        judge(judged, "t", mod, args, kwargs, **options)
        entry["plain"] = "ok"
        entry["lost"] = sorted(set(judged["t"]["requested"]) - set(judged["t"]["dynamic"]))
    except Exception as exc:
        entry["plain"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        entry["plain_kind"], entry["violated"], suggested = _kind(exc)
        if suggested and options.get("dynamic_shapes"):
            from torch.export.dynamic_shapes import refine_dynamic_shapes_from_suggested_fixes

            refined = refine_dynamic_shapes_from_suggested_fixes("Suggested fixes:\n" + "\n".join(suggested), options["dynamic_shapes"])
            options = {**options, "dynamic_shapes": refined}
    try:
        ep = torch.export.draft_export(mod, args, kwargs, **options)
    except Exception as exc:
        return {**entry, "problems": [], "raised": f"{type(exc).__name__}"}
    seen: list[list[str]] = []
    for f in ep._report.failures:
        key = [f.failure_type.name, _where(f)]
        if key not in seen:
            seen.append(key)
    return {**entry, "problems": seen, "raised": None}


def _spec(spec: Any) -> dict[str, Any]:
    """A module's namespace or a factory's result: a dict, or a tuple (model, args[, kwargs]) as the worker takes it."""
    if isinstance(spec, (tuple, list)):
        spec = dict(zip(("model", "example_args", "example_kwargs"), spec, strict=False))
    args = spec["example_args"]
    return draft(
        spec["model"],
        args if isinstance(args, tuple) else (args,),
        spec.get("example_kwargs"),
        dynamic_shapes=spec.get("dynamic_shapes"),
        strict=bool(spec.get("strict", False)),
    )


def main(folder: str) -> dict[str, Any]:
    results: dict[str, Any] = {}
    root = project.find_root(folder)
    with open(os.path.join(root, "pyproject.toml"), "rb") as fh:
        factories = project.factories_by_file(project.ProjectConfig(root, tomllib.load(fh)["tool"]["exportlens"]["targets"]))
    for path in project.python_files(folder):
        with open(path) as fh:
            found = targets.discover(ast.parse(fh.read()), path, factories.get(path, []))
        todo = [t for t in found.targets if t.kind == "export"]
        if not todo:
            continue
        sys.path[:0] = [os.path.dirname(path)]
        rel = os.path.relpath(path, folder)
        if any(t.how == "call" for t in todo):  # the script's own export calls, each a draft export

            def record(mod: Any, args: Any, kwargs: Any = None, *, prefix: str = f"{rel}:export at {os.path.basename(path)}", **options: Any) -> None:
                results[f"{prefix}:{sys._getframe(1).f_lineno}"] = draft(mod, args, kwargs, **options)

            torch.export.export = record  # type: ignore[assignment]
            try:
                with contextlib.redirect_stdout(sys.stderr):  # stdout carries only the JSON
                    runpy.run_path(path, run_name="__main__")
            except Exception:
                pass  # the script using the program it did not get back: its calls are recorded
            finally:
                torch.export.export = EXPORT
        for t in todo:
            if t.how != "call":
                with contextlib.redirect_stdout(sys.stderr):
                    ns = runpy.run_path(path, run_name="__exportlens_check__")
                results[f"{rel}:{t.name}"] = _spec(ns if t.how == "module" else ns[t.name.split(":")[-1]]())
        sys.path.remove(os.path.dirname(path))
    return results


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1]), indent=1))
