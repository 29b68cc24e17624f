// Every console page, opened in a real browser on examples/ as the admin: it answers 200, shows its
// heading, runs its script without a console error (a CSP violation is one), connects its live
// updates, and fits a phone's width without the page scrolling sideways (wide tables scroll inside
// their own box). A page that answers anything but 200, or lacks its heading or its live regions, fails.
//
// To add a page: a line in PAGES. Its own behaviour (forms, tabs, the playground) gets its own test.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, exampleManifests, signInWith, useBrowser } from '../../support/browser.ts';
import { adminKey, consoleOrigin } from '../../support/console.ts';
import { startTestService, type TestService } from '../../support/service.ts';

interface ConsolePage {
  readonly name: string;
  /** Under /console/. */
  readonly path: string;
  /** The page's h1. */
  readonly heading: string | RegExp;
}

const PAGES: readonly ConsolePage[] = [
  { name: 'overview', path: '', heading: 'Overview' },
  { name: 'tenant', path: 't/acme', heading: 'Tenant acme' },
  { name: 'connectors', path: 't/acme/connectors', heading: /connectors/i },
  { name: 'bundle', path: 't/acme/bundles/gateway-documents', heading: /gateway-documents/ },
  { name: 'rule (Translation tab)', path: 't/acme/rules/team-documents', heading: /team-documents/ },
  { name: 'rule (Playground tab)', path: 't/acme/rules/team-documents?tab=playground', heading: /team-documents/ },
  { name: 'rule (Replay tab)', path: 't/acme/rules/team-documents?tab=replay', heading: /team-documents/ },
  { name: 'directory', path: 't/records/directory', heading: /directory/i },
];

const PHONE = { width: 390, height: 844 };

let t: TestService;
let base: string;

beforeAll(async () => {
  if (!CHROMIUM) return;
  t = await startTestService({ manifests: await exampleManifests() });
  base = `${consoleOrigin(t)}/console/`;
});
afterAll(() => t?.stop());

for (const [size, viewport] of [
  ['1280 px', undefined],
  ['a phone', PHONE],
] as const) {
  describe.skipIf(!CHROMIUM)(`every console page on ${size}`, { timeout: 60_000 }, () => {
    const b = useBrowser(viewport ? { viewport } : {});

    for (const p of PAGES) {
      it(`opens the ${p.name} page without an error`, async () => {
        const { page } = b;
        await signInWith(page, base, await adminKey(t));
        const res = await page.goto(`${base}${p.path}`);
        expect(res?.status()).toBe(200);
        await page.getByRole('heading', { level: 1, name: p.heading }).waitFor();
        // Every page here updates live: one that lost its live regions fails rather than skipping the wait.
        expect(await page.locator('[data-live]').count(), `${p.name} has no live region`).toBeGreaterThan(0);
        await page.getByText('Live', { exact: true }).waitFor();
        const width = await page.evaluate<{ page: number; window: number }>(
          '({ page: document.documentElement.scrollWidth, window: window.innerWidth })',
        );
        expect(width.page, `${p.name} is wider than the window`).toBeLessThanOrEqual(width.window);
        expect(b.errors).toEqual([]);
      });
    }
  });
}
