"""Deprecated torch APIs in the user's source, found statically (no torch, no run needed).

`torch._check_is_size(x)` raises a FutureWarning since torch 2.11 and will be removed along with
`guard_size_oblivious`; torch's own advice is `torch._check(x >= 0)`. ExportLens reports it as a
`deprecated-api` hint with that rewrite (`fixes/deprecated_fix.py` finds the calls and rewrites
them), and never suggests `_check_is_size` itself.
"""

from __future__ import annotations

from exportlens import codes
from exportlens.fixes.deprecated_fix import DEPRECATED, calls, replacement
from exportlens.model import Diagnostic
from exportlens.source import Source

CODE = "deprecated-api"


def check(src: Source) -> list[Diagnostic]:
    """A `deprecated-api` hint on every `torch._check_is_size(...)` call."""
    tree = src.tree
    if tree is None:
        return []
    out = []
    for call, _prefix in calls(tree):
        instead = replacement(call, src.text)
        message = (
            f"`{DEPRECATED}` is deprecated (a FutureWarning since torch 2.11; it goes away with "
            f"guard_size_oblivious). Use `{instead}`: it tells export the same thing."
        )
        out.append(codes.new(CODE, src.path, src.node_range(call), message, data={"deprecated": DEPRECATED, "replacement": instead}))
    return out
