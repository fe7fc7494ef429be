/**
 * Playwright helpers that drive the VS Code workbench the way a person does (keyboard, command
 * palette, Problems panel) and read what it shows. Selectors verified on Code 1.139.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Page } from 'playwright-core';
import { ClientEvent, parseEvents } from '../../extension/lib/events';

export const MOD = 'Control';

export async function waitForWorkbench(page: Page, timeoutMs = 90_000): Promise<void> {
  await page.waitForSelector('.monaco-workbench', { timeout: timeoutMs });
  // The explorer shows the folder once the workspace is restored.
  await page.waitForSelector('.explorer-folders-view, .monaco-workbench .part.sidebar', { timeout: timeoutMs });
}

/**
 * Runs a command by its palette title (F1, type, Enter once the highlighted row is that command).
 * The list is filtered and re-rendered as it fills: a click could land on a row being replaced,
 * Enter runs what is highlighted; the palette closing says the command was taken.
 */
export async function runCommand(page: Page, title: string): Promise<void> {
  await page.keyboard.press('Escape');
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible', timeout: 10_000 });
  await input.fill(`>${title}`);
  const row = page.locator('.quick-input-list .monaco-list-row.focused', { hasText: title }).first();
  await row.waitFor({ state: 'visible', timeout: 10_000 });
  await input.press('Enter');
  await input.waitFor({ state: 'hidden', timeout: 10_000 });
}

/** Opens a workspace file through Quick Open (Ctrl+P) by its path relative to the folder. */
export async function openFile(page: Page, relPath: string): Promise<void> {
  await page.keyboard.press('Escape');
  await page.keyboard.press(`${MOD}+P`);
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible', timeout: 10_000 });
  await input.fill(relPath);
  const parts = relPath.split('/');
  const base = parts.at(-1) ?? relPath;
  const dir = parts.at(-2);
  // Quick Open first lists recent editors: wait for the row of this very file, then click it.
  let row = page.locator('.quick-input-list .monaco-list-row', { hasText: base });
  if (dir !== undefined) {
    row = row.filter({ hasText: dir });
  }
  // The first Quick Open of a session searches a cold file index while the extensions activate: on a
  // loaded machine its row took longer than 15 s (load 15 on 2 cores), so the limit is a cold start's.
  await row.first().waitFor({ state: 'visible', timeout: 60_000 });
  await row.first().click();
  await page.locator('.tabs-container .tab.active', { hasText: base }).waitFor({ timeout: 15_000 });
  await page.locator('.editor-group-container.active .monaco-editor .view-lines').first().waitFor({ timeout: 15_000 });
  if (dir !== undefined) {
    await page.locator('.breadcrumbs-control', { hasText: dir }).first().waitFor({ timeout: 15_000 });
  }
  // Park the mouse away from tabs so no hover hides what the screenshot should show.
  await page.mouse.move(900, 450);
}

/** Ctrl+G to `line` (1-based) and optional column; the cursor lands there. */
export async function gotoLine(page: Page, line: number, column?: number): Promise<void> {
  await page.keyboard.press('Escape');
  await page.keyboard.press(`${MOD}+G`);
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible', timeout: 10_000 });
  await input.fill(column === undefined ? `:${line}` : `:${line}:${column}`);
  await page.keyboard.press('Enter');
}

export interface Squiggle {
  line: number;
  kind: 'error' | 'warning' | 'info';
}

/**
 * Squiggles in the active editor's visible lines, with the line number they sit on: each
 * overlay row and line-number row share the same `top`, which ties a decoration to its line.
 */
export async function visibleSquiggles(page: Page): Promise<Squiggle[]> {
  return page.evaluate(() => {
    const editor = document.querySelector('.editor-group-container.active .monaco-editor');
    if (!editor) {
      return [];
    }
    const lineAtTop = new Map<string, number>();
    editor.querySelectorAll<HTMLElement>('.margin-view-overlays > div').forEach((row) => {
      const n = Number(row.querySelector('.line-numbers')?.textContent?.trim());
      if (Number.isFinite(n) && n > 0) {
        lineAtTop.set(row.style.top, n);
      }
    });
    const out: { line: number; kind: 'error' | 'warning' | 'info' }[] = [];
    editor
      .querySelectorAll<HTMLElement>('.view-overlays .squiggly-error, .view-overlays .squiggly-warning, .view-overlays .squiggly-info')
      .forEach((el) => {
        const row = el.parentElement;
        const line = row ? lineAtTop.get(row.style.top) : undefined;
        if (line !== undefined) {
          const kind = el.classList.contains('squiggly-error') ? 'error' : el.classList.contains('squiggly-warning') ? 'warning' : 'info';
          out.push({ line, kind });
        }
      });
    return out;
  });
}

/** Polls `probe` until it returns a value that is not undefined, or throws after timeoutMs. */
export async function poll<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>, everyMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: string | undefined;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) {
        return v;
      }
    } catch (e) {
      last = e instanceof Error ? e.message : String(e);
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${last})` : ''}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** The ExportLens status bar item's text (codicons render as empty spans), or undefined. */
export async function statusText(page: Page): Promise<string | undefined> {
  const items = await page.locator('.statusbar-item').allInnerTexts();
  return items.map((t) => t.trim()).find((t) => t.startsWith('ExportLens'));
}

/** The text of the active editor (Monaco renders only visible lines; files here are short). */
export async function editorText(page: Page): Promise<string> {
  const lines = await page.locator('.editor-group-container.active .monaco-editor .view-lines .view-line').evaluateAll((els) =>
    els
      .map((e) => ({ top: parseFloat((e as HTMLElement).style.top), text: (e.textContent ?? '').replace(/\u00a0/g, ' ') }))
      .sort((a, b) => a.top - b.top)
      .map((l) => l.text),
  );
  return lines.join('\n');
}

export interface ProblemRow {
  file: string;
  text: string;
}

/** Rows of the Problems panel (Ctrl+Shift+M), each marker with the file row above it. */
export async function problemRows(page: Page): Promise<ProblemRow[]> {
  const rows = await page.locator('.markers-panel .monaco-list-row').evaluateAll((els) =>
    els
      .map((e) => ({
        top: parseFloat((e as HTMLElement).style.top || '0'),
        isFile:
          e.querySelector('.file-icon, .monaco-icon-label.file-icon') !== null &&
          e.querySelector('.marker-icon, .codicon-error, .codicon-warning') === null,
        text: (e as HTMLElement).innerText.replace(/\s+/g, ' ').trim(),
      }))
      .sort((a, b) => a.top - b.top),
  );
  const out: ProblemRow[] = [];
  let file = '';
  for (const r of rows) {
    if (r.isFile) {
      // "model.pyconstraint 1" (label and folder render without a space): keep the letters.
      file = r.text.split(' ')[0] ?? '';
    } else {
      out.push({ file, text: r.text });
    }
  }
  return out;
}

/** The text shown in the Output panel's editor. */
export async function outputText(page: Page): Promise<string> {
  const lines = await page.locator('.panel .monaco-editor .view-lines .view-line').evaluateAll((els) =>
    els
      .map((e) => ({ top: parseFloat((e as HTMLElement).style.top), text: (e.textContent ?? '').replace(/\u00a0/g, ' ') }))
      .sort((a, b) => a.top - b.top)
      .map((l) => l.text),
  );
  return lines.join('\n');
}

/**
 * Starts recording, inside the page, every notification toast text and every ExportLens status
 * text that appears, so a progress notification shown for a fraction of a second is not missed.
 */
export async function startRecordingUi(page: Page): Promise<void> {
  // Plain JavaScript text: tsx would wrap named functions in a helper the page does not have.
  await page.evaluate(`(() => {
    const seen = [];
    window.__exportlensSeen = seen;
    function record() {
      document.querySelectorAll('.notification-toast').forEach((t) => {
        const text = 'toast: ' + (t.innerText || '').replace(/\\s+/g, ' ').trim();
        if (!seen.includes(text)) seen.push(text);
      });
      document.querySelectorAll('.statusbar-item').forEach((t) => {
        const text = (t.textContent || '').trim();
        if (text.startsWith('ExportLens') && !seen.includes('status: ' + text)) seen.push('status: ' + text);
      });
    }
    new MutationObserver(record).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
    record();
  })()`);
}

export async function recordedUi(page: Page): Promise<string[]> {
  return page.evaluate(() => (window as unknown as { __exportlensSeen?: string[] }).__exportlensSeen ?? []);
}

/** Text of the ExportLens output channel's log files written by the extension host. */
export function extensionLog(userDataDir: string): string {
  const found: string[] = [];
  const walk = (dir: string): void => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) {
        walk(p);
      } else if (e.name === 'ExportLens.log') {
        found.push(p);
      }
    }
  };
  const logs = path.join(userDataDir, 'logs');
  if (fs.existsSync(logs)) {
    walk(logs);
  }
  found.sort(); // the folders are named by the time they were made: oldest first
  return found.map((f) => fs.readFileSync(f, 'utf8')).join('\n');
}

/** The events the extension recorded in its log (work-done progress, verification), in order. */
export function clientEvents(userDataDir: string): ClientEvent[] {
  return parseEvents(extensionLog(userDataDir));
}
