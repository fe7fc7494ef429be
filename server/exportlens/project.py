"""Which folder is the user's project, what it configures, and which files are user code."""

from __future__ import annotations

import fnmatch
import os
import tomllib
from dataclasses import dataclass, field

from exportlens.document import PYTHON_SUFFIXES, SUFFIXES
from exportlens.options import COMPILE_BACKENDS, DRAFT_MODES, MAX_TIMEOUT

MARKERS = ("pyproject.toml", ".git", "setup.py", "setup.cfg")
SKIP_DIRS = {
    ".git",
    ".hg",
    ".venv",
    "venv",
    "env",
    "__pycache__",
    "node_modules",
    "site-packages",
    "dist-packages",
    "build",
    "dist",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
}


KEYS = ("targets", "ignore", "select", "timeout", "python", "compile-backend", "exclude", "draft-export", "cache-dir")


@dataclass
class ConfigError:
    """A bad `[tool.exportlens]` value: which key, what is wrong, and its 0-based line in pyproject.toml."""

    key: str | None
    message: str
    line: int = 0


@dataclass
class ProjectConfig:
    """`[tool.exportlens]` of the project's pyproject.toml; None means "not set" (a default or a flag decides)."""

    root: str
    targets: list[str] = field(default_factory=list)  # "path/file.py:factory", relative to root
    ignore: list[str] = field(default_factory=list)  # codes never reported
    select: list[str] | None = None  # when set, only these codes are reported
    timeout: float | None = None
    python: str | None = None
    compile_backend: str | None = None
    draft_export: str | None = None  # "auto" | "always"
    exclude: list[str] = field(default_factory=list)  # globs skipped by folder walks
    cache_dir: str | None = None  # the results cache's folder (absolute; relative to the root as written), see cache.py
    errors: list[ConfigError] = field(default_factory=list)
    notice: str | None = None  # not an invalid value, but something the user must hear (targets outside the project)

    @property
    def path(self) -> str:
        return os.path.join(self.root, "pyproject.toml")

    @property
    def error(self) -> str | None:
        return "; ".join(e.message for e in self.errors) or None


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
    """`[tool.exportlens]` of the root's pyproject.toml; a bad value is reported (by key), never fatal."""
    cfg = ProjectConfig(root=root)
    if not os.path.isfile(cfg.path):
        return cfg
    try:
        with open(cfg.path, "rb") as fh:
            raw = fh.read()
        data = tomllib.loads(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        cfg.errors.append(ConfigError(None, f"pyproject.toml could not be read: {exc}"))
        return cfg
    section = data.get("tool", {}).get("exportlens", {})
    if not isinstance(section, dict):
        cfg.errors.append(ConfigError(None, "[tool.exportlens] must be a table"))
        return cfg
    lines = _key_lines(raw.decode("utf-8"))
    for key, value in section.items():
        problem = _apply(cfg, key, value)
        if problem:
            cfg.errors.append(ConfigError(key, f"pyproject.toml: [tool.exportlens] {problem}", lines.get(key, 0)))
    outside = [t for t in cfg.targets if not _inside(root, t.rpartition(":")[0])]
    if outside:  # never ignored without a word: they would not be analysed, the user should know why
        cfg.notice = (
            f"[tool.exportlens] target{'s' if len(outside) > 1 else ''} {', '.join(repr(t) for t in outside)} "
            f"{'are' if len(outside) > 1 else 'is'} outside the project folder {root}: ExportLens analyses "
            "only files inside it (move the factory into the project, or open the folder that holds it)"
        )
    return cfg


def _inside(root: str, file: str) -> bool:
    path = os.path.normpath(os.path.join(root, file))
    return path.startswith(os.path.join(os.path.normpath(root), ""))


def _strings(value: object) -> list[str] | None:
    return list(value) if isinstance(value, list) and all(isinstance(v, str) for v in value) else None


def _codes(key: str, value: object) -> tuple[list[str] | None, str | None]:
    from exportlens.codes import CODES

    codes = _strings(value)
    if codes is None:
        return None, f"{key} must be a list of diagnostic codes (strings), got {value!r}"
    unknown = [c for c in codes if c not in CODES]
    if unknown:
        return None, f"{key}: unknown code{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} (known: {', '.join(CODES)})"
    return codes, None


def _apply(cfg: ProjectConfig, key: str, value: object) -> str | None:
    """Set one key on `cfg`, or say what is wrong with it (the key is left unset)."""
    if key == "targets":
        targets = _strings(value)
        if targets is None:
            return f'targets must be a list of "path/file.py:factory" strings, got {value!r}'
        cfg.targets = targets
    elif key in ("ignore", "select"):
        codes, problem = _codes(key, value)
        if problem:
            return problem
        if key == "ignore":
            cfg.ignore = codes or []
        else:
            cfg.select = codes
    elif key == "timeout":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_TIMEOUT:
            return f"timeout must be a number of seconds between 0 and {MAX_TIMEOUT:.0f}, got {value!r}"
        cfg.timeout = float(value)
    elif key == "python":
        if not isinstance(value, str) or not value.strip():
            return f"python must be the path (or command name) of an interpreter with torch, got {value!r}"
        value = os.path.expanduser(value.strip())
        cfg.python = os.path.normpath(os.path.join(cfg.root, value)) if os.sep in value or "/" in value else value
    elif key == "compile-backend":
        if value not in COMPILE_BACKENDS:
            return f"compile-backend must be one of {', '.join(COMPILE_BACKENDS)}, got {value!r}"
        cfg.compile_backend = str(value)
    elif key == "draft-export":
        if value not in DRAFT_MODES:
            return f"draft-export must be one of {', '.join(DRAFT_MODES)}, got {value!r}"
        cfg.draft_export = str(value)
    elif key == "cache-dir":
        if not isinstance(value, str) or not value.strip():
            return f"cache-dir must be the path of a folder for the results cache, got {value!r}"
        cfg.cache_dir = os.path.normpath(os.path.join(cfg.root, os.path.expanduser(value.strip())))
    elif key == "exclude":
        globs = _strings(value)
        if globs is None:
            return f"exclude must be a list of glob strings, got {value!r}"
        cfg.exclude = globs
    else:
        return f"unknown key {key!r} (known keys: {', '.join(KEYS)})"
    return None


def _key_lines(text: str) -> dict[str, int]:
    """0-based line of each key assigned directly in the [tool.exportlens] table (for diagnostics)."""
    out: dict[str, int] = {}
    inside = False
    for n, line in enumerate(text.splitlines()):
        stripped = line.strip()
        if stripped.startswith("["):
            inside = stripped.replace(" ", "") in ("[tool.exportlens]",)
            continue
        if inside and "=" in stripped and not stripped.startswith("#"):
            key = stripped.split("=", 1)[0].strip().strip("\"'")
            out.setdefault(key, n)
    return out


def excluded(path: str, root: str, globs: list[str]) -> bool:
    """Whether a folder walk skips `path`: a glob matches its path relative to the root or its name."""
    if not globs:
        return False
    rel = os.path.relpath(path, root).replace(os.sep, "/")
    name = os.path.basename(path)
    return any(fnmatch.fnmatchcase(rel, g) or fnmatch.fnmatchcase(name, g) or fnmatch.fnmatchcase(rel, g.rstrip("/") + "/*") for g in globs)


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
    parts = set(full[len(root) :].split(os.sep))
    if parts & {"site-packages", "dist-packages", ".venv", "venv"}:
        return False
    return not full.startswith(_OWN_PACKAGE)


_OWN_PACKAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "")


def python_files(path: str, exclude: list[str] | None = None, root: str | None = None, *, notebooks: bool = False) -> list[str]:
    """`path` itself if a file, else every Python file (and notebook with `notebooks`) under it, skipping
    venvs, caches, hidden files and the `exclude` globs (matched relative to `root`; a file named
    directly is never excluded)."""
    suffixes = SUFFIXES if notebooks else PYTHON_SUFFIXES
    if os.path.isfile(path):
        return [os.path.abspath(path)]
    base = os.path.abspath(root or path)
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = sorted(
            d for d in dirnames if d not in SKIP_DIRS and not d.startswith(".") and not excluded(os.path.abspath(os.path.join(dirpath, d)), base, exclude or [])
        )
        found.extend(
            full
            for f in sorted(filenames)
            if f.endswith(suffixes) and not f.startswith(".") and not excluded(full := os.path.abspath(os.path.join(dirpath, f)), base, exclude or [])
        )
    return found
