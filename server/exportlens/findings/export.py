"""Draft export's report: data-dependent guards, added guards, missing and mismatched fake kernels."""

from __future__ import annotations

import ast
import os
import re
import shlex
from typing import Any, cast

from exportlens import fixes
from exportlens.findings import boundary, placement, symbols
from exportlens.findings.context import Context, base, is_user, library_place, new_diagnostic, outer_related, target_anchor
from exportlens.findings.placement import Frame
from exportlens.model import Diagnostic, Range, Related
from exportlens.project import is_user_file
from exportlens.protocol import (
    DataDependentData,
    ExportErrorData,
    ExportFailure,
    FakeKernelData,
    FakeKernelRole,
    FloatPlace,
    LibraryFacts,
    OpProfile,
    TargetEvent,
    TorchBug,
    TorchBugData,
)


def export_diagnostics(ctx: Context, event: TargetEvent) -> list[Diagnostic]:
    """The diagnostics of draft export's report in one export `target` event."""
    out: list[Diagnostic] = []
    for failure in event.get("failures", []):
        if failure.get("xfail"):
            continue
        kind = failure.get("type", "")
        if kind in ("DATA_DEPENDENT_ERROR", "DATA_DEPENDENT"):
            out.extend(data_dependent(ctx, failure, event.get("values") or {}))
        elif kind in ("GUARD_ADDED", "CONSTRAINT_VIOLATION_ERROR", "CONSTRAINT_VIOLATION"):
            continue  # draft export's Dim.AUTO retry: plain export's own violations say what is wrong (findings/verdict.py)
        elif kind in ("MISSING_FAKE_KERNEL",):
            out.extend(fake_kernel(ctx, failure, mismatched=False))
        elif kind in ("MISMATCHED_FAKE_KERNEL",):
            out.extend(fake_kernel(ctx, failure, mismatched=True))
        else:
            file, rng = target_anchor(ctx)
            unknown: ExportErrorData = {"raw": failure}
            out.append(
                new_diagnostic(
                    ctx,
                    file,
                    rng,
                    "export-error",
                    f"Draft export reported a problem of a kind ExportLens does not know yet ({kind}): "
                    f"{failure.get('expr') or failure.get('reason') or ''}".strip(),
                    data=unknown,
                )
            )
    return out


def failure_boundary(ctx: Context, failure: ExportFailure) -> boundary.Boundary | None:
    """The project's line for a failure: the live stack first, then the frames torch kept."""
    live = failure.get("live_stack")
    kept = [f for f in failure.get("user_stack") or [] if f.get("file") and not f.get("where")]
    if live and kept and not any((f.get("file"), f.get("line")) == (kept[-1]["file"], kept[-1]["line"]) for f in live):
        live = None  # strict export: dynamo traced the code, the live Python stack is not the user's
    found = ctx.locate([("live", live), ("torch", failure.get("user_stack")), ("torch", failure.get("stack"))])
    if found is not None:  # the export call itself is the target, not a caller to list
        found.outer = [f for f in found.outer if (f.file, f.line) != (ctx.target_file, ctx.target_line)]
    return found


def _primary(ctx: Context, failure: ExportFailure) -> tuple[Frame | None, list[Frame]]:
    found = failure_boundary(ctx, failure)
    return (found.frame, found.outer) if found is not None else (None, [])


def _library_head(lib: boundary.LibraryFrame) -> str:
    return f"Inside the library {lib.package} ({lib.where()}, in `{lib.qualname}`), "


LIBRARY_NO_EDIT = "This is the library's code, not yours: ExportLens never edits it."


def data_dependent(ctx: Context, failure: ExportFailure, real_values: dict[str, int | float]) -> list[Diagnostic]:
    b = failure_boundary(ctx, failure)
    frame, outer = (b.frame, b.outer) if b is not None else (None, [])
    lib = b.inside if b is not None else None
    expr = failure.get("expr", "")
    short = boundary.shorten(expr)
    result = failure.get("result")
    occurrences = int(failure.get("occurrences") or 1)
    fl = failure.get("frame_locals") or {}
    names = symbols.symbol_names(fl, failure.get("symbol_to_sources"))
    source_expr, unmapped = symbols.to_python(expr, names)
    values = {k: v for k, v in real_values.items() if k in symbols.symbols_in(expr)}
    is_condition = result in ("True", "False") or failure.get("kind") == "condition"
    data: DataDependentData = {
        "expr": expr,
        "result": result,
        "occurrences": occurrences,
        "names": names,
        "source_expr": source_expr if not unmapped else None,
        "locals": fl.get("locals") or {},
        "values": values,
        "kind": "condition" if is_condition else "value",
    }
    if frame is None:
        file, rng = target_anchor(ctx)
        data["placed"] = "target"
        return [
            new_diagnostic(
                ctx,
                file,
                rng,
                "data-dependent-guard",
                f"Draft export could not decide `{short}` (a data-dependent guard) and no stack torch offered has a line of this project. It assumed {result}.",
                data=data,
            )
        ]
    mapped_names = {names[s] for s in symbols.symbols_in(expr) if s in names}
    bare = {n.split(".")[0].split("[")[0] for n in mapped_names}
    if lib is not None:  # the guard is in the library: speak its names, place it on the project's call
        assert b is not None
        rng, related, placed = library_place(ctx, b)
        data.update(cast(DataDependentData, placed))  # the library's facts: keys DataDependentData declares
        lib_src = ctx.source(lib.file)
        test = lib_src.text_of(placement.guard_range(lib_src, lib.line, bare)[0]) if lib_src is not None else (lib.loc or "")
        data["test_text"] = test
        data["statement_kind"] = ""  # nothing to rewrite on the project's line
        # the expression as written in the library (its `if` test), else torch's in the library's names
        spelled = boundary.shorten(test if is_condition and test else source_expr if source_expr and not unmapped else (test or expr))
        where = ", ".join(f"{s} is `{names[s]}`" for s in sorted(symbols.symbols_in(expr)) if s in names)
        what = "the value of" if not is_condition else "the condition"
        msg = (
            _library_head(lib) + f"draft export could not decide {what} `{spelled}`: it comes from a tensor's data "
            f"(torch saw `{short}`{'; ' + where if where else ''}). "
            + (
                f"With the example inputs it was {result}, so the exported program "
                f"{'assumes that and asserts it' if is_condition else 'is specialised to that'} at run time."
                if result is not None
                else "torch.export.export fails there."
            )
        )
        search = boundary.upstream_search(lib, "torch.export data-dependent")
        data["upstream_search"] = search
        data["advice"] = "library"
        msg += (
            f" {LIBRARY_NO_EDIT} What you can do: give example inputs typical of real use (the exported program "
            f"keeps the path they take); keep draft export's program if real inputs take the same path; use a "
            f"library option that avoids reading tensor data here, if it has one. Otherwise it is a library "
            f'limitation: search its issues for "{search}".'
        )
        if occurrences > 1:
            msg += f" Reached {occurrences} times (the first is shown)."
        msg += boundary.declared_note(b)
        return [new_diagnostic(ctx, frame.file, rng, "data-dependent-guard", msg, related=related, data=data)]
    src = ctx.source(frame.file)
    if src is not None:
        rng, stmt = placement.guard_range(src, frame.line, bare)
        data["statement_line"] = stmt.lineno if stmt is not None else frame.line
        data["statement_kind"] = type(stmt).__name__.lower() if stmt is not None else ""
        test = src.text_of(rng)
        data["test_text"] = test
    else:
        rng, test = Range.of(frame.line - 1, 0, frame.line - 1, 0), ""
    data["user_line"] = frame.line
    tensor_condition = bool(unmapped) and not any(s in names for s in symbols.symbols_in(expr))
    data["tensor_condition"] = tensor_condition
    pinnable = bool(source_expr and not unmapped and _pin_inside_call(test, names, values))
    if is_condition and not pinnable and _inside_torch(failure):  # a pinnable call keeps its pin (split on torch ≤ 2.12)
        data["torch_internal"] = True
        data["repro"] = plain_export_repro(ctx)
        spelled = str(source_expr) if source_expr and not unmapped else short
        msg = (
            f"Draft export could not decide `{spelled}` (torch saw `{short}`) inside PyTorch itself: the guard "
            f"was evaluated by an operator called on this line, not by your code. This is probably a PyTorch "
            f"bug or limitation rather than code to patch, so no `torch._check` is offered here. With the "
            f"example inputs it was {result}. Reproduce it with plain torch.export: `{data['repro']}`"
        )
    elif not is_condition and not tensor_condition:
        spelled = str(source_expr) if source_expr and not unmapped else short
        pins = [f"{names[s]} == {v}" for s, v in sorted(values.items()) if s in names and isinstance(v, int)]
        data["pin"] = " and ".join(pins) if pins and not unmapped else None
        msg = (
            f"Draft export could not determine the value of `{spelled}` (torch saw `{short}`): this call "
            f"needs it as a plain integer, and it comes from a tensor's data. With the example inputs it was "
            f"{result}, so the exported program is specialised to that."
        )
        if data["pin"]:
            msg += (
                f" A range check does not help here: pin the value with `torch._check({data['pin']})` "
                f"(the program then accepts only that value), or compute the size without reading tensor data."
            )
    elif tensor_condition:
        what = f"the tensor condition `{test}`" if test else f"`{short}`"
        seen = (
            f"With the example inputs it was {result}, so the exported program keeps only that branch and asserts it at run time."
            if result is not None
            else "torch.export.export fails here."
        )
        msg = (
            f"{'Draft export' if result is not None else 'torch.export.export'} could not decide {what}: it depends on the values "
            f"inside a tensor (torch saw `{short}`). {seen} Rewrite the branch with torch.cond to export both paths."
        )
    elif result is None:  # plain export's own failure: no example values were seen
        spelled = str(source_expr) if source_expr and not unmapped else short
        where = ", ".join(f"{s} is `{names[s]}`" for s in sorted(symbols.symbols_in(expr)) if s in names)
        msg = (
            f"torch.export.export fails here: it cannot decide `{spelled}`, because the value comes from a "
            f"tensor's data (torch saw `{short}`{'; ' + where if where else ''})."
        )
        if source_expr and not unmapped:
            msg += f" State which holds with `torch._check({source_expr})` (or its opposite) above this line"
            msg += ", or rewrite the branch with torch.cond to keep both paths." if data.get("statement_kind") == "if" else "."
    else:
        spelled = str(source_expr) if source_expr and not unmapped else short
        where = ", ".join(f"{s} is `{names[s]}`" for s in sorted(symbols.symbols_in(expr)) if s in names)
        msg = (
            f"Draft export could not decide `{spelled}`: the value comes from a tensor's data "
            f"(torch saw `{short}`{'; ' + where if where else ''}). With the example inputs it was {result}, "
            f"so the exported program assumes that and asserts it at run time."
        )
        pin = _pin_inside_call(test, names, values) if source_expr and not unmapped else None
        if pin and source_expr:
            # torch ≤ 2.12 asks `Eq(u0, 0)` first inside `x.split(n)`: stating only that is not enough,
            # the call then needs the value itself (docs/torch-facts.md §8); pinning works on every release
            data["pin"] = pin
            taken = source_expr if result != "False" else fixes.negate(source_expr)
            msg += (
                f" Torch asked this inside the call `{test}`, which needs more than this one fact: pin the value "
                f"with `torch._check({pin})` (the program then accepts only that value); "
                f"`torch._check({taken})` alone settles only this first question."
            )
        elif source_expr and not unmapped and result is not None:
            msg += f" Add `torch._check({source_expr if result != 'False' else fixes.negate(source_expr)})` above this line to state the assumption"
            msg += ", or rewrite the branch with torch.cond to keep both paths." if data.get("statement_kind") == "if" else "."
    if occurrences > 1:
        msg += f" Reached {occurrences} times (the first is shown)."
    return [new_diagnostic(ctx, frame.file, rng, "data-dependent-guard", msg, related=outer_related(ctx, outer, "called", frame), data=data)]


def _pin_inside_call(test: str, names: dict[str, str], values: dict[str, Any]) -> str | None:
    """`n == 4` when torch asked a condition inside a call (`x.split(n)`, not an `if`) whose values it saw."""
    try:
        node = ast.parse(test.strip(), mode="eval").body if test.strip() else None
    except SyntaxError:
        return None
    if not isinstance(node, ast.Call) or not values:
        return None
    pins = [f"{names[s]} == {v}" for s, v in sorted(values.items()) if s in names and isinstance(v, int)]
    return " and ".join(pins) if len(pins) == len(values) else None


def float_item_bug(ctx: Context, event: TargetEvent, bug: TorchBug) -> Diagnostic:
    """torch ≤ 2.12 cannot export a branch on a float `.item()`: say that, on the branch, not the AssertionError."""
    symbol = str(bug.get("symbol") or "zuf0")
    branch: FloatPlace = bug.get("branch") or {"symbol": symbol}
    created: FloatPlace = bug.get("created") or {"symbol": symbol}
    exception = event.get("exception")
    data: TorchBugData = {
        "torch_bug": "float-item-assert",
        "symbol": symbol,
        "expr": branch.get("expr"),
        "exception_type": exception["type"] if exception else None,
        "exception_message": str(exception["message"] if exception else "")[:4000],
    }
    place = branch if _placeable(ctx, branch) else created if _placeable(ctx, created) else None
    test = ""
    if place is not None:
        src = ctx.source(place["file"])
        assert src is not None
        file, rng = place["file"], placement.guard_range(src, int(place["line"]), set())[0]
        test = src.text_of(rng) if rng.start.line == rng.end.line else ""
        data["user_line"] = int(place["line"])
    else:
        file, rng = target_anchor(ctx)
    what = f"`{test}`" if test and place is branch else "a condition"
    msg = (
        f"Draft export could not decide {what}: it depends on a float read out of a tensor (`.item()` of a float "
        f"tensor; torch saw `{branch.get('expr') or symbol}`), and this torch fails on that: its constraint solver "
        f"raises `AssertionError: Unknown symbol {symbol} created by constraints solver`, a bug of torch 2.12 and "
        f"older (fixed in 2.13). Branch on an integer instead (`int(...)`, or `.item()` of an integer tensor), "
        f"rewrite the branch with torch.cond, or upgrade to torch 2.13 or newer."
    )
    related = []
    if place is branch and _placeable(ctx, created):
        src = ctx.source(created["file"])
        assert src is not None
        related.append(Related(created["file"], placement.call_range(src, int(created["line"]), "item"), "the float value comes from here"))
    return new_diagnostic(ctx, file, rng, "data-dependent-guard", msg, related=related, data=data)


def _placeable(ctx: Context, where: FloatPlace) -> bool:
    return bool(where.get("line")) and is_user(ctx, where.get("file"))


def _inside_torch(failure: ExportFailure) -> bool:
    """The guard's innermost frame is torch's own code: an ATen operator deciding it (its meta
    function or decomposition), not a Python expression in the user's code."""
    stack: list[Any] = list(failure.get("stack") or [])
    innermost: dict[str, Any] = dict(stack[-1]) if stack else {}
    file = str(innermost.get("file") or "")
    return os.sep + "torch" + os.sep in file and innermost.get("name") in ("__call__", "__torch_dispatch__", "proxy_call")


def plain_export_repro(ctx: Context) -> str:
    """A command that runs the target with plain `torch.export.export`, outside ExportLens (for a
    PyTorch issue: the guard fails there the same way)."""
    path = ctx.target_file
    if ctx.target.startswith(("export at ", "compile at ", "trace at ")):
        return f"python {shlex.quote(path)}"
    if ctx.target == "model":
        build = "ns['model'], tuple(ns['example_args']), ns.get('example_kwargs'), dynamic_shapes=ns.get('dynamic_shapes')"
        code = f"import runpy, torch; ns = runpy.run_path({path!r}, run_name='repro'); torch.export.export({build})"
    else:
        factory = ctx.target.rsplit(":", 1)[-1]
        code = (
            f"import runpy, torch; s = runpy.run_path({path!r}, run_name='repro')[{factory!r}](); "
            f"s = s if isinstance(s, dict) else dict(zip(('model', 'example_args', 'example_kwargs'), s)); "
            f"torch.export.export(s['model'], tuple(s['example_args']), s.get('example_kwargs'), "
            f"dynamic_shapes=s.get('dynamic_shapes'))"
        )
    return f"python -c {shlex.quote(code)}"


def _profile_text(profiles: list[OpProfile]) -> str:
    outs = []
    for p in profiles:
        out = p.get("out")
        items = out if isinstance(out, list) else [out]
        outs.append(", ".join(f"rank {o['rank']} {o['dtype']}" for o in items if o) or "no tensor")
    return "; ".join(sorted(set(outs)))


def fake_kernel(ctx: Context, failure: ExportFailure, *, mismatched: bool) -> list[Diagnostic]:
    op = failure.get("op", "")
    qualname = failure.get("qualname") or op
    profiles = failure.get("profiles") or []
    definition = failure.get("definition")
    fake = failure.get("fake")
    func = (definition.get("function") if definition else None) or qualname.split("::")[-1]
    code = "mismatched-fake-kernel" if mismatched else "missing-fake-kernel"
    reason = (failure.get("reason") or "").strip()
    real = _profile_text(profiles)
    data: FakeKernelData = {
        "op": op,
        "qualname": qualname,
        "profiles": profiles,
        "definition": definition,
        "fake": fake if fake and ctx.source(fake["file"]) and is_user_file(fake["file"], ctx.root) else None,
        "reason": reason,
        "call_sites": [],
        "role": "call",
    }
    # every call site in the user's code, from the exported graph's stack traces
    sites: list[Frame] = []
    for stack in failure.get("call_sites") or []:
        frames = placement.user_frames(stack, ctx.root)
        if frames and frames[-1] not in sites:
            sites.append(frames[-1])
    anchors: list[tuple[str, Range, FakeKernelRole]] = []
    call_name = qualname.split("::")[-1]
    for site in sites:
        src = ctx.source(site.file)
        if src is not None:
            anchors.append((site.file, placement.call_range(src, site.line, call_name), "call"))
    def_anchor: tuple[str, Range, FakeKernelRole] | None = None
    if definition and is_user_file(definition.get("file"), ctx.root):
        src = ctx.source(definition["file"])
        if src is not None:
            def_anchor = (definition["file"], placement.definition_range(src, int(definition["line"])), "definition")
    fake_anchor: tuple[str, Range, FakeKernelRole] | None = None
    if mismatched and (user_fake := data["fake"]):
        src = ctx.source(user_fake["file"])
        if src is not None:
            fake_anchor = (fake["file"], placement.definition_range(src, int(fake["line"])), "fake")  # type: ignore[index]
    data["call_sites"] = [{"file": f, "range": r.to_json()} for f, r, _ in anchors]
    library_def = definition if definition and definition.get("file") and not is_user_file(definition["file"], ctx.root) else None
    if library_def is not None and (not mismatched or data["fake"] is None):  # a library's op, or its own wrong fake kernel
        return _library_op(ctx, failure, data, anchors, qualname, real, mismatched=mismatched)
    if mismatched:
        detail = _mismatch_text(reason)
        head = (
            f"The fake kernel of `{qualname}` disagrees with the real kernel ({detail}). "
            f"Export passes, but the exported program carries the wrong {('dtype' if 'dtype' in detail.lower() else 'shape')}: "
            f"the real output is {real or 'unknown'}."
        )
        advice = " Correct the fake function so it returns what the real kernel returns."
    else:
        head = (
            f"The custom op `{qualname}` has no fake kernel, so export cannot know the shape of its output"
            f"{f' (draft export saw the real output: {real})' if real else ''}."
        )
        advice = (
            f" Register one with `@{func}.register_fake`."
            if definition and definition.get("kind") == "custom_op"
            else f' Register one with `@torch.library.register_fake("{qualname}")`.'
        )
    if not anchors and def_anchor is None and fake_anchor is None:
        file, rng = target_anchor(ctx)
        anchors.append((file, rng, "target"))
    everything = anchors + [a for a in (def_anchor, fake_anchor) if a is not None]
    out = []
    for file, rng, role in everything:
        related = [Related(f, r, _role_text(ro, qualname)) for f, r, ro in everything if (f, r) != (file, rng)]
        if role == "definition":
            msg = head + advice + (f" It is called at {', '.join(base(f) + ':' + str(r.start.line + 1) for f, r, _ in anchors)}." if anchors else "")
        elif role == "fake":
            msg = f"This fake kernel of `{qualname}` is wrong: {detail}; the real output is {real or 'unknown'}."
        else:
            msg = head + advice
        with_role: FakeKernelData = {**data, "role": role}
        out.append(new_diagnostic(ctx, file, rng, code, msg, related=related, data=with_role))
    return out


def _library_op(
    ctx: Context,
    failure: ExportFailure,
    data: FakeKernelData,
    anchors: list[tuple[str, Range, FakeKernelRole]],
    qualname: str,
    real: str,
    *,
    mismatched: bool = False,
) -> list[Diagnostic]:
    """A library's custom op without a fake kernel (or with a wrong one of the library's own): on the
    project's call into the library, with the library's call of the op and its definition as related;
    the fix registers the kernel (over the library's, for a wrong one) in the project's own file."""
    definition = failure.get("definition")
    assert definition is not None  # the caller checked: a library's op
    b = ctx.locate([("live", failure.get("live_stack"))] + [("graph", s) for s in failure.get("call_sites") or []])
    lib_def = boundary.LibraryFrame(
        definition["file"],
        int(definition["line"]),
        str(definition.get("function") or ""),
        str(definition.get("function") or qualname),
        None,
        boundary.package_of(definition["file"]),
    )
    def_src = ctx.source(lib_def.file)
    def_related = Related(
        lib_def.file,
        boundary.library_range(def_src, lib_def) if def_src is None else placement.definition_range(def_src, lib_def.line),
        f"`{qualname}` is defined here, in the library {lib_def.package} ({lib_def.where()})",
    )
    lib_fake = failure.get("fake")
    if mismatched and lib_fake and lib_fake.get("file") and (fake_src := ctx.source(lib_fake["file"])) is not None:
        fake_at = placement.definition_range(fake_src, int(lib_fake.get("line") or 1))
        def_related = Related(lib_fake["file"], fake_at, f"the library's fake kernel of `{qualname}`, which disagrees with the real one")
    sites: list[tuple[str, Range, list[Related], LibraryFacts]] = []
    if b is not None and b.inside is not None:
        rng, related, placed = library_place(ctx, b)
        related[0] = boundary.library_related(ctx.source(b.inside.file), b.inside, f"`{qualname}` is called here")
        sites.append((b.frame.file, rng, related + [def_related], placed))
    elif b is not None:
        src = ctx.source(b.frame.file)
        rng = placement.call_range(src, b.frame.line, qualname.split("::")[-1]) if src else Range.of(b.frame.line - 1, 0, b.frame.line - 1, 0)
        sites.append((b.frame.file, rng, [def_related], {"user_line": b.frame.line}))
    else:
        sites += [(f, r, [def_related], {}) for f, r, _ in anchors]
    if not sites:
        file, rng = target_anchor(ctx)
        sites.append((file, rng, [def_related], {}))
    search = f"{lib_def.package} {qualname} fake kernel register_fake torch.export"
    call = f", called at {b.inside.where()} in `{b.inside.qualname}`" if b is not None and b.inside is not None else ""
    if mismatched:
        detail = _mismatch_text(str(data.get("reason") or ""))
        what = "dtype" if "dtype" in detail.lower() else "shape"
        msg = (
            f"The fake kernel the library {lib_def.package} registers for its custom op `{qualname}` (defined at "
            f"{lib_def.where()}{call}) disagrees with the real kernel ({detail}). Export passes, but the exported program "
            f"carries the wrong {what}: the real output is {real or 'unknown'}. {LIBRARY_NO_EDIT} What you can do: register "
            f'a correct one in your own code with `@torch.library.register_fake("{qualname}")` before exporting (it replaces '
            f"the library's; the fix writes one from the outputs draft export saw), and tell the library "
            f'(search its issues for "{search}").'
        )
    else:
        msg = (
            f"The custom op `{qualname}` of the library {lib_def.package} (defined at {lib_def.where()}{call}) has no fake "
            f"kernel, so export cannot know the shape of its output"
            f"{f' (draft export saw the real output: {real})' if real else ''}. {LIBRARY_NO_EDIT} What you can do: "
            f'register a fake kernel in your own code with `@torch.library.register_fake("{qualname}")` before exporting '
            f"(the fix writes one from the shapes draft export saw), or ask the library to ship one "
            f'(search its issues for "{search}").'
        )
    msg += boundary.declared_note(b)
    out = []
    for file, rng, related, placed in sites:
        out.append(
            new_diagnostic(
                ctx,
                file,
                rng,
                "mismatched-fake-kernel" if mismatched else "missing-fake-kernel",
                msg,
                related=related,
                data={**data, **placed, "role": "call", "library": lib_def.package, "upstream_search": search, "advice": "register_fake_in_project"},
            )
        )
    return out


def _role_text(role: str, qualname: str) -> str:
    return {
        "call": f"`{qualname}` is called here",
        "definition": f"`{qualname}` is defined here",
        "fake": f"the fake kernel of `{qualname}`",
        "target": "the export target",
    }.get(role, role)


def _mismatch_text(reason: str) -> str:
    m = re.search(r"Dtypes (\S+) and (\S+) are not equal", reason)
    if m:
        return f"the fake output has dtype {m.group(2)}, the real one {m.group(1)}"
    m = re.search(r"mismatch between fake value (\S+) and real value (\S+)", reason)
    if m:
        return f"a fake output size is {m.group(1)} where the real one is {m.group(2)}"
    return reason or "metadata differs"
