// Rule status.shadow in standalone mode: the counts of the requests sent reach status (the state
// folder), a restart of the service sums on from what was recorded (a new session, nothing lost or
// counted twice), and a spec edit starts again at zero.
import { afterEach, describe, expect, it } from 'vitest';
import type { RuleShadowStatus } from '../../src/api/index.ts';
import { formatStatus } from '../../src/cli/status.ts';
import { BASE_MANIFESTS, startTestService, type TestService } from '../support/service.ts';

const proposal = (condition: string) => `
apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: { name: senior-reads, namespace: acme }
spec: { state: Proposed, subjectType: user, actions: [read], resourceType: document, condition: "${condition}" }
---
apiVersion: acl.policyagent.dev/v1alpha1
kind: Rule
metadata: { name: team-documents, namespace: acme, annotations: { acl.policyagent.dev/proposed-state: Suspended } }
spec:
  state: Enforced
  subjectType: user
  actions: [read, write]
  resourceType: document
  condition: principal.team == resource.team
`;

const doc = { type: 'document', id: 'd1', properties: { team: 'blue' } };
/** Denied today; senior-reads would allow it (a flip). */
const denied = (i: number) => ({
  subject: { type: 'user', id: `u${i}`, properties: { team: 'red', level: 5 } },
  action: 'read',
  resource: doc,
});
/** Allowed by team-documents alone: its removal would deny it (a flip); senior-reads does not match. */
const allowed = (i: number) => ({
  subject: { type: 'user', id: `v${i}`, properties: { team: 'blue', level: 1 } },
  action: 'read',
  resource: doc,
});

function shadowOf(t: TestService, rule: string): RuleShadowStatus | undefined {
  return (t.service.source.get('Rule', 'acme', rule)?.raw['status'] as { shadow?: RuleShadowStatus } | undefined)?.shadow;
}

async function send(t: TestService, n: number, from: number): Promise<void> {
  for (let i = from; i < from + n; i++) {
    expect((await t.decide(denied(i))).status).toBe(200);
    expect((await t.decide(allowed(i))).status).toBe(200);
  }
  await t.service.flushActivity();
}

describe('status.shadow in standalone mode', () => {
  let t: TestService | undefined;
  afterEach(async () => {
    await t?.stop();
    t = undefined;
  });

  it('counts the requests sent, keeps them across a restart, and starts again on a spec edit', async () => {
    t = await startTestService({ manifests: { ...BASE_MANIFESTS, 'rules.yaml': proposal('principal.level > 2') } });
    expect(shadowOf(t, 'senior-reads')).toMatchObject({ role: 'Proposed', summary: 'no live decisions yet', evaluated: 0 });
    expect(shadowOf(t, 'team-documents')).toMatchObject({ role: 'Removal', evaluated: 0 });
    await send(t, 30, 0);
    expect(shadowOf(t, 'senior-reads')).toMatchObject({ evaluated: 60, matched: 30, flips: 30, summary: 'would allow 30 of 60' });
    expect(shadowOf(t, 'team-documents')).toMatchObject({ evaluated: 60, flips: 30, summary: 'would deny 30 of 60' });
    expect(shadowOf(t, 'senior-reads')?.examples).toHaveLength(3);
    // `acl-operator status` shows the summary as kubectl's SHADOW column does.
    const printed = await formatStatus(t.service.state);
    expect(printed).toMatch(/^NAMESPACE +NAME +STATE +PHASE +SUBJECT +ACTIONS +RESOURCE +TRANSLATION +SHADOW +WARNING +MESSAGE$/m);
    expect(printed).toMatch(/^acme +senior-reads +Proposed +Proposed +user +read +document +Current +would allow 30 of 60$/m);

    t = await t.restart();
    expect(shadowOf(t, 'senior-reads')).toMatchObject({ evaluated: 60, flips: 30 });
    await send(t, 20, 30);
    expect(shadowOf(t, 'senior-reads')).toMatchObject({ evaluated: 100, matched: 50, flips: 50, summary: 'would allow 50 of 100' });
    expect(shadowOf(t, 'senior-reads')?.replicas).toHaveLength(2);
    expect(shadowOf(t, 'team-documents')).toMatchObject({ evaluated: 100, flips: 50 });

    await t.write('rules.yaml', proposal('principal.level > 4'));
    expect(shadowOf(t, 'senior-reads')).toMatchObject({ evaluated: 0, flips: 0, observedGeneration: 2, summary: 'no live decisions yet' });
    await send(t, 5, 50);
    expect(shadowOf(t, 'senior-reads')).toMatchObject({ evaluated: 10, flips: 5, observedGeneration: 2 });
    // The removal's spec did not change: its counts go on.
    expect(shadowOf(t, 'team-documents')).toMatchObject({ evaluated: 110, flips: 55 });
  });
});
