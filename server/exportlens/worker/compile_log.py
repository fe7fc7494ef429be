"""Dynamo's log records as JSON: graph breaks, recompiles and the recompile limit (docs/torch-facts.md §2.2–2.3).

Pure text parsing of the messages torch logs; `compile_watch` feeds it the records. Imports only
the standard library and `worker.frames` (for tracebacks and which frames are the user's).
"""

from __future__ import annotations

import os
import re
from typing import Any

from exportlens.worker.frames import outside, parse_traceback, resumed

_KEEP_FAILURES = 3  # each recompile lists every older cache entry again; the newest say it all

_BREAK_HEAD = re.compile(
    r"^Graph break (?P<dup>\(user stack suppressed due to duplicate graph break\) )?"
    r"in user code at (?P<file>.+):(?P<line>\d+)\s*$"
)
GB_URL = re.compile(r"(?P<url>https?://\S+/(?P<gb>gb\d+)\.html)")
# dynamo gave up on the function it was compiling: the break's own text follows, then, when another
# break stopped it from resuming, that one after the marker (docs/torch-facts.md §2.5)
FALLBACK = "Failed to handle graph break gracefully. Skipping the function and falling back to eager."
_WHILE_HANDLING = "*** While handling this graph break, another graph break occurred: ***"
_RECOMPILE_HEAD = re.compile(r"^Recompiling function (?P<name>\S+) in (?P<file>.+):(?P<line>\d+)\s*$")
_FAILURE = re.compile(r"^\s*- (?P<id>\d+/\d+): (?P<text>.*)$")
_LIMIT_HEAD = re.compile(r"hit config\.(?P<which>\w+) \((?P<limit>\d+)\)")
_LIMIT_FN = re.compile(r"function: '(?P<name>[^']+)' \((?P<file>.+):(?P<line>\d+)\)")
_LIMIT_REASON = re.compile(r"last reason: (?:(?P<id>\d+/\d+): )?(?P<text>.*)")


def parse_graph_break(message: str) -> dict[str, Any] | None:
    """A `__graph_breaks` record as a raw finding: reason, gb id, hints, user frames; for dynamo's
    fall-back record, the break it fell back from, with `fallback` saying why it could not resume."""
    lines = message.splitlines()
    if not lines:
        return None
    head = _BREAK_HEAD.match(lines[0])
    if not head:
        return None
    tb_at = next((i for i, ln in enumerate(lines) if ln.strip() == "User code traceback:"), len(lines))
    reason_lines = lines[1:tb_at]
    if reason_lines and reason_lines[0].startswith("Graph Break Reason: "):
        reason_lines[0] = reason_lines[0][len("Graph Break Reason: ") :]
    fallback: dict[str, Any] | None = None
    if reason_lines and reason_lines[0].startswith(FALLBACK):
        reason_lines = reason_lines[1:]
        while reason_lines and not reason_lines[0].strip():
            reason_lines = reason_lines[1:]
        fallback = {}
        if _WHILE_HANDLING in reason_lines:
            at = reason_lines.index(_WHILE_HANDLING)
            why = _reason_parts(reason_lines[at + 1 :])
            reason_lines = reason_lines[:at]
            fallback = {"why": why["title"], "why_explanation": why["explanation"], "why_context": why["context"]}
    parts = _reason_parts(reason_lines)
    url = GB_URL.search("\n".join(reason_lines)) or GB_URL.search(message)
    frames = [f for f in parse_traceback(lines[tb_at + 1 :]) if outside(f["file"])]
    header = {"file": os.path.abspath(head["file"]), "line": int(head["line"])}
    out = {
        "type": "graph-break",
        "title": parts["title"],
        "reason": "\n".join(ln.rstrip() for ln in reason_lines).strip(),
        "explanation": parts["explanation"],
        "hints": parts["hints"],
        "debug_context": parts["context"],
        "gb_id": url["gb"] if url else None,
        "url": url["url"] if url else None,
        "at": header,
        "frames": frames or [header],
        "duplicate": bool(head["dup"]),
    }
    if fallback is not None:
        out["fallback"] = fallback
    return out


def _reason_parts(reason_lines: list[str]) -> dict[str, Any]:
    """One break's text as dynamo formats it: its title (the gb_type, the line above "Explanation:"),
    explanation, hints and developer context."""
    explain_at = next((i for i, ln in enumerate(reason_lines) if ln.strip().startswith("Explanation:")), None)
    if explain_at is not None:
        before = [ln.strip() for ln in reason_lines[:explain_at] if ln.strip()]
        title = before[-1] if before else ""
    else:
        title = next((ln.strip() for ln in reason_lines if ln.strip()), "")
    explanation: list[str] = []
    hints: list[str] = []
    context = ""
    section = ""
    for ln in reason_lines[explain_at or 0 :]:
        s = ln.strip()
        if s.startswith("Explanation:"):
            section = "explanation"
            explanation.append(s[len("Explanation:") :].strip())
        elif s.startswith("Hint:"):
            section = "hint"
            hints.append(s[len("Hint:") :].strip())
        elif s.startswith("Developer debug context:"):
            section = ""
            context = s[len("Developer debug context:") :].strip()
        elif s.startswith("For more details"):
            section = ""
        elif section == "explanation" and s:
            explanation.append(s)
    return {"title": title, "explanation": "\n".join(explanation).strip(), "hints": hints, "context": context}


def parse_recompile(message: str) -> dict[str, Any] | None:
    """A `__recompiles` record: the recompiled code and each failed guard (newest entry first)."""
    lines = message.splitlines()
    head = _RECOMPILE_HEAD.match(lines[0]) if lines else None
    if not head:
        return None
    failures: list[dict[str, Any]] = []
    extra: list[str] = []
    for ln in lines[1:]:
        m = _FAILURE.match(ln)
        if m and not m["text"].startswith("User stack trace"):
            if failures:
                failures[-1]["frames"] = parse_traceback(extra)
            extra = []
            text = m["text"]
            guard, _, comment = text.partition("  # ")
            failures.append(
                {"compile_id": m["id"], "reason": text.rstrip(), "guard": guard.strip(), "code": comment.split("  # ")[0].strip() if comment else ""}
            )
        elif failures:
            extra.append(re.sub(r"^\s*-", "", ln))
    if failures:
        failures[-1]["frames"] = parse_traceback(extra)
    out = {
        "type": "recompile",
        "function": head["name"],
        "code": {"file": os.path.abspath(head["file"]), "line": int(head["line"]), "name": head["name"]},
        "failures": failures[:_KEEP_FAILURES],
        "failed_entries": len(failures),
        "reason": failures[0]["reason"] if failures else "",
    }
    resumes = resumed(head["name"])
    if resumes is not None:
        out["resumes"] = resumes
    return out


def parse_limit(message: str) -> dict[str, Any] | None:
    """The `recompile_limit` warning: which function gave up compiling, and the last reason."""
    head = _LIMIT_HEAD.search(message)
    fn = _LIMIT_FN.search(message)
    if not head or not fn:
        return None
    last = _LIMIT_REASON.search(message)
    out = {
        "type": "recompile-limit",
        "limit": int(head["limit"]),
        "config": head["which"],
        "function": fn["name"],
        "code": {"file": os.path.abspath(fn["file"]), "line": int(fn["line"]), "name": fn["name"]},
        "reason": last["text"].strip() if last else "",
        "compile_id": last["id"] if last and last["id"] else None,
    }
    resumes = resumed(fn["name"])
    if resumes is not None:
        out["resumes"] = resumes
    return out
