"""SARIF output: schema-valid against the vendored OASIS schema, and exactly the fields GitHub reads.

Reports are built by hand in the `--format json` shape; no torch is needed.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from exportlens.codes import CODES, CodeInfo, doc_url
from exportlens.sarif import SARIF_SCHEMA_URI, github_line_hashes, to_sarif

pytestmark = pytest.mark.quick

SCHEMA_PATH = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"
# The codes shipped so far, in their table order: SARIF rule indices follow it, so a new code goes
# last (it needs no line here; it is in the table).
SHIPPED_CODES = [
    "data-dependent-guard", "missing-fake-kernel", "mismatched-fake-kernel", "guard-added",
    "export-error", "graph-break", "recompile", "tracer-warning", "trace-check-failed",
    "syntax-error", "worker-crashed", "worker-timeout", "target-error", "no-target", "draft-export-crashed",
    "config-error", "deprecated-api", "unused-ignore",
]  # fmt: skip
ALL_CODES = list(CODES)
# RFC 3986: a relative reference whose first segment has no ":", and absolute file URIs.
_URI_CHARS = r"[A-Za-z0-9\-._~%!$&'()*+,;=:@/]"
RELATIVE_URI = re.compile(rf"^(?!/)[^:/]*(/{_URI_CHARS}*)*$")
FILE_URI = re.compile(rf"^file:///{_URI_CHARS}*$")


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def validate(log: dict[str, Any], schema: dict[str, Any]) -> None:
    """Validate with the draft the schema declares (04) and with draft-07, and check URIs.

    jsonschema has no "uri" format checker without extra packages, so URIs are checked here.
    """
    for cls in (jsonschema.Draft4Validator, jsonschema.Draft7Validator):
        errors = sorted(cls(schema).iter_errors(log), key=lambda e: list(e.path))
        assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)
    for uri in _all_uris(log):
        assert RELATIVE_URI.match(uri) or FILE_URI.match(uri), uri


def _all_uris(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["uri"]] if isinstance(node.get("uri"), str) else []
        return found + [u for v in node.values() for u in _all_uris(v)]
    if isinstance(node, list):
        return [u for v in node for u in _all_uris(v)]
    return []


def rng(line: int, ch: int, end_line: int, end_ch: int) -> dict[str, Any]:
    return {"start": {"line": line, "character": ch}, "end": {"line": end_line, "character": end_ch}}


def diag(file: Path, r: dict[str, Any], code: str, severity: int, message: str, **extra: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "file": str(file), "range": r, "severity": severity, "code": code, "message": message,
        "target": "model.py:model", "related": [], "fixes": [],
    }  # fmt: skip
    d.update(extra)
    return d


def report(diagnostics: list[dict[str, Any]], targets: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"version": 1, "torch": "2.13.0+cpu", "targets": targets or [], "diagnostics": diagnostics}


@pytest.fixture()
def project(tmp_path: Path) -> dict[str, Path]:
    """A project root with an ASCII file, a non-ASCII file in a spaced folder, and a file outside."""
    root = tmp_path / "proj"
    (root / "sub dir").mkdir(parents=True)
    model = root / "model.py"
    model.write_text(
        "import torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
        "        n = x.sum().item()\n        if n > 0:\n            return x + 1\n        return x\n",
        encoding="utf-8",
    )
    unicode_file = root / "sub dir" / "modèle ü.py"
    unicode_file.write_text("s = '😀'; y = torch.ops.mylib.op(x)\n", encoding="utf-8")
    outside = tmp_path / "elsewhere" / "helper.py"
    outside.parent.mkdir()
    outside.write_text("def helper(x):\n    return x.nonzero()\n", encoding="utf-8")
    return {"root": root, "model": model, "unicode": unicode_file, "outside": outside}


# -- codes -------------------------------------------------------------------------------------


def test_codes_table_is_complete_and_stable() -> None:
    assert list(CODES)[: len(SHIPPED_CODES)] == SHIPPED_CODES
    for code, info in CODES.items():
        assert isinstance(info, CodeInfo) and info.code == code
        assert info.title and "\n" not in info.title and len(info.title) <= 1024
        assert len(info.help) > 80 and len(info.help) <= 1024  # GitHub's fullDescription limit
        assert info.severity in (1, 2, 3, 4)
    assert CODES["no-target"].severity == 3
    assert CODES["recompile"].severity == 2
    assert CODES["tracer-warning"].severity == 2
    assert CODES["data-dependent-guard"].severity == 1
    assert CODES["unused-ignore"].severity == 4
    with pytest.raises(AttributeError):
        CODES["recompile"].severity = 1  # type: ignore[misc]


def test_doc_urls() -> None:
    assert doc_url("data-dependent-guard") == (
        "https://docs.pytorch.org/docs/stable/user_guide/torch_compiler/compile/dynamic_shapes_troubleshooting_guardon_errors.html"
    )
    assert doc_url("missing-fake-kernel") == ("https://docs.pytorch.org/docs/stable/library.html#torch.library.register_fake")
    assert doc_url("mismatched-fake-kernel") == doc_url("missing-fake-kernel")
    assert doc_url("export-error") == ("https://docs.pytorch.org/docs/stable/user_guide/torch_compiler/export/draft_export.html")
    assert doc_url("recompile") == ("https://docs.pytorch.org/docs/stable/user_guide/torch_compiler/compile/programming_model.recompilation.html")
    assert doc_url("tracer-warning") == "https://docs.pytorch.org/docs/stable/generated/torch.jit.trace.html"
    assert doc_url("worker-timeout") is None
    assert doc_url("not-a-code") is None
    for code in ALL_CODES:
        url = doc_url(code)
        assert url is None or url.startswith("https://")


# -- the vendored schema -----------------------------------------------------------------------


def test_vendored_schema_is_the_complete_published_file(schema: dict[str, Any]) -> None:
    assert SCHEMA_PATH.stat().st_size == 112768
    assert schema["id"] == SARIF_SCHEMA_URI
    assert schema["$schema"] == "http://json-schema.org/draft-04/schema#"
    assert len(schema["definitions"]) == 52
    assert schema["definitions"]["run"]["properties"]["columnKind"]["enum"] == [
        "utf16CodeUnits", "unicodeCodePoints",
    ]  # fmt: skip
    jsonschema.Draft4Validator.check_schema(schema)
    jsonschema.Draft7Validator.check_schema(schema)


def test_schema_rejects_what_it_must(schema: dict[str, Any]) -> None:
    """The validator really bites: a 0 column and an unknown level are both refused."""
    bad = to_sarif(report([]), tool_version="0.1.0", root=None)
    bad["runs"][0]["results"] = [{
        "message": {"text": "x"}, "level": "fatal",
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": "a.py"},
                                            "region": {"startLine": 1, "startColumn": 0}}}],
    }]  # fmt: skip
    errors = list(jsonschema.Draft4Validator(schema).iter_errors(bad))
    messages = " ".join(e.message for e in errors)
    assert "'fatal' is not one of" in messages
    assert "0 is less than the minimum of 1" in messages


# -- translation -------------------------------------------------------------------------------


def test_full_report(project: dict[str, Path], schema: dict[str, Any]) -> None:
    model, uni, outside = project["model"], project["unicode"], project["outside"]
    fix = {
        "title": "Add torch._check(n > 0)",
        "isPreferred": True,
        "edits": [
            {"file": str(model), "range": rng(6, 8, 6, 8), "newText": "torch._check(n > 0)\n        "},
            {"file": str(model), "range": rng(6, 11, 6, 16), "newText": "n >= 1"},
        ],
    }
    second_fix = {
        "title": "Rewrite with torch.cond",
        "isPreferred": False,
        "edits": [{"file": str(outside), "range": rng(1, 11, 1, 22), "newText": "x.nonzero_static(size=4)"}],
    }
    diagnostics = [
        diag(
            model,
            rng(6, 11, 6, 16),
            "data-dependent-guard",
            1,
            "Could not decide n > 0 (n = x.sum().item()); assumed True.",
            related=[
                {"file": str(outside), "range": rng(1, 11, 1, 22), "message": "called from helper"},
                {"file": str(uni), "range": rng(0, 13, 0, 35), "message": "op call"},
            ],
            fixes=[fix, second_fix, copy.deepcopy(fix)],  # the duplicate is dropped
        ),
        diag(uni, rng(0, 13, 0, 35), "missing-fake-kernel", 1, "mylib::op has no fake kernel."),
        diag(outside, rng(1, 11, 1, 22), "recompile", 2, "Recompiled 3 times."),
        diag(model, rng(0, 0, 0, 0), "no-target", 3, "No target in this file."),
        diag(model, rng(4, 4, 4, 7), "graph-break", 4, "A hint."),
    ]
    targets = [{"name": "model.py:model", "file": str(model), "line": 1, "kind": "export",
                "status": "problems", "seconds": 1.25}]  # fmt: skip
    log = to_sarif(report(diagnostics, targets), tool_version="0.1.0", root=str(project["root"]))
    validate(log, schema)

    assert log["$schema"] == SARIF_SCHEMA_URI and log["version"] == "2.1.0"
    assert len(log["runs"]) == 1
    run = log["runs"][0]
    assert run["columnKind"] == "utf16CodeUnits"
    assert run["invocations"] == [{"executionSuccessful": True}]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == project["root"].as_uri() + "/"
    assert run["properties"]["torchVersion"] == "2.13.0+cpu"

    driver = run["tool"]["driver"]
    assert driver["name"] == "exportlens"
    assert driver["semanticVersion"] == "0.1.0"
    assert driver["informationUri"].startswith("https://")
    rules = driver["rules"]
    assert [r["id"] for r in rules] == ALL_CODES
    ddg = rules[0]
    assert ddg["shortDescription"]["text"] == CODES["data-dependent-guard"].title
    assert ddg["fullDescription"]["text"] == CODES["data-dependent-guard"].help
    assert ddg["helpUri"] == doc_url("data-dependent-guard")
    assert ddg["help"]["text"].endswith("See " + ddg["helpUri"])
    assert ddg["defaultConfiguration"] == {"level": "error"}
    by_id = {r["id"]: r for r in rules}
    assert by_id["recompile"]["defaultConfiguration"] == {"level": "warning"}
    assert by_id["no-target"]["defaultConfiguration"] == {"level": "note"}
    assert "helpUri" not in by_id["worker-crashed"]

    results = run["results"]
    assert [(r["ruleId"], r["ruleIndex"], r["level"]) for r in results] == [
        ("data-dependent-guard", 0, "error"),
        ("missing-fake-kernel", 1, "error"),
        ("recompile", 6, "warning"),
        ("no-target", 13, "note"),
        ("graph-break", 5, "note"),  # severity 4 (hint) -> note
    ]

    first = results[0]
    assert first["message"] == {"text": "Could not decide n > 0 (n = x.sum().item()); assumed True."}
    assert first["properties"] == {"target": "model.py:model"}
    loc = first["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "model.py", "uriBaseId": "%SRCROOT%"}
    # LSP line 6, chars 11..16 -> SARIF line 7, columns 12..17 (endColumn exclusive).
    assert loc["region"] == {"startLine": 7, "startColumn": 12, "endLine": 7, "endColumn": 17}

    rel = first["relatedLocations"]
    assert [r["id"] for r in rel] == [1, 2]
    assert rel[0]["message"] == {"text": "called from helper"}
    assert rel[0]["physicalLocation"]["artifactLocation"] == {"uri": outside.as_uri()}
    assert rel[0]["physicalLocation"]["region"] == {
        "startLine": 2, "startColumn": 12, "endLine": 2, "endColumn": 23,
    }  # fmt: skip
    assert rel[1]["physicalLocation"]["artifactLocation"] == {
        "uri": "sub%20dir/mod%C3%A8le%20%C3%BC.py", "uriBaseId": "%SRCROOT%",
    }  # fmt: skip

    assert first["fixes"] == [
        {
            "description": {"text": "Add torch._check(n > 0)"},
            "artifactChanges": [{
                "artifactLocation": {"uri": "model.py", "uriBaseId": "%SRCROOT%"},
                "replacements": [
                    {"deletedRegion": {"startLine": 7, "startColumn": 9, "endLine": 7, "endColumn": 9},
                     "insertedContent": {"text": "torch._check(n > 0)\n        "}},
                    {"deletedRegion": {"startLine": 7, "startColumn": 12, "endLine": 7, "endColumn": 17},
                     "insertedContent": {"text": "n >= 1"}},
                ],
            }],
            "properties": {"isPreferred": True},
        },
        {
            "description": {"text": "Rewrite with torch.cond"},
            "artifactChanges": [{
                "artifactLocation": {"uri": outside.as_uri()},
                "replacements": [
                    {"deletedRegion": {"startLine": 2, "startColumn": 12, "endLine": 2, "endColumn": 23},
                     "insertedContent": {"text": "x.nonzero_static(size=4)"}},
                ],
            }],
            "properties": {"isPreferred": False},
        },
    ]  # fmt: skip

    # Non-ASCII file under root, columns in UTF-16 units pass through +1.
    uni_loc = results[1]["locations"][0]["physicalLocation"]
    assert uni_loc["artifactLocation"]["uri"] == "sub%20dir/mod%C3%A8le%20%C3%BC.py"
    assert uni_loc["region"] == {"startLine": 1, "startColumn": 14, "endLine": 1, "endColumn": 36}
    assert "relatedLocations" not in results[1] and "fixes" not in results[1]

    # Outside root: absolute file URI, no uriBaseId.
    assert results[2]["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": outside.as_uri()}
    # A zero-width range at the start of the file.
    assert results[3]["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 1, "startColumn": 1, "endLine": 1, "endColumn": 1,
    }  # fmt: skip

    # Fingerprints: GitHub's own line hash of the start line, and ours.
    hashes = github_line_hashes(model.read_text(encoding="utf-8"))
    assert first["partialFingerprints"]["primaryLocationLineHash"] == hashes[7]
    assert results[3]["partialFingerprints"]["primaryLocationLineHash"] == hashes[1]
    assert re.fullmatch(r"[0-9a-f]{32}:1", first["partialFingerprints"]["exportlens/v1"])


def test_empty_report(schema: dict[str, Any]) -> None:
    log = to_sarif(report([]), tool_version="1.2.3", root=None)
    validate(log, schema)
    run = log["runs"][0]
    assert run["results"] == []
    assert run["invocations"] == [{"executionSuccessful": True}]
    assert len(run["tool"]["driver"]["rules"]) == len(ALL_CODES)
    assert "originalUriBaseIds" not in run


def test_without_root_every_uri_is_absolute(project: dict[str, Path], schema: dict[str, Any]) -> None:
    d = diag(project["unicode"], rng(0, 0, 0, 5), "target-error", 1, "boom")
    log = to_sarif(report([d]), tool_version="0.1.0", root=None)
    validate(log, schema)
    art = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert art == {"uri": project["unicode"].as_uri()}
    assert "%C3%A8" in art["uri"] and art["uri"].startswith("file:///")


def test_failed_targets_mark_the_invocation(project: dict[str, Path], schema: dict[str, Any]) -> None:
    model = project["model"]
    targets = [
        {"name": "a", "file": str(model), "line": 3, "kind": "export", "status": "ok", "seconds": 0.5},
        {"name": "b", "file": str(model), "line": 5, "kind": "compile", "status": "timeout", "seconds": 120.0},
    ]
    d = diag(model, rng(4, 0, 4, 4), "worker-timeout", 1, "Job b took longer than 120 s.")
    log = to_sarif(report([d], targets), tool_version="0.1.0", root=str(project["root"]))
    validate(log, schema)
    inv = log["runs"][0]["invocations"][0]
    assert inv["executionSuccessful"] is False
    (note,) = inv["toolExecutionNotifications"]
    assert note["level"] == "error"
    assert note["message"]["text"] == "Target b (compile) did not complete: timeout."
    assert note["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "model.py", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 5},
    }  # fmt: skip


def test_unknown_code_gets_its_own_rule(project: dict[str, Path], schema: dict[str, Any]) -> None:
    d = diag(project["model"], rng(0, 0, 0, 6), "future-code", 2, "new kind")
    log = to_sarif(report([d]), tool_version="0.1.0", root=str(project["root"]))
    validate(log, schema)
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert rules[-1]["id"] == "future-code" and len(rules) == len(ALL_CODES) + 1
    assert log["runs"][0]["results"][0]["ruleIndex"] == len(ALL_CODES)


def test_messages_that_look_like_links_are_escaped(project: dict[str, Path], schema: dict[str, Any]) -> None:
    plain = diag(project["model"], rng(5, 8, 5, 9), "data-dependent-guard", 1, "x.shape[0] > n")
    linky = diag(project["model"], rng(6, 8, 6, 9), "data-dependent-guard", 1, "see [a](1) and a\\b")
    log = to_sarif(report([plain, linky]), tool_version="0.1.0", root=str(project["root"]))
    validate(log, schema)
    texts = [r["message"]["text"] for r in log["runs"][0]["results"]]
    assert texts == ["x.shape[0] > n", "see \\[a\\](1) and a\\\\b"]


def test_fingerprints_follow_the_code_not_the_line_number(tmp_path: Path) -> None:
    """Inserting lines above a finding keeps both fingerprints; GitHub's hash matches its tool."""
    root = tmp_path / "p"
    root.mkdir()
    f = root / "k.py"
    f.write_text("x = 1\nif x:\n    pass\n", encoding="utf-8")
    d = diag(f, rng(1, 3, 1, 4), "data-dependent-guard", 1, "m")
    before = to_sarif(report([d, copy.deepcopy(d)]), tool_version="0", root=str(root))["runs"][0]["results"]
    # Value computed for this text by the upload-sarif algorithm (github/codeql-action).
    assert before[0]["partialFingerprints"]["primaryLocationLineHash"] == "36f147261025a9f3:1"
    # Two identical findings on the same line are told apart by the ":N" suffix.
    fp0, fp1 = (r["partialFingerprints"]["exportlens/v1"] for r in before)
    assert fp0.endswith(":1") and fp1.endswith(":2") and fp0[:-2] == fp1[:-2]

    f.write_text("import os\n\nx = 1\nif x:\n    pass\n", encoding="utf-8")
    moved = diag(f, rng(3, 3, 3, 4), "data-dependent-guard", 1, "m")
    after = to_sarif(report([moved]), tool_version="0", root=str(root))["runs"][0]["results"][0]
    assert after["partialFingerprints"] == before[0]["partialFingerprints"]
    assert after["locations"][0]["physicalLocation"]["region"]["startLine"] == 4


def test_unreadable_file_has_only_our_fingerprint(tmp_path: Path, schema: dict[str, Any]) -> None:
    gone = tmp_path / "gone.py"
    log = to_sarif(report([diag(gone, rng(2, 0, 2, 1), "syntax-error", 1, "bad")]), tool_version="0", root=str(tmp_path))
    validate(log, schema)
    fps = log["runs"][0]["results"][0]["partialFingerprints"]
    assert list(fps) == ["exportlens/v1"]


def test_github_line_hash_matches_known_values() -> None:
    """Reference values from the upload-sarif algorithm for the same text."""
    assert github_line_hashes("x = 1\nif x:\n    pass\n") == {
        1: "8efd0903269f0c0f:1", 2: "36f147261025a9f3:1", 3: "d9ebd24fce30bc54:1", 4: "c129715d7a2bc9a3:1",
    }  # fmt: skip
    # CRLF and LF give the same hashes; leading whitespace does not count.
    assert github_line_hashes("x = 1\r\nif x:\r\n\tpass\r\n") == github_line_hashes("x = 1\nif x:\n    pass\n")
