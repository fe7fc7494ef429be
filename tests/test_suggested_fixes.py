"""ExportLens reads torch's "Suggested fixes:" as torch itself does: `fixes.parse_suggested` against
`refine_dynamic_shapes_from_suggested_fixes` on the text each release really prints (2.13, and every
other release whose venv `make compat` left)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLES, ROOT

from exportlens.fixes import parse_suggested

pytestmark = pytest.mark.torch

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "exportlens" / "compat"
ORACLE = Path(__file__).with_name("suggested_fixes_oracle.py")
FILES = [
    "dynamic_shapes/derived_dim.py",  # a derived dimension with a new root
    "dynamic_shapes/range_refine.py",  # a range
    "dynamic_shapes/shared_kwargs.py",  # a range of a Dim two inputs share
    "dynamic_shapes/decode_step.py",  # a constant (a size of 1 in the example)
    "constraint/model.py",  # a constant (the code compares it)
    "library_project/patches.py",  # two derived dimensions, roots without a minimum
]
PYTHONS = [("pinned", sys.executable)] + [
    (v, str(CACHE / f"torch-{v}" / "bin" / "python")) for v in ("2.8.0", "2.10.0", "2.12.1", "2.14.1") if (CACHE / f"torch-{v}" / ".ok").exists()
]


def torch_reading(python: str) -> dict[str, Any]:
    # minilib from its source folder: other releases' venvs do not have it installed (only the text matters here)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "server"), str(EXAMPLES / "library_project" / "libsrc")])}
    out = subprocess.run([python, str(ORACLE), *(str(EXAMPLES / f) for f in FILES)], capture_output=True, text=True, env=env, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def ours(lines: list[str], asked: str) -> dict[str, Any]:
    """What ExportLens's fix will write for the Dim `asked`, in the oracle's terms."""
    read = parse_suggested(lines)
    s = read[asked]
    if s.kind == "static":
        return {"static": s.value}
    if s.kind == "range":
        return {"name": asked, "min": s.min if s.min is not None else 0, "max": s.max}
    root = read.get(s.root or "")
    assert s.offset == 0
    low = root.min if root and root.min is not None else 0
    return {"derived": f"{s.factor}*{s.root}", "root": s.root, "root_min": low, "root_max": root.max if root else None}


@pytest.mark.parametrize(("release", "python"), PYTHONS, ids=[p[0] for p in PYTHONS])
def test_suggested_fixes_are_read_as_torch_reads_them(release: str, python: str) -> None:
    reading = torch_reading(python)
    assert sorted(os.path.relpath(k, EXAMPLES) for k in reading) == sorted(FILES)
    for path, seen in reading.items():
        for dim, refined in seen["refined"].items():
            mine = ours(seen["lines"], refined["asked"])
            assert mine == {k: v for k, v in refined.items() if k != "asked"}, (release, path, dim, seen["lines"])
