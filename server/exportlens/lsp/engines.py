"""The engine for the editor's current settings: a new one when they change, never one changed in place.

The client's `exportlens` settings and the workspace's `[tool.exportlens]` are resolved by the one
precedence of every front end (`EngineSettings.resolved`: a setting left at its default does not
override pyproject.toml). An engine is never mutated: when the resolved settings differ, a new
engine is built. For the same interpreter it shares the old one's worker (`Engine.with_settings`:
a cold worker is seconds of importing torch); another interpreter gets a new worker, and the old
one is closed (a run in flight on it ends as superseded, `superseded`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any

from lsprotocol import types

from exportlens import project
from exportlens.engine import Engine, EngineSettings
from exportlens.lsp.host import Host
from exportlens.lsp.settings import Settings

TRACE_CACHE = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "exportlens", "traces")


class Engines:
    def __init__(self, ls: Host) -> None:
        self.ls = ls
        self._engine: Engine | None = None
        self._closing: list[asyncio.Task[None]] = []  # engines of an interpreter no longer wanted, closing

    def current(self) -> Engine:
        """The engine for the current settings (a new interpreter means a new worker)."""
        want = self.wanted()
        engine = self._engine
        if engine is not None and engine.settings == want:
            return engine
        if engine is not None and engine.settings.python == want.python:
            self._engine = engine.with_settings(want)
        else:
            if engine is not None:
                self._closing.append(asyncio.ensure_future(engine.close()))
            self._engine = Engine(want, log=self.ls.log_worker, warn=self._warner())
        return self._engine

    def _warner(self) -> Callable[[str], None]:
        """The results cache's warning (a folder it cannot write) in the editor's log: told from the thread that stores."""
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # built outside the server's loop (a unit test): said where it is told
            loop = None

        def warn(message: str) -> None:
            if loop is None:
                self.ls.log(message, types.MessageType.Warning)
            else:
                loop.call_soon_threadsafe(self.ls.log, message, types.MessageType.Warning)

        return warn

    def wanted(self) -> EngineSettings:
        """The engine settings the editor's settings and the project's pyproject.toml resolve to."""
        s, default = self.ls.settings, Settings()
        jobs: dict[str, Any] = {"jobs": s.jobs} if s.jobs is not None else {}
        return EngineSettings.resolved(  # a client setting left at its default does not override pyproject.toml
            self.project_config(),
            python=s.interpreter,
            timeout=s.timeout_seconds if s.timeout_seconds != default.timeout_seconds else None,
            compile_backend=s.compile_backend if s.compile_backend != default.compile_backend else None,
            draft=s.draft_export if s.draft_export != default.draft_export else None,
            default_timeout=default.timeout_seconds,
            knob="the setting exportlens.timeoutSeconds",
            extra_targets=list(s.targets),
            trace_dir=TRACE_CACHE,  # draft export writes its trace anyway: keep it where hover links it
            **jobs,
        )

    def superseded(self, engine: Engine) -> bool:
        """Whether a run on `engine` ran on a worker that is no longer the current one (the
        interpreter changed under it: its worker was closed, a "crash" that is none)."""
        return self._engine is None or engine.worker is not self._engine.worker

    def project_config(self) -> project.ProjectConfig:
        """`[tool.exportlens]` of the workspace's project (the first folder)."""
        try:
            root = self.ls.workspace.root_path
        except RuntimeError:
            root = None
        return project.load_config(project.find_root(root)) if root else project.ProjectConfig(root="")

    async def warm_up(self) -> None:
        """Start the worker (it imports torch) so the first run does not pay for it."""
        try:
            info = await self.current().start()
            self.ls.log(f"worker ready: torch {info.get('torch', '?')}")
            self.ls.tell_unsupported(info.get("unsupported"))
        except Exception as exc:  # reported as a diagnostic when a run needs it
            if self._engine is not None and not self._engine.worker.closed:  # not just replaced by a newer one
                self.ls.log(f"worker did not start: {exc}", types.MessageType.Warning)

    async def close(self) -> None:
        if self._engine is not None:
            await self._engine.close()
        for t in self._closing:
            await asyncio.gather(t, return_exceptions=True)
