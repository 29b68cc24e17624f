// Regression: a status write's response must not bring back an object the informer has meanwhile
// reported deleted (it used to: the deleted Rule stayed in force until the process restarted).
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { clientsFor, type KubeClients } from '../../src/kube/index.ts';
import { createLogger } from '../../src/log.ts';
import { startOperator, type Operator } from '../../src/modes/index.ts';
import {
  apply,
  bundleYaml,
  connectorYaml,
  createNamespace,
  customApi,
  E2E_KUBECONFIG,
  ensureCrds,
  loadConfig,
  operatorConfig,
  ruleYaml,
  TEAM_RULE,
  waitFor,
} from '../support/kube.ts';

describe.skipIf(!E2E_KUBECONFIG)('Kubernetes: a write response racing a delete (real API server)', { timeout: 60_000 }, () => {
  let op: Operator | undefined;
  let drop: (() => Promise<void>) | undefined;
  beforeAll(ensureCrds);
  afterEach(async () => {
    await op?.stop();
    op = undefined;
    await drop?.();
  });

  it('a Rule deleted while its status write is in flight stays deleted', async () => {
    const n = await createNamespace('rv-ghost');
    drop = n.drop;
    const ns = n.name;
    await apply(loadConfig(), [
      connectorYaml(ns, 'gateways'),
      bundleYaml(ns, 'docs', { connector: 'gateways' }),
      ruleYaml(ns, 'team', TEAM_RULE),
    ]);
    const real = clientsFor(loadConfig());
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let written = false;
    // The response of the victim's status write is delivered late (a slow network, a busy event loop).
    const custom = new Proxy(real.custom, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver) as unknown;
        if (prop !== 'replaceNamespacedCustomObjectStatus' || typeof v !== 'function') return typeof v === 'function' ? v.bind(target) : v;
        return async (args: { name: string; plural: string }) => {
          const res: unknown = await (v as (a: unknown) => Promise<unknown>).call(target, args);
          if (args.plural === 'rules' && args.name === 'victim') {
            written = true;
            await gate;
          }
          return res;
        };
      },
    });
    const clients: KubeClients = { ...real, custom };
    op = await startOperator(operatorConfig(ns, 'a'), {
      clients,
      log: createLogger('silent'),
      leaseSeconds: 3,
      renewMs: 500,
      retryMs: 200,
    });
    const o = op;
    await waitFor('leader', () => o.elector.isLeader());
    await apply(loadConfig(), [
      ruleYaml(ns, 'victim', { state: 'Enforced', subjectType: 'user', actions: ['purge'], resourceType: 'document' }),
    ]);
    await waitFor('victim status written', () => written);
    await customApi(ns).remove('Rule', 'victim');
    await waitFor('informer saw the deletion', () => o.source.get('Rule', ns, 'victim') === undefined);
    release();
    await o.controller.idle();
    // The periodic resync (resyncAll in modes/cluster.ts) enqueues every key the source knows.
    for (const key of o.source.keys()) o.controller.enqueue(key);
    await o.controller.idle();
    const rules = o.store
      .snapshot()
      .tenants.get(ns)
      ?.index.rules.map((r) => r.model.name);
    expect({ cached: o.source.get('Rule', ns, 'victim') !== undefined, served: rules }).toEqual({ cached: false, served: ['team'] });
  });
});
