"""The judge of a written `dynamic_shapes`: plain `torch.export.export` on every export target, and the
program's input placeholders in torch's symbols (an oracle written apart from the worker).

`python tests/program_symbols.py FILE` runs the file (its own export calls, and an ExportDB `model` /
`example_args` / `dynamic_shapes` target) and prints one JSON object {"<target>": {"result": "ok" |
"<exception>", "shapes": {"<placeholder>": ["s43", "16"]}, "ranges": {"s43": [2, null]}}}: each user
input's sizes as torch has them (a number where static), and each symbol's range (null: unbounded).
"""

from __future__ import annotations

import json
import os
import runpy
import sys
from typing import Any

import torch
from torch.export.graph_signature import InputKind

REAL_EXPORT = torch.export.export


def bound(value: Any) -> int | None:
    try:
        number = int(value)
    except Exception:
        return None
    return number if abs(number) < 2**62 else None


def describe(ep: Any) -> dict[str, Any]:
    users = {s.arg.name for s in ep.graph_signature.input_specs if s.kind == InputKind.USER_INPUT}
    shapes = {
        n.name: [str(s) for s in n.meta["val"].shape]
        for n in ep.graph.nodes
        if n.op == "placeholder" and n.name in users and hasattr(n.meta.get("val"), "shape")
    }
    ranges = {str(k): [bound(v.lower), bound(v.upper)] for k, v in ep.range_constraints.items()}
    return {"result": "ok", "shapes": shapes, "ranges": ranges}


def main(path: str) -> None:
    results: dict[str, Any] = {}
    sys.path.insert(0, os.path.dirname(path))

    def recorded(mod: Any, args: Any, kwargs: Any = None, **options: Any) -> Any:
        key = f"export at {os.path.basename(path)}:{sys._getframe(1).f_lineno}"
        try:
            ep = REAL_EXPORT(mod, args, kwargs, **options)
        except Exception as exc:
            results[key] = {"result": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}
            raise
        results[key] = describe(ep)
        return ep

    torch.export.export = recorded  # type: ignore[assignment]
    try:
        ns = runpy.run_path(path, run_name="__main__")
    finally:
        torch.export.export = REAL_EXPORT
    if "model" in ns and "example_args" in ns:
        try:
            ep = REAL_EXPORT(ns["model"], tuple(ns["example_args"]), ns.get("example_kwargs"), dynamic_shapes=ns.get("dynamic_shapes"))
            results["model"] = describe(ep)
        except Exception as exc:
            results["model"] = {"result": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}
    print(json.dumps(results))


if __name__ == "__main__":
    main(os.path.abspath(sys.argv[1]))
