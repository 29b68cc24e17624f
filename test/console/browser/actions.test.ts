// The console's actions clicked through in a real browser, end to end (issue 16): the admin presses the
// buttons a person would, confirms on the page that asks, and the bundle endpoint answers as the
// action says: Active off → 403, Rotate → the old token 401 and the new one (shown once, copied with
// its button) 200, Revoke → 401, Generate → a token that opens the bundle again; Regenerate moves the
// translation's generation. test/console/http/actions.test.ts holds the same actions over plain HTTP.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { CHROMIUM, signInWith, useBrowser } from '../../support/browser.ts';
import { adminKey, consoleOrigin } from '../../support/console.ts';
import { BASE_MANIFESTS, startTestService, type TestService } from '../../support/service.ts';

describe.skipIf(!CHROMIUM)('console actions in a real browser', { timeout: 60_000 }, () => {
  const b = useBrowser();
  let t: TestService;
  let base: string;
  beforeAll(async () => {
    // The folder watcher applies what the console writes (debounced 20 ms here), as it would for a person's edit.
    t = await startTestService({ manifests: BASE_MANIFESTS, serviceOptions: { debounceMs: 20 } });
    base = `${consoleOrigin(t)}/console/`;
  });
  afterAll(() => t?.stop());

  const bundle = (token: string) => t.bundle('acme', 'gateways', 'docs', { Authorization: `Bearer ${token}` });
  /** The card of connector gateways on the Connectors page. */
  const gateways = (page: Page) => page.locator('#connector-gateways');

  async function openConnectors(page: Page): Promise<void> {
    await signInWith(page, base, await adminKey(t));
    await page.goto(`${base}t/acme/connectors`);
    await page.getByRole('heading', { level: 1, name: 'Connectors of acme' }).waitFor();
  }

  /** The page's HTML once it stops navigating (an error page of the browser included). */
  async function contentOnceSettled(page: Page): Promise<string> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        await page.waitForLoadState('load');
        return await page.content();
      } catch (err) {
        if (Date.now() > deadline) throw err;
      }
    }
  }

  /** Presses `button` on the gateways card, then the confirming button on the page that asks. */
  async function confirmAction(page: Page, button: string, confirm: string): Promise<void> {
    await gateways(page).getByRole('button', { name: button }).click();
    await page.getByRole('heading', { level: 1, name: /gateways\?$/ }).waitFor();
    await page.getByRole('button', { name: confirm }).click();
    await page.waitForLoadState('load');
  }

  it('Deactivate asks first, then the bundle answers 403; Activate serves it again', async () => {
    const { page } = b;
    const token = await t.token('acme', 'gateways');
    await openConnectors(page);
    await gateways(page).getByRole('button', { name: 'Deactivate' }).click();
    await page.getByText('Every OPA polling its bundles gets 403').waitFor();
    // Cancel leaves everything as it was.
    await page.getByRole('link', { name: 'Cancel' }).click();
    expect((await bundle(token)).status).toBe(200);
    await confirmAction(page, 'Deactivate', 'Deactivate');
    await page.getByText('Connector gateways is Inactive: its bundles answer 403').waitFor();
    expect((await bundle(token)).status).toBe(403);
    await gateways(page).getByRole('button', { name: 'Activate' }).click();
    await page.getByText('Connector gateways is Active').waitFor();
    expect((await bundle(token)).status).toBe(200);
    expect(b.errors).toEqual([]);
  });

  it('Rotate shows the new token once with a copy button; the old token gets 401, the new one 200', async () => {
    const { page, context } = b;
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: consoleOrigin(t) });
    const old = await t.token('acme', 'gateways');
    await openConnectors(page);
    await confirmAction(page, 'Rotate token', 'Rotate token');
    await page.getByRole('heading', { level: 1, name: 'New token for gateways' }).waitFor();
    const token = await page.getByLabel('The new token of gateways').inputValue();
    expect(token).toMatch(/^agent_/);
    expect(token).not.toBe(old);
    expect((await bundle(old)).status).toBe(401);
    expect((await bundle(token)).status).toBe(200);
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByRole('button', { name: 'Copied' }).waitFor();
    expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe(token);
    // Never again: neither the connectors page nor the page it was shown on, opened again.
    await page.getByRole('link', { name: 'Back to the connectors' }).click();
    await page.getByRole('heading', { level: 1, name: 'Connectors of acme' }).waitFor();
    expect(await page.content()).not.toContain(token);
    // Back in history would post the form again: the page was no-store, so the browser will not show it from its cache.
    const errorsBefore = b.errors.length;
    await page.goBack().catch(() => undefined);
    expect(await contentOnceSettled(page)).not.toContain(token);
    expect(b.errors.slice(0, errorsBefore)).toEqual([]);
  });

  it('Revoke gives every poller 401; Generate issues a token that opens the bundle again', async () => {
    const { page } = b;
    const old = await t.token('acme', 'gateways');
    await openConnectors(page);
    await confirmAction(page, 'Revoke token', 'Revoke token');
    await gateways(page).getByText('Revoked: every poller gets 401').first().waitFor();
    expect((await bundle(old)).status).toBe(401);
    await gateways(page).getByRole('button', { name: 'Generate token' }).click();
    const token = await page.getByLabel('The new token of gateways').inputValue();
    expect((await bundle(token)).status).toBe(200);
    await page.getByRole('link', { name: 'Back to the connectors' }).click();
    // Generate gives a token and the connector its Active back (spec.active was never changed by Revoke):
    // the card offers Deactivate, and no Activate a person would have to press first.
    await page.getByRole('heading', { level: 1, name: 'Connectors of acme' }).waitFor();
    await gateways(page).getByRole('button', { name: 'Deactivate' }).waitFor();
    expect(await gateways(page).getByRole('button', { name: 'Activate', exact: true }).count()).toBe(0);
    expect((await bundle(token)).status).toBe(200);
    expect(b.errors).toEqual([]);
  });

  it('Regenerate on the rule page moves the translation generation', async () => {
    const { page } = b;
    const generation = () =>
      (t.service.state.object('Rule', 'acme', 'team-documents')?.status as { translation?: { generation?: number; regenerate?: string } })
        ?.translation;
    const before = generation();
    await signInWith(page, base, await adminKey(t));
    const res = await page.goto(`${base}t/acme/rules/team-documents`);
    expect(res?.status()).toBe(200);
    // The Verify Panel's Translation tab holds Regenerate: a page without that tab or that button fails.
    await page.getByRole('navigation', { name: 'Verify Panel' }).getByRole('link', { name: 'Translation' }).click();
    await page.waitForURL(/[?&]tab=translation/);
    await page.getByRole('button', { name: /regenerate/i }).click();
    await page.waitForLoadState('load');
    const deadline = Date.now() + 10_000;
    while (JSON.stringify(generation()) === JSON.stringify(before) && Date.now() < deadline) {
      await t.settle();
      await page.waitForTimeout(50);
    }
    expect(generation()).not.toEqual(before);
    expect(b.errors).toEqual([]);
  });
});
