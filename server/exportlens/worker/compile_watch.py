"""Watch `torch.compile` while the user's script runs: graph breaks and recompiles per callable.

Dynamo reports graph breaks and recompiles only as log records (docs/torch-facts.md §2.2–2.3):
`torch._dynamo.explain` misses breaks (a `print` before any graph), so this module listens to
the `graph_breaks`/`recompiles` logs and the `recompile_limit` warning. `torch.compile` is
replaced by a wrapper that notes where each compiled callable was made (the target) and which
one is running, so every record lands on the callable whose call caused it. The default
backend becomes the job's `compile_backend` (`eager` unless set): breaks are the same and it
compiles in milliseconds instead of ~20 s for inductor. Targets are emitted by `finish()`.
The messages are parsed in `compile_log`; the frame helpers shared with `trace_watch` are in
`frames`. Imports only torch, the standard library and those two.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from exportlens.worker import compat
from exportlens.worker.compile_log import GB_URL, parse_graph_break, parse_limit, parse_recompile
from exportlens.worker.frames import call_site, definition, live_stack, outside, parse_traceback, resumed, summary_json

Emit = Callable[[dict[str, Any]], None]

GRAPH_BREAK_LOG = "torch._dynamo.symbolic_convert.__graph_breaks"
RECOMPILE_LOG = "torch._dynamo.guards.__recompiles"
LIMIT_LOG = "torch._dynamo.convert_frame"

_state: Watch | None = None


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

    def add(self, found: dict[str, Any], emit: Emit) -> None:
        """Keep a finding and stream it at once, so a job stopped later (timeout, crash) keeps it."""
        self.findings.append(found)
        emit(
            {
                "event": "finding",
                "name": self.name,
                "file": self.file,
                "line": self.line,
                "kind": "compile",
                "definition": self.definition,
                "compile_options": self.options,
                "compile_findings": [found],
            }
        )

    def event(self) -> dict[str, Any]:
        out = {
            "event": "target",
            "name": self.name,
            "file": self.file,
            "line": self.line,
            "kind": "compile",
            "seconds": self.seconds,
            "calls": self.calls,
            "definition": self.definition,
            "compile_options": self.options,
            "compile_findings": self.findings,
        }
        if self.error is not None:
            out["compile_error"] = self.error
        return out


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
        self.messages: dict[int, str] = {}  # a kept graph break's record, by id(finding): a fall-back keeps both
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
        site = call_site(sys._getframe(1))
        if model is None:
            return lambda m: self._compile(m, site, kwargs)
        return self._compile(model, site, kwargs)

    def _compile(self, model: Any, site: tuple[str, int], kwargs: dict[str, Any]) -> Any:
        user_backend = kwargs.get("backend")
        options = {
            "backend": _backend_name(user_backend),
            "dynamic": kwargs.get("dynamic"),
            "fullgraph": bool(kwargs.get("fullgraph", False)),
            "mode": kwargs.get("mode"),
        }
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
            target = Target(name, site[0], site[1], definition(model), options)
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
            frames = dynamo_user_stack(sys._getframe(1))
            if frames:  # the whole stack, where the logged traceback collapsed it or left it out (a duplicate)
                found["frames"] = frames
            if "fallback" in found:
                found["fallback"]["function"] = skipped_function(sys._getframe(1))
            target = self.current(found["at"])
            if self.folded(target, found, record.getMessage()):
                return
            target.add(found, self.emit)
        elif name == RECOMPILE_LOG:
            found = parse_recompile(record.getMessage())
            if found is None:
                return
            found["call_stack"] = live_stack(sys._getframe(1))
            self.current(found["code"]).add(found, self.emit)
        elif name == LIMIT_LOG and record.levelno >= logging.WARNING and "recompile_limit" in record.getMessage():
            found = parse_limit(record.getMessage())
            if found is None:
                return
            found["call_stack"] = live_stack(sys._getframe(1))
            self.current(found["code"]).add(found, self.emit)

    def folded(self, target: Target, found: dict[str, Any], message: str) -> bool:
        """Whether this record is one more record of a break the target already has: dynamo's
        suppressed repeat of it, or its fall-back for it (the same break at the same place, reached
        through the same frames: dynamo then skipped the function, docs/torch-facts.md §2.5), which
        goes into the kept finding with both records. Another reason, place or path stays its own."""
        for kept in target.findings:
            if kept.get("type") != "graph-break" or kept["at"] != found["at"] or kept["title"] != found["title"] or _path(kept) != _path(found):
                continue
            if found["duplicate"]:
                return True
            if ("fallback" in kept) != ("fallback" in found):
                kept.setdefault("fallback", found.get("fallback"))
                kept["records"] = [self.messages.get(id(kept), ""), message]
                return True
        self.messages[id(found)] = message
        if "fallback" in found:
            found["records"] = [message]
        return False

    def on_exception(self, target: Target, exc: BaseException) -> None:
        """`fullgraph=True` turns a break into an exception: keep it as a graph-break finding."""
        from torch._dynamo import exc as dynamo_exc

        if not isinstance(exc, dynamo_exc.Unsupported) or getattr(exc, "_exportlens_seen", False):
            return
        text = str(exc)
        frames = parse_traceback(text.split("from user code:", 1)[1].splitlines()) if "from user code:" in text else []
        url = GB_URL.search(text)
        first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
        hints = [ln.strip()[len("Hint:") :].strip() for ln in text.splitlines() if ln.strip().startswith("Hint:")]
        explanation = [ln.strip()[len("Explanation:") :].strip() for ln in text.splitlines() if ln.strip().startswith("Explanation:")]
        target.add(
            {
                "type": "graph-break",
                "title": getattr(exc, "gb_type", None) or first,
                "reason": text[:4000],
                "explanation": "\n".join(explanation),
                "hints": hints,
                "debug_context": "",
                "gb_id": url["gb"] if url else None,
                "url": url["url"] if url else None,
                "at": frames[-1] if frames else None,
                "frames": frames,
                "duplicate": False,
                "fullgraph": True,
            },
            self.emit,
        )
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


def dynamo_user_stack(frame: Any) -> list[dict[str, Any]] | None:
    """The graph break's user stack, outermost first: the live frames above dynamo, then the frames
    dynamo was tracing (docs/torch-facts.md §2.4); None when torch does not offer it."""
    from torch._guards import TracingContext

    traced = compat.graph_break_stack(frame, TracingContext.extract_stack)
    if not traced:
        return None
    above, inside = live_stack(frame), [fr for fr in (summary_json(s) for s in traced) if outside(fr["file"])]
    compiling = compat.graph_break_code(frame)  # a `forward` calling another module's `forward` of the same file is two frames
    resuming = compiling is None or resumed(compiling["name"]) is not None
    if above and inside and resuming and (above[-1]["file"], above[-1]["name"]) == (inside[0]["file"], inside[0]["name"]):
        above.pop()  # the function calls its own resume function, which dynamo is tracing: one frame
    return above + inside


def skipped_function(frame: Any) -> dict[str, Any] | None:
    """The function dynamo gave up on when it logged its fall-back (runs in eager mode from now on);
    a resume function is named by the function it continues."""
    code = compat.graph_break_code(frame)
    if code is None:
        return None
    code["file"] = os.path.abspath(code["file"]) if code["file"] and not code["file"].startswith("<") else code["file"]
    resumes = resumed(code["name"])
    if resumes is not None:
        code["resumes"] = resumes
    return code


def _path(found: dict[str, Any]) -> list[tuple[str, int]]:
    return [(str(f.get("file")), int(f.get("line") or 0)) for f in found.get("frames") or []]


def _backend_name(backend: Any) -> str:
    if backend is None:
        return "inductor"
    if isinstance(backend, str):
        return backend
    return getattr(backend, "__name__", None) or type(backend).__name__


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
