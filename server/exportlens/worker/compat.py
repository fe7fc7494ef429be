"""Every difference between the torch releases the worker supports (2.8 up to 2.14), in one place.

Each entry probes the feature itself (is the attribute there, does the signature take the
parameter, what does the record look like), never the version string, and takes the object to
probe as an argument so that tests can hand it small stand-ins for old APIs. Nothing here
imports torch at import time. The docstrings say which releases need the entry and why
(measured, docs/torch-facts.md §8).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

MINIMUM_TORCH = "2.8"  # the first release with public torch.export.draft_export


def draft_export(export_module: Any) -> Callable[..., Any] | None:
    """`torch.export.draft_export`, or None where torch has no public draft export.

    Needed by torch ≤ 2.7 because draft export is only private there
    (`torch.export._draft_export`); those releases are not supported for export targets.
    """
    fn = getattr(export_module, "draft_export", None)
    return fn if callable(fn) else None


def unsupported_message(version: str) -> str:
    """The one message for a torch without draft export (CLI and editor say the same)."""
    return (
        f"ExportLens needs torch {MINIMUM_TORCH} or newer for export checks: the worker's torch {version} "
        f"has no torch.export.draft_export. torch.compile and torch.jit.trace targets are still checked; "
        f"upgrade torch (pip install 'torch>={MINIMUM_TORCH}') or pick another interpreter to check export targets."
    )


def accepts(fn: Any, name: str) -> bool:
    """Whether `fn` takes the keyword `name` (or **kwargs).

    Needed by torch 2.8 because its `draft_export` has no `prefer_deferred_runtime_asserts_over_guards`
    parameter (added in 2.9): passing it raises a TypeError.
    """
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return True  # cannot tell: pass it and let torch say
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def export_options(fn: Any, options: dict[str, Any]) -> dict[str, Any]:
    """`options` without the keywords `fn` does not take, unless the user set them (then torch says why).

    Needed by torch 2.8 (see `accepts`): the worker passes every export keyword on, with its default
    value when the script did not set it.
    """
    return {k: v for k, v in options.items() if accepts(fn, k) or v not in (None, False, (), {})}


def unbacked_value_hook(shape_env_cls: Any) -> str | None:
    """The `ShapeEnv` method through which draft export records an unbacked symbol's real value.

    Needed by torch ≤ 2.10, where it is `set_unbacked_var_to_val` (2.11 renamed it to
    `set_real_tensor_prop_unbacked_vals`); without it observed values, the "pin the value" fix and
    hover values are lost.
    """
    for name in ("set_real_tensor_prop_unbacked_vals", "set_unbacked_var_to_val"):
        if callable(getattr(shape_env_cls, name, None)):
            return name
    return None


def unbacked_values(shape_env: Any) -> dict[Any, Any]:
    """The real values of unbacked symbols a ShapeEnv holds (`u0` → 4).

    Needed by torch ≤ 2.10, where the dict is `unbacked_var_to_val` (from 2.11
    `real_tensor_prop_unbacked_vals`).
    """
    for name in ("real_tensor_prop_unbacked_vals", "unbacked_var_to_val"):
        values = getattr(shape_env, name, None)
        if isinstance(values, dict) and values:
            return values
    return {}


_RELATION = re.compile(r"^\s*(Eq|Ne|Lt|Le|Gt|Ge|And|Or|Not)\(|(==|!=|<=|>=|<|>)")


def condition_result(expr: str, result: str) -> str:
    """A data-dependent condition's result as 'True'/'False'.

    Needed by torch ≤ 2.11, which records a tensor condition's result as '1'/'0' (`int(real_t)` in
    fake_tensor.py); the quick fixes key on 'True'/'False'. A value (not a relation) keeps its number.
    """
    if result in ("1", "0") and _RELATION.search(expr or ""):
        return "True" if result == "1" else "False"
    return result


_FLOAT_SOLVER_BUG = re.compile(r"Unknown symbol (?P<symbol>zuf\d+) created by constraints solver")


def float_item_bug(exc: BaseException) -> str | None:
    """The unbacked float symbol (`zuf0`) when `exc` is torch's float-assert solver bug, else None.

    Needed by torch ≤ 2.12: `guard_or_defer_runtime_assert` files the deferred runtime assert of an
    unbacked *float* symbol (a branch on a float `.item()`) under the wrong key, and the constraint
    solver then raises `AssertionError: Unknown symbol zuf0 created by constraints solver` (fixed in
    2.13, which keys by both unbacked int and float).
    """
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, AssertionError):
            m = _FLOAT_SOLVER_BUG.search(str(cur))
            if m:
                return m["symbol"]
        cur = cur.__cause__ or cur.__context__
    return None


def graph_break_stack(frame: Any, extract_stack: Callable[[], Any], depth: int = 24) -> list[Any] | None:
    """Dynamo's own user stack of the graph break being logged, before its log text collapses it.

    Needed by every torch from 2.8 to 2.14: `log_graph_break` joins consecutive frames of the same
    name (`collapse_resume_frames`, meant for resume functions), so a `forward` that calls a library
    module's `forward` loses the project's line from the logged traceback (docs/torch-facts.md §2.4).
    The uncollapsed stack is the `real_stack` of the exception being logged: a local of
    `log_graph_break` from 2.9 on, of its caller in 2.8 (which passes it as `user_stack`, a local that
    is collapsed by the time the record is logged); without one, `TracingContext.extract_stack()`, as
    `log_graph_break` itself falls back to. `frame` is the logging call's frame; None when no
    `log_graph_break` frame is on the stack (the record came from elsewhere).
    """
    cur = _log_graph_break_frame(frame, depth)
    if cur is None:
        return None
    for owner in (cur, cur.f_back):
        for value in owner.f_locals.values() if owner is not None else ():
            stack = getattr(value, "real_stack", None) if isinstance(value, BaseException) else None
            if isinstance(stack, list):
                return list(stack)
    try:
        return list(extract_stack())
    except Exception:
        return None


def graph_break_code(frame: Any, depth: int = 24) -> dict[str, Any] | None:
    """The code object dynamo was compiling when it logged this graph break: the function it skips
    and runs in eager mode when the record is its fall-back ("Failed to handle graph break
    gracefully", docs/torch-facts.md §2.5). `code_options`, the first parameter of `log_graph_break`
    in every release 2.8–2.14 (a module function in 2.8, a method from 2.9), holds the compiled
    frame's `co_name`, `co_filename`, `co_firstlineno` (and `co_qualname` on Python 3.11+). None
    when no `log_graph_break` frame is on the stack.
    """
    cur = _log_graph_break_frame(frame, depth)
    options = cur.f_locals.get("code_options") if cur is not None else None
    if not isinstance(options, dict) or not options.get("co_name"):
        return None
    name = str(options["co_name"])
    return {
        "name": name,
        "qualname": str(options.get("co_qualname") or name),
        "file": str(options.get("co_filename") or ""),
        "line": int(options.get("co_firstlineno") or 0),
    }


def _log_graph_break_frame(frame: Any, depth: int) -> Any:
    """The `log_graph_break` frame at or above `frame` (within `depth` frames), else None."""
    cur = frame
    for _ in range(depth):
        if cur is None or cur.f_code.co_name == "log_graph_break":
            break
        cur = cur.f_back
    return cur if cur is not None and cur.f_code.co_name == "log_graph_break" else None


SHAPE_ENV_HOOKS = {"create_symbol": ("val", "source"), "_log_guard": ("prefix", "g"), "_set_replacement": ("a", "tgt", "msg")}


def shape_env_hooks(shape_env_cls: Any) -> set[str]:
    """The `ShapeEnv` methods `shapes.ShapeWatch` can listen to: each present with the parameters it reads.

    Needed by every release 2.8–2.14 alike (the same three methods and parameters, measured): the
    probe keeps a renamed or reshaped method from breaking the user's export; a missing one only
    costs the line of a specialised dimension (the finding then goes on the export call).
    """
    found = set()
    for name, params in SHAPE_ENV_HOOKS.items():
        fn = getattr(shape_env_cls, name, None)
        try:
            names = list(inspect.signature(fn).parameters)[1 : 1 + len(params)] if callable(fn) else []
        except (TypeError, ValueError):
            names = []
        if tuple(names) == params:
            found.add(name)
    return found


def source_name(source: Any) -> str:
    """A guard source's name (`L['x'].size()[1]`).

    Needed by torch 2.8, where `Source.name` is a method (a property from 2.9 on, measured).
    """
    name = source.name
    return str(name() if callable(name) else name)


def additional_inputs(export_module: Any) -> Any:
    """`torch.export.AdditionalInputs` (infers dynamic dimensions from several real inputs), or None.

    Needed by a torch without the class (or with another shape of it): 2.13.0 and 2.14.1 have it with
    `add(args, kwargs)` and `dynamic_shapes(m, args, kwargs)` (measured, docs/torch-facts.md §10);
    2.8 was not measured here. Without it the script's calls of the model are not observed and the
    could-be-dynamic hint offers no "what varied" alternative; its Dim.AUTO fix is unaffected.
    """
    cls = getattr(export_module, "AdditionalInputs", None)
    return cls if isinstance(cls, type) and callable(getattr(cls, "dynamic_shapes", None)) and callable(getattr(cls, "add", None)) else None


def input_guards(ep: Any) -> list[str] | None:
    """The exported program's input guards that are not ranges, as torch's Python code
    (`(L['x'].size()[1]*L['x'].size()[0]) == 12`), checked when its module is called.

    None where the `ExportedProgram` has no `_guards_code` (2.8.0, measured): there the could-be-dynamic
    probe cannot tell a dimension tied by such a guard, and checks its spec by a second export instead.
    2.10.0 also lists the int32 indexing bounds of a convolution's input (`3*L['images'].size()[2]*
    L['images'].size()[3] <= 2147483647`; 2.12.1 on lists none): an upper bound no real input reaches,
    not a tie, so it is left out (docs/torch-facts.md §10).
    """
    code = getattr(ep, "_guards_code", None)
    if not isinstance(code, (list, tuple)):
        return None
    guards = [str(g) for g in code]
    return [g for g in guards if not _INDEX_BOUND.match(g)]


# `<product of sizes> <= 2**31 - 1` (or 2**63 - 1): torch's check that the sizes fit its index type
_INDEX_BOUND = re.compile(r"^[\w\[\]'().* ]+ <= (2147483647|9223372036854775807)$")


def probe(torch: Any) -> dict[str, Any]:
    """What the worker found in this torch, for the `ready` event (the server and logs read it)."""
    draft = draft_export(getattr(torch, "export", None))
    out: dict[str, Any] = {"draft_export": draft is not None, "minimum": MINIMUM_TORCH}
    if draft is not None:
        out["prefer_deferred_runtime_asserts"] = accepts(draft, "prefer_deferred_runtime_asserts_over_guards")
        out["additional_inputs"] = additional_inputs(torch.export) is not None
        try:
            from torch.fx.experimental import symbolic_shapes

            out["unbacked_value_hook"] = unbacked_value_hook(symbolic_shapes.ShapeEnv)
            out["shape_env_hooks"] = sorted(shape_env_hooks(symbolic_shapes.ShapeEnv))
        except Exception:
            out["unbacked_value_hook"] = None
    return out
