"""Generate a ``register_fake`` kernel for a custom op draft_export reported as missing one.

The body comes from the op profiles draft_export recorded (rank, dtype, device of every tensor
argument and output): ``torch.empty_like(arg)`` when an output matches an input's
rank/dtype/device, else a new empty tensor with one ``ctx.new_dynamic_size()`` per dimension
(the sizes are unknown: what the op computes is data-dependent as far as export knows).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from typing import Any

from exportlens.model import Diagnostic, Fix
from exportlens.source import Reader

from .common import (
    Offer,
    Refusal,
    bound_names,
    fresh_name,
    import_torch_insertion,
    insert_lines,
    make_fix,
    parse_or_refuse,
    stmt_start_line,
    torch_binding,
    walk_with_parents,
)
from .text import indent_of, indent_unit, is_blank_or_comment, newline_of, split_lines

TensorMeta = dict[str, Any]


def split_op_name(op: str) -> tuple[str, str, str]:
    """``"mylib.foo.default"`` → ``("mylib", "foo", "default")``; ``"mylib::foo"`` works too."""
    if "::" in op:
        ns, rest = op.split("::", 1)
        name, _, overload = rest.partition(".")
        return ns, name, overload or "default"
    parts = op.split(".")
    if len(parts) == 2:
        return parts[0], parts[1], "default"
    if len(parts) >= 3:
        return parts[0], parts[1], ".".join(parts[2:])
    raise ValueError(f"not an op name: {op!r}")


def qualified_name(op: str) -> str:
    """The ``ns::op`` (``ns::op.overload`` for a non-default overload) torch.library expects."""
    ns, name, overload = split_op_name(op)
    return f"{ns}::{name}" if overload == "default" else f"{ns}::{name}.{overload}"


def _dtype(d: Any) -> str:
    s = str(d)
    return s if s.startswith("torch.") else f"torch.{s}"


def _device(d: Any) -> str:
    s = str(d)
    m = re.fullmatch(r"device\(type='([^']+)'(?:, index=(\d+))?\)", s)
    if m:
        return m.group(1) + (f":{m.group(2)}" if m.group(2) else "")
    return s


def _same(a: TensorMeta | None, b: TensorMeta | None) -> bool:
    return (
        a is not None
        and b is not None
        and int(a["rank"]) == int(b["rank"])
        and _dtype(a["dtype"]) == _dtype(b["dtype"])
        and _device(a.get("device", "cpu")) == _device(b.get("device", "cpu"))
    )


def _schema_params(schema: str) -> list[str] | None:
    """Python parameters from a schema like ``"(Tensor x, int n=2) -> Tensor"`` or
    ``"foo(Tensor x) -> Tensor"``."""
    start = schema.find("(")
    if start < 0:
        return None
    depth, end = 0, -1
    for i in range(start, len(schema)):
        if schema[i] in "([":
            depth += 1
        elif schema[i] in ")]":
            depth -= 1
            if depth == 0:
                end = i
                break
    if end < 0:
        return None
    inner = schema[start + 1 : end]
    items, depth, cur = [], 0, ""
    for ch in inner:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        items.append(cur)
    params = []
    for item in items:
        item = item.strip()
        if item == "*":
            params.append("*")
            continue
        decl, eq, default = item.partition("=")
        name = decl.split()[-1]
        if eq:
            try:
                ast.parse(default.strip(), mode="eval")
                params.append(f"{name}={default.strip()}")
            except SyntaxError:
                params.append(f"{name}=None")
        else:
            params.append(name)
    return params


def _def_params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """The function's parameters without annotations (defaults kept)."""
    args = fn.args
    clean = ast.arguments(
        posonlyargs=[ast.arg(a.arg) for a in args.posonlyargs],
        args=[ast.arg(a.arg) for a in args.args],
        vararg=ast.arg(args.vararg.arg) if args.vararg else None,
        kwonlyargs=[ast.arg(a.arg) for a in args.kwonlyargs],
        kw_defaults=args.kw_defaults,
        kwarg=ast.arg(args.kwarg.arg) if args.kwarg else None,
        defaults=args.defaults,
    )
    text = ast.unparse(clean)
    return [text] if text else []


def _positional_names(params: list[str]) -> list[str]:
    out = []
    for p in ", ".join(params).split(","):
        p = p.strip()
        if not p or p == "/" or p.startswith("**"):
            continue
        if p == "*" or p.startswith("*"):
            continue
        out.append(p.split("=")[0].strip())
    return out


def _output_expr(
    o: TensorMeta, args: list[tuple[str, TensorMeta | None]], tb: str, ctx: str, size: list[int | None] | None = None, arg_sizes: list[Any] | None = None
) -> tuple[str, bool]:
    """Source for one output tensor; says whether it needs the fake context.

    With the sizes draft export observed (`size`, `arg_sizes`), a dimension equal to the same
    dimension of an argument is spelled `arg.shape[d]` and only the others become dynamic;
    `empty_like` is used only when every size matched too.
    """
    known = size is not None and arg_sizes is not None
    for i, (name, meta) in enumerate(args):
        if _same(o, meta) and (not known or (i < len(arg_sizes or []) and arg_sizes[i] == size)):  # type: ignore[index]
            return f"{tb}.empty_like({name})", False
    rank = int(o["rank"])
    dims = [f"{ctx}.new_dynamic_size()"] * rank
    if known and size is not None and len(size) == rank:
        for d in range(rank):
            for i, (name, _meta) in enumerate(args):
                arg_size = arg_sizes[i] if arg_sizes is not None and i < len(arg_sizes) else None
                if arg_size is not None and d < len(arg_size) and size[d] is not None and arg_size[d] == size[d]:
                    dims[d] = f"{name}.shape[{d}]"
                    break
    sizes = ", ".join(dims)
    shape = "()" if rank == 0 else f"({sizes},)" if rank == 1 else f"({sizes})"
    device = _device(o.get("device", "cpu"))
    dev = next((f"{n}.device" for n, m in args if m is not None and _device(m.get("device", "cpu")) == device), repr(device))
    return f"{tb}.empty({shape}, dtype={_dtype(o['dtype'])}, device={dev})", any("new_dynamic_size" in d for d in dims)


def _body(profile: dict[str, Any], names: list[str], tb: str, ctx: str) -> tuple[str, bool]:
    args_meta = list(profile.get("args", []))
    args = [(n, args_meta[i] if i < len(args_meta) else None) for i, n in enumerate(names)]
    out = profile.get("out")
    sizes = profile.get("sizes") or {}
    arg_sizes, out_sizes = sizes.get("args"), sizes.get("out") or []
    if isinstance(out, list):
        parts = [_output_expr(o, args, tb, ctx, out_sizes[i] if i < len(out_sizes) else None, arg_sizes) for i, o in enumerate(out)]
        expr = "(" + ", ".join(p[0] for p in parts) + ("," if len(parts) == 1 else "") + ")"
        return f"return {expr}", any(p[1] for p in parts)
    if out is None:
        return "return None", False
    e, needs = _output_expr(out, args, tb, ctx, out_sizes[0] if out_sizes else None, arg_sizes)
    return f"return {e}", needs


def _conditions(profiles: Sequence[dict[str, Any]], names: list[str], tb: str) -> list[str] | None:
    """One test per profile on the tensor arguments' rank/dtype, using only what differs."""
    feats: list[list[tuple[str, str]]] = []
    for p in profiles:
        row = []
        for i, name in enumerate(names):
            meta = p["args"][i] if i < len(p.get("args", [])) else None
            if meta is not None:
                row.append((f"{name}.dim()", str(int(meta["rank"]))))
                row.append((f"{name}.dtype", _dtype(meta["dtype"])))
        feats.append(row)
    keys = {k for row in feats for k, _ in row}
    differing = [k for k in sorted(keys) if len({dict(r).get(k) for r in feats}) > 1]
    order = [k for k, _ in feats[0] if k in differing] + [k for k in differing if k not in dict(feats[0])]
    conds = []
    for row in feats:
        d = dict(row)
        parts = [f"{k} == {d[k]}" for k in order if k in d]
        conds.append(" and ".join(parts))
    if len(set(conds)) != len(conds) or any(not c for c in conds):
        return None
    return conds


def _find_definition(tree: ast.Module, line: int) -> ast.stmt | None:
    for node, _ in walk_with_parents(tree):
        if isinstance(node, ast.stmt) and (stmt_start_line(node) == line or node.lineno == line):
            return node
    return None


def _kernel_body(profiles: Sequence[dict[str, Any]], names: list[str], tb: str, ctx: str, qual: str, inner: str, unit: str) -> list[str] | Refusal:
    """The fake kernel's body lines at indent `inner`: one return per distinct profile output, chosen by input metadata."""
    bodies: list[tuple[dict[str, Any], str, bool]] = []
    for p in profiles:
        b, needs = _body(p, names, tb, ctx)
        if all(b != seen for _, seen, _ in bodies):
            bodies.append((p, b, needs))
    out = [f"{inner}{ctx} = {tb}.library.get_ctx()"] if any(needs for _, _, needs in bodies) else []
    if len(bodies) == 1:
        return out + [inner + bodies[0][1]]
    conds = _conditions([p for p, _, _ in bodies], names, tb)
    if conds is None:
        return Refusal("the op's profiles differ in their outputs but not in their inputs' rank/dtype")
    for cond, (_, b, _) in zip(conds, bodies, strict=True):
        out += [f"{inner}if {cond}:", inner + unit + b]
    out.append(f"{inner}raise NotImplementedError({('no fake kernel for these inputs of ' + qual)!r})".replace("'", '"'))
    return out


def _start(text: str, op: str, profiles: Sequence[dict[str, Any]]) -> tuple[ast.Module, str, str] | Refusal:
    """What both fake-kernel fixes need first: the parsed text, the op's short and qualified names."""
    tree = parse_or_refuse(text)
    if isinstance(tree, Refusal):
        return tree
    if not profiles:
        return Refusal("draft_export recorded no profile for this op; cannot tell its output")
    try:
        _ns, name, _ = split_op_name(op)
    except ValueError as exc:
        return Refusal(str(exc))
    return tree, name, qualified_name(op)


def register_fake_fix(
    text: str,
    file: str,
    op: str,
    profiles: Sequence[dict[str, Any]],
    definition: dict[str, Any],
    *,
    preferred: bool = True,
) -> Fix | Refusal:
    """A fix adding a fake kernel for ``op`` right after its definition in ``text``.

    ``definition``: ``{"line": 1-based first line of the decorated def or define call,
    "kind": "custom_op" | "library", "function": name (custom_op)}``; ``profiles``: dicts
    ``{"args": [{"rank","dtype","device"} | None, ...], "out": {...} | [{...}, ...]}``.
    """
    start = _start(text, op, profiles)
    if isinstance(start, Refusal):
        return start
    tree, name, qual = start
    kind = definition.get("kind")
    node = _find_definition(tree, int(definition["line"]))
    if node is None:
        return Refusal(f"no op definition at line {definition['line']}")
    lines = split_lines(text)
    if kind == "custom_op":
        func = definition.get("function") or getattr(node, "name", None)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name != func:
            return Refusal(f"line {definition['line']} is not the definition of `{func}`")
        if re.search(rf"\b{re.escape(func)}\s*\.\s*register_fake\b", text):
            return Refusal(f"`{func}` already has a fake kernel; it is mismatched, not missing")
        params = _def_params(node)
        decorator = f"@{func}.register_fake"
    else:
        strings = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        schema = next((s for s in strings if "->" in s), None)
        if schema is None:
            return Refusal("could not read the op schema from its torch.library.define call")
        parsed = _schema_params(schema)
        if parsed is None:
            return Refusal(f"could not read the parameters of schema `{schema}`")
        params = parsed
        decorator = None
    if re.search(rf"register_fake\(\s*[\"']{re.escape(qual)}[\"']", text) or re.search(rf"impl_abstract\(\s*[\"']{re.escape(qual)}[\"']", text):
        return Refusal(f"`{qual}` already has a fake kernel; it is mismatched, not missing")
    binding = torch_binding(tree)
    tb = binding or "torch"
    if decorator is None:
        decorator = f"@{tb}.library.register_fake({qual!r})".replace("'", '"')
    names = _positional_names(params)
    used = bound_names(tree)
    ctx = "ctx" if "ctx" not in names else fresh_name(used, "fake_ctx")
    indent = indent_of(lines[stmt_start_line(node) - 1])
    unit = indent_unit(text)
    end = (node.end_lineno or node.lineno) - 1
    nl = newline_of(text, end)
    fname = fresh_name(used, f"_{name}_fake")
    body = _kernel_body(profiles, names, tb, ctx, qual, indent + unit, unit)
    if isinstance(body, Refusal):
        return body
    out = [f"{indent}{decorator}", f"{indent}def {fname}({', '.join(params)}):", *body]
    block = nl * (1 if indent else 2) + "".join(ln + nl for ln in out)  # PEP 8: two blank lines at module level
    if end + 1 < len(lines) and not is_blank_or_comment(lines[end + 1]):
        block += nl
    if not lines[end].endswith(("\n", "\r")):
        block = nl + block
    new = insert_lines(text, end + 1, block)
    if binding is None:
        index, imp = import_torch_insertion(text, tree, stmt_start_line(node))
        new = insert_lines(new, index, imp)
    title = f"Register a fake kernel for `{qual}` (from the shapes draft_export observed)"
    return make_fix(file, text, new, title, preferred)


def library_op_params(lib_text: str, definition: dict[str, Any]) -> list[str] | Refusal:
    """The parameters of an op defined in a library file (read, never edited)."""
    tree = parse_or_refuse(lib_text)
    if isinstance(tree, Refusal):
        return tree
    node = _find_definition(tree, int(definition.get("line") or 0))
    if node is None:
        return Refusal(f"no op definition at line {definition.get('line')} of the library")
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return _def_params(node)
    schema = next((n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str) and "->" in n.value), None)
    parsed = _schema_params(schema) if schema else None
    return parsed if parsed is not None else Refusal("could not read the op's parameters from the library")


def register_fake_in_project_fix(
    text: str,
    file: str,
    op: str,
    profiles: Sequence[dict[str, Any]],
    params: list[str],
    *,
    preferred: bool = True,
) -> Fix | Refusal:
    """A fake kernel for a LIBRARY's op, registered in the project's own file (after its imports).

    The library's files are not the user's to edit; `torch.library.register_fake("ns::op")` works
    from any module that runs before the export.
    """
    start = _start(text, op, profiles)
    if isinstance(start, Refusal):
        return start
    tree, name, qual = start
    if re.search(rf"register_fake\(\s*[\"']{re.escape(qual)}[\"']", text):
        return Refusal(f"`{qual}` already has a fake kernel in this file")
    binding = torch_binding(tree)
    tb = binding or "torch"
    names = _positional_names(params)
    used = bound_names(tree)
    ctx = "ctx" if "ctx" not in names else fresh_name(used, "fake_ctx")
    unit = indent_unit(text)
    fname = fresh_name(used, f"_{name}_fake")
    decorator = f"@{tb}.library.register_fake({qual!r})".replace("'", '"')
    body = _kernel_body(profiles, names, tb, ctx, qual, unit, unit)
    if isinstance(body, Refusal):
        return body
    out = [decorator, f"def {fname}({', '.join(params)}):", *body]
    lines = split_lines(text)
    last_import = max((n.end_lineno or n.lineno for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))), default=0)
    nl = newline_of(text)
    block = nl + nl + "".join(ln + nl for ln in out)
    if last_import < len(lines) and not is_blank_or_comment(lines[last_import]):
        block += nl
    if last_import and not lines[last_import - 1].endswith(("\n", "\r")):
        block = nl + block
    new = insert_lines(text, last_import, block)
    if binding is None:
        index, imp = import_torch_insertion(text, tree, last_import + 1)
        new = insert_lines(new, index, imp)
    title = f"Register a fake kernel for the library op `{qual}` in this file (from the shapes draft_export observed)"
    return make_fix(file, text, new, title, preferred)


# -- the fixer (codes.py names it) --------------------------------------------------------------


def missing_fake_kernel(d: Diagnostic, read: Reader, offer: Offer) -> list[Fix]:
    """missing-fake-kernel: a `register_fake` for the op, beside it or (a library's op) in the project's file."""
    definition = d.data.get("definition")
    if not definition or not definition.get("file"):
        return []
    text = read(definition["file"])
    if text is None:
        return []
    if d.data.get("library"):  # the op is a library's: register its fake kernel in the project's file
        params = library_op_params(text, definition)
        own = read(d.file)
        if isinstance(params, Refusal) or own is None:
            return []
        return offer.take(register_fake_in_project_fix(own, d.file, d.data["op"], d.data.get("profiles") or [], params))
    return offer.take(register_fake_fix(text, definition["file"], d.data["op"], d.data.get("profiles") or [], definition))
