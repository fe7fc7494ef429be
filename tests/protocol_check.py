"""Check plain JSON values against the TypedDicts of `exportlens.protocol` (the documented wire).

mypy checks the code against the types; this checks the data: recorded worker events and the
`data` of every diagnostic must have exactly the keys and value kinds their TypedDict declares.
"""

from __future__ import annotations

import types
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints, is_typeddict


def shape_errors(value: Any, tp: Any, where: str = "$") -> list[str]:
    """Every place where `value` does not fit `tp`; empty when it fits."""
    if tp is Any or tp is object:
        return []
    origin = get_origin(tp)
    if is_typeddict(tp):
        if not isinstance(value, dict):
            return [f"{where}: expected {tp.__name__}, got {type(value).__name__}"]
        hints = get_type_hints(tp)
        errors = [f"{where}: {tp.__name__} lacks required key {k!r}" for k in sorted(tp.__required_keys__ - value.keys())]
        errors += [f"{where}: {tp.__name__} has no key {k!r}" for k in sorted(value.keys() - hints.keys())]
        for key in sorted(value.keys() & hints.keys()):
            errors += shape_errors(value[key], hints[key], f"{where}.{key}")
        return errors
    if origin in (Union, types.UnionType):
        options = [shape_errors(value, alt, where) for alt in get_args(tp)]
        return [] if any(not o for o in options) else min(options, key=len)
    if origin is Literal:
        return [] if value in get_args(tp) else [f"{where}: {value!r} is not one of {get_args(tp)}"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: expected a list, got {type(value).__name__}"]
        (item,) = get_args(tp)
        return [e for i, v in enumerate(value) for e in shape_errors(v, item, f"{where}[{i}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{where}: expected an object, got {type(value).__name__}"]
        _, item = get_args(tp)
        return [e for k, v in value.items() for e in shape_errors(v, item, f"{where}.{k}")]
    if tp is type(None):
        return [] if value is None else [f"{where}: expected null, got {value!r}"[:200]]
    if tp is float:
        return [] if isinstance(value, (int, float)) and not isinstance(value, bool) else [f"{where}: expected a number, got {value!r}"[:200]]
    if tp is int:
        return [] if isinstance(value, int) and not isinstance(value, bool) else [f"{where}: expected an integer, got {value!r}"[:200]]
    if tp in (str, bool):
        return [] if isinstance(value, tp) else [f"{where}: expected {tp.__name__}, got {value!r}"[:200]]
    raise TypeError(f"{where}: shape_errors does not know {tp!r}")
