"""Jupyter notebooks over LSP 3.17 notebook sync: which editor URI shows which cell.

Everything else a notebook has is what a .py file has (runs, publishing, quick fixes and their
verification, hover, lenses), because the engine checks a notebook as a document whose positions
are its cells (`document.py`, `notebook.Cells`) and the features address a cell as a place
(`model.place`: `nb.ipynb:cell N`, N over ALL cells as the file counts them). This module only
keeps `ls.open_docs` right for those places: each → the URI of the synced cell that stands for it.
The client syncs cells as text documents, possibly only the code cells, so a cell index is matched
to a synced cell by position when the client syncs every cell, else by the order of the code
cells (the kinds come from the notebook the last run analysed, else from the file).
"""

from __future__ import annotations

from lsprotocol import types

from exportlens import notebook
from exportlens.document import Document
from exportlens.lsp.convert import path_of
from exportlens.lsp.host import Host
from exportlens.model import place, split_place


class Notebooks:
    def __init__(self, ls: Host) -> None:
        self.ls = ls
        self.kinds: dict[str, list[str]] = {}  # notebook path → each cell's kind, by index

    def opened(self, uri: str) -> str | None:
        """A notebook was opened: its cells get their places; answers its path."""
        path = path_of(uri)
        if path is not None:
            self.ls.open_docs[path] = uri
            self.track(self.ls.runs.plans.document_of(path))
        return path

    def changed(self, uri: str) -> None:
        """Cells were added, removed or moved: match them again."""
        path = path_of(uri)
        if path is not None:
            self._register(path)

    def closed(self, uri: str) -> None:
        path = path_of(uri)
        if path is not None:
            self._unregister(path)
            self.ls.open_docs.pop(path, None)
            self.kinds.pop(path, None)

    def track(self, doc: Document) -> None:
        """A document was analysed: if it is a notebook, its cells (as they were) place its results."""
        if isinstance(doc.mapper, notebook.Cells):
            self.kinds[doc.path] = [c.kind for c in doc.mapper.cells]
            self._register(doc.path)

    def _unregister(self, path: str) -> None:
        for key in [k for k in self.ls.open_docs if split_place(k)[1] is not None and split_place(k)[0] == path]:
            del self.ls.open_docs[key]

    def _register(self, path: str) -> None:
        uri = self.ls.open_docs.get(path)
        try:
            doc = self.ls.workspace.get_notebook_document(notebook_uri=uri) if uri else None
        except RuntimeError:
            doc = None
        self._unregister(path)
        if doc is not None:
            for index, cell_uri in self.cell_uris(doc, self.kinds.get(path, [])).items():
                self.ls.open_docs[place(path, index)] = cell_uri

    @staticmethod
    def cell_uris(doc: types.NotebookDocument, kinds: list[str]) -> dict[int, str]:
        """Cell index → the URI of the synced cell that stands for it."""
        synced = list(doc.cells)
        if len(synced) == len(kinds):
            return {i: c.document for i, c in enumerate(synced)}
        code_cells = [c.document for c in synced if c.kind == types.NotebookCellKind.Code]
        disk_code = [i for i, k in enumerate(kinds) if k == "code"]
        return dict(zip(disk_code, code_cells, strict=False))
