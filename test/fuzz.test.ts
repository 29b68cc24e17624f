// Bad input: thousands of generated malformed bodies, paths and headers against every API endpoint
// (POST /authorization, the AuthZEN 1.0 endpoints and metadata, bundles, activity), from fixed seeds. None may be answered 500 or left unanswered; where the contract decides the
// status (401 without a key, 413 past the body limit, 400 for broken JSON, 304 for a matching
// ETag...) it is asserted exactly. Afterwards the service must still answer correctly.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  barrage,
  bytes,
  chooser,
  editBytes,
  randomJsonOf,
  isObject,
  latin1,
  rawBarrage,
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
const LIMIT = 64 * 1024; // the harness's maxBodyBytes
const ZEN_KEY = 'zen-api-key-00112233445566778899';

// Beside the base manifests: an Inactive connector with a bundle, and a second tenant whose
// connector and bundle have the same names as acme's.
const EXTRA_MANIFESTS: Record<string, string> = {
  'dormant.yaml': DORMANT_MANIFEST,
  'globex.yaml': `${GLOBEX_MANIFEST}---\n${apiKeySecret('globex', 'key', GLOBEX_KEY)}`,
  // The AuthZEN tenant: team members read and write their team's documents, anyone deletes softly;
  // users u-1..u-12 (odd: team blue, even: red) and documents d-1 (blue), d-2 (red) in its directory.
  'zen.yaml': `
apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: { name: team-documents, namespace: zen }
spec: { state: Enforced, subjectType: user, actions: [read, write], resourceType: document, condition: "principal.team == resource.team" }
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: { name: soft-delete, namespace: zen }
spec: { state: Enforced, subjectType: user, actions: [delete], resourceType: document, condition: "actionProperties.soft == true" }
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Directory
metadata: { name: entities, namespace: zen }
spec:
  entities:
${Array.from({ length: 12 }, (_, i) => `    - { type: user, id: u-${i + 1}, properties: { team: ${i % 2 === 0 ? 'blue' : 'red'} } }`).join('\n')}
    - { type: document, id: d-1, properties: { team: blue } }
    - { type: document, id: d-2, properties: { team: red } }
---
${apiKeySecret('zen', 'key', ZEN_KEY)}`,
};

/** `tenant/bundle` → the connector that owns it; `tenant/connector` → Active (service spec 7.2); API key → tenant. */
const { owner: OWNER, active: ACTIVE, keys: KEYS } = FIXTURE;

let t: TestService;
let to: Target;
/** `tenant/connector` → its agent_ token. */
const tokens = new Map<string, string>();
/** `tenant/bundle` → its current ETag. */
const etags = new Map<string, string>();
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
    serviceOptions: { log: pino({ level: 'error' }, sink) },
  });
  to = target(t.url, IN_FLIGHT);
  for (const key of ACTIVE.keys()) {
    const [tenant, connector] = key.split('/') as [string, string];
    tokens.set(key, await t.token(tenant, connector));
  }
  for (const key of OWNER.keys()) {
    const [tenant, name] = key.split('/') as [string, string];
    const etag = t.service.store.snapshot().tenants.get(tenant)?.bundles.get(name)?.built.etag;
    if (etag === undefined) throw new Error(`bundle ${key} was not built`);
    etags.set(key, etag);
  }
});

afterAll(async () => {
  to.agent.destroy();
  await t.stop();
});

// ---------------------------------------------------------------------------------------------
// Generation helpers

const bearer = (credential: string): Header => ['Authorization', `Bearer ${credential}`];
const JSON_TYPE: Header = ['Content-Type', 'application/json'];
const LONG = (n: number, unit = 'x'): string => unit.repeat(n);

// ---------------------------------------------------------------------------------------------
// POST /authorization

/** Service spec 2.1, for bodies built as values here: the status such a body must get. */
function expectedDecisionStatus(body: Json): 200 | 400 {
  const text = (v: Json | undefined, max: number): boolean => typeof v === 'string' && v.length >= 1 && v.length <= max;
  const entity = (v: Json | undefined): boolean =>
    isObject(v) && text(v['type'], 256) && text(v['id'], 1024) && (v['properties'] === undefined || isObject(v['properties']));
  const ok =
    isObject(body) &&
    entity(body['subject']) &&
    entity(body['resource']) &&
    text(body['action'], 256) &&
    (body['context'] === undefined || isObject(body['context']));
  return ok ? 200 : 400;
}

/** Valid requests, with the decision the base rule (principal.team == resource.team) gives them. */
const VALID: readonly { readonly body: JsonObject; readonly decision: 'allow' | 'deny' }[] = [
  {
    body: {
      subject: { type: 'user', id: 'u-1', properties: { team: 'blue' } },
      resource: { type: 'document', id: 'd-1', properties: { team: 'blue' } },
      action: 'read',
    },
    decision: 'allow',
  },
  {
    body: {
      subject: { type: 'user', id: 'u-2', properties: { team: 'red' } },
      resource: { type: 'document', id: 'd-2', properties: { team: 'blue' } },
      action: 'write',
      context: { ip: '10.0.0.1', time: '2024-03-11T09:30:00Z' },
    },
    decision: 'deny',
  },
  {
    // Top-level entity fields are attributes too, and win over properties.
    body: {
      subject: { type: 'user', id: 'ü-𝒜', team: 'é', properties: { team: 'x' } },
      resource: { type: 'document', id: 'd/3', properties: { team: 'é', tags: ['a', 1, null, true] } },
      action: 'read',
      context: { nested: { deep: [{ x: 1.5 }] } },
    },
    decision: 'allow',
  },
];
const ALLOWED = (VALID[0] as (typeof VALID)[number]).body;
const ALLOWED_TEXT = JSON.stringify(ALLOWED);

/** A 200 must carry a decision; `decision` pins which one when the input is known. */
function decisionCheck(decision: 'allow' | 'deny' | undefined): (reply: Reply) => string | undefined {
  return (reply) => {
    let parsed: Json;
    try {
      parsed = JSON.parse(reply.body.toString('utf8')) as Json;
    } catch {
      return `a 200 whose body is not JSON: ${reply.body.toString('utf8', 0, 200)}`;
    }
    const got = isObject(parsed) ? parsed['decision'] : undefined;
    if (got !== 'allow' && got !== 'deny') return `a 200 without a decision: ${reply.body.toString('utf8', 0, 200)}`;
    return decision !== undefined && got !== decision ? `decided ${got}, expected ${decision}` : undefined;
  };
}

interface DecisionOptions {
  /** Default: the API key and the JSON type. */
  readonly headers?: readonly Header[];
  readonly chunked?: boolean;
  readonly decision?: 'allow' | 'deny';
  /** Refused by the HTTP parser, before our handler: no JSON body, no X-Request-ID. */
  readonly bare?: boolean;
  /** The X-Request-ID sent, when the answer must echo it. */
  readonly requestId?: string;
  readonly method?: string;
}

function decisionCase(
  label: string,
  body: Buffer | string | undefined,
  expect: readonly number[],
  options: DecisionOptions = {},
): HttpCase {
  const method = options.method ?? 'POST';
  return {
    label,
    method,
    path: '/authorization',
    headers: options.headers ?? [bearer(API_KEY), JSON_TYPE],
    ...(body === undefined ? {} : { body: typeof body === 'string' ? Buffer.from(body, 'utf8') : body }),
    ...(options.chunked ? { chunked: true } : {}),
    expect,
    ...(options.bare ? { bare: true } : {}),
    // Every answer of the decision handler carries an X-Request-ID (405 comes from the router).
    ...(method === 'POST' && !options.bare ? { requestId: options.requestId ?? true } : {}),
    check: decisionCheck(options.decision),
  };
}

function decisionCases(): HttpCase[] {
  const { r, pick, int } = chooser(0xa11);
  const cases: HttpCase[] = [];
  const add = (...more: HttpCase[]): void => {
    cases.push(...more);
  };

  /** Random JSON, shallow, with the values and strings that tend to break things. */
  const randomJson = randomJsonOf(
    { r, pick, int },
    ['a', 'type', 'id', 'team', 'properties', 'é', '', ' ', '\u0000', '\ud800', 'constructor', 'toString'],
    [
      null,
      true,
      false,
      0,
      -0,
      1,
      -1,
      0.5,
      1e21,
      1e-7,
      9007199254740991,
      -9007199254740991,
      5e-324,
      1.7976931348623157e308,
      '',
      ' ',
      'user',
      'document',
      'read',
      'write',
      'blue',
      'é',
      'e\u0301',
      '𝒜',
      '\ud800',
      '\udc00x',
      '\u0000',
      '\uffff',
      '\u202e',
      '<script>',
      '%00',
      '../../etc/passwd',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a Log4Shell probe, sent as plain text on purpose.
      '${jndi:ldap://x}',
      "'; DROP TABLE x; --",
      LONG(257),
      LONG(1025),
      LONG(3000, 'é'),
    ],
  );

  // Truncated JSON at every cut point of every valid body; every seventh one streamed in chunks.
  for (const [n, valid] of VALID.entries()) {
    const whole = Buffer.from(JSON.stringify(valid.body), 'utf8');
    add(decisionCase(`valid body ${n}`, whole, [200], { decision: valid.decision }));
    for (let cut = 0; cut < whole.length; cut++)
      add(decisionCase(`valid body ${n} cut at byte ${cut}`, whole.subarray(0, cut), [400], { chunked: cut % 7 === 3 }));
  }

  // Every slot given every wrong (and a few right) types, or removed.
  const slots = [
    [],
    ['subject'],
    ['subject', 'type'],
    ['subject', 'id'],
    ['subject', 'properties'],
    ['resource'],
    ['resource', 'type'],
    ['resource', 'id'],
    ['resource', 'properties'],
    ['action'],
    ['context'],
    ['subject', 'properties', 'team'],
  ];
  const values: Json[] = [
    null,
    true,
    false,
    0,
    -1,
    1.5,
    1e21,
    '',
    ' ',
    'x',
    'read',
    [],
    ['read'],
    [1, [2]],
    {},
    { type: 'user' },
    { a: { b: { c: 1 } } },
    LONG(256),
    LONG(257),
    LONG(1024),
    LONG(1025),
    '\u0000',
    '\ud800',
    '𝒜',
  ];
  for (const slot of slots) {
    for (const value of [...values, undefined]) {
      const body = setAt(ALLOWED, slot, value);
      add(
        decisionCase(
          `${slot.join('.') || 'body'} = ${value === undefined ? 'removed' : JSON.stringify(value).slice(0, 30)}`,
          JSON.stringify(body),
          [expectedDecisionStatus(body)],
        ),
      );
    }
  }

  // Random values at random places, judged by the contract.
  const paths = [
    ...slots,
    ['context', 'a'],
    ['context', 'a', 'b'],
    ['resource', 'properties', 'team'],
    ['resource', 'properties', 'x', 'y'],
    ['subject', 'team'],
    ['extra'],
  ];
  for (let i = 0; i < 250; i++) {
    let body: Json = pick(VALID).body;
    for (let k = 1 + int(3); k > 0; k--) body = setAt(body, pick(paths), r() < 0.1 ? undefined : randomJson());
    add(decisionCase(`random values ${i}: ${JSON.stringify(body).slice(0, 80)}`, JSON.stringify(body), [expectedDecisionStatus(body)]));
  }

  // Random edits of the bytes: characters deleted, inserted, replaced or repeated.
  for (let i = 0; i < 200; i++) {
    const b = editBytes({ r, pick, int }, Buffer.from(JSON.stringify(pick(VALID).body), 'utf8'));
    add(decisionCase(`edited bytes ${i}: ${JSON.stringify(b.toString('latin1').slice(0, 60))}`, b, [200, 400], { chunked: i % 5 === 0 }));
  }

  // Garbage: random bytes, and JSON that is not an object.
  for (let i = 0; i < 80; i++) add(decisionCase(`random bytes ${i}`, Buffer.from(Array.from({ length: int(300) }, () => int(256))), [400]));
  for (const text of [
    '',
    ' ',
    'null',
    'true',
    '0',
    '-1',
    '"x"',
    '[]',
    '[{}]',
    '{}',
    '{"a":1}',
    '\n\n',
    '{',
    '}',
    '[',
    '"',
    '{"subject":',
    'nul',
    'undefined',
    'NaN',
  ]) {
    add(decisionCase(`body ${JSON.stringify(text)}`, text, [400]));
  }

  // Huge strings, within and past the body limit (which counts bytes, not characters).
  const withContext = (context: Json): string => JSON.stringify({ ...ALLOWED, context });
  const padded = (size: number): string => ALLOWED_TEXT + ' '.repeat(size - Buffer.byteLength(ALLOWED_TEXT));
  const oneMiB = withContext({ blob: LONG(1 << 20) });
  add(
    decisionCase('a body of exactly the limit', padded(LIMIT), [200], { decision: 'allow' }),
    decisionCase('a body of exactly the limit, chunked', padded(LIMIT), [200], { decision: 'allow', chunked: true }),
    decisionCase('a body one byte past the limit', padded(LIMIT + 1), [413]),
    decisionCase('a body one byte past the limit, chunked', padded(LIMIT + 1), [413], { chunked: true }),
    decisionCase('a 60 KB string in context', withContext({ blob: LONG(60_000) }), [200], { decision: 'allow' }),
    decisionCase('a 50 KB key in context', withContext({ [LONG(50_000)]: 1 }), [200], { decision: 'allow' }),
    decisionCase('30,000 é in context (60 KB)', withContext({ s: LONG(30_000, 'é') }), [200], { decision: 'allow' }),
    decisionCase('33,000 é in context (66 KB)', withContext({ s: LONG(33_000, 'é') }), [413]),
    decisionCase('20,000 numbers in a context list', withContext({ n: new Array<Json>(20_000).fill(0) }), [200], { decision: 'allow' }),
    decisionCase('5,000 keys in context', withContext(Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, i]))), [200], {
      decision: 'allow',
    }),
    decisionCase('a 60 KB action', JSON.stringify({ ...ALLOWED, action: LONG(60_000) }), [400]),
    decisionCase('a 60 KB subject type', JSON.stringify(setAt(ALLOWED, ['subject', 'type'], LONG(60_000))), [400]),
    decisionCase('a 100 KB string', withContext({ blob: LONG(100_000) }), [413]),
    decisionCase('a 100 KB string, chunked', withContext({ blob: LONG(100_000) }), [413], { chunked: true }),
    decisionCase('a 1 MiB string', oneMiB, [413]),
    decisionCase('a 1 MiB string, chunked', oneMiB, [413], { chunked: true }),
    decisionCase('4 MiB of zero bytes', Buffer.alloc(4 << 20), [413]),
    decisionCase('a 1 MiB string without an API key', oneMiB, [401], { headers: [JSON_TYPE] }),
    decisionCase('a 1 MiB string with a wrong API key', oneMiB, [401], { headers: [bearer('nope'), JSON_TYPE] }),
    decisionCase('a 1 MiB string as text/plain', oneMiB, [400], { headers: [bearer(API_KEY), ['Content-Type', 'text/plain']] }),
  );

  // Deep nesting: within reason it is data; past it, or unclosed, it is refused, never a stack overflow.
  const lists = (depth: number, inner = '1'): string => `${'['.repeat(depth)}${inner}${']'.repeat(depth)}`;
  const objects = (depth: number): string => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
  const inContext = (json: string): string => `${ALLOWED_TEXT.slice(0, -1)},"context":{"n":${json}}}`;
  const inProperties = (json: string): string => ALLOWED_TEXT.replace('{"team":"blue"}', `{"team":"blue","n":${json}}`);
  for (const depth of [10, 50, 200]) {
    add(
      decisionCase(`${depth} nested lists in context`, inContext(lists(depth)), [200], { decision: 'allow' }),
      decisionCase(`${depth} nested objects in context`, inContext(objects(depth)), [200], { decision: 'allow' }),
    );
  }
  for (const depth of [300, 1000, 10_000, 30_000]) {
    add(
      decisionCase(`${depth} nested lists in context`, inContext(lists(depth)), [400]),
      decisionCase(`${depth} nested lists in subject properties`, inProperties(lists(depth)), [400]),
      decisionCase(`${depth} unclosed lists in context`, inContext('['.repeat(depth)), [400]),
      decisionCase(`${depth} nested lists as the body`, lists(depth), [400]),
      decisionCase(`${depth} nested lists as the action`, ALLOWED_TEXT.replace('"read"', lists(depth, '"read"')), [400]),
    );
  }
  for (const depth of [300, 1000, 8000]) {
    add(
      decisionCase(`${depth} nested objects in context`, inContext(objects(depth)), [400]),
      decisionCase(
        `${depth} nested objects as the subject`,
        ALLOWED_TEXT.replace(JSON.stringify(ALLOWED['subject']), objects(depth)),
        [400],
      ),
      decisionCase(`${depth} unclosed objects in context`, inContext('{"a":'.repeat(depth)), [400]),
    );
  }
  add(decisionCase('100,000 nested lists (past the limit)', inContext(lists(100_000)), [413]));

  // Bytes that are not UTF-8: in a value, in a key, between tokens, first.
  const notUtf8: readonly (readonly number[])[] = [
    [0xff],
    [0xfe],
    [0x80],
    [0xbf],
    [0xc0, 0xaf],
    [0xc1, 0xbf],
    [0xe0, 0x80, 0xaf],
    [0xed, 0xa0, 0x80],
    [0xed, 0xbf, 0xbf],
    [0xf4, 0x90, 0x80, 0x80],
    [0xf5, 0x80, 0x80, 0x80],
    [0xf8, 0x88, 0x80, 0x80, 0x80],
    [0xe2, 0x82],
    [0xc3],
    [0xf0, 0x9f, 0x98],
    [0xed, 0xa0, 0xbd, 0xed, 0xb2, 0x9c],
    [0xc0, 0x80],
  ];
  const before = (marker: string, seq: readonly number[]): Buffer => {
    const i = ALLOWED_TEXT.indexOf(marker);
    return bytes(ALLOWED_TEXT.slice(0, i), seq, ALLOWED_TEXT.slice(i));
  };
  for (const seq of notUtf8) {
    const hex = seq.map((b) => b.toString(16)).join(' ');
    add(
      decisionCase(`${hex} inside the action`, before('ead"', seq), [400]),
      decisionCase(`${hex} inside the subject id`, before('-1"', seq), [400]),
      decisionCase(`${hex} inside a key`, before('eam"', seq), [400]),
      decisionCase(`${hex} between tokens`, before('"action"', seq), [400]),
      decisionCase(`${hex} first`, bytes(seq, ALLOWED_TEXT), [400]),
    );
  }
  const teams = (encoded: Buffer): Buffer =>
    bytes(
      '{"subject":{"type":"user","id":"u","properties":{"team":"',
      encoded,
      '"}},"resource":{"type":"document","id":"d","properties":{"team":"',
      encoded,
      '"}},"action":"read"}',
    );
  add(
    decisionCase('latin-1 é as a value', teams(Buffer.from([0xe9])), [400]),
    decisionCase('latin-1 é declared as latin-1', teams(Buffer.from([0xe9])), [400], {
      headers: [bearer(API_KEY), ['Content-Type', 'application/json; charset=iso-8859-1']],
    }),
    decisionCase('U+FFFF, a noncharacter, as a value', teams(Buffer.from([0xef, 0xbf, 0xbf])), [200], { decision: 'allow' }),
    decisionCase('U+10FFFF as a value', teams(Buffer.from([0xf4, 0x8f, 0xbf, 0xbf])), [200], { decision: 'allow' }),
    decisionCase('a raw NUL inside a string', teams(Buffer.from([0x00])), [400]),
    decisionCase('a raw tab inside a string', teams(Buffer.from('\t')), [400]),
    decisionCase('an escaped NUL inside a string', teams(Buffer.from('\\u0000')), [200], { decision: 'allow' }),
    decisionCase('an escaped lone surrogate', teams(Buffer.from('\\ud800')), [200], { decision: 'allow' }),
    // RFC 8259 8.1: a parser MAY ignore one leading byte order mark, or refuse it.
    decisionCase('a UTF-8 byte order mark', bytes([0xef, 0xbb, 0xbf], ALLOWED_TEXT), [200, 400], { decision: 'allow' }),
    decisionCase('two UTF-8 byte order marks', bytes([0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf], ALLOWED_TEXT), [400]),
    decisionCase('a byte order mark after the body', bytes(ALLOWED_TEXT, [0xef, 0xbb, 0xbf]), [400]),
    decisionCase('UTF-16LE with its byte order mark', bytes([0xff, 0xfe], Buffer.from(ALLOWED_TEXT, 'utf16le')), [400]),
    decisionCase('UTF-16LE without a byte order mark', Buffer.from(ALLOWED_TEXT, 'utf16le'), [400]),
    decisionCase('UTF-16BE', Buffer.from(ALLOWED_TEXT, 'utf16le').swap16(), [400]),
    decisionCase('UTF-32LE', Buffer.from([...ALLOWED_TEXT].flatMap((c) => [c.charCodeAt(0), 0, 0, 0])), [400]),
  );

  // Numbers a double cannot hold as written are refused rather than rounded; the others are data.
  const numbers: readonly (readonly [string, 200 | 400])[] = [
    ['1e400', 400],
    ['-1e400', 400],
    ['9007199254740993', 400],
    ['9007199254740992', 200],
    ['0.30000000000000001', 400],
    ['0.1', 200],
    ['1E2', 200],
    ['1e+2', 200],
    ['-0', 200],
    ['0e0', 200],
    ['1.0', 200],
    ['1e-400', 400],
    ['2e-324', 400],
    ['5e-324', 200],
    ['123456789012345678901234567890', 400],
    ['1.5e300', 200],
    ['1e999999999999999999999', 400],
    ['00', 400],
    ['01', 400],
    ['.5', 400],
    ['+1', 400],
    ['1.', 400],
    ['-', 400],
    ['NaN', 400],
    ['Infinity', 400],
    ['-Infinity', 400],
    ['0x10', 400],
    ['1_000', 400],
  ];
  for (const [n, status] of numbers) {
    add(
      decisionCase(`the number ${n} in context`, inContext(n), [status], status === 200 ? { decision: 'allow' } : {}),
      decisionCase(`the number ${n} in resource properties`, inProperties(n), [status], status === 200 ? { decision: 'allow' } : {}),
      decisionCase(`the number ${n} as the action`, ALLOWED_TEXT.replace('"read"', n), [400]),
    );
  }

  // Duplicate keys: the status is fixed when both copies agree; when they differ either may win, or the body be refused.
  const duplicates: readonly (readonly [string, Json, Json])[] = [
    ['action', 'read', 'write'],
    ['action', 'read', 5],
    ['action', 5, 'read'],
    ['action', [], null],
    ['subject', ALLOWED['subject'] as Json, 'x'],
    ['subject', 'x', ALLOWED['subject'] as Json],
    ['context', {}, { a: 1 }],
    ['context', null, {}],
    ['context', {}, null],
    ['context', [], []],
  ];
  for (const [key, first, second] of duplicates) {
    const rest = JSON.stringify(setAt(ALLOWED, [key], undefined)).slice(1, -1);
    const body = `{${JSON.stringify(key)}:${JSON.stringify(first)},${rest},${JSON.stringify(key)}:${JSON.stringify(second)}}`;
    const statuses = new Set([expectedDecisionStatus(setAt(ALLOWED, [key], first)), expectedDecisionStatus(setAt(ALLOWED, [key], second))]);
    add(
      decisionCase(
        `duplicate ${key}: ${JSON.stringify(first).slice(0, 20)} then ${JSON.stringify(second).slice(0, 20)}`,
        body,
        statuses.size === 1 ? [...statuses] : [200, 400],
      ),
    );
  }
  add(
    decisionCase('a duplicate team in properties', ALLOWED_TEXT.replace('{"team":"blue"}', '{"team":"red","team":"blue"}'), [200]),
    decisionCase('1,000 copies of one context key', inContext(`{${Array.from({ length: 1000 }, (_, i) => `"k":${i}`).join(',')}}`), [200], {
      decision: 'allow',
    }),
    decisionCase('__proto__ in properties', ALLOWED_TEXT.replace('{"team":"blue"}', '{"__proto__":{"team":"red"},"team":"blue"}'), [200]),
    decisionCase(
      '__proto__ beside the subject properties',
      ALLOWED_TEXT.replace('"properties":{"team":"blue"}', '"__proto__":{"team":"blue"},"properties":{"team":"blue"}'),
      [200],
    ),
    decisionCase('__proto__ at the top', `{"__proto__":{"action":"read"},${ALLOWED_TEXT.slice(1)}`, [200]),
    decisionCase(
      '__proto__ instead of the action',
      `{"__proto__":{"action":"read"},${JSON.stringify(setAt(ALLOWED, ['action'], undefined)).slice(1)}`,
      [400],
    ),
    decisionCase(
      'constructor, toString and hasOwnProperty as keys',
      inContext('{"constructor":1,"toString":null,"hasOwnProperty":[]}'),
      [200],
      { decision: 'allow' },
    ),
  );

  // Content-Type: a JSON or +json type, any case, parameters allowed; anything else is refused.
  const types: readonly (readonly [string | undefined, 200 | 400])[] = [
    [undefined, 400],
    ['application/json', 200],
    ['application/json; charset=utf-8', 200],
    ['APPLICATION/JSON', 200],
    ['application/json;charset=UTF-8', 200],
    ['application/merge-patch+json', 200],
    ['  application/json  ', 200],
    ['application/json ; x=y', 200],
    ['', 400],
    ['text/plain', 400],
    ['text/json', 400],
    ['application/jsonx', 400],
    ['application/x-www-form-urlencoded', 400],
    ['multipart/form-data; boundary=x', 400],
    ['application/javascript', 400],
    ['json', 400],
    ['application/', 400],
    ['*/*', 400],
    [`application/json${latin1(0xff)}`, 400],
    [latin1(0xff, 0xfe), 400],
    ['application/xml', 400],
    [LONG(8000), 400],
    ['application/json,text/plain', 400],
  ];
  for (const [type, status] of types) {
    const headers: Header[] = [bearer(API_KEY)];
    if (type !== undefined) headers.push(['Content-Type', type]);
    add(
      decisionCase(`Content-Type ${JSON.stringify(type)?.slice(0, 40)}`, ALLOWED_TEXT, [status], {
        headers,
        ...(status === 200 ? { decision: 'allow' } : {}),
      }),
    );
  }
  add(
    decisionCase('two Content-Types', ALLOWED_TEXT, [200, 400], { headers: [bearer(API_KEY), JSON_TYPE, ['Content-Type', 'text/plain']] }),
  );

  // Authorization: scheme case-insensitive (RFC 6750 2.1); anything else is 401, before the body counts.
  const authorizations: readonly (readonly [string | undefined, boolean])[] = [
    [undefined, false],
    ['', false],
    ['Bearer', false],
    ['Bearer ', false],
    [`Basic ${Buffer.from(`x:${API_KEY}`).toString('base64')}`, false],
    [API_KEY, false],
    [`Token ${API_KEY}`, false],
    [`Bearer ${API_KEY}x`, false],
    [`Bearer ${API_KEY.slice(0, -1)}`, false],
    [`Bearer ${API_KEY.toUpperCase()}`, false],
    [`Bearer ${API_KEY} ${API_KEY}`, false],
    [`Bearer ${API_KEY},${API_KEY}`, false],
    [`Bearer "${API_KEY}"`, false],
    [`Bearer ${API_KEY}${latin1(0xff)}`, false],
    [`Bearer${latin1(0xa0)}${API_KEY}`, false],
    [latin1(0xff, 0xfe, 0x80), false],
    [`Bearer ${GLOBEX_KEY}x`, false],
    [`Bearer ${LONG(8000, 'A')}`, false],
    [`Bearer agent_${LONG(43, 'A')}`, false],
    [`bearer ${API_KEY}`, true],
    [`BEARER ${API_KEY}`, true],
    [`Bearer  ${API_KEY}  `, true],
    [`Bearer\t${API_KEY}`, true],
    [`Bearer ${API_KEY}`, true],
  ];
  for (const [authorization, ok] of authorizations) {
    const headers: Header[] = [JSON_TYPE];
    if (authorization !== undefined) headers.push(['Authorization', authorization]);
    const label = `Authorization ${JSON.stringify(authorization)?.slice(0, 50)}`;
    add(
      decisionCase(`${label}, valid body`, ALLOWED_TEXT, [ok ? 200 : 401], { headers, ...(ok ? { decision: 'allow' } : {}) }),
      decisionCase(`${label}, broken body`, ALLOWED_TEXT.slice(0, 20), [ok ? 400 : 401], { headers }),
      decisionCase(`${label}, no body`, undefined, [ok ? 400 : 401], { headers }),
    );
  }
  add(
    decisionCase('a 20 KB Authorization header', ALLOWED_TEXT, [431], {
      headers: [['Authorization', `Bearer ${LONG(20_000, 'A')}`], JSON_TYPE],
      bare: true,
    }),
    decisionCase('the other tenant’s API key', ALLOWED_TEXT, [200], { headers: [bearer(GLOBEX_KEY), JSON_TYPE], decision: 'deny' }),
    // RFC 9110 5.3: Authorization is a singleton; with two, either copy may be used or the request refused.
    decisionCase('a valid then a wrong Authorization', ALLOWED_TEXT, [200, 400, 401], {
      headers: [bearer(API_KEY), bearer('nope'), JSON_TYPE],
    }),
    decisionCase('a wrong then a valid Authorization', ALLOWED_TEXT, [200, 400, 401], {
      headers: [bearer('nope'), bearer(API_KEY), JSON_TYPE],
    }),
    decisionCase('two wrong Authorizations', ALLOWED_TEXT, [400, 401], {
      headers: [bearer('nope'), ['Authorization', 'Basic eDp5'], JSON_TYPE],
    }),
  );

  // X-Request-ID is echoed when it is visible ASCII, spaces and tabs of at most 200 characters; otherwise none is sent back.
  const ids: readonly (readonly [string, boolean])[] = [
    ['abc', true],
    ['0f8fad5b-d9cb-469f-a165-70867728950e', true],
    [LONG(200, 'r'), true],
    ['!~#$%', true],
    ['"quoted"', true],
    [LONG(201, 'r'), false],
    ['has space', true],
    [latin1(0xff, 0xfe), false],
    ['', true],
    ['tab\there', true],
    [LONG(8000, 'r'), false],
  ];
  for (const [id, echoed] of ids) {
    const headers: Header[] = [bearer(API_KEY), JSON_TYPE, ['X-Request-ID', id]];
    const label = `X-Request-ID ${JSON.stringify(id).slice(0, 30)}`;
    const requestId = echoed ? { requestId: id } : {};
    add(
      decisionCase(`${label}, valid body`, ALLOWED_TEXT, [200], { headers, ...requestId, decision: 'allow' }),
      decisionCase(`${label}, broken body`, '{', [400], { headers, ...requestId }),
      decisionCase(`${label}, no key`, ALLOWED_TEXT, [401], { headers: headers.filter(([k]) => k !== 'Authorization'), ...requestId }),
      decisionCase(`${label}, too large`, padded(LIMIT + 1), [413], { headers, ...requestId }),
    );
  }

  // Other methods are 405, whatever they carry.
  for (const method of ['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'PROPFIND']) {
    add(
      decisionCase(`${method} with a body`, ALLOWED_TEXT, [405], { method }),
      decisionCase(`${method} without a body`, undefined, [405], { method }),
    );
  }
  add(decisionCase('HEAD', undefined, [405], { method: 'HEAD' }));
  return cases;
}

// ---------------------------------------------------------------------------------------------
// The bundle and activity endpoints

/** Segments that name nothing, or cannot be decoded. */
const NOISE: readonly Segment[] = [
  plain('.'),
  plain('..'),
  sent('.', '.'),
  sent('..', '..'),
  sent('%2e%2e', '..'),
  sent('%2E', '.'),
  plain('/'),
  plain('\\'),
  plain('a/b'),
  plain('äcme'),
  plain('🙂'),
  plain('\u202e'),
  plain('e\u0301'),
  sent('%00', '\u0000'),
  plain('\u0000acme'),
  plain(LONG(3000, 'a')),
  plain(LONG(500, 'é')),
  sent("a;b=c,!$&'()*+:@~", "a;b=c,!$&'()*+:@~"),
  sent('%2B', '+'),
  sent('+', '+'),
  plain(' '),
  plain('%'),
  plain('%41'),
  plain('constructor'),
  plain('__proto__'),
  plain('toString'),
  plain('*'),
  plain('null'),
  sent('%ZZ', undefined),
  sent('%', undefined),
  sent('a%2', undefined),
  sent('%E0%A4%A', undefined),
  sent('%C0%AF', undefined),
  sent('%FF', undefined),
  sent('%ED%A0%80', undefined),
  sent('%F4%90%80%80', undefined),
  sent('acme%', undefined),
];

/** A real name in another spelling: encoded, another case, padded, or cut by a stray byte. */
function respelt(pick: <T>(xs: readonly T[]) => T, name: string): Segment {
  return pick([
    encoded(name, true),
    encoded(name, false),
    plain(name.toUpperCase()),
    plain(`${name} `),
    plain(` ${name}`),
    sent(`${name}.`, `${name}.`),
    plain(`${name}\u0000`),
    plain(`${name}/`),
    sent(`${name}%2F`, `${name}/`),
    plain(name.normalize('NFD')),
    plain(`${name}é`),
    sent(`${name}%ZZ`, undefined),
  ]);
}

const bundlePath = (tenant: Segment, connector: Segment, bundle: Segment, activity: boolean): string =>
  `/${tenant.raw}/connectors/policyagent/${connector.raw}/bundles/${bundle.raw}${activity ? '/activity' : ''}`;

/** Names that appear in the store, and the one named by a path: where to aim. */
interface Aim {
  readonly tenant: string;
  readonly connector: string;
  readonly bundle: string;
}
const AIMS: readonly Aim[] = [
  { tenant: 'acme', connector: 'gateways', bundle: 'docs' },
  { tenant: 'acme', connector: 'backends', bundle: 'internal' },
  { tenant: 'acme', connector: 'dormant', bundle: 'quiet' },
  { tenant: 'globex', connector: 'gateways', bundle: 'docs' },
  { tenant: 'acme', connector: 'gateways', bundle: 'internal' },
  { tenant: 'acme', connector: 'nobody', bundle: 'docs' },
  { tenant: 'globex', connector: 'backends', bundle: 'internal' },
  { tenant: 'initech', connector: 'gateways', bundle: 'docs' },
];

function segments(c: ReturnType<typeof chooser>): { tenant: Segment; connector: Segment; bundle: Segment; aim: Aim } {
  // Mostly a bundle that exists, named exactly half of the time, so every answer comes up often.
  const aim = c.r() < 0.7 ? c.pick(AIMS.slice(0, 4)) : c.pick(AIMS);
  const exact = c.r() < 0.5;
  const one = (name: string): Segment => {
    const x = c.r();
    return exact || x < 0.34 ? plain(name) : x < 0.67 ? respelt(c.pick, name) : c.pick(NOISE);
  };
  return { tenant: one(aim.tenant), connector: one(aim.connector), bundle: one(aim.bundle), aim };
}

/** A weak If-None-Match comparison (RFC 9110 13.1.2) of a field we built; 'maybe' when the field is not well-formed. */
function matches(field: string | undefined, etag: string | undefined): boolean | 'maybe' {
  if (field === undefined || etag === undefined) return false;
  if (field.trim() === '*') return true;
  const tags = field
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '');
  if (tags.some((x) => !/^(W\/)?"[\x21\x23-\x7e\x80-\xff]*"$/.test(x)))
    return tags.some((x) => x.includes(etag.slice(1, -1))) || tags.includes('*') ? 'maybe' : false;
  return tags.some((x) => x.replace(/^W\//, '') === etag);
}

function ifNoneMatch(c: ReturnType<typeof chooser>, etag: string): string | undefined {
  const other = c.pick([...etags.values()]);
  const many = Array.from({ length: 300 }, (_, i) => `"t${i}"`).join(', ');
  return c.pick([
    undefined,
    undefined,
    undefined,
    '',
    '*',
    '  *  ',
    '"garbage"',
    etag,
    etag,
    `W/${etag}`,
    etag.slice(1, -1),
    etag.toUpperCase(),
    `"x", ${etag}`,
    `${etag}, "x"`,
    `${etag},${etag}`,
    other,
    `W/${other}`,
    ',,,',
    'W/',
    '"',
    '""',
    latin1(0xff, 0xfe),
    many,
    `${many}, ${etag}`,
    '*, "x"',
    '"x", *',
    `W/ ${etag}`,
    `w/${etag}`,
    `${etag};q=1`,
    `${etag.slice(0, -1)}`,
    `"${etag}"`,
    LONG(4000, '"'),
    `W/"${LONG(4000)}"`,
  ]);
}

/** Prefer values that can never hold a request (no positive integer wait), and ones that can. */
const NO_WAIT: readonly (string | undefined)[] = [
  undefined,
  undefined,
  'wait=abc',
  'wait=0',
  'wait=-1',
  'wait=1.5',
  'wait=9999999999',
  'wait=',
  'respond-async',
  'nowait=5',
  'wait="x"',
  'return=minimal',
  ';;;,,,',
  LONG(4000, 'w'),
  latin1(0xff, 0xfe),
  'handling=strict',
  'wait=0x10',
  'wait=1e3',
  'wait=+5',
];
const WAITS: readonly string[] = [
  'wait=1',
  'wait=30',
  'modes=long-polling;wait=5',
  'wait=999999999',
  'respond-async, wait=100',
  'wait="10"',
  'Wait = 7',
];

/** The Authorization field of a bundle request and the connector it proves, if any. */
function connectorCredential(c: ReturnType<typeof chooser>, aim: Aim): { header: string | undefined; connector: string | undefined } {
  const own = tokens.get(`${aim.tenant}/${aim.connector}`);
  const any = c.pick([...tokens.entries()]);
  const x = c.r();
  if (own !== undefined && x < 0.5) {
    return {
      header: c.pick([`Bearer ${own}`, `Bearer ${own}`, `bearer ${own}`, `BEARER\t${own}  `]),
      connector: `${aim.tenant}/${aim.connector}`,
    };
  }
  if (x < 0.65) return { header: `Bearer ${any[1]}`, connector: any[0] };
  const token = any[1];
  const random = Buffer.from(Array.from({ length: 32 }, () => c.int(256))).toString('base64url');
  return {
    header: c.pick([
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
      `Token ${token}`,
      `Bearer ${token}x`,
      `Bearer ${token.slice(0, -1)}`,
      `Bearer ${token} ${token}`,
      `Bearer ${token}${latin1(0xff)}`,
      latin1(0xff, 0xfe),
      `Bearer ${token.toUpperCase()}`,
      `Bearer ${token}==`,
      token,
      `Bearer "${token}"`,
    ]),
    connector: undefined,
  };
}

/** A 200 bundle is the tar.gz with the bundle's ETag and OPA's content type; a 304 has the ETag and no body. */
function bundleCheck(method: string, etag: string | undefined): (reply: Reply) => string | undefined {
  return (reply) => {
    if (reply.headers.etag !== etag) return `ETag ${reply.headers.etag}, expected ${etag}`;
    if (reply.headers['content-type'] !== 'application/vnd.openpolicyagent.bundles') return `Content-Type ${reply.headers['content-type']}`;
    if (reply.status === 304 || method === 'HEAD')
      return reply.body.length === 0 ? undefined : `a ${reply.status} to ${method} with a body`;
    if (reply.body[0] !== 0x1f || reply.body[1] !== 0x8b || reply.body.length !== Number(reply.headers['content-length']))
      return 'a 200 that is not the whole tar.gz';
    return undefined;
  };
}

/** Request line and headers must stay under Node's 16 KiB header limit, or the parser answers 431 first. */
const headerBytes = (path: string, headers: readonly Header[]): number =>
  path.length + headers.reduce((n, [k, v]) => n + k.length + v.length + 4, 64);

function bundleCases(count: number): HttpCase[] {
  const c = chooser(0xb0b);
  const cases: HttpCase[] = [];
  while (cases.length < count) {
    const { tenant, connector, bundle, aim } = segments(c);
    const x = c.r();
    const method = x < 0.8 ? 'GET' : x < 0.88 ? 'HEAD' : c.pick(['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'PROPFIND']);
    const credential = connectorCredential(c, aim);
    const key = `${tenant.decoded}/${bundle.decoded}`;
    const etag = etags.get(key);
    const inm = ifNoneMatch(c, etag ?? aim.bundle);
    const match = matches(inm, etag);

    let expect: number[];
    // An undecodable name is refused (400) or names nothing (404); the method or token may be judged first.
    if (tenant.decoded === undefined || connector.decoded === undefined || bundle.decoded === undefined) {
      expect = [400, 404, ...(method === 'GET' || method === 'HEAD' ? [] : [405]), ...(credential.connector === undefined ? [401] : [])];
    } else if (method !== 'GET' && method !== 'HEAD') expect = [405];
    else if (credential.connector === undefined) expect = [401];
    else if (credential.connector !== `${tenant.decoded}/${connector.decoded}`) expect = [404];
    else if (ACTIVE.get(credential.connector) !== true) expect = [403];
    else if (OWNER.get(key) !== connector.decoded) expect = [404];
    else expect = match === true ? [304] : match === false ? [200] : [200, 304];

    // A current ETag with a positive wait is held (OPA long polling); nothing here may be held.
    const mayBeHeld = expect.includes(304);
    const prefer = c.r() < 0.3 ? c.pick([...NO_WAIT, ...(mayBeHeld ? [] : WAITS)]) : undefined;
    const headers: Header[] = [];
    if (credential.header !== undefined) headers.push(['Authorization', credential.header]);
    if (inm !== undefined) headers.push(['If-None-Match', inm]);
    if (prefer !== undefined) headers.push(['Prefer', prefer]);
    if (c.r() < 0.05) headers.push(['Prefer', c.pick(mayBeHeld ? NO_WAIT.filter((p): p is string => p !== undefined) : WAITS)]);
    if (c.r() < 0.1)
      headers.push(['User-Agent', c.pick([LONG(3000, 'u'), latin1(0xff, 0x41), 'Open Policy Agent/0.70.0 (linux, amd64)', ''])]);
    const path = bundlePath(tenant, connector, bundle, false);
    if (headerBytes(path, headers) > 15_000) continue;
    cases.push({
      label: `${method} ${JSON.stringify(credential.header)?.slice(0, 30)} INM ${JSON.stringify(inm)?.slice(0, 30)} Prefer ${JSON.stringify(prefer)?.slice(0, 20)}`,
      method,
      path,
      headers,
      expect,
      ...(method === 'POST' && c.r() < 0.5 ? { body: Buffer.from(ALLOWED_TEXT) } : {}),
      check: bundleCheck(method, etag),
    });
  }

  // Every Prefer where it is read (a current ETag, so that a valid wait would hold) and where it is not.
  const token = tokens.get('acme/gateways') as string;
  const etag = etags.get('acme/docs') as string;
  const docs = '/acme/connectors/policyagent/gateways/bundles/docs';
  for (const prefer of NO_WAIT) {
    for (const [inm, status] of [
      [etag, 304],
      [`W/${etag}`, 304],
      ['*', 304],
      [`"x", ${etag}`, 304],
      ['"stale"', 200],
      [undefined, 200],
    ] as const) {
      const headers: Header[] = [bearer(token)];
      if (inm !== undefined) headers.push(['If-None-Match', inm]);
      if (prefer !== undefined) headers.push(['Prefer', prefer], ['Prefer', c.pick(NO_WAIT.filter((p): p is string => p !== undefined))]);
      const method = c.pick(['GET', 'HEAD']);
      cases.push({
        label: `Prefer ${JSON.stringify(prefer)?.slice(0, 30)} INM ${inm?.slice(0, 12)}`,
        method,
        path: docs,
        headers,
        expect: [status],
        check: bundleCheck(method, etag),
      });
    }
  }
  for (const prefer of WAITS) {
    for (const inm of ['"stale"', `W/"${etag.slice(2)}`, undefined]) {
      const headers: Header[] = [bearer(token), ['Prefer', prefer]];
      if (inm !== undefined) headers.push(['If-None-Match', inm]);
      cases.push({
        label: `Prefer ${prefer} INM ${inm?.slice(0, 12)}`,
        method: 'GET',
        path: docs,
        headers,
        expect: [200],
        check: bundleCheck('GET', etag),
      });
    }
  }

  // The path's shape itself: slashes, case, queries, length.
  const good = '/acme/connectors/policyagent/gateways/bundles/docs';
  const shapes: readonly (readonly [string, readonly number[]])[] = [
    [good, [200]],
    [`${good}/`, [200, 404]],
    [`${good}?x=1`, [200]],
    [`${good}?`, [200]],
    [`${good}?wait=5&%ZZ`, [200]],
    [`${good}#frag`, [200, 400, 404]],
    [`${good}//`, [404]],
    ['/acme//connectors/policyagent/gateways/bundles/docs', [404]],
    ['/acme/connectors/policyagent/gateways/bundles/', [404]],
    ['/acme/connectors/policyagent/gateways/bundles', [404]],
    ['/acme/connectors/policyagent/gateways', [404]],
    [`${good}/extra`, [404]],
    [`${good}/activity/x`, [404]],
    ['/ACME/CONNECTORS/POLICYAGENT/GATEWAYS/BUNDLES/DOCS', [404]],
    ['/acme/CONNECTORS/policyagent/gateways/BUNDLES/docs', [200, 404]],
    ['/./acme/connectors/policyagent/gateways/bundles/docs', [404]],
    ['/acme/connectors/policyagent/gateways/bundles/./docs', [404]],
    ['/acme/connectors/policyagent/gateways/bundles/x/../docs', [404]],
    ['/acme%2Fconnectors%2Fpolicyagent%2Fgateways%2Fbundles%2Fdocs', [404]],
    ['/acme/connectors%2Fpolicyagent/gateways/bundles/docs', [404]],
    ['/', [404]],
    ['//', [404]],
    ['/%', [404]],
    [`/${LONG(14_000)}`, [404]],
    [`/acme/connectors/policyagent/gateways/bundles/${LONG(14_000)}`, [404]],
  ];
  for (const [path, expect] of shapes) {
    cases.push({
      label: 'path shape',
      method: 'GET',
      path,
      headers: [bearer(token)],
      expect,
      check: bundleCheck('GET', etags.get('acme/docs')),
    });
  }
  cases.push({
    label: 'a 20 KB path',
    method: 'GET',
    path: `/acme/connectors/policyagent/gateways/bundles/${LONG(20_000)}`,
    headers: [bearer(token)],
    expect: [431],
    bare: true,
  });
  return cases;
}

/** The activity answer names the bundle and its ETag and lists records. */
function activityCheck(method: string, tenant: string, connector: string, bundle: string): (reply: Reply) => string | undefined {
  return (reply) => {
    if (method === 'HEAD') return reply.body.length === 0 ? undefined : 'a HEAD answered with a body';
    let parsed: Json;
    try {
      parsed = JSON.parse(reply.body.toString('utf8')) as Json;
    } catch {
      return `a 200 whose body is not JSON: ${reply.body.toString('utf8', 0, 200)}`;
    }
    if (!isObject(parsed) || parsed['tenant'] !== tenant || parsed['connector'] !== connector || parsed['bundle'] !== bundle)
      return `the activity of another bundle: ${reply.body.toString('utf8', 0, 200)}`;
    if (parsed['etag'] !== etags.get(`${tenant}/${bundle}`) || !Array.isArray(parsed['records']))
      return `an activity answer without its ETag or records: ${reply.body.toString('utf8', 0, 200)}`;
    return undefined;
  };
}

function activityCases(count: number): HttpCase[] {
  const c = chooser(0xac7);
  const cases: HttpCase[] = [];
  while (cases.length < count) {
    const { tenant, connector, bundle, aim } = segments(c);
    const x = c.r();
    const method = x < 0.8 ? 'GET' : x < 0.9 ? 'HEAD' : c.pick(['POST', 'PUT', 'DELETE']);
    const key = c.pick([API_KEY, API_KEY, API_KEY, GLOBEX_KEY]);
    const credential =
      c.r() < 0.7
        ? { header: c.pick([`Bearer ${key}`, `bearer ${key}`, `Bearer\t${key} `]), tenant: KEYS.get(key) }
        : {
            header: c.pick([
              undefined,
              '',
              'Bearer',
              `Bearer ${tokens.get(`${aim.tenant}/${aim.connector}`) ?? 'agent_x'}`,
              `Basic ${key}`,
              `Bearer ${key}x`,
              `Bearer ${LONG(6000, 'k')}`,
              latin1(0xff, 0xfe),
              key,
            ]),
            tenant: undefined,
          };
    const { header, tenant: keyTenant } = credential;

    let expect: number[];
    if (tenant.decoded === undefined || connector.decoded === undefined || bundle.decoded === undefined)
      expect = [400, 404, ...(keyTenant === undefined ? [401] : [])];
    else if (method !== 'GET' && method !== 'HEAD') expect = [404];
    else if (keyTenant === undefined) expect = [401];
    else if (keyTenant !== tenant.decoded || OWNER.get(`${tenant.decoded}/${bundle.decoded}`) !== connector.decoded) expect = [404];
    else expect = [200];

    const headers: Header[] = [];
    if (header !== undefined) headers.push(['Authorization', header]);
    // Bundle-request headers mean nothing here, and must not hold or change the answer.
    if (c.r() < 0.2) headers.push(['If-None-Match', c.pick(['*', '"x"', ...etags.values()])]);
    if (c.r() < 0.2) headers.push(['Prefer', c.pick(WAITS)]);
    const path = bundlePath(tenant, connector, bundle, true);
    if (headerBytes(path, headers) > 15_000) continue;
    cases.push({
      label: `${method} ${JSON.stringify(header)?.slice(0, 40)}`,
      method,
      path,
      headers,
      expect,
      check: activityCheck(method, tenant.decoded ?? '', connector.decoded ?? '', bundle.decoded ?? ''),
    });
  }
  return cases;
}

// ---------------------------------------------------------------------------------------------
// The AuthZEN 1.0 endpoints (POST /access/v1/..., and /<tenant>/access/v1/...) and the metadata GET

type Endpoint = 'evaluation' | 'evaluations' | 'subject' | 'resource' | 'action';
const AUTHZEN: Readonly<Record<Endpoint, string>> = {
  evaluation: '/access/v1/evaluation',
  evaluations: '/access/v1/evaluations',
  subject: '/access/v1/search/subject',
  resource: '/access/v1/search/resource',
  action: '/access/v1/search/action',
};
const ENDPOINTS = Object.keys(AUTHZEN) as Endpoint[];
const SEMANTICS = ['execute_all', 'deny_on_first_deny', 'permit_on_first_permit'];
const ZEN_USERS = ['u-1', 'u-10', 'u-11', 'u-12', 'u-2', 'u-3', 'u-4', 'u-5', 'u-6', 'u-7', 'u-8', 'u-9']; // code point order
/** Odd-numbered users are on team blue, even-numbered on red. */
const ZEN_BLUE = ZEN_USERS.filter((id) => Number(id.slice(2)) % 2 === 1);

const u1 = { type: 'user', id: 'u-1' };
const u2 = { type: 'user', id: 'u-2' };
const d1 = { type: 'document', id: 'd-1' };
const d2 = { type: 'document', id: 'd-2' };
const readIt = { name: 'read' };
const results = (type: string, ids: readonly string[]): Json => ids.map((id) => ({ type, id }));
const names = (...xs: string[]): Json => xs.map((name) => ({ name }));

/** Valid requests of each endpoint and their exact answers (tenant zen). */
const AUTHZEN_VALID: readonly { readonly endpoint: Endpoint; readonly body: JsonObject; readonly answer: Json }[] = [
  { endpoint: 'evaluation', body: { subject: u1, action: readIt, resource: d1 }, answer: { decision: true } },
  {
    endpoint: 'evaluation',
    body: { subject: u2, action: { name: 'write' }, resource: d1, context: { ip: '10.0.0.1', nested: { deep: [1.5] } } },
    answer: { decision: false },
  },
  {
    // Sent properties win over the directory's; action properties reach the condition.
    endpoint: 'evaluation',
    body: {
      subject: { type: 'user', id: 'ü-𝒜', properties: { team: 'x' } },
      action: { name: 'delete', properties: { soft: true } },
      resource: { type: 'document', id: 'd/3' },
      extra: [1],
    },
    answer: { decision: true },
  },
  {
    endpoint: 'evaluation',
    body: { subject: { ...u2, properties: { team: 'blue' } }, action: readIt, resource: d1, options: { explain: false } },
    answer: { decision: true },
  },
  {
    endpoint: 'evaluations',
    body: {
      subject: u1,
      action: readIt,
      evaluations: [{ resource: d1 }, { resource: d2 }, { action: { name: 'delete', properties: { soft: true } }, resource: d2 }],
    },
    answer: { evaluations: [{ decision: true }, { decision: false }, { decision: true }] },
  },
  {
    endpoint: 'evaluations',
    body: {
      subject: u1,
      action: readIt,
      options: { evaluations_semantic: 'deny_on_first_deny' },
      evaluations: [{ resource: d1 }, { resource: d2 }, { resource: d1 }],
    },
    answer: { evaluations: [{ decision: true }, { decision: false }] },
  },
  { endpoint: 'evaluations', body: { subject: u1, action: readIt, resource: d2, evaluations: [] }, answer: { decision: false } },
  {
    endpoint: 'subject',
    body: { subject: { type: 'user' }, action: readIt, resource: d1 },
    answer: { page: { next_token: '' }, results: results('user', ZEN_BLUE) },
  },
  {
    endpoint: 'resource',
    body: { subject: u2, action: readIt, resource: { type: 'document' }, context: {} },
    answer: { page: { next_token: '' }, results: results('document', ['d-2']) },
  },
  { endpoint: 'action', body: { subject: u1, resource: d1 }, answer: { page: { next_token: '' }, results: names('read', 'write') } },
];

const codePoints = (s: string): number => [...s].length;
const textOk = (v: Json | undefined, max: number): boolean => typeof v === 'string' && v.length >= 1 && codePoints(v) <= max;
const objectOrNone = (v: Json | undefined): boolean => v === undefined || isObject(v);
const entityOk = (v: Json | undefined, idOptional = false): boolean =>
  isObject(v) &&
  textOk(v['type'], 256) &&
  ((idOptional && v['id'] === undefined) || textOk(v['id'], 1024)) &&
  objectOrNone(v['properties']);
const actionOk = (v: Json | undefined): boolean => isObject(v) && textOk(v['name'], 256) && objectOrNone(v['properties']);
/** An absent option takes its default; null is refused, like a null context or page.limit. */
const optionsOk = (v: Json | undefined): boolean =>
  v === undefined ||
  (isObject(v) &&
    (v['evaluations_semantic'] === undefined || SEMANTICS.includes(v['evaluations_semantic'] as string)) &&
    (v['explain'] === undefined || typeof v['explain'] === 'boolean'));
const evaluationOk = (b: JsonObject): boolean =>
  entityOk(b['subject']) && actionOk(b['action']) && entityOk(b['resource']) && objectOrNone(b['context']);
/** A page without a token of ours: any non-empty token is one this PDP never issued. */
const pageOk = (p: Json | undefined): boolean =>
  p === undefined ||
  (isObject(p) &&
    (p['limit'] === undefined ||
      (typeof p['limit'] === 'number' && Number.isInteger(p['limit']) && p['limit'] >= 1 && p['limit'] <= 1000)) &&
    (p['token'] === undefined || p['token'] === ''));

/** The AuthZEN HTTPS binding and docs/authzen.md, for bodies built as values here: the status such a body must get. */
function expectedAuthzenStatus(endpoint: Endpoint, body: Json): 200 | 400 {
  if (!isObject(body)) return 400;
  let ok: boolean;
  if (endpoint === 'evaluation') ok = optionsOk(body['options']) && evaluationOk(body);
  else if (endpoint === 'evaluations') {
    const items = body['evaluations'];
    ok =
      optionsOk(body['options']) &&
      (items === undefined || Array.isArray(items)) &&
      (Array.isArray(items) && items.length > 0 ? items.length <= 1000 : evaluationOk(body));
  } else {
    ok =
      entityOk(body['subject'], endpoint === 'subject') &&
      (endpoint === 'action' || actionOk(body['action'])) &&
      entityOk(body['resource'], endpoint === 'resource') &&
      objectOrNone(body['context']) &&
      pageOk(body['page']);
  }
  return ok ? 200 : 400;
}

const isBool = (v: Json | undefined): boolean => typeof v === 'boolean';
/** A decision object: {decision} and, when explained or failed, a context object. */
function decisionProblem(v: Json | undefined, explain: boolean): string | undefined {
  if (!isObject(v) || !isBool(v['decision'])) return `not a decision: ${JSON.stringify(v)?.slice(0, 100)}`;
  const keys = Object.keys(v).join(',');
  const context = v['context'];
  if (keys === 'decision') return explain ? 'an explained decision without a context' : undefined;
  if (keys !== 'decision,context' || !isObject(context)) return `a decision with other members: ${keys}`;
  if (isObject(context['error']))
    return v['decision'] === false && context['error']['status'] === 400 && typeof context['error']['message'] === 'string'
      ? undefined
      : 'a malformed item error';
  if (!explain) return 'a context nobody asked for';
  return typeof context['policyId'] === 'string' && Array.isArray(context['reasons']) && typeof context['timestamp'] === 'string'
    ? undefined
    : 'a malformed explanation';
}

/** Strictly increasing by code point: sorted, no repeats. */
function sortedByCodePoint(xs: readonly string[]): boolean {
  const cmp = (a: string, b: string): number => {
    const x = [...a].map((c) => c.codePointAt(0) as number);
    const y = [...b].map((c) => c.codePointAt(0) as number);
    for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return (x[i] as number) - (y[i] as number);
    return x.length - y.length;
  };
  return xs.every((x, i) => i === 0 || cmp(xs[i - 1] as string, x) < 0);
}

/** What a 200 of an endpoint must look like for the body sent; `answer` pins it exactly. */
function authzenCheck(endpoint: Endpoint, body: Json, answer?: Json): (reply: Reply) => string | undefined {
  return (reply) => {
    const text = reply.body.toString('utf8');
    if (!/^application\/json\b/.test(reply.headers['content-type'] ?? '')) return `Content-Type ${reply.headers['content-type']}`;
    if (answer !== undefined)
      return text === JSON.stringify(answer)
        ? undefined
        : `answered ${text.slice(0, 200)}, expected ${JSON.stringify(answer).slice(0, 200)}`;
    let parsed: Json;
    try {
      parsed = JSON.parse(text) as Json;
    } catch {
      return `a 200 whose body is not JSON: ${text.slice(0, 200)}`;
    }
    const sent = isObject(body) ? body : {};
    const options = isObject(sent['options']) ? sent['options'] : {};
    const explain = options['explain'] === true;
    if (endpoint === 'evaluation') return decisionProblem(parsed, explain);
    if (endpoint === 'evaluations') {
      const items = Array.isArray(sent['evaluations']) ? sent['evaluations'] : [];
      if (items.length === 0) return decisionProblem(parsed, explain);
      const got = isObject(parsed) ? parsed['evaluations'] : undefined;
      if (!isObject(parsed) || Object.keys(parsed).join(',') !== 'evaluations' || !Array.isArray(got))
        return `not {evaluations}: ${text.slice(0, 200)}`;
      const semantic = options['evaluations_semantic'] ?? 'execute_all';
      if (got.length === 0 || got.length > items.length || (semantic === 'execute_all' && got.length !== items.length))
        return `${got.length} decisions for ${items.length} evaluations (${semantic})`;
      for (const d of got) {
        const p = decisionProblem(d, explain);
        if (p) return p;
      }
      const stops = (d: Json | undefined): boolean => isObject(d) && d['decision'] === (semantic === 'permit_on_first_permit');
      // Short-circuiting stops at the first deny (or permit), and only there.
      if (semantic !== 'execute_all' && got.slice(0, -1).some(stops)) return `${semantic} went on past a stop`;
      if (semantic !== 'execute_all' && got.length < items.length && !stops(got[got.length - 1]))
        return `${semantic} stopped early without cause`;
      return undefined;
    }
    if (!isObject(parsed) || Object.keys(parsed).join(',') !== 'page,results') return `not {page, results}: ${text.slice(0, 200)}`;
    const page = parsed['page'];
    const found = parsed['results'];
    if (!isObject(page) || Object.keys(page).join(',') !== 'next_token' || typeof page['next_token'] !== 'string' || !Array.isArray(found))
      return `a malformed page: ${text.slice(0, 200)}`;
    const sentPage = isObject(sent['page']) ? sent['page'] : {};
    // A follow-up page without a limit has its token's.
    const limit =
      typeof sentPage['limit'] === 'number'
        ? sentPage['limit']
        : typeof sentPage['token'] === 'string' && sentPage['token'] !== ''
          ? undefined
          : 1000;
    if (found.length > (limit ?? 1000) || (limit !== undefined && page['next_token'] !== '' && found.length !== limit)) {
      return `${found.length} results for a limit of ${limit}, next_token ${JSON.stringify(page['next_token']).slice(0, 40)}`;
    }
    const searched = isObject(sent[endpoint]) ? (sent[endpoint] as JsonObject)['type'] : undefined;
    const keys: string[] = [];
    for (const r of found) {
      if (!isObject(r)) return `a result that is not an object: ${JSON.stringify(r)}`;
      if (endpoint === 'action') {
        if (Object.keys(r).join(',') !== 'name' || typeof r['name'] !== 'string') return `a malformed action: ${JSON.stringify(r)}`;
        keys.push(r['name']);
      } else {
        if (Object.keys(r).join(',') !== 'type,id' || r['type'] !== searched || typeof r['id'] !== 'string')
          return `a malformed ${endpoint}: ${JSON.stringify(r)}`;
        keys.push(r['id']);
      }
    }
    return sortedByCodePoint(keys) ? undefined : `results not in code point order: ${keys.join(' ')}`;
  };
}

interface AuthzenOptions {
  /** Default: the zen API key and the JSON type. */
  readonly headers?: readonly Header[];
  readonly chunked?: boolean;
  readonly answer?: Json;
  /** The body as a value, for the 200 check (when `body` is given as bytes). */
  readonly value?: Json;
  readonly bare?: boolean;
  readonly requestId?: string;
  readonly method?: string;
  /** Another path (the per-tenant form, a query...). */
  readonly path?: string;
}

function authzenCase(
  endpoint: Endpoint,
  label: string,
  body: Buffer | string | Json | undefined,
  expect: readonly number[],
  options: AuthzenOptions = {},
): HttpCase {
  const method = options.method ?? 'POST';
  const bytesOf = (b: Buffer | string | Json | undefined): Buffer | undefined =>
    b === undefined ? undefined : Buffer.isBuffer(b) ? b : Buffer.from(typeof b === 'string' ? b : JSON.stringify(b), 'utf8');
  const raw = bytesOf(body);
  const value = options.value ?? (typeof body === 'string' || Buffer.isBuffer(body) || body === undefined ? null : body);
  return {
    label: `${endpoint}: ${label}`,
    method,
    path: options.path ?? AUTHZEN[endpoint],
    headers: options.headers ?? [bearer(ZEN_KEY), JSON_TYPE],
    ...(raw === undefined ? {} : { body: raw }),
    ...(options.chunked ? { chunked: true } : {}),
    expect,
    ...(options.bare ? { bare: true } : {}),
    // Every answer of the AuthZEN handlers carries the X-Request-ID sent (405 comes from the router).
    ...(method === 'POST' && !options.bare ? { requestId: options.requestId ?? true } : {}),
    check: authzenCheck(endpoint, value, options.answer),
  };
}

/** A JSON body given as a value: its status is the model's, its 200 is checked against the request. */
const judged = (endpoint: Endpoint, label: string, body: Json, options: AuthzenOptions = {}): HttpCase =>
  authzenCase(endpoint, label, JSON.stringify(body), [expectedAuthzenStatus(endpoint, body)], { value: body, ...options });

function authzenCases(): HttpCase[] {
  const { r, pick, int } = chooser(0xa2e);
  const cases: HttpCase[] = [];
  const add = (...more: HttpCase[]): void => {
    cases.push(...more);
  };
  const randomJson = randomJsonOf(
    { r, pick, int },
    ['type', 'id', 'name', 'properties', 'team', 'soft', 'limit', 'token', 'evaluations_semantic', 'explain', 'é', '', '\u0000'],
    [
      null,
      true,
      false,
      0,
      -1,
      1,
      2,
      0.5,
      1000,
      1001,
      1e21,
      '',
      ' ',
      'user',
      'document',
      'read',
      'write',
      'delete',
      'blue',
      'u-1',
      'd-1',
      'é',
      '𝒜',
      '\ud800',
      '\u0000',
      'execute_all',
      'deny_on_first_deny',
      'permit_on_first_permit',
      'first_wins',
      'bm90IGEgdG9rZW4',
      LONG(257),
      LONG(1025),
      LONG(300, '𝒜'),
    ],
  );

  // Every valid body answered exactly, then cut at every byte; every seventh cut streamed in chunks.
  for (const [n, valid] of AUTHZEN_VALID.entries()) {
    const whole = Buffer.from(JSON.stringify(valid.body), 'utf8');
    add(authzenCase(valid.endpoint, `valid body ${n}`, whole, [200], { answer: valid.answer }));
    add(authzenCase(valid.endpoint, `valid body ${n}, chunked`, whole, [200], { answer: valid.answer, chunked: true }));
    for (let cut = 0; cut < whole.length; cut++)
      add(authzenCase(valid.endpoint, `valid body ${n} cut at byte ${cut}`, whole.subarray(0, cut), [400], { chunked: cut % 7 === 3 }));
  }

  // Every slot of every endpoint given wrong (and a few right) values, or removed.
  const slots: readonly (readonly string[])[] = [
    [],
    ['subject'],
    ['subject', 'type'],
    ['subject', 'id'],
    ['subject', 'properties'],
    ['action'],
    ['action', 'name'],
    ['action', 'properties'],
    ['action', 'properties', 'soft'],
    ['resource'],
    ['resource', 'type'],
    ['resource', 'id'],
    ['resource', 'properties'],
    ['context'],
    ['options'],
    ['options', 'evaluations_semantic'],
    ['options', 'explain'],
    ['evaluations'],
    ['page'],
    ['page', 'limit'],
    ['page', 'token'],
    ['page', 'properties'],
  ];
  const values: readonly Json[] = [
    null,
    true,
    false,
    0,
    -1,
    1,
    1.5,
    1000,
    1001,
    1e21,
    '',
    ' ',
    'x',
    'read',
    'execute_all',
    'permit_on_first_permit',
    [],
    ['read'],
    [{}],
    {},
    { type: 'user' },
    { type: 'user', id: 'u-1' },
    { name: 'read' },
    { limit: 1 },
    { token: '' },
    LONG(256),
    LONG(257),
    LONG(1025),
    '\u0000',
    '\ud800',
    '𝒜',
  ];
  const bases = AUTHZEN_VALID.filter((_, i) => [0, 4, 7, 8, 9].includes(i));
  for (const base of bases) {
    for (const slot of slots) {
      for (const value of [...values, undefined]) {
        const body = setAt(base.body, slot, value);
        add(
          judged(
            base.endpoint,
            `${slot.join('.') || 'body'} = ${value === undefined ? 'removed' : JSON.stringify(value).slice(0, 30)}`,
            body,
          ),
        );
      }
    }
  }

  // Random values at random places, judged by the model; sent to a random endpoint, not only the body's own.
  const paths = [
    ...slots,
    ['context', 'a'],
    ['subject', 'team'],
    ['resource', 'properties', 'team'],
    ['action', 'soft'],
    ['extra'],
    ['evaluations', 'x'],
  ];
  for (let i = 0; i < 400; i++) {
    const base = pick(AUTHZEN_VALID);
    let body: Json = base.body;
    for (let k = 1 + int(3); k > 0; k--) body = setAt(body, pick(paths), r() < 0.1 ? undefined : randomJson());
    add(judged(r() < 0.8 ? base.endpoint : pick(ENDPOINTS), `random values ${i}: ${JSON.stringify(body).slice(0, 80)}`, body));
  }

  // Batches composed from items whose outcome under the defaults (u-1 reads d-1) is known: exact answers for every semantic.
  const T = { decision: true };
  const F = { decision: false };
  const pool: readonly (readonly [Json, boolean | string])[] = [
    [{}, true],
    [{ resource: d2 }, false],
    [{ subject: u2 }, false],
    [{ subject: u2, resource: d2 }, true],
    [{ action: { name: 'write' } }, true],
    [{ action: { name: 'delete' } }, false],
    [{ action: { name: 'delete', properties: { soft: true } } }, true],
    [{ action: { properties: { soft: true } } }, true],
    [{ subject: { id: 'u-2' } }, false],
    [{ resource: { id: 'd-2' } }, false],
    [{ resource: { ...d2, properties: { team: 'blue' } } }, true],
    [{ subject: { type: 'user', id: 'u-99', properties: { team: 'blue' } } }, true],
    [{ subject: { type: 'user', id: 'u-99' } }, false],
    [{ context: { a: 1 } }, true],
    [{ action: { name: 'share' } }, false],
    [{ subject: { type: 'bot', id: 'u-1' } }, false],
    [{ subject: 'u-1' }, 'subject must be an object'],
    [{ action: { name: 5 } }, 'action.name must be a string'],
    [{ resource: { type: 'document', id: '' } }, 'resource.id: must not be empty'],
    // An item's entity without an id or name takes the default's.
    [{ subject: { type: 'user' } }, true],
    [{ action: {} }, true],
    [{ context: [] }, 'context must be an object'],
    [{ subject: { type: 'user', id: 5 } }, 'subject.id must be a string'],
    [{ action: { name: '' } }, 'action.name: must not be empty'],
    [{ resource: { id: 'd-1', properties: 3 } }, 'resource.properties must be an object'],
  ];
  const notObjects: readonly Json[] = [7, null, [], 'x', true];
  // Big batches of short items only, so that 1001 of them stay within the body limit (a 400, not a 413).
  const short = pool.filter(([item]) => JSON.stringify(item).length <= 24);
  for (let i = 0; i < 150; i++) {
    const n = i < 140 ? 1 + int(12) : pick([999, 1000, 1001, 1100]);
    const items: Json[] = [];
    const outcomes: (boolean | string)[] = [];
    for (let k = 0; k < n; k++) {
      if (r() < 0.05) {
        items.push(pick(notObjects));
        outcomes.push('must be an object');
        continue;
      }
      const [item, outcome] = pick(n > 12 ? short : pool);
      items.push(item);
      outcomes.push(outcome);
    }
    const semantic = pick([undefined, ...SEMANTICS]);
    const explain = r() < 0.15;
    const options: JsonObject = {};
    if (semantic !== undefined) options['evaluations_semantic'] = semantic;
    if (explain) options['explain'] = true;
    const body: JsonObject = {
      subject: u1,
      action: readIt,
      resource: d1,
      evaluations: items,
      ...(semantic !== undefined || explain ? { options } : {}),
    };
    if (n > 1000) {
      add(judged('evaluations', `${n} items`, body));
      continue;
    }
    const expected: Json[] = [];
    for (const [k, outcome] of outcomes.entries()) {
      const message = outcome === 'must be an object' ? `evaluations[${k}] must be an object` : `evaluations[${k}].${String(outcome)}`;
      expected.push(typeof outcome === 'boolean' ? (outcome ? T : F) : { decision: false, context: { error: { status: 400, message } } });
      if (semantic === 'deny_on_first_deny' && outcome !== true) break;
      if (semantic === 'permit_on_first_permit' && outcome === true) break;
    }
    const label = `batch ${i} of ${n} (${semantic ?? 'default'}${explain ? ', explained' : ''})`;
    // Explained decisions carry a timestamp: those are checked for shape and decisions only.
    if (explain) {
      const shape = authzenCheck('evaluations', body);
      add({
        ...judged('evaluations', label, body),
        check: (reply) => {
          const wrong = shape(reply);
          if (wrong) return wrong;
          const got = (JSON.parse(reply.body.toString('utf8')) as { evaluations: { decision: boolean; context: JsonObject }[] })
            .evaluations;
          const want = expected as { decision: boolean; context?: JsonObject }[];
          if (
            got.length !== want.length ||
            got.some(
              (d, k) =>
                d.decision !== want[k]?.decision ||
                (want[k]?.context !== undefined && JSON.stringify(d.context) !== JSON.stringify(want[k]?.context)),
            )
          ) {
            return `decided ${JSON.stringify(got.map((d) => d.decision))}, expected ${JSON.stringify(want.map((d) => d.decision))}`;
          }
          return undefined;
        },
      });
    } else add(judged('evaluations', label, body, { answer: { evaluations: expected } }));
  }

  // Random edits of the bytes.
  for (let i = 0; i < 250; i++) {
    const valid = pick(AUTHZEN_VALID);
    const b = editBytes({ r, pick, int }, Buffer.from(JSON.stringify(valid.body), 'utf8'));
    let value: Json = null;
    try {
      value = JSON.parse(b.toString('utf8')) as Json;
    } catch {
      /* judged by status only */
    }
    add(
      authzenCase(valid.endpoint, `edited bytes ${i}: ${JSON.stringify(b.toString('latin1').slice(0, 60))}`, b, [200, 400], {
        value,
        chunked: i % 5 === 0,
      }),
    );
  }

  // Per endpoint: garbage, huge and deep bodies, Content-Type, Authorization, X-Request-ID, methods.
  for (const endpoint of ENDPOINTS) {
    const valid = AUTHZEN_VALID.find((v) => v.endpoint === endpoint) as (typeof AUTHZEN_VALID)[number];
    const text = JSON.stringify(valid.body);
    const withContext = (context: Json): string => JSON.stringify({ ...valid.body, context });
    for (let i = 0; i < 15; i++)
      add(authzenCase(endpoint, `random bytes ${i}`, Buffer.from(Array.from({ length: int(300) }, () => int(256))), [400]));
    for (const garbage of ['', ' ', 'null', 'true', '0', '"x"', '[]', '[{}]', '{', '}', 'nul', 'NaN', '\n'])
      add(authzenCase(endpoint, `body ${JSON.stringify(garbage)}`, garbage, [400]));
    add(
      authzenCase(endpoint, 'a 60 KB string in context', withContext({ blob: LONG(60_000) }), [200], {
        value: JSON.parse(withContext({ blob: '' })) as Json,
      }),
      authzenCase(endpoint, 'a body one byte past the limit', text + ' '.repeat(LIMIT + 1 - Buffer.byteLength(text)), [413]),
      authzenCase(endpoint, 'a body one byte past the limit, chunked', text + ' '.repeat(LIMIT + 1 - Buffer.byteLength(text)), [413], {
        chunked: true,
      }),
      authzenCase(endpoint, 'a body of exactly the limit', text + ' '.repeat(LIMIT - Buffer.byteLength(text)), [200], {
        answer: valid.answer,
      }),
      authzenCase(endpoint, 'a 1 MiB string', withContext({ blob: LONG(1 << 20) }), [413]),
      authzenCase(endpoint, 'a 1 MiB string without an API key', withContext({ blob: LONG(1 << 20) }), [401], { headers: [JSON_TYPE] }),
      // Past the decision input's nesting limit: refused, by search too (not an empty page); a batch's items fail one by one.
      ...[300, 3000].map((depth) =>
        authzenCase(
          endpoint,
          `${depth} nested lists in context`,
          `${text.slice(0, -1)},"context":{"n":${'['.repeat(depth)}1${']'.repeat(depth)}}}`,
          [endpoint === 'evaluations' ? 200 : 400],
          {
            answer:
              endpoint === 'evaluations'
                ? {
                    evaluations: Array.from({ length: 3 }, (_, i) => ({
                      decision: false,
                      context: {
                        error: { status: 400, message: `evaluations[${i}]: input is not a JSON document: nesting deeper than 256 levels` },
                      },
                    })),
                  }
                : undefined,
          },
        ),
      ),
      authzenCase(
        endpoint,
        '100 nested lists in context',
        `${text.slice(0, -1)},"context":{"n":${'['.repeat(100)}1${']'.repeat(100)}}}`,
        [200],
        { value: valid.body },
      ),
      authzenCase(endpoint, 'an inexact number in context', `${text.slice(0, -1)},"context":{"n":9007199254740993}}`, [400]),
      authzenCase(endpoint, 'latin-1 bytes', bytes(text.slice(0, 10), [0xe9], text.slice(10)), [400]),
      authzenCase(endpoint, 'a UTF-8 byte order mark', bytes([0xef, 0xbb, 0xbf], text), [200, 400], { answer: valid.answer }),
      authzenCase(endpoint, '__proto__ at the top', `{"__proto__":{"x":1},${text.slice(1)}`, [200], { answer: valid.answer }),
    );
    for (const [type, status] of [
      [undefined, 400],
      ['application/json; charset=utf-8', 200],
      ['APPLICATION/JSON', 200],
      ['application/authzen+json', 200],
      ['text/plain', 400],
      ['application/x-www-form-urlencoded', 400],
      ['', 400],
      [latin1(0xff), 400],
      ['application/jsonx', 400],
    ] as const) {
      const headers: Header[] = [bearer(ZEN_KEY)];
      if (type !== undefined) headers.push(['Content-Type', type]);
      add(
        authzenCase(endpoint, `Content-Type ${JSON.stringify(type)}`, text, [status], {
          headers,
          ...(status === 200 ? { answer: valid.answer } : {}),
        }),
      );
    }
    for (const [authorization, status] of [
      [undefined, 401],
      ['', 401],
      ['Bearer', 401],
      [`Basic ${ZEN_KEY}`, 401],
      [ZEN_KEY, 401],
      [`Bearer ${ZEN_KEY}x`, 401],
      [`Bearer ${LONG(8000, 'A')}`, 401],
      [latin1(0xff, 0xfe), 401],
      [`bearer ${ZEN_KEY}`, 200],
      [`Bearer\t${ZEN_KEY}  `, 200],
    ] as const) {
      const headers: Header[] = [JSON_TYPE];
      if (authorization !== undefined) headers.push(['Authorization', authorization]);
      const label = `Authorization ${String(JSON.stringify(authorization)).slice(0, 40)}`;
      add(
        authzenCase(endpoint, `${label}, valid body`, text, [status], { headers, ...(status === 200 ? { answer: valid.answer } : {}) }),
        authzenCase(endpoint, `${label}, broken body`, text.slice(0, 9), [status === 200 ? 400 : 401], { headers }),
      );
    }
    // Another tenant's key decides in that tenant (acme: no such rules or entities): a 200 all the same.
    add(authzenCase(endpoint, "acme's API key", text, [200], { headers: [bearer(API_KEY), JSON_TYPE], value: valid.body }));
    for (const [id, echoed] of [
      ['abc', true],
      [LONG(200, 'r'), true],
      ['has space', true],
      [LONG(201, 'r'), false],
      [latin1(0xff), false],
    ] as const) {
      const headers: Header[] = [bearer(ZEN_KEY), JSON_TYPE, ['X-Request-ID', id]];
      const requestId = echoed ? { requestId: id } : {};
      add(
        authzenCase(endpoint, `X-Request-ID ${JSON.stringify(id).slice(0, 20)}`, text, [200], {
          headers,
          answer: valid.answer,
          ...requestId,
        }),
        authzenCase(endpoint, `X-Request-ID ${JSON.stringify(id).slice(0, 20)}, broken body`, '{', [400], { headers, ...requestId }),
        authzenCase(endpoint, `X-Request-ID ${JSON.stringify(id).slice(0, 20)}, no key`, text, [401], {
          headers: headers.filter(([k]) => k !== 'Authorization'),
          ...requestId,
        }),
      );
    }
    for (const method of ['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
      add(
        authzenCase(endpoint, `${method} with a body`, text, [405], { method }),
        authzenCase(endpoint, `${method} at the tenant path`, undefined, [405], { method, path: `/zen${AUTHZEN[endpoint]}` }),
      );
    }
    add(authzenCase(endpoint, 'HEAD', undefined, [405], { method: 'HEAD' }));
    // The same route spelt otherwise.
    for (const [suffix, status] of [
      ['?x=1', 200],
      ['?', 200],
      ['/', 200],
      ['/x', 404],
      ['x', 404],
    ] as const) {
      add(
        authzenCase(endpoint, `path ${AUTHZEN[endpoint]}${suffix}`, text, [status], {
          path: `${AUTHZEN[endpoint]}${suffix}`,
          ...(status === 200 ? { answer: valid.answer } : {}),
        }),
      );
    }
  }

  // The per-tenant form: /<tenant>/access/v1/..., for the key's own tenant (200), another (403), or a segment that names none.
  const c = chooser(0x7e4);
  const tenantSegments: readonly (readonly [string, string | undefined])[] = [
    ['zen', 'zen'],
    ['acme', 'acme'],
    ['globex', 'globex'],
    ['initech', 'initech'],
    ['%7Aen', 'zen'],
    ['%7a%65%6e', 'zen'],
    ['z-1', 'z-1'],
    ['0', '0'],
    ['Zen', undefined],
    ['zen_1', undefined],
    ['-zen', undefined],
    ['zen-', undefined],
    [LONG(64, 'z'), undefined],
    ['%C3%A9', undefined],
    ['zen%2Facme', undefined],
    ['%ZZ', 'undecodable'],
    ['%E0%A4%A', 'undecodable'],
  ];
  for (let i = 0; i < 300; i++) {
    const [segment, tenant] = c.pick(tenantSegments);
    const valid = c.pick(AUTHZEN_VALID);
    const [header, keyTenant] = c.pick([
      [ZEN_KEY, 'zen'],
      [ZEN_KEY, 'zen'],
      [API_KEY, 'acme'],
      [GLOBEX_KEY, 'globex'],
      ['nope', undefined],
      [undefined, undefined],
    ] as const);
    const broken = c.r() < 0.2;
    const headers: Header[] = [JSON_TYPE];
    if (header !== undefined) headers.push(bearer(header));
    let expect: number[];
    if (tenant === 'undecodable') expect = [400, 404];
    // A segment that is no namespace name names nothing: 404.
    else if (tenant === undefined) expect = [404];
    else if (keyTenant === undefined) expect = [401];
    else if (keyTenant !== tenant) expect = [403];
    else if (broken) expect = [400];
    else expect = [200];
    const answer = keyTenant === 'zen' ? { answer: valid.answer } : { value: valid.body };
    add(
      authzenCase(
        valid.endpoint,
        `tenant ${segment.slice(0, 20)} with ${keyTenant ?? 'no'} key`,
        broken ? '{' : JSON.stringify(valid.body),
        expect,
        { headers, path: `/${segment}${AUTHZEN[valid.endpoint]}`, ...answer },
      ),
    );
  }
  return cases;
}

/** Follow-up pages: the token of a first page, with the query kept, changed, or the token damaged. */
function pageCases(token: string, secondPage: Json): HttpCase[] {
  const { r, pick, int } = chooser(0x9a6);
  const first = { subject: { type: 'user' }, action: readIt, resource: d1 };
  const page = (p: JsonObject): JsonObject => ({ ...first, page: p });
  const cases: HttpCase[] = [
    authzenCase('subject', 'the next page', page({ token }), [200], { answer: secondPage }),
    authzenCase('subject', 'the next page with its limit', page({ token, limit: 2 }), [200], { answer: secondPage }),
    authzenCase('subject', 'the next page, other page members ignored', page({ token, properties: { x: 1 }, count: 3 }), [200], {
      answer: secondPage,
    }),
    authzenCase(
      'subject',
      'the next page with the subject id (ignored, but sent: a changed query)',
      { ...page({ token }), subject: { type: 'user', id: 'u-1' } },
      [400],
    ),
    authzenCase('subject', "the token of the acme tenant's key", page({ token }), [400], { headers: [bearer(API_KEY), JSON_TYPE] }),
    authzenCase(
      'resource',
      'the token on resource search',
      { subject: u1, action: readIt, resource: { type: 'document' }, page: { token } },
      [400],
    ),
    authzenCase('action', 'the token on action search', { subject: u1, resource: d1, page: { token } }, [400]),
    authzenCase('subject', 'the token at the tenant path', page({ token }), [200], { path: `/zen${AUTHZEN.subject}`, answer: secondPage }),
  ];
  for (const limit of [1, 3, 1000, 0, 1001, 2.5, '2', null])
    cases.push(authzenCase('subject', `the token with limit ${JSON.stringify(limit)}`, page({ token, limit }), [400]));
  // Any change to the query is refused, valid or not.
  const slots: readonly (readonly string[])[] = [
    ['subject', 'type'],
    ['subject', 'properties'],
    ['action', 'name'],
    ['action', 'properties'],
    ['resource', 'id'],
    ['resource', 'type'],
    ['resource', 'properties'],
    ['context'],
    ['context', 'a'],
  ];
  for (const slot of slots) {
    for (const value of [{}, 'x', 'document', 'read', 'user', 'd-2', 1, { team: 'blue' }] as Json[]) {
      const body = setAt(page({ token }), slot, value);
      if (JSON.stringify(body) === JSON.stringify(page({ token }))) continue;
      cases.push(authzenCase('subject', `the token with ${slot.join('.')} = ${JSON.stringify(value)}`, body, [400]));
    }
  }
  // A damaged token: cut short, it never decodes; with a character replaced, it may still name a page of this query.
  for (let cut = 0; cut < token.length; cut++)
    cases.push(authzenCase('subject', `the token cut at ${cut}`, page({ token: token.slice(0, cut) }), cut === 0 ? [200] : [400]));
  const b64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  for (let i = 0; i < 120; i++) {
    const at = int(token.length);
    const damaged = `${token.slice(0, at)}${r() < 0.9 ? b64[int(64)] : pick(['=', '+', '/', ' ', '.', 'é'])}${token.slice(at + 1)}`;
    cases.push(
      authzenCase('subject', `the token with character ${at} replaced`, page({ token: damaged }), damaged === token ? [200] : [200, 400]),
    );
  }
  return cases;
}

/** The metadata document, GET and HEAD, with any headers; the tenant form for any namespace name. */
function metadataCases(): HttpCase[] {
  const c = chooser(0x3e7);
  const base = t.service.apiUrl;
  const check =
    (method: string, pdp: string) =>
    (reply: Reply): string | undefined => {
      if (!/^application\/json\b/.test(reply.headers['content-type'] ?? '')) return `Content-Type ${reply.headers['content-type']}`;
      if (method === 'HEAD') return reply.body.length === 0 ? undefined : 'a HEAD answered with a body';
      const want = {
        policy_decision_point: pdp,
        ...Object.fromEntries(
          Object.entries({
            access_evaluation_endpoint: AUTHZEN.evaluation,
            access_evaluations_endpoint: AUTHZEN.evaluations,
            search_subject_endpoint: AUTHZEN.subject,
            search_resource_endpoint: AUTHZEN.resource,
            search_action_endpoint: AUTHZEN.action,
          }).map(([k, p]) => [k, `${pdp}${p}`]),
        ),
      };
      return reply.body.toString('utf8') === JSON.stringify(want) ? undefined : `metadata ${reply.body.toString('utf8', 0, 200)}`;
    };
  const segments: readonly (readonly [string, string | undefined | 'undecodable' | 'none'])[] = [
    ['', 'none'],
    ['/', 'none'],
    ['?x=1', 'none'],
    ['/zen', 'zen'],
    ['/acme', 'acme'],
    ['/initech', 'initech'],
    ['/%7Aen', 'zen'],
    ['/a', 'a'],
    [`/${LONG(63, 'a')}`, LONG(63, 'a')],
    ['/zen?x=%ZZ', 'zen'],
    ['/zen/', 'zen'],
    ['/Zen', undefined],
    ['/zen_1', undefined],
    ['/-a', undefined],
    [`/${LONG(64, 'a')}`, undefined],
    ['/%C3%A9', undefined],
    ['/a%2Fb', undefined],
    ['/%ZZ', 'undecodable'],
    ['/zen/x', '404'],
    ['/a/b/c', '404'],
    ['s', '404'],
    ['/../zen', '404'],
  ];
  const cases: HttpCase[] = [];
  for (let i = 0; i < 250; i++) {
    const [segment, tenant] = c.pick(segments);
    const x = c.r();
    const method = x < 0.7 ? 'GET' : x < 0.85 ? 'HEAD' : c.pick(['POST', 'PUT', 'DELETE', 'PATCH']);
    const headers: Header[] = [];
    if (c.r() < 0.3)
      headers.push(['Authorization', c.pick([`Bearer ${ZEN_KEY}`, 'Bearer nope', '', latin1(0xff), `Bearer ${LONG(6000)}`])]);
    if (c.r() < 0.3) headers.push(['Accept', c.pick(['application/json', 'text/html', '*/*', '', latin1(0xfe)])]);
    if (c.r() < 0.2) headers.push(['If-None-Match', c.pick(['*', '"x"', LONG(3000, '"')])]);
    let expect: number[];
    if (tenant === 'undecodable') expect = [400, 404];
    else if (tenant === '404') expect = [404];
    else if (tenant === undefined) expect = [404];
    else if (method !== 'GET' && method !== 'HEAD') expect = [405];
    else expect = [200];
    const pdp = tenant === 'none' || tenant === undefined ? base : `${base}/${tenant}`;
    cases.push({
      label: `${method} metadata ${segment.slice(0, 20)}`,
      method,
      path: `/.well-known/authzen-configuration${segment}`,
      headers,
      expect,
      check: check(method, pdp),
      ...(method === 'POST' && c.r() < 0.5 ? { body: Buffer.from('{}') } : {}),
    });
  }
  return cases;
}

// ---------------------------------------------------------------------------------------------
// Bytes on the wire that the HTTP parser must refuse, or that frame a body oddly

function rawCases(): RawCase[] {
  const valid = ALLOWED_TEXT;
  const length = Buffer.byteLength(valid);
  const head = (extra = '', path = '/authorization'): string =>
    `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${API_KEY}\r\nContent-Type: application/json\r\n${extra}`;
  const post = (extra: string, body: string | Buffer): Buffer => bytes(head(extra), '\r\n', body);
  const gateways = tokens.get('acme/gateways') as string;
  const get = (path: string | Buffer, extra = ''): Buffer =>
    bytes('GET ', path, ` HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${gateways}\r\n${extra}\r\n`);
  const chunks = (body: string, size: number): string => {
    let out = '';
    for (let i = 0; i < body.length; i += size) out += `${Math.min(size, body.length - i).toString(16)}\r\n${body.slice(i, i + size)}\r\n`;
    return `${out}0\r\n\r\n`;
  };
  const BAD = [400];
  const c = (label: string, data: Buffer | string, expect: readonly (readonly number[])[], mayCloseSilently = false): RawCase => ({
    label,
    bytes: typeof data === 'string' ? Buffer.from(data, 'latin1') : data,
    expect,
    ...(mayCloseSilently ? { mayCloseSilently } : {}),
  });
  return [
    c('a valid request, for reference', post(`Content-Length: ${length}\r\n`, valid), [[200]]),
    // The AuthZEN evaluation endpoint has its own fast path; the others go through the router.
    ...[AUTHZEN.evaluation, AUTHZEN.evaluations, AUTHZEN.subject, `/zen${AUTHZEN.evaluation}`].flatMap((path) => {
      const zen = (extra: string, body: string): Buffer =>
        bytes(head(extra, path).replace(`Bearer ${API_KEY}`, `Bearer ${ZEN_KEY}`), '\r\n', body);
      const authzen = JSON.stringify({ subject: u1, action: readIt, resource: d1 });
      const n = Buffer.byteLength(authzen);
      return [
        c(`three pipelined requests to ${path}`, bytes(...Array.from({ length: 3 }, () => zen(`Content-Length: ${n}\r\n`, authzen))), [
          [200],
          [200],
          [200],
        ]),
        c(`a chunked body to ${path}`, zen('Transfer-Encoding: chunked\r\n', chunks(authzen, 5)), [[200]]),
        c(
          `a body shorter than its Content-Length to ${path}, then the client hangs up`,
          zen(`Content-Length: ${n + 50}\r\n`, authzen),
          [BAD],
          true,
        ),
        c(`two different Content-Lengths to ${path}`, zen(`Content-Length: ${n}\r\nContent-Length: ${n + 1}\r\n`, authzen), [BAD]),
        c(`Expect: 100-continue to ${path}`, zen(`Content-Length: ${n}\r\nExpect: 100-continue\r\n`, authzen), [[100, 200], [200]]),
        c(
          `a 70 KB chunked body to ${path}`,
          zen('Transfer-Encoding: chunked\r\n', chunks(`${authzen.slice(0, -1)},"context":{"s":"${LONG(70_000)}"}}`, 4096)),
          [[413]],
        ),
      ];
    }),
    c('three pipelined decisions', bytes(...Array.from({ length: 3 }, () => post(`Content-Length: ${length}\r\n`, valid))), [
      [200],
      [200],
      [200],
    ]),
    c('a body shorter than its Content-Length, then the client hangs up', post(`Content-Length: ${length + 50}\r\n`, valid), [BAD], true),
    c(
      'a body longer than its Content-Length: the rest is a broken second request',
      post(`Content-Length: ${length}\r\n`, `${valid}GARBAGE\r\n\r\n`),
      [[200, 400], BAD],
    ),
    c('two different Content-Lengths', post(`Content-Length: ${length}\r\nContent-Length: ${length + 1}\r\n`, valid), [BAD]),
    c('two equal Content-Lengths', post(`Content-Length: ${length}\r\nContent-Length: ${length}\r\n`, valid), [[200, 400]]),
    c('a list of Content-Lengths', post(`Content-Length: ${length}, ${length}\r\n`, valid), [[200, 400]]),
    ...['abc', '-1', '1e3', '0x10', `${length} 1`, '+12', ''].map((v) =>
      c(`Content-Length ${JSON.stringify(v)}`, post(`Content-Length: ${v}\r\n`, valid), [BAD]),
    ),
    c('a Content-Length of 10^20', post('Content-Length: 99999999999999999999\r\n', valid), [[400, 413]]),
    c('a Content-Length of 10 MB with a short body', post('Content-Length: 10000000\r\n', valid), [[413]]),
    c('Content-Length and chunked together', post(`Content-Length: ${length}\r\nTransfer-Encoding: chunked\r\n`, chunks(valid, 50)), [BAD]),
    c('Transfer-Encoding gzip', post('Transfer-Encoding: gzip\r\n', valid), [[400, 501]]),
    c('Transfer-Encoding chunked twice', post('Transfer-Encoding: chunked, chunked\r\n', chunks(valid, 50)), [BAD]),
    c('a chunked body', post('Transfer-Encoding: chunked\r\n', chunks(valid, 7)), [[200]]),
    c(
      'a chunked body with extensions and a trailer',
      post(
        'Transfer-Encoding: chunked\r\n',
        `${chunks(valid, 50)
          .slice(0, -2)
          .replace(/^32\r\n/gm, '32;name=value\r\n')}X-Trailer: 1\r\n\r\n`,
      ),
      [[200]],
    ),
    c('a chunk size that is not hex', post('Transfer-Encoding: chunked\r\n', `zz\r\n${valid}\r\n0\r\n\r\n`), [BAD]),
    c('a chunk size of 2^68', post('Transfer-Encoding: chunked\r\n', `100000000000000000\r\n${valid}\r\n0\r\n\r\n`), [[400, 413]]),
    c('a chunk shorter than its size, then the client hangs up', post('Transfer-Encoding: chunked\r\n', `ffff\r\n${valid}`), [BAD], true),
    c(
      '70 KB in 1 KB chunks',
      post('Transfer-Encoding: chunked\r\n', chunks(`${valid.slice(0, -1)},"context":{"s":"${LONG(70_000)}"}}`, 1024)),
      [[413]],
    ),
    c('a NUL in a header value', post(`Content-Length: ${length}\r\nX-Note: a\u0000b\r\n`, valid), [BAD]),
    c('a space in a header name', post(`Content-Length: ${length}\r\nX Note: a\r\n`, valid), [BAD]),
    c('a space before the colon', post(`Content-Length : ${length}\r\n`, valid), [BAD]),
    c('a header without a colon', post(`Content-Length: ${length}\r\nNoColon\r\n`, valid), [BAD]),
    c('a folded header line', post(`Content-Length: ${length}\r\nX-Note: a\r\n  folded\r\n`, valid), [BAD]),
    c('a bare CR', post(`Content-Length: ${length}\r\nX-Note: a\rb\r\n`, valid), [BAD]),
    c(
      'bare LF line endings',
      `POST /authorization HTTP/1.1\nHost: x\nAuthorization: Bearer ${API_KEY}\nContent-Type: application/json\nContent-Length: ${length}\n\n${valid}`,
      [[200, 400]],
    ),
    c(
      'UTF-8 in the Authorization header',
      bytes(head().replace(`Bearer ${API_KEY}`, 'Bearer é'), `Content-Length: ${length}\r\n\r\n`, valid),
      [[401]],
    ),
    c(
      'bytes that are not UTF-8 in X-Request-ID',
      bytes(head(`Content-Length: ${length}\r\nX-Request-ID: `), [0xff, 0xc0, 0xaf], '\r\n\r\n', valid),
      [[200]],
    ),
    c('HTTP/2.0 as the version', `GET /authorization HTTP/2.0\r\nHost: x\r\n\r\n`, [[400, 405, 505]]),
    c('HTTP/1.2 as the version', `GET /authorization HTTP/1.2\r\nHost: x\r\n\r\n`, [[400, 405, 505]]),
    c('HTTP/9 as the version', `GET /authorization HTTP/9\r\nHost: x\r\n\r\n`, [[400, 505]]),
    c('an unknown method', `BREW /authorization HTTP/1.1\r\nHost: x\r\n\r\n`, [BAD]),
    c('a lower-case method', bytes(head().replace('POST', 'post'), `Content-Length: ${length}\r\n\r\n`, valid), [BAD]),
    // Node's parser is lenient with these: they reach the router, which refuses the method.
    c('two spaces in the request line', `GET  /authorization HTTP/1.1\r\nHost: x\r\n\r\n`, [[400, 405]]),
    c('a request line with no version', `GET /authorization\r\nHost: x\r\n\r\n`, [[400, 405]]),
    c('only a method', 'GET\r\n\r\n', [BAD]),
    c(
      'no Host header',
      `POST /authorization HTTP/1.1\r\nAuthorization: Bearer ${API_KEY}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n${valid}`,
      [BAD],
    ),
    // RFC 9112 3.2 says 400, but Node's parser lets a second Host through; nothing here routes by host.
    c('two Host headers', post(`Content-Length: ${length}\r\nHost: y\r\n`, valid), [[200, 400]]),
    c(
      'HTTP/1.0 without Host',
      `POST /authorization HTTP/1.0\r\nAuthorization: Bearer ${API_KEY}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n${valid}`,
      [[200]],
    ),
    c('a TLS ClientHello on the plain port', Buffer.from(`16030100a5010000a10303${'00'.repeat(32)}000002c02f01000076`, 'hex'), [BAD], true),
    c('random binary', Buffer.from(Array.from({ length: 512 }, (_, i) => (i * 7919 + 13) % 256)), [BAD], true),
    c('nothing at all', Buffer.alloc(0), [[]], true),
    c('UTF-8 in the bundle path', get(bytes('/acme/connectors/policyagent/gateways/bundles/d', [0xc3, 0xb3], 'cs')), [[400, 404]]),
    c('latin-1 in the bundle path', get(bytes('/acme/connectors/policyagent/gateways/bundles/d', [0xf3], 'cs')), [[400, 404]]),
    c('a NUL in the bundle path', get(bytes('/acme/connectors/policyagent/gateways/bundles/d', [0x00], 'cs')), [BAD]),
    c('a space in the bundle path', get('/acme/connectors/policyagent/gateways/bundles/d cs'), [BAD]),
    c('a tab in the activity path', bytes(get('/acme/connectors/policyagent/gateways/bundles/d\tcs/activity')), [[400, 404]]),
    c('a control character in the decision path', `POST /authori\u0001zation HTTP/1.1\r\nHost: x\r\n\r\n`, [BAD]),
    c('an absolute-form target', bytes(head('', 'http://x/authorization'), `Content-Length: ${length}\r\n\r\n`, valid), [[200, 400]]),
    c('an asterisk target', 'OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n', [[400, 404]]),
    c('Expect: 100-continue', post(`Content-Length: ${length}\r\nExpect: 100-continue\r\n`, valid), [[100, 200], [200]]),
    c('an unknown Expect', post(`Content-Length: ${length}\r\nExpect: coffee\r\n`, valid), [[417]]),
    c('an Upgrade to websocket', post(`Content-Length: ${length}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n`, valid), [
      [200, 400, 426],
    ]),
    c(
      '2,000 headers',
      post(`${Array.from({ length: 2000 }, (_, i) => `X-H${i}: ${i}\r\n`).join('')}Content-Length: ${length}\r\n`, valid),
      [[400, 431]],
    ),
    c('a 20 KB header', post(`X-Big: ${LONG(20_000)}\r\nContent-Length: ${length}\r\n`, valid), [[431]]),
    c('a 20 KB path', get(`/acme/connectors/policyagent/gateways/bundles/${LONG(20_000)}`), [[431]]),
    c('headers that never end, then the client hangs up', `POST /authorization HTTP/1.1\r\nHost: x\r\nX-A: ${LONG(1000)}`, [BAD], true),
  ];
}

// ---------------------------------------------------------------------------------------------

/** "GET /x: URIError Failed to decode param '%ZZ'" for a logged error line. */
function summary(line: string): string {
  try {
    const { method, path, err, msg } = JSON.parse(line) as {
      method?: string;
      path?: string;
      err?: { type?: string; message?: string };
      msg?: string;
    };
    return `${method} ${path}: ${err?.type} ${err?.message ?? msg}`;
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

describe('under a barrage of bad input, the service', () => {
  it('answers POST /authorization with the right 4xx for every malformed body and header, never a 500', async () => {
    const cases = decisionCases();
    expect(cases.length).toBeGreaterThanOrEqual(1000);
    expect(pinned(cases)).toEqual([200, 400, 401, 405, 413, 431]);
    expectNoFailures(await barrage(to, cases, IN_FLIGHT), cases.length);
  });

  it('answers bundle requests with odd paths, tokens, If-None-Match and Prefer as the contract says, never a 500', async () => {
    const cases = bundleCases(1200);
    expect(pinned(cases)).toEqual([200, 304, 401, 403, 404, 405, 431]);
    expectNoFailures(await barrage(to, cases, IN_FLIGHT), cases.length);
  });

  it('answers activity requests with odd paths and keys with 200, 401 or 404 as the contract says, never a 500', async () => {
    const cases = activityCases(400);
    expect(pinned(cases)).toEqual([200, 401, 404]);
    expectNoFailures(await barrage(to, cases, IN_FLIGHT), cases.length);
  });

  it('answers the AuthZEN endpoints with the right status for every malformed body, batch, path and header, never a 500', async () => {
    const cases = authzenCases();
    expect(cases.length).toBeGreaterThanOrEqual(5000);
    expect(pinned(cases)).toEqual([200, 400, 401, 403, 404, 405, 413]);
    expectNoFailures(await barrage(to, cases, IN_FLIGHT), cases.length);
  });

  it('pages AuthZEN searches only with a token of the same query, whatever is done to it', async () => {
    // The first two pages of zen's blue readers of d-1, two at a time, asked for in the clear.
    const ask = async (page: JsonObject): Promise<{ page: { next_token: string }; results: Json }> => {
      const res = await t.api(AUTHZEN.subject, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${ZEN_KEY}` },
        body: JSON.stringify({ subject: { type: 'user' }, action: readIt, resource: d1, page }),
      });
      expect(res.status).toBe(200);
      return (await res.json()) as { page: { next_token: string }; results: Json };
    };
    const first = await ask({ limit: 2 });
    expect(first.results).toEqual(results('user', ZEN_BLUE.slice(0, 2)));
    const second = await ask({ token: first.page.next_token });
    expect(second.results).toEqual(results('user', ZEN_BLUE.slice(2, 4)));
    const cases = pageCases(first.page.next_token, second as unknown as Json);
    expect(pinned(cases)).toEqual([200, 400]);
    expectNoFailures(await barrage(to, cases, IN_FLIGHT), cases.length);
  });

  it('answers the AuthZEN metadata GET for any namespace name and header, never a 500', async () => {
    const cases = metadataCases();
    expect(pinned(cases)).toEqual([200, 404, 405]);
    expectNoFailures(await barrage(to, cases, IN_FLIGHT), cases.length);
  });

  it('refuses broken HTTP framing on the wire with a 4xx, never a 500', async () => {
    const cases = rawCases();
    expectNoFailures(await rawBarrage(to, cases, IN_FLIGHT), cases.length);
  });

  it('still decides, serves bundles and reports healthy afterwards, with no error logged', async () => {
    const allow = await t.decide(VALID[0]?.body, { 'X-Request-ID': 'after-the-barrage' });
    expect(allow.status).toBe(200);
    expect(allow.headers.get('x-request-id')).toBe('after-the-barrage');
    expect(await allow.json()).toMatchObject({ decision: 'allow' });
    const deny = await t.decide(VALID[1]?.body);
    expect(deny.status).toBe(200);
    expect(await deny.json()).toMatchObject({ decision: 'deny' });

    const bundle = await t.bundle('acme', 'gateways', 'docs', { Authorization: `Bearer ${tokens.get('acme/gateways')}` });
    expect(bundle.status).toBe(200);
    expect(bundle.headers.get('etag')).toBe(etags.get('acme/docs'));
    expect(Buffer.from(await bundle.arrayBuffer()).subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
    const notModified = await t.bundle('acme', 'gateways', 'docs', {
      Authorization: `Bearer ${tokens.get('acme/gateways')}`,
      'If-None-Match': etags.get('acme/docs') ?? '',
    });
    expect(notModified.status).toBe(304);

    const activity = await t.api('/acme/connectors/policyagent/gateways/bundles/docs/activity', {
      headers: { Authorization: `Bearer ${API_KEY}` },
    });
    expect(activity.status).toBe(200);
    expect(((await activity.json()) as { records: unknown[] }).records.length).toBeGreaterThan(0);

    const zen = await t.api(`/zen${AUTHZEN.evaluations}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${ZEN_KEY}`, 'X-Request-ID': 'zen-after' },
      body: JSON.stringify({ subject: u1, action: readIt, evaluations: [{ resource: d1 }, { resource: d2 }] }),
    });
    expect(zen.status).toBe(200);
    expect(zen.headers.get('x-request-id')).toBe('zen-after');
    expect(await zen.text()).toBe('{"evaluations":[{"decision":true},{"decision":false}]}');
    const found = await t.api(AUTHZEN.action, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${ZEN_KEY}` },
      body: JSON.stringify({ subject: u1, resource: d1 }),
    });
    expect(await found.text()).toBe('{"page":{"next_token":""},"results":[{"name":"read"},{"name":"write"}]}');
    expect((await t.api('/.well-known/authzen-configuration/zen')).status).toBe(200);

    expect((await t.ops('/healthz')).status).toBe(200);
    expect((await t.ops('/readyz')).status).toBe(200);
    expect(t.service.longPolls.size()).toBe(0);
    expect(loggedErrors.slice(0, 5).map(summary), `${loggedErrors.length} errors logged`).toEqual([]);
  });
});
