"""Every setting package.json declares is understood by the server's settings parser.

The client's side of the contract (every setting reaches the payload) is
tests/extension/settingsReachServer.test.ts; this is the server's side: a non-default value of
each declared key, sent the way the client sends it, changes the parsed `Settings`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from exportlens.lsp.settings import CLIENT_ONLY_KEYS, SECTION, Settings

ROOT = Path(__file__).resolve().parents[2]
PROPERTIES: dict[str, dict[str, Any]] = json.loads((ROOT / "package.json").read_text())["contributes"]["configuration"]["properties"]
PREFIX = SECTION + "."


def other_value(key: str, prop: dict[str, Any]) -> Any:
    """A valid value for the setting that differs from its default."""
    if "enum" in prop:
        return next(v for v in prop["enum"] if v != prop["default"])
    kind = prop["type"]
    if kind in ("number", "integer"):
        return prop["default"] + 1 if prop["default"] + 1 <= prop.get("maximum", float("inf")) else prop["default"] - 1
    if kind == "boolean":
        return not prop["default"]
    if kind == "string":
        return "/opt/other/bin/python3"
    if kind == "array" and prop.get("items", {}).get("pattern") == "^[^:]+\\.py:[A-Za-z_][A-Za-z0-9_.]*$":
        return ["models/net.py:make_model"]
    raise AssertionError(f"{key}: no sample value for type {kind}; extend other_value()")


def nested(key: str, value: Any) -> dict[str, Any]:
    """`trace.server` → {"trace": {"server": value}}, as the client's payload nests dotted keys."""
    head, _, rest = key.partition(".")
    return {head: nested(rest, value) if rest else value}


def test_every_key_is_a_package_json_setting() -> None:
    assert all(k.startswith(PREFIX) for k in PROPERTIES)
    assert CLIENT_ONLY_KEYS <= {k[len(PREFIX) :] for k in PROPERTIES}


@pytest.mark.parametrize("key", sorted(k[len(PREFIX) :] for k in PROPERTIES if k[len(PREFIX) :] not in CLIENT_ONLY_KEYS))
def test_server_parses_every_declared_setting(key: str) -> None:
    prop = PROPERTIES[PREFIX + key]
    defaults = {k[len(PREFIX) :]: p["default"] for k, p in PROPERTIES.items() if k[len(PREFIX) :] not in CLIENT_ONLY_KEYS}
    base = Settings.parse(defaults)
    assert base == Settings(), "package.json's defaults are the server's defaults"
    changed = Settings.parse({**defaults, **nested(key, other_value(key, prop))})
    assert changed != base, f"the server ignores {PREFIX}{key}"
    # the same through the section-wrapped form workspace/didChangeConfiguration uses
    assert Settings.parse({SECTION: {**defaults, **nested(key, other_value(key, prop))}}) == changed
