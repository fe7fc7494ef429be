"""Which input dimensions the user asked to be dynamic, and which of them the exported program kept.

`dynamic_shapes` asks for dynamism per input dimension (a named `Dim`, a derived one, `Dim.AUTO`,
`Dim.DYNAMIC`); export can still fix a dimension to its example size. With `Dim.AUTO` it does so
silently: the program comes out static wherever the code (or a library) forces it, and a size of 0
or 1 in the example is always specialised (docs/torch-facts.md §9). This module names each
requested dimension the way the user would write it (`x.shape[1]`, `extra['a'].shape[0]`),
compares the request with the program's input placeholders, and says where a lost dimension
became static, from what `shapes.ShapeWatch` saw. Imports only torch and the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from exportlens.worker import shapes

REQUESTED_KINDS = ("named", "derived", "auto", "dynamic")


@dataclass
class Requested:
    """One input dimension the user asked to be dynamic."""

    leaf: Any  # the example tensor (identity only: matched against the program's inputs)
    input: str  # "x", "mask", "extra['a']", as the dynamic_shapes spec names the input
    index: int  # the input's position in the call (a tuple spec is positional)
    path: list[str | int]  # keys from the input to the tensor (a tensor inside a dict or list)
    dim: int
    kind: str  # named | derived | auto | dynamic
    name: str | None  # the Dim's name (a derived Dim: its own, e.g. "2*_n"), None for AUTO/DYNAMIC
    root: str | None  # a derived Dim's root Dim
    min: int | None
    max: int | None
    size: int  # the example's size
    flat: int | None = None  # the tensor's position among the call's flattened inputs (strict export names it so)

    @property
    def source(self) -> str:
        """Torch's name of the dimension (`L['x'].size()[1]`)."""
        return "L" + "".join(f"[{k!r}]" for k in [self.input, *self.path]) + f".size()[{self.dim}]"

    @property
    def sources(self) -> list[str]:
        """Every name torch may give the dimension: non-strict export names the input, strict export
        (dynamo) its place among the flattened inputs (`L['flat_args'][0].size()[1]`, 2.13)."""
        flat = [f"L['flat_args'][{self.flat}].size()[{self.dim}]"] if self.flat is not None else []
        return [self.source, *flat]

    @property
    def spelled(self) -> str:
        """The user's spelling (`x.shape[1]`)."""
        return self.input + "".join(f"[{k!r}]" for k in self.path) + f".shape[{self.dim}]"

    def to_json(self) -> dict[str, Any]:
        return {
            "input": self.input,
            "index": self.index,
            "path": list(self.path),
            "dim": self.dim,
            "kind": self.kind,
            "name": self.name,
            "root": self.root,
            "min": self.min,
            "max": self.max,
            "size": self.size,
            "spelled": self.spelled,
        }


def _bound(value: Any) -> int | None:
    try:
        number = int(value)
    except Exception:  # None, int_oo, sympy's infinities
        return None
    return number if abs(number) < 2**62 else None  # int_oo and friends: no bound


def dim_kind(spec: Any) -> tuple[str, str | None, str | None] | None:
    """(kind, name, root) of one dimension's spec, None when it asks for a static size."""
    if spec is None or isinstance(spec, int):
        return None
    hint = getattr(spec, "type", None)
    if type(spec).__name__ == "_DimHint" or hint is not None and type(hint).__name__ == "_DimHintType":
        kind = str(getattr(hint, "name", hint)).lower()
        return (kind, None, None) if kind in ("auto", "dynamic") else None
    if type(spec).__name__ in ("_DimHintType",) or type(spec).__name__ == "_DimHint":  # older enum-style hints
        kind = str(getattr(spec, "name", spec)).lower()
        return (kind, None, None) if kind in ("auto", "dynamic") else None
    name = getattr(spec, "__name__", None)
    if name is None:
        return None
    root = getattr(spec, "root", None)
    if root is not None:
        return ("derived", str(name), str(getattr(root, "__name__", root)))
    return ("named", str(name), None)


def _dims_of(spec: Any, rank: int) -> list[tuple[int, Any]]:
    if isinstance(spec, dict):
        return [(int(d), s) for d, s in spec.items() if isinstance(d, int) or str(d).isdigit()]
    if isinstance(spec, (list, tuple)):
        return list(enumerate(spec))[:rank]
    return []


def requested(mod: Any, args: Any, kwargs: Any, dynamic_shapes: Any) -> list[Requested]:
    """Every dimension the call asks to be dynamic, in the order of the inputs (empty when the spec
    cannot be read: export itself says what is wrong with it)."""
    if not dynamic_shapes:
        return []
    try:
        from torch.export.dynamic_shapes import _combine_args

        combined = _combine_args(mod, tuple(args), dict(kwargs or {}))
        if hasattr(dynamic_shapes, "dynamic_shapes") and callable(dynamic_shapes.dynamic_shapes):  # ShapesCollection
            dynamic_shapes = dynamic_shapes.dynamic_shapes(mod, tuple(args), dict(kwargs or {}))
        names = list(combined)
        if isinstance(dynamic_shapes, dict):
            pairs = [(names.index(k), k, combined[k], s) for k, s in dynamic_shapes.items() if k in combined]
        elif isinstance(dynamic_shapes, (list, tuple)):
            pairs = [(i, names[i], combined[names[i]], s) for i, s in enumerate(dynamic_shapes) if i < len(names)]
        else:
            return []
    except Exception:
        return []
    out: list[Requested] = []
    try:
        for index, name, value, spec in pairs:
            _walk(out, index, name, [], value, spec)
        import torch.utils._pytree as pytree

        leaves = [id(leaf) for leaf in pytree.tree_leaves((tuple(args), dict(kwargs or {})))]
        for r in out:
            r.flat = leaves.index(id(r.leaf)) if id(r.leaf) in leaves else None
    except Exception:  # a spec torch itself will reject: export says what is wrong with it
        return []
    return out


def _walk(out: list[Requested], index: int, name: str, path: list[str | int], value: Any, spec: Any) -> None:
    if spec is None:
        return
    if isinstance(value, torch.Tensor):
        for dim, s in _dims_of(spec, value.dim()):
            kind = dim_kind(s)
            if kind is None or not 0 <= dim < value.dim():
                continue
            lo, hi = _bound(getattr(s, "min", None)), _bound(getattr(s, "max", None))
            out.append(Requested(value, name, index, list(path), dim, kind[0], kind[1], kind[2], lo, hi, int(value.shape[dim])))
        return
    if isinstance(value, dict) and isinstance(spec, dict):
        for k, v in value.items():
            if k in spec:
                _walk(out, index, name, [*path, k], v, spec[k])
    elif isinstance(value, (list, tuple)) and isinstance(spec, (list, tuple)):
        for i, (v, s) in enumerate(zip(value, spec, strict=False)):
            _walk(out, index, name, [*path, i], v, s)


def program_shapes(ep: Any, args: Any, kwargs: Any) -> dict[int, list[Any]] | None:
    """id(example tensor) → the shape of its input in the exported program (ints where static);
    None when the program's inputs cannot be matched to the call's."""
    try:
        import torch.utils._pytree as pytree
        from torch.export._tree_utils import reorder_kwargs
        from torch.export.graph_signature import InputKind

        flat = pytree.tree_leaves((tuple(args), reorder_kwargs(dict(kwargs or {}), ep.call_spec.in_spec)))
        specs = [s for s in ep.graph_signature.input_specs if s.kind == InputKind.USER_INPUT]
        if len(flat) != len(specs):
            return None
        nodes = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
        out: dict[int, list[Any]] = {}
        for leaf, spec in zip(flat, specs, strict=True):
            node = nodes.get(getattr(spec.arg, "name", ""))
            val = node.meta.get("val") if node is not None else None
            if isinstance(leaf, torch.Tensor) and val is not None and hasattr(val, "shape"):
                out[id(leaf)] = list(val.shape)
        return out
    except Exception:
        return None


def is_static(size: Any) -> bool:
    if isinstance(size, int):
        return True
    try:
        return bool(size.node.expr.is_number)
    except Exception:
        return False


def lost(asked: list[Requested], ep: Any, args: Any, kwargs: Any) -> tuple[list[Requested], list[str]] | None:
    """(the requested dimensions the program has static, the spellings of those it kept dynamic);
    None when the program's inputs cannot be matched to the call's."""
    shapes_of = program_shapes(ep, args, kwargs)
    if shapes_of is None:
        return None
    gone: list[Requested] = []
    kept: list[str] = []
    for r in asked:
        shape = shapes_of.get(id(r.leaf))
        if shape is None or r.dim >= len(shape):
            continue
        if is_static(shape[r.dim]):
            gone.append(r)
        else:
            kept.append(r.spelled)
    return gone, kept


def why_static(r: Requested, watch: shapes.ShapeWatch) -> dict[str, Any]:
    """Why a requested dimension is static, and where: the example's size 0/1, the guard that pinned
    its symbol to a constant (with the stack of that moment), or unknown."""
    symbol = watch.symbol_of(r)
    if r.size in (0, 1) and (symbol is None or symbol in ("0", "1")):
        return {"reason": "zero-one", "value": r.size}
    if symbol is None:
        return {"reason": "unknown", "value": r.size}
    pin = watch.pins.get(symbol)
    guards = watch.guards_on(symbol)
    if pin is None and not guards:
        return {"reason": "unknown", "value": r.size, "symbol": symbol}
    guard = _pinning_guard(guards, pin)
    stack = pin.stack if pin is not None else guard.stack if guard is not None else []
    value = pin.value if pin is not None else r.size
    out: dict[str, Any] = {"reason": "guard", "value": int(value) if _bound(value) is not None else r.size, "symbol": symbol, "stack": watch.stack_json(stack)}
    if guard is not None:
        out["guard"] = str(guard.expr)
    return out


def _pinning_guard(guards: list[shapes.Guard], pin: shapes.Pin | None) -> shapes.Guard | None:
    """The guard recorded where the pin happened (same innermost frame), else the last one before it."""
    if not guards:
        return None
    if pin is not None and pin.stack:
        for g in guards:
            if g.stack and _same_place(g.stack[-1], pin.stack[-1]):
                return g
    return guards[0]


def _same_place(a: Any, b: Any) -> bool:
    if isinstance(a, shapes.Frozen) and isinstance(b, shapes.Frozen):
        return a.f_code is b.f_code and a.f_lineno == b.f_lineno
    return (getattr(a, "filename", None), getattr(a, "lineno", None)) == (getattr(b, "filename", None), getattr(b, "lineno", None))


def symbol_names(watch: shapes.ShapeWatch, asked: list[Requested]) -> dict[str, str]:
    """Symbol → the user's spelling, for every input dimension torch made a symbol of (a requested
    one by its input's name, whatever torch called it)."""
    out: dict[str, str] = {s: r.spelled for r in asked if (s := watch.symbol_of(r)) is not None and s[0].isalpha()}
    for source, symbol in watch.sources.items():
        if symbol and symbol[0].isalpha():
            out.setdefault(symbol, _spelled(source))
    return out


def _spelled(source: str) -> str:
    """`L['x'].size()[1]` → `x.shape[1]`; `L['extra']['a'].size()[0]` → `extra['a'].shape[0]`."""
    import re

    text = source
    m = re.match(r"L\['([A-Za-z_]\w*)'\]", text)
    if m:
        text = m.group(1) + text[m.end() :]
    text = re.sub(r"\.size\(\)\[(\d+)\]", r".shape[\1]", text)
    return re.sub(r"\.stride\(\)\[(\d+)\]", r".stride(\1)", text)
