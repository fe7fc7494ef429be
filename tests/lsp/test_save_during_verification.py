"""Saving while fixes are being verified: the run of the new text preempts the verification at once.

The model here stamps a line into `runs.log` as its first statement, in every job that runs it
(the run, and each verification job): which text it is (`SAVE`), its pid and its start time (so
the test finds each job's process in /proc) and the wall clock. Its forward takes a second, so verifying its three
fixes takes several: a save lands while they run, as it does in an editor on a real model.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsp_helpers import WAIT, change_doc, copy_examples, field_of, init_params, next_publish, open_doc, save_doc, server_config, spans, wait_for
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = [pytest.mark.torch, pytest.mark.asyncio(loop_scope="module"), pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")]

SLOW_GUARD = '''"""A data-dependent guard in a model whose every export takes a second."""

import os
import time

SAVE = {save}
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "runs.log"), "a") as _log, open("/proc/self/stat") as _stat:
    _log.write(f"{{SAVE}} {{os.getpid()}} {{_stat.read().rsplit(')', 1)[1].split()[19]}} {{time.time()}}\\n")

import torch


class Threshold(torch.nn.Module):
    def forward(self, x, y):
        time.sleep(1)
        n = x.item()
        if n > 2:
            return y * 2
        return y - 1


model = Threshold()
example_args = (torch.tensor(5), torch.ones(3))
'''
GUARD = [(16, 11, 16, 16, "data-dependent-guard")]  # `n > 2` (0-based line 16)
STATUSES = ["breaks", "export-passes", "export-passes"]  # the torch.cond rewrite, _check(n > 2), _check(n <= 2)


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = copy_examples(tmp_path_factory.mktemp("preempt"))
    for name in ("saved", "other"):
        (ws / name).mkdir()
        (ws / name / "guard.py").write_text(SLOW_GUARD.format(save=0))
    return ws


@pytest_lsp.fixture(scope="module", config=server_config())
async def client(lsp_client: LanguageClient, ws: Path):
    await asyncio.wait_for(lsp_client.initialize_session(init_params(ws, settings={"verifyBudgetSeconds": 300})), 30)
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), 30)


def verifications(client: LanguageClient, uri: str, state: str, since: float = 0.0) -> list[Any]:
    return [p for t, p in client.verifications if t >= since and field_of(p, "uri") == uri and field_of(p, "state") == state]  # type: ignore[attr-defined]


def jobs(folder: Path, save: int) -> list[tuple[int, str, float]]:
    """(pid, start time, wall clock) of every job that ran this text of the model, in the order they started."""
    log = folder / "runs.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return [(int(pid), start, float(now)) for text, pid, start, now in (line.split() for line in lines) if text == str(save)]


def alive(pid: int, start: str) -> bool:
    """That very process (not a later one with its pid) exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[19] == start and fields[0] != "Z"


async def verifying(client: LanguageClient, folder: Path, uri: str, since: float) -> None:
    """Wait until the fixes of the text with SAVE = 0 are being verified, in jobs that run now."""
    await wait_for(lambda: verifications(client, uri, "started", since), WAIT, "verification to start")
    # the run on open stamped once; each verification job stamps as it starts
    running = await wait_for(lambda: jobs(folder, 0)[1:], 120, "a verification job to run the model")
    assert all(alive(pid, start) for pid, start, _ in running), "verification jobs end only when preempted"


def survivors(folder: Path, before: float) -> list[tuple[int, str, float]]:
    """The verification jobs of the text with SAVE = 0 that started before `before` (wall clock)
    and still run (the first line is the run's). A job sent just before the server saw the edit
    stamps a moment later: `before` is when the new run's publish arrived, a second after that."""
    return [job for job in jobs(folder, 0)[1:] if job[2] < before and alive(job[0], job[1])]


async def test_a_save_during_verification_kills_its_jobs_and_publishes_the_new_version(client: LanguageClient, ws: Path) -> None:
    folder = ws / "saved"
    since = time.monotonic()
    uri = open_doc(client, folder / "guard.py")
    pub = await next_publish(client, uri, since)
    assert (pub.version, spans(pub.diagnostics)) == (1, GUARD)
    await verifying(client, folder, uri, since)

    edited = time.monotonic()
    assert change_doc(client, uri, SLOW_GUARD.format(save=1)) == 2  # the edit already ends the verification
    saved = time.monotonic()
    save_doc(client, uri)
    pub = await next_publish(client, uri, saved, timeout=120)
    published, published_wall = max(t for t, p in client.publishes if p.uri == uri), time.time()  # type: ignore[attr-defined]
    assert (pub.version, spans(pub.diagnostics)) == (2, GUARD)
    assert survivors(folder, published_wall) == [], "verification jobs of the old text still running"
    (cancelled,) = verifications(client, uri, "cancelled", edited)
    assert field_of(cancelled, "reason") == "edited"
    assert verifications(client, uri, "done") == []  # the old text's verification never finished

    # verification resumes once the new run is published, for the new text only
    (started,) = await wait_for(lambda: verifications(client, uri, "started", published), WAIT, "verification of the new text")
    assert field_of(started, "fixes") == 3
    (done,) = await wait_for(lambda: verifications(client, uri, "done"), 300, "verification of the new text to finish")
    assert (list(field_of(done, "statuses")), list(field_of(done, "uris"))) == (STATUSES, [uri])
    assert [job for job in jobs(folder, 0) if job[2] >= published_wall] == [], "a job of the old text started after the new run"


async def test_a_run_of_another_file_preempts_verification_which_resumes_after_it(client: LanguageClient, ws: Path) -> None:
    folder = ws / "other"
    since = time.monotonic()
    uri = open_doc(client, folder / "guard.py")
    await next_publish(client, uri, since)
    await verifying(client, folder, uri, since)

    opened = time.monotonic()
    other = open_doc(client, ws / "data_dependent" / "item_branch.py")  # its run preempts the verification
    pub = await next_publish(client, other, opened)
    published, published_wall = max(t for t, p in client.publishes if p.uri == other), time.time()  # type: ignore[attr-defined]
    assert spans(pub.diagnostics) == [(8, 11, 8, 16, "data-dependent-guard")]
    (cancelled,) = verifications(client, uri, "cancelled", opened)
    assert field_of(cancelled, "reason") == "preempted by a run"
    assert survivors(folder, published_wall) == []  # it starts over only once no run is in flight
    # the text did not change: its verification starts over once no run is in flight, and finishes
    await wait_for(lambda: verifications(client, uri, "started", published), WAIT, "the preempted verification to start over")
    (done,) = await wait_for(lambda: verifications(client, uri, "done"), 300, "the preempted verification to finish")
    assert list(field_of(done, "statuses")) == STATUSES
    await wait_for(lambda: verifications(client, other, "done"), 300, "the other file's verification")
    actions = await asyncio.wait_for(
        client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=types.Range(start=types.Position(line=16, character=11), end=types.Position(line=16, character=16)),
                context=types.CodeActionContext(diagnostics=[], only=[types.CodeActionKind.QuickFix]),
            )
        ),
        10,
    )
    assert [a.title.rsplit(" — ", 1)[-1] for a in actions or [] if isinstance(a, types.CodeAction)][:3] == [
        "export passes ✓",
        "export passes ✓",
        "breaks the target",
    ]
