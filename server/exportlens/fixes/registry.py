"""Which fix goes with which finding: the glue between diagnostics and `exportlens.fixes`.

Fixes are computed from the CURRENT text of each file (`read`), never from what the worker saw,
so an editor gets edits for the document it has. Only fixes known to make export pass in
torch 2.13 are offered (docs/torch-facts.md §4); where none is known, nothing is offered.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from exportlens import deprecated, project, suppress
from exportlens import fixes as gen
from exportlens.fixes import compile_fixes
from exportlens.model import ERROR, WARNING, Diagnostic, Fix, TextEdit
from exportlens.source import SourceError, read_source, write_source

Reader = Callable[[str], str | None]


def read_disk(path: str) -> str | None:
    try:
        return read_source(path).text
    except SourceError:
        return None


_refusals: list[str] = []  # why the generators said no during the current fixes_for() call


def _ok(result: Fix | list[Fix] | gen.Refusal) -> list[Fix]:
    if isinstance(result, gen.Refusal):
        _refusals.append(result.reason)
        return []
    return result if isinstance(result, list) else [result]


def refusals_for(d: Diagnostic, read: Reader = read_disk) -> tuple[list[Fix], list[str]]:
    """The fixes of one diagnostic and, when there is none, why each generator refused."""
    _refusals.clear()
    found = fixes_for(d, read)
    return found, list(dict.fromkeys(_refusals))


def _tensor_names(data: dict[str, Any]) -> list[str] | None:
    names = [
        n
        for n, vals in (data.get("locals") or {}).items()
        if any(isinstance(v, str) and v.startswith("Tensor(") for v in (vals if isinstance(vals, list) else [vals]))
    ]
    return names or None


def _prose(cond: str) -> str:
    return cond.replace("<=", "≤").replace(">=", "≥").replace("!=", "≠").replace("==", "=")


def assumption_title(action: str, cond: str, *, otherwise: str | None = None) -> str:
    """A title that says the fix is an assumption: what it asserts and which inputs then raise."""
    other = otherwise if otherwise is not None else f"inputs with {_prose(gen.negate(cond))}"
    return f"{action} — assumes `{cond}` for every input; {other} will raise"


def _assume(fix: Fix, cond: str, title: str) -> Fix:
    return Fix(title, fix.edits, fix.is_preferred, assumes=cond)


def _data_dependent(d: Diagnostic, text: str) -> list[Fix]:
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
        out = _ok(gen.rewrite_if_as_cond(text, d.file, line, _tensor_names(data)))
        return out + [Fix(f.title, f.edits, False, assumes=f.assumes) for f in _item_check(d, text, line)]
    if data.get("kind") == "value":
        pin = data.get("pin")
        if not pin:
            return []
        title = assumption_title(f"Pin the value: add `torch._check({pin})`", pin, otherwise="any other value")
        return [_assume(f, pin, title) for f in _ok(gen.insert_check(text, d.file, line, pin, preferred=True))]
    expr = data.get("source_expr")
    if not expr or data.get("result") not in ("True", "False"):
        return []
    taken = expr if data["result"] == "True" else gen.negate(expr)
    other = gen.negate(taken)
    if data.get("pin"):  # a condition torch asked inside a call (split on torch ≤ 2.12): only pinning passes
        pin = str(data["pin"])
        out = [
            _assume(f, pin, assumption_title(f"Pin the value: add `torch._check({pin})`", pin, otherwise="any other value"))
            for f in _ok(gen.insert_check(text, d.file, line, pin, preferred=True))
        ]
        return out + [
            _assume(f, taken, assumption_title(f"Add `torch._check({taken})`", taken) + " (settles only this first question)")
            for f in _ok(gen.insert_check(text, d.file, line, taken, preferred=False))
        ]
    # `if n > 2 and n < 100:` taken: torch met `n > 2` first (and counted `n < 100` as another
    # occurrence); the `if` is only decided once every part is checked
    chain = gen.chained_conditions(text, line, expr) if is_if and data["result"] == "True" else [taken]
    shown = " and ".join(f"`torch._check({c})`" for c in chain)
    assumed = " and ".join(chain)
    out = [
        _assume(f, assumed, assumption_title(f"Add {shown}", assumed, otherwise=None if len(chain) == 1 else "other inputs"))
        for f in _ok(gen.insert_checks(text, d.file, line, chain, preferred=True))
    ]
    out += [
        _assume(f, other, assumption_title(f"Add `torch._check({other})`", other)) for f in _ok(gen.insert_check(text, d.file, line, other, preferred=False))
    ]
    if is_if:
        out += [Fix(f.title, f.edits, False) for f in _ok(gen.rewrite_if_as_cond(text, d.file, line, _tensor_names(data)))]
    return out


def _item_check(d: Diagnostic, text: str, line: int) -> list[Fix]:
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
    for f in _ok(gen.insert_item_check(text, d.file, line, left)):
        action = f.title.split(" (assume")[0]
        out.append(_assume(f, test, assumption_title(action, test) + " (keeps only this branch)"))
    return out


def _first_symbol(d: Diagnostic) -> str:
    found = re.findall(r"\b[a-z]+\d+\b", str(d.data.get("expr", "")))
    return found[0] if found else "u0"


def _fake_kernel(d: Diagnostic, read: Reader) -> list[Fix]:
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
        return _ok(gen.register_fake_in_project_fix(own, d.file, d.data["op"], d.data.get("profiles") or [], params))
    return _ok(gen.register_fake_fix(text, definition["file"], d.data["op"], d.data.get("profiles") or [], definition))


def _mismatch(d: Diagnostic, read: Reader) -> list[Fix]:
    fake = d.data.get("fake")
    profiles = d.data.get("profiles") or []
    if not fake or len(profiles) != 1:
        return []
    text = read(fake["file"])
    if text is None:
        return []
    return _ok(gen.mismatch_fix(text, fake["file"], int(fake["line"]), d.data.get("reason", ""), profiles[0].get("out")))


def _guard_added(d: Diagnostic, read: Reader) -> list[Fix]:
    call = d.data.get("export_call") or {}
    named = [dim for dim in d.data.get("dims") or [] if dim.get("name")]
    if not call.get("file") or len(named) != 1:
        return []
    text = read(call["file"])
    if text is None:
        return []
    return _ok(gen.dynamic_shapes_fixes(text, call["file"], int(call["line"]), named[0]["name"], d.data.get("value")))


def _compile(d: Diagnostic, read: Reader) -> list[Fix]:
    """graph-break / recompile: the fixes the worker said apply, in its order of preference."""
    out: list[Fix] = []
    for want in d.data.get("fixes") or []:
        kind = want.get("fix")
        file = want.get("file") or (want.get("compile_call") or {}).get("file") or d.file
        text = read(file)
        if text is None:
            continue
        if kind == "torch_cond":
            found = _ok(gen.rewrite_if_as_cond(text, file, d.range.start.line + 1))
        elif kind == "capture_scalar_outputs":
            found = _ok(compile_fixes.capture_scalar_outputs_fix(text, file))
        elif kind == "reorderable_logging":
            found = _ok(compile_fixes.reorderable_logging_fix(text, file, str(want.get("function") or "print")))
        elif kind == "compiler_disable":
            found = _ok(compile_fixes.compiler_disable_fix(text, file, int(want.get("line") or d.range.start.line + 1)))
        elif kind == "drop_dynamic_false":
            found = _ok(compile_fixes.drop_dynamic_false_fix(text, file, int((want.get("compile_call") or {}).get("line") or 0)))
        else:
            found = []  # pass-as-tensor, mark_dynamic, torch._check under compile: not rewritten automatically
        out += [Fix(f.title, f.edits, not out and i == 0) for i, f in enumerate(found)]
    return out


def in_project(fix: Fix, diag_file: str) -> bool:
    """Whether every edit of `fix` is in the diagnostic's project: never an edit inside
    site-packages, a venv, torch or any file outside the project root."""
    root = project.find_root(diag_file)
    return all(project.is_user_file(e.file, root) for e in fix.edits)


def fixes_for(d: Diagnostic, read: Reader = read_disk) -> list[Fix]:
    """The fixes for one diagnostic against the current texts; the preferred one first.

    A fix that would edit a file outside the project (a library in site-packages) is refused.
    """
    if d.cell is not None:
        return []  # a notebook cell: its fixes come from the run, in cell coordinates (never rewritten from the .ipynb text)
    return [f for f in _fixes_for(d, read) if in_project(f, d.file)]


def _fixes_for(d: Diagnostic, read: Reader) -> list[Fix]:
    try:
        if d.code == "data-dependent-guard":
            text = read(d.file)
            found = _data_dependent(d, text) if text is not None else []
        elif d.code == "missing-fake-kernel":
            found = _fake_kernel(d, read)
        elif d.code == "mismatched-fake-kernel":
            found = _mismatch(d, read)
        elif d.code == "guard-added":
            found = _guard_added(d, read)
        elif d.code in ("graph-break", "recompile"):
            found = _compile(d, read)
        elif d.code == deprecated.CODE:
            text = read(d.file)
            rewrite = deprecated.fix(text, d) if text is not None else None
            found = [rewrite] if rewrite is not None else []
        elif d.code == suppress.UNUSED:
            text = read(d.file)
            removal = suppress.remove_unused_fix(text, d) if text is not None else None
            found = [removal] if removal is not None else []
        else:
            found = []
    except (SyntaxError, ValueError, KeyError, TypeError):  # a document mid-edit: no fix rather than a wrong one
        return []
    return sorted(found, key=lambda f: not f.is_preferred)


def ignore_fix(d: Diagnostic, read: Reader = read_disk) -> Fix | None:
    """ "Ignore this problem on this line": an `# exportlens: ignore[code]` comment (editors offer it last)."""
    if d.code in suppress.NOT_SUPPRESSIBLE or not d.file.endswith((".py", ".pyw")):
        return None
    text = read(d.file)
    return suppress.ignore_fix(text, d.file, d.range.start.line, d.code) if text is not None else None


def editor_fixes(d: Diagnostic, read: Reader = read_disk) -> list[Fix]:
    """What an editor offers: the fixes, then "Ignore this problem on this line"."""
    found = fixes_for(d, read)
    try:
        ignore = ignore_fix(d, read)
    except (SyntaxError, ValueError):
        ignore = None
    return found + [ignore] if ignore is not None else found


def attach(diags: list[Diagnostic], read: Reader = read_disk) -> None:
    """Fill `fixes` of every diagnostic that has none yet (the CLI's JSON and SARIF carry them);
    a notebook's keep theirs."""
    for d in diags:
        if d.cell is None and not d.fixes:
            d.fixes = fixes_for(d, read)


def _shown(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


@dataclass
class Applied:
    changed: dict[str, tuple[str, str]] = field(default_factory=dict)  # file → (old, new)
    skipped: list[str] = field(default_factory=list)

    @property
    def diff(self) -> str:
        return "".join(gen.unified_diff(old, new, _shown(path)) for path, (old, new) in sorted(self.changed.items()))

    def summary(self) -> str:
        lines = [f"fixed {_shown(p)}" for p in sorted(self.changed)]
        lines += [f"not fixed: {s}" for s in self.skipped]
        return "\n".join(lines) or "nothing to fix"


def _with_verification(computed: list[Fix], known: list[Fix]) -> list[Fix]:
    """Fixes computed on the files as they are now, ranked as `known` (the diagnostic's verified
    fixes) ranked them when they are the same edits; edits always come from the current text."""
    verified = {f.key(): f for f in known if f.verification is not None}
    if not any(c.key() in verified for c in computed):
        return computed
    out = [
        Fix(
            c.title,
            c.edits,
            verified[c.key()].is_preferred if c.key() in verified else False,
            c.assumes,
            verified[c.key()].verification if c.key() in verified else None,
        )
        for c in computed
    ]
    order = {f.key(): i for i, f in enumerate(known)}
    return sorted(out, key=lambda f: order.get(f.key(), len(order)))


def _conflicts(a: TextEdit, b: TextEdit) -> bool:
    """Two edits of one file that cannot both apply: overlapping, or inserting at the same point
    (edits that only meet, one ending where the next starts, apply in a clear order)."""
    if a.file != b.file:
        return False
    if a.range == b.range:
        return True
    return a.range.start < b.range.end and b.range.start < a.range.end


def apply_preferred(diags: list[Diagnostic], *, write: bool, assume: bool = False) -> Applied:
    """Apply every preferred fix, all computed against the files as they are now.

    Fixes are computed on the files as they are now; where the diagnostic carries verified fixes
    with the same edits, their verified ranking decides which one is preferred. An assumption fix
    (`torch._check` of a condition for every input) is applied only with `assume`, otherwise it is
    left out and said. A fix shared by several diagnostics counts
    once; a fix whose edits touch another chosen fix's lines is left out (and said), so the lines
    each finding named are never stale. Each file's result must parse, or that file is left alone.
    """
    out = Applied()
    texts: dict[str, str | None] = {}

    def read(path: str) -> str | None:
        if path not in texts:
            texts[path] = read_disk(path)
        return texts[path]

    chosen: list[Fix] = []
    seen: set[tuple[Any, ...]] = set()
    for d in sorted(diags, key=lambda d: (d.file, d.range.start)):
        if d.cell is not None:  # fixes are edits of a cell: the editor applies them, where the cell is
            if d.severity in (ERROR, WARNING):
                where = f"{_shown(d.file)}:cell {d.cell}:{d.range.start.line + 1}"
                out.skipped.append(f"{where}: [{d.code}] a notebook cell: apply its fix in the editor (quick fix on the cell); --fix edits .py files")
            continue
        found, refused = refusals_for(d, read)
        preferred = [f for f in _with_verification(found, d.fixes) if f.is_preferred]
        if not preferred:
            if d.severity in (ERROR, WARNING):  # a problem left as it was is said, with the reason
                why = "; ".join(refused) or (
                    "the only fixes are alternatives to choose in the editor" if found else f"ExportLens has no automatic fix for [{d.code}]"
                )
                out.skipped.append(f"{_shown(d.file)}:{d.range.start.line + 1}: [{d.code}] {why}")
            continue
        fix = preferred[0]
        if fix.assumes and not assume:
            out.skipped.append(f"{_shown(d.file)}:{d.range.start.line + 1}: {fix.title}: an assumption, not applied (pass --assume to apply it)")
            continue
        key = tuple((e.file, e.range, e.new_text) for e in fix.edits)
        if key in seen:
            continue
        seen.add(key)
        taken = [e for f in chosen for e in f.edits]
        if any(_conflicts(e, t) for e in fix.edits for t in taken):
            out.skipped.append(f"{_shown(d.file)}:{d.range.start.line + 1}: {fix.title}: touches the lines of another fix; run again after this one")
            continue
        chosen.append(fix)
    by_file: dict[str, list[TextEdit]] = {}
    for fix in chosen:
        for e in fix.edits:
            by_file.setdefault(e.file, []).append(e)
    for path, edits in sorted(by_file.items()):
        old = read(path)
        if old is None:
            continue
        try:
            new = gen.apply_edits(old, edits, validate=True)
        except gen.EditError as exc:
            out.skipped.append(f"{_shown(path)}: {exc}")
            continue
        if new != old:
            out.changed[path] = (old, new)
            if write:
                write_source(path, new)
    return out
