import { describe, expect, it } from 'vitest';
import { inWindow, recordOf } from './record.ts';

const input = {
  principal: { type: 'user', id: 'alice', team: 'blue' },
  action: 'read',
  resource: { type: 'document', id: 'd1' },
  context: {},
  actionProperties: {},
};
const service = {
  time: '2026-11-24T10:29:34.759Z',
  stream: 'decisions',
  tenant: 'acme',
  source: 'service',
  endpoint: 'authorization',
  requestId: 'r-1',
  decision: 'allow',
  policyId: 'acme/team-documents',
  path: 'acl/allow',
  input,
};
const opa = {
  time: '2026-11-24T10:29:34.759024523Z',
  stream: 'decisions',
  tenant: 'acme',
  source: 'opa',
  connector: 'gateways',
  bundle: 'gateway-documents',
  revision: '1',
  agent: 'a-1',
  decision: 'deny',
  path: 'acl/allow',
  result: false,
  input,
};
const line = (o: unknown): string => JSON.stringify(o);

describe('recordOf', () => {
  it('reads a service allow: its tenant, endpoint, the rule its policyId names, the input checked and the input as logged', () => {
    expect(recordOf(line(service), 'decisions.log:1')).toEqual({
      ok: true,
      record: {
        where: 'decisions.log:1',
        time: service.time,
        timeMs: Date.parse(service.time),
        tenant: 'acme',
        source: 'service',
        endpoint: 'authorization',
        decision: 'allow',
        rule: 'team-documents',
        input,
        logged: input,
      },
    });
  });

  it('names no rule for a deny (its policyId is the tenant) and none for OPA, which keeps the bundle', () => {
    const deny = recordOf(line({ ...service, decision: 'deny', policyId: 'acme' }), 'f:2');
    expect(deny.ok && deny.record.rule).toBe(undefined);
    const o = recordOf(line(opa), 'f:3');
    expect(o).toMatchObject({
      ok: true,
      record: { source: 'opa', bundle: 'gateway-documents', decision: 'deny', timeMs: Date.parse('2026-11-24T10:29:34.759Z') },
    });
    expect(o.ok && 'rule' in o.record).toBe(false);
    expect(o.ok && 'endpoint' in o.record).toBe(false);
  });

  it('counts a truncated line as not-json, whatever JSON prefix it holds', () => {
    const text = line(service);
    for (const cut of [1, 10, text.length / 2, text.length - 1])
      expect(recordOf(text.slice(0, cut), 'f:1')).toMatchObject({ ok: false, cause: 'not-json' });
  });

  it('counts JSON that is not our decision line as not-ours: another stream, a log line, a field of the wrong type', () => {
    for (const o of [
      { level: 30, msg: 'Started' },
      [1, 2],
      'text',
      { ...service, stream: 'logs' },
      { ...service, tenant: 7 },
      { ...service, tenant: '' },
      { ...service, source: 'proxy' },
      { ...service, time: 'yesterday' },
      { ...service, decision: true },
    ]) {
      expect(recordOf(line(o), 'f:1')).toMatchObject({ ok: false, cause: 'not-ours' });
    }
  });

  it('counts an OPA result that is not allow or deny as not-a-decision', () => {
    for (const decision of ['error', 'undefined', 'other']) {
      expect(recordOf(line({ ...opa, decision }), 'f:1')).toMatchObject({ ok: false, cause: 'not-a-decision' });
    }
  });

  it('counts an input the API would refuse as refused-input, with the API message', () => {
    const r = recordOf(line({ ...service, input: { ...input, resource: { type: 'document', id: '' } } }), 'f:9');
    expect(r).toEqual({
      ok: false,
      cause: 'refused-input',
      where: 'f:9',
      detail: 'the API would refuse this input: resource.id: must not be empty',
    });
    expect(recordOf(line({ ...opa, input: { path: '/x', method: 'GET' } }), 'f:1')).toMatchObject({ cause: 'refused-input' });
    // A number a double would change: the API answers 400, so nothing was decided with it.
    const inexact = line(service).replace('"team":"blue"', '"team":9007199254740993');
    expect(recordOf(inexact, 'f:1')).toMatchObject({ ok: false, cause: 'refused-input' });
  });

  it('counts an OPA decision made without one of our bundles as unknown-bundle', () => {
    expect(recordOf(line({ ...opa, bundle: null }), 'f:1')).toMatchObject({ ok: false, cause: 'unknown-bundle' });
  });

  it('never puts the whole line into a detail', () => {
    const r = recordOf(line({ ...opa, decision: 'x'.repeat(10_000) }), 'f:1');
    expect(!r.ok && r.detail.length < 200).toBe(true);
  });
});

describe('inWindow', () => {
  const at = (iso: string) => ({ timeMs: Date.parse(iso) });
  it('keeps times at or after since and before until; an open end keeps everything on that side', () => {
    const since = Date.parse('2026-11-24T00:00:00Z');
    const until = Date.parse('2026-11-25T00:00:00Z');
    expect(inWindow(at('2026-11-24T00:00:00Z'), since, until)).toBe(true);
    expect(inWindow(at('2026-11-23T23:59:59.999Z'), since, until)).toBe(false);
    expect(inWindow(at('2026-11-25T00:00:00Z'), since, until)).toBe(false);
    expect(inWindow(at('1970-01-01T00:00:00Z'), undefined, until)).toBe(true);
    expect(inWindow(at('2999-01-01T00:00:00Z'), since)).toBe(true);
    expect(inWindow(at('2999-01-01T00:00:00Z'))).toBe(true);
  });
});
