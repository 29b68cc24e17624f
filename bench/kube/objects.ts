// The tenants the Kubernetes benchmarks create (bench/kube.ts, bench/memory.ts): 100 Rules with
// conditions as in bench/generate.ts (each with its own constant), a Connector `opa` and a Bundle
// `all` per namespace, and the helpers that create and delete them on a real API server.
import { GROUP, VERSION } from '../../src/api/meta.ts';
import { statusOf, type KubeClients } from '../../src/kube/index.ts';
import { CONDITIONS, rng } from '../generate.ts';
import { fmt } from '../http/report.ts';

export const RULES_PER_NS = 100;
export const CREATE_CONCURRENCY = 50;

export type Plural = 'rules' | 'connectors' | 'bundles';
const object = (kind: string, namespace: string, name: string, spec: Record<string, unknown>) => ({
  apiVersion: `${GROUP}/${VERSION}`,
  kind,
  metadata: { name, namespace },
  spec,
});
/** One object to create, with the plural its endpoint takes. */
export interface BenchObject {
  readonly plural: Plural;
  readonly body: ReturnType<typeof object>;
}

const progress = (line: string): void => {
  process.stderr.write(`${line}\n`);
};
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function ruleSpec(r: () => number, tag: string, i: number): Record<string, unknown> {
  const actions = [...new Set([`action-${Math.floor(r() * 20)}`, `action-${Math.floor(r() * 20)}`])];
  return {
    state: 'Enforced',
    description: `Generated rule ${i}`,
    subjectType: `subject-${Math.floor(r() * 50)}`,
    actions,
    resourceType: `resource-${Math.floor(r() * 100)}`,
    condition: `${CONDITIONS[i % CONDITIONS.length]} && principal.id != "nobody-${tag}-${i}"`,
  };
}

/** A tenant: 100 Rules, Connector `opa`, Bundle `all`. */
export function tenantObjects(ns: string, seed: number): BenchObject[] {
  const r = rng(seed);
  return [
    ...Array.from({ length: RULES_PER_NS }, (_, i) => ({
      plural: 'rules' as const,
      body: object('Rule', ns, `rule-${String(i).padStart(3, '0')}`, ruleSpec(r, ns, i)),
    })),
    { plural: 'connectors', body: object('Connector', ns, 'opa', {}) },
    { plural: 'bundles', body: object('Bundle', ns, 'all', { connector: 'opa' }) },
  ];
}

/** Creates the namespace with `label`=true unless it exists (BENCH_KEEP); waits out a previous run's deletion. */
export async function ensureNamespace(core: KubeClients['core'], name: string, label = 'acl-operator-bench'): Promise<void> {
  for (let waited = false; ; waited = true) {
    try {
      await core.createNamespace({ body: { metadata: { name, labels: { [label]: 'true' } } } });
      return;
    } catch (err) {
      if (statusOf(err) !== 409) throw err;
      const existing = await core.readNamespace({ name }).catch(() => undefined);
      if (existing && existing.status?.phase !== 'Terminating') return;
      if (!waited) progress(`  waiting for namespace ${name} of an earlier run to be deleted`);
      await sleep(1000);
    }
  }
}

/** Runs `work` over `items`, `concurrency` at a time; `onDone` after each. */
export async function pool<T>(
  items: readonly T[],
  concurrency: number,
  work: (item: T) => Promise<void>,
  onDone: (done: number) => void = () => undefined,
): Promise<void> {
  let next = 0;
  let done = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) {
        await work(items[next++] as T);
        onDone(++done);
      }
    }),
  );
}

/** Creates objects, 50 at a time, leaving any that exist; returns how many were created. */
export async function createAll(custom: KubeClients['custom'], objects: readonly BenchObject[], label: string): Promise<number> {
  let created = 0;
  await pool(
    objects,
    CREATE_CONCURRENCY,
    async ({ plural, body }) => {
      try {
        await custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: body.metadata.namespace, plural, body });
        created++;
      } catch (err) {
        if (statusOf(err) !== 409) throw err;
      }
    },
    (done) => {
      if (done % 1000 === 0 || done === objects.length) progress(`  ${label}: ${fmt(done)}/${fmt(objects.length)}`);
    },
  );
  return created;
}

/** Deletes the namespaces, 10 at a time; a missing one is fine. */
export async function dropNamespaces(core: KubeClients['core'], names: readonly string[]): Promise<void> {
  await pool(names, 10, async (name) => {
    await core.deleteNamespace({ name }).catch((err: unknown) => {
      if (statusOf(err) !== 404) throw err;
    });
  });
}
