"""Write the README's table of diagnostic codes from their records in server/exportlens/codes.py.

    .venv/bin/python tools/codes_table.py          # rewrite the table in README.md
    .venv/bin/python tools/codes_table.py --check  # exit 1 if README.md's table is not the records'

What a code means to users (`CodeInfo.shows`) and the fix it offers (`CodeInfo.offers`) live in
the code's record with everything else about it, so a new code is not wired by hand into the
README: run this after adding or changing a record (tests/torchfree/test_code_table.py checks it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "server"))

from exportlens.codes import CODES  # noqa: E402
from exportlens.model import SEVERITY_NAMES  # noqa: E402

README = ROOT / "README.md"
BEGIN = "<!-- codes: the table below is written by tools/codes_table.py from codes.py; edit the records, not the table -->"
END = "<!-- codes: end -->"


def table() -> str:
    rows = ["| code | level | what happened | the fix it offers |", "|---|---|---|---|"]
    for code, info in CODES.items():
        cells = [f"`{code}`", SEVERITY_NAMES[info.severity], info.shows, info.offers]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows)


def render(readme: str) -> str:
    """`readme` with the text between the markers replaced by the records' table."""
    head, begin, rest = readme.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise SystemExit(f"README.md has no {BEGIN!r} … {END!r} block")
    return f"{head}{BEGIN}\n{table()}\n{END}{tail}"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only say whether README.md's table is up to date")
    args = parser.parse_args(argv)
    current = README.read_text(encoding="utf-8")
    wanted = render(current)
    if args.check:
        if current != wanted:
            print("README.md's table of codes is out of date: run tools/codes_table.py", file=sys.stderr)
            return 1
        return 0
    README.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
