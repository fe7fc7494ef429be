"""Run compile and trace examples under torch's own logs and warnings (the count oracle for compile and trace).

Used by test_distinct_problems.py in a subprocess: `python tests/torch_logs_report.py FILE...` prints one
JSON object {"<file>:<target>": {"graph_breaks": [...], "recompiles": [...], "tracer_warnings": [...],
"check_failed": bool}}, the distinct sites torch itself reported for each `torch.compile` and
`torch.jit.trace` call site:

- graph breaks: the `TORCH_LOGS=graph_breaks` records, one per (break location, reason) as dynamo's own
  duplicate check keys them (`graph_break_dup_warning_checker`: the break's type and location), the "user
  stack suppressed" repeats included; dynamo's fall-back record for a break ("Failed to handle graph break
  gracefully. Skipping the function and falling back to eager. Graph break encountered:" and the break's
  own text, docs/torch-facts.md §2.5) is keyed by the break it fell back from, so a break and its
  fall-back are one site; a `fullgraph=True` break raises `Unsupported` instead, one more site;
- recompiles: the `TORCH_LOGS=recompiles` records, one per recompiled code object ("Recompiling
  function F in file:line", a dynamo resume function being its own);
- tracer warnings: the `TracerWarning`s raised during the trace, one per (file, line, first line of the
  text), those of torch's own modules left out as torch's filter does, and whether the trace check failed.

Each file runs as `__main__` in a child forked after torch is imported (dynamo's caches and duplicate
checks start empty, as in ExportLens's worker), with `torch.compile`'s default backend set to `eager`
as ExportLens runs it (the same breaks and recompiles, docs/torch-facts.md §2.2). A record goes to the
compiled callable running when it was logged. No ExportLens code runs torch.
"""

from __future__ import annotations

import json
import logging
import os
import runpy
import sys
import warnings
from typing import Any

os.environ["TORCH_LOGS"] = "graph_breaks,recompiles"

import torch  # noqa: E402

COMPILE, TRACE = torch.compile, torch.jit.trace
TORCH_DIR = os.path.join(os.path.dirname(os.path.abspath(torch.__file__)), "")
JIT_DIR = os.path.join(TORCH_DIR, "jit", "")
FALLBACK = "Failed to handle graph break gracefully. Skipping the function and falling back to eager."


def _site(kind: str, frame: Any) -> str:
    return f"{kind} at {os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


def _break_type(lines: list[str]) -> str:
    """The graph break's type (gb_type), the line above its "Explanation:" as torch formats it, else its reason;
    for a fall-back record, the type of the break it fell back from (before "*** While handling ...")."""
    lines = [lines[0], *(ln for ln in lines[1:] if not ln.startswith("Graph Break Reason: " + FALLBACK))]
    lines = lines[: next((i for i, ln in enumerate(lines) if ln.startswith("*** While handling this graph break")), len(lines))]
    at = next((i for i, ln in enumerate(lines) if ln.strip().startswith("Explanation:")), None)
    above = [ln.strip() for ln in lines[1:at] if ln.strip()] if at is not None else []
    return above[-1].removeprefix("Graph Break Reason: ") if above else lines[1].removeprefix("Graph Break Reason: ") if len(lines) > 1 else ""


def _new(sites: dict[str, dict[str, Any]], name: str) -> dict[str, Any]:
    return sites.setdefault(name, {"graph_breaks": [], "recompiles": [], "tracer_warnings": [], "check_failed": False})


def run(path: str) -> dict[str, dict[str, Any]]:
    sites: dict[str, dict[str, Any]] = {}
    active: list[str] = []

    class Records(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines = record.getMessage().splitlines()
            if not active or not lines:
                return
            entry = _new(sites, active[-1])
            if record.name.endswith("__graph_breaks") and " in user code at " in lines[0]:
                key = [lines[0].rsplit(" in user code at ", 1)[1], _break_type(lines)]
                if key not in entry["graph_breaks"]:
                    entry["graph_breaks"].append(key)
            elif record.name.endswith("__recompiles") and lines[0].startswith("Recompiling function "):
                if lines[0] not in entry["recompiles"]:
                    entry["recompiles"].append(lines[0])

    logging.getLogger("torch._dynamo").addHandler(Records())

    def compile(model: Any = None, **kwargs: Any) -> Any:
        name = _site("compile", sys._getframe(1))
        _new(sites, name)
        if kwargs.get("backend") in (None, "inductor"):
            kwargs = {**kwargs, "backend": "eager"}
            kwargs.pop("mode", None)

        def wrap(m: Any) -> Any:
            compiled = COMPILE(m, **kwargs)
            inner = compiled.forward if isinstance(compiled, torch.nn.Module) else compiled

            def call(*args: Any, **kw: Any) -> Any:
                active.append(name)
                try:
                    return inner(*args, **kw)
                except torch._dynamo.exc.Unsupported as exc:  # fullgraph=True: the break is this error
                    _new(sites, name)["graph_breaks"].append(["raised", str(exc).splitlines()[0]])
                    raise
                finally:
                    active.pop()

            if isinstance(compiled, torch.nn.Module):
                compiled.forward = call
                return compiled
            return call

        return wrap if model is None else wrap(model)

    def trace(func: Any, example_inputs: Any = None, *args: Any, **kwargs: Any) -> Any:
        if active and active[-1] == "tracing":  # torch's check run traces again
            return TRACE(func, example_inputs, *args, **kwargs)
        entry = _new(sites, _site("trace", sys._getframe(1)))
        active.append("tracing")
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    return TRACE(func, example_inputs, *args, **kwargs)
                except torch.jit.TracingCheckError:
                    entry["check_failed"] = True
                    return func
        finally:
            active.pop()
            for w in caught:
                full = os.path.abspath(w.filename)
                if not issubclass(w.category, torch.jit.TracerWarning) or (full.startswith(TORCH_DIR) and not full.startswith(JIT_DIR)):
                    continue
                key = [full, w.lineno, str(w.message).split("\n", 1)[0]]
                if key not in entry["tracer_warnings"]:
                    entry["tracer_warnings"].append(key)

    torch.compile = compile  # type: ignore[assignment]
    torch.jit.trace = trace  # type: ignore[assignment]
    sys.path[:0] = [os.path.dirname(path)]
    try:
        runpy.run_path(path, run_name="__main__")
    except BaseException:
        pass  # a script that raises (a failing trace, a fullgraph break) still reported what came before
    return sites


def main(paths: list[str]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for path in paths:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            sys.stdout = sys.stderr  # the scripts' own output stays out of the JSON
            with os.fdopen(w, "w") as out:
                out.write(json.dumps(run(path)))
            os._exit(0)
        os.close(w)
        with os.fdopen(r) as fh:
            found = json.loads(fh.read() or "{}")
        os.waitpid(pid, 0)
        for target, entry in found.items():
            results[f"{path}:{target}"] = entry
    return results


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:]), indent=1))
