import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, startTestService, type TestService } from '../support/service.ts';

let t: TestService;
beforeAll(async () => {
  t = await startTestService();
});
afterAll(async () => {
  await t.stop();
});

const allowed = {
  subject: { type: 'user', id: 'alice', properties: { team: 'blue' } },
  action: 'read',
  resource: { type: 'document', id: 'd1', team: 'blue' },
};

describe('POST /authorization', () => {
  it('allows through a matching rule, naming it with its reasons and an ISO 8601 timestamp', async () => {
    const res = await t.decide(allowed);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      decision: 'allow',
      policyId: 'acme/team-documents',
      reasons: ['Rule acme/team-documents allowed the request'],
    });
    expect(new Date(String(body['timestamp'])).toISOString()).toBe(body['timestamp']);
  });

  it('denies with 200 and says what the candidate rule was missing', async () => {
    const res = await t.decide({ ...allowed, resource: { type: 'document', id: 'd1' } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ decision: 'deny', policyId: 'acme' });
    expect(body['reasons']).toEqual([expect.stringContaining('resource.team is missing')]);
  });

  it('denies a request no rule covers', async () => {
    const body = (await (await t.decide({ ...allowed, action: 'delete' })).json()) as Record<string, unknown>;
    expect(body['decision']).toBe('deny');
    expect(body['reasons']).toEqual([expect.stringContaining('No Enforced rule in acme')]);
  });

  it('merges properties with extra top-level fields, and takes type and id from the entity itself', async () => {
    const spoof = await t.decide({
      subject: { type: 'user', id: 'alice', properties: { team: 'red', type: 'admin' }, team: 'blue' },
      action: 'read',
      resource: { type: 'document', id: 'd1', properties: { team: 'blue' } },
    });
    expect(((await spoof.json()) as Record<string, unknown>)['decision']).toBe('allow');
  });

  it('ignores unknown fields', async () => {
    const res = await t.decide({ ...allowed, extra: { anything: [1, 2] }, action: 'read' });
    expect(((await res.json()) as Record<string, unknown>)['decision']).toBe('allow');
  });

  it('echoes X-Request-ID, inner spaces too, on errors too, and sends none when none (or an overlong one) came', async () => {
    expect((await t.decide(allowed, { 'X-Request-ID': 'req-42' })).headers.get('x-request-id')).toBe('req-42');
    expect((await t.decide('{', { 'X-Request-ID': 'req-43' })).headers.get('x-request-id')).toBe('req-43');
    expect((await t.decide(allowed)).headers.get('x-request-id')).toBeNull();
    expect((await t.decide(allowed, { 'X-Request-ID': 'a b' })).headers.get('x-request-id')).toBe('a b');
    expect((await t.decide(allowed, { 'X-Request-ID': 'r'.repeat(201) })).headers.get('x-request-id')).toBeNull();
  });

  it.each([
    ['no Authorization header', {}],
    ['an unknown key', { Authorization: 'Bearer not-a-key-of-anyone-here' }],
    ['another scheme', { Authorization: `Basic ${API_KEY}` }],
  ])('answers 401 with WWW-Authenticate for %s', async (_name, headers) => {
    const res = await t.api('/authorization', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...headers },
      body: JSON.stringify(allowed),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer /);
    expect(await res.json()).toEqual({ error: { status: 401, message: expect.any(String) } });
  });

  it.each([
    ['malformed JSON', '{"subject":', /invalid JSON/],
    ['an empty body', '', /empty/],
    ['an array', '[]', /JSON object/],
    ['a missing subject', JSON.stringify({ action: 'read', resource: allowed.resource }), /subject is required/],
    ['a missing subject.type', JSON.stringify({ ...allowed, subject: { id: 'a' } }), /subject\.type is required/],
    ['a subject given as a string', JSON.stringify({ ...allowed, subject: 'alice' }), /subject must be an object/],
    ['a numeric action', JSON.stringify({ ...allowed, action: 123 }), /action must be a string/],
    ['an empty resource.id', JSON.stringify({ ...allowed, resource: { type: 'document', id: '' } }), /resource\.id: must not be empty/],
    ['a context that is not an object', JSON.stringify({ ...allowed, context: [1] }), /context must be an object/],
    ['a null context', JSON.stringify({ ...allowed, context: null }), /context must be an object/],
    [
      'properties that are not an object',
      JSON.stringify({ ...allowed, subject: { type: 'user', id: 'a', properties: 'x' } }),
      /subject\.properties must be an object/,
    ],
    [
      'a number a double cannot hold',
      JSON.stringify(allowed).replace('"read"', '"read","n":9007199254740993'),
      /cannot be compared exactly/,
    ],
  ])('answers 400 with a clear message for %s', async (_name, body, message) => {
    const res = await t.decide(body);
    expect(res.status).toBe(400);
    const error = ((await res.json()) as { error: { status: number; message: string } }).error;
    expect(error.status).toBe(400);
    expect(error.message).toMatch(message);
  });

  it.each([
    ['no Content-Type', undefined],
    ['text/plain', 'text/plain'],
    ['form data', 'application/x-www-form-urlencoded'],
  ])('answers 400 for %s', async (_name, type) => {
    const headers: Record<string, string> = { Authorization: `Bearer ${API_KEY}` };
    if (type) headers['Content-Type'] = type;
    const res = await t.api('/authorization', { method: 'POST', headers, body: new TextEncoder().encode(JSON.stringify(allowed)) });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/Content-Type must be application\/json/);
  });

  it('accepts application/json with a charset', async () => {
    const res = await t.decide(allowed, { 'Content-Type': 'application/json; charset=utf-8' });
    expect(res.status).toBe(200);
  });

  it('answers 413 past the body limit', async () => {
    const big = { ...allowed, context: { blob: 'x'.repeat(70 * 1024) } };
    const res = await t.decide(big);
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/limit of 65536 bytes|limit is 65536/);
  });

  it('answers 405 with Allow for other methods', async () => {
    const res = await t.api('/authorization', { method: 'GET', headers: { Authorization: `Bearer ${API_KEY}` } });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
  });

  it('answers 404 as JSON for unknown paths', async () => {
    const res = await t.api('/nope');
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: { status: 404, message: 'no route for GET /nope' } });
  });

  it('counts decisions by outcome in the metrics', async () => {
    const text = await (await t.ops('/metrics')).text();
    expect(text).toMatch(/acl_decisions_total\{decision="allow"\} [1-9]/);
    expect(text).toMatch(/acl_decisions_total\{decision="deny"\} [1-9]/);
    expect(text).toMatch(/acl_decision_duration_seconds_bucket/);
  });
});

describe('API keys on a kept-alive connection', () => {
  it('are checked again when the header changes or the key is withdrawn', async () => {
    const { Agent, request } = await import('node:http');
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const url = new URL(t.url);
    const post = (key: string): Promise<number> =>
      new Promise((resolve, reject) => {
        const req = request(
          {
            host: url.hostname,
            port: url.port,
            path: '/authorization',
            method: 'POST',
            agent,
            headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${key}` },
          },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify(allowed));
      });
    expect(await post(API_KEY)).toBe(200);
    expect(await post(API_KEY)).toBe(200);
    expect(await post(`${API_KEY}x`)).toBe(401);
    expect(await post(API_KEY)).toBe(200);
    await t.write('keys.yaml', undefined);
    expect(await post(API_KEY)).toBe(401);
    agent.destroy();
  });
});
