// A Secret named <connector>-token that the operator does not manage is never overwritten (it used to
// be, with an ownerReference that made the garbage collector delete it with the Connector).
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Operator } from '../../src/modes/index.ts';
import {
  adminClients,
  apply,
  connectorYaml,
  createNamespace,
  customApi,
  E2E_KUBECONFIG,
  ensureCrds,
  loadConfig,
  startE2EOperator,
  waitFor,
} from '../support/kube.ts';

describe.skipIf(!E2E_KUBECONFIG)('Kubernetes: token Secret name collisions (real API server)', { timeout: 90_000 }, () => {
  let op: Operator | undefined;
  let drop: (() => Promise<void>) | undefined;
  beforeAll(ensureCrds);
  afterEach(async () => {
    await op?.stop();
    op = undefined;
    await drop?.();
  });

  it('leaves a Secret it does not manage alone', async () => {
    const n = await createNamespace('rv-takeover');
    drop = n.drop;
    const ns = n.name;
    const { core } = adminClients();
    await core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: 'db-token', namespace: ns }, stringData: { password: 'hunter2-production' } },
    });
    op = await startE2EOperator({ namespace: ns });
    await apply(loadConfig(), [connectorYaml(ns, 'db')]);
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
