import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  agentDecisionLine,
  classify,
  createDecisionSink,
  createRecentDecisions,
  jsonSizeAtMost,
  parseDecisionUpload,
  parseLosslessJson,
  redact,
  serviceDecisionLine,
  MAX_KEPT_BYTES,
  REDACTED,
  TOO_DEEP,
} from './index.ts';

const fixture = (name: string): unknown =>
  JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'opa', name), 'utf8'));
const TOKEN = `agent_${'A'.repeat(43)}`;
const tmp = mkdtempSync(join(tmpdir(), 'acl-sink-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('decision-log uploads', () => {
  it.each(['1.1', '0.61'])('reads what OPA %s uploads: who, which bundle revision, the path and the decision', (version) => {
    const r = parseDecisionUpload(fixture(`logs-${version}.json`));
    if (!r.ok) throw new Error(r.message);
    expect(r.value.map((e) => [e.path, e.decision, e.bundles])).toEqual([
      ['acl/allow', 'allow', [{ name: 'docs', revision: '7' }]],
      ['acl', 'deny', [{ name: 'docs', revision: '7' }]],
    ]);
    expect(r.value[0]).toMatchObject({ agentVersion: `${version}.0`, input: { x: 1 } });
    expect(r.value[0]?.decisionId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it.each([
    ['acl/allow', true, undefined, 'allow'],
    ['acl/allow', false, undefined, 'deny'],
    ['acl', { allow: true }, undefined, 'allow'],
    ['acl', { allow: 'yes' }, undefined, 'other'],
    ['acl/allow', undefined, undefined, 'undefined'],
    ['acl/allow', undefined, { code: 'eval_conflict_error' }, 'error'],
    ['system/authz/allow', true, undefined, 'other'],
    [undefined, true, undefined, 'other'],
  ] as const)('classifies path %j with result %j (error %j) as %s', (path, result, error, expected) => {
    expect(classify(path, result, error)).toBe(expected);
  });

  it.each([
    [{}, 'a JSON array'],
    [[{}], '0.labels'],
    [[{ labels: { id: 'a' } }, 5], '1: must be an object'],
    [[{ labels: { id: 'a' }, bundles: { b: { revision: 7 } } }], '0.bundles.b.revision'],
  ])('refuses %j, naming the problem', (body, message) => {
    const r = parseDecisionUpload(body);
    expect(!r.ok && r.message).toContain(message);
  });
});

describe('decision log JSON', () => {
  it('keeps numbers exactly as OPA sent them', () => {
    const text = '{"input":{"a":9007199254740993,"b":0.30000000000000001,"c":1.5,"d":1e400,"e":-0}}';
    expect(JSON.stringify(parseLosslessJson(text))).toBe(text);
    expect(parseLosslessJson('{"a":[1,2,"1e5"]}')).toEqual({ a: [1, 2, '1e5'] });
  });

  it('says why it refuses a document nested too deeply to keep its numbers exact', () => {
    const deep = `{"input":{"n":${'['.repeat(20_000)}${']'.repeat(20_000)},"x":1e5}}`;
    expect(() => parseLosslessJson(deep)).toThrow(/nests too deeply \(thousands of levels\) to keep its numbers exactly as written/);
    // Without a number to keep, the same nesting parses.
    expect(parseLosslessJson(deep.replace('1e5', '1'))).toMatchObject({ input: { x: 1 } });
  });

  it('writes no subtree deeper than 256 levels: it is not searched for secrets', () => {
    let deep: unknown = { authorization: 'Bearer secret' };
    for (let i = 0; i < 300; i++) deep = { next: deep };
    expect(JSON.stringify(redact(deep))).not.toContain('secret');
    expect(JSON.stringify(redact(deep))).toContain(TOO_DEEP);
  });

  it('redacts credentials under secret keys (any case) and connector tokens inside strings, without copying a clean value', () => {
    const clean = { principal: { id: 'alice' }, headers: { accept: '*/*' } };
    expect(redact(clean)).toBe(clean);
    const dirty = {
      attributes: { request: { http: { headers: { Authorization: 'Bearer abc', Cookie: 'sid=1' } } } },
      note: `token ${TOKEN} here`,
      list: [{ 'x-api-key': 'k' }],
    };
    expect(redact(dirty)).toEqual({
      attributes: { request: { http: { headers: { Authorization: REDACTED, Cookie: REDACTED } } } },
      note: `token ${REDACTED} here`,
      list: [{ 'x-api-key': REDACTED }],
    });
    expect(dirty.attributes.request.http.headers.Authorization).toBe('Bearer abc');
  });

  it('redacts token, key and password fields, tokens used as keys, and bearer credentials inside other strings', () => {
    const dirty = {
      body: { token: 'eyJhbGciOi', Password: 'hunter2', api_key: 'k1', client_secret: 's' },
      seen: { [TOKEN]: true },
      headers: [['Authorization', 'Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc']],
      clean: 'a bearer of good news',
    };
    expect(redact(dirty)).toEqual({
      body: { token: REDACTED, Password: REDACTED, api_key: REDACTED, client_secret: REDACTED },
      seen: { [REDACTED]: true },
      headers: [['Authorization', `Bearer ${REDACTED}`]],
      clean: 'a bearer of good news',
    });
    const ok = { tokens: 3, passwords_set: true, note: 'no bearer here' };
    expect(redact(ok)).toBe(ok);
  });

  it('bounds the size it measures', () => {
    expect(jsonSizeAtMost({ a: 'x'.repeat(100) }, 4096)).toBeGreaterThan(100);
    expect(jsonSizeAtMost({ a: 'x'.repeat(100) }, 4096)).toBeLessThan(120);
    expect(
      jsonSizeAtMost(
        Array.from({ length: 1e6 }, () => 'abc'),
        4096,
      ),
    ).toBeGreaterThan(4096);
  });
});

describe('decision lines', () => {
  it("writes the service's decisions and OPA's in one shape: time, tenant, source, decision, input", () => {
    const service = JSON.parse(
      serviceDecisionLine({
        time: '2026-11-24T10:00:00.000Z',
        tenant: 'acme',
        endpoint: 'authorization',
        requestId: 'r-1',
        allow: true,
        policyId: 'acme/team-documents',
        input: { principal: { type: 'user', id: 'alice', token: TOKEN } },
      }),
    ) as Record<string, unknown>;
    expect(service).toEqual({
      time: '2026-11-24T10:00:00.000Z',
      stream: 'decisions',
      tenant: 'acme',
      source: 'service',
      endpoint: 'authorization',
      requestId: 'r-1',
      decision: 'allow',
      policyId: 'acme/team-documents',
      path: 'acl/allow',
      input: { principal: { type: 'user', id: 'alice', token: REDACTED } },
    });
    const upload = parseDecisionUpload(fixture('logs-1.1.json'));
    if (!upload.ok) throw new Error(upload.message);
    const event = upload.value[0];
    if (!event) throw new Error('no event');
    const opa = JSON.parse(
      agentDecisionLine({ receivedMs: 0, tenant: 'acme', connector: 'gateways', bundle: 'docs', clientIp: '10.0.0.7', event }),
    ) as Record<string, unknown>;
    expect(opa).toMatchObject({
      stream: 'decisions',
      tenant: 'acme',
      source: 'opa',
      connector: 'gateways',
      bundle: 'docs',
      revision: '7',
      agentVersion: '1.1.0',
      clientIp: '10.0.0.7',
      decision: 'allow',
      path: 'acl/allow',
      result: true,
      input: { x: 1 },
    });
    expect(opa['time']).toBe(event.timestamp);
    for (const key of ['time', 'stream', 'tenant', 'source', 'decision', 'path', 'input']) {
      expect(service, key).toHaveProperty(key);
      expect(opa, key).toHaveProperty(key);
    }
  });

  it('appends lines to a file it creates private, and closes after writing everything', async () => {
    const file = join(tmp, 'decisions.log');
    const sink = createDecisionSink({ kind: 'file', path: file });
    for (let i = 0; i < 1000; i++) sink.write(JSON.stringify({ i }));
    await sink.close();
    const lines = readFileSync(file, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => (JSON.parse(l) as { i: number }).i);
    expect(lines).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('drops whole lines past its backlog, counts every one, and writes the rest intact', async () => {
    const file = join(tmp, 'flooded.log');
    let dropped = 0;
    const sink = createDecisionSink(
      { kind: 'file', path: file },
      {
        onDrop: (n) => {
          dropped += n;
        },
      },
    );
    // 40 MB in one turn of the event loop, more than the 16 MB backlog: the disk cannot have kept up.
    const pad = 'x'.repeat(1000);
    const total = 40_000;
    for (let i = 0; i < total; i++) sink.write(JSON.stringify({ i, pad }));
    await sink.close();
    const kept = readFileSync(file, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => (JSON.parse(l) as { i: number }).i);
    expect(dropped).toBeGreaterThan(0);
    expect(kept.length + dropped).toBe(total);
    // In order, none twice.
    expect(kept.every((v, k) => k === 0 || v > (kept[k - 1] as number))).toBe(true);
  });

  it('after close, counts late lines as dropped and ignores a reopen, rather than throw', async () => {
    const file = join(tmp, 'closed.log');
    let dropped = 0;
    const sink = createDecisionSink(
      { kind: 'file', path: file },
      {
        onDrop: (n) => {
          dropped += n;
        },
      },
    );
    sink.write('{"i":1}');
    await sink.close();
    sink.write('{"i":2}');
    sink.reopen();
    await sink.close();
    expect(dropped).toBe(1);
    expect(readFileSync(file, 'utf8')).toBe('{"i":1}\n');
  });

  it('closes even when the file cannot be written (a full disk), saying so', async () => {
    const errors: Error[] = [];
    const sink = createDecisionSink(
      { kind: 'file', path: '/dev/full' },
      {
        onError: (err) => {
          errors.push(err);
        },
      },
    );
    sink.write('{"i":1}');
    await sink.close();
    expect(errors.map((e) => (e as NodeJS.ErrnoException).code)).toContain('ENOSPC');
  });

  it('is a no-op when off', async () => {
    const sink = createDecisionSink({ kind: 'off' });
    expect(sink.enabled).toBe(false);
    sink.write('x');
    await sink.close();
  });
});

describe('recent decisions', () => {
  const d = (i: number, input: unknown = { i }) => ({
    time: `t${i}`,
    agent: 'a',
    decisionId: `d${i}`,
    revision: '1',
    path: 'acl/allow',
    decision: 'allow' as const,
    result: true,
    input,
  });

  it('keeps the newest per bundle, newest first, and says which bundles changed', () => {
    const r = createRecentDecisions(3);
    for (let i = 0; i < 5; i++) r.add('acme/docs', d(i));
    expect(r.list('acme/docs').map((x) => x.decisionId)).toEqual(['d4', 'd3', 'd2']);
    expect(r.takeChanged()).toEqual(['acme/docs']);
    expect(r.takeChanged()).toEqual([]);
  });

  it('keeps a note instead of an input larger than the bound, and redacts on the way out', () => {
    const r = createRecentDecisions();
    r.add('acme/docs', d(1, { blob: 'x'.repeat(MAX_KEPT_BYTES) }));
    r.add('acme/docs', d(2, { headers: { authorization: 'Bearer secret' } }));
    const [second, first] = r.list('acme/docs');
    expect(first?.input).toMatch(/^\[not kept here: larger than 4096 bytes/);
    expect(second?.input).toEqual({ headers: { authorization: REDACTED } });
  });
});
