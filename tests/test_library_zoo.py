"""A model zoo: library models declared as factory or module-level targets, over real torch.

No line of the project is on the stack while such a model exports (the library's code is the whole
forward), so each problem goes where the target builds its model: the factory's `model = ...` line
or the model in its `return`, the module's `model =` line. Everything else is as for a script: one
finding per distinct library problem, the library line related and named in `data`, the library's
own expression. `examples/zoo/` shows it over minilib's small detector; `minilib.detection` is a
test-local stand-in for torchvision's detectors (the test venv cannot have torchvision), written
with their guard patterns: `boxes.numel() > 4000`, the NMS custom op, the box coder's sums and
reshapes, the poolers' `len(rois)`, topk over what survived a score threshold.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import EXAMPLES, ExampleRuns, SyncEngine
from test_library import MINILIB, POSTPROCESS_GUARD, _library_project, rng

from exportlens import fix_registry as registry
from exportlens.engine import FileResult
from exportlens.findings.boundary import shorten
from exportlens.lsp.hover import hover_markdown
from exportlens.model import INFORMATION, Diagnostic, Report
from exportlens.report import jsonreport, rootcause

pytestmark = pytest.mark.torch

ZOO = EXAMPLES / "zoo"


def library_place(d: Diagnostic) -> tuple[str, int]:
    """The library line a finding names in `data`: (the path as an import names it, line)."""
    frame = d.data["library_frame"]
    return os.path.relpath(frame["file"], MINILIB.parent), frame["line"]


def text_of(path: Path, r: tuple[int, int, int, int]) -> str:
    line = path.read_text().splitlines()[r[0]]
    assert r[0] == r[2]
    return line[r[1] : r[3]]


def test_factory_targets_put_each_library_problem_where_they_build_the_model(example_runs: ExampleRuns) -> None:
    result = example_runs.result("zoo/detectors.py")
    got = [(d.target, d.code, text_of(ZOO / "detectors.py", rng(d.range)), library_place(d)) for d in result.diagnostics]
    assert got == [
        ("detectors.py:small_detector", "data-dependent-guard", "TinyDetector(max_keep=2)", ("minilib/detector.py", 17)),
        ("detectors.py:small_detector", "data-dependent-guard", "TinyDetector(max_keep=2)", ("minilib/postprocess.py", 8)),
        ("detectors.py:small_detector", "missing-fake-kernel", "TinyDetector(max_keep=2)", ("minilib/detector.py", 16)),
        ("detectors.py:wide_detector", "data-dependent-guard", "TinyDetector(max_keep=5).eval()", ("minilib/detector.py", 17)),
        ("detectors.py:wide_detector", "data-dependent-guard", "TinyDetector(max_keep=5).eval()", ("minilib/postprocess.py", 8)),
        ("detectors.py:wide_detector", "missing-fake-kernel", "TinyDetector(max_keep=5).eval()", ("minilib/detector.py", 16)),
        # one library guard reached two ways on one declaration line: two failures in torch's report, two findings
        ("detectors.py:two_stage_detector", "data-dependent-guard", "TwoStageDetector()", ("minilib/postprocess.py", 8)),
        ("detectors.py:two_stage_detector", "data-dependent-guard", "TwoStageDetector()", ("minilib/postprocess.py", 8)),
    ]
    guard = result.diagnostics[1]
    assert guard.data["library_frame"] == POSTPROCESS_GUARD
    assert guard.data["boundary_kind"] == "declaration" and guard.data["boundary"] == {"file": str(ZOO / "detectors.py"), "line": 19}
    assert (guard.related[0].file, guard.related[0].range.start.line) == (str(MINILIB / "postprocess.py"), 7)
    assert [f.get("function") for f in guard.data["library_chain"]] == ["small_detector", "TinyDetector.forward", "limit_detections"]
    assert guard.message.startswith("Inside the library minilib (minilib/postprocess.py:8, in `limit_detections`), draft export could not decide ")
    assert "`num_kept > max_keep`" in guard.message and "u2 is `num_kept`" in guard.message
    assert guard.message.endswith("No line of this project runs while the model exports: it is shown where the target builds the model.")
    hover = hover_markdown(guard, (ZOO / "detectors.py").read_text())
    assert (
        "**From your code into the library minilib**\n1. your code `detectors.py:19`: `model = TinyDetector(max_keep=2)`\n"
        "2. `TinyDetector.forward` `detector.py:20`: `kept = limit_detections(boxes, scores, self.max_keep)`\n"
        "3. `limit_detections` `postprocess.py:8`: `if num_kept > max_keep:`\n"
    ) in hover
    assert "- guard in the library minilib: `num_kept > 2`\n- as torch printed it: `u2 > 2`\n" in hover and "- `u2` is `num_kept`" in hover
    first, second = result.diagnostics[-2:]
    assert [first.data["expr"], second.data["expr"]] == ["u0 > 3", "u1 > 1"]  # propose (keeps 3), then detect (keeps 1)


def test_a_module_level_target_puts_them_on_its_model_line(example_runs: ExampleRuns) -> None:
    result = example_runs.result("zoo/module_level.py")
    got = [(d.code, text_of(ZOO / "module_level.py", rng(d.range)), library_place(d)) for d in result.diagnostics]
    assert got == [
        ("data-dependent-guard", "TinyDetector(max_keep=1).eval()", ("minilib/detector.py", 17)),
        ("data-dependent-guard", "TinyDetector(max_keep=1).eval()", ("minilib/postprocess.py", 8)),
        ("missing-fake-kernel", "TinyDetector(max_keep=1).eval()", ("minilib/detector.py", 16)),
    ]
    registry.attach(result.diagnostics)
    assert [len(d.fixes) for d in result.diagnostics] == [0, 0, 1]  # the guards' names are the library's
    (fix,) = result.diagnostics[2].fixes
    assert [e.file for e in fix.edits] == [str(ZOO / "module_level.py")]  # in the project's file, never in minilib
    assert '@torch.library.register_fake("minilib::decode_boxes")' in fix.edits[0].new_text


MISMATCHED_LIB = """import torch


@torch.library.custom_op("mmlib::scale", mutates_args=())
def scale(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@scale.register_fake
def _(x):
    return torch.empty_like(x, dtype=torch.float64)


class Scaler(torch.nn.Module):
    def forward(self, x):
        y = scale(x)
        return y + 1
"""

MISMATCHED_FACTORY = """import torch
from mmlib import Scaler


def scaler():
    return Scaler(), (torch.rand(3),)
"""


def test_a_librarys_wrong_fake_kernel_in_a_factory_target(engine: SyncEngine, tmp_path: Path) -> None:
    """The library registers a fake kernel of the wrong dtype: on the factory's model, the library's call
    and its fake kernel related; the fix registers a correct one in the project, which replaces it."""
    site = tmp_path / "env" / "lib" / "site-packages"
    (site / "mmlib").mkdir(parents=True)
    (site / "mmlib" / "__init__.py").write_text(MISMATCHED_LIB)
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "pyproject.toml").write_text('[tool.exportlens]\ntargets = ["zoo.py:scaler"]\n')
    (proj / "zoo.py").write_text(f"import sys\n\nsys.path.insert(0, {str(site)!r})\n" + MISMATCHED_FACTORY)
    result = engine.check(proj / "zoo.py")
    (d,) = result.diagnostics
    assert (d.code, text_of(proj / "zoo.py", rng(d.range))) == ("mismatched-fake-kernel", "Scaler()")
    assert [(os.path.relpath(r.file, site), r.range.start.line) for r in d.related] == [("mmlib/__init__.py", 15), ("mmlib/__init__.py", 9)]
    assert d.data["library"] == "mmlib" and d.data["boundary_kind"] == "declaration"
    assert "the fake output has dtype torch.float64, the real one torch.float32" in d.message
    registry.attach(result.diagnostics)
    (fix,) = d.fixes
    assert fix.title.startswith("Replace the library's wrong fake kernel of `mmlib::scale` with one in this file")
    registry.apply_preferred(result.diagnostics, write=True)
    assert engine.check(proj / "zoo.py").diagnostics == []


DETECTION_ZOO = """import torch
from minilib.detection import fasterrcnn_tiny_320_fpn


def image():
    return torch.rand(1, 3, 320, 320, generator=torch.Generator().manual_seed(0))


def fasterrcnn():
    model = fasterrcnn_tiny_320_fpn(weights=None, weights_backbone=None)
    return model, (image(),)
"""

DETECTION_MODULE = """import torch
from minilib.detection import ssdlite_tiny

model = ssdlite_tiny(weights=None, weights_backbone=None, num_classes=9)
example_args = (torch.rand(1, 3, 320, 320, generator=torch.Generator().manual_seed(0)),)
"""


@pytest.fixture(scope="module")
def detection(tmp_path_factory: pytest.TempPathFactory) -> Path:
    proj = tmp_path_factory.mktemp("detection")
    (proj / "pyproject.toml").write_text('[tool.exportlens]\ntargets = ["zoo.py:fasterrcnn"]\n')
    (proj / "zoo.py").write_text(DETECTION_ZOO)
    (proj / "ssd.py").write_text(DETECTION_MODULE)
    return proj


@pytest.fixture(scope="module")
def detected(engine: SyncEngine, detection: Path) -> dict[str, FileResult]:
    """Each detector checked once (draft export takes some 10-30 s each on a CPU)."""
    return {name: engine.check(detection / name) for name in ("zoo.py", "ssd.py")}


def test_a_detector_from_a_factory_gets_one_finding_per_library_guard(detected: dict[str, FileResult], detection: Path) -> None:
    """Faster R-CNN's guards, each on `fasterrcnn_tiny_320_fpn(...)` with its own library line; draft
    export's guards from its comparison of fake and real tensors (the box coder's `0::4` slices) are
    its own artefacts and stay dropped, as for a script."""
    result = detected["zoo.py"]
    got = [(d.code, text_of(detection / "zoo.py", rng(d.range)), library_place(d), d.data["test_text"]) for d in result.diagnostics]
    assert got == [
        ("data-dependent-guard", "fasterrcnn_tiny_320_fpn(weights=None, weights_backbone=None)", ("minilib/detection/_utils.py", 22), "box_sum > 0"),
        ("data-dependent-guard", "fasterrcnn_tiny_320_fpn(weights=None, weights_backbone=None)", ("minilib/detection/boxes.py", 30), "boxes.numel() > 4000"),
        ("data-dependent-guard", "fasterrcnn_tiny_320_fpn(weights=None, weights_backbone=None)", ("minilib/detection/boxes.py", 37), "boxes.numel() == 0"),
        ("data-dependent-guard", "fasterrcnn_tiny_320_fpn(weights=None, weights_backbone=None)", ("minilib/detection/boxes.py", 48), "torch.unique(idxs)"),
        ("data-dependent-guard", "fasterrcnn_tiny_320_fpn(weights=None, weights_backbone=None)", ("minilib/detection/poolers.py", 42), "len(rois)"),
    ]
    numel = result.diagnostics[1]
    assert numel.data["expr"] == "4*u1 > 4000" and numel.data["result"] == "True"
    assert numel.data["library_frame"]["where"] == "minilib/detection/boxes.py:30"  # as an import names it, on any machine
    assert "the condition `boxes.numel() > 4000`" in numel.message and "torch saw `4*u1 > 4000`" in numel.message
    assert [f.get("function") for f in numel.data["library_chain"]] == [
        "fasterrcnn",
        "TinyFasterRCNN.forward",
        "RegionProposalNetwork.forward",
        "RegionProposalNetwork.filter_proposals",
        "batched_nms",
    ]
    rois = result.diagnostics[4]
    assert rois.data["kind"] == "value" and "the value of `len(rois)`" in rois.message  # specialised to the example's 20
    assert {d.data["boundary_kind"] for d in result.diagnostics} == {"declaration"}


def test_a_detector_as_module_variables_and_its_long_expression(detected: dict[str, FileResult], detection: Path) -> None:
    """SSD's per-class topk makes torch's expression a long sum: shortened in the message, whole in `data`."""
    result = detected["ssd.py"]
    got = [(d.code, text_of(detection / "ssd.py", rng(d.range)), library_place(d)) for d in result.diagnostics]
    assert got == [
        ("data-dependent-guard", "ssdlite_tiny(weights=None, weights_backbone=None, num_classes=9)", ("minilib/detection/boxes.py", 30)),
        ("data-dependent-guard", "ssdlite_tiny(weights=None, weights_backbone=None, num_classes=9)", ("minilib/detection/boxes.py", 48)),
    ]
    numel = result.diagnostics[0]
    whole = " + ".join(f"4*Min(600, u{i})" for i in sorted(range(8), key=str)) + " > 4000"
    assert numel.data["expr"] == whole and len(whole) > 120
    assert f"torch saw `{shorten(whole)}`" in numel.message and shorten(whole).endswith("…") and whole not in numel.message
    assert "the condition `boxes.numel() > 4000`" in numel.message


def test_the_zoo_groups_by_the_shared_library_line(detected: dict[str, FileResult]) -> None:
    """Both detectors reach `boxes.numel() > 4000`: one root cause in the JSON report, whichever line declared them."""
    results = [detected["zoo.py"], detected["ssd.py"]]
    report = Report("torch", [t for r in results for t in r.targets], [d for r in results for d in r.diagnostics])
    doc = jsonreport.build(report, results)
    shared = [d["target"] for d in doc["diagnostics"] if d["root_cause"]["where"] == "minilib/detection/boxes.py:30"]
    assert shared == ["zoo.py:fasterrcnn", "model"]
    assert rootcause.read(doc["diagnostics"][1]["root_cause"]) == (str(MINILIB / "detection" / "boxes.py"), None, 29)


STRICT_LIB = """import torch


class Strict(torch.nn.Module):
    def forward(self, x):
        return check_input(x) * 2


def check_input(x):
    if torch.compiler.is_exporting():
        raise ValueError("strictlib cannot be exported")
    return x
"""


def test_an_error_raised_inside_a_module_level_library_model(engine: SyncEngine, tmp_path: Path) -> None:
    path, site = _library_project(
        tmp_path, {"strictlib/__init__.py": STRICT_LIB}, "import torch\nfrom strictlib import Strict\n\nmodel = Strict()\nexample_args = (torch.rand(3),)\n"
    )
    (d,) = engine.check(path).diagnostics
    assert (d.code, text_of(path, rng(d.range))) == ("export-error", "Strict()")
    assert d.message.startswith(
        "torch.export failed inside the library strictlib (strictlib/__init__.py:11, in `check_input`): ValueError: strictlib cannot be exported."
    )
    assert [(os.path.relpath(r.file, site), r.range.start.line) for r in d.related] == [("strictlib/__init__.py", 10)]
    assert d.data["library_frame"]["line"] == 11 and d.data["boundary_kind"] == "declaration"


def test_a_notebooks_module_level_library_model_is_placed_in_its_cell(engine: SyncEngine, tmp_path: Path) -> None:
    """The declaration is found in the notebook's joined code and mapped back to its cell, like any finding."""
    cells = [
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": ["import torch\n", "from minilib import TinyDetector"]},
        {"cell_type": "markdown", "metadata": {}, "source": ["The model"]},
        {
            "cell_type": "code",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": ["model = TinyDetector(max_keep=1)\n", "example_args = (torch.tensor([[2.0, 1.0, 0.5, 1.0], [1.0, 1.0, 1.0, 1.0]]),)"],
        },
    ]
    (tmp_path / "pyproject.toml").write_text("")
    nb = tmp_path / "zoo.ipynb"
    nb.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    result = engine.check(nb)
    got = [(d.code, d.cell, rng(d.range), library_place(d)) for d in result.diagnostics]
    assert got == [
        ("data-dependent-guard", 2, (0, 8, 0, 32), ("minilib/detector.py", 17)),
        ("data-dependent-guard", 2, (0, 8, 0, 32), ("minilib/postprocess.py", 8)),
        ("missing-fake-kernel", 2, (0, 8, 0, 32), ("minilib/detector.py", 16)),
    ]


PATCH_FACTORIES = """import torch
from minilib import DynamicPatchEmbed, FixedPatchEmbed
from torch.export import Dim


def fixed_embed():
    model = FixedPatchEmbed(img_size=32)
    return {"model": model, "example_args": (torch.rand(2, 3, 32, 32),), "dynamic_shapes": ({2: Dim.AUTO, 3: Dim.AUTO},)}


def dynamic_embed():
    return {"model": DynamicPatchEmbed(), "example_args": (torch.rand(2, 3, 32, 48),), "dynamic_shapes": ({2: Dim("h"), 3: Dim("w")},)}
"""


def test_a_timm_like_model_from_a_factory_gets_its_specialized_and_violated_dimensions(engine: SyncEngine, tmp_path: Path) -> None:
    """minilib's patch embeddings written as timm writes them: the fixed one's size checks specialise
    the Dim.AUTO height and width (plain export passes), the dynamic one's divisibility checks violate
    the named Dims (plain export fails). Each dimension its own finding on the factory's model, with
    the library's guard related and in `data`."""
    (tmp_path / "pyproject.toml").write_text('[tool.exportlens]\ntargets = ["vit.py:fixed_embed", "vit.py:dynamic_embed"]\n')
    path = tmp_path / "vit.py"
    path.write_text(PATCH_FACTORIES)
    result = engine.check(path)
    got = [(d.target, d.code, text_of(path, rng(d.range)), library_place(d), d.data["boundary_kind"]) for d in result.diagnostics]
    assert got == [
        ("vit.py:fixed_embed", "dim-specialized", "FixedPatchEmbed(img_size=32)", ("minilib/patches.py", 19), "declaration"),
        ("vit.py:fixed_embed", "dim-specialized", "FixedPatchEmbed(img_size=32)", ("minilib/patches.py", 20), "declaration"),
        ("vit.py:dynamic_embed", "guard-added", "DynamicPatchEmbed()", ("minilib/patches.py", 32), "declaration"),
        ("vit.py:dynamic_embed", "guard-added", "DynamicPatchEmbed()", ("minilib/patches.py", 33), "declaration"),
    ]
    height, _, h16, _ = result.diagnostics
    assert height.message.startswith(
        "`x.shape[2]` is marked Dim.AUTO, but inside the library minilib (minilib/patches.py:19, in `forward`) the guard `x.shape[2] == 32` fixes it to 32"
    )
    assert (os.path.relpath(height.related[0].file, MINILIB.parent), height.related[0].range.start.line) == ("minilib/patches.py", 18)
    assert "torch added the guard `x.shape[2] % 16 == 0`, so torch.export.export fails with a constraint violation" in h16.message
    assert h16.message.endswith("No line of this project runs while the model exports: it is shown where the target builds the model.")
    assert [t.status for t in result.targets] == ["problems", "problems"]


COMPILED_FACTORY = """import torch
from minilib import TwoStageDetector


def build():
    return TwoStageDetector().eval()


fast = torch.compile(build())
fast(torch.rand(5, 4), torch.tensor([0.9, 0.8, 0.7, 0.6, 0.1]))
"""

TRACED_FACTORY = """import torch
from minilib import DetectionHead


def build():
    return DetectionHead().eval()


boxes = torch.tensor([[1.0, 1.0, 4.0, 3.0], [2.0, 0.0, 1.0, 5.0], [0.0, 0.0, 2.0, 2.0], [3.0, 1.0, 6.0, 2.0]])
traced = torch.jit.trace(build(), (boxes,), strict=False)
"""


def test_a_compiled_library_model_built_by_a_factory(engine: SyncEngine, tmp_path: Path) -> None:
    """torch.compile over a library model a factory built: the project's call of the compiled model is
    on the live stack, so each graph break and recompile inside minilib goes there, library line
    related and in `data`; the one `.item()` break reached from propose and from detect stays two."""
    (tmp_path / "pyproject.toml").write_text("")
    path = tmp_path / "compiled.py"
    path.write_text(COMPILED_FACTORY)
    result = engine.check(path)
    call = "fast(torch.rand(5, 4), torch.tensor([0.9, 0.8, 0.7, 0.6, 0.1]))"
    got = [(d.code, text_of(path, rng(d.range)), library_place(d), [f.get("function") for f in d.data["library_chain"]]) for d in result.diagnostics]
    assert got == [
        ("graph-break", call, ("minilib/postprocess.py", 7), ["<module>", "forward", "propose", "limit_detections"]),
        ("graph-break", call, ("minilib/postprocess.py", 7), ["<module>", "forward", "detect", "limit_detections"]),
        ("recompile", call, ("minilib/postprocess.py", 6), ["<module>", "forward", "detect", "limit_detections"]),
        ("recompile", call, ("minilib/postprocess.py", 7), ["<module>", "forward", "detect", "limit_detections"]),
    ]
    assert [(d.related[-1].file, d.related[-1].range.start.line, d.related[-1].message) for d in result.diagnostics] == [
        (str(path), 8, "compiled here with torch.compile")
    ] * 4
    assert result.diagnostics[0].message.startswith("Graph break inside the library minilib (minilib/postprocess.py:7, in `limit_detections`): `.item()`")


def test_a_traced_library_model_built_by_a_factory(engine: SyncEngine, tmp_path: Path) -> None:
    """torch.jit.trace over a library model a factory built: each tracer warning inside minilib its
    own finding on the trace call, the library line related and in `data`."""
    (tmp_path / "pyproject.toml").write_text("")
    path = tmp_path / "traced.py"
    path.write_text(TRACED_FACTORY)
    result = engine.check(path)
    call = "torch.jit.trace(build(), (boxes,), strict=False)"
    got = [(d.code, text_of(path, rng(d.range)), library_place(d)) for d in result.diagnostics]
    assert got == [
        ("tracer-warning", call, ("minilib/head.py", 11)),
        ("tracer-warning", call, ("minilib/head.py", 17)),
        ("tracer-warning", call, ("minilib/head.py", 23)),
        ("tracer-warning", call, ("minilib/head.py", 24)),
    ]
    assert [(os.path.relpath(r.file, MINILIB.parent), r.range.start.line) for r in result.diagnostics[0].related] == [
        ("minilib/head.py", 10),
        ("minilib/head.py", 32),
    ]


PICK_LIB = """import torch


class Pick(torch.nn.Module):
    def forward(self, x, z):
        a = x.item()
        return z[a] * 2
"""


def test_draft_exports_crash_inside_a_declared_library_model_names_the_library_line(engine: SyncEngine, tmp_path: Path) -> None:
    """Draft export run always (the "Run draft export" command) on a module-level library model whose
    plain export passes: its crash is a hint on the target, related to the library line it crashed on,
    not to the declaration, which did not run."""
    path, site = _library_project(
        tmp_path,
        {"picklib/__init__.py": PICK_LIB},
        "import torch\nfrom picklib import Pick\n\nmodel = Pick()\nexample_args = (torch.tensor(2), torch.randn(9))\n",
    )
    assert [d.code for d in engine.check(path).diagnostics] == ["could-be-dynamic"]  # plain export passes; z's length: a hint
    hint, d = engine.check(path, draft="always").diagnostics
    assert hint.code == "could-be-dynamic"
    assert (d.code, d.severity, rng(d.range)) == ("draft-export-crashed", INFORMATION, (6, 0, 6, 14))
    assert [(os.path.relpath(r.file, site), r.range.start.line, r.message) for r in d.related] == [
        ("picklib/__init__.py", 6, "draft export crashed here, in the library picklib (picklib/__init__.py:7, in `forward`): `return z[a] * 2`")
    ]
