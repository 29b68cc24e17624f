// POST /admission/validate over HTTP: reviews answered with the request's uid, refusals with the
// status message, warnings from the dependency (bounded, and never deciding), and every malformed
// body a 4xx with a message, never a stack trace.
import { createServer, type Server } from 'node:http';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReviewedObject, WarningsFor } from '../admission/index.ts';
import { createMetrics } from '../metrics.ts';
import { createAdmissionHandler, type AdmissionDeps } from './admission.ts';

const API = 'acl.policyagent.dev/v1alpha1';
const RULE = { state: 'Enforced', subjectType: 'user', actions: ['read'], resourceType: 'document' };

function rule(name: string, spec: Record<string, unknown> = RULE): Record<string, unknown> {
  return { apiVersion: API, kind: 'Rule', metadata: { name, namespace: 'acme' }, spec };
}

function review(object: Record<string, unknown> | undefined, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: 'e7a1c1c4-0000-4000-8000-000000000001',
      kind: { group: 'acl.policyagent.dev', version: 'v1alpha1', kind: 'Rule' },
      resource: { group: 'acl.policyagent.dev', version: 'v1alpha1', resource: 'rules' },
      operation: 'CREATE',
      namespace: 'acme',
      name: 'team',
      userInfo: { username: 'alice' },
      object,
      ...extra,
    },
  };
}

/** What the tenant holds: one Bundle and the stored version of Rule "team". */
const STORED: ReviewedObject[] = [
  { kind: 'Bundle', namespace: 'acme', name: 'docs', raw: { spec: { connector: 'gateways' } } },
  { kind: 'Rule', namespace: 'acme', name: 'team', raw: rule('team', { ...RULE, state: 'Draft' }) },
];

let seen: { object: ReviewedObject; objects: readonly ReviewedObject[] } | undefined;
/** What the last warnings call was given (read through a call: the handler sets it between awaits). */
const lastSeen = () => seen;
let warningsFor: WarningsFor = (object, objects) => {
  seen = { object, objects };
  return [`${object.kind} ${object.name}: ${objects.length} objects in the tenant`];
};

function listen(handler: ReturnType<typeof createAdmissionHandler>): Promise<{ server: Server; url: string }> {
  const server = createServer(handler);
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const a = server.address();
      resolve({ server, url: `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}` });
    });
  });
}

describe('POST /admission/validate', () => {
  let withWarnings: { server: Server; url: string };
  let without: { server: Server; url: string };
  const log = pino({ level: 'silent' });
  beforeAll(async () => {
    withWarnings = await listen(
      createAdmissionHandler(
        { objectsOf: (ns) => (ns === 'acme' ? STORED : []), warningsFor: (o, all) => warningsFor(o, all), maxReviewBytes: 64 * 1024 },
        log,
        createMetrics({ defaultMetrics: false }),
      ),
    );
    without = await listen(createAdmissionHandler({ objectsOf: () => STORED }, log, createMetrics({ defaultMetrics: false })));
  });
  afterAll(() => {
    withWarnings.server.close();
    without.server.close();
  });

  async function post(
    body: string | Uint8Array,
    url = withWarnings.url,
    contentType = 'application/json',
  ): Promise<{ status: number; json: unknown; text: string }> {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': contentType }, body });
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, json, text };
  }

  it('refuses an invalid Rule with the message its status would show, under the request uid', async () => {
    const res = await post(JSON.stringify(review(rule('team', { ...RULE, condition: 'principal.team ==' }))));
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: {
        uid: 'e7a1c1c4-0000-4000-8000-000000000001',
        allowed: false,
        status: { code: 422, reason: 'Invalid', message: 'syntax error at line 1, column 16: found = but expecting end of input' },
      },
    });
  });

  it('admits a valid Rule with the warnings for it, computed over the tenant with the new version in place of the stored one', async () => {
    seen = undefined;
    const res = await post(
      JSON.stringify(review(rule('team'), { operation: 'UPDATE', oldObject: rule('team', { ...RULE, state: 'Draft' }) })),
    );
    expect(res.json).toEqual({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: 'e7a1c1c4-0000-4000-8000-000000000001', allowed: true, warnings: ['Rule team: 2 objects in the tenant'] },
    });
    const given = lastSeen();
    expect(given?.object).toMatchObject({ kind: 'Rule', namespace: 'acme', name: 'team' });
    expect(given?.objects.map((o) => [o.kind, o.name, o.raw === given.object.raw])).toEqual([
      ['Bundle', 'docs', false],
      ['Rule', 'team', true],
    ]);
  });

  it('admits without warnings when none are configured, and asks for none for a refused object', async () => {
    expect((await post(JSON.stringify(review(rule('team'))), without.url)).json).toMatchObject({ response: { allowed: true } });
    expect(JSON.stringify((await post(JSON.stringify(review(rule('team'))), without.url)).json)).not.toContain('warnings');
    seen = undefined;
    await post(JSON.stringify(review(rule('team', { ...RULE, actions: [] }))));
    expect(lastSeen()).toBeUndefined();
  });

  it('keeps warnings short and few', async () => {
    const before = warningsFor;
    warningsFor = () => Array.from({ length: 30 }, (_, i) => `W${i} ${'long text '.repeat(30)}`);
    try {
      const res = await post(JSON.stringify(review(rule('team'))));
      const warnings = (res.json as { response: { warnings: string[] } }).response.warnings;
      expect(warnings).toHaveLength(10);
      expect(warnings.every((w) => Array.from(w).length <= 256)).toBe(true);
      expect(warnings.at(-1)).toBe('and 21 more warnings');
    } finally {
      warningsFor = before;
    }
  });

  it('admits the object when the warnings throw (a bug): warnings never decide', async () => {
    const before = warningsFor;
    warningsFor = () => {
      throw new Error('lint bug');
    };
    try {
      const res = await post(JSON.stringify(review(rule('team'))));
      expect(res.json).toEqual({
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        response: { uid: 'e7a1c1c4-0000-4000-8000-000000000001', allowed: true },
      });
    } finally {
      warningsFor = before;
    }
  });

  it('always admits a DELETE', async () => {
    const res = await post(
      JSON.stringify(review(undefined, { operation: 'DELETE', oldObject: rule('team', { ...RULE, condition: '!!' }) })),
    );
    expect(res.json).toMatchObject({ response: { uid: 'e7a1c1c4-0000-4000-8000-000000000001', allowed: true } });
  });

  it.each([
    ['not JSON', '{"apiVersion": ', 400, /^the body is not JSON: /, undefined],
    ['empty', '', 400, /the body is empty/, undefined],
    ['a JSON string', '"review"', 400, /expected a JSON object/, undefined],
    ['invalid UTF-8', new Uint8Array([0x7b, 0xff, 0x7d]), 400, /^the body is not valid UTF-8$/, undefined],
    [
      'a v1beta1 review',
      JSON.stringify({ ...review(rule('team')), apiVersion: 'admission.k8s.io/v1beta1' }),
      400,
      /apiVersion must be admission\.k8s\.io\/v1/,
      'e7a1c1c4-0000-4000-8000-000000000001',
    ],
    ['a review without uid', JSON.stringify(review(rule('team'), { uid: undefined })), 400, /uid: /, undefined],
    [
      'a review of a Pod',
      JSON.stringify(review({ apiVersion: 'v1', kind: 'Pod' }, { kind: { group: '', version: 'v1', kind: 'Pod' } })),
      400,
      /not core\/v1 Pod/,
      'e7a1c1c4-0000-4000-8000-000000000001',
    ],
  ])('answers a body that is %s with %i and a message', async (_what, body, status, message, uid) => {
    const res = await post(body);
    expect(res.status).toBe(status);
    const json = res.json as { error: { status: number; message: string }; uid?: string };
    expect(json.error.status).toBe(status);
    expect(json.error.message).toMatch(message);
    expect(json.uid).toBe(uid);
    expect(res.text).not.toMatch(/at .*\.ts:\d+/);
  });

  it('answers a body over the limit with 413, whether its length is declared or streamed', async () => {
    const huge = JSON.stringify(review(rule('team', { ...RULE, description: 'x'.repeat(70 * 1024) })));
    const declared = await post(huge);
    expect(declared.status).toBe(413);
    expect((declared.json as { error: { message: string } }).error.message).toMatch(
      /the review is \d+ bytes; more than the limit of 65536 bytes/,
    );
    const streamed = await fetch(withWarnings.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: new ReadableStream({
        start(c) {
          for (let i = 0; i < 20; i++) c.enqueue(new TextEncoder().encode('x'.repeat(8 * 1024)));
          c.close();
        },
      }),
      duplex: 'half',
    } as RequestInit);
    expect(streamed.status).toBe(413);
    expect(await streamed.text()).toContain('larger than the limit of 65536 bytes');
  });

  it('answers another Content-Type with 400', async () => {
    const res = await post(JSON.stringify(review(rule('team'))), withWarnings.url, 'text/plain');
    expect(res.status).toBe(400);
    expect((res.json as { error: { message: string } }).error.message).toMatch(/Content-Type must be application\/json/);
  });

  it('counts every review by result: allowed, denied, malformed (4xx) and error (500)', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    let broken = false;
    // A dependency that throws where no one expects it: a bug, answered 500.
    const deps: AdmissionDeps = {
      objectsOf: () => STORED,
      get warningsFor(): WarningsFor | undefined {
        if (broken) throw new Error('bug');
        return undefined;
      },
    };
    const own = await listen(createAdmissionHandler(deps, log, metrics));
    try {
      for (let i = 0; i < 3; i++) await post(JSON.stringify(review(rule('team'))), own.url);
      await post(JSON.stringify(review(rule('team', { ...RULE, actions: [] }))), own.url);
      await post('{', own.url);
      await post(JSON.stringify(review(rule('team'))), own.url, 'text/plain');
      broken = true;
      expect((await post(JSON.stringify(review(rule('team'))), own.url)).status).toBe(500);
      const text = await metrics.registry.metrics();
      expect(text.split('\n').filter((l) => l.startsWith('acl_admission_reviews_total{'))).toEqual([
        'acl_admission_reviews_total{result="allowed"} 3',
        'acl_admission_reviews_total{result="denied"} 1',
        'acl_admission_reviews_total{result="malformed"} 2',
        'acl_admission_reviews_total{result="error"} 1',
      ]);
    } finally {
      own.server.close();
    }
  });
});
