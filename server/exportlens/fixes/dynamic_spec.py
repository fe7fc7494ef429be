"""`dynamic_shapes` written for the user: named Dims from the probe, declared above the call, in the inputs' shape.

The worker's probe (`worker/dynamic_probe.py`) says, in torch's symbols, which input dimensions a
program exported with `Dim.AUTO` keeps dynamic, which share one symbol, which are derived
(`2*s77`), and their ranges (docs/torch-facts.md §10). This module names them as a user would
(`batch` for the dimension every input has first, `seq` for a token sequence, `height`/`width` of an
image, else the input and the position: `pairs_dim1`) and writes the fix: the `Dim` import once,
one `name = Dim("name", max=…)` per root above the call, `dynamic_shapes=` added to the call (or
completed, keeping what the user wrote), args by parameter name and kwargs by key, nested dicts,
lists and registered pytrees (a list of their children) as the inputs are. A batch of 1 in the
example is always specialised: the fix gives the example 2 there. Pure: text in, fix out.
"""

from __future__ import annotations

import ast
import json
import keyword
import re
from typing import Any

from exportlens.model import Diagnostic, Fix
from exportlens.protocol import DynamicProbe, NamedProbe, ProbeLeaf, ProbeRange, SpecChoice, SpecDim, SpecRoot
from exportlens.source import Reader

from .common import Offer, Refusal, bound_names, fresh_name, import_torch_insertion, make_fix, parse_or_refuse, torch_binding
from .spec_source import _assigned, dim_prefix, export_call, spec_entry, statement_of
from .spec_source import example_size as example_site
from .text import indent_of, newline_of, node_span, replace_spans, split_lines

# inputs whose dimension 1 is a token sequence (transformers' names, and the usual short ones)
SEQUENCE_INPUTS = {
    "input_ids",
    "attention_mask",
    "token_type_ids",
    "position_ids",
    "labels",
    "decoder_input_ids",
    "decoder_attention_mask",
    "inputs_embeds",
    "tokens",
    "ids",
    "mask",
    "token_ids",
}
CANDIDATES = {"batch": ("batch", "batch_size", "batch_dim"), "seq": ("seq", "seq_len", "seq_length")}
ZERO_ONE = "export specialises sizes 0 and 1"  # why an example's 1 keeps a dimension static (docs/torch-facts.md §9), the hint's and the fix's words


def spelled(leaf: ProbeLeaf, dim: int) -> str:
    """`x.shape[1]`, `batch['extra'][0].shape[1]`, `cache.k.shape[0]` (as `worker/dynamism.py` spells them)."""
    keys = "".join(k if isinstance(k, str) and k.startswith(".") else f"[{k!r}]" for k in leaf["path"])
    return f"{leaf['input']}{keys}.shape[{dim}]"


def _base(leaf: ProbeLeaf) -> str:
    """A name for a leaf: its input, or the keys from the last named one on (`extra_0`)."""
    path = leaf["path"]
    last = max((i for i, k in enumerate(path) if isinstance(k, str)), default=-1)
    parts = [str(k).lstrip(".") for k in path[last:]] if last >= 0 else [leaf["input"], *(str(k) for k in path)]
    text = re.sub(r"\W+", "_", "_".join(parts)).strip("_") or "x"
    return text if not text[0].isdigit() else f"x_{text}"


def choose(probe: DynamicProbe, named: NamedProbe, kind: str) -> SpecChoice | None:
    """The probe's named spec in the user's names: each root named once, the dimensions it covers."""
    leaves = probe.get("leaves") or []
    dims = [d for d in named.get("dims") or [] if d.get("dynamic") and d["leaf"] < len(leaves)]
    if named.get("status") != "ok" or not dims:
        return None
    zero_one = set(probe.get("zero_one") or [])
    rooted: dict[str, list[Any]] = {}
    for d in dims:
        if not d.get("auto") and d.get("root"):
            rooted.setdefault(str(d["root"]), []).append(d)
    names: dict[str, str] = {}
    taken: set[str] = set()
    tensors = [i for i, leaf in enumerate(leaves) if leaf["shape"]]
    for root, uses in rooted.items():
        bare = [(u["leaf"], u["dim"]) for u in uses if (u.get("factor", 1), u.get("offset", 0)) == (1, 0)]
        every = [(u["leaf"], u["dim"]) for u in uses]
        names[root] = fresh_name(taken, _name_for(root, bare or every, leaves, tensors, bool(bare), every))
    out_dims: list[SpecDim] = []
    for d in dims:
        leaf = leaves[d["leaf"]]
        root = "" if d.get("auto") else names.get(str(d.get("root")), "")
        size = leaf["shape"][d["dim"]] if d["dim"] < len(leaf["shape"]) else 0
        out_dims.append(
            {
                "leaf": d["leaf"],
                "dim": d["dim"],
                "spelled": spelled(leaf, d["dim"]),
                "size": size,
                "root": root,
                "factor": int(d.get("factor", 1)),
                "offset": int(d.get("offset", 0)),
                "zero_one": d["leaf"] in zero_one and d["dim"] == 0,
            }
        )
    ranges: dict[str, ProbeRange] = dict(named.get("roots") or {})
    empty: ProbeRange = {"min": None, "max": None}
    roots: list[SpecRoot] = [{"name": names[r], "min": ranges.get(r, empty)["min"], "max": ranges.get(r, empty)["max"]} for r in rooted]
    choice: SpecChoice = {"kind": "observed" if kind == "observed" else "auto", "dims": out_dims, "roots": roots}
    if kind == "observed":
        choice["calls"] = int(named.get("calls") or 0)
    return choice


def _name_for(root: str, uses: list[tuple[int, int]], leaves: list[ProbeLeaf], tensors: list[int], bare: bool, every: list[tuple[int, int]]) -> str:
    """What a user would call the dimension: `batch` (every input's first, itself or derived), `seq`,
    `height`/`width`, else `<input>_dim<N>`."""
    where = {leaf for leaf, _ in uses}
    name: str
    if all(d == 0 for _, d in every) and set(tensors) <= {leaf for leaf, _ in every} and all(len(leaves[i]["shape"]) >= 2 for i, _ in every):
        name = "batch"
    elif all(d == 1 for _, d in uses) and any(_base(leaves[i]) in SEQUENCE_INPUTS or leaves[i]["input"] in SEQUENCE_INPUTS for i in where):
        name = "seq"
    elif len(where) == 1 and len(leaves[uses[0][0]]["shape"]) == 4 and uses[0][1] in (2, 3):
        image = leaves[uses[0][0]]
        several = sum(1 for x in leaves if len(x["shape"]) == 4) > 1
        name = ("height" if uses[0][1] == 2 else "width") if not several else f"{_base(image)}_{'height' if uses[0][1] == 2 else 'width'}"
    else:
        leaf, dim = uses[0]
        name = f"{_base(leaves[leaf])}_dim{dim}"
    return name if bare else f"_{name}"


def resolve_names(choice: SpecChoice, used: set[str]) -> dict[str, str]:
    """Each root's variable in this file: its name, else the next candidate not bound there (`batch`
    is often the example's own variable)."""
    out: dict[str, str] = {}
    for root in choice["roots"]:
        name = root["name"]
        tries = CANDIDATES.get(name, (name,))
        pick = next((c for c in tries if c not in used and not keyword.iskeyword(c)), None)
        out[name] = fresh_name(used, name) if pick is None else fresh_name(used, pick)
    return out


def _declaration(prefix: str, name: str, root: SpecRoot) -> str:
    bounds = "".join(f", {k}={v}" for k, v in (("min", root["min"]), ("max", root["max"])) if v is not None)
    return f'{name} = {prefix}("{name}"{bounds})'


def _expr(d: SpecDim, names: dict[str, str], prefix: str) -> str:
    if not d["root"]:
        return f"{prefix}.AUTO"
    root = names.get(d["root"], d["root"])
    text = f"{d['factor']} * {root}" if d["factor"] != 1 else root
    if d["offset"]:
        text += f" {'+' if d['offset'] > 0 else '-'} {abs(d['offset'])}"
    return text


def _key(k: Any) -> str:
    return json.dumps(k, ensure_ascii=False) if isinstance(k, str) else repr(k)


def spec_text(data: dict[str, Any], choice: SpecChoice, names: dict[str, str], prefix: str, kept: dict[tuple[int, int], str]) -> str:
    """The whole `dynamic_shapes` literal: `{"input_ids": {0: batch, 1: seq}, ...}` (None where all is static)."""
    entries: dict[int, dict[int, str]] = {}
    for (leaf, dim), text in kept.items():
        entries.setdefault(leaf, {})[dim] = text
    for d in choice["dims"]:
        entries.setdefault(d["leaf"], {})[d["dim"]] = _expr(d, names, prefix)

    def build(node: Any) -> str:
        if node is None:
            return "None"
        if "t" in node:
            row = entries.get(int(node["t"]))
            return "{" + ", ".join(f"{d}: {row[d]}" for d in sorted(row)) + "}" if row else "None"
        kind, pairs = next(iter(node.items()))
        if kind == "dict":
            return "{" + ", ".join(f"{_key(k)}: {build(sub)}" for k, sub in pairs) + "}"
        items = [build(sub) for _, sub in pairs]
        if kind == "tuple":
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        return "[" + ", ".join(items) + "]"

    structure = data["structure"]
    return "{" + ", ".join(f"{_key(name)}: {build(structure.get(name))}" for name in data["inputs"]) + "}"


def summary(choice: SpecChoice) -> str:
    """`batch` (`x.shape[0]`, `y.shape[0]`), `2 * batch` (`pairs.shape[0]`), ... for messages and titles."""
    parts: list[str] = []
    for root in choice["roots"]:
        bare = [d["spelled"] for d in choice["dims"] if d["root"] == root["name"] and (d["factor"], d["offset"]) == (1, 0)]
        derived = [d for d in choice["dims"] if d["root"] == root["name"] and (d["factor"], d["offset"]) != (1, 0)]
        text = f"`{root['name']}`" + (f" ({', '.join(f'`{s}`' for s in bare)})" if bare else "")
        if root["max"] is not None or root["min"] is not None:
            text += f" over {root['min'] or 2}..{root['max'] if root['max'] is not None else '∞'}"
        for d in derived:
            text += f", `{d['spelled']}` = `{_expr(d, {}, 'Dim')}`"
        parts.append(text)
    parts += [f"`{d['spelled']}` (Dim.AUTO)" for d in choice["dims"] if not d["root"]]
    return "; ".join(parts)


def spec_fix(text: str, file: str, call_line: int, data: dict[str, Any], choice: SpecChoice, *, preferred: bool) -> Fix | Refusal:
    """The edit of the user's call (or module-level target) that writes `choice` as `dynamic_shapes`."""
    tree = parse_or_refuse(text)
    if isinstance(tree, Refusal):
        return tree
    leaves = data["leaves"]
    used = bound_names(tree)
    add_import = False
    if _imported_dim(tree):
        prefix = dim_prefix(tree)  # `from torch.export import Dim` (as D): the user's spelling
    elif "Dim" not in used:
        prefix, add_import = "Dim", True
    else:  # `Dim` is the user's own name: spell torch's in full
        prefix = f"{torch_binding(tree) or 'torch'}.export.Dim"
    kept: dict[tuple[int, int], str] = {}
    for leaf, dim in data.get("requested") or []:
        entry = spec_entry(tree, call_line, leaves[leaf]["input"], leaves[leaf]["index"], dim) if not leaves[leaf]["path"] else None
        if entry is None:
            return Refusal("the call's own dynamic_shapes is not a literal this fix can complete; add the Dims by hand")
        kept[(leaf, dim)] = ast.get_source_segment(text, entry) or ""
    spans: list[tuple[int, int, str]] = []
    dims = list(choice["dims"])
    edited = []
    for d in [d for d in dims if d["zero_one"]]:
        leaf = leaves[d["leaf"]]
        site = example_site(tree, call_line, leaf["input"], leaf["index"], 0) if not leaf["path"] else None
        if site is not None and (site.size.lineno, site.size.col_offset) not in edited:
            edited.append((site.size.lineno, site.size.col_offset))
            spans.append((*node_span(text, site.size), "2"))
    if any(d["zero_one"] for d in dims) and not edited:  # no example to give a batch of 2: leave that dimension static
        dims = [d for d in dims if not d["zero_one"]]
    roots = [r for r in choice["roots"] if any(d["root"] == r["name"] for d in dims)]
    if not dims:
        return Refusal("the example inputs are not written with literal sizes here; give them a batch of 2 or more by hand")
    chosen: SpecChoice = {**choice, "dims": dims, "roots": roots}
    names = resolve_names(chosen, used)
    spec = spec_text(data, chosen, names, prefix, kept)
    nl = newline_of(text)
    lines = split_lines(text)
    call = export_call(tree, call_line) if not data.get("module_target") else None
    if call is not None:
        place = statement_of(tree, call)
        if place is None:
            return Refusal("could not find the statement of the export call")
        anchor = place[0]
        existing = next((k for k in call.keywords if k.arg == "dynamic_shapes"), None)
        if existing is not None:
            spans.append((*node_span(text, existing.value), spec))
        else:
            last = (call.args + [k.value for k in call.keywords])[-1] if call.args or call.keywords else None
            if last is None:
                return Refusal("the export call has no arguments to add dynamic_shapes to")
            spans.append(_keyword_insertion(text, lines, call, last, spec))
        at = anchor.lineno - 1
        declare = [indent_of(lines[at]) + _declaration(prefix, names[r["name"]], r) + nl for r in roots]
    else:
        current = _assigned(tree, "dynamic_shapes", len(lines) + 2)
        target = _module_anchor(tree)
        if target is None:
            return Refusal("no module-level `example_args` to put `dynamic_shapes` beside")
        if current is not None:
            spans.append((*node_span(text, current), spec))
            holder = statement_of(tree, current)
            at = holder[0].lineno - 1 if holder is not None else target.lineno
        else:
            at = target.end_lineno or target.lineno
        declare = [_declaration(prefix, names[r["name"]], r) + nl for r in roots]
        if current is None:
            declare.append(f"dynamic_shapes = {spec}{nl}")
    new = replace_spans(text, spans)
    new_lines = split_lines(new)
    if at >= len(new_lines) and new_lines and not new_lines[-1].endswith(("\n", "\r")):
        new_lines[-1] += nl
    new_lines[at:at] = declare
    if add_import:
        index, line = import_torch_insertion(text, tree, at + 1)
        new_lines.insert(index, line.replace("import torch", "from torch.export import Dim"))
    shown = summary(
        {**chosen, "roots": [{**r, "name": names[r["name"]]} for r in roots], "dims": [{**d, "root": names.get(d["root"], d["root"])} for d in dims]}
    )
    if choice["kind"] == "observed":
        title = f"Make dynamic what varied in the script's {choice.get('calls', 0)} other call{'s' if choice.get('calls') != 1 else ''} of the model: {shown}"
    else:
        title = f"Write `dynamic_shapes` with every dimension torch keeps dynamic: {shown}"
    if edited:
        title += f" (the example's batch of 1 becomes 2: {ZERO_ONE})"
    fix = make_fix(file, text, "".join(new_lines), title, preferred)
    return Fix(fix.title, fix.edits, fix.is_preferred, changes_example=bool(edited)) if isinstance(fix, Fix) else fix


def _imported_dim(tree: ast.Module) -> bool:
    return any(
        isinstance(n, ast.ImportFrom) and n.module in ("torch.export", "torch.export.dynamic_shapes") and any(a.name == "Dim" for a in n.names)
        for n in ast.walk(tree)
    )


def _keyword_insertion(text: str, lines: list[str], call: ast.Call, last: ast.expr, spec: str) -> tuple[int, int, str]:
    """Where `dynamic_shapes=` goes: a line of its own in a call laid out one argument a line, else after the last argument."""
    a, b = node_span(text, last)
    close = (call.end_lineno or call.lineno, (call.end_col_offset or 1) - 1)
    after = text[b:]
    trailing = re.match(r"\s*,", after)
    one_a_line = (last.end_lineno or last.lineno) < close[0] and last.col_offset == len(indent_of(lines[last.lineno - 1]))
    if one_a_line:
        nl = newline_of(text, (last.end_lineno or last.lineno) - 1)
        end_of_line = b + (trailing.end() if trailing else 0)
        indent = indent_of(lines[last.lineno - 1])
        return (end_of_line, end_of_line, ("" if trailing else ",") + f"{nl}{indent}dynamic_shapes={spec}" + ("," if trailing else ""))
    return (b, b, f", dynamic_shapes={spec}")


def _module_anchor(tree: ast.Module) -> ast.stmt | None:
    """The module-level statement that sets `example_kwargs`, else `example_args` (the last one)."""
    found: ast.stmt | None = None
    for name in ("example_args", "example_kwargs"):
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                if found is None or node.lineno > found.lineno:
                    found = node
    return found


def could_be_dynamic(d: Diagnostic, read: Reader, offer: Offer) -> list[Fix]:
    """could-be-dynamic: the spec of every dimension torch keeps dynamic (preferred), and the one of
    what varied between the script's calls of the model, where there were some."""
    call = d.data.get("export_call") or {}
    text = read(call["file"]) if call.get("file") else None
    if text is None:
        return []
    out = offer.take(spec_fix(text, call["file"], int(call["line"]), d.data, d.data["spec"], preferred=True))
    if d.data.get("observed"):
        out += offer.take(spec_fix(text, call["file"], int(call["line"]), d.data, d.data["observed"], preferred=False))
    return out
