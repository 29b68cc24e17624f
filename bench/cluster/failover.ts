// The cluster benchmark's failover part: the leader pod deleted while the tier's application decides
// 50/s and polls 5/s through the Service: how long the Lease had no holder (from the release the old
// leader writes to the new holder's acquireTime, both the API server's record) and what failed.
import { CoordinationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { kubectl, leaseHolder, OPERATOR_NS, operatorPodCount as podCount, readyOperators, waitFor } from '../../test/cluster/support.ts';
import { loadCounts } from '../../test/cluster/workload.ts';
import { fmt } from '../http/report.ts';
import { median } from '../http/rounds.ts';

export interface Options {
  readonly rounds: number;
  readonly log: (line: string) => void;
}

export interface Gap {
  readonly gapMs: number;
  readonly failed: number;
  readonly answered: number;
}

/** Deletes the leader `rounds` times, each once both replicas are Ready again. */
export async function measureFailover(kc: KubeConfig, o: Options): Promise<Gap[]> {
  const leases = kc.makeApiClient(CoordinationV1Api);
  const gaps: { gapMs: number; failed: number; answered: number }[] = [];
  for (let r = 0; r < o.rounds; r++) {
    const before = await loadCounts();
    const leader = await leaseHolder();
    await kubectl(['-n', OPERATOR_NS, 'delete', 'pod', leader, '--wait=false']);
    let released: number | undefined;
    let acquired: number | undefined;
    await waitFor(
      'a new Lease holder',
      async () => {
        const l = await leases.readNamespacedLease({ name: 'acl-operator', namespace: OPERATOR_NS });
        const holder = l.spec?.holderIdentity ?? '';
        if (holder === '' && l.spec?.renewTime) released = new Date(l.spec.renewTime as unknown as string).getTime();
        if (holder !== '' && holder !== leader && l.spec?.acquireTime)
          acquired = new Date(l.spec.acquireTime as unknown as string).getTime();
        return acquired !== undefined;
      },
      120_000,
      50,
    );
    await waitFor('2 Ready replicas', async () => (await podCount()) === 2 && (await readyOperators()).length === 2, 300_000);
    const after = await waitFor(
      'decisions after the failover',
      async () => {
        const c = await loadCounts();
        return c.decisions.ok > before.decisions.ok + 100 && c;
      },
      60_000,
    );
    const gapMs = released !== undefined && acquired !== undefined ? acquired - released : Number.NaN;
    gaps.push({
      gapMs,
      failed: after.decisions.failed - before.decisions.failed + after.polls.failed - before.polls.failed,
      answered: after.decisions.ok - before.decisions.ok,
    });
    o.log(
      `  failover ${r + 1}/${o.rounds}: no leader for ${fmt(gapMs)} ms; ${gaps.at(-1)?.failed} failed of ${gaps.at(-1)?.answered} decisions answered`,
    );
  }
  return gaps;
}

/** The failover part's lines. */
export function failoverReport(o: Options, gaps: readonly Gap[]): string[] {
  const out: string[] = [];
  out.push(`Failover (the leader pod deleted, ${o.rounds} times, the application deciding 50/s and polling 5/s through the Service)`);
  out.push(
    `  no leader for ${gaps.map((g) => `${fmt(g.gapMs)} ms`).join(', ')} (median ${fmt(median(gaps.map((g) => g.gapMs)))} ms); failed requests: ${gaps.reduce((n, g) => n + g.failed, 0)} of ${gaps.reduce((n, g) => n + g.answered, 0)} decisions answered meanwhile`,
  );
  return out;
}
