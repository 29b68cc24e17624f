// One first page load in a real browser: a fresh context (empty cache) with the session cookie, one
// navigation, and what the browser's own Navigation and Resource Timing say about it.
import type { Browser } from 'playwright-core';

export interface PageLoad {
  /** Navigation start to the end of the load event, ms. */
  readonly loadMs: number;
  /** Navigation start to the first byte of the HTML, ms. */
  readonly ttfbMs: number;
  /** Body bytes of the HTML, the stylesheet and the script (no compression: what went over the wire). */
  readonly htmlBytes: number;
  readonly cssBytes: number;
  readonly jsBytes: number;
  /** Every byte of the three responses, headers included. */
  readonly transferBytes: number;
}

/** Runs in the page: the timing of the navigation and of its stylesheet and script. */
const TIMING = `(() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const res = performance.getEntriesByType('resource');
  const one = (ext) => res.find((r) => new URL(r.name).pathname.endsWith(ext));
  const css = one('.css'), js = one('.js');
  if (!nav || !css || !js) return null;
  return {
    loadMs: nav.loadEventEnd - nav.startTime,
    ttfbMs: nav.responseStart - nav.startTime,
    htmlBytes: nav.encodedBodySize, cssBytes: css.encodedBodySize, jsBytes: js.encodedBodySize,
    transferBytes: nav.transferSize + css.transferSize + js.transferSize,
  };
})()`;

/** Loads `url` once in a new context carrying `cookie` (name=value for /console), and closes it. */
export async function firstLoad(browser: Browser, url: string, cookie: { name: string; value: string } | undefined): Promise<PageLoad> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  try {
    if (cookie)
      await context.addCookies([{ ...cookie, domain: new URL(url).hostname, path: '/console', httpOnly: true, sameSite: 'Strict' }]);
    const page = await context.newPage();
    const res = await page.goto(url, { waitUntil: 'load' });
    if (res?.status() !== 200) throw new Error(`${url} answered ${res?.status()}`);
    await page.waitForFunction(`performance.getEntriesByType('navigation')[0].loadEventEnd > 0`);
    const timing = await page.evaluate<PageLoad | null>(TIMING);
    if (timing === null) throw new Error(`${url}: the browser has no timing for the page, its stylesheet and its script`);
    return timing;
  } finally {
    await context.close();
  }
}
