"""The server's settings: the `exportlens` section of the client's configuration.

Values come from `initializationOptions.settings`, then `workspace/configuration` and
`workspace/didChangeConfiguration`. Anything malformed (a wrong type, a value outside its enum or
bounds) keeps the last good value rather than failing: a typo in settings.json must not stop the
server. Each setting's default, bounds and enum are its record in `options.py`, the one home the
client's copy and package.json are checked against.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from exportlens.options import BY_KEY, OPTIONS

SECTION = "exportlens"
RUN_ON_SAVE, RUN_MANUAL = BY_KEY["run"].enum or ()
VERIFY_ON, VERIFY_OFF = BY_KEY["verifyFixes"].enum or ()
UNHELPFUL_LAST, UNHELPFUL_HIDE = BY_KEY["unhelpfulFixes"].enum or ()
# Settings package.json declares that only the client reads (VS Code's language client logs the
# LSP traffic itself for `trace.server`): the server gets nothing to do with them.
CLIENT_ONLY_KEYS = frozenset(o.key for o in OPTIONS if o.client_only)


def _default(key: str) -> Any:
    return BY_KEY[key].default


@dataclass
class Settings:
    interpreter: str | None = None  # python for the worker; None = the server's own
    timeout_seconds: float = _default("timeoutSeconds")
    run: str = _default("run")
    targets: list[str] = field(default_factory=list)  # extra "path/file.py:factory" targets
    compile_backend: str = _default("compileBackend")  # torch.compile targets (options.COMPILE_BACKENDS)
    draft_export: str = _default("draftExport")  # auto: draft export only where the user's export failed or calls custom ops; always
    jobs: int | None = _default("jobs")  # jobs at once (files saved together queue FIFO); None = one per core
    verify_fixes: str = _default("verifyFixes")  # re-run each fix in memory after publishing, and say what it did
    verify_budget_seconds: float = _default("verifyBudgetSeconds")  # for all fixes of one file's run
    unhelpful_fixes: str = _default("unhelpfulFixes")  # fixes verified as no-effect/breaks: listed last, or hidden

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
        out.timeout_seconds = float(_valid(raw, "timeoutSeconds", out.timeout_seconds))
        out.run = _valid(raw, "run", out.run)
        out.compile_backend = _valid(raw, "compileBackend", out.compile_backend)
        out.draft_export = _valid(raw, "draftExport", out.draft_export)
        out.jobs = _valid(raw, "jobs", out.jobs)
        out.verify_fixes = _valid(raw, "verifyFixes", out.verify_fixes)
        out.verify_budget_seconds = float(_valid(raw, "verifyBudgetSeconds", out.verify_budget_seconds))
        out.unhelpful_fixes = _valid(raw, "unhelpfulFixes", out.unhelpful_fixes)
        targets = raw.get("targets", out.targets)
        if isinstance(targets, list):
            out.targets = [t for t in targets if isinstance(t, str)]
        return out


def _valid(raw: dict[str, Any], key: str, current: Any) -> Any:
    """`raw[key]` if its record (`options.py`) allows it (its enum, its type and bounds; an absent
    optional integer is None), else the current value (a bad setting keeps the last good one)."""
    if key not in raw:
        return current
    value, option = raw[key], BY_KEY[key]
    if option.enum is not None:
        return value if value in option.enum else current
    if value is None and option.default is None:
        return None
    if not isinstance(value, int if option.type == "integer" else (int, float)) or isinstance(value, bool):
        return current
    lowest = option.minimum if option.minimum is not None else -math.inf
    highest = option.maximum if option.maximum is not None else math.inf
    return value if lowest <= value <= highest else current  # NaN is in no range
