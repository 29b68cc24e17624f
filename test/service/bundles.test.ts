import { tarNames } from '../support/tar.ts';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { API_KEY, BASE_MANIFESTS, GLOBEX_MANIFEST, startTestService, type TestService } from '../support/service.ts';

let t: TestService;
beforeEach(async () => {
  t = await startTestService();
});
afterEach(async () => {
  await t.stop();
});

const CONNECTORS = BASE_MANIFESTS['connectors.yaml'] as string;
const withGateways = (spec: string): string =>
  CONNECTORS.replace(
    'metadata: { name: gateways, namespace: acme }\nspec: {}',
    `metadata: { name: gateways, namespace: acme }\nspec: ${spec}`,
  );
const bearer = (token: string): Record<string, string> => ({ Authorization: `Bearer ${token}` });

describe('GET /{tenant}/connectors/policyagent/{connector}/bundles/{bundle}', () => {
  it('serves the tar.gz with its ETag and the OPA bundle content type', async () => {
    const res = await t.bundle('acme', 'gateways', 'docs', bearer(await t.token('acme', 'gateways')));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/vnd.openpolicyagent.bundles');
    const etag = res.headers.get('etag') ?? '';
    expect(etag).toMatch(/^"[0-9a-f]{64}"$/);
    const bytes = new Uint8Array(await res.arrayBuffer());
    // Signed by default: the signature over the other two files comes last.
    expect(tarNames(bytes)).toEqual(['.manifest', 'policy.rego', '.signatures.json']);
    expect(etag).toBe(t.service.store.snapshot().tenants.get('acme')?.bundles.get('docs')?.built.etag);
  });

  it('answers 304 with no body, the ETag and the bundle content type when If-None-Match matches', async () => {
    const token = await t.token('acme', 'gateways');
    const etag = (await t.bundle('acme', 'gateways', 'docs', bearer(token))).headers.get('etag') ?? '';
    for (const inm of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const res = await t.bundle('acme', 'gateways', 'docs', { ...bearer(token), 'If-None-Match': inm });
      expect(res.status, inm).toBe(304);
      expect(await res.text()).toBe('');
      expect(res.headers.get('etag')).toBe(etag);
      expect(res.headers.get('content-type')).toBe('application/vnd.openpolicyagent.bundles');
    }
    expect((await t.bundle('acme', 'gateways', 'docs', { ...bearer(token), 'If-None-Match': '"stale"' })).status).toBe(200);
  });

  it.each([
    ['no token', {}],
    ['an unknown agent_ token', { Authorization: 'Bearer agent_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }],
    ['the API key instead of a connector token', { Authorization: `Bearer ${API_KEY}` }],
    ['a Basic credential', { Authorization: 'Basic Zm9vOmJhcg==' }],
  ])('answers 401 with WWW-Authenticate: Bearer for %s', async (_name, headers) => {
    const res = await t.bundle('acme', 'gateways', 'docs', headers);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer /);
    expect(await res.json()).toEqual({ error: { status: 401, message: expect.any(String) } });
  });

  it('answers 404 for an unknown tenant, connector or bundle, and for a bundle of another connector', async () => {
    const token = await t.token('acme', 'gateways');
    expect((await t.bundle('globex', 'gateways', 'docs', bearer(token))).status).toBe(404);
    expect((await t.bundle('acme', 'nobody', 'docs', bearer(token))).status).toBe(404);
    expect((await t.bundle('acme', 'gateways', 'nothing', bearer(token))).status).toBe(404);
    expect((await t.bundle('acme', 'gateways', 'internal', bearer(token))).status).toBe(404);
  });

  it("never opens another connector's bundles with a token", async () => {
    const gateways = await t.token('acme', 'gateways');
    const backends = await t.token('acme', 'backends');
    expect((await t.bundle('acme', 'backends', 'internal', bearer(gateways))).status).toBe(404);
    expect((await t.bundle('acme', 'gateways', 'docs', bearer(backends))).status).toBe(404);
    expect((await t.bundle('acme', 'backends', 'internal', bearer(backends))).status).toBe(200);
  });

  it("never opens another tenant's bundles with a token", async () => {
    await t.write('globex.yaml', GLOBEX_MANIFEST);
    const acme = await t.token('acme', 'gateways');
    const globex = await t.token('globex', 'gateways');
    expect(globex).not.toBe(acme);
    expect((await t.bundle('globex', 'gateways', 'docs', bearer(acme))).status).toBe(404);
    expect((await t.bundle('acme', 'gateways', 'docs', bearer(globex))).status).toBe(404);
    expect((await t.bundle('globex', 'gateways', 'docs', bearer(globex))).status).toBe(200);
  });

  it('answers 405 for methods other than GET and HEAD, and HEAD like GET without a body', async () => {
    const token = await t.token('acme', 'gateways');
    const head = await t.api('/acme/connectors/policyagent/gateways/bundles/docs', { method: 'HEAD', headers: bearer(token) });
    expect(head.status).toBe(200);
    expect(head.headers.get('etag')).toMatch(/^"/);
    const post = await t.api('/acme/connectors/policyagent/gateways/bundles/docs', { method: 'POST', headers: bearer(token) });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
  });

  it("records the connector's requests in the sync activity and serves it to the tenant API key", async () => {
    const token = await t.token('acme', 'gateways');
    const first = await t.bundle('acme', 'gateways', 'docs', { ...bearer(token), 'User-Agent': 'Open Policy Agent/0.61.0 (linux, amd64)' });
    await t.bundle('acme', 'gateways', 'docs', { ...bearer(token), 'If-None-Match': first.headers.get('etag') ?? '' });
    const res = await t.api('/acme/connectors/policyagent/gateways/bundles/docs/activity', { headers: bearer(API_KEY) });
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      revision: number;
      lastSync: string;
      records: { status: number; revision: number; clientIp: string; userAgent: string; time: string }[];
    };
    expect(body.records.map((r) => r.status)).toEqual([304, 200]);
    expect(body.records[1]).toMatchObject({
      revision: 1,
      userAgent: 'Open Policy Agent/0.61.0 (linux, amd64)',
      clientIp: expect.stringMatching(/127\.0\.0\.1/),
    });
    expect(body.lastSync).toBe(body.records[0]?.time);
    expect((await t.api('/acme/connectors/policyagent/gateways/bundles/docs/activity', { headers: bearer(token) })).status).toBe(401);
  });

  it('keeps requests that did not authenticate as the connector out of the sync activity, and counts them', async () => {
    const token = await t.token('acme', 'gateways');
    await t.bundle('acme', 'gateways', 'docs', bearer(token));
    // A flood of anonymous, wrong-token and other-connector requests cannot push the OPA's record out.
    for (let i = 0; i < 150; i++) {
      const headers = i % 3 === 0 ? {} : i % 3 === 1 ? bearer(`agent_wrong${i}`) : bearer(API_KEY);
      expect((await t.bundle('acme', 'gateways', 'docs', headers)).status).toBe(401);
    }
    const res = await t.api('/acme/connectors/policyagent/gateways/bundles/docs/activity', { headers: bearer(API_KEY) });
    const body = (await res.json()) as { records: { status: number }[] };
    expect(body.records.map((r) => r.status)).toEqual([200]);
    const metrics = await (await fetch(`${t.service.opsUrl}/metrics`)).text();
    expect(metrics).toMatch(/acl_bundle_requests_unrecorded_total\{code="401"\} 150/);
  });

  it('writes the sync activity to the state folder and the last sync into bundle status', async () => {
    const token = await t.token('acme', 'gateways');
    await t.bundle('acme', 'gateways', 'docs', bearer(token));
    await t.service.flushActivity();
    const records = (await t.service.state.activity()).find((a) => a.bundle === 'docs')?.records ?? [];
    expect(records.map((r) => r.status)).toEqual([200]);
    expect(t.service.state.object('Bundle', 'acme', 'docs')?.status?.['lastSync']).toBe(records[0]?.time);
  });

  it('counts bundle requests by status and exports revision and size per bundle', async () => {
    const token = await t.token('acme', 'gateways');
    await t.bundle('acme', 'gateways', 'docs', bearer(token));
    await t.bundle('acme', 'gateways', 'docs', {});
    const text = await (await t.ops('/metrics')).text();
    expect(text).toMatch(/acl_bundle_requests_total\{code="200"\} 1/);
    expect(text).toMatch(/acl_bundle_requests_total\{code="401"\} 1/);
    expect(text).toMatch(/acl_bundle_revision\{tenant="acme",bundle="docs"\} 1/);
    expect(text).toMatch(/acl_bundle_size_bytes\{tenant="acme",bundle="docs"\} [1-9]/);
  });
});

describe('connector tokens', () => {
  it('are agent_ tokens kept in a Kubernetes-shaped Secret in the state folder', async () => {
    expect(await t.token('acme', 'gateways')).toMatch(/^agent_[A-Za-z0-9_-]{43}$/);
    const status = t.service.state.object('Connector', 'acme', 'gateways')?.status;
    expect(status).toMatchObject({ phase: 'Active', tokenSecretName: 'gateways-token', bundles: ['docs'] });
  });

  it('rotate when tokenRotation rises: the old token is refused at once, the new one works', async () => {
    const old = await t.token('acme', 'gateways');
    await t.write('connectors.yaml', withGateways('{ tokenRotation: 1 }'));
    const fresh = await t.token('acme', 'gateways');
    expect(fresh).not.toBe(old);
    expect((await t.bundle('acme', 'gateways', 'docs', bearer(old))).status).toBe(401);
    expect((await t.bundle('acme', 'gateways', 'docs', bearer(fresh))).status).toBe(200);
  });

  it('are invalid while revoked (401, Inactive), and a new one is issued when revoked goes back to false', async () => {
    const old = await t.token('acme', 'gateways');
    await t.write('connectors.yaml', withGateways('{ revoked: true }'));
    expect((await t.bundle('acme', 'gateways', 'docs', bearer(old))).status).toBe(401);
    expect(t.service.state.object('Connector', 'acme', 'gateways')?.status).toMatchObject({ phase: 'Inactive' });
    await expect(t.token('acme', 'gateways')).rejects.toThrow(/ENOENT/);
    await t.write('connectors.yaml', withGateways('{ revoked: false }'));
    const fresh = await t.token('acme', 'gateways');
    expect(fresh).not.toBe(old);
    expect((await t.bundle('acme', 'gateways', 'docs', bearer(old))).status).toBe(401);
    expect((await t.bundle('acme', 'gateways', 'docs', bearer(fresh))).status).toBe(200);
    expect(t.service.state.object('Connector', 'acme', 'gateways')?.status).toMatchObject({ phase: 'Active' });
  });

  it('answer 403 to a valid token while the connector is Inactive, and work again when it is active', async () => {
    const token = await t.token('acme', 'gateways');
    await t.write('connectors.yaml', withGateways('{ active: false }'));
    const res = await t.bundle('acme', 'gateways', 'docs', bearer(token));
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/Inactive/);
    await t.write('connectors.yaml', withGateways('{ active: true }'));
    expect(await t.token('acme', 'gateways')).toBe(token);
    expect((await t.bundle('acme', 'gateways', 'docs', bearer(token))).status).toBe(200);
  });

  it('disappear with their connector', async () => {
    const token = await t.token('acme', 'gateways');
    await t.write(
      'connectors.yaml',
      CONNECTORS.split('---')
        .filter((d) => !d.includes('name: gateways,'))
        .join('---'),
    );
    expect((await t.bundle('acme', 'gateways', 'docs', bearer(token))).status).toBe(401);
    await expect(t.token('acme', 'gateways')).rejects.toThrow(/ENOENT/);
  });
});
