"""The JSON report (schema 2) the page is rendered from: built from a check, read back, merged.

`--format json` prints `build(...)`: `model.Report.to_json` plus, on each diagnostic, its `data`
(the raw facts, shaped per code by `protocol.DATA_BY_CODE`) and its `owner` (the file whose run
found it: a helper file's finding belongs to the model file's targets), the `sources` lines the
page shows (`report.sources`) and a `run` object (which command, how long, how many pytest-xdist
workers). These keys are additions: a schema-2 report without them still renders (the page then
reads the sources from disk and groups library problems by the user's line). `merge` combines
the parts of one run (pytest-xdist workers, CI shards) into one report.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC
from typing import TYPE_CHECKING, Any

from exportlens.model import SCHEMA_VERSION, Diagnostic, Report, TargetResult
from exportlens.report import rootcause
from exportlens.report.sources import Sources, collect, disk_reader

if TYPE_CHECKING:
    from exportlens.engine import FileResult

READABLE_VERSIONS = (1, SCHEMA_VERSION)  # 1 lacks fixes' `assumes` and `verification`: shown as unverified


class ReportError(ValueError):
    """Not an ExportLens JSON report; the message says what was found instead."""


def _plain(value: Any) -> Any:
    """`data` as strict JSON: a value torch gave as an object becomes its text, and so does a
    float that JSON cannot hold (`nan`, `inf`: an observed value may be one)."""

    def strict(v: Any) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            return str(v)
        if isinstance(v, dict):
            return {str(k): strict(x) for k, x in v.items()}
        if isinstance(v, list):
            return [strict(x) for x in v]
        return v

    return strict(json.loads(json.dumps(value, default=str)))


def _diagnostic_json(d: Diagnostic, owner: str | None) -> dict[str, Any]:
    out = d.to_json()
    out["data"] = _plain(d.data)
    out["root_cause"] = rootcause.root_cause(d)
    if owner is not None:
        out["owner"] = owner
    return out


def run_facts(command: str, seconds: float) -> dict[str, Any]:
    """The report's `run`: the command, how long it took, when it finished, which ExportLens (the page's header)."""
    from datetime import datetime

    from exportlens import __version__

    return {"command": command, "seconds": round(seconds, 2), "finished": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "exportlens": __version__}


def build(report: Report, results: Sequence[FileResult], *, show_ignored: bool = False, run: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The JSON report of a check; `results` are its files' results (owners and analysed texts)."""
    owners = {id(d): r.path for r in results for d in (*r.diagnostics, *r.ignored)}
    texts: dict[str, str] = {}
    for r in results:
        texts.update(r.texts)
    doc = report.to_json(show_ignored=show_ignored)
    doc["diagnostics"] = [_diagnostic_json(d, owners.get(id(d))) for d in report.diagnostics]
    shown = list(report.diagnostics)
    if show_ignored:
        doc["ignored"] = [_diagnostic_json(d, owners.get(id(d))) for d in report.ignored]
        shown += report.ignored
    doc["sources"] = collect(shown, disk_reader(texts)).to_json()
    if run:
        doc["run"] = dict(run)
    return doc


@dataclass
class ReportDoc:
    """A JSON report read back, in the model's types (unknown codes and `data` keys are kept as they are)."""

    version: int
    torch: str
    targets: list[TargetResult]
    target_torch: list[str]  # each target's torch (a merged report may hold several)
    diagnostics: list[Diagnostic]
    owners: list[str | None]  # each diagnostic's owner file, None when the report does not say
    ignored: list[Diagnostic] = field(default_factory=list)
    sources: Sources | None = None  # None: the report keeps no sources (read them from disk)
    unsupported: str | None = None
    run: dict[str, Any] = field(default_factory=dict)
    root_causes: list[tuple[str, int | None, int] | None] = field(default_factory=list)  # each diagnostic's `root_cause` (file, cell, 0-based line)


def _items(doc: Mapping[str, Any], key: str) -> list[Any]:
    value = doc.get(key, [])
    if not isinstance(value, list):
        raise ReportError(f"`{key}` is not a list")
    return value


def _diagnostics(items: Iterable[Any], key: str) -> tuple[list[Diagnostic], list[str | None], list[tuple[str, int | None, int] | None]]:
    diags, owners, causes = [], [], []
    for i, item in enumerate(items):
        try:
            diags.append(Diagnostic.from_json(item))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ReportError(f"{key}[{i}] is not a diagnostic ({type(exc).__name__}: {exc})") from exc
        owner = item.get("owner")
        owners.append(owner if isinstance(owner, str) else None)
        causes.append(rootcause.read(item.get("root_cause")))
    return diags, owners, causes


def parse(doc: Any) -> ReportDoc:
    """Read a JSON report (a parsed document), or raise ReportError saying why it is not one."""
    if isinstance(doc, dict) and "runs" in doc and "$schema" in doc:
        raise ReportError("this is a SARIF log; render the report of `exportlens check --format json` instead")
    if not isinstance(doc, dict) or "diagnostics" not in doc or "version" not in doc:
        raise ReportError("not an ExportLens JSON report (`exportlens check --format json` writes one)")
    version = doc.get("version")
    if version not in READABLE_VERSIONS:
        raise ReportError(f"report schema version {version!r}: this ExportLens reads versions {', '.join(map(str, READABLE_VERSIONS))}")
    torch = str(doc.get("torch") or "unknown")
    targets, target_torch = [], []
    for i, item in enumerate(_items(doc, "targets")):
        try:
            targets.append(TargetResult.from_json(item))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ReportError(f"targets[{i}] is not a target ({type(exc).__name__}: {exc})") from exc
        target_torch.append(str(item.get("torch") or torch))
    diags, owners, causes = _diagnostics(_items(doc, "diagnostics"), "diagnostics")
    ignored, _, _ = _diagnostics(_items(doc, "ignored"), "ignored")
    run = doc.get("run")
    return ReportDoc(
        int(version),
        torch,
        targets,
        target_torch,
        diags,
        owners,
        ignored,
        Sources.from_json(doc["sources"]) if "sources" in doc else None,
        str(doc["unsupported"]) if doc.get("unsupported") else None,
        dict(run) if isinstance(run, dict) else {},
        root_causes=causes,
    )


def read(path: str) -> dict[str, Any]:
    """A JSON report file (`-` for stdin), checked to be one (ReportError says why not)."""
    import sys

    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportError(f"cannot read it: {exc}") from exc
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(f"not JSON ({exc})") from exc
    parse(doc)
    return dict(doc)


def _files_of(doc: Mapping[str, Any]) -> set[str]:
    """The files a part checked: its targets' files and its diagnostics' owners."""
    files = {str(t.get("file")) for t in doc.get("targets", []) if isinstance(t, dict)}
    return files | {str(d.get("owner") or d.get("file")) for d in doc.get("diagnostics", []) if isinstance(d, dict)}


def merge(parts: Sequence[Mapping[str, Any]], *, run: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One report from the parts of one run. A file checked by several parts (pytest-xdist may run
    the items of one file on two workers, each checking the file) is taken from the first."""
    torches = sorted({str(p.get("torch") or "unknown") for p in parts}) or ["unknown"]
    out: dict[str, Any] = {"version": SCHEMA_VERSION, "torch": ", ".join(torches), "targets": [], "diagnostics": []}
    taken: set[str] = set()
    ignored: list[Any] = []
    sources: dict[tuple[str, int | None], dict[str, Any]] = {}
    for part in parts:
        mine = _files_of(part) - taken
        taken |= mine
        torch = str(part.get("torch") or "unknown")
        for t in part.get("targets", []):
            if t.get("file") in mine:
                out["targets"].append({**t, "torch": torch} if len(torches) > 1 else dict(t))
        for key, into in (("diagnostics", out["diagnostics"]), ("ignored", ignored)):
            into.extend(d for d in part.get(key, []) if str(d.get("owner") or d.get("file")) in mine)
        for entry in part.get("sources", []):
            have = sources.setdefault((entry["file"], entry.get("cell")), {**entry, "lines": {}})
            have["lines"].update(entry.get("lines", {}))
        if part.get("unsupported"):
            out["unsupported"] = part["unsupported"]
    out["diagnostics"].sort(key=lambda d: (d["file"], d["range"]["start"]["line"], d["range"]["start"]["character"], d["code"]))
    if ignored:
        out["ignored"] = ignored
    out["sources"] = list(sources.values())
    if run:
        out["run"] = dict(run)
    return out
