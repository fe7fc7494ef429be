"""The fixes of a data-dependent guard: `torch._check` above the statement, a `torch.cond` rewrite of
the `if`, or pinning the value, each titled as the assumption or the rewrite it is.

The guard's facts come from `Diagnostic.data` (the condition torch could not decide, which branch
the example took, the statement's kind); the edits are `check_insert.py`'s and `cond_rewrite.py`'s.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from exportlens.model import Diagnostic, Fix
from exportlens.source import Reader

from .check_insert import chained_conditions, insert_check, insert_checks, insert_item_check, negate
from .common import Offer
from .cond_rewrite import rewrite_if_as_cond


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
    other = otherwise if otherwise is not None else f"inputs with {_prose(negate(cond))}"
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
        out = offer.take(rewrite_if_as_cond(text, d.file, line, _tensor_names(data)))
        return out + [Fix(f.title, f.edits, False, assumes=f.assumes) for f in _item_check(d, text, line, offer)]
    if data.get("kind") == "value":
        pin = data.get("pin")
        if not pin:
            return []
        title = _assumption_title(f"Pin the value: add `torch._check({pin})`", pin, otherwise="any other value")
        return [_assume(f, pin, title) for f in offer.take(insert_check(text, d.file, line, pin, preferred=True))]
    expr = data.get("source_expr")
    if expr and data.get("result") is None and data.get("kind") == "condition":
        # plain export's own failure, before draft export saw the example's values: neither branch is
        # the observed one; the torch.cond rewrite keeps both
        out = offer.take(rewrite_if_as_cond(text, d.file, line, _tensor_names(data))) if is_if else []
        for cond in (expr, negate(expr)):
            checks = offer.take(insert_check(text, d.file, line, cond, preferred=False))
            out += [_assume(f, cond, _assumption_title(f"Add `torch._check({cond})`", cond)) for f in checks]
        return out
    if not expr or data.get("result") not in ("True", "False"):
        return []
    taken = expr if data["result"] == "True" else negate(expr)
    other = negate(taken)
    if data.get("pin"):  # a condition torch asked inside a call (split on torch ≤ 2.12): only pinning passes
        pin = str(data["pin"])
        out = [
            _assume(f, pin, _assumption_title(f"Pin the value: add `torch._check({pin})`", pin, otherwise="any other value"))
            for f in offer.take(insert_check(text, d.file, line, pin, preferred=True))
        ]
        return out + [
            _assume(f, taken, _assumption_title(f"Add `torch._check({taken})`", taken) + " (settles only this first question)")
            for f in offer.take(insert_check(text, d.file, line, taken, preferred=False))
        ]
    # `if n > 2 and n < 100:` taken: torch met `n > 2` first (and counted `n < 100` as another
    # occurrence); the `if` is only decided once every part is checked
    chain = chained_conditions(text, line, expr) if is_if and data["result"] == "True" else [taken]
    shown = " and ".join(f"`torch._check({c})`" for c in chain)
    assumed = " and ".join(chain)
    out = [
        _assume(f, assumed, _assumption_title(f"Add {shown}", assumed, otherwise=None if len(chain) == 1 else "other inputs"))
        for f in offer.take(insert_checks(text, d.file, line, chain, preferred=True))
    ]
    out += [
        _assume(f, other, _assumption_title(f"Add `torch._check({other})`", other))
        for f in offer.take(insert_check(text, d.file, line, other, preferred=False))
    ]
    if is_if:
        out += [Fix(f.title, f.edits, False) for f in offer.take(rewrite_if_as_cond(text, d.file, line, _tensor_names(data)))]
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
    for f in offer.take(insert_item_check(text, d.file, line, left)):
        action = f.title.split(" (assume")[0]
        out.append(_assume(f, test, _assumption_title(action, test) + " (keeps only this branch)"))
    return out


def _first_symbol(d: Diagnostic) -> str:
    found = re.findall(r"\b[a-z]+\d+\b", str(d.data.get("expr", "")))
    return found[0] if found else "u0"
