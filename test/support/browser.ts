// A real browser for the console's browser tests (test/console/browser/), the screenshots and the console benchmark:
// Debian's chromium (or $CHROMIUM) driven by playwright-core, headless, never a browser that
// playwright downloads. One browser per test file, a fresh context (no cookies, no cache) per test.
//
// Without a chromium the suites skip themselves (describe.skipIf(!CHROMIUM)) and scripts/test-summary.ts
// prints one line saying how to run them; with a $CHROMIUM that does not start, every test fails.
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { type Browser, type BrowserContext, chromium, type ConsoleMessage, type Page } from 'playwright-core';

const DEBIAN_CHROMIUM = '/usr/bin/chromium';

/** The chromium the tests drive: $CHROMIUM when set (even if missing: then they fail), else Debian's when installed. */
export const CHROMIUM: string | undefined = process.env['CHROMIUM'] || (existsSync(DEBIAN_CHROMIUM) ? DEBIAN_CHROMIUM : undefined);

/**
 * The flags /work/.library/env/machines/node.md gives for headless chromium here: no sandbox (root),
 * no GPU, and no background connections (the machine's closed network refuses them, many at a time).
 * playwright adds --headless and a fresh temporary --user-data-dir of its own, removed at close().
 */
const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Starts the chromium of CHROMIUM headless; throws a one-line error when there is none or it does not start. */
export async function launchBrowser(): Promise<Browser> {
  if (CHROMIUM === undefined) throw new Error(`no chromium: install Debian's chromium (${DEBIAN_CHROMIUM}) or set CHROMIUM=<path>`);
  try {
    return await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
  } catch (err) {
    const first = (err instanceof Error ? err.message : String(err)).split('\n')[0];
    throw new Error(`chromium at ${CHROMIUM} did not start: ${first}`);
  }
}

/** What a page said went wrong: console errors (CSP violations among them) and uncaught exceptions. */
export function collectErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (m: ConsoleMessage) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()} (${m.location().url})`);
  });
  page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
  return errors;
}

export interface BrowserTest {
  readonly browser: Browser;
  /** This test's context: its own cookies and cache. */
  readonly context: BrowserContext;
  /** A page of this test's context. */
  readonly page: Page;
  /** Console errors and uncaught exceptions of `page` so far. */
  readonly errors: string[];
}

/**
 * Registers the hooks of a browser test file (call it inside the describe): one browser for the file,
 * a new context and page for each test, closed after it.
 */
export function useBrowser(options: { readonly viewport?: { width: number; height: number } } = {}): BrowserTest {
  let browser: Browser | undefined;
  let context: BrowserContext | undefined;
  let page: Page | undefined;
  let errors: string[] = [];
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });
  beforeEach(async () => {
    if (!browser) throw new Error('the browser did not start');
    context = await browser.newContext({ viewport: options.viewport ?? { width: 1280, height: 800 } });
    page = await context.newPage();
    errors = collectErrors(page);
  });
  afterEach(async () => {
    await context?.close();
    context = undefined;
    page = undefined;
  });
  const must = <T>(v: T | undefined, what: string): T => {
    if (v === undefined) throw new Error(`no ${what}: use it inside a test`);
    return v;
  };
  return {
    get browser() {
      return must(browser, 'browser');
    },
    get context() {
      return must(context, 'context');
    },
    get page() {
      return must(page, 'page');
    },
    get errors() {
      return errors;
    },
  };
}

/**
 * Types `key` into the sign-in form at `consoleUrl` (http://127.0.0.1:<port>/console/) and submits it, as a
 * person would. Returns the status the console answered the form with: 303 signs in, 401 refuses.
 */
export async function submitKey(page: Page, consoleUrl: string, key: string): Promise<number> {
  await page.goto(new URL('signin', consoleUrl).toString());
  await page.getByLabel('Key').fill(key);
  const answer = page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/console/signin');
  await page.getByRole('button', { name: 'Sign in' }).click();
  const status = (await answer).status();
  await page.waitForLoadState('load');
  return status;
}

/** Signs `page` in with `key`; throws unless the console accepted it and showed a signed-in page. */
export async function signInWith(page: Page, consoleUrl: string, key: string): Promise<void> {
  const status = await submitKey(page, consoleUrl, key);
  if (status !== 303) throw new Error(`the console refused the key: ${status} on ${page.url()}`);
  await page.getByRole('button', { name: 'Sign out' }).waitFor({ state: 'visible' });
}

/** The manifests of examples/ as startTestService takes them (file name → text): what a person runs `make run` on. */
export async function exampleManifests(): Promise<Record<string, string>> {
  const dir = join(import.meta.dirname, '..', '..', 'examples');
  const files = (await readdir(dir)).filter((f) => f.endsWith('.yaml'));
  return Object.fromEntries(await Promise.all(files.map(async (f) => [f, await readFile(join(dir, f), 'utf8')] as const)));
}
