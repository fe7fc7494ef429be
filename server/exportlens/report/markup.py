"""The one place text becomes HTML: every string is escaped unless it is markup built here.

Why one home: the page shows model sources, exception texts and torch's messages, all written by
someone else. `el` escapes every child that is a plain `str` and every attribute value; only
`Html` (made by `el`, `escape`, `join` or `raw_asset`) passes through unchanged. Tag and attribute
names are checked against a strict pattern, so they cannot carry markup either. Nothing in the
report package writes a `<` by hand outside this module (a test checks it).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from typing import TypeAlias

_NAME = re.compile(r"[a-z][a-z0-9-]*\Z")
# Elements whose content the browser does not parse as markup: an escaped text is still text there,
# but `</script>` in it would end the element, so `el` never puts a child into them (`raw_asset` does).
_RAW_TEXT = frozenset({"script", "style"})
_VOID = frozenset({"meta", "br", "hr", "img", "input", "link", "col", "wbr"})


class Html(str):
    """A string of markup that is safe to place as is (it was built by this module)."""

    __slots__ = ()


Child: TypeAlias = "str | Html | None | Iterable[Child]"
AttrValue: TypeAlias = "str | int | float | bool | None"


def escape(text: object) -> Html:
    """Text as HTML text: `<`, `>`, `&`, `"` and `'` become character references."""
    return Html(html.escape(str(text), quote=True))


def join(children: Iterable[Child]) -> Html:
    """Children side by side (plain strings escaped, `None` dropped, iterables flattened)."""
    out: list[str] = []
    _append(out, children)
    return Html("".join(out))


def _append(out: list[str], child: Child) -> None:
    if child is None:
        return
    if isinstance(child, Html):
        out.append(child)
    elif isinstance(child, str):
        out.append(html.escape(child, quote=True))
    else:
        for c in child:
            _append(out, c)


def _attrs(attrs: dict[str, AttrValue]) -> str:
    out = []
    for key, value in attrs.items():
        name = key.rstrip("_").replace("_", "-")  # class_ → class, aria_sort → aria-sort
        if not _NAME.match(name):
            raise ValueError(f"not an attribute name: {key!r}")
        if value is None or value is False:
            continue
        if value is True:
            out.append(f" {name}")
        else:
            out.append(f' {name}="{html.escape(str(value), quote=True)}"')
    return "".join(out)


def el(tag: str, *children: Child, **attrs: AttrValue) -> Html:
    """`<tag attrs>children</tag>`; attribute values and plain-string children are escaped."""
    if not _NAME.match(tag) or tag in _RAW_TEXT:
        raise ValueError(f"not an element el() builds: {tag!r}")
    if tag in _VOID:
        if any(c is not None for c in children):
            raise ValueError(f"<{tag}> has no content")
        return Html(f"<{tag}{_attrs(attrs)}>")
    return Html(f"<{tag}{_attrs(attrs)}>{join(children)}</{tag}>")


def raw_asset(tag: str, text: str) -> Html:
    """The page's own `<style>` or `<script>` (a constant of this package, never user text)."""
    if tag not in _RAW_TEXT or re.search(r"</(script|style)", text, re.IGNORECASE):
        raise ValueError(f"not a {tag} asset")
    return Html(f"<{tag}>{text}</{tag}>")


def document(head: Child, body: Child, *, lang: str = "en") -> Html:
    """The whole page, doctype first."""
    return Html(f'<!DOCTYPE html>\n<html lang="{html.escape(lang, quote=True)}">{el("head", head)}{el("body", body)}</html>\n')
