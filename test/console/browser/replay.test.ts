// The Verify Panel's Replay on examples/, in a real browser (issue 28): OPA's decision logs for the
// gateways' bundles arrive as OPA posts them; a tenant's key opens team-documents, narrows its
// condition, replays, and sees the decisions that would flip (allow → deny) and the count unchanged;
// a condition that is not CEL is refused next to the field; the Proposed rule contractors-comment
// shows what it would allow. test/console/http/replay.test.ts holds the same over plain HTTP.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { CHROMIUM, exampleManifests, signInWith, useBrowser } from '../../support/browser.ts';
import { consoleOrigin } from '../../support/console.ts';
import { decisionEvent } from '../../support/reports.ts';
import { startTestService, type TestService } from '../../support/service.ts';

/** examples/acme-api-key.yaml. */
const ACME_KEY = 'acme-example-key-for-local-use-only';
/** Where the screenshots go (a person looks at them: SCREENSHOTS=<dir> keeps them elsewhere). */
const SHOTS = process.env['SCREENSHOTS'] ?? join('/tmp', 'acl-console-replay');

const read = (i: number, team: string, docTeam: string, confidential: boolean) => ({
  principal: { type: 'user', id: `user-${i}`, team },
  action: 'read',
  resource: { type: 'document', id: `doc-${i}`, team: docTeam, confidential },
  context: {},
});
const comment = (i: number) => ({
  principal: { type: 'contractor', id: `contractor-${i}` },
  action: 'comment',
  resource: { type: 'document', id: `doc-${i}` },
  context: {},
});

/**
 * 12 reads OPA decided on gateway-documents under team-documents (same team: allow): 6 allowed, 2 of
 * them of confidential documents; and 3 contractor comments, denied (contractors-comment is Proposed).
 */
function events() {
  const out = [];
  for (let i = 0; i < 12; i++) {
    const same = i % 2 === 0;
    out.push(decisionEvent(i, { input: read(i, 'blue', same ? 'blue' : 'red', i % 3 === 0), result: same }, 'gateway-documents'));
  }
  for (let i = 20; i < 23; i++) out.push(decisionEvent(i, { input: comment(i), result: false }, 'gateway-documents'));
  return out;
}

describe.skipIf(!CHROMIUM)('the Replay tab of a rule in a real browser, on examples/', { timeout: 60_000 }, () => {
  const b = useBrowser();
  let t: TestService;
  let base: string;
  beforeAll(async () => {
    await mkdir(SHOTS, { recursive: true });
    t = await startTestService({ manifests: await exampleManifests() });
    base = `${consoleOrigin(t)}/console/`;
    const token = await t.token('acme', 'gateways');
    const res = await t.api('/acme/connectors/policyagent/gateways/logs', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
      body: JSON.stringify(events()),
    });
    expect(res.status).toBe(200);
  });
  afterAll(() => t?.stop());

  async function openReplay(page: Page, rule: string): Promise<void> {
    await signInWith(page, base, ACME_KEY);
    await page.goto(`${base}t/acme/rules/${rule}`);
    await page.getByRole('link', { name: 'Replay' }).click();
    await page.getByRole('heading', { name: 'Replay', exact: true }).waitFor();
  }
  const field = (page: Page) => page.getByRole('textbox', { name: /^Condition/ });
  /** Replays until the 15 decisions uploaded are all held (uploads land off the request's path). */
  async function replay(page: Page, condition: string): Promise<void> {
    for (const deadline = Date.now() + 10_000; ; ) {
      await field(page).fill(condition);
      await page.getByRole('button', { name: 'Replay' }).click();
      await page.waitForLoadState('load');
      if ((await page.getByRole('alert').count()) > 0) return;
      if ((await page.getByText(/of 15 recent decisions/).count()) > 0 || Date.now() > deadline) return;
    }
  }
  const flipRows = (page: Page) => page.getByRole('region', { name: 'What would flip' }).locator('tbody tr');

  it('narrows a condition, replays, and sees exactly the allowed confidential reads flip to deny', async () => {
    const { page } = b;
    await openReplay(page, 'team-documents');
    expect(await field(page).inputValue()).toBe('principal.team == resource.team');
    await replay(page, 'principal.team == resource.team && !resource.confidential');
    await page.getByRole('heading', { name: 'Replayed 15 of 15 recent decisions' }).waitFor();
    await page.getByText('2 would flip: 2 allow → deny, 0 deny → allow; 13 unchanged.').waitFor();
    expect(await flipRows(page).count()).toBe(2);
    const rows = await flipRows(page).allInnerTexts();
    expect(rows.every((r) => r.includes('allow → deny') && r.includes('gateway-documents') && r.includes('team-documents'))).toBe(true);
    // The confidential documents: doc-0 and doc-6 (same team, i % 3 === 0).
    expect(rows.map((r) => /user user-\d+ read document doc-\d+/.exec(r)?.[0]).sort()).toEqual([
      'user user-0 read document doc-0',
      'user user-6 read document doc-6',
    ]);
    await flipRows(page)
      .first()
      .getByText(/^user user-/)
      .click();
    await page.getByText('"confidential": true').first().waitFor();
    // The 3 contractor comments are replayed too (the bundle decides them): no rule allows them either way.
    await page.screenshot({ path: join(SHOTS, 'rule-replay.png'), fullPage: true });
    expect(b.errors).toEqual([]);
  });

  it('refuses a condition that is not CEL next to the field, keeping what was typed', async () => {
    const { page } = b;
    await openReplay(page, 'team-documents');
    await replay(page, 'principal.team ==');
    await page.getByRole('alert').first().waitFor();
    expect(await page.getByRole('alert').first().textContent()).toMatch(/^Not CEL \(line 1, column \d+\)/);
    expect(await field(page).inputValue()).toBe('principal.team ==');
    expect(await field(page).getAttribute('aria-invalid')).toBe('true');
    expect(await page.locator('#rp-result').count()).toBe(0);
  });

  it('shows what the Proposed rule contractors-comment would allow, taken as Enforced', async () => {
    const { page } = b;
    await openReplay(page, 'contractors-comment');
    // Its shadow counts: none yet, or what live traffic said (status.shadow, written once it became Proposed).
    await page
      .getByText(/No counts yet|no live decisions yet|would allow \d/)
      .first()
      .waitFor();
    await replay(page, '');
    await page.getByText('3 would flip: 0 allow → deny, 3 deny → allow; 12 unchanged.').waitFor();
    expect(await flipRows(page).count()).toBe(3);
    expect((await flipRows(page).allInnerTexts()).every((r) => r.includes('deny → allow') && r.includes('contractors-comment'))).toBe(true);
    await page.screenshot({ path: join(SHOTS, 'rule-replay-proposed.png'), fullPage: true });
    expect(b.errors).toEqual([]);
  });
});
