"""The wire between the server and the worker, and the contract of each code's `Diagnostic.data`.

The server imports this module (`worker_client`, `engine`, `findings`, `codes`); the worker writes
the same shapes as plain dicts without importing it (it is the one exportlens module the worker
would be allowed to import, tests/test_architecture.py), and the torch-free tests check the wire
recorded from real runs against these types. Everything here is a TypedDict, so the JSON on the
pipe stays plain dicts at run time and the shapes are checked by mypy and those tests, not by
code. Standard library only.

The pipe: the server writes one JSON request per line to the zygote's stdin; the zygote writes
one JSON event per line to its stdout. A job's process writes its events to the zygote, which adds
the job's `id` and passes them on.

    server → zygote   RunRequest | CancelRequest | PingRequest
    zygote → server   ReadyEvent, then per job: StartedEvent, TargetEvent…, DoneEvent
                      (ErrorEvent for an unparseable request, PongEvent for a ping)
    job → zygote      TargetEvent…, EndEvent (the zygote turns it into DoneEvent "ok")

`Diagnostic.data` (the raw facts the quick fixes, the hover and `--format json` read) is one
TypedDict per code; each code's record in `codes.py` names its type, and the torch-free tests
check every recorded diagnostic's data against it.
"""

# No `from __future__ import annotations`: TypedDict reads NotRequired[...] from evaluated
# annotations only (Python 3.11), and the tests check recorded events against these keys.
from typing import Any, Literal, NotRequired, TypedDict

# -- requests (server → zygote) ------------------------------------------------------------------


class JobSpec(TypedDict):
    """What to run in one job: a file, and which of its targets to analyse (`targets.FileTargets.job`)."""

    file: str  # absolute path of the user's file
    root: str  # the project root: sys.path, cwd, and what counts as the user's code
    main: bool  # run the file as __main__ (its `if __name__ == "__main__":` block runs)
    module_vars: bool  # module-level `model` + `example_args` form a target
    factories: list[str]  # names of target factories in the file
    lines: dict[str, int]  # factory name (or "model") → its line, for placing its findings
    compile: bool  # watch torch.compile calls
    trace: bool  # watch torch.jit.trace calls
    compile_backend: NotRequired[str]  # one of options.COMPILE_BACKENDS
    save_op_profiles: NotRequired[bool]  # write draft export's op profiles next to the file
    trace_dir: NotRequired[str]  # keep draft export's structured trace (TORCH_DTRACE, for tlparse) in this folder
    source: NotRequired[str | None]  # the text the server planned: the job runs it, not the disk (None: read the file)
    overrides: NotRequired[dict[str, str]]  # path → text run instead of the disk's (worker/overlay.py; nothing written)
    outputs: NotRequired[bool]  # fingerprint each model's eager outputs on its example inputs (fix verification)
    draft: NotRequired[Literal["auto", "always"]]  # "always": draft export also where plain export passes without custom ops
    draft_beside: NotRequired[bool]  # draft export may start in a fork beside plain export (worker/beside.py)
    dynamic_probe: NotRequired[bool]  # False: no Dim.AUTO probe of a passing export that left dimensions static (worker/dynamic_probe.py)
    probe_beside: NotRequired[bool]  # set by the zygote when no other job runs: the probe may fork beside plain export


class RunRequest(TypedDict):
    op: Literal["run"]
    id: str
    job: JobSpec
    timeout: float  # seconds before the job is killed (DoneEvent status "timeout")
    memory_mb: int  # memory the job's whole process tree may add; 0 = unlimited
    background: NotRequired[bool]  # nobody waits for it (fix verification): lower priority, never on a warm spare
    jobdir: NotRequired[str]  # added by the zygote when it hands the request to a spare child


class CancelRequest(TypedDict):
    op: Literal["cancel"]
    id: str


class PingRequest(TypedDict):
    op: Literal["ping"]
    id: NotRequired[str]


Request = RunRequest | CancelRequest | PingRequest

# -- shared pieces of events ---------------------------------------------------------------------


class FrameInfo(TypedDict):
    """One stack frame as torch or a traceback gave it; `col`s are 0-based code points when known."""

    file: str
    line: int | None
    name: NotRequired[str | None]
    loc: NotRequired[str | None]  # the source text of the line, when torch kept it
    end_line: NotRequired[int | None]
    col: NotRequired[int | None]
    end_col: NotRequired[int | None]
    where: NotRequired[str]  # "stdlib", or the installed package the file belongs to (`worker.stacks.where`)
    qualname: NotRequired[str]  # the function's qualified name (live stacks)


class CodeLocation(TypedDict):
    """Where a function is defined (`co_filename`, `co_firstlineno`, `co_name`)."""

    file: str
    line: int
    name: str


class FileLine(TypedDict):
    file: str
    line: int


class SyntaxInfo(TypedDict):
    file: str | None
    line: int | None
    col: int | None
    end_line: int | None
    end_col: int | None
    msg: str


class ExceptionLink(TypedDict):
    type: str
    message: str
    frames: list[FrameInfo]


class ExceptionInfo(TypedDict):
    """An exception and its `__cause__`/`__context__` chain, outermost first (`capture.exception_info`)."""

    type: str
    message: str
    chain: list[ExceptionLink]
    syntax: SyntaxInfo | None


class TensorMeta(TypedDict):
    rank: int
    dtype: str
    device: str
    layout: str


class OpProfile(TypedDict):
    """One custom-op call draft export observed: its inputs' and output's metadata (and real sizes)."""

    args: list[TensorMeta | None]
    out: TensorMeta | list[TensorMeta | None] | None
    sizes: NotRequired[dict[str, Any]]


class OpDefinition(TypedDict):
    """Where a custom op was defined: a `@custom_op` function or a `torch.library` define call."""

    file: str
    line: int
    kind: Literal["custom_op", "library"]
    name: NotRequired[str]
    function: NotRequired[str]


class ExportFailure(TypedDict):
    """One failure of draft export's report (`capture.report_failures`)."""

    type: str  # DATA_DEPENDENT_ERROR, GUARD_ADDED, CONSTRAINT_VIOLATION_ERROR, MISSING_FAKE_KERNEL, ...
    xfail: bool
    user_stack: list[FrameInfo]
    stack: list[FrameInfo]
    expr: NotRequired[str]
    result: NotRequired[str | None]  # None: plain export's failure (no example values were seen)
    prefix: NotRequired[str]
    reason: NotRequired[str]
    occurrences: NotRequired[int]
    symbol_to_sources: NotRequired[dict[str, Any]]
    frame_locals: NotRequired[dict[str, Any]]
    new_dynamic_shapes: NotRequired[Any]
    op: NotRequired[str]  # the fake-kernel failures: the op, its call sites, profiles, registration
    call_sites: NotRequired[list[list[FrameInfo]]]
    profiles: NotRequired[list[OpProfile]]
    qualname: NotRequired[str]
    definition: NotRequired[OpDefinition | None]
    fake: NotRequired[CodeLocation | None]
    live_stack: NotRequired[list[FrameInfo] | None]  # the whole Python stack when torch recorded it
    kind: NotRequired[Literal["condition", "value"]]  # plain export's data-dependent error: what it asked
    plain: NotRequired[bool]  # made from plain export's exception, not draft export's report (no real values)


class SavedProfiles(TypedDict):
    """The answer to `save_op_profiles`: the YAML file written, or why none was."""

    file: str | None
    ops: NotRequired[list[str]]
    error: NotRequired[str]


class GraphBreakFinding(TypedDict):
    """A graph break from dynamo's `graph_breaks` log (or a fullgraph=True Unsupported error)."""

    type: Literal["graph-break"]
    title: str | None
    reason: str
    explanation: str
    hints: list[str]
    debug_context: str
    gb_id: str | None  # torch's graph-break id ("gb0170"), the key of its online explanation
    url: str | None
    at: FrameInfo | FileLine | None  # where dynamo says the break is
    frames: list[FrameInfo]  # the user's stack, outermost first
    duplicate: bool
    fullgraph: NotRequired[bool]  # fullgraph=True: the call raised here
    fallback: NotRequired["Fallback"]  # dynamo could not resume after this break and skipped the function
    records: NotRequired[list[str]]  # torch's records of a fall-back: the break's and the fall-back's when both came


class GuardFailure(TypedDict):
    compile_id: str
    reason: str
    guard: str
    code: NotRequired[str]
    frames: NotRequired[list[FrameInfo]]


class Resumes(TypedDict):
    """The function a dynamo resume function (`torch_dynamo_resume_in_post_at_17`) continues, and from which line."""

    name: str
    line: int


class SkippedFunction(TypedDict):
    """The code dynamo gave up on (its `def`), which runs in eager mode from then on."""

    name: str
    qualname: str
    file: str
    line: int
    resumes: NotRequired[Resumes]  # a resume function: the rest of this function after its break


class Fallback(TypedDict, total=False):
    """Dynamo's "Failed to handle graph break gracefully. Skipping the function and falling back to eager."
    (docs/torch-facts.md §2.5): the function skipped, and the break that kept it from resuming, if another."""

    function: SkippedFunction | None
    why: str
    why_explanation: str
    why_context: str


class RecompileFinding(TypedDict):
    type: Literal["recompile"]
    function: str
    code: CodeLocation
    failures: list[GuardFailure]
    failed_entries: int
    reason: str
    call_stack: NotRequired[list[FrameInfo]]
    resumes: NotRequired[Resumes]


class RecompileLimitFinding(TypedDict):
    type: Literal["recompile-limit"]
    limit: int
    config: str
    function: str
    code: CodeLocation
    reason: str
    compile_id: str | None
    call_stack: NotRequired[list[FrameInfo]]
    resumes: NotRequired[Resumes]


CompileFinding = GraphBreakFinding | RecompileFinding | RecompileLimitFinding


class CompileOptions(TypedDict, total=False):
    """The user's torch.compile arguments, and what the job really used."""

    backend: str | None
    dynamic: bool | None
    fullgraph: bool
    mode: str | None
    used_backend: str | None
    compiles: int


class TracerWarningFinding(TypedDict):
    """One distinct tracer warning (file, line, first line of its text) of a trace."""

    type: Literal["tracer-warning"]
    message: str
    category: str
    file: str
    line: int
    stack: list[FrameInfo]
    count: NotRequired[int]  # how often the trace raised it (the check run's repeats not counted)


class TraceOverflow(TypedDict):
    """Warnings past `trace_watch.MAX_SITES` distinct places: only counted."""

    sites: int
    warnings: int
    kept: int  # the places kept one by one (`trace_watch.MAX_SITES`)


class TraceCheckFinding(TypedDict):
    type: Literal["trace-check-failed"]
    message: str
    summary: list[str]
    graph_diff: str
    node_diff: str
    trace_source: list[FrameInfo]
    check_source: list[FrameInfo]
    exception_source: list[FrameInfo]
    exception: bool


TraceFinding = TracerWarningFinding | TraceCheckFinding

# -- events (zygote → server) --------------------------------------------------------------------


class ReadyEvent(TypedDict):
    event: Literal["ready"]
    torch: str
    pid: int
    python: str
    import_seconds: float
    warmup_seconds: float
    fork: bool
    warmup_error: NotRequired[str | None]  # the warm-up failed: the worker still runs, without spares
    compat: NotRequired[dict[str, Any]]  # what this torch has (`worker.compat.probe`)
    unsupported: NotRequired[str | None]  # this torch has no draft_export: why export targets are skipped


class FloatPlace(TypedDict):
    """Where a float symbol was made (`.item()`) or branched on (`branch`: True, with its `expr`)."""

    symbol: str
    file: NotRequired[str]
    line: NotRequired[int]
    expr: NotRequired[str]
    branch: NotRequired[bool]


class TorchBug(TypedDict):
    """A known torch bug the export ran into, explained instead of torch's own error."""

    kind: Literal["float-item-assert"]  # torch <= 2.12: a branch on a float `.item()` fails in the solver
    symbol: str
    created: FloatPlace | None
    branch: FloatPlace | None


class StartedEvent(TypedDict):
    event: Literal["started"]
    id: str
    pid: int


class RequestedDim(TypedDict):
    """An input dimension the export call asks to be dynamic (`worker.dynamism.Requested`)."""

    input: str  # the input as the dynamic_shapes spec names it ("x", "mask")
    index: int  # its position in the call (a tuple spec is positional)
    path: list[str | int]  # from the input to the tensor (a tensor inside a dict or list)
    dim: int
    kind: Literal["named", "derived", "auto", "dynamic"]
    name: str | None  # the Dim's name; None for Dim.AUTO / Dim.DYNAMIC
    root: str | None  # a derived Dim's root
    min: int | None
    max: int | None
    size: int  # the example's size there
    spelled: str  # "x.shape[1]"


class SpecializedDim(RequestedDim):
    """A requested dimension the exported program has static, and why."""

    reason: Literal["zero-one", "guard", "unknown"]
    value: int  # the size it is fixed to
    symbol: NotRequired[str]
    guard: NotRequired[str]  # torch's guard that fixed it ("Eq(s27, 32)")
    stack: NotRequired[list[FrameInfo]]  # the Python stack when torch added it (outermost first)


class Violation(TypedDict):
    """One dimension of a constraint violation of plain export."""

    name: str  # the Dim's name as torch's message names it ("seq"; "L['x'].size()[0]" for Dim.DYNAMIC)
    dims: list[RequestedDim]  # the input dimensions it stands for (a shared Dim: several)
    lines: list[str]  # torch's own lines about it
    reason: Literal["guard", "constant", "zero-one", "relation"]
    value: NotRequired[int]  # the constant it was specialised to
    guard: NotRequired[str]  # the first guard its declared range does not imply
    stack: NotRequired[list[FrameInfo]]  # the Python stack when torch added that guard


class PlainVerdict(TypedDict):
    """Plain `torch.export.export` with the user's exact call (`worker/plain.py`): the truth."""

    status: Literal["ok", "failed"]
    seconds: float
    requested: list[RequestedDim]
    names: dict[str, str]  # symbol → the user's spelling ("s27": "x.shape[1]")
    custom_ops: NotRequired[list[str]]  # passed: the ops outside aten and prims the program calls
    dynamic: NotRequired[list[str] | None]  # passed: the requested dimensions it kept dynamic (None: not matched)
    specialized: NotRequired[list[SpecializedDim]]  # passed: the requested dimensions it fixed
    kind: NotRequired[Literal["constraint", "data-dependent", "missing-fake-kernel", "error"]]  # failed
    exception: NotRequired[ExceptionInfo]
    user_error: NotRequired[bool]  # raised by the user's (or a library's) code, not inside torch
    violations: NotRequired[list[Violation]]
    suggested: NotRequired[list[str]]  # torch's "Suggested fixes:" lines
    message: NotRequired[str]
    failure: NotRequired["ExportFailure"]  # a data-dependent guard or a missing fake kernel, in draft export's shape


class ProbeLeaf(TypedDict):
    """One tensor among the call's inputs (`worker/dynamic_probe.Leaf`)."""

    input: str  # the parameter's or keyword's name
    index: int  # its position among the combined arguments
    path: list[str | int]  # keys from the input to the tensor; ".name": an attribute of a registered pytree
    shape: list[int]  # the example's shape, as the user wrote it (a batch of 1 the probe doubled is still 1 here)


class ProbeDim(TypedDict):
    """One dimension of the probe's named spec, in torch's symbols."""

    leaf: int
    dim: int
    dynamic: bool  # the final named export kept it dynamic
    auto: NotRequired[bool]  # an expression no Dim can say: left Dim.AUTO
    root: NotRequired[str]  # the root Dim (a symbol, `s77`, or torch's suggested root, `_s77`)
    factor: NotRequired[int]  # factor * root + offset
    offset: NotRequired[int]


class ProbeRange(TypedDict):
    min: int | None  # None: torch's default (a Dim's 2 in effect)
    max: int | None  # None: unbounded


class NamedProbe(TypedDict):
    """Plain export with named Dims in the shape the probe found, refined as torch suggested."""

    status: Literal["ok", "failed", "none", "unsupported"]
    refined: NotRequired[int]
    dims: NotRequired[list[ProbeDim]]
    roots: NotRequired[dict[str, ProbeRange]]
    error: NotRequired[str]
    calls: NotRequired[int]  # observed: how many other inputs the script called the model on
    varied: NotRequired[list[list[int]]]  # observed: [leaf, dim] of the dimensions that varied


class DynamicProbe(TypedDict):
    """What the Dim.AUTO probe of a passing, partly static export found (`worker/dynamic_probe.py`)."""

    status: Literal["ok", "failed", "skipped"]
    seconds: float
    exports: int
    beside: NotRequired[bool]  # it ran in a fork beside plain export
    why: NotRequired[str]
    error: NotRequired[str]
    inputs: NotRequired[list[str]]  # the combined arguments' names, in order
    structure: NotRequired[dict[str, Any]]  # the spec's shape: {"t": leaf} or {"dict"|"list"|"tuple": [[key, sub]]}
    leaves: NotRequired[list[ProbeLeaf]]
    auto: NotRequired[list[list[Any]]]  # per leaf, per dim: an int (static), [root, factor, offset], or "expr"
    ranges: NotRequired[dict[str, ProbeRange]]
    zero_one: NotRequired[list[int]]  # leaves whose example batch of 1 the probe doubled
    requested: NotRequired[list[list[int]]]  # [leaf, dim] the user's spec already asks for
    checked: NotRequired[Literal["auto", "named"]]  # the spec read off the Dim.AUTO program, or exported with named Dims
    named: NotRequired[NamedProbe]
    observed: NotRequired[NamedProbe]


class DraftCrash(ExceptionInfo):
    """draft_export itself raised inside torch; plain torch.export.export then decided what it means."""

    plain_export: Literal["ok", "failed"]


class TargetEvent(TypedDict):
    """One analysed target: an export call or factory, a torch.compile call site, a torch.jit.trace call.

    Exactly one of these says what happened: `failures` (export ran; its report), `exception`
    (it raised), `target_error` (the target could not be built), `compile_findings`,
    `trace_findings`.
    """

    event: Literal["target"]
    id: NotRequired[str]  # added by the zygote
    name: str  # "export at model.py:15", "model.py:make_model", "compile at …", "trace at …"
    file: str
    line: int
    kind: Literal["export", "compile", "trace"]
    seconds: float
    exception: NotRequired[ExceptionInfo]
    target_error: NotRequired[str]
    failures: NotRequired[list[ExportFailure]]
    values: NotRequired[dict[str, int | float]]  # the real value of each unbacked symbol ("u0": 4)
    dynamic_shapes: NotRequired[Any]  # the target's dynamic_shapes, as JSON
    op_profiles: NotRequired[SavedProfiles | None]
    outputs: NotRequired[list[dict[str, Any]]]  # `outputs` jobs: per output leaf shape, dtype, hash, sums
    outputs_error: NotRequired[str]  # `outputs` jobs: what the eager model raised
    plain: NotRequired[PlainVerdict]  # the user's own export (every export target since plain export runs first)
    plain_export: NotRequired[str]  # "ok" or what plain export raised, in one line (fix verification compares it)
    calls: NotRequired[int]
    definition: NotRequired[CodeLocation | None]
    compile_options: NotRequired[CompileOptions]
    compile_findings: NotRequired[list[CompileFinding]]
    compile_error: NotRequired[dict[str, Any]]
    trace_findings: NotRequired[list[TraceFinding]]
    recovered: NotRequired[bool]  # the trace check failed and the trace was redone without it
    trace_overflow: NotRequired[TraceOverflow]  # tracer warnings past the kept places
    torch_bug: NotRequired[TorchBug]
    draft_crash: NotRequired[DraftCrash]
    draft_beside: NotRequired[bool]  # draft export ran in a fork beside plain export (worker/beside.py)
    dynamic_probe: NotRequired[DynamicProbe]  # plain export passed with dimensions static: what Dim.AUTO keeps dynamic
    partial: NotRequired[bool]  # made up by the engine from streamed findings of a stopped job
    unsupported: NotRequired[str]  # "draft_export": this torch cannot run the target (then `torch` says which)
    torch: NotRequired[str]


DoneStatus = Literal["ok", "crashed", "timeout", "cancelled"]


class FindingEvent(TypedDict):
    """One failure streamed the moment torch records it, so a job stopped by its deadline keeps it."""

    event: Literal["finding"]
    id: NotRequired[str]
    name: str
    file: str
    line: int
    kind: Literal["export", "compile", "trace"]
    failures: NotRequired[list[ExportFailure]]
    plain: NotRequired[PlainVerdict]  # plain export failed: published before draft export starts
    compile_findings: NotRequired[list[CompileFinding]]
    trace_findings: NotRequired[list[TraceFinding]]
    definition: NotRequired[CodeLocation | None]
    compile_options: NotRequired[CompileOptions]


# Importing the user's module (its targets come after), running a script (its own export calls happen
# inside), calling a pyproject factory, exporting one target (plain export), then draft export where it runs.
Phase = Literal["importing", "running the script", "building the model", "exporting", "draft export"]


class PhaseEvent(TypedDict):
    """What the job is doing now (for progress messages)."""

    event: Literal["phase"]
    id: NotRequired[str]
    phase: Phase
    target: str  # the file's name while importing / running the script, else the target's name


class DoneEvent(TypedDict):
    event: Literal["done"]
    id: str
    status: DoneStatus
    detail: str
    stderr: str  # the tail of what the job printed
    worker_died: NotRequired[bool]  # made up by the server: the zygote itself died


class DistributionRecord(TypedDict):
    """An installed distribution a job imported from (`worker/dependencies.py`)."""

    name: str
    version: str
    record: str  # its RECORD file (a hash of every file it installed)
    sha: str | None  # SHA-256 of that RECORD (None: it has none)
    editable: NotRequired[str]  # an editable install: the folder its files come from (they are `sources`)


class DepsEvent(TypedDict):
    """What a job's results depend on beyond what the server sent, its last event before `done`
    (the results cache, `cache.py`, reuses them only while none of it changed)."""

    event: Literal["deps"]
    id: NotRequired[str]
    python: str  # sys.executable of the job
    python_version: str
    torch: str | None
    sources: dict[str, str]  # path → SHA-256 of the text compiled: the project's modules, editable installs', other folders'
    distributions: list[DistributionRecord]
    data: dict[str, dict[str, Any]]  # files under the project root it opened for reading → {"sha"} or {"size", "mtime_ns"}
    env: dict[str, str | None]  # environment variables its code read → their values (None: not set)
    absent: NotRequired[list[str]]  # paths that did not exist and would have changed what an import found
    pth: NotRequired[dict[str, list[str]]]  # site folder where a module was not found → its .pth files then
    unstable: NotRequired[list[str]]  # files that may have changed while it ran: nothing of this job is cached


class EndEvent(TypedDict):
    """A job's last line to the zygote: it finished normally."""

    event: Literal["end"]


class ErrorEvent(TypedDict):
    event: Literal["error"]
    message: str


class PongEvent(TypedDict):
    event: Literal["pong"]
    id: str | None
    spares: NotRequired[list[int]]  # the pids of the warm children waiting for a job


JobEvent = StartedEvent | PhaseEvent | FindingEvent | TargetEvent | DepsEvent | DoneEvent
"""What `WorkerClient.run` yields for one job."""

Event = ReadyEvent | JobEvent | EndEvent | ErrorEvent | PongEvent

# -- Diagnostic.data, one type per code ----------------------------------------------------------


class Place(TypedDict):
    file: str
    line: int


class CallSite(TypedDict):
    file: str
    range: dict[str, Any]  # Range.to_json()


class LibraryFacts(TypedDict, total=False):
    """A finding whose cause is inside an installed library: placed on the project's call into it."""

    library: str  # the package
    library_frame: dict[str, Any]
    library_chain: list[dict[str, Any]]
    boundary: Place  # the project's line that calls into the library
    boundary_kind: Literal["declaration"]  # set when no line of the project is on the stack: `boundary` is where the target builds its model
    stack_source: str  # which stack found it: "live", "torch", "graph", "dynamo", "traceback"
    user_line: int
    upstream_search: str  # what to search the library's issues for
    advice: str  # "library", "register_fake_in_project"


class DataDependentData(LibraryFacts):
    expr: str  # torch's expression ("u0 > 2")
    result: str | None  # what draft export assumed ("True") or the value it used
    occurrences: int
    names: dict[str, str]  # symbol → the user's spelling ("u0": "n")
    source_expr: str | None  # the expression in the user's names, None when a symbol has none
    locals: dict[str, Any]
    values: dict[str, int | float]
    kind: Literal["condition", "value"]
    placed: NotRequired[Literal["target"]]  # no user frame: on the target line
    statement_line: NotRequired[int]
    statement_kind: NotRequired[str]  # "if", "assert", "expr", ... of the guarded statement
    test_text: NotRequired[str]  # the source text under the range
    user_line: NotRequired[int]
    tensor_condition: NotRequired[bool]  # a tensor's truth value, not a symbol: torch.cond, not torch._check
    pin: NotRequired[str | None]  # "size == 4": the torch._check that pins a value
    torch_internal: NotRequired[bool]  # decided inside a torch operator: probably torch's, no torch._check offered
    repro: NotRequired[str]  # with torch_internal: a command that fails the same way with plain torch.export


class TorchBugData(TypedDict):
    """data-dependent-guard when torch's own bug stopped the export (`TorchBug`)."""

    torch_bug: Literal["float-item-assert"]
    symbol: str
    expr: str | None
    exception_type: str | None
    exception_message: str
    user_line: NotRequired[int]
    occurrences: NotRequired[int]


class DimInfo(TypedDict):
    symbol: str
    input: str
    dim: int
    name: str | None


class GuardAddedData(LibraryFacts):
    """guard-added: one dimension of plain export's constraint violation."""

    name: str  # the Dim ("seq")
    reason: Literal["guard", "constant", "zero-one", "relation"]
    statement_kind: NotRequired[str]  # the guarded statement ("if"): a torch.cond rewrite keeps both paths
    test_text: NotRequired[str]
    library_test_text: NotRequired[str]  # inside a library: its source text under the guard
    expr: str  # the guard that violated it, in torch's symbols ("" when none: a size of 0/1)
    source_expr: str | None  # the same in the user's names
    names: dict[str, str]
    dims: list[RequestedDim]
    value: int | None  # the constant it was specialised to
    suggested: list[str]  # torch's suggested fixes (all of the violation's)
    lines: list[str]  # torch's own words about this dimension
    export_call: Place
    site: str  # the Dim: two dimensions violated on one line stay two findings
    placed: NotRequired[Literal["guard", "example", "target"]]
    example: NotRequired[dict[str, Any]]  # zero-one: where the example input's size is written
    occurrences: NotRequired[int]


class DimSpecializedData(LibraryFacts):
    """dim-specialized: a dimension asked to be dynamic that the exported program has static."""

    dim: RequestedDim
    reason: Literal["zero-one", "guard", "unknown"]
    value: int
    guard: str | None
    source_expr: str | None
    export_call: Place
    site: str  # the dimension (`x.shape[1]`): two dimensions fixed on one line stay two findings
    placed: Literal["guard", "example", "target"]
    statement_kind: NotRequired[str]  # the guarded statement ("if"): a torch.cond rewrite keeps both paths
    test_text: NotRequired[str]
    library_test_text: NotRequired[str]
    example: NotRequired[dict[str, Any]]
    occurrences: NotRequired[int]


FakeKernelRole = Literal["call", "definition", "fake", "target"]


class SpecDim(TypedDict):
    """One dimension the could-be-dynamic fix makes dynamic, in the user's names."""

    leaf: int
    dim: int
    spelled: str  # `input_ids.shape[0]`, `batch['extra'][0].shape[1]`
    size: int  # the example's size there
    root: str  # the Dim's name (`batch`), or "" for Dim.AUTO
    factor: int
    offset: int
    zero_one: bool  # dynamic only with an example of size 2 or more (the example has 1)


class SpecRoot(TypedDict):
    name: str  # `batch`: the variable and the Dim's name
    min: int | None
    max: int | None


class SpecChoice(TypedDict):
    """One spec the fix can write: every dimension torch keeps dynamic, or those that varied."""

    kind: Literal["auto", "observed"]
    dims: list[SpecDim]
    roots: list[SpecRoot]
    calls: NotRequired[int]  # observed: the script's other calls of the model


class CouldBeDynamicData(TypedDict):
    """could-be-dynamic: a passing export whose program is static where torch could keep it dynamic."""

    inputs: list[str]
    structure: dict[str, Any]
    leaves: list[ProbeLeaf]
    requested: list[list[int]]  # [leaf, dim] the user's spec asks for (kept as written)
    spec: SpecChoice
    observed: NotRequired[SpecChoice]
    static: list[str]  # the dimensions that stay static (`images.shape[1]`)
    export_call: Place
    module_target: bool  # a module-level `model` / `example_args` target: the fix writes `dynamic_shapes = ...`
    site: str  # the dimensions it names: the same hint after a fix that made fewer dynamic is another
    placed: Literal["target"]
    occurrences: NotRequired[int]


class FakeKernelData(LibraryFacts):
    """missing-fake-kernel and mismatched-fake-kernel: one diagnostic per role, the same facts."""

    op: str
    qualname: str
    profiles: list[OpProfile]
    definition: OpDefinition | None
    fake: CodeLocation | None
    reason: str
    call_sites: list[CallSite]
    role: FakeKernelRole
    occurrences: NotRequired[int]


class DraftCrashFacts(TypedDict, total=False):
    """What is known when draft export itself crashed (`DraftCrash`)."""

    draft_export_error: dict[str, Any]  # its type and message
    crash_family: str  # which known torch crash it is, in words
    repro: str  # a command that reproduces it
    plain_export: Literal["ok", "failed"]


class ExportErrorData(LibraryFacts, DraftCrashFacts, total=False):
    """export-error: an exception (exception_type/message) or a report entry ExportLens does not know (raw)."""

    exception_type: str
    exception_message: str
    raw: ExportFailure
    occurrences: int


class DraftCrashData(DraftCrashFacts, total=False):
    """draft-export-crashed: draft export crashed, plain export passed."""

    occurrences: int


class TargetErrorData(LibraryFacts, DraftCrashFacts, total=False):
    exception_type: str
    exception_message: str
    occurrences: int


class SyntaxErrorData(TypedDict, total=False):
    exception_type: str
    occurrences: int


class CrashData(TypedDict, total=False):
    """worker-crashed and worker-timeout."""

    detail: str
    occurrences: int


class FixChoice(TypedDict, total=False):
    """One applicable fix of a compile finding, most useful first ("fix" names it)."""

    fix: str
    function: str
    file: str
    line: int
    input: str
    dim: int
    name: str
    compile_call: Place


# "break": which known break ("branch", "item", "builtin", "deepcopy"), by torch's title or gb id;
# None for another. A keyword, so it needs TypedDict's functional form.
_KnownBreak = TypedDict("_KnownBreak", {"break": str | None}, total=False)


class GraphBreakData(_KnownBreak):
    kind: Literal["graph-break"]
    gb_id: str | None
    url: str | None
    title: str | None
    reason: str | None
    explanation: str | None
    hints: list[str]
    torch_location: FrameInfo | FileLine | dict[str, Any]
    user_line: int | None
    function: str | None
    compiled: CodeLocation | None
    compile_call: Place
    compile_options: CompileOptions
    fix: str | None
    fixes: list[FixChoice]
    test_text: NotRequired[str]
    fullgraph: NotRequired[bool]
    library: NotRequired[str]  # the break is inside this library (see LibraryFacts)
    library_frame: NotRequired[dict[str, Any]]
    library_chain: NotRequired[list[dict[str, Any]]]
    boundary: NotRequired[Place]
    stack_source: NotRequired[str]
    upstream_search: NotRequired[str]
    advice: NotRequired[str]
    library_test_text: NotRequired[str]  # the library's source text under the break
    occurrences: NotRequired[int]
    fallback: NotRequired[Fallback]  # dynamo then skipped the function (GraphBreakFinding.fallback)
    records: NotRequired[list[str]]  # torch's own records of it


class Change(TypedDict, total=False):
    """What a failed guard means (`findings.compile.what_changed`)."""

    kind: Literal["size", "rank", "dtype", "requires_grad", "value", "type", "attribute", "other"]
    name: str
    dim: int
    expected: int
    actual: int
    value: str
    text: str
    keeps: str


class RecompileData(LibraryFacts):
    """A recompiled function; inside a library (LibraryFacts), placed on the project's call into it."""

    kind: Literal["recompile"]
    function: str
    code: CodeLocation | dict[str, Any]
    recompiles: int
    guard: str
    change: Change
    reasons: list[str | None]
    limit_hit: bool
    limit: int | None
    url: str
    compile_call: Place
    compile_options: CompileOptions
    fix: str | None
    fixes: list[FixChoice]
    placed: NotRequired[Literal["guard", "live", "resume", "definition"]]  # which source told the line
    site: NotRequired[str]  # the recompiled code (`file:line`): two functions on one line stay two findings
    resumes: NotRequired[Resumes]  # a resume function: the function it continues
    occurrences: NotRequired[int]


class TracerWarningData(LibraryFacts):
    """A tracer warning; inside a library (LibraryFacts), placed on the project's call into it."""

    kind: Literal["python-value", "loop", "length", "constant", "nondeterministic", "output-mismatch", "overflow", "other"]
    warning: str | None
    category: str | None
    torch_location: dict[str, Any]
    placed: Literal["warning", "suffix", "stack", "target", "library"]
    url: str
    trace_call: Place
    count: NotRequired[int]  # how often the trace raised it
    site: NotRequired[str]  # torch's place and text of the warning: two warnings on one line stay two findings
    test_text: NotRequired[str]
    library_test_text: NotRequired[str]  # the library's source text the warning is about
    occurrences: NotRequired[int]
    export_call: NotRequired[str | None]  # the torch.export call that replaces this trace (TorchScript is deprecated)


class TraceCheckFailedData(TypedDict):
    kind: Literal["trace-check-failed"]
    graph_diff: str | None
    node_diff: str | None
    message: str | None
    summary: list[str] | None
    url: str
    recovered: bool
    trace_call: Place
    occurrences: NotRequired[int]
    export_call: NotRequired[str | None]  # the torch.export call that replaces this trace (TorchScript is deprecated)


class NoData(TypedDict, total=False):
    """Codes whose diagnostics carry no facts (no-target); `occurrences` when merged."""

    occurrences: int


class UnusedIgnoreData(TypedDict):
    """`unused-ignore`: the listed codes that silenced nothing ([] for a bare ignore), and the
    directive's start and end character on its line (the removal fix checks the line still has it)."""

    unused_codes: list[str]
    directive: list[int]


class DeprecatedApiData(TypedDict):
    """`deprecated-api`: the deprecated call and the replacement the message and the fix use."""

    deprecated: str
    replacement: str
