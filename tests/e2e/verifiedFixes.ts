/**
 * Verified fixes and "Make it export" in the real workbench (issue 10's e2e part): the quick-fix
 * menu shows each fix's verified outcome, also from a light bulb that was shown before the
 * outcomes arrived (VS Code asks again by itself), and "Make it export" on a file with two
 * problems, once its refactor preview is applied and the file saved, leaves a file that really
 * exports. run.ts calls `verifiedFixScenarios` in the trusted session and lends it its scenario runner.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Page } from 'playwright-core';
import { run } from './processes';
import type { ClientEvent } from '../../extension/lib/events';
import {
  clientEvents,
  editorText,
  gotoLine,
  MOD,
  openFile,
  poll,
  runCommand,
  visibleSquiggles,
  waitForWorkbench,
  type Squiggle,
} from './workbench';

type Scenario = (page: Page, name: string, timeoutMs: number, body: () => Promise<void>, filter?: string) => Promise<boolean>;

export interface VerifiedFixContext {
  page: Page;
  workspace: string;
  /** The workbench's user data folder: the extension's log (its recorded events) is under it. */
  userDataDir: string;
  /** The interpreter with torch the workbench's server uses (the venv's). */
  python: string;
  scenario: Scenario;
  screenshot: (page: Page, name: string) => Promise<string>;
  log: (line: string) => void;
  filter?: string;
}

/**
 * examples/data_dependent/item_branch.py with a forward that sleeps 3 s, so its fixes are still
 * being verified when the light bulb shows (each verification job runs the forward twice). Its
 * fixes and their verified titles are the ones tests/lsp/test_verification.py pins for
 * item_branch.py: a rewrite that passes, an assumption that passes and an assumption that breaks
 * the target (listed after the others), then "ignore".
 */
const MENU_FILE = 'verified/slow_item_branch.py';
const MENU_SOURCE = [
  '"""item_branch.py with a forward that takes seconds: verifying its fixes takes a while."""',
  '',
  'import time',
  '',
  'import torch',
  '',
  '',
  'class Threshold(torch.nn.Module):',
  '    def forward(self, x, y):',
  '        time.sleep(3)',
  '        n = x.item()',
  '        if n > 2:',
  '            return y * 2',
  '        return y - 1',
  '',
  '',
  'if __name__ == "__main__":',
  '    ep = torch.export.export(Threshold(), (torch.tensor(5), torch.ones(3)))',
  '    print(ep)',
  '',
].join('\n');
const MENU_LINE = 12; // `if n > 2:` (1-based, as the workbench shows it)
const MENU_COLUMN = 12;
const MENU_TITLES = [
  'Rewrite this if/return as `torch.cond` (keeps both branches in the exported graph) — export passes ✓',
  'Add `torch._check(n > 2)` — assumes `n > 2` for every input; inputs with n ≤ 2 will raise — export passes ✓',
  'Add `torch._check(n <= 2)` — assumes `n <= 2` for every input; inputs with n > 2 will raise — breaks the target',
  'Ignore this problem on this line (adds `# exportlens: ignore[data-dependent-guard]`; the problem stays, unreported)',
];

/** The example with two data-dependent branches (examples/EXPECTED.json: lines 8 and 10). */
const TWO_FILE = 'data_dependent/two_branches.py';
const TWO_LINES = [8, 10];
/** What "Make it export" leaves: both branches rewritten as torch.cond (`exportlens fix` agrees). */
const TWO_FIXED = [
  '"""Two Python branches on tensor values: export can decide neither, and one fix is not enough."""',
  '',
  'import torch',
  '',
  '',
  'class TwoGates(torch.nn.Module):',
  '    def forward(self, x):',
  '        def true_fn(x):',
  '            x = x * 2',
  '            return x',
  '        def false_fn(x):',
  '            return x.clone()',
  '        x = torch.cond(x.sum() > 0, true_fn, false_fn, (x,))',
  '        def true_fn(x):',
  '            return x - 5',
  '        def false_fn(x):',
  '            return x.clone()',
  '        return torch.cond(x.max() > 5, true_fn, false_fn, (x,))',
  '',
  '',
  'model = TwoGates()',
  'example_args = (torch.arange(4.0),)',
  '',
].join('\n');

/** Plain `torch.export.export` of a file's `model` on its `example_args` (no draft export). */
const PLAIN_EXPORT = [
  'import runpy, sys, torch',
  'ns = runpy.run_path(sys.argv[1])',
  'ep = torch.export.export(ns["model"], ns["example_args"])',
  'print("exported:", sum(1 for n in ep.graph.nodes if n.op == "call_function"), "calls")',
].join('\n');

/** The verification of MENU_FILE finished, as the extension recorded it. */
function verified(events: ClientEvent[]): ClientEvent | undefined {
  return events.find((e) => e.kind === 'verification' && e.notice.state === 'done' && e.notice.uri.endsWith(`/${MENU_FILE}`));
}

/** The titles in the open code action menu (header and separator rows left out). */
export async function menuTitles(page: Page): Promise<string[]> {
  return page
    .locator('.action-widget .monaco-list-row.action .title')
    .evaluateAll((els) => els.map((e) => (e.textContent ?? '').replace(/\u00a0/g, ' ').trim()));
}

async function squigglesOn(page: Page, lines: number[], timeoutMs: number): Promise<void> {
  let got: Squiggle[] = [];
  await poll(`error squiggles on lines ${lines.join(', ')}`, timeoutMs, async () => {
    got = await visibleSquiggles(page);
    const seen = [...new Set(got.map((g) => g.line))].sort((a, b) => a - b);
    return JSON.stringify(seen) === JSON.stringify(lines) && got.every((g) => g.kind === 'error') ? true : undefined;
  }).catch((e: unknown) => {
    throw new Error(`${String(e)}; visible squiggles: ${JSON.stringify(got)}`);
  });
}

/**
 * The server's one WorkspaceEdit needs confirmation: VS Code shows the refactor preview and changes
 * nothing until Apply. VS Code lists such changes unticked: tick the file (all its changes), as a
 * person does, then Apply. `fixed` is what the file must not be before then; `changes` how many
 * checkboxes the preview shows at least.
 */
export async function applyRefactorPreview(
  ctx: VerifiedFixContext,
  file: string,
  fixed: string,
  changes: number,
  shot: string,
): Promise<void> {
  const { page, screenshot, log } = ctx;
  const panel = page.locator('.bulk-edit-panel');
  await panel.waitFor({ state: 'visible', timeout: 300_000 });
  const apply = panel.locator('.buttons .monaco-button', { hasText: /^Apply$/ }).first();
  await apply.waitFor({ state: 'visible', timeout: 30_000 });
  await poll(`${path.basename(file)} in the refactor preview`, 30_000, async () =>
    (await panel.innerText()).includes(path.basename(file)) ? true : undefined,
  );
  if (fs.readFileSync(file, 'utf8') === fixed) {
    throw new Error('the file changed before the preview was applied');
  }
  const boxes = panel.locator('.edit-checkbox');
  const ticked = (): Promise<boolean[]> => boxes.evaluateAll((els) => els.map((e) => e.classList.contains('checked')));
  const before = await ticked();
  log(`     refactor preview: ${before.length} checkboxes, ticked ${JSON.stringify(before)}`);
  if (before[0] !== true) {
    await boxes.first().click();
  }
  await poll('every change ticked in the refactor preview', 10_000, async () => {
    const now = await ticked();
    return now.length >= changes && now.every((t) => t) ? true : undefined;
  });
  await screenshot(page, shot);
  await apply.click();
  await panel.waitFor({ state: 'hidden', timeout: 30_000 }).catch(() => undefined);
}

/**
 * Save the active editor, wait until the disk holds `fixed`, then for the run of the saved file:
 * its CodeLens says 0 problems, no lens says `gone` (when given), and no squiggle is left (stale
 * ones would have gone with the edit alone).
 */
export async function saveAndSeeNothingLeft(page: Page, file: string, fixed: string, gone?: string): Promise<void> {
  await page.keyboard.press(`${MOD}+S`);
  let onDisk = '';
  await poll('the fixed file saved to disk', 30_000, () => {
    onDisk = fs.readFileSync(file, 'utf8');
    return Promise.resolve(onDisk === fixed ? true : undefined);
  }).catch((e: unknown) => {
    throw new Error(`${String(e)}; the file is:\n${onDisk}`);
  });
  const lenses = page.locator('.editor-group-container.active .monaco-editor .codelens-decoration');
  let shown = '';
  await poll('the run of the saved file: no problem, no squiggle', 120_000, async () => {
    shown = (await lenses.allInnerTexts()).join(' | ');
    const squiggles = await visibleSquiggles(page);
    return /\b0 problems\b/.test(shown) && (gone === undefined || !shown.includes(gone)) && squiggles.length === 0 ? true : undefined;
  }).catch(async (e: unknown) => {
    throw new Error(`${String(e)}; lenses: ${JSON.stringify(shown)}; squiggles: ${JSON.stringify(await visibleSquiggles(page))}`);
  });
}

export async function verifiedFixScenarios(ctx: VerifiedFixContext): Promise<void> {
  const { page, workspace, userDataDir, python, scenario, screenshot, log, filter } = ctx;

  await scenario(
    page,
    "the light bulb's quick-fix menu shows each fix verified (export passes, assumes, breaks) the first time it opens",
    300_000,
    async () => {
      await waitForWorkbench(page);
      const file = path.join(workspace, MENU_FILE);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, MENU_SOURCE);
      await openFile(page, MENU_FILE);
      await squigglesOn(page, [MENU_LINE], 120_000);
      // The cursor on the problem: VS Code asks for its code actions and shows the light bulb,
      // while the fixes are still being verified (their titles have no outcome yet).
      await gotoLine(page, MENU_LINE, MENU_COLUMN);
      const bulb = page.locator('.editor-group-container.active .monaco-editor .lightBulbWidget');
      await bulb.first().waitFor({ state: 'visible', timeout: 30_000 });
      if (verified(clientEvents(userDataDir)) !== undefined) {
        throw new Error('the fixes were verified before the light bulb showed: this run cannot tell whether VS Code asks again');
      }
      // The outcomes arrive; the extension sets the diagnostics again, and VS Code asks for the
      // code actions anew by itself: no cursor move, no Ctrl+.
      const done = await poll('the fixes verified (exportlens/verification done)', 240_000, () =>
        Promise.resolve(verified(clientEvents(userDataDir))),
      );
      log(`     ${JSON.stringify(done)}`);
      const asked = await poll('VS Code to ask for the code actions again', 30_000, () =>
        Promise.resolve(clientEvents(userDataDir).find((e) => e.kind === 'asked-again' && e.uri.endsWith(`/${MENU_FILE}`))),
      );
      if (asked.kind !== 'asked-again' || [...asked.titles].sort().join('\n') !== [...MENU_TITLES].sort().join('\n')) {
        throw new Error(`VS Code asked again and got ${JSON.stringify(asked)}`);
      }
      // The light bulb holds what VS Code got: its menu shows the outcomes. (It reads the actions
      // VS Code asked for, never asking again itself: a menu shown from a stale bulb would lack them.)
      let titles: string[] = [];
      let opened = 0;
      await poll(
        "the light bulb's menu with the verified titles",
        20_000,
        async () => {
          await bulb.first().click();
          await page.locator('.action-widget .monaco-list-row.action').first().waitFor({ state: 'visible', timeout: 10_000 });
          titles = await menuTitles(page);
          opened++;
          if (JSON.stringify(titles) === JSON.stringify(MENU_TITLES)) {
            return true;
          }
          await page.keyboard.press('Escape');
          await page
            .locator('.action-widget')
            .first()
            .waitFor({ state: 'hidden', timeout: 5_000 })
            .catch(() => undefined);
          return undefined;
        },
        500,
      ).catch((e: unknown) => {
        throw new Error(`${String(e)}; the menu showed ${JSON.stringify(titles, null, 1)}`);
      });
      log(`     the light bulb's menu showed the verified titles at opening ${opened}`);
      // The best verified fix is preferred: it comes first and has the keyboard focus.
      const focused = await page.locator('.action-widget .monaco-list-row.action.focused .title').allTextContents();
      if (focused.length !== 1 || focused[0]?.trim() !== MENU_TITLES[0]) {
        throw new Error(`the focused quick fix is ${JSON.stringify(focused)}, not the verified rewrite`);
      }
      await screenshot(page, 'verified quick fix menu');
      await page.keyboard.press('Escape');
    },
    filter,
  );

  await scenario(
    page,
    'Make it export on a file with two problems: refactor preview, apply, save, it exports',
    420_000,
    async () => {
      await waitForWorkbench(page);
      const file = path.join(workspace, TWO_FILE);
      await openFile(page, TWO_FILE);
      await squigglesOn(page, TWO_LINES, 90_000);
      const lens = page.locator('.editor-group-container.active .monaco-editor .codelens-decoration', { hasText: 'Make it export' });
      await lens.first().waitFor({ state: 'visible', timeout: 60_000 });
      await runCommand(page, 'ExportLens: Make it export');
      await applyRefactorPreview(ctx, file, TWO_FIXED, 2, 'make it export refactor preview');
      await openFile(page, TWO_FILE);
      await poll('both fixes in the editor', 30_000, async () =>
        (await editorText(page)).split('torch.cond(').length - 1 === 2 ? true : undefined,
      );
      await saveAndSeeNothingLeft(page, file, TWO_FIXED, 'Make it export');
      // The file as the workbench wrote it exports outside the editor too: the CLI finds nothing,
      // and a plain torch.export.export (not draft export) of its model succeeds.
      const check = await run(python, ['-m', 'exportlens', 'check', file], workspace, 300_000);
      log(`     exportlens check: exit ${check.code}: ${check.output.trim().split('\n').at(-1) ?? ''}`);
      if (check.code !== 0 || !/^0 problems in 1 target /m.test(check.output)) {
        throw new Error(`exportlens check of the fixed file: exit ${check.code}:\n${check.output}`);
      }
      const plain = await run(python, ['-c', PLAIN_EXPORT, file], workspace, 300_000);
      if (plain.code !== 0 || !plain.stdout.includes('exported:')) {
        throw new Error(`torch.export.export of the fixed file failed: exit ${plain.code}:\n${plain.output}`);
      }
      log(`     plain torch.export.export: ${plain.stdout.trim()}`);
    },
    filter,
  );
}
