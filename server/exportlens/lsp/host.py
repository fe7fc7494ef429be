"""What the LSP features need from the server, as protocols: no feature imports `server`.

`Runs` and `Actions` are handed the server as a `Host`; the server satisfies these protocols
(mypy checks it where it passes itself), so the feature modules depend on this small contract
and never on the server module, and there is no import circle.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from lsprotocol import types
from pygls.progress import Progress
from pygls.workspace import Workspace

from exportlens.document import Document
from exportlens.engine import Engine
from exportlens.lsp.settings import Settings
from exportlens.model import Diagnostic, Fix


class GateView(Protocol):
    """What somebody waits for (`lsp/gate.py`)."""

    @property
    def busy(self) -> bool:
        """A run (or a command that runs targets) is in flight: background work waits."""
        ...

    def foreground(self) -> contextlib.AbstractContextManager[None]:
        """Hold for the length of a command that runs targets: verification stops and waits."""
        ...

    def when_quiet(self, work: Callable[[], None]) -> None:
        """Call `work` once no run has been in flight for a moment (background work)."""
        ...


class EnginesView(Protocol):
    """The engine for the current settings (`lsp/engines.py`)."""

    def current(self) -> Engine: ...


class PublishedView(Protocol):
    """The editor's texts and the published diagnostics (`lsp/publisher.py`)."""

    def current_text(self, path: str) -> tuple[str | None, int | None]: ...

    def diagnostics_in(self, path: str) -> list[tuple[Diagnostic, str | None, str]]: ...

    def analysed_text(self, owner: str, path: str) -> str | None: ...


class PlansView(Protocol):
    """Documents as the editor has them (`lsp/plans.py`)."""

    def document(self, path: str, text: str | None = None) -> Document: ...

    def document_of(self, owner: str) -> Document: ...


class RunsView(Protocol):
    """The runs' parts, as the features see them (`lsp/runs.py`)."""

    @property
    def gate(self) -> GateView: ...

    @property
    def engines(self) -> EnginesView: ...

    @property
    def publisher(self) -> PublishedView: ...

    @property
    def plans(self) -> PlansView: ...


class FixWarmer(Protocol):
    """Computes the quick fixes of fresh diagnostics ahead of the client's request."""

    async def warm(self, paths: list[str]) -> None: ...


class Verifications(Protocol):
    """Verifies a published run's fixes in the background; decorates fixes with the outcomes."""

    def start(self, owner: str, diagnostics: list[Diagnostic], texts: dict[str, str | None], doc: Document) -> None: ...

    def preempt(self) -> None:
        """A run begins: verification in flight stops now and waits for no run to be in flight."""
        ...

    def resume(self) -> None:
        """No run is in flight any more: start what waits."""
        ...

    def fixes(self, diag: Diagnostic, fixes: list[Fix]) -> list[Fix]: ...


class Host(Protocol):
    """The server, as the features see it."""

    settings: Settings
    open_docs: dict[str, str]  # place (`model.place`: a file, a notebook's cell) → the URI the client uses for it
    trusted: bool

    @property
    def workspace(self) -> Workspace: ...

    @property
    def client_capabilities(self) -> types.ClientCapabilities: ...

    @property
    def runs(self) -> RunsView: ...

    @property
    def actions(self) -> FixWarmer: ...

    @property
    def verification(self) -> Verifications: ...

    @property
    def work_done_progress(self) -> Progress: ...

    @property
    def protocol(self) -> Any: ...

    def window_log_message(self, params: types.LogMessageParams) -> None: ...

    def log(self, message: str, kind: types.MessageType = types.MessageType.Log) -> None: ...

    def log_worker(self, line: str) -> None: ...

    def tell_unsupported(self, message: str | None) -> None: ...

    def background(self, coro: Coroutine[Any, Any, Any]) -> Any: ...

    def refresh_code_lens(self) -> None: ...

    def place_of(self, uri: str) -> str | None:
        """The place (`model.place`) a URI shows: a file's path, or the notebook cell it is synced as."""
        ...

    def track(self, doc: Document) -> None:
        """A run just analysed `doc`: its parts (a notebook's cells) get the URIs the editor shows them under."""
        ...

    def text_document_publish_diagnostics(self, params: types.PublishDiagnosticsParams) -> None: ...
