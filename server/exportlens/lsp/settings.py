"""The server's settings: the `exportlens` section of the client's configuration.

Values come from `initializationOptions.settings`, then `workspace/configuration` and
`workspace/didChangeConfiguration`. Anything malformed falls back to the default rather than
failing: a typo in settings.json must not stop the server.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SECTION = "exportlens"
RUN_ON_SAVE = "onSave"
RUN_MANUAL = "manual"
VERIFY_ON, VERIFY_OFF = "on", "off"
UNHELPFUL_LAST, UNHELPFUL_HIDE = "last", "hide"
# Settings package.json declares that only the client reads: VS Code's language client logs the
# LSP traffic itself for `trace.server`; the server gets nothing to do with it.
CLIENT_ONLY_KEYS = frozenset({"trace.server"})


@dataclass
class Settings:
    interpreter: str | None = None  # python for the worker; None = the server's own
    timeout_seconds: float = 120.0
    run: str = RUN_ON_SAVE
    targets: list[str] = field(default_factory=list)  # extra "path/file.py:factory" targets
    compile_backend: str = "eager"  # torch.compile targets: eager | aot_eager | inductor
    draft_export: str = "auto"  # auto: draft export only where the user's export failed or calls custom ops; always
    jobs: int | None = None  # jobs at once (files saved together queue FIFO); None = one per core
    verify_fixes: str = VERIFY_ON  # re-run each fix in memory after publishing, and say what it did
    verify_budget_seconds: float = 30.0  # for all fixes of one file's run
    unhelpful_fixes: str = UNHELPFUL_LAST  # fixes verified as no-effect/breaks: listed last, or hidden

    @classmethod
    def parse(cls, raw: Any, base: Settings | None = None) -> Settings:
        """Settings from a JSON object; accepts the section itself or `{"exportlens": {...}}`."""
        out = Settings(**vars(base)) if base is not None else Settings()
        if not isinstance(raw, dict):
            return out
        if isinstance(raw.get(SECTION), dict):
            raw = raw[SECTION]
        interp = raw.get("interpreter", out.interpreter)
        if isinstance(interp, list):  # VS Code's python.interpreter style: ["path", *args]
            interp = interp[0] if interp and isinstance(interp[0], str) else None
        out.interpreter = interp.strip() or None if isinstance(interp, str) else None
        out.timeout_seconds = _seconds(raw.get("timeoutSeconds"), 86400, out.timeout_seconds)
        run = raw.get("run", out.run)
        if run in (RUN_ON_SAVE, RUN_MANUAL):
            out.run = run
        backend = raw.get("compileBackend", out.compile_backend)
        if backend in ("eager", "aot_eager", "inductor"):
            out.compile_backend = backend
        draft = raw.get("draftExport", out.draft_export)
        if draft in ("auto", "always"):
            out.draft_export = draft
        jobs = raw.get("jobs", out.jobs)
        if jobs is None or isinstance(jobs, int) and not isinstance(jobs, bool) and 1 <= jobs <= 256:
            out.jobs = jobs
        verify = raw.get("verifyFixes", out.verify_fixes)
        if verify in (VERIFY_ON, VERIFY_OFF):
            out.verify_fixes = verify
        out.verify_budget_seconds = _seconds(raw.get("verifyBudgetSeconds"), 3600, out.verify_budget_seconds)
        unhelpful = raw.get("unhelpfulFixes", out.unhelpful_fixes)
        if unhelpful in (UNHELPFUL_LAST, UNHELPFUL_HIDE):
            out.unhelpful_fixes = unhelpful
        targets = raw.get("targets", out.targets)
        if isinstance(targets, list):
            out.targets = [t for t in targets if isinstance(t, str)]
        return out


def _seconds(value: object, most: float, current: float) -> float:
    """A number of seconds in (0, most], else the current value (a bad setting keeps the last good one)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= most:
        return float(value)
    return current
