// A new leader with nothing to change writes nothing (no status, no token).
import { expect, it } from 'vitest';
import { fetchBundle, metricValue, readToken, ruleYaml, TEAM_RULE, waitFor } from '../support/kube.ts';
import { describeE2E, docsTenant } from '../support/e2e.ts';

describeE2E('Kubernetes: a quiet handover (real API server)', { timeout: 90_000 }, (e2e) => {
  it('the follower takes over without rewriting anything', async () => {
    const t = await e2e.tenant('rv-handover', (ns) => [
      ...docsTenant(ns),
      ruleYaml(ns, 'syntax', { ...TEAM_RULE, condition: 'principal.team ==' }),
    ]);
    const { ns, api } = t;
    const a = await e2e.operator({ namespace: ns, identity: 'a' });
    await t.revision(1);
    const b = await e2e.operator({ namespace: ns, identity: 'b' });
    const token = await t.token();
    // b is polled first, a last: a's stop records the newest lastSync, so b has nothing newer to write.
    expect((await fetchBundle(b, ns, 'gateways', 'docs', token)).status).toBe(200);
    const polledB = Date.now();
    await waitFor('the clock moved on', () => Date.now() > polledB);
    expect((await fetchBundle(a, ns, 'gateways', 'docs', token)).status).toBe(200);
    await a.stop();
    const rvs = async (): Promise<string[]> =>
      Promise.all(
        (['Rule/team', 'Rule/syntax', 'Connector/gateways', 'Bundle/docs'] as const).map(async (k) => {
          const [kind, name] = k.split('/') as ['Rule' | 'Connector' | 'Bundle', string];
          return `${k}@${(await api.get(kind, name)).metadata.resourceVersion}`;
        }),
      );
    const before = await rvs();
    // Becoming leader enqueues every object at once; idle() then waits for that whole pass.
    await waitFor('b leads', () => b.elector.isLeader());
    await b.controller.idle();
    await b.flushActivity();
    expect(await rvs()).toEqual(before);
    expect(await metricValue(b, 'acl_status_writes_total')).toBe(0);
    expect(await readToken(ns, 'gateways')).toBe(token);
  });
});
