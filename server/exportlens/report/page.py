"""The HTML page of a report: summary of every target, codes, root causes, then every finding.

One self-contained file: the stylesheet and the script are inline and allowed by hash in the
page's Content-Security-Policy, which forbids everything else (no network, fonts or images), so
the page reads the same offline, from a CI artifact, or from a file:// URL. Every text reaches
the page through `markup` (the one escaping home); the content is plain HTML and works without
JavaScript, which only sorts and filters the targets table.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from collections.abc import Iterable
from typing import Any

from exportlens import __version__
from exportlens.codes import CODES, outcome_words
from exportlens.fixes.text import utf16_to_index
from exportlens.model import EXPORT_PASSES, SEVERITY_NAMES, Diagnostic, Fix, Range, Related
from exportlens.report import assets
from exportlens.report.causes import Cause, Index
from exportlens.report.diff import GAP, FileDiff, file_diffs
from exportlens.report.jsonreport import ReportDoc
from exportlens.report.markup import Child, Html, document, el, join, raw_asset
from exportlens.report.sources import CONTEXT, MAX_SPAN, Sources, collect, disk_reader, library_line, library_related

# Worst first: the table starts with what did not run, then what has problems.
STATUS_ORDER = ("error", "crashed", "timeout", "unsupported", "problems", "ok")


def _status_rank(status: str) -> int:
    """Worst first; a status this ExportLens does not know counts as the worst."""
    return STATUS_ORDER.index(status) if status in STATUS_ORDER else -1


STATUS_WORDS = {
    "ok": "exports",
    "problems": "has problems",
    "error": "could not run",
    "crashed": "crashed",
    "timeout": "timed out",
    "unsupported": "not supported by this torch",
}
MAX_FACTS = 20_000  # characters of one finding's `data` shown (the JSON report keeps it whole)
_BACKTICKS = re.compile(r"`([^`\n]+)`")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _rich(text: str) -> Html:
    """A message with its `backticked` parts as code (as the editor's hover shows them)."""
    parts: list[Child] = []
    pos = 0
    for m in _BACKTICKS.finditer(text):
        parts.append(text[pos : m.start()])
        parts.append(el("code", m.group(1)))
        pos = m.end()
    parts.append(text[pos:])
    return join(parts)


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


CSP = (
    f"default-src 'none'; style-src {_sha256(assets.STYLE)}; script-src {_sha256(assets.SCRIPT)}; img-src 'none'; font-src 'none'; "
    "connect-src 'none'; base-uri 'none'; form-action 'none'"
)


class Page:
    def __init__(self, doc: ReportDoc) -> None:
        self.doc = doc
        self.idx = Index(doc)
        self.sources: Sources = doc.sources if doc.sources is not None else collect([*doc.diagnostics, *doc.ignored], disk_reader())
        self.causes = self.idx.causes()
        self.cause_of: dict[int, int] = {f: c for c, cause in enumerate(self.causes) for f in cause.findings}
        self.problems = sum(1 for d in doc.diagnostics if d.problem)
        self.orphans: dict[str, list[int]] = {}  # owner file → findings on none of its targets
        for i, (d, owner) in enumerate(zip(doc.diagnostics, doc.owners, strict=True)):
            if not self.idx.finding_targets[i]:
                self.orphans.setdefault(os.path.abspath(owner or d.file), []).append(i)

    # -- small pieces -----------------------------------------------------------------------

    def where(self, file: str, cell: int | None, line: int, character: int | None = None) -> str:
        """`detect.py:13:17`, or `nb.ipynb · cell 2:4:12` (0-based line and character in)."""
        col = f":{character + 1}" if character is not None else ""
        cell_part = f" · cell {cell}" if cell is not None else ""
        return f"{self.idx.show(file)}{cell_part}:{line + 1}{col}"

    def target_label(self, t: int) -> str:
        """`models/detr.py · model`; a target named by its call (`export at detr.py:40`) by its place."""
        target = self.doc.targets[t]
        if target.name.startswith(f"{target.kind} at "):
            cell = f" · cell {target.cell}" if target.cell is not None else ""
            return f"{self.idx.show(target.file)}{cell}:{target.line} ({target.kind})"
        return f"{self.idx.show(target.file)} · {target.name}"

    def code_title(self, code: str) -> str:
        info = CODES.get(code)
        return info.title if info is not None else code

    def finding_link(self, f: int) -> Html:
        """A finding by its line, short (`detect.py:13`), the whole place in its title."""
        d = self.doc.diagnostics[f]
        where = self.where(d.file, d.cell, d.range.start.line)
        return el("a", where.rsplit("/", 1)[-1], href=f"#d-{f}", class_="finding-link", title=where)

    # -- the page ---------------------------------------------------------------------------

    def render(self) -> str:
        problems, targets = self.problems, len(self.doc.targets)
        title = f"ExportLens: {_plural(problems, 'problem')} in {_plural(targets, 'target')}"
        head = [
            el("meta", charset="utf-8"),
            el("meta", name="viewport", content="width=device-width, initial-scale=1"),
            el("meta", name="color-scheme", content="light dark"),
            el("meta", http_equiv="Content-Security-Policy", content=CSP),
            el("meta", name="generator", content=f"exportlens {__version__}"),
            el("title", title),
            raw_asset("style", assets.STYLE),
        ]
        body = [
            el("a", "Skip to the targets", href="#targets", class_="skip"),
            self.header(),
            el(
                "main",
                el(
                    "div",
                    self.unsupported(),
                    self.targets_block(),
                    self.causes_block(),
                    self.files_block(),
                    self.ignored_block(),
                    class_="wrap",
                ),
            ),
            raw_asset("script", assets.SCRIPT),
        ]
        return document(head, body)

    def header(self) -> Html:
        doc, run = self.doc, self.doc.run
        not_ok = sum(1 for t in doc.targets if t.status != "ok")
        if self.problems or not_ok:
            verdict = el("p", f"{_plural(self.problems, 'problem')} in {_plural(len(doc.targets), 'target')}", class_="verdict bad")
        elif doc.targets:
            verdict = el("p", f"No problems in {_plural(len(doc.targets), 'target')}", class_="verdict good")
        else:
            verdict = el("p", "No targets were checked", class_="verdict")
        facts: list[tuple[str, str]] = []
        if run.get("command"):
            facts.append(("command", str(run["command"])))
        if self.idx.root:
            facts.append(("folder", os.path.basename(self.idx.root) + "/"))
        facts.append(("torch", doc.torch))
        if isinstance(run.get("seconds"), (int, float)):
            facts.append(("took", f"{float(run['seconds']):.1f} s"))
        if run.get("combined"):
            facts.append(("combined", str(run["combined"])))
        if run.get("shard"):
            facts.append(("shard", str(run["shard"])))
        reused = sum(1 for t in doc.targets if t.cached is not None)
        if reused:
            facts.append(("from the cache", f"{reused} of {_plural(len(doc.targets), 'target')}"))
        if run.get("finished"):
            facts.append(("finished", str(run["finished"])))
        facts.append(("exportlens", str(run.get("exportlens") or __version__)))
        nav = el(
            "nav",
            el("a", "Targets", href="#targets"),
            el("a", "Root causes", href="#causes"),
            el("a", "Findings", href="#findings"),
            class_="sections",
            aria_label="Sections",
        )
        return el(
            "header",
            el(
                "div",
                el("h1", el("span", "ExportLens ", class_="brand"), "report"),
                verdict,
                el("dl", [el("div", el("dt", k), el("dd", v)) for k, v in facts], class_="facts"),
                nav,
                class_="wrap",
            ),
            class_="top",
        )

    def unsupported(self) -> Html | None:
        if not self.doc.unsupported:
            return None
        return el("p", self.doc.unsupported, class_="banner", role="alert")

    # -- targets ----------------------------------------------------------------------------

    def _rows(self) -> list[tuple[int | None, str]]:
        """(target index, or None for a file's own findings; that file), worst status first."""
        rows: list[tuple[int | None, str]] = [(i, t.file) for i, t in enumerate(self.doc.targets)]
        rows += [(None, f) for f, fs in self.orphans.items() if any(self.doc.diagnostics[i].problem for i in fs)]

        def key(row: tuple[int | None, str]) -> tuple[int, str, int]:
            i, file = row
            status = self.doc.targets[i].status if i is not None else "error"
            rank = _status_rank(status)
            return (rank, self.idx.show(file), self.doc.targets[i].line if i is not None else 0)

        return sorted(rows, key=key)

    def targets_block(self) -> Html:
        doc = self.doc
        counts: dict[str, int] = {}
        for t in doc.targets:
            counts[t.status] = counts.get(t.status, 0) + 1
        chips = el(
            "ul",
            [
                el("li", el("span", s, el("span", str(counts[s]), class_="k"), class_=f"badge st-{s}", title=STATUS_WORDS.get(s, s)), data_status_count=s)
                for s in sorted(counts, key=_status_rank)
            ],
            class_="chips",
            id="statuses",
            aria_label="Targets by status",
        )
        codes = sorted({d.code for d in doc.diagnostics})
        filters = el(
            "form",
            el(
                "label",
                "Status",
                el("select", el("option", "any", value=""), [el("option", s, value=s) for s in sorted(counts, key=_status_rank)], id="filter-status"),
            ),
            el("label", "Code", el("select", el("option", "any", value=""), [el("option", c, value=c) for c in codes], id="filter-code")),
            el("label", "Find", el("input", type="search", id="filter-text", placeholder="file or target name", autocomplete="off")),
            el("output", f"{len(doc.targets)} targets", id="filter-count", aria_live="polite"),
            id="filters",
            class_="filters",
            hidden=True,
            role="search",
        )
        head = el(
            "tr",
            el("th", "File", scope="col"),
            el("th", "Target", scope="col"),
            el("th", "Kind", scope="col"),
            el("th", "Status", scope="col"),
            el("th", "Problems", scope="col", class_="num", data_type="number"),
            el("th", "Codes", scope="col"),
            el("th", "Seconds", scope="col", class_="num", data_type="number"),
            el("th", "Torch", scope="col"),
        )
        body = [self.target_row(i, file) for i, file in self._rows()]
        table = el("div", el("table", el("thead", head), el("tbody", body), id="target-table", class_="targets"), class_="table-wrap")
        empty = (
            None
            if doc.targets or self.orphans
            else el("p", "No targets: the paths name no torch.export, torch.compile or torch.jit.trace target.", class_="empty-state")
        )
        return el(
            "section",
            el("h2", "Targets", el("span", str(len(doc.targets)), class_="n")),
            chips,
            self.code_counts(),
            filters,
            el("noscript", el("p", "Sorting and filtering the table need JavaScript; everything else on this page is here without it.", class_="hint")),
            empty or table,
            id="targets",
            class_="block",
        )

    def target_row(self, i: int | None, file: str) -> Html:
        doc = self.doc
        if i is not None:
            t = doc.targets[i]
            findings = self.idx.target_findings[i]
            name, kind, status, seconds, torch = t.name, t.kind, t.status, t.seconds, doc.target_torch[i]
            where = f"{self.idx.show(t.file)}" + (f" · cell {t.cell}" if t.cell is not None else "")
            line: int | None = t.line
            anchor = f"#target-{i}"
        else:
            findings = self.orphans[file]
            name, kind, status, seconds, torch = "(the file itself)", "file", "error", 0.0, doc.torch
            where, line, anchor = self.idx.show(file), None, f"#{self.file_id(file)}"
        problems = [f for f in findings if doc.diagnostics[f].problem]
        codes = sorted({doc.diagnostics[f].code for f in findings})
        rank = _status_rank(status)
        return el(
            "tr",
            el("td", el("a", where, href=anchor), el("span", f":{line}", class_="sub") if line else None, data_value=f"{where}:{(line or 0):08d}"),
            el("td", name),
            el("td", kind),
            el("td", el("span", status, class_=f"badge st-{status}", title=STATUS_WORDS.get(status, status)), data_value=str(rank)),
            el("td", str(len(problems)), class_="num", data_value=str(len(problems))),
            el("td", el("span", [el("span", c, class_="code-name") for c in codes], class_="codes")),
            el("td", f"{seconds:.2f}" if i is not None else "", self._cached_mark(i), class_="num", data_value=f"{seconds:.4f}"),
            el("td", torch),
            data_status=status,
            data_cached="true" if i is not None and doc.targets[i].cached is not None else None,
            data_codes=" ".join(codes),
            data_search=f"{where} {name}".lower(),
            id=f"row-{i}" if i is not None else None,
        )

    def _cached_mark(self, i: int | None) -> Html | None:
        """A reused target's mark in its row: it did not run now, the run it came from did."""
        came = self.doc.targets[i].cached if i is not None else None
        if came is None:
            return None
        return el("span", " cached", class_="sub", title=f"reused from the results cache{_from_cache(came)}")

    # -- codes ------------------------------------------------------------------------------

    def code_counts(self) -> Html | None:
        """Findings and targets per code, most severe code first (its default severity, from `codes`)."""
        doc = self.doc
        stats: dict[str, tuple[list[int], set[int], int]] = {}
        for f, d in enumerate(doc.diagnostics):
            found, targets, severity = stats.get(d.code, ([], set(), d.severity))
            found.append(f)
            targets.update(self.idx.finding_targets[f])
            stats[d.code] = (found, targets, min(severity, d.severity))
        if not stats:
            return None
        chips = []
        for code, (found, targets, seen) in sorted(stats.items(), key=lambda kv: (self.severity_of(kv[0], kv[1][2]), -len(kv[1][0]), kv[0])):
            severity = self.severity_of(code, seen)
            chips.append(
                el(
                    "li",
                    el(
                        "button",
                        el("span", code, class_="code-name"),
                        el("span", str(len(found)), class_="k"),
                        el("span", f"in {_plural(len(targets), 'target')}", class_="sub"),
                        type="button",
                        class_="chip",
                        data_only_code=code,
                        disabled=True,  # the script enables it: a filter needs JavaScript
                        title=f"{self.code_title(code)} ({SEVERITY_NAMES.get(severity, 'note')}): show only these",
                    ),
                    class_=f"sev-{severity}",
                    data_code=code,
                    data_findings=str(len(found)),
                    data_targets=str(len(targets)),
                )
            )
        return el("ul", chips, id="codes", class_="chips codes", aria_label="Findings by code")

    def severity_of(self, code: str, seen: int) -> int:
        info = CODES.get(code)
        return info.severity if info is not None else seen

    # -- root causes ------------------------------------------------------------------------

    def causes_block(self) -> Html | None:
        if not self.causes:
            return None
        shared = sum(1 for c in self.causes if len(c.targets) > 1)
        head = el(
            "tr",
            el("th", "Targets", scope="col", class_="num"),
            el("th", "Where it happens", scope="col"),
            el("th", "Code", scope="col"),
            el("th", "Targets and findings", scope="col"),
        )
        return el(
            "section",
            el("h2", "Root causes", el("span", str(len(self.causes)), class_="n")),
            el(
                "p",
                "Findings grouped by the line where the problem happens (the library's line for a problem inside a library, "
                f"your own line otherwise) and their code; the causes shared by the most targets first. {_plural(shared, 'cause')} "
                f"{'is' if shared == 1 else 'are'} shared by several targets.",
                class_="hint",
            ),
            el(
                "div",
                el("table", el("thead", head), el("tbody", [self.cause(c, x) for c, x in enumerate(self.causes)]), class_="causes"),
                class_="table-wrap",
            ),
            id="causes",
            class_="block",
        )

    def cause(self, c: int, cause: Cause) -> Html:
        where = self.where(cause.file, cause.cell, cause.line)
        by_target = [(t, [f for f in cause.findings if t in self.idx.finding_targets[f]]) for t in cause.targets]
        alone = [f for f in cause.findings if not self.idx.finding_targets[f]]
        links: list[Child] = [
            el(
                "li",
                el("a", self.target_label(t), href=f"#target-{t}", class_="target-link"),
                " ",
                _sep([self.finding_link(f) for f in fs]),
            )
            for t, fs in by_target
        ]
        links += [el("li", self.finding_link(f), " (the file's own finding)") for f in alone]
        return el(
            "tr",
            el("td", el("span", str(len(cause.targets)), class_="many"), class_="num"),
            el(
                "td",
                el("a", where, href=f"#d-{cause.findings[0]}", class_="where mono"),
                el("span", f" in the library {cause.library}", class_="lib") if cause.library else None,
                el("div", el("code", cause.text, class_="expr")) if cause.text else None,
            ),
            el("td", el("span", cause.code, class_="code-name"), class_=f"sev-{cause.severity}"),
            el("td", el("ul", links, class_="cause-links")),
            id=f"cause-{c}",
            class_=f"cause sev-{cause.severity}",
            data_filter_code=cause.code,
            data_targets=str(len(cause.targets)),
        )

    # -- findings by file -------------------------------------------------------------------

    def file_id(self, file: str) -> str:
        return "file-" + hashlib.sha1(os.path.abspath(file).encode("utf-8", "surrogateescape")).hexdigest()[:10]

    def files_block(self) -> Html:
        doc = self.doc
        files: dict[str, tuple[list[int], list[int]]] = {}  # file → (its targets, the findings shown in it)
        for i, t in enumerate(doc.targets):
            files.setdefault(os.path.abspath(t.file), ([], []))[0].append(i)
        for f, d in enumerate(doc.diagnostics):
            files.setdefault(os.path.abspath(d.file), ([], []))[1].append(f)
        sections = [self.file_section(file, ts, fs) for file, (ts, fs) in sorted(files.items(), key=lambda kv: self.idx.show(kv[0]))]
        return el(
            "section",
            el("h2", "Findings", el("span", str(len(doc.diagnostics)), class_="n")),
            el(
                "p",
                "By file: each finding on the line of your code that caused it, and the library's line when it is inside a library.",
                class_="hint",
            ),
            sections if sections else el("p", "Nothing to show.", class_="empty-state"),
            id="findings",
            class_="block",
        )

    def file_section(self, file: str, targets: list[int], findings: list[int]) -> Html:
        doc = self.doc
        items = []
        for t in targets:
            target = doc.targets[t]
            n = sum(1 for f in self.idx.target_findings[t] if doc.diagnostics[f].problem)
            in_cell = f", cell {target.cell}" if target.cell is not None else ""
            items.append(
                el(
                    "li",
                    el("span", target.status, class_=f"badge st-{target.status}"),
                    " ",
                    el("b", target.name),
                    f" ({target.kind}{in_cell}, line {target.line}, {target.seconds:.2f} s, torch {doc.target_torch[t]}{_from_cache(target.cached)}): ",
                    _plural(n, "problem") if n else STATUS_WORDS.get(target.status, target.status),
                    id=f"target-{t}",
                )
            )
        owners = sorted({o for f in findings if (o := doc.owners[f]) and os.path.abspath(o) != os.path.abspath(file)})
        note = el("p", "Found by running ", join(_sep([el("span", self.idx.show(o), class_="mono") for o in owners])), ".", class_="hint") if owners else None
        body: list[Child] = []
        last_cell: int | None = None
        ordered = sorted(findings, key=lambda f: (doc.diagnostics[f].cell or 0, doc.diagnostics[f].range.start, doc.diagnostics[f].code))
        for f in ordered:
            cell = doc.diagnostics[f].cell
            if cell is not None and cell != last_cell:
                body.append(el("h4", f"Cell {cell}"))
                last_cell = cell
            body.append(self.finding(f))
        return el(
            "section",
            el("h3", self.idx.show(file), class_="mono"),
            el("ul", items, class_="file-targets") if items else None,
            note,
            body or None,
            id=self.file_id(file),
            class_="file",
        )

    def finding(self, f: int) -> Html:
        doc = self.doc
        d = doc.diagnostics[f]
        targets = self.idx.finding_targets[f]
        cause = self.causes[self.cause_of[f]]
        meta: list[Child] = []
        if targets:
            meta += ["Target: " if len(targets) == 1 else "Targets: ", _sep([el("a", doc.targets[t].name, href=f"#target-{t}") for t in targets])]
        elif d.target:
            meta.append(f"Target: {d.target}")
        if len(cause.targets) > 1 or len(cause.findings) > 1:
            meta += [
                " · root cause shared by ",
                el("a", f"{_plural(len(cause.targets), 'target')}, {_plural(len(cause.findings), 'finding')}", href=f"#cause-{self.cause_of[f]}"),
            ]
        occurrences = d.data.get("occurrences")
        if isinstance(occurrences, int) and occurrences > 1:
            meta.append(f" · reached {occurrences} times")
        lib = library_line(d)
        lib_range = library_related(d)
        frame: dict[str, Any] = d.data["library_frame"] if isinstance(d.data.get("library_frame"), dict) else {}
        excerpts: list[Child] = []
        excerpts.append(self.excerpt(d.file, d.cell, d.range, d.severity, "your line, where the library is called" if lib else None))
        if lib is not None:
            rng = lib_range or Range.of(lib[1], 0, lib[1], 0)
            package = d.data.get("library") or frame.get("package")
            function = frame.get("function")
            what = f"inside the library {package}" + (f", in {function}" if function else "")
            excerpts.append(self.excerpt(lib[0], None, rng, d.severity, what, whole_line=lib_range is None))
        return el(
            "article",
            el(
                "header",
                el("span", SEVERITY_NAMES.get(d.severity, "note"), class_="sev-text"),
                el("span", d.code, class_="code-name"),
                el("span", self.code_title(d.code), class_="title"),
                el("a", self.where(d.file, d.cell, d.range.start.line, d.range.start.character), href=f"#d-{f}", class_="where mono"),
            ),
            el("div", meta, class_="meta") if meta else None,
            el("p", _rich(d.message), class_="message"),
            excerpts,
            self.chain(d),
            self.related(d, lib_range),
            self.fixes(d),
            self.facts(d),
            id=f"d-{f}",
            class_=f"finding sev-{d.severity}",
            data_filter_code=d.code,
        )

    def excerpt(self, file: str, cell: int | None, rng: Range, severity: int, what: str | None, *, whole_line: bool = False) -> Html:
        caption = [el("b", self.where(file, cell, rng.start.line)), f" · {what}" if what else None]
        count = self.sources.count(file, cell)
        first = max(0, rng.start.line - CONTEXT)
        last = min(rng.end.line, rng.start.line + MAX_SPAN - 1) + CONTEXT
        if count is not None:
            last = min(last, count - 1)
        lines = []
        for n in range(first, last + 1):
            text = self.sources.line(file, cell, n)
            if text is None:
                continue
            hit = rng.start.line <= n <= rng.end.line
            lines.append(el("span", _underlined(text, n, rng, whole_line) if hit else text, class_="l hit" if hit else "l", data_line=str(n + 1)))
        if not lines:
            code: Html = el("div", "The source of this line is not in the report.", class_="nosrc")
        else:
            code = el("pre", lines, class_="src")
        return el("figure", el("figcaption", caption), code, class_=f"excerpt sev-{severity}")

    def chain(self, d: Diagnostic) -> Html | None:
        frames = d.data.get("library_chain")
        if not isinstance(frames, list) or len(frames) < 2:
            return None
        items = []
        for fr in frames:
            if not isinstance(fr, dict):
                continue
            file, line = str(fr.get("file") or "?"), fr.get("line")
            src = str(fr.get("source") or "").strip()
            items.append(
                el(
                    "li",
                    el("span", f"{self.idx.show(file)}:{line}", class_="mono"),
                    f" in {fr.get('function')}" if fr.get("function") else None,
                    " " if src else None,
                    el("code", src) if src else None,
                    None if fr.get("project") else el("span", " (library)", class_="lib"),
                )
            )
        return el("details", el("summary", f"Chain of frames: {len(items)}, from your call to the library line"), el("ol", items, class_="chain"), open=True)

    def related(self, d: Diagnostic, shown: Range | None) -> Html | None:
        lib = library_line(d)
        rest = [r for r in d.related if not (shown is not None and lib is not None and r.file == lib[0] and r.range == shown)]
        if not rest:
            return None
        return el("div", el("h4", "Related locations"), el("ul", [self.related_item(r) for r in rest], class_="related"))

    def related_item(self, r: Related) -> Html:
        text = self.sources.line(r.file, r.cell, r.range.start.line)
        return el(
            "li",
            el("span", self.where(r.file, r.cell, r.range.start.line, r.range.start.character), class_="mono"),
            ": ",
            _rich(r.message),
            el("pre", el("span", _underlined(text, r.range.start.line, r.range, False), class_="l hit", data_line=str(r.range.start.line + 1)), class_="src")
            if text is not None and text.strip()
            else None,
        )

    def fixes(self, d: Diagnostic) -> Html | None:
        if not d.fixes:
            return None
        return el("div", el("h4", "Fixes" if len(d.fixes) > 1 else "Fix"), [self.fix(d, fix) for fix in d.fixes], class_="fixes")

    def fix(self, d: Diagnostic, fix: Fix) -> Html:
        kind = (
            el("span", f"assumption: {fix.assumes}", class_="tag assumption", title="asserted for every input: inputs where it is false will raise")
            if fix.assumes
            else el("span", "rewrite", class_="tag rewrite")
        )
        outcome, why = _outcome(fix, d.code)
        diffs = file_diffs(fix, self.sources)
        shown = [self.diff(fd, len(diffs) > 1) for fd in diffs]
        return el(
            "div",
            el(
                "div",
                el("span", "preferred", class_="tag preferred") if fix.is_preferred else None,
                kind,
                el("span", _rich(fix.title), class_="fix-title"),
                outcome,
                class_="fix-head",
            ),
            shown,
            el("div", why, class_="why") if why else None,
            class_="fix",
            data_outcome=fix.verification.status if fix.verification is not None else "not-verified",
        )

    def diff(self, fd: FileDiff, named: bool) -> Html:
        label = (
            el("div", self.where(fd.file, fd.cell, min(e.range.start.line for e in fd.edits)), class_="diff-file mono")
            if named or fd.cell is not None
            else None
        )
        if fd.rows is None:
            edits = [
                el(
                    "pre",
                    f"{self.where(e.file, e.cell, e.range.start.line, e.range.start.character)}: "
                    + ("insert" if e.range.start == e.range.end else "replace with")
                    + f"\n{e.new_text}",
                    class_="edit",
                )
                for e in fd.edits
            ]
            return el("div", label, edits)
        rows = []
        for r in fd.rows:
            if r.kind == GAP:
                rows.append(el("tr", el("td", "", class_="no"), el("td", "", class_="no"), el("td", "", class_="sign"), el("td", "\u22ef"), class_="gap"))
                continue
            sign = {"added": "+", "removed": "-"}.get(r.kind, " ")
            rows.append(
                el(
                    "tr",
                    el("td", "" if r.old is None else str(r.old), class_="no"),
                    el("td", "" if r.new is None else str(r.new), class_="no"),
                    el("td", sign, class_="sign"),
                    el("td", r.text),
                    class_=r.kind,
                )
            )
        return el("div", label, el("div", el("table", el("tbody", rows), class_="diff"), class_="table-wrap-diff"))

    def facts(self, d: Diagnostic) -> Html | None:
        """`data` as JSON (every key, known or not): what a hover, a fix or a bug report is made from."""
        if not d.data:
            return None
        text = json.dumps(d.data, indent=2, ensure_ascii=False, default=str)
        if len(text) > MAX_FACTS:
            text = text[:MAX_FACTS] + f"\n… ({len(text) - MAX_FACTS} more characters in the JSON report)"
        summary = el("summary", f"Raw facts ({_plural(len(d.data), 'key')}): what torch reported, for the hover, the fixes and bug reports")
        return el("details", summary, el("pre", text, class_="facts"))

    # -- silenced ---------------------------------------------------------------------------

    def ignored_block(self) -> Html | None:
        if not self.doc.ignored:
            return None
        items = [
            el(
                "li",
                el("span", self.where(d.file, d.cell, d.range.start.line, d.range.start.character), class_="mono"),
                " ",
                el("span", d.code, class_="code-name"),
                " ",
                _rich((d.message.splitlines() or [""])[0]),
            )
            for d in self.doc.ignored
        ]
        return el(
            "section",
            el("h2", "Silenced", el("span", str(len(items)), class_="n")),
            el("p", "Findings an `# exportlens: ignore` comment silences (listed with --show-ignored).", class_="hint"),
            el("ul", items, class_="related"),
            id="ignored",
            class_="block",
        )


def _from_cache(came: dict[str, Any] | None) -> str:
    """`, from the cache (run of …)` for a reused target's line, else nothing."""
    if came is None:
        return ""
    return f", from the cache (run of {came['finished']})" if came.get("finished") else ", from the cache"


def _sep(items: Iterable[Child], sep: str = ", ") -> list[Child]:
    out: list[Child] = []
    for i, item in enumerate(items):
        if i:
            out.append(sep if sep else Html("\n"))
        out.append(item)
    return out


def _underlined(text: str, n: int, rng: Range, whole_line: bool) -> Html:
    """One source line with the part of `rng` on it underlined (as the editor squiggles it)."""
    if whole_line:
        body = text.strip()
        a = len(text) - len(text.lstrip())
        return join([text[:a], el("span", body, class_="ul"), text[a + len(body) :]])
    a = utf16_to_index(text, rng.start.character) if n == rng.start.line else len(text) - len(text.lstrip())
    b = utf16_to_index(text, rng.end.character) if n == rng.end.line else len(text)
    if b <= a:  # an empty range: a mark where it is
        return join([text[:a], el("span", "", class_="ul empty", title="here"), text[a:]])
    return join([text[:a], el("span", text[a:b], class_="ul"), text[b:]])


def _outcome(fix: Fix, code: str) -> tuple[Html, str]:
    """The verification outcome as a label, and the details behind it."""
    v = fix.verification
    if v is None or v.status == "not-checked":
        detail = v.detail if v is not None and v.detail else "" if v is not None else "the report has no verification for this fix"
        return el("span", "not verified", class_="outcome unknown"), detail
    label = outcome_words(v, code)
    tone = {EXPORT_PASSES: "good", "fixes-this": "partial"}.get(v.status, "bad")
    details = []
    if v.remaining:
        details.append("remaining: " + ", ".join(v.remaining))
    if v.same_outputs is True:
        details.append("the model's outputs on the example inputs are unchanged")
    elif v.same_outputs is False:
        details.append("changes the model's outputs on the example inputs")
    if v.lost:
        details.append("no longer dynamic: " + ", ".join(v.lost))
    elif v.keeps_dynamic:
        details.append("the dimensions asked to be dynamic stay dynamic")
    if v.detail:
        details.append(v.detail)
    details.append(f"verified in {v.seconds:.1f} s")
    return el("span", label, class_=f"outcome {tone}"), "; ".join(details)


def render(doc: ReportDoc) -> str:
    """The page of a report, as text (`to_bytes` for a file)."""
    return Page(doc).render()


def to_bytes(page: str) -> bytes:
    """UTF-8 (the page says so); a lone surrogate from an undecodable file name becomes a character reference."""
    return page.encode("utf-8", "xmlcharrefreplace")
