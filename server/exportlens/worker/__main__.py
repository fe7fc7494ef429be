"""`python -m exportlens.worker`: start the zygote (see zygote.py).

The server starts it in our own package folder, but whoever starts it elsewhere must not import
the working directory's modules either: that entry leaves `sys.path` before anything else is imported.
"""

import os
import sys

if not sys.flags.safe_path and sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from exportlens.worker.zygote import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
