// Regression: a status write's response must not bring back an object the informer has meanwhile
// reported deleted (it used to: the deleted Rule stayed in force until the process restarted).
import { expect, it } from 'vitest';
import { clientsFor, type KubeClients } from '../../src/kube/index.ts';
import { createLogger } from '../../src/log.ts';
import { startOperator } from '../../src/modes/index.ts';
import { customApi, loadConfig, operatorConfig, ruleYaml, waitFor } from '../support/kube.ts';
import { describeE2E, docsTenant } from '../support/e2e.ts';

describeE2E('Kubernetes: a write response racing a delete (real API server)', { timeout: 60_000 }, (e2e) => {
  it('a Rule deleted while its status write is in flight stays deleted', async () => {
    const t = await e2e.tenant('rv-ghost', docsTenant);
    const ns = t.ns;
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
    const o = await e2e.operator(
      startOperator(operatorConfig(ns, 'a'), {
        clients,
        log: createLogger('silent'),
        leaseSeconds: 3,
        renewMs: 500,
        retryMs: 200,
      }),
    );
    await waitFor('leader', () => o.elector.isLeader());
    await t.apply([ruleYaml(ns, 'victim', { state: 'Enforced', subjectType: 'user', actions: ['purge'], resourceType: 'document' })]);
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
