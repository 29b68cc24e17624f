// The cluster benchmark's rules part: tenants of 100 Rules, a Connector and a Bundle each (102 objects)
// added until a replica passes 80 % of the 512Mi limit, restarts, or maxTenants; both replicas' memory
// at each step; then a replica restarted with everything present: time to Ready and its peak.
import { KubernetesObjectApi, type KubeConfig } from '@kubernetes/client-node';
import { kubectl, kubectlJson, OPERATOR_NS, readyOperators, run, waitFor } from '../../test/cluster/support.ts';
import { CONCURRENCY, mb, objectsOf, restartsAndKills } from '../../test/cluster/workload.ts';
import { fmt, table } from '../http/report.ts';
import { LIMIT_BYTES, type Reading, readMemory } from './memory.ts';

export interface Options {
  readonly maxTenants: number;
  readonly log: (line: string) => void;
}

interface Step extends Reading {
  tenants: number;
  objects: number;
  seconds: number;
  restarts: number;
}

export interface RulesResult {
  readonly base: Reading;
  readonly steps: Step[];
  readonly tenants: number;
  readonly readyS: number;
  readonly peak: number;
}

/** Creates the sizing tenants `from` to `to` (102 objects each), 16 tenants at a time; resolves once every Bundle is built. */
export async function createTenants(api: KubernetesObjectApi, from: number, to: number): Promise<number> {
  const queue = Array.from({ length: to - from }, (_, i) => objectsOf(from + i));
  const t0 = Date.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let next = queue.shift(); next; next = queue.shift()) for (const o of next) await api.create(o);
    }),
  );
  await waitFor(
    `${to} sizing Bundles built`,
    async () => {
      const { items } = await kubectlJson<{ items: { metadata: { namespace: string }; status?: { revision?: number } }[] }>([
        'get',
        'bundles',
        '-A',
      ]);
      return items.filter((b) => b.metadata.namespace.startsWith('acl-size-') && (b.status?.revision ?? 0) > 0).length === to;
    },
    1_800_000,
    3_000,
  );
  return (Date.now() - t0) / 1000;
}

/** A replica deleted with everything present: the seconds until its replacement is Ready, and that one's peak (start included). */
export async function restartOne(): Promise<{ readyS: number; peak: number }> {
  const running = (await readyOperators()).map((p) => p.metadata.name);
  const victim = running[1] ?? '';
  const t0 = Date.now();
  await kubectl(['-n', OPERATOR_NS, 'delete', 'pod', victim, '--wait=false']);
  const fresh = await waitFor(
    'the replacement Ready',
    async () => (await readyOperators()).find((p) => !running.includes(p.metadata.name)),
    900_000,
    1_000,
  );
  const readyS = (Date.now() - t0) / 1000;
  const peakCmd = 'cat /sys/fs/cgroup/memory/memory.max_usage_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.peak';
  const peak = Number((await run('kubectl', ['-n', OPERATOR_NS, 'exec', fresh.metadata.name, '--', 'sh', '-c', peakCmd])).stdout.trim());
  return { readyS, peak };
}

export async function measureRules(kc: KubeConfig, o: Options): Promise<RulesResult> {
  const api = KubernetesObjectApi.makeApiClient(kc);
  let tenants = 0;
  const grow = async (to: number) => {
    const seconds = await createTenants(api, tenants, to);
    tenants = to;
    return seconds;
  };
  const steps: { tenants: number; objects: number; seconds: number; cgroup: number; rss: number; restarts: number }[] = [];
  const base = await readMemory();
  steps.push({ tenants: 0, objects: 0, seconds: 0, ...base, restarts: 0 });
  o.log(`  memory with the example tenant only: cgroup ${mb(base.cgroup)}, RSS ${mb(base.rss)}`);
  for (const to of [25, 50, 100, 150, 200, 250, 300].filter((t) => t <= o.maxTenants)) {
    const seconds = await grow(to);
    const m = await readMemory();
    const { restarts, oomKilled } = await restartsAndKills();
    steps.push({ tenants: to, objects: to * 102, seconds, ...m, restarts: restarts + oomKilled });
    o.log(
      `  ${fmt(to * 102)} objects (created and built in ${fmt(seconds)} s): cgroup ${mb(m.cgroup)}, RSS ${mb(m.rss)}, restarts ${restarts}, OOMKilled ${oomKilled}`,
    );
    if (restarts + oomKilled > 0 || m.cgroup > 0.8 * LIMIT_BYTES) break;
  }
  const { readyS, peak } = await restartOne();
  return { base, steps, tenants, readyS, peak };
}

/** The rules part's table and lines. */
export function rulesReport(res: RulesResult): string[] {
  const out: string[] = [];
  out.push('Memory in the pod (the larger of the two replicas, 15 s after the last Bundle was built)');
  for (const line of table(
    ['objects', 'created and built', 'cgroup', 'RSS', 'per object (RSS, from 0)', 'restarts'],
    res.steps.map((s) => [
      fmt(s.objects),
      s.objects ? `${fmt(s.seconds)} s` : '',
      mb(s.cgroup),
      mb(s.rss),
      s.objects ? `${fmt((s.rss - res.base.rss) / s.objects / 1024, 1)} KiB` : '',
      fmt(s.restarts),
    ]),
  ))
    out.push(`  ${line}`);
  const last = res.steps.at(-1) ?? res.steps[0];
  if (last && last.objects > 0) {
    const perObject = (last.rss - res.base.rss) / last.objects;
    out.push(
      `  slope: ${fmt(perObject / 1024, 1)} KiB of RSS per object; 512 MiB RSS at about ${fmt((LIMIT_BYTES - res.base.rss) / perObject)} objects by that slope`,
    );
  }
  out.push(
    `  a replica restarted with ${fmt(res.tenants * 102)} objects present: Ready in ${fmt(res.readyS)} s, peak ${mb(res.peak)} (memory.max_usage_in_bytes, start-up included)`,
  );
  return out;
}
