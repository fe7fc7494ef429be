"""The page's own stylesheet and script, inlined (the page loads nothing: no network, no fonts).

The script only sorts and filters what the page already shows (it reads text and data
attributes and never writes markup), so the page's content works with JavaScript off. The page's
Content-Security-Policy allows exactly these two texts, by hash.
"""

from __future__ import annotations

STYLE = """
:root {
  color-scheme: light dark;
  --bg: #ffffff; --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --panel: #f6f8fa; --panel2: #eef1f4;
  --link: #0550ae; --code-bg: #f6f8fa; --hit: #fff8c5; --focus: #0969da;
  --error: #cf222e; --warning: #9a6700; --info: #0969da; --hint: #59636e; --ok: #1a7f37; --problems: #bc4c00;
  --add-bg: #dafbe1; --add-fg: #116329; --del-bg: #ffebe9; --del-fg: #82071e;
  --ul-error: rgba(207, 34, 46, 0.10); --ul-warning: rgba(154, 103, 0, 0.12); --ul-info: rgba(9, 105, 218, 0.10);
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #0d1117; --fg: #e6edf3; --muted: #9198a1; --line: #3d444d; --panel: #151b23; --panel2: #1c232d;
    --link: #4493f8; --code-bg: #151b23; --hit: #3a3218; --focus: #4493f8;
    --error: #ff7b72; --warning: #d29922; --info: #58a6ff; --hint: #9198a1; --ok: #3fb950; --problems: #f0883e;
    --add-bg: #12261e; --add-fg: #7ee787; --del-bg: #2d1214; --del-fg: #ffa198;
    --ul-error: rgba(255, 123, 114, 0.16); --ul-warning: rgba(210, 153, 34, 0.18); --ul-info: rgba(88, 166, 255, 0.16);
  }
}
* { box-sizing: border-box; }
html { background: var(--bg); color: var(--fg); }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "DejaVu Sans", sans-serif; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, "SF Mono", Menlo, Consolas, "DejaVu Sans Mono", "Liberation Mono", monospace; font-size: 13px; }
a { color: var(--link); text-decoration: none; }
a:hover { text-decoration: underline; }
:focus-visible { outline: 2px solid var(--focus); outline-offset: 2px; }
.skip { position: absolute; left: -9999px; }
.skip:focus { left: 8px; top: 8px; background: var(--bg); padding: 4px 8px; z-index: 2; }
.wrap { max-width: 1240px; margin: 0 auto; padding: 0 24px; }
header.top { border-bottom: 1px solid var(--line); background: var(--panel); padding: 18px 0 0; }
header.top h1 { font-size: 20px; margin: 0 0 4px; font-weight: 600; }
header.top h1 .brand { color: var(--muted); font-weight: 400; }
.verdict { font-size: 17px; margin: 4px 0 8px; font-weight: 600; }
.verdict.bad { color: var(--problems); }
.verdict.good { color: var(--ok); }
.facts { display: flex; flex-wrap: wrap; gap: 4px 22px; margin: 0 0 10px; padding: 0; color: var(--muted); font-size: 13px; }
.facts div { display: flex; gap: 6px; }
.facts dt { font-weight: 600; }
.facts dd { margin: 0; }
nav.sections { display: flex; gap: 4px; margin-top: 6px; }
nav.sections a { padding: 6px 12px; border-bottom: 2px solid transparent; color: var(--fg); }
nav.sections a:hover { border-bottom-color: var(--line); text-decoration: none; }
main { padding-bottom: 48px; }
section.block { margin-top: 28px; }
h2 { font-size: 18px; margin: 0 0 10px; font-weight: 600; display: flex; align-items: baseline; gap: 8px; }
h2 .n { color: var(--muted); font-weight: 400; font-size: 15px; }
h3 { font-size: 15px; margin: 0; font-weight: 600; }
h4 { font-size: 13px; margin: 14px 0 6px; color: var(--muted); text-transform: uppercase; letter-spacing: 0.04em; font-weight: 600; }
p.hint { color: var(--muted); margin: 0 0 10px; font-size: 13px; }
.banner { border: 1px solid var(--error); border-radius: 6px; padding: 10px 14px; margin-top: 18px; }
.chips { display: flex; flex-wrap: wrap; gap: 8px; list-style: none; padding: 0; margin: 0 0 12px; }
.badge { display: inline-block; border-radius: 999px; padding: 0 9px; font-size: 12px; font-weight: 600; line-height: 20px;
  border: 1px solid currentColor; white-space: nowrap; }
.badge .k { font-weight: 400; margin-left: 4px; }
.st-ok { color: var(--ok); } .st-problems { color: var(--problems); } .st-error, .st-crashed, .st-timeout { color: var(--error); }
.st-unsupported, .st-file { color: var(--muted); }
.sev-1 { --sev: var(--error); --ul-bg: var(--ul-error); } .sev-2 { --sev: var(--warning); --ul-bg: var(--ul-warning); }
.sev-3 { --sev: var(--info); --ul-bg: var(--ul-info); } .sev-4 { --sev: var(--hint); --ul-bg: transparent; }
.sev-text { color: var(--sev); font-weight: 600; }
.code-name { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace; font-size: 12.5px;
  background: var(--panel2); border-radius: 4px; padding: 1px 6px; white-space: nowrap; }
.filters { display: flex; flex-wrap: wrap; gap: 10px 18px; align-items: center; margin: 0 0 10px; font-size: 13px; }
.filters[hidden] { display: none; }
.filters label { display: flex; gap: 6px; align-items: center; }
.filters select, .filters input { font: inherit; color: var(--fg); background: var(--bg); border: 1px solid var(--line); border-radius: 6px; padding: 4px 8px; }
.filters output { color: var(--muted); }
table { border-collapse: collapse; width: 100%; }
.table-wrap { overflow-x: auto; border: 1px solid var(--line); border-radius: 8px; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
tbody tr:last-child td { border-bottom: 0; }
thead th { background: var(--panel); font-size: 12.5px; color: var(--muted); font-weight: 600; white-space: nowrap; }
th button.sort { font: inherit; color: inherit; background: none; border: 0; padding: 0; cursor: pointer; }
th button.sort::after { content: " \\2195"; opacity: 0.35; }
th[aria-sort="ascending"] button.sort::after { content: " \\2191"; opacity: 1; }
th[aria-sort="descending"] button.sort::after { content: " \\2193"; opacity: 1; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tbody tr:hover td { background: var(--panel); }
td .sub { color: var(--muted); font-size: 12.5px; }
table.targets td:nth-child(1) { white-space: nowrap; }
td .codes { display: flex; flex-wrap: wrap; gap: 4px; }
ul.codes li { display: flex; }
button.chip { font: inherit; font-size: 12.5px; color: var(--fg); background: var(--bg); border: 1px solid var(--line);
  border-left: 3px solid var(--sev); border-radius: 6px; padding: 2px 8px; display: flex; gap: 6px; align-items: baseline; }
button.chip:disabled { cursor: default; }
button.chip:not(:disabled) { cursor: pointer; }
button.chip:not(:disabled):hover { background: var(--panel); }
button.chip[aria-pressed="true"] { background: var(--panel2); border-color: var(--focus); }
button.chip .code-name { background: none; padding: 0; }
button.chip .k { font-weight: 700; }
button.chip .sub { color: var(--muted); font-size: 12px; }
table.causes td { font-size: 13.5px; }
table.causes tr.cause td:first-child { border-left: 4px solid var(--sev); }
table.causes .many { font-size: 17px; font-weight: 700; }
table.causes .where { font-weight: 600; }
table.causes .lib { color: var(--muted); }
table.causes code.expr { display: inline-block; margin-top: 3px; background: var(--code-bg); border: 1px solid var(--line);
  border-radius: 4px; padding: 0 6px; }
ul.cause-links { list-style: none; margin: 0; padding: 0; }
ul.cause-links li { margin: 1px 0; }
ul.cause-links .finding-link { font-size: 12.5px; color: var(--muted); }
section.file { margin-top: 22px; border-top: 1px solid var(--line); padding-top: 14px; }
section.file > h3 { font-size: 16px; }
.file-targets { list-style: none; margin: 6px 0 0; padding: 0; font-size: 13px; color: var(--muted); }
.file-targets li { margin: 2px 0; }
.file-targets li:target, article.finding:target { box-shadow: 0 0 0 3px var(--focus); border-radius: 6px; }
/* Findings off screen are laid out when scrolled to: a page of hundreds renders as fast as one of ten. */
article.finding { content-visibility: auto; contain-intrinsic-size: auto 600px;
  border: 1px solid var(--line); border-left: 4px solid var(--sev); border-radius: 8px; padding: 12px 16px; margin: 12px 0; }
article.finding > header { display: flex; flex-wrap: wrap; gap: 6px 12px; align-items: baseline; }
article.finding > header .title { font-weight: 600; }
article.finding > header .where { margin-left: auto; font-size: 13px; }
.finding .meta { font-size: 13px; color: var(--muted); margin-top: 2px; }
.message { white-space: pre-wrap; margin: 8px 0; overflow-wrap: anywhere; }
.message code, .fix-title code, .related code { background: var(--code-bg); border-radius: 4px; padding: 0 4px; }
figure.excerpt { margin: 10px 0; border: 1px solid var(--line); border-radius: 6px; overflow: hidden; }
figure.excerpt figcaption { background: var(--panel); padding: 4px 10px; font-size: 12.5px; color: var(--muted); border-bottom: 1px solid var(--line); }
figure.excerpt figcaption b { color: var(--fg); font-weight: 600; }
pre.src { margin: 0; padding: 6px 0; background: var(--code-bg); overflow-x: auto; line-height: 1.55; tab-size: 4; }
pre.src .l { display: block; padding: 0 12px 0 0; min-width: max-content; }
pre.src .l::before { content: attr(data-line); display: inline-block; width: 4.5em; padding-right: 1em; text-align: right; color: var(--muted);
  user-select: none; -webkit-user-select: none; }
pre.src .l.hit { background: var(--hit); }
pre.src .gap::before { content: "\\22EF"; }
.ul { text-decoration: underline wavy var(--sev); text-decoration-thickness: 1.5px; text-underline-offset: 3px; text-decoration-skip-ink: none;
  background: var(--ul-bg); border-radius: 2px; }
.ul.empty { display: inline-block; width: 0.6ch; }
.nosrc { padding: 6px 12px; color: var(--muted); font-size: 13px; }
ol.chain { margin: 6px 0 0; padding-left: 22px; font-size: 13px; }
ol.chain li { margin: 2px 0; }
ol.chain .lib { color: var(--muted); }
ul.related { margin: 0; padding-left: 20px; font-size: 13.5px; }
ul.related li { margin: 3px 0; }
.fix { border: 1px solid var(--line); border-radius: 6px; margin: 8px 0; overflow: hidden; }
.fix-head { display: flex; flex-wrap: wrap; gap: 6px 10px; align-items: baseline; padding: 6px 10px; background: var(--panel); }
.fix-title { flex: 1 1 420px; }
.tag { font-size: 12px; border-radius: 4px; padding: 0 6px; border: 1px solid var(--line); white-space: nowrap; }
.tag.assumption { color: var(--warning); border-color: currentColor; }
.tag.rewrite { color: var(--muted); }
.tag.preferred { color: var(--info); border-color: currentColor; }
.outcome { font-size: 12.5px; font-weight: 600; white-space: nowrap; }
.outcome.good { color: var(--ok); } .outcome.partial { color: var(--warning); } .outcome.bad { color: var(--error); } .outcome.unknown { color: var(--muted); }
.fix .why { padding: 4px 10px; font-size: 12.5px; color: var(--muted); border-top: 1px solid var(--line); }
table.diff { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace; font-size: 12.5px; }
table.diff td { border: 0; padding: 0 8px; white-space: pre; }
table.diff td.no { color: var(--muted); text-align: right; width: 3.5em; user-select: none; -webkit-user-select: none; }
table.diff tr.added td { background: var(--add-bg); color: var(--add-fg); }
table.diff tr.removed td { background: var(--del-bg); color: var(--del-fg); }
table.diff tr.gap td { color: var(--muted); }
table.diff td.sign { width: 1em; user-select: none; -webkit-user-select: none; }
.diff-file { font-size: 12px; color: var(--muted); padding: 4px 10px; border-top: 1px solid var(--line); }
pre.edit { margin: 0; padding: 6px 10px; background: var(--code-bg); white-space: pre-wrap; }
details { margin-top: 10px; }
details > summary { cursor: pointer; color: var(--muted); font-size: 13px; }
pre.facts { margin: 6px 0 0; padding: 8px 10px; background: var(--code-bg); border: 1px solid var(--line); border-radius: 6px;
  white-space: pre-wrap; overflow-wrap: anywhere; max-height: 420px; overflow: auto; font-size: 12px; }
.empty-state { color: var(--muted); padding: 12px 0; }
[hidden] { display: none !important; }
@media print { .filters, button.only, nav.sections { display: none !important; } details > * { display: block; } }
"""

SCRIPT = """
"use strict";
(function () {
  var table = document.getElementById("target-table");
  if (!table) { return; }
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var form = document.getElementById("filters");
  var status = document.getElementById("filter-status");
  var code = document.getElementById("filter-code");
  var text = document.getElementById("filter-text");
  var shown = document.getElementById("filter-count");
  var coded = Array.prototype.slice.call(document.querySelectorAll("[data-filter-code]"));
  var chips = Array.prototype.slice.call(document.querySelectorAll("button[data-only-code]"));
  form.hidden = false;

  function apply() {
    var s = status.value, c = code.value, q = text.value.trim().toLowerCase(), n = 0;
    rows.forEach(function (r) {
      var ok = (!s || r.getAttribute("data-status") === s) &&
        (!c || (" " + r.getAttribute("data-codes") + " ").indexOf(" " + c + " ") >= 0) &&
        (!q || r.getAttribute("data-search").indexOf(q) >= 0);
      r.hidden = !ok;
      if (ok) { n += 1; }
    });
    coded.forEach(function (e) { e.hidden = !!c && e.getAttribute("data-filter-code") !== c; });
    shown.textContent = n + " of " + rows.length + " targets" + (c ? "; findings and root causes of " + c + " only" : "");
    chips.forEach(function (b) { b.setAttribute("aria-pressed", b.getAttribute("data-only-code") === c ? "true" : "false"); });
  }
  [status, code].forEach(function (e) { e.addEventListener("change", apply); });
  text.addEventListener("input", apply);
  form.addEventListener("submit", function (e) { e.preventDefault(); });

  chips.forEach(function (b) {
    b.disabled = false;
    b.addEventListener("click", function () {
      var c = b.getAttribute("data-only-code");
      code.value = code.value === c ? "" : c;
      apply();
    });
  });

  var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
  heads.forEach(function (th, index) {
    var button = document.createElement("button");
    button.type = "button";
    button.className = "sort";
    button.textContent = th.textContent;
    button.setAttribute("aria-label", "Sort by " + th.textContent);
    th.textContent = "";
    th.appendChild(button);
    th.setAttribute("aria-sort", th.getAttribute("data-sorted") || "none");
    button.addEventListener("click", function () {
      var descending = th.getAttribute("aria-sort") === "ascending";
      var numeric = th.getAttribute("data-type") === "number";
      heads.forEach(function (h) { h.setAttribute("aria-sort", "none"); });
      th.setAttribute("aria-sort", descending ? "descending" : "ascending");
      function key(r) { return r.cells[index].getAttribute("data-value") || r.cells[index].textContent; }
      var order = rows.map(function (r, i) { return [r, i]; });
      order.sort(function (a, b) {
        var x = key(a[0]), y = key(b[0]), d;
        if (numeric) { d = parseFloat(x) - parseFloat(y); } else { d = x < y ? -1 : x > y ? 1 : 0; }
        if (descending) { d = -d; }
        return d || a[1] - b[1];
      });
      order.forEach(function (p) { body.appendChild(p[0]); });
      rows = order.map(function (p) { return p[0]; });
    });
  });
  apply();
})();
"""
