"""The judge: plain `torch.export.export` on every export target, and which of the dimensions each
call asked to be dynamic came out dynamic (an oracle written apart from the worker).

`python tests/plain_dynamic.py PATH...` (files or folders) prints one JSON object
{"<file relative to its folder>:<target>": {"result": "ok" | "<exception>", "requested": ["x.shape[1]"],
"dynamic": [...]}}. A script's own export calls are recorded as the script runs (`export at
file.py:LINE`, as ExportLens names them; a call never reached has no entry); ExportDB variables
(`model`, `example_args`, `example_kwargs`, `dynamic_shapes`) are the target `model`; a factory named
under `[tool.exportlens] targets` is `file.py:factory`. Only dict specs keyed by the forward's argument
names are read for dynamism (what the examples use); a placeholder is the input of the same name.
`python tests/plain_dynamic.py --each PATH...` judges each path apart, as a fresh interpreter each
would (a fork of one that imported torch), and prints {PATH: that path's object}.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import tomllib
from typing import Any

import torch
from torch.fx.experimental.symbolic_shapes import is_concrete_int

REAL_EXPORT = torch.export.export


def requested(spec: Any) -> list[tuple[str, int]]:
    out = []
    for name, dims in spec.items() if isinstance(spec, dict) else ():
        for dim, s in dims.items() if isinstance(dims, dict) else enumerate(dims or ()):
            kind = getattr(getattr(s, "type", None), "name", None)
            if s is not None and not isinstance(s, int) and kind != "STATIC":
                out.append((name, int(dim)))
    return out


def judge(results: dict[str, dict[str, Any]], key: str, mod: Any, args: Any, kwargs: Any = None, **options: Any) -> Any:
    asked = requested(options.get("dynamic_shapes"))
    entry: dict[str, Any] = {"requested": [f"{n}.shape[{d}]" for n, d in asked], "dynamic": []}
    results[key] = entry
    try:
        ep = REAL_EXPORT(mod, args, kwargs, **options)
    except Exception as exc:
        entry["result"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        raise
    entry["result"] = "ok"
    shapes = {n.name: n.meta["val"].shape for n in ep.graph.nodes if n.op == "placeholder" and hasattr(n.meta.get("val"), "shape")}
    # a static size can be a SymInt too (a number inside): dynamic means it is not a concrete int
    entry["dynamic"] = [f"{n}.shape[{d}]" for n, d in asked if n in shapes and not is_concrete_int(shapes[n][d])]
    return ep


def judge_file(path: str, prefix: str, factories: list[str], results: dict[str, dict[str, Any]]) -> None:
    sys.path.insert(0, os.path.dirname(path))

    def recorded(mod: Any, args: Any, kwargs: Any = None, **options: Any) -> Any:
        line = sys._getframe(1).f_lineno
        return judge(results, f"{prefix}:export at {os.path.basename(path)}:{line}", mod, args, kwargs, **options)

    torch.export.export = recorded  # type: ignore[assignment]
    try:
        ns = runpy.run_path(path, run_name="__main__")
    except BaseException:
        ns = {}
    finally:
        torch.export.export = REAL_EXPORT
    specs = [("model", ns)] if "model" in ns and "example_args" in ns else []
    for name in factories:
        try:
            spec = ns[name]()
        except Exception:
            continue
        spec = spec if isinstance(spec, dict) else dict(zip(("model", "example_args", "example_kwargs"), spec, strict=False))
        specs.append((f"{os.path.basename(path)}:{name}", spec))
    for name, spec in specs:
        args = spec["example_args"]
        args = args if isinstance(args, tuple) else (args,)
        try:
            judge(results, f"{prefix}:{name}", spec["model"], args, spec.get("example_kwargs"), dynamic_shapes=spec.get("dynamic_shapes"))
        except Exception:
            pass
    sys.path.remove(os.path.dirname(path))


def factories_of(path: str) -> list[str]:
    """The factories `[tool.exportlens] targets` of the nearest pyproject.toml names in this file."""
    folder = os.path.dirname(os.path.abspath(path))
    while True:
        config = os.path.join(folder, "pyproject.toml")
        if os.path.exists(config):
            with open(config, "rb") as fh:
                targets = tomllib.load(fh).get("tool", {}).get("exportlens", {}).get("targets", [])
            return [t.split(":")[1] for t in targets if os.path.abspath(os.path.join(folder, t.split(":")[0])) == os.path.abspath(path)]
        if os.path.dirname(folder) == folder:
            return []
        folder = os.path.dirname(folder)


def main(paths: list[str]) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    for top in paths:
        files = [top] if os.path.isfile(top) else sorted(os.path.join(d, f) for d, _, fs in os.walk(top) for f in fs if f.endswith(".py") and "libsrc" not in d)
        for path in files:
            text = open(path, encoding="utf-8").read()
            if "torch.export" not in text and "example_args" not in text and not factories_of(path):
                continue
            prefix = os.path.relpath(path, top) if os.path.isdir(top) else os.path.basename(path)
            judge_file(os.path.abspath(path), prefix, factories_of(path), results)
    return results


def each(paths: list[str]) -> dict[str, dict[str, dict[str, Any]]]:
    """`main([path])` for each path, each in a child forked from this interpreter, which has imported
    only torch: what a fresh interpreter per path would say, without importing torch again for each."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for path in paths:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            try:
                with os.fdopen(write, "w") as fh:
                    json.dump(main([path]), fh)
            finally:
                os._exit(0)
        os.close(write)
        with os.fdopen(read) as fh:
            text = fh.read()
        os.waitpid(pid, 0)
        out[path] = json.loads(text)  # an empty pipe (the child died) fails here, loudly
    return out


if __name__ == "__main__":
    # `--each PATH...`: {PATH: that path's object}, each judged apart (see `each`)
    print(json.dumps(each(sys.argv[2:]) if sys.argv[1:2] == ["--each"] else main(sys.argv[1:])))
