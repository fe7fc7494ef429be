"""The user's own export: plain `torch.export.export` with their exact call, and its verdict as JSON.

Plain export decides whether the model exports, draft export only finds more:
docs/torch-facts.md §9. The verdict says, for a program: which requested dimensions it kept dynamic and which it
fixed (and where), and which custom ops it calls (only those need draft export's fake-kernel
checks). For a failure: what kind it is, in a form the server turns into the same findings draft
export's report gives (a constraint violation per violated dimension with the guard that violated
it and torch's suggested fixes, a data-dependent guard with the user's frame and its locals, a
missing fake kernel with the op), or the exception as it is. Imports only torch and the standard
library.
"""

from __future__ import annotations

import re
import time
import traceback
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import torch

from exportlens.worker import capture, dynamism, frames, shapes

TORCH_NAMESPACES = ("aten", "prims")  # everything else in a graph is a custom op (the rule)

_VIOLATED = re.compile(r"Constraints violated \((?P<names>.*?)\)!")
_CONSTANT = re.compile(r"specialized it to be a constant \((?P<value>-?\d+)\)")
_DDE = re.compile(r"(?P<what>Could not guard on|Could not extract specialized integer from) data-dependent expression (?P<expr>.+?)(?: \(unhinted|\s*$)", re.M)
_NO_FAKE = re.compile(r"no fake impl registered for <CustomOpDef\((?P<qualname>[\w.]+::[\w.]+)\)>")
_UNSUPPORTED_OP = re.compile(r"^(?P<op>\w+\.\w+\.\w+)\s*$", re.M)


@dataclass
class Verdict:
    ep: Any = None
    exc: BaseException | None = None
    seconds: float = 0.0
    asked: list[dynamism.Requested] = field(default_factory=list)
    watch: shapes.ShapeWatch = field(default_factory=shapes.ShapeWatch)
    json: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.exc is None

    @property
    def custom_ops(self) -> list[str]:
        return list(self.json.get("custom_ops") or [])


def run(export: Any, mod: Any, args: Any, kwargs: Any, options: dict[str, Any], defines: dict[str, dict[str, Any]]) -> Verdict:
    """Export once, watching torch's shape decisions, and describe the outcome."""
    verdict = Verdict(asked=dynamism.requested(mod, args, kwargs, options.get("dynamic_shapes")), watch=shapes.ShapeWatch(strict=bool(options.get("strict"))))
    started = time.perf_counter()
    try:
        with verdict.watch:
            verdict.ep = export(mod, args, kwargs, **options)
    except Exception as exc:
        verdict.exc = exc
    verdict.seconds = time.perf_counter() - started
    try:
        verdict.json = passed(verdict, args, kwargs) if verdict.exc is None else failed(verdict.exc, verdict, defines)
    except Exception as bug:  # a bug of ours must never change what the user's export did
        verdict.json = {"status": "ok" if verdict.exc is None else "failed", **_common(verdict), "kind": "error", "analysis_error": repr(bug)[:500]}
        if verdict.exc is not None:
            verdict.json["exception"] = capture.exception_info(verdict.exc)
    return verdict


def _common(v: Verdict) -> dict[str, Any]:
    return {
        "seconds": round(v.seconds, 4),
        "requested": [r.to_json() for r in v.asked],
        "names": dynamism.symbol_names(v.watch, v.asked),
    }


def passed(v: Verdict, args: Any, kwargs: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"status": "ok", **_common(v), "custom_ops": custom_ops(v.ep)}
    found = dynamism.lost(v.asked, v.ep, args, kwargs)
    if found is None:
        out["dynamic"] = None  # the program's inputs could not be matched to the call's: not checked
        return out
    gone, kept = found
    out["dynamic"] = kept
    out["specialized"] = [{**r.to_json(), **dynamism.why_static(r, v.watch)} for r in gone]
    return out


def custom_ops(ep: Any) -> list[str]:
    """The ops outside aten and prims the program calls (subgraphs of torch.cond and friends included)."""
    found: set[str] = set()
    for gm in ep.graph_module.modules():
        graph = getattr(gm, "graph", None)
        if graph is None:
            continue
        for node in graph.nodes:
            target = node.target
            if node.op == "call_function" and isinstance(target, torch._ops.OpOverload) and target.namespace not in TORCH_NAMESPACES:
                found.add(str(target))
    return sorted(found)


# -- failures -------------------------------------------------------------------------------------


def failed(exc: BaseException, v: Verdict, defines: dict[str, dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"status": "failed", **_common(v), "exception": capture.exception_info(exc)}
    chain = _chain(exc)
    violation = next((e for e in chain if _is_constraint_violation(e)), None)
    if violation is not None:
        out.update(kind="constraint", **constraint_violation(_message(violation), v))
    elif (dde := next((e for e in chain if _is_data_dependent(e)), None)) is not None:
        failure = data_dependent(dde, exc)
        out.update(kind="data-dependent", failure=failure) if failure is not None else out.update(kind="error")
    elif (op := _missing_fake_op(chain)) is not None:
        out.update(kind="missing-fake-kernel", failure=missing_fake(op, exc, defines))
    else:
        out["kind"] = "error"
    out["user_error"] = not _raised_inside_torch(exc)
    return out


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in out and len(out) < 8:
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


def _message(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:
        return ""


def _is_data_dependent(exc: BaseException) -> bool:
    """A data-dependent guard: torch's exception, or an operator's C++ error wrapping its text
    (`RuntimeError: unflatten got an unexpected error: GuardOnDataDependentSymNode: ...`)."""
    return type(exc).__name__ == "GuardOnDataDependentSymNode" or "GuardOnDataDependentSymNode: Could not" in _message(exc)


def _is_constraint_violation(exc: BaseException) -> bool:
    kind = getattr(exc, "error_type", None)
    return str(getattr(kind, "name", "")) == "CONSTRAINT_VIOLATION" or "Constraints violated (" in _message(exc)


def constraint_violation(text: str, v: Verdict) -> dict[str, Any]:
    """Each violated dimension: its name, the dimensions it covers, why (a guard of the code, a
    constant, a size of 0/1 in the example), the guard and its stack; and torch's suggested fixes."""
    m = _VIOLATED.search(text)
    names = [n.strip() for n in m["names"].split(",")] if m else []
    lines = [ln.strip()[2:] for ln in text.splitlines() if ln.strip().startswith("- ")]
    violations = [_violation(name, [ln for ln in lines if _mentions(ln, name)], v) for name in names if name]
    return {"violations": violations, "suggested": suggested_fixes(text), "message": text[:8000]}


def _mentions(line: str, name: str) -> bool:
    return re.search(r"(?<![\w'])" + re.escape(name) + r"(?![\w'])", line) is not None or name in line and not name[0].isalpha()


def suggested_fixes(text: str) -> list[str]:
    """The lines under torch's "Suggested fixes:" (`seq = Dim('seq', min=17, max=64)`, `n = 2*_n`, `batch = 4`)."""
    out: list[str] = []
    for line in text.split("Suggested fixes:", 1)[1].splitlines() if "Suggested fixes:" in text else []:
        line = line.strip()
        if not line and not out:
            continue
        if " = " not in line:
            break
        out.append(line)
    return out


def _violation(name: str, lines: list[str], v: Verdict) -> dict[str, Any]:
    dims = [r for r in v.asked if name in (r.name, r.root, r.source)]
    out: dict[str, Any] = {"name": name, "dims": [r.to_json() for r in dims], "lines": lines}
    constant = next((int(c["value"]) for ln in lines if (c := _CONSTANT.search(ln))), None)
    if constant is not None:
        out["value"] = constant
        if dims and all(r.size == constant for r in dims) and constant in (0, 1):
            out["reason"] = "zero-one"
            return out
        out["reason"] = "constant"
    else:
        out["reason"] = "relation" if any("must always be equal" in ln or "must be" in ln and "related" in ln for ln in lines) else "guard"
    guard = _violating_guard(dims, v.watch, constant)
    if guard is not None:
        out["guard"] = str(guard.expr)
        out["stack"] = v.watch.stack_json(guard.stack)
    return out


def _violating_guard(dims: list[dynamism.Requested], watch: shapes.ShapeWatch, constant: int | None) -> shapes.Guard | None:
    """The first guard on the dimension's symbols that its declared range does not already imply
    (for a constant: the guard that pinned it)."""
    symbols = [s for r in dims if (s := watch.symbol_of(r)) is not None]
    if constant is not None:
        for s in symbols:
            pinning = next((g for g in watch.guards_on(s) if _is_pin(g, s)), None)
            pin = watch.pins.get(s)
            if pinning is not None or pin is not None:
                return pinning or shapes.Guard(f"Eq({s}, {constant})", frozenset([s]), pin.stack if pin else [], "pin")
    ranges = {s: (r.min, r.max) for r in dims if (s := watch.symbol_of(r)) is not None}
    for g in watch.guards:
        if g.symbols & set(symbols) and not _implied(g, ranges, symbols[0]):
            return g
    return None


def _is_pin(g: shapes.Guard, symbol: str) -> bool:
    text = str(g.expr)
    return text.startswith("Eq(") and symbol in text and len(g.symbols) == 1


def _implied(g: shapes.Guard, ranges: dict[str, tuple[int | None, int | None]], one: str) -> bool:
    """Whether the guard holds over the declared range of the dimension (then it violates nothing).
    The dimension's symbols (one per input that shares the Dim) are one value: `Eq(s27, s64)` holds."""
    try:
        import sympy
        from torch.utils._sympy.value_ranges import ValueRanges, bound_sympy

        first = next(s for s in g.expr.free_symbols if str(s) == one) if any(str(s) == one for s in g.expr.free_symbols) else sympy.Symbol(one, integer=True)
        expr = g.expr.xreplace({s: first for s in g.expr.free_symbols if str(s) in ranges})
        if expr in (sympy.true, True):
            return True
        bounds = {}
        for sym in expr.free_symbols:
            lo, hi = ranges.get(str(sym), (None, None))
            if str(sym) not in ranges:
                return False  # it ties the dimension to something else: a relation torch reports
            bounds[sym] = ValueRanges(lo if lo is not None else 0, hi if hi is not None else sympy.oo)
        result = bound_sympy(expr, bounds)
        return bool(result.is_singleton() and result.lower == sympy.true)
    except Exception:
        return False


def data_dependent(dde: BaseException, raised: BaseException) -> dict[str, Any] | None:
    """A `GuardOnDataDependentSymNode` of plain export in the shape of draft export's
    DATA_DEPENDENT_ERROR: the expression, the user's frames from the traceback and their locals.
    Plain export never ran the model on real values, so `result` is unknown."""
    m = _DDE.search(_message(dde))
    if m is None:
        return None
    tb = raised.__traceback__ if raised.__traceback__ is not None else dde.__traceback__
    outside, torch_frames = _traceback_frames(tb)
    traced = _dynamo_user_stack(_message(raised))
    if traced:  # strict=True: dynamo traced the code, the user's frames are only in its message
        outside = []
    live = _outer() + [f for f, _ in outside] + traced
    innermost = outside[-1][1] if outside else None
    return {
        "type": "DATA_DEPENDENT_ERROR",
        "xfail": False,
        "expr": m["expr"].strip(),
        "result": None,
        "kind": "condition" if m["what"].startswith("Could not guard") else "value",
        "occurrences": 1,
        "user_stack": live[-3:],
        "stack": torch_frames[-3:],
        "live_stack": live,
        "symbol_to_sources": {},
        "frame_locals": _frame_locals(innermost) if innermost is not None else {},
        "plain": True,
    }


def _traceback_frames(tb: TracebackType | None) -> tuple[list[tuple[dict[str, Any], Any]], list[dict[str, Any]]]:
    """(frames outside torch with their live frame objects, torch's own frames), outermost first."""
    outside: list[tuple[dict[str, Any], Any]] = []
    inside: list[dict[str, Any]] = []
    summaries = traceback.extract_tb(tb) if tb is not None else []
    live = []
    while tb is not None:
        live.append(tb.tb_frame)
        tb = tb.tb_next
    for fs, frame in zip(summaries, live, strict=False):
        info = {"file": fs.filename, "line": fs.lineno, "name": fs.name, "loc": fs.line}
        if getattr(fs, "colno", None) is not None and fs.end_lineno == fs.lineno:
            info.update(end_line=fs.end_lineno, col=fs.colno, end_col=fs.end_colno)
        if frames.outside(fs.filename):
            owner = "stdlib" if _stdlib(fs.filename) else None
            if owner:
                info["where"] = owner
            outside.append((info, frame))
        else:
            inside.append(info)
    return outside, inside


_USER_CODE_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<name>\S+)\n\s*(?P<loc>.*)$', re.M)


def _dynamo_user_stack(message: str) -> list[dict[str, Any]]:
    """The frames of dynamo's "from user code:" section (strict export), outside torch, outermost first."""
    if "from user code:" not in message:
        return []
    section = message.split("from user code:", 1)[1]
    out = []
    for m in _USER_CODE_FRAME.finditer(section):
        if frames.outside(m["file"]):
            out.append({"file": m["file"], "line": int(m["line"]), "name": m["name"], "loc": m["loc"].strip()})
    return out


def _outer() -> list[dict[str, Any]]:
    """The frames around the export call (the user's script calling torch.export.export): an
    exception's traceback starts where it was caught, below them."""
    import sys

    return [frames.frame_json(f) for f in shapes.snapshot(sys._getframe(1))]  # type: ignore[arg-type]  # a Frozen frame reads the same


def _stdlib(path: str) -> bool:
    from exportlens.worker import stacks

    return stacks.where(path) == "stdlib"


def _frame_locals(frame: Any) -> dict[str, Any]:
    """The user's frame's locals as draft export lists them: symbolic values by their symbol."""
    out: dict[str, list[str]] = {}
    try:
        for name, value in list(frame.f_locals.items())[:200]:
            if isinstance(value, (torch.SymInt, torch.SymBool, torch.SymFloat)):
                out[name] = [str(value)]
            elif isinstance(value, torch.Tensor):
                out[name] = [f"Tensor(shape: {tuple(value.shape)})"]
    except Exception:
        pass
    return {"loc": None, "locals": out, "symbols": {}}


def _missing_fake_op(chain: list[BaseException]) -> str | None:
    """The op (`ns.name.overload` or `ns::name`) plain export found without a fake kernel, if that is the failure."""
    for e in chain:
        text = _message(e)
        if (m := _NO_FAKE.search(text)) is not None:
            return m["qualname"]
        if type(e).__name__ == "UnsupportedOperatorException" and (m := _UNSUPPORTED_OP.search(text.splitlines()[0] if text else "")) is not None:
            if not m["op"].startswith(TORCH_NAMESPACES):
                return m["op"]
    return None


def missing_fake(op: str, exc: BaseException, defines: dict[str, dict[str, Any]]) -> dict[str, Any]:
    outside, _ = _traceback_frames(exc.__traceback__)
    site = _outer() + [f for f, _ in outside]
    name = op if "::" not in op else op.replace("::", ".") + ".default"
    return {
        "type": "MISSING_FAKE_KERNEL",
        "xfail": False,
        "op": name,
        "user_stack": [],
        "stack": [],
        "call_sites": [site] if site else [],
        "live_stack": site,
        "profiles": [],
        "plain": True,
        **capture.op_registration(name, defines),
    }


def _raised_inside_torch(exc: BaseException) -> bool:
    """Whether the innermost frame of the exception is torch's (not the user's or a library's)."""
    tb = exc.__traceback__
    last = None
    while tb is not None:
        last = tb.tb_frame.f_code.co_filename
        tb = tb.tb_next
    return last is not None and not frames.outside(last)
