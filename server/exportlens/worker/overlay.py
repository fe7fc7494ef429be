"""Run user code from texts that are not on disk, under the files' real names.

A job may carry `{path: text}` overrides: the editor's unsaved text, or a file with a quick fix
applied in memory (fix verification). Installed in the job process, the overlay serves each
override wherever Python would have read that file:

* `import` of a module whose file is overridden compiles the override (a meta-path finder that
  defers to the normal path finder and only swaps the loader); no bytecode is read or written;
* `run_path(file)` runs an overridden script the way `runpy.run_path` does, compiled with the
  real filename, so tracebacks, `co_filename` and torch's intern table name the real file;
* `linecache` holds the override's lines, so stacks, dynamo's traces and `inspect.getsource`
  show the text that ran rather than the disk's.

Nothing is written to disk. Standard library only (no torch), so any process can use it.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import linecache
import os
import runpy
import sys
import types
from collections.abc import Sequence
from typing import Any

_overrides: dict[str, str] = {}


def _norm(path: str) -> str:
    return os.path.normcase(os.path.abspath(path))


def overridden(path: str) -> str | None:
    """The override text for `path`, or None when the disk's text is the one to run."""
    return _overrides.get(_norm(path))


def _cache_lines(path: str, text: str) -> None:
    """linecache entry with no mtime: `checkcache` leaves it alone (as for loader-made entries)."""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n"
    linecache.cache[path] = (len(text), None, lines, path)


class OverlayLoader(importlib.machinery.SourceFileLoader):
    """A source loader that compiles the override instead of the file (and keeps no bytecode)."""

    def get_source(self, fullname: str) -> str:
        text = overridden(self.path)
        return text if text is not None else str(super().get_source(fullname))

    def get_code(self, fullname: str) -> types.CodeType:  # type: ignore[override]
        text = overridden(self.path)
        if text is None:
            return super().get_code(fullname)  # type: ignore[return-value]
        _cache_lines(self.path, text)
        return compile(text, self.path, "exec", dont_inherit=True)

    def set_data(self, path: str, data: Any, *, _mode: int = 0o666) -> None:  # type: ignore[override]
        """Never write a .pyc of a text that is not the file's."""


class OverlayFinder(importlib.abc.MetaPathFinder):
    """Finds modules as the path finder does; overridden files get the overlay loader."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or not spec.origin or overridden(spec.origin) is None:
            return spec
        spec.loader = OverlayLoader(fullname, spec.origin)
        return spec


_finder = OverlayFinder()


def install(overrides: dict[str, str]) -> None:
    """Serve `overrides` ({path: text}) from now on in this process (replaces earlier ones)."""
    _overrides.clear()
    for path, text in overrides.items():
        if not isinstance(path, str) or not isinstance(text, str):
            raise TypeError("overrides must map file paths to texts")
        _overrides[_norm(path)] = text
        _cache_lines(os.path.abspath(path), text)
    if _overrides and _finder not in sys.meta_path:
        # just before the path finder (builtins and frozen modules are found as usual): for any other
        # module it answers what the path finder would, so imports cost no more than without overrides
        where = next((i for i, f in enumerate(sys.meta_path) if f is importlib.machinery.PathFinder), len(sys.meta_path))
        sys.meta_path.insert(where, _finder)


def uninstall() -> None:
    """Back to the disk's texts (their linecache entries are dropped too)."""
    for path, entry in list(linecache.cache.items()):
        if _norm(path) in _overrides and len(entry) == 4 and entry[1] is None:
            del linecache.cache[path]
    _overrides.clear()
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)


def run_path(file: str, run_name: str) -> dict[str, Any]:
    """`runpy.run_path(file, run_name=...)`, running the override when there is one."""
    text = overridden(file)
    if text is None:
        return runpy.run_path(file, run_name=run_name)
    path = os.path.abspath(file)
    code = compile(text, path, "exec", dont_inherit=True)
    _cache_lines(path, text)
    module = types.ModuleType(run_name)
    module.__dict__.update(__file__=path, __cached__=None, __loader__=OverlayLoader(run_name, path), __package__="", __spec__=None)
    saved = sys.modules.get(run_name)
    sys.modules[run_name] = module  # as runpy does: the script can find itself (pickle, dataclasses)
    try:
        exec(code, module.__dict__)
        return dict(module.__dict__)
    finally:
        if saved is not None:
            sys.modules[run_name] = saved
        else:
            sys.modules.pop(run_name, None)
