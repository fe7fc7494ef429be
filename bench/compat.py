"""Findings on other torch releases, compared with the pinned one (a report, not a test).

For each torch version (default: the oldest supported, two in the middle, the newest), a venv is
kept in `${XDG_CACHE_HOME:-~/.cache}/exportlens/compat/torch-<ver>` (built on first use, reused
after; a folder that exists but cannot import torch is reported and skipped, it may still be
being built). `exportlens check examples/` runs once with this interpreter's torch (the
reference) and once per version with `--python <that venv>`; the (file, line, code) findings are
compared: same / missing / extra. Every difference is either explained in KNOWN (the README's
support table says the same) or printed as UNEXPLAINED, which makes the exit status 1.

    python bench/compat.py [--versions 2.8.0 2.10.0 2.12.1 2.14.1] [--old 2.7.0] [--no-build]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
MINILIB = EXAMPLES / "library_project" / "libsrc"
DEFAULT_VERSIONS = ["2.8.0", "2.10.0", "2.12.1", "2.14.1"]  # the oldest supported, two in the middle, the newest
OLD = "2.7.0"  # the newest release without torch.export.draft_export: must get the one clear message

Finding = tuple[str, int, str]

# (version prefix, file, line, code, "missing"|"extra") -> why. Keep in step with the README's support
# table: every other (file, line, code) difference measured so far was fixed in the worker's compat
# module or in the findings (README, "Supported torch versions").
_NO_GUARD_STACK = "recompile reasons carry no user stack before 2.11: the recompile goes on the `def`, not on the guarded line"
KNOWN: dict[tuple[str, str, int, str, str], str] = {
    (version, "compile/recompile_number.py", line, "recompile", side): _NO_GUARD_STACK
    for version in ("2.8", "2.10")
    for line, side in ((7, "missing"), (6, "extra"))
} | {
    ("2.8", file, line, code, side): "plain export of 2.8 already fails on `z[a]` (the index's bound check `-a > 9`): that is the finding"
    for file, line, code, side in (
        ("draft_crash/item_index.py", 11, "data-dependent-guard", "missing"),
        ("draft_crash/item_index.py", 10, "data-dependent-guard", "extra"),
        ("draft_crash/item_pick.py", 15, "draft-export-crashed", "missing"),
        ("draft_crash/item_pick.py", 15, "could-be-dynamic", "missing"),  # a failing export gets no hint
        ("draft_crash/item_pick.py", 11, "data-dependent-guard", "extra"),
    )
}


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "exportlens" / "compat"


def venv_python(version: str, build: bool) -> tuple[Path | None, str]:
    """The venv's interpreter for `version` (building it if absent), or None and why not."""
    venv = cache_dir() / f"torch-{version}"
    python = venv / "bin" / "python"
    if venv.exists():
        if _imports_torch(python):
            return python, "cached"
        return None, f"{venv.name} exists but cannot import torch yet (still being built?)"
    if not build:
        return None, f"{venv.name} is not built (run without --no-build)"
    print(f"building {venv} (torch=={version}; a few GB, minutes)...", file=sys.stderr, flush=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", f"torch=={version}"])
    if done.returncode != 0 or not _imports_torch(python):
        return None, f"pip install torch=={version} failed"
    (venv / ".ok").touch()
    return python, "built"


def _imports_torch(python: Path) -> bool:
    if not python.exists():
        return False
    probe = subprocess.run([str(python), "-c", "import torch"], capture_output=True)
    return probe.returncode == 0


def example_library(workdir: Path) -> Path:
    """The library example's `minilib`, installed (not editable) into a `site-packages` folder of its own:
    the cached venvs are shared and stay as built; the worker finds it on PYTHONPATH, outside the project."""
    site = workdir / "site-packages"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(site), str(MINILIB)],
        check=True,
        capture_output=True,
    )
    return site


def check(python: Path | None, library: Path | None = None) -> tuple[int, dict, str, float]:
    """`exportlens check examples/ --format json` with the worker on `python` (None: this one, which has minilib)."""
    cmd = [sys.executable, "-m", "exportlens", "check", str(EXAMPLES), "--format", "json"]
    path = [str(ROOT / "server")]
    if python is not None:
        cmd += ["--python", str(python)]
        path += [str(library)] if library is not None else []
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": os.pathsep.join(path)})
    seconds = time.perf_counter() - started
    try:
        doc = json.loads(done.stdout)
    except ValueError:
        doc = {}
    return done.returncode, doc, done.stderr, seconds


def findings(doc: dict) -> set[Finding]:
    out = set()
    for d in doc.get("diagnostics", []):
        rel = os.path.relpath(d["file"], EXAMPLES)
        out.add((rel, d["range"]["start"]["line"] + 1, d["code"]))
    return out


def reason(version: str, f: Finding, side: str) -> str | None:
    for (prefix, file, line, code, how), why in KNOWN.items():
        if version.startswith(prefix) and (file, line, code, how) == (*f, side):
            return why
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--versions", nargs="*", default=DEFAULT_VERSIONS)
    parser.add_argument("--old", default=OLD, help="a torch without draft_export, if its venv is cached ('' to skip)")
    parser.add_argument("--no-build", action="store_true", help="use cached venvs only")
    parser.add_argument("--build-only", metavar="VERSION", help="only build (or find) the cached venv of this torch, then stop")
    args = parser.parse_args()
    if args.build_only:
        python, how = venv_python(args.build_only, build=True)
        print(f"torch {args.build_only}: {how}", file=sys.stderr)
        return 0 if python is not None else 1

    workdir = Path(tempfile.mkdtemp(prefix="exportlens-compat-"))
    library = example_library(workdir)
    try:
        return compare(args, library)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        for left in (MINILIB / "build", *MINILIB.glob("*.egg-info")):
            shutil.rmtree(left, ignore_errors=True)


def compare(args: argparse.Namespace, library: Path) -> int:
    code, ref_doc, err, secs = check(None)
    ref = findings(ref_doc)
    ref_torch = ref_doc.get("torch", "?")
    if not ref:
        print(f"the reference run found nothing (exit {code}):\n{err}", file=sys.stderr)
        return 2
    rows = [("torch", "same", "missing", "extra", "exit", "seconds", "notes")]
    rows.append((f"{ref_torch} (reference)", str(len(ref)), "-", "-", str(code), f"{secs:.1f}", ""))
    details: list[str] = []
    unexplained = 0
    for version in args.versions:
        python, how = venv_python(version, build=not args.no_build)
        if python is None:
            rows.append((version, "-", "-", "-", "-", "-", how))
            continue
        code, doc, err, secs = check(python, library)
        got = findings(doc)
        missing, extra = sorted(ref - got), sorted(got - ref)
        rows.append((str(doc.get("torch", version)), f"{len(ref & got)}/{len(ref)}", str(len(missing)), str(len(extra)), str(code), f"{secs:.1f}", how))
        for side, items in (("missing", missing), ("extra", extra)):
            for f in items:
                why = reason(version, f, side)
                unexplained += why is None
                details.append(f"  {version} {side}: {f[0]}:{f[1]} {f[2]} — {why or 'UNEXPLAINED'}")
        if not doc:
            details.append(f"  {version}: no JSON from the CLI (exit {code}):\n{err[-2000:]}")
    if args.old:
        python, how = venv_python(args.old, build=False)
        if python is None:
            rows.append((args.old, "-", "-", "-", "-", "-", f"too old; {how}"))
        else:
            code, doc, err, secs = check(python, library)
            lines = [ln for ln in err.splitlines() if ln.strip()]
            # export targets are skipped there; compile and trace findings should still be the reference's
            runtime = {f for f in ref if f[0].startswith(("compile", "trace"))}
            got = findings(doc)
            rows.append(
                (
                    str(doc.get("torch", args.old)),
                    f"{len(got & runtime)}/{len(runtime)} compile+trace",
                    str(len(runtime - got)),
                    str(len(got - runtime)),
                    str(code),
                    f"{secs:.1f}",
                    f"{len(lines)} line(s) on stderr: " + (lines[0][:110] + "…" if lines else ""),
                )
            )
            if "Traceback" in err:
                unexplained += 1
                details.append(f"  {args.old}: a traceback reached the user:\n{err[-2000:]}")
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    if details:
        print("\ndifferences against the reference:")
        print("\n".join(details))
    print(f"\n{unexplained} unexplained difference{'s' if unexplained != 1 else ''}")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
