// A Secret named <connector>-token that the operator does not manage is never overwritten (it used to
// be, with an ownerReference that made the garbage collector delete it with the Connector).
import { expect, it } from 'vitest';
import { adminClients, connectorYaml, customApi, waitFor } from '../support/kube.ts';
import { describeE2E } from '../support/e2e.ts';

describeE2E('Kubernetes: token Secret name collisions (real API server)', { timeout: 90_000 }, (e2e) => {
  it('leaves a Secret it does not manage alone', async () => {
    const t = await e2e.tenant('rv-takeover');
    const ns = t.ns;
    const { core } = adminClients();
    await core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: 'db-token', namespace: ns }, stringData: { password: 'hunter2-production' } },
    });
    await e2e.operator({ namespace: ns });
    await t.apply([connectorYaml(ns, 'db')]);
    const status = await waitFor('connector reconciled', async () => {
      const st = await customApi(ns).status('Connector', 'db');
      return st['phase'] !== undefined ? st : undefined;
    });
    expect(status).toMatchObject({
      phase: 'Inactive',
      conditions: expect.arrayContaining([
        expect.objectContaining({
          type: 'Ready',
          status: 'False',
          reason: 'SecretConflict',
          message: expect.stringContaining('db-token already exists'),
        }),
      ]),
    });
    const after = await core.readNamespacedSecret({ name: 'db-token', namespace: ns });
    expect(Object.keys(after.data ?? {})).toEqual(['password']);
    expect(after.metadata?.ownerReferences ?? []).toEqual([]);
    const events = await core.listNamespacedEvent({ namespace: ns });
    expect(events.items.some((e) => e.reason === 'SecretConflict' && e.involvedObject.name === 'db')).toBe(true);
  });
});
