// The rule page and its Verify Panel over HTTP (docs/console.md, "Rule and Verify Panel"): the rule
// and its Rego, STALE while the translation lags, Regenerate refused to a tenant's key and without
// CSRF, and the playground deciding as POST /authorization does, in both request shapes, with its
// errors shown beside the form. A fake OPA shows a disagreement; test/opa/console-playground.test.ts
// runs a real one.
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminKey, signIn, type ConsoleClient } from '../../support/console.ts';
import { allowed, denied, PLAYGROUND_MANIFESTS, tryIt } from '../../support/console-rule.ts';
import { API_KEY, BASE_MANIFESTS, startTestService, type TestService } from '../../support/service.ts';

const PAGE = '/console/t/acme/rules/team-documents';

describe('the rule page over HTTP', () => {
  let t: TestService;
  let tenant: ConsoleClient;
  let admin: ConsoleClient;
  beforeAll(async () => {
    t = await startTestService({ manifests: PLAYGROUND_MANIFESTS });
    tenant = await signIn(t, API_KEY);
    admin = await signIn(t, await adminKey(t));
  });
  afterAll(() => t.stop());

  it('shows the rule, where it is bundled, and its current Rego', async () => {
    const r = await tenant.get(PAGE);
    expect(r.status).toBe(200);
    expect(r.text).toContain('<pre>principal.team == resource.team</pre>');
    expect(r.text).toContain('<a href="/console/t/acme/bundles/docs">docs</a>');
    expect(r.text).toContain('<span class="badge ok">Current</span>');
    expect(r.text).toMatch(/<pre aria-label="Rego of rule team-documents" tabindex="0"><code>[^<]*principal\.team/);
  });

  it('renders a description holding a script as text', async () => {
    const r = await tenant.get('/console/t/acme/rules/xss-note');
    expect(r.status).toBe(200);
    expect(r.text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(r.text).not.toContain('<script>alert(1)');
  });

  it("refuses Regenerate to a tenant's key, and to the admin without the CSRF token", async () => {
    const byTenant = await tenant.post(`${PAGE}/regenerate`, {});
    expect(byTenant.status).toBe(403);
    expect(byTenant.text).toContain('Admin only');
    const noCsrf = await admin.post(`${PAGE}/regenerate`, { _csrf: 'forged' });
    expect(noCsrf.status).toBe(403);
    expect(noCsrf.text).toContain('This form is out of date or came from another site');
  });

  it('decides an allowed request as the API does, naming the deciding rule', async () => {
    const r = await tryIt(tenant, allowed);
    expect(r.status).toBe(200);
    expect(r.text).toContain('Decision <span class="badge ok">ALLOW</span>');
    expect(r.text).toContain('Decided by rule <a href="/console/t/acme/rules/team-documents">team-documents</a>');
    expect(r.text).toContain('<strong>This rule:</strong> It allowed the request');
    expect(r.text).toContain('No OPA is configured');
    const api = (await (await t.decide(allowed)).json()) as { decision: string };
    expect(api.decision).toBe('allow');
  });

  it('takes the AuthZEN shape too, and merges the directory in', async () => {
    const r = await tryIt(tenant, { subject: { type: 'user', id: 'bob' }, action: { name: 'write' }, resource: allowed.resource });
    expect(r.text).toContain('Decision <span class="badge ok">ALLOW</span>');
  });

  it('denies with what the candidate missed, and says what this rule did', async () => {
    const r = await tryIt(tenant, denied);
    expect(r.status).toBe(200);
    expect(r.text).toContain('Decision <span class="badge bad">DENY</span>');
    expect(r.text).toContain('<li>Rule acme/team-documents did not match: its condition principal.team == resource.team is false</li>');
    expect(r.text).toContain('<strong>This rule:</strong> Rule acme/team-documents did not match');
  });

  it('says what a rule not in force would do were it Enforced', async () => {
    const r = await tenant.post('/console/t/acme/rules/xss-note/playground', {
      request: JSON.stringify({ ...allowed, resource: { type: 'note', id: 'n1' } }),
    });
    expect(r.text).toContain('Decision <span class="badge bad">DENY</span>');
    expect(r.text).toMatch(
      /<strong>This rule:<\/strong> It is Draft, so it does not decide. Were it Enforced,\s+it would allow this request./,
    );
  });

  it('keeps bad JSON in the textarea and says why beside it, with 422', async () => {
    const typed = '{"subject": {"type": "user", <oops>';
    const r = await tryIt(tenant, typed);
    expect(r.status).toBe(422);
    expect(r.text).toContain(
      'aria-invalid="true" aria-describedby="pg-error">\n{&quot;subject&quot;: {&quot;type&quot;: &quot;user&quot;, &lt;oops&gt;</textarea>',
    );
    expect(r.text).toMatch(/<div id="pg-error" class="notice bad" role="alert">Not JSON: /);
  });

  it('refuses, with 422, a request the API would refuse, in its words', async () => {
    const r = await tryIt(tenant, { subject: allowed.subject, action: 'read' });
    expect(r.status).toBe(422);
    expect(r.text).toContain('POST /authorization would refuse it (400): resource is required');
    const api = await t.decide({ subject: allowed.subject, action: 'read' });
    expect(api.status).toBe(400);
  });

  it('refuses a playground post without the CSRF token', async () => {
    const r = await tenant.post(`${PAGE}/playground`, { request: JSON.stringify(allowed), _csrf: 'forged' });
    expect(r.status).toBe(403);
  });

  it('says STALE while an invalid edit leaves the last good translation in force', async () => {
    await t.write('rules.yaml', (BASE_MANIFESTS['rules.yaml'] as string).replace('principal.team == resource.team', 'principal.team =='));
    const r = await tenant.get(PAGE);
    expect(r.text).toContain('<span class="badge warn">STALE</span>');
    expect(r.text).toMatch(/generation 2 cannot be translated: .*generation 1 stays in force/);
    expect(r.text).toContain('principal.team');
    // The playground still decides with the rule in force.
    expect((await tryIt(tenant, allowed)).text).toContain('Decided by rule');
  });
});

/** A fake opa: `version` prints one; `eval` answers allow to every input. */
const FAKE_OPA = `#!${process.execPath}
if (process.argv[2] === 'version') { process.stdout.write('Version: 9.9.9-fake\\n'); process.exit(0); }
let text = '';
process.stdin.on('data', (c) => { text += c; });
process.stdin.on('end', () => {
  const value = JSON.parse(text).map(() => true);
  process.stdout.write(JSON.stringify({ result: [{ expressions: [{ value }] }] }));
});
`;

describe('the playground with an OPA that decides otherwise', () => {
  let t: TestService;
  let tmp = '';
  beforeAll(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'acl-console-opa-'));
    const opa = join(tmp, 'opa');
    await writeFile(opa, FAKE_OPA);
    await chmod(opa, 0o755);
    t = await startTestService({ manifests: PLAYGROUND_MANIFESTS, config: { opa } });
  });
  afterAll(async () => {
    await t.stop();
    await rm(tmp, { recursive: true, force: true });
  });

  it('shows the disagreement on each bundle carrying the rule', async () => {
    const r = await tryIt(await signIn(t, API_KEY), denied);
    expect(r.text).toContain('OPA 9.9.9-fake disagrees with the service on docs, internal.');
    expect(r.text).toContain('<span class="badge bad">DISAGREES</span>');
  });

  it("does not compare a bundle whose entityTypes leave the request's types out", async () => {
    const r = await tryIt(await signIn(t, API_KEY), { ...denied, resource: { type: 'folder', id: 'f' } });
    expect(r.text).toContain("not compared: the bundle's entityTypes leave out this request's types");
    expect(r.text).toContain('OPA 9.9.9-fake disagrees with the service on internal.');
  });
});
