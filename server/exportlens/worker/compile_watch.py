"""Watch `torch.compile` while the user's script runs: graph breaks and recompiles per callable.

Dynamo reports graph breaks and recompiles only as log records (docs/torch-facts.md §2.2–2.3):
`torch._dynamo.explain` misses breaks (a `print` before any graph), so this module listens to
the `graph_breaks`/`recompiles` logs and the `recompile_limit` warning. `torch.compile` is
replaced by a wrapper that notes where each compiled callable was made (the target) and which
one is running, so every record lands on the callable whose call caused it. The default
backend becomes the job's `compile_backend` (`eager` unless set): breaks are the same and it
compiles in milliseconds instead of ~20 s for inductor. Targets are emitted by `finish()`.
Imports only torch and the standard library.
"""

from __future__ import annotations

import functools
import linecache
import logging
import os
import re
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import torch

from exportlens.worker import stacks

Emit = Callable[[dict[str, Any]], None]

GRAPH_BREAK_LOG = "torch._dynamo.symbolic_convert.__graph_breaks"
RECOMPILE_LOG = "torch._dynamo.guards.__recompiles"
LIMIT_LOG = "torch._dynamo.convert_frame"

_TORCH_DIR = os.path.join(os.path.dirname(os.path.abspath(torch.__file__)), "")
_OWN_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "")
_LOGGING_DIR = os.path.join(os.path.dirname(os.path.abspath(logging.__file__)), "")
_WARNINGS_FILE = os.path.abspath(warnings.__file__)
_KEEP_FAILURES = 3  # each recompile lists every older cache entry again; the newest say it all

_BREAK_HEAD = re.compile(r"^Graph break (?P<dup>\(user stack suppressed due to duplicate graph break\) )?"
                         r"in user code at (?P<file>.+):(?P<line>\d+)\s*$")
_TB_FILE = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<name>.+?)\s*$')
_GB_URL = re.compile(r"(?P<url>https?://\S+/(?P<gb>gb\d+)\.html)")
_RECOMPILE_HEAD = re.compile(r"^Recompiling function (?P<name>\S+) in (?P<file>.+):(?P<line>\d+)\s*$")
_FAILURE = re.compile(r"^\s*- (?P<id>\d+/\d+): (?P<text>.*)$")
_LIMIT_HEAD = re.compile(r"hit config\.(?P<which>\w+) \((?P<limit>\d+)\)")
_LIMIT_FN = re.compile(r"function: '(?P<name>[^']+)' \((?P<file>.+):(?P<line>\d+)\)")
_LIMIT_REASON = re.compile(r"last reason: (?:(?P<id>\d+/\d+): )?(?P<text>.*)")

_state: Watch | None = None


def _outside(path: str) -> bool:
    """A frame the user might own: not torch, not ExportLens, not a frozen/generated module."""
    full = os.path.abspath(path) if not path.startswith("<") else path
    return not (path.startswith("<") or full.startswith(_TORCH_DIR) or full.startswith(_OWN_DIR)
                or full.startswith(_LOGGING_DIR) or full == _WARNINGS_FILE)


def frame_json(frame: FrameType) -> dict[str, Any]:
    """A live frame as JSON, with the exact columns of its current instruction (3.11+)."""
    code = frame.f_code
    out: dict[str, Any] = {"file": os.path.abspath(code.co_filename), "line": frame.f_lineno, "name": code.co_name}
    if stacks.where(code.co_filename) == "stdlib":
        out["where"] = "stdlib"  # not a library the user imported: the boundary logic skips it
    try:
        positions = list(code.co_positions())[frame.f_lasti // 2]
        line, end_line, col, end_col = positions
        if line == frame.f_lineno and None not in (end_line, col, end_col):
            out.update({"end_line": end_line, "col": col, "end_col": end_col})
    except (AttributeError, IndexError, ValueError):
        pass
    return out


def live_stack(start: FrameType | None) -> list[dict[str, Any]]:
    """The frames above `start` that are not torch or ExportLens, outermost first."""
    frames = []
    frame = start
    while frame is not None:
        if _outside(frame.f_code.co_filename):
            frames.append(frame_json(frame))
        frame = frame.f_back
    return list(reversed(frames))


def _caret_columns(file: str, line: int, caret: str) -> tuple[int, int] | None:
    """UTF-8 byte columns of a traceback caret line (`   ^^^^`) under `file:line`."""
    marks = caret.rstrip()
    body = marks.lstrip()
    if not body or set(body) - set("^~"):
        return None
    source = linecache.getline(file, line).rstrip("\r\n")
    if not source:
        return None
    indent = len(source) - len(source.lstrip())
    start = len(marks) - len(body) - 4 + indent
    end = len(marks) - 4 + indent
    if start < 0 or end > len(source) or end <= start:
        return None
    return len(source[:start].encode()), len(source[:end].encode())


def parse_traceback(lines: list[str]) -> list[dict[str, Any]]:
    """`File "p", line n, in f` entries (outermost first) with caret columns when shown."""
    frames: list[dict[str, Any]] = []
    i = 0
    while i < len(lines):
        m = _TB_FILE.match(lines[i])
        if not m:
            i += 1
            continue
        fr: dict[str, Any] = {"file": os.path.abspath(m["file"]) if not m["file"].startswith("<") else m["file"],
                              "line": int(m["line"]), "name": m["name"]}
        if stacks.where(fr["file"]) == "stdlib":
            fr["where"] = "stdlib"
        i += 1
        if i < len(lines) and not _TB_FILE.match(lines[i]) and lines[i].strip():
            fr["loc"] = lines[i].strip()
            i += 1
            if i < len(lines) and lines[i].strip() and set(lines[i].strip()) <= set("^~"):
                cols = _caret_columns(fr["file"], fr["line"], lines[i])
                if cols is not None:
                    fr.update({"end_line": fr["line"], "col": cols[0], "end_col": cols[1]})
                i += 1
        frames.append(fr)
    return frames


def parse_graph_break(message: str) -> dict[str, Any] | None:
    """A `__graph_breaks` record as a raw finding: reason, gb id, hints, user frames."""
    lines = message.splitlines()
    if not lines:
        return None
    head = _BREAK_HEAD.match(lines[0])
    if not head:
        return None
    tb_at = next((i for i, ln in enumerate(lines) if ln.strip() == "User code traceback:"), len(lines))
    reason_lines = lines[1:tb_at]
    if reason_lines and reason_lines[0].startswith("Graph Break Reason: "):
        reason_lines[0] = reason_lines[0][len("Graph Break Reason: "):]
    explain_at = next((i for i, ln in enumerate(reason_lines) if ln.strip().startswith("Explanation:")), None)
    if explain_at is not None:
        before = [ln.strip() for ln in reason_lines[:explain_at] if ln.strip()]
        title = before[-1] if before else ""
    else:
        title = reason_lines[0].strip() if reason_lines else ""
    explanation: list[str] = []
    hints: list[str] = []
    context = ""
    section = ""
    for ln in reason_lines[explain_at or 0:]:
        s = ln.strip()
        if s.startswith("Explanation:"):
            section = "explanation"
            explanation.append(s[len("Explanation:"):].strip())
        elif s.startswith("Hint:"):
            section = "hint"
            hints.append(s[len("Hint:"):].strip())
        elif s.startswith("Developer debug context:"):
            section = ""
            context = s[len("Developer debug context:"):].strip()
        elif s.startswith("For more details"):
            section = ""
        elif section == "explanation" and s:
            explanation.append(s)
    url = _GB_URL.search(message)
    frames = [f for f in parse_traceback(lines[tb_at + 1:]) if _outside(f["file"])]
    header = {"file": os.path.abspath(head["file"]), "line": int(head["line"])}
    return {
        "type": "graph-break",
        "title": title,
        "reason": "\n".join(ln.rstrip() for ln in reason_lines).strip(),
        "explanation": "\n".join(explanation).strip(),
        "hints": hints,
        "debug_context": context,
        "gb_id": url["gb"] if url else None,
        "url": url["url"] if url else None,
        "at": header,
        "frames": frames or [header],
        "duplicate": bool(head["dup"]),
    }


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
            failures.append({"compile_id": m["id"], "reason": text.rstrip(), "guard": guard.strip(),
                             "code": comment.split("  # ")[0].strip() if comment else ""})
        elif failures:
            extra.append(re.sub(r"^\s*-", "", ln))
    if failures:
        failures[-1]["frames"] = parse_traceback(extra)
    return {
        "type": "recompile",
        "function": head["name"],
        "code": {"file": os.path.abspath(head["file"]), "line": int(head["line"]), "name": head["name"]},
        "failures": failures[:_KEEP_FAILURES],
        "failed_entries": len(failures),
        "reason": failures[0]["reason"] if failures else "",
    }


def parse_limit(message: str) -> dict[str, Any] | None:
    """The `recompile_limit` warning: which function gave up compiling, and the last reason."""
    head = _LIMIT_HEAD.search(message)
    fn = _LIMIT_FN.search(message)
    if not head or not fn:
        return None
    last = _LIMIT_REASON.search(message)
    return {
        "type": "recompile-limit",
        "limit": int(head["limit"]),
        "config": head["which"],
        "function": fn["name"],
        "code": {"file": os.path.abspath(fn["file"]), "line": int(fn["line"]), "name": fn["name"]},
        "reason": last["text"].strip() if last else "",
        "compile_id": last["id"] if last and last["id"] else None,
    }


@dataclass
class Target:
    """One `torch.compile(...)` call site and everything its compiled callables caused."""

    name: str
    file: str
    line: int
    definition: dict[str, Any] | None
    options: dict[str, Any]
    findings: list[dict[str, Any]] = field(default_factory=list)
    calls: int = 0
    seconds: float = 0.0
    error: dict[str, Any] | None = None

    def event(self) -> dict[str, Any]:
        out = {"event": "target", "name": self.name, "file": self.file, "line": self.line, "kind": "compile",
               "seconds": self.seconds, "calls": self.calls, "definition": self.definition,
               "compile_options": self.options, "compile_findings": self.findings}
        if self.error is not None:
            out["compile_error"] = self.error
        return out


def _definition(obj: Any) -> dict[str, Any] | None:
    """Where the compiled code is defined: a function's code, or a module's `forward`."""
    owner = getattr(obj, "__self__", None)
    if isinstance(owner, torch.nn.Module) and getattr(obj, "__name__", "") in ("_call_impl", "__call__"):
        obj = owner  # `module.compile()` compiles the bound `_call_impl`
    if isinstance(obj, torch.nn.Module):
        obj = getattr(type(obj), "forward", None)
    obj = getattr(obj, "__func__", obj)
    while hasattr(obj, "__wrapped__") and not hasattr(obj, "__code__"):
        obj = obj.__wrapped__
    code = getattr(obj, "__code__", None)
    if code is None:
        return None
    return {"file": os.path.abspath(code.co_filename), "line": code.co_firstlineno, "name": code.co_name}


class _Handler(logging.Handler):
    """Routes dynamo's log records to the watch; never raises into torch."""

    def __init__(self, watch: Watch) -> None:
        super().__init__(logging.DEBUG)
        self.watch = watch

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.watch.on_record(record)
        except Exception:  # a parsing bug of ours must not break the user's compile
            pass


class Watch:
    """The state of one job: targets by call site, the callable running now, the log handler."""

    def __init__(self, emit: Emit, root: str, backend: str = "eager") -> None:
        self.emit = emit
        self.root = root
        self.backend = backend or "eager"
        self.targets: dict[tuple[str, int], Target] = {}
        self.active: list[Target] = []
        self.handler = _Handler(self)
        self.original = torch.compile
        self.finished = False

    # -- installation -------------------------------------------------------------------------
    def install(self) -> None:
        self.ensure_logging()
        torch.compile = self.compile  # type: ignore[assignment]

    def ensure_logging(self) -> None:
        """Turn the two logs on and listen; again if the script's own `set_logs` reset them."""
        breaks = logging.getLogger(GRAPH_BREAK_LOG)
        logger = logging.getLogger("torch._dynamo")
        if not breaks.isEnabledFor(logging.DEBUG):
            torch._logging.set_logs(graph_breaks=True, recompiles=True)
        if self.handler not in logger.handlers:  # set_logs drops foreign handlers: add it after
            logger.addHandler(self.handler)

    # -- torch.compile replacement ------------------------------------------------------------
    def compile(self, model: Any = None, **kwargs: Any) -> Any:
        """`torch.compile` with the job's backend, remembering the call site as a target."""
        site = _call_site(sys._getframe(1))
        if model is None:
            return lambda m: self._compile(m, site, kwargs)
        return self._compile(model, site, kwargs)

    def _compile(self, model: Any, site: tuple[str, int], kwargs: dict[str, Any]) -> Any:
        user_backend = kwargs.get("backend")
        options = {"backend": _backend_name(user_backend), "dynamic": kwargs.get("dynamic"),
                   "fullgraph": bool(kwargs.get("fullgraph", False)), "mode": kwargs.get("mode")}
        if user_backend in (None, "inductor") and self.backend != "inductor":
            kwargs = {**kwargs, "backend": self.backend}
            kwargs.pop("mode", None)
            kwargs.pop("options", None)
        options["used_backend"] = _backend_name(kwargs.get("backend") or "inductor")
        compiled = self.original(model, **kwargs)
        target = self._target(site, model, options)
        if isinstance(compiled, torch.nn.Module) and callable(getattr(compiled, "forward", None)):
            compiled.forward = self._wrap(compiled.forward, target)  # OptimizedModule allows it
            return compiled
        if callable(compiled):
            return self._wrap(compiled, target)
        return compiled

    def _target(self, site: tuple[str, int], model: Any, options: dict[str, Any]) -> Target:
        target = self.targets.get(site)
        if target is None:
            name = f"compile at {os.path.basename(site[0])}:{site[1]}"
            target = Target(name, site[0], site[1], _definition(model), options)
            self.targets[site] = target
        return target

    def _wrap(self, fn: Callable[..., Any], target: Target) -> Callable[..., Any]:
        watch = self

        @functools.wraps(fn)
        def run_compiled(*args: Any, **kwargs: Any) -> Any:
            watch.ensure_logging()
            watch.active.append(target)
            target.calls += 1
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            except Exception as exc:
                watch.on_exception(target, exc)
                raise
            finally:
                target.seconds += time.perf_counter() - started
                watch.active.pop()

        return run_compiled

    # -- records ------------------------------------------------------------------------------
    def current(self, code: dict[str, Any] | None) -> Target:
        """The callable running now; without one, a target named after the code dynamo saw."""
        if self.active:
            return self.active[-1]
        file = (code or {}).get("file") or "<unknown>"
        line = int((code or {}).get("line") or 1)
        site = (file, line)
        if site not in self.targets:
            self.targets[site] = Target(f"compile at {os.path.basename(file)}:{line}", file, line, code, {})
        return self.targets[site]

    def on_record(self, record: logging.LogRecord) -> None:
        name = record.name
        if name == GRAPH_BREAK_LOG:
            found = parse_graph_break(record.getMessage())
            if found is None:
                return
            target = self.current(found["at"])
            if found["duplicate"] and any(f.get("type") == "graph-break" and f["at"] == found["at"]
                                          and f["title"] == found["title"] for f in target.findings):
                return
            target.findings.append(found)
        elif name == RECOMPILE_LOG:
            found = parse_recompile(record.getMessage())
            if found is None:
                return
            found["call_stack"] = live_stack(sys._getframe(1))
            self.current(found["code"]).findings.append(found)
        elif name == LIMIT_LOG and record.levelno >= logging.WARNING and "recompile_limit" in record.getMessage():
            found = parse_limit(record.getMessage())
            if found is None:
                return
            found["call_stack"] = live_stack(sys._getframe(1))
            self.current(found["code"]).findings.append(found)

    def on_exception(self, target: Target, exc: BaseException) -> None:
        """`fullgraph=True` turns a break into an exception: keep it as a graph-break finding."""
        from torch._dynamo import exc as dynamo_exc

        if not isinstance(exc, dynamo_exc.Unsupported) or getattr(exc, "_exportlens_seen", False):
            return
        text = str(exc)
        frames = parse_traceback(text.split("from user code:", 1)[1].splitlines()) if "from user code:" in text else []
        url = _GB_URL.search(text)
        first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
        hints = [ln.strip()[len("Hint:"):].strip() for ln in text.splitlines() if ln.strip().startswith("Hint:")]
        explanation = [ln.strip()[len("Explanation:"):].strip() for ln in text.splitlines()
                       if ln.strip().startswith("Explanation:")]
        target.findings.append({
            "type": "graph-break", "title": getattr(exc, "gb_type", None) or first, "reason": text[:4000],
            "explanation": "\n".join(explanation), "hints": hints, "debug_context": "",
            "gb_id": url["gb"] if url else None, "url": url["url"] if url else None,
            "at": frames[-1] if frames else None, "frames": frames, "duplicate": False, "fullgraph": True,
        })
        try:  # the finding says it all: job.py must not report the same break as a crash
            exc._exportlens_seen = True  # type: ignore[attr-defined]
            exc._exportlens_reported = True  # type: ignore[attr-defined]
        except Exception:
            pass

    # -- the end ------------------------------------------------------------------------------
    def finish(self) -> None:
        """Emit one target event per compile call site whose callable ran (or broke)."""
        if self.finished:
            return
        self.finished = True
        self._add_metrics()
        for target in self.targets.values():
            if target.calls or target.findings:
                self.emit(target.event())

    def _add_metrics(self) -> None:
        """Each target's compile count, from dynamo's own per-compile metrics (a bonus)."""
        try:
            from torch._dynamo.utils import get_compilation_metrics

            metrics = list(get_compilation_metrics())
        except Exception:
            return
        for target in self.targets.values():
            d = target.definition or {}
            count = 0
            for m in metrics:
                filename = getattr(m, "co_filename", None)
                if filename and os.path.abspath(filename) == d.get("file") and m.co_firstlineno == d.get("line"):
                    count += 1
            target.options["compiles"] = count


def _backend_name(backend: Any) -> str:
    if backend is None:
        return "inductor"
    if isinstance(backend, str):
        return backend
    return getattr(backend, "__name__", None) or type(backend).__name__


def _call_site(frame: FrameType | None) -> tuple[str, int]:
    """The innermost frame outside torch/ExportLens: who called `torch.compile`."""
    first = frame
    while frame is not None:
        if _outside(frame.f_code.co_filename):
            return os.path.abspath(frame.f_code.co_filename), frame.f_lineno
        frame = frame.f_back
    if first is None:
        return "<unknown>", 1
    return os.path.abspath(first.f_code.co_filename), first.f_lineno


def install(emit: Emit, root: str, backend: str = "eager") -> Watch:
    """Start watching `torch.compile` for this job (call before the user's file runs)."""
    global _state
    _state = Watch(emit, root, backend)
    _state.install()
    return _state


def finish() -> None:
    """Emit the compile targets (call after the user's file ran, also when it raised)."""
    if _state is not None:
        _state.finish()
