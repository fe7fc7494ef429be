/**
 * What the examples workspace must show: each problem kind on its exact line. The facts (file,
 * code, severity, range) come from examples/EXPECTED.json, which the Python tests read too; this
 * file only chooses which examples the workbench opens.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

export interface Expected {
  file: string;
  code: string;
  severity: 'error' | 'warning';
  /** 0-based start of the range, as EXPECTED.json (and LSP) count. */
  start: { line: number; character: number };
  /** The target file whose run publishes this diagnostic, when it is another file (a helper). */
  trigger?: string;
}

interface ExpectedJson {
  examples: Record<string, { file: string; code: string; severity: string; range: [number, number, number, number] }[]>;
}

/** The examples the e2e run opens, in order (the first one is also the trust and fix scenario's file). */
const SHOWN = [
  'data_dependent/item_branch.py',
  'data_dependent/tensor_branch.py',
  'data_dependent/split_sizes.py',
  'factory/build.py',
  'two_files/model.py',
  'constraint/model.py',
  'missing_fake/model.py',
  'mismatched_fake/model.py',
  'library_op/model.py',
  'compile/branch.py',
  'dynamic_shapes/auto_branch.py',
];

const EXPECTED_JSON = path.resolve(__dirname, '..', '..', 'examples', 'EXPECTED.json');

function load(): Expected[] {
  const json = JSON.parse(fs.readFileSync(EXPECTED_JSON, 'utf8')) as ExpectedJson;
  return SHOWN.flatMap((name) => {
    const diags = json.examples[name];
    if (diags === undefined) {
      throw new Error(`${name} is not in examples/EXPECTED.json`);
    }
    return diags.map((d) => {
      if (d.severity !== 'error' && d.severity !== 'warning') {
        throw new Error(`${name}: ${d.code} has severity ${d.severity}; the workbench test shows only squiggles`);
      }
      const [line, character] = d.range;
      return {
        file: d.file,
        code: d.code,
        severity: d.severity,
        start: { line, character },
        ...(d.file !== name ? { trigger: name } : {}),
      };
    });
  });
}

export const EXPECTED: Expected[] = load();

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

/**
 * A model whose plain export passes while draft export crashes on it (`z[a]` with `a` read from a
 * tensor): "Check export" shows nothing, "Run draft export on this file" shows draft export's
 * report, an information-level `draft-export-crashed` on the `model =` line.
 */
export const DRAFT_PROBE = {
  file: 'draft_probe/pick.py',
  line: 10, // 1-based: `model = Pick()`
  source: [
    '"""Written by the e2e test: plain export passes, draft export crashes on z[a]."""',
    'import torch',
    '',
    '',
    'class Pick(torch.nn.Module):',
    '    def forward(self, x, z):',
    '        a = x.item()',
    '        return z[a] * 2',
    '',
    'model = Pick()',
    'example_args = (torch.tensor(2), torch.randn(9))',
    '',
  ].join('\n'),
};

export interface Located extends Expected {
  line: number; // 1-based, as the workbench shows it
  column: number; // 1-based
}

/** The 1-based line and column the workbench shows; the file must exist in the workspace copy. */
export function locate(workspace: string, e: Expected): Located {
  if (!fs.existsSync(path.join(workspace, e.file))) {
    throw new Error(`${e.file} is not in the workspace ${workspace}`);
  }
  return { ...e, line: e.start.line + 1, column: e.start.character + 1 };
}

export const KINDS = [...new Set(EXPECTED.map((e) => e.code))];
