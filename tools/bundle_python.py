"""Copy the language server's pure-Python dependencies and the exportlens package into the
extension (``bundled/libs``), so the server runs from the user's interpreter with PYTHONPATH
pointing there and nothing is installed into the user's environment.

Run it with the interpreter whose site-packages hold the pinned dependencies (the project venv):
``.venv/bin/python tools/bundle_python.py --out bundled/libs``.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

# The server's runtime dependencies; their own requirements are followed.
ROOTS = ("pygls", "lsprotocol", "cattrs", "attrs", "PyYAML")
# Compiled extensions are left out: the bundle must work on every platform and Python version,
# and each of these packages falls back to pure Python (PyYAML without libyaml).
SKIP_SUFFIXES = (".so", ".pyd", ".dylib", ".pyc")


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _closure(roots: tuple[str, ...]) -> list[metadata.Distribution]:
    """The root distributions and every requirement that applies to this interpreter, each once."""
    seen: dict[str, metadata.Distribution] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        key = _normalise(name)
        if key in seen:
            continue
        dist = metadata.distribution(name)
        seen[key] = dist
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return sorted(seen.values(), key=lambda d: _normalise(d.metadata["Name"]))


def copy_distribution(dist: metadata.Distribution, out: Path) -> int:
    """Copy the files a distribution installed (its RECORD), minus compiled ones."""
    count = 0
    for file in dist.files or []:
        parts = Path(file).parts
        if parts and (parts[0] == ".." or "__pycache__" in parts or str(file).endswith(SKIP_SUFFIXES)):
            continue
        src = Path(dist.locate_file(file))
        if not src.is_file():
            continue
        dst = out / file
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
        count += 1
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True, help="target folder (emptied first)")
    parser.add_argument("--server", type=Path, default=Path("server/exportlens"), help="the exportlens package")
    args = parser.parse_args(argv)

    out: Path = args.out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for dist in _closure(ROOTS):
        n = copy_distribution(dist, out)
        print(f"bundled {dist.metadata['Name']} {dist.version} ({n} files)")
    if not (args.server / "__init__.py").is_file():
        print(f"error: {args.server} is not the exportlens package", file=sys.stderr)
        return 1
    shutil.copytree(args.server, out / "exportlens", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    print(f"bundled exportlens from {args.server}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
