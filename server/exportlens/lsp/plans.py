"""Documents and their plans as the editor has them, cached: what is worth running, and which owners.

Nothing here runs user code: a plan is the engine's static look at a document (`Engine.plan`),
cached by its text's hash so a 20,000-line file is parsed once per version, not once per CodeLens
request. Nothing here knows what kind of document it plans: the document's mapper does
(`document.py`).
"""

from __future__ import annotations

import os
from typing import Any

from lsprotocol import types

from exportlens import document, project
from exportlens.document import Document
from exportlens.lsp.convert import path_of, text_hash
from exportlens.lsp.engines import Engines
from exportlens.lsp.host import Host
from exportlens.lsp.publisher import Publisher
from exportlens.targets import FileTargets


def _config_stamp(path: str) -> float:
    """When the project's pyproject.toml last changed (targets may be declared there)."""
    try:
        return os.stat(os.path.join(project.find_root(path), "pyproject.toml")).st_mtime
    except OSError:
        return 0.0


class Plans:
    def __init__(self, ls: Host, engines: Engines, publisher: Publisher) -> None:
        self.ls, self.engines, self.publisher = ls, engines, publisher
        self._plans: dict[tuple[Any, ...], tuple[FileTargets | None, bool]] = {}  # (path, text hash, …) → plan
        self._loaded: dict[str, tuple[tuple[int, int], Document]] = {}  # path → (its stat, the document read from disk)

    def document(self, path: str, text: str | None = None) -> Document:
        """The document of `path` as the editor has it: the open buffer (`text`), else the disk's
        (a notebook is read once per change on disk, not once per request)."""
        if text is None:
            text, _ = self.publisher.current_text(path)
        return document.load(path, text) if text is not None else self.disk_document(path)

    def disk_document(self, path: str) -> Document:
        """The document of `path` as it is on disk, loaded again only when the file changed."""
        try:
            st = os.stat(path)
            stamp = (st.st_mtime_ns, st.st_size)
        except OSError:
            return document.load(path)
        cached = self._loaded.get(path)
        if cached is None or cached[0] != stamp:
            if len(self._loaded) > 64:
                self._loaded.clear()
            cached = self._loaded[path] = (stamp, document.load(path))
        return cached[1]

    def document_of(self, owner: str) -> Document:
        """The document `owner`'s last run analysed (its fixes are placed by it), else the current one."""
        res = self.publisher.results.get(owner)
        return res.document if res is not None and res.document is not None else self.document(owner)

    def target_names(self, path: str, text: str | None = None) -> list[str]:
        """Targets of a document, statically (no user code runs), as the document names them."""
        found = self.plan(path, text)[0]
        mapper = self.document(path, text).mapper
        return [mapper.text(t.name) for t in found.targets] if found is not None else []

    def worth_running(self, path: str, text: str | None = None) -> bool:
        """A file with targets, or one Python could not compile (binary, undecodable, a syntax error,
        nested too deeply): running that one costs no worker job and publishes why."""
        found, unreadable = self.plan(path, text)
        return bool(found is not None and found.targets) or unreadable

    def plan(self, path: str, text: str | None = None) -> tuple[FileTargets | None, bool]:
        """(targets, unreadable) of a file, cached by its text's hash (and the settings that name
        targets): a 20,000-line file is parsed once per version, not once per CodeLens request."""
        doc = self.document(path, text)
        key = (path, text_hash(doc.text), tuple(self.ls.settings.targets), _config_stamp(path)) if doc.text is not None else None
        if key is not None and key in self._plans:
            return self._plans[key]
        try:
            found = self.engines.current().plan(doc).targets
        except Exception as exc:
            self.ls.log(f"cannot plan {path}: {exc}", types.MessageType.Warning)
            return None, False
        answer = (found, found is None and os.path.exists(path))  # found is None: Python could not compile it
        if key is not None:
            if len(self._plans) > 256:
                self._plans.clear()
            self._plans[key] = answer
        return answer

    def owners_for_save(self, path: str) -> list[str]:
        """Files to run when `path` is saved: itself if it has targets, and every owner whose
        last result placed something in it or whose run imported or read it (a helper module).
        An owner whose run depends on nothing that changed is then answered by the results cache."""
        results = self.publisher.results
        owners = [path] if self.worth_running(path) or path in results else []
        owners += [o for o, r in results.items() if o != path and (path in r.files() or path in r.depends)]
        return owners

    def workspace_owners(self) -> list[str]:
        """Every file of the workspace's folders that has a target (the "run on all" command)."""
        roots: list[str] = []
        try:
            ws = self.ls.workspace
            for folder in ws.folders.values():
                if (p := path_of(folder.uri)) is not None:
                    roots.append(p)
            if not roots and ws.root_path:
                roots.append(ws.root_path)
        except RuntimeError:
            pass
        files: list[str] = []
        for root in roots:
            if os.path.isdir(root):
                cfg = project.load_config(project.find_root(root))
                files.extend(f for f in project.python_files(root, cfg.exclude, cfg.root) if f not in files)
        return [f for f in files if self.target_names(f)]
