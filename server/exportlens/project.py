"""Which folder is the user's project, what it configures, and which files are user code."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field

MARKERS = ("pyproject.toml", ".git", "setup.py", "setup.cfg")
SKIP_DIRS = {".git", ".hg", ".venv", "venv", "env", "__pycache__", "node_modules", "site-packages",
             "dist-packages", "build", "dist", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache"}


@dataclass
class ProjectConfig:
    root: str
    targets: list[str] = field(default_factory=list)  # "path/file.py:factory", relative to root
    error: str | None = None


def find_root(path: str) -> str:
    """The nearest folder above `path` with a project marker, else the file's own folder."""
    start = os.path.abspath(path)
    folder = start if os.path.isdir(start) else os.path.dirname(start)
    cur = folder
    while True:
        if any(os.path.exists(os.path.join(cur, m)) for m in MARKERS):
            return cur
        parent = os.path.dirname(cur)
        if parent == cur:
            return folder
        cur = parent


def load_config(root: str) -> ProjectConfig:
    """`[tool.exportlens]` of the root's pyproject.toml; a broken file is reported, not fatal."""
    cfg = ProjectConfig(root=root)
    path = os.path.join(root, "pyproject.toml")
    if not os.path.isfile(path):
        return cfg
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        cfg.error = f"pyproject.toml could not be read: {exc}"
        return cfg
    section = data.get("tool", {}).get("exportlens", {})
    targets = section.get("targets", [])
    if isinstance(targets, list) and all(isinstance(t, str) for t in targets):
        cfg.targets = list(targets)
    else:
        cfg.error = "[tool.exportlens] targets must be a list of \"path/file.py:factory\" strings"
    outside = [t for t in cfg.targets if not _inside(root, t.rpartition(":")[0])]
    if outside:  # never ignored without a word: they would not be analysed, the user should know why
        cfg.error = (f"[tool.exportlens] target{'s' if len(outside) > 1 else ''} {', '.join(repr(t) for t in outside)} "
                     f"{'are' if len(outside) > 1 else 'is'} outside the project folder {root}: ExportLens analyses "
                     "only files inside it (move the factory into the project, or open the folder that holds it)")
    return cfg


def _inside(root: str, file: str) -> bool:
    path = os.path.normpath(os.path.join(root, file))
    return path.startswith(os.path.join(os.path.normpath(root), ""))


def factories_by_file(cfg: ProjectConfig, extra: list[str] | None = None) -> dict[str, list[str]]:
    """Absolute file → factory names, from the config and any extra target strings."""
    out: dict[str, list[str]] = {}
    for spec in [*cfg.targets, *(extra or [])]:
        file, sep, name = spec.rpartition(":")
        if not sep or not file or not name.isidentifier():
            continue
        path = os.path.normpath(os.path.join(cfg.root, file))
        out.setdefault(path, []).append(name)
    return out


def is_user_file(path: str | None, root: str) -> bool:
    """In the project and not an installed library, torch, or our own code."""
    if not path or path.startswith("<"):
        return False
    full = os.path.abspath(path)
    if not full.startswith(os.path.join(root, "")):
        return False
    parts = set(full[len(root):].split(os.sep))
    if parts & {"site-packages", "dist-packages", ".venv", "venv"}:
        return False
    return not full.startswith(_OWN_PACKAGE)


_OWN_PACKAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "")


def python_files(path: str) -> list[str]:
    """`path` itself if a file, else every .py file under it (skipping venvs and caches)."""
    if os.path.isfile(path):
        return [os.path.abspath(path)]
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        found.extend(os.path.abspath(os.path.join(dirpath, f)) for f in sorted(filenames) if f.endswith(".py"))
    return found
