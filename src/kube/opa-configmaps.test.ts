import type { CoreV1Api, V1ConfigMap } from '@kubernetes/client-node';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createOpaConfigMaps, OPA_CONFIGMAP, type WantedConfigMaps } from './opa-configmaps.ts';

const OURS = { 'app.kubernetes.io/managed-by': 'acl-operator' };

/** An API server holding ConfigMaps by namespace, counting the writes that reach it. */
function fakeCore() {
  const maps = new Map<string, V1ConfigMap>();
  const writes: string[] = [];
  let version = 0;
  const notFound = (): Error => Object.assign(new Error('Not Found'), { code: 404 });
  const stamp = (cm: V1ConfigMap): V1ConfigMap => ({
    ...structuredClone(cm),
    metadata: { ...cm.metadata, resourceVersion: String(++version) },
  });
  const core = {
    async readNamespacedConfigMap({ namespace }: { namespace: string }) {
      const cm = maps.get(namespace);
      if (!cm) throw notFound();
      return structuredClone(cm);
    },
    async createNamespacedConfigMap({ namespace, body }: { namespace: string; body: V1ConfigMap }) {
      if (maps.has(namespace)) throw Object.assign(new Error('Conflict'), { code: 409 });
      writes.push(`create ${namespace}`);
      maps.set(namespace, stamp(body));
      return maps.get(namespace);
    },
    async replaceNamespacedConfigMap({ namespace, body }: { namespace: string; body: V1ConfigMap }) {
      if (maps.get(namespace)?.metadata?.resourceVersion !== body.metadata?.resourceVersion)
        throw Object.assign(new Error('Conflict'), { code: 409 });
      writes.push(`replace ${namespace}`);
      maps.set(namespace, stamp(body));
      return maps.get(namespace);
    },
    async deleteNamespacedConfigMap({ namespace }: { namespace: string }) {
      if (!maps.delete(namespace)) throw notFound();
      writes.push(`delete ${namespace}`);
      return {};
    },
    async listConfigMapForAllNamespaces({ labelSelector }: { labelSelector: string }) {
      const [k, v] = labelSelector.split('=') as [string, string];
      return { items: [...maps.values()].filter((cm) => cm.metadata?.labels?.[k] === v).map((cm) => structuredClone(cm)) };
    },
  };
  return { core: core as unknown as CoreV1Api, maps, writes };
}

type Data = ReadonlyMap<string, Record<string, string>>;

/** The writer over `wanted`, each tenant's data handed as the same object until it changes. */
function writer(api: ReturnType<typeof fakeCore>, wanted: () => Data) {
  const lazy = (): WantedConfigMaps => new Map([...wanted()].map(([ns, data]) => [ns, () => data]));
  return createOpaConfigMaps({ core: api.core, namespaces: undefined, log: pino({ level: 'silent' }), wanted: lazy });
}

describe('the acl-opa ConfigMaps', () => {
  it('writes each tenant once, and nothing while its data stays the same', async () => {
    const api = fakeCore();
    let wanted: Data = new Map<string, Record<string, string>>([
      ['shop', { 'docs.yaml': 'a' }],
      ['bank', { 'ledger.yaml': 'b' }],
    ]);
    const maps = writer(api, () => wanted);
    for (let i = 0; i < 10; i++) await maps.sync();
    expect(api.writes.sort()).toEqual(['create bank', 'create shop']);
    expect(api.maps.get('shop')?.metadata).toMatchObject({ name: OPA_CONFIGMAP, labels: OURS });
    wanted = new Map<string, Record<string, string>>([
      ['shop', { 'docs.yaml': 'a2', 'acl-1.pem': 'k' }],
      ['bank', { 'ledger.yaml': 'b' }],
    ]);
    await maps.sync();
    expect(api.writes.sort()).toEqual(['create bank', 'create shop', 'replace shop']);
    expect(api.maps.get('shop')?.data).toEqual({ 'docs.yaml': 'a2', 'acl-1.pem': 'k' });
  });

  it('gives the event loop back while it prints many tenants (a rotation reprints them all)', async () => {
    const api = fakeCore();
    const slow = (): Record<string, string> => {
      const until = performance.now() + 2;
      while (performance.now() < until);
      return { 'docs.yaml': 'x' };
    };
    const maps = createOpaConfigMaps({
      core: api.core,
      namespaces: undefined,
      log: pino({ level: 'silent' }),
      wanted: () => new Map(Array.from({ length: 100 }, (_, i) => [`t${i}`, slow] as const)),
    });
    let turns = 0;
    let counting = true;
    const count = (): void => {
      turns++;
      if (counting) setImmediate(count);
    };
    setImmediate(count);
    await maps.sync();
    counting = false;
    // 200 ms of printing in slices of about 10 ms: other work ran between them.
    expect(turns).toBeGreaterThanOrEqual(5);
    expect(api.maps.size).toBe(100);
  });

  it('collapses a flood of syncs into a pass or two that ends with the newest data', async () => {
    const api = fakeCore();
    let n = 0;
    const maps = writer(api, () => new Map<string, Record<string, string>>([['shop', { 'docs.yaml': String(n) }]]));
    const syncs: Promise<void>[] = [];
    for (n = 1; n <= 50; n++) syncs.push(maps.sync());
    n = 50;
    await Promise.all(syncs);
    expect(api.writes.length).toBeLessThanOrEqual(2);
    expect(api.maps.get('shop')?.data).toEqual({ 'docs.yaml': '50' });
  });

  it('deletes the ConfigMap of a tenant with no bundle left, also one a stopped leader left behind', async () => {
    const api = fakeCore();
    const first = writer(
      api,
      () =>
        new Map<string, Record<string, string>>([
          ['shop', { 'docs.yaml': 'a' }],
          ['bank', { 'ledger.yaml': 'b' }],
        ]),
    );
    await first.sync();
    // A new leader (nothing in memory) to which only bank is left: shop's is found by listing.
    const next = writer(api, () => new Map<string, Record<string, string>>([['bank', { 'ledger.yaml': 'b' }]]));
    await next.sync();
    expect([...api.maps.keys()]).toEqual(['bank']);
    expect(api.writes).toEqual(['create shop', 'create bank', 'delete shop']);
  });

  it('writes back a ConfigMap deleted by hand once the cluster is listed again (the resync)', async () => {
    const api = fakeCore();
    const maps = writer(api, () => new Map<string, Record<string, string>>([['shop', { 'docs.yaml': 'a' }]]));
    await maps.sync();
    api.maps.delete('shop');
    maps.reset();
    await maps.sync();
    expect(api.maps.get('shop')?.data).toEqual({ 'docs.yaml': 'a' });
  });

  it('never replaces nor deletes a ConfigMap acl-opa that acl-operator did not write', async () => {
    const api = fakeCore();
    const theirs: V1ConfigMap = { metadata: { name: OPA_CONFIGMAP, namespace: 'shop', resourceVersion: '1' }, data: { mine: 'x' } };
    api.maps.set('shop', theirs);
    let wanted: Data = new Map<string, Record<string, string>>([['shop', { 'docs.yaml': 'a' }]]);
    const maps = writer(api, () => wanted);
    await maps.sync();
    wanted = new Map();
    await maps.sync();
    expect(api.maps.get('shop')?.data).toEqual({ mine: 'x' });
    expect(api.writes).toEqual([]);
  });
});
