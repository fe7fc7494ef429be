/**
 * Jupyter notebooks in the real workbench (issues 14 and 19): VS Code's built-in `ipynb` extension
 * opens the notebook (no kernel: ExportLens runs it in its own worker), the client syncs its Python
 * cells over LSP 3.17 notebook sync, and the squiggle, hover, verified quick fix and CodeLens all
 * work inside a cell editor, as in a .py file. The notebook is the one the CLI and LSP tests use
 * (tests/fixtures/notebook/threshold.ipynb): markdown first, the data-dependent branch in cell 2.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Page } from 'playwright-core';
import { REPO } from './codeServer';
import { menuTitles } from './verifiedFixes';
import { MOD, poll, runCommand, waitForWorkbench } from './workbench';

/** run.ts's scenario runner: a name, a time limit, a body; a screenshot at its end. */
export type ScenarioRunner = (page: Page, name: string, timeoutMs: number, body: () => Promise<void>, filter?: string) => Promise<boolean>;

const FIXTURE = path.join(REPO, 'tests', 'fixtures', 'notebook', 'threshold.ipynb');

/** Where the notebook goes in the workspace copy, and what the tests know about it. */
export const NOTEBOOK = {
  file: 'notebook/threshold.ipynb',
  /** 0-based over all cells (markdown included), as nbformat, VS Code and the CLI's JSON count. */
  cell: 2,
  /** The finding, as tests/test_notebook.py and tests/lsp/test_notebook_sync.py assert it: 0-based in the cell. */
  code: 'data-dependent-guard',
  start: { line: 3, character: 11 },
  targetCell: 4,
  /**
   * The cell's Ctrl+. menu once its fixes are verified (as tests/lsp/test_verification.py pins them):
   * a notebook's fixes are re-run with the fix in its cells, in memory, as a .py file's are.
   */
  menu: [
    'Add `torch._check(n > 2)` — assumes `n > 2` for every input; inputs with n ≤ 2 will raise — export passes ✓',
    'Add `torch._check(n <= 2)` — assumes `n <= 2` for every input; inputs with n > 2 will raise — breaks the target',
    'Ignore this problem on this line (adds `# exportlens: ignore[data-dependent-guard]`; the problem stays, unreported)',
  ],
  /** Cell 2's text after the preferred quick fix: the guard's assumption on its own line, above the `if`. */
  fixed: `${[
    'class Threshold(torch.nn.Module):',
    '    def forward(self, x, y):',
    '        n = x.item()',
    '        torch._check(n > 2)',
    '        if n > 2:',
    '            return y * 2',
    '        return y - 1',
  ].join('\n')}\n`,
};

interface CellSquiggle {
  cell: number;
  line: number; // 1-based within the cell
  kind: 'error' | 'warning' | 'info';
}

const CELL_ROW = (index: number): string => `.notebook-editor .monaco-list-row[data-index="${index}"]`;

/** Squiggles in every rendered cell editor of the active notebook, each with its cell index and line. */
async function cellSquiggles(page: Page): Promise<CellSquiggle[]> {
  return page.evaluate(() => {
    const out: { cell: number; line: number; kind: 'error' | 'warning' | 'info' }[] = [];
    document.querySelectorAll<HTMLElement>('.notebook-editor .monaco-list-row[data-index]').forEach((row) => {
      const cell = Number(row.dataset['index']);
      const editor = row.querySelector('.monaco-editor');
      if (!editor) {
        return; // a markdown cell shown rendered
      }
      // Cell editors show no line numbers: a line is the rank of its `top` among the rendered lines.
      const tops = Array.from(editor.querySelectorAll<HTMLElement>('.view-lines .view-line'))
        .map((l) => parseFloat(l.style.top))
        .sort((a, b) => a - b);
      editor
        .querySelectorAll<HTMLElement>('.view-overlays .squiggly-error, .view-overlays .squiggly-warning, .view-overlays .squiggly-info')
        .forEach((el) => {
          const top = parseFloat(el.parentElement?.style.top ?? 'NaN');
          const line = tops.indexOf(top) + 1;
          if (line > 0) {
            const kind = el.classList.contains('squiggly-error') ? 'error' : el.classList.contains('squiggly-warning') ? 'warning' : 'info';
            out.push({ cell, line, kind });
          }
        });
    });
    return out;
  });
}

/** The text of one cell as its editor shows it (the cells here are short: every line is rendered). */
async function cellEditorLines(page: Page, index: number): Promise<string[]> {
  return page.locator(`${CELL_ROW(index)} .monaco-editor .view-lines .view-line`).evaluateAll((els) =>
    els
      .map((e) => ({ top: parseFloat((e as HTMLElement).style.top), text: (e.textContent ?? '').replace(/\u00a0/g, ' ') }))
      .sort((a, b) => a.top - b.top)
      .map((l) => l.text),
  );
}

/** The cells' sources as saved on disk, joined as nbformat defines them. */
function cellsOnDisk(file: string): string[] {
  const nb = JSON.parse(fs.readFileSync(file, 'utf8')) as { cells: { source: string | string[] }[] };
  return nb.cells.map((c) => (Array.isArray(c.source) ? c.source.join('') : c.source));
}

/** Opens the notebook through Quick Open and waits for its cell editors. */
async function openNotebook(page: Page, relPath: string): Promise<void> {
  await page.keyboard.press('Escape');
  await page.keyboard.press(`${MOD}+P`);
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible', timeout: 10_000 });
  await input.fill(relPath);
  const base = path.basename(relPath);
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: base }).first();
  await row.waitFor({ state: 'visible', timeout: 30_000 });
  await row.click();
  await page.locator('.tabs-container .tab.active', { hasText: base }).waitFor({ timeout: 15_000 });
  await page
    .locator(`${CELL_ROW(NOTEBOOK.cell)} .monaco-editor .view-lines`)
    .first()
    .waitFor({ timeout: 30_000 });
  await page.mouse.move(900, 900);
}

export async function notebookScenario(page: Page, workspace: string, scenario: ScenarioRunner, filter?: string): Promise<void> {
  const file = path.join(workspace, NOTEBOOK.file);
  await scenario(
    page,
    'notebook: run from a cell, squiggle in cell 2, hover, quick fix from the cell, save clears it',
    240_000,
    async () => {
      await waitForWorkbench(page);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.copyFileSync(FIXTURE, file);
      const before = cellsOnDisk(file);
      await openNotebook(page, NOTEBOOK.file);

      // Opening runs nothing (a notebook runs on save or on request). The target cell has its
      // CodeLens; the run is asked the way a user in a cell asks it: the command palette's "Check
      // export of this file" with the cursor in cell 2 (the cell's editor is not the notebook).
      const lens = page.locator(`${CELL_ROW(NOTEBOOK.targetCell)} .codelens-decoration a`, { hasText: 'Check export' }).first();
      await lens.waitFor({ state: 'visible', timeout: 120_000 });
      await page
        .locator(`${CELL_ROW(NOTEBOOK.cell)} .monaco-editor .view-lines`)
        .first()
        .click();
      await runCommand(page, 'ExportLens: Check export of this file');

      const want = { cell: NOTEBOOK.cell, line: NOTEBOOK.start.line + 1, kind: 'error' };
      await poll(`a squiggle in cell ${want.cell} on line ${want.line}`, 120_000, async () => {
        const got = await cellSquiggles(page);
        return got.length > 0 && got.every((g) => g.cell === want.cell && g.line === want.line && g.kind === want.kind) ? true : undefined;
      }).catch(async (e: unknown) => {
        throw new Error(`${String(e)}; squiggles: ${JSON.stringify(await cellSquiggles(page))}`);
      });
      const lenses = page.locator(`${CELL_ROW(NOTEBOOK.targetCell)} .codelens-decoration`);
      await poll("the target cell's lens counting the problem", 30_000, async () =>
        (await lenses.allInnerTexts()).some((t) => t.includes('1 problem in this notebook')) ? true : undefined,
      ).catch(async (e: unknown) => {
        throw new Error(`${String(e)}; lenses: ${JSON.stringify(await lenses.allInnerTexts())}`);
      });

      // Hover on the squiggle: the server's explanation for the cell's finding.
      const squiggle = page.locator(`${CELL_ROW(NOTEBOOK.cell)} .view-overlays .squiggly-error`).first();
      const box = await squiggle.boundingBox();
      if (box === null) {
        throw new Error('the squiggle has no box');
      }
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      const hover = page.locator('.monaco-hover', { hasText: `ExportLens · ${NOTEBOOK.code}` }).first();
      await hover.waitFor({ state: 'visible', timeout: 30_000 });
      const hoverText = await hover.innerText();
      if (!hoverText.includes('guard in your code: n > 2')) {
        throw new Error(`the hover does not name the guard: ${JSON.stringify(hoverText.slice(0, 500))}`);
      }

      // The quick fix from the cell editor: the cursor in the finding, Ctrl+. and the preferred fix.
      // Verification runs in the background after the diagnostics are published; each Ctrl+. asks
      // the server for the actions again, so the menu is reopened until they carry their outcomes.
      await page.keyboard.press('Escape');
      let titles: string[] = [];
      await poll(
        "the cell's verified fixes in the Ctrl+. menu",
        180_000,
        async () => {
          await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
          await page.keyboard.press(`${MOD}+.`);
          await page.locator('.action-widget .monaco-list-row.action').first().waitFor({ state: 'visible', timeout: 20_000 });
          titles = await menuTitles(page);
          if (JSON.stringify(titles) === JSON.stringify(NOTEBOOK.menu)) {
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
        1_000,
      ).catch((e: unknown) => {
        throw new Error(`${String(e)}; the menu showed ${JSON.stringify(titles, null, 1)}`);
      });
      const row = page.locator('.action-widget .monaco-list-row', { hasText: 'torch._check(n > 2)' }).first();
      await row.waitFor({ state: 'visible', timeout: 30_000 });
      const focused = page.locator('.action-widget .monaco-list-row.focused');
      if ((await focused.count()) > 0 && (await focused.first().innerText()).includes('torch._check(n > 2)')) {
        await page.keyboard.press('Enter');
      } else {
        await row.click();
      }
      await poll('the fix in the cell editor', 15_000, async () =>
        (await cellEditorLines(page, NOTEBOOK.cell)).join('\n') === NOTEBOOK.fixed ? true : undefined,
      ).catch(async (e: unknown) => {
        throw new Error(`${String(e)}; cell ${NOTEBOOK.cell} shows ${JSON.stringify(await cellEditorLines(page, NOTEBOOK.cell))}`);
      });

      await page.keyboard.press(`${MOD}+S`);
      await poll('the fixed cell saved to disk', 15_000, () =>
        Promise.resolve(cellsOnDisk(file)[NOTEBOOK.cell] === NOTEBOOK.fixed ? true : undefined),
      ).catch((e: unknown) => {
        throw new Error(`${String(e)}; cell ${NOTEBOOK.cell} on disk: ${JSON.stringify(cellsOnDisk(file)[NOTEBOOK.cell])}`);
      });
      const after = cellsOnDisk(file);
      const changed = after.map((s, i) => (s === before[i] ? -1 : i)).filter((i) => i >= 0);
      if (after.length !== before.length || JSON.stringify(changed) !== JSON.stringify([NOTEBOOK.cell])) {
        throw new Error(`the fix changed cells ${JSON.stringify(changed)} (of ${after.length}); only cell ${NOTEBOOK.cell} may change`);
      }

      // Saving the notebook runs it again: the squiggle goes.
      await poll('no squiggle left in the notebook', 120_000, async () => ((await cellSquiggles(page)).length === 0 ? true : undefined));
      await poll("the target cell's lens counting no problem", 30_000, async () =>
        (await lenses.allInnerTexts()).some((t) => t.includes('0 problems in this notebook')) ? true : undefined,
      ).catch(async (e: unknown) => {
        throw new Error(`${String(e)}; lenses: ${JSON.stringify(await lenses.allInnerTexts())}`);
      });
      // Every run (the checks and each fix's verification) ran the joined cells from memory: nothing
      // was ever written next to the notebook.
      const left = fs.readdirSync(path.dirname(file)).filter((n) => n !== path.basename(file));
      if (left.length > 0) {
        throw new Error(`files written next to the notebook: ${JSON.stringify(left)}`);
      }
    },
    filter,
  );
}
