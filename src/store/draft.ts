// The store's mutable state: each tenant's draft, the API keys, what changed since the last publish,
// the current Snapshot and who listens. Only the store's own modules read or change it.
import type { CompiledRule, DirectoryEntity, EntityDirectory, RuleIndex } from '../policy/index.ts';
import type { ActivityLog } from './activity.ts';
import type { ApiKeyEntry, BundleEntry, ConnectorEntry, Snapshot } from './snapshot.ts';

/** Runs steps to their end (src/work/slice.ts drive(), or at once). */
export type Run = <T>(steps: Generator<unknown, T>) => Promise<T>;

/** Called at each publish: the bundles whose answer may differ now, the new snapshot, and the tenants the publish changed. */
export type BundleListener = (changed: readonly BundleEntry[], snapshot: Snapshot, tenants: readonly string[]) => void;

export interface TenantDraft {
  readonly rules: Map<string, CompiledRule>;
  readonly connectors: Map<string, ConnectorEntry>;
  readonly bundles: Map<string, BundleEntry>;
  /** Entities by Directory name, unchanged properties objects kept from the previous list. */
  readonly directories: Map<string, readonly DirectoryEntity[]>;
  /** The lists as the controller gave them, by Directory name. */
  readonly given: Map<string, readonly DirectoryEntity[]>;
  rulesChanged: boolean;
  /** Bumped by every rule change: an index prepared at an older version is not used. */
  rulesVersion: number;
  /** The deployed rules by name (undefined: not made since the last change it could not follow). */
  byName: readonly CompiledRule[] | undefined;
  /** Rules placed into byName since it was last read. */
  byNamePlaced: number;
  /** Names of the rules set since the last publish: a few of them update the index rather than rebuild it. */
  readonly changedRules: Set<string>;
  prepared: { readonly version: number; readonly index: RuleIndex } | undefined;
  /** The tenant's directory, built from `directories` when first asked for after a change. */
  directory: EntityDirectory | undefined;
  /** Bumped by every Directory change. */
  directoryVersion: number;
  /** The directory last built or updated, which the next edits update. */
  lastDirectory: EntityDirectory | undefined;
  /** Entities listed before or after a Directory edit since lastDirectory was made, by key. */
  readonly touched: Map<string, DirectoryEntity>;
  /**
   * Entity type → id → the names of the Directories that list it, sorted; one name alone is kept as
   * the string (nearly every entity has one Directory: no array and no key string per entity).
   */
  readonly listings: Map<string, Map<string, string | readonly string[]>>;
  /** Connector name → hashes of its earlier tokens (rotated or revoked), newest first. */
  readonly retired: Map<string, string[]>;
  /** The tenant's Proposed rules by name (shadow decisions; never decided or put in bundles). */
  readonly proposed: Map<string, CompiledRule>;
  /** Names of its Enforced rules marked for removal. */
  readonly removals: Set<string>;
  /** Set when `proposed` (or `removals`) changed since the last publish: only then is the published part made again. */
  proposedChanged: boolean;
  removalsChanged: boolean;
}

export interface StoreState {
  readonly tenants: Map<string, TenantDraft>;
  /** API keys by `<tenant>/<secret>`. */
  readonly apiKeys: Map<string, { hash: string; entry: ApiKeyEntry }>;
  /** Tenants changed since the last publish. */
  readonly dirty: Set<string>;
  apiKeysChanged: boolean;
  current: Snapshot;
  readonly listeners: Set<BundleListener>;
  readonly activity: ActivityLog;
}

/** The draft of a tenant, made empty when it has none yet. */
export function tenantDraft(state: StoreState, name: string): TenantDraft {
  let t = state.tenants.get(name);
  if (!t) {
    t = {
      rules: new Map(),
      connectors: new Map(),
      bundles: new Map(),
      directories: new Map(),
      given: new Map(),
      rulesChanged: true,
      rulesVersion: 0,
      byName: undefined,
      byNamePlaced: 0,
      changedRules: new Set(),
      prepared: undefined,
      directory: undefined,
      directoryVersion: 0,
      lastDirectory: undefined,
      touched: new Map(),
      listings: new Map(),
      retired: new Map(),
      proposed: new Map(),
      removals: new Set(),
      proposedChanged: false,
      removalsChanged: false,
    };
    state.tenants.set(name, t);
  }
  return t;
}

/** Sets `key` to `value`, or removes it when `value` is undefined. */
export function setOrDelete<V>(map: Map<string, V>, key: string, value: V | undefined): void {
  if (value === undefined) map.delete(key);
  else map.set(key, value);
}
