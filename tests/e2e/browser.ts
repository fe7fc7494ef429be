/**
 * Debian's Chromium driven by Playwright, as every e2e scenario uses it: a fresh profile, headless,
 * nothing leaving the machine (only loopback, data:, blob: and file: requests are let through),
 * console errors and page errors appended to a log file.
 */
import * as fs from 'node:fs';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

export interface BrowserOptions {
  viewport?: { width: number; height: number };
  javaScriptEnabled?: boolean;
  colorScheme?: 'light' | 'dark';
}

export async function launchBrowser(
  profile: string,
  consoleLog: string,
  options: BrowserOptions = {},
): Promise<{ context: BrowserContext; page: Page }> {
  const executablePath = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => fs.existsSync(p));
  if (!executablePath) {
    throw new Error('Debian chromium not found: run `make e2e-setup`');
  }
  const context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    viewport: options.viewport ?? { width: 1600, height: 1000 },
    javaScriptEnabled: options.javaScriptEnabled ?? true,
    colorScheme: options.colorScheme ?? 'light',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  // Nothing leaves the machine: only loopback requests (and local files) are let through.
  await context.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname) || ['data:', 'blob:', 'file:'].includes(url.protocol)) {
      return route.continue();
    }
    return route.abort();
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.on('console', (m) => {
    if (m.type() === 'error') {
      fs.appendFileSync(consoleLog, `${m.text()}\n`);
    }
  });
  page.on('pageerror', (e) => fs.appendFileSync(consoleLog, `pageerror: ${e.message}\n`));
  return { context, page };
}
