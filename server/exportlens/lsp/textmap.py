"""Carrying ranges from the text a run analysed to the text the editor has now.

A run analyses the file on disk; by the time its result arrives the user may have typed, or
the buffer may never have been saved. Rather than replaying every didChange (which full-sync
clients do not even describe), the two texts are compared line by line: a range whose lines lie
in an unchanged stretch moves with it; a range on an edited line is dropped until the next run.
A diagnostic is therefore never shown on the wrong line, and lines are only moved when their
text is byte-identical, so characters stay valid too.
"""

from __future__ import annotations

import bisect
import difflib
from dataclasses import dataclass

from exportlens.model import Position, Range


@dataclass
class LineMap:
    """Old line → new line for the lines both texts share unchanged."""

    identical: bool
    starts: list[int]  # old start line of each equal block, sorted
    blocks: list[tuple[int, int, int]]  # (old_start, new_start, length)

    def line(self, old: int) -> int | None:
        if self.identical:
            return old
        i = bisect.bisect_right(self.starts, old) - 1
        if i < 0:
            return None
        old_start, new_start, size = self.blocks[i]
        if old < old_start + size:
            return new_start + old - old_start
        return None

    def range(self, rng: Range) -> Range | None:
        """The range in the new text, or None when any line it spans was edited."""
        if self.identical:
            return rng
        start = self.line(rng.start.line)
        end = self.line(rng.end.line)
        if start is None or end is None or end - start != rng.end.line - rng.start.line:
            return None
        return Range(Position(start, rng.start.character), Position(end, rng.end.character))


def _lines(text: str) -> list[str]:
    return text.splitlines()


def line_map(old: str, new: str) -> LineMap:
    """Edits are local: the common head and tail are matched in linear time, and only the lines
    between them go through difflib (quadratic at worst: seconds on a 20,000-line file)."""
    if old == new:
        return LineMap(True, [], [])
    a, b = _lines(old), _lines(new)
    head = 0
    while head < len(a) and head < len(b) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < len(a) - head and tail < len(b) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    blocks = [(0, 0, head)] if head else []
    matcher = difflib.SequenceMatcher(None, a[head : len(a) - tail], b[head : len(b) - tail], autojunk=False)
    blocks += [(m.a + head, m.b + head, m.size) for m in matcher.get_matching_blocks() if m.size]
    if tail:
        blocks.append((len(a) - tail, len(b) - tail, tail))
    return LineMap(False, [blk[0] for blk in blocks], blocks)
