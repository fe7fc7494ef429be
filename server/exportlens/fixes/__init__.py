"""Quick-fix edit generators: pure functions from document text to ``Fix`` edits.

Every generator takes the document TEXT exactly as the editor has it (CRLF, tabs, comments,
non-ASCII kept), and answers ``exportlens.model.Fix`` (or a list of them) or a ``Refusal`` whose
``reason`` says why no fix is offered. Edits replace whole lines only where the fix changes
something; every other byte stays identical, ranges are LSP (0-based lines, UTF-16 columns),
and a fix whose result does not ``ast.parse`` is never returned. The ``file`` argument is only
copied into ``TextEdit.file``. Standard library only: the server never imports torch.

Entry points:

* ``insert_check(text, file, line, condition)`` — ``torch._check(condition)`` above the
  statement holding ``line`` (1-based); ``insert_item_check(text, file, line, tensor_expr)``
  binds ``.item()`` first (tensor tests).
* ``rewrite_if_as_cond(text, file, line, tensor_names=None)`` — the ``if`` at ``line`` as
  ``torch.cond`` (preferred for tensor-valued tests).
* ``register_fake_fix(text, file, op, profiles, definition)`` — a fake kernel after the op.
* ``mismatch_fix(text, file, def_line, reason, real_out)`` — corrects an existing fake kernel.
* ``refine_range``, ``derive``, ``example_size_fix``, ``static_dims`` — dynamic shapes as torch
  suggests them (``parse_suggested`` reads its "Suggested fixes:" lines), where the user wrote them.
* ``spec_fix(text, file, call_line, data, choice)`` — a whole ``dynamic_shapes`` of named Dims
  written into the call, from the could-be-dynamic probe (dynamic_spec.py).
* ``capture_scalar_outputs_fix``, ``reorderable_logging_fix``, ``compiler_disable_fix``,
  ``drop_dynamic_false_fix`` — torch.compile graph breaks and recompiles (compile_fixes.py).
* ``apply_edits(text, edits)``, ``apply_fix(texts, fix)``, ``unified_diff(old, new, path)``.
"""

from __future__ import annotations

from .apply import EditError, apply_edits, apply_fix, unified_diff
from .check_insert import (
    chained_conditions,
    insert_check,
    insert_checks,
    insert_item_check,
    negate,
)
from .common import Refusal
from .compile_fixes import capture_scalar_outputs_fix, compiler_disable_fix, drop_dynamic_false_fix, reorderable_logging_fix
from .cond_rewrite import rewrite_if_as_cond
from .dynamic_shapes_fix import derive, parse_suggested, refine_range, static_dims
from .dynamic_shapes_fix import example_size as example_size_fix
from .dynamic_spec import spec_fix
from .fake_kernel import library_op_params, qualified_name, register_fake_fix, register_fake_in_project_fix
from .mismatch_fix import mismatch_fix

__all__ = [
    "EditError",
    "Refusal",
    "apply_edits",
    "apply_fix",
    "chained_conditions",
    "capture_scalar_outputs_fix",
    "compiler_disable_fix",
    "drop_dynamic_false_fix",
    "reorderable_logging_fix",
    "derive",
    "example_size_fix",
    "parse_suggested",
    "refine_range",
    "static_dims",
    "spec_fix",
    "insert_check",
    "insert_checks",
    "insert_item_check",
    "mismatch_fix",
    "negate",
    "library_op_params",
    "qualified_name",
    "register_fake_fix",
    "register_fake_in_project_fix",
    "rewrite_if_as_cond",
    "unified_diff",
]
