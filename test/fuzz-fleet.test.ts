// Bad uploads: thousands of generated status reports and decision-log uploads against OPA's two
// upload endpoints (POST /{tenant}/connectors/policyagent/{connector}/status[/{partition}] and .../logs),
// from fixed seeds. Reports and events are built from real OPA captures (test/fixtures/opa), then broken:
// wrong values, edited bytes, corrupted and truncated gzip, odd Content-Type, Content-Encoding and
// Authorization, every kind of connector token, odd paths, bodies and gzip bombs past
// --max-upload-bytes, and malformed HTTP on the wire. None may be answered 500 or left unanswered;
// where the contract decides the status it is asserted exactly. Uploads are fleet state and audit data,
// so afterwards the agents and decisions the service holds are compared with what its answers accepted:
// a refused upload changes nothing, except that a report made with an Inactive connector's own token
// is recorded as failing (a retired token records nothing). Then the service must still work.
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { deflateSync, gunzipSync, gzipSync } from 'node:zlib';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bytes,
  chooser,
  editBytes,
  isObject,
  judge,
  latin1,
  pool,
  randomJsonOf,
  rawBarrage,
  send,
  setAt,
  target,
  type Header,
  type HttpCase,
  type Json,
  type JsonObject,
  type RawCase,
  type Reply,
  type Target,
  encoded,
  plain,
  sent,
  type Segment,
} from './support/fuzz.ts';
import { decisionEvent, fixture, statusReport, type BundleState } from './support/reports.ts';
import {
  API_KEY,
  apiKeySecret,
  BASE_MANIFESTS,
  DORMANT_MANIFEST,
  FIXTURE,
  GLOBEX_KEY,
  GLOBEX_MANIFEST,
  startTestService,
  type TestService,
} from './support/service.ts';

const IN_FLIGHT = 24;
/** --max-upload-bytes here: small, so that the limit and gzip bombs are cheap to reach. */
const LIMIT = 64 * 1024;
/** Generated cases per generator. */
const STATUS_CASES = 1200;
const LOGS_CASES = 900;
const READ_CASES = 250;

// Beside the base manifests: an Inactive connector with a bundle, and a second tenant whose
// connector and bundle have the same names as acme's.
const EXTRA_MANIFESTS: Record<string, string> = {
  'dormant.yaml': DORMANT_MANIFEST,
  'globex.yaml': `${GLOBEX_MANIFEST}---\n${apiKeySecret('globex', 'key', GLOBEX_KEY)}`,
};

/** The connector whose token is rotated before the barrage: its first token is then "retired". */
const ROTATED = 'acme/gateways';
const ROTATED_MANIFEST = (BASE_MANIFESTS['connectors.yaml'] as string).replace(
  'metadata: { name: gateways, namespace: acme }\nspec: {}',
  'metadata: { name: gateways, namespace: acme }\nspec: { tokenRotation: 1 }',
);

/** `tenant/bundle` → the connector that owns it; `tenant/connector` → Active (service spec 7.2); API key → tenant. */
const { owner: OWNER, active: ACTIVE, keys: KEYS } = FIXTURE;

let t: TestService;
let to: Target;
/** `tenant/connector` → its current agent_ token. */
const tokens = new Map<string, string>();
/** The token acme/gateways had before its rotation. */
let retired = '';
const loggedErrors: string[] = [];

beforeAll(async () => {
  // Every throw that becomes a 500 is logged at error level: collect those lines instead of dropping them.
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      loggedErrors.push(chunk.toString('utf8'));
      done();
    },
  });
  t = await startTestService({
    manifests: { ...BASE_MANIFESTS, ...EXTRA_MANIFESTS },
    config: { maxUploadBytes: LIMIT },
    serviceOptions: { agentStatusIntervalMs: 0, log: pino({ level: 'error' }, sink) },
  });
  to = target(t.url, IN_FLIGHT);
  retired = await t.token('acme', 'gateways');
  if (ROTATED_MANIFEST === BASE_MANIFESTS['connectors.yaml']) throw new Error('the rotation edit did not apply to connectors.yaml');
  await t.write('connectors.yaml', ROTATED_MANIFEST);
  for (const key of ACTIVE.keys()) {
    const [tenant, connector] = key.split('/') as [string, string];
    tokens.set(key, await t.token(tenant, connector));
  }
  if (tokens.get(ROTATED) === retired) throw new Error('the token of acme/gateways was not rotated');
});

afterAll(async () => {
  to.agent.destroy();
  await t.stop();
});

// ---------------------------------------------------------------------------------------------
// Where a case aims, and with which token

const bearer = (credential: string): Header => ['Authorization', `Bearer ${credential}`];
const JSON_TYPE: Header = ['Content-Type', 'application/json'];
const GZIP: Header = ['Content-Encoding', 'gzip'];
const LONG = (n: number, unit = 'x'): string => unit.repeat(n);
const token = (key: string): string => tokens.get(key) ?? 'agent_missing';

type Endpoint = 'status' | 'logs';
/** A tenant and connector as a path names them, decoded. */
interface Place {
  readonly tenant: string;
  readonly connector: string;
}
const keyOf = (p: Place): string => `${p.tenant}/${p.connector}`;
const GATEWAYS: Place = { tenant: 'acme', connector: 'gateways' };
/** Connectors that exist (the first four) and names that do not. */
const PLACES: readonly Place[] = [
  GATEWAYS,
  { tenant: 'acme', connector: 'backends' },
  { tenant: 'acme', connector: 'dormant' },
  { tenant: 'globex', connector: 'gateways' },
  { tenant: 'acme', connector: 'nobody' },
  { tenant: 'initech', connector: 'gateways' },
];
const connectorPath = (p: Place): string => `/${p.tenant}/connectors/policyagent/${p.connector}`;

/** Segments that name nothing, or cannot be decoded. */
const NOISE: readonly Segment[] = [
  plain('.'),
  sent('..', '..'),
  sent('%2e%2e', '..'),
  plain('/'),
  plain('a/b'),
  plain('äcme'),
  plain('🙂'),
  sent('%00', '\u0000'),
  plain(LONG(3000, 'a')),
  plain('constructor'),
  plain('__proto__'),
  plain('*'),
  sent('%ZZ', undefined),
  sent('%', undefined),
  sent('a%2', undefined),
  sent('%C0%AF', undefined),
  sent('%FF', undefined),
  sent('%ED%A0%80', undefined),
];
/** A real name in another spelling: encoded, another case, padded, or cut by a stray byte. */
function respelt(pick: <T>(xs: readonly T[]) => T, name: string): Segment {
  return pick([
    encoded(name, true),
    encoded(name, false),
    plain(name.toUpperCase()),
    plain(`${name} `),
    sent(`${name}.`, `${name}.`),
    plain(`${name}\u0000`),
    sent(`${name}%2F`, `${name}/`),
    plain(`${name}é`),
    sent(`${name}%ZZ`, undefined),
  ]);
}
/** OPA's status plugin may append a partition name: accepted, not used. */
const PARTITIONS: readonly Segment[] = [
  plain('p1'),
  plain('my-partition'),
  plain('é'),
  plain('status'),
  plain(LONG(300)),
  sent('%2F', '/'),
  sent('%41', 'A'),
  sent('%ZZ', undefined),
];

type Choose = ReturnType<typeof chooser>;

/** Mostly a connector that exists, named exactly more than half of the time, so that every answer comes up often. */
function segments(c: Choose): { tenant: Segment; connector: Segment; aim: Place } {
  const aim = c.r() < 0.85 ? c.pick([GATEWAYS, GATEWAYS, ...PLACES.slice(0, 4)]) : c.pick(PLACES);
  const exact = c.r() < 0.6;
  const one = (name: string): Segment => {
    const x = c.r();
    return exact || x < 0.4 ? plain(name) : x < 0.75 ? respelt(c.pick, name) : c.pick(NOISE);
  };
  return { tenant: one(aim.tenant), connector: one(aim.connector), aim };
}

/** The Authorization field sent, and whose token it is. */
interface Credential {
  readonly label: string;
  readonly header: string | undefined;
  /** `tenant/connector` whose current token this is (a retired token is no one's). */
  readonly current?: string;
}

function credentialFor(c: Choose, aim: Place): Credential {
  const own = tokens.get(keyOf(aim));
  const x = c.r();
  if (own !== undefined && x < 0.5) {
    return {
      label: 'own token',
      header: c.pick([`Bearer ${own}`, `Bearer ${own}`, `bearer ${own}`, `BEARER\t${own}  `]),
      current: keyOf(aim),
    };
  }
  if (x < (keyOf(aim) === ROTATED ? 0.68 : 0.56)) {
    return { label: 'retired token', header: c.pick([`Bearer ${retired}`, `bearer ${retired} `]) };
  }
  if (x < 0.7) {
    const [key, other] = c.pick([...tokens.entries()].filter(([k]) => k !== keyOf(aim)));
    return { label: `token of ${key}`, header: `Bearer ${other}`, current: key };
  }
  const some = c.pick([...tokens.values()]);
  const random = Buffer.from(Array.from({ length: 32 }, () => c.int(256))).toString('base64url');
  const header = c.pick([
    undefined,
    undefined,
    '',
    'Bearer',
    'Bearer ',
    'Basic Zm9vOmJhcg==',
    `Bearer ${API_KEY}`,
    `Bearer ${GLOBEX_KEY}`,
    `Bearer agent_${random}`,
    `Bearer ${LONG(6000, 'A')}`,
    'Bearer agent_',
    `Token ${some}`,
    `Bearer ${some}x`,
    `Bearer ${some.slice(0, -1)}`,
    `Bearer ${some} ${some}`,
    `Bearer ${some}${latin1(0xff)}`,
    latin1(0xff, 0xfe),
    `Bearer ${some.toUpperCase()}`,
    `Bearer ${some}==`,
    some,
    `Bearer "${some}"`,
    `Bearer ${retired}x`,
  ]);
  return { label: `Authorization ${JSON.stringify(header)?.slice(0, 24)}`, header };
}

/**
 * Service spec 5 and 7.2, as the bundle route judges a token: the body is read only for a current
 * token of an Active connector named by the path. A status report is still read, and its agent
 * recorded as failing, for the Inactive connector's own token (403); a retired token (401) is not.
 */
function verdictOf(credential: Credential, at: Place): { readonly status: 'read' | 401 | 403 | 404; readonly recognised: boolean } {
  if (credential.current === undefined) return { status: 401, recognised: false };
  if (credential.current !== keyOf(at)) return { status: 404, recognised: false };
  if (ACTIVE.get(credential.current) !== true) return { status: 403, recognised: true };
  return { status: 'read', recognised: false };
}

// ---------------------------------------------------------------------------------------------
// The contract, restated: what a report and an upload are (docs/opa.md), and which bundles they name

const AGENT_ID = /^[\x21-\x7e]{1,128}$/;
/** A report, or one decision event, may name at most this many bundles (a real OPA names a handful). */
const MAX_BUNDLES_NAMED = 256;
/** Absent, or a string of at most `max` UTF-16 units. */
const text = (v: Json | undefined, max = Infinity): boolean => v === undefined || (typeof v === 'string' && v.length <= max);
const bundleName = (name: string): boolean => name.length >= 1 && name.length <= 253;
const labelsOk = (v: Json | undefined): boolean =>
  isObject(v) && typeof v['id'] === 'string' && AGENT_ID.test(v['id']) && text(v['version'], 64);
const httpCodeOk = (v: Json | undefined): boolean =>
  v === undefined ||
  (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 && v <= 999) ||
  (typeof v === 'string' && /^\d{1,3}$/.test(v));

function bundleStatusOk(b: Json | undefined): boolean {
  if (!isObject(b)) return false;
  const errors = b['errors'];
  return (
    text(b['active_revision'], 1024) &&
    text(b['last_successful_activation'], 64) &&
    text(b['last_successful_download'], 64) &&
    text(b['last_request'], 64) &&
    text(b['code'], 256) &&
    text(b['message']) &&
    httpCodeOk(b['http_code']) &&
    (errors === undefined || (Array.isArray(errors) && errors.every((e) => isObject(e) && text(e['code']) && text(e['message']))))
  );
}

function isReport(doc: Json): boolean {
  if (!isObject(doc) || !labelsOk(doc['labels'])) return false;
  const bundles = doc['bundles'];
  return (
    bundles === undefined ||
    (isObject(bundles) &&
      Object.keys(bundles).length <= MAX_BUNDLES_NAMED &&
      Object.entries(bundles).every(([name, b]) => bundleName(name) && bundleStatusOk(b)))
  );
}

function isEvent(e: Json): boolean {
  if (!isObject(e) || !labelsOk(e['labels'])) return false;
  const bundles = e['bundles'];
  return (
    text(e['decision_id'], 256) &&
    text(e['path'], 1024) &&
    text(e['query'], 4096) &&
    text(e['timestamp'], 64) &&
    (bundles === undefined ||
      (isObject(bundles) &&
        Object.keys(bundles).length <= MAX_BUNDLES_NAMED &&
        Object.entries(bundles).every(([name, b]) => bundleName(name) && isObject(b) && text(b['revision'], 1024))))
  );
}

const isUpload = (doc: Json): doc is Json[] => Array.isArray(doc) && doc.every(isEvent);
const bundlesOf = (v: Json | undefined): JsonObject => (isObject(v) && isObject(v['bundles']) ? v['bundles'] : {});
/** Every bundle a report or an upload names, in order of first appearance. */
function namesIn(endpoint: Endpoint, doc: Json): string[] {
  const names =
    endpoint === 'status' ? Object.keys(bundlesOf(doc)) : (Array.isArray(doc) ? doc : []).flatMap((e) => Object.keys(bundlesOf(e)));
  return [...new Set(names)];
}
const ownerOf = (tenant: string, name: string): string | undefined => OWNER.get(`${tenant}/${name}`);
const isOwn = (at: Place, name: string): boolean => ownerOf(at.tenant, name) === at.connector;
/** A bundle of another connector of the tenant: naming one refuses the whole upload (404). */
const isForeign = (at: Place, name: string): boolean => {
  const owner = ownerOf(at.tenant, name);
  return owner !== undefined && owner !== at.connector;
};

/** What a valid token of an Active connector gets for a body that parsed to `doc`. */
function readAnswer(endpoint: Endpoint, at: Place, doc: Json): 200 | 400 | 404 {
  if (!(endpoint === 'status' ? isReport(doc) : isUpload(doc))) return 400;
  return namesIn(endpoint, doc).some((n) => isForeign(at, n)) ? 404 : 200;
}

/** OPA cancels its downloader when it stops ("...: context canceled"): that entry drops the agent. */
function stopping(b: Json | undefined): boolean {
  if (!isObject(b) || (b['code'] === undefined && b['message'] === undefined)) return false;
  return /context canceled$/.test(typeof b['message'] === 'string' ? b['message'] : '');
}

/** The bundles of a valid report under which its agent stays listed: ours, not stopping. */
const listedUnder = (at: Place, doc: Json): string[] =>
  Object.entries(bundlesOf(doc))
    .filter(([n, b]) => isOwn(at, n) && !stopping(b))
    .map(([n]) => n);

const parseJson = (body: Buffer): Json | undefined => {
  try {
    return JSON.parse(body.toString('utf8')) as Json;
  } catch {
    return undefined;
  }
};

/** A 200 must say what was taken: the agent and our bundles of a report, or the number of events. */
function answerCheck(endpoint: Endpoint, at: Place, doc: Json | undefined): (reply: Reply) => string | undefined {
  return (reply) => {
    const got = parseJson(reply.body);
    if (doc === undefined) {
      const shaped =
        endpoint === 'status'
          ? isObject(got) && typeof got['agent'] === 'string' && Array.isArray(got['bundles']) && Array.isArray(got['ignored'])
          : isObject(got) && typeof got['accepted'] === 'number';
      return shaped ? undefined : `a 200 whose body is not the ${endpoint} answer: ${reply.body.toString('utf8', 0, 200)}`;
    }
    const want: Json =
      endpoint === 'status'
        ? {
            agent: isObject(doc) && isObject(doc['labels']) ? (doc['labels']['id'] ?? null) : null,
            bundles: namesIn('status', doc)
              .filter((n) => isOwn(at, n))
              .sort(),
            ignored: namesIn('status', doc).filter((n) => ownerOf(at.tenant, n) === undefined),
          }
        : { accepted: Array.isArray(doc) ? doc.length : -1 };
    if (JSON.stringify(got) === JSON.stringify(want)) return undefined;
    return `answered ${reply.body.toString('utf8', 0, 200)}, expected ${JSON.stringify(want).slice(0, 200)}`;
  };
}

// ---------------------------------------------------------------------------------------------
// Bodies

/** A body as sent, and what a valid token of an Active connector gets for it. */
interface Body {
  readonly label: string;
  readonly bytes: Buffer;
  /** Content-Type and Content-Encoding, as sent. */
  readonly headers: readonly Header[];
  readonly read: readonly number[];
  /** The value the service parses, when the body is whole JSON sent with the usual headers. */
  readonly doc?: Json;
  readonly check?: (reply: Reply) => string | undefined;
}

/** A value as JSON text, gzipped or not, and the answer it must get. */
function jsonBody(label: string, endpoint: Endpoint, at: Place, value: Json, gzip: boolean): Body {
  const json = JSON.stringify(value);
  const doc = JSON.parse(json) as Json;
  const headers = gzip ? [JSON_TYPE, GZIP] : [JSON_TYPE];
  const body = gzip ? gzipSync(json) : Buffer.from(json, 'utf8');
  if (Buffer.byteLength(json) > LIMIT) return { label: `${label} (over the limit)`, bytes: body, headers, read: [413] };
  return {
    label: `${label}${gzip ? ', gzip' : ''}`,
    bytes: body,
    headers,
    read: [readAnswer(endpoint, at, doc)],
    doc,
    check: answerCheck(endpoint, at, doc),
  };
}

/** Bytes that are no longer the value they were built from: the answer is one of `read`. */
function brokenBody(label: string, endpoint: Endpoint, at: Place, raw: Buffer, gzip: boolean, read: readonly number[]): Body {
  return { label, bytes: raw, headers: gzip ? [JSON_TYPE, GZIP] : [JSON_TYPE], read, check: answerCheck(endpoint, at, undefined) };
}

const asJson = (v: unknown): Json => JSON.parse(JSON.stringify(v)) as Json;
/** The tenant's bundles, split by whether `at`'s connector owns them. */
const bundlesAt = (at: Place, own: boolean): string[] =>
  [...OWNER]
    .filter(([k, owner]) => k.startsWith(`${at.tenant}/`) && (owner === at.connector) === own)
    .map(([k]) => k.slice(at.tenant.length + 1));
const ownNames = (at: Place): string[] => bundlesAt(at, true);
const foreignNames = (at: Place): string[] => bundlesAt(at, false);
/** Bundle names a report may carry that no connector serves: another OPA plugin's, a typo, a partition. */
const UNKNOWN_NAMES = ['authz/extra', 'DOCS', 'docs ', 'é', 'constructor', 'partition-1', LONG(253, 'b')];

/** OPA 1.1's report without its 45 KB of metrics, or whole. */
function report(id: string, bundles: Record<string, BundleState>, whole: boolean): Json {
  const full = statusReport(id, bundles);
  return asJson(whole ? full : { labels: full['labels'], bundles: full['bundles'], plugins: full['plugins'] });
}

function bundleState(c: Choose): BundleState {
  const x = c.r();
  const revision = c.pick(['1', '1', '2', '7', undefined]);
  if (x < 0.06) return { revision, stopping: true };
  if (x < 0.25) {
    return {
      revision,
      code: c.pick(['bundle_error', 'download_error']),
      message: c.pick(['server replied with Unauthorized', 'failed', '']),
      httpCode: c.pick([401, 403, 404, 500, undefined]),
    };
  }
  return { revision };
}

/** Which bundles a generated report or event names: mostly its connector's own, sometimes unknown ones or another connector's. */
function namesFor(c: Choose, at: Place): string[] {
  const names: string[] = [];
  const own = ownNames(at);
  if (own.length > 0 && c.r() < 0.85) names.push(c.pick(own));
  if (c.r() < 0.25) names.push(c.pick(UNKNOWN_NAMES));
  const foreign = foreignNames(at);
  if (foreign.length > 0 && c.r() < 0.08) names.push(c.pick(foreign));
  return [...new Set(names)];
}

/** The real captures, as a connector's own report or upload: bundle `docs` renamed to one of its bundles. */
const STATUS_FIXTURES = [
  'status-0.61-401.json',
  'status-0.61-never-activated.json',
  'status-0.61-ok.json',
  'status-0.61-stopping.json',
  'status-1.1-401.json',
  'status-1.1-ok.json',
  'status-1.1-starting.json',
  'status-1.1-stopping.json',
].map((name) => [name, asJson(fixture(name))] as const);
const LOGS_FIXTURES = ['logs-0.61.json', 'logs-1.1.json'].map((name) => [name, asJson(fixture(name))] as const);

function rename(bundles: Json | undefined, name: string): Json | undefined {
  return isObject(bundles)
    ? Object.fromEntries(Object.values(bundles).map((b) => [name, isObject(b) && 'name' in b ? { ...b, name } : b]))
    : bundles;
}

function capturedReport(c: Choose, at: Place, id: string): { name: string; doc: Json } {
  const [name, doc] = c.pick(STATUS_FIXTURES);
  const own = ownNames(at)[0] ?? 'docs';
  const bundles = isObject(doc) && doc['bundles'] !== undefined ? { bundles: rename(doc['bundles'], own) ?? null } : {};
  return { name, doc: asJson({ ...(doc as JsonObject), labels: { id, version: '1.1.0' }, ...bundles }) };
}

function capturedUpload(c: Choose, at: Place, tag: string): { name: string; doc: Json } {
  const [name, doc] = c.pick(LOGS_FIXTURES);
  const own = ownNames(at)[0] ?? 'docs';
  const events = (Array.isArray(doc) ? doc : []).map((e, j) =>
    isObject(e)
      ? {
          ...e,
          labels: { id: `opa-${tag}`, version: '1.1.0' },
          decision_id: `${tag}-${j}`,
          ...(e['bundles'] === undefined ? {} : { bundles: rename(e['bundles'], own) ?? null }),
        }
      : e,
  );
  return { name, doc: events };
}

function events(c: Choose, at: Place, tag: string, n: number): Json {
  return Array.from({ length: n }, (_, j) => {
    const names = namesFor(c, at);
    const bundles =
      names.length === 0 ? c.pick([undefined, {}]) : Object.fromEntries(names.map((name) => [name, { revision: c.pick(['1', '2', '7']) }]));
    return asJson(decisionEvent(j, { labels: { id: `opa-${tag}`, version: '1.1.0' }, decision_id: `${tag}-${j}`, bundles }));
  });
}

const REPORT_KEYS = [
  'labels',
  'id',
  'version',
  'bundles',
  'docs',
  'internal',
  'authz/extra',
  'active_revision',
  'code',
  'message',
  'http_code',
  'errors',
  'revision',
  'decision_id',
  'name',
  'last_request',
  'result',
  'input',
  'constructor',
  'toString',
  '',
  'é',
];
const REPORT_LEAVES: readonly Json[] = [
  null,
  true,
  false,
  0,
  -1,
  1.5,
  200,
  401,
  999,
  1000,
  1e21,
  '401',
  '4011',
  '',
  ' ',
  'x',
  'agent-x',
  'docs',
  'internal',
  'quiet',
  'bundle_error',
  'request failed: context canceled',
  'é',
  '\u0000',
  '\ud800',
  '𝒜',
  LONG(64),
  LONG(65),
  LONG(128),
  LONG(129),
  LONG(253),
  LONG(254),
  LONG(257),
  LONG(1025),
  '0001-01-01T00:00:00Z',
  [],
  {},
];

/** Bodies that are not JSON at all, or JSON of the wrong kind: the status each endpoint gives them. */
const LITERALS: readonly (readonly [string, number, number])[] = [
  ['', 400, 400],
  [' ', 400, 400],
  ['null', 400, 400],
  ['true', 400, 400],
  ['0', 400, 400],
  ['"x"', 400, 400],
  ['[]', 400, 200],
  ['[{}]', 400, 400],
  ['{}', 400, 400],
  ['{"labels":{}}', 400, 400],
  ['{"labels":{"id":""}}', 400, 400],
  ['{"labels":{"id":"é"}}', 400, 400],
  ['{"labels":null}', 400, 400],
  ['\n', 400, 400],
  ['{', 400, 400],
  ['[', 400, 400],
  ['nul', 400, 400],
  ['NaN', 400, 400],
  ['undefined', 400, 400],
  ['{"labels":{"id":"x"},"bundles":[]}', 400, 400],
  ['[{"labels":{"id":"x"}}', 400, 400],
  ['[{"labels":{"id":"x"}},]', 400, 400],
  ['{"labels":{"id":"x"}}}', 400, 400],
  ['[null]', 400, 400],
  ['[[]]', 400, 400],
];

/** One generated body for an endpoint at a place: built values, broken values, and broken bytes. */
function generatedBody(c: Choose, endpoint: Endpoint, at: Place, tag: string, randomJson: () => Json): Body {
  const { r, pick, int } = c;
  const gzip = r() < (endpoint === 'logs' ? 0.65 : 0.3);
  const built = (): { name: string; doc: Json } => {
    if (r() < 0.12) return endpoint === 'status' ? capturedReport(c, at, tag) : capturedUpload(c, at, tag);
    if (endpoint === 'logs') return { name: 'events', doc: events(c, at, tag, pick([0, 1, 1, 2, 2, 3, 5])) };
    const whole = r() < 0.15;
    return {
      name: whole ? 'a whole report' : 'a report',
      doc: report(tag, Object.fromEntries(namesFor(c, at).map((n) => [n, bundleState(c)])), whole),
    };
  };
  /** Built from its own bundles only, so that broken bytes can never name another connector's. */
  const ownBuilt = (): { name: string; doc: Json } => {
    const own = ownNames(at)[0] ?? 'docs';
    if (r() < 0.3) return endpoint === 'status' ? capturedReport(c, at, tag) : capturedUpload(c, at, tag);
    if (endpoint === 'status') {
      return { name: 'a report', doc: report(tag, { [own]: bundleState(c), ...(r() < 0.3 ? { 'authz/extra': {} } : {}) }, r() < 0.15) };
    }
    const event = (j: number): Json => asJson(decisionEvent(j, { labels: { id: `opa-${tag}` }, decision_id: `${tag}-${j}` }, own));
    return { name: 'events', doc: Array.from({ length: 1 + int(3) }, (_, j) => event(j)) };
  };
  const statusPaths = (names: readonly string[]): readonly (readonly string[])[] => {
    const b = pick([...names, ...UNKNOWN_NAMES, 'docs', 'internal', '']);
    return [
      [],
      ['labels'],
      ['labels', 'id'],
      ['labels', 'version'],
      ['bundles'],
      ['bundles', b],
      ['bundles', b, 'active_revision'],
      ['bundles', b, 'code'],
      ['bundles', b, 'message'],
      ['bundles', b, 'http_code'],
      ['bundles', b, 'errors'],
      ['bundles', b, 'last_request'],
      ['bundles', b, 'last_successful_activation'],
      ['plugins'],
      ['extra'],
    ];
  };
  const eventPaths = (): readonly (readonly string[])[] => {
    const b = pick([...ownNames(at), ...UNKNOWN_NAMES, 'docs', 'internal', '']);
    return [
      [],
      ['labels'],
      ['labels', 'id'],
      ['labels', 'version'],
      ['decision_id'],
      ['path'],
      ['query'],
      ['timestamp'],
      ['bundles'],
      ['bundles', b],
      ['bundles', b, 'revision'],
      ['input'],
      ['result'],
      ['error'],
    ];
  };
  const value = (): Json | undefined => (r() < 0.1 ? undefined : randomJson());

  const x = r();
  if (x < 0.3) {
    const { name, doc } = built();
    return jsonBody(name, endpoint, at, doc, gzip);
  }
  if (x < 0.5) {
    // Random values at random places of a built value.
    let { doc } = built();
    for (let k = 1 + int(3); k > 0; k--) {
      if (endpoint === 'status') doc = setAt(doc, pick(statusPaths(namesIn('status', doc))), value());
      else if (Array.isArray(doc) && doc.length > 0 && r() < 0.85) {
        const j = int(doc.length);
        doc = doc.map((e, i) => (i === j ? setAt(e, pick(eventPaths()), value()) : e));
      } else doc = r() < 0.5 ? [...(Array.isArray(doc) ? doc : [doc]), randomJson()] : randomJson();
    }
    return jsonBody(`random values: ${JSON.stringify(doc).slice(0, 60)}`, endpoint, at, doc, gzip);
  }
  if (x < 0.57) {
    const doc =
      endpoint === 'logs'
        ? Array.from({ length: int(4) }, () => randomJson())
        : r() < 0.5
          ? { labels: { id: tag }, bundles: randomJson() }
          : randomJson();
    return jsonBody(`random JSON: ${JSON.stringify(doc).slice(0, 60)}`, endpoint, at, doc, gzip);
  }
  const { name, doc } = ownBuilt();
  const json = Buffer.from(JSON.stringify(doc), 'utf8');
  if (x < 0.75) {
    const edited = editBytes(c, json);
    const label = `edited bytes of ${name}: ${JSON.stringify(edited.toString('latin1').slice(0, 50))}`;
    return brokenBody(label, endpoint, at, gzip ? gzipSync(edited) : edited, gzip, [200, 400]);
  }
  if (x < 0.81) {
    // An edit of the compressed bytes: caught by gzip's checks, or (in the header's free fields) harmless.
    return brokenBody(`corrupted gzip of ${name}`, endpoint, at, editBytes(c, gzipSync(json)), true, [200, 400, 413]);
  }
  if (x < 0.87) {
    const whole = gzip ? gzipSync(json) : json;
    const cut = int(whole.length);
    return brokenBody(
      `${name}${gzip ? ', gzip' : ''} cut at byte ${cut} of ${whole.length}`,
      endpoint,
      at,
      whole.subarray(0, cut),
      gzip,
      [400],
    );
  }
  if (x < 0.91) {
    const [literal, forStatus, forLogs] = pick(LITERALS);
    const raw = Buffer.from(literal, 'utf8');
    return brokenBody(`body ${JSON.stringify(literal)}`, endpoint, at, gzip ? gzipSync(raw) : raw, gzip, [
      endpoint === 'status' ? forStatus : forLogs,
    ]);
  }
  if (x < 0.95) {
    // A byte that is not UTF-8 inside a string.
    const at2 = json.indexOf('"', 2);
    const raw = bytes(json.subarray(0, at2), [pick([0xff, 0xc0, 0x80, 0xed])], json.subarray(at2));
    return brokenBody(`${name} with a byte that is not UTF-8`, endpoint, at, gzip ? gzipSync(raw) : raw, gzip, [400]);
  }
  const noise = Buffer.from(Array.from({ length: int(300) }, () => int(256)));
  return brokenBody(`random bytes${gzip ? ' declared gzip' : ''}`, endpoint, at, noise, gzip, [400]);
}

/** Content-Types with the answer they get (a JSON or +json type, any case, parameters allowed). */
const CONTENT_TYPES: readonly (readonly [string | undefined, boolean])[] = [
  [undefined, false],
  ['application/json', true],
  ['application/json; charset=utf-8', true],
  ['APPLICATION/JSON', true],
  ['application/json;charset=UTF-8', true],
  ['application/vnd.openpolicyagent+json', true],
  ['application/json ; x=y', true],
  ['', false],
  ['text/plain', false],
  ['text/json', false],
  ['application/jsonx', false],
  ['application/x-www-form-urlencoded', false],
  ['multipart/form-data; boundary=x', false],
  ['application/gzip', false],
  ['application/octet-stream', false],
  ['json', false],
  ['application/', false],
  ['*/*', false],
  [`application/json${latin1(0xff)}`, false],
  [latin1(0xff, 0xfe), false],
  [LONG(8000), false],
  ['application/json,text/plain', false],
  ['application/vnd.openpolicyagent.bundles', false],
];

// ---------------------------------------------------------------------------------------------
// Cases, and the ledger of what each upload was answered

interface Upload {
  readonly endpoint: Endpoint;
  /** The tenant and connector the path names, decoded; undefined when it cannot be decoded. */
  readonly at: Place | undefined;
  /** A refused status report that is still read and its agent recorded (see verdictOf). */
  readonly recognised: boolean;
  /** The value the service parses, when the body is whole JSON with the usual headers. */
  readonly doc?: Json;
}

interface FleetCase extends HttpCase {
  readonly upload?: Upload;
  /** Further checks on every answer, whatever its status: a 405's Allow, a 400's reason. */
  readonly also?: (reply: Reply) => string | undefined;
}

/** Every upload sent, with its answer: what the state afterwards must agree with. */
const ledger: { readonly c: FleetCase; readonly reply: Reply | undefined }[] = [];

/** Request line and headers must stay under Node's 16 KiB header limit, or the parser answers 431 first. */
const headerBytes = (path: string, headers: readonly Header[]): number =>
  path.length + headers.reduce((n, [k, v]) => n + k.length + v.length + 4, 64);

const says =
  (pattern: RegExp) =>
  (reply: Reply): string | undefined => {
    const got = parseJson(reply.body);
    const message = isObject(got) && isObject(got['error']) ? got['error']['message'] : undefined;
    return typeof message === 'string' && pattern.test(message)
      ? undefined
      : `the answer does not say ${pattern}: ${reply.body.toString('utf8', 0, 200)}`;
  };
const allowsPost = (reply: Reply): string | undefined =>
  reply.headers['allow'] === 'POST' ? undefined : `Allow: ${reply.headers['allow']}, expected POST`;

/** Sends every case, records the uploads' answers, and lists what went wrong, one line per failing case. */
async function run(cases: readonly FleetCase[]): Promise<string[]> {
  const outcomes = await pool(cases, IN_FLIGHT, (c) => send(to, c));
  return cases.flatMap((c, i) => {
    const outcome = outcomes[i] as Reply | { readonly error: string };
    const reply = 'error' in outcome ? undefined : outcome;
    if (c.upload) ledger.push({ c, reply });
    const wrong = judge(c, outcome) ?? (reply === undefined ? undefined : c.also?.(reply));
    return wrong === undefined ? [] : [`${c.method} ${c.path.slice(0, 120)} [${c.label}]: ${wrong}`];
  });
}

/** A generated upload to a generated path with a generated token. */
function uploadCases(endpoint: Endpoint, seed: number, count: number): FleetCase[] {
  const c = chooser(seed);
  const randomJson = randomJsonOf(c, REPORT_KEYS, REPORT_LEAVES);
  const cases: FleetCase[] = [];
  for (let i = 0; cases.length < count; i++) {
    const { tenant, connector, aim } = segments(c);
    const partition = endpoint === 'status' && c.r() < 0.2 ? c.pick(PARTITIONS) : undefined;
    const at =
      tenant.decoded === undefined || connector.decoded === undefined || (partition?.decoded === undefined && partition !== undefined)
        ? undefined
        : { tenant: tenant.decoded, connector: connector.decoded };
    const credential = credentialFor(c, aim);
    const verdict = at === undefined ? undefined : verdictOf(credential, at);
    // Ids say whether the token could let anything be recorded, for whoever reads a failure.
    const tag = `${verdict?.status === 'read' || (endpoint === 'status' && verdict?.recognised) ? 'ok' : 'bad'}-${endpoint[0]}${i}`;
    let body = generatedBody(c, endpoint, at ?? aim, tag, randomJson);
    const headers: Header[] = credential.header === undefined ? [] : [['Authorization', credential.header]];
    if (c.r() < 0.08) {
      // Another Content-Type: refused unless it is a JSON type.
      const [type, ok] = c.pick(CONTENT_TYPES);
      const rest = body.headers.filter(([k]) => k !== 'Content-Type');
      const typed: Header[] = type === undefined ? rest : [['Content-Type', type], ...rest];
      const label = `${body.label}, Content-Type ${JSON.stringify(type)?.slice(0, 30)}`;
      body = ok ? { ...body, headers: typed } : { label, bytes: body.bytes, headers: typed, read: [400] };
    }
    headers.push(...body.headers);
    if (c.r() < 0.08)
      headers.push(['User-Agent', c.pick([LONG(3000, 'u'), latin1(0xff, 0x41), 'Open Policy Agent/1.1.0 (linux, amd64)', ''])]);
    const tail = endpoint === 'logs' ? 'logs' : partition === undefined ? 'status' : `status/${partition.raw}`;
    const path = `/${tenant.raw}/connectors/policyagent/${connector.raw}/${tail}`;
    if (headerBytes(path, headers) > 15_000) continue;
    // An undecodable segment is refused by the router (400), or the path matches no route (404).
    const expect = verdict === undefined ? [400, 404] : verdict.status === 'read' ? body.read : [verdict.status];
    cases.push({
      label: `${credential.label} | ${body.label}`.slice(0, 140),
      method: 'POST',
      path,
      headers,
      body: body.bytes,
      expect,
      ...(c.r() < 0.1 ? { chunked: true } : {}),
      ...(body.check ? { check: body.check } : {}),
      upload: {
        endpoint,
        at,
        recognised: endpoint === 'status' && verdict?.recognised === true,
        ...(body.doc === undefined ? {} : { doc: body.doc }),
      },
    });
  }
  return cases;
}

/** A valid body for an endpoint at acme/gateways, as JSON text. */
function validText(endpoint: Endpoint, tag: string): string {
  return JSON.stringify(
    endpoint === 'status'
      ? report(tag, { docs: { revision: '1' } }, false)
      : asJson([decisionEvent(1, { labels: { id: `opa-${tag}` }, decision_id: `${tag}-0` })]),
  );
}

/** One upload to acme/gateways with exact headers and bytes. */
function exactCase(
  endpoint: Endpoint,
  label: string,
  headers: readonly Header[],
  body: Buffer | undefined,
  expect: readonly number[],
  extra: Partial<FleetCase> = {},
): FleetCase {
  return {
    label,
    method: 'POST',
    path: `${connectorPath(GATEWAYS)}/${endpoint}`,
    headers,
    ...(body === undefined ? {} : { body }),
    expect,
    check: answerCheck(endpoint, GATEWAYS, undefined),
    upload: { endpoint, at: GATEWAYS, recognised: false },
    ...extra,
  };
}

/** Content-Type, Content-Encoding and Authorization, one at a time, with a valid token and body unless said otherwise. */
function headerCases(): FleetCase[] {
  const cases: FleetCase[] = [];
  const own = token(ROTATED);
  for (const endpoint of ['status', 'logs'] as const) {
    let n = 0;
    const tag = (): string => `ok-h${endpoint[0]}${n++}`;
    const valid = (): Buffer => Buffer.from(validText(endpoint, tag()), 'utf8');
    const add = (
      label: string,
      headers: readonly Header[],
      body: Buffer | undefined,
      expect: readonly number[],
      message?: RegExp,
    ): void => {
      cases.push(exactCase(endpoint, label, headers, body, expect, message ? { also: says(message) } : {}));
    };
    for (const [type, ok] of CONTENT_TYPES) {
      const headers: Header[] = [bearer(own)];
      if (type !== undefined) headers.push(['Content-Type', type]);
      add(
        `Content-Type ${JSON.stringify(type)?.slice(0, 40)}`,
        headers,
        valid(),
        [ok ? 200 : 400],
        ok ? undefined : /Content-Type must be application\/json/,
      );
    }
    add('two Content-Types', [bearer(own), JSON_TYPE, ['Content-Type', 'text/plain']], valid(), [200, 400]);

    const refusedEncoding = /Content-Encoding must be gzip or identity/;
    const same = (b: Buffer): Buffer => b;
    const utf16 = (b: Buffer): Buffer => Buffer.from(b.toString('utf8'), 'utf16le');
    const encodings: readonly (readonly [string | undefined, (b: Buffer) => Buffer, number, RegExp | undefined])[] = [
      [undefined, same, 200, undefined],
      ['identity', same, 200, undefined],
      ['IDENTITY', same, 200, undefined],
      ['gzip', gzipSync, 200, undefined],
      ['GZIP', gzipSync, 200, undefined],
      [' gzip ', gzipSync, 200, undefined],
      ['Gzip', gzipSync, 200, undefined],
      ['x-gzip', gzipSync, 400, refusedEncoding],
      ['deflate', deflateSync, 400, refusedEncoding],
      ['br', same, 400, refusedEncoding],
      ['compress', same, 400, refusedEncoding],
      ['gzip, identity', gzipSync, 400, refusedEncoding],
      ['identity, gzip', gzipSync, 400, refusedEncoding],
      ['gzip, gzip', (b) => gzipSync(gzipSync(b)), 400, refusedEncoding],
      ['', same, 400, refusedEncoding],
      [latin1(0xff), same, 400, refusedEncoding],
      [LONG(8000), same, 400, refusedEncoding],
      // The bytes are not what the header says.
      ['gzip', same, 400, /not valid gzip/],
      [undefined, gzipSync, 400, /not valid UTF-8/],
      ['identity', gzipSync, 400, /not valid UTF-8/],
      ['gzip', deflateSync, 400, /not valid gzip/],
      ['gzip', (b) => gzipSync(b).subarray(0, 10), 400, /not valid gzip/],
      ['gzip', (b) => Buffer.concat([gzipSync(b), Buffer.from('garbage')]), 400, /not valid gzip/],
      ['gzip', (b) => bytes([0xef, 0xbb, 0xbf], gzipSync(b)), 400, /not valid gzip/],
      ['gzip', (b) => gzipSync(gzipSync(b)), 400, /not valid UTF-8/],
      ['gzip', () => gzipSync(Buffer.alloc(0)), 400, /empty/],
      ['gzip', () => Buffer.alloc(0), 400, /not valid gzip/],
      [undefined, () => Buffer.alloc(0), 400, /empty/],
      // Two gzip members are one stream (RFC 1952 2.2).
      ['gzip', (b) => Buffer.concat([gzipSync(b.subarray(0, 10)), gzipSync(b.subarray(10))]), 200, undefined],
      // One leading byte order mark is dropped by the UTF-8 decoder; anything else is not UTF-8 JSON.
      [undefined, (b) => bytes([0xef, 0xbb, 0xbf], b), 200, undefined],
      [undefined, (b) => bytes([0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf], b), 400, /invalid JSON/],
      [undefined, (b) => bytes([0xff, 0xfe], utf16(b)), 400, /UTF-8/],
      [undefined, utf16, 400, /invalid JSON/],
    ];
    for (const [encoding, encode, status, message] of encodings) {
      const headers: Header[] = [bearer(own), JSON_TYPE];
      if (encoding !== undefined) headers.push(['Content-Encoding', encoding]);
      add(
        `Content-Encoding ${JSON.stringify(encoding)?.slice(0, 30)}, ${encode.name || 'edited'} body`,
        headers,
        encode(valid()),
        [status],
        message,
      );
    }
    add('two Content-Encodings', [bearer(own), JSON_TYPE, GZIP, GZIP], gzipSync(valid()), [400], /Content-Encoding must/);

    // Authorization: the scheme in any case (RFC 6750 2.1); anything else is 401, before the body counts.
    const authorizations: readonly (readonly [string | undefined, boolean])[] = [
      [undefined, false],
      ['', false],
      ['Bearer', false],
      ['Bearer ', false],
      [`Basic ${Buffer.from(`x:${own}`).toString('base64')}`, false],
      [own, false],
      [`Token ${own}`, false],
      [`Bearer ${own}x`, false],
      [`Bearer ${own.slice(0, -1)}`, false],
      [`Bearer ${own} ${own}`, false],
      [`Bearer ${own},${own}`, false],
      [`Bearer "${own}"`, false],
      [`Bearer ${own}${latin1(0xff)}`, false],
      [`Bearer${latin1(0xa0)}${own}`, false],
      [latin1(0xff, 0xfe, 0x80), false],
      [`Bearer ${API_KEY}`, false],
      [`Bearer agent_${LONG(43, 'A')}`, false],
      [`Bearer ${own.toUpperCase()}`, false],
      [`bearer ${own}`, true],
      [`BEARER ${own}`, true],
      [`Bearer  ${own}  `, true],
      [`Bearer\t${own}`, true],
      [`Bearer ${own}`, true],
    ];
    for (const [authorization, ok] of authorizations) {
      const headers: Header[] = [JSON_TYPE];
      if (authorization !== undefined) headers.push(['Authorization', authorization]);
      const label = `Authorization ${JSON.stringify(authorization)?.slice(0, 50)}`;
      add(`${label}, valid body`, headers, valid(), [ok ? 200 : 401]);
      add(`${label}, broken body`, headers, Buffer.from('{"labels":'), [ok ? 400 : 401], ok ? /invalid JSON/ : undefined);
      add(`${label}, no body`, headers, undefined, [ok ? 400 : 401]);
    }
    // RFC 9110 5.3: Authorization is a singleton; with two, either copy may be used or the request refused.
    add('a valid then a wrong Authorization', [bearer(own), bearer('nope'), JSON_TYPE], valid(), [200, 400, 401]);
    add('a wrong then a valid Authorization', [bearer('nope'), bearer(own), JSON_TYPE], valid(), [200, 400, 401]);
    add('two wrong Authorizations', [bearer('nope'), ['Authorization', 'Basic eDp5'], JSON_TYPE], valid(), [400, 401]);
    add('the token in X-Authorization', [['X-Authorization', `Bearer ${own}`], JSON_TYPE], valid(), [401], /connector token is required/);
    add('the token in a cookie', [['Cookie', `token=${own}`], JSON_TYPE], valid(), [401], /connector token is required/);
    const query = `${connectorPath(GATEWAYS)}/${endpoint}?access_token=${own}`;
    cases.push(exactCase(endpoint, 'the token in the query', [JSON_TYPE], valid(), [401], { path: query }));

    // Every kind of token, with a valid body: the token decides, and says why.
    const kinds: readonly (readonly [string, Header[], Place, number, RegExp])[] = [
      ['no token', [], GATEWAYS, 401, /connector token is required/],
      ['an unknown token', [bearer(`agent_${LONG(43, 'Q')}`)], GATEWAYS, 401, /not valid \(unknown, rotated or revoked\)/],
      ['the retired token', [bearer(retired)], GATEWAYS, 401, /not valid/],
      ['the retired token at another connector', [bearer(retired)], { tenant: 'acme', connector: 'backends' }, 401, /not valid/],
      [
        'a token of another connector',
        [bearer(token('acme/backends'))],
        GATEWAYS,
        404,
        /no connector gateways in tenant acme for this token/,
      ],
      ['a token of another tenant', [bearer(token('globex/gateways'))], GATEWAYS, 404, /for this token/],
      ['the token at another tenant', [bearer(own)], { tenant: 'globex', connector: 'gateways' }, 404, /for this token/],
      [
        "the Inactive connector's token",
        [bearer(token('acme/dormant'))],
        { tenant: 'acme', connector: 'dormant' },
        403,
        /connector dormant is Inactive/,
      ],
      ["the Inactive connector's token at another connector", [bearer(token('acme/dormant'))], GATEWAYS, 404, /for this token/],
      ['an API key', [bearer(API_KEY)], GATEWAYS, 401, /not valid/],
    ];
    for (const [label, auth, at, status, message] of kinds) {
      const recognised = endpoint === 'status' && status === 403;
      const body = Buffer.from(
        endpoint === 'status'
          ? JSON.stringify(report(`${recognised ? 'ok' : 'bad'}-k${n++}`, { [ownNames(at)[0] ?? 'docs']: { revision: '1' } }, false))
          : validText(endpoint, `bad-k${n++}`),
      );
      const doc = parseJson(body) as Json;
      cases.push({
        label,
        method: 'POST',
        path: `${connectorPath(at)}/${endpoint}`,
        headers: [...auth, JSON_TYPE],
        body,
        expect: [status],
        also: says(message),
        upload: { endpoint, at, recognised, doc },
      });
    }
  }
  return cases;
}

/** Values at and past every bound of the contract, and of every wrong type. */
const SLOT_VALUES: readonly (Json | undefined)[] = [
  undefined,
  null,
  true,
  0,
  -1,
  1.5,
  401,
  999,
  1000,
  '',
  'x',
  '401',
  '0401',
  '4011',
  'has space',
  'é',
  LONG(64),
  LONG(65),
  LONG(128, '~'),
  LONG(129, '~'),
  LONG(256),
  LONG(257),
  LONG(1024),
  LONG(1025),
  LONG(4096),
  LONG(4097),
  [],
  [{}],
  [{ code: 1 }],
  [{ code: 'c', message: 'm' }],
  {},
  { id: 'x' },
];

/** Every field of a valid report and of a valid event, given every value above (or removed): judged by the contract as restated here. */
function slotCases(): FleetCase[] {
  const cases: FleetCase[] = [];
  const own = token(ROTATED);
  let n = 0;
  const docs = ['bundles', 'docs'];
  const statusSlots: readonly (readonly string[])[] = [
    [],
    ['labels'],
    ['labels', 'id'],
    ['labels', 'version'],
    ['bundles'],
    docs,
    [...docs, 'active_revision'],
    [...docs, 'last_successful_activation'],
    [...docs, 'last_request'],
    [...docs, 'code'],
    [...docs, 'message'],
    [...docs, 'errors'],
    [...docs, 'http_code'],
    ['bundles', LONG(253, 'n')],
    ['bundles', LONG(254, 'n')],
    ['bundles', ''],
    ['metrics'],
  ];
  const eventSlots: readonly (readonly string[])[] = [
    [],
    ['labels'],
    ['labels', 'id'],
    ['labels', 'version'],
    ['decision_id'],
    ['path'],
    ['query'],
    ['timestamp'],
    ['bundles'],
    docs,
    [...docs, 'revision'],
    ['bundles', LONG(254, 'n')],
    ['input'],
    ['result'],
    ['error'],
  ];
  const add = (endpoint: Endpoint, label: string, doc: Json): void => {
    const gzip = endpoint === 'logs';
    const json = JSON.stringify(doc);
    cases.push(
      exactCase(
        endpoint,
        label,
        [bearer(own), JSON_TYPE, ...(gzip ? [GZIP] : [])],
        gzip ? gzipSync(json) : Buffer.from(json),
        [readAnswer(endpoint, GATEWAYS, doc)],
        { check: answerCheck(endpoint, GATEWAYS, doc), upload: { endpoint, at: GATEWAYS, recognised: false, doc } },
      ),
    );
  };
  for (const slot of statusSlots) {
    for (const value of SLOT_VALUES) {
      const doc = asJson(setAt(report(`ok-b${n++}`, { docs: { revision: '1' } }, false), slot, value));
      add(
        'status',
        `${slot.join('.').slice(0, 20) || 'report'} = ${value === undefined ? 'removed' : JSON.stringify(value).slice(0, 30)}`,
        doc,
      );
    }
  }
  for (const slot of eventSlots) {
    for (const value of SLOT_VALUES) {
      const tag = `ok-b${n++}`;
      const event = asJson(setAt(asJson(decisionEvent(0, { labels: { id: `opa-${tag}` }, decision_id: `${tag}-0` })), slot, value));
      add(
        'logs',
        `event ${slot.join('.').slice(0, 20) || 'itself'} = ${value === undefined ? 'removed' : JSON.stringify(value).slice(0, 30)}`,
        [asJson(decisionEvent(1, { labels: { id: `opa-${tag}` }, decision_id: `${tag}-1` })), event],
      );
    }
  }
  // Keys that name the prototype, where JSON.parse makes them own keys: data (never the prototype's), or refused.
  // A bundle named __proto__ (never a Bundle's name) may drop out of the answer's ignored list.
  const proto: readonly (readonly [Endpoint, string, number, readonly string[]])[] = [
    [
      'status',
      '{"labels":{"id":"ok-proto-1"},"bundles":{"__proto__":{"active_revision":"1"}}}',
      200,
      ['{"agent":"ok-proto-1","bundles":[],"ignored":["__proto__"]}', '{"agent":"ok-proto-1","bundles":[],"ignored":[]}'],
    ],
    [
      'status',
      '{"labels":{"id":"ok-proto-2"},"bundles":{"docs":{"active_revision":"1"},"__proto__":{"code":"x"}}}',
      200,
      ['{"agent":"ok-proto-2","bundles":["docs"],"ignored":["__proto__"]}', '{"agent":"ok-proto-2","bundles":["docs"],"ignored":[]}'],
    ],
    [
      'status',
      '{"labels":{"id":"ok-proto-3","__proto__":{"id":"bad-proto"}},"bundles":{"docs":{}}}',
      200,
      ['{"agent":"ok-proto-3","bundles":["docs"],"ignored":[]}'],
    ],
    ['status', '{"__proto__":{"labels":{"id":"bad-proto"}},"bundles":{"docs":{}}}', 400, []],
    [
      'status',
      '{"labels":{"id":"ok-proto-5"},"bundles":{"constructor":{},"toString":{},"hasOwnProperty":{},"docs":{}}}',
      200,
      ['{"agent":"ok-proto-5","bundles":["docs"],"ignored":["constructor","toString","hasOwnProperty"]}'],
    ],
    [
      'status',
      '{"labels":{"id":"ok-proto-6"},"bundles":{"docs":{"__proto__":{"message":"context canceled"},"active_revision":"1"}}}',
      200,
      ['{"agent":"ok-proto-6","bundles":["docs"],"ignored":[]}'],
    ],
    [
      'logs',
      '[{"labels":{"id":"m"},"decision_id":"ok-proto-7","bundles":{"__proto__":{"revision":"1"},"docs":{}}}]',
      200,
      ['{"accepted":1}'],
    ],
    ['logs', '[{"labels":{"id":"m"},"decision_id":"ok-proto-8","bundles":{"__proto__":{"revision":"1"}}}]', 200, ['{"accepted":1}']],
    ['logs', '[{"__proto__":{"labels":{"id":"m"}},"decision_id":"bad-proto-9"}]', 400, []],
    [
      'logs',
      '[{"labels":{"id":"m"},"decision_id":"ok-proto-10","bundles":{"docs":{}},' +
        '"input":{"__proto__":{"authorization":"x"},"constructor":{"prototype":{"polluted":1}}}}]',
      200,
      ['{"accepted":1}'],
    ],
  ];
  for (const [endpoint, json, status, answers] of proto) {
    cases.push(
      exactCase(endpoint, `prototype keys: ${json.slice(0, 60)}`, [bearer(own), JSON_TYPE], Buffer.from(json), [status], {
        check: (reply) => (answers.includes(reply.body.toString('utf8')) ? undefined : `answered ${reply.body.toString('utf8', 0, 200)}`),
      }),
    );
  }
  return cases;
}

/** Bodies at, just past and far past --max-upload-bytes, received or decompressed, with every kind of token. */
function sizeCases(): FleetCase[] {
  const cases: FleetCase[] = [];
  const over = /larger than the limit of 65536 bytes \(--max-upload-bytes\)/;
  const decompressed = /decompressed body is larger than the limit/;
  let n = 0;
  for (const endpoint of ['status', 'logs'] as const) {
    const own = token(ROTATED);
    /** A valid body padded with spaces to exactly `size` bytes. */
    const padded = (size: number): Buffer => {
      const json = validText(endpoint, `ok-z${n++}`);
      return Buffer.from(json + ' '.repeat(size - Buffer.byteLength(json)), 'utf8');
    };
    const bomb = gzipSync(padded(16 << 20));
    const oneMiB = padded(1 << 20);
    const add = (
      label: string,
      headers: readonly Header[],
      body: Buffer,
      expect: readonly number[],
      extra: Partial<FleetCase> = {},
    ): void => {
      cases.push(exactCase(endpoint, label, headers, body, expect, extra));
    };
    const mine: Header[] = [bearer(own), JSON_TYPE];
    add('a body of exactly the limit', mine, padded(LIMIT), [200]);
    add('a body of exactly the limit, chunked', mine, padded(LIMIT), [200], { chunked: true });
    add('a body one byte past the limit', mine, padded(LIMIT + 1), [413], { also: says(over) });
    add('a body one byte past the limit, chunked', mine, padded(LIMIT + 1), [413], { chunked: true, also: says(over) });
    add('gzip of exactly the limit', [...mine, GZIP], gzipSync(padded(LIMIT)), [200]);
    add('gzip of exactly the limit, chunked', [...mine, GZIP], gzipSync(padded(LIMIT)), [200], { chunked: true });
    add('gzip of one byte past the limit', [...mine, GZIP], gzipSync(padded(LIMIT + 1)), [413], { also: says(decompressed) });
    add(`a gzip bomb (${bomb.length} bytes to 16 MiB)`, [...mine, GZIP], bomb, [413], { also: says(decompressed) });
    add('a gzip bomb, chunked', [...mine, GZIP], bomb, [413], { chunked: true, also: says(decompressed) });
    add('a gzip bomb inside gzip', [...mine, GZIP], gzipSync(bomb), [400], { also: says(/UTF-8/) });
    add('1 MiB', mine, oneMiB, [413], { also: says(over) });
    add('1 MiB, chunked', mine, oneMiB, [413], { chunked: true, also: says(over) });
    const noise = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7919 + 13) % 251));
    add('70 KB that gzip cannot shrink', [...mine, GZIP], gzipSync(noise), [413], { also: says(over) });
    add('4 MiB of zero bytes', mine, Buffer.alloc(4 << 20), [413]);
    // The token is judged before the body is read: its answer wins over the size.
    const refused: readonly (readonly [string, Header[], Place, number])[] = [
      ['without a token', [JSON_TYPE], GATEWAYS, 401],
      ['with the retired token', [bearer(retired), JSON_TYPE], GATEWAYS, 401],
      ['with a token of another tenant', [bearer(token('globex/gateways')), JSON_TYPE], GATEWAYS, 404],
      ["with the Inactive connector's token", [bearer(token('acme/dormant')), JSON_TYPE], { tenant: 'acme', connector: 'dormant' }, 403],
      ['as text/plain', [bearer(own), ['Content-Type', 'text/plain']], GATEWAYS, 400],
      ['as br', [bearer(own), JSON_TYPE, ['Content-Encoding', 'br']], GATEWAYS, 400],
    ];
    for (const [label, headers, at, status] of refused) {
      const path = `${connectorPath(at)}/${endpoint}`;
      const recognised = endpoint === 'status' && status === 403;
      add(`1 MiB ${label}`, headers, oneMiB, [status], { path, upload: { endpoint, at, recognised } });
      const gzipped = headers.some(([k]) => k === 'Content-Encoding') ? headers : [...headers, GZIP];
      add(`a gzip bomb ${label}`, gzipped, bomb, [status], { path, upload: { endpoint, at, recognised } });
    }
    // Deep nesting where the contract does not look (plugins, input): data, within the limit and as
    // deep as OPA's decoder lets an input be (10,000 levels, the upload's own two around it)...
    for (const depth of [100, 1000, 10_000]) {
      const deep = `${'['.repeat(depth)}1${']'.repeat(depth)}`;
      const json =
        endpoint === 'status'
          ? `{"labels":{"id":"ok-deep${n++}"},"bundles":{"docs":{"active_revision":"1"}},"plugins":${deep}}`
          : `[{"labels":{"id":"opa-deep"},"decision_id":"ok-deep${n++}","bundles":{"docs":{"revision":"1"}},"input":${deep}}]`;
      add(`${depth} nested lists ${endpoint === 'status' ? 'in plugins' : 'as the input'}`, [...mine, GZIP], gzipSync(json), [200]);
    }
    // ...but no deeper: nothing OPA sends nests deeper, and parsing it is what an attacker wants.
    const deeper = `${'['.repeat(30_000)}1${']'.repeat(30_000)}`;
    add(
      `30,000 nested lists ${endpoint === 'status' ? 'in plugins' : 'as the input'}`,
      [...mine, GZIP],
      gzipSync(
        endpoint === 'status'
          ? `{"labels":{"id":"bad-deep${n++}"},"bundles":{"docs":{"active_revision":"1"}},"plugins":${deeper}}`
          : `[{"labels":{"id":"opa-deep"},"decision_id":"bad-deep${n++}","bundles":{"docs":{"revision":"1"}},"input":${deeper}}]`,
      ),
      [400],
      { also: says(/nested deeper than 10002 levels/) },
    );
    add(
      '100,000 nested lists (past the limit once decompressed)',
      [...mine, GZIP],
      gzipSync(`${'['.repeat(100_000)}${']'.repeat(100_000)}`),
      [413],
      { also: says(decompressed) },
    );
  }
  // Many events: within the limit they are all counted, past it none.
  const many = (count: number, tag: string): string =>
    JSON.stringify(asJson(Array.from({ length: count }, (_, j) => decisionEvent(j, { decision_id: `${tag}-${j}` }))));
  const own = token(ROTATED);
  const ownGzip: Header[] = [bearer(own), JSON_TYPE, GZIP];
  // An upload is validated, then applied, 500 events at a time: one event wrong in the last slice refuses all of them.
  const tiny = (count: number, tag: string, last?: Json): Json => [
    ...Array.from(
      { length: count - (last === undefined ? 0 : 1) },
      (_, j): Json => ({ labels: { id: 'm' }, ...(j % 10 === 0 ? { decision_id: `${tag}-${j}` } : {}), bundles: { docs: {} } }),
    ),
    ...(last === undefined ? [] : [last]),
  ];
  const crowd = Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`b${i}`, {}]));
  const sliced: readonly (readonly [string, Json, number])[] = [
    ['1,200 tiny events (three slices)', tiny(1200, 'ok-slices'), 200],
    ['1,200 tiny events, the last without labels', tiny(1200, 'bad-slices', { decision_id: 'bad-slices-last' }), 400],
    [
      "1,200 tiny events, the last naming another connector's bundle",
      tiny(1200, 'bad-slices', { labels: { id: 'm' }, decision_id: 'bad-slices-last', bundles: { internal: {} } }),
      404,
    ],
    ['1,200 tiny events, the last naming 257 bundles', tiny(1200, 'bad-slices', { labels: { id: 'm' }, bundles: crowd }), 400],
    [
      '1,200 tiny events, the 501st without labels',
      [...(tiny(500, 'bad-slices') as Json[]), {}, ...(tiny(699, 'bad-slices') as Json[])],
      400,
    ],
  ];
  for (const [label, doc, status] of sliced) {
    const json = JSON.stringify(doc);
    cases.push(
      exactCase('logs', `${label} (${json.length} bytes)`, ownGzip, gzipSync(json), [status], {
        check: answerCheck('logs', GATEWAYS, doc),
        upload: { endpoint: 'logs', at: GATEWAYS, recognised: false, doc },
      }),
    );
  }
  // A report or an event names at most 256 bundles.
  const named = (count: number, own?: string): JsonObject => ({
    ...Object.fromEntries(Array.from({ length: count }, (_, i) => [`b${i}`, {}])),
    ...(own === undefined ? {} : { [own]: { active_revision: '1' } }),
  });
  const crowded: readonly (readonly [Endpoint, string, Json, number])[] = [
    ['status', 'a report naming 256 bundles', { labels: { id: 'ok-named-256' }, bundles: named(255, 'docs') }, 200],
    ['status', 'a report naming 257 bundles', { labels: { id: 'bad-named-257' }, bundles: named(256, 'docs') }, 400],
    ['status', 'a report naming 5,000 bundles', { labels: { id: 'bad-named-5000' }, bundles: named(5000) }, 400],
    ['logs', 'an event naming 256 bundles', [{ labels: { id: 'm' }, decision_id: 'ok-named-256', bundles: named(255, 'docs') }], 200],
    ['logs', 'an event naming 257 bundles', [{ labels: { id: 'm' }, decision_id: 'bad-named-257', bundles: named(256, 'docs') }], 400],
  ];
  for (const [endpoint, label, doc, status] of crowded) {
    cases.push(
      exactCase(endpoint, label, ownGzip, gzipSync(JSON.stringify(doc)), [status], {
        check: answerCheck(endpoint, GATEWAYS, doc),
        upload: { endpoint, at: GATEWAYS, recognised: false, doc },
        ...(status === 400 ? { also: says(/names more than 256 bundles/) } : {}),
      }),
    );
  }
  cases.push(
    exactCase('logs', '100 events', ownGzip, gzipSync(many(100, 'ok-many')), [200], {
      check: answerCheck('logs', GATEWAYS, JSON.parse(many(100, 'ok-many')) as Json),
      upload: { endpoint: 'logs', at: GATEWAYS, recognised: false },
    }),
    exactCase('logs', '1,000 events, gzip', ownGzip, gzipSync(many(1000, 'bad-many')), [413], { also: says(decompressed) }),
    exactCase('logs', '1,000 events', [bearer(own), JSON_TYPE], Buffer.from(many(1000, 'bad-many')), [413], { also: says(over) }),
  );
  return cases;
}

/** Odd spellings of the upload paths, and every other method. */
function pathCases(): FleetCase[] {
  const cases: FleetCase[] = [];
  const own = token(ROTATED);
  const base = connectorPath(GATEWAYS);
  let n = 0;
  for (const tail of ['status', 'status/p1', 'logs']) {
    for (const method of ['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'PROPFIND']) {
      for (const [kind, auth] of [
        ['its token', [bearer(own)]],
        ['no token', []],
        ['the retired token', [bearer(retired)]],
      ] as const) {
        const withBody = method !== 'GET' && method !== 'HEAD' && method !== 'OPTIONS';
        cases.push({
          label: `${method} with ${kind}`,
          method,
          path: `${base}/${tail}`,
          headers: [...auth, JSON_TYPE],
          ...(withBody ? { body: Buffer.from(validText(tail === 'logs' ? 'logs' : 'status', `bad-m${n++}`)) } : {}),
          expect: [405],
          also: allowsPost,
        });
      }
    }
  }
  const shapes: readonly (readonly [Endpoint, string, readonly number[]])[] = [
    ['status', `${base}/status`, [200]],
    ['status', `${base}/status/`, [200, 404]],
    ['status', `${base}/status?x=1`, [200]],
    ['status', `${base}/status?`, [200]],
    ['status', `${base}/status?%ZZ&a=b`, [200]],
    ['status', `${base}/status#frag`, [200, 400, 404]],
    ['status', `${base}/status//`, [404]],
    ['status', `${base}/status/p1/`, [200, 404]],
    ['status', `${base}/status/a/b`, [404]],
    ['status', `${base}/status/%2F`, [200]],
    ['status', `${base}/status/%ZZ`, [400, 404]],
    ['status', `${base}/status/${LONG(8000)}`, [200]],
    ['status', '/acme//connectors/policyagent/gateways/status', [404]],
    ['status', '/acme/connectors/policyagent//status', [404]],
    ['status', `${base}/STATUS`, [200, 404]],
    ['status', '/ACME/connectors/policyagent/gateways/status', [404]],
    ['status', '/acme/CONNECTORS/POLICYAGENT/gateways/status', [200, 404]],
    ['status', '/acme/connectors/policyagent/gat%65ways/status', [200]],
    ['status', '/%61cme/connectors/policyagent/gateways/status', [200]],
    ['status', `${base}/%73tatus`, [200, 404]],
    ['status', `${base}%2Fstatus`, [404]],
    ['status', '/./acme/connectors/policyagent/gateways/status', [404]],
    ['status', '/acme/connectors/policyagent/x/../gateways/status', [404]],
    ['status', `${base}/status.json`, [404]],
    ['status', `${base}/statuses`, [404]],
    ['status', base, [404]],
    ['status', `${base}/`, [404]],
    ['status', '/acme/connectors/policyagent/gateways/bundles/docs/status', [404]],
    ['status', '/status', [404]],
    ['status', '/', [404]],
    ['logs', `${base}/logs`, [200]],
    ['logs', `${base}/logs/`, [200, 404]],
    ['logs', `${base}/logs?x=1`, [200]],
    ['logs', `${base}/logs/p1`, [404]],
    ['logs', `${base}/LOGS`, [200, 404]],
    ['logs', `${base}/log`, [404]],
    ['logs', `${base}/logs%2F`, [404]],
    ['logs', `${base}/logs//`, [404]],
    ['logs', '/acme/connectors/policyagent/gat%65ways/logs', [200]],
    ['logs', '/acme/connectors/policyagent/gateways%00/logs', [404]],
    ['logs', '/acme/connectors/policyagent/%ZZ/logs', [400, 404]],
    ['logs', '/acme/connectors/policyagent/gateways/bundles/docs/logs', [404]],
  ];
  for (const [endpoint, path, expect] of shapes) {
    const tag = `ok-p${n++}`;
    const gzip = endpoint === 'logs';
    const json = validText(endpoint, tag);
    cases.push({
      label: 'path shape',
      method: 'POST',
      path,
      headers: [bearer(own), JSON_TYPE, ...(gzip ? [GZIP] : [])],
      body: gzip ? gzipSync(json) : Buffer.from(json),
      expect,
      check: answerCheck(endpoint, GATEWAYS, JSON.parse(json) as Json),
      upload: { endpoint, at: GATEWAYS, recognised: false, doc: JSON.parse(json) as Json },
    });
  }
  cases.push({
    label: 'a 20 KB path',
    method: 'POST',
    path: `${base}/status/${LONG(20_000)}`,
    headers: [bearer(own), JSON_TYPE],
    body: Buffer.from(validText('status', 'bad-p-long')),
    expect: [431],
    bare: true,
  });
  return cases;
}

/** What the agents and decisions reads answer: the bundle they name, and a list. */
function readCheck(
  method: string,
  what: 'agents' | 'decisions',
  tenant: string,
  connector: string,
  bundle: string,
): (reply: Reply) => string | undefined {
  return (reply) => {
    if (method === 'HEAD') return reply.body.length === 0 ? undefined : 'a HEAD answered with a body';
    const got = parseJson(reply.body);
    if (!isObject(got) || got['tenant'] !== tenant || got['connector'] !== connector || got['bundle'] !== bundle) {
      return `the ${what} of another bundle: ${reply.body.toString('utf8', 0, 200)}`;
    }
    return Array.isArray(got[what === 'agents' ? 'list' : 'decisions']) ? undefined : `no list in ${reply.body.toString('utf8', 0, 200)}`;
  };
}

/** GET .../bundles/{bundle}/agents and /decisions: the tenant's API key, never a connector token. */
function readCases(count: number): FleetCase[] {
  const c = chooser(0x4ead);
  const cases: FleetCase[] = [];
  while (cases.length < count) {
    const { tenant, connector, aim } = segments(c);
    const bundle = c.r() < 0.7 ? plain(ownNames(aim)[0] ?? 'docs') : c.pick([plain('docs'), plain('internal'), plain('quiet'), ...NOISE]);
    const what = c.pick(['agents', 'decisions'] as const);
    const x = c.r();
    const method = x < 0.8 ? 'GET' : x < 0.9 ? 'HEAD' : c.pick(['POST', 'PUT', 'DELETE']);
    const key = c.pick([API_KEY, API_KEY, GLOBEX_KEY]);
    const credential =
      c.r() < 0.7
        ? { header: c.pick([`Bearer ${key}`, `bearer ${key}`, `Bearer\t${key} `]), tenant: KEYS.get(key) }
        : {
            header: c.pick([
              undefined,
              '',
              'Bearer',
              `Bearer ${token(keyOf(aim))}`,
              `Bearer ${retired}`,
              `Basic ${key}`,
              `Bearer ${key}x`,
              `Bearer ${LONG(6000, 'k')}`,
              latin1(0xff, 0xfe),
              key,
            ]),
            tenant: undefined,
          };
    let expect: number[];
    // An undecodable name is refused (400) or names nothing (404); the key may be judged first.
    if (tenant.decoded === undefined || connector.decoded === undefined || bundle.decoded === undefined) {
      expect = [400, 404, ...(credential.tenant === undefined ? [401] : [])];
    } else if (method !== 'GET' && method !== 'HEAD') {
      expect = [404];
    } else if (credential.tenant === undefined) {
      expect = [401];
    } else {
      expect = credential.tenant === tenant.decoded && ownerOf(tenant.decoded, bundle.decoded) === connector.decoded ? [200] : [404];
    }
    const headers: Header[] = credential.header === undefined ? [] : [['Authorization', credential.header]];
    const path = `/${tenant.raw}/connectors/policyagent/${connector.raw}/bundles/${bundle.raw}/${what}`;
    if (headerBytes(path, headers) > 15_000) continue;
    cases.push({
      label: `${method} ${what} ${JSON.stringify(credential.header)?.slice(0, 30)}`,
      method,
      path,
      headers,
      expect,
      check: readCheck(method, what, tenant.decoded ?? '', connector.decoded ?? '', bundle.decoded ?? ''),
    });
  }
  return cases;
}

/**
 * Refused uploads of every kind, all naming bundles that exist, sent after everything else: the
 * recent decisions keep only the newest 100 per bundle, so whatever a refusal leaked would be the
 * newest entry there when the state is compared.
 */
function volleyCases(rounds: number): FleetCase[] {
  const cases: FleetCase[] = [];
  const own = token(ROTATED);
  const dormant: Place = { tenant: 'acme', connector: 'dormant' };
  const crowd = Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`b${i}`, {}]));
  for (let i = 0; i < rounds; i++) {
    const tag = `bad-volley${i}`;
    const events = (at: Place, last?: Json): Json => [
      ...[0, 1, 2].map(
        (j): Json => ({
          labels: { id: `opa-${tag}` },
          decision_id: `${tag}-${j}`,
          bundles: { [ownNames(at)[0] ?? 'docs']: { revision: '1' } },
          path: 'acl/allow',
          result: true,
        }),
      ),
      ...(last === undefined ? [] : [last]),
    ];
    const reportOf = (at: Place, extra: Record<string, BundleState> = {}): Json =>
      report(`${tag}-${keyOf(at)}`, { [ownNames(at)[0] ?? 'docs']: { revision: '1' }, ...extra }, false);
    const backends: Place = { tenant: 'acme', connector: 'backends' };
    const kinds: readonly (readonly [Endpoint, string, readonly Header[], Place, Json, number])[] = [
      [
        'logs',
        "an event naming another connector's bundle",
        [bearer(own), JSON_TYPE, GZIP],
        GATEWAYS,
        events(GATEWAYS, { labels: { id: 'x' }, bundles: { internal: {} } }),
        404,
      ],
      ['logs', 'a last event without labels', [bearer(own), JSON_TYPE, GZIP], GATEWAYS, events(GATEWAYS, { decision_id: `${tag}-x` }), 400],
      [
        'logs',
        'a last event naming 257 bundles',
        [bearer(own), JSON_TYPE, GZIP],
        GATEWAYS,
        events(GATEWAYS, { labels: { id: 'x' }, bundles: crowd }),
        400,
      ],
      ['logs', 'the retired token', [bearer(retired), JSON_TYPE, GZIP], GATEWAYS, events(GATEWAYS), 401],
      ['logs', 'a token of another tenant', [bearer(token('globex/gateways')), JSON_TYPE, GZIP], GATEWAYS, events(GATEWAYS), 404],
      ['logs', "the Inactive connector's token", [bearer(token('acme/dormant')), JSON_TYPE, GZIP], dormant, events(dormant), 403],
      ['logs', 'text/plain', [bearer(own), ['Content-Type', 'text/plain'], GZIP], GATEWAYS, events(GATEWAYS), 400],
      [
        'status',
        "a report naming another connector's bundle",
        [bearer(own), JSON_TYPE],
        GATEWAYS,
        reportOf(GATEWAYS, { internal: {} }),
        404,
      ],
      ['status', 'a report naming 257 bundles', [bearer(own), JSON_TYPE], GATEWAYS, reportOf(GATEWAYS, crowd), 400],
      ['status', 'an unknown token', [bearer(`agent_${LONG(43, 'V')}`), JSON_TYPE], GATEWAYS, reportOf(GATEWAYS), 401],
      ['status', 'the retired token at another connector', [bearer(retired), JSON_TYPE], backends, reportOf(backends), 401],
      ['status', 'text/plain', [bearer(own), ['Content-Type', 'text/plain']], GATEWAYS, reportOf(GATEWAYS), 400],
    ];
    for (const [endpoint, label, headers, at, doc, status] of kinds) {
      const json = JSON.stringify(doc);
      const gzip = headers.some(([k]) => k === 'Content-Encoding');
      cases.push({
        label: `last volley: ${label}`,
        method: 'POST',
        path: `${connectorPath(at)}/${endpoint}`,
        headers,
        body: gzip ? gzipSync(json) : Buffer.from(json),
        expect: [status],
        upload: { endpoint, at, recognised: false },
      });
    }
  }
  return cases;
}

// ---------------------------------------------------------------------------------------------
// Raw HTTP

/** What raw cases may have recorded (all under acme/docs): agent ids, and decisions counted exactly. */
const rawLedger = {
  mayAgents: new Set<string>(),
  mustAgents: new Set<string>(),
  acceptedReports: { min: 0, max: 0 },
  decisionIds: new Set<string>(),
  decisions: 0,
  uploads: 0,
};

/**
 * Raw requests written on a new connection. Most end with a half-close (rawBarrage); those answered
 * only after gunzip on the thread pool are `held` instead: Node's server aborts what it is still
 * answering when the client half-closes (httpAllowHalfOpen is false), so their last request asks
 * for Connection: close.
 */
function rawCases(): { halfClosed: RawCase[]; held: RawCase[] } {
  const own = token(ROTATED);
  const base = connectorPath(GATEWAYS);
  const head = (tail: string, extra = '', auth = `Authorization: Bearer ${own}\r\n`): string =>
    `POST ${base}/${tail} HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\n${extra}`;
  const BAD = [400];
  const GZIPPED = 'Content-Encoding: gzip\r\n';
  const CHUNKED = 'Transfer-Encoding: chunked\r\n';
  const CLOSING = 'Connection: close\r\n';
  let n = 0;
  /** A status report that must, may or must never be recorded (and counted as accepted). */
  const status = (fate: 'must' | 'may' | 'never'): string => {
    const id = `${fate === 'never' ? 'bad' : 'ok'}-raw${n++}`;
    if (fate !== 'never') {
      rawLedger.mayAgents.add(id);
      rawLedger.acceptedReports.max++;
    }
    if (fate === 'must') {
      rawLedger.mustAgents.add(id);
      rawLedger.acceptedReports.min++;
    }
    return JSON.stringify(report(id, { docs: { revision: '1' } }, false));
  };
  /** A gzip upload of two events that must be accepted (and counted), or never. */
  const upload = (accepted: boolean): Buffer => {
    const tag = `${accepted ? 'ok' : 'bad'}-rawlog${n++}`;
    if (accepted) {
      rawLedger.decisionIds.add(`${tag}-0`).add(`${tag}-1`);
      rawLedger.decisions += 2;
      rawLedger.uploads += 1;
    }
    return gzipSync(
      JSON.stringify(asJson([0, 1].map((j) => decisionEvent(j, { labels: { id: `opa-${tag}` }, decision_id: `${tag}-${j}` })))),
    );
  };
  const post = (tail: string, extra: string, body: string | Buffer, auth?: string): Buffer => bytes(head(tail, extra, auth), '\r\n', body);
  const sized = (tail: string, body: string | Buffer, extra = '', auth?: string): Buffer =>
    post(tail, `Content-Length: ${Buffer.byteLength(body)}\r\n${extra}`, body, auth);
  const chunks = (body: string | Buffer, size: number): Buffer => {
    const all = Buffer.from(body);
    const out: Buffer[] = [];
    for (let i = 0; i < all.length; i += size) {
      out.push(Buffer.from(`${Math.min(size, all.length - i).toString(16)}\r\n`), all.subarray(i, i + size), Buffer.from('\r\n'));
    }
    return Buffer.concat([...out, Buffer.from('0\r\n\r\n')]);
  };
  const c = (label: string, data: Buffer | string, expect: readonly (readonly number[])[], mayCloseSilently = false): RawCase => ({
    label,
    bytes: typeof data === 'string' ? Buffer.from(data, 'latin1') : data,
    expect,
    ...(mayCloseSilently ? { mayCloseSilently } : {}),
  });
  const retiredToken = `Authorization: Bearer ${retired}\r\n`;

  const held: RawCase[] = [
    c(
      'three pipelined gzip uploads',
      bytes(sized('logs', upload(true), GZIPPED), sized('logs', upload(true), GZIPPED), sized('logs', upload(true), GZIPPED + CLOSING)),
      [[200], [200], [200]],
    ),
    c('a report and an upload, pipelined', bytes(sized('status', status('must')), sized('logs', upload(true), GZIPPED + CLOSING)), [
      [200],
      [200],
    ]),
    c('a chunked gzip upload', post('logs', CHUNKED + GZIPPED + CLOSING, chunks(upload(true), 13)), [[200]]),
    c('a gzip bomb in 1 KB chunks', post('logs', CHUNKED + GZIPPED + CLOSING, chunks(gzipSync(Buffer.alloc(8 << 20, 32)), 1024)), [[413]]),
  ];
  const padded = status('never').replace('"plugins"', `"pad":"${LONG(70_000)}","plugins"`);
  const equal = status('may');
  const lf = status('may');
  const old = status('must');
  const absolute = status('may');
  const halfClosed: RawCase[] = [
    c('a valid report, for reference', sized('status', status('must')), [[200]]),
    c('three pipelined reports', bytes(...[0, 1, 2].map(() => sized('status', status('must')))), [[200], [200], [200]]),
    // A refusal does not read the body: the connection closes after it, and what follows need not be answered.
    c(
      'a report without a token, then a valid one, pipelined',
      bytes(sized('status', status('never'), '', ''), sized('status', status('may'))),
      [[401], [200]],
    ),
    c('a chunked report', post('status', CHUNKED, chunks(status('must'), 97)), [[200]]),
    c(
      'a report shorter than its Content-Length, then the client hangs up',
      post('status', 'Content-Length: 5000\r\n', status('never')),
      [BAD],
      true,
    ),
    c(
      'an upload shorter than its Content-Length, then the client hangs up',
      post('logs', `Content-Length: 5000\r\n${GZIPPED}`, upload(false)),
      [BAD],
      true,
    ),
    c(
      'a retired token and a report shorter than its Content-Length, then the client hangs up',
      post('status', 'Content-Length: 5000\r\n', status('never'), retiredToken),
      [[400, 401]],
      true,
    ),
    c('two different Content-Lengths', post('status', 'Content-Length: 100\r\nContent-Length: 101\r\n', status('never')), [BAD]),
    c('two different Content-Lengths on an upload', post('logs', `Content-Length: 10\r\nContent-Length: 11\r\n${GZIPPED}`, upload(false)), [
      BAD,
    ]),
    c('two equal Content-Lengths', post('status', `Content-Length: ${equal.length}\r\nContent-Length: ${equal.length}\r\n`, equal), [
      [200, 400],
    ]),
    c('a Content-Length of 10 MB with a short body', post('status', 'Content-Length: 10000000\r\n', status('never')), [[413]]),
    c('a Content-Length of 10 MB with a short upload', post('logs', `Content-Length: 10000000\r\n${GZIPPED}`, upload(false)), [[413]]),
    c('a Content-Length of 10 MB with the retired token', post('status', 'Content-Length: 10000000\r\n', status('never'), retiredToken), [
      [401],
    ]),
    c('a Content-Length of 10^20', post('status', 'Content-Length: 99999999999999999999\r\n', status('never')), [[400, 413]]),
    c('Content-Length and chunked together', post('status', `Content-Length: 10\r\n${CHUNKED}`, chunks(status('never'), 50)), [BAD]),
    c('Transfer-Encoding gzip', post('logs', 'Transfer-Encoding: gzip\r\n', upload(false)), [[400, 501]]),
    c('Transfer-Encoding chunked twice', post('status', 'Transfer-Encoding: chunked, chunked\r\n', chunks(status('never'), 50)), [BAD]),
    c('a chunk size that is not hex', post('status', CHUNKED, `zz\r\n${status('never')}\r\n0\r\n\r\n`), [BAD]),
    c('a chunk size of 2^68', post('status', CHUNKED, `100000000000000000\r\n${status('never')}\r\n0\r\n\r\n`), [[400, 413]]),
    c(
      'a chunk shorter than its size, then the client hangs up',
      post('logs', CHUNKED + GZIPPED, bytes('ffff\r\n', upload(false))),
      [BAD],
      true,
    ),
    c('70 KB in 1 KB chunks', post('status', CHUNKED, chunks(padded, 1024)), [[413]]),
    c('Expect: 100-continue', sized('status', status('may'), 'Expect: 100-continue\r\n'), [[100, 200], [200]]),
    c('an unknown Expect', sized('status', status('never'), 'Expect: coffee\r\n'), [[417]]),
    c('a NUL in a header value', sized('status', status('never'), 'X-Note: a\u0000b\r\n'), [BAD]),
    c('a folded Content-Encoding', sized('logs', upload(false), `${GZIPPED}  , br\r\n`), [BAD]),
    c('a bare CR in a header value', sized('status', status('never'), 'X-Note: a\rb\r\n'), [BAD]),
    c(
      'bare LF line endings',
      `POST ${base}/status HTTP/1.1\nHost: x\nAuthorization: Bearer ${own}\nContent-Type: application/json\nContent-Length: ${lf.length}\n\n${lf}`,
      [[200, 400]],
    ),
    c(
      'HTTP/1.0 without Host',
      `POST ${base}/status HTTP/1.0\r\nAuthorization: Bearer ${own}\r\nContent-Type: application/json\r\nContent-Length: ${old.length}\r\n\r\n${old}`,
      [[200]],
    ),
    c(
      'an absolute-form target',
      bytes(head('status').replace(`POST ${base}`, `POST http://x${base}`), `Content-Length: ${absolute.length}\r\n\r\n`, absolute),
      [[200, 400]],
    ),
    c('two Authorization headers, the first valid', sized('status', status('may'), 'Authorization: Bearer nope\r\n'), [[200, 400, 401]]),
    c('UTF-8 in the Authorization header', sized('status', status('never'), '', 'Authorization: Bearer é\r\n'), [[401]]),
    c('a lower-case method', bytes(head('status').replace('POST', 'post'), 'Content-Length: 2\r\n\r\n{}'), [BAD]),
    c('2,000 headers', sized('status', status('never'), Array.from({ length: 2000 }, (_, i) => `X-H${i}: ${i}\r\n`).join('')), [
      [400, 431],
    ]),
    c('a 20 KB header', sized('status', status('never'), `X-Big: ${LONG(20_000)}\r\n`), [[431]]),
    c('headers that never end, then the client hangs up', `POST ${base}/logs HTTP/1.1\r\nHost: x\r\nX-A: ${LONG(1000)}`, [BAD], true),
  ];
  return { halfClosed, held };
}

/** Writes a held case's bytes without half-closing and reads until the server closes; what is wrong, if anything. */
function sendHeld(c: RawCase): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = connect(to.port, to.host);
    const chunks: Buffer[] = [];
    let error: string | undefined;
    socket.setTimeout(10_000, () => socket.destroy(new Error('not closed within 10000 ms')));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', (err) => {
      error = err.message;
    });
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const statuses = [...text.matchAll(/HTTP\/1\.[01] (\d{3})[^\r\n]*\r\n/g)].map((m) => Number(m[1]));
      if (statuses.length === 0) {
        resolve(`closed without an answer${error ? ` (${error})` : ''}`);
        return;
      }
      const wrong = statuses.findIndex((status, n) => !(c.expect[Math.min(n, c.expect.length - 1)] ?? []).includes(status));
      resolve(
        wrong < 0
          ? undefined
          : `answer ${wrong + 1} is ${statuses[wrong]}, expected ${c.expect[Math.min(wrong, c.expect.length - 1)]?.join('|')}`,
      );
    });
    socket.write(c.bytes);
  });
}

// ---------------------------------------------------------------------------------------------
// What the service must hold afterwards

/** The value an upload's bytes decode to, as the service reads them (gunzip, strict UTF-8, JSON), or undefined. */
function sentValue(c: FleetCase): Json | undefined {
  if (c.body === undefined) return undefined;
  const encoding =
    c.headers
      .filter(([k]) => k.toLowerCase() === 'content-encoding')
      .map(([, v]) => v)
      .join(', ')
      .trim()
      .toLowerCase() || 'identity';
  try {
    const raw = encoding === 'gzip' ? gunzipSync(c.body, { maxOutputLength: LIMIT }) : encoding === 'identity' ? c.body : undefined;
    return raw === undefined ? undefined : (JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(raw)) as Json);
  } catch {
    return undefined;
  }
}

const add = <T>(map: Map<string, Set<T>>, key: string, value: T): void => {
  const set = map.get(key) ?? new Set<T>();
  set.add(value);
  map.set(key, set);
};

interface Expected {
  /** `tenant/bundle` → agent ids that an accepted report, or a refused but recognised one, may have recorded there. */
  readonly mayAgents: Map<string, Set<string>>;
  /** `tenant/bundle` → agent ids that must be listed there: their one report was accepted (or recognised) and not stopping. */
  readonly mustAgents: Map<string, Map<string, 'any' | 'failing'>>;
  /** `tenant/bundle` → decision ids of accepted uploads. */
  readonly decisionIds: Map<string, Set<string>>;
  /** `tenant/bundle` (bundle empty for none of ours) → decisions accepted. */
  readonly decisions: Map<string, number>;
  readonly acceptedReports: { readonly min: number; readonly max: number };
  readonly acceptedUploads: number;
  /** Accepted answers that do not add up. */
  readonly problems: string[];
}

/** What the recorded answers allow the service to hold: only accepted uploads, and recognised reports. */
function expectedState(): Expected {
  const mayAgents = new Map<string, Set<string>>();
  const candidates: { key: string; id: string; state: 'any' | 'failing' }[] = [];
  const times = new Map<string, number>();
  const may = (key: string, id: string): void => {
    add(mayAgents, key, id);
    times.set(`${key} ${id}`, (times.get(`${key} ${id}`) ?? 0) + 1);
  };
  const decisionIds = new Map<string, Set<string>>();
  const decisions = new Map<string, number>();
  const problems: string[] = [];
  let acceptedReports = 0;
  let acceptedUploads = 0;
  for (const { c, reply } of ledger) {
    const u = c.upload as Upload;
    const at = u.at;
    if (at === undefined) continue;
    const status = reply?.status;
    if (u.endpoint === 'status') {
      if (status === 200) {
        acceptedReports++;
        const got = parseJson((reply as Reply).body);
        const agent = isObject(got) ? got['agent'] : undefined;
        const named = isObject(got) && Array.isArray(got['bundles']) ? got['bundles'] : [];
        if (typeof agent !== 'string') {
          problems.push(`[${c.label}] a 200 without an agent`);
          continue;
        }
        for (const b of named) if (typeof b === 'string') may(`${at.tenant}/${b}`, agent);
        if (u.doc !== undefined)
          for (const b of listedUnder(at, u.doc)) candidates.push({ key: `${at.tenant}/${b}`, id: agent, state: 'any' });
      } else if (u.recognised && (reply === undefined || status === 403)) {
        // Read although refused: whatever id and bundles the body holds may be recorded, as failing.
        const value = sentValue(c);
        const id = isObject(value) && isObject(value['labels']) ? value['labels']['id'] : undefined;
        if (typeof id === 'string') for (const b of Object.keys(bundlesOf(value))) may(`${at.tenant}/${b}`, id);
        if (u.doc !== undefined && readAnswer('status', at, u.doc) === 200 && typeof id === 'string') {
          for (const b of listedUnder(at, u.doc)) candidates.push({ key: `${at.tenant}/${b}`, id, state: 'failing' });
        }
      } else if (reply === undefined) {
        // Unanswered (already a failure): it may have done anything a report can.
        const value = sentValue(c);
        const id = isObject(value) && isObject(value['labels']) ? value['labels']['id'] : undefined;
        if (typeof id === 'string') for (const b of Object.keys(bundlesOf(value))) may(`${at.tenant}/${b}`, id);
      }
      continue;
    }
    // Unanswered (already a failure): its decisions may be listed, but are not counted as accepted.
    if (status !== 200 && reply !== undefined) continue;
    const value = sentValue(c);
    if (!Array.isArray(value)) {
      if (status === 200) problems.push(`[${c.label}] an upload answered 200 that is not a JSON array`);
      continue;
    }
    if (status === 200) acceptedUploads++;
    for (const e of value) {
      // Counted under the first bundle of the connector the event names, or under none.
      const bundle = Object.keys(bundlesOf(e)).find((n) => isOwn(at, n)) ?? '';
      const key = `${at.tenant}/${bundle}`;
      if (status === 200) decisions.set(key, (decisions.get(key) ?? 0) + 1);
      const id = isObject(e) ? e['decision_id'] : undefined;
      if (bundle !== '') add(decisionIds, key, typeof id === 'string' ? id : '(none)');
    }
  }
  for (const id of rawLedger.mayAgents) may('acme/docs', id);
  for (const id of rawLedger.mustAgents) candidates.push({ key: 'acme/docs', id, state: 'any' });
  for (const id of rawLedger.decisionIds) add(decisionIds, 'acme/docs', id);
  decisions.set('acme/docs', (decisions.get('acme/docs') ?? 0) + rawLedger.decisions);
  // An id that more than one report may have recorded can have been dropped by a later one (a stopping OPA).
  const mustAgents = new Map<string, Map<string, 'any' | 'failing'>>();
  for (const { key, id, state } of candidates) {
    if (times.get(`${key} ${id}`) !== 1) continue;
    const m = mustAgents.get(key) ?? new Map<string, 'any' | 'failing'>();
    m.set(id, state);
    mustAgents.set(key, m);
  }
  return {
    mayAgents,
    mustAgents,
    decisionIds,
    decisions,
    problems,
    acceptedReports: { min: acceptedReports + rawLedger.acceptedReports.min, max: acceptedReports + rawLedger.acceptedReports.max },
    acceptedUploads: acceptedUploads + rawLedger.uploads,
  };
}

/** Ids the service lists that no accepted or recognised upload explains: a refused upload changed state. */
const unexplained = (listed: readonly string[], allowed: ReadonlySet<string> | undefined): string[] =>
  listed.filter((id) => !allowed?.has(id));

async function readJson(path: string, key: string): Promise<JsonObject> {
  const res = await t.api(path, { headers: { Authorization: `Bearer ${key}` } });
  expect(res.status, path).toBe(200);
  return (await res.json()) as JsonObject;
}

const keyFor = (tenant: string): string => (tenant === 'globex' ? GLOBEX_KEY : API_KEY);
const bundleUrl = (key: string): string => {
  const [tenant, bundle] = key.split('/') as [string, string];
  return `${connectorPath({ tenant, connector: OWNER.get(key) ?? '' })}/bundles/${bundle}`;
};

async function listedAgents(key: string): Promise<{ id: string; state: string }[]> {
  const body = await readJson(`${bundleUrl(key)}/agents`, keyFor(key.split('/')[0] ?? ''));
  return body['list'] as { id: string; state: string }[];
}

async function listedDecisions(key: string): Promise<string[]> {
  const body = await readJson(`${bundleUrl(key)}/decisions`, keyFor(key.split('/')[0] ?? ''));
  return (body['decisions'] as { decisionId?: string }[]).map((d) => d.decisionId ?? '(none)');
}

/** Metric lines as `labels → value`, for one metric name. */
async function metric(name: string): Promise<Map<string, number>> {
  const text = await (await t.ops('/metrics')).text();
  const lines = text.split('\n').filter((l) => l.startsWith(`${name}{`));
  return new Map(lines.map((l) => [l.slice(name.length, l.lastIndexOf(' ')), Number(l.slice(l.lastIndexOf(' ') + 1))]));
}

/** acl_agent_decisions_total summed over results, by `tenant/bundle`. */
async function decisionsCounted(): Promise<Map<string, number>> {
  const counted = new Map<string, number>();
  for (const [labels, value] of await metric('acl_agent_decisions_total')) {
    const m = /^\{tenant="([^"]*)",bundle="([^"]*)",result="[^"]*"\}$/.exec(labels);
    const key = m ? `${m[1]}/${m[2]}` : labels;
    counted.set(key, (counted.get(key) ?? 0) + value);
  }
  return counted;
}

// ---------------------------------------------------------------------------------------------

/** "POST /x: TypeError ..." for a logged error line. */
function summary(line: string): string {
  try {
    const { method, path, err, msg } = JSON.parse(line) as {
      method?: string;
      path?: string;
      err?: { type?: string; message?: string };
      msg?: string;
    };
    return `${method ?? ''} ${path ?? ''}: ${err?.type ?? ''} ${err?.message ?? msg ?? ''}`;
  } catch {
    return line.slice(0, 200);
  }
}

/** The statuses that some case pins exactly: proof that the generator reaches each answer. */
const pinned = (cases: readonly HttpCase[]): number[] =>
  [...new Set(cases.flatMap((c) => (c.expect.length === 1 ? c.expect : [])))].sort((a, b) => a - b);

/** Fails with the first failures listed, one line each. */
function expectNoFailures(failures: readonly string[], total: number): void {
  expect(failures.slice(0, 40), `${failures.length} of ${total} cases answered wrongly`).toEqual([]);
}

const sorted = (map: ReadonlyMap<string, number>): [string, number][] =>
  [...map].filter(([, v]) => v !== 0).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

describe('under a barrage of bad uploads, the service', () => {
  it('answers status reports with every token, body, encoding and path as the contract says, never a 500', async () => {
    const cases = uploadCases('status', 0x57a7, STATUS_CASES);
    expect(pinned(cases)).toEqual([200, 400, 401, 403, 404]);
    expectNoFailures(await run(cases), cases.length);
  });

  it('answers decision-log uploads with every token, body, encoding and path as the contract says, never a 500', async () => {
    const cases = uploadCases('logs', 0x1065, LOGS_CASES);
    expect(pinned(cases)).toEqual([200, 400, 401, 403, 404]);
    expectNoFailures(await run(cases), cases.length);
  });

  it('judges Content-Type, Content-Encoding, gzip and Authorization exactly, and every kind of token, on both endpoints', async () => {
    const cases = headerCases();
    expect(pinned(cases)).toEqual([200, 400, 401, 403, 404]);
    expectNoFailures(await run(cases), cases.length);
  });

  it('judges every field of a report and an event, at and past its bounds and of every type, exactly', async () => {
    const cases = slotCases();
    expect(pinned(cases)).toEqual([200, 400]);
    expectNoFailures(await run(cases), cases.length);
    expect(Object.prototype).not.toHaveProperty('polluted');
  });

  it('refuses bodies and gzip bombs past --max-upload-bytes with 413, once the token is judged', async () => {
    const cases = sizeCases();
    expect(pinned(cases)).toEqual([200, 400, 401, 403, 404, 413]);
    expectNoFailures(await run(cases), cases.length);
  });

  it('answers odd spellings of the upload paths with 200, 400 or 404, and other methods with 405 and Allow: POST', async () => {
    const cases = pathCases();
    expect(pinned(cases)).toEqual([200, 404, 405, 431]);
    expectNoFailures(await run(cases), cases.length);
  });

  it("answers the agents and decisions reads for the tenant's API key only, whatever the path", async () => {
    const cases = readCases(READ_CASES);
    expect(pinned(cases)).toEqual([200, 401, 404]);
    expectNoFailures(await run(cases), cases.length);
  });

  it('refuses broken HTTP framing of uploads on the wire with a 4xx, never a 500', async () => {
    const { halfClosed, held } = rawCases();
    const failures = [
      ...(await rawBarrage(to, halfClosed, IN_FLIGHT)),
      ...(await pool(held, IN_FLIGHT, sendHeld)).flatMap((wrong, i) => (wrong === undefined ? [] : [`held [${held[i]?.label}]: ${wrong}`])),
    ];
    expectNoFailures(failures, halfClosed.length + held.length);
  });

  it('refuses a last volley of uploads of every kind, after everything else', async () => {
    const cases = volleyCases(20);
    expect(pinned(cases)).toEqual([400, 401, 403, 404]);
    expectNoFailures(await run(cases), cases.length);
  });

  it('holds exactly the agents and decisions of accepted uploads and recognised reports: refused uploads changed nothing', async () => {
    const want = expectedState();
    expect(want.problems.slice(0, 10)).toEqual([]);
    for (const key of OWNER.keys()) {
      const listed = await listedAgents(key);
      const ids = listed.map((a) => a.id);
      expect(unexplained(ids, want.mayAgents.get(key)), `agents of ${key} that no accepted report explains`).toEqual([]);
      // The check can fail: an id no answer accepted is caught.
      expect(unexplained([...ids, 'bad-planted'], want.mayAgents.get(key))).toEqual(['bad-planted']);
      const missing = [...(want.mustAgents.get(key) ?? [])].filter(
        ([id, state]) => !listed.some((a) => a.id === id && (state === 'any' || a.state === state)),
      );
      expect(missing.slice(0, 10), `agents of ${key} accepted or recognised but not listed as such`).toEqual([]);
      const decided = await listedDecisions(key);
      expect(unexplained(decided, want.decisionIds.get(key)), `decisions of ${key} that no accepted upload explains`).toEqual([]);
      expect(unexplained([...decided, 'bad-planted'], want.decisionIds.get(key))).toEqual(['bad-planted']);
    }
    // Something was accepted and something recognised: the comparison above is not vacuous.
    expect([...want.mustAgents.values()].flatMap((m) => [...m.values()])).toContain('failing');
    expect(want.acceptedUploads).toBeGreaterThan(100);
    expect(sorted(await decisionsCounted())).toEqual(sorted(want.decisions));
    const reports = (await metric('acl_agent_status_reports_total')).get('{outcome="accepted"}') ?? 0;
    expect(reports).toBeGreaterThanOrEqual(want.acceptedReports.min);
    expect(reports).toBeLessThanOrEqual(want.acceptedReports.max);
    expect((await metric('acl_decision_log_uploads_total')).get('{outcome="accepted"}')).toBe(want.acceptedUploads);
  });

  it('still records reports, accepts uploads and decides afterwards, with no error logged', async () => {
    const own = token(ROTATED);
    const res = await t.api(`${connectorPath(GATEWAYS)}/status`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${own}` },
      body: JSON.stringify(report('after-the-barrage', { docs: { revision: '1' } }, true)),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ agent: 'after-the-barrage', bundles: ['docs'], ignored: [] });
    const listed = await listedAgents('acme/docs');
    expect(listed.find((a) => a.id === 'after-the-barrage')).toMatchObject({ state: 'current' });
    // A report the ledger does not know is what the check above would have caught.
    expect(
      unexplained(
        listed.map((a) => a.id),
        expectedState().mayAgents.get('acme/docs'),
      ),
    ).toEqual(['after-the-barrage']);

    const before = (await decisionsCounted()).get('acme/docs') ?? 0;
    const upload = await t.api(`${connectorPath(GATEWAYS)}/logs`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip', Authorization: `Bearer ${own}` },
      body: gzipSync(JSON.stringify([decisionEvent(1, { decision_id: 'after-1' }), decisionEvent(2, { decision_id: 'after-2' })])),
    });
    expect(upload.status).toBe(200);
    expect(await upload.json()).toEqual({ accepted: 2 });
    expect((await listedDecisions('acme/docs')).slice(0, 2)).toEqual(['after-2', 'after-1']);
    expect((await decisionsCounted()).get('acme/docs')).toBe(before + 2);

    const allow = await t.decide({
      subject: { type: 'user', id: 'u-1', properties: { team: 'blue' } },
      action: 'read',
      resource: { type: 'document', id: 'd-1', properties: { team: 'blue' } },
    });
    expect(allow.status).toBe(200);
    expect(await allow.json()).toMatchObject({ decision: 'allow' });
    expect((await t.bundle('acme', 'gateways', 'docs', { Authorization: `Bearer ${own}` })).status).toBe(200);
    expect((await t.ops('/healthz')).status).toBe(200);
    expect((await t.ops('/readyz')).status).toBe(200);
    expect(loggedErrors.slice(0, 5).map(summary), `${loggedErrors.length} errors logged`).toEqual([]);
  });
});
