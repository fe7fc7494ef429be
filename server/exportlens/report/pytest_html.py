"""`pytest --exportlens --exportlens-html report.html`: the HTML report of a pytest run.

Why a plugin of its own: the page needs every file's result, with its fixes verified, and under
pytest-xdist each worker holds only the files it ran. Each process (a worker, or pytest itself
without xdist) verifies the fixes of the files it checked once its tests are done and builds its
part of the JSON report; a worker hands its part to the controller through xdist's
`workeroutput`, and the controller merges the parts (a file two workers both checked is taken
once) and writes the page. The pytest process still never imports torch.
"""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

from exportlens.report import jsonreport, page

_PART = "exportlens_report"
VERIFY_BUDGET = 60.0  # seconds for verifying one file's fixes, as `exportlens check`


class HtmlReport:
    def __init__(self, config: pytest.Config, runner: Any) -> None:
        self.config = config
        self.runner = runner
        self.path = os.path.join(str(config.invocation_params.dir), str(config.getoption("exportlens_html")))
        self.started = time.perf_counter()
        self.parts: list[tuple[str, dict[str, Any]]] = []  # (worker id, its part)
        self.written: str | None = None  # what the summary says

    def _own_part(self) -> dict[str, Any] | None:
        """This process's files as a JSON report, their fixes verified (in its own engine)."""
        results = list(self.runner.results.values())
        if not results:
            return None
        from exportlens import verify
        from exportlens.fix_registry import attach, read_disk
        from exportlens.model import Report

        engine = self.runner._engine()  # the plugin's own runner (pytest_plugin._Runner): its engine and event loop
        for result in results:
            if verify.problems(result.diagnostics):
                self.runner._call(verify.verify_result(engine, result, read=read_disk, budget=VERIFY_BUDGET, jobs=1))
        report = Report(
            torch_version=engine.torch_version,
            targets=[t for r in results for t in r.targets],
            diagnostics=[d for r in results for d in r.diagnostics],
            unsupported=engine.unsupported,
        )
        for result in results:  # what verification left without fixes (hints, information) gets them, placed by its document
            attach(result.diagnostics, document=result.document)
        return jsonreport.build(report, results)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """pytest-xdist: a worker is done; keep its part."""
        output = getattr(node, "workeroutput", None) or {}
        if output.get(_PART):
            gateway = getattr(node, "gateway", None)
            self.parts.append((str(getattr(gateway, "id", len(self.parts))), output[_PART]))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        own = self._own_part()
        workerinput = getattr(self.config, "workerinput", None)
        if workerinput is not None:  # an xdist worker: the controller writes the page
            if own is not None:
                self.config.workeroutput[_PART] = own  # type: ignore[attr-defined]
            return
        parts = [p for _, p in sorted(self.parts, key=lambda wp: (len(wp[0]), wp[0]))] + ([own] if own is not None else [])
        run = jsonreport.run_facts("pytest " + " ".join(self.config.invocation_params.args), time.perf_counter() - self.started)
        if self.parts:
            run["combined"] = f"{len(self.parts)} pytest-xdist worker{'s' if len(self.parts) != 1 else ''}"
        doc = jsonreport.merge(parts, run=run)
        parsed = jsonreport.parse(doc)
        html = page.to_bytes(page.render(parsed))
        tmp = f"{self.path}.tmp{os.getpid()}"
        try:
            with open(tmp, "wb") as fh:
                fh.write(html)
            os.replace(tmp, self.path)
        except OSError as exc:
            self.written = f"exportlens: could not write the HTML report {self.path}: {exc}"
            return
        problems = sum(1 for d in parsed.diagnostics if d.problem)
        self.written = f"exportlens: HTML report {self.path}: {problems} problem{'s' if problems != 1 else ''} in {len(doc['targets'])} targets"

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.written:
            terminalreporter.write_line(self.written)
