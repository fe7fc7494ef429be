/**
 * "ExportLens: Suggest dynamic shapes" in the real workbench (issue 29's e2e part): on
 * examples/dynamic_shapes/token_mask.py, whose export passes with every size static, the command
 * sends one WorkspaceEdit that needs confirmation; once its refactor preview is applied and the file
 * saved, the file is the golden fix text (tests/fixtures/fixes/dynamic_shapes/spec_token_mask.out.py),
 * the run after the save says nothing, and plain torch.export.export of it has `input_ids` and
 * `attention_mask` sharing one batch and one sequence symbol. run.ts calls it in the trusted session.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { REPO } from './codeServer';
import { run } from './processes';
import { editorText, openFile, poll, runCommand, waitForWorkbench } from './workbench';
import { applyRefactorPreview, saveAndSeeNothingLeft, type VerifiedFixContext } from './verifiedFixes';

const FILE = 'dynamic_shapes/token_mask.py';
const GOLDEN = path.join(REPO, 'tests', 'fixtures', 'fixes', 'dynamic_shapes', 'spec_token_mask.out.py');

/** The program's two placeholders as torch has them: `input_ids [s43, s53] attention_mask [s43, s53]`. */
const SYMBOLS = [
  'import runpy, sys, torch',
  'seen = []',
  'real = torch.export.export',
  'def export(*a, **k):',
  '    ep = real(*a, **k)',
  '    seen.append({n.name: [str(s) for s in n.meta["val"].shape] for n in ep.graph.nodes if n.op == "placeholder" and n.name in ("input_ids", "attention_mask")})',
  '    return ep',
  'torch.export.export = export',
  'runpy.run_path(sys.argv[1], run_name="__main__")',
  'print("placeholders:", seen[0]["input_ids"], seen[0]["attention_mask"])',
].join('\n');

export async function dynamicShapesScenario(ctx: VerifiedFixContext): Promise<void> {
  const { page, workspace, python, scenario, log, filter } = ctx;
  await scenario(
    page,
    'Suggest dynamic shapes on a static export: refactor preview, apply, save, the program is dynamic',
    420_000,
    async () => {
      await waitForWorkbench(page);
      const file = path.join(workspace, FILE);
      const golden = fs.readFileSync(GOLDEN, 'utf8');
      await openFile(page, FILE);
      await runCommand(page, 'ExportLens: Suggest dynamic shapes');
      await applyRefactorPreview(ctx, file, golden, 2, 'suggest dynamic shapes refactor preview');
      await openFile(page, FILE);
      await poll('the spec in the editor', 30_000, async () =>
        (await editorText(page)).includes('dynamic_shapes={"input_ids"') ? true : undefined,
      );
      await saveAndSeeNothingLeft(page, file, golden);
      const check = await run(python, ['-m', 'exportlens', 'check', file], workspace, 300_000);
      if (check.code !== 0 || !/^0 problems in 1 target /m.test(check.output) || check.output.includes('could-be-dynamic')) {
        throw new Error(`exportlens check of the fixed file: exit ${check.code}:\n${check.output}`);
      }
      const plain = await run(python, ['-c', SYMBOLS, file], workspace, 300_000);
      const m = /placeholders: (\[.*?\]) (\[.*?\])/.exec(plain.stdout);
      if (plain.code !== 0 || m === null || m[1] !== m[2] || !/^\['s\d+', 's\d+'\]$/.test(m[1] ?? '')) {
        throw new Error(`plain torch.export.export of the fixed file: exit ${plain.code}:\n${plain.output}`);
      }
      log(`     plain torch.export.export: ${plain.stdout.trim()}`);
    },
    filter,
  );
}
