"""The fixers of each diagnostic code: from a diagnostic and the current texts to its fixes.

A fixer is `(diagnostic, read, offer) -> list[Fix]`: it reads the files it edits with `read`
(their CURRENT text), calls the pure generators of this package, and hands each generator's
`Refusal` to `offer.take`, so the reasons come back with the fixes (`fix_registry.refusals_for`).
`codes.py` names each code's fixers; `fix_registry.fixes_for` looks them up there.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any

from exportlens import fixes as gen
from exportlens.fixes import compile_fixes, deprecated_fix, suppress_fix
from exportlens.fixes.common import Offer
from exportlens.model import Diagnostic, Fix
from exportlens.source import Reader

Fixer = Callable[[Diagnostic, Reader, Offer], list[Fix]]


def data_dependent(d: Diagnostic, read: Reader, offer: Offer) -> list[Fix]:
    """data-dependent-guard: `torch._check` above the statement, `torch.cond` for an `if`, or pinning the value."""
    text = read(d.file)
    return _data_dependent_in(d, text, offer) if text is not None else []


def _tensor_names(data: dict[str, Any]) -> list[str] | None:
    names = [
        n
        for n, vals in (data.get("locals") or {}).items()
        if any(isinstance(v, str) and v.startswith("Tensor(") for v in (vals if isinstance(vals, list) else [vals]))
    ]
    return names or None


def _prose(cond: str) -> str:
    return cond.replace("<=", "≤").replace(">=", "≥").replace("!=", "≠").replace("==", "=")


def _assumption_title(action: str, cond: str, *, otherwise: str | None = None) -> str:
    """A title that says the fix is an assumption: what it asserts and which inputs then raise."""
    other = otherwise if otherwise is not None else f"inputs with {_prose(gen.negate(cond))}"
    return f"{action} — assumes `{cond}` for every input; {other} will raise"


def _assume(fix: Fix, cond: str, title: str) -> Fix:
    return Fix(title, fix.edits, fix.is_preferred, assumes=cond)


def _data_dependent_in(d: Diagnostic, text: str, offer: Offer) -> list[Fix]:
    data = d.data
    if data.get("library"):  # the guard's names are the library's: nothing to state on the project's line
        return []
    if data.get("torch_internal"):  # torch decided the guard inside an operator: not user code to patch
        return []
    line = int(data.get("statement_line") or data.get("user_line") or d.range.start.line + 1)
    is_if = data.get("statement_kind") == "if"
    if data.get("tensor_condition"):
        if not is_if:
            return []
        out = offer.take(gen.rewrite_if_as_cond(text, d.file, line, _tensor_names(data)))
        return out + [Fix(f.title, f.edits, False, assumes=f.assumes) for f in _item_check(d, text, line, offer)]
    if data.get("kind") == "value":
        pin = data.get("pin")
        if not pin:
            return []
        title = _assumption_title(f"Pin the value: add `torch._check({pin})`", pin, otherwise="any other value")
        return [_assume(f, pin, title) for f in offer.take(gen.insert_check(text, d.file, line, pin, preferred=True))]
    expr = data.get("source_expr")
    if expr and data.get("result") is None and data.get("kind") == "condition":
        # plain export's own failure, before draft export saw the example's values: neither branch is
        # the observed one; the torch.cond rewrite keeps both
        out = offer.take(gen.rewrite_if_as_cond(text, d.file, line, _tensor_names(data))) if is_if else []
        for cond in (expr, gen.negate(expr)):
            checks = offer.take(gen.insert_check(text, d.file, line, cond, preferred=False))
            out += [_assume(f, cond, _assumption_title(f"Add `torch._check({cond})`", cond)) for f in checks]
        return out
    if not expr or data.get("result") not in ("True", "False"):
        return []
    taken = expr if data["result"] == "True" else gen.negate(expr)
    other = gen.negate(taken)
    if data.get("pin"):  # a condition torch asked inside a call (split on torch ≤ 2.12): only pinning passes
        pin = str(data["pin"])
        out = [
            _assume(f, pin, _assumption_title(f"Pin the value: add `torch._check({pin})`", pin, otherwise="any other value"))
            for f in offer.take(gen.insert_check(text, d.file, line, pin, preferred=True))
        ]
        return out + [
            _assume(f, taken, _assumption_title(f"Add `torch._check({taken})`", taken) + " (settles only this first question)")
            for f in offer.take(gen.insert_check(text, d.file, line, taken, preferred=False))
        ]
    # `if n > 2 and n < 100:` taken: torch met `n > 2` first (and counted `n < 100` as another
    # occurrence); the `if` is only decided once every part is checked
    chain = gen.chained_conditions(text, line, expr) if is_if and data["result"] == "True" else [taken]
    shown = " and ".join(f"`torch._check({c})`" for c in chain)
    assumed = " and ".join(chain)
    out = [
        _assume(f, assumed, _assumption_title(f"Add {shown}", assumed, otherwise=None if len(chain) == 1 else "other inputs"))
        for f in offer.take(gen.insert_checks(text, d.file, line, chain, preferred=True))
    ]
    out += [
        _assume(f, other, _assumption_title(f"Add `torch._check({other})`", other))
        for f in offer.take(gen.insert_check(text, d.file, line, other, preferred=False))
    ]
    if is_if:
        out += [Fix(f.title, f.edits, False) for f in offer.take(gen.rewrite_if_as_cond(text, d.file, line, _tensor_names(data)))]
    return out


def _item_check(d: Diagnostic, text: str, line: int, offer: Offer) -> list[Fix]:
    """`v = x.sum().item(); torch._check(v > 0); if v > 0:` — only when the example took the `if`."""
    test = str(d.data.get("test_text") or "")
    if d.data.get("result") != "True" or d.data.get("expr", "").replace(" ", "") != "Eq(u0,1)".replace("u0", _first_symbol(d)):
        return []
    try:
        node = ast.parse(test, mode="eval").body
    except SyntaxError:
        return []
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1):
        return []
    left = ast.get_source_segment(test, node.left)
    if not left:
        return []
    out = []
    for f in offer.take(gen.insert_item_check(text, d.file, line, left)):
        action = f.title.split(" (assume")[0]
        out.append(_assume(f, test, _assumption_title(action, test) + " (keeps only this branch)"))
    return out


def _first_symbol(d: Diagnostic) -> str:
    found = re.findall(r"\b[a-z]+\d+\b", str(d.data.get("expr", "")))
    return found[0] if found else "u0"


def fake_kernel(d: Diagnostic, read: Reader, offer: Offer) -> list[Fix]:
    """missing-fake-kernel: a `register_fake` for the op, beside it or (a library's op) in the project's file."""
    definition = d.data.get("definition")
    if not definition or not definition.get("file"):
        return []
    text = read(definition["file"])
    if text is None:
        return []
    if d.data.get("library"):  # the op is a library's: register its fake kernel in the project's file
        params = gen.library_op_params(text, definition)
        own = read(d.file)
        if isinstance(params, gen.Refusal) or own is None:
            return []
        return offer.take(gen.register_fake_in_project_fix(own, d.file, d.data["op"], d.data.get("profiles") or [], params))
    return offer.take(gen.register_fake_fix(text, definition["file"], d.data["op"], d.data.get("profiles") or [], definition))


def mismatched_fake_kernel(d: Diagnostic, read: Reader, offer: Offer) -> list[Fix]:
    """mismatched-fake-kernel: the registered fake function corrected from the real outputs."""
    fake = d.data.get("fake")
    profiles = d.data.get("profiles") or []
    if not fake or len(profiles) != 1:
        return []
    text = read(fake["file"])
    if text is None:
        return []
    return offer.take(gen.mismatch_fix(text, fake["file"], int(fake["line"]), d.data.get("reason", ""), profiles[0].get("out")))


def guard_added(d: Diagnostic, read: Reader, offer: Offer) -> list[Fix]:
    """guard-added: torch's suggested fix where the user wrote the Dim (a range, a derived dimension),
    a larger example for a size of 0/1, a `torch.cond` rewrite of the user's `if` that fixed it to a
    constant; `Dim.STATIC` as the alternative that gives the dimension up."""
    call = d.data.get("export_call") or {}
    text = read(call["file"]) if call.get("file") else None
    if text is None:
        return []
    file, line = call["file"], int(call["line"])
    name, reason, dims = str(d.data.get("name") or ""), d.data.get("reason"), d.data.get("dims") or []
    out: list[Fix] = []
    if reason == "zero-one":
        out += offer.take(gen.example_size_fix(text, file, line, dims[0], name)) if dims else []
    else:
        suggested = list(d.data.get("suggested") or [])
        s = gen.parse_suggested(suggested).get(name)
        if s is not None and s.kind == "range":
            out += offer.take(gen.refine_range(text, file, name, s.min, s.max))
        elif s is not None and s.kind == "derived":
            out += offer.take(gen.derive(text, file, name, suggested))
        if reason == "constant" or s is None:
            out += _cond_fixes(d, read, offer)
    named = name if any(dim.get("name") == name for dim in dims) else None
    out += offer.take(gen.static_dims(text, file, line, named, [] if named else dims, d.data.get("value")))
    return out


def dim_specialized(d: Diagnostic, read: Reader, offer: Offer) -> list[Fix]:
    """dim-specialized: a larger example for a size of 0/1, a `torch.cond` rewrite of the user's `if`
    that fixed it (both keep the dimension dynamic); `Dim.STATIC` to say what the program already is."""
    call = d.data.get("export_call") or {}
    dim = d.data.get("dim") or {}
    text = read(call["file"]) if call.get("file") else None
    if text is None or not dim:
        return []
    file, line = call["file"], int(call["line"])
    out: list[Fix] = []
    if d.data.get("reason") == "zero-one":
        out += offer.take(gen.example_size_fix(text, file, line, dim, str(dim.get("name") or dim.get("spelled"))))
    elif d.data.get("statement_kind") == "if" and d.data.get("placed") == "guard" and not d.data.get("library"):
        out += _cond_fixes(d, read, offer)
    named = dim.get("name") if dim.get("kind") in ("named", "derived") else None
    out += offer.take(gen.static_dims(text, file, line, named, [] if named else [dim], d.data.get("value")))
    return out


def _cond_fixes(d: Diagnostic, read: Reader, offer: Offer) -> list[Fix]:
    """The `if` that fixed the dimension, as `torch.cond`: both paths stay, and so does the dimension."""
    line = int(d.data.get("user_line") or 0)
    text = read(d.file) if line and not d.data.get("library") else None
    if text is None:
        return []
    return offer.take(gen.rewrite_if_as_cond(text, d.file, line))


def compile_finding(d: Diagnostic, read: Reader, offer: Offer) -> list[Fix]:
    """graph-break / recompile: the fixes the worker said apply, in its order of preference."""
    out: list[Fix] = []
    for want in d.data.get("fixes") or []:
        kind = want.get("fix")
        file = want.get("file") or (want.get("compile_call") or {}).get("file") or d.file
        text = read(file)
        if text is None:
            continue
        if kind == "torch_cond":
            found = offer.take(gen.rewrite_if_as_cond(text, file, d.range.start.line + 1))
        elif kind == "capture_scalar_outputs":
            found = offer.take(compile_fixes.capture_scalar_outputs_fix(text, file))
        elif kind == "reorderable_logging":
            found = offer.take(compile_fixes.reorderable_logging_fix(text, file, str(want.get("function") or "print")))
        elif kind == "compiler_disable":
            found = offer.take(compile_fixes.compiler_disable_fix(text, file, int(want.get("line") or d.range.start.line + 1)))
        elif kind == "drop_dynamic_false":
            found = offer.take(compile_fixes.drop_dynamic_false_fix(text, file, int((want.get("compile_call") or {}).get("line") or 0)))
        else:
            found = []  # pass-as-tensor, mark_dynamic, torch._check under compile: not rewritten automatically
        out += [Fix(f.title, f.edits, not out and i == 0) for i, f in enumerate(found)]
    return out


def deprecated_api(d: Diagnostic, read: Reader, offer: Offer) -> list[Fix]:
    """deprecated-api: the deprecated call rewritten with its replacement (`deprecated_fix.rewrite`)."""
    text = read(d.file)
    rewrite = deprecated_fix.rewrite(text, d) if text is not None else None
    return [rewrite] if rewrite is not None else []


def unused_ignore(d: Diagnostic, read: Reader, offer: Offer) -> list[Fix]:
    """unused-ignore: the unused codes (or the whole comment) removed."""
    text = read(d.file)
    removal = suppress_fix.remove_unused_fix(text, d) if text is not None else None
    return [removal] if removal is not None else []
