// X-Request-ID over a raw socket, so that no client library trims, joins or refuses the header on
// the way: which values come back (every field value a client may send, up to 200 characters, but
// no obs-text), exactly as sent, on every answer of the API and ops listeners.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decisionEvent, statusReport } from '../support/reports.ts';
import { API_KEY, startTestService, type TestService } from '../support/service.ts';

let t: TestService;
let token: string;
let etag: string;
beforeAll(async () => {
  t = await startTestService();
  token = await t.token('acme', 'gateways');
  etag = (await t.bundle('acme', 'gateways', 'docs', { Authorization: `Bearer ${token}` })).headers.get('etag') as string;
});
afterAll(async () => {
  await t.stop();
});

interface RawAnswer {
  readonly status: number;
  /** The X-Request-ID field lines of the answer, their values as the bytes sent (latin1). */
  readonly ids: readonly string[];
  /** Every field name of the answer, lower-cased. */
  readonly names: readonly string[];
}

/** Writes `bytes` (latin1) on a new connection and reads until the server ends it. */
function exchange(url: string, bytes: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('end', () => resolve(Buffer.concat(chunks).toString('latin1')));
    socket.end(Buffer.from(bytes, 'latin1'));
  });
}

/** The status and fields of the first answer in `text`. */
function firstAnswer(text: string): RawAnswer {
  const lines = text.slice(0, text.indexOf('\r\n\r\n')).split('\r\n');
  const fields = lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()] as const);
  return {
    status: Number(lines[0]?.split(' ')[1]),
    ids: fields.filter(([n]) => n === 'x-request-id').map(([, v]) => v),
    names: fields.map(([n]) => n),
  };
}

interface Call {
  readonly method?: string;
  readonly path: string;
  readonly key?: string;
  readonly body?: unknown;
  readonly headers?: readonly string[];
  /** Content-Length to declare instead of the body's. */
  readonly declared?: number;
  readonly listener?: 'api' | 'ops';
}

/** The answer to `c` sent with `fields` (header lines as written, latin1) and Connection: close. */
function call(c: Call, ...fields: readonly string[]): Promise<RawAnswer> {
  const body = c.body === undefined ? '' : typeof c.body === 'string' ? c.body : JSON.stringify(c.body);
  const lines = [
    `${c.method ?? (c.body === undefined ? 'GET' : 'POST')} ${c.path} HTTP/1.1`,
    'Host: localhost',
    'Connection: close',
    ...(c.key === undefined ? [] : [`Authorization: Bearer ${c.key}`]),
    ...(c.body === undefined ? [] : ['Content-Type: application/json', `Content-Length: ${c.declared ?? Buffer.byteLength(body)}`]),
    ...(c.headers ?? []),
    ...fields,
  ];
  const url = c.listener === 'ops' ? t.service.opsUrl.replace('localhost', '127.0.0.1') : t.url;
  return exchange(url, `${lines.join('\r\n')}\r\n\r\n${body}`).then(firstAnswer);
}

const alice = { type: 'user', id: 'alice', properties: { team: 'blue' } };
const d1 = { type: 'document', id: 'd1', properties: { team: 'blue' } };
const DECIDE: Call = { path: '/authorization', key: API_KEY, body: { subject: alice, action: 'read', resource: d1 } };
const BUNDLE = '/acme/connectors/policyagent/gateways/bundles/docs';
const CONNECTOR = '/acme/connectors/policyagent/gateways';

/** Every kind of answer both listeners give, each with the status that shows it reached its handler. */
const ENDPOINTS: readonly (readonly [string, () => Call, number])[] = [
  ['a decision', () => DECIDE, 200],
  ['a decision at an odd spelling (the Express route)', () => ({ ...DECIDE, path: '/authorization?' }), 200],
  ['a decision whose body is not JSON', () => ({ ...DECIDE, body: '{' }), 400],
  ['a decision without an API key', () => ({ ...DECIDE, key: undefined }), 401],
  ['a decision asked with GET', () => ({ path: '/authorization' }), 405],
  ['a decision too large to read', () => ({ ...DECIDE, body: 'x', declared: 70_000 }), 413],
  [
    'an AuthZEN evaluation',
    () => ({ ...DECIDE, path: '/access/v1/evaluation', body: { subject: alice, action: { name: 'read' }, resource: d1 } }),
    200,
  ],
  [
    'AuthZEN evaluations',
    () => ({
      ...DECIDE,
      path: '/access/v1/evaluations',
      body: { subject: alice, action: { name: 'read' }, evaluations: [{ resource: d1 }] },
    }),
    200,
  ],
  [
    'an AuthZEN subject search',
    () => ({ ...DECIDE, path: '/access/v1/search/subject', body: { subject: { type: 'user' }, action: { name: 'read' }, resource: d1 } }),
    200,
  ],
  [
    'an AuthZEN resource search',
    () => ({
      ...DECIDE,
      path: '/access/v1/search/resource',
      body: { subject: alice, action: { name: 'read' }, resource: { type: 'document' } },
    }),
    200,
  ],
  ['an AuthZEN action search', () => ({ ...DECIDE, path: '/access/v1/search/action', body: { subject: alice, resource: d1 } }), 200],
  [
    "an AuthZEN evaluation at the tenant's path",
    () => ({ ...DECIDE, path: '/acme/access/v1/evaluation', body: { subject: alice, action: { name: 'read' }, resource: d1 } }),
    200,
  ],
  [
    "an AuthZEN evaluation at another tenant's path",
    () => ({ ...DECIDE, path: '/globex/access/v1/evaluation', body: { subject: alice, action: { name: 'read' }, resource: d1 } }),
    403,
  ],
  ['the AuthZEN metadata', () => ({ path: '/.well-known/authzen-configuration' }), 200],
  ["a tenant's AuthZEN metadata", () => ({ path: '/.well-known/authzen-configuration/acme' }), 200],
  ['a bundle', () => ({ path: BUNDLE, key: token }), 200],
  ['a bundle at an odd spelling (the Express route)', () => ({ path: `${BUNDLE}?`, key: token }), 200],
  ['a bundle not changed (304)', () => ({ path: BUNDLE, key: token, headers: [`If-None-Match: ${etag}`] }), 304],
  ['a bundle without its token', () => ({ path: BUNDLE }), 401],
  ['a bundle that does not exist', () => ({ path: `${BUNDLE}-gone`, key: token }), 404],
  ["a bundle's sync activity", () => ({ path: `${BUNDLE}/activity`, key: API_KEY }), 200],
  ["a bundle's agents without the API key", () => ({ path: `${BUNDLE}/agents` }), 401],
  ["a bundle's recent decisions", () => ({ path: `${BUNDLE}/decisions`, key: API_KEY }), 200],
  [
    "an OPA's status report",
    () => ({ path: `${CONNECTOR}/status`, key: token, body: statusReport('opa-rid', { docs: { revision: '1' } }) }),
    200,
  ],
  ["an OPA's status report without its token", () => ({ path: `${CONNECTOR}/status`, body: {} }), 401],
  ["an OPA's decision logs", () => ({ path: `${CONNECTOR}/logs`, key: token, body: [decisionEvent(1)] }), 200],
  ["an OPA's decision logs that are not JSON", () => ({ path: `${CONNECTOR}/logs`, key: token, body: '[' }), 400],
  ['a path no route has', () => ({ path: '/nowhere' }), 404],
  ['a path that is not percent-encoded UTF-8', () => ({ path: '/%ff/access/v1/evaluation', method: 'POST', body: {} }), 400],
  ['the ops liveness probe', () => ({ path: '/healthz', listener: 'ops' }), 200],
  ['the ops readiness probe', () => ({ path: '/readyz', listener: 'ops' }), 200],
  ['the ops metrics', () => ({ path: '/metrics', listener: 'ops' }), 200],
  ['a path the ops listener has not', () => ({ path: '/nowhere', listener: 'ops' }), 404],
];

describe('X-Request-ID', () => {
  it.each(ENDPOINTS)('is echoed, inner spaces and all, on %s', async (_what, c, status) => {
    const a = await call(c(), 'X-Request-ID: cert probe 42');
    expect(a.status).toBe(status);
    expect(a.ids).toEqual(['cert probe 42']);
  });

  it.each(ENDPOINTS)('is not invented on %s when none came', async (_what, c, status) => {
    const a = await call(c());
    expect(a.status).toBe(status);
    expect(a.ids).toEqual([]);
  });

  // The decision hot path, the bundle route (set before its handler) and the Express routes.
  const where: readonly (readonly [string, () => Call])[] = [
    ['a decision', () => DECIDE],
    ['a bundle', () => ({ path: BUNDLE, key: token })],
    ['an AuthZEN subject search', () => ENDPOINTS[8]?.[1]() as Call],
  ];

  it.each(where)('comes back on %s as the value HTTP reads: leading and trailing spaces and tabs are not part of it', async (_w, c) => {
    expect((await call(c(), 'X-Request-ID: \t  probe\t42 \t ')).ids).toEqual(['probe\t42']);
  });

  it.each(where)('comes back on %s with tabs, quotes and every visible character inside', async (_w, c) => {
    const every = Array.from({ length: 0x7f - 0x21 }, (_, i) => String.fromCharCode(0x21 + i)).join('');
    expect((await call(c(), `X-Request-ID: a\tb "c" ${every}`)).ids).toEqual([`a\tb "c" ${every}`]);
  });

  it.each(where)('comes back empty on %s when it was sent empty', async (_w, c) => {
    const a = await call(c(), 'X-Request-ID:');
    expect(a.names).toContain('x-request-id');
    expect(a.ids).toEqual(['']);
  });

  it.each(where)('comes back on %s at 200 characters, and not at all past them (never cut)', async (_w, c) => {
    expect((await call(c(), `X-Request-ID: ${'r'.repeat(199)} `)).ids).toEqual(['r'.repeat(199)]);
    expect((await call(c(), `X-Request-ID: ${'r'.repeat(200)}`)).ids).toEqual(['r'.repeat(200)]);
    const past = await call(c(), `X-Request-ID: ${'r'.repeat(201)}`);
    expect(past.status).toBe(200);
    expect(past.ids).toEqual([]);
    expect((await call(c(), `X-Request-ID: ${'r'.repeat(8000)}`)).ids).toEqual([]);
  });

  it.each(where)('does not come back on %s when it carries bytes above 0x7f, which would not come back as sent', async (_w, c) => {
    for (const eightBit of [Buffer.from('café', 'utf8').toString('latin1'), 'caf\u00e9', '\u00ff\u0080']) {
      const a = await call(c(), `X-Request-ID: ${eightBit}`);
      expect(a.status).toBe(200);
      expect(a.ids).toEqual([]);
    }
  });

  it.each(where)('comes back on %s sent twice as the one value HTTP makes of the two lines', async (_w, c) => {
    expect((await call(c(), 'X-Request-ID: a 1', 'X-Request-ID: b 2')).ids).toEqual(['a 1, b 2']);
  });

  it.each(where)('can never add a header on %s: CR, LF and other controls inside are refused before any handler', async (_w, c) => {
    for (const inject of ['a\rInjected: yes', 'a\nInjected: yes', 'a\r\n Injected: yes', 'a\u0000b', 'a\u007fb', 'a\u000bb']) {
      const a = await call(c(), `X-Request-ID: ${inject}`);
      expect(a.status, JSON.stringify(inject)).toBe(400);
      expect(a.ids).toEqual([]);
      expect(a.names).not.toContain('injected');
    }
  });

  it('comes back on many requests in a row over one connection, each with its own value', async () => {
    const body = JSON.stringify(DECIDE.body);
    const requests = Array.from(
      { length: 50 },
      (_, i) =>
        `POST /authorization HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${API_KEY}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${body.length}\r\nX-Request-ID: probe ${i}${i === 49 ? '\r\nConnection: close' : ''}\r\n\r\n${body}`,
    );
    const text = await exchange(t.url, requests.join(''));
    expect([...text.matchAll(/\r\nX-Request-ID: ([^\r]*)\r\n/g)].map((m) => m[1])).toEqual(requests.map((_, i) => `probe ${i}`));
  });
});
