"""The HTML report of real runs: `check --format html`, `exportlens report`, `pytest --exportlens-html`
under pytest-xdist, and markup in a model's source and in an exception, which must stay text.

The page is opened in a real browser by the e2e run (tests/e2e/htmlReport.ts); here it is read
as the parser of a browser builds it (tests/html_dom.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from html_dom import Node, parse
from test_cli import cli
from test_pytest_plugin import _pytest

pytestmark = pytest.mark.torch

HOSTILE = ROOT / "tests/fixtures/html_report"


def _html(out: subprocess.CompletedProcess[str]) -> Node:
    assert out.stdout.startswith("<!DOCTYPE html>\n"), out.stderr[-3000:]
    return parse(out.stdout)


def _findings(dom: Node) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """Each finding's place and code, and its fixes' titles and outcomes."""
    return [
        (
            a.one("a", "where").text(),
            a.attrs["data-filter-code"],
            [(f.one("span", "fix-title").text(), f.attrs["data-outcome"]) for f in a.all("div", "fix")],
        )
        for a in dom.all("article", "finding")
    ]


def _no_injected_markup(dom: Node) -> None:
    assert len(dom.all("script")) == 1 and not dom.all("img") and not dom.all("textarea")
    assert not [n for n in dom.walk() if any(k.startswith("on") for k in n.attrs)]
    assert not dom.all("b", where=lambda n: n.text() in ("bold", "never"))


def test_check_format_html_is_the_page_of_its_json_report(tmp_path: Path) -> None:
    lib = ("examples/library_project/detect.py", "examples/library_project/tracker.py", "examples/library_project/compiled.py")
    page = cli("check", *lib, "--format", "html")
    assert page.returncode == 1  # problems found, as with every format
    direct = _html(page)
    out = cli("check", *lib, "--format", "json")
    (tmp_path / "report.json").write_text(out.stdout)
    later = cli("report", str(tmp_path / "report.json"))
    assert later.returncode == 0 and later.stderr == ""
    assert _findings(_html(later)) == _findings(direct)
    assert direct.by_id("causes").text() == _html(later).by_id("causes").text()
    shared = [(c.one("a", "where").text(), c.attrs["data-targets"]) for c in direct.by_id("causes").one("tbody").all("tr")]
    assert shared[:3] == [("minilib/detector.py:16", "2"), ("minilib/detector.py:17", "2"), ("minilib/postprocess.py:8", "2")]
    fake = next(f for f in _findings(direct) if f[0] == "tracker.py:15:22" and f[1] == "missing-fake-kernel")
    assert fake[2] == [("Register a fake kernel for the library op minilib::decode_boxes in this file (from the shapes draft_export observed)", "fixes-this")]
    facts = {d.one("dt").text(): d.one("dd").text() for d in direct.one("dl", "facts").all("div")}
    assert facts["command"] == "exportlens check " + " ".join(lib) and facts["torch"] == "2.13.0+cpu"


def test_report_says_plainly_what_it_cannot_render(tmp_path: Path) -> None:
    missing = cli("report", str(tmp_path / "nope.json"))
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.startswith(f"exportlens: error: {tmp_path / 'nope.json'}: cannot read it:")
    sarif = tmp_path / "x.sarif"
    sarif.write_text(cli("check", "examples/clean", "--format", "sarif").stdout)
    out = cli("report", str(sarif))
    assert out.returncode == 2 and "this is a SARIF log; render the report of `exportlens check --format json` instead" in out.stderr
    doc = cli("check", "examples/clean", "--format", "json").stdout
    env = {**os.environ, "PYTHONPATH": str(ROOT / "server")}
    piped = subprocess.run([sys.executable, "-m", "exportlens", "report", "-"], input=doc, capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert piped.returncode == 0 and parse(piped.stdout).one("p", "verdict").text() == "No problems in 1 target"


def test_markup_in_a_source_file_and_in_an_exception_stays_text() -> None:
    out = cli("check", str(HOSTILE.relative_to(ROOT)), "--format", "html")
    assert out.returncode == 1
    dom = _html(out)
    _no_injected_markup(dom)
    guard = next(a for a in dom.all("article", "finding") if a.attrs["data-filter-code"] == "data-dependent-guard")
    lines = {n.attrs["data-line"]: n.text() for n in guard.one("figure", "excerpt").all("span", "l")}
    assert lines["11"] == "        if n > 0 and BANNER != \"<b>never</b>\":  # <script>window.__exportlens_pwned = 'comment'</script>"
    assert guard.one("figure", "excerpt").one("span", "ul").text() == 'n > 0 and BANNER != "<b>never</b>"'
    raised = next(a for a in dom.all("article", "finding") if a.attrs["data-filter-code"] == "export-error")
    assert "ValueError: <script>window.__exportlens_pwned = 'exception'</script><b onmouseover=alert(1)>bold</b> & </textarea>" in raised.text()


def test_pytest_xdist_workers_results_make_one_page(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    out = _pytest(
        "--exportlens",
        "-n",
        "2",
        f"--exportlens-html={page}",
        "examples/library_project/detect.py",
        "examples/library_project/tracker.py",
        "examples/library_project/compiled.py",
        "tests/fixtures/html_report",
        "tests/fixtures/notebook",
        "-v",
    )
    assert out.returncode == 1, out.stdout[-3000:] + out.stderr[-3000:]
    assert "[gw0]" in out.stdout and "[gw1]" in out.stdout  # both workers ran items
    assert f"exportlens: HTML report {page}: 10 problems in 6 targets" in out.stdout
    dom = parse(page.read_text(encoding="utf-8"))
    _no_injected_markup(dom)
    rows = dom.by_id("target-table").one("tbody").all("tr")
    assert sorted((r.all("td")[0].one("a").text(), r.attrs["data-status"]) for r in rows) == [
        ("examples/library_project/compiled.py", "problems"),
        ("examples/library_project/detect.py", "problems"),
        ("examples/library_project/tracker.py", "problems"),
        ("tests/fixtures/html_report/markup_in_exception.py", "error"),
        ("tests/fixtures/html_report/markup_in_source.py", "problems"),
        ("tests/fixtures/notebook/threshold.ipynb · cell 4", "problems"),
    ]
    facts = {d.one("dt").text(): d.one("dd").text() for d in dom.one("dl", "facts").all("div")}
    assert facts["combined"] == "2 pytest-xdist workers"
    postprocess = next(c for c in dom.by_id("causes").one("tbody").all("tr") if c.one("a", "where").text() == "minilib/postprocess.py:8")
    assert [a.text() for a in postprocess.all("a", "target-link")] == [
        "examples/library_project/detect.py · model",
        "examples/library_project/tracker.py · model",
    ]
    cell = next(a for a in dom.all("article", "finding") if "threshold.ipynb" in a.one("a", "where").text())
    assert cell.one("a", "where").text() == "tests/fixtures/notebook/threshold.ipynb · cell 2:4:12"
    assert cell.one("figure", "excerpt").one("span", "hit").attrs["data-line"] == "4" and cell.one("span", "ul").text() == "n > 2"
    assert [t.text() for t in cell.all("span", "assumption")] == ["assumption: n > 2", "assumption: n <= 2"]
    guard = next(a for a in dom.all("article", "finding") if "markup_in_source.py" in a.one("a", "where").text())
    outcomes = {f.one("span", "fix-title").text(): f.attrs["data-outcome"] for f in guard.all("div", "fix")}
    assert outcomes["Add torch._check(n > 0.0) — assumes n > 0.0 for every input; inputs with n ≤ 0.0 will raise"] == "export-passes"


def test_the_html_option_needs_exportlens() -> None:
    out = _pytest("--exportlens-html=x.html", "examples/clean")
    assert out.returncode == 4 and "--exportlens-html needs --exportlens" in out.stderr


def test_the_json_report_carries_what_the_page_needs() -> None:
    doc = json.loads(cli("check", "examples/library_project/tracker.py", "--format", "json").stdout)
    assert set(doc) == {"version", "torch", "targets", "diagnostics", "sources", "run"}
    postprocess = next(d for d in doc["diagnostics"] if d["data"].get("library_frame", {}).get("function") == "limit_detections")
    assert postprocess["owner"] == str(ROOT / "examples/library_project/tracker.py")
    assert postprocess["data"]["library_frame"]["line"] == 8
