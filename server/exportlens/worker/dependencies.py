"""What a job's result depends on, recorded in the job process: the `deps` event at its end.

The server's results cache (`exportlens/cache.py`) reuses a result only while nothing it depends
on changed. The server knows what it sent (the file's text, the overrides, the settings); only
the job knows what the user's code reached beyond that, so it records, with the standard library:

* every source module it imported that is not the standard library, an installed distribution or
  ExportLens (the project's helpers, an editable install's files, a PYTHONPATH folder's), by the
  SHA-256 of the very bytes it compiled (`install` hooks the source loader: no later disk state);
  one imported lazily during export counts the same, since the record is taken at the job's end;
* every installed distribution it imported from (by its top-level names), with the SHA-256 of its
  `RECORD` (which lists a hash of every file it installed); editable installs (pip's
  `direct_url.json` says `"dir_info": {"editable": true}`) are distributions too, and their
  files are sources above;
* the files under the project root it opened for reading through `open` (configs, weights):
  hashed at the job's end; one changed after the job began makes the record `unstable` (never
  cached), and one larger than BIG_FILE is named by size and modification time;
* the environment variables its code read (`os.environ`), and what they were;
* what its imports did not find (`absent`): every import of a module not loaded yet is noted
  (`_Attempts`, first on `sys.meta_path`), and for each the files that would have been found
  first had they existed: a module it did not find at all (`No module named 'helper'` stays true
  only while no helper.py, helper/ or installed helper appears), or one found in a later folder
  of its search path (a new helper.py beside the script would shadow an installed `helper`); for
  a module not found, the `.pth` files of each site folder searched too (a new editable install).

Imports only the standard library (torch's version is read from the module already loaded).
"""

from __future__ import annotations

import builtins
import hashlib
import importlib.machinery
import io
import json
import os
import site
import sys
import sysconfig
import time
import types
from collections.abc import Iterable
from typing import Any

from exportlens.worker import overlay
from exportlens.worker.paths import OWN_DIR, PACKAGE_DIRS, is_stdlib

BIG_FILE = 16 * 1024 * 1024  # a data file larger than this is named by size and mtime, not hashed
CHANGED_SLACK_NS = 2_000_000_000  # a file modified this close to the job's start may have changed under it (coarse clocks)
OWN_ENV = ("TMPDIR", "TORCH_DTRACE", "EXPORTLENS_WORKER")  # set per job or per worker by ExportLens itself


_compiled: dict[str, str] = {}  # source path → SHA-256 of the bytes compiled
_opened: set[str] = set()  # files opened for reading
_env: dict[str, str | None] = {}  # variable → the value read (None: it was not set)
_set_here: set[str] = set()  # variables the job (or the worker before it) set itself: its code is in the key already
_launch_env: dict[str, str] = {}  # the environment the worker was started with (`launched`)
_provides: dict[str, tuple[int, set[str], str | None]] = {}  # dist-info folder → (its mtime, the import names it installs, editable source)
_hashed: dict[str, tuple[tuple[int, int, int], str]] = {}  # RECORD file → (its stat, its SHA-256)
_attempts: dict[str, tuple[str, ...]] = {}  # module → the folders its first import searched, in order
_forked_loaded: set[str] = set()  # module files a fork beside this process loaded (`merge`)
_started_ns = 0
_installed = False


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def site_dirs() -> list[str]:
    """Where installed distributions live: the site folders and every sys.path folder named like one."""
    dirs: list[str] = []
    try:
        dirs += site.getsitepackages()
    except AttributeError:  # an old virtualenv's site module
        pass
    dirs += [site.getusersitepackages(), sysconfig.get_paths().get("purelib", ""), sysconfig.get_paths().get("platlib", "")]
    dirs += [p for p in sys.path if os.path.basename(os.path.normpath(p or ".")) in PACKAGE_DIRS]
    return list(dict.fromkeys(os.path.join(os.path.abspath(d), "") for d in dirs if d and os.path.isdir(d)))


def kind(path: str, sites: Iterable[str]) -> str:
    """What owns a file: "own" (ExportLens), "site" (an installed distribution), "stdlib", or "source"."""
    full = os.path.abspath(path)
    if full.startswith(OWN_DIR):
        return "own"
    if any(full.startswith(s) for s in sites):
        return "site"
    if is_stdlib(full):
        return "stdlib"
    return "source"


def launched() -> None:
    """Remember the environment the worker was started with (the zygote calls it first): a variable
    the worker's own process set since (torch's TORCHINDUCTOR_CACHE_DIR under the worker's temporary
    folder) follows from what is in the key already, and is not compared with the server's."""
    _launch_env.clear()
    _launch_env.update(os.environ)


def install() -> None:
    """From now on in this process, record the sources compiled, the files opened, the variables read."""
    global _started_ns, _installed
    _started_ns = time.time_ns()
    if _launch_env:
        _set_here.update(k for k in set(os.environ) | set(_launch_env) if os.environ.get(k) != _launch_env.get(k))
    if _installed:
        return
    _installed = True
    sys.meta_path.insert(0, _Attempts)
    sites = site_dirs()
    loader = importlib.machinery.SourceFileLoader
    original_get_code = loader.get_code

    def get_code(self: Any, fullname: str) -> types.CodeType | None:
        path = self.get_filename(fullname)
        if kind(path, sites) != "source" or not path.endswith(".py"):
            return original_get_code(self, fullname)
        data = self.get_data(path)  # the bytes compiled are the bytes hashed (no .pyc of an older text)
        _compiled[os.path.abspath(path)] = sha256(data)
        return self.source_to_code(data, path)  # type: ignore[no-any-return]

    loader.get_code = get_code  # type: ignore[method-assign]
    original_open = builtins.open

    def tracking_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = original_open(file, mode, *args, **kwargs)
        if isinstance(file, (str, bytes, os.PathLike)) and isinstance(mode, str) and not any(c in mode for c in "wax+"):
            try:
                _opened.add(os.path.abspath(os.fsdecode(file)))
            except (TypeError, ValueError):
                pass
        return handle

    builtins.open = tracking_open
    io.open = tracking_open  # type: ignore[assignment]  # pathlib opens through io.open
    environ = type(os.environ)
    original_getitem = environ.__getitem__

    original_setitem, original_delitem = environ.__setitem__, environ.__delitem__

    def getitem(self: Any, key: Any) -> Any:
        mine = self is os.environ and isinstance(key, str) and key not in _set_here
        try:
            value = original_getitem(self, key)
        except KeyError:
            if mine:
                _env.setdefault(key, None)
            raise
        if mine:
            _env.setdefault(key, value)
        return value

    def setitem(self: Any, key: Any, value: Any) -> None:
        if self is os.environ and isinstance(key, str):
            _set_here.add(key)
        original_setitem(self, key, value)

    def delitem(self: Any, key: Any) -> None:
        if self is os.environ and isinstance(key, str):
            _set_here.add(key)
        original_delitem(self, key)

    environ.__getitem__ = getitem  # type: ignore[method-assign]
    environ.__setitem__ = setitem  # type: ignore[method-assign]
    environ.__delitem__ = delitem  # type: ignore[method-assign]


class _Attempts:
    """First on `sys.meta_path`: notes each import of a module not loaded yet, and where it looks
    (the parent package's folders, else `sys.path` as it is then); finds nothing itself."""

    @staticmethod
    def find_spec(fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname not in _attempts:
            try:
                _attempts[fullname] = tuple(os.fsdecode(p) for p in (sys.path if path is None else path) if isinstance(p, (str, bytes, os.PathLike)))
            except (TypeError, ValueError):
                pass
        return None


def _found_at(module: Any, dirs: list[str]) -> int | None:
    """Where in `dirs` a loaded module was found; len(dirs) for a namespace package (a module or a
    regular package in any of them would win); None where no file can shadow it (built-in, frozen,
    found by another finder)."""
    spec = getattr(module, "__spec__", None)
    origin = getattr(spec, "origin", None)
    if spec is None or origin in ("built-in", "frozen"):
        return None
    if not origin or not os.path.isabs(origin):
        return len(dirs) if getattr(spec, "submodule_search_locations", None) is not None else None
    folder = os.path.dirname(origin)
    if os.path.basename(origin).startswith("__init__."):
        folder = os.path.dirname(folder)
    return dirs.index(folder) if folder in dirs else None


def _absent(sites: list[str], sources: dict[str, str], unstable: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """The paths that would have changed what the job's imports found, had they existed (none did),
    and the `.pth` files of every site folder a module was not found in (see the module's docstring).
    A module tried and not loaded may have been found all the same (its own code raised, or a probe
    like `importlib.util.find_spec` only looked): its file is then a source, by content."""
    suffixes = importlib.machinery.all_suffixes()  # what the path finder tries, as import itself lists them
    absent: set[str] = set()
    pth: dict[str, list[str]] = {}
    for name, searched in list(_attempts.items()):
        dirs = [os.path.abspath(d or os.curdir) for d in searched]
        module = sys.modules.get(name)
        stop = _found_at(module, dirs) if module is not None else len(dirs)
        if stop is None:
            continue
        tail = name.rpartition(".")[2]
        for folder in dirs[:stop]:
            if kind(os.path.join(folder, "x.py"), ()) in ("stdlib", "own") or os.path.isfile(folder):  # a zip of the stdlib
                continue
            candidates = [os.path.join(folder, tail + s) for s in suffixes] + [os.path.join(folder, tail, "__init__.py")]
            if module is None:
                candidates.append(os.path.join(folder, tail))  # a folder: a namespace package
                if os.path.join(folder, "") in sites:
                    pth[folder] = _pth_files(folder)
            there = [c for c in candidates if os.path.exists(c)]
            if not there:
                absent.update(candidates)
                continue
            if module is not None or any(_changed_since_start(c) for c in there):
                unstable.extend(there)  # appeared while the job ran
                break
            for path in there:  # found here, not loaded: what it found is a source
                if path not in sources and os.path.isfile(path):
                    text = overlay.overridden(path)
                    sha = sha256(text.encode("utf-8")) if text is not None else _compiled.get(path) or _file_sha(path)
                    if sha is not None:
                        sources[path] = sha
            break
    return sorted(absent), pth


def _pth_files(folder: str) -> list[str]:
    try:
        return sorted(e.name for e in os.scandir(folder) if e.name.endswith(".pth"))
    except OSError:
        return []


def recorded() -> dict[str, Any]:
    """What this process recorded, for a fork to hand to its parent (beside.py): draft export run
    beside plain export imports, opens and reads in the fork, and the job's `deps` must hold it."""
    return {
        "compiled": _compiled,
        "opened": sorted(_opened),
        "env": _env,
        "set_here": sorted(_set_here),
        "attempts": {k: list(v) for k, v in _attempts.items()},
        "loaded": sorted(_loaded_files()),
    }


def merge(fork: Any) -> None:
    """Take a fork's `recorded()` into this process's record, as if its work had run here."""
    if not isinstance(fork, dict):
        return
    for path, sha in dict(fork.get("compiled") or {}).items():
        _compiled.setdefault(path, sha)
    _opened.update(fork.get("opened") or ())
    for key, value in dict(fork.get("env") or {}).items():
        if key not in _set_here:
            _env.setdefault(key, value)
    _set_here.update(fork.get("set_here") or ())
    for name, searched in dict(fork.get("attempts") or {}).items():
        _attempts.setdefault(name, tuple(searched))
    _forked_loaded.update(fork.get("loaded") or ())


def _loaded_files() -> set[str]:
    out: set[str] = set(_forked_loaded)
    for module in list(sys.modules.values()):
        try:
            file = vars(module).get("__file__")  # not getattr: a lazy module's __getattr__ would run
        except TypeError:
            continue
        if isinstance(file, str) and file:
            out.add(file if os.path.isabs(file) else os.path.abspath(file))
    return out


def _top_level(rel: str) -> str:
    """The import name a file in a site folder belongs to (`torch/nn/x.py` → torch, `six.py` → six)."""
    parts = rel.replace("\\", "/").split("/", 1)
    return parts[0] if len(parts) > 1 else parts[0].split(".", 1)[0]


def _distributions(folder: str) -> list[tuple[str, set[str], str | None]]:
    """(dist-info folder, the import names it installs, an editable install's source folder) of every
    distribution in one site folder. The names are its top_level.txt, else the first parts of the
    paths its RECORD lists; an editable install is one whose direct_url.json says so (pip's PEP 610
    record: `"dir_info": {"editable": true}`, its `url` the project folder). Kept per dist-info
    folder and its mtime (a reinstall makes a new folder), so the zygote's `prime` serves every job."""
    out = []
    try:
        infos = sorted((e.path, e.stat().st_mtime_ns) for e in os.scandir(folder) if e.name.endswith(".dist-info") and e.is_dir())
    except OSError:
        return []
    for info, stamp in infos:
        known = _provides.get(info)
        if known is None or known[0] != stamp:
            tops: set[str] = set()
            try:
                with open(os.path.join(info, "top_level.txt"), encoding="utf-8") as fh:
                    tops = {line.strip() for line in fh if line.strip()}
            except OSError:
                try:
                    with open(os.path.join(info, "RECORD"), encoding="utf-8") as fh:
                        tops = {_top_level(line.split(",", 1)[0]) for line in fh if not line.startswith("..")}
                except OSError:
                    pass
            known = _provides[info] = (stamp, tops, _editable_folder(info))
        out.append((info, known[1], known[2]))
    return out


def _editable_folder(info: str) -> str | None:
    try:
        with open(os.path.join(info, "direct_url.json"), encoding="utf-8") as fh:
            url = json.load(fh)
    except (OSError, ValueError):
        return None
    if isinstance(url, dict) and isinstance(url.get("dir_info"), dict) and url["dir_info"].get("editable") and str(url.get("url", "")).startswith("file://"):
        from urllib.parse import unquote, urlparse

        return os.path.join(os.path.abspath(unquote(urlparse(url["url"]).path)), "")
    return None


def prime() -> None:
    """Read every site folder's distributions once in the zygote: each forked job then only stats them."""
    for folder in site_dirs():
        for info, _, _ in _distributions(folder):
            _file_sha(os.path.join(info, "RECORD"), keep=True)


def _distribution(info: str, editable: str | None) -> dict[str, Any]:
    """One distribution as the cache names it: its name, version, RECORD and RECORD's hash, and where an editable one's source is."""
    name, _, version = os.path.basename(info).removesuffix(".dist-info").partition("-")
    record = os.path.join(info, "RECORD")
    out: dict[str, Any] = {"name": name, "version": version, "record": record, "sha": _file_sha(record, keep=True)}
    if editable is not None:
        out["editable"] = editable.rstrip(os.sep)
    return out


def _file_sha(path: str, *, keep: bool = False) -> str | None:
    """SHA-256 of a file's bytes; with `keep`, remembered by its stat (a distribution's RECORD)."""
    try:
        st = os.stat(path)
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        if keep and (known := _hashed.get(path)) is not None and known[0] == stamp:
            return known[1]
        with open(path, "rb") as fh:
            sha = sha256(fh.read())
    except OSError:
        return None
    if keep:
        _hashed[path] = (stamp, sha)
    return sha


def _changed_since_start(path: str) -> bool:
    try:
        return os.stat(path).st_mtime_ns >= _started_ns - CHANGED_SLACK_NS
    except OSError:
        return True


def _data_fingerprint(path: str) -> dict[str, Any] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    if st.st_size > BIG_FILE:
        return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}
    sha = _file_sha(path)
    return {"sha": sha} if sha is not None else None


def _in_project(path: str, root: str) -> bool:
    if not path.startswith(os.path.join(root, "")):
        return False
    parts = set(path[len(root) :].split(os.sep))
    return not parts & {"site-packages", "dist-packages", ".venv", "venv", "__pycache__"}


def event(root: str) -> dict[str, Any]:
    """The `deps` event: everything recorded since `install`, for the results cache."""
    root = os.path.abspath(root)
    sites = site_dirs()
    unstable: list[str] = []
    sources: dict[str, str] = {}
    tops: dict[str, set[str]] = {}  # site folder → import names loaded from it
    loaded = sorted(_loaded_files())
    longest_first = sorted(sites, key=len, reverse=True)
    folders: dict[str, tuple[str, str | None]] = {}  # folder → (kind, site folder): ~1,500 modules live in a few hundred
    for path in loaded:
        folder = path.rpartition(os.sep)[0]
        if folder not in folders:
            base = next((s for s in longest_first if path.startswith(s)), None)
            folders[folder] = ("site", base) if base is not None and not path.startswith(OWN_DIR) else (kind(path, sites), None)
        owner, base = folders[folder]
        if base is not None:
            tops.setdefault(base, set()).add(_top_level(path[len(base) :]))
        elif owner == "source" and os.path.isfile(path):
            text = overlay.overridden(path)
            sha = sha256(text.encode("utf-8")) if text is not None else _compiled.get(path)
            if sha is None:  # an extension module or a .pyc: hashed now, trusted only if it did not change since the job began
                sha = _file_sha(path)
                if sha is None or _changed_since_start(path):
                    unstable.append(path)
            if sha is not None:
                sources[path] = sha
    dists: dict[str, dict[str, Any]] = {}  # dist-info folder → the distribution
    for base in sites:  # editable installs whose files the job imported (they are sources, by content, too)
        for info, _, editable in _distributions(base):
            if editable is not None and any(p.startswith(editable) for p in sources):
                dists[info] = _distribution(info, editable)
    for base, names in sorted(tops.items()):
        owned: set[str] = set()
        for info, provides, editable in _distributions(base):
            if provides & names:
                dists[info] = _distribution(info, editable)
                owned |= provides & names
        for name in sorted(names - owned):  # a module no distribution installed: its files by content
            for path in (p for p in loaded if p.startswith(os.path.join(base, name)) and kind(p, sites) == "site"):
                if (sha := _file_sha(path)) is not None:
                    sources[path] = sha
    data: dict[str, dict[str, Any]] = {}
    for path in sorted(_opened):
        if path in sources or overlay.overridden(path) is not None or not _in_project(path, root) or not os.path.isfile(path):
            continue
        fingerprint = _data_fingerprint(path)
        if fingerprint is None or _changed_since_start(path):
            unstable.append(path)
        if fingerprint is not None:
            data[path] = fingerprint
    absent, pth = _absent(sites, sources, unstable)
    torch = sys.modules.get("torch")
    out: dict[str, Any] = {
        "event": "deps",
        "python": sys.executable,
        "python_version": sys.version,
        "torch": str(getattr(torch, "__version__", "")) if torch is not None else None,
        "sources": sources,
        "distributions": [dists[k] for k in sorted(dists)],
        "data": data,
        "env": {k: v for k, v in sorted(_env.items()) if k not in OWN_ENV},
        "absent": absent,
        "pth": pth,
    }
    if unstable:
        out["unstable"] = sorted(set(unstable))
    return out
