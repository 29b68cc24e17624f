// OPA's receivers (POST .../status and .../logs) against what an adversary sends (issue 23): a gzip
// of a few kilobytes that inflates to JSON nested two million deep or a million wide, and a flood of
// reports and uploads made with a connector token that was rotated out. The service runs in this
// process, so the event loop measured here is the one that answers decisions.
// test/timing/receivers.test.ts floods a real service process started with the Deployment's heap flag.
import { connect, type Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { decisionEvent, statusReport } from '../support/reports.ts';
import { API_KEY, BASE_MANIFESTS, startTestService, type TestService } from '../support/service.ts';

let t: TestService;
afterEach(async () => {
  await t?.stop();
});

const CONNECTOR = '/acme/connectors/policyagent/gateways';
const ROTATED = (BASE_MANIFESTS['connectors.yaml'] as string).replace(
  'metadata: { name: gateways, namespace: acme }\nspec: {}',
  'metadata: { name: gateways, namespace: acme }\nspec: { tokenRotation: 1 }',
);

/** 4,000,000 bytes once inflated, 3.9 KB as sent: the finding's body. */
const DEEP = gzipSync(`${'['.repeat(2_000_000)}${']'.repeat(2_000_000)}`);
/** A million empty arrays in one: 3,000,004 bytes inflated. */
const WIDE = gzipSync(`[${'[],'.repeat(1_000_000)}[]]`);

function post(endpoint: 'status' | 'logs', token: string, body: Uint8Array | string, gzip: boolean): Promise<Response> {
  return t.api(`${CONNECTOR}/${endpoint}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}`, ...(gzip ? { 'Content-Encoding': 'gzip' } : {}) },
    body,
  });
}

const metric = async (name: string): Promise<string[]> =>
  (await (await t.ops('/metrics')).text()).split('\n').filter((l) => l.startsWith(name));

const readJson = async (path: string): Promise<Record<string, unknown>> =>
  (await (await t.api(path, { headers: { Authorization: `Bearer ${API_KEY}` } })).json()) as Record<string, unknown>;

/** Runs `n` calls, `width` at a time. */
async function inParallel<T>(n: number, width: number, call: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let from = 0; from < n; from += width)
    out.push(...(await Promise.all(Array.from({ length: Math.min(width, n - from) }, (_, k) => call(from + k)))));
  return out;
}

describe('an upload nested millions deep or wide', () => {
  // How long the event loop is held and how much memory it takes are measured where time is: the
  // timing tier (test/timing/receivers.test.ts: a real process, decisions timed from another, 1 to
  // 16 such uploads at once). Measured here, inside a parallel suite, they failed under load.
  it('is answered with a 4xx that says why, and the receiver goes on', async () => {
    t = await startTestService();
    const token = await t.token('acme', 'gateways');
    // The receivers' own start-up (a thread, its modules) is not what is measured.
    expect((await post('status', token, JSON.stringify(statusReport('warm', { docs: { revision: '1' } })), false)).status).toBe(200);
    expect((await post('logs', token, gzipSync(JSON.stringify([decisionEvent(1)])), true)).status).toBe(200);
    const answers: [string, number, string][] = [];
    for (const endpoint of ['status', 'logs'] as const)
      for (const [shape, body] of [
        ['deep', DEEP],
        ['wide', WIDE],
      ] as const)
        for (let i = 0; i < 3; i++) {
          const res = await post(endpoint, token, body, true);
          const { error } = (await res.json()) as { error: { message: string } };
          answers.push([`${endpoint} ${shape}`, res.status, error.message]);
        }
    for (const [what, status, message] of answers) {
      if (what.endsWith('deep')) {
        expect([what, status]).toEqual([what, 400]);
        expect(message).toMatch(/nested deeper than 10002 levels/);
      } else {
        expect([what, status]).toEqual([what, 413]);
        expect(message).toMatch(/more than 262144 arrays and objects/);
      }
    }
    expect(await metric('acl_agent_status_reports_total{outcome="bad_request"}')).toEqual([
      'acl_agent_status_reports_total{outcome="bad_request"} 3',
    ]);
    // Still a receiver: the next report is recorded.
    expect((await post('status', token, JSON.stringify(statusReport('after', { docs: { revision: '1' } })), false)).status).toBe(200);
  });
});

describe('a token rotated out of its connector', () => {
  it('writes nothing: 400 reports and 400 uploads with fresh agent ids leave agents, decisions, activity and the real agent alone', async () => {
    t = await startTestService({ config: { maxAgents: 300 } });
    const old = await t.token('acme', 'gateways');
    expect((await post('logs', old, gzipSync(JSON.stringify([decisionEvent(1)])), true)).status).toBe(200);
    expect((await t.bundle('acme', 'gateways', 'docs', { Authorization: `Bearer ${old}` })).status).toBe(200);
    await t.write('connectors.yaml', ROTATED);
    const current = await t.token('acme', 'gateways');
    expect(current).not.toBe(old);
    expect((await post('status', current, JSON.stringify(statusReport('real', { docs: { revision: '1' } })), false)).status).toBe(200);
    const decisionsBefore = await readJson(`${CONNECTOR}/bundles/docs/decisions`);
    const activityBefore = await readJson(`${CONNECTOR}/bundles/docs/activity`);

    const reports = await inParallel(400, 16, (i) =>
      post(
        'status',
        old,
        JSON.stringify(
          statusReport(`fake-${i}`, { docs: { revision: '1', code: 'bundle_error', message: 'Unauthorized', httpCode: 401 } }),
        ),
        false,
      ),
    );
    const uploads = await inParallel(400, 16, (i) =>
      post('logs', old, gzipSync(JSON.stringify([decisionEvent(i, { labels: { id: `fake-${i}`, version: '1.1.0' } })])), true),
    );
    expect(new Set(reports.map((r) => r.status))).toEqual(new Set([401]));
    expect(new Set(uploads.map((r) => r.status))).toEqual(new Set([401]));

    const agents = (await readJson(`${CONNECTOR}/bundles/docs/agents`)) as { list: { id: string; state: string }[] };
    expect(agents.list.map((a) => [a.id, a.state])).toEqual([['real', 'current']]);
    expect(await readJson(`${CONNECTOR}/bundles/docs/decisions`)).toEqual(decisionsBefore);
    expect(await readJson(`${CONNECTOR}/bundles/docs/activity`)).toEqual(activityBefore);
    expect(await metric('acl_agents_evicted_total')).toEqual(['acl_agents_evicted_total 0']);
    expect((await metric('acl_agent_uploads_unrecorded_total')).sort()).toEqual([
      'acl_agent_uploads_unrecorded_total{endpoint="logs",code="401"} 400',
      'acl_agent_uploads_unrecorded_total{endpoint="status",code="401"} 400',
    ]);
  });
});

/** Starts an upload that sends its headers and a little of its body, then waits: it holds a place. */
function holdUpload(token: string, declaredBytes: number): Promise<Socket> {
  const { port } = new URL(t.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => {
      socket.write(
        `POST ${CONNECTOR}/status HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${declaredBytes}\r\n\r\n{"labels":`,
      );
      resolve(socket);
    });
    socket.on('error', reject);
  });
}

/** Sends valid reports until one is answered `status` (the held uploads reached the server), within a deadline. */
async function answeredWith(token: string, status: number): Promise<Response> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const res = await post('status', token, JSON.stringify(statusReport('probe', { docs: { revision: '1' } })), false);
    if (res.status === status || Date.now() > deadline) return res;
    await res.arrayBuffer();
  }
}

describe('a flood of uploads that never finish', () => {
  it('is answered 503 with Retry-After past 256 held at once, and uploads are taken again once they go', async () => {
    t = await startTestService();
    const token = await t.token('acme', 'gateways');
    const held = await Promise.all(Array.from({ length: 256 }, () => holdUpload(token, 1000)));
    const refused = await answeredWith(token, 503);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/too many uploads/);
    for (const socket of held) socket.destroy();
    expect((await answeredWith(token, 200)).status).toBe(200);
    expect(await metric('acl_agent_status_reports_total{outcome="unavailable"}')).not.toEqual([]);
  });

  it('is answered 503 once the bodies held reach 32 MiB, before any more is read', async () => {
    t = await startTestService();
    const token = await t.token('acme', 'gateways');
    const held = await Promise.all(Array.from({ length: 8 }, () => holdUpload(token, 4 * 1024 * 1024)));
    expect((await answeredWith(token, 503)).status).toBe(503);
    for (const socket of held) socket.destroy();
    expect((await answeredWith(token, 200)).status).toBe(200);
  });
});
