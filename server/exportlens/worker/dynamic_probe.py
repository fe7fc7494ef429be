"""Which dimensions of a static program torch could keep dynamic, and a spec of named Dims that does it.

A script that exports with example inputs and no `dynamic_shapes` gets a program that accepts only
the example's sizes. After the user's own export passed, the probe exports once more with
`Dim.AUTO` on every tensor dimension of every input the user left static (positional and keyword,
nested dicts, lists, tuples and registered pytrees), and reads the program: a dimension whose
placeholder size is a symbol stays dynamic, two dimensions with one symbol are one dimension, a
size like `2*s77` is derived from another, `range_constraints` gives each symbol's range
(docs/torch-facts.md §10). A size 1 at dimension 0 is always specialised (§9): where the example has
one, the probe exports with that input doubled along dimension 0 (its rows repeated), so it can tell a
batch that is dynamic but for the example. It then exports once more with named `Dim`s in that
shape (refined as torch suggests when its constraint solver knows better, e.g. an even size) and
reports only what that export keeps dynamic: the hint speaks only about a spec plain export accepts.

Calls of the model on other inputs before the export (a warm-up loop, a test batch) are observed
(`Observer`) and given to `torch.export.AdditionalInputs`: the dimensions that varied between them
are an alternative spec, verified the same way, and the program is checked on every observed input.
Imports only torch and the standard library.
"""

from __future__ import annotations

import re
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

import torch

from exportlens.worker import capture, compat, dynamism

MAX_SIGNATURES = 8  # distinct input shapes kept per observed module
MAX_REFINES = 2  # rounds of torch's suggested fixes on the named spec


@dataclass
class Leaf:
    """One tensor among the call's inputs, where the spec names it."""

    tensor: Any
    input: str  # the parameter's (or keyword's) name
    index: int  # its position among the combined arguments
    path: list[str | int]  # from the input to the tensor (".name": an attribute of a registered pytree)
    spec_path: list[str | int]  # the same keys in the spec's structure (a registered pytree's child: its position)


# -- the inputs as the spec sees them -----------------------------------------------------------


def _children(value: Any) -> tuple[str, list[tuple[str | int, Any]]] | None:
    """(container kind, [(key, child)]) of a dict, list, tuple or registered pytree node; None for a leaf.

    The spec of a registered pytree (a dataclass, transformers' caches) is a list of its flattened
    children's specs (torch's `_tree_map_with_path`; measured, docs/torch-facts.md §10)."""
    import torch.utils._pytree as pytree

    if isinstance(value, dict):
        return "dict", list(value.items())
    if type(value) in (list, tuple):
        return type(value).__name__, list(enumerate(value))
    node = pytree.SUPPORTED_NODES.get(type(value))
    if isinstance(value, (torch.Tensor, tuple)) or node is None:  # a namedtuple stays a leaf: its spec is not a plain container
        return None
    with_keys = getattr(node, "flatten_with_keys_fn", None)
    if with_keys is not None:
        pairs, _ = with_keys(value)
        return "list", [(_key_name(k, i), child) for i, (k, child) in enumerate(pairs)]
    children, _ = node.flatten_fn(value)
    return "list", list(enumerate(children))


def _key_name(key: Any, i: int) -> str | int:
    name = getattr(key, "name", None)
    if isinstance(name, str) and name.isidentifier():
        return "." + name
    inner = getattr(key, "key", getattr(key, "idx", None))
    return inner if isinstance(inner, (str, int)) else i


def leaves_of(combined: dict[str, Any]) -> tuple[list[Leaf], dict[str, Any]]:
    """Every tensor of the combined arguments, and the structure of the spec (JSON: a tensor is
    `{"t": leaf index}`, a container `{"dict"|"list"|"tuple": [[key, sub], ...]}`, anything else null)."""
    leaves: list[Leaf] = []
    seen: set[int] = set()

    def walk(index: int, name: str, path: list[str | int], spec_path: list[str | int], value: Any, depth: int) -> Any:
        if isinstance(value, torch.Tensor):
            if id(value) in seen:  # the same tensor twice: one set of dimensions, torch's first occurrence
                return None
            seen.add(id(value))
            leaves.append(Leaf(value, name, index, list(path), list(spec_path)))
            return {"t": len(leaves) - 1}
        kids = _children(value) if depth < 16 else None
        if kids is None:
            return None
        kind, pairs = kids
        subs = []
        for pos, (k, v) in enumerate(pairs):
            k = k if isinstance(k, (str, int)) and not isinstance(k, bool) else str(k)  # JSON keeps str and int keys
            key = pos if isinstance(k, str) and k.startswith(".") else k
            subs.append([key, walk(index, name, [*path, k], [*spec_path, key], v, depth + 1)])
        return {kind: subs}

    structure = {name: walk(i, name, [], [], value, 0) for i, (name, value) in enumerate(combined.items())}
    return leaves, structure


def build_spec(structure: dict[str, Any], dims_of: Any) -> dict[str, Any]:
    """A spec in the inputs' shape: `dims_of(leaf index)` gives a tensor's `{dim: spec}` (or None)."""

    def build(node: Any) -> Any:
        if node is None:
            return None
        if "t" in node:
            return dims_of(node["t"])
        kind, pairs = next(iter(node.items()))
        if kind == "dict":
            return {k: build(sub) for k, sub in pairs}
        items = [build(sub) for _, sub in pairs]
        return tuple(items) if kind == "tuple" else items

    return {name: build(node) for name, node in structure.items()}


def _user_dims(user: Any, combined: dict[str, Any], leaves: list[Leaf]) -> dict[int, dict[int, Any]]:
    """The user's own spec per leaf: {leaf index: {dim: what they wrote}} (requested dims only)."""
    if not user:
        return {}
    names = list(combined)
    if isinstance(user, (list, tuple)):
        user = {names[i]: s for i, s in enumerate(user) if i < len(names)}
    if not isinstance(user, dict):
        return {}
    out: dict[int, dict[int, Any]] = {}
    for i, leaf in enumerate(leaves):
        node = user.get(leaf.input)
        for key in leaf.spec_path:
            if isinstance(node, dict):
                node = node.get(key)
            elif isinstance(node, (list, tuple)) and isinstance(key, int) and key < len(node):
                node = node[key]
            else:
                node = None
        if node is None:
            continue
        dims = dict(node.items()) if isinstance(node, dict) else dict(enumerate(node)) if isinstance(node, (list, tuple)) else {}
        kept = {int(d): s for d, s in dims.items() if dynamism.dim_kind(s) is not None}
        if kept:
            out[i] = kept
    return out


# -- reading a program ----------------------------------------------------------------------------


def _linear(expr: Any) -> tuple[str, int, int] | None:
    """(root symbol, factor, offset) of `factor*root + offset`, None for anything else."""
    try:
        free = list(expr.free_symbols)
        if len(free) != 1:
            return None
        root = free[0]
        poly = expr.as_poly(root)
        if poly is None or poly.degree() != 1:
            return None
        factor, offset = (int(c) for c in poly.all_coeffs())
        return str(root), factor, offset
    except Exception:
        return None


def read_dims(ep: Any, args: Any, kwargs: Any, leaves: list[Leaf]) -> list[list[Any]] | None:
    """Per leaf, per dimension: an int (static), `(root, factor, offset)` or "expr" (another expression)."""
    shapes = dynamism.program_shapes(ep, args, kwargs)
    if shapes is None:
        return None
    out: list[list[Any]] = []
    for leaf in leaves:
        shape = shapes.get(id(leaf.tensor))
        if shape is None:
            return None
        row: list[Any] = []
        for size in shape:
            if dynamism.is_static(size):
                row.append(int(size))
                continue
            lin = _linear(size.node.expr)
            row.append(lin if lin is not None else "expr")
        out.append(row)
    return out


def ranges(ep: Any) -> dict[str, dict[str, int | None]]:
    """Each root symbol's range from `range_constraints` (None: no bound; a min of 2 is every Dim's)."""
    out: dict[str, dict[str, int | None]] = {}
    for sym, vr in dict(getattr(ep, "range_constraints", {}) or {}).items():
        if not getattr(sym, "is_Symbol", False):
            continue
        lo, hi = dynamism._bound(getattr(vr, "lower", None)), dynamism._bound(getattr(vr, "upper", None))
        out[str(sym)] = {"min": lo if lo is not None and lo > 2 else None, "max": hi}
    return out


# -- the probe ----------------------------------------------------------------------------------


@dataclass
class Probe:
    """One target's probe: what it found, as the `dynamic_probe` of its target event."""

    started: float = field(default_factory=time.perf_counter)
    exports: int = 0
    json: dict[str, Any] = field(default_factory=dict)


def wanted(options: dict[str, Any]) -> bool:
    """Whether the call's spec can be completed as text: none, or a dict or tuple of Dims (not an
    AdditionalInputs or ShapesCollection object, whose dimensions live in code)."""
    spec = options.get("dynamic_shapes")
    return spec is None or isinstance(spec, (dict, list, tuple))


def all_dynamic(ep: Any, args: Any, kwargs: Any) -> bool:
    """Whether every tensor dimension of the program's inputs of size 2 or more is already a symbol."""
    shapes = dynamism.program_shapes(ep, args, kwargs)
    if shapes is None:
        return True  # cannot tell which is which: say nothing
    import torch.utils._pytree as pytree

    sizes = {id(t): list(t.shape) for t in pytree.tree_leaves((tuple(args), dict(kwargs or {}))) if isinstance(t, torch.Tensor)}
    for key, shape in shapes.items():
        for d, size in enumerate(shape):
            example = sizes.get(key, [])
            if dynamism.is_static(size) and d < len(example) and example[d] >= 1:
                return False
    return True


def run(export: Any, mod: Any, args: Any, kwargs: Any, options: dict[str, Any], observed: list[tuple[Any, Any]]) -> dict[str, Any]:
    """The probe of one call whose plain export passed (never raises: a failure is its `status`)."""
    probe = Probe()
    try:
        probe.json = _run(probe, export, mod, tuple(args), dict(kwargs or {}), options, observed)
    except Exception as exc:
        probe.json = {"status": "failed", "error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]}
    probe.json["seconds"] = round(time.perf_counter() - probe.started, 4)
    probe.json["exports"] = probe.exports
    return probe.json


def _run(
    probe: Probe, export: Any, mod: Any, args: tuple[Any, ...], kwargs: dict[str, Any], options: dict[str, Any], observed: list[tuple[Any, Any]]
) -> dict[str, Any]:
    from torch.export import Dim
    from torch.export.dynamic_shapes import _combine_args

    combined = _combine_args(mod, args, kwargs)
    leaves, structure = leaves_of(combined)
    if not leaves:
        return {"status": "skipped", "why": "no tensor inputs"}
    user = _user_dims(options.get("dynamic_shapes"), combined, leaves)
    rest = {k: v for k, v in options.items() if k != "dynamic_shapes"}

    def export_with(spec_of: Any, a: tuple[Any, ...], k: dict[str, Any]) -> Any:
        probe.exports += 1
        spec = build_spec(structure, spec_of)
        return export(mod, a, k, dynamic_shapes=spec, **rest)

    def auto_of(i: int) -> dict[int, Any]:
        return {d: user.get(i, {}).get(d, Dim.AUTO) for d in range(leaves[i].tensor.dim())}

    bumped = _bumped(leaves, user)
    used_args, used_kwargs, used_leaves = args, kwargs, leaves
    ep = None
    if bumped is not None:
        b_args, b_kwargs, b_leaves = _rebuild(args, kwargs, leaves, bumped, combined, mod)
        try:
            ep = export_with(auto_of, b_args, b_kwargs)
            used_args, used_kwargs, used_leaves = b_args, b_kwargs, b_leaves
        except Exception:
            ep = None
    if ep is None:
        bumped = None
        ep = export_with(auto_of, args, kwargs)
    found = read_dims(ep, used_args, used_kwargs, used_leaves)
    if found is None:
        return {"status": "skipped", "why": "the program's inputs could not be matched to the call's"}
    out: dict[str, Any] = {
        "status": "ok",
        "inputs": list(combined),
        "structure": structure,
        "leaves": [{"input": x.input, "index": x.index, "path": list(x.path), "shape": [int(s) for s in x.tensor.shape]} for x in leaves],
        "auto": [[s if isinstance(s, (int, str)) else list(s) for s in row] for row in found],
        "ranges": ranges(ep),
        "zero_one": sorted(bumped or []),
        "requested": [[i, d] for i, dims in sorted(user.items()) for d in sorted(dims)],
    }
    guards = compat.input_guards(ep)
    tied = constrained(guards, used_leaves) if guards is not None else None
    # the Dim.AUTO program's input guards say no more than ranges, shared and derived dims: named Dims
    # in its shape export the same (docs/torch-facts.md §10), so no second export is needed to say so
    settled = tied == set() and not any(s == "expr" for row in found for s in row)
    out["checked"] = "auto" if settled else "named"
    if settled:
        out["named"] = _from_auto(found, lambda i, d: d not in user.get(i, {}), out["ranges"])
    else:
        out["named"] = _named(probe, export_with, found, user, used_args, used_kwargs, used_leaves, out["ranges"])
    if observed:
        out["observed"] = _observed(probe, export_with, mod, args, kwargs, leaves, found, user, observed, out["ranges"])
    return out


def _from_auto(found: list[list[Any]], keep: Any, symbol_ranges: dict[str, dict[str, int | None]]) -> dict[str, Any]:
    """The named spec read off the Dim.AUTO program itself: one root per symbol, its range."""
    dims: list[dict[str, Any]] = []
    roots: dict[str, Any] = {}
    for i, row in enumerate(found):
        for d, s in enumerate(row):
            if isinstance(s, int) or s == "expr" or not keep(i, d):
                continue
            root, factor, offset = s
            roots.setdefault(root, dict(symbol_ranges.get(root) or {"min": None, "max": None}))
            dims.append({"leaf": i, "dim": d, "dynamic": True, "root": root, "factor": factor, "offset": offset})
    return {"status": "ok" if dims else "none", "refined": 0, "dims": dims, "roots": roots}


def _bumped(leaves: list[Leaf], user: dict[int, dict[int, Any]]) -> list[int] | None:
    """The leaves whose example has size 1 at dimension 0 (not asked for by the user): a batch of one."""
    found = [i for i, x in enumerate(leaves) if x.tensor.dim() >= 1 and x.tensor.shape[0] == 1 and 0 not in user.get(i, {})]
    return found or None


def _rebuild(args: Any, kwargs: Any, leaves: list[Leaf], bumped: list[int], combined: dict[str, Any], mod: Any) -> tuple[Any, Any, list[Leaf]]:
    """The inputs with each bumped leaf's rows repeated (size 2 at dimension 0, same values)."""
    import torch.utils._pytree as pytree

    doubled = {id(leaves[i].tensor): torch.cat([leaves[i].tensor, leaves[i].tensor], 0) for i in bumped}
    new_args, new_kwargs = pytree.tree_map(lambda t: doubled.get(id(t), t) if isinstance(t, torch.Tensor) else t, (tuple(args), dict(kwargs)))
    new_leaves = [Leaf(doubled.get(id(x.tensor), x.tensor), x.input, x.index, x.path, x.spec_path) for x in leaves]
    return new_args, new_kwargs, new_leaves


def _plan(found: list[list[Any]], keep: Any) -> dict[str, Any]:
    """Roots and per-dimension entries for the dimensions `keep(leaf, dim)` selects, in symbols."""
    dims: list[list[Any]] = []
    for i, row in enumerate(found):
        for d, s in enumerate(row):
            if isinstance(s, int) or not keep(i, d):
                continue
            dims.append([i, d, s if isinstance(s, str) else list(s)])
    return {"dims": dims}


def _named(
    probe: Probe,
    export_with: Any,
    found: list[list[Any]],
    user: dict[int, dict[int, Any]],
    args: Any,
    kwargs: Any,
    leaves: list[Leaf],
    symbol_ranges: dict[str, dict[str, int | None]],
    keep: Any = None,
    after: Any = None,
) -> dict[str, Any]:
    """Plain export with named Dims where the probe found symbols (the user's own where they wrote
    them), refined as torch suggests; what the final program keeps dynamic, in symbols."""
    from torch.export import Dim

    chosen = keep or (lambda i, d: d not in user.get(i, {}))
    plan = _plan(found, chosen)
    if not plan["dims"]:
        return {"status": "none"}
    roots: dict[str, Any] = {}
    entries: dict[tuple[int, int], Any] = {}
    for i, d, s in plan["dims"]:
        if s == "expr":
            entries[(i, d)] = Dim.AUTO
            continue
        root, factor, offset = s
        if root not in roots:
            r = symbol_ranges.get(root, {})
            roots[root] = Dim(root, **{k: v for k, v in r.items() if v is not None})
        entries[(i, d)] = roots[root] * factor + offset if (factor, offset) != (1, 0) else roots[root]

    def named_of(i: int) -> dict[int, Any] | None:
        row = {d: s for (j, d), s in entries.items() if j == i}
        row.update(user.get(i, {}))
        return row or None

    spec_of = named_of
    refined = 0
    while True:
        try:
            ep = export_with(spec_of, args, kwargs)
            break
        except Exception as exc:
            suggested = _suggested(exc)
            if not suggested or refined >= MAX_REFINES:
                return {"status": "failed", "error": capture.exception_info(exc)["message"].splitlines()[0][:300] if str(exc) else type(exc).__name__}
            refined += 1
            from torch.export.dynamic_shapes import refine_dynamic_shapes_from_suggested_fixes

            flat = {i: spec_of(i) for i in range(len(leaves))}
            new = refine_dynamic_shapes_from_suggested_fixes("Suggested fixes:\n" + "\n".join(suggested), [flat[i] for i in range(len(leaves))])
            spec_of = _from_list(list(new))
    if after is not None:
        try:
            after(ep)
        except Exception as exc:  # the program rejects an input the script ran the model on
            return {"status": "failed", "error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]}
    final = read_dims(ep, args, kwargs, leaves)
    tied = constrained(compat.input_guards(ep) or [], leaves)
    spec = {i: spec_of(i) for i in range(len(leaves))}
    out: dict[str, Any] = {"status": "ok", "refined": refined, "dims": [], "roots": {}}
    for i, row in spec.items():
        for d, s in (row or {}).items():
            if d in user.get(i, {}) or final is None:
                continue
            kept = not isinstance(final[i][d], int) and (i, int(d)) not in tied
            out["dims"].append(_dim_json(i, int(d), s, kept, out["roots"]))
    out["dims"] = [x for x in out["dims"] if x is not None]
    return out


_SOURCE = re.compile(r"L(?:\[[^\]]+\]|\.\w+)*\.size\(\)\[\d+\]")
_SIDE = r"\(?(?:\d+\*)?S(?: [+-] \d+)?\)?"
_SHARED = re.compile(rf"^{_SIDE} == {_SIDE}$")


def source(leaf: Leaf, dim: int) -> str:
    """Torch's name of a leaf's dimension (`L['batch']['extra'][0].size()[1]`)."""
    return "L" + "".join(k if isinstance(k, str) and k.startswith(".") else f"[{k!r}]" for k in [leaf.input, *leaf.path]) + f".size()[{dim}]"


def constrained(guards: list[str], leaves: list[Leaf]) -> set[tuple[int, int]]:
    """The dimensions an input guard of the program ties to more than a range: `x.size()[0] *
    x.size()[1] == 12` (a reshape to a constant) exports with both dims "dynamic", but only their
    product may change (docs/torch-facts.md §10). Two dims equal (one Dim shared), or one a multiple
    of another, are what the spec already says."""
    names = {source(leaf, d): (i, d) for i, leaf in enumerate(leaves) for d in range(leaf.tensor.dim())}
    out: set[tuple[int, int]] = set()
    for guard in guards:
        found = _SOURCE.findall(guard)
        if not found or _SHARED.match(_SOURCE.sub("S", guard.strip())):
            continue
        out |= {names[f] for f in found if f in names}
    return out


def _from_list(specs: list[Any]) -> Any:
    def of(i: int) -> Any:
        s = specs[i] if i < len(specs) else None
        return dict(s) if isinstance(s, dict) else dict(enumerate(s)) if isinstance(s, (list, tuple)) else None

    return of


def _dim_json(leaf: int, dim: int, spec: Any, kept: bool, roots: dict[str, Any]) -> dict[str, Any] | None:
    """One dimension of the final named spec: its root Dim (name and range), factor and offset."""
    if isinstance(spec, int) or spec is None:
        return None  # torch's suggestion made it static
    kind = dynamism.dim_kind(spec)
    if kind is None:
        return None
    out: dict[str, Any] = {"leaf": leaf, "dim": dim, "dynamic": kept}
    if kind[0] in ("auto", "dynamic"):
        out["auto"] = True
        return out
    root = getattr(spec, "root", None) or spec
    name = str(getattr(root, "__name__", root))
    roots.setdefault(name, {"min": _min(root), "max": dynamism._bound(getattr(root, "max", None))})
    out["root"] = name
    if kind[0] == "derived":
        try:
            a, b = int(spec.fn(0)), int(spec.fn(1))
        except Exception:
            return None
        out["factor"], out["offset"] = b - a, a
    else:
        out["factor"], out["offset"] = 1, 0
    return out


def _min(dim: Any) -> int | None:
    lo = dynamism._bound(getattr(dim, "min", None))
    return lo if lo is not None and lo > 2 else None


def _suggested(exc: BaseException) -> list[str]:
    from exportlens.worker import plain

    return plain.suggested_fixes(str(exc)) if "Suggested fixes:" in str(exc) else []


def _observed(
    probe: Probe,
    export_with: Any,
    mod: Any,
    args: Any,
    kwargs: Any,
    leaves: list[Leaf],
    found: list[list[Any]],
    user: dict[int, dict[int, Any]],
    observed: list[tuple[Any, Any]],
    symbol_ranges: dict[str, dict[str, int | None]],
) -> dict[str, Any]:
    """The dimensions that varied between the observed calls (torch.export.AdditionalInputs), as
    named Dims, verified by plain export and by running the program on every observed input."""
    additional = compat.additional_inputs(torch.export)
    if additional is None:
        return {"status": "unsupported", "calls": len(observed)}
    inputs = additional()
    for a, k in observed:
        inputs.add(tuple(a), dict(k) if k else None)
    try:
        spec = inputs.dynamic_shapes(mod, tuple(args), dict(kwargs))
    except Exception as exc:  # differing structures or values: AdditionalInputs cannot merge them
        return {"status": "failed", "calls": len(observed), "error": f"{type(exc).__name__}: {exc}"[:300]}
    varied: set[tuple[int, int]] = set()
    for i, leaf in enumerate(leaves):
        node = _spec_at(spec, leaf)
        for d, s in enumerate(node or ()):
            if s is not None:
                varied.add((i, d))
    if not varied:
        return {"status": "none", "calls": len(observed)}
    # a dimension that varied but is shared with one that did not is not free: the probe's symbols say which go together
    # a subset of the probe's dims: plain export says whether the rest can stay static, and the program
    # must run on every observed input (AdditionalInputs.verify)
    named = _named(
        probe,
        export_with,
        found,
        user,
        args,
        kwargs,
        leaves,
        symbol_ranges,
        keep=lambda i, d: (i, d) in varied and d not in user.get(i, {}),
        after=inputs.verify,
    )
    named["calls"] = len(observed)
    named["varied"] = sorted([i, d] for i, d in varied)
    return named


def _spec_at(spec: Any, leaf: Leaf) -> Any:
    """AdditionalInputs' entry (a tuple of Dim.DYNAMIC/None) for one leaf: its spec keeps the inputs'
    own containers (a registered pytree stays one), so it is walked by the inputs' keys."""
    node = spec.get(leaf.input) if isinstance(spec, dict) else spec[leaf.index]
    for key in leaf.path:
        if isinstance(key, str) and key.startswith("."):
            node = getattr(node, key[1:], None)
        elif isinstance(node, dict):
            node = node.get(key)
        elif isinstance(node, (list, tuple)) and isinstance(key, int) and key < len(node):
            node = node[key]
        else:
            return None
    return node if isinstance(node, (list, tuple)) else None


# -- observing the model's calls before the export ----------------------------------------------


class Observer:
    """Calls of top-level modules (not a module inside another's forward, not during an export),
    one per distinct input shapes, a few per module: what the script ran its model on."""

    def __init__(self, busy: Any) -> None:
        self.busy = busy  # True while ExportLens itself runs the model (an export, the eager fingerprint)
        self.depth = 0
        self.calls: dict[int, tuple[Any, list[tuple[Any, Any, Any]]]] = {}
        self._original: Any = None

    def install(self) -> None:
        cls = torch.nn.Module
        original = self._original = cls.__call__
        watch = self

        def call(module: Any, *args: Any, **kwargs: Any) -> Any:
            if watch.depth or watch.busy():
                return original(module, *args, **kwargs)
            watch.depth += 1
            try:
                try:
                    watch.note(module, args, kwargs)
                except Exception:
                    pass
                return original(module, *args, **kwargs)
            finally:
                watch.depth -= 1

        cls.__call__ = call  # type: ignore[method-assign]

    def note(self, module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        sig = _signature((args, kwargs))
        ref, seen = self.calls.get(id(module), (None, []))
        if ref is None or ref() is not module:
            ref, seen = weakref.ref(module), []
            self.calls[id(module)] = (ref, seen)
        if len(seen) < MAX_SIGNATURES and all(s != sig for s, _, _ in seen):
            seen.append((sig, args, kwargs))

    def of(self, module: Any, args: Any, kwargs: Any) -> list[tuple[Any, Any]]:
        """The module's observed inputs whose shapes differ from the export's example."""
        ref, seen = self.calls.get(id(module), (None, []))
        if ref is None or ref() is not module:
            return []
        sig = _signature((tuple(args), dict(kwargs or {})))
        return [(a, k) for s, a, k in seen if s != sig]


def _signature(tree: Any) -> Any:
    import torch.utils._pytree as pytree

    flat, spec = pytree.tree_flatten(tree)
    return str(spec), tuple(tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__ for x in flat)
