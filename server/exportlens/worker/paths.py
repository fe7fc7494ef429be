"""Which files are ExportLens's own, the standard library's, or an installed distribution's folder,
for every part of the worker that sorts files (torch-free: the zygote records the environment with
it before torch is imported)."""

from __future__ import annotations

import os
import sysconfig

OWN_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "")
PACKAGE_DIRS = ("site-packages", "dist-packages")
_STDLIB_DIRS = tuple(os.path.join(os.path.abspath(p), "") for p in {sysconfig.get_paths().get("stdlib", ""), sysconfig.get_paths().get("platstdlib", "")} if p)


def is_stdlib(full: str) -> bool:
    """An absolute path in the standard library's folder, not in a site folder under it (a venv's)."""
    return full.startswith(_STDLIB_DIRS) and not any(os.sep + d + os.sep in full for d in PACKAGE_DIRS)
