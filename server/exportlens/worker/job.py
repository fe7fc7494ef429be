"""One job, in its own fresh process: run the user's file, analyse every target it names.

A job request (JSON) is `{"file", "root", "main": bool, "factories": [names], "module_vars": bool,
"source": text}`. `source` is the text the server planned (the editor's buffer, or one snapshot
of the file): the job compiles that text under the file's real name rather than reading the disk
again, which an editor may be rewriting at this very moment. Optionally `"overrides": {path: text}`:
texts of other files (helpers) to run instead of their disk contents; `source` and `overrides`
are both served by `overlay` (nothing is written to disk). For fix verification, `"outputs": true`
also runs each model eagerly on its example inputs and reports a fingerprint of the outputs, and
`"plain_export": true` runs plain `torch.export.export` on every target draft export found clean.
Each analysed target is written to `emit` as soon as it is done, so a crash later in the
script keeps the targets already finished.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import torch

from exportlens.worker import beside, capture, compat, compile_watch, dependencies, dynamic_probe, overlay, plain, stacks, trace_watch

Emit = Callable[[dict[str, Any]], None]
DRAFT_GOES_PAST = ("constraint", "data-dependent", "missing-fake-kernel")  # plain export's failures draft export continues after


class Recorder:
    """Stands in for `torch.export.export` while the user's script runs.

    Each call runs the user's own export (then draft export where it adds something) with the same
    arguments, reports it as a target, and returns the program so the script goes on as it would have.
    """

    def __init__(self, emit: Emit, root: str) -> None:
        self.emit = emit
        self.root = root
        self.defines: dict[str, dict[str, Any]] = {}
        self.reported: set[int] = set()
        self.values: dict[str, Any] = {}
        self.save_profiles = False
        self.outputs = False  # fingerprint the eager outputs (fix verification compares them)
        self.draft = "auto"  # "always": draft export runs even where plain export passes without custom ops
        self.beside = False  # draft export may run in a fork beside plain export (beside.py)
        self.probe = False  # a passing export that left dimensions static is probed with Dim.AUTO (dynamic_probe.py)
        self.probe_beside = False  # ... in a fork beside plain export
        self.observer: dynamic_probe.Observer | None = None  # the model's calls before its export
        self.count = 0
        self._active = False
        self.floats: list[dict[str, Any]] = []  # where each unbacked float symbol came from, in order
        self._export = torch.export.export
        self._draft = compat.draft_export(torch.export)

    def install(self) -> None:
        if self.probe and compat.additional_inputs(torch.export) is not None:
            self.observer = dynamic_probe.Observer(lambda: self._active)
            self.observer.install()
        torch.export.export = self._record  # type: ignore[assignment]
        torch.export.draft_export = self._record  # type: ignore[assignment]
        self._wrap_define()
        if self._draft is not None:
            self._wrap_real_values()
            self._wrap_float_symbols()

    def installed(self) -> bool:
        """Whether torch.export.export is still ours (user code may have replaced it)."""
        return torch.export.export == self._record and torch.export.draft_export == self._record

    def _wrap_real_values(self) -> None:
        """Keep the real value draft export saw for each unbacked symbol (`u0` was 4)."""
        from torch.fx.experimental import symbolic_shapes

        hook = compat.unbacked_value_hook(symbolic_shapes.ShapeEnv)
        if hook is None:
            return
        original = getattr(symbolic_shapes.ShapeEnv, hook)
        values = self.values

        def record(env: Any, k: Any, v: Any) -> Any:
            try:
                values.setdefault(str(k), v.item() if isinstance(v, torch.Tensor) else int(v) if float(v).is_integer() else float(v))
            except Exception:
                pass
            return original(env, k, v)

        setattr(symbolic_shapes.ShapeEnv, hook, record)

    def _wrap_float_symbols(self) -> None:
        """Note the user's line of each float `.item()` export meets (`zuf0`, `zuf1`...), so torch ≤ 2.12's
        float-assert bug (compat.float_item_bug) can be put on that line."""
        from torch.fx.experimental import symbolic_shapes

        original = getattr(symbolic_shapes.ShapeEnv, "create_unbacked_symfloat", None)
        if original is None:
            return
        floats = self.floats

        def create(env: Any, *args: Any, **kwargs: Any) -> Any:
            sym = original(env, *args, **kwargs)
            try:
                caller = _user_caller()
                floats.append({"symbol": str(sym), **(caller or {})})
            except Exception:
                pass
            return sym

        symbolic_shapes.ShapeEnv.create_unbacked_symfloat = create  # type: ignore[method-assign,assignment]

        defer = getattr(symbolic_shapes.ShapeEnv, "guard_or_defer_runtime_assert", None)
        if defer is None:
            return

        def guard(env: Any, expr: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                names = sorted(str(s) for s in getattr(expr, "free_symbols", ()) if str(s).startswith("zuf"))
                if names:
                    caller = _user_caller()
                    floats.extend({"symbol": n, "expr": str(expr), "branch": True, **(caller or {})} for n in names)
            except Exception:
                pass
            return defer(env, expr, *args, **kwargs)

        symbolic_shapes.ShapeEnv.guard_or_defer_runtime_assert = guard  # type: ignore[method-assign,assignment]

    def _wrap_define(self) -> None:
        """Remember where each `torch.library` op was defined: torch keeps no location."""
        lib_define = torch.library.Library.define
        defines = self.defines

        def define(lib: Any, schema: str, *args: Any, **kwargs: Any) -> Any:
            name = lib_define(lib, schema, *args, **kwargs)
            caller = _user_caller()
            if caller is not None:
                op = schema.split("(", 1)[0].strip()
                defines.setdefault(f"{lib.ns}::{op}", caller)
            return name

        torch.library.Library.define = define  # type: ignore[method-assign,assignment]

        plain_define = torch.library.define

        def define_fn(qualname: Any, schema: Any, *args: Any, **kwargs: Any) -> Any:
            caller = _user_caller()
            if caller is not None and isinstance(qualname, str):
                defines.setdefault(qualname, caller)
            return plain_define(qualname, schema, *args, **kwargs)

        torch.library.define = define_fn  # type: ignore[assignment]

    def _record(
        self,
        mod: Any,
        args: Any,
        kwargs: Any = None,
        *,
        dynamic_shapes: Any = None,
        strict: bool = False,
        preserve_module_call_signature: tuple[str, ...] = (),
        prefer_deferred_runtime_asserts_over_guards: bool = False,
        **rest: Any,
    ) -> Any:
        if self._active:  # torch calling export internally
            return self._export(
                mod, args, kwargs, dynamic_shapes=dynamic_shapes, strict=strict, preserve_module_call_signature=preserve_module_call_signature, **rest
            )
        if self._draft is None:
            return self._unsupported_call(mod, args, kwargs, dynamic_shapes=dynamic_shapes, strict=strict, **rest)
        frame = sys._getframe(1)
        file, line = os.path.abspath(frame.f_code.co_filename), frame.f_lineno
        self.count += 1
        name = f"export at {os.path.basename(file)}:{line}"
        return self.run(
            name,
            file,
            line,
            mod,
            args,
            kwargs,
            dynamic_shapes=dynamic_shapes,
            strict=strict,
            preserve_module_call_signature=preserve_module_call_signature,
            prefer_deferred_runtime_asserts_over_guards=prefer_deferred_runtime_asserts_over_guards,
        )

    def _unsupported_call(self, mod: Any, args: Any, kwargs: Any, **options: Any) -> Any:
        """A script's export call on a torch without draft export: say so once per call, then export."""
        frame = sys._getframe(2)
        file, line = os.path.abspath(frame.f_code.co_filename), frame.f_lineno
        self.count += 1
        self.unsupported(f"export at {os.path.basename(file)}:{line}", file, line)
        try:
            return self._export(mod, args, kwargs, **options)
        except Exception as exc:  # the message said it all: no export-error on top of it
            exc._exportlens_reported = True  # type: ignore[attr-defined]
            raise

    def unsupported(self, name: str, file: str, line: int) -> None:
        self.emit(
            {
                "event": "target",
                "name": name,
                "file": file,
                "line": line,
                "kind": "export",
                "seconds": 0.0,
                "unsupported": "draft_export",
                "torch": str(torch.__version__),
            }
        )

    def _save_profiles(self, ep: Any, file: str, line: int) -> dict[str, Any]:
        stem = os.path.splitext(file)[0]
        suffix = "" if self.count <= 1 else f".{line}"
        return _save_profiles_to(ep, f"{stem}{suffix}.op_profiles.yaml")

    def run(self, name: str, file: str, line: int, mod: Any, args: Any, kwargs: Any = None, reraise: bool = True, probe: bool = True, **options: Any) -> Any:
        """The user's own export first, then draft export where it can add something; emit the target.

        Plain `torch.export.export` with the user's exact call decides (docs/torch-facts.md §9). It
        passes: the target is clean but for the dimensions it fixed, and draft export runs only for
        custom ops' fake kernels (or when the job asks for it always). It fails: its failure is
        streamed at once (the editor shows it before draft export starts), then draft export runs to
        find the rest (unless the failure is one draft export would only raise again). The script
        goes on with plain export's program, else draft export's; it gets plain export's exception
        when neither produced one.
        """
        if self._draft is None:
            self.unsupported(name, file, line)
            return None
        started = time.perf_counter()
        head = {"name": name, "file": file, "line": line, "kind": "export"}
        self.emit({"event": "phase", "phase": "exporting", "target": name})
        self.values.clear()
        self.floats.clear()
        # a module's or factory's target (no script goes on with the program) may have draft export beside
        fork = beside.Beside.start(functools.partial(self._draft_in_fork, head, mod, args, kwargs, options)) if self.beside and not reraise else None
        probing = probe and self.probe and dynamic_probe.wanted(options)
        # the probe only needs JSON back, so a script's own call may have it beside too
        probe_fork = (
            beside.Beside.start(functools.partial(self._probe_in_fork, mod, args, kwargs, options)) if probing and fork is None and self.probe_beside else None
        )
        self._active = True
        try:
            verdict = plain.run(self._export, mod, args, kwargs, compat.export_options(self._export, options), self.defines)
        except SystemExit as exc:  # the model itself called sys.exit(): the export never finished
            self._active = False
            for started_fork in (fork, probe_fork):
                if started_fork is not None:
                    started_fork.kill()
            why = f"the model called sys.exit({exc.code!r}) during the export, so it never finished"
            self.emit({"event": "target", **head, "seconds": time.perf_counter() - started, "exception": capture.exception_info(exc), "target_error": why})
            self.reported.add(id(exc))
            if reraise:
                raise
            return None
        finally:
            self._active = False
        event: dict[str, Any] = {"event": "target", **head, "plain": verdict.json, "plain_export": "ok" if verdict.ok else _first_line(verdict.exc)}
        symbol = compat.float_item_bug(verdict.exc) if verdict.exc is not None else None
        if not verdict.ok:
            self.emit({"event": "finding", **head, "plain": verdict.json})
        if symbol is not None:  # torch ≤ 2.12's solver bug: draft export would only hit it again
            mine = [f for f in self.floats if f.get("symbol") == symbol and f.get("file")]
            event["torch_bug"] = {
                "kind": "float-item-assert",
                "symbol": symbol,
                "created": next((f for f in mine if not f.get("branch")), None),
                "branch": next((f for f in mine if f.get("branch")), None),
            }
        if verdict.json.get("kind") in ("error", None) and verdict.exc is not None:
            event["exception"] = capture.exception_info(verdict.exc)
        ep = verdict.ep
        # after a failure, draft export can find more only past what it knows how to go past (it raises any other error the same way)
        wanted = (verdict.custom_ops or self.draft == "always") if verdict.ok else verdict.json.get("kind") in DRAFT_GOES_PAST
        draft_options = _draft_options(options, verdict)
        taken = None
        if fork is not None and wanted and draft_options is options:  # plain export decided: the fork's draft export as it is
            taken = fork.take()
        elif fork is not None:
            fork.kill()
        if wanted:
            self.emit({"event": "phase", "phase": "draft export", "target": name})
            if taken is not None:
                self._take_from_fork(event, taken, plain_ok=verdict.ok)
                event["draft_beside"] = True
            else:
                draft_ep = self._draft_run(event, head, mod, args, kwargs, draft_options, plain_ok=verdict.ok)
                ep = ep if ep is not None else draft_ep
        event["seconds"] = time.perf_counter() - started
        found = self._probe(verdict, probe_fork, mod, args, kwargs, options) if probing else None
        if found is not None:
            event["dynamic_probe"] = found
        event.update(self._eager(mod, args, kwargs))
        self.emit(event)
        if ep is None and verdict.exc is not None:
            self.reported.add(id(verdict.exc))
            if reraise:
                raise verdict.exc from None
        return ep

    def _probe(self, verdict: plain.Verdict, fork: beside.Beside | None, mod: Any, args: Any, kwargs: Any, options: dict[str, Any]) -> dict[str, Any] | None:
        """The Dim.AUTO probe of a passing export that left a dimension static (from the fork beside
        plain export when there is one), else None; never changes what the user's export did."""
        # a program with a problem to fix first (a requested dimension it fixed, a custom op draft export checks) is not probed
        if not verdict.ok or verdict.custom_ops or verdict.json.get("specialized") or dynamic_probe.all_dynamic(verdict.ep, args, kwargs):
            if fork is not None:
                fork.kill()
            return None
        taken = fork.take() if fork is not None else None
        if taken is not None and isinstance(taken["event"].get("dynamic_probe"), dict):
            return {**taken["event"]["dynamic_probe"], "beside": True}
        # after the user's export, still in a fork: what the probe's exports leave in torch's caches
        # must not reach the script's next export (nor theirs the probe: `_probe_in_fork`)
        after = beside.Beside.start(functools.partial(self._probe_in_fork, mod, args, kwargs, options))
        taken = after.take() if after is not None else None
        if taken is not None and isinstance(taken["event"].get("dynamic_probe"), dict):
            return dict(taken["event"]["dynamic_probe"])
        event: dict[str, Any] = {}  # no fork here, or it died: in this process, as a last resort
        self._probe_in_fork(mod, args, kwargs, options, self.emit, event, forked=False)
        return event.get("dynamic_probe")

    def _probe_in_fork(self, mod: Any, args: Any, kwargs: Any, options: dict[str, Any], emit: Emit, event: dict[str, Any], forked: bool = True) -> None:
        """The probe (`dynamic_probe.run`) in a fork, beside plain export or after it: its result into
        `event`. The fork starts from no dynamo cache: an export run before it in this process (the
        user's own, draft export) leaves traces of `torch.cond`'s branches specialised to the example's
        sizes, which Dim.AUTO would reuse and report as static (examples/draft_crash/cond_operands.py)."""
        if forked:
            torch._dynamo.reset()
        observed = self.observer.of(mod, args, kwargs) if self.observer is not None else []
        self._active = True
        try:
            event["dynamic_probe"] = dynamic_probe.run(self._export, mod, args, kwargs, compat.export_options(self._export, options), observed)
        finally:
            self._active = False

    def _draft_in_fork(self, head: dict[str, Any], mod: Any, args: Any, kwargs: Any, options: dict[str, Any], emit: Emit, event: dict[str, Any]) -> None:
        """Draft export in the fork beside plain export (`beside.py`): what it emits is buffered there."""
        self.emit = emit
        self._draft_run(event, head, mod, args, kwargs, options, plain_ok=False)

    def _take_from_fork(self, event: dict[str, Any], taken: dict[str, Any], *, plain_ok: bool) -> None:
        """The fork's draft export as if it had run here, after plain export: its events in order,
        its fields in the target event, the locals it saw after plain export's."""
        for emitted in taken["emitted"]:
            self.emit(emitted)
        fields = dict(taken["event"])
        if "draft_crash" in fields:  # the fork could not know plain export's verdict
            fields["draft_crash"] = {**fields["draft_crash"], "plain_export": "ok" if plain_ok else "failed"}
        if "values" in fields:
            fields["values"] = {**self.values, **fields["values"]}
        event.update(fields)

    def _draft_run(self, event: dict[str, Any], head: dict[str, Any], mod: Any, args: Any, kwargs: Any, options: dict[str, Any], *, plain_ok: bool) -> Any:
        """Draft export, its failures (each streamed as torch records it) into `event`; its program, if any.

        A crash of draft export is its own (plain export already decided): recorded in `event`
        (`draft_crash`) for the server to say so."""
        head = dict(head)

        def stream(kind: str, data: dict[str, Any], stack: list[dict[str, Any]]) -> None:
            item = capture.failure_json(kind, data, capture.intern_paths(), live_stack=stack)
            if "op" in data:
                item.update(capture.op_registration(str(data["op"]), self.defines))
            self.emit({"event": "finding", **head, "failures": [item]})

        watch = stacks.FailureWatch(stream)
        draft = self._draft
        assert draft is not None  # run() checked
        self._active = True
        try:
            with watch:
                ep = draft(mod, args, kwargs, **compat.export_options(draft, options))
        except (Exception, SystemExit) as exc:  # draft export re-raises all but constraint violations
            event["draft_crash"] = {**capture.exception_info(exc), "plain_export": "ok" if plain_ok else "failed"}
            event["failures"] = []
            return None
        finally:
            self._active = False
        failures = capture.report_failures(ep, self.defines, watch.stack_of)
        event["failures"] = failures
        event["values"] = dict(self.values)
        event["dynamic_shapes"] = capture.jsonable(options.get("dynamic_shapes")) if failures else None
        event["op_profiles"] = self._save_profiles(ep, head["file"], head["line"]) if self.save_profiles else None
        return ep

    def _eager(self, mod: Any, args: Any, kwargs: Any) -> dict[str, Any]:
        """The model run eagerly on its example inputs: a fingerprint of what it returned or raised."""
        if not self.outputs:
            return {}
        self._active = True  # not one of the script's own calls (dynamic_probe.Observer)
        try:
            with torch.no_grad():
                return {"outputs": capture.fingerprint(mod(*args, **(kwargs or {})))}
        except Exception as exc:
            return {"outputs_error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:500]}
        finally:
            self._active = False


def _first_line(exc: BaseException | None) -> str:
    """What plain export raised, in one line (fix verification compares it)."""
    text = str(exc) if exc is not None else ""
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"[:500]


def _draft_options(options: dict[str, Any], verdict: plain.Verdict) -> dict[str, Any]:
    """Draft export's arguments after plain export: the user's, but where their Dims were violated,
    the spec refined as torch suggested. Draft export would otherwise fail the same way first and
    trace the model a second time with every Dim made Dim.AUTO (docs/torch-facts.md §9)."""
    suggested = list(verdict.json.get("suggested") or [])
    spec = options.get("dynamic_shapes")
    if verdict.json.get("kind") != "constraint" or not spec or not suggested:
        return options
    try:
        from torch.export.dynamic_shapes import refine_dynamic_shapes_from_suggested_fixes

        # only the fixes: torch's parser reads every line after the heading, its error's footer too
        return {**options, "dynamic_shapes": refine_dynamic_shapes_from_suggested_fixes("Suggested fixes:\n" + "\n".join(suggested), spec)}
    except Exception:
        return options


def _save_profiles_to(ep: Any, path: str) -> dict[str, Any]:
    """Write the op profiles draft export recorded with torch's own YAML writer."""
    report = getattr(ep, "_report", None)
    profiles = getattr(report, "op_profiles", None)
    if not profiles:
        return {"file": None, "error": "draft export recorded no custom-op profiles for this target"}
    try:
        from torch._library.fake_profile import save_op_profiles

        save_op_profiles(profiles, path)
    except ImportError as exc:
        return {"file": None, "error": f"saving op profiles needs PyYAML in this interpreter ({exc})"}
    except Exception as exc:
        return {"file": None, "error": f"{type(exc).__name__}: {exc}"}
    return {"file": path, "ops": sorted(str(k) for k in profiles)}


def _user_caller() -> dict[str, Any] | None:
    """The innermost frame outside torch and exportlens (who called the registration)."""
    frame = sys._getframe(2)
    torch_dir = os.path.dirname(torch.__file__)
    here = os.path.dirname(os.path.dirname(__file__))
    while frame is not None:
        fn = frame.f_code.co_filename
        if not fn.startswith(torch_dir) and not fn.startswith(here):
            return {"file": os.path.abspath(fn), "line": frame.f_lineno}
        frame = frame.f_back  # type: ignore[assignment]
    return None


def _is_module(obj: Any) -> bool:
    return isinstance(obj, torch.nn.Module)


def _from_spec(spec: Any) -> dict[str, Any]:
    """A factory's result: a dict with the ExportDB names, or a tuple (model, args[, kwargs])."""
    if isinstance(spec, dict):
        return spec
    if isinstance(spec, (tuple, list)) and 2 <= len(spec) <= 3:
        out = {"model": spec[0], "example_args": spec[1]}
        if len(spec) == 3:
            out["example_kwargs"] = spec[2]
        return out
    raise TypeError(
        "an exportlens factory must return a dict with 'model' and 'example_args' "
        f"(optional 'example_kwargs', 'dynamic_shapes') or a tuple (model, args); got {type(spec).__name__}"
    )


def _run_spec(rec: Recorder, name: str, file: str, line: int, spec: dict[str, Any], emit: Emit, *, probe: bool = True) -> None:
    model = spec.get("model")
    args = spec.get("example_args", ())
    if not _is_module(model):
        _target_error(emit, name, file, line, f"'model' must be a torch.nn.Module instance, got {type(model).__name__}")
        return
    if not isinstance(args, tuple):
        args = tuple(args) if isinstance(args, list) else (args,)
    rec.run(
        name,
        file,
        line,
        model,
        args,
        spec.get("example_kwargs"),
        reraise=False,
        probe=probe,
        dynamic_shapes=spec.get("dynamic_shapes"),
        strict=bool(spec.get("strict", False)),
    )


def _target_error(emit: Emit, name: str, file: str, line: int, message: str, *, started: float | None = None, exc: BaseException | None = None) -> None:
    """A target (or the whole script) that could not be built or run: one `target` event says why."""
    event: dict[str, Any] = {
        "event": "target",
        "name": name,
        "file": file,
        "line": line,
        "kind": "export",
        "seconds": 0.0 if started is None else time.perf_counter() - started,
    }
    if exc is not None:
        event["exception"] = capture.exception_info(exc)
    event["target_error"] = message
    emit(event)


def run(request: dict[str, Any], emit: Emit) -> None:
    """Run the job described by `request`, emitting one event per target, and last what the
    results depend on (`dependencies.py`: the modules imported, lazily during export too)."""
    dependencies.install()
    try:
        _run(request, emit)
    finally:
        deps: dict[str, Any] | None
        try:
            deps = dependencies.event(str(request.get("root") or os.path.dirname(os.path.abspath(request["file"]))))
        except Exception:  # no record: the server caches nothing of this job
            deps = None
        if deps is not None:
            emit(deps)


def _run(request: dict[str, Any], emit: Emit) -> None:
    file = os.path.abspath(request["file"])
    root = os.path.abspath(request.get("root") or os.path.dirname(file))
    overrides = dict(request.get("overrides") or {})
    source = request.get("source")
    if source is not None:  # the planned text of the file itself
        overrides.setdefault(file, source)
    overlay.install(overrides)
    rec = Recorder(emit, root)
    rec.save_profiles = bool(request.get("save_op_profiles"))
    rec.outputs = bool(request.get("outputs"))
    rec.draft = str(request.get("draft") or "auto")
    # beside plain export only where nothing else would write to the events (watches, profiles) and a core is free
    rec.beside = bool(request.get("draft_beside")) and not (request.get("compile") or request.get("trace") or rec.save_profiles) and beside.cores() >= 2
    # the probe is for export targets alone: a compile or trace job's module calls are not watched
    rec.probe = bool(request.get("dynamic_probe", True)) and not (request.get("compile") or request.get("trace"))
    rec.probe_beside = rec.probe and bool(request.get("probe_beside")) and not rec.save_profiles and beside.cores() >= 2
    rec.install()
    if request.get("compile"):
        compile_watch.install(emit, root, str(request.get("compile_backend") or "eager"))
    if request.get("trace"):
        trace_watch.install(emit, root)
    if request.get("trace_dir"):  # draft export's own structured trace (what `tlparse --export` reads) goes there
        os.environ["TORCH_DTRACE"] = str(request["trace_dir"])
    sys.argv = [file]
    sys.path[:0] = [os.path.dirname(file)] + ([root] if root != os.path.dirname(file) else [])
    os.chdir(root)
    run_name = "__main__" if request.get("main") else "__exportlens_target__"
    started = time.perf_counter()
    # a script's own export calls happen while it runs; a module's targets come after its import
    emit({"event": "phase", "phase": "running the script" if request.get("main") else "importing", "target": os.path.basename(file)})
    namespace: dict[str, Any] = {}
    try:
        try:
            namespace = overlay.run_path(file, run_name)
        finally:
            compile_watch.finish()  # compile targets are reported once the script is done (or died)
    except SystemExit as exc:
        if id(exc) not in rec.reported and rec.count == 0 and not request.get("compile") and not request.get("trace"):
            # sys.exit(0) too: the targets never ran, and a silent "0 problems" would say they were fine
            _target_error(
                emit, os.path.basename(file), file, 1, f"the script called sys.exit({exc.code!r}) before any export target ran", started=started, exc=exc
            )
        return
    except BaseException as exc:
        if id(exc) in rec.reported or getattr(exc, "_exportlens_reported", False):
            return
        _target_error(emit, os.path.basename(file), file, 1, "running the file raised", started=started, exc=exc)
        return
    if request.get("main") and rec.count == 0 and not rec.installed():
        _target_error(
            emit,
            os.path.basename(file),
            file,
            1,
            "the script replaced torch.export.export before calling it, so ExportLens could not "
            "see the export (call the real torch.export.export, or declare a target with "
            "`model` and `example_args`)",
            started=started,
        )
    lines = request.get("lines", {})
    if request.get("module_vars") and "model" in namespace and "example_args" in namespace:
        module_spec: dict[str, Any] = namespace
        _safe_spec(rec, "model", file, int(lines.get("model", 1)), lambda: module_spec, emit)
    for factory in request.get("factories", []):
        line = int(lines.get(factory, 1))
        name = f"{os.path.basename(file)}:{factory}"
        fn = namespace.get(factory)
        if not callable(fn):
            _target_error(emit, name, file, line, f"no callable named '{factory}' in {os.path.basename(file)}")
            continue
        emit({"event": "phase", "phase": "building the model", "target": name})  # the factory runs the user's code
        _safe_spec(rec, name, file, line, functools.partial(_call_factory, fn), emit, probe=False)  # no call of the user's to edit


def _call_factory(fn: Callable[[], Any]) -> dict[str, Any]:
    return _from_spec(fn())


def _safe_spec(rec: Recorder, name: str, file: str, line: int, make: Callable[[], dict[str, Any]], emit: Emit, *, probe: bool = True) -> None:
    started = time.perf_counter()
    try:
        spec = make()
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        _target_error(emit, name, file, line, "building the target raised", started=started, exc=exc)
        return
    _run_spec(rec, name, file, line, spec, emit, probe=probe)
