"""Frames in the worker: which belong to the user, live stacks, tracebacks, call sites, definitions.

Shared by `compile_watch` and `trace_watch`. A frame the user might own is one outside torch,
ExportLens, the logging/warnings machinery and frozen modules. Imports only torch and the
standard library.
"""

from __future__ import annotations

import ast
import linecache
import logging
import os
import re
import warnings
from types import FrameType
from typing import Any

import torch

from exportlens.worker import stacks
from exportlens.worker.paths import OWN_DIR

_TORCH_DIR = os.path.join(os.path.dirname(os.path.abspath(torch.__file__)), "")
_LOGGING_DIR = os.path.join(os.path.dirname(os.path.abspath(logging.__file__)), "")
_WARNINGS_FILE = os.path.abspath(warnings.__file__)

_RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<name>\w+?)_at_(?P<line>\d+)$")
_TB_FILE = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<name>.+?)\s*$')


def outside(path: str) -> bool:
    """A frame the user might own: not torch, not ExportLens, not a frozen/generated module."""
    full = os.path.abspath(path) if not path.startswith("<") else path
    return not (path.startswith("<") or full.startswith(_TORCH_DIR) or full.startswith(OWN_DIR) or full.startswith(_LOGGING_DIR) or full == _WARNINGS_FILE)


def resumed(name: str) -> dict[str, Any] | None:
    """The function a dynamo resume function continues (`torch_dynamo_resume_in_post_at_17`: `post`
    after its graph break at line 17), else None (docs/torch-facts.md §2.3)."""
    m = _RESUME.match(name or "")
    if not m:
        return None
    inner = resumed(m["name"])  # a resume function of a resume function still continues the same one
    return {"name": inner["name"] if inner else m["name"], "line": int(m["line"])}


def frame_json(frame: FrameType) -> dict[str, Any]:
    """A live frame as JSON, with the exact columns of its current instruction (3.11+); a resume
    function's frame is named by the function it continues."""
    code = frame.f_code
    resumes = resumed(code.co_name)
    out: dict[str, Any] = {"file": os.path.abspath(code.co_filename), "line": frame.f_lineno, "name": resumes["name"] if resumes else code.co_name}
    if stacks.where(code.co_filename) == "stdlib":
        out["where"] = "stdlib"  # not a library the user imported: the boundary logic skips it
    loc = linecache.getline(code.co_filename, frame.f_lineno).strip()
    if loc:
        out["loc"] = loc
    out.update(stacks.call_columns(frame))
    return out


def live_stack(start: FrameType | None) -> list[dict[str, Any]]:
    """The frames above `start` that are not torch or ExportLens, outermost first. A function that
    called its own resume function (after a graph break) is one frame: the resume function's line."""
    frames: list[dict[str, Any]] = []
    inner_resumes = False  # the frame kept last (the next one in) is a resume function
    frame = start
    while frame is not None:
        if outside(frame.f_code.co_filename):
            fr = frame_json(frame)
            if not (inner_resumes and frames and _same_function(fr, frames[-1])):  # else it only calls its resume function
                frames.append(fr)
                inner_resumes = resumed(frame.f_code.co_name) is not None
        frame = frame.f_back
    return list(reversed(frames))


def _same_function(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a["file"] == b["file"] and a["name"] == b["name"]


def summary_json(summary: Any) -> dict[str, Any]:
    """A `traceback.FrameSummary` dynamo kept (file, line, name, and its columns when they are one expression on that line)."""
    file = str(summary.filename)
    full = os.path.abspath(file) if not file.startswith("<") else file
    qualname = str(summary.name)
    name = qualname.rsplit(".", 1)[-1]
    resumes = resumed(name)
    out: dict[str, Any] = {"file": full, "line": int(summary.lineno or 0), "name": resumes["name"] if resumes else name, "qualname": qualname}
    if stacks.where(file) == "stdlib":
        out["where"] = "stdlib"
    source = linecache.getline(file, out["line"]).rstrip("\r\n")
    if source.strip():
        out["loc"] = source.strip()
    col, end_col = getattr(summary, "colno", None), getattr(summary, "end_colno", None)
    raw = source.encode()
    if isinstance(col, int) and isinstance(end_col, int) and 0 <= col < end_col <= len(raw):
        try:  # dynamo gives no end line: the columns count only when they span one expression of this line
            ast.parse(raw[col:end_col].decode(), mode="eval")
            out.update({"end_line": out["line"], "col": col, "end_col": end_col})
        except (SyntaxError, UnicodeDecodeError, ValueError):
            pass
    return out


def _caret_columns(file: str, line: int, caret: str) -> tuple[int, int] | None:
    """UTF-8 byte columns of a traceback caret line (`   ^^^^`) under `file:line`."""
    marks = caret.rstrip()
    body = marks.lstrip()
    if not body or set(body) - set("^~"):
        return None
    source = linecache.getline(file, line).rstrip("\r\n")
    if not source:
        return None
    indent = len(source) - len(source.lstrip())
    start = len(marks) - len(body) - 4 + indent
    end = len(marks) - 4 + indent
    if start < 0 or end > len(source) or end <= start:
        return None
    return len(source[:start].encode()), len(source[:end].encode())


def parse_traceback(lines: list[str]) -> list[dict[str, Any]]:
    """`File "p", line n, in f` entries (outermost first) with caret columns when shown."""
    frames: list[dict[str, Any]] = []
    i = 0
    while i < len(lines):
        m = _TB_FILE.match(lines[i])
        if not m:
            i += 1
            continue
        fr: dict[str, Any] = {"file": os.path.abspath(m["file"]) if not m["file"].startswith("<") else m["file"], "line": int(m["line"]), "name": m["name"]}
        if stacks.where(fr["file"]) == "stdlib":
            fr["where"] = "stdlib"
        i += 1
        if i < len(lines) and not _TB_FILE.match(lines[i]) and lines[i].strip():
            fr["loc"] = lines[i].strip()
            i += 1
            if i < len(lines) and lines[i].strip() and set(lines[i].strip()) <= set("^~"):
                cols = _caret_columns(fr["file"], fr["line"], lines[i])
                if cols is not None:
                    fr.update({"end_line": fr["line"], "col": cols[0], "end_col": cols[1]})
                i += 1
        frames.append(fr)
    return frames


def definition(obj: Any) -> dict[str, Any] | None:
    """Where the compiled code is defined: a function's code, or a module's `forward`."""
    owner = getattr(obj, "__self__", None)
    if isinstance(owner, torch.nn.Module) and getattr(obj, "__name__", "") in ("_call_impl", "__call__"):
        obj = owner  # `module.compile()` compiles the bound `_call_impl`
    if isinstance(obj, torch.nn.Module):
        obj = getattr(type(obj), "forward", None)
    obj = getattr(obj, "__func__", obj)
    while hasattr(obj, "__wrapped__") and not hasattr(obj, "__code__"):
        obj = obj.__wrapped__
    code = getattr(obj, "__code__", None)
    if code is None:
        return None
    return {"file": os.path.abspath(code.co_filename), "line": code.co_firstlineno, "name": code.co_name}


def call_site(frame: FrameType | None) -> tuple[str, int]:
    """The innermost frame outside torch/ExportLens: who called `torch.compile`."""
    first = frame
    while frame is not None:
        if outside(frame.f_code.co_filename):
            return os.path.abspath(frame.f_code.co_filename), frame.f_lineno
        frame = frame.f_back
    if first is None:
        return "<unknown>", 1
    return os.path.abspath(first.f_code.co_filename), first.f_lineno
