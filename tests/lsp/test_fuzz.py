"""Fuzz: random and truncated documents, random edits and malformed requests. The server never
dies and answers every request. (Run mode `manual`, so no user code runs per example; the
planning, hover, CodeLens and code-action paths all see the junk.)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsp_helpers import EXAMPLES, RawServer

pytestmark = pytest.mark.torch

EXAMPLE_TEXTS = [p.read_text() for p in sorted(EXAMPLES.rglob("*.py"))]

json_scalars = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=20)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)
positions = st.fixed_dictionaries({"line": st.integers(-2, 60), "character": st.integers(-2, 200)})
ranges = st.fixed_dictionaries({"start": positions, "end": positions})
documents = st.text(max_size=400) | st.builds(lambda t, n: t[:n], st.sampled_from(EXAMPLE_TEXTS), st.integers(0, 2000))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RawServer, Path]]:
    root = tmp_path_factory.mktemp("fuzz")
    (root / "pyproject.toml").write_text("[tool.exportlens]\ntargets = 7\n")  # a broken config too
    srv = RawServer(root)
    srv.initialize(root, trusted=True, settings={"run": "manual"})
    yield srv, root
    srv.close()
    assert srv.proc.returncode == 0


def _uri(root: Path, name: str) -> str:
    return (root / name).as_uri()


ops = st.one_of(
    st.tuples(st.just("open"), documents),
    st.tuples(st.just("change_full"), documents),
    st.tuples(st.just("change_range"), st.tuples(ranges, st.text(max_size=30))),
    st.tuples(st.just("save"), st.none()),
    st.tuples(st.just("hover"), positions),
    st.tuples(st.just("lens"), st.none()),
    st.tuples(st.just("action"), st.tuples(ranges, json_values)),
    st.tuples(st.just("resolve"), json_values),
    st.tuples(st.just("command"), st.lists(json_values, max_size=2)),
    st.tuples(
        st.just("junk_request"),
        st.tuples(
            st.sampled_from(
                [
                    "textDocument/hover",
                    "textDocument/codeAction",
                    "textDocument/codeLens",
                    "codeAction/resolve",
                    "workspace/executeCommand",
                    "initialize",
                    "exportlens/unknown",
                ]
            ),
            json_values,
        ),
    ),
    st.tuples(
        st.just("junk_notification"),
        st.tuples(
            st.sampled_from(
                [
                    "textDocument/didOpen",
                    "textDocument/didChange",
                    "textDocument/didSave",
                    "workspace/didChangeConfiguration",
                    "$/cancelRequest",
                    "window/workDoneProgress/cancel",
                ]
            ),
            json_values,
        ),
    ),
    st.tuples(st.just("junk_bytes"), st.binary(min_size=1, max_size=40)),
)


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(name=st.sampled_from(["a.py", "sub dir/ü.py", "b.txt"]), steps=st.lists(ops, min_size=1, max_size=8))
def test_server_survives_and_answers(server: tuple[RawServer, Path], name: str, steps: list[tuple[str, Any]]) -> None:
    srv, root = server
    uri = _uri(root, name)
    version = 1
    pending: list[Any] = []
    for op, arg in steps:
        doc = {"uri": uri}
        if op == "open":
            srv.notify("textDocument/didOpen", {"textDocument": {**doc, "languageId": "python", "version": version, "text": arg}})
        elif op == "change_full":
            version += 1
            srv.notify("textDocument/didChange", {"textDocument": {**doc, "version": version}, "contentChanges": [{"text": arg}]})
        elif op == "change_range":
            version += 1
            rng, text = arg
            srv.notify("textDocument/didChange", {"textDocument": {**doc, "version": version}, "contentChanges": [{"range": rng, "text": text}]})
        elif op == "save":
            srv.notify("textDocument/didSave", {"textDocument": doc})
        elif op == "hover":
            pending.append(srv.request("textDocument/hover", {"textDocument": doc, "position": arg}))
        elif op == "lens":
            pending.append(srv.request("textDocument/codeLens", {"textDocument": doc}))
        elif op == "action":
            rng, data = arg
            diag = {"range": rng, "message": "m", "source": "exportlens", "data": data}
            pending.append(srv.request("textDocument/codeAction", {"textDocument": doc, "range": rng, "context": {"diagnostics": [diag]}}))
        elif op == "resolve":
            pending.append(srv.request("codeAction/resolve", {"title": "t", "data": arg}))
        elif op == "command":
            pending.append(srv.request("workspace/executeCommand", {"command": "exportlens.saveOpProfiles", "arguments": arg}))
        elif op == "junk_request":
            method, params = arg
            pending.append(srv.request(method, params))
        elif op == "junk_notification":
            srv.notify(*arg)
        elif op == "junk_bytes":
            try:
                json.loads(arg)
                continue  # valid JSON by chance: not what this step is about
            except ValueError:
                srv.send_bytes(arg)
                pending.append(None)  # answered with a parse error (id null)
    for rid in pending:
        got = srv.wait_response(rid, 15)
        assert ("result" in got) != ("error" in got)
    assert srv.proc.poll() is None
