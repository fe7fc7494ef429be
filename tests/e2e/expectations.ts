/**
 * What the examples workspace must show: each problem kind on its exact line. Lines are found
 * by an anchor text in the file, so an edit to an example moves the expectation with it, and
 * a wrong placement still fails.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

export interface Expected {
  file: string;
  code: string;
  severity: 'error' | 'warning';
  /** Text on the expected line (first occurrence); the column is where it starts. */
  anchor: string;
  /** The target file whose run publishes this diagnostic, when it is another file (a helper). */
  trigger?: string;
}

export const EXPECTED: Expected[] = [
  { file: 'data_dependent/item_branch.py', code: 'data-dependent-guard', severity: 'error', anchor: 'n > 2' },
  { file: 'data_dependent/tensor_branch.py', code: 'data-dependent-guard', severity: 'error', anchor: 'x.sum() > 0' },
  { file: 'data_dependent/split_sizes.py', code: 'data-dependent-guard', severity: 'error', anchor: 'x.split(size)' },
  { file: 'factory/build.py', code: 'data-dependent-guard', severity: 'error', anchor: 'width >= 2' },
  { file: 'two_files/layers.py', code: 'data-dependent-guard', severity: 'error', anchor: 'k > 3', trigger: 'two_files/model.py' },
  { file: 'constraint/model.py', code: 'guard-added', severity: 'error', anchor: 'x.shape[0] == 4' },
  { file: 'missing_fake/model.py', code: 'missing-fake-kernel', severity: 'error', anchor: 'def nonzero_rows' },
  { file: 'missing_fake/model.py', code: 'missing-fake-kernel', severity: 'error', anchor: 'nonzero_rows(x)' },
  { file: 'mismatched_fake/model.py', code: 'mismatched-fake-kernel', severity: 'warning', anchor: 'def to_double' },
  { file: 'mismatched_fake/model.py', code: 'mismatched-fake-kernel', severity: 'warning', anchor: 'def _(x)' },
  { file: 'mismatched_fake/model.py', code: 'mismatched-fake-kernel', severity: 'warning', anchor: 'to_double(x) + 1' },
  { file: 'library_op/model.py', code: 'missing-fake-kernel', severity: 'error', anchor: 'torch.library.define(' },
  { file: 'library_op/model.py', code: 'missing-fake-kernel', severity: 'error', anchor: 'torch.ops.exportlens_demo.twice(x)' },
  { file: 'compile/branch.py', code: 'graph-break', severity: 'warning', anchor: 'y.sum() > 0' },
];

/** A file in the workspace copy that records whether ExportLens ever executed it. */
export const TRUST_PROBE = {
  file: 'trust_probe/model.py',
  marker: 'trust_probe/RAN',
  source: [
    '"""Written by the e2e test: importing this module leaves a marker file next to it."""',
    '',
    'import pathlib',
    '',
    'import torch',
    '',
    'pathlib.Path(__file__).with_name("RAN").write_text("ExportLens ran this file\\n")',
    '',
    '',
    'class AddOne(torch.nn.Module):',
    '    def forward(self, x):',
    '        return x + 1',
    '',
    '',
    'model = AddOne()',
    'example_args = (torch.ones(2),)',
    '',
  ].join('\n'),
};

export interface Located extends Expected {
  line: number; // 1-based, as the workbench shows it
  column: number; // 1-based
}

export function locate(workspace: string, e: Expected): Located {
  const lines = fs.readFileSync(path.join(workspace, e.file), 'utf8').split('\n');
  const idx = lines.findIndex((l) => l.includes(e.anchor));
  if (idx < 0) {
    throw new Error(`anchor ${JSON.stringify(e.anchor)} not found in ${e.file}`);
  }
  return { ...e, line: idx + 1, column: (lines[idx] ?? '').indexOf(e.anchor) + 1 };
}

export const KINDS = [...new Set(EXPECTED.map((e) => e.code))];
