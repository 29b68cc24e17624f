// What operators see of the AuthZEN API on the ops listener: requests by endpoint and status, and
// AuthZEN decisions counted with POST /authorization's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.ts';
import { client, exampleManifests, RECORDS_KEY, type Client } from './support.ts';

let t: TestService;
let records: Client;

beforeAll(async () => {
  t = await startTestService({ manifests: await exampleManifests() });
  records = client(t, RECORDS_KEY);
});
afterAll(async () => {
  await t.stop();
});

async function metric(name: string, labels: string): Promise<number> {
  const text = await (await fetch(`${t.service.opsUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

const alice = { type: 'user', id: 'alice' };
const record1 = { type: 'record', id: 'record-1' };

describe('AuthZEN metrics', () => {
  it('counts requests by endpoint and status, and each evaluated decision (not a malformed batch item)', async () => {
    const before = {
      ok: await metric('acl_authzen_requests_total', 'endpoint="evaluation",code="200"'),
      bad: await metric('acl_authzen_requests_total', 'endpoint="evaluation",code="400"'),
      batch: await metric('acl_authzen_requests_total', 'endpoint="evaluations",code="200"'),
      search: await metric('acl_authzen_requests_total', 'endpoint="search_subject",code="200"'),
      unauthenticated: await metric('acl_authzen_requests_total', 'endpoint="search_action",code="401"'),
      metadata: await metric('acl_authzen_requests_total', 'endpoint="metadata",code="200"'),
      allow: await metric('acl_decisions_total', 'decision="allow"'),
      deny: await metric('acl_decisions_total', 'decision="deny"'),
    };
    expect((await records.post('/access/v1/evaluation', { subject: alice, action: { name: 'read' }, resource: record1 })).json).toEqual({
      decision: true,
    });
    expect((await records.post('/access/v1/evaluation', { subject: alice, action: { name: 'delete' }, resource: record1 })).json).toEqual({
      decision: false,
    });
    expect((await records.post('/access/v1/evaluation', { subject: 'alice' })).status).toBe(400);
    expect(
      (
        await records.post('/access/v1/evaluations', {
          subject: alice,
          resource: record1,
          evaluations: [{ action: { name: 'read' } }, { action: { name: 'write' } }, { action: {} }],
        })
      ).json,
    ).toMatchObject({ evaluations: [{ decision: true }, { decision: true }, { decision: false, context: { error: { status: 400 } } }] });
    expect(
      (await records.post('/access/v1/search/subject', { subject: { type: 'user' }, action: { name: 'read' }, resource: record1 })).status,
    ).toBe(200);
    expect((await records.post('/access/v1/search/action', { subject: alice, resource: record1 }, { key: null })).status).toBe(401);
    expect((await records.get('/.well-known/authzen-configuration')).status).toBe(200);

    expect(await metric('acl_authzen_requests_total', 'endpoint="evaluation",code="200"')).toBe(before.ok + 2);
    expect(await metric('acl_authzen_requests_total', 'endpoint="evaluation",code="400"')).toBe(before.bad + 1);
    expect(await metric('acl_authzen_requests_total', 'endpoint="evaluations",code="200"')).toBe(before.batch + 1);
    expect(await metric('acl_authzen_requests_total', 'endpoint="search_subject",code="200"')).toBe(before.search + 1);
    expect(await metric('acl_authzen_requests_total', 'endpoint="search_action",code="401"')).toBe(before.unauthenticated + 1);
    expect(await metric('acl_authzen_requests_total', 'endpoint="metadata",code="200"')).toBe(before.metadata + 1);
    // evaluation: one allow, one deny; the batch: two allows (the malformed item is no decision); search: none.
    expect(await metric('acl_decisions_total', 'decision="allow"')).toBe(before.allow + 3);
    expect(await metric('acl_decisions_total', 'decision="deny"')).toBe(before.deny + 1);
  });
});
