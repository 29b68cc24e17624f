// The Verify Panel's Replay over HTTP (docs/console.md, "Replay"): decision logs posted as OPA posts
// them fill the fleet's recent decisions; a tenant's key edits team-documents' condition and replays
// them, sees exactly the flips a hand count predicts, and nothing is saved. The form needs the
// session's CSRF token and our origin; another tenant's rule is the same 404 as none.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConsoleClient, signIn } from '../../support/console.ts';
import { decisionEvent } from '../../support/reports.ts';
import {
  API_KEY,
  apiKeySecret,
  BASE_MANIFESTS,
  GLOBEX_KEY,
  GLOBEX_MANIFEST,
  startTestService,
  type TestService,
} from '../../support/service.ts';

const PAGE = '/console/t/acme/rules/team-documents';
const XSS = '<script>alert(1)</script>';

const input = (team: string, docTeam: string, level: number) => ({
  principal: { type: 'user', id: `u-${team}`, team },
  action: 'read',
  resource: { type: 'document', id: `d-${level}`, team: docTeam, level },
  context: { headers: { authorization: 'Bearer secret-credential-1234' }, note: XSS },
});

/**
 * 40 decisions on bundle docs and 10 on internal, as OPA decided them under `principal.team ==
 * resource.team`: teams blue or red, documents of level 0-4. Narrowed to `&& resource.level < 3`,
 * exactly the allowed ones of level 3 or 4 flip to deny.
 */
function events(bundle: string, count: number, from: number) {
  const out = [];
  for (let i = from; i < from + count; i++) {
    const who = i % 2 === 0 ? 'blue' : 'red';
    const doc = i % 3 === 0 ? 'blue' : 'red';
    out.push(decisionEvent(i, { input: input(who, doc, i % 5), result: who === doc }, bundle));
  }
  return out;
}
const expectedFlips = (count: number, from: number): number => {
  let n = 0;
  for (let i = from; i < from + count; i++) if ((i % 2 === 0 ? 'blue' : 'red') === (i % 3 === 0 ? 'blue' : 'red') && i % 5 >= 3) n++;
  return n;
};

let t: TestService;
let tenant: ConsoleClient;

async function upload(body: unknown): Promise<void> {
  const token = await t.token('acme', 'gateways');
  const res = await t.api('/acme/connectors/policyagent/gateways/logs', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
}

/** Replays with `condition` until all `held` decisions are in (uploads land off the request's path). */
async function replayUntil(condition: string, held: number): Promise<string> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const r = await tenant.post(`${PAGE}/replay`, { condition });
    expect(r.status).toBe(200);
    if (r.text.includes(`of ${held} recent decisions`)) return r.text;
    if (Date.now() > deadline) throw new Error(`the recent decisions never reached ${held}:\n${r.text}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

beforeAll(async () => {
  // The gateways connector polls docs; make it poll internal too, so OPA reports decisions there as well.
  const connectors = BASE_MANIFESTS['connectors.yaml']?.replace(
    'metadata: { name: internal, namespace: acme }\nspec: { connector: backends }',
    'metadata: { name: internal, namespace: acme }\nspec: { connector: gateways }',
  );
  t = await startTestService({
    manifests: {
      ...BASE_MANIFESTS,
      'connectors.yaml': connectors ?? '',
      'globex.yaml': `${GLOBEX_MANIFEST}---\n${apiKeySecret('globex', 'key', GLOBEX_KEY)}`,
    },
  });
  tenant = await signIn(t, API_KEY);
  await upload([...events('docs', 40, 0), ...events('internal', 10, 100)]);
});
afterAll(() => t.stop());

describe('the Replay tab over HTTP', () => {
  it("replays OPA's recent decisions against an edited condition: exactly the flips a hand count predicts, redacted", async () => {
    const flips = expectedFlips(40, 0) + expectedFlips(10, 100);
    expect(flips).toBeGreaterThan(3);
    const text = await replayUntil('principal.team == resource.team && resource.level < 3', 50);
    expect(text).toContain('Replayed 50 of 50 recent decisions');
    expect(text).toContain(`${flips} would flip: ${flips} allow → deny, 0 deny → allow; ${50 - flips} unchanged.`);
    expect(text).toContain('<a href="/console/t/acme/bundles/docs">docs</a> (40)');
    expect(text).toContain('<a href="/console/t/acme/bundles/internal">internal</a> (10)');
    expect(text.match(/<span class="badge bad">allow → deny<\/span>/g)).toHaveLength(flips);
    expect(text).not.toContain('secret-credential-1234');
    expect(text).toContain('[redacted]');
    expect(text).not.toContain(XSS);
  });

  it('replays the current condition with no flip, and saves nothing', async () => {
    const before = await readFile(join(t.manifests, 'rules.yaml'), 'utf8');
    const version = t.service.store.snapshot().version;
    const text = await replayUntil('principal.team == resource.team', 50);
    expect(text).toContain('Nothing would flip: 50 unchanged.');
    await t.settle();
    expect(await readFile(join(t.manifests, 'rules.yaml'), 'utf8')).toBe(before);
    expect(t.service.store.snapshot().version).toBe(version);
  });

  it('answers 422 with the compile error next to the field for a condition that is not CEL', async () => {
    const r = await tenant.post(`${PAGE}/replay`, { condition: 'principal.team ==' });
    expect(r.status).toBe(422);
    expect(r.text).toMatch(/<div id="rp-error" class="notice bad" role="alert">Not CEL \(line 1, column \d+\)/);
  });

  it('refuses a replay without the CSRF token or from another origin', async () => {
    expect((await tenant.post(`${PAGE}/replay`, { condition: 'true', _csrf: 'forged' })).status).toBe(403);
    const foreign = await tenant.post(`${PAGE}/replay`, { condition: 'true' }, { Origin: 'https://evil.example' });
    expect(foreign.status).toBe(403);
  });

  it("answers another tenant's rule with the same 404 as a missing one", async () => {
    const globex = await signIn(t, GLOBEX_KEY);
    const other = await globex.post(`${PAGE}/replay`, { condition: 'true' });
    expect(other.status).toBe(404);
    expect(other.text).not.toContain('recent decisions');
    expect((await globex.get(`${PAGE}?tab=replay`)).status).toBe(404);
  });
});
