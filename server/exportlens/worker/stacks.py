"""The whole Python stack at the moment torch records a problem, and the problems as they come.

torch keeps 3 frames of a draft-export failure (`user_stack`, docs/torch-facts.md §1.2): inside a library
the project's own line is gone. The job runs in the same process as torch, so a handler on
torch's structured-trace logger sees each record while the user's and the library's frames are
still live. It keeps that stack for the failure (matched by identity with the report's data) and
streams the failure at once, so a job stopped by its deadline still reports what torch found.
Imports only torch and the standard library.
"""

from __future__ import annotations

import json
import linecache
import logging
import os
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import torch

from exportlens.worker.paths import OWN_DIR, is_stdlib

TRACE_LOGGER = "torch.__trace"
# structured-trace key → draft export's FailureType name (torch/export/_draft_export.py)
FAILURE_KEYS = {
    "propagate_real_tensors_provenance": "DATA_DEPENDENT_ERROR",
    "guard_added": "GUARD_ADDED",
    "missing_fake_kernel": "MISSING_FAKE_KERNEL",
    "mismatched_fake_kernel": "MISMATCHED_FAKE_KERNEL",
}
MAX_FRAMES = 60

_TORCH_DIR = os.path.join(os.path.dirname(os.path.abspath(torch.__file__)), "")
_LOGGING_DIR = os.path.join(os.path.dirname(os.path.abspath(logging.__file__)), "")


def where(path: str | None) -> str | None:
    """What owns a frame's file: "torch", "exportlens", "stdlib", "generated", or None (user/library)."""
    if not path:
        return "generated"
    if path.startswith("<"):
        return "generated"
    full = os.path.abspath(path)
    if full.startswith(_TORCH_DIR):
        return "torch"
    if full.startswith(OWN_DIR) or full.startswith(_LOGGING_DIR):
        return "exportlens"  # our own handler's frames (logging calls it)
    if is_stdlib(full):
        return "stdlib"
    return None


def frame_json(frame: FrameType) -> dict[str, Any]:
    """A live frame: file, line, function, the source line, and the current call's columns (3.11+)."""
    code = frame.f_code
    file = os.path.abspath(code.co_filename) if not code.co_filename.startswith("<") else code.co_filename
    out: dict[str, Any] = {"file": file, "line": frame.f_lineno, "name": code.co_name, "qualname": getattr(code, "co_qualname", code.co_name)}
    out["loc"] = linecache.getline(code.co_filename, frame.f_lineno).strip() or None
    out.update(call_columns(frame))
    return out


def call_columns(frame: FrameType) -> dict[str, int]:
    """The current call's end line and columns (3.11's co_positions), when they are on the frame's line."""
    code = frame.f_code
    try:
        line, end_line, col, end_col = list(code.co_positions())[frame.f_lasti // 2]
    except (AttributeError, IndexError, ValueError):
        return {}
    if line == frame.f_lineno and end_line is not None and col is not None and end_col is not None:
        return {"end_line": end_line, "col": col, "end_col": end_col}
    return {}


def python_stack(start: FrameType | None) -> list[dict[str, Any]]:
    """Every frame above `start` that is not torch's or ExportLens's, outermost first; the
    stdlib ones are kept but marked (`where`), so the reader can skip them."""
    frames: list[dict[str, Any]] = []
    frame = start
    while frame is not None and len(frames) < MAX_FRAMES:
        owner = where(frame.f_code.co_filename)
        if owner in (None, "stdlib"):
            fr = frame_json(frame)
            if owner:
                fr["where"] = owner
            frames.append(fr)
        frame = frame.f_back
    return list(reversed(frames))


def _dedup_key(key: str, data: dict[str, Any]) -> str:
    """The key draft export deduplicates a record by (`LogRecord._hash`), so one failure = one key."""
    if key == "missing_fake_kernel":
        return f"{key}:{data.get('op')}"
    if key == "mismatched_fake_kernel":
        return f"{key}:{data.get('op')}:{data.get('reason')}"
    return f"{key}:{json.dumps(data.get('user_stack'), default=str, sort_keys=True)}"


class FailureWatch(logging.Handler):
    """On torch's structured-trace logger for one draft export: the live stack of each failure.

    `on_failure(kind, data, stack)` is called once per distinct failure, as torch records it.
    Guards added (`guard_added`) count only once draft export retried with Dim.AUTO after a
    constraint violation, as in its own report.
    """

    def __init__(self, on_failure: Callable[[str, dict[str, Any], list[dict[str, Any]]], None]) -> None:
        super().__init__(logging.DEBUG)
        self.on_failure = on_failure
        self.stacks: dict[int, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
        self.seen: set[str] = set()
        self.retrying = False

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._take(record)
        except Exception:  # a bug of ours must never break the user's export
            pass

    def _take(self, record: logging.LogRecord) -> None:
        metadata = getattr(record, "metadata", None)
        if not isinstance(metadata, dict):
            return
        for key, kind in FAILURE_KEYS.items():
            data = metadata.get(key)
            if not isinstance(data, dict):
                continue
            if key == "guard_added" and (not self.retrying or not data.get("symbol_to_sources") or data.get("prefix") == "runtime_assert"):
                continue
            dedup = _dedup_key(key, data)
            if dedup in self.seen:
                return
            self.seen.add(dedup)
            stack = python_stack(sys._getframe(1))
            self.stacks[id(data)] = (data, stack)  # the report's FailureReport.data is this dict
            self.on_failure(kind, data, stack)
            return

    def stack_of(self, data: Any) -> list[dict[str, Any]] | None:
        found = self.stacks.get(id(data))
        return found[1] if found is not None and found[0] is data else None

    def __enter__(self) -> FailureWatch:
        logging.getLogger(TRACE_LOGGER).addHandler(self)
        self._patch_retry()
        return self

    def __exit__(self, *exc: Any) -> None:
        logging.getLogger(TRACE_LOGGER).removeHandler(self)
        self._unpatch_retry()

    def _patch_retry(self) -> None:
        """Draft export calls `_export` a second time only to retry a constraint violation."""
        try:
            from torch.export import _draft_export
        except ImportError:
            self._module = None
            return
        self._module = _draft_export
        original = self._original = getattr(_draft_export, "_export", None)
        if original is None:
            return
        calls = [0]

        def counted(*args: Any, **kwargs: Any) -> Any:
            calls[0] += 1
            self.retrying = calls[0] > 1
            return original(*args, **kwargs)

        _draft_export._export = counted  # type: ignore[attr-defined]

    def _unpatch_retry(self) -> None:
        module = getattr(self, "_module", None)
        if module is not None and getattr(self, "_original", None) is not None:
            module._export = self._original
