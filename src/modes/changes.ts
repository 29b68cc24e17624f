// What the console's live updates follow, counted per tenant, and the number its pages watch.
import type { AgentRegistry, RecentDecisions } from '../fleet/index.ts';
import { bundleKey, type Store } from '../store/index.ts';

/**
 * What the console's live updates follow, counted per tenant so that a tenant's pages hear only of their
 * own (docs/console.md, "Pages"): publishes that changed it, its status and token Secret writes, its
 * agents' reports. Bundle polls and OPA's decisions are counted where they are kept, per bundle.
 */
export interface Changes {
  /** Something of `tenant` changed. */
  note(tenant: string): void;
  /** The changes of `tenant` so far; of every tenant when undefined. */
  count(tenant?: string): number;
}

/**
 * Counts changes per tenant: every publish and every agent change it hears of here; status and token
 * Secret writes through `note`, which the controller's writer calls (controller's countingWriter).
 */
export function createChanges(from: { readonly store: Store; readonly agents: Pick<AgentRegistry, 'onChange'> }): Changes {
  const perTenant = new Map<string, number>();
  let all = 0;
  const note = (tenant: string): void => {
    all++;
    perTenant.set(tenant, (perTenant.get(tenant) ?? 0) + 1);
  };
  from.store.onBundleChange((_changed, _snapshot, tenants) => {
    for (const tenant of tenants) note(tenant);
  });
  from.agents.onChange((tenant) => note(tenant));
  return { note, count: (tenant) => (tenant === undefined ? all : (perTenant.get(tenant) ?? 0)) };
}

/**
 * A number that moves whenever something a page of `tenant` shows may have changed (undefined: any
 * tenant's, what the admin sees). Read once a second per open stream, never on a request's path: a
 * tenant's sums its bundles' polls and decisions, which the bundle route and the log receiver count
 * with one increment each.
 */
export function liveVersion(changes: Changes, store: Store, recent: RecentDecisions): (tenant: string | undefined) => string {
  return (tenant) => {
    if (tenant === undefined) return `${changes.count()}.${store.activity.count()}.${recent.count()}`;
    let polls = 0;
    let decisions = 0;
    for (const bundle of store.snapshot().tenants.get(tenant)?.bundles.keys() ?? []) {
      const key = bundleKey(tenant, bundle);
      polls += store.activity.countOf(key);
      decisions += recent.countOf(key);
    }
    return `${changes.count(tenant)}.${polls}.${decisions}`;
  };
}
