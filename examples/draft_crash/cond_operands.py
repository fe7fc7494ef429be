"""ExportDB's own cond_operands example (shipped inside torch): in torch 2.13 draft export crashes
on it ("SymIntArrayRef expected to contain only concrete integers") while plain torch.export.export
passes. ExportLens says so in a hint, not as an error."""

from torch._export.db.examples import cond_operands

model = cond_operands.model
example_args = cond_operands.example_args
dynamic_shapes = cond_operands.dynamic_shapes
