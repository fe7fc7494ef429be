/**
 * The HTML report in a real browser (issue 22): the page of `exportlens check examples/` (through
 * its JSON report and `exportlens report`, as a CI artifact is rendered later) and the page of a
 * `pytest --exportlens -n 2 --exportlens-html` run, each opened from a file:// URL in Debian's
 * Chromium. Asserted: the summary counts, the library line that the script-form targets and the zoo's
 * factory and module-level targets share as the first root cause, with all seven and its links, the
 * underlined range on the line examples/EXPECTED.json names, a fix's diff and verified outcome,
 * markup from a model's source and from an exception shown as text, keyboard sorting and
 * filtering, the content without JavaScript, the dark scheme, no request but the page itself, and
 * the size and render time of the examples page. run.ts calls `htmlReportScenarios` first (it
 * needs no workbench: `run.ts --only "html report"` runs just these).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { launchBrowser, type BrowserOptions } from './browser';
import { REPO } from './codeServer';
import type { ScenarioRunner } from './notebook';
import { run } from './processes';

export interface HtmlReportContext {
  /** The interpreter with torch (the venv's). */
  python: string;
  scenario: ScenarioRunner;
  log: (line: string) => void;
  /** Where screenshots and logs go (tests/e2e/out). */
  out: string;
  filter?: string;
}

const MAX_BYTES = 1024 * 1024; // the examples page: under 1 MB
const MAX_RENDER_MS = 1000; // and rendered in under 1 s, by the browser's own clock (median of 3 loads; ~0.1-0.3 s measured)
const NAMES = [
  'html report: render the report of `exportlens check examples/` and of a pytest-xdist run',
  'html report: summary counts of examples/ and the render time',
  'html report: one library line is the first root cause of all its targets, the zoo factories included',
  'html report: the range underlined on its line, and a fix diff with its outcome',
  'html report: sort and filter from the keyboard',
  'html report: the content without JavaScript, and the dark scheme',
  'html report: the pytest-xdist page combines both workers, and markup in a source and an exception stays text',
] as const;
// Three library files by name (the folder grows): detect.py and tracker.py share minilib's lines.
const XDIST_PATHS = [
  'examples/library_project/detect.py',
  'examples/library_project/tracker.py',
  'examples/library_project/compiled.py',
  'tests/fixtures/html_report',
  'tests/fixtures/notebook',
];

interface JsonReport {
  targets: { file: string; name: string; status: string }[];
  diagnostics: { file: string; severity: number; code: string; fixes: unknown[] }[];
}

interface ExpectedJson {
  examples: Record<string, { file: string; code: string; severity: string; range: [number, number, number, number] }[]>;
}

function fileUrl(file: string): string {
  return `file://${file.split(path.sep).map(encodeURIComponent).join('/')}`;
}

function check(cond: boolean, what: string): void {
  if (!cond) {
    throw new Error(what);
  }
}

function same(got: unknown, want: unknown, what: string): void {
  if (JSON.stringify(got) !== JSON.stringify(want)) {
    throw new Error(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
  }
}

interface Opened {
  context: BrowserContext;
  page: Page;
  requests: string[];
  errors: string;
}

async function open(root: string, name: string, file: string, options: BrowserOptions = {}): Promise<Opened> {
  const consoleLog = path.join(root, `console-${name}.log`);
  fs.writeFileSync(consoleLog, '');
  const { context, page } = await launchBrowser(path.join(root, `browser-${name}`), consoleLog, {
    viewport: { width: 1400, height: 1000 },
    ...options,
  });
  const requests: string[] = [];
  context.on('request', (r) => requests.push(r.url()));
  await page.goto(fileUrl(file));
  await page.locator('#targets').waitFor({ timeout: 30_000 });
  return {
    context,
    page,
    requests,
    get errors(): string {
      return fs.readFileSync(consoleLog, 'utf8');
    },
  };
}

/** The page's table of targets, as shown: only rows not hidden. */
async function visibleRows(page: Page): Promise<{ file: string; target: string; status: string; problems: number }[]> {
  return page.locator('#target-table tbody tr:not([hidden])').evaluateAll((rows) =>
    rows.map((r) => {
      const cells = Array.from((r as HTMLTableRowElement).cells).map((c) => (c.textContent ?? '').trim());
      return {
        file: (r.querySelector('td a')?.textContent ?? '').trim(),
        target: cells[1] ?? '',
        status: cells[3] ?? '',
        problems: Number(cells[4]),
      };
    }),
  );
}

/** The root cause whose place is `where`: its number of targets and the targets it links to. */
async function cause(page: Page, where: string): Promise<{ row: Locator; targets: string; links: string[]; hrefs: string[] }> {
  const row = page
    .locator('#causes tbody tr')
    .filter({ has: page.locator('a.where', { hasText: new RegExp(`^${where.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`) }) });
  check((await row.count()) === 1, `one root cause at ${where}, found ${await row.count()}`);
  return {
    row,
    targets: (await row.getAttribute('data-targets')) ?? '',
    links: await row.locator('a.target-link').allTextContents(),
    hrefs: await row.locator('a.target-link').evaluateAll((as) => as.map((a) => a.getAttribute('href') ?? '')),
  };
}

function finding(page: Page, startsWith: string, code: string, hasText?: string): Locator {
  return page
    .locator(`article.finding[data-filter-code="${code}"]`)
    .filter({ has: page.locator('header a.where', { hasText: startsWith }) })
    .filter(hasText !== undefined ? { hasText } : {});
}

/** Navigation start to the page loaded and painted (the later of the load event and the first contentful paint), by the browser's own clock; median of 3 loads. */
async function renderMs(page: Page, url: string): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    await page.goto(url);
    const handle = await page.waitForFunction(() => {
      const nav = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming | undefined;
      const paint = performance.getEntriesByName('first-contentful-paint')[0];
      return nav !== undefined && nav.loadEventEnd > 0 && paint !== undefined ? Math.max(nav.loadEventEnd, paint.startTime) : 0;
    });
    times.push(Number(await handle.jsonValue()));
  }
  times.sort((a, b) => a - b);
  return times[1] ?? Number.POSITIVE_INFINITY;
}

export async function htmlReportScenarios(ctx: HtmlReportContext): Promise<void> {
  const { scenario, log, filter } = ctx;
  // Every other scenario reads the pages the first one renders: it runs whenever one of them does.
  if (filter && !NAMES.some((n) => n.includes(filter))) {
    return;
  }
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'exportlens-html-'));
  const examplesJson = path.join(root, 'examples.json');
  const examplesHtml = path.join(root, 'examples.html');
  const xdistHtml = path.join(root, 'xdist.html');
  const expected = JSON.parse(fs.readFileSync(path.join(REPO, 'examples', 'EXPECTED.json'), 'utf8')) as ExpectedJson;
  let report: JsonReport | undefined;
  let opened: Opened | undefined;
  // A page of its own for the runner's end-of-scenario screenshot until a report is open.
  const blank = await launchBrowser(path.join(root, 'browser-blank'), path.join(root, 'console-blank.log'));
  const shotPage = (): Page => opened?.page ?? blank.page;
  try {
    await scenario(shotPage(), NAMES[0], 900_000, async () => {
      const checked = await run(ctx.python, ['-m', 'exportlens', 'check', 'examples/', '--format', 'json'], REPO, 600_000);
      check(checked.code === 1, `check examples/ exits 1 (problems found), got ${checked.code}: ${checked.output.slice(-2000)}`);
      fs.writeFileSync(examplesJson, checked.stdout);
      report = JSON.parse(checked.stdout) as JsonReport;
      const rendered = await run(ctx.python, ['-m', 'exportlens', 'report', examplesJson], REPO, 120_000);
      check(rendered.code === 0, `exportlens report exits 0, got ${rendered.code}: ${rendered.output.slice(-2000)}`);
      fs.writeFileSync(examplesHtml, rendered.stdout);
      const xdist = await run(
        ctx.python,
        ['-m', 'pytest', '-p', 'no:cacheprovider', '--exportlens', '-n', '2', `--exportlens-html=${xdistHtml}`, ...XDIST_PATHS, '-v'],
        REPO,
        600_000,
      );
      check(
        xdist.code === 1 && /\[gw0\]/.test(xdist.stdout) && /\[gw1\]/.test(xdist.stdout),
        `pytest -n 2 ran on two workers: ${xdist.output.slice(-2000)}`,
      );
      check(fs.existsSync(xdistHtml), `pytest wrote ${xdistHtml}: ${xdist.output.slice(-2000)}`);
      const bytes = fs.statSync(examplesHtml).size;
      log(
        `     examples page: ${bytes} bytes (${report.targets.length} targets, ${report.diagnostics.length} findings); xdist page: ${fs.statSync(xdistHtml).size} bytes`,
      );
      check(bytes < MAX_BYTES, `the examples page is ${bytes} bytes, over 1 MB`);
    });
    if (report === undefined) {
      return;
    }
    const json = report;
    opened = await open(root, 'examples', examplesHtml);
    const page = opened.page;

    await scenario(
      page,
      NAMES[1],
      120_000,
      async () => {
        const ms = await renderMs(page, fileUrl(examplesHtml));
        log(`     examples page rendered in ${ms.toFixed(0)} ms (load event and first contentful paint, median of 3 loads in Chromium)`);
        check(ms < MAX_RENDER_MS, `the examples page took ${ms.toFixed(0)} ms to render`);
        const rows = await visibleRows(page);
        same(rows.length, json.targets.length, 'one row per target');
        const statuses: Record<string, number> = {};
        json.targets.forEach((t) => (statuses[t.status] = (statuses[t.status] ?? 0) + 1));
        const chips = await page
          .locator('#statuses li')
          .evaluateAll((lis) =>
            Object.fromEntries(lis.map((li) => [li.getAttribute('data-status-count') ?? '', Number(li.querySelector('.k')?.textContent)])),
          );
        same(Object.entries(chips).sort(), Object.entries(statuses).sort(), 'targets by status');
        const problems = Object.values(expected.examples)
          .flat()
          .filter((d) => d.severity === 'error' || d.severity === 'warning').length;
        same(
          await page.locator('p.verdict').textContent(),
          `${problems} problems in ${json.targets.length} targets`,
          'the verdict counts what EXPECTED.json lists',
        );
        const libraryFiles = Object.entries(expected.examples)
          .filter(([file]) => file.startsWith('library_project/'))
          .map(([file, diags]) => [file, diags.filter((d) => d.severity === 'error' || d.severity === 'warning').length])
          .sort();
        const perFile: Record<string, number> = {}; // a row per target: patches.py has two
        rows.filter((r) => r.file.startsWith('library_project/')).forEach((r) => (perFile[r.file] = (perFile[r.file] ?? 0) + r.problems));
        same(Object.entries(perFile).sort(), libraryFiles, 'the library project rows (problems per file as EXPECTED.json lists them)');
        const codes = await page
          .locator('#codes li')
          .evaluateAll((lis) =>
            Object.fromEntries(lis.map((li) => [li.getAttribute('data-code') ?? '', Number(li.querySelector('.k')?.textContent)])),
          );
        const counted: Record<string, number> = {};
        json.diagnostics.forEach((d) => (counted[d.code] = (counted[d.code] ?? 0) + 1));
        same(Object.entries(codes).sort(), Object.entries(counted).sort(), 'findings per code');
        same(
          opened?.requests,
          [fileUrl(examplesHtml), fileUrl(examplesHtml), fileUrl(examplesHtml), fileUrl(examplesHtml)],
          'no request but the page itself',
        );
        same(opened?.errors, '', 'console errors (a blocked script or style would show here)');
      },
      filter,
    );

    await scenario(
      page,
      NAMES[2],
      60_000,
      async () => {
        const shared = await cause(page, 'minilib/postprocess.py:8');
        same(
          [shared.targets, shared.links],
          [
            '7',
            [
              'library_project/detect.py · model',
              'library_project/tracker.py · model',
              'library_project/two_stage.py · model',
              'zoo/detectors.py · detectors.py:small_detector',
              'zoo/detectors.py · detectors.py:wide_detector',
              'zoo/detectors.py · detectors.py:two_stage_detector',
              'zoo/module_level.py · model',
            ],
          ],
          'the shared root cause: script-form targets and the zoo factory and module-level ones',
        );
        same(await shared.row.locator('code.expr').textContent(), 'num_kept > max_keep', 'its expression');
        same(await page.locator('#causes tbody tr').first().getAttribute('id'), await shared.row.getAttribute('id'), 'first in the table');
        await page.locator('#causes').scrollIntoViewIfNeeded();
        await page.locator('#causes').screenshot({ path: path.join(ctx.out, 'html-report-root-causes.png') });
        const zooLink = shared.row.locator('a.target-link', { hasText: 'detectors.py:small_detector' });
        const zooHref = (await zooLink.getAttribute('href')) ?? '';
        await zooLink.click();
        await page.waitForFunction((hash) => location.hash === hash, zooHref);
        same(
          await page.locator(zooHref).locator('b').textContent(),
          'detectors.py:small_detector',
          'the zoo link lands on its factory target',
        );
        await shared.row.locator('a.target-link').nth(1).click();
        await page.waitForFunction((hash) => location.hash === hash, shared.hrefs[1] ?? '');
        const target = page.locator(`${shared.hrefs[1] ?? ''}`);
        check(await target.evaluate((e) => e.matches(':target')), 'the link lands on the target');
        same(await target.locator('b').textContent(), 'model', 'the target it lands on');
        check(await target.isVisible(), 'the target is on screen');
      },
      filter,
    );

    await scenario(
      page,
      NAMES[3],
      60_000,
      async () => {
        await page.goto(fileUrl(examplesHtml));
        const want = expected.examples['data_dependent/item_branch.py']?.[0];
        check(want !== undefined, 'item_branch in EXPECTED.json');
        const [line, start, , end] = want?.range ?? [0, 0, 0, 0];
        const sourceLine = fs.readFileSync(path.join(REPO, 'examples', 'data_dependent', 'item_branch.py'), 'utf8').split('\n')[line] ?? '';
        const f = finding(page, `data_dependent/item_branch.py:${line + 1}:${start + 1}`, 'data-dependent-guard');
        same(await f.count(), 1, 'the item_branch finding');
        const hit = f.locator('figure.excerpt').first().locator('.l.hit');
        same(await hit.getAttribute('data-line'), String(line + 1), 'the highlighted line');
        const ul = hit.locator('.ul');
        same(await ul.textContent(), sourceLine.slice(start, end), 'the underlined range');
        const style = await ul.evaluate((e) => {
          const s = getComputedStyle(e);
          return [s.textDecorationLine, s.textDecorationStyle];
        });
        same(style, ['underline', 'wavy'], 'a wavy underline, as the editor squiggles');
        const assumption = f.locator('div.fix').filter({ hasText: 'assumption: n > 2' });
        same(await assumption.getAttribute('data-outcome'), 'export-passes', 'the assumption fix verified');
        same(await assumption.locator('.outcome').textContent(), 'export passes ✓', 'its outcome as shown');
        const added = await assumption
          .locator('table.diff tr.added')
          .evaluateAll((trs) => trs.map((tr) => Array.from(tr.querySelectorAll('td')).map((td) => td.textContent)));
        same(added, [['', String(line + 1), '+', '        torch._check(n > 2)']], 'the diff adds torch._check above the line');
        const opposite = f.locator('div.fix').filter({ hasText: 'assumption: n <= 2' });
        same(await opposite.locator('.outcome').textContent(), 'breaks the target', 'the opposite assumption breaks the target');
        await f.scrollIntoViewIfNeeded();
        await f.screenshot({ path: path.join(ctx.out, 'html-report-finding.png') });
      },
      filter,
    );

    await scenario(
      page,
      NAMES[4],
      60_000,
      async () => {
        await page.goto(fileUrl(examplesHtml));
        const problemsHead = page.locator('#target-table thead th').nth(4);
        await problemsHead.locator('button').focus();
        await page.keyboard.press('Enter');
        same(await problemsHead.getAttribute('aria-sort'), 'ascending', 'sorted by problems');
        same((await visibleRows(page))[0]?.problems, 0, 'fewest problems first');
        await page.keyboard.press('Enter');
        same(await problemsHead.getAttribute('aria-sort'), 'descending', 'then most problems first');
        const sorted = await visibleRows(page);
        same(sorted[0]?.problems, Math.max(...sorted.map((r) => r.problems)), 'most problems first');
        await page.locator('#filter-code').focus();
        await page.locator('#filter-code').selectOption('missing-fake-kernel');
        const rows = await visibleRows(page);
        same(
          rows.map((r) => r.file).sort(),
          [
            'library_op/model.py',
            'library_project/detect.py',
            'library_project/tracker.py',
            'missing_fake/model.py',
            'zoo/detectors.py',
            'zoo/detectors.py',
            'zoo/module_level.py',
          ],
          'the targets with a missing fake kernel',
        );
        same(
          await page.locator('#filter-count').textContent(),
          `7 of ${json.targets.length} targets; findings and root causes of missing-fake-kernel only`,
          'the count',
        );
        check(
          await page.locator('article.finding[data-filter-code="graph-break"]').first().isHidden(),
          'findings of other codes are hidden',
        );
        await page.locator('#filter-status').selectOption('ok');
        same((await visibleRows(page)).length, 0, 'no target is ok and has a missing fake kernel');
        await page.locator('#filter-status').selectOption('');
        await page.locator('#filter-code').selectOption('');
        await page.locator('button.chip[data-only-code="data-dependent-guard"]').press('Enter'); // a code's chip filters too
        same(await page.locator('#filter-code').inputValue(), 'data-dependent-guard', 'the chip sets the code filter');
        same(
          await page.locator('button.chip[aria-pressed="true"]').getAttribute('data-only-code'),
          'data-dependent-guard',
          'the chip shows it is on',
        );
        await page.evaluate(() => window.scrollTo(0, 0));
        await page.setViewportSize({ width: 1400, height: 1280 });
        await page.screenshot({ path: path.join(ctx.out, 'html-report.png') });
        await page.setViewportSize({ width: 1400, height: 1000 });
      },
      filter,
    );

    await scenario(
      page,
      NAMES[5],
      120_000,
      async () => {
        const off = await open(root, 'nojs', examplesHtml, { javaScriptEnabled: false });
        try {
          check(await off.page.locator('#filters').isHidden(), 'the filters need JavaScript: hidden without it');
          check(await off.page.locator('button.chip').first().isDisabled(), "a code's chip filters only with JavaScript");
          check(await off.page.locator('noscript p').isVisible(), 'the page says sorting and filtering need JavaScript');
          same(
            await off.page.locator('#target-table tbody tr:visible').count(),
            json.targets.length,
            'every target row without JavaScript',
          );
          const f = finding(off.page, 'data_dependent/item_branch.py:9:12', 'data-dependent-guard');
          check(await f.locator('.ul').first().isVisible(), 'the underlined range without JavaScript');
          check(await f.locator('table.diff').first().isVisible(), 'the fix diffs without JavaScript');
        } finally {
          await off.context.close();
        }
        const dark = await open(root, 'dark', examplesHtml, { colorScheme: 'dark' });
        try {
          const [bg, fg] = await dark.page.evaluate(() => [
            getComputedStyle(document.documentElement).backgroundColor,
            getComputedStyle(document.body).color,
          ]);
          same([bg, fg], ['rgb(13, 17, 23)', 'rgb(230, 237, 243)'], 'the dark scheme');
          const f = finding(dark.page, 'library_project/tracker.py:15:22', 'data-dependent-guard', 'num_kept');
          await f.scrollIntoViewIfNeeded();
          await f.screenshot({ path: path.join(ctx.out, 'html-report-dark.png') });
        } finally {
          await dark.context.close();
        }
      },
      filter,
    );

    await opened.context.close();
    opened = await open(root, 'xdist', xdistHtml);
    const xpage = opened.page;
    await scenario(
      xpage,
      NAMES[6],
      60_000,
      async () => {
        const facts = await xpage
          .locator('dl.facts div')
          .evaluateAll((ds) => ds.map((d) => [d.querySelector('dt')?.textContent, d.querySelector('dd')?.textContent]));
        check(
          facts.some(([k, v]) => k === 'combined' && v === '2 pytest-xdist workers'),
          `combined from two workers: ${JSON.stringify(facts)}`,
        );
        const rows = await visibleRows(xpage);
        same(
          rows.map((r) => [r.file, r.status, r.problems]).sort(),
          [
            ['examples/library_project/compiled.py', 'problems', 1],
            ['examples/library_project/detect.py', 'problems', 3],
            ['examples/library_project/tracker.py', 'problems', 3],
            ['tests/fixtures/html_report/markup_in_exception.py', 'error', 1],
            ['tests/fixtures/html_report/markup_in_source.py', 'problems', 1],
            ['tests/fixtures/notebook/threshold.ipynb · cell 4', 'problems', 1],
          ],
          'one row per target of both workers',
        );
        same(await xpage.locator('p.verdict').textContent(), '10 problems in 6 targets', 'the verdict');
        const shared = await cause(xpage, 'minilib/postprocess.py:8');
        same(
          shared.links,
          ['examples/library_project/detect.py · model', 'examples/library_project/tracker.py · model'],
          'the shared root cause',
        );
        same(
          await xpage.evaluate(() => (window as unknown as { __exportlens_pwned?: string }).__exportlens_pwned ?? null),
          null,
          'no injected script ran',
        );
        same(await xpage.locator('script').count(), 1, 'the page has only its own script');
        same(await xpage.locator('img, textarea').count(), 0, 'no injected element');
        const source = finding(xpage, 'tests/fixtures/html_report/markup_in_source.py:11', 'data-dependent-guard');
        const line = source.locator('figure.excerpt .l.hit');
        same(
          await line.textContent(),
          '        if n > 0 and BANNER != "<b>never</b>":  # <script>window.__exportlens_pwned = \'comment\'</script>',
          'the source line with markup, as text',
        );
        check(await line.isVisible(), 'the source line is on the page');
        same(await source.locator('figure.excerpt .ul').textContent(), 'n > 0 and BANNER != "<b>never</b>"', 'its underlined range');
        const banner = source.locator('figure.excerpt .l[data-line="5"]');
        same(await banner.count(), 0, 'only the lines around the finding');
        const passes = source.locator('div.fix[data-outcome="export-passes"]');
        check((await passes.count()) >= 1, 'a verified fix of the markup model');
        const raised = finding(xpage, 'tests/fixtures/html_report/markup_in_exception.py:8', 'export-error');
        const message = await raised.locator('p.message').textContent();
        check(
          (message ?? '').includes(
            "ValueError: <script>window.__exportlens_pwned = 'exception'</script><b onmouseover=alert(1)>bold</b> & </textarea>",
          ),
          `the exception's text as text: ${message}`,
        );
        const cell = finding(xpage, 'tests/fixtures/notebook/threshold.ipynb · cell 2:4:12', 'data-dependent-guard');
        same(await cell.locator('figure.excerpt .l.hit').getAttribute('data-line'), '4', 'the notebook finding on its cell line');
        same(
          await cell.locator('figure.excerpt figcaption b').textContent(),
          'tests/fixtures/notebook/threshold.ipynb · cell 2:4',
          'shown by cell',
        );
        same(opened?.errors, '', 'console errors');
        await raised.scrollIntoViewIfNeeded();
      },
      filter,
    );
  } finally {
    await opened?.context.close().catch(() => undefined);
    await blank.context.close().catch(() => undefined);
    for (const f of fs.readdirSync(root).filter((n) => n.startsWith('console-'))) {
      if (fs.readFileSync(path.join(root, f), 'utf8').trim() !== '') {
        fs.copyFileSync(path.join(root, f), path.join(ctx.out, `html-report-${f}`));
      }
    }
    for (const page of [examplesHtml, xdistHtml]) {
      if (fs.existsSync(page)) {
        fs.copyFileSync(page, path.join(ctx.out, path.basename(page)));
      }
    }
    fs.rmSync(root, { recursive: true, force: true });
  }
}
