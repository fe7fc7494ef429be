"""`python -m exportlens.worker`: start the zygote (see zygote.py)."""

import sys

from exportlens.worker.zygote import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
