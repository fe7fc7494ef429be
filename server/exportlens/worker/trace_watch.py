"""Watch `torch.jit.trace` while the user's script runs: tracer warnings and failed checks.

Each `torch.jit.trace` call is a target. Its `TracerWarning`s are recorded with the Python
stack at the moment they were raised (the warning's own file is torch's `_trace.py` for the
check-run warnings, docs/torch-facts.md §3; the user's line is then in a `# path:line:col` suffix or
on the stack), one finding per distinct (file, line, warning text) with how often it came: the
check run's re-trace repeats every warning and is not counted again, a loop in a library repeats
one line many times, and past `MAX_SITES` places only the numbers are kept. Warnings from torch's
own modules are left out, as torch's own warning filter does. A `TracingCheckError` becomes a
finding with its graph diff, and the call then returns the trace made without the check, so the
script goes on and later targets are still analysed. Imports only torch and the standard library.
"""

from __future__ import annotations

import os
import re
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch

from exportlens.worker import capture
from exportlens.worker.frames import call_site, definition, live_stack

Emit = Callable[[dict[str, Any]], None]

_SOURCE_LINE = re.compile(r"^\s*(?P<file>\S.*?)\((?P<line>\d+)\): (?P<name>\S+)\s*$")
_MESSAGE_LIMIT = 8000
MAX_SITES = 50  # distinct warning places per trace; past it, only the counts (a trace may warn thousands of times)
_TORCH_DIR = os.path.join(os.path.dirname(os.path.abspath(torch.__file__)), "")
_JIT_DIR = os.path.join(_TORCH_DIR, "jit", "")

_state: TraceWatch | None = None


def _section(message: str, title: str) -> str:
    """The tab-indented block under `title:` in a TracingCheckError message."""
    lines = message.splitlines()
    for i, ln in enumerate(lines):
        if ln.strip() == title + ":":
            depth = len(ln) - len(ln.lstrip("\t "))
            out = []
            for body in lines[i + 1 :]:
                if body.strip() and len(body) - len(body.lstrip("\t ")) <= depth:
                    break
                out.append(body)
            return "\n".join(_dedent_tabs(out)).rstrip()
    return ""


def _dedent_tabs(lines: list[str]) -> list[str]:
    depth = min((len(ln) - len(ln.lstrip("\t")) for ln in lines if ln.strip()), default=0)
    return [ln[depth:] for ln in lines]


def source_locations(block: str) -> list[dict[str, Any]]:
    """`path(line): func` lines (innermost first, as torch prints them)."""
    out = []
    for ln in block.splitlines():
        m = _SOURCE_LINE.match(ln)
        if m:
            file = m["file"]
            out.append({"file": file if file.startswith("<") else os.path.abspath(file), "line": int(m["line"]), "name": m["name"]})
    return out


def check_error_finding(exc: BaseException) -> dict[str, Any]:
    """A `TracingCheckError` as a raw finding: what differed, the diff, where each trace came from."""
    text = str(exc)
    return {
        "type": "trace-check-failed",
        "message": text[:_MESSAGE_LIMIT],
        "summary": [ln.strip() for ln in text.splitlines()[:3] if ln.strip()],
        "graph_diff": _section(text, "Graph diff")[:_MESSAGE_LIMIT],
        "node_diff": _section(text, "Node diff"),
        "trace_source": source_locations(_section(text, "Trace source location")),
        "check_source": source_locations(_section(text, "Check source location")),
        "exception_source": source_locations(_section(text, "Exception")),
        "exception": "encountered an exception while running the trace" in text,
    }


class TraceWatch:
    """Replaces `torch.jit.trace` for one job and emits one target event per call."""

    def __init__(self, emit: Emit, root: str) -> None:
        self.emit = emit
        self.root = root
        self.original = torch.jit.trace
        self.count = 0
        self.depth = 0  # torch's check run calls `torch.jit.trace` again: that is not a target

    def install(self) -> None:
        torch.jit.trace = self.trace  # type: ignore[assignment]

    def trace(self, func: Any, example_inputs: Any = None, *args: Any, **kwargs: Any) -> Any:
        """`torch.jit.trace`, recording its warnings and surviving a failed check."""
        if self.depth:
            return self.original(func, example_inputs, *args, **kwargs)
        file, line = call_site(sys._getframe(1))
        self.count += 1
        event: dict[str, Any] = {
            "event": "target",
            "name": f"trace at {os.path.basename(file)}:{line}",
            "file": file,
            "line": line,
            "kind": "trace",
            "definition": definition(func),
        }
        found: list[dict[str, Any]] = []
        shown: list[tuple[Any, ...]] = []
        started = time.perf_counter()
        self.depth += 1
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("always")
                warnings.showwarning = self._recorder(found, shown, event)  # catch_warnings restores it
                try:
                    return self.original(func, example_inputs, *args, **kwargs)
                except torch.jit.TracingCheckError as exc:
                    found.append(check_error_finding(exc))
                    event["recovered"] = True
                    return self._without_check(func, example_inputs, args, kwargs)
                except Exception as exc:
                    event["exception"] = capture.exception_info(exc)
                    event["target_error"] = "the torch.jit.trace call raised"
                    try:
                        exc._exportlens_reported = True  # type: ignore[attr-defined]
                    except Exception:
                        pass
                    raise
        finally:
            self.depth -= 1
            event["seconds"] = time.perf_counter() - started
            event["trace_findings"] = found
            self.emit(event)
            for message, category, filename, lineno in shown:  # the script's own filters still see them
                warnings.warn_explicit(message, category, filename, lineno)

    def _recorder(self, found: list[dict[str, Any]], shown: list[tuple[Any, ...]], head: dict[str, Any]) -> Callable[..., None]:
        """Records each distinct tracer warning (streamed at once, so a job stopped later keeps it) and counts repeats."""
        sites: dict[tuple[str, int, str], dict[str, Any]] = {}
        overflow = {"sites": 0, "warnings": 0, "kept": MAX_SITES}
        extra: set[tuple[str, int, str]] = set()

        def record(message: Any, category: type[Warning], filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
            shown.append((message, category, filename, lineno))
            if not issubclass(category, torch.jit.TracerWarning) or _torch_internal(filename):
                return
            text = str(message)
            key = (os.path.abspath(filename), lineno, text.split("\n", 1)[0])
            checking = _in_check_run(sys._getframe(1))
            if key in sites:
                if not checking:  # the check run's re-trace warns again at every place: not a new occurrence
                    sites[key]["count"] += 1
                return
            if len(sites) >= MAX_SITES:
                if key not in extra:
                    extra.add(key)
                    overflow["sites"] += 1
                overflow["warnings"] += 0 if checking else 1
                head["trace_overflow"] = dict(overflow)
                return
            item = {
                "type": "tracer-warning",
                "message": text[:_MESSAGE_LIMIT],
                "category": category.__name__,
                "file": key[0],
                "line": lineno,
                "stack": live_stack(sys._getframe(1)),
                "count": 1,
            }
            sites[key] = item
            found.append(item)
            self.emit(
                {
                    "event": "finding",
                    "name": head["name"],
                    "file": head["file"],
                    "line": head["line"],
                    "kind": "trace",
                    "definition": head.get("definition"),
                    "trace_findings": [item],
                }
            )

        return record

    def _without_check(self, func: Any, example_inputs: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The trace without `check_trace` (what the user gets when checks are off), else `func`."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return self.original(func, example_inputs, *args, **{**kwargs, "check_trace": False})
        except Exception:
            return func


def _torch_internal(filename: str) -> bool:
    """A warning raised in torch's own modules (not torch.jit's checks): torch's own filter hides it (docs/torch-facts.md §3)."""
    full = os.path.abspath(filename)
    return full.startswith(_TORCH_DIR) and not full.startswith(_JIT_DIR)


def _in_check_run(frame: Any) -> bool:
    """Whether torch.jit.trace's check (`_check_trace`, which traces the function again) is running."""
    while frame is not None:
        if frame.f_code.co_name == "_check_trace" and os.path.abspath(frame.f_code.co_filename).startswith(_JIT_DIR):
            return True
        frame = frame.f_back
    return False


def install(emit: Emit, root: str) -> TraceWatch:
    """Start watching `torch.jit.trace` for this job (call before the user's file runs)."""
    global _state
    _state = TraceWatch(emit, root)
    _state.install()
    return _state
