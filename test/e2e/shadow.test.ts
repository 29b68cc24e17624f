// Shadow decisions in Kubernetes mode, against a real API server: the live requests a Proposed rule
// and a rule marked for removal see reach their status.shadow exactly (N requests → N counted), the
// `Shadow` printer column shows the summary as kubectl prints it, a restart of the operator midway
// loses nothing and counts nothing twice, and a spec edit starts the count again.
import { execFileSync } from 'node:child_process';
import type { KubernetesObject } from '@kubernetes/client-node';
import { expect, it } from 'vitest';
import type { RuleShadowStatus } from '../../src/api/index.ts';
import type { Operator } from '../../src/modes/index.ts';
import { apiKeySecret, customApi, E2E_KUBECONFIG, ruleYaml, tableOf, waitFor } from '../support/kube.ts';
import { describeE2E, docsTenant } from '../support/e2e.ts';

const API_KEY = 'e2e-shadow-api-key-0123456789';
const KUBECTL = ((): boolean => {
  try {
    execFileSync('kubectl', ['version', '--client'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

const SENIOR = { state: 'Proposed', subjectType: 'user', actions: ['read'], resourceType: 'document', condition: 'principal.level > 2' };

function marked(rule: KubernetesObject): KubernetesObject {
  return { ...rule, metadata: { ...rule.metadata, annotations: { 'acl.policyagent.dev/proposed-state': 'Suspended' } } };
}

const doc = { type: 'document', id: 'd1', team: 'blue' };
/** Denied today; senior-reads would allow it. */
const denied = (i: number) => ({ subject: { type: 'user', id: `u${i}`, team: 'red', level: 5 }, action: 'read', resource: doc });
/** Allowed by team-documents alone (marked for removal): its going would deny it. */
const allowed = (i: number) => ({ subject: { type: 'user', id: `v${i}`, team: 'blue', level: 1 }, action: 'read', resource: doc });

describeE2E('Kubernetes: shadow decisions in Rule status (real API server)', { timeout: 180_000 }, (e2e) => {
  async function send(o: Operator, n: number, from: number): Promise<void> {
    for (let i = from; i < from + n; i++) {
      for (const body of [denied(i), allowed(i)]) {
        const res = await fetch(`${o.apiUrl}/authorization`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` },
          body: JSON.stringify(body),
        });
        expect(res.status).toBe(200);
      }
    }
    // What the 10 s pass does, now: the rules whose counts moved are reconciled and their status written.
    await o.flushActivity();
  }

  const shadowIs = (api: ReturnType<typeof customApi>, rule: string, want: Partial<RuleShadowStatus>) =>
    waitFor(`Rule ${rule} status.shadow ${JSON.stringify(want)}`, async () => {
      const shadow = (await api.status('Rule', rule))['shadow'] as RuleShadowStatus | undefined;
      return shadow && Object.entries(want).every(([k, v]) => shadow[k as keyof RuleShadowStatus] === v) ? shadow : undefined;
    });

  it('counts the requests sent, shows them in kubectl get rules, survives a restart and starts again on a spec edit', async () => {
    const { ns, api } = await e2e.tenant('shadow', (n) => [
      ...docsTenant(n).map((o) => (o.kind === 'Rule' ? marked(o) : o)),
      ruleYaml(n, 'senior-reads', SENIOR),
      apiKeySecret(n, API_KEY),
    ]);
    const first = await e2e.operator({ namespace: ns, activityFlushMs: 3_600_000 });
    await shadowIs(api, 'senior-reads', { role: 'Proposed', evaluated: 0, summary: 'no live decisions yet' });
    await shadowIs(api, 'team', { role: 'Removal', evaluated: 0 });

    await send(first, 25, 0);
    const proposed = await shadowIs(api, 'senior-reads', { evaluated: 50, matched: 25, flips: 25, summary: 'would allow 25 of 50' });
    expect(proposed.examples).toHaveLength(3);
    expect(proposed.examples?.[0]?.input).toContain('"level":5');
    await shadowIs(api, 'team', { evaluated: 50, flips: 25, summary: 'would deny 25 of 50' });

    // What kubectl get rules prints: the server fills the CRD's printer columns.
    const rows = await tableOf(`/apis/acl.policyagent.dev/v1alpha1/namespaces/${ns}/rules`);
    expect(rows.find((r) => r['Name'] === 'senior-reads')).toMatchObject({ State: 'Proposed', Shadow: 'would allow 25 of 50' });
    expect(rows.find((r) => r['Name'] === 'team')).toMatchObject({ State: 'Enforced', Shadow: 'would deny 25 of 50' });
    if (KUBECTL) {
      const printed = execFileSync('kubectl', ['--kubeconfig', E2E_KUBECONFIG as string, 'get', 'rules', '-n', ns], { encoding: 'utf8' });
      expect(printed).toMatch(/^NAME +STATE +PHASE +SUBJECT +ACTIONS +RESOURCE +SHADOW +WARNING +AGE$/m);
      expect(printed).toMatch(/^senior-reads +Proposed +Proposed +user +\["read"\] +document +would allow 25 of 50 +/m);
    }

    // A restart midway: a new session sums on from what status recorded.
    await first.stop();
    const second = await e2e.operator({ namespace: ns, activityFlushMs: 3_600_000 });
    await send(second, 15, 25);
    const after = await shadowIs(api, 'senior-reads', { evaluated: 80, matched: 40, flips: 40, summary: 'would allow 40 of 80' });
    expect(after.replicas).toHaveLength(2);
    await shadowIs(api, 'team', { evaluated: 80, flips: 40 });

    // A spec edit: generation 2 counts from zero; the removal's spec did not change, its count goes on.
    await customApi(ns).patchSpec('Rule', 'senior-reads', { condition: 'principal.level > 4' });
    await shadowIs(api, 'senior-reads', { observedGeneration: 2, evaluated: 0, summary: 'no live decisions yet' });
    await send(second, 5, 40);
    await shadowIs(api, 'senior-reads', { observedGeneration: 2, evaluated: 10, flips: 5 });
    await shadowIs(api, 'team', { evaluated: 90, flips: 45 });
  });

  it("sums every replica's counts, the follower's through its sharing ConfigMap, and keeps them when the leader changes", async () => {
    const { ns, api } = await e2e.tenant('shadow-replicas', (n) => [
      ...docsTenant(n),
      ruleYaml(n, 'senior-reads', SENIOR),
      apiKeySecret(n, API_KEY),
    ]);
    const options = { namespace: ns, activityFlushMs: 3_600_000, agentPublishIntervalMs: 50 };
    const a = await e2e.operator({ ...options, identity: 'a' });
    await shadowIs(api, 'senior-reads', { evaluated: 0 });
    const b = await e2e.operator({ ...options, identity: 'b' });
    expect([a.elector.isLeader(), b.elector.isLeader()]).toEqual([true, false]);
    await send(a, 10, 0);
    await send(b, 7, 10);
    // The follower's tallies reach the leader through its ConfigMap; the leader's next pass writes the sum.
    const summed = async (want: number, leader: Operator, follower?: Operator) =>
      waitFor(`senior-reads counted ${want}`, async () => {
        await follower?.flushActivity();
        await leader.flushActivity();
        const shadow = (await api.status('Rule', 'senior-reads'))['shadow'] as RuleShadowStatus | undefined;
        return shadow?.evaluated === want ? shadow : undefined;
      });
    expect(await summed(34, a, b)).toMatchObject({ flips: 17, summary: 'would allow 17 of 34' });
    await send(a, 3, 17);
    await summed(40, a, b);
    // The leader goes: the follower takes over and sums on from what status recorded.
    await a.stop();
    await waitFor('b leads', async () => b.elector.isLeader());
    await send(b, 2, 20);
    expect(await summed(44, b)).toMatchObject({ flips: 22 });
  });

  it('sums what a follower counted since its last publication when it stops before the leader sums it', async () => {
    const { ns, api } = await e2e.tenant('shadow-stop', (n) => [
      ...docsTenant(n),
      ruleYaml(n, 'senior-reads', SENIOR),
      apiKeySecret(n, API_KEY),
    ]);
    const options = { namespace: ns, activityFlushMs: 3_600_000, agentPublishIntervalMs: 50 };
    const a = await e2e.operator({ ...options, identity: 'a' });
    await shadowIs(api, 'senior-reads', { evaluated: 0 });
    const b = await e2e.operator({ ...options, identity: 'b' });
    expect([a.elector.isLeader(), b.elector.isLeader()]).toEqual([true, false]);
    // Requests to the follower, then a rolling update stops it before its next 10 s pass shares them.
    for (let i = 0; i < 4; i++) {
      for (const body of [denied(i), allowed(i)]) {
        const res = await fetch(`${b.apiUrl}/authorization`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` },
          body: JSON.stringify(body),
        });
        expect(res.status).toBe(200);
      }
    }
    await b.stop();
    const shadow = await waitFor('senior-reads counted 8', async () => {
      await a.flushActivity();
      const s = (await api.status('Rule', 'senior-reads'))['shadow'] as RuleShadowStatus | undefined;
      return s?.evaluated === 8 ? s : undefined;
    });
    expect(shadow).toMatchObject({ flips: 4, summary: 'would allow 4 of 8' });
    await a.stop();
  });
});
