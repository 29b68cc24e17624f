// Shadow decisions through the real service (docs/rules.md, "Shadow decisions"): the counts match the
// requests sent on both APIs, in the ledger and in /metrics, and not one byte of an answer changes.
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, BASE_MANIFESTS, startTestService, type TestService } from '../support/service.ts';

const PROPOSAL = `
apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: { name: senior-reads, namespace: acme }
spec: { state: Proposed, subjectType: user, actions: [read], resourceType: document, condition: principal.level > 2 }
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: { name: legacy-folders, namespace: acme, annotations: { acl.policyagent.dev/proposed-state: Suspended } }
spec: { state: Enforced, subjectType: user, actions: [read], resourceType: folder }
`;
const WITHOUT = `
apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: { name: legacy-folders, namespace: acme }
spec: { state: Enforced, subjectType: user, actions: [read], resourceType: folder }
`;

const user = (id: string, team: string, level: number) => ({ type: 'user', id, properties: { team, level } });
const doc = { type: 'document', id: 'd1', properties: { team: 'blue' } };
const folder = { type: 'folder', id: 'f1' };
/** Allowed by team-documents; senior-reads matches. */
const A = { subject: user('alice', 'blue', 5), action: 'read', resource: doc };
/** Denied; senior-reads would allow (a flip). */
const B = { subject: user('rob', 'red', 5), action: 'read', resource: doc };
/** Denied; senior-reads does not match. */
const C = { subject: user('cy', 'red', 1), action: 'read', resource: doc };
/** Allowed only by legacy-folders, marked for removal (a flip). */
const D = { subject: user('dee', 'red', 1), action: 'read', resource: folder };
/** Allowed by team-documents; no rule of the proposal covers a write. */
const E = { subject: user('eve', 'blue', 9), action: 'write', resource: doc };
const ALL = [A, B, C, D, E];

const authzen = (r: { subject: unknown; action: string; resource: unknown }) => ({ ...r, action: { name: r.action } });

function post(t: TestService, path: string, body: unknown): Promise<Response> {
  return t.api(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${API_KEY}` },
    body: JSON.stringify(body),
  });
}

async function metric(t: TestService, name: string, rule: string, role: string): Promise<number | undefined> {
  const text = await (await t.ops('/metrics')).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{tenant="acme",rule="${rule}",role="${role}"}`));
  return line === undefined ? undefined : Number(line.split(' ').pop());
}

const FIXED = new Date('2026-11-28T12:00:00.000Z');

async function start(proposal: boolean, logFile?: string): Promise<TestService> {
  return startTestService({
    manifests: { ...BASE_MANIFESTS, 'proposal.yaml': proposal ? PROPOSAL : WITHOUT },
    serviceOptions: { now: () => FIXED },
    ...(logFile ? { config: { decisionLog: { kind: 'file', path: logFile } } } : {}),
  });
}

describe('shadow decisions through both APIs', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await start(true);
  });
  afterAll(async () => {
    await t.stop();
  });

  it('counts exactly the requests sent, per rule, in the ledger and in /metrics', async () => {
    const N = 40;
    const M = 25;
    const K = 15;
    for (let i = 0; i < N; i++) for (const r of ALL) expect((await t.decide(r)).status).toBe(200);
    for (let i = 0; i < M; i++) expect((await post(t, '/access/v1/evaluation', authzen(B))).status).toBe(200);
    for (let i = 0; i < K; i++)
      expect((await post(t, '/access/v1/evaluations', { evaluations: [authzen(A), authzen(B), authzen(D)] })).status).toBe(200);
    // Searches are no decisions: never counted.
    expect(
      (await post(t, '/access/v1/search/subject', { subject: { type: 'user' }, action: { name: 'read' }, resource: doc })).status,
    ).toBe(200);

    const senior = t.service.shadow.tally('acme', 'senior-reads');
    expect(senior).toMatchObject({ role: 'Proposed', evaluated: 3 * N + M + 2 * K, matched: 2 * N + M + 2 * K, flips: N + M + K });
    const legacy = t.service.shadow.tally('acme', 'legacy-folders');
    expect(legacy).toMatchObject({ role: 'Removal', evaluated: N + K, matched: N + K, flips: N + K });
    expect(senior?.examples).toHaveLength(3);
    expect(JSON.parse(senior?.examples[0]?.input ?? '{}')).toMatchObject({ principal: { id: 'rob' }, action: 'read' });
    expect(t.service.shadow.tally('acme', 'team-documents')).toBeUndefined();
    expect(await metric(t, 'acl_shadow_evaluated_total', 'senior-reads', 'Proposed')).toBe(3 * N + M + 2 * K);
    expect(await metric(t, 'acl_shadow_matched_total', 'senior-reads', 'Proposed')).toBe(2 * N + M + 2 * K);
    expect(await metric(t, 'acl_shadow_flips_total', 'senior-reads', 'Proposed')).toBe(N + M + K);
    expect(await metric(t, 'acl_shadow_flips_total', 'legacy-folders', 'Removal')).toBe(N + K);
    expect(t.service.shadow.takeChanged().sort()).toEqual(['acme/legacy-folders', 'acme/senior-reads']);
  });

  it('starts a rule again after a spec edit, and drops it once it is no longer proposed', async () => {
    await t.write('proposal.yaml', PROPOSAL.replace('principal.level > 2', 'principal.level > 3'));
    expect(t.service.shadow.tally('acme', 'senior-reads')).toBeUndefined();
    expect(t.service.shadow.tally('acme', 'legacy-folders')?.evaluated).toBeGreaterThan(0);
    await t.decide(B);
    expect(t.service.shadow.tally('acme', 'senior-reads')).toMatchObject({ evaluated: 1, matched: 1, flips: 1 });
    await t.write('proposal.yaml', WITHOUT);
    expect([...t.service.shadow.all()]).toEqual([]);
    expect(await metric(t, 'acl_shadow_evaluated_total', 'senior-reads', 'Proposed')).toBeUndefined();
    await t.decide(B);
    expect([...t.service.shadow.all()]).toEqual([]);
  });

  it('answers unchanged when the ledger throws, and counts the failure', async () => {
    await t.write('proposal.yaml', PROPOSAL);
    const ledger = t.service.shadow as { observe: unknown };
    const observe = ledger.observe;
    ledger.observe = () => {
      throw new Error('ledger broken');
    };
    try {
      const res = await t.decide(B);
      expect(res.status).toBe(200);
      expect(((await res.json()) as { decision: string }).decision).toBe('deny');
      expect((await post(t, '/access/v1/evaluations', { evaluations: [authzen(A), authzen(B)] })).status).toBe(200);
      const text = await (await t.ops('/metrics')).text();
      expect(text).toContain('acl_shadow_failures_total 3');
    } finally {
      ledger.observe = observe;
    }
  });
});

describe('answers with and without a proposal', () => {
  const requests: { path: string; body: unknown }[] = [
    ...ALL.map((r) => ({ path: '/authorization', body: r })),
    ...ALL.map((r) => ({ path: '/access/v1/evaluation', body: { ...authzen(r), options: { explain: true } } })),
    ...ALL.map((r) => ({ path: '/access/v1/evaluation', body: authzen(r) })),
    { path: '/access/v1/evaluations', body: { evaluations: ALL.map(authzen), options: { explain: true } } },
    { path: '/access/v1/evaluations', body: { evaluations: ALL.map(authzen), options: { evaluations_semantic: 'deny_on_first_deny' } } },
  ];

  async function answers(t: TestService): Promise<string[]> {
    const out: string[] = [];
    for (const { path, body } of requests) {
      const res = await post(t, path, body);
      out.push(`${res.status} ${res.headers.get('content-type')} ${res.headers.get('content-length')}\n${await res.text()}`);
    }
    return out;
  }

  for (const logged of [false, true]) {
    it(`are byte-identical on both APIs, allow and deny${logged ? ', with the decision log on' : ''}`, async () => {
      const logs = logged ? [join(tmpdir(), `shadow-a-${process.pid}.log`), join(tmpdir(), `shadow-b-${process.pid}.log`)] : [];
      const shadowed = await start(true, logs[0]);
      const plain = await start(false, logs[1]);
      try {
        expect(shadowed.service.store.snapshot().tenants.get('acme')?.shadow).toBeDefined();
        expect(plain.service.store.snapshot().tenants.get('acme')?.shadow).toBeUndefined();
        const [a, b] = [await answers(shadowed), await answers(plain)];
        expect(a).toEqual(b);
        expect(a.join('\n')).toContain('"decision":"allow"');
        expect(a.join('\n')).toContain('"decision":"deny"');
        // ...and the proposal was counted meanwhile.
        expect(shadowed.service.shadow.tally('acme', 'senior-reads')?.flips).toBeGreaterThan(0);
      } finally {
        await shadowed.stop();
        await plain.stop();
        for (const f of logs) await rm(f, { force: true });
      }
    });
  }
});
