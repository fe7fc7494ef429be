/**
 * End-to-end tests of the ExportLens extension in a real VS Code workbench: code-server on
 * 127.0.0.1 with the extension installed from the vsix, driven by Playwright in Debian's
 * Chromium, on a fresh copy of examples/. Prints `N passed, N failed` last and exits non-zero
 * on any failure. Bounded by --timeout (seconds); every process it starts is stopped.
 *
 *   node --import tsx tests/e2e/run.ts [--vsix FILE] [--timeout 1200] [--only SUBSTRING]
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { launchBrowser } from './browser';
import { copyWorkspace, findVsix, REPO, RunningCodeServer, sleep, startCodeServer } from './codeServer';
import { DRAFT_PROBE, EXPECTED, KINDS, locate, Located, TRUST_PROBE } from './expectations';
import { finishedRuns, progressInFlight } from '../../extension/lib/events';
import { verifiedFixScenarios } from './verifiedFixes';
import { dynamicShapesScenario } from './dynamicShapes';
import { notebookScenario } from './notebook';
import { htmlReportScenarios } from './htmlReport';
import {
  clientEvents,
  editorText,
  extensionLog,
  gotoLine,
  MOD,
  openFile,
  outputText,
  poll,
  problemRows,
  recordedUi,
  runCommand,
  startRecordingUi,
  statusText,
  visibleSquiggles,
  waitForWorkbench,
} from './workbench';

const OUT = path.join(REPO, 'tests', 'e2e', 'out');
const WORKSPACE_INTERPRETER = 'workspace-python';
const WORKSPACE_INTERPRETER_MARKER = 'INTERPRETER_RAN';

interface Args {
  vsix?: string;
  timeoutS: number;
  only?: string;
  python: string;
}

function parseArgs(argv: string[]): Args {
  const args: Args = { timeoutS: 1200, python: process.env['EXPORTLENS_E2E_PYTHON'] ?? path.join(REPO, '.venv', 'bin', 'python') };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = argv[i + 1];
    if (a === '--vsix' && v) {
      args.vsix = v;
      i++;
    } else if (a === '--timeout' && v) {
      args.timeoutS = Number(v);
      i++;
    } else if (a === '--only' && v) {
      args.only = v;
      i++;
    } else if (a === '--python' && v) {
      args.python = v;
      i++;
    }
  }
  return args;
}

type Result = { name: string; ok: boolean; seconds: number; error?: string; skipped?: boolean };
const results: Result[] = [];
let shotCounter = 0;

function log(line: string): void {
  process.stdout.write(`${line}\n`);
}

function slug(s: string): string {
  return s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')
    .slice(0, 60);
}

async function screenshot(page: Page, name: string): Promise<string> {
  shotCounter++;
  const file = path.join(OUT, `${String(shotCounter).padStart(2, '0')}-${slug(name)}.png`);
  await page.screenshot({ path: file }).catch(() => undefined);
  return file;
}

/** Runs one scenario with its own time limit; a screenshot at its end, pass or fail. */
async function scenario(page: Page, name: string, timeoutMs: number, body: () => Promise<void>, filter?: string): Promise<boolean> {
  if (filter && !name.includes(filter)) {
    return true;
  }
  const t0 = Date.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      body(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`scenario timed out after ${timeoutMs / 1000} s`)), timeoutMs);
      }),
    ]);
    const shot = await screenshot(page, name);
    results.push({ name, ok: true, seconds: (Date.now() - t0) / 1000 });
    log(`PASS ${name} (${((Date.now() - t0) / 1000).toFixed(1)} s) ${path.relative(REPO, shot)}`);
    return true;
  } catch (e) {
    const shot = await screenshot(page, `FAIL ${name}`);
    const error = e instanceof Error ? e.message : String(e);
    results.push({ name, ok: false, seconds: (Date.now() - t0) / 1000, error });
    log(
      `FAIL ${name} (${((Date.now() - t0) / 1000).toFixed(1)} s): ${error.split('\n')[0]}\n     screenshot: ${path.relative(REPO, shot)}`,
    );
    return false;
  } finally {
    clearTimeout(timer);
  }
}

function skip(name: string, why: string, filter?: string): void {
  if (filter && !name.includes(filter)) {
    return;
  }
  results.push({ name, ok: false, seconds: 0, error: why, skipped: true });
  log(`FAIL ${name}: not run (${why})`);
}

interface Session {
  server: RunningCodeServer;
  context: BrowserContext;
  page: Page;
  workspace: string;
}

async function openSession(root: string, name: string, vsix: string, python: string, trust: boolean): Promise<Session> {
  const sroot = path.join(root, name);
  fs.mkdirSync(sroot, { recursive: true });
  const workspace = copyWorkspace(path.join(sroot, 'examples'));
  fs.mkdirSync(path.dirname(path.join(workspace, TRUST_PROBE.file)), { recursive: true });
  fs.writeFileSync(path.join(workspace, TRUST_PROBE.file), TRUST_PROBE.source);
  fs.mkdirSync(path.dirname(path.join(workspace, DRAFT_PROBE.file)), { recursive: true });
  fs.writeFileSync(path.join(workspace, DRAFT_PROBE.file), DRAFT_PROBE.source);
  if (trust) {
    // A workspace setting that would run an interpreter from the (untrusted) folder itself:
    // VS Code must ignore it (restrictedConfigurations) until the folder is trusted.
    const wrapper = path.join(workspace, WORKSPACE_INTERPRETER);
    fs.writeFileSync(
      wrapper,
      `#!/bin/sh\necho ran >> "$(dirname "$0")/${WORKSPACE_INTERPRETER_MARKER}"\nexec ${JSON.stringify(python)} "$@"\n`,
      { mode: 0o755 },
    );
    fs.mkdirSync(path.join(workspace, '.vscode'), { recursive: true });
    fs.writeFileSync(
      path.join(workspace, '.vscode', 'settings.json'),
      JSON.stringify({ 'exportlens.interpreter': `\${workspaceFolder}/${WORKSPACE_INTERPRETER}` }, null, 2),
    );
  }
  const server = await startCodeServer({
    root: path.join(sroot, 'code-server'),
    vsix,
    workspaceTrust: trust,
    userSettings: {
      'exportlens.interpreter': python,
      // Verification must finish on a busy machine (the default budget is 30 s per file's run).
      'exportlens.verifyBudgetSeconds': 300,
      'security.workspace.trust.enabled': trust,
      'security.workspace.trust.startupPrompt': 'always',
    },
    log: (l) => log(`  [${name}] ${l}`),
  });
  try {
    const { context, page } = await launchBrowser(path.join(sroot, 'browser'), path.join(OUT, `console-${name}.log`));
    await page.goto(`${server.url}/?folder=${encodeURIComponent(workspace)}`);
    return { server, context, page, workspace };
  } catch (e) {
    await server.stop();
    throw e;
  }
}

async function closeSession(s: Session | undefined, name: string, keepLogs: boolean): Promise<void> {
  if (s === undefined) {
    return;
  }
  await s.context.close().catch(() => undefined);
  await s.server.stop();
  if (keepLogs) {
    const logs = path.join(s.server.userDataDir, 'logs');
    if (fs.existsSync(logs)) {
      fs.cpSync(logs, path.join(OUT, `logs-${name}`), { recursive: true });
    }
    const csLog = path.join(path.dirname(s.server.userDataDir), 'code-server.log');
    if (fs.existsSync(csLog)) {
      fs.copyFileSync(csLog, path.join(OUT, `code-server-${name}.log`));
    }
  }
}

async function squigglesOf(page: Page, file: string, want: Located[], timeoutMs: number): Promise<void> {
  await openFile(page, file);
  const wantLines = [...new Set(want.map((w) => w.line))].sort((a, b) => a - b);
  await poll(`squiggles on ${file} lines ${wantLines.join(', ')}`, timeoutMs, async () => {
    const got = await visibleSquiggles(page);
    const lines = [...new Set(got.map((g) => g.line))].sort((a, b) => a - b);
    const kindsOk = want.every((w) => got.some((g) => g.line === w.line && g.kind === w.severity));
    return kindsOk && JSON.stringify(lines) === JSON.stringify(wantLines) ? true : undefined;
  }).catch(async (e: unknown) => {
    const got = await visibleSquiggles(page);
    throw new Error(`${String(e)}; visible squiggles: ${JSON.stringify(got)}`);
  });
}

async function trustedSession(page: Page, workspace: string, userDataDir: string, filter?: string): Promise<void> {
  const located = EXPECTED.map((e) => locate(workspace, e));
  const first = located[0];
  if (first === undefined) {
    throw new Error('no expectations');
  }

  // Cold starts are slow on a busy machine (a first activation took 38 s): generous limits, and
  // every wait is a poll for the event itself, so a fast machine does not wait longer.
  await scenario(page, 'workbench loads', 180_000, () => waitForWorkbench(page));

  await scenario(
    page,
    'extension activates and the output shows the server starting',
    300_000,
    async () => {
      await openFile(page, first.file);
      await poll('the ExportLens status bar item', 120_000, () => statusText(page));
      // The panel shows the channel; its first lines may scroll away, so the order of the start-up
      // lines is read from the channel's log file. Asked again while it does not show: on a loaded
      // machine the workbench may still be laying out its panel when it is first asked.
      const shown = async (): Promise<true | undefined> => ((await outputText(page)).includes('[info]') ? true : undefined);
      for (let attempt = 1; ; attempt++) {
        await runCommand(page, 'ExportLens: Show output');
        try {
          await poll('the ExportLens output channel in the panel', 15_000, shown);
          break;
        } catch (e) {
          if (attempt === 4) {
            throw e;
          }
          log(`     the output channel did not show (attempt ${attempt}): asking again`);
        }
      }
      const text = await poll('server start lines in the ExportLens log', 120_000, () => {
        const t = extensionLog(userDataDir);
        const a = t.indexOf('Starting ExportLens server');
        const b = t.search(/torch 2\.\d+/);
        const c = t.indexOf('ExportLens server is running');
        return Promise.resolve(a >= 0 && b > a && c > b ? t : undefined);
      }).catch((e: unknown) => {
        throw new Error(`${String(e)}; log was:\n${extensionLog(userDataDir).slice(0, 3000)}`);
      });
      if (/stopped unexpectedly|crashed several times|failed to initialize|could not start/.test(text)) {
        throw new Error(`the log shows a crash:\n${text.slice(0, 3000)}`);
      }
      await runCommand(page, 'View: Hide Panel');
    },
    filter,
  );

  for (const kind of KINDS) {
    await scenario(
      page,
      `squiggles on the exact lines: ${kind}`,
      150_000,
      async () => {
        const byFile = new Map<string, Located[]>();
        for (const l of located) {
          byFile.set(l.file, [...(byFile.get(l.file) ?? []), l]);
        }
        for (const [file, all] of byFile) {
          if (all.some((l) => l.code === kind)) {
            const trigger = all.find((l) => l.trigger !== undefined)?.trigger;
            if (trigger !== undefined) {
              await openFile(page, trigger);
            }
            await squigglesOf(page, file, all, 90_000);
          }
        }
      },
      filter,
    );
  }

  await scenario(
    page,
    'Problems panel lists each problem with its code and line',
    60_000,
    async () => {
      await page.keyboard.press('Escape');
      await page.keyboard.press(`${MOD}+Shift+M`);
      await page.locator('.markers-panel').waitFor({ timeout: 10_000 });
      await runCommand(page, 'View: Toggle Maximized Panel');
      await poll('every expected Problems row', 30_000, async () => {
        const rows = await problemRows(page);
        const missing = located.filter(
          (l) =>
            !rows.some(
              (r) =>
                r.file === `${path.basename(l.file)}${path.basename(path.dirname(l.file))}` &&
                new RegExp(`exportlens\\W*${l.code}\\W`).test(r.text) &&
                r.text.includes(`[Ln ${l.line},`),
            ),
        );
        return missing.length === 0 ? true : undefined;
      }).catch(async (e: unknown) => {
        throw new Error(`${String(e)}; rows: ${JSON.stringify(await problemRows(page), null, 1)}`);
      });
      await screenshot(page, 'problems panel');
      await runCommand(page, 'View: Toggle Maximized Panel');
      await runCommand(page, 'View: Hide Panel');
    },
    filter,
  );

  const fixTarget = located.find((l) => l.file === 'data_dependent/item_branch.py');
  await scenario(
    page,
    'Check export of this file from the command palette shows progress',
    120_000,
    async () => {
      if (!fixTarget) {
        throw new Error('item_branch expectation missing');
      }
      // Events, as the extension records them in its log, not whichever text a notification
      // happens to show while it is up (that depends on the machine's speed). First the run the
      // opening started (if any) is over: its diagnostics are shown and its progress ended.
      await squigglesOf(page, fixTarget.file, [fixTarget], 90_000);
      await poll('no run in flight first', 60_000, () => Promise.resolve(progressInFlight(clientEvents(userDataDir)) ? undefined : true));
      const before = new Set(clientEvents(userDataDir).map((e) => (e.kind === 'progress-begin' ? e.token : '')));
      await runCommand(page, 'ExportLens: Check export of this file');
      const runs = await poll("the run's work-done progress to begin and end", 90_000, () => {
        const ended = finishedRuns(clientEvents(userDataDir)).filter((r) => !before.has(r.token));
        return Promise.resolve(ended.length > 0 ? ended : undefined);
      });
      log(`     the run's progress: ${JSON.stringify(runs)}`);
      if (runs.length !== 1 || runs[0]?.result !== '1 problem') {
        throw new Error(`expected one run of the file ending with "1 problem", saw ${JSON.stringify(runs)}`);
      }
      await squigglesOf(page, fixTarget.file, [fixTarget], 30_000);
    },
    filter,
  );

  await scenario(
    page,
    'quick fix with Ctrl+. removes the diagnostic after save',
    120_000,
    async () => {
      if (!fixTarget) {
        throw new Error('item_branch expectation missing');
      }
      await openFile(page, fixTarget.file);
      await squigglesOf(page, fixTarget.file, [fixTarget], 60_000);
      await gotoLine(page, fixTarget.line, fixTarget.column);
      await page.keyboard.press(`${MOD}+.`);
      const row = page.locator('.action-widget .monaco-list-row', { hasText: 'torch._check(n > 2)' }).first();
      await row.waitFor({ state: 'visible', timeout: 20_000 });
      await screenshot(page, 'quick fix menu');
      // The preferred fix comes first and has the keyboard focus: Enter applies it.
      const focused = page.locator('.action-widget .monaco-list-row.focused');
      const focusedText = (await focused.count()) > 0 ? await focused.first().innerText() : '';
      if (focusedText.includes('torch._check(n > 2)')) {
        await page.keyboard.press('Enter');
      } else {
        log(`     focused quick fix was ${JSON.stringify(focusedText)}: clicking the preferred one`);
        await row.click();
      }
      await poll('the fix in the editor', 10_000, async () =>
        (await editorText(page)).includes('torch._check(n > 2)') ? true : undefined,
      );
      await page.keyboard.press(`${MOD}+S`);
      await poll('the fix saved to disk', 10_000, () =>
        Promise.resolve(fs.readFileSync(path.join(workspace, fixTarget.file), 'utf8').includes('torch._check(n > 2)') ? true : undefined),
      );
      await poll('no squiggle left in the fixed file', 90_000, async () =>
        (await visibleSquiggles(page)).length === 0 ? true : undefined,
      );
    },
    filter,
  );

  await scenario(
    page,
    'status bar shows the problem count',
    60_000,
    async () => {
      const want = `ExportLens: ${located.length - 1} problems`;
      await poll(`status "${want}"`, 60_000, async () => ((await statusText(page)) === want ? true : undefined)).catch(
        async (e: unknown) => {
          throw new Error(`${String(e)}; status is ${JSON.stringify(await statusText(page))}`);
        },
      );
    },
    filter,
  );

  await scenario(
    page,
    "Run draft export on this file shows draft export's report where plain export passes",
    240_000,
    async () => {
      const newRun = async (what: string, before: Set<string>): Promise<string | undefined> => {
        const runs = await poll(what, 150_000, () => {
          const ended = finishedRuns(clientEvents(userDataDir)).filter((r) => !before.has(r.token));
          return Promise.resolve(ended.length > 0 ? ended : undefined);
        });
        return runs[0]?.result;
      };
      const tokens = (): Set<string> => new Set(clientEvents(userDataDir).map((e) => (e.kind === 'progress-begin' ? e.token : '')));
      // Opening it runs "Check export": the user's plain export passes, nothing to show.
      await poll('no run in flight first', 90_000, () => Promise.resolve(progressInFlight(clientEvents(userDataDir)) ? undefined : true));
      let before = tokens();
      await openFile(page, DRAFT_PROBE.file);
      const opened = await newRun("the opening check's progress to begin and end", before);
      if (opened !== '0 problems') {
        throw new Error(`the check of ${DRAFT_PROBE.file} ended with ${JSON.stringify(opened)}, not "0 problems"`);
      }
      const clean = await visibleSquiggles(page);
      if (clean.length !== 0) {
        throw new Error(`plain export passes, yet squiggles show: ${JSON.stringify(clean)}`);
      }
      before = tokens();
      await runCommand(page, 'ExportLens: Run draft export on this file');
      await newRun("the draft export run's progress to begin and end", before);
      await poll(`draft export's hint on line ${DRAFT_PROBE.line}`, 60_000, async () =>
        (await visibleSquiggles(page)).some((s) => s.line === DRAFT_PROBE.line && s.kind === 'info') ? true : undefined,
      ).catch(async (e: unknown) => {
        throw new Error(`${String(e)}; visible squiggles: ${JSON.stringify(await visibleSquiggles(page))}`);
      });
      await page.keyboard.press('Escape');
      await page.keyboard.press(`${MOD}+Shift+M`);
      // The panel lists files by severity, so an information-only file comes last, past the rows the
      // list renders once earlier scenarios left problems: filter it to this file (its name matches).
      const problemsFilter = page.getByPlaceholder(/^Filter \(e\.g\. text, \*\*\/\*\.ts/).first(); // the Problems view's own
      try {
        await problemsFilter.fill(path.basename(DRAFT_PROBE.file));
        await poll('the draft-export-crashed row in the Problems panel', 30_000, async () =>
          (await problemRows(page)).some((r) => /draft-export-crashed/.test(r.text) && r.text.includes(`[Ln ${DRAFT_PROBE.line},`))
            ? true
            : undefined,
        ).catch(async (e: unknown) => {
          throw new Error(`${String(e)}; rows: ${JSON.stringify(await problemRows(page))}`);
        });
        await screenshot(page, 'run draft export');
      } finally {
        // what later scenarios see: the whole list, and the panel closed
        await problemsFilter.fill('').catch(() => undefined);
        await runCommand(page, 'View: Hide Panel');
      }
      const lens = page.locator('.codelens-decoration', { hasText: 'Check export' });
      await lens.first().waitFor({ state: 'visible', timeout: 30_000 }); // the CodeLens keeps "Check export"
    },
    filter,
  );

  await scenario(
    page,
    'trusted workspace: the example code is executed (control for the trust test)',
    90_000,
    async () => {
      await openFile(page, TRUST_PROBE.file);
      await poll('the trust probe marker', 60_000, () =>
        Promise.resolve(fs.existsSync(path.join(workspace, TRUST_PROBE.marker)) ? true : undefined),
      );
    },
    filter,
  );
}

/** An interpreter the e2e machine has without torch, or a path that does not exist. */
function interpreterWithoutTorch(root: string): { path: string; message: RegExp } {
  for (const candidate of ['/usr/bin/python3']) {
    try {
      execFileSync(candidate, ['-c', 'import importlib.util,sys; sys.exit(importlib.util.find_spec("torch") is not None)'], {
        cwd: root,
        stdio: 'ignore',
      });
      return { path: candidate, message: /has no torch/ };
    } catch {
      // has torch or is missing
    }
  }
  return { path: path.join(root, 'no-such-python'), message: /was not found/ };
}

/** Sets `exportlens.interpreter` in the Settings editor (User tab), as a person would. */
async function setInterpreterInSettingsUi(page: Page, value: string): Promise<void> {
  await runCommand(page, 'Preferences: Open User Settings');
  await page.locator('.settings-editor').waitFor({ timeout: 15_000 });
  await page.keyboard.press(`${MOD}+A`);
  await page.keyboard.type('exportlens.interpreter');
  const item = page.locator('.settings-editor .setting-item', { hasText: 'Python interpreter (with' }).first();
  await item.waitFor({ timeout: 15_000 });
  const input = item.locator('input').first();
  await input.fill(value);
  await input.press('Tab');
}

async function interpreterScenario(page: Page, python: string, root: string, filter?: string): Promise<void> {
  await scenario(
    page,
    'interpreter without torch: one notification with its buttons, then recovery',
    150_000,
    async () => {
      const bad = interpreterWithoutTorch(root);
      await openFile(page, 'clean/model.py');
      await poll(
        'the server running',
        60_000,
        async () => ((await statusText(page)) ?? '').match(/^ExportLens(: \d+ problems?)?$/) ?? undefined,
      );
      await startRecordingUi(page);
      try {
        await setInterpreterInSettingsUi(page, bad.path);
        await poll('status "ExportLens: no torch"', 60_000, async () =>
          (await statusText(page)) === 'ExportLens: no torch' ? true : undefined,
        ).catch(async (e: unknown) => {
          throw new Error(`${String(e)}; status is ${JSON.stringify(await statusText(page))}`);
        });
        const toast = page.locator('.notification-toast', { hasText: bad.message });
        await toast.first().waitFor({ timeout: 20_000 });
        for (const button of ['Select interpreter', 'Open settings']) {
          if ((await toast.first().getByRole('button', { name: button }).count()) !== 1) {
            throw new Error(`the notification has no "${button}" button`);
          }
        }
        await screenshot(page, 'interpreter without torch');
        await sleep(3_000);
        const toasts = (await recordedUi(page)).filter((t) => t.startsWith('toast:') && bad.message.test(t));
        if (toasts.length !== 1) {
          throw new Error(`expected one notification, saw ${toasts.length}: ${JSON.stringify(toasts)}`);
        }
      } finally {
        await setInterpreterInSettingsUi(page, python);
      }
      // Back to the good interpreter: the server restarts by itself.
      await poll('the server back after the interpreter change', 60_000, async () => {
        const s = await statusText(page);
        return s !== undefined && /^ExportLens(: \d+ problems?)?$/.test(s) ? true : undefined;
      }).catch(async (e: unknown) => {
        throw new Error(`${String(e)}; status is ${JSON.stringify(await statusText(page))}`);
      });
    },
    filter,
  );
}

async function untrustedSession(page: Page, workspace: string, filter?: string): Promise<void> {
  await scenario(
    page,
    'untrusted folder: restricted mode, no user code runs',
    120_000,
    async () => {
      // Workspace trust prompt: choose "No, I don't trust the authors".
      const no = page.getByRole('button', { name: /No, I don.t trust/ });
      await no.waitFor({ timeout: 60_000 });
      await screenshot(page, 'workspace trust prompt');
      await no.click();
      await waitForWorkbench(page);
      await startRecordingUi(page);
      await openFile(page, TRUST_PROBE.file);
      await poll('status "ExportLens: restricted"', 60_000, async () =>
        (await statusText(page)) === 'ExportLens: restricted' ? true : undefined,
      ).catch(async (e: unknown) => {
        throw new Error(`${String(e)}; status is ${JSON.stringify(await statusText(page))}`);
      });
      await runCommand(page, 'ExportLens: Show output');
      await poll('"Workspace trusted: false" in the output', 30_000, async () =>
        (await outputText(page)).includes('Workspace trusted: false') ? true : undefined,
      );
      // Give a run (which would take a few seconds in the trusted session) ample time to happen.
      await openFile(page, 'data_dependent/item_branch.py');
      await sleep(10_000);
      if (fs.existsSync(path.join(workspace, TRUST_PROBE.marker))) {
        throw new Error('the trust probe ran in an untrusted workspace');
      }
      if (fs.existsSync(path.join(workspace, WORKSPACE_INTERPRETER_MARKER))) {
        throw new Error('the interpreter named in the untrusted workspace settings was executed');
      }
      const seen = await recordedUi(page);
      if (!seen.some((t) => t.startsWith('toast:') && /not trusted/.test(t))) {
        throw new Error(`the server did not say that it is off in an untrusted workspace; saw ${JSON.stringify(seen)}`);
      }
      const squiggles = await visibleSquiggles(page);
      if (squiggles.length > 0) {
        throw new Error(`diagnostics from running code in an untrusted workspace: ${JSON.stringify(squiggles)}`);
      }
    },
    filter,
  );
}

async function grantTrustScenario(page: Page, workspace: string, userDataDir: string, filter?: string): Promise<void> {
  await scenario(
    page,
    'granting workspace trust restarts the server, which then runs the code',
    120_000,
    async () => {
      await runCommand(page, 'Workspaces: Manage Workspace Trust');
      const trust = page.locator('.workspace-trust-editor .monaco-button', { hasText: /^Trust$/ }).first();
      await trust.waitFor({ timeout: 15_000 });
      await trust.click();
      await openFile(page, TRUST_PROBE.file);
      await poll('the trust probe marker after trust was granted', 60_000, () =>
        Promise.resolve(fs.existsSync(path.join(workspace, TRUST_PROBE.marker)) ? true : undefined),
      );
      // The output channel's log file (the panel shows only its last lines).
      await poll('"Workspace trust granted" then "Workspace trusted: true" in the ExportLens log', 30_000, () => {
        const t = extensionLog(userDataDir);
        const granted = t.indexOf('Workspace trust granted');
        return Promise.resolve(granted >= 0 && t.indexOf('Workspace trusted: true', granted) > granted ? true : undefined);
      });
      // Trusted now, the workspace's own interpreter setting applies (and works).
      if (!fs.existsSync(path.join(workspace, WORKSPACE_INTERPRETER_MARKER))) {
        throw new Error('after trust was granted the workspace interpreter setting was not used');
      }
      await openFile(page, 'data_dependent/item_branch.py');
      const line = locate(workspace, EXPECTED[0] as (typeof EXPECTED)[number]);
      await squigglesOf(page, line.file, [line], 60_000);
    },
    filter,
  );
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  fs.rmSync(OUT, { recursive: true, force: true });
  fs.mkdirSync(OUT, { recursive: true });
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'exportlens-e2e-'));
  const started = Date.now();
  let session: Session | undefined;
  let sessionName = '';
  let aborted = false;

  const cleanup = async (keepLogs: boolean): Promise<void> => {
    const s = session;
    session = undefined;
    await closeSession(s, sessionName, keepLogs);
  };
  const onSignal = (sig: NodeJS.Signals): void => {
    log(`received ${sig}: cleaning up`);
    aborted = true;
    void cleanup(true).finally(() => {
      fs.rmSync(root, { recursive: true, force: true });
      process.exit(130);
    });
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const globalTimer = setTimeout(() => {
    log(`FAIL the whole run exceeded ${args.timeoutS} s: stopping`);
    aborted = true;
    results.push({ name: 'run finished in time', ok: false, seconds: args.timeoutS, error: 'global timeout' });
    void cleanup(true).finally(() => {
      fs.rmSync(root, { recursive: true, force: true });
      report();
      process.exit(1);
    });
  }, args.timeoutS * 1000);

  try {
    // The HTML report needs no workbench: its pages open in a browser of their own.
    await htmlReportScenarios({ python: args.python, scenario, log, out: OUT, filter: args.only });
    if (args.only?.startsWith('html report')) {
      clearTimeout(globalTimer);
      log(`e2e finished in ${((Date.now() - started) / 1000).toFixed(0)} s; screenshots in ${path.relative(REPO, OUT)}/`);
      return report();
    }
    const vsix = findVsix(args.vsix);
    log(`e2e: ${path.relative(REPO, vsix)}, interpreter ${args.python}, temp ${root}`);
    for (const [name, trust] of [
      ['trusted', false],
      ['untrusted', true],
    ] as const) {
      if (aborted) {
        break;
      }
      sessionName = name;
      const before = results.length;
      try {
        session = await openSession(root, name, vsix, args.python, trust);
      } catch (e) {
        skip(`${name} session starts`, e instanceof Error ? e.message : String(e));
        continue;
      }
      if (name === 'trusted') {
        await trustedSession(session.page, session.workspace, session.server.userDataDir, args.only);
        const fixContext = {
          ...session,
          userDataDir: session.server.userDataDir,
          python: args.python,
          scenario,
          screenshot,
          log,
          filter: args.only,
        };
        await verifiedFixScenarios(fixContext);
        await dynamicShapesScenario(fixContext);
        await notebookScenario(session.page, session.workspace, scenario, args.only);
        await interpreterScenario(session.page, args.python, root, args.only);
      } else {
        await untrustedSession(session.page, session.workspace, args.only);
        await grantTrustScenario(session.page, session.workspace, session.server.userDataDir, args.only);
      }
      await cleanup(results.slice(before).some((r) => !r.ok));
    }
  } catch (e) {
    results.push({ name: 'e2e harness', ok: false, seconds: 0, error: e instanceof Error ? e.message : String(e) });
    log(`FAIL e2e harness: ${e instanceof Error ? e.message : String(e)}`);
  } finally {
    clearTimeout(globalTimer);
    await cleanup(true);
    fs.rmSync(root, { recursive: true, force: true });
  }
  log(`e2e finished in ${((Date.now() - started) / 1000).toFixed(0)} s; screenshots in ${path.relative(REPO, OUT)}/`);
  return report();
}

function report(): number {
  const passed = results.filter((r) => r.ok).length;
  const failed = results.length - passed;
  fs.writeFileSync(path.join(OUT, 'results.json'), JSON.stringify(results, null, 2));
  log(`${passed} passed, ${failed} failed`);
  return failed === 0 && passed > 0 ? 0 : 1;
}

void main().then((code) => process.exit(code));
