import { request as httpsRequest } from 'node:https';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BASE_MANIFESTS, startTestService, type TestService } from '../support/service.ts';

let t: TestService;
afterEach(async () => {
  await t.stop();
});

const RULES = BASE_MANIFESTS['rules.yaml'] as string;
const bearer = (token: string): Record<string, string> => ({ Authorization: `Bearer ${token}` });

async function currentEtag(token: string): Promise<string> {
  return (await t.bundle('acme', 'gateways', 'docs', bearer(token))).headers.get('etag') ?? '';
}

/** A long poll with `token` and the current ETag, once the service holds it. */
async function heldPoll(token: string, waitS = 20): Promise<{ etag: string; held: Promise<Response> }> {
  const etag = await currentEtag(token);
  const held = t.bundle('acme', 'gateways', 'docs', { ...bearer(token), 'If-None-Match': etag, Prefer: `wait=${waitS}` });
  await expect.poll(() => t.service.longPolls.size()).toBe(1);
  return { etag, held };
}

/** connectors.yaml with acme/gateways's spec replaced (YAML flow text). */
const gatewaysSpec = (spec: string): string =>
  (BASE_MANIFESTS['connectors.yaml'] as string).replace(
    'name: gateways, namespace: acme }\nspec: {}',
    `name: gateways, namespace: acme }\nspec: ${spec}`,
  );

describe('long polling (Prefer: wait=N)', () => {
  it('holds a request whose ETag is current and answers 200 within 100 ms of a change', async () => {
    t = await startTestService();
    const token = await t.token('acme', 'gateways');
    const { etag, held } = await heldPoll(token);
    let changedAt = 0;
    t.service.store.onBundleChange(() => {
      changedAt = performance.now();
    });
    await t.write('rules.yaml', RULES.replace('[read, write]', '[read]'));
    const res = await held;
    const answeredAfterMs = performance.now() - changedAt;
    expect(res.status).toBe(200);
    expect(res.headers.get('etag')).not.toBe(etag);
    expect(res.headers.get('content-type')).toBe('application/vnd.openpolicyagent.bundles');
    expect(answeredAfterMs).toBeLessThan(100);
    expect(t.service.longPolls.size()).toBe(0);
  });

  it('answers 304 at the deadline when nothing changed, as OPA sends it (modes=long-polling;wait=N)', async () => {
    t = await startTestService();
    const token = await t.token('acme', 'gateways');
    const etag = await currentEtag(token);
    const started = performance.now();
    const res = await t.bundle('acme', 'gateways', 'docs', {
      ...bearer(token),
      'If-None-Match': etag,
      Prefer: 'modes=long-polling;wait=1',
    });
    const elapsed = performance.now() - started;
    expect(res.status).toBe(304);
    expect(res.headers.get('content-type')).toBe('application/vnd.openpolicyagent.bundles');
    expect(elapsed).toBeGreaterThanOrEqual(950);
    expect(elapsed).toBeLessThan(1500);
  });

  it('caps the wait at --max-long-poll-seconds', async () => {
    t = await startTestService({ maxLongPollSeconds: 1 });
    const token = await t.token('acme', 'gateways');
    const started = performance.now();
    const res = await t.bundle('acme', 'gateways', 'docs', {
      ...bearer(token),
      'If-None-Match': await currentEtag(token),
      Prefer: 'wait=600',
    });
    expect(res.status).toBe(304);
    expect(performance.now() - started).toBeLessThan(1500);
  });

  it('answers at once when the ETag is stale, or when the token is wrong', async () => {
    t = await startTestService();
    const token = await t.token('acme', 'gateways');
    expect((await t.bundle('acme', 'gateways', 'docs', { ...bearer(token), 'If-None-Match': '"old"', Prefer: 'wait=30' })).status).toBe(
      200,
    );
    expect((await t.bundle('acme', 'gateways', 'docs', { ...bearer('agent_x'), 'If-None-Match': '"old"', Prefer: 'wait=30' })).status).toBe(
      401,
    );
    expect(t.service.longPolls.size()).toBe(0);
  });

  it('answers a held request 304 when its token is rotated meanwhile, so OPA asks again at once with its token file; the old token then gets 401', async () => {
    t = await startTestService();
    const token = await t.token('acme', 'gateways');
    const { etag, held } = await heldPoll(token);
    await t.write('connectors.yaml', gatewaysSpec('{ tokenRotation: 1 }'));
    const released = await held;
    expect(released.status).toBe(304);
    expect(released.headers.get('etag')).toBe(etag);
    expect((await t.bundle('acme', 'gateways', 'docs', { ...bearer(token), 'If-None-Match': etag, Prefer: 'wait=20' })).status).toBe(401);
    const { held: renewed } = await heldPoll(await t.token('acme', 'gateways'));
    await t.write('rules.yaml', RULES.replace('[read, write]', '[read]'));
    expect((await renewed).status).toBe(200);
  });

  it('answers a held request 401 when its token is rotated and the bundle changed in the same moment', async () => {
    t = await startTestService();
    const { held } = await heldPoll(await t.token('acme', 'gateways'));
    await writeFile(join(t.manifests, 'connectors.yaml'), gatewaysSpec('{ tokenRotation: 1 }'));
    await writeFile(join(t.manifests, 'rules.yaml'), RULES.replace('[read, write]', '[read]'));
    await t.settle();
    expect((await held).status).toBe(401);
  });

  it.each([
    ['401 when its token is revoked', '{ revoked: true }', 401],
    ['403 when its connector is made Inactive', '{ active: false }', 403],
  ])('answers a held request %s meanwhile, at once', async (_name, spec, code) => {
    t = await startTestService();
    const { held } = await heldPoll(await t.token('acme', 'gateways'));
    await t.write('connectors.yaml', gatewaysSpec(spec));
    expect((await held).status).toBe(code);
    expect(t.service.longPolls.size()).toBe(0);
  });

  it('forgets a held request whose client went away', async () => {
    t = await startTestService();
    const token = await t.token('acme', 'gateways');
    const { connect } = await import('node:net');
    const url = new URL(t.url);
    const socket = connect(Number(url.port), url.hostname);
    socket.write(
      `GET /acme/connectors/policyagent/gateways/bundles/docs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nIf-None-Match: ${await currentEtag(token)}\r\nPrefer: wait=20\r\n\r\n`,
    );
    await expect.poll(() => t.service.longPolls.size()).toBe(1);
    socket.destroy();
    await expect.poll(() => t.service.longPolls.size()).toBe(0);
  });

  it('answers held requests with 304 on shutdown', async () => {
    t = await startTestService();
    const { held } = await heldPoll(await t.token('acme', 'gateways'), 60);
    const stopped = t.stop();
    expect((await held).status).toBe(304);
    await stopped;
  });
});

describe('operations', () => {
  it('serves health, readiness and metrics on the ops listener', async () => {
    t = await startTestService();
    expect(await (await t.ops('/healthz')).text()).toBe('ok\n');
    expect((await t.ops('/readyz')).status).toBe(200);
    const metrics = await t.ops('/metrics');
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await metrics.text();
    expect(text).toMatch(/acl_objects\{kind="Rule",phase="Enforced"\} 1/);
    expect(text).toMatch(/acl_reconcile_total\{kind="Bundle",result="ok"\} [1-9]/);
    expect(text).toMatch(/acl_long_polls_held 0/);
  });

  it('serves HTTPS with the self-signed certificate it generates in the state folder', async () => {
    t = await startTestService({ tls: { mode: 'self-signed' } });
    expect(t.service.apiUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const ca = await readFile(t.service.caFile ?? '', 'utf8');
    const url = new URL(`${t.service.apiUrl}/acme/connectors/policyagent/gateways/bundles/docs`);
    const token = await t.token('acme', 'gateways');
    for (const host of ['localhost', '127.0.0.1']) {
      const status = await new Promise<number>((resolve, reject) => {
        const req = httpsRequest({ host, port: url.port, path: url.pathname, ca, headers: bearer(token) }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
      });
      expect(status, host).toBe(200);
    }
  });
});
