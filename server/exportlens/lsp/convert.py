"""Between the engine's JSON shapes (`exportlens.model`) and lsprotocol types, and URIs ↔ paths."""

from __future__ import annotations

import hashlib
import os
from typing import Any

from lsprotocol import types
from pygls import uris

from exportlens.model import Diagnostic, Range

SOURCE = "exportlens"


def path_of(uri: str) -> str | None:
    """The normalised file path of a `file:` URI, None for any other scheme."""
    if not uri.startswith("file:"):
        return None
    try:
        path = uris.to_fs_path(uri)
    except Exception:  # a malformed URI is just not ours
        return None
    return os.path.normpath(path) if path else None


def uri_of(path: str) -> str:
    return uris.from_fs_path(path) or f"file://{path}"


def text_hash(text: str) -> str:
    """Identifies the exact text a diagnostic was computed against (code actions need it)."""
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def lsp_range(rng: Range) -> types.Range:
    return types.Range(
        start=types.Position(line=rng.start.line, character=rng.start.character), end=types.Position(line=rng.end.line, character=rng.end.character)
    )


def model_range(rng: types.Range) -> Range:
    return Range.of(rng.start.line, rng.start.character, rng.end.line, rng.end.character)


def doc_url(code: str, data: dict[str, Any] | None = None) -> str | None:
    """The page for this finding: its own (a graph break's gbNNNN page) or its code's."""
    own = (data or {}).get("url")
    if isinstance(own, str) and own.startswith("https://"):
        return own
    from exportlens import codes

    return codes.doc_url(code)


def to_lsp(diag: Diagnostic, *, text_sha: str | None, owner: str, partial: bool = False, cached: dict[str, Any] | None = None) -> types.Diagnostic:
    """An LSP diagnostic; `data` holds what code actions and hover need to rebuild the finding,
    `partial` when the run is still going (the user's export failed; draft export is finding the
    rest), and `cached` the run a result from the results cache came from (`lsp/last_results.py`)."""
    url = doc_url(diag.code, diag.data)
    related = [
        types.DiagnosticRelatedInformation(location=types.Location(uri=uri_of(r.file), range=lsp_range(r.range)), message=r.message) for r in diag.related
    ]
    data: dict[str, Any] = {"diagnostic": diag.to_json(with_data=True), "sha": text_sha, "owner": owner}
    if partial:
        data["partial"] = True
    if cached is not None:
        data["cached"] = dict(cached)
    return types.Diagnostic(
        range=lsp_range(diag.range),
        message=diag.message,
        severity=types.DiagnosticSeverity(diag.severity) if diag.severity in (1, 2, 3, 4) else types.DiagnosticSeverity.Error,
        code=diag.code,
        code_description=types.CodeDescription(href=url) if url else None,
        source=SOURCE,
        related_information=related or None,
        data=data,
    )


def from_lsp_data(data: Any) -> tuple[Diagnostic, str | None, str] | None:
    """The engine diagnostic, the text hash and the owner (whose run found it) stored in an LSP
    diagnostic's `data`, if valid."""
    if not isinstance(data, dict) or not isinstance(data.get("diagnostic"), dict):
        return None
    try:
        diag = Diagnostic.from_json(data["diagnostic"])
    except (KeyError, TypeError, ValueError):
        return None
    sha, owner = data.get("sha"), data.get("owner")
    return diag, sha if isinstance(sha, str) else None, owner if isinstance(owner, str) else diag.file
