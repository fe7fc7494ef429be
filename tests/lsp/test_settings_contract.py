"""Every setting is written once (`options.py`), and package.json, the client and the server agree with it.

package.json's declaration of each setting (type, default, bounds, enum, an array's item pattern)
must be its record in `options.py`; the client's copy (`extension/lib/serverFacts.ts`) must be
what `tools/server_facts.py` generates from the records; and the server's parser must take every
declared setting, accept exactly its enum and its bounds, and start from its defaults. The
client's side (every setting reaches the payload, and the client clamps and checks by the same
bounds and enums as package.json) is tests/extension/settingsReachServer.test.ts.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import math
from pathlib import Path
from typing import Any

import pytest

from exportlens.lsp.settings import CLIENT_ONLY_KEYS, SECTION, Settings
from exportlens.options import BY_KEY, OPTIONS, Option

pytestmark = pytest.mark.quick

ROOT = Path(__file__).resolve().parents[2]
PROPERTIES: dict[str, dict[str, Any]] = json.loads((ROOT / "package.json").read_text())["contributes"]["configuration"]["properties"]
PREFIX = SECTION + "."
DECLARED = [o for o in OPTIONS if o.declared]
SERVER = [o for o in DECLARED if not o.client_only]
FIELD = {  # the server's field of each setting it reads
    "interpreter": "interpreter",
    "run": "run",
    "timeoutSeconds": "timeout_seconds",
    "draftExport": "draft_export",
    "compileBackend": "compile_backend",
    "verifyFixes": "verify_fixes",
    "verifyBudgetSeconds": "verify_budget_seconds",
    "unhelpfulFixes": "unhelpful_fixes",
    "targets": "targets",
    "jobs": "jobs",
}


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
    if kind == "array" and prop.get("items", {}).get("pattern") == BY_KEY["targets"].items_pattern:
        return ["models/net.py:make_model"]
    raise AssertionError(f"{key}: no sample value for type {kind}; extend other_value()")


def nested(key: str, value: Any) -> dict[str, Any]:
    """`trace.server` → {"trace": {"server": value}}, as the client's payload nests dotted keys."""
    head, _, rest = key.partition(".")
    return {head: nested(rest, value) if rest else value}


def declared_schema(prop: dict[str, Any]) -> dict[str, Any]:
    """What of a package.json declaration `options.py` owns (descriptions and scopes are the manifest's)."""
    out = {k: prop[k] for k in ("type", "default", "enum", "minimum", "maximum") if k in prop}
    if "items" in prop:
        out["items"] = {k: prop["items"][k] for k in ("type", "pattern") if k in prop["items"]}
    return out


def test_package_json_declares_exactly_the_declared_options() -> None:
    assert all(k.startswith(PREFIX) for k in PROPERTIES)
    assert sorted(k[len(PREFIX) :] for k in PROPERTIES) == sorted(o.key for o in DECLARED)
    assert CLIENT_ONLY_KEYS <= {k[len(PREFIX) :] for k in PROPERTIES}


@pytest.mark.parametrize("option", DECLARED, ids=lambda o: o.key)
def test_package_json_declares_each_setting_as_its_record_says(option: Option) -> None:
    """A default, a bound or an enum that differs between package.json and options.py fails here."""
    assert declared_schema(PROPERTIES[PREFIX + option.key]) == option.schema()


def test_the_clients_copy_is_generated_from_the_records() -> None:
    spec = importlib.util.spec_from_file_location("server_facts", ROOT / "tools" / "server_facts.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert tool.CLIENT.read_text(encoding="utf-8") == tool.client_facts(), "extension/lib/serverFacts.ts is stale: run tools/server_facts.py"


def test_the_servers_defaults_are_the_records() -> None:
    assert sorted(FIELD) == sorted(o.key for o in OPTIONS if not o.client_only)
    defaults = Settings()
    for key, name in FIELD.items():
        want = BY_KEY[key].default
        assert getattr(defaults, name) == (None if key == "interpreter" and want == "" else list(want) if isinstance(want, tuple) else want), key


@pytest.mark.parametrize("option", [o for o in OPTIONS if o.enum is not None and not o.client_only], ids=lambda o: o.key)
def test_the_server_takes_exactly_each_enum(option: Option) -> None:
    name = FIELD[option.key]
    assert option.enum is not None
    for value in option.enum:
        assert getattr(Settings.parse({option.key: value}), name) == value
    start = Settings.parse({option.key: option.enum[-1]})
    others = {v for o in OPTIONS for v in o.enum or () if v not in option.enum}  # another setting's values
    for bad in ["not-" + option.enum[0], option.enum[0].upper(), "", None, 1, *sorted(others)]:
        assert getattr(Settings.parse({option.key: bad}, start), name) == option.enum[-1], bad  # kept, not taken


def test_the_servers_parser_spells_no_enum_value_or_bound() -> None:
    """The parser takes each enum and bound from its record: one spelled in `lsp/settings.py` is a
    second home that can drift from options.py (and so from the client and package.json)."""
    tree = ast.parse((ROOT / "server" / "exportlens" / "lsp" / "settings.py").read_text(encoding="utf-8"))
    spelled = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and not isinstance(n.value, bool)}
    values = {v for o in OPTIONS for v in o.enum or ()} | {o.maximum for o in OPTIONS if o.maximum is not None}
    assert sorted(map(str, spelled & values)) == []


@pytest.mark.parametrize("option", [o for o in OPTIONS if o.maximum is not None], ids=lambda o: o.key)
def test_the_server_takes_exactly_each_range(option: Option) -> None:
    name = FIELD[option.key]
    assert option.minimum is not None and option.maximum is not None
    inside = int(option.minimum) + 1
    start = Settings.parse({option.key: inside})
    assert getattr(start, name) == inside
    for edge in (option.minimum, option.maximum):
        value = int(edge) if option.type == "integer" else edge
        assert getattr(Settings.parse({option.key: value}, start), name) == value
    outside = [option.maximum + 1, option.minimum - 1, option.minimum - 0.5] + ([math.nan, math.inf] if option.type == "number" else [])
    for bad in outside:
        assert getattr(Settings.parse({option.key: bad}, start), name) == inside, bad  # the last good value stays


@pytest.mark.parametrize("key", [o.key for o in SERVER])
def test_server_parses_every_declared_setting(key: str) -> None:
    prop = PROPERTIES[PREFIX + key]
    defaults = {o.key: PROPERTIES[PREFIX + o.key]["default"] for o in SERVER}
    base = Settings.parse(defaults)
    assert base == Settings(), "package.json's defaults are the server's defaults"
    changed = Settings.parse({**defaults, **nested(key, other_value(key, prop))})
    assert changed != base, f"the server ignores {PREFIX}{key}"
    # the same through the section-wrapped form workspace/didChangeConfiguration uses
    assert Settings.parse({SECTION: {**defaults, **nested(key, other_value(key, prop))}}) == changed
