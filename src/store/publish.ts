// publish(): freezes each changed tenant's draft into the next immutable Snapshot, works out which
// bundles now answer differently, and tells the listeners.
import { bundleKey, type BundleEntry, type TenantSnapshot } from './snapshot.ts';
import { apiKeyMap, connectorTokens } from './credentials.ts';
import { directoryOf } from './directories.ts';
import { takeIndex } from './rules.ts';
import { hasProposal, takeShadow } from './shadow.ts';
import type { StoreState, TenantDraft } from './draft.ts';

function freeze(name: string, d: TenantDraft, previous: TenantSnapshot | undefined): TenantSnapshot {
  const index = takeIndex(name, d, previous);
  const shadow = takeShadow(name, d, previous);
  // `shadow` always present (undefined without a proposal): one object shape for the decision path to read.
  return { tenant: name, index, connectors: new Map(d.connectors), bundles: new Map(d.bundles), directory: directoryOf(d), shadow };
}

function isEmpty(d: TenantDraft): boolean {
  return d.rules.size === 0 && d.connectors.size === 0 && d.bundles.size === 0 && d.directories.size === 0 && !hasProposal(d);
}

/** Adds to `changed` the bundles of `frozen` with a new ETag (either archive's), or whose connector's token or activity changed. */
function changedBundles(previous: TenantSnapshot | undefined, frozen: TenantSnapshot, changed: BundleEntry[]): void {
  for (const b of frozen.bundles.values()) {
    const before = previous?.bundles.get(b.name);
    const oldConnector = previous?.connectors.get(b.connector);
    const newConnector = frozen.connectors.get(b.connector);
    // A new ETag (of either archive: the previous key's comes and goes with a rotation), or a
    // connector whose token or activity changed: held polls must hear at once.
    if (
      before?.built.etag !== b.built.etag ||
      before.built.previous?.etag !== b.built.previous?.etag ||
      before.connector !== b.connector ||
      oldConnector?.tokenHash !== newConnector?.tokenHash ||
      oldConnector?.active !== newConnector?.active
    )
      changed.push(b);
  }
}

/**
 * Publishes the draft when it changed; returns the bundles whose answer may differ now: a new
 * ETag, a new bundle, or a connector whose token or activity changed.
 */
export function publish(state: StoreState): readonly BundleEntry[] {
  if (state.dirty.size === 0 && !state.apiKeysChanged) return [];
  const { current, dirty, tenants } = state;
  const nextTenants = new Map(current.tenants);
  const changed: BundleEntry[] = [];
  for (const name of dirty) {
    const d = tenants.get(name);
    const previous = current.tenants.get(name);
    if (!d || isEmpty(d)) {
      nextTenants.delete(name);
      tenants.delete(name);
      continue;
    }
    const frozen = freeze(name, d, previous);
    nextTenants.set(name, frozen);
    changedBundles(previous, frozen, changed);
  }
  for (const name of dirty) {
    for (const b of current.tenants.get(name)?.bundles.values() ?? []) {
      if (nextTenants.get(name)?.bundles.has(b.name)) continue;
      // Gone: its held polls are answered (404) now, and its activity forgotten.
      state.activity.forget(bundleKey(name, b.name));
      changed.push(b);
    }
  }
  const touched = [...dirty];
  dirty.clear();
  const { tokens, retiredTokens } = connectorTokens(state, nextTenants);
  const keys = state.apiKeysChanged ? apiKeyMap(state) : current.apiKeys;
  state.apiKeysChanged = false;
  state.current = { version: current.version + 1, tenants: nextTenants, apiKeys: keys, tokens, retiredTokens };
  for (const listener of state.listeners) listener(changed, state.current, touched);
  return changed;
}
