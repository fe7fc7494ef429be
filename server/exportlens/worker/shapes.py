"""Torch's shape decisions during one plain export, each with the stack that asked for it.

Plain `torch.export.export` says *that* a dimension was specialised or a `Dim` violated, never
*where* (its message has no file or line, docs/torch-facts.md §9). While the user's export runs,
`ShapeWatch` listens to three methods of torch's `ShapeEnv`: `create_symbol` (which input
dimension each symbol stands for), `_log_guard` (every guard added, with the Python stack of that
moment) and `_set_replacement` (a symbol replaced by a constant: the dimension became static).

A guard is cheap to record: the stack is kept as (code, line, instruction) of the frames outside
torch and ExportLens, and only turned into text for the few guards a finding needs. Under
`strict=True` dynamo traces the code, so the live stack is dynamo's own; dynamo's user stack
(`TracingContext.extract_stack()`) is kept instead. Imports only torch and the standard library.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any

from exportlens.worker import compat, frames


@dataclass(frozen=True)
class Frozen:
    """A frame's position kept after the frame is gone: what `frames.frame_json` reads of a live one."""

    f_code: CodeType
    f_lineno: int
    f_lasti: int


Stack = list[Frozen] | list[Any]  # Frozen frames (non-strict), or dynamo's FrameSummary list (strict)


@dataclass
class Guard:
    expr: Any  # the sympy boolean torch added
    symbols: frozenset[str]
    stack: Stack
    prefix: str


@dataclass
class Pin:
    value: Any  # the constant the symbol was replaced by
    reason: str  # torch's words for why ("range_refined_to_singleton", "solve", ...)
    stack: Stack


@dataclass
class ShapeWatch:
    """Symbols, guards and constants of one export (a context manager around it)."""

    strict: bool = False
    sources: dict[str, str] = field(default_factory=dict)  # source name ("L['x'].size()[1]") → symbol ("s27", or "1")
    guards: list[Guard] = field(default_factory=list)
    pins: dict[str, Pin] = field(default_factory=dict)  # symbol → the first constant it was replaced by
    env: Any = None  # the ShapeEnv that ran the export (its symbols' ranges, after the fact)
    _undo: list[tuple[Any, str, Any]] = field(default_factory=list)

    def __enter__(self) -> ShapeWatch:
        from torch.fx.experimental import symbolic_shapes

        cls = symbolic_shapes.ShapeEnv
        hooks = compat.shape_env_hooks(cls)
        watch = self
        if "create_symbol" in hooks:
            create = cls.create_symbol

            def create_symbol(env: Any, val: Any, source: Any, *args: Any, **kwargs: Any) -> Any:
                sym = create(env, val, source, *args, **kwargs)
                try:
                    watch.env = env
                    watch.sources.setdefault(compat.source_name(source), str(sym))
                except Exception:
                    pass
                return sym

            self._patch(cls, "create_symbol", create_symbol)
        if "_log_guard" in hooks:
            log_guard = cls._log_guard

            def guard(env: Any, prefix: str, g: Any, *args: Any, **kwargs: Any) -> Any:
                try:
                    watch.guards.append(Guard(g, frozenset(str(s) for s in g.free_symbols), watch._stack(), prefix))
                except Exception:
                    pass
                return log_guard(env, prefix, g, *args, **kwargs)

            self._patch(cls, "_log_guard", guard)
        if "_set_replacement" in hooks:
            set_replacement = cls._set_replacement

            def replace(env: Any, a: Any, tgt: Any, msg: str, *args: Any, **kwargs: Any) -> Any:
                out = set_replacement(env, a, tgt, msg, *args, **kwargs)
                try:
                    if getattr(tgt, "is_number", False) and str(a) not in watch.pins and env.replacements.get(a) is not None:
                        watch.pins[str(a)] = Pin(tgt, str(msg), watch._stack())
                except Exception:
                    pass
                return out

            self._patch(cls, "_set_replacement", replace)
        return self

    def __exit__(self, *exc: Any) -> None:
        for owner, name, original in reversed(self._undo):
            setattr(owner, name, original)
        self._undo.clear()

    def _patch(self, owner: Any, name: str, fn: Any) -> None:
        self._undo.append((owner, name, getattr(owner, name)))
        setattr(owner, name, fn)

    def _stack(self) -> Stack:
        if self.strict:
            from torch._guards import TracingContext

            try:
                return list(TracingContext.extract_stack())
            except Exception:
                return []
        return snapshot(sys._getframe(2))

    # -- after the export ---------------------------------------------------------------------

    def symbol(self, source: str) -> str | None:
        return self.sources.get(source)

    def symbol_of(self, dim: Any) -> str | None:
        """The symbol of a requested dimension (`dynamism.Requested`), by any name torch gave it."""
        return next((s for name in dim.sources if (s := self.sources.get(name)) is not None), None)

    def guards_on(self, symbol: str) -> list[Guard]:
        return [g for g in self.guards if symbol in g.symbols]

    def stack_json(self, stack: Stack) -> list[dict[str, Any]]:
        """A kept stack as FrameInfo dicts, outermost first."""
        if self.strict:
            return [frames.summary_json(s) for s in stack]
        return [frames.frame_json(f) for f in stack]  # type: ignore[arg-type]


def snapshot(start: FrameType | None) -> list[Frozen]:
    """The frames from `start` outwards that are not torch's or ExportLens's, outermost first (cheap:
    no text yet)."""
    out: list[Frozen] = []
    frame = start
    while frame is not None:
        file = frame.f_code.co_filename
        keep = _OUTSIDE.get(file)
        if keep is None:
            keep = _OUTSIDE[file] = frames.outside(file)
        if keep:
            out.append(Frozen(frame.f_code, frame.f_lineno, frame.f_lasti))
        frame = frame.f_back
    out.reverse()
    return out


_OUTSIDE: dict[str, bool] = {}
