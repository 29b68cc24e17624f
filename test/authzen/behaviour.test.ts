// What the AuthZEN 1.0 API promises beyond the certification scenario (certification.test.ts):
// every 400 with its message, 401/403/404/405/413, the three batch semantics, how batch defaults
// apply, per-item errors, options.explain, search pages across a larger directory and the tokens
// that bind them, action search, request properties over directory properties, the per-tenant
// routes and metadata, and action properties through both POST /authorization and the evaluation
// endpoint. Two services: the examples/ folder (tenant records, the certification fixture, and
// acme), and a "lab" built here with 30 users and rules that read context and levels.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiKeySecret, startTestService, type TestService } from '../support/service.ts';
import { ACME_KEY, client, errorMessage, exampleManifests, RECORDS_KEY, type Answer, type Client } from './support.ts';

const NOW = '2026-01-02T03:04:05.000Z';
const PUBLIC_URL = 'https://pdp.example.com';

const EVALUATION = '/access/v1/evaluation';
const EVALUATIONS = '/access/v1/evaluations';
const SEARCH_SUBJECT = '/access/v1/search/subject';
const SEARCH_RESOURCE = '/access/v1/search/resource';
const SEARCH_ACTION = '/access/v1/search/action';
const ENDPOINTS = [EVALUATION, EVALUATIONS, SEARCH_SUBJECT, SEARCH_RESOURCE, SEARCH_ACTION] as const;

// --- The lab: tenants "lab" and "lab2" (the same rules and entities, another key).
const LAB_KEY = 'lab-api-key-0123456789abcdef';
const LAB2_KEY = 'lab2-api-key-0123456789abcdef';
const USERS = Array.from({ length: 30 }, (_, i) => `user-${String(i + 1).padStart(2, '0')}`);
/** Every sixth user is on team red; the others (25) on team blue. Odd-numbered users have level 2. */
const teamOf = (n: number): string => (n % 6 === 0 ? 'red' : 'blue');
const BLUE = USERS.filter((_, i) => teamOf(i + 1) === 'blue');
/** Ids whose code point order differs from UTF-16 order (𝒜 is a surrogate pair) and from locale order. */
const MEMBERS = ['b', 'B', 'a', 'é', 'ｚ', '𝒜', 'Z', '10', '9'];
const MEMBERS_IN_CODE_POINT_ORDER = ['10', '9', 'B', 'Z', 'a', 'b', 'é', 'ｚ', '𝒜'];

function labManifest(ns: string, key: string): string {
  const rule = (name: string, spec: string): string =>
    `apiVersion: acl.policyagent.dev/v1alpha1\nkind: Rule\nmetadata: { name: ${name}, namespace: ${ns} }\nspec: ${spec}\n`;
  const users = USERS.map(
    (id, i) => `    - { type: user, id: ${id}, properties: { team: ${teamOf(i + 1)}, level: ${(i + 1) % 2 === 1 ? 2 : 1} } }`,
  ).join('\n');
  const members = MEMBERS.map((id) => `    - { type: member, id: ${JSON.stringify(id)} }`).join('\n');
  return [
    rule(
      'team-read',
      '{ state: Enforced, subjectType: user, actions: [read], resourceType: document, condition: "principal.team == resource.team" }',
    ),
    rule(
      'senior-write',
      '{ state: Enforced, subjectType: user, actions: [write], resourceType: document, condition: "principal.team == resource.team && principal.level >= 2" }',
    ),
    rule(
      'internal-share',
      '{ state: Enforced, subjectType: user, actions: [share], resourceType: document, condition: \'context.channel == "internal"\' }',
    ),
    rule('approve-expenses', '{ state: Enforced, subjectType: user, actions: [approve], resourceType: expense }'),
    rule('bots-index', '{ state: Enforced, subjectType: bot, actions: [index], resourceType: document }'),
    rule('members-read', '{ state: Enforced, subjectType: member, actions: [read], resourceType: document }'),
    rule('proposed-comment', '{ state: Proposed, subjectType: user, actions: [comment], resourceType: document }'),
    `apiVersion: acl.policyagent.dev/v1alpha1\nkind: Directory\nmetadata: { name: people, namespace: ${ns} }\nspec:\n  entities:\n${users}\n${members}\n`,
    `apiVersion: acl.policyagent.dev/v1alpha1\nkind: Directory\nmetadata: { name: documents, namespace: ${ns} }\nspec:\n  entities:\n    - { type: document, id: doc-1, properties: { team: blue } }\n    - { type: document, id: doc-2, properties: { team: red } }\n`,
    apiKeySecret(ns, 'key', key),
  ].join('---\n');
}

let ex: TestService;
let lab: TestService;
/** Tenant records of the examples (the certification fixture). */
let records: Client;
let acme: Client;
let labClient: Client;
let lab2Client: Client;

beforeAll(async () => {
  const serviceOptions = { now: () => new Date(NOW) };
  [ex, lab] = await Promise.all([
    startTestService({ manifests: await exampleManifests(), publicUrl: PUBLIC_URL, serviceOptions }),
    startTestService({
      manifests: { 'lab.yaml': labManifest('lab', LAB_KEY), 'lab2.yaml': labManifest('lab2', LAB2_KEY) },
      serviceOptions,
    }),
  ]);
  records = client(ex, RECORDS_KEY);
  acme = client(ex, ACME_KEY);
  labClient = client(lab, LAB_KEY);
  lab2Client = client(lab, LAB2_KEY);
});
afterAll(async () => {
  await Promise.all([ex?.stop(), lab?.stop()]);
});

const alice = { type: 'user', id: 'alice' };
const bob = { type: 'user', id: 'bob' };
const carol = { type: 'user', id: 'carol' };
const record1 = { type: 'record', id: 'record-1' };
const record2 = { type: 'record', id: 'record-2' };
const read = { name: 'read' };
const write = { name: 'write' };
const aliceReadsRecord1 = { subject: alice, action: read, resource: record1 };

/** A 200 whose body is exactly `body`. */
function expectBody(a: Answer, body: unknown): void {
  expect(a.status, a.text).toBe(200);
  expect(a.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(a.text).toBe(JSON.stringify(body));
}

const decisions = (a: Answer): unknown[] => (a.json as { evaluations: unknown[] }).evaluations;
const ids = (a: Answer): string[] => (a.json as { results: { id: string }[] }).results.map((r) => r.id);
const nextToken = (a: Answer): string => (a.json as { page: { next_token: string } }).page.next_token;

// ---------------------------------------------------------------------------------------------
describe('400: what is wrong with a request, said in the message', () => {
  it.each([
    ['malformed JSON', '{"subject":', 'invalid JSON: Unexpected end of JSON input'],
    ['an empty body', '', 'the body is empty; expected a JSON object'],
    ['a JSON array', '[]', 'the body must be a JSON object'],
    ['a JSON string', '"alice"', 'the body must be a JSON object'],
    ['an inexact number', '{"n":9007199254740993}', expect.stringMatching(/^the number 9007199254740993 cannot be compared exactly/)],
  ])('every endpoint refuses %s', async (_name, body, message) => {
    for (const path of ENDPOINTS) {
      const a = await records.post(path, body);
      // An inexact number is refused while parsing, before any field is looked at.
      expect(errorMessage(a, 400), path).toEqual(message);
    }
  });

  it.each([
    ['text/plain', 'Content-Type must be application/json, got "text/plain"'],
    ['application/xml', 'Content-Type must be application/json, got "application/xml"'],
    [undefined, 'Content-Type must be application/json, got none'],
  ])('every endpoint refuses Content-Type %s', async (type, message) => {
    for (const path of ENDPOINTS) {
      expect(
        errorMessage(await records.post(path, JSON.stringify(aliceReadsRecord1), { headers: { 'Content-Type': type } }), 400),
        path,
      ).toBe(message);
    }
    // JSON with parameters, and +json types, are JSON.
    expectBody(await records.post(EVALUATION, aliceReadsRecord1, { headers: { 'Content-Type': 'application/json; charset=utf-8' } }), {
      decision: true,
    });
  });

  it.each([
    ['subject given as a string', { subject: 'alice', action: read, resource: record1 }, 'subject must be an object'],
    ['action.name given as a number', { subject: alice, action: { name: 123 }, resource: record1 }, 'action.name must be a string'],
    [
      'action given as a string (the service spec form, not AuthZEN)',
      { subject: alice, action: 'read', resource: record1 },
      'action must be an object',
    ],
    ['no subject', { action: read, resource: record1 }, 'subject is required'],
    ['no action', { subject: alice, resource: record1 }, 'action is required'],
    ['no resource', { subject: alice, action: read }, 'resource is required'],
    ['no subject.type', { subject: { id: 'alice' }, action: read, resource: record1 }, 'subject.type is required'],
    ['no resource.id', { subject: alice, action: read, resource: { type: 'record' } }, 'resource.id is required'],
    ['an empty subject.id', { subject: { type: 'user', id: '' }, action: read, resource: record1 }, 'subject.id: must not be empty'],
    [
      'a 257-character action name',
      { subject: alice, action: { name: 'x'.repeat(257) }, resource: record1 },
      'action.name: must be at most 256 characters',
    ],
    [
      'subject.properties as a list',
      { subject: { ...alice, properties: [] }, action: read, resource: record1 },
      'subject.properties must be an object',
    ],
    [
      'action.properties as a string',
      { subject: alice, action: { name: 'read', properties: 'x' }, resource: record1 },
      'action.properties must be an object',
    ],
    ['a context that is a list', { ...aliceReadsRecord1, context: [] }, 'context must be an object'],
    ['a null context', { ...aliceReadsRecord1, context: null }, 'context must be an object'],
    ['subject problems before action problems', { subject: {}, action: 5 }, 'subject.type is required'],
  ])('evaluation and a batch without items refuse %s', async (_name, body, message) => {
    expect(errorMessage(await records.post(EVALUATION, body), 400)).toBe(message);
    expect(errorMessage(await records.post(EVALUATIONS, body), 400)).toBe(message);
    expect(errorMessage(await records.post(EVALUATIONS, { ...body, evaluations: [] }), 400)).toBe(message);
  });

  it.each([
    ['options as a string', 'x', 'options must be an object'],
    ['options as a list', [], 'options must be an object'],
    [
      'an unknown evaluations_semantic',
      { evaluations_semantic: 'first_wins' },
      'options.evaluations_semantic must be one of execute_all, deny_on_first_deny, permit_on_first_permit',
    ],
    [
      'evaluations_semantic as a number',
      { evaluations_semantic: 1 },
      'options.evaluations_semantic must be one of execute_all, deny_on_first_deny, permit_on_first_permit',
    ],
    ['explain as a string', { explain: 'yes' }, 'options.explain must be true or false'],
    [
      'evaluations_semantic null',
      { evaluations_semantic: null },
      'options.evaluations_semantic must be one of execute_all, deny_on_first_deny, permit_on_first_permit',
    ],
    ['explain null', { explain: null }, 'options.explain must be true or false'],
  ])('evaluation and evaluations refuse %s', async (_name, options, message) => {
    expect(errorMessage(await records.post(EVALUATION, { ...aliceReadsRecord1, options }), 400)).toBe(message);
    expect(
      errorMessage(await records.post(EVALUATIONS, { subject: alice, action: read, options, evaluations: [{ resource: record1 }] }), 400),
    ).toBe(message);
  });

  it('accepts options it does not know', async () => {
    expectBody(
      await records.post(EVALUATIONS, {
        subject: alice,
        action: read,
        options: { evaluations_semantic: 'execute_all', another_option: 'value' },
        evaluations: [{ resource: record1 }],
      }),
      { evaluations: [{ decision: true }] },
    );
  });

  it.each([
    ['an object', { resource: record1 }],
    ['a string', 'all'],
    ['a number', 2],
    ['null', null],
    ['true', true],
  ])('refuses evaluations given as %s', async (_name, evaluations) => {
    expect(errorMessage(await records.post(EVALUATIONS, { ...aliceReadsRecord1, evaluations }), 400)).toBe('evaluations must be an array');
  });

  it('takes 1000 evaluations and refuses 1001', async () => {
    const item = { resource: record1 };
    const thousand = await records.post(EVALUATIONS, { subject: alice, action: read, evaluations: new Array(1000).fill(item) });
    expect(thousand.status).toBe(200);
    expect(decisions(thousand)).toEqual(new Array(1000).fill({ decision: true }));
    const tooMany = await records.post(EVALUATIONS, { subject: alice, action: read, evaluations: new Array(1001).fill(item) });
    expect(errorMessage(tooMany, 400)).toBe('evaluations: at most 1000 per request, got 1001');
  });

  it.each([
    ['no subject.type', SEARCH_SUBJECT, { subject: {}, action: read, resource: record1 }, 'subject.type is required'],
    [
      'a resource with no type',
      SEARCH_SUBJECT,
      { subject: { type: 'user' }, action: read, resource: { id: 'record-1' } },
      'resource.type is required',
    ],
    ['an action without a name', SEARCH_SUBJECT, { subject: { type: 'user' }, action: {}, resource: record1 }, 'action.name is required'],
    ['no resource.type', SEARCH_RESOURCE, { subject: alice, action: read, resource: {} }, 'resource.type is required'],
    [
      'a subject given as a string',
      SEARCH_RESOURCE,
      { subject: 'alice', action: read, resource: { type: 'record' } },
      'subject must be an object',
    ],
    ['an action search without subject.id', SEARCH_ACTION, { subject: { type: 'user' }, resource: record1 }, 'subject.id is required'],
    ['an action search without resource.id', SEARCH_ACTION, { subject: alice, resource: { type: 'record' } }, 'resource.id is required'],
    ['a context that is a string', SEARCH_ACTION, { subject: alice, resource: record1, context: 'x' }, 'context must be an object'],
  ])('search refuses %s', async (_name, path, body, message) => {
    expect(errorMessage(await records.post(path, body), 400)).toBe(message);
  });

  it("refuses a context nested past the decision input's 256 levels on every endpoint, search too (not an empty page); in a batch each item using it fails", async () => {
    const nested = (depth: number): unknown => JSON.parse(`{"n":${'['.repeat(depth)}1${']'.repeat(depth)}}`);
    const deep = nested(300);
    const message = 'input is not a JSON document: nesting deeper than 256 levels';
    expect(errorMessage(await records.post(EVALUATION, { ...aliceReadsRecord1, context: deep }), 400)).toBe(message);
    expect(errorMessage(await records.post(EVALUATIONS, { ...aliceReadsRecord1, context: deep }), 400)).toBe(message);
    expect(
      errorMessage(await records.post(SEARCH_SUBJECT, { subject: { type: 'user' }, action: read, resource: record1, context: deep }), 400),
    ).toBe(message);
    expect(
      errorMessage(await records.post(SEARCH_RESOURCE, { subject: alice, action: read, resource: { type: 'record' }, context: deep }), 400),
    ).toBe(message);
    expect(errorMessage(await records.post(SEARCH_ACTION, { subject: alice, resource: record1, context: deep }), 400)).toBe(message);
    // Deep properties of the searched entity are the request's too.
    expect(
      errorMessage(
        await records.post(SEARCH_SUBJECT, { subject: { type: 'user', properties: deep }, action: read, resource: record1 }),
        400,
      ),
    ).toBe(message);
    expectBody(
      await records.post(EVALUATIONS, {
        subject: alice,
        action: read,
        context: deep,
        evaluations: [{ resource: record1 }, { resource: record1, context: {} }],
      }),
      {
        evaluations: [{ decision: false, context: { error: { status: 400, message: `evaluations[0]: ${message}` } } }, { decision: true }],
      },
    );
    // Within the limit it is data.
    const shallow = nested(200);
    expectBody(await records.post(EVALUATION, { ...aliceReadsRecord1, context: shallow }), { decision: true });
    expect(
      ids(await records.post(SEARCH_SUBJECT, { subject: { type: 'user' }, action: read, resource: record1, context: shallow })),
    ).toEqual(['alice', 'bob']);
  });

  it('ignores any action sent to action search', async () => {
    const plain = await records.post(SEARCH_ACTION, { subject: alice, resource: record1 });
    expectBody(plain, { page: { next_token: '' }, results: [{ name: 'read' }, { name: 'write' }] });
    expect(
      (await records.post(SEARCH_ACTION, { subject: alice, action: { name: 'delete', properties: { soft: true } }, resource: record1 }))
        .text,
    ).toBe(plain.text);
    expect((await records.post(SEARCH_ACTION, { subject: alice, action: 5, resource: record1 })).text).toBe(plain.text);
  });

  it.each([
    ['page as a number', 1, 'page must be an object'],
    ['page as a list', [], 'page must be an object'],
    ['a limit of 0', { limit: 0 }, 'page.limit must be an integer from 1 to 1000'],
    ['a negative limit', { limit: -1 }, 'page.limit must be an integer from 1 to 1000'],
    ['a limit of 1001', { limit: 1001 }, 'page.limit must be an integer from 1 to 1000'],
    ['a fractional limit', { limit: 1.5 }, 'page.limit must be an integer from 1 to 1000'],
    ['a limit given as text', { limit: '10' }, 'page.limit must be an integer from 1 to 1000'],
    ['a null limit', { limit: null }, 'page.limit must be an integer from 1 to 1000'],
    ['a numeric token', { token: 5 }, 'page.token must be a string'],
    ['a token that is not base64url', { token: 'not a token!' }, 'page.token is not a token this PDP issued'],
    [
      'a token that decodes to something else',
      { token: Buffer.from('{"after":"alice"}').toString('base64url') },
      'page.token is not a token this PDP issued',
    ],
    [
      'a token with a limit past the largest',
      { token: Buffer.from(JSON.stringify([1, 'alice', 5000, 'x'])).toString('base64url') },
      'page.token is not a token this PDP issued',
    ],
    [
      'a token of another version',
      { token: Buffer.from(JSON.stringify([2, 'alice', 1, 'x'])).toString('base64url') },
      'page.token is not a token this PDP issued',
    ],
  ])('search refuses %s', async (_name, page, message) => {
    for (const [path, body] of [
      [SEARCH_SUBJECT, { subject: { type: 'user' }, action: read, resource: record1 }],
      [SEARCH_RESOURCE, { subject: alice, action: read, resource: { type: 'record' } }],
      [SEARCH_ACTION, { subject: alice, resource: record1 }],
    ] as const) {
      expect(errorMessage(await records.post(path, { ...body, page }), 400), path).toBe(message);
    }
  });

  it('takes limits 1 and 1000, and an empty token as no token', async () => {
    const body = { subject: { type: 'user' }, action: read, resource: record1 };
    expect(ids(await records.post(SEARCH_SUBJECT, { ...body, page: { limit: 1 } }))).toEqual(['alice']);
    expectBody(await records.post(SEARCH_SUBJECT, { ...body, page: { limit: 1000 } }), {
      page: { next_token: '' },
      results: [
        { type: 'user', id: 'alice' },
        { type: 'user', id: 'bob' },
      ],
    });
    expect(ids(await records.post(SEARCH_SUBJECT, { ...body, page: { token: '', limit: 1 } }))).toEqual(['alice']);
    // page.properties and other page members are ignored.
    expect(ids(await records.post(SEARCH_SUBJECT, { ...body, page: { properties: { sort: 'desc' }, count: 9 } }))).toEqual([
      'alice',
      'bob',
    ]);
  });
});

// ---------------------------------------------------------------------------------------------
describe('401, 403, 413', () => {
  it('answers 401 with WWW-Authenticate on every endpoint, with no key or an unknown one, before reading the body', async () => {
    for (const path of [...ENDPOINTS, ...ENDPOINTS.map((p) => `/records${p}`)]) {
      for (const [key, message] of [
        [null, 'an API key is required: Authorization: Bearer <key>'],
        ['not-a-key', 'the API key is not valid'],
      ] as const) {
        for (const body of [JSON.stringify(aliceReadsRecord1), '{broken']) {
          const a = await records.post(path, body, { key, headers: { 'X-Request-ID': 'who-1' } });
          expect(errorMessage(a, 401), path).toBe(message);
          expect(a.headers.get('www-authenticate')).toBe('Bearer realm="acl-operator"');
          expect(a.headers.get('x-request-id')).toBe('who-1');
        }
      }
      // Another scheme is no key either.
      expect((await records.post(path, aliceReadsRecord1, { key: null, headers: { Authorization: `Basic ${RECORDS_KEY}` } })).status).toBe(
        401,
      );
    }
  });

  it('answers 413 past the body limit on every endpoint, and closes the connection', async () => {
    const big = JSON.stringify({ ...aliceReadsRecord1, context: { blob: 'x'.repeat(70_000) } });
    for (const path of ENDPOINTS) {
      const a = await records.post(path, big, { headers: { 'X-Request-ID': 'big-1' } });
      expect(errorMessage(a, 413), path).toBe(`the body is ${Buffer.byteLength(big)} bytes; the limit is 65536`);
      expect(a.headers.get('connection')).toBe('close');
      expect(a.headers.get('x-request-id')).toBe('big-1');
    }
    // Just under the limit is fine.
    const fits = JSON.stringify({ ...aliceReadsRecord1, context: { blob: 'x'.repeat(60_000) } });
    expectBody(await records.post(EVALUATION, fits), { decision: true });
  });
});

// ---------------------------------------------------------------------------------------------
describe('batch semantics', () => {
  // true, false, true, false: alice reads, bob may not write record-1, alice writes her record, carol (a contractor) may not read.
  const mixed = [
    { subject: alice, action: read, resource: record1 },
    { subject: bob, action: write, resource: record1 },
    { subject: alice, action: write, resource: record1 },
    { subject: carol, action: read, resource: record1 },
  ];
  const T = { decision: true };
  const F = { decision: false };
  const itemError = (i: number, message: string): unknown => ({
    decision: false,
    context: { error: { status: 400, message: `evaluations[${i}].${message}` } },
  });
  const batch = (items: unknown[], semantic?: string): Record<string, unknown> => ({
    evaluations: items,
    ...(semantic ? { options: { evaluations_semantic: semantic } } : {}),
  });

  it('execute_all (the default) decides every item, in order, whatever the decisions and errors', async () => {
    const expected = { evaluations: [T, F, T, F] };
    expectBody(await records.post(EVALUATIONS, batch(mixed)), expected);
    expectBody(await records.post(EVALUATIONS, batch(mixed, 'execute_all')), expected);
    expectBody(await records.post(EVALUATIONS, batch([...mixed].reverse(), 'execute_all')), { evaluations: [F, T, F, T] });
    expectBody(await records.post(EVALUATIONS, batch([{}, mixed[0], mixed[1], 7], 'execute_all')), {
      evaluations: [
        itemError(0, 'subject is required'),
        T,
        F,
        { decision: false, context: { error: { status: 400, message: 'evaluations[3] must be an object' } } },
      ],
    });
  });

  it('deny_on_first_deny stops after the first false decision, and returns the items up to it', async () => {
    expectBody(await records.post(EVALUATIONS, batch(mixed, 'deny_on_first_deny')), { evaluations: [T, F] });
    expectBody(await records.post(EVALUATIONS, batch([mixed[1], mixed[0]], 'deny_on_first_deny')), { evaluations: [F] });
    expectBody(await records.post(EVALUATIONS, batch([mixed[0], mixed[2]], 'deny_on_first_deny')), { evaluations: [T, T] });
  });

  it('deny_on_first_deny stops at an item error too: an error is a deny', async () => {
    const broken = { subject: alice, action: { name: 7 }, resource: record1 };
    expectBody(await records.post(EVALUATIONS, batch([mixed[0], broken, mixed[2], mixed[1]], 'deny_on_first_deny')), {
      evaluations: [T, itemError(1, 'action.name must be a string')],
    });
    expectBody(await records.post(EVALUATIONS, batch([null, mixed[0]], 'deny_on_first_deny')), {
      evaluations: [{ decision: false, context: { error: { status: 400, message: 'evaluations[0] must be an object' } } }],
    });
  });

  it('permit_on_first_permit stops after the first true decision; errors and denies before it are kept', async () => {
    expectBody(await records.post(EVALUATIONS, batch(mixed, 'permit_on_first_permit')), { evaluations: [T] });
    expectBody(await records.post(EVALUATIONS, batch([mixed[3], {}, mixed[1], mixed[2], mixed[0]], 'permit_on_first_permit')), {
      evaluations: [F, itemError(1, 'subject is required'), F, T],
    });
    expectBody(await records.post(EVALUATIONS, batch([mixed[1], mixed[3]], 'permit_on_first_permit')), { evaluations: [F, F] });
  });

  it("an item's entity replaces the default whole: the default's properties never leak into it", async () => {
    // With the default's status (archived) alice could not write record-1; the item's own record-1 is active (directory).
    expectBody(
      await records.post(EVALUATIONS, {
        subject: alice,
        action: write,
        resource: { type: 'record', id: 'record-2', properties: { status: 'archived' } },
        evaluations: [{ resource: record1 }, {}],
      }),
      { evaluations: [T, F] },
    );
    // With the default's groups carol could read; the item's carol is a contractor (directory).
    expectBody(
      await records.post(EVALUATIONS, {
        subject: { type: 'user', id: 'dave', properties: { groups: ['staff'] } },
        action: read,
        resource: record1,
        evaluations: [{ subject: { id: 'carol' } }, {}],
      }),
      { evaluations: [F, T] },
    );
    // With the default action's soft: true alice could delete; the item's own delete has none.
    expectBody(
      await records.post(EVALUATIONS, {
        subject: alice,
        action: { name: 'delete', properties: { soft: true } },
        resource: record1,
        evaluations: [{ action: { name: 'delete' } }, {}],
      }),
      { evaluations: [F, T] },
    );
  });

  it("an item's entity that lacks type, id or name takes it from the default", async () => {
    // type from the default resource; id from the default resource with the item's properties; name from the default action.
    expectBody(
      await records.post(EVALUATIONS, {
        subject: alice,
        action: write,
        resource: { type: 'record', id: 'record-1' },
        evaluations: [
          { resource: { id: 'record-3' } },
          { resource: { properties: { status: 'archived' } } },
          { resource: { type: 'record' } },
          { resource: { id: 'record-1' } },
        ],
      }),
      { evaluations: [F, F, T, T] },
    );
    expectBody(
      await records.post(EVALUATIONS, {
        subject: alice,
        action: { name: 'delete' },
        resource: record1,
        evaluations: [{ action: { properties: { soft: true } } }, { action: { properties: { soft: false } } }],
      }),
      { evaluations: [T, F] },
    );
    expectBody(
      await records.post(EVALUATIONS, {
        subject: { type: 'user' },
        action: read,
        resource: record1,
        evaluations: [{ subject: { id: 'alice' } }, { subject: { id: 'carol' } }, { subject: { type: 'user' } }],
      }),
      { evaluations: [T, F, itemError(2, 'subject.id is required')] },
    );
  });

  it("an item's context replaces the default context whole", async () => {
    const share = { subject: { type: 'user', id: 'user-02' }, action: { name: 'share' }, resource: { type: 'document', id: 'doc-1' } };
    expectBody(
      await labClient.post(EVALUATIONS, {
        ...share,
        context: { channel: 'internal', source: 'default' },
        evaluations: [{}, { context: { source: 'item' } }, { context: { channel: 'internal' } }, { context: {} }],
      }),
      { evaluations: [T, F, T, F] },
    );
  });

  it('a default that is not an entity is an error of each item that relies on it, not of the request', async () => {
    expectBody(
      await records.post(EVALUATIONS, {
        subject: 'alice',
        action: read,
        evaluations: [{ resource: record1 }, { subject: bob, resource: record1 }],
      }),
      {
        evaluations: [itemError(0, 'subject must be an object'), T],
      },
    );
  });

  it('an absent or empty evaluations array is one evaluation, answered {"decision"}', async () => {
    expectBody(await records.post(EVALUATIONS, aliceReadsRecord1), { decision: true });
    expectBody(await records.post(EVALUATIONS, { ...aliceReadsRecord1, evaluations: [] }), { decision: true });
    expectBody(await records.post(EVALUATIONS, { subject: bob, action: write, resource: record1, evaluations: [] }), { decision: false });
    // The options apply to it: explain.
    const explained = await records.post(EVALUATIONS, { ...aliceReadsRecord1, evaluations: [], options: { explain: true } });
    expect(Object.keys(explained.json as object)).toEqual(['decision', 'context']);
  });
});

// ---------------------------------------------------------------------------------------------
describe('options.explain', () => {
  const allowContext = {
    policyId: 'records/staff-read-records',
    reasons: ['Rule records/staff-read-records allowed the request: Staff may read every record.'],
    timestamp: NOW,
  };

  it('adds {policyId, reasons, timestamp} only when asked for', async () => {
    expectBody(await records.post(EVALUATION, { ...aliceReadsRecord1, options: { explain: true } }), {
      decision: true,
      context: allowContext,
    });
    expectBody(await records.post(EVALUATION, aliceReadsRecord1), { decision: true });
    expectBody(await records.post(EVALUATION, { ...aliceReadsRecord1, options: { explain: false } }), { decision: true });
    expectBody(await records.post(EVALUATION, { ...aliceReadsRecord1, options: {} }), { decision: true });
  });

  it('explains a deny with the rules that did not match', async () => {
    const a = await records.post(EVALUATION, { subject: bob, action: write, resource: record1, options: { explain: true } });
    expect(a.json).toEqual({
      decision: false,
      context: {
        policyId: 'records',
        reasons: [
          expect.stringContaining('Rule records/admins-write-archived-records did not match'),
          expect.stringContaining('Rule records/owners-write-active-records did not match'),
        ],
        timestamp: NOW,
      },
    });
  });

  it('explains every item of a batch; an item error keeps its error context', async () => {
    const a = await records.post(EVALUATIONS, {
      subject: alice,
      action: read,
      options: { explain: true },
      evaluations: [{ resource: record1 }, {}],
    });
    expectBody(a, {
      evaluations: [
        { decision: true, context: allowContext },
        { decision: false, context: { error: { status: 400, message: 'evaluations[1].resource is required' } } },
      ],
    });
    expectBody(await records.post(EVALUATIONS, { subject: alice, action: read, evaluations: [{ resource: record1 }] }), {
      evaluations: [{ decision: true }],
    });
  });
});

// ---------------------------------------------------------------------------------------------
describe('search over a larger directory', () => {
  const readDoc1 = { subject: { type: 'user' }, action: read, resource: { type: 'document', id: 'doc-1' } };

  async function pages(c: Client, path: string, body: Record<string, unknown>, limit: number): Promise<Answer[]> {
    const out: Answer[] = [];
    let page: Record<string, unknown> = { limit };
    for (;;) {
      const a = await c.post(path, { ...body, page });
      expect(a.status, a.text).toBe(200);
      out.push(a);
      if (nextToken(a) === '') return out;
      if (out.length > 50) throw new Error('no last page');
      page = { token: nextToken(a) };
    }
  }

  it('pages through 25 of 30 users 10 at a time: 3 pages, in order, none repeated, none missing, the last with next_token ""', async () => {
    const got = await pages(labClient, SEARCH_SUBJECT, readDoc1, 10);
    expect(got.map((a) => ids(a).length)).toEqual([10, 10, 5]);
    expect(got.map((a) => nextToken(a) === '')).toEqual([false, false, true]);
    expect(got.flatMap(ids)).toEqual(BLUE);
    expect(new Set(got.flatMap(ids)).size).toBe(25);
    for (const a of got) expect((a.json as { results: { type: string }[] }).results.every((r) => r.type === 'user')).toBe(true);
  });

  it('ends on the page that holds the last result: no empty page after a full one', async () => {
    expect((await pages(labClient, SEARCH_SUBJECT, readDoc1, 5)).map((a) => ids(a).length)).toEqual([5, 5, 5, 5, 5]);
    expect((await pages(labClient, SEARCH_SUBJECT, readDoc1, 25)).map((a) => ids(a).length)).toEqual([25]);
    expect((await pages(labClient, SEARCH_SUBJECT, readDoc1, 24)).map((a) => ids(a).length)).toEqual([24, 1]);
    expectBody((await pages(labClient, SEARCH_SUBJECT, { ...readDoc1, resource: { type: 'document', id: 'doc-9' } }, 3))[0] as Answer, {
      page: { next_token: '' },
      results: [],
    });
  });

  it('a follow-up may repeat the same limit, or leave it out', async () => {
    const first = await labClient.post(SEARCH_SUBJECT, { ...readDoc1, page: { limit: 10 } });
    const same = await labClient.post(SEARCH_SUBJECT, { ...readDoc1, page: { token: nextToken(first), limit: 10 } });
    const without = await labClient.post(SEARCH_SUBJECT, { ...readDoc1, page: { token: nextToken(first) } });
    expect(ids(same)).toEqual(BLUE.slice(10, 20));
    expect(same.text).toBe(without.text);
    // A token can be used again: pages are cursors, not sessions.
    expect((await labClient.post(SEARCH_SUBJECT, { ...readDoc1, page: { token: nextToken(first) } })).text).toBe(without.text);
  });

  it('sorts results by code point (not UTF-16 units, not locale), across pages', async () => {
    const body = { subject: { type: 'member' }, action: read, resource: { type: 'document', id: 'doc-1' } };
    const whole = await labClient.post(SEARCH_SUBJECT, body);
    expect(ids(whole)).toEqual(MEMBERS_IN_CODE_POINT_ORDER);
    expect((await pages(labClient, SEARCH_SUBJECT, body, 4)).map(ids)).toEqual([
      MEMBERS_IN_CODE_POINT_ORDER.slice(0, 4),
      MEMBERS_IN_CODE_POINT_ORDER.slice(4, 8),
      MEMBERS_IN_CODE_POINT_ORDER.slice(8),
    ]);
  });

  it('pages resource and action search the same way', async () => {
    const resources = await pages(
      labClient,
      SEARCH_RESOURCE,
      { subject: { type: 'user', id: 'user-01' }, action: read, resource: { type: 'document' } },
      1,
    );
    expect(resources.map(ids)).toEqual([['doc-1']]);
    const actions = await pages(
      labClient,
      SEARCH_ACTION,
      { subject: { type: 'user', id: 'user-01' }, resource: { type: 'document', id: 'doc-1' }, context: { channel: 'internal' } },
      2,
    );
    expect(actions.map((a) => (a.json as { results: unknown[] }).results)).toEqual([
      [{ name: 'read' }, { name: 'share' }],
      [{ name: 'write' }],
    ]);
  });

  it('refuses a token with a changed query, another search kind, another limit, or another tenant', async () => {
    const first = await labClient.post(SEARCH_SUBJECT, { ...readDoc1, page: { limit: 10 } });
    const token = nextToken(first);
    expect(token).not.toBe('');
    const changed = 'page.token belongs to another search: subject, action, resource and context must stay the same from page to page';
    for (const body of [
      { ...readDoc1, action: write },
      { ...readDoc1, resource: { type: 'document', id: 'doc-2' } },
      { ...readDoc1, resource: { type: 'document', id: 'doc-1', properties: { team: 'blue' } } },
      { ...readDoc1, subject: { type: 'member' } },
      { ...readDoc1, subject: { type: 'user', properties: { team: 'blue' } } },
      { ...readDoc1, context: { channel: 'internal' } },
    ]) {
      expect(errorMessage(await labClient.post(SEARCH_SUBJECT, { ...body, page: { token } }), 400), JSON.stringify(body)).toBe(changed);
    }
    expect(errorMessage(await labClient.post(SEARCH_SUBJECT, { ...readDoc1, page: { token, limit: 5 } }), 400)).toBe(
      'page.limit must stay 10 from page to page (or be left out)',
    );

    // The same body is a valid subject search and a valid resource search: the token is for one of them.
    const both = { subject: { type: 'user', id: 'user-01' }, action: read, resource: { type: 'document', id: 'doc-1' } };
    const subjects = await labClient.post(SEARCH_SUBJECT, { ...both, page: { limit: 1 } });
    expect(errorMessage(await labClient.post(SEARCH_RESOURCE, { ...both, page: { token: nextToken(subjects) } }), 400)).toBe(changed);
    expect(errorMessage(await labClient.post(SEARCH_ACTION, { ...both, page: { token: nextToken(subjects) } }), 400)).toBe(changed);

    // Tenant lab2 has the same rules and entities; its key may not page on with lab's token, though its own search works.
    expect(ids(await lab2Client.post(SEARCH_SUBJECT, { ...readDoc1, page: { limit: 10 } }))).toEqual(ids(first));
    expect(errorMessage(await lab2Client.post(SEARCH_SUBJECT, { ...readDoc1, page: { token } }), 400)).toBe(changed);
    expect(ids(await labClient.post(SEARCH_SUBJECT, { ...readDoc1, page: { token } }))).toEqual(BLUE.slice(10, 20));
  });

  it("refuses a records token on tenant acme's key (examples)", async () => {
    const body = { subject: { type: 'user' }, action: read, resource: record1 };
    const token = nextToken(await records.post(SEARCH_SUBJECT, { ...body, page: { limit: 1 } }));
    expect(errorMessage(await acme.post(SEARCH_SUBJECT, { ...body, page: { token } }), 400)).toMatch(
      /^page\.token belongs to another search/,
    );
    expect(ids(await records.post(SEARCH_SUBJECT, { ...body, page: { token } }))).toEqual(['bob']);
  });

  it('answers results: [] for an unknown type or id', async () => {
    const empty = { page: { next_token: '' }, results: [] };
    expectBody(await labClient.post(SEARCH_SUBJECT, { ...readDoc1, subject: { type: 'robot' } }), empty);
    expectBody(await labClient.post(SEARCH_SUBJECT, { ...readDoc1, resource: { type: 'document', id: 'doc-404' } }), empty);
    expectBody(
      await labClient.post(SEARCH_RESOURCE, { subject: { type: 'user', id: 'nobody' }, action: read, resource: { type: 'document' } }),
      empty,
    );
    expectBody(
      await labClient.post(SEARCH_RESOURCE, { subject: { type: 'user', id: 'user-01' }, action: read, resource: { type: 'folder' } }),
      empty,
    );
    expectBody(
      await labClient.post(SEARCH_ACTION, { subject: { type: 'user', id: 'nobody' }, resource: { type: 'document', id: 'doc-1' } }),
      empty,
    );
    expectBody(
      await labClient.post(SEARCH_ACTION, { subject: { type: 'robot', id: 'r2' }, resource: { type: 'planet', id: 'tatooine' } }),
      empty,
    );
    // An unknown action name is no error either.
    expectBody(await labClient.post(SEARCH_SUBJECT, { ...readDoc1, action: { name: 'teleport' } }), empty);
  });

  it('action search lists the allowed actions of the rules for the two types only, in code point order', async () => {
    const body = { subject: { type: 'user', id: 'user-01' }, resource: { type: 'document', id: 'doc-1' } };
    const names = async (b: Record<string, unknown>): Promise<unknown> => (await labClient.post(SEARCH_ACTION, b)).json;
    // Not approve (user/expense), index (bot/document) nor the Proposed comment; share needs context.channel internal.
    expect(await names(body)).toEqual({ page: { next_token: '' }, results: [{ name: 'read' }, { name: 'write' }] });
    expect(await names({ ...body, context: { channel: 'internal' } })).toEqual({
      page: { next_token: '' },
      results: [{ name: 'read' }, { name: 'share' }, { name: 'write' }],
    });
    // user-02 (level 1) may read, not write.
    expect(await names({ ...body, subject: { type: 'user', id: 'user-02' } })).toEqual({
      page: { next_token: '' },
      results: [{ name: 'read' }],
    });
    expect(await names({ subject: { type: 'user', id: 'user-01' }, resource: { type: 'expense', id: 'e-1' } })).toEqual({
      page: { next_token: '' },
      results: [{ name: 'approve' }],
    });
    expect(await names({ subject: { type: 'bot', id: 'b-1' }, resource: { type: 'document', id: 'doc-1' } })).toEqual({
      page: { next_token: '' },
      results: [{ name: 'index' }],
    });
  });
});

// ---------------------------------------------------------------------------------------------
describe('request properties win over directory properties, key by key', () => {
  it('in evaluation', async () => {
    // Directory: record-1 is active and alice's; record-2 archived; bob is staff and admin.
    expectBody(await records.post(EVALUATION, { subject: alice, action: write, resource: record1 }), { decision: true });
    expectBody(
      await records.post(EVALUATION, { subject: alice, action: write, resource: { ...record1, properties: { status: 'archived' } } }),
      { decision: false },
    );
    expectBody(await records.post(EVALUATION, { subject: bob, action: write, resource: record2 }), { decision: true });
    expectBody(await records.post(EVALUATION, { subject: { ...bob, properties: { role: 'member' } }, action: write, resource: record2 }), {
      decision: false,
    });
    // role sent, groups still the directory's: bob still reads.
    expectBody(await records.post(EVALUATION, { subject: { ...bob, properties: { role: 'member' } }, action: read, resource: record1 }), {
      decision: true,
    });
    expectBody(await records.post(EVALUATION, { subject: { ...bob, properties: { groups: [] } }, action: read, resource: record1 }), {
      decision: false,
    });
    // A top-level entity field counts as a sent property too.
    expectBody(await records.post(EVALUATION, { subject: { ...carol, groups: ['staff'] }, action: read, resource: record1 }), {
      decision: true,
    });
    // An entity the directory does not know decides on what the request sends.
    expectBody(
      await records.post(EVALUATION, {
        subject: { type: 'user', id: 'zoe', properties: { groups: ['staff'] } },
        action: read,
        resource: record1,
      }),
      { decision: true },
    );
    expectBody(await records.post(EVALUATION, { subject: { type: 'user', id: 'zoe' }, action: read, resource: record1 }), {
      decision: false,
    });
  });

  it('in batch items', async () => {
    expectBody(
      await records.post(EVALUATIONS, {
        action: read,
        resource: record1,
        evaluations: [
          { subject: carol },
          { subject: { ...carol, properties: { groups: ['staff'] } } },
          { subject: { ...alice, properties: { groups: ['contractors'] } } },
        ],
      }),
      { evaluations: [{ decision: false }, { decision: true }, { decision: false }] },
    );
  });

  it('in search: sent properties apply to every candidate', async () => {
    const readDoc1 = { subject: { type: 'user' }, action: read, resource: { type: 'document', id: 'doc-1' } };
    expect(ids(await labClient.post(SEARCH_SUBJECT, readDoc1))).toEqual(BLUE);
    expect(ids(await labClient.post(SEARCH_SUBJECT, { ...readDoc1, subject: { type: 'user', properties: { team: 'blue' } } }))).toEqual(
      USERS,
    );
    expect(ids(await labClient.post(SEARCH_SUBJECT, { ...readDoc1, subject: { type: 'user', properties: { team: 'red' } } }))).toEqual([]);
    expect(
      ids(await labClient.post(SEARCH_SUBJECT, { ...readDoc1, resource: { type: 'document', id: 'doc-1', properties: { team: 'red' } } })),
    ).toEqual(USERS.filter((_, i) => teamOf(i + 1) === 'red'));
    const user06 = { type: 'user', id: 'user-06' };
    expect(ids(await labClient.post(SEARCH_RESOURCE, { subject: user06, action: read, resource: { type: 'document' } }))).toEqual([
      'doc-2',
    ]);
    expect(
      ids(
        await labClient.post(SEARCH_RESOURCE, {
          subject: { ...user06, properties: { team: 'blue' } },
          action: read,
          resource: { type: 'document' },
        }),
      ),
    ).toEqual(['doc-1']);
    expect(
      ids(
        await labClient.post(SEARCH_RESOURCE, {
          subject: user06,
          action: read,
          resource: { type: 'document', properties: { team: 'red' } },
        }),
      ),
    ).toEqual(['doc-1', 'doc-2']);
    // Certification fixture: carol, a contractor, reads nothing unless the request makes her staff.
    expect(ids(await records.post(SEARCH_RESOURCE, { subject: carol, action: read, resource: { type: 'record' } }))).toEqual([]);
    expect(
      ids(
        await records.post(SEARCH_RESOURCE, {
          subject: { ...carol, properties: { groups: ['staff'] } },
          action: read,
          resource: { type: 'record' },
        }),
      ),
    ).toEqual(['record-1', 'record-2', 'record-3']);
  });
});

// ---------------------------------------------------------------------------------------------
describe('action properties: the same decision through POST /authorization and /access/v1/evaluation', () => {
  const cases: readonly (readonly [string, Record<string, unknown>, Record<string, unknown>, boolean])[] = [
    ['soft: true, the owner', alice, { name: 'delete', properties: { soft: true } }, true],
    ['soft: false', alice, { name: 'delete', properties: { soft: false } }, false],
    ['soft: "true" (a string)', alice, { name: 'delete', properties: { soft: 'true' } }, false],
    ['no properties', alice, { name: 'delete' }, false],
    ['empty properties', alice, { name: 'delete', properties: {} }, false],
    ['soft as a field of the action itself', alice, { name: 'delete', soft: true }, true],
    ['a field of the action wins over properties', alice, { name: 'delete', soft: true, properties: { soft: false } }, true],
    ['soft: true, not the owner', bob, { name: 'delete', properties: { soft: true } }, false],
    ['properties on an action no rule reads them for', alice, { name: 'read', properties: { soft: false } }, true],
  ];

  it.each(cases)('%s', async (_name, subject, action, allowed) => {
    const body = { subject, action, resource: record1 };
    expectBody(await records.post(EVALUATION, body), { decision: allowed });
    const legacy = await records.post('/authorization', body);
    expect(legacy.status, legacy.text).toBe(200);
    expect((legacy.json as { decision: string }).decision).toBe(allowed ? 'allow' : 'deny');
    expectBody(await records.post(EVALUATIONS, { subject, resource: record1, evaluations: [{ action }] }), {
      evaluations: [{ decision: allowed }],
    });
  });

  it('POST /authorization still takes the action as a name (service spec), with no action properties', async () => {
    const allow = await records.post('/authorization', { subject: alice, action: 'read', resource: record1 });
    expect(allow.json).toEqual({
      decision: 'allow',
      timestamp: NOW,
      policyId: 'records/staff-read-records',
      reasons: ['Rule records/staff-read-records allowed the request: Staff may read every record.'],
    });
    expect((await records.post('/authorization', { subject: alice, action: 'delete', resource: record1 })).json).toMatchObject({
      decision: 'deny',
    });
    const withObject = await records.post('/authorization', {
      subject: alice,
      action: { name: 'delete', properties: { soft: true } },
      resource: record1,
    });
    expect(withObject.json).toMatchObject({ decision: 'allow', policyId: 'records/owners-soft-delete-records' });
  });

  it.each([
    [{ properties: { soft: true } }, 'action.name is required'],
    [{ name: 5 }, 'action.name must be a string'],
    [{ name: 'delete', properties: [true] }, 'action.properties must be an object'],
    [7, 'action must be a string or an object {name, properties}'],
    ['', 'action: must not be empty'],
  ])('POST /authorization refuses the action %j', async (action, message) => {
    expect(errorMessage(await records.post('/authorization', { subject: alice, action, resource: record1 }), 400)).toBe(message);
  });
});

// ---------------------------------------------------------------------------------------------
describe('routes: the per-tenant form, metadata, 403, 404 and 405', () => {
  it("serves every endpoint at /<tenant>/access/v1/... for that tenant's key, the same as at /access/v1/...", async () => {
    const bodies: Record<string, unknown> = {
      [EVALUATION]: aliceReadsRecord1,
      [EVALUATIONS]: {
        subject: alice,
        evaluations: [
          { action: read, resource: record1 },
          { action: write, resource: record2 },
        ],
      },
      [SEARCH_SUBJECT]: { subject: { type: 'user' }, action: read, resource: record1 },
      [SEARCH_RESOURCE]: { subject: alice, action: write, resource: { type: 'record' } },
      [SEARCH_ACTION]: { subject: bob, resource: record2 },
    };
    for (const path of ENDPOINTS) {
      const plain = await records.post(path, bodies[path]);
      const tenant = await records.post(`/records${path}`, bodies[path], { headers: { 'X-Request-ID': 'tenant-1' } });
      expect(tenant.status, tenant.text).toBe(200);
      expect(tenant.text).toBe(plain.text);
      expect(tenant.headers.get('x-request-id')).toBe('tenant-1');
    }
  });

  it("answers 403 at another tenant's path, whatever the body", async () => {
    for (const path of ENDPOINTS) {
      for (const body of [aliceReadsRecord1, '{broken']) {
        const a = await acme.post(`/records${path}`, body, { headers: { 'X-Request-ID': 'forbidden-1' } });
        expect(errorMessage(a, 403), path).toBe('this API key belongs to another tenant than "records"');
        expect(a.headers.get('x-request-id')).toBe('forbidden-1');
      }
      expect(errorMessage(await records.post(`/acme${path}`, aliceReadsRecord1), 403)).toBe(
        'this API key belongs to another tenant than "acme"',
      );
      // A tenant nobody has a key for is another tenant too; no key at all is still a 401.
      expect((await records.post(`/globex${path}`, aliceReadsRecord1)).status).toBe(403);
      expect((await records.post(`/acme${path}`, aliceReadsRecord1, { key: null })).status).toBe(401);
    }
    // acme decides at its own path (it has no record rules: false).
    expectBody(await acme.post(`/acme${EVALUATION}`, aliceReadsRecord1), { decision: false });
  });

  it("names the tenant's PDP in /.well-known/authzen-configuration/<tenant>", async () => {
    for (const tenant of ['records', 'acme']) {
      const a = await records.get(`/.well-known/authzen-configuration/${tenant}`);
      expectBody(a, {
        policy_decision_point: `${PUBLIC_URL}/${tenant}`,
        access_evaluation_endpoint: `${PUBLIC_URL}/${tenant}/access/v1/evaluation`,
        access_evaluations_endpoint: `${PUBLIC_URL}/${tenant}/access/v1/evaluations`,
        search_subject_endpoint: `${PUBLIC_URL}/${tenant}/access/v1/search/subject`,
        search_resource_endpoint: `${PUBLIC_URL}/${tenant}/access/v1/search/resource`,
        search_action_endpoint: `${PUBLIC_URL}/${tenant}/access/v1/search/action`,
      });
    }
    const head = await ex.api('/.well-known/authzen-configuration/records', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await head.text()).toBe('');
  });

  it("defaults the PDP identifier to the listener's own URL without --public-url", async () => {
    const a = await labClient.get('/.well-known/authzen-configuration');
    expect((a.json as Record<string, string>)['policy_decision_point']).toBe(lab.service.apiUrl);
    expect((a.json as Record<string, string>)['access_evaluation_endpoint']).toBe(`${lab.service.apiUrl}/access/v1/evaluation`);
  });

  it('answers 404 for paths with more than one segment before access/v1 or after the well-known name', async () => {
    for (const path of [
      '/records/extra/access/v1/evaluation',
      '/a/b/access/v1/search/subject',
      '/access/v1',
      '/access/v1/search',
      '/access/v1/search/everything',
      '/access/v2/evaluation',
    ]) {
      expect(errorMessage(await records.post(path, aliceReadsRecord1), 404), path).toBe(`no route for POST ${path}`);
    }
    for (const path of ['/.well-known/authzen-configuration/records/extra', '/.well-known/authzen-configurations']) {
      expect(errorMessage(await records.get(path), 404), path).toBe(`no route for GET ${path}`);
    }
  });

  // A segment that is not a namespace name names no tenant: 404 whatever the method (it once
  // fell through to the 405 route of the same path).
  it('answers 404 for a tenant segment that is not a namespace name (POST /Bad_Tenant/access/v1/...)', async () => {
    for (const tenant of ['Records', 'bad_tenant', '-records', 'x'.repeat(64)]) {
      expect((await records.post(`/${tenant}${EVALUATION}`, aliceReadsRecord1)).status, tenant).toBe(404);
      expect((await records.post(`/${tenant}${SEARCH_SUBJECT}`, aliceReadsRecord1)).status, tenant).toBe(404);
    }
  });

  it('answers 404 for GET /.well-known/authzen-configuration/<not a namespace name>', async () => {
    for (const tenant of ['Records', 'bad_tenant', '-records', 'x'.repeat(64)]) {
      expect((await records.get(`/.well-known/authzen-configuration/${tenant}`)).status, tenant).toBe(404);
    }
  });

  it('answers 405 with Allow to other methods', async () => {
    for (const path of [...ENDPOINTS, ...ENDPOINTS.map((p) => `/records${p}`)]) {
      for (const method of ['GET', 'PUT', 'DELETE', 'PATCH']) {
        const a = await records.post(path, method === 'GET' ? undefined : aliceReadsRecord1, { method });
        expect(errorMessage(a, 405), `${method} ${path}`).toBe('use POST');
        expect(a.headers.get('allow')).toBe('POST');
      }
    }
    for (const path of ['/.well-known/authzen-configuration', '/.well-known/authzen-configuration/records']) {
      for (const method of ['POST', 'PUT', 'DELETE']) {
        const a = await records.post(path, aliceReadsRecord1, { method });
        expect(errorMessage(a, 405), `${method} ${path}`).toBe('use GET, HEAD');
        expect(a.headers.get('allow')).toBe('GET, HEAD');
      }
    }
  });

  it('echoes X-Request-ID on every answer of the AuthZEN routes, inner spaces too, and never an overlong one', async () => {
    expect(
      (await records.post(EVALUATION, aliceReadsRecord1, { headers: { 'X-Request-ID': 'has space' } })).headers.get('x-request-id'),
    ).toBe('has space');
    expect(
      (await records.post(EVALUATION, aliceReadsRecord1, { headers: { 'X-Request-ID': 'r'.repeat(201) } })).headers.get('x-request-id'),
    ).toBeNull();
    expect(
      (await records.post(SEARCH_SUBJECT, { page: 1 }, { headers: { 'X-Request-ID': 'r'.repeat(200) } })).headers.get('x-request-id'),
    ).toBe('r'.repeat(200));
    expect(
      (await records.get('/.well-known/authzen-configuration/records', { 'X-Request-ID': 'meta-2' })).headers.get('x-request-id'),
    ).toBe('meta-2');
    // Answers the router gives (404, 405) echo it too.
    expect(
      (await records.post(EVALUATION, aliceReadsRecord1, { method: 'PUT', headers: { 'X-Request-ID': 'put-1' } })).headers.get(
        'x-request-id',
      ),
    ).toBe('put-1');
    expect(
      (await records.post(`/Records${EVALUATION}`, aliceReadsRecord1, { headers: { 'X-Request-ID': 'nf-1' } })).headers.get('x-request-id'),
    ).toBe('nf-1');
    expect(
      (await records.post('/.well-known/authzen-configuration', {}, { headers: { 'X-Request-ID': 'meta-405' } })).headers.get(
        'x-request-id',
      ),
    ).toBe('meta-405');
  });
});
