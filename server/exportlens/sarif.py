"""SARIF 2.1.0 output for `exportlens check --format sarif`.

Why a separate module: CI systems (GitHub code scanning above all) read SARIF, not our JSON.
`to_sarif` is a pure translation of the JSON report the CLI prints with `--format json` (the
shape `model.Report.to_json` produces); it only reads source files to fingerprint lines.

Conventions, all chosen for GitHub code scanning and checked against the OASIS schema:

* Positions: the report uses LSP positions (0-based lines, 0-based UTF-16 characters); SARIF
  regions are 1-based lines and 1-based columns, so both get +1, and the run says
  `columnKind: "utf16CodeUnits"`. `endColumn` is the column *after* the last character,
  which is exactly the LSP exclusive end + 1.
* Paths: a file under `root` gets a relative, percent-encoded URI with
  `uriBaseId: "%SRCROOT%"` (GitHub resolves relative URIs against the repository root); the
  run's `originalUriBaseIds` maps `%SRCROOT%` to `root`. Any other file gets an absolute
  `file:` URI.
* Fingerprints (`partialFingerprints`), two keys:
  - `primaryLocationLineHash`: GitHub's own line hash (the algorithm of the `upload-sarif`
    action, github/codeql-action src/fingerprints.ts), computed from the file on disk. It is
    the only key code scanning uses; computing it here means uploads through the REST API are
    deduplicated too, and the action finds a value equal to its own (no warning). Omitted when
    the file cannot be read: the action then fills it in itself.
  - `exportlens/v1`: sha256 of rule id + relative path + the whitespace-stripped text of the
    start line, plus `:N` for the N-th identical value in the run. It survives lines moving
    and does not depend on GitHub's algorithm.
* Messages are plain text. SARIF treats `[text](n)` as an embedded link, so brackets are
  escaped with a backslash only when a message contains `](` and could be misread as one.
* GitHub limits: at most 25,000 results per run and 1,000 locations per result; beyond that
  the most severe results / first related locations are kept and a notification says so.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from array import array
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from . import notebook
from .codes import CODES, CodeInfo

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
TOOL_NAME = "exportlens"
INFORMATION_URI = "https://github.com/exportlens/exportlens"
SRCROOT = "%SRCROOT%"

MAX_RESULTS = 25_000  # GitHub: results per run
MAX_LOCATIONS = 1_000  # GitHub: locations per result (primary + related)

_LEVELS = {1: "error", 2: "warning", 3: "note", 4: "note"}
_FAILED_STATUSES = frozenset({"error", "timeout", "crashed"})


def to_sarif(report: dict[str, Any], *, tool_version: str, root: str | None) -> dict[str, Any]:
    """Translate a `--format json` report into one SARIF 2.1.0 log with a single run."""
    root_path = _normalize_dir(root) if root else None
    rules, rule_index = _rules(report.get("diagnostics", []))

    diagnostics = list(report.get("diagnostics", []))
    notifications: list[dict[str, Any]] = []
    if len(diagnostics) > MAX_RESULTS:
        # Keep the most severe: a stable sort by severity keeps the report's order otherwise.
        diagnostics = sorted(diagnostics, key=lambda d: int(d.get("severity", 2)))[:MAX_RESULTS]
        notifications.append(
            _notification(
                "warning",
                f"{len(report['diagnostics']) - MAX_RESULTS} less severe results were left out "
                f"to stay within the {MAX_RESULTS} results a SARIF run may hold for GitHub.",
            )
        )

    lines = _LineCache()
    seen_fingerprints: dict[str, int] = {}
    results = [_result(d, rule_index, root_path, lines, seen_fingerprints) for d in diagnostics]

    failed = [t for t in report.get("targets", []) if t.get("status") in _FAILED_STATUSES]
    for target in failed:
        notifications.append(
            _notification(
                "error",
                f"Target {target.get('name', '?')} ({target.get('kind', '?')}) did not complete: {target.get('status')}.",
                location=_location_for_line(target, root_path),
            )
        )

    invocation: dict[str, Any] = {"executionSuccessful": not failed}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications

    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": TOOL_NAME,
                "informationUri": INFORMATION_URI,
                "version": tool_version,
                "semanticVersion": tool_version,
                "rules": rules,
            }
        },
        "invocations": [invocation],
        "columnKind": "utf16CodeUnits",
        "results": results,
        "properties": {
            "torchVersion": str(report.get("torch", "")),
            "reportVersion": report.get("version", 1),
            "targets": [dict(t) for t in report.get("targets", [])],
        },
    }
    if root_path is not None:
        run["originalUriBaseIds"] = {
            SRCROOT: {
                "uri": _dir_uri(root_path),
                "description": {"text": "The root of the analysed project."},
            }
        }
    return {"$schema": SARIF_SCHEMA_URI, "version": SARIF_VERSION, "runs": [run]}


# -- rules -------------------------------------------------------------------------------------


def _rules(diagnostics: Iterable[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Every known code (stable order, so ruleIndex is stable), then any unknown ones."""
    infos: list[CodeInfo] = list(CODES.values())
    for d in diagnostics:
        code = str(d.get("code", ""))
        if code and code not in CODES and all(i.code != code for i in infos):
            infos.append(CodeInfo(code, code, f"ExportLens reported '{code}'.", 2, None, data=None))
    rules = [_rule(info) for info in infos]
    return rules, {info.code: i for i, info in enumerate(infos)}


def _rule(info: CodeInfo) -> dict[str, Any]:
    help_text = info.help if info.url is None else f"{info.help}\n\nSee {info.url}"
    help_md = info.help if info.url is None else f"{info.help}\n\n[Documentation]({info.url})"
    rule: dict[str, Any] = {
        "id": info.code,
        "name": info.code,
        "shortDescription": {"text": info.title},
        "fullDescription": {"text": info.help},
        "help": {"text": help_text, "markdown": help_md},
        "defaultConfiguration": {"level": _level(info.severity)},
        "properties": {"tags": ["pytorch"]},
    }
    if info.url is not None:
        rule["helpUri"] = info.url
    return rule


def _level(severity: Any) -> str:
    try:
        return _LEVELS.get(int(severity), "warning")
    except (TypeError, ValueError):
        return "warning"


# -- results -----------------------------------------------------------------------------------


def _result(
    d: Mapping[str, Any],
    rule_index: Mapping[str, int],
    root: Path | None,
    lines: _LineCache,
    seen: dict[str, int],
) -> dict[str, Any]:
    code = str(d.get("code", ""))
    file = str(d["file"])
    cell = d.get("cell")
    rng = _file_range(file, cell, d["range"], lines) if cell is not None else d["range"]
    artifact = _artifact_location(file, root)
    result: dict[str, Any] = {
        "ruleId": code,
        "level": _level(d.get("severity", 2)),
        "message": {"text": _message_text(str(d.get("message", "")) or code)},
        "locations": [{"physicalLocation": {"artifactLocation": artifact, "region": _region(rng)}}],
    }

    if code in rule_index:
        result["ruleIndex"] = rule_index[code]

    related = list(d.get("related", []))[: MAX_LOCATIONS - 1]
    if related:
        result["relatedLocations"] = [
            {
                "id": i,
                "physicalLocation": {
                    "artifactLocation": _artifact_location(str(r["file"]), root),
                    "region": _region(_file_range(str(r["file"]), r["cell"], r["range"], lines) if r.get("cell") is not None else r["range"]),
                },
                "message": {"text": _message_text(str(r.get("message", "")) or "related")},
            }
            for i, r in enumerate(related, start=1)
        ]

    # an edit inside a notebook cell cannot be applied to the .ipynb file's JSON text: no SARIF fix for it
    fixes = _fixes([f for f in d.get("fixes", []) if all(e.get("cell") is None for e in f.get("edits", []))], root)
    if fixes:
        result["fixes"] = fixes

    start_line = int(rng["start"]["line"]) + 1
    fingerprints: dict[str, str] = {}
    gh = lines.github_hash(file, start_line)
    if gh is not None:
        fingerprints["primaryLocationLineHash"] = gh
    text = lines.line_text(file, start_line)
    key = "\0".join((code, artifact["uri"], "".join(text.split())))
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    seen[digest] = seen.get(digest, 0) + 1
    fingerprints["exportlens/v1"] = f"{digest}:{seen[digest]}"
    result["partialFingerprints"] = fingerprints

    if d.get("target"):
        result["properties"] = {"target": str(d["target"])}
    raw = {key: value for key, value in (d.get("data") or {}).items() if key in RAW_FACTS}
    if raw:  # draft export's own crash: its raw error and a command that reproduces it, for a PyTorch issue
        result.setdefault("properties", {}).update(raw)
    if cell is not None:  # the notebook cell (0-based, over all cells) and the range inside it
        result.setdefault("properties", {}).update({"cell": int(cell), "cellRange": d["range"]})
    return result


RAW_FACTS = ("draft_export_error", "crash_family", "repro")  # data a result carries into SARIF as it is


def _file_range(file: str, cell: int, rng: Mapping[str, Any], lines: _LineCache) -> Mapping[str, Any]:
    """A notebook cell's range as a range of the .ipynb file's own text (nbformat layout), else unchanged."""
    raw = lines.raw_text(file)
    if raw is None:
        return rng
    start = notebook.raw_position(raw, cell, int(rng["start"]["line"]), int(rng["start"]["character"]))
    end = notebook.raw_position(raw, cell, int(rng["end"]["line"]), int(rng["end"]["character"]))
    if start is None or end is None:
        return rng
    return {"start": {"line": start[0], "character": start[1]}, "end": {"line": end[0], "character": end[1]}}


def _fix_properties(fix: Mapping[str, Any]) -> dict[str, Any]:
    """The fix's property bag: preference, the assumption it makes, and its verification."""
    props: dict[str, Any] = {"isPreferred": bool(fix.get("isPreferred", False))}
    if fix.get("assumes"):
        props["assumes"] = str(fix["assumes"])
    if isinstance(fix.get("verification"), Mapping):
        props["verification"] = dict(fix["verification"])
    return props


def _fixes(fixes: Iterable[Mapping[str, Any]], root: Path | None) -> list[dict[str, Any]]:
    """SARIF fixes: one artifactChange per file, replacements in the report's order."""
    out: list[dict[str, Any]] = []
    for fix in fixes:
        by_file: dict[str, list[dict[str, Any]]] = {}
        for edit in fix.get("edits", []):
            by_file.setdefault(str(edit["file"]), []).append(
                {
                    "deletedRegion": _region(edit["range"]),
                    "insertedContent": {"text": str(edit.get("newText", ""))},
                }
            )
        if not by_file:
            continue  # artifactChanges needs at least one change
        sarif_fix = {
            "description": {"text": str(fix.get("title", ""))},
            "artifactChanges": [{"artifactLocation": _artifact_location(f, root), "replacements": reps} for f, reps in by_file.items()],
            "properties": _fix_properties(fix),
        }
        if sarif_fix not in out:  # the schema wants fixes unique
            out.append(sarif_fix)
    return out


def _region(rng: Mapping[str, Any]) -> dict[str, int]:
    """LSP range (0-based, exclusive end) -> SARIF region (1-based, endColumn exclusive)."""
    start, end = rng["start"], rng["end"]
    return {
        "startLine": int(start["line"]) + 1,
        "startColumn": int(start["character"]) + 1,
        "endLine": int(end["line"]) + 1,
        "endColumn": int(end["character"]) + 1,
    }


_LINK_LIKE = re.compile(r"\]\(")


def _message_text(text: str) -> str:
    """Escape brackets only where the text could be read as a SARIF embedded link."""
    if not _LINK_LIKE.search(text):
        return text
    return text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def _notification(level: str, text: str, location: dict[str, Any] | None = None) -> dict[str, Any]:
    note: dict[str, Any] = {"level": level, "message": {"text": text}}
    if location is not None:
        note["locations"] = [location]
    return note


def _location_for_line(target: Mapping[str, Any], root: Path | None) -> dict[str, Any] | None:
    file = target.get("file")
    if not file:
        return None
    line = max(1, int(target.get("line", 1) or 1))
    return {
        "physicalLocation": {
            "artifactLocation": _artifact_location(str(file), root),
            "region": {"startLine": line},
        }
    }


# -- paths and URIs ----------------------------------------------------------------------------


def _normalize_dir(path: str) -> Path:
    return Path(os.path.normpath(os.path.abspath(path)))


def _dir_uri(path: Path) -> str:
    uri = path.as_uri()
    return uri if uri.endswith("/") else uri + "/"


def _artifact_location(file: str, root: Path | None) -> dict[str, str]:
    """Relative to %SRCROOT% when the file is under root, else an absolute file URI."""
    path = Path(os.path.normpath(os.path.abspath(file)))
    if root is not None:
        try:
            rel = path.relative_to(root)
        except ValueError:
            pass
        else:
            posix = PurePosixPath(*rel.parts).as_posix()
            if posix not in ("", "."):
                # Percent-encode everything but unreserved characters and "/": non-ASCII
                # becomes UTF-8 %XX, and a ":" can never be mistaken for a URI scheme.
                return {"uri": quote(posix, safe="/"), "uriBaseId": SRCROOT}
    return {"uri": path.as_uri()}


# -- line access and GitHub's line hash --------------------------------------------------------


class _LineCache:
    """Reads each source file once, for line texts and GitHub line hashes."""

    def __init__(self) -> None:
        self._texts: dict[str, str | None] = {}
        self._hashes: dict[str, dict[int, str]] = {}

    def _text(self, file: str) -> str | None:
        if file not in self._texts:
            try:
                with open(file, encoding="utf-8", errors="replace", newline="") as f:
                    self._texts[file] = f.read()
            except OSError:
                self._texts[file] = None
        return self._texts[file]

    def raw_text(self, file: str) -> str | None:
        return self._text(file)

    def line_text(self, file: str, line: int) -> str:
        text = self._text(file)
        if text is None:
            return ""
        lines = text.splitlines()
        return lines[line - 1] if 0 < line <= len(lines) else ""

    def github_hash(self, file: str, line: int) -> str | None:
        text = self._text(file)
        if text is None:
            return None
        if file not in self._hashes:
            self._hashes[file] = github_line_hashes(text)
        return self._hashes[file].get(line)


_BLOCK_SIZE = 100
_MOD = 37
_MASK = (1 << 64) - 1
_FIRST_MOD = pow(_MOD, _BLOCK_SIZE, 1 << 64)
_TAB, _SPACE, _LF, _CR, _EOF = 9, 32, 10, 13, 65535


def github_line_hashes(text: str) -> dict[int, str]:
    """`primaryLocationLineHash` for every line (1-based), as GitHub's upload-sarif computes it.

    A port of `hash()` in github/codeql-action src/fingerprints.ts: a rolling hash over the
    first 100 non-space, non-tab UTF-16 code units from the start of each line (line endings
    normalized to \\n, an EOF marker and zero padding at the end), 64-bit wrap-around
    arithmetic, printed as unsigned hex plus ":N" for the N-th line with the same hash.
    """
    units = array("H")
    units.frombytes(text.encode("utf-16-le", "surrogatepass"))
    if sys.byteorder == "big":
        units.byteswap()

    window = [0] * _BLOCK_SIZE
    line_numbers = [-1] * _BLOCK_SIZE
    out: dict[int, str] = {}
    counts: dict[str, int] = {}
    state = {"hash": 0, "index": 0, "line": 0, "line_start": True, "prev_cr": False}

    def output_hash() -> None:
        value = format(state["hash"], "x")
        counts[value] = counts.get(value, 0) + 1
        out[line_numbers[state["index"]]] = f"{value}:{counts[value]}"
        line_numbers[state["index"]] = -1

    def update_hash(current: int) -> None:
        index = state["index"]
        begin = window[index]
        window[index] = current
        state["hash"] = (_MOD * state["hash"] + current - _FIRST_MOD * begin) & _MASK
        state["index"] = (index + 1) % _BLOCK_SIZE

    def process(current: int) -> None:
        if current in (_SPACE, _TAB) or (state["prev_cr"] and current == _LF):
            state["prev_cr"] = False
            return
        if current == _CR:
            current = _LF
            state["prev_cr"] = True
        else:
            state["prev_cr"] = False
        if line_numbers[state["index"]] != -1:
            output_hash()
        if state["line_start"]:
            state["line_start"] = False
            state["line"] += 1
            line_numbers[state["index"]] = state["line"]
        if current == _LF:
            state["line_start"] = True
        update_hash(current)

    for unit in units:
        process(unit)
    process(_EOF)
    for _ in range(_BLOCK_SIZE):
        if line_numbers[state["index"]] != -1:
            output_hash()
        update_hash(0)
    return out
