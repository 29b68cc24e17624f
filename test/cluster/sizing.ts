// 10,000 Rules in the shipped Deployment: 100 tenants of 100 Rules, a Connector and a Bundle each,
// created the way a GitOps tool would (many at once). Both replicas hold them under the 512Mi limit
// with no restart, and a replica restarted with all of them present comes back Ready. Memory is read
// inside each pod (cgroup and /proc), and printed.
import { KubernetesObjectApi, KubeConfig } from '@kubernetes/client-node';
import { expect, it } from 'vitest';
import { CLUSTER_KUBECONFIG, kubectl, kubectlJson, OPERATOR_NS, readyOperators, say, waitFor } from './support.ts';
import {
  CONCURRENCY,
  LIMIT_BYTES,
  mb,
  objectsOf,
  podMemory,
  restartsAndKills,
  RULES_PER_NAMESPACE,
  SIZING_NAMESPACES,
} from './workload.ts';

export function sizingTests(): void {
  it('holds 10,000 Rules in 100 tenants under the 512Mi limit with no restart, and a replica restarted with all of them comes back Ready', async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(CLUSTER_KUBECONFIG ?? '');
    const api = KubernetesObjectApi.makeApiClient(kc);
    const started = Date.now();
    const queue = Array.from({ length: SIZING_NAMESPACES }, (_, i) => objectsOf(i));
    // Each tenant's objects in order (its Namespace first), several tenants at once.
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        for (let next = queue.shift(); next; next = queue.shift()) {
          for (const o of next) await api.create(o);
        }
      }),
    );
    const createdS = (Date.now() - started) / 1000;
    type B = { metadata: { namespace: string }; status?: { revision?: number; conditions?: { type: string; status: string }[] } };
    await waitFor(
      'every sizing Bundle built and Ready',
      async () => {
        const { items } = await kubectlJson<{ items: B[] }>(['get', 'bundles', '-A']);
        const built = items.filter((b) => b.metadata.namespace.startsWith('acl-size-') && (b.status?.revision ?? 0) > 0);
        return built.length === SIZING_NAMESPACES;
      },
      600_000,
      3_000,
    );
    const readyS = (Date.now() - started) / 1000;
    say(
      `sizing: ${SIZING_NAMESPACES * (RULES_PER_NAMESPACE + 2)} objects created in ${createdS.toFixed(0)} s, every Bundle built ${readyS.toFixed(0)} s after the first create`,
    );
    const replicas = await readyOperators();
    expect(replicas).toHaveLength(2);
    for (const p of replicas) {
      const m = await podMemory(p.metadata.name);
      say(`sizing: ${p.metadata.name} holds 10,000 Rules: cgroup ${mb(m.cgroupBytes)}, RSS ${mb(m.rssBytes)} (limit 512 MiB)`);
      expect(m.cgroupBytes).toBeLessThan(LIMIT_BYTES);
    }
    expect(await restartsAndKills()).toEqual({ restarts: 0, oomKilled: 0 });

    const victim = replicas[1]?.metadata.name ?? '';
    const t0 = Date.now();
    await kubectl(['-n', OPERATOR_NS, 'delete', 'pod', victim, '--wait=false']);
    const back = await waitFor(
      'a replacement replica Ready with every object',
      async () => {
        const ready = (await readyOperators()).filter(
          (p) => p.metadata.name !== victim && !replicas.some((r) => r.metadata.name === p.metadata.name),
        );
        return ready[0];
      },
      600_000,
    );
    const m = await podMemory(back.metadata.name);
    say(
      `sizing: a replica restarted with 10,000 Rules present was Ready ${((Date.now() - t0) / 1000).toFixed(0)} s after the delete: cgroup ${mb(m.cgroupBytes)}, RSS ${mb(m.rssBytes)}`,
    );
    expect(m.cgroupBytes).toBeLessThan(LIMIT_BYTES);
    expect(await restartsAndKills()).toEqual({ restarts: 0, oomKilled: 0 });
  });
}
