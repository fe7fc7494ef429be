"""Dynamic shapes as the user's plain export decided them: constraint violations and lost dimensions.

Plain `torch.export.export` is the truth (docs/torch-facts.md §9). When it fails with a constraint
violation, each violated dimension is one `guard-added` on the line whose guard violated it (the
project's call into a library with the library's line related, when the guard is there), with
torch's suggested fix in `data`. When it passes, each dimension the user asked to be dynamic that
the program has static is one `dim-specialized` warning where it became static, or on the example
input when its size of 0 or 1 is why.
"""

from __future__ import annotations

from typing import Any, cast

from exportlens.findings import boundary, placement, symbols
from exportlens.findings.context import Context, library_place, new_diagnostic, outer_related, target_anchor
from exportlens.findings.placement import Frame
from exportlens.fixes import spec_source
from exportlens.model import Diagnostic, Range, Related
from exportlens.protocol import DimSpecializedData, FrameInfo, GuardAddedData, PlainVerdict, RequestedDim, SpecializedDim, Violation

ZERO_ONE = "export specialises sizes 0 and 1; give an example of size ≥ 2"


def violations(ctx: Context, plain: PlainVerdict) -> list[Diagnostic]:
    """One `guard-added` per violated dimension of a constraint violation."""
    return [_violation(ctx, v, plain) for v in plain.get("violations") or []]


def specialized(ctx: Context, plain: PlainVerdict) -> list[Diagnostic]:
    """One `dim-specialized` per requested dimension the exported program has static."""
    return [_specialized(ctx, s, plain) for s in plain.get("specialized") or []]


def declared(dim: RequestedDim) -> str:
    """How the dimension was asked for: `Dim("seq", min=4, max=64)`, `Dim.AUTO`."""
    if dim["kind"] in ("auto", "dynamic"):
        return f"Dim.{dim['kind'].upper()}"
    bounds = "".join(f", {k}={v}" for k, v in (("min", dim.get("min")), ("max", dim.get("max"))) if v is not None and (k, v) != ("min", 0))
    return f'Dim("{dim["name"]}"{bounds})'


def _spell(expr: str, plain: PlainVerdict) -> str:
    text, unmapped = symbols.to_python(expr, plain.get("names") or {})
    return text if text and not unmapped else expr


def _place(ctx: Context, stack: list[FrameInfo] | None) -> tuple[boundary.Boundary | None, Frame | None]:
    found = ctx.locate([("live", stack)]) if stack else None
    if found is not None:  # the export call itself is the target, not a caller to list
        found.outer = [f for f in found.outer if (f.file, f.line) != (ctx.target_file, ctx.target_line)]
        if (found.frame.file, found.frame.line) == (ctx.target_file, ctx.target_line) and not found.library:
            return None, None  # nothing of the project below the export call
    return found, found.frame if found is not None else None


def _example(ctx: Context, dim: RequestedDim) -> tuple[str, Range, dict[str, Any]] | None:
    """Where the example input's size of this dimension is written (a literal in a torch factory call)."""
    src = ctx.source(ctx.target_file)
    tree = src.tree if src is not None else None
    if src is None or tree is None or dim.get("path"):
        return None
    site = spec_source.example_size(tree, ctx.target_line, dim["input"], dim["index"], dim["dim"])
    if site is None:
        return None
    return ctx.target_file, src.node_range(site.creation), {"line": site.creation.lineno, "text": src.text_of(src.node_range(site.creation))}


def _related_call(ctx: Context) -> list[Related]:
    src = ctx.source(ctx.target_file)
    return [Related(ctx.target_file, placement.statement_range(src, ctx.target_line), "the dynamic_shapes of this target")] if src is not None else []


def _at_guard(ctx: Context, b: boundary.Boundary, frame: Frame, bare: set[str]) -> tuple[Range, list[Related], dict[str, Any]]:
    """The range, related locations and facts of a guard's line (the project's call into a library)."""
    if b.inside is not None:
        rng, related, placed = library_place(ctx, b, "the guard is added here")
        src = ctx.source(b.inside.file)
        test = src.text_of(placement.guard_range(src, b.inside.line, bare)[0]) if src else b.inside.loc or ""
        return rng, related, {**placed, "library_test_text": test}
    src = ctx.source(frame.file)
    if src is None:
        return Range.of(frame.line - 1, 0, frame.line - 1, 0), [], {"user_line": frame.line}
    rng, stmt = placement.guard_range(src, frame.line, bare)
    facts = {"user_line": frame.line, "statement_kind": type(stmt).__name__.lower() if stmt is not None else "", "test_text": src.text_of(rng)}
    return rng, outer_related(ctx, b.outer, "called", frame), facts


def _violation(ctx: Context, v: Violation, plain: PlainVerdict) -> Diagnostic:
    dims = v["dims"]
    name = v["name"]
    spelled = ", ".join(f"`{d['spelled']}`" for d in dims) or f"`{name}`"
    how = declared(dims[0]) if dims else name
    guard = v.get("guard") or ""
    source_expr = _spell(guard, plain) if guard else None
    suggested = list(plain.get("suggested") or [])
    mine = [s for s in suggested if s.split(" = ", 1)[0] == name or _root_line(s, name, suggested)]
    data: GuardAddedData = {
        "name": name,
        "reason": v["reason"],
        "expr": guard,
        "source_expr": source_expr,
        "names": dict(plain.get("names") or {}),
        "dims": list(dims),
        "value": v.get("value"),
        "suggested": suggested,
        "lines": list(v.get("lines") or []),
        "export_call": {"file": ctx.target_file, "line": ctx.target_line},
        "site": name,
    }
    subject = f"`{name}` ({spelled}, {how})" if dims and dims[0].get("name") else f"{spelled} ({how})"
    if v["reason"] == "zero-one":
        size = v.get("value", 1)
        msg = (
            f"{subject} is marked dynamic, but the example has size {size} there: {ZERO_ONE}. "
            f"torch.export.export fails: it fixed it to {size} (a constraint violation)."
        )
        return _on_example(ctx, "guard-added", dims, msg, data)
    added = f": torch added the guard `{source_expr}`" if source_expr else ""
    if v["reason"] == "constant":
        msg = f"{subject} is marked dynamic, but this code fixes it to {v.get('value')}{added}"
    elif v["reason"] == "relation":
        msg = f"{subject} is declared independent, but this code ties it to another dimension{added}"
    else:
        msg = f"{subject} is marked dynamic, but this code works only for some of its sizes{added}"
    msg += ", so torch.export.export fails with a constraint violation."
    if mine:
        keeps = all(" = Dim(" in s or not s.split(" = ", 1)[1].strip().lstrip("-").isdigit() for s in mine)
        msg += f" torch suggests `{'; '.join(mine)}`" + (f", which keeps `{name}` dynamic." if keeps else f", which makes `{name}` static.")
    bare = {d["input"] for d in dims}
    b, frame = _place(ctx, v.get("stack"))
    if b is None or frame is None:
        file, rng = target_anchor(ctx)
        data["placed"] = "target"
        return new_diagnostic(ctx, file, rng, "guard-added", msg, data=data)
    rng, related, facts = _at_guard(ctx, b, frame, bare)
    data.update(facts)  # type: ignore[typeddict-item]
    data["placed"] = "guard"
    if b.inside is not None:
        msg = f"Inside the library {b.inside.package} ({b.inside.where()}, in `{b.inside.qualname}`): " + msg[0].lower() + msg[1:]
        msg += boundary.declared_note(b)
    return new_diagnostic(ctx, frame.file, rng, "guard-added", msg, related=related + _related_call(ctx), data=data)


def _root_line(line: str, name: str, suggested: list[str]) -> bool:
    """A new root dimension's line (`_n = Dim('_n', ...)`) that `name`'s suggestion refers to."""
    root = line.split(" = ", 1)[0].strip()
    return any(s.split(" = ", 1)[0] == name and root in s.split(" = ", 1)[1] and root != name for s in suggested)


def _on_example(ctx: Context, code: str, dims: list[RequestedDim], msg: str, data: Any) -> Diagnostic:
    """A size of 0/1 in the example: on the example input where its size is written, else on the call."""
    site = _example(ctx, dims[0]) if dims else None
    if site is None:
        file, rng = target_anchor(ctx)
        data["placed"] = "target"
        return new_diagnostic(ctx, file, rng, code, msg, data=data)
    file, rng, example = site
    data["placed"] = "example"
    data["example"] = example
    return new_diagnostic(ctx, file, rng, code, msg, related=_related_call(ctx), data=data)


def _specialized(ctx: Context, s: SpecializedDim, plain: PlainVerdict) -> Diagnostic:
    dim = cast(RequestedDim, {k: v for k, v in s.items() if k in RequestedDim.__annotations__})
    spelled = s["spelled"]
    guard = s.get("guard")
    source_expr = _spell(guard, plain) if guard else None
    data: DimSpecializedData = {
        "dim": dim,
        "reason": s["reason"],
        "value": s["value"],
        "guard": guard,
        "source_expr": source_expr,
        "export_call": {"file": ctx.target_file, "line": ctx.target_line},
        "site": spelled,
        "placed": "target",
    }
    head = f"`{spelled}` is marked {declared(dim)}, but the exported program fixes it to {s['value']}"
    tail = f" (torch.export.export passes, and the program accepts only size {s['value']} there)."
    if s["reason"] == "zero-one":
        return _on_example(ctx, "dim-specialized", [dim], f"{head}: the example has size {s['value']} there, and {ZERO_ONE}{tail}", data)
    b, frame = _place(ctx, s.get("stack"))
    if s["reason"] != "guard" or b is None or frame is None:
        file, rng = target_anchor(ctx)
        why = f": torch added the guard `{source_expr}`" if source_expr else ": ExportLens could not see which line fixed it"
        return new_diagnostic(ctx, file, rng, "dim-specialized", head + why + tail, data=data)
    rng, related, facts = _at_guard(ctx, b, frame, {dim["input"]})
    data.update(facts)  # type: ignore[typeddict-item]
    data["placed"] = "guard"
    msg = f"{head}: this line's guard `{source_expr}` specialised it{tail}"
    if b.inside is not None:
        msg = (
            f"`{spelled}` is marked {declared(dim)}, but inside the library {b.inside.package} ({b.inside.where()}, in "
            f"`{b.inside.qualname}`) the guard `{source_expr}` fixes it to {s['value']}{tail} {boundary.NO_EDIT} Build the "
            f"library's module so it accepts other sizes (an option of the library), or mark the dimension Dim.STATIC."
        ) + boundary.declared_note(b)
    return new_diagnostic(ctx, frame.file, rng, "dim-specialized", msg, related=related + _related_call(ctx), data=data)
