"""Run torch's own `draft_export` on every export target under a folder (the count oracle).

Used by test_distinct_problems.py in a subprocess: `python tests/draft_report.py FOLDER` prints one
JSON object {target: {"problems": [[failure type, where], ...], "raised": null | "<exception>",
"plain": null | "ok" | "<exception>"}}. `problems` are torch's report failures deduplicated by
(failure type, the user stack torch kept, or the op for kernel failures), as torch deduplicates them. When draft export raises,
`plain` is what plain `torch.export.export` says about the same target. Script targets run as
`__main__` with their export calls routed here, as ExportLens does. No ExportLens code runs torch.
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


def draft(mod: Any, args: Any, kwargs: Any = None, **options: Any) -> dict[str, Any]:
    try:
        ep = torch.export.draft_export(mod, args, kwargs, **options)
    except Exception as exc:
        try:
            EXPORT(mod, args, kwargs, **options)
            plain = "ok"
        except Exception as again:
            plain = f"{type(again).__name__}: {str(again).splitlines()[0] if str(again) else ''}"
        return {"problems": [], "raised": f"{type(exc).__name__}", "plain": plain}
    seen: list[list[str]] = []
    for f in ep._report.failures:
        key = [f.failure_type.name, _where(f)]
        if key not in seen:
            seen.append(key)
    return {"problems": seen, "raised": None, "plain": None}


def _spec(spec: dict[str, Any]) -> dict[str, Any]:
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
