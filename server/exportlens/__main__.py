"""`python -m exportlens`."""

import sys

from exportlens.cli import main

if __name__ == "__main__":
    sys.exit(main())
