"""Run plain `torch.export.export` on every target under a folder (the efficacy oracle).

Used by test_efficacy.py in a subprocess: `python tests/plain_export.py FOLDER` prints one JSON
object {target: "ok" | "<exception>"}. Script targets run as `__main__` (their own export call);
ExportDB variables and pyproject factories are exported here.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import tomllib

import torch

from exportlens import project, targets


def export_spec(spec: dict) -> None:
    args = spec["example_args"]
    torch.export.export(spec["model"], args if isinstance(args, tuple) else (args,), spec.get("example_kwargs"), dynamic_shapes=spec.get("dynamic_shapes"))


def main(folder: str) -> dict[str, str]:
    results: dict[str, str] = {}
    root = project.find_root(folder)
    with open(os.path.join(root, "pyproject.toml"), "rb") as fh:
        factories = project.factories_by_file(project.ProjectConfig(root, tomllib.load(fh)["tool"]["exportlens"]["targets"]))
    for path in project.python_files(folder):
        import ast

        found = targets.discover(ast.parse(open(path).read()), path, factories.get(path, []))
        if not found.targets:
            continue
        sys.path[:0] = [os.path.dirname(path)]
        for t in found.targets:
            key = f"{os.path.relpath(path, folder)}:{t.name}"
            try:
                if t.how == "call":
                    runpy.run_path(path, run_name="__main__")
                else:
                    ns = runpy.run_path(path, run_name="__exportlens_check__")
                    export_spec(ns if t.how == "module" else ns[t.name.split(":")[-1]]())
                results[key] = "ok"
            except Exception as exc:  # the verdict, not a crash of the oracle
                results[key] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        sys.path.remove(os.path.dirname(path))
    return results


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
