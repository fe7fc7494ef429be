"""Over LSP: each problem inside the example library is its own diagnostic on the project's
boundary line, with the library's own lines (the real site-packages path of `minilib`) as
relatedInformation, and the hover shows the chain of frames from the project into the library."""

from __future__ import annotations

import asyncio
import importlib.util
import shutil
import time
from pathlib import Path

import pytest
import pytest_lsp
from lsp_helpers import EXAMPLES, WAIT, init_params, next_publish, open_doc, server_config
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = [pytest.mark.torch, pytest.mark.asyncio(loop_scope="module")]

SPEC = importlib.util.find_spec("minilib")
if SPEC is None or SPEC.origin is None:
    pytest.fail("the example library minilib is not installed in this venv: run `make .venv/.installed`", pytrace=False)
MINILIB = Path(SPEC.origin).parent
BOUNDARY = (12, 16, 12, 37)  # `self.detector(images)` in detect.py


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("lsp-library") / "library_project"
    shutil.copytree(EXAMPLES / "library_project", ws, ignore=shutil.ignore_patterns("__pycache__", "libsrc"))
    return ws


@pytest_lsp.fixture(scope="module", config=server_config())
async def client(lsp_client: LanguageClient, ws: Path):
    await asyncio.wait_for(lsp_client.initialize_session(init_params(ws)), 30)
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), 30)


def rng(r: types.Range) -> tuple[int, int, int, int]:
    return (r.start.line, r.start.character, r.end.line, r.end.character)


def related(d: types.Diagnostic) -> list[tuple[str, tuple[int, int, int, int]]]:
    return [(r.location.uri, rng(r.location.range)) for r in d.related_information or []]


async def test_each_library_problem_on_the_boundary_with_the_library_line(client: LanguageClient, ws: Path) -> None:
    since = time.monotonic()
    uri = open_doc(client, ws / "detect.py")
    pub = await next_publish(client, uri, since, timeout=WAIT + 60)  # a cold worker, then three problems
    got = sorted((rng(d.range), str(d.code), related(d)) for d in pub.diagnostics)
    detector, postprocess, ops = ((MINILIB / f).as_uri() for f in ("detector.py", "postprocess.py", "ops.py"))
    assert got == sorted(
        [
            (BOUNDARY, "data-dependent-guard", [(detector, (16, 11, 16, 30))]),
            (BOUNDARY, "data-dependent-guard", [(postprocess, (7, 7, 7, 26)), (detector, (19, 15, 19, 61))]),
            (BOUNDARY, "missing-fake-kernel", [(detector, (15, 16, 15, 36)), (ops, (6, 4, 6, 16))]),
        ]
    )
    assert "site-packages" in detector
    guard = next(d for d in pub.diagnostics if related(d)[0][0] == postprocess)
    assert "in `limit_detections`" in guard.related_information[0].message  # type: ignore[index]
    assert "`num_kept > max_keep`" in guard.message

    hover = await asyncio.wait_for(
        client.text_document_hover_async(
            types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=12, character=20))
        ),
        10,
    )
    assert hover is not None
    text = hover.contents.value  # type: ignore[union-attr]
    assert "**From your code into the library minilib**" in text
    # all three problems on that range, each with its own chain of frames
    assert text.count("**From your code into the library minilib**") == 3
    assert "1. your code `detect.py:13`: `boxes = self.detector(images)`\n2. `TinyDetector.forward` `detector.py:17`: `if boxes.shape[0] == 0:`\n" in text
    assert (
        "1. your code `detect.py:13`: `boxes = self.detector(images)`\n2. `TinyDetector.forward` `detector.py:20`: "
        "`kept = limit_detections(boxes, scores, self.max_keep)`\n"
        "3. `limit_detections` `postprocess.py:8`: `if num_kept > max_keep:`\n"
    ) in text
    assert "1. your code `detect.py:13`: `boxes = self.detector(images)`\n2. `TinyDetector.forward` `detector.py:16`: `boxes = decode_boxes(images)`\n" in text
    assert "- guard in the library minilib: `num_kept > 2`" in text  # the library's guard, not the user's
    assert "guard in your code" not in text


async def test_the_progress_report_shows_the_phase(client: LanguageClient, ws: Path) -> None:
    # the run of the previous test reported its phases; find that run's finished progress
    runs = [r for r in client.progress_reports.values() if r and isinstance(r[-1], types.WorkDoneProgressEnd)]
    assert runs, "no finished progress"
    messages = [v.message for v in runs[0] if isinstance(v, types.WorkDoneProgressReport)]
    assert messages[:2] == ["detect.py: importing", "model: exporting"]
    assert messages[-1] == "model: problems (1/1)"
