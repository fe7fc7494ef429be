"""`exportlens check --shard K/N`: a stable part of a project's documents for one of N machines.

A document's shard is the hash of its path relative to its project root (not Python's `hash`,
which changes per process; not the checkout's absolute path, which changes per machine), so every
machine agrees, every document is in exactly one shard, and a new model file moves no other.
The unit is the document, not the target: one job runs all of a file's targets (one execution
of the script), so splitting a file's targets over two shards would run it twice. The shards'
JSON reports combine into one page with `exportlens report` (`report/jsonreport.merge`).
"""

from __future__ import annotations

import hashlib
import os

from exportlens import project


def parse(text: str) -> tuple[int, int]:
    """`K/N` as (K, N), 1 ≤ K ≤ N; ValueError says what is wrong."""
    k, sep, n = text.partition("/")
    if not sep or not k.strip().isdigit() or not n.strip().isdigit():
        raise ValueError(f"--shard must be K/N (this machine's part K of N, e.g. 1/4), got {text!r}")
    kk, nn = int(k), int(n)
    if not 1 <= kk <= nn:
        raise ValueError(f"--shard K/N needs 1 <= K <= N, got {text!r}")
    return kk, nn


def shard_of(path: str, n: int) -> int:
    """The shard (1..n) a document belongs to."""
    full = os.path.abspath(path)
    rel = os.path.relpath(full, project.find_root(full)).replace(os.sep, "/")
    return int(hashlib.sha256(rel.encode("utf-8")).hexdigest()[:16], 16) % n + 1


def in_shard(path: str, shard: tuple[int, int]) -> bool:
    k, n = shard
    return shard_of(path, n) == k
