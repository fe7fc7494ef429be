"""The quick tier's tripwire (tests/conftest.py puts this folder first on PYTHONPATH for each quick
test): a Python process started by the test that imports torch writes one line to the file named
by EXPORTLENS_TEST_TORCH_LOG, and the test fails. It only watches; the import goes on as usual."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType


class _TorchImportLog:
    def find_spec(self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None) -> ModuleSpec | None:
        if name == "torch":
            sys.meta_path.remove(self)  # once is enough; the real finders do the import
            with open(os.environ["EXPORTLENS_TEST_TORCH_LOG"], "a", encoding="utf-8") as log:
                log.write(f"pid {os.getpid()}: {' '.join(sys.argv)}\n")
        return None


if os.environ.get("EXPORTLENS_TEST_TORCH_LOG"):
    sys.meta_path.insert(0, _TorchImportLog())
