"""torch's own reading of its "Suggested fixes:" (an oracle for `fixes.parse_suggested`).

`python tests/suggested_fixes_oracle.py FILE...` runs each file's export call (ExportDB variables or
the script's own calls) with plain `torch.export.export` and, where it fails with a constraint
violation, prints torch's suggestion lines and what
`torch.export.dynamic_shapes.refine_dynamic_shapes_from_suggested_fixes` makes of them: per input
dimension of the refined spec, a Dim's name with its min and max, a derived Dim's root, or a
static size. One JSON object {file: {"lines": [...], "refined": {"x.shape[0]": {...}}}}.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
from typing import Any

import torch
from torch.export.dynamic_shapes import refine_dynamic_shapes_from_suggested_fixes

REAL_EXPORT = torch.export.export
OUT: dict[str, Any] = {}


def _bound(value: Any) -> int | None:
    try:
        number = int(value)
    except Exception:
        return None
    return number if abs(number) < 2**62 else None


def described(dim: Any) -> dict[str, Any]:
    if isinstance(dim, int):
        return {"static": dim}
    root = getattr(dim, "root", None)
    if root is not None:
        return {"derived": str(dim.__name__), "root": str(root.__name__), "root_min": _bound(root.min), "root_max": _bound(root.max)}
    return {"name": str(dim.__name__), "min": _bound(dim.min), "max": _bound(dim.max)}


def record(path: str, mod: Any, args: Any, kwargs: Any = None, **options: Any) -> Any:
    try:
        return REAL_EXPORT(mod, args, kwargs, **options)
    except Exception as exc:
        text = str(exc)
        if "Suggested fixes:" not in text:
            raise
        lines = []
        for line in text.split("Suggested fixes:", 1)[1].splitlines():
            if not line.strip() and not lines:
                continue
            if " = " not in line:
                break
            lines.append(line.strip())
        spec = options["dynamic_shapes"]
        refined = refine_dynamic_shapes_from_suggested_fixes("Suggested fixes:\n" + "\n".join(lines), spec)
        OUT[path] = {
            "lines": lines,
            "refined": {
                f"{name}.shape[{d}]": {"asked": str(getattr(spec[name][d], "__name__", "")), **described(dims[d])}
                for name, dims in refined.items()
                if isinstance(dims, dict)
                for d in dims
                if dims[d] is not None
            },
        }
        raise


def main(paths: list[str]) -> None:
    for path in paths:
        sys.path.insert(0, os.path.dirname(path))
        torch.export.export = lambda mod, args, kwargs=None, _p=path, **o: record(_p, mod, args, kwargs, **o)  # type: ignore[assignment,misc]
        try:
            ns = runpy.run_path(path, run_name="__main__")
            if "model" in ns and "example_args" in ns:
                record(path, ns["model"], tuple(ns["example_args"]), ns.get("example_kwargs"), dynamic_shapes=ns.get("dynamic_shapes"))
        except Exception:
            pass
        finally:
            torch.export.export = REAL_EXPORT
    print(json.dumps(OUT))


if __name__ == "__main__":
    main(sys.argv[1:])
