"""`python -m exportlens`.

`-m` puts the working directory first on `sys.path`, and an editor may start the server inside
the user's workspace: a `selectors.py` or `typing.py` there would run before any check of trust.
So the first thing done here, before importing anything else, is to take that entry out. (Modules
Python imports for `-m` itself, before this file runs, are protected only by `python -P`, which the
README's recipes use; the VS Code extension starts the server outside the workspace, with
PYTHONSAFEPATH set.)
"""

import os
import sys

if not sys.flags.safe_path and sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]
if os.environ.pop("EXPORTLENS_SAFEPATH", None) == "1":  # set by the extension with PYTHONSAFEPATH:
    os.environ.pop("PYTHONSAFEPATH", None)  # the worker and the user's own subprocesses must not inherit it

from exportlens.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
