// What standalone mode keeps of its running state in the state folder, beyond objects and tokens:
// sync activity and recent decisions (put back at start, written at every flush) and the agents
// file of each bundle (rewritten at every flush, since agents' report times move with every report).
import type { Logger } from 'pino';
import { agentsReport, type Fleet } from '../fleet/index.ts';
import type { StateFolder } from '../standalone/index.ts';
import { bundleKey, type Snapshot, type Store, type SyncRecord } from '../store/index.ts';

/** Puts back what the last run wrote: sync activity into the store, recent decisions into the fleet. */
export async function restoreActivity(state: StateFolder, store: Store, fleet: Fleet, log: Logger): Promise<void> {
  for (const a of await state.activity().catch(() => [])) store.activity.restore(bundleKey(a.namespace, a.bundle), a.records);
  const unreadable = (file: string, message: string): void => {
    log.warn({ file, error: message }, 'Skipped an unreadable recent-decisions file');
  };
  for (const d of await state.decisions(unreadable).catch((err: unknown) => {
    log.warn({ err }, 'Could not read the recent decisions');
    return [];
  })) {
    fleet.recent.restore(bundleKey(d.namespace, d.bundle), d.decisions);
  }
}

/** The state folder's part of an activity flush (lifecycle.ts). */
export interface FolderActivity {
  persist(tenant: string, bundle: string, records: readonly SyncRecord[]): Promise<void>;
  more(): Promise<void>;
}

/** Writes activity, recent decisions and agents files to the state folder at every flush. */
export function folderActivity(state: StateFolder, store: Store, fleet: Fleet, now: () => Date): FolderActivity {
  /** Bundles whose agents file holds agents: rewritten (or removed) at every flush. */
  const withAgents = new Set<string>();
  return {
    persist: (tenant, bundle, records) => state.writeActivity(tenant, bundle, records),
    async more() {
      for (const key of fleet.recent.takeChanged()) {
        const [tenant, bundle] = key.split('/') as [string, string];
        await state.writeDecisions(tenant, bundle, fleet.recent.list(key));
      }
      await writeAgentFiles(state, store.snapshot(), fleet, now().getTime(), withAgents);
    },
  };
}

async function writeAgentFiles(
  state: StateFolder,
  snapshot: Snapshot,
  fleet: Fleet,
  nowMs: number,
  withAgents: Set<string>,
): Promise<void> {
  const seen = new Set<string>();
  for (const t of snapshot.tenants.values()) {
    for (const b of t.bundles.values()) {
      const report = agentsReport(
        fleet.agents,
        { tenant: t.tenant, connector: b.connector, bundle: b.name, revision: b.built.revision },
        nowMs,
      );
      const key = bundleKey(t.tenant, b.name);
      if (report.list.length === 0 && !withAgents.has(key)) continue;
      seen.add(key);
      await state.writeAgents(t.tenant, b.name, report.list.length === 0 ? undefined : { ...report });
      if (report.list.length === 0) withAgents.delete(key);
      else withAgents.add(key);
    }
  }
  for (const key of [...withAgents].filter((k) => !seen.has(k))) {
    const [tenant, bundle] = key.split('/') as [string, string];
    await state.writeAgents(tenant, bundle, undefined);
    withAgents.delete(key);
  }
}
