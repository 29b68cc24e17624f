// The in-memory state: the controller changes a draft, publish() freezes it into a new immutable
// Snapshot and tells listeners which bundles now have a different ETag. Readers never wait.
// This file is the store's surface; the state it wires lives in state.ts, and the work in rules.ts,
// directories.ts, credentials.ts and publish.ts.
import type { CompiledRule, DirectoryEntity, EntityDirectory } from '../policy/index.ts';
import { createActivityLog, type ActivityLog } from './activity.ts';
import { apiKeyHolders, setApiKey, setConnector } from './credentials.ts';
import { directoryOf, listedBy, prepareDirectory, setDirectoryEntities } from './directories.ts';
import { publish } from './publish.ts';
import { draftRules, prepareIndexes, setRule } from './rules.ts';
import { setShadowRule, shadowRule, type ShadowEntry } from './shadow.ts';
import type { ApiKeyEntry, BundleEntry, ConnectorEntry, Snapshot } from './snapshot.ts';
import { setOrDelete, tenantDraft, type BundleListener, type Run, type StoreState } from './draft.ts';

/** What the controller may change. Nothing is visible to readers until publish(). */
export interface StoreDraft {
  /** The deployed rule of a key (undefined: none). */
  rule(tenant: string, name: string): CompiledRule | undefined;
  /** Every deployed rule of a tenant. */
  rules(tenant: string): readonly CompiledRule[];
  setRule(tenant: string, name: string, rule: CompiledRule | undefined): void;
  /** A rule's part in its tenant's proposal (shadow decisions): Proposed, a removal mark, or none. */
  shadowRule(tenant: string, name: string): ShadowEntry | undefined;
  /** Sets or (undefined) takes out a rule's part in its tenant's proposal; published as TenantSnapshot.shadow. */
  setShadowRule(tenant: string, name: string, entry: ShadowEntry | undefined): void;
  connector(tenant: string, name: string): ConnectorEntry | undefined;
  setConnector(tenant: string, name: string, entry: ConnectorEntry | undefined): void;
  bundle(tenant: string, name: string): BundleEntry | undefined;
  bundles(tenant: string): readonly BundleEntry[];
  setBundle(tenant: string, name: string, entry: BundleEntry | undefined): void;
  /** The entities Directory `<tenant>/<name>` puts in effect (undefined: none). */
  directoryEntities(tenant: string, name: string): readonly DirectoryEntity[] | undefined;
  /** Names of the tenant's Directories with entities in the draft, sorted. */
  directoryNames(tenant: string): readonly string[];
  setDirectoryEntities(tenant: string, name: string, entities: readonly DirectoryEntity[] | undefined): void;
  /** Names of the Directories that list an entity, sorted: the first one's properties are in effect. */
  listedBy(tenant: string, type: string, id: string): readonly string[];
  /**
   * The tenant's entity directory: every Directory's entities, in Directory name order; an entity
   * listed by two Directories is the first one's. The same object until a Directory changes.
   */
  directory(tenant: string): EntityDirectory;
  /** Builds the tenant's directory, if a Directory changed, through `run` (in slices): directory() is then at hand. */
  prepareDirectory(tenant: string, run: Run): Promise<void>;
  /** Sets or removes (hash undefined) the API key held by Secret `<tenant>/<secret>`. */
  setApiKey(tenant: string, secret: string, hash: string | undefined): void;
  /** Every Secret holding a key with this hash. */
  apiKeyHolders(hash: string): readonly ApiKeyEntry[];
}

export interface Store {
  snapshot(): Snapshot;
  readonly draft: StoreDraft;
  /**
   * Publishes the draft when it changed; returns the bundles whose answer may differ now: a new
   * ETag, a new bundle, or a connector whose token or activity changed.
   */
  publish(): readonly BundleEntry[];
  /**
   * Does ahead of publish() what it would otherwise do at once (the rule indexes of changed
   * tenants), through `run`, which may spread the work over turns of the event loop.
   */
  prepare(run: Run): Promise<void>;
  onBundleChange(listener: BundleListener): () => void;
  readonly activity: ActivityLog;
}

/** The draft's methods over the store's state. */
function createDraft(state: StoreState): StoreDraft {
  const { tenants } = state;
  return {
    rule: (t, n) => tenants.get(t)?.rules.get(n),
    rules: (t) => draftRules(state, t),
    setRule: (t, n, rule) => setRule(state, t, n, rule),
    shadowRule: (t, n) => shadowRule(state, t, n),
    setShadowRule: (t, n, entry) => setShadowRule(state, t, n, entry),
    connector: (t, n) => tenants.get(t)?.connectors.get(n),
    setConnector: (t, n, entry) => setConnector(state, t, n, entry),
    bundle: (t, n) => tenants.get(t)?.bundles.get(n),
    bundles: (t) => [...(tenants.get(t)?.bundles.values() ?? [])],
    setBundle(t, n, entry) {
      setOrDelete(tenantDraft(state, t).bundles, n, entry);
      state.dirty.add(t);
    },
    directoryEntities: (t, n) => tenants.get(t)?.given.get(n),
    directoryNames: (t) => [...(tenants.get(t)?.directories.keys() ?? [])].sort(),
    setDirectoryEntities: (t, n, given) => setDirectoryEntities(state, t, n, given),
    listedBy: (t, type, id) => listedBy(state, t, type, id),
    prepareDirectory: (t, run) => prepareDirectory(tenants.get(t), run),
    directory: (t) => directoryOf(tenants.get(t)),
    setApiKey: (t, secret, hash) => setApiKey(state, t, secret, hash),
    apiKeyHolders: (hash) => apiKeyHolders(state, hash),
  };
}

/** An empty store at snapshot version 0; each publish that finds a change makes the next version. */
export function createStore(options: { activityCapacity?: number } = {}): Store {
  const state: StoreState = {
    tenants: new Map(),
    apiKeys: new Map(),
    dirty: new Set(),
    apiKeysChanged: false,
    current: { version: 0, tenants: new Map(), apiKeys: new Map(), tokens: new Map(), retiredTokens: new Map() },
    listeners: new Set(),
    activity: createActivityLog(options.activityCapacity),
  };
  return {
    snapshot: () => state.current,
    draft: createDraft(state),
    prepare: (run) => prepareIndexes(state, run),
    publish: () => publish(state),
    onBundleChange(listener) {
      state.listeners.add(listener);
      return () => {
        state.listeners.delete(listener);
      };
    },
    activity: state.activity,
  };
}
