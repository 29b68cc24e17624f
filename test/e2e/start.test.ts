// A start reconciles each object once: the first list waits for the first Lease attempt, so a new
// leader's pass over every object collapses into it (before, 10,200 objects took 20,600 reconciles).
import { expect, it } from 'vitest';
import { bundleYaml, connectorYaml, metricValue, ruleYaml, TEAM_RULE, waitFor } from '../support/kube.ts';
import { describeE2E } from '../support/e2e.ts';

const RULES = 30;

describeE2E('Kubernetes: start to ready (real API server)', { timeout: 90_000 }, (e2e) => {
  it('a restarted leader reconciles each Rule once, writes nothing, and serves the same bundle', async () => {
    const { ns, api } = await e2e.tenant('rv-start', (n) => [
      connectorYaml(n, 'gateways'),
      bundleYaml(n, 'docs', { connector: 'gateways' }),
      ...Array.from({ length: RULES }, (_, i) => ruleYaml(n, `rule-${i}`, { ...TEAM_RULE, actions: [`read-${i}`] })),
    ]);
    const first = await e2e.operator({ namespace: ns, identity: 'first', activityFlushMs: 3_600_000 });
    await waitFor('every status written', async () => {
      await first.controller.idle();
      return (
        (await api.status('Bundle', 'docs'))['revision'] === 1 && (await api.status('Rule', `rule-${RULES - 1}`))['phase'] === 'Enforced'
      );
    });
    await first.controller.idle();
    const served = first.store.snapshot().tenants.get(ns)?.bundles.get('docs')?.built.etag;
    await first.stop();

    const second = await e2e.operator({ namespace: ns, identity: 'second', activityFlushMs: 3_600_000 });
    await second.controller.idle();
    expect(second.elector.isLeader()).toBe(true);
    expect(await metricValue(second, 'acl_reconcile_total', { kind: 'Rule' })).toBe(RULES);
    expect(await metricValue(second, 'acl_status_writes_total')).toBe(0);
    expect(second.store.snapshot().tenants.get(ns)?.bundles.get('docs')?.built.etag).toBe(served);
  });
});
