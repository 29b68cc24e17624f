// What the cluster benchmark's memory parts share: both replicas' memory read inside the pods once the
// last change has settled, and the restarts the kubelet counted.
import { kubectl, OPERATOR_NS, operatorPodCount, readyOperators, waitFor } from '../../test/cluster/support.ts';
import { podMemory } from '../../test/cluster/workload.ts';

export const LIMIT_BYTES = 512 * 1024 * 1024;

export interface Reading {
  /** The larger replica's cgroup usage (what the limit is checked against), bytes. */
  readonly cgroup: number;
  /** The larger replica's process RSS, bytes. */
  readonly rss: number;
}

/** Waits `settleMs` (the last reconciles' garbage collected), then reads both replicas. */
export async function readMemory(settleMs = 15_000): Promise<Reading> {
  await new Promise((r) => setTimeout(r, settleMs));
  const m = await Promise.all((await readyOperators()).map((p) => podMemory(p.metadata.name)));
  return { cgroup: Math.max(...m.map((x) => x.cgroupBytes)), rss: Math.max(...m.map((x) => x.rssBytes)) };
}

/** Both replicas replaced (rollout restart), so a part measures from a fresh start, not what earlier parts left. */
export async function freshReplicas(): Promise<void> {
  await kubectl(['-n', OPERATOR_NS, 'rollout', 'restart', 'deploy/acl-operator']);
  await kubectl(['-n', OPERATOR_NS, 'rollout', 'status', 'deploy/acl-operator', '--timeout=600s'], { timeoutMs: 620_000 });
  await waitFor(
    '2 Ready replicas and no other',
    async () => (await operatorPodCount()) === 2 && (await readyOperators()).length === 2,
    300_000,
  );
}
