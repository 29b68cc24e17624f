// The cluster benchmark's Directory part: one tenant whose rule reads `principal.team`, its Bundle
// embedding that property of every user, and Directories of 5,000 users each added until the step's
// count; both replicas' memory once the Bundle carries them all.
import { type KubernetesObject, KubernetesObjectApi, type KubeConfig } from '@kubernetes/client-node';
import { kubectlJson, run, waitFor } from '../../test/cluster/support.ts';
import { restartsAndKills } from '../../test/cluster/workload.ts';
import { type Reading, readMemory } from './memory.ts';

const NS = 'acl-size-directory';
const PER_DIRECTORY = 5_000;

export interface DirectoryRow extends Reading {
  readonly entities: number;
  readonly seconds: number;
  readonly restarts: number;
}

function directory(n: number): KubernetesObject {
  return {
    apiVersion: 'acl.policyagent.dev/v1alpha1',
    kind: 'Directory',
    metadata: { name: `people-${n}`, namespace: NS },
    spec: {
      entities: Array.from({ length: PER_DIRECTORY }, (_, i) => ({
        type: 'user',
        id: `u-${n}-${i}`,
        properties: { team: `team-${(n * PER_DIRECTORY + i) % 97}` },
      })),
    },
  } as KubernetesObject;
}

/** Grows the tenant's Directories to each count of `steps` (entities) in turn; stops past 80 % of the limit or at a restart; the tenant is deleted afterwards unless `keep`. */
export async function directoryMemory(
  kc: KubeConfig,
  steps: readonly number[],
  limit: number,
  log: (line: string) => void,
  keep = false,
): Promise<DirectoryRow[]> {
  const api = KubernetesObjectApi.makeApiClient(kc);
  const meta = { namespace: NS };
  for (const o of [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS, labels: { 'acl-cluster-tier': 'true' } } },
    {
      apiVersion: 'acl.policyagent.dev/v1alpha1',
      kind: 'Rule',
      metadata: { ...meta, name: 'team' },
      spec: {
        state: 'Enforced',
        subjectType: 'user',
        actions: ['read'],
        resourceType: 'document',
        condition: 'principal.team == resource.team',
      },
    },
    { apiVersion: 'acl.policyagent.dev/v1alpha1', kind: 'Connector', metadata: { ...meta, name: 'sidecars' }, spec: {} },
    { apiVersion: 'acl.policyagent.dev/v1alpha1', kind: 'Bundle', metadata: { ...meta, name: 'all' }, spec: { connector: 'sidecars' } },
  ] as KubernetesObject[])
    await api.create(o);
  const rows: DirectoryRow[] = [];
  let directories = 0;
  for (const entities of steps) {
    const t0 = Date.now();
    const want = entities / PER_DIRECTORY;
    const revision = async () =>
      (await kubectlJson<{ status?: { revision?: number } }>(['-n', NS, 'get', 'bundle', 'all'])).status?.revision ?? 0;
    const before = await revision();
    for (; directories < want; directories++) await api.create(directory(directories));
    await waitFor(
      `${entities} entities Ready and in the Bundle`,
      async () => {
        const { items } = await kubectlJson<{ items: { status?: { phase?: string } }[] }>(['-n', NS, 'get', 'directories']);
        const bundle = await kubectlJson<{ status?: { conditions?: { type: string; status: string }[] } }>([
          '-n',
          NS,
          'get',
          'bundle',
          'all',
        ]);
        const ready = items.length === want && items.every((d) => d.status?.phase === 'Ready');
        return ready && bundle.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') && (await revision()) > before;
      },
      1_800_000,
      3_000,
    );
    const seconds = (Date.now() - t0) / 1000;
    const memory = await readMemory();
    const { restarts, oomKilled } = await restartsAndKills();
    rows.push({ entities, seconds, restarts: restarts + oomKilled, ...memory });
    log(
      `  ${entities.toLocaleString('en-US')} Directory entities (added in ${seconds.toFixed(0)} s): cgroup ${(memory.cgroup / 2 ** 20).toFixed(0)} MiB, RSS ${(memory.rss / 2 ** 20).toFixed(0)} MiB, restarts ${restarts + oomKilled}`,
    );
    if (restarts + oomKilled > 0 || memory.cgroup > 0.8 * limit) break;
  }
  if (!keep) await run('kubectl', ['delete', 'namespace', NS, '--wait=true'], { timeoutMs: 600_000 });
  return rows;
}
