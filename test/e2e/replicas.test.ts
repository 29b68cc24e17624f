// Restarts and replicas against a real API server: the same revisions and ETags after a restart;
// two operators: one leader writes, both serve identical bundles; the follower takes over.
import { expect, it } from 'vitest';
import { bundleYaml, fetchBundle, metricValue, readToken, ruleYaml, waitFor } from '../support/kube.ts';
import { describeE2E, docsTenant } from '../support/e2e.ts';

describeE2E('Kubernetes: restarts and replicas (real API server)', { timeout: 150_000 }, (e2e) => {
  const setup = (prefix: string) =>
    e2e.tenant(prefix, (ns) => [...docsTenant(ns), bundleYaml(ns, 'v1', { connector: 'gateways', regoVersion: 1 })]);
  const start = (ns: string, identity: string) => e2e.operator({ namespace: ns, identity });

  it('serves the same revisions, ETags and bytes after a restart, and writes nothing new', async () => {
    const { ns, api, ...t } = await setup('restart');
    const first = await start(ns, 'a');
    await t.revision(1);
    await api.patchSpec('Rule', 'team', { actions: ['read', 'write'] });
    await t.revision(2);
    const token = await t.token();
    const before = await Promise.all(['docs', 'v1'].map((b) => fetchBundle(first, ns, 'gateways', b, token)));
    await first.stop();
    // Stopping wrote lastSync (the fetches above): from here on nothing changes.
    const versions = await Promise.all(['docs', 'v1'].map(async (b) => (await api.get('Bundle', b)).metadata.resourceVersion));

    const second = await start(ns, 'a');
    const after = await Promise.all(['docs', 'v1'].map((b) => fetchBundle(second, ns, 'gateways', b, token)));
    expect(after.map((r) => [r.status, r.etag])).toEqual(before.map((r) => [r.status, r.etag]));
    expect(after.map((r) => r.bytes.equals(before[after.indexOf(r)]?.bytes ?? Buffer.alloc(0)))).toEqual([true, true]);
    expect(await api.status('Bundle', 'docs')).toMatchObject({ revision: 2 });
    await second.controller.idle();
    expect(await Promise.all(['docs', 'v1'].map(async (b) => (await api.get('Bundle', b)).metadata.resourceVersion))).toEqual(versions);
    expect(await metricValue(second, 'acl_status_writes_total', { kind: 'Bundle' })).toBe(0);
  });

  it('has one leader that writes, both replicas serve identical bundles, and the follower takes over', async () => {
    const { ns, api, ...t } = await setup('replicas');
    const a = await start(ns, 'a');
    await t.revision(1);
    const b = await start(ns, 'b');
    expect(a.elector.isLeader()).toBe(true);
    expect(b.elector.isLeader()).toBe(false);
    const token = await t.token();

    // Several quick changes: the follower must serve exactly what the leader recorded.
    await api.patchSpec('Rule', 'team', { actions: ['read', 'write'] });
    await t.apply([ruleYaml(ns, 'more', { state: 'Enforced', subjectType: 'user', actions: ['share'], resourceType: 'document' })]);
    await api.patchSpec('Rule', 'more', { actions: ['share', 'comment'] });
    const status = await waitFor('leader built the last change', async () => {
      const s = await api.status('Bundle', 'docs');
      return s['ruleCount'] === 2 &&
        a.store.snapshot().tenants.get(ns)?.bundles.get('docs')?.built.revision === s['revision'] &&
        a.store
          .snapshot()
          .tenants.get(ns)
          ?.index.rules.find((r) => r.model.name === 'more')?.model.actions.length === 2
        ? s
        : undefined;
    });
    const fromA = await fetchBundle(a, ns, 'gateways', 'docs', token);
    const fromB = await waitFor('follower serves the recorded revision', async () => {
      const r = await fetchBundle(b, ns, 'gateways', 'docs', token);
      return r.etag === status['etag'] ? r : undefined;
    });
    expect(fromA.etag).toBe(status['etag']);
    expect(fromB.bytes.equals(fromA.bytes)).toBe(true);
    expect(await metricValue(b, 'acl_status_writes_total')).toBe(0);
    expect(await metricValue(a, 'acl_status_writes_total')).toBeGreaterThan(0);
    expect(await metricValue(a, 'acl_leader')).toBe(1);
    expect(await metricValue(b, 'acl_leader')).toBe(0);
    // The follower never issues tokens: the Secret is still the leader's.
    expect(await readToken(ns, 'gateways')).toBe(token);

    await a.stop();
    await waitFor('follower became the leader', () => b.elector.isLeader());
    await api.patchSpec('Rule', 'team', { actions: ['read'] });
    const next = await waitFor('new leader builds the next revision', async () => {
      const s = await api.status('Bundle', 'docs');
      return s['revision'] === (status['revision'] as number) + 1 ? s : undefined;
    });
    expect((await fetchBundle(b, ns, 'gateways', 'docs', token)).etag).toBe(next['etag']);
    expect(await metricValue(b, 'acl_status_writes_total')).toBeGreaterThan(0);
  });
});
