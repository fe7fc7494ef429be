"""The settings' facts, written once: each editor setting's type, default, bounds and enum, and the
values the CLI, `[tool.exportlens]` and the engine share with it.

`lsp/settings.py` parses the client's `exportlens` section by these records; the CLI's choices,
pyproject.toml's checks (`project.py`) and the engine's defaults read the same constants. The
client's copy (`extension/lib/serverFacts.ts`) is generated from here by
`tools/server_facts.py`, and `package.json`'s declarations are checked against these records
(`tests/lsp/test_settings_contract.py`), so the three cannot drift apart. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

COMPILE_BACKENDS = ("eager", "aot_eager", "inductor")  # torch.compile targets' backend; graph breaks are the same with each
DRAFT_MODES = ("auto", "always")  # when draft export runs after the user's plain export (engine.EngineSettings.draft)
DEFAULT_TIMEOUT = 120.0  # seconds one job may take: the editor's, the pytest plugin's and the engine's default
# A day: the most a job may be given, from the editor or pyproject.toml alike (a large model's
# draft export on a CPU takes many minutes; a day catches a typo, not a slow model).
MAX_TIMEOUT = 86400.0
TARGET_PATTERN = r"^[^:]+\.py:[A-Za-z_][A-Za-z0-9_.]*$"  # an extra target, "path/file.py:factory"


@dataclass(frozen=True)
class Option:
    """One setting of the `exportlens` section, as package.json declares it (its JSON schema)."""

    key: str  # without the `exportlens.` prefix
    type: str  # "string", "number", "integer" or "array"
    default: Any
    enum: tuple[str, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    items_pattern: str | None = None  # an array's items must match it
    declared: bool = True  # False: the server reads it, no client declares it
    client_only: bool = False  # True: only the client reads it (the server gets nothing to do with it)

    def schema(self) -> dict[str, Any]:
        """The keys package.json's declaration of this setting must have (descriptions aside)."""
        out: dict[str, Any] = {"type": self.type, "default": list(self.default) if isinstance(self.default, tuple) else self.default}
        if self.enum is not None:
            out["enum"] = list(self.enum)
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        if self.items_pattern is not None:
            out["items"] = {"type": "string", "pattern": self.items_pattern}
        return out


OPTIONS: tuple[Option, ...] = (
    Option("interpreter", "string", ""),  # python for the worker; "" = the server's own
    Option("run", "string", "onSave", enum=("onSave", "manual")),
    Option("timeoutSeconds", "number", DEFAULT_TIMEOUT, minimum=1, maximum=MAX_TIMEOUT),
    Option("draftExport", "string", DRAFT_MODES[0], enum=DRAFT_MODES),
    Option("compileBackend", "string", COMPILE_BACKENDS[0], enum=COMPILE_BACKENDS),
    Option("verifyFixes", "string", "on", enum=("on", "off")),  # re-run each fix in memory after publishing
    Option("verifyBudgetSeconds", "number", 30.0, minimum=1, maximum=3600),  # for all fixes of one file's run
    Option("unhelpfulFixes", "string", "last", enum=("last", "hide")),  # fixes verified as no-effect/breaks
    Option("targets", "array", (), items_pattern=TARGET_PATTERN),
    # VS Code's language client logs the LSP traffic itself for `trace.server`
    Option("trace.server", "string", "off", enum=("off", "messages", "verbose"), client_only=True),
    Option("jobs", "integer", None, minimum=1, maximum=256, declared=False),  # jobs at once; None = one per core
)
BY_KEY: dict[str, Option] = {o.key: o for o in OPTIONS}
