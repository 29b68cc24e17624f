// The OpenID AuthZEN Authorization API 1.0 certification scenario (openid/authzen
// certification/authorization-api-1_0-scenario.md @ 7415abf), every check of its Basic, Batch,
// Search and Discovery levels and its transport rules, run against the service loaded with the
// examples/ folder as it is on disk (tenant "records" is the scenario's fixture). One test per case
// id; where the scenario gives a body, ours is compared exactly.
import { readFile } from 'node:fs/promises';
import { request } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.ts';
import { client, errorMessage, exampleManifests, RECORDS_KEY, type Answer, type Client } from './support.ts';

const PUBLIC_URL = 'https://pdp.example.com';

let t: TestService;
let pdp: Client;

beforeAll(async () => {
  t = await startTestService({ manifests: await exampleManifests(), publicUrl: PUBLIC_URL });
  pdp = client(t, RECORDS_KEY);
});
afterAll(async () => {
  await t.stop();
});

const EVALUATION = '/access/v1/evaluation';
const EVALUATIONS = '/access/v1/evaluations';
const SEARCH_SUBJECT = '/access/v1/search/subject';
const SEARCH_RESOURCE = '/access/v1/search/resource';
const SEARCH_ACTION = '/access/v1/search/action';

// The scenario's fixture (section c-1), as its requests spell it.
const alice = { type: 'user', id: 'alice' };
const bob = { type: 'user', id: 'bob' };
const bobAdmin = { type: 'user', id: 'bob', properties: { role: 'admin' } };
const record1 = { type: 'record', id: 'record-1' };
const record2 = { type: 'record', id: 'record-2' };
const record1Active = { type: 'record', id: 'record-1', properties: { status: 'active' } };
const record2Archived = { type: 'record', id: 'record-2', properties: { status: 'archived' } };
const read = { name: 'read' };
const write = { name: 'write' };
const aliceReadsRecord1 = { subject: alice, action: read, resource: record1 };
const bobWritesRecord1 = { subject: bob, action: write, resource: record1 };

/** A 200 whose Content-Type is JSON (c-5-2) and whose body is exactly `body`, byte for byte. */
function expectExactly(a: Answer, body: unknown): void {
  expect(a.status, a.text).toBe(200);
  expect(a.headers.get('content-type')).toMatch(/^application\/json\b/);
  expect(a.text).toBe(JSON.stringify(body));
}

/** A 400 with our JSON error body. */
function expectBadRequest(a: Answer): string {
  expect(a.headers.get('content-type')).toMatch(/^application\/json\b/);
  return errorMessage(a, 400);
}

/** Every page of a search, following next_token to the end (at most `maxPages`). */
async function allPages(
  path: string,
  body: Record<string, unknown>,
  limit: number,
  maxPages = 20,
): Promise<{ pages: Answer[]; results: unknown[] }> {
  const pages: Answer[] = [];
  const results: unknown[] = [];
  let page: Record<string, unknown> = { limit };
  for (let i = 0; i < maxPages; i++) {
    const a = await pdp.post(path, { ...body, page });
    expect(a.status, a.text).toBe(200);
    pages.push(a);
    const got = a.json as { page: { next_token: unknown }; results: unknown[] };
    expect(Array.isArray(got.results)).toBe(true);
    expect(typeof got.page.next_token).toBe('string');
    results.push(...got.results);
    if (got.page.next_token === '') return { pages, results };
    page = { token: got.page.next_token };
  }
  throw new Error(`no last page within ${maxPages} pages`);
}

// ---------------------------------------------------------------------------------------------
describe('Basic: Access Evaluation (POST /access/v1/evaluation)', () => {
  it('c-2-2-1 alice may read record-1: {"decision":true}', async () => {
    expectExactly(await pdp.post(EVALUATION, aliceReadsRecord1), { decision: true });
  });

  it('c-2-2-2 bob may not write record-1: {"decision":false}', async () => {
    expectExactly(await pdp.post(EVALUATION, bobWritesRecord1), { decision: false });
  });

  it('c-2-2-3 a context does not change the decision', async () => {
    expectExactly(await pdp.post(EVALUATION, { ...aliceReadsRecord1, context: { time: '2025-06-27T18:03-07:00', ip: '192.168.1.1' } }), {
      decision: true,
    });
  });

  it('c-2-2-4 (Properties) alice may not write a record whose sent status is archived', async () => {
    expectExactly(await pdp.post(EVALUATION, { subject: alice, action: write, resource: record2Archived }), { decision: false });
  });

  it('c-2-2-5 (Properties) a subject sent with role admin may write an archived record', async () => {
    expectExactly(await pdp.post(EVALUATION, { subject: bobAdmin, action: write, resource: record2Archived }), { decision: true });
  });

  it('c-2-2-6 (Properties) alice may delete record-1 softly (action property soft: true)', async () => {
    expectExactly(
      await pdp.post(EVALUATION, { subject: alice, action: { name: 'delete', properties: { soft: true } }, resource: record1 }),
      { decision: true },
    );
  });

  it('c-2-2-7 (Properties) alice may not delete record-1 for good (soft: false)', async () => {
    expectExactly(
      await pdp.post(EVALUATION, { subject: alice, action: { name: 'delete', properties: { soft: false } }, resource: record1 }),
      { decision: false },
    );
  });

  it('c-2-2-8 properties on every entity are accepted and do not change the decision', async () => {
    const body = {
      subject: { type: 'user', id: 'alice', properties: { department: 'Sales', role: 'manager' } },
      action: { name: 'read', properties: { method: 'GET' } },
      resource: { type: 'record', id: 'record-1', properties: { status: 'active', owner: 'bob' } },
    };
    expectExactly(await pdp.post(EVALUATION, body), { decision: true });
  });

  it('c-2-2-9 unknown request fields are ignored', async () => {
    expectExactly(await pdp.post(EVALUATION, { ...aliceReadsRecord1, foo: 'bar', futureField: { nested: true } }), { decision: true });
  });

  it('c-2-3 the response is a JSON object with a boolean decision; a context, when there is one, is an object', async () => {
    const plain = await pdp.post(EVALUATION, aliceReadsRecord1);
    expect(plain.status).toBe(200);
    expect(plain.json).toEqual({ decision: true });
    // Our decisions carry a context only when asked for; it is an object then.
    const explained = await pdp.post(EVALUATION, { ...bobWritesRecord1, options: { explain: true } });
    expect(explained.status).toBe(200);
    const body = explained.json as { decision: unknown; context: unknown };
    expect(body.decision).toBe(false);
    expect(typeof body.context === 'object' && body.context !== null && !Array.isArray(body.context)).toBe(true);
  });

  it.each([
    ['subject', { action: read, resource: record1 }],
    ['action', { subject: alice, resource: record1 }],
    ['resource', { subject: alice, action: read }],
  ])('c-2-4-1 a missing %s is a 400', async (member, body) => {
    expect(expectBadRequest(await pdp.post(EVALUATION, body))).toBe(`${member} is required`);
  });

  it.each([
    ['subject.type', { subject: { id: 'alice' }, action: read, resource: record1 }],
    ['subject.id', { subject: { type: 'user' }, action: read, resource: record1 }],
    ['action.name', { subject: alice, action: {}, resource: record1 }],
    ['resource.type', { subject: alice, action: read, resource: { id: 'record-1' } }],
    ['resource.id', { subject: alice, action: read, resource: { type: 'record' } }],
  ])('c-2-4-2 a missing %s is a 400', async (field, body) => {
    expect(expectBadRequest(await pdp.post(EVALUATION, body))).toBe(`${field} is required`);
  });

  it('c-2-4-3 a Content-Type other than application/json is a 400', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', undefined]) {
      const a = await pdp.post(EVALUATION, JSON.stringify(aliceReadsRecord1), { headers: { 'Content-Type': type } });
      expect(expectBadRequest(a)).toMatch(/^Content-Type must be application\/json/);
    }
  });

  it('c-2-4-4 malformed JSON is a 400', async () => {
    for (const text of [
      '{"subject":',
      '{subject: alice}',
      JSON.stringify(aliceReadsRecord1).slice(0, -1),
      `${JSON.stringify(aliceReadsRecord1)},`,
    ]) {
      expectBadRequest(await pdp.post(EVALUATION, text));
    }
  });

  it('c-2-4-5 an empty body is a 400', async () => {
    expect(expectBadRequest(await pdp.post(EVALUATION, ''))).toBe('the body is empty; expected a JSON object');
  });

  it.each([
    ['subject is a string', { subject: 'alice', action: read, resource: record1 }, 'subject must be an object'],
    ['action.name is a number', { subject: alice, action: { name: 123 }, resource: record1 }, 'action.name must be a string'],
  ])('c-2-4-6 a member of the wrong type is a 400: %s', async (_name, body, message) => {
    expect(expectBadRequest(await pdp.post(EVALUATION, body))).toBe(message);
  });

  it('c-2-5-1 X-Request-ID is echoed', async () => {
    const id = 'bfe9eb29-ab87-4ca3-be83-a1d5d8305716';
    const a = await pdp.post(EVALUATION, aliceReadsRecord1, { headers: { 'X-Request-ID': id } });
    expectExactly(a, { decision: true });
    expect(a.headers.get('x-request-id')).toBe(id);
  });

  it('c-2-5-2 without X-Request-ID the request still succeeds', async () => {
    const a = await pdp.post(EVALUATION, aliceReadsRecord1);
    expectExactly(a, { decision: true });
    expect(a.headers.get('x-request-id')).toBeNull();
  });

  it('c-2-6 the same request sent again and again gets the same decision', async () => {
    for (const [body, decision] of [
      [aliceReadsRecord1, true],
      [bobWritesRecord1, false],
    ] as const) {
      for (let i = 0; i < 5; i++) expectExactly(await pdp.post(EVALUATION, body), { decision });
    }
  });
});

// ---------------------------------------------------------------------------------------------
describe('Batch: Access Evaluations (POST /access/v1/evaluations)', () => {
  it('c-3-2-1 a default subject and action with one resource per evaluation: two boolean decisions', async () => {
    const a = await pdp.post(EVALUATIONS, { subject: alice, action: read, evaluations: [{ resource: record1 }, { resource: record2 }] });
    // The scenario checks the shape only; staff read every record.
    expectExactly(a, { evaluations: [{ decision: true }, { decision: true }] });
  });

  it('c-3-2-2 a default subject and resource with one action per evaluation, in order', async () => {
    const a = await pdp.post(EVALUATIONS, { subject: bob, resource: record1, evaluations: [{ action: read }, { action: write }] });
    expectExactly(a, { evaluations: [{ decision: true }, { decision: false }] });
  });

  it('c-3-2-3 (Properties) resources with properties per evaluation', async () => {
    const a = await pdp.post(EVALUATIONS, {
      subject: alice,
      action: write,
      evaluations: [{ resource: record1Active }, { resource: record2Archived }],
    });
    expectExactly(a, { evaluations: [{ decision: true }, { decision: false }] });
  });

  it('c-3-2-4 (Properties) subjects with properties per evaluation', async () => {
    const a = await pdp.post(EVALUATIONS, {
      action: write,
      resource: record2Archived,
      evaluations: [{ subject: alice }, { subject: bobAdmin }],
    });
    expectExactly(a, { evaluations: [{ decision: false }, { decision: true }] });
  });

  it('c-3-2-5 whole evaluations without defaults', async () => {
    const a = await pdp.post(EVALUATIONS, { evaluations: [aliceReadsRecord1, bobWritesRecord1] });
    expectExactly(a, { evaluations: [{ decision: true }, { decision: false }] });
  });

  it('c-3-2-6 a default context, and an evaluation with its own', async () => {
    const a = await pdp.post(EVALUATIONS, {
      subject: alice,
      action: read,
      context: { time: '2025-06-27T18:03-07:00' },
      evaluations: [{ resource: record1 }, { resource: record2, context: { time: '2025-06-27T19:00-07:00', source: 'batch-override' } }],
    });
    expectExactly(a, { evaluations: [{ decision: true }, { decision: true }] });
  });

  it('c-3-2-7 (Properties, advisory) an evaluation entity replaces the default, but a missing type falls back to it', async () => {
    const a = await pdp.post(EVALUATIONS, {
      subject: alice,
      action: write,
      resource: { type: 'record' },
      evaluations: [{ resource: { id: 'record-1', properties: { status: 'active' } } }, { resource: record2Archived }],
    });
    expectExactly(a, { evaluations: [{ decision: true }, { decision: false }] });
  });

  it('c-3-3 as many decisions as evaluations, in request order, each a boolean, and no top-level decision', async () => {
    // Two patterns in six items: any reordering or lost item changes the list.
    const items = [
      { subject: alice, action: read, resource: record1 },
      { subject: bob, action: write, resource: record1 },
      { subject: alice, action: write, resource: record1 },
      { subject: alice, action: write, resource: record2 },
      { subject: { type: 'user', id: 'carol' }, action: read, resource: record1 },
      { subject: bob, action: read, resource: record2 },
    ];
    const a = await pdp.post(EVALUATIONS, { evaluations: items });
    expectExactly(a, { evaluations: [true, false, true, false, false, true].map((decision) => ({ decision })) });
    expect(Object.keys(a.json as object)).toEqual(['evaluations']);
  });

  it('c-3-4-1 an evaluation that is missing its resource is a false decision with its error, in a 200', async () => {
    const a = await pdp.post(EVALUATIONS, { subject: alice, action: read, evaluations: [{ resource: record1 }, {}] });
    expectExactly(a, {
      evaluations: [
        { decision: true },
        { decision: false, context: { error: { status: 400, message: 'evaluations[1].resource is required' } } },
      ],
    });
  });

  it('c-3-4-2 without an evaluations array the answer is the single {"decision"}', async () => {
    expectExactly(await pdp.post(EVALUATIONS, aliceReadsRecord1), { decision: true });
  });

  it('c-3-4-3 an empty evaluations array is answered as a single evaluation too', async () => {
    expectExactly(await pdp.post(EVALUATIONS, { ...aliceReadsRecord1, evaluations: [] }), { decision: true });
  });
});

// ---------------------------------------------------------------------------------------------
describe('Search: subject, resource and action search', () => {
  const who = (...ids: string[]): { type: string; id: string }[] => ids.map((id) => ({ type: 'user', id }));
  const which = (...ids: string[]): { type: string; id: string }[] => ids.map((id) => ({ type: 'record', id }));
  const actions = (...names: string[]): { name: string }[] => names.map((name) => ({ name }));
  const subjectSearch = { subject: { type: 'user' }, action: read, resource: record1 };

  it('c-4-2-1 who may read record-1: alice and bob (staff), not carol', async () => {
    expectExactly(await pdp.post(SEARCH_SUBJECT, subjectSearch), { page: { next_token: '' }, results: who('alice', 'bob') });
  });

  it('c-4-2-2 a subject search with a context is accepted', async () => {
    expectExactly(await pdp.post(SEARCH_SUBJECT, { ...subjectSearch, context: { time: '2025-06-27T18:03-07:00' } }), {
      page: { next_token: '' },
      results: who('alice', 'bob'),
    });
  });

  it('c-4-2-3 a subject search needs no subject.id, and one sent is ignored', async () => {
    expectExactly(await pdp.post(SEARCH_SUBJECT, { ...subjectSearch, subject: { type: 'user', id: 'carol' } }), {
      page: { next_token: '' },
      results: who('alice', 'bob'),
    });
  });

  it('c-4-2-4 (Properties) who may write an archived record-2: bob, from his directory role', async () => {
    const a = await pdp.post(SEARCH_SUBJECT, { subject: { type: 'user' }, action: write, resource: record2Archived });
    expectExactly(a, { page: { next_token: '' }, results: who('bob') });
  });

  it('c-4-3-1 which records alice may read: every record', async () => {
    const a = await pdp.post(SEARCH_RESOURCE, { subject: alice, action: read, resource: { type: 'record' } });
    expectExactly(a, { page: { next_token: '' }, results: which('record-1', 'record-2', 'record-3') });
  });

  it('c-4-3-2 a resource search needs no resource.id, and one sent is ignored', async () => {
    const a = await pdp.post(SEARCH_RESOURCE, { subject: alice, action: read, resource: { type: 'record', id: 'record-9' } });
    expectExactly(a, { page: { next_token: '' }, results: which('record-1', 'record-2', 'record-3') });
  });

  it('c-4-3-3 (Properties) which records an admin bob may write: the archived record-2', async () => {
    const a = await pdp.post(SEARCH_RESOURCE, { subject: bobAdmin, action: write, resource: { type: 'record' } });
    expectExactly(a, { page: { next_token: '' }, results: which('record-2') });
  });

  it('c-4-4-1 what alice may do with record-1: read and write (delete needs soft: true, which a search cannot send)', async () => {
    expectExactly(await pdp.post(SEARCH_ACTION, { subject: alice, resource: record1 }), {
      page: { next_token: '' },
      results: actions('read', 'write'),
    });
  });

  it('c-4-4-2 an action search with a context is accepted', async () => {
    const a = await pdp.post(SEARCH_ACTION, { subject: alice, resource: record1, context: { time: '2025-06-27T18:03-07:00' } });
    expectExactly(a, { page: { next_token: '' }, results: actions('read', 'write') });
  });

  it('c-4-4-3 (Properties) what an admin bob may do with an archived record-2: read and write', async () => {
    expectExactly(await pdp.post(SEARCH_ACTION, { subject: bobAdmin, resource: record2Archived }), {
      page: { next_token: '' },
      results: actions('read', 'write'),
    });
  });

  it('c-4-5-1 a page limit of 1 gives one result and a non-empty next_token', async () => {
    const a = await pdp.post(SEARCH_SUBJECT, { ...subjectSearch, page: { limit: 1 } });
    expect(a.status).toBe(200);
    const body = a.json as { page: { next_token: string }; results: unknown[] };
    expect(Object.keys(body)).toEqual(['page', 'results']);
    expect(body.results).toEqual(who('alice'));
    expect(body.page.next_token).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it('c-4-5-2 following next_token page by page gives every result once, and "" on the last page', async () => {
    const { pages, results } = await allPages(SEARCH_SUBJECT, subjectSearch, 1);
    expect(results).toEqual(who('alice', 'bob'));
    expect(pages.map((p) => (p.json as { page: { next_token: string } }).page.next_token === '')).toEqual([false, true]);
    // The same through resource and action search.
    expect((await allPages(SEARCH_RESOURCE, { subject: alice, action: read, resource: { type: 'record' } }, 1)).results).toEqual(
      which('record-1', 'record-2', 'record-3'),
    );
    expect((await allPages(SEARCH_ACTION, { subject: alice, resource: record1 }, 1)).results).toEqual(actions('read', 'write'));
    // A page that holds everything is the last one.
    const whole = await allPages(SEARCH_SUBJECT, subjectSearch, 2);
    expect(whole.pages).toHaveLength(1);
    expect(whole.results).toEqual(who('alice', 'bob'));
  });

  it('c-4-6-1 an unknown subject id gives empty results, not an error', async () => {
    const a = await pdp.post(SEARCH_ACTION, { subject: { type: 'user', id: 'nonexistent-user' }, resource: record1 });
    expectExactly(a, { page: { next_token: '' }, results: [] });
  });

  it('c-4-6-2 an unknown entity type gives empty results, not a 400', async () => {
    const a = await pdp.post(SEARCH_SUBJECT, { subject: { type: 'spaceship' }, action: read, resource: record1 });
    expectExactly(a, { page: { next_token: '' }, results: [] });
  });

  it.each([
    ['subject search without action', SEARCH_SUBJECT, { subject: { type: 'user' }, resource: record1 }, 'action is required'],
    ['resource search without subject', SEARCH_RESOURCE, { action: read, resource: { type: 'record' } }, 'subject is required'],
    ['action search without resource', SEARCH_ACTION, { subject: alice }, 'resource is required'],
  ])('c-4-7-1 a missing member is a 400: %s', async (_name, path, body, message) => {
    expect(expectBadRequest(await pdp.post(path, body))).toBe(message);
  });

  it.each([
    ['subject search, resource without id', SEARCH_SUBJECT, 'resource.id is required'],
    ['resource search, subject without id', SEARCH_RESOURCE, 'subject.id is required'],
  ])('c-4-7-2 a missing id of the entity not searched for is a 400: %s', async (_name, path, message) => {
    expect(expectBadRequest(await pdp.post(path, { subject: { type: 'user' }, action: read, resource: { type: 'record' } }))).toBe(message);
  });
});

// ---------------------------------------------------------------------------------------------
describe('Transport (c-5, every level)', () => {
  const valid: readonly (readonly [string, Record<string, unknown>])[] = [
    [EVALUATION, aliceReadsRecord1],
    [EVALUATIONS, { subject: alice, action: read, evaluations: [{ resource: record1 }] }],
    [SEARCH_SUBJECT, { subject: { type: 'user' }, action: read, resource: record1 }],
    [SEARCH_RESOURCE, { subject: alice, action: read, resource: { type: 'record' } }],
    [SEARCH_ACTION, { subject: alice, resource: record1 }],
  ];

  /** HTTPS with the service's own certificate trusted, as a client would (the harness speaks HTTPS only). */
  function overTls(
    url: string,
    ca: string,
    method: string,
    body?: string,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
    const u = new URL(url);
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          servername: 'localhost',
          port: u.port,
          path: u.pathname,
          method,
          ca,
          agent: false,
          headers: { ...headers, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  it('c-5-1 the PDP accepts HTTPS requests with Content-Type application/json, at the endpoints its metadata names', async () => {
    const tls = await startTestService({ manifests: await exampleManifests(), tls: { mode: 'self-signed' } });
    try {
      expect(tls.service.apiUrl).toMatch(/^https:\/\//);
      const ca = await readFile(tls.service.caFile as string, 'utf8');
      // Without --public-url the PDP identifier is the listener's own URL.
      const meta = await overTls(`${tls.service.apiUrl}/.well-known/authzen-configuration`, ca, 'GET');
      expect(meta.status).toBe(200);
      const doc = JSON.parse(meta.text) as Record<string, string>;
      expect(doc['policy_decision_point']).toBe(tls.service.apiUrl);
      for (const [endpoint, body] of valid) {
        const name = {
          [EVALUATION]: 'access_evaluation_endpoint',
          [EVALUATIONS]: 'access_evaluations_endpoint',
          [SEARCH_SUBJECT]: 'search_subject_endpoint',
          [SEARCH_RESOURCE]: 'search_resource_endpoint',
          [SEARCH_ACTION]: 'search_action_endpoint',
        }[endpoint] as string;
        expect(doc[name]).toBe(`${tls.service.apiUrl}${endpoint}`);
        const a = await overTls(doc[name] as string, ca, 'POST', JSON.stringify(body), { Authorization: `Bearer ${RECORDS_KEY}` });
        expect(a.status, a.text).toBe(200);
        expect(a.headers['content-type']).toMatch(/^application\/json\b/);
      }
      const decision = await overTls(doc['access_evaluation_endpoint'] as string, ca, 'POST', JSON.stringify(aliceReadsRecord1), {
        Authorization: `Bearer ${RECORDS_KEY}`,
      });
      expect(decision.text).toBe('{"decision":true}');
    } finally {
      await tls.stop();
    }
  });

  it('c-5-2 success is a 200 with Content-Type application/json on every endpoint', async () => {
    for (const [path, body] of valid) {
      const a = await pdp.post(path, body);
      expect(a.status, `${path}: ${a.text}`).toBe(200);
      expect(a.headers.get('content-type')).toMatch(/^application\/json\b/);
      expect(typeof a.json === 'object' && a.json !== null && !Array.isArray(a.json)).toBe(true);
    }
  });

  it('c-5-3 a missing required member is a 400 on every endpoint', async () => {
    // A batch without evaluations is one evaluation: its members are required as such.
    const whole: readonly (readonly [string, Record<string, unknown>])[] = [
      [EVALUATIONS, aliceReadsRecord1],
      ...valid.filter(([path]) => path !== EVALUATIONS),
    ];
    for (const [path, body] of whole) {
      for (const member of ['subject', 'action', 'resource'].filter((m) => m in body)) {
        const { [member]: _dropped, ...rest } = body;
        expect(expectBadRequest(await pdp.post(path, rest)), `${path} without ${member}`).toBe(`${member} is required`);
      }
    }
  });

  it('c-5-4 X-Request-ID is echoed on every endpoint, on errors too', async () => {
    for (const [i, [path, body]] of valid.entries()) {
      const ok = await pdp.post(path, body, { headers: { 'X-Request-ID': `ok-${i}` } });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('x-request-id')).toBe(`ok-${i}`);
      const bad = await pdp.post(path, '{', { headers: { 'X-Request-ID': `bad-${i}` } });
      expect(bad.status).toBe(400);
      expect(bad.headers.get('x-request-id')).toBe(`bad-${i}`);
    }
    const meta = await pdp.get('/.well-known/authzen-configuration', { 'X-Request-ID': 'meta-1' });
    expect(meta.headers.get('x-request-id')).toBe('meta-1');
  });

  it('c-5-5 unknown fields are ignored everywhere in the body', async () => {
    const noise = { foo: 'bar', futureField: { nested: true }, page2: [1] };
    for (const [path, body] of valid) {
      const plain = await pdp.post(path, body);
      // Unknown top-level members, and unknown members of each entity (as attributes nothing reads).
      const decorated = Object.fromEntries(
        Object.entries(body).map(([k, v]) => [k, typeof v === 'object' && v !== null && !Array.isArray(v) ? { ...v, futureField: 1 } : v]),
      );
      const a = await pdp.post(path, { ...decorated, ...noise });
      expect(a.status, `${path}: ${a.text}`).toBe(200);
      expect(a.text).toBe(plain.text);
    }
  });
});

// ---------------------------------------------------------------------------------------------
describe('Discovery: PDP metadata (c-6)', () => {
  const NAMES = {
    access_evaluation_endpoint: EVALUATION,
    access_evaluations_endpoint: EVALUATIONS,
    search_subject_endpoint: SEARCH_SUBJECT,
    search_resource_endpoint: SEARCH_RESOURCE,
    search_action_endpoint: SEARCH_ACTION,
  } as const;

  /** The checks of c-6-5 against a metadata document fetched for `base`; the endpoints, translated to the test listener, work. */
  async function certify(wellKnown: string, base: string, pathPrefix: string): Promise<void> {
    const a = await pdp.get(wellKnown);
    expect(a.status).toBe(200);
    expect(a.headers.get('content-type')).toMatch(/^application\/json\b/);
    const doc = a.json as Record<string, unknown>;
    expect(doc).toEqual({
      policy_decision_point: base,
      ...Object.fromEntries(Object.entries(NAMES).map(([name, path]) => [name, `${base}${path}`])),
    });
    const pdpUrl = new URL(doc['policy_decision_point'] as string);
    expect(pdpUrl.protocol).toBe('https:');
    expect(pdpUrl.search + pdpUrl.hash).toBe('');
    expect(doc['policy_decision_point']).not.toMatch(/[?#]/);
    for (const [name, path] of Object.entries(NAMES)) {
      const url = new URL(doc[name] as string);
      expect(url.protocol).toBe('https:');
      expect(url.origin).toBe('https://pdp.example.com');
      expect(url.pathname).toBe(`${pathPrefix}${path}`);
    }
    // What a harness configured from this document sends, through the listener here.
    const decision = await pdp.post(`${pathPrefix}${EVALUATION}`, aliceReadsRecord1);
    expectExactly(decision, { decision: true });
    const batch = await pdp.post(`${pathPrefix}${EVALUATIONS}`, { evaluations: [aliceReadsRecord1, bobWritesRecord1] });
    expectExactly(batch, { evaluations: [{ decision: true }, { decision: false }] });
    const found = await pdp.post(`${pathPrefix}${SEARCH_SUBJECT}`, { subject: { type: 'user' }, action: read, resource: record1 });
    expectExactly(found, {
      page: { next_token: '' },
      results: [
        { type: 'user', id: 'alice' },
        { type: 'user', id: 'bob' },
      ],
    });
    expect((await pdp.post(`${pathPrefix}${SEARCH_RESOURCE}`, { subject: alice, action: read, resource: { type: 'record' } })).status).toBe(
      200,
    );
    expect((await pdp.post(`${pathPrefix}${SEARCH_ACTION}`, { subject: alice, resource: record1 })).status).toBe(200);
  }

  it('c-6 /.well-known/authzen-configuration names the public URL as the PDP, and every endpoint under it', async () => {
    await certify('/.well-known/authzen-configuration', PUBLIC_URL, '');
  });

  it('c-6 /.well-known/authzen-configuration/records names <public URL>/records, whose endpoints serve tenant records', async () => {
    await certify('/.well-known/authzen-configuration/records', `${PUBLIC_URL}/records`, '/records');
  });

  it('c-6 the metadata needs no API key and is never a 404', async () => {
    for (const path of ['/.well-known/authzen-configuration', '/.well-known/authzen-configuration/records']) {
      const a = await t.api(path);
      expect(a.status).toBe(200);
      expect((await t.api(path, { headers: { Authorization: 'Bearer not-a-key' } })).status).toBe(200);
    }
  });
});
