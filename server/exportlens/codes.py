"""The one table of ExportLens diagnostic codes: one record per code.

Codes are stable strings: editors, CI filters and SARIF consumers (GitHub code scanning keys
alerts by rule id) depend on them, so a code is never renamed once shipped. Everything known about
a code lives in its record - title, help text, default severity (and so whether it is a problem),
documentation link, the type of its `Diagnostic.data` (`protocol.py`) and its fixers
(each beside the generators it calls, under `fixes/`) - so the CLI, the language server, the SARIF writer and the fix registry say
the same thing. No torch: the server, the CLI and the fixes import it (the worker does not).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from . import protocol
from .fixes.common import Fixer
from .fixes.compile_fixes import compile_finding
from .fixes.data_dependent_fix import data_dependent
from .fixes.deprecated_fix import deprecated_api
from .fixes.dynamic_shapes_fix import dim_specialized, guard_added
from .fixes.dynamic_spec import could_be_dynamic
from .fixes.fake_kernel import missing_fake_kernel
from .fixes.mismatch_fix import mismatched_fake_kernel
from .fixes.suppress_fix import unused_ignore
from .model import ERROR, HINT, INFORMATION, WARNING, Diagnostic, Range, Related, Verification, is_problem

# Documentation roots. PyTorch moved its compiler pages under user_guide/torch_compiler/ (the
# old paths redirect there); these are the current canonical stable locations.
_DOCS = "https://docs.pytorch.org/docs/stable/"
_COMPILER = _DOCS + "user_guide/torch_compiler/"

DRAFT_EXPORT_URL = _COMPILER + "export/draft_export.html"
EXPORT_PROGRAMMING_MODEL_URL = _COMPILER + "export/programming_model.html"
GUARD_ON_DATA_DEPENDENT_URL = _COMPILER + "compile/dynamic_shapes_troubleshooting_guardon_errors.html"
REGISTER_FAKE_URL = _DOCS + "library.html#torch.library.register_fake"
GRAPH_BREAKS_URL = _COMPILER + "compile/programming_model.graph_breaks_index.html"
RECOMPILATION_URL = _COMPILER + "compile/programming_model.recompilation.html"
JIT_TRACE_URL = _DOCS + "generated/torch.jit.trace.html"
TORCH_CHECK_URL = _DOCS + "generated/torch._check.html"
PYTHON_SYNTAX_ERROR_URL = "https://docs.python.org/3/library/exceptions.html#SyntaxError"


@dataclass(frozen=True)
class CodeInfo:
    """What a person needs to know about one diagnostic code."""

    code: str
    title: str  # short, one line: SARIF shortDescription, hover heading
    help: str  # one paragraph for a person: what it means and what to do
    severity: int  # default LSP DiagnosticSeverity (1 error, 2 warning, 3 information, 4 hint)
    url: str | None  # documentation page, None when no page fits
    data: Any = field(kw_only=True)  # the TypedDict (or union of them) of its `Diagnostic.data`, from protocol.py
    fixers: tuple[Fixer, ...] = field(default=(), kw_only=True)  # what computes its quick fixes, in order
    # how the rest of ExportLens treats its findings (each read here, never listed elsewhere):
    suppressible: bool = field(default=True, kw_only=True)  # an `# exportlens: ignore` may silence it (suppress.py)
    breaks_target: bool = field(default=False, kw_only=True)  # the target no longer runs: a fix that brings one breaks it (verify.py)
    one_per_message: bool = field(default=False, kw_only=True)  # findings on one line stay apart when their messages differ (engine.py)
    compile_finding: bool = field(default=False, kw_only=True)  # torch.compile's: a fix passes once none is left, no plain export judges it (verify.py)
    makes_dynamic: bool = field(default=False, kw_only=True)  # a hint whose fix is verified like a problem's: it claims dimensions dynamic (verify.py)
    passes: str = field(default="export passes ✓", kw_only=True)  # what a verified fix that leaves no problem says (model.Verification.words)
    # its row of the README's table of codes (tools/server_facts.py writes it): what happened, and
    # the fix it offers ("—": none; a code with fixers says what they do)
    shows: str = field(default="", kw_only=True)
    offers: str = field(default="—", kw_only=True)

    @property
    def problem(self) -> bool:
        """Whether a finding of this code at its default level is a problem (it fails a check)."""
        return is_problem(self.severity)


_TABLE: tuple[CodeInfo, ...] = (
    CodeInfo(
        "data-dependent-guard",
        "Export cannot decide a condition that depends on tensor data",
        "The traced code branches on, or sizes a tensor by, a value that is only known once real "
        "data flows through the model (typically the result of .item(), .tolist() or "
        ".nonzero()). torch.export traces with fake tensors, so it cannot know that value and "
        "draft export assumed the result observed on the example inputs. Tell export what holds "
        "with torch._check(...) on the value, rewrite the branch with torch.cond, or compute the "
        "value from tensor shapes instead of tensor contents.",
        ERROR,
        GUARD_ON_DATA_DEPENDENT_URL,
        data=protocol.DataDependentData | protocol.TorchBugData,
        fixers=(data_dependent,),
        shows="export could not decide a condition or a size that depends on tensor data (`if n > 2`, `if x.sum() > 0`, `x.split(n)`)",
        offers=(
            "`torch._check(...)` above the statement (observed branch preferred, the other as alternative); a"
            " `torch.cond` rewrite for tensor conditions; pinning the value where only that works (`split`)"
        ),
    ),
    CodeInfo(
        "missing-fake-kernel",
        "Custom operator has no fake (meta) kernel",
        "A custom operator was called during export, but it has no fake implementation, so "
        "export cannot work out the shapes and dtypes of its outputs without running it. "
        "Register one with torch.library.register_fake (or @op.register_fake for a "
        "torch.library.custom_op) that returns empty tensors of the right shape, dtype and "
        "device; draft export recorded the shapes it observed to help you write it.",
        ERROR,
        REGISTER_FAKE_URL,
        data=protocol.FakeKernelData,
        fixers=(missing_fake_kernel,),
        shows="a custom op has no fake kernel; placed on every call site and on the op's definition",
        offers=(
            "a generated `@op.register_fake` kernel (dims equal to an input's are kept, the others become "
            "`new_dynamic_size()`); `--save-op-profiles` writes torch's YAML profiles"
        ),
    ),
    CodeInfo(
        "mismatched-fake-kernel",
        "Fake kernel disagrees with the real operator",
        "The fake (meta) implementation registered for this custom operator returns outputs "
        "whose shape, dtype or strides differ from what the real kernel produced on the example "
        "inputs. Export trusts the fake kernel, so the exported graph would be wrong. Fix the "
        "function registered with torch.library.register_fake so that it describes the real "
        "outputs exactly, then check it with torch.library.opcheck.",
        WARNING,
        REGISTER_FAKE_URL,
        data=protocol.FakeKernelData,
        fixers=(mismatched_fake_kernel,),
        shows="the fake kernel disagrees with the real one (dtype, size); on the call, the definition and the fake",
        offers="the existing fake function corrected from the real metadata",
    ),
    CodeInfo(
        "guard-added",
        "Export had to specialize or constrain a dynamic dimension",
        "A dimension you declared dynamic (through dynamic_shapes) was compared, branched on or "
        "combined in a way that only holds for some sizes, so export added a guard that narrows "
        "or fixes its range, and torch.export.export fails with a constraint violation. State "
        "the real constraint in dynamic_shapes as torch suggests (a narrower Dim(..., min=..., "
        "max=...), or a derived dimension such as 2 * _n), give the example a size of 2 or more "
        "where it has 0 or 1, or rewrite the code that fixes it; a static size gives the "
        "dimension up.",
        ERROR,
        EXPORT_PROGRAMMING_MODEL_URL,
        data=protocol.GuardAddedData,
        fixers=(guard_added,),
        shows=(
            "your `torch.export.export` fails with a constraint violation: a dimension marked dynamic "
            '(`Dim("seq", min=4, max=64)`) is narrowed, tied or fixed by the code, or the example has size '
            "0/1 there; one finding per violated dimension, on the line whose guard violated it (inside a "
            "library: your call into it, the library's line related)"
        ),
        offers=(
            "torch's own suggestion, edited where you wrote the Dim (bound to a name, inline, in a helper): a"
            ' narrower range (`Dim("seq", min=17, max=64)`), a derived dimension (`_n = Dim("_n", min=1, '
            "max=512)` above, then `n = 2 * _n`); for a 0/1 size, the example's literal size (`(1, 1)` → `(1,"
            " 2)`); a `torch.cond` rewrite of your `if` that fixed it; `Dim.STATIC` only as the alternative "
            "that gives the dimension up"
        ),
    ),
    CodeInfo(
        "export-error",
        "torch.export failed",
        "torch.export raised an error that draft export could not turn into a report entry, so "
        "no graph was produced for this target. The message carries PyTorch's own explanation; "
        "fix the line it points at and run the check again.",
        ERROR,
        DRAFT_EXPORT_URL,
        data=protocol.ExportErrorData,
        breaks_target=True,
        one_per_message=True,
        shows="export itself raised (wrong inputs, a torch error)",
    ),
    CodeInfo(
        "graph-break",
        "torch.compile graph break",
        "TorchDynamo could not trace this code into the compiled graph, so it split the graph "
        "here and runs the code in ordinary Python. Each break costs speed, and with "
        "fullgraph=True (or torch.export) it is an error. Rewrite the construct in a traceable "
        "form, move it out of the compiled region, or wrap the untraceable part in a custom "
        "operator.",
        WARNING,
        GRAPH_BREAKS_URL,
        data=protocol.GraphBreakData,
        fixers=(compile_finding,),
        compile_finding=True,
        passes="no graph break left ✓",
        shows=(
            "`torch.compile` breaks the graph (dynamo's own logs, with the gb id and its page), on the line torch names: dynamo's own user stack for the break"
        ),
        offers=(
            "where dynamo's log says what helps: a `torch.cond` rewrite of a data-dependent branch, "
            "`capture_scalar_outputs` for `.item()`, a reorderable logging function for `print`, "
            "`@torch.compiler.disable` on an untraceable helper; the other hints in the message and `data`"
        ),
    ),
    CodeInfo(
        "recompile",
        "torch.compile recompiles this function",
        "A guard of the compiled code failed on a later call (a new shape, a changed Python "
        "constant or a different input type), so torch.compile compiled the function again. "
        "Repeated recompiles waste time and can hit the recompile limit. Mark the changing "
        "dimensions dynamic or wrap changing Python numbers in tensors.",
        WARNING,
        RECOMPILATION_URL,
        data=protocol.RecompileData,
        fixers=(compile_finding,),
        compile_finding=True,
        passes="no recompile left ✓",
        shows=(
            "`torch.compile` recompiles a function, on the failed guard's user stack: one finding per "
            "recompiled function, with what changed between the calls, and dynamo's resume functions named by"
            " the function they continue"
        ),
        offers=(
            "`dynamic=False` dropped from the `torch.compile` call where it forces the recompiles; the other "
            "hints (a dimension marked dynamic, a number passed as a tensor) in the message and `data`"
        ),
    ),
    CodeInfo(
        "tracer-warning",
        "torch.jit.trace records a value as a constant",
        "While tracing, a tensor was converted to a Python value (a bool, int, float or list) or "
        "iterated, so the trace recorded the value seen on the example inputs as a constant. The "
        "traced module will not follow the data on other inputs. Keep the computation in tensor "
        "operations, or use torch.export instead of torch.jit.trace.",
        WARNING,
        JIT_TRACE_URL,
        data=protocol.TracerWarningData,
        shows=(
            "`torch.jit.trace` records a value as a constant, placed through the `# path:line:col` suffixes; "
            "one per distinct place and warning text, with how often the trace raised it (past 50 places the "
            "rest are counted in one more finding); TorchScript is deprecated, so each message ends with the "
            "equivalent `torch.export.export(...)` call (a function is wrapped in an `nn.Module`)"
        ),
    ),
    CodeInfo(
        "trace-check-failed",
        "Traced graph disagrees with eager execution",
        "torch.jit.trace re-ran the traced graph on the check inputs and its outputs differ from "
        "running the Python code, so the trace does not represent the model. The usual causes "
        "are data-dependent control flow, randomness and Python-side state; remove them from the "
        "traced code or use torch.export.",
        ERROR,
        JIT_TRACE_URL,
        data=protocol.TraceCheckFailedData,
        shows=(
            "`torch.jit.trace`'s check re-ran the traced graph and it disagrees with eager execution; the "
            "message ends with the equivalent `torch.export.export(...)` call"
        ),
    ),
    CodeInfo(
        "syntax-error",
        "The file is not valid Python",
        "Python could not parse this file, so nothing in it could be imported or analysed. Fix "
        "the syntax error at the marked position; the other diagnostics for this file will come "
        "back on the next check.",
        ERROR,
        PYTHON_SYNTAX_ERROR_URL,
        data=protocol.SyntaxErrorData,
        breaks_target=True,
        shows="the file (or a helper it imports) is not valid Python; nothing else breaks",
    ),
    CodeInfo(
        "worker-crashed",
        "The analysis process crashed",
        "The process that imported your module and ran the export died before it finished (a "
        "segmentation fault, os._exit, sys.exit or running out of memory). ExportLens kept "
        "working and the next check starts a fresh process. Run the target in a terminal to see "
        "the crash, or raise the memory limit if the model is large.",
        ERROR,
        None,
        data=protocol.CrashData,
        breaks_target=True,
        one_per_message=True,
        shows="the job's process died (a segfault, `os._exit`, out of memory); the next check starts a fresh one",
    ),
    CodeInfo(
        "worker-timeout",
        "The analysis did not finish in time",
        "Importing the module or exporting the target took longer than the configured timeout, "
        "so the job was stopped. Make module import cheap (no training or downloads at import "
        "time), use smaller example inputs, or raise the timeout.",
        ERROR,
        None,
        data=protocol.CrashData,
        breaks_target=True,
        one_per_message=True,
        shows=(
            "the job took longer than its timeout (`exportlens.timeoutSeconds`, `--timeout`, `timeout` in "
            "pyproject.toml); what torch reported before it still counts"
        ),
    ),
    CodeInfo(
        "target-error",
        "The target could not be run",
        "Your own code raised before export could start: importing the module, calling the "
        "target factory, or running the model on the example inputs failed. The traceback is "
        "placed on your innermost line; fix it so the model runs eagerly first.",
        ERROR,
        None,
        data=protocol.TargetErrorData,
        breaks_target=True,
        one_per_message=True,
        shows=(
            "your own code raised before export could start (importing the module, calling the factory, "
            "running the model eagerly); placed on your innermost line"
        ),
    ),
    CodeInfo(
        "no-target",
        "No export target found in this file",
        "ExportLens found nothing to export here. Declare a target: call torch.export.export in "
        "the script, define module-level model and example_args (with optional example_kwargs "
        "and dynamic_shapes), or list 'path.py:factory' under [tool.exportlens] targets in "
        "pyproject.toml.",
        INFORMATION,
        None,
        data=protocol.NoData,
        shows="the file names nothing to analyse; the message says how to declare a target",
    ),
    # Added after the first release: new codes go last, so SARIF rule indices stay stable.
    CodeInfo(
        "draft-export-crashed",
        "Draft export crashed, but plain torch.export.export passes",
        "torch.export.draft_export itself raised an internal error on this target while plain "
        "torch.export.export succeeded with the same arguments, so your model exports: this is "
        "most likely a PyTorch bug in draft export, not a problem in your code. The diagnostic's "
        "data carries draft export's raw error and a command that reproduces it, for a PyTorch "
        "issue report.",
        INFORMATION,
        DRAFT_EXPORT_URL,
        data=protocol.DraftCrashData,
        shows=(
            "draft export (run for custom ops, or with `--draft always`) crashed but plain "
            "`torch.export.export` passes (a PyTorch bug); the raw error and a repro command are in `data`, "
            "your line it was running is related"
        ),
    ),
    CodeInfo(
        "config-error",
        "Invalid [tool.exportlens] setting in pyproject.toml",
        "A key of the [tool.exportlens] table in pyproject.toml has a value ExportLens cannot use "
        "(a wrong type, an unknown diagnostic code or backend, or an unknown key). The message "
        "names the key; ExportLens ignores that key until it is fixed and uses the default, a "
        "command-line flag or the editor setting instead.",
        ERROR,
        None,
        data=protocol.NoData,
        suppressible=False,  # about pyproject.toml itself: fix the setting
        shows="a `[tool.exportlens]` value in pyproject.toml is wrong (placed on its line)",
    ),
    CodeInfo(
        "deprecated-api",
        "Deprecated torch API",
        "This call uses a torch API that current PyTorch deprecates: torch._check_is_size(x) "
        "raises a FutureWarning since torch 2.11 and will be removed with guard_size_oblivious. "
        "torch._check(x >= 0) states the same fact to export and is the replacement torch itself "
        "recommends; the quick fix rewrites the call.",
        HINT,
        TORCH_CHECK_URL,
        data=protocol.DeprecatedApiData,
        fixers=(deprecated_api,),
        shows="`torch._check_is_size(x)` (deprecated since torch 2.11), found statically",
        offers="the call rewritten as `torch._check(x >= 0)` (ExportLens never suggests `_check_is_size`)",
    ),
    CodeInfo(
        "unused-ignore",
        "An `# exportlens: ignore` comment silences nothing",
        "A suppression comment (or one of the codes it lists) matched no ExportLens problem on "
        "its line in the last complete run: the problem was fixed, moved, or the code is "
        "misspelt. Remove the comment (or the code) so that a later problem on this line is not "
        "hidden by accident.",
        HINT,
        None,
        data=protocol.UnusedIgnoreData,
        fixers=(unused_ignore,),
        suppressible=False,  # about the ignore comments themselves
        shows="an `# exportlens: ignore` comment silences nothing",
        offers="removing it",
    ),
    CodeInfo(
        "dim-specialized",
        "A dimension asked to be dynamic is static in the exported program",
        "torch.export.export passed, but a dimension you asked to be dynamic (Dim.AUTO, "
        "Dim.DYNAMIC or a named Dim) is fixed to one size in the exported program: the code (or "
        "a library it calls) compared it with a constant, or the example had size 0 or 1 there, "
        "which export always specialises. The program rejects every other size. Give the example "
        "a size of 2 or more, rewrite the branch that fixed it (torch.cond keeps both paths), or "
        "mark it Dim.STATIC to say it is fixed.",
        WARNING,
        EXPORT_PROGRAMMING_MODEL_URL,
        data=protocol.DimSpecializedData,
        fixers=(dim_specialized,),
        shows=(
            "your export passes, but a dimension you asked to be dynamic (`Dim.AUTO`, `Dim.DYNAMIC`, a named "
            "Dim) is static in the exported program: placed where it became static (your `if`, a library's "
            "`_assert(H == self.img_size[0])` on your call into it) or on the example input for a 0/1 size, "
            "with the size it was fixed to and why"
        ),
        offers=(
            "a size ≥ 2 in the example (0/1), a `torch.cond` rewrite of your `if` (both keep the dimension "
            "dynamic); `Dim.STATIC` to say what the program already is"
        ),
    ),
    CodeInfo(
        "could-be-dynamic",
        "The exported program is static where torch could keep it dynamic",
        "torch.export.export passed, but without dynamic_shapes (or with some dimensions left out) "
        "the program accepts only the example's sizes there, and fails on any other batch or "
        "sequence length. ExportLens exported once more with Dim.AUTO on every dimension and "
        "then with named Dims, and found which dimensions stay dynamic, which are one dimension "
        "shared by several inputs and which are derived from another (2 * batch). The quick fix "
        "writes that dynamic_shapes into your call, with the Dims declared above it (and a batch "
        "of 2 in the example where it had 1, which export always specialises); where the script "
        "ran the model on other inputs first, an alternative makes dynamic exactly what varied.",
        HINT,
        EXPORT_PROGRAMMING_MODEL_URL,
        data=protocol.CouldBeDynamicData,
        fixers=(could_be_dynamic,),
        makes_dynamic=True,
        shows=(
            "your export passes, but the program accepts only the example's sizes in dimensions torch could keep "
            "dynamic: ExportLens exported once more with `Dim.AUTO` on every dimension (and with named Dims where "
            "the program's guards say more than ranges) and names them in your names, shared (`batch` of "
            '`input_ids` and `attention_mask`) and derived (`2 * batch`); a hint, so CI and "0 problems" are '
            "unaffected; never on a target with a problem, a compile or trace target (nor an export in a file "
            "that also calls `torch.compile` or `torch.jit.trace`), or a program already as dynamic as torch allows"
        ),
        offers=(
            "`dynamic_shapes=` written into your call (or completed), `Dim`s declared above it, the example's "
            "batch of 1 made 2 where that is all that keeps it static; where your script ran the model on other "
            "inputs first, an alternative that makes dynamic exactly what varied (`torch.export.AdditionalInputs`)"
        ),
    ),
)

CODES: dict[str, CodeInfo] = {info.code: info for info in _TABLE}
_UNKNOWN = CodeInfo("", "", "", ERROR, None, data=protocol.NoData)


def doc_url(code: str) -> str | None:
    """The documentation page for `code`, or None (unknown code, or no page fits)."""
    info = CODES.get(code)
    return info.url if info is not None else None


def record(code: str) -> CodeInfo:
    """The record of `code`; a code ExportLens does not know (an old report's) gets the defaults."""
    return CODES.get(code) or _UNKNOWN


def outcome_words(v: Verification, code: str) -> str:
    """A verified fix's outcome in a few words, as its code says a pass ("no graph break left ✓")."""
    return v.words(record(code).passes)


def suppressible(code: str) -> bool:
    """Whether an `# exportlens: ignore` comment may silence findings of `code`."""
    return record(code).suppressible


def new(
    code: str,
    file: str,
    rng: Range,
    message: str,
    target: str = "",
    *,
    severity: int | None = None,
    related: list[Related] | None = None,
    data: Mapping[str, Any] | None = None,
) -> Diagnostic:
    """A diagnostic at its code's default severity; pass `severity` only with the reason beside it.
    `data` is of the type the code's record names; the diagnostic keeps that very dict."""
    return Diagnostic(
        file,
        rng,
        severity if severity is not None else CODES[code].severity,
        code,
        message,
        target,
        related=related or [],
        data=cast("dict[str, Any]", data) if data is not None else {},
    )
