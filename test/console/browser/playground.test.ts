// The rule page's playground against examples/, in a real browser (issue 16): a person types or picks a
// request on rule team-documents and sees the decision, the deciding rule or what each candidate
// missed; a request that is not JSON is refused next to the field, keeping the text; with OPA_BIN the
// same request goes through each bundle's Rego in that OPA, which agrees. test/console/http/rule.test.ts
// holds the playground over plain HTTP.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { CHROMIUM, exampleManifests, signInWith, useBrowser } from '../../support/browser.ts';
import { consoleOrigin } from '../../support/console.ts';
import { startTestService, type TestService } from '../../support/service.ts';

const OPA_BIN = process.env['OPA_BIN'];
/** examples/acme-api-key.yaml: the playground is open to a tenant's key, not only the admin's. */
const ACME_KEY = 'acme-example-key-for-local-use-only';

const request = (who: string, team: string, docTeam: string) =>
  JSON.stringify(
    {
      subject: { type: 'user', id: who, properties: { team } },
      action: 'read',
      resource: { type: 'document', id: 'design-notes', properties: { team: docTeam } },
    },
    null,
    2,
  );

describe.skipIf(!CHROMIUM)('the playground of a rule in a real browser, on examples/', { timeout: 60_000 }, () => {
  const b = useBrowser();
  let t: TestService;
  let base: string;
  beforeAll(async () => {
    t = await startTestService({ manifests: await exampleManifests(), ...(OPA_BIN ? { config: { opa: OPA_BIN } } : {}) });
    base = `${consoleOrigin(t)}/console/`;
  });
  afterAll(() => t?.stop());

  async function openPlayground(page: Page): Promise<void> {
    await signInWith(page, base, ACME_KEY);
    await page.goto(`${base}t/acme/rules/team-documents`);
    await page.getByRole('link', { name: 'Playground' }).click();
    await page.getByRole('heading', { name: 'Playground' }).waitFor();
  }
  const field = (page: Page) => page.getByRole('textbox', { name: /^Request/ });
  const decide = async (page: Page, text?: string): Promise<void> => {
    if (text !== undefined) await field(page).fill(text);
    await page.getByRole('button', { name: 'Decide' }).click();
    await page.waitForLoadState('load');
  };

  it('allows what the rule allows and names the deciding rule', async () => {
    const { page } = b;
    await openPlayground(page);
    await decide(page, request('alice', 'blue', 'blue'));
    await page.getByRole('heading', { name: /^Decision\s+ALLOW$/ }).waitFor();
    await page.getByText('Decided by rule team-documents.').waitFor();
    expect(await page.getByText('This rule: It allowed the request').count()).toBe(1);
    expect(b.errors).toEqual([]);
  });

  it('denies what no rule allows and says what each candidate missed', async () => {
    const { page } = b;
    await openPlayground(page);
    await decide(page, request('bob', 'red', 'blue'));
    await page.getByRole('heading', { name: /^Decision\s+DENY$/ }).waitFor();
    const reasons = await page.locator('#pg-result ul.reasons li').allInnerTexts();
    expect(reasons.some((r) => r.includes('team-documents') && r.includes('did not match'))).toBe(true);
    expect(b.errors).toEqual([]);
  });

  it("fills the request from the example picker (the console's script) and decides it", async () => {
    const { page } = b;
    await openPlayground(page);
    const picker = page.getByLabel('Example requests');
    const example = await picker.locator('option').nth(1).getAttribute('value');
    expect(example).toBeTruthy();
    await field(page).fill('');
    await picker.selectOption({ index: 1 });
    expect(await field(page).inputValue()).toBe(example);
    await decide(page);
    await page.getByRole('heading', { name: /^Decision\s+(ALLOW|DENY)$/ }).waitFor();
    expect(b.errors).toEqual([]);
  });

  it('refuses a request that is not JSON next to the field, and keeps what was typed', async () => {
    const { page } = b;
    await openPlayground(page);
    const typed = '{ "subject": { "type": "user", ';
    await decide(page, typed);
    await page.getByRole('alert').first().waitFor();
    expect((await field(page).inputValue()).trim()).toBe(typed.trim());
    expect(await field(page).getAttribute('aria-invalid')).toBe('true');
    expect(await page.locator('#pg-result').count()).toBe(0);
  });

  it.skipIf(!OPA_BIN)('asks the real OPA on each bundle carrying the rule, which agrees', async () => {
    const { page } = b;
    await openPlayground(page);
    await decide(page, request('alice', 'blue', 'blue'));
    await page.getByText(/OPA [\d.]+ agrees with the service/).waitFor({ timeout: 30_000 });
    const rows = page.getByRole('region', { name: 'OPA on each bundle carrying the rule' }).locator('tbody tr');
    expect(await rows.count()).toBe(2);
    expect(await rows.getByText('agrees').count()).toBe(2);
    expect(b.errors).toEqual([]);
  });
});
