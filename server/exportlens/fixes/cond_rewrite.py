"""Rewrite a data-dependent ``if`` as ``torch.cond`` so that export keeps both branches.

Supported shapes (issue 3, item 2):

* ``if c: …; return A`` / ``else: …; return B``;
* ``if c: …; return A`` directly followed by ``return B``;
* both arms assign names that are read after the ``if`` (an arm that does not assign a name
  which existed before passes it through), outputs a tuple when there are several.

Each arm becomes a nested function taking every tensor it reads as an explicit operand (works on
every torch version); an arm returning an operand (or a view of one) returns ``.clone()`` since
torch.cond refuses aliasing (docs/torch-facts.md §4). The arm lines are kept byte for byte, comments and
blank lines included; only the ``if``/``else`` headers, the returns and the call line change.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from exportlens.model import Fix

from .common import (
    Refusal,
    bound_names,
    enclosing_function,
    fresh_name,
    import_torch_insertion,
    insert_lines,
    make_fix,
    parse_or_refuse,
    torch_binding,
    walk_containing,
)
from .text import (
    byte_col_to_index,
    indent_of,
    indent_unit,
    is_blank_or_comment,
    line_body,
    line_ending,
    newline_of,
    segment,
    split_lines,
)

_VIEW_METHODS = {
    "view", "view_as", "reshape", "reshape_as", "transpose", "t", "permute", "squeeze", "unsqueeze",
    "expand", "expand_as", "narrow", "select", "flatten", "unflatten", "contiguous", "detach",
    "unbind", "split", "chunk", "movedim", "swapaxes", "diagonal", "as_strided", "unfold",
    "type_as", "to", "float", "double", "int", "long", "half", "bool",
}  # fmt: skip
_CONTAINER_MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "popitem"}
_SIDE_EFFECT_FUNCS = {"print", "input", "open", "breakpoint", "exec", "eval", "setattr", "delattr"}
_SIDE_EFFECT_ROOTS = {"logging", "logger", "log", "LOGGER", "_logger", "_log", "warnings", "sys", "os", "pdb"}


def _nodes(stmts: Iterable[ast.AST]) -> Iterator[ast.AST]:
    """Every node under the statements, not descending into nested function/class bodies."""
    stack = list(stmts)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(ast.iter_child_nodes(node))


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _targets(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.Assign):
        out: list[ast.AST] = []
        for t in node.targets:
            out.extend(_flatten_target(t))
        return out
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return _flatten_target(node.target)
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return _flatten_target(node.target)
    if isinstance(node, ast.Delete):
        out = []
        for t in node.targets:
            out.extend(_flatten_target(t))
        return out
    return []


def _flatten_target(t: ast.AST) -> list[ast.AST]:
    if isinstance(t, (ast.Tuple, ast.List)):
        out: list[ast.AST] = []
        for e in t.elts:
            out.extend(_flatten_target(e))
        return out
    if isinstance(t, ast.Starred):
        return _flatten_target(t.value)
    return [t]


def _arm_problem(stmts: list[ast.stmt], lines: list[str], operands: set[str], arm: str) -> str | None:
    """Why an arm cannot become a torch.cond branch (mutation, side effect, control flow), or None."""

    def src(n: ast.AST) -> str:
        s = segment(lines, n)
        return s if len(s) <= 40 and "\n" not in s else s.splitlines()[0][:37] + "..."

    def loops(node: ast.AST, in_loop: bool) -> str | None:
        if isinstance(node, (ast.Break, ast.Continue)) and not in_loop:
            kw = "break" if isinstance(node, ast.Break) else "continue"
            return f"the {arm} branch uses `{kw}`, which cannot leave a torch.cond branch"
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return None
        for child in ast.iter_child_nodes(node):
            inner = in_loop or isinstance(node, (ast.For, ast.AsyncFor, ast.While))
            if isinstance(node, (ast.For, ast.AsyncFor, ast.While)) and child in node.orelse:
                inner = in_loop
            msg = loops(child, inner)
            if msg:
                return msg
        return None

    for s in stmts:
        msg = loops(s, False)
        if msg:
            return msg
    for node in _nodes(stmts):
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)):
            return f"the {arm} branch uses `{src(node).split()[0]}`, which a torch.cond branch cannot"
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            return f"the {arm} branch rebinds outer names (`{src(node)}`): that is a side effect"
        for t in _targets(node):
            if isinstance(t, (ast.Attribute, ast.Subscript)):
                return f"the {arm} branch mutates state (`{src(node)}`); torch.cond branches must be pure"
            if isinstance(node, ast.AugAssign) and isinstance(t, ast.Name) and t.id in operands:
                return f"the {arm} branch modifies `{t.id}` in place (`{src(node)}`)"
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id in _SIDE_EFFECT_FUNCS:
                return f"the {arm} branch has a side effect (`{src(node)}`)"
            if isinstance(f, ast.Attribute):
                if f.attr.endswith("_") and not f.attr.startswith("_"):
                    return f"the {arm} branch mutates a tensor in place (`{src(node)}`)"
                if f.attr in _CONTAINER_MUTATORS:
                    return f"the {arm} branch mutates a container (`{src(node)}`)"
                if _root_name(f) in _SIDE_EFFECT_ROOTS:
                    return f"the {arm} branch has a side effect (`{src(node)}`)"
    return None


def _returns(stmts: list[ast.stmt]) -> list[ast.Return]:
    return [n for n in _nodes(stmts) if isinstance(n, ast.Return)]


def _names(stmts: Iterable[ast.AST], ctx: type[ast.expr_context]) -> list[str]:
    """Names stored (`ast.Store`) or read (`ast.Load`) in the statements, once each, in source order."""
    found = sorted((n for n in _nodes(stmts) if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)), key=lambda n: (n.lineno, n.col_offset))
    return list(dict.fromkeys(n.id for n in found))


def _stores(stmts: Iterable[ast.AST]) -> list[str]:
    """Names bound by assignments, in source order."""
    return _names(stmts, ast.Store)


def _loads(stmts: Iterable[ast.AST]) -> list[str]:
    return _names(stmts, ast.Load)


def _comment_after_colon(line: str, start: int = 0) -> str:
    """The ``# comment`` that follows the first ``:`` at or after ``start`` on a header line."""
    body = line_body(line)
    i = body.find(":", start)
    rest = body[i + 1 :].strip() if i >= 0 else ""
    return "  " + rest if rest.startswith("#") else ""


def _header_colon_line(lines: list[str], test: ast.expr) -> tuple[int, int] | None:
    """0-based line and column of the ``:`` that ends an ``if`` header (after the test, closing
    parens, comments and line continuations)."""
    li = (test.end_lineno or test.lineno) - 1
    body = line_body(lines[li])
    ci = byte_col_to_index(body, test.end_col_offset or 0)
    while li < len(lines):
        body = line_body(lines[li])
        while ci < len(body):
            ch = body[ci]
            if ch == ":":
                return li, ci
            if ch == "#":
                break
            if ch not in " \t)\\\f":
                return None
            ci += 1
        li += 1
        ci = 0
    return None


def _else_line(lines: list[str], after: int) -> int | None:
    """0-based line of the ``else:`` that follows line index ``after`` (skipping comments)."""
    li = after + 1
    while li < len(lines):
        if is_blank_or_comment(lines[li]):
            li += 1
            continue
        stripped = line_body(lines[li]).lstrip()
        return li if stripped.startswith("else") and stripped[4:].lstrip().startswith(":") else None
    return None


@dataclass
class _Arm:
    stmts: list[ast.stmt]
    first: int  # 0-based first line of the arm's text
    last: int  # 0-based last line (inclusive)
    inline_col: int | None  # code-point column when the arm shares the header line


def _find_if(tree: ast.Module, line: int) -> tuple[ast.If, list[ast.AST]] | None:
    best: tuple[ast.If, list[ast.AST]] | None = None
    for node, parents in walk_containing(tree, line):
        inside = isinstance(node, ast.If) and node.lineno <= line <= (node.test.end_lineno or node.lineno)
        if inside and (best is None or len(parents) > len(best[1])):
            best = (node, parents)  # type: ignore[assignment]
    return best


@dataclass
class _Site:
    """The `if` to rewrite and what surrounds it."""

    tree: ast.Module
    lines: list[str]
    node: ast.If
    parents: list[ast.AST]
    func: ast.FunctionDef | ast.AsyncFunctionDef
    colon: int  # 0-based line of the header's `:`
    colon_col: int


@dataclass
class _Shape:
    """Which supported shape the `if` has, and where its arms' text lies."""

    kind: str  # "return" (if/else both return), "return_after" (if …: return A; return B), "assign"
    arms: list[_Arm]
    region_end: int  # 0-based last line the rewrite replaces
    comments: list[str]  # what followed the `if:` and `else:` colons


@dataclass
class _Operands:
    """What the two functions take and, for the assign shape, give back."""

    operands: list[str]
    outputs: list[str]  # names assigned in the arms and read afterwards (assign shape)
    passthrough: dict[int, list[str]]  # per arm: outputs it does not assign, returned unchanged


def _locate(text: str, line: int) -> _Site | Refusal:
    """The `if` whose header holds `line`, if torch.cond can replace it at all."""
    tree = parse_or_refuse(text)
    if isinstance(tree, Refusal):
        return tree
    lines = split_lines(text)
    found = _find_if(tree, line)
    if found is None:
        return Refusal(f"there is no `if` statement at line {line}")
    node, parents = found
    parent = parents[-1] if parents else None
    if isinstance(parent, ast.If) and parent.orelse == [node] and line_body(lines[node.lineno - 1]).lstrip().startswith("elif"):
        return Refusal("the condition is an `elif` test; torch.cond can only replace a whole `if`/`else`")
    chained = len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If)
    if chained and line_body(lines[node.orelse[0].lineno - 1]).lstrip().startswith("elif"):
        return Refusal("the `if` has an `elif` chain; torch.cond has exactly two branches")
    func = enclosing_function(parents)
    if func is None:
        return Refusal("torch.cond needs the `if` to be inside a function (forward or a helper)")
    if isinstance(node.test, ast.BoolOp) or (isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not)):
        return Refusal("the test combines conditions with and/or/not; torch.cond needs a single boolean tensor")
    found_colon = _header_colon_line(lines, node.test)
    if found_colon is None:
        return Refusal("could not find the end of the `if` header")
    colon, colon_col = found_colon
    return _Site(tree, lines, node, parents, func, colon, colon_col)


def _following(site: _Site) -> ast.stmt | None:
    """The statement after the `if` in its block (for the `return B` shape)."""
    parent = site.parents[-1] if site.parents else None
    block = None
    for field in ("body", "orelse", "finalbody"):
        seq = getattr(parent, field, None)
        if isinstance(seq, list) and site.node in seq:
            block = seq
    if not block:
        return None
    at = block.index(site.node) + 1
    return block[at] if at < len(block) else None


def _shape(site: _Site) -> _Shape | Refusal:
    """Match the `if` against the supported shapes and find each arm's lines."""
    node, lines, colon = site.node, site.lines, site.colon
    comments = [_comment_after_colon(lines[colon], site.colon_col), ""]

    def arm_of(stmts: list[ast.stmt], header_line: int, last: int) -> _Arm:
        if stmts[0].lineno - 1 == header_line:
            body = line_body(lines[header_line])
            return _Arm(stmts, header_line, last, byte_col_to_index(body, stmts[0].col_offset))
        return _Arm(stmts, header_line + 1, last, None)

    following = _following(site)
    body_end = (node.body[-1].end_lineno or node.body[-1].lineno) - 1
    true_rets, false_rets = _returns(node.body), _returns(node.orelse)
    if node.orelse:
        else_li = _else_line(lines, body_end)
        if else_li is None:
            return Refusal("could not find the `else:` line")
        true_arm = arm_of(node.body, colon, else_li - 1)
        if true_arm.inline_col is not None:
            true_arm.last = body_end
        false_last = (node.orelse[-1].end_lineno or node.orelse[-1].lineno) - 1
        false_arm = arm_of(node.orelse, else_li, false_last)
        if false_arm.inline_col is None:
            comments[1] = _comment_after_colon(lines[else_li])
        if isinstance(node.body[-1], ast.Return) and isinstance(node.orelse[-1], ast.Return):
            kind = "return"
        elif not true_rets and not false_rets:
            kind = "assign"
        else:
            return Refusal("each branch must either end with `return` or assign the names used after the `if`")
        return _Shape(kind, [true_arm, false_arm], false_last, comments)
    if isinstance(node.body[-1], ast.Return) and isinstance(following, ast.Return):
        true_arm = arm_of(node.body, colon, body_end)
        ret_first = following.lineno - 1
        region_end = (following.end_lineno or following.lineno) - 1
        false_arm = _Arm([following], ret_first, region_end, byte_col_to_index(line_body(lines[ret_first]), following.col_offset))
        return _Shape("return_after", [true_arm, false_arm], region_end, comments)
    if not true_rets:
        return _Shape("assign", [arm_of(node.body, colon, body_end)], body_end, comments)
    return Refusal(
        "unsupported shape: torch.cond needs if/else with both arms returning, `if …: return A` "
        "followed by `return B`, or both arms assigning the names used afterwards"
    )


def _operands(site: _Site, shape: _Shape, tensor_names: Iterable[str] | None) -> _Operands | Refusal:
    """The tensors the arms read (their parameters) and, for assignments, the names they give back."""
    func, node = site.func, site.node
    before = {a.arg for a in func.args.posonlyargs + func.args.args + func.args.kwonlyargs}
    for extra in (func.args.vararg, func.args.kwarg):
        if extra is not None:
            before.add(extra.arg)
    for n in _nodes(func.body):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.lineno < node.lineno:
            before.add(n.id)
    hint = set(tensor_names) if tensor_names is not None else None
    candidates = (hint if hint is not None else before) - {"self", "cls"}

    outputs: list[str] = []
    passthrough: dict[int, list[str]] = {0: [], 1: []}
    if shape.kind == "assign":
        after_loads = {
            n.id for n in _nodes(func.body) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.lineno > (node.end_lineno or node.lineno)
        }
        assigned = [_stores(node.body), _stores(node.orelse)]
        for name in assigned[0] + [n for n in assigned[1] if n not in assigned[0]]:
            if name in after_loads:
                outputs.append(name)
        if not outputs:
            return Refusal("the names the branches assign are not used after the `if`; nothing for torch.cond to return")
        for name in outputs:
            for k in (0, 1):
                if name not in assigned[k]:
                    if name not in before:
                        which = "true" if k == 1 else "false"
                        return Refusal(f"`{name}` is assigned only in the {which} branch and has no value before the `if`")
                    passthrough[k].append(name)

    reads: list[str] = []
    for arm in shape.arms:
        for name in _loads(arm.stmts):
            if name not in reads:
                reads.append(name)
    for k in (0, 1):
        for name in passthrough[k]:
            if name not in reads:
                reads.append(name)
    operands = [n for n in reads if n in candidates]
    missing = [n for k in (0, 1) for n in passthrough[k] if n not in operands]
    if missing:
        return Refusal(f"`{missing[0]}` must pass through a branch but is not known to be a tensor")
    return _Operands(operands, outputs, passthrough)


def _check_arms(site: _Site, shape: _Shape, ops: _Operands) -> Refusal | None:
    """What torch.cond refuses in an arm: side effects, mutated operands, mismatched returns."""
    opset = set(ops.operands)
    for k, arm in enumerate(shape.arms):
        problem = _arm_problem(arm.stmts, site.lines, opset, "true" if k == 0 else "false")
        if problem:
            return Refusal(problem)
    if shape.kind not in ("return", "return_after"):
        return None
    kinds = []
    for arm in shape.arms:
        r = arm.stmts[-1]
        assert isinstance(r, ast.Return)
        v = r.value
        if v is None or (isinstance(v, ast.Constant) and not isinstance(v.value, (int, float))):
            return Refusal("a branch returns no tensor (`return`/`return None`); torch.cond branches must return tensors")
        if isinstance(v, ast.Constant):
            return Refusal("a branch returns a Python number; torch.cond branches must return tensors")
        kinds.append(("seq", len(v.elts)) if isinstance(v, (ast.Tuple, ast.List)) else ("one", 1))
    if kinds[0] != kinds[1]:
        return Refusal("the branches return different structures; torch.cond needs the same number of outputs")
    for arm in shape.arms:
        for r in _returns(arm.stmts):
            if r.value is None:
                return Refusal("a branch has a bare `return`; torch.cond branches must return tensors")
    return None


def _aliases_operand(e: ast.expr, opset: set[str]) -> bool:
    """Whether `e` is an operand or a view of one (torch.cond refuses an output aliasing an input)."""
    if isinstance(e, ast.Name):
        return e.id in opset
    if isinstance(e, ast.Subscript):
        return _root_name(e) in opset and isinstance(e.value, ast.Name)
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr in _VIEW_METHODS:
        return isinstance(e.func.value, ast.Name) and e.func.value.id in opset
    if isinstance(e, ast.Attribute) and e.attr in ("T", "mT", "H", "data"):
        return isinstance(e.value, ast.Name) and e.value.id in opset
    return False


def _clone_returned_operands(site: _Site, shape: _Shape, opset: set[str]) -> list[str]:
    """The file's lines with `.clone()` added to each returned operand (or view of one)."""
    work = list(site.lines)
    patches: list[tuple[int, int, str]] = []  # (line index, code-point col, text) to insert
    for arm in shape.arms:
        for r in _returns(arm.stmts):
            v = r.value
            elts = v.elts if isinstance(v, (ast.Tuple, ast.List)) else [v]
            for e in elts:
                if e is not None and _aliases_operand(e, opset):
                    li = (e.end_lineno or e.lineno) - 1
                    col = byte_col_to_index(line_body(site.lines[li]), e.end_col_offset or 0)
                    patches.append((li, col, ".clone()"))
    for li, col, add in sorted(patches, reverse=True):
        work[li] = work[li][:col] + add + work[li][col:]
    return work


def _emit(text: str, site: _Site, shape: _Shape, ops: _Operands, work: list[str]) -> str:
    """The new text: two nested functions holding the arms' lines, then the torch.cond call."""
    lines, node = site.lines, site.node
    indent = indent_of(lines[node.lineno - 1])
    arm_indent = indent + indent_unit(text)
    nl = newline_of(text, node.lineno - 1)
    opset = set(ops.operands)
    used = bound_names(site.tree)
    true_name, false_name = fresh_name(used, "true_fn"), fresh_name(used, "false_fn")
    params = ", ".join(ops.operands)

    def arm_text(arm: _Arm, k: int) -> str:
        if arm.inline_col is not None:
            first = line_body(work[arm.first])[arm.inline_col :]
            out = arm_indent + first + line_ending(work[arm.first]) + "".join(work[arm.first + 1 : arm.last + 1])
            if arm.first == arm.last and not line_ending(work[arm.first]):
                out += nl
        else:
            out = "".join(work[arm.first : arm.last + 1])
        if out and not out.endswith(("\n", "\r")):
            out += nl
        if shape.kind == "assign":
            inner = arm_indent
            if arm.inline_col is None and arm.stmts:
                inner = indent_of(lines[arm.stmts[0].lineno - 1])
            aliases = set(ops.passthrough[k])
            for st in arm.stmts:  # `b = y`: the output would alias an operand
                if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
                    if _aliases_operand(st.value, opset):
                        aliases.add(st.targets[0].id)
                    else:
                        aliases.discard(st.targets[0].id)
            names = [f"{n}.clone()" if n in aliases else n for n in ops.outputs]
            out += f"{inner}return {', '.join(names)}{nl}"
        return out

    tb = torch_binding(site.tree) or "torch"
    test_src = segment(lines, node.test)
    if "\n" in test_src or "\r" in test_src:
        test_src = ast.unparse(node.test)
    operands = ops.operands
    call_args = "()" if not operands else f"({operands[0]},)" if len(operands) == 1 else f"({params})"
    call = f"{tb}.cond({test_src}, {true_name}, {false_name}, {call_args})"

    arms = shape.arms
    new_region = f"{indent}def {true_name}({params}):{shape.comments[0]}{nl}" + arm_text(arms[0], 0)
    if shape.kind == "return_after":
        new_region += "".join(work[arms[0].last + 1 : arms[1].first])
    new_region += f"{indent}def {false_name}({params}):{shape.comments[1]}{nl}"
    if len(arms) == 2:
        new_region += arm_text(arms[1], 1)
    else:
        names = [f"{n}.clone()" if n in ops.passthrough[1] else n for n in ops.outputs]
        new_region += f"{arm_indent}return {', '.join(names)}{nl}"
    if shape.kind == "assign":
        new_region += f"{indent}{', '.join(ops.outputs)} = {call}{nl}"
    else:
        new_region += f"{indent}return {call}{nl}"
    if not line_ending(lines[shape.region_end]):
        new_region = new_region[: -len(nl)]
    new_text = "".join(work[: node.lineno - 1]) + new_region + "".join(work[shape.region_end + 1 :])
    if torch_binding(site.tree) is None:
        index, imp = import_torch_insertion(text, site.tree, node.lineno)
        new_text = insert_lines(new_text, index, imp)
    return new_text


def rewrite_if_as_cond(text: str, file: str, line: int, tensor_names: Iterable[str] | None = None, *, preferred: bool = True) -> Fix | Refusal:
    """Rewrite the ``if`` whose header holds ``line`` (1-based) as ``torch.cond``.

    ``tensor_names``: names known to hold tensors (e.g. from draft_export's frame locals); the
    operands are the names the arms read among them. Without it the operands are the function's
    parameters and earlier locals that the arms read, except ``self``/``cls``.
    """
    site = _locate(text, line)
    if isinstance(site, Refusal):
        return site
    shape = _shape(site)
    if isinstance(shape, Refusal):
        return shape
    ops = _operands(site, shape, tensor_names)
    if isinstance(ops, Refusal):
        return ops
    refused = _check_arms(site, shape, ops)
    if refused is not None:
        return refused
    work = _clone_returned_operands(site, shape, set(ops.operands))
    new_text = _emit(text, site, shape, ops, work)
    what = {"return": "if/else", "return_after": "if/return", "assign": "if/else"}[shape.kind]
    title = f"Rewrite this {what} as `torch.cond` (keeps both branches in the exported graph)"
    return make_fix(file, text, new_text, title, preferred)
