// The console's bundle page and directory browser over HTTP (docs/console.md, "Bundle" and "Directory"):
// a real service, real bundle requests (their user agents in the sync activity), OPA status reports and
// decision logs posted as OPA posts them, a Directory in the folder; what each page shows, its filters,
// and what a tenant's key may not see. The renderers' finer cases: src/console/pages/*.test.ts.
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminKey, type ConsoleClient, signIn } from '../../support/console.ts';
import { decisionEvent, statusReport } from '../../support/reports.ts';
import {
  API_KEY,
  apiKeySecret,
  BASE_MANIFESTS,
  DORMANT_MANIFEST,
  GLOBEX_KEY,
  GLOBEX_MANIFEST,
  startTestService,
  type TestService,
} from '../../support/service.ts';

const XSS = '<script>alert(1)</script>';

const DIRECTORIES = `
apiVersion: acl.policyagent.dev/v1alpha1
kind: Directory
metadata: { name: people, namespace: acme }
spec:
  description: Users and documents
  entities:
    - { type: user, id: alice, properties: { team: blue, email: alice@example.com } }
    - { type: user, id: bob, properties: { team: red, note: "${XSS}" } }
    - { type: document, id: d1, properties: { team: blue, tags: [a, b] } }
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Directory
metadata: { name: zz-extra, namespace: acme }
spec:
  entities:
    - { type: user, id: alice, properties: { team: green } }
    - { type: device, id: laptop-7, properties: {} }
`;

let t: TestService;
let admin: ConsoleClient;
const connectorPath = '/acme/connectors/policyagent/gateways';

async function post(path: string, token: string, body: unknown, gzip = false): Promise<void> {
  const text = JSON.stringify(body);
  const res = await t.api(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}`, ...(gzip ? { 'Content-Encoding': 'gzip' } : {}) },
    body: gzip ? gzipSync(text) : text,
  });
  expect(res.status).toBe(200);
}

/** Polls a page (with a deadline) until `ok` holds for its text. */
async function eventually(path: string, ok: (text: string) => boolean): Promise<string> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    await t.service.controller.idle();
    const r = await admin.get(path);
    if (ok(r.text)) return r.text;
    if (Date.now() > deadline) throw new Error(`timed out waiting on ${path}:\n${r.text}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The text of the element with this id up to the next region (enough to scope an assertion). */
function region(text: string, id: string): string {
  const start = text.indexOf(`id="${id}"`);
  expect(start, `no element with id ${id}`).toBeGreaterThanOrEqual(0);
  const end = text.indexOf('data-live', start + id.length + 20);
  return text.slice(start, end === -1 ? undefined : end);
}

/** Body rows of the (first) table in `html`. */
const rowsOf = (html: string): number => (/<tbody>([\s\S]*?)<\/tbody>/.exec(html)?.[1]?.match(/<tr[ >]/g) ?? []).length;

beforeAll(async () => {
  t = await startTestService({
    manifests: {
      ...BASE_MANIFESTS,
      'dormant.yaml': DORMANT_MANIFEST,
      'directory.yaml': DIRECTORIES,
      'globex.yaml': `${GLOBEX_MANIFEST}---\n${apiKeySecret('globex', 'key', GLOBEX_KEY)}`,
    },
    serviceOptions: { agentStatusIntervalMs: 0 },
  });
  admin = await signIn(t, await adminKey(t));
  const token = await t.token('acme', 'gateways');
  const auth = { Authorization: `Bearer ${token}` };
  const first = await t.bundle('acme', 'gateways', 'docs', { ...auth, 'User-Agent': 'OPA/1.1.0 (linux, amd64)' });
  expect(first.status).toBe(200);
  const etag = first.headers.get('etag') ?? '';
  expect((await t.bundle('acme', 'gateways', 'docs', { ...auth, 'User-Agent': XSS, 'If-None-Match': etag })).status).toBe(304);
  expect((await t.bundle('acme', 'gateways', 'docs', { ...auth, 'User-Agent': 'OPA/0.61.0 (linux, arm64)' })).status).toBe(200);
  const dormant = await t.token('acme', 'dormant');
  expect((await t.bundle('acme', 'dormant', 'quiet', { Authorization: `Bearer ${dormant}`, 'User-Agent': 'OPA/1.1.0' })).status).toBe(403);
  await post(`${connectorPath}/status`, token, statusReport('opa-<b>a</b>', { docs: { revision: '1' } }));
  await post(`${connectorPath}/status`, token, statusReport('opa-old', { docs: { code: 'bundle_error', message: `boom ${XSS}` } }));
  await post(`${connectorPath}/logs`, token, [decisionEvent(1, { input: { note: XSS, action: 'read' } }), decisionEvent(2)], true);
});
afterAll(() => t.stop());

describe('bundle page', () => {
  it('shows what the bundle serves: revision, digest, ETag, entity filter, Rego version, connector and its rules', async () => {
    const r = await admin.get('/console/t/acme/bundles/docs');
    expect(r.status).toBe(200);
    const entry = t.service.store.snapshot().tenants.get('acme')?.bundles.get('docs');
    const facts = region(r.text, 'bundle-facts');
    expect(facts).toContain('<dt>Revision</dt><dd>1</dd>');
    expect(facts).toContain(`<code>${entry?.built.digest}</code>`);
    expect(facts).toContain(`<code>&quot;${entry?.built.etag.slice(1, -1)}&quot;</code>`);
    expect(facts).toContain('rules whose subject or resource type is <code>document</code>');
    expect(facts).toContain('<dd>v0</dd>');
    expect(facts).toContain('<a href="/console/t/acme/connectors">gateways</a>');
    expect(facts).toMatch(/<th scope="row">Ready<\/th><td><span class="badge ok">True<\/span>/);
    const rules = region(r.text, 'bundle-rules');
    expect(rules).toContain('<a href="/console/t/acme/rules/team-documents">team-documents</a>');
    expect(rules).toContain('<td>read, write</td>');
    expect(rules).toContain('<code>principal.team == resource.team</code>');
  });

  it('says "all rules" for a bundle without an entity filter', async () => {
    const r = await admin.get('/console/t/acme/bundles/internal');
    expect(region(r.text, 'bundle-facts')).toContain('all rules');
  });

  it("lists the sync activity with each request's user agent rendered as text, never as markup", async () => {
    const r = await admin.get('/console/t/acme/bundles/docs');
    const activity = region(r.text, 'bundle-activity');
    expect(activity).toContain('3 of 3 records');
    expect(activity).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(r.text).not.toContain(XSS);
    expect(activity).toContain('OPA/0.61.0 (linux, arm64)');
    expect(activity).toContain('<span class="badge info">304 Not Modified</span>');
    expect(activity).toContain('<code>127.0.0.1</code>');
    expect(rowsOf(activity)).toBe(3);
  });

  it('narrows the sync activity by status, user agent, client IP and revision with a plain GET form', async () => {
    const path = '/console/t/acme/bundles/docs';
    const only304 = region((await admin.get(`${path}?status=304`)).text, 'bundle-activity');
    expect(only304).toContain('1 of 3 records match the filter');
    expect(rowsOf(only304)).toBe(1);
    const byAgent = region((await admin.get(`${path}?ua=opa%2F0.61`)).text, 'bundle-activity');
    expect(byAgent).toContain('1 of 3 records');
    expect(byAgent).toContain('OPA/0.61.0');
    expect(rowsOf(region((await admin.get(`${path}?ip=10.9.`)).text, 'bundle-activity'))).toBe(0);
    expect(rowsOf(region((await admin.get(`${path}?revision=1&status=200`)).text, 'bundle-activity'))).toBe(2);
    expect(rowsOf(region((await admin.get(`${path}?revision=2`)).text, 'bundle-activity'))).toBe(0);
    const form = (await admin.get(`${path}?status=all&ua=${encodeURIComponent(XSS)}`)).text;
    expect(form).toContain('<form method="get" action="/console/t/acme/bundles/docs"');
    expect(form).toContain(`name="ua" value="&lt;script&gt;alert(1)&lt;/script&gt;"`);
    expect(form).toContain('<option value="all" selected>All</option>');
  });

  it('says so when a filter value is not one, instead of filtering by something else', async () => {
    const r = await admin.get('/console/t/acme/bundles/docs?revision=abc&status=ok');
    expect(r.text).toContain('Revision &quot;abc&quot; is not a whole number: showing every revision.');
    expect(r.text).toContain('Status &quot;ok&quot; is not an HTTP status: showing every status.');
    expect(region(r.text, 'bundle-activity')).toContain('3 of 3 records');
  });

  it('records a refused request of its own connector (403 while Inactive) in that bundle alone', async () => {
    const quiet = region((await admin.get('/console/t/acme/bundles/quiet')).text, 'bundle-activity');
    expect(quiet).toContain('<span class="badge bad">403 Forbidden</span>');
    expect(quiet).toContain('1 of 1 records');
  });

  it('shows the agents against the served revision, failing first, and RolledOut', async () => {
    const text = await eventually('/console/t/acme/bundles/docs', (s) => s.includes('AgentsFailing'));
    const agents = region(text, 'bundle-agents');
    expect(agents).toContain('1/2 current');
    expect(agents.indexOf('opa-old')).toBeLessThan(agents.indexOf('opa-&lt;b&gt;a&lt;/b&gt;'));
    expect(agents).toContain('<span class="badge bad">failing</span>');
    expect(agents).toContain('<span class="badge ok">current</span>');
    expect(agents).toContain('boom &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(agents).toContain('1 of 2 agent(s) run revision 1');
    expect(region(text, 'bundle-facts')).toMatch(
      /<th scope="row">RolledOut<\/th><td><span class="badge bad">False<\/span><\/td><td>AgentsFailing/,
    );
    expect(text).not.toContain('<b>a</b>');
  });

  it('shows the recent decisions, newest first, with their input as inert JSON', async () => {
    const decisions = region((await admin.get('/console/t/acme/bundles/docs')).text, 'bundle-decisions');
    expect(rowsOf(decisions)).toBe(2);
    expect(decisions).toContain('<span class="badge ok">allow</span>');
    expect(decisions).toContain('<span class="badge bad">deny</span>');
    expect(decisions.indexOf('allow')).toBeLessThan(decisions.indexOf('deny'));
    expect(decisions).toContain(
      '<pre>{&quot;note&quot;:&quot;&lt;script&gt;alert(1)&lt;/script&gt;&quot;,&quot;action&quot;:&quot;read&quot;}</pre>',
    );
  });

  it('answers 404 for a bundle that does not exist', async () => {
    const r = await admin.get('/console/t/acme/bundles/nope');
    expect(r.status).toBe(404);
    expect(r.text).toContain('There is no bundle nope in tenant acme here.');
  });

  it("does not show a tenant's key another tenant's bundle of the same name, alike whether it exists or not", async () => {
    const acme = await signIn(t, API_KEY);
    expect((await acme.get('/console/t/acme/bundles/docs')).status).toBe(200);
    const other = await acme.get('/console/t/globex/bundles/docs');
    const missing = await acme.get('/console/t/initech/bundles/docs');
    expect(other.status).toBe(404);
    expect(other.text.replace('globex', 'X')).toBe(missing.text.replace('initech', 'X'));
    const globex = await signIn(t, GLOBEX_KEY);
    const own = await globex.get('/console/t/globex/bundles/docs');
    expect(own.status).toBe(200);
    expect(region(own.text, 'bundle-activity')).toContain('0 of 0 records');
  });

  it('shows the key each agent reports it verifies with, as text, and KeyRotated among the conditions', async () => {
    const token = await t.token('acme', 'gateways');
    const report = statusReport('opa-keyed', { docs: { revision: '1' } });
    // Printable and without spaces, so a label the service keeps: it must still be shown as text.
    const kid = 'acl-<i>k</i>';
    await post(`${connectorPath}/status`, token, { ...report, labels: { ...(report['labels'] as object), 'acl-signing-key': kid } });
    const text = await eventually('/console/t/acme/bundles/docs', (s) => s.includes('opa-keyed'));
    const agents = region(text, 'bundle-agents');
    expect(agents).toContain('<th scope="col">Verifies with</th>');
    expect(agents).toContain('<td><code>acl-&lt;i&gt;k&lt;/i&gt;</code></td>');
    expect(agents).toContain('<span class="stat-chip"><span class="muted">no label</span> 2</span>');
    expect(text).not.toContain('<i>k</i>');
    expect(region(text, 'bundle-facts')).toMatch(/<th scope="row">KeyRotated<\/th><td><span class="badge ok">True<\/span>/);
  });
});

describe('directory browser', () => {
  it("lists the tenant's Directories with phase and entities in effect, and each entity with who lists it", async () => {
    const r = await admin.get('/console/t/acme/directory');
    expect(r.status).toBe(200);
    const list = region(r.text, 'directory-list');
    expect(list).toMatch(
      /<tr id="directory-people">\s*<th scope="row">people<\/th>\s*<td><span class="badge ok">Ready<\/span><\/td>\s*<td class="num">3<\/td>/,
    );
    expect(list).toMatch(/<tr id="directory-zz-extra">[\s\S]*badge bad">Conflict[\s\S]*<td class="num">1<\/td>/);
    const entities = region(r.text, 'directory-entities');
    expect(entities).toContain('4 of 4 entities.');
    expect(entities).toContain('<code>team</code> = <code>&quot;blue&quot;</code>');
    expect(entities).toContain('<code>tags</code> = <code>[&quot;a&quot;,&quot;b&quot;]</code>');
    expect(entities).toContain(
      '<a href="#directory-people">people</a> <span class="muted">(in effect)</span>, <a href="#directory-zz-extra">zz-extra</a>',
    );
    expect(entities).toContain('&quot;&lt;script&gt;alert(1)&lt;/script&gt;&quot;');
    expect(r.text).not.toContain(XSS);
  });

  it('finds entities by a word in a property value, by id, and filters by type', async () => {
    const byValue = region((await admin.get('/console/t/acme/directory?q=RED')).text, 'directory-entities');
    expect(byValue).toContain('1 of 4 entities match.');
    expect(byValue).toContain('<code>bob</code>');
    const byId = region((await admin.get('/console/t/acme/directory?q=laptop')).text, 'directory-entities');
    expect(byId).toContain('<code>laptop-7</code>');
    expect(rowsOf(byId)).toBe(1);
    const users = await admin.get('/console/t/acme/directory?type=user&q=');
    expect(rowsOf(region(users.text, 'directory-entities'))).toBe(2);
    expect(users.text).toContain('<option value="user" selected>user</option>');
    const blueDocs = region((await admin.get('/console/t/acme/directory?type=document&q=blue')).text, 'directory-entities');
    expect(rowsOf(blueDocs)).toBe(1);
    expect(blueDocs).toContain('<code>d1</code>');
    const none = await admin.get('/console/t/acme/directory?type=robot');
    expect(none.text).toContain('No entity of type robot is in effect.');
  });

  it("shows a tenant's key its own directory only", async () => {
    const globex = await signIn(t, GLOBEX_KEY);
    expect((await globex.get('/console/t/acme/directory')).status).toBe(404);
    const own = await globex.get('/console/t/globex/directory');
    expect(own.status).toBe(200);
    expect(own.text).toContain('This tenant has no Directory');
  });
});
