"""A small DOM of an HTML page, parsed with the standard library, for asserting what a page holds.

The tests read the HTML report the way a browser builds it (elements, attributes, text), not by
searching its text: an escaped `&lt;script&gt;` is text, a real `<script>` is an element.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@dataclass
class Node:
    tag: str
    attrs: dict[str, str] = field(default_factory=dict)
    children: list[Node | str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def walk(self) -> Iterator[Node]:
        yield self
        for c in self.children:
            if isinstance(c, Node):
                yield from c.walk()

    def all(self, tag: str | None = None, cls: str | None = None, where: Callable[[Node], bool] | None = None) -> list[Node]:
        return [n for n in self.walk() if (tag is None or n.tag == tag) and (cls is None or cls in n.classes()) and (where is None or where(n))]

    def one(self, tag: str | None = None, cls: str | None = None, where: Callable[[Node], bool] | None = None) -> Node:
        found = self.all(tag, cls, where)
        assert len(found) == 1, f"expected one <{tag} class={cls}>, found {len(found)}"
        return found[0]

    def by_id(self, ident: str) -> Node:
        return self.one(where=lambda n: n.attrs.get("id") == ident)


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document")
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v if v is not None else "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, {k: v if v is not None else "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return
        raise AssertionError(f"</{tag}> closes nothing")

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(page: str) -> Node:
    b = _Builder()
    b.feed(page)
    b.close()
    assert len(b.stack) == 1, f"unclosed elements: {[n.tag for n in b.stack[1:]]}"
    return b.root
