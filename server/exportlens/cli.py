"""`exportlens check` for terminals and CI, and `exportlens serve` for editors."""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import os
import sys
import time
from typing import TYPE_CHECKING, Any

from exportlens import __version__, notebook, project, shards
from exportlens.cli_progress import CliProgress
from exportlens.model import Report, text_lines
from exportlens.options import COMPILE_BACKENDS, DRAFT_MODES

if TYPE_CHECKING:
    from exportlens.engine import EngineSettings, FileResult

# Real models (torchvision detectors, transformers) take 2-4 minutes under draft export on a laptop
# CPU; the editor keeps its own, shorter default (`exportlens.timeoutSeconds`).
DEFAULT_TIMEOUT = 600.0


def _display_path(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def format_text(report: Report, seconds: float, *, show_ignored: bool = False) -> str:
    out = []
    for d in report.diagnostics:
        out.extend(text_lines(d, _display_path))
    if show_ignored:
        for d in report.ignored:
            out.extend(text_lines(d, _display_path, "ignored"))
    problems = count_problems(report)
    targets = len(report.targets)
    reused = sum(1 for t in report.targets if t.cached is not None)
    from_cache = f", {reused} from the cache" if reused else ""
    out.append(
        f"{problems} problem{'s' if problems != 1 else ''} in {targets} target{'s' if targets != 1 else ''}{from_cache} "
        f"({seconds:.1f} s, torch {report.torch_version})"
    )
    return "\n".join(out)


def count_problems(report: Report) -> int:
    return sum(1 for d in report.diagnostics if d.problem)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="exportlens", description=__doc__)
    parser.add_argument("--version", action="version", version=f"exportlens {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="run each target's export (plain export, then draft export where it adds something) and report problems")
    check.add_argument("paths", nargs="+", metavar="PATH")
    check.add_argument("--format", choices=("text", "json", "sarif", "html"), default="text", help="html: one self-contained page (see `exportlens report`)")
    check.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="S",
        help=f"seconds per file (default: pyproject's timeout, else {DEFAULT_TIMEOUT:.0f}: real detectors take minutes)",
    )
    check.add_argument("--jobs", type=int, default=None, metavar="N", help="jobs run at once, each a process tree (default: one per core)")
    check.add_argument("--memory-mb", type=int, default=8192, help="memory a job may add, in MB (0: no cap)")
    check.add_argument(
        "--compile-backend",
        default=None,
        choices=COMPILE_BACKENDS,
        help="backend for torch.compile targets (default: pyproject's compile-backend, else eager: fast, same graph breaks)",
    )
    check.add_argument("--python", default=None, help="interpreter with torch for the worker (default: pyproject's python, else this one)")
    check.add_argument(
        "--draft",
        default=None,
        choices=DRAFT_MODES,
        help="when draft export runs after your plain torch.export.export: auto (it failed, or the program calls custom ops) or always "
        "(default: pyproject's draft-export, else auto)",
    )
    check.add_argument("--fix", action="store_true", help="apply every preferred fix (assumptions only with --assume)")
    check.add_argument("--diff", action="store_true", help="show the preferred fixes as a diff, change nothing")
    check.add_argument("--assume", action="store_true", help="with --fix/--diff, also apply assumption fixes (a torch._check that holds for the example only)")
    check.add_argument(
        "--verify",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="re-run each target with each fix applied in memory and record the outcome (default: on with --format json/sarif, --fix and --diff)",
    )
    check.add_argument("--verify-budget", type=float, default=60.0, metavar="S", help="seconds for verifying one file's fixes (default 60)")
    check.add_argument(
        "--save-op-profiles", action="store_true", help="write the custom-op profiles draft export saw to FILE.op_profiles.yaml (torch's format)"
    )
    check.add_argument(
        "--trace-dir", default=None, metavar="DIR", help="keep torch's structured trace of each run in DIR (render with `tlparse FILE --export`)"
    )
    check.add_argument("--show-ignored", action="store_true", help="also list the findings silenced by `# exportlens: ignore` comments")
    check.add_argument(
        "--shard", default=None, metavar="K/N", help="check only part K of N of the files (stable per file; combine the JSON reports with `exportlens report`)"
    )
    _cache_options(check)
    check.add_argument("--verbose", action="store_true", help="show the worker's log on stderr")
    fix = sub.add_parser("fix", help="make PATH export: apply verified fixes round by round until export passes")
    fix.add_argument("paths", nargs="+", metavar="PATH")
    fix.add_argument("--write", action="store_true", help="write the fixed files (default: print the diff only)")
    fix.add_argument("--assume", action="store_true", help="also take assumption fixes (torch._check of a condition for every input)")
    fix.add_argument("--rounds", type=int, default=5, metavar="N", help="at most N rounds of check and fix (default 5)")
    fix.add_argument("--dynamic", action="store_true", help="then write dynamic_shapes with every dimension torch keeps dynamic (could-be-dynamic)")
    fix.add_argument("--timeout", type=float, default=None, metavar="S", help=f"seconds per run (default: pyproject's timeout, else {DEFAULT_TIMEOUT:.0f})")
    fix.add_argument("--verify-budget", type=float, default=120.0, metavar="S", help="seconds for verifying the fixes of one round (default 120)")
    fix.add_argument("--jobs", type=int, default=2, metavar="N", help="fixes verified at once (default 2)")
    fix.add_argument("--memory-mb", type=int, default=8192, help="memory a job may add, in MB (0: no cap)")
    fix.add_argument("--python", default=None, help="interpreter with torch for the worker (default: pyproject's python, else this one)")
    _cache_options(fix)
    fix.add_argument("--verbose", action="store_true", help="show the worker's log on stderr")
    report = sub.add_parser("report", help="render JSON reports (`check --format json`) as one self-contained HTML page on stdout")
    report.add_argument("reports", nargs="+", metavar="REPORT.json", help="a JSON report (- for stdin); several are combined into one page (CI shards)")
    serve = sub.add_parser("serve", help="run the language server on stdin/stdout")
    serve.add_argument("--stdio", action="store_true", help="(the default; accepted for editor configs)")
    return parser


def _cache_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--cache-dir",
        default=None,
        metavar="DIR",
        help="keep the results cache in DIR (default: pyproject's cache-dir, else ~/.cache/exportlens/results; CI can keep DIR between runs)",
    )
    sub.add_argument("--no-cache", action="store_true", help="run every target, reusing and keeping nothing (also: EXPORTLENS_NO_CACHE=1)")


def _cache_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The results cache as the flags ask (`EngineSettings.resolved` decides the rest); `--trace-dir`
    asks for the traces of runs made now, so nothing is reused (what runs is still kept)."""
    out = {"cache": False if args.no_cache else None, "cache_dir": os.path.abspath(args.cache_dir) if args.cache_dir else None}
    return out | ({"reuse": False} if getattr(args, "trace_dir", None) else {})


def _verifying(args: argparse.Namespace) -> bool:
    if args.verify is not None:
        return bool(args.verify)
    return bool(args.fix or args.diff or args.format in ("json", "sarif", "html"))


def engine_settings(args: argparse.Namespace, cfg: project.ProjectConfig) -> EngineSettings:
    """Flags first, then `[tool.exportlens]`, then the defaults (`EngineSettings.resolved`)."""
    from exportlens.engine import EngineSettings

    jobs = {"jobs": max(1, args.jobs)} if args.jobs is not None else {}
    return EngineSettings.resolved(
        cfg,
        python=args.python,
        timeout=args.timeout,
        compile_backend=args.compile_backend,
        draft=getattr(args, "draft", None),
        default_timeout=DEFAULT_TIMEOUT,
        knob="--timeout",
        memory_mb=args.memory_mb,
        trace_dir=getattr(args, "trace_dir", None),
        **_cache_settings(args),
        **jobs,
    )


def config_errors(paths: list[str]) -> list[str]:
    """Every bad `[tool.exportlens]` value of the projects the paths belong to, as `file:line: message`."""
    out: list[str] = []
    for root in dict.fromkeys(project.find_root(p) for p in paths):
        cfg = project.load_config(root)
        out += [f"{_display_path(cfg.path)}:{e.line + 1}: {e.message}" for e in cfg.errors]
    return out


async def _check(args: argparse.Namespace) -> tuple[Report, float, list[FileResult]]:
    from exportlens.engine import Engine  # not needed by `serve`: it starts faster

    settings = engine_settings(args, project.load_config(project.find_root(args.paths[0])))
    log = (lambda line: print(line, file=sys.stderr)) if args.verbose else None
    engine = Engine(settings, log=log)
    progress = CliProgress()
    ticker = asyncio.ensure_future(progress.run())

    verifying = _verifying(args)
    results: list[FileResult] = []

    def file_done(result: FileResult) -> None:
        progress.file_done(result.path)
        results.append(result)
        _say_profiles(result)

    started = time.perf_counter()

    try:
        shard = shards.parse(args.shard) if args.shard else None
        report = await engine.check_paths(
            args.paths,
            on_file=file_done,
            on_phase=progress.phase,
            on_early=progress.failed,
            save_op_profiles=args.save_op_profiles,
            outputs=verifying,
            keep=(lambda f: shards.in_shard(f, shard)) if shard else None,
        )
        if verifying:
            from exportlens import verify
            from exportlens.fix_registry import read_disk

            for result in results:
                if verify.to_verify(result.diagnostics):
                    await verify.verify_result(engine, result, read=read_disk, budget=args.verify_budget, jobs=args.jobs or os.cpu_count() or 2)
    finally:
        ticker.cancel()
        await engine.close()
    return report, time.perf_counter() - started, results


def _say_profiles(result: FileResult) -> None:
    for trace in result.trace_files:
        print(
            f"exportlens: {_display_path(result.path)}: torch's structured trace: {_display_path(trace)} "
            f"(render it with `tlparse {_display_path(trace)} --export`)",
            file=sys.stderr,
        )
    for saved in result.op_profiles:
        if saved.get("file"):
            print(f"exportlens: wrote {_display_path(saved['file'])} ({', '.join(saved['ops'])})", file=sys.stderr)
        else:
            print(f"exportlens: {_display_path(result.path)}: no op profiles saved: {saved.get('error')}", file=sys.stderr)


def _with_fixes(report: Report) -> None:
    try:
        from exportlens import fix_registry
    except ImportError:
        return
    fix_registry.attach(report.diagnostics)


def run_check(args: argparse.Namespace) -> int:
    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        for p in missing:
            print(f"exportlens: error: no such file or directory: {p}", file=sys.stderr)
        return 2
    bad = config_errors(args.paths)
    if args.shard:
        try:
            shards.parse(args.shard)
        except ValueError as exc:
            bad.append(str(exc))
    if bad:
        for line in bad:
            print(f"exportlens: error: {line}", file=sys.stderr)
        return 2
    report, seconds, results = asyncio.run(_check(args))
    _with_fixes(report)
    if args.fix or args.diff:
        from exportlens import fix_registry

        changed = fix_registry.apply_preferred(report.diagnostics, write=args.fix, assume=args.assume)
        if args.diff:
            sys.stdout.write(changed.diff)
        if args.fix:
            print(changed.summary(), file=sys.stderr)
        elif changed.skipped:
            print("\n".join(f"not fixed: {s}" for s in changed.skipped), file=sys.stderr)
        return 1 if count_problems(report) else 0
    if args.format in ("json", "html"):
        from exportlens.report import jsonreport, page

        run = jsonreport.run_facts(f"exportlens check {' '.join(args.paths)}", seconds) | ({"shard": args.shard} if args.shard else {})
        doc = jsonreport.build(report, results, show_ignored=args.show_ignored, run=run)
        if args.format == "json":
            print(json.dumps(doc, indent=2, ensure_ascii=False))
        else:
            sys.stdout.flush()
            sys.stdout.buffer.write(page.to_bytes(page.render(jsonreport.parse(doc))))
    elif args.format == "sarif":
        from exportlens.sarif import to_sarif

        root = _repository_root(os.path.abspath(args.paths[0]))
        print(json.dumps(to_sarif(report.to_json(with_data=True), tool_version=__version__, root=root), indent=2, ensure_ascii=False))
    else:
        print(format_text(report, seconds, show_ignored=args.show_ignored))
    if report.unsupported:  # one message for the whole run, whatever the number of export targets
        print(f"exportlens: {report.unsupported}", file=sys.stderr)
        return 2
    broken = [d for d in report.diagnostics if d.code == "worker-crashed" and "could not start its worker" in d.message]
    if broken:
        return 2
    return 1 if count_problems(report) else 0


def run_report(args: argparse.Namespace) -> int:
    """`exportlens report REPORT.json...`: the page of one JSON report, or of several combined."""
    from exportlens.report import jsonreport, page

    docs = []
    for path in args.reports:
        try:
            docs.append(jsonreport.read(path))
        except jsonreport.ReportError as exc:
            print(f"exportlens: error: {'stdin' if path == '-' else path}: {exc}", file=sys.stderr)
            return 2
    doc = docs[0] if len(docs) == 1 else jsonreport.merge(docs, run={**docs[0].get("run", {}), "combined": f"{len(docs)} reports"})
    sys.stdout.flush()
    sys.stdout.buffer.write(page.to_bytes(page.render(jsonreport.parse(doc))))
    return 0


async def _make_exportable(args: argparse.Namespace, files: list[str]) -> list[Any]:
    from exportlens.engine import Engine, EngineSettings
    from exportlens.fix_registry import read_disk
    from exportlens.make_exportable import make_exportable

    cfg = project.load_config(project.find_root(files[0]))
    settings = EngineSettings.resolved(
        cfg,
        python=args.python,
        timeout=args.timeout,
        default_timeout=DEFAULT_TIMEOUT,
        knob="--timeout",
        memory_mb=args.memory_mb,
        jobs=args.jobs,
        **_cache_settings(args),
    )
    log = (lambda line: print(line, file=sys.stderr)) if args.verbose else None
    engine = Engine(settings, log=log)
    try:
        return [
            await make_exportable(
                engine, f, read=read_disk, assume=args.assume, rounds=args.rounds, budget=args.verify_budget, jobs=args.jobs, dynamic=args.dynamic
            )
            for f in files
        ]
    finally:
        await engine.close()


def run_fix(args: argparse.Namespace) -> int:
    """`exportlens fix`: print the diff and a summary per file; write with --write; 0 only if all export."""
    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        for p in missing:
            print(f"exportlens: error: no such file or directory: {p}", file=sys.stderr)
        return 2
    from exportlens import project, targets
    from exportlens.fixes import unified_diff
    from exportlens.source import write_source

    files = []
    notebooks = [p for p in args.paths if os.path.isfile(p) and p.endswith(notebook.SUFFIX)]
    for p in notebooks:  # a cell's fix is applied in the editor, where the cell is
        why = "`exportlens fix` edits .py files; apply a notebook's fixes in the editor (quick fix on the cell)"
        print(f"exportlens: {_display_path(p)}: not fixed: {why}", file=sys.stderr)
    for p in args.paths:
        if p in notebooks:
            continue
        for f in project.python_files(p):
            try:
                tree = ast.parse(open(f, "rb").read())
            except (SyntaxError, ValueError, OSError):
                tree = None
            if os.path.isfile(p) or (tree is not None and targets.discover(tree, f).targets):
                files.append(f)
    outcomes = asyncio.run(_make_exportable(args, files)) if files else []
    all_pass = bool(outcomes) and not notebooks
    for out in outcomes:
        for path, (old, new) in out.changed().items():
            sys.stdout.write(unified_diff(old, new, _display_path(path)))
            if args.write:
                write_source(path, new)
        for note in out.not_taken():
            print(f"exportlens: not taken: {note}", file=sys.stderr)
        for d in out.remaining:
            print(f"exportlens: remains: {_display_path(d.file)}:{d.range.start.line + 1}: [{d.code}] {(d.message.splitlines() or [''])[0]}", file=sys.stderr)
        wrote = " (written)" if args.write and out.changed() else ""
        print(f"exportlens: {_display_path(out.owner)}: {out.summary()}{wrote}", file=sys.stderr)
        all_pass &= out.passes
    return 0 if all_pass else 1


def _repository_root(path: str) -> str:
    """SARIF paths are relative to the repository (what code scanning checks out), else cwd."""
    cur = path if os.path.isdir(path) else os.path.dirname(path)
    while True:
        if os.path.exists(os.path.join(cur, ".git")):
            return cur
        parent = os.path.dirname(cur)
        if parent == cur:
            return os.getcwd()
        cur = parent


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        from exportlens.lsp import handshake  # standard library only: answers `initialize` at once

        first = handshake.read_message(sys.stdin.buffer)
        early = handshake.answer_initialize(first, sys.stdout.buffer) if first else None
        start, python = handshake.worker_to_start(first)
        if start:  # torch imports while pygls does (below) and the editor opens its first file
            from exportlens.worker_client import prestart

            prestart(python)
        from exportlens.lsp.server import serve  # pygls and lsprotocol: most of a second

        serve(first, early)
        return 0
    try:
        if args.command == "report":
            return run_report(args)
        return run_fix(args) if args.command == "fix" else run_check(args)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # an internal error: say it plainly, exit 2
        print(f"exportlens: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
