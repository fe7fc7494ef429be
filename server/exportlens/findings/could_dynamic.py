"""`could-be-dynamic`: a passing export whose program is static where torch could keep it dynamic.

The user's export passed, and its program accepts only the example's sizes in some dimensions. The
worker's probe (`worker/dynamic_probe.py`) exported with Dim.AUTO and then with named Dims, and
says which dimensions plain export keeps dynamic (docs/torch-facts.md §10). Only then is there a
hint, on the export call, naming them in the user's names: a hint, so CI and "0 problems" are
unaffected. Nothing is said where the program is already as dynamic as torch allows, where the
probe found nothing more (every other size is fixed by the code, or 0/1), or where a batch of 1 in
the example is all there is to change.
"""

from __future__ import annotations

from exportlens.findings.context import Context, new_diagnostic, target_anchor
from exportlens.fixes import dynamic_spec
from exportlens.model import Diagnostic
from exportlens.protocol import CouldBeDynamicData, DynamicProbe, PlainVerdict, SpecChoice, TargetEvent


def could_be_dynamic(ctx: Context, event: TargetEvent, plain: PlainVerdict) -> list[Diagnostic]:
    """The hint of one target whose plain export passed, from its probe; [] when there is nothing to say."""
    probe: DynamicProbe | None = event.get("dynamic_probe")
    if plain.get("status") != "ok" or probe is None or probe.get("status") != "ok":
        return []
    spec = dynamic_spec.choose(probe, probe.get("named") or {"status": "none"}, "auto")
    if spec is None:
        return []  # nothing torch could keep dynamic (a batch the example has as 1 is told: the fix makes it 2)
    observed = dynamic_spec.choose(probe, probe["observed"], "observed") if probe.get("observed") else None
    leaves = probe.get("leaves") or []
    made = {(d["leaf"], d["dim"]) for d in spec["dims"]}
    asked = {(leaf, dim) for leaf, dim in probe.get("requested") or []}
    rest = [(leaf, i) for n, leaf in enumerate(leaves) for i in range(len(leaf["shape"])) if (n, i) not in made | asked]
    static = [dynamic_spec.spelled(leaf, i) for leaf, i in rest]
    tiny = [dynamic_spec.spelled(leaf, i) for leaf, i in rest if leaf["shape"][i] in (0, 1)]  # static for the example's 0/1, not the code
    data: CouldBeDynamicData = {
        "inputs": list(probe.get("inputs") or []),
        "structure": dict(probe.get("structure") or {}),
        "leaves": list(leaves),
        "requested": [list(x) for x in probe.get("requested") or []],
        "spec": spec,
        "static": static,
        "export_call": {"file": ctx.target_file, "line": ctx.target_line},
        "module_target": not ctx.target.startswith("export at "),
        "site": "could-be-dynamic " + ", ".join(sorted(d["spelled"] for d in spec["dims"])),
        "placed": "target",
    }
    if observed is not None:
        data["observed"] = observed
    file, rng = target_anchor(ctx)
    return [new_diagnostic(ctx, file, rng, "could-be-dynamic", message(spec, observed, static, tiny, probe.get("checked") == "named"), data=data)]


def message(spec: SpecChoice, observed: SpecChoice | None, static: list[str], tiny: list[str], named: bool) -> str:
    """The hint's words; `tiny`: the static dimensions the example has as 0 or 1 (among `static`)."""
    n = len(spec["dims"])
    sizes = ", ".join(f"`{d['spelled']}` = {d['size']}" for d in spec["dims"])
    out = (
        f"torch.export.export passes, but the program accepts only the example's sizes ({sizes}). "
        f"torch can keep {'this dimension' if n == 1 else f'these {n} dimensions'} dynamic: {dynamic_spec.summary(spec)}"
    )
    ones = [d["spelled"] for d in spec["dims"] if d["zero_one"]]
    if ones:
        out += f" ({', '.join(f'`{s}`' for s in ones)} only with an example of size 2 or more there: {dynamic_spec.ZERO_ONE})"
    # what was checked, and how: the Dim.AUTO program alone where its input guards say no more (docs/torch-facts.md §10)
    if named:
        out += f"; plain export with {'this Dim' if len(spec['roots']) + sum(1 for d in spec['dims'] if not d['root']) == 1 else 'these Dims'} passes."
    else:
        out += f"; exported with Dim.AUTO, the program keeps {'it' if n == 1 else 'them'} dynamic."
    fixed = [s for s in static if s not in tiny]
    told: list[str] = []
    if fixed:
        shown = ", ".join(f"`{s}`" for s in fixed[:6]) + (", …" if len(fixed) > 6 else "")
        told.append(f"{shown} (the code fixes {'it' if len(fixed) == 1 else 'them'})")
    if tiny:
        shown = ", ".join(f"`{s}`" for s in tiny[:6]) + (", …" if len(tiny) > 6 else "")
        told.append(f"{shown} (0 or 1 in the example: {dynamic_spec.ZERO_ONE})")
    if told:
        out += f" Static: {'; '.join(told)}."
    if observed is not None:
        calls = observed.get("calls", 0)
        varied = ", ".join(f"`{d['spelled']}`" for d in observed["dims"])
        which = "that" if len(observed["dims"]) == 1 else "those"
        out += f" The script also called the model on {calls} other input{'s' if calls != 1 else ''}, where only {varied} varied:"
        out += f" an alternative fix makes exactly {which} dynamic."
    return out
