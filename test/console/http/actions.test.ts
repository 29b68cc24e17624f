// The console's actions end to end in standalone mode (issue 16): each writes the manifest
// file (comments and layout kept), the folder watcher applies it, and the bundle endpoint answers as
// the action says: Active off → 403, Rotate → the old token 401 and the new one (shown once) 200,
// Revoke → 401, Generate → a new token; Regenerate → the rule is translated again. What a browser shows
// of them is test/console/browser/.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminKey, type ConsoleClient, signIn } from '../../support/console.ts';
import { API_KEY, BASE_MANIFESTS, startTestService, type TestService } from '../../support/service.ts';

const CONNECTORS = `# Connectors of acme: edited by hand and by the console
apiVersion: acl.policyagent.dev/v1alpha1
kind: Connector
metadata:
  name: gateways   # the API gateways
  namespace: acme
spec:
  displayName: "API gateways"
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Connector
metadata: { name: backends, namespace: acme }
spec: {}
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Bundle
metadata: { name: docs, namespace: acme }
spec: { connector: gateways, entityTypes: [document] }
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Bundle
metadata: { name: internal, namespace: acme }
spec: { connector: backends }
`;

let t: TestService;
let admin: ConsoleClient;
const bundle = (token: string) => t.bundle('acme', 'gateways', 'docs', { Authorization: `Bearer ${token}` });
const tokenOf = (page: string) => /id="new-token" type="text" readonly value="([^"]+)"/.exec(page)?.[1];

beforeAll(async () => {
  // The folder watcher applies the console's edits (debounced 20 ms here).
  t = await startTestService({ manifests: { ...BASE_MANIFESTS, 'connectors.yaml': CONNECTORS }, serviceOptions: { debounceMs: 20 } });
  admin = await signIn(t, await adminKey(t));
});
afterAll(() => t.stop());

describe('the Connectors page', () => {
  it("shows each connector's state, token and bundles, and a tenant's key no actions", async () => {
    const page = await (await signIn(t, API_KEY)).get('/console/t/acme/connectors');
    expect(page.status).toBe(200);
    expect(page.text).toContain('API gateways');
    expect(page.text).toContain('gateways-token');
    expect(page.text).toContain('href="/console/t/acme/bundles/docs"');
    expect(page.text).toContain("Actions need the console's admin key");
    expect(page.text).not.toContain('Rotate token');
  });

  it('refuses an action to a tenant key (403), and changes nothing', async () => {
    const tenant = await signIn(t, API_KEY);
    await tenant.get('/console/t/acme/connectors');
    expect((await tenant.post('/console/t/acme/connectors/gateways/revoke', {})).status).toBe(403);
    expect((await bundle(await t.token('acme', 'gateways'))).status).toBe(200);
  });

  it('asks before a destructive action, on a page of its own', async () => {
    const page = await admin.post('/console/t/acme/connectors/gateways/confirm', { action: 'revoke' });
    expect(page.status).toBe(200);
    expect(page.text).toContain('every OPA polling gets 401');
    expect(page.text).toContain('action="/console/t/acme/connectors/gateways/revoke"');
  });

  it('Deactivate: the manifest says active: false, comments kept, and the bundle answers 403; Activate undoes it', async () => {
    const token = await t.token('acme', 'gateways');
    const r = await admin.post('/console/t/acme/connectors/gateways/deactivate', {});
    expect(r.status).toBe(303);
    expect((await bundle(token)).status).toBe(403);
    const file = await readFile(join(t.manifests, 'connectors.yaml'), 'utf8');
    expect(file).toContain('# Connectors of acme: edited by hand and by the console');
    expect(file).toContain('name: gateways   # the API gateways');
    expect(file).toMatch(/active: false/);
    const next = await admin.get('/console/t/acme/connectors');
    expect(next.text).toContain('Connector gateways is Inactive: its bundles answer 403');
    expect((await admin.post('/console/t/acme/connectors/gateways/activate', {})).status).toBe(303);
    expect((await bundle(token)).status).toBe(200);
  });

  it('Rotate: the new token is shown once and opens the bundle; the old one gets 401 at once', async () => {
    const old = await t.token('acme', 'gateways');
    const r = await admin.post('/console/t/acme/connectors/gateways/rotate', {});
    expect(r.status).toBe(200);
    expect(r.headers.get('cache-control')).toBe('no-store');
    const token = tokenOf(r.text);
    expect(token).toMatch(/^agent_/);
    expect(token).not.toBe(old);
    expect((await bundle(old)).status).toBe(401);
    expect((await bundle(token as string)).status).toBe(200);
    // Never again: not on the page, not in the manifest.
    expect((await admin.get('/console/t/acme/connectors')).text).not.toContain(token as string);
    expect(await readFile(join(t.manifests, 'connectors.yaml'), 'utf8')).not.toContain(token as string);
  });

  it('Revoke: every poller gets 401; Generate issues a token that opens the bundle again', async () => {
    const old = await t.token('acme', 'gateways');
    expect((await admin.post('/console/t/acme/connectors/gateways/revoke', {})).status).toBe(303);
    expect((await bundle(old)).status).toBe(401);
    const page = await admin.get('/console/t/acme/connectors');
    expect(page.text).toContain('Revoked: every poller gets 401');
    expect(page.text).toContain('Generate token');
    const r = await admin.post('/console/t/acme/connectors/gateways/generate', {});
    const token = tokenOf(r.text);
    expect(token).toMatch(/^agent_/);
    expect((await bundle(token as string)).status).toBe(200);
  });

  it('refuses Generate on a connector that has a token and Rotate on a revoked one (409), changing nothing', async () => {
    const token = await t.token('acme', 'backends');
    const generate = await admin.post('/console/t/acme/connectors/backends/generate', {});
    expect(generate.status).toBe(409);
    expect(generate.text).not.toContain(token);
    expect((await t.bundle('acme', 'backends', 'internal', { Authorization: `Bearer ${token}` })).status).toBe(200);
    expect((await admin.post('/console/t/acme/connectors/backends/revoke', {})).status).toBe(303);
    expect((await admin.post('/console/t/acme/connectors/backends/rotate', {})).status).toBe(409);
    expect(tokenOf((await admin.post('/console/t/acme/connectors/backends/generate', {})).text)).toMatch(/^agent_/);
  });

  it('answers 404 for a connector that does not exist', async () => {
    expect((await admin.post('/console/t/acme/connectors/nope/rotate', {})).status).toBe(404);
  });
});

/** Polls `probe` until it is true, or fails after `ms` (the folder watcher applies an edit in its own time). */
async function until(what: string, probe: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('Regenerate on the Verify Panel', () => {
  it('writes the annotation into the manifest, and the translation records the new value', async () => {
    const translation = () => {
      const status = t.service.source.get('Rule', 'acme', 'team-documents')?.raw['status'] as
        | { translation?: { regenerate?: string } }
        | undefined;
      return status?.translation;
    };
    const before = translation()?.regenerate;
    const r = await admin.post('/console/t/acme/rules/team-documents/regenerate', {});
    expect(r.status).toBe(303);
    const file = await readFile(join(t.manifests, 'rules.yaml'), 'utf8');
    const value = /acl\.policyagent\.dev\/regenerate: "?([^"\n]+)"?/.exec(file)?.[1];
    expect(value).toBeDefined();
    expect(value).not.toBe(before);
    await until('the translation made for the new value', () => translation()?.regenerate === value);
    const page = await admin.get('/console/t/acme/rules/team-documents');
    expect(page.text).toContain('Regenerate: wrote metadata.annotations');
  });
});
