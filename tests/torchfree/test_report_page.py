"""The HTML report from recorded runs (no torch): root causes across targets, underlined ranges,
fix diffs, the JSON report it is rendered from, and hostile text that must stay text.

The browser test (tests/e2e/htmlReport.ts) opens pages of real runs in Chromium; these tests pin
the page's content exactly and fast.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import io
import json
import re
import tokenize
from pathlib import Path
from typing import Any

import pytest
from html_dom import Node, parse
from replay import CASES_BY_NAME, EXAMPLES, ROOT, replay_sync

from exportlens import codes
from exportlens import fix_registry as registry
from exportlens.engine import FileResult
from exportlens.model import EXPORT_PASSES, Diagnostic, Fix, Range, Related, Report, TextEdit, Verification
from exportlens.report import jsonreport, markup, page

pytestmark = pytest.mark.quick

CASES = ["library_project__detect", "library_project__tracker", "data_dependent__item_branch", "two_files__model", "compile__branch", "clean__model"]
REPORT = ROOT / "server" / "exportlens" / "report"


def _replayed() -> tuple[Report, list[FileResult]]:
    results = [replay_sync(CASES_BY_NAME[name])[0] for name in CASES]
    report = Report("2.13.0+cpu", [t for r in results for t in r.targets], [d for r in results for d in r.diagnostics])
    registry.attach(report.diagnostics)
    return report, results


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    report, results = _replayed()
    built = jsonreport.build(report, results, run=jsonreport.run_facts("exportlens check examples/", 1.5))
    return json.loads(json.dumps(built))  # what a file holds


@pytest.fixture(scope="module")
def dom(doc: dict[str, Any]) -> Node:
    return parse(page.render(jsonreport.parse(doc)))


def _finding(dom: Node, file: str, line: int, code: str) -> Node:
    """The finding article placed on file:line (1-based) with this code."""

    def at(n: Node) -> bool:
        if n.tag != "article" or "finding" not in n.classes():
            return False
        where = n.one("a", "where").text()
        return where.startswith(f"{file}:{line}:") and n.attrs["data-filter-code"] == code

    return dom.one(where=at)


def test_the_json_report_carries_data_owners_and_the_lines_it_shows(doc: dict[str, Any]) -> None:
    assert doc["version"] == 2 and set(doc) == {"version", "torch", "targets", "diagnostics", "sources", "run"}
    helper = next(d for d in doc["diagnostics"] if d["file"].endswith("two_files/layers.py"))
    assert helper["owner"] == str(EXAMPLES / "two_files/model.py")  # a helper's finding belongs to the model file's run
    lib = next(d for d in doc["diagnostics"] if d["file"].endswith("tracker.py") and "postprocess" in json.dumps(d["data"]))
    assert lib["data"]["library_frame"]["line"] == 8
    sources = {(s["file"], s.get("cell")): s for s in doc["sources"]}
    tracker = sources[(str(EXAMPLES / "library_project/tracker.py"), None)]
    assert tracker["lines"]["15"] == "        detections = self.detector(frame)" and tracker["count"] == 21
    postprocess = next(s for (f, _), s in sources.items() if f.endswith("site-packages/minilib/postprocess.py"))
    assert postprocess["lines"]["8"] == "    if num_kept > max_keep:" and "6" in postprocess["lines"] and "10" in postprocess["lines"]
    assert set(doc["run"]) == {"command", "seconds", "finished", "exportlens"}


def test_summary_counts_every_target_and_its_problems(doc: dict[str, Any], dom: Node) -> None:
    rows = dom.by_id("target-table").one("tbody").all("tr")
    assert len(rows) == len(doc["targets"]) == 6
    by_file = {r.all("td")[0].one("a").text(): r for r in rows}
    tracker = by_file["library_project/tracker.py"]
    cells = [td.text() for td in tracker.all("td")]
    assert cells[1:5] == ["model", "export", "problems", "3"] and cells[7] == "2.13.0+cpu"
    assert tracker.attrs["data-codes"] == "data-dependent-guard missing-fake-kernel" and tracker.attrs["data-status"] == "problems"
    assert [td.text() for td in by_file["clean/model.py"].all("td")][3:5] == ["ok", "0"]
    assert [li.attrs["data-status-count"] + " " + li.one("span", "k").text() for li in dom.by_id("statuses").all("li")] == [
        "problems 5",
        "ok 1",
    ]
    assert dom.one("p", "verdict").text() == f"{sum(1 for d in doc['diagnostics'] if d['severity'] in (1, 2))} problems in 6 targets"
    codes = {
        li.attrs["data-code"]: (li.attrs["data-findings"], li.attrs["data-targets"], li.one("button").attrs["title"]) for li in dom.by_id("codes").all("li")
    }
    assert codes["data-dependent-guard"] == ("6", "4", "Export cannot decide a condition that depends on tensor data (error): show only these")
    assert codes["missing-fake-kernel"][:2] == ("2", "2") and codes["graph-break"][2].endswith("(warning): show only these")  # its default severity
    assert list(codes)[-1] == "graph-break"  # errors first


def test_one_library_line_is_one_root_cause_shared_by_both_targets(doc: dict[str, Any], dom: Node) -> None:
    causes = dom.by_id("causes").one("tbody").all("tr")
    shared = [c for c in causes if c.attrs["data-targets"] == "2"]
    assert [(c.one("a", "where").text(), c.one("code", "expr").text(), c.attrs["data-filter-code"]) for c in shared] == [
        ("minilib/detector.py:16", "decode_boxes(images)", "missing-fake-kernel"),
        ("minilib/detector.py:17", "boxes.shape[0] == 0", "data-dependent-guard"),
        ("minilib/postprocess.py:8", "num_kept > max_keep", "data-dependent-guard"),
    ]
    assert causes[:3] == shared  # the causes shared by the most targets first
    postprocess = shared[2]
    links = [a.attrs["href"] for a in postprocess.all("a", "target-link")]
    labels = [a.text() for a in postprocess.all("a", "target-link")]
    assert labels == ["library_project/detect.py · model", "library_project/tracker.py · model"]
    for href in links:  # each link lands on its target in the findings
        assert dom.by_id(href[1:]).one("b").text() == "model"
    findings = [dom.by_id(a.attrs["href"][1:]) for a in postprocess.all("a", "finding-link")]
    assert [f.one("a", "where").text() for f in findings] == ["library_project/detect.py:13:17", "library_project/tracker.py:15:22"]
    assert "in the library minilib" in postprocess.text()


ZOO = ["zoo__detectors", "zoo__module_level", "library_project__detect", "library_project__tracker", "library_project__two_stage"]


@pytest.fixture(scope="module")
def zoo_doc() -> dict[str, Any]:
    results = [replay_sync(CASES_BY_NAME[name])[0] for name in ZOO]
    report = Report("2.13.0+cpu", [t for r in results for t in r.targets], [d for r in results for d in r.diagnostics])
    return json.loads(json.dumps(jsonreport.build(report, results)))


def test_each_finding_has_its_root_cause_the_library_line_of_a_factory_target_too(zoo_doc: dict[str, Any]) -> None:
    """A factory's finding sits on its declaration (`model = TinyDetector(max_keep=2)`); its `root_cause`
    is the library line, the same one a script's `self.detector(images)` reaches."""
    by_target = {}
    for d in zoo_doc["diagnostics"]:
        cause = d["root_cause"]
        assert set(cause) == {"file", "line", "where", "library"} and cause["library"] == "minilib"
        assert cause["file"] == d["data"]["library_frame"]["file"] and cause["line"] == d["data"]["library_frame"]["line"]
        by_target.setdefault(d["target"], []).append(cause["where"])
    assert by_target["detectors.py:small_detector"] == ["minilib/detector.py:17", "minilib/postprocess.py:8", "minilib/detector.py:16"]
    assert by_target["detectors.py:two_stage_detector"] == ["minilib/postprocess.py:8", "minilib/postprocess.py:8"]
    assert by_target["model"].count("minilib/postprocess.py:8") == 5  # module_level.py, detect.py, tracker.py, two_stage.py twice
    mine = next(d for d in zoo_doc["diagnostics"] if d["target"] == "detectors.py:small_detector")
    assert mine["data"]["boundary_kind"] == "declaration" and mine["range"]["start"] == {"line": 18, "character": 12}


def test_the_zoos_shared_library_line_is_the_first_root_cause_with_all_its_targets(zoo_doc: dict[str, Any]) -> None:
    dom = parse(page.render(jsonreport.parse(zoo_doc)))
    first = dom.by_id("causes").one("tbody").all("tr")[0]
    assert (first.one("a", "where").text(), first.one("code", "expr").text(), first.attrs["data-targets"]) == (
        "minilib/postprocess.py:8",
        "num_kept > max_keep",
        "7",
    )
    assert [a.text() for a in first.all("a", "target-link")] == [
        "zoo/detectors.py · detectors.py:small_detector",
        "zoo/detectors.py · detectors.py:wide_detector",
        "zoo/detectors.py · detectors.py:two_stage_detector",
        "zoo/module_level.py · model",
        "library_project/detect.py · model",
        "library_project/tracker.py · model",
        "library_project/two_stage.py · model",
    ]


def test_a_factory_targets_finding_shows_its_declaration_the_library_line_and_the_chain(zoo_doc: dict[str, Any]) -> None:
    """The finding of `small_detector` on the page: the underlined model its factory builds, then the
    library line, and the chain of frames from that declaration into minilib."""
    dom = parse(page.render(jsonreport.parse(zoo_doc)))
    on_19 = [a for a in dom.all("article", "finding") if a.one("a", "where").text().startswith("zoo/detectors.py:19:")]
    assert [a.attrs["data-filter-code"] for a in on_19] == ["data-dependent-guard", "data-dependent-guard", "missing-fake-kernel"]
    f = on_19[1]  # the first guard there is minilib/detector.py:17's
    user, library = f.all("figure", "excerpt")
    assert user.one("span", "hit").attrs["data-line"] == "19" and user.one("span", "ul").text() == "TinyDetector(max_keep=2)"
    assert library.one("figcaption").text() == "minilib/postprocess.py:8 · inside the library minilib, in limit_detections"
    assert [li.text() for li in f.one("ol", "chain").all("li")] == [
        "zoo/detectors.py:19 in small_detector model = TinyDetector(max_keep=2)",
        "minilib/detector.py:20 in TinyDetector.forward kept = limit_detections(boxes, scores, self.max_keep) (library)",
        "minilib/postprocess.py:8 in limit_detections if num_kept > max_keep: (library)",
    ]


def test_readers_group_by_the_root_cause_field_alone(zoo_doc: dict[str, Any]) -> None:
    """Without `data` (a reader that kept only the documented fields), the field still groups the zoo."""
    bare = {**zoo_doc, "diagnostics": [{k: v for k, v in d.items() if k != "data"} for d in zoo_doc["diagnostics"]]}
    first = parse(page.render(jsonreport.parse(bare))).by_id("causes").one("tbody").all("tr")[0]
    assert (first.one("a", "where").text(), first.attrs["data-targets"]) == ("minilib/postprocess.py:8", "7")


def test_a_library_finding_shows_the_user_line_the_library_line_and_the_chain(dom: Node) -> None:
    f = next(a for a in dom.all("article", "finding") if a.one("a", "where").text().startswith("library_project/tracker.py:15:") and "num_kept" in a.text())
    user, library = f.all("figure", "excerpt")
    hit = user.one("span", "hit")
    assert hit.attrs["data-line"] == "15" and hit.one("span", "ul").text() == "self.detector(frame)"
    assert [n.attrs["data-line"] for n in user.all("span", "l")] == ["13", "14", "15", "16", "17"]
    assert library.one("figcaption").text() == "minilib/postprocess.py:8 · inside the library minilib, in limit_detections"
    assert library.one("span", "hit").attrs["data-line"] == "8" and library.one("span", "ul").text() == "num_kept > max_keep"
    chain = [li.text() for li in f.one("ol", "chain").all("li")]
    assert chain == [
        "library_project/tracker.py:15 in forward detections = self.detector(frame)",
        "minilib/detector.py:20 in TinyDetector.forward kept = limit_detections(boxes, scores, self.max_keep) (library)",
        "minilib/postprocess.py:8 in limit_detections if num_kept > max_keep: (library)",
    ]
    related = f.one("ul", "related").all("li")  # the library line is the excerpt above; the entry into the library stays
    assert len(related) == 1 and related[0].text().startswith("minilib/detector.py:20:16: the library is entered here")
    assert "root cause shared by 2 targets, 2 findings" in f.one("div", "meta").text()


def test_the_range_is_underlined_on_its_line_and_each_fix_is_a_diff(dom: Node) -> None:
    f = _finding(dom, "data_dependent/item_branch.py", 9, "data-dependent-guard")
    hit = f.one("figure", "excerpt").one("span", "hit")
    assert hit.attrs["data-line"] == "9" and hit.text() == "        if n > 2:" and hit.one("span", "ul").text() == "n > 2"
    fixes = f.all("div", "fix")
    assumption = next(x for x in fixes if "assumption: n > 2" in x.text())
    added = [[td.text() for td in tr.all("td")] for tr in assumption.one("table", "diff").all("tr", "added")]
    assert added == [["", "9", "+", "        torch._check(n > 2)"]]
    context = [[td.text() for td in tr.all("td")] for tr in assumption.one("table", "diff").all("tr", "context")]
    assert context[0] == ["6", "6", " ", "class Threshold(torch.nn.Module):"] and context[-1] == ["11", "12", " ", "        return y - 1"]
    assert assumption.one("span", "outcome").text() == "not verified"  # replayed runs verify nothing; the report says so
    rewrite = next(x for x in fixes if "torch.cond" in x.one("span", "fix-title").text())
    assert rewrite.one("span", "tag", where=lambda n: "rewrite" in n.classes()).text() == "rewrite"
    removed = [[td.text() for td in tr.all("td")] for tr in rewrite.one("table", "diff").all("tr", "removed")]
    assert ["9", "", "-", "        if n > 2:"] in removed


def test_a_verified_fix_shows_its_outcome_and_what_it_assumes(doc: dict[str, Any]) -> None:
    verified = copy.deepcopy(doc)
    d = next(x for x in verified["diagnostics"] if x["file"].endswith("item_branch.py"))
    d["fixes"][0]["verification"] = Verification(EXPORT_PASSES, same_outputs=True, seconds=0.42).to_json()
    d["fixes"][1]["verification"] = Verification("breaks", ("export-error",), False, "n <= 2", 0.1, "the model now raises").to_json()
    dom = parse(page.render(jsonreport.parse(verified)))
    fixes = _finding(dom, "data_dependent/item_branch.py", 9, "data-dependent-guard").all("div", "fix")
    assert [(x.attrs["data-outcome"], x.one("span", "outcome").text()) for x in fixes] == [
        ("export-passes", "export passes ✓"),
        ("breaks", "breaks the target"),
        ("not-verified", "not verified"),
    ]
    assert fixes[0].one("div", "why").text() == "the model's outputs on the example inputs are unchanged; verified in 0.4 s"
    assert fixes[1].one("div", "why").text().startswith("remaining: export-error; changes the model's outputs")


def test_a_helper_files_finding_belongs_to_the_target_that_ran_it(dom: Node) -> None:
    f = _finding(dom, "two_files/layers.py", 8, "data-dependent-guard")
    (link,) = f.one("div", "meta").all("a")
    assert dom.by_id(link.attrs["href"][1:]).text().startswith("problems model (export, line")
    section = next(s for s in dom.all("section", "file") if s.one("h3").text() == "two_files/layers.py")
    assert section.one("p", "hint").text() == "Found by running two_files/model.py."


def test_the_page_is_self_contained_and_allows_only_its_own_script_and_style(dom: Node) -> None:
    (script,) = dom.all("script")
    (style,) = dom.all("style")
    csp = dom.one("meta", where=lambda n: n.attrs.get("http-equiv") == "Content-Security-Policy").attrs["content"]

    def sha(text: str) -> str:
        return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()

    assert f"script-src 'sha256-{sha(script.text())}'" in csp and f"style-src 'sha256-{sha(style.text())}'" in csp
    assert "default-src 'none'" in csp and "connect-src 'none'" in csp
    assert not [n for n in dom.walk() if n.attrs.get("src") or n.tag in ("link", "img", "iframe", "object")]
    assert not [n for n in dom.walk() if any(k.startswith("on") or k == "style" for k in n.attrs)]  # no inline handlers or styles


def test_a_report_from_json_renders_the_same_page(doc: dict[str, Any]) -> None:
    report, results = _replayed()
    direct = jsonreport.build(report, results, run=doc["run"])
    assert page.render(jsonreport.parse(direct)) == page.render(jsonreport.parse(doc))


HOSTILE = '</pre></code><script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">&amp;'


def _hostile_doc(tmp_path: Path) -> dict[str, Any]:
    file = str(tmp_path / "<b>model</b>.py")
    rng = Range.of(2, 4, 2, 10)
    verified = Verification("breaks", (HOSTILE,), False, HOSTILE, 0.1, HOSTILE)
    fix = Fix(f"Add `{HOSTILE}`", (TextEdit(file, Range.of(2, 0, 2, 0), f"    # {HOSTILE}\n"),), True, HOSTILE, verified)
    diag = Diagnostic(file, rng, 1, "shape-wobble", f"raised {HOSTILE}", f"model{HOSTILE}", fixes=[fix], data={HOSTILE: {"new_key": HOSTILE}, "x": HOSTILE})
    diag.related.append(Related(file, rng, HOSTILE))
    out = {
        "version": 2,
        "torch": HOSTILE,
        "targets": [{"name": f"model{HOSTILE}", "file": file, "line": 3, "kind": HOSTILE, "status": HOSTILE, "seconds": 0.5}],
        "diagnostics": [{**diag.to_json(), "data": diag.data, "owner": file}],
        "sources": [{"file": file, "count": 5, "lines": {str(i): f"x = {HOSTILE!r}  # {HOSTILE}" for i in range(1, 6)}}],
        "run": {"command": HOSTILE, "combined": HOSTILE, "finished": HOSTILE},
        "unsupported": HOSTILE,
    }
    return out


def test_hostile_text_anywhere_stays_text(tmp_path: Path) -> None:
    html = page.render(jsonreport.parse(_hostile_doc(tmp_path)))
    dom = parse(html)
    assert len(dom.all("script")) == 1 and not dom.all("img") and not dom.all("b", where=lambda n: "model" == n.text())
    assert not [n for n in dom.walk() if any(k.startswith("on") for k in n.attrs)]
    text = dom.text()
    assert text.count(HOSTILE) >= 10  # message, source lines, fix, verification, data, target, torch, run...
    f = dom.one("article", "finding")
    assert f.one("figure", "excerpt").one("span", "ul").text() == repr(HOSTILE)[:6]  # the range's six characters, on the line as written
    assert f.one("span", "title").text() == "shape-wobble"  # a code this ExportLens does not know: shown by name
    facts = json.loads(f.one("pre", "facts").text())
    assert facts == {HOSTILE: {"new_key": HOSTILE}, "x": HOSTILE}  # unknown data keys, as they are


def test_markup_builds_only_safe_markup() -> None:
    assert markup.el("p", "<i>", title='"x"') == '<p title="&quot;x&quot;">&lt;i&gt;</p>'
    assert markup.el("p", markup.el("i", "ok")) == "<p><i>ok</i></p>"
    for bad in ("script", "style", "p onclick", "<p>"):
        with pytest.raises(ValueError):
            markup.el(bad)
    with pytest.raises(ValueError):
        markup.el("p", **{"on click": "x"})
    with pytest.raises(ValueError):
        markup.raw_asset("script", "a</script><script>b")


def test_markup_is_written_only_in_the_escaping_home() -> None:
    """No other module of the report package writes a tag by hand (`<p`, `</td`, `<!`): all markup goes through `markup`."""
    offenders = []
    for path in sorted(REPORT.glob("*.py")):
        if path.name in ("markup.py", "assets.py"):
            continue
        for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
            if tok.type in (tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", -1)) and re.search(r"</?[A-Za-z!]", tok.string):
                offenders.append(f"{path.name}:{tok.start[0]}: {tok.string[:60]}")
    assert offenders == []
    assert not [p.name for p in REPORT.glob("*.py") if p.name != "markup.py" and re.search(r"\bhtml\.escape\b|^import html\b", p.read_text(), re.M)]


def test_parts_of_one_run_merge_and_a_file_two_workers_checked_counts_once(doc: dict[str, Any]) -> None:
    first, second = copy.deepcopy(doc), copy.deepcopy(doc)
    second["torch"] = "2.14.1+cpu"
    second["targets"] = [t for t in second["targets"] if t["file"].endswith("tracker.py")]
    merged = jsonreport.merge([first, second], run={"combined": "2 pytest-xdist workers"})
    assert len(merged["targets"]) == len(doc["targets"]) and len(merged["diagnostics"]) == len(doc["diagnostics"])
    assert merged["torch"] == "2.13.0+cpu, 2.14.1+cpu" and {t["torch"] for t in merged["targets"]} == {"2.13.0+cpu"}
    dom = parse(page.render(jsonreport.parse(merged)))
    assert "2 pytest-xdist workers" in dom.one("dl", "facts").text()


def test_an_older_report_without_data_or_sources_still_renders(doc: dict[str, Any]) -> None:
    old = {k: v for k, v in doc.items() if k not in ("sources", "run")}
    old["diagnostics"] = [{k: v for k, v in d.items() if k not in ("data", "owner", "root_cause")} for d in doc["diagnostics"]]
    dom = parse(page.render(jsonreport.parse(old)))
    f = _finding(dom, "data_dependent/item_branch.py", 9, "data-dependent-guard")
    assert f.one("span", "ul").text() == "n > 2"  # the lines come from the files on disk
    causes = dom.by_id("causes").one("tbody").all("tr")
    assert not [c for c in causes if c.attrs["data-targets"] == "2"]  # without `data`, a library problem groups by the user's line


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"version": "2.1.0", "$schema": "x", "runs": []}, "this is a SARIF log"),
        ({"version": 9, "diagnostics": []}, "report schema version 9: this ExportLens reads versions 1, 2"),
        ([1, 2], "not an ExportLens JSON report"),
        ({"version": 2, "diagnostics": [{"file": "a.py"}]}, "diagnostics[0] is not a diagnostic (KeyError: 'range')"),
    ],
)
def test_what_is_not_a_report_is_said_plainly(doc: Any, message: str) -> None:
    with pytest.raises(jsonreport.ReportError, match=re.escape(message)):
        jsonreport.parse(doc)


def test_outcome_words_are_the_editors() -> None:
    assert codes.outcome_words(Verification(EXPORT_PASSES), "graph-break") == "no graph break left ✓"
    assert codes.outcome_words(Verification(EXPORT_PASSES), "guard-added") == "export passes ✓"
    assert Verification("fixes-this", ("guard-added",)).words() == "fixes this; 1 problem remains"
    assert Verification("no-effect").words() == "does not help"


def test_report_renders_several_json_reports_as_one_page(doc: dict[str, Any], tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    from exportlens import cli

    first, second = copy.deepcopy(doc), copy.deepcopy(doc)
    first["targets"] = [t for t in doc["targets"] if "library_project" in t["file"]]
    first["diagnostics"] = [d for d in doc["diagnostics"] if "library_project" in d["owner"]]
    (tmp_path / "a.json").write_text(json.dumps(first))
    (tmp_path / "b.json").write_text(json.dumps(second))
    assert cli.main(["report", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 0
    dom = parse(capsysbinary.readouterr().out.decode("utf-8"))
    assert len(dom.by_id("target-table").one("tbody").all("tr")) == len(doc["targets"])  # the shared files once
    facts = {d.one("dt").text(): d.one("dd").text() for d in dom.one("dl", "facts").all("div")}
    assert facts["combined"] == "2 reports" and facts["command"] == "exportlens check examples/"
    (tmp_path / "bad.json").write_text("{")
    assert cli.main(["report", str(tmp_path / "bad.json")]) == 2
    assert capsysbinary.readouterr().err.decode().startswith(f"exportlens: error: {tmp_path / 'bad.json'}: not JSON (")


def test_the_json_report_is_strict_json_whatever_torch_observed() -> None:
    d = Diagnostic(
        "/m.py", Range.of(0, 0, 0, 1), 1, "data-dependent-guard", "m", "model", data={"values": {"u0": float("nan"), "u1": float("inf")}, "obj": object()}
    )
    doc = jsonreport.build(Report("t", [], [d]), [])
    json.loads(json.dumps(doc, allow_nan=False))  # raises on NaN or Infinity
    assert doc["diagnostics"][0]["data"]["values"] == {"u0": "nan", "u1": "inf"} and doc["diagnostics"][0]["data"]["obj"].startswith("<object")
