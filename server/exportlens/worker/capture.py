"""Turn torch objects (draft-export reports, exceptions, op registrations) into plain JSON.

Runs inside the job process. Every path is resolved here, where torch's intern table lives,
because the report's own `str_to_filename` is empty after the first export in a process.
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Callable
from typing import Any

import torch

from exportlens.worker import compat, stacks

_STACK_FILE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<name>\S+)')


def intern_paths() -> dict[int, str]:
    """Interned-id → path, from torch's process-global table (always complete)."""
    from torch._logging import structured

    return {v: k for k, v in structured.INTERN_TABLE.items()}


def jsonable(value: Any, depth: int = 0) -> Any:
    """A JSON-safe copy of report data: dim hints, tensors, sets and the rest as text."""
    if depth > 8:
        return repr(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v, depth + 1) for v in value]
    kind = getattr(value, "type", None)
    if type(value).__name__ == "_DimHint" and kind is not None:
        return {"dim_hint": getattr(kind, "name", str(kind)), "min": value.min, "max": value.max}
    if type(value).__name__ == "Dim" or hasattr(value, "__name__") and hasattr(value, "min"):
        return {"dim": getattr(value, "__name__", str(value)), "min": _num(value.min), "max": _num(value.max)}
    return str(value)


def _num(v: Any) -> Any:
    try:
        return int(v)
    except Exception:
        return None


def _frames(stack: Any, paths: dict[int, str]) -> list[dict[str, Any]]:
    out = []
    for fr in stack or []:
        fid = fr.get("filename")
        path = paths.get(fid) if isinstance(fid, int) else fid
        entry = {"file": path, "line": fr.get("line"), "name": fr.get("name"), "loc": fr.get("loc")}
        owner = stacks.where(path) if isinstance(path, str) else None
        if owner:
            entry["where"] = owner
        out.append(entry)
    return out


def tensor_meta(meta: Any) -> Any:
    """OpProfile's TensorMetadata (or a tuple of them, or None) as JSON."""
    if meta is None:
        return None
    if isinstance(meta, (tuple, list)):
        return [tensor_meta(m) for m in meta]
    return {
        "rank": int(meta.rank),
        "dtype": str(meta.dtype),
        "device": str(meta.device),
        "layout": str(getattr(meta, "layout", "torch.strided")),
    }


def op_profiles(report: Any) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for op, profiles in getattr(report, "op_profiles", {}).items():
        items = [{"args": [tensor_meta(a) for a in p.args_profile], "out": tensor_meta(p.out_profile)} for p in profiles]
        items.sort(key=repr)
        out[str(op)] = items
    return out


def graph_call_sites(ep: Any) -> dict[str, list[list[dict[str, Any]]]]:
    """op name → the stack (outermost first) of every graph node that calls it."""
    sites: dict[str, list[list[dict[str, Any]]]] = {}
    if ep is None:
        return sites
    for node in ep.graph.nodes:
        if node.op != "call_function":
            continue
        trace = node.meta.get("stack_trace")
        if not trace:
            continue
        frames = [{"file": m["file"], "line": int(m["line"]), "name": m["name"], "loc": None} for m in _STACK_FILE.finditer(trace)]
        if frames:
            sites.setdefault(str(node.target), []).append(frames)
    return sites


def _real_size(size: Any) -> int | None:
    """A dimension's value in the example run: backed hints and draft export's real values."""
    if isinstance(size, int):
        return size
    try:
        node = size.node
        env = node.shape_env
        mapping = {**(getattr(env, "backed_var_to_val", None) or getattr(env, "var_to_val", {}) or {}), **compat.unbacked_values(env)}
        value = node.expr.xreplace(mapping)
        return int(value) if value.is_number else None
    except Exception:
        return None


def _shape(val: Any) -> list[int | None] | None:
    shape = getattr(val, "shape", None)
    return None if shape is None else [_real_size(s) for s in shape]


def observed_sizes(ep: Any, op: str) -> list[dict[str, Any]]:
    """The real sizes of the op's tensor arguments and outputs at each call in the graph."""
    out: list[dict[str, Any]] = []
    if ep is None:
        return out
    for node in ep.graph.nodes:
        if node.op != "call_function" or str(node.target) != op:
            continue
        args = [_shape(a.meta.get("val")) if hasattr(a, "meta") else None for a in node.args]
        val = node.meta.get("val")
        outs = [_shape(v) for v in val] if isinstance(val, (tuple, list)) else [_shape(val)]
        out.append({"args": args, "out": outs})
    return out


def _attach_sizes(profiles: list[dict[str, Any]], observed: list[dict[str, Any]]) -> None:
    """Give each profile the sizes of a call whose argument ranks match it."""
    for profile in profiles:
        ranks = [a["rank"] if a else None for a in profile["args"]]
        for obs in observed:
            if [len(s) if s is not None else None for s in obs["args"]] == ranks:
                profile["sizes"] = obs
                break


def _function_location(fn: Any) -> dict[str, Any] | None:
    code = getattr(fn, "__code__", None)
    if code is None:
        fn = getattr(fn, "__wrapped__", None) or getattr(fn, "func", None)
        code = getattr(fn, "__code__", None)
    if code is None:
        return None
    return {"file": code.co_filename, "line": code.co_firstlineno, "name": code.co_name}


def op_registration(op: str, defines: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Where the op `ns.name.overload` was defined and where its fake kernel lives, if any."""
    parts = op.split(".")
    qualname = f"{parts[0]}::{parts[1]}" if len(parts) >= 2 else op
    info: dict[str, Any] = {"qualname": qualname, "definition": None, "fake": None}
    try:
        from torch._library import custom_ops, simple_registry

        opdef = custom_ops.OPDEFS.get(qualname)
        if opdef is not None:
            loc = _function_location(opdef._init_fn)
            if loc:
                info["definition"] = {**loc, "kind": "custom_op", "function": loc["name"]}
            abstract = getattr(opdef, "_abstract_fn", None)
            if abstract is not None:
                info["fake"] = _function_location(abstract)
        if info["fake"] is None:
            holder = simple_registry.singleton.find(qualname).fake_impl
            kernel = getattr(holder, "kernel", None)
            if kernel is not None:
                info["fake"] = _function_location(kernel.func)
    except Exception:  # registry internals moved: locations are a bonus, not a must
        pass
    if info["definition"] is None and qualname in defines:
        info["definition"] = {**defines[qualname], "kind": "library"}
    return info


def failure_json(
    kind: str, data: dict[str, Any], paths: dict[int, str], *, xfail: bool = False, live_stack: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """One failure's own data as plain JSON (no graph yet: what is known when torch records it)."""
    item: dict[str, Any] = {"type": kind, "xfail": xfail}
    for key in ("expr", "result", "prefix", "op", "reason"):
        if key in data:
            item[key] = str(data[key])
    if "result" in item:
        item["result"] = compat.condition_result(item.get("expr", ""), item["result"])
    if "occurrences" in data:
        item["occurrences"] = int(data["occurrences"])
    item["user_stack"] = _frames(data.get("user_stack"), paths)
    item["stack"] = _frames(data.get("stack"), paths)
    if live_stack is not None:
        item["live_stack"] = live_stack
    if "symbol_to_sources" in data:
        item["symbol_to_sources"] = jsonable(data["symbol_to_sources"])
    if "frame_locals" in data:
        item["frame_locals"] = jsonable(data["frame_locals"])
    if "new_dynamic_shapes" in data:
        item["new_dynamic_shapes"] = jsonable(data["new_dynamic_shapes"])
    return item


def report_failures(
    ep: Any, defines: dict[str, dict[str, Any]], live_stack: Callable[[Any], list[dict[str, Any]] | None] | None = None
) -> list[dict[str, Any]]:
    """All failures of a draft-export report, as plain JSON with resolved files.

    `live_stack(data)` gives the whole Python stack recorded when torch logged that failure.
    """
    report = getattr(ep, "_report", None)
    if report is None:
        return []
    paths = intern_paths()
    profiles = op_profiles(report)
    sites: dict[str, list[list[dict[str, Any]]]] | None = None
    out = []
    for failure in report.failures:
        data = failure.data
        kind = getattr(failure.failure_type, "name", str(failure.failure_type))
        item = failure_json(kind, data, paths, xfail=bool(getattr(failure, "xfail", False)), live_stack=live_stack(data) if live_stack is not None else None)
        if "op" in data:
            op = str(data["op"])
            if sites is None:
                sites = graph_call_sites(ep)
            item["call_sites"] = sites.get(op, [])
            item["profiles"] = profiles.get(op, [])
            _attach_sizes(item["profiles"], observed_sizes(ep, op))
            item.update(op_registration(op, defines))
        out.append(item)
    return out


def exception_info(exc: BaseException) -> dict[str, Any]:
    """Type, message and the frames of an exception and of its causes (innermost last)."""
    chain: list[dict[str, Any]] = []
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen and len(chain) < 5:
        seen.add(id(cur))
        frames = []
        for fs in traceback.extract_tb(cur.__traceback__):
            frames.append(
                {
                    "file": fs.filename,
                    "line": fs.lineno,
                    "end_line": getattr(fs, "end_lineno", None),
                    "col": getattr(fs, "colno", None),
                    "end_col": getattr(fs, "end_colno", None),
                    "name": fs.name,
                    "loc": fs.line,
                    **({"where": owner} if (owner := stacks.where(fs.filename)) else {}),
                }
            )
        chain.append({"type": _type_name(cur), "message": _message(cur), "frames": frames})
        cur = cur.__cause__ or cur.__context__
    syntax = None
    if isinstance(exc, SyntaxError):
        syntax = {
            "file": exc.filename,
            "line": exc.lineno,
            "col": exc.offset,
            "end_line": getattr(exc, "end_lineno", None),
            "end_col": getattr(exc, "end_offset", None),
            "msg": exc.msg,
        }
    return {"type": chain[0]["type"], "message": chain[0]["message"], "chain": chain, "syntax": syntax}


def _type_name(exc: BaseException) -> str:
    t = type(exc)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _message(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:
        text = "<unprintable exception>"
    return text if len(text) <= 8000 else text[:8000] + "\n…"


def fingerprint(value: Any) -> list[dict[str, Any]]:
    """Each tensor leaf of a model's output as shape, dtype, a hash of its bytes and its sums, so
    two runs (original and fixed code, in different processes) can be compared without shipping
    tensors. Non-tensor leaves are kept as their repr."""
    import hashlib

    leaves, _ = torch.utils._pytree.tree_flatten(value)
    out: list[dict[str, Any]] = []
    for leaf in leaves:
        if not isinstance(leaf, torch.Tensor):
            out.append({"value": repr(leaf)[:200]})
            continue
        t = leaf.detach().cpu().contiguous().clone()  # a storage holding exactly its elements
        item: dict[str, Any] = {"shape": list(t.shape), "dtype": str(t.dtype), "hash": hashlib.sha1(bytes(t.untyped_storage())).hexdigest()[:16]}
        if not t.is_complex():
            wide = t.double()
            item["sum"], item["abs_sum"] = float(wide.sum()), float(wide.abs().sum())
        out.append(item)
    return out


def torch_version() -> str:
    return str(torch.__version__)
