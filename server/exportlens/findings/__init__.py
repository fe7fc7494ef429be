"""From the worker's raw events to placed, deduplicated, readable diagnostics.

One `target` event of the worker (a draft-export report, a compile or trace run, an exception, a
crash) becomes diagnostics on the user's own lines, in the user's own names. The raw facts stay
in `Diagnostic.data` for the quick fixes and the hover. This module dispatches; each kind of
event has its own module: `verdict` (an export target: plain export's verdict, with `dynamism`,
and draft export's report reconciled with it), `export`, `compile`, `trace`, `errors`; `placement` and `symbols` turn
torch's frames and symbols into ranges and source names.
"""

from __future__ import annotations

from exportlens.findings.compile import compile_diagnostics
from exportlens.findings.context import Context, new_diagnostic, target_anchor
from exportlens.findings.errors import crash_diagnostic, exception_diagnostic
from exportlens.findings.export import export_diagnostics, float_item_bug
from exportlens.findings.trace import trace_diagnostics
from exportlens.findings.verdict import export_target
from exportlens.model import Diagnostic
from exportlens.protocol import TargetEvent

__all__ = ["Context", "crash_diagnostic", "from_event"]


def from_event(ctx: Context, event: TargetEvent) -> list[Diagnostic]:
    """All diagnostics of one `target` event of the worker."""
    kind = event.get("kind")
    out: list[Diagnostic] = []
    if kind == "compile":
        out.extend(compile_diagnostics(ctx, event))
    elif kind == "trace":
        out.extend(trace_diagnostics(ctx, event))
    bug = event.get("torch_bug")
    if kind == "export" and bug is not None and bug["kind"] == "float-item-assert":
        return [float_item_bug(ctx, event, bug)]  # torch ≤ 2.12's solver bug, explained instead of its AssertionError
    plain = event.get("plain")
    if kind == "export" and plain is not None:  # the user's own export first, draft export reconciled with it
        return export_target(ctx, event, plain)
    if "exception" in event:
        out.append(exception_diagnostic(ctx, event["exception"], target_error=event.get("target_error")))
        return out
    if kind in ("compile", "trace"):
        return out
    if "target_error" in event:
        file, rng = target_anchor(ctx)
        return [new_diagnostic(ctx, file, rng, "target-error", f"{event['target_error']}.")]
    return export_diagnostics(ctx, event)
