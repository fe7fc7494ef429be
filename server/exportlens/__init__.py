"""ExportLens: PyTorch's export and compile diagnostics on the user's own lines."""

__version__ = "0.1.0"
