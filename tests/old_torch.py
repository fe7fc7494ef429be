"""A STAND-IN for an old torch (no `torch.export.draft_export`), for the "torch too old" message tests only.

`make_venv(dest)` builds a bare venv whose `torch` package is a tiny stub reporting
`__version__ = "2.7.0"`: it is not PyTorch, it has just what the worker touches before it finds
that draft export is missing. Each import of it appends the importing process id to the file
named by EXPORTLENS_STUB_TORCH_STARTS, so a test can count how many zygotes were started.
(The real torch 2.7.0 was checked by hand against the same behaviour; see the README.)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

VERSION = "2.7.0"
STARTS_ENV = "EXPORTLENS_STUB_TORCH_STARTS"

_STUB = {
    "__init__.py": f'''"""Test stand-in for torch {VERSION} (NOT PyTorch): a torch without torch.export.draft_export."""
import os

__version__ = "{VERSION}"
if os.environ.get("{STARTS_ENV}"):
    with open(os.environ["{STARTS_ENV}"], "a") as _fh:
        _fh.write(f"{{os.getpid()}}\\n")

from torch import export, jit, library, nn  # noqa: E402


def get_num_threads():
    return 1


def set_num_threads(n):
    pass


def compile(model=None, **kwargs):
    return model
''',
    "export/__init__.py": '''"""Stand-in: torch.export of a release before 2.8 (no public draft_export)."""


def export(mod, args, kwargs=None, **options):
    return None
''',
    "nn/__init__.py": """class Module:
    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)
""",
    "jit/__init__.py": """class TracerWarning(Warning):
    pass


class TracingCheckError(Exception):
    pass


def trace(func, example_inputs=None, *args, **kwargs):
    return func
""",
    "library/__init__.py": """class Library:
    def __init__(self, ns, kind):
        self.ns = ns

    def define(self, schema, *args, **kwargs):
        return schema.split("(", 1)[0]


def define(qualname, schema, *args, **kwargs):
    pass
""",
}

MODEL = """import torch


class M(torch.nn.Module):
    def forward(self, x):
        return x


model = M()
example_args = (1,)
"""

SCRIPT = """import torch


class M(torch.nn.Module):
    def forward(self, x):
        return x


if __name__ == "__main__":
    torch.export.export(M(), (1,))
    torch.export.export(M(), (2,))
"""


def make_venv(dest: Path) -> Path:
    """A venv at `dest` with the stub torch; returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True)
    site = next(dest.glob("lib/python3*/site-packages"))
    for rel, text in _STUB.items():
        path = site / "torch" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return dest / "bin" / "python"


def make_project(dest: Path) -> Path:
    """Three export targets in two files (module variables, two script calls)."""
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "pyproject.toml").write_text("[project]\nname = 'old'\nversion = '0'\n")
    (dest / "model.py").write_text(MODEL)
    (dest / "script.py").write_text(SCRIPT)
    return dest
