// The console's access rules as a person meets them in a real browser (docs/console.md, "Access"):
// sign-in with the admin key or a tenant's key, a wrong key refused, tenant isolation, CSRF from
// another site, a hostile description kept as text under the CSP, the skip link, sign-out, and a
// manifest edit showing up without a reload. test/console/http/access.test.ts holds the same rules over plain HTTP.
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, signInWith, submitKey, useBrowser } from '../../support/browser.ts';
import { adminKey, consoleOrigin } from '../../support/console.ts';
import {
  API_KEY,
  apiKeySecret,
  BASE_MANIFESTS,
  GLOBEX_KEY,
  GLOBEX_MANIFEST,
  startTestService,
  type TestService,
} from '../../support/service.ts';

const HOSTILE = `<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">`;
const HOSTILE_RULE = `
apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: { name: hostile-description, namespace: acme }
spec:
  description: '${HOSTILE}'
  state: Enforced
  subjectType: user
  actions: [share]
  resourceType: document
`;
const HOSTILE_AGENT = `<img src=x onerror="window.__pwned=3">OPA/1.1.0`;

/** How long a live update may take: the console ticks once a second; this is only a guard against a hang. */
const LIVE_DEADLINE_MS = 15_000;

/** A page of another site that posts a form to `action` as soon as it loads (a CSRF attempt). */
function startForeignSite(): Promise<{ server: Server; port: number; setTarget(action: string): void }> {
  let target = '';
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><title>Win a prize</title>
<form method="post" action="${target}"><input type="hidden" name="_csrf" value="guessed"><input type="hidden" name="active" value="false"></form>
<script>document.forms[0].submit()</script>`);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        server,
        port: (server.address() as AddressInfo).port,
        setTarget: (action) => {
          target = action;
        },
      }),
    ),
  );
}

describe.skipIf(!CHROMIUM)('console access in a real browser', { timeout: 60_000 }, () => {
  const b = useBrowser();
  let t: TestService;
  let base: string;
  let foreign: Awaited<ReturnType<typeof startForeignSite>>;
  beforeAll(async () => {
    t = await startTestService({
      manifests: {
        ...BASE_MANIFESTS,
        'hostile.yaml': HOSTILE_RULE,
        'globex.yaml': `${GLOBEX_MANIFEST}---\n${apiKeySecret('globex', 'key', GLOBEX_KEY)}`,
      },
    });
    base = `${consoleOrigin(t)}/console/`;
    foreign = await startForeignSite();
    // A user agent is a user-supplied string the bundle page shows.
    const r = await t.bundle('acme', 'gateways', 'docs', {
      Authorization: `Bearer ${await t.token('acme', 'gateways')}`,
      'User-Agent': HOSTILE_AGENT,
    });
    expect(r.status).toBe(200);
  });
  afterAll(async () => {
    if (foreign) await new Promise<void>((resolve) => foreign.server.close(() => resolve()));
    await t?.stop();
  });

  it('signs in with the admin key and shows every tenant on the overview', async () => {
    const { page } = b;
    await signInWith(page, base, await adminKey(t));
    expect(new URL(page.url()).pathname).toBe('/console/');
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    expect(await page.getByRole('link', { name: 'acme', exact: true }).count()).toBeGreaterThan(0);
    expect(await page.getByRole('link', { name: 'globex', exact: true }).count()).toBeGreaterThan(0);
    await expect(page.getByText('Signed in as admin').isVisible()).resolves.toBe(true);
    expect(b.errors).toEqual([]);
  });

  it('refuses a wrong key with a message and starts no session', async () => {
    const { page, context } = b;
    const status = await submitKey(page, base, 'not-a-key-of-anyone-0123456789');
    expect(status).toBe(401);
    await page.getByText('That key opens nothing here').waitFor();
    expect((await context.cookies()).map((c) => c.name)).toEqual([]);
    await page.goto(base);
    expect(new URL(page.url()).pathname).toBe('/console/signin');
    expect(b.errors.filter((e) => !e.includes('401'))).toEqual([]);
  });

  it("shows a tenant's key its own tenant only, and the other tenant's page is not found", async () => {
    const { page } = b;
    await signInWith(page, base, API_KEY);
    await expect(page.getByText('Signed in as tenant acme').isVisible()).resolves.toBe(true);
    expect(await page.getByRole('link', { name: 'acme', exact: true }).count()).toBeGreaterThan(0);
    expect(await page.content()).not.toContain('globex');
    const other = await page.goto(`${base}t/globex`);
    expect(other?.status()).toBe(404);
    await page.getByRole('heading', { name: 'Not found' }).waitFor();
    // The same answer as for a tenant that does not exist at all: nothing tells globex is there.
    const missing = await page.goto(`${base}t/initech`);
    expect(missing?.status()).toBe(404);
  });

  // SameSite=Strict keeps the cookie off a post from another site (localhost is another site than
  // 127.0.0.1); a page of 127.0.0.1 on another port is the same site but another origin: the cookie
  // goes along and the Origin check refuses. Either way nothing changes and the session goes on.
  for (const [what, host] of [
    ['another site', 'localhost'],
    ['another origin of the same site', '127.0.0.1'],
  ] as const) {
    for (const [target, path] of [
      ['sign-out', 'signout'],
      ['an action', 't/acme/connectors/gateways/deactivate'],
    ] as const) {
      it(`refuses ${target} posted by a page of ${what}, and the session still works`, async () => {
        const { page } = b;
        await signInWith(page, base, await adminKey(t));
        const token = await t.token('acme', 'gateways');
        foreign.setTarget(`${base}${path}`);
        const answer = page.waitForResponse((r) => r.request().method() === 'POST' && r.url().startsWith(base));
        await page.goto(`http://${host}:${foreign.port}/`);
        const status = (await answer).status();
        expect(status, `the console answered the foreign post with ${status}`).toBeGreaterThanOrEqual(400);
        if (host === '127.0.0.1') expect(status).toBe(403);
        await page.waitForLoadState('load');
        const back = await page.goto(`${base}t/acme`);
        expect(back?.status()).toBe(200);
        await page.getByRole('button', { name: 'Sign out' }).waitFor();
        expect(await t.token('acme', 'gateways')).toBe(token);
        expect(await readFile(join(t.manifests, 'connectors.yaml'), 'utf8')).toBe(BASE_MANIFESTS['connectors.yaml']);
      });
    }
  }

  it('keeps a <script> in a description and an agent name as text, under a strict CSP', async () => {
    const { page } = b;
    await signInWith(page, base, await adminKey(t));
    const tenant = await page.goto(`${base}t/acme`);
    const csp = tenant?.headers()['content-security-policy'] ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain('unsafe-inline');
    await page.getByRole('link', { name: 'hostile-description' }).waitFor();
    expect(await page.evaluate<string>('typeof window.__pwned')).toBe('undefined');
    // Only the console's own script is on the page, and no image at all.
    expect(await page.locator('script').count()).toBe(1);
    expect(await page.locator('img').count()).toBe(0);
    const pages: [string, string][] = [
      [`t/acme/rules/hostile-description`, HOSTILE],
      [`t/acme/bundles/docs`, HOSTILE_AGENT],
    ];
    for (const [path, text] of pages) {
      // A page that is gone fails here: its hostile string must be shown, as text, to count as kept.
      const res = await page.goto(`${base}${path}`);
      expect(res?.status(), path).toBe(200);
      await page.getByText(text).first().waitFor();
      expect(await page.evaluate<string>('typeof window.__pwned'), path).toBe('undefined');
      expect(await page.locator('img').count(), path).toBe(0);
    }
    // A CSP violation is a console error: an inline script that got through would show here.
    expect(b.errors).toEqual([]);
  });

  it('lets the keyboard skip to the content: Tab from the top reaches the skip link first', async () => {
    const { page } = b;
    await signInWith(page, base, await adminKey(t));
    await page.goto(`${base}t/acme`);
    await page.keyboard.press('Tab');
    expect(await page.evaluate<string>('document.activeElement.textContent.trim()')).toBe('Skip to content');
    expect(await page.evaluate<boolean>('document.querySelector("a.skip").getBoundingClientRect().left >= 0')).toBe(true);
    await page.keyboard.press('Enter');
    expect(await page.evaluate<string>('document.activeElement.id')).toBe('main');
    expect(new URL(page.url()).hash).toBe('#main');
  });

  it('signs out: the session ends and pages ask to sign in again', async () => {
    const { page, context } = b;
    await signInWith(page, base, await adminKey(t));
    const cookie = (await context.cookies()).find((c) => c.name === 'acl_console');
    expect(cookie?.httpOnly).toBe(true);
    expect(cookie?.sameSite).toBe('Strict');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL((u) => u.pathname === '/console/signin');
    await page.goto(`${base}t/acme`);
    expect(new URL(page.url()).pathname).toBe('/console/signin');
    // The old session id is dead on the server too, not only forgotten by this browser.
    const replay = await fetch(`${base}t/acme`, { headers: { Cookie: `acl_console=${cookie?.value}` }, redirect: 'manual' });
    expect(replay.status).toBe(303);
  });

  it('shows a rule added to the folder on the open tenant page without a reload', async () => {
    const { page } = b;
    await signInWith(page, base, await adminKey(t));
    await page.goto(`${base}t/acme`);
    await page.getByText('Live', { exact: true }).waitFor();
    await page.evaluate('window.__sameDocument = true');
    expect(await page.getByRole('link', { name: 'arrived-live' }).count()).toBe(0);
    await t.write(
      'live.yaml',
      `apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: { name: arrived-live, namespace: acme }
spec: { state: Enforced, subjectType: user, actions: [archive], resourceType: document }
`,
    );
    await page.getByRole('link', { name: 'arrived-live' }).waitFor({ state: 'visible', timeout: LIVE_DEADLINE_MS });
    expect(await page.evaluate<boolean>('window.__sameDocument === true')).toBe(true);
    expect(b.errors).toEqual([]);
    await t.write('live.yaml', undefined);
  });
});
