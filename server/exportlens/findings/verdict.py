"""An export target's findings: plain export's verdict first, draft export's report reconciled with it.

The user's own `torch.export.export` decides (docs/torch-facts.md §9): its failure is always a
finding, in its rich form (a violated dimension, a data-dependent guard, a missing fake kernel,
else the error as it is), and a target whose plain export fails is never "0 problems". Draft export
only adds what plain export could not say: the data-dependent guards after the first, the fake
kernels of custom ops. What draft export reports that plain export contradicts is its own
artefact and is dropped: the guards of its Dim.AUTO retry (plain export's violations are the
whole story of the Dims), and any data-dependent guard of a target whose plain export passes.
"""

from __future__ import annotations

from exportlens.findings import could_dynamic, dynamism
from exportlens.findings.context import Context
from exportlens.findings.errors import draft_crash_diagnostics, exception_diagnostic
from exportlens.findings.export import data_dependent, export_diagnostics, fake_kernel
from exportlens.model import ERROR, Diagnostic
from exportlens.protocol import ExportFailure, PlainVerdict, TargetEvent

# draft export's own comparison of fake and real tensors (not the user's code) raising a guard
_DRAFT_OWN_FRAMES = ("_check_fake_real_tensors", "fake_utils.py")


def export_target(ctx: Context, event: TargetEvent, plain: PlainVerdict) -> list[Diagnostic]:
    """Every finding of one export target that ran plain export first."""
    truth = plain_findings(ctx, event, plain)
    extra = export_diagnostics(ctx, {**event, "failures": reconcile(event.get("failures") or [], plain)})
    found = {(d.code, d.file, d.range.start.line) for d in extra}
    # draft export's finding of the same problem is the richer one (the example's values, op profiles)
    out = [d for d in truth if d.code not in ("data-dependent-guard", "missing-fake-kernel") or (d.code, d.file, d.range.start.line) not in found]
    out += extra
    if "draft_crash" in event and plain["status"] == "ok":  # draft export's own crash, on a model that exports
        out += draft_crash_diagnostics(ctx, event)
    if plain["status"] == "failed" and not any(d.severity == ERROR for d in out) and "exception" in plain:
        out.append(exception_diagnostic(ctx, plain["exception"]))  # never "0 problems" while plain export fails
    if any(d.problem for d in out):  # dynamism is for a program that is right: its problems first
        return out
    return out + could_dynamic.could_be_dynamic(ctx, event, plain)


def plain_findings(ctx: Context, event: TargetEvent, plain: PlainVerdict) -> list[Diagnostic]:
    """What plain export itself says: its failure in its rich form, or the dimensions it fixed."""
    if plain["status"] == "ok":
        return dynamism.specialized(ctx, plain)
    kind = plain.get("kind")
    failure = plain.get("failure")
    if kind == "constraint":
        return dynamism.violations(ctx, plain)
    if kind == "data-dependent" and failure is not None:
        return data_dependent(ctx, failure, event.get("values") or {})
    if kind == "missing-fake-kernel" and failure is not None:
        return fake_kernel(ctx, failure, mismatched=False)
    exc = plain.get("exception") or event.get("exception")
    if exc is None:
        return []
    diag = exception_diagnostic(ctx, exc, target_error=event.get("target_error"))
    if "draft_crash" in event:
        crash = draft_crash_diagnostics(ctx, event)
        diag.data.update({k: v for d in crash for k, v in d.data.items() if k in ("draft_export_error", "crash_family", "repro")})
    return [diag]


def reconcile(failures: list[ExportFailure], plain: PlainVerdict) -> list[ExportFailure]:
    """Draft export's failures that plain export does not contradict."""
    out = []
    for f in failures:
        kind = f.get("type", "")
        if kind in ("GUARD_ADDED", "CONSTRAINT_VIOLATION_ERROR", "CONSTRAINT_VIOLATION"):
            continue  # its Dim.AUTO retry's guards: plain export's violations are the truth about the Dims
        if kind in ("DATA_DEPENDENT_ERROR", "DATA_DEPENDENT"):
            if plain["status"] == "ok":
                continue  # plain export passes: whatever draft export could not decide, export can
            if any(part in str(fr.get("name", "")) + str(fr.get("file", "")) for fr in f.get("stack") or [] for part in _DRAFT_OWN_FRAMES):
                continue
        out.append(f)
    return out
