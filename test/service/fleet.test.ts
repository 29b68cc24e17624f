// OPA's status reports and decision logs, as the service receives them over HTTP: the connector
// token rules of the bundle route, what is recorded and what is refused, Bundle status (agents,
// RolledOut), the recent decisions, and the decision log file with the service's own decisions.
// Reports are built from real OPA uploads (test/fixtures/opa); test/opa/fleet.test.ts runs real OPAs.
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { decisionEvent, statusReport } from '../support/reports.ts';
import {
  API_KEY,
  BASE_MANIFESTS,
  GLOBEX_MANIFEST,
  startTestService,
  type TestService,
  type TestServiceOptions,
} from '../support/service.ts';

const report = statusReport;
const event = (i: number, over: Record<string, unknown> = {}): Record<string, unknown> => decisionEvent(i, over);

let t: TestService;
afterEach(async () => {
  await t?.stop();
});

async function start(options: TestServiceOptions = {}): Promise<TestService> {
  t = await startTestService({
    manifests: { ...BASE_MANIFESTS, 'globex.yaml': GLOBEX_MANIFEST },
    ...options,
    serviceOptions: { agentStatusIntervalMs: 0, ...options.serviceOptions },
  });
  return t;
}

const connectorUrl = (tenant: string, connector: string): string => `/${tenant}/connectors/policyagent/${connector}`;

async function postStatus(
  token: string | undefined,
  body: unknown,
  path = connectorUrl('acme', 'gateways'),
  headers: Record<string, string> = {},
): Promise<Response> {
  return t.api(`${path}/status`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(token === undefined ? {} : { Authorization: `Bearer ${token}` }), ...headers },
    body: typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body),
  });
}

async function postLogs(
  token: string,
  events: unknown,
  path = connectorUrl('acme', 'gateways'),
  options: { gzip?: boolean; headers?: Record<string, string> } = {},
): Promise<Response> {
  const text = typeof events === 'string' ? events : JSON.stringify(events);
  const gzip = options.gzip ?? true;
  return t.api(`${path}/logs`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Authorization: `Bearer ${token}`,
      ...(gzip ? { 'Content-Encoding': 'gzip' } : {}),
      ...options.headers,
    },
    body: gzip ? gzipSync(text) : text,
  });
}

async function readJson(path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await t.api(path, { headers: { Authorization: `Bearer ${API_KEY}` } });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const agentsOf = async (bundle = 'docs', connector = 'gateways') =>
  (await readJson(`${connectorUrl('acme', connector)}/bundles/${bundle}/agents`)).body as {
    agents: { reporting: number; current: number; behind: number; failing: number; rollout: string };
    rolledOut: { status: string; reason: string; message: string };
    list: {
      id: string;
      state: string;
      activeRevision: string | null;
      httpCode: number | null;
      error: { code: string; message: string } | null;
      alsoLoads?: string[];
    }[];
  };

function bundleStatus(name = 'docs'): Record<string, unknown> {
  return (t.service.state.object('Bundle', 'acme', name)?.status ?? {}) as Record<string, unknown>;
}
const rolledOut = (name = 'docs'): Record<string, unknown> | undefined =>
  (bundleStatus(name)['conditions'] as Record<string, unknown>[] | undefined)?.find((c) => c['type'] === 'RolledOut');

/** Waits (with a deadline) until the rate-limited refresh has written Bundle status. */
async function eventually<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await t.service.controller.idle();
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const metric = async (name: string): Promise<string[]> =>
  (await (await t.ops('/metrics')).text()).split('\n').filter((l) => l.startsWith(name));

describe('status reports', () => {
  it('records each OPA of a bundle and writes RolledOut True once every one runs the served revision', async () => {
    await start();
    const token = await t.token('acme', 'gateways');
    const res = await postStatus(token, report('opa-a', { docs: { revision: '1' } }));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ agent: 'opa-a', bundles: ['docs'], ignored: [] });
    expect((await postStatus(token, report('opa-b', { docs: { revision: '1' } }))).status).toBe(200);
    const agents = await agentsOf();
    expect(agents.agents).toEqual({ reporting: 2, current: 2, behind: 0, failing: 0, rollout: '2/2' });
    expect(agents.list.map((a) => [a.id, a.state])).toEqual([
      ['opa-a', 'current'],
      ['opa-b', 'current'],
    ]);
    await eventually('RolledOut True in Bundle status', () => rolledOut()?.['status'] === 'True');
    expect(bundleStatus()['agents']).toEqual({ reporting: 2, current: 2, behind: 0, failing: 0, rollout: '2/2' });
    expect(rolledOut()).toMatchObject({ reason: 'AllAgentsCurrent', message: 'All 2 agent(s) run revision 1' });
    expect(await metric('acl_agent_status_reports_total{outcome="accepted"}')).toEqual([
      'acl_agent_status_reports_total{outcome="accepted"} 2',
    ]);
  });

  it('turns RolledOut False the moment a rule edit publishes a new revision, and True when every agent runs it', async () => {
    await start();
    const token = await t.token('acme', 'gateways');
    for (const id of ['a', 'b', 'c']) await postStatus(token, report(id, { docs: { revision: '1' } }));
    await eventually('RolledOut True', () => rolledOut()?.['status'] === 'True');
    await t.write(
      'rules.yaml',
      (BASE_MANIFESTS['rules.yaml'] as string).replace('actions: [read, write]', 'actions: [read, write, share]'),
    );
    expect(bundleStatus()['revision']).toBe(2);
    expect(rolledOut()).toMatchObject({ status: 'False', reason: 'AgentsBehind' });
    expect(String(rolledOut()?.['message'])).toMatch(/^0 of 3 agent\(s\) run revision 2; 3 behind, 0 failing: a behind \(on revision 1\)/);
    // What an alert on RolledOut False reads (deploy/monitoring/prometheusrule.yaml).
    expect(await metric('acl_bundle_rolled_out{tenant="acme",bundle="docs"')).toEqual([
      'acl_bundle_rolled_out{tenant="acme",bundle="docs",status="True"} 0',
      'acl_bundle_rolled_out{tenant="acme",bundle="docs",status="False"} 1',
      'acl_bundle_rolled_out{tenant="acme",bundle="docs",status="Unknown"} 0',
    ]);
    await postStatus(token, report('a', { docs: { revision: '2' } }));
    await postStatus(token, report('b', { docs: { revision: '2' } }));
    await eventually('2/3', () => (bundleStatus()['agents'] as { rollout?: string } | undefined)?.rollout === '2/3');
    await postStatus(token, report('c', { docs: { revision: '2' } }));
    await eventually('RolledOut True again', () => rolledOut()?.['status'] === 'True');
    expect(bundleStatus()['agents']).toMatchObject({ rollout: '3/3' });
    expect(await metric('acl_bundle_rolled_out{tenant="acme",bundle="docs",status="True"}')).toEqual([
      'acl_bundle_rolled_out{tenant="acme",bundle="docs",status="True"} 1',
    ]);
    // Each agent moved from a revision it ran to the one published: three propagation times.
    expect(await metric('acl_bundle_propagation_seconds_count')).toEqual(['acl_bundle_propagation_seconds_count 3']);
  });

  it('shows an agent failing with the code and message of its last download, and names it in RolledOut', async () => {
    await start();
    const token = await t.token('acme', 'gateways');
    await postStatus(token, report('good', { docs: { revision: '1' } }));
    await postStatus(
      token,
      report('bad', { docs: { revision: '1', code: 'bundle_error', message: 'server replied with Unauthorized', httpCode: 401 } }),
    );
    const agents = await agentsOf();
    expect(agents.list[0]).toMatchObject({
      id: 'bad',
      state: 'failing',
      httpCode: 401,
      error: { code: 'bundle_error', message: 'server replied with Unauthorized' },
    });
    await eventually('RolledOut False', () => rolledOut()?.['reason'] === 'AgentsFailing');
    expect(rolledOut()?.['message']).toBe(
      '1 of 2 agent(s) run revision 1; 0 behind, 1 failing: bad failing (401: server replied with Unauthorized; runs revision 1)',
    );
  });

  it('answers an OPA still presenting a rotated token 401 like the bundle route, and records nothing of what it says', async () => {
    await start();
    const old = await t.token('acme', 'gateways');
    await postStatus(old, report('stale', { docs: { revision: '1' } }));
    await t.write(
      'connectors.yaml',
      (BASE_MANIFESTS['connectors.yaml'] as string).replace(
        'metadata: { name: gateways, namespace: acme }\nspec: {}',
        'metadata: { name: gateways, namespace: acme }\nspec: { tokenRotation: 1 }',
      ),
    );
    expect(await t.token('acme', 'gateways')).not.toBe(old);
    const res = await postStatus(
      old,
      report('stale', { docs: { revision: '1', code: 'bundle_error', message: 'server replied with Unauthorized', httpCode: 401 } }),
    );
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(await res.json()).toEqual({ error: { status: 401, message: 'the token is not valid (unknown, rotated or revoked)' } });
    // What its last accepted report said stands, until it reports with the new token or falls silent.
    expect((await agentsOf()).list).toMatchObject([{ id: 'stale', state: 'current', httpCode: null, error: null }]);
    const unknown = await postStatus(`agent_${'x'.repeat(43)}`, report('stranger', { docs: { revision: '1' } }));
    expect(unknown.status).toBe(401);
    expect((await agentsOf()).list.map((a) => a.id)).toEqual(['stale']);
    expect(await metric('acl_agent_uploads_unrecorded_total')).toEqual([
      'acl_agent_uploads_unrecorded_total{endpoint="status",code="401"} 2',
    ]);
  });

  it('records an OPA of an Inactive connector as failing 403, answering it 403', async () => {
    await start();
    const token = await t.token('acme', 'gateways');
    await t.write(
      'connectors.yaml',
      (BASE_MANIFESTS['connectors.yaml'] as string).replace(
        'metadata: { name: gateways, namespace: acme }\nspec: {}',
        'metadata: { name: gateways, namespace: acme }\nspec: { active: false }',
      ),
    );
    const res = await postStatus(token, report('idle', { docs: { revision: '1' } }));
    expect(res.status).toBe(403);
    expect((await agentsOf()).list).toMatchObject([{ id: 'idle', state: 'failing', httpCode: 403, error: { code: 'connector_inactive' } }]);
  });

  it('flags an OPA configured with two bundles of the connector: only one can activate', async () => {
    await start({
      manifests: {
        ...BASE_MANIFESTS,
        'more.yaml':
          'apiVersion: acl.policyagent.dev/v1alpha1\nkind: Bundle\nmetadata: { name: more, namespace: acme }\nspec: { connector: gateways }\n',
      },
    });
    const token = await t.token('acme', 'gateways');
    const res = await postStatus(
      token,
      report('both', {
        docs: { revision: '1' },
        more: { code: 'bundle_error', message: 'detected overlapping roots in bundle manifest with: [docs]' },
      }),
    );
    expect(await res.json()).toEqual({ agent: 'both', bundles: ['docs', 'more'], ignored: [] });
    const agents = await agentsOf();
    expect(agents.list).toMatchObject([{ id: 'both', state: 'failing', alsoLoads: ['more'] }]);
    await eventually('RolledOut says why', () => String(rolledOut()?.['message']).includes('only one can activate'));
  });

  it('drops an OPA whose last report says it is stopping', async () => {
    await start();
    const token = await t.token('acme', 'gateways');
    await postStatus(token, report('a', { docs: { revision: '1' } }));
    await postStatus(token, report('b', { docs: { revision: '1' } }));
    await postStatus(token, report('b', { docs: { revision: '1', stopping: true } }));
    expect((await agentsOf()).list.map((a) => a.id)).toEqual(['a']);
  });

  it('accepts a report naming bundles it does not serve (another OPA plugin, or a partition), ignoring them', async () => {
    await start();
    const token = await t.token('acme', 'gateways');
    const res = await postStatus(token, report('a', { docs: { revision: '1' }, 'authz/extra': { revision: 'x' } }));
    expect(await res.json()).toEqual({ agent: 'a', bundles: ['docs'], ignored: ['authz/extra'] });
    const partition = await t.api(`${connectorUrl('acme', 'gateways')}/status/my-partition`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
      body: JSON.stringify(report('q', { docs: { revision: '1' } })),
    });
    expect(partition.status).toBe(200);
    expect((await agentsOf()).list.map((a) => a.id)).toEqual(['a', 'q']);
  });

  it("warns once when an OPA names its bundle under another key than the Bundle's name, which is never counted", async () => {
    const lines: Record<string, unknown>[] = [];
    const capture = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
        done();
      },
    });
    await start({ serviceOptions: { log: pino({ level: 'warn' }, capture) } });
    const token = await t.token('acme', 'gateways');
    for (let i = 0; i < 3; i++)
      expect(await (await postStatus(token, report('renamed', { authz: { revision: '1' } }))).json()).toEqual({
        agent: 'renamed',
        bundles: [],
        ignored: ['authz'],
      });
    const warnings = lines.filter((l) => String(l['msg']).startsWith('An OPA reports no bundle of its connector'));
    expect(warnings).toMatchObject([{ tenant: 'acme', connector: 'gateways', agent: 'renamed', reported: ['authz'] }]);
    expect((await agentsOf()).list).toEqual([]);
  });

  it('ages agents out after --agent-expiry-seconds of silence', async () => {
    let clock = Date.parse('2026-11-24T10:00:00Z');
    await start({ config: { agentExpirySeconds: 10 }, serviceOptions: { now: () => new Date(clock) } });
    const token = await t.token('acme', 'gateways');
    await postStatus(token, report('a', { docs: { revision: '1' } }));
    await eventually('RolledOut True', () => rolledOut()?.['status'] === 'True');
    clock += 11_000;
    // The expiry tick notices on its own (once a second here), and the Bundle's status follows.
    await eventually('RolledOut Unknown after the silence', () => rolledOut()?.['reason'] === 'NoAgents');
    expect(bundleStatus()['agents']).toMatchObject({ reporting: 0, rollout: '0/0' });
  });
});

describe('status and log uploads that are refused change nothing', () => {
  type Refusal = readonly [name: string, send: () => Promise<Response>, status: number, message: RegExp];
  const gateways = (): Promise<string> => t.token('acme', 'gateways');
  const refusals: readonly Refusal[] = [
    ['no token', () => postStatus(undefined, report('x', { docs: { revision: '1' } })), 401, /connector token is required/],
    [
      'a token of another connector',
      async () => postStatus(await t.token('acme', 'backends'), report('x', { docs: { revision: '1' } })),
      404,
      /no connector gateways in tenant acme for this token/,
    ],
    [
      'a token of another tenant',
      async () => postStatus(await t.token('globex', 'gateways'), report('x', { docs: { revision: '1' } })),
      404,
      /for this token/,
    ],
    [
      'a bundle of another connector',
      async () => postStatus(await gateways(), report('x', { docs: { revision: '1' }, internal: { revision: '1' } })),
      404,
      /connector gateways has no bundle internal/,
    ],
    [
      'another tenant in the path',
      async () => postStatus(await gateways(), report('x', { docs: { revision: '1' } }), connectorUrl('globex', 'gateways')),
      404,
      /for this token/,
    ],
    ['malformed JSON', async () => postStatus(await gateways(), '{"labels":'), 400, /invalid JSON/],
    ['not a report', async () => postStatus(await gateways(), { bundles: {} }), 400, /not an OPA status report: labels/],
    [
      'a report without labels.id',
      async () => postStatus(await gateways(), { labels: { version: '1.1.0' }, bundles: { docs: {} } }),
      400,
      /labels\.id/,
    ],
    [
      'the wrong Content-Type',
      async () => postStatus(await gateways(), report('x', {}), undefined, { 'Content-Type': 'text/plain' }),
      400,
      /Content-Type must be application\/json/,
    ],
    [
      'an unknown Content-Encoding',
      async () => postStatus(await gateways(), report('x', {}), undefined, { 'Content-Encoding': 'br' }),
      400,
      /Content-Encoding must be gzip or identity/,
    ],
    [
      'gzip that is not',
      async () => postStatus(await gateways(), 'plain text', undefined, { 'Content-Encoding': 'gzip' }),
      400,
      /not valid gzip/,
    ],
    [
      'a body over the limit',
      async () => postStatus(await gateways(), JSON.stringify({ ...report('x', {}), pad: 'x'.repeat(70 * 1024) })),
      413,
      /larger than the limit of 65536 bytes \(--max-upload-bytes\)/,
    ],
    [
      'a report naming thousands of bundles',
      async () =>
        postStatus(await gateways(), {
          labels: { id: 'x' },
          bundles: Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`b${i}`, {}])),
        }),
      400,
      /names more than 256 bundles/,
    ],
    [
      'a gzip bomb',
      async () =>
        postStatus(await gateways(), gzipSync(JSON.stringify({ ...report('x', {}), pad: 'x'.repeat(10 * 1024 * 1024) })), undefined, {
          'Content-Encoding': 'gzip',
        }),
      413,
      /decompressed body is larger than the limit/,
    ],
  ];

  it.each(refusals)('status: %s', async (_name, send, status, message) => {
    await start({ config: { maxUploadBytes: 64 * 1024 } });
    const res = await send();
    expect(res.status).toBe(status);
    const body = (await res.json()) as { error: { status: number; message: string } };
    expect(body.error.status).toBe(status);
    expect(body.error.message).toMatch(message);
    for (const [b, c] of [
      ['docs', 'gateways'],
      ['internal', 'backends'],
    ] as const)
      expect((await agentsOf(b, c)).list).toEqual([]);
    expect(await metric('acl_agent_status_reports_total{outcome="accepted"}')).toEqual([]);
  });

  it('answers GET on the upload paths with 405, and unknown paths below the connector with 404', async () => {
    await start();
    for (const p of ['status', 'logs', 'status/x']) {
      const res = await t.api(`${connectorUrl('acme', 'gateways')}/${p}`);
      expect(res.status, p).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
    }
    expect((await t.api(`${connectorUrl('acme', 'gateways')}/status/a/b`, { method: 'POST' })).status).toBe(404);
  });

  it('refuses decision logs from a rotated token (401) or an Inactive connector (403), recording nothing', async () => {
    await start();
    const old = await t.token('acme', 'gateways');
    await t.write(
      'connectors.yaml',
      (BASE_MANIFESTS['connectors.yaml'] as string).replace(
        'metadata: { name: gateways, namespace: acme }\nspec: {}',
        'metadata: { name: gateways, namespace: acme }\nspec: { tokenRotation: 1 }',
      ),
    );
    expect((await postLogs(old, [event(1)])).status).toBe(401);
    const current = await t.token('acme', 'gateways');
    await t.write(
      'connectors.yaml',
      (BASE_MANIFESTS['connectors.yaml'] as string).replace(
        'metadata: { name: gateways, namespace: acme }\nspec: {}',
        'metadata: { name: gateways, namespace: acme }\nspec: { tokenRotation: 1, active: false }',
      ),
    );
    expect((await postLogs(current, [event(1)])).status).toBe(403);
    expect((await readJson(`${connectorUrl('acme', 'gateways')}/bundles/docs/decisions`)).body['decisions']).toEqual([]);
    expect(await metric('acl_agent_decisions_total')).toEqual([]);
  });

  it.each([
    ['an object instead of an array', { labels: { id: 'x' } }, 400, /a JSON array/],
    ['an event without labels', [{ decision_id: 'x' }], 400, /0\.labels/],
    [
      'an event naming a bundle of another connector',
      [event(1), event(2, { bundles: { internal: { revision: '1' } } })],
      404,
      /connector gateways has no bundle internal/,
    ],
    [
      'an event naming thousands of bundles',
      [event(1), event(2, { bundles: Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`b${i}`, {}])) })],
      400,
      /1\.bundles: names more than 256 bundles/,
    ],
  ])('refuses decision logs with %s, recording none of them', async (_name, body, status, message) => {
    await start();
    const res = await postLogs(await t.token('acme', 'gateways'), body);
    expect(res.status).toBe(status);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(message);
    expect((await readJson(`${connectorUrl('acme', 'gateways')}/bundles/docs/decisions`)).body['decisions']).toEqual([]);
  });
});

describe('decision logs', () => {
  it("counts OPA's decisions by tenant, bundle and result, and keeps the newest for the tenant's API key", async () => {
    await start();
    const token = await t.token('acme', 'gateways');
    const events = [
      ...Array.from({ length: 10 }, (_, i) => event(i)),
      event(10, { result: undefined }),
      event(11, { path: 'acl', result: { allow: true } }),
    ];
    const res = await postLogs(token, events);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ accepted: 12 });
    expect((await metric('acl_agent_decisions_total')).sort()).toEqual([
      'acl_agent_decisions_total{tenant="acme",bundle="docs",result="allow"} 6',
      'acl_agent_decisions_total{tenant="acme",bundle="docs",result="deny"} 5',
      'acl_agent_decisions_total{tenant="acme",bundle="docs",result="undefined"} 1',
    ]);
    const recent = await readJson(`${connectorUrl('acme', 'gateways')}/bundles/docs/decisions`);
    expect(recent.status).toBe(200);
    const list = recent.body['decisions'] as { decisionId: string; decision: string; revision: string; agent: string; input: unknown }[];
    expect(list.map((d) => d.decisionId)).toEqual(events.map((e) => e['decision_id']).reverse());
    expect(list[0]).toMatchObject({ decision: 'allow', revision: '1', agent: 'opa-1', path: 'acl', input: events[11]?.['input'] });
    // The connector token reads nothing; another tenant's key does not see acme's bundle.
    expect(
      (await t.api(`${connectorUrl('acme', 'gateways')}/bundles/docs/decisions`, { headers: { Authorization: `Bearer ${token}` } })).status,
    ).toBe(401);
    expect(
      (await t.api(`${connectorUrl('acme', 'backends')}/bundles/docs/decisions`, { headers: { Authorization: `Bearer ${API_KEY}` } }))
        .status,
    ).toBe(404);
  });

  it('answers 500 and keeps serving when applying an upload throws', async () => {
    await start();
    const token = await t.token('acme', 'gateways');
    const add = t.service.fleet.recent.addKept;
    t.service.fleet.recent.addKept = () => {
      throw new Error('boom');
    };
    const res = await postLogs(token, [event(1)]);
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ error: { status: 500, message: 'internal error' } });
    t.service.fleet.recent.addKept = add;
    expect((await postLogs(token, [event(2)])).status).toBe(200);
  });

  it('accepts an upload that is not compressed too, and counts decisions of no bundle under an empty bundle label', async () => {
    await start();
    const res = await postLogs(await t.token('acme', 'gateways'), [event(1, { bundles: undefined, result: undefined })], undefined, {
      gzip: false,
    });
    expect(res.status).toBe(200);
    expect(await metric('acl_agent_decisions_total')).toEqual(['acl_agent_decisions_total{tenant="acme",bundle="",result="undefined"} 1']);
  });

  it("writes OPA's decisions and the service's own to the decision log, one JSON line each, in one shape, without tokens", async () => {
    const file = join(tmpdir(), `acl-decisions-${process.pid}-${Date.now()}.log`);
    await start({ config: { decisionLog: { kind: 'file', path: file } } });
    const token = await t.token('acme', 'gateways');
    await postLogs(token, [event(1, { input: { principal: { type: 'user', id: 'u' }, headers: { authorization: `Bearer ${token}` } } })]);
    // The number as OPA sent it, not as a double would hold it.
    // Each rounds to a double whose shortest form is another number (…992, 1e16, 0.1).
    const raw = `[${JSON.stringify(event(2)).replace('"id":"u2"', '"id":"u2","n":9007199254740993,"m":10000000000000001,"f":0.10000000000000001')}]`;
    await postLogs(token, raw);
    const decide = await t.decide(
      {
        subject: { type: 'user', id: 'alice', properties: { team: 'blue' } },
        action: 'read',
        resource: { type: 'document', id: 'd1', properties: { team: 'blue' } },
      },
      { 'X-Request-ID': 'req-7' },
    );
    expect(((await decide.json()) as { decision: string }).decision).toBe('allow');
    const authzen = await t.api('/access/v1/evaluations', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${API_KEY}` },
      body: JSON.stringify({
        subject: { type: 'user', id: 'bob' },
        action: { name: 'read' },
        evaluations: [{ resource: { type: 'document', id: 'x' } }, { resource: { type: 'document', id: 'y' } }],
      }),
    });
    expect(authzen.status).toBe(200);
    await t.stop();
    const lines = (await readFile(file, 'utf8'))
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => [l['source'], l['decision'], l['endpoint'] ?? l['bundle']])).toEqual([
      ['opa', 'deny', 'docs'],
      ['opa', 'allow', 'docs'],
      ['service', 'allow', 'authorization'],
      ['service', 'deny', 'evaluations'],
      ['service', 'deny', 'evaluations'],
    ]);
    expect(lines[0]).toMatchObject({
      stream: 'decisions',
      tenant: 'acme',
      connector: 'gateways',
      revision: '1',
      agent: 'opa-1',
      decisionId: 'decision-1',
      input: { headers: { authorization: '[redacted]' } },
    });
    expect(lines[2]).toMatchObject({
      stream: 'decisions',
      tenant: 'acme',
      requestId: 'req-7',
      policyId: 'acme/team-documents',
      input: { principal: { type: 'user', id: 'alice', team: 'blue' }, action: 'read' },
    });
    const text = await readFile(file, 'utf8');
    expect(text).not.toContain(token);
    expect(text.split('\n')[1]).toContain('"id":"u2","n":9007199254740993,"m":10000000000000001,"f":0.10000000000000001');
    await rm(file, { force: true });
  });
});
