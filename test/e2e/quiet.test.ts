// No status is rewritten when nothing changed, in every state (not only the happy path).
import { expect, it } from 'vitest';
import { bundleYaml, connectorYaml, fetchBundle, metricValue, ruleYaml, TEAM_RULE, waitFor } from '../support/kube.ts';
import { describeE2E } from '../support/e2e.ts';

describeE2E('Kubernetes: quiet status in every state (real API server)', { timeout: 90_000 }, (e2e) => {
  it('writes nothing on resync once settled', async () => {
    const t = await e2e.tenant('rv-quiet', (ns) => [
      connectorYaml(ns, 'gateways'),
      connectorYaml(ns, 'off', { active: false }),
      connectorYaml(ns, 'gone', { revoked: true }),
      connectorYaml(ns, 'lonely'),
      bundleYaml(ns, 'docs', { connector: 'gateways' }),
      bundleYaml(ns, 'v1', { connector: 'gateways', regoVersion: 1, entityTypes: ['document'] }),
      bundleYaml(ns, 'orphan', { connector: 'nobody' }),
      bundleYaml(ns, 'offb', { connector: 'off' }),
      ruleYaml(ns, 'team', TEAM_RULE),
      ruleYaml(ns, 'stale', TEAM_RULE),
      ruleYaml(ns, 'syntax', { ...TEAM_RULE, condition: 'principal.team ==' }),
      ruleYaml(ns, 'unsupported', { ...TEAM_RULE, condition: 'principal.team.matches("x")' }),
      ruleYaml(ns, 'draft', { ...TEAM_RULE, state: 'Draft' }),
      ruleYaml(ns, 'approved', { ...TEAM_RULE, state: 'Approved' }),
    ]);
    const { ns, api } = t;
    const o = await e2e.operator({ namespace: ns, activityFlushMs: 3_600_000 });
    await waitFor('stale rule Current', async () => (await api.status('Rule', 'stale'))['phase'] === 'Enforced');
    await api.patchSpec('Rule', 'stale', { condition: 'resource.x ==' });
    await waitFor(
      'stale rule Stale',
      async () => ((await api.status('Rule', 'stale'))['translation'] as { status?: string } | undefined)?.status === 'Stale',
    );
    const token = await t.token();
    expect((await fetchBundle(o, ns, 'gateways', 'docs', token)).status).toBe(200);
    await o.flushActivity();
    await o.controller.idle();
    const kinds = ['Rule', 'Connector', 'Bundle'] as const;
    const snapshot = async (): Promise<Record<string, unknown>> => {
      const out: Record<string, unknown> = {};
      for (const k of kinds)
        for (const key of o.source.keys().filter((x) => x.kind === k))
          out[`${k}/${key.name}`] = { rv: (await api.get(k, key.name)).metadata.resourceVersion };
      return out;
    };
    const before = await snapshot();
    const writes = await metricValue(o, 'acl_status_writes_total');
    for (let i = 0; i < 3; i++) {
      for (const key of o.source.keys()) o.controller.enqueue(key);
      await o.controller.idle();
    }
    await o.flushActivity();
    expect(await metricValue(o, 'acl_status_writes_total')).toBe(writes);
    expect(await snapshot()).toEqual(before);
    console.log(JSON.stringify(await api.status('Rule', 'unsupported')).slice(0, 300));
  });
});
