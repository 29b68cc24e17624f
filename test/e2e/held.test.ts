// What a replica holds of a Rule against a real API server: its status stays whole on the server
// (Rego and spec) while the cache keeps it abridged, and neither a resync nor a restart writes it
// again, also while an invalid edit keeps the last good version in force.
import { expect, it } from 'vitest';
import { metricValue, ruleYaml, TEAM_RULE, waitFor } from '../support/kube.ts';
import { describeE2E, docsTenant } from '../support/e2e.ts';

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

describeE2E('Kubernetes: a Rule held abridged, its status whole (real API server)', { timeout: 120_000 }, (e2e) => {
  it('writes nothing again on a resync or a restart, and keeps the last good version in force across the restart', async () => {
    const t = await e2e.tenant('held', (ns) => {
      const rule = ruleYaml(ns, 'team', TEAM_RULE);
      // As kubectl apply leaves it: a whole copy of the object in an annotation.
      rule.metadata = { ...rule.metadata, annotations: { [LAST_APPLIED]: JSON.stringify(rule) } };
      return [...docsTenant(ns).filter((o) => o.kind !== 'Rule'), rule];
    });
    const { ns, api } = t;
    const first = await e2e.operator({ namespace: ns, identity: 'held-1' });
    await t.revision(1);
    await first.controller.idle();
    const written = await api.status('Rule', 'team');
    expect(written['translation']).toMatchObject({
      status: 'Current',
      generation: 1,
      spec: TEAM_RULE,
      rego: expect.stringContaining('team'),
    });
    const held = first.source.get('Rule', ns, 'team');
    expect(held?.raw['status']).toMatchObject({ translation: { status: 'Current', generation: 1 } });
    expect(held?.raw['status']).not.toHaveProperty('translation.rego');
    expect(held?.metadata.annotations ?? {}).not.toHaveProperty([LAST_APPLIED]);

    const versions = async (): Promise<string[]> =>
      Promise.all(
        ['Rule', 'Connector', 'Bundle'].map(
          async (kind) =>
            (await api.get(kind as 'Rule', kind === 'Rule' ? 'team' : kind === 'Bundle' ? 'docs' : 'gateways')).metadata.resourceVersion,
        ),
      );
    const settled = await versions();
    const writes = await metricValue(first, 'acl_status_writes_total');
    for (const key of first.source.keys()) first.controller.enqueue(key);
    await first.controller.idle();
    expect(await versions()).toEqual(settled);
    expect(await metricValue(first, 'acl_status_writes_total')).toBe(writes);

    // An invalid edit: the last good version stays in force, and status records its spec.
    await api.patchSpec('Rule', 'team', { condition: 'principal.team ==' });
    await waitFor('the Rule Invalid', async () => ((await api.status('Rule', 'team'))['phase'] === 'Invalid' ? true : undefined));
    await first.controller.idle();
    await first.stop();

    const stale = await versions();
    const second = await e2e.operator({ namespace: ns, identity: 'held-2' });
    await waitFor('the new leader', () => second.elector.isLeader() || undefined);
    for (const key of second.source.keys()) second.controller.enqueue(key);
    await second.controller.idle();
    expect(
      second.store
        .snapshot()
        .tenants.get(ns)
        ?.index.rules.map((r) => r.model.name),
    ).toEqual(['team']);
    expect(await metricValue(second, 'acl_status_writes_total')).toBe(0);
    expect(await versions()).toEqual(stale);
    expect((await api.status('Rule', 'team'))['translation']).toMatchObject({
      status: 'Stale',
      generation: 1,
      spec: TEAM_RULE,
      rego: expect.stringContaining('team'),
    });
  });
});
